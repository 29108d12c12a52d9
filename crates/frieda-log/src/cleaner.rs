//! The log cleaner: Kafka's log compaction (`cleanup.policy=compact`, KIP-58, KIP-354, KIP-534).
//!
//! A pass over one partition log, in three steps so the partition's lock is held only for
//! in-memory work (Redpanda's rule: housekeeping never inside the produce lock):
//!
//! 1. [`PartitionLog::cleaning_candidate`] (under the lock) decides whether the log is worth
//!    cleaning and snapshots its cleanable closed segments. The cleanable range ends at the
//!    first uncleanable offset: the active segment, or the first segment younger than
//!    `min.compaction.lag.ms`. Its dirty part starts at the cleaner checkpoint (what the last
//!    pass covered). The log is cleaned when `dirty / (clean + dirty) > min.cleanable.dirty.ratio`,
//!    when the oldest dirty batch is older than `max.compaction.lag.ms`, or when tombstones it
//!    stamped earlier have passed their delete horizon (Kafka has no trigger for the last case:
//!    expired tombstones wait for the next pass chosen by the dirty ratio).
//! 2. [`CleaningCandidate::clean`] (no lock) builds the offset map `hash(key) -> latest offset` over
//!    the dirty part (bounded: [`CleanContext::max_map_entries`]), then rewrites every cleanable
//!    segment below the map's end, grouped so each output stays under `segment.bytes`. A record
//!    survives when it is the latest of its key (or lies beyond the map) and is not a tombstone
//!    past its delete horizon; records without a key are dropped. A batch keeps its base offset,
//!    offset range, producer id, epoch and base sequence even when records leave it (offsets never
//!    change; gaps are normal); an emptied batch is kept as a bare header when it is the last batch
//!    of an active producer (so idempotence state survives) or the last batch of its group (so the
//!    output segment ends exactly where the group ended). Retained tombstones are stamped with a
//!    delete horizon `now + delete.retention.ms` (attribute bit 6, base timestamp = horizon,
//!    KIP-534) and removed by a later pass after it. Compressed batches are rewritten with their
//!    codec. Each output is written to `<base>.log.cleaned` (+ indexes), fsync'ed, renamed to
//!    `.swap` (index files first, the log last: the `.log.swap` is the commit point), and the
//!    directory is fsync'ed. Reads and writes are throttled to `log.cleaner.io.max.bytes.per.second`.
//! 3. [`PartitionLog::install_cleaned`] (under the lock) swaps the segments in memory if the group
//!    is unchanged; [`PendingSwap::finish`] (no lock) deletes the replaced files, renames the
//!    `.swap` files over the old first segment of each group and fsyncs the directory.
//!
//! Transactions (KIP-98): the cleanable range also ends before the segment holding the first
//! offset of a transaction still open (or closed but not yet replicated), as Kafka's
//! `firstUnstableOffset` bounds it; records of aborted transactions (the `.txnindex` entries)
//! are neither put in the offset map nor kept, so an aborted write never supersedes a committed
//! one; control batches (markers) are kept.
//!
//! A crash at any moment leaves either the old or the new segments: on open,
//! [`finish_interrupted_swaps`] deletes `.cleaned` files (and index `.swap` files without their
//! `.log.swap`), and for every `<base>.log.swap` deletes the old segments it replaces (base
//! offsets in `[base, end of its last batch)`) and renames the swap files into place.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::batch::{
    build_batch, records_section, BatchHeader, BATCH_HEADER_LEN, DELETE_HORIZON_BIT,
};
use crate::compression::Codec;
use crate::config::{LogConfig, TimestampType};
use crate::error::LogError;
use crate::fs::{LogDir, LogFile};
use crate::records::{encode_record, parse_records, RecordRef};
use crate::segment::{self, read_exact_at, Segment, SegmentShared};

/// Bytes Kafka's offset map spends per entry (a 16-byte key hash and an 8-byte offset); used to
/// turn `log.cleaner.dedupe.buffer.size` into a bound on entries.
pub const BYTES_PER_MAP_ENTRY: usize = 24;
/// Bytes read from a segment file at a time while cleaning (1 MiB, or one larger batch).
const READ_CHUNK: usize = 1 << 20;
/// Bytes of cleaned batches collected before they are written to the output segment.
const WRITE_CHUNK: usize = 1 << 20;

