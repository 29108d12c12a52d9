//! The drivers that run the sans-IO diskless pieces against a real partition and the bucket
//! (build plan steps 3-5): [`coordinator`] hosts the batch coordinator on a
//! `__diskless_coordinator` partition this broker leads, [`append`] uploads produced batches
//! and commits them, [`read`] answers a fetch from the coordinates and the objects.
//!
//! This first version has one coordinator partition and no inter-broker commit: Metadata names
//! the leader of `__diskless_coordinator-0` as the leader of every diskless partition, so
//! produces and fetches reach the broker whose coordinator is local (docs/diskless.md, build
//! plan: leaderless produce and rack-aware Metadata come with the internal CommitBatches and
//! FindBatches requests).

pub mod append;
pub mod coordinator;
pub mod read;

use std::sync::Arc;

use crate::diskless::append::AppendConfig;
use crate::diskless::config::DisklessConfig;
use crate::diskless::coordinator::{BatchCoordinator, DisklessPartition};
use crate::remote::store::RemoteStore;

/// The `__diskless_coordinator` partition that coordinates `partition` (one partition for now).
pub fn coordinator_partition_for(_partition: DisklessPartition) -> i32 {
    0
}

/// How often the coordinators loaded here collect garbage (deleted topics, unreferenced
/// objects, orphans).
const GC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// A diskless topic's retention: `retention.ms` and `retention.bytes` (per partition), -1 for
/// unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// `retention.ms`.
    pub ms: i64,
    /// `retention.bytes`.
    pub bytes: i64,
}

/// The diskless topics in the latest metadata image, by id, with their retention (`None`
/// before there is an image).
pub type LiveTopics =
    Arc<dyn Fn() -> Option<std::collections::HashMap<uuid::Uuid, Retention>> + Send + Sync>;

/// A broker's diskless service: its coordinators, its append path and the bucket.
pub struct Diskless {
    /// The settings.
    pub config: DisklessConfig,
    /// Coordinators loaded here.
    pub coordinators: Arc<coordinator::DisklessCoordinators>,
    /// The append path.
    pub appender: Arc<append::Appender>,
    /// The bucket.
    pub store: Arc<RemoteStore>,
}

impl Diskless {
    /// The service of broker `broker_id` over `store`; its append timer runs on the current
    /// runtime, and so does the garbage collection of the coordinators loaded here (`live`:
    /// which diskless topics exist; `None`: no collection).
    pub fn start(
        broker_id: i32,
        config: DisklessConfig,
        store: Arc<RemoteStore>,
        live: Option<LiveTopics>,
    ) -> Arc<Diskless> {
        let coordinators = Arc::new(coordinator::DisklessCoordinators::default());
        let appender = append::Appender::new(
            AppendConfig {
                broker_id,
                commit_interval_ms: config.commit_interval_ms,
                buffer_max_bytes: config.buffer_max_bytes,
                upload_max_attempts: config.upload_max_attempts,
                ..AppendConfig::default()
            },
            store.clone(),
            coordinators.clone(),
            config.commit_max_age_ms,
        );
        tokio::spawn(appender.clone().run());
        let service = Arc::new(Diskless {
            config,
            coordinators,
            appender,
            store,
        });
        if let Some(live) = live {
            tokio::spawn(collect_garbage(Arc::downgrade(&service), live));
        }
        service
    }

    /// An empty coordinator with this broker's bounds, to load into.
    pub fn new_coordinator(&self) -> BatchCoordinator {
        BatchCoordinator::new(self.config.max_batches_per_partition)
            .with_max_commit_age(self.config.commit_max_age_ms)
    }
}

/// Every [`GC_INTERVAL`] while the service lives: each coordinator loaded here forgets the
/// topics the metadata deleted, applies retention (time and bytes), deletes the objects no batch names (after
/// `diskless.object.delete.delay.ms`) and sweeps orphans (after `diskless.orphan.grace.ms`).
async fn collect_garbage(service: std::sync::Weak<Diskless>, live: LiveTopics) {
    loop {
        tokio::time::sleep(GC_INTERVAL).await;
        let Some(d) = service.upgrade() else {
            return;
        };
        let Some(host) = d.coordinators.get(0) else {
            continue;
        };
        if let Some(topics) = live() {
            let ids = topics.keys().copied().collect();
            if let Err(e) = host.forget_deleted_topics(&ids).await {
                tracing::debug!(error = ?e, "diskless topic deletions not recorded yet");
                continue;
            }
            for (id, r) in &topics {
                if let Err(e) = host
                    .apply_retention(*id, crate::clock::now_ms(), r.ms, r.bytes)
                    .await
                {
                    tracing::debug!(error = ?e, topic_id = %id, "diskless retention not applied yet");
                }
            }
        }
        match host
            .collect_garbage(
                &d.store,
                d.config.object_delete_delay_ms,
                d.config.orphan_grace_ms,
            )
            .await
        {
            Ok((0, 0)) => {}
            Ok((deleted, swept)) => {
                tracing::info!(deleted, swept, "diskless objects deleted from the bucket")
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "diskless garbage collection failed")
            }
        }
    }
}

/// Whether `topic` is a diskless topic (`diskless.enable=true`, set at creation).
pub fn is_diskless(topic: &frieda_meta::TopicImage) -> bool {
    topic
        .configs
        .get(crate::diskless::config::DISKLESS_ENABLE)
        .is_some_and(|v| v == "true")
}

/// The leader and leader epoch clients are told for every partition of a diskless topic: those
/// of `__diskless_coordinator-0` (whose leader runs the coordinator and takes the produces and
/// fetches in this version); `None` while that partition does not exist.
fn routed_leader(image: &frieda_meta::MetadataImage) -> Option<(i32, i32)> {
    let p = image
        .topics
        .get(crate::diskless::config::COORDINATOR_TOPIC)?
        .partitions
        .first()?;
    Some((p.leader, p.leader_epoch))
}

/// Partition `p` of `topic` as clients are told it (Metadata, DescribeTopicPartitions, the
/// leader hints of KIP-951): for a diskless topic the leader of `__diskless_coordinator-0`
/// (no leader while it does not exist) with its epoch, as the leader and only replica; any
/// other partition as the image has it.
pub fn served<'a>(
    image: &frieda_meta::MetadataImage,
    topic: &frieda_meta::TopicImage,
    p: &'a frieda_meta::PartitionState,
) -> std::borrow::Cow<'a, frieda_meta::PartitionState> {
    if !is_diskless(topic) {
        return std::borrow::Cow::Borrowed(p);
    }
    let (leader, epoch) = routed_leader(image).unwrap_or((frieda_meta::NO_LEADER, -1));
    let mut routed = p.clone();
    routed.leader = leader;
    routed.leader_epoch = epoch;
    routed.isr = vec![leader];
    routed.replicas = vec![leader];
    std::borrow::Cow::Owned(routed)
}

#[cfg(test)]
mod tests;
