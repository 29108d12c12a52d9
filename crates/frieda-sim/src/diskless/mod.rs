//! Diskless topics under a seeded simulation (issue 60, docs/diskless.md "The simulator's
//! diskless mode"): three brokers run the broker's own append path
//! ([`frieda::diskless::append::AppendTask`]) and, while one leads the coordinator partition,
//! the broker's own coordinator host ([`frieda::diskless::host::CoordinatorHost`] over
//! [`frieda::diskless::coordinator::BatchCoordinator`], its decisions encoded by
//! [`frieda::diskless::codec`]); idempotent producers send batches to any broker; a nemesis
//! SIGKILLs and pauses brokers (the coordinator's leader too), stops the object store (PUTs
//! answer 503 or stall) and drops messages. Every random draw comes from the seed, so a seed
//! replays exactly.
//!
//! What is simulated: the network (delays, losses, duplicates), the bucket (a map; PUTs that
//! land after their sender died), processes and clocks, and the coordinator partition's
//! replication, as a small model of Kafka's ISR rules (not the cluster simulator's
//! `frieda::replication` code): a leader chosen from the in-sync replicas, followers copying its
//! log and truncating what diverges when a new leader appears, the high watermark the least log
//! end of the in-sync replicas, `min.insync.replicas` 2 checked before a decision, a write not
//! replicated within [`ACKS_TIMEOUT_MS`] failing the host (which loads again). Logs are
//! fsynced per record (`flush.messages=1` on the coordinator partition): a SIGKILL keeps them.
//!
//! Invariants (each a violation kind):
//! - `coordinator-invariant`: every loaded host's state keeps the coordinator's invariants;
//! - `answers-differ`: a batch acknowledged twice (a retry) got the same offsets both times;
//! - `acked-record-lost`: after the faults heal and the producers finish, every acknowledged
//!   batch at or above its partition's log start is found at its offset, in an object the
//!   bucket holds, byte for byte;
//! - `out-of-order-sequence`: a producer that sends each batch after the one before it was
//!   acknowledged is never refused OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//! - `duplicated`: no batch is stored twice; `out-of-order`: a producer's batches are stored in
//!   sequence order;
//! - `replicas-diverged`: at the end every replica's log is the leader's, and replaying it
//!   rebuilds the leader's state;
//! - `no-progress`: after the heal every producer's batches are all acknowledged;
//! - `orphan-left`: after quiescence, the garbage collection (objects no batch names any more,
//!   deleted by the coordinator's leader) and the orphan sweep (uploads never committed: the
//!   leader lists the bucket, which misses young objects, and deletes those older than
//!   [`SWEEP_MIN_AGE_MS`] the coordinator does not know; commits of objects older than
//!   [`MAX_COMMIT_AGE_MS`] are refused) leave no object that no batch names.
//!
//! Transactions (transactions v2, as Kafka 4.x producers run them): the last
//! [`TXN_PRODUCERS`] producers send their batches in transactions of [`TXN_BATCHES`], each at
//! its own producer epoch with sequences from 0, and end each with a marker (commit, or abort
//! as [`aborts`] decides) that the coordinator's leader decides through the broker's own
//! [`CoordinatorHost::marker`], at the bumped epoch; a marker unanswered is sent again (a
//! resend of a decided one passes, KAFKA-19999). Their invariants:
//! - `marker-refused`: a marker is never refused for its epochs, nor for room except on the
//!   tight seeds (KAFKA_STORAGE_ERROR at the coordinate bound, retried there as the broker's
//!   transaction coordinator does);
//! - `hanging-transaction`: at the end every partition's last stable offset is its high
//!   watermark (every transaction closed);
//! - `aborted-list`: at the end the partition lists each aborted transaction (producer id,
//!   first offset) at or above its log start, and no committed one;
//! - `aborted-delivered` / `committed-missed` (`consumer.rs`): a `read_committed` consumer per
//!   partition, filtering with the aborted transactions its reads return as a Kafka client
//!   does, never delivers a batch of an aborted transaction and, at the end, has delivered every
//!   batch of the committed ones at or above the log start.
//!
//! Consumers read every partition through the broker's read path while all this happens; their
//! invariants are in `consumer.rs`. Compaction (`compaction.rs`) runs on the coordinator's
//! leader throughout: its objects are PUT, lost with their writer, refused as stale or too old,
//! and swept like uploads. Not here yet: snapshots.

mod check;
mod compaction;
mod consumer;
mod partition;

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use bytes::Bytes;
use frieda::diskless::append::{Action, AppendConfig, AppendTask, ProducedBatch};
use frieda::diskless::coordinator::{
    BatchAnswer, BatchCoordinator, CommitBatches, DisklessPartition, Found, ObjectId, TxnMarker,
    DEFAULT_MAX_BATCHES_PER_PARTITION,
};
use frieda::diskless::host::{CoordinatorHost, HostError, Outcome, Step};
use frieda::diskless::read::Records;
use frieda_log::{
    build_batch, encode_record, parse_records, records_section, BatchHeader, Codec, RecordRef,
};
use kafka_protocol::error::ResponseError as E;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use uuid::Uuid;

/// Brokers (ids 0..BROKERS), each a replica of the coordinator partition.
pub const BROKERS: usize = 3;
/// Diskless partitions of the one topic.
const PARTITIONS: i32 = 2;
/// Idempotent producers.
const PRODUCERS: usize = 4;
/// Batches each producer sends (a multiple of [`TXN_BATCHES`]).
const BATCHES_PER_PRODUCER: i32 = 60;

/// The coordinate bound of every fourth seed (a partition takes 120 batches and their markers).
const TIGHT_MAX_BATCHES: usize = 32;
/// The last this many producers are transactional.
const TXN_PRODUCERS: usize = 2;
/// Batches per transaction.
const TXN_BATCHES: i32 = 3;
/// The nemesis works until then (ms); then everything heals.
const FAULT_MS: i64 = 30_000;
/// The run ends by then (ms) at the latest.
const END_MS: i64 = 90_000;
/// A coordinator write not below the high watermark within this is failed (ms); shorter than
/// the session, so a paused follower still in the ISR fails writes and the host loads again.
pub const ACKS_TIMEOUT_MS: i64 = 1_200;
/// A broker (or the coordinator's leader) unheard of this long leaves the ISR / its leadership (ms).
const SESSION_MS: i64 = 1_500;
/// `min.insync.replicas` of the coordinator partition.
const MIN_INSYNC: usize = 2;
/// A producer resends a batch unanswered this long (ms; `request.timeout.ms`, shortened).
const PRODUCE_TIMEOUT_MS: i64 = 4_000;
/// A broker resends a commit unanswered this long (ms).
const COMMIT_TIMEOUT_MS: i64 = 2_000;
/// Objects no batch names are deleted this long after their mark (ms).
const DELETE_DELAY_MS: i64 = 1_000;
/// The coordinator refuses commits of objects older than this (ms;
/// `diskless.coordinator.max.commit.age.ms`, shortened).
pub const MAX_COMMIT_AGE_MS: i64 = 3_000;
/// The orphan sweep deletes unknown objects at least this old (ms): the age bound plus a
/// margin for clock skew (the simulated brokers share one clock).
pub const SWEEP_MIN_AGE_MS: i64 = 2 * MAX_COMMIT_AGE_MS;
/// The leader lists the bucket and sweeps this often (ms).
const SWEEP_EVERY_MS: i64 = 2_000;
/// After the producers finish: time for the last commits, the GC and the sweep (ms).
const SETTLE_MS: i64 = SWEEP_MIN_AGE_MS + 3 * SWEEP_EVERY_MS + 2_000;
/// Trace lines kept.
const MAX_TRACE: usize = 20_000;

