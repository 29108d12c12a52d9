//! Cluster mode: the partition replicas this broker hosts, as the metadata image assigns them
//! (the reconciler calls these; Kafka's `LogManager` / `ReplicaManager` equivalents).
//!
//! - Each replica directory `<topic>-<partition>/` holds Kafka's `partition.metadata` naming the
//!   topic id, so a directory left by a deleted topic is never mistaken for a new topic's.
//! - `replication-offset-checkpoint` (Kafka's name and format) keeps each replica's high
//!   watermark, so a restarted leader does not hide acknowledged records from consumers while
//!   its followers catch up.

use super::{sync_dir, Broker};
use crate::durable;
use crate::storage::checkpoint::{self, Offsets};
use crate::storage::partition::Partition;
use crate::storage::topic::Topic;
use crate::storage::topic_config::TopicConfigs;
use anyhow::Context;
use frieda_meta::MetadataImage;
use parking_lot::RwLock;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

/// File name of the high-watermark checkpoint (Kafka's).
pub const HIGH_WATERMARK_FILE: &str = "replication-offset-checkpoint";
/// File in each replica directory naming its topic id (Kafka's `PartitionMetadataFile`).
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// The topic id in a replica directory's `partition.metadata` (`version: 0`, `topic_id: <id>`),
/// `None` if the file is missing or unreadable.
fn read_partition_metadata(dir: &Path) -> Option<Uuid> {
    let text = std::fs::read_to_string(dir.join(PARTITION_METADATA_FILE)).ok()?;
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("topic_id:"))?
        .trim();
    frieda_meta::controller::base64_url_uuid(id).map(Uuid::from_bytes)
}

fn write_partition_metadata(dir: &Path, id: Uuid) -> std::io::Result<()> {
    let text = format!(
        "version: 0\ntopic_id: {}\n",
        frieda_meta::controller::base64_url(id.as_bytes())
    );
    durable::write(&dir.join(PARTITION_METADATA_FILE), &text).map_err(std::io::Error::from)
}

impl Broker {
    /// The local topic for the image's topic `name` (id `id`, `count` partitions, explicit
    /// `configs`): created, grown to `count`, and its configs applied to its replicas when they
    /// changed. A local topic of that name with another id must have been removed first
    /// ([`remove_topic_locally`](Self::remove_topic_locally)).
    pub fn cluster_topic(
        &self,
        name: &str,
        id: Uuid,
        configs: TopicConfigs,
        count: usize,
    ) -> Arc<Topic> {
        if let Some(t) = self.topic(name).filter(|t| t.id == id) {
            {
                let mut parts = t.partitions.write();
                if parts.len() < count {
                    parts.resize(count, None);
                }
            }
            if *t.configs.read() != configs {
                *t.configs.write() = configs;
                self.apply_topic_configs(&t);
                tracing::info!(topic = name, "applied new topic configs");
            }
            return t;
        }
        // Check and insert under one lock: the reconciler and an admin request may both get
        // here for a new topic, and both must end up with the same object.
        let mut topics = self.topics.write();
        if let Some(t) = topics.get(name).filter(|t| t.id == id) {
            return t.clone();
        }
        let t = Arc::new(Topic {
            name: Arc::from(name),
            id,
            partitions: RwLock::new(vec![None; count]),
            configs: RwLock::new(configs),
        });
        topics.insert(t.name.clone(), t.clone());
        self.topic_ids.write().insert(id, t.clone());
        t
    }

    /// Opens this broker's replica of partition `index` of `topic`: an existing directory of
    /// the same topic id is recovered (from its checkpointed recovery point), anything else in
    /// its place is removed and a new log created; its high watermark starts at the
    /// checkpointed one. Blocking (file I/O, recovery).
    ///
    /// Errors: the log cannot be opened or its `partition.metadata` written.
    pub fn open_replica(&self, topic: &Arc<Topic>, index: i32) -> anyhow::Result<Arc<Partition>> {
        if let Some(p) = topic.partition(index) {
            return Ok(p);
        }
        let dir = self.partition_dir(&topic.name, index);
        let key = (topic.name.to_string(), index);
        let recovery_point = self.startup_recovery.lock().remove(&key);
        let hw = self.startup_hw.lock().remove(&key).unwrap_or(0);
        let existing = dir.exists() && read_partition_metadata(&dir) == Some(topic.id);
        let configs = topic.configs.read().clone();
        let partition = if existing {
            let mut points = Offsets::new();
            points.insert(key.clone(), recovery_point.unwrap_or(0));
            self.open_partition(&topic.name, index, &configs, Some(&points))?
        } else {
            if dir.exists() {
                tracing::warn!(dir = %dir.display(), topic_id = %topic.id,
                    "a replica directory of another topic (or without partition.metadata) is in the way; removing it");
            }
            let p = self.open_partition(&topic.name, index, &configs, None)?;
            write_partition_metadata(&dir, topic.id)
                .with_context(|| format!("writing {}/{PARTITION_METADATA_FILE}", dir.display()))?;
            p
        };
        partition.repl.restore_high_watermark(
            if existing { hw } else { 0 },
            partition.reader().log_end_offset(),
        );
        // Visible to requests from the insert below on, and not a sole replica meanwhile.
        partition.repl.await_role();
        let mut parts = topic.partitions.write();
        let slot = usize::try_from(index).context("negative partition index")?;
        if parts.len() <= slot {
            parts.resize(slot + 1, None);
        }
        parts[slot] = Some(partition.clone());
        tracing::info!(topic = %topic.name, partition = index, existing,
            log_end_offset = partition.reader().log_end_offset(), "opened replica");
        Ok(partition)
    }

