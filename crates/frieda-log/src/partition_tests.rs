//! Tests of the partition log: append/read, indexes, rolling, retention, reopen and recovery.

use super::*;
use crate::batch::testutil::{encode_batch, rec, simple_batch, Rec};
use crate::batch::validate_batches;
use crate::RemoteIndexes;
use std::fs;
use std::io::Write;
use std::path::PathBuf;

const NOW: i64 = 1_700_000_000_000;

fn cfg() -> LogConfig {
    LogConfig::default()
}

fn no_cache() -> LogConfig {
    LogConfig {
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

fn bm(b: &[u8]) -> BytesMut {
    BytesMut::from(b)
}

/// Runs retention and deletes the removed segments' files, as the broker does after releasing
/// the partition's lock.
fn retain(log: &mut PartitionLog, now: i64) -> Result<RetentionReport, LogError> {
    let (report, removed) = log.enforce_retention(now)?;
    assert_eq!(removed.len(), report.deleted_segments);
    removed.delete_files()?;
    Ok(report)
}

fn concat(f: &FetchData) -> Vec<u8> {
    let v: Vec<u8> = f.chunks.iter().flat_map(|c| c.iter().copied()).collect();
    assert_eq!(v.len(), f.bytes);
    v
}

/// The bytes a batch should have once stored at `base`.
fn patched(batch: &[u8], base: i64) -> Vec<u8> {
    let mut b = batch.to_vec();
    patch_base_offset(&mut b, base);
    b
}

/// Appends `n` batches of `per` records each, returns (base offset, stored bytes) per batch.
fn fill(
    log: &mut PartitionLog,
    n: usize,
    per: usize,
    ts: i64,
    value_len: usize,
) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..n {
        let b = simple_batch(per, ts + i as i64 * 10, value_len);
        let info = log.append(bm(&b), NOW).unwrap();
        out.push((info.base_offset, patched(&b, info.base_offset)));
    }
    out
}

#[test]
fn append_assigns_offsets_and_reads_back_from_cache_and_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, rep) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    assert_eq!((rep.segments, rep.log_end_offset), (1, 0));
    assert!(dir.path().join("00000000000000000000.log").exists());
    // The indexes are made with their first entry (issue 58: one file per idle partition).
    assert!(!dir.path().join("00000000000000000000.index").exists());
    assert!(!dir.path().join("00000000000000000000.timeindex").exists());

    let a = simple_batch(3, 1000, 10);
    let b = simple_batch(2, 2000, 20);
    let mut two = a.clone();
    two.extend_from_slice(&b);
    let i1 = log.append(bm(&two), NOW).unwrap();
    assert_eq!(
        (i1.base_offset, i1.last_offset, i1.log_append_time),
        (0, 4, -1)
    );
    assert_eq!(i1.bytes, two.len());
    let c = simple_batch(4, 3000, 5);
    let i2 = log.append(bm(&c), NOW).unwrap();
    assert_eq!((i2.base_offset, i2.last_offset), (5, 8));
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(log.unflushed_messages(), 9);
    assert_eq!(log.size_bytes(), (two.len() + c.len()) as u64);

    let mut expect = patched(&a, 0);
    expect.extend(patched(&b, 3));
    expect.extend(patched(&c, 5));
    let r = log.reader();
    let cached = r.read_cached(0, usize::MAX, i64::MAX).unwrap().unwrap();
    assert_eq!(concat(&cached), expect);
    assert_eq!((cached.first_offset, cached.next_offset), (0, 9));
    let disk = r.read_disk(0, usize::MAX, i64::MAX).unwrap();
    assert_eq!(concat(&disk), expect);
    assert_eq!((disk.first_offset, disk.next_offset), (0, 9));
    let hs = validate_batches(&concat(&disk), usize::MAX).unwrap();
    assert_eq!(
        hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![0, 3, 5]
    );

    log.flush().unwrap();
    assert_eq!(log.unflushed_messages(), 0);
}

#[test]
fn reads_start_mid_batch_cut_at_batch_boundaries_and_respect_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    let stored = fill(&mut log, 5, 4, 1000, 50); // offsets 0..20, batches of 4
    let size = stored[0].1.len();
    let r = log.reader();
    type ReadFn = fn(&LogReader, i64, usize, i64) -> Result<FetchData, LogError>;
    let paths: [(&str, ReadFn); 2] = [
        ("cache", |r, o, m, x| r.read_cached(o, m, x).unwrap()),
        ("disk", |r, o, m, x| r.read_disk(o, m, x)),
    ];
    for (name, read) in paths {
        // Mid-batch: offset 6 is in the batch 4..=7, which is returned whole.
        let f = read(&r, 6, usize::MAX, i64::MAX).unwrap();
        assert_eq!(f.first_offset, 4, "{name}");
        assert_eq!(f.next_offset, 20, "{name}");
        assert_eq!(concat(&f)[..size], stored[1].1[..], "{name}");
        // max_bytes cuts at a batch boundary.
        let f = read(&r, 0, 2 * size + size / 2, i64::MAX).unwrap();
        assert_eq!((f.bytes, f.next_offset), (2 * size, 8), "{name}");
        // KIP-74: the first batch is returned even if larger than max_bytes.
        let f = read(&r, 9, 1, i64::MAX).unwrap();
        assert_eq!(
            (f.first_offset, f.bytes, f.next_offset),
            (8, size, 12),
            "{name}"
        );
        assert_eq!(concat(&f), stored[2].1, "{name}");
        // max_offset (high watermark, exclusive): batch 8..=11 has last offset 11 >= 11.
        let f = read(&r, 0, usize::MAX, 11).unwrap();
        assert_eq!(f.next_offset, 8, "{name}");
        let f = read(&r, 9, usize::MAX, 11).unwrap();
        assert_eq!(
            (f.bytes, f.next_offset, f.chunks.len()),
            (0, 9, 0),
            "{name}"
        );
        let f = read(&r, 0, usize::MAX, 12).unwrap();
        assert_eq!(f.next_offset, 12, "{name}");
        // At the log end: empty. Beyond: out of range.
        let f = read(&r, 20, usize::MAX, i64::MAX).unwrap();
        assert_eq!(
            (f.bytes, f.first_offset, f.next_offset),
            (0, 20, 20),
            "{name}"
        );
        assert!(matches!(
            read(&r, 21, 100, i64::MAX),
            Err(LogError::OffsetOutOfRange {
                offset: 21,
                log_start_offset: 0,
                log_end_offset: 20
            })
        ));
        assert!(matches!(
            read(&r, -1, 100, i64::MAX),
            Err(LogError::OffsetOutOfRange { .. })
        ));
    }
}

#[test]
fn read_cached_misses_below_cache_and_read_falls_back_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let stored_len = simple_batch(2, 0, 100).len();
    let config = LogConfig {
        tail_cache_bytes: 2 * stored_len,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 5, 2, 1000, 100);
    let r = log.reader();
    assert!(r.read_cached(0, usize::MAX, i64::MAX).is_none());
    assert!(r.read_cached(5, usize::MAX, i64::MAX).is_none());
    let f = r.read_cached(6, usize::MAX, i64::MAX).unwrap().unwrap();
    assert_eq!(f.first_offset, 6);
    let f = r.read(0, usize::MAX, i64::MAX).unwrap();
    let all: Vec<u8> = stored.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(concat(&f), all);
    // Out-of-range answers need no disk.
    assert!(matches!(
        r.read_cached(11, 1, i64::MAX),
        Some(Err(LogError::OffsetOutOfRange { .. }))
    ));
}

#[test]
fn sparse_offset_index_and_disk_reads_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 1000,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 40, 3, 1000, 100); // ~400-byte batches
    let size = stored[0].1.len() as u64;
    assert!(size > 300 && size < 1000, "batch size {size}");
    let st = log.segments[0].shared.state.read();
    let entries = st.offset_index.clone();
    drop(st);
    // An entry after at least 1000 bytes: every ceil(1000/size) batches, not every batch.
    let every = 1000u64.div_ceil(size);
    assert_eq!(entries.len() as u64, 39 / every);
    for e in &entries {
        assert_eq!(u64::from(e.position) % size, 0);
        assert_eq!(u64::from(e.rel_offset), u64::from(e.position) / size * 3);
    }
    let idx_file = fs::read(dir.path().join("00000000000000000000.index")).unwrap();
    assert_eq!(idx_file, crate::index::encode_offsets(&entries));
    let r = log.reader();
    for off in 0..120 {
        let f = r.read(off, 1, i64::MAX).unwrap();
        let i = (off / 3) as usize;
        assert_eq!(concat(&f), stored[i].1, "offset {off}");
    }
}

