//! Coordinators: state that spans requests, beyond a single partition's log.
//!
//! - [`producer_ids`]: producer id allocation for InitProducerId (single broker; a cluster's
//!   controller hands out blocks).
//! - [`group`]: the consumer group coordinator (classic protocol).
//! - [`offsets`]: committed offsets, stored in an internal log.
//! - [`registry`]: which group coordinators run here (one per offsets partition led).
//! - [`transaction`]: the transaction coordinator (KIP-98, KIP-890), one per
//!   `__transaction_state` partition led.
//! - [`records`]: the batches coordinators write to their internal logs.
//! - [`share`]: share-partitions and share sessions (KIP-932), on each partition's leader.

pub mod group;
pub mod offsets;
pub mod producer_ids;
pub mod records;
pub mod registry;
pub mod share;
pub mod transaction;
