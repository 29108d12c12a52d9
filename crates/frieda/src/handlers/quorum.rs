//! DescribeQuorum (key 55, v0-2, KIP-595/KIP-853): the metadata quorum's leader, epoch, high
//! watermark and each voter's and observer's progress, as `kafka-metadata-quorum.sh describe`
//! shows them. Any broker answers by asking the active controller (which alone knows the
//! followers' progress).

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::membership::CONTROLLER_TIMEOUT;
use crate::security::acl::op;
use frieda_meta::{ControllerReply, ControllerRequest, QuorumStatus, VoterState};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};
use std::sync::Arc;

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
                high_watermark: 0,
                voters: vec![VoterState {
                    id,
                    log_end_offset: 0,
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
            r.with_last_fetch_timestamp(s.last_caught_up_ms)
                .with_last_caught_up_timestamp(s.last_caught_up_ms)
        } else {
            r
        }
    };
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
                        .with_leader_epoch(status.term as i32)
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
