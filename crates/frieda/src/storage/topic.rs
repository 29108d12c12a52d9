//! A topic: its id, partitions and config overrides, persisted in `meta/topics/<name>.json`.

use super::partition::Partition;
use super::topic_config::TopicConfigs;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// What is persisted of a topic (the partitions' data lives in `<topic>-<partition>/`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TopicMeta {
    /// Topic name.
    pub name: String,
    /// Topic id (KIP-516), used by Fetch v13+ and Produce v13.
    pub id: Uuid,
    /// Number of partitions.
    pub partitions: i32,
    /// Explicitly set configs (Kafka names).
    pub configs: TopicConfigs,
}

/// A live topic.
pub struct Topic {
    /// Topic name.
    pub name: Arc<str>,
    /// Topic id (KIP-516).
    pub id: Uuid,
    /// Partitions by index; grows with CreatePartitions. `None` for a partition of which this
    /// broker holds no replica (cluster mode).
    pub partitions: RwLock<Vec<Option<Arc<Partition>>>>,
    /// Explicitly set configs.
    pub configs: RwLock<TopicConfigs>,
}

/// The internal topic holding committed offsets and group metadata (read-only for clients).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The internal topic holding the transaction coordinators' state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The internal topic whose partition leaders run the batch coordinators of diskless topics
/// (issue 60; docs/diskless.md, "The batch coordinator").
pub const DISKLESS_COORDINATOR_TOPIC: &str = "__diskless_coordinator";

/// Whether `name` is an internal topic (`__consumer_offsets`, `__transaction_state`,
/// `__diskless_coordinator`).
pub fn is_internal_topic(name: &str) -> bool {
    name == OFFSETS_TOPIC || name == TRANSACTION_STATE_TOPIC || name == DISKLESS_COORDINATOR_TOPIC
}

impl Topic {
    /// Whether this is an internal topic: listed in Metadata with `is_internal`, readable,
    /// but not writable, deletable, growable or reconfigurable by clients.
    pub fn is_internal(&self) -> bool {
        is_internal_topic(&self.name)
    }

    /// Partition by index.
    pub fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        if index < 0 {
            return None;
        }
        self.partitions
            .read()
            .get(index as usize)
            .cloned()
            .flatten()
    }

    /// The replica of partition `index` on this broker, for requests only its leader serves.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6) for a partition of the topic hosted on other brokers
    /// only (cluster mode), UNKNOWN_TOPIC_OR_PARTITION (3) for an index the topic lacks.
    pub fn replica(
        &self,
        index: i32,
    ) -> Result<Arc<Partition>, kafka_protocol::error::ResponseError> {
        match self.partition(index) {
            Some(p) => Ok(p),
            None if index >= 0 && index < self.partition_count() => {
                Err(kafka_protocol::error::ResponseError::NotLeaderOrFollower)
            }
            None => Err(kafka_protocol::error::ResponseError::UnknownTopicOrPartition),
        }
    }

    /// The partitions this broker holds a replica of.
    pub fn local_partitions(&self) -> Vec<Arc<Partition>> {
        self.partitions.read().iter().flatten().cloned().collect()
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> i32 {
        self.partitions.read().len() as i32
    }

    /// The persisted form.
    pub fn meta(&self) -> TopicMeta {
        TopicMeta {
            name: self.name.to_string(),
            id: self.id,
            partitions: self.partition_count(),
            configs: self.configs.read().clone(),
        }
    }
}

/// Kafka's topic name rule: 1..=249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
/// Violations are answered with INVALID_TOPIC_EXCEPTION (17).
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert!(valid_topic_name("orders.v1_x-2"));
        assert!(!valid_topic_name(""));
        assert!(!valid_topic_name(".."));
        assert!(!valid_topic_name("a/b"));
        assert!(!valid_topic_name(&"x".repeat(250)));
    }
}
