//! The batch coordinator on a `__diskless_coordinator` partition this broker leads: a
//! [`CoordinatorHost`] driven against the real partition (build plan step 3's driver). Every
//! decision is appended as one record (value: [`codec`](crate::diskless::codec)'s encoding)
//! through the partition's leader path (the lease and `min.insync.replicas` checked first, as a
//! produce), and its waiters are answered only once the partition's high watermark passes it.
//! A load replays the local log; the host serves once the high watermark reaches the loaded end.
//! A failed write (append error, replicas not confirming within [`WRITE_TIMEOUT`], leadership
//! lost) fails the host: every waiter is answered NOT_COORDINATOR and the reconciler loads it
//! again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frieda_log::ProducerInfo;
use kafka_protocol::error::ResponseError as E;
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

use crate::clock::now_ms;
use crate::diskless::coordinator::{
    BatchAnswer, BatchCoordinator, CommitBatches, DisklessPartition, Found, ObjectId, Offsets,
    TxnMarker,
};
use crate::diskless::host::{CoordinatorHost, HostError, Outcome, Step};
use crate::remote::store::RemoteStore;
use crate::storage::leader_append::admit_produce;
use crate::storage::partition::Partition;
use crate::storage::records::{encode_batch, replay};

pub mod compaction;

/// How long a decision's record may take to be replicated before the host fails (ms).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a host with waiters, or loading, looks at its partition's high watermark.
const HW_POLL: Duration = Duration::from_millis(5);

/// Whether this broker's lease holds (a broker that may have been fenced writes nothing).
pub type Lease = Arc<dyn Fn() -> bool + Send + Sync>;

type Waiter = oneshot::Sender<Outcome>;

/// One loaded coordinator partition.
pub struct HostedCoordinator {
    /// The `__diskless_coordinator` partition index.
    pub index: i32,
    /// Its leader epoch when loaded.
    pub epoch: i32,
    log: Arc<Partition>,
    min_isr: usize,
    lease: Option<Lease>,
    host: Mutex<CoordinatorHost<Waiter>>,
    /// Held from a decision until its record is in the log: records land in decision order.
    write_order: tokio::sync::Mutex<()>,
    active: AtomicBool,
    /// Wakes [`run`](Self::run) from its idle wait when a record was appended.
    appended: tokio::sync::Notify,
    /// Counts the moves of the high watermark reported to the host (what readers see moves
    /// only then), and once more when the host fails: waiting fetches wait on it
    /// ([`changes`](Self::changes)) instead of asking again and again.
    changes: tokio::sync::watch::Sender<u64>,
    /// The high watermark last reported to the host.
    reported_hw: std::sync::atomic::AtomicI64,
}

impl HostedCoordinator {
    /// Replays `log` (partition `index`, led here since `epoch`) into a new host. Blocking.
    ///
    /// Errors: the log cannot be read, or a record does not decode.
    pub fn load(
        index: i32,
        epoch: i32,
        log: Arc<Partition>,
        coordinator: BatchCoordinator,
        min_isr: usize,
        lease: Option<Lease>,
    ) -> anyhow::Result<HostedCoordinator> {
        let mut host = CoordinatorHost::load_with(coordinator);
        let mut records = 0u64;
        let what = format!("__diskless_coordinator-{index}");
        let end = replay(&log, &what, |r| {
            let Some(value) = r.value.as_deref() else {
                return Ok(());
            };
            host.replay(r.offset, value)
                .map_err(|e| anyhow::anyhow!("{what} offset {}: {e}", r.offset))?;
            records += 1;
            Ok(())
        })?;
        host.loaded(end);
        tracing::info!(
            partition = index,
            epoch,
            records,
            log_end_offset = end,
            objects = host.coordinator().object_count(),
            "diskless coordinator replayed"
        );
        Ok(HostedCoordinator {
            index,
            epoch,
            log,
            min_isr: min_isr.max(1),
            lease,
            host: Mutex::new(host),
            write_order: tokio::sync::Mutex::new(()),
            active: AtomicBool::new(true),
            appended: tokio::sync::Notify::new(),
            changes: tokio::sync::watch::channel(0).0,
            reported_hw: std::sync::atomic::AtomicI64::new(-1),
        })
    }

