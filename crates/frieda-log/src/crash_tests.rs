//! The partition log under simulated power cuts: seeded runs of appends (three idempotent
//! producers, a transactional one whose transactions commit or abort, leader epoch changes),
//! segment rolls, flushes, follower truncations, DeleteRecords, a follower starting again at
//! a later offset (KIP-405), clean restarts and crashes on [`MemFs`], which drops what was never synced (a seeded prefix of
//! each file's later writes, the last one possibly torn, and of the later namespace
//! operations). After every reopen:
//!
//! - every batch a successful flush covered is there, byte for byte, at its offset;
//! - the log is one run of whole batches from its start, each byte-identical to a batch once
//!   appended at that offset (a torn or lost tail is cut, never served);
//! - the leader epoch cache names, at every batch, the epoch stamped in it;
//! - each producer's next sequence after its last surviving batch is accepted, and a retry of
//!   that last batch is answered as a duplicate with its original offsets;
//! - the aborted transactions listed for `read_committed` readers are those whose abort
//!   marker survived, and the first unstable offset is the open transaction's first offset.
//!
//! Replay one seed with `FRIEDA_CRASH_SEED=<n> cargo test -p frieda-log crash_tests` (add
//! `FRIEDA_CRASH_TRACE=1` for every step, the files after each crash and what reopened);
//! soak with `FRIEDA_CRASH_SEEDS=<n>`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use bytes::BytesMut;

use crate::batch::testutil::{encode_batch, rec};
use crate::mem_fs::SplitMix;
use crate::{
    build_batch, epoch_at, patch_base_offset, patch_leader_epoch, AbortedTxn, BatchHeader, Codec,
    ControlType, EndTxnMarker, LogConfig, LogDir, LogError, MemFs, PartitionLog, RemovedSegments,
    SequenceCheck, BATCH_HEADER_LEN, TRANSACTIONAL_BIT,
};

/// The run's choices: MemFs's splitmix64, so a seed gives the same run everywhere.
struct Rng(SplitMix);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const NOW: i64 = 1_700_000_000_000;
const PRODUCERS: i64 = 3;
/// The transactional producer's id.
const TXN_PID: i64 = 10;

thread_local! {
    /// Whether this thread's seed runs with `preallocate` (odd seeds): new segments' files made
    /// `segment.bytes` long at once, their zeros cut at a roll or a clean close, and cut as a
    /// torn tail by recovery after a crash.
    static PREALLOCATE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 256,
        preallocate: PREALLOCATE.with(std::cell::Cell::get),
        ..LogConfig::default()
    }
}

/// A batch of `n` records of producer `pid` at `epoch` from sequence `seq`, values unique to
/// `tag`, `pad` bytes each; transactional for [`TXN_PID`].
fn batch(pid: i64, epoch: i16, seq: i32, n: usize, tag: u64, pad: usize) -> BytesMut {
    let recs: Vec<_> = (0..n)
        .map(|i| {
            let mut v = format!("{tag}-{i}-").into_bytes();
            v.resize(v.len() + pad, b'a' + (tag % 26) as u8);
            rec(NOW + tag as i64, &v)
        })
        .collect();
    let raw = encode_batch(&recs, 0);
    let mut h = BatchHeader::parse(&raw).unwrap();
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    if pid == TXN_PID {
        h.attributes |= TRANSACTIONAL_BIT;
    }
    BytesMut::from(&build_batch(&h, Codec::None, &raw[BATCH_HEADER_LEN..])[..])
}

/// Every batch from the log start, `(base offset, bytes)`.
fn read_all(log: &PartitionLog) -> Vec<(i64, Vec<u8>)> {
    log.reader()
        .read_batches()
        .unwrap()
        .into_iter()
        .map(|b| (BatchHeader::parse(&b).unwrap().base_offset, b.to_vec()))
        .collect()
}

