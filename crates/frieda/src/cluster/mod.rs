//! The drivers of this broker's cluster membership ([`crate::membership`]): what runs to keep
//! it registered and unfenced and to turn each metadata image into local state.
//!
//! - [`heartbeat`]: registers and heartbeats with the controller; fences itself when the
//!   controller cannot be reached for a whole session; controlled shutdown.
//! - [`leader_cost`]: what it costs this broker to lead, sent with each heartbeat (measured
//!   leader placement).
//! - [`isr`]: in-sync replica changes a leader asks the controller for (AlterPartition).
//! - [`reconciler`]: turns each new image into local state (partition replicas opened or
//!   removed, leader and follower roles, follower fetchers, group and transaction
//!   coordinators).
//! - [`fetcher`]: the follower fetchers, the I/O that drives the ISR protocol's follower rules
//!   ([`crate::replication::follower`]).
//!
//! The controller listener's security (the metadata quorum's transport) is in
//! [`crate::server::quorum_transport`].
//!
//! Kafka's equivalents: `BrokerLifecycleManager`, `BrokerMetadataPublisher`,
//! `ReplicaManager.applyDelta`. The design (Kafka's ISR protocol over a Raft metadata log) is in
//! `docs/cluster.md`.

pub mod diskless_link;
pub mod fetcher;
pub mod heartbeat;
pub mod isr;
pub mod leader_cost;
pub mod reconciler;
