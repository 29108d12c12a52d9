//! The partition log: one writer ([`PartitionLog`]) and any number of concurrent readers ([`LogReader`]).
//!
//! Shared state lives in one `Arc`: the log start / end offsets as atomics, the segment list and the
//! tail cache behind `parking_lot` locks held only for in-memory work. The writer does its file I/O
//! first and then publishes: segment state, cache, and last the log end offset (release store), so a
//! reader that loads the log end offset (acquire) sees every byte below it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;

use crate::batch::{
    crc_ok, patch_base_offset, record_deltas, set_log_append_time, BatchError, BatchHeader,
    BATCH_HEADER_LEN,
};
use crate::cache::TailCache;
use crate::config::{LogConfig, TimestampType};
use crate::error::LogError;
use crate::retention::{self, SegmentInfo};
use crate::segment::{self, scan_headers, Segment, SegmentShared};

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
    /// Bytes cut from the torn tail of the active segment.
    pub truncated_bytes: u64,
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
}

/// What one flush must make durable, taken by [`PartitionLog::begin_flush`].
pub struct FlushTicket {
    segments: Vec<crate::segment::SegmentSync>,
    dir: Option<PathBuf>,
    messages: u64,
}

impl FlushTicket {
    /// `fdatasync` of every file with writes before the ticket was taken, and of the directory
    /// if segments were created or deleted. Blocks for the disk (typically 0.1-10 ms).
    ///
    /// Errors: `LogError::Io` from the sync; the log is then still counted as unflushed.
    pub fn sync(&self) -> Result<(), LogError> {
        for s in &self.segments {
            s.sync()?;
        }
        if let Some(dir) = &self.dir {
            fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Records the ticket covers.
    pub fn messages(&self) -> u64 {
        self.messages
    }
}

/// Single-writer partition log storing Kafka RecordBatch v2 bytes as received, base offsets patched.
///
/// Owned by one writer thread; hand out [`LogReader`]s for concurrent fetches.
pub struct PartitionLog {
    dir: PathBuf,
    config: LogConfig,
    segments: Vec<Segment>,
    shared: Arc<Shared>,
    unflushed: u64,
    last_flush_ms: i64,
    dir_dirty: bool,
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl PartitionLog {
    /// Opens (creating the directory if missing) and recovers the log in `dir`.
    ///
    /// Loads segments named by 20-digit zero-padded base offset (`00000000000000000000.log`, `.index`,
    /// `.timeindex`, Kafka's naming; other files are ignored), validates the active (last) segment batch
    /// by batch (length, magic, offset continuity, CRC-32C) and truncates anything after the last valid
    /// batch with a `tracing::warn!` naming the file and byte count, and rebuilds indexes that are
    /// missing or inconsistent. `now_ms` (ms since epoch) starts the active segment's `segment.ms` clock
    /// if it is empty.
    pub fn open(
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<(PartitionLog, RecoveryReport), LogError> {
        fs::create_dir_all(dir)?;
        let mut bases = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if let Some(base) = entry.file_name().to_str().and_then(segment::parse_log_name) {
                bases.push(base);
            }
        }
        bases.sort_unstable();
        let mut segments = Vec::with_capacity(bases.len().max(1));
        let mut truncated_bytes = 0;
        let interval = config.index_interval_bytes;
        if bases.is_empty() {
            segments.push(Segment::create(dir, 0, now_ms)?);
        } else {
            for w in bases.windows(2) {
                segments.push(Segment::open_closed(dir, w[0], w[1], interval, now_ms)?);
            }
            let last = bases[bases.len() - 1];
            let (seg, t) = Segment::open_active(dir, last, interval, now_ms)?;
            truncated_bytes = t;
            segments.push(seg);
        }
        let log_start = segments[0].base_offset();
        let log_end = segments[segments.len() - 1].end_offset();
        let shared = Arc::new(Shared {
            log_start: AtomicI64::new(log_start),
            log_end: AtomicI64::new(log_end),
            index_interval: AtomicI64::new(i64::try_from(interval).unwrap_or(i64::MAX)),
            segments: RwLock::new(segments.iter().map(|s| s.shared.clone()).collect()),
            cache: RwLock::new(TailCache::new(config.tail_cache_bytes)),
        });
        let report = RecoveryReport {
            segments: segments.len(),
            truncated_bytes,
            log_start_offset: log_start,
            log_end_offset: log_end,
        };
        tracing::debug!(dir = %dir.display(), ?report, "partition log opened");
        let log = PartitionLog {
            dir: dir.to_path_buf(),
            config,
            segments,
            shared,
            unflushed: 0,
            last_flush_ms: now_ms,
            dir_dirty: bases.is_empty(),
        };
        Ok((log, report))
    }

    fn active(&self) -> &Segment {
        &self.segments[self.segments.len() - 1]
    }

    fn active_mut(&mut self) -> &mut Segment {
        let n = self.segments.len();
        &mut self.segments[n - 1]
    }

    /// Appends one produce partition's batches (already checked by
    /// [`validate_batches`](crate::validate_batches)).
    ///
    /// Assigns offsets from the log end offset, patches each batch's base offset, applies
    /// `LogAppendTime` if configured (`now_ms`, ms since epoch), rolls the segment first if the active
    /// one is non-empty and would exceed `segment.bytes` or is older than `segment.ms`, writes all bytes
    /// with one positional write (page cache, no fsync), adds sparse index entries, fills the tail cache
    /// and publishes the new log end offset. On a write error the segment is cut back to its previous
    /// length and `LogError::Io` is returned; the log stays usable. Malformed input (which
    /// `validate_batches` would have rejected) gives `LogError::Batch` and stores nothing.
    pub fn append(&mut self, mut records: BytesMut, now_ms: i64) -> Result<AppendInfo, LogError> {
        // Cheap structural pass (no CRC): batch boundaries must be sound so we never write garbage.
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
                return Err(BatchError::CorruptMessage(format!(
                    "malformed batch at position {pos}"
                ))
                .into());
            }
            spans.push((pos, total));
            pos += total;
        }
        if spans.is_empty() {
            return Err(BatchError::InvalidRecord("empty record set".into()).into());
        }
        let base_offset = self.log_end_offset();
        let log_append = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut next = base_offset;
        let mut headers = Vec::with_capacity(spans.len());
        let mut record_count = 0u64;
        for &(p, total) in &spans {
            let batch = &mut records[p..p + total];
            patch_base_offset(batch, next);
            if log_append {
                set_log_append_time(batch, now_ms);
            }
            let h = BatchHeader::parse(batch)?;
            next = h.last_offset() + 1;
            record_count += u64::try_from(h.last_offset_delta).unwrap_or(0) + 1;
            headers.push(h);
        }
        let last_offset = next - 1;

        if self.should_roll(records.len(), last_offset, now_ms) {
            self.roll(now_ms)?;
        }
        let interval = self.config.index_interval_bytes;
        self.active_mut()
            .append(&records, &headers, interval, now_ms)?;

        let data = records.freeze();
        if self.config.tail_cache_bytes > 0 {
            let mut cache = self.shared.cache.write();
            for (&(p, total), h) in spans.iter().zip(&headers) {
                cache.push(h.base_offset, h.last_offset(), data.slice(p..p + total));
            }
        }
        self.shared.log_end.store(next, Ordering::Release);
        self.unflushed = self.unflushed.saturating_add(record_count);
        Ok(AppendInfo {
            base_offset,
            last_offset,
            log_append_time: if log_append { now_ms } else { -1 },
            log_start_offset: self.log_start_offset(),
            bytes: data.len(),
        })
    }

    fn should_roll(&self, len: usize, last_offset: i64, now_ms: i64) -> bool {
        let a = self.active();
        if a.is_empty() {
            return false;
        }
        let new_size = a.size() + len as u64;
        new_size > self.config.segment_bytes
            || new_size > u64::from(u32::MAX) // index positions are u32
            || last_offset - a.base_offset() > i64::from(i32::MAX) // relative offsets
            || a.rolling_ts.is_some_and(|t| now_ms.saturating_sub(t) > self.config.segment_ms)
    }

    /// Closes the active segment and starts a new one at the log end offset.
    fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        let base = self.log_end_offset();
        let new = Segment::create(&self.dir, base, now_ms)?;
        self.active_mut().close_active()?;
        tracing::debug!(dir = %self.dir.display(), base_offset = base, "rolled segment");
        self.shared.segments.write().push(new.shared.clone());
        self.segments.push(new);
        self.dir_dirty = true;
        Ok(())
    }