/// A defect put in on purpose, to show the checks find it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// None: the broker's code as it is.
    None,
    /// The coordinator's leader tells its host that its own log end is the high watermark:
    /// commits are answered before they are replicated (`acked-record-lost` after a failover).
    AnswerBeforeReplicated,
    /// The bucket answers one PUT in 50 OK without keeping the object (`acked-record-lost`:
    /// the end check reads every acknowledged batch's bytes back from the bucket).
    PutLost,
    /// The coordinator takes commits of any age while the sweep still deletes unknown objects
    /// [`SWEEP_MIN_AGE_MS`] old: a commit that waited longer (a paused uploader) names an
    /// object already swept (`acked-record-lost`).
    NoCommitAge,
    /// FindBatches answers from the leader's speculative state, not only from decisions below
    /// the high watermark: consumers read batches a failover then takes back
    /// (`read-uncommitted`, `read-differs`, `consumer-gap`).
    ReadSpeculative,
    /// FindBatches answers no aborted transactions: `read_committed` consumers deliver aborted
    /// batches (`aborted-delivered`).
    NoAbortedList,
    /// `read_committed` reads end at the high watermark, not the last stable offset: a
    /// transaction is read before its marker tells whether it aborted (`aborted-delivered`).
    CommittedReadsToHighWatermark,
}

