//! Kafka RecordBatch v2 (magic 2), uncompressed: a small encoder that writes records straight
//! into one buffer (no per-record allocation), a minimal decoder for the consumer side, and
//! Kafka's murmur2 key partitioner.
//!
//! Layout of the 61-byte batch header:
//! baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 (CRC-32C of
//! everything after it) | attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 |
//! maxTimestamp i64 | producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32

use anyhow::{bail, Result};
use bytes::{BufMut, Bytes, BytesMut};

pub const HEADER_LEN: usize = 61;
const LENGTH_OFFSET: usize = 8;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const LAST_OFFSET_DELTA_OFFSET: usize = 23;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const RECORD_COUNT_OFFSET: usize = 57;

/// Builds one uncompressed RecordBatch v2 in place.
pub struct BatchBuilder {
    buf: BytesMut,
    count: i32,
    base_ts: i64,
    max_ts: i64,
}

pub fn zigzag_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

pub fn put_zigzag(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

/// Reads a zigzag varint (varlong); returns (value, bytes used).
pub fn get_zigzag(b: &[u8]) -> Result<(i64, usize)> {
    let mut z: u64 = 0;
    let mut shift = 0;
    for (i, &byte) in b.iter().enumerate() {
        if shift > 63 {
            bail!("varint too long");
        }
        z |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok((((z >> 1) as i64) ^ -((z & 1) as i64), i + 1));
        }
        shift += 7;
    }
    bail!("truncated varint")
}

/// Encoded size of one record with this key and value length (excluding nothing: the full
/// record including its own length prefix), at offset delta `od` and timestamp delta 0.
pub fn record_encoded_len(key_len: Option<usize>, value_len: usize, od: i32) -> usize {
    let body = record_body_len(key_len, value_len, od, 0);
    zigzag_len(body as i64) + body
}

fn record_body_len(key_len: Option<usize>, value_len: usize, od: i32, td: i64) -> usize {
    1 + zigzag_len(td)
        + zigzag_len(od as i64)
        + match key_len {
            Some(k) => zigzag_len(k as i64) + k,
            None => 1,
        }
        + zigzag_len(value_len as i64)
        + value_len
        + 1 // header count 0
}

impl BatchBuilder {
    pub fn new(base_ts_ms: i64, capacity: usize) -> Self {
        let mut buf = BytesMut::with_capacity(HEADER_LEN + capacity);
        buf.put_i64(0); // base offset (the broker assigns)
        buf.put_i32(0); // batch length, patched in finish()
        buf.put_i32(-1); // partition leader epoch
        buf.put_i8(2); // magic
        buf.put_u32(0); // crc, patched in finish()
        buf.put_i16(0); // attributes: no compression, create time, not transactional
        buf.put_i32(0); // last offset delta, patched
        buf.put_i64(base_ts_ms);
        buf.put_i64(base_ts_ms); // max timestamp, patched
        buf.put_i64(-1); // producer id
        buf.put_i16(-1); // producer epoch
        buf.put_i32(-1); // base sequence
        buf.put_i32(0); // record count, patched
        debug_assert_eq!(buf.len(), HEADER_LEN);
        BatchBuilder {
            buf,
            count: 0,
            base_ts: base_ts_ms,
            max_ts: base_ts_ms,
        }
    }

    pub fn count(&self) -> i32 {
        self.count
    }

    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends one record; `fill` writes exactly `value_len` bytes of value.
    pub fn push_with(
        &mut self,
        ts_ms: i64,
        key: Option<&[u8]>,
        value_len: usize,
        fill: impl FnOnce(&mut BytesMut),
    ) {
        let od = self.count;
        let td = ts_ms - self.base_ts;
        let body = record_body_len(key.map(|k| k.len()), value_len, od, td);
        self.buf.reserve(body + 5);
        put_zigzag(&mut self.buf, body as i64);
        self.buf.put_i8(0); // record attributes
        put_zigzag(&mut self.buf, td);
        put_zigzag(&mut self.buf, od as i64);
        match key {
            Some(k) => {
                put_zigzag(&mut self.buf, k.len() as i64);
                self.buf.put_slice(k);
            }
            None => put_zigzag(&mut self.buf, -1),
        }
        put_zigzag(&mut self.buf, value_len as i64);
        let before = self.buf.len();
        fill(&mut self.buf);
        assert_eq!(
            self.buf.len() - before,
            value_len,
            "fill wrote the wrong number of bytes"
        );
        put_zigzag(&mut self.buf, 0); // no headers
        self.count += 1;
        if ts_ms > self.max_ts {
            self.max_ts = ts_ms;
        }
    }

    pub fn push(&mut self, ts_ms: i64, key: Option<&[u8]>, value: &[u8]) {
        self.push_with(ts_ms, key, value.len(), |b| b.put_slice(value));
    }

