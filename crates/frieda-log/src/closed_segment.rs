//! Closed segments as tiered storage copies them (issue 32, KIP-405's `LogSegmentData`): the
//! bytes of the `.log`, the segment's indexes in one object, and its leader epochs, read
//! without any lock of the partition (the copier takes the segment's handle under the segment
//! list's read lock, then only `pread`s). Design: `docs/tiered-storage.md`.

use crate::fs::LogDir;
use std::sync::Arc;

use crate::error::LogError;
use crate::index::{decode_offsets, decode_times, encode_offsets, encode_times};
use crate::partition::LogReader;
use crate::segment::{read_exact_at, scan_headers_windowed, SegmentShared};
use crate::snapshot;
use crate::txn_index::{decode_entries, encode_entries, AbortedTxn};

/// Bytes [`ClosedSegment::leader_epochs`] reads at a time (1 MiB).
pub const EPOCH_SCAN_CHUNK: usize = 1 << 20;

/// Magic at the start of an `.indexes` object (Frieda's format, version 2: five parts).
pub const INDEXES_MAGIC: &[u8; 8] = b"FRIDX\x00\x00\x02";

/// Magic of version 1 (four parts, no producer snapshot), still read.
pub const INDEXES_MAGIC_V1: &[u8; 8] = b"FRIDX\x00\x00\x01";

/// A closed (no longer appended) segment of a partition log: its offsets, size and largest
/// timestamp when taken, and an open handle to its files, valid even if retention deletes it
/// meanwhile (the file stays readable while open).
pub struct ClosedSegment {
    shared: Arc<SegmentShared>,
    /// The partition's directory (its producer snapshots).
    dir: LogDir,
    /// First offset (the segment's base offset).
    pub base_offset: i64,
    /// Last offset it holds (inclusive).
    pub last_offset: i64,
    /// Bytes of its `.log`.
    pub size_bytes: u64,
    /// Largest batch max-timestamp in it, ms (-1 if none).
    pub max_timestamp_ms: i64,
}

impl LogReader {
    /// The closed, non-empty segments holding an offset at or above `from` (their last offset
    /// is `from` or more: the first may start below it) and whose last offset is below
    /// `below`, ascending (the active segment, the last one, is never among them). Takes the
    /// segment list's read lock only to clone handles.
    pub fn closed_segments(&self, from: i64, below: i64) -> Vec<ClosedSegment> {
        let all = self.segments_snapshot();
        let dir = self.dir();
        let n = all.len().saturating_sub(1);
        all[..n]
            .iter()
            .filter_map(|s| {
                let st = s.state.read();
                let seg = ClosedSegment {
                    shared: s.clone(),
                    dir: dir.clone(),
                    base_offset: s.base_offset,
                    last_offset: st.end_offset - 1,
                    size_bytes: st.size,
                    max_timestamp_ms: st.max_ts,
                };
                let wanted = st.size > 0 && seg.last_offset >= from && seg.last_offset < below;
                wanted.then_some(seg)
            })
            .collect()
    }
}

impl LogReader {
    /// The base offset of every segment, ascending, the active one last.
    pub fn segment_bases(&self) -> Vec<i64> {
        self.segments_snapshot()
            .iter()
            .map(|s| s.base_offset)
            .collect()
    }

    /// Bytes of the `.log` files of the segments whose first offset is above `offset`, the
    /// active one included: with `offset` the highest offset tiered storage copied, the bytes
    /// only the local tier holds (Kafka's `onlyLocalLogSegmentsSize`).
    pub fn bytes_above(&self, offset: i64) -> u64 {
        self.segments_snapshot()
            .iter()
            .filter(|s| s.base_offset > offset)
            .map(|s| s.state.read().size)
            .sum()
    }
}

impl ClosedSegment {
    /// `len` bytes of the `.log` at `pos` (fewer at its end).
    ///
    /// Errors: `LogError::Io` from the read.
    pub fn read_log(&self, pos: u64, len: usize) -> Result<Vec<u8>, LogError> {
        let len = len.min(self.size_bytes.saturating_sub(pos) as usize);
        read_exact_at(&self.shared.log, pos, len)
    }