/// A log in `dir` with a time index entry per batch, holding one batch: offsets 0..=2 with
/// record timestamps 100, 105, 103 (not monotonic).
fn log_of_unordered_timestamps(dir: &std::path::Path) -> PartitionLog {
    let config = LogConfig {
        index_interval_bytes: 0,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir, config, NOW).unwrap();
    log.append(
        bm(&encode_batch(
            &[rec(100, b"a"), rec(105, b"b"), rec(103, b"c")],
            0,
        )),
        NOW,
    )
    .unwrap();
    log
}

#[test]
fn offset_for_timestamp_record_level_batch_level_and_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_of_unordered_timestamps(dir.path());
    // Batch 1: offsets 3..=4, gzip compressed: decompressed for the lookup.
    let plain = encode_batch(&[rec(200, b"d"), rec(210, b"e")], 0);
    let h = BatchHeader::parse(&plain).unwrap();
    let gzip = crate::batch::build_batch(&h, crate::Codec::Gzip, &plain[BATCH_HEADER_LEN..]);
    log.append(bm(&gzip), NOW).unwrap();
    // Batch 2: offsets 5..=7, timestamps 300, 310, 320.
    let recs: Vec<Rec> = (0..3).map(|i| rec(300 + 10 * i, b"f")).collect();
    log.append(bm(&encode_batch(&recs, 0)), NOW).unwrap();
    let r = log.reader();
    assert_eq!(r.offset_for_timestamp(0).unwrap(), Some((0, 100)));
    assert_eq!(r.offset_for_timestamp(101).unwrap(), Some((1, 105)));
    assert_eq!(r.offset_for_timestamp(104).unwrap(), Some((1, 105)));
    assert_eq!(r.offset_for_timestamp(106).unwrap(), Some((3, 200)));
    assert_eq!(r.offset_for_timestamp(205).unwrap(), Some((4, 210)));
    assert_eq!(r.offset_for_timestamp(211).unwrap(), Some((5, 300)));
    assert_eq!(r.offset_for_timestamp(305).unwrap(), Some((6, 310)));
    assert_eq!(r.offset_for_timestamp(320).unwrap(), Some((7, 320)));
    assert_eq!(r.offset_for_timestamp(321).unwrap(), None);
    // MAX_TIMESTAMP: the record carrying the largest timestamp, not its batch's base offset.
    assert_eq!(r.max_timestamp().unwrap(), Some((320, 7)));
    // The time index has entries (interval 0: one per batch) with growing timestamps.
    let times = log.segments[0].shared.state.read().time_index.clone();
    assert_eq!(
        times.iter().map(|t| t.timestamp).collect::<Vec<_>>(),
        vec![105, 210, 320]
    );
}

/// DeleteRecords moved the log start to 2 inside the first batch (offsets 0..=2, timestamps
/// 100, 105, 103): a lookup for 101 answers offset 2 (103), the first record at or above the log
/// start that is that recent, not the deleted offset 1 (Kafka's
/// `findOffsetByTimestamp(ts, logStartOffset)`); for 104, offset 3 (200).
#[test]
fn offset_for_timestamp_answers_nothing_below_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_of_unordered_timestamps(dir.path());
    log.append(bm(&encode_batch(&[rec(200, b"d")], 0)), NOW)
        .unwrap();
    assert_eq!(
        log.reader().offset_for_timestamp(101).unwrap(),
        Some((1, 105))
    );
    assert!(log.advance_log_start(2).unwrap().is_empty());
    let r = log.reader();
    assert_eq!(r.offset_for_timestamp(101).unwrap(), Some((2, 103)));
    assert_eq!(r.offset_for_timestamp(0).unwrap(), Some((2, 103)));
    assert_eq!(r.offset_for_timestamp(104).unwrap(), Some((3, 200)));
}

#[test]
fn offset_for_timestamp_uses_time_index_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 200).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 10,
        index_interval_bytes: 500,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    // 50 batches of 2 records; batch i has timestamps 1000+10i, 1000+10i+1.
    fill(&mut log, 50, 2, 1000, 200);
    assert_eq!(log.segment_count(), 5);
    let r = log.reader();
    for i in 0..50i64 {
        assert_eq!(
            r.offset_for_timestamp(1000 + 10 * i).unwrap(),
            Some((2 * i, 1000 + 10 * i))
        );
        assert_eq!(
            r.offset_for_timestamp(1000 + 10 * i + 1).unwrap(),
            Some((2 * i + 1, 1000 + 10 * i + 1))
        );
        assert_eq!(
            r.offset_for_timestamp(1000 + 10 * i + 2)
                .unwrap()
                .map(|x| x.0),
            Some(2 * i + 2).filter(|&o| o < 100)
        );
    }
    assert_eq!(r.max_timestamp().unwrap(), Some((1491, 99)));
}

#[test]
fn log_append_time_rewrites_timestamp_and_keeps_crc_valid() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let info = log.append(bm(&simple_batch(3, 1000, 10)), NOW + 5).unwrap();
    assert_eq!(info.log_append_time, NOW + 5);
    let f = log.reader().read(0, usize::MAX, i64::MAX).unwrap();
    let h = validate_batches(&concat(&f), usize::MAX).unwrap()[0];
    assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(h.max_timestamp, NOW + 5);
    assert_eq!(
        log.reader().offset_for_timestamp(0).unwrap(),
        Some((0, NOW + 5))
    );
    assert_eq!(log.reader().max_timestamp().unwrap(), Some((NOW + 5, 0)));
}

#[test]
fn rolls_by_bytes_with_kafka_file_names_and_reads_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 3,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 7, 2, 1000, 100);
    assert_eq!(log.segment_count(), 3);
    for base in [0, 6, 12] {
        assert!(
            dir.path().join(format!("{base:020}.log")).exists(),
            "segment {base}"
        );
    }
    assert_eq!(
        fs::metadata(dir.path().join("00000000000000000000.log"))
            .unwrap()
            .len(),
        3 * one
    );
    let f = log.reader().read(1, usize::MAX, i64::MAX).unwrap();
    let all: Vec<u8> = stored.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(concat(&f), all);
    assert_eq!(f.next_offset, 14);
    // A batch larger than segment.bytes still goes into a (fresh) segment.
    let big = simple_batch(1, 5000, (one * 4) as usize);
    let info = log.append(bm(&big), NOW).unwrap();
    assert_eq!(info.base_offset, 14);
    assert_eq!(log.segment_count(), 4);
    assert_eq!(log.reader().read(14, 1, i64::MAX).unwrap().bytes, big.len());
}

