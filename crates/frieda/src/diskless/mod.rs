//! Diskless topics (issue 60, KIP-1150): partitions whose record batches live only in shared
//! objects of the bucket, with offsets assigned by a batch coordinator. The design is
//! `docs/diskless.md`; this module grows along its build plan.
//!
//! - [`coordinator`]: the batch coordinator's state machine (build plan step 2), sans-IO: it
//!   decides commits of uploaded objects, answers where the batches at an offset are, and moves
//!   the log start; each change is a [`coordinator::Decision`] its replicas apply to reach the
//!   same state.
//! - [`codec`]: a decision as the record the coordinator partition's leader writes (step 3).
//!
//! The replicated partition that hosts the coordinator (the rest of step 3) is not built yet,
//! nor is anything that produces to or reads from a diskless topic.

pub mod codec;
pub mod coordinator;