/// What the test knows the log must hold.
#[derive(Default)]
struct Model {
    /// The batches appended and not truncated away, by base offset.
    live: BTreeMap<i64, Vec<u8>>,
    /// Every batch ever appended at each base offset (a truncation not yet synced may come
    /// back after a crash: the follower truncates it again).
    ever: HashMap<i64, Vec<Vec<u8>>>,
    /// `live` below `durable_end` as of the last successful flush.
    durable: BTreeMap<i64, Vec<u8>>,
    durable_end: i64,
    /// The recovery point the broker's checkpoint holds: the last flush's or, at random, an
    /// older one (the checkpoint is written periodically).
    checkpoint: i64,
    epoch: i32,
    /// The log start the broker's `log-start-offset-checkpoint` holds (written before the
    /// log moves it), applied again after every reopen as the broker does.
    log_start: i64,
    /// Each producer's epoch and next sequence (one past the last it sent).
    sent: HashMap<i64, (i16, i32)>,
}

/// The transactions of [`TXN_PID`] in `batches` (whole, in order): each data batch with how
/// its transaction ended (`Some(marker offset, aborted)`, `None` while open), and the first
/// offset of the open transaction if its first batch is there.
type TxnBatches = (Vec<(i64, Option<(i64, bool)>)>, Option<i64>);

fn transactions(batches: &[(i64, Vec<u8>)]) -> TxnBatches {
    let mut decided = Vec::new();
    let mut current: Vec<i64> = Vec::new();
    let mut open = None;
    for (o, b) in batches {
        let h = BatchHeader::parse(b).unwrap();
        if h.producer_id != TXN_PID {
            continue;
        }
        if !h.is_control() {
            open.get_or_insert(*o);
            current.push(*o);
            continue;
        }
        if let crate::ControlRecord::Marker(m) = crate::read_control_record(b, &h).unwrap() {
            let end = Some((*o, m.control == ControlType::Abort));
            decided.extend(current.drain(..).map(|d| (d, end)));
            open = None;
        }
    }
    decided.extend(current.into_iter().map(|d| (d, None)));
    (decided, open)
}

fn open(fs: &MemFs, dir: &Path, recovery_point: i64) -> PartitionLog {
    let dir = LogDir::new(Arc::new(fs.clone()), dir);
    PartitionLog::open_in(&dir, config(), NOW, recovery_point)
        .unwrap()
        .0
}