    /// The leader epochs of its batches, `(epoch, first offset)` ascending, read from the
    /// batch headers (KIP-405's `segmentLeaderEpochs`) in [`EPOCH_SCAN_CHUNK`] windows.
    ///
    /// Errors: `LogError::Corrupt` for a header that does not parse; `LogError::Io`.
    pub fn leader_epochs(&self) -> Result<Vec<(i32, i64)>, LogError> {
        let mut out: Vec<(i32, i64)> = Vec::new();
        scan_headers_windowed(
            &self.shared.log,
            self.size_bytes,
            EPOCH_SCAN_CHUNK,
            |_, h| {
                if out
                    .last()
                    .is_none_or(|(e, _)| *e != h.partition_leader_epoch)
                {
                    out.push((h.partition_leader_epoch, h.base_offset));
                }
                Ok(true)
            },
        )?;
        Ok(out)
    }

    /// The producer snapshot taken when the segment after it began (`<last offset + 1>.snapshot`,
    /// Kafka's format: the producers before the offset after this segment; KIP-405's
    /// `producerSnapshotIndex`), if the partition still has it (none when writing it failed
    /// at the roll, or retention deleted it). Errors other than a missing file are logged and
    /// read as none: a copy goes on without it.
    pub fn producer_snapshot(&self) -> Option<Vec<u8>> {
        let path = snapshot::path(&self.dir, self.last_offset + 1);
        match self.dir.fs().read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read a producer snapshot to copy");
                None
            }
        }
    }

    /// Its indexes as one object: [`INDEXES_MAGIC`], then five big-endian u32 lengths (offset
    /// index, time index, transaction index, leader epochs, producer snapshot) and the five
    /// parts: the offset and time indexes and the aborted transactions in the local files'
    /// formats, the epochs (`epochs`, as [`leader_epochs`](Self::leader_epochs) gave them) as
    /// `(i32 epoch, i64 first offset)` pairs, and `producer_snapshot` (as
    /// [`producer_snapshot`](Self::producer_snapshot) gave it; empty for none). Reads no file.
    pub fn indexes(&self, epochs: &[(i32, i64)], producer_snapshot: &[u8]) -> Vec<u8> {
        let (offsets, times) = {
            let st = self.shared.state.read();
            (
                encode_offsets(&st.offset_index),
                encode_times(&st.time_index),
            )
        };
        let txns = encode_entries(&self.shared.aborted.read());
        let mut epoch_bytes = Vec::with_capacity(epochs.len() * 12);
        for (e, o) in epochs {
            epoch_bytes.extend_from_slice(&e.to_be_bytes());
            epoch_bytes.extend_from_slice(&o.to_be_bytes());
        }
        let parts = [
            offsets,
            times,
            txns,
            epoch_bytes,
            producer_snapshot.to_vec(),
        ];
        let mut out = Vec::with_capacity(8 + 20 + parts.iter().map(Vec::len).sum::<usize>());
        out.extend_from_slice(INDEXES_MAGIC);
        for p in &parts {
            out.extend_from_slice(&(p.len() as u32).to_be_bytes());
        }
        for p in parts {
            out.extend_from_slice(&p);
        }
        out
    }
}

/// A remote segment's `.indexes` object read back ([`ClosedSegment::indexes`] wrote it): what a
/// read from the remote tier needs of it.
#[derive(Debug, Clone, Default)]
pub struct RemoteIndexes {
    /// Offset index: `(offset relative to the base, byte position)`, ascending.
    offsets: Vec<(u32, u32)>,
    /// Time index: `(largest timestamp so far in ms, offset relative to the base of the batch
    /// carrying it)`, timestamps ascending.
    times: Vec<(i64, u32)>,
    /// The transactions aborted by markers in the segment.
    pub aborted: Vec<AbortedTxn>,
    /// The producer snapshot at the offset after the segment; empty when there was none (or
    /// the object is of version 1).
    pub producer_snapshot: Vec<u8>,
}