/// Why a log is being cleaned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanReason {
    /// The dirty ratio reached `min.cleanable.dirty.ratio`.
    DirtyRatio,
    /// The oldest dirty batch is older than `max.compaction.lag.ms`.
    MaxCompactionLag,
    /// Tombstones stamped by an earlier pass have passed their delete horizon (KIP-534).
    DeleteHorizon,
}

/// A log the cleaner should clean now, with the closed segments it may rewrite (snapshotted
/// under the partition's lock; read without it).
pub struct CleaningCandidate {
    pub(crate) dir: LogDir,
    /// Cleanable closed segments from the log start, with each one's end offset (the next
    /// segment's base).
    pub(crate) segments: Vec<(Arc<SegmentShared>, i64)>,
    pub(crate) first_dirty: i64,
    pub(crate) first_uncleanable: i64,
    pub(crate) config: LogConfig,
    /// Aborted transactions of the whole log, by producer id: `(first offset, marker offset)`.
    pub(crate) aborted: HashMap<i64, Vec<(i64, i64)>>,
    /// Dirty bytes / cleanable bytes (0.0-1.0).
    pub dirty_ratio: f64,
    /// Why it is cleaned.
    pub reason: CleanReason,
}

/// What a cleaning pass needs besides the log.
pub struct CleanContext<'a> {
    /// Wall clock, ms since the epoch (delete horizons are stamped and compared with it).
    pub now_ms: i64,
    /// Most distinct keys the offset map may hold (`log.cleaner.dedupe.buffer.size` /
    /// [`BYTES_PER_MAP_ENTRY`]); the dirty part is cleaned up to where the map filled.
    pub max_map_entries: usize,
    /// For each active idempotent producer, the last offset of its last batch: that batch is
    /// kept (as a bare header if all its records go) so the producer's sequence survives.
    pub active_producers: &'a HashMap<i64, i64>,
    /// The I/O budget (`log.cleaner.io.max.bytes.per.second`).
    pub throttle: &'a mut Throttle,
    /// Checked between batches: a `true` stops the pass (broker shutdown, topic deletion).
    pub cancelled: &'a dyn Fn() -> bool,
}

/// Figures of one cleaning pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// Bytes read (offset map and rewrite).
    pub bytes_read: u64,
    /// Bytes of the cleaned segments written.
    pub bytes_written: u64,
    /// Bytes of the segments that were replaced.
    pub bytes_replaced: u64,
    /// Records removed (superseded, keyless, or tombstones past their horizon).
    pub records_removed: u64,
    /// Of those, tombstones removed after their delete horizon.
    pub tombstones_removed: u64,
    /// Segments replaced and segments written instead.
    pub segments_replaced: usize,
    /// Cleaned segments written.
    pub segments_written: usize,
}

/// The output of [`CleaningCandidate::clean`]: cleaned segments committed as `.swap` files,
/// waiting to be installed.
pub struct CleanedLog {
    pub(crate) groups: Vec<CleanedGroup>,
    /// The offset up to which the dirty part was cleaned: the next pass's first dirty offset
    /// (persist it as the cleaner checkpoint once the swap is finished).
    pub map_end: i64,
    /// The latest delete horizon stamped on a batch in this pass (ms), or -1.
    pub latest_delete_horizon: i64,
    /// Figures of the pass.
    pub stats: CleanStats,
}

pub(crate) struct CleanedGroup {
    pub old: Vec<Arc<SegmentShared>>,
    pub new: Segment,
}

/// Installed cleaned segments whose file renames and deletions are still to be done, without
/// the partition's lock: call [`finish`](Self::finish).
#[must_use = "the swap must be finished"]
pub struct PendingSwap {
    pub(crate) dir: LogDir,
    /// Base offsets of the new segments (their `.swap` files are renamed into place).
    pub(crate) bases: Vec<i64>,
    /// Replaced segments whose files are deleted (not the first of each group: the rename
    /// replaces those).
    pub(crate) replaced: Vec<i64>,
    /// False when the log changed during the cleaning: the `.swap` files are discarded instead.
    pub(crate) installed: bool,
}

impl PendingSwap {
    /// Whether the cleaned segments replaced the old ones (false: the log changed meanwhile
    /// and the cleaning was discarded).
    pub fn installed(&self) -> bool {
        self.installed
    }

