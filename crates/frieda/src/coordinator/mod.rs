//! Coordinators: state that spans requests, beyond a single partition's log.
//!
//! - [`producer_state`]: idempotent-producer sequence checks per partition (KIP-98).
//! - [`producer_ids`]: producer id allocation for InitProducerId.

pub mod producer_ids;
pub mod producer_state;
