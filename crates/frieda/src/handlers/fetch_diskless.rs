//! Fetch of diskless partitions (issue 60; docs/diskless.md, "The read path"): the topics of a
//! consumer's Fetch that are diskless are taken out of the request and answered from the batch
//! coordinator (loaded here or on another broker) and the bucket
//! ([`crate::diskless::driver::read`]). A fetch of only diskless partitions that finds fewer
//! than `min_bytes` waits until `max_wait_ms` for the coordinator to change
//! ([`crate::diskless::driver::watch`]: loaded here, or long-polled on its broker), then looks
//! again; while no coordinator serves, every [`POLL`].

use super::{authorized, RequestContext};
use crate::broker::Broker;
use crate::diskless::coordinator::DisklessPartition;
use crate::diskless::driver::route::{not_served, CoordinatorRef};
use crate::diskless::driver::{read, watch, Diskless};
use crate::security::acl::{op, resource};
use crate::storage::topic::Topic;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::ProducerId;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How often a waiting diskless fetch looks again while no coordinator serves.
const POLL: Duration = Duration::from_millis(25);

/// Takes the diskless topics out of `topics` (a consumer's fetch only: followers never fetch
/// them); `by_id`: the request names topics by id.
pub(super) fn take_diskless(
    broker: &Broker,
    topics: &mut Vec<FetchTopic>,
    by_id: bool,
) -> Vec<FetchTopic> {
    let defaults = broker.topic_defaults();
    let is_diskless = |ft: &FetchTopic| {
        broker
            .find_topic(by_id, ft.topic.0.as_str(), &ft.topic_id)
            .is_ok_and(|t| t.configs.read().is_diskless(&defaults))
    };
    if !topics.iter().any(is_diskless) {
        return Vec::new();
    }
    let (diskless, rest): (Vec<FetchTopic>, Vec<FetchTopic>) =
        std::mem::take(topics).into_iter().partition(is_diskless);
    *topics = rest;
    diskless
}

/// How a Fetch reads its diskless partitions.
pub(super) struct FetchSpec {
    /// Topics named by id (Fetch v13+).
    pub by_id: bool,
    /// The response's byte budget (bytes).
    pub response_max: usize,
    /// Bytes to wait for (with `wait_until`).
    pub min_bytes: usize,
    /// A fetch of only diskless partitions waits until then for `min_bytes`.
    pub wait_until: Option<Instant>,
    /// `isolation_level` 1 (KIP-98): only below the last stable offset, with the aborted
    /// transactions.
    pub read_committed: bool,
}

/// Reads every partition of `topics` once; `spec.wait_until` (a fetch of only these) reads
/// again until `spec.min_bytes` are found or the deadline passes.
pub(super) async fn fetch(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    topics: &[FetchTopic],
    spec: FetchSpec,
) -> Vec<FetchableTopicResponse> {
    loop {
        // subscribed before the read: a change after it wakes the wait below
        let changes = match (spec.wait_until, broker.diskless()) {
            (Some(_), Some(d)) => watch::changes(d),
            _ => None,
        };
        let (out, bytes) = read_once(broker, ctx, topics, &spec).await;
        match spec.wait_until {
            Some(deadline) if bytes < spec.min_bytes.max(1) && Instant::now() + POLL < deadline => {
                match changes {
                    Some(mut changes) => {
                        let waited = tokio::time::timeout_at(deadline, changes.changed()).await;
                        if waited.is_err() {
                            // nothing changed at the coordinator: what was read is the answer
                            return out;
                        }
                    }
                    None => tokio::time::sleep(POLL).await,
                }
            }
            _ => return out,
        }
    }
}

