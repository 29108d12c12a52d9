//! The broker's state: the registry of topics (each a [`crate::storage::topic::Topic`] of
//! [`crate::storage::partition::Partition`]s), the log writer threads and the log cleaner, the
//! group and transaction coordinators, the cluster membership handle, and the operations the
//! handlers act on (create, delete, grow, reconfigure topics; feature levels, credentials and
//! ACLs), persisted locally on a single broker and through the controller in a cluster
//! ([`cluster_admin`], [`features_admin`], [`security_admin`]).
//!
//! Layout of the data directory:
//! ```text
//! <data.dir>/.lock                             held (flock) while a broker uses the directory
//! <data.dir>/recovery-point-offset-checkpoint  fsync'ed offsets per partition (Kafka's format)
//! <data.dir>/cleaner-offset-checkpoint         where the log cleaner goes on (Kafka's format)
//! <data.dir>/meta/cluster.json                 cluster id
//! <data.dir>/meta/topics/<topic>.json          topic id, partition count, config overrides
//! <data.dir>/meta/producer_ids                 end of the last reserved producer-id block
//! <data.dir>/meta/__consumer_offsets-0/        the offsets log (committed offsets, group metadata)
//! <data.dir>/meta/__transaction_state-0/       the transaction log (transactional ids' states)
//! <data.dir>/<topic>-<partition>/              the partition log (segments, indexes)
//! ```
//!
//! Persist before apply: every change to a topic (create, delete, configs, partitions) is written
//! durably to `meta/` before memory changes, so a failed write changes nothing and a crash
//! leaves either the old or the new state.
//!
//! In a cluster the topics come from the metadata image instead of `meta/topics/` (see
//! [`replicas`]): each partition directory holds Kafka's `partition.metadata` (the topic id),
//! `replication-offset-checkpoint` keeps the high watermarks, and `__consumer_offsets` is an
//! ordinary replicated topic with `offsets.topic.num.partitions` partitions.

pub mod cleaner;
pub mod cluster_admin;
pub mod dynamic_config;
pub mod features_admin;
pub mod group_config;
pub mod replicas;
pub mod security_admin;
pub mod txn_markers;
pub mod txn_verify;

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::coordinator::group::GroupCoordinator;
use crate::coordinator::producer_ids::ProducerIdAllocator;
use crate::coordinator::registry::GroupCoordinators;
use crate::coordinator::transaction::{IdSource, TransactionCoordinators};
use crate::durable::{self, DurableError};
use crate::membership::ClusterNode;
use crate::storage::partition::Partition;
use crate::storage::topic::{
    valid_topic_name, Topic, TopicMeta, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC,
};
use crate::storage::topic_config::{ConfigError, TopicConfigs};
use crate::storage::writer::{LogWriters, Upkeep, WriterJob, WriterOptions};
use crate::storage::{checkpoint, log_start};
use anyhow::Context;
use frieda_log::PartitionLog;
use kafka_protocol::error::ResponseError;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use uuid::Uuid;

/// An admin operation's failure: the Kafka error code and a message for the response.
#[derive(Debug, Clone)]
pub struct AdminError {
    /// Error to answer with.
    pub code: ResponseError,
    /// Human-readable detail (`error_message` in responses that have one).
    pub message: String,
}