/// A disk read planned under the log's locks and run later (on the backlog lane): it reads what
/// the log held when planned, byte for byte across segments, even if the log grew or retention
/// deleted the segments' files in between.
#[test]
fn a_planned_disk_read_runs_without_the_log_and_sees_the_log_as_planned() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 3,
        retention_ms: 1000,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 7, 2, NOW - 5000, 100); // offsets 0..14, segments 0, 6, 12
    let r = log.reader();
    let plan = r.plan_disk_read(3, usize::MAX, i64::MAX).unwrap();
    let capped = r.plan_disk_read(0, 1, 9).unwrap();
    let at_end = r.plan_disk_read(14, usize::MAX, i64::MAX).unwrap();
    // The log grows and then loses every old segment before the reads run.
    fill(&mut log, 3, 2, NOW, 100);
    let rep = retain(&mut log, NOW + 500).unwrap();
    assert_eq!(rep.deleted_segments, 2);
    assert!(!dir.path().join("00000000000000000000.log").exists());
    assert!(!dir.path().join("00000000000000000006.log").exists());
    let f = plan.run().unwrap();
    let want: Vec<u8> = stored[1..].iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(concat(&f), want);
    assert_eq!((f.first_offset, f.next_offset), (2, 14));
    // KIP-74's first batch whole, max_bytes and max_offset as in `read`.
    let f = capped.run().unwrap();
    assert_eq!((f.first_offset, f.next_offset), (0, 2));
    assert_eq!(concat(&f), stored[0].1);
    let f = at_end.run().unwrap();
    assert!(f.chunks.is_empty());
    assert_eq!((f.first_offset, f.next_offset), (14, 14));
    // Planning below the new log start is OFFSET_OUT_OF_RANGE, as a read is.
    assert!(matches!(
        r.plan_disk_read(3, usize::MAX, i64::MAX),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn rolls_by_segment_ms() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1000,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    log.append(bm(&simple_batch(1, 0, 10)), NOW).unwrap();
    log.append(bm(&simple_batch(1, 0, 10)), NOW + 1000).unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append(bm(&simple_batch(1, 0, 10)), NOW + 1001).unwrap();
    assert_eq!(log.segment_count(), 2);
    assert!(dir.path().join("00000000000000000002.log").exists());
    log.append(bm(&simple_batch(1, 0, 10)), NOW + 1500).unwrap();
    assert_eq!(log.segment_count(), 2);
}

#[test]
fn retention_by_time_deletes_whole_segments_and_advances_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 2,
        retention_ms: 1000,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    // Segments [0..4) ts ~NOW-5000, [4..8) ts ~NOW-3000, [8..12) ts ~NOW.
    fill(&mut log, 2, 2, NOW - 5000, 100);
    fill(&mut log, 2, 2, NOW - 3000, 100);
    let recent = fill(&mut log, 2, 2, NOW, 100);
    assert_eq!(log.segment_count(), 3);
    let r = log.reader();
    let rep = retain(&mut log, NOW + 500).unwrap();
    assert_eq!(rep.deleted_segments, 2);
    assert_eq!(rep.deleted_bytes, 4 * one);
    assert_eq!(rep.log_start_offset, 8);
    assert_eq!(r.log_start_offset(), 8);
    assert!(!dir.path().join("00000000000000000000.log").exists());
    assert!(!dir.path().join("00000000000000000004.index").exists());
    assert!(matches!(
        r.read(7, 100, i64::MAX),
        Err(LogError::OffsetOutOfRange {
            log_start_offset: 8,
            ..
        })
    ));
    assert!(matches!(
        r.read_cached(0, 100, i64::MAX),
        Some(Err(LogError::OffsetOutOfRange { .. }))
    ));
    let f = r.read(8, usize::MAX, i64::MAX).unwrap();
    assert_eq!(
        concat(&f),
        [recent[0].1.clone(), recent[1].1.clone()].concat()
    );
    assert_eq!(r.offset_for_timestamp(0).unwrap(), Some((8, NOW)));
    // Nothing more expired: no change.
    assert_eq!(retain(&mut log, NOW + 500).unwrap().deleted_segments, 0);
    // The active segment expires: it is rolled and deleted, the log is empty at LEO 12.
    let rep = retain(&mut log, NOW + 5000).unwrap();
    assert_eq!(rep.deleted_segments, 1);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (12, 12));
    assert_eq!(log.size_bytes(), 0);
    assert!(r.read(12, 100, i64::MAX).unwrap().chunks.is_empty());
    assert_eq!(
        log.append(bm(&simple_batch(1, NOW, 1)), NOW)
            .unwrap()
            .base_offset,
        12
    );
    // Unlimited retention never deletes.
    log.set_config(LogConfig {
        retention_ms: -1,
        segment_bytes: 1,
        ..cfg()
    });
    log.append(bm(&simple_batch(1, 0, 1)), NOW).unwrap();
    assert_eq!(retain(&mut log, i64::MAX).unwrap().deleted_segments, 0);
}

#[test]
fn retention_by_size_keeps_at_least_retention_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 2,
        retention_bytes: (one * 3) as i64,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    fill(&mut log, 9, 2, NOW, 100); // 5 segments: 4 full + active with one batch
    assert_eq!(log.segment_count(), 5);
    assert_eq!(log.size_bytes(), 9 * one);
    let rep = retain(&mut log, NOW).unwrap();
    // 9 -> 7 -> 5 -> 3 (>= 3 each time), then 3 - 2 = 1 < 3 stops.
    assert_eq!(rep.deleted_segments, 3);
    assert_eq!(log.size_bytes(), 3 * one);
    assert_eq!(log.log_start_offset(), 12);
    assert!(matches!(
        log.reader().read(11, 1, i64::MAX),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.reader().read(12, 1, i64::MAX).unwrap().first_offset, 12);
}

#[test]
fn reopen_after_close_keeps_data_and_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 3,
        index_interval_bytes: 300,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config.clone(), NOW).unwrap();
    let stored = fill(&mut log, 10, 2, 1000, 100);
    let before = log.reader().read_disk(0, usize::MAX, i64::MAX).unwrap();
    let idx_before: Vec<Vec<u8>> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "index" || e == "timeindex")
        })
        .map(|p| fs::read(p).unwrap())
        .collect();
    let max_ts = log.reader().max_timestamp().unwrap();
    log.close().unwrap();

    let (mut log, rep) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    assert_eq!(
        rep,
        RecoveryReport {
            segments: 4,
            validated_segments: 4,
            truncated_bytes: 0,
            dropped_segments: 0,
            log_start_offset: 0,
            log_end_offset: 20
        }
    );
    let after = log.reader().read(0, usize::MAX, i64::MAX).unwrap();
    assert_eq!(concat(&after), concat(&before));
    assert_eq!(
        concat(&after),
        stored
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect::<Vec<u8>>()
    );
    let idx_after: Vec<Vec<u8>> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "index" || e == "timeindex")
        })
        .map(|p| fs::read(p).unwrap())
        .collect();
    // Closed segments gained their final time entry on roll; nothing was rewritten on open.
    assert_eq!(idx_before, idx_after);
    assert_eq!(log.reader().max_timestamp().unwrap(), max_ts);
    assert_eq!(
        log.reader().offset_for_timestamp(1031).unwrap(),
        Some((7, 1031))
    );
    assert_eq!(
        log.append(bm(&simple_batch(1, 0, 1)), NOW)
            .unwrap()
            .base_offset,
        20
    );
    let hs = log.recent_batch_headers(2).unwrap();
    // Last two segments: [18..20) one batch... segment bases 0, 6, 12, 18.
    assert_eq!(
        hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![12, 14, 16, 18, 20]
    );
    assert_eq!(log.recent_batch_headers(100).unwrap().len(), 11);
    log.delete().unwrap();
    assert!(!dir.path().exists());
}

/// Writes a log of `n` single-batch appends, closes it, returns (dir, stored batches).
fn closed_log(n: usize, config: &LogConfig) -> (tempfile::TempDir, Vec<(i64, Vec<u8>)>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), config.clone(), NOW).unwrap();
    let stored = fill(&mut log, n, 3, 1000, 40);
    log.close().unwrap();
    (dir, stored)
}

