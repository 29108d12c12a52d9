//! DescribeQuorum (key 55, v0-2, KIP-595/KIP-853): the metadata quorum's leader, epoch, high
//! watermark and each voter's and observer's progress, as `kafka-metadata-quorum.sh describe`
//! shows them. Any broker answers by asking the active controller (which alone knows the
//! followers' progress). AddRaftVoter (80) and RemoveRaftVoter (81), KIP-853: voters added and
//! removed at run time (`kafka-metadata-quorum add-controller` / `remove-controller`).

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::membership::CONTROLLER_TIMEOUT;
use crate::security::acl::op;
use frieda_meta::{ControllerReply, ControllerRequest, QuorumStatus, VoterState};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_raft_voter_request::Listener as AddRaftVoterListener;
use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, BrokerId, DescribeQuorumRequest,
    DescribeQuorumResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse,
};
use std::sync::Arc;
use std::time::Duration;

/// The metadata log's name in DescribeQuorum (KRaft's).
const METADATA_TOPIC: &str = "__cluster_metadata";

/// Errors: REQUEST_TIMED_OUT (7) without an active controller; UNKNOWN_TOPIC_OR_PARTITION (3)
/// for anything but `__cluster_metadata-0`. A single broker is its own one-voter quorum.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let v = ctx.api_version;
    // Kafka: DESCRIBE on the cluster.
    if !authorized_cluster(broker, ctx, op::DESCRIBE) {
        let resp = DescribeQuorumResponse::default().with_error_code(
            kafka_protocol::error::ResponseError::ClusterAuthorizationFailed.code(),
        );
        return if v >= 2 {
            resp.with_error_message(Some(str_bytes("Cluster authorization failed.")))
        } else {
            resp
        };
    }
    let status = match broker.cluster() {
        None => {
            let id = broker.config.node_id as u64;
            let (host, port) = broker.config.advertised();
            QuorumStatus {
                leader: Some(id),
                term: 0,
                leader_epoch: 0,
                high_watermark: 0,
                voters: vec![VoterState {
                    id,
                    log_end_offset: 0,
                    last_fetch_ms: crate::clock::now_ms(),
                    last_caught_up_ms: crate::clock::now_ms(),
                }],
                observers: Vec::new(),
                addresses: [(id, format!("{host}:{port}"))].into_iter().collect(),
            }
        }
        Some(node) => match node
            .controller(ControllerRequest::DescribeQuorum, CONTROLLER_TIMEOUT)
            .await
        {
            Ok(ControllerReply::Quorum(s)) => s,
            Ok(_) | Err(_) => {
                return DescribeQuorumResponse::default()
                    .with_error_code(ResponseError::RequestTimedOut.code())
            }
        },
    };
    let replica = |s: &VoterState| {
        let r = ReplicaState::default()
            .with_replica_id(BrokerId(s.id as i32))
            .with_log_end_offset(s.log_end_offset);
        if v >= 1 {
            r.with_last_fetch_timestamp(s.last_fetch_ms)
                .with_last_caught_up_timestamp(s.last_caught_up_ms)
        } else {
            r
        }
    };
    // KRaft's epoch names one leader; the Raft term may not (openraft's leader ids).
    let leader_epoch = i32::try_from(status.kraft_epoch()).unwrap_or(i32::MAX);
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let data = PartitionData::default().with_partition_index(p.partition_index);
                    if &*t.topic_name.0 != METADATA_TOPIC || p.partition_index != 0 {
                        return data.with_error_code(ResponseError::UnknownTopicOrPartition.code());
                    }
                    data.with_leader_id(BrokerId(status.leader.map_or(-1, |l| l as i32)))
                        .with_leader_epoch(leader_epoch)
                        .with_high_watermark(status.high_watermark)
                        .with_current_voters(status.voters.iter().map(replica).collect())
                        .with_observers(status.observers.iter().map(replica).collect())
                })
                .collect();
            TopicData::default()
                .with_topic_name(t.topic_name.clone())
                .with_partitions(partitions)
        })
        .collect();
    let mut resp = DescribeQuorumResponse::default().with_topics(topics);
    if v >= 2 {
        let nodes = status
            .voters
            .iter()
            .filter_map(|s| {
                let addr = status.addresses.get(&s.id)?;
                let (host, port) = addr.rsplit_once(':')?;
                Some(
                    Node::default()
                        .with_node_id(BrokerId(s.id as i32))
                        .with_listeners(vec![Listener::default()
                            .with_name(str_bytes("CONTROLLER"))
                            .with_host(str_bytes(host.trim_matches(|c| c == '[' || c == ']')))
                            .with_port(port.parse().unwrap_or(0))]),
                )
            })
            .collect();
        resp = resp.with_nodes(nodes);
    }
    resp
}

/// The `host:port` a voter's first listener names (AddRaftVoter), or why not.
fn voter_address(listeners: &[AddRaftVoterListener]) -> Result<String, String> {
    let l = listeners
        .first()
        .ok_or("AddRaftVoter names no listener for the new voter")?;
    let port = l.port;
    if l.host.is_empty() || port == 0 {
        return Err(format!("invalid listener {}:{}", l.host.as_str(), l.port));
    }
    Ok(if l.host.contains(':') {
        format!("[{}]:{port}", l.host.as_str())
    } else {
        format!("{}:{port}", l.host.as_str())
    })
}

/// How long a voter change may take: the request's `timeout_ms`, within 1 s..2 min.
fn voter_change_timeout(timeout_ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0).clamp(1_000, 120_000))
}

