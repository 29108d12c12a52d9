//! Fetch (key 1, v4-18): stored batches returned as they are, from the in-memory tail cache
//! when possible, else read from the segment files on a blocking thread. Long polling: when
//! fewer than `min_bytes` are available, the request waits (up to `max_wait_ms`) for any of its
//! partitions to receive data; one wake-up per partition append round releases every waiting
//! fetch (DESIGN.md, batched confirmation).
//!
//! Fetch from follower (KIP-392): a consumer's fetch v11+ may read a follower, up to that
//! follower's high watermark; with `replica.selector.class` set to Kafka's rack-aware selector a
//! leader answers a consumer with `client.rack` with the in-sync follower of its rack as
//! `preferred_read_replica`, and no records (see [`crate::replication::read_replica`]).
//!
//! Fetch sessions (KIP-227) are not kept: every response carries session id 0, which clients
//! take as "no session" and keep sending full fetch requests.

use super::{authorized, authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::membership::{ClusterNode, LeaderHints};
use crate::quota::QuotaKind;
use crate::replication::fetch::fetch_completes;
use crate::replication::follower::EpochEnd;
use crate::replication::read_replica::{self, ReadCandidate, ReplicaSelector};
use crate::security::acl::{op, resource};
use crate::security::SecurityProtocol;
use crate::storage::backlog::ReadFor;
use crate::storage::partition::{Fetched, Partition};
use bytes::{Bytes, BytesMut};
use frieda_log::{AbortedTxn, FetchData, FileFetch, LogError};
use futures::future::select_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData,
};
use kafka_protocol::messages::{BrokerId, ProducerId};
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Fetch v12 is the first flexible version (KIP-482: compact bytes for `records`).
const FLEXIBLE_VERSION: i16 = 12;
/// Fetch v13 names topics by id (KIP-516).
const TOPIC_ID_VERSION: i16 = 13;
/// Longest wait honoured, ms, whatever the client asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;

struct Wanted {
    topic_index: usize,
    partition_index: i32,
    partition: Result<Arc<Partition>, ResponseError>,
    fetch_offset: i64,
    max_bytes: usize,
    /// A follower's fetch: reads up to the log end offset, not the high watermark.
    replica: bool,
    /// A consumer's fetch v11+ (KIP-392): followers serve it too, not only the leader.
    any_replica: bool,
    /// The leader epoch this broker led (or, for `any_replica`, followed) the partition in
    /// when it admitted the fetch: every read (a long poll reads again when woken) first checks
    /// it still does.
    admitted_epoch: i32,
    /// KIP-392: the follower this leader sends the consumer to; nothing is read then.
    preferred: Option<i32>,
    /// A follower's fetch: its log start offset (Fetch v5+), counted with its progress.
    follower_log_start: i64,
    /// A follower whose last fetched epoch diverges from this leader's log: where it ends here
    /// (answered without records; KIP-595).
    diverging: Option<EpochEnd>,
    /// `isolation_level` 1 (KIP-98): a consumer reads up to the last stable offset, and gets
    /// the aborted transactions of what it read.
    read_committed: bool,
}

/// Fetch v15 moved `replica_id` into `replica_state` (KIP-903).
const REPLICA_STATE_VERSION: i16 = 15;
/// Fetch v12 names a moved partition's current leader (KIP-320).
const CURRENT_LEADER_VERSION: i16 = 12;
/// Fetch v16 carries the leaders' endpoints for partitions that moved (KIP-951).
const NODE_ENDPOINTS_VERSION: i16 = 16;
/// Fetch v11 carries the consumer's rack and lets consumers read followers (KIP-392).
const RACK_ID_VERSION: i16 = 11;

