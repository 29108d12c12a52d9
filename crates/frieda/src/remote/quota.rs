//! The broker-wide byte-rate quotas of the remote tier (KIP-956):
//! `remote.log.manager.copy.max.bytes.per.second` paces the copies to the bucket and
//! `remote.log.manager.fetch.max.bytes.per.second` the reads from it, so neither takes more of
//! the disk, network and CPU than the operator allows. Kafka measures each over windows and
//! throttles once the rate is over the quota (`RLMQuotaManager`); this is a token bucket holding
//! at most one second of the rate: each transfer spends its bytes (possibly into debt), and the
//! next waits (copies) or is skipped (fetches answer without records) until the debt is repaid.
//! Diskless compaction (`diskless.compaction.max.bytes.per.second`) uses it as the copies do: a
//! run waits while the bucket is in debt, then spends its object's size.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// One byte-rate quota. `None` rates (Kafka's default `Long.MAX_VALUE`) are not built: callers
/// hold an `Option<ByteRate>`.
#[derive(Debug)]
pub struct ByteRate {
    /// Bytes per second.
    rate: f64,
    /// `(bytes available, when last refilled)`; negative when in debt.
    bucket: Mutex<(f64, Instant)>,
}

impl ByteRate {
    /// A quota of `bytes_per_second` (at least 1), starting full (one second of it).
    pub fn new(bytes_per_second: u64) -> ByteRate {
        let rate = bytes_per_second.max(1) as f64;
        ByteRate {
            rate,
            bucket: Mutex::new((rate, Instant::now())),
        }
    }

    fn refill(&self, b: &mut (f64, Instant), now: Instant) {
        let earned = now.saturating_duration_since(b.1).as_secs_f64() * self.rate;
        b.0 = (b.0 + earned).min(self.rate);
        b.1 = now;
    }

    /// How long to wait, from `now`, until the quota allows more (zero when it does).
    pub fn throttle(&self, now: Instant) -> Duration {
        let mut b = self.bucket.lock();
        self.refill(&mut b, now);
        if b.0 >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.0 / self.rate)
        }
    }

    /// Spends `bytes` at `now` (a transfer made).
    pub fn spend(&self, bytes: u64, now: Instant) {
        let mut b = self.bucket.lock();
        self.refill(&mut b, now);
        b.0 -= bytes as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_beyond_the_rate_wait_for_their_debt() {
        let q = ByteRate::new(1000);
        let t0 = Instant::now();
        assert_eq!(
            q.throttle(t0),
            Duration::ZERO,
            "starts with one second of it"
        );
        q.spend(1000, t0);
        assert_eq!(q.throttle(t0), Duration::ZERO);
        q.spend(500, t0);
        assert_eq!(q.throttle(t0), Duration::from_millis(500));
        assert_eq!(
            q.throttle(t0 + Duration::from_millis(200)),
            Duration::from_millis(300)
        );
        assert_eq!(q.throttle(t0 + Duration::from_millis(500)), Duration::ZERO);
        // Idle time refills at most one second's worth.
        let later = t0 + Duration::from_secs(60);
        q.spend(1500, later);
        assert_eq!(q.throttle(later), Duration::from_millis(500));
    }
}
