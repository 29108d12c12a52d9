//! A follower's fetch as its leader serves it (Kafka's `Partition.fetchRecords` for a follower
//! and `readRecords`): the fetch is validated against the leader's log first — the follower's
//! last fetched epoch (KIP-595: a follower whose log diverged is told where, and not counted),
//! the fetch offset (OFFSET_OUT_OF_RANGE below the log start or past the log end) — and only a
//! fetch that was read counts as the follower's progress
//! ([`crate::replication::Replication::on_follower_fetch`]). Counting it first (Frieda before
//! issue 28, item 5) let a follower whose log had diverged, or that asked for offsets the
//! leader does not have, count as caught up to them.

use kafka_protocol::error::ResponseError;

use super::follower::EpochEnd;
use super::LogView;

/// What a leader does with a follower's fetch at `fetch_offset` whose last fetched epoch is
/// `last_fetched_epoch` (-1: not sent).
///
/// Returns `Ok(None)` to read and count the fetch, `Ok(Some(end))` to answer with the
/// diverging epoch `end` and no records (the fetch does not count).
///
/// Errors: OFFSET_OUT_OF_RANGE (1) when the offset is below the log start or past the log end,
/// or the leader cannot tell where the last fetched epoch ends.
pub fn validate_follower_fetch(
    log: &impl LogView,
    fetch_offset: i64,
    last_fetched_epoch: i32,
) -> Result<Option<EpochEnd>, ResponseError> {
    let (start, leo) = (log.log_start_offset(), log.log_end_offset());
    if last_fetched_epoch >= 0 {
        let (epoch, end_offset) = log.end_offset_for_epoch(last_fetched_epoch);
        if epoch < 0 || end_offset < 0 {
            return Err(ResponseError::OffsetOutOfRange);
        }
        if fetch_offset < start {
            return Err(ResponseError::OffsetOutOfRange);
        }
        if epoch < last_fetched_epoch || end_offset < fetch_offset {
            return Ok(Some(EpochEnd { epoch, end_offset }));
        }
    }
    if fetch_offset < start || fetch_offset > leo {
        return Err(ResponseError::OffsetOutOfRange);
    }
    Ok(None)
}

/// What a leader's replica knows of itself when a follower's fetch arrives, found before the
/// fetch is admitted by [`admit_follower_fetch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServingReplica {
    /// The follower's `current_leader_epoch` checked against this replica
    /// (`Replication::check_follower`): NOT_LEADER_OR_FOLLOWER (6), FENCED_LEADER_EPOCH (74) or
    /// UNKNOWN_LEADER_EPOCH (75) when it does not lead in that epoch.
    pub leadership: Result<(), ResponseError>,
    /// The leader's log went offline (a failed fsync).
    pub offline: bool,
    /// The fetch offset lies below the local log of a tiered partition: only the copies hold it.
    pub only_remote: bool,
}

/// Whether a leader serves a follower's fetch at `fetch_offset` (last fetched epoch
/// `last_fetched_epoch`, -1 when not sent), in one order for the broker's fetch handler and the
/// simulator's leader: the leadership in the follower's epoch, then the log online, then
/// the offset held locally, then [`validate_follower_fetch`]. `Ok(None)`: read it (and count
/// it once read); `Ok(Some(end))`: answer the diverging epoch `end`, no records.
///
/// Errors: the leadership's errors; KAFKA_STORAGE_ERROR (56) for an offline log;
/// OFFSET_MOVED_TO_TIERED_STORAGE (109) below the local log of a tiered partition (KIP-405:
/// the follower starts its log again above the copies); OFFSET_OUT_OF_RANGE (1) from the
/// validation.
pub fn admit_follower_fetch(
    replica: ServingReplica,
    log: &impl LogView,
    fetch_offset: i64,
    last_fetched_epoch: i32,
) -> Result<Option<EpochEnd>, ResponseError> {
    replica.leadership?;
    if replica.offline {
        return Err(ResponseError::KafkaStorageError);
    }
    if replica.only_remote {
        return Err(ResponseError::OffsetMovedToTieredStorage);
    }
    validate_follower_fetch(log, fetch_offset, last_fetched_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use frieda_log::Epochs;

    struct Log(Epochs, i64);

    impl LogView for Log {
        fn log_start_offset(&self) -> i64 {
            10
        }
        fn log_end_offset(&self) -> i64 {
            self.1
        }
        fn latest_epoch(&self) -> i32 {
            self.0.latest_epoch()
        }
        fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
            self.0.end_offset_for(epoch, self.1)
        }
    }

    #[test]
    fn a_diverged_or_impossible_fetch_is_not_counted() {
        let mut e = Epochs::new();
        e.assign(1, 0);
        e.assign(4, 50);
        let log = Log(e, 90);
        assert_eq!(validate_follower_fetch(&log, 70, 4), Ok(None));
        assert_eq!(validate_follower_fetch(&log, 90, -1), Ok(None));
        // The follower has epoch 3 up to 60; this leader has no epoch 3 (1 ends at 50).
        assert_eq!(
            validate_follower_fetch(&log, 60, 3),
            Ok(Some(EpochEnd {
                epoch: 1,
                end_offset: 50
            }))
        );
        // The follower has epoch 1 past where it ends here.
        assert_eq!(
            validate_follower_fetch(&log, 55, 1),
            Ok(Some(EpochEnd {
                epoch: 1,
                end_offset: 50
            }))
        );
        // Past the log end, below the log start, an epoch from the future.
        assert_eq!(
            validate_follower_fetch(&log, 95, -1),
            Err(ResponseError::OffsetOutOfRange)
        );
        assert_eq!(
            validate_follower_fetch(&log, 5, 4),
            Err(ResponseError::OffsetOutOfRange)
        );
        assert_eq!(
            validate_follower_fetch(&log, 70, 9),
            Err(ResponseError::OffsetOutOfRange)
        );
    }

    #[test]
    fn a_follower_fetch_is_admitted_in_one_order() {
        let mut e = Epochs::new();
        e.assign(1, 0);
        let log = Log(e, 90);
        let ok = ServingReplica {
            leadership: Ok(()),
            offline: false,
            only_remote: false,
        };
        assert_eq!(admit_follower_fetch(ok, &log, 70, 1), Ok(None));
        let all_wrong = ServingReplica {
            leadership: Err(ResponseError::FencedLeaderEpoch),
            offline: true,
            only_remote: true,
        };
        assert_eq!(
            admit_follower_fetch(all_wrong, &log, 5, 1),
            Err(ResponseError::FencedLeaderEpoch)
        );
        let offline = ServingReplica {
            leadership: Ok(()),
            ..all_wrong
        };
        assert_eq!(
            admit_follower_fetch(offline, &log, 5, 1),
            Err(ResponseError::KafkaStorageError),
            "an offline log answers nothing, not even a divergence"
        );
        let remote = ServingReplica {
            offline: false,
            ..offline
        };
        assert_eq!(
            admit_follower_fetch(remote, &log, 5, 1),
            Err(ResponseError::OffsetMovedToTieredStorage)
        );
        assert_eq!(
            admit_follower_fetch(ok, &log, 5, 1),
            Err(ResponseError::OffsetOutOfRange)
        );
    }
}