    /// Whether it still serves (not unloaded, no write failed).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Reports the partition's high watermark to the host and answers who it releases.
    fn pump(&self) {
        let hw = self.log.high_watermark();
        let answered = self.host.lock().high_watermark(hw);
        for (w, outcome) in answered {
            let _ = w.send(outcome);
        }
        if self.reported_hw.swap(hw, Ordering::AcqRel) != hw {
            self.changes.send_modify(|v| *v = v.wrapping_add(1));
        }
    }

    /// A receiver of the coordinator's changes: it sees a new value whenever what readers
    /// see may have moved (a decision came below the high watermark) and when the host
    /// fails. Subscribed before a read, a wait on it misses no change after the read.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits until the change count differs from `since` (at once when it does), at most
    /// `max_wait`: the count then (another broker's long poll, `wire::Call::Changed`).
    pub async fn changed_since(&self, since: u64, max_wait: Duration) -> u64 {
        let mut rx = self.changes();
        let _ = tokio::time::timeout(max_wait, rx.wait_for(|v| *v != since)).await;
        let now = *rx.borrow();
        now
    }

    /// Runs until unloaded or failed: moves the high watermark into the host while it loads or
    /// has records not yet replicated; fails the host when the high watermark has not moved
    /// for [`WRITE_TIMEOUT`] while records wait.
    pub async fn run(self: Arc<Self>) {
        let mut stuck_since: Option<tokio::time::Instant> = None;
        let mut last_hw = -1;
        while self.is_active() {
            let (busy, pending) = {
                let h = self.host.lock();
                (
                    !h.is_serving() || h.pending_records() > 0,
                    h.pending_records(),
                )
            };
            if busy {
                self.pump();
                let hw = self.log.high_watermark();
                if pending > 0 && hw == last_hw {
                    let since = *stuck_since.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() > WRITE_TIMEOUT {
                        tracing::warn!(
                            partition = self.index,
                            high_watermark = hw,
                            "diskless coordinator writes not replicated in time: failing the host"
                        );
                        self.fail();
                        return;
                    }
                } else {
                    stuck_since = None;
                }
                last_hw = hw;
                tokio::time::sleep(HW_POLL).await;
            } else {
                stuck_since = None;
                // idle: until a record is appended (not a 50 ms sleep in a commit's answer)
                tokio::select! {
                    _ = tokio::time::sleep(HW_POLL * 10) => {}
                    _ = self.appended.notified() => {}
                }
            }
        }
    }

    /// Stops serving: every waiter is answered NOT_COORDINATOR (their receivers see a drop).
    pub fn fail(&self) {
        self.active.store(false, Ordering::Release);
        let dropped = self.host.lock().fail();
        drop(dropped);
        self.changes.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Commits an uploaded object: the answers once the decision is below the high watermark.
    /// Partitions the coordinator does not know yet are created first (`known` says which
    /// diskless partitions the metadata has).
    ///
    /// Errors: NOT_COORDINATOR (16) when the host failed or was unloaded, or the write failed;
    /// COORDINATOR_LOAD_IN_PROGRESS (14); REQUEST_TIMED_OUT (7) when too many commits wait;
    /// KAFKA_STORAGE_ERROR (56) for an object too old or committed before; the lease's and
    /// `min.insync.replicas`' NOT_LEADER_OR_FOLLOWER (6) / NOT_ENOUGH_REPLICAS (19).
    pub async fn commit(&self, commit: &CommitBatches) -> Result<Vec<BatchAnswer>, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let (tx, rx) = oneshot::channel();
        {
            let _order = self.write_order.lock().await;
            self.create_unknown(commit.batches.iter().map(|b| b.partition))
                .await?;
            let step = self.host.lock().commit(now_ms(), tx, commit);
            self.take(step).await?;
        }
        self.pump();
        match rx.await {
            Ok(Outcome::Batches(answers)) => Ok(answers),
            Ok(_) => Err(E::UnknownServerError),
            Err(_) => Err(E::NotCoordinator),
        }
    }

