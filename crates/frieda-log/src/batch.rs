//! Kafka RecordBatch v2 headers: parsing, validation, CRC-32C and in-place patching.
//!
//! Layout (Kafka protocol guide, "Record Batch"; all integers big-endian):
//!
//! | bytes  | field                  |                                   |
//! |--------|------------------------|-----------------------------------|
//! | 0..8   | baseOffset (i64)       | outside the CRC: patched on append|
//! | 8..12  | batchLength (i32)      | bytes after this field            |
//! | 12..16 | partitionLeaderEpoch   | outside the CRC                   |
//! | 16     | magic (i8) = 2         |                                   |
//! | 17..21 | crc (u32, CRC-32C)     | over bytes 21..end                |
//! | 21..23 | attributes (i16)       | compression bits 0-2, timestamp type bit 3, transactional bit 4, control bit 5 |
//! | 23..27 | lastOffsetDelta (i32)  |                                   |
//! | 27..35 | baseTimestamp (i64 ms) |                                   |
//! | 35..43 | maxTimestamp (i64 ms)  |                                   |
//! | 43..51 | producerId (i64)       |                                   |
//! | 51..53 | producerEpoch (i16)    |                                   |
//! | 53..57 | baseSequence (i32)     |                                   |
//! | 57..61 | recordsCount (i32)     |                                   |
//! | 61..   | records                |                                   |

use std::borrow::Cow;

use crate::compression::{self, Codec};
use crate::config::TimestampType;