    /// Deletes the replaced segments' files, renames every `.swap` file over its final name
    /// (index files first, the log last) and fsyncs the directory. For a discarded cleaning,
    /// deletes its `.swap` files instead.
    ///
    /// Errors: `LogError::Io`; whatever is left undone is completed at the next open.
    pub fn finish(self) -> Result<(), LogError> {
        if !self.installed {
            for &base in &self.bases {
                for suffix in segment::SEGMENT_FILE_SUFFIXES {
                    let path = segment::file_name(&self.dir, base, &format!("{suffix}.swap"));
                    self.dir.remove_if_exists(&path)?;
                }
            }
            return sync_dir(&self.dir);
        }
        for &base in &self.replaced {
            segment::delete_segment_files(&self.dir, base)?;
        }
        for &base in &self.bases {
            complete_swap_renames(&self.dir, base)?;
        }
        sync_dir(&self.dir)
    }
}

/// Sleeps to keep the cleaner's I/O at or below a byte rate (Kafka's `Throttler`: measured over
/// windows, here of one second).
pub struct Throttle {
    bytes_per_second: f64,
    window_start: Instant,
    window_bytes: f64,
}

impl Throttle {
    /// A throttle of `bytes_per_second` (`f64::INFINITY` or non-positive: unlimited).
    pub fn new(bytes_per_second: f64) -> Self {
        Throttle {
            bytes_per_second,
            window_start: Instant::now(),
            window_bytes: 0.0,
        }
    }

    /// Accounts for `bytes` of I/O and sleeps as long as the rate is exceeded.
    pub fn acquire(&mut self, bytes: u64) {
        if !(self.bytes_per_second.is_finite() && self.bytes_per_second > 0.0) {
            return;
        }
        self.window_bytes += bytes as f64;
        let due = Duration::from_secs_f64(self.window_bytes / self.bytes_per_second);
        let elapsed = self.window_start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
        if self.window_start.elapsed() >= Duration::from_secs(1) {
            self.window_start = Instant::now();
            self.window_bytes = 0.0;
        }
    }
}

/// `hash(key) -> offset of the latest record with that key` over the dirty part of a log. Keys
/// are hashed to 128 bits with two randomly keyed SipHash instances (fresh keys every pass, so a
/// producer cannot craft colliding keys to delete other keys' records).
struct OffsetMap {
    map: HashMap<u128, i64>,
    hashers: (RandomState, RandomState),
}

impl OffsetMap {
    fn new() -> Self {
        OffsetMap {
            map: HashMap::new(),
            hashers: (RandomState::new(), RandomState::new()),
        }
    }

    fn hash(&self, key: &[u8]) -> u128 {
        (u128::from(self.hashers.0.hash_one(key)) << 64) | u128::from(self.hashers.1.hash_one(key))
    }

    fn put(&mut self, key: &[u8], offset: i64) {
        let h = self.hash(key);
        self.map.insert(h, offset);
    }

    fn get(&self, key: &[u8]) -> Option<i64> {
        self.map.get(&self.hash(key)).copied()
    }
}

/// One batch read by [`BatchReader`]: its header, its bytes, and the bytes read from the file to
/// get it (for the throttle).
type ReadBatch<'a> = (BatchHeader, &'a [u8], u64);

/// Reads whole batches of one segment file in order, a chunk at a time.
struct BatchReader<'a> {
    file: &'a dyn LogFile,
    pos: u64,
    limit: u64,
    chunk: Vec<u8>,
    chunk_start: u64,
}

impl<'a> BatchReader<'a> {
    fn new(file: &'a dyn LogFile, limit: u64) -> Self {
        BatchReader {
            file,
            pos: 0,
            limit,
            chunk: Vec::new(),
            chunk_start: 0,
        }
    }

