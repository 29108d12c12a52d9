//! The batch coordinator of diskless partitions (issue 60; `docs/diskless.md`, "The batch
//! coordinator"), sans-IO: the state every replica of a coordinator partition holds once it has
//! applied the same decisions, and the rules that make them.
//!
//! A broker uploads an object holding batches of many partitions, then commits it
//! ([`CommitBatches`]): the coordinator assigns each batch the next offsets of its partition, or
//! refuses it (producer state, bounds), or answers a retry of an idempotent producer with the
//! original offsets, exactly as a leader's log would (`frieda_log::ProducerStateManager`, Kafka's
//! five-batch window). Reads ask where the batches at an offset are ([`BatchCoordinator::find_batches`]);
//! DeleteRecords and retention move the log start ([`BatchCoordinator::delete_records`]); an
//! object no live batch refers to is marked for deletion and deleted after a grace period.
//!
//! Transactions (KIP-98): a transactional batch opens its producer's transaction on the
//! partition; a marker the transaction coordinator asks for ([`BatchCoordinator::marker`])
//! takes one offset, closes it and, when it aborts, enters the aborted transactions a
//! `read_committed` reader skips; the last stable offset is the first offset of the oldest
//! transaction still open (or closed by a marker not yet visible). The KIP-890 verification
//! happens at the broker that took the produce (docs/diskless.md, "Idempotence and
//! transactions").
//!
//! Compaction ([`compaction`]) rewrites a partition's oldest batches from the shared objects
//! into one object of that partition and names them with one coordinate, which bounds the
//! coordinates a partition holds by its retained bytes. Not here yet: the tiered layout for the
//! compacted objects, and snapshots.
//! Time comes in as arguments (ms); nothing here does IO.
//!
//! Invariants (asserted after every decision in debug builds, checked by
//! [`BatchCoordinator::check_invariants`] in tests): per partition `log_start <= high
//! watermark`; the coordinates are dense and in order from the first at or below the log start
//! up to the high watermark; at most `max_batches` of them; each object's reference count is the
//! number of coordinates naming it, and an object is marked for deletion exactly when none does.

use crate::storage::leader_append::producer_error;
use frieda_log::{
    AbortedTxn, BatchHeader, ControlType, EndTxnMarker, ProducerInfo, ProducerStateManager,
    SequenceCheck,
};
use kafka_protocol::error::ResponseError as E;
use std::collections::{HashMap, VecDeque};
use uuid::Uuid;

pub mod compaction;
pub use compaction::{CompactError, CompactedRun, CompactionPlan, CompactionPolicy};

/// The default bound on a partition's batch coordinates
/// (`diskless.coordinator.max.batches.per.partition`; about 48 bytes each). A commit past it is
/// refused KAFKA_STORAGE_ERROR (retriable) for that partition until compaction catches up.
pub const DEFAULT_MAX_BATCHES_PER_PARTITION: usize = 16_384;

/// Objects whose per-batch answers are kept, so a broker that resends a commit (its answer was
/// lost with the coordinator's leader) gets the same answers; an older object's commit is
/// refused, never decided twice.
pub const RECENT_COMMITS: usize = 4_096;

/// The default bound on an object's age at its commit
/// (`diskless.coordinator.max.commit.age.ms`; docs/diskless.md, "Compaction and garbage
/// collection"): older commits are refused, so an object the coordinator does not know and that is
/// older than this (plus clock skew) can never be committed and the orphan sweep may delete it.
pub const DEFAULT_MAX_COMMIT_AGE_MS: i64 = 30_000;

/// An uploaded object (the key's UUIDv7; also the chunk cache's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub Uuid);

impl ObjectId {
    /// A UUIDv7 (RFC 9562 §5.7) made at `now_ms` with `random`'s low 74 bits in its random
    /// fields (compaction's new objects: random, so they never meet an uploader's
    /// broker-and-counter ids but by chance).
    pub fn v7(now_ms: i64, random: u128) -> ObjectId {
        let ms = (now_ms.max(0) as u128) & ((1 << 48) - 1);
        let rand_a = (random >> 62) & 0xfff;
        let rand_b = random & ((1 << 62) - 1);
        ObjectId(Uuid::from_u128(
            (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b,
        ))
    }

    /// When its uploader closed it (ms since the epoch): a UUIDv7's top 48 bits (RFC 9562 §5.7).
    pub fn created_ms(&self) -> i64 {
        (self.0.as_u128() >> 80) as i64
    }
}

/// A partition of a diskless topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DisklessPartition {
    /// The topic's id (KIP-516).
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
}

/// One batch of an uploaded object, as its uploader commits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedBatch {
    /// Its partition.
    pub partition: DisklessPartition,
    /// Where its bytes start in the object (bytes).
    pub byte_offset: u32,
    /// Its length (bytes, the whole v2 batch).
    pub byte_len: u32,
    /// Its v2 header as validated and stored (base offset 0 as the client sent it).
    pub header: BatchHeader,
    /// For a transactional batch: the token [`BatchCoordinator::begin_verification`] gave the
    /// broker that took it, asked before that broker verified the batch with the transaction
    /// coordinator (KIP-890). A batch that would open a transaction is refused
    /// INVALID_TXN_STATE unless the token is still valid (a marker for its producer decided
    /// since voids it: a late batch of a finished transaction cannot open a new one). `None`:
    /// not checked. Carried by the Commit call ([`super::wire`]), not by the decision (whose
    /// answers are decided): a replica reads it back as `None`.
    pub verification: Option<u64>,
}