    /// `fdatasync` of every segment file and index with unflushed data (and the directory after
    /// segments were created or deleted). Resets [`unflushed_messages`](Self::unflushed_messages).
    pub fn flush(&mut self) -> Result<(), LogError> {
        for s in &mut self.segments {
            s.flush()?;
        }
        if self.dir_dirty {
            fs::File::open(&self.dir)?.sync_all()?;
            self.dir_dirty = false;
        }
        self.unflushed = 0;
        self.last_flush_ms = wall_clock_ms();
        Ok(())
    }

    /// First half of a flush that does not hold the writer's lock while syncing: notes which
    /// files have unsynced writes and how many records they cover, and clears their dirty
    /// marks. `None` when there is nothing to sync. Call [`FlushTicket::sync`] (any thread, no
    /// lock), then [`finish_flush`](Self::finish_flush) with the ticket. Appends made after this
    /// call are not covered by the ticket and stay counted as unflushed.
    ///
    /// Errors: `LogError::Io` if a file handle cannot be duplicated.
    pub fn begin_flush(&mut self) -> Result<Option<FlushTicket>, LogError> {
        if self.unflushed == 0 && !self.dir_dirty {
            return Ok(None);
        }
        let mut segments = Vec::new();
        for s in &mut self.segments {
            if let Some(sync) = s.begin_flush()? {
                segments.push(sync);
            }
        }
        let dir = std::mem::take(&mut self.dir_dirty).then(|| self.dir.clone());
        Ok(Some(FlushTicket {
            segments,
            dir,
            messages: self.unflushed,
        }))
    }