impl RemoteIndexes {
    /// Parses an `.indexes` object; `None` if it is not one (wrong magic, lengths that do not
    /// add up, entries that do not decode).
    pub fn parse(bytes: &[u8]) -> Option<RemoteIndexes> {
        let (body, count) = match bytes.strip_prefix(INDEXES_MAGIC.as_slice()) {
            Some(body) => (body, 5),
            None => (bytes.strip_prefix(INDEXES_MAGIC_V1.as_slice())?, 4),
        };
        let len_at = |i: usize| -> Option<usize> {
            let b = body.get(i * 4..i * 4 + 4)?;
            Some(u32::from_be_bytes(b.try_into().ok()?) as usize)
        };
        let lens = (0..count).map(len_at).collect::<Option<Vec<usize>>>()?;
        let mut at = count * 4;
        let mut parts = Vec::with_capacity(count);
        for l in lens {
            parts.push(body.get(at..at.checked_add(l)?)?);
            at += l;
        }
        if at != body.len() {
            return None;
        }
        let offsets = decode_offsets(parts[0])?
            .into_iter()
            .map(|e| (e.rel_offset, e.position))
            .collect();
        let times = decode_times(parts[1])?
            .into_iter()
            .map(|e| (e.timestamp, e.rel_offset))
            .collect();
        let (aborted, whole) = decode_entries(parts[2]);
        let producer_snapshot = parts.get(4).map_or_else(Vec::new, |p| p.to_vec());
        whole.then_some(RemoteIndexes {
            offsets,
            times,
            aborted,
            producer_snapshot,
        })
    }

    /// The byte position in the `.log` of a segment based at `base` from which a read of
    /// `offset` starts: the last indexed batch at or below it (0 if none).
    pub fn position_for(&self, base: i64, offset: i64) -> u64 {
        let rel = (offset - base).clamp(0, u32::MAX as i64) as u32;
        let i = self.offsets.partition_point(|(r, _)| *r <= rel);
        if i == 0 {
            0
        } else {
            u64::from(self.offsets[i - 1].1)
        }
    }

    /// The byte position in the `.log` of a segment based at `base` from which a search for
    /// the first record with timestamp `>= ts` and offset `>= starting_offset` starts, as
    /// Kafka's `RemoteIndexCache.Entry.lookupTimestamp` finds it: the last time-index entry
    /// whose timestamp is `<= ts` names a batch before which every record is older than `ts`
    /// (the segment's base if none), and the position is the offset index's for the larger of
    /// that batch's offset and `starting_offset`. With `ts` the segment's largest timestamp it
    /// is the position of the first batch carrying it.
    pub fn time_position(&self, base: i64, ts: i64, starting_offset: i64) -> u64 {
        let i = self.times.partition_point(|(t, _)| *t <= ts);
        let from = match i.checked_sub(1) {
            Some(i) => base + i64::from(self.times[i].1),
            None => base,
        };
        self.position_for(base, from.max(starting_offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::testutil::simple_batch;
    use crate::segment::scan_headers;
    use crate::{LogConfig, PartitionLog};
    use bytes::BytesMut;

    /// The windowed header scan sees every batch the per-batch one does, whatever the window
    /// (smaller than a batch, a few batches, the whole segment), and the epochs come out in
    /// order with the first offset of each.
    #[test]
    fn windowed_scan_matches_per_batch_scan_and_gives_each_epochs_first_offset() {
        let dir = tempfile::tempdir().unwrap();
        let one = simple_batch(2, 0, 50).len() as u64;
        let config = LogConfig {
            segment_bytes: one * 30 + 10,
            ..LogConfig::default()
        };
        let (mut log, _) = PartitionLog::open(dir.path(), config, 0).unwrap();
        for (epoch, batches) in [(1, 10), (3, 15), (4, 10)] {
            log.set_leader_epoch(epoch).unwrap();
            for i in 0..batches {
                let b = simple_batch(2, i, 50);
                log.append(BytesMut::from(&b[..]), 0).unwrap();
            }
        }
        let closed = log.reader().closed_segments(0, i64::MAX);
        let seg = &closed[0];
        let mut want = Vec::new();
        scan_headers(&seg.shared.log, 0, seg.size_bytes, |pos, h| {
            want.push((pos, h.base_offset, h.partition_leader_epoch));
            Ok(true)
        })
        .unwrap();
        assert_eq!(want.len(), 30);
        for chunk in [1, 100, one as usize * 3 + 7, 1 << 20] {
            let mut got = Vec::new();
            scan_headers_windowed(&seg.shared.log, seg.size_bytes, chunk, |pos, h| {
                got.push((pos, h.base_offset, h.partition_leader_epoch));
                Ok(true)
            })
            .unwrap();
            assert_eq!(got, want, "chunk {chunk}");
        }
        assert_eq!(seg.leader_epochs().unwrap(), vec![(1, 0), (3, 20), (4, 50)]);
        // A segment cut short mid-header is corrupt, not scanned past its end.
        let err = scan_headers_windowed(&seg.shared.log, one + 10, 100, |_, _| Ok(true));
        assert!(matches!(err, Err(LogError::Corrupt(_))), "{err:?}");
    }
}
