//! The copy task's driver (issue 32; docs/tiered-storage.md, "Who does what"): every
//! `remote.log.manager.task.interval.ms`, for each partition of a topic with
//! `remote.storage.enable=true` (and not `remote.log.copy.disable=true`) this broker leads, a
//! round of the partition's [`CopyTask`] (the decisions, sans-IO: [`super::task`]), whose steps
//! this module carries out: commits to the metadata quorum (then waiting until this broker's
//! image has applied them), reads of the closed segments, uploads and deletions in the bucket.
//! A copy is:
//!
//! 1. `COPY_STARTED` with a fresh segment id is committed in the metadata quorum, so every
//!    object in the bucket belongs to an id the image knows;
//! 2. the `.log` (multipart, read with `pread` in parts of the part size), the `.indexes` and
//!    last the manifest are uploaded;
//! 3. `COPY_FINISHED` is committed: the segment is readable remotely.
//!
//! Before copying, a round finishes deletions begun earlier, abandons copies left unfinished
//! (a failed upload of this task, an earlier leader's or run's) and deletes the copies the
//! topic's total retention (`retention.ms`, `retention.bytes`, over both tiers) or a
//! DeleteRecords log start expired, oldest first
//! ([`RemoteLog::expired`](frieda_meta::remote_log::RemoteLog::expired)): `DELETE_STARTED`
//! (from then on the log start is above it), its objects, `DELETE_FINISHED`. A round that
//! fails stops; the partition's next round comes after its [`RetryBackoff`]. A round that finds
//! its partition led elsewhere (the image refuses the change: a stale leader epoch) stops there,
//! and the new leader abandons what it left. Topics whose tiering was turned off with
//! `remote.log.delete.on.disable=true` get a task that deletes every copy. All of it runs on
//! the remote-log runtime, never on the network threads; the partition is not locked (the
//! segment's handle keeps its file readable).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use frieda_log::ClosedSegment;
use frieda_meta::controller::{ControllerError, ControllerRequest};
use frieda_meta::image::MetaError;
use frieda_meta::remote_log::{RemoteLog, RemoteSegment, TotalRetention};
use frieda_meta::MetadataImage;
use object_store::PutPayload;
use tokio::sync::watch;
use uuid::Uuid;

use super::task::{
    CommitError, Completed, CopyTask, DeleteReason, Listed, LocalSegment, PartitionView,
    RoundError, Step,
};
use super::STATS;
use crate::broker::Broker;
use crate::membership::ClusterNode;
use crate::remote::quota::ByteRate;
use crate::remote::store::{ObjectKind, RemoteStore, SegmentKey};
use crate::storage::partition::{Covered, Partition, TieredState};
use crate::storage::topic_config::TopicConfigs;

use super::COMMIT_TIMEOUT;

