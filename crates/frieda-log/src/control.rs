//! Control records: the transaction markers that end a transaction on a partition (KIP-98).
//!
//! A marker is a control batch (attributes: transactional bit 4 and control bit 5 set) of the
//! producer id and epoch whose transaction it ends, with one record (Kafka's
//! `EndTransactionMarker`, `ControlRecordType`):
//!
//! ```text
//! key:   version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
//! value: version int16 (0), coordinator_epoch int32
//! ```
//!
//! Base sequence is -1 (markers are not sequenced); the record's timestamp is the coordinator's.

use crate::batch::{build_batch, records_section, BatchError, BatchHeader};
use crate::compression::Codec;
use crate::records::{encode_record, parse_records, RecordRef};

/// Attributes bit 4: the batch belongs to a transaction.
pub const TRANSACTIONAL_BIT: i16 = 0x10;
/// Attributes bit 5: a control batch.
pub const CONTROL_BIT: i16 = 0x20;

/// The outcome a marker records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlType {
    /// ABORT (type 0): the transaction's records are discarded by `read_committed` readers.
    Abort,
    /// COMMIT (type 1).
    Commit,
}

impl ControlType {
    /// Kafka's `ControlRecordType` id.
    pub fn id(self) -> i16 {
        match self {
            ControlType::Abort => 0,
            ControlType::Commit => 1,
        }
    }
}

/// A decoded transaction marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// Commit or abort.
    pub control: ControlType,
    /// Epoch of the transaction coordinator that wrote it (the leader epoch of its
    /// `__transaction_state` partition): a marker from an older coordinator is refused.
    pub coordinator_epoch: i32,
}

/// What the control record of a control batch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecord {
    /// A transaction marker.
    Marker(EndTxnMarker),
    /// A control type this broker does not know (Kafka keeps them; readers skip them), or an
    /// empty control batch left by the cleaner.
    Other,
}

/// Decodes the first record of a control batch (`batch` is the whole batch, `h` its header).
///
/// Errors: `InvalidRecord` when the records do not parse or a marker's key/value is short.
pub fn read_control_record(batch: &[u8], h: &BatchHeader) -> Result<ControlRecord, BatchError> {
    if h.records_count <= 0 {
        return Ok(ControlRecord::Other);
    }
    let section = records_section(batch, h)?;
    let records = parse_records(&section, h.records_count)?;
    let Some(r) = records.first() else {
        return Ok(ControlRecord::Other);
    };
    let bad = |why: &str| BatchError::InvalidRecord(format!("control record: {why}"));
    let key = r.key.ok_or_else(|| bad("no key"))?;
    if key.len() < 4 {
        return Err(bad("key shorter than 4 bytes"));
    }
    let control = match i16::from_be_bytes([key[2], key[3]]) {
        0 => ControlType::Abort,
        1 => ControlType::Commit,
        _ => return Ok(ControlRecord::Other),
    };
    let value = r.value.ok_or_else(|| bad("marker without a value"))?;
    if value.len() < 6 {
        return Err(bad("marker value shorter than 6 bytes"));
    }
    let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
    Ok(ControlRecord::Marker(EndTxnMarker {
        control,
        coordinator_epoch,
    }))
}

/// Builds a marker batch at base offset 0 (the log assigns the offset): producer `producer_id`
/// at `producer_epoch`, `marker` in its one record, timestamps `timestamp_ms`.
pub fn build_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    timestamp_ms: i64,
) -> Vec<u8> {
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0i16.to_be_bytes());
    key.extend_from_slice(&marker.control.id().to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0i16.to_be_bytes());
    value.extend_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let mut records = Vec::with_capacity(32);
    encode_record(
        &mut records,
        &RecordRef {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: 0,
            key: Some(&key),
            value: Some(&value),
            headers: &[0],
        },
    );
    let h = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        partition_leader_epoch: -1,
        magic: 2,
        crc: 0,
        attributes: TRANSACTIONAL_BIT | CONTROL_BIT,
        last_offset_delta: 0,
        base_timestamp: timestamp_ms,
        max_timestamp: timestamp_ms,
        producer_id,
        producer_epoch,
        base_sequence: -1,
        records_count: 1,
    };
    build_batch(&h, Codec::None, &records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::validate_batches;

    #[test]
    fn a_marker_round_trips_and_is_a_valid_control_batch() {
        for control in [ControlType::Abort, ControlType::Commit] {
            let m = EndTxnMarker {
                control,
                coordinator_epoch: 7,
            };
            let b = build_marker_batch(42, 3, m, 1_700_000_000_000);
            let h = BatchHeader::parse(&b).unwrap();
            assert!(h.is_control() && h.is_transactional());
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (42, 3, -1)
            );
            assert_eq!(h.records_count, 1);
            assert_eq!(validate_batches(&b, usize::MAX).unwrap().len(), 1);
            assert_eq!(
                read_control_record(&b, &h).unwrap(),
                ControlRecord::Marker(m)
            );
        }
    }

    #[test]
    fn unknown_control_types_are_other_and_short_keys_are_refused() {
        let mut records = Vec::new();
        encode_record(
            &mut records,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: 0,
                key: Some(&[0, 0, 0, 9]),
                value: None,
                headers: &[0],
            },
        );
        let mut h = BatchHeader::parse(&build_marker_batch(
            1,
            0,
            EndTxnMarker {
                control: ControlType::Commit,
                coordinator_epoch: 0,
            },
            0,
        ))
        .unwrap();
        h.records_count = 1;
        let b = build_batch(&h, Codec::None, &records);
        let h2 = BatchHeader::parse(&b).unwrap();
        assert_eq!(read_control_record(&b, &h2).unwrap(), ControlRecord::Other);
        let mut short = Vec::new();
        encode_record(
            &mut short,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: 0,
                key: Some(&[0]),
                value: None,
                headers: &[0],
            },
        );
        let b = build_batch(&h, Codec::None, &short);
        let h3 = BatchHeader::parse(&b).unwrap();
        assert!(read_control_record(&b, &h3).is_err());
    }
}