impl AdminError {
    pub(crate) fn new(code: ResponseError, message: impl Into<String>) -> Self {
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
    /// Consumer groups and committed offsets (one coordinator per offsets partition led here).
    pub groups: Arc<GroupCoordinators>,
    /// Transaction coordinators (one per `__transaction_state` partition led here).
    pub txns: Arc<TransactionCoordinators>,
    /// The single broker's transaction log (`meta/__transaction_state-0`), loaded by
    /// [`start_transactions`](Self::start_transactions).
    txn_log: Option<Arc<Partition>>,
    /// Cluster membership (cluster mode), set once at start.
    cluster: OnceLock<Arc<ClusterNode>>,
    /// Reads from the remote tier (KIP-405), set once the remote-log manager started.
    remote: OnceLock<crate::remote::RemoteAccess>,
    /// Diskless topics' coordinators and append path (issue 60), set with the remote tier.
    diskless: OnceLock<Arc<crate::diskless::driver::Diskless>>,
    /// Checkpointed recovery points not yet used by a partition opened (cluster mode opens
    /// partitions as the metadata image assigns them).
    startup_recovery: parking_lot::Mutex<checkpoint::Offsets>,
    /// Checkpointed high watermarks (`replication-offset-checkpoint`), taken by each replica
    /// opened (cluster mode).
    startup_hw: parking_lot::Mutex<checkpoint::Offsets>,
    /// The log cleaner's per-log state (checkpoints), shared so topic creation can reset it.
    pub(crate) cleaner_state: cleaner::CleanerState,
    /// Dynamic broker configs (single broker: `meta/broker-configs.json`; cluster: the image's).
    dynamic_configs: RwLock<dynamic_config::BrokerConfigSets>,
    /// Group configs by group id (single broker: `meta/group-configs.json`; cluster: the
    /// image's).
    group_configs: RwLock<Arc<crate::coordinator::group::config::GroupConfigSets>>,
    /// The topic defaults in force: the static ones with the dynamic configs over them.
    topic_defaults: RwLock<Arc<TopicConfigs>>,
    /// Log start offsets moved inside a segment (DeleteRecords), persisted before applied.
    pub(crate) log_starts: Arc<log_start::LogStartCheckpoint>,
    /// Request and connection counters for the metrics endpoint (recording only with
    /// `metrics.listen` set).
    pub stats: Arc<crate::stats::BrokerStats>,
    /// Listener security (TLS, SASL), SCRAM credentials and the authorizer.
    pub security: Arc<crate::security::Security>,
    /// Finalized feature levels (KIP-584) in force: `meta/features.json` on a single broker,
    /// the metadata image in a cluster.
    pub features: crate::features::FeatureLevels,
    /// The data directory's `.lock`, held for the broker's life (released when the file closes).
    _dir_lock: std::fs::File,
    /// The previous run stopped cleanly ([`clean_shutdown`](crate::storage::clean_shutdown)):
    /// said at registration, so a crashed broker leaves every ELR (KIP-966).
    pub previous_run_clean: bool,
}

impl Broker {
    /// Opens the data directory: locks it, recovers every topic's partitions (segments above
    /// the checkpointed recovery point validated, torn tails truncated), finishes deletions a
    /// crash interrupted and sets aside partition directories no topic owns.
    ///
    /// Errors: the data directory is locked by another process; `meta/cluster.json`,
    /// `meta/producer_ids` or a topic file is unreadable or corrupt (named in the message:
    /// refusing to start beats reusing producer ids or changing the cluster id); a log cannot
    /// be opened.
    pub fn open(config: BrokerConfig) -> anyhow::Result<Arc<Broker>> {
        let data_dir = config.data_dir.clone();
        let meta_dir = data_dir.join("meta");
        frieda_log::create_dir_durably(&meta_dir.join("topics"))
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let dir_lock = lock_data_dir(&data_dir)?;
        let previous_run_clean =
            crate::storage::clean_shutdown::take(&data_dir).with_context(|| {
                format!(
                    "removing the clean-shutdown marker in {}",
                    data_dir.display()
                )
            })?;
        let cluster_id = load_cluster_id(&meta_dir)?;
        finish_deletions(&data_dir);
        let recovery = checkpoint::read(&data_dir.join(checkpoint::RECOVERY_POINT_FILE));
        let writers = LogWriters::start_with(
            config.log_writer_threads,
            WriterOptions {
                append_mode: config.log_append_mode,
                group_commit: config.log_group_commit,
                batched_wakeups: config.fetch_batched_wakeups,
            },
        );
        crate::storage::backlog::start(config.backlog);
        crate::storage::bulk::start(config.bulk);
        let producer_ids = ProducerIdAllocator::open(&meta_dir)?;
        let clustered = config.cluster.enabled();
        // A cluster takes its dynamic configs from the metadata image (the reconciler).
        let dynamic = if clustered {
            dynamic_config::BrokerConfigSets::new()
        } else {
            dynamic_config::load(&meta_dir)?
        };
        let group_configs = if clustered {
            Default::default()
        } else {
            group_config::load(&meta_dir)?
        };
        let topic_defaults = Arc::new(dynamic_config::effective_defaults(
            &config.topic_defaults,
            &dynamic,
            config.node_id,
        ));
        let groups = if clustered {
            GroupCoordinators::cluster(config.coordinator.clone())
        } else {
            let offsets_rp = recovery
                .get(&(OFFSETS_TOPIC.to_string(), 0))
                .copied()
                .unwrap_or(0);
            GroupCoordinators::single(open_offsets_log(
                &config,
                &topic_defaults,
                &meta_dir,
                &writers,
                offsets_rp,
            )?)
        };
        let txn_log = if clustered {
            None
        } else {
            let rp = recovery
                .get(&(TRANSACTION_STATE_TOPIC.to_string(), 0))
                .copied()
                .unwrap_or(0);
            Some(open_internal_log(
                &config,
                &topic_defaults,
                &meta_dir,
                &writers,
                TRANSACTION_STATE_TOPIC,
                transaction_topic_configs(&config),
                rp,
            )?)
        };
        let txns = TransactionCoordinators::new(
            config.transactions.clone(),
            if clustered { 0 } else { 1 },
        );
        let startup_hw = checkpoint::read(&data_dir.join(replicas::HIGH_WATERMARK_FILE));
        let stats = Arc::new(crate::stats::BrokerStats::new(
            config.metrics_listen.is_some(),
        ));
        let security = Arc::new(crate::security::Security::new(
            &config.security,
            // The controller listener's TLS and SASL too (the quorum's transport uses them).
            &config.listener_protocols(),
        )?);
        if !clustered {
            // A cluster takes its credentials and ACLs from the metadata image (the reconciler).
            let stored = security_admin::load(&meta_dir)?;
            security.apply(
                &stored.scram_credentials,
                &stored.acls,
                &stored.client_quotas,
                &stored.delegation_tokens,
            );
        }
        let broker = Broker {
            config,
            cluster_id,
            topics: RwLock::new(HashMap::new()),
            topic_ids: RwLock::new(HashMap::new()),
            writers: parking_lot::Mutex::new(Some(writers)),
            producer_ids,
            admin: tokio::sync::Mutex::new(()),
            meta_dir,
            groups: Arc::new(groups),
            txns,
            txn_log,
            cluster: OnceLock::new(),
            remote: OnceLock::new(),
            diskless: OnceLock::new(),
            startup_recovery: parking_lot::Mutex::new(recovery.clone()),
            startup_hw: parking_lot::Mutex::new(startup_hw),
            cleaner_state: cleaner::CleanerState::load(&data_dir),
            log_starts: Arc::new(log_start::LogStartCheckpoint::load(&data_dir)),
            dynamic_configs: RwLock::new(dynamic),
            group_configs: RwLock::new(Arc::new(group_configs)),
            topic_defaults: RwLock::new(topic_defaults),
            stats,
            security,
            features: Default::default(),
            _dir_lock: dir_lock,
            previous_run_clean,
        };
        if !clustered {
            // A cluster takes its levels from the metadata image (the reconciler).
            broker.features.set(features_admin::load(&broker.meta_dir)?);
        }
        if clustered {
            // Topics and their replicas come from the metadata image once the quorum is up.
            tracing::info!(data_dir = %data_dir.display(), "broker state opened; partitions follow the cluster metadata");
            return Ok(Arc::new(broker));
        }
        let mut metas = Vec::new();
        for entry in std::fs::read_dir(broker.meta_dir.join("topics"))? {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading topic metadata {}", path.display()))?;
            let meta: TopicMeta = serde_json::from_str(&text)
                .with_context(|| format!("parsing topic metadata {}", path.display()))?;
            metas.push(meta);
        }
        metas.sort_by(|a, b| a.name.cmp(&b.name));
        broker.insert(broker.offsets_topic());
        if let Some(p) = &broker.txn_log {
            broker.insert(broker.internal_topic(
                TRANSACTION_STATE_TOPIC,
                Some(p.clone()),
                transaction_topic_configs(&broker.config),
            ));
        }
        for meta in &metas {
            let topic = broker.open_topic(meta, meta.partitions, Some(&recovery))?;
            broker.insert(topic);
        }
        set_aside_strays(&data_dir, &metas);
        tracing::info!(
            topics = broker.topics.read().len(),
            data_dir = %data_dir.display(),
            cluster_id = %broker.cluster_id,
            "broker state recovered"
        );
        Ok(Arc::new(broker))
    }

