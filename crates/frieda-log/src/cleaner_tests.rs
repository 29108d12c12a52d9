//! Tests of the log cleaner: latest value per key, offsets kept, tombstones and their horizon,
//! empty batches, compressed batches, when a log is cleanable, and crash safety of the swap.

use super::*;
use crate::batch::testutil::{encode_batch, Rec};
use crate::partition::PartitionLog;
use bytes::BytesMut;
use std::collections::BTreeMap;
use std::fs;

const NOW: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

/// A compacted log rolling every `segment_bytes`.
fn compacted(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        cleanup_compact: true,
        cleanup_delete: false,
        tail_cache_bytes: 1 << 20,
        ..LogConfig::default()
    }
}

fn keyed(key: &str, value: Option<&str>, ts: i64) -> Rec {
    Rec {
        ts,
        key: Some(key.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        headers: vec![],
    }
}

/// One record per batch.
fn put(log: &mut PartitionLog, rec: Rec) -> i64 {
    let b = encode_batch(&[rec], 0);
    log.append(BytesMut::from(&b[..]), NOW).unwrap().base_offset
}

/// A stored record: offset, key, value.
type Stored = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record of the log, read from the log start.
fn records(log: &PartitionLog) -> Vec<Stored> {
    let mut out = Vec::new();
    for bytes in log.reader().read_batches().unwrap() {
        let h = BatchHeader::parse(&bytes).unwrap();
        assert!(
            crate::batch::crc_ok(&bytes),
            "every stored batch has a valid CRC"
        );
        let section = records_section(&bytes, &h).unwrap();
        for r in parse_records(&section, h.records_count).unwrap() {
            out.push((
                h.base_offset + i64::from(r.offset_delta),
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
            ));
        }
    }
    out
}

/// Runs one whole pass as the broker does; returns the stats and the map end, or `None` when the
/// log was not cleanable.
fn clean_once(
    log: &mut PartitionLog,
    checkpoint: i64,
    horizon: i64,
    now: i64,
    producers: &HashMap<i64, i64>,
) -> Option<CleanedLog> {
    let candidate = log.cleaning_candidate(checkpoint, horizon, now)?;
    let mut throttle = Throttle::new(f64::INFINITY);
    let never = || false;
    let mut ctx = CleanContext {
        now_ms: now,
        max_map_entries: 1 << 20,
        active_producers: producers,
        throttle: &mut throttle,
        cancelled: &never,
    };
    let cleaned = candidate.clean(&mut ctx).unwrap();
    let stats = cleaned.stats;
    let map_end = cleaned.map_end;
    let horizon = cleaned.latest_delete_horizon;
    let swap = log.install_cleaned(cleaned);
    assert!(swap.installed());
    swap.finish().unwrap();
    Some(CleanedLog {
        groups: Vec::new(),
        map_end,
        latest_delete_horizon: horizon,
        stats,
    })
}

/// The latest value of each key in `(offset, key, value)` order of the last write.
fn latest(written: &[(i64, String, Option<String>)]) -> BTreeMap<i64, (String, Option<String>)> {
    let mut by_key: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
    for (o, k, v) in written {
        by_key.insert(k.clone(), (*o, v.clone()));
    }
    by_key.into_iter().map(|(k, (o, v))| (o, (k, v))).collect()
}

#[test]
fn keeps_exactly_the_latest_value_of_each_key_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(2048), NOW).unwrap();
    let mut written = Vec::new();
    for version in 0..10 {
        for k in 0..30 {
            let key = format!("key-{k}");
            let value = format!("v{version}-of-{k}");
            let o = put(&mut log, keyed(&key, Some(&value), NOW + version));
            written.push((o, key, Some(value)));
        }
    }
    let log_bytes = |dir: &Path| -> u64 {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let before_bytes = log_bytes(dir.path());
    let leo = log.log_end_offset();
    let pass = clean_once(&mut log, -1, -1, NOW, &HashMap::new()).expect("all dirty");
    assert!(pass.stats.records_removed > 200, "{:?}", pass.stats);
    assert_eq!(
        log.log_end_offset(),
        leo,
        "cleaning never changes the log end"
    );
    assert_eq!(log.log_start_offset(), 0);
    let after_bytes = log_bytes(dir.path());
    assert!(
        after_bytes < before_bytes / 2,
        "{before_bytes} -> {after_bytes} bytes"
    );

    // Every surviving record is the latest of its key, at its original offset; the active
    // segment (not cleaned) may hold older duplicates only of keys written after it began.
    let expect = latest(&written);
    let got = records(&log);
    let mut seen = BTreeMap::new();
    for (o, k, v) in &got {
        let k = String::from_utf8(k.clone().unwrap()).unwrap();
        let v = v.clone().map(|v| String::from_utf8(v).unwrap());
        let original = written.iter().find(|(wo, _, _)| wo == o).unwrap();
        assert_eq!(
            (&original.1, &original.2),
            (&k, &v),
            "offset {o} changed content"
        );
        seen.insert(k, (*o, v));
    }
    for (o, (k, v)) in &expect {
        assert_eq!(seen.get(k), Some(&(*o, v.clone())), "latest of {k}");
    }
    // A second pass with nothing new is not due (nothing dirty); forced, it merges the shrunk
    // segments into fewer (Kafka's groupSegmentsBySize) and keeps the same records.
    assert!(clean_once(&mut log, pass.map_end, -1, NOW, &HashMap::new()).is_none());
    let segments = |dir: &Path| {
        fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".log")
            })
            .count()
    };
    let before_merge = segments(dir.path());
    clean_once(&mut log, -1, -1, NOW, &HashMap::new()).expect("all dirty again");
    assert!(
        segments(dir.path()) < before_merge / 2,
        "{before_merge} -> {}",
        segments(dir.path())
    );
    assert_eq!(records(&log), got);
    // The cleaned log survives a reopen (validated from the start) unchanged.
    drop(log);
    let (log, rep) = PartitionLog::open(dir.path(), compacted(2048), NOW).unwrap();
    assert_eq!(rep.truncated_bytes, 0);
    assert_eq!(rep.dropped_segments, 0);
    assert_eq!(records(&log), got);
}