fn active_log_path(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

fn assert_prefix(
    dir: &Path,
    config: &LogConfig,
    stored: &[(i64, Vec<u8>)],
    keep: usize,
    truncated: u64,
) {
    let (mut log, rep) = PartitionLog::open(dir, config.clone(), NOW).unwrap();
    assert_eq!(rep.truncated_bytes, truncated);
    let leo = stored
        .get(keep)
        .map_or_else(|| stored.last().map_or(0, |(b, _)| b + 3), |(b, _)| *b);
    assert_eq!(rep.log_end_offset, leo);
    assert_eq!(log.log_end_offset(), leo);
    let f = log.reader().read(0, usize::MAX, i64::MAX).unwrap();
    let expect: Vec<u8> = stored[..keep].iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(concat(&f), expect);
    // The log is usable: the next append continues at the recovered end.
    assert_eq!(
        log.append(bm(&simple_batch(1, 0, 1)), NOW)
            .unwrap()
            .base_offset,
        leo
    );
    log.close().unwrap();
    let (_, rep) = PartitionLog::open(dir, config.clone(), NOW).unwrap();
    assert_eq!((rep.truncated_bytes, rep.log_end_offset), (0, leo + 1));
}

#[test]
fn recovery_truncates_random_bytes_appended() {
    let config = LogConfig {
        index_interval_bytes: 100,
        ..cfg()
    };
    let (dir, stored) = closed_log(6, &config);
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(active_log_path(dir.path()))
        .unwrap();
    let garbage: Vec<u8> = (0..1000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    f.write_all(&garbage).unwrap();
    drop(f);
    assert_prefix(dir.path(), &config, &stored, 6, 1000);
}

#[test]
fn recovery_truncates_last_batch_cut_midway() {
    let config = cfg();
    let (dir, stored) = closed_log(4, &config);
    let path = active_log_path(dir.path());
    let len = fs::metadata(&path).unwrap().len();
    let cut = stored[3].1.len() as u64 / 2;
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - cut)
        .unwrap();
    assert_prefix(
        dir.path(),
        &config,
        &stored,
        3,
        stored[3].1.len() as u64 - cut,
    );
}

#[test]
fn recovery_truncates_from_a_flipped_bit_in_the_last_or_an_earlier_batch() {
    let config = LogConfig {
        index_interval_bytes: 0,
        ..cfg()
    };
    for victim in [4usize, 1] {
        let (dir, stored) = closed_log(5, &config);
        let path = active_log_path(dir.path());
        let mut bytes = fs::read(&path).unwrap();
        let start: usize = stored[..victim].iter().map(|(_, b)| b.len()).sum();
        let mid = start + stored[victim].1.len() / 2 + 10;
        bytes[mid] ^= 0x10;
        fs::write(&path, &bytes).unwrap();
        let truncated = (bytes.len() - start) as u64;
        assert_prefix(dir.path(), &config, &stored, victim, truncated);
        // The rebuilt index has no entry at or beyond the truncation point.
        let idx = fs::read(dir.path().join("00000000000000000000.index")).unwrap();
        let entries = crate::index::decode_offsets(&idx).unwrap();
        // interval 0: one entry per batch, the kept ones plus the one appended after recovery.
        assert_eq!(entries.len(), victim + 1, "victim {victim}");
    }
}

#[test]
fn recovery_of_a_corrupt_length_or_magic_in_the_active_segment() {
    let config = cfg();
    let (dir, stored) = closed_log(3, &config);
    let path = active_log_path(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    let start = stored[0].1.len() + stored[1].1.len();
    bytes[start + 8..start + 12].copy_from_slice(&i32::MAX.to_be_bytes());
    fs::write(&path, &bytes).unwrap();
    assert_prefix(dir.path(), &config, &stored, 2, stored[2].1.len() as u64);

    let (dir, stored) = closed_log(3, &config);
    let path = active_log_path(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    bytes[stored[0].1.len() + 16] = 1;
    fs::write(&path, &bytes).unwrap();
    let t = (stored[1].1.len() + stored[2].1.len()) as u64;
    assert_prefix(dir.path(), &config, &stored, 1, t);
}

#[test]
fn missing_or_garbage_index_files_are_rebuilt() {
    let one = simple_batch(3, 0, 40).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 4,
        index_interval_bytes: 100,
        ..no_cache()
    };
    let (dir, stored) = closed_log(10, &config); // segments at 0, 12, 24
    let d = dir.path();
    let names = [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "00000000000000000012.index",
        "00000000000000000012.timeindex",
        "00000000000000000024.index",
        "00000000000000000024.timeindex",
    ];
    let originals: Vec<Vec<u8>> = names.iter().map(|n| fs::read(d.join(n)).unwrap()).collect();
    assert!(originals.iter().all(|o| !o.is_empty()));
    fs::remove_file(d.join(names[0])).unwrap();
    fs::write(d.join(names[1]), b"garbage!").unwrap();
    // Plausible-looking but wrong entries: positions not at batch starts.
    fs::write(
        d.join(names[2]),
        crate::index::encode_offsets(&[crate::index::OffsetEntry {
            rel_offset: 3,
            position: 7,
        }]),
    )
    .unwrap();
    fs::write(d.join(names[3]), [0xffu8; 24]).unwrap();
    fs::remove_file(d.join(names[4])).unwrap();
    fs::write(d.join(names[5]), [1u8; 12]).unwrap();
    let (log, rep) = PartitionLog::open(d, config, NOW).unwrap();
    assert_eq!(
        (rep.segments, rep.truncated_bytes, rep.log_end_offset),
        (3, 0, 30)
    );
    let rebuilt: Vec<Vec<u8>> = names.iter().map(|n| fs::read(d.join(n)).unwrap()).collect();
    assert_eq!(rebuilt, originals);
    let r = log.reader();
    for (i, (base, bytes)) in stored.iter().enumerate() {
        assert_eq!(
            concat(&r.read(*base + 1, 1, i64::MAX).unwrap()),
            *bytes,
            "batch {i}"
        );
    }
    assert_eq!(r.offset_for_timestamp(1052).unwrap(), Some((17, 1052)));
    assert_eq!(r.max_timestamp().unwrap(), Some((1092, 29)));
}

#[test]
fn failed_write_leaves_no_half_written_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 0,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config.clone(), NOW).unwrap();
    let stored = fill(&mut log, 2, 2, 1000, 50);
    let [log_path, idx_path, time_path] = log.active_for_test().paths();
    let lens = |p: &PathBuf| fs::metadata(p).unwrap().len();
    let before = (lens(&log_path), lens(&idx_path), lens(&time_path));
    log.active_for_test().fail_next_write = Some((30, std::io::ErrorKind::StorageFull));
    let b = simple_batch(2, 2000, 50);
    assert!(matches!(log.append(bm(&b), NOW), Err(LogError::Io(_))));
    assert!(log.offline_reason().is_none(), "a full disk is not a fault");
    assert_eq!((lens(&log_path), lens(&idx_path), lens(&time_path)), before);
    assert_eq!(log.log_end_offset(), 4);
    assert_eq!(log.reader().read(4, 100, i64::MAX).unwrap().bytes, 0);
    // The log stays usable and the retried batch gets the same offsets.
    let info = log.append(bm(&b), NOW).unwrap();
    assert_eq!((info.base_offset, info.last_offset), (4, 5));
    let expect: Vec<u8> = [stored[0].1.clone(), stored[1].1.clone(), patched(&b, 4)].concat();
    assert_eq!(
        concat(&log.reader().read_disk(0, usize::MAX, i64::MAX).unwrap()),
        expect
    );
    log.close().unwrap();
    let (mut log, rep) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    assert_eq!((rep.truncated_bytes, rep.log_end_offset), (0, 6));
    // Any other write error (EIO) leaves the log suspect: offline until reopened.
    log.active_for_test().fail_next_write = Some((10, std::io::ErrorKind::Other));
    assert!(matches!(log.append(bm(&b), NOW), Err(LogError::Io(_))));
    assert!(log.offline_reason().is_some());
    assert!(matches!(log.append(bm(&b), NOW), Err(LogError::Offline)));
}

#[test]
fn malformed_append_input_is_rejected_without_storing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    let good = simple_batch(1, 0, 5);
    for bad in [
        Vec::new(),
        vec![1, 2, 3],
        good[..good.len() - 1].to_vec(),
        vec![0u8; 200],
    ] {
        assert!(matches!(log.append(bm(&bad), NOW), Err(LogError::Batch(_))));
    }
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));
}

#[test]
fn open_ignores_foreign_files_and_never_panics_on_garbage_segments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("leader-epoch-checkpoint"), b"0\n").unwrap();
    fs::write(d.join("123.log"), b"not a segment name").unwrap();
    let mut x: u32 = 12345;
    let junk: Vec<u8> = (0..5000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    fs::write(d.join("00000000000000000000.log"), &junk[..2000]).unwrap();
    fs::write(d.join("00000000000000000000.index"), &junk[..800]).unwrap();
    fs::write(d.join("00000000000000000000.timeindex"), &junk[..1200]).unwrap();
    fs::write(d.join("00000000000000000050.log"), &junk[2000..]).unwrap();
    let (log, rep) = PartitionLog::open(d, cfg(), NOW).unwrap();
    // Nothing valid from the first byte on: the log ends there and the later segment goes.
    assert_eq!((rep.segments, rep.dropped_segments), (1, 1));
    assert_eq!(rep.truncated_bytes, 5000);
    assert_eq!((rep.log_start_offset, rep.log_end_offset), (0, 0));
    assert!(!d.join("00000000000000000050.log").exists());
    // Reading the garbage closed segment is an error, never a panic.
    let r = log.reader();
    for off in [0, 10, 49] {
        let _ = r.read(off, 1000, i64::MAX);
    }
    let _ = r.offset_for_timestamp(0);
    let _ = log.recent_batch_headers(5);
}

