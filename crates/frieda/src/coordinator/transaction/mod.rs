//! The transaction coordinator (KIP-98; KIP-890 part 1 verification and part 2 "transactions
//! v2"), sharded like Kafka's over the partitions of `__transaction_state`: a transactional id
//! belongs to partition `abs(javaHash(id)) % transaction.state.log.num.partitions`, and the
//! leader of that partition coordinates it. Kafka's `TransactionCoordinator`,
//! `TransactionStateManager` and `TransactionMarkerChannelManager` in one module:
//!
//! - [`metadata`]: one id's state machine; [`log`]: its records; [`partition`]: one loaded
//!   partition (replay, writes acks=all before a change applies).
//! - InitProducerId, AddPartitionsToTxn (client v0-3 and the partition leaders' v4-5: verify
//!   or add), AddOffsetsToTxn, EndTxn (v1 and v2 semantics: Kafka's `endTransactionWithTV1`
//!   and `endTransaction`), DescribeTransactions, ListTransactions.
//! - Markers: once PrepareCommit/PrepareAbort is written, the commit/abort markers are written
//!   to every partition of the transaction (through a [`MarkerWriter`], the broker's), retried
//!   until each leader took them, and then CompleteCommit/CompleteAbort is written. A
//!   coordinator that loads a partition resumes the markers of every transaction it finds
//!   prepared.
//! - Timeouts: an Ongoing transaction older than its `transaction.timeout.ms` is aborted with
//!   a bumped epoch (the producer is fenced); an idle id expires after
//!   `transactional.id.expiration.ms`.

pub mod log;
pub mod metadata;
pub mod partition;
pub mod steps;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use kafka_protocol::error::ResponseError as E;
use parking_lot::RwLock;

use crate::clock::now_ms;
use crate::coordinator::registry::offsets_partition_for;
use crate::coordinator::{LeadsCheck, LeaseCheck};
use metadata::{epoch_exhausted, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
pub use metadata::{TopicPartition, TxnMetadata, TxnState, TxnTransit, TxnVersion};
use partition::TxnPartition;
use steps::{EndStep, InitStep, MarkerOutcome};

/// The internal topic holding the coordinators' state.
pub use crate::storage::topic::TRANSACTION_STATE_TOPIC;

/// Transaction coordinator settings, Kafka's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms` (900000): longer `transaction.timeout.ms` is
    /// INVALID_TRANSACTION_TIMEOUT.
    pub max_timeout_ms: i32,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10000).
    pub abort_check_interval_ms: u64,
    /// `transactional.id.expiration.ms` (604800000 = 7 days).
    pub id_expiration_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (3600000).
    pub remove_expired_interval_ms: u64,
    /// `transaction.state.log.num.partitions` (50).
    pub num_partitions: i32,
    /// `transaction.state.log.replication.factor` (3; capped by the brokers alive at creation).
    pub replication_factor: i16,
    /// `transaction.state.log.min.isr` (2).
    pub min_isr: i32,
    /// `transaction.state.log.segment.bytes` (104857600).
    pub segment_bytes: u64,
    /// `transaction.partition.verification.enable` (true): partition leaders ask the
    /// coordinator before a transactional batch opens a transaction (KIP-890 part 1).
    pub partition_verification: bool,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            max_timeout_ms: 900_000,
            abort_check_interval_ms: 10_000,
            id_expiration_ms: 604_800_000,
            remove_expired_interval_ms: 3_600_000,
            num_partitions: 50,
            replication_factor: 3,
            min_isr: 2,
            segment_bytes: 104_857_600,
            partition_verification: true,
        }
    }
}

/// A fresh producer id (the single broker's allocator, or a cluster's controller blocks).
pub type IdSource = Arc<dyn Fn() -> BoxFuture<'static, Result<i64, E>> + Send + Sync>;

/// Markers of one transaction for some of its partitions (WriteTxnMarkers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerRequest {
    /// The producer id.
    pub producer_id: i64,
    /// The epoch the markers carry (v2: the bumped one).
    pub producer_epoch: i16,
    /// Commit (true) or abort.
    pub commit: bool,
    /// The coordinator's epoch.
    pub coordinator_epoch: i32,
    /// The transaction's version.
    pub version: TxnVersion,
    /// The partitions to write to.
    pub partitions: Vec<TopicPartition>,
}