    pub fn finish(mut self) -> Bytes {
        let len = (self.buf.len() - 12) as i32;
        self.buf[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&len.to_be_bytes());
        self.buf[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
            .copy_from_slice(&(self.count - 1).max(0).to_be_bytes());
        self.buf[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&self.max_ts.to_be_bytes());
        self.buf[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
            .copy_from_slice(&self.count.to_be_bytes());
        let crc = crc32c::crc32c(&self.buf[ATTRIBUTES_OFFSET..]);
        self.buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        self.buf.freeze()
    }
}

/// One decoded record: offset, timestamp, key and value (slices of the batch bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

#[derive(Debug, Clone)]
pub struct DecodedBatch {
    pub base_offset: i64,
    pub last_offset_delta: i32,
    pub records: Vec<DecodedRecord>,
}

impl DecodedBatch {
    pub fn next_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64 + 1
    }
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// Decodes the record batches in a Fetch response's `records` field. A trailing partial batch
/// (which brokers may return) is ignored. Checks magic and CRC-32C. Compressed batches are an error
/// (this tool never produces them).
pub fn decode_batches(data: &Bytes) -> Result<Vec<DecodedBatch>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while data.len() - pos >= HEADER_LEN {
        let b = &data[pos..];
        let batch_len = be_i32(b, LENGTH_OFFSET);
        if batch_len < (HEADER_LEN - 12) as i32 {
            bail!("batch length {batch_len} too small");
        }
        let total = 12 + batch_len as usize;
        if b.len() < total {
            break; // partial batch at the end of a fetch response
        }
        let b = &b[..total];
        if b[16] != 2 {
            bail!("unsupported magic {}", b[16]);
        }
        let crc = u32::from_be_bytes(b[CRC_OFFSET..CRC_OFFSET + 4].try_into().unwrap());
        if crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]) != crc {
            bail!("CRC mismatch in batch at offset {}", be_i64(b, 0));
        }
        let attributes = i16::from_be_bytes([b[21], b[22]]);
        if attributes & 0x7 != 0 {
            bail!("compressed batch (attributes {attributes:#x}) not supported");
        }
        let base_offset = be_i64(b, 0);
        let last_offset_delta = be_i32(b, LAST_OFFSET_DELTA_OFFSET);
        let base_ts = be_i64(b, 27);
        let count = be_i32(b, RECORD_COUNT_OFFSET);
        let mut records = Vec::with_capacity(count.max(0) as usize);
        let mut p = HEADER_LEN;
        let abs = |p: usize| pos + p;
        // Control batches (transaction markers) carry no user records.
        let is_control = attributes & 0x20 != 0;
        for _ in 0..count {
            let (len, n) = get_zigzag(&b[p..])?;
            p += n;
            let end = p + len as usize;
            if len < 0 || end > b.len() {
                bail!("record length {len} out of bounds");
            }
            let mut q = p + 1; // attributes
            let (td, n) = get_zigzag(&b[q..end])?;
            q += n;
            let (od, n) = get_zigzag(&b[q..end])?;
            q += n;
            let (kl, n) = get_zigzag(&b[q..end])?;
            q += n;
            let key = if kl >= 0 {
                let k = data.slice(abs(q)..abs(q + kl as usize));
                q += kl as usize;
                Some(k)
            } else {
                None
            };
            let (vl, n) = get_zigzag(&b[q..end])?;
            q += n;
            let value = if vl >= 0 {
                if q + vl as usize > end {
                    bail!("value length out of bounds");
                }
                let v = data.slice(abs(q)..abs(q + vl as usize));
                Some(v)
            } else {
                None
            };
            if !is_control {
                records.push(DecodedRecord {
                    offset: base_offset + od,
                    timestamp: base_ts + td,
                    key,
                    value,
                });
            }
            p = end;
        }
        out.push(DecodedBatch {
            base_offset,
            last_offset_delta,
            records,
        });
        pos += total;
    }
    Ok(out)
}

/// Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), used by the default
/// partitioner for keyed records: partition = (murmur2(key) & 0x7fffffff) % partitions.
pub fn murmur2(data: &[u8]) -> i32 {
    let length = data.len() as i32;
    let seed: i32 = 0x9747b28c_u32 as i32;
    let m: i32 = 0x5bd1e995;
    let r = 24;
    let mut h: i32 = seed ^ length;
    let length4 = data.len() / 4;
    for i in 0..length4 {
        let i4 = i * 4;
        let mut k: i32 = (data[i4] as i32)
            | ((data[i4 + 1] as i32) << 8)
            | ((data[i4 + 2] as i32) << 16)
            | ((data[i4 + 3] as i32) << 24);
        k = k.wrapping_mul(m);
        k ^= ((k as u32) >> r) as i32;
        k = k.wrapping_mul(m);
        h = h.wrapping_mul(m);
        h ^= k;
    }
    let tail = data.len() & !3;
    let rem = data.len() % 4;
    if rem == 3 {
        h ^= (data[tail + 2] as i32) << 16;
    }
    if rem >= 2 {
        h ^= (data[tail + 1] as i32) << 8;
    }
    if rem >= 1 {
        h ^= data[tail] as i32;
        h = h.wrapping_mul(m);
    }
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(m);
    h ^= ((h as u32) >> 15) as i32;
    h
}

