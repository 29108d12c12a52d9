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
/// `min_insync` (`min.insync.replicas`).
///
/// - NOT_LEADER_OR_FOLLOWER (6) once this replica no longer leads in `epoch` (the record may or
///   may not survive: the producer retries);
/// - otherwise the rule as Frieda had it (before issue 28's fix): done once the high watermark
///   passes the batch; NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) early when the committed ISR fell
///   below `min_insync` while waiting.
pub fn ack_status(
    role: &Role,
    hw: i64,
    last_offset: i64,
    epoch: i32,
    min_insync: usize,
) -> AckStatus {
    match role {
        Role::Leader(l) if l.epoch == epoch => {
            if hw > last_offset {
                return AckStatus::Done(Ok(()));
            }
            if l.isr.len() < min_insync {
                return AckStatus::Done(Err(ResponseError::NotEnoughReplicasAfterAppend));
            }
            AckStatus::Pending
        }
        Role::Sole => AckStatus::Done(Ok(())),
        _ => AckStatus::Done(Err(ResponseError::NotLeaderOrFollower)),
    }
}
