//! Diskless topics (issue 60, KIP-1150): partitions whose record batches live only in shared
//! objects of the bucket, with offsets assigned by a batch coordinator. The design is
//! `docs/diskless.md`; this module grows along its build plan.
//!
//! - [`coordinator`]: the batch coordinator's state machine (build plan step 2), sans-IO: it
//!   decides commits of uploaded objects, answers where the batches at an offset are, and moves
//!   the log start; each change is a [`coordinator::Decision`] its replicas apply to reach the
//!   same state.
//! - [`codec`]: a decision as the record the coordinator partition's leader writes (step 3).
//! - [`host`]: the coordinator on its partition (step 3), sans-IO: decisions written as records,
//!   answered and shown to readers only below the high watermark, loaded by replay; the orphan
//!   sweep's choice of objects.
//! - [`append`]: a broker's append path (step 4), sans-IO: buffer, close into an object, PUT,
//!   commit in close order, answer the produces.
//! - [`read`]: the read path's assembly (step 5), sans-IO: stored batches checked against their
//!   coordinates and patched with their offsets.
//!
//! - [`wire`]: the requests a broker sends to a coordinator loaded on another broker (commit,
//!   find batches, offsets, delete records) and their answers, carried in Kafka's Envelope.
//! - [`config`]: the broker's `diskless.*` settings.
//! - [`driver`]: the drivers running [`host`], [`append`] and [`read`] against a real
//!   `__diskless_coordinator` partition and the bucket.
//!
//! `frieda-sim --diskless` runs [`append`], [`host`] and [`read`] together under faults.

pub mod append;
pub mod codec;
pub mod config;
pub mod coordinator;
pub mod driver;
pub mod host;
pub mod read;
pub mod wire;

#[cfg(test)]
pub(crate) mod testing {
    //! What the diskless tests share.
    use super::coordinator::{
        BatchAnswer, CommitBatches, CommittedBatch, DisklessPartition, ObjectId,
    };
    use frieda_log::BatchHeader;
    use uuid::Uuid;

    /// Partition `i` of the test topic.
    pub(crate) fn part(i: i32) -> DisklessPartition {
        DisklessPartition {
            topic_id: Uuid::from_u128(0xd15c),
            partition: i,
        }
    }

    /// Object `n`.
    pub(crate) fn object(n: u128) -> ObjectId {
        ObjectId(Uuid::from_u128(n))
    }

    /// A commit of object `id` holding `batches` (partition, header), laid out one after
    /// another, 100 bytes each, uploaded by broker 1.
    pub(crate) fn commit_of(id: u128, batches: &[(i32, BatchHeader)]) -> CommitBatches {
        CommitBatches {
            object: object(id),
            object_size: 100 * batches.len() as u64,
            uploader: 1,
            batches: batches
                .iter()
                .enumerate()
                .map(|(i, (p, h))| CommittedBatch {
                    partition: part(*p),
                    byte_offset: 100 * i as u32,
                    byte_len: 100,
                    header: *h,
                    verification: None,
                })
                .collect(),
        }
    }

    /// A batch stored at `base_offset..=last_offset`.
    pub(crate) fn appended(base_offset: i64, last_offset: i64) -> BatchAnswer {
        BatchAnswer::Appended {
            base_offset,
            last_offset,
        }
    }

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