/// A broken invariant.
#[derive(Debug, Clone)]
pub struct DisklessViolation {
    /// When (simulated ms).
    pub time: i64,
    /// Which invariant.
    pub kind: &'static str,
    /// What was seen.
    pub detail: String,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DisklessStats {
    /// Batches acknowledged to producers (first acknowledgements).
    pub acked: u64,
    /// Acknowledgements of a batch acknowledged before (a late answer, a duplicated request).
    pub acked_again: u64,
    /// Acknowledgements answered DUPLICATE (a resent batch, answered with its original's
    /// offsets).
    pub duplicates: u64,
    /// Objects committed (records written by coordinator leaders).
    pub commits: u64,
    /// Coordinator loads (elections, restarts, failed writes).
    pub loads: u64,
    /// Writes failed (acks timeout) and loaded again.
    pub failed_writes: u64,
    /// Brokers killed.
    pub crashes: u64,
    /// Brokers paused.
    pub pauses: u64,
    /// Store outages.
    pub outages: u64,
    /// PUTs answered 503.
    pub puts_failed: u64,
    /// Objects deleted by the coordinator's garbage collection.
    pub objects_deleted: u64,
    /// DeleteRecords answered.
    pub deletes: u64,
    /// Batches consumers read (checked byte for byte).
    pub batches_read: u64,
    /// Objects the orphan sweep deleted (uploads never committed).
    pub swept: u64,
    /// Objects in the bucket no batch names at the end (`orphan-left` if any).
    pub orphans: u64,
    /// Transactions ended (first marker answers), committed and aborted.
    pub txns_committed: u64,
    /// See `txns_committed`.
    pub txns_aborted: u64,
    /// Batches `read_committed` consumers delivered (and skipped as aborted).
    pub committed_delivered: u64,
    /// See `committed_delivered`.
    pub aborted_skipped: u64,
    /// Compactions decided (runs of batches rewritten into one object of their partition).
    pub compactions: u64,
    /// Compactions whose decision the coordinator refused (the run changed, the object too old).
    pub compactions_refused: u64,
    /// Batches and markers refused KAFKA_STORAGE_ERROR and sent again: a batch at the
    /// coordinate bound or in a commit refused as too old (or its upload failed); a marker only
    /// at the bound (tight seeds).
    pub storage_refusals: u64,
}

impl DisklessStats {
    /// Adds another run's counts.
    pub fn add(&mut self, o: &DisklessStats) {
        self.acked += o.acked;
        self.duplicates += o.duplicates;
        self.acked_again += o.acked_again;
        self.commits += o.commits;
        self.loads += o.loads;
        self.failed_writes += o.failed_writes;
        self.crashes += o.crashes;
        self.pauses += o.pauses;
        self.outages += o.outages;
        self.puts_failed += o.puts_failed;
        self.objects_deleted += o.objects_deleted;
        self.deletes += o.deletes;
        self.orphans += o.orphans;
        self.swept += o.swept;
        self.batches_read += o.batches_read;
        self.txns_committed += o.txns_committed;
        self.txns_aborted += o.txns_aborted;
        self.committed_delivered += o.committed_delivered;
        self.aborted_skipped += o.aborted_skipped;
        self.compactions += o.compactions;
        self.compactions_refused += o.compactions_refused;
        self.storage_refusals += o.storage_refusals;
    }
}

/// A seed's outcome.
#[derive(Debug, Clone)]
pub struct DisklessReport {
    /// The seed.
    pub seed: u64,
    /// The first broken invariant.
    pub violation: Option<DisklessViolation>,
    /// Counts.
    pub stats: DisklessStats,
    /// The event log (with `trace`).
    pub trace: Vec<String>,
}

/// Who waits for a coordinator write: (broker, incarnation, attempt) of a commit; a producer's
/// marker as ([`BROKERS`] + producer, request, 0) (see [`marker_waiter`]).
type Waiter = (usize, u64, u64);

fn marker_waiter(producer: usize, req: u64) -> Waiter {
    (BROKERS + producer, req, 0)
}

#[derive(Debug, Clone)]
enum Msg {
    Produce {
        to: usize,
        producer: usize,
        req: u64,
        batch: ProducedBatch,
    },
    ProduceReply {
        producer: usize,
        req: u64,
        answer: BatchAnswer,
    },
    /// A transactional producer's marker (as the transaction coordinator's WriteTxnMarkers), to
    /// the coordinator's leader it knows of.
    Marker {
        to: usize,
        producer: usize,
        req: u64,
        partition: i32,
        marker: TxnMarker,
    },
    /// The marker's offset, or why not.
    MarkerReply {
        producer: usize,
        req: u64,
        result: Result<i64, E>,
    },
    Commit {
        to: usize,
        from: Waiter,
        commit: CommitBatches,
    },
    CommitReply {
        to: Waiter,
        result: Result<Vec<BatchAnswer>, E>,
    },
    Fetch {
        to: usize,
        from: usize,
        epoch: u64,
        offset: usize,
    },
    FetchReply {
        to: usize,
        epoch: u64,
        offset: usize,
        records: Vec<Vec<u8>>,
        hw: i64,
    },
    /// A consumer's Fetch of its partition at `offset`, to any broker.
    Read {
        to: usize,
        consumer: usize,
        req: u64,
        offset: i64,
    },
    /// That broker's FindBatches to the coordinator's leader of `epoch`.
    Find {
        to: usize,
        from: (usize, u64),
        epoch: u64,
        consumer: usize,
        req: u64,
        offset: i64,
    },
    /// The coordinator's answer, with the partition's log start.
    Found {
        to: (usize, u64),
        consumer: usize,
        req: u64,
        offset: i64,
        result: Result<(Found, i64), (E, i64)>,
    },
    /// The records and the aborted transactions among them (or the error) for the consumer,
    /// with the log start.
    ReadReply {
        consumer: usize,
        req: u64,
        result: Result<(Records, Vec<frieda_log::AbortedTxn>), E>,
        log_start: i64,
    },
}

impl Msg {
    fn target(&self) -> Option<usize> {
        match self {
            Msg::Produce { to, .. }
            | Msg::Marker { to, .. }
            | Msg::Fetch { to, .. }
            | Msg::FetchReply { to, .. }
            | Msg::Read { to, .. }
            | Msg::Find { to, .. } => Some(*to),
            Msg::Found { to, .. } => Some(to.0),
            Msg::Commit { to, .. } => Some(*to),
            Msg::CommitReply { to, .. } => Some(to.0),
            Msg::ProduceReply { .. } | Msg::MarkerReply { .. } | Msg::ReadReply { .. } => None,
        }
    }
}

#[derive(Debug, Clone)]
enum Event {
    Deliver(Msg),
    Tick(usize, u64),
    /// A PUT reaches the bucket (whether or not its sender still runs).
    Put {
        broker: usize,
        incarnation: u64,
        object: ObjectId,
        body: Bytes,
        ok: bool,
    },
    /// The PUT's answer reaches its sender.
    PutDone {
        broker: usize,
        incarnation: u64,
        object: ObjectId,
        stored: bool,
    },
    /// The commit of the object is sent again if that attempt is still the one in flight (its
    /// answer timed out, or it was refused with a retriable error).
    CommitResend(Waiter, ObjectId),
    ProducerSend(usize),
    ConsumerPoll(usize),
    ConsumerTimeout(usize, u64),
    ProducerTimeout(usize, u64),
    Controller,
    Fault,
    Restart(usize),
    Resume(usize),
    StoreUp,
    DeleteRecords,
    Heal,
    /// A compaction's PUT reaches the bucket (whether or not its writer still runs).
    CompactPut(Box<compaction::CompactPut>),
    /// Its answer reaches the writer: stored or not.
    CompactDone(Box<compaction::CompactPut>, bool),
}

impl Event {
    /// The broker whose process runs it (deferred while it is paused).
    fn broker(&self) -> Option<usize> {
        match self {
            Event::Deliver(m) => m.target(),
            Event::Tick(b, _) => Some(*b),
            Event::PutDone { broker, .. } => Some(*broker),
            Event::CommitResend(w, _) => Some(w.0),
            Event::CompactDone(put, _) => Some(put.broker),
            _ => None,
        }
    }
}

struct Broker {
    up: bool,
    paused_until: Option<i64>,
    /// When its current pause began (ms).
    paused_at: i64,
    incarnation: u64,
    /// The coordinator partition's replica (fsynced records).
    log: Vec<Vec<u8>>,
    /// The high watermark it last heard (as leader: computed).
    hw: i64,
    task: AppendTask,
    /// Its produce requests: task request id -> (producer, producer's request).
    produces: HashMap<u64, (usize, u64)>,
    next_request: u64,
    /// The commit in flight: (object, attempt).
    committing: Option<(ObjectId, u64)>,
    next_attempt: u64,
    /// The epoch it leads or follows.
    epoch: u64,
    host: Option<CoordinatorHost<Waiter>>,
    /// As leader: each follower's fetch offset and when it last fetched.
    fetched: BTreeMap<usize, (usize, i64)>,
    /// When each pending coordinator record was appended (acks timeout).
    appended_at: BTreeMap<i64, i64>,
    last_gc: i64,
    last_sweep: i64,
    /// When it last looked for a run to compact (as the coordinator's leader).
    last_compact: i64,
    /// The incarnation whose compaction is in flight.
    compacting: Option<u64>,
}

struct Producer {
    id: i64,
    partition: i32,
    /// Next batch index to send (0..BATCHES_PER_PRODUCER).
    next: i32,
    in_flight: Option<(u64, i32)>,
    next_req: u64,
    /// Every request it sent: request -> batch index.
    sent: HashMap<u64, i32>,
    /// Transactions whose marker was answered (transactional producers).
    decided: i32,
    /// Its marker request in flight: (request, transaction).
    marker: Option<(u64, i32)>,
    /// Every marker request it sent: request -> transaction.
    markers_sent: HashMap<u64, i32>,
}

impl Producer {
    fn transactional(&self) -> bool {
        transactional(self.id)
    }

