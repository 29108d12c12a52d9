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
}