#[test]
fn concurrent_reader_sees_consistent_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 64).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 16,
        index_interval_bytes: 256,
        tail_cache_bytes: (one * 8) as usize,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let r = log.reader();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let t = std::thread::spawn(move || {
        let mut reads = 0u64;
        while !stop2.load(Ordering::Relaxed) || reads == 0 {
            let leo = r.log_end_offset();
            let f = r.read(0, usize::MAX, i64::MAX).unwrap();
            assert!(f.next_offset >= leo);
            let hs = validate_batches(&concat(&f), usize::MAX).unwrap_or_default();
            assert_eq!(hs.len() as i64 * 2, f.next_offset);
            for (i, h) in hs.iter().enumerate() {
                assert_eq!(h.base_offset, 2 * i as i64);
            }
            reads += 1;
        }
        reads
    });
    fill(&mut log, 200, 2, 1000, 64);
    stop.store(true, Ordering::Relaxed);
    assert!(t.join().unwrap() > 0);
}

#[test]
fn extreme_offsets_in_stored_batches_do_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut b = simple_batch(6, 1000, 10);
    patch_base_offset(&mut b, i64::MAX - 2);
    fs::write(d.join("00000000000000000000.log"), &b).unwrap();
    fs::write(d.join("00000000000000000050.log"), &b).unwrap();
    let (log, rep) = PartitionLog::open(d, cfg(), NOW).unwrap();
    // Offsets beyond the next segment's base (and the relative range): the log ends at 0.
    assert_eq!(
        (
            rep.truncated_bytes,
            rep.log_end_offset,
            rep.dropped_segments
        ),
        (2 * b.len() as u64, 0, 1)
    );
    let r = log.reader();
    let _ = r.read(0, 1000, i64::MAX);
    let _ = r.offset_for_timestamp(0);
    let _ = r.max_timestamp();
    assert_eq!(log.recent_batch_headers(2).unwrap().len(), 0);
    drop(log);
    // The same batch in a lone segment: its offsets lie outside the 32-bit relative range.
    let d2 = tempfile::tempdir().unwrap();
    fs::write(d2.path().join("00000000000000000000.log"), &b).unwrap();
    let (_, rep) = PartitionLog::open(d2.path(), cfg(), NOW).unwrap();
    assert_eq!(
        (rep.truncated_bytes, rep.log_end_offset),
        (b.len() as u64, 0)
    );
}

#[test]
fn handles_are_send_and_sync() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<PartitionLog>();
    sync::<LogReader>();
    sync::<FetchData>();
}

#[test]
fn two_phase_flush_covers_only_appends_before_the_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    log.flush().unwrap(); // the new segment's directory entry
    assert!(log.begin_flush().unwrap().is_none(), "nothing to flush yet");
    fill(&mut log, 3, 2, 1000, 10);
    let ticket = log.begin_flush().unwrap().expect("6 records to flush");
    assert_eq!(ticket.messages(), 6);
    // Appends go on while the ticket syncs without the lock.
    fill(&mut log, 1, 4, 2000, 10);
    ticket.sync().unwrap();
    log.finish_flush(&ticket, true);
    assert_eq!(log.unflushed_messages(), 4);
    assert_eq!(
        log.recovery_point(),
        6,
        "the first ticket covered offsets 0..6"
    );
    let ticket = log.begin_flush().unwrap().expect("4 records to flush");
    ticket.sync().unwrap();
    log.finish_flush(&ticket, true);
    assert_eq!(log.unflushed_messages(), 0);
    assert_eq!(log.recovery_point(), 10);
    assert!(log.begin_flush().unwrap().is_none());
}

#[test]
fn under_steady_appends_a_flush_syncs_only_the_indexes_written_since_the_last_one() {
    // The broker's flushes overlap appends: something is always written while a ticket syncs.
    // An index written before the last finished flush is not synced again (issue 58: it was,
    // three fdatasyncs per flush instead of one, for as long as appends kept coming).
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    log.flush().unwrap();
    // 5 KiB of batches: past index.interval.bytes, so offset and time index entries.
    fill(&mut log, 6, 1, 1000, 1000);
    let first = log.begin_flush().unwrap().expect("records to flush");
    assert_eq!(
        first.syncs(),
        4,
        "the log and both indexes were written, and the indexes' directory entries made"
    );
    fill(&mut log, 1, 1, 3000, 10); // during the sync: the log only
    first.sync().unwrap();
    log.finish_flush(&first, true);
    let second = log.begin_flush().unwrap().expect("one record to flush");
    assert_eq!(
        second.syncs(),
        1,
        "only the log was written since the first flush"
    );
    // A ticket begun while another syncs still syncs what the other covers.
    let (a, b) = {
        fill(&mut log, 6, 1, 4000, 1000);
        let a = log.begin_flush().unwrap().unwrap();
        fill(&mut log, 1, 1, 5000, 10);
        (a, log.begin_flush().unwrap().unwrap())
    };
    assert_eq!((a.syncs(), b.syncs()), (3, 3));
    b.sync().unwrap();
    log.finish_flush(&b, true);
    a.sync().unwrap();
    log.finish_flush(&a, true);
    second.sync().unwrap();
    log.finish_flush(&second, true);
    assert!(log.begin_flush().unwrap().is_none(), "everything synced");
    assert_eq!(log.recovery_point(), log.log_end_offset());
}

#[test]
fn a_log_created_in_an_empty_directory_works_as_one_opened_there() {
    // The broker's CreateTopics path: the directory was just made; nothing is read or removed.
    let dir = tempfile::tempdir().unwrap();
    let mut log =
        PartitionLog::create_in_empty(&crate::LogDir::os(dir.path()), cfg(), NOW).unwrap();
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["00000000000000000000.log"], "one file made");
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    let stored = fill(&mut log, 8, 2, 1000, 600);
    log.set_leader_epoch(3).unwrap();
    log.append(bm(&simple_batch(1, 9000, 10)), NOW).unwrap();
    let ticket = log.begin_flush().unwrap().expect("records to flush");
    assert_eq!(ticket.syncs(), 4, "log, both indexes and the new directory");
    ticket.sync().unwrap();
    log.finish_flush(&ticket, true);
    let end = log.log_end_offset();
    drop(log);
    let (log, rep) = PartitionLog::open_from(dir.path(), cfg(), NOW, end).unwrap();
    assert_eq!((rep.validated_segments, rep.log_end_offset), (0, 17));
    let r = log.reader();
    for (base, bytes) in &stored {
        assert_eq!(&concat(&r.read(*base, 1, i64::MAX).unwrap()), bytes);
    }
    assert_eq!(log.epochs().entries().last().map(|e| e.epoch), Some(3));
}

#[test]
fn a_failed_fsync_takes_the_log_offline_and_is_never_retried() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    let acked = fill(&mut log, 2, 2, 1000, 10);
    log.flush().unwrap();
    fill(&mut log, 1, 2, 2000, 10);
    let reader = log.reader();
    let ticket = log.begin_flush().unwrap().expect("2 records to flush");
    log.finish_flush(&ticket, false);
    // fsyncgate: no second fsync may "succeed" without the pages the kernel dropped.
    assert!(log.offline_reason().is_some());
    assert!(reader.is_offline());
    assert!(matches!(log.begin_flush(), Err(LogError::Offline)));
    assert!(matches!(log.flush(), Err(LogError::Offline)));
    assert!(matches!(
        log.append(bm(&simple_batch(1, 3000, 1)), NOW),
        Err(LogError::Offline)
    ));
    assert!(matches!(
        reader.read(0, 1 << 20, i64::MAX),
        Err(LogError::Offline)
    ));
    assert_eq!(log.recovery_point(), 4);
    drop(log);
    // Reopening recovers from disk: everything synced is there.
    let (log, _) = PartitionLog::open_from(dir.path(), cfg(), NOW, 4).unwrap();
    assert!(log.offline_reason().is_none());
    let f = log.reader().read(0, 1 << 20, 4).unwrap();
    assert_eq!(
        concat(&f),
        acked
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect::<Vec<u8>>()
    );
}

