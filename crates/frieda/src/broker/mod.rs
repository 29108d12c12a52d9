//! The broker's state: topics and partitions, the log writer threads, and the operations the
//! handlers act on (create, delete, grow, reconfigure topics).
//!
//! Layout of the data directory:
//! ```text
//! <data.dir>/meta/cluster.json          cluster id
//! <data.dir>/meta/topics/<topic>.json   topic id, partition count, config overrides
//! <data.dir>/meta/producer_ids          end of the last reserved producer-id block
//! <data.dir>/meta/__consumer_offsets-0/ the offsets log (committed offsets, group metadata)
//! <data.dir>/<topic>-<partition>/       the partition log (segments, indexes)
//! ```

pub mod partition;
pub mod topic;
pub mod topic_config;
pub mod writer;

use crate::config::BrokerConfig;
use crate::coordinator::group::GroupCoordinator;
use crate::coordinator::producer_ids::{write_durably, ProducerIdAllocator};
use anyhow::Context;
use frieda_log::PartitionLog;
use kafka_protocol::error::ResponseError;
use parking_lot::RwLock;
use partition::Partition;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use topic::{valid_topic_name, Topic, TopicMeta, OFFSETS_TOPIC};
use topic_config::{ConfigError, TopicConfigs};
use uuid::Uuid;
use writer::{now_ms, LogWriters, WriterJob, WriterOptions};

/// An admin operation's failure: the Kafka error code and a message for the response.
#[derive(Debug, Clone)]
pub struct AdminError {
    /// Error to answer with.
    pub code: ResponseError,
    /// Human-readable detail (`error_message` in responses that have one).
    pub message: String,
}

impl AdminError {
    fn new(code: ResponseError, message: impl Into<String>) -> Self {
        AdminError {
            code,
            message: message.into(),
        }
    }
}

impl From<ConfigError> for AdminError {
    fn from(e: ConfigError) -> Self {
        AdminError::new(ResponseError::InvalidConfig, e.to_string())
    }
}

/// The broker: everything handlers need, shared by all connections.
pub struct Broker {
    /// Static configuration.
    pub config: BrokerConfig,
    /// Cluster id (a random base64 UUID made on first start, as Kafka's storage format does).
    pub cluster_id: String,
    topics: RwLock<HashMap<Arc<str>, Arc<Topic>>>,
    topic_ids: RwLock<HashMap<Uuid, Arc<Topic>>>,
    writers: parking_lot::Mutex<Option<LogWriters>>,
    /// Producer id allocation for InitProducerId.
    pub producer_ids: ProducerIdAllocator,
    admin: tokio::sync::Mutex<()>,
    meta_dir: PathBuf,
    /// Consumer groups and committed offsets.
    pub groups: Arc<GroupCoordinator>,
}

