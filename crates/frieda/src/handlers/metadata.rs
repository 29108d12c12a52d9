//! Metadata (key 3): brokers, and topics with their partitions, leaders and replicas.
//! Unknown topics are auto-created when `auto.create.topics.enable` is on and the request
//! allows it (v4+ flag; always for v0-3).

use super::{str_bytes, RequestContext};
use crate::broker::topic::Topic;
use crate::broker::Broker;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use std::sync::Arc;

/// Builds the response. Per-topic errors: UNKNOWN_TOPIC_OR_PARTITION (3),
/// INVALID_TOPIC_EXCEPTION (17) for an illegal name.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: MetadataRequest,
) -> MetadataResponse {
    let node = broker.config.node_id;
    let (host, port) = broker.config.advertised();
    let brokers = vec![MetadataResponseBroker::default()
        .with_node_id(BrokerId(node))
        .with_host(str_bytes(&host))
        .with_port(port)];
    let auto_create = ctx.api_version < 4 || req.allow_auto_topic_creation;
    let mut topics = Vec::new();
    match req.topics {
        // v0: an empty list means all topics; v1+: null means all topics.
        None => topics.extend(
            broker
                .topics()
                .iter()
                .map(|t| describe(t, node, ctx.api_version)),
        ),
        Some(list) if list.is_empty() && ctx.api_version == 0 => topics.extend(
            broker
                .topics()
                .iter()
                .map(|t| describe(t, node, ctx.api_version)),
        ),
        Some(list) => {
            for wanted in list {
                let found = match &wanted.name {
                    Some(name) => {
                        if auto_create {
                            broker.get_or_auto_create(name.0.as_str()).await
                        } else {
                            broker
                                .topic(name.0.as_str())
                                .ok_or_else(|| crate::broker::AdminError {
                                    code: ResponseError::UnknownTopicOrPartition,
                                    message: String::new(),
                                })
                        }
                    }
                    None => broker.topic_by_id(&wanted.topic_id).ok_or_else(|| {
                        crate::broker::AdminError {
                            code: ResponseError::UnknownTopicId,
                            message: String::new(),
                        }
                    }),
                };
                topics.push(match found {
                    Ok(t) => describe(&t, node, ctx.api_version),
                    Err(e) => MetadataResponseTopic::default()
                        .with_error_code(e.code.code())
                        .with_name(wanted.name.clone())
                        .with_topic_id(if ctx.api_version >= 10 {
                            wanted.topic_id
                        } else {
                            uuid::Uuid::nil()
                        }),
                });
            }
        }
    }
    let mut resp = MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(topics);
    if ctx.api_version >= 1 {
        resp = resp.with_controller_id(BrokerId(node));
    }
    if ctx.api_version >= 2 {
        resp = resp.with_cluster_id(Some(str_bytes(&broker.cluster_id)));
    }
    resp
}

fn describe(topic: &Topic, node: i32, version: i16) -> MetadataResponseTopic {
    let partitions = (0..topic.partition_count())
        .map(|i| {
            MetadataResponsePartition::default()
                .with_partition_index(i)
                .with_leader_id(BrokerId(node))
                .with_leader_epoch(if version >= 7 { 0 } else { -1 })
                .with_replica_nodes(vec![BrokerId(node)])
                .with_isr_nodes(vec![BrokerId(node)])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(str_bytes(&topic.name))))
        .with_topic_id(if version >= 10 {
            topic.id
        } else {
            uuid::Uuid::nil()
        })
        .with_is_internal(topic.is_internal())
        .with_partitions(partitions)
}
