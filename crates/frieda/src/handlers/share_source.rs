//! Where a share-partition's records are read (KIP-932 share groups): the local log of a
//! partition this broker leads, or, for a diskless topic (issue 60), the partition's batch
//! coordinator and the bucket, through the read path every broker serves
//! ([`crate::diskless::driver::read`]). The share-partition itself (acquisitions, its durable
//! state) lives on the partition's leader in the metadata image in both cases, and moves with
//! its leader epoch: docs/diskless.md, "Share groups".

use super::fetch_diskless::diskless_partition;
use crate::broker::Broker;
use crate::diskless::coordinator::{DisklessPartition, Offsets};
use crate::diskless::driver::read::{self, offset_for_time, TimeLookup};
use crate::diskless::driver::route::not_served;
use crate::diskless::driver::Diskless;
use crate::storage::backlog::ReadFor;
use crate::storage::partition::Partition;
use crate::storage::topic::Topic;
use bytes::Bytes;
use frieda_log::{BatchHeader, FetchData, LogError};
use kafka_protocol::error::ResponseError as E;
use std::sync::Arc;
use std::time::Duration;

/// How often a share fetch waiting for records of a diskless partition looks again (ms):
/// nothing wakes it when a batch is committed (the coordinator may be on another broker).
pub(super) const DISKLESS_POLL: Duration = Duration::from_millis(25);

/// A share-partition's records: the local replica (whose leadership owns the share-partition)
/// and, for a diskless topic, the diskless partition and the service that reads it.
pub(super) struct ShareSource {
    /// The local replica of the partition.
    pub p: Arc<Partition>,
    diskless: Option<(DisklessPartition, Arc<Diskless>)>,
}

/// One read of a share-partition's records.
pub(super) struct SourceRead {
    /// Whole batches from the offset asked (empty when none is there yet).
    pub data: FetchData,
    /// With `read_committed`: the aborted transactions overlapping them, as (producer id,
    /// first offset).
    pub aborted: Vec<(i64, i64)>,
}

/// Why a read found nothing.
pub(super) enum SourceError {
    /// The offset is below the log start offset (retention or DeleteRecords moved it).
    OutOfRange,
    /// Any other failure, as the partition's error code.
    Failed(E),
}

impl ShareSource {
    /// The records of replica `p` of `topic`.
    ///
    /// Errors: for a diskless topic, NOT_LEADER_OR_FOLLOWER (6) on a broker without the
    /// diskless service (no bucket configured).
    pub fn of(broker: &Broker, topic: &Topic, p: Arc<Partition>) -> Result<Self, E> {
        let diskless = if topic.configs.read().is_diskless(&broker.topic_defaults()) {
            Some(diskless_partition(broker, topic, p.index)?)
        } else {
            None
        };
        Ok(ShareSource { p, diskless })
    }

    /// Whether the records are a diskless partition's (nothing wakes a waiting fetch: it polls
    /// every [`DISKLESS_POLL`]).
    pub fn is_diskless(&self) -> bool {
        self.diskless.is_some()
    }

    /// The log start, high watermark and last stable offset.
    ///
    /// Errors (diskless): the batch coordinator's, NOT_LEADER_OR_FOLLOWER (6) while none serves.
    pub async fn offsets(&self) -> Result<Offsets, E> {
        match &self.diskless {
            None => Ok(Offsets {
                log_start: self.p.log_start_offset(),
                high_watermark: self.p.high_watermark(),
                last_stable_offset: self.p.last_stable_offset(),
            }),
            Some((partition, diskless)) => {
                let host = diskless.coordinator(*partition).map_err(not_served)?;
                host.offsets(*partition).await.map_err(not_served)
            }
        }
    }

