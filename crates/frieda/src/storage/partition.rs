//! One partition as the handlers see it: the log's read side, the writer-owned state, and the
//! wake-up for fetches waiting on new data.

use super::backlog::ReadFor;
use super::leader_append::{decide, Decision, LeaderLog};
pub use super::leader_append::{producer_error, ProducerCheck};
use super::log_start::LogStartCheckpoint;
use super::topic_config::ProducePolicy;
use super::writer::{AppendOutcome, WriterHandle, WriterJob};
use crate::clock::now_ms;
use crate::replication::{follower, Replication};
use bytes::BytesMut;
use frieda_log::{BatchHeader, LogError, LogReader, PartitionLog, ProducerError, SequenceCheck};
use kafka_protocol::error::ResponseError;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{oneshot, Notify};

/// The partition's writer-side state, behind its lock: taken by the thread that appends (a
/// network thread with inline appends, else the log writer thread), briefly by the log writer
/// around an fsync (never during it), and by admin operations (delete) that must exclude both.
pub struct PartitionState {
    /// The partition log (single writer), with its producer state.
    pub log: PartitionLog,
}

impl PartitionState {
    /// True when the flush policy wants the appends so far fsync'ed now
    /// (`flush.messages` records written since the last flush).
    pub fn flush_due(&self) -> bool {
        let unflushed = self.log.unflushed_messages();
        unflushed > 0 && unflushed >= self.log.config().flush_messages
    }
}

/// An append that finished at once, or one waiting for a log writer thread.
enum Submitted {
    Done(Result<AppendOutcome, ResponseError>),
    Waiting(oneshot::Receiver<Result<AppendOutcome, ResponseError>>),
}

/// What [`Partition::read_zero_copy`] found.
#[derive(Debug)]
pub enum Fetched {
    /// Batches in memory (the tail cache).
    Memory(frieda_log::FetchData),
    /// File ranges holding the batches (the segment files).
    Files(frieda_log::FileFetch),
}

/// A topic partition on this broker: the only replica (single-broker mode), or in a cluster its
/// leader, a follower or an offline replica ([`Replication`]).
pub struct Partition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub index: i32,
    reader: LogReader,
    /// Writer-side state; `None` once the partition was deleted and its log closed.
    pub(crate) state: Mutex<Option<PartitionState>>,
    data_arrived: Notify,
    deleted: AtomicBool,
    policy: RwLock<ProducePolicy>,
    writer: WriterHandle,
    /// Role, followers' progress and high watermark (cluster mode).
    pub repl: Replication,
    /// Where a moved log start offset is persisted (`None`: it cannot be moved, e.g. the
    /// single broker's offsets log).
    log_starts: Option<Arc<LogStartCheckpoint>>,
    /// Appends of this partition queued on, or running on, the bulk-append lane: while any is,
    /// every later append goes there too, so appends land in the order they were submitted.
    bulk_pending: AtomicUsize,
    /// What tiered storage says of this partition (issue 32).
    pub tiered: TieredView,
}

/// What tiered storage (KIP-405, [`crate::tiering`]) says of one replica's partition, refreshed
/// from the metadata image by the remote-log manager every
/// `remote.log.manager.task.interval.ms` on every broker. All offsets; -1 where there is none.
#[derive(Debug)]
pub struct TieredView {
    /// The topic has `remote.storage.enable=true` (and the broker tiers).
    enabled: AtomicBool,
    /// Copies go on (`remote.log.copy.disable` is not true): local retention then deletes
    /// only copied segments, by `local.retention.*`.
    copying: AtomicBool,
    /// Last offset of the copied (`COPY_FINISHED`) segments.
    copied_end: AtomicI64,
    /// What local retention may delete (issue 57): the last offset of the contiguous run of
    /// finished copies from the oldest (`RemoteLog::covered_end`) and the leader epochs of
    /// their batches (`RemoteLog::covered_epochs`), read together.
    covered: parking_lot::Mutex<Covered>,
    /// First offset of the contiguous run of copied segments ending at `copied_end`.
    remote_start: AtomicI64,
    /// The log start offset DeleteRecords set (KIP-107, kept in the image:
    /// `RemoteLog::log_start`): the log starts at least here whatever the copies hold.
    deleted_below: AtomicI64,
    /// `local.retention.ms` resolved (-2 read as `retention.ms`), ms; -1 unbounded.
    local_retention_ms: AtomicI64,
    /// `local.retention.bytes` resolved (-2 read as `retention.bytes`), bytes; -1 unbounded.
    local_retention_bytes: AtomicI64,
}

impl Default for TieredView {
    fn default() -> Self {
        TieredView {
            enabled: AtomicBool::new(false),
            copying: AtomicBool::new(false),
            copied_end: AtomicI64::new(-1),
            covered: parking_lot::Mutex::new(Covered::default()),
            remote_start: AtomicI64::new(-1),
            deleted_below: AtomicI64::new(-1),
            local_retention_ms: AtomicI64::new(-1),
            local_retention_bytes: AtomicI64::new(-1),
        }
    }
}

/// What the finished copies cover, for local retention: up to which offset, in which leader
/// epochs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Covered {
    /// The last offset (`RemoteLog::covered_end`), -1 if none.
    pub end: i64,
    /// `(epoch, first offset)` of the copies' batches up to `end`, ascending
    /// (`RemoteLog::covered_epochs`): a replica whose own epochs differ keeps its segments
    /// from there (`PartitionLog::enforce_local_retention`).
    pub epochs: Arc<[(i32, i64)]>,
}

impl Default for Covered {
    fn default() -> Self {
        Covered {
            end: -1,
            epochs: Arc::from(Vec::new()),
        }
    }
}

/// What local retention of a tiered partition works with ([`TieredView::local_retention`]).
#[derive(Debug, Clone)]
pub struct LocalRetention {
    /// What the finished copies cover.
    pub covered: Covered,
    /// `local.retention.ms` resolved, ms; -1 unbounded.
    pub ms: i64,
    /// `local.retention.bytes` resolved, bytes; -1 unbounded.
    pub bytes: i64,
}

/// One refresh of a [`TieredView`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TieredState {
    /// See [`TieredView`]'s fields.
    pub enabled: bool,
    /// See [`TieredView`].
    pub copying: bool,
    /// See [`TieredView`].
    pub copied_end: i64,
    /// See [`TieredView`].
    pub covered: Covered,
    /// See [`TieredView`].
    pub remote_start: i64,
    /// See [`TieredView`].
    pub deleted_below: i64,
    /// See [`TieredView`].
    pub local_retention_ms: i64,
    /// See [`TieredView`].
    pub local_retention_bytes: i64,
}