impl Broker {
    /// Opens the data directory: recovers every topic's partitions (torn tails truncated).
    pub fn open(config: BrokerConfig) -> anyhow::Result<Arc<Broker>> {
        let data_dir = config.data_dir.clone();
        let meta_dir = data_dir.join("meta");
        std::fs::create_dir_all(meta_dir.join("topics"))
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let cluster_id = load_cluster_id(&meta_dir)?;
        let writers = LogWriters::start_with(
            config.log_writer_threads,
            WriterOptions {
                append_mode: config.log_append_mode,
                group_commit: config.log_group_commit,
                batched_wakeups: config.fetch_batched_wakeups,
            },
        );
        let producer_ids = ProducerIdAllocator::open(&meta_dir)?;
        let groups = Arc::new(open_offsets_log(&config, &meta_dir, &writers)?);
        let broker = Broker {
            config,
            cluster_id,
            topics: RwLock::new(HashMap::new()),
            topic_ids: RwLock::new(HashMap::new()),
            writers: parking_lot::Mutex::new(Some(writers)),
            producer_ids,
            admin: tokio::sync::Mutex::new(()),
            meta_dir,
            groups,
        };
        let mut metas = Vec::new();
        for entry in std::fs::read_dir(broker.meta_dir.join("topics"))? {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path)?;
            let meta: TopicMeta = serde_json::from_str(&text)
                .with_context(|| format!("parsing topic metadata {}", path.display()))?;
            metas.push(meta);
        }
        metas.sort_by(|a, b| a.name.cmp(&b.name));
        broker.insert(broker.offsets_topic());
        for meta in metas {
            let topic = broker.open_topic(&meta, meta.partitions)?;
            broker.insert(topic);
        }
        tracing::info!(
            topics = broker.topics.read().len(),
            data_dir = %data_dir.display(),
            cluster_id = %broker.cluster_id,
            "broker state recovered"
        );
        Ok(Arc::new(broker))
    }

    /// The offsets log as the internal topic `__consumer_offsets` (one partition; its id is
    /// derived from the cluster id so it stays the same across restarts).
    fn offsets_topic(&self) -> Arc<Topic> {
        let mut id = [0u8; 16];
        let mut h: u64 = 0xcbf29ce484222325;
        for (i, b) in self
            .cluster_id
            .bytes()
            .chain(*b"__consumer_offsets")
            .enumerate()
        {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
            id[i % 16] ^= (h >> 32) as u8;
        }
        let mut configs = TopicConfigs::default();
        let _ = configs.set("cleanup.policy", "compact");
        Arc::new(Topic {
            name: Arc::from(OFFSETS_TOPIC),
            id: Uuid::from_bytes(id),
            partitions: RwLock::new(vec![self.groups.offsets.partition().clone()]),
            configs: RwLock::new(configs),
        })
    }

    fn partition_dir(&self, topic: &str, index: i32) -> PathBuf {
        self.config.data_dir.join(format!("{topic}-{index}"))
    }

    fn open_partition(
        &self,
        topic: &Arc<str>,
        index: i32,
        configs: &TopicConfigs,
    ) -> anyhow::Result<Arc<Partition>> {
        let dir = self.partition_dir(topic, index);
        let log_config = configs.log_config(&self.config.topic_defaults);
        let (log, report) = PartitionLog::open(&dir, log_config, now_ms())
            .with_context(|| format!("opening partition log {}", dir.display()))?;
        if report.truncated_bytes > 0 {
            tracing::warn!(topic = %topic, partition = index, truncated_bytes = report.truncated_bytes,
                log_end_offset = report.log_end_offset, "recovered a torn log tail");
        }
        let writer = self
            .writers
            .lock()
            .as_ref()
            .map(|w| w.for_partition(topic, index))
            .context("broker is shutting down")?;
        Ok(Arc::new(Partition::new(topic.clone(), index, log, writer)))
    }

    fn open_topic(&self, meta: &TopicMeta, partitions: i32) -> anyhow::Result<Arc<Topic>> {
        let name: Arc<str> = Arc::from(meta.name.as_str());
        let parts = (0..partitions)
            .map(|i| self.open_partition(&name, i, &meta.configs))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Arc::new(Topic {
            name,
            id: meta.id,
            partitions: RwLock::new(parts),
            configs: RwLock::new(meta.configs.clone()),
        }))
    }

    fn insert(&self, topic: Arc<Topic>) {
        self.topic_ids.write().insert(topic.id, topic.clone());
        self.topics.write().insert(topic.name.clone(), topic);
    }

    fn persist(&self, topic: &Topic) -> std::io::Result<()> {
        let meta = topic.meta();
        let text = serde_json::to_string_pretty(&meta).map_err(std::io::Error::other)?;
        write_durably(
            &self
                .meta_dir
                .join("topics")
                .join(format!("{}.json", meta.name)),
            &text,
        )
    }

    /// Topic by name.
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    /// Topic by id (KIP-516).
    pub fn topic_by_id(&self, id: &Uuid) -> Option<Arc<Topic>> {
        self.topic_ids.read().get(id).cloned()
    }

    /// A topic as Produce/Fetch name it: by id from v13 (KIP-516), by name before. The error is
    /// what each of its partitions gets when the topic is unknown: UNKNOWN_TOPIC_ID (100) or
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    pub fn find_topic(
        &self,
        by_id: bool,
        name: &str,
        id: &Uuid,
    ) -> Result<Arc<Topic>, ResponseError> {
        if by_id {
            self.topic_by_id(id).ok_or(ResponseError::UnknownTopicId)
        } else {
            self.topic(name)
                .ok_or(ResponseError::UnknownTopicOrPartition)
        }
    }

    /// All topics, sorted by name.
    pub fn topics(&self) -> Vec<Arc<Topic>> {
        let mut v: Vec<_> = self.topics.read().values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Creates a topic. `partitions` -1 means `num.partitions`; `validate_only` checks without
    /// creating. Errors: TOPIC_ALREADY_EXISTS (36), INVALID_TOPIC_EXCEPTION (17),
    /// INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38), INVALID_CONFIG (40),
    /// KAFKA_STORAGE_ERROR (56) if the disk refuses.
    pub async fn create_topic(
        self: &Arc<Self>,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<Arc<Topic>, AdminError> {
        if !valid_topic_name(name) {
            return Err(AdminError::new(
                ResponseError::InvalidTopicException,
                format!("topic name `{name}` is illegal: use 1-249 of [a-zA-Z0-9._-]"),
            ));
        }
        let partitions = if partitions == -1 {
            self.config.num_partitions
        } else {
            partitions
        };
        if partitions < 1 {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                "number of partitions must be at least 1",
            ));
        }
        if replication_factor != -1 && replication_factor != 1 {
            return Err(AdminError::new(
                ResponseError::InvalidReplicationFactor,
                format!(
                    "replication factor {replication_factor} is larger than the 1 available broker"
                ),
            ));
        }
        let mut topic_configs = TopicConfigs::default();
        for (k, v) in configs {
            match v {
                Some(v) => topic_configs.set(k, v)?,
                None => {
                    return Err(AdminError::new(
                        ResponseError::InvalidConfig,
                        format!("null value for config `{k}`"),
                    ))
                }
            }
        }
        let _admin = self.admin.lock().await;
        if let Some(existing) = self.topic(name) {
            return Err(AdminError::new(
                ResponseError::TopicAlreadyExists,
                format!("topic `{}` already exists", existing.name),
            ));
        }
        let meta = TopicMeta {
            name: name.to_string(),
            id: Uuid::new_v4(),
            partitions,
            configs: topic_configs,
        };
        if validate_only {
            return Ok(Arc::new(Topic {
                name: Arc::from(name),
                id: meta.id,
                partitions: RwLock::new(Vec::new()),
                configs: RwLock::new(meta.configs),
            }));
        }
        let broker = self.clone();
        let topic = tokio::task::spawn_blocking(move || -> anyhow::Result<Arc<Topic>> {
            let topic = broker.open_topic(&meta, meta.partitions)?;
            broker.persist(&topic)?;
            Ok(topic)
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| {
            tracing::error!(topic = name, error = %format!("{e:#}"), "creating topic failed");
            AdminError::new(ResponseError::KafkaStorageError, format!("{e:#}"))
        })?;
        self.insert(topic.clone());
        tracing::info!(topic = name, partitions, id = %topic.id, "created topic");
        Ok(topic)
    }

    /// Creates a topic named in a Metadata request if auto-creation is on; returns it either way
    /// if it exists. Errors as [`Broker::create_topic`], or UNKNOWN_TOPIC_OR_PARTITION (3) when
    /// auto-creation is off.
    pub async fn get_or_auto_create(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Arc<Topic>, AdminError> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        if !self.config.auto_create_topics {
            return Err(AdminError::new(
                ResponseError::UnknownTopicOrPartition,
                "unknown topic",
            ));
        }
        match self.create_topic(name, -1, -1, &[], false).await {
            Ok(t) => Ok(t),
            Err(e) if e.code == ResponseError::TopicAlreadyExists => self
                .topic(name)
                .ok_or_else(|| AdminError::new(ResponseError::UnknownTopicOrPartition, "raced")),
            Err(e) => Err(e),
        }
    }

    /// Deletes a topic and its data. Errors: UNKNOWN_TOPIC_OR_PARTITION (3).
    pub async fn delete_topic(self: &Arc<Self>, topic: Arc<Topic>) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        let _admin = self.admin.lock().await;
        if self.topics.read().get(&topic.name).map(|t| t.id) != Some(topic.id) {
            return Err(AdminError::new(
                ResponseError::UnknownTopicOrPartition,
                "unknown topic",
            ));
        }
        self.topics.write().remove(&topic.name);
        self.topic_ids.write().remove(&topic.id);
        let meta_file = self
            .meta_dir
            .join("topics")
            .join(format!("{}.json", topic.name));
        let name = topic.name.clone();
        let result = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            std::fs::remove_file(&meta_file)?;
            for p in topic.partitions.read().iter() {
                p.mark_deleted();
                if let Some(state) = p.state.lock().take() {
                    if let Err(e) = state.log.delete() {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "could not remove partition directory");
                    }
                }
            }
            Ok(())
        })
        .await;
        match result {
            Ok(Ok(())) => {
                tracing::info!(topic = %name, "deleted topic");
                Ok(())
            }
            Ok(Err(e)) => Err(AdminError::new(
                ResponseError::KafkaStorageError,
                e.to_string(),
            )),
            Err(e) => Err(AdminError::new(
                ResponseError::UnknownServerError,
                e.to_string(),
            )),
        }
    }

    /// Grows a topic to `count` partitions. Errors: INVALID_PARTITIONS (37) if not larger.
    pub async fn create_partitions(
        self: &Arc<Self>,
        topic: Arc<Topic>,
        count: i32,
        validate_only: bool,
    ) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        let _admin = self.admin.lock().await;
        let current = topic.partition_count();
        if count <= current {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                format!(
                    "topic currently has {current} partitions, {count} would not be an increase"
                ),
            ));
        }
        if validate_only {
            return Ok(());
        }
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            let configs = topic.configs.read().clone();
            for i in current..count {
                let p = broker.open_partition(&topic.name, i, &configs)?;
                topic.partitions.write().push(p);
            }
            broker.persist(&topic)?;
            tracing::info!(topic = %topic.name, from = current, to = count, "added partitions");
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, format!("{e:#}")))
    }

    /// Replaces a topic's explicit configs (already validated) and applies them to its logs.
    pub async fn set_topic_configs(
        self: &Arc<Self>,
        topic: Arc<Topic>,
        configs: TopicConfigs,
    ) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        let _admin = self.admin.lock().await;
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let log_config = configs.log_config(&broker.config.topic_defaults);
            *topic.configs.write() = configs;
            broker.persist(&topic)?;
            for p in topic.partitions.read().iter() {
                p.set_log_config(log_config.clone());
            }
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }

    /// Queues upkeep (time-based flush; retention when `retention`) for every partition on its
    /// writer thread.
    pub fn schedule_maintenance(&self, retention: bool) {
        for topic in self.topics() {
            for p in topic.partitions.read().iter() {
                p.writer().send(WriterJob::Maintain {
                    partition: p.clone(),
                    retention,
                });
            }
        }
    }

    /// Stops the writers (after their queued appends) and closes every log, flushing it.
    pub fn shutdown(&self) {
        if let Some(w) = self.writers.lock().take() {
            w.stop();
        }
        for topic in self.topics() {
            for p in topic.partitions.read().iter() {
                p.mark_deleted();
                if let Some(state) = p.state.lock().take() {
                    if let Err(e) = state.log.close() {
                        tracing::error!(topic = %p.topic, partition = p.index, error = %e, "closing log failed");
                    }
                }
            }
        }
        if let Some(state) = self.groups.offsets.partition().state.lock().take() {
            if let Err(e) = state.log.close() {
                tracing::error!(error = %e, "closing the offsets log failed");
            }
        }
    }
}