    /// The next batch's header and bytes, and how many bytes were read from the file for it.
    fn next(&mut self) -> Result<Option<ReadBatch<'_>>, LogError> {
        if self.pos >= self.limit {
            return Ok(None);
        }
        let mut read = 0u64;
        let in_chunk = |r: &Self, len: u64| {
            r.pos >= r.chunk_start && r.pos + len <= r.chunk_start + r.chunk.len() as u64
        };
        if !in_chunk(self, BATCH_HEADER_LEN as u64) {
            read += self.fill(BATCH_HEADER_LEN)?;
        }
        let at = (self.pos - self.chunk_start) as usize;
        let h = BatchHeader::parse(&self.chunk[at..])?;
        let total = h.total_size() as u64;
        if total < BATCH_HEADER_LEN as u64 || self.pos + total > self.limit || h.magic != 2 {
            return Err(LogError::Corrupt(format!(
                "bad batch header at position {} while cleaning",
                self.pos
            )));
        }
        if !in_chunk(self, total) {
            read += self.fill(total as usize)?;
        }
        let at = (self.pos - self.chunk_start) as usize;
        self.pos += total;
        Ok(Some((h, &self.chunk[at..at + total as usize], read)))
    }

    fn fill(&mut self, need: usize) -> Result<u64, LogError> {
        let len = (self.limit - self.pos).min(need.max(READ_CHUNK) as u64) as usize;
        self.chunk = read_exact_at(self.file, self.pos, len)?;
        self.chunk_start = self.pos;
        Ok(len as u64)
    }
}

/// Whether a batch belongs to an aborted transaction of `aborted` (see
/// [`CleaningCandidate::aborted`]).
fn is_aborted(aborted: &HashMap<i64, Vec<(i64, i64)>>, h: &BatchHeader) -> bool {
    h.is_transactional()
        && !h.is_control()
        && aborted.get(&h.producer_id).is_some_and(|txns| {
            txns.iter()
                .any(|&(first, marker)| first <= h.base_offset && h.last_offset() < marker)
        })
}

/// Chooses whether `segments` (the log's, active last) should be cleaned now; see the module
/// docs. `first_unstable`: the first offset of a transaction not yet decided and replicated.
pub(crate) fn candidate(
    dir: &LogDir,
    config: &LogConfig,
    segments: &[Segment],
    first_unstable: Option<i64>,
    checkpoint: i64,
    latest_delete_horizon: i64,
    now_ms: i64,
) -> Option<CleaningCandidate> {
    if !config.cleanup_compact || segments.len() < 2 {
        return None;
    }
    let closed = &segments[..segments.len() - 1];
    // The first uncleanable segment: the active one, the first closed one with a record
    // younger than min.compaction.lag.ms, or the one holding the first unstable offset.
    let lag_limit = now_ms.saturating_sub(config.min_compaction_lag_ms);
    let stable_end = first_unstable.unwrap_or(i64::MAX);
    let cleanable = closed
        .iter()
        .take_while(|s| config.min_compaction_lag_ms <= 0 || s.largest_timestamp() <= lag_limit)
        .take_while(|s| s.end_offset() <= stable_end)
        .count();
    if cleanable == 0 {
        return None;
    }
    let first_uncleanable = segments[cleanable].base_offset();
    let log_start = segments[0].base_offset();
    let first_dirty = if checkpoint < log_start || checkpoint > first_uncleanable {
        log_start
    } else {
        checkpoint
    };
    let mut clean_bytes = 0u64;
    let mut dirty_bytes = 0u64;
    // Kafka's needCompactionNow: the earliest first-batch timestamp of the dirty segments.
    let mut earliest_dirty_ts: Option<i64> = None;
    for s in &closed[..cleanable] {
        if s.end_offset() <= first_dirty {
            clean_bytes += s.size();
        } else {
            dirty_bytes += s.size();
            if config.max_compaction_lag_ms < i64::MAX {
                if let Some(ts) = s.first_batch_timestamp().filter(|&t| t >= 0) {
                    earliest_dirty_ts = Some(earliest_dirty_ts.map_or(ts, |e| e.min(ts)));
                }
            }
        }
    }
    let total = clean_bytes + dirty_bytes;
    let dirty_ratio = if total == 0 {
        0.0
    } else {
        dirty_bytes as f64 / total as f64
    };
    let overdue = earliest_dirty_ts
        .is_some_and(|ts| now_ms.saturating_sub(ts) > config.max_compaction_lag_ms);
    // Strictly greater, as Kafka's LogCleanerManager.grabFilthiestCompactedLog compares.
    let reason = if dirty_bytes > 0 && dirty_ratio > config.min_cleanable_dirty_ratio {
        CleanReason::DirtyRatio
    } else if dirty_bytes > 0 && overdue {
        CleanReason::MaxCompactionLag
    } else if latest_delete_horizon >= 0 && latest_delete_horizon <= now_ms {
        CleanReason::DeleteHorizon
    } else {
        return None;
    };
    let mut aborted: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for s in segments {
        for e in s.aborted() {
            aborted
                .entry(e.producer_id)
                .or_default()
                .push((e.first_offset, e.last_offset));
        }
    }
    Some(CleaningCandidate {
        dir: dir.clone(),
        segments: closed[..cleanable]
            .iter()
            .map(|s| (s.shared.clone(), s.end_offset()))
            .collect(),
        first_dirty,
        first_uncleanable,
        config: config.clone(),
        aborted,
        dirty_ratio,
        reason,
    })
}