/// Checks the reopened log against the model (see the module docs) and makes its content
/// the new model (all of it is durable after a crash, or a clean close).
fn check_reopened(log: &mut PartitionLog, m: &mut Model, seed: u64, step: usize) {
    let ctx = format!("seed {seed} step {step}");
    // The broker applies its log start checkpoint to every log it opens.
    log.advance_log_start(m.log_start)
        .unwrap()
        .delete_files()
        .unwrap();
    // (Clamped to the log end when a power cut took unflushed records below it.)
    assert!(
        log.log_start_offset() >= m.log_start.min(log.log_end_offset()),
        "{ctx}: log start"
    );
    m.log_start = log.log_start_offset();
    let got = read_all(log);
    // Every flushed batch is there, byte for byte.
    let by_offset: BTreeMap<i64, &Vec<u8>> = got.iter().map(|(o, b)| (*o, b)).collect();
    for (o, b) in &m.durable {
        if *o < log.log_start_offset() {
            continue;
        }
        assert!(
            by_offset.get(o) == Some(&b),
            "{ctx}: flushed batch at {o} lost or changed"
        );
    }
    assert!(
        log.log_end_offset() >= m.durable_end,
        "{ctx}: log end {} below the flushed end {}",
        log.log_end_offset(),
        m.durable_end
    );
    // One run of whole batches, each once appended there.
    let mut next = log.log_start_offset();
    let epochs = log.epochs().pairs();
    for (i, (o, b)) in got.iter().enumerate() {
        let h = BatchHeader::parse(b).unwrap();
        if i == 0 {
            // A log start inside a batch (DeleteRecords) serves that whole batch.
            assert!(
                *o <= next && next <= h.last_offset(),
                "{ctx}: the first batch {o}..={} does not hold the log start {next}",
                h.last_offset()
            );
        } else {
            assert_eq!(
                *o, next,
                "{ctx}: batch at {o} does not follow the one before ({next})"
            );
        }
        assert!(
            m.ever.get(o).is_some_and(|v| v.contains(b)),
            "{ctx}: batch at {o} was never appended there"
        );
        assert_eq!(
            epoch_at(&epochs, (*o).max(log.log_start_offset())),
            Some(h.partition_leader_epoch),
            "{ctx}: the epoch cache {epochs:?} disagrees with the batch at {o}"
        );
        next = h.last_offset() + 1;
    }
    assert_eq!(
        next,
        log.log_end_offset(),
        "{ctx}: the batches end before the log end"
    );
    if std::env::var("FRIEDA_CRASH_TRACE").is_ok() {
        eprintln!("{ctx}: reopened, producers {:?}", log.describe_producers());
        for (o, b) in &got {
            let h = BatchHeader::parse(b).unwrap();
            eprintln!(
                "  batch {o}..={} pid {} seq {} epoch {}",
                h.last_offset(),
                h.producer_id,
                h.base_sequence,
                h.partition_leader_epoch
            );
        }
    }
    // The transactions: every readable record of an aborted transaction is covered by an
    // entry listed for read_committed readers (ending at its marker), no other record is, and
    // the open transaction is unstable.
    let (txn_batches, open) = transactions(&got);
    let start = log.log_start_offset();
    let listed: Vec<AbortedTxn> = log
        .reader()
        .aborted_transactions(start, log.log_end_offset())
        .into_iter()
        .filter(|e| e.producer_id == TXN_PID)
        .collect();
    for (o, end) in txn_batches {
        let covering: Vec<_> = listed
            .iter()
            .filter(|e| e.first_offset <= o && o <= e.last_offset)
            .collect();
        match end {
            Some((marker, true)) => assert!(
                covering.iter().any(|e| e.last_offset == marker),
                "{ctx}: the aborted batch at {o} (marker {marker}) is not covered: {listed:?}"
            ),
            _ => assert!(
                covering.is_empty(),
                "{ctx}: the batch at {o} ({end:?}) is covered as aborted: {covering:?}"
            ),
        }
    }
    if start == 0 {
        assert_eq!(
            log.reader().first_unstable_offset(),
            open,
            "{ctx}: first unstable offset"
        );
    }
    // Each producer's last surviving batch: its retry is a duplicate, its successor new.
    for pid in (0..PRODUCERS).chain([TXN_PID]) {
        let Some((_, last)) = got.iter().rev().find(|(_, b)| {
            let h = BatchHeader::parse(b).unwrap();
            h.producer_id == pid && !h.is_control()
        }) else {
            continue;
        };
        let h = BatchHeader::parse(last).unwrap();
        assert_eq!(
            log.check_producer(&h, None, false)
                .unwrap_or_else(|e| panic!("{ctx}: producer {pid}'s retry: {e:?}")),
            SequenceCheck::Duplicate {
                base_offset: h.base_offset,
                last_offset: h.last_offset()
            },
            "{ctx}: a retry of producer {pid}'s last batch"
        );
        let mut succ = h;
        succ.base_sequence = h.base_sequence + h.records_count;
        assert_eq!(
            log.check_producer(&succ, None, false)
                .unwrap_or_else(|e| panic!("{ctx}: producer {pid}'s next batch: {e:?}")),
            SequenceCheck::Append,
            "{ctx}: producer {pid}'s next batch"
        );
    }
    m.live = got.into_iter().collect();
    m.durable = m.live.clone();
    m.durable_end = log.log_end_offset();
    m.checkpoint = log.recovery_point().min(m.durable_end);
    m.epoch = log.latest_epoch().max(m.epoch);
    // The broker sets the epoch again when it leads the partition after the restart.
    log.set_leader_epoch(m.epoch).unwrap();
}

/// The epoch and sequence of `pid`'s next batch: after its last live batch; without one
/// (all truncated, or below the log start), after what the log's producer table remembers
/// (it keeps a producer whose batches DeleteRecords removed); else, as a client told its
/// producer is unknown does (KIP-360), the next epoch from sequence 0.
fn next_batch(m: &Model, log: &PartitionLog, pid: i64) -> (i16, i32) {
    m.live
        .values()
        .rev()
        .map(|b| BatchHeader::parse(b).unwrap())
        .find(|h| h.producer_id == pid && !h.is_control())
        .map(|h| (h.producer_epoch, h.base_sequence + h.records_count))
        .or_else(|| {
            log.describe_producers()
                .into_iter()
                .find(|p| p.producer_id == pid && p.last_sequence >= 0)
                .map(|p| (p.epoch, p.last_sequence + 1))
        })
        .unwrap_or_else(|| m.sent.get(&pid).map_or((0, 0), |&(e, _)| (e + 1, 0)))
}

