//! Frieda: a message broker that speaks the Apache Kafka wire protocol, built for low,
//! predictable tail latency.
//!
//! Layers, top-down: each module uses only modules of the layers below its own, never one of
//! its own layer or above. `tests/layers.rs` checks every file against its `LAYERS`, which is
//! this list bottom-up.
//! - [`admin`]: `frieda admin`, the Kafka admin tool in the binary: a client of any Kafka
//!   cluster, built on the broker-to-broker Kafka client and the security settings below.
//! - [`metrics`]: the Prometheus endpoint, reading everything below at scrape time.
//! - [`server`]: listener, connection read loop, response sequencer, SASL authentication; the
//!   controller listener's transport (`quorum_transport`).
//! - [`handlers`]: one module per API family, decoding requests and building responses.
//! - [`tiering`]: the remote-log manager of tiered storage (KIP-405): copies closed segments to
//!   the bucket, keeps each replica's view of its remote tier, sweeps deleted topics.
//! - [`cluster`]: what drives the membership: heartbeats, the reconciler that turns the
//!   metadata image into local replicas and roles, the follower fetchers, ISR changes.
//! - [`broker`]: the `Broker` the handlers share: the topic registry and the operations on
//!   topics, the coordinators, the membership handle, security, features, the log cleaner,
//!   transaction markers and verification, admin requests forwarded to the controller.
//! - [`membership`]: this broker as a cluster member (`ClusterNode`: the metadata image,
//!   readiness, fencing, the lease, requests to the controller) and its Kafka client for other
//!   brokers.
//! - [`config`]: the static configuration.
//! - [`coordinator`]: cross-request state (consumer groups, committed offsets, transactions,
//!   producer ids); beside it [`diskless`]: the sans-IO state machines of diskless topics (the
//!   batch coordinator, a broker's append path; issue 60, not yet driven by anything).
//! - [`storage`]: topics and partitions as the handlers and coordinators act on them, the log
//!   writer threads, topic configs, checkpoint files, the internal topics' names.
//! - [`security`]: who a connection is and what it may do (TLS, SASL, credentials, ACLs).
//! - leaves, using no other module: [`replication`] (each partition's role, followers' progress
//!   and high watermark: the ISR protocol's rules, free of I/O), [`features`] (feature levels,
//!   KIP-584), [`quota`] (client quotas), [`stats`] (the lock-free request and connection
//!   counters the server records), [`durable`] (crash-safe small metadata files), [`clock`]
//!   (wall, monotonic and lease time), [`logging`] (log output, levels changed at run time),
//!   [`remote`] (the S3 bucket of tiered storage, its settings, reads through the chunk cache).
//!
//! Below the crate: `frieda-meta` (the metadata quorum on openraft and the active controller)
//! and `frieda-log` (the partition log itself). The binary (`main.rs`) uses them all.

pub mod admin;
pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod diskless;
pub mod durable;
pub mod features;
pub mod handlers;
pub mod logging;
pub mod membership;
pub mod metrics;
pub mod quota;
pub mod remote;
pub mod replication;
pub mod security;
pub mod server;
pub mod stats;
pub mod storage;
pub mod tiering;