/// What happens to one batch.
enum Filtered {
    /// Written unchanged.
    Keep,
    /// Written as these bytes instead.
    Rewrite(Vec<u8>),
    /// Left out.
    Drop,
}

/// Per-batch filtering state of a pass.
struct Filter<'a> {
    map: &'a OffsetMap,
    aborted: &'a HashMap<i64, Vec<(i64, i64)>>,
    /// Records at or beyond this offset were not seen by the map: kept.
    map_end: i64,
    now_ms: i64,
    delete_retention_ms: i64,
    active_producers: &'a HashMap<i64, i64>,
    stats: CleanStats,
    latest_horizon: i64,
}

impl Filter<'_> {
    fn retain(&self, r: &RecordRef<'_>, offset: i64, horizon: Option<i64>) -> bool {
        if offset >= self.map_end {
            return true;
        }
        let Some(key) = r.key else {
            return false;
        };
        if self.map.get(key).is_some_and(|latest| latest > offset) {
            return false;
        }
        r.value.is_some() || horizon.is_none_or(|h| self.now_ms < h)
    }

    /// A batch left without records: dropped, unless `keep_header` or it is its producer's last
    /// batch (the producer state needs it), then a bare header (Kafka's
    /// DefaultRecordBatch.writeEmptyHeader: no codec, no horizon, base timestamp -1, the max
    /// timestamp and everything else kept).
    fn emptied(&self, h: &BatchHeader, keep_header: bool) -> Filtered {
        let last_of_producer = h.producer_id >= 0
            && self.active_producers.get(&h.producer_id) == Some(&h.last_offset());
        if !(keep_header || last_of_producer) {
            return Filtered::Drop;
        }
        let empty = BatchHeader {
            attributes: h.attributes & !0x7 & !DELETE_HORIZON_BIT,
            base_timestamp: -1,
            records_count: 0,
            ..*h
        };
        Filtered::Rewrite(build_batch(&empty, Codec::None, &[]))
    }

    /// Filters one batch; `keep_header` forces an emptied batch to stay as a bare header.
    fn batch(
        &mut self,
        bytes: &[u8],
        h: &BatchHeader,
        keep_header: bool,
    ) -> Result<Filtered, LogError> {
        if h.is_control() {
            return Ok(Filtered::Keep);
        }
        let section = records_section(bytes, h)?;
        let records = if h.records_count == 0 || is_aborted(self.aborted, h) {
            // An aborted transaction's records: all go (as superseded records do).
            self.stats.records_removed += u64::try_from(h.records_count).unwrap_or(0);
            Vec::new()
        } else {
            parse_records(&section, h.records_count)?
        };
        if records.is_empty() && h.records_count > 0 {
            return Ok(self.emptied(h, keep_header));
        }
        let horizon = h.delete_horizon_ms();
        let mut kept = Vec::with_capacity(records.len());
        let mut tombstones = false;
        for r in &records {
            let offset = h.base_offset + i64::from(r.offset_delta);
            if self.retain(r, offset, horizon) {
                tombstones |= r.value.is_none();
                kept.push(*r);
            } else {
                self.stats.records_removed += 1;
                if r.value.is_none() && r.key.is_some() && horizon.is_some() {
                    self.stats.tombstones_removed += 1;
                }
            }
        }
        let stamp = tombstones && horizon.is_none();
        if kept.len() == records.len() && !stamp {
            if let Some(h) = horizon.filter(|_| tombstones) {
                self.latest_horizon = self.latest_horizon.max(h);
            }
            return Ok(Filtered::Keep);
        }
        if kept.is_empty() {
            return Ok(self.emptied(h, keep_header));
        }
        let mut out = *h;
        out.records_count = kept.len() as i32;
        let mut base_ts = h.base_timestamp;
        if stamp {
            base_ts = self.now_ms.saturating_add(self.delete_retention_ms);
            out.attributes |= DELETE_HORIZON_BIT;
            self.latest_horizon = self.latest_horizon.max(base_ts);
        } else if let Some(h) = horizon.filter(|_| tombstones) {
            self.latest_horizon = self.latest_horizon.max(h);
        }
        out.base_timestamp = base_ts;
        if h.timestamp_type() == TimestampType::CreateTime {
            out.max_timestamp = kept
                .iter()
                .map(|r| h.base_timestamp.saturating_add(r.timestamp_delta))
                .max()
                .unwrap_or(h.max_timestamp);
        }
        let mut records = Vec::with_capacity(section.len());
        for r in &kept {
            let ts = h.base_timestamp.saturating_add(r.timestamp_delta);
            let moved = RecordRef {
                timestamp_delta: ts.saturating_sub(base_ts),
                ..*r
            };
            encode_record(&mut records, &moved);
        }
        let codec = Codec::from_id(h.compression())?;
        Ok(Filtered::Rewrite(build_batch(&out, codec, &records)))
    }
}