    /// Second half of [`begin_flush`](Self::begin_flush): on success the records the ticket
    /// covered stop counting as unflushed and the `flush.ms` clock restarts; on failure every
    /// segment is marked for the next flush again.
    pub fn finish_flush(&mut self, ticket: &FlushTicket, synced: bool) {
        if synced {
            self.unflushed = self.unflushed.saturating_sub(ticket.messages);
            self.last_flush_ms = wall_clock_ms();
        } else {
            for s in &mut self.segments {
                s.mark_dirty();
            }
            if ticket.dir.is_some() {
                self.dir_dirty = true;
            }
        }
    }

    /// Records appended since the last flush (for `flush.messages`).
    pub fn unflushed_messages(&self) -> u64 {
        self.unflushed
    }

    /// Wall-clock time (ms since epoch) of the last flush, or `now_ms` given to `open` (for `flush.ms`).
    pub fn last_flush_ms(&self) -> i64 {
        self.last_flush_ms
    }

    /// Deletes whole closed segments, oldest first, while the oldest is expired by `retention.ms`
    /// (`now_ms - its largest timestamp > retention_ms`) or `retention.bytes` (total size minus its
    /// size `>= retention_bytes`). The active segment is never deleted, but if it is expired by time
    /// and non-empty it is rolled first (as Kafka does), so its data is deleted in the same pass.
    /// Advances the log start offset; readers see it at once.
    pub fn enforce_retention(&mut self, now_ms: i64) -> Result<RetentionReport, LogError> {
        let active = self.active();
        if !active.is_empty()
            && retention::expired_by_time(&self.config, active.largest_timestamp(), now_ms)
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
        let mut report = RetentionReport {
            deleted_segments: n,
            deleted_bytes: 0,
            log_start_offset: self.log_start_offset(),
        };
        if n == 0 {
            return Ok(report);
        }
        let removed: Vec<Segment> = self.segments.drain(..n).collect();
        let new_start = self.segments[0].base_offset();
        {
            let mut segs = self.shared.segments.write();
            segs.drain(..n);
        }
        self.shared.log_start.store(new_start, Ordering::Release);
        self.shared.cache.write().trim_below(new_start);
        self.dir_dirty = true;
        for s in &removed {
            report.deleted_bytes += s.size();
            s.delete_files()?;
        }
        report.log_start_offset = new_start;
        tracing::info!(
            dir = %self.dir.display(),
            deleted_segments = n,
            deleted_bytes = report.deleted_bytes,
            log_start_offset = new_start,
            "retention deleted segments"
        );
        Ok(report)
    }

    /// Closes the active segment and starts a new one at the log end offset, unless the active
    /// segment is empty (then nothing changes). Used before rewriting a log's live entries, so the
    /// rewrite starts in a fresh segment and everything before it can later be dropped whole.
    pub fn roll_segment(&mut self, now_ms: i64) -> Result<(), LogError> {
        if self.active().is_empty() {
            return Ok(());
        }
        self.roll(now_ms)
    }

    /// Deletes, oldest first, every closed segment whose records all lie below `offset`, and
    /// advances the log start offset to the first remaining segment's base offset (never past
    /// `offset`, never the active segment). For logs whose live entries were rewritten at
    /// `offset` or later (compaction by rewriting). Readers see the new start at once.
    pub fn delete_segments_below(&mut self, offset: i64) -> Result<RetentionReport, LogError> {
        // Segment i may go when the next segment starts at or below `offset`.
        let mut n = 0;
        while n + 1 < self.segments.len() && self.segments[n + 1].base_offset() <= offset {
            n += 1;
        }
        let mut report = RetentionReport {
            deleted_segments: n,
            deleted_bytes: 0,
            log_start_offset: self.log_start_offset(),
        };
        if n == 0 {
            return Ok(report);
        }
        let removed: Vec<Segment> = self.segments.drain(..n).collect();
        let new_start = self.segments[0].base_offset();
        self.shared.segments.write().drain(..n);
        self.shared.log_start.store(new_start, Ordering::Release);
        self.shared.cache.write().trim_below(new_start);
        self.dir_dirty = true;
        for s in &removed {
            report.deleted_bytes += s.size();
            s.delete_files()?;
        }
        report.log_start_offset = new_start;
        Ok(report)
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
        self.flush()
    }

