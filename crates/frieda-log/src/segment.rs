//! One segment: `<base>.log` (concatenated batches), `<base>.index` and `<base>.timeindex`.
//! The two indexes are created when the first entry is written (an entry comes every
//! `index.interval.bytes`, 4 KiB): a segment smaller than that, such as an idle partition's,
//! has and holds open its `.log` alone (issue 58, goal 7: one file per idle partition, not three).
//!
//! The writer owns a [`Segment`]; readers share its [`SegmentShared`] (the `.log` file for `pread` and
//! the in-memory indexes behind a short-held lock). File I/O is never done while holding that lock.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::batch::{BatchHeader, BATCH_HEADER_LEN};
use crate::error::LogError;
use crate::fs::{FileRef, LogDir, LogFile};
use crate::index::{self, IndexBuilder, OffsetEntry, TimeEntry};
use crate::limits::{SegmentFiles, INDEX_FILES_PER_SEGMENT, LOG_FILES_PER_SEGMENT};
use crate::recovery;
use crate::txn_index::{AbortedTxn, TxnIndexFile};

/// The files of a segment, in the order the cleaner renames a cleaned one into place (the
/// `.log` last: its rename is the commit point). `.txnindex` exists only once a transaction
/// was aborted in the segment.
pub(crate) const SEGMENT_FILE_SUFFIXES: [&str; 4] = [".index", ".timeindex", ".txnindex", ".log"];

/// Kafka's file name of a segment: base offset zero-padded to 20 digits plus `suffix`.
pub(crate) fn file_name(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}{suffix}"))
}

/// Deletes the files of the segment based at `base_offset` (missing files are fine).
pub(crate) fn delete_segment_files(dir: &LogDir, base_offset: i64) -> Result<(), LogError> {
    for suffix in SEGMENT_FILE_SUFFIXES {
        dir.remove_if_exists(&file_name(dir, base_offset, suffix))?;
    }
    Ok(())
}

/// Base offset from a `.log` file name of exactly 20 digits, e.g. `00000000000000000042.log`.
pub(crate) fn parse_log_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".log")?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Reader-visible mutable state of a segment, updated by the writer after each write completes.
#[derive(Debug)]
pub(crate) struct SegState {
    pub offset_index: Vec<OffsetEntry>,
    pub time_index: Vec<TimeEntry>,
    /// Bytes of complete batches in the `.log`.
    pub size: u64,
    /// One past the last offset stored (the base offset when empty).
    pub end_offset: i64,
    /// Largest batch max-timestamp (ms), -1 if none.
    pub max_ts: i64,
    /// Base offset of the batch carrying `max_ts`, -1 if none.
    pub max_ts_offset: i64,
}

/// Part of a segment shared with readers.
#[derive(Debug)]
pub(crate) struct SegmentShared {
    pub base_offset: i64,
    pub log: FileRef,
    pub state: RwLock<SegState>,
    /// The transactions aborted by markers in this segment (its `.txnindex`), in order.
    pub aborted: RwLock<Vec<AbortedTxn>>,
    /// Its share of the open-file budget, given back when the last holder drops it.
    _files: SegmentFiles,
}

/// A segment read's start position (bytes) and the segment's size (bytes) and end offset
/// (exclusive) when it was located ([`SegmentShared::locate`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadStart {
    pub pos: u64,
    pub size: u64,
    pub end_offset: i64,
}

/// Result of reading batches from one segment.
pub(crate) struct SegRead {
    pub data: Option<Bytes>,
    pub bytes: usize,
    pub first_offset: i64,
    pub next_offset: i64,
    /// Stopped because of `max_bytes` or `max_offset` (do not continue into the next segment).
    pub stopped: bool,
}

/// Bytes of the pages of `[pos, pos + len)` of a file that the page cache does not hold
/// (`None`: unknown), for [`SegmentShared::slice_batches_at`]'s counts; the broker gives
/// `cachestat(2)` (this crate does no `unsafe` system calls of its own).
pub type CacheProbe = fn(&std::fs::File, u64, usize) -> Option<usize>;

/// Offset-index entries a zero-copy read takes along per segment at most
/// ([`SegmentShared::locate_marked`]): 8 MiB at the default 4 KiB index interval.
pub(crate) const MAX_READ_MARKS: usize = 2048;

/// What [`SegmentShared::slice_batches_at`] looks for: from `at` (jumping by `marks`), the
/// batches from the one containing `offset`, within `max_bytes` (the first whole if
/// `include_first_anyway`), each with its last offset below `max_offset`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SliceWant<'a> {
    pub at: ReadStart,
    pub marks: &'a [OffsetEntry],
    pub offset: i64,
    pub max_bytes: usize,
    pub max_offset: i64,
    pub include_first_anyway: bool,
}

/// Whole batches of one segment found for a zero-copy send ([`SegmentShared::slice_batches_at`]):
/// `bytes` from `pos` of its `.log` (none: nothing to send from this segment).
#[derive(Debug)]
pub(crate) struct SegSlice {
    pub pos: u64,
    pub bytes: usize,
    pub first_offset: i64,
    pub next_offset: i64,
    /// Stopped because of `max_bytes` or `max_offset` (do not continue into the next segment).
    pub stopped: bool,
}

