//! In-sync replica changes (Kafka's `AlterPartition`, KIP-497): a leader asks the controller to
//! add a follower that caught up with the high watermark, or to remove one that has not been
//! caught up for `replica.lag.time.max.ms`. The controller commits the change to the metadata
//! log (refusing one built on a stale leader or partition epoch). The leader takes the new state
//! from its metadata image, not from the answer, so it decides with the topic configs committed
//! before it ([`crate::replication::Replication::on_alter_answer`]). Until then the leader counts
//! the larger of the old and the asked-for ISR for its high watermark
//! ([`crate::replication::state`]).

use std::sync::Arc;
use std::time::Duration;

use frieda_meta::{ControllerError, ControllerReply, ControllerRequest, MetaError, PartitionState};
use tokio::sync::watch;

use crate::broker::Broker;
use crate::clock::now_ms;
use crate::membership::ClusterNode;
use crate::replication::{AlterAnswer, IsrChange, LagLimits};
use crate::storage::partition::Partition;
use kafka_protocol::error::ResponseError;

/// How long an AlterPartition may wait for the controller.
const ALTER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a leader waits before asking again after no answer (Kafka's AlterPartitionManager
/// retries with a back-off too).
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// What a controller's answer to an AlterPartition means for the leader that asked (see
/// [`crate::replication::Replication::on_alter_answer`]): the committed state; a definite
/// refusal (INELIGIBLE_REPLICA: nothing applied; the stale-epoch errors: wait for the image);
/// or no answer (no controller, a timeout: the change may have been committed).
pub fn alter_answer(result: Result<PartitionState, ControllerError>) -> AlterAnswer {
    match result {
        Ok(state) => AlterAnswer::Committed(state),
        Err(ControllerError::Meta(MetaError::Ineligible(_))) => {
            AlterAnswer::Refused(ResponseError::IneligibleReplica)
        }
        Err(ControllerError::Meta(MetaError::StalePartitionEpoch(_))) => {
            AlterAnswer::Refused(ResponseError::InvalidUpdateVersion)
        }
        Err(ControllerError::Meta(MetaError::StaleLeader(_))) => {
            AlterAnswer::Refused(ResponseError::FencedLeaderEpoch)
        }
        Err(ControllerError::NotController { .. } | ControllerError::Unavailable(_)) => {
            AlterAnswer::Unknown
        }
        Err(e) => AlterAnswer::Refused(crate::membership::error_code(&e)),
    }
}

/// Sends `change` of `partition` to the controller in the background and applies the answer;
/// asks again while there is no answer and the change is still pending.
pub fn alter(node: &Arc<ClusterNode>, partition: &Arc<Partition>, change: IsrChange) {
    let node = node.clone();
    let partition = partition.clone();
    tokio::spawn(async move {
        tracing::info!(topic = %partition.topic, partition = partition.index, isr = ?change.isr,
            leader_epoch = change.leader_epoch, partition_epoch = change.partition_epoch, "asking for an ISR change");
        loop {
            let req = ControllerRequest::AlterIsr {
                topic: partition.topic.to_string(),
                partition: partition.index,
                leader: node.me,
                leader_epoch: change.leader_epoch,
                partition_epoch: change.partition_epoch,
                isr: change.isr.clone(),
                new_isr_epochs: change.new_isr_epochs.clone(),
            };
            let result = match node.quorum.request(req, ALTER_TIMEOUT).await {
                Ok(ControllerReply::Partition(state)) => Ok(state),
                Ok(other) => Err(ControllerError::Invalid(format!(
                    "unexpected AlterPartition answer {other:?}"
                ))),
                Err(e) => Err(e),
            };
            if let Err(e) = &result {
                tracing::info!(topic = %partition.topic, partition = partition.index,
                    error = %e, "ISR change not committed");
            }
            let answer = alter_answer(result);
            let unknown = answer == AlterAnswer::Unknown;
            let leo = partition.reader().log_end_offset();
            if partition
                .repl
                .on_alter_answer(&change, answer, leo, now_ms())
            {
                partition.notify_data();
            }
            if !unknown || partition.is_deleted() || !partition.repl.pending_change(&change) {
                return;
            }
            tokio::time::sleep(RETRY_AFTER).await;
        }
    });
}

/// Every quarter of the shorter of `replica.lag.time.max.ms` and `replica.stall.max.ms`
/// (Kafka checks every half lag time), asks to remove lagging and stalled followers from the
/// ISR of every partition this broker leads. Runs until `stop`.
pub async fn run_shrink_checks(
    broker: Arc<Broker>,
    node: Arc<ClusterNode>,
    mut stop: watch::Receiver<bool>,
) {
    let limits = LagLimits {
        lag_max_ms: node.config.replica_lag_time_max_ms as i64,
        stall_max_ms: node.config.replica_stall_max_ms as i64,
    };
    let shortest = limits.lag_max_ms.min(limits.stall_max_ms).max(0) as u64;
    let every = Duration::from_millis((shortest / 4).clamp(50, 5000));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let now = now_ms();
        for topic in broker.topics() {
            for p in topic.local_partitions() {
                let leo = p.reader().log_end_offset();
                if let Some(change) = p.repl.shrink_check(now, leo, limits) {
                    alter(&node, &p, change);
                }
            }
        }
    }
}
