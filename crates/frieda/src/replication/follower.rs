//! A follower's rules (Kafka's `AbstractFetcherThread` / `ReplicaFetcherThread`), pure: what to
//! truncate after the leader says where an epoch ends, where to fetch from, what to do with the
//! leader's refusals, and the follower's high watermark; and [`PartitionFetch`], one followed
//! partition's fetch state, the state machine both fetchers run. The I/O that applies them is
//! [`crate::cluster::fetcher`]; the cluster simulator (crate `frieda-sim`) runs the same state
//! machine against its simulated logs and network (issue 57: the simulator runs the broker's
//! own glue).

use kafka_protocol::error::ResponseError;

use super::LogView;

/// How long a followed partition waits after an error before its next request, ms
/// (`replica.fetch.backoff.ms`; Kafka's default is 1000, shorter here so failover completes
/// sooner).
pub const FETCH_BACKOFF_MS: u64 = 200;

/// What a follower asks its leader next about one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextRequest {
    /// OffsetForLeaderEpoch about the log's latest epoch (KIP-101/279): where to truncate
    /// before copying anything in this leader epoch.
    OffsetForLeaderEpoch,
    /// Fetch from the position [`fetch_position`] gives with this `skip_to`.
    Fetch {
        /// The leader's log start when it moved past this log's end, else `None`.
        skip_to: Option<i64>,
    },
}

/// What a follower does after its leader refused a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The partition backs off ([`FETCH_BACKOFF_MS`]); its next request is decided then.
    BackedOff,
    /// OFFSET_MOVED_TO_TIERED_STORAGE (109, KIP-405): the fetched offset is only in remote
    /// storage; the caller starts its log again above the copied offsets
    /// ([`PartitionFetch::started_again`]) or, when it cannot yet, calls
    /// [`PartitionFetch::back_off`].
    StartAgainAboveCopies,
}

/// One followed partition's fetch state in one leader epoch (Kafka's `PartitionFetchState`):
/// truncated yet or not, where to fetch when not from the log end, and the back-off after an
/// error. Sans-IO: times are ms on the caller's monotonic clock, and the caller does the
/// requests, the truncations and the appends this asks for. A new leader epoch starts a new
/// state ([`PartitionFetch::default`]: not truncated, no back-off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionFetch {
    /// Truncated to the leader's log in this epoch ([`Truncation::Complete`] applied).
    truncated: bool,
    /// The leader's log start, when its retention moved past this log's end.
    skip_to: Option<i64>,
    /// No request before this time (ms); 0 for none.
    backoff_until_ms: u64,
}

impl PartitionFetch {
    /// A log that was just started again at its end (KIP-405, [`Refused::StartAgainAboveCopies`]):
    /// fetch from there, without truncating first.
    pub fn started_again() -> PartitionFetch {
        PartitionFetch {
            truncated: true,
            ..PartitionFetch::default()
        }
    }

    /// Whether a request may be made at `now_ms` (no back-off running).
    pub fn ready(&self, now_ms: u64) -> bool {
        now_ms >= self.backoff_until_ms
    }

    /// No request for this partition before `now_ms` + [`FETCH_BACKOFF_MS`].
    pub fn back_off(&mut self, now_ms: u64) {
        self.backoff_until_ms = now_ms + FETCH_BACKOFF_MS;
    }

    /// Whether the next request is OffsetForLeaderEpoch (not yet truncated in this epoch).
    pub fn needs_truncation(&self) -> bool {
        !self.truncated
    }

    /// The next request for this partition (whether it is ready is [`Self::ready`]).
    pub fn next_request(&self) -> NextRequest {
        if self.truncated {
            NextRequest::Fetch {
                skip_to: self.skip_to,
            }
        } else {
            NextRequest::OffsetForLeaderEpoch
        }
    }

    /// Truncation `t` (from an OffsetForLeaderEpoch answer or a fetch's diverging epoch) was
    /// applied to the log: a [`Truncation::Complete`] starts the fetching, a
    /// [`Truncation::Partial`] asks the leader again. Clears the back-off.
    pub fn truncated_to(&mut self, t: Truncation) {
        self.truncated = matches!(t, Truncation::Complete(_));
        self.backoff_until_ms = 0;
    }

