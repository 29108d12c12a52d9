//! A broker's lease on its leaderships: the guarantee that the controller has not fenced it
//! yet, so no other broker can lead its partitions (the "zombie leader" of Jepsen's Kafka
//! analyses). Pure: callers pass the clock reading, so the broker ([`super::ClusterNode`]) and
//! the cluster simulator apply the same rule.
//!
//! Each answered heartbeat renews the lease until its *send* time plus
//! `broker.session.timeout.ms`; the controller fences a broker no earlier than a session after
//! it *received* the broker's last heartbeat, which is later. Both ends must measure time with
//! clocks that run at the same rate, including across a suspend of the machine.

use std::sync::atomic::{AtomicU64, Ordering};

/// The lease: until when (ms on the broker's lease clock) this broker is sure it is not fenced.
#[derive(Debug, Default)]
pub struct Lease {
    until_ms: AtomicU64,
}

impl Lease {
    /// A lease that does not hold yet.
    pub fn new() -> Lease {
        Lease::default()
    }

    /// Whether the lease holds at `now_ms` (lease clock).
    pub fn holds(&self, now_ms: u64) -> bool {
        now_ms < self.until_ms.load(Ordering::Acquire)
    }

    /// A heartbeat sent at `sent_ms` (lease clock) was answered unfenced: the lease holds until
    /// `sent_ms + session_ms` (it never moves back).
    pub fn renew(&self, sent_ms: u64, session_ms: u64) {
        self.until_ms
            .fetch_max(sent_ms.saturating_add(session_ms), Ordering::AcqRel);
    }

    /// The end of the lease (ms, lease clock); 0 before the first renewal.
    pub fn until_ms(&self) -> u64 {
        self.until_ms.load(Ordering::Acquire)
    }
}

/// Whether the answer to a heartbeat sent at `sent_ms` (lease clock), arriving at `now_ms`,
/// still says anything about this broker's fencing: it came within a session of the send. An
/// older one (the broker was paused with it in flight) may predate the controller fencing the
/// broker; taken as "unfenced", it let a paused leader resume its leadership on a stale image
/// and move its high watermark over records the new leader did not have (frieda-sim, seed
/// 73576). Such an answer counts as none: the next heartbeat asks again.
pub fn answer_is_fresh(sent_ms: u64, now_ms: u64, session_ms: u64) -> bool {
    now_ms.saturating_sub(sent_ms) < session_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_older_than_a_session_says_nothing() {
        assert!(answer_is_fresh(1_000, 1_000, 9_000));
        assert!(answer_is_fresh(1_000, 9_999, 9_000));
        assert!(!answer_is_fresh(1_000, 10_000, 9_000));
        assert!(!answer_is_fresh(1_000, 60_000, 9_000));
        // A clock read before the send (another thread's reading) is fresh, not a panic.
        assert!(answer_is_fresh(5_000, 4_000, 9_000));
    }
}
