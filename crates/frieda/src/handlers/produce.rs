//! Produce (key 0, v3-13): validate each partition's record batch on the network thread
//! (length, magic 2, CRC-32C, size, then Kafka's `LogValidator` rules: record count, keys on
//! compacted topics, timestamp bounds), recompress it if the topic's `compression.type` asks,
//! append it, and answer once every partition's append is done. Batches are otherwise stored
//! exactly as received with the base offset patched in (DESIGN.md, "ordering without CPU cost").

use super::produce_order::{AppendGate, PartitionKey};
use super::{authorized, str_bytes, RequestContext, RequestTiming};
use crate::broker::txn_verify;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::coordinator::transaction::TopicPartition;
use crate::diskless::append::ProducedBatch;
use crate::diskless::coordinator::BatchAnswer;
use crate::membership::{ClusterNode, LeaderHints};
use crate::quota::QuotaKind;
use crate::security::acl::{op, resource};
use crate::storage::leader_append;
use crate::storage::partition::{Partition, ProducerCheck};
use crate::storage::topic::Topic;
use crate::storage::topic_config::ProducePolicy;
use bytes::{Bytes, BytesMut};
use frieda_log::{
    build_batch, records_section, validate_batches, validate_records, BatchError, BatchHeader,
    Codec,
};
use futures::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::BrokerId;
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Produce v13 names topics by id (KIP-516).
const TOPIC_ID_VERSION: i16 = 13;
/// Produce v10 tells a client that reached the wrong broker where the leader is (KIP-951).
const CURRENT_LEADER_VERSION: i16 = 10;