    /// DeleteRecords of `partition` below `offset` (-1: its high watermark): the new log start,
    /// once the decision is below the high watermark. A partition nothing was committed to
    /// yet has log start 0.
    ///
    /// Errors: OFFSET_OUT_OF_RANGE (1) above the high watermark; NOT_COORDINATOR (16),
    /// COORDINATOR_LOAD_IN_PROGRESS (14), REQUEST_TIMED_OUT (7) as [`commit`](Self::commit).
    pub async fn delete_records(
        &self,
        partition: DisklessPartition,
        offset: i64,
    ) -> Result<i64, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let (tx, rx) = oneshot::channel();
        {
            let _order = self.write_order.lock().await;
            let step = self
                .host
                .lock()
                .delete_records(now_ms(), tx, partition, offset);
            match step {
                Err(HostError::Refused(E::UnknownTopicOrPartition)) if offset <= 0 => return Ok(0),
                Err(HostError::Refused(E::UnknownTopicOrPartition)) => {
                    return Err(E::OffsetOutOfRange)
                }
                step => self.take(step).await?,
            }
        }
        self.pump();
        match rx.await {
            Ok(Outcome::LogStart(log_start)) => Ok(log_start),
            Ok(_) => Err(E::UnknownServerError),
            Err(_) => Err(E::NotCoordinator),
        }
    }

    /// Retention (`retention.ms`, `retention.bytes`; -1: unlimited) of every partition of
    /// `topic_id` at `now_ms`: the log start moves past the batches whose largest timestamp is
    /// older than `retention_ms`, and past the oldest batches while the rest stays above
    /// `retention_bytes`, as DeleteRecords moves it. Returns how many partitions moved.
    ///
    /// Errors: as [`delete_records`](Self::delete_records).
    pub async fn apply_retention(
        &self,
        topic_id: uuid::Uuid,
        now_ms: i64,
        retention_ms: i64,
        retention_bytes: i64,
    ) -> Result<usize, E> {
        if retention_ms < 0 && retention_bytes < 0 {
            return Ok(0);
        }
        let partitions: Vec<DisklessPartition> = self
            .host
            .lock()
            .coordinator()
            .partitions()
            .into_iter()
            .filter(|p| p.topic_id == topic_id)
            .collect();
        let mut moved = 0;
        for partition in partitions {
            let target = {
                let host = self.host.lock();
                let (log_start, end) = match host.offsets(partition) {
                    Ok(o) => (o.log_start, o.high_watermark),
                    Err(E::UnknownTopicOrPartition) => continue,
                    Err(e) => return Err(e),
                };
                if log_start >= end {
                    continue;
                }
                let found = host.find_batches(partition, log_start, u64::MAX)?;
                retention_point(&found, now_ms, retention_ms, retention_bytes)
                    .filter(|&t| t > log_start)
            };
            if let Some(target) = target {
                let start = self.delete_records(partition, target).await?;
                tracing::info!(topic_id = %topic_id, partition = partition.partition,
                    log_start = start, "diskless retention moved the log start");
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// Forgets the topics the metadata no longer has (`live`: the ids of the diskless topics
    /// in the image): their partitions go and their objects become deletable. Returns how
    /// many were forgotten.
    ///
    /// Errors: as [`commit`](Self::commit) (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
    pub async fn forget_deleted_topics(
        &self,
        live: &std::collections::HashSet<uuid::Uuid>,
    ) -> Result<usize, E> {
        let gone: Vec<uuid::Uuid> = self
            .host
            .lock()
            .coordinator()
            .topic_ids()
            .into_iter()
            .filter(|id| !live.contains(id))
            .collect();
        for topic_id in &gone {
            let _order = self.write_order.lock().await;
            let step = self.host.lock().delete_topic(now_ms(), *topic_id);
            self.take(step).await?;
            tracing::info!(partition = self.index, topic_id = %topic_id,
                "diskless coordinator forgot a deleted topic");
        }
        Ok(gone.len())
    }

    /// Producer expiry at `now_ms` (`producer.id.expiration.ms` = `expiration_ms`; see
    /// [`BatchCoordinator::expire_producers`](crate::diskless::coordinator::BatchCoordinator::expire_producers)),
    /// recorded in the coordinator partition when any producer is that old. Returns how many
    /// producers were forgotten.
    ///
    /// Errors: as [`commit`](Self::commit) (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
    pub async fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> Result<usize, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let _order = self.write_order.lock().await;
        let (before, step, after) = {
            let mut host = self.host.lock();
            let before = host.coordinator().producer_count();
            let step = host.expire_producers(now_ms, expiration_ms);
            (before, step, host.coordinator().producer_count())
        };
        match step {
            Ok(None) => Ok(0),
            Ok(Some(step)) => {
                self.take(Ok(step)).await?;
                Ok(before.saturating_sub(after))
            }
            Err(e) => Err(e.code()),
        }
    }

    /// One round of garbage collection: deletes from `store` the objects no batch names any
    /// more (marked at least `delay_ms` ago), records their deletion, and sweeps the orphans a
    /// LIST finds (objects no commit names, older than `orphan_grace_ms`). Returns (deleted,
    /// swept).
    ///
    /// Errors: the store's (logged; the next round tries again) or the record's.
    pub async fn collect_garbage(
        &self,
        store: &RemoteStore,
        delay_ms: i64,
        orphan_grace_ms: i64,
    ) -> anyhow::Result<(usize, usize)> {
        let deletable: Vec<ObjectId> = self
            .host
            .lock()
            .deletable(now_ms(), delay_ms)
            .into_iter()
            .map(|(id, _, _)| id)
            .collect();
        for id in &deletable {
            store.delete(&store.wal_key(id.0)).await?;
        }
        if !deletable.is_empty() {
            let _order = self.write_order.lock().await;
            let step = self.host.lock().objects_deleted(&deletable);
            self.take(step)
                .await
                .map_err(|e| anyhow::anyhow!("recording deleted objects: {e:?}"))?;
        }
        let listed: Vec<ObjectId> = store
            .list(&store.wal_prefix())
            .await?
            .into_iter()
            .filter_map(|(key, _)| wal_object(&key))
            .collect();
        let sweepable = self
            .host
            .lock()
            .sweepable(&listed, now_ms(), orphan_grace_ms);
        for id in &sweepable {
            store.delete(&store.wal_key(id.0)).await?;
        }
        Ok((deletable.len(), sweepable.len()))
    }

    /// Writes the creation of each of `partitions` the coordinator does not know yet, once
    /// each, in partition order (the caller holds `write_order`).
    async fn create_unknown(
        &self,
        partitions: impl IntoIterator<Item = DisklessPartition>,
    ) -> Result<(), E> {
        let mut unknown: Vec<DisklessPartition> = partitions
            .into_iter()
            .filter(|p| self.host.lock().coordinator().high_watermark(*p).is_none())
            .collect();
        unknown.sort();
        unknown.dedup();
        for p in unknown {
            let step = self.host.lock().create_partition(p);
            self.take(step).await?;
        }
        Ok(())
    }

    /// Carries out a host step under the write order: appends its record.
    async fn take(&self, step: Result<Step<Waiter>, HostError>) -> Result<(), E> {
        match step.map_err(HostError::code)? {
            Step::Append { offset, record } => self.append(offset, record).await,
            Step::Wait => Ok(()),
            Step::Answered(w, outcome) => {
                let _ = w.send(outcome);
                Ok(())
            }
        }
    }

    async fn append(&self, offset: i64, record: Vec<u8>) -> Result<(), E> {
        let lease = self.lease.as_ref().is_none_or(|l| l());
        let refused = if self.log.repl.is_replicated() {
            admit_produce(&self.log.repl, lease, true, self.min_isr).err()
        } else {
            None
        };
        let result = match refused {
            Some(e) => Err(e),
            None => {
                // one record: no key (an empty one), the decision as its value
                let (batch, header) =
                    encode_batch(&[(Bytes::new(), Some(Bytes::from(record)))], now_ms(), None);
                self.log.append(batch, header).await
            }
        };
        match result {
            Ok(outcome) if outcome.base_offset == offset => {
                self.appended.notify_one();
                Ok(())
            }
            Ok(outcome) => {
                tracing::error!(
                    partition = self.index,
                    expected = offset,
                    got = outcome.base_offset,
                    "a diskless coordinator record landed at another offset: failing the host"
                );
                self.fail();
                Err(E::NotCoordinator)
            }
            Err(e) => {
                tracing::warn!(partition = self.index, error = ?e,
                    "a diskless coordinator write failed: failing the host");
                self.fail();
                Err(E::NotCoordinator)
            }
        }
    }

    /// Where the batches of `partition` at `offset` are (decisions below the high watermark).
    ///
    /// Errors: as [`CoordinatorHost::find_batches`]; NOT_COORDINATOR once failed.
    pub fn find_batches(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
    ) -> Result<Found, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        self.host.lock().find_batches(partition, offset, max_bytes)
    }
}