/// Why the sweep of deleted topics stopped.
#[derive(Debug, thiserror::Error)]
enum SweepError {
    /// The controller did not answer, or refused.
    #[error("metadata change not committed: {0}")]
    Commit(ControllerError),
    /// The bucket failed.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
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

/// Each led partition's objects are swept for orphans ([`CopyTask::request_sweep`], one LIST
/// each) every this many `remote.log.manager.task.interval.ms` (5 min at Kafka's default 30 s).
pub const SWEEP_EVERY_INTERVALS: u32 = 10;

/// One led partition's copy task and its failures in a row (with when to try again).
struct Tracked {
    task: CopyTask,
    failures: u32,
    retry_at: Option<Instant>,
    /// When its objects were last swept for orphans (`None`: not yet by this task).
    swept_at: Option<Instant>,
}

/// Copies until `stop` turns true; a round every `interval`, and a failed partition's next
/// round after its [`RetryBackoff`]. Each led tiered partition keeps its [`CopyTask`] while
/// this broker leads it in the same leader epoch (a new epoch, a new task).
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
    // Only partitions this broker leads are kept (bounded by them).
    let mut tasks: HashMap<(Arc<str>, i32), Tracked> = HashMap::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let mut lag = (0u64, 0u64);
        let mut led: Vec<(Arc<Partition>, Uuid, Option<Retention>)> = tiered_leaderships(&broker)
            .into_iter()
            .map(|(p, id, r)| (p, id, Some(r)))
            .collect();
        led.extend(
            disabled_leaderships(&broker, &node)
                .into_iter()
                .map(|(p, id)| (p, id, None)),
        );
        tasks.retain(|(t, i), _| led.iter().any(|(p, _, _)| p.topic == *t && p.index == *i));
        for (p, topic_id, retention) in led {
            if *stop.borrow() {
                return;
            }
            let epoch = p.repl.leader_epoch();
            let delete_all = retention.is_none();
            let tracked = tasks
                .entry((p.topic.clone(), p.index))
                .or_insert_with(|| Tracked {
                    task: CopyTask::new(node.me, epoch),
                    failures: 0,
                    retry_at: None,
                    swept_at: None,
                });
            if tracked.task.leader_epoch() != epoch || tracked.task.is_deleting_all() != delete_all
            {
                tracked.task = if delete_all {
                    CopyTask::deleting_all(node.me, epoch)
                } else {
                    CopyTask::new(node.me, epoch)
                };
                tracked.swept_at = None;
            }
            if tracked.retry_at.is_some_and(|at| Instant::now() < at) {
                continue;
            }
            let mut driver = Driver {
                node: &node,
                store: &store,
                partition: &p,
                topic_id,
                retention,
                quota: copy_quota.as_ref(),
            };
            let sweep_every = interval * SWEEP_EVERY_INTERVALS;
            match driver
                .round(&mut tracked.task, &mut tracked.swept_at, sweep_every)
                .await
            {
                Ok(()) => {
                    tracked.failures = 0;
                    tracked.retry_at = None;
                }
                Err(e) => {
                    STATS.copy_errors.fetch_add(1, Ordering::Relaxed);
                    tracked.failures += 1;
                    let wait = backoff.after(tracked.failures);
                    tracked.retry_at = Some(Instant::now() + wait);
                    tracing::warn!(topic = %p.topic, partition = p.index, error = %e,
                        failures = tracked.failures, retry_in_ms = wait.as_millis() as u64,
                        "remote copy round stopped; it is retried");
                }
            }
            if !delete_all {
                let view = driver.view();
                let from = view
                    .remote_log()
                    .and_then(RemoteLog::copied_upto)
                    .map_or(0, |e| e + 1);
                for s in view.copyable(from) {
                    lag.0 += 1;
                    lag.1 += s.size_bytes;
                }
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
async fn sweep_deleted_topics(node: &ClusterNode, store: &RemoteStore) -> Result<(), SweepError> {
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
            .map_err(SweepError::Commit)?;
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
            let (remote_start, copied_end, covered, deleted_below) = image
                .remote_log(&t.name, p.index)
                .map(|log| {
                    let (start, _) = contiguous_copied_run(log);
                    (
                        start,
                        log.copied_upto().unwrap_or(-1),
                        Covered {
                            end: log.covered_end().unwrap_or(-1),
                            epochs: Arc::from(log.covered_epochs()),
                        },
                        log.log_start().unwrap_or(-1),
                    )
                })
                .unwrap_or((-1, -1, Covered::default(), -1));
            p.tiered.set(TieredState {
                enabled,
                copying,
                copied_end,
                covered,
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

/// The broker's driver of a [`CopyTask`]: commits through the metadata quorum, reads the
/// partition's closed segments, uploads and deletes in the bucket.
struct Driver<'a> {
    node: &'a ClusterNode,
    store: &'a RemoteStore,
    partition: &'a Partition,
    topic_id: Uuid,
    /// The topic's total retention; `None`: tiering was turned off (the task deletes all).
    retention: Option<Retention>,
    /// `remote.log.manager.copy.max.bytes.per.second`: each part waits until it allows more.
    quota: Option<&'a ByteRate>,
}

/// The partition as the task sees it now: this broker's current image and local log.
struct LiveView<'a> {
    image: Arc<MetadataImage>,
    partition: &'a Partition,
    retention: Option<Retention>,
}

impl PartitionView for LiveView<'_> {
    fn remote_log(&self) -> Option<&RemoteLog> {
        self.image
            .remote_log(&self.partition.topic, self.partition.index)
    }

    fn image_offset(&self) -> u64 {
        self.image.offset
    }

    fn leader_epochs(&self) -> frieda_log::Epochs {
        self.partition.leader_epochs().unwrap_or_default()
    }

    fn copyable(&self, from: i64) -> Vec<LocalSegment> {
        let upper = self
            .partition
            .high_watermark()
            .min(self.partition.last_stable_offset());
        self.partition
            .reader()
            .closed_segments(from, upper)
            .iter()
            .map(|s| LocalSegment {
                base_offset: s.base_offset,
                last_offset: s.last_offset,
                size_bytes: s.size_bytes,
                max_timestamp_ms: s.max_timestamp_ms,
            })
            .collect()
    }

    fn retention(&self, copied_upto: i64) -> Option<TotalRetention> {
        let r = self.retention?;
        let deleted_below = self.remote_log().and_then(RemoteLog::log_start);
        if r.ms < 0 && r.bytes < 0 && deleted_below.is_none() {
            return None;
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Some(TotalRetention {
            now_ms,
            retention_ms: r.ms,
            retention_bytes: r.bytes,
            local_only_bytes: self.partition.reader().bytes_above(copied_upto),
        })
    }
}

impl Driver<'_> {
    fn view(&self) -> LiveView<'_> {
        LiveView {
            image: self.node.image(),
            partition: self.partition,
            retention: self.retention,
        }
    }

    /// One round of `task`: its steps until it idles.
    ///
    /// Errors: the task's [`RoundError`], or the image not reaching a committed change's offset
    /// within [`COMMIT_TIMEOUT`] (as [`RoundError::Commit`]).
    async fn round(
        &mut self,
        task: &mut CopyTask,
        swept_at: &mut Option<Instant>,
        sweep_every: Duration,
    ) -> Result<(), RoundError> {
        task.begin_round();
        loop {
            // A sweep for orphans is due every `sweep_every`, also in a long round.
            if swept_at.is_none_or(|at| at.elapsed() >= sweep_every) {
                *swept_at = Some(Instant::now());
                task.request_sweep();
            }
            let step = task.poll(&self.view());
            match step {
                Step::Idle => return Ok(()),
                Step::AwaitImage(offset) => {
                    let reached = self
                        .node
                        .quorum
                        .wait_for(COMMIT_TIMEOUT, |img| img.offset >= offset)
                        .await;
                    if reached.is_none() {
                        return Err(RoundError::Commit(format!(
                            "this broker's metadata image did not reach offset {offset} in {COMMIT_TIMEOUT:?}"
                        )));
                    }
                }
                Step::Prepare(seg) => {
                    let epochs = match self.segment(seg.base_offset, seg.last_offset) {
                        Ok(s) => tokio::task::spawn_blocking(move || s.leader_epochs())
                            .await
                            .map_err(|e| e.to_string())
                            .and_then(|r| r.map_err(|e| e.to_string())),
                        Err(e) => Err(e),
                    };
                    task.prepared(epochs, Uuid::new_v4())?;
                }
                Step::Commit(change) => {
                    let result = super::commit_change(
                        self.node,
                        self.partition,
                        self.topic_id,
                        task.leader_epoch(),
                        change,
                    )
                    .await
                    .map_err(|e| match e {
                        ControllerError::Meta(MetaError::StaleLeader(_)) => CommitError::Deposed,
                        e => CommitError::Failed(e.to_string()),
                    });
                    if let Some(done) = task.committed(result)? {
                        self.report(&done);
                    }
                }
                Step::Upload(meta) => {
                    let result = self.upload(&meta).await;
                    task.uploaded(result)?;
                }
                Step::DeleteObjects(meta) => {
                    let result = self.delete_objects(&meta).await;
                    if let Some(done) = task.objects_deleted(result)? {
                        self.report(&done);
                    }
                }
                Step::ListObjects => {
                    let result = self.list().await;
                    task.listed(result)?;
                }
            }
        }
    }

    /// Logs and counts what a step completed.
    fn report(&self, done: &Completed) {
        let p = self.partition;
        match done {
            Completed::Copied(s) => {
                STATS.copied_segments.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %p.topic, partition = p.index,
                    start_offset = s.start_offset, end_offset = s.end_offset,
                    bytes = s.size_bytes, segment_id = %s.id, "copied a segment to remote storage");
            }
            Completed::Deleted(s, why) => {
                STATS.deleted_segments.fetch_add(1, Ordering::Relaxed);
                let what = match why {
                    DeleteReason::Abandoned => "deleted an unfinished remote copy",
                    DeleteReason::Resumed => "finished deleting a remote segment",
                    DeleteReason::Expired => {
                        STATS.expired_segments.fetch_add(1, Ordering::Relaxed);
                        "deleted a remote segment past the topic's retention or below its log start"
                    }
                    DeleteReason::Disabled => {
                        "deleted a remote segment: tiering turned off (remote.log.delete.on.disable)"
                    }
                };
                tracing::info!(topic = %p.topic, partition = p.index, segment_id = %s.id,
                    start_offset = s.start_offset, end_offset = s.end_offset, leader_epoch = s.leader_epoch,
                    copied_by = s.broker, "{what}");
            }
            Completed::Disabled => {
                tracing::info!(topic = %p.topic, partition = p.index,
                    "every remote segment deleted: tiering of the partition is off");
            }
            Completed::Truncated(offset) => {
                // Not an ERROR: the records cut off were lost before (an unclean election or a
                // power cut without fsync); this keeps the tier from serving them.
                tracing::warn!(topic = %p.topic, partition = p.index, offset,
                    leader_epoch = p.repl.leader_epoch(),
                    "the remote tier held records of a lineage this leader's log no longer has from this offset on; truncated it there, the leader copies its own records again");
            }
            Completed::OrphanDeleted(id) => {
                STATS.deleted_segments.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %p.topic, partition = p.index, segment_id = %id,
                    "deleted objects of an already deleted remote copy found in the bucket again (an upload that landed after the copy was abandoned)");
            }
        }
    }

