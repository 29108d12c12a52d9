//! Consumer group APIs of the classic protocol: FindCoordinator (10), JoinGroup (11),
//! Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16),
//! DeleteGroups (42). The state lives in [`crate::coordinator::group`]; these functions only
//! translate requests and responses, setting version-specific fields only for versions that
//! have them (kafka-protocol refuses to encode others).

use super::{authorized, authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::state::JoinRequest;
use crate::coordinator::registry::offsets_partition_for;
use crate::security::acl;
use crate::storage::topic::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, SyncGroupRequest, SyncGroupResponse,
};
use std::sync::Arc;
use std::time::Duration;

fn code(e: Option<E>) -> i16 {
    e.map_or(0, |e| e.code())
}

/// The internal topic whose partition leaders coordinate a FindCoordinator key type: groups
/// (0) in `__consumer_offsets`, transactional ids (1) in `__transaction_state`; other key types
/// (share groups) are INVALID_REQUEST.
fn coordinator_for(key_type: i8) -> Result<&'static str, (E, &'static str)> {
    match key_type {
        0 => Ok(OFFSETS_TOPIC),
        1 => Ok(TRANSACTION_STATE_TOPIC),
        _ => Err((E::InvalidRequest, "unsupported coordinator key type")),
    }
}

/// The broker coordinating `key` (a group or a transactional id) through `topic`: this one on
/// a single broker; in a cluster the leader of the key's partition of `topic` (the topic is
/// created on first use: `offsets.topic.num.partitions` / `.replication.factor`, or
/// `transaction.state.log.num.partitions` / `.replication.factor`).
///
/// Errors: COORDINATOR_NOT_AVAILABLE (15) while the topic cannot be created (too few brokers)
/// or the partition has no leader.
async fn locate(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    key: &str,
    topic: &str,
) -> Result<(i32, String, i32), (E, String)> {
    // Kafka: DESCRIBE on the group or the transactional id.
    let (resource, denied) = if topic == OFFSETS_TOPIC {
        (acl::resource::GROUP, E::GroupAuthorizationFailed)
    } else {
        (
            acl::resource::TRANSACTIONAL_ID,
            E::TransactionalIdAuthorizationFailed,
        )
    };
    if !broker.security.authorize(
        &ctx.session,
        super::api_name(ctx.api_key),
        acl::op::DESCRIBE,
        resource,
        key,
    ) {
        return Err((denied, denied.to_string()));
    }
    let Some(node) = broker.cluster() else {
        let (host, port) = broker.config.advertised_on(&ctx.session.listener);
        return Ok((broker.config.node_id, host, port));
    };
    let unavailable = |why: String| (E::CoordinatorNotAvailable, why);
    if !node.image().topics.contains_key(topic) {
        let c = &node.config;
        let (partitions, rf, configs) = if topic == OFFSETS_TOPIC {
            (
                c.offsets_topic_num_partitions,
                c.offsets_topic_replication_factor,
                crate::broker::offsets_topic_configs(&broker.config),
            )
        } else {
            let t = &broker.config.transactions;
            (
                t.num_partitions,
                t.replication_factor,
                crate::broker::transaction_topic_configs(&broker.config),
            )
        };
        match broker
            .cluster_create_topic(node, topic, partitions, rf, None, configs, false)
            .await
        {
            Ok(_) => tracing::info!(
                topic,
                partitions,
                replication_factor = rf,
                "created an internal topic"
            ),
            Err(e) if e.code == E::TopicAlreadyExists => {}
            Err(e) => return Err(unavailable(format!("cannot create {topic}: {}", e.message))),
        }
    }
    let image = node.image();
    let t = image
        .topics
        .get(topic)
        .ok_or_else(|| unavailable(format!("{topic} does not exist yet")))?;
    let index = offsets_partition_for(key, t.partitions.len() as i32);
    let leader = t.partitions[index as usize].leader;
    let endpoint = image
        .brokers
        .get(&leader)
        .filter(|b| !b.fenced)
        .and_then(|b| crate::membership::endpoint_on(b, &ctx.session.listener))
        .ok_or_else(|| unavailable(format!("{topic}-{index} has no leader")))?;
    Ok((leader, endpoint.host.clone(), i32::from(endpoint.port)))
}