/// A power cut: the log dropped, the file system crashed, the log reopened (with the broker's
/// recovery point checkpoint) and checked.
fn power_cut(
    fs: &MemFs,
    dir: &Path,
    log: PartitionLog,
    m: &mut Model,
    rng: &mut Rng,
    (seed, step): (u64, usize),
) -> PartitionLog {
    drop(log);
    fs.crash(rng.next());
    if std::env::var("FRIEDA_CRASH_TRACE").is_ok() {
        let mut names = crate::FileSystem::list(fs, dir).unwrap();
        names.sort();
        eprintln!("after the crash: {names:?}");
        for n in names.iter().filter(|n| n.ends_with(".txnindex")) {
            let b = crate::FileSystem::read(fs, &dir.join(n)).unwrap();
            eprintln!("  {n}: {:?}", crate::txn_index::decode_entries(&b));
        }
    }
    // One reopen in four dies too, inside the recovery, and the power goes again.
    let log_dir = LogDir::new(Arc::new(fs.clone()), dir);
    let mut log = loop {
        if rng.chance(25) {
            fs.stop_after(Some(rng.below(8)));
        }
        match PartitionLog::open_in(&log_dir, config(), NOW, m.checkpoint) {
            Ok((log, _)) => break log,
            Err(e) => {
                assert!(fs.stopped(), "seed {seed} step {step}: reopen: {e}");
                fs.crash(rng.next());
            }
        }
    };
    fs.stop_after(None);
    check_reopened(&mut log, m, seed, step);
    log
}