    /// The closed local segment ending at `last` that holds `first` (its file may begin below
    /// `first`).
    fn segment(&self, first: i64, last: i64) -> Result<Arc<ClosedSegment>, String> {
        self.partition
            .reader()
            .closed_segments(first, i64::MAX)
            .into_iter()
            .find(|s| s.base_offset <= first && s.last_offset == last)
            .map(Arc::new)
            .ok_or_else(|| format!("no closed local segment holds offsets {first}..={last}"))
    }

    /// Uploads the three objects of the copy `meta` (the `.log` multipart, the `.indexes` with
    /// the producer snapshot at the offset after the segment, the manifest last) from the
    /// local segment holding its offsets.
    async fn upload(&self, meta: &RemoteSegment) -> Result<(), String> {
        let seg = self.segment(meta.start_offset, meta.end_offset)?;
        let producer_snapshot = {
            let seg = seg.clone();
            tokio::task::spawn_blocking(move || seg.producer_snapshot().unwrap_or_default())
                .await
                .map_err(|e| e.to_string())?
        };
        self.upload_objects(&seg, meta, &producer_snapshot)
            .await
            .map_err(|e| e.to_string())
    }

    async fn upload_objects(
        &self,
        seg: &Arc<ClosedSegment>,
        meta: &RemoteSegment,
        producer_snapshot: &[u8],
    ) -> Result<(), UploadError> {
        let key = self.key(meta);
        let log_key = self.store.key(&key, ObjectKind::Log);
        let part = self.store.part_size();
        let mut crc = 0u32;
        let mut at = 0u64;
        let mut upload = self.store.put_multipart(&log_key).await?;
        let result: Result<(), UploadError> = async {
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
            // The `.log` holds the whole local segment, which may begin below `start_offset`
            // (its first offsets are also in the copy before).
            "file_base_offset": seg.base_offset,
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

    /// Deletes the three objects of `meta` (a missing one is no error).
    async fn delete_objects(&self, meta: &RemoteSegment) -> Result<(), String> {
        let key = self.key(meta);
        for kind in ObjectKind::ALL {
            self.store
                .delete(&self.store.key(&key, kind))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The copies the partition's objects in the bucket belong to (one LIST of its prefix;
    /// keys not in the copy layout are left out).
    async fn list(&self) -> Result<Vec<Listed>, String> {
        let prefix =
            self.store
                .partition_prefix(&self.partition.topic, self.topic_id, self.partition.index);
        let keys = self.store.list(&prefix).await.map_err(|e| e.to_string())?;
        let mut out: Vec<Listed> = keys
            .iter()
            .filter_map(|(key, _)| listed_key(key.strip_prefix(&prefix)?))
            .collect();
        out.sort_by_key(|l| (l.start_offset, l.id));
        out.dedup();
        Ok(out)
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
}

/// The copy an object's name (after the partition prefix) belongs to:
/// `<start offset as 20 digits>-<copy id as Kafka's base64>.<kind>`.
fn listed_key(name: &str) -> Option<Listed> {
    use base64::Engine;
    let (stem, _kind) = name.rsplit_once('.')?;
    let (offset, id) = stem.split_once('-')?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()?;
    Some(Listed {
        id: Uuid::from_slice(&bytes).ok()?,
        start_offset: offset.parse().ok()?,
    })
}

/// Why an upload failed.
#[derive(Debug, thiserror::Error)]
enum UploadError {
    /// The bucket failed.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    /// The local segment could not be read.
    #[error("reading the segment: {0}")]
    Log(#[from] frieda_log::LogError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_name_gives_its_copy() {
        let id = Uuid::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788);
        let name = format!(
            "{:020}-{}.rsm-manifest",
            4_200,
            crate::remote::store::kafka_uuid(id)
        );
        assert_eq!(
            listed_key(&name),
            Some(Listed {
                id,
                start_offset: 4_200
            })
        );
        assert_eq!(listed_key("00000000000000004200-notbase64!.log"), None);
        assert_eq!(listed_key("garbage"), None);
    }

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
