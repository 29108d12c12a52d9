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
//! The cost is the median of their sum over the last [`WINDOWS`] windows, so one bad window
//! (a slow directory sync, a stall of the machine) does not move leaderships, a broker slow in
//! two windows of three does, and a recovered broker is trusted again after two good windows.
//! The first window after start is not counted: it measures the start-up, not leading. No
//! cost is reported (and the controller moves nothing to or from this broker) until
//! [`WINDOWS`] windows are in. Leaders' append-to-replicated time is not part of it: it depends
//! on the followers as much as on the leader.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How often the stall probe asks to wake.
pub const TICK: Duration = Duration::from_millis(10);
/// How long one measurement window lasts.
pub const WINDOW: Duration = Duration::from_secs(2);
/// How many windows the cost is the median of.
pub const WINDOWS: usize = 3;

const NONE: u64 = u64::MAX;

/// The last measurements, µs ([`u64::MAX`] before the first window).
pub struct LeaderCost {
    cost_us: AtomicU64,
    stall_us: AtomicU64,
    fsync_us: AtomicU64,
}

/// This process's measurements (one broker per process).
pub static LEADER_COST: LeaderCost = LeaderCost::new();

fn get(a: &AtomicU64) -> Option<u64> {
    Some(a.load(Ordering::Relaxed)).filter(|v| *v != NONE)
}

impl LeaderCost {
    const fn new() -> LeaderCost {
        LeaderCost {
            cost_us: AtomicU64::new(NONE),
            stall_us: AtomicU64::new(NONE),
            fsync_us: AtomicU64::new(NONE),
        }
    }

    /// The leader cost (median of the last [`WINDOWS`] windows' stall + fsync), µs; `None`
    /// until [`WINDOWS`] windows are in.
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

    /// Records one window; `recent` holds the last windows' costs (at most [`WINDOWS`]).
    fn record(&self, recent: &mut VecDeque<u64>, stall_us: u64, fsync_us: u64) {
        if recent.len() == WINDOWS {
            recent.pop_front();
        }
        recent.push_back(stall_us + fsync_us);
        self.stall_us.store(stall_us, Ordering::Relaxed);
        self.fsync_us.store(fsync_us, Ordering::Relaxed);
        if recent.len() == WINDOWS {
            let mut sorted: Vec<u64> = recent.iter().copied().collect();
            self.cost_us
                .store(quantile(&mut sorted, 0.5), Ordering::Relaxed);
        }
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
    let mut recent: VecDeque<u64> = VecDeque::with_capacity(WINDOWS);
    let mut warmed_up = false;
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
        if warmed_up {
            LEADER_COST.record(&mut recent, stall, fsync);
        }
        warmed_up = true;
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
        let c = LeaderCost::new();
        let mut recent = VecDeque::new();
        assert_eq!(c.cost_us(), None);
        c.record(&mut recent, 1_000, 0);
        c.record(&mut recent, 50_000, 1_000);
        // Not reported before WINDOWS windows.
        assert_eq!(c.cost_us(), None);
        assert_eq!((c.stall_us(), c.fsync_us()), (Some(50_000), Some(1_000)));
        c.record(&mut recent, 900, 0);
        // One bad window of three does not count.
        assert_eq!(c.cost_us(), Some(1_000));
        c.record(&mut recent, 30_000, 0);
        // Two of three do.
        assert_eq!(c.cost_us(), Some(30_000));
        c.record(&mut recent, 800, 0);
        c.record(&mut recent, 700, 0);
        // Two good windows bring it back.
        assert_eq!(c.cost_us(), Some(800));
    }
}