    /// The leader refused the fetch at `offset` with `error` (its log starting at
    /// `leader_log_start`, -1 or 0 when the answer does not say): OFFSET_OUT_OF_RANGE (1) moves
    /// the fetch to the leader's log start or truncates again ([`on_offset_out_of_range`]), then
    /// backs off as every other error does, but OFFSET_MOVED_TO_TIERED_STORAGE (109), which the
    /// caller handles.
    pub fn refused(
        &mut self,
        now_ms: u64,
        offset: i64,
        error: ResponseError,
        leader_log_start: i64,
    ) -> Refused {
        match error {
            ResponseError::OffsetMovedToTieredStorage => return Refused::StartAgainAboveCopies,
            ResponseError::OffsetOutOfRange => {
                match on_offset_out_of_range(offset, leader_log_start) {
                    OutOfRange::SkipTo(start) => self.skip_to = Some(start),
                    OutOfRange::Retruncate => self.truncated = false,
                }
            }
            _ => {}
        }
        self.back_off(now_ms);
        Refused::BackedOff
    }

    /// The leader's records were appended; the log now ends at `leo`. A fetch position moved to
    /// the leader's log start is done with once the log reaches it.
    pub fn appended(&mut self, leo: i64) {
        if self.skip_to.is_some_and(|s| s <= leo) {
            self.skip_to = None;
        }
    }
}

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
/// about its epoch `asked_epoch` (its latest; -1 when its log has no epochs) and getting
/// `leader` — an OffsetForLeaderEpoch answer or a Fetch response's diverging epoch. Kafka's
/// `AbstractFetcherThread.getOffsetTruncationState`:
///
/// - no epochs in this log, or a leader that does not know the epoch (`end_offset` -1): truncate
///   to the high watermark, the only offset known to be on the leader too;
/// - a leader without epoch information in its answer (`epoch` -1): to its end offset;
/// - the leader's epoch is one this log has: to the smaller of both ends of it;
/// - the leader's epoch is one this log lacks: to where this log's largest epoch below it ends,
///   then ask again ([`Truncation::Partial`]);
/// - this log has no epoch at or below the leader's: to the leader's end offset.
///
/// Never past this log's end.
pub fn truncation(log: &impl LogView, hw: i64, asked_epoch: i32, leader: EpochEnd) -> Truncation {
    let leo = log.log_end_offset();
    if asked_epoch < 0 || leader.end_offset < 0 {
        return Truncation::Complete(hw.min(leo));
    }
    if leader.epoch < 0 {
        return Truncation::Complete(leader.end_offset.min(leo));
    }
    match log.end_offset_for_epoch(leader.epoch) {
        (ours, end) if ours >= 0 && ours != leader.epoch => Truncation::Partial(end.min(leo)),
        (ours, end) if ours >= 0 => Truncation::Complete(end.min(leader.end_offset).min(leo)),
        _ => Truncation::Complete(leader.end_offset.min(leo)),
    }
}

