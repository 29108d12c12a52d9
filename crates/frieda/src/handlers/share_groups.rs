//! The KIP-932 share group APIs of the group coordinator: ShareGroupHeartbeat (76, v1),
//! ShareGroupDescribe (77, v1), DescribeShareGroupOffsets (90, v0-1), AlterShareGroupOffsets (91,
//! v0) and DeleteShareGroupOffsets (92, v0), at Kafka 4.4.0's versions (v0 was 4.0's early access and is not served). The state
//! lives in [`crate::coordinator::group::share`]; these functions translate requests and
//! responses and check ACLs in the order Kafka 4.4's `KafkaApis` does: `share.version`, GROUP
//! READ (DESCRIBE for describe), the member id, then DESCRIBE on the subscribed topics.

use super::groups::group_operations;
use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::share::{Heartbeat, TopicPartition};
use crate::coordinator::offsets::codec::ShareStateValue;
use crate::security::acl;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::alter_share_group_offsets_response as offsets_alter_resp;
use kafka_protocol::messages::delete_share_group_offsets_response as offsets_delete_resp;
use kafka_protocol::messages::describe_share_group_offsets_response as offsets_resp;
use kafka_protocol::messages::share_group_describe_response::{self as describe};
use kafka_protocol::messages::share_group_heartbeat_response::{self as hb};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, GroupId, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

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
        timeouts: {
            let c = broker.share_config_of(&group);
            Some((
                Duration::from_millis(c.session_timeout_ms),
                Duration::from_millis(c.heartbeat_interval_ms),
            ))
        },
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

/// Records acknowledged or archived above the start offset in a stored state.
fn completed(v: &ShareStateValue) -> i64 {
    v.batches
        .iter()
        .filter(|(_, _, s, _)| *s == 2 || *s == 4)
        .map(|(f, l, _, _)| l - f + 1)
        .sum()
}

/// High watermarks and log start offsets by (topic, partition): `(high watermark, log start)`.
type Watermarks = HashMap<(String, i32), (i64, i64)>;

/// How long DescribeShareGroupOffsets waits for another broker's watermarks.
const WATERMARKS_TIMEOUT: Duration = Duration::from_secs(5);