/// Writes markers to the leaders of partitions (the broker: appends to partitions it leads,
/// sends WriteTxnMarkers to the others).
pub trait MarkerWriter: Send + Sync {
    /// The outcome per partition. UNKNOWN_TOPIC_OR_PARTITION means the topic is gone (the
    /// partition is dropped from the transaction); INVALID_PRODUCER_EPOCH and
    /// TRANSACTION_COORDINATOR_FENCED end the sending (this coordinator is stale); any other
    /// error is retried.
    fn write(&self, req: MarkerRequest)
        -> BoxFuture<'static, Vec<(TopicPartition, Result<(), E>)>>;
}

/// What DescribeTransactions reports of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    /// State name.
    pub state: TxnState,
    /// Producer id and epoch.
    pub producer_id: i64,
    /// Epoch.
    pub producer_epoch: i16,
    /// `transaction.timeout.ms`.
    pub timeout_ms: i32,
    /// Start of the open transaction (ms), -1 if none.
    pub start_ms: i64,
    /// Its partitions.
    pub partitions: BTreeSet<TopicPartition>,
}

/// One id as ListTransactions reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnListing {
    /// `transactional.id`.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// State.
    pub state: TxnState,
}

/// ListTransactions filters (KIP-664, KIP-994, KIP-1152): empty lists match everything.
#[derive(Debug, Clone, Default)]
pub struct TxnFilter {
    /// States to list.
    pub states: Vec<TxnState>,
    /// Producer ids to list.
    pub producer_ids: Vec<i64>,
    /// Only transactions running longer than this (ms), -1: any.
    pub duration_ms: i64,
    /// Only ids matching this pattern (a Java regular expression; `.*` style).
    pub pattern: Option<String>,
}

/// The transaction coordinators of the `__transaction_state` partitions this broker leads.
pub struct TransactionCoordinators {
    partitions: AtomicI32,
    loaded: RwLock<HashMap<i32, Arc<TxnPartition>>>,
    /// Settings.
    pub config: TxnConfig,
    ids: OnceLock<IdSource>,
    markers: OnceLock<Arc<dyn MarkerWriter>>,
    /// This broker's lease, for the writes of every partition loaded from now on.
    lease: OnceLock<LeaseCheck>,
    /// Whether the metadata names this broker the leader of a `__transaction_state` partition.
    leads: OnceLock<LeadsCheck>,
}

impl TransactionCoordinators {
    /// Coordinators with nothing loaded (`partitions`: the topic's partition count, 0 while it
    /// does not exist).
    pub fn new(config: TxnConfig, partitions: i32) -> Arc<TransactionCoordinators> {
        Arc::new(TransactionCoordinators {
            partitions: AtomicI32::new(partitions),
            loaded: RwLock::new(HashMap::new()),
            config,
            ids: OnceLock::new(),
            markers: OnceLock::new(),
            lease: OnceLock::new(),
            leads: OnceLock::new(),
        })
    }

    /// Every partition loaded from now on writes only while `lease` holds (set once, when the
    /// broker joins the cluster, before any load; as the group coordinators').
    pub fn set_lease(&self, lease: LeaseCheck) {
        if self.lease.set(lease).is_err() {
            tracing::error!("the transaction coordinators' lease was set twice; keeping the first");
        }
    }

    /// How a request for a partition not loaded here learns whether this broker is about to
    /// load it (set once, when the broker joins the cluster; [`super::LeadsCheck`]).
    pub fn set_leads(&self, leads: LeadsCheck) {
        if self.leads.set(leads).is_err() {
            tracing::error!(
                "the transaction coordinators' leadership check was set twice; keeping the first"
            );
        }
    }

    /// Connects the producer id source and the marker writer (once, at start).
    pub fn attach(&self, ids: IdSource, markers: Arc<dyn MarkerWriter>) {
        let _ = self.ids.set(ids);
        let _ = self.markers.set(markers);
    }

