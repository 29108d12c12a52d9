//! Metadata (key 3): brokers, and topics with their partitions, leaders and replicas.
//! Unknown topics are auto-created when `auto.create.topics.enable` is on and the request
//! allows it (v4+ flag; always for v0-3).

use super::{authorized, authorized_cluster, authorized_filter, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::membership::ClusterNode;
use crate::security::acl::{op, resource};
use crate::storage::topic::Topic;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use std::sync::Arc;

/// Whether the request may see topic `name` (DESCRIBE). Kafka leaves topics it may not see
/// out of an all-topics answer and answers a named one with TOPIC_AUTHORIZATION_FAILED.
fn may_describe(broker: &Broker, ctx: &RequestContext, name: &str) -> bool {
    authorized(broker, ctx, op::DESCRIBE, resource::TOPIC, name)
}

/// As [`may_describe`] for an all-topics answer, which leaves out what it may not see without
/// an audit line at INFO for each (Kafka's `logIfDenied = false` for filters).
fn may_see(broker: &Broker, ctx: &RequestContext, name: &str) -> bool {
    authorized_filter(broker, ctx, op::DESCRIBE, resource::TOPIC, name)
}

/// Whether the request may auto-create topic `name`: CREATE on the cluster or on the topic.
fn may_create(broker: &Broker, ctx: &RequestContext, name: &str) -> bool {
    authorized_cluster(broker, ctx, op::CREATE)
        || authorized(broker, ctx, op::CREATE, resource::TOPIC, name)
}

/// An error entry for a named topic the request may not see or create.
fn denied(name: Option<TopicName>, id: uuid::Uuid, version: i16) -> MetadataResponseTopic {
    // A topic asked for by id gets its id back (ids are not secret); one asked for by name not.
    let id = if version >= 10 && name.is_none() {
        id
    } else {
        uuid::Uuid::nil()
    };
    MetadataResponseTopic::default()
        .with_error_code(ResponseError::TopicAuthorizationFailed.code())
        .with_name(name)
        .with_topic_id(id)
}

/// The authorized-operations fields (v8+) when the request asks for them.
fn with_authorized_operations(
    broker: &Broker,
    ctx: &RequestContext,
    (topics_ops, cluster_ops): (bool, bool),
    mut resp: MetadataResponse,
) -> MetadataResponse {
    if ctx.api_version < 8 {
        return resp;
    }
    if topics_ops {
        for t in resp.topics.iter_mut().filter(|t| t.error_code == 0) {
            if let Some(name) = &t.name {
                t.topic_authorized_operations = broker.security.authorized_operations(
                    &ctx.session,
                    resource::TOPIC,
                    name.0.as_str(),
                );
            }
        }
    }
    if cluster_ops && ctx.api_version <= 10 && authorized_cluster(broker, ctx, op::DESCRIBE) {
        resp.cluster_authorized_operations = broker.security.authorized_operations(
            &ctx.session,
            resource::CLUSTER,
            crate::security::acl::CLUSTER_NAME,
        );
    }
    resp
}

/// Builds the response. Per-topic errors: UNKNOWN_TOPIC_OR_PARTITION (3),
/// INVALID_TOPIC_EXCEPTION (17) for an illegal name, TOPIC_AUTHORIZATION_FAILED (29) for a
/// topic the principal may not describe (or create, when it would be auto-created).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: MetadataRequest,
) -> MetadataResponse {
    let ops = (
        req.include_topic_authorized_operations,
        req.include_cluster_authorized_operations,
    );
    let resp = if let Some(cluster) = broker.cluster() {
        cluster_metadata(broker, cluster, ctx, req).await
    } else {
        single_metadata(broker, ctx, req).await
    };
    with_authorized_operations(broker, ctx, ops, resp)
}

