//! The partition log: one writer ([`PartitionLog`]) and any number of concurrent readers ([`LogReader`]).
//!
//! Shared state lives in one `Arc`: the log start / end offsets as atomics, the segment list and the
//! tail cache behind `parking_lot` locks held only for in-memory work. The writer does its file I/O
//! first and then publishes: segment state, cache, and last the log end offset (release store), so a
//! reader that loads the log end offset (acquire) sees every byte below it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;

use crate::batch::{
    crc_ok, patch_base_offset, patch_leader_epoch, records_section, set_log_append_time,
    BatchError, BatchHeader, BATCH_HEADER_LEN,
};
use crate::cache::TailCache;
use crate::cleaner::{self, CleanedLog, CleaningCandidate, PendingSwap};
use crate::config::{LogConfig, TimestampType};
use crate::control::{build_marker_batch, read_control_record, ControlRecord, EndTxnMarker};
use crate::epoch::{EpochCache, Epochs};
use crate::error::LogError;
use crate::file_slice::{FileFetch, FileSlice};
use crate::fs::{FileSystem, LogDir, OsFs};
use crate::limits;
use crate::producer_state::{
    ProducerError, ProducerInfo, ProducerStateManager, SequenceCheck, TxnFrontier,
};
use crate::records::parse_records;
use crate::retention::{self, SegmentInfo};
use crate::segment::{self, read_exact_at, scan_headers, Segment, SegmentShared, SegmentWriteback};
use crate::snapshot;
use crate::txn_index::{self, AbortedTxn};

/// Time-based rolls skipped for the open-file budget (a warning every 1000).
static BUDGET_WARNED: AtomicU64 = AtomicU64::new(0);

/// An empty file in a partition's directory once its producer table has forgotten a producer
/// (`producer.id.expiration.ms`): from then on a producer's first batch here may start at any
/// sequence (see [`ProducerStateManager::check`]). Frieda's own; Kafka keeps no such file.
pub const PRODUCERS_FORGOTTEN_FILE: &str = "producer-state-forgotten";

/// A file in a partition's directory after a truncation cut the log below its recovery point:
/// `<truncated to> <highest recovery point before>` (two decimal offsets). The broker's
/// recovery point checkpoint is written periodically, so it may still hold an offset from
/// before the truncation; a log reopened after a power cut then trusts (does not validate)
/// segments below it that were written after the truncation and never synced. While this file
/// exists, a reopen trusts nothing at or above `<truncated to>`; it is removed once a flush
/// makes the log durable up to `<highest recovery point before>`, when no checkpoint can vouch
/// for unsynced bytes any more. Frieda's own (Kafka writes its checkpoint after every
/// truncation instead, `LogManager.truncateTo`).
pub const RECOVERY_CEILING_FILE: &str = "recovery-point-ceiling";

/// Reads the [`RECOVERY_CEILING_FILE`] of `dir`: `Some((truncated to, highest recovery point
/// before))`, `Some((i64::MIN, i64::MAX))` for one that does not parse (trust nothing), `None`
/// without one.
fn read_recovery_ceiling(dir: &LogDir) -> Result<Option<(i64, i64)>, LogError> {
    let bytes = match dir.fs().read(&dir.join(RECOVERY_CEILING_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut parts = text.split_whitespace().map(str::parse::<i64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(t)), Some(Ok(r))) => Ok(Some((t, r))),
        _ => {
            tracing::warn!(dir = %dir.display(), "unreadable recovery point ceiling; validating every segment");
            Ok(Some((i64::MIN, i64::MAX)))
        }
    }
}

/// Result of a successful [`PartitionLog::append`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset assigned to the first record.
    pub base_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Broker append time (ms) if `message.timestamp.type=LogAppendTime`, else -1 (Produce response).
    pub log_append_time: i64,
    /// Log start offset after the append (Produce response `log_start_offset`).
    pub log_start_offset: i64,
    /// Bytes written.
    pub bytes: usize,
}

/// What [`PartitionLog::open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Segments loaded.
    pub segments: usize,
    /// Segments validated batch by batch (those above the recovery point).
    pub validated_segments: usize,
    /// Bytes cut from the torn tail of the log (from the first invalid batch on).
    pub truncated_bytes: u64,
    /// Whole segments deleted because they came after an invalid batch.
    pub dropped_segments: usize,
    /// First offset stored.
    pub log_start_offset: i64,
    /// Offset the next appended record will get.
    pub log_end_offset: i64,
}

/// What [`PartitionLog::enforce_retention`] deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionReport {
    /// Whole segments deleted.
    pub deleted_segments: usize,
    /// Bytes of their `.log` files.
    pub deleted_bytes: u64,
    /// Log start offset after deletion.
    pub log_start_offset: i64,
}

/// Whole batches returned by a fetch, in order, as shared byte chunks (zero-copy from the cache).
///
/// Starts with the batch containing the requested offset, stops before exceeding `max_bytes` but
/// always includes at least the first batch even if larger (KIP-74), and never includes a batch whose
/// last offset is `>= max_offset` (the high watermark, exclusive). Empty when fetching at the log end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchData {
    /// Whole batches, each chunk one or more batches, to be sent back to back.
    pub chunks: Vec<Bytes>,
    /// Sum of the chunks' lengths.
    pub bytes: usize,
    /// Base offset of the first batch returned (the requested offset when empty).
    pub first_offset: i64,
    /// One past the last offset returned (the requested offset when empty).
    pub next_offset: i64,
}

/// A fetch from the segment files, planned by [`LogReader::plan_disk_read`] under the log's
/// locks; [`run`](Self::run) reads without taking any (the segments it holds stay readable
/// even if retention removes them meanwhile).
#[derive(Debug)]
pub struct DiskRead {
    offset: i64,
    max_bytes: usize,
    max_offset: i64,
    index_interval: usize,
    segments: Vec<(Arc<SegmentShared>, crate::segment::ReadStart)>,
    /// Per segment, the offset-index entries a zero-copy read may jump to (empty for a plan
    /// of [`LogReader::plan_disk_read`]).
    marks: Vec<Vec<crate::index::OffsetEntry>>,
}

impl DiskRead {
    /// Reads the planned batches: whole batches from the requested offset, about `max_bytes`
    /// (the first batch whole, KIP-74), below `max_offset` ([`FetchData`]'s shape; empty at the
    /// log end).
    ///
    /// Errors: `LogError::Io` for a failed `pread`, `LogError::Corrupt` for a batch header that
    /// does not parse or runs past its segment.
    pub fn run(self) -> Result<FetchData, LogError> {
        let mut out = FetchData::empty(self.offset);
        let mut cur = self.offset;
        for (s, at) in &self.segments {
            let r = s.read_batches_at(
                *at,
                cur,
                self.max_bytes.saturating_sub(out.bytes),
                self.max_offset,
                out.chunks.is_empty(),
                self.index_interval,
            )?;
            if let Some(d) = r.data {
                if out.chunks.is_empty() {
                    out.first_offset = r.first_offset;
                }
                out.bytes += r.bytes;
                out.next_offset = r.next_offset;
                cur = r.next_offset;
                out.chunks.push(d);
            }
            if r.stopped || cur >= self.max_offset {
                break;
            }
        }
        Ok(out)
    }
}

impl DiskRead {
    /// [`run`](Self::run) without reading the batches: the file ranges that hold them, for a
    /// zero-copy send (`sendfile`). Reads only the batch headers it needs (see
    /// [`SegmentShared::slice_batches_at`]); plan it with [`LogReader::plan_file_read`] so
    /// it can skip ahead by the offset index.
    ///
    /// `probe` says how much of a range the page cache lacks (the bytes are counted in
    /// [`FETCH_READS`](crate::stats::FETCH_READS) as a copying read's would be).
    ///
    /// Errors: as [`run`](Self::run).
    pub fn run_unread(self, probe: crate::segment::CacheProbe) -> Result<FileFetch, LogError> {
        let mut out = FileFetch {
            slices: Vec::new(),
            bytes: 0,
            first_offset: self.offset,
            next_offset: self.offset,
        };
        let mut cur = self.offset;
        for (i, (s, at)) in self.segments.iter().enumerate() {
            let marks = self.marks.get(i).map_or(&[][..], |m| &m[..]);
            let want = crate::segment::SliceWant {
                at: *at,
                marks,
                offset: cur,
                max_bytes: self.max_bytes.saturating_sub(out.bytes),
                max_offset: self.max_offset,
                include_first_anyway: out.slices.is_empty(),
            };
            let r = s.slice_batches_at(want, self.index_interval, probe)?;
            if r.bytes > 0 {
                if out.slices.is_empty() {
                    out.first_offset = r.first_offset;
                }
                out.bytes += r.bytes;
                out.next_offset = r.next_offset;
                cur = r.next_offset;
                out.slices.push(FileSlice::new(s.clone(), r.pos, r.bytes));
            }
            if r.stopped || cur >= self.max_offset {
                break;
            }
        }
        Ok(out)
    }
}

impl FetchData {
    fn empty(offset: i64) -> Self {
        FetchData {
            chunks: Vec::new(),
            bytes: 0,
            first_offset: offset,
            next_offset: offset,
        }
    }
}

#[derive(Debug)]
struct Shared {
    log_start: AtomicI64,
    log_end: AtomicI64,
    /// Index interval in bytes (for sizing read windows).
    index_interval: AtomicI64,
    segments: RwLock<Vec<Arc<SegmentShared>>>,
    cache: RwLock<TailCache>,
    /// Set after an fsync or write failed: the unsynced data is suspect, nothing more is
    /// appended or served until the log is reopened from disk.
    offline: AtomicBool,
    /// The writer's recovery point, readable without its lock (every offset below is fsync'ed).
    recovery_point: AtomicI64,
    /// Open and recently closed transactions, for the last stable offset (published by the
    /// writer after every change).
    frontier: RwLock<TxnFrontier>,
    /// The partition's directory (its producer snapshots, for [`crate::ClosedSegment`]).
    dir: LogDir,
}

/// What one flush must make durable, taken by [`PartitionLog::begin_flush`].
pub struct FlushTicket {
    segments: Vec<crate::segment::SegmentSync>,
    dir: Option<LogDir>,
    /// The log's directory generation when taken.
    dir_gen: u64,
    messages: u64,
    /// Log end offset when the ticket was taken: everything below it is durable after the sync.
    end_offset: i64,
    /// The log's truncation count when the ticket was taken: a truncation since makes
    /// `end_offset` meaningless (records appended after it at those offsets are not synced).
    truncations: u64,
}

impl FlushTicket {
    /// `fdatasync` of every file with writes before the ticket was taken, and of the directory
    /// if segments were created or deleted. Blocks for the disk (typically 0.1-10 ms).
    ///
    /// Errors: `LogError::Io` from the sync; the log is then still counted as unflushed.
    pub fn sync(&self) -> Result<(), LogError> {
        let started = std::time::Instant::now();
        for s in &self.segments {
            s.sync()?;
        }
        if let Some(dir) = &self.dir {
            dir.sync()?;
        }
        crate::stats::LOG_FLUSH.record(started.elapsed());
        Ok(())
    }

    /// Records the ticket covers.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// The `fdatasync`s [`sync`](Self::sync) will make (files, and the directory).
    pub fn syncs(&self) -> usize {
        self.segments.iter().map(|s| s.files()).sum::<usize>() + usize::from(self.dir.is_some())
    }
}

