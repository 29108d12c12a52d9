//! The KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68, v0-1) and
//! ConsumerGroupDescribe (69, v0-1). The state lives in
//! [`crate::coordinator::group::consumer`]; these functions translate requests and responses
//! (topic ids on the wire, KIP-516).

use super::authorized;
use super::groups::{group_operations, may_read_group};
use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::assignor::Assignment;
use crate::coordinator::group::consumer::{Heartbeat, TopicView, TopicsView};
use crate::security::acl;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::consumer_group_describe_response::{
    self as describe, DescribedGroup,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::{self as heartbeat};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every topic a consumer group may subscribe to: name -> id, partitions and the racks of each
/// partition's replicas (KIP-881; only in a cluster whose brokers set `broker.rack`). Internal
/// topics included, as Kafka's broker-side regex resolution does not skip them (franz-go's
/// `Test848RegexBrokerResolves` checks it). In a cluster every topic of the metadata image is a
/// local topic.
pub fn topics_view(broker: &Broker) -> TopicsView {
    let image = broker.cluster().map(|c| c.image());
    let racked = image
        .as_ref()
        .filter(|i| i.brokers.values().any(|b| b.rack.is_some()));
    broker
        .topics()
        .into_iter()
        .map(|t| {
            let mut view = TopicView::new(t.id, t.partition_count());
            if let Some(topic) = racked.and_then(|i| i.topics.get(t.name.as_ref())) {
                let racks = topic.partitions.iter().map(|p| {
                    p.replicas
                        .iter()
                        .filter_map(|r| racked?.brokers.get(r)?.rack.clone())
                        .collect()
                });
                view.racks = Arc::new(racks.collect());
            }
            (t.name.to_string(), view)
        })
        .collect()
}

fn owned(req: &ConsumerGroupHeartbeatRequest) -> Option<Assignment> {
    req.topic_partitions.as_ref().map(|tps| {
        let mut a = Assignment::new();
        for tp in tps {
            a.entry(tp.topic_id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
        a.retain(|_, ps| !ps.is_empty());
        a
    })
}

/// ConsumerGroupHeartbeat v0-1 (KIP-848; v1 is KIP-1082: the client names its member id).
///
/// Errors (top level, with a message): NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
/// UNSUPPORTED_VERSION (35) while `group.version` is finalized below 1, INVALID_GROUP_ID (24),
/// GROUP_ID_NOT_FOUND (69) for a classic group in use that cannot be upgraded, and the group's
/// (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
/// INVALID_REGULAR_EXPRESSION, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED).
pub async fn heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let group = req.group_id.0.to_string();
    if !broker.features.consumer_groups_enabled() {
        // `kafka-features downgrade --feature group.version=0`: Kafka answers UNSUPPORTED_VERSION
        // (35), no message, epoch 0, and the client fails (KIP-848's feature gate).
        return ConsumerGroupHeartbeatResponse::default()
            .with_error_code(E::UnsupportedVersion.code());
    }
    // Kafka: READ on the group, DESCRIBE on every topic subscribed by name.
    let refuse = |e: E, message: String| {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(&message)))
            .with_member_epoch(-1)
    };
    if !may_read_group(broker, ctx, &group) {
        return refuse(
            E::GroupAuthorizationFailed,
            format!("Not authorized to access group {group}."),
        );
    }
    if let Some(names) = &req.subscribed_topic_names {
        let denied: Vec<&str> = names
            .iter()
            .map(|t| t.0.as_str())
            .filter(|t| !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::TOPIC, t))
            .collect();
        if !denied.is_empty() {
            return refuse(
                E::TopicAuthorizationFailed,
                format!("Not authorized to describe topics: {}", denied.join(", ")),
            );
        }
    }
    let hb = Heartbeat {
        version: ctx.api_version,
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        topic_names: req
            .subscribed_topic_names
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
        topic_regex: req.subscribed_topic_regex.as_ref().map(|s| s.to_string()),
        assignor: req.server_assignor.as_ref().map(|s| s.to_string()),
        owned: owned(&req),
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
    };
    let topics = topics_view(broker);
    let result = broker
        .groups
        .for_group(&group)
        .and_then(|c| c.consumer_heartbeat(&group, hb, &topics));
    match result {
        Ok(r) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&r.member_id)))
            .with_member_epoch(r.member_epoch)
            .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
            .with_assignment(r.assignment.map(|a| {
                heartbeat::Assignment::default().with_topic_partitions(
                    a.into_iter()
                        .map(|(id, ps)| {
                            heartbeat::TopicPartitions::default()
                                .with_topic_id(id)
                                .with_partitions(ps.into_iter().collect())
                        })
                        .collect(),
                )
            })),
        Err(e) => {
            let message = match e {
                E::GroupIdNotFound => format!("Group {group} is not a consumer group."),
                other => format!("{other:?}"),
            };
            ConsumerGroupHeartbeatResponse::default()
                .with_error_code(e.code())
                .with_error_message(Some(str_bytes(&message)))
                .with_member_epoch(-1)
        }
    }
}