#[test]
fn tombstones_survive_delete_retention_then_go() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        delete_retention_ms: DAY,
        ..compacted(1024)
    };
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    for k in 0..10 {
        put(&mut log, keyed(&format!("k{k}"), Some("first"), NOW));
    }
    for k in 0..5 {
        put(&mut log, keyed(&format!("k{k}"), None, NOW));
    }
    // Filler so the tombstones lie in closed segments.
    for i in 0..40 {
        put(&mut log, keyed(&format!("filler-{i}"), Some("x"), NOW));
    }
    let pass = clean_once(&mut log, -1, -1, NOW, &HashMap::new()).unwrap();
    assert!(pass.latest_delete_horizon >= NOW + DAY);
    let tombstones = |log: &PartitionLog| {
        records(log)
            .into_iter()
            .filter(|(_, k, v)| {
                v.is_none() && k.as_ref().is_some_and(|k| !k.starts_with(b"filler"))
            })
            .count()
    };
    assert_eq!(tombstones(&log), 5, "kept within delete.retention.ms");
    assert!(
        !records(&log)
            .iter()
            .any(|(_, k, v)| v.as_deref() == Some(&b"first"[..]) && k.as_deref() < Some(&b"k5"[..])),
        "the values the tombstones deleted are gone"
    );
    // Before the horizon the log is not due; after it, the horizon makes it due and the
    // tombstones go.
    assert!(clean_once(
        &mut log,
        pass.map_end,
        pass.latest_delete_horizon,
        NOW + DAY - 1,
        &HashMap::new()
    )
    .is_none());
    let later = NOW + DAY + 1;
    let pass2 = clean_once(
        &mut log,
        pass.map_end,
        pass.latest_delete_horizon,
        later,
        &HashMap::new(),
    )
    .expect("the delete horizon passed");
    assert_eq!(pass2.stats.tombstones_removed, 5);
    assert_eq!(tombstones(&log), 0);
    let live: Vec<_> = records(&log)
        .into_iter()
        .filter(|(_, k, _)| !k.as_ref().unwrap().starts_with(b"filler"))
        .map(|(_, k, _)| String::from_utf8(k.unwrap()).unwrap())
        .collect();
    assert_eq!(live, vec!["k5", "k6", "k7", "k8", "k9"]);
}

