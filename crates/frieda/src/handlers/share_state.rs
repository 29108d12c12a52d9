//! The durable state of share-partitions (KIP-932): ReadShareGroupState (84, v0) and
//! WriteShareGroupState (85, v0-1), between a partition's leader and the share group's
//! coordinator, which keeps the state in `__consumer_offsets` next to the group
//! ([`crate::coordinator::group::GroupCoordinator::write_share_state`]). Kafka sends these to a
//! share coordinator that owns `__share_group_state`; Frieda's group coordinator plays that part,
//! so the requests go to the leader of the group's `__consumer_offsets` partition. Both are
//! inter-broker requests: CLUSTER_ACTION on the cluster, as Kafka checks them.
//!
//! [`read`] and [`write`] are the leader's side (Kafka's `Persister`): a local call when the
//! coordinator runs on this broker, else a request to it.

use super::{authorized_cluster, RequestContext};
use crate::broker::Broker;
use crate::coordinator::offsets::codec::ShareStateValue;
use crate::security::acl;
use crate::storage::topic::OFFSETS_TOPIC;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::read_share_group_state_request as read_req;
use kafka_protocol::messages::read_share_group_state_response as read_resp;
use kafka_protocol::messages::write_share_group_state_request as write_req;
use kafka_protocol::messages::write_share_group_state_response as write_resp;
use kafka_protocol::messages::{
    ReadShareGroupStateRequest, ReadShareGroupStateResponse, WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How long a leader waits for the coordinator.
const PERSIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the coordinator of `group` runs: `None` here, `Some(id)` on broker `id`.
///
/// Errors: COORDINATOR_NOT_AVAILABLE (15) when the offsets topic or its leader is unknown.
fn coordinator_of(broker: &Broker, group: &str) -> Result<Option<i32>, E> {
    match broker.groups.for_group(group) {
        Ok(_) => return Ok(None),
        Err(E::NotCoordinator) => {}
        Err(e) => return Err(e),
    }
    let node = broker.cluster().ok_or(E::CoordinatorNotAvailable)?;
    let index = broker.groups.partition_for(group);
    let leader = node
        .image()
        .partition(OFFSETS_TOPIC, index)
        .map(|p| p.leader)
        .filter(|l| *l >= 0 && *l != node.me)
        .ok_or(E::CoordinatorNotAvailable)?;
    Ok(Some(leader))
}

fn io_error(e: std::io::Error) -> E {
    tracing::debug!(error = %e, "share state request to the group coordinator failed");
    E::CoordinatorNotAvailable
}

/// Attempts of a read or write while the coordinator is moving (Kafka's persister makes 5).
const ATTEMPTS: u32 = 5;

/// The wait before the second attempt, doubled before each later one (100, 200, 400, 800 ms).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Whether `e` says the coordinator is moving or loading (another attempt may find it): Kafka's
/// `PersisterStateManager` retries these too.
fn retriable(e: E) -> bool {
    matches!(
        e,
        E::CoordinatorNotAvailable | E::NotCoordinator | E::CoordinatorLoadInProgress
    )
}

/// Runs `attempt` up to [`ATTEMPTS`] times while it fails with a [`retriable`] error, backing
/// off from [`FIRST_BACKOFF`]; the last error otherwise.
async fn with_retries<T, F, Fut>(what: &str, group: &str, mut attempt: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(e) if retriable(e) && tries < ATTEMPTS => {
                tracing::debug!(group, error = ?e, tries, what, "share state: the coordinator is moving; trying again");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
                tries += 1;
            }
            r => return r,
        }
    }
}

/// Reads the durable state of `group`'s share-partition (`None`: none yet), trying again
/// while the coordinator moves ([`with_retries`]).
///
/// Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), FENCED_LEADER_EPOCH (74).
pub async fn read(
    broker: &Broker,
    group: &str,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
) -> Result<Option<ShareStateValue>, E> {
    with_retries("read", group, || {
        read_once(broker, group, topic_id, partition, leader_epoch)
    })
    .await
}

/// Writes the durable state of `group`'s share-partition; resolves once it is stored. Tries
/// again while the coordinator moves ([`with_retries`]).
///
/// Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), FENCED_STATE_EPOCH (124),
/// FENCED_LEADER_EPOCH (74).
pub async fn write(
    broker: &Broker,
    group: &str,
    topic_id: Uuid,
    partition: i32,
    value: ShareStateValue,
) -> Result<(), E> {
    with_retries("write", group, || {
        write_once(broker, group, topic_id, partition, &value)
    })
    .await
}

/// One [`read`] attempt.
async fn read_once(
    broker: &Broker,
    group: &str,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
) -> Result<Option<ShareStateValue>, E> {
    let Some(to) = coordinator_of(broker, group)? else {
        return broker
            .groups
            .for_group(group)?
            .read_share_state(group, topic_id, partition, leader_epoch)
            .await;
    };
    let node = broker.cluster().ok_or(E::CoordinatorNotAvailable)?;
    let req = ReadShareGroupStateRequest::default()
        .with_group_id(super::str_bytes(group))
        .with_topics(vec![read_req::ReadStateData::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![read_req::PartitionData::default()
                .with_partition(partition)
                .with_leader_epoch(leader_epoch)])]);
    let resp = node
        .clients
        .call(to, 0, &req, PERSIST_TIMEOUT)
        .await
        .map_err(io_error)?;
    let p = resp
        .results
        .iter()
        .flat_map(|r| r.partitions.iter())
        .find(|p| p.partition == partition)
        .ok_or(E::CoordinatorNotAvailable)?;
    if p.error_code == E::GroupIdNotFound.code() {
        return Ok(None);
    }
    if p.error_code != 0 {
        return Err(E::try_from_code(p.error_code).unwrap_or(E::UnknownServerError));
    }
    if p.state_epoch < 0 {
        return Ok(None);
    }
    Ok(Some(ShareStateValue {
        state_epoch: p.state_epoch,
        leader_epoch,
        start_offset: p.start_offset,
        batches: p
            .state_batches
            .iter()
            .map(|b| {
                (
                    b.first_offset,
                    b.last_offset,
                    b.delivery_state,
                    b.delivery_count,
                )
            })
            .collect(),
    }))
}