impl CleaningCandidate {
    /// Runs the pass (step 2 of the module docs) without the partition's lock: builds the offset
    /// map, writes the cleaned segments and commits them as `.swap` files.
    ///
    /// Errors: `LogError::Io` (nothing is installed; `.cleaned` files are removed at the next
    /// open or pass), `LogError::Corrupt` for unreadable stored batches (the log is left as it is).
    pub fn clean(self, ctx: &mut CleanContext<'_>) -> Result<CleanedLog, LogError> {
        let mut stats = CleanStats::default();
        let (map, map_end) = self.build_map(ctx, &mut stats)?;
        let mut filter = Filter {
            map: &map,
            aborted: &self.aborted,
            map_end,
            now_ms: ctx.now_ms,
            delete_retention_ms: self.config.delete_retention_ms,
            active_producers: ctx.active_producers,
            stats,
            latest_horizon: -1,
        };
        let mut groups = Vec::new();
        for range in self.groups(map_end) {
            if (ctx.cancelled)() {
                return Err(LogError::Io(std::io::Error::other("cleaning cancelled")));
            }
            let old: Vec<_> = self.segments[range].to_vec();
            if let Some(new) = self.clean_group(&old, &mut filter, ctx)? {
                groups.push(CleanedGroup {
                    old: old.into_iter().map(|(s, _)| s).collect(),
                    new,
                });
            }
        }
        // Commit point of every group: its `.log.swap` exists once the directory is synced.
        for g in &groups {
            let base = g.new.base_offset();
            for suffix in segment::SEGMENT_FILE_SUFFIXES {
                match self.dir.fs().rename(
                    &segment::file_name(&self.dir, base, &format!("{suffix}.cleaned")),
                    &segment::file_name(&self.dir, base, &format!("{suffix}.swap")),
                ) {
                    Ok(()) => {}
                    // A segment without aborted transactions has no `.txnindex`.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && suffix != ".log" => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        if !groups.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(CleanedLog {
            groups,
            map_end,
            latest_delete_horizon: filter.latest_horizon,
            stats: filter.stats,
        })
    }

    /// Scans the dirty part into the offset map; returns it with the offset it reached.
    fn build_map(
        &self,
        ctx: &mut CleanContext<'_>,
        stats: &mut CleanStats,
    ) -> Result<(OffsetMap, i64), LogError> {
        let mut map = OffsetMap::new();
        let mut end = self.first_dirty;
        'segments: for (seg, seg_end) in &self.segments {
            if *seg_end <= self.first_dirty {
                continue;
            }
            let size = seg.state.read().size;
            let mut reader = BatchReader::new(&seg.log, size);
            while let Some((h, bytes, read)) = reader.next()? {
                stats.bytes_read += read;
                ctx.throttle.acquire(read);
                if h.last_offset() < self.first_dirty {
                    continue;
                }
                if !h.is_control() && h.records_count > 0 && !is_aborted(&self.aborted, &h) {
                    let section = records_section(bytes, &h)?;
                    for r in parse_records(&section, h.records_count)? {
                        if let Some(key) = r.key {
                            map.put(key, h.base_offset + i64::from(r.offset_delta));
                        }
                    }
                }
                end = h.last_offset() + 1;
                if map.map.len() >= ctx.max_map_entries {
                    break 'segments;
                }
            }
            end = end.max(*seg_end);
        }
        Ok((map, end.min(self.first_uncleanable)))
    }

