//! DeleteRecords (key 21, v0-2; KIP-107), as `kafka-delete-records.sh` and
//! `Admin.deleteRecords` use it: moves each partition's log start offset up to the offset
//! asked for, so records below it are no longer served (Fetch answers OFFSET_OUT_OF_RANGE,
//! ListOffsets earliest returns the new start) and segments wholly below it are deleted. The
//! new start is persisted before it applies (`log-start-offset-checkpoint`) and followers take
//! it from their next fetch; the answer waits until the **low watermark** (the smallest log
//! start over the leader and its in-sync followers, Kafka's `lowWatermarkIfLeader`) reaches
//! the offset, as Kafka's `DelayedDeleteRecords` does, so a failover does not bring the
//! records back.
//!
//! On a tiered partition with copies (KIP-405) the new start may lie in the remote tier: it is
//! committed in the metadata quorum first (`RemoteSegmentChange::LogStartMoved`), every
//! replica's log start follows it, the remote-log manager deletes the copies wholly below it,
//! and the local log moves too when it starts below (docs/tiered-storage.md).
//!
//! Per-partition errors, as Kafka's `ReplicaManager.deleteRecords`:
//! UNKNOWN_TOPIC_OR_PARTITION (3); NOT_LEADER_OR_FOLLOWER (6) off the leader;
//! OFFSET_OUT_OF_RANGE (1) for an offset above the high watermark or negative other than -1
//! (-1 means the high watermark); POLICY_VIOLATION (44) when `cleanup.policy` lacks `delete`;
//! KAFKA_STORAGE_ERROR (56) when the checkpoint cannot be written; REQUEST_TIMED_OUT (7) when
//! the followers have not caught up within `timeout_ms` (the low watermark so far is returned).