    /// Partitions of `__transaction_state` (0 before it exists).
    pub fn partition_count(&self) -> i32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Sets the partition count (from the cluster metadata).
    pub fn set_partition_count(&self, n: i32) {
        self.partitions.store(n, Ordering::Release);
    }

    /// The `__transaction_state` partition of `transactional_id` (Kafka's
    /// `TransactionStateManager.partitionFor`, the same hash as groups use).
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        offsets_partition_for(transactional_id, self.partition_count())
    }

    /// Whether partition `index`'s coordinator runs here.
    pub fn is_loaded(&self, index: i32) -> bool {
        self.loaded.read().contains_key(&index)
    }

    /// The coordinator epoch partition `index` was loaded with, if it runs here (a new leader
    /// epoch of the partition reloads it, so its markers carry the new epoch).
    pub fn loaded_epoch(&self, index: i32) -> Option<i32> {
        self.loaded.read().get(&index).map(|p| p.coordinator_epoch)
    }

    /// The loaded partition of `id`.
    ///
    /// Errors: COORDINATOR_NOT_AVAILABLE before the topic exists, NOT_COORDINATOR where this
    /// broker does not lead the partition, COORDINATOR_LOAD_IN_PROGRESS (14) while the metadata
    /// names this broker its leader but it has not loaded it yet, and until what the load read
    /// is committed ([`TxnPartition::is_committed`]).
    fn partition(&self, id: &str) -> Result<Arc<TxnPartition>, E> {
        if self.partition_count() == 0 {
            return Err(E::CoordinatorNotAvailable);
        }
        let index = self.partition_for(id);
        let p = self
            .loaded
            .read()
            .get(&index)
            .cloned()
            .ok_or_else(|| super::not_loaded(self.leads.get(), index))?;
        if !p.is_committed() {
            return Err(E::CoordinatorLoadInProgress);
        }
        Ok(p)
    }

    /// The loaded partitions whose load is committed ([`TxnPartition::is_committed`]): the
    /// ones the periodic work (timeouts, expiry) acts on.
    fn committed_partitions(&self) -> Vec<Arc<TxnPartition>> {
        self.loaded
            .read()
            .values()
            .filter(|p| p.is_committed())
            .cloned()
            .collect()
    }

    async fn next_id(&self) -> Result<i64, E> {
        match self.ids.get() {
            Some(f) => f().await,
            None => Err(E::CoordinatorNotAvailable),
        }
    }

    /// Loads partition `index` (this broker leads it since `coordinator_epoch`) and resumes
    /// the markers of every transaction found prepared. Blocking (replays the log).
    ///
    /// Errors: the log cannot be read.
    pub fn load(
        self: &Arc<Self>,
        index: i32,
        coordinator_epoch: i32,
        log: Arc<crate::storage::partition::Partition>,
    ) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        let p = Arc::new(TxnPartition::load(
            index,
            coordinator_epoch,
            log,
            usize::try_from(self.config.min_isr).unwrap_or(1),
            self.lease.get().cloned(),
        )?);
        let resume: Vec<(String, MarkerRequest, TxnTransit)> = {
            let mut txns = p.txns.lock();
            let now = now_ms();
            txns.iter_mut()
                .filter_map(|(id, m)| {
                    let (marker, complete) = steps::resume_markers(m, coordinator_epoch, now)?;
                    Some((id.clone(), marker, complete))
                })
                .collect()
        };
        if let Some(old) = self.loaded.write().insert(index, p.clone()) {
            old.deactivate();
        }
        for (id, marker, complete) in resume {
            tracing::info!(transactional_id = %id, partition = index, commit = marker.commit,
                "resuming the markers of a prepared transaction");
            tokio::spawn(self.clone().send_markers(p.clone(), id, marker, complete));
        }
        tracing::info!(
            partition = index,
            coordinator_epoch,
            ms = started.elapsed().as_millis() as u64,
            "loaded transaction coordinator"
        );
        Ok(())
    }

    /// Unloads partition `index` (leadership moved): requests for its ids get NOT_COORDINATOR,
    /// its marker senders stop.
    pub fn unload(&self, index: i32) {
        if let Some(p) = self.loaded.write().remove(&index) {
            p.deactivate();
            tracing::info!(partition = index, "unloaded transaction coordinator");
        }
    }

    /// InitProducerId with a transactional id (Kafka's `handleInitProducerId`): a new producer
    /// id for a new id, else the next epoch (fencing older producers of the id); an open
    /// transaction is aborted first (answered CONCURRENT_TRANSACTIONS: the producer retries);
    /// `expected` (KIP-360, v3+) lets a producer recover its own id and epoch.
    ///
    /// Errors: INVALID_REQUEST (42) for an empty id, INVALID_TRANSACTION_TIMEOUT (50) above
    /// `transaction.max.timeout.ms`, CONCURRENT_TRANSACTIONS (51), PRODUCER_FENCED (90),
    /// NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15).
    pub async fn init_producer_id(
        self: &Arc<Self>,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), E> {
        if id.is_empty() {
            return Err(E::InvalidRequest);
        }
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(E::InvalidTransactionTimeout);
        }
        let p = self.partition(id)?;
        let needs_id = match p.txns.lock().get(id) {
            None => true,
            Some(m) => epoch_exhausted(m.producer_epoch),
        };
        let fresh = if needs_id {
            Some(self.next_id().await?)
        } else {
            None
        };
        let now = now_ms();
        let step = {
            let mut txns = p.txns.lock();
            if !txns.contains_key(id) {
                let pid = fresh.ok_or(E::ConcurrentTransactions)?;
                txns.insert(id.to_string(), TxnMetadata::new(id, pid, timeout_ms, now));
            }
            let m = txns.get_mut(id).expect("inserted above");
            steps::plan_init(m, timeout_ms, expected, fresh, now)?
        };
        match step {
            InitStep::Write(t) => {
                p.write(id, &t).await?;
                tracing::info!(
                    transactional_id = id,
                    producer_id = t.producer_id,
                    epoch = t.producer_epoch,
                    partition = p.index,
                    "initialized transactional id"
                );
                Ok((t.producer_id, t.producer_epoch))
            }
            InitStep::Fence(t) => {
                // Abort the open transaction of the fenced producer first; the new producer
                // retries and gets the epoch after it.
                let r = self.abort_fenced(&p, id, &t).await;
                Err(r.err().unwrap_or(E::ConcurrentTransactions))
            }
        }
    }

    /// Adds partitions to `id`'s transaction (AddPartitionsToTxn v0-3 from clients, an
    /// implicit add from a partition leader with transactions v2, AddOffsetsToTxn).
    ///
    /// Errors: INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING (49) for an unknown id or another
    /// producer id, PRODUCER_FENCED (90) for another epoch, CONCURRENT_TRANSACTIONS (51) while
    /// the previous transaction's markers are written, NOT_COORDINATOR,
    /// COORDINATOR_NOT_AVAILABLE.
    pub async fn add_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TopicPartition],
        version: TxnVersion,
    ) -> Result<(), E> {
        if id.is_empty() {
            return Err(E::InvalidRequest);
        }
        let p = self.partition(id)?;
        let t = {
            let mut txns = p.txns.lock();
            let m = txns.get_mut(id).ok_or(E::InvalidProducerIdMapping)?;
            match steps::plan_add_partitions(m, producer_id, epoch, partitions, version, now_ms())?
            {
                Some(t) => t,
                None => return Ok(()),
            }
        };
        p.write(id, &t).await
    }

    /// Whether `partitions` are in `id`'s transaction (KIP-890 part 1, AddPartitionsToTxn v4+
    /// with `verify_only`; [`steps::verify_partitions`]): per partition NONE or
    /// TRANSACTION_ABORTABLE (the producer aborts).
    ///
    /// Errors (for every partition): INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
    /// CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.
    pub fn verify_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<E>)>, E> {
        if id.is_empty() {
            return Err(E::InvalidRequest);
        }
        let p = self.partition(id)?;
        let txns = p.txns.lock();
        let m = txns.get(id).ok_or(E::InvalidProducerIdMapping)?;
        steps::verify_partitions(m, producer_id, epoch, partitions)
    }

    /// The `__consumer_offsets` partition AddOffsetsToTxn adds for `group`.
    pub fn offsets_partition(group: &str, offsets_partitions: i32) -> TopicPartition {
        (
            crate::storage::topic::OFFSETS_TOPIC.to_string(),
            offsets_partition_for(group, offsets_partitions),
        )
    }

    /// EndTxn (Kafka's `handleEndTransaction`): commit or abort. Returns the producer id and
    /// epoch the producer continues with (v2: bumped; v1: -1, -1, the producer keeps its own).
    /// The markers are written after the answer; the producer's next transaction waits
    /// (CONCURRENT_TRANSACTIONS) until they are.
    ///
    /// Errors: INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
    /// CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE (48) for a commit without an open
    /// transaction (or, v1, an abort of none), NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.
    pub async fn end_txn(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        version: TxnVersion,
    ) -> Result<(i64, i16), E> {
        if id.is_empty() {
            return Err(E::InvalidRequest);
        }
        let p = self.partition(id)?;
        self.end_txn_in(&p, id, producer_id, epoch, commit, version, true)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn end_txn_in(
        self: &Arc<Self>,
        p: &Arc<TxnPartition>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        version: TxnVersion,
        from_client: bool,
    ) -> Result<(i64, i16), E> {
        // A completion past the last epoch (v2) rotates to a new producer id: get one first.
        let exhausted = p
            .txns
            .lock()
            .get(id)
            .is_some_and(|m| epoch_exhausted(m.producer_epoch));
        let next_id = if exhausted && version.bumps_epoch() {
            self.next_id().await?
        } else {
            NO_PRODUCER_ID
        };
        let now = now_ms();
        let step = {
            let mut txns = p.txns.lock();
            let m = txns.get_mut(id).ok_or(E::InvalidProducerIdMapping)?;
            if version.bumps_epoch() {
                steps::prepare_end_v2(m, producer_id, epoch, commit, from_client, next_id, now)?
            } else {
                steps::prepare_end_v1(m, producer_id, epoch, commit, from_client, now)?
            }
        };
        let (t, fence) = match step {
            EndStep::Done(pid, e) => {
                return Ok(if version.bumps_epoch() {
                    (pid, e)
                } else {
                    (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                })
            }
            EndStep::Write(t, fence) => (t, fence),
        };
        if let Err(e) = p.write(id, &t).await {
            if fence && !version.bumps_epoch() {
                if let Some(m) = p.txns.lock().get_mut(id) {
                    m.failed_epoch_fence = true;
                }
            }
            tracing::info!(transactional_id = id, error = ?e, "writing the end of a transaction failed");
            return Err(e);
        }
        let (marker, complete) = {
            let mut txns = p.txns.lock();
            let m = txns.get_mut(id).ok_or(E::NotCoordinator)?;
            steps::markers_after_prepare(m, t.producer_id, commit, p.coordinator_epoch, now_ms())?
        };
        let answer = if version.bumps_epoch() {
            (complete.producer_id, complete.producer_epoch)
        } else {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        };
        tokio::spawn(
            self.clone()
                .send_markers(p.clone(), id.to_string(), marker, complete),
        );
        Ok(answer)
    }

    /// Writes `marker` to every partition (retrying until each leader took it, dropping
    /// partitions of deleted topics), then the completion `complete`.
    async fn send_markers(
        self: Arc<Self>,
        p: Arc<TxnPartition>,
        id: String,
        marker: MarkerRequest,
        complete: TxnTransit,
    ) {
        let Some(writer) = self.markers.get().cloned() else {
            tracing::error!("no marker writer attached; transaction markers cannot be written");
            return;
        };
        // Markers resumed by a load wait until what the load read is committed.
        if !p.wait_committed().await {
            return;
        }
        let mut left: BTreeSet<TopicPartition> = marker.partitions.iter().cloned().collect();
        let mut backoff = Duration::from_millis(50);
        while !left.is_empty() {
            if !p.is_active() {
                return;
            }
            let req = MarkerRequest {
                partitions: left.iter().cloned().collect(),
                ..marker.clone()
            };
            for (tp, r) in writer.write(req).await {
                match steps::marker_outcome(&r) {
                    MarkerOutcome::Written => {
                        left.remove(&tp);
                    }
                    MarkerOutcome::Gone => {
                        tracing::info!(transactional_id = %id, topic = %tp.0, partition = tp.1,
                            "the partition of a transaction is gone; no marker written there");
                        left.remove(&tp);
                    }
                    MarkerOutcome::Stale => {
                        tracing::warn!(transactional_id = %id, topic = %tp.0, partition = tp.1, error = ?r.err(),
                            "a marker was refused as stale; this coordinator stops sending for the transaction");
                        return;
                    }
                    MarkerOutcome::Retry => {
                        tracing::debug!(transactional_id = %id, topic = %tp.0, partition = tp.1, error = ?r.err(),
                            "a marker will be retried");
                    }
                }
            }
            if !left.is_empty() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
        // The completion is retried while this broker coordinates the transaction (Kafka's
        // TransactionMarkerChannelManager retries it on every error but NOT_COORDINATOR): given
        // up on, the transaction stayed in PrepareCommit here and every InitProducerId of its id
        // got CONCURRENT_TRANSACTIONS until a restart (tests/jepsen pause --txn seed 4103: the
        // coordinator's lease ran out while it was paused, and it stayed the leader).
        let mut complete = complete;
        let mut backoff = Duration::from_millis(50);
        loop {
            match p.write(&id, &complete).await {
                Ok(()) => {
                    tracing::debug!(transactional_id = %id, state = ?complete.state, "transaction completed");
                    return;
                }
                Err(E::NotCoordinator) => {
                    tracing::info!(transactional_id = %id,
                        "no longer the coordinator; the partition's next coordinator completes the transaction");
                    return;
                }
                Err(e) => tracing::warn!(transactional_id = %id, error = ?e,
                    "writing the completion of a transaction failed; retrying"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
            // The failed write abandoned the transition: prepare it again, if the transaction is
            // still the one whose markers were written.
            let again = {
                let mut txns = p.txns.lock();
                match txns.get_mut(&id) {
                    Some(m) if p.is_active() => {
                        steps::complete_again(m, marker.producer_id, now_ms())
                    }
                    _ => None,
                }
            };
            match again {
                Some(t) => complete = t,
                None => return,
            }
        }
    }

    /// DescribeTransactions of one id.
    ///
    /// Errors: TRANSACTIONAL_ID_NOT_FOUND (105), INVALID_REQUEST, NOT_COORDINATOR,
    /// COORDINATOR_NOT_AVAILABLE.
    pub fn describe(&self, id: &str) -> Result<TxnDescription, E> {
        if id.is_empty() {
            return Err(E::InvalidRequest);
        }
        let p = self.partition(id)?;
        let txns = p.txns.lock();
        let m = txns
            .get(id)
            .filter(|m| m.state != TxnState::Dead)
            .ok_or(E::TransactionalIdNotFound)?;
        Ok(TxnDescription {
            state: m.state,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            timeout_ms: m.txn_timeout_ms,
            start_ms: m.txn_start_ms,
            partitions: m.partitions.clone(),
        })
    }

    /// ListTransactions of the ids coordinated here matching `f`.
    pub fn list(&self, f: &TxnFilter) -> Vec<TxnListing> {
        let now = now_ms();
        let pattern = f.pattern.as_deref().and_then(compile_pattern);
        let mut out = Vec::new();
        for p in self.loaded.read().values() {
            for (id, m) in p.txns.lock().iter() {
                if m.state == TxnState::Dead
                    || (!f.states.is_empty() && !f.states.contains(&m.state))
                    || (!f.producer_ids.is_empty() && !f.producer_ids.contains(&m.producer_id))
                    || (f.duration_ms >= 0
                        && (m.txn_start_ms < 0
                            || now.saturating_sub(m.txn_start_ms) < f.duration_ms))
                    || pattern.as_ref().is_some_and(|re| !re.is_match(id))
                {
                    continue;
                }
                out.push(TxnListing {
                    transactional_id: id.clone(),
                    producer_id: m.producer_id,
                    state: m.state,
                });
            }
        }
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        out
    }

    /// Aborts every Ongoing transaction older than its timeout (Kafka's
    /// `abortTimedOutTransactions`): its epoch is bumped (the producer is fenced) and the abort
    /// markers written.
    pub async fn abort_timed_out(self: &Arc<Self>) {
        let now = now_ms();
        let partitions = self.committed_partitions();
        for p in partitions {
            let fences: Vec<(String, TxnTransit)> = {
                let mut txns = p.txns.lock();
                txns.iter_mut()
                    .filter_map(|(id, m)| Some((id.clone(), steps::fence_if_timed_out(m, now)?)))
                    .collect()
            };
            for (id, t) in fences {
                tracing::info!(transactional_id = %id, producer_id = t.producer_id,
                    "aborting a transaction past its timeout");
                if let Err(e) = self.abort_fenced(&p, &id, &t).await {
                    tracing::info!(transactional_id = %id, error = ?e, "aborting a timed-out transaction failed");
                }
            }
        }
    }

    /// Aborts the open transaction of `id` after an epoch fence `t` (InitProducerId of a new
    /// producer, or a timeout): an abort with the bumped epoch, as Kafka's v2 abort of a fenced
    /// transaction. If it fails, the fence is abandoned so a later attempt can fence again.
    async fn abort_fenced(
        self: &Arc<Self>,
        p: &Arc<TxnPartition>,
        id: &str,
        t: &TxnTransit,
    ) -> Result<(), E> {
        let r = self
            .end_txn_in(
                p,
                id,
                t.producer_id,
                t.producer_epoch,
                false,
                TxnVersion::V2,
                false,
            )
            .await;
        if r.is_err() {
            abandon_fence(p, id);
        }
        r.map(|_| ())
    }

    /// Removes ids idle for `transactional.id.expiration.ms` (tombstones).
    pub async fn expire_ids(&self) {
        let now = now_ms();
        let partitions = self.committed_partitions();
        for p in partitions {
            let dead: Vec<(String, TxnTransit)> = {
                let mut txns = p.txns.lock();
                txns.iter_mut()
                    .filter(|(_, m)| {
                        m.state.expiration_allowed()
                            && m.pending.is_none()
                            && now.saturating_sub(m.txn_last_update_ms)
                                >= self.config.id_expiration_ms
                    })
                    .filter_map(|(id, m)| Some((id.clone(), m.prepare_dead().ok()?)))
                    .collect()
            };
            for (id, t) in dead {
                match p.write(&id, &t).await {
                    Ok(()) => tracing::info!(transactional_id = %id, "expired transactional id"),
                    Err(e) => {
                        tracing::debug!(transactional_id = %id, error = ?e, "expiring failed")
                    }
                }
            }
        }
    }

    /// Periodic work until `stop`: timed-out transactions, expired ids.
    pub async fn run(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let abort_every = Duration::from_millis(self.config.abort_check_interval_ms.max(100));
        let expire_every = Duration::from_millis(self.config.remove_expired_interval_ms.max(100));
        let mut abort = tokio::time::interval(abort_every);
        let mut expire = tokio::time::interval(expire_every);
        abort.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        expire.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = abort.tick() => self.abort_timed_out().await,
                _ = expire.tick() => self.expire_ids().await,
                _ = stop.changed() => return,
            }
        }
    }
}

/// Forgets a fence still pending after its abort failed early ([`steps::abandon_fence`]).
fn abandon_fence(p: &TxnPartition, id: &str) {
    if let Some(m) = p.txns.lock().get_mut(id) {
        steps::abandon_fence(m);
    }
}

/// A transactional id pattern (ListTransactions v2, KIP-1152): a Java regular expression that
/// must match the whole id (RE2 syntax, the common subset). An invalid one matches nothing.
fn compile_pattern(p: &str) -> Option<regex::Regex> {
    if p.is_empty() {
        return None;
    }
    Some(regex::Regex::new(&format!("^(?:{p})$")).unwrap_or_else(|e| {
        tracing::info!(pattern = p, error = %e, "an invalid transactional id pattern matches nothing");
        regex::Regex::new("[^\\s\\S]").expect("a valid regex")
    }))
}

#[cfg(test)]
mod tests;
