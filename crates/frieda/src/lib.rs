//! Frieda: a message broker that speaks the Apache Kafka wire protocol, built for low,
//! predictable tail latency.
//!
//! Layers, top-down (each uses only the ones below it):
//! - [`server`]: listener, connection read loop, response sequencer.
//! - [`handlers`]: one module per API family, decoding requests and building responses.
//! - [`coordinator`]: cross-request state (idempotent producers).
//! - [`broker`]: topics and partitions, log writer threads, the log cleaner.
//! - [`durable`]: crash-safe small metadata files.
//! - `frieda-log` (crate): the partition log itself.

pub mod broker;
pub mod config;
pub mod coordinator;
pub mod durable;
pub mod handlers;
pub mod server;