/// The watermarks of the partitions in `wanted` that this broker does not lead, asked of their
/// leaders (ListOffsets for the latest and the earliest offset, read_uncommitted), as Kafka
/// 4.4's group coordinator asks the leaders for the lag (KIP-1226's partition metadata
/// client). A leader that cannot be reached leaves its partitions out (lag -1).
async fn remote_watermarks(broker: &Broker, wanted: BTreeSet<(String, i32)>) -> Watermarks {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
    let mut out = Watermarks::new();
    let Some(node) = broker.cluster() else {
        return out;
    };
    let image = node.image();
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for (topic, index) in wanted {
        // A diskless partition's watermarks: its batch coordinator's, which any broker asks.
        if let Some(t) = broker.topic(&topic).filter(|t| is_diskless(broker, t)) {
            match diskless_watermarks(broker, &t, index).await {
                Ok(w) => {
                    out.insert((topic, index), w);
                }
                Err(e) => {
                    tracing::warn!(topic, partition = index, error = ?e, "diskless watermarks for a share group lag not read: lag -1");
                }
            }
            continue;
        }
        let leader = image.partition(&topic, index).map_or(-1, |p| p.leader);
        if leader >= 0 && leader != node.me {
            by_leader
                .entry(leader)
                .or_default()
                .entry(topic)
                .or_default()
                .push(index);
        }
    }
    for (leader, topics) in by_leader {
        let mut ends = HashMap::new();
        for timestamp in [-1i64, -2] {
            let req = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(
                    topics
                        .iter()
                        .map(|(t, ps)| {
                            ListOffsetsTopic::default()
                                .with_name(TopicName(str_bytes(t)))
                                .with_partitions(
                                    ps.iter()
                                        .map(|p| {
                                            ListOffsetsPartition::default()
                                                .with_partition_index(*p)
                                                .with_current_leader_epoch(-1)
                                                .with_timestamp(timestamp)
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                );
            // Once more on a failure: a kept connection to a restarted leader fails once.
            let mut answer = node.clients.call(leader, 7, &req, WATERMARKS_TIMEOUT).await;
            if answer.is_err() {
                answer = node.clients.call(leader, 7, &req, WATERMARKS_TIMEOUT).await;
            }
            match answer {
                Ok(resp) => {
                    for t in resp.topics {
                        for p in t.partitions.into_iter().filter(|p| p.error_code == 0) {
                            ends.entry((t.name.0.to_string(), p.partition_index))
                                .or_insert_with(Vec::new)
                                .push(p.offset);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(leader, error = %e, "watermarks for share group lags not read: lag -1");
                    break;
                }
            }
        }
        out.extend(
            ends.into_iter()
                .filter_map(|(k, v)| (v.len() == 2).then(|| (k, (v[0], v[1])))),
        );
    }
    out
}

/// Whether `t` is a diskless topic (issue 60).
fn is_diskless(broker: &Broker, t: &crate::storage::topic::Topic) -> bool {
    t.configs.read().is_diskless(&broker.topic_defaults())
}

/// `(high watermark, log start)` of partition `index` of diskless topic `t`, from its batch
/// coordinator. Errors: the coordinator's (NOT_LEADER_OR_FOLLOWER while none serves).
async fn diskless_watermarks(
    broker: &Broker,
    t: &crate::storage::topic::Topic,
    index: i32,
) -> Result<(i64, i64), E> {
    let (partition, _, host) = super::fetch_diskless::diskless_host(broker, t, index)?;
    let offsets = host
        .offsets(partition)
        .await
        .map_err(crate::diskless::driver::route::not_served)?;
    Ok((offsets.high_watermark, offsets.log_start))
}

/// The lag of a share-partition (DescribeShareGroupOffsets v1, KIP-1226): the partition's high
/// watermark less the start offset less the records done above it. The watermarks are this
/// broker's when it leads the partition, else those its leader gave (`remote`); -1 when
/// neither is known.
fn lag(broker: &Broker, topic: &str, index: i32, v: &ShareStateValue, remote: &Watermarks) -> i64 {
    let local = broker
        .topic(topic)
        .filter(|t| !is_diskless(broker, t))
        .and_then(|t| t.replica(index).ok())
        .filter(|p| p.repl.check_leader(-1).is_ok())
        .map(|p| (p.high_watermark(), p.log_start_offset()));
    let Some((hw, log_start)) = local.or_else(|| remote.get(&(topic.to_string(), index)).copied())
    else {
        return -1;
    };
    (hw - v.start_offset.max(log_start) - completed(v)).max(0)
}

/// A group's stored share-partition states by (topic id, partition), or the error its entry
/// answers with (and the message).
type GroupStates = Result<BTreeMap<(uuid::Uuid, i32), ShareStateValue>, (E, Option<String>)>;

/// The stored states of `group` for DescribeShareGroupOffsets, after its checks in Kafka's
/// order: UNSUPPORTED_VERSION (35) with `share.version` 0, GROUP_AUTHORIZATION_FAILED (30)
/// without DESCRIBE, NOT_COORDINATOR (16), GROUP_ID_NOT_FOUND (69).
fn group_states(broker: &Broker, ctx: &RequestContext, group: &str) -> GroupStates {
    if !broker.features.share_groups_enabled() {
        return Err((E::UnsupportedVersion, None));
    }
    if !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::GROUP, group) {
        return Err((E::GroupAuthorizationFailed, None));
    }
    match broker
        .groups
        .for_group(group)
        .and_then(|c| c.share_offsets(group))
    {
        Ok(s) => Ok(s.into_iter().collect()),
        Err(E::GroupIdNotFound) => Err((
            E::GroupIdNotFound,
            Some(format!("Group {group} not found.")),
        )),
        Err(e) => Err((e, None)),
    }
}

/// The partitions with a stored state in `groups` that this broker does not lead (their lags
/// need their leaders' watermarks), and those of diskless topics (their watermarks are their
/// batch coordinators', not the empty local replica's).
fn led_elsewhere(broker: &Broker, groups: &[GroupStates]) -> BTreeSet<(String, i32)> {
    let mut out = BTreeSet::new();
    for (id, index) in groups.iter().flatten().flat_map(|s| s.keys()) {
        let Some(t) = broker.topic_by_id(id) else {
            continue;
        };
        let here = !is_diskless(broker, &t)
            && t.replica(*index)
                .is_ok_and(|p| p.repl.check_leader(-1).is_ok());
        if !here {
            out.insert((t.name.to_string(), *index));
        }
    }
    out
}

/// DescribeShareGroupOffsets (90, v0-1): each group's share-partition start offsets (and v1
/// lags). Per group: UNSUPPORTED_VERSION (35) with `share.version` 0, GROUP_AUTHORIZATION_FAILED
/// (30) without DESCRIBE, NOT_COORDINATOR (16), GROUP_ID_NOT_FOUND (69). Topics the principal may
/// not DESCRIBE are left out of an "all topics" answer and answered TOPIC_AUTHORIZATION_FAILED
/// (29) when named, as Kafka 4.4's KafkaApis does.
pub async fn describe_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let states: Vec<GroupStates> = req
        .groups
        .iter()
        .map(|g| group_states(broker, ctx, &g.group_id.0))
        .collect();
    let remote = if ctx.api_version >= 1 {
        remote_watermarks(broker, led_elsewhere(broker, &states)).await
    } else {
        Watermarks::new()
    };
    let groups = req
        .groups
        .iter()
        .zip(&states)
        .map(|(g, stored)| {
            let out = offsets_resp::DescribeShareGroupOffsetsResponseGroup::default()
                .with_group_id(g.group_id.clone());
            let stored = match stored {
                Ok(s) => s,
                Err((e, message)) => {
                    return out
                        .with_error_code(e.code())
                        .with_error_message(message.as_deref().map(str_bytes))
                }
            };
            let partition = |name: &str, id: uuid::Uuid, index: i32| {
                let p = offsets_resp::DescribeShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(index)
                    .with_leader_epoch(-1);
                match stored.get(&(id, index)) {
                    Some(v) => p
                        .with_start_offset(v.start_offset)
                        .with_lag(if ctx.api_version >= 1 { lag(broker, name, index, v, &remote) } else { -1 }),
                    None => p.with_start_offset(-1).with_lag(-1),
                }
            };
            let topics: Vec<offsets_resp::DescribeShareGroupOffsetsResponseTopic> = match &g.topics
            {
                None => {
                    let mut by_topic: BTreeMap<String, (uuid::Uuid, Vec<i32>)> = BTreeMap::new();
                    for (id, index) in stored.keys() {
                        if let Some(t) = broker.topic_by_id(id) {
                            by_topic
                                .entry(t.name.to_string())
                                .or_insert_with(|| (*id, Vec::new()))
                                .1
                                .push(*index);
                        }
                    }
                    by_topic
                        .into_iter()
                        .filter(|(name, _)| {
                            authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::TOPIC, name)
                        })
                        .map(|(name, (id, ps))| {
                            offsets_resp::DescribeShareGroupOffsetsResponseTopic::default()
                                .with_topic_name(TopicName(str_bytes(&name)))
                                .with_topic_id(id)
                                .with_partitions(
                                    ps.into_iter().map(|i| partition(&name, id, i)).collect(),
                                )
                        })
                        .collect()
                }
                Some(asked) => asked
                    .iter()
                    .map(|t| {
                        let name = t.topic_name.0.to_string();
                        let out = offsets_resp::DescribeShareGroupOffsetsResponseTopic::default()
                            .with_topic_name(t.topic_name.clone());
                        if !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::TOPIC, &name)
                        {
                            return out.with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|i| {
                                        offsets_resp::DescribeShareGroupOffsetsResponsePartition::default()
                                            .with_partition_index(*i)
                                            .with_start_offset(-1)
                                            .with_lag(-1)
                                            .with_error_code(E::TopicAuthorizationFailed.code())
                                    })
                                    .collect(),
                            );
                        }
                        let id = broker.topic(&name).map(|t| t.id).unwrap_or_default();
                        out.with_topic_id(id).with_partitions(
                            t.partitions.iter().map(|i| partition(&name, id, *i)).collect(),
                        )
                    })
                    .collect(),
            };
            out.with_topics(topics)
        })
        .collect();
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

/// AlterShareGroupOffsets (91, v0): the group's share-partitions of the topics named start again
/// at the offsets given (`kafka-share-groups --reset-offsets`). GROUP READ as Kafka checks it;
/// per topic TOPIC_AUTHORIZATION_FAILED (29) without READ, UNKNOWN_TOPIC_OR_PARTITION (3) for an
/// unknown topic or partition; top-level NON_EMPTY_GROUP (68) while the group has members,
/// GROUP_ID_NOT_FOUND (69) for a group of another type, NOT_COORDINATOR (16).
pub async fn alter_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let top = |e: E, message: Option<String>| {
        AlterShareGroupOffsetsResponse::default()
            .with_error_code(e.code())
            .with_error_message(message.map(|m| str_bytes(&m)))
    };
    if !broker.features.share_groups_enabled() {
        return top(E::UnsupportedVersion, None);
    }
    let group = req.group_id.0.to_string();
    if !authorized(broker, ctx, acl::op::READ, acl::resource::GROUP, &group) {
        return top(E::GroupAuthorizationFailed, None);
    }
    let mut entries = Vec::new();
    let mut responses = Vec::new();
    for t in &req.topics {
        let name = t.topic_name.0.to_string();
        let topic = broker.topic(&name);
        let denied = !authorized(broker, ctx, acl::op::READ, acl::resource::TOPIC, &name);
        let id = topic.as_ref().map(|t| t.id).unwrap_or_default();
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let code = if denied {
                    E::TopicAuthorizationFailed.code()
                } else if topic.as_ref().is_none_or(|t| {
                    p.partition_index < 0 || p.partition_index >= t.partition_count()
                }) {
                    E::UnknownTopicOrPartition.code()
                } else {
                    entries.push(((id, p.partition_index), p.start_offset));
                    0
                };
                offsets_alter_resp::AlterShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code)
            })
            .collect();
        responses.push(
            offsets_alter_resp::AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(id)
                .with_partitions(partitions),
        );
    }
    let result = match broker.groups.for_group(&group) {
        Ok(c) => c.alter_share_offsets(&group, entries).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => {
            broker.groups.shares.delete_group(&group);
            AlterShareGroupOffsetsResponse::default().with_responses(responses)
        }
        Err(E::NonEmptyGroup) => top(
            E::NonEmptyGroup,
            Some(format!(
                "The group {group} is not empty: alter its offsets once every member left."
            )),
        ),
        Err(e) => top(e, None),
    }
}

