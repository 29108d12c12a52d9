//! Partition leadership and placement: ElectLeaders (key 43, v0-2, KIP-460),
//! AlterPartitionReassignments (key 45, v0-1, KIP-455) and ListPartitionReassignments (key 46,
//! v0), as `kafka-leader-election.sh` and `kafka-reassign-partitions.sh` use them. Every change
//! goes through the active controller; the answer comes once it is committed.
//!
//! On a single broker every partition already has its only replica as leader: elections are
//! ELECTION_NOT_NEEDED (84) and a reassignment may only name this broker.

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::membership::CONTROLLER_TIMEOUT;
use crate::security::acl::op;
use frieda_meta::{ControllerRequest, MetadataImage};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, TopicName,
};
use std::sync::Arc;

/// The partitions named, or every partition (`None`), as `(topic, [partitions])`.
fn named_or_all(
    broker: &Broker,
    image: Option<&MetadataImage>,
    wanted: Option<Vec<(String, Vec<i32>)>>,
) -> Vec<(String, Vec<i32>)> {
    match wanted {
        Some(w) => w,
        None => match image {
            Some(img) => img
                .topics
                .iter()
                .map(|(n, t)| (n.clone(), (0..t.partitions.len() as i32).collect()))
                .collect(),
            None => broker
                .topics()
                .iter()
                .map(|t| (t.name.to_string(), (0..t.partition_count()).collect()))
                .collect(),
        },
    }
}

