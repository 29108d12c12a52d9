mod api_key;
#[cfg(feature = "broker")]
mod api_versions;
#[cfg(feature = "client")]
mod common;
mod fetch_response;
#[cfg(feature = "client")]
mod integration_tests;
#[cfg(feature = "client")]
mod produce_fetch;
mod request_header;
#[cfg(all(feature = "client", feature = "broker"))]
mod streams_group; // Frieda patch: Kafka 4.4's streams groups (KIP-1071)