pub fn key_partition(key: &[u8], partitions: usize) -> usize {
    ((murmur2(key) & 0x7fffffff) as usize) % partitions
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions};

    fn build(n: usize, size: usize, keyed: bool) -> Bytes {
        let mut b = BatchBuilder::new(1_700_000_000_000, n * (size + 16));
        for i in 0..n {
            let key = format!("k{i}");
            let value: Vec<u8> = (0..size).map(|j| (i + j) as u8).collect();
            b.push(
                1_700_000_000_000 + i as i64,
                if keyed { Some(key.as_bytes()) } else { None },
                &value,
            );
        }
        b.finish()
    }

    #[test]
    fn round_trip_through_kafka_protocol_decoder() {
        for &(n, size, keyed) in &[
            (1, 0, false),
            (1, 100, true),
            (7, 100, false),
            (300, 100, true),
            (3, 10240, false),
        ] {
            let bytes = build(n, size, keyed);
            let mut buf = bytes.clone();
            let set =
                RecordBatchDecoder::decode(&mut buf).expect("kafka-protocol decodes our batch");
            assert_eq!(set.records.len(), n);
            for (i, r) in set.records.iter().enumerate() {
                assert_eq!(r.offset, i as i64);
                assert_eq!(r.timestamp, 1_700_000_000_000 + i as i64);
                assert_eq!(r.value.as_ref().unwrap().len(), size);
                if size > 0 {
                    assert_eq!(r.value.as_ref().unwrap()[0], i as u8);
                }
                assert_eq!(
                    r.key.as_deref(),
                    if keyed {
                        Some(format!("k{i}").into_bytes())
                    } else {
                        None
                    }
                    .as_deref()
                );
            }
            // and through our own decoder
            let ours = decode_batches(&bytes).unwrap();
            assert_eq!(ours.len(), 1);
            assert_eq!(ours[0].records.len(), n);
            assert_eq!(ours[0].next_offset(), n as i64);
            for (a, b) in ours[0].records.iter().zip(set.records.iter()) {
                assert_eq!(a.offset, b.offset);
                assert_eq!(a.timestamp, b.timestamp);
                assert_eq!(a.key, b.key);
                assert_eq!(a.value, b.value);
            }
        }
    }

    #[test]
    fn byte_identical_to_kafka_protocol_encoder() {
        use kafka_protocol::records::{Compression, Record, TimestampType};
        let mut records = Vec::new();
        for i in 0..5i64 {
            records.push(Record {
                transactional: false,
                control: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i,
                // kafka-protocol splits batches unless offset - sequence is constant
                sequence: i as i32 - 1,
                timestamp: 1_000 + i,
                key: if i % 2 == 0 {
                    Some(Bytes::from(format!("key{i}")))
                } else {
                    None
                },
                value: Some(Bytes::from(vec![i as u8; 50])),
                headers: Default::default(),
                delete_horizon: false,
            });
        }
        let mut theirs = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut theirs,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .unwrap();
        let mut b = BatchBuilder::new(1_000, 0);
        for r in &records {
            b.push(r.timestamp, r.key.as_deref(), r.value.as_deref().unwrap());
        }
        let ours = b.finish();
        // kafka-protocol writes partitionLeaderEpoch from the record; both -1 here.
        assert_eq!(&ours[..], &theirs[..]);
    }

    #[test]
    fn decoder_rejects_bad_crc_and_skips_partial_tail() {
        let good = build(3, 20, false);
        let mut bad = BytesMut::from(&good[..]);
        let last = bad.len() - 2;
        bad[last] ^= 0xff;
        assert!(decode_batches(&bad.freeze()).is_err());
        let mut two = BytesMut::from(&good[..]);
        two.extend_from_slice(&good[..good.len() - 5]);
        let d = decode_batches(&two.freeze()).unwrap();
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn varints() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            -300,
            i32::MAX as i64,
            i64::MIN,
            i64::MAX,
        ] {
            let mut b = BytesMut::new();
            put_zigzag(&mut b, v);
            assert_eq!(b.len(), zigzag_len(v));
            assert_eq!(get_zigzag(&b).unwrap(), (v, b.len()));
        }
    }

    #[test]
    fn record_len_matches_encoding() {
        let mut b = BatchBuilder::new(0, 0);
        let before = b.len();
        b.push(0, Some(b"abc"), &[0u8; 100]);
        assert_eq!(b.len() - before, record_encoded_len(Some(3), 100, 0));
    }

    #[test]
    fn murmur2_matches_kafka() {
        // Test vectors from Kafka's UtilsTest.testMurmur2.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
        assert_eq!(
            murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"),
            -58897971
        );
        assert_eq!(murmur2(b"abc"), 479470107);
    }
}
