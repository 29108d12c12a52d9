//! The copy task (issue 32; docs/tiered-storage.md, "Who does what"): every
//! `remote.log.manager.task.interval.ms`, for each partition of a topic with
//! `remote.storage.enable=true` (and not `remote.log.copy.disable=true`) this broker leads,
//! copies its closed segments past the copied end and wholly below the high watermark and the
//! last stable offset to the bucket, in offset order, one at a time:
//!
//! 1. `COPY_STARTED` with a fresh segment id is committed in the metadata quorum, so every
//!    object in the bucket belongs to an id the image knows;
//! 2. the `.log` (multipart, read with `pread` in parts of the part size), the `.indexes` and
//!    last the manifest are uploaded;
//! 3. `COPY_FINISHED` is committed: the segment is readable remotely.
//!
//! After its copies, the round applies the topic's total retention (`retention.ms`,
//! `retention.bytes`, over both tiers) to the copied segments
//! ([`RemoteLog::expired`](frieda_meta::remote_log::RemoteLog::expired)): each expired one,
//! oldest first, is `DELETE_STARTED` (from then on the log start is above it), its objects
//! deleted, `DELETE_FINISHED`.
//!
//! A copy that fails is abandoned at once (`DELETE_STARTED`, its keys deleted,
//! `DELETE_FINISHED`) and retried next round under a new id; one that finds its partition led
//! elsewhere (the image refuses the change: a stale leader epoch) stops there, and the new
//! leader abandons it. Copies left `COPY_STARTED` by an earlier round or leader, and deletions
//! left unfinished, are finished first. All of it runs on the remote-log runtime, never on the
//! network threads; the partition is not locked (the segment's handle keeps its file readable).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use frieda_log::ClosedSegment;
use frieda_meta::controller::{ControllerError, ControllerRequest};
use frieda_meta::image::MetaError;
use frieda_meta::remote_log::{
    RemoteSegment, RemoteSegmentChange, RemoteSegmentState, TotalRetention,
};
use object_store::PutPayload;
use tokio::sync::watch;
use uuid::Uuid;

use super::STATS;
use crate::broker::Broker;
use crate::membership::ClusterNode;
use crate::remote::quota::ByteRate;
use crate::remote::store::{ObjectKind, RemoteStore, SegmentKey};
use crate::storage::partition::{Partition, TieredState};
use crate::storage::topic_config::TopicConfigs;

use super::COMMIT_TIMEOUT;

/// Why a partition's round stopped.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    /// The image refused the change: this broker no longer leads in that epoch.
    #[error("no longer the leader in epoch {0}")]
    Deposed(i32),
    /// The controller did not answer, or refused for another reason.
    #[error("metadata change not committed: {0}")]
    Commit(ControllerError),
    /// The bucket failed.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    /// The local segment could not be read.
    #[error("reading the segment: {0}")]
    Log(#[from] frieda_log::LogError),
}

/// How long a partition whose round failed waits before its next round:
/// `remote.log.manager.task.retry.backoff.ms` doubled per failure in a row, at most
/// `remote.log.manager.task.retry.backoff.max.ms` (Kafka's keys and defaults, 500 ms and 30 s;
/// without Kafka's jitter).
#[derive(Debug, Clone, Copy)]
pub struct RetryBackoff {
    /// The first wait.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl RetryBackoff {
    /// The wait after `failures` failed rounds in a row (at least 1).
    pub fn after(&self, failures: u32) -> Duration {
        let doubled = self
            .base
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        doubled.min(self.max)
    }
}

