//! OffsetForLeaderEpoch (key 23, v2-4; KIP-101, KIP-279, KIP-320): where a leader epoch ends in
//! this leader's log. Followers ask it before copying, to cut a diverged tail; consumers ask
//! it after a leader change, to detect a truncated log under their position.

use super::{authorized, authorized_cluster, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use std::sync::Arc;

/// Per partition: the largest epoch `<= leader_epoch` in the log and the offset where the next
/// epoch starts (the log end offset for the current one); -1/-1 for an unknown or future epoch.
/// A single broker answers epoch 0 (what its Metadata says) ending at the log end. Errors:
/// UNKNOWN_TOPIC_OR_PARTITION (3), NOT_LEADER_OR_FOLLOWER (6), FENCED_LEADER_EPOCH (74) /
/// UNKNOWN_LEADER_EPOCH (75) for a `current_leader_epoch` older / newer than the leader's.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    // Kafka: CLUSTER_ACTION on the cluster (followers) or DESCRIBE on each topic (consumers).
    let cluster_action = authorized_cluster(broker, ctx, op::CLUSTER_ACTION);
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let topic = if cluster_action
            || authorized(
                broker,
                ctx,
                op::DESCRIBE,
                resource::TOPIC,
                t.topic.0.as_str(),
            ) {
            broker
                .topic(t.topic.0.as_str())
                .ok_or(ResponseError::UnknownTopicOrPartition)
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        let diskless = topic
            .as_ref()
            .ok()
            .filter(|t| t.configs.read().is_diskless(&broker.topic_defaults()))
            .cloned();
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let answer = EpochEndOffset::default()
                .with_partition(p.partition)
                .with_leader_epoch(-1)
                .with_end_offset(-1);
            if let Some(t) = &diskless {
                partitions.push(diskless_end(broker, t, p.partition, p.leader_epoch, answer).await);
                continue;
            }
            let found = topic
                .as_ref()
                .map_err(|e| *e)
                .and_then(|t| t.replica(p.partition))
                .and_then(|part| {
                    part.repl.check_leader(p.current_leader_epoch)?;
                    broker.check_lease()?;
                    Ok(part)
                });
            partitions.push(match found {
                Err(e) => answer.with_error_code(e.code()),
                Ok(part) if !part.repl.is_replicated() => {
                    if p.leader_epoch < 0 {
                        answer
                    } else {
                        answer
                            .with_leader_epoch(0)
                            .with_end_offset(part.reader().log_end_offset())
                    }
                }
                Ok(part) => match part.end_offset_for_epoch(p.leader_epoch) {
                    Some((epoch, end)) => answer.with_leader_epoch(epoch).with_end_offset(end),
                    None => answer.with_error_code(ResponseError::UnknownTopicOrPartition.code()),
                },
            });
        }
        topics.push(
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic)
                .with_partitions(partitions),
        );
    }
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

/// OffsetsForLeaderEpoch on a diskless partition (issue 60): every stored batch carries leader
/// epoch 0 and nothing is ever truncated, so any epoch from 0 on ends at the high watermark in
/// epoch 0 (a consumer validating its position after a leader change finds no divergence).
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); NOT_LEADER_OR_FOLLOWER (6) while no coordinator
/// serves it (loading, moving, not reached).
async fn diskless_end(
    broker: &Broker,
    topic: &crate::storage::topic::Topic,
    index: i32,
    leader_epoch: i32,
    answer: EpochEndOffset,
) -> EpochEndOffset {
    let offsets = match super::fetch_diskless::diskless_host(broker, topic, index) {
        Ok((partition, _, host)) => host
            .offsets(partition)
            .await
            .map_err(crate::diskless::driver::route::not_served),
        Err(e) => Err(e),
    };
    match offsets {
        Err(e) => answer.with_error_code(e.code()),
        Ok(_) if leader_epoch < 0 => answer,
        Ok(o) => answer
            .with_leader_epoch(0)
            .with_end_offset(o.high_watermark),
    }
}
