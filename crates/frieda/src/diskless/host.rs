//! The batch coordinator hosted on a partition of `__diskless_coordinator` (docs/diskless.md,
//! "The batch coordinator"; build plan step 3), sans-IO: what the leader of a coordinator
//! partition does between a commit arriving and its answer leaving, and what a replica that
//! becomes the leader replays before it serves.
//!
//! The leader decides on its [`BatchCoordinator`] at once (a second commit is judged on the
//! state the first left, so offsets follow each other), writes each decision as one record
//! ([`codec`]) at the end of the partition, and answers a decision's waiters only once the
//! partition's high watermark has passed its record: written on `min.insync.replicas`
//! replicas, it survives any failover `acks=all` survives. Reads see the same line: a diskless
//! partition's high watermark as a reader gets it is the end of the decisions below the
//! coordinator partition's high watermark, never the leader's speculative end.
//!
//! The driver (the broker, or the simulator) does the I/O:
//! - load: [`CoordinatorHost::replay`] each record of the partition's local log in order, then
//!   [`CoordinatorHost::loaded`]; nothing is served until the high watermark reaches the log
//!   end the load saw (a new leader's high watermark may lag its predecessor's; as Kafka's
//!   coordinators and `OffsetStore::is_committed` do);
//! - a [`Step::Append`] record is appended at the log end, at the offset the step names (the
//!   host is the partition's only writer);
//! - each advance of the high watermark is reported ([`CoordinatorHost::high_watermark`]); it
//!   hands back the waiters to answer;
//! - an append that fails, a replication wait that times out, or lost leadership:
//!   [`CoordinatorHost::fail`] (or [`CoordinatorHost::unload`]), then a fresh load. The leader's
//!   state ran ahead of its log; a record whose write failed may still be committed later, so
//!   the only state to trust is the log's. A broker whose commit got an error resends it; the
//!   coordinator answers a resent object with the answers it was decided with, once.
//!
//! Invariants (asserted): the high watermark never passes the log end; a reader's high
//! watermark of a diskless partition never passes the coordinator's own; a waiter is answered
//! at most once and only for a record below the high watermark.

use super::codec::{self, DecodeError};
use super::coordinator::{
    BatchAnswer, BatchCoordinator, CommitBatches, CommitError, CompactError, CompactedRun,
    CompactionPlan, CompactionPolicy, Decision, DisklessPartition, Found, ObjectId, Offsets,
    TxnMarker,
};
use crate::invariant;
use frieda_log::ProducerInfo;
use kafka_protocol::error::ResponseError as E;
use std::collections::{BTreeMap, HashMap};

/// The most waiters one host holds (commits and DeleteRecords waiting for the high watermark);
/// beyond, new ones are refused REQUEST_TIMED_OUT, so the sender backs off and resends (a
/// broker's commits go one at a time, so this is reached only with this many brokers or a
/// stalled partition).
pub const MAX_WAITERS: usize = 16_384;

/// What a write's waiter gets once its record is below the high watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A commit's answers, one per batch.
    Batches(Vec<BatchAnswer>),
    /// DeleteRecords: the partition's log start.
    LogStart(i64),
    /// A transaction marker: its offset.
    MarkerAt(i64),
    /// Another decision (a partition created, a topic deleted, objects forgotten).
    Written,
}

/// What the driver does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<W> {
    /// Append `record` (the value of one record) at `offset`, the partition's log end; its
    /// waiter is answered once the high watermark passes it.
    Append {
        /// Where it must land.
        offset: i64,
        /// The encoded decision.
        record: Vec<u8>,
    },
    /// Nothing to write: the waiter waits for a record already appended (a resent commit).
    Wait,
    /// Answered at once: the decision is already below the high watermark.
    Answered(W, Outcome),
}