/// FindCoordinator v0-6 (batched keys from v4).
pub async fn find_coordinator(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let v = ctx.api_version;
    if v >= 4 {
        let mut coordinators = Vec::with_capacity(req.coordinator_keys.len());
        for key in &req.coordinator_keys {
            let c = Coordinator::default().with_key(key.clone());
            let found = match coordinator_for(req.key_type) {
                Ok(topic) => locate(broker, ctx, key, topic).await,
                Err((e, msg)) => Err((e, msg.to_string())),
            };
            coordinators.push(match found {
                Ok((node, host, port)) => c
                    .with_node_id(BrokerId(node))
                    .with_host(str_bytes(&host))
                    .with_port(port),
                Err((e, msg)) => c
                    .with_error_code(e.code())
                    .with_error_message(Some(str_bytes(&msg)))
                    .with_node_id(BrokerId(-1))
                    .with_port(-1),
            });
        }
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let key_type = if v >= 1 { req.key_type } else { 0 };
    let resp = FindCoordinatorResponse::default();
    let found = match coordinator_for(key_type) {
        Ok(topic) => locate(broker, ctx, &req.key, topic).await,
        Err((e, msg)) => Err((e, msg.to_string())),
    };
    match found {
        Ok((node, host, port)) => resp
            .with_node_id(BrokerId(node))
            .with_host(str_bytes(&host))
            .with_port(port),
        Err((e, msg)) => {
            let r = resp
                .with_error_code(e.code())
                .with_node_id(BrokerId(-1))
                .with_port(-1);
            if v >= 1 {
                r.with_error_message(Some(str_bytes(&msg)))
            } else {
                r
            }
        }
    }
}

/// JoinGroup v0-9: waits for the rebalance to complete.
pub async fn join_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: JoinGroupRequest,
) -> JoinGroupResponse {
    let v = ctx.api_version;
    if !may_read_group(broker, ctx, &req.group_id.0) {
        let mut resp = JoinGroupResponse::default()
            .with_error_code(E::GroupAuthorizationFailed.code())
            .with_generation_id(-1)
            .with_leader(str_bytes(""))
            .with_member_id(str_bytes(""));
        if v < 7 {
            resp = resp.with_protocol_name(Some(str_bytes("")));
        }
        return resp;
    }
    let session = req.session_timeout_ms.max(0) as u64;
    let rebalance = if v >= 1 {
        req.rebalance_timeout_ms.max(0) as u64
    } else {
        session
    };
    let join = JoinRequest {
        member_id: req.member_id.to_string(),
        instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
        session_timeout: Duration::from_millis(session),
        rebalance_timeout: Duration::from_millis(rebalance),
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
        require_known_member_id: v >= 4,
        version: v,
    };
    // A consumer group takes classic members (KIP-848 upgrade path); they subscribe by name.
    let topics = super::consumer_groups::topics_view(broker);
    let r = broker.groups.join(&req.group_id.0, join, &topics).await;
    let members = r
        .members
        .into_iter()
        .map(|m| {
            JoinGroupResponseMember::default()
                .with_member_id(str_bytes(&m.member_id))
                .with_group_instance_id(if v >= 5 {
                    m.instance_id.as_deref().map(str_bytes)
                } else {
                    None
                })
                .with_metadata(m.metadata)
        })
        .collect();
    let protocol_name = r.protocol_name.as_deref().map(str_bytes);
    let mut resp = JoinGroupResponse::default()
        .with_error_code(code(r.error))
        .with_generation_id(r.generation)
        .with_protocol_name(if v >= 7 {
            protocol_name
        } else {
            Some(protocol_name.unwrap_or_else(|| str_bytes("")))
        })
        .with_leader(str_bytes(&r.leader))
        .with_member_id(str_bytes(&r.member_id))
        .with_members(members);
    if v >= 7 {
        resp = resp.with_protocol_type(r.protocol_type.as_deref().map(str_bytes));
    }
    if v >= 9 {
        resp = resp.with_skip_assignment(r.skip_assignment);
    }
    resp
}