/// A broker's commit of one uploaded object (docs/diskless.md, "The write path", step 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitBatches {
    /// The object.
    pub object: ObjectId,
    /// Its size (bytes).
    pub object_size: u64,
    /// The broker that uploaded it.
    pub uploader: i32,
    /// Its batches, in the order their producers sent them.
    pub batches: Vec<CommittedBatch>,
}

/// The coordinator's answer for one batch of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchAnswer {
    /// Stored at these offsets.
    Appended {
        /// The first offset.
        base_offset: i64,
        /// The last offset.
        last_offset: i64,
    },
    /// A retry of a batch an earlier object stored: answered with its offsets, stored again
    /// nowhere (its bytes in this object are dead).
    Duplicate {
        /// Where the original is.
        base_offset: i64,
        /// Its last offset.
        last_offset: i64,
    },
    /// Refused with this error: UNKNOWN_TOPIC_OR_PARTITION (3), KAFKA_STORAGE_ERROR (56, the
    /// coordinate bound), INVALID_RECORD (87, a control batch), or the producer state's:
    /// INVALID_PRODUCER_EPOCH (47), OUT_OF_ORDER_SEQUENCE_NUMBER (45), INVALID_TXN_STATE (48, a
    /// plain batch while the producer's transaction is open), NOT_LEADER_OR_FOLLOWER (6, after
    /// an earlier refused batch of the same producer: resend in order).
    Refused(E),
}

/// Why a whole commit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// A batch's byte range lies outside the object.
    #[error("a batch's byte range lies outside the object")]
    OutsideObject,
    /// The object was committed before and its answers are no longer kept.
    #[error("the object was committed before; its answers are forgotten")]
    CommittedBefore,
    /// The object is older than the commit-age bound (its batches may be swept as an orphan).
    #[error("the object is older than the commit-age bound")]
    TooOld,
}

/// A transaction marker (KIP-98's control batch) as the coordinator stores it: no object
/// holds it; a reader builds its batch from these fields (`frieda_log::build_marker_batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    /// The transaction's producer.
    pub producer_id: i64,
    /// The epoch the marker carries (transactions v2: the one the coordinator bumped to).
    pub producer_epoch: i16,
    /// The transaction coordinator's epoch.
    pub coordinator_epoch: i32,
    /// Commit (true) or abort.
    pub commit: bool,
}

impl TxnMarker {
    /// The marker as the log's producer state takes it.
    pub fn end_txn(&self) -> EndTxnMarker {
        EndTxnMarker {
            control: if self.commit {
                ControlType::Commit
            } else {
                ControlType::Abort
            },
            coordinator_epoch: self.coordinator_epoch,
        }
    }
}

/// Where the records of a [`Coordinate`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A byte range of an uploaded object.
    Object {
        /// The object.
        object: ObjectId,
        /// First byte in the object.
        byte_offset: u32,
        /// Bytes.
        byte_len: u32,
    },
    /// A transaction marker, one offset, held by the coordinator alone.
    Marker(TxnMarker),
}

/// Where a run of offsets is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coordinate {
    /// Where its batch is.
    pub location: Location,
    /// First offset.
    pub base_offset: i64,
    /// Last offset.
    pub last_offset: i64,
    /// Largest record timestamp (ms); a marker's: when it was decided.
    pub max_timestamp: i64,
}

impl Coordinate {
    /// The object holding it (none for a marker).
    pub fn object(&self) -> Option<ObjectId> {
        self.object_range().map(|(object, _, _)| object)
    }

    /// The object and byte range holding it: (object, first byte, bytes); none for a marker.
    pub fn object_range(&self) -> Option<(ObjectId, u32, u32)> {
        match self.location {
            Location::Object {
                object,
                byte_offset,
                byte_len,
            } => Some((object, byte_offset, byte_len)),
            Location::Marker(_) => None,
        }
    }

    /// Bytes of its batch in an object (0 for a marker, which takes no object bytes).
    pub fn byte_len(&self) -> u32 {
        match self.location {
            Location::Object { byte_len, .. } => byte_len,
            Location::Marker(_) => 0,
        }
    }
}

/// What a read at an offset gets ([`BatchCoordinator::find_batches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The coordinates from the one holding the offset, at least one, up to the byte limit.
    pub coordinates: Vec<Coordinate>,
    /// The partition's high watermark (its next offset).
    pub high_watermark: i64,
    /// Its log start offset.
    pub log_start: i64,
    /// Its last stable offset (KIP-98): `read_committed` readers stop below it.
    pub last_stable_offset: i64,
    /// The aborted transactions whose offsets overlap the coordinates found, by marker offset
    /// (Fetch's `aborted_transactions`).
    pub aborted: Vec<AbortedTxn>,
}