fn run(seed: u64, steps: usize) -> (u64, u64, u64) {
    PREALLOCATE.with(|p| p.set(seed % 2 == 1));
    let mut rng = Rng(SplitMix(seed));
    let fs = MemFs::new();
    let dir = Path::new("/data/topic-0");
    let mut log = open(&fs, dir, 0);
    log.set_leader_epoch(0).unwrap();
    let mut m = Model::default();
    let mut tag = seed << 20;
    let mut crashes = 0;
    let mut stops = 0;
    // A flush begun and not yet finished, with the batches it covers.
    let mut pending: Option<(crate::FlushTicket, BTreeMap<i64, Vec<u8>>)> = None;
    let trace = std::env::var("FRIEDA_CRASH_TRACE").is_ok();
    for step in 0..steps {
        let op = rng.below(100);
        // One step in ten the process dies after a few more file-system changes, inside
        // whatever the step does (an append, a roll, a flush, a truncation, a restart).
        let stop = rng.chance(10).then(|| rng.below(12));
        fs.stop_after(stop);
        if trace {
            eprintln!(
                "step {step} op {op} stop {stop:?} log [{}, {}) rp {} epochs {:?} durable_end {} checkpoint {}",
                log.log_start_offset(),
                log.log_end_offset(),
                log.recovery_point(),
                log.epochs().pairs(),
                m.durable_end,
                m.checkpoint
            );
        }
        let result: Result<(), LogError> = match op {
            0..=57 => {
                // An idempotent producer, or (one in five) the transactional one.
                let pid = if rng.chance(20) {
                    TXN_PID
                } else {
                    rng.below(PRODUCERS as u64) as i64
                };
                let n = 1 + rng.below(4) as usize;
                let pad = rng.below(300) as usize;
                tag += 1;
                let (epoch, seq) = next_batch(&m, &log, pid);
                let b = batch(pid, epoch, seq, n, tag, pad);
                let h = BatchHeader::parse(&b).unwrap();
                assert_eq!(
                    log.check_producer(&h, None, false)
                        .unwrap_or_else(|e| panic!(
                            "seed {seed} step {step}: producer {pid} sequence {seq}: {e:?}"
                        )),
                    SequenceCheck::Append,
                    "seed {seed} step {step}: producer {pid} sequence {seq}"
                );
                // As stored: its offset and the leader's epoch patched in (outside the CRC);
                // known before the append, which a crash point may cut short.
                let base = log.log_end_offset();
                let mut stored = b.to_vec();
                patch_base_offset(&mut stored, base);
                patch_leader_epoch(&mut stored, m.epoch);
                m.ever.entry(base).or_default().push(stored.clone());
                // The client's own numbering moves on when it sends (a batch of a process that
                // died may still reach the disk).
                m.sent.insert(pid, (epoch, seq + n as i32));
                log.append(b, NOW + step as i64).map(|info| {
                    assert_eq!(info.base_offset, base);
                    m.live.insert(base, stored);
                })
            }
            58..=61 => {
                // The transaction coordinator's marker, when a transaction is open.
                let live: Vec<(i64, Vec<u8>)> =
                    m.live.iter().map(|(o, b)| (*o, b.clone())).collect();
                if transactions(&live).0.iter().any(|(_, end)| end.is_none()) {
                    let control = if rng.chance(50) {
                        ControlType::Abort
                    } else {
                        ControlType::Commit
                    };
                    let marker = EndTxnMarker {
                        control,
                        coordinator_epoch: 0,
                    };
                    let epoch = m.sent[&TXN_PID].0;
                    let now = NOW + step as i64;
                    let base = log.log_end_offset();
                    let mut stored = crate::build_marker_batch(TXN_PID, epoch, marker, now);
                    patch_base_offset(&mut stored, base);
                    patch_leader_epoch(&mut stored, m.epoch);
                    m.ever.entry(base).or_default().push(stored.clone());
                    log.append_marker(TXN_PID, epoch, marker, false, now)
                        .map(|info| {
                            assert_eq!(info.base_offset, base);
                            m.live.insert(base, stored);
                        })
                } else {
                    Ok(())
                }
            }
            62..=67 => log.flush().map(|()| {
                m.durable = m.live.clone();
                m.durable_end = log.log_end_offset();
                if rng.chance(70) {
                    m.checkpoint = log.recovery_point();
                }
            }),
            68..=73 => {
                // The broker's flush: the ticket taken under the lock, synced without it while
                // appends (and truncations) go on, then finished.
                match pending.take() {
                    None => log.begin_flush().map(|t| {
                        pending = t.map(|t| (t, m.live.clone()));
                    }),
                    Some((t, covered)) => {
                        let synced = t.sync();
                        log.finish_flush(&t, synced.is_ok());
                        synced.map(|()| {
                            // What the ticket covered and is still in the log is durable.
                            for (o, b) in covered {
                                if m.live.get(&o) == Some(&b) {
                                    let end = BatchHeader::parse(&b).unwrap().last_offset() + 1;
                                    m.durable_end = m.durable_end.max(end);
                                    m.durable.insert(o, b);
                                }
                            }
                            assert!(
                                log.recovery_point() <= log.log_end_offset(),
                                "seed {seed} step {step}: recovery point {} above the log end {}",
                                log.recovery_point(),
                                log.log_end_offset()
                            );
                            if rng.chance(70) {
                                m.checkpoint = log.recovery_point();
                            }
                        })
                    }
                }
            }
            74..=77 => {
                m.epoch += 1;
                log.set_leader_epoch(m.epoch)
            }
            78..=81 => {
                // A follower's truncation to a batch boundary (or anywhere in a batch).
                let (start, end) = (log.log_start_offset(), log.log_end_offset());
                if end > start {
                    let to = start + rng.below((end - start) as u64) as i64;
                    // The batch holding `to` goes too (its offsets are never split); what it
                    // cuts is not expected back even if the cut is itself cut short.
                    let below = |b: &Vec<u8>| BatchHeader::parse(b).unwrap().last_offset() < to;
                    m.durable.retain(|_, b| below(b));
                    // (Nothing flushed left: no bound; the cut batch may begin below the start.)
                    let durable_end = m
                        .durable
                        .values()
                        .next_back()
                        .map_or(0, |b| BatchHeader::parse(b).unwrap().last_offset() + 1);
                    m.durable_end = m.durable_end.min(durable_end);
                    // The broker's checkpoint is not rewritten by a truncation: it may still
                    // vouch for offsets above the new log end (the log's ceiling covers it).
                    log.truncate_to(to)
                        .and_then(RemovedSegments::delete_files)
                        .map(|()| {
                            m.live.retain(|_, b| below(b));
                            // (With nothing left, the cut batch may have begun below the log
                            // start.)
                            let live_end = m
                                .live
                                .values()
                                .next_back()
                                .map_or(log.log_end_offset().min(start), |b| {
                                    BatchHeader::parse(b).unwrap().last_offset() + 1
                                });
                            assert_eq!(log.log_end_offset(), live_end);
                            m.log_start = m.log_start.min(log.log_start_offset());
                        })
                } else {
                    Ok(())
                }
            }
            82..=84 => {
                // DeleteRecords: the broker checkpoints the new start first, then moves it.
                let (start, end) = (log.log_start_offset(), log.log_end_offset());
                let to = start + rng.below((end - start + 1) as u64) as i64;
                m.log_start = m.log_start.max(to);
                log.advance_log_start(to)
                    .and_then(RemovedSegments::delete_files)
            }
            85 => {
                // A follower of a tiered partition starts again at (or past) its log end
                // (KIP-405), keeping the epochs below it; the broker checkpoints the start.
                let to = log.log_end_offset() + rng.below(5) as i64;
                let lineage: Vec<(i32, i64)> = log
                    .epochs()
                    .pairs()
                    .into_iter()
                    .filter(|&(_, first)| first < to)
                    .collect();
                m.log_start = to;
                m.durable.clear();
                m.durable_end = 0;
                log.truncate_fully_and_start_at(to, NOW + step as i64, None, &lineage)
                    .and_then(RemovedSegments::delete_files)
                    .map(|()| {
                        m.live.clear();
                        m.durable_end = to;
                    })
            }
            86..=88 => {
                // A clean restart: closed (flushed), reopened with its recovery point. A flush
                // in progress finishes first (the broker's flush syncs before it returns).
                let finished = match pending.take() {
                    Some((t, _)) => {
                        let synced = t.sync();
                        log.finish_flush(&t, synced.is_ok());
                        synced
                    }
                    None => Ok(()),
                };
                match finished.and_then(|()| log.flush_for_shutdown()) {
                    Ok(()) => {
                        let rp = log.recovery_point();
                        drop(log);
                        // (Crash points cover the close; the reopen runs to the end.)
                        fs.stop_after(None);
                        log = open(&fs, dir, rp);
                        check_reopened(&mut log, &mut m, seed, step);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            89..=91 => {
                // The process killed (SIGKILL), the machine up: every write stays in the page
                // cache, a flush in progress never finishes, and the log is reopened with the
                // recovery point checkpoint, whose recovery makes what it kept durable (a later
                // power cut must not take it: the directory entries of segments the killed
                // process created included).
                pending = None;
                drop(log);
                fs.stop_after(None);
                log = open(&fs, dir, m.checkpoint);
                check_reopened(&mut log, &mut m, seed, step);
                Ok(())
            }
            _ => {
                // A power cut (a flush in progress never finishes).
                pending = None;
                crashes += 1;
                log = power_cut(&fs, dir, log, &mut m, &mut rng, (seed, step));
                Ok(())
            }
        };
        if let Err(e) = result {
            assert!(
                fs.stopped(),
                "seed {seed} step {step}: an error without a crash point: {e}"
            );
            // The process died inside the step: the power goes too.
            pending = None;
            crashes += 1;
            stops += 1;
            log = power_cut(&fs, dir, log, &mut m, &mut rng, (seed, step));
        }
        fs.stop_after(None);
    }
    let s = fs.stats();
    assert!(
        s.crashes >= crashes,
        "every power cut reached the file system"
    );
    (s.data_ops_dropped, s.name_ops_dropped, stops)
}

#[test]
fn nothing_flushed_is_lost_and_nothing_torn_is_served_across_crashes() {
    if let Some(seed) = std::env::var("FRIEDA_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run(seed, 400);
        return;
    }
    // More with FRIEDA_CRASH_SEEDS=<n> (a soak; 150 take a few seconds).
    let seeds = std::env::var("FRIEDA_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let (mut data, mut names, mut stops) = (0, 0, 0);
    for seed in 0..seeds {
        let (d, n, s) = run(seed, 400);
        data += d;
        names += n;
        stops += s;
    }
    // The crashes bit: unsynced writes and namespace operations were dropped, and processes
    // died inside steps.
    assert!(
        data > 100 && names > 10 && stops > 100,
        "dropped {data} writes, {names} namespace ops; {stops} crash points reached"
    );
}