/// SyncGroup v0-5: the leader sends the assignment; everyone waits for theirs.
pub async fn sync_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: SyncGroupRequest,
) -> SyncGroupResponse {
    if !may_read_group(broker, ctx, &req.group_id.0) {
        return SyncGroupResponse::default().with_error_code(E::GroupAuthorizationFailed.code());
    }
    let assignments = req
        .assignments
        .iter()
        .map(|a| (a.member_id.to_string(), a.assignment.clone()))
        .collect();
    let r = broker
        .groups
        .sync(
            &req.group_id.0,
            req.generation_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.protocol_type.as_deref(),
            req.protocol_name.as_deref(),
            assignments,
            &super::consumer_groups::topics_view(broker),
        )
        .await;
    let mut resp = SyncGroupResponse::default()
        .with_error_code(code(r.error))
        .with_assignment(r.assignment);
    if ctx.api_version >= 5 {
        resp = resp
            .with_protocol_type(r.protocol_type.as_deref().map(str_bytes))
            .with_protocol_name(r.protocol_name.as_deref().map(str_bytes));
    }
    resp
}

/// Heartbeat v0-4.
pub async fn heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: HeartbeatRequest,
) -> HeartbeatResponse {
    if !may_read_group(broker, ctx, &req.group_id.0) {
        return HeartbeatResponse::default().with_error_code(E::GroupAuthorizationFailed.code());
    }
    let e = broker.groups.heartbeat(
        &req.group_id.0,
        req.generation_id,
        &req.member_id,
        req.group_instance_id.as_deref(),
    );
    HeartbeatResponse::default().with_error_code(code(e))
}

/// LeaveGroup v0-5 (several members, by member or instance id, from v3: KIP-345).
pub async fn leave_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let v = ctx.api_version;
    if !may_read_group(broker, ctx, &req.group_id.0) {
        return LeaveGroupResponse::default().with_error_code(E::GroupAuthorizationFailed.code());
    }
    let members: Vec<(String, Option<String>)> = if v >= 3 {
        req.members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    };
    let (group_error, results) = broker.groups.leave(&req.group_id.0, &members);
    if v < 3 {
        let e = group_error.or_else(|| results.first().copied().flatten());
        return LeaveGroupResponse::default().with_error_code(code(e));
    }
    if group_error.is_some() {
        return LeaveGroupResponse::default().with_error_code(code(group_error));
    }
    let responses = members
        .iter()
        .zip(results)
        .map(|((m, i), e)| {
            MemberResponse::default()
                .with_member_id(str_bytes(m))
                .with_group_instance_id(i.as_deref().map(str_bytes))
                .with_error_code(code(e))
        })
        .collect();
    LeaveGroupResponse::default().with_members(responses)
}