impl TieredView {
    /// Stores a refresh. `remote_start` is written before `copied_end`, and both before
    /// `enabled`, so a reader that sees a copied end also sees where the remote run begins.
    pub fn set(&self, s: TieredState) {
        self.remote_start.store(s.remote_start, Ordering::Release);
        self.deleted_below
            .fetch_max(s.deleted_below, Ordering::AcqRel);
        *self.covered.lock() = s.covered;
        self.copied_end.store(s.copied_end, Ordering::Release);
        self.local_retention_ms
            .store(s.local_retention_ms, Ordering::Release);
        self.local_retention_bytes
            .store(s.local_retention_bytes, Ordering::Release);
        self.copying.store(s.copying, Ordering::Release);
        self.enabled.store(s.enabled, Ordering::Release);
    }

    /// Whether the partition is tiered.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Last copied offset, -1 if none (ListOffsets `-5`).
    pub fn copied_end(&self) -> i64 {
        self.copied_end.load(Ordering::Acquire)
    }

    /// What local retention of a tiered partition works with when it applies (tiered and
    /// copying), else `None`. Local retention deletes only segments wholly at or below the
    /// covered end, each offset of them in a finished copy of this replica's lineage or
    /// expired from the remote tier (issue 57).
    pub fn local_retention(&self) -> Option<LocalRetention> {
        (self.enabled() && self.copying.load(Ordering::Acquire)).then(|| LocalRetention {
            covered: self.covered.lock().clone(),
            ms: self.local_retention_ms.load(Ordering::Acquire),
            bytes: self.local_retention_bytes.load(Ordering::Acquire),
        })
    }

    /// The log start offset of the whole log, remote tier included, given the local log's
    /// start: the start of the copied run when that run reaches the local start, else the
    /// local start; at least the offset DeleteRecords moved it to (which may lie above the
    /// local start for a moment, until the local log follows).
    pub fn log_start(&self, local_start: i64) -> i64 {
        if !self.enabled() {
            return local_start;
        }
        let start = self.remote_start.load(Ordering::Acquire);
        let end = self.copied_end();
        let derived = if start >= 0 && start < local_start && end + 1 >= local_start {
            start
        } else {
            local_start
        };
        derived.max(self.deleted_below())
    }

    /// The log start offset DeleteRecords set on this tiered partition, -1 if none.
    pub fn deleted_below(&self) -> i64 {
        self.deleted_below.load(Ordering::Acquire)
    }

    /// Takes a log start offset DeleteRecords just committed (never lowers it), before the
    /// next refresh brings it from the image.
    pub fn note_deleted_below(&self, offset: i64) {
        self.deleted_below.fetch_max(offset, Ordering::AcqRel);
    }
}

impl Partition {
    /// Wraps an opened log (which rebuilt its producer state when it opened).
    pub fn new(
        topic: Arc<str>,
        index: i32,
        log: PartitionLog,
        writer: WriterHandle,
        policy: ProducePolicy,
    ) -> Self {
        let repl = Replication::default();
        repl.set_min_insync(policy.min_insync_replicas);
        repl.set_quorum_acks(policy.quorum_acks);
        Partition {
            topic,
            index,
            policy: RwLock::new(policy),
            repl,
            reader: log.reader(),
            state: Mutex::new(Some(PartitionState { log })),
            data_arrived: Notify::new(),
            deleted: AtomicBool::new(false),
            writer,
            log_starts: None,
            bulk_pending: AtomicUsize::new(0),
            tiered: TieredView::default(),
        }
    }

    /// Lets the log start offset move ([`advance_log_start`](Self::advance_log_start)),
    /// persisted in `starts`.
    pub(crate) fn with_log_starts(mut self, starts: Arc<LogStartCheckpoint>) -> Self {
        self.log_starts = Some(starts);
        self
    }

    /// Read side of the log, usable from any thread.
    pub fn reader(&self) -> &LogReader {
        &self.reader
    }

    /// Reads whole batches from `offset`, about `max_bytes` (the first batch whole, KIP-74), below
    /// `max_offset`: from the tail cache when it holds them, else from the segment files on the
    /// backlog lane ([`super::backlog`]: its own threads at idle CPU priority), so a read of
    /// cold data never holds a runtime worker nor takes CPU that appends and tail reads want.
    ///
    /// Errors: the log's (`OffsetOutOfRange`, `Offline`, I/O); `Corrupt` if the backlog read
    /// failed to run.
    pub async fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<frieda_log::FetchData, LogError> {
        self.read_classed(offset, max_bytes, max_offset, ReadFor::Replica)
            .await
            .map(|(d, _)| d)
    }

    /// [`read`](Self::read) for `reader` (a consumer's read of the segment files is charged to
    /// the backlog lane's byte budget, `backlog.read.max.bytes.per.second`, and may wait for
    /// it), also saying whether the data came from the segment files (the backlog lane) rather
    /// than the tail cache.
    pub async fn read_classed(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
        reader: ReadFor,
    ) -> Result<(frieda_log::FetchData, bool), LogError> {
        if let Some(r) = self.reader.read_cached(offset, max_bytes, max_offset) {
            return r.map(|d| (d, false));
        }
        let plan = self.reader.plan_disk_read(offset, max_bytes, max_offset)?;
        super::backlog::read(plan, reader).await.map(|d| (d, true))
    }