impl HostedCoordinator {
    /// The log start, high watermark and last stable offset readers see of `partition`; all 0
    /// for a partition nothing was committed to yet.
    ///
    /// Errors: NOT_COORDINATOR (16) once failed; COORDINATOR_LOAD_IN_PROGRESS (14).
    pub fn offsets(&self, partition: DisklessPartition) -> Result<Offsets, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        match self.host.lock().offsets(partition) {
            Err(E::UnknownTopicOrPartition) => Ok(Offsets {
                log_start: 0,
                high_watermark: 0,
                last_stable_offset: 0,
            }),
            other => other,
        }
    }

    /// A verification token for `producer_id`'s transactional batch at `epoch` on `partition`
    /// (KIP-890; a partition nothing was committed to yet is created first), asked before the
    /// batch is verified with the transaction coordinator and carried by its commit
    /// ([`crate::diskless::coordinator::CommittedBatch::verification`]).
    ///
    /// Errors: NOT_COORDINATOR (16) once failed; COORDINATOR_LOAD_IN_PROGRESS (14);
    /// REQUEST_TIMED_OUT (7) creating the partition.
    pub async fn begin_verification(
        &self,
        partition: DisklessPartition,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Result<u64, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        {
            let _order = self.write_order.lock().await;
            self.create_unknown([partition]).await?;
        }
        self.host
            .lock()
            .begin_verification(partition, producer_id, epoch, supports_epoch_bump)
    }

    /// The producers `partition` remembers (DescribeProducers); none for a partition nothing
    /// was committed to yet.
    ///
    /// Errors: NOT_COORDINATOR (16) once failed; COORDINATOR_LOAD_IN_PROGRESS (14).
    pub fn producers(&self, partition: DisklessPartition) -> Result<Vec<ProducerInfo>, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        match self.host.lock().producers(partition) {
            Err(E::UnknownTopicOrPartition) => Ok(Vec::new()),
            other => other,
        }
    }

    /// Writes transaction marker `marker` on `partition` (WriteTxnMarkers; a partition nothing
    /// was committed to yet is created first): its offset, once the decision is below the high
    /// watermark. `bumps_epoch`: transactions v2.
    ///
    /// Errors: INVALID_PRODUCER_EPOCH (47), TRANSACTION_COORDINATOR_FENCED (52),
    /// KAFKA_STORAGE_ERROR (56) ([`BatchCoordinator::marker`]); NOT_COORDINATOR (16),
    /// COORDINATOR_LOAD_IN_PROGRESS (14), REQUEST_TIMED_OUT (7) as [`commit`](Self::commit).
    pub async fn marker(
        &self,
        partition: DisklessPartition,
        marker: TxnMarker,
        bumps_epoch: bool,
    ) -> Result<i64, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let (tx, rx) = oneshot::channel();
        {
            let _order = self.write_order.lock().await;
            self.create_unknown([partition]).await?;
            let step = self
                .host
                .lock()
                .marker(now_ms(), tx, partition, marker, bumps_epoch);
            self.take(step).await?;
        }
        self.pump();
        match rx.await {
            Ok(Outcome::MarkerAt(offset)) => Ok(offset),
            Ok(_) => Err(E::UnknownServerError),
            Err(_) => Err(E::NotCoordinator),
        }
    }
}