async fn single_metadata(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: MetadataRequest,
) -> MetadataResponse {
    let node = broker.config.node_id;
    let (host, port) = broker.config.advertised_on(&ctx.session.listener);
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
                .filter(|t| may_see(broker, ctx, &t.name))
                .map(|t| describe(t, node, ctx.api_version)),
        ),
        Some(list) if list.is_empty() && ctx.api_version == 0 => topics.extend(
            broker
                .topics()
                .iter()
                .filter(|t| may_see(broker, ctx, &t.name))
                .map(|t| describe(t, node, ctx.api_version)),
        ),
        Some(list) => {
            for wanted in list {
                let visible = match &wanted.name {
                    Some(name) => {
                        may_describe(broker, ctx, name.0.as_str())
                            && (!auto_create
                                || !broker.config.auto_create_topics
                                || broker.topic(name.0.as_str()).is_some()
                                || may_create(broker, ctx, name.0.as_str()))
                    }
                    None => broker
                        .topic_by_id(&wanted.topic_id)
                        .is_none_or(|t| may_describe(broker, ctx, &t.name)),
                };
                if !visible {
                    topics.push(denied(
                        wanted.name.clone(),
                        wanted.topic_id,
                        ctx.api_version,
                    ));
                    continue;
                }
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

/// Metadata in a cluster, from this broker's metadata image: the live brokers, each topic's
/// partitions with leader (-1 and LEADER_NOT_AVAILABLE (5) when none), leader epoch, replicas,
/// in-sync replicas and offline replicas (on fenced brokers). Topics named and unknown are
/// created through the controller when auto-creation is allowed.
async fn cluster_metadata(
    broker: &Arc<Broker>,
    cluster: &Arc<ClusterNode>,
    ctx: &RequestContext,
    req: MetadataRequest,
) -> MetadataResponse {
    let v = ctx.api_version;
    let auto_create = v < 4 || req.allow_auto_topic_creation;
    let mut wanted: Vec<(Option<String>, uuid::Uuid)> = Vec::new();
    let all = match &req.topics {
        None => true,
        Some(list) if list.is_empty() && v == 0 => true,
        Some(list) => {
            for t in list {
                wanted.push((t.name.as_ref().map(|n| n.0.to_string()), t.topic_id));
            }
            false
        }
    };
    if auto_create {
        let image = cluster.image();
        for (name, _) in &wanted {
            if let Some(name) = name {
                if !image.topics.contains_key(name)
                    && broker.config.auto_create_topics
                    && may_describe(broker, ctx, name)
                    && may_create(broker, ctx, name)
                {
                    if let Err(e) = broker.get_or_auto_create(name).await {
                        tracing::debug!(topic = %name, error = %e.message, "auto-creation failed");
                    }
                }
            }
        }
    }
    let image = cluster.image();
    // where this client's diskless partitions are served from (any broker; one of its rack)
    let routing = crate::diskless::driver::Routing::new(&image, ctx.client_id.as_deref());
    let mut topics = Vec::new();
    if all {
        for (name, t) in &image.topics {
            if may_see(broker, ctx, name) {
                topics.push(describe_image_topic(name, t, &routing, v));
            }
        }
    } else {
        for (name, id) in wanted {
            let found = match &name {
                Some(n) => image.topics.get_key_value(n.as_str()),
                None => image.topics.iter().find(|(_, t)| t.id == id),
            };
            let visible = match (&name, found) {
                (Some(n), Some(_)) => may_describe(broker, ctx, n),
                (Some(n), None) => {
                    may_describe(broker, ctx, n)
                        && (!auto_create
                            || !broker.config.auto_create_topics
                            || may_create(broker, ctx, n))
                }
                (None, Some((n, _))) => may_describe(broker, ctx, n),
                (None, None) => true,
            };
            if !visible {
                topics.push(denied(
                    name.as_deref().map(|n| TopicName(str_bytes(n))),
                    id,
                    v,
                ));
                continue;
            }
            topics.push(match found {
                Some((n, t)) => describe_image_topic(n, t, &routing, v),
                None => {
                    let code = match &name {
                        Some(n) if !crate::storage::topic::valid_topic_name(n) => {
                            ResponseError::InvalidTopicException
                        }
                        Some(_) => ResponseError::UnknownTopicOrPartition,
                        None => ResponseError::UnknownTopicId,
                    };
                    MetadataResponseTopic::default()
                        .with_error_code(code.code())
                        .with_name(name.map(|n| TopicName(str_bytes(&n))))
                        .with_topic_id(if v >= 10 { id } else { uuid::Uuid::nil() })
                }
            });
        }
    }
    let brokers = image
        .live_brokers()
        .filter_map(|b| {
            let e = crate::membership::endpoint_on(b, &ctx.session.listener)?;
            let mut mb = MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.id))
                .with_host(str_bytes(&e.host))
                .with_port(i32::from(e.port));
            if v >= 1 {
                mb = mb.with_rack(b.rack.as_deref().map(str_bytes));
            }
            Some(mb)
        })
        .collect();
    let mut resp = MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(topics);
    if v >= 1 {
        // Clients only use it to send admin requests, which any broker forwards.
        let controller = cluster.controller_id();
        let id = if image.is_live(controller) {
            controller
        } else {
            image.live_brokers().next().map_or(-1, |b| b.id)
        };
        resp = resp.with_controller_id(BrokerId(id));
    }
    if v >= 2 {
        resp = resp.with_cluster_id(Some(str_bytes(&broker.current_cluster_id())));
    }
    resp
}

fn describe_image_topic(
    name: &str,
    t: &frieda_meta::TopicImage,
    routing: &crate::diskless::driver::Routing<'_>,
    version: i16,
) -> MetadataResponseTopic {
    let image = routing.image();
    let ids = |v: &[i32]| v.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
    let partitions = t
        .partitions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // a diskless topic's partitions as served (any broker; one of the client's rack)
            let p = routing.served(t, i as i32, p);
            let offline: Vec<i32> = p
                .replicas
                .iter()
                .copied()
                .filter(|b| !image.is_live(*b))
                .collect();
            let mut mp = MetadataResponsePartition::default()
                .with_partition_index(i as i32)
                .with_leader_id(BrokerId(p.leader))
                .with_leader_epoch(if version >= 7 { p.leader_epoch } else { -1 })
                .with_replica_nodes(ids(&p.replicas))
                .with_isr_nodes(ids(&p.isr));
            if version >= 5 {
                mp = mp.with_offline_replicas(ids(&offline));
            }
            if p.leader == frieda_meta::NO_LEADER {
                mp = mp.with_error_code(ResponseError::LeaderNotAvailable.code());
            }
            mp
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(str_bytes(name))))
        .with_topic_id(if version >= 10 {
            t.id
        } else {
            uuid::Uuid::nil()
        })
        .with_is_internal(crate::storage::topic::is_internal_topic(name))
        .with_partitions(partitions)
}
