//! Validation of a segment after an unclean shutdown (every segment above the recovery point).
//!
//! Without fsync on every append (Kafka's default durability) a crash can leave the end of the log
//! half-written or garbage. Every batch is checked in order: a complete header, magic 2, a sane
//! length that fits in the file, a base offset at or above the end of the previous batch (gaps are
//! normal after compaction), no more records than its offset range, and the CRC-32C. Everything
//! from the first batch that fails is cut off.

use crate::batch::{crc_ok, BatchHeader, BATCH_HEADER_LEN};
use crate::error::LogError;
use crate::fs::LogFile;
use crate::segment::read_exact_at;

/// Outcome of validating one segment file.
#[derive(Debug)]
pub(crate) struct Recovered {
    /// Bytes of valid batches from the start of the file.
    pub valid_len: u64,
    /// `(position, header)` of every valid batch.
    pub batches: Vec<(u64, BatchHeader)>,
    /// Why validation stopped before the end of the file.
    pub reason: Option<String>,
}

/// Validates the batches of a segment based at `base_offset` whose file is `file_len` bytes long;
/// every offset must lie below `end_limit` (the next segment's base, or `i64::MAX` for the last
/// segment) and within the 32-bit relative range of the segment's indexes. I/O errors are
/// returned; corruption is not an error but a shorter `valid_len`.
pub(crate) fn validate_segment(
    file: &dyn LogFile,
    base_offset: i64,
    file_len: u64,
    end_limit: i64,
) -> Result<Recovered, LogError> {
    let mut pos = 0u64;
    let mut expected = base_offset;
    let mut batches = Vec::new();
    let mut buf = Vec::new();
    let reason = loop {
        if pos >= file_len {
            break None;
        }
        let remaining = file_len - pos;
        if remaining < BATCH_HEADER_LEN as u64 {
            break Some(format!(
                "{remaining} trailing bytes are not a complete batch header"
            ));
        }
        let hb = read_exact_at(file, pos, BATCH_HEADER_LEN)?;
        let h = BatchHeader::parse(&hb)?;
        if h.magic != 2 {
            break Some(format!("magic {} at position {pos}", h.magic));
        }
        let total = h.total_size() as u64;
        if total < BATCH_HEADER_LEN as u64 || total > remaining {
            break Some(format!(
                "batch length {} at position {pos} does not fit",
                h.batch_length
            ));
        }
        if h.base_offset < expected {
            break Some(format!(
                "base offset {} at position {pos} is below {expected}, the end of the previous batch",
                h.base_offset
            ));
        }
        if h.last_offset() >= end_limit || h.last_offset() - base_offset > i64::from(i32::MAX) {
            break Some(format!(
                "last offset {} at position {pos} lies outside the segment [{base_offset}, {end_limit})",
                h.last_offset()
            ));
        }
        // A cleaned batch keeps its offset range with fewer (or no) records.
        if h.last_offset_delta < 0
            || h.records_count < 0
            || i64::from(h.records_count) > i64::from(h.last_offset_delta) + 1
        {
            break Some(format!("inconsistent record count at position {pos}"));
        }
        buf.resize(total as usize, 0);
        file.read_exact_at(&mut buf, pos)?;
        if !crc_ok(&buf) {
            break Some(format!("CRC mismatch at position {pos}"));
        }
        batches.push((pos, h));
        expected = h.last_offset().saturating_add(1);
        pos += total;
    };
    Ok(Recovered {
        valid_len: pos,
        batches,
        reason,
    })
}