/// Where retention moves a partition's log start (its batches `found` from the log start, in
/// offset order): past every batch whose largest timestamp is below `now_ms - retention_ms`, and
/// past the oldest batches while the bytes after them exceed `retention_bytes` (either -1:
/// unlimited). `None`: nothing to delete.
pub fn retention_point(
    found: &Found,
    now_ms: i64,
    retention_ms: i64,
    retention_bytes: i64,
) -> Option<i64> {
    let mut target = None;
    if retention_ms >= 0 {
        let horizon = now_ms.saturating_sub(retention_ms);
        // batches whose every record is older than the horizon, from the oldest on
        let expired = found
            .coordinates
            .iter()
            .take_while(|c| c.max_timestamp < horizon)
            .last();
        target = expired.map(|c| c.last_offset + 1);
    }
    if retention_bytes >= 0 {
        let mut kept: i64 = found
            .coordinates
            .iter()
            .map(|c| i64::from(c.byte_len()))
            .sum();
        for c in &found.coordinates {
            if kept <= retention_bytes {
                break;
            }
            kept -= i64::from(c.byte_len());
            target = Some(target.unwrap_or(0).max(c.last_offset + 1));
        }
    }
    target.map(|t| t.min(found.high_watermark))
}

/// The object a key under `diskless/wal/` names (`<32 hex>.wal`), if it is one.
fn wal_object(key: &str) -> Option<ObjectId> {
    let name = key.rsplit('/').next()?.strip_suffix(".wal")?;
    uuid::Uuid::try_parse(name).ok().map(ObjectId)
}

