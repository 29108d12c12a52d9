//! Topic administration: CreateTopics (key 19, v2-7), DeleteTopics (key 20, v1-6),
//! CreatePartitions (key 37, v0-3).

use super::configs::{topic_config_entries, Inherited};
use super::{authorized, authorized_cluster, str_bytes, RequestContext};
use crate::broker::{AdminError, Broker};
use crate::security::acl::{op, resource};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};
use std::collections::HashSet;
use std::sync::Arc;

fn err_fields(e: &AdminError) -> (i16, Option<kafka_protocol::protocol::StrBytes>) {
    (e.code.code(), Some(str_bytes(&e.message)))
}

/// Creates each topic. Errors per topic as [`Broker::create_topic`], plus INVALID_REQUEST (42)
/// for a topic named twice in one request and INVALID_REPLICA_ASSIGNMENT (39) for an
/// assignment naming another broker. v5+ results carry the partition count, replication factor
/// and the topic's configs.
pub async fn create_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = req
        .topics
        .iter()
        .filter(|t| !seen.insert(t.name.0.to_string()))
        .map(|t| t.name.0.to_string())
        .collect();
    let mut results = Vec::with_capacity(req.topics.len());
    // Kafka: CREATE on the cluster, or on each topic.
    let cluster_create = authorized_cluster(broker, ctx, op::CREATE);
    for t in req.topics {
        let name = t.name.0.to_string();
        let result = CreatableTopicResult::default()
            .with_name(t.name.clone())
            .with_num_partitions(-1)
            .with_replication_factor(-1);
        let outcome = if duplicates.contains(&name) {
            Err(AdminError {
                code: ResponseError::InvalidRequest,
                message: format!("topic `{name}` appears more than once in the request"),
            })
        } else if !cluster_create && !authorized(broker, ctx, op::CREATE, resource::TOPIC, &name) {
            Err(AdminError {
                code: ResponseError::TopicAuthorizationFailed,
                message: "Authorization failed.".into(),
            })
        } else if !t.assignments.is_empty()
            && (t.num_partitions != -1 || t.replication_factor != -1)
        {
            Err(AdminError {
                code: ResponseError::InvalidRequest,
                message: "both replica assignments and partitions/replication factor given".into(),
            })
        } else {
            let assignment = (!t.assignments.is_empty()).then(|| {
                let mut a: Vec<_> = t.assignments.iter().collect();
                a.sort_by_key(|x| x.partition_index);
                a.iter()
                    .map(|x| x.broker_ids.iter().map(|b| b.0).collect())
                    .collect()
            });
            let configs: Vec<(String, Option<String>)> = t
                .configs
                .iter()
                .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                .collect();
            broker
                .create_topic(
                    &name,
                    t.num_partitions,
                    t.replication_factor,
                    assignment,
                    &configs,
                    req.validate_only,
                )
                .await
        };
        results.push(match outcome {
            Ok(topic) => {
                let mut r = result
                    .with_topic_id(if ctx.api_version >= 7 {
                        topic.id
                    } else {
                        uuid::Uuid::nil()
                    })
                    .with_num_partitions(if req.validate_only {
                        if t.num_partitions == -1 && t.assignments.is_empty() {
                            broker.config.num_partitions
                        } else if t.assignments.is_empty() {
                            t.num_partitions
                        } else {
                            t.assignments.len() as i32
                        }
                    } else {
                        topic.partition_count()
                    })
                    .with_replication_factor(broker.replication_factor(&topic));
                if ctx.api_version < 5 {
                    r = r.with_num_partitions(-1).with_replication_factor(-1);
                }
                if ctx.api_version >= 5
                    && !authorized(broker, ctx, op::DESCRIBE_CONFIGS, resource::TOPIC, &name)
                {
                    // Kafka: the configs need DESCRIBE_CONFIGS on the topic.
                    r = r.with_topic_config_error_code(
                        ResponseError::TopicAuthorizationFailed.code(),
                    );
                } else if ctx.api_version >= 5 {
                    let configs = topic.configs.read().clone();
                    r = r.with_configs(Some(
                        topic_config_entries(
                            &configs,
                            Inherited {
                                dynamic: Some((&broker.dynamic_configs(), broker.config.node_id)),
                                static_defaults: &broker.config.topic_defaults,
                            },
                            None,
                        )
                        .into_iter()
                        .map(|e| {
                            CreatableTopicConfigs::default()
                                .with_name(e.name)
                                .with_value(e.value)
                                .with_read_only(false)
                                .with_config_source(e.config_source)
                                .with_is_sensitive(false)
                        })
                        .collect(),
                    ));
                }
                r
            }
            Err(e) => {
                if e.code != ResponseError::TopicAlreadyExists {
                    tracing::info!(topic = %name, error = %e.message, "create topic refused");
                }
                let (code, msg) = err_fields(&e);
                result.with_error_code(code).with_error_message(msg)
            }
        });
    }
    CreateTopicsResponse::default().with_topics(results)
}

