//! The broker's own partition log (`frieda_log::PartitionLog`) on an in-memory file system
//! (`frieda_log::MemFs`), run in lock-step with a [`SimLog`](crate::disk::SimLog) when the plan
//! asks for it (every generated plan; `frieda-sim --model-log-only` leaves it out): every
//! operation the simulator makes on the model is made on the real log too, with the same
//! segment boundaries, and after each the two must agree (log start and end, leader epochs;
//! after a restart, a power loss, a truncation, local retention or starting again, the segment
//! boundaries and every batch with the request it came from). A power loss crashes the file
//! system keeping exactly what was synced (the model's disk), a restart reopens the log from
//! its files with the broker's recovery point checkpoint and log start, as
//! `Broker::open_partition` does. `FRIEDA_REAL_TRACE=1` prints every operation on stderr.
//!
//! A model batch `{base, count, epoch, id}` is a real RecordBatch v2 of `count` records, its
//! partition leader epoch `epoch`, the request id in its base and max timestamps (no producer
//! id: the producer rules have their own simulation). Disagreement is a panic naming the
//! operation: a finding, not a flake.

use std::path::Path;
use std::sync::Arc;

use bytes::BytesMut;
use frieda_log::{
    build_batch, encode_record, BatchHeader, Codec, LogConfig, LogDir, MemFs, PartitionLog,
    RecordRef,
};

use crate::disk::Batch;

/// The partition directory on every simulated broker's in-memory disk.
const DIR: &str = "/data/p";

/// A log's `segment.bytes`: the simulator decides the rolls.
const NEVER_ROLL: u64 = 1 << 40;

/// The real log beside one model log.
pub(crate) struct RealLog {
    fs: MemFs,
    dir: LogDir,
    log: PartitionLog,
    /// The broker's recovery point checkpoint: the recovery point after its last flush.
    checkpoint: i64,
    /// The broker's log start checkpoint: where the log last started again (local retention
    /// of a tiered log does not write it).
    start_checkpoint: i64,
    /// Names this log in traces (`FRIEDA_REAL_TRACE=1`).
    id: u64,
}

/// Whether `FRIEDA_REAL_TRACE` is set (read once: the trace is asked after every operation).
fn tracing_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FRIEDA_REAL_TRACE").is_some())
}

/// Ids of the real logs made (trace names).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for RealLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealLog")
            .field("log_start", &self.log.log_start_offset())
            .field("log_end", &self.log.log_end_offset())
            .field("checkpoint", &self.checkpoint)
            .finish()
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: NEVER_ROLL,
        segment_ms: i64::MAX,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

/// The real batch of a model batch (base offset and epoch set, as a follower appends it).
fn encode(b: &Batch) -> BytesMut {
    let id = i64::try_from(b.id).expect("request ids fit an i64");
    let mut records = Vec::new();
    for i in 0..b.count {
        let value = id.to_be_bytes();
        encode_record(
            &mut records,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i32::try_from(i).expect("a batch's records fit an i32"),
                key: None,
                value: Some(&value),
                headers: &[0],
            },
        );
    }
    let count = i32::try_from(b.count).expect("a batch's records fit an i32");
    let h = BatchHeader {
        base_offset: b.base,
        batch_length: 0,
        partition_leader_epoch: b.epoch,
        magic: 2,
        crc: 0,
        attributes: 0,
        last_offset_delta: count - 1,
        base_timestamp: id,
        max_timestamp: id,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: count,
    };
    BytesMut::from(&build_batch(&h, Codec::None, &records)[..])
}

/// The model batch of a real batch's header.
fn decode(h: &BatchHeader) -> Batch {
    Batch {
        base: h.base_offset,
        count: i64::from(h.last_offset_delta) + 1,
        epoch: h.partition_leader_epoch,
        id: u64::try_from(h.base_timestamp).expect("an id"),
    }
}