    /// Index ranges of `self.segments` to rewrite together: every segment starting below
    /// `map_end`, grouped while the sum of their sizes stays within `segment.bytes` and their
    /// offsets within a relative 32-bit range (Kafka's `groupSegmentsBySize`).
    fn groups(&self, map_end: i64) -> Vec<std::ops::Range<usize>> {
        let n = self
            .segments
            .iter()
            .take_while(|(s, _)| s.base_offset < map_end)
            .count();
        let limit = self.config.segment_bytes.min(u64::from(u32::MAX));
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let base = self.segments[start].0.base_offset;
            let mut size = self.segments[start].0.state.read().size;
            let mut end = start + 1;
            while end < n {
                let next = self.segments[end].0.state.read().size;
                let last = self.segments[end].1 - 1;
                if size + next > limit || last - base > i64::from(i32::MAX) {
                    break;
                }
                size += next;
                end += 1;
            }
            out.push(start..end);
            start = end;
        }
        out
    }

    /// Rewrites one group into `<base>.log.cleaned` (fsync'ed). `None` when a lone segment would
    /// come out unchanged.
    fn clean_group(
        &self,
        group: &[(Arc<SegmentShared>, i64)],
        filter: &mut Filter<'_>,
        ctx: &mut CleanContext<'_>,
    ) -> Result<Option<Segment>, LogError> {
        let base = group[0].0.base_offset;
        let mut out = Segment::create_as(&self.dir, base, ctx.now_ms, ".cleaned")?;
        let interval = self.config.index_interval_bytes;
        let mut pending: Vec<u8> = Vec::new();
        let mut headers: Vec<BatchHeader> = Vec::new();
        let mut changed = group.len() > 1;
        let mut replaced = 0u64;
        let last_group = group.len() - 1;
        for (i, (seg, seg_end)) in group.iter().enumerate() {
            let size = seg.state.read().size;
            replaced += size;
            let mut reader = BatchReader::new(&seg.log, size);
            while let Some((h, bytes, read)) = reader.next()? {
                filter.stats.bytes_read += read;
                ctx.throttle.acquire(read);
                let group_end = i == last_group && h.last_offset() + 1 >= *seg_end;
                let kept = match filter.batch(bytes, &h, group_end)? {
                    Filtered::Keep => bytes.to_vec(),
                    Filtered::Rewrite(b) => {
                        changed = true;
                        b
                    }
                    Filtered::Drop => {
                        changed = true;
                        continue;
                    }
                };
                headers.push(BatchHeader::parse(&kept)?);
                pending.extend_from_slice(&kept);
                if pending.len() >= WRITE_CHUNK {
                    write_chunk(
                        &mut out,
                        &mut pending,
                        &mut headers,
                        interval,
                        ctx,
                        &mut filter.stats,
                    )?;
                }
            }
        }
        write_chunk(
            &mut out,
            &mut pending,
            &mut headers,
            interval,
            ctx,
            &mut filter.stats,
        )?;
        if !changed {
            drop(out);
            for suffix in segment::SEGMENT_FILE_SUFFIXES {
                let _ = self.dir.fs().remove_file(&segment::file_name(
                    &self.dir,
                    base,
                    &format!("{suffix}.cleaned"),
                ));
            }
            return Ok(None);
        }
        // The aborted transactions of the group stay listed (Kafka's cleaner copies them too):
        // a read_committed reader of records kept here still needs them.
        let aborted: Vec<_> = group
            .iter()
            .flat_map(|(seg, _)| seg.aborted.read().clone())
            .collect();
        out.set_aborted(aborted)?;
        out.close_active()?;
        out.flush()?;
        debug_assert_eq!(
            out.end_offset(),
            group[last_group].1,
            "a cleaned group ends where it began"
        );
        filter.stats.bytes_replaced += replaced;
        filter.stats.segments_replaced += group.len();
        filter.stats.segments_written += 1;
        Ok(Some(out))
    }
}

