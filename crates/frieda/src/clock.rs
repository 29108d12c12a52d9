//! Time, in one place: wall-clock milliseconds for what Kafka stamps (record timestamps, commit
//! times, retention), a monotonic clock for what must not jump, and the boot-time clock leases
//! are measured on.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (wall clock; 0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Milliseconds on a monotonic clock since the first call in this process (never goes back,
/// does not follow wall-clock adjustments).
pub fn monotonic_ms() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Which clock a lease is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseClock {
    /// CLOCK_MONOTONIC (`std::time::Instant`): stops while the machine is suspended.
    Monotonic,
    /// CLOCK_BOOTTIME: counts the time the machine was suspended too.
    Boot,
}

/// The clock leases are measured on: CLOCK_BOOTTIME, which keeps counting while the machine
/// is suspended (a VM paused by its host, a laptop lid): a broker whose lease ran out during a
/// suspend must see it expired when it resumes, since the controller's clock kept running and
/// fenced it (issue 28, item 7; CLOCK_MONOTONIC stops during a suspend). The cluster simulator
/// reads this to know which of its simulated clocks a broker's lease follows.
pub const LEASE_CLOCK: LeaseClock = LeaseClock::Boot;

/// Milliseconds on the lease clock ([`LEASE_CLOCK`], CLOCK_BOOTTIME) since the first call in
/// this process; never goes back.
pub fn lease_ms() -> u64 {
    static ORIGIN: OnceLock<u64> = OnceLock::new();
    let now = boot_time_ms();
    now.saturating_sub(*ORIGIN.get_or_init(|| now))
}

/// CLOCK_BOOTTIME in ms.
fn boot_time_ms() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    (ts.tv_sec.max(0) as u64).saturating_mul(1000) + (ts.tv_nsec.max(0) as u64) / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_clock_moves_with_the_monotonic_clock() {
        let (l0, m0) = (lease_ms(), monotonic_ms());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (l1, m1) = (lease_ms(), monotonic_ms());
        assert!(l1 >= l0 + 45, "{l0} -> {l1}");
        // Without a suspend in between, both clocks advance alike.
        assert!((l1 - l0).abs_diff(m1 - m0) < 20);
    }
}
