//! Record-level validation of a produced batch, as Kafka's `LogValidator` does for client
//! appends (storage `LogValidator.validateBatch` / `validateRecord`, Kafka 4.x).
//!
//! [`validate_batches`](crate::validate_batches) has already checked the framing and the CRC.
//! Here, per batch: the offset range and the records count agree (`lastOffsetDelta + 1 ==
//! recordsCount >= 1`), no control batch comes from a client, an idempotent batch carries a
//! sequence. Per record (parsed from the records section; decompressed only when needed, see
//! [`RecordPolicy`]): the structure is exact; records of a compacted topic have keys; `CreateTime`
//! timestamps other than -1 lie within
//! `[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]`.
//!
//! Where Frieda differs from Kafka 4.x, deliberately:
//! - offset deltas must run 0, 1, 2, ... (`INVALID_RECORD`); Kafka stores an uncompressed batch's
//!   deltas unchecked (its consumers then see wrong offsets) and rebuilds a compressed one;
//! - a compressed batch is decompressed only when its keys must be checked (compacted topics);
//!   otherwise its timestamps are checked through the header's base and max timestamps, while
//!   Kafka decompresses every compressed batch on produce. The CPU this saves is the point of
//!   storing batches as sent (DESIGN.md, "ordering without CPU cost").

use crate::batch::{BatchError, BatchHeader, RecordError, BATCH_HEADER_LEN};
use crate::compression::{self, Codec};
use crate::config::TimestampType;
use crate::records::parse_records;

/// A record or batch timestamp that is not set (Kafka's `RecordBatch.NO_TIMESTAMP`).
const NO_TIMESTAMP: i64 = -1;

/// What the partition's configuration asks of every produced record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPolicy {
    /// `cleanup.policy` contains `compact`: every record needs a key (INVALID_RECORD otherwise).
    pub compacted: bool,
    /// `message.timestamp.type` of the topic.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a `CreateTime` timestamp may be,
    /// ms (Kafka 4 default `i64::MAX`: no limit).
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far in the future, ms (Kafka 4 default 3600000).
    pub timestamp_after_max_ms: i64,
    /// The broker's wall clock, ms since the epoch.
    pub now_ms: i64,
}

impl RecordPolicy {
    /// Whether records of a compressed batch must be decompressed to apply this policy. Keys
    /// need every record; timestamps are checked against the batch's base and max timestamps
    /// when the records stay compressed (Kafka checks each record; a producer's batch header
    /// carries the first and the largest timestamp, so only a batch whose records go back in time
    /// below its first one can differ).
    pub fn needs_records_of_compressed(&self) -> bool {
        self.compacted
    }

    fn timestamp_ok(&self, ts: i64) -> bool {
        ts >= self.now_ms.saturating_sub(self.timestamp_before_max_ms)
            && ts <= self.now_ms.saturating_add(self.timestamp_after_max_ms)
    }

    /// Kafka's message for an out-of-range timestamp (`LogValidator.validateTimestamp`).
    fn timestamp_error(&self, ts: i64, index: i32) -> RecordError {
        RecordError {
            timestamp: true,
            index,
            message: format!(
                "Timestamp {ts} of message with offset {index} is out of range. The timestamp should be within [{}, {}]",
                self.now_ms.saturating_sub(self.timestamp_before_max_ms),
                self.now_ms.saturating_add(self.timestamp_after_max_ms)
            ),
        }
    }
}

/// Header checks of a client batch (Kafka `LogValidator.validateBatch`, client origin).
///
/// Errors: `InvalidRecord` for a non-positive or inconsistent record count, a control batch, or
/// a producer id without a sequence.
pub fn validate_header(h: &BatchHeader) -> Result<(), BatchError> {
    if h.records_count <= 0 {
        return Err(BatchError::InvalidRecord(format!(
            "invalid reported count for record batch: {}",
            h.records_count
        )));
    }
    if i64::from(h.last_offset_delta) + 1 != i64::from(h.records_count) {
        return Err(BatchError::InvalidRecord(format!(
            "inconsistent batch offset range [0, {}] and count of records {}",
            h.last_offset_delta, h.records_count
        )));
    }
    if h.is_control() {
        return Err(BatchError::InvalidRecord(
            "clients are not allowed to write control records".into(),
        ));
    }
    if h.producer_id >= 0 && h.base_sequence < 0 {
        return Err(BatchError::InvalidRecord(format!(
            "invalid sequence number {} in a record batch with producer id {}",
            h.base_sequence, h.producer_id
        )));
    }
    Ok(())
}