#[test]
fn leader_epochs_follower_appends_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 50).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 3,
        index_interval_bytes: 0,
        ..cfg()
    };
    let (mut leader, _) =
        PartitionLog::open(dir.path().join("l").as_path(), config.clone(), NOW).unwrap();
    // Epoch 1 writes offsets 0..8, epoch 3 writes 8..14: every stored batch carries its epoch.
    leader.set_leader_epoch(1).unwrap();
    let first = fill(&mut leader, 4, 2, 1000, 50);
    leader.set_leader_epoch(3).unwrap();
    fill(&mut leader, 3, 2, 2000, 50);
    let all = leader.reader().read(0, usize::MAX, i64::MAX).unwrap();
    let hs = validate_batches(&concat(&all), usize::MAX).unwrap();
    assert_eq!(
        hs.iter()
            .map(|h| h.partition_leader_epoch)
            .collect::<Vec<_>>(),
        vec![1, 1, 1, 1, 3, 3, 3]
    );
    assert!(
        crate::batch::crc_ok(&concat(&all)[..hs[0].total_size()]),
        "epoch patch keeps the CRC"
    );
    assert_eq!(leader.latest_epoch(), 3);
    assert_eq!(leader.end_offset_for_epoch(1), (1, 8));
    assert_eq!(leader.end_offset_for_epoch(2), (1, 8));
    assert_eq!(leader.end_offset_for_epoch(3), (3, 14));
    assert_eq!(leader.end_offset_for_epoch(4), (-1, -1));
    // A new leader epoch starts at the log end at once, before anything is appended in it:
    // a follower still holding epoch 3 learns where it ends.
    leader.set_leader_epoch(5).unwrap();
    assert_eq!(leader.latest_epoch(), 5);
    assert_eq!(leader.end_offset_for_epoch(3), (3, 14));
    assert_eq!(leader.end_offset_for_epoch(4), (3, 14));
    assert_eq!(leader.end_offset_for_epoch(5), (5, 14));

    // A follower appends the leader's batches as they are, with their offsets and epochs.
    let (mut follower, _) =
        PartitionLog::open(dir.path().join("f").as_path(), config.clone(), NOW).unwrap();
    let info = follower
        .append_replicated(BytesMut::from(&concat(&all)[..]), NOW)
        .unwrap();
    assert_eq!((info.base_offset, info.last_offset), (0, 13));
    assert_eq!(follower.end_offset_for_epoch(1), (1, 8));
    assert_eq!(
        concat(&follower.reader().read(0, usize::MAX, i64::MAX).unwrap()),
        concat(&all),
        "byte-identical replica"
    );
    // Below the log end is refused, nothing stored.
    assert!(matches!(
        follower.append_replicated(BytesMut::from(&first[0].1[..]), NOW),
        Err(LogError::Batch(_))
    ));

    // Truncation to offset 9 (inside the batch 8..10): that batch and everything after go.
    let removed = follower.truncate_to(9).unwrap();
    removed.delete_files().unwrap();
    assert_eq!(follower.log_end_offset(), 8);
    assert_eq!(
        follower.latest_epoch(),
        1,
        "epoch 3 started at 8: gone with the truncation"
    );
    assert_eq!(follower.end_offset_for_epoch(1), (1, 8));
    assert!(follower
        .reader()
        .read_cached(8, 100, i64::MAX)
        .unwrap()
        .unwrap()
        .chunks
        .is_empty());
    let kept = concat(&follower.reader().read(0, usize::MAX, i64::MAX).unwrap());
    let first_bytes: usize = first.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(
        kept,
        concat(&all)[..first_bytes],
        "the first four batches, as stored"
    );
    // Appends continue at the truncation point; a reopen sees the same log and epochs.
    follower.set_leader_epoch(4).unwrap();
    assert_eq!(
        follower
            .append(bm(&simple_batch(1, 3000, 5)), NOW)
            .unwrap()
            .base_offset,
        8
    );
    assert_eq!(follower.end_offset_for_epoch(1), (1, 8));
    assert_eq!(follower.end_offset_for_epoch(4), (4, 9));
    follower.close().unwrap();
    let (reopened, rep) = PartitionLog::open(dir.path().join("f").as_path(), config, NOW).unwrap();
    assert_eq!((rep.truncated_bytes, rep.log_end_offset), (0, 9));
    assert_eq!(reopened.end_offset_for_epoch(1), (1, 8));
    assert_eq!(reopened.latest_epoch(), 4);
}

#[test]
fn advance_log_start_hides_records_inside_a_segment_and_removes_whole_segments() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 2,
        retention_ms: 1000,
        ..cfg()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    // Segments [0..4), [4..8), active [8..12); batches of 2 records.
    fill(&mut log, 6, 2, NOW, 100);
    assert_eq!(log.segment_count(), 3);
    let r = log.reader();
    // Inside the first segment: nothing removed, offsets 0..3 unreadable, 3 readable (its
    // batch [2, 3] is served whole, as Kafka does).
    let removed = log.advance_log_start(3).unwrap();
    assert!(removed.is_empty());
    assert_eq!(r.log_start_offset(), 3);
    assert!(matches!(
        r.read(2, 100, i64::MAX),
        Err(LogError::OffsetOutOfRange {
            log_start_offset: 3,
            ..
        })
    ));
    assert!(matches!(
        r.read_cached(0, 100, i64::MAX),
        Some(Err(LogError::OffsetOutOfRange { .. }))
    ));
    assert_eq!(r.read(3, 1, i64::MAX).unwrap().first_offset, 2);
    // Backwards is a no-op.
    assert!(log.advance_log_start(1).unwrap().is_empty());
    assert_eq!(log.log_start_offset(), 3);
    // Past the first segment: it goes, the start stays inside the second one.
    let removed = log.advance_log_start(5).unwrap();
    assert_eq!(removed.len(), 1);
    removed.delete_files().unwrap();
    assert!(!dir.path().join("00000000000000000000.log").exists());
    assert_eq!(log.log_start_offset(), 5);
    // Retention removing the second segment later never moves the start backwards.
    let rep = retain(&mut log, NOW + 100_000).unwrap();
    assert!(rep.log_start_offset >= 5, "{rep:?}");
    // Past the log end: clamped to it; the log is empty and appends go on from there.
    let leo = log.log_end_offset();
    log.advance_log_start(leo + 100)
        .unwrap()
        .delete_files()
        .unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (leo, leo));
    assert!(r.read(leo, 100, i64::MAX).unwrap().chunks.is_empty());
    assert_eq!(
        log.append(bm(&simple_batch(1, NOW, 1)), NOW)
            .unwrap()
            .base_offset,
        leo
    );
}

#[test]
fn writeback_plans_cover_each_whole_page_once_and_never_the_tail_page() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), cfg(), NOW).unwrap();
    let path = dir.path().join("00000000000000000000.log");
    let size = || std::fs::metadata(&path).unwrap().len();
    assert!(
        log.plan_writeback().is_none(),
        "an empty log has no whole page"
    );
    // Under one page: nothing yet.
    log.append(bm(&simple_batch(1, NOW, 100)), NOW).unwrap();
    assert!(size() < 4096);
    assert!(log.plan_writeback().is_none());
    // Past two pages: the whole pages from 0, the partial one left out.
    log.append(bm(&simple_batch(1, NOW, 9000)), NOW).unwrap();
    let end = size();
    let wb = log.plan_writeback().expect("whole pages written");
    assert_eq!(wb.range(), (0, end / 4096 * 4096));
    assert!(wb.range().0 + wb.range().1 <= end);
    assert_eq!(wb.file().unwrap().metadata().unwrap().len(), end);
    assert!(log.plan_writeback().is_none(), "each page is planned once");
    // More: the next range starts where the last one ended.
    log.append(bm(&simple_batch(1, NOW, 5000)), NOW).unwrap();
    let end2 = size();
    let wb2 = log.plan_writeback().expect("more whole pages");
    assert_eq!(
        wb2.range(),
        (end / 4096 * 4096, end2 / 4096 * 4096 - end / 4096 * 4096)
    );
    // Cut back below the planned point: planning starts again from the new end.
    log.truncate_to(1).unwrap().delete_files().unwrap();
    assert!(size() < 4096);
    assert!(log.plan_writeback().is_none());
    log.append(bm(&simple_batch(1, NOW, 9000)), NOW).unwrap();
    let wb3 = log
        .plan_writeback()
        .expect("whole pages after the truncation");
    assert_eq!(wb3.range().0, 0);
    // With a floor: nothing until that many bytes of whole pages are new, then all of them.
    let start = wb3.range().0 + wb3.range().1;
    log.append(bm(&simple_batch(1, NOW, 9000)), NOW).unwrap();
    assert!(log.plan_writeback_at_least(64 * 1024).is_none());
    for _ in 0..8 {
        log.append(bm(&simple_batch(1, NOW, 9000)), NOW).unwrap();
    }
    let wb4 = log
        .plan_writeback_at_least(64 * 1024)
        .expect("64 KiB of whole pages");
    assert_eq!(wb4.range().0, start, "from where the last range ended");
    assert!(wb4.range().1 >= 64 * 1024);
}

