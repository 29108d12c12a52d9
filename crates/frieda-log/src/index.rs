//! Sparse offset index (`.index`) and time index (`.timeindex`) of one segment.
//!
//! File formats follow Kafka's: an offset-index entry is 8 bytes, `relative offset (u32 BE)` +
//! `byte position in the .log (u32 BE)`; a time-index entry is 12 bytes, `timestamp (i64 BE, ms)` +
//! `relative offset (u32 BE)`. Relative offsets are from the segment's base offset. Unlike Kafka the
//! files are not preallocated: their length is exactly the entries written. Offset entries name the
//! base offset of the batch at that position; time entries carry the largest timestamp seen so far in
//! the segment and the base offset of the batch that carries it.

use crate::batch::BatchHeader;

/// Bytes per offset-index entry.
pub(crate) const OFFSET_ENTRY_LEN: usize = 8;
/// Bytes per time-index entry.
pub(crate) const TIME_ENTRY_LEN: usize = 12;

/// One offset-index entry: the batch with base offset `segment base + rel_offset` starts at `position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetEntry {
    pub rel_offset: u32,
    pub position: u32,
}

/// One time-index entry: up to this point the largest timestamp (ms) in the segment is `timestamp`,
/// carried by the batch with base offset `segment base + rel_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeEntry {
    pub timestamp: i64,
    pub rel_offset: u32,
}

pub(crate) fn encode_offsets(entries: &[OffsetEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * OFFSET_ENTRY_LEN);
    for e in entries {
        out.extend_from_slice(&e.rel_offset.to_be_bytes());
        out.extend_from_slice(&e.position.to_be_bytes());
    }
    out
}