/// Size in bytes of a v2 batch header, from baseOffset through recordsCount.
pub const BATCH_HEADER_LEN: usize = 61;
/// Bytes before `batchLength` counts: baseOffset (8) + batchLength (4).
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batchLength`: the header after the log overhead (61 - 12).
const MIN_BATCH_LENGTH: i32 = (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32;

const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
/// Attributes bit 6: the base timestamp is the cleaner's delete horizon (KIP-534).
pub(crate) const DELETE_HORIZON_BIT: i16 = 0x40;

/// Parsed fixed-size header of one RecordBatch v2 (Kafka protocol guide, "Record Batch").
/// Timestamps are milliseconds since the Unix epoch (-1 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record (assigned by the broker on append).
    pub base_offset: i64,
    /// Bytes after the length field: total batch size is `LOG_OVERHEAD + batch_length`.
    pub batch_length: i32,
    /// Leader epoch of the partition leader that appended the batch (KIP-101); outside the CRC.
    pub partition_leader_epoch: i32,
    /// Format version: 2 for RecordBatch v2 (KIP-98).
    pub magic: i8,
    /// CRC-32C of bytes `[attributes..end]`.
    pub crc: u32,
    /// Bits 0-2 compression, bit 3 timestamp type, bit 4 transactional, bit 5 control.
    pub attributes: i16,
    /// Last record's offset minus `base_offset` (records - 1 for producer batches).
    pub last_offset_delta: i32,
    /// Timestamp of the first record (ms); records store deltas from it.
    pub base_timestamp: i64,
    /// Largest record timestamp (ms), or the append time for `LogAppendTime` batches.
    pub max_timestamp: i64,
    /// Idempotent / transactional producer id (KIP-98), -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence number of the first record, -1 if none.
    pub base_sequence: i32,
    /// Number of records in the batch.
    pub records_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

impl BatchHeader {
    /// Parses the first [`BATCH_HEADER_LEN`] (61) bytes of `buf`. Does not check magic, lengths or the
    /// CRC (see [`validate_batches`]). Fails with `CorruptMessage` if `buf` is shorter than 61 bytes.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, BatchError> {
        if buf.len() < BATCH_HEADER_LEN {
            return Err(BatchError::CorruptMessage(format!(
                "batch header needs {BATCH_HEADER_LEN} bytes, got {}",
                buf.len()
            )));
        }
        Ok(BatchHeader {
            base_offset: be_i64(buf, 0),
            batch_length: be_i32(buf, 8),
            partition_leader_epoch: be_i32(buf, 12),
            magic: buf[MAGIC_OFFSET] as i8,
            crc: be_i32(buf, CRC_OFFSET) as u32,
            attributes: be_i16(buf, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(buf, 23),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP_OFFSET),
            producer_id: be_i64(buf, 43),
            producer_epoch: be_i16(buf, 51),
            base_sequence: be_i32(buf, 53),
            records_count: be_i32(buf, 57),
        })
    }

    /// The [`BATCH_HEADER_LEN`] (61) bytes of this header as a v2 batch stores them, every field
    /// as it is (the inverse of [`parse`](Self::parse); nothing is computed, the CRC neither).
    pub fn encode(&self) -> [u8; BATCH_HEADER_LEN] {
        let mut b = [0u8; BATCH_HEADER_LEN];
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.batch_length.to_be_bytes());
        b[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b[MAGIC_OFFSET] = self.magic as u8;
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&self.crc.to_be_bytes());
        b[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&self.attributes.to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        b[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.records_count.to_be_bytes());
        b
    }

    /// Total size of the batch in bytes: `LOG_OVERHEAD + batch_length` (0 if `batch_length` is negative).
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + usize::try_from(self.batch_length).unwrap_or(0)
    }

    /// Offset of the last record: `base_offset + last_offset_delta`.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// Sequence number of the last record, wrapping past `i32::MAX` to 0 as Kafka's
    /// `DefaultRecordBatch.incrementSequence` does; -1 (no sequence) stays -1.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == -1 {
            return -1;
        }
        let seq = self.base_sequence;
        let inc = self.last_offset_delta;
        if seq > i32::MAX - inc {
            // inc - (MAX - seq) - 1, computed without overflow.
            (i64::from(inc) - (i64::from(i32::MAX) - i64::from(seq)) - 1) as i32
        } else {
            seq.wrapping_add(inc)
        }
    }

    /// Compression codec id (attributes bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> u8 {
        (self.attributes & 0x7) as u8
    }

    /// Timestamp type (attributes bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Transactional batch (attributes bit 4).
    pub fn is_transactional(&self) -> bool {
        self.attributes & 0x10 != 0
    }

    /// Control batch, e.g. a transaction marker (attributes bit 5).
    pub fn is_control(&self) -> bool {
        self.attributes & 0x20 != 0
    }

    /// The delete horizon (ms) the log cleaner stamped on this batch (attributes bit 6, KIP-534:
    /// the base timestamp then holds the time after which its tombstones may be removed), if any.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_BIT != 0).then_some(self.base_timestamp)
    }
}

/// Why a produce request's record bytes were rejected. Each variant maps to a Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Bad length, CRC mismatch, records count inconsistent, truncated batch (Kafka `CORRUPT_MESSAGE`).
    #[error("corrupt message: {0}")]
    CorruptMessage(String),
    /// Magic byte other than 2 (the broker answers `INVALID_RECORD` / `UNSUPPORTED_FOR_MESSAGE_FORMAT`).
    #[error("unsupported record batch magic {0}")]
    UnsupportedMagic(i8),
    /// A batch of `size` bytes exceeds `max.message.bytes` (`max`) (Kafka `MESSAGE_TOO_LARGE`).
    #[error("batch of {size} bytes exceeds max.message.bytes {max}")]
    MessageTooLarge {
        /// Total batch size in bytes.
        size: usize,
        /// The configured `max.message.bytes`.
        max: usize,
    },
    /// Structurally readable but not acceptable, e.g. empty input (Kafka `INVALID_RECORD`).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Records of the batch broke per-record rules (Kafka `LogValidator.validateRecord`): a
    /// missing key on a compacted topic (`INVALID_RECORD`), or a timestamp outside
    /// `message.timestamp.before/after.max.ms` or a producer claiming `LogAppendTime`
    /// (`INVALID_TIMESTAMP`, which wins if any record has it). The whole batch is refused;
    /// Produce v8+ lists every offending record in `record_errors`.
    #[error("{} record(s) rejected, the first: {}", .0.len(), .0.first().map_or("", |e| e.message.as_str()))]
    RecordsRejected(Vec<RecordError>),
}

/// One record refused by a per-record rule (see [`BatchError::RecordsRejected`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// True for a timestamp error (`INVALID_TIMESTAMP`), false for `INVALID_RECORD`.
    pub timestamp: bool,
    /// 0-based index of the record in the batch (`record_errors.batch_index`).
    pub index: i32,
    /// Why (`record_errors.batch_index_error_message`).
    pub message: String,
}

/// CRC-32C of a whole batch's `[attributes..end]` bytes. `batch` must be at least 21 bytes.
fn batch_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or(&[]))
}

/// Validates one produce partition's `records` bytes: one or more concatenated v2 batches.
///
/// Each batch must have magic 2 (else `UnsupportedMagic`; v0/v1 message sets also carry their magic at
/// byte 16), `batch_length >= 49` and fit in the input exactly (a trailing partial batch is
/// `CorruptMessage`), a total size `<= max_message_bytes` (else `MessageTooLarge`), a CRC-32C over
/// `[attributes..end]` that matches and `last_offset_delta >= 0` (else `InvalidRecord`). Empty input
/// is `InvalidRecord`. The records count and the records themselves are checked by
/// [`validate_records`](crate::validate_records).
/// Returns the parsed headers in order (base offsets as sent by the client).
pub fn validate_batches(
    records: &[u8],
    max_message_bytes: usize,
) -> Result<Vec<BatchHeader>, BatchError> {
    if records.is_empty() {
        return Err(BatchError::InvalidRecord("empty record set".into()));
    }
    let mut headers = Vec::new();
    let mut pos = 0usize;
    while pos < records.len() {
        let rest = &records[pos..];
        if rest.len() <= MAGIC_OFFSET {
            return Err(BatchError::CorruptMessage(format!(
                "{} trailing bytes at position {pos} are not a batch",
                rest.len()
            )));
        }
        let magic = rest[MAGIC_OFFSET] as i8;
        if magic != 2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        let batch_length = be_i32(rest, 8);
        if batch_length < MIN_BATCH_LENGTH {
            return Err(BatchError::CorruptMessage(format!(
                "batch length {batch_length} at position {pos} is below the minimum {MIN_BATCH_LENGTH}"
            )));
        }
        let total = LOG_OVERHEAD + batch_length as usize;
        if total > rest.len() {
            return Err(BatchError::CorruptMessage(format!(
                "batch at position {pos} claims {total} bytes but only {} remain",
                rest.len()
            )));
        }
        if total > max_message_bytes {
            return Err(BatchError::MessageTooLarge {
                size: total,
                max: max_message_bytes,
            });
        }
        let batch = &rest[..total];
        let header = BatchHeader::parse(batch)?;
        let computed = batch_crc(batch);
        if computed != header.crc {
            return Err(BatchError::CorruptMessage(format!(
                "CRC mismatch at position {pos}: stored {:#010x}, computed {computed:#010x}",
                header.crc
            )));
        }
        if header.last_offset_delta < 0 {
            return Err(BatchError::InvalidRecord(format!(
                "negative last offset delta {}",
                header.last_offset_delta
            )));
        }
        headers.push(header);
        pos += total;
    }
    Ok(headers)
}

/// Writes `base_offset` into the first 8 bytes of `batch` (outside the CRC, so the CRC stays valid).
/// Does nothing if `batch` is shorter than 8 bytes.
pub fn patch_base_offset(batch: &mut [u8], base_offset: i64) {
    if let Some(b) = batch.get_mut(0..8) {
        b.copy_from_slice(&base_offset.to_be_bytes());
    }
}

/// Writes the partition leader epoch (KIP-101) into bytes 12..16 of `batch` (outside the CRC,
/// so the CRC stays valid). Does nothing if `batch` is shorter than 16 bytes.
pub fn patch_leader_epoch(batch: &mut [u8], epoch: i32) {
    if let Some(b) = batch.get_mut(12..16) {
        b.copy_from_slice(&epoch.to_be_bytes());
    }
}

/// Applies `LogAppendTime` to one batch (`message.timestamp.type=LogAppendTime`, KIP-32): sets the
/// timestamp-type attribute bit, sets `maxTimestamp` to `now_ms` (ms since epoch) and recomputes the
/// CRC-32C. Consumers then report `maxTimestamp` for every record. Does nothing if `batch` is shorter
/// than a batch header.
pub fn set_log_append_time(batch: &mut [u8], now_ms: i64) {
    if batch.len() < BATCH_HEADER_LEN {
        return;
    }
    let attrs = be_i16(batch, ATTRIBUTES_OFFSET) | TIMESTAMP_TYPE_BIT;
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now_ms.to_be_bytes());
    let crc = batch_crc(batch);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Builds a whole v2 batch from a header's fields and an uncompressed records section: the
/// records are compressed with `codec` (whose id replaces attribute bits 0-2; the other attribute
/// bits, offsets, timestamps, producer fields and `records_count` come from `h`), the batch length
/// and the CRC-32C are computed. Used to recompress for a topic's `compression.type` and by the
/// log cleaner.
pub fn build_batch(h: &BatchHeader, codec: Codec, records: &[u8]) -> Vec<u8> {
    let body = compression::compress(codec, records);
    let mut b = Vec::with_capacity(BATCH_HEADER_LEN + body.len());
    let header = BatchHeader {
        batch_length: (BATCH_HEADER_LEN - LOG_OVERHEAD + body.len()) as i32,
        magic: 2,
        crc: 0,
        attributes: (h.attributes & !0x7) | i16::from(codec.id()),
        ..*h
    };
    b.extend_from_slice(&header.encode());
    b.extend_from_slice(&body);
    let crc = batch_crc(&b);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// The uncompressed records section of a whole batch whose header is `h`: borrowed when the batch
/// is not compressed, else decompressed (bounded, see [`compression::MAX_DECOMPRESSED_BYTES`]).
///
/// Errors: `CorruptMessage` for a short batch, an unknown codec or undecodable records.
pub fn records_section<'a>(batch: &'a [u8], h: &BatchHeader) -> Result<Cow<'a, [u8]>, BatchError> {
    let section = batch
        .get(BATCH_HEADER_LEN..h.total_size())
        .ok_or_else(|| BatchError::CorruptMessage("batch shorter than its length".into()))?;
    match Codec::from_id(h.compression())? {
        Codec::None => Ok(Cow::Borrowed(section)),
        codec => Ok(Cow::Owned(compression::decompress(codec, section)?)),
    }
}

/// The first record of a whole batch (header `h`) that `ok` accepts, given its offset and
/// timestamp (ms): `(offset, timestamp)`, or `None`. A record's timestamp is the batch's base
/// timestamp plus its delta, or the batch's max timestamp for a `LogAppendTime` batch (Kafka's
/// `DefaultRecordBatch` iterators). Checks the batch's CRC first; decompresses a compressed
/// batch (bounded as [`records_section`]). Used by lookups by timestamp (ListOffsets, KIP-79)
/// over both the local and the remote tier (Kafka's `LogSegment.findOffsetByTimestamp`,
/// `RemoteLogManager.lookupTimestamp`).
///
/// Errors: `CorruptMessage` for a CRC mismatch, a short batch or undecodable records.
pub fn find_record(
    batch: &[u8],
    h: &BatchHeader,
    ok: impl Fn(i64, i64) -> bool,
) -> Result<Option<(i64, i64)>, BatchError> {
    if !crc_ok(batch) {
        return Err(BatchError::CorruptMessage(format!(
            "CRC mismatch in batch at offset {}",
            h.base_offset
        )));
    }
    let section = records_section(batch, h)?;
    let append_time = h.timestamp_type() == TimestampType::LogAppendTime;
    for r in crate::records::parse_records(&section, h.records_count)? {
        let ts = if append_time {
            h.max_timestamp
        } else {
            h.base_timestamp.saturating_add(r.timestamp_delta)
        };
        let offset = h.base_offset.saturating_add(i64::from(r.offset_delta));
        if ok(offset, ts) {
            return Ok(Some((offset, ts)));
        }
    }
    Ok(None)
}

/// True if the stored CRC of a whole batch matches its content (used by recovery).
pub(crate) fn crc_ok(batch: &[u8]) -> bool {
    match BatchHeader::parse(batch) {
        Ok(h) => batch_crc(batch) == h.crc,
        Err(_) => false,
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Test-only encoder of real v2 batches (records with keys, values, headers, timestamps).

    use super::*;
    use crate::records::put_varint;

    fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
        match b {
            None => put_varint(out, -1),
            Some(b) => {
                put_varint(out, b.len() as i64);
                out.extend_from_slice(b);
            }
        }
    }

    /// One record to encode: timestamp in ms (absolute), key, value, headers.
    #[derive(Clone)]
    pub struct Rec {
        pub ts: i64,
        pub key: Option<Vec<u8>>,
        pub value: Option<Vec<u8>>,
        pub headers: Vec<(String, Option<Vec<u8>>)>,
    }

    pub fn rec(ts: i64, value: &[u8]) -> Rec {
        Rec {
            ts,
            key: Some(format!("k{:013}", ts.rem_euclid(10_000_000_000_000)).into_bytes()),
            value: Some(value.to_vec()),
            headers: vec![("h".into(), Some(b"hv".to_vec()))],
        }
    }

    /// Encodes a batch with base offset 0 (as producers send it). `attributes` low bits may claim a
    /// compression codec; the records section is then written uncompressed anyway (only tests read it).
    pub fn encode_batch(records: &[Rec], attributes: i16) -> Vec<u8> {
        assert!(!records.is_empty());
        let base_ts = records[0].ts;
        let max_ts = records.iter().map(|r| r.ts).max().unwrap();
        let mut body = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let mut rb = Vec::new();
            rb.push(0u8);
            put_varint(&mut rb, r.ts - base_ts);
            put_varint(&mut rb, i as i64);
            put_bytes(&mut rb, r.key.as_deref());
            put_bytes(&mut rb, r.value.as_deref());
            put_varint(&mut rb, r.headers.len() as i64);
            for (k, v) in &r.headers {
                put_bytes(&mut rb, Some(k.as_bytes()));
                put_bytes(&mut rb, v.as_deref());
            }
            put_varint(&mut body, rb.len() as i64);
            body.extend_from_slice(&rb);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&0i64.to_be_bytes());
        b.extend_from_slice(&((BATCH_HEADER_LEN - LOG_OVERHEAD + body.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // leader epoch
        b.push(2);
        b.extend_from_slice(&[0; 4]); // crc placeholder
        b.extend_from_slice(&attributes.to_be_bytes());
        b.extend_from_slice(&((records.len() - 1) as i32).to_be_bytes());
        b.extend_from_slice(&base_ts.to_be_bytes());
        b.extend_from_slice(&max_ts.to_be_bytes());
        b.extend_from_slice(&7i64.to_be_bytes()); // producer id
        b.extend_from_slice(&1i16.to_be_bytes()); // producer epoch
        b.extend_from_slice(&0i32.to_be_bytes()); // base sequence
        b.extend_from_slice(&(records.len() as i32).to_be_bytes());
        b.extend_from_slice(&body);
        let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// A batch of `n` records with timestamps `ts, ts+1, ...` and `value_len`-byte values.
    pub fn simple_batch(n: usize, ts: i64, value_len: usize) -> Vec<u8> {
        let recs: Vec<Rec> = (0..n)
            .map(|i| rec(ts + i as i64, &vec![b'a' + (i % 26) as u8; value_len]))
            .collect();
        encode_batch(&recs, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn parse_and_accessors() {
        let b = encode_batch(&[rec(1000, b"x"), rec(1005, b"y"), rec(1002, b"z")], 0x10);
        let h = BatchHeader::parse(&b).unwrap();
        assert_eq!(h.magic, 2);
        assert_eq!(h.total_size(), b.len());
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.records_count, 3);
        assert_eq!(h.base_timestamp, 1000);
        assert_eq!(h.max_timestamp, 1005);
        assert_eq!(h.producer_id, 7);
        assert!(h.is_transactional());
        assert!(!h.is_control());
        assert_eq!(h.compression(), 0);
        assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(h.last_sequence(), 2);
        assert!(BatchHeader::parse(&b[..60]).is_err());
    }

    #[test]
    fn last_sequence_wraps_like_kafka() {
        let mut h = BatchHeader::parse(&simple_batch(1, 0, 1)).unwrap();
        h.base_sequence = i32::MAX - 1;
        h.last_offset_delta = 3;
        assert_eq!(h.last_sequence(), 1); // MAX-1, MAX, 0, 1
        h.base_sequence = i32::MAX;
        h.last_offset_delta = 0;
        assert_eq!(h.last_sequence(), i32::MAX);
        h.base_sequence = -1;
        assert_eq!(h.last_sequence(), -1);
    }

    #[test]
    fn validate_good_single_and_multiple() {
        let a = simple_batch(3, 100, 10);
        let b = simple_batch(5, 200, 20);
        assert_eq!(validate_batches(&a, 1 << 20).unwrap().len(), 1);
        let mut both = a.clone();
        both.extend_from_slice(&b);
        let hs = validate_batches(&both, 1 << 20).unwrap();
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[0].records_count, 3);
        assert_eq!(hs[1].records_count, 5);
        assert_eq!(hs[1].base_timestamp, 200);
    }

    #[test]
    fn validate_rejects_bad_crc() {
        let mut a = simple_batch(3, 100, 10);
        let n = a.len();
        a[n - 1] ^= 0x01;
        assert!(
            matches!(validate_batches(&a, 1 << 20), Err(BatchError::CorruptMessage(m)) if m.contains("CRC"))
        );
        // A flip in the base offset or leader epoch is outside the CRC and accepted.
        let mut b = simple_batch(3, 100, 10);
        b[3] ^= 0xff;
        assert!(validate_batches(&b, 1 << 20).is_ok());
    }

    #[test]
    fn validate_rejects_truncated_and_trailing_bytes() {
        let a = simple_batch(3, 100, 10);
        for cut in [1, 10, 17, 60, a.len() - 1] {
            assert!(
                matches!(
                    validate_batches(&a[..cut], 1 << 20),
                    Err(BatchError::CorruptMessage(_))
                ),
                "cut {cut}"
            );
        }
        let mut two = a.clone();
        two.extend_from_slice(&a[..30]);
        assert!(matches!(
            validate_batches(&two, 1 << 20),
            Err(BatchError::CorruptMessage(_))
        ));
        let mut short = a.clone();
        short[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert!(matches!(
            validate_batches(&short, 1 << 20),
            Err(BatchError::CorruptMessage(_))
        ));
        let mut neg = a.clone();
        neg[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            validate_batches(&neg, 1 << 20),
            Err(BatchError::CorruptMessage(_))
        ));
    }

    #[test]
    fn validate_rejects_magic_1_and_empty() {
        let mut a = simple_batch(1, 100, 10);
        a[16] = 1;
        assert!(matches!(
            validate_batches(&a, 1 << 20),
            Err(BatchError::UnsupportedMagic(1))
        ));
        assert!(matches!(
            validate_batches(&[], 1 << 20),
            Err(BatchError::InvalidRecord(_))
        ));
    }

    #[test]
    fn validate_rejects_oversized_and_inconsistent_count() {
        let a = simple_batch(4, 100, 100);
        let err = validate_batches(&a, a.len() - 1).unwrap_err();
        assert!(
            matches!(err, BatchError::MessageTooLarge { size, max } if size == a.len() && max == a.len() - 1)
        );
        assert!(validate_batches(&a, a.len()).is_ok());

        let mut d = a.clone();
        d[23..27].copy_from_slice(&(-1i32).to_be_bytes());
        let crc = crc32c::crc32c(&d[21..]);
        d[17..21].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate_batches(&d, 1 << 20),
            Err(BatchError::InvalidRecord(_))
        ));
    }

    #[test]
    fn validate_never_panics_on_random_bytes() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for len in 0..400usize {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = validate_batches(&buf, 1 << 20);
            let _ = BatchHeader::parse(&buf);
            let mut m = buf.clone();
            patch_base_offset(&mut m, 5);
            set_log_append_time(&mut m, 5);
        }
    }

    #[test]
    fn a_header_encodes_to_the_bytes_it_was_parsed_from() {
        let batch = simple_batch(3, 1_700_000_000_000, 20);
        let h = BatchHeader::parse(&batch).unwrap();
        assert_eq!(&h.encode()[..], &batch[..BATCH_HEADER_LEN]);
        let odd = BatchHeader {
            partition_leader_epoch: -7,
            attributes: 0x1b,
            producer_id: i64::MIN,
            producer_epoch: -2,
            base_sequence: i32::MAX,
            crc: 0xdead_beef,
            ..h
        };
        assert_eq!(BatchHeader::parse(&odd.encode()).unwrap(), odd);
    }

    #[test]
    fn patch_base_offset_keeps_crc_valid() {
        let mut a = simple_batch(3, 100, 10);
        patch_base_offset(&mut a, 12345);
        let h = validate_batches(&a, 1 << 20).unwrap()[0];
        assert_eq!(h.base_offset, 12345);
        assert_eq!(h.last_offset(), 12347);
    }

    #[test]
    fn log_append_time_rewrites_timestamp_and_crc() {
        let mut a = simple_batch(3, 100, 10);
        set_log_append_time(&mut a, 999_999);
        let h = validate_batches(&a, 1 << 20).unwrap()[0];
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(h.max_timestamp, 999_999);
        assert_eq!(h.base_timestamp, 100);
        assert!(crc_ok(&a));
    }
}
