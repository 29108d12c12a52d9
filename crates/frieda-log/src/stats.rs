//! Lock-free latency histograms for the metrics endpoint, and the log's own: how long each
//! flush (`fdatasync` of a partition's files) took.
//!
//! A [`LatencyHistogram`] is a fixed array of atomic counters, one per power-of-two bucket of
//! microseconds, plus a count and a sum: recording is three relaxed `fetch_add`s, no lock and no
//! allocation, so it can sit on the request path (issue 16: "atomic counters, no lock on the
//! hot path"). The broker's metrics module turns a [`HistogramSnapshot`] into a Prometheus
//! histogram (`le` bounds in seconds).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets of a [`LatencyHistogram`]: upper bounds 2^3 µs (8 µs) .. 2^26 µs (~67 s), then
/// everything longer (`+Inf`).
pub const BUCKETS: usize = 25;
/// The first bucket's upper bound is `2^FIRST_BUCKET_LOG2` µs.
const FIRST_BUCKET_LOG2: u32 = 3;

/// Upper bound of bucket `i` in µs (`u64::MAX` for the last, `+Inf`).
pub fn bucket_bound_us(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        1u64 << (FIRST_BUCKET_LOG2 as usize + i)
    }
}

/// `d` in nanoseconds, saturating at `u64::MAX` (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The bucket of a duration of `us` µs: the first whose upper bound is `>= us`.
fn bucket_of(us: u64) -> usize {
    if us <= 1 << FIRST_BUCKET_LOG2 {
        return 0;
    }
    let log2_ceil = 64 - (us - 1).leading_zeros();
    ((log2_ceil - FIRST_BUCKET_LOG2) as usize).min(BUCKETS - 1)
}

/// A latency histogram that many threads record into at once without a lock.
#[derive(Debug)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; BUCKETS],
    count: AtomicU64,
    /// Sum of the recorded durations, ns.
    sum_ns: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram (usable in a `static`).
    pub const fn new() -> Self {
        LatencyHistogram {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub fn record(&self, d: Duration) {
        self.record_ns(nanos(d));
    }

    /// Records one duration of `ns` nanoseconds.
    pub fn record_ns(&self, ns: u64) {
        self.buckets[bucket_of(ns.div_ceil(1000))].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// A copy of the counters (each read on its own: a scrape racing a record may see the count
    /// one ahead of the buckets, which Prometheus tolerates).
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut buckets = [0u64; BUCKETS];
        for (b, a) in buckets.iter_mut().zip(&self.buckets) {
            *b = a.load(Ordering::Relaxed);
        }
        HistogramSnapshot {
            buckets,
            count: self.count.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

/// The counters of a [`LatencyHistogram`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Per bucket (not cumulative): durations in `(bound(i-1), bound(i)]`, see
    /// [`bucket_bound_us`].
    pub buckets: [u64; BUCKETS],
    /// Durations recorded.
    pub count: u64,
    /// Their sum, ns.
    pub sum_ns: u64,
}

impl HistogramSnapshot {
    /// The smallest bucket bound (µs) at or below which `q` (0..=1) of the durations lie, or
    /// `None` when empty. An upper estimate within a factor of two.
    pub fn quantile_bound_us(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let want = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Some(bucket_bound_us(i));
            }
        }
        Some(u64::MAX)
    }
}

/// Every partition log flush of this process (`FlushTicket::sync`): Kafka's
/// `kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs`.
pub static LOG_FLUSH: LatencyHistogram = LatencyHistogram::new();

/// Where the bytes Fetch served came from: the in-memory tail cache, the page cache (a `pread`
/// the kernel answered from memory), or the device (a page-cache miss). Counted by
/// [`read_for_fetch`](crate::segment) with `preadv2(RWF_NOWAIT)`, which returns only what the
/// page cache holds: no extra system call when it holds everything.
#[derive(Debug)]
pub struct FetchReads {
    /// Reads and bytes served from the tail cache.
    pub tail_cache: (AtomicU64, AtomicU64),
    /// Reads and bytes the page cache held entirely.
    pub page_cache: (AtomicU64, AtomicU64),
    /// Reads that missed the page cache (at least partly), and the bytes read from the device.
    pub disk: (AtomicU64, AtomicU64),
    /// Reads on a file system without `RWF_NOWAIT` (not classified), and their bytes.
    pub unknown: (AtomicU64, AtomicU64),
}

impl FetchReads {
    const fn new() -> Self {
        FetchReads {
            tail_cache: (AtomicU64::new(0), AtomicU64::new(0)),
            page_cache: (AtomicU64::new(0), AtomicU64::new(0)),
            disk: (AtomicU64::new(0), AtomicU64::new(0)),
            unknown: (AtomicU64::new(0), AtomicU64::new(0)),
        }
    }

    /// Counts one read of `bytes` in `source`.
    pub fn note(source: &(AtomicU64, AtomicU64), bytes: usize) {
        source.0.fetch_add(1, Ordering::Relaxed);
        source.1.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Every Fetch read of this process, by source (the page-cache-miss reads of the metrics issue).
pub static FETCH_READS: FetchReads = FetchReads::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_upper_bound() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(8), 0);
        assert_eq!(bucket_of(9), 1);
        assert_eq!(bucket_of(16), 1);
        assert_eq!(bucket_of(17), 2);
        for i in 0..BUCKETS - 1 {
            let b = bucket_bound_us(i);
            assert_eq!(bucket_of(b), i, "bound {b}");
            assert_eq!(bucket_of(b + 1), i + 1, "bound {b} + 1");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn records_count_sum_and_quantiles() {
        let h = LatencyHistogram::new();
        assert_eq!(h.snapshot().quantile_bound_us(0.5), None);
        for us in [5u64, 10, 100, 1000] {
            h.record(Duration::from_micros(us));
        }
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.sum_ns, 1_115_000);
        assert_eq!(s.buckets.iter().sum::<u64>(), 4);
        assert_eq!(s.quantile_bound_us(0.25), Some(8));
        assert_eq!(s.quantile_bound_us(0.5), Some(16));
        assert_eq!(s.quantile_bound_us(1.0), Some(1024));
    }
}