/// One [`write`] attempt.
async fn write_once(
    broker: &Broker,
    group: &str,
    topic_id: Uuid,
    partition: i32,
    value: &ShareStateValue,
) -> Result<(), E> {
    let Some(to) = coordinator_of(broker, group)? else {
        let c = broker.groups.for_group(group)?;
        return c
            .write_share_state(group, topic_id, partition, value.clone())
            .await;
    };
    let node = broker.cluster().ok_or(E::CoordinatorNotAvailable)?;
    let req = WriteShareGroupStateRequest::default()
        .with_group_id(super::str_bytes(group))
        .with_topics(vec![write_req::WriteStateData::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![write_req::PartitionData::default()
                .with_partition(partition)
                .with_state_epoch(value.state_epoch)
                .with_leader_epoch(value.leader_epoch)
                .with_start_offset(value.start_offset)
                .with_state_batches(
                    value
                        .batches
                        .iter()
                        .map(|(f, l, s, c)| {
                            write_req::StateBatch::default()
                                .with_first_offset(*f)
                                .with_last_offset(*l)
                                .with_delivery_state(*s)
                                .with_delivery_count(*c)
                        })
                        .collect(),
                )])]);
    let resp = node
        .clients
        .call(to, 0, &req, PERSIST_TIMEOUT)
        .await
        .map_err(io_error)?;
    let code = resp
        .results
        .iter()
        .flat_map(|r| r.partitions.iter())
        .find(|p| p.partition == partition)
        .map(|p| p.error_code)
        .ok_or(E::CoordinatorNotAvailable)?;
    match code {
        0 => Ok(()),
        c => Err(E::try_from_code(c).unwrap_or(E::UnknownServerError)),
    }
}

/// ReadShareGroupState (84): the stored state of each partition asked for; a partition without
/// state answers state epoch -1 and start offset -1 (the leader starts it itself).
pub async fn handle_read(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ReadShareGroupStateRequest,
) -> ReadShareGroupStateResponse {
    let allowed = authorized_cluster(broker, ctx, acl::op::CLUSTER_ACTION);
    let group = req.group_id.to_string();
    let mut results = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let out = read_resp::PartitionResult::default()
                .with_partition(p.partition)
                .with_state_epoch(-1)
                .with_start_offset(-1);
            if !allowed {
                partitions.push(out.with_error_code(E::ClusterAuthorizationFailed.code()));
                continue;
            }
            let result = match broker.groups.for_group(&group) {
                Ok(c) => {
                    c.read_share_state(&group, t.topic_id, p.partition, p.leader_epoch)
                        .await
                }
                Err(e) => Err(e),
            };
            partitions.push(match result {
                Ok(None) => out,
                Ok(Some(v)) => out
                    .with_state_epoch(v.state_epoch)
                    .with_start_offset(v.start_offset)
                    .with_state_batches(
                        v.batches
                            .iter()
                            .map(|(f, l, s, c)| {
                                read_resp::StateBatch::default()
                                    .with_first_offset(*f)
                                    .with_last_offset(*l)
                                    .with_delivery_state(*s)
                                    .with_delivery_count(*c)
                            })
                            .collect(),
                    ),
                Err(e) => out.with_error_code(e.code()),
            });
        }
        results.push(
            read_resp::ReadStateResult::default()
                .with_topic_id(t.topic_id)
                .with_partitions(partitions),
        );
    }
    ReadShareGroupStateResponse::default().with_results(results)
}

/// WriteShareGroupState (85): stores each partition's state, answered once stored.
pub async fn handle_write(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: WriteShareGroupStateRequest,
) -> WriteShareGroupStateResponse {
    let allowed = authorized_cluster(broker, ctx, acl::op::CLUSTER_ACTION);
    let group = req.group_id.to_string();
    let mut results = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let out = write_resp::PartitionResult::default().with_partition(p.partition);
            if !allowed {
                partitions.push(out.with_error_code(E::ClusterAuthorizationFailed.code()));
                continue;
            }
            let value = ShareStateValue {
                state_epoch: p.state_epoch,
                leader_epoch: p.leader_epoch,
                start_offset: p.start_offset,
                batches: p
                    .state_batches
                    .iter()
                    .map(|b| {
                        (
                            b.first_offset,
                            b.last_offset,
                            b.delivery_state,
                            b.delivery_count,
                        )
                    })
                    .collect(),
            };
            let result = match broker.groups.for_group(&group) {
                Ok(c) => {
                    c.write_share_state(&group, t.topic_id, p.partition, value)
                        .await
                }
                Err(e) => Err(e),
            };
            partitions.push(match result {
                Ok(()) => out,
                Err(e) => out.with_error_code(e.code()),
            });
        }
        results.push(
            write_resp::WriteStateResult::default()
                .with_topic_id(t.topic_id)
                .with_partitions(partitions),
        );
    }
    WriteShareGroupStateResponse::default().with_results(results)
}