    /// Every batch acknowledged and, if transactional, every transaction's marker answered.
    fn finished(&self) -> bool {
        self.next >= BATCHES_PER_PRODUCER
            && (!self.transactional() || self.decided * TXN_BATCHES >= self.next)
    }
}

#[derive(Debug, Clone)]
struct Ack {
    partition: i32,
    base_offset: i64,
}

/// The coordinator partition's controller view.
struct Controller {
    leader: Option<usize>,
    epoch: u64,
    isr: BTreeSet<usize>,
    /// The leader's incarnation when elected.
    leader_incarnation: u64,
}

struct Sim {
    rng: ChaCha8Rng,
    now: i64,
    seq: u64,
    queue: BinaryHeap<std::cmp::Reverse<(i64, u64, usize)>>,
    events: HashMap<usize, Event>,
    next_event: usize,
    brokers: Vec<Broker>,
    producers: Vec<Producer>,
    consumers: Vec<consumer::Consumer>,
    controller: Controller,
    store: BTreeMap<ObjectId, Bytes>,
    store_down: bool,
    lossy: bool,
    /// Acknowledged batches: (producer id, batch index) -> where.
    acks: BTreeMap<(i64, i32), Ack>,
    stats: DisklessStats,
    violation: Option<DisklessViolation>,
    trace: Option<Vec<String>>,
    topic: Uuid,
    mutation: Mutation,
    /// Compaction's draws (apart, so the other draws of a seed stay as they were).
    compaction_rng: ChaCha8Rng,
    /// `diskless.compaction.max.bytes` of this seed.
    compaction_max_bytes: u64,
    /// `diskless.coordinator.max.batches.per.partition` of this seed: the default, or (every
    /// fourth seed, [`Sim::tight`]) a tight bound with compaction's byte budget always spent,
    /// so only crowded partitions are compacted (into 8,000-byte objects, their small compacted
    /// runs merged again) and produces and markers meet the bound's KAFKA_STORAGE_ERROR.
    max_batches: usize,
}

fn partition(topic: Uuid, p: i32) -> DisklessPartition {
    DisklessPartition {
        topic_id: topic,
        partition: p,
    }
}

/// Records in batch `index` of a producer (1-3), and its first sequence number.
fn records_of(index: i32) -> i32 {
    1 + index % 3
}

fn sequence_of(index: i32) -> i32 {
    (0..index).map(records_of).sum()
}

/// Whether a coordinator write refused with `e` is tried again (the coordinator not reached,
/// loading, timed out, too few in-sync replicas); any other refusal is for good.
fn retriable(e: E) -> bool {
    matches!(
        e,
        E::NotCoordinator
            | E::CoordinatorLoadInProgress
            | E::RequestTimedOut
            | E::NotEnoughReplicas
    )
}

/// Whether producer `pid` is one of the last [`TXN_PRODUCERS`]: transactional.
fn transactional(pid: i64) -> bool {
    pid >= 1_000 + (PRODUCERS - TXN_PRODUCERS) as i64
}

/// Whether producer `pid` aborts its transaction `txn` (about one in three).
fn aborts(pid: i64, txn: i32) -> bool {
    (pid + 7 * i64::from(txn)) % 3 == 0
}

/// Batch `index`'s producer epoch and first sequence: a transactional producer's transaction
/// `index / TXN_BATCHES` runs at that epoch (transactions v2 bumps it at every marker) with
/// sequences from 0; a plain producer's batches at epoch 0, in one sequence.
fn epoch_and_sequence(pid: i64, index: i32) -> (i16, i32) {
    if transactional(pid) {
        let txn = index / TXN_BATCHES;
        let first = txn * TXN_BATCHES;
        (txn as i16, (first..index).map(records_of).sum())
    } else {
        (0, sequence_of(index))
    }
}

/// A producer's batch `index`, a real v2 batch as a client sends it (base offset 0), the same on
/// every resend: [`records_of`] records whose values name the batch, then a tail whose length
/// and letter follow from it.
fn batch_bytes(pid: i64, index: i32) -> Bytes {
    let mut records = Vec::new();
    let n = records_of(index);
    for i in 0..n {
        let mut value = format!("pid={pid} batch={index} record={i};").into_bytes();
        let len = 10 + ((pid * 31 + i64::from(index) * 17 + i64::from(i)) % 390) as usize;
        value.resize(value.len() + len, b'a' + (index % 26) as u8);
        encode_record(
            &mut records,
            &RecordRef {
                attributes: 0,
                timestamp_delta: i64::from(i),
                offset_delta: i,
                key: None,
                value: Some(&value),
                headers: &[0],
            },
        );
    }
    let (producer_epoch, base_sequence) = epoch_and_sequence(pid, index);
    let header = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        partition_leader_epoch: 0,
        magic: 2,
        crc: 0,
        // bit 4: transactional
        attributes: if transactional(pid) { 0x10 } else { 0 },
        last_offset_delta: n - 1,
        base_timestamp: 1_000 * i64::from(index),
        max_timestamp: 1_000 * i64::from(index) + i64::from(n - 1),
        producer_id: pid,
        producer_epoch,
        base_sequence,
        records_count: n,
    };
    Bytes::from(build_batch(&header, Codec::None, &records))
}

/// The bytes `len` long at byte `at` of `object` in the simulated bucket (None: not there).
fn stored_range(
    store: &BTreeMap<ObjectId, Bytes>,
    object: ObjectId,
    at: u32,
    len: u32,
) -> Option<Bytes> {
    store
        .get(&object)
        .and_then(|body| body.get(at as usize..(at + len) as usize))
        .map(Bytes::copy_from_slice)
}

/// Which producer's batch `bytes` (a whole v2 batch) is, from its first record's value.
fn parse_batch(bytes: &[u8]) -> Option<(i64, i32)> {
    let h = BatchHeader::parse(bytes).ok()?;
    let section = records_section(bytes, &h).ok()?;
    let records = parse_records(&section, h.records_count).ok()?;
    let text = std::str::from_utf8(records.first()?.value?).ok()?;
    let mut it = text.split(';').next()?.split(' ');
    let pid = it.next()?.strip_prefix("pid=")?.parse().ok()?;
    let index = it.next()?.strip_prefix("batch=")?.parse().ok()?;
    Some((pid, index))
}

impl Sim {
    fn new(seed: u64, trace: bool, mutation: Mutation) -> Sim {
        let rng = ChaCha8Rng::seed_from_u64(seed);
        let tight = seed % 4 == 3;
        let brokers = (0..BROKERS)
            .map(|b| Broker {
                up: true,
                paused_until: None,
                paused_at: 0,
                incarnation: 0,
                log: Vec::new(),
                hw: 0,
                task: AppendTask::new(AppendConfig {
                    broker_id: b as i32,
                    commit_interval_ms: 50,
                    buffer_max_bytes: 4096,
                    max_uploads: 3,
                    upload_max_attempts: 2,
                    max_buffered_bytes: 64 << 10,
                }),
                produces: HashMap::new(),
                next_request: 0,
                committing: None,
                next_attempt: 0,
                epoch: 0,
                host: None,
                fetched: BTreeMap::new(),
                appended_at: BTreeMap::new(),
                last_gc: 0,
                last_sweep: 0,
                last_compact: 0,
                compacting: None,
            })
            .collect();
        let producers = (0..PRODUCERS)
            .map(|i| Producer {
                id: 1_000 + i as i64,
                partition: (i as i32) % PARTITIONS,
                next: 0,
                in_flight: None,
                next_req: 0,
                sent: HashMap::new(),
                decided: 0,
                marker: None,
                markers_sent: HashMap::new(),
            })
            .collect();
        let mut sim = Sim {
            rng,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            events: HashMap::new(),
            next_event: 0,
            brokers,
            producers,
            // one read_uncommitted and one read_committed consumer per partition
            consumers: (0..PARTITIONS)
                .map(|p| consumer::Consumer::new(p, false))
                .chain((0..PARTITIONS).map(|p| consumer::Consumer::new(p, true)))
                .collect(),
            controller: Controller {
                leader: None,
                epoch: 0,
                isr: (0..BROKERS).collect(),
                leader_incarnation: 0,
            },
            store: BTreeMap::new(),
            store_down: false,
            lossy: false,
            acks: BTreeMap::new(),
            stats: DisklessStats::default(),
            violation: None,
            trace: trace.then(Vec::new),
            topic: Uuid::from_u128(0xd15c_1e55),
            mutation,
            compaction_rng: ChaCha8Rng::seed_from_u64(seed ^ 0xc0a1_e5ce),
            compaction_max_bytes: if tight {
                // a partition's history must fit 32 coordinates of at least half this
                8_000
            } else {
                [2_000, 8_000, 40_000][(seed % 3) as usize]
            },
            max_batches: if tight {
                TIGHT_MAX_BATCHES
            } else {
                DEFAULT_MAX_BATCHES_PER_PARTITION
            },
        };
        sim.elect();
        for b in 0..BROKERS {
            sim.schedule(10, Event::Tick(b, 0));
        }
        for p in 0..PRODUCERS {
            let d = sim.rng.gen_range(50..300);
            sim.schedule(d, Event::ProducerSend(p));
        }
        for c in 0..sim.consumers.len() {
            let d = sim.rng.gen_range(50..300);
            sim.schedule(d, Event::ConsumerPoll(c));
        }
        sim.schedule(100, Event::Controller);
        let first = sim.rng.gen_range(1_000..3_000);
        sim.schedule(first, Event::Fault);
        let d = sim.rng.gen_range(3_000..8_000);
        sim.schedule(d, Event::DeleteRecords);
        sim.schedule(FAULT_MS, Event::Heal);
        sim
    }