/// Copies until `stop` turns true; a round every `interval`, and a failed partition's next
/// round after its [`RetryBackoff`].
pub async fn run(
    broker: Arc<Broker>,
    node: Arc<ClusterNode>,
    store: Arc<RemoteStore>,
    interval: Duration,
    copy_quota: Option<ByteRate>,
    backoff: RetryBackoff,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Partitions whose last round failed: failures in a row and when to try again. Only
    // partitions this broker leads are kept (bounded by them).
    let mut failing: std::collections::HashMap<(Arc<str>, i32), (u32, Instant)> =
        std::collections::HashMap::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let mut lag = (0u64, 0u64);
        let led = tiered_leaderships(&broker);
        failing.retain(|(t, i), _| led.iter().any(|(p, _, _)| p.topic == *t && p.index == *i));
        for (p, topic_id, retention) in led {
            if *stop.borrow() {
                return;
            }
            let key = (p.topic.clone(), p.index);
            if failing
                .get(&key)
                .is_some_and(|(_, at)| Instant::now() < *at)
            {
                continue;
            }
            let mut copier = Copier::new(&node, &store, &p, topic_id, &mut lag);
            copier.quota = copy_quota.as_ref();
            let result = match copier.round().await {
                Ok(()) => copier.expire(retention).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {
                    failing.remove(&key);
                }
                Err(e) => {
                    STATS.copy_errors.fetch_add(1, Ordering::Relaxed);
                    let failures = failing.get(&key).map_or(1, |(n, _)| n + 1);
                    let wait = backoff.after(failures);
                    failing.insert(key, (failures, Instant::now() + wait));
                    tracing::warn!(topic = %p.topic, partition = p.index, error = %e, failures,
                        retry_in_ms = wait.as_millis() as u64, "remote copy round stopped; it is retried");
                }
            }
        }
        for (p, topic_id) in disabled_leaderships(&broker, &node) {
            let copier = Copier::new(&node, &store, &p, topic_id, &mut lag);
            if let Err(e) = copier.delete_all().await {
                STATS.copy_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(topic = %p.topic, partition = p.index, error = %e,
                    "deleting the remote data of a topic whose tiering was turned off stopped; retried next round");
            }
        }
        STATS.copy_lag_segments.store(lag.0, Ordering::Relaxed);
        STATS.copy_lag_bytes.store(lag.1, Ordering::Relaxed);
        if let Err(e) = sweep_deleted_topics(&node, &store).await {
            tracing::warn!(error = %e, "deleting a deleted topic's remote data stopped; retried next round");
        }
    }
}

/// On the lowest live broker: deletes every object of the deleted topics the image lists
/// (everything under each one's key prefix, so objects of abandoned copies go too), then
/// commits that the topic's remote data is gone.
async fn sweep_deleted_topics(node: &ClusterNode, store: &RemoteStore) -> Result<(), CopyError> {
    let image = node.image();
    if image.deleted_remote.is_empty() || image.live_brokers().map(|b| b.id).min() != Some(node.me)
    {
        return Ok(());
    }
    for (&topic_id, name) in &image.deleted_remote {
        let prefix = store.topic_prefix(name, topic_id);
        let keys = store.list(&prefix).await?;
        for (key, _) in &keys {
            store
                .delete(&object_store::path::Path::from(key.as_str()))
                .await?;
        }
        let req = ControllerRequest::RemoteTopicDeleted { topic_id };
        node.quorum
            .request(req, COMMIT_TIMEOUT)
            .await
            .map_err(CopyError::Commit)?;
        tracing::info!(topic = %name, %topic_id, objects = keys.len(), "deleted a deleted topic's remote data");
    }
    Ok(())
}

/// How often [`refresh_loop`] refreshes the views: a restarted broker or a new leader knows
/// its partitions' remote tier within this.
pub const REFRESH_EVERY: Duration = Duration::from_millis(500);

/// Refreshes the views every [`REFRESH_EVERY`] until `stop` turns true.
pub async fn refresh_loop(
    broker: Arc<Broker>,
    node: Arc<ClusterNode>,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(REFRESH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => refresh_views(&broker, &node),
            _ = stop.changed() => return,
        }
    }
}