#[test]
fn tiered_local_retention_deletes_only_copied_segments_and_closed_segments_export() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 2,
        index_interval_bytes: 1,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 9, 2, NOW, 100); // segments at 0, 4, 8, 12 closed; 16 active
    let closed = log.reader().closed_segments(0, i64::MAX);
    assert_eq!(
        closed
            .iter()
            .map(|s| (s.base_offset, s.last_offset))
            .collect::<Vec<_>>(),
        vec![(0, 3), (4, 7), (8, 11), (12, 15)]
    );
    // Only segments wholly below the bound, from the one holding `from` on.
    assert_eq!(log.reader().closed_segments(4, 12).len(), 2);
    let reaching: Vec<i64> = log
        .reader()
        .closed_segments(5, 12)
        .iter()
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(
        reaching,
        [4, 8],
        "the segment holding `from` starts below it"
    );
    // A closed segment's bytes are the stored batches; its indexes parse back and point each
    // offset at its batch.
    let s = &closed[1];
    let bytes = s.read_log(0, usize::MAX).unwrap();
    assert_eq!(bytes, [stored[2].1.clone(), stored[3].1.clone()].concat());
    assert_eq!(s.leader_epochs().unwrap().len(), 1);
    let idx = RemoteIndexes::parse(&s.indexes(&s.leader_epochs().unwrap(), b"")).unwrap();
    assert_eq!(idx.position_for(4, 4), 0);
    assert_eq!(idx.position_for(4, 7), one);
    assert!(RemoteIndexes::parse(b"not an index").is_none());

    // Local retention of 1 byte, but only segments copied up to offset 7 may go.
    let (rep, removed) = log.enforce_local_retention(NOW, -1, 1, 7, &[]).unwrap();
    removed.delete_files().unwrap();
    assert_eq!(rep.deleted_segments, 2);
    assert_eq!(log.log_start_offset(), 8);
    // Nothing more until more is copied; the active segment never goes.
    let (rep, _) = log.enforce_local_retention(NOW, -1, 1, 9, &[]).unwrap();
    assert_eq!(rep.deleted_segments, 0);
    let (rep, removed) = log.enforce_local_retention(NOW, -1, 1, 100, &[]).unwrap();
    removed.delete_files().unwrap();
    assert_eq!((rep.deleted_segments, log.log_start_offset()), (2, 16));
}

#[test]
fn tiered_local_retention_keeps_the_epochs_of_the_removed_segments() {
    // Issue 57 (found by the simulator): epoch 2 began at offset 8; local retention removed
    // everything up to 11. Cut to the local log start, the cache answered "epoch 1 ends at 12"
    // and a former leader with its own records 8..11 of epoch 1 kept them.
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 100).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 2,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    log.set_leader_epoch(1).unwrap();
    fill(&mut log, 4, 2, NOW, 100); // offsets 0..8, epoch 1
    log.set_leader_epoch(2).unwrap();
    fill(&mut log, 6, 2, NOW, 100); // offsets 8..20, epoch 2; segments at 0, 4, 8, 12, 16
    assert_eq!(log.end_offset_for_epoch(1), (1, 8));
    // Copies of another lineage (epoch 1 up to offset 11: a leader whose records 8..11 this
    // log does not have) cover only what agrees with this log: offsets up to 7.
    let (rep, removed) = log
        .enforce_local_retention(NOW, -1, 1, 11, &[(1, 0)])
        .unwrap();
    removed.delete_files().unwrap();
    assert_eq!((rep.deleted_segments, log.log_start_offset()), (2, 8));
    let (rep, removed) = log
        .enforce_local_retention(NOW, -1, 1, 11, &[(1, 0), (2, 8)])
        .unwrap();
    removed.delete_files().unwrap();
    assert_eq!((rep.deleted_segments, log.log_start_offset()), (1, 12));
    assert_eq!(log.end_offset_for_epoch(1), (1, 8), "where epoch 1 ended");
    // Classic retention (the whole log's start moves) still cuts the cache, as Kafka's.
    let (_, removed) = log.advance_log_start(14).map(|r| ((), r)).unwrap();
    removed.delete_files().unwrap();
    assert_eq!(log.end_offset_for_epoch(1).1, 14);
}

/// Simulator seed 29819 (issue 57): a replica that started again above the copies and then led
/// answered OffsetsForLeaderEpoch(0) with its new start (76) instead of where epoch 0 ended (37),
/// so a stale follower kept its own records 37..75. Started again with the copies' lineage, the
/// log answers as the whole log's leader would, also after a reopen.
#[test]
fn a_log_started_again_keeps_the_lineage_below_its_new_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let (mut log, _) = PartitionLog::open(path.as_path(), cfg(), NOW).unwrap();
    log.set_leader_epoch(1).unwrap();
    fill(&mut log, 3, 2, 1000, 50);
    // (3, 30) would not follow (2, 37): skipped, as from copies that overlap.
    let lineage = [(0, 0), (2, 37), (3, 30), (4, 60), (7, 80)];
    log.truncate_fully_and_start_at(76, NOW, None, &lineage)
        .unwrap()
        .delete_files()
        .unwrap();
    assert_eq!(log.end_offset_for_epoch(0), (0, 37), "where epoch 0 ended");
    assert_eq!(
        log.end_offset_for_epoch(1),
        (0, 37),
        "epoch 1 was never written"
    );
    assert_eq!(log.end_offset_for_epoch(2), (2, 60));
    assert_eq!(
        log.latest_epoch(),
        4,
        "entries at or above the start are not taken"
    );
    log.set_leader_epoch(5).unwrap();
    fill(&mut log, 2, 2, 1000, 50);
    assert_eq!(
        log.end_offset_for_epoch(4),
        (4, 76),
        "epoch 4 ends at the start"
    );
    log.flush().unwrap();
    drop(log);
    let (reopened, _) = PartitionLog::open(path.as_path(), cfg(), NOW).unwrap();
    assert_eq!(reopened.end_offset_for_epoch(0), (0, 37));
    assert_eq!(reopened.end_offset_for_epoch(4), (4, 76));
}