/// KIP-951: partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH get their
/// current leader and epoch, and the response the leaders' endpoints.
fn point_to_leaders(
    node: &ClusterNode,
    listener: &str,
    topics: &mut [FetchableTopicResponse],
) -> Vec<NodeEndpoint> {
    let mut hints = LeaderHints::new(node, listener);
    for t in topics.iter_mut() {
        let Some(name) = hints.topic_name(&t.topic.0, t.topic_id) else {
            continue;
        };
        for p in t.partitions.iter_mut() {
            let moved = p.error_code == ResponseError::NotLeaderOrFollower.code()
                || p.error_code == ResponseError::FencedLeaderEpoch.code();
            if !moved {
                continue;
            }
            if let Some((leader, epoch)) = hints.leader(&name, p.partition_index) {
                p.current_leader = LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(leader))
                    .with_leader_epoch(epoch);
            }
        }
    }
    hints
        .endpoints()
        .iter()
        .map(|h| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(h.leader))
                .with_host(str_bytes(&h.host))
                .with_port(i32::from(h.port))
                .with_rack(h.rack.as_deref().map(str_bytes))
        })
        .collect()
}

/// Checks a fetch of `p` at `fetch_offset` before it is read: a follower's (`replica` >= 0)
/// is admitted by [`Partition::admit_follower_fetch`] (the leader in its epoch, the log online,
/// the offset held locally, then validated against the leader's log as Kafka's
/// `Partition.fetchRecords`: a diverging last fetched epoch is answered with where it ends,
/// `Ok(Some(_))`; the follower's progress is counted only after the read, see
/// [`count_follower_fetches`]); a consumer's must reach the leader, or for `any_replica`
/// (Fetch v11+, KIP-392) the leader or a follower. `leader_epoch` is the request's
/// `current_leader_epoch`.
///
/// Errors: NOT_LEADER_OR_FOLLOWER (6) when this broker does not lead the partition (for
/// `any_replica`: is offline for it), FENCED_LEADER_EPOCH (74) / UNKNOWN_LEADER_EPOCH (75) for
/// an older / newer epoch than this replica's; for a follower also KAFKA_STORAGE_ERROR (56)
/// for an offline log, OFFSET_MOVED_TO_TIERED_STORAGE (109) below the local log of a tiered
/// partition, OFFSET_OUT_OF_RANGE (1) for an offset outside the log.
fn admit(
    broker: &Broker,
    p: &Arc<Partition>,
    (replica, any_replica): (i32, bool),
    (fetch_offset, last_fetched_epoch): (i64, i32),
    leader_epoch: i32,
) -> Result<Option<EpochEnd>, ResponseError> {
    if replica >= 0 {
        return p.admit_follower_fetch(leader_epoch, fetch_offset, last_fetched_epoch);
    }
    if any_replica {
        p.repl.check_replica_read(leader_epoch)?;
    } else {
        p.repl.check_leader(leader_epoch)?;
    }
    if p.repl.is_replicated() && p.repl.is_leader_or_sole() {
        broker.check_lease()?;
    }
    Ok(None)
}

/// KIP-392: the follower a leader sends a consumer in `client_rack` reading `p` at
/// `fetch_offset` to, if `replica.selector.class` is the rack-aware selector and one fits (see
/// [`read_replica`]). Followers must be registered, unfenced and reachable on `listener`.
fn preferred_read_replica(
    broker: &Broker,
    listener: &str,
    p: &Partition,
    client_rack: &str,
    fetch_offset: i64,
) -> Option<i32> {
    if broker.config.replica_selector != ReplicaSelector::RackAware || client_rack.is_empty() {
        return None;
    }
    let node = broker.cluster()?;
    let followers = p.repl.read_candidates(fetch_offset, now_ms())?;
    let image = node.image();
    let candidates: Vec<ReadCandidate> = followers
        .into_iter()
        .filter_map(|(id, leo, since)| {
            let b = image.brokers.get(&id)?;
            if b.fenced || crate::membership::endpoint_on(b, listener).is_none() {
                return None;
            }
            Some(ReadCandidate {
                broker: id,
                rack: b.rack.clone(),
                log_end_offset: leo,
                since_caught_up_ms: since,
            })
        })
        .collect();
    let leader = ReadCandidate {
        broker: broker.config.node_id,
        rack: broker.config.rack.clone(),
        log_end_offset: p.reader().log_end_offset(),
        since_caught_up_ms: 0,
    };
    read_replica::select(
        broker.config.replica_selector,
        Some(client_rack),
        &leader,
        &candidates,
    )
}

