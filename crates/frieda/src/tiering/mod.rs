//! Tiered storage (issue 32, KIP-405; the HuronFS seed's two-level store): closed segments of
//! topics with `remote.storage.enable=true` are copied to an S3 bucket, their metadata kept in
//! the metadata quorum (`frieda_meta::remote_log`). The design and its build order:
//! `docs/tiered-storage.md`. This module is the remote-log manager: the copy task, the views of
//! each replica's remote tier and the sweep of deleted topics ([`copier`]); the bucket, its
//! settings and reads from it are [`crate::remote`], which the fetch path uses too.
//!
//! Everything here runs on a runtime of its own (threads `frieda-remote`), so the S3 client's
//! HTTP and the segment reads of a copy never run on the network threads, and a slow or failing
//! object store delays only copies.

pub mod copier;
pub mod task;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;

use crate::broker::Broker;
use crate::membership::ClusterNode;
use crate::remote::chunk_cache::{CacheKind, ChunkCache};
use crate::remote::config::ThreadPriority;
use crate::remote::quota::ByteRate;
use crate::remote::reader::RemoteReader;
use crate::remote::store::RemoteStore;
use crate::remote::RemoteAccess;
use crate::storage::backlog::{lower_priority, LanePriority};

/// Threads of the remote-log runtime (the copier and the S3 client's connections).
pub const REMOTE_THREADS: usize = 2;

/// How long one remote-log metadata change may wait for the controller.
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Commits `change` to `partition`'s remote log in the metadata quorum, issued by its leader
/// in `leader_epoch` (the copier's transitions, DeleteRecords' new log start). Returns the
/// metadata offset it was committed at (0 if the controller did not say).
///
/// Errors: the controller's; `Meta(StaleLeader)` when the image has a newer leader epoch.
pub async fn commit_change(
    node: &ClusterNode,
    partition: &crate::storage::partition::Partition,
    topic_id: uuid::Uuid,
    leader_epoch: i32,
    change: frieda_meta::remote_log::RemoteSegmentChange,
) -> Result<u64, frieda_meta::controller::ControllerError> {
    let req = frieda_meta::controller::ControllerRequest::RemoteSegment {
        topic: partition.topic.to_string(),
        topic_id,
        partition: partition.index,
        leader_epoch,
        change,
    };
    node.quorum
        .request(req, COMMIT_TIMEOUT)
        .await
        .map(|reply| match reply {
            frieda_meta::controller::ControllerReply::Committed { offset } => offset,
            _ => 0,
        })
}

/// Counters of this process's remote-log work (the `frieda_remote_*` metrics).
pub struct TieringStats {
    /// Bytes of `.log` uploaded (Kafka's `RemoteCopyBytesPerSec`, as a total).
    pub copied_bytes: AtomicU64,
    /// Segments whose copy finished.
    pub copied_segments: AtomicU64,
    /// Copy rounds that stopped on an error (bucket, metadata, local read).
    pub copy_errors: AtomicU64,
    /// Copies deleted from the bucket (unfinished, abandoned or expired).
    pub deleted_segments: AtomicU64,
    /// Of those, the copies the topic's total retention expired (Kafka's
    /// `RemoteDeleteRequestsPerSec`, as a total).
    pub expired_segments: AtomicU64,
    /// Closed segments of led tiered partitions eligible for copying but not copied at the
    /// end of the last round (Kafka's `RemoteCopyLagSegments`).
    pub copy_lag_segments: AtomicU64,
    /// Their bytes (Kafka's `RemoteCopyLagBytes`).
    pub copy_lag_bytes: AtomicU64,
}

/// This process's counters.
pub static STATS: TieringStats = TieringStats {
    copied_bytes: AtomicU64::new(0),
    copied_segments: AtomicU64::new(0),
    copy_errors: AtomicU64::new(0),
    deleted_segments: AtomicU64::new(0),
    expired_segments: AtomicU64::new(0),
    copy_lag_segments: AtomicU64::new(0),
    copy_lag_bytes: AtomicU64::new(0),
};

/// The running remote-log manager: its runtime, stopped when this is dropped (without
/// waiting: a copy cut short is abandoned and redone by the next leader's round).
pub struct RemoteLogManager {
    runtime: Option<tokio::runtime::Runtime>,
}

