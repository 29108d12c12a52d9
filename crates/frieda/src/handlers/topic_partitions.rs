//! DescribeTopicPartitions (key 75, v0, KIP-966): topics with their partitions' leaders, leader
//! epochs, replicas, in-sync and offline replicas, paginated by a partition limit and a cursor.
//! Kafka 4's `kafka-topics --describe` uses it. Answered from the metadata image in a cluster,
//! from the broker's topics on a single broker, with each partition's eligible leader replicas and
//! last known ELR (KIP-966; empty lists on a single broker, never null: Kafka's admin client
//! needs them).

use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use crate::storage::topic::valid_topic_name;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use std::sync::Arc;
use uuid::Uuid;

/// One partition as described.
struct PartitionView {
    leader: i32,
    epoch: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    offline: Vec<i32>,
    elr: Vec<i32>,
    last_known_elr: Vec<i32>,
}

/// A topic's id and partitions, or `None` for a named topic that does not exist.
type TopicView = (String, Option<(Uuid, Vec<PartitionView>)>);

/// The topics (all when `names` is empty), sorted by name.
fn view(broker: &Broker, names: &[String], client_id: Option<&str>) -> Vec<TopicView> {
    let mut all: Vec<(String, Uuid, Vec<PartitionView>)> = match broker.cluster() {
        Some(node) => {
            let image = node.image();
            let routing = crate::diskless::driver::Routing::new(&image, client_id);
            image
                .topics
                .iter()
                .map(|(name, t)| {
                    let parts = t
                        .partitions
                        .iter()
                        .enumerate()
                        .map(|(i, p)| routing.served(t, i as i32, p))
                        .map(|p| PartitionView {
                            leader: p.leader,
                            epoch: p.leader_epoch,
                            replicas: p.replicas.clone(),
                            isr: p.isr.clone(),
                            offline: p
                                .replicas
                                .iter()
                                .copied()
                                .filter(|b| !image.is_live(*b))
                                .collect(),
                            elr: p.elr.clone(),
                            last_known_elr: p.last_known_elr.clone(),
                        })
                        .collect();
                    (name.clone(), t.id, parts)
                })
                .collect()
        }
        None => {
            let me = broker.config.node_id;
            broker
                .topics()
                .iter()
                .map(|t| {
                    let parts = (0..t.partition_count())
                        .map(|_| PartitionView {
                            leader: me,
                            epoch: 0,
                            replicas: vec![me],
                            isr: vec![me],
                            offline: vec![],
                            elr: vec![],
                            last_known_elr: vec![],
                        })
                        .collect();
                    (t.name.to_string(), t.id, parts)
                })
                .collect()
        }
    };
    all.sort_by(|a, b| a.0.cmp(&b.0));
    if names.is_empty() {
        return all
            .into_iter()
            .map(|(n, id, p)| (n, Some((id, p))))
            .collect();
    }
    let mut wanted: Vec<String> = names.to_vec();
    wanted.sort();
    wanted.dedup();
    wanted
        .into_iter()
        .map(|n| {
            let found = all.iter().position(|(name, _, _)| *name == n).map(|i| {
                let (_, id, parts) = &mut all[i];
                (*id, std::mem::take(parts))
            });
            (n, found)
        })
        .collect()
}

/// Per topic: UNKNOWN_TOPIC_OR_PARTITION (3) for a named topic that does not exist,
/// INVALID_TOPIC_EXCEPTION (17) for an illegal name. At most `response_partition_limit`
/// partitions are returned (Kafka's cap of 2000 applies too); `next_cursor` says where to go on.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let names: Vec<String> = req.topics.iter().map(|t| t.name.0.to_string()).collect();
    let limit = req.response_partition_limit.clamp(1, 2000) as usize;
    let (start_topic, start_partition) = match &req.cursor {
        Some(c) => (Some(c.topic_name.0.to_string()), c.partition_index.max(0)),
        None => (None, 0),
    };
    let mut topics = Vec::new();
    let mut used = 0usize;
    let mut next_cursor = None;
    for (name, found) in view(broker, &names, ctx.client_id.as_deref()) {
        if start_topic.as_ref().is_some_and(|s| name < *s) {
            continue;
        }
        // Kafka: DESCRIBE on the topic; left out of an all-topics answer, refused when named.
        if !authorized(broker, ctx, op::DESCRIBE, resource::TOPIC, &name) {
            if !names.is_empty() {
                topics.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                        .with_name(Some(TopicName(str_bytes(&name))))
                        .with_topic_authorized_operations(i32::MIN),
                );
            }
            continue;
        }
        let first = if start_topic.as_deref() == Some(name.as_str()) {
            start_partition
        } else {
            0
        };
        let Some((id, parts)) = found else {
            let code = if valid_topic_name(&name) {
                ResponseError::UnknownTopicOrPartition
            } else {
                ResponseError::InvalidTopicException
            };
            topics.push(
                DescribeTopicPartitionsResponseTopic::default()
                    .with_error_code(code.code())
                    .with_name(Some(TopicName(str_bytes(&name))))
                    .with_topic_authorized_operations(i32::MIN),
            );
            continue;
        };
        let mut out = Vec::new();
        for (i, p) in parts.iter().enumerate().skip(first as usize) {
            if used == limit {
                next_cursor = Some(
                    Cursor::default()
                        .with_topic_name(TopicName(str_bytes(&name)))
                        .with_partition_index(i as i32),
                );
                break;
            }
            used += 1;
            let ids = |v: &[i32]| v.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
            let mut dp = DescribeTopicPartitionsResponsePartition::default()
                .with_partition_index(i as i32)
                .with_leader_id(BrokerId(p.leader))
                .with_leader_epoch(p.epoch)
                .with_replica_nodes(ids(&p.replicas))
                .with_isr_nodes(ids(&p.isr))
                .with_offline_replicas(ids(&p.offline))
                .with_eligible_leader_replicas(Some(ids(&p.elr)))
                .with_last_known_elr(Some(ids(&p.last_known_elr)));
            if p.leader < 0 {
                dp = dp.with_error_code(ResponseError::LeaderNotAvailable.code());
            }
            out.push(dp);
        }
        topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(&name))))
                .with_topic_id(id)
                .with_is_internal(crate::storage::topic::is_internal_topic(&name))
                .with_partitions(out)
                .with_topic_authorized_operations(i32::MIN),
        );
        if next_cursor.is_some() {
            break;
        }
    }
    DescribeTopicPartitionsResponse::default()
        .with_topics(topics)
        .with_next_cursor(next_cursor)
}
