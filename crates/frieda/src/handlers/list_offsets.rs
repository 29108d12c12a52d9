//! ListOffsets (key 2, v1-11): earliest (-2), latest (-1), max timestamp (-3, KIP-734),
//! earliest local (-4, KIP-1005: the local log start; earliest is the whole log's, remote tier
//! included), latest tiered (-5, KIP-1005) and earliest pending upload (-6, KIP-1023; v11) as
//! Kafka's `UnifiedLog.fetchOffsetByTimestamp` answers them (offset -1, leader epoch -1, no
//! error on a topic without tiered storage), and offset by timestamp.

use super::{authorized, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use crate::storage::partition::Partition;
use frieda_log::LogError;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use std::sync::Arc;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
const EARLIEST_PENDING_UPLOAD: i64 = -6;

/// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION (3); UNSUPPORTED_VERSION (35) for a
/// negative timestamp below -6 (as Kafka 4.3.1); in a cluster NOT_LEADER_OR_FOLLOWER
/// (6), FENCED_LEADER_EPOCH (74), UNKNOWN_LEADER_EPOCH (75); KAFKA_STORAGE_ERROR (56) when a
/// timestamp lookup cannot read the log; OFFSET_NOT_AVAILABLE (78; LEADER_NOT_AVAILABLE (5)
/// before v5) for latest, max timestamp and a timestamp lookup finding nothing readable while
/// a new leader's high watermark is below its epoch start (KIP-207). A timestamp past every
/// record, or MAX_TIMESTAMP on an empty partition, gives offset -1 and timestamp -1, as in
/// Kafka. MAX_TIMESTAMP returns the
/// earliest record carrying the largest timestamp (Kafka's `RecordBatch.offsetOfMaxTimestamp`).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListOffsetsRequest,
) -> ListOffsetsResponse {
    // leader_epoch exists from v4; encoding a set field in an older version is an error.
    let epoch = |e: i32| if ctx.api_version >= 4 { e } else { -1 };
    // v2+: read_committed consumers see offsets below the last stable offset only (KIP-98).
    let read_committed = ctx.api_version >= 2 && req.isolation_level == 1;
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        // Kafka: DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED per partition).
        let topic = if authorized(
            broker,
            ctx,
            op::DESCRIBE,
            resource::TOPIC,
            t.name.0.as_str(),
        ) {
            broker
                .topic(t.name.0.as_str())
                .ok_or(ResponseError::UnknownTopicOrPartition)
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        // Tiered storage on for this topic (Kafka's `remoteLogEnabled`), and the remote
        // segments the metadata image knows.
        let tiered = broker.config.tiered.enabled
            && topic
                .as_ref()
                .is_ok_and(|t| t.configs.read().get("remote.storage.enable") == Some("true"));
        let image = broker.cluster().filter(|_| tiered).map(|n| n.image());
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for lp in t.partitions {
            let resp = ListOffsetsPartitionResponse::default()
                .with_partition_index(lp.partition_index)
                .with_timestamp(-1)
                .with_offset(-1)
                .with_leader_epoch(epoch(-1));
            let found = topic
                .as_ref()
                .map_err(|e| *e)
                .and_then(|t| t.replica(lp.partition_index))
                .and_then(|p| {
                    let client_epoch = if ctx.api_version >= 4 {
                        lp.current_leader_epoch
                    } else {
                        -1
                    };
                    p.repl.check_leader(client_epoch)?;
                    broker.check_lease()?;
                    Ok(p)
                });
            let p = match found {
                Ok(p) => p,
                Err(code) => {
                    partitions.push(resp.with_error_code(code.code()));
                    continue;
                }
            };
            let resp = resp.with_leader_epoch(epoch(p.repl.leader_epoch()));
            let upper = if read_committed {
                p.last_stable_offset()
            } else {
                p.high_watermark()
            };
            // A new leader whose high watermark is still below its epoch's start does not know
            // yet where the acknowledged records end: "latest", and a lookup that finds nothing
            // below it, answer OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before), both
            // retriable, instead of an offset below one already given out (KIP-207). Only
            // for clients (replica id -1), as Kafka.
            let lagging = (req.replica_id.0 == -1)
                .then(|| p.repl.high_watermark_lagging())
                .flatten()
                .map(|(hw, start)| {
                    tracing::debug!(topic = %p.topic, partition = p.index, hw, epoch_start = start,
                        "ListOffsets: high watermark below the epoch start");
                    if ctx.api_version >= 5 {
                        ResponseError::OffsetNotAvailable
                    } else {
                        ResponseError::LeaderNotAvailable
                    }
                });
            let found: Result<Option<(i64, i64)>, ResponseError> = match lp.timestamp {
                LATEST => lagging.map_or(Ok(Some((upper, -1))), Err),
                EARLIEST => Ok(Some((p.total_log_start_offset(), -1))),
                EARLIEST_LOCAL => Ok(Some((p.log_start_offset(), -1))),
                MAX_TIMESTAMP => {
                    let reader = p.reader().clone();
                    lookup(&p, move || {
                        Ok(reader.max_timestamp()?.map(|(ts, off)| (off, ts)))
                    })
                    .await
                }
                ts if ts >= 0 => {
                    let reader = p.reader().clone();
                    lookup(&p, move || reader.offset_for_timestamp(ts)).await
                }
                // Without tiered storage: no such offset, and no epoch (Kafka's answer).
                LATEST_TIERED | EARLIEST_PENDING_UPLOAD if image.is_none() => {
                    partitions.push(resp.with_leader_epoch(epoch(-1)));
                    continue;
                }
                LATEST_TIERED | EARLIEST_PENDING_UPLOAD => {
                    let remote = image.as_ref().and_then(|i| i.remote_log(&p.topic, p.index));
                    // The highest offset ever copied (kept when retention deleted its
                    // copy: Kafka's `highestOffsetInRemoteStorage`).
                    let copied = remote.and_then(|r| r.copied_upto());
                    let (offset, offset_epoch) = match (lp.timestamp, copied) {
                        // The last copied offset, with the epoch of its batch (-1 once its
                        // copy is gone).
                        (LATEST_TIERED, Some(upto)) => {
                            let e = remote.and_then(|r| r.finished_holding(upto)).and_then(|s| {
                                s.segment_epochs.iter().rev().find(|(_, o)| *o <= upto)
                            });
                            (upto, e.map_or(-1, |(e, _)| *e))
                        }
                        (LATEST_TIERED, None) => (-1, -1),
                        // The first offset not copied yet.
                        (_, Some(upto)) => (
                            (upto + 1).max(p.total_log_start_offset()),
                            p.repl.leader_epoch(),
                        ),
                        // Nothing copied yet: the log start, if the local log still starts
                        // there (Kafka: -1 when it does not know of earlier copies).
                        (_, None) if p.log_start_offset() == p.total_log_start_offset() => {
                            (p.log_start_offset(), p.repl.leader_epoch())
                        }
                        (_, None) => (-1, -1),
                    };
                    partitions.push(
                        resp.with_offset(offset)
                            .with_leader_epoch(epoch(offset_epoch)),
                    );
                    continue;
                }
                _ => Err(ResponseError::UnsupportedVersion),
            };
            // A record found by timestamp must be readable: below the high watermark (or the
            // last stable offset), as Kafka's `fetchOffsetByTimestamp` bounds it.
            let found = found
                .map(|f| f.filter(|(offset, ts)| (*ts < 0 && *offset <= upper) || *offset < upper))
                .and_then(|f| match (f, lagging) {
                    (None, Some(e))
                        if lp.timestamp != EARLIEST && lp.timestamp != EARLIEST_LOCAL =>
                    {
                        Err(e)
                    }
                    (f, _) => Ok(f),
                });
            partitions.push(match found {
                Ok(Some((offset, ts))) => resp.with_offset(offset).with_timestamp(ts),
                Ok(None) => resp,
                Err(code) => resp
                    .with_error_code(code.code())
                    .with_leader_epoch(epoch(-1)),
            });
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// Runs a lookup that reads the log on a blocking thread: `(offset, timestamp)` or nothing.
async fn lookup(
    p: &Partition,
    f: impl FnOnce() -> Result<Option<(i64, i64)>, LogError> + Send + 'static,
) -> Result<Option<(i64, i64)>, ResponseError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(LogError::Offline)) => Err(ResponseError::KafkaStorageError),
        Ok(Err(e)) => {
            tracing::error!(topic = %p.topic, partition = p.index, error = %e, "offset lookup failed");
            Err(ResponseError::KafkaStorageError)
        }
        Err(_) => Err(ResponseError::UnknownServerError),
    }
}