fn describe_assignment(
    a: &Assignment,
    names: &BTreeMap<uuid::Uuid, String>,
) -> describe::Assignment {
    describe::Assignment::default().with_topic_partitions(
        a.iter()
            .map(|(id, ps)| {
                describe::TopicPartitions::default()
                    .with_topic_id(*id)
                    .with_topic_name(TopicName(str_bytes(
                        names.get(id).map(String::as_str).unwrap_or(""),
                    )))
                    .with_partitions(ps.iter().copied().collect())
            })
            .collect(),
    )
}

/// ConsumerGroupDescribe v0-1 (KIP-848): state, epochs, assignor, and each member's
/// subscription, assignment and target assignment.
///
/// Errors per group: GROUP_ID_NOT_FOUND (69) for an unknown or classic group (the Java Admin
/// then asks DescribeGroups), NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15).
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let names: BTreeMap<uuid::Uuid, String> = topics_view(broker)
        .into_iter()
        .map(|(name, t)| (t.id, name))
        .collect();
    let groups = req
        .group_ids
        .iter()
        .map(|gid| {
            let group = gid.0.to_string();
            let out = DescribedGroup::default().with_group_id(GroupId(str_bytes(&group)));
            if !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::GROUP, &group) {
                return out
                    .with_error_code(E::GroupAuthorizationFailed.code())
                    .with_error_message(Some(str_bytes(&format!(
                        "Not authorized to access group {group}."
                    ))));
            }
            let found = broker
                .groups
                .for_group(&group)
                .and_then(|c| c.consumer_describe(&group));
            let g = match found {
                Ok(g) => g,
                Err(e) => {
                    let message = match e {
                        E::GroupIdNotFound => format!("Group {group} not found."),
                        other => format!("{other:?}"),
                    };
                    return out
                        .with_error_code(e.code())
                        .with_error_message(Some(str_bytes(&message)));
                }
            };
            let members = g
                .members()
                .map(|m| {
                    let mut d = describe::Member::default()
                        .with_member_id(str_bytes(&m.id))
                        .with_instance_id(m.instance_id.as_deref().map(str_bytes))
                        .with_rack_id(m.rack_id.as_deref().map(str_bytes))
                        .with_member_epoch(m.epoch)
                        .with_client_id(str_bytes(&m.client_id))
                        .with_client_host(str_bytes(&m.client_host))
                        .with_subscribed_topic_names(
                            m.topic_names
                                .iter()
                                .map(|t| TopicName(str_bytes(t)))
                                .collect(),
                        )
                        .with_subscribed_topic_regex(m.topic_regex.as_deref().map(str_bytes))
                        .with_assignment(describe_assignment(&m.assigned, &names))
                        .with_target_assignment(describe_assignment(&g.target_of(&m.id), &names));
                    if ctx.api_version >= 1 {
                        // KIP-1099 MemberType: 0 classic, 1 consumer protocol.
                        d = d.with_member_type(if m.uses_classic_protocol() { 0 } else { 1 });
                    }
                    d
                })
                .collect();
            out.with_group_state(str_bytes(g.state().name()))
                .with_group_epoch(g.epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_assignor_name(str_bytes(g.assignor.name()))
                .with_members(members)
                .with_authorized_operations(if req.include_authorized_operations {
                    group_operations(broker, ctx, &group)
                } else {
                    i32::MIN
                })
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}