/// Counts the followers' fetches that were read (Kafka's `updateFollowerFetchState`, after the
/// read): each one's progress may move the high watermark (waking consumers) or ask the
/// controller to add it to the ISR.
fn count_follower_fetches(
    broker: &Broker,
    replica: i32,
    wanted: &[Wanted],
    reads: &[PartitionRead],
) {
    let broker_epoch = broker
        .cluster()
        .and_then(|node| node.image().brokers.get(&replica).map(|b| b.epoch));
    for (w, r) in wanted.iter().zip(reads) {
        let (Ok(p), false, None) = (&w.partition, r.is_err(), w.diverging) else {
            continue;
        };
        let leo = p.reader().log_end_offset();
        let Ok((change, moved)) = p.repl.on_follower_fetch(
            replica,
            broker_epoch,
            w.fetch_offset,
            w.follower_log_start,
            // Counted only for the leader epoch it was admitted in: a read done under an
            // earlier leadership says nothing of the follower's progress in this one.
            w.admitted_epoch,
            leo,
            now_ms(),
        ) else {
            continue;
        };
        if moved {
            // Consumers waiting below the high watermark may read now.
            p.notify_data();
        }
        if let (Some(change), Some(node)) = (change, broker.cluster()) {
            crate::cluster::isr::alter(node, p, change);
        }
    }
}

/// Handles a fetch (a consumer's, or a follower's when `replica_id` >= 0). Per-partition errors:
/// UNKNOWN_TOPIC_OR_PARTITION (3) / UNKNOWN_TOPIC_ID (100), OFFSET_OUT_OF_RANGE (1) below the
/// log start offset or past the log end offset, the leadership errors of `admit`,
/// KAFKA_STORAGE_ERROR (56) if the segment cannot be read or the log went offline after a
/// failed fsync. The response holds at most `fetch.max.bytes` (broker setting) and the
/// request's `max_bytes`, whichever is smaller, except for a single larger first batch.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    mut req: FetchRequest,
) -> FetchResponse {
    let by_id = ctx.api_version >= TOPIC_ID_VERSION;
    let replica = replica_id(ctx, &req);
    // Diskless topics (issue 60) are read from the bucket, not from a local log.
    let diskless = if replica < 0 && broker.diskless().is_some() {
        super::fetch_diskless::take_diskless(broker, &mut req.topics, by_id)
    } else {
        Vec::new()
    };
    if diskless.is_empty() {
        return handle_local(broker, ctx, req).await;
    }
    let response_max = if req.max_bytes <= 0 {
        broker.config.fetch_max_bytes
    } else {
        (req.max_bytes as usize).min(broker.config.fetch_max_bytes)
    };
    let min_bytes = (req.min_bytes.max(0) as usize).min(response_max);
    let read_committed = req.isolation_level == 1;
    if req.topics.is_empty() {
        let max_wait = Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64);
        let deadline = Instant::now() + max_wait;
        let spec = super::fetch_diskless::FetchSpec {
            by_id,
            response_max,
            min_bytes,
            wait_until: Some(deadline),
            read_committed,
        };
        let mut topics = super::fetch_diskless::fetch(broker, ctx, &diskless, spec).await;
        if over_fetch_quota(broker, ctx, records_bytes(&topics)) {
            topics.clear();
        }
        return FetchResponse::default()
            .with_session_id(0)
            .with_responses(topics)
            .with_throttle_time_ms(ctx.throttle.get() as i32);
    }
    let mut resp = handle_local(broker, ctx, req).await;
    let spec = super::fetch_diskless::FetchSpec {
        by_id,
        response_max,
        min_bytes: 0,
        wait_until: None,
        read_committed,
    };
    let topics = super::fetch_diskless::fetch(broker, ctx, &diskless, spec).await;
    // The local part was charged (and answered no topic if it took the rate over); the
    // diskless part is charged on its own and left out when it would.
    if !resp.responses.is_empty() && !over_fetch_quota(broker, ctx, records_bytes(&topics)) {
        resp.responses.extend(topics);
    }
    resp.with_throttle_time_ms(ctx.throttle.get() as i32)
}

