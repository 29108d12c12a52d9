//! Process-wide limits of the log that no topic config may push past (issue 30):
//!
//! - **The open-file budget.** Every segment keeps its `.log` open, and its `.index` and
//!   `.timeindex` once it has an index entry (one every `index.interval.bytes`; at most
//!   [`FILES_PER_SEGMENT`] files), so the number of segments, not of partitions, decides when
//!   the process runs out of file descriptors, and an exhausted process can no longer accept
//!   connections or write anything (Kafka's log directory then goes offline). The broker sets a
//!   budget below its `RLIMIT_NOFILE`; a new segment beyond it is refused with
//!   [`LogError::OpenFilesBudget`] (nothing is created, the log stays online, the produce gets
//!   KAFKA_STORAGE_ERROR and a clear log line), a segment whose indexes no longer fit keeps
//!   them in memory only (rebuilt from the log at restart), and time-based rolls (`segment.ms`)
//!   are skipped while the budget is nearly used, so the active segment keeps taking appends.
//! - **The shortest time-based roll**: `segment.ms` is accepted down to 1 ms as in Kafka 4.4,
//!   but a segment is rolled by time at most once per [`min_segment_ms`] (Redpanda's
//!   `log_segment_ms_min`), so a topic config cannot make the broker roll (and write a producer
//!   snapshot) on every batch.
//!
//! Segments opened while recovering a log at startup always count, and are never refused: a
//! log that exists must open.

use crate::error::LogError;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Files a segment keeps open at most: its `.log` always, its `.index` and `.timeindex` once an
/// index entry was written (a segment smaller than `index.interval.bytes` never has them). Its
/// transaction index is opened when first written and is not counted: the budget's headroom
/// covers it.
pub const FILES_PER_SEGMENT: usize = 3;

/// Files a segment holds from its creation (the `.log`).
pub const LOG_FILES_PER_SEGMENT: usize = 1;

/// Files a segment's indexes hold once opened (`.index` and `.timeindex`).
pub const INDEX_FILES_PER_SEGMENT: usize = 2;

/// Default shortest time-based roll, ms.
pub const DEFAULT_MIN_SEGMENT_MS: i64 = 1_000;

static HELD: AtomicUsize = AtomicUsize::new(0);
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static MIN_SEGMENT_MS: AtomicI64 = AtomicI64::new(DEFAULT_MIN_SEGMENT_MS);

/// Sets the most segment files the process may hold open (the broker's `log.segment.files.max`).
pub fn set_open_files_budget(files: usize) {
    BUDGET.store(files, Ordering::Relaxed);
}

/// The budget of open segment files.
pub fn open_files_budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
}

/// Segment files held open now.
pub fn open_segment_files() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// Sets the shortest time-based roll, ms (the broker's `log.segment.ms.min`; at least 1).
pub fn set_min_segment_ms(ms: i64) {
    MIN_SEGMENT_MS.store(ms.max(1), Ordering::Relaxed);
}

/// The shortest time-based roll, ms.
pub fn min_segment_ms() -> i64 {
    MIN_SEGMENT_MS.load(Ordering::Relaxed)
}

/// Whether `segments` more new segments (their `.log`: a segment's indexes come with its first
/// entry) fit in the budget with a tenth of it to spare (the margin time-based rolls keep for
/// size-based rolls and new partitions).
pub fn room_for_optional(segments: usize) -> bool {
    let budget = open_files_budget();
    let spare = budget / 10;
    open_segment_files() + segments * LOG_FILES_PER_SEGMENT <= budget.saturating_sub(spare)
}

/// Some of a segment's files' share of the budget ([`LOG_FILES_PER_SEGMENT`] or
/// [`INDEX_FILES_PER_SEGMENT`]), given back when they close.
#[derive(Debug)]
pub(crate) struct SegmentFiles(usize);

impl SegmentFiles {
    /// Takes `files` of the budget.
    ///
    /// Errors: [`LogError::OpenFilesBudget`] when it would go past the budget.
    pub fn reserve(files: usize) -> Result<SegmentFiles, LogError> {
        let budget = open_files_budget();
        let mut held = HELD.load(Ordering::Relaxed);
        loop {
            if held + files > budget {
                return Err(LogError::OpenFilesBudget { held, budget });
            }
            match HELD.compare_exchange_weak(
                held,
                held + files,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(SegmentFiles(files)),
                Err(now) => held = now,
            }
        }
    }

    /// Counts `files` that must open whatever the budget (recovery at startup, the cleaner's
    /// replacement of segments it then deletes).
    pub fn force(files: usize) -> SegmentFiles {
        HELD.fetch_add(files, Ordering::Relaxed);
        SegmentFiles(files)
    }
}

impl Drop for SegmentFiles {
    fn drop(&mut self) {
        HELD.fetch_sub(self.0, Ordering::Relaxed);
    }
}
