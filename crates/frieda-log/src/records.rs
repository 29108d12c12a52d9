//! The records inside a v2 batch: parsing and encoding (Kafka protocol guide, "Record").
//!
//! ```text
//! length: varint            bytes of the record after this field
//! attributes: int8          unused, 0
//! timestampDelta: varlong   record timestamp - batch baseTimestamp (ms)
//! offsetDelta: varint       record offset - batch baseOffset
//! keyLength: varint, key    -1 = null key
//! valueLen: varint, value   -1 = null value (a tombstone)
//! headers: varint count, then [keyLength varint, key, valueLength varint, value]
//! ```
//!
//! Varints are zigzag-encoded as in protobuf. The broker reads records only where Kafka must:
//! validation of keys and timestamps, the log cleaner, `MAX_TIMESTAMP` lookups; batches are
//! otherwise handled by their header alone.

use crate::batch::BatchError;

/// Longest varint (5 bytes) and varlong (10 bytes) encodings.
const VARINT_MAX: usize = 5;
const VARLONG_MAX: usize = 10;

/// One record of a records section, borrowing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Record attributes (unused by Kafka, 0).
    pub attributes: i8,
    /// Timestamp minus the batch's base timestamp, ms.
    pub timestamp_delta: i64,
    /// Offset minus the batch's base offset.
    pub offset_delta: i32,
    /// The key; `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// The value; `None` for a null value (a tombstone on compacted topics).
    pub value: Option<&'a [u8]>,
    /// The headers exactly as encoded (count varint and entries).
    pub headers: &'a [u8],
}

/// Records that do not parse: INVALID_RECORD, as Kafka's record iterator throws
/// `InvalidRecordException` ("Found invalid record structure", "Incorrect declared batch size").
fn malformed(what: impl std::fmt::Display) -> BatchError {
    BatchError::InvalidRecord(format!("malformed record: {what}"))
}

/// Reads a zigzag varint of at most `max_bytes` bytes at `*pos`, advancing it.
fn read_varint(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<i64, BatchError> {
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        let b = *buf.get(*pos).ok_or_else(|| malformed("truncated varint"))?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err(malformed("varint too long"))
}

/// Appends `v` as a zigzag varint/varlong.
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Reads a length-prefixed byte field (-1 = null).
fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, BatchError> {
    let len = read_varint(buf, pos, VARINT_MAX)?;
    if len == -1 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| malformed(format!("length {len}")))?;
    let end = pos
        .checked_add(len)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| malformed(format!("field of {len} bytes overruns the record")))?;
    let field = &buf[*pos..end];
    *pos = end;
    Ok(Some(field))
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Parses one record body (the bytes after its length prefix); every byte must be used.
fn parse_body(body: &[u8]) -> Result<RecordRef<'_>, BatchError> {
    let mut p = 0usize;
    let attributes = *body.first().ok_or_else(|| malformed("empty record"))? as i8;
    p += 1;
    let timestamp_delta = read_varint(body, &mut p, VARLONG_MAX)?;
    let offset_delta = read_varint(body, &mut p, VARINT_MAX)?;
    let offset_delta =
        i32::try_from(offset_delta).map_err(|_| malformed("offset delta out of range"))?;
    let key = read_bytes(body, &mut p)?;
    let value = read_bytes(body, &mut p)?;
    let headers_start = p;
    let count = read_varint(body, &mut p, VARINT_MAX)?;
    if count < 0 {
        return Err(malformed(format!("negative header count {count}")));
    }
    for _ in 0..count {
        if read_bytes(body, &mut p)?.is_none() {
            return Err(malformed("null header key"));
        }
        read_bytes(body, &mut p)?;
    }
    if p != body.len() {
        return Err(malformed(format!(
            "{} bytes left over after the headers",
            body.len() - p
        )));
    }
    Ok(RecordRef {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers: &body[headers_start..],
    })
}

