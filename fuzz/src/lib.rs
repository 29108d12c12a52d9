//! Frieda's fuzz targets, shared by the `cargo fuzz` binaries (`fuzz_targets/`, nightly +
//! libFuzzer) and the stable mutation runner (`src/bin/mutate.rs`). Each target panics only on a
//! real finding: a panic inside the broker's code, or a broken invariant checked here.

use bytes::BytesMut;
use frieda_log::{
    validate_batches, validate_records, BatchHeader, LogConfig, PartitionLog, RecordPolicy,
    TimestampType, BATCH_HEADER_LEN,
};

/// One request frame payload through the broker's header parsing and per-API body decoding
/// (`frieda::handlers::parse_request` + the decoder of that API and version).
pub fn request_frame(data: &[u8]) {
    frieda::server::fuzzing::request_frame(data);
}

/// A raw connection byte stream through the frame reader (64 KiB frame limit), each complete
/// frame through [`request_frame`].
pub fn request_stream(data: &[u8]) {
    let frames = frieda::server::fuzzing::request_stream(data, 64 * 1024);
    assert!(frames <= data.len() / 4);
}

/// Seeds generated from the broker's API table (`frieda::handlers::table`), so that every API it
/// serves is fuzzed from a request it decodes: for `request_frame`, one frame payload per version
/// of every API (a default-valued body); for `request_stream`, one stream per API carrying a size
/// prefixed frame of each of its versions; nothing for the other targets. Each is `(name, bytes)`,
/// the name a file name (`table-<api key>[-v<version>]`) for `mutate --write-seeds`.
pub fn table_seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let requests = frieda::server::fuzzing::table_requests();
    match target {
        "request_frame" => requests
            .into_iter()
            .map(|r| (format!("table-{}-v{}", r.api_key, r.version), r.payload))
            .collect(),
        "request_stream" => {
            let mut streams: Vec<(String, Vec<u8>)> = Vec::new();
            for r in requests {
                let name = format!("table-{}", r.api_key);
                if streams.last().map(|(n, _)| n) != Some(&name) {
                    streams.push((name, Vec::new()));
                }
                if let Some((_, stream)) = streams.last_mut() {
                    stream.extend_from_slice(&(r.payload.len() as u32).to_be_bytes());
                    stream.extend_from_slice(&r.payload);
                }
            }
            streams
        }
        _ => Vec::new(),
    }
}

/// Record-batch validation as Produce runs it (`validate_batches`, `BatchHeader::parse`), with
/// the invariants a stored batch relies on checked independently when it accepts the input.
pub fn record_batch(data: &[u8]) {
    let _ = BatchHeader::parse(data);
    let Ok(headers) = validate_batches(data, 1 << 20) else {
        return;
    };
    let mut pos = 0usize;
    for h in &headers {
        let total = h.total_size();
        assert!(total >= BATCH_HEADER_LEN && pos + total <= data.len());
        let batch = &data[pos..pos + total];
        assert_eq!(BatchHeader::parse(batch).expect("header"), *h);
        assert_eq!(batch[16], 2, "accepted a batch with magic {}", batch[16]);
        let crc = u32::from_be_bytes([batch[17], batch[18], batch[19], batch[20]]);
        assert_eq!(
            crc32c::crc32c(&batch[21..]),
            crc,
            "accepted a batch with a bad CRC"
        );
        assert!(h.last_offset_delta >= 0);
        // Kafka's LogValidator rules on the records (decompressing where a compacted topic
        // needs keys): never a panic, and an accepted batch has as many records as offsets.
        for compacted in [false, true] {
            let policy = RecordPolicy {
                compacted,
                timestamp_type: TimestampType::CreateTime,
                timestamp_before_max_ms: i64::MAX,
                timestamp_after_max_ms: 3_600_000,
                now_ms: 1_700_000_000_000,
            };
            if validate_records(batch, h, &policy).is_ok() {
                assert!(h.records_count >= 1);
                assert_eq!(
                    i64::from(h.records_count),
                    i64::from(h.last_offset_delta) + 1
                );
            }
        }
        pos += total;
    }
    assert_eq!(
        pos,
        data.len(),
        "accepted batches do not cover the input exactly"
    );
}