/// The coordinators loaded on this broker, by `__diskless_coordinator` partition.
#[derive(Default)]
pub struct DisklessCoordinators {
    hosts: RwLock<HashMap<i32, Arc<HostedCoordinator>>>,
}

impl DisklessCoordinators {
    /// The `__diskless_coordinator` partitions loaded here (active or not), in order.
    pub fn indexes(&self) -> Vec<i32> {
        let mut out: Vec<i32> = self.hosts.read().keys().copied().collect();
        out.sort_unstable();
        out
    }

    /// The active host of partition `index`, if loaded here.
    pub fn get(&self, index: i32) -> Option<Arc<HostedCoordinator>> {
        self.hosts
            .read()
            .get(&index)
            .filter(|h| h.is_active())
            .cloned()
    }

    /// Whether partition `index` is loaded here at `epoch` and serving or loading.
    pub fn is_loaded(&self, index: i32, epoch: i32) -> bool {
        self.get(index).is_some_and(|h| h.epoch == epoch)
    }

    /// Installs a loaded host (replacing and failing any earlier one) and starts its pump.
    pub fn install(&self, host: HostedCoordinator) {
        let host = Arc::new(host);
        if let Some(old) = self.hosts.write().insert(host.index, host.clone()) {
            old.fail();
        }
        tokio::spawn(host.run());
    }

    /// This broker no longer leads partition `index`: its host stops.
    pub fn unload(&self, index: i32) {
        if let Some(old) = self.hosts.write().remove(&index) {
            tracing::info!(partition = index, "diskless coordinator unloaded");
            old.fail();
        }
    }
}
