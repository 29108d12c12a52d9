//! Produce (key 0, v3-13): validate each partition's record batch on the network thread
//! (length, magic 2, CRC-32C, size), hand it to the partition's log writer, and answer once
//! every partition's append is done. Batches are stored exactly as received with the base
//! offset patched in (DESIGN.md, "ordering without CPU cost").

use super::{str_bytes, RequestContext};
use crate::broker::partition::Partition;
use crate::broker::Broker;
use bytes::{Bytes, BytesMut};
use frieda_log::{validate_batches, BatchError};
use futures::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use std::sync::Arc;

/// Produce v13 names topics by id (KIP-516).
const TOPIC_ID_VERSION: i16 = 13;

/// Handles a Produce request; `None` for acks=0 (no response is sent, the appends still happen
/// before the next request of the connection is answered).
///
/// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION (3) / UNKNOWN_TOPIC_ID (100),
/// CORRUPT_MESSAGE (2) for a bad length or CRC, INVALID_RECORD (87) for magic v0/v1, several
/// batches, or transactional/control batches (transactions are not implemented),
/// MESSAGE_TOO_LARGE (10) past `max.message.bytes`, INVALID_REQUIRED_ACKS (21),
/// OUT_OF_ORDER_SEQUENCE_NUMBER (45), INVALID_PRODUCER_EPOCH (47), KAFKA_STORAGE_ERROR (56).
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
            let partition = topic.as_ref().map_err(|e| *e).and_then(|t| {
                t.partition(pd.index)
                    .ok_or(ResponseError::UnknownTopicOrPartition)
            });
            let index = pd.index;
            let records = pd.records;
            async move {
                let result = match (request_error, partition) {
                    (Some(e), _) => Err((e, None)),
                    (None, Err(unknown)) => Err((unknown, None)),
                    (None, Ok(p)) => append(&p, records).await,
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
    Some(ProduceResponse::default().with_responses(topics))
}

type AppendResult = Result<(i64, i64, i64), (ResponseError, Option<String>)>;

async fn append(partition: &Arc<Partition>, records: Option<Bytes>) -> AppendResult {
    let Some(records) = records.filter(|r| !r.is_empty()) else {
        return Err((ResponseError::InvalidRecord, Some("no record batch".into())));
    };
    let max = partition.max_message_bytes();
    let headers = validate_batches(&records, max).map_err(|e| {
        tracing::info!(topic = %partition.topic, partition = partition.index, error = %e, "rejected produce batch");
        batch_error(&e)
    })?;
    if headers.len() != 1 {
        return Err((
            ResponseError::InvalidRecord,
            Some("produce requests v3+ must carry exactly one record batch per partition".into()),
        ));
    }
    let header = headers[0];
    if header.is_transactional() || header.is_control() {
        return Err((
            ResponseError::InvalidRecord,
            Some("transactional and control batches are not supported".into()),
        ));
    }
    let buf = records
        .try_into_mut()
        .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
    partition
        .append(buf, header)
        .await
        .map(|o| (o.base_offset, o.log_append_time, o.log_start_offset))
        .map_err(|e| (e, None))
}

fn batch_error(e: &BatchError) -> (ResponseError, Option<String>) {
    let code = match e {
        BatchError::CorruptMessage(_) => ResponseError::CorruptMessage,
        BatchError::UnsupportedMagic(_) | BatchError::InvalidRecord(_) => {
            ResponseError::InvalidRecord
        }
        BatchError::MessageTooLarge { .. } => ResponseError::MessageTooLarge,
    };
    (code, Some(e.to_string()))
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
        Err((code, message)) => {
            let resp = resp
                .with_error_code(code.code())
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1);
            if version >= 8 {
                resp.with_error_message(message.map(|m| str_bytes(&m)))
            } else {
                resp
            }
        }
    }
}