    /// Whether this seed runs with the tight coordinate bound ([`TIGHT_MAX_BATCHES`]) and
    /// compaction's budget always spent.
    fn tight(&self) -> bool {
        self.max_batches == TIGHT_MAX_BATCHES
    }

    /// A coordinator host, configured as every broker's, that replayed broker `b`'s log (not
    /// yet told the load ended). Errors: the record that does not decode.
    fn replay_log(&self, b: usize) -> Result<CoordinatorHost<Waiter>, String> {
        let age = if self.mutation == Mutation::NoCommitAge {
            i64::MAX / 4
        } else {
            MAX_COMMIT_AGE_MS
        };
        let mut host = CoordinatorHost::load_with(
            BatchCoordinator::new(self.max_batches).with_max_commit_age(age),
        );
        for (o, r) in self.brokers[b].log.iter().enumerate() {
            host.replay(o as i64, r)
                .map_err(|e| format!("broker {b} replays {o}: {e}"))?;
        }
        Ok(host)
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            if t.len() < MAX_TRACE {
                t.push(format!("{:>6} {}", self.now, line()));
            }
        }
    }

    fn violate(&mut self, kind: &'static str, detail: String) {
        if self.violation.is_none() {
            self.log(|| format!("VIOLATION {kind}: {detail}"));
            self.violation = Some(DisklessViolation {
                time: self.now,
                kind,
                detail,
            });
        }
    }

    fn schedule(&mut self, delay: i64, event: Event) {
        self.schedule_at(self.now + delay.max(0), event);
    }

    fn schedule_at(&mut self, at: i64, event: Event) {
        let id = self.next_event;
        self.next_event += 1;
        self.events.insert(id, event);
        self.seq += 1;
        self.queue.push(std::cmp::Reverse((at, self.seq, id)));
    }

    fn send(&mut self, msg: Msg) {
        if self.lossy && self.rng.gen_bool(0.05) {
            self.log(|| format!("lost {}", short(&msg)));
            return;
        }
        if self.lossy && self.rng.gen_bool(0.03) {
            self.log(|| format!("duplicated {}", short(&msg)));
            let d = self.rng.gen_range(1..100);
            self.schedule(d, Event::Deliver(msg.clone()));
        }
        let d = self.rng.gen_range(1..15);
        self.schedule(d, Event::Deliver(msg));
    }

    fn run(mut self) -> DisklessReport {
        if self.run_until(END_MS, true) {
            // Quiet: followers catch up, the last records commit, the garbage collection and
            // the orphan sweep run; then the end checks.
            self.run_until(self.now + SETTLE_MS, false);
        }
        if self.violation.is_none() {
            if self.producers.iter().any(|p| !p.finished()) {
                let left: Vec<(i32, i32)> =
                    self.producers.iter().map(|p| (p.next, p.decided)).collect();
                self.violate(
                    "no-progress",
                    format!("(batches, transactions ended) per producer by {END_MS} ms: {left:?}"),
                );
            } else {
                self.final_checks();
            }
        }
        DisklessReport {
            seed: 0,
            violation: self.violation,
            stats: self.stats,
            trace: self.trace.unwrap_or_default(),
        }
    }

    /// Runs events until `until` (ms) or the first violation: a down broker's are dropped, a
    /// paused one's wait for it to resume. With `until_done`, stops once the faults have healed
    /// and every producer has sent all its batches, and says so.
    fn run_until(&mut self, until: i64, until_done: bool) -> bool {
        while let Some(std::cmp::Reverse((at, _, id))) = self.queue.pop() {
            if at > until || self.violation.is_some() {
                return false;
            }
            self.now = at;
            let event = self.events.remove(&id).expect("scheduled");
            if let Some(b) = event.broker() {
                if !self.brokers[b].up {
                    continue;
                }
                if let Some(resume) = self.brokers[b].paused_until {
                    self.schedule_at(resume, event);
                    continue;
                }
            }
            self.handle(event);
            self.check_hosts();
            if until_done && self.now > FAULT_MS && self.producers.iter().all(|p| p.finished()) {
                return true;
            }
        }
        false
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Deliver(msg) => self.deliver(msg),
            Event::Tick(b, inc) => {
                if self.brokers[b].incarnation != inc {
                    return;
                }
                self.sync_role(b);
                let actions = self.brokers[b].task.tick(self.now);
                self.act(b, actions);
                self.follow(b);
                self.lead(b);
                self.schedule(20, Event::Tick(b, inc));
            }
            Event::Put {
                broker,
                incarnation,
                object,
                body,
                ok,
            } => {
                let stored = ok && !self.store_down;
                let lost = self.mutation == Mutation::PutLost && self.rng.gen_bool(0.02);
                if stored && !lost {
                    self.store.insert(object, body);
                } else {
                    self.stats.puts_failed += 1;
                }
                self.schedule(
                    0,
                    Event::PutDone {
                        broker,
                        incarnation,
                        object,
                        stored,
                    },
                );
            }
            Event::PutDone {
                broker,
                incarnation,
                object,
                stored,
            } => {
                if self.brokers[broker].incarnation == incarnation {
                    let actions = self.brokers[broker].task.uploaded(object, stored);
                    self.act(broker, actions);
                }
            }
            Event::CommitResend(w, object) => {
                let b = &self.brokers[w.0];
                if b.incarnation != w.1 || b.committing != Some((object, w.2)) {
                    return;
                }
                let actions = self.brokers[w.0].task.commit_failed(object);
                self.act(w.0, actions);
            }
            Event::ProducerSend(p) => self.producer_send(p),
            Event::ConsumerPoll(c) => self.consumer_poll(c),
            Event::ConsumerTimeout(c, req) => self.consumer_timeout(c, req),
            Event::ProducerTimeout(p, req) => {
                if self.producers[p].in_flight.map(|(r, _)| r) == Some(req) {
                    self.producers[p].in_flight = None;
                    self.log(|| format!("producer {p} request {req} timed out: resend"));
                    self.producer_send(p);
                }
                if self.producers[p].marker.map(|(r, _)| r) == Some(req) {
                    self.producers[p].marker = None;
                    self.log(|| format!("producer {p} marker request {req} timed out: resend"));
                    self.producer_send(p);
                }
            }
            Event::Controller => {
                self.controller_step();
                self.schedule(200, Event::Controller);
            }
            Event::Fault => {
                self.fault();
                let d = self.rng.gen_range(800..3_000);
                if self.now + d < FAULT_MS {
                    self.schedule(d, Event::Fault);
                }
            }
            Event::Restart(b) => {
                if self.brokers[b].up {
                    return; // the heal restarted it already
                }
                let br = &mut self.brokers[b];
                br.up = true;
                br.incarnation += 1;
                let inc = br.incarnation;
                self.log(|| format!("broker {b} restarts (incarnation {inc})"));
                self.schedule(1, Event::Tick(b, inc));
            }
            Event::Resume(b) => {
                // It learns of leader changes at its next tick; deliveries queued for it may
                // come first (a deposed leader taking commits it cannot commit).
                self.brokers[b].paused_until = None;
                self.log(|| format!("broker {b} resumes"));
            }
            Event::CompactPut(put) => self.compact_put(*put),
            Event::CompactDone(put, stored) => self.compact_done(*put, stored),
            Event::StoreUp => {
                self.store_down = false;
                self.log(|| "the store answers again".into());
            }
            Event::DeleteRecords => {
                self.delete_records();
                let d = self.rng.gen_range(3_000..8_000);
                if self.now + d < FAULT_MS {
                    self.schedule(d, Event::DeleteRecords);
                }
            }
            Event::Heal => {
                self.lossy = false;
                self.store_down = false;
                for b in 0..BROKERS {
                    if !self.brokers[b].up {
                        self.handle(Event::Restart(b));
                    }
                    if self.brokers[b].paused_until.is_some() {
                        self.handle(Event::Resume(b));
                    }
                }
                self.log(|| "healed".into());
            }
        }
    }

    fn fault(&mut self) {
        match self.rng.gen_range(0..10) {
            0..=3 => {
                // SIGKILL a broker; the coordinator's leader half of the time.
                let b = match (self.controller.leader, self.rng.gen_bool(0.5)) {
                    (Some(l), true) => l,
                    _ => self.rng.gen_range(0..BROKERS),
                };
                if !self.brokers[b].up {
                    return;
                }
                self.crash(b);
                let d = self.rng.gen_range(500..4_000);
                self.schedule(d, Event::Restart(b));
            }
            4..=5 => {
                let b = match (self.controller.leader, self.rng.gen_bool(0.5)) {
                    (Some(l), true) => l,
                    _ => self.rng.gen_range(0..BROKERS),
                };
                if !self.brokers[b].up || self.brokers[b].paused_until.is_some() {
                    return;
                }
                let d = self.rng.gen_range(300..4_000);
                self.brokers[b].paused_until = Some(self.now + d);
                self.brokers[b].paused_at = self.now;
                self.stats.pauses += 1;
                self.log(|| format!("broker {b} paused for {d} ms"));
                self.schedule(d, Event::Resume(b));
            }
            6..=7 => {
                if self.store_down {
                    return;
                }
                self.store_down = true;
                self.stats.outages += 1;
                let d = self.rng.gen_range(300..3_000);
                self.log(|| format!("the store answers 503 for {d} ms"));
                self.schedule(d, Event::StoreUp);
            }
            _ => {
                self.lossy = !self.lossy;
                let lossy = self.lossy;
                self.log(|| format!("message loss {}", if lossy { "on" } else { "off" }));
            }
        }
    }

    fn crash(&mut self, b: usize) {
        self.stats.crashes += 1;
        self.log(|| format!("broker {b} SIGKILLed"));
        let br = &mut self.brokers[b];
        br.up = false;
        br.paused_until = None;
        br.task = AppendTask::new(AppendConfig {
            broker_id: b as i32,
            commit_interval_ms: 50,
            buffer_max_bytes: 4096,
            max_uploads: 3,
            upload_max_attempts: 2,
            max_buffered_bytes: 64 << 10,
        });
        br.produces.clear();
        br.committing = None;
        br.host = None;
        br.fetched.clear();
        br.appended_at.clear();
        br.epoch = 0;
        // the log is fsynced per record: it stays; the high watermark is learnt again
    }

    fn deliver(&mut self, msg: Msg) {
        match msg {
            Msg::Produce {
                to,
                producer,
                req,
                batch,
            } => {
                let br = &mut self.brokers[to];
                let id = br.next_request;
                br.next_request += 1;
                match br.task.produce(self.now, id, vec![batch]) {
                    Ok(actions) => {
                        br.produces.insert(id, (producer, req));
                        self.act(to, actions);
                    }
                    Err(_) => self.send(Msg::ProduceReply {
                        producer,
                        req,
                        answer: BatchAnswer::Refused(E::RequestTimedOut),
                    }),
                }
            }
            Msg::ProduceReply {
                producer,
                req,
                answer,
            } => self.produce_reply(producer, req, answer),
            Msg::Marker {
                to,
                producer,
                req,
                partition: part,
                marker,
            } => {
                let writable = self.controller.isr.len() >= MIN_INSYNC;
                let now = self.now;
                let dp = partition(self.topic, part);
                let result = match self.brokers[to].host.as_mut() {
                    None => Err(E::NotCoordinator),
                    Some(_) if !writable => Err(E::NotEnoughReplicas),
                    Some(host) => host
                        .marker(now, marker_waiter(producer, req), dp, marker, true)
                        .map_err(HostError::code),
                };
                match result {
                    Ok(step) => {
                        self.stats.commits += u64::from(matches!(step, Step::Append { .. }));
                        self.append_step(to, step);
                    }
                    Err(e) => self.send(Msg::MarkerReply {
                        producer,
                        req,
                        result: Err(e),
                    }),
                }
            }
            Msg::MarkerReply {
                producer,
                req,
                result,
            } => self.marker_reply(producer, req, result),
            Msg::Commit { to, from, commit } => {
                let writable = self.controller.isr.len() >= MIN_INSYNC;
                let Some(host) = self.brokers[to].host.as_mut() else {
                    self.send(Msg::CommitReply {
                        to: from,
                        result: Err(E::NotCoordinator),
                    });
                    return;
                };
                if !writable {
                    self.send(Msg::CommitReply {
                        to: from,
                        result: Err(E::NotEnoughReplicas),
                    });
                    return;
                }
                match host.commit(self.now, from, &commit) {
                    Ok(step) => {
                        if matches!(step, Step::Append { .. }) {
                            self.stats.commits += 1;
                        }
                        self.append_step(to, step);
                    }
                    Err(e) => self.send(Msg::CommitReply {
                        to: from,
                        result: Err(HostError::code(e)),
                    }),
                }
            }
            Msg::CommitReply { to, result, .. } => {
                let br = &self.brokers[to.0];
                if br.incarnation != to.1 {
                    return;
                }
                let Some((object, attempt)) = br.committing else {
                    return;
                };
                if attempt != to.2 {
                    // an answer to an earlier attempt (maybe of an earlier object)
                    return;
                }
                match result {
                    Ok(answers) => {
                        self.brokers[to.0].committing = None;
                        let actions = self.brokers[to.0].task.committed(object, &answers);
                        self.act(to.0, actions);
                    }
                    Err(e) if retriable(e) => {
                        self.log(|| format!("broker {} commit refused {e:?}: retry", to.0));
                        let d = self.rng.gen_range(50..250);
                        self.schedule(d, Event::CommitResend(to, object));
                    }
                    Err(e) => {
                        // for good (too old): its batches are refused, their producers resend
                        self.log(|| format!("broker {} commit refused {e:?} for good", to.0));
                        self.brokers[to.0].committing = None;
                        let actions = self.brokers[to.0].task.commit_refused(object, e);
                        self.act(to.0, actions);
                    }
                }
            }
            Msg::Fetch {
                to,
                from,
                epoch,
                offset,
            } => {
                if self.brokers[to].host.is_none() || epoch != self.brokers[to].epoch {
                    return;
                }
                let log = &self.brokers[to].log;
                let offset = offset.min(log.len());
                let records: Vec<Vec<u8>> = log[offset..].iter().take(20).cloned().collect();
                let hw = self.brokers[to].hw;
                self.brokers[to].fetched.insert(from, (offset, self.now));
                self.send(Msg::FetchReply {
                    to: from,
                    epoch,
                    offset,
                    records,
                    hw,
                });
                self.lead(to);
            }
            Msg::Read {
                to,
                consumer,
                req,
                offset,
            } => self.read(to, consumer, req, offset),
            Msg::Find {
                to,
                from,
                epoch,
                consumer,
                req,
                offset,
            } => self.find(to, from, epoch, consumer, req, offset),
            Msg::Found {
                to,
                consumer,
                req,
                offset,
                result,
            } => self.found(to, consumer, req, offset, result),
            Msg::ReadReply {
                consumer,
                req,
                result,
                log_start,
            } => self.read_reply(consumer, req, result, log_start),
            Msg::FetchReply {
                to,
                epoch,
                offset,
                records,
                hw,
            } => {
                let br = &mut self.brokers[to];
                if br.epoch != epoch || br.host.is_some() || br.log.len() != offset {
                    return;
                }
                br.log.extend(records);
                br.hw = br.hw.max(hw.min(br.log.len() as i64));
            }
        }
    }

    /// Carries out a broker's append path actions.
    fn act(&mut self, b: usize, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Upload { object, body } => {
                    let slow = self.store_down && self.rng.gen_bool(0.3);
                    let d = if slow {
                        self.rng.gen_range(1_000..3_000)
                    } else {
                        self.rng.gen_range(5..60)
                    };
                    let ok = !self.store_down;
                    let incarnation = self.brokers[b].incarnation;
                    self.schedule(
                        d,
                        Event::Put {
                            broker: b,
                            incarnation,
                            object,
                            body,
                            ok,
                        },
                    );
                }
                Action::Commit(commit) => {
                    let br = &mut self.brokers[b];
                    br.next_attempt += 1;
                    let w = (b, br.incarnation, br.next_attempt);
                    br.committing = Some((commit.object, br.next_attempt));
                    let object = commit.object;
                    if let Some(l) = self.controller.leader {
                        self.send(Msg::Commit {
                            to: l,
                            from: w,
                            commit,
                        });
                    }
                    self.schedule(COMMIT_TIMEOUT_MS, Event::CommitResend(w, object));
                }
                Action::Answer { request, answers } => {
                    if let Some((producer, req)) = self.brokers[b].produces.remove(&request) {
                        let answer = answers[0];
                        self.send(Msg::ProduceReply {
                            producer,
                            req,
                            answer,
                        });
                    }
                }
            }
        }
    }

    fn producer_send(&mut self, p: usize) {
        let pr = &self.producers[p];
        if pr.in_flight.is_some() || pr.marker.is_some() {
            return;
        }
        // a transactional producer whose transaction's batches are all acknowledged ends it
        if pr.transactional() && pr.next > 0 && pr.next % TXN_BATCHES == 0 {
            let txn = pr.next / TXN_BATCHES - 1;
            if pr.decided <= txn {
                self.send_marker(p, txn);
                return;
            }
        }
        let pr = &mut self.producers[p];
        if pr.next >= BATCHES_PER_PRODUCER {
            return;
        }
        let index = pr.next;
        let req = pr.next_req;
        pr.next_req += 1;
        pr.in_flight = Some((req, index));
        pr.sent.insert(req, index);
        let (pid, part) = (pr.id, pr.partition);
        let bytes = batch_bytes(pid, index);
        let header = BatchHeader::parse(&bytes).expect("a whole batch");
        let to = self.rng.gen_range(0..BROKERS);
        self.log(|| format!("producer {p} sends batch {index} to broker {to} (request {req})"));
        self.send(Msg::Produce {
            to,
            producer: p,
            req,
            batch: ProducedBatch {
                partition: partition(self.topic, part),
                bytes,
                header,
                // not verified: transactions v2 fences a late batch by its epoch (the
                // verification tokens of transactions v1 are unit-tested in the coordinator)
                verification: None,
            },
        });
        self.schedule(PRODUCE_TIMEOUT_MS, Event::ProducerTimeout(p, req));
    }

    fn produce_reply(&mut self, p: usize, req: u64, answer: BatchAnswer) {
        let Some(&index) = self.producers[p].sent.get(&req) else {
            return;
        };
        let pid = self.producers[p].id;
        // Every acknowledgement counts, a late one of a request given up on too: all of a
        // batch's acknowledgements name the same offsets.
        if let BatchAnswer::Appended { base_offset, .. }
        | BatchAnswer::Duplicate { base_offset, .. } = answer
        {
            let partition = self.producers[p].partition;
            self.log(|| {
                format!("producer {p} batch {index} acknowledged at {base_offset} (request {req})")
            });
            match self.acks.get(&(pid, index)) {
                Some(a) if a.base_offset != base_offset => {
                    let was = a.base_offset;
                    self.violate(
                        "answers-differ",
                        format!("producer {pid} batch {index} at {was}, then at {base_offset}"),
                    );
                }
                Some(_) => self.stats.acked_again += 1,
                None => {
                    if matches!(answer, BatchAnswer::Duplicate { .. }) {
                        self.stats.duplicates += 1;
                    }
                    self.stats.acked += 1;
                    self.acks.insert(
                        (pid, index),
                        Ack {
                            partition,
                            base_offset,
                        },
                    );
                }
            }
        }
        if self.producers[p].in_flight.map(|(r, _)| r) != Some(req) {
            return;
        }
        self.producers[p].in_flight = None;
        match answer {
            BatchAnswer::Appended { .. } | BatchAnswer::Duplicate { .. } => {
                self.producers[p].next = index + 1;
                let d = self.rng.gen_range(0..60);
                self.schedule(d, Event::ProducerSend(p));
            }
            BatchAnswer::Refused(E::OutOfOrderSequenceNumber) => {
                // Every batch before this one is acknowledged, so the coordinator's producer
                // state must expect it: what Kafka Streams' exactly-once producers once got.
                let seq = sequence_of(index);
                self.violate(
                    "out-of-order-sequence",
                    format!("producer {pid} batch {index} (sequence {seq}) refused OUT_OF_ORDER_SEQUENCE_NUMBER"),
                );
            }
            BatchAnswer::Refused(e) => {
                if e == E::KafkaStorageError {
                    self.stats.storage_refusals += 1;
                }
                self.log(|| format!("producer {p} batch {index} refused {e:?}: retry"));
                let d = self.rng.gen_range(50..300);
                self.schedule(d, Event::ProducerSend(p));
            }
        }
    }

    /// Sends transaction `txn`'s marker to the coordinator's leader (transactions v2: at the
    /// bumped epoch `txn + 1`).
    fn send_marker(&mut self, p: usize, txn: i32) {
        let pr = &mut self.producers[p];
        let req = pr.next_req;
        pr.next_req += 1;
        pr.marker = Some((req, txn));
        pr.markers_sent.insert(req, txn);
        let (pid, part) = (pr.id, pr.partition);
        let marker = TxnMarker {
            producer_id: pid,
            producer_epoch: (txn + 1) as i16,
            coordinator_epoch: 0,
            commit: !aborts(pid, txn),
        };
        let verb = if marker.commit { "commits" } else { "aborts" };
        match self.controller.leader {
            Some(to) => {
                self.log(|| {
                    format!("producer {p} {verb} transaction {txn} via broker {to} (request {req})")
                });
                self.send(Msg::Marker {
                    to,
                    producer: p,
                    req,
                    partition: part,
                    marker,
                });
            }
            None => self.log(|| format!("producer {p}: no coordinator for its marker")),
        }
        self.schedule(PRODUCE_TIMEOUT_MS, Event::ProducerTimeout(p, req));
    }

    fn marker_reply(&mut self, p: usize, req: u64, result: Result<i64, E>) {
        let Some(&txn) = self.producers[p].markers_sent.get(&req) else {
            return;
        };
        let pid = self.producers[p].id;
        if self.producers[p].marker.map(|(r, _)| r) != Some(req) {
            return;
        }
        self.producers[p].marker = None;
        match result {
            Ok(offset) => {
                self.log(|| {
                    format!("producer {p} transaction {txn} ended by a marker at {offset}")
                });
                if self.producers[p].decided == txn {
                    self.producers[p].decided = txn + 1;
                    if aborts(pid, txn) {
                        self.stats.txns_aborted += 1;
                    } else {
                        self.stats.txns_committed += 1;
                    }
                }
                let d = self.rng.gen_range(0..60);
                self.schedule(d, Event::ProducerSend(p));
            }
            Err(e) if retriable(e) || (e == E::KafkaStorageError && self.tight()) => {
                // KAFKA_STORAGE_ERROR (tight seeds only): the partition is at its coordinate
                // bound; the broker's transaction coordinator retries it as every error but a
                // stale epoch (`marker_outcome`), and compaction of the crowded partition makes
                // room
                if e == E::KafkaStorageError {
                    self.stats.storage_refusals += 1;
                }
                self.log(|| {
                    format!("producer {p} marker of transaction {txn} refused {e:?}: retry")
                });
                let d = self.rng.gen_range(50..300);
                self.schedule(d, Event::ProducerSend(p));
            }
            Err(e) => self.violate(
                "marker-refused",
                format!("producer {pid} transaction {txn}: marker refused {e:?}"),
            ),
        }
    }

    /// Answers waiter `w` with error `e` (its write failed).
    pub(super) fn refuse(&mut self, w: Waiter, e: E) {
        if w.0 >= BROKERS {
            self.send(Msg::MarkerReply {
                producer: w.0 - BROKERS,
                req: w.1,
                result: Err(e),
            });
        } else {
            self.send(Msg::CommitReply {
                to: w,
                result: Err(e),
            });
        }
    }

    fn delete_records(&mut self) {
        let Some(l) = self.controller.leader else {
            return;
        };
        if !self.brokers[l].up || self.brokers[l].paused_until.is_some() {
            return;
        }
        let p = partition(self.topic, self.rng.gen_range(0..PARTITIONS));
        let Some(host) = self.brokers[l].host.as_ref() else {
            return;
        };
        let Some(start) = host.coordinator().log_start(p) else {
            return;
        };
        let Ok(found) = host.find_batches(p, start, 0) else {
            return;
        };
        let to = found.log_start + (found.high_watermark - found.log_start) / 2;
        self.log(|| format!("DeleteRecords {p:?} below {to}"));
        let now = self.now;
        let host = self.brokers[l].host.as_mut().expect("checked");
        if let Ok(step) = host.delete_records(now, (l, u64::MAX, 0), p, to) {
            self.append_step(l, step);
        }
    }
}