    /// A consumer's [`read`](Self::read) for a zero-copy answer: from the tail cache, else the
    /// file ranges that hold the batches (found on the backlog lane, within its byte budget),
    /// to be sent with `sendfile` ([`super::zero_copy`]).
    ///
    /// Errors: as [`read`](Self::read).
    pub async fn read_zero_copy(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Result<Fetched, LogError> {
        if let Some(r) = self.reader.read_cached(offset, max_bytes, max_offset) {
            return r.map(Fetched::Memory);
        }
        let plan = self.reader.plan_file_read(offset, max_bytes, max_offset)?;
        super::backlog::read_unread(plan, ReadFor::Consumer)
            .await
            .map(Fetched::Files)
    }

    /// High watermark (exclusive): what consumers may read. With a single replica the log end
    /// offset; but when every append must be fsync'ed before it is acknowledged
    /// (`flush.messages=1`) only what is fsync'ed, as in Kafka, whose append flushes before the
    /// high watermark moves: a power cut can then never take back a record a consumer saw.
    pub fn high_watermark(&self) -> i64 {
        let leo = if self.repl.is_replicated() {
            self.repl.high_watermark().min(self.reader.log_end_offset())
        } else {
            self.reader.log_end_offset()
        };
        if self.policy.read().flush_every_append {
            leo.min(self.reader.recovery_point())
        } else {
            leo
        }
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.reader.log_start_offset()
    }

    /// The log start offset of the whole log: below the local one when older records are in
    /// the remote tier (KIP-405's log start offset; ListOffsets `-2`, Fetch responses), else
    /// the local one.
    pub fn total_log_start_offset(&self) -> i64 {
        self.tiered.log_start(self.reader.log_start_offset())
    }

    /// Whether `offset` lies below the local log, in the remote tier of this tiered partition:
    /// a fetch there is read from the bucket.
    pub fn in_remote_tier(&self, offset: i64) -> bool {
        let local_start = self.reader.log_start_offset();
        offset < local_start && offset >= self.tiered.log_start(local_start)
    }

    /// What a produce must check and do (`max.message.bytes`, keys on compacted topics,
    /// timestamp bounds, `compression.type`); read without the partition's lock so produce
    /// validation never waits for an append.
    pub fn produce_policy(&self) -> ProducePolicy {
        *self.policy.read()
    }

    /// Applies a new configuration (on the caller's thread; briefly takes the writer lock).
    pub fn set_configs(&self, config: frieda_log::LogConfig, policy: ProducePolicy) {
        self.repl.set_min_insync(policy.min_insync_replicas);
        self.repl.set_quorum_acks(policy.quorum_acks);
        *self.policy.write() = policy;
        if let Some(state) = self.state.lock().as_mut() {
            state.log.set_config(config);
        }
    }

    /// True while the log accepts appends and serves reads (false after a failed fsync or
    /// write, until the broker restarts and recovers it from disk).
    pub fn is_online(&self) -> bool {
        !self.reader.is_offline()
    }

    /// The log's recovery point (every offset below it was fsync'ed), or `None` once the
    /// partition was deleted or closed.
    pub fn recovery_point(&self) -> Option<i64> {
        self.state.lock().as_ref().map(|s| s.log.recovery_point())
    }

    /// True once the topic was deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::Acquire)
    }

    /// Appends one validated batch and waits for the outcome: after the write, and after the
    /// fsync when the flush policy asks for one. With `log.append.mode = "inline"` the write
    /// happens on the calling thread before this returns its first `Poll`; otherwise on the
    /// partition's log writer thread.
    ///
    /// Errors: the Kafka error to put in the partition's produce response
    /// (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, KAFKA_STORAGE_ERROR,
    /// UNKNOWN_TOPIC_OR_PARTITION if deleted meanwhile).
    pub async fn append(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
    ) -> Result<AppendOutcome, ResponseError> {
        self.append_checked(records, header, ProducerCheck::PLAIN)
            .await
    }

    /// [`append`](Self::append) with the producer check `check`.
    pub async fn append_checked(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
        check: ProducerCheck,
    ) -> Result<AppendOutcome, ResponseError> {
        self.append_deciding(records, header, check, || {}).await
    }

    /// [`append_checked`](Self::append_checked) that calls `decided` once the append is
    /// decided (in the log and the producer state, or refused), before the fsync the flush
    /// policy may still ask for: a produce ordered behind this one
    /// (`handlers::produce_order`) may then append and share that fsync (group commit) instead
    /// of waiting for it. With `log.append.mode = "writer"` the writer thread's outcome is the
    /// first news of the decision, so `decided` runs with it.
    pub async fn append_deciding(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
        check: ProducerCheck,
        decided: impl FnOnce() + Send + 'static,
    ) -> Result<AppendOutcome, ResponseError> {
        let mut decided = Some(decided);
        let submitted = self.start_append(records, header, check, &mut decided);
        let result = match submitted {
            Submitted::Done(result) => result,
            Submitted::Waiting(rx) => rx.await.unwrap_or(Err(ResponseError::KafkaStorageError)),
        };
        if let Some(d) = decided {
            d();
        }
        result
    }

    /// Starts an append at once (appends submitted one after another land in that order) and
    /// returns the receiver of its outcome; a dropped sender means the writer has stopped.
    pub fn submit(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
    ) -> oneshot::Receiver<Result<AppendOutcome, ResponseError>> {
        self.submit_checked(records, header, ProducerCheck::PLAIN)
    }

    /// [`submit`](Self::submit) with the batch checked against its producer's state as `check`
    /// says (a coordinator's transactional write that completes a KIP-890 verification).
    ///
    /// Errors (in the receiver): as [`submit`](Self::submit), and INVALID_TXN_STATE (48) when
    /// the batch would open a transaction without the verification `check` requires (a marker
    /// voided it meanwhile).
    pub fn submit_checked(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
        check: ProducerCheck,
    ) -> oneshot::Receiver<Result<AppendOutcome, ResponseError>> {
        match self.start_append(records, header, check, &mut None::<fn()>) {
            Submitted::Waiting(rx) => rx,
            Submitted::Done(result) => {
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(result);
                rx
            }
        }
    }