/// Validates one whole produced batch (`batch`, whose parsed header is `h`) against `policy`:
/// [`validate_header`], then the records (see the module docs).
///
/// Errors: `InvalidRecord` (87) for the header and offset rules and records that do not parse;
/// `RecordsRejected` listing every record with a missing key (87) or a bad timestamp (32);
/// `CorruptMessage` (2) for records that cannot be decompressed.
pub fn validate_records(
    batch: &[u8],
    h: &BatchHeader,
    policy: &RecordPolicy,
) -> Result<(), BatchError> {
    validate_header(h)?;
    let topic_create_time = policy.timestamp_type == TimestampType::CreateTime;
    let batch_log_append = h.timestamp_type() == TimestampType::LogAppendTime;
    if !topic_create_time && batch_log_append {
        // Kafka reports it for every record; the first says it all.
        return Err(BatchError::RecordsRejected(vec![RecordError {
            timestamp: true,
            index: 0,
            message: "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime.".into(),
        }]));
    }
    // A record's timestamp: its own, or the batch's max timestamp when the batch claims
    // LogAppendTime (as Kafka's readers compute it).
    let record_ts = |delta: i64| {
        if batch_log_append {
            h.max_timestamp
        } else {
            h.base_timestamp.saturating_add(delta)
        }
    };
    let codec = Codec::from_id(h.compression())?;
    let section = batch
        .get(BATCH_HEADER_LEN..h.total_size())
        .ok_or_else(|| BatchError::CorruptMessage("batch shorter than its header".into()))?;
    let decompressed;
    let records = match codec {
        Codec::None => section,
        _ if policy.needs_records_of_compressed() => {
            decompressed = compression::decompress(codec, section)?;
            &decompressed[..]
        }
        _ => {
            if topic_create_time {
                let bad: Vec<RecordError> = [(h.base_timestamp, 0), (h.max_timestamp, -1)]
                    .into_iter()
                    .filter(|&(ts, _)| ts != NO_TIMESTAMP && !policy.timestamp_ok(ts))
                    .map(|(ts, i)| policy.timestamp_error(ts, i.max(0)))
                    .take(1)
                    .collect();
                if !bad.is_empty() {
                    return Err(BatchError::RecordsRejected(bad));
                }
            }
            return Ok(());
        }
    };
    let mut errors = Vec::new();
    for (i, r) in parse_records(records, h.records_count)?.iter().enumerate() {
        let index = i as i32;
        if r.offset_delta != index {
            return Err(BatchError::InvalidRecord(format!(
                "record {i} has offset delta {}, expected {i}",
                r.offset_delta
            )));
        }
        // As Kafka: the key check first, the timestamp only if the key passed.
        if policy.compacted && r.key.is_none() {
            errors.push(RecordError {
                timestamp: false,
                index,
                message: "Compacted topic cannot accept message without key".into(),
            });
            continue;
        }
        let ts = record_ts(r.timestamp_delta);
        if topic_create_time && ts != NO_TIMESTAMP && !policy.timestamp_ok(ts) {
            errors.push(policy.timestamp_error(ts, index));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BatchError::RecordsRejected(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::build_batch;
    use crate::batch::testutil::{encode_batch, rec, Rec};

    fn policy(now: i64) -> RecordPolicy {
        RecordPolicy {
            compacted: false,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            now_ms: now,
        }
    }

    /// Recomputes the CRC-32C after a test edited a batch.
    fn resign(b: &mut [u8]) {
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }

    #[test]
    fn counts_must_match_offsets() {
        let now = 1_000_000;
        let mut b = encode_batch(&[rec(now, b"a"), rec(now, b"b")], 0);
        let h = BatchHeader::parse(&b).unwrap();
        validate_records(&b, &h, &policy(now)).unwrap();
        // 0 records claiming a huge offset range: the file-descriptor exhaustion input.
        b[23..27].copy_from_slice(&i32::MAX.to_be_bytes());
        b[57..61].copy_from_slice(&0i32.to_be_bytes());
        resign(&mut b);
        let h = BatchHeader::parse(&b).unwrap();
        assert!(matches!(
            validate_records(&b, &h, &policy(now)),
            Err(BatchError::InvalidRecord(m)) if m.contains("count")
        ));
    }

    #[test]
    fn compacted_topics_need_keys_even_compressed() {
        let now = 1_000_000;
        let mut keyless = rec(now, b"v");
        keyless.key = None;
        let plain = encode_batch(&[rec(now, b"a"), keyless], 0);
        let h = BatchHeader::parse(&plain).unwrap();
        let mut p = policy(now);
        validate_records(&plain, &h, &p).unwrap();
        p.compacted = true;
        assert!(matches!(
            validate_records(&plain, &h, &p),
            Err(BatchError::RecordsRejected(e)) if e.len() == 1 && e[0].index == 1 && !e[0].timestamp
        ));
        let zipped = build_batch(&h, Codec::Gzip, &plain[BATCH_HEADER_LEN..]);
        let hz = BatchHeader::parse(&zipped).unwrap();
        assert_eq!(hz.compression(), 1);
        assert!(matches!(
            validate_records(&zipped, &hz, &p),
            Err(BatchError::RecordsRejected(e)) if !e[0].timestamp
        ));
        p.compacted = false;
        validate_records(&zipped, &hz, &p).unwrap();
    }

    #[test]
    fn timestamps_out_of_range() {
        let now = 10_000_000_000;
        let p = RecordPolicy {
            timestamp_before_max_ms: 1000,
            ..policy(now)
        };
        let ok = encode_batch(&[rec(now - 1000, b"a"), rec(now + 3_600_000, b"b")], 0);
        validate_records(&ok, &BatchHeader::parse(&ok).unwrap(), &p).unwrap();
        for ts in [now - 1001, now + 3_600_001] {
            let b = encode_batch(&[rec(now, b"a"), rec(ts, b"b")], 0);
            let h = BatchHeader::parse(&b).unwrap();
            assert!(
                matches!(
                    validate_records(&b, &h, &p),
                    Err(BatchError::RecordsRejected(e)) if e.len() == 1 && e[0].index == 1 && e[0].timestamp
                ),
                "{ts}"
            );
            let z = build_batch(&h, Codec::Lz4, &b[BATCH_HEADER_LEN..]);
            let hz = BatchHeader::parse(&z).unwrap();
            // The future bound is checked through the header's max timestamp.
            if ts > now {
                assert!(matches!(
                    validate_records(&z, &hz, &p),
                    Err(BatchError::RecordsRejected(e)) if e[0].timestamp
                ));
            }
        }
        // -1 (no timestamp) is never out of range.
        let none = encode_batch(&[rec(-1, b"a")], 0);
        validate_records(&none, &BatchHeader::parse(&none).unwrap(), &p).unwrap();
        // A LogAppendTime topic checks no range, but refuses batches claiming LogAppendTime.
        let lat = RecordPolicy {
            timestamp_type: TimestampType::LogAppendTime,
            ..p
        };
        let old = encode_batch(&[rec(5, b"a")], 0);
        validate_records(&old, &BatchHeader::parse(&old).unwrap(), &lat).unwrap();
        let claims_lat = encode_batch(&[rec(now, b"a")], 0x08);
        let h = BatchHeader::parse(&claims_lat).unwrap();
        assert!(matches!(
            validate_records(&claims_lat, &h, &lat),
            Err(BatchError::RecordsRejected(e)) if e[0].timestamp
        ));
        // On a CreateTime topic such a batch's records carry its max timestamp, checked as usual.
        validate_records(&claims_lat, &h, &p).unwrap();
        // Every bad record is listed, not only the first.
        let two_bad = encode_batch(
            &[
                rec(now, b"a"),
                rec(now + 7_200_000, b"b"),
                rec(now + 7_200_001, b"c"),
            ],
            0,
        );
        let h = BatchHeader::parse(&two_bad).unwrap();
        assert!(matches!(
            validate_records(&two_bad, &h, &p),
            Err(BatchError::RecordsRejected(e)) if e.iter().map(|e| e.index).collect::<Vec<_>>() == [1, 2]
        ));
    }

    #[test]
    fn control_batches_and_offset_deltas() {
        let now = 1_000_000;
        let mut c = encode_batch(&[rec(now, b"a")], 0x20);
        resign(&mut c);
        let h = BatchHeader::parse(&c).unwrap();
        assert!(
            matches!(validate_records(&c, &h, &policy(now)), Err(BatchError::InvalidRecord(m)) if m.contains("control"))
        );
        // Records in the wrong order of offset deltas.
        let recs: Vec<Rec> = vec![rec(now, b"a"), rec(now, b"b")];
        let b = encode_batch(&recs, 0);
        let h = BatchHeader::parse(&b).unwrap();
        let mut parsed = parse_records(&b[BATCH_HEADER_LEN..], 2).unwrap();
        parsed.swap(0, 1);
        let mut section = Vec::new();
        for r in &parsed {
            crate::records::encode_record(&mut section, r);
        }
        let swapped = build_batch(&h, Codec::None, &section);
        let hs = BatchHeader::parse(&swapped).unwrap();
        assert!(
            matches!(validate_records(&swapped, &hs, &policy(now)), Err(BatchError::InvalidRecord(m)) if m.contains("offset delta"))
        );
    }
}