#[test]
fn keyless_records_go_and_emptied_batches_stay_as_headers_where_needed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(700), NOW).unwrap();
    let mut keyless = keyed("x", Some("no key"), NOW);
    keyless.key = None;
    let first = put(&mut log, keyless);
    let superseded = put(&mut log, keyed("a", Some("old"), NOW));
    for i in 0..20 {
        put(&mut log, keyed("a", Some(&format!("new-{i}")), NOW));
    }
    // The producer of `superseded`'s batch is still active and that was its last batch (the
    // test encoder writes producer id 7 on every batch): an emptied header stays.
    let producers = HashMap::from([(7i64, superseded)]);
    clean_once(&mut log, -1, -1, NOW, &producers).unwrap();
    let got = records(&log);
    assert!(
        got.iter().all(|(o, _, _)| *o != first),
        "keyless record removed"
    );
    assert!(got.iter().all(|(o, _, _)| *o != superseded));
    // Headers of the emptied batch and of each group's last batch remain: offsets around
    // them read back, a fetch at a removed offset returns the next batch.
    let r = log.reader();
    let f = r.read(superseded, usize::MAX, i64::MAX).unwrap();
    let h = BatchHeader::parse(&f.chunks[0]).unwrap();
    assert_eq!(
        (h.base_offset, h.records_count),
        (superseded, 0),
        "kept as an empty header"
    );
    assert_eq!(h.producer_id, 7);
    // Every closed segment still ends exactly where the next begins (checked on reopen too).
    drop(log);
    let (log, rep) = PartitionLog::open(dir.path(), compacted(700), NOW).unwrap();
    assert_eq!((rep.truncated_bytes, rep.dropped_segments), (0, 0));
    assert_eq!(records(&log), got);
}

#[test]
fn compressed_batches_are_cleaned_and_keep_their_codec() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(300), NOW).unwrap();
    for round in 0..6 {
        let recs: Vec<Rec> = (0..10)
            .map(|k| {
                keyed(
                    &format!("k{k}"),
                    Some(&format!("round-{round}")),
                    NOW + round,
                )
            })
            .collect();
        let plain = encode_batch(&recs, 0);
        let h = BatchHeader::parse(&plain).unwrap();
        let zstd = build_batch(&h, Codec::Zstd, &plain[BATCH_HEADER_LEN..]);
        log.append(BytesMut::from(&zstd[..]), NOW).unwrap();
    }
    clean_once(&mut log, -1, -1, NOW, &HashMap::new()).unwrap();
    let r = log.reader();
    let f = r.read(0, usize::MAX, i64::MAX).unwrap();
    let all: Vec<u8> = f.chunks.concat();
    let mut pos = 0;
    let mut codecs = Vec::new();
    while pos < all.len() {
        let h = BatchHeader::parse(&all[pos..]).unwrap();
        if h.records_count > 0 {
            codecs.push(h.compression());
        }
        pos += h.total_size();
    }
    assert!(
        !codecs.is_empty() && codecs.iter().all(|&c| c == Codec::Zstd.id()),
        "{codecs:?}"
    );
    // Keys k0..k9 once each with their latest value (the newest batch may be in the active
    // segment, so older batches can still hold some).
    let got = records(&log);
    let newest: BTreeMap<_, _> = got
        .iter()
        .map(|(o, k, v)| (k.clone().unwrap(), (*o, v.clone().unwrap())))
        .collect();
    assert_eq!(newest.len(), 10);
    assert!(newest.values().all(|(_, v)| v == b"round-5"));
}