/// Parses an (uncompressed) records section holding exactly `count` records, strictly: every
/// record's length must match its fields, and no byte may be left over.
///
/// Errors: `CorruptMessage` naming the record index and what was wrong.
pub fn parse_records(section: &[u8], count: i32) -> Result<Vec<RecordRef<'_>>, BatchError> {
    let n = usize::try_from(count).map_err(|_| malformed(format!("records count {count}")))?;
    // Each record takes at least 7 bytes: a bound on what the count may claim.
    let mut out = Vec::with_capacity(n.min(section.len() / 7 + 1));
    let mut pos = 0usize;
    for i in 0..n {
        let len = read_varint(section, &mut pos, VARINT_MAX)
            .map_err(|e| malformed(format!("record {i}: {e}")))?;
        let len =
            usize::try_from(len).map_err(|_| malformed(format!("record {i}: length {len}")))?;
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= section.len())
            .ok_or_else(|| malformed(format!("record {i} of {len} bytes overruns the batch")))?;
        out.push(
            parse_body(&section[pos..end]).map_err(|e| malformed(format!("record {i}: {e}")))?,
        );
        pos = end;
    }
    if pos != section.len() {
        return Err(malformed(format!(
            "{} bytes after the last of {count} records",
            section.len() - pos
        )));
    }
    Ok(out)
}

/// Appends one record, length-prefixed, to `out`. `timestamp_delta` and `offset_delta` are
/// relative to the batch the record goes into.
pub fn encode_record(out: &mut Vec<u8>, r: &RecordRef<'_>) {
    let mut body = Vec::with_capacity(
        16 + r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len) + r.headers.len(),
    );
    body.push(r.attributes as u8);
    put_varint(&mut body, r.timestamp_delta);
    put_varint(&mut body, i64::from(r.offset_delta));
    put_bytes(&mut body, r.key);
    put_bytes(&mut body, r.value);
    body.extend_from_slice(r.headers);
    put_varint(out, body.len() as i64);
    out.extend_from_slice(&body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::testutil::{encode_batch, rec, Rec};
    use crate::batch::BATCH_HEADER_LEN;

    #[test]
    fn parses_what_clients_encode_and_reencodes_identically() {
        let mut r2 = rec(990, b"yy");
        r2.key = None;
        let mut r3 = rec(1300, b"");
        r3.value = None;
        r3.headers.push(("h2".into(), None));
        let b = encode_batch(&[rec(1000, b"x"), r2, r3], 0);
        let section = &b[BATCH_HEADER_LEN..];
        let recs = parse_records(section, 3).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].value, Some(&b"x"[..]));
        assert_eq!(recs[1].key, None);
        assert_eq!(recs[1].timestamp_delta, -10);
        assert_eq!(recs[2].value, None);
        assert_eq!(recs[2].offset_delta, 2);
        let mut again = Vec::new();
        for r in &recs {
            encode_record(&mut again, r);
        }
        assert_eq!(again, section);
    }

    #[test]
    fn counts_and_lengths_must_match() {
        let b = encode_batch(&[rec(1, b"a"), rec(2, b"b")], 0);
        let section = &b[BATCH_HEADER_LEN..];
        assert!(parse_records(section, 1).is_err(), "bytes left over");
        assert!(parse_records(section, 3).is_err(), "a record missing");
        assert!(parse_records(section, -1).is_err());
        assert!(parse_records(&section[..section.len() - 1], 2).is_err());
        let mut longer = section.to_vec();
        longer[0] += 2; // first record claims two more bytes than its fields use
        assert!(parse_records(&longer, 2).is_err());
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x2545F4914F6CDD1D;
        for len in 0..300usize {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = parse_records(&buf, (x % 5) as i32);
            let _ = parse_records(&buf, i32::MAX);
        }
        let one = Rec {
            ts: 5,
            key: Some(vec![1]),
            value: Some(vec![2]),
            headers: vec![],
        };
        let b = encode_batch(&[one], 0);
        assert_eq!(parse_records(&b[BATCH_HEADER_LEN..], 1).unwrap().len(), 1);
    }
}