/// Internal topics are not changed by clients: INVALID_TOPIC_EXCEPTION (17).
fn refuse_internal(topic: &Topic) -> Result<(), AdminError> {
    if topic.is_internal() {
        return Err(AdminError::new(
            ResponseError::InvalidTopicException,
            format!("`{}` is an internal topic", topic.name),
        ));
    }
    Ok(())
}

/// Opens the offsets log (not a topic: never listed, fetched or deleted by clients) and the
/// group coordinator on it. It keeps the broker's flush policy but never expires by time or
/// size: compaction by rewriting bounds it instead.
fn open_offsets_log(
    config: &BrokerConfig,
    meta_dir: &Path,
    writers: &LogWriters,
) -> anyhow::Result<GroupCoordinator> {
    let name: Arc<str> = Arc::from("__consumer_offsets");
    let dir = meta_dir.join("__consumer_offsets-0");
    let mut log_config = TopicConfigs::default().log_config(&config.topic_defaults);
    log_config.retention_ms = -1;
    log_config.retention_bytes = -1;
    log_config.segment_bytes = 16 << 20;
    log_config.max_message_bytes = usize::MAX / 2;
    log_config.tail_cache_bytes = 0;
    let (log, report) = PartitionLog::open(&dir, log_config, now_ms())
        .with_context(|| format!("opening the offsets log {}", dir.display()))?;
    if report.truncated_bytes > 0 {
        tracing::warn!(
            truncated_bytes = report.truncated_bytes,
            "recovered a torn tail of the offsets log"
        );
    }
    let partition = Arc::new(Partition::new(
        name.clone(),
        0,
        log,
        writers.for_partition(&name, 0),
    ));
    GroupCoordinator::open(partition, config.coordinator.clone())
}

fn load_cluster_id(meta_dir: &Path) -> anyhow::Result<String> {
    let path = meta_dir.join("cluster.json");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if let Some(id) = v.get("cluster_id").and_then(|s| s.as_str()) {
            return Ok(id.to_string());
        }
    }
    // Kafka cluster ids are 22-character URL-safe base64 UUIDs.
    let id = base64_url(Uuid::new_v4().as_bytes());
    write_durably(&path, &serde_json::json!({ "cluster_id": id }).to_string())?;
    Ok(id)
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in bytes {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            out.push(ALPHABET[((acc >> bits) & 63) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((acc << (6 - bits)) & 63) as usize] as char);
    }
    out
}