/// Where a follower fetches next and the `last_fetched_epoch` it sends (KIP-595; -1 when its log
/// has no epochs): its log end offset, or `skip_to` (the leader's log start, after the leader's
/// retention moved past this log's end) when that is further. The leader checks the epoch
/// against its own log before it counts the fetch ([`crate::replication::fetch`]).
pub fn fetch_position(log: &impl LogView, skip_to: Option<i64>) -> (i64, i32) {
    let leo = log.log_end_offset();
    (
        skip_to.map_or(leo, |n| n.max(leo)),
        log.latest_epoch().max(-1),
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use frieda_log::Epochs;

    struct Log {
        leo: i64,
        epochs: Epochs,
    }

    impl LogView for Log {
        fn log_start_offset(&self) -> i64 {
            0
        }
        fn log_end_offset(&self) -> i64 {
            self.leo
        }
        fn latest_epoch(&self) -> i32 {
            self.epochs.latest_epoch()
        }
        fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
            self.epochs.end_offset_for(epoch, self.leo)
        }
    }

    fn log(leo: i64, epochs: &[(i32, i64)]) -> Log {
        let mut e = Epochs::new();
        for (epoch, start) in epochs {
            e.assign(*epoch, *start);
        }
        Log { leo, epochs: e }
    }

    fn end(epoch: i32, end_offset: i64) -> EpochEnd {
        EpochEnd { epoch, end_offset }
    }

    #[test]
    fn truncation_follows_kafka() {
        // Epochs 1 from 0, 3 from 50; the log ends at 80.
        let l = log(80, &[(1, 0), (3, 50)]);
        // Same epoch on the leader, ending earlier: cut there.
        assert_eq!(truncation(&l, 40, 3, end(3, 60)), Truncation::Complete(60));
        // Same epoch, ending later on the leader: nothing to cut.
        assert_eq!(truncation(&l, 40, 3, end(3, 95)), Truncation::Complete(80));
        // The leader's largest epoch <= 3 is 2, which this log lacks: cut to where epoch 1
        // ends here (50) and ask again.
        assert_eq!(truncation(&l, 40, 3, end(2, 70)), Truncation::Partial(50));
        // The leader knows epoch 1 only, ending at 30: cut to 30.
        assert_eq!(truncation(&l, 40, 1, end(1, 30)), Truncation::Complete(30));
        // Issue 28, item 5: the leader does not know the epoch (-1, -1): the high watermark.
        assert_eq!(truncation(&l, 40, 3, end(-1, -1)), Truncation::Complete(40));
        // No epochs here: the high watermark.
        assert_eq!(
            truncation(&log(80, &[]), 40, -1, end(-1, -1)),
            Truncation::Complete(40)
        );
        // Every epoch here is later than the leader's: this log's copy of that epoch (as
        // Kafka's `endOffsetFor` answers for an epoch below the first) is empty; cut to 0.
        assert_eq!(
            truncation(&log(80, &[(5, 0)]), 40, 5, end(4, 20)),
            Truncation::Complete(0)
        );
        // An epoch newer than this log knows (no answer here): the leader's end.
        assert_eq!(
            truncation(&log(80, &[(1, 0)]), 40, 1, end(3, 20)),
            Truncation::Complete(20)
        );
    }

    #[test]
    fn a_partition_truncates_before_it_fetches_and_backs_off_after_errors() {
        let mut f = PartitionFetch::default();
        assert_eq!(f.next_request(), NextRequest::OffsetForLeaderEpoch);
        assert!(f.ready(0));
        // A partial truncation asks again; a complete one starts the fetching.
        f.truncated_to(Truncation::Partial(50));
        assert_eq!(f.next_request(), NextRequest::OffsetForLeaderEpoch);
        f.truncated_to(Truncation::Complete(40));
        assert_eq!(f.next_request(), NextRequest::Fetch { skip_to: None });
        // Below the leader's log start: fetch from there after the back-off.
        let step = f.refused(1_000, 40, ResponseError::OffsetOutOfRange, 70);
        assert_eq!(step, Refused::BackedOff);
        assert!(!f.ready(1_000 + FETCH_BACKOFF_MS - 1));
        assert!(f.ready(1_000 + FETCH_BACKOFF_MS));
        assert_eq!(f.next_request(), NextRequest::Fetch { skip_to: Some(70) });
        f.appended(60);
        assert_eq!(f.next_request(), NextRequest::Fetch { skip_to: Some(70) });
        f.appended(70);
        assert_eq!(f.next_request(), NextRequest::Fetch { skip_to: None });
        // Past the leader's end: truncate again.
        f.refused(2_000, 90, ResponseError::OffsetOutOfRange, 0);
        assert_eq!(f.next_request(), NextRequest::OffsetForLeaderEpoch);
        // Only in remote storage: the caller starts the log again (no back-off yet).
        f.truncated_to(Truncation::Complete(70));
        let step = f.refused(3_000, 10, ResponseError::OffsetMovedToTieredStorage, 0);
        assert_eq!(step, Refused::StartAgainAboveCopies);
        assert!(f.ready(3_000));
        assert_eq!(
            PartitionFetch::started_again().next_request(),
            NextRequest::Fetch { skip_to: None }
        );
        // Any other refusal backs off and keeps the position.
        f.refused(4_000, 70, ResponseError::NotLeaderOrFollower, -1);
        assert!(!f.ready(4_000));
        assert_eq!(f.next_request(), NextRequest::Fetch { skip_to: None });
    }

    #[test]
    fn the_fetch_carries_the_last_fetched_epoch() {
        assert_eq!(fetch_position(&log(80, &[(1, 0), (3, 50)]), None), (80, 3));
        assert_eq!(fetch_position(&log(0, &[]), None), (0, -1));
        assert_eq!(fetch_position(&log(80, &[(1, 0)]), Some(100)), (100, 1));
    }
}