/// Refreshes every local replica's [`TieredView`](crate::storage::partition::TieredView) from
/// the metadata image and the topic's configs (leaders and followers alike: each deletes
/// locally what was copied).
pub fn refresh_views(broker: &Broker, node: &ClusterNode) {
    let image = node.image();
    let defaults = broker.topic_defaults();
    let mut behind: Vec<(Arc<Partition>, i64)> = Vec::new();
    for t in broker.topics() {
        let (enabled, copying, local_ms, local_bytes) = {
            let c = t.configs.read();
            let long = |name: &str| config_long(&c, &defaults, name);
            let resolve = |local: &str, total: &str| match long(local) {
                -2 => long(total),
                v => v,
            };
            (
                c.effective(&defaults, "remote.storage.enable") == Some("true"),
                c.effective(&defaults, "remote.log.copy.disable") != Some("true"),
                resolve("local.retention.ms", "retention.ms"),
                resolve("local.retention.bytes", "retention.bytes"),
            )
        };
        for p in t.local_partitions() {
            if !enabled && !p.tiered.enabled() {
                continue;
            }
            let (remote_start, copied_end, deleted_below) = image
                .remote_log(&t.name, p.index)
                .map(|log| {
                    let (start, _) = contiguous_copied_run(log);
                    (
                        start,
                        log.copied_upto().unwrap_or(-1),
                        log.log_start().unwrap_or(-1),
                    )
                })
                .unwrap_or((-1, -1, -1));
            p.tiered.set(TieredState {
                enabled,
                copying,
                copied_end,
                remote_start,
                deleted_below,
                local_retention_ms: local_ms,
                local_retention_bytes: local_bytes,
            });
            // DeleteRecords moved the log start above the local one and the local log has not
            // followed (a leader stopped between the commit and its own move): move it now, as
            // far as this replica's high watermark (a follower also follows its leader's fetch
            // answers).
            let target = p.tiered.deleted_below().min(p.high_watermark());
            if enabled && target > p.log_start_offset() {
                behind.push((p.clone(), target));
            }
        }
    }
    if !behind.is_empty() {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            // Blocking: the log start checkpoint is fsync'ed before the start moves.
            rt.spawn_blocking(move || {
                for (p, target) in behind {
                    if let Err(e) = p.advance_log_start(target) {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = ?e,
                            "could not move the local log start up to the log start DeleteRecords set");
                    }
                }
            });
        }
    }
}