/// Single-writer partition log storing Kafka RecordBatch v2 bytes as received, base offsets patched.
///
/// Owned by one writer thread; hand out [`LogReader`]s for concurrent fetches.
pub struct PartitionLog {
    dir: LogDir,
    config: LogConfig,
    segments: Vec<Segment>,
    shared: Arc<Shared>,
    unflushed: u64,
    last_flush_ms: i64,
    dir_dirty: bool,
    /// Bumped whenever `dir_dirty` is set (see [`FlushTicket`]).
    dir_gen: u64,
    /// Every offset below this is known to be on disk (fsync'ed): Kafka's recovery point.
    recovery_point: i64,
    /// Leader epoch stamped on appended batches (-1: the producer's value kept).
    leader_epoch: i32,
    /// First offset of each leader epoch (`leader-epoch-checkpoint`).
    epochs: EpochCache,
    /// Producer ids, sequences, epochs and open transactions (rebuilt at open from a snapshot
    /// and a replay; recorded for every appended batch).
    producers: ProducerStateManager,
    /// Opened from segments already on disk (a restart): unsynced batches, and with them
    /// producers, may have been lost by a crash or a power cut, so the producer table may lack
    /// producers that wrote here (see [`ProducerStateManager::check`]).
    reopened: bool,
    /// The [`RECOVERY_CEILING_FILE`] held: `(truncated to, highest recovery point before)`.
    ceiling: Option<(i64, i64)>,
    /// Truncations so far ([`truncate_to`](Self::truncate_to) cutting records,
    /// [`truncate_fully_and_start_at`](Self::truncate_fully_and_start_at)), for [`FlushTicket`].
    truncations: u64,
}

/// Segments removed from a log (retention, cleaning) whose files are still to be deleted; the
/// caller deletes them with [`RemovedSegments::delete_files`] after releasing the partition's
/// lock, so housekeeping never holds up a produce.
#[must_use = "the removed segments' files must be deleted"]
pub struct RemovedSegments {
    segments: Vec<Segment>,
    /// Producer snapshots below the new log start (their files go too).
    snapshots: Vec<(LogDir, i64)>,
}

