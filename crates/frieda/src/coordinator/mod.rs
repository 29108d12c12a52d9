//! Coordinators: state that spans requests, beyond a single partition's log.
//!
//! - [`producer_state`]: idempotent-producer sequence checks per partition (KIP-98).
//! - [`producer_ids`]: producer id allocation for InitProducerId.
//! - [`group`]: the consumer group coordinator (classic protocol).
//! - [`offsets`]: committed offsets, stored in an internal log.
//! - [`registry`]: which group coordinators run here (one per offsets partition led).

pub mod group;
pub mod offsets;
pub mod producer_ids;
pub mod producer_state;
pub mod registry;