/// Reads `len` bytes at `pos` or fails with `Corrupt` if the file is shorter.
pub(crate) fn read_exact_at(file: &dyn LogFile, pos: u64, len: usize) -> Result<Vec<u8>, LogError> {
    let mut buf = vec![0u8; len];
    match file.read_exact_at(&mut buf, pos) {
        Ok(()) => Ok(buf),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(LogError::Corrupt(format!(
            "{len} bytes at position {pos} extend past the end of the segment"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// [`read_exact_at`] for Fetch, counting in [`FETCH_READS`](crate::stats::FETCH_READS) whether
/// the page cache held the bytes: `preadv2` with `RWF_NOWAIT` returns only what is cached (EAGAIN
/// when nothing is), then a plain `pread` fetches the rest from the device.
pub(crate) fn read_for_fetch(
    file: &dyn LogFile,
    pos: u64,
    len: usize,
) -> Result<Vec<u8>, LogError> {
    use crate::stats::{FetchReads, FETCH_READS};
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    let Some(os) = file.os_file() else {
        // An in-memory file: always "cached".
        let buf = read_exact_at(file, pos, len)?;
        FetchReads::note(&FETCH_READS.page_cache, len);
        return Ok(buf);
    };
    let mut buf = vec![0u8; len];
    let mut got = 0usize;
    let mut classified = true;
    while got < len {
        let mut slices = [io::IoSliceMut::new(&mut buf[got..])];
        match preadv2(os, &mut slices, pos + got as u64, ReadWriteFlags::NOWAIT) {
            Ok(0) => break,
            Ok(n) => got += n,
            // EAGAIN: not cached. Anything else (EOPNOTSUPP on a file system without it): the
            // plain read below decides, unclassified.
            Err(e) => {
                classified = e == Errno::AGAIN;
                break;
            }
        }
    }
    if got == len {
        FetchReads::note(&FETCH_READS.page_cache, len);
        return Ok(buf);
    }
    match file.read_exact_at(&mut buf[got..], pos + got as u64) {
        Ok(()) => {
            let source = if classified {
                &FETCH_READS.disk
            } else {
                &FETCH_READS.unknown
            };
            FetchReads::note(source, len - got);
            Ok(buf)
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(LogError::Corrupt(format!(
            "{len} bytes at position {pos} extend past the end of the segment"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Calls `f(position, header)` for each batch header in `[start, limit)` of `file` until `f` returns
/// false. Headers are not CRC-checked. A header that does not fit or has an impossible length is
/// `Corrupt`.
pub(crate) fn scan_headers(
    file: &dyn LogFile,
    start: u64,
    limit: u64,
    f: impl FnMut(u64, &BatchHeader) -> Result<bool, LogError>,
) -> Result<(), LogError> {
    walk_headers(start, limit, |pos| header_at(file, pos, limit), f)
}

/// [`scan_headers`] from the file's start, reading it `chunk` bytes at a time (one `pread` per
/// window, not one per batch): for a scan that reads most of a segment anyway, as tiered
/// storage's copy does (a 1 MiB segment of 100-byte records is ~10,000 batches: as many
/// syscalls and page lookups one by one, ~10 ms of CPU in bursts that held a core from the
/// network threads). The same errors.
pub(crate) fn scan_headers_windowed(
    file: &dyn LogFile,
    limit: u64,
    chunk: usize,
    f: impl FnMut(u64, &BatchHeader) -> Result<bool, LogError>,
) -> Result<(), LogError> {
    let mut win = Window::new(file, limit, chunk);
    // `get` refuses (Corrupt) a header that would extend past `limit`.
    let header = |pos: u64| {
        let h = BatchHeader::parse(win.get(pos, BATCH_HEADER_LEN)?)?;
        check_header(&h, pos, limit)?;
        Ok(h)
    };
    walk_headers(0, limit, header, f)
}

/// The batch-by-batch walk of both scans: `header(pos)` gives the checked header at `pos`.
fn walk_headers(
    start: u64,
    limit: u64,
    mut header: impl FnMut(u64) -> Result<BatchHeader, LogError>,
    mut f: impl FnMut(u64, &BatchHeader) -> Result<bool, LogError>,
) -> Result<(), LogError> {
    let mut pos = start;
    while pos < limit {
        let h = header(pos)?;
        if !f(pos, &h)? {
            break;
        }
        pos += h.total_size() as u64;
    }
    Ok(())
}

/// Where the batches of `file` end, walking their headers from `start` (a batch's position) up
/// to `len`: at the first header that is all zeros (the unused rest of a preallocated file: no
/// batch has length 0), else `len` (also when a header is invalid: reads of that part fail
/// with `Corrupt` as before).
///
/// Errors: `LogError::Io` reading the file.
fn batches_end(file: &dyn LogFile, start: u64, len: u64) -> Result<u64, LogError> {
    let mut pos = start;
    while pos < len {
        let n = usize::try_from(len - pos).map_or(BATCH_HEADER_LEN, |n| n.min(BATCH_HEADER_LEN));
        let buf = read_exact_at(file, pos, n)?;
        if buf.iter().all(|&b| b == 0) {
            return Ok(pos);
        }
        if n < BATCH_HEADER_LEN {
            break;
        }
        let Ok(h) = BatchHeader::parse(&buf) else {
            break;
        };
        if check_header(&h, pos, len).is_err() {
            break;
        }
        pos += h.total_size() as u64;
    }
    Ok(len)
}

/// The header at `pos`, checked to be a plausible batch lying entirely before `limit`.
fn header_at(file: &dyn LogFile, pos: u64, limit: u64) -> Result<BatchHeader, LogError> {
    if limit - pos < BATCH_HEADER_LEN as u64 {
        return Err(LogError::Corrupt(format!(
            "incomplete batch header at position {pos}"
        )));
    }
    let buf = read_exact_at(file, pos, BATCH_HEADER_LEN)?;
    let h = BatchHeader::parse(&buf)?;
    check_header(&h, pos, limit)?;
    Ok(h)
}

fn check_header(h: &BatchHeader, pos: u64, limit: u64) -> Result<(), LogError> {
    if h.total_size() < BATCH_HEADER_LEN
        || pos + h.total_size() as u64 > limit
        || h.last_offset_delta < 0
    {
        return Err(LogError::Corrupt(format!(
            "bad batch header at position {pos}: length {}, last offset delta {}",
            h.batch_length, h.last_offset_delta
        )));
    }
    Ok(())
}

/// Window over a segment file for scanning headers without one `pread` per batch.
struct Window<'a> {
    file: &'a dyn LogFile,
    limit: u64,
    chunk: usize,
    start: u64,
    data: Vec<u8>,
    /// Its reads count in [`FETCH_READS`](crate::stats::FETCH_READS) (a zero-copy read counts
    /// the bytes it sends instead).
    counted: bool,
}

impl<'a> Window<'a> {
    fn new(file: &'a dyn LogFile, limit: u64, chunk: usize) -> Self {
        Window {
            file,
            limit,
            chunk,
            start: 0,
            data: Vec::new(),
            counted: true,
        }
    }

    /// Bytes `[pos, pos+len)`, reading a new window if needed.
    fn get(&mut self, pos: u64, len: usize) -> Result<&[u8], LogError> {
        let end = pos + len as u64;
        if pos < self.start || end > self.start + self.data.len() as u64 {
            let want = len.max(self.chunk) as u64;
            let avail = self.limit.saturating_sub(pos).min(want);
            if avail < len as u64 {
                return Err(LogError::Corrupt(format!(
                    "{len} bytes at position {pos} extend past the segment end {}",
                    self.limit
                )));
            }
            self.data = if self.counted {
                read_for_fetch(self.file, pos, avail as usize)?
            } else {
                read_exact_at(self.file, pos, avail as usize)?
            };
            self.start = pos;
        }
        let at = (pos - self.start) as usize;
        Ok(&self.data[at..at + len])
    }
}

impl SegmentShared {
    /// Where a read of `offset` starts in this segment, and the segment's extent now: taken
    /// under the segment's state lock, which [`read_batches_at`](Self::read_batches_at) then
    /// never takes (so a read on a low-priority thread never holds a lock the appender needs).
    pub fn locate(&self, offset: i64) -> ReadStart {
        // No entry lies after the start position and within 0 bytes of it: no marks.
        self.locate_marked(offset, 0).0
    }

    /// Reads whole batches starting with the one containing `offset`, from `at` (a
    /// [`locate`](Self::locate) of `offset` or of an earlier offset), stopping before `max_bytes`
    /// would be exceeded (unless `include_first_anyway` and nothing was taken yet, KIP-74) and
    /// before any batch whose last offset is `>= max_offset`. `pread`s only, no lock: bytes the
    /// segment gained after `at` was taken are not read.
    pub fn read_batches_at(
        &self,
        at: ReadStart,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
        include_first_anyway: bool,
        index_interval: usize,
    ) -> Result<SegRead, LogError> {
        let ReadStart {
            mut pos,
            size,
            end_offset,
        } = at;
        let mut out = SegRead {
            data: None,
            bytes: 0,
            first_offset: offset,
            next_offset: offset,
            stopped: false,
        };
        if offset >= end_offset {
            return Ok(out);
        }
        let chunk = max_bytes
            .saturating_add(index_interval)
            .saturating_add(BATCH_HEADER_LEN)
            .clamp(4096, 8 << 20);
        let mut win = Window::new(&self.log, size, chunk);
        // Skip the batches before the one containing `offset`.
        let first = loop {
            if pos >= size {
                return Ok(out);
            }
            let h = BatchHeader::parse(win.get(pos, BATCH_HEADER_LEN)?)?;
            check_header(&h, pos, size)?;
            if h.last_offset() >= offset {
                break h;
            }
            pos += h.total_size() as u64;
        };
        let first_pos = pos;
        out.first_offset = first.base_offset;
        let mut h = first;
        loop {
            let total = h.total_size();
            if h.last_offset() >= max_offset {
                out.stopped = true;
                break;
            }
            if out.bytes + total > max_bytes && (out.bytes > 0 || !include_first_anyway) {
                out.stopped = true;
                break;
            }
            out.bytes += total;
            out.next_offset = h.last_offset() + 1;
            pos += total as u64;
            if pos >= size {
                break;
            }
            h = BatchHeader::parse(win.get(pos, BATCH_HEADER_LEN)?)?;
            check_header(&h, pos, size)?;
        }
        if out.bytes > 0 {
            let end = first_pos + out.bytes as u64;
            let in_window = first_pos >= win.start && end <= win.start + win.data.len() as u64;
            let data = if in_window {
                let a = (first_pos - win.start) as usize;
                Bytes::from(std::mem::take(&mut win.data)).slice(a..a + out.bytes)
            } else {
                Bytes::from(read_for_fetch(&self.log, first_pos, out.bytes)?)
            };
            out.data = Some(data);
        } else {
            out.next_offset = offset;
            out.first_offset = offset;
        }
        Ok(out)
    }

    /// [`locate`](Self::locate), plus the offset-index entries a zero-copy read of about
    /// `max_bytes` from there may jump to ([`slice_batches_at`](Self::slice_batches_at)): those
    /// after the start position and within `max_bytes` of it, at most [`MAX_READ_MARKS`]
    /// (a longer read scans the rest header by header).
    pub fn locate_marked(&self, offset: i64, max_bytes: usize) -> (ReadStart, Vec<OffsetEntry>) {
        let st = self.state.read();
        let rel = u32::try_from(offset.saturating_sub(self.base_offset)).unwrap_or(u32::MAX);
        let first = st.offset_index.partition_point(|e| e.rel_offset <= rel);
        let pos = first
            .checked_sub(1)
            .map_or(0, |i| u64::from(st.offset_index[i].position));
        let reach = pos.saturating_add(max_bytes as u64);
        let marks = st.offset_index[first..]
            .iter()
            .take_while(|e| u64::from(e.position) <= reach)
            .take(MAX_READ_MARKS)
            .copied()
            .collect();
        let at = ReadStart {
            pos,
            size: st.size,
            end_offset: st.end_offset,
        };
        (at, marks)
    }

    /// Finds, without reading them, the whole batches [`read_batches_at`](Self::read_batches_at)
    /// would read (the same rules: from the batch containing `offset`, within `max_bytes` but
    /// the first batch whole if `include_first_anyway`, only batches whose last offset is below
    /// `max_offset`) for a zero-copy send of the file range. Reads only the batch headers it
    /// needs: up to the first batch from `at`, then it jumps to the furthest of `marks` (offset
    /// index entries from [`locate_marked`](Self::locate_marked)) the limits allow, and scans
    /// from there. `pread`s only, no lock. Counts the bytes in
    /// [`FETCH_READS`](crate::stats::FETCH_READS) by what `probe` says of their pages before the
    /// header reads (whose readahead would fill the page cache).
    ///
    /// Errors: `LogError::Io` for a failed `pread`, `LogError::Corrupt` for a batch header that
    /// does not parse or runs past the segment.
    pub fn slice_batches_at(
        &self,
        want: SliceWant<'_>,
        index_interval: usize,
        probe: CacheProbe,
    ) -> Result<SegSlice, LogError> {
        let SliceWant {
            at,
            marks,
            offset,
            max_bytes,
            max_offset,
            include_first_anyway,
        } = want;
        let ReadStart {
            mut pos,
            size,
            end_offset,
        } = at;
        let mut out = SegSlice {
            pos,
            bytes: 0,
            first_offset: offset,
            next_offset: offset,
            stopped: false,
        };
        if offset >= end_offset {
            return Ok(out);
        }
        // Headers between index entries: one window of about the index interval.
        let chunk = index_interval
            .saturating_add(BATCH_HEADER_LEN)
            .clamp(512, 64 << 10);
        // Which pages of what may be sent the page cache holds, asked before the header reads
        // (their readahead would fill it).
        let span = size.min(pos.saturating_add((max_bytes + chunk) as u64)) - pos;
        let uncached = self.log.os_file().map(|f| probe(f, pos, span as usize));
        let mut win = Window::new(&self.log, size, chunk);
        win.counted = false;
        let mut header = |pos: u64| -> Result<BatchHeader, LogError> {
            let h = BatchHeader::parse(win.get(pos, BATCH_HEADER_LEN)?)?;
            check_header(&h, pos, size)?;
            Ok(h)
        };
        let first = loop {
            if pos >= size {
                return Ok(out);
            }
            let h = header(pos)?;
            if h.last_offset() >= offset {
                break h;
            }
            pos += h.total_size() as u64;
        };
        let first_pos = pos;
        let total = first.total_size();
        if first.last_offset() >= max_offset || total > max_bytes && !include_first_anyway {
            out.stopped = true;
            return Ok(out);
        }
        out.pos = first_pos;
        out.first_offset = first.base_offset;
        out.bytes = total;
        out.next_offset = first.last_offset() + 1;
        pos += total as u64;
        // Every batch before an index entry ends below the entry's base offset, so an entry
        // within `max_bytes`, inside the located size and at or below `max_offset` may be
        // jumped to: the batches up to it all qualify.
        let reach = first_pos.saturating_add(max_bytes as u64).min(size);
        if let Some(m) = marks.iter().rev().find(|m| {
            let p = u64::from(m.position);
            p > pos && p <= reach && self.base_offset + i64::from(m.rel_offset) <= max_offset
        }) {
            pos = u64::from(m.position);
            out.bytes = (pos - first_pos) as usize;
            out.next_offset = self.base_offset + i64::from(m.rel_offset);
        }
        while pos < size {
            let h = header(pos)?;
            let total = h.total_size();
            if h.last_offset() >= max_offset || out.bytes + total > max_bytes {
                out.stopped = true;
                break;
            }
            out.bytes += total;
            out.next_offset = h.last_offset() + 1;
            pos += total as u64;
        }
        // Counted as a copying read's bytes would be: a `sendfile` reads the missing pages from
        // the device.
        use crate::stats::{FetchReads, FETCH_READS};
        match uncached {
            None => FetchReads::note(&FETCH_READS.page_cache, out.bytes),
            Some(Some(0)) => FetchReads::note(&FETCH_READS.page_cache, out.bytes),
            Some(Some(missing)) => FetchReads::note(&FETCH_READS.disk, missing.min(out.bytes)),
            Some(None) => FetchReads::note(&FETCH_READS.unknown, out.bytes),
        }
        Ok(out)
    }

    /// Position of the batch at or before `offset` that the sparse offset index knows (0 if
    /// none): where a scan for `offset` starts.
    pub fn position_of(&self, offset: i64) -> u64 {
        let st = self.state.read();
        let rel = u32::try_from(offset.saturating_sub(self.base_offset)).unwrap_or(u32::MAX);
        index::lookup_offset(&st.offset_index, rel).map_or(0, |e| u64::from(e.position))
    }

    /// Position from which to scan for the first batch with max timestamp `>= ts`.
    pub fn time_start_position(&self, ts: i64) -> u64 {
        let st = self.state.read();
        match index::lookup_time_before(&st.time_index, ts) {
            Some(t) => index::lookup_offset(&st.offset_index, t.rel_offset)
                .map_or(0, |e| u64::from(e.position)),
            None => 0,
        }
    }
}

/// The files of one segment to `fdatasync`, detached from the writer so the sync can run
/// without the partition lock (appends go on meanwhile).
pub(crate) struct SegmentSync {
    shared: Arc<SegmentShared>,
    /// The offset index, if written since the last flush.
    index_file: Option<FileRef>,
    /// The time index, if written since the last flush.
    time_file: Option<FileRef>,
    txn_file: Option<FileRef>,
    /// The segment's write generation when taken ([`Segment::finish_flush`]).
    gen: u64,
}

impl SegmentSync {
    /// The segment it syncs.
    pub fn segment(&self) -> &Arc<SegmentShared> {
        &self.shared
    }

    /// The segment's write generation when it was taken.
    pub fn generation(&self) -> u64 {
        self.gen
    }

    /// The files [`sync`](Self::sync) syncs: the log, and each index written since the last
    /// finished flush.
    pub fn files(&self) -> usize {
        1 + [&self.index_file, &self.time_file, &self.txn_file]
            .into_iter()
            .flatten()
            .count()
    }

    /// `fdatasync` of the log and of the indexes written since the last flush. An index
    /// entry comes every `index.interval.bytes` (4 KiB), so a flush of small appends is
    /// usually one `fdatasync`, not three (an `fdatasync` of an unwritten file still flushes
    /// the device's cache: 63 µs of the 260 µs a 300-byte append's flush took here, issue 58).
    pub fn sync(&self) -> Result<(), LogError> {
        self.shared.log.sync_data()?;
        for f in [&self.index_file, &self.time_file, &self.txn_file]
            .into_iter()
            .flatten()
        {
            f.sync_data()?;
        }
        Ok(())
    }
}

/// A range of a segment's log file whose writeback is to be started, taken under the
/// partition's lock ([`PartitionLog::plan_writeback`](crate::PartitionLog::plan_writeback)) and
/// started without it.
pub struct SegmentWriteback {
    shared: Arc<SegmentShared>,
    /// First byte, page-aligned.
    from: u64,
    /// Bytes, a whole number of pages.
    len: u64,
}

/// Bytes of a page of the page cache (x86-64 and arm64 Linux defaults): the unit of writeback.
const PAGE: u64 = 4096;

impl SegmentWriteback {
    /// The log file, for Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)` of [`range`](Self::range)
    /// (the caller makes the call: this crate has no unsafe code). Open while `self` lives.
    /// `None` on an in-memory file system (nothing to write back).
    pub fn file(&self) -> Option<&std::fs::File> {
        self.shared.log.os_file()
    }

    /// (first byte, bytes): page-aligned, a whole number of pages, never empty.
    pub fn range(&self) -> (u64, u64) {
        (self.from, self.len)
    }
}

/// Writer side of a segment.
pub(crate) struct Segment {
    pub shared: Arc<SegmentShared>,
    /// The `.index` and `.timeindex`, once the first entry is written.
    indexes: IndexFiles,
    /// The partition's directory (and file system).
    dir: LogDir,
    log_path: PathBuf,
    index_path: PathBuf,
    time_path: PathBuf,
    size: u64,
    end_offset: i64,
    index_len: u64,
    time_len: u64,
    builder: IndexBuilder,
    txn_index: TxnIndexFile,
    /// Wall-clock ms of the first batch (or its timestamp after a restart), for `segment.ms`.
    pub rolling_ts: Option<i64>,
    /// Ms of the last append (file mtime after a restart), used when batches carry no timestamps.
    pub last_modified_ms: i64,
    /// Bumped by every write to any of the segment's files: the segment's write generation.
    write_gen: u64,
    /// The newest generation a finished flush made durable: every file's writes up to it are
    /// synced ([`finish_flush`](Self::finish_flush)). The segment is dirty while
    /// `write_gen > synced_gen`. Only a *finished* flush moves it, so a flush begun while
    /// another is syncing still syncs every file the other was syncing (`crash_tests`, seed 6).
    synced_gen: u64,
    /// The generation of the offset index's last write. Its `fdatasync` is part of a flush only
    /// when this is above `synced_gen`: an entry comes every `index.interval.bytes` (4 KiB), so
    /// most flushes of small appends sync the log alone. (Clearing a per-file mark only when
    /// nothing at all was written during the flush, as before, left the marks set for good
    /// under a steady stream of appends: three `fdatasync`s per flush instead of one, issue 58.)
    index_gen: u64,
    /// The generation of the time index's last write.
    time_gen: u64,
    /// The generation of the transaction index's last write (its own `dirty` mark is cleared
    /// by a flush that covers it).
    txn_gen: u64,
    /// Bytes of the log file whose writeback was started ([`Segment::plan_writeback`]): a
    /// page boundary at or below `size`.
    written_back: u64,
    /// Files were created since [`take_created_files`](Self::take_created_files) was last called.
    created_files: bool,
    /// The `.log` file was made longer than `size` ([`preallocate`](Self::preallocate)): the
    /// bytes after `size` are zeros until [`trim`](Self::trim) cuts them.
    preallocated: bool,
    /// Test hook: the next log write stores this many bytes and then fails.
    #[cfg(test)]
    pub fail_next_write: Option<(usize, io::ErrorKind)>,
}

/// How a new segment's files come to be ([`Segment::create_in_budget`]).
#[derive(Clone, Copy)]
enum Made<'a> {
    /// Under their own names; stray files of an earlier segment with the same base removed.
    New,
    /// Under their own names in a directory just made (nothing to remove).
    InEmptyDir,
    /// Under their names plus this suffix (the cleaner's), renamed later.
    Renamed(&'a str),
}

/// The files of a segment when it is opened or created.
struct Files {
    log: FileRef,
    indexes: IndexFiles,
}

/// A segment's offset and time index files (`.index`, `.timeindex`), opened together.
enum IndexFiles {
    /// Neither file exists: no entry was written yet. They are created, taking
    /// [`INDEX_FILES_PER_SEGMENT`] of the open-file budget, when the first one is.
    Unopened,
    /// Open, with their share of the open-file budget.
    Open {
        index: FileRef,
        time: FileRef,
        _budget: SegmentFiles,
    },
    /// The open-file budget was used up when the first entry came: the entries are kept in
    /// memory only, and a restart rebuilds them from the log (a missing index is rebuilt, as
    /// Kafka does). An append never fails for its index.
    MemoryOnly,
}

impl IndexFiles {
    /// Which of the two files at `paths` exist.
    fn present(dir: &LogDir, paths: [&Path; 2]) -> [bool; 2] {
        paths.map(|p| dir.fs().exists(p))
    }

    /// Opens both files at `paths` if either exists (`present`, from
    /// [`present`](Self::present)), creating the other, and counts them whatever the budget (a
    /// segment opened at start-up); `Unopened` when neither does.
    fn open_existing(
        dir: &LogDir,
        paths: [&Path; 2],
        present: [bool; 2],
    ) -> io::Result<IndexFiles> {
        if present == [false, false] {
            return Ok(IndexFiles::Unopened);
        }
        Ok(IndexFiles::Open {
            index: open_rw(dir, paths[0], false)?,
            time: open_rw(dir, paths[1], false)?,
            _budget: SegmentFiles::force(INDEX_FILES_PER_SEGMENT),
        })
    }

    /// Creates (truncating) both files at `paths`, with `budget`.
    fn create(dir: &LogDir, paths: [&Path; 2], budget: SegmentFiles) -> io::Result<IndexFiles> {
        Ok(IndexFiles::Open {
            index: open_rw(dir, paths[0], true)?,
            time: open_rw(dir, paths[1], true)?,
            _budget: budget,
        })
    }

    /// The two files, if open.
    fn handles(&self) -> Option<(&FileRef, &FileRef)> {
        match self {
            IndexFiles::Open { index, time, .. } => Some((index, time)),
            _ => None,
        }
    }

    /// The bytes of both files (empty when not open).
    fn read(&self) -> Result<(Vec<u8>, Vec<u8>), LogError> {
        match self.handles() {
            Some((i, t)) => Ok((read_all(i.as_ref())?, read_all(t.as_ref())?)),
            None => Ok((Vec::new(), Vec::new())),
        }
    }
}

/// In-memory content of a segment loaded from disk.
struct Loaded {
    offset_index: Vec<OffsetEntry>,
    time_index: Vec<TimeEntry>,
    size: u64,
    end_offset: i64,
    builder: IndexBuilder,
}

/// A segment's offset and time index entries.
type Indexes = (Vec<OffsetEntry>, Vec<TimeEntry>);

/// Opens (creating if missing) `path` on `dir`'s file system for reading and writing.
fn open_rw(dir: &LogDir, path: &Path, truncate: bool) -> io::Result<FileRef> {
    dir.fs().open(path, true, truncate)
}

impl Segment {
    fn assemble(
        dir: &LogDir,
        base_offset: i64,
        files: Files,
        loaded: Loaded,
        txn: (TxnIndexFile, Vec<AbortedTxn>),
        now_ms: i64,
        budget: SegmentFiles,
    ) -> Segment {
        let Files { log, indexes } = files;
        let Loaded {
            offset_index,
            time_index,
            size,
            end_offset,
            builder,
        } = loaded;
        let last_modified_ms = log.modified_ms().unwrap_or(now_ms);
        let index_len = (offset_index.len() * index::OFFSET_ENTRY_LEN) as u64;
        let time_len = (time_index.len() * index::TIME_ENTRY_LEN) as u64;
        let state = SegState {
            offset_index,
            time_index,
            size,
            end_offset,
            max_ts: builder.max_ts,
            max_ts_offset: builder.max_ts_offset,
        };
        Segment {
            shared: Arc::new(SegmentShared {
                base_offset,
                log,
                state: RwLock::new(state),
                aborted: RwLock::new(txn.1),
                _files: budget,
            }),
            indexes,
            dir: dir.clone(),
            log_path: file_name(dir, base_offset, ".log"),
            index_path: file_name(dir, base_offset, ".index"),
            time_path: file_name(dir, base_offset, ".timeindex"),
            size,
            end_offset,
            index_len,
            time_len,
            builder,
            txn_index: txn.0,
            rolling_ts: None,
            last_modified_ms,
            write_gen: 0,
            synced_gen: 0,
            index_gen: 0,
            time_gen: 0,
            txn_gen: 0,
            written_back: 0,
            created_files: false,
            preallocated: false,
            #[cfg(test)]
            fail_next_write: None,
        }
    }

    /// Creates a new empty segment: its `.log` (stray index files with the same base are
    /// removed; the indexes are created with their first entry).
    ///
    /// Errors: [`LogError::OpenFilesBudget`] beyond the open-file budget (nothing created),
    /// `LogError::Io`.
    pub fn create(dir: &LogDir, base_offset: i64, now_ms: i64) -> Result<Segment, LogError> {
        let budget = SegmentFiles::reserve(LOG_FILES_PER_SEGMENT)?;
        Self::create_in_budget(dir, base_offset, now_ms, Made::New, budget)
    }

    /// [`create`](Self::create) in a directory just made and empty: no stray files to remove.
    ///
    /// Errors: as [`create`](Self::create).
    pub fn create_in_empty_dir(
        dir: &LogDir,
        base_offset: i64,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let budget = SegmentFiles::reserve(LOG_FILES_PER_SEGMENT)?;
        Self::create_in_budget(dir, base_offset, now_ms, Made::InEmptyDir, budget)
    }

    /// Creates a new empty segment whose files carry `suffix` after their usual names (the
    /// cleaner writes `<base>.log.cleaned` and renames it later); the segment remembers the usual
    /// names for deletion. Its open files stay valid across those renames.
    pub fn create_as(
        dir: &LogDir,
        base_offset: i64,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Segment, LogError> {
        let budget = SegmentFiles::force(LOG_FILES_PER_SEGMENT);
        Self::create_in_budget(dir, base_offset, now_ms, Made::Renamed(suffix), budget)
    }

    /// Creates a segment's `.log`; for the cleaner (a suffix) its indexes too, at once (they
    /// are renamed with the log), else they are created with their first entry.
    fn create_in_budget(
        dir: &LogDir,
        base_offset: i64,
        now_ms: i64,
        made: Made<'_>,
        budget: SegmentFiles,
    ) -> Result<Segment, LogError> {
        let sfx = match made {
            Made::Renamed(suffix) => suffix,
            Made::New | Made::InEmptyDir => "",
        };
        let index_paths = [
            file_name(dir, base_offset, &format!(".index{sfx}")),
            file_name(dir, base_offset, &format!(".timeindex{sfx}")),
        ];
        let txn_path = file_name(dir, base_offset, &format!(".txnindex{sfx}"));
        let indexes = match made {
            Made::Renamed(_) => IndexFiles::create(
                dir,
                [&index_paths[0], &index_paths[1]],
                SegmentFiles::force(INDEX_FILES_PER_SEGMENT),
            )?,
            Made::New => {
                // A stray index of an earlier segment with this base must not be taken for
                // this one's after a restart.
                for p in &index_paths {
                    dir.remove_if_exists(p)?;
                }
                IndexFiles::Unopened
            }
            Made::InEmptyDir => IndexFiles::Unopened,
        };
        if !matches!(made, Made::InEmptyDir) {
            // A stray transaction index is truncated when first written anyway.
            let _ = dir.fs().remove_file(&txn_path);
        }
        let log = open_rw(
            dir,
            &file_name(dir, base_offset, &format!(".log{sfx}")),
            true,
        )?;
        let files = Files { log, indexes };
        let loaded = Loaded {
            offset_index: Vec::new(),
            time_index: Vec::new(),
            size: 0,
            end_offset: base_offset,
            builder: IndexBuilder::new(),
        };
        let txn = TxnIndexFile::create(dir, txn_path);
        let mut s = Segment::assemble(
            dir,
            base_offset,
            files,
            loaded,
            (txn, Vec::new()),
            now_ms,
            budget,
        );
        s.last_modified_ms = now_ms;
        Ok(s)
    }

    /// Opens a closed (not last) segment ending at `end_offset` (the next segment's base). Loads its
    /// indexes, rebuilding them from the log if missing or inconsistent. The log is not CRC-checked.
    pub fn open_closed(
        dir: &LogDir,
        base_offset: i64,
        end_offset: i64,
        index_interval: usize,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let log_path = file_name(dir, base_offset, ".log");
        let log = open_rw(dir, &log_path, false)?;
        let file_len = log.size()?;
        let idx_path = file_name(dir, base_offset, ".index");
        let tim_path = file_name(dir, base_offset, ".timeindex");
        let present = IndexFiles::present(dir, [&idx_path, &tim_path]);
        let idx_exists = present == [true, true];
        let mut indexes = IndexFiles::open_existing(dir, [&idx_path, &tim_path], present)?;
        let rel_end = u64::try_from(end_offset - base_offset).unwrap_or(0);
        let (ib, tb) = indexes.read()?;
        // A preallocated segment whose cut at the roll a power cut took (the cut and the next
        // segment's creation reach the disk in either order) still ends in zeros: its batches
        // end where they begin. Found from the last offset-index entry on (a few headers).
        // (Only the last entry is decoded here; `load_indexes` decodes them all.)
        let last_entry = ib.len().checked_sub(index::OFFSET_ENTRY_LEN);
        let scan_from = last_entry
            .filter(|_| ib.len() % index::OFFSET_ENTRY_LEN == 0)
            .and_then(|at| index::decode_offsets(&ib[at..]))
            .and_then(|o| o.last().map(|e| u64::from(e.position)))
            .filter(|&p| p < file_len)
            .unwrap_or(0);
        let size = batches_end(&log, scan_from, file_len)?;
        if size < file_len {
            tracing::warn!(segment = %log_path.display(), size, file_len,
                "cutting the zeros after the last batch of a closed segment (preallocated, its cut lost in a crash)");
            log.set_len(size)?;
            log.sync_data()?;
        }
        // Without both files (a segment with data has a time entry at least) the indexes are
        // rebuilt.
        let loaded = if idx_exists || size == 0 {
            Self::load_indexes(&log, &ib, &tb, base_offset, size, rel_end)?
        } else {
            None
        };
        let (offsets, times, builder) = match loaded {
            Some((o, t)) => {
                let b = IndexBuilder::from_time_index(base_offset, &t);
                (o, t, b)
            }
            None => {
                if idx_exists || size > 0 {
                    tracing::warn!(
                        segment = %log_path.display(),
                        "offset/time index missing or inconsistent; rebuilding from the log"
                    );
                }
                let mut headers = Vec::new();
                // A closed segment is not truncated: index what is readable, and let reads of a
                // corrupt part fail with `Corrupt`.
                if let Err(e) = scan_headers(&log, 0, size, |pos, h| {
                    headers.push((pos, *h));
                    Ok(true)
                }) {
                    tracing::warn!(segment = %log_path.display(), error = %e, "corrupt closed segment");
                }
                let (o, t, mut b) = rebuild_indexes(base_offset, &headers, index_interval);
                let mut t = t;
                t.extend(b.finish(base_offset));
                indexes = rewrite_indexes(
                    dir,
                    indexes,
                    [&idx_path, &tim_path],
                    &index::encode_offsets(&o),
                    &index::encode_times(&t),
                )?
                .0;
                (o, t, b)
            }
        };
        let files = Files { log, indexes };
        let loaded = Loaded {
            offset_index: offsets,
            time_index: times,
            size,
            end_offset,
            builder,
        };
        let txn = TxnIndexFile::open(dir, file_name(dir, base_offset, ".txnindex"))?;
        Ok(Segment::assemble(
            dir,
            base_offset,
            files,
            loaded,
            txn,
            now_ms,
            SegmentFiles::force(LOG_FILES_PER_SEGMENT),
        ))
    }

    /// Loads and sanity-checks a closed segment's indexes; `None` means "rebuild".
    fn load_indexes(
        log: &dyn LogFile,
        ib: &[u8],
        tb: &[u8],
        base_offset: i64,
        size: u64,
        rel_end: u64,
    ) -> Result<Option<Indexes>, LogError> {
        let (Some(o), Some(t)) = (index::decode_offsets(ib), index::decode_times(tb)) else {
            return Ok(None);
        };
        if !index::offsets_consistent(&o, size, rel_end) || !index::times_consistent(&t, rel_end) {
            return Ok(None);
        }
        // A non-empty segment always has a final time entry unless it has no timestamps at all:
        // rebuild to find out (cheap and rare).
        if size > 0 && t.is_empty() {
            return Ok(None);
        }
        // The last offset entry must point at a batch with that base offset.
        if let Some(last) = o.last() {
            match header_at(log, u64::from(last.position), size) {
                Ok(h)
                    if h.base_offset == base_offset.saturating_add(i64::from(last.rel_offset)) => {}
                _ => return Ok(None),
            }
        }
        Ok(Some((o, t)))
    }

    /// Opens a segment after an unclean shutdown and recovers it: validates every batch (length,
    /// magic, CRC, increasing offsets below `next_base`), truncates anything after the last valid
    /// one, rebuilds both indexes (with the final time entry when it is a closed segment, i.e.
    /// `next_base` is known) and rewrites the
    /// index files if they differ. Returns the segment and the bytes truncated; a segment that
    /// lost bytes becomes the log's active segment (the caller drops the ones after it).
    pub fn recover(
        dir: &LogDir,
        base_offset: i64,
        index_interval: usize,
        now_ms: i64,
        next_base: Option<i64>,
    ) -> Result<(Segment, u64), LogError> {
        let log_path = file_name(dir, base_offset, ".log");
        let log = open_rw(dir, &log_path, false)?;
        let file_len = log.size()?;
        let limit = next_base.unwrap_or(i64::MAX);
        let rec = recovery::validate_segment(&log, base_offset, file_len, limit)?;
        let closed = next_base.is_some();
        let truncated = file_len - rec.valid_len;
        if truncated > 0 {
            tracing::warn!(
                segment = %log_path.display(),
                truncated_bytes = truncated,
                valid_bytes = rec.valid_len,
                reason = rec.reason.as_deref().unwrap_or(""),
                "truncating torn tail: everything from the first invalid batch on"
            );
            log.set_len(rec.valid_len)?;
            log.sync_data()?;
        }
        let closed = closed && truncated == 0;
        let (offsets, mut times, mut builder) =
            rebuild_indexes(base_offset, &rec.batches, index_interval);
        if closed {
            times.extend(builder.finish(base_offset));
        }
        let idx_path = file_name(dir, base_offset, ".index");
        let tim_path = file_name(dir, base_offset, ".timeindex");
        let present = IndexFiles::present(dir, [&idx_path, &tim_path]);
        let indexes = IndexFiles::open_existing(dir, [&idx_path, &tim_path], present)?;
        let ob = index::encode_offsets(&offsets);
        let tb = index::encode_times(&times);
        let (indexes, rewritten) = rewrite_indexes(dir, indexes, [&idx_path, &tim_path], &ob, &tb)?;
        if rewritten {
            tracing::warn!(segment = %log_path.display(), "rebuilt offset/time index of a recovered segment");
        }
        let end_offset = rec
            .batches
            .last()
            .map_or(base_offset, |(_, h)| h.last_offset().saturating_add(1));
        let files = Files { log, indexes };
        let loaded = Loaded {
            offset_index: offsets,
            time_index: times,
            size: rec.valid_len,
            end_offset,
            builder,
        };
        let txn = TxnIndexFile::open(dir, file_name(dir, base_offset, ".txnindex"))?;
        let mut seg = Segment::assemble(
            dir,
            base_offset,
            files,
            loaded,
            txn,
            now_ms,
            SegmentFiles::force(LOG_FILES_PER_SEGMENT),
        );
        if !closed && !rec.batches.is_empty() {
            seg.rolling_ts = Some(creation_ms(&seg.shared.log, now_ms));
        }
        Ok((seg, truncated))
    }

    /// Opens the active (last) segment of a log that was flushed up to at least its end (a clean
    /// shutdown): no CRC validation, the indexes are loaded and checked, and only the headers
    /// after the last offset-index entry are read to find the end and restore the index
    /// builder. `None` when anything is inconsistent or the segment ends above
    /// `recovery_point` (then [`recover`](Self::recover) it).
    pub fn open_flushed_active(
        dir: &LogDir,
        base_offset: i64,
        now_ms: i64,
        recovery_point: i64,
    ) -> Result<Option<Segment>, LogError> {
        let log_path = file_name(dir, base_offset, ".log");
        let idx_path = file_name(dir, base_offset, ".index");
        let tim_path = file_name(dir, base_offset, ".timeindex");
        let present = IndexFiles::present(dir, [&idx_path, &tim_path]);
        if present != [true, true] {
            return Ok(None);
        }
        let log = open_rw(dir, &log_path, false)?;
        let size = log.size()?;
        let indexes = IndexFiles::open_existing(dir, [&idx_path, &tim_path], present)?;
        let rel_end = u64::try_from(recovery_point.saturating_sub(base_offset)).unwrap_or(0);
        let (ib, tb) = indexes.read()?;
        let Some((offsets, times)) =
            Self::load_indexes(&log, &ib, &tb, base_offset, size, rel_end)?
        else {
            return Ok(None);
        };
        let mut builder = IndexBuilder::from_time_index(base_offset, &times);
        let start = offsets.last().map_or(0, |e| u64::from(e.position));
        let mut end_offset = base_offset;
        let mut scan_ok = true;
        let mut last_base = i64::MIN;
        let scanned = scan_headers(&log, start, size, |_, h| {
            if h.base_offset < base_offset || h.base_offset <= last_base || h.magic != 2 {
                scan_ok = false;
                return Ok(false);
            }
            last_base = h.base_offset;
            builder.observe(h);
            end_offset = h.last_offset().saturating_add(1);
            Ok(true)
        });
        if scanned.is_err() || !scan_ok || end_offset > recovery_point {
            return Ok(None);
        }
        if start == 0 && size == 0 {
            end_offset = base_offset;
        }
        builder.set_bytes_since_entry(usize::try_from(size - start).unwrap_or(usize::MAX));
        let files = Files { log, indexes };
        let loaded = Loaded {
            offset_index: offsets,
            time_index: times,
            size,
            end_offset,
            builder,
        };
        let txn = TxnIndexFile::open(dir, file_name(dir, base_offset, ".txnindex"))?;
        let mut seg = Segment::assemble(
            dir,
            base_offset,
            files,
            loaded,
            txn,
            now_ms,
            SegmentFiles::force(LOG_FILES_PER_SEGMENT),
        );
        if size > 0 {
            seg.rolling_ts = Some(creation_ms(&seg.shared.log, now_ms));
        }
        Ok(Some(seg))
    }

    pub fn base_offset(&self) -> i64 {
        self.shared.base_offset
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    /// True when the offset or the time index holds as many entries as `max_index_bytes`
    /// has room for (Kafka's `AbstractIndex.isFull`: `maxEntries` is the size rounded down
    /// to whole entries).
    pub fn index_full(&self, max_index_bytes: u64) -> bool {
        let full = |len: u64, entry: usize| {
            let entry = entry as u64;
            len / entry >= max_index_bytes / entry
        };
        full(self.index_len, index::OFFSET_ENTRY_LEN) || full(self.time_len, index::TIME_ENTRY_LEN)
    }
    /// The first batch's max timestamp (ms), as Kafka's `LogSegment.getFirstBatchTimestamp`;
    /// `None` for an empty or unreadable segment.
    pub fn first_batch_timestamp(&self) -> Option<i64> {
        if self.size < BATCH_HEADER_LEN as u64 {
            return None;
        }
        let buf = read_exact_at(&self.shared.log, 0, BATCH_HEADER_LEN).ok()?;
        BatchHeader::parse(&buf).ok().map(|h| h.max_timestamp)
    }

    /// Largest timestamp for retention: the largest batch timestamp, or the last modification time
    /// (ms) if no batch carries one (as Kafka does).
    pub fn largest_timestamp(&self) -> i64 {
        if self.builder.max_ts >= 0 {
            self.builder.max_ts
        } else {
            self.last_modified_ms
        }
    }

    /// Appends `data` (whole batches whose headers, already patched, are `headers`) with one
    /// positional write, then the new index entries. On any write error the three files are cut
    /// back to their previous lengths and nothing changes in memory.
    pub fn append(
        &mut self,
        data: &[u8],
        headers: &[BatchHeader],
        index_interval: usize,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let start = self.size;
        let mut builder = self.builder.clone();
        let mut offs = Vec::new();
        let mut times = Vec::new();
        let mut pos = start;
        for h in headers {
            let (o, t) = builder.on_batch(self.shared.base_offset, h, pos, index_interval);
            offs.extend(o);
            times.extend(t);
            pos += h.total_size() as u64;
        }
        if let Err(e) = self.write_all(data, &offs, &times) {
            self.truncate_to(start, self.index_len, self.time_len);
            return Err(e.into());
        }
        self.size += data.len() as u64;
        self.index_len += (offs.len() * index::OFFSET_ENTRY_LEN) as u64;
        self.time_len += (times.len() * index::TIME_ENTRY_LEN) as u64;
        self.builder = builder;
        if let Some(last) = headers.last() {
            self.end_offset = last.last_offset().saturating_add(1);
        }
        self.rolling_ts.get_or_insert(now_ms);
        self.last_modified_ms = now_ms;
        self.write_gen += 1;
        if !offs.is_empty() {
            self.index_gen = self.write_gen;
        }
        if !times.is_empty() {
            self.time_gen = self.write_gen;
        }
        let mut st = self.shared.state.write();
        st.offset_index.extend(offs);
        st.time_index.extend(times);
        st.size = self.size;
        st.end_offset = self.end_offset;
        st.max_ts = self.builder.max_ts;
        st.max_ts_offset = self.builder.max_ts_offset;
        Ok(())
    }

    /// The writeback to start for the whole pages appended since the last call, if any: from the
    /// last planned page boundary to the page boundary at or below the log's size. The page the
    /// next append writes into stays dirty and out of writeback, so that append never waits for
    /// the device. `None` until at least `min_bytes` of whole pages are new.
    pub fn plan_writeback_at_least(&mut self, min_bytes: u64) -> Option<SegmentWriteback> {
        let end = self.size / PAGE * PAGE;
        if end > self.written_back && end - self.written_back < min_bytes {
            return None;
        }
        if end <= self.written_back {
            // After a truncation below the planned point, start again from the new end.
            self.written_back = self.written_back.min(end);
            return None;
        }
        let from = self.written_back;
        self.written_back = end;
        Some(SegmentWriteback {
            shared: self.shared.clone(),
            from,
            len: end - from,
        })
    }

    fn write_all(
        &mut self,
        data: &[u8],
        offs: &[OffsetEntry],
        times: &[TimeEntry],
    ) -> io::Result<()> {
        #[cfg(test)]
        if let Some((n, kind)) = self.fail_next_write.take() {
            self.shared
                .log
                .write_all_at(&data[..n.min(data.len())], self.size)?;
            return Err(io::Error::new(kind, "injected write failure"));
        }
        self.shared.log.write_all_at(data, self.size)?;
        if offs.is_empty() && times.is_empty() {
            return Ok(());
        }
        if let Some((index_file, time_file)) = self.index_handles()? {
            if !offs.is_empty() {
                index_file.write_all_at(&index::encode_offsets(offs), self.index_len)?;
            }
            if !times.is_empty() {
                time_file.write_all_at(&index::encode_times(times), self.time_len)?;
            }
        }
        Ok(())
    }

    /// The index files, created with the first entry (taking their share of the open-file
    /// budget); `None` when the budget was used up then (the entries stay in memory only).
    ///
    /// Errors: the file system's, creating them.
    fn index_handles(&mut self) -> io::Result<Option<(FileRef, FileRef)>> {
        if matches!(self.indexes, IndexFiles::Unopened) {
            self.indexes = match SegmentFiles::reserve(INDEX_FILES_PER_SEGMENT) {
                Ok(budget) => {
                    let files =
                        IndexFiles::create(&self.dir, [&self.index_path, &self.time_path], budget)?;
                    self.created_files = true;
                    files
                }
                Err(e) => {
                    tracing::warn!(segment = %self.log_path.display(), error = %e,
                        "open-file budget used up: this segment's offset and time indexes are kept in memory only (rebuilt from the log at restart)");
                    IndexFiles::MemoryOnly
                }
            };
        }
        Ok(self.indexes.handles().map(|(i, t)| (i.clone(), t.clone())))
    }

    /// Whether files of the segment were created since the last call (the index files, with
    /// their first entry): their directory entries need the directory's next fsync.
    pub fn take_created_files(&mut self) -> bool {
        std::mem::take(&mut self.created_files)
    }

    /// Cuts the segment's files back to the given lengths after a failed append (best effort: if
    /// this fails too, recovery at the next open truncates the torn tail).
    pub(crate) fn truncate_to(&self, log_len: u64, index_len: u64, time_len: u64) {
        let mut files = vec![(&self.shared.log, log_len, &self.log_path)];
        if let Some((index_file, time_file)) = self.indexes.handles() {
            files.push((index_file, index_len, &self.index_path));
            files.push((time_file, time_len, &self.time_path));
        }
        for (f, len, path) in files {
            if let Err(e) = f.set_len(len) {
                tracing::error!(file = %path.display(), error = %e, "cannot truncate after failed append");
            }
        }
    }

    /// Makes the `.log` file of this (new, active) segment `bytes` long (Kafka's `preallocate`,
    /// `log.preallocate`: the file set to `segment.bytes` at creation, as Kafka's
    /// `FileRecords.openChannel` does), sparse: no block is allocated, but appends then write
    /// inside the file's length, so the `fdatasync` that makes an append durable need not
    /// journal a new file size (issue 58, goal 6: on this machine's ext4 a 600-byte append and
    /// `fdatasync` took p50 176 µs growing the file, 118 µs inside it). The zeros after the log
    /// end are cut when the segment stops being active ([`trim`](Self::trim)); after a crash,
    /// recovery cuts them as a torn tail (a batch of length 0 is invalid).
    ///
    /// Errors: `LogError::Io` from setting the length (the segment stays as it was).
    pub fn preallocate(&mut self, bytes: u64) -> Result<(), LogError> {
        if bytes <= self.size {
            return Ok(());
        }
        self.shared.log.set_len(bytes)?;
        self.preallocated = true;
        Ok(())
    }

    /// Cuts a [`preallocate`](Self::preallocate)d `.log` file back to the segment's size; the
    /// next flush makes the cut durable (the log counts as written). Nothing when not
    /// preallocated.
    ///
    /// Errors: `LogError::Io` from cutting the file.
    pub fn trim(&mut self) -> Result<(), LogError> {
        if !self.preallocated {
            return Ok(());
        }
        self.shared.log.set_len(self.size)?;
        self.preallocated = false;
        self.write_gen += 1;
        Ok(())
    }

    /// Called when the segment stops being the active one: cuts a preallocated file to its size
    /// and appends the final time-index entry.
    pub fn close_active(&mut self) -> Result<(), LogError> {
        self.trim()?;
        if let Some(t) = self.builder.finish(self.shared.base_offset) {
            if let Some((_, time_file)) = self.index_handles()? {
                time_file.write_all_at(&index::encode_times(&[t]), self.time_len)?;
            }
            self.time_len += index::TIME_ENTRY_LEN as u64;
            self.write_gen += 1;
            self.time_gen = self.write_gen;
            self.shared.state.write().time_index.push(t);
        }
        Ok(())
    }

    /// `fdatasync` of the log and of each index written since the last flush, if anything was.
    pub fn flush(&mut self) -> Result<(), LogError> {
        if let Some(sync) = self.begin_flush()? {
            sync.sync()?;
            self.finish_flush(sync.gen);
        }
        Ok(())
    }

    /// Marks every file of the segment as written since the last flush (recovered bytes, a
    /// rewritten tail), so the next flush syncs them all: the transaction index too, whose
    /// entries a crashed process may have left only in the page cache (found by
    /// `crash_tests`, seed 20: a kill, recovery, a power cut took an aborted transaction's
    /// entry below the recovery point).
    ///
    /// Errors: `LogError::Io` opening the transaction index.
    pub fn mark_dirty(&mut self) -> Result<(), LogError> {
        self.write_gen += 1;
        self.index_gen = self.write_gen;
        self.time_gen = self.write_gen;
        self.txn_gen = self.write_gen;
        self.txn_index.mark_unsynced()
    }

    /// Whether any of the segment's files has writes no finished flush synced.
    pub fn is_dirty(&self) -> bool {
        self.write_gen > self.synced_gen
    }

    /// Takes what a flush of this segment must sync, if anything was written since the last one
    /// finished. The files are synced by [`SegmentSync::sync`] without the caller holding the
    /// log's lock; the dirty marks stay until [`finish_flush`](Self::finish_flush) (so a
    /// second flush taken meanwhile syncs them too, never counting on the first).
    pub fn begin_flush(&mut self) -> Result<Option<SegmentSync>, LogError> {
        if !self.is_dirty() {
            return Ok(None);
        }
        let unsynced = |gen: u64| gen > self.synced_gen;
        let handles = self.indexes.handles();
        Ok(Some(SegmentSync {
            shared: self.shared.clone(),
            index_file: handles
                .filter(|_| unsynced(self.index_gen))
                .map(|(i, _)| i.clone()),
            time_file: handles
                .filter(|_| unsynced(self.time_gen))
                .map(|(_, t)| t.clone()),
            txn_file: self.txn_index.sync_handle(),
            gen: self.write_gen,
        }))
    }

    /// After a [`SegmentSync`] of generation `gen` synced: every file's writes up to `gen` are
    /// durable. Flushes may finish out of order; the newest generation wins.
    pub fn finish_flush(&mut self, gen: u64) {
        debug_assert!(
            gen <= self.write_gen,
            "a flush never covers writes not made yet"
        );
        self.synced_gen = self.synced_gen.max(gen);
        if self.txn_gen <= self.synced_gen {
            self.txn_index.dirty = false;
        }
    }

    /// The directory holding the segment's files.
    pub(crate) fn dir(&self) -> &LogDir {
        &self.dir
    }

    /// Removes the segment's files. Readers holding the shared `.log` handle can finish their
    /// reads.
    pub fn delete_files(&self) -> Result<(), LogError> {
        for p in [&self.log_path, &self.index_path, &self.time_path] {
            self.dir.remove_if_exists(p)?;
        }
        self.txn_index.delete()
    }

    /// Records a transaction aborted by a marker in this segment (its `.txnindex`, synced with
    /// the segment).
    pub fn append_aborted(&mut self, e: AbortedTxn) -> Result<(), LogError> {
        self.txn_index.append(&e)?;
        self.shared.aborted.write().push(e);
        self.write_gen += 1;
        self.txn_gen = self.write_gen;
        Ok(())
    }

    /// Replaces the aborted transactions of this segment (recovery rebuilt them); rewrites the
    /// file only if they differ.
    pub fn set_aborted(&mut self, entries: Vec<AbortedTxn>) -> Result<bool, LogError> {
        if *self.shared.aborted.read() == entries {
            return Ok(false);
        }
        self.txn_index.rewrite(&entries)?;
        *self.shared.aborted.write() = entries;
        self.write_gen += 1;
        self.txn_gen = self.write_gen;
        Ok(true)
    }

    /// The aborted transactions of this segment.
    pub fn aborted(&self) -> Vec<AbortedTxn> {
        self.shared.aborted.read().clone()
    }

    /// Cuts the segment before the batch containing `offset` (and everything after), rebuilds
    /// its indexes and makes it the active segment again (a follower's log truncation).
    ///
    /// Errors: `LogError::Io` or `Corrupt` from reading the headers or cutting the files.
    pub fn truncate_to_offset(
        &mut self,
        offset: i64,
        index_interval: usize,
    ) -> Result<(), LogError> {
        let mut kept = Vec::new();
        let mut cut = 0u64;
        scan_headers(&self.shared.log, 0, self.size, |pos, h| {
            if h.last_offset() >= offset {
                return Ok(false);
            }
            kept.push((pos, *h));
            cut = pos + h.total_size() as u64;
            Ok(true)
        })?;
        let (offsets, times, builder) =
            rebuild_indexes(self.shared.base_offset, &kept, index_interval);
        let ob = index::encode_offsets(&offsets);
        let tb = index::encode_times(&times);
        self.shared.log.set_len(cut)?;
        if !ob.is_empty() || !tb.is_empty() {
            self.index_handles()?;
        }
        if let Some((index_file, time_file)) = self.indexes.handles() {
            write_whole(index_file.as_ref(), &ob)?;
            write_whole(time_file.as_ref(), &tb)?;
        }
        self.size = cut;
        self.index_len = ob.len() as u64;
        self.time_len = tb.len() as u64;
        self.builder = builder;
        self.end_offset = kept
            .last()
            .map_or(self.shared.base_offset, |(_, h)| h.last_offset() + 1);
        let aborted: Vec<AbortedTxn> = self
            .aborted()
            .into_iter()
            .filter(|e| e.last_offset < self.end_offset)
            .collect();
        self.set_aborted(aborted)?;
        self.mark_dirty()?;
        let mut st = self.shared.state.write();
        st.offset_index = offsets;
        st.time_index = times;
        st.size = self.size;
        st.end_offset = self.end_offset;
        st.max_ts = self.builder.max_ts;
        st.max_ts_offset = self.builder.max_ts_offset;
        Ok(())
    }

    /// Headers of every batch in this segment, oldest first.
    pub fn headers(&self) -> Result<Vec<BatchHeader>, LogError> {
        let mut out = Vec::new();
        scan_headers(&self.shared.log, 0, self.size, |_, h| {
            out.push(*h);
            Ok(true)
        })?;
        Ok(out)
    }

    #[cfg(test)]
    pub fn paths(&self) -> [PathBuf; 3] {
        [
            self.log_path.clone(),
            self.index_path.clone(),
            self.time_path.clone(),
        ]
    }
}

/// Index entries for batches `(position, header)` of a segment, as appends would have produced them.
pub(crate) fn rebuild_indexes(
    base_offset: i64,
    batches: &[(u64, BatchHeader)],
    index_interval: usize,
) -> (Vec<OffsetEntry>, Vec<TimeEntry>, IndexBuilder) {
    let mut b = IndexBuilder::new();
    let mut offs = Vec::new();
    let mut times = Vec::new();
    for (pos, h) in batches {
        let (o, t) = b.on_batch(base_offset, h, *pos, index_interval);
        offs.extend(o);
        times.extend(t);
    }
    (offs, times, b)
}

/// The `segment.ms` clock of a reopened segment restarts from the file's creation time (the roll
/// that created it), or from now if the file system does not record one.
fn creation_ms(log: &dyn LogFile, now_ms: i64) -> i64 {
    log.created_ms().filter(|&c| c <= now_ms).unwrap_or(now_ms)
}

fn read_all(file: &dyn LogFile) -> Result<Vec<u8>, LogError> {
    let len = file.size()?;
    let len = usize::try_from(len).map_err(|_| LogError::Corrupt("index file too large".into()))?;
    read_exact_at(file, 0, len)
}

/// Makes a segment's index files hold `ob` and `tb` (rebuilt entries): rewrites each that
/// differs, creating both (counted whatever the budget: a segment opened at start-up) if
/// needed; none is created for two empty indexes. Returns the files and whether any was
/// written.
fn rewrite_indexes(
    dir: &LogDir,
    indexes: IndexFiles,
    paths: [&Path; 2],
    ob: &[u8],
    tb: &[u8],
) -> Result<(IndexFiles, bool), LogError> {
    let indexes = match indexes {
        IndexFiles::Unopened if ob.is_empty() && tb.is_empty() => return Ok((indexes, false)),
        IndexFiles::Open { .. } => indexes,
        _ => IndexFiles::create(dir, paths, SegmentFiles::force(INDEX_FILES_PER_SEGMENT))?,
    };
    let (index_file, time_file) = indexes.handles().expect("opened above");
    let mut rewritten = false;
    for (f, bytes) in [(index_file, ob), (time_file, tb)] {
        if read_all(f.as_ref())? != bytes {
            write_whole(f.as_ref(), bytes)?;
            rewritten = true;
        }
    }
    Ok((indexes, rewritten))
}

fn write_whole(file: &dyn LogFile, data: &[u8]) -> Result<(), LogError> {
    file.set_len(0)?;
    file.write_all_at(data, 0)?;
    Ok(())
}