/// KIP-951: every partition answered NOT_LEADER_OR_FOLLOWER gets its current leader and epoch,
/// and the response the leaders' endpoints, so the client goes there without a Metadata round.
fn point_to_leaders(
    node: &ClusterNode,
    listener: &str,
    topics: &mut [TopicProduceResponse],
) -> Vec<NodeEndpoint> {
    let mut hints = LeaderHints::new(node, listener);
    for t in topics.iter_mut() {
        let Some(name) = hints.topic_name(&t.name.0, t.topic_id) else {
            continue;
        };
        for p in t.partition_responses.iter_mut() {
            if p.error_code != ResponseError::NotLeaderOrFollower.code() {
                continue;
            }
            if let Some((leader, epoch)) = hints.leader(&name, p.index) {
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

/// Handles a Produce request; `None` for acks=0 (no response is sent, the appends still happen
/// before the next request of the connection is answered).
///
/// Each partition's batch is validated, then transactional batches that open a transaction on
/// their partition are verified with (v3-11) or added to (v12+, transactions v2) the
/// producer's transaction by its coordinator in one request (KIP-890), then every batch is
/// appended.
///
/// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION (3) / UNKNOWN_TOPIC_ID (100),
/// CORRUPT_MESSAGE (2) for a bad length, CRC or record structure, INVALID_RECORD (87) for magic
/// v0/v1, several batches, a record count that does not match the offset range, a control
/// batch, a transactional batch without a transactional id, or a record without a key on a
/// compacted topic (with `record_errors`, v8+), INVALID_TIMESTAMP (32) for a record outside
/// `message.timestamp.before/after.max.ms` (with `record_errors`), MESSAGE_TOO_LARGE (10) past
/// `max.message.bytes`, INVALID_REQUIRED_ACKS (21), OUT_OF_ORDER_SEQUENCE_NUMBER (45),
/// INVALID_PRODUCER_EPOCH (47), INVALID_TXN_STATE (48) for a transactional batch the
/// coordinator does not know in the transaction (TRANSACTION_ABORTABLE, 120, from v11) or a
/// plain batch of a producer with an open transaction, KAFKA_STORAGE_ERROR (56) when the disk
/// refuses or the partition went offline after a failed fsync. In a cluster:
/// NOT_LEADER_OR_FOLLOWER (6) when this broker does not lead the partition,
/// NOT_ENOUGH_REPLICAS (19) when `acks=all` finds fewer than `min.insync.replicas` in sync (or
/// the transaction coordinator could not be asked), NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when
/// they fell below it while waiting, REQUEST_TIMED_OUT (7) when they did not confirm within
/// the request's `timeout_ms`.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    mut req: ProduceRequest,
) -> Option<ProduceResponse> {
    let request_error = if !matches!(req.acks, -1..=1) {
        Some(ResponseError::InvalidRequiredAcks)
    } else {
        None
    };
    let by_id = ctx.api_version >= TOPIC_ID_VERSION;
    let version = ctx.api_version;
    let acks = req.acks;
    let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
    let lease = broker.cluster().map(|n| n.as_ref());
    // Owned copies of the request's strings (the transactional id, the topic names below): what
    // still refers to the request's buffer when a batch is prepared decides whether its bytes
    // can be taken over rather than copied (`prepare`).
    let transactional_id = req.transactional_id.take().map(|t| t.0.to_string());
    // Kafka: WRITE on the transactional id (the whole request), WRITE on each topic.
    let request_error = match &transactional_id {
        Some(id) if !authorized(broker, ctx, op::WRITE, resource::TRANSACTIONAL_ID, id) => {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        }
        _ => request_error,
    };
    // 0. This request's place in the connection's order of appends (overlapped processing:
    // appends to a partition are decided in the order the connection sent them; see
    // `produce_order`). Registered at once; waited on after validation.
    let topic_key = |name: &str, id: &uuid::Uuid| {
        if by_id {
            id.to_string()
        } else {
            name.to_string()
        }
    };
    let mut order = match ctx.produce_ticket.take() {
        Some(ticket) => {
            let keys: Vec<PartitionKey> = req
                .topic_data
                .iter()
                .flat_map(|t| {
                    let k = topic_key(t.name.0.as_str(), &t.topic_id);
                    t.partition_data.iter().map(move |p| (k.clone(), p.index))
                })
                .collect();
            Some(ticket.register(&keys).await)
        }
        None => None,
    };
    // 1. Validate every partition's batch.
    let mut names = Vec::with_capacity(req.topic_data.len());
    let mut items: Vec<(usize, i32, Result<Prepared, AppendError>, ProducerCheck)> = Vec::new();
    let mut diskless_items: Vec<DisklessItem> = Vec::new();
    for topic_data in req.topic_data {
        let topic = broker.find_topic(by_id, topic_data.name.0.as_str(), &topic_data.topic_id);
        let diskless = topic
            .as_ref()
            .ok()
            .filter(|t| t.configs.read().is_diskless(&broker.topic_defaults()))
            .cloned();
        let name = match &topic {
            Ok(t) => Some(&*t.name),
            Err(_) if !by_id => Some(topic_data.name.0.as_str()),
            Err(_) => None, // an unknown topic id: UNKNOWN_TOPIC_ID below
        };
        let request_error = request_error.or_else(|| {
            name.filter(|n| !authorized(broker, ctx, op::WRITE, resource::TOPIC, n))
                .map(|_| ResponseError::TopicAuthorizationFailed)
        });
        // Clients may not write to internal topics (Kafka: INVALID_TOPIC_EXCEPTION).
        let request_error = match &topic {
            Ok(t) if t.is_internal() => {
                request_error.or(Some(ResponseError::InvalidTopicException))
            }
            _ => request_error,
        };
        let ti = names.len();
        let owned_name = TopicName(StrBytes::from_string(topic_data.name.0.to_string()));
        drop(topic_data.name);
        names.push((owned_name, topic_data.topic_id));
        for pd in topic_data.partition_data {
            if let Some(t) = &diskless {
                let prepared = match request_error {
                    Some(e) => Err(e.into()),
                    None => prepare_diskless(broker, t, pd.index, pd.records, ctx.request_bytes),
                };
                diskless_items.push((ti, pd.index, prepared));
                continue;
            }
            let partition = topic
                .as_ref()
                .map_err(|e| *e)
                .and_then(|t| t.replica(pd.index));
            let prepared = match (request_error, partition) {
                (Some(e), _) => Err(e.into()),
                (None, Err(unknown)) => Err(unknown.into()),
                (None, Ok(p)) => prepare(p, pd.records, ctx.request_bytes),
            };
            items.push((ti, pd.index, prepared, ProducerCheck::PLAIN));
        }
    }
    // Kafka's one-request-at-a-time order: the earlier produces of this connection to these
    // partitions decide their appends first (their verification included).
    if let Some(o) = order.as_mut() {
        o.wait_for_earlier().await;
    }
    // 2. Transactional batches opening a transaction on their partition: KIP-890 (on a
    // diskless topic: every transactional batch).
    verify_transactions(broker, version, transactional_id.as_deref(), &mut items).await;
    verify_diskless(
        broker,
        version,
        transactional_id.as_deref(),
        &mut diskless_items,
    )
    .await;
    // 3. Append. A diskless topic's batches go to the append path together (one object).
    let diskless_gates: Vec<AppendGate> = diskless_items
        .iter()
        .filter_map(|(ti, index, _)| {
            let (name, id) = &names[*ti];
            let key = (topic_key(name.0.as_str(), id), *index);
            order.as_mut().and_then(|o| o.gates.remove(&key))
        })
        .collect();
    let diskless_done = append_diskless(broker, diskless_items, timeout, diskless_gates);
    let appends = items
        .into_iter()
        .map(|(ti, index, prepared, check)| {
            let gate = order.as_mut().and_then(|o| {
                let (name, id) = &names[ti];
                o.gates.remove(&(topic_key(name.0.as_str(), id), index))
            });
            async move {
                let result = match prepared {
                    Ok(p) => append(p, acks, timeout, lease, check, &ctx.timing, gate).await,
                    Err(e) => Err(e),
                };
                (ti, partition_response(version, index, result))
            }
        })
        .collect::<Vec<_>>();
    let (mut done, diskless_done) = futures::join!(join_all(appends), diskless_done);
    done.extend(
        diskless_done
            .into_iter()
            .map(|(ti, index, result)| (ti, partition_response(version, index, result))),
    );
    let mut topics: Vec<TopicProduceResponse> = names
        .into_iter()
        .map(|(name, id)| {
            TopicProduceResponse::default()
                .with_name(name)
                .with_topic_id(id)
        })
        .collect();
    for (ti, resp) in done {
        topics[ti].partition_responses.push(resp);
    }
    // producer_byte_rate: the request's size counts; over the quota, the answer says how long
    // to wait and the connection is muted that long (also for acks=0, which gets no answer).
    let throttle = broker.security.quotas.record(
        QuotaKind::Produce,
        &ctx.session.principal.name,
        ctx.client_id.as_deref().unwrap_or(""),
        ctx.request_bytes as f64,
        std::time::Instant::now(),
    );
    ctx.throttle.at_least(throttle);
    if acks == 0 {
        return None;
    }
    // (the request quota may have throttled it already: the larger wait is answered)
    let mut resp = ProduceResponse::default().with_throttle_time_ms(ctx.throttle.get() as i32);
    if version >= CURRENT_LEADER_VERSION {
        if let Some(node) = broker.cluster() {
            resp = resp.with_node_endpoints(point_to_leaders(
                node,
                &ctx.session.listener,
                &mut topics,
            ));
        }
    }
    Some(resp.with_responses(topics))
}

/// Sets each transactional batch's producer check: batches that would open a transaction on
/// their partition are verified (or, v12+, added) with the coordinator first (one request for
/// the whole produce request); a refusal becomes the partition's error. The rule is
/// [`txn_verify::VerifyRound`]'s, which the simulator runs too.
///
/// Transactions v2 (KIP-890 part 2): EndTxn answers before the markers are written, so the
/// producer's next transaction often reaches a partition while its coordinator still answers
/// CONCURRENT_TRANSACTIONS (51); as Kafka's `ReplicaManager` does, the add is retried
/// ([`txn_verify::add_retry`]: every 20 ms, starting each partition's verification again, for
/// up to 100 ms), and only then is CONCURRENT_TRANSACTIONS answered (the client retries).
async fn verify_transactions(
    broker: &Arc<Broker>,
    version: i16,
    transactional_id: Option<&str>,
    items: &mut [(usize, i32, Result<Prepared, AppendError>, ProducerCheck)],
) {
    let mut round: txn_verify::VerifyRound<usize> =
        txn_verify::VerifyRound::new(version, broker.config.transactions.partition_verification);
    for (i, (_, _, prepared, check)) in items.iter_mut().enumerate() {
        let Ok(p) = prepared else { continue };
        if !p.header.is_transactional() {
            continue;
        }
        let h = p.header;
        match round.admit(transactional_id.is_some(), h.producer_id, h.producer_epoch) {
            Err(msg) => *prepared = Err(AppendError::invalid_record(msg)),
            Ok(false) => {}
            Ok(true) => {
                let token =
                    p.partition
                        .begin_verification(h.producer_id, h.producer_epoch, round.tv2());
                *check = round.wait_for(i, token);
            }
        }
    }
    let Some(id) = transactional_id else {
        return;
    };
    // each waiting item's partition (the set only shrinks)
    let tp: HashMap<usize, TopicPartition> = round
        .waiting()
        .iter()
        .filter_map(|&i| {
            let p = items[i].2.as_ref().ok()?;
            Some((i, (p.partition.topic.to_string(), p.partition.index)))
        })
        .collect();
    let Some((pid, epoch)) = round.producer() else {
        return;
    };
    let tv2 = round.tv2();
    let (checks, refused) = ask_coordinator(broker, id, &mut round, &tp, |&i| match &items[i].2 {
        Ok(p) => p.partition.begin_verification(pid, epoch, tv2),
        Err(_) => None,
    })
    .await;
    for (i, check) in checks {
        items[i].3 = check;
    }
    for (i, code) in refused {
        items[i].2 = Err(code.into());
    }
}

/// Transactional batches of a diskless topic: every one is added to (v12+) or verified in its
/// producer's transaction before it is buffered, one request for the whole produce request.
/// Before that, each takes a verification token from its partition's batch coordinator (on
/// this broker or another), which its commit carries: a marker for the producer decided in
/// between voids it, and the coordinator then refuses the batch INVALID_TXN_STATE if it would
/// open a transaction (a transactions v1 batch verified before its transaction ended and
/// committed after, found by tests/jepsen's diskless kind with librdkafka: it opened a new
/// transaction, which the producer's next commit then committed). A refusal becomes the
/// partition's error (NOT_LEADER_OR_FOLLOWER while the batch coordinator is not reached).
async fn verify_diskless(
    broker: &Arc<Broker>,
    version: i16,
    transactional_id: Option<&str>,
    items: &mut [DisklessItem],
) {
    let mut round: txn_verify::VerifyRound<usize> =
        txn_verify::VerifyRound::new(version, broker.config.transactions.partition_verification);
    let mut tp: HashMap<usize, TopicPartition> = HashMap::new();
    for (i, (_, index, prepared)) in items.iter_mut().enumerate() {
        let Ok(b) = prepared else { continue };
        let h = b.header;
        if !h.is_transactional() {
            continue;
        }
        match round.admit(transactional_id.is_some(), h.producer_id, h.producer_epoch) {
            Err(msg) => *prepared = Err(AppendError::invalid_record(msg)),
            Ok(false) => {}
            Ok(true) => {
                // The topic by its name (a Produce v13+ request names it by id only).
                let Some(topic) = broker.topic_by_id(&b.partition.topic_id) else {
                    *prepared = Err(ResponseError::UnknownTopicOrPartition.into());
                    continue;
                };
                match diskless_token(broker, (&topic, *index), b, round.tv2()).await {
                    Ok(token) => b.verification = Some(token),
                    Err(e) => {
                        *prepared = Err(e.into());
                        continue;
                    }
                }
                // the whole round waits for the transaction coordinator
                round.wait_for(i, Some(0));
                tp.insert(i, (topic.name.to_string(), *index));
            }
        }
    }
    let Some(id) = transactional_id else {
        return;
    };
    let (_, refused) = ask_coordinator(broker, id, &mut round, &tp, |_| Some(0)).await;
    for (i, code) in refused {
        items[i].2 = Err(code.into());
    }
}

/// The verification token of transactional batch `b` (of partition `index` of diskless topic
/// `topic`) from its partition's batch coordinator
/// ([`crate::diskless::driver::route::CoordinatorRef::begin_verification`]).
///
/// Errors: NOT_LEADER_OR_FOLLOWER (6) while the coordinator is not reached (loading, moving,
/// on a broker that does not answer) or on a broker without the diskless service.
async fn diskless_token(
    broker: &Broker,
    (topic, index): (&Topic, i32),
    b: &ProducedBatch,
    tv2: bool,
) -> Result<u64, ResponseError> {
    use crate::diskless::driver::route::not_served;
    let (partition, _, host) = super::fetch_diskless::diskless_host(broker, topic, index)?;
    let h = &b.header;
    host.begin_verification(partition, h.producer_id, h.producer_epoch, tv2)
        .await
        .map_err(not_served)
}

/// Asks `transactional_id`'s coordinator about the partitions waiting in `round` (`tp`: each
/// one's topic and index) until the round is over: after a pause (transactions v2,
/// CONCURRENT_TRANSACTIONS) `begin` starts a waiting partition's verification again. Returns
/// the producer checks those restarts gave (the last per partition) and the partitions refused,
/// with the produce error to answer.
async fn ask_coordinator(
    broker: &Arc<Broker>,
    transactional_id: &str,
    round: &mut txn_verify::VerifyRound<usize>,
    tp: &HashMap<usize, TopicPartition>,
    mut begin: impl FnMut(&usize) -> Option<u64>,
) -> (HashMap<usize, ProducerCheck>, Vec<(usize, ResponseError)>) {
    let mut checks = HashMap::new();
    let Some((pid, epoch)) = round.producer() else {
        return (checks, Vec::new());
    };
    let tv2 = round.tv2();
    let started = std::time::Instant::now();
    while !round.waiting().is_empty() {
        let tps: Vec<TopicPartition> = round
            .waiting()
            .iter()
            .filter_map(|i| tp.get(i).cloned())
            .collect();
        let failed =
            txn_verify::add_or_verify(broker, transactional_id, pid, epoch, &tps, tv2).await;
        let refusal = |i: &usize| tp.get(i).and_then(|tp| failed.get(tp).copied());
        match round.answered(refusal, started.elapsed()) {
            txn_verify::VerifyStep::Pause(backoff) => {
                tokio::time::sleep(backoff).await;
                checks.extend(round.restart(&mut begin));
            }
            txn_verify::VerifyStep::Done(refused) => {
                for (i, code) in &refused {
                    tracing::debug!(transactional_id, partition = ?tp.get(i), error = ?code,
                        "transaction verification refused a batch");
                }
                return (checks, refused);
            }
        }
    }
    (checks, Vec::new())
}

/// Why a partition's append failed: the error code, the `error_message` (v8+) and the
/// `record_errors` (v8+, record index and message).
struct AppendError {
    code: ResponseError,
    message: Option<String>,
    record_errors: Vec<(i32, String)>,
    /// The partition's log start offset when known (Kafka fills it in for validation errors).
    log_start_offset: i64,
}

impl AppendError {
    /// INVALID_RECORD (87) with `message`.
    fn invalid_record(message: &str) -> AppendError {
        AppendError {
            code: ResponseError::InvalidRecord,
            message: Some(message.into()),
            record_errors: Vec::new(),
            log_start_offset: -1,
        }
    }
}

impl From<ResponseError> for AppendError {
    fn from(code: ResponseError) -> Self {
        AppendError {
            code,
            message: None,
            record_errors: Vec::new(),
            log_start_offset: -1,
        }
    }
}

type AppendResult = Result<(i64, i64, i64), AppendError>;

/// A partition's batch, validated and ready to append.
struct Prepared {
    partition: Arc<Partition>,
    buf: BytesMut,
    header: BatchHeader,
    policy: ProducePolicy,
}

/// Validates one partition's batch (Kafka's `LogValidator`) and recompresses it if the
/// topic's `compression.type` asks. The batch's bytes are taken over, not copied, when nothing
/// else refers to the request's buffer any more (a large frame read into a buffer of its own,
/// `server::frame`) and the batch is nearly all of the request (`request_bytes`, the frame with
/// its size prefix, at most an eighth more): the appended batch stays in the tail cache, which
/// must not hold on to a large request for a small batch of it.
fn prepare(
    partition: Arc<Partition>,
    records: Option<Bytes>,
    request_bytes: usize,
) -> Result<Prepared, AppendError> {
    let records = records
        .filter(|r| !r.is_empty())
        .ok_or_else(no_record_batch)?;
    let policy = partition.produce_policy();
    let (buf, header) = validate(
        records,
        &policy,
        request_bytes,
        (&partition.topic, partition.index),
        partition.total_log_start_offset(),
    )?;
    Ok(Prepared {
        partition,
        buf,
        header,
        policy,
    })
}

/// Validates one partition's batch against `policy` (Kafka's `LogValidator`) and recompresses
/// it if the topic's `compression.type` asks; `log_start` goes into a refusal's answer.
fn validate(
    records: Bytes,
    policy: &ProducePolicy,
    request_bytes: usize,
    (topic, index): (&str, i32),
    log_start: i64,
) -> Result<(BytesMut, BatchHeader), AppendError> {
    let rejected = |e: BatchError| {
        tracing::info!(topic, partition = index, error = %e, "rejected produce batch");
        AppendError {
            log_start_offset: log_start,
            ..batch_error(e)
        }
    };
    let headers = validate_batches(&records, policy.max_message_bytes).map_err(rejected)?;
    if headers.len() != 1 {
        return Err(AppendError {
            code: ResponseError::InvalidRecord,
            message: Some(
                "produce requests v3+ must carry exactly one record batch per partition".into(),
            ),
            record_errors: Vec::new(),
            log_start_offset: -1,
        });
    }
    let header = headers[0];
    validate_records(&records, &header, &policy.record_policy(now_ms())).map_err(rejected)?;
    let (buf, header) = match policy.target_codec {
        Some(codec) if codec.id() != header.compression() => {
            recompress(&records, &header, codec).map_err(rejected)?
        }
        _ if request_bytes.saturating_sub(records.len()) <= records.len() / 8 => (
            records
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..])),
            header,
        ),
        _ => (BytesMut::from(&records[..]), header),
    };
    Ok((buf, header))
}