pub(crate) fn encode_times(entries: &[TimeEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * TIME_ENTRY_LEN);
    for e in entries {
        out.extend_from_slice(&e.timestamp.to_be_bytes());
        out.extend_from_slice(&e.rel_offset.to_be_bytes());
    }
    out
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Decodes an offset-index file; `None` if its length is not a multiple of 8.
pub(crate) fn decode_offsets(bytes: &[u8]) -> Option<Vec<OffsetEntry>> {
    let chunks = bytes.chunks_exact(OFFSET_ENTRY_LEN);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(
        chunks
            .map(|c| OffsetEntry {
                rel_offset: u32_at(&c[0..4]),
                position: u32_at(&c[4..8]),
            })
            .collect(),
    )
}

/// Decodes a time-index file; `None` if its length is not a multiple of 12.
pub(crate) fn decode_times(bytes: &[u8]) -> Option<Vec<TimeEntry>> {
    let chunks = bytes.chunks_exact(TIME_ENTRY_LEN);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(
        chunks
            .map(|c| {
                let mut ts = [0u8; 8];
                ts.copy_from_slice(&c[0..8]);
                TimeEntry {
                    timestamp: i64::from_be_bytes(ts),
                    rel_offset: u32_at(&c[8..12]),
                }
            })
            .collect(),
    )
}

/// Last entry whose relative offset is `<= rel_offset` (where to start scanning for it).
pub(crate) fn lookup_offset(entries: &[OffsetEntry], rel_offset: u32) -> Option<OffsetEntry> {
    let n = entries.partition_point(|e| e.rel_offset <= rel_offset);
    n.checked_sub(1).map(|i| entries[i])
}

/// Last entry whose timestamp is `< ts`: every batch before the one it names has timestamps `< ts`,
/// so a search for the first timestamp `>= ts` may start at that batch.
pub(crate) fn lookup_time_before(entries: &[TimeEntry], ts: i64) -> Option<TimeEntry> {
    let n = entries.partition_point(|e| e.timestamp < ts);
    n.checked_sub(1).map(|i| entries[i])
}

/// Sanity check of a loaded offset index against its segment: strictly increasing offsets and
/// positions, positions inside the log (`log_size` bytes), offsets below `rel_end` (the segment's
/// relative end offset).
pub(crate) fn offsets_consistent(entries: &[OffsetEntry], log_size: u64, rel_end: u64) -> bool {
    entries
        .windows(2)
        .all(|w| w[0].rel_offset < w[1].rel_offset && w[0].position < w[1].position)
        && entries
            .iter()
            .all(|e| u64::from(e.position) < log_size && u64::from(e.rel_offset) < rel_end)
}

/// Sanity check of a loaded time index: non-decreasing timestamps and offsets below `rel_end`.
pub(crate) fn times_consistent(entries: &[TimeEntry], rel_end: u64) -> bool {
    entries
        .windows(2)
        .all(|w| w[0].timestamp < w[1].timestamp && w[0].rel_offset <= w[1].rel_offset)
        && entries.iter().all(|e| u64::from(e.rel_offset) < rel_end)
}

/// Decides which index entries a sequence of appended batches produces. Used both on append and when
/// rebuilding an index from the log, so both give identical files.
#[derive(Debug, Clone)]
pub(crate) struct IndexBuilder {
    bytes_since_entry: usize,
    /// Largest batch max-timestamp seen in the segment (ms), -1 if none.
    pub max_ts: i64,
    /// Base offset of the batch carrying `max_ts`, -1 if none.
    pub max_ts_offset: i64,
    last_time_entry_ts: i64,
}

impl IndexBuilder {
    pub fn new() -> Self {
        IndexBuilder {
            bytes_since_entry: 0,
            max_ts: -1,
            max_ts_offset: -1,
            last_time_entry_ts: -1,
        }
    }

    /// Accounts for one batch written at `position` of a segment based at `segment_base`. Returns the
    /// entries to add: an offset entry once `interval` bytes were written since the previous one (the
    /// first batch of a segment needs none: lookups fall back to position 0), and with it a time entry
    /// if the largest timestamp grew.
    pub fn on_batch(
        &mut self,
        segment_base: i64,
        h: &BatchHeader,
        position: u64,
        interval: usize,
    ) -> (Option<OffsetEntry>, Option<TimeEntry>) {
        if h.max_timestamp > self.max_ts {
            self.max_ts = h.max_timestamp;
            self.max_ts_offset = h.base_offset;
        }
        let mut off = None;
        let mut time = None;
        if self.bytes_since_entry >= interval {
            let rel = h
                .base_offset
                .checked_sub(segment_base)
                .and_then(|r| u32::try_from(r).ok());
            let pos = u32::try_from(position).ok();
            if let (Some(rel_offset), Some(position)) = (rel, pos) {
                off = Some(OffsetEntry {
                    rel_offset,
                    position,
                });
                self.bytes_since_entry = 0;
                time = self.time_entry(segment_base);
            }
        }
        self.bytes_since_entry = self.bytes_since_entry.saturating_add(h.total_size());
        (off, time)
    }

    /// Accounts for a batch that is already indexed (restoring the builder of a flushed active
    /// segment from the headers after its last offset entry): only the largest timestamp.
    pub fn observe(&mut self, h: &BatchHeader) {
        if h.max_timestamp > self.max_ts {
            self.max_ts = h.max_timestamp;
            self.max_ts_offset = h.base_offset;
        }
    }

    /// Sets the bytes written since the last offset entry (restoring a builder).
    pub fn set_bytes_since_entry(&mut self, bytes: usize) {
        self.bytes_since_entry = bytes;
    }

    /// Final time entry written when a segment is closed (as Kafka does on roll), so the time index
    /// of a closed segment ends with the segment's largest timestamp.
    pub fn finish(&mut self, segment_base: i64) -> Option<TimeEntry> {
        self.time_entry(segment_base)
    }

    fn time_entry(&mut self, segment_base: i64) -> Option<TimeEntry> {
        if self.max_ts > self.last_time_entry_ts {
            let rel_offset = u32::try_from(self.max_ts_offset.checked_sub(segment_base)?).ok()?;
            self.last_time_entry_ts = self.max_ts;
            Some(TimeEntry {
                timestamp: self.max_ts,
                rel_offset,
            })
        } else {
            None
        }
    }

    /// Restores the builder of a closed segment from its loaded time index (no more appends follow).
    pub fn from_time_index(segment_base: i64, times: &[TimeEntry]) -> Self {
        let mut b = IndexBuilder::new();
        if let Some(last) = times.last() {
            b.max_ts = last.timestamp;
            b.max_ts_offset = segment_base.saturating_add(i64::from(last.rel_offset));
            b.last_time_entry_ts = last.timestamp;
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_lookup_floor() {
        let e = [
            OffsetEntry {
                rel_offset: 10,
                position: 100,
            },
            OffsetEntry {
                rel_offset: 20,
                position: 200,
            },
            OffsetEntry {
                rel_offset: 30,
                position: 300,
            },
        ];
        assert_eq!(lookup_offset(&e, 5), None);
        assert_eq!(lookup_offset(&e, 10).unwrap().position, 100);
        assert_eq!(lookup_offset(&e, 29).unwrap().position, 200);
        assert_eq!(lookup_offset(&e, 1000).unwrap().position, 300);
        let bytes = encode_offsets(&e);
        assert_eq!(bytes.len(), 24);
        assert_eq!(decode_offsets(&bytes).unwrap(), e.to_vec());
        assert!(decode_offsets(&bytes[..23]).is_none());
        assert!(offsets_consistent(&e, 301, 31));
        assert!(!offsets_consistent(&e, 300, 31));
        assert!(!offsets_consistent(&e, 301, 30));
        let bad = [e[1], e[0]];
        assert!(!offsets_consistent(&bad, 1000, 1000));
    }

    #[test]
    fn time_lookup_strictly_before() {
        let t = [
            TimeEntry {
                timestamp: 100,
                rel_offset: 0,
            },
            TimeEntry {
                timestamp: 200,
                rel_offset: 5,
            },
            TimeEntry {
                timestamp: 300,
                rel_offset: 9,
            },
        ];
        assert_eq!(lookup_time_before(&t, 100), None);
        assert_eq!(lookup_time_before(&t, 101).unwrap().rel_offset, 0);
        assert_eq!(lookup_time_before(&t, 300).unwrap().rel_offset, 5);
        assert_eq!(lookup_time_before(&t, 301).unwrap().rel_offset, 9);
        assert_eq!(decode_times(&encode_times(&t)).unwrap(), t.to_vec());
        assert!(times_consistent(&t, 10));
        assert!(!times_consistent(&t, 9));
        assert!(!times_consistent(&[t[1], t[0]], 10));
    }
}