/// Charges a consumer's fetch of `bytes` to its `consumer_byte_rate` (KIP-13, KIP-219): a
/// fetch that takes the rate over the quota is to send nothing (`true`: its bytes are taken
/// back and `ctx.throttle` says how long to wait), as Kafka answers it.
fn over_fetch_quota(broker: &Broker, ctx: &RequestContext, bytes: usize) -> bool {
    let user = &ctx.session.principal.name;
    let client = ctx.client_id.as_deref().unwrap_or("");
    let now = std::time::Instant::now();
    let quotas = &broker.security.quotas;
    let throttle = quotas.record(QuotaKind::Fetch, user, client, bytes as f64, now);
    if throttle == 0 {
        return false;
    }
    quotas.unrecord(QuotaKind::Fetch, user, client, bytes, now);
    ctx.throttle.at_least(throttle);
    true
}

/// The bytes of records in diskless partitions' answers.
fn records_bytes(topics: &[FetchableTopicResponse]) -> usize {
    topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.records.as_ref().map_or(0, Bytes::len))
        .sum()
}

/// The fetching replica's id (-1: a consumer): in `replica_state` from v15 (KIP-903).
fn replica_id(ctx: &RequestContext, req: &FetchRequest) -> i32 {
    if ctx.api_version >= REPLICA_STATE_VERSION {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    }
}