    /// Starts the append; `decided` is taken and called once the append is decided where that
    /// is known before the outcome (inline and bulk-lane appends), else left for the caller.
    fn start_append<D: FnOnce() + Send + 'static>(
        self: &Arc<Self>,
        records: BytesMut,
        header: BatchHeader,
        check: ProducerCheck,
        decided: &mut Option<D>,
    ) -> Submitted {
        if !self.writer.appends_inline() {
            let (tx, rx) = oneshot::channel();
            self.writer.send(WriterJob::Append {
                partition: self.clone(),
                records,
                header,
                check,
                reply: tx,
            });
            return Submitted::Waiting(rx);
        }
        let lane = super::bulk::lane();
        if records.len() >= lane.min_bytes() || self.bulk_pending.load(Ordering::Acquire) > 0 {
            // A bulk batch: its page-cache write runs on the bulk-append lane, never on a
            // network thread that small batches and replica fetches wait for.
            self.bulk_pending.fetch_add(1, Ordering::AcqRel);
            let (tx, rx) = oneshot::channel();
            let p = self.clone();
            let decided = decided.take();
            lane.submit(Box::new(move || {
                let (result, flush_due) = p.append_now(records, &header, check);
                if let Some(d) = decided {
                    d();
                }
                p.bulk_pending.fetch_sub(1, Ordering::AcqRel);
                p.answer(result, flush_due, tx);
                if let Some(wb) = p.plan_writeback() {
                    super::bulk::start_writeback(&wb);
                }
            }));
            return Submitted::Waiting(rx);
        }
        let (result, flush_due) = self.append_now(records, &header, check);
        if let Some(d) = decided.take() {
            d();
        }
        if flush_due && result.is_ok() {
            let (tx, rx) = oneshot::channel();
            self.answer(result, true, tx);
            return Submitted::Waiting(rx);
        }
        Submitted::Done(result)
    }

    /// The whole pages appended since the last call, whose writeback is to be started
    /// ([`bulk::start_writeback`](super::bulk::start_writeback)) outside the partition's lock;
    /// `None` if there are none or the partition is closed.
    pub(crate) fn plan_writeback(&self) -> Option<frieda_log::SegmentWriteback> {
        self.state
            .lock()
            .as_mut()
            .and_then(|s| s.log.plan_writeback())
    }

    /// Appends on the calling thread under the partition's lock, advances the high watermark
    /// and wakes waiting fetches. Returns the outcome and whether the flush policy wants it
    /// fsync'ed before it is acknowledged.
    fn append_now(
        &self,
        records: BytesMut,
        header: &BatchHeader,
        check: ProducerCheck,
    ) -> (Result<AppendOutcome, ResponseError>, bool) {
        let (result, flush_due, wb) = {
            let mut guard = self.state.lock();
            let result = self.append_to(guard.as_mut(), records, header, check);
            // A retried batch answered with its original offset is acknowledged only once that
            // original is as durable as the policy asks: its Flush job runs after the original's
            // on the same writer thread (or itself covers it).
            let dup_needs_flush = self.policy.read().flush_every_append
                && result
                    .as_ref()
                    .is_ok_and(|o| o.base_offset >= self.reader.recovery_point());
            let due = result.is_ok()
                && (guard.as_ref().is_some_and(PartitionState::flush_due) || dup_needs_flush);
            let wb = result
                .as_ref()
                .ok()
                .and_then(|_| Self::writeback_due(guard.as_mut()));
            (result, due, wb)
        };
        if result.is_ok() {
            self.advance_high_watermark();
            self.notify_data();
        }
        if let Some(wb) = wb {
            super::bulk::lane().submit_writeback(wb);
        }
        (result, flush_due)
    }

    /// The writeback to start after a small append (outside the lock): once
    /// [`bulk::WRITEBACK_MIN_BYTES`](super::bulk::WRITEBACK_MIN_BYTES) of whole pages gathered.
    fn writeback_due(state: Option<&mut PartitionState>) -> Option<frieda_log::SegmentWriteback> {
        state.and_then(|s| {
            s.log
                .plan_writeback_at_least(super::bulk::WRITEBACK_MIN_BYTES)
        })
    }

    /// [`Self::plan_writeback`] once [`bulk::WRITEBACK_MIN_BYTES`](super::bulk::WRITEBACK_MIN_BYTES)
    /// of whole pages gathered (a follower's small appends).
    pub(crate) fn plan_writeback_due(&self) -> Option<frieda_log::SegmentWriteback> {
        Self::writeback_due(self.state.lock().as_mut())
    }

    /// Sends an append's outcome to `reply`: at once, or when `flush_due` after the log writer
    /// thread's group commit made it durable (durable before acknowledged).
    fn answer(
        self: &Arc<Self>,
        result: Result<AppendOutcome, ResponseError>,
        flush_due: bool,
        reply: oneshot::Sender<Result<AppendOutcome, ResponseError>>,
    ) {
        match result {
            Ok(outcome) if flush_due => self.writer.send(WriterJob::Flush {
                partition: self.clone(),
                outcome,
                reply,
            }),
            result => {
                let _ = reply.send(result);
            }
        }
    }

    /// Appends under the partition's lock (taken here): for the log writer thread.
    pub(crate) fn append_locked(
        &self,
        records: BytesMut,
        header: &BatchHeader,
        check: ProducerCheck,
    ) -> Result<AppendOutcome, ResponseError> {
        let (result, wb) = {
            let mut guard = self.state.lock();
            let result = self.append_to(guard.as_mut(), records, header, check);
            let wb = result
                .as_ref()
                .ok()
                .and_then(|_| Self::writeback_due(guard.as_mut()));
            (result, wb)
        };
        if result.is_ok() {
            self.advance_high_watermark();
        }
        if let Some(wb) = wb {
            super::bulk::lane().submit_writeback(wb);
        }
        result
    }

    /// A leader whose ISR is itself alone has its high watermark at its log end at once.
    fn advance_high_watermark(&self) {
        if self.repl.is_replicated() {
            self.repl
                .advance(self.reader.log_end_offset(), crate::clock::now_ms());
        }
    }

    /// Checks the idempotent-producer sequence, appends, and records the sequence. A duplicate
    /// of one of the producer's last five batches is answered with its original offset.
    fn append_to(
        &self,
        state: Option<&mut PartitionState>,
        records: BytesMut,
        header: &BatchHeader,
        check: ProducerCheck,
    ) -> Result<AppendOutcome, ResponseError> {
        let Some(state) = state else {
            return Err(ResponseError::UnknownTopicOrPartition);
        };
        // Under the lock: a leadership change cannot slip between the decision and the append.
        let mut locked = Locked {
            log: &mut state.log,
            repl: &self.repl,
        };
        let leader_epoch = match decide(&mut locked, header, check)? {
            Decision::Append { leader_epoch } => leader_epoch,
            Decision::Duplicate {
                base_offset,
                last_offset,
                leader_epoch,
            } => {
                return Ok(AppendOutcome {
                    base_offset,
                    last_offset,
                    leader_epoch,
                    log_append_time: -1,
                    log_start_offset: state.log.log_start_offset(),
                })
            }
        };
        match state.log.append(records, now_ms()) {
            Ok(info) => {
                self.repl.assert_within(state.log.log_end_offset());
                // Closed transactions whose markers the high watermark passed no longer hold
                // back the last stable offset or the cleaner.
                state.log.prune_replicated_txns(self.high_watermark());
                Ok(AppendOutcome {
                    base_offset: info.base_offset,
                    last_offset: info.last_offset,
                    leader_epoch,
                    log_append_time: info.log_append_time,
                    log_start_offset: info.log_start_offset,
                })
            }
            Err(LogError::Offline) => Err(ResponseError::KafkaStorageError),
            Err(e) => {
                tracing::error!(topic = %self.topic, partition = self.index, error = %e, "append failed");
                Err(match e {
                    LogError::Batch(_) => ResponseError::CorruptMessage,
                    _ => ResponseError::KafkaStorageError,
                })
            }
        }
    }

    /// Takes the leader role in `p.leader_epoch` (cluster mode): appends are stamped with the
    /// epoch from now on, the epoch is recorded at the log end, followers start caught up, the
    /// high watermark stays (capped at the log end). The partition's lock is held across the
    /// change, so no append straddles it.
    pub fn become_leader(&self, me: frieda_meta::BrokerId, p: &frieda_meta::PartitionState) {
        let mut guard = self.state.lock();
        if let Some(state) = guard.as_mut() {
            if let Err(e) = state.log.set_leader_epoch(p.leader_epoch) {
                // The log is offline now: appends fail with KAFKA_STORAGE_ERROR.
                tracing::error!(topic = %self.topic, partition = self.index, error = %e,
                    "cannot record the leader epoch");
            }
        }
        let leo = self.reader.log_end_offset();
        self.repl.become_leader(me, p, now_ms(), leo);
        self.repl.assert_within(leo);
        drop(guard);
        self.notify_data();
    }

    /// Takes a follower role of `leader` in `epoch` (or an offline one, `leader` = -1): no
    /// appends but the leader's; the high watermark is capped at the log end.
    pub fn become_follower(
        &self,
        me: frieda_meta::BrokerId,
        leader: frieda_meta::BrokerId,
        epoch: i32,
    ) {
        let mut guard = self.state.lock();
        if let Some(state) = guard.as_mut() {
            // -1 records nothing and cannot fail.
            let _ = state.log.set_leader_epoch(-1);
        }
        let leo = self.reader.log_end_offset();
        self.repl.become_follower(me, leader, epoch, leo);
        self.repl.assert_within(leo);
        drop(guard);
        self.notify_data();
    }

    /// Appends batches fetched from `leader` in `epoch` (a follower): offsets, epochs and
    /// timestamps as the leader wrote them; idempotent-producer state follows, so this replica
    /// can deduplicate retries once it leads. Returns the new log end offset.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when the role changed meanwhile (nothing appended),
    /// CORRUPT_MESSAGE for batches that do not parse or go backwards, KAFKA_STORAGE_ERROR.
    pub fn append_from_leader(
        &self,
        leader: frieda_meta::BrokerId,
        epoch: i32,
        records: BytesMut,
    ) -> Result<i64, ResponseError> {
        let mut headers = Vec::new();
        let mut pos = 0;
        while pos < records.len() {
            let h =
                BatchHeader::parse(&records[pos..]).map_err(|_| ResponseError::CorruptMessage)?;
            pos += h.total_size();
            headers.push(h);
        }
        let mut guard = self.state.lock();
        let Some(state) = guard.as_mut() else {
            return Err(ResponseError::UnknownTopicOrPartition);
        };
        if !self.repl.is_follower_of(leader, epoch) {
            return Err(ResponseError::NotLeaderOrFollower);
        }
        match state.log.append_replicated(records, now_ms()) {
            Ok(_) => {
                self.repl.assert_within(state.log.log_end_offset());
                state.log.prune_replicated_txns(self.repl.high_watermark());
                let leo = state.log.log_end_offset();
                drop(guard);
                self.notify_data();
                Ok(leo)
            }
            Err(LogError::Offline) => Err(ResponseError::KafkaStorageError),
            Err(e @ LogError::Batch(_)) => {
                tracing::error!(topic = %self.topic, partition = self.index, error = %e, "refused batches from the leader");
                Err(ResponseError::CorruptMessage)
            }
            Err(e) => {
                tracing::error!(topic = %self.topic, partition = self.index, error = %e, "follower append failed");
                Err(ResponseError::KafkaStorageError)
            }
        }
    }

    /// Truncates a follower's log to end before `offset` (its log diverged from the leader's,
    /// KIP-101); the idempotent-producer state is rebuilt from what is left, the high watermark
    /// capped at the new log end. At the log end it drops only epochs that start there (an
    /// epoch this replica began as a leader and wrote nothing in). Below the log start (local
    /// retention of a tiered log deleted segments of a lineage the leader does not have) the
    /// log is emptied and starts again at `offset`, with no producer state, as Kafka's
    /// `UnifiedLog.truncateTo` does (`truncateFullyAndStartAt`); clamped at its start, the
    /// follower asked the same leader for the same divergence for ever (found by the
    /// simulator, seed 1478). The removed segments' files are deleted after the lock is
    /// released.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when the role changed meanwhile, KAFKA_STORAGE_ERROR.
    pub fn truncate_from_leader(
        &self,
        leader: frieda_meta::BrokerId,
        epoch: i32,
        offset: i64,
    ) -> Result<(), ResponseError> {
        if offset < self.log_start_offset() {
            return self.start_again_below(leader, epoch, offset);
        }
        let removed = {
            let mut guard = self.state.lock();
            let Some(state) = guard.as_mut() else {
                return Err(ResponseError::UnknownTopicOrPartition);
            };
            if !self.repl.is_follower_of(leader, epoch) {
                return Err(ResponseError::NotLeaderOrFollower);
            }
            if offset > state.log.log_end_offset() {
                return Ok(());
            }
            let removed = state.log.truncate_to(offset).map_err(|e| {
                tracing::error!(topic = %self.topic, partition = self.index, error = %e, "truncation failed");
                ResponseError::KafkaStorageError
            })?;
            self.repl.on_truncated(state.log.log_end_offset());
            self.repl.assert_within(state.log.log_end_offset());
            removed
        };
        if let Err(e) = removed.delete_files() {
            tracing::warn!(topic = %self.topic, partition = self.index, error = %e, "removing truncated segment files failed");
        }
        Ok(())
    }

    /// Empties this follower's log and starts it again at `offset` (KIP-405: the leader of this
    /// tiered partition answered OFFSET_MOVED_TO_TIERED_STORAGE, so the offsets this log would
    /// fetch next are only in remote storage; `offset` is the first one not copied there, which
    /// the leader still holds locally). The new log start is written to the
    /// `log-start-offset-checkpoint` first; the high watermark becomes `offset` (everything
    /// below it was copied, so committed). The producer state becomes `producer_snapshot` (the
    /// one copied with the remote segment ending below `offset`), or empty without one; the
    /// leader epoch cache becomes `epochs_below`, the copies' lineage below `offset`
    /// (`RemoteLog::epochs_upto`; see `PartitionLog::truncate_fully_and_start_at`). The
    /// removed segments' files are deleted after the lock is released.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER unless this replica follows `leader` in `epoch`;
    /// KAFKA_STORAGE_ERROR when the checkpoint or the new segment cannot be written;
    /// UNKNOWN_TOPIC_OR_PARTITION once deleted.
    pub fn start_again_from_leader(
        &self,
        leader: frieda_meta::BrokerId,
        epoch: i32,
        offset: i64,
        producer_snapshot: Option<&[u8]>,
        epochs_below: &[(i32, i64)],
    ) -> Result<(), ResponseError> {
        if !self.repl.is_follower_of(leader, epoch) {
            return Err(ResponseError::NotLeaderOrFollower);
        }
        if let Some(starts) = self.log_starts.as_deref() {
            self.record_log_start(starts, offset)?;
        }
        self.empty_and_start_at(leader, epoch, offset, producer_snapshot, epochs_below, true)
    }

    /// Empties this follower's log and starts it at `offset` with `producer_snapshot` (or no
    /// producers) and the leader epochs `epochs_below` below `offset` (or none), the log start
    /// checkpoint already written; the high watermark is capped at
    /// `offset`, or set to it when `committed` (everything below it is in the remote tier).
    /// The removed segments' files are deleted after the lock is released.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER unless this replica follows `leader` in `epoch`;
    /// KAFKA_STORAGE_ERROR when the new segment cannot be written; UNKNOWN_TOPIC_OR_PARTITION
    /// once deleted.
    fn empty_and_start_at(
        &self,
        leader: frieda_meta::BrokerId,
        epoch: i32,
        offset: i64,
        producer_snapshot: Option<&[u8]>,
        epochs_below: &[(i32, i64)],
        committed: bool,
    ) -> Result<(), ResponseError> {
        let removed = {
            let mut guard = self.state.lock();
            let Some(state) = guard.as_mut() else {
                return Err(ResponseError::UnknownTopicOrPartition);
            };
            if !self.repl.is_follower_of(leader, epoch) {
                return Err(ResponseError::NotLeaderOrFollower);
            }
            let removed = state
                .log
                .truncate_fully_and_start_at(offset, now_ms(), producer_snapshot, epochs_below)
                .map_err(|e| {
                    tracing::error!(topic = %self.topic, partition = self.index, error = %e,
                        "starting the log again failed");
                    ResponseError::KafkaStorageError
                })?;
            self.repl.on_truncated(offset);
            if committed {
                self.repl.follower_high_watermark(offset, offset);
            }
            self.repl.assert_within(state.log.log_end_offset());
            removed
        };
        if let Err(e) = removed.delete_files() {
            tracing::warn!(topic = %self.topic, partition = self.index, error = %e, "removing the emptied log's segment files failed");
        }
        self.notify_data();
        Ok(())
    }

    /// [`Self::truncate_from_leader`] below the log start: the log start checkpoint is lowered
    /// first, then the log is emptied and starts at `offset`; the high watermark is capped
    /// there. The leader epoch cache keeps its entries below `offset` (where this log and the
    /// leader's agree), as a truncation above the log start does: emptied, this replica would
    /// as a leader answer OffsetsForLeaderEpoch for an older epoch with `offset` (the class of
    /// simulator seed 29819).
    fn start_again_below(
        &self,
        leader: frieda_meta::BrokerId,
        epoch: i32,
        offset: i64,
    ) -> Result<(), ResponseError> {
        if !self.repl.is_follower_of(leader, epoch) {
            return Err(ResponseError::NotLeaderOrFollower);
        }
        if let Some(starts) = self.log_starts.as_deref() {
            starts.lower(&self.topic, self.index, offset).map_err(|e| {
                tracing::error!(topic = %self.topic, partition = self.index, offset, error = %e,
                    "writing the log start offset checkpoint failed; the log is not truncated");
                ResponseError::KafkaStorageError
            })?;
        }
        let from = self.log_start_offset();
        let agreed = self
            .state
            .lock()
            .as_ref()
            .map(|s| s.log.epochs().pairs())
            .unwrap_or_default();
        self.empty_and_start_at(leader, epoch, offset, None, &agreed, false)?;
        tracing::warn!(topic = %self.topic, partition = self.index, leader, epoch, offset,
            old_log_start = from,
            "the leader's log diverges from this replica's below its log start; emptied the log, it starts again there");
        Ok(())
    }

    /// Writes `offset` as this partition's log start to the `log-start-offset-checkpoint`,
    /// before the log's start moves there.
    ///
    /// Errors: KAFKA_STORAGE_ERROR when it cannot be written (the start then stays).
    fn record_log_start(
        &self,
        starts: &LogStartCheckpoint,
        offset: i64,
    ) -> Result<(), ResponseError> {
        starts.record(&self.topic, self.index, offset).map_err(|e| {
            tracing::error!(topic = %self.topic, partition = self.index, offset, error = %e,
                "writing the log start offset checkpoint failed; the log start stays");
            ResponseError::KafkaStorageError
        })
    }

    /// Moves the log start offset up to `offset` (at most the log end offset): DeleteRecords
    /// on a leader (KIP-107), or a follower taking its leader's start. The new start is written
    /// to the `log-start-offset-checkpoint` before it is applied. Segments wholly
    /// below it are deleted after the lock is released; fetches waiting on this partition are woken (so a
    /// follower's next fetch reports its new start at once). Returns the log start offset.
    /// Blocking (an fsync).
    ///
    /// Errors: KAFKA_STORAGE_ERROR when the checkpoint cannot be written or the log is offline,
    /// UNKNOWN_TOPIC_OR_PARTITION once deleted, POLICY_VIOLATION for a log whose start cannot
    /// move (the single broker's offsets log).
    pub fn advance_log_start(&self, offset: i64) -> Result<i64, ResponseError> {
        let Some(starts) = self.log_starts.as_deref() else {
            return Err(ResponseError::PolicyViolation);
        };
        let offset = offset.min(self.reader.log_end_offset());
        if offset <= self.log_start_offset() {
            return Ok(self.log_start_offset());
        }
        self.record_log_start(starts, offset)?;
        let removed = {
            let mut guard = self.state.lock();
            let Some(state) = guard.as_mut() else {
                return Err(ResponseError::UnknownTopicOrPartition);
            };
            state.log.advance_log_start(offset).map_err(|e| {
                tracing::error!(topic = %self.topic, partition = self.index, error = %e, "moving the log start offset failed");
                ResponseError::KafkaStorageError
            })?
        };
        if let Err(e) = removed.delete_files() {
            tracing::warn!(topic = %self.topic, partition = self.index, error = %e, "removing segments below the log start failed");
        }
        tracing::info!(topic = %self.topic, partition = self.index, log_start_offset = self.log_start_offset(),
            "log start offset moved");
        self.notify_data();
        Ok(self.log_start_offset())
    }

    /// Appends a transaction marker (commit or abort) of `producer_id` at `epoch`, as the
    /// partition's leader, from a coordinator (WriteTxnMarkers); answered like an append.
    ///
    /// Errors: as [`append`](Self::append), and INVALID_PRODUCER_EPOCH (47) /
    /// TRANSACTION_COORDINATOR_FENCED (52) for a stale marker.
    pub async fn append_marker(
        self: &Arc<Self>,
        producer_id: i64,
        epoch: i16,
        marker: frieda_log::EndTxnMarker,
        bumps_epoch: bool,
    ) -> Result<AppendOutcome, ResponseError> {
        let batch = frieda_log::build_marker_batch(producer_id, epoch, marker, now_ms());
        let header = BatchHeader::parse(&batch).map_err(|_| ResponseError::CorruptMessage)?;
        self.append_checked(
            BytesMut::from(&batch[..]),
            header,
            ProducerCheck::Marker {
                coordinator_epoch: marker.coordinator_epoch,
                bumps_epoch,
            },
        )
        .await
    }

    /// Starts a KIP-890 verification of `producer_id`'s transaction at `epoch` for this
    /// partition: `None` when its transaction is already open here, else the token the append
    /// must carry once the coordinator confirmed it. `supports_epoch_bump`: a transactions v2
    /// producer (Produce v12+), whose verification survives the marker of its previous
    /// transaction (see [`frieda_log::ProducerStateManager::begin_verification`]).
    pub fn begin_verification(
        &self,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Option<u64> {
        self.state.lock().as_mut().and_then(|s| {
            s.log
                .begin_verification(producer_id, epoch, supports_epoch_bump)
        })
    }

    /// The last stable offset (KIP-98): `read_committed` consumers read below it.
    pub fn last_stable_offset(&self) -> i64 {
        self.reader.last_stable_offset(self.high_watermark())
    }

    /// Every producer of this replica's log (DescribeProducers; a follower's log tracks its
    /// producers as the leader's does); `None` when the replica has no open log.
    pub fn describe_producers(&self) -> Option<Vec<frieda_log::ProducerInfo>> {
        self.state
            .lock()
            .as_ref()
            .map(|s| s.log.describe_producers())
    }

    /// Notes that `header`'s batch was refused before its append with a retriable error (see
    /// [`PartitionLog::note_refused`]).
    pub fn note_refused(&self, header: &BatchHeader) {
        if header.producer_id < 0 {
            return;
        }
        if let Some(state) = self.state.lock().as_mut() {
            state.log.note_refused(header);
        }
    }

    /// Whether the log's `cleanup.policy` contains `delete` (DeleteRecords is refused with
    /// POLICY_VIOLATION otherwise, as in Kafka).
    pub fn cleanup_deletes(&self) -> bool {
        self.state
            .lock()
            .as_ref()
            .is_some_and(|s| s.log.config().cleanup_delete)
    }

    /// Whether the flush policy wants the log fsync'ed now (`flush.messages`).
    pub fn flush_due(&self) -> bool {
        self.state
            .lock()
            .as_ref()
            .is_some_and(PartitionState::flush_due)
    }

    /// Fsyncs the log if the flush policy says so (without holding the lock during the sync).
    /// Blocking.
    ///
    /// Errors: the fsync failed (the log is offline now).
    pub fn flush_now_if_due(&self) -> Result<(), LogError> {
        super::writer::flush_if_due(self)
    }

    /// The log's latest leader epoch and its end offset for `epoch` (OffsetForLeaderEpoch).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.state
            .lock()
            .as_ref()
            .map(|s| s.log.end_offset_for_epoch(epoch))
    }

    /// Where this follower truncates after asking its leader about `asked_epoch` and hearing
    /// `leader` ([`follower::truncation`]); `None` once the partition was deleted.
    pub fn truncation_for(
        &self,
        asked_epoch: i32,
        leader: follower::EpochEnd,
    ) -> Option<follower::Truncation> {
        let hw = self.repl.high_watermark();
        self.state
            .lock()
            .as_ref()
            .map(|s| follower::truncation(&s.log, hw, asked_epoch, leader))
    }

    /// A follower's fetch at `fetch_offset` with `last_fetched_epoch` in the follower's
    /// `leader_epoch`, admitted by this leader ([`crate::replication::fetch::admit_follower_fetch`],
    /// the order the simulator's leader runs too): `Ok(None)` to read it, `Ok(Some(end))` when
    /// the follower's log diverged (answer with `end`).
    ///
    /// Errors: the leadership's (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
    /// UNKNOWN_LEADER_EPOCH), KAFKA_STORAGE_ERROR (56) for an offline log,
    /// OFFSET_MOVED_TO_TIERED_STORAGE (109) below the local log of a tiered partition (KIP-405:
    /// the follower starts its log again above the copies, `start_again_from_leader`),
    /// OFFSET_OUT_OF_RANGE (1), UNKNOWN_TOPIC_OR_PARTITION once deleted.
    pub fn admit_follower_fetch(
        &self,
        leader_epoch: i32,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) -> Result<Option<follower::EpochEnd>, ResponseError> {
        let leadership = self.repl.check_follower(leader_epoch);
        self.serving_follower(leadership, fetch_offset, |replica, log| {
            crate::replication::fetch::admit_follower_fetch(
                replica,
                log,
                fetch_offset,
                last_fetched_epoch,
            )
        })
    }

    /// `rule` applied to what this replica knows of itself for a follower's fetch at
    /// `fetch_offset` (`leadership` as the caller checked it) and to its log, under the
    /// partition's lock; UNKNOWN_TOPIC_OR_PARTITION once deleted (after the leadership's
    /// error, if any).
    fn serving_follower<T>(
        &self,
        leadership: Result<(), ResponseError>,
        fetch_offset: i64,
        rule: impl FnOnce(
            crate::replication::fetch::ServingReplica,
            &PartitionLog,
        ) -> Result<T, ResponseError>,
    ) -> Result<T, ResponseError> {
        let only_remote = self.in_remote_tier(fetch_offset);
        match self.state.lock().as_ref() {
            Some(s) => rule(
                crate::replication::fetch::ServingReplica {
                    leadership,
                    offline: s.log.offline_reason().is_some(),
                    only_remote,
                },
                &s.log,
            ),
            None => leadership.and(Err(ResponseError::UnknownTopicOrPartition)),
        }
    }

    /// What this leader reads for a follower's fetch admitted in `admitted_epoch` at
    /// `fetch_offset`, at once and again whenever its long poll wakes
    /// ([`crate::replication::fetch::read_follower_fetch`]): `Ok(true)` records to read up to
    /// the log end, `Ok(false)` none yet.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when it no longer leads in that epoch, and those of
    /// `read_follower_fetch`; UNKNOWN_TOPIC_OR_PARTITION once deleted.
    pub fn read_follower_fetch(
        &self,
        admitted_epoch: i32,
        fetch_offset: i64,
    ) -> Result<bool, ResponseError> {
        let leadership = if self.repl.leads_in(admitted_epoch) {
            Ok(())
        } else {
            Err(ResponseError::NotLeaderOrFollower)
        };
        self.serving_follower(leadership, fetch_offset, |replica, log| {
            crate::replication::fetch::read_follower_fetch(replica, log, fetch_offset)
        })
    }

    /// Where this follower fetches next and the `last_fetched_epoch` it sends
    /// ([`follower::fetch_position`]); `None` once the partition was deleted.
    pub fn fetch_position(&self, skip_to: Option<i64>) -> Option<(i64, i32)> {
        self.state
            .lock()
            .as_ref()
            .map(|s| follower::fetch_position(&s.log, skip_to))
    }

    /// This replica's claim while its `quorum` partition is leaderless
    /// ([`Replication::claim`](crate::replication::Replication::claim)).
    pub fn claim(&self) -> Option<frieda_meta::quorum::Claim> {
        let guard = self.state.lock();
        self.repl.claim(&guard.as_ref()?.log)
    }

    /// The log's leader epoch cache (KIP-101), a copy; `None` once the partition was deleted.
    pub fn leader_epochs(&self) -> Option<frieda_log::Epochs> {
        self.state.lock().as_ref().map(|s| s.log.epochs().clone())
    }

    /// The latest leader epoch in the log, -1 if none.
    pub fn latest_epoch(&self) -> i32 {
        self.state
            .lock()
            .as_ref()
            .map_or(-1, |s| s.log.latest_epoch())
    }

    /// A future that completes at the next append (or deletion). Create it, `enable()` it, then
    /// check for data, then await it, so no wake-up is missed.
    pub fn data_arrived(&self) -> tokio::sync::futures::Notified<'_> {
        self.data_arrived.notified()
    }

    /// Wakes every fetch waiting on this partition (one wake-up for the whole batch of appends).
    pub(crate) fn notify_data(&self) {
        self.data_arrived.notify_waiters();
    }

    /// Marks the partition deleted and wakes its waiters.
    pub(crate) fn mark_deleted(&self) {
        self.deleted.store(true, Ordering::Release);
        self.notify_data();
    }

    /// The writer thread this partition's jobs go to.
    pub(crate) fn writer(&self) -> &WriterHandle {
        &self.writer
    }
}