impl RemovedSegments {
    /// Nothing removed.
    pub fn none() -> Self {
        RemovedSegments {
            segments: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    /// Unlinks the files of every removed segment (and of producer snapshots below the log
    /// start), then fsyncs the partition directory once, so a power cut cannot bring a removed
    /// segment back and move the local log start back below where retention or DeleteRecords
    /// left it (found by the cluster simulator running this log on `MemFs`, `frieda-sim`).
    /// Readers still holding a segment finish their reads from the open file. Errors: the
    /// first `LogError::Io` (the other files are still attempted); a file already gone is not
    /// an error.
    pub fn delete_files(self) -> Result<(), LogError> {
        let mut first = None;
        for s in &self.segments {
            if let Err(e) = s.delete_files() {
                first.get_or_insert(e);
            }
        }
        for (dir, offset) in &self.snapshots {
            snapshot::delete(dir, *offset);
        }
        if let Some(s) = self.segments.first() {
            if let Err(e) = s.dir().sync() {
                first.get_or_insert(LogError::Io(e));
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// How many segments were removed.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// True if no segment was removed.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
}

/// Creates `dir` and any missing parents, fsyncing each new directory's parent so the new
/// entries survive a power cut (a file fsync'ed inside a directory whose own entry was never
/// synced can vanish with it).
///
/// Errors: the `std::io::Error` of the creation or a sync.
pub fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    create_dir_durably_on(&OsFs, dir)
}

/// [`create_dir_durably`] on file system `fs`.
pub(crate) fn create_dir_durably_on(fs: &dyn FileSystem, dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.as_os_str().is_empty() || fs.exists(d) {
            break;
        }
        missing.push(d);
        at = d.parent();
    }
    fs.create_dir_all(dir)?;
    for d in missing.iter().rev() {
        let parent = d
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs.sync_dir(parent)?;
    }
    Ok(())
}

/// Splits `records` into whole v2 batches `(position, length)` with a cheap structural pass (no
/// CRC): batch boundaries must be sound so nothing malformed is ever written.
fn batch_spans(records: &[u8]) -> Result<Vec<(usize, usize)>, LogError> {
    let mut spans = Vec::new();
    let mut pos = 0usize;
    while pos < records.len() {
        let h = BatchHeader::parse(&records[pos..])?;
        let total = h.total_size();
        if total < BATCH_HEADER_LEN
            || total > records.len() - pos
            || h.magic != 2
            || h.last_offset_delta < 0
        {
            return Err(
                BatchError::CorruptMessage(format!("malformed batch at position {pos}")).into(),
            );
        }
        spans.push((pos, total));
        pos += total;
    }
    if spans.is_empty() {
        return Err(BatchError::InvalidRecord("empty record set".into()).into());
    }
    Ok(spans)
}

/// ENOSPC or EDQUOT: a write refused for space, which leaves the log intact once cut back.
fn is_out_of_space(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl PartitionLog {
    /// Opens (creating the directory if missing) the log in `dir`, validating every segment: the
    /// recovery after an unclean shutdown with no recovery point known. See
    /// [`open_from`](Self::open_from).
    pub fn open(
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<(PartitionLog, RecoveryReport), LogError> {
        Self::open_from(dir, config, now_ms, 0)
    }

    /// [`open_from`](Self::open_from) on the operating system's file system.
    pub fn open_from(
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
        recovery_point: i64,
    ) -> Result<(PartitionLog, RecoveryReport), LogError> {
        Self::open_in(&LogDir::os(dir), config, now_ms, recovery_point)
    }

    /// Opens (creating the directory if missing) and recovers the log in `dir`, trusting what
    /// lies below `recovery_point` (an offset every byte below which was fsync'ed, from Kafka's
    /// `recovery-point-offset-checkpoint`).
    ///
    /// Loads segments named by 20-digit zero-padded base offset (`00000000000000000000.log`,
    /// `.index`, `.timeindex`, Kafka's naming; other files are ignored) after finishing or undoing
    /// an interrupted cleaning (`.cleaned` / `.swap` files, see the cleaner). Every segment that
    /// ends above `recovery_point` is validated batch by batch (length, magic, increasing offsets,
    /// CRC-32C); at the first invalid batch the log is truncated: the rest of that segment and
    /// every later segment are deleted, with a `tracing::warn!` naming the file and the bytes.
    /// Indexes that are missing or inconsistent are rebuilt. `now_ms` (ms since epoch) starts the
    /// active segment's `segment.ms` clock if it is empty.
    ///
    /// Errors: `LogError::Io` from the file system (nothing is deleted by a failed open).
    pub fn open_in(
        dir: &LogDir,
        config: LogConfig,
        now_ms: i64,
        recovery_point: i64,
    ) -> Result<(PartitionLog, RecoveryReport), LogError> {
        create_dir_durably_on(dir.fs(), dir)?;
        let ceiling = read_recovery_ceiling(dir)?;
        let recovery_point = match ceiling {
            Some((truncated_to, _)) => recovery_point.min(truncated_to),
            None => recovery_point,
        };
        crate::cleaner::finish_interrupted_swaps(dir)?;
        let mut bases = Vec::new();
        for name in dir.fs().list(dir)? {
            if let Some(base) = segment::parse_log_name(&name) {
                bases.push(base);
            }
        }
        bases.sort_unstable();
        let mut segments: Vec<Segment> = Vec::with_capacity(bases.len().max(1));
        let mut truncated_bytes = 0;
        let mut validated = 0;
        let mut dropped = 0;
        let interval = config.index_interval_bytes;
        for (i, &base) in bases.iter().enumerate() {
            let next = bases.get(i + 1).copied();
            let trusted = next.is_some_and(|n| n <= recovery_point);
            if trusted {
                segments.push(Segment::open_closed(
                    dir,
                    base,
                    next.unwrap_or(base),
                    interval,
                    now_ms,
                )?);
                continue;
            }
            if next.is_none() && recovery_point > base {
                if let Some(seg) = Segment::open_flushed_active(dir, base, now_ms, recovery_point)?
                {
                    segments.push(seg);
                    continue;
                }
            }
            validated += 1;
            let (mut seg, t) = Segment::recover(dir, base, interval, now_ms, next)?;
            // Recovered bytes may still be only in the page cache (a crashed process): the next
            // flush syncs them before the recovery point moves past them.
            seg.mark_dirty()?;
            truncated_bytes += t;
            segments.push(seg);
            let end = segments[segments.len() - 1].end_offset();
            let ends_early = next.is_some_and(|n| end < n);
            if (t > 0 || ends_early) && next.is_some() {
                // Everything after an invalid batch is suspect: the log ends here.
                for &later in &bases[i + 1..] {
                    let path = segment::file_name(dir, later, ".log");
                    tracing::warn!(segment = %path.display(), log_end_offset = end,
                        "deleting a segment that follows an invalid batch");
                    truncated_bytes += dir.fs().file_len(&path).unwrap_or(0);
                    segment::delete_segment_files(dir, later)?;
                    dropped += 1;
                }
                break;
            }
        }
        let reopened = !segments.is_empty();
        if segments.is_empty() {
            let mut seg = Segment::create(dir, 0, now_ms)?;
            preallocate(&mut seg, &config);
            segments.push(seg);
        }
        let log_start = segments[0].base_offset();
        let log_end = segments[segments.len() - 1].end_offset();
        // The leader epoch cache: its checkpoint, plus the epochs of what recovery validated,
        // minus anything past the log end (Kafka's LogLoader rebuilds it the same way).
        let mut epochs = EpochCache::load(dir);
        let mut epochs_changed = epochs.truncate_from_end(log_end);
        for seg in segments.iter().filter(|s| s.end_offset() > recovery_point) {
            for h in seg.headers()? {
                epochs_changed |= epochs.assign(h.partition_leader_epoch, h.base_offset);
            }
        }
        if epochs_changed {
            epochs.persist()?;
        }
        let report = RecoveryReport {
            segments: segments.len(),
            validated_segments: validated,
            truncated_bytes,
            dropped_segments: dropped,
            log_start_offset: log_start,
            log_end_offset: log_end,
        };
        tracing::debug!(dir = %dir.display(), ?report, "partition log opened");
        let mut log = Self::assemble(dir, config, segments, now_ms, recovery_point, epochs);
        // After recovery the first flush fsyncs the directory too: a killed process may have
        // created segment files whose directory entries no fsync reached, and the recovery flush
        // of their data alone would let a later power cut take whole segments below the recovery
        // point (found by the cluster simulator running this log on `MemFs`, `frieda-sim` seed
        // 140: a roll, kill, restart, flush, power cut). After a clean shutdown (nothing
        // validated) the last flush synced it.
        log.dir_dirty = bases.is_empty() || validated > 0 || dropped > 0;
        log.reopened = reopened;
        log.ceiling = ceiling;
        log.load_producer_state()?;
        // What recovery kept may still be only in the page cache (a crashed process): make it
        // durable now, so the recovery point (and a high watermark that follows it) is the log end.
        // (A transaction index recovery rebuilt is durable already: `TxnIndexFile::rewrite`.)
        if validated > 0 || dropped > 0 {
            log.flush()?;
        }
        Ok((log, report))
    }

    /// Creates the log of a new partition in `dir`, a directory just made and still empty (the
    /// broker's CreateTopics and CreatePartitions): one empty segment, whose `.log` is the one
    /// file made, and nothing read. [`open_in`](Self::open_in) of an empty directory gives the
    /// same log after a dozen more file system calls (listings, reads of checkpoints and
    /// snapshots that cannot exist yet, removals of stray files; issue 58 goal 7). The first
    /// flush fsyncs the directory.
    ///
    /// Errors: [`LogError::OpenFilesBudget`] past the open-file budget, `LogError::Io` creating
    /// the `.log`.
    pub fn create_in_empty(
        dir: &LogDir,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<PartitionLog, LogError> {
        let mut seg = Segment::create_in_empty_dir(dir, 0, now_ms)?;
        preallocate(&mut seg, &config);
        let segments = vec![seg];
        let epochs = EpochCache::empty(dir);
        let mut log = Self::assemble(dir, config, segments, now_ms, 0, epochs);
        log.dir_dirty = true;
        Ok(log)
    }

    /// A log of `segments` (at least one; the last is the active one) with nothing unflushed,
    /// no producers and its directory not marked for an fsync.
    fn assemble(
        dir: &LogDir,
        config: LogConfig,
        segments: Vec<Segment>,
        now_ms: i64,
        recovery_point: i64,
        epochs: EpochCache,
    ) -> PartitionLog {
        let log_start = segments[0].base_offset();
        let log_end = segments[segments.len() - 1].end_offset();
        let interval = config.index_interval_bytes;
        let shared = Arc::new(Shared {
            log_start: AtomicI64::new(log_start),
            log_end: AtomicI64::new(log_end),
            index_interval: AtomicI64::new(i64::try_from(interval).unwrap_or(i64::MAX)),
            segments: RwLock::new(segments.iter().map(|s| s.shared.clone()).collect()),
            cache: RwLock::new(TailCache::new(config.tail_cache_bytes)),
            offline: AtomicBool::new(false),
            recovery_point: AtomicI64::new(recovery_point.min(log_end)),
            frontier: RwLock::new(TxnFrontier::default()),
            dir: dir.clone(),
        });
        PartitionLog {
            dir: dir.clone(),
            config,
            segments,
            shared,
            unflushed: 0,
            last_flush_ms: now_ms,
            dir_dirty: false,
            dir_gen: 0,
            recovery_point: recovery_point.min(log_end),
            leader_epoch: -1,
            epochs,
            producers: ProducerStateManager::default(),
            reopened: false,
            ceiling: None,
            truncations: 0,
        }
    }

    /// Every offset below this was fsync'ed (Kafka's recovery point): persist it in the
    /// broker's checkpoint and pass it to [`open_from`](Self::open_from) after a restart.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    /// Why the log went offline (a failed fsync or write), if it did.
    pub fn offline_reason(&self) -> Option<&'static str> {
        self.shared
            .offline
            .load(Ordering::Acquire)
            .then_some("an fsync or write of this log failed; its unsynced data is suspect until the broker restarts and recovers it from disk")
    }

    /// Takes the log offline after a failed fsync or write (PostgreSQL's "fsyncgate": the kernel
    /// may have dropped the unsynced pages, so a retried fsync could succeed without them). Appends
    /// and reads then fail with `LogError::Offline` until the log is reopened.
    fn go_offline(&self, what: &str, e: &dyn std::fmt::Display) {
        if !self.shared.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(dir = %self.dir.display(), error = %e,
                "{what} failed: the partition log is offline (appends and reads answer KAFKA_STORAGE_ERROR) until the broker restarts and recovers it from disk");
        }
    }

    fn check_online(&self) -> Result<(), LogError> {
        if self.shared.offline.load(Ordering::Acquire) {
            return Err(LogError::Offline);
        }
        Ok(())
    }

    /// The range of the active segment's whole pages written since the last call. It only
    /// plans: the caller starts the writeback outside the partition's lock, on a low-priority
    /// thread (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`). Used after large appends, so
    /// that the page cache does not gather gigabytes of dirty pages that the kernel's flusher
    /// then writes back in one sweep, in which it also puts the tail pages of every other
    /// partition under writeback (an append to a page under writeback waits for the device).
    /// `None` when no whole page is new or the log is offline.
    pub fn plan_writeback(&mut self) -> Option<SegmentWriteback> {
        self.plan_writeback_at_least(1)
    }

    /// [`plan_writeback`](Self::plan_writeback) once at least `min_bytes` of whole pages of the
    /// active segment are new: for small appends, which would otherwise start a writeback per
    /// page.
    pub fn plan_writeback_at_least(&mut self, min_bytes: u64) -> Option<SegmentWriteback> {
        if self.check_online().is_err() {
            return None;
        }
        self.active_mut().plan_writeback_at_least(min_bytes)
    }

    fn active(&self) -> &Segment {
        &self.segments[self.segments.len() - 1]
    }

    fn active_mut(&mut self) -> &mut Segment {
        let n = self.segments.len();
        &mut self.segments[n - 1]
    }

    /// Appends one produce partition's batches (already checked by
    /// [`validate_batches`](crate::validate_batches)) as the partition's leader.
    ///
    /// Assigns offsets from the log end offset, patches each batch's base offset (and its
    /// partition leader epoch, when one was set with [`set_leader_epoch`](Self::set_leader_epoch)),
    /// applies `LogAppendTime` if configured (`now_ms`, ms since epoch), rolls the segment first if
    /// the active one is non-empty and would exceed `segment.bytes` or is older than `segment.ms`,
    /// writes all bytes with one positional write (page cache, no fsync), adds sparse index
    /// entries, fills the tail cache and publishes the new log end offset. On a write error the
    /// segment is cut back to its previous length and `LogError::Io` is returned; the log stays
    /// usable after ENOSPC and goes offline after any other error. Malformed input (which
    /// `validate_batches` would have rejected) gives `LogError::Batch` and stores nothing.
    pub fn append(&mut self, mut records: BytesMut, now_ms: i64) -> Result<AppendInfo, LogError> {
        self.check_online()?;
        let spans = batch_spans(&records)?;
        let base_offset = self.log_end_offset();
        let log_append = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut next = base_offset;
        let mut headers = Vec::with_capacity(spans.len());
        for &(p, total) in &spans {
            let batch = &mut records[p..p + total];
            patch_base_offset(batch, next);
            if self.leader_epoch >= 0 {
                patch_leader_epoch(batch, self.leader_epoch);
            }
            if log_append {
                set_log_append_time(batch, now_ms);
            }
            let h = BatchHeader::parse(batch)?;
            next = h.last_offset() + 1;
            headers.push(h);
        }
        let mut info = self.write_batches(records, &spans, &headers, now_ms)?;
        info.log_append_time = if log_append { now_ms } else { -1 };
        Ok(info)
    }

    /// Appends batches a follower fetched from its leader: their offsets, leader epochs and
    /// timestamps are kept. Each batch must start at or after the log end offset (gaps are
    /// legal: the leader's log may be compacted) and after the previous one.
    ///
    /// Errors: `LogError::Batch` (`InvalidRecord`) for a batch below the log end offset or out
    /// of order, else as [`append`](Self::append).
    pub fn append_replicated(
        &mut self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.check_online()?;
        let spans = batch_spans(&records)?;
        let mut expected = self.log_end_offset();
        let mut headers = Vec::with_capacity(spans.len());
        for &(p, _) in &spans {
            let h = BatchHeader::parse(&records[p..])?;
            if h.base_offset < expected {
                return Err(BatchError::InvalidRecord(format!(
                    "replicated batch at offset {} is below the next expected offset {expected}",
                    h.base_offset
                ))
                .into());
            }
            expected = h.last_offset() + 1;
            headers.push(h);
        }
        self.write_batches(records, &spans, &headers, now_ms)
    }

    /// Writes batches whose headers are final (`headers`, one per span of `records`): rolls if
    /// needed, one positional write, cache, epoch cache, log end offset.
    fn write_batches(
        &mut self,
        records: BytesMut,
        spans: &[(usize, usize)],
        headers: &[BatchHeader],
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let (Some(first), Some(last)) = (headers.first(), headers.last()) else {
            return Err(BatchError::InvalidRecord("empty record set".into()).into());
        };
        let base_offset = first.base_offset;
        let last_offset = last.last_offset();
        let record_count: u64 = headers
            .iter()
            .map(|h| u64::try_from(h.records_count).unwrap_or(0))
            .sum();
        if self.should_roll(records.len(), last_offset, now_ms) {
            self.roll(now_ms)?;
        }
        let interval = self.config.index_interval_bytes;
        if let Err(e) = self
            .active_mut()
            .append(&records, headers, interval, now_ms)
        {
            // A full disk is refused cleanly (the write was cut back); any other write error
            // leaves the log suspect.
            if !matches!(&e, LogError::Io(io) if is_out_of_space(io)) {
                self.go_offline("a write", &e);
            }
            return Err(e);
        }
        self.note_created_files();
        if let Err(e) = self.record_producers(&records, spans, headers) {
            // The batches are written but their transaction index entry is not: the log is
            // suspect until a restart rebuilds the index from the log.
            self.go_offline("writing the transaction index", &e);
            return Err(e);
        }
        let mut epoch_changed = false;
        for h in headers {
            epoch_changed |= self.epochs.assign(h.partition_leader_epoch, h.base_offset);
        }
        if epoch_changed {
            // Rare (a leadership change): the checkpoint is small and written durably.
            if let Err(e) = self.epochs.persist() {
                self.go_offline("writing the leader epoch checkpoint", &e);
                return Err(e);
            }
        }
        let data = records.freeze();
        if self.config.tail_cache_bytes > 0 {
            let mut cache = self.shared.cache.write();
            for (&(p, total), h) in spans.iter().zip(headers) {
                cache.push(h.base_offset, h.last_offset(), data.slice(p..p + total));
            }
        }
        self.shared
            .log_end
            .store(last_offset + 1, Ordering::Release);
        self.unflushed = self.unflushed.saturating_add(record_count);
        debug_assert_eq!(
            self.active().end_offset(),
            self.log_end_offset(),
            "the active segment ends at the log end offset"
        );
        Ok(AppendInfo {
            base_offset,
            last_offset,
            log_append_time: -1,
            log_start_offset: self.log_start_offset(),
            bytes: data.len(),
        })
    }

    /// The leader epoch stamped on appended batches (KIP-101); -1 (the default) leaves the
    /// producer's value. Set by the broker when it becomes the partition's leader; a new epoch
    /// is recorded at once as starting at the log end offset (Kafka's
    /// `maybeAssignEpochStartOffset`), so OffsetForLeaderEpoch answers a follower that still has
    /// an older epoch's unreplicated tail even before this leader appends anything.
    ///
    /// Errors: the leader epoch checkpoint cannot be written (the log goes offline).
    pub fn set_leader_epoch(&mut self, epoch: i32) -> Result<(), LogError> {
        self.leader_epoch = epoch;
        let leo = self.log_end_offset();
        if epoch >= 0 && self.epochs.assign(epoch, leo) {
            if let Err(e) = self.epochs.persist() {
                self.go_offline("writing the leader epoch checkpoint", &e);
                return Err(e);
            }
        }
        Ok(())
    }

    /// The leader epoch cache (KIP-101): which epoch wrote which offsets.
    pub fn epochs(&self) -> &Epochs {
        &self.epochs
    }

    /// The latest leader epoch in the log, or -1.
    pub fn latest_epoch(&self) -> i32 {
        self.epochs.latest_epoch()
    }

    /// OffsetForLeaderEpoch (KIP-101/279): the largest epoch `<= epoch` in this log and the
    /// offset where the next epoch starts (the log end offset for the latest). `(-1, -1)` for an
    /// unknown or future epoch.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    /// Truncates the log to end before `offset` (a follower whose log diverged from its new
    /// leader's; KIP-101): the batch containing `offset` and everything after go, whole later
    /// segments are removed, the leader epoch cache and the recovery point follow. The cut is
    /// durable when this returns (later segments' files deleted, the cut segment and the
    /// directory synced: see `make_truncation_durable`), and a recovery point checkpoint from
    /// before it is overridden by [`RECOVERY_CEILING_FILE`]; the returned list is empty (kept
    /// for the caller's `delete_files`). At the log end only epochs starting there are
    /// dropped; past it, nothing happens.
    ///
    /// Errors: `LogError::Offline`, `LogError::Io` (the log goes offline: it may be half cut).
    pub fn truncate_to(&mut self, offset: i64) -> Result<RemovedSegments, LogError> {
        self.check_online()?;
        if offset >= self.log_end_offset() {
            // At the log end: only an epoch that starts there goes (one this replica began as a
            // leader and wrote nothing in), so its next fetch does not claim it (KIP-595's
            // last fetched epoch).
            if offset == self.log_end_offset() && self.epochs.truncate_from_end(offset) {
                if let Err(e) = self.epochs.persist() {
                    self.go_offline("writing the leader epoch checkpoint", &e);
                    return Err(e);
                }
            }
            return Ok(RemovedSegments::none());
        }
        let keep = self
            .segments
            .iter()
            .rposition(|s| s.base_offset() <= offset)
            .unwrap_or(0);
        // Before anything is cut: a recovery point checkpoint from before this truncation may
        // vouch for segments from the one cut here on, which the cut, the deletions and what is
        // appended next change unsynced. The ceiling, durable first, makes a reopen validate
        // them until a flush passes the old recovery point (found by `crash_tests`: a segment
        // trusted that way served a torn batch; with a crash inside the truncation, a cut
        // segment was trusted to end at the next one's base).
        let cut_base = self.segments[keep].base_offset();
        if self.recovery_point > cut_base {
            if let Err(e) = self.raise_recovery_ceiling(cut_base, self.recovery_point) {
                self.go_offline("writing the recovery point ceiling", &e);
                return Err(e);
            }
        }
        let removed: Vec<Segment> = self.segments.drain(keep + 1..).collect();
        self.shared.segments.write().truncate(keep + 1);
        let interval = self.config.index_interval_bytes;
        if let Err(e) = self.active_mut().truncate_to_offset(offset, interval) {
            self.go_offline("truncating", &e);
            return Err(e);
        }
        self.note_created_files();
        let leo = self.active().end_offset();
        self.shared.log_end.store(leo, Ordering::Release);
        if self.log_start_offset() > leo {
            // Cut below a log start moved inside the active segment: the log is empty at `leo`.
            self.shared.log_start.store(leo, Ordering::Release);
        }
        self.shared.cache.write().trim_from(leo);
        let removed_count = removed.len();
        self.truncations += 1;
        if let Err(e) = self.make_truncation_durable(removed, leo) {
            self.go_offline("making a truncation durable", &e);
            return Err(e);
        }
        self.recovery_point = self.recovery_point.min(leo);
        self.shared
            .recovery_point
            .store(self.recovery_point, Ordering::Release);
        if self.epochs.truncate_from_end(leo) {
            if let Err(e) = self.epochs.persist() {
                self.go_offline("writing the leader epoch checkpoint", &e);
                return Err(e);
            }
        }
        if let Err(e) = self.load_producer_state() {
            self.go_offline("rebuilding the producer state after a truncation", &e);
            return Err(e);
        }
        tracing::info!(dir = %self.dir.display(), offset, log_end_offset = leo,
            removed_segments = removed_count, "truncated the log");
        Ok(RemovedSegments::none())
    }

    /// Makes a truncation to `leo` durable before anything appended after it can be: deletes
    /// the `removed` segments' files and the producer snapshots above `leo`, syncs the cut
    /// (active) segment and then the directory. Without it a power cut could keep records
    /// appended after the truncation (in a new segment) and lose the cut itself, mixing the
    /// cut tail of one leader with the records of the next in one log: a follower would then
    /// hold, below its last epoch, records its leader never had, and no epoch comparison
    /// would find them (found by `crash_tests`, seed 20).
    ///
    /// Errors: `LogError::Io` from a deletion or a sync.
    fn make_truncation_durable(&mut self, removed: Vec<Segment>, leo: i64) -> Result<(), LogError> {
        RemovedSegments {
            segments: removed,
            snapshots: Vec::new(),
        }
        .delete_files()?;
        for o in snapshot::list(&self.dir)?.into_iter().filter(|&o| o > leo) {
            snapshot::delete(&self.dir, o);
        }
        self.active_mut().flush()?;
        self.dir.sync()?;
        Ok(())
    }

    /// Empties the log and starts it again at `offset` (Kafka's `truncateFullyAndStartAt`): a
    /// follower of a tiered partition whose leader no longer holds locally the offsets this log
    /// would fetch next (OFFSET_MOVED_TO_TIERED_STORAGE, KIP-405) starts over at an offset the
    /// leader still holds; what lies below is in remote storage. Every segment is removed, its
    /// files deleted and the directory synced before this returns (as for
    /// [`truncate_to`](Self::truncate_to); the returned list is empty), the log start, log end and
    /// recovery point become `offset`, and the producer snapshots are emptied. The leader epoch
    /// cache becomes `epochs_below` (`(epoch, first offset)`, ascending; those at or above
    /// `offset` are ignored): the lineage of the records below `offset`, which only the remote
    /// tier holds (Kafka's `buildRemoteLogAuxState` restores the leader epoch checkpoint of the
    /// remote segment below the new start). Without it, as a leader this log would answer
    /// OffsetsForLeaderEpoch for an epoch that ended below `offset` with `offset`, and a
    /// follower holding other records there would keep them (issue 57, simulator seed 29819).
    /// The next appended batches add their epochs. The producer state becomes
    /// `producer_snapshot` when given (a snapshot in Kafka's format of the producers before
    /// `offset`: KIP-405's producer snapshot of the remote segment ending below it, written as
    /// this log's snapshot at `offset`), else empty, and then an unknown producer's next batch
    /// is accepted at any sequence; a snapshot that does not decode counts as none (logged).
    ///
    /// Errors: `LogError::Offline`; `LogError::Io` from creating the new segment or writing
    /// the epoch checkpoint (the log goes offline).
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
        now_ms: i64,
        producer_snapshot: Option<&[u8]>,
        epochs_below: &[(i32, i64)],
    ) -> Result<RemovedSegments, LogError> {
        self.check_online()?;
        // As in `truncate_to`, before anything changes.
        let lowest = self.segments[0].base_offset().min(offset);
        if self.recovery_point > lowest {
            if let Err(e) = self.raise_recovery_ceiling(lowest, self.recovery_point) {
                self.go_offline("writing the recovery point ceiling", &e);
                return Err(e);
            }
        }
        let collision = self.segments.iter().position(|s| s.base_offset() == offset);
        if let Some(i) = collision {
            // Readers holding it go on reading from its open files.
            if let Err(e) = self.segments[i].delete_files() {
                self.go_offline("starting the log again", &e);
                return Err(e);
            }
        }
        let mut new = match Segment::create(&self.dir, offset, now_ms) {
            Ok(s) => s,
            Err(e) => {
                self.go_offline("starting the log again", &e);
                return Err(e);
            }
        };
        preallocate(&mut new, &self.config);
        let mut removed: Vec<Segment> = self.segments.drain(..).collect();
        if let Some(i) = collision {
            drop(removed.swap_remove(i));
        }
        *self.shared.segments.write() = vec![new.shared.clone()];
        self.segments.push(new);
        self.shared.log_start.store(offset, Ordering::Release);
        self.shared.log_end.store(offset, Ordering::Release);
        {
            let mut cache = self.shared.cache.write();
            cache.trim_from(offset);
            cache.trim_below(offset);
        }
        self.recovery_point = offset;
        self.shared.recovery_point.store(offset, Ordering::Release);
        self.unflushed = 0;
        self.mark_dir_dirty();
        let removed_count = removed.len();
        self.truncations += 1;
        // As for `truncate_to`: the old segments and producer snapshots are gone for good
        // before anything appended at `offset` can be durable.
        for o in snapshot::list(&self.dir)? {
            snapshot::delete(&self.dir, o);
        }
        if let Err(e) = self.make_truncation_durable(removed, offset) {
            self.go_offline("starting the log again", &e);
            return Err(e);
        }
        let cleared = self.epochs.truncate_from_end(i64::MIN);
        if self.epochs.assign_lineage(epochs_below, offset) || cleared {
            if let Err(e) = self.epochs.persist() {
                self.go_offline("writing the leader epoch checkpoint", &e);
                return Err(e);
            }
        }
        let restored = match producer_snapshot.map(ProducerStateManager::from_snapshot) {
            Some(Ok(state)) => {
                if let Err(e) = snapshot::write(&self.dir, offset, &state) {
                    self.go_offline("writing the producer snapshot", &e);
                    return Err(e);
                }
                true
            }
            Some(Err(why)) => {
                tracing::warn!(dir = %self.dir.display(), offset, %why,
                    "the producer snapshot to start again from does not decode; starting with no producers");
                false
            }
            None => false,
        };
        if let Err(e) = self.load_producer_state() {
            self.go_offline("emptying the producer state", &e);
            return Err(e);
        }
        if !restored {
            self.producers.set_may_have_forgotten();
        }
        debug_assert_eq!(self.active().end_offset(), offset);
        tracing::info!(dir = %self.dir.display(), offset, removed_segments = removed_count,
            "emptied the log; it starts again at the offset");
        Ok(RemovedSegments::none())
    }

    /// Marks the directory for the next flush's fsync if the active segment made files (its
    /// index files, made with its first index entry).
    fn note_created_files(&mut self) {
        if self.active_mut().take_created_files() {
            self.mark_dir_dirty();
        }
    }

    /// Notes that the directory changed (a file created or removed): the next flush fsyncs it.
    fn mark_dir_dirty(&mut self) {
        self.dir_dirty = true;
        self.dir_gen += 1;
    }

    /// Writes (durably: temporary file, fsync, rename, directory fsync) the
    /// [`RECOVERY_CEILING_FILE`] after a truncation to `truncated_to` from a log durable up to
    /// `highest`, merged with one already there (the lower offset, the higher recovery point).
    ///
    /// Errors: `LogError::Io` from the file system.
    fn raise_recovery_ceiling(&mut self, truncated_to: i64, highest: i64) -> Result<(), LogError> {
        let (t, r) = match self.ceiling {
            Some((t, r)) => (t.min(truncated_to), r.max(highest)),
            None => (truncated_to, highest),
        };
        let path = self.dir.join(RECOVERY_CEILING_FILE);
        self.dir
            .replace_durably(&path, format!("{t} {r}\n").as_bytes())?;
        self.ceiling = Some((t, r));
        Ok(())
    }

    fn should_roll(&self, len: usize, last_offset: i64, now_ms: i64) -> bool {
        let a = self.active();
        if a.is_empty() {
            return false;
        }
        let new_size = a.size() + len as u64;
        // Index positions are u32, offsets relative to the segment's base i32.
        if new_size > self.config.segment_bytes
            || new_size > u64::from(u32::MAX)
            || last_offset - a.base_offset() > i64::from(i32::MAX)
            || a.index_full(self.config.segment_index_bytes)
        {
            return true;
        }
        let period = self.max_segment_ms().max(limits::min_segment_ms());
        let aged = a
            .rolling_ts
            .is_some_and(|t| now_ms.saturating_sub(t) > period);
        if !aged {
            return false;
        }
        // A time-based roll is optional: near the open-file budget the segment stays active.
        if limits::room_for_optional(1) {
            return true;
        }
        if BUDGET_WARNED
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(1000)
        {
            tracing::warn!(dir = %self.dir.display(), open_segment_files = limits::open_segment_files(),
                budget = limits::open_files_budget(),
                "segment.ms roll skipped: the open-file budget (log.segment.files.max) is nearly used");
        }
        false
    }

    /// How long the active segment may stay open, ms: `segment.ms`, or for a compacted log
    /// `min(segment.ms, max.compaction.lag.ms)` so records become cleanable in time (Kafka's
    /// `LogConfig.maxSegmentMs`, KIP-354).
    fn max_segment_ms(&self) -> i64 {
        if self.config.cleanup_compact {
            self.config
                .segment_ms
                .min(self.config.max_compaction_lag_ms)
        } else {
            self.config.segment_ms
        }
    }

    /// Rolls now (Kafka's `UnifiedLog.roll`): closes the active segment and starts a new one
    /// at the log end offset, unless the active one is empty. For a caller that decides the
    /// segment boundaries itself (the cluster simulator's replicas).
    ///
    /// Errors: `LogError::Offline`; `LogError::Io` from creating the segment.
    pub fn roll_segment(&mut self, now_ms: i64) -> Result<(), LogError> {
        self.check_online()?;
        if self.active().is_empty() {
            return Ok(());
        }
        self.roll(now_ms)
    }

    /// Closes the active segment and starts a new one at the log end offset, writing a
    /// producer snapshot at that offset first.
    fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        let base = self.log_end_offset();
        if let Err(e) = snapshot::write(&self.dir, base, &self.producers) {
            // Only a longer replay at the next recovery.
            tracing::warn!(dir = %self.dir.display(), offset = base, error = %e, "cannot write a producer snapshot");
        }
        // A preallocated segment is cut to its size before the next one exists (as Kafka's
        // `LocalLog.roll`): a segment followed by another is trusted at a restart once the
        // recovery point passes it, and must not end in zeros then.
        self.active_mut().trim()?;
        let mut new = Segment::create(&self.dir, base, now_ms)?;
        preallocate(&mut new, &self.config);
        self.active_mut().close_active()?;
        self.note_created_files();
        tracing::debug!(dir = %self.dir.display(), base_offset = base, "rolled segment");
        self.shared.segments.write().push(new.shared.clone());
        self.segments.push(new);
        self.mark_dir_dirty();
        Ok(())
    }

    /// `fdatasync` of every segment file and index with unflushed data (and the directory after
    /// segments were created or deleted). Resets [`unflushed_messages`](Self::unflushed_messages)
    /// and advances the recovery point to the log end offset.
    ///
    /// Errors: `LogError::Offline` if the log is offline; a failed sync takes it offline and
    /// returns the `LogError::Io` (it is never retried: see [`FlushTicket`]).
    pub fn flush(&mut self) -> Result<(), LogError> {
        match self.begin_flush()? {
            None => Ok(()),
            Some(ticket) => {
                let r = ticket.sync();
                self.finish_flush(&ticket, r.is_ok());
                r
            }
        }
    }

    /// First half of a flush that does not hold the writer's lock while syncing: notes which
    /// files have unsynced writes and how many records they cover (their dirty marks stay
    /// until the ticket is finished, so a flush begun meanwhile syncs them too and never
    /// moves the recovery point over bytes only this ticket would sync: found by
    /// `crash_tests`, seed 6). `None` when there is nothing to sync. Call [`FlushTicket::sync`] (any thread, no
    /// lock), then [`finish_flush`](Self::finish_flush) with the ticket. Appends made after this
    /// call are not covered by the ticket and stay counted as unflushed.
    ///
    /// Errors: `LogError::Io` if a file handle cannot be duplicated.
    pub fn begin_flush(&mut self) -> Result<Option<FlushTicket>, LogError> {
        self.check_online()?;
        let dirty = self.segments.iter().any(|s| s.is_dirty());
        if self.unflushed == 0
            && !self.dir_dirty
            && !dirty
            && self.recovery_point >= self.log_end_offset()
        {
            return Ok(None);
        }
        let mut segments = Vec::new();
        for s in &mut self.segments {
            if let Some(sync) = s.begin_flush()? {
                segments.push(sync);
            }
        }
        let dir = self.dir_dirty.then(|| self.dir.clone());
        Ok(Some(FlushTicket {
            segments,
            dir,
            dir_gen: self.dir_gen,
            messages: self.unflushed,
            end_offset: self.log_end_offset(),
            truncations: self.truncations,
        }))
    }

    /// Second half of [`begin_flush`](Self::begin_flush): on success the records the ticket
    /// covered stop counting as unflushed, the recovery point advances to the ticket's log end
    /// offset and the `flush.ms` clock restarts. On failure the log goes offline: a failed fsync
    /// is never retried, because the kernel may already have dropped the unsynced pages and a
    /// second fsync would then "succeed" without them (PostgreSQL's fsyncgate, 2018). Appends and
    /// reads fail with `LogError::Offline` until the broker reopens the log from disk.
    pub fn finish_flush(&mut self, ticket: &FlushTicket, synced: bool) {
        if synced {
            self.unflushed = self.unflushed.saturating_sub(ticket.messages);
            for sync in &ticket.segments {
                // From the back: a ticket's segments are mostly the active one.
                if let Some(seg) = self
                    .segments
                    .iter_mut()
                    .rev()
                    .find(|s| Arc::ptr_eq(&s.shared, sync.segment()))
                {
                    seg.finish_flush(sync.generation());
                }
            }
            if ticket.dir.is_some() && ticket.dir_gen == self.dir_gen {
                self.dir_dirty = false;
            }
            // A truncation while the ticket synced (a follower's, under the lock the sync does
            // not hold) cut below its end, and what was appended since at those offsets is not
            // synced: the recovery point stays where the truncation left it (found by
            // `crash_tests`, seed 4: it rose above the log end).
            if ticket.truncations == self.truncations {
                self.recovery_point = self.recovery_point.max(ticket.end_offset);
            }
            debug_assert!(
                self.recovery_point <= self.log_end_offset(),
                "the recovery point never passes the log end"
            );
            self.shared
                .recovery_point
                .store(self.recovery_point, Ordering::Release);
            self.last_flush_ms = wall_clock_ms();
            if self
                .ceiling
                .is_some_and(|(_, highest)| self.recovery_point >= highest)
            {
                // Best effort: a ceiling left behind only makes the next recovery validate more.
                match self
                    .dir
                    .remove_if_exists(&self.dir.join(RECOVERY_CEILING_FILE))
                {
                    Ok(()) => self.ceiling = None,
                    Err(e) => {
                        tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove the recovery point ceiling")
                    }
                }
            }
        } else {
            self.go_offline("an fsync", &"the flush ticket's sync returned an error");
        }
    }

    /// True when segments were rolled (or recovered) since the last flush: the recovery point
    /// lies below the active segment, and a flush is due to move it, as Kafka flushes a segment
    /// when it rolls.
    pub fn has_unflushed_closed_segments(&self) -> bool {
        self.recovery_point < self.active().base_offset()
    }

    /// Records appended since the last flush (for `flush.messages`).
    pub fn unflushed_messages(&self) -> u64 {
        self.unflushed
    }

    /// Wall-clock time (ms since epoch) of the last flush, or `now_ms` given to `open` (for `flush.ms`).
    pub fn last_flush_ms(&self) -> i64 {
        self.last_flush_ms
    }

    /// Removes whole closed segments, oldest first, while the oldest is expired by `retention.ms`
    /// (`now_ms - its largest timestamp > retention_ms`) or `retention.bytes` (total size minus its
    /// size `>= retention_bytes`); only when `cleanup.policy` contains `delete` (a `compact`-only
    /// log is never cut by time or size). The active segment is never removed, but if it is
    /// expired by time and non-empty it is rolled first (as Kafka does), so its data goes in the
    /// same pass. Advances the log start offset; readers see it at once. The removed segments'
    /// files are deleted by the caller, after releasing the partition's lock.
    pub fn enforce_retention(
        &mut self,
        now_ms: i64,
    ) -> Result<(RetentionReport, RemovedSegments), LogError> {
        let report = RetentionReport {
            deleted_segments: 0,
            deleted_bytes: 0,
            log_start_offset: self.log_start_offset(),
        };
        if !self.config.cleanup_delete {
            return Ok((report, RemovedSegments::none()));
        }
        self.check_online()?;
        let active = self.active();
        if !active.is_empty()
            && retention::expired_by_time(&self.config, active.largest_timestamp(), now_ms)
            && limits::room_for_optional(1)
        {
            self.roll(now_ms)?;
        }
        let closed: Vec<SegmentInfo> = self.segments[..self.segments.len() - 1]
            .iter()
            .map(|s| SegmentInfo {
                size: s.size(),
                largest_timestamp: s.largest_timestamp(),
            })
            .collect();
        let n = retention::deletable_prefix(&self.config, &closed, self.size_bytes(), now_ms);
        Ok(self.remove_for_retention(n, report))
    }

    /// Local retention of a tiered log (KIP-405): removes, oldest first, closed segments that
    /// were copied to remote storage (every offset at or below `copied_end`, in copies whose
    /// batches' leader epochs `copied_epochs` (`(epoch, first offset)`, ascending) agree with
    /// this log's: records of a lineage this log no longer has, left in the bucket by an
    /// unclean election or a power cut without fsync, cover nothing here; issue 57) while
    /// `local_retention_ms` / `local_retention_bytes` (the resolved `local.retention.*`; -1 =
    /// unbounded) say they are past the local tier, as [`enforce_retention`] does for the whole
    /// log. A segment not copied yet stays, and every later one with it. Advances the log start
    /// offset of this (local) log; the records stay readable from the remote tier. The caller
    /// deletes the returned segments' files after releasing the lock.
    ///
    /// Errors: `LogError::Offline`.
    ///
    /// [`enforce_retention`]: Self::enforce_retention
    pub fn enforce_local_retention(
        &mut self,
        now_ms: i64,
        local_retention_ms: i64,
        local_retention_bytes: i64,
        copied_end: i64,
        copied_epochs: &[(i32, i64)],
    ) -> Result<(RetentionReport, RemovedSegments), LogError> {
        let report = RetentionReport {
            deleted_segments: 0,
            deleted_bytes: 0,
            log_start_offset: self.log_start_offset(),
        };
        self.check_online()?;
        let copied_end =
            self.epochs
                .agrees_upto(copied_epochs, self.log_start_offset(), copied_end);
        let copied: Vec<SegmentInfo> = self.segments[..self.segments.len() - 1]
            .iter()
            .take_while(|s| s.end_offset() - 1 <= copied_end)
            .map(|s| SegmentInfo {
                size: s.size(),
                largest_timestamp: s.largest_timestamp(),
            })
            .collect();
        let local = LogConfig {
            retention_ms: local_retention_ms,
            retention_bytes: local_retention_bytes,
            ..self.config.clone()
        };
        let n = retention::deletable_prefix(&local, &copied, self.size_bytes(), now_ms);
        Ok(self.remove_for_retention_keeping_epochs(n, report))
    }

    /// Takes the `n` oldest segments out for retention (none when `n` is 0) and completes
    /// `report` with what went.
    fn remove_for_retention(
        &mut self,
        n: usize,
        report: RetentionReport,
    ) -> (RetentionReport, RemovedSegments) {
        self.remove_for_retention_with(n, report, true)
    }

    /// [`Self::remove_for_retention`] for local retention of a tiered log: the leader epoch
    /// cache keeps the epochs of the removed segments, whose records the remote tier still
    /// holds (Kafka truncates the cache only when the log start of the whole log moves). Cut
    /// to the local log start, an epoch that began below it would answer OffsetForLeaderEpoch
    /// for the epoch before with the local log start instead of where that epoch ended, and a
    /// returning former leader would keep records of its own that no other replica has
    /// (issue 57; found by the simulator, `replicas-disagree-below-hw`).
    fn remove_for_retention_keeping_epochs(
        &mut self,
        n: usize,
        report: RetentionReport,
    ) -> (RetentionReport, RemovedSegments) {
        self.remove_for_retention_with(n, report, false)
    }

    fn remove_for_retention_with(
        &mut self,
        n: usize,
        mut report: RetentionReport,
        truncate_epochs: bool,
    ) -> (RetentionReport, RemovedSegments) {
        if n == 0 {
            return (report, RemovedSegments::none());
        }
        let removed = self.remove_oldest(n, truncate_epochs);
        report.deleted_segments = n;
        report.deleted_bytes = removed.segments.iter().map(Segment::size).sum();
        report.log_start_offset = self.log_start_offset();
        (report, removed)
    }

    /// Removes, oldest first, every closed segment whose records all lie below `offset` (never the
    /// active one) and advances the log start offset to the first remaining segment's base. For
    /// logs that keep only what is needed past a point (a Raft log purged after a snapshot). The
    /// caller deletes the returned segments' files after releasing the lock.
    ///
    /// Errors: `LogError::Offline`.
    pub fn remove_segments_below(&mut self, offset: i64) -> Result<RemovedSegments, LogError> {
        self.check_online()?;
        let n = self
            .segments
            .windows(2)
            .take_while(|w| w[1].base_offset() <= offset)
            .count();
        if n == 0 {
            return Ok(RemovedSegments::none());
        }
        Ok(self.remove_oldest(n, true))
    }

    /// Moves the log start offset up to `offset` (DeleteRecords, KIP-107; a follower taking its
    /// leader's log start; the persisted start after a restart): records below it are no longer
    /// served (OFFSET_OUT_OF_RANGE) even where they share a segment with later ones, and every
    /// closed segment wholly below it is removed (the caller deletes the returned segments'
    /// files after releasing the lock). An `offset` at or below the current start changes
    /// nothing; one past the log end offset is clamped to it (the active segment stays, empty
    /// of readable records).
    ///
    /// Errors: `LogError::Offline`.
    pub fn advance_log_start(&mut self, offset: i64) -> Result<RemovedSegments, LogError> {
        self.check_online()?;
        let offset = offset.min(self.log_end_offset());
        if offset <= self.log_start_offset() {
            return Ok(RemovedSegments::none());
        }
        self.shared.log_start.store(offset, Ordering::Release);
        self.shared.cache.write().trim_below(offset);
        // Producers whose batches were all below the new start are gone after a rebuild.
        self.producers.set_may_have_forgotten();
        if self.epochs.truncate_from_start(offset) {
            if let Err(e) = self.epochs.persist() {
                tracing::warn!(dir = %self.dir.display(), error = %e, "writing the leader epoch checkpoint failed");
            }
        }
        let n = self
            .segments
            .windows(2)
            .take_while(|w| w[1].base_offset() <= offset)
            .count();
        let removed = if n == 0 {
            RemovedSegments::none()
        } else {
            self.remove_oldest(n, true)
        };
        debug_assert_eq!(self.log_start_offset(), offset);
        Ok(removed)
    }

    /// Takes the `n` oldest segments out of the log (never the active one) and advances the log
    /// start offset to the next segment's base (or keeps it where it is if that is higher: a
    /// log start moved inside a segment by [`advance_log_start`](Self::advance_log_start)).
    fn remove_oldest(&mut self, n: usize, truncate_epochs: bool) -> RemovedSegments {
        let n = n.min(self.segments.len() - 1);
        let removed: Vec<Segment> = self.segments.drain(..n).collect();
        let new_start = self.segments[0].base_offset().max(self.log_start_offset());
        self.shared.segments.write().drain(..n);
        self.shared.log_start.store(new_start, Ordering::Release);
        self.shared.cache.write().trim_below(new_start);
        self.mark_dir_dirty();
        if new_start > 0 {
            self.producers.set_may_have_forgotten();
        }
        if truncate_epochs && self.epochs.truncate_from_start(new_start) {
            if let Err(e) = self.epochs.persist() {
                // Not a data fault: the cache is rebuilt from its checkpoint next time, with a
                // stale start the next successful write corrects.
                tracing::warn!(dir = %self.dir.display(), error = %e, "writing the leader epoch checkpoint failed");
            }
        }
        // Snapshots below the first segment left are never loaded again.
        let first_base = self.segments[0].base_offset();
        let snapshots = snapshot::list(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|&o| o < first_base)
            .map(|o| (self.dir.clone(), o))
            .collect();
        RemovedSegments {
            segments: removed,
            snapshots,
        }
    }

    /// Whether the log cleaner should clean this log now, and what it may rewrite (step 1 of the
    /// cleaner, see [`crate::cleaner`]): call under the partition's lock, then
    /// [`CleaningCandidate::clean`] without it. `checkpoint` is the first dirty offset the last
    /// pass left (the cleaner checkpoint; any value outside the log means "from the start"),
    /// `latest_delete_horizon` the latest horizon that pass stamped (-1 if none). `None` for
    /// logs without `compact` in `cleanup.policy`, offline logs, and logs not dirty enough.
    pub fn cleaning_candidate(
        &self,
        checkpoint: i64,
        latest_delete_horizon: i64,
        now_ms: i64,
    ) -> Option<CleaningCandidate> {
        if self.check_online().is_err() {
            return None;
        }
        let frontier = self.producers.frontier();
        let first_unstable = frontier
            .ongoing
            .keys()
            .chain(frontier.unreplicated.values())
            .min()
            .copied();
        cleaner::candidate(
            &self.dir,
            &self.config,
            &self.segments,
            first_unstable,
            checkpoint,
            latest_delete_horizon,
            now_ms,
        )
    }

    /// Installs what [`CleaningCandidate::clean`] wrote (step 3 of the cleaner): under the
    /// partition's lock, replaces each cleaned group of segments by its cleaned segment if the
    /// group is still there unchanged, and drops the tail cache below it. Call
    /// [`PendingSwap::finish`] after releasing the lock; it renames and deletes the files (or,
    /// when the log changed meanwhile, discards the cleaned files).
    pub fn install_cleaned(&mut self, cleaned: CleanedLog) -> PendingSwap {
        let bases: Vec<i64> = cleaned.groups.iter().map(|g| g.new.base_offset()).collect();
        let positions: Option<Vec<usize>> = cleaned
            .groups
            .iter()
            .map(|g| {
                let i = self
                    .segments
                    .iter()
                    .position(|s| Arc::ptr_eq(&s.shared, &g.old[0]))?;
                let unchanged = i + g.old.len() < self.segments.len()
                    && g.old
                        .iter()
                        .zip(&self.segments[i..])
                        .all(|(o, s)| Arc::ptr_eq(o, &s.shared));
                unchanged.then_some(i)
            })
            .collect();
        let Some(positions) = positions.filter(|_| self.check_online().is_ok()) else {
            tracing::warn!(dir = %self.dir.display(), "the log changed while it was cleaned; discarding the cleaned segments");
            return PendingSwap {
                dir: self.dir.clone(),
                bases,
                replaced: Vec::new(),
                installed: false,
            };
        };
        let mut replaced = Vec::new();
        let mut cleaned_end = self.log_start_offset();
        // Back to front, so earlier positions stay valid.
        for (g, &i) in cleaned.groups.into_iter().zip(&positions).rev() {
            let k = g.old.len();
            let end = self.segments[i + k].base_offset();
            debug_assert_eq!(
                g.new.end_offset(),
                end,
                "a cleaned group ends where it began"
            );
            cleaned_end = cleaned_end.max(end);
            replaced.extend(g.old[1..].iter().map(|s| s.base_offset));
            self.shared
                .segments
                .write()
                .splice(i..i + k, [g.new.shared.clone()]);
            self.segments.splice(i..i + k, [g.new]);
        }
        self.shared.cache.write().trim_below(cleaned_end);
        debug_assert!(
            self.segments
                .windows(2)
                .all(|w| w[0].end_offset() == w[1].base_offset()),
            "every closed segment ends where the next begins"
        );
        PendingSwap {
            dir: self.dir.clone(),
            bases,
            replaced,
            installed: true,
        }
    }

    /// Records the producer state of batches just written (`spans` of `records`, with their
    /// final `headers`): data batches, and markers, which close transactions; an aborted one is
    /// added to the active segment's transaction index.
    fn record_producers(
        &mut self,
        records: &[u8],
        spans: &[(usize, usize)],
        headers: &[BatchHeader],
    ) -> Result<(), LogError> {
        let mut changed = false;
        for (&(p, total), h) in spans.iter().zip(headers) {
            if !h.is_control() {
                if h.producer_id >= 0 && self.producers.record(h, h.base_offset).is_some() {
                    changed = true;
                }
                continue;
            }
            match read_control_record(&records[p..p + total], h) {
                Ok(ControlRecord::Marker(m)) => {
                    let done = self.producers.record_marker(
                        h.producer_id,
                        h.producer_epoch,
                        m,
                        h.base_offset,
                        h.max_timestamp,
                    );
                    if let Some(done) = done {
                        changed = true;
                        if done.aborted {
                            let e = AbortedTxn {
                                producer_id: done.producer_id,
                                first_offset: done.first_offset,
                                last_offset: done.last_offset,
                                last_stable_offset: self.producers.last_stable_offset_after(&done),
                            };
                            self.active_mut().append_aborted(e)?;
                            // The segment's first entry creates its `.txnindex`: the
                            // directory entry is synced with the next flush.
                            self.mark_dir_dirty();
                        }
                    }
                }
                Ok(ControlRecord::Other) => {}
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), offset = h.base_offset, error = %e,
                        "an unreadable control record; ignored")
                }
            }
        }
        if changed {
            self.publish_frontier();
        }
        Ok(())
    }

    fn publish_frontier(&self) {
        *self.shared.frontier.write() = self.producers.frontier().clone();
    }

    /// Rebuilds the producer table, and the transaction index of every segment it replays:
    /// from the latest snapshot at or below both the second-to-last segment's base and the
    /// segment holding the recovery point (so at least one whole segment is replayed, and every
    /// segment recovery validated), else from the first segment with an empty table; then every
    /// batch after it (markers read for their type). Snapshots above the log end are deleted.
    ///
    /// Errors: `LogError::Io` / `Corrupt` reading the segments or writing an index.
    fn load_producer_state(&mut self) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        let mut snaps = snapshot::list(&self.dir)?;
        for &o in snaps.iter().filter(|&&o| o > leo) {
            snapshot::delete(&self.dir, o);
            // Durable with the next flush: a snapshot of records a power cut took must not
            // come back once other records fill its offsets (found by `crash_tests`, seed
            // 1793: it then described a batch straddling its offset as not written).
            self.mark_dir_dirty();
        }
        snaps.retain(|&o| o <= leo);
        let n = self.segments.len();
        let first_base = self.segments[0].base_offset();
        let second_last = self.segments[n.saturating_sub(2)].base_offset();
        let rp_segment = self
            .segments
            .iter()
            .rev()
            .find(|s| s.base_offset() <= self.recovery_point)
            .map_or(first_base, Segment::base_offset);
        let limit = second_last.min(rp_segment);
        let mut producers = ProducerStateManager::default();
        let mut start = first_base;
        // Not one below the first segment: the records between it and the first segment are
        // gone, so its producers may have written more than it says, and a stale sequence
        // refuses their next batch as out of order, where a forgotten producer is accepted
        // (found by `crash_tests`, seed 130: DeleteRecords, then a power cut took the
        // snapshot at the first segment's base).
        for &o in snaps
            .iter()
            .rev()
            .filter(|&&o| o <= limit && o >= first_base)
        {
            if let Some(p) = snapshot::read(&self.dir, o)? {
                producers = p;
                start = o.max(first_base);
                break;
            }
        }
        let mut rebuilt_segments = 0;
        for i in 0..n {
            let seg = self.segments[i].shared.clone();
            let (size, end) = {
                let st = seg.state.read();
                (st.size, st.end_offset)
            };
            if end <= start {
                continue;
            }
            let indexed = self.segments[i].aborted();
            let mut aborted: Vec<AbortedTxn> = if seg.base_offset >= start {
                Vec::new()
            } else {
                self.segments[i]
                    .aborted()
                    .into_iter()
                    .filter(|e| e.last_offset < start)
                    .collect()
            };
            scan_headers(&seg.log, 0, size, |pos, h| {
                if h.base_offset < start {
                    return Ok(true);
                }
                if !h.is_control() {
                    producers.record(h, h.base_offset);
                    return Ok(true);
                }
                let bytes = read_exact_at(&seg.log, pos, h.total_size())?;
                match read_control_record(&bytes, h) {
                    Ok(ControlRecord::Marker(m)) => {
                        let done = producers.record_marker(
                            h.producer_id,
                            h.producer_epoch,
                            m,
                            h.base_offset,
                            h.max_timestamp,
                        );
                        match done {
                            Some(done) if done.aborted => aborted.push(AbortedTxn {
                                producer_id: done.producer_id,
                                first_offset: done.first_offset,
                                last_offset: done.last_offset,
                                last_stable_offset: producers.last_stable_offset_after(&done),
                            }),
                            Some(_) => {}
                            // A transaction the replay did not see begin (it began before the
                            // snapshot replayed from, which a power cut took, or below the log
                            // start): the segment's index still knows where it began (found
                            // by `crash_tests`, seed 2: without it the entry was dropped and
                            // read_committed readers got the aborted records).
                            None => aborted.extend(
                                indexed
                                    .iter()
                                    .filter(|e| {
                                        e.last_offset == h.base_offset
                                            && e.producer_id == h.producer_id
                                    })
                                    .copied(),
                            ),
                        }
                    }
                    Ok(ControlRecord::Other) => {}
                    Err(e) => tracing::warn!(dir = %self.dir.display(), offset = h.base_offset,
                        error = %e, "an unreadable control record; ignored"),
                }
                Ok(true)
            })?;
            if self.segments[i].set_aborted(aborted)? {
                rebuilt_segments += 1;
            }
        }
        if rebuilt_segments > 0 {
            tracing::warn!(dir = %self.dir.display(), segments = rebuilt_segments,
                "rebuilt the transaction index of recovered segments");
        }
        // The high watermark is not known here; the markers replayed are on this replica, and
        // a transaction closed by one no longer holds back cleaning or the last stable offset.
        producers.on_high_watermark(leo);
        if self.reopened
            || self.log_start_offset() > 0
            || self
                .dir
                .fs()
                .exists(&self.dir.join(PRODUCERS_FORGOTTEN_FILE))
        {
            producers.set_may_have_forgotten();
        }
        self.producers = producers;
        self.publish_frontier();
        Ok(())
    }

    /// Checks a client's data batch against its producer's state before it is appended (see
    /// [`ProducerStateManager::check`](crate::producer_state::ProducerStateManager::check)):
    /// append it, or answer a retry with its original offsets.
    ///
    /// Errors: the [`ProducerError`] naming the Kafka error.
    pub fn check_producer(
        &self,
        batch: &BatchHeader,
        verification: Option<u64>,
        require_verification: bool,
    ) -> Result<SequenceCheck, ProducerError> {
        self.producers
            .check(batch, verification, require_verification)
    }

    /// Checks a transaction marker of `producer_id` at `epoch` from a coordinator at
    /// `coordinator_epoch` (see [`append_marker`](Self::append_marker)).
    ///
    /// Errors: INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED.
    pub fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        bumps_epoch: bool,
    ) -> Result<(), ProducerError> {
        self.producers
            .check_marker(producer_id, epoch, coordinator_epoch, bumps_epoch)
    }

    /// Starts verifying that `producer_id`'s transaction includes this partition (KIP-890):
    /// `None` when it is already open here at `epoch`, else the token its append must carry.
    /// `supports_epoch_bump`: a transactions v2 producer (see
    /// [`ProducerStateManager::begin_verification`]).
    pub fn begin_verification(
        &mut self,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Option<u64> {
        self.producers
            .begin_verification(producer_id, epoch, supports_epoch_bump)
    }

    /// Notes a batch refused before its append with a retriable error.
    pub fn note_refused(&mut self, batch: &BatchHeader) {
        self.producers.note_refused(batch);
    }

    /// Appends a transaction marker (a control batch, KIP-98) for `producer_id` at `epoch`, as
    /// the partition's leader. `bumps_epoch`: transactions v2, whose markers carry the epoch the
    /// coordinator bumped to. The transaction closes; if aborted it goes into the transaction
    /// index.
    ///
    /// Errors: `LogError::Producer` (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED;
    /// nothing written), else as [`append`](Self::append).
    pub fn append_marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        marker: EndTxnMarker,
        bumps_epoch: bool,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.producers
            .check_marker(producer_id, epoch, marker.coordinator_epoch, bumps_epoch)?;
        let batch = build_marker_batch(producer_id, epoch, marker, now_ms);
        self.append(BytesMut::from(&batch[..]), now_ms)
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`) without an open
    /// transaction; returns how many.
    ///
    /// The first expiry is made durable first ([`PRODUCERS_FORGOTTEN_FILE`]): from then on, and
    /// after restarts, an unknown producer's first batch is accepted at any sequence (see
    /// [`ProducerStateManager::check`](crate::producer_state::ProducerStateManager::check)). If
    /// that file cannot be written nothing expires now (a warning; the next sweep tries again).
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        if !self.producers.may_have_forgotten()
            && self.producers.would_expire(now_ms, expiration_ms)
        {
            let path = self.dir.join(PRODUCERS_FORGOTTEN_FILE);
            if let Err(e) = self.dir.replace_durably(&path, b"") {
                tracing::warn!(dir = %self.dir.display(), error = %e,
                    "cannot record a producer expiry; producers kept until the next sweep");
                return 0;
            }
            self.producers.set_may_have_forgotten();
        }
        self.producers.expire(now_ms, expiration_ms)
    }

    /// Each producer's id and the last offset of its last batch (the cleaner keeps that batch).
    pub fn last_batch_offsets(&self) -> std::collections::HashMap<i64, i64> {
        self.producers.last_batch_offsets()
    }

    /// Producer ids this partition remembers.
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Every producer of this partition (DescribeProducers, KIP-664).
    pub fn describe_producers(&self) -> Vec<ProducerInfo> {
        self.producers.describe()
    }

    /// Forgets closed transactions whose markers are below the high watermark `hw`.
    pub fn prune_replicated_txns(&mut self, hw: i64) {
        if self.producers.on_high_watermark(hw) {
            self.publish_frontier();
        }
    }

    /// Replaces the configuration (AlterConfigs). Takes effect for the next append / retention pass.
    pub fn set_config(&mut self, config: LogConfig) {
        self.shared
            .cache
            .write()
            .set_capacity(config.tail_cache_bytes);
        self.shared.index_interval.store(
            i64::try_from(config.index_interval_bytes).unwrap_or(i64::MAX),
            Ordering::Relaxed,
        );
        self.config = config;
    }

    /// The current configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// A cheap, cloneable read handle, valid for the life of the log.
    pub fn reader(&self) -> LogReader {
        LogReader {
            shared: self.shared.clone(),
        }
    }

    /// First offset still stored.
    pub fn log_start_offset(&self) -> i64 {
        self.shared.log_start.load(Ordering::Acquire)
    }

    /// Offset the next appended record will get (LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.shared.log_end.load(Ordering::Acquire)
    }

    /// Bytes of all segments' `.log` files.
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::size).sum()
    }

    /// Headers of every batch in the last `segments` segments, oldest first (the broker rebuilds
    /// idempotent-producer state from these after a restart).
    pub fn recent_batch_headers(&self, segments: usize) -> Result<Vec<BatchHeader>, LogError> {
        let from = self.segments.len().saturating_sub(segments);
        let mut out = Vec::new();
        for s in &self.segments[from..] {
            out.extend(s.headers()?);
        }
        Ok(out)
    }

    /// Flushes everything to disk and closes the files.
    pub fn close(mut self) -> Result<(), LogError> {
        self.flush_for_shutdown()
    }

    /// The last flush before the broker stops: cuts a preallocated active segment to its size
    /// (so a clean restart finds the log end without validating the segment), then
    /// [`flush`](Self::flush)es.
    ///
    /// Errors: as `flush`; `LogError::Io` cutting the file (the log goes offline).
    pub fn flush_for_shutdown(&mut self) -> Result<(), LogError> {
        self.check_online()?;
        if let Err(e) = self.active_mut().trim() {
            self.go_offline("cutting a preallocated segment", &e);
            return Err(e);
        }
        self.flush()
    }

    /// Removes the partition's directory and everything in it.
    pub fn delete(self) -> Result<(), LogError> {
        let dir = self.dir.clone();
        self.shared.cache.write().clear();
        drop(self);
        dir.fs().remove_dir_all(&dir)?;
        Ok(())
    }

    #[cfg(test)]
    fn active_for_test(&mut self) -> &mut Segment {
        self.active_mut()
    }

    #[cfg(test)]
    fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

/// Concurrent read handle of a partition log (Send + Sync, cheap to clone).
#[derive(Clone, Debug)]
pub struct LogReader {
    shared: Arc<Shared>,
}

impl LogReader {
    /// The partition's directory.
    pub(crate) fn dir(&self) -> &LogDir {
        &self.shared.dir
    }

    /// The segment list now (handles, cheap to clone; the list's read lock only for the copy).
    pub(crate) fn segments_snapshot(&self) -> Vec<Arc<SegmentShared>> {
        self.shared.segments.read().clone()
    }

    /// First offset stored (advanced by retention).
    pub fn log_start_offset(&self) -> i64 {
        self.shared.log_start.load(Ordering::Acquire)
    }

    /// Offset the next appended record will get; every offset below it is readable.
    pub fn log_end_offset(&self) -> i64 {
        self.shared.log_end.load(Ordering::Acquire)
    }

    /// The recovery point: every offset below it is fsync'ed (see
    /// [`PartitionLog::recovery_point`]).
    pub fn recovery_point(&self) -> i64 {
        self.shared.recovery_point.load(Ordering::Acquire)
    }

    /// True once the log went offline (see [`PartitionLog::offline_reason`]).
    pub fn is_offline(&self) -> bool {
        self.shared.offline.load(Ordering::Acquire)
    }

    /// The last stable offset for high watermark `hw` (KIP-98): below it every transaction is
    /// decided, so `read_committed` readers may read up to it. `hw` when no transaction is open.
    pub fn last_stable_offset(&self, hw: i64) -> i64 {
        self.shared.frontier.read().last_stable_offset(hw)
    }

    /// Segments and the bytes of complete batches in their `.log` files (indexes not counted),
    /// as the metrics endpoint reports them (Kafka's `NumLogSegments` and `Size`). Takes each
    /// segment's read lock for a moment, never the writer's.
    pub fn segment_stats(&self) -> (usize, u64) {
        let segments = self.shared.segments.read();
        let bytes = segments.iter().map(|s| s.state.read().size).sum();
        (segments.len(), bytes)
    }

    /// The first offset of the oldest open transaction, if any.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.shared.frontier.read().ongoing.keys().next().copied()
    }

    /// The aborted transactions a `read_committed` fetch of `[fetch_offset, upper_bound)` must
    /// return (Kafka's `collectAbortedTransactions`): from the segment holding `fetch_offset`
    /// on, until an entry's last stable offset reaches `upper_bound`.
    pub fn aborted_transactions(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let segments = self.shared.segments.read();
        let from = segments
            .partition_point(|s| s.base_offset <= fetch_offset)
            .saturating_sub(1);
        let mut out = Vec::new();
        for seg in &segments[from..] {
            if txn_index::collect(&seg.aborted.read(), fetch_offset, upper_bound, &mut out) {
                break;
            }
        }
        out
    }

    fn out_of_range(&self, offset: i64) -> LogError {
        LogError::OffsetOutOfRange {
            offset,
            log_start_offset: self.log_start_offset(),
            log_end_offset: self.log_end_offset(),
        }
    }

    /// Checks `offset` against the log bounds. `Ok(Some(leo))` to go on reading, `Ok(None)` at the end.
    fn bounds(&self, offset: i64) -> Result<Option<i64>, LogError> {
        if self.is_offline() {
            return Err(LogError::Offline);
        }
        let leo = self.log_end_offset();
        let start = self.log_start_offset();
        if offset < start || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: start,
                log_end_offset: leo,
            });
        }
        Ok((offset < leo).then_some(leo))
    }

    /// Fetch served only from the in-memory tail cache; never touches the disk. `None` if `offset` is
    /// not cached (read it with [`read`](Self::read)). Same result shape as `read`: `max_bytes` in bytes,
    /// `max_offset` exclusive.
    pub fn read_cached(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Option<Result<FetchData, LogError>> {
        let leo = match self.bounds(offset) {
            Ok(Some(leo)) => leo,
            Ok(None) => return Some(Ok(FetchData::empty(offset))),
            Err(e) => return Some(Err(e)),
        };
        let hit = self
            .shared
            .cache
            .read()
            .read(offset, max_bytes, max_offset.min(leo))?;
        crate::stats::FetchReads::note(&crate::stats::FETCH_READS.tail_cache, hit.bytes);
        Some(Ok(FetchData {
            chunks: hit.chunks,
            bytes: hit.bytes,
            first_offset: hit.first_offset,
            next_offset: hit.next_offset,
        }))
    }

    /// Fetch: tries the tail cache, then reads segment files with `pread` (call from a blocking
    /// thread). See [`FetchData`] for the result's shape; `offset` below the log start or above the
    /// log end is `OffsetOutOfRange`, at the log end the result is empty.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<FetchData, LogError> {
        if let Some(r) = self.read_cached(offset, max_bytes, max_offset) {
            return r;
        }
        self.read_disk(offset, max_bytes, max_offset)
    }

    /// Every batch from the log start to the log end, each its own `Bytes` (a slice of what
    /// [`read`](Self::read) returned, 1 MiB at a time): a whole log for tests, the simulator
    /// and tools, not for the fetch path.
    ///
    /// Errors: those of [`read`](Self::read); `LogError::Batch` for a header that does not
    /// parse; `LogError::Corrupt` for a batch length that does not fit its read, or a read
    /// below the log end that makes no progress.
    pub fn read_batches(&self) -> Result<Vec<Bytes>, LogError> {
        let mut out = Vec::new();
        let mut at = self.log_start_offset();
        while at < self.log_end_offset() {
            let data = self.read(at, 1 << 20, i64::MAX)?;
            if data.next_offset <= at {
                return Err(LogError::Corrupt(format!(
                    "a read at {at} below the log end made no progress"
                )));
            }
            for chunk in &data.chunks {
                let mut pos = 0;
                while pos < chunk.len() {
                    let size = BatchHeader::parse(&chunk[pos..])?.total_size();
                    if size < BATCH_HEADER_LEN || pos + size > chunk.len() {
                        return Err(LogError::Corrupt(format!(
                            "a batch of {size} bytes at {pos} of a {}-byte read",
                            chunk.len()
                        )));
                    }
                    out.push(chunk.slice(pos..pos + size));
                    pos += size;
                }
            }
            at = data.next_offset;
        }
        Ok(out)
    }

    /// Fetch from the segment files only (plans and runs a [`DiskRead`] on this thread).
    pub(crate) fn read_disk(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<FetchData, LogError> {
        self.plan_disk_read(offset, max_bytes, max_offset)?.run()
    }

    /// The first half of a fetch from the segment files: the checks and lookups that take the
    /// log's locks (bounds, the segment list, the offset index, each segment's extent), done on
    /// the caller's thread. [`DiskRead::run`] then only `pread`s, so it may run on a
    /// low-priority thread without ever holding a lock the appender or a tail read waits for.
    /// Same arguments and errors as [`read`](Self::read).
    pub fn plan_disk_read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<DiskRead, LogError> {
        self.plan_read(offset, max_bytes, max_offset, false)
    }

    /// [`plan_disk_read`](Self::plan_disk_read); `marked`: also each segment's offset-index
    /// entries within `max_bytes` of where its read starts ([`DiskRead::run_unread`]).
    fn plan_read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
        marked: bool,
    ) -> Result<DiskRead, LogError> {
        let mut plan = DiskRead {
            offset,
            max_bytes,
            max_offset,
            index_interval: usize::try_from(self.shared.index_interval.load(Ordering::Relaxed))
                .unwrap_or(4096),
            segments: Vec::new(),
            marks: Vec::new(),
        };
        let Some(leo) = self.bounds(offset)? else {
            return Ok(plan);
        };
        plan.max_offset = max_offset.min(leo);
        let all = self.shared.segments.read();
        let n = all.partition_point(|s| s.base_offset <= offset);
        if n == 0 {
            // Retention removed it between the bounds check and now.
            drop(all);
            return Err(self.out_of_range(offset));
        }
        // Each later segment is read from its start (the read continues at the offset where
        // the previous one ended, at or below the next's base offset).
        for (i, s) in all[n - 1..].iter().enumerate() {
            let from = if i == 0 { offset } else { s.base_offset };
            if marked {
                let (at, marks) = s.locate_marked(from, max_bytes);
                plan.segments.push((s.clone(), at));
                plan.marks.push(marks);
            } else {
                plan.segments.push((s.clone(), s.locate(from)));
            }
        }
        Ok(plan)
    }

    /// [`plan_disk_read`](Self::plan_disk_read) for [`DiskRead::run_unread`]: also takes along
    /// each segment's offset-index entries within `max_bytes` of where its read starts.
    ///
    /// Errors: as [`plan_disk_read`](Self::plan_disk_read).
    pub fn plan_file_read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<DiskRead, LogError> {
        self.plan_read(offset, max_bytes, max_offset, true)
    }

    /// ListOffsets by timestamp: the earliest offset whose timestamp is `>= ts` (ms), with that
    /// timestamp, record by record (compressed batches are decompressed; every record of a
    /// `LogAppendTime` batch carries the batch's max timestamp). `None` if no record is that
    /// recent. Records below the log start (DeleteRecords moved it inside a segment) are not
    /// answered: Kafka's `LogSegment.findOffsetByTimestamp(ts, logStartOffset)`. Reads files:
    /// call from a blocking thread.
    ///
    /// Errors: `LogError::Corrupt` for a stored batch that fails its CRC or does not parse.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        let leo = self.log_end_offset();
        let log_start = self.log_start_offset();
        let segs: Vec<Arc<SegmentShared>> = self.shared.segments.read().clone();
        for s in &segs {
            if s.state.read().max_ts < ts {
                continue;
            }
            let start = s.time_start_position(ts);
            let batch_ok = |h: &BatchHeader| h.max_timestamp >= ts && h.last_offset() >= log_start;
            let record_ok = |offset: i64, t: i64| offset >= log_start && t >= ts;
            let found = first_record_where(s, start, leo, batch_ok, record_ok)?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// ListOffsets `MAX_TIMESTAMP` (KIP-734): the largest timestamp in the log (ms) and the
    /// offset of the earliest record carrying it (Kafka's `RecordBatch.offsetOfMaxTimestamp`:
    /// the first such record of the first batch reaching it; for a `LogAppendTime` batch its
    /// first record). `None` for a log without timestamped records. Reads files: call from a
    /// blocking thread.
    ///
    /// Errors: `LogError::Corrupt` for a stored batch that fails its CRC or does not parse.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>, LogError> {
        let leo = self.log_end_offset();
        let best = {
            let segs = self.shared.segments.read();
            let mut best: Option<(i64, Arc<SegmentShared>, i64)> = None;
            for s in segs.iter() {
                let st = s.state.read();
                if st.max_ts >= 0 && best.as_ref().is_none_or(|(t, _, _)| st.max_ts > *t) {
                    best = Some((st.max_ts, s.clone(), st.max_ts_offset));
                }
            }
            best
        };
        let Some((max, seg, batch_offset)) = best else {
            return Ok(None);
        };
        let start = seg.position_of(batch_offset);
        let found = first_record_where(
            &seg,
            start,
            leo,
            |h| h.max_timestamp == max,
            |_, t| t == max,
        )?;
        Ok(found.map(|(offset, ts)| (ts, offset)))
    }
}

/// In segment `s` from position `start`, the first batch (below `leo`) that `batch_ok` accepts
/// and in it the first record `record_ok` accepts (by offset and timestamp): `(offset,
/// timestamp)`.
fn first_record_where(
    s: &SegmentShared,
    start: u64,
    leo: i64,
    batch_ok: impl Fn(&BatchHeader) -> bool,
    record_ok: impl Fn(i64, i64) -> bool,
) -> Result<Option<(i64, i64)>, LogError> {
    let size = s.state.read().size;
    let mut found = None;
    let mut err = None;
    scan_headers(&s.log, start, size, |pos, h| {
        if h.base_offset >= leo {
            return Ok(false);
        }
        if !batch_ok(h) || h.records_count == 0 {
            return Ok(true);
        }
        let batch = segment::read_exact_at(&s.log, pos, h.total_size())?;
        if !crc_ok(&batch) {
            err = Some(LogError::Corrupt(format!(
                "CRC mismatch in batch at offset {}",
                h.base_offset
            )));
            return Ok(false);
        }
        let section = records_section(&batch, h)?;
        for r in parse_records(&section, h.records_count)? {
            let rts = if h.timestamp_type() == TimestampType::LogAppendTime {
                h.max_timestamp
            } else {
                h.base_timestamp.saturating_add(r.timestamp_delta)
            };
            let offset = h.base_offset.saturating_add(i64::from(r.offset_delta));
            if record_ok(offset, rts) {
                found = Some((offset, rts));
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(found),
    }
}

/// [`Segment::preallocate`]s a new active segment to `segment.bytes` when the log's config asks
/// for it (`preallocate`); best effort: a file system that refuses leaves the segment growing
/// as it is written (logged).
fn preallocate(seg: &mut Segment, config: &LogConfig) {
    if !config.preallocate {
        return;
    }
    if let Err(e) = seg.preallocate(config.segment_bytes) {
        tracing::warn!(dir = %seg.dir().display(), base_offset = seg.base_offset(), error = %e,
            "cannot preallocate the new segment; it grows as it is written");
    }
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "partition_txn_tests.rs"]
mod txn_tests;
