//! The read path of a diskless partition, driven (build plan step 5's driver): the coordinates
//! at the fetch offset from the coordinator (loaded here or on another broker), the bytes of
//! the batches needed from the objects they name (through the fetch cache, [`super::objects`]),
//! then [`assemble`]. Every batch is answered with partition
//! leader epoch 0 (docs/diskless.md, "What differs").

use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;

use crate::diskless::coordinator::DisklessPartition;
use crate::diskless::read::{assemble, wanted, ReadError};
use frieda_log::AbortedTxn;

use super::objects::{range_of, ObjectReader};
use super::route::{not_served, CoordinatorRef};

/// What a fetch of one diskless partition gets.
#[derive(Debug, Clone)]
pub struct Read {
    /// Whole v2 batches (empty when nothing is at the offset yet).
    pub records: Bytes,
    /// The partition's high watermark (its next offset, as readers see it).
    pub high_watermark: i64,
    /// Its log start offset.
    pub log_start: i64,
    /// Its last stable offset (KIP-98).
    pub last_stable_offset: i64,
    /// The aborted transactions overlapping the records (for `read_committed` readers).
    pub aborted: Vec<AbortedTxn>,
}

/// Reads `partition` at `offset`, at most about `max_bytes` (the first batch whole); with
/// `read_committed`, only below the last stable offset (KIP-98).
///
/// Errors: the coordinator's (OFFSET_OUT_OF_RANGE (1), UNKNOWN_TOPIC_OR_PARTITION (3);
/// COORDINATOR_LOAD_IN_PROGRESS (14), NOT_COORDINATOR (16) and an unreached coordinator's
/// REQUEST_TIMED_OUT (7) answered as NOT_LEADER_OR_FOLLOWER (6) so the client retries); KAFKA_STORAGE_ERROR (56) when the bucket fails; CORRUPT_MESSAGE (2) when the bytes
/// are not the batch the coordinate describes.
pub async fn read(
    host: &CoordinatorRef,
    objects: &ObjectReader,
    partition: DisklessPartition,
    offset: i64,
    max_bytes: usize,
    read_committed: bool,
) -> Result<Read, E> {
    for _attempt in 0..3 {
        let found = host
            .find_batches(partition, offset, max_bytes as u64)
            .await
            .map_err(not_served)?;
        let end = if read_committed {
            found.last_stable_offset
        } else {
            found.high_watermark
        };
        let Some(got) = objects
            .get_spans(wanted(&found, offset, end, max_bytes))
            .await?
        else {
            continue;
        };
        let assembled = assemble(&found, offset, end, max_bytes, 0, |object, at, len| {
            range_of(&got, object, at, len)
        });
        match assembled {
            Ok(records) => {
                return Ok(Read {
                    records: Bytes::from(records.bytes),
                    high_watermark: found.high_watermark,
                    log_start: found.log_start,
                    last_stable_offset: found.last_stable_offset,
                    aborted: found.aborted,
                })
            }
            Err(ReadError::Missing(_)) => continue,
            Err(e @ ReadError::Corrupt { .. }) => {
                tracing::error!(error = %e, "a diskless batch does not match its coordinate");
                return Err(E::CorruptMessage);
            }
        }
    }
    Err(E::KafkaStorageError)
}

/// What a ListOffsets by time looks for.
#[derive(Debug, Clone, Copy)]
pub enum TimeLookup {
    /// The first record with a timestamp at or after this (ms).
    AtOrAfter(i64),
    /// The earliest record carrying the partition's largest timestamp (KIP-734).
    Max,
}

/// ListOffsets by time on `partition`: `(offset, timestamp)` of the record found, or none. The
/// batch is chosen by its coordinate's largest timestamp and read from the bucket to find the
/// record.
///
/// Errors: as [`read`].
pub async fn offset_for_time(
    host: &CoordinatorRef,
    objects: &ObjectReader,
    partition: DisklessPartition,
    lookup: TimeLookup,
) -> Result<Option<(i64, i64)>, E> {
    let offsets = host.offsets(partition).await?;
    let (log_start, end) = (offsets.log_start, offsets.high_watermark);
    if log_start >= end {
        return Ok(None);
    }
    let found = host.find_batches(partition, log_start, u64::MAX).await?;
    // (markers hold no data records)
    let mut batches = found.coordinates.iter().filter(|c| c.object().is_some());
    let coordinate = match lookup {
        TimeLookup::AtOrAfter(ts) => batches.find(|c| c.max_timestamp >= ts),
        // the first batch holding the largest timestamp
        TimeLookup::Max => batches.rev().max_by_key(|c| c.max_timestamp),
    };
    let Some(c) = coordinate.copied() else {
        return Ok(None);
    };
    let target = match lookup {
        TimeLookup::AtOrAfter(ts) => ts,
        TimeLookup::Max => c.max_timestamp,
    };
    let batch = read(
        host,
        objects,
        partition,
        c.base_offset,
        c.byte_len() as usize,
        false,
    )
    .await?;
    let mut bytes = batch.records.clone();
    let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut bytes)
        .map_err(|_| E::CorruptMessage)?;
    Ok(sets
        .into_iter()
        .flat_map(|s| s.records)
        // (a compacted run holds its markers' control batches too)
        .filter(|r| r.offset >= log_start && !r.control)
        .find(|r| r.timestamp >= target)
        .map(|r| (r.offset, r.timestamp)))
}
