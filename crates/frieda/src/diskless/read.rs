//! The read path's assembly (docs/diskless.md, "The read path", steps 3-4; build plan step 5),
//! sans-IO: the records of a Fetch for a diskless partition, from the coordinates the batch
//! coordinator found ([`Found`]) and the objects' bytes (GETs through the chunk cache, the
//! driver's business).
//!
//! A stored batch is the client's batch as validated: base offset 0 and partition leader epoch
//! 0 (a compacted run: the batches one after another, their offsets patched in). Each is
//! checked against its coordinate (length, magic, record count: a mismatch means the
//! object or the coordinate is damaged, CORRUPT_MESSAGE) and patched with its offset and the
//! leader epoch the reader is answered with; both fields lie outside the CRC (KIP-98's v2
//! layout), so the client's CRC check still holds. A transaction marker is no object's: its
//! control batch is built from the coordinate (the same bytes at every read).

use super::coordinator::{CompactionPlan, Coordinate, Found, Location, ObjectId};
use bytes::Bytes;
use frieda_log::{
    build_marker_batch, patch_base_offset, patch_leader_epoch, BatchHeader, BATCH_HEADER_LEN,
    LOG_OVERHEAD,
};

/// Why the records could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The object (or the byte range) is not in the bucket: deleted after the coordinates were
    /// found (retention, compaction). The driver asks FindBatches again.
    #[error("object {0:?} is not in the bucket")]
    Missing(ObjectId),
    /// The bytes do not match their coordinate: CORRUPT_MESSAGE (2).
    #[error("object {object:?} at byte {byte_offset}: {why}")]
    Corrupt {
        /// The object.
        object: ObjectId,
        /// Where the batch should start (bytes).
        byte_offset: u32,
        /// What did not match.
        why: String,
    },
}

/// The assembled records of one partition's fetch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Records {
    /// Whole v2 batches, patched, one after another.
    pub bytes: Vec<u8>,
    /// The offset after the last batch (the reader's next fetch offset), or the fetch offset
    /// when nothing was assembled.
    pub next_offset: i64,
}

impl Records {
    /// Appends one whole batch at `base_offset..=last_offset`, patched with that base offset and
    /// `leader_epoch` (both outside the CRC).
    fn push(&mut self, batch: &[u8], base_offset: i64, last_offset: i64, leader_epoch: i32) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(batch);
        let batch = &mut self.bytes[start..];
        patch_base_offset(batch, base_offset);
        patch_leader_epoch(batch, leader_epoch);
        self.next_offset = last_offset + 1;
    }
}

/// The batches of `found` holding offsets at or above `fetch_offset` and starting below `end`
/// (the last stable offset for a `read_committed` reader, else the high watermark), whole,
/// while their bytes stay within `max_bytes` (the first always, as Kafka answers at least one
/// batch), each patched with its base offset and `leader_epoch`. `read(object, byte_offset,
/// byte_len)` gives the stored bytes of a range (None: not in the bucket); markers are built.
///
/// Errors: [`ReadError::Missing`] for a range the bucket does not have; [`ReadError::Corrupt`]
/// for bytes that are not the batch the coordinate describes.
pub fn assemble(
    found: &Found,
    fetch_offset: i64,
    end: i64,
    max_bytes: usize,
    leader_epoch: i32,
    mut read: impl FnMut(ObjectId, u32, u32) -> Option<Bytes>,
) -> Result<Records, ReadError> {
    let mut out = Records {
        bytes: Vec::new(),
        next_offset: fetch_offset,
    };
    'coordinates: for c in wanted(found, fetch_offset, end, max_bytes) {
        match c.location {
            Location::Object {
                object,
                byte_offset,
                byte_len,
            } => {
                let stored =
                    read(object, byte_offset, byte_len).ok_or(ReadError::Missing(object))?;
                // one batch, or a compacted run of them
                for b in batches_of(c, &stored)? {
                    if b.last_offset < fetch_offset {
                        continue;
                    }
                    let len = b.bytes.len();
                    if b.base_offset >= end
                        || (!out.bytes.is_empty() && out.bytes.len() + len > max_bytes)
                    {
                        break 'coordinates;
                    }
                    out.push(&stored[b.bytes], b.base_offset, b.last_offset, leader_epoch);
                }
            }
            Location::Marker(m) => out.push(
                &build_marker_batch(
                    m.producer_id,
                    m.producer_epoch,
                    m.end_txn(),
                    c.max_timestamp,
                ),
                c.base_offset,
                c.last_offset,
                leader_epoch,
            ),
        }
    }
    Ok(out)
}

