//! Diskless topics (issue 60, KIP-1150): partitions whose record batches live only in shared
//! objects of the bucket, with offsets assigned by a batch coordinator. The design is
//! `docs/diskless.md`; this module grows along its build plan.
//!
//! - [`coordinator`]: the batch coordinator's state machine (build plan step 2), sans-IO: it
//!   decides commits of uploaded objects, answers where the batches at an offset are, and moves
//!   the log start; each change is a [`coordinator::Decision`] its replicas apply to reach the
//!   same state.
//! - [`codec`]: a decision as the record the coordinator partition's leader writes (step 3).
//! - [`append`]: a broker's append path (step 4), sans-IO: buffer, close into an object, PUT,
//!   commit in close order, answer the produces.
//!
//! The replicated partition that hosts the coordinator (the rest of step 3) and the drivers
//! that run these state machines against the network and the bucket are not built yet: no
//! client can produce to or read from a diskless topic.

pub mod append;
pub mod codec;
pub mod coordinator;

#[cfg(test)]
pub(crate) mod testing {
    //! What the diskless tests share.
    use frieda_log::BatchHeader;

    /// A v2 batch header of `records` records from producer `pid` (-1: none) at `seq`.
    pub(crate) fn header(records: i32, pid: i64, epoch: i16, seq: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: records - 1,
            base_timestamp: 1_000,
            max_timestamp: 1_000 + i64::from(records),
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: if pid < 0 { -1 } else { seq },
            records_count: records,
        }
    }
}
