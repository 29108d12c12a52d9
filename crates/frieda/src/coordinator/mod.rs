//! Coordinators: state that spans requests, beyond a single partition's log.
//!
//! - [`producer_ids`]: producer id allocation for InitProducerId (single broker; a cluster's
//!   controller hands out blocks).
//! - [`group`]: the consumer group coordinator (classic protocol).
//! - [`offsets`]: committed offsets, stored in an internal log.
//! - [`registry`]: which group coordinators run here (one per offsets partition led).

pub mod group;
pub mod offsets;
pub mod producer_ids;
pub mod registry;
