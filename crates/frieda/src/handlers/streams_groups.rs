//! The KIP-1071 streams group APIs: StreamsGroupHeartbeat (88, v0-1), StreamsGroupDescribe
//! (89, v0-1) and StreamsGroupTopologyDescriptionUpdate (93, v0), at Kafka 4.4.0's versions. The state lives in
//! [`crate::coordinator::group::streams`]; these functions translate requests and responses,
//! check ACLs as Kafka's `KafkaApis` does, and create the internal topics (repartition and
//! changelog topics) the coordinator finds missing.

use super::groups::{group_operations, may_read_group};
use super::{authorized, authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::streams::topology::{
    self as topo, CopartitionGroup, Subtopology, TopicInfo, TopicToCreate, Topology,
};
use crate::coordinator::group::streams::{
    Endpoint, Heartbeat, StreamsGroup, TaskId, Tasks, ACCEPTABLE_RECOVERY_LAG,
    TASK_OFFSET_INTERVAL_MS,
};
use crate::security::acl;
use crate::storage::topic::{is_internal_topic, valid_topic_name};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::streams_group_describe_response::{self as describe};
use kafka_protocol::messages::streams_group_heartbeat_request as hb_req;
use kafka_protocol::messages::streams_group_heartbeat_response::{self as hb};
use kafka_protocol::messages::{
    GroupId, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
    TopicName,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn key_values(kvs: &[hb_req::KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn topic_info(t: &hb_req::TopicInfo) -> TopicInfo {
    TopicInfo {
        name: t.name.0.to_string(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        configs: key_values(&t.topic_configs),
    }
}

fn topology(t: &hb_req::Topology) -> Topology {
    Topology {
        epoch: t.epoch,
        subtopologies: t
            .subtopologies
            .iter()
            .map(|s| Subtopology {
                id: s.subtopology_id.to_string(),
                source_topics: s.source_topics.iter().map(|t| t.0.to_string()).collect(),
                repartition_sink_topics: s
                    .repartition_sink_topics
                    .iter()
                    .map(|t| t.0.to_string())
                    .collect(),
                state_changelog_topics: s.state_changelog_topics.iter().map(topic_info).collect(),
                repartition_source_topics: s
                    .repartition_source_topics
                    .iter()
                    .map(topic_info)
                    .collect(),
                copartition_groups: s
                    .copartition_groups
                    .iter()
                    .map(|g| CopartitionGroup {
                        source_topics: g.source_topics.clone(),
                        repartition_source_topics: g.repartition_source_topics.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn tasks(ids: &Option<Vec<hb_req::TaskIds>>) -> Option<Tasks> {
    ids.as_ref().map(|ids| {
        ids.iter()
            .flat_map(|t| {
                let s = t.subtopology_id.to_string();
                t.partitions.iter().map(move |p| (s.clone(), *p))
            })
            .collect()
    })
}

fn task_offsets(offsets: &Option<Vec<hb_req::TaskOffset>>) -> Option<BTreeMap<TaskId, i64>> {
    offsets.as_ref().map(|os| {
        os.iter()
            .map(|o| ((o.subtopology_id.to_string(), o.partition), o.offset))
            .collect()
    })
}

/// Tasks grouped by subtopology, as the wire lists them.
fn grouped(tasks: &Tasks) -> BTreeMap<&str, Vec<i32>> {
    let mut out: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (s, p) in tasks {
        out.entry(s.as_str()).or_default().push(*p);
    }
    out
}

fn response_tasks(tasks: &Tasks) -> Vec<hb::TaskIds> {
    grouped(tasks)
        .into_iter()
        .map(|(s, ps)| {
            hb::TaskIds::default()
                .with_subtopology_id(str_bytes(s))
                .with_partitions(ps)
        })
        .collect()
}

/// Kafka's request checks (`GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid`
/// and `...IsUsingUnsupportedFeatures`): INVALID_REQUEST (42) with Kafka's message, or
/// STREAMS_INVALID_TOPOLOGY (130) for a changelog topic with a fixed partition count.
fn check(req: &StreamsGroupHeartbeatRequest) -> Result<(), (E, String)> {
    let invalid = |m: &str| Err((E::InvalidRequest, m.to_string()));
    if req.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if req.group_id.0.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if req.instance_id.as_ref().is_some_and(|s| s.is_empty()) {
        return invalid("InstanceId can't be empty.");
    }
    if req.rack_id.as_ref().is_some_and(|s| s.is_empty()) {
        return invalid("RackId can't be empty.");
    }
    if let Some(t) = &req.topology {
        if t.subtopologies
            .iter()
            .any(|s| !s.source_topic_regex.is_empty())
        {
            return invalid("Regular expressions for source topics are not supported yet.");
        }
    }
    let nonempty = |t: &Option<Vec<hb_req::TaskIds>>| t.as_ref().is_some_and(|t| !t.is_empty());
    match req.member_epoch {
        0 => {
            if req.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if nonempty(&req.active_tasks) {
                return invalid("ActiveTasks must be empty when (re-)joining.");
            }
            if nonempty(&req.standby_tasks) {
                return invalid("StandbyTasks must be empty when (re-)joining.");
            }
            if nonempty(&req.warmup_tasks) {
                return invalid("WarmupTasks must be empty when (re-)joining.");
            }
            let Some(t) = &req.topology else {
                return invalid("Topology must be non-null when (re-)joining.");
            };
            for s in &t.subtopologies {
                if let Some(c) = s.state_changelog_topics.iter().find(|c| c.partitions != 0) {
                    return Err((E::StreamsInvalidTopology, format!(
                        "Changelog topic {} must have an undefined partition count, but it is set to {}.",
                        c.name.0, c.partitions)));
                }
            }
        }
        -2 if req.instance_id.is_none() => return invalid("InstanceId can't be null."),
        e if e < -2 => {
            return invalid(&format!(
                "MemberEpoch is {e}, but must be greater than or equal to -2."
            ))
        }
        _ => {}
    }
    let given = [&req.active_tasks, &req.standby_tasks, &req.warmup_tasks];
    if given.iter().any(|t| t.is_some()) && given.iter().any(|t| t.is_none()) {
        return invalid("If one task-type is non-null, all must be non-null.");
    }
    if req.member_epoch != 0 && req.topology.is_some() {
        return invalid("Topology can only be provided when (re-)joining.");
    }
    Ok(())
}

/// Every topic a topology names (Kafka checks DESCRIBE on them).
fn topology_topics(t: &hb_req::Topology) -> BTreeSet<String> {
    t.subtopologies
        .iter()
        .flat_map(|s| {
            s.source_topics
                .iter()
                .chain(&s.repartition_sink_topics)
                .map(|t| t.0.to_string())
                .chain(
                    s.state_changelog_topics
                        .iter()
                        .chain(&s.repartition_source_topics)
                        .map(|t| t.name.0.to_string()),
                )
        })
        .collect()
}

/// Creates the internal topics the coordinator asked for, in the background (the members see
/// MISSING_INTERNAL_TOPICS until they exist, as in Kafka, whose broker creates them after the
/// heartbeat through its auto-topic-creation manager).
fn create_internal_topics(broker: &Arc<Broker>, topics: Vec<TopicToCreate>) {
    for t in topics {
        let broker = broker.clone();
        tokio::spawn(async move {
            let configs: Vec<(String, Option<String>)> = t
                .configs
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect();
            match broker
                .create_topic(
                    &t.name,
                    t.partitions,
                    t.replication_factor,
                    None,
                    &configs,
                    false,
                )
                .await
            {
                Ok(_) => tracing::info!(topic = %t.name, partitions = t.partitions,
                    "created a streams group's internal topic"),
                Err(e) if e.code == E::TopicAlreadyExists => {}
                Err(e) => tracing::warn!(topic = %t.name, error = ?e.code, message = %e.message,
                    "creating a streams group's internal topic failed"),
            }
        });
    }
}

/// StreamsGroupHeartbeat v0-1 (KIP-1071; v1 adds AcceptableRecoveryLag as int64 and
/// TopologyDescriptionRequired, which Frieda never sets: it keeps no topology descriptions).
///
/// Errors (top level, with Kafka's message): UNSUPPORTED_VERSION (35) while `streams.version` is
/// finalized below 1; GROUP_AUTHORIZATION_FAILED (30) without READ on the group;
/// STREAMS_INVALID_TOPOLOGY (130) for a topology naming an internal topic or an invalid name;
/// TOPIC_AUTHORIZATION_FAILED (29) without DESCRIBE on a topic of the topology; INVALID_REQUEST
/// (42) for a malformed request; NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15); and the
/// group's ([`StreamsGroup::heartbeat`]). Internal topics the client may not CREATE (on the
/// cluster or the topic) are not created and the MISSING_INTERNAL_TOPICS status says so.
pub async fn heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    let group = req.group_id.0.to_string();
    let refuse = |e: E, message: &str| {
        StreamsGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(message)))
    };
    if !broker.features.streams_groups_enabled() {
        return StreamsGroupHeartbeatResponse::default()
            .with_error_code(E::UnsupportedVersion.code());
    }
    if !may_read_group(broker, ctx, &group) {
        return refuse(
            E::GroupAuthorizationFailed,
            &format!("Not authorized to access group {group}."),
        );
    }
    if let Some(t) = &req.topology {
        // Kafka's KafkaApis checks, in this order: internal topics, topic names, DESCRIBE.
        let named = topology_topics(t);
        let internal: Vec<&str> = named
            .iter()
            .map(String::as_str)
            .filter(|t| is_internal_topic(t))
            .collect();
        if !internal.is_empty() {
            return refuse(
                E::StreamsInvalidTopology,
                &format!(
                    "Use of Kafka internal topics {} in a Kafka Streams topology is prohibited.",
                    internal.join(",")
                ),
            );
        }
        let invalid: Vec<&str> = named
            .iter()
            .map(String::as_str)
            .filter(|t| !valid_topic_name(t))
            .collect();
        if !invalid.is_empty() {
            return refuse(
                E::StreamsInvalidTopology,
                &format!(
                    "Topic names {} are not valid topic names.",
                    invalid.join(",")
                ),
            );
        }
        let denied: Vec<String> = named
            .into_iter()
            .filter(|t| !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::TOPIC, t))
            .collect();
        if !denied.is_empty() {
            return refuse(
                E::TopicAuthorizationFailed,
                &format!("Unauthorized to DESCRIBE on topics {}.", denied.join(", ")),
            );
        }
    }
    if let Err((e, message)) = check(&req) {
        return refuse(e, &message);
    }
    let hb = Heartbeat {
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        endpoint_epoch: req.endpoint_information_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        topology: req.topology.as_ref().map(topology),
        active: tasks(&req.active_tasks),
        standby: tasks(&req.standby_tasks),
        warmup: tasks(&req.warmup_tasks),
        process_id: req.process_id.as_ref().map(|s| s.to_string()),
        user_endpoint: req.user_endpoint.as_ref().map(|e| Endpoint {
            host: e.host.to_string(),
            port: e.port,
        }),
        client_tags: req.client_tags.as_ref().map(|kv| key_values(kv)),
        task_offsets: task_offsets(&req.task_offsets),
        task_end_offsets: task_offsets(&req.task_end_offsets),
        shutdown_application: req.shutdown_application,
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
    };
    let partitions_of = |t: &str| broker.topic(t).map(|t| t.partition_count());
    let result = broker
        .groups
        .for_group(&group)
        .map_err(|e| (e, String::new()))
        .and_then(|c| c.streams_heartbeat(&group, hb, &partitions_of));
    let r = match result {
        Ok(r) => r,
        Err((e, message)) => {
            let message = if message.is_empty() {
                format!("{e:?}")
            } else {
                message
            };
            return refuse(e, &message);
        }
    };
    let mut status = r.status;
    if !r.to_create.is_empty() {
        let cluster_create = authorized_cluster(broker, ctx, acl::op::CREATE);
        let (allowed, denied): (Vec<TopicToCreate>, Vec<TopicToCreate>) =
            r.to_create.into_iter().partition(|t| {
                cluster_create
                    || authorized(broker, ctx, acl::op::CREATE, acl::resource::TOPIC, &t.name)
            });
        if !denied.is_empty() {
            let names: Vec<&str> = denied.iter().map(|t| t.name.as_str()).collect();
            for s in status
                .iter_mut()
                .filter(|s| s.0 == topo::status::MISSING_INTERNAL_TOPICS)
            {
                s.1.push_str(&format!(
                    " Unauthorized to CREATE on topics {}.",
                    names.join(", ")
                ));
            }
        }
        create_internal_topics(broker, allowed);
    }
    let mut resp = StreamsGroupHeartbeatResponse::default()
        .with_member_id(str_bytes(&r.member_id))
        .with_member_epoch(r.member_epoch)
        .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
        .with_task_offset_interval_ms(TASK_OFFSET_INTERVAL_MS)
        // v0 carries the lag as int32 (AcceptableRecoveryLagLegacy), v1 as int64; each field
        // must stay at its default in the other version.
        .with_acceptable_recovery_lag_legacy(if ctx.api_version == 0 {
            ACCEPTABLE_RECOVERY_LAG as i32
        } else {
            0
        })
        .with_acceptable_recovery_lag(ACCEPTABLE_RECOVERY_LAG)
        .with_status(Some(
            status
                .into_iter()
                .map(|(code, detail)| {
                    hb::Status::default()
                        .with_status_code(code)
                        .with_status_detail(str_bytes(&detail))
                })
                .collect(),
        ))
        .with_endpoint_information_epoch(r.endpoint_epoch);
    if let Some(active) = &r.active {
        resp = resp
            .with_active_tasks(Some(response_tasks(active)))
            .with_standby_tasks(Some(Vec::new()))
            .with_warmup_tasks(Some(Vec::new()));
    }
    if let Some(endpoints) = r.endpoints {
        resp = resp.with_partitions_by_user_endpoint(Some(
            endpoints
                .into_iter()
                .map(|e| {
                    hb::EndpointToPartitions::default()
                        .with_user_endpoint(
                            hb::Endpoint::default()
                                .with_host(str_bytes(&e.endpoint.host))
                                .with_port(e.endpoint.port),
                        )
                        .with_active_partitions(
                            e.active
                                .into_iter()
                                .map(|(t, ps)| {
                                    hb::TopicPartition::default()
                                        .with_topic(TopicName(str_bytes(&t)))
                                        .with_partitions(ps.into_iter().collect())
                                })
                                .collect(),
                        )
                })
                .collect(),
        ));
    }
    resp
}

fn describe_tasks(tasks: &Tasks) -> Vec<describe::TaskIds> {
    grouped(tasks)
        .into_iter()
        .map(|(s, ps)| {
            describe::TaskIds::default()
                .with_subtopology_id(str_bytes(s))
                .with_partitions(ps)
        })
        .collect()
}

fn describe_assignment(active: &Tasks) -> describe::Assignment {
    describe::Assignment::default().with_active_tasks(describe_tasks(active))
}

fn describe_topic_info(t: &TopicInfo, partitions: i32) -> describe::TopicInfo {
    describe::TopicInfo::default()
        .with_name(TopicName(str_bytes(&t.name)))
        .with_partitions(partitions)
        .with_replication_factor(t.replication_factor)
        .with_topic_configs(
            t.configs
                .iter()
                .map(|(k, v)| {
                    describe::KeyValue::default()
                        .with_key(str_bytes(k))
                        .with_value(str_bytes(v))
                })
                .collect(),
        )
}

/// The topology as StreamsGroupDescribe shows it: its subtopologies only once configured (null
/// while topics are missing or misconfigured, as in Kafka), with the partition counts decided.
fn describe_topology(g: &StreamsGroup, broker: &Broker) -> Option<describe::Topology> {
    let t = g.topology.as_ref()?;
    let count = |name: &str| broker.topic(name).map(|t| t.partition_count()).unwrap_or(0);
    let names = |ts: &[String]| ts.iter().map(|t| TopicName(str_bytes(t))).collect();
    let subtopologies = g.configured.tasks.as_ref().map(|_| {
        t.subtopologies
            .iter()
            .map(|s| {
                describe::Subtopology::default()
                    .with_subtopology_id(str_bytes(&s.id))
                    .with_source_topics(names(&s.source_topics))
                    .with_repartition_sink_topics(names(&s.repartition_sink_topics))
                    .with_state_changelog_topics(
                        s.state_changelog_topics
                            .iter()
                            .map(|c| describe_topic_info(c, count(&c.name)))
                            .collect(),
                    )
                    .with_repartition_source_topics(
                        s.repartition_source_topics
                            .iter()
                            .map(|c| describe_topic_info(c, count(&c.name)))
                            .collect(),
                    )
            })
            .collect()
    });
    Some(
        describe::Topology::default()
            .with_epoch(t.epoch)
            .with_subtopologies(subtopologies),
    )
}

/// StreamsGroupDescribe v0-1 (KIP-1071): state, epochs, the configured topology, and each
/// member's process, endpoint, tags, task offsets, assignment and target assignment. v1's
/// topology description is reported NOT_STORED (1) when asked for (Frieda keeps none), else
/// NOT_REQUESTED (0); the assignor is `sticky`, Kafka 4.4's default name.
///
/// Errors per group: GROUP_AUTHORIZATION_FAILED (30) without DESCRIBE on the group;
/// GROUP_ID_NOT_FOUND (69) for an unknown group or one of another type; NOT_COORDINATOR (16),
/// COORDINATOR_NOT_AVAILABLE (15).
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: StreamsGroupDescribeRequest,
) -> StreamsGroupDescribeResponse {
    let groups = req
        .group_ids
        .iter()
        .map(|gid| {
            let group = gid.0.to_string();
            let out = describe::DescribedGroup::default()
                .with_group_id(GroupId(str_bytes(&group)))
                .with_topology_description_status(
                    if req.include_topology_description && ctx.api_version >= 1 {
                        1
                    } else {
                        0
                    },
                );
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
                .and_then(|c| c.streams_describe(&group))
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
                    let offsets = |os: &BTreeMap<TaskId, i64>| {
                        os.iter()
                            .map(|((s, p), o)| {
                                describe::TaskOffset::default()
                                    .with_subtopology_id(str_bytes(s))
                                    .with_partition(*p)
                                    .with_offset(*o)
                            })
                            .collect()
                    };
                    describe::Member::default()
                        .with_member_id(str_bytes(&m.id))
                        .with_member_epoch(m.epoch)
                        .with_instance_id(m.instance_id.as_deref().map(str_bytes))
                        .with_rack_id(m.rack_id.as_deref().map(str_bytes))
                        .with_client_id(str_bytes(&m.client_id))
                        .with_client_host(str_bytes(&m.client_host))
                        .with_topology_epoch(m.topology_epoch)
                        .with_process_id(str_bytes(&m.process_id))
                        .with_user_endpoint(m.user_endpoint.as_ref().map(|e| {
                            describe::Endpoint::default()
                                .with_host(str_bytes(&e.host))
                                .with_port(e.port)
                        }))
                        .with_client_tags(
                            m.client_tags
                                .iter()
                                .map(|(k, v)| {
                                    describe::KeyValue::default()
                                        .with_key(str_bytes(k))
                                        .with_value(str_bytes(v))
                                })
                                .collect(),
                        )
                        .with_task_offsets(offsets(&m.task_offsets))
                        .with_task_end_offsets(offsets(&m.task_end_offsets))
                        .with_assignment(describe_assignment(&m.active()))
                        .with_target_assignment(describe_assignment(
                            &g.target.get(&m.id).cloned().unwrap_or_default(),
                        ))
                })
                .collect();
            out.with_group_state(str_bytes(g.state().name()))
                .with_group_epoch(g.epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_topology(describe_topology(&g, broker))
                .with_members(members)
                .with_assignor_name(Some(str_bytes("sticky")))
                .with_authorized_operations(if req.include_authorized_operations {
                    group_operations(broker, ctx, &group)
                } else {
                    i32::MIN
                })
        })
        .collect();
    StreamsGroupDescribeResponse::default().with_groups(groups)
}

/// StreamsGroupTopologyDescriptionUpdate v0 (Kafka 4.4): a member pushes its topology description
/// for a broker-side store plugin. Frieda has no such plugin, and answers as Kafka 4.4 does
/// without one (its default): UNSUPPORTED_VERSION (35), "The broker has no streams group topology
/// description plugin configured." (heartbeats never set TopologyDescriptionRequired, so Kafka
/// Streams does not send it). GROUP_AUTHORIZATION_FAILED (30) first without READ on the group.
pub async fn topology_description_update(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: StreamsGroupTopologyDescriptionUpdateRequest,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let group = req.group_id.0.to_string();
    let (e, message) = if !may_read_group(broker, ctx, &group) {
        (
            E::GroupAuthorizationFailed,
            format!("Not authorized to access group {group}."),
        )
    } else {
        (
            E::UnsupportedVersion,
            "The broker has no streams group topology description plugin configured.".to_string(),
        )
    };
    StreamsGroupTopologyDescriptionUpdateResponse::default()
        .with_error_code(e.code())
        .with_error_message(Some(str_bytes(&message)))
}
