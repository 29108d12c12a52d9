//! Consumer group APIs of the classic protocol: FindCoordinator (10), JoinGroup (11),
//! Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16),
//! DeleteGroups (42). The state lives in [`crate::coordinator::group`]; these functions only
//! translate requests and responses, setting version-specific fields only for versions that
//! have them (kafka-protocol refuses to encode others).

use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::group::state::JoinRequest;
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

/// What FindCoordinator answers for one key: this broker for groups; transactions are not
/// implemented (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as InitProducerId answers, so clients
/// fail fast instead of retrying); other key types are INVALID_REQUEST.
fn coordinator_for(key_type: i8) -> Result<(), (E, &'static str)> {
    match key_type {
        0 => Ok(()),
        1 => Err((
            E::TransactionalIdAuthorizationFailed,
            "transactions are not supported by this broker",
        )),
        _ => Err((E::InvalidRequest, "unsupported coordinator key type")),
    }
}

/// FindCoordinator v0-6 (batched keys from v4).
pub async fn find_coordinator(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let (host, port) = broker.config.advertised();
    let node = BrokerId(broker.config.node_id);
    let v = ctx.api_version;
    if v >= 4 {
        let coordinators = req
            .coordinator_keys
            .iter()
            .map(|key| {
                let c = Coordinator::default().with_key(key.clone());
                match coordinator_for(req.key_type) {
                    Ok(()) => c
                        .with_node_id(node)
                        .with_host(str_bytes(&host))
                        .with_port(port),
                    Err((e, msg)) => c
                        .with_error_code(e.code())
                        .with_error_message(Some(str_bytes(msg)))
                        .with_node_id(BrokerId(-1))
                        .with_port(-1),
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let key_type = if v >= 1 { req.key_type } else { 0 };
    let resp = FindCoordinatorResponse::default();
    match coordinator_for(key_type) {
        Ok(()) => resp
            .with_node_id(node)
            .with_host(str_bytes(&host))
            .with_port(port),
        Err((e, msg)) => {
            let r = resp
                .with_error_code(e.code())
                .with_node_id(BrokerId(-1))
                .with_port(-1);
            if v >= 1 {
                r.with_error_message(Some(str_bytes(msg)))
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
    let r = broker.groups.join(&req.group_id.0, join).await;
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
    _ctx: &RequestContext,
    req: HeartbeatRequest,
) -> HeartbeatResponse {
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

/// ListGroups v0-5 (state filter from v4, type filter from v5: every group here is "classic").
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
    let types_ok = v < 5
        || req.types_filter.is_empty()
        || req
            .types_filter
            .iter()
            .any(|t| t.eq_ignore_ascii_case("classic"));
    let groups = if types_ok {
        broker.groups.list(&states)
    } else {
        vec![]
    };
    let listed = groups
        .into_iter()
        .map(|g| {
            let mut l = ListedGroup::default()
                .with_group_id(GroupId(str_bytes(&g.group_id)))
                .with_protocol_type(str_bytes(&g.protocol_type));
            if v >= 4 {
                l = l.with_group_state(str_bytes(g.state.name()));
            }
            if v >= 5 {
                l = l.with_group_type(str_bytes("classic"));
            }
            l
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}

/// Operations a group allows, as DescribeGroups v3+ reports them when asked (no ACLs here:
/// READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);

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
            let d = broker.groups.describe(&id.0);
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
                g = g.with_authorized_operations(GROUP_OPERATIONS);
            }
            g
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// DeleteGroups v0-2: only empty groups (NON_EMPTY_GROUP otherwise); removes their offsets.
pub async fn delete_groups(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    req: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &req.groups_names {
        let e = broker.groups.delete_group(&id.0).await.err();
        results.push(
            DeletableGroupResult::default()
                .with_group_id(id.clone())
                .with_error_code(code(e)),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