/// A topic config read as a number with the broker's defaults; -1 (unbounded) when unset or
/// not a number.
fn config_long(c: &TopicConfigs, defaults: &TopicConfigs, name: &str) -> i64 {
    c.effective(defaults, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// `(first offset, last offset)` of the contiguous run of copied segments ending at the copied
/// end; `(-1, -1)` when nothing is copied.
fn contiguous_copied_run(log: &frieda_meta::remote_log::RemoteLog) -> (i64, i64) {
    let finished: Vec<&RemoteSegment> = log.finished().collect();
    let Some(last) = finished.last() else {
        return (-1, -1);
    };
    let mut start = last.start_offset;
    for s in finished.iter().rev().skip(1) {
        if s.end_offset + 1 != start {
            break;
        }
        start = s.start_offset;
    }
    (start, last.end_offset)
}

/// A topic's total retention: `(retention.ms, retention.bytes)` with broker defaults; -1
/// where unbounded.
#[derive(Debug, Clone, Copy)]
struct Retention {
    ms: i64,
    bytes: i64,
}

/// The partitions this broker leads of topics with `remote.storage.enable=true` and copying
/// on, with their topic ids and total retention.
fn tiered_leaderships(broker: &Broker) -> Vec<(Arc<Partition>, Uuid, Retention)> {
    let defaults = broker.topic_defaults();
    let mut out = Vec::new();
    for t in broker.topics() {
        let (copying, retention) = {
            let c = t.configs.read();
            let long = |name: &str| config_long(&c, &defaults, name);
            (
                c.get("remote.storage.enable") == Some("true")
                    && c.get("remote.log.copy.disable") != Some("true"),
                Retention {
                    ms: long("retention.ms"),
                    bytes: long("retention.bytes"),
                },
            )
        };
        if !copying {
            continue;
        }
        for p in t.local_partitions() {
            if p.repl.is_replicated() && p.repl.is_leader_or_sole() && !p.is_deleted() {
                out.push((p, t.id, retention));
            }
        }
    }
    out
}

/// The partitions this broker leads of topics whose tiering was turned off
/// (`remote.storage.enable=false`, allowed only with `remote.log.delete.on.disable=true`) but
/// whose remote log the image still has, with their topic ids.
fn disabled_leaderships(broker: &Broker, node: &ClusterNode) -> Vec<(Arc<Partition>, Uuid)> {
    let image = node.image();
    let mut out = Vec::new();
    for t in broker.topics() {
        if t.configs.read().get("remote.storage.enable") == Some("true") {
            continue;
        }
        for p in t.local_partitions() {
            if p.repl.is_replicated()
                && p.repl.is_leader_or_sole()
                && !p.is_deleted()
                && image.remote_log(&t.name, p.index).is_some()
            {
                out.push((p, t.id));
            }
        }
    }
    out
}

struct Copier<'a> {
    node: &'a ClusterNode,
    store: &'a RemoteStore,
    partition: &'a Partition,
    topic_id: Uuid,
    epoch: i32,
    /// Segments and bytes eligible for copying but not copied, summed over the round.
    lag: &'a mut (u64, u64),
    /// `remote.log.manager.copy.max.bytes.per.second`: each part waits until it allows more.
    quota: Option<&'a ByteRate>,
}

impl<'a> Copier<'a> {
    /// The copier of `partition` in the leader epoch it is in now, without a quota.
    fn new(
        node: &'a ClusterNode,
        store: &'a RemoteStore,
        partition: &'a Partition,
        topic_id: Uuid,
        lag: &'a mut (u64, u64),
    ) -> Self {
        Copier {
            node,
            store,
            partition,
            topic_id,
            epoch: partition.repl.leader_epoch(),
            lag,
            quota: None,
        }
    }

    /// One round: finish what earlier rounds left, then copy every eligible closed segment.
    async fn round(&mut self) -> Result<(), CopyError> {
        let (leftover, copied_end) = {
            let image = self.node.image();
            let log = image.remote_log(&self.partition.topic, self.partition.index);
            let leftover: Vec<RemoteSegment> = log
                .map(|l| l.abandoned(i32::MAX).chain(l.deleting()).cloned().collect())
                .unwrap_or_default();
            (leftover, log.and_then(|l| l.copied_upto()))
        };
        // Copies run one at a time per broker, so a COPY_STARTED seen here is no copy in
        // progress: an earlier failure, or a deposed leader's.
        for s in leftover {
            self.delete(&s, "deleted an unfinished remote copy").await?;
        }
        let upper = self
            .partition
            .high_watermark()
            .min(self.partition.last_stable_offset());
        let from = copied_end.map_or(0, |e| e + 1);
        let segments = self.partition.reader().closed_segments(from, upper);
        let mut left = (
            segments.len() as u64,
            segments.iter().map(|s| s.size_bytes).sum::<u64>(),
        );
        let mut result = Ok(());
        for seg in segments {
            let size = seg.size_bytes;
            result = self.copy(seg).await;
            if result.is_err() {
                break;
            }
            left = (left.0 - 1, left.1 - size);
        }
        self.lag.0 += left.0;
        self.lag.1 += left.1;
        result
    }

    /// Copies one closed segment under a new id; on failure abandons that id.
    async fn copy(&mut self, seg: ClosedSegment) -> Result<(), CopyError> {
        let seg = Arc::new(seg);
        let (epochs, producer_snapshot) = {
            let seg = seg.clone();
            tokio::task::spawn_blocking(move || {
                seg.leader_epochs()
                    .map(|epochs| (epochs, seg.producer_snapshot().unwrap_or_default()))
            })
            .await
            .map_err(|e| frieda_log::LogError::Io(std::io::Error::other(e)))??
        };
        let meta = RemoteSegment {
            id: Uuid::new_v4(),
            start_offset: seg.base_offset,
            end_offset: seg.last_offset,
            max_timestamp_ms: seg.max_timestamp_ms,
            size_bytes: seg.size_bytes,
            broker: self.node.me,
            leader_epoch: self.epoch,
            segment_epochs: epochs,
            state: RemoteSegmentState::CopyStarted,
        };
        self.commit(RemoteSegmentChange::CopyStarted(meta.clone()))
            .await?;
        match self.upload(&seg, &meta, &producer_snapshot).await {
            Ok(()) => {
                self.commit(RemoteSegmentChange::CopyFinished(meta.id))
                    .await?;
                STATS.copied_segments.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %self.partition.topic, partition = self.partition.index,
                    start_offset = meta.start_offset, end_offset = meta.end_offset,
                    bytes = meta.size_bytes, segment_id = %meta.id, "copied a segment to remote storage");
                Ok(())
            }
            Err(e) => {
                // Best effort now; a later round finishes it if this fails too. (A topic
                // deleted meanwhile refuses the commits: its prefix is swept by
                // `sweep_deleted_topics`.)
                if let Err(e2) = self.delete(&meta, "deleted a failed remote copy").await {
                    tracing::info!(error = %e2, segment_id = %meta.id, "abandoning the failed copy did not finish");
                }
                Err(e)
            }
        }
    }

    /// Uploads the three objects of `seg` under `meta.id`, the manifest last; the `.indexes`
    /// object carries `producer_snapshot` (empty: none).
    async fn upload(
        &self,
        seg: &Arc<ClosedSegment>,
        meta: &RemoteSegment,
        producer_snapshot: &[u8],
    ) -> Result<(), CopyError> {
        let key = self.key(meta);
        let log_key = self.store.key(&key, ObjectKind::Log);
        let part = self.store.part_size();
        let mut crc = 0u32;
        let mut at = 0u64;
        let mut upload = self.store.put_multipart(&log_key).await?;
        let result: Result<(), CopyError> = async {
            while at < seg.size_bytes {
                if let Some(q) = self.quota {
                    let wait = q.throttle(Instant::now());
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                }
                let data = {
                    let seg = seg.clone();
                    tokio::task::spawn_blocking(move || seg.read_log(at, part))
                        .await
                        .map_err(|e| frieda_log::LogError::Io(std::io::Error::other(e)))??
                };
                if data.is_empty() {
                    break;
                }
                if let Some(q) = self.quota {
                    q.spend(data.len() as u64, Instant::now());
                }
                crc = crc32c::crc32c_append(crc, &data);
                at += data.len() as u64;
                STATS
                    .copied_bytes
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                upload.put_part(PutPayload::from(data)).await?;
            }
            upload.complete().await?;
            Ok(())
        }
        .await;
        if let Err(e) = result {
            let _ = upload.abort().await;
            return Err(e);
        }
        let indexes = seg.indexes(&meta.segment_epochs, producer_snapshot);
        let manifest = serde_json::json!({
            "format": 2,
            "segment_id": meta.id.to_string(),
            "start_offset": meta.start_offset,
            "end_offset": meta.end_offset,
            "log_bytes": at,
            "log_crc32c": crc,
            "indexes_bytes": indexes.len(),
            "indexes_crc32c": crc32c::crc32c(&indexes),
            "segment_epochs": meta.segment_epochs,
            "producer_snapshot_bytes": producer_snapshot.len(),
        });
        self.store
            .put(
                &self.store.key(&key, ObjectKind::Indexes),
                Bytes::from(indexes),
            )
            .await?;
        self.store
            .put(
                &self.store.key(&key, ObjectKind::Manifest),
                Bytes::from(manifest.to_string()),
            )
            .await?;
        Ok(())
    }

    /// Deletes the copies the topic's total retention expired, oldest first
    /// ([`RemoteLog::expired`](frieda_meta::remote_log::RemoteLog::expired): wholly below the
    /// log start DeleteRecords set, by `retention.ms` against each copy's largest timestamp, by
    /// `retention.bytes` against the remote bytes plus the bytes only the local log holds).
    async fn expire(&self, retention: Retention) -> Result<(), CopyError> {
        let expired: Vec<RemoteSegment> = {
            let image = self.node.image();
            let Some(log) = image.remote_log(&self.partition.topic, self.partition.index) else {
                return Ok(());
            };
            if retention.ms < 0 && retention.bytes < 0 && log.log_start().is_none() {
                return Ok(());
            }
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let local_only_bytes = self
                .partition
                .reader()
                .bytes_above(log.copied_upto().unwrap_or(-1));
            log.expired(&TotalRetention {
                now_ms,
                retention_ms: retention.ms,
                retention_bytes: retention.bytes,
                local_only_bytes,
            })
            .into_iter()
            .cloned()
            .collect()
        };
        for s in &expired {
            self.delete(
                s,
                "deleted a remote segment past the topic's retention or below its log start",
            )
            .await?;
            STATS.expired_segments.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Tiering was turned off with `remote.log.delete.on.disable=true` (KIP-950): deletes
    /// every copy, then commits [`RemoteSegmentChange::Disabled`].
    async fn delete_all(&self) -> Result<(), CopyError> {
        let all: Vec<RemoteSegment> = {
            let image = self.node.image();
            let Some(log) = image.remote_log(&self.partition.topic, self.partition.index) else {
                return Ok(());
            };
            log.finished()
                .chain(log.abandoned(i32::MAX))
                .chain(log.deleting())
                .cloned()
                .collect()
        };
        for s in &all {
            self.delete(
                s,
                "deleted a remote segment: tiering turned off (remote.log.delete.on.disable)",
            )
            .await?;
        }
        self.commit(RemoteSegmentChange::Disabled).await
    }

    /// Deletes a copy (failed, abandoned or expired): `DELETE_STARTED` (unless begun), its
    /// keys, `DELETE_FINISHED`; logs `what` once done.
    async fn delete(&self, s: &RemoteSegment, what: &'static str) -> Result<(), CopyError> {
        if s.state != RemoteSegmentState::DeleteStarted {
            self.commit(RemoteSegmentChange::DeleteStarted(s.id))
                .await?;
        }
        let key = self.key(s);
        for kind in ObjectKind::ALL {
            self.store.delete(&self.store.key(&key, kind)).await?;
        }
        self.commit(RemoteSegmentChange::DeleteFinished(s.id))
            .await?;
        STATS.deleted_segments.fetch_add(1, Ordering::Relaxed);
        tracing::info!(topic = %self.partition.topic, partition = self.partition.index,
            segment_id = %s.id, start_offset = s.start_offset, end_offset = s.end_offset, "{what}");
        Ok(())
    }

    fn key<'s>(&'s self, s: &RemoteSegment) -> SegmentKey<'s> {
        SegmentKey {
            topic: &self.partition.topic,
            topic_id: self.topic_id,
            partition: self.partition.index,
            base_offset: s.start_offset,
            segment_id: s.id,
        }
    }

    /// Commits `change` in the metadata quorum under this leader's epoch.
    async fn commit(&self, change: RemoteSegmentChange) -> Result<(), CopyError> {
        match super::commit_change(self.node, self.partition, self.topic_id, self.epoch, change)
            .await
        {
            Ok(_) => Ok(()),
            Err(ControllerError::Meta(MetaError::StaleLeader(_))) => {
                Err(CopyError::Deposed(self.epoch))
            }
            Err(e) => Err(CopyError::Commit(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_rounds_back_off_doubling_up_to_the_most() {
        let b = RetryBackoff {
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
        };
        let waits: Vec<u64> = [1, 2, 3, 7, 8, 100]
            .iter()
            .map(|&n| b.after(n).as_millis() as u64)
            .collect();
        assert_eq!(waits, [500, 1000, 2000, 30_000, 30_000, 30_000]);
    }
}
