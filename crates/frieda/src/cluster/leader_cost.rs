//! What it costs this broker to lead (issue 33, measured leader placement; the ALOR seed): a
//! number in µs the broker sends with each heartbeat, which the controller compares between the
//! replicas of each partition (`frieda_meta::leadership`).
//!
//! Every [`WINDOW`] the broker takes two measurements of the window just past:
//! - **stall**: a task on the request runtime asks to wake every [`TICK`] and records how late
//!   it woke; the 90th percentile of that lateness is the time a ready request waits for a
//!   worker here: CPU the process did not get (a noisy neighbour, the process stopped, a
//!   swap-in), or request queueing behind busy workers;
//! - **fsync**: the 99th percentile of the partition log flushes of the window (an upper bound
//!   within a factor of two, from `frieda_log::stats::LOG_FLUSH`; 0 without flushes): a slow
//!   or ageing disk.
//!
//! The cost is their sum, smoothed over windows (an exponentially weighted mean, weight
//! [`SMOOTHING`] for the newest window), so one bad window does not move leaderships and a
//! recovered broker is trusted again within a few windows. Leaders' append-to-replicated time
//! is not part of it: it depends on the followers as much as on the leader.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How often the stall probe asks to wake.
pub const TICK: Duration = Duration::from_millis(10);
/// How long one measurement window lasts.
pub const WINDOW: Duration = Duration::from_secs(2);
/// Weight of the newest window in the smoothed cost.
pub const SMOOTHING: f64 = 0.4;

const NONE: u64 = u64::MAX;

/// The last measurements, µs ([`u64::MAX`] before the first window).
pub struct LeaderCost {
    cost_us: AtomicU64,
    stall_us: AtomicU64,
    fsync_us: AtomicU64,
}

/// This process's measurements (one broker per process).
pub static LEADER_COST: LeaderCost = LeaderCost {
    cost_us: AtomicU64::new(NONE),
    stall_us: AtomicU64::new(NONE),
    fsync_us: AtomicU64::new(NONE),
};

fn get(a: &AtomicU64) -> Option<u64> {
    Some(a.load(Ordering::Relaxed)).filter(|v| *v != NONE)
}

impl LeaderCost {
    /// The smoothed leader cost, µs; `None` before the first window.
    pub fn cost_us(&self) -> Option<u64> {
        get(&self.cost_us)
    }

    /// The last window's stall (90th percentile of the probe's lateness), µs.
    pub fn stall_us(&self) -> Option<u64> {
        get(&self.stall_us)
    }

    /// The last window's 99th-percentile flush time, µs (0 without flushes).
    pub fn fsync_us(&self) -> Option<u64> {
        get(&self.fsync_us)
    }

    fn record(&self, stall_us: u64, fsync_us: u64) {
        let now = (stall_us + fsync_us) as f64;
        let cost = match self.cost_us() {
            None => now,
            Some(prev) => prev as f64 * (1.0 - SMOOTHING) + now * SMOOTHING,
        };
        self.stall_us.store(stall_us, Ordering::Relaxed);
        self.fsync_us.store(fsync_us, Ordering::Relaxed);
        self.cost_us.store(cost.round() as u64, Ordering::Relaxed);
    }
}

/// The `q` quantile (0..=1) of `samples` (sorted in place), 0 when empty.
fn quantile(samples: &mut [u64], q: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    samples.sort_unstable();
    let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[i]
}

/// Measures until `stop` turns true (spawned on the request runtime by the cluster start-up).
pub async fn run(mut stop: watch::Receiver<bool>) {
    let per_window = (WINDOW.as_millis() / TICK.as_millis()) as usize;
    let mut lateness: Vec<u64> = Vec::with_capacity(per_window + 1);
    let mut flushes = frieda_log::stats::LOG_FLUSH.snapshot();
    let mut window_start = Instant::now();
    loop {
        let due = Instant::now() + TICK;
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {}
            _ = stop.changed() => return,
        }
        let now = Instant::now();
        lateness.push(now.saturating_duration_since(due).as_micros() as u64);
        if now.duration_since(window_start) < WINDOW {
            continue;
        }
        let stall = quantile(&mut lateness, 0.9);
        let current = frieda_log::stats::LOG_FLUSH.snapshot();
        let mut window = current;
        for (w, before) in window.buckets.iter_mut().zip(&flushes.buckets) {
            *w = w.saturating_sub(*before);
        }
        window.count = window.count.saturating_sub(flushes.count);
        let fsync = window.quantile_bound_us(0.99).unwrap_or(0).min(60_000_000);
        flushes = current;
        LEADER_COST.record(stall, fsync);
        lateness.clear();
        window_start = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_smoothing() {
        let mut s = vec![5, 1, 9, 3, 7, 2, 8, 4, 6, 10];
        assert_eq!(quantile(&mut s, 0.9), 9);
        assert_eq!(quantile(&mut [], 0.9), 0);
        let c = LeaderCost {
            cost_us: AtomicU64::new(NONE),
            stall_us: AtomicU64::new(NONE),
            fsync_us: AtomicU64::new(NONE),
        };
        assert_eq!(c.cost_us(), None);
        c.record(1_000, 0);
        assert_eq!(c.cost_us(), Some(1_000));
        c.record(20_000, 1_000);
        assert_eq!(c.cost_us(), Some(9_000));
        assert_eq!((c.stall_us(), c.fsync_us()), (Some(20_000), Some(1_000)));
    }
}