    /// Removes this broker's replica of partition `index` of `topic` (reassigned away, or the
    /// topic deleted): the log is closed and its directory deleted (renamed `*-delete` first,
    /// so a crash in between finishes the removal at the next start). Blocking.
    pub fn remove_replica(&self, topic: &Topic, index: i32) {
        let Some(p) = topic.partition(index) else {
            return;
        };
        if let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|i| topic.partitions.write().get_mut(i).map(std::mem::take))
        {
            drop(slot);
        }
        if &*topic.name == crate::storage::topic::OFFSETS_TOPIC {
            self.groups.unload(index);
        } else if &*topic.name == crate::storage::topic::TRANSACTION_STATE_TOPIC {
            self.txns.unload(index);
        } else if &*topic.name == crate::storage::topic::DISKLESS_COORDINATOR_TOPIC {
            if let Some(d) = self.diskless() {
                d.coordinators.unload(index);
            }
        }
        p.mark_deleted();
        p.repl.stop();
        drop(p.state.lock().take());
        let data_dir = &self.config.data_dir;
        let dir = self.partition_dir(&p.topic, p.index);
        let doomed = data_dir.join(format!(
            "{}-{}.{}-delete",
            p.topic,
            p.index,
            topic.id.simple()
        ));
        let result = std::fs::rename(&dir, &doomed)
            .and_then(|()| sync_dir(data_dir))
            .and_then(|()| std::fs::remove_dir_all(&doomed));
        match result {
            Ok(()) => tracing::info!(topic = %p.topic, partition = p.index, "removed replica"),
            Err(e) => tracing::warn!(topic = %p.topic, partition = p.index, error = %e,
                "could not remove a replica directory; it is removed at the next start"),
        }
        if let Err(e) = self.log_starts.forget(&p.topic, p.index) {
            tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "resetting the log start offset checkpoint failed");
        }
        if let Err(e) = self.cleaner_state.forget_topic(&p.topic) {
            tracing::warn!(topic = %p.topic, error = %e, "resetting the cleaner checkpoint failed");
        }
        // The checkpoint must not vouch for a later replica in the same directory.
        if let Err(e) = self.write_recovery_checkpoint() {
            tracing::warn!(error = %e, "writing the recovery point checkpoint failed");
        }
    }

    /// Removes a topic the image no longer has (deleted, or replaced by a namesake with a new
    /// id): every local replica goes. Blocking.
    pub fn remove_topic_locally(&self, topic: &Arc<Topic>) {
        {
            let mut topics = self.topics.write();
            if topics.get(&topic.name).is_some_and(|t| t.id == topic.id) {
                topics.remove(&topic.name);
            }
        }
        self.topic_ids.write().remove(&topic.id);
        for i in 0..topic.partition_count() {
            self.remove_replica(topic, i);
        }
        tracing::info!(topic = %topic.name, id = %topic.id, "removed topic");
    }

    /// Deals with partition directories no replica of the image claims, once, after the first
    /// reconciliation: those of a topic the image does not have (deleted while this broker was
    /// down) or of a partition reassigned away are deleted; any other `<topic>-<n>` directory
    /// (no `partition.metadata`) is set aside as `*-stray` for inspection. Blocking.
    pub fn clean_unclaimed_dirs(&self, image: &MetadataImage, me: frieda_meta::BrokerId) {
        let data_dir = &self.config.data_dir;
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
            if !entry.path().is_dir()
                || self.topic(topic).and_then(|t| t.partition(index)).is_some()
            {
                continue;
            }
            let id = read_partition_metadata(&entry.path());
            let known = id.is_some_and(|id| {
                image.topics.get(topic).is_some_and(|t| {
                    t.id == id
                        && t.partitions
                            .get(index as usize)
                            .is_some_and(|p| p.replicas.contains(&me) || p.adding.contains(&me))
                })
            });
            if known {
                // Assigned but not opened (yet): leave it to the reconciler.
                continue;
            }
            if id.is_some() {
                let doomed = data_dir.join(format!("{name}.{}-delete", crate::clock::now_ms()));
                let result = std::fs::rename(entry.path(), &doomed)
                    .and_then(|()| sync_dir(data_dir))
                    .and_then(|()| std::fs::remove_dir_all(&doomed));
                match result {
                    Ok(()) => {
                        tracing::info!(dir = %name, "deleted the replica of a topic deleted or moved away while this broker was down")
                    }
                    Err(e) => {
                        tracing::warn!(dir = %name, error = %e, "cannot delete an unclaimed replica")
                    }
                }
            } else {
                let stray = data_dir.join(format!("{name}.{}-stray", crate::clock::now_ms()));
                match std::fs::rename(entry.path(), &stray) {
                    Ok(()) => tracing::warn!(dir = %name, renamed = %stray.display(),
                        "a partition directory without partition.metadata was set aside"),
                    Err(e) => {
                        tracing::warn!(dir = %name, error = %e, "cannot set aside a stray directory")
                    }
                }
            }
        }
    }

    /// Every replica's high watermark, for the checkpoint file.
    fn high_watermarks(&self) -> Offsets {
        let mut points = Offsets::new();
        for topic in self.topics() {
            for p in topic.local_partitions() {
                if p.repl.is_replicated() && !p.is_deleted() {
                    points.insert((p.topic.to_string(), p.index), p.high_watermark());
                }
            }
        }
        points
    }

    /// Writes `replication-offset-checkpoint` (every `replica.high.watermark.checkpoint.interval.ms`
    /// and at shutdown, cluster mode). Errors: the file could not be written (the old one stays).
    pub fn write_high_watermark_checkpoint(&self) -> std::io::Result<()> {
        checkpoint::write(
            &self.config.data_dir.join(HIGH_WATERMARK_FILE),
            &self.high_watermarks(),
        )
    }
}
