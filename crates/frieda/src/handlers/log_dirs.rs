//! DescribeLogDirs (key 35, v1-5): the data directory, the size of each replica this broker
//! holds in it, and the file system's total and usable bytes (`kafka-log-dirs.sh`,
//! `kafka-reassign-partitions.sh`); AlterReplicaLogDirs (key 34, v1-2). Frieda has one log
//! directory, `data.dir`.

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::op;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use std::sync::Arc;

/// Replicas asked for (or all, for a null list) that this broker holds: size in bytes of
/// their segments and indexes, and `offset_lag` = how far the log end is below the high
/// watermark (0 when caught up, as Kafka reports for current logs). Total and usable bytes
/// (v4) come from `statvfs` of the data directory, -1 if it fails.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    // Kafka: DESCRIBE on the cluster (v3+ says so in the top-level error; older: no results).
    if !authorized_cluster(broker, ctx, op::DESCRIBE) {
        let resp = DescribeLogDirsResponse::default();
        return if ctx.api_version >= 3 {
            resp.with_error_code(
                kafka_protocol::error::ResponseError::ClusterAuthorizationFailed.code(),
            )
        } else {
            resp
        };
    }
    let wanted: Option<Vec<(String, Vec<i32>)>> = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.topic.0.to_string(), t.partitions))
            .collect()
    });
    let mut topics = Vec::new();
    for topic in broker.topics() {
        let only: Option<&Vec<i32>> = match &wanted {
            None => None,
            Some(w) => match w.iter().find(|(n, _)| *n == *topic.name) {
                Some((_, parts)) => Some(parts),
                None => continue,
            },
        };
        let partitions: Vec<DescribeLogDirsPartition> = topic
            .local_partitions()
            .into_iter()
            .filter(|p| only.is_none_or(|o| o.contains(&p.index)))
            .map(|p| {
                let size = p
                    .state
                    .lock()
                    .as_ref()
                    .map_or(0, |s| s.log.size_bytes() as i64);
                let lag = (p.high_watermark() - p.reader().log_end_offset()).max(0);
                DescribeLogDirsPartition::default()
                    .with_partition_index(p.index)
                    .with_partition_size(size)
                    .with_offset_lag(lag)
            })
            .collect();
        if !partitions.is_empty() {
            topics.push(
                DescribeLogDirsTopic::default()
                    .with_name(TopicName(str_bytes(&topic.name)))
                    .with_partitions(partitions),
            );
        }
    }
    let dir = broker.config.data_dir.clone();
    let (total, usable) = match rustix::fs::statvfs(&dir) {
        Ok(s) => (
            (s.f_blocks.saturating_mul(s.f_frsize)) as i64,
            (s.f_bavail.saturating_mul(s.f_frsize)) as i64,
        ),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "statvfs of the data directory failed");
            (-1, -1)
        }
    };
    let path = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut result = DescribeLogDirsResult::default()
        .with_log_dir(str_bytes(&path.to_string_lossy()))
        .with_topics(topics);
    if ctx.api_version >= 4 {
        result = result.with_total_bytes(total).with_usable_bytes(usable);
    }
    DescribeLogDirsResponse::default().with_results(vec![result])
}

/// Whether `path` names this broker's log directory (`data.dir`, as DescribeLogDirs reports it
/// or as configured; symbolic links resolved).
fn is_our_log_dir(broker: &Broker, path: &str) -> bool {
    let ours = &broker.config.data_dir;
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    std::path::Path::new(path) == ours.as_path()
        || canonical(std::path::Path::new(path)).is_some_and(|p| Some(p) == canonical(ours))
}

/// AlterReplicaLogDirs (key 34, v1-2): moves replicas between this broker's log directories
/// (`kafka-reassign-partitions.sh` with `log_dirs`). Frieda has one log directory, so every
/// replica already is where it can be. Per partition, as Kafka's `ReplicaManager`:
/// LOG_DIR_NOT_FOUND (57) for a path that is not this broker's log directory,
/// REPLICA_NOT_AVAILABLE (9) for a partition this broker holds no replica of,
/// KAFKA_STORAGE_ERROR (56) for an offline replica, none for a replica already there.
pub async fn alter_replica_log_dirs(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: kafka_protocol::messages::AlterReplicaLogDirsRequest,
) -> kafka_protocol::messages::AlterReplicaLogDirsResponse {
    use kafka_protocol::error::ResponseError;
    use kafka_protocol::messages::alter_replica_log_dirs_response::{
        AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
    };
    let mut results = Vec::new();
    // Kafka: ALTER on the cluster (every partition CLUSTER_AUTHORIZATION_FAILED otherwise).
    let allowed = authorized_cluster(broker, ctx, op::ALTER);
    for dir in req.dirs {
        let known = is_our_log_dir(broker, &dir.path);
        for t in dir.topics {
            let topic = broker.topic(t.name.0.as_str());
            let partitions = t
                .partitions
                .into_iter()
                .map(|index| {
                    let hosted = topic.as_ref().and_then(|t| t.partition(index));
                    let error = match hosted {
                        _ if !allowed => Some(ResponseError::ClusterAuthorizationFailed),
                        _ if !known => Some(ResponseError::LogDirNotFound),
                        None => Some(ResponseError::ReplicaNotAvailable),
                        Some(p) if !p.is_online() => Some(ResponseError::KafkaStorageError),
                        Some(_) => None,
                    };
                    if let Some(e) = error {
                        tracing::info!(topic = %t.name.0, partition = index, path = %dir.path,
                            error = ?e, "AlterReplicaLogDirs refused");
                    }
                    AlterReplicaLogDirPartitionResult::default()
                        .with_partition_index(index)
                        .with_error_code(error.map_or(0, |e| e.code()))
                })
                .collect();
            results.push(
                AlterReplicaLogDirTopicResult::default()
                    .with_topic_name(t.name)
                    .with_partitions(partitions),
            );
        }
    }
    kafka_protocol::messages::AlterReplicaLogDirsResponse::default().with_results(results)
}