async fn read_once(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    topics: &[FetchTopic],
    spec: &FetchSpec,
) -> (Vec<FetchableTopicResponse>, usize) {
    let (by_id, response_max, read_committed) =
        (spec.by_id, spec.response_max, spec.read_committed);
    let mut used = 0usize;
    let mut out = Vec::with_capacity(topics.len());
    for ft in topics {
        let topic = broker.find_topic(by_id, ft.topic.0.as_str(), &ft.topic_id);
        let topic = match topic {
            Ok(t) if !authorized(broker, ctx, op::READ, resource::TOPIC, &t.name) => {
                Err(ResponseError::TopicAuthorizationFailed)
            }
            other => other,
        };
        let mut resp = FetchableTopicResponse::default()
            .with_topic(ft.topic.clone())
            .with_topic_id(ft.topic_id);
        for fp in &ft.partitions {
            let mut pd = PartitionData::default()
                .with_partition_index(fp.partition)
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1)
                .with_aborted_transactions(Some(Vec::new()))
                .with_records(Some(Bytes::new()));
            let result = match &topic {
                Err(e) => Err(*e),
                Ok(t) => {
                    let budget = (fp.partition_max_bytes.max(0) as usize)
                        .min(response_max.saturating_sub(used));
                    let at = (fp.partition, fp.fetch_offset);
                    read_partition(broker, t, at, budget.max(1), read_committed).await
                }
            };
            pd = match result {
                Ok(r) => {
                    used += r.records.len();
                    let aborted = read_committed.then(|| {
                        r.aborted
                            .iter()
                            .map(|a| {
                                AbortedTransaction::default()
                                    .with_producer_id(ProducerId(a.producer_id))
                                    .with_first_offset(a.first_offset)
                            })
                            .collect()
                    });
                    let pd = pd
                        .with_high_watermark(r.high_watermark)
                        .with_last_stable_offset(r.last_stable_offset)
                        .with_aborted_transactions(aborted)
                        .with_records(Some(r.records));
                    if ctx.api_version >= 5 {
                        pd.with_log_start_offset(r.log_start)
                    } else {
                        pd
                    }
                }
                Err(e) => pd.with_error_code(e.code()),
            };
            resp.partitions.push(pd);
        }
        out.push(resp);
    }
    (out, used)
}

/// Partition `index` of diskless topic `topic`, on a broker with the diskless service.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) for an index the topic lacks; NOT_LEADER_OR_FOLLOWER
/// (6) on a broker without the service (no bucket configured).
pub(super) fn diskless_partition(
    broker: &Broker,
    topic: &Topic,
    index: i32,
) -> Result<(DisklessPartition, Arc<Diskless>), ResponseError> {
    if index < 0 || index >= topic.partition_count() {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    let partition = DisklessPartition {
        topic_id: topic.id,
        partition: index,
    };
    let diskless = broker
        .diskless()
        .ok_or(ResponseError::NotLeaderOrFollower)?;
    Ok((partition, diskless.clone()))
}

/// What a handler needs to serve partition `index` of diskless topic `topic` on this broker
/// (any broker serves every diskless partition): the partition, the service and the
/// coordinator that serves it, here or on another broker. Shared by the handlers of Fetch,
/// ListOffsets, OffsetsForLeaderEpoch and DeleteRecords.
///
/// Errors: as [`diskless_partition`]; NOT_LEADER_OR_FOLLOWER (6) while no coordinator serves
/// (its partition has no leader, or this broker leads it and is loading it).
pub(super) fn diskless_host(
    broker: &Broker,
    topic: &Topic,
    index: i32,
) -> Result<(DisklessPartition, Arc<Diskless>, CoordinatorRef), ResponseError> {
    let (partition, diskless) = diskless_partition(broker, topic, index)?;
    let host = diskless.coordinator(partition).map_err(not_served)?;
    Ok((partition, diskless, host))
}

/// One partition's read: empty at offset 0 of a partition nothing was committed to yet.
async fn read_partition(
    broker: &Broker,
    topic: &Topic,
    (index, offset): (i32, i64),
    max_bytes: usize,
    read_committed: bool,
) -> Result<read::Read, ResponseError> {
    let (partition, diskless, host) = diskless_host(broker, topic, index)?;
    let read = read::read(
        &host,
        &diskless.objects,
        partition,
        offset,
        max_bytes,
        read_committed,
    );
    match read.await {
        Err(ResponseError::UnknownTopicOrPartition) if offset == 0 => Ok(read::Read {
            records: Bytes::new(),
            high_watermark: 0,
            log_start: 0,
            last_stable_offset: 0,
            aborted: Vec::new(),
        }),
        Err(ResponseError::UnknownTopicOrPartition) => Err(ResponseError::OffsetOutOfRange),
        other => other,
    }
}