/// ElectLeaders: `election_type` 0 makes each partition's preferred (first) replica its leader
/// when it is live and in sync, 1 (unclean) any live replica when the partition has no leader.
/// Per partition: ELECTION_NOT_NEEDED (84), PREFERRED_LEADER_NOT_AVAILABLE (80) /
/// ELIGIBLE_LEADERS_NOT_AVAILABLE (83), UNKNOWN_TOPIC_OR_PARTITION (3), REQUEST_TIMED_OUT (7)
/// without a controller. With every partition asked for (null), the ones needing no election
/// are left out of the answer, as Kafka does.
pub async fn elect_leaders(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let preferred = ctx.api_version < 1 || req.election_type == 0;
    let all = req.topic_partitions.is_none();
    let wanted = req.topic_partitions.map(|tps| {
        tps.into_iter()
            .map(|t| (t.topic.0.to_string(), t.partitions))
            .collect()
    });
    let image = broker.cluster().map(|n| n.image());
    let mut results = Vec::new();
    // Kafka: ALTER on the cluster (every partition CLUSTER_AUTHORIZATION_FAILED otherwise).
    let allowed = authorized_cluster(broker, ctx, op::ALTER);
    for (topic, partitions) in named_or_all(broker, image.as_deref(), wanted) {
        let mut out = Vec::new();
        for p in partitions {
            let outcome: Result<(), (ResponseError, String)> = match broker.cluster() {
                _ if !allowed => Err((
                    ResponseError::ClusterAuthorizationFailed,
                    "Cluster authorization failed.".into(),
                )),
                None => match broker.topic(&topic) {
                    Some(t) if p >= 0 && p < t.partition_count() => Err((
                        ResponseError::ElectionNotNeeded,
                        "Leader election not needed for topic partition.".into(),
                    )),
                    _ => Err((
                        ResponseError::UnknownTopicOrPartition,
                        format!("unknown partition {topic}-{p}"),
                    )),
                },
                Some(node) => {
                    let current = image.as_ref().and_then(|i| i.partition(&topic, p).cloned());
                    match current {
                        None => Err((
                            ResponseError::UnknownTopicOrPartition,
                            format!("unknown partition {topic}-{p}"),
                        )),
                        // Unclean elections only for partitions without a leader (KIP-460).
                        Some(s) if !preferred && s.leader != frieda_meta::NO_LEADER => Err((
                            ResponseError::ElectionNotNeeded,
                            "the partition has a leader".into(),
                        )),
                        Some(_) => node
                            .controller(
                                ControllerRequest::ElectLeader {
                                    topic: topic.clone(),
                                    partition: p,
                                    preferred,
                                },
                                CONTROLLER_TIMEOUT,
                            )
                            .await
                            .map(|_| ())
                            .map_err(|e| {
                                let code = match e.code {
                                    ResponseError::EligibleLeadersNotAvailable if preferred => {
                                        ResponseError::PreferredLeaderNotAvailable
                                    }
                                    c => c,
                                };
                                (code, e.message)
                            }),
                    }
                }
            };
            match outcome {
                Err((ResponseError::ElectionNotNeeded, _)) if all => {}
                Ok(()) => out.push(PartitionResult::default().with_partition_id(p)),
                Err((code, message)) => out.push(
                    PartitionResult::default()
                        .with_partition_id(p)
                        .with_error_code(code.code())
                        .with_error_message(Some(str_bytes(&message))),
                ),
            }
        }
        if !out.is_empty() || !all {
            results.push(
                ReplicaElectionResult::default()
                    .with_topic(TopicName(str_bytes(&topic)))
                    .with_partition_result(out),
            );
        }
    }
    let resp = ElectLeadersResponse::default().with_replica_election_results(results);
    if !allowed && ctx.api_version >= 1 {
        return resp.with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    resp
}

/// AlterPartitionReassignments: per partition, a new replica list (copied to the new replicas
/// first; the old ones leave once the new ones are in sync) or null to cancel. Per partition:
/// UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_REPLICA_ASSIGNMENT (39), NO_REASSIGNMENT_IN_PROGRESS
/// (85), INVALID_REPLICATION_FACTOR (38) for a changed replica count when v1's
/// `allow_replication_factor_change` is false (KIP-1122), REQUEST_TIMED_OUT (7).
pub async fn alter_reassignments(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    if !authorized_cluster(broker, ctx, op::ALTER) {
        return AlterPartitionReassignmentsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes("Cluster authorization failed.")));
    }
    let mut responses = Vec::new();
    // v0 has no flag: a change of replication factor is allowed.
    let allow_rf_change = ctx.api_version < 1 || req.allow_replication_factor_change;
    for t in req.topics {
        let topic = t.name.0.to_string();
        let mut out = Vec::new();
        for p in t.partitions {
            let target: Option<Vec<i32>> =
                p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect());
            let outcome: Result<(), (ResponseError, String)> = match broker.cluster() {
                None => match broker.topic(&topic) {
                    Some(tp)
                        if p.partition_index >= 0 && p.partition_index < tp.partition_count() =>
                    {
                        match &target {
                            Some(r) if r.as_slice() == [broker.config.node_id] => Ok(()),
                            Some(_) => Err((
                                ResponseError::InvalidReplicaAssignment,
                                format!("only broker {} exists", broker.config.node_id),
                            )),
                            None => Err((
                                ResponseError::NoReassignmentInProgress,
                                "no reassignment in progress".into(),
                            )),
                        }
                    }
                    _ => Err((
                        ResponseError::UnknownTopicOrPartition,
                        format!("unknown partition {topic}-{}", p.partition_index),
                    )),
                },
                Some(node)
                    if !allow_rf_change
                        && target.as_ref().is_some_and(|t| {
                            node.image()
                                .partition(&topic, p.partition_index)
                                .is_some_and(|s| {
                                    let original =
                                        s.replicas.len() - s.adding.len().min(s.replicas.len());
                                    t.len() != original
                                })
                        }) =>
                {
                    Err((
                        ResponseError::InvalidReplicationFactor,
                        "the reassignment would change the replication factor".into(),
                    ))
                }
                Some(node) => node
                    .controller(
                        ControllerRequest::Reassign {
                            topic: topic.clone(),
                            partition: p.partition_index,
                            target,
                        },
                        CONTROLLER_TIMEOUT,
                    )
                    .await
                    .map(|_| ())
                    .map_err(|e| (e.code, e.message)),
            };
            let r =
                ReassignablePartitionResponse::default().with_partition_index(p.partition_index);
            out.push(match outcome {
                Ok(()) => r,
                Err((code, message)) => r
                    .with_error_code(code.code())
                    .with_error_message(Some(str_bytes(&message))),
            });
        }
        responses.push(
            ReassignableTopicResponse::default()
                .with_name(t.name)
                .with_partitions(out),
        );
    }
    let resp = AlterPartitionReassignmentsResponse::default().with_responses(responses);
    if ctx.api_version >= 1 {
        resp.with_allow_replication_factor_change(req.allow_replication_factor_change)
    } else {
        resp
    }
}

/// ListPartitionReassignments: the partitions (of those named, or all) being reassigned, with
/// their replicas and the ones being added and removed.
pub async fn list_reassignments(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    if !authorized_cluster(broker, ctx, op::DESCRIBE) {
        return ListPartitionReassignmentsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes("Cluster authorization failed.")));
    }
    let Some(node) = broker.cluster() else {
        return ListPartitionReassignmentsResponse::default();
    };
    let image = node.image();
    let wanted = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes))
            .collect()
    });
    let ids = |v: &[i32]| v.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
    let mut topics = Vec::new();
    for (topic, partitions) in named_or_all(broker, Some(&image), wanted) {
        let ongoing: Vec<OngoingPartitionReassignment> = partitions
            .into_iter()
            .filter_map(|p| {
                let s = image.partition(&topic, p)?;
                (!s.adding.is_empty() || !s.removing.is_empty()).then(|| {
                    OngoingPartitionReassignment::default()
                        .with_partition_index(p)
                        .with_replicas(ids(&s.replicas))
                        .with_adding_replicas(ids(&s.adding))
                        .with_removing_replicas(ids(&s.removing))
                })
            })
            .collect();
        if !ongoing.is_empty() {
            topics.push(
                OngoingTopicReassignment::default()
                    .with_name(TopicName(str_bytes(&topic)))
                    .with_partitions(ongoing),
            );
        }
    }
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}
