//! Records of `__transaction_state` in Kafka's format (`TransactionLogKey.json`,
//! `TransactionLogValue.json`, Kafka 4.3), so Kafka's tools read them and the log is the
//! coordinator's whole state:
//!
//! ```text
//! key:   record type int16 (0 = transaction log), transactional_id string (int16 length)
//! value: version int16, then TransactionLogValue at that version:
//!        producer_id int64, producer_epoch int16, transaction_timeout_ms int32,
//!        transaction_status int8, transaction_partitions [topic, [partition int32]] (nullable),
//!        transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64,
//!        v1+ (flexible, compact strings and arrays) tagged fields: 0 previous_producer_id int64,
//!        1 next_producer_id int64, 2 client_transaction_version int16, 3 next_producer_epoch
//! ```
//!
//! A null value (tombstone) removes the id. Written values are version 1 (Kafka's with
//! transactions v2 finalized); versions 0 and 1 are read.

use std::collections::BTreeSet;

use super::metadata::{TxnState, TxnTransit, TxnVersion, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// The value version written.
const VALUE_VERSION: i16 = 1;

/// Encodes a record key.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&(transactional_id.len() as i16).to_be_bytes());
    out.extend_from_slice(transactional_id.as_bytes());
    out
}

/// Decodes a record key: the transactional id, `None` for another record type or garbage.
pub fn decode_key(b: &[u8]) -> Option<String> {
    let mut r = Reader { b, pos: 0 };
    if r.i16()? != 0 {
        return None;
    }
    let len = usize::try_from(r.i16()?).ok()?;
    let s = r.take(len)?;
    String::from_utf8(s.to_vec()).ok()
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Encodes a record value (version 1).
pub fn encode_value(t: &TxnTransit) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + t.partitions.len() * 16);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&t.producer_id.to_be_bytes());
    out.extend_from_slice(&t.producer_epoch.to_be_bytes());
    out.extend_from_slice(&t.txn_timeout_ms.to_be_bytes());
    out.push(t.state.id() as u8);
    if t.state == TxnState::Empty {
        put_uvarint(&mut out, 0); // null
    } else {
        let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
        for (topic, p) in &t.partitions {
            match by_topic.last_mut() {
                Some((name, parts)) if *name == topic.as_str() => parts.push(*p),
                _ => by_topic.push((topic.as_str(), vec![*p])),
            }
        }
        put_uvarint(&mut out, by_topic.len() as u64 + 1);
        for (topic, parts) in by_topic {
            put_uvarint(&mut out, topic.len() as u64 + 1);
            out.extend_from_slice(topic.as_bytes());
            put_uvarint(&mut out, parts.len() as u64 + 1);
            for p in parts {
                out.extend_from_slice(&p.to_be_bytes());
            }
            put_uvarint(&mut out, 0); // no tagged fields
        }
    }
    out.extend_from_slice(&t.txn_last_update_ms.to_be_bytes());
    out.extend_from_slice(&t.txn_start_ms.to_be_bytes());
    let mut tagged: Vec<(u64, Vec<u8>)> = Vec::new();
    if t.prev_producer_id != NO_PRODUCER_ID {
        tagged.push((0, t.prev_producer_id.to_be_bytes().to_vec()));
    }
    if t.next_producer_id != NO_PRODUCER_ID {
        tagged.push((1, t.next_producer_id.to_be_bytes().to_vec()));
    }
    if t.version.level() != 0 {
        tagged.push((2, t.version.level().to_be_bytes().to_vec()));
    }
    put_uvarint(&mut out, tagged.len() as u64);
    for (tag, data) in tagged {
        put_uvarint(&mut out, tag);
        put_uvarint(&mut out, data.len() as u64);
        out.extend_from_slice(&data);
    }
    out
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn i8(&mut self) -> Option<i8> {
        Some(self.take(1)?[0] as i8)
    }
    fn i16(&mut self) -> Option<i16> {
        let s = self.take(2)?;
        Some(i16::from_be_bytes([s[0], s[1]]))
    }
    fn i32(&mut self) -> Option<i32> {
        let s = self.take(4)?;
        Some(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn i64(&mut self) -> Option<i64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(i64::from_be_bytes(a))
    }
    fn uvarint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn string(&mut self, compact: bool) -> Option<String> {
        let len = if compact {
            usize::try_from(self.uvarint()?.checked_sub(1)?).ok()?
        } else {
            usize::try_from(self.i16()?).ok()?
        };
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
    /// Array length; `None` inside for a null array.
    fn array_len(&mut self, compact: bool) -> Option<Option<usize>> {
        if compact {
            let n = self.uvarint()?;
            Some(if n == 0 {
                None
            } else {
                Some(usize::try_from(n - 1).ok()?)
            })
        } else {
            let n = self.i32()?;
            Some(if n < 0 {
                None
            } else {
                Some(usize::try_from(n).ok()?)
            })
        }
    }
    fn skip_tagged(&mut self) -> Option<Vec<(u64, &'a [u8])>> {
        let n = self.uvarint()?;
        let mut out = Vec::new();
        for _ in 0..n {
            let tag = self.uvarint()?;
            let len = usize::try_from(self.uvarint()?).ok()?;
            out.push((tag, self.take(len)?));
        }
        Some(out)
    }
}

/// Decodes a record value (versions 0 and 1). `None` for an unknown version or garbage.
pub fn decode_value(b: &[u8]) -> Option<TxnTransit> {
    let mut r = Reader { b, pos: 0 };
    let version = r.i16()?;
    if !(0..=1).contains(&version) {
        return None;
    }
    let compact = version >= 1;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let txn_timeout_ms = r.i32()?;
    let state = TxnState::from_id(r.i8()?)?;
    let mut partitions = BTreeSet::new();
    if let Some(n) = r.array_len(compact)? {
        for _ in 0..n.min(1 << 20) {
            let topic = r.string(compact)?;
            let m = r.array_len(compact)?.unwrap_or(0);
            for _ in 0..m.min(1 << 20) {
                partitions.insert((topic.clone(), r.i32()?));
            }
            if compact {
                r.skip_tagged()?;
            }
        }
    }
    let txn_last_update_ms = r.i64()?;
    let txn_start_ms = r.i64()?;
    let mut prev_producer_id = NO_PRODUCER_ID;
    let mut next_producer_id = NO_PRODUCER_ID;
    let mut version_level = 0i16;
    if compact {
        for (tag, data) in r.skip_tagged()? {
            match (tag, data.len()) {
                (0, 8) => prev_producer_id = Reader { b: data, pos: 0 }.i64()?,
                (1, 8) => next_producer_id = Reader { b: data, pos: 0 }.i64()?,
                (2, 2) => version_level = Reader { b: data, pos: 0 }.i16()?,
                _ => {}
            }
        }
    }
    if state == TxnState::Empty {
        partitions.clear();
    }
    Some(TxnTransit {
        producer_id,
        prev_producer_id,
        next_producer_id,
        producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        txn_timeout_ms,
        state,
        partitions,
        txn_start_ms,
        txn_last_update_ms,
        version: TxnVersion::from_level(version_level),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_in_kafkas_format() {
        assert_eq!(encode_key("tx-1"), b"\x00\x00\x00\x04tx-1");
        assert_eq!(decode_key(&encode_key("tx-1")).as_deref(), Some("tx-1"));
        assert_eq!(decode_key(b"\x00\x01\x00\x01a"), None, "a group record");
        let t = TxnTransit {
            producer_id: 42,
            prev_producer_id: 41,
            next_producer_id: -1,
            producer_epoch: 3,
            last_producer_epoch: -1,
            txn_timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [
                ("a".to_string(), 0),
                ("a".to_string(), 2),
                ("b".to_string(), 1),
            ]
            .into_iter()
            .collect(),
            txn_start_ms: 1000,
            txn_last_update_ms: 2000,
            version: TxnVersion::V2,
        };
        let b = encode_value(&t);
        assert_eq!(&b[..2], &[0, 1], "version 1");
        assert_eq!(decode_value(&b), Some(t.clone()));
        let empty = TxnTransit {
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            version: TxnVersion::V1,
            prev_producer_id: -1,
            ..t
        };
        assert_eq!(decode_value(&encode_value(&empty)), Some(empty));
        assert_eq!(decode_value(&[0, 9, 1, 2]), None);
        assert_eq!(decode_value(&b[..b.len() - 3]), None);
    }

    /// A version 0 value as Kafka 3.x wrote it (non-flexible).
    #[test]
    fn version_0_values_are_read() {
        let mut b = Vec::new();
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&7i64.to_be_bytes());
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&900i32.to_be_bytes());
        b.push(2); // PrepareCommit
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i16.to_be_bytes());
        b.push(b'x');
        b.extend_from_slice(&2i32.to_be_bytes());
        b.extend_from_slice(&5i32.to_be_bytes());
        b.extend_from_slice(&6i32.to_be_bytes());
        b.extend_from_slice(&11i64.to_be_bytes());
        b.extend_from_slice(&10i64.to_be_bytes());
        let t = decode_value(&b).unwrap();
        assert_eq!(t.state, TxnState::PrepareCommit);
        assert_eq!(t.partitions.len(), 2);
        assert_eq!(
            (t.producer_id, t.producer_epoch, t.txn_timeout_ms),
            (7, 1, 900)
        );
        assert_eq!(t.version, TxnVersion::V1);
    }
}