/// A voter change as AddRaftVoter and RemoveRaftVoter ask it: ALTER on the cluster (Kafka's
/// `ControllerApis`/`KafkaApis`), the request's cluster id, a voter id that is a node id
/// (else `bad_id`), then `change` of that node forwarded to the active controller and
/// committed within `timeout`. `api` names the request in the log line of a refusal.
///
/// Errors: the Kafka error and message to answer.
#[allow(clippy::too_many_arguments)]
async fn change_voter(
    broker: &Broker,
    ctx: &RequestContext,
    api: &str,
    cluster_id: Option<&str>,
    voter_id: i32,
    bad_id: ResponseError,
    change: impl FnOnce(u64) -> Result<ControllerRequest, String>,
    timeout: Duration,
) -> Result<(), (ResponseError, String)> {
    let result = async {
        if !authorized_cluster(broker, ctx, op::ALTER) {
            return Err((
                ResponseError::ClusterAuthorizationFailed,
                "Cluster authorization failed.".to_string(),
            ));
        }
        let Some(node) = broker.cluster() else {
            return Err((
                ResponseError::InvalidRequest,
                "this broker runs without a metadata quorum (no controller.quorum.voters)".into(),
            ));
        };
        if !broker.features.voter_changes_enabled() {
            // Kafka 4.4's AddVoterHandler / RemoveVoterHandler.
            let what = if api == "AddRaftVoter" {
                "adding"
            } else {
                "removing"
            };
            return Err((
                ResponseError::UnsupportedVersion,
                format!(
                    "Cluster doesn't support {what} voter because the kraft.version feature is 0"
                ),
            ));
        }
        let ours = node
            .image()
            .cluster_id
            .clone()
            .unwrap_or_else(|| broker.cluster_id.clone());
        if let Some(theirs) = cluster_id.filter(|c| *c != ours) {
            return Err((
                ResponseError::InconsistentClusterId,
                format!("cluster id {theirs} is not this cluster's ({ours})"),
            ));
        }
        let id = u64::try_from(voter_id)
            .map_err(|_| (bad_id, format!("invalid voter id {voter_id}")))?;
        let change = change(id).map_err(|e| (ResponseError::InvalidRequest, e))?;
        node.controller(change, timeout)
            .await
            .map(|_| ())
            .map_err(|e| (e.code, e.message))
    }
    .await;
    if let Err((code, message)) = &result {
        tracing::info!(voter = voter_id, error = ?code, %message, "{api} refused");
    }
    result
}

/// AddRaftVoter (key 80, v0-1, KIP-853; `kafka-metadata-quorum add-controller`): makes a node
/// that observes the metadata log (started with `controller.quorum.bootstrap.servers`) a voter
/// at the controller listener it names. Forwarded to the active controller, answered once the
/// new voter set is committed, also when v1 (Kafka 4.4) asks `AckWhenCommitted = false` (an
/// answer once the leader appended it): openraft reports a membership change only when it is
/// committed, so the answer comes later than Kafka's but says the same. The directory id is not checked (Frieda keys voters by node
/// id; DescribeQuorum reports the nil directory id).
///
/// Errors: CLUSTER_AUTHORIZATION_FAILED (31) without ALTER on the cluster;
/// UNSUPPORTED_VERSION (35) while `kraft.version` is 0;
/// INCONSISTENT_CLUSTER_ID (104); DUPLICATE_VOTER (126) when it already votes; INVALID_REQUEST
/// (42) without a usable listener; REQUEST_TIMED_OUT (7) when the change does not commit.
pub async fn add_raft_voter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AddRaftVoterRequest,
) -> AddRaftVoterResponse {
    let addr = voter_address(&req.listeners);
    let added = change_voter(
        broker,
        ctx,
        "AddRaftVoter",
        req.cluster_id.as_deref(),
        req.voter_id,
        ResponseError::InvalidRequest,
        |node| addr.map(|addr| ControllerRequest::AddVoter { node, addr }),
        voter_change_timeout(req.timeout_ms),
    )
    .await;
    match added {
        Ok(()) => AddRaftVoterResponse::default(),
        Err((code, message)) => AddRaftVoterResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(&message))),
    }
}

/// RemoveRaftVoter (key 81, v0, KIP-853; `kafka-metadata-quorum remove-controller`): the
/// voter stops voting and stays an observer. Forwarded to the active controller, answered
/// once the new voter set is committed. The directory id is not checked (see
/// [`add_raft_voter`]).
///
/// Errors: CLUSTER_AUTHORIZATION_FAILED (31); UNSUPPORTED_VERSION (35) while `kraft.version` is
/// 0; INCONSISTENT_CLUSTER_ID (104); VOTER_NOT_FOUND
/// (127) when it does not vote; INVALID_REQUEST (42) for the last voter; REQUEST_TIMED_OUT (7).
pub async fn remove_raft_voter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: RemoveRaftVoterRequest,
) -> RemoveRaftVoterResponse {
    let removed = change_voter(
        broker,
        ctx,
        "RemoveRaftVoter",
        req.cluster_id.as_deref(),
        req.voter_id,
        ResponseError::VoterNotFound,
        |node| Ok(ControllerRequest::RemoveVoter { node }),
        voter_change_timeout(30_000),
    )
    .await;
    match removed {
        Ok(()) => RemoveRaftVoterResponse::default(),
        Err((code, message)) => RemoveRaftVoterResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(&message))),
    }
}