/// Fetch of topics with local logs (every topic but the diskless ones).
async fn handle_local(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: FetchRequest,
) -> FetchResponse {
    let by_id = ctx.api_version >= TOPIC_ID_VERSION;
    let replica = replica_id(ctx, &req);
    // Kafka's `FetchParams.fetchOnlyFromLeader`: false for a consumer's fetch v11+.
    let any_replica = replica < 0 && ctx.api_version >= RACK_ID_VERSION;
    let client_rack = if any_replica {
        req.rack_id.as_str()
    } else {
        ""
    };
    let mut topics_out = Vec::with_capacity(req.topics.len());
    let mut wanted = Vec::new();
    // Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic.
    let follower_denied = replica >= 0 && !authorized_cluster(broker, ctx, op::CLUSTER_ACTION);
    for (ti, ft) in req.topics.iter().enumerate() {
        let topic = broker.find_topic(by_id, ft.topic.0.as_str(), &ft.topic_id);
        let denied = follower_denied
            || match &topic {
                Ok(t) => {
                    replica < 0 && !authorized(broker, ctx, op::READ, resource::TOPIC, &t.name)
                }
                Err(_) if !by_id => {
                    replica < 0
                        && !authorized(broker, ctx, op::READ, resource::TOPIC, ft.topic.0.as_str())
                }
                Err(_) => false,
            };
        let topic = if denied {
            Err(ResponseError::TopicAuthorizationFailed)
        } else {
            topic
        };
        topics_out.push(
            FetchableTopicResponse::default()
                .with_topic(ft.topic.clone())
                .with_topic_id(ft.topic_id),
        );
        for fp in &ft.partitions {
            let mut diverging = None;
            let mut admitted_epoch = -1;
            let mut preferred = None;
            // KIP-595's last fetched epoch (v12+; -1 when absent).
            let last_fetched_epoch = if ctx.api_version >= 12 {
                fp.last_fetched_epoch
            } else {
                -1
            };
            wanted.push(Wanted {
                topic_index: ti,
                partition_index: fp.partition,
                partition: topic
                    .as_ref()
                    .map_err(|e| *e)
                    .and_then(|t| t.replica(fp.partition))
                    .and_then(|p| {
                        admitted_epoch = p.repl.leader_epoch();
                        diverging = admit(
                            broker,
                            &p,
                            (replica, any_replica),
                            (fp.fetch_offset, last_fetched_epoch),
                            fp.current_leader_epoch,
                        )?;
                        if any_replica {
                            preferred = preferred_read_replica(
                                broker,
                                &ctx.session.listener,
                                &p,
                                client_rack,
                                fp.fetch_offset,
                            );
                        }
                        Ok(p)
                    }),
                fetch_offset: fp.fetch_offset,
                max_bytes: fp.partition_max_bytes.max(0) as usize,
                replica: replica >= 0,
                any_replica,
                admitted_epoch,
                preferred,
                follower_log_start: fp.log_start_offset,
                diverging,
                read_committed: replica < 0 && req.isolation_level == 1,
            });
        }
    }
    let max_wait = Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64);
    let deadline = Instant::now() + max_wait;
    // The broker's `fetch.max.bytes` caps what a fetch may ask for (and so its min_bytes), as
    // Kafka's KafkaApis does; one batch larger than it still goes out (KIP-74).
    let response_max = if req.max_bytes <= 0 {
        broker.config.fetch_max_bytes
    } else {
        (req.max_bytes as usize).min(broker.config.fetch_max_bytes)
    };
    let min_bytes = (req.min_bytes.max(0) as usize).min(response_max);

    let mut waited = Duration::ZERO;
    let mut counted = replica < 0;
    let results = loop {
        let live: Vec<Arc<Partition>> = wanted
            .iter()
            .filter_map(|w| w.partition.as_ref().ok().cloned())
            .collect();
        // Arm the wake-ups before looking, so an append between the read and the wait is seen.
        let mut waits: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> =
            live.iter().map(|p| Box::pin(p.data_arrived())).collect();
        for w in waits.iter_mut() {
            w.as_mut().enable();
        }
        let results = read_all(broker, &wanted, response_max, ctx).await;
        if !counted {
            // The first read counts (a long poll does not count again when it wakes).
            count_follower_fetches(broker, replica, &wanted, &results);
            counted = true;
        }
        let total: usize = results.iter().map(|r| r.bytes()).sum();
        // A diverging epoch or a preferred read replica (Kafka's `hasPreferredReadReplica`) is
        // answered at once.
        let answer_now = wanted
            .iter()
            .any(|w| w.diverging.is_some() || w.preferred.is_some());
        let any_error = results.iter().any(|r| r.is_err());
        if fetch_completes(total, min_bytes, any_error, Instant::now() >= deadline)
            || answer_now
            || waits.is_empty()
        {
            break results;
        }
        let waiting = ctx.timing.stopwatch();
        let woken = tokio::time::timeout_at(deadline, select_all(waits)).await;
        if let Some(t) = waiting {
            waited += t.elapsed();
        }
        if woken.is_err() {
            break read_all(broker, &wanted, response_max, ctx).await;
        }
    };
    ctx.timing.waited(waited);

    let fetched_bytes: usize = results.iter().map(PartitionRead::bytes).sum();
    for (w, r) in wanted.iter().zip(results) {
        let mut pd = PartitionData::default()
            .with_partition_index(w.partition_index)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_aborted_transactions(Some(Vec::new()))
            .with_preferred_read_replica(BrokerId(w.preferred.unwrap_or(-1)));
        if let Ok(p) = &w.partition {
            pd = pd
                .with_high_watermark(p.high_watermark())
                .with_last_stable_offset(p.last_stable_offset());
            if ctx.api_version >= 5 {
                pd = pd.with_log_start_offset(p.total_log_start_offset());
            }
            // read_committed: the aborted transactions of what was read (a remote read brings
            // its segment's own).
            let aborted = match (&r, w.read_committed) {
                (PartitionRead::Data(data), true) => Some(
                    p.reader()
                        .aborted_transactions(w.fetch_offset, data.next_offset),
                ),
                (PartitionRead::Files(files), true) => Some(
                    p.reader()
                        .aborted_transactions(w.fetch_offset, files.next_offset),
                ),
                (PartitionRead::Remote(_, aborted), true) => Some(aborted.clone()),
                _ => None,
            };
            if let Some(aborted) = aborted {
                let aborted = aborted
                    .iter()
                    .map(|a| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(a.producer_id))
                            .with_first_offset(a.first_offset)
                    })
                    .collect();
                pd = pd.with_aborted_transactions(Some(aborted));
            }
        }
        if let Some(end) = w.diverging {
            pd = pd.with_diverging_epoch(
                EpochEndOffset::default()
                    .with_epoch(end.epoch)
                    .with_end_offset(end.end_offset),
            );
        }
        pd = match r {
            PartitionRead::Data(data) | PartitionRead::Remote(data, _) => {
                pd.with_records(Some(concat(data)))
            }
            // Sent from the segment files with `sendfile` (the marker is replaced by them
            // when the response is encoded).
            PartitionRead::Files(files) => pd.with_records(Some(
                ctx.splice
                    .files(files.slices, ctx.api_version >= FLEXIBLE_VERSION),
            )),
            PartitionRead::Empty => pd.with_records(Some(Bytes::new())),
            // Kafka sends empty (not null) records with an error; librdkafka refuses null here.
            PartitionRead::Error(code) => pd
                .with_error_code(code.code())
                .with_records(Some(Bytes::new())),
        };
        topics_out[w.topic_index].partitions.push(pd);
    }
    let mut resp = FetchResponse::default().with_session_id(0);
    // (a follower's fetch is not a client's)
    if replica < 0 && over_fetch_quota(broker, ctx, fetched_bytes) {
        ctx.splice.clear();
        return resp.with_throttle_time_ms(ctx.throttle.get() as i32);
    }
    if ctx.api_version >= CURRENT_LEADER_VERSION {
        if let Some(node) = broker.cluster() {
            let endpoints = point_to_leaders(node, &ctx.session.listener, &mut topics_out);
            if ctx.api_version >= NODE_ENDPOINTS_VERSION {
                resp = resp.with_node_endpoints(endpoints);
            }
        }
    }
    resp.with_responses(topics_out)
        .with_throttle_time_ms(ctx.throttle.get() as i32)
}