    /// Removes the partition's directory and everything in it.
    pub fn delete(self) -> Result<(), LogError> {
        let dir = self.dir.clone();
        self.shared.cache.write().clear();
        drop(self);
        fs::remove_dir_all(&dir)?;
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
    /// First offset stored (advanced by retention).
    pub fn log_start_offset(&self) -> i64 {
        self.shared.log_start.load(Ordering::Acquire)
    }

    /// Offset the next appended record will get; every offset below it is readable.
    pub fn log_end_offset(&self) -> i64 {
        self.shared.log_end.load(Ordering::Acquire)
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

    /// Fetch from the segment files only.
    pub(crate) fn read_disk(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<FetchData, LogError> {
        let Some(leo) = self.bounds(offset)? else {
            return Ok(FetchData::empty(offset));
        };
        let max_offset = max_offset.min(leo);
        let segs: Vec<Arc<SegmentShared>> = {
            let all = self.shared.segments.read();
            let n = all.partition_point(|s| s.base_offset <= offset);
            if n == 0 {
                // Retention removed it between the bounds check and now.
                return Err(self.out_of_range(offset));
            }
            all[n - 1..].to_vec()
        };
        let interval =
            usize::try_from(self.shared.index_interval.load(Ordering::Relaxed)).unwrap_or(4096);
        let mut out = FetchData::empty(offset);
        let mut cur = offset;
        for s in &segs {
            let r = s.read_batches(
                cur,
                max_bytes.saturating_sub(out.bytes),
                max_offset,
                out.chunks.is_empty(),
                interval,
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
            if r.stopped || cur >= max_offset {
                break;
            }
        }
        Ok(out)
    }

    /// ListOffsets by timestamp: the earliest offset whose timestamp is `>= ts` (ms), with that
    /// timestamp. Record-level for uncompressed `CreateTime` batches (record varints are parsed); for
    /// compressed or `LogAppendTime` batches the batch's base offset and max timestamp. `None` if no
    /// record is that recent.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        let leo = self.log_end_offset();
        let segs: Vec<Arc<SegmentShared>> = self.shared.segments.read().clone();
        for s in &segs {
            let (max_ts, size) = {
                let st = s.state.read();
                (st.max_ts, st.size)
            };
            if max_ts < ts {
                continue;
            }
            let start = s.time_start_position(ts);
            let mut found = None;
            let mut err = None;
            scan_headers(&s.log, start, size, |pos, h| {
                if h.base_offset >= leo {
                    return Ok(false);
                }
                if h.max_timestamp < ts {
                    return Ok(true);
                }
                if h.compression() != 0 || h.timestamp_type() == TimestampType::LogAppendTime {
                    found = Some((h.base_offset, h.max_timestamp));
                    return Ok(false);
                }
                let batch = segment::read_exact_at(&s.log, pos, h.total_size())?;
                if !crc_ok(&batch) {
                    err = Some(LogError::Corrupt(format!(
                        "CRC mismatch in batch at offset {}",
                        h.base_offset
                    )));
                    return Ok(false);
                }
                for (od, tsd) in record_deltas(&batch[BATCH_HEADER_LEN..]) {
                    let rts = h.base_timestamp.saturating_add(tsd);
                    if rts >= ts {
                        found = Some((h.base_offset.saturating_add(i64::from(od)), rts));
                        return Ok(false);
                    }
                }
                Ok(true)
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Largest timestamp in the log (ms) and the base offset of the earliest batch carrying it
    /// (ListOffsets `MAX_TIMESTAMP`, KIP-734). `None` if the log has no timestamped batch.
    pub fn max_timestamp(&self) -> Option<(i64, i64)> {
        let segs = self.shared.segments.read();
        let mut best: Option<(i64, i64)> = None;
        for s in segs.iter() {
            let st = s.state.read();
            let better = match best {
                Some((t, _)) => st.max_ts > t,
                None => true,
            };
            if st.max_ts >= 0 && better {
                best = Some((st.max_ts, st.max_ts_offset));
            }
        }
        best
    }
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