/// DeleteShareGroupOffsets (92, v0): forgets the group's share-partition states of the topics
/// named (they start again from `share.auto.offset.reset`). GROUP DELETE as Kafka checks it;
/// per topic TOPIC_AUTHORIZATION_FAILED (29) without READ, UNKNOWN_TOPIC_OR_PARTITION (3);
/// top-level NON_EMPTY_GROUP (68), GROUP_ID_NOT_FOUND (69), NOT_COORDINATOR (16).
pub async fn delete_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let top = |e: E, message: Option<String>| {
        DeleteShareGroupOffsetsResponse::default()
            .with_error_code(e.code())
            .with_error_message(message.map(|m| str_bytes(&m)))
    };
    if !broker.features.share_groups_enabled() {
        return top(E::UnsupportedVersion, None);
    }
    let group = req.group_id.0.to_string();
    if !authorized(broker, ctx, acl::op::DELETE, acl::resource::GROUP, &group) {
        return top(E::GroupAuthorizationFailed, None);
    }
    let mut ids = Vec::new();
    let mut responses = Vec::new();
    for t in &req.topics {
        let name = t.topic_name.0.to_string();
        let out = offsets_delete_resp::DeleteShareGroupOffsetsResponseTopic::default()
            .with_topic_name(t.topic_name.clone());
        if !authorized(broker, ctx, acl::op::READ, acl::resource::TOPIC, &name) {
            responses.push(out.with_error_code(E::TopicAuthorizationFailed.code()));
            continue;
        }
        match broker.topic(&name) {
            Some(topic) => {
                ids.push(topic.id);
                responses.push(out.with_topic_id(topic.id));
            }
            None => responses.push(out.with_error_code(E::UnknownTopicOrPartition.code())),
        }
    }
    let result = match broker.groups.for_group(&group) {
        Ok(c) => c.delete_share_offsets(&group, &ids).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => {
            broker.groups.shares.delete_group(&group);
            DeleteShareGroupOffsetsResponse::default().with_responses(responses)
        }
        Err(E::GroupIdNotFound) => top(
            E::GroupIdNotFound,
            Some(format!("Group {group} not found.")),
        ),
        Err(e) => top(e, None),
    }
}