#[test]
fn dirty_ratio_and_compaction_lags_decide_when_a_log_is_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(1024), NOW).unwrap();
    for i in 0..40 {
        put(&mut log, keyed(&format!("k{}", i % 4), Some("v"), NOW));
    }
    let none = HashMap::new();
    // min.compaction.lag.ms: records younger than the lag are not cleanable.
    let mut c = compacted(1024);
    c.min_compaction_lag_ms = 60_000;
    log.set_config(c.clone());
    assert!(log.cleaning_candidate(-1, -1, NOW).is_none());
    assert!(log.cleaning_candidate(-1, -1, NOW + 60_001).is_some());
    c.min_compaction_lag_ms = 0;
    log.set_config(c.clone());
    let pass = clean_once(&mut log, -1, -1, NOW, &none).unwrap();
    // A little more dirt: below the ratio nothing happens, unless max.compaction.lag.ms passed.
    for i in 0..6 {
        put(&mut log, keyed(&format!("k{}", i % 4), Some("w"), NOW));
    }
    let cand = log.cleaning_candidate(pass.map_end, -1, NOW);
    if let Some(cand) = &cand {
        assert!(cand.dirty_ratio > 0.5, "{}", cand.dirty_ratio);
    }
    c.min_cleanable_dirty_ratio = 0.99;
    log.set_config(c.clone());
    assert!(log.cleaning_candidate(pass.map_end, -1, NOW).is_none());
    c.max_compaction_lag_ms = 1000;
    log.set_config(c.clone());
    let due = log.cleaning_candidate(pass.map_end, -1, NOW + 5000);
    assert!(due.is_some_and(|c| c.reason == CleanReason::MaxCompactionLag));
    // A delete-policy log is never a candidate.
    log.set_config(LogConfig::default());
    assert!(log.cleaning_candidate(-1, -1, NOW + 5000).is_none());
}

#[test]
fn a_crash_at_any_step_leaves_the_old_or_the_new_segments() {
    // Builds the same log in two directories, cleans both up to the `.swap` commit point, and
    // stops one at each step of the swap; reopening must give either the old or the cleaned log.
    let build = |dir: &Path| {
        let (mut log, _) = PartitionLog::open(dir, compacted(900), NOW).unwrap();
        for i in 0..60 {
            put(
                &mut log,
                keyed(&format!("k{}", i % 7), Some(&format!("v{i}")), NOW),
            );
        }
        log.flush().unwrap();
        log
    };
    let reference = tempfile::tempdir().unwrap();
    let mut ref_log = build(reference.path());
    let old = records(&ref_log);
    clean_once(&mut ref_log, -1, -1, NOW, &HashMap::new()).unwrap();
    let new = records(&ref_log);
    assert_ne!(old, new);

    for step in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let mut log = build(dir.path());
        let candidate = log.cleaning_candidate(-1, -1, NOW).unwrap();
        let mut throttle = Throttle::new(f64::INFINITY);
        let producers = HashMap::new();
        let never = || false;
        let mut ctx = CleanContext {
            now_ms: NOW,
            max_map_entries: 1 << 20,
            active_producers: &producers,
            throttle: &mut throttle,
            cancelled: &never,
        };
        let cleaned = candidate.clean(&mut ctx).unwrap();
        match step {
            0 => {
                // Crash before the commit point: the `.log.swap` is turned back into `.cleaned`.
                for g in &cleaned.groups {
                    let b = g.new.base_offset();
                    fs::rename(
                        segment::file_name(dir.path(), b, ".log.swap"),
                        segment::file_name(dir.path(), b, ".log.cleaned"),
                    )
                    .unwrap();
                }
                drop(cleaned);
                drop(log);
            }
            1 => {
                // Crash right after the commit point.
                drop(cleaned);
                drop(log);
            }
            2 => {
                // Crash after some replaced segments were deleted, before the renames.
                let swap = log.install_cleaned(cleaned);
                if let Some(&b) = swap.replaced.first() {
                    segment::delete_segment_files(&LogDir::os(dir.path()), b).unwrap();
                }
                drop(swap);
                drop(log);
            }
            _ => {
                // Crash after the index renames of the first group, before its log rename.
                let swap = log.install_cleaned(cleaned);
                for &b in &swap.replaced {
                    segment::delete_segment_files(&LogDir::os(dir.path()), b).unwrap();
                }
                let b = swap.bases[0];
                for suffix in [".index", ".timeindex"] {
                    fs::rename(
                        segment::file_name(dir.path(), b, &format!("{suffix}.swap")),
                        segment::file_name(dir.path(), b, suffix),
                    )
                    .unwrap();
                }
                drop(swap);
                drop(log);
            }
        }
        let (log, rep) = PartitionLog::open(dir.path(), compacted(900), NOW).unwrap();
        assert_eq!(
            (rep.truncated_bytes, rep.dropped_segments),
            (0, 0),
            "step {step}"
        );
        let got = records(&log);
        if step == 0 {
            assert_eq!(got, old, "step {step}: the old segments");
        } else {
            assert_eq!(got, new, "step {step}: the cleaned segments");
        }
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().into_string().ok())
            .filter(|n| n.ends_with(".swap") || n.ends_with(".cleaned"))
            .collect();
        assert!(leftovers.is_empty(), "step {step}: {leftovers:?}");
    }
}

