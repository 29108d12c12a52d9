//! The KIP-932 share group membership APIs: ShareGroupHeartbeat (76, v1) and ShareGroupDescribe
//! (77, v1), at Kafka 4.4.0's versions (v0 was 4.0's early access and is not served). The state
//! lives in [`crate::coordinator::group::share`]; these functions translate requests and
//! responses and check ACLs in the order Kafka 4.4's `KafkaApis` does: `share.version`, GROUP
//! READ (DESCRIBE for describe), the member id, then DESCRIBE on the subscribed topics.

use super::groups::group_operations;
use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::share::{Heartbeat, TopicPartition};
use crate::security::acl;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::share_group_describe_response::{self as describe};
use kafka_protocol::messages::share_group_heartbeat_response::{self as hb};
use kafka_protocol::messages::{
    GroupId, ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse, TopicName,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Kafka's `KafkaApis.isMemberIdValid`: non-empty, at most 36 characters.
pub(crate) fn valid_member_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 36
}

/// The assignment grouped by topic id, as the wire lists it (topics that lost their id are
/// left out).
fn by_topic_id(
    broker: &Broker,
    assigned: &BTreeSet<TopicPartition>,
) -> BTreeMap<String, (uuid::Uuid, Vec<i32>)> {
    let mut out: BTreeMap<String, (uuid::Uuid, Vec<i32>)> = BTreeMap::new();
    for (t, p) in assigned {
        if let Some(topic) = broker.topic(t) {
            out.entry(t.clone())
                .or_insert_with(|| (topic.id, Vec::new()))
                .1
                .push(*p);
        }
    }
    out
}

/// ShareGroupHeartbeat: joins, heartbeats and leaves a share group.
pub async fn heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let group = req.group_id.0.to_string();
    let refuse = |e: E, message: Option<&str>| {
        ShareGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message(message.map(str_bytes))
    };
    if !broker.features.share_groups_enabled() {
        return refuse(E::UnsupportedVersion, None);
    }
    if !authorized(broker, ctx, acl::op::READ, acl::resource::GROUP, &group) {
        return refuse(E::GroupAuthorizationFailed, None);
    }
    if !valid_member_id(req.member_id.as_str()) {
        return refuse(E::InvalidRequest, Some("Invalid member id in the request."));
    }
    if let Some(topics) = &req.subscribed_topic_names {
        let denied = topics.iter().any(|t| {
            !authorized(
                broker,
                ctx,
                acl::op::DESCRIBE,
                acl::resource::TOPIC,
                t.as_str(),
            )
        });
        if denied {
            return refuse(E::TopicAuthorizationFailed, None);
        }
    }
    if group.trim().is_empty() {
        return refuse(E::InvalidRequest, Some("GroupId can't be empty."));
    }
    if req.rack_id.as_ref().is_some_and(|r| r.trim().is_empty()) {
        return refuse(E::InvalidRequest, Some("RackId can't be empty."));
    }
    let beat = Heartbeat {
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        rack: req.rack_id.as_ref().map(|r| r.to_string()),
        subscribed: req
            .subscribed_topic_names
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
    };
    let partitions_of = |t: &str| broker.topic(t).map(|t| t.partition_count());
    let result = broker
        .groups
        .for_group(&group)
        .map_err(|e| (e, String::new()))
        .and_then(|c| c.share_heartbeat(&group, beat, &partitions_of));
    let r = match result {
        Ok(r) => r,
        Err((e, message)) => {
            tracing::debug!(group, error = ?e, message, "ShareGroupHeartbeat refused");
            return refuse(e, (!message.is_empty()).then_some(message.as_str()));
        }
    };
    if r.member_epoch == crate::coordinator::group::share::LEAVE_EPOCH {
        broker
            .groups
            .shares
            .release_member_everywhere(&group, &r.member_id);
    }
    let mut resp = ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(str_bytes(&r.member_id)))
        .with_member_epoch(r.member_epoch)
        .with_heartbeat_interval_ms(r.heartbeat_interval_ms);
    if let Some(assigned) = &r.assignment {
        resp = resp.with_assignment(Some(
            hb::Assignment::default().with_topic_partitions(
                by_topic_id(broker, assigned)
                    .into_values()
                    .map(|(id, ps)| {
                        hb::TopicPartitions::default()
                            .with_topic_id(id)
                            .with_partitions(ps)
                    })
                    .collect(),
            ),
        ));
    }
    resp
}

/// ShareGroupDescribe: each group's state, epochs, assignor and members with their assignments.
/// Per group: GROUP_AUTHORIZATION_FAILED (30) without DESCRIBE on it, GROUP_ID_NOT_FOUND (69)
/// for an unknown group or one of another type.
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
    if !broker.features.share_groups_enabled() {
        let groups = req
            .group_ids
            .iter()
            .map(|g| {
                describe::DescribedGroup::default()
                    .with_group_id(g.clone())
                    .with_error_code(E::UnsupportedVersion.code())
            })
            .collect();
        return ShareGroupDescribeResponse::default().with_groups(groups);
    }
    let groups = req
        .group_ids
        .iter()
        .map(|gid| {
            let group = gid.0.to_string();
            let out = describe::DescribedGroup::default().with_group_id(GroupId(str_bytes(&group)));
            if !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::GROUP, &group) {
                return out
                    .with_error_code(E::GroupAuthorizationFailed.code())
                    .with_error_message(Some(str_bytes(&format!(
                        "Not authorized to access group {group}."
                    ))));
            }
            let g = match broker
                .groups
                .for_group(&group)
                .and_then(|c| c.share_describe(&group))
            {
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
                .members
                .values()
                .map(|m| {
                    describe::Member::default()
                        .with_member_id(str_bytes(&m.id))
                        .with_rack_id(m.rack.as_deref().map(str_bytes))
                        .with_member_epoch(m.epoch)
                        .with_client_id(str_bytes(&m.client_id))
                        .with_client_host(str_bytes(&m.client_host))
                        .with_subscribed_topic_names(
                            m.subscribed
                                .iter()
                                .map(|t| TopicName(str_bytes(t)))
                                .collect(),
                        )
                        .with_assignment(
                            describe::Assignment::default().with_topic_partitions(
                                by_topic_id(broker, &m.assigned)
                                    .into_iter()
                                    .map(|(name, (id, ps))| {
                                        describe::TopicPartitions::default()
                                            .with_topic_id(id)
                                            .with_topic_name(TopicName(str_bytes(&name)))
                                            .with_partitions(ps)
                                    })
                                    .collect(),
                            ),
                        )
                })
                .collect();
            let mut out = out
                .with_group_state(str_bytes(g.state().name()))
                .with_group_epoch(g.epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_assignor_name(str_bytes("simple"))
                .with_members(members);
            if req.include_authorized_operations {
                out = out.with_authorized_operations(group_operations(broker, ctx, &group));
            }
            out
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}
