//! Torn-tail validation of the active segment after a restart.
//!
//! Without fsync on every append (Kafka's default durability) a crash can leave the end of the active
//! segment half-written or garbage. Every batch is checked in order: a complete header, magic 2, a
//! sane length that fits in the file, the expected base offset (contiguous with the previous batch),
//! `records_count` consistent with `last_offset_delta`, and the CRC-32C. Everything from the first
//! batch that fails is cut off.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::batch::{crc_ok, BatchHeader, BATCH_HEADER_LEN};
use crate::error::LogError;
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

/// Validates the batches of a segment based at `base_offset` whose file is `file_len` bytes long.
/// I/O errors are returned; corruption is not an error but a shorter `valid_len`.
pub(crate) fn validate_segment(
    file: &File,
    base_offset: i64,
    file_len: u64,
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
        if h.base_offset != expected {
            break Some(format!(
                "base offset {} at position {pos}, expected {expected}",
                h.base_offset
            ));
        }
        if h.last_offset_delta < 0
            || h.records_count < 0
            || (h.records_count > 0
                && i64::from(h.records_count) != i64::from(h.last_offset_delta) + 1)
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