#[test]
fn a_follower_log_starts_again_at_an_offset_of_the_leaders_local_tail() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 50).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 3,
        index_interval_bytes: 0,
        ..cfg()
    };
    // The leader: epoch 1 writes offsets 0..20 (segments based 0, 6, 12, 18).
    let (mut leader, _) =
        PartitionLog::open(dir.path().join("l").as_path(), config.clone(), NOW).unwrap();
    leader.set_leader_epoch(1).unwrap();
    fill(&mut leader, 10, 2, 1000, 50);
    let all = leader.reader().read(0, usize::MAX, i64::MAX).unwrap();
    let batches = validate_batches(&concat(&all), usize::MAX).unwrap();
    let bytes = concat(&all);
    let from = |offset: i64| -> Vec<u8> {
        let mut pos = 0;
        for h in &batches {
            if h.base_offset >= offset {
                return bytes[pos..].to_vec();
            }
            pos += h.total_size();
        }
        Vec::new()
    };

    // A stale follower holds 0..8 (segments 0 and 6); the leader's local tail starts at 12.
    let fdir = dir.path().join("f");
    let (mut follower, _) = PartitionLog::open(fdir.as_path(), config.clone(), NOW).unwrap();
    let stale = from(0)[..batches[..4].iter().map(|h| h.total_size()).sum::<usize>()].to_vec();
    follower
        .append_replicated(BytesMut::from(&stale[..]), NOW)
        .unwrap();
    assert_eq!(follower.log_end_offset(), 8);
    follower
        .truncate_fully_and_start_at(12, NOW, None, &[])
        .unwrap()
        .delete_files()
        .unwrap();
    assert_eq!(
        (follower.log_start_offset(), follower.log_end_offset()),
        (12, 12)
    );
    assert_eq!(
        follower.latest_epoch(),
        -1,
        "no epochs: its next fetch claims none"
    );
    assert_eq!(follower.producer_count(), 0);
    follower
        .append_replicated(BytesMut::from(&from(12)[..]), NOW)
        .unwrap();
    assert_eq!(follower.log_end_offset(), 20);
    assert_eq!(follower.end_offset_for_epoch(1), (1, 20));
    assert_eq!(
        concat(&follower.reader().read(12, usize::MAX, i64::MAX).unwrap()),
        from(12),
        "byte-identical from the new start"
    );
    assert!(matches!(
        follower.reader().read(8, 100, i64::MAX),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // Again at the base of its own segment (12): that segment's name is reused.
    assert_eq!(follower.segment_count(), 1);
    follower
        .truncate_fully_and_start_at(12, NOW, None, &[])
        .unwrap()
        .delete_files()
        .unwrap();
    follower
        .append_replicated(BytesMut::from(&from(18)[..]), NOW)
        .unwrap();
    follower.flush().unwrap();
    drop(follower);
    // Reopened: the same log, from 12 (the records from 18).
    let (reopened, _) = PartitionLog::open(fdir.as_path(), config, NOW).unwrap();
    assert_eq!(
        (reopened.log_start_offset(), reopened.log_end_offset()),
        (12, 20)
    );
    assert_eq!(
        concat(&reopened.reader().read(12, usize::MAX, i64::MAX).unwrap()),
        from(18)
    );
}

#[test]
fn a_full_index_rolls_the_segment_as_segment_index_bytes_says() {
    // An index entry for every batch; room for 3 offset entries (24 / 8) and 2 time entries
    // (24 / 12): the time index fills first, so a segment holds 2 batches, as Kafka's
    // `LogSegment.shouldRoll` (`timeIndex.isFull()`) would give.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 0,
        segment_index_bytes: 24,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    let stored = fill(&mut log, 10, 2, 1000, 10);
    let bases: Vec<i64> = log.segments.iter().map(|s| s.base_offset()).collect();
    assert_eq!(bases, vec![0, 4, 8, 12, 16], "{bases:?}");
    let f = log.reader().read(0, usize::MAX, i64::MAX).unwrap();
    let all: Vec<u8> = stored.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(concat(&f), all);

    // The default (10 MiB) leaves the same batches in one segment.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 0,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    fill(&mut log, 10, 2, 1000, 10);
    assert_eq!(log.segments.len(), 1);
}

/// A zero-copy read ([`DiskRead::run_unread`]) names exactly the bytes a copying read
/// ([`DiskRead::run`]) returns, with the same first and next offsets, for every start offset,
/// byte limit and high watermark, across segments, batches of very different sizes and a sparse
/// offset index it jumps by.
#[test]
fn a_zero_copy_read_names_the_bytes_a_copying_read_returns() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 700,
        segment_bytes: 9_000,
        ..no_cache()
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    for i in 0..60usize {
        // 1-7 records of 20-1,020 bytes: batches of ~100 B to ~7 KiB.
        let b = simple_batch(1 + i % 7, NOW + i as i64, 20 + (i * 337) % 1000);
        log.append(bm(&b), NOW).unwrap();
    }
    assert!(log.segments.len() >= 5, "{} segments", log.segments.len());
    let leo = log.log_end_offset();
    let r = log.reader();
    let mut jumped = 0;
    for offset in (0..leo).step_by(3) {
        for max_bytes in [1usize, 500, 2_000, 6_000, 20_000, 1 << 20] {
            for max_offset in [offset + 1, offset + 9, leo - 5, leo] {
                let copied = r
                    .plan_disk_read(offset, max_bytes, max_offset)
                    .unwrap()
                    .run()
                    .unwrap();
                let plan = r.plan_file_read(offset, max_bytes, max_offset).unwrap();
                jumped += usize::from(plan.marks.iter().any(|m| !m.is_empty()));
                let sliced = plan.run_unread(|_, _, _| None).unwrap();
                let what = format!("offset {offset} max_bytes {max_bytes} max_offset {max_offset}");
                assert_eq!(sliced.bytes, copied.bytes, "{what}");
                assert_eq!(sliced.first_offset, copied.first_offset, "{what}");
                assert_eq!(sliced.next_offset, copied.next_offset, "{what}");
                let mut got = Vec::new();
                for s in &sliced.slices {
                    let mut buf = vec![0u8; s.len()];
                    s.read_at(&mut buf, 0).unwrap();
                    got.extend_from_slice(&buf);
                }
                assert_eq!(got, concat(&copied), "{what}");
            }
        }
    }
    assert!(jumped > 100, "the offset index was used {jumped} times");
}

/// `preallocate` (issue 58, goal 6): a new segment's `.log` is `segment.bytes` long at once;
/// the zeros after the log end are cut at a roll and at the last flush before a stop, and a
/// crash that leaves them is recovered like a torn tail; every record reads back at its offset.
#[test]
fn preallocated_segments_are_cut_at_roll_and_shutdown_and_recover_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let one = simple_batch(2, 0, 200).len() as u64;
    let config = LogConfig {
        segment_bytes: one * 4,
        // An index entry per batch: a clean restart trusts a segment with its index files.
        index_interval_bytes: 256,
        preallocate: true,
        ..no_cache()
    };
    let file_len = |base: i64| {
        fs::metadata(dir.path().join(format!("{base:020}.log")))
            .unwrap()
            .len()
    };
    let read_back =
        |log: &PartitionLog| concat(&log.reader().read_disk(0, usize::MAX, i64::MAX).unwrap());
    let (mut log, _) = PartitionLog::open(dir.path(), config.clone(), NOW).unwrap();
    assert_eq!(file_len(0), one * 4, "made segment.bytes long at creation");
    let written = fill(&mut log, 6, 2, 1000, 200);
    let expect: Vec<u8> = written.iter().flat_map(|(_, b)| b.clone()).collect();
    // Four batches filled the first segment; the fifth rolled it.
    assert_eq!(log.segment_count(), 2);
    assert_eq!(
        file_len(0),
        one * 4,
        "the rolled segment holds exactly its batches"
    );
    assert_eq!(
        file_len(8),
        one * 4,
        "the new active segment is preallocated"
    );
    assert_eq!(log.size_bytes(), one * 6);
    assert_eq!(read_back(&log), expect);

    // A crash (no cut, nothing flushed) leaves the zeros: recovery cuts them and keeps all.
    log.flush().unwrap();
    drop(log);
    let (mut log, rep) = PartitionLog::open(dir.path(), config.clone(), NOW).unwrap();
    assert_eq!((rep.log_end_offset, rep.validated_segments), (12, 2));
    assert_eq!(file_len(8), one * 2);
    assert_eq!(read_back(&log), expect);

    // The recovery point at the log end but the zeros still there (a flush without the cut):
    // the segment fails the clean-restart check and is validated instead.
    log.roll_segment(NOW).unwrap();
    log.append(bm(&simple_batch(2, 2000, 200)), NOW).unwrap();
    log.flush().unwrap();
    assert_eq!(file_len(12), one * 4);
    let rp = log.recovery_point();
    drop(log);
    let (mut log, rep) = PartitionLog::open_from(dir.path(), config.clone(), NOW, rp).unwrap();
    assert_eq!((rep.log_end_offset, rep.validated_segments), (14, 1));
    assert_eq!(file_len(12), one);

    // A clean stop cuts the preallocated active segment: the restart validates nothing.
    // (Two batches: the first index entry comes with the second.)
    log.roll_segment(NOW).unwrap();
    log.append(bm(&simple_batch(2, 3000, 200)), NOW).unwrap();
    log.append(bm(&simple_batch(2, 3010, 200)), NOW).unwrap();
    assert_eq!(file_len(14), one * 4);
    log.flush_for_shutdown().unwrap();
    assert_eq!(file_len(14), one * 2);
    let rp = log.recovery_point();
    let before = read_back(&log);
    drop(log);
    let (log, rep) = PartitionLog::open_from(dir.path(), config, NOW, rp).unwrap();
    assert_eq!((rep.log_end_offset, rep.validated_segments), (18, 0));
    assert_eq!(read_back(&log), before);
    assert_eq!(&before[..expect.len()], &expect[..]);
}