/// A partition's log and replication state under its lock, as [`decide`] sees them.
struct Locked<'a> {
    log: &'a mut PartitionLog,
    repl: &'a Replication,
}

impl LeaderLog for Locked<'_> {
    fn is_offline(&self) -> bool {
        self.log.offline_reason().is_some()
    }

    fn append_epoch(&self) -> Result<i32, ResponseError> {
        self.repl.append_epoch()
    }

    fn note_refused(&mut self, batch: &BatchHeader) {
        self.log.note_refused(batch);
    }

    fn check_producer(
        &self,
        batch: &BatchHeader,
        verification: Option<u64>,
        require_verification: bool,
    ) -> Result<SequenceCheck, ProducerError> {
        self.log
            .check_producer(batch, verification, require_verification)
    }

    fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        bumps_epoch: bool,
    ) -> Result<(), ProducerError> {
        self.log
            .check_marker(producer_id, epoch, coordinator_epoch, bumps_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::topic_config::TopicConfigs;
    use crate::storage::writer::LogWriters;
    use frieda_log::LogConfig;

    fn record(i: u8) -> bytes::BytesMut {
        crate::storage::testing::value_batch(vec![i; 10]).0
    }

    /// Simulator seed 1478: the leader's log diverges from this follower's at offset 4, below
    /// the follower's log start 6. The log is emptied and starts again at 4 (Kafka's
    /// `truncateFullyAndStartAt`); cut at its start instead, the follower asked for the same
    /// divergence for ever.
    #[test]
    fn a_truncation_below_the_log_start_starts_the_log_again_there() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        // A segment per record: the log start moves by whole segments, as local retention
        // moves it.
        let config = LogConfig {
            segment_bytes: record(0).len() as u64,
            ..LogConfig::default()
        };
        let (mut log, _) = PartitionLog::open(dir.path(), config, 1).unwrap();
        log.set_leader_epoch(0).unwrap();
        for i in 0..10 {
            log.append(record(i), 1).unwrap();
        }
        log.remove_segments_below(6)
            .unwrap()
            .delete_files()
            .unwrap();
        assert_eq!(log.log_start_offset(), 6);
        let name: Arc<str> = Arc::from("t");
        let p = Partition::new(
            name.clone(),
            0,
            log,
            writers.for_partition(&name, 0),
            TopicConfigs::default().produce_policy(&TopicConfigs::default()),
        );
        p.repl.become_follower(2, 1, 3, 10);
        assert_eq!(
            p.truncate_from_leader(1, 2, 4),
            Err(ResponseError::NotLeaderOrFollower),
            "another epoch's leader"
        );
        p.truncate_from_leader(1, 3, 8).unwrap();
        assert_eq!((p.log_start_offset(), p.reader.log_end_offset()), (6, 8));
        p.truncate_from_leader(1, 3, 4).unwrap();
        assert_eq!((p.log_start_offset(), p.reader.log_end_offset()), (4, 4));
        assert_eq!(p.latest_epoch(), -1, "the old epochs went with the records");
    }

    /// Issue 58: with `flush.messages=1` an append is decided (in the log, the producer state
    /// updated) before its fsync, and `append_deciding` says so then, so the connection's next
    /// produce (`handlers::produce_order`) appends meanwhile and shares the fsync. Before, the
    /// gate opened after the fsync and a connection's pipelined produces took one fsync each
    /// in turn (p50 1.2 ms at 10,000 records/s from one producer).
    #[tokio::test]
    async fn an_append_is_decided_before_the_fsync_it_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let mut configs = TopicConfigs::default();
        configs.set("flush.messages", "1").unwrap();
        let defaults = TopicConfigs::default();
        let (log, _) = PartitionLog::open(dir.path(), configs.log_config(&defaults), 1).unwrap();
        let name: Arc<str> = Arc::from("t");
        let p = Arc::new(Partition::new(
            name.clone(),
            0,
            log,
            writers.for_partition(&name, 0),
            configs.produce_policy(&defaults),
        ));
        for i in 0..3i64 {
            let (tx, rx) = std::sync::mpsc::channel();
            let reader = p.reader.clone();
            let header = BatchHeader::parse(&record(i as u8)).unwrap();
            let outcome = p
                .append_deciding(record(i as u8), header, ProducerCheck::PLAIN, move || {
                    tx.send((reader.log_end_offset(), reader.recovery_point()))
                        .unwrap();
                })
                .await
                .unwrap();
            assert_eq!(outcome.base_offset, i);
            assert_eq!(
                rx.try_recv().unwrap(),
                (i + 1, i),
                "decided once appended, before the fsync"
            );
            assert!(rx.try_recv().is_err(), "decided once");
            assert_eq!(p.reader.recovery_point(), i + 1, "answered once fsync'ed");
            assert_eq!(p.high_watermark(), i + 1);
        }
    }
}