    /// Reads whole batches from `at`, about `budget` bytes (the first batch whole), below
    /// `limit` (the high watermark, or with `read_committed` the last stable offset, as
    /// [`offsets`](Self::offsets) gave it).
    pub async fn read(
        &self,
        at: i64,
        budget: usize,
        limit: i64,
        read_committed: bool,
    ) -> Result<SourceRead, SourceError> {
        let Some((partition, diskless)) = &self.diskless else {
            let data = match self
                .p
                .read_classed(at, budget, limit, ReadFor::Consumer)
                .await
            {
                Ok((data, _)) => data,
                Err(LogError::OffsetOutOfRange { .. }) => return Err(SourceError::OutOfRange),
                Err(_) => return Err(SourceError::Failed(E::KafkaStorageError)),
            };
            let aborted = if read_committed {
                self.p
                    .reader()
                    .aborted_transactions(at, data.next_offset)
                    .into_iter()
                    .map(|a| (a.producer_id, a.first_offset))
                    .collect()
            } else {
                Vec::new()
            };
            return Ok(SourceRead { data, aborted });
        };
        let host = diskless
            .coordinator(*partition)
            .map_err(|e| SourceError::Failed(not_served(e)))?;
        let got = read::read(
            &host,
            &diskless.objects,
            *partition,
            at,
            budget,
            read_committed,
        )
        .await;
        let got = match got {
            Ok(r) => r,
            Err(E::OffsetOutOfRange) => return Err(SourceError::OutOfRange),
            // Nothing committed to the partition yet.
            Err(E::UnknownTopicOrPartition) => {
                return Ok(SourceRead {
                    data: fetch_data(at, Bytes::new(), limit),
                    aborted: Vec::new(),
                })
            }
            Err(e) => return Err(SourceError::Failed(e)),
        };
        let aborted = got
            .aborted
            .iter()
            .map(|a| (a.producer_id, a.first_offset))
            .collect();
        Ok(SourceRead {
            data: fetch_data(at, got.records, limit),
            aborted,
        })
    }

    /// The first offset whose record's timestamp is at or after `timestamp_ms`, if any.
    pub async fn offset_for_timestamp(&self, timestamp_ms: i64) -> Option<i64> {
        match &self.diskless {
            None => {
                let reader = self.p.reader().clone();
                tokio::task::spawn_blocking(move || reader.offset_for_timestamp(timestamp_ms))
                    .await
                    .ok()?
                    .ok()?
                    .map(|(offset, _)| offset)
            }
            Some((partition, diskless)) => {
                let host = diskless.coordinator(*partition).ok()?;
                let lookup = TimeLookup::AtOrAfter(timestamp_ms);
                offset_for_time(&host, &diskless.objects, *partition, lookup)
                    .await
                    .ok()?
                    .map(|(offset, _)| offset)
            }
        }
    }
}

/// `records` (whole batches read at `at`) as a log read's [`FetchData`], without the batches
/// at or above `limit` (a diskless read may see batches committed after the offsets were
/// taken).
fn fetch_data(at: i64, records: Bytes, limit: i64) -> FetchData {
    let mut end = 0usize;
    let (mut first, mut next) = (at, at);
    while end < records.len() {
        let Ok(h) = BatchHeader::parse(&records[end..]) else {
            break;
        };
        let size = h.total_size();
        if size == 0 || end + size > records.len() || h.base_offset >= limit {
            break;
        }
        if end == 0 {
            first = h.base_offset;
        }
        next = h.last_offset() + 1;
        end += size;
    }
    let chunk = records.slice(..end);
    FetchData {
        bytes: chunk.len(),
        chunks: if chunk.is_empty() {
            Vec::new()
        } else {
            vec![chunk]
        },
        first_offset: first,
        next_offset: next,
    }
}

#[cfg(test)]
mod tests {
    use super::fetch_data;
    use bytes::{Bytes, BytesMut};
    use frieda_log::BatchHeader;

    /// A v2 batch header of `count` records at `base` followed by 20 bytes (the records' bytes
    /// do not matter to [`fetch_data`]).
    fn batch(base: i64, count: i32) -> Vec<u8> {
        let h = BatchHeader {
            base_offset: base,
            batch_length: 49 + 20,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            records_count: count,
        };
        let mut b = h.encode().to_vec();
        b.extend_from_slice(&[0u8; 20]);
        b
    }

    #[test]
    fn a_diskless_read_becomes_whole_batches_below_the_limit() {
        let mut buf = BytesMut::new();
        for (base, count) in [(10, 5), (15, 3), (18, 2)] {
            buf.extend_from_slice(&batch(base, count));
        }
        let records: Bytes = buf.freeze();
        let all = fetch_data(10, records.clone(), 20);
        assert_eq!((all.first_offset, all.next_offset), (10, 20));
        assert_eq!(all.bytes, records.len());
        // the last batch starts at the limit's side of a newer high watermark: left out
        let below = fetch_data(10, records.clone(), 18);
        assert_eq!((below.first_offset, below.next_offset), (10, 18));
        assert_eq!(below.chunks.len(), 1);
        assert!(below.bytes < records.len());
        // nothing read: an empty read at the offset asked
        let none = fetch_data(25, Bytes::new(), 30);
        assert_eq!(
            (none.first_offset, none.next_offset, none.bytes),
            (25, 25, 0)
        );
        assert!(none.chunks.is_empty());
    }
}