/// Deletes topics named (v0-5) or named/identified (v6). Errors: UNKNOWN_TOPIC_OR_PARTITION (3),
/// UNKNOWN_TOPIC_ID (100).
pub async fn delete_topics(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let wanted: Vec<(Option<TopicName>, uuid::Uuid)> = if ctx.api_version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n), uuid::Uuid::nil()))
            .collect()
    };
    let mut responses = Vec::with_capacity(wanted.len());
    for (name, id) in wanted {
        let (topic, unknown) = match &name {
            Some(n) => (
                broker.topic(n.0.as_str()),
                ResponseError::UnknownTopicOrPartition,
            ),
            None => (broker.topic_by_id(&id), ResponseError::UnknownTopicId),
        };
        let result = DeletableTopicResult::default()
            .with_name(name.clone())
            .with_topic_id(if ctx.api_version >= 6 {
                id
            } else {
                uuid::Uuid::nil()
            });
        // Kafka: DELETE on the topic; by id, a topic the principal may not describe stays unknown.
        let topic = match topic {
            Some(t)
                if name.is_none()
                    && !authorized(broker, ctx, op::DESCRIBE, resource::TOPIC, &t.name) =>
            {
                responses
                    .push(result.with_error_code(ResponseError::TopicAuthorizationFailed.code()));
                continue;
            }
            t => t,
        };
        let named = name.as_ref().map(|n| n.0.to_string());
        let target = topic.as_ref().map(|t| t.name.to_string()).or(named);
        if let Some(n) = target {
            if !authorized(broker, ctx, op::DELETE, resource::TOPIC, &n) {
                responses
                    .push(result.with_error_code(ResponseError::TopicAuthorizationFailed.code()));
                continue;
            }
        }
        responses.push(match topic {
            None => result.with_error_code(unknown.code()),
            Some(topic) => {
                let result = result
                    .with_name(Some(TopicName(str_bytes(&topic.name))))
                    .with_topic_id(if ctx.api_version >= 6 {
                        topic.id
                    } else {
                        uuid::Uuid::nil()
                    });
                match broker.delete_topic(topic).await {
                    Ok(()) => result,
                    Err(e) => {
                        let (code, msg) = err_fields(&e);
                        let msg = if ctx.api_version >= 5 { msg } else { None };
                        result.with_error_code(code).with_error_message(msg)
                    }
                }
            }
        });
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

/// Adds partitions. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_PARTITIONS (37) for a count
/// not above the current one, INVALID_REPLICA_ASSIGNMENT (39) for assignments naming another
/// broker.
pub async fn create_partitions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
        // Kafka: ALTER on the topic.
        let topic = if authorized(broker, ctx, op::ALTER, resource::TOPIC, t.name.0.as_str()) {
            Ok(broker.topic(t.name.0.as_str()))
        } else {
            Err(AdminError {
                code: ResponseError::TopicAuthorizationFailed,
                message: "The topic authorization is failed.".into(),
            })
        };
        let outcome = match topic {
            Err(e) => Err(e),
            Ok(None) => Err(AdminError {
                code: ResponseError::UnknownTopicOrPartition,
                message: format!("unknown topic `{}`", t.name.0.as_str()),
            }),
            Ok(Some(topic)) => {
                let assignment = t.assignments.as_ref().map(|a| {
                    a.iter()
                        .map(|x| x.broker_ids.iter().map(|b| b.0).collect())
                        .collect()
                });
                broker
                    .create_partitions(topic, t.count, assignment, req.validate_only)
                    .await
            }
        };
        results.push(match outcome {
            Ok(()) => result,
            Err(e) => {
                let (code, msg) = err_fields(&e);
                result.with_error_code(code).with_error_message(msg)
            }
        });
    }
    CreatePartitionsResponse::default().with_results(results)
}