#[test]
fn a_log_changed_meanwhile_discards_the_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = compacted(800);
    config.cleanup_delete = true;
    config.retention_bytes = 1;
    let (mut log, _) = PartitionLog::open(dir.path(), config, NOW).unwrap();
    for i in 0..30 {
        put(&mut log, keyed(&format!("k{}", i % 3), Some("v"), NOW));
    }
    let candidate = log.cleaning_candidate(-1, -1, NOW).unwrap();
    let mut throttle = Throttle::new(f64::INFINITY);
    let producers = HashMap::new();
    let never = || false;
    let mut ctx = CleanContext {
        now_ms: NOW,
        max_map_entries: 1 << 20,
        active_producers: &producers,
        throttle: &mut throttle,
        cancelled: &never,
    };
    let cleaned = candidate.clean(&mut ctx).unwrap();
    let (rep, removed) = log.enforce_retention(NOW).unwrap();
    assert!(rep.deleted_segments > 0);
    removed.delete_files().unwrap();
    let expect = records(&log);
    let swap = log.install_cleaned(cleaned);
    assert!(!swap.installed());
    swap.finish().unwrap();
    assert_eq!(records(&log), expect);
    drop(log);
    let (log, _) = PartitionLog::open(dir.path(), compacted(800), NOW).unwrap();
    assert_eq!(records(&log), expect);
}

#[test]
fn the_offset_map_bound_cleans_in_several_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(1500), NOW).unwrap();
    let mut written = Vec::new();
    for i in 0..120 {
        let key = format!("k{}", i % 40);
        let value = format!("v{i}");
        written.push((
            put(&mut log, keyed(&key, Some(&value), NOW)),
            key,
            Some(value),
        ));
    }
    let producers = HashMap::new();
    let mut checkpoint = -1;
    let mut passes = 0;
    while let Some(candidate) = log.cleaning_candidate(checkpoint, -1, NOW) {
        let mut throttle = Throttle::new(f64::INFINITY);
        let never = || false;
        let mut ctx = CleanContext {
            now_ms: NOW,
            max_map_entries: 10,
            active_producers: &producers,
            throttle: &mut throttle,
            cancelled: &never,
        };
        let cleaned = candidate.clean(&mut ctx).unwrap();
        assert!(cleaned.map_end > checkpoint, "every pass makes progress");
        checkpoint = cleaned.map_end;
        log.install_cleaned(cleaned).finish().unwrap();
        passes += 1;
        assert!(passes < 50);
    }
    assert!(passes > 1, "a map of 10 keys cannot cover 40 keys at once");
    // Whatever was cleaned kept the latest values (checked as in the first test).
    for (o, k, v) in records(&log) {
        let original = written.iter().find(|(wo, _, _)| *wo == o).unwrap();
        assert_eq!(Some(original.1.as_bytes().to_vec()), k);
        assert_eq!(original.2.as_ref().map(|v| v.as_bytes().to_vec()), v);
    }
    let expect = latest(&written);
    let got = records(&log);
    for (o, (k, _)) in expect {
        assert!(got
            .iter()
            .any(|(go, gk, _)| *go == o && gk.as_deref() == Some(k.as_bytes())));
    }
}