enum PartitionRead {
    Data(FetchData),
    /// Read from the remote tier (KIP-405), with the aborted transactions of its segment.
    Remote(FetchData, Vec<AbortedTxn>),
    /// Left in the segment files, to be sent with `sendfile` (`fetch.zero.copy`).
    Files(FileFetch),
    Empty,
    Error(ResponseError),
}

impl PartitionRead {
    fn bytes(&self) -> usize {
        match self {
            PartitionRead::Data(d) | PartitionRead::Remote(d, _) => d.bytes,
            PartitionRead::Files(f) => f.bytes,
            _ => 0,
        }
    }
    fn is_err(&self) -> bool {
        matches!(self, PartitionRead::Error(_))
    }
}

/// Reads every wanted partition in request order within the response byte budget
/// (`min(request max_bytes, fetch.max.bytes)`) and each partition's own limit. The first
/// partition with data returns at least one batch even if larger (KIP-74). A consumer's read
/// that came from the segment files marks the response as backlog data (`ctx.backlog`): the
/// connection writes it from the backlog lane. Replica fetches never are (replication is a
/// high class: `acks=all` waits for it).
async fn read_all(
    broker: &Broker,
    wanted: &[Wanted],
    response_max: usize,
    ctx: &RequestContext,
) -> Vec<PartitionRead> {
    let mut out = Vec::with_capacity(wanted.len());
    let mut used = 0usize;
    // A consumer's read of the segment files over plain TCP is sent with `sendfile`.
    let zero_copy = broker.config.fetch_zero_copy
        && matches!(
            ctx.session.protocol,
            SecurityProtocol::Plaintext | SecurityProtocol::SaslPlaintext
        );
    for w in wanted {
        let p = match &w.partition {
            Ok(p) => p,
            Err(code) => {
                out.push(PartitionRead::Error(*code));
                continue;
            }
        };
        // A follower's fetch: the leader's rules for each read of it, shared with the
        // simulator (still leading in the admitted epoch, log online, offset local and in
        // range; at the log end nothing yet). A diverging one is answered below.
        if w.replica && w.diverging.is_none() {
            match p.read_follower_fetch(w.admitted_epoch, w.fetch_offset) {
                Err(code) => {
                    out.push(PartitionRead::Error(code));
                    continue;
                }
                Ok(false) => {
                    out.push(PartitionRead::Empty);
                    continue;
                }
                Ok(true) => {}
            }
        }
        let serves = if w.any_replica {
            p.repl.serves_in(w.admitted_epoch)
        } else {
            p.repl.leads_in(w.admitted_epoch)
        };
        if !serves {
            // It lost the leadership while the fetch waited (Kafka's DelayedFetch checks the
            // leader epoch again before it completes): its log may now hold another leader's
            // records, which a follower of the old epoch must not take as this one's.
            out.push(PartitionRead::Error(ResponseError::NotLeaderOrFollower));
            continue;
        }
        if w.diverging.is_some() || w.preferred.is_some() {
            out.push(PartitionRead::Empty);
            continue;
        }
        // Consumers read below the high watermark (read_committed: the last stable offset),
        // followers up to the log end offset.
        let leo = p.reader().log_end_offset();
        let limit = if w.replica {
            leo
        } else if w.read_committed {
            p.last_stable_offset()
        } else {
            p.high_watermark()
        };
        // The response limit applies to the first partition too; only its first batch may
        // exceed it (KIP-74: read() always returns the first batch).
        let budget = w.max_bytes.min(response_max.saturating_sub(used));
        if w.fetch_offset >= limit || budget == 0 && used > 0 {
            // Between the high watermark and the log end is no error, only nothing to read yet
            // (Kafka's `LocalLog.read`): a new leader's high watermark may lag for a moment.
            out.push(
                if w.fetch_offset >= p.total_log_start_offset() && w.fetch_offset <= leo {
                    PartitionRead::Empty
                } else {
                    PartitionRead::Error(ResponseError::OffsetOutOfRange)
                },
            );
            continue;
        }
        let hw = limit;
        // Below the local log start of a tiered partition: from the remote tier.
        if let Some(access) = broker.remote().filter(|_| p.in_remote_tier(w.fetch_offset)) {
            let r = remote_read(
                broker,
                access,
                p,
                w.fetch_offset,
                budget.max(1),
                hw,
                w.read_committed,
            )
            .await;
            if used > 0 && r.bytes() > budget {
                out.push(PartitionRead::Empty);
            } else {
                used += r.bytes();
                out.push(r);
            }
            continue;
        }
        let read = if zero_copy && !w.replica {
            p.read_zero_copy(w.fetch_offset, budget.max(1), hw)
                .await
                .map(|f| match f {
                    Fetched::Memory(d) => PartitionRead::Data(d),
                    Fetched::Files(f) => {
                        if f.bytes > 0 {
                            ctx.backlog.set();
                        }
                        PartitionRead::Files(f)
                    }
                })
        } else {
            p.read_classed(
                w.fetch_offset,
                budget.max(1),
                hw,
                if w.replica {
                    ReadFor::Replica
                } else {
                    ReadFor::Consumer
                },
            )
            .await
            .map(|(d, from_disk)| {
                if from_disk && !w.replica && d.bytes > 0 {
                    ctx.backlog.set();
                }
                PartitionRead::Data(d)
            })
        };
        let first = used == 0;
        out.push(match read {
            Ok(r) if r.bytes() == 0 => PartitionRead::Empty,
            // Only the response's first batch may exceed the limits (KIP-74).
            Ok(r) if !first && r.bytes() > budget => PartitionRead::Empty,
            Ok(r) => {
                used += r.bytes();
                r
            }
            Err(LogError::OffsetOutOfRange { .. }) => {
                PartitionRead::Error(ResponseError::OffsetOutOfRange)
            }
            // Logged once when the log went offline.
            Err(LogError::Offline) => PartitionRead::Error(ResponseError::KafkaStorageError),
            Err(e) => {
                tracing::error!(topic = %p.topic, partition = p.index, offset = w.fetch_offset, error = %e, "fetch read failed");
                PartitionRead::Error(ResponseError::KafkaStorageError)
            }
        });
    }
    out
}

