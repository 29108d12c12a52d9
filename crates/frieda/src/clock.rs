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