/// The bytes of a compacted object for `plan` (docs/diskless.md, "Compaction"): its batches as a
/// reader gets them (offsets patched in, leader epoch 0, markers built), one after another.
///
/// Errors: as [`assemble`]; [`ReadError::Corrupt`] when the batches do not reach the run's end.
pub fn assemble_run(
    plan: &CompactionPlan,
    read: impl FnMut(ObjectId, u32, u32) -> Option<Bytes>,
) -> Result<Vec<u8>, ReadError> {
    let end = plan.last_offset() + 1;
    let run = Found {
        coordinates: plan.coordinates.clone(),
        high_watermark: end,
        log_start: plan.base_offset(),
        last_stable_offset: end,
        aborted: Vec::new(),
    };
    let records = assemble(&run, plan.base_offset(), end, usize::MAX, 0, read)?;
    if records.next_offset != end {
        let (object, byte_offset, _) = plan
            .coordinates
            .iter()
            .find_map(Coordinate::object_range)
            .unwrap_or((ObjectId(uuid::Uuid::nil()), 0, 0));
        return Err(ReadError::Corrupt {
            object,
            byte_offset,
            why: format!(
                "the run {}..={} assembled to offset {}",
                plan.base_offset(),
                plan.last_offset(),
                records.next_offset
            ),
        });
    }
    Ok(records.bytes)
}

/// One stored batch of a coordinate's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    /// Where it is in the bytes read for the coordinate.
    pub bytes: std::ops::Range<usize>,
    /// Its first offset.
    pub base_offset: i64,
    /// Its last offset.
    pub last_offset: i64,
}

/// The batches of `stored`, the bytes of coordinate `c` (one batch as produced, or a
/// compacted run), with their offsets: they must fill the bytes exactly and their offsets the
/// coordinate's (each batch's last offset delta + 1 in turn).
///
/// Errors: [`ReadError::Corrupt`] for bytes that are not the batches the coordinate describes
/// (length, magic, offsets).
pub fn batches_of(c: &Coordinate, stored: &[u8]) -> Result<Vec<StoredBatch>, ReadError> {
    let Some((object, byte_offset, byte_len)) = c.object_range() else {
        return Ok(Vec::new());
    };
    let corrupt = |at: usize, why: String| ReadError::Corrupt {
        object,
        byte_offset: byte_offset + at as u32,
        why,
    };
    if stored.len() != byte_len as usize {
        return Err(corrupt(
            0,
            format!("{} bytes read for a {byte_len}-byte range", stored.len()),
        ));
    }
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut next = c.base_offset;
    while at < stored.len() {
        let h = BatchHeader::parse(&stored[at..]).map_err(|e| corrupt(at, e.to_string()))?;
        if h.magic != 2 {
            return Err(corrupt(at, format!("magic {}", h.magic)));
        }
        let len = i64::from(h.batch_length) + LOG_OVERHEAD as i64;
        if len < BATCH_HEADER_LEN as i64 || at as i64 + len > stored.len() as i64 {
            return Err(corrupt(
                at,
                format!("batch length {} in a {byte_len}-byte range", h.batch_length),
            ));
        }
        let last = next + i64::from(h.last_offset_delta);
        if h.last_offset_delta < 0 || last > c.last_offset {
            return Err(corrupt(
                at,
                format!(
                    "last offset delta {} at offset {next} for offsets {}..={}",
                    h.last_offset_delta, c.base_offset, c.last_offset
                ),
            ));
        }
        out.push(StoredBatch {
            bytes: at..at + len as usize,
            base_offset: next,
            last_offset: last,
        });
        next = last + 1;
        at += len as usize;
    }
    if next != c.last_offset + 1 {
        return Err(corrupt(
            at,
            format!(
                "batches end at offset {next} for offsets {}..={}",
                c.base_offset, c.last_offset
            ),
        ));
    }
    Ok(out)
}

/// The coordinates of `found` that [`assemble`] takes: from the one holding `fetch_offset`,
/// starting below `end`, the first whatever its size, then while their object bytes stay within
/// `max_bytes`.
pub fn wanted(
    found: &Found,
    fetch_offset: i64,
    end: i64,
    max_bytes: usize,
) -> impl Iterator<Item = &Coordinate> {
    let mut taken = 0usize;
    let mut first = true;
    found
        .coordinates
        .iter()
        .filter(move |c| c.last_offset >= fetch_offset && c.base_offset < end)
        .take_while(move |c| {
            let len = c.byte_len() as usize;
            let fits = first || taken + len <= max_bytes;
            first = false;
            taken += len;
            fits
        })
}

#[cfg(test)]
mod tests;