    /// The offsets log as the internal topic `__consumer_offsets` (one partition).
    fn offsets_topic(&self) -> Arc<Topic> {
        let partition = self
            .groups
            .all()
            .first()
            .map(|c| c.offsets.partition().clone());
        self.internal_topic(
            OFFSETS_TOPIC,
            partition,
            offsets_topic_configs(&self.config),
        )
    }

    /// A single broker's internal log as a one-partition internal topic; its id is derived
    /// from the cluster id and the name, so it stays the same across restarts.
    fn internal_topic(
        &self,
        name: &str,
        partition: Option<Arc<Partition>>,
        configs: TopicConfigs,
    ) -> Arc<Topic> {
        let mut id = [0u8; 16];
        let mut h: u64 = 0xcbf29ce484222325;
        for (i, b) in self.cluster_id.bytes().chain(name.bytes()).enumerate() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
            id[i % 16] ^= (h >> 32) as u8;
        }
        Arc::new(Topic {
            name: Arc::from(name),
            id: Uuid::from_bytes(id),
            partitions: RwLock::new(vec![partition]),
            configs: RwLock::new(configs),
        })
    }

    /// A fresh producer id: from the single broker's durable allocator, or a cluster's
    /// controller blocks (KIP-730).
    ///
    /// Errors: KAFKA_STORAGE_ERROR (56) when the block cannot be reserved on disk,
    /// COORDINATOR_NOT_AVAILABLE (15) when the controller gives none.
    pub async fn next_producer_id(self: &Arc<Self>) -> Result<i64, ResponseError> {
        if let Some(node) = self.cluster() {
            return node.next_producer_id().await;
        }
        let broker = self.clone();
        match tokio::task::spawn_blocking(move || broker.producer_ids.next_id()).await {
            Ok(Ok(id)) => Ok(id),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "could not reserve producer ids");
                Err(ResponseError::KafkaStorageError)
            }
            Err(_) => Err(ResponseError::UnknownServerError),
        }
    }

    /// Connects the transaction coordinators to this broker (producer ids, the marker writer)
    /// and, on a single broker, loads its transaction log (resuming the markers of prepared
    /// transactions). Call once, in the runtime, before serving.
    ///
    /// Errors: the transaction log cannot be replayed.
    pub fn start_transactions(self: &Arc<Self>) -> anyhow::Result<()> {
        let weak = Arc::downgrade(self);
        let ids: IdSource = Arc::new(move || {
            let broker = weak.upgrade();
            Box::pin(async move {
                match broker {
                    Some(b) => b.next_producer_id().await,
                    None => Err(ResponseError::CoordinatorNotAvailable),
                }
            })
        });
        self.txns
            .attach(ids, Arc::new(txn_markers::BrokerMarkers::new(self)));
        if let Some(p) = &self.txn_log {
            self.txns.load(0, 0, p.clone())?;
        }
        Ok(())
    }

    pub(crate) fn partition_dir(&self, topic: &str, index: i32) -> PathBuf {
        self.config.data_dir.join(format!("{topic}-{index}"))
    }

    /// Opens one partition's log. `recovery` holds the checkpointed recovery points of an
    /// existing partition; `None` means a new partition, whose directory must start empty (one
    /// left by a crash in the middle of a deletion is removed first).
    pub(crate) fn open_partition(
        &self,
        topic: &Arc<str>,
        index: i32,
        configs: &TopicConfigs,
        recovery: Option<&checkpoint::Offsets>,
    ) -> anyhow::Result<Arc<Partition>> {
        self.open_partition_as(topic, index, configs, recovery, false)
    }

    /// [`open_partition`](Self::open_partition); `made_empty`: a new partition whose directory
    /// [`create_partition_dirs`](Self::create_partition_dirs) just made, so there is nothing in
    /// it to check, remove or recover.
    fn open_partition_as(
        &self,
        topic: &Arc<str>,
        index: i32,
        configs: &TopicConfigs,
        recovery: Option<&checkpoint::Offsets>,
        made_empty: bool,
    ) -> anyhow::Result<Arc<Partition>> {
        let dir = self.partition_dir(topic, index);
        let made_empty = made_empty && recovery.is_none();
        let recovery_point = match recovery {
            Some(points) => points
                .get(&(topic.to_string(), index))
                .copied()
                .unwrap_or(0),
            None => {
                // An empty directory is what `create_partition_dirs` just made.
                if !made_empty && dir.exists() && !dir_is_empty(&dir) {
                    tracing::warn!(dir = %dir.display(), "removing a partition directory left by an interrupted deletion");
                    std::fs::remove_dir_all(&dir)
                        .with_context(|| format!("removing stale {}", dir.display()))?;
                }
                // A deleted namesake's log start must not apply to the new log.
                self.log_starts
                    .forget(topic, index)
                    .context("writing the log start offset checkpoint")?;
                0
            }
        };
        let defaults = self.topic_defaults();
        let mut log_config = configs.log_config(&defaults);
        if &**topic == OFFSETS_TOPIC {
            // Group metadata records are as large as the group's assignment; nothing reads
            // the offsets log but its coordinator.
            log_config.max_message_bytes = usize::MAX / 2;
            log_config.tail_cache_bytes = 0;
        }
        let log = if made_empty {
            PartitionLog::create_in_empty(&frieda_log::LogDir::os(&dir), log_config, now_ms())
                .with_context(|| format!("creating partition log {}", dir.display()))?
        } else {
            self.open_partition_log(topic, index, &dir, log_config, recovery, recovery_point)?
        };
        let writer = self
            .writers
            .lock()
            .as_ref()
            .map(|w| w.for_partition(topic, index))
            .context("broker is shutting down")?;
        let policy = configs.produce_policy(&defaults);
        Ok(Arc::new(
            Partition::new(topic.clone(), index, log, writer, policy)
                .with_log_starts(self.log_starts.clone()),
        ))
    }

    /// Opens (and recovers) the partition log in `dir`, with its DeleteRecords log start.
    fn open_partition_log(
        &self,
        topic: &Arc<str>,
        index: i32,
        dir: &Path,
        log_config: frieda_log::LogConfig,
        recovery: Option<&checkpoint::Offsets>,
        recovery_point: i64,
    ) -> anyhow::Result<PartitionLog> {
        let (mut log, report) = PartitionLog::open_from(dir, log_config, now_ms(), recovery_point)
            .with_context(|| format!("opening partition log {}", dir.display()))?;
        if let Some(start) = recovery.and(self.log_starts.get(topic, index)) {
            // Records deleted by DeleteRecords stay deleted across the restart.
            log.advance_log_start(start)
                .and_then(frieda_log::RemovedSegments::delete_files)
                .with_context(|| format!("restoring the log start offset of {}", dir.display()))?;
        }
        if report.truncated_bytes > 0 {
            tracing::warn!(topic = %topic, partition = index, truncated_bytes = report.truncated_bytes,
                dropped_segments = report.dropped_segments,
                log_end_offset = report.log_end_offset, "recovered a torn log tail");
        }
        if report.validated_segments > 0 {
            tracing::debug!(topic = %topic, partition = index, validated = report.validated_segments,
                recovery_point, "validated segments above the recovery point");
        }
        Ok(log)
    }

    /// Creates the directories of the new partitions `indexes` of `topic` (empty; one left by
    /// an interrupted deletion is removed when its partition is opened) with one fsync of the
    /// data directory for all of them: opening each alone fsyncs the data directory once per
    /// partition (4,000 fsyncs for a topic of 4,000 partitions; issue 58 goal 7).
    ///
    /// Returns, for each partition, whether its directory was made here (so is empty) rather
    /// than found.
    ///
    /// Errors: the directory creation's or the fsync's.
    fn create_partition_dirs(
        &self,
        topic: &str,
        indexes: std::ops::Range<i32>,
    ) -> anyhow::Result<Vec<bool>> {
        let mut made = Vec::with_capacity(indexes.len());
        for i in indexes {
            let dir = self.partition_dir(topic, i);
            match std::fs::create_dir(&dir) {
                Ok(()) => made.push(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => made.push(false),
                Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
            }
        }
        sync_dir(&self.config.data_dir)
            .with_context(|| format!("syncing {}", self.config.data_dir.display()))?;
        Ok(made)
    }

    fn open_topic(
        &self,
        meta: &TopicMeta,
        partitions: i32,
        recovery: Option<&checkpoint::Offsets>,
    ) -> anyhow::Result<Arc<Topic>> {
        let name: Arc<str> = Arc::from(meta.name.as_str());
        let made = match recovery {
            None => self.create_partition_dirs(&name, 0..partitions)?,
            Some(_) => Vec::new(),
        };
        let parts = (0..partitions)
            .map(|i| {
                let made_empty = made.get(i as usize).copied().unwrap_or(false);
                self.open_partition_as(&name, i, &meta.configs, recovery, made_empty)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Arc::new(Topic {
            name,
            id: meta.id,
            partitions: RwLock::new(parts.into_iter().map(Some).collect()),
            configs: RwLock::new(meta.configs.clone()),
        }))
    }

    pub(crate) fn insert(&self, topic: Arc<Topic>) {
        self.topic_ids.write().insert(topic.id, topic.clone());
        self.topics.write().insert(topic.name.clone(), topic);
    }

    fn meta_file(&self, topic: &str) -> PathBuf {
        self.meta_dir.join("topics").join(format!("{topic}.json"))
    }

    /// Writes a topic's metadata durably (before memory changes: persist before apply). A
    /// failure before the commit point is returned (nothing changed); one after it, when the
    /// change may or may not survive a restart, stops the broker ([`durable::halt`]).
    fn persist(&self, meta: &TopicMeta) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(meta).map_err(std::io::Error::other)?;
        durable::write_or_halt(
            &self.meta_file(&meta.name),
            &text,
            &format!("writing the metadata of topic {}", meta.name),
        )
    }

    /// Partitions hosted now (every topic's, the offsets log's included).
    fn partition_total(&self) -> i64 {
        self.topics
            .read()
            .values()
            .map(|t| i64::from(t.partition_count()))
            .sum()
    }

    /// INVALID_PARTITIONS (37) if `adding` more partitions would pass `max.broker.partitions`
    /// or the open-file budget (less a tenth kept for rolls), or a topic would have more than
    /// `max.partitions.per.topic`.
    fn check_partition_bounds(&self, topic_total: i32, adding: i32) -> Result<(), AdminError> {
        if topic_total > self.config.max_partitions_per_topic {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                format!(
                    "{topic_total} partitions exceed max.partitions.per.topic ({})",
                    self.config.max_partitions_per_topic
                ),
            ));
        }
        if adding > 0 && !frieda_log::limits::room_for_optional(adding as usize) {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                format!(
                    "{adding} more partitions would take the broker past its open-file budget \
                     ({} of {} segment files open; log.segment.files.max)",
                    frieda_log::limits::open_segment_files(),
                    frieda_log::limits::open_files_budget()
                ),
            ));
        }
        let total = self.partition_total() + i64::from(adding);
        if total > i64::from(self.config.max_broker_partitions) {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                format!(
                    "the broker would host {total} partitions, more than max.broker.partitions ({})",
                    self.config.max_broker_partitions
                ),
            ));
        }
        Ok(())
    }

    /// This broker's cluster membership, in cluster mode.
    pub fn cluster(&self) -> Option<&Arc<ClusterNode>> {
        self.cluster.get()
    }

    /// Reads from the remote tier, when tiered storage runs (`remote.log.storage.system.enable`).
    pub fn remote(&self) -> Option<&crate::remote::RemoteAccess> {
        self.remote.get()
    }

    /// The diskless service, once the bucket is set up (a cluster with
    /// `remote.log.storage.system.enable=true`).
    pub fn diskless(&self) -> Option<&Arc<crate::diskless::driver::Diskless>> {
        self.diskless.get()
    }

    /// Sets the diskless service (once).
    pub fn set_diskless(&self, service: Arc<crate::diskless::driver::Diskless>) {
        let _ = self.diskless.set(service);
    }

    /// Sets the remote-tier reader (once, at start).
    pub fn set_remote(&self, access: crate::remote::RemoteAccess) {
        let _ = self.remote.set(access);
    }

    /// The cluster id clients see (Metadata, DescribeCluster, ApiVersions v5): in a cluster the
    /// metadata image's (named by the first controller), on a single broker its own.
    pub fn current_cluster_id(&self) -> String {
        self.cluster()
            .and_then(|node| node.image().cluster_id.clone())
            .unwrap_or_else(|| self.cluster_id.clone())
    }

    /// Whether this broker may act as the leader it believes it is (single broker: always;
    /// cluster: while its heartbeat lease holds, see [`ClusterNode::holds_lease`]). A broker
    /// cut off from the controller for a session (paused, partitioned) may have been replaced:
    /// it neither takes writes nor answers reads as leader until it has caught up again.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6).
    pub fn check_lease(&self) -> Result<(), ResponseError> {
        match self.cluster() {
            Some(node) if !node.holds_lease() => Err(ResponseError::NotLeaderOrFollower),
            _ => Ok(()),
        }
    }

    /// Joins the cluster (once, at start, before the listeners open).
    pub fn attach_cluster(&self, node: Arc<ClusterNode>) {
        // The group coordinators write only while the lease holds (a weak reference: the
        // node outlives no broker).
        let weak = Arc::downgrade(&node);
        let lease: crate::coordinator::LeaseCheck =
            Arc::new(move || weak.upgrade().is_some_and(|n| n.holds_lease()));
        self.groups.set_lease(lease.clone());
        // So do the transaction coordinators (the simulator's always did, issue 57).
        self.txns.set_lease(lease);
        // A partition the metadata gives this broker is loading until the reconciler loaded it.
        self.groups
            .set_leads(leads_check(Arc::downgrade(&node), OFFSETS_TOPIC));
        self.txns
            .set_leads(leads_check(Arc::downgrade(&node), TRANSACTION_STATE_TOPIC));
        if self.cluster.set(node).is_err() {
            tracing::error!("attach_cluster called twice; keeping the first");
        }
    }

    /// Topic by name.
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    /// Whether partition `partition` of `topic` exists: in the metadata image in a cluster (which
    /// the local topics follow a moment later), in this broker's topics otherwise.
    pub fn partition_exists(&self, topic: &str, partition: i32) -> bool {
        if partition < 0 {
            return false;
        }
        match self.cluster() {
            Some(node) => node
                .image()
                .topics
                .get(topic)
                .is_some_and(|t| (partition as usize) < t.partitions.len()),
            None => self
                .topic(topic)
                .is_some_and(|t| partition < t.partition_count()),
        }
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

    /// `(topic, partition)` of every local replica whose log went offline (a failed fsync),
    /// sorted: what the broker's heartbeat reports (Kafka's offline log directories).
    pub fn offline_replicas(&self) -> Vec<(String, i32)> {
        let mut out: Vec<(String, i32)> = self
            .topics()
            .iter()
            .flat_map(|t| t.local_partitions())
            .filter(|p| !p.is_online() && !p.is_deleted())
            .map(|p| (p.topic.to_string(), p.index))
            .collect();
        out.sort();
        out
    }

    /// The claims of local replicas of leaderless `quorum` partitions, `(topic, partition,
    /// claim)`: what the broker's heartbeat carries (issue 34, `frieda_meta::quorum`).
    pub fn claims(&self) -> Vec<(String, i32, frieda_meta::quorum::Claim)> {
        self.topics()
            .iter()
            .flat_map(|t| t.local_partitions())
            .filter(|p| p.repl.quorum_acks() && !p.is_deleted())
            .filter_map(|p| Some((p.topic.to_string(), p.index, p.claim()?)))
            .collect()
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
        assignment: Option<Vec<Vec<i32>>>,
        configs: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<Arc<Topic>, AdminError> {
        if !valid_topic_name(name) {
            return Err(AdminError::new(
                ResponseError::InvalidTopicException,
                format!("topic name `{name}` is illegal: use 1-249 of [a-zA-Z0-9._-]"),
            ));
        }
        let partitions = match &assignment {
            Some(a) => a.len() as i32,
            None if partitions == -1 => self.config.num_partitions,
            None => partitions,
        };
        if partitions < 1 {
            return Err(AdminError::new(
                ResponseError::InvalidPartitions,
                "number of partitions must be at least 1",
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
        topic_configs.check_tiering(&self.topic_defaults(), None, self.config.tiered.enabled)?;
        topic_configs.check_diskless(&self.topic_defaults(), None, self.config.tiered.enabled)?;
        if let Some(node) = self.cluster() {
            if name == OFFSETS_TOPIC {
                return Err(AdminError::new(
                    ResponseError::InvalidRequest,
                    format!("Creation of internal topic {OFFSETS_TOPIC} is prohibited."),
                ));
            }
            let rf = if replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                replication_factor
            };
            if !validate_only && topic_configs.is_diskless(&self.topic_defaults()) {
                self.ensure_diskless_coordinator(node).await?;
            }
            return self
                .cluster_create_topic(
                    node,
                    name,
                    partitions,
                    rf,
                    assignment,
                    topic_configs,
                    validate_only,
                )
                .await;
        }
        if replication_factor != -1 && replication_factor != 1 {
            return Err(AdminError::new(
                ResponseError::InvalidReplicationFactor,
                format!(
                    "replication factor {replication_factor} is larger than the 1 available broker"
                ),
            ));
        }
        if assignment
            .iter()
            .flatten()
            .any(|replicas| replicas.len() != 1 || replicas[0] != self.config.node_id)
        {
            return Err(AdminError::new(
                ResponseError::InvalidReplicaAssignment,
                format!(
                    "assignments may only name broker {} once",
                    self.config.node_id
                ),
            ));
        }
        let _admin = self.admin.lock().await;
        if let Some(existing) = self.topic(name) {
            return Err(AdminError::new(
                ResponseError::TopicAlreadyExists,
                format!("topic `{}` already exists", existing.name),
            ));
        }
        self.check_partition_bounds(partitions, partitions)?;
        let meta = TopicMeta {
            name: name.to_string(),
            id: frieda_meta::controller::random_uuid(),
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
            // No recovery point or cleaner checkpoint of an earlier topic of this name may
            // vouch for the new logs.
            broker.write_recovery_checkpoint()?;
            broker.cleaner_state.forget_topic(&meta.name)?;
            // The partitions exist before the topic does: a crash in between leaves directories
            // no topic owns, set aside at the next start.
            let topic = broker.open_topic(&meta, meta.partitions, None)?;
            broker.persist(&meta)?;
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
        match self.create_topic(name, -1, -1, None, &[], false).await {
            Ok(t) => Ok(t),
            Err(e) if e.code == ResponseError::TopicAlreadyExists => self
                .topic(name)
                .ok_or_else(|| AdminError::new(ResponseError::UnknownTopicOrPartition, "raced")),
            Err(e) => Err(e),
        }
    }

    /// Deletes a topic and its data. The metadata file goes first (durably): once it is gone the
    /// topic is gone, even if a crash interrupts the removal of its directories (renamed
    /// `<dir>.<id>-delete` first and removed at the next start if need be).
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); KAFKA_STORAGE_ERROR (56) if the metadata file
    /// cannot be removed (then nothing changed).
    pub async fn delete_topic(self: &Arc<Self>, topic: Arc<Topic>) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        if let Some(node) = self.cluster() {
            return self.cluster_delete_topic(node, &topic).await;
        }
        let _admin = self.admin.lock().await;
        if self.topics.read().get(&topic.name).map(|t| t.id) != Some(topic.id) {
            return Err(AdminError::new(
                ResponseError::UnknownTopicOrPartition,
                "unknown topic",
            ));
        }
        let meta_file = self.meta_file(&topic.name);
        let removed = tokio::task::spawn_blocking(move || match durable::remove(&meta_file) {
            Err(e @ DurableError::Uncertain(_)) => {
                durable::halt(&format!("deleting {}", meta_file.display()), &e)
            }
            other => other,
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?;
        if let Err(e) = removed {
            tracing::error!(topic = %topic.name, error = %e, "deleting a topic's metadata failed; the topic stays");
            return Err(AdminError::new(
                ResponseError::KafkaStorageError,
                e.to_string(),
            ));
        }
        self.topics.write().remove(&topic.name);
        self.topic_ids.write().remove(&topic.id);
        let name = topic.name.clone();
        let data_dir = self.config.data_dir.clone();
        let broker = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for p in topic.local_partitions().iter() {
                p.mark_deleted();
                drop(p.state.lock().take());
                let dir = broker.partition_dir(&p.topic, p.index);
                let doomed = data_dir.join(format!(
                    "{}-{}.{}-delete",
                    p.topic,
                    p.index,
                    topic.id.simple()
                ));
                let result = std::fs::rename(&dir, &doomed)
                    .and_then(|()| sync_dir(&data_dir))
                    .and_then(|()| std::fs::remove_dir_all(&doomed));
                if let Err(e) = result {
                    tracing::warn!(topic = %p.topic, partition = p.index, error = %e,
                        "could not remove the partition directory; it is removed at the next start");
                }
            }
        })
        .await;
        // The checkpoint must not vouch for a new topic of the same name with the old one's
        // recovery points.
        let broker = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(e) = broker.write_recovery_checkpoint() {
                tracing::warn!(error = %e, "writing the recovery point checkpoint failed");
            }
        })
        .await;
        tracing::info!(topic = %name, "deleted topic");
        Ok(())
    }

    /// Grows a topic to `count` partitions: the new partitions' logs are created, then the
    /// topic's metadata is written durably, then they serve.
    ///
    /// Errors: INVALID_PARTITIONS (37) if not larger or past the partition bounds;
    /// KAFKA_STORAGE_ERROR (56) if the disk refuses (nothing changed).
    pub async fn create_partitions(
        self: &Arc<Self>,
        topic: Arc<Topic>,
        count: i32,
        assignment: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    ) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        if let Some(node) = self.cluster() {
            return self
                .cluster_create_partitions(node, &topic, count, assignment, validate_only)
                .await;
        }
        if assignment
            .iter()
            .flatten()
            .any(|replicas| replicas.len() != 1 || replicas[0] != self.config.node_id)
        {
            return Err(AdminError::new(
                ResponseError::InvalidReplicaAssignment,
                format!(
                    "assignments may only name broker {} once",
                    self.config.node_id
                ),
            ));
        }
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
        self.check_partition_bounds(count, count - current)?;
        if validate_only {
            return Ok(());
        }
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            broker.write_recovery_checkpoint()?;
            let configs = topic.configs.read().clone();
            let made = broker.create_partition_dirs(&topic.name, current..count)?;
            let added = (current..count)
                .zip(made)
                .map(|(i, made_empty)| {
                    broker.open_partition_as(&topic.name, i, &configs, None, made_empty)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut meta = topic.meta();
            meta.partitions = count;
            if let Err(e) = broker.persist(&meta) {
                for p in &added {
                    p.mark_deleted();
                    if let Some(state) = p.state.lock().take() {
                        let _ = state.log.delete();
                    }
                }
                return Err(e.into());
            }
            topic.partitions.write().extend(added.into_iter().map(Some));
            tracing::info!(topic = %topic.name, from = current, to = count, "added partitions");
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, format!("{e:#}")))
    }

    /// Replaces a topic's explicit configs (already validated): written durably first, then
    /// applied to the topic and its logs.
    ///
    /// Errors: KAFKA_STORAGE_ERROR (56) if the metadata cannot be written (nothing changed).
    pub async fn set_topic_configs(
        self: &Arc<Self>,
        topic: Arc<Topic>,
        configs: TopicConfigs,
    ) -> Result<(), AdminError> {
        refuse_internal(&topic)?;
        if let Some(node) = self.cluster() {
            return self.cluster_set_topic_configs(node, &topic, configs).await;
        }
        let _admin = self.admin.lock().await;
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let mut meta = topic.meta();
            meta.configs = configs.clone();
            broker.persist(&meta)?;
            *topic.configs.write() = configs;
            broker.apply_topic_configs(&topic);
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }

    /// Queues upkeep (flushes that are due always; retention, producer expiration as `upkeep`
    /// says) for every partition on its writer thread.
    pub fn schedule_maintenance(&self, upkeep: Upkeep) {
        for topic in self.topics() {
            for p in topic.local_partitions().iter() {
                let queued = p.writer().try_send(WriterJob::Maintain {
                    partition: p.clone(),
                    upkeep,
                });
                if !queued {
                    tracing::debug!(topic = %p.topic, partition = p.index, "writer queue full; upkeep skipped this round");
                }
            }
        }
    }

    /// Every partition's recovery point (the offsets log's too), for the checkpoint file.
    fn recovery_points(&self) -> checkpoint::Offsets {
        let mut points = checkpoint::Offsets::new();
        for topic in self.topics() {
            for p in topic.local_partitions().iter() {
                if let Some(rp) = p.recovery_point() {
                    points.insert((p.topic.to_string(), p.index), rp);
                }
            }
        }
        points
    }

    /// Writes `recovery-point-offset-checkpoint` (every `log.flush.offset.checkpoint.interval.ms`,
    /// and at shutdown). Errors: the file could not be written (the old one stays).
    pub fn write_recovery_checkpoint(&self) -> std::io::Result<()> {
        checkpoint::write(
            &self.config.data_dir.join(checkpoint::RECOVERY_POINT_FILE),
            &self.recovery_points(),
        )
    }

    /// Stops the writers (after their queued appends), flushes and closes every log, then
    /// checkpoints the recovery points (all at the log end after a clean shutdown, so the next
    /// start validates nothing).
    pub fn shutdown(&self) {
        if let Some(w) = self.writers.lock().take() {
            w.stop();
        }
        if self.cluster().is_some() {
            if let Err(e) = self.write_high_watermark_checkpoint() {
                tracing::error!(error = %e, "writing the high watermark checkpoint failed");
            }
        }
        let mut points = checkpoint::Offsets::new();
        let mut flushed = true;
        for topic in self.topics() {
            for p in topic.local_partitions().iter() {
                p.mark_deleted();
                if let Some(mut state) = p.state.lock().take() {
                    match state.log.flush_for_shutdown() {
                        Ok(()) => {
                            points
                                .insert((p.topic.to_string(), p.index), state.log.recovery_point());
                        }
                        Err(e) => {
                            flushed = false;
                            tracing::error!(topic = %p.topic, partition = p.index, error = %e, "flushing a log at shutdown failed")
                        }
                    }
                }
            }
        }
        let path = self.config.data_dir.join(checkpoint::RECOVERY_POINT_FILE);
        if let Err(e) = checkpoint::write(&path, &points) {
            tracing::error!(error = %e, "writing the recovery point checkpoint failed; the next start validates every segment");
            return;
        }
        if flushed {
            if let Err(e) = crate::storage::clean_shutdown::mark(&self.config.data_dir) {
                tracing::warn!(error = %e, "writing the clean-shutdown marker failed; the next start counts as after a crash");
            }
        }
    }
}