impl RealLog {
    /// An empty log on a fresh disk.
    pub(crate) fn new() -> RealLog {
        let fs = MemFs::new();
        let dir = LogDir::new(Arc::new(fs.clone()), Path::new(DIR));
        let (log, _) = PartitionLog::open_in(&dir, config(), 0, 0).expect("a fresh log opens");
        RealLog {
            fs,
            dir,
            log,
            checkpoint: 0,
            start_checkpoint: 0,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Whether the real log is offline (a failed fsync).
    pub(crate) fn is_offline(&self) -> bool {
        self.log.offline_reason().is_some()
    }

    /// A leader's append of `b` in its epoch (the epoch assigned first, as a new leader does).
    pub(crate) fn append_leader(&mut self, b: &Batch) {
        self.log
            .set_leader_epoch(b.epoch)
            .expect("the epoch checkpoint is written");
        let info = self
            .log
            .append(encode(b), 0)
            .expect("a leader's append succeeds on the real log");
        assert_eq!(
            info.base_offset, b.base,
            "real log: a leader's append got another offset than the model's"
        );
        self.trace(format_args!("leader append {b:?}"));
    }

    /// A follower's append of its leader's batches.
    pub(crate) fn append_replicated(&mut self, batches: &[Batch]) {
        let mut data = BytesMut::new();
        for b in batches {
            data.extend_from_slice(&encode(b));
        }
        self.log
            .append_replicated(data, 0)
            .expect("a follower's append succeeds on the real log");
        self.trace(format_args!("follower append {batches:?}"));
    }

    /// A new segment at the log end (the model rolled).
    pub(crate) fn roll(&mut self) {
        self.log.roll_segment(0).expect("a roll succeeds");
        self.trace(format_args!("roll"));
    }

    /// A new leader's epoch starts at the log end.
    pub(crate) fn assign_epoch(&mut self, epoch: i32) {
        self.log
            .set_leader_epoch(epoch)
            .expect("the epoch checkpoint is written");
        self.trace(format_args!("leader epoch {epoch}"));
    }

    /// A follower's truncation.
    pub(crate) fn truncate_to(&mut self, offset: i64) {
        self.log
            .truncate_to(offset)
            .and_then(frieda_log::RemovedSegments::delete_files)
            .expect("a truncation succeeds on the real log");
        self.trace(format_args!("truncate to {offset}"));
    }

    /// An fsync: `fail` arms the disk fault first. Returns whether it succeeded.
    pub(crate) fn sync(&mut self, fail: bool) -> bool {
        if fail {
            self.fs.fail_next_sync();
        }
        let synced = match self.log.flush() {
            Ok(()) => {
                self.checkpoint = self.log.recovery_point();
                true
            }
            Err(_) => false,
        };
        self.fs.heal();
        self.trace(format_args!("sync (fail {fail}): {synced}"));
        synced
    }

    /// Local retention removed the model's closed segments below `log_start`, covered by
    /// copies whose epochs are `copied_epochs`: the broker's own local retention
    /// (`enforce_local_retention`) removes the same, with `local.retention.bytes` set to what
    /// stays.
    pub(crate) fn remove_local(&mut self, log_start: i64, copied_epochs: &[(i32, i64)]) {
        let gone: u64 = self
            .log
            .reader()
            .closed_segments(self.log.log_start_offset(), log_start)
            .iter()
            .map(|s| s.size_bytes)
            .sum();
        if gone == 0 {
            return;
        }
        let keep = i64::try_from(self.log.size_bytes() - gone).expect("bytes");
        let (_, removed) = self
            .log
            .enforce_local_retention(0, -1, keep, log_start - 1, copied_epochs)
            .expect("local retention succeeds on the real log");
        removed.delete_files().expect("files deleted");
        self.trace(format_args!("local retention to {log_start}"));
    }

    /// A follower starts again at `offset` with the copies' lineage below it.
    pub(crate) fn start_again(&mut self, offset: i64, epochs_below: &[(i32, i64)]) {
        self.start_checkpoint = offset;
        self.log
            .truncate_fully_and_start_at(offset, 0, None, epochs_below)
            .and_then(frieda_log::RemovedSegments::delete_files)
            .expect("starting again succeeds on the real log");
        self.trace(format_args!("start again at {offset}"));
    }

    /// Reopens the log from its files (after a power loss the file system first keeps only
    /// what was synced), with the broker's recovery point and log start checkpoints, and makes
    /// it durable as the broker's recovery does.
    /// The log before is dropped once the new one is open: it is no longer used (after a
    /// power loss its handles answer EIO).
    fn reopen(&mut self, power_loss: bool) {
        if power_loss {
            self.fs.crash_to_synced();
        }
        let (mut log, report) = PartitionLog::open_in(&self.dir, config(), 0, self.checkpoint)
            .expect("the real log reopens from its files");
        if tracing_on() {
            eprintln!("real log {}: recovery {report:?}", self.id);
        }
        log.advance_log_start(self.start_checkpoint)
            .and_then(frieda_log::RemovedSegments::delete_files)
            .expect("the log start checkpoint applies");
        log.flush().expect("recovery flushes");
        self.checkpoint = log.recovery_point();
        self.log = log;
        self.trace(format_args!("reopen (power loss {power_loss})"));
    }

    /// A power loss (see [`reopen`](Self::reopen)).
    pub(crate) fn power_loss(&mut self) {
        self.reopen(true);
    }

    /// A process restart (the page cache kept).
    pub(crate) fn restart(&mut self) {
        self.reopen(false);
    }

    /// With `FRIEDA_REAL_TRACE` set: one line per operation on stderr.
    fn trace(&self, what: std::fmt::Arguments<'_>) {
        if tracing_on() {
            eprintln!(
                "real log {}: {what}: [{}, {}) segments {:?} recovery point {} checkpoint {}",
                self.id,
                self.log.log_start_offset(),
                self.log.log_end_offset(),
                self.segment_bases(),
                self.log.recovery_point(),
                self.checkpoint
            );
        }
    }

    /// The base offset of every segment, ascending.
    pub(crate) fn segment_bases(&self) -> Vec<i64> {
        self.log.reader().segment_bases()
    }

    /// Every batch from the log start.
    fn batches(&self) -> Vec<Batch> {
        self.log
            .reader()
            .read_batches()
            .expect("the real log reads")
            .iter()
            .map(|b| decode(&BatchHeader::parse(b).expect("a stored batch parses")))
            .collect()
    }

    /// Panics unless the real log agrees with the model: log start and end, the leader epochs,
    /// and with `batches`, the segment boundaries (unless the model has none yet) and every
    /// batch (a full read).
    pub(crate) fn check(
        &self,
        what: &str,
        log_start: i64,
        log_end: i64,
        epochs: &[(i32, i64)],
        segments: &[i64],
        batches: Option<&[Batch]>,
    ) {
        let real = &self.log;
        assert_eq!(
            (real.log_start_offset(), real.log_end_offset()),
            (log_start, log_end),
            "real log after {what}: [log start, log end) differs from the model's"
        );
        assert_eq!(
            real.epochs().pairs(),
            epochs,
            "real log after {what}: the leader epochs differ from the model's"
        );
        if let Some(model) = batches {
            if !segments.is_empty() {
                assert_eq!(
                    self.segment_bases(),
                    segments,
                    "real log after {what}: the segments differ from the model's"
                );
            }
            let got = self.batches();
            // A log start inside a batch (a follower's) serves that whole batch.
            let model: Vec<Batch> = model
                .iter()
                .copied()
                .filter(|b| b.end() > log_start)
                .collect();
            assert_eq!(
                got, model,
                "real log after {what}: the batches differ from the model's"
            );
        }
    }
}
