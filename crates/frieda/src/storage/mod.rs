//! Topics and partitions as the handlers and coordinators act on them: a partition's log with
//! its writer-owned state and waiting fetches, the log writer threads, topic configs, and the
//! checkpoint files that say what of each log is durable.
//!
//! - [`partition`]: one partition (the log's read side, appends, producer state, the replica's
//!   role, the wake-up of waiting fetches).
//! - [`leader_append`]: the leader's decision on a batch just before its append (log online,
//!   leadership, producer state), sans-IO, shared with the cluster simulator.
//! - [`writer`]: the log writer threads (group commit fsync; appends with
//!   `log.append.mode = "writer"`).
//! - [`backlog`]: the backlog read lane (reads that miss the tail cache, at idle CPU priority).
//! - [`zero_copy`]: consumers' reads of the segment files sent with `sendfile`, not copied.
//! - [`bulk`]: the bulk-append lane (large produced batches, appended off the network threads).
//! - [`topic`]: a topic (id, partitions, config overrides) and the internal topics' names.
//! - [`topic_config`]: topic-level configs under Kafka's names, mapped onto the log's.
//! - [`checkpoint`], [`log_start`]: Kafka's offset checkpoint files.
//! - [`records`]: the batches coordinators write to their internal logs, and their replay.
//!
//! Below the coordinators and the [`Broker`](crate::broker::Broker) that holds the topic
//! registry: nothing here knows of either.

pub mod backlog;
pub mod bulk;
pub mod checkpoint;
pub mod clean_shutdown;
pub mod file_budget;
pub mod leader_append;
pub mod log_start;
pub mod meta_properties;
pub mod partition;
pub mod records;
pub mod topic;
pub mod topic_config;
pub mod writer;
pub mod zero_copy;

/// Test helpers: record batches as a client encodes them.
#[cfg(test)]
pub(crate) mod testing {
    use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

    /// `record` alone in a v2 batch, uncompressed, with its parsed header.
    pub(crate) fn one_record_batch(record: &Record) -> (bytes::BytesMut, frieda_log::BatchHeader) {
        let mut buf = bytes::BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            [record],
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .expect("encode a record batch");
        let header = frieda_log::BatchHeader::parse(&buf).expect("parse the batch just encoded");
        (buf, header)
    }

    /// A one-replica `__consumer_offsets` partition 0 in `dir` (64 KiB segments, no retention,
    /// no tail cache) whose appends `writers` write: what a group or offsets test stores into.
    pub(crate) fn offsets_partition(
        dir: &std::path::Path,
        writers: &super::writer::LogWriters,
    ) -> std::sync::Arc<super::partition::Partition> {
        use super::topic_config::TopicConfigs;
        let cfg = frieda_log::LogConfig {
            segment_bytes: 64 << 10,
            retention_ms: -1,
            tail_cache_bytes: 0,
            ..frieda_log::LogConfig::default()
        };
        let (log, _) = frieda_log::PartitionLog::open(dir, cfg, crate::clock::now_ms())
            .expect("open a partition log in a temporary directory");
        let name: std::sync::Arc<str> = std::sync::Arc::from("__consumer_offsets");
        std::sync::Arc::new(super::partition::Partition::new(
            name.clone(),
            0,
            log,
            writers.for_partition(&name, 0),
            TopicConfigs::default().produce_policy(&TopicConfigs::default()),
        ))
    }

    /// One plain record (no key, timestamp 1, not idempotent) with `value`, alone in a batch.
    pub(crate) fn value_batch(value: Vec<u8>) -> (bytes::BytesMut, frieda_log::BatchHeader) {
        one_record_batch(&Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: kafka_protocol::records::TimestampType::Creation,
            offset: 0,
            sequence: -1,
            timestamp: 1,
            key: None,
            value: Some(value.into()),
            headers: Default::default(),
        })
    }
}