/// A partition's offsets ([`BatchCoordinator::offsets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offsets {
    /// The log start offset.
    pub log_start: i64,
    /// The high watermark (the next offset).
    pub high_watermark: i64,
    /// The last stable offset (KIP-98).
    pub last_stable_offset: i64,
}

/// A decision of the coordinator partition's leader, as every replica applies it
/// ([`BatchCoordinator::apply`]): the record the leader writes to the coordinator partition
/// (its encoding comes with the hosting partition, build plan step 3). A replica that applied
/// the same decisions in the same order holds the same state and would decide the same.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// [`BatchCoordinator::create_partition`].
    CreatePartition(DisklessPartition),
    /// [`BatchCoordinator::commit`]: the commit and the answer decided for each batch.
    Commit {
        /// When it was decided (the leader's clock, ms).
        now_ms: i64,
        /// The commit.
        commit: CommitBatches,
        /// One answer per batch.
        answers: Vec<BatchAnswer>,
    },
    /// [`BatchCoordinator::marker`]: a transaction marker stored at `offset`.
    Marker {
        /// When it was decided (ms): the marker record's timestamp.
        now_ms: i64,
        /// The partition.
        partition: DisklessPartition,
        /// The marker.
        marker: TxnMarker,
        /// Its offset (the partition's next one, asserted).
        offset: i64,
    },
    /// [`BatchCoordinator::delete_records`]: the log start it moved to.
    DeleteRecords {
        /// When (ms).
        now_ms: i64,
        /// The partition.
        partition: DisklessPartition,
        /// The new log start.
        log_start: i64,
    },
    /// [`BatchCoordinator::delete_topic`].
    DeleteTopic {
        /// When (ms).
        now_ms: i64,
        /// The topic.
        topic_id: Uuid,
    },
    /// [`BatchCoordinator::objects_deleted`].
    ObjectsDeleted(Vec<ObjectId>),
    /// [`BatchCoordinator::expire_producers`]: every partition forgets its producers whose last
    /// batch is `expiration_ms` older than `now_ms` and that have no open transaction.
    ExpireProducers {
        /// When (the leader's clock, ms).
        now_ms: i64,
        /// `producer.id.expiration.ms` then.
        expiration_ms: i64,
    },
    /// [`BatchCoordinator::compacted`]: the run's coordinates become one naming its object.
    Compacted {
        /// When (the leader's clock, ms): the replaced objects' deletion marks.
        now_ms: i64,
        /// The run.
        run: CompactedRun,
    },
}

#[derive(Debug, Clone, Copy)]
struct ObjectEntry {
    size: u64,
    uploader: i32,
    /// Coordinates naming it.
    references: u32,
    /// Marked for deletion at (ms): no coordinate names it.
    deleting_since: Option<i64>,
    /// Written by compaction (one partition's batches, offsets patched in), not by a produce.
    compacted: bool,
}

impl ObjectEntry {
    fn is_deletable(&self) -> bool {
        self.deleting_since.is_some() && self.references == 0
    }
}

#[derive(Debug, Default)]
struct PartitionState {
    log_start: i64,
    next_offset: i64,
    coordinates: VecDeque<Coordinate>,
    producers: ProducerStateManager,
    /// Aborted transactions whose markers are at or above the log start, by marker offset
    /// (one per abort marker retained: bounded by the retained records, as a classic log's
    /// transaction index).
    aborted: VecDeque<AbortedTxn>,
    /// Batches and markers this coordinator refused KAFKA_STORAGE_ERROR at the coordinate bound
    /// since it was built: counted where decided ([`BatchCoordinator::commit`],
    /// [`BatchCoordinator::marker`]), not replicated (a replica, or a reload, starts at 0). For
    /// /metrics.
    refused_at_bound: u64,
}

impl PartitionState {
    /// The last stable offset when the partition's records are visible below `end`.
    fn last_stable_offset(&self, end: i64) -> i64 {
        self.producers.frontier().last_stable_offset(end)
    }
}

/// The batch coordinator's state for the diskless partitions of one coordinator partition.
#[derive(Debug)]
pub struct BatchCoordinator {
    max_batches: usize,
    max_commit_age_ms: i64,
    partitions: HashMap<DisklessPartition, PartitionState>,
    objects: HashMap<ObjectId, ObjectEntry>,
    /// The last [`RECENT_COMMITS`] objects committed, oldest first, with their answers.
    recent: VecDeque<ObjectId>,
    answers: HashMap<ObjectId, Vec<BatchAnswer>>,
    /// The high 32 bits of the verification tokens this coordinator hands out (see
    /// [`Self::with_token_epoch`]); a token of another is no longer valid.
    token_epoch: u32,
}

impl BatchCoordinator {
    /// An empty coordinator; `max_batches`: the bound on a partition's coordinates.
    pub fn new(max_batches: usize) -> BatchCoordinator {
        BatchCoordinator {
            max_batches: max_batches.max(1),
            max_commit_age_ms: DEFAULT_MAX_COMMIT_AGE_MS,
            partitions: HashMap::new(),
            objects: HashMap::new(),
            recent: VecDeque::new(),
            answers: HashMap::new(),
            token_epoch: 0,
        }
    }