impl RemoteLogManager {
    /// Starts the copy task on a runtime of its own, when `remote.log.storage.system.enable`
    /// is on; `None` otherwise.
    ///
    /// Errors: the runtime or the S3 client could not be built.
    pub fn start(
        broker: &Arc<Broker>,
        node: &Arc<ClusterNode>,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<RemoteLogManager>> {
        let cfg = &broker.config.tiered;
        if !cfg.enabled {
            return Ok(None);
        }
        let store = Arc::new(RemoteStore::new(&cfg.s3)?);
        let priority = match cfg.thread_priority {
            ThreadPriority::Idle => LanePriority::Idle,
            ThreadPriority::Low => LanePriority::Low,
            ThreadPriority::Normal => LanePriority::Normal,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(REMOTE_THREADS)
            .max_blocking_threads(REMOTE_THREADS)
            .thread_name("frieda-remote")
            .on_thread_start(move || lower_priority(priority))
            .enable_all()
            .build()
            .context("starting the remote-log runtime")?;
        tracing::info!(bucket = ?cfg.s3.bucket, endpoint = ?cfg.s3.endpoint,
            task_interval_ms = cfg.task_interval_ms, "remote-log manager started");
        let cache_dir = cfg
            .s3
            .cache_path
            .clone()
            .unwrap_or_else(|| broker.config.data_dir.join("remote-cache"));
        let cache = ChunkCache::new(
            if cfg.s3.cache_in_memory {
                CacheKind::Memory
            } else {
                CacheKind::Disk(cache_dir.clone())
            },
            cfg.s3.cache_size,
            Duration::from_millis(cfg.s3.cache_retention_ms),
        )
        .with_context(|| format!("the chunk cache in {}", cache_dir.display()))?;
        let reader = Arc::new(RemoteReader::new(
            store.clone(),
            cache,
            cfg.s3.chunk_size,
            cfg.s3.prefetch_bytes,
        ));
        node.set_remote_reader(reader.clone(), runtime.handle().clone());
        broker.set_remote(RemoteAccess {
            reader,
            runtime: runtime.handle().clone(),
            wait: Duration::from_millis(cfg.fetch_max_wait_ms),
            list_offsets_wait: Duration::from_millis(cfg.list_offsets_timeout_ms),
            pending: Arc::default(),
            fetch_quota: cfg
                .fetch_max_bytes_per_second
                .map(|r| Arc::new(ByteRate::new(r))),
        });
        // Diskless topics share the bucket; their append path runs on the broker's runtime
        // (produces wait on it), not on the low-priority remote-log one.
        let (weak, weak_broker) = (Arc::downgrade(node), Arc::downgrade(broker));
        let live: crate::diskless::driver::LiveTopics = Arc::new(move || {
            let node = weak.upgrade().filter(|n| n.is_ready())?;
            let defaults = weak_broker.upgrade()?.topic_defaults();
            let image = node.image();
            Some(
                image
                    .topics
                    .values()
                    .filter(|t| crate::diskless::driver::is_diskless(t))
                    .map(|t| {
                        let configs = crate::storage::topic_config::TopicConfigs(t.configs.clone());
                        let long = |name: &str| {
                            configs
                                .effective(&defaults, name)
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(-1)
                        };
                        let retention = crate::diskless::driver::Retention {
                            ms: long("retention.ms"),
                            bytes: long("retention.bytes"),
                        };
                        (t.id, retention)
                    })
                    .collect(),
            )
        });
        broker.set_diskless(crate::diskless::driver::Diskless::start(
            broker.config.node_id,
            broker.config.diskless.clone(),
            store.clone(),
            Some(live),
            Some(crate::cluster::diskless_link::NodeLink::link(node)),
        ));
        runtime.spawn(copier::refresh_loop(
            broker.clone(),
            node.clone(),
            stop.clone(),
        ));
        runtime.spawn(copier::run(
            broker.clone(),
            node.clone(),
            store,
            Duration::from_millis(cfg.task_interval_ms),
            cfg.copy_max_bytes_per_second.map(ByteRate::new),
            copier::RetryBackoff {
                base: Duration::from_millis(cfg.retry_backoff_ms),
                max: Duration::from_millis(cfg.retry_backoff_max_ms.max(cfg.retry_backoff_ms)),
            },
            stop,
        ));
        Ok(Some(RemoteLogManager {
            runtime: Some(runtime),
        }))
    }
}

impl Drop for RemoteLogManager {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
