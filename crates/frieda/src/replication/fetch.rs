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

impl ServingReplica {
    /// Whether this replica serves a follower's fetch at all, checked in this order by both
    /// [`admit_follower_fetch`] and [`read_follower_fetch`]: the leadership's error, then
    /// KAFKA_STORAGE_ERROR (56) for an offline log, then OFFSET_MOVED_TO_TIERED_STORAGE (109)
    /// below the local log of a tiered partition.
    fn serves(self) -> Result<(), ResponseError> {
        self.leadership?;
        if self.offline {
            return Err(ResponseError::KafkaStorageError);
        }
        if self.only_remote {
            return Err(ResponseError::OffsetMovedToTieredStorage);
        }
        Ok(())
    }
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
    replica.serves()?;
    validate_follower_fetch(log, fetch_offset, last_fetched_epoch)
}

/// What a leader reads for a follower's admitted fetch at `fetch_offset`, each time it reads
/// it: at once, and again whenever a long poll wakes (Kafka's `DelayedFetch.tryComplete` checks
/// the partition again before it completes), in one order for the broker's fetch handler and
/// the simulator's leader. `replica.leadership` is whether this replica still leads in the
/// epoch the fetch was admitted in (NOT_LEADER_OR_FOLLOWER when not: its log may now hold
/// another leader's records); `replica.only_remote` whether the offset has since fallen below
/// the local log of a tiered partition.
///
/// Returns `Ok(true)` when there are records to read (up to the log end), `Ok(false)` when
/// none yet (the fetch is at the log end: a long poll waits).
///
/// Errors: the leadership's; KAFKA_STORAGE_ERROR (56) for an offline log;
/// OFFSET_MOVED_TO_TIERED_STORAGE (109) below the local log of a tiered partition (a follower
/// is never served from the copies: Kafka's `ReplicaManager.readFromLocalLog`);
/// OFFSET_OUT_OF_RANGE (1) below the log start or past the log end (a truncation or retention
/// while the fetch waited).
pub fn read_follower_fetch(
    replica: ServingReplica,
    log: &impl LogView,
    fetch_offset: i64,
) -> Result<bool, ResponseError> {
    replica.serves()?;
    let (start, leo) = (log.log_start_offset(), log.log_end_offset());
    if fetch_offset < start || fetch_offset > leo {
        return Err(ResponseError::OffsetOutOfRange);
    }
    Ok(fetch_offset < leo)
}

/// Whether a fetch that read `bytes` (with `min_bytes` asked for, `errors` when a partition
/// answered an error) is answered now rather than waiting longer (Kafka's `DelayedFetch`
/// completes on enough bytes, an error, or its `max_wait_ms`), `deadline_passed` telling
/// whether its wait is over. A fetch asking for no bytes at all is answered at once.
pub fn fetch_completes(
    bytes: usize,
    min_bytes: usize,
    errors: bool,
    deadline_passed: bool,
) -> bool {
    bytes >= min_bytes.max(1) || errors || deadline_passed || min_bytes == 0
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

    /// A log of epoch 1 from offset 0, ending at 90 (starting at 10).
    fn epoch_1_log() -> Log {
        let mut e = Epochs::new();
        e.assign(1, 0);
        Log(e, 90)
    }

    /// A replica that leads, online, the offset held locally.
    const SERVING: ServingReplica = ServingReplica {
        leadership: Ok(()),
        offline: false,
        only_remote: false,
    };

    #[test]
    fn a_follower_fetch_is_admitted_in_one_order() {
        let (log, ok) = (epoch_1_log(), SERVING);
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

    /// Each read of an admitted follower fetch (at once and after a long poll wakes) checks,
    /// in order: still leading in the admitted epoch, the log online, the offset local, then
    /// in range; at the log end it waits.
    #[test]
    fn a_follower_fetch_reads_only_what_its_leader_still_serves() {
        let (log, ok) = (epoch_1_log(), SERVING);
        assert_eq!(read_follower_fetch(ok, &log, 70), Ok(true));
        assert_eq!(
            read_follower_fetch(ok, &log, 90),
            Ok(false),
            "at the log end: wait"
        );
        for offset in [5, 91] {
            assert_eq!(
                read_follower_fetch(ok, &log, offset),
                Err(ResponseError::OffsetOutOfRange)
            );
        }
        let moved = ServingReplica {
            leadership: Err(ResponseError::NotLeaderOrFollower),
            offline: true,
            only_remote: true,
        };
        assert_eq!(
            read_follower_fetch(moved, &log, 70),
            Err(ResponseError::NotLeaderOrFollower)
        );
        let offline = ServingReplica {
            leadership: Ok(()),
            ..moved
        };
        assert_eq!(
            read_follower_fetch(offline, &log, 70),
            Err(ResponseError::KafkaStorageError)
        );
        let remote = ServingReplica {
            offline: false,
            ..offline
        };
        assert_eq!(
            read_follower_fetch(remote, &log, 5),
            Err(ResponseError::OffsetMovedToTieredStorage)
        );
    }

    #[test]
    fn a_fetch_completes_on_enough_bytes_an_error_or_its_deadline() {
        assert!(!fetch_completes(0, 1, false, false));
        assert!(!fetch_completes(10, 100, false, false));
        assert!(fetch_completes(100, 100, false, false));
        assert!(fetch_completes(0, 1, true, false));
        assert!(fetch_completes(0, 1, false, true));
        assert!(
            fetch_completes(0, 0, false, false),
            "min_bytes 0 never waits"
        );
    }
}