    /// The same handing out verification tokens of `epoch`: each load of a coordinator takes a
    /// new one (tokens live only on the leader that gave them, as Kafka's verification state;
    /// after a failover a token of the old leader is no longer valid, and its batch, if it
    /// opens a transaction, is refused INVALID_TXN_STATE).
    pub fn with_token_epoch(mut self, epoch: u32) -> BatchCoordinator {
        self.token_epoch = epoch;
        self
    }

    /// Starts verifying that `producer_id`'s transaction at `epoch` includes `partition`
    /// (KIP-890; `supports_epoch_bump`: transactions v2): the token a transactional batch's
    /// commit must carry ([`CommittedBatch::verification`]) to open a transaction there. With
    /// the producer's transaction already open at `epoch`, a token that lets its batches
    /// continue it only. Not a decision: tokens are the leader's alone.
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) for a partition not served here.
    pub fn begin_verification(
        &mut self,
        partition: DisklessPartition,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Result<u64, E> {
        let p = self
            .partitions
            .get_mut(&partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        // None: open at this epoch, nothing to verify; local token 0 matches no verification
        let local = p
            .producers
            .begin_verification(producer_id, epoch, supports_epoch_bump)
            .unwrap_or(0);
        Ok((u64::from(self.token_epoch) << 32) | (local & 0xffff_ffff))
    }

    /// The same with commits of objects older than `ms` refused ([`CommitError::TooOld`]).
    pub fn with_max_commit_age(mut self, ms: i64) -> BatchCoordinator {
        self.max_commit_age_ms = ms;
        self
    }

    /// Whether `object` is committed here and not yet forgotten (deleted).
    pub fn knows(&self, object: ObjectId) -> bool {
        self.objects.contains_key(&object)
    }

    /// Starts serving `partition` at offset 0 (the metadata created it); no effect if known.
    pub fn create_partition(&mut self, partition: DisklessPartition) -> Decision {
        let d = Decision::CreatePartition(partition);
        self.apply(&d);
        d
    }

    /// Forgets every partition of `topic_id` (the topic was deleted); their objects are
    /// marked for deletion at `now_ms` once nothing else names them.
    pub fn delete_topic(&mut self, now_ms: i64, topic_id: Uuid) -> Decision {
        let d = Decision::DeleteTopic { now_ms, topic_id };
        self.apply(&d);
        d
    }

    /// Applies a decision of the leader (on a replica, or replaying the coordinator
    /// partition's log). A commit of an object already known is skipped (applied once).
    pub fn apply(&mut self, decision: &Decision) {
        match decision {
            Decision::CreatePartition(p) => {
                self.partitions.entry(*p).or_default();
            }
            Decision::Commit {
                now_ms,
                commit,
                answers,
            } => {
                if self.objects.contains_key(&commit.object)
                    || answers.len() != commit.batches.len()
                {
                    tracing::warn!(object = ?commit.object, "a commit applied twice or malformed: skipped");
                    return;
                }
                for (b, a) in commit.batches.iter().zip(answers) {
                    self.take_answer(commit.object, b, a);
                }
                self.register(*now_ms, commit, answers.clone());
            }
            Decision::Marker {
                now_ms,
                partition,
                marker,
                offset,
            } => self.store_marker(*now_ms, *partition, *marker, *offset),
            Decision::DeleteRecords {
                now_ms,
                partition,
                log_start,
            } => self.move_log_start(*now_ms, *partition, *log_start),
            Decision::DeleteTopic { now_ms, topic_id } => self.drop_topic(*now_ms, *topic_id),
            Decision::ObjectsDeleted(ids) => {
                self.forget_objects(ids);
            }
            Decision::ExpireProducers {
                now_ms,
                expiration_ms,
            } => {
                for p in self.partitions.values_mut() {
                    p.producers.expire(*now_ms, *expiration_ms);
                }
            }
            Decision::Compacted { now_ms, run } => self.replace_run(*now_ms, run),
        }
        self.debug_check();
    }

    /// Producer expiry (`producer.id.expiration.ms`, Kafka's `ProducerStateManager`
    /// `removeExpiredProducers`; KIP-854 separated it from the transactional id's expiry): the
    /// producers of every partition whose last batch's timestamp is at least `expiration_ms`
    /// before `now_ms` and that have no open transaction are forgotten, so the producer state
    /// stays bounded by the producers active in that window. A forgotten producer's next batch
    /// is accepted at any sequence, as on a classic partition after expiry. `None` when no
    /// producer is that old (nothing to record).
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> Option<Decision> {
        if !self
            .partitions
            .values()
            .any(|p| p.producers.would_expire(now_ms, expiration_ms))
        {
            return None;
        }
        let d = Decision::ExpireProducers {
            now_ms,
            expiration_ms,
        };
        self.apply(&d);
        Some(d)
    }

    /// How many producers the partitions remember in all (each partition's producer state).
    pub fn producer_count(&self) -> usize {
        self.partitions.values().map(|p| p.producers.len()).sum()
    }

    fn drop_topic(&mut self, now_ms: i64, topic_id: Uuid) {
        let gone: Vec<DisklessPartition> = self
            .partitions
            .keys()
            .filter(|p| p.topic_id == topic_id)
            .copied()
            .collect();
        for p in gone {
            if let Some(state) = self.partitions.remove(&p) {
                for object in state.coordinates.iter().filter_map(Coordinate::object) {
                    self.release(now_ms, object);
                }
            }
        }
    }

    /// Decides the commit of an uploaded object at `now_ms`: one answer per batch, in order.
    /// A resent commit of an object still among the last [`RECENT_COMMITS`] gets the answers
    /// it got. An object no accepted batch names is marked for deletion at once.
    ///
    /// Errors (nothing decided): [`CommitError::OutsideObject`] when a batch's range is not in
    /// the object; [`CommitError::CommittedBefore`] for an object committed before whose answers
    /// are forgotten; [`CommitError::TooOld`] for an object closed more than the commit-age
    /// bound before `now_ms`.
    ///
    /// Returns the answers and the decision to replicate (none for a resent commit).
    pub fn commit(
        &mut self,
        now_ms: i64,
        commit: &CommitBatches,
    ) -> Result<(Vec<BatchAnswer>, Option<Decision>), CommitError> {
        if let Some(answers) = self.answers.get(&commit.object) {
            return Ok((answers.clone(), None));
        }
        if self.objects.contains_key(&commit.object) {
            return Err(CommitError::CommittedBefore);
        }
        if now_ms.saturating_sub(commit.object.created_ms()) > self.max_commit_age_ms {
            return Err(CommitError::TooOld);
        }
        if commit
            .batches
            .iter()
            .any(|b| u64::from(b.byte_offset) + u64::from(b.byte_len) > commit.object_size)
        {
            return Err(CommitError::OutsideObject);
        }
        // Each batch is judged on the state its predecessors in the object left.
        let mut answers = Vec::with_capacity(commit.batches.len());
        for b in &commit.batches {
            let answer = self.judge(b);
            if answer == BatchAnswer::Refused(E::KafkaStorageError) {
                if let Some(p) = self.partitions.get_mut(&b.partition) {
                    p.refused_at_bound += 1;
                }
            }
            self.take_answer(commit.object, b, &answer);
            answers.push(answer);
        }
        self.register(now_ms, commit, answers.clone());
        self.debug_check();
        Ok((
            answers.clone(),
            Some(Decision::Commit {
                now_ms,
                commit: commit.clone(),
                answers,
            }),
        ))
    }

    /// Records a decided commit's object and its answers (for resent commits).
    fn register(&mut self, now_ms: i64, commit: &CommitBatches, answers: Vec<BatchAnswer>) {
        let references = answers
            .iter()
            .filter(|a| matches!(a, BatchAnswer::Appended { .. }))
            .count() as u32;
        self.objects.insert(
            commit.object,
            ObjectEntry {
                size: commit.object_size,
                uploader: commit.uploader,
                references,
                deleting_since: (references == 0).then_some(now_ms),
                compacted: false,
            },
        );
        if self.recent.len() == RECENT_COMMITS {
            if let Some(old) = self.recent.pop_front() {
                self.answers.remove(&old);
            }
        }
        self.recent.push_back(commit.object);
        self.answers.insert(commit.object, answers);
    }

    /// The answer for batch `b` on the current state (read-only: [`Self::take_answer`] applies it).
    fn judge(&self, b: &CommittedBatch) -> BatchAnswer {
        let Some(p) = self.partitions.get(&b.partition) else {
            return BatchAnswer::Refused(E::UnknownTopicOrPartition);
        };
        let h = &b.header;
        if h.is_control() {
            return BatchAnswer::Refused(E::InvalidRecord);
        }
        // A transactional batch was verified (KIP-890) by the broker that took it, with a token
        // from this coordinator (of this load) asked first: a marker since voided it.
        let token = b
            .verification
            .and_then(|t| (t >> 32 == u64::from(self.token_epoch)).then_some(t & 0xffff_ffff));
        let token = token.filter(|&t| t != 0);
        match p.producers.check(h, token, b.verification.is_some()) {
            Err(e) => BatchAnswer::Refused(producer_error(e)),
            Ok(SequenceCheck::Duplicate {
                base_offset,
                last_offset,
            }) => BatchAnswer::Duplicate {
                base_offset,
                last_offset,
            },
            Ok(SequenceCheck::Append) if p.coordinates.len() >= self.max_batches => {
                BatchAnswer::Refused(E::KafkaStorageError)
            }
            Ok(SequenceCheck::Append) => BatchAnswer::Appended {
                base_offset: p.next_offset,
                last_offset: p.next_offset + i64::from(h.last_offset_delta.max(0)),
            },
        }
    }

    /// Applies the answer decided for batch `b` of `object`: a stored batch takes its offsets
    /// (the next ones of its partition, asserted) and its producer's state moves; a batch
    /// refused at the bound is noted, so a later batch of its producer is refused in turn
    /// (resend in order), not called out of order. Other answers change nothing.
    fn take_answer(&mut self, object: ObjectId, b: &CommittedBatch, answer: &BatchAnswer) {
        let Some(p) = self.partitions.get_mut(&b.partition) else {
            return;
        };
        match *answer {
            BatchAnswer::Appended {
                base_offset,
                last_offset,
            } => {
                assert_eq!(
                    base_offset, p.next_offset,
                    "a batch stored away from its partition's high watermark"
                );
                p.producers.record(&b.header, base_offset);
                p.coordinates.push_back(Coordinate {
                    location: Location::Object {
                        object,
                        byte_offset: b.byte_offset,
                        byte_len: b.byte_len,
                    },
                    base_offset,
                    last_offset,
                    max_timestamp: b.header.max_timestamp,
                });
                p.next_offset = last_offset + 1;
            }
            BatchAnswer::Refused(E::KafkaStorageError) => p.producers.note_refused(&b.header),
            BatchAnswer::Duplicate { .. } | BatchAnswer::Refused(_) => {}
        }
    }

    /// The coordinates of `partition` from the one holding `offset`: at least one, then more
    /// while their bytes stay within `max_bytes`. None at the high watermark. (Everything
    /// decided: [`Self::find_visible`] with no bound.)
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); OFFSET_OUT_OF_RANGE (1) below the log start or
    /// above the high watermark.
    pub fn find_batches(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
    ) -> Result<Found, E> {
        self.find_visible(partition, offset, max_bytes, i64::MAX)
    }

    /// [`Self::find_batches`] of the records below `end` (the partition's visible end, at most
    /// its high watermark): coordinates, high watermark, last stable offset and aborted
    /// transactions as readers may see them when the decisions below `end` are replicated.
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); OFFSET_OUT_OF_RANGE (1) below the log start or
    /// above the end.
    pub fn find_visible(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
        end: i64,
    ) -> Result<Found, E> {
        let p = self
            .partitions
            .get(&partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        let end = end.min(p.next_offset);
        if offset < p.log_start || offset > end {
            return Err(E::OffsetOutOfRange);
        }
        let first = p.coordinates.partition_point(|c| c.last_offset < offset);
        let mut coordinates = Vec::new();
        let mut bytes = 0u64;
        for c in p.coordinates.iter().skip(first) {
            if c.last_offset >= end {
                break;
            }
            bytes += u64::from(c.byte_len());
            if !coordinates.is_empty() && bytes > max_bytes {
                break;
            }
            coordinates.push(*c);
        }
        let upto = coordinates.last().map_or(offset, |c| c.last_offset + 1);
        let aborted = p
            .aborted
            .iter()
            .filter(|a| a.last_offset >= offset && a.last_offset < end && a.first_offset < upto)
            .copied()
            .collect();
        Ok(Found {
            coordinates,
            high_watermark: end,
            log_start: p.log_start,
            last_stable_offset: p.last_stable_offset(end),
            aborted,
        })
    }

    /// The offsets of `partition` when its records are visible below `end` (`i64::MAX`: all
    /// decided ones), if served here.
    pub fn offsets(&self, partition: DisklessPartition, end: i64) -> Option<Offsets> {
        self.partitions.get(&partition).map(|p| {
            let end = end.min(p.next_offset);
            Offsets {
                log_start: p.log_start.min(end),
                high_watermark: end,
                last_stable_offset: p.last_stable_offset(end),
            }
        })
    }

    /// The producers `partition` remembers (DescribeProducers, KIP-664), by producer id: each
    /// one's epoch, last sequence, last batch's max timestamp (ms), its transaction
    /// coordinator's epoch and the first offset of its open transaction (-1: none), as decided
    /// (decisions not yet below the high watermark included, as Kafka's leader reports what it
    /// appended). `None` when the partition is not served here.
    pub fn producers(&self, partition: DisklessPartition) -> Option<Vec<ProducerInfo>> {
        self.partitions
            .get(&partition)
            .map(|p| p.producers.describe())
    }

    /// Decides transaction marker `marker` on `partition` at `now_ms` (WriteTxnMarkers, Kafka's
    /// `appendEndTxnMarker`): it takes the partition's next offset and closes its producer's
    /// transaction there, if one is open (an abort enters the aborted transactions).
    /// `bumps_epoch`: transactions v2, the marker's epoch must be above the producer's.
    /// Returns the marker's offset and the decision.
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); INVALID_PRODUCER_EPOCH (47) for an older epoch;
    /// TRANSACTION_COORDINATOR_FENCED (52) for an older coordinator epoch; KAFKA_STORAGE_ERROR
    /// (56) at the coordinate bound.
    pub fn marker(
        &mut self,
        now_ms: i64,
        partition: DisklessPartition,
        marker: TxnMarker,
        bumps_epoch: bool,
    ) -> Result<(i64, Decision), E> {
        let p = self
            .partitions
            .get_mut(&partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        p.producers
            .check_marker(
                marker.producer_id,
                marker.producer_epoch,
                marker.coordinator_epoch,
                bumps_epoch,
            )
            .map_err(producer_error)?;
        if p.coordinates.len() >= self.max_batches {
            p.refused_at_bound += 1;
            return Err(E::KafkaStorageError);
        }
        let offset = p.next_offset;
        let d = Decision::Marker {
            now_ms,
            partition,
            marker,
            offset,
        };
        self.apply(&d);
        Ok((offset, d))
    }

    fn store_marker(&mut self, now_ms: i64, partition: DisklessPartition, m: TxnMarker, at: i64) {
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        assert_eq!(
            at, p.next_offset,
            "a marker stored away from its partition's end"
        );
        let closed =
            p.producers
                .record_marker(m.producer_id, m.producer_epoch, m.end_txn(), at, now_ms);
        if let Some(txn) = closed.filter(|t| t.aborted) {
            p.aborted.push_back(AbortedTxn {
                producer_id: txn.producer_id,
                first_offset: txn.first_offset,
                last_offset: txn.last_offset,
                last_stable_offset: p.producers.last_stable_offset_after(&txn),
            });
        }
        p.coordinates.push_back(Coordinate {
            location: Location::Marker(m),
            base_offset: at,
            last_offset: at,
            max_timestamp: now_ms,
        });
        p.next_offset = at + 1;
    }

    /// The log start offset of `partition`, if served here.
    pub fn log_start(&self, partition: DisklessPartition) -> Option<i64> {
        self.partitions.get(&partition).map(|p| p.log_start)
    }

    /// The high watermark of `partition` (its next offset), if served here.
    pub fn high_watermark(&self, partition: DisklessPartition) -> Option<i64> {
        self.partitions.get(&partition).map(|p| p.next_offset)
    }

    /// DeleteRecords (and retention): moves the log start of `partition` to `offset` (-1: the
    /// high watermark), never back; coordinates wholly below it go, and objects left with no
    /// coordinate are marked for deletion at `now_ms`. Returns the log start.
    ///
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); OFFSET_OUT_OF_RANGE (1) above the high watermark
    /// or below -1.
    pub fn delete_records(
        &mut self,
        now_ms: i64,
        partition: DisklessPartition,
        offset: i64,
    ) -> Result<(i64, Decision), E> {
        let p = self
            .partitions
            .get(&partition)
            .ok_or(E::UnknownTopicOrPartition)?;
        let offset = if offset == -1 { p.next_offset } else { offset };
        if offset < 0 || offset > p.next_offset {
            return Err(E::OffsetOutOfRange);
        }
        let log_start = p.log_start.max(offset);
        let d = Decision::DeleteRecords {
            now_ms,
            partition,
            log_start,
        };
        self.apply(&d);
        Ok((log_start, d))
    }

    fn move_log_start(&mut self, now_ms: i64, partition: DisklessPartition, log_start: i64) {
        let Some(p) = self.partitions.get_mut(&partition) else {
            return;
        };
        p.log_start = p.log_start.max(log_start.min(p.next_offset));
        let mut released = Vec::new();
        while p
            .coordinates
            .front()
            .is_some_and(|c| c.last_offset < p.log_start)
        {
            released.extend(p.coordinates.pop_front().and_then(|c| c.object()));
        }
        while p
            .aborted
            .front()
            .is_some_and(|a| a.last_offset < p.log_start)
        {
            p.aborted.pop_front();
        }
        for object in released {
            self.release(now_ms, object);
        }
    }

    fn release(&mut self, now_ms: i64, object: ObjectId) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.references = o.references.saturating_sub(1);
            if o.references == 0 && o.deleting_since.is_none() {
                o.deleting_since = Some(now_ms);
            }
        }
    }

    /// Objects marked for deletion at least `delay_ms` before `now_ms` (a reader holding their
    /// coordinates had that long), oldest mark first, with their sizes (bytes) and uploaders.
    pub fn deletable(&self, now_ms: i64, delay_ms: i64) -> Vec<(ObjectId, u64, i32)> {
        let mut out: Vec<(i64, ObjectId, u64, i32)> = self
            .objects
            .iter()
            .filter_map(|(id, o)| {
                o.deleting_since
                    .filter(|since| now_ms.saturating_sub(*since) >= delay_ms)
                    .map(|since| (since, *id, o.size, o.uploader))
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, id, s, u)| (id, s, u)).collect()
    }

    /// Forgets objects the store deleted. Returns how many were forgotten and the decision;
    /// an object still named by a coordinate (never handed out by [`Self::deletable`]) is kept.
    pub fn objects_deleted(&mut self, deleted: &[ObjectId]) -> (usize, Decision) {
        // what `apply` does for this decision, keeping the count
        let n = self.forget_objects(deleted);
        self.debug_check();
        (n, Decision::ObjectsDeleted(deleted.to_vec()))
    }

    fn forget_objects(&mut self, deleted: &[ObjectId]) -> usize {
        let mut n = 0;
        for id in deleted {
            if self.objects.get(id).is_some_and(ObjectEntry::is_deletable) {
                self.objects.remove(id);
                n += 1;
            }
        }
        n
    }

    /// A digest of the whole state (partitions, coordinates, producer state as its snapshot
    /// keeps it, objects, kept answers), equal on replicas that applied the same decisions.
    pub fn state_digest(&self) -> u32 {
        let mut text = String::new();
        let mut parts: Vec<_> = self.partitions.iter().collect();
        parts.sort_by_key(|(id, _)| **id);
        for (id, p) in parts {
            text += &format!(
                "{id:?} {} {} {:?} {:?}\n",
                p.log_start, p.next_offset, p.coordinates, p.aborted
            );
            text += &format!("{:?}\n", p.producers.snapshot());
        }
        let mut objects: Vec<_> = self.objects.iter().collect();
        objects.sort_by_key(|(id, _)| **id);
        text += &format!("{objects:?}\n{:?}\n", self.recent);
        for id in &self.recent {
            text += &format!("{:?}\n", self.answers.get(id));
        }
        crc32c::crc32c(text.as_bytes())
    }

    /// The partitions served.
    pub fn partitions(&self) -> Vec<DisklessPartition> {
        let mut out: Vec<DisklessPartition> = self.partitions.keys().copied().collect();
        out.sort();
        out
    }

    /// The topics of the partitions served (by id).
    pub fn topic_ids(&self) -> std::collections::BTreeSet<Uuid> {
        self.partitions.keys().map(|p| p.topic_id).collect()
    }

    /// The coordinates `partition` holds (`None`: not served here); at most the bound given to
    /// [`BatchCoordinator::new`].
    pub fn coordinate_count(&self, partition: DisklessPartition) -> Option<usize> {
        self.partitions.get(&partition).map(|p| p.coordinates.len())
    }

    /// Batches and markers of `partition` this coordinator refused at the coordinate bound since
    /// it was built (leader-side, not replicated; see [`Self::commit`]). None for a partition it
    /// does not know.
    pub fn refused_at_bound(&self, partition: DisklessPartition) -> Option<u64> {
        self.partitions.get(&partition).map(|p| p.refused_at_bound)
    }

    /// Objects known (live or marked for deletion).
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            if let Err(e) = self.check_invariants() {
                panic!("batch coordinator invariant: {e}");
            }
        }
    }

    /// Checks the invariants (module docs). Errors: the first one broken, described.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut references: HashMap<ObjectId, u32> = HashMap::new();
        for (id, p) in &self.partitions {
            if p.log_start > p.next_offset {
                return Err(format!(
                    "{id:?}: log start {} above the high watermark {}",
                    p.log_start, p.next_offset
                ));
            }
            if p.coordinates.len() > self.max_batches {
                return Err(format!("{id:?}: {} coordinates", p.coordinates.len()));
            }
            if let Some(first) = p.coordinates.front() {
                if first.last_offset < p.log_start || first.base_offset > p.log_start {
                    return Err(format!(
                        "{id:?}: first coordinate {}..={} does not hold the log start {}",
                        first.base_offset, first.last_offset, p.log_start
                    ));
                }
            } else if p.log_start != p.next_offset {
                return Err(format!(
                    "{id:?}: no coordinates between {} and {}",
                    p.log_start, p.next_offset
                ));
            }
            let mut expect = p.coordinates.front().map(|c| c.base_offset);
            for c in &p.coordinates {
                if Some(c.base_offset) != expect || c.last_offset < c.base_offset {
                    return Err(format!(
                        "{id:?}: coordinate {}..={} after {expect:?}",
                        c.base_offset, c.last_offset
                    ));
                }
                expect = Some(c.last_offset + 1);
                if let Some(object) = c.object() {
                    *references.entry(object).or_default() += 1;
                }
            }
            // (compaction folds markers into compacted objects: each aborted transaction's
            // marker lies in the partition, after the previous one's)
            let mut previous = i64::MIN;
            for a in &p.aborted {
                if a.last_offset < p.log_start.max(previous)
                    || a.last_offset >= p.next_offset
                    || a.first_offset > a.last_offset
                {
                    return Err(format!("{id:?}: aborted transaction {a:?} out of place"));
                }
                previous = a.last_offset;
            }
            if let Some(end) = expect {
                if end != p.next_offset {
                    return Err(format!(
                        "{id:?}: coordinates end at {end}, high watermark {}",
                        p.next_offset
                    ));
                }
            }
        }
        for (id, o) in &self.objects {
            let named = references.get(id).copied().unwrap_or(0);
            if named != o.references {
                return Err(format!(
                    "{id:?}: {} references counted, {named} coordinates",
                    o.references
                ));
            }
            if (named == 0) != o.deleting_since.is_some() {
                return Err(format!(
                    "{id:?}: {named} coordinates, marked {:?}",
                    o.deleting_since
                ));
            }
        }
        if let Some(id) = references.keys().find(|id| !self.objects.contains_key(id)) {
            return Err(format!("{id:?}: named by a coordinate, not known"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