/// A partition's data without a record batch: INVALID_RECORD.
fn no_record_batch() -> AppendError {
    AppendError {
        code: ResponseError::InvalidRecord,
        message: Some("no record batch".into()),
        record_errors: Vec::new(),
        log_start_offset: -1,
    }
}

/// A diskless topic's batch: its topic's place in the request, its partition, the batch.
type DisklessItem = (usize, i32, Result<ProducedBatch, AppendError>);

/// Validates a batch for partition `index` of diskless topic `topic` (any broker takes it).
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) for a partition the topic lacks;
/// NOT_LEADER_OR_FOLLOWER (6) on a broker without the diskless service; the validation's.
fn prepare_diskless(
    broker: &Broker,
    topic: &Topic,
    index: i32,
    records: Option<Bytes>,
    request_bytes: usize,
) -> Result<ProducedBatch, AppendError> {
    let (partition, _) = super::fetch_diskless::diskless_partition(broker, topic, index)?;
    let records = records
        .filter(|r| !r.is_empty())
        .ok_or_else(no_record_batch)?;
    let policy = topic
        .configs
        .read()
        .produce_policy(&broker.topic_defaults());
    let (buf, header) = validate(records, &policy, request_bytes, (&topic.name, index), -1)?;
    Ok(ProducedBatch {
        partition,
        bytes: buf.freeze(),
        header,
        verification: None,
    })
}

