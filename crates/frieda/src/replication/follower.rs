//! A follower's rules (Kafka's `AbstractFetcherThread` / `ReplicaFetcherThread`), pure: what to
//! truncate after the leader says where an epoch ends, where to fetch from, what to do with the
//! leader's refusals, and the follower's high watermark. The I/O that applies them is
//! [`crate::cluster::fetcher`]; the cluster simulator (crate `frieda-sim`) applies the same
//! functions to its simulated logs.

use super::LogView;

/// Where an epoch ends in the leader's log: OffsetForLeaderEpoch's answer (KIP-101/279), or a
/// Fetch response's `diverging_epoch` (KIP-595).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEnd {
    /// The largest epoch the leader has that is `<=` the one asked about; -1 if none.
    pub epoch: i32,
    /// Where that epoch ends in the leader's log (its log end for its latest); -1 if unknown.
    pub end_offset: i64,
}

/// What a follower does to its log after the leader's [`EpochEnd`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// Truncate to this offset (nothing if at or past the log end) and start fetching.
    Complete(i64),
    /// Truncate to this offset, then ask the leader again (the leader answered with an epoch
    /// this log does not have).
    Partial(i64),
}

impl Truncation {
    /// The offset to truncate to.
    pub fn offset(self) -> i64 {
        match self {
            Truncation::Complete(o) | Truncation::Partial(o) => o,
        }
    }
}

/// Where the follower with log `log` (high watermark `hw`) truncates after asking the leader
/// about its epoch `asked_epoch` (its latest) and getting `leader`.
///
/// As Frieda had it before issue 28's fix: without epochs on either side nothing is truncated;
/// when the leader names another epoch, its end is taken against this log's end of that epoch.
pub fn truncation(log: &impl LogView, hw: i64, asked_epoch: i32, leader: EpochEnd) -> Truncation {
    let _ = hw;
    let leo = log.log_end_offset();
    if asked_epoch < 0 || leader.end_offset < 0 {
        return Truncation::Complete(leo);
    }
    if leader.epoch == asked_epoch {
        return Truncation::Complete(leader.end_offset.min(leo));
    }
    let (ours_epoch, ours_end) = log.end_offset_for_epoch(leader.epoch);
    let ours = if ours_epoch < 0 { leo } else { ours_end };
    Truncation::Complete(leader.end_offset.min(ours).min(leo))
}

/// Where a follower fetches next and the `last_fetched_epoch` it sends: its log end offset, or
/// `skip_to` (the leader's log start, after the leader's retention moved past this log's end)
/// when that is further.
pub fn fetch_position(log: &impl LogView, skip_to: Option<i64>) -> (i64, i32) {
    let leo = log.log_end_offset();
    (skip_to.map_or(leo, |n| n.max(leo)), -1)
}

/// What a follower does when the leader answers OFFSET_OUT_OF_RANGE to its fetch at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRange {
    /// The leader's retention removed it: fetch from the leader's log start (this log keeps
    /// what it has below; those are the same records).
    SkipTo(i64),
    /// Past the leader's end: truncate again (OffsetForLeaderEpoch).
    Retruncate,
}

/// The follower's next step after OFFSET_OUT_OF_RANGE for a fetch at `offset`, the leader's log
/// starting at `leader_log_start`.
pub fn on_offset_out_of_range(offset: i64, leader_log_start: i64) -> OutOfRange {
    if offset < leader_log_start {
        OutOfRange::SkipTo(leader_log_start)
    } else {
        OutOfRange::Retruncate
    }
}

/// A follower's high watermark: the leader's, capped by the follower's own log end `leo`.
pub fn high_watermark(leader_hw: i64, leo: i64) -> i64 {
    leader_hw.min(leo).max(0)
}