/// Takes the data directory's `.lock` (an exclusive `flock`), as Kafka locks its log directories.
///
/// Errors: another process holds it (two brokers on one directory would corrupt it).
/// Whether the metadata names this broker the leader of a partition of `topic` (a coordinator's
/// internal topic; a weak reference: the node outlives no broker).
fn leads_check(
    node: std::sync::Weak<ClusterNode>,
    topic: &'static str,
) -> crate::coordinator::LeadsCheck {
    Arc::new(move |index| node.upgrade().is_some_and(|n| n.led_here(topic, index)))
}

fn lock_data_dir(data_dir: &Path) -> anyhow::Result<std::fs::File> {
    let path = data_dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "Failed to acquire lock on file .lock in {}. Another Frieda (or Kafka) process is using this directory.",
            data_dir.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// Removes `<dir>.<id>-delete` directories a crash left behind mid-deletion.
fn finish_deletions(data_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with("-delete") && entry.path().is_dir() {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!(dir = %name, "removed the data of a deleted topic"),
                Err(e) => {
                    tracing::warn!(dir = %name, error = %e, "cannot remove a deleted topic's data")
                }
            }
        }
    }
}

/// Renames partition directories (`<topic>-<n>`) that no topic owns to `<dir>.<time>-stray`
/// with a warning: left by a crash between creating a topic's (or partition's) logs and
/// writing its metadata. They are kept for inspection, never served.
fn set_aside_strays(data_dir: &Path, metas: &[TopicMeta]) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((topic, index)) = name.rsplit_once('-') else {
            continue;
        };
        let Ok(index) = index.parse::<i32>() else {
            continue;
        };
        if !entry.path().is_dir() || !valid_topic_name(topic) {
            continue;
        }
        if metas
            .iter()
            .any(|m| m.name == topic && index < m.partitions)
        {
            continue;
        }
        let stray = data_dir.join(format!("{name}.{}-stray", now_ms()));
        match std::fs::rename(entry.path(), &stray) {
            Ok(()) => tracing::warn!(dir = %name, renamed = %stray.display(),
                "a partition directory no topic owns was set aside"),
            Err(e) => {
                tracing::warn!(dir = %name, error = %e, "cannot set aside a stray partition directory")
            }
        }
    }
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Whether `dir` has no entries (false when it cannot be read).
fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
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