#[test]
fn throttle_keeps_the_rate() {
    let mut t = Throttle::new(1_000_000.0);
    let start = Instant::now();
    for _ in 0..10 {
        t.acquire(50_000);
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    let mut unlimited = Throttle::new(f64::INFINITY);
    let start = Instant::now();
    unlimited.acquire(u64::MAX / 2);
    assert!(start.elapsed() < Duration::from_millis(100));
}

/// A transactional batch of one keyed record from producer `pid` (epoch 0).
fn txn_put(log: &mut PartitionLog, pid: i64, seq: i32, rec: Rec) -> i64 {
    let b = encode_batch(&[rec], crate::control::TRANSACTIONAL_BIT);
    let mut h = BatchHeader::parse(&b).unwrap();
    h.producer_id = pid;
    h.producer_epoch = 0;
    h.base_sequence = seq;
    let b = build_batch(&h, Codec::None, &b[BATCH_HEADER_LEN..]);
    log.append(BytesMut::from(&b[..]), NOW).unwrap().base_offset
}

/// Transactions (KIP-98): an aborted write of a key is removed and never supersedes the key's
/// committed value; a committed transactional write does supersede it; the markers stay; the
/// cleaning stops before the segment of a transaction still open.
#[test]
fn aborted_writes_go_and_never_supersede_committed_values_and_open_ones_are_not_cleaned() {
    use crate::control::{ControlType, EndTxnMarker};
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), compacted(300), NOW).unwrap();
    put(&mut log, keyed("k1", Some("committed-1"), NOW));
    txn_put(&mut log, 5, 0, keyed("k1", Some("aborted"), NOW));
    let abort = EndTxnMarker {
        control: ControlType::Abort,
        coordinator_epoch: 0,
    };
    let commit = EndTxnMarker {
        control: ControlType::Commit,
        coordinator_epoch: 0,
    };
    log.append_marker(5, 0, abort, false, NOW).unwrap();
    txn_put(&mut log, 6, 0, keyed("k2", Some("old"), NOW));
    log.append_marker(6, 0, commit, false, NOW).unwrap();
    txn_put(&mut log, 6, 1, keyed("k2", Some("committed-2"), NOW));
    log.append_marker(6, 0, commit, false, NOW).unwrap();
    for i in 0..6 {
        put(&mut log, keyed(&format!("f{i}"), Some("filler"), NOW));
    }
    let open_at = txn_put(&mut log, 8, 0, keyed("k3", Some("open"), NOW));
    for i in 6..12 {
        put(&mut log, keyed(&format!("f{i}"), Some("filler"), NOW));
    }
    // closed transactions hold the cleaning back until their markers are replicated
    assert!(log.cleaning_candidate(0, -1, NOW).is_none());
    log.prune_replicated_txns(log.log_end_offset());
    let cleaned = clean_once(&mut log, 0, -1, NOW, &HashMap::new()).expect("cleanable");
    assert!(
        cleaned.map_end <= open_at,
        "stopped before the open transaction"
    );
    let data: Vec<(i64, String, String)> = records(&log)
        .into_iter()
        .filter_map(|(o, k, v)| {
            let k = String::from_utf8(k?).ok()?;
            Some((
                o,
                k,
                String::from_utf8(v.unwrap_or_default()).unwrap_or_default(),
            ))
        })
        .filter(|(_, k, _)| k.starts_with('k'))
        .collect();
    let values: Vec<&str> = data.iter().map(|(_, _, v)| v.as_str()).collect();
    assert!(values.contains(&"committed-1"), "{data:?}");
    assert!(!values.contains(&"aborted"), "{data:?}");
    assert!(!values.contains(&"old"), "{data:?}");
    assert!(
        values.contains(&"committed-2") && values.contains(&"open"),
        "{data:?}"
    );
    // the three markers are still there
    let r = log.reader();
    let markers = r
        .read_batches()
        .unwrap()
        .iter()
        .filter(|b| BatchHeader::parse(b).unwrap().is_control())
        .count();
    assert_eq!(markers, 3);
    assert_eq!(
        r.aborted_transactions(0, i64::MAX).len(),
        1,
        "the index entry stays"
    );
}