/// Why a request is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Loading, or loaded and waiting for the high watermark to reach the loaded log end:
    /// COORDINATOR_LOAD_IN_PROGRESS (14); retry.
    #[error("the coordinator is loading")]
    Loading,
    /// A write failed: this host serves no more (NOT_COORDINATOR, 16); the driver loads again.
    #[error("the coordinator failed a write and must load again")]
    Failed,
    /// Too many waiters ([`MAX_WAITERS`]): REQUEST_TIMED_OUT (7); resend later.
    #[error("too many commits waiting for the high watermark")]
    Busy,
    /// The commit itself is refused.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// A DeleteRecords refused (its error code).
    #[error("refused: {0:?}")]
    Refused(E),
    /// A compaction's decision refused (its new object is left to the orphan sweep or deleted
    /// by its compactor).
    #[error(transparent)]
    Compaction(#[from] CompactError),
}

impl HostError {
    /// The Kafka error a driver answers with.
    pub fn code(self) -> E {
        match self {
            HostError::Loading => E::CoordinatorLoadInProgress,
            HostError::Failed => E::NotCoordinator,
            HostError::Busy => E::RequestTimedOut,
            HostError::Commit(CommitError::OutsideObject) => E::InvalidRequest,
            HostError::Commit(CommitError::CommittedBefore | CommitError::TooOld) => {
                E::KafkaStorageError
            }
            HostError::Refused(e) => e,
            HostError::Compaction(_) => E::KafkaStorageError,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Replaying the log.
    Replaying,
    /// Replayed; serves once the high watermark reaches `loaded_end`.
    Loaded,
    /// Serves.
    Serving,
    /// A write failed; serves no more.
    Failed,
}

#[derive(Debug)]
struct Pending<W> {
    /// The decision's effect on what readers see: each partition's new end offset.
    ends: Vec<(DisklessPartition, i64)>,
    /// The topic a deletion removes from what readers see.
    deleted_topic: Option<uuid::Uuid>,
    waiters: Vec<(W, Outcome)>,
    /// The object a commit record decided.
    object: Option<ObjectId>,
}

/// The leader's (or a loading replica's) batch coordinator and its writes in flight. `W` is
/// the driver's waiter (a channel, a request id).
#[derive(Debug)]
pub struct CoordinatorHost<W> {
    coordinator: BatchCoordinator,
    phase: Phase,
    /// The next offset of the coordinator partition.
    log_end: i64,
    /// The log end when the load ended.
    loaded_end: i64,
    /// The coordinator partition's high watermark, as last reported.
    high_watermark: i64,
    /// Records at or above the high watermark, by offset.
    pending: BTreeMap<i64, Pending<W>>,
    /// Commit records at or above the high watermark, by object.
    pending_objects: HashMap<ObjectId, i64>,
    /// Per diskless partition, the end offset of the decisions below the high watermark.
    visible: HashMap<DisklessPartition, i64>,
    waiters: usize,
}

impl<W> CoordinatorHost<W> {
    /// A host about to replay its partition's log; `max_batches`: the coordinate bound per
    /// partition (`diskless.coordinator.max.batches.per.partition`).
    pub fn load(max_batches: usize) -> CoordinatorHost<W> {
        Self::load_with(BatchCoordinator::new(max_batches))
    }

    /// A host about to replay its partition's log into `coordinator` (empty, configured).
    pub fn load_with(coordinator: BatchCoordinator) -> CoordinatorHost<W> {
        CoordinatorHost {
            coordinator,
            phase: Phase::Replaying,
            log_end: 0,
            loaded_end: 0,
            high_watermark: 0,
            pending: BTreeMap::new(),
            pending_objects: HashMap::new(),
            visible: HashMap::new(),
            waiters: 0,
        }
    }

    /// Replays the record at `offset` of the local log (every record, at or above the high
    /// watermark too: a loading leader's log is the partition's history). Offsets must rise.
    ///
    /// Errors: the record does not decode (the driver stops the load and logs it; nothing is
    /// applied).
    pub fn replay(&mut self, offset: i64, record: &[u8]) -> Result<(), DecodeError> {
        invariant!(
            self.phase == Phase::Replaying && offset >= self.log_end,
            "a diskless coordinator replayed offset {offset} after {} ({:?})",
            self.log_end,
            self.phase
        );
        let decision = codec::decode(record)?;
        self.coordinator.apply(&decision);
        self.add_pending(offset, &decision, None);
        self.log_end = offset + 1;
        Ok(())
    }

    /// The load read the local log up to `log_end` (its log end offset then).
    pub fn loaded(&mut self, log_end: i64) {
        invariant!(
            self.phase == Phase::Replaying,
            "a diskless coordinator loaded twice"
        );
        self.log_end = self.log_end.max(log_end);
        self.loaded_end = self.log_end;
        self.phase = Phase::Loaded;
        // A high watermark reported during the replay passed records replayed after it was
        // reported: release them (and start serving if it reached the end) by reporting it again.
        let hw = self.high_watermark;
        self.high_watermark = -1;
        let answered = self.high_watermark(hw);
        invariant!(answered.is_empty(), "a replayed record had a waiter");
    }

    fn serving(&self) -> Result<(), HostError> {
        match self.phase {
            Phase::Serving => Ok(()),
            Phase::Failed => Err(HostError::Failed),
            Phase::Replaying | Phase::Loaded => Err(HostError::Loading),
        }
    }

    fn room(&self) -> Result<(), HostError> {
        if self.waiters >= MAX_WAITERS {
            return Err(HostError::Busy);
        }
        Ok(())
    }

    /// Decides the commit of an uploaded object for `waiter` at `now_ms` (the leader's clock).
    ///
    /// Errors: [`HostError::Loading`], [`HostError::Failed`], [`HostError::Busy`], or the
    /// coordinator's [`CommitError`] (nothing decided).
    pub fn commit(
        &mut self,
        now_ms: i64,
        waiter: W,
        commit: &CommitBatches,
    ) -> Result<Step<W>, HostError> {
        self.serving()?;
        self.room()?;
        if let Some(&offset) = self.pending_objects.get(&commit.object) {
            // A resend while the first is still on its way: the same answers, when it lands.
            let (answers, again) = self.coordinator.commit(now_ms, commit)?;
            invariant!(again.is_none(), "a pending object decided twice");
            if let Some(p) = self.pending.get_mut(&offset) {
                p.waiters.push((waiter, Outcome::Batches(answers)));
                self.waiters += 1;
            }
            return Ok(Step::Wait);
        }
        match self.coordinator.commit(now_ms, commit)? {
            (answers, None) => Ok(Step::Answered(waiter, Outcome::Batches(answers))),
            (answers, Some(decision)) => {
                Ok(self.write(decision, Some((waiter, Outcome::Batches(answers)))))
            }
        }
    }

    /// DeleteRecords (and retention) of `partition` below `offset` (-1: its high watermark as
    /// readers see it) for `waiter`.
    ///
    /// Errors: as [`Self::commit`]; [`HostError::Refused`] with UNKNOWN_TOPIC_OR_PARTITION (3)
    /// or OFFSET_OUT_OF_RANGE (1, above the high watermark readers see).
    pub fn delete_records(
        &mut self,
        now_ms: i64,
        waiter: W,
        partition: DisklessPartition,
        offset: i64,
    ) -> Result<Step<W>, HostError> {
        self.serving()?;
        self.room()?;
        let visible = self
            .visible_end(partition)
            .ok_or(HostError::Refused(E::UnknownTopicOrPartition))?;
        let offset = if offset == -1 { visible } else { offset };
        if offset > visible {
            return Err(HostError::Refused(E::OffsetOutOfRange));
        }
        let (log_start, decision) = self
            .coordinator
            .delete_records(now_ms, partition, offset)
            .map_err(HostError::Refused)?;
        Ok(self.write(decision, Some((waiter, Outcome::LogStart(log_start)))))
    }

    /// The metadata created `partition` (a diskless topic's partition mapped here).
    ///
    /// Errors: [`HostError::Loading`], [`HostError::Failed`].
    pub fn create_partition(&mut self, partition: DisklessPartition) -> Result<Step<W>, HostError> {
        self.serving()?;
        let d = self.coordinator.create_partition(partition);
        Ok(self.write(d, None))
    }

    /// The topic was deleted: its partitions go and their objects become deletable.
    ///
    /// Errors: [`HostError::Loading`], [`HostError::Failed`].
    pub fn delete_topic(
        &mut self,
        now_ms: i64,
        topic_id: uuid::Uuid,
    ) -> Result<Step<W>, HostError> {
        self.serving()?;
        let d = self.coordinator.delete_topic(now_ms, topic_id);
        Ok(self.write(d, None))
    }

    /// Objects no batch names, marked at least `delay_ms` before `now_ms`: (id, size bytes,
    /// uploader). Only while no write is pending: a mark a pending decision made may vanish
    /// with it at a failover (a commit refused on the leader's speculative state, decided
    /// again as stored by the next leader), and an object is deleted only on a mark the log
    /// keeps. Empty otherwise.
    pub fn deletable(&self, now_ms: i64, delay_ms: i64) -> Vec<(ObjectId, u64, i32)> {
        if self.phase != Phase::Serving || !self.pending.is_empty() {
            return Vec::new();
        }
        self.coordinator.deletable(now_ms, delay_ms)
    }

    /// The orphan sweep (docs/diskless.md, "Compaction and garbage collection"): of the objects
    /// a LIST of the bucket found, those at least `min_age_ms` old (by their UUIDv7) that the
    /// coordinator does not know and no pending decision names: uploads whose commit never came
    /// (the uploader died, the commit was refused). `min_age_ms` must exceed the commit-age bound
    /// plus the brokers' clock skew, so no commit of a swept object can still be decided. Their
    /// deletion needs no record. Empty while not serving.
    pub fn sweepable(&self, listed: &[ObjectId], now_ms: i64, min_age_ms: i64) -> Vec<ObjectId> {
        if self.phase != Phase::Serving {
            return Vec::new();
        }
        listed
            .iter()
            .filter(|id| now_ms.saturating_sub(id.created_ms()) >= min_age_ms)
            .filter(|id| !self.coordinator.knows(**id) && !self.pending_objects.contains_key(id))
            .copied()
            .collect()
    }

    /// The bucket no longer holds `deleted` (ids from [`Self::deletable`]).
    ///
    /// Errors: [`HostError::Loading`], [`HostError::Failed`].
    pub fn objects_deleted(&mut self, deleted: &[ObjectId]) -> Result<Step<W>, HostError> {
        self.serving()?;
        let (_, d) = self.coordinator.objects_deleted(deleted);
        Ok(self.write(d, None))
    }

    /// [`BatchCoordinator::expire_producers`] at `now_ms`: the step that records it, `None`
    /// when no producer is that old.
    ///
    /// Errors: [`HostError`] when not serving (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
    pub fn expire_producers(
        &mut self,
        now_ms: i64,
        expiration_ms: i64,
    ) -> Result<Option<Step<W>>, HostError> {
        self.serving()?;
        Ok(self
            .coordinator
            .expire_producers(now_ms, expiration_ms)
            .map(|d| self.write(d, None)))
    }

    /// The run of `partition` to compact now ([`BatchCoordinator::compaction_plan`] over what
    /// readers see: decisions below the high watermark). None while not serving.
    pub fn compaction_plan(
        &self,
        partition: DisklessPartition,
        now_ms: i64,
        policy: &CompactionPolicy,
    ) -> Option<CompactionPlan> {
        if self.phase != Phase::Serving {
            return None;
        }
        let end = self.visible_end(partition)?;
        self.coordinator
            .compaction_plan(partition, now_ms, end, policy)
    }

    /// Decides `run` ([`BatchCoordinator::compacted`]); `waiter` gets [`Outcome::Written`] once
    /// the record is below the high watermark.
    ///
    /// Errors: [`HostError::Loading`], [`HostError::Failed`], [`HostError::Busy`];
    /// [`HostError::Compaction`] when the coordinator refuses it (nothing decided).
    pub fn compacted(
        &mut self,
        now_ms: i64,
        waiter: W,
        run: CompactedRun,
    ) -> Result<Step<W>, HostError> {
        self.serving()?;
        self.room()?;
        let d = self
            .coordinator
            .compacted(now_ms, run)
            .map_err(HostError::Compaction)?;
        Ok(self.write(d, Some((waiter, Outcome::Written))))
    }

    fn write(&mut self, decision: Decision, waiter: Option<(W, Outcome)>) -> Step<W> {
        let offset = self.log_end;
        let record = codec::encode(&decision);
        self.add_pending(offset, &decision, waiter);
        self.log_end += 1;
        Step::Append { offset, record }
    }

    fn add_pending(&mut self, offset: i64, decision: &Decision, waiter: Option<(W, Outcome)>) {
        let mut p = Pending {
            ends: Vec::new(),
            deleted_topic: None,
            waiters: Vec::new(),
            object: None,
        };
        match decision {
            Decision::CreatePartition(partition) => p.ends.push((*partition, 0)),
            Decision::Commit {
                commit, answers, ..
            } => {
                p.object = Some(commit.object);
                for (b, a) in commit.batches.iter().zip(answers) {
                    if let BatchAnswer::Appended { last_offset, .. } = a {
                        p.ends.push((b.partition, last_offset + 1));
                    }
                }
            }
            Decision::Marker {
                partition, offset, ..
            } => p.ends.push((*partition, offset + 1)),
            Decision::DeleteTopic { topic_id, .. } => p.deleted_topic = Some(*topic_id),
            // the new object is pending: the orphan sweep leaves it alone until it lands
            Decision::Compacted { run, .. } => p.object = Some(run.object),
            Decision::DeleteRecords { .. }
            | Decision::ObjectsDeleted(_)
            | Decision::ExpireProducers { .. } => {}
        }
        if let Some(object) = p.object {
            self.pending_objects.insert(object, offset);
        }
        if let Some(w) = waiter {
            p.waiters.push(w);
            self.waiters += 1;
        }
        self.pending.insert(offset, p);
    }

    /// The coordinator partition's high watermark moved to `hw`: the waiters of the records
    /// below it, with what they get, in log order. A lower `hw` than before changes nothing.
    pub fn high_watermark(&mut self, hw: i64) -> Vec<(W, Outcome)> {
        let mut answered = Vec::new();
        if hw <= self.high_watermark || self.phase == Phase::Failed {
            return answered;
        }
        if self.phase != Phase::Replaying {
            invariant!(
                hw <= self.log_end,
                "a diskless coordinator's high watermark {hw} passed its log end {}",
                self.log_end
            );
        }
        self.high_watermark = hw;
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() >= hw {
                break;
            }
            let p = entry.remove();
            for (partition, end) in p.ends {
                let v = self.visible.entry(partition).or_insert(0);
                *v = (*v).max(end);
            }
            if let Some(topic) = p.deleted_topic {
                self.visible
                    .retain(|partition, _| partition.topic_id != topic);
            }
            if let Some(object) = p.object {
                self.pending_objects.remove(&object);
            }
            self.waiters -= p.waiters.len();
            answered.extend(p.waiters);
        }
        if self.phase == Phase::Loaded && hw >= self.loaded_end {
            self.phase = Phase::Serving;
        }
        answered
    }

    /// A write failed (an append error, a replication wait that timed out, leadership lost):
    /// the host serves no more and hands back every waiter, to be answered with an error the
    /// sender retries (its resend gets the answers the log decided). The driver loads again.
    pub fn fail(&mut self) -> Vec<W> {
        self.phase = Phase::Failed;
        self.pending_objects.clear();
        self.waiters = 0;
        std::mem::take(&mut self.pending)
            .into_values()
            .flat_map(|p| p.waiters.into_iter().map(|(w, _)| w))
            .collect()
    }

    /// The host stops (this broker no longer leads the partition): every waiter, to be
    /// answered NOT_COORDINATOR.
    pub fn unload(mut self) -> Vec<W> {
        self.fail()
    }

    /// Where the batches of `partition` at `offset` are, as readers may see them: only
    /// decisions below the high watermark, and the high watermark they reach. The log start is
    /// the leader's (a DeleteRecords still pending already hides what it deletes).
    ///
    /// Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while loading; NOT_COORDINATOR (16) after a
    /// failure; UNKNOWN_TOPIC_OR_PARTITION (3); OFFSET_OUT_OF_RANGE (1) below the log start or
    /// above the high watermark readers see.
    pub fn find_batches(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
    ) -> Result<Found, E> {
        self.serving().map_err(HostError::code)?;
        let visible = self
            .visible_end(partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        let found = self
            .coordinator
            .find_visible(partition, offset, max_bytes, visible)?;
        invariant!(
            found.high_watermark == visible,
            "a diskless partition's visible end {visible} passed its coordinator's {}",
            found.high_watermark
        );
        Ok(found)
    }

    /// The log start, the end readers see and the last stable offset of `partition`
    /// (ListOffsets earliest, latest, and latest for `read_committed`).
    ///
    /// Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while loading; NOT_COORDINATOR (16) after a
    /// failure; UNKNOWN_TOPIC_OR_PARTITION (3) for a partition the coordinator does not know.
    pub fn offsets(&self, partition: DisklessPartition) -> Result<Offsets, E> {
        self.serving().map_err(HostError::code)?;
        let visible = self
            .visible_end(partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        self.coordinator
            .offsets(partition, visible)
            .ok_or(E::UnknownTopicOrPartition)
    }

    /// A verification token for `producer_id`'s transactional batch at `epoch` on `partition`
    /// ([`BatchCoordinator::begin_verification`], KIP-890; not a decision).
    ///
    /// Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while loading; NOT_COORDINATOR (16) after a
    /// failure; UNKNOWN_TOPIC_OR_PARTITION (3) for a partition the coordinator does not know.
    pub fn begin_verification(
        &mut self,
        partition: DisklessPartition,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Result<u64, E> {
        self.serving().map_err(HostError::code)?;
        self.coordinator
            .begin_verification(partition, producer_id, epoch, supports_epoch_bump)
    }

    /// The producers `partition` remembers ([`BatchCoordinator::producers`]; DescribeProducers).
    ///
    /// Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while loading; NOT_COORDINATOR (16) after a
    /// failure; UNKNOWN_TOPIC_OR_PARTITION (3) for a partition the coordinator does not know.
    pub fn producers(&self, partition: DisklessPartition) -> Result<Vec<ProducerInfo>, E> {
        self.serving().map_err(HostError::code)?;
        self.coordinator
            .producers(partition)
            .ok_or(E::UnknownTopicOrPartition)
    }

    /// Decides transaction marker `marker` on `partition` ([`BatchCoordinator::marker`]);
    /// `waiter` gets its offset once it is below the high watermark.
    ///
    /// Errors: as [`Self::commit`]'s loading/failure/busy; the coordinator's refusal
    /// ([`HostError::Refused`]).
    pub fn marker(
        &mut self,
        now_ms: i64,
        waiter: W,
        partition: DisklessPartition,
        marker: TxnMarker,
        bumps_epoch: bool,
    ) -> Result<Step<W>, HostError> {
        self.serving()?;
        self.room()?;
        let (offset, decision) = self
            .coordinator
            .marker(now_ms, partition, marker, bumps_epoch)
            .map_err(HostError::Refused)?;
        Ok(self.write(decision, Some((waiter, Outcome::MarkerAt(offset)))))
    }

    fn visible_end(&self, partition: DisklessPartition) -> Option<i64> {
        let v = self.visible.get(&partition).copied();
        // Known to the coordinator but its creation not yet committed: nothing to see.
        v.or_else(|| self.coordinator.high_watermark(partition).map(|_| 0))
    }

    /// Whether it serves (loaded, caught up, not failed).
    pub fn is_serving(&self) -> bool {
        self.phase == Phase::Serving
    }

    /// The coordinator partition's log end as this host wrote or replayed it.
    pub fn log_end(&self) -> i64 {
        self.log_end
    }

    /// Records at or above the high watermark (written, not yet replicated).
    pub fn pending_records(&self) -> usize {
        self.pending.len()
    }

    /// Waiters held.
    pub fn waiters(&self) -> usize {
        self.waiters
    }

    /// The state machine (read-only; digests and invariants for tests and the simulator).
    pub fn coordinator(&self) -> &BatchCoordinator {
        &self.coordinator
    }
}

#[cfg(test)]
mod tests;
