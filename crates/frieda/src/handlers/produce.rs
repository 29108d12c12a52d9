//! Produce (key 0, v3-13): validate each partition's record batch on the network thread
//! (length, magic 2, CRC-32C, size, then Kafka's `LogValidator` rules: record count, keys on
//! compacted topics, timestamp bounds), recompress it if the topic's `compression.type` asks,
//! append it, and answer once every partition's append is done. Batches are otherwise stored
//! exactly as received with the base offset patched in (DESIGN.md, "ordering without CPU cost").

use super::{str_bytes, RequestContext};
use crate::broker::partition::Partition;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::cluster::{ClusterNode, LeaderHints};
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
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use std::sync::Arc;
use std::time::Duration;

/// Produce v13 names topics by id (KIP-516).
const TOPIC_ID_VERSION: i16 = 13;
/// Produce v10 tells a client that reached the wrong broker where the leader is (KIP-951).
const CURRENT_LEADER_VERSION: i16 = 10;

/// KIP-951: every partition answered NOT_LEADER_OR_FOLLOWER gets its current leader and epoch,
/// and the response the leaders' endpoints, so the client goes there without a Metadata round.
fn point_to_leaders(node: &ClusterNode, topics: &mut [TopicProduceResponse]) -> Vec<NodeEndpoint> {
    let mut hints = LeaderHints::new(node);
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
/// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION (3) / UNKNOWN_TOPIC_ID (100),
/// CORRUPT_MESSAGE (2) for a bad length, CRC or record structure, INVALID_RECORD (87) for magic
/// v0/v1, several batches, a record count that does not match the offset range, control or
/// transactional batches (transactions are not implemented), or a record without a key on a
/// compacted topic (with `record_errors`, v8+), INVALID_TIMESTAMP (32) for a record outside
/// `message.timestamp.before/after.max.ms` (with `record_errors`), MESSAGE_TOO_LARGE (10) past
/// `max.message.bytes`, INVALID_REQUIRED_ACKS (21), OUT_OF_ORDER_SEQUENCE_NUMBER (45),
/// INVALID_PRODUCER_EPOCH (47), KAFKA_STORAGE_ERROR (56) when the disk refuses or the partition
/// went offline after a failed fsync. In a cluster: NOT_LEADER_OR_FOLLOWER (6) when this
/// broker does not lead the partition, NOT_ENOUGH_REPLICAS (19) when `acks=all` finds fewer
/// than `min.insync.replicas` in sync, NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when they fell
/// below it while waiting, REQUEST_TIMED_OUT (7) when they did not confirm within the
/// request's `timeout_ms`.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ProduceRequest,
) -> Option<ProduceResponse> {
    let request_error = if !matches!(req.acks, -1..=1) {
        Some(ResponseError::InvalidRequiredAcks)
    } else if req.transactional_id.is_some() {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else {
        None
    };
    let by_id = ctx.api_version >= TOPIC_ID_VERSION;
    let version = ctx.api_version;
    let acks = req.acks;
    let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
    let lease = broker.cluster().map(|n| n.as_ref());
    let mut topics = Vec::with_capacity(req.topic_data.len());
    for topic_data in req.topic_data {
        let topic = broker.find_topic(by_id, topic_data.name.0.as_str(), &topic_data.topic_id);
        // Clients may not write to internal topics (Kafka: INVALID_TOPIC_EXCEPTION).
        let request_error = match &topic {
            Ok(t) if t.is_internal() => {
                request_error.or(Some(ResponseError::InvalidTopicException))
            }
            _ => request_error,
        };
        let appends = topic_data.partition_data.into_iter().map(|pd| {
            let partition = topic
                .as_ref()
                .map_err(|e| *e)
                .and_then(|t| t.replica(pd.index));
            let index = pd.index;
            let records = pd.records;
            async move {
                let result = match (request_error, partition) {
                    (Some(e), _) => Err(e.into()),
                    (None, Err(unknown)) => Err(unknown.into()),
                    (None, Ok(p)) => append(&p, records, acks, timeout, lease).await,
                };
                partition_response(version, index, result)
            }
        });
        let partitions = join_all(appends).await;
        topics.push(
            TopicProduceResponse::default()
                .with_name(topic_data.name)
                .with_topic_id(topic_data.topic_id)
                .with_partition_responses(partitions),
        );
    }
    if req.acks == 0 {
        return None;
    }
    let mut resp = ProduceResponse::default();
    if version >= CURRENT_LEADER_VERSION {
        if let Some(node) = broker.cluster() {
            resp = resp.with_node_endpoints(point_to_leaders(node, &mut topics));
        }
    }
    Some(resp.with_responses(topics))
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

/// Validates and appends one partition's batch; with `acks=all` on a replicated partition,
/// answers once the in-sync replicas have it (at most `timeout`).
async fn append(
    partition: &Arc<Partition>,
    records: Option<Bytes>,
    acks: i16,
    timeout: Duration,
    lease: Option<&ClusterNode>,
) -> AppendResult {
    let Some(records) = records.filter(|r| !r.is_empty()) else {
        return Err(AppendError {
            code: ResponseError::InvalidRecord,
            message: Some("no record batch".into()),
            record_errors: Vec::new(),
            log_start_offset: -1,
        });
    };
    let policy = partition.produce_policy();
    let rejected = |e: BatchError| {
        tracing::info!(topic = %partition.topic, partition = partition.index, error = %e, "rejected produce batch");
        AppendError {
            log_start_offset: partition.log_start_offset(),
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
    if header.is_transactional() {
        return Err(AppendError {
            code: ResponseError::InvalidRecord,
            message: Some("transactional batches are not supported".into()),
            record_errors: Vec::new(),
            log_start_offset: -1,
        });
    }
    validate_records(&records, &header, &policy.record_policy(now_ms())).map_err(rejected)?;
    let (buf, header) = match policy.target_codec {
        Some(codec) if codec.id() != header.compression() => {
            recompress(&records, &header, codec).map_err(rejected)?
        }
        _ => (
            records
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..])),
            header,
        ),
    };
    let replicated = partition.repl.is_replicated();
    let acks_all = acks == -1;
    // A leader that may have been fenced (its lease ran out, e.g. it was paused) takes and
    // acknowledges nothing: another broker may lead the partition by now.
    let lease_lost = || lease.is_some_and(|n| !n.holds_lease());
    if replicated && lease_lost() {
        partition.note_refused(&header);
        return Err(ResponseError::NotLeaderOrFollower.into());
    }
    if replicated {
        // Refused before the append when too few replicas are in sync (Kafka's
        // NOT_ENOUGH_REPLICAS), so the producer can retry without a duplicate in the log.
        if let Err(e) = partition
            .repl
            .check_writable(acks_all, policy.min_insync_replicas)
        {
            partition.note_refused(&header);
            return Err(e.into());
        }
    }
    let outcome = partition.append(buf, header).await?;
    if replicated && acks_all {
        partition
            .repl
            .wait_replicated(
                outcome.last_offset,
                outcome.leader_epoch,
                policy.min_insync_replicas,
                timeout,
            )
            .await?;
    }
    if replicated && lease_lost() {
        // In the log here, perhaps not on the new leader: the producer retries (an
        // idempotent producer's retry is deduplicated wherever the batch survived).
        return Err(ResponseError::NotLeaderOrFollower.into());
    }
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
