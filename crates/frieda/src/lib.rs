//! Frieda: a message broker that speaks the Apache Kafka wire protocol, built for low,
//! predictable tail latency.
//!
//! Layers, top-down (each uses only the ones below it):
//! - [`metrics`]: the Prometheus endpoint, reading everything below at scrape time.
//! - [`server`]: listener, connection read loop, response sequencer.
//! - [`handlers`]: one module per API family, decoding requests and building responses.
//! - [`cluster`]: membership of a cluster (heartbeats, fencing) and the reconciler that turns
//!   the metadata image into local replicas and roles.
//! - [`replication`]: each partition's role, followers' progress and high watermark; the
//!   follower fetchers.
//! - [`coordinator`]: cross-request state (consumer groups, committed offsets, idempotent
//!   producers).
//! - [`broker`]: topics and partitions, log writer threads, the log cleaner.
//! - [`durable`]: crash-safe small metadata files; [`clock`]: wall and monotonic time;
//!   [`stats`]: the lock-free request and connection counters the server records.
//! - `frieda-meta` (crate): the metadata quorum (openraft) and the active controller.
//! - `frieda-log` (crate): the partition log itself.

pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod durable;
pub mod features;
pub mod handlers;
pub mod membership;
pub mod metrics;
pub mod quota;
pub mod replication;
pub mod security;
pub mod server;
pub mod stats;
pub mod storage;