/// A valid one-record batch (CreateTime, no producer id).
pub fn one_record_batch(value: &[u8], ts: i64) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if z < 0x80 {
                out.push(z as u8);
                return;
            }
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
    }
    let mut rec = vec![0u8]; // attributes
    varint(&mut rec, 0); // timestamp delta
    varint(&mut rec, 0); // offset delta
    varint(&mut rec, -1); // null key
    varint(&mut rec, value.len() as i64);
    rec.extend_from_slice(value);
    varint(&mut rec, 0); // no headers
    let mut records = Vec::new();
    varint(&mut records, rec.len() as i64);
    records.extend_from_slice(&rec);
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&0i16.to_be_bytes()); // attributes
    after_crc.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    after_crc.extend_from_slice(&ts.to_be_bytes());
    after_crc.extend_from_slice(&ts.to_be_bytes());
    after_crc.extend_from_slice(&(-1i64).to_be_bytes());
    after_crc.extend_from_slice(&(-1i16).to_be_bytes());
    after_crc.extend_from_slice(&(-1i32).to_be_bytes());
    after_crc.extend_from_slice(&1i32.to_be_bytes());
    after_crc.extend_from_slice(&records);
    let mut b = Vec::new();
    b.extend_from_slice(&0i64.to_be_bytes());
    b.extend_from_slice(&((4 + 1 + 4 + after_crc.len()) as i32).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
    b.push(2);
    b.extend_from_slice(&crc32c::crc32c(&after_crc).to_be_bytes());
    b.extend_from_slice(&after_crc);
    b
}

/// Arbitrary bytes as the active segment of a partition after a crash: the log opens (never an
/// error for corrupt content), keeps exactly a byte-identical valid prefix, serves only whole
/// CRC-valid batches in increasing, non-overlapping offset order (gaps are legal: compaction
/// leaves them) up to its log end, takes a new append at the log end, and reopens with nothing
/// more to cut.
pub fn log_recovery(data: &[u8]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let seg = dir.path().join("00000000000000000000.log");
    std::fs::write(&seg, data).expect("write segment");
    let config = LogConfig {
        tail_cache_bytes: 0, // every read from the file
        ..LogConfig::default()
    };
    let (mut log, report) =
        PartitionLog::open(dir.path(), config.clone(), 1_000).expect("open must recover, not fail");
    let kept = std::fs::read(&seg).expect("read segment");
    assert_eq!(
        kept.len() as u64 + report.truncated_bytes,
        data.len() as u64
    );
    assert_eq!(
        &kept[..],
        &data[..kept.len()],
        "recovery changed the kept bytes"
    );
    let reader = log.reader();
    let (start, end) = (reader.log_start_offset(), reader.log_end_offset());
    assert_eq!(start, 0);
    let mut off = start;
    while off < end {
        let d = reader
            .read(off, 1 << 20, end)
            .expect("read below the log end");
        assert!(d.next_offset > off, "no progress reading at {off}");
        let mut expect = off;
        for chunk in &d.chunks {
            let headers = validate_batches(chunk, usize::MAX).expect("served a corrupt batch");
            for h in headers {
                assert!(
                    h.last_offset() >= expect,
                    "served a batch below the requested offset"
                );
                assert!(
                    expect == off || h.base_offset >= expect,
                    "batches overlap or go back"
                );
                expect = h.last_offset() + 1;
            }
        }
        assert_eq!(expect, d.next_offset);
        off = d.next_offset;
    }
    let batch = one_record_batch(b"after recovery", 2_000);
    let info = log
        .append(BytesMut::from(&batch[..]), 2_000)
        .expect("append after recovery");
    assert_eq!(info.base_offset, end);
    log.close().expect("close");
    let (log, report) = PartitionLog::open(dir.path(), config, 3_000).expect("reopen");
    assert_eq!(report.truncated_bytes, 0, "a clean log was cut on reopen");
    assert_eq!(log.log_end_offset(), end + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_accept_seeds() {
        let b = one_record_batch(b"v", 5);
        record_batch(&b);
        log_recovery(&b);
        log_recovery(&[&b[..], &b[..10]].concat());
        log_recovery(b"");
        request_frame(&[0, 18, 0, 0, 0, 0, 0, 1, 0, 1, b'x']);
        request_stream(&[0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 1, 0, 1, b'x']);
    }

    #[test]
    fn table_seeds_cover_every_api() {
        let apis = frieda::handlers::table::APIS;
        let versions: usize = apis.iter().map(|s| (s.max - s.min + 1) as usize).sum();
        let frames = table_seeds("request_frame");
        assert_eq!(frames.len(), versions);
        for (name, frame) in &frames {
            assert_eq!(
                frieda::server::fuzzing::request_frame(frame),
                frieda::server::fuzzing::FrameOutcome::Decoded,
                "{name}"
            );
            request_frame(frame);
        }
        let streams = table_seeds("request_stream");
        assert_eq!(streams.len(), apis.len());
        for ((name, stream), spec) in streams.iter().zip(apis) {
            assert_eq!(name, &format!("table-{}", spec.key as i16));
            let frames = frieda::server::fuzzing::request_stream(stream, 64 * 1024);
            assert_eq!(frames, (spec.max - spec.min + 1) as usize, "{name}");
        }
        assert!(table_seeds("record_batch").is_empty());
    }
}