/// ListGroups v0-5 (state filter from v4, type filter from v5: `classic` or `consumer`).
pub async fn list_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListGroupsRequest,
) -> ListGroupsResponse {
    let v = ctx.api_version;
    let states: Vec<String> = if v >= 4 {
        req.states_filter.iter().map(|s| s.to_string()).collect()
    } else {
        vec![]
    };
    let types: Vec<String> = if v >= 5 {
        req.types_filter.iter().map(|s| s.to_string()).collect()
    } else {
        vec![]
    };
    // Kafka: DESCRIBE on the cluster lists every group, else those the principal may describe.
    let all = authorized_cluster(broker, ctx, acl::op::DESCRIBE);
    let listed = broker
        .groups
        .list(&states)
        .into_iter()
        .filter(|g| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(g.group_type)))
        .filter(|g| {
            all || super::authorized_filter(
                broker,
                ctx,
                acl::op::DESCRIBE,
                acl::resource::GROUP,
                &g.group_id,
            )
        })
        .map(|g| {
            let mut l = ListedGroup::default()
                .with_group_id(GroupId(str_bytes(&g.group_id)))
                .with_protocol_type(str_bytes(&g.protocol_type));
            if v >= 4 {
                l = l.with_group_state(str_bytes(g.state));
            }
            if v >= 5 {
                l = l.with_group_type(str_bytes(g.group_type));
            }
            l
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}

/// Whether the request may use group `id` as a member (READ; GROUP_AUTHORIZATION_FAILED).
pub(crate) fn may_read_group(broker: &Broker, ctx: &RequestContext, id: &str) -> bool {
    authorized(broker, ctx, acl::op::READ, acl::resource::GROUP, id)
}

/// The operations the principal may do on group `id`, as DescribeGroups v3+ and
/// ConsumerGroupDescribe report them when asked.
pub(crate) fn group_operations(broker: &Broker, ctx: &RequestContext, id: &str) -> i32 {
    broker
        .security
        .authorized_operations(&ctx.session, acl::resource::GROUP, id)
}

/// DescribeGroups v0-5 (an unknown group is reported in state Dead, as Kafka does).
pub async fn describe_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let v = ctx.api_version;
    let groups = req
        .groups
        .iter()
        .map(|id| {
            if !authorized(broker, ctx, acl::op::DESCRIBE, acl::resource::GROUP, &id.0) {
                return DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_error_code(E::GroupAuthorizationFailed.code())
                    .with_group_state(str_bytes(""))
                    .with_protocol_type(str_bytes(""))
                    .with_protocol_data(str_bytes(""));
            }
            let d = match broker.groups.describe(&id.0) {
                Ok(d) => d,
                Err(e) => {
                    return DescribedGroup::default()
                        .with_group_id(id.clone())
                        .with_error_code(e.code())
                        .with_group_state(str_bytes(""))
                        .with_protocol_type(str_bytes(""))
                        .with_protocol_data(str_bytes(""))
                }
            };
            if let Some(why) = d.not_found.filter(|_| v >= 6) {
                // KIP-1043: v6+ says the group does not exist (or is not a classic group).
                return DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_error_code(E::GroupIdNotFound.code())
                    .with_error_message(Some(str_bytes(&why)))
                    .with_group_state(str_bytes(d.state.name()))
                    .with_protocol_type(str_bytes(""))
                    .with_protocol_data(str_bytes(""));
            }
            let members = d
                .members
                .into_iter()
                .map(|m| {
                    DescribedGroupMember::default()
                        .with_member_id(str_bytes(&m.member_id))
                        .with_group_instance_id(if v >= 4 {
                            m.instance_id.as_deref().map(str_bytes)
                        } else {
                            None
                        })
                        .with_client_id(str_bytes(&m.client_id))
                        .with_client_host(str_bytes(&m.client_host))
                        .with_member_metadata(m.metadata)
                        .with_member_assignment(m.assignment)
                })
                .collect();
            let mut g = DescribedGroup::default()
                .with_group_id(id.clone())
                .with_group_state(str_bytes(d.state.name()))
                .with_protocol_type(str_bytes(&d.protocol_type))
                .with_protocol_data(str_bytes(&d.protocol))
                .with_members(members);
            if v >= 3 && req.include_authorized_operations {
                g = g.with_authorized_operations(group_operations(broker, ctx, &id.0));
            }
            g
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// DeleteGroups v0-2: only empty groups (NON_EMPTY_GROUP otherwise); removes their offsets.
pub async fn delete_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &req.groups_names {
        let e = if authorized(broker, ctx, acl::op::DELETE, acl::resource::GROUP, &id.0) {
            let e = broker.groups.delete_group(&id.0).await.err();
            if e.is_none() {
                // A share group's share-partitions kept here go with it.
                broker.groups.shares.delete_group(&id.0);
            }
            e
        } else {
            Some(E::GroupAuthorizationFailed)
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(id.clone())
                .with_error_code(code(e)),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}

#[cfg(test)]
mod tests {
    //! Every group and offset API answers at every advertised version with a response that
    //! encodes (kafka-protocol refuses fields a version does not have), through a whole
    //! group lifecycle, including static members and errors.
    use super::super::{encode, offsets};
    use super::*;
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::leave_group_request::MemberIdentity;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::{
        ApiKey, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, TopicName,
    };
    use kafka_protocol::protocol::Encodable;

    fn ctx(api_key: ApiKey, api_version: i16) -> RequestContext {
        RequestContext {
            api_key,
            api_version,
            correlation_id: 7,
            client_id: Some("test".into()),
            peer: "127.0.0.1:5555".parse().unwrap(),
            request_bytes: 0,
            throttle: Default::default(),
            backlog: Default::default(),
            produce_ticket: Default::default(),
            splice: Default::default(),
            session: std::sync::Arc::new(crate::security::Session::anonymous(
                "PLAINTEXT".into(),
                crate::security::SecurityProtocol::Plaintext,
                "127.0.0.1".parse().unwrap(),
            )),
            timing: Default::default(),
        }
    }

    fn versions(key: ApiKey) -> std::ops::RangeInclusive<i16> {
        let spec = crate::handlers::table::spec(key).expect("advertised");
        spec.min..=spec.max
    }

    fn encodes<T: Encodable>(c: &RequestContext, resp: &T) {
        assert!(
            encode(c, resp).is_ok(),
            "{:?} v{} does not encode",
            c.api_key,
            c.api_version
        );
    }

    fn join_req(group: &str, member: &str, instance: Option<&str>, v: i16) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(str_bytes(group)))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(if v >= 1 { 10_000 } else { -1 })
            .with_member_id(str_bytes(member))
            .with_group_instance_id(instance.map(str_bytes))
            .with_protocol_type(str_bytes("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(str_bytes("range"))
                .with_metadata(bytes::Bytes::from_static(b"\0\0\0\0\0\0"))])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_version_encodes_through_a_group_lifecycle() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::config::BrokerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        };
        let broker = Broker::open(cfg).unwrap();
        broker
            .create_topic("t", 2, 1, None, &[], false)
            .await
            .map_err(|e| e.message)
            .unwrap();
        for v in versions(ApiKey::FindCoordinator) {
            for key_type in [0i8, 1, 5] {
                let c = ctx(ApiKey::FindCoordinator, v);
                let req = FindCoordinatorRequest::default()
                    .with_key(if v < 4 { str_bytes("g") } else { str_bytes("") })
                    .with_key_type(if v >= 1 { key_type } else { 0 })
                    .with_coordinator_keys(if v >= 4 { vec![str_bytes("g")] } else { vec![] });
                encodes(&c, &find_coordinator(&broker, &c, req).await);
            }
        }
        for v in versions(ApiKey::JoinGroup) {
            let group = format!("g{v}");
            let instance = (v >= 5).then(|| format!("i{v}"));
            let c = ctx(ApiKey::JoinGroup, v);
            // First join: a static member from v5; MEMBER_ID_REQUIRED for a dynamic one from v4.
            let mut r = join_group(&broker, &c, join_req(&group, "", instance.as_deref(), v)).await;
            encodes(&c, &r);
            if r.error_code == E::MemberIdRequired.code() {
                let id = r.member_id.to_string();
                r = join_group(&broker, &c, join_req(&group, &id, instance.as_deref(), v)).await;
                encodes(&c, &r);
            }
            assert_eq!(r.error_code, 0, "v{v}");
            let member = r.member_id.to_string();
            let gen = r.generation_id;
            let sc = ctx(ApiKey::SyncGroup, v.min(5));
            let sync = SyncGroupRequest::default()
                .with_group_id(GroupId(str_bytes(&group)))
                .with_generation_id(gen)
                .with_member_id(str_bytes(&member))
                .with_assignments(vec![SyncGroupRequestAssignment::default()
                    .with_member_id(str_bytes(&member))
                    .with_assignment(bytes::Bytes::from_static(b"a"))]);
            let s = sync_group(&broker, &sc, sync).await;
            encodes(&sc, &s);
            assert_eq!(s.error_code, 0);
            // The static member restarts: same generation, no rebalance.
            if let Some(i) = &instance {
                let r2 = join_group(&broker, &c, join_req(&group, "", Some(i), v)).await;
                encodes(&c, &r2);
                assert_eq!((r2.error_code, r2.generation_id), (0, gen));
                // The old member id is fenced.
                let hc = ctx(ApiKey::Heartbeat, 3);
                let req = HeartbeatRequest::default()
                    .with_group_id(GroupId(str_bytes(&group)))
                    .with_generation_id(gen)
                    .with_member_id(str_bytes(&member))
                    .with_group_instance_id(Some(str_bytes(i)));
                let hb = heartbeat(&broker, &hc, req).await;
                assert_eq!(hb.error_code, E::FencedInstanceId.code());
            }
            let member = match &instance {
                Some(i) => broker
                    .groups
                    .describe(&group)
                    .unwrap()
                    .members
                    .iter()
                    .find(|m| m.instance_id.as_deref() == Some(i.as_str()))
                    .map(|m| m.member_id.clone())
                    .unwrap(),
                None => member,
            };
            for dv in versions(ApiKey::DescribeGroups) {
                let dc = ctx(ApiKey::DescribeGroups, dv);
                let req = DescribeGroupsRequest::default()
                    .with_groups(vec![GroupId(str_bytes(&group)), GroupId(str_bytes("nope"))])
                    .with_include_authorized_operations(dv >= 3);
                encodes(&dc, &describe_groups(&broker, &dc, req).await);
            }
            for hv in versions(ApiKey::Heartbeat) {
                let hc = ctx(ApiKey::Heartbeat, hv);
                let req = HeartbeatRequest::default()
                    .with_group_id(GroupId(str_bytes(&group)))
                    .with_generation_id(gen)
                    .with_member_id(str_bytes(&member));
                encodes(&hc, &heartbeat(&broker, &hc, req).await);
            }
            // v10 names the topic by id (KAFKA-14690), earlier versions by name.
            let tid = broker.topic("t").unwrap().id;
            for ov in versions(ApiKey::OffsetCommit) {
                let oc = ctx(ApiKey::OffsetCommit, ov);
                let req = OffsetCommitRequest::default()
                    .with_group_id(GroupId(str_bytes(&group)))
                    .with_generation_id_or_member_epoch(gen)
                    .with_member_id(str_bytes(&member))
                    .with_topics(vec![OffsetCommitRequestTopic::default()
                        .with_name(TopicName(str_bytes("t")))
                        .with_topic_id(tid)
                        .with_partitions(vec![
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(5),
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(9)
                                .with_committed_offset(5),
                        ])]);
                encodes(&oc, &offsets::commit(&broker, &oc, req).await);
            }
            for fv in versions(ApiKey::OffsetFetch) {
                let fc = ctx(ApiKey::OffsetFetch, fv);
                let req = if fv >= 8 {
                    OffsetFetchRequest::default().with_groups(vec![
                        OffsetFetchRequestGroup::default()
                            .with_group_id(GroupId(str_bytes(&group)))
                            .with_topics(None),
                        OffsetFetchRequestGroup::default()
                            .with_group_id(GroupId(str_bytes(&group)))
                            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                                .with_name(TopicName(str_bytes("t")))
                                .with_topic_id(tid)
                                .with_partition_indexes(vec![0, 1])])),
                    ])
                } else {
                    OffsetFetchRequest::default()
                        .with_group_id(GroupId(str_bytes(&group)))
                        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                            .with_name(TopicName(str_bytes("t")))
                            .with_partition_indexes(vec![0, 1])]))
                };
                let resp = offsets::fetch(&broker, &fc, req).await;
                encodes(&fc, &resp);
                let committed = if fv >= 8 {
                    resp.groups[1].topics[0].partitions[0].committed_offset
                } else {
                    resp.topics[0].partitions[0].committed_offset
                };
                assert_eq!(committed, 5);
            }
            let lc = ctx(ApiKey::LeaveGroup, v.min(5));
            let req = LeaveGroupRequest::default()
                .with_group_id(GroupId(str_bytes(&group)))
                .with_member_id(if v < 3 {
                    str_bytes(&member)
                } else {
                    str_bytes("")
                })
                .with_members(if v >= 3 {
                    vec![
                        MemberIdentity::default().with_member_id(str_bytes(&member)),
                        MemberIdentity::default()
                            .with_member_id(str_bytes(""))
                            .with_group_instance_id(Some(str_bytes("unknown-instance"))),
                    ]
                } else {
                    vec![]
                });
            encodes(&lc, &leave_group(&broker, &lc, req).await);
        }
        for v in versions(ApiKey::ListGroups) {
            let c = ctx(ApiKey::ListGroups, v);
            let req = ListGroupsRequest::default().with_states_filter(if v >= 4 {
                vec![str_bytes("Empty")]
            } else {
                vec![]
            });
            let resp = list_groups(&broker, &c, req).await;
            encodes(&c, &resp);
            assert!(!resp.groups.is_empty());
        }
        for v in versions(ApiKey::OffsetDelete) {
            let c = ctx(ApiKey::OffsetDelete, v);
            let req = OffsetDeleteRequest::default()
                .with_group_id(GroupId(str_bytes("g1")))
                .with_topics(vec![OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(0)
                    ])]);
            encodes(&c, &offsets::delete(&broker, &c, req).await);
        }
        for v in versions(ApiKey::DeleteGroups) {
            let c = ctx(ApiKey::DeleteGroups, v);
            let req = DeleteGroupsRequest::default().with_groups_names(vec![
                GroupId(str_bytes(&format!("g{v}"))),
                GroupId(str_bytes("nope")),
            ]);
            let resp = delete_groups(&broker, &c, req).await;
            encodes(&c, &resp);
            assert_eq!(resp.results[1].error_code, E::GroupIdNotFound.code());
        }
        let b = broker.clone();
        tokio::task::spawn_blocking(move || b.shutdown())
            .await
            .unwrap();
    }
}