use super::{authorized, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use crate::storage::partition::Partition;
use frieda_meta::controller::ControllerError;
use frieda_meta::image::MetaError;
use frieda_meta::remote_log::RemoteSegmentChange;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The high watermark, as an offset to delete up to.
const HIGH_WATERMARK: i64 = -1;
/// How often the low watermark is looked at while followers catch up, ms.
const POLL_MS: u64 = 5;
/// Longest wait for the followers whatever the request says, ms.
const MAX_TIMEOUT_MS: i32 = 60_000;

/// Handles one DeleteRecords request (see the module doc for the errors).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let deadline =
        Instant::now() + Duration::from_millis(req.timeout_ms.clamp(0, MAX_TIMEOUT_MS) as u64);
    // First every partition's start moves, then the answer waits for them all together.
    let mut pending: Vec<(usize, usize, Arc<Partition>, i64)> = Vec::new();
    let mut topics = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.into_iter().enumerate() {
        // Kafka: DELETE on the topic.
        let topic = if authorized(broker, ctx, op::DELETE, resource::TOPIC, t.name.0.as_str()) {
            broker
                .topic(t.name.0.as_str())
                .ok_or(ResponseError::UnknownTopicOrPartition)
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for (pi, dp) in t.partitions.into_iter().enumerate() {
            let result = DeleteRecordsPartitionResult::default()
                .with_partition_index(dp.partition_index)
                .with_low_watermark(-1);
            let moved = match topic.as_ref() {
                Err(e) => Err(*e),
                Ok(topic) if topic.configs.read().is_diskless(&broker.topic_defaults()) => {
                    let result =
                        match delete_diskless(broker, topic, dp.partition_index, dp.offset).await {
                            Ok(low) => result.with_low_watermark(low),
                            Err(e) => result.with_error_code(e.code()),
                        };
                    partitions.push(result);
                    continue;
                }
                Ok(topic) => match topic.replica(dp.partition_index) {
                    Ok(p) => delete_below(broker, &p, dp.offset).await.map(|o| (p, o)),
                    Err(e) => Err(e),
                },
            };
            match moved {
                Ok((p, target)) => {
                    pending.push((ti, pi, p, target));
                    partitions.push(result);
                }
                Err(e) => {
                    tracing::info!(topic = %t.name.0, partition = dp.partition_index, offset = dp.offset,
                        error = ?e, "DeleteRecords refused");
                    partitions.push(result.with_error_code(e.code()));
                }
            }
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    loop {
        let reached = pending
            .iter()
            .all(|(_, _, p, target)| low_watermark(p) >= *target);
        if reached || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
    }
    for (ti, pi, p, target) in pending {
        let low = low_watermark(&p);
        let r = &mut topics[ti].partitions[pi];
        r.low_watermark = low;
        if low < target {
            tracing::warn!(topic = %p.topic, partition = p.index, low_watermark = low, target,
                "DeleteRecords: the followers did not reach the new log start in time");
            r.error_code = ResponseError::RequestTimedOut.code();
        }
    }
    DeleteRecordsResponse::default().with_topics(topics)
}

/// Checks the request for `p` and moves its log start; returns the offset the low watermark
/// must reach.
async fn delete_below(
    broker: &Arc<Broker>,
    p: &Arc<Partition>,
    offset: i64,
) -> Result<i64, ResponseError> {
    p.repl.check_leader(-1)?;
    if p.repl.is_replicated() {
        broker.check_lease()?;
    }
    if !p.cleanup_deletes() {
        return Err(ResponseError::PolicyViolation);
    }
    let hw = p.high_watermark();
    let target = if offset == HIGH_WATERMARK { hw } else { offset };
    if target < 0 || target > hw {
        return Err(ResponseError::OffsetOutOfRange);
    }
    if p.tiered.enabled() && p.tiered.copied_end() >= 0 {
        // Records below the local log are in the remote tier too: the new start goes to the
        // metadata quorum first, where every replica's log start follows it and the leader's
        // remote-log manager expires the copies wholly below it (Kafka's segments breached by
        // the log start offset); then the local log follows if it starts below.
        if target <= p.total_log_start_offset() {
            return Ok(target);
        }
        commit_remote_log_start(broker, p, target).await?;
        p.tiered.note_deleted_below(target);
        if target <= p.log_start_offset() {
            tracing::info!(topic = %p.topic, partition = p.index, log_start_offset = target,
                "log start offset moved into the remote tier");
            return Ok(target);
        }
    }
    let part = p.clone();
    tokio::task::spawn_blocking(move || part.advance_log_start(target))
        .await
        .map_err(|_| ResponseError::UnknownServerError)??;
    Ok(target)
}

/// Commits `target` as the log start offset of tiered partition `p` in the metadata quorum
/// (`RemoteSegmentChange::LogStartMoved`, fenced by this leader's epoch), waiting at most
/// [`crate::tiering::COMMIT_TIMEOUT`].
///
/// Errors: NOT_LEADER_OR_FOLLOWER when the image has a newer leader epoch, REQUEST_TIMED_OUT
/// when the quorum does not commit in time, UNKNOWN_TOPIC_OR_PARTITION for a deleted topic.
async fn commit_remote_log_start(
    broker: &Arc<Broker>,
    p: &Arc<Partition>,
    target: i64,
) -> Result<(), ResponseError> {
    let node = broker.cluster().ok_or(ResponseError::UnknownServerError)?;
    let topic = broker
        .topic(&p.topic)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    let change = RemoteSegmentChange::LogStartMoved(target);
    crate::tiering::commit_change(node, p, topic.id, p.repl.leader_epoch(), change)
        .await
        .map(|_| ())
        .map_err(|e| {
            tracing::info!(topic = %p.topic, partition = p.index, offset = target, error = %e,
                "DeleteRecords: the new log start of a tiered partition was not committed");
            match e {
                ControllerError::Meta(MetaError::StaleLeader(_)) => {
                    ResponseError::NotLeaderOrFollower
                }
                ControllerError::Meta(MetaError::UnknownTopic(_)) => {
                    ResponseError::UnknownTopicOrPartition
                }
                _ => ResponseError::RequestTimedOut,
            }
        })
}

/// The partition's low watermark: its own log start, and on a leader its in-sync followers'.
fn low_watermark(p: &Partition) -> i64 {
    p.repl.low_watermark(p.total_log_start_offset())
}

/// DeleteRecords on partition `index` of diskless topic `topic`: its batch coordinator moves the
/// log start (issue 60; the objects left with no batch are deleted by the garbage collection,
/// not built yet). Answered once the decision is replicated; the low watermark is the new log
/// start.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); NOT_LEADER_OR_FOLLOWER (6) off the coordinator's
/// leader (Metadata names it) or while it loads; OFFSET_OUT_OF_RANGE (1); REQUEST_TIMED_OUT (7).
async fn delete_diskless(
    broker: &Broker,
    topic: &crate::storage::topic::Topic,
    index: i32,
    offset: i64,
) -> Result<i64, ResponseError> {
    if offset < HIGH_WATERMARK {
        return Err(ResponseError::OffsetOutOfRange);
    }
    let (partition, _, host) = super::fetch_diskless::diskless_host(broker, topic, index)?;
    host.delete_records(partition, offset)
        .await
        .map_err(crate::diskless::driver::route::not_served)
}
