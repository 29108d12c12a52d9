//! When an `acks=all` produce is answered (Kafka's `Partition.checkEnoughReplicasReachOffset`,
//! called by `DelayedProduce`): a pure rule on the leader's state, so the broker's produce path
//! (`Replication::wait_replicated`) and the cluster simulator (crate `frieda-sim`) decide alike.

use kafka_protocol::error::ResponseError;

use super::state::Role;

/// Where an `acks=all` produce stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStatus {
    /// Not yet: keep waiting (for the high watermark, until the request's timeout).
    Pending,
    /// Answer now with this outcome.
    Done(Result<(), ResponseError>),
}

/// The answer to an `acks=all` produce whose batch ends at `last_offset`, appended in leader
/// epoch `epoch`, on a replica whose role is `role` and high watermark `hw`, with the topic's
/// `min_insync` (`min.insync.replicas`). Kafka's `Partition.checkEnoughReplicasReachOffset`:
///
/// - NOT_LEADER_OR_FOLLOWER (6) once this replica no longer leads in `epoch` (the record may or
///   may not survive: the producer retries);
/// - pending while the high watermark has not passed the batch;
/// - once it has: done, unless the (maximal) ISR has fewer than `min_insync` members (capped
///   at the replica count, Kafka's `effectiveMinIsr`), then
///   NOT_ENOUGH_REPLICAS_AFTER_APPEND (20). An ISR shrink moves the high watermark past records
///   only the remaining members have, so "the high watermark passed it" alone would acknowledge
///   a record held by fewer replicas than `min.insync.replicas` promises (issue 28, item 1:
///   both followers paused, stall detection shrinks the ISR to the leader, the waiting
///   produces were answered OK).
///
/// With `quorum` (`replication.ack.policy=quorum`, issue 34) the high watermark itself only
/// passes a record once `min_insync` replicas have it
/// ([`Leader::quorum_high_watermark`](super::Leader::quorum_high_watermark)): done once it
/// has, whatever the ISR.
pub fn ack_status(
    role: &Role,
    hw: i64,
    last_offset: i64,
    epoch: i32,
    min_insync: usize,
    quorum: bool,
) -> AckStatus {
    match role {
        Role::Leader(l) if l.epoch == epoch => {
            let required = last_offset + 1;
            if hw < required {
                return AckStatus::Pending;
            }
            if quorum || l.maximal_isr().len() >= l.effective_min_insync(min_insync) {
                AckStatus::Done(Ok(()))
            } else {
                AckStatus::Done(Err(ResponseError::NotEnoughReplicasAfterAppend))
            }
        }
        Role::Sole => AckStatus::Done(Ok(())),
        _ => AckStatus::Done(Err(ResponseError::NotLeaderOrFollower)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::{Leader, Replication};
    use frieda_meta::PartitionState;

    fn state(isr: Vec<i32>, partition_epoch: i32) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr,
            leader: 1,
            leader_epoch: 4,
            partition_epoch,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    /// Issue 28, item 1: with min.insync.replicas=2 and both followers paused, a produce waiting
    /// for replication must not be acknowledged when stall detection shrinks the ISR to the
    /// leader alone and the high watermark jumps past it.
    #[test]
    fn an_isr_shrink_below_min_insync_fails_the_waiting_produce() {
        let r = Replication::default();
        r.become_leader(1, &state(vec![1, 2, 3], 9), 0, 0);
        // The produce's batch is offsets 0..=4; the followers have none of it.
        r.advance(5, 0);
        assert_eq!(r.ack_status(4, 4, 2), AckStatus::Pending);
        // The controller commits the shrink to [1]: the high watermark is the leader's log end.
        assert!(r.update_leader(&state(vec![1], 10), 5, 2_000));
        assert_eq!(r.high_watermark(), 5);
        assert_eq!(
            r.ack_status(4, 4, 2),
            AckStatus::Done(Err(ResponseError::NotEnoughReplicasAfterAppend)),
            "only the leader has it: below min.insync.replicas"
        );
        // With min.insync.replicas=1 the leader alone is enough.
        assert_eq!(r.ack_status(4, 4, 1), AckStatus::Done(Ok(())));
    }

    #[test]
    fn waiting_follows_kafka() {
        let mut l = Leader::new(&state(vec![1, 2, 3], 9), 1, 0, 0);
        let leader = |l: &Leader| Role::Leader(l.clone());
        // Below the high watermark: pending, even with the ISR below min (Kafka keeps waiting).
        l.isr = vec![1];
        assert_eq!(
            ack_status(&leader(&l), 3, 4, 4, 2, false),
            AckStatus::Pending
        );
        // A pending expansion counts (maximal ISR): the follower caught up with the HW.
        l.pending_isr = Some(vec![1, 2]);
        assert_eq!(
            ack_status(&leader(&l), 5, 4, 4, 2, false),
            AckStatus::Done(Ok(()))
        );
        // Another epoch: leadership moved.
        assert_eq!(
            ack_status(&leader(&l), 5, 4, 3, 2, false),
            AckStatus::Done(Err(ResponseError::NotLeaderOrFollower))
        );
        assert_eq!(
            ack_status(
                &Role::Follower {
                    leader: 2,
                    epoch: 5
                },
                5,
                4,
                4,
                2,
                false
            ),
            AckStatus::Done(Err(ResponseError::NotLeaderOrFollower))
        );
    }
}
