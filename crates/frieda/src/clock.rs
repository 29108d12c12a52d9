//! Time, in one place: wall-clock milliseconds for what Kafka stamps (record timestamps, commit
//! times, retention) and a monotonic clock for what must not jump (leases).

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

/// The clock leases are measured on (the cluster simulator reads it to know which of its
/// simulated clocks a broker's lease follows).
pub const LEASE_CLOCK: LeaseClock = LeaseClock::Monotonic;

/// Milliseconds on the lease clock ([`LEASE_CLOCK`]).
pub fn lease_ms() -> u64 {
    monotonic_ms()
}