/// The offsets log's topic configs: `cleanup.policy=compact` (the log cleaner keeps the latest
/// commit of each group and partition), `offsets.topic.segment.bytes`.
pub(crate) fn offsets_topic_configs(config: &BrokerConfig) -> TopicConfigs {
    let mut configs = TopicConfigs::default();
    let _ = configs.set("cleanup.policy", "compact");
    set_segment_bytes(&mut configs, config.offsets_topic_segment_bytes);
    configs
}

/// Sets an internal topic's segment size: `segment.bytes`, or below its 1 MiB minimum
/// (KIP-1030; `offsets.topic.segment.bytes` and `transaction.state.log.segment.bytes` may be
/// smaller) the internal override.
fn set_segment_bytes(configs: &mut TopicConfigs, bytes: u64) {
    use crate::storage::topic_config::{INTERNAL_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
    let key = if i64::try_from(bytes).is_ok_and(|b| b >= MIN_SEGMENT_BYTES) {
        "segment.bytes"
    } else {
        INTERNAL_SEGMENT_BYTES
    };
    if let Err(e) = configs.set(key, &bytes.to_string()) {
        tracing::warn!(bytes, error = %e, "internal topic segment size refused; the default applies");
    }
}

/// `__diskless_coordinator`'s topic configs: records kept forever (the coordinator's state is
/// its whole log until snapshots come), each fsynced (`flush.messages=1`),
/// `min.insync.replicas` = `diskless.coordinator.min.isr`, unclean election never.
pub(crate) fn diskless_coordinator_topic_configs(config: &BrokerConfig) -> TopicConfigs {
    let mut configs = TopicConfigs::default();
    let _ = configs.set("cleanup.policy", "delete");
    let _ = configs.set("retention.ms", "-1");
    let _ = configs.set("retention.bytes", "-1");
    let _ = configs.set("compression.type", "uncompressed");
    let _ = configs.set("unclean.leader.election.enable", "false");
    // Each decision fsynced before it counts (docs/diskless.md, "The write path", step 6): an
    // acknowledged produce is only as durable as its commit record.
    let _ = configs.set("flush.messages", "1");
    let _ = configs.set(
        "min.insync.replicas",
        &config.diskless.coordinator_min_isr.to_string(),
    );
    configs
}

/// `__transaction_state`'s topic configs: compacted (the latest state of each transactional
/// id stays), `transaction.state.log.segment.bytes`, `min.insync.replicas` =
/// `transaction.state.log.min.isr`, unclean election never (Kafka's `TransactionLog`).
pub(crate) fn transaction_topic_configs(config: &BrokerConfig) -> TopicConfigs {
    let mut configs = TopicConfigs::default();
    let _ = configs.set("cleanup.policy", "compact");
    let _ = configs.set("compression.type", "uncompressed");
    let _ = configs.set("unclean.leader.election.enable", "false");
    set_segment_bytes(&mut configs, config.transactions.segment_bytes);
    let _ = configs.set(
        "min.insync.replicas",
        &config.transactions.min_isr.to_string(),
    );
    configs
}

/// Opens a single broker's internal log `name` in `meta/<name>-0` (`__consumer_offsets`,
/// `__transaction_state`). It keeps the broker's flush policy; the log cleaner compacts it.
fn open_internal_log(
    config: &BrokerConfig,
    topic_defaults: &TopicConfigs,
    meta_dir: &Path,
    writers: &LogWriters,
    name: &str,
    configs: TopicConfigs,
    recovery_point: i64,
) -> anyhow::Result<Arc<Partition>> {
    let _ = config;
    let name: Arc<str> = Arc::from(name);
    let dir = meta_dir.join(format!("{name}-0"));
    let mut log_config = configs.log_config(topic_defaults);
    log_config.max_message_bytes = usize::MAX / 2;
    log_config.tail_cache_bytes = 0;
    let (log, report) = PartitionLog::open_from(&dir, log_config, now_ms(), recovery_point)
        .with_context(|| format!("opening the internal log {}", dir.display()))?;
    if report.truncated_bytes > 0 {
        tracing::warn!(
            log = %name,
            truncated_bytes = report.truncated_bytes,
            "recovered a torn tail of an internal log"
        );
    }
    Ok(Arc::new(Partition::new(
        name.clone(),
        0,
        log,
        writers.for_partition(&name, 0),
        configs.produce_policy(topic_defaults),
    )))
}

/// Opens the offsets log (listed as the read-only internal topic `__consumer_offsets`) and the
/// group coordinator on it.
fn open_offsets_log(
    config: &BrokerConfig,
    topic_defaults: &TopicConfigs,
    meta_dir: &Path,
    writers: &LogWriters,
    recovery_point: i64,
) -> anyhow::Result<GroupCoordinator> {
    let partition = open_internal_log(
        config,
        topic_defaults,
        meta_dir,
        writers,
        OFFSETS_TOPIC,
        offsets_topic_configs(config),
        recovery_point,
    )?;
    GroupCoordinator::open(partition, config.coordinator.clone())
}

/// The cluster id from `meta/cluster.json`, made (a random base64 UUID) on the first start.
///
/// Errors: the file exists but cannot be read or holds no cluster id: refusing to start beats
/// silently becoming a new cluster.
fn load_cluster_id(meta_dir: &Path) -> anyhow::Result<String> {
    let path = meta_dir.join("cluster.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let v: serde_json::Value = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is corrupt (not JSON); refusing to start with a new cluster id",
                    path.display()
                )
            })?;
            return v
                .get("cluster_id")
                .and_then(|s| s.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .with_context(|| {
                    format!(
                        "{} holds no cluster_id; refusing to start with a new cluster id",
                        path.display()
                    )
                });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    // Kafka cluster ids are 22-character URL-safe base64 UUIDs.
    let id = frieda_meta::controller::base64_url(frieda_meta::controller::random_uuid().as_bytes());
    durable::write(&path, &serde_json::json!({ "cluster_id": id }).to_string())
        .map_err(std::io::Error::from)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(id)
}
