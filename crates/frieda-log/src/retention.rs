//! Retention policy (`retention.ms`, `retention.bytes`): which whole segments may be deleted.
//!
//! As in Kafka, only closed segments are deleted, oldest first, and only while the oldest one is
//! expired: by time when `now - its largest timestamp > retention.ms`, by size when the partition
//! minus that segment is still `>= retention.bytes`.

use crate::config::LogConfig;

/// What retention needs to know of one segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentInfo {
    /// Bytes in the `.log`.
    pub size: u64,
    /// Largest timestamp in ms (batch max timestamp, or last-modified time).
    pub largest_timestamp: i64,
}

/// True if a segment whose largest timestamp is `largest_timestamp` is older than `retention.ms`.
pub(crate) fn expired_by_time(config: &LogConfig, largest_timestamp: i64, now_ms: i64) -> bool {
    config.retention_ms >= 0 && now_ms.saturating_sub(largest_timestamp) > config.retention_ms
}

/// How many of the oldest `closed` segments to delete, given the partition's `total_size` in bytes
/// (active segment included).
pub(crate) fn deletable_prefix(
    config: &LogConfig,
    closed: &[SegmentInfo],
    total_size: u64,
    now_ms: i64,
) -> usize {
    let mut remaining = total_size;
    let mut n = 0;
    for s in closed {
        let by_time = expired_by_time(config, s.largest_timestamp, now_ms);
        let by_size = u64::try_from(config.retention_bytes)
            .is_ok_and(|limit| remaining.saturating_sub(s.size) >= limit && remaining >= s.size);
        if !(by_time || by_size) {
            break;
        }
        remaining -= s.size.min(remaining);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(size: u64, ts: i64) -> SegmentInfo {
        SegmentInfo {
            size,
            largest_timestamp: ts,
        }
    }

    #[test]
    fn time_and_size_rules() {
        let mut c = LogConfig {
            retention_ms: 100,
            retention_bytes: -1,
            ..LogConfig::default()
        };
        let segs = [seg(10, 0), seg(10, 50), seg(10, 500), seg(10, 0)];
        assert_eq!(deletable_prefix(&c, &segs, 50, 160), 2);
        // Stops at the first non-expired segment even if a later one is expired.
        assert_eq!(deletable_prefix(&c, &segs, 50, 140), 1);
        c.retention_ms = -1;
        assert_eq!(deletable_prefix(&c, &segs, 50, i64::MAX), 0);
        c.retention_bytes = 30;
        // 50 total: 40 >= 30 delete, 30 >= 30 delete, 20 < 30 stop.
        assert_eq!(deletable_prefix(&c, &segs, 50, 0), 2);
        c.retention_bytes = 0;
        assert_eq!(deletable_prefix(&c, &segs, 50, 0), 4);
    }
}
