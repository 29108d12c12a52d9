//! Per-partition log settings, named after Kafka's topic configs.

/// `message.timestamp.type` (KIP-32): which timestamp a stored batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    /// The producer's timestamps are kept.
    #[default]
    CreateTime,
    /// The broker stamps each batch with its append time (ms) and sets the batch's timestamp-type bit.
    LogAppendTime,
}

/// Settings of one partition log. Sizes in bytes, durations in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll to a new segment before the active one would exceed this size. Default 1 GiB.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a non-empty active segment this long after its first batch. Default 7 days.
    pub segment_ms: i64,
    /// `retention.ms`: delete closed segments whose newest timestamp is older than this. -1 = unlimited.
    /// Default 7 days.
    pub retention_ms: i64,
    /// `retention.bytes`: delete oldest closed segments while the partition is larger. -1 = unlimited
    /// (the default).
    pub retention_bytes: i64,
    /// `max.message.bytes`: largest accepted batch, including the 12-byte log overhead. Default 1048588.
    pub max_message_bytes: usize,
    /// `index.interval.bytes`: bytes of log between two sparse offset-index entries. Default 4096.
    pub index_interval_bytes: usize,
    /// `segment.index.bytes`: the largest offset or time index of a segment; the segment rolls
    /// before an append when either index holds as many entries as fit (8-byte offset entries,
    /// 12-byte time entries), as Kafka's `LogSegment.shouldRoll` (`isFull`). Default 10 MiB.
    pub segment_index_bytes: u64,
    /// `flush.messages`: the broker fsyncs after this many records. Default `u64::MAX` (never).
    pub flush_messages: u64,
    /// `flush.ms`: the broker fsyncs when the last flush is older than this. Default `u64::MAX` (never).
    pub flush_ms: u64,
    /// `preallocate` (`log.preallocate`): a new active segment's `.log` file is made
    /// `segment_bytes` long at once (sparse) and cut to its size when the segment rolls or the
    /// broker stops, so an fsync'ed append need not journal a new file length (about a third
    /// off an append-and-`fdatasync` here, issue 58 goal 6). Default false, as Kafka's.
    pub preallocate: bool,
    /// `message.timestamp.type`. Default `CreateTime`.
    pub message_timestamp_type: TimestampType,
    /// Bytes of the most recent batches kept in memory so tail fetches skip the disk. Default 4 MiB;
    /// 0 disables the cache.
    pub tail_cache_bytes: usize,
    /// `cleanup.policy` contains `delete`: retention by time and size applies. Default true.
    pub cleanup_delete: bool,
    /// `cleanup.policy` contains `compact`: the log cleaner keeps the latest record of each key.
    /// Default false.
    pub cleanup_compact: bool,
    /// `min.cleanable.dirty.ratio`: the cleaner starts when the dirty (never cleaned) part is at
    /// least this fraction of the cleanable log. Default 0.5.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: a record stays uncompacted at least this long. Default 0.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a record is compacted at most this long after it was written,
    /// whatever the dirty ratio. Default `i64::MAX`.
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms`: a tombstone (null value) stays readable this long after the cleaner
    /// first saw it, so consumers catch up with the deletion. Default 1 day.
    pub delete_retention_ms: i64,
}

/// 7 days in milliseconds.
const SEVEN_DAYS_MS: i64 = 7 * 24 * 60 * 60 * 1000;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: SEVEN_DAYS_MS,
            retention_ms: SEVEN_DAYS_MS,
            retention_bytes: -1,
            max_message_bytes: 1_048_588,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 << 20,
            flush_messages: u64::MAX,
            flush_ms: u64::MAX,
            preallocate: false,
            message_timestamp_type: TimestampType::CreateTime,
            tail_cache_bytes: 4 << 20,
            cleanup_delete: true,
            cleanup_compact: false,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 24 * 60 * 60 * 1000,
        }
    }
}