/// Reads `p` at `offset` from the remote tier (the copied segment holding it), waiting at most
/// `remote.fetch.max.wait.ms`: then an empty answer (the read goes on and warms the chunk
/// cache; the client asks again). A failing object store is KAFKA_STORAGE_ERROR for this
/// partition only; an offset no copied segment holds is OFFSET_OUT_OF_RANGE. `read_committed`
/// brings the segment's aborted transactions along.
async fn remote_read(
    broker: &Broker,
    access: &crate::remote::RemoteAccess,
    p: &Partition,
    offset: i64,
    max_bytes: usize,
    upper: i64,
    read_committed: bool,
) -> PartitionRead {
    let Some(node) = broker.cluster() else {
        return PartitionRead::Error(ResponseError::OffsetOutOfRange);
    };
    let image = node.image();
    let Some(t) = image.topics.get(&*p.topic) else {
        return PartitionRead::Error(ResponseError::UnknownTopicOrPartition);
    };
    let Some(segment) = t
        .remote
        .get(&p.index)
        .and_then(|r| r.finished_holding(offset))
        .cloned()
    else {
        return PartitionRead::Error(ResponseError::OffsetOutOfRange);
    };
    if let Some(q) = &access.fetch_quota {
        // `remote.log.manager.fetch.max.bytes.per.second` spent: no remote read now (Kafka's
        // `ReplicaManager` answers such a partition without records too).
        if !q.throttle(std::time::Instant::now()).is_zero() {
            return PartitionRead::Empty;
        }
    }
    let (topic, topic_id, partition) = (p.topic.to_string(), t.id, p.index);
    let reader = access.reader.clone();
    let pending = access.pending.clone();
    let quota = access.fetch_quota.clone();
    if pending.fetch_add(1, Ordering::AcqRel) >= crate::remote::MAX_PENDING_READS {
        pending.fetch_sub(1, Ordering::AcqRel);
        return PartitionRead::Empty;
    }
    let job = access.runtime.spawn(async move {
        let _done = PendingGuard(pending);
        let key = crate::remote::store::SegmentKey {
            topic: &topic,
            topic_id,
            partition,
            base_offset: segment.start_offset,
            segment_id: segment.id,
        };
        let started = std::time::Instant::now();
        let stats = &crate::remote::READS;
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let read = reader
            .read(&key, &segment, offset, max_bytes, upper, read_committed)
            .await;
        stats
            .micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        match &read {
            Ok(r) => {
                stats
                    .bytes
                    .fetch_add(r.data.len() as u64, Ordering::Relaxed);
                if let Some(q) = &quota {
                    q.spend(r.data.len() as u64, std::time::Instant::now());
                }
            }
            Err(_) => {
                stats.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        read
    });
    match tokio::time::timeout(access.wait, job).await {
        Ok(Ok(Ok(r))) if r.data.is_empty() => PartitionRead::Empty,
        Ok(Ok(Ok(r))) => PartitionRead::Remote(
            FetchData {
                bytes: r.data.len(),
                chunks: vec![r.data],
                first_offset: r.first_offset,
                next_offset: r.next_offset,
            },
            r.aborted,
        ),
        Ok(Ok(Err(e))) => {
            tracing::warn!(topic = %p.topic, partition = p.index, offset, error = %e, "remote read failed");
            PartitionRead::Error(ResponseError::KafkaStorageError)
        }
        Ok(Err(e)) => {
            tracing::error!(topic = %p.topic, partition = p.index, offset, error = %e, "remote read task failed");
            PartitionRead::Error(ResponseError::KafkaStorageError)
        }
        Err(_) => PartitionRead::Empty,
    }
}

/// Counts a remote read out when it ends (or is dropped).
struct PendingGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn concat(data: FetchData) -> Bytes {
    if data.chunks.len() == 1 {
        return data.chunks.into_iter().next().unwrap_or_default();
    }
    let mut buf = BytesMut::with_capacity(data.bytes);
    for c in &data.chunks {
        buf.extend_from_slice(c);
    }
    buf.freeze()
}