/// Hands a request's diskless batches to the broker's append path at once (one object holds
/// them), releases their produce-order `gates` (their order is now the buffer's), and waits
/// for the coordinator's answers. While the append buffers are full it tries again every 5 ms,
/// for at most `timeout` (then REQUEST_TIMED_OUT).
async fn append_diskless(
    broker: &Arc<Broker>,
    items: Vec<DisklessItem>,
    timeout: Duration,
    gates: Vec<AppendGate>,
) -> Vec<(usize, i32, AppendResult)> {
    let mut out = Vec::with_capacity(items.len());
    let mut taken = Vec::new();
    let mut batches = Vec::new();
    for (ti, index, prepared) in items {
        match prepared {
            Ok(b) => {
                taken.push((ti, index));
                batches.push(b);
            }
            Err(e) => out.push((ti, index, Err(e))),
        }
    }
    let refuse_all =
        |out: &mut Vec<(usize, i32, AppendResult)>, taken: &[(usize, i32)], e: ResponseError| {
            out.extend(taken.iter().map(|&(ti, index)| (ti, index, Err(e.into()))));
        };
    let Some(diskless) = broker.diskless().cloned().filter(|_| !batches.is_empty()) else {
        drop(gates);
        refuse_all(&mut out, &taken, ResponseError::NotLeaderOrFollower);
        return out;
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let answers = loop {
        match diskless.appender.produce(batches.clone()) {
            Ok(rx) => break Some(rx),
            Err(_full) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(_full) => break None,
        }
    };
    drop(gates);
    let Some(rx) = answers else {
        refuse_all(&mut out, &taken, ResponseError::RequestTimedOut);
        return out;
    };
    match rx.await {
        Ok(answers) if answers.len() == taken.len() => {
            for ((ti, index), answer) in taken.into_iter().zip(answers) {
                let result = match answer {
                    BatchAnswer::Appended { base_offset, .. }
                    | BatchAnswer::Duplicate { base_offset, .. } => Ok((base_offset, -1, -1)),
                    BatchAnswer::Refused(e) => Err(e.into()),
                };
                out.push((ti, index, result));
            }
        }
        _ => refuse_all(&mut out, &taken, ResponseError::NotLeaderOrFollower),
    }
    out
}

/// Whether this broker may append to `partition` now, as its leader (produce, and the broker's
/// own writes such as the share groups' dead-letter queue): on a replicated partition its lease
/// must hold (a leader that may have been fenced, e.g. it was paused, takes and acknowledges
/// nothing: another broker may lead the partition by now) and, for `acks=all`, at least
/// `min_insync` replicas must be in sync. Refused before the append, so a retry leaves no
/// duplicate in the log.
///
/// Errors: NOT_LEADER_OR_FOLLOWER (6), NOT_ENOUGH_REPLICAS (19, Kafka's check of
/// `min.insync.replicas` in `Partition.appendRecordsToLeader`).
pub(crate) fn check_append(
    partition: &Partition,
    lease: Option<&ClusterNode>,
    acks_all: bool,
    min_insync: usize,
) -> Result<(), ResponseError> {
    if !partition.repl.is_replicated() {
        return Ok(());
    }
    let lease_holds = lease.is_none_or(|n| n.holds_lease());
    leader_append::admit_produce(&partition.repl, lease_holds, acks_all, min_insync).map(|_| ())
}

/// Appends one prepared batch; with `acks=all` on a replicated partition, answers once the
/// in-sync replicas have it (at most `timeout`). `gate` is released once the append is
/// decided, before the fsync (`flush.messages`) and the wait for the replicas
/// (`produce_order`).
async fn append(
    prepared: Prepared,
    acks: i16,
    timeout: Duration,
    lease: Option<&ClusterNode>,
    check: ProducerCheck,
    timing: &RequestTiming,
    gate: Option<AppendGate>,
) -> AppendResult {
    let Prepared {
        partition,
        buf,
        header,
        policy,
    } = prepared;
    let partition = &partition;
    let replicated = partition.repl.is_replicated();
    let acks_all = acks == -1;
    let lease_lost = || lease.is_some_and(|n| !n.holds_lease());
    if let Err(e) = check_append(partition, lease, acks_all, policy.min_insync_replicas) {
        partition.note_refused(&header);
        return Err(e.into());
    }
    let appending = timing.stopwatch();
    // The gate opens when the append is decided, before an fsync the flush policy asks for:
    // the connection's next produce appends meanwhile and shares that fsync.
    let outcome = partition
        .append_deciding(buf, header, check, move || drop(gate))
        .await;
    if let Some(t) = appending {
        timing.appended(t.elapsed());
    }
    let outcome = outcome?;
    let mut waited = Ok(());
    if replicated && acks_all {
        let waiting = timing.stopwatch();
        waited = partition
            .repl
            .wait_replicated(
                outcome.last_offset,
                outcome.leader_epoch,
                policy.min_insync_replicas,
                timeout,
            )
            .await;
        if let Some(t) = waiting {
            timing.waited(t.elapsed());
        }
    }
    // In the log here, but perhaps not on a new leader if the lease was lost meanwhile.
    leader_append::answer_produce(waited, !replicated || !lease_lost())?;
    Ok((
        outcome.base_offset,
        outcome.log_append_time,
        outcome.log_start_offset,
    ))
}

/// Rewrites a batch with the topic's `compression.type` (Kafka's `LogValidator` rebuild: the
/// producer id, epoch, base sequence, offsets and timestamps are kept; the CRC is new).
fn recompress(
    batch: &[u8],
    h: &BatchHeader,
    codec: Codec,
) -> Result<(BytesMut, BatchHeader), BatchError> {
    let records = records_section(batch, h)?;
    let rebuilt = build_batch(h, codec, &records);
    let header = BatchHeader::parse(&rebuilt)?;
    Ok((BytesMut::from(&rebuilt[..]), header))
}

/// The Kafka error for a refused batch, with Kafka's `error_message` and `record_errors` for
/// per-record failures (`LogValidator.processRecordErrors`).
fn batch_error(e: BatchError) -> AppendError {
    let code = match &e {
        BatchError::CorruptMessage(_) => ResponseError::CorruptMessage,
        BatchError::UnsupportedMagic(_) | BatchError::InvalidRecord(_) => {
            ResponseError::InvalidRecord
        }
        BatchError::MessageTooLarge { .. } => ResponseError::MessageTooLarge,
        BatchError::RecordsRejected(errors) if errors.iter().any(|e| e.timestamp) => {
            ResponseError::InvalidTimestamp
        }
        BatchError::RecordsRejected(_) => ResponseError::InvalidRecord,
    };
    match e {
        BatchError::RecordsRejected(errors) => AppendError {
            code,
            message: Some(if code == ResponseError::InvalidTimestamp {
                "One or more records have been rejected due to invalid timestamp".into()
            } else {
                let shown: Vec<String> = errors
                    .iter()
                    .take(3)
                    .map(|e| {
                        format!(
                            "RecordError(batchIndex={}, message='{}')",
                            e.index, e.message
                        )
                    })
                    .collect();
                format!(
                    "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
                    errors.len(),
                    shown.join(", ")
                )
            }),
            record_errors: errors.into_iter().map(|e| (e.index, e.message)).collect(),
            log_start_offset: -1,
        },
        other => AppendError {
            code,
            message: Some(other.to_string()),
            record_errors: Vec::new(),
            log_start_offset: -1,
        },
    }
}

/// Builds a partition's result. Fields newer than the request version stay at their defaults:
/// log_start_offset exists from v5, error_message from v8.
fn partition_response(version: i16, index: i32, result: AppendResult) -> PartitionProduceResponse {
    let resp = PartitionProduceResponse::default().with_index(index);
    match result {
        Ok((base_offset, log_append_time, log_start_offset)) => {
            let resp = resp
                .with_base_offset(base_offset)
                .with_log_append_time_ms(log_append_time);
            if version >= 5 {
                resp.with_log_start_offset(log_start_offset)
            } else {
                resp
            }
        }
        Err(e) => {
            let resp = resp
                .with_error_code(e.code.code())
                .with_base_offset(-1)
                .with_log_append_time_ms(-1);
            let resp = if version >= 5 {
                resp.with_log_start_offset(e.log_start_offset)
            } else {
                resp
            };
            if version >= 8 {
                resp.with_error_message(e.message.map(|m| str_bytes(&m)))
                    .with_record_errors(
                        e.record_errors
                            .into_iter()
                            .map(|(i, m)| {
                                BatchIndexAndErrorMessage::default()
                                    .with_batch_index(i)
                                    .with_batch_index_error_message(Some(str_bytes(&m)))
                            })
                            .collect(),
                    )
            } else {
                resp
            }
        }
    }
}