fn short(msg: &Msg) -> String {
    match msg {
        Msg::Produce {
            to, producer, req, ..
        } => format!("produce p{producer} r{req} -> {to}"),
        Msg::ProduceReply { producer, req, .. } => format!("produce reply p{producer} r{req}"),
        Msg::Marker {
            to, producer, req, ..
        } => format!("marker p{producer} r{req} -> {to}"),
        Msg::MarkerReply { producer, req, .. } => format!("marker reply p{producer} r{req}"),
        Msg::Commit { to, commit, .. } => format!("commit {:?} -> {to}", commit.object.0),
        Msg::CommitReply { to, .. } => format!("commit reply -> {}", to.0),
        Msg::Fetch { to, from, .. } => format!("fetch {from} -> {to}"),
        Msg::FetchReply { to, .. } => format!("fetch reply -> {to}"),
        Msg::Read {
            to, consumer, req, ..
        } => format!("read c{consumer} r{req} -> {to}"),
        Msg::Find { to, consumer, .. } => format!("find for c{consumer} -> {to}"),
        Msg::Found { to, consumer, .. } => format!("found for c{consumer} -> {}", to.0),
        Msg::ReadReply { consumer, req, .. } => format!("read reply c{consumer} r{req}"),
    }
}

/// Runs seed `seed` of the diskless simulation.
pub fn run_diskless_seed(seed: u64, trace: bool) -> DisklessReport {
    run_diskless_mutant(seed, trace, Mutation::None)
}

/// Runs seed `seed` with `mutation` put in.
pub fn run_diskless_mutant(seed: u64, trace: bool, mutation: Mutation) -> DisklessReport {
    let mut report = Sim::new(seed, trace, mutation).run();
    report.seed = seed;
    report
}