fn write_chunk(
    out: &mut Segment,
    pending: &mut Vec<u8>,
    headers: &mut Vec<BatchHeader>,
    interval: usize,
    ctx: &mut CleanContext<'_>,
    stats: &mut CleanStats,
) -> Result<(), LogError> {
    if pending.is_empty() {
        return Ok(());
    }
    out.append(pending, headers, interval, ctx.now_ms)?;
    stats.bytes_written += pending.len() as u64;
    ctx.throttle.acquire(pending.len() as u64);
    pending.clear();
    headers.clear();
    Ok(())
}

fn sync_dir(dir: &LogDir) -> Result<(), LogError> {
    dir.sync()?;
    Ok(())
}

/// Renames `<base>.index.swap`, `<base>.timeindex.swap`, then `<base>.log.swap` over their final
/// names, those that exist.
fn complete_swap_renames(dir: &LogDir, base: i64) -> Result<(), LogError> {
    for suffix in segment::SEGMENT_FILE_SUFFIXES {
        let swap = segment::file_name(dir, base, &format!("{suffix}.swap"));
        match dir
            .fs()
            .rename(&swap, &segment::file_name(dir, base, suffix))
        {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Parses `<20 digits><suffix>`.
fn parse_name(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

/// End offset of a complete segment file: one past its last batch's last offset. `None` if the
/// file does not parse to the end (an incomplete swap file: it was fsync'ed before its rename,
/// so this means damage).
fn segment_file_end(dir: &LogDir, path: &Path) -> Result<Option<i64>, LogError> {
    let file = dir.fs().open(path, false, false)?;
    let size = file.size()?;
    let mut end = None;
    let scanned = segment::scan_headers(&*file, 0, size, |_, h| {
        end = Some(h.last_offset() + 1);
        Ok(true)
    });
    Ok(scanned.ok().and(end))
}

/// Finishes or undoes cleanings interrupted by a crash, before a log is opened (see the module
/// docs). Logs what it did.
///
/// Errors: `LogError::Io`.
pub(crate) fn finish_interrupted_swaps(dir: &LogDir) -> Result<(), LogError> {
    let mut names = dir.fs().list(dir)?;
    names.sort_unstable();
    let mut changed = false;
    for name in names.iter().filter(|n| n.ends_with(".cleaned")) {
        dir.fs().remove_file(&dir.join(name))?;
        changed = true;
    }
    let mut swaps: Vec<i64> = names
        .iter()
        .filter_map(|n| parse_name(n, ".log.swap"))
        .collect();
    swaps.sort_unstable();
    let mut complete = Vec::new();
    for &base in &swaps {
        match segment_file_end(dir, &segment::file_name(dir, base, ".log.swap"))? {
            Some(end) => complete.push((base, end)),
            None => {
                tracing::error!(dir = %dir.display(), base_offset = base,
                    "an unreadable cleaned segment (.log.swap): keeping the segments it would replace");
                dir.fs()
                    .remove_file(&segment::file_name(dir, base, ".log.swap"))?;
                changed = true;
            }
        }
    }
    for name in &names {
        for suffix in [".index.swap", ".timeindex.swap", ".txnindex.swap"] {
            if let Some(base) = parse_name(name, suffix) {
                if !complete.iter().any(|&(b, _)| b == base) {
                    dir.fs().remove_file(&dir.join(name))?;
                    changed = true;
                }
            }
        }
    }
    let segments: Vec<i64> = names
        .iter()
        .filter_map(|n| segment::parse_log_name(n))
        .collect();
    for &(base, end) in &complete {
        for &old in segments.iter().filter(|&&o| o > base && o < end) {
            segment::delete_segment_files(dir, old)?;
        }
        complete_swap_renames(dir, base)?;
        tracing::warn!(dir = %dir.display(), base_offset = base, end_offset = end,
            "finished a cleaning interrupted by a crash");
        changed = true;
    }
    if changed {
        sync_dir(dir)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "cleaner_tests.rs"]
mod tests;
