//! Transactions (KIP-98, transactions v2 of KIP-890; issue 57): transactional producers write
//! to partition 0 through the broker's own transaction coordinator decisions
//! ([`frieda::coordinator::transaction::steps`]) and the broker's own producer state
//! ([`frieda_log::ProducerStateManager`]), with the coordinator's state in one more partition
//! of the topic (`__transaction_state` here: the coordinator is its leader, the coordinator
//! epoch its leader epoch; its leaders are killed as the offsets partition's are).
//!
//! What is the broker's code and what is simulated:
//! - the coordinator's state per transactional id is the broker's `TxnMetadata`; InitProducerId,
//!   AddPartitionsToTxn, EndTxn, the marker sending, the completion, the timeout abort and the
//!   load's resumption decide with `steps::{plan_init, plan_add_partitions, prepare_end_v2,
//!   markers_after_prepare, marker_outcome, complete_again, fence_if_timed_out,
//!   resume_markers}`, replay with `partition::replayed` and apply a write's outcome with
//!   `partition::land`, as `TransactionCoordinators` and `TxnPartition` do;
//! - writes go to the transaction state partition through the same path as the group
//!   coordinator's
//!   (`check_append`, acks=all, 5 s), mapped with `partition::map_error`; a coordinator loads
//!   (replays its log to the log end offset, as the broker's `TxnPartition::load`) whenever it
//!   becomes the partition's leader or its leader epoch changes;
//! - the leader of partition 0 checks transactional batches and markers with the broker's
//!   `ProducerStateManager` (`check`, `record`, `check_marker`, `record_marker`), rebuilt from
//!   its log when it becomes the leader;
//! - KIP-890: a batch that would open a transaction on partition 0 waits until the
//!   coordinator confirms the partition is in the producer's transaction (part 1: client
//!   `tx-0` added it itself, the leader asks AddPartitionsToTxn `verify_only`, answered with
//!   the broker's `steps::verify_partitions`) or added it (part 2, Produce v12+, as Kafka 4's
//!   Java clients: client `tx-1` never adds partition 0, the leader asks for the add, answered
//!   with `steps::plan_add_partitions` and an acks=all write), 10 s timeout; the round is the
//!   produce handler's own `txn_verify::VerifyRound` (admission, the producer state's
//!   verification token from `begin_verification`, which a marker voids, CONCURRENT_TRANSACTIONS
//!   while the previous transaction's markers are written asked again for 100 ms, errors
//!   mapped to Kafka's produce errors);
//! - the request pipeline: a client's produces travel on a connection that the leader reads in
//!   order, once, and decide their appends in that order through the broker's
//!   `produce_order::book::OrderBook` (issue 57, defect 3), while their verifications and
//!   replication waits overlap;
//! - an idempotent producer's batches take the same path without the verification (the
//!   producer state's `check` as `ProducerCheck::PLAIN`); a batch refused before its append is
//!   noted (`note_refused`), and a duplicate is answered with its original's offset once the
//!   original is acknowledged (the produce handler's wait for the replicas).
//!
//! An idempotent client (`idem-0`) sends rounds of one to three batches the same way, its
//! sequences running on across rounds; after five sends of a round, or an error it cannot
//! retry, it bumps its epoch and starts its sequences at 0 again (KIP-360).
//!
//! Two clients each run transactions until 10 s before the end: InitProducerId, add partition
//! 0 (`tx-0`; `tx-1` leaves it to the leader), one to three `acks=all` batches sent at once on a new connection (pipelined, sequence
//! numbers per epoch; on retriable errors, OUT_OF_ORDER_SEQUENCE_NUMBER behind a failed batch
//! included, or after 3 s without every answer, the unacknowledged ones are sent again on a new
//! connection, at most five times), then EndTxn: commit (80%, if every batch was answered OK)
//! or abort. Other requests without an answer are sent again after 3 s; fenced producers
//! initialise again. The coordinator aborts transactions older than their 6-s timeout.
//!
//! Invariants:
//! - `txn-decided-twice`: no transaction (producer id and the epoch of its data) gets both a
//!   PrepareCommit and a PrepareAbort written and answered (acks=all) by its coordinators;
//! - `txn-end-answered-wrong`: an EndTxn answered OK agrees with the written decision;
//! - `txn-marker-contradicts-decision`: every marker partition 0's leader appends closes a
//!   transaction whose written decision it carries (a marker without one: a coordinator acted
//!   on state that was never written with acks=all);
//! - `txn-produce-out-of-order`: no batch is refused OUT_OF_ORDER_SEQUENCE_NUMBER by a leader
//!   that appended the batch before it in sequence, sent before it on the same connection, in
//!   the same leader epoch (Kafka, one request of a connection at a time, would have taken it);
//! - `producer-batch-duplicated`: no batch (producer id, epoch, base sequence) is twice in
//!   partition 0's final leader's log below its high watermark;
//! - `producer-ack-lost`: every produce a client got answered OK is in that log at the offset
//!   the answer gave (unless a power loss without fsync voided it);
//! - `liveness-txn-hanging`: after the run settles, no transactional batch of partition 0's
//!   final leader lacks its marker (the last stable offset is not stuck), and every marker
//!   there agrees with the decision; a transaction whose first batch was acknowledged in the
//!   quiet last 10 s (a begun one that retried its way into them), or whose marker the leader
//!   appended above its high watermark (awaiting replication), is still in progress.

use std::collections::BTreeMap;

use frieda::broker::txn_verify::{
    VerifyRound, VerifyStep, ABORTABLE_VERSION, TXN_V2_VERSION, VERIFY_TIMEOUT,
};
use frieda::coordinator::transaction::metadata::NO_PRODUCER_ID;
use frieda::coordinator::transaction::partition::{land, map_error, replayed};
use frieda::coordinator::transaction::steps::{self, EndStep, InitStep, MarkerOutcome};
use frieda::coordinator::transaction::{TxnMetadata, TxnState, TxnTransit, TxnVersion};
use frieda::handlers::produce_order::book::{OrderBook, PartitionKey, Ticket};
use frieda::replication::LogView;
use frieda::replication::Replication;
use frieda::storage::leader_append::{decide, Decision, LeaderLog, ProducerCheck};
use frieda_log::{
    BatchHeader, ControlType, EndTxnMarker, ProducerError, ProducerStateManager, SequenceCheck,
};
use kafka_protocol::error::ResponseError as E;
use rand::Rng;

use crate::net::{Msg, Node};
use crate::plan::Time;
use crate::world::{Appending, Event, Timer, World, TOPIC};

/// Transactional clients of a run (`tx-0`, `tx-1`, ...).
pub(crate) const CLIENTS: u8 = 2;
/// Idempotent (not transactional) clients of a run beside them (`idem-0`, ...), writing
/// partition 0 through the same connections and produce order.
pub(crate) const IDEMPOTENT_CLIENTS: u8 = 1;
/// Sends of one round of batches a client makes before it gives the round up: a
/// transactional client aborts its transaction, an idempotent one bumps its epoch (sequences
/// from 0 again; KIP-360's bump of an idempotent producer).
const MAX_SENDS: u8 = 5;
/// The partition the transactions write.
const DATA_PARTITION: i32 = 0;
/// `transaction.timeout.ms` of the clients.
const TXN_TIMEOUT_MS: i32 = 6_000;
/// How often a coordinator looks for timed-out transactions.
pub(crate) const ABORT_CHECK_MS: Time = 1_000;
/// A client request without an answer is sent again after this, ms.
const CLIENT_TIMEOUT_MS: Time = 3_000;
/// A client's backoff after a retriable error, ms.
const CLIENT_BACKOFF_MS: Time = 100;
/// Clients start no transaction this close to the end, ms.
const QUIET_BEFORE_END_MS: Time = 10_000;
/// How long a coordinator write waits for the in-sync replicas (`TxnPartition`'s 5 s).
const WRITE_TIMEOUT_MS: Time = 5_000;
/// The marker sender's first and longest backoff, ms (`send_markers`).
const MARKER_BACKOFF_MS: (Time, Time) = (50, 1_000);
/// A marker request without an answer is sent again after this, ms.
const MARKER_TIMEOUT_MS: Time = 2_000;
/// How long a leader waits for a verification's answer (`txn_verify::VERIFY_TIMEOUT`), ms.
const VERIFY_TIMEOUT_MS: Time = VERIFY_TIMEOUT.as_millis() as Time;
/// Client connections a broker keeps the read state of (older ones are closed: their
/// clients moved on to newer connections).
const MAX_CONNS: usize = 64;

/// Partition 0 as the produce order names it.
fn order_key() -> PartitionKey {
    (TOPIC.to_string(), DATA_PARTITION)
}

/// What a coordinator write does once it landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Answer client request `req` with the transition's producer id and epoch.
    Reply(u64),
    /// Answer partition 0's leader `leader`, which added the partition for a Produce v12+
    /// (KIP-890 part 2), on its request `req`.
    Added { leader: i32, req: u64 },
    /// A PrepareCommit/PrepareAbort: send the markers, answer `reply` if a client asked.
    Prepare { reply: Option<u64>, commit: bool },
    /// The completion after the markers.
    Complete,
}

/// A coordinator write: its record, and what the writer does after it.
#[derive(Debug, Clone)]
pub(crate) struct TxnWrite {
    tid: String,
    t: TxnTransit,
    then: Then,
}

/// A transactional batch or marker of partition 0, by batch id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnBatch {
    /// Data: producer id, epoch, base sequence, records; transactional, or of an idempotent
    /// producer.
    Data {
        pid: i64,
        epoch: i16,
        seq: i32,
        count: i64,
        transactional: bool,
    },
    /// A marker: producer id, its (bumped) epoch, commit, coordinator epoch.
    Marker {
        pid: i64,
        epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
    },
}

impl TxnBatch {
    fn header(&self) -> BatchHeader {
        let (pid, epoch, seq, count, attributes) = match *self {
            TxnBatch::Data {
                pid,
                epoch,
                seq,
                count,
                transactional,
            } => (
                pid,
                epoch,
                seq,
                count,
                if transactional {
                    frieda_log::TRANSACTIONAL_BIT
                } else {
                    0
                },
            ),
            TxnBatch::Marker { pid, epoch, .. } => (
                pid,
                epoch,
                -1,
                1,
                frieda_log::TRANSACTIONAL_BIT | frieda_log::CONTROL_BIT,
            ),
        };
        BatchHeader {
            base_offset: 0,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes,
            last_offset_delta: (count - 1) as i32,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: count as i32,
        }
    }
}

/// What a leader's append of a transactional batch answers once acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The client's produce.
    Produce,
    /// The coordinator broker's WriteTxnMarkers.
    Marker { coordinator: i32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Init,
    Add,
    Produce,
    End { commit: bool },
    Done,
}

/// A transactional producer, or an idempotent one (`idempotent`: no transactions, its
/// sequences run on across rounds of batches).
#[derive(Debug, Clone)]
pub(crate) struct Client {
    tid: String,
    idempotent: bool,
    /// Transactions v2 as the Java clients of Kafka 4 run it (Produce v12+, KIP-890 part 2):
    /// the client never adds partition 0, the leader adds it when the first batch of a
    /// transaction arrives (retrying CONCURRENT_TRANSACTIONS as `txn_verify::add_retry` says).
    /// Else the client adds it itself (AddPartitionsToTxn) and the leader verifies (part 1).
    adds_by_produce: bool,
    /// An idempotent producer's next base sequence in its epoch.
    next_seq: i32,
    pid: i64,
    epoch: i16,
    phase: Phase,
    /// The request in flight (0: none).
    req: u64,
    /// Bumped at every send: a timeout event of an older send is stale.
    attempt: u32,
    /// Batches of the open transaction, planned once partition 0 was added: (base sequence,
    /// records).
    batches: Vec<(i32, i64)>,
    /// Batches a new transaction will have.
    planned: u8,
    /// Per planned batch, the request of its latest send and its answer (`None`: none yet).
    sent: Vec<(u64, Option<Result<(), E>>)>,
    retries: u8,
    failed: bool,
}

/// A transactional client's connection as broker `id`'s read loop sees it (`TxnProduce`).
#[derive(Debug, Default)]
pub(crate) struct ProduceConn {
    /// The next frame the read loop takes.
    next_frame: u64,
    /// Frames that arrived before an earlier one (the simulated network reorders; TCP hands
    /// a connection's bytes over in order, so the read loop waits for the missing frame).
    ahead: BTreeMap<u64, (u64, TxnBatch, bool)>,
    /// The connection's produce order: the broker's own rule
    /// (`frieda::handlers::produce_order::book`).
    book: OrderBook,
    /// Produces registered whose turn to decide has not come.
    waiting: Vec<ConnProduce>,
    /// The client's `transactional.id` (its Produce requests name it).
    tid: String,
}

/// A transactional Produce a broker's read loop took from a connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnProduce {
    /// The connection.
    conn: u64,
    /// Its place in the connection's produce order (the frame it came in).
    ticket: Ticket,
    /// The request (also the batch id).
    req: u64,
    batch: TxnBatch,
    /// Produce v12+: the leader adds partition 0 to the transaction (else verifies it).
    adds: bool,
}

/// A produce waiting for the transaction coordinator's verification (KIP-890 part 1) or add
/// (part 2).
#[derive(Debug, Clone)]
pub(crate) struct Verifying {
    p: ConnProduce,
    /// The broker's KIP-890 round for the produce (one partition: `()`).
    round: VerifyRound<()>,
    /// The producer check the append must carry (the verification token it was last given).
    check: ProducerCheck,
    /// When the leader first asked (the retries of an add stop [`ADD_RETRY_MAX`] after it).
    ///
    /// [`ADD_RETRY_MAX`]: frieda::broker::txn_verify::ADD_RETRY_MAX
    started: Time,
}

/// A producer-state check of a transactional batch on one connection, for
/// `txn-produce-out-of-order`.
#[derive(Debug, Clone, Copy)]
struct Checked {
    frame: u64,
    seq: i32,
    count: i64,
    leader_epoch: i32,
    /// Appended or a duplicate (OK), or refused OUT_OF_ORDER_SEQUENCE_NUMBER (false).
    ok: bool,
}

/// A coordinator's marker sending for one transactional id.
#[derive(Debug, Clone)]
pub(crate) struct Sending {
    pid: i64,
    epoch: i16,
    commit: bool,
    complete: TxnTransit,
    backoff: Time,
    /// The marker request in flight (0: none).
    req: u64,
    attempt: u32,
}

/// The transaction coordinator a broker runs while it leads the transaction state partition.
#[derive(Debug, Clone)]
pub(crate) struct SimTxnCoordinator {
    load: u64,
    coordinator_epoch: i32,
    /// The log end offset the load replayed to (`TxnPartition::is_committed`).
    loaded_end: i64,
    /// The high watermark reached `loaded_end`: it serves.
    committed: bool,
    txns: BTreeMap<String, TxnMetadata>,
    /// The write each loaded transaction's state was replayed from (batch id), so that a
    /// decision recovered by the load is voided with the writes it came from (seed 36747).
    loaded_from: BTreeMap<String, u64>,
    sending: BTreeMap<String, Sending>,
}

/// A written and answered decision of one transaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Written {
    commit: bool,
    /// Every write that carried it (the prepare, the completion, a load that replayed them).
    by: Vec<u64>,
}

/// The transactions of a run.
#[derive(Debug, Default)]
pub(crate) struct Txns {
    /// Coordinator writes by batch id (the transaction state partition's records).
    pub(crate) writes: BTreeMap<u64, TxnWrite>,
    /// Partition 0's transactional batches and markers by batch id.
    pub(crate) batches: BTreeMap<u64, TxnBatch>,
    /// Written and answered decisions: (producer id, data epoch) -> the decision and the
    /// writes that carried it.
    decided: BTreeMap<(i64, i16), Written>,
    /// Decisions a power loss voided, by transaction: the coordinator's log lost them (and
    /// may reuse the epoch), but markers written from them stay where they were replicated.
    voided: BTreeMap<(i64, i16), Vec<bool>>,
    /// The write that opened each transaction (its first Ongoing, answered OK).
    opened: BTreeMap<(i64, i16), u64>,
    /// The transaction (producer id, data epoch) each marker closed where it was appended.
    closes: BTreeMap<u64, (i64, i16)>,
    /// Markers acknowledged (replicated) on partition 0: (producer id, data epoch) -> (commit,
    /// the marker).
    marked: BTreeMap<(i64, i16), (bool, u64)>,
    clients: Vec<Client>,
    /// Producer-state checks by (broker, its run, connection, producer id, epoch): what
    /// `txn-produce-out-of-order` compares.
    checks: BTreeMap<(i32, u32, u64, i64, i16), Vec<Checked>>,
    /// KIP-890 verifications and adds asked of a coordinator (retries included), adds asked
    /// again after CONCURRENT_TRANSACTIONS, and produces decided in a connection's order after
    /// waiting for an earlier one.
    pub(crate) verifications: u64,
    pub(crate) add_retries: u64,
    pub(crate) waited_turns: u64,
    /// Duplicates are answered at once ([`World::answer_duplicates_at_once`]).
    pub(crate) duplicates_at_once: bool,
    /// The leader appends Produce v12+ batches without the add ([`World::without_leader_add`]).
    pub(crate) leader_add_off: bool,
    /// The produce-order rule is off ([`World::without_produce_order`]).
    pub(crate) produce_order_off: bool,
    next_pid: i64,
    loads: u64,
    /// Transactions committed and aborted (decisions written).
    pub(crate) commits: u64,
    pub(crate) aborts: u64,
    /// Rounds of batches idempotent clients got answered OK, and their epoch bumps.
    pub(crate) idempotent_rounds: u64,
    pub(crate) idempotent_bumps: u64,
    /// Produces the clients got answered OK, for `producer-ack-lost`.
    answered: Vec<Answered>,
    /// Produces answered as duplicates: request -> the original batch's id.
    dup_of: BTreeMap<u64, u64>,
}

impl Txns {
    /// How many written decisions a power loss voided (`Stats::txn_decisions_voided`).
    pub(crate) fn voided_decisions(&self) -> u64 {
        self.voided.values().map(|v| v.len() as u64).sum()
    }
}

/// A produce a client got answered OK: its batch and the offset the answer gave.
#[derive(Debug, Clone, Copy)]
struct Answered {
    client: u8,
    pid: i64,
    epoch: i16,
    seq: i32,
    base: i64,
    /// The batch in the log (the request's own, or the original a duplicate was answered with).
    batch: u64,
}

impl World {
    pub(crate) fn txn_run(&self) -> bool {
        self.plan.shape.txn_partition.is_some()
    }

    /// The clients start (at the run's start).
    pub(crate) fn txn_start(&mut self) {
        if !self.txn_run() {
            return;
        }
        for c in 0..CLIENTS + IDEMPOTENT_CLIENTS {
            let idempotent = c >= CLIENTS;
            self.txns.clients.push(Client {
                tid: if idempotent {
                    format!("idem-{}", c - CLIENTS)
                } else {
                    format!("tx-{c}")
                },
                idempotent,
                adds_by_produce: !idempotent && c % 2 == 1,
                next_seq: 0,
                pid: -1,
                epoch: -1,
                phase: Phase::Init,
                req: 0,
                attempt: 0,
                batches: Vec::new(),
                planned: 0,
                sent: Vec::new(),
                retries: 0,
                failed: false,
            });
            let at = self.rng.gen_range(2_000..3_000);
            self.after(
                at,
                Event::TxnClient {
                    client: c,
                    attempt: 0,
                },
            );
        }
        self.txns.next_pid = 1_000_000;
    }

    // ------------------------------------------------------------------ clients

    /// Client `c`'s timer: (re)sends what its phase needs, unless a newer send superseded it.
    pub(crate) fn txn_client_timer(&mut self, c: u8, attempt: u32) {
        if self.txns.clients[c as usize].attempt != attempt {
            return;
        }
        self.txn_client_send(c);
    }

    fn txn_client_send(&mut self, c: u8) {
        let op = self.plan.shape.txn_partition.expect("a txn run");
        let pid = self.txns.next_pid;
        let cl = &mut self.txns.clients[c as usize];
        if cl.idempotent && cl.phase == Phase::Init {
            // InitProducerId without a transactional id: any broker hands out an id of its
            // block, epoch 0 (not simulated: the client has a fresh id at once).
            cl.pid = pid;
            cl.epoch = 0;
            cl.next_seq = 0;
            self.txns.next_pid += 1;
            return self.txn_client_begin(c);
        }
        let req = self.next_request_id();
        let cl = &mut self.txns.clients[c as usize];
        cl.req = req;
        cl.attempt += 1;
        let attempt = cl.attempt;
        let (tid, pid, epoch) = (cl.tid.clone(), cl.pid, cl.epoch);
        let (to, msg) = match cl.phase {
            Phase::Done => return,
            Phase::Init => (op, Msg::TxnInit { req, tid }),
            Phase::Add => (
                op,
                Msg::TxnAdd {
                    req,
                    tid,
                    pid,
                    epoch,
                },
            ),
            Phase::Produce => return self.txn_client_produce(c, req),
            Phase::End { commit } => (
                op,
                Msg::TxnEnd {
                    req,
                    tid,
                    pid,
                    epoch,
                    commit,
                },
            ),
        };
        let broker = self.client_target(to, false);
        self.send(Node::Client, Node::Broker(broker), msg);
        self.after(CLIENT_TIMEOUT_MS, Event::TxnClient { client: c, attempt });
    }

    /// Client `c` sends the batches of its transaction not yet answered OK, pipelined, in
    /// sequence order, on a new connection to partition 0's leader (as a producer with up to
    /// five requests in flight: Kafka Streams' exactly-once producers do); request `first`
    /// names the connection. A send after the first counts as a retry: after five the
    /// transaction is aborted.
    fn txn_client_produce(&mut self, c: u8, first: u64) {
        let cl = &mut self.txns.clients[c as usize];
        if cl.sent.iter().any(|(r, _)| *r != 0) {
            cl.retries += 1;
            if cl.retries >= MAX_SENDS && cl.idempotent {
                return self.idempotent_bump(c);
            }
            if cl.retries >= MAX_SENDS {
                cl.failed = true;
                self.txn_client_next(c, Phase::End { commit: false }, 0);
                return;
            }
        }
        let (tid, pid, epoch, transactional) = (cl.tid.clone(), cl.pid, cl.epoch, !cl.idempotent);
        let adds = cl.adds_by_produce;
        let todo: Vec<usize> = (0..cl.batches.len())
            .filter(|&i| !matches!(cl.sent[i].1, Some(Ok(()))))
            .collect();
        let leader = self.client_target(DATA_PARTITION, false);
        for (frame, &i) in todo.iter().enumerate() {
            let req = if frame == 0 {
                first
            } else {
                self.next_request_id()
            };
            let cl = &mut self.txns.clients[c as usize];
            cl.sent[i] = (req, None);
            let (seq, count) = cl.batches[i];
            self.send(
                Node::Client,
                Node::Broker(leader),
                Msg::TxnProduce {
                    req,
                    tid: tid.clone(),
                    conn: first,
                    frame: frame as u64,
                    pid,
                    epoch,
                    seq,
                    count,
                    transactional,
                    adds,
                },
            );
        }
        let attempt = self.txns.clients[c as usize].attempt;
        self.after(CLIENT_TIMEOUT_MS, Event::TxnClient { client: c, attempt });
    }

    /// Client `c` goes to `phase` and sends after `delay` ms.
    fn txn_client_next(&mut self, c: u8, phase: Phase, delay: Time) {
        let cl = &mut self.txns.clients[c as usize];
        cl.phase = phase;
        cl.req = 0;
        cl.attempt += 1;
        let attempt = cl.attempt;
        self.after(delay, Event::TxnClient { client: c, attempt });
    }

    /// Starts the next transaction of client `c` (or stops, near the end).
    fn txn_client_begin(&mut self, c: u8) {
        if self.now + QUIET_BEFORE_END_MS >= self.plan.shape.end {
            self.txn_client_next(c, Phase::Done, 0);
            return;
        }
        let batches = self.rng.gen_range(1..=3);
        let cl = &mut self.txns.clients[c as usize];
        cl.planned = batches;
        cl.batches.clear();
        cl.sent.clear();
        cl.failed = false;
        cl.retries = 0;
        let think = self.rng.gen_range(0..400);
        if cl.idempotent {
            let first = cl.next_seq;
            self.txn_plan_batches(c, first);
            self.txn_client_next(c, Phase::Produce, think);
        } else if cl.adds_by_produce {
            self.txn_plan_batches(c, 0);
            self.txn_client_next(c, Phase::Produce, think);
        } else {
            self.txn_client_next(c, Phase::Add, think);
        }
    }

    /// Client `c`'s batches of the round (its `planned` count, 1-5 records each), with
    /// sequences from `first`.
    fn txn_plan_batches(&mut self, c: u8, first: i32) {
        let planned = self.txns.clients[c as usize].planned;
        let mut batches = Vec::new();
        let mut seq = first;
        for _ in 0..planned {
            let count = self.rng.gen_range(1..=5);
            batches.push((seq, count));
            seq += count as i32;
        }
        let cl = &mut self.txns.clients[c as usize];
        cl.sent = vec![(0, None); batches.len()];
        cl.batches = batches;
    }

    /// Idempotent client `c` gives its round up (retries exhausted, or an error it cannot
    /// retry) and bumps its epoch: sequences start at 0 again, and the round's records whose
    /// answers it lacks are in the log or not (at most once, never twice).
    fn idempotent_bump(&mut self, c: u8) {
        let cl = &mut self.txns.clients[c as usize];
        cl.epoch += 1;
        cl.next_seq = 0;
        let (tid, epoch, sent) = (cl.tid.clone(), cl.epoch, cl.sent.clone());
        self.log(|| {
            format!("client {tid}: gives its round up ({sent:?}), bumps its epoch to {epoch}")
        });
        self.txns.idempotent_bumps += 1;
        self.txn_client_begin(c);
    }

    /// An answer reaches a client.
    pub(crate) fn txn_client_reply(&mut self, req: u64, result: Result<(i64, i16), E>) {
        let Some(c) = self.txns.clients.iter().position(|cl| {
            req != 0
                && if cl.phase == Phase::Produce {
                    cl.sent.iter().any(|(r, a)| *r == req && a.is_none())
                } else {
                    cl.req == req
                }
        }) else {
            return;
        };
        let c = c as u8;
        let cl = self.txns.clients[c as usize].clone();
        self.log(|| format!("client {}: {:?} answered {result:?}", cl.tid, cl.phase));
        let fenced = matches!(
            result,
            Err(E::ProducerFenced | E::InvalidProducerIdMapping | E::InvalidProducerEpoch)
        );
        match (cl.phase, result) {
            (Phase::Done, _) => {}
            (Phase::Init, Ok((pid, epoch))) => {
                let cl = &mut self.txns.clients[c as usize];
                cl.pid = pid;
                cl.epoch = epoch;
                self.txn_client_begin(c);
            }
            (Phase::Add, Ok(_)) => {
                self.txn_plan_batches(c, 0);
                self.txn_client_next(c, Phase::Produce, 0);
            }
            (Phase::Produce, result) if !fenced => {
                let commit = self.rng.gen_bool(0.8);
                let batch = self.txns.dup_of.get(&req).copied().unwrap_or(req);
                let cl = &mut self.txns.clients[c as usize];
                if let Some(i) = cl.sent.iter().position(|(r, _)| *r == req) {
                    cl.sent[i].1 = Some(result.map(|_| ()));
                    if let Ok((base, _)) = result {
                        let a = Answered {
                            client: c,
                            pid: cl.pid,
                            epoch: cl.epoch,
                            seq: cl.batches[i].0,
                            base,
                            batch,
                        };
                        self.txns.answered.push(a);
                    }
                }
                let cl = &mut self.txns.clients[c as usize];
                if cl.sent.iter().any(|(_, a)| a.is_none()) {
                    return; // the round's other answers first
                }
                let errors: Vec<E> = cl
                    .sent
                    .iter()
                    .filter_map(|(_, a)| a.and_then(|a| a.err()))
                    .collect();
                if errors.is_empty() && cl.idempotent {
                    let &(seq, count) = cl.batches.last().expect("a round has batches");
                    cl.next_seq = seq + count as i32;
                    self.txns.idempotent_rounds += 1;
                    self.txn_client_begin(c);
                    return;
                }
                if errors.is_empty() {
                    let commit = commit && !cl.failed;
                    self.txn_client_next(c, Phase::End { commit }, 0);
                    return;
                }
                // Retriable, also OUT_OF_ORDER_SEQUENCE_NUMBER behind an earlier batch of the
                // round that failed (the producer resends from the first unacknowledged one).
                let retriable = errors.iter().all(|e| {
                    matches!(
                        e,
                        E::NotLeaderOrFollower
                            | E::NotEnoughReplicas
                            | E::NotEnoughReplicasAfterAppend
                            | E::RequestTimedOut
                            | E::KafkaStorageError
                            | E::ConcurrentTransactions
                            | E::OutOfOrderSequenceNumber
                    )
                });
                if retriable {
                    self.txn_client_next(c, Phase::Produce, CLIENT_BACKOFF_MS);
                } else if cl.idempotent {
                    self.idempotent_bump(c);
                } else {
                    cl.failed = true;
                    self.txn_client_next(c, Phase::End { commit: false }, 0);
                }
            }
            (Phase::End { commit }, Ok((pid, epoch))) => {
                let decided = self.txns.decided.get(&(cl.pid, cl.epoch)).cloned();
                let voided = decided.as_ref().is_some_and(|d| self.txn_lost(d));
                if decided.as_ref().map(|d| d.commit) != Some(commit) && !voided {
                    self.violate(
                        "txn-end-answered-wrong",
                        format!("client {}'s EndTxn (commit: {commit}) of producer {} epoch {} was answered OK, but the written decision is {decided:?}", cl.tid, cl.pid, cl.epoch),
                    );
                    return;
                }
                let cl = &mut self.txns.clients[c as usize];
                cl.pid = pid;
                cl.epoch = epoch;
                self.txn_client_begin(c);
            }
            (_, Err(_))
                if fenced
                    || matches!(cl.phase, Phase::End { .. })
                        && matches!(result, Err(E::InvalidTxnState)) =>
            {
                self.txn_client_next(c, Phase::Init, CLIENT_BACKOFF_MS);
            }
            (phase, _) => self.txn_client_next(c, phase, CLIENT_BACKOFF_MS),
        }
    }

    fn txn_reply(&mut self, id: i32, req: u64, result: Result<(i64, i16), E>) {
        self.send(
            Node::Broker(id),
            Node::Client,
            Msg::TxnReply { req, result },
        );
    }

    // ------------------------------------------------------------------ coordinator

    /// The reconciler gave broker `id` the transaction state partition's role: (re)load the transaction
    /// coordinator when it leads (in a new leader epoch), unload it otherwise.
    pub(crate) fn txn_role(&mut self, id: i32, leads: bool) {
        if !self.txn_run() {
            return;
        }
        let op = self.plan.shape.txn_partition.expect("a txn run");
        if !leads {
            if self.bm(id).txn.take().is_some() {
                self.log(|| format!("broker {id}: unloads the transaction coordinator"));
            }
            return;
        }
        let epoch = self.b(id).replicas[&op].repl.leader_epoch();
        if self
            .b(id)
            .txn
            .as_ref()
            .is_some_and(|c| c.coordinator_epoch == epoch)
        {
            return;
        }
        let mut txns: BTreeMap<String, TxnMetadata> = BTreeMap::new();
        let mut loaded_from = BTreeMap::new();
        let loaded_end = self.b(id).disks[&op].log.leo();
        for b in self.b(id).disks[&op].log.batches() {
            if let Some(w) = self.txns.writes.get(&b.id) {
                match replayed(&w.tid, Some(&w.t)) {
                    Some(m) => {
                        txns.insert(w.tid.clone(), m);
                        loaded_from.insert(w.tid.clone(), b.id);
                    }
                    None => {
                        txns.remove(&w.tid);
                        loaded_from.remove(&w.tid);
                    }
                };
            }
        }
        self.txns.loads += 1;
        let load = self.txns.loads;
        let now = self.now as i64;
        let mut sending = BTreeMap::new();
        for (tid, m) in txns.iter_mut() {
            if let Some((marker, complete)) = steps::resume_markers(m, epoch, now) {
                sending.insert(
                    tid.clone(),
                    Sending {
                        pid: marker.producer_id,
                        epoch: marker.producer_epoch,
                        commit: marker.commit,
                        complete,
                        backoff: MARKER_BACKOFF_MS.0,
                        req: 0,
                        attempt: 0,
                    },
                );
            }
        }
        let n = txns.len();
        let resumed: Vec<String> = sending.keys().cloned().collect();
        self.bm(id).txn = Some(SimTxnCoordinator {
            load,
            coordinator_epoch: epoch,
            loaded_end,
            committed: false,
            txns,
            loaded_from,
            sending,
        });
        self.log(|| format!("broker {id}: loads the transaction coordinator in epoch {epoch} ({n} ids, markers resumed for {resumed:?})"));
        for tid in resumed {
            self.txn_send_markers(id, &tid);
        }
    }

    /// Whether broker `id`'s coordinator serves: loaded, and what the load read is committed
    /// (`TxnPartition::is_committed`: the partition's high watermark reached the log
    /// end offset the load replayed to). Without the wait, seeds 651 and 743 of 150..750 broke
    /// `txn-end-answered-wrong` and `txn-marker-contradicts-decision`.
    ///
    /// Once it serves, the decisions in what it loaded are written (committed) decisions:
    /// checked against the others and recorded.
    fn txn_serves(&mut self, id: i32) -> bool {
        let op = self.plan.shape.txn_partition.expect("a txn run");
        let hw = self.served_hw(id, op);
        let Some(c) = self.bm(id).txn.as_mut() else {
            return false;
        };
        if c.committed {
            return true;
        }
        if hw < c.loaded_end {
            return false;
        }
        c.committed = true;
        let decisions: Vec<(TxnTransit, bool, u64)> = c
            .txns
            .iter()
            .filter_map(|(tid, m)| {
                let commit = match m.state {
                    TxnState::PrepareCommit | TxnState::CompleteCommit => true,
                    TxnState::PrepareAbort | TxnState::CompleteAbort => false,
                    _ => return None,
                };
                Some((m.transit(), commit, *c.loaded_from.get(tid)?))
            })
            .collect();
        for (t, commit, by) in decisions {
            if !self.txn_decide(id, by, &t, commit) {
                return false;
            }
        }
        true
    }

    /// Broker `id`'s coordinator writes transition `t` of `tid` to its partition;
    /// [`Self::txn_write_landed`] continues with `then`.
    fn txn_write(&mut self, id: i32, tid: &str, t: TxnTransit, then: Then) {
        let op = self.plan.shape.txn_partition.expect("a txn run");
        let load = self.b(id).txn.as_ref().expect("loaded").load;
        let req = self.next_request_id();
        self.txns.writes.insert(
            req,
            TxnWrite {
                tid: tid.to_string(),
                t,
                then,
            },
        );
        let appended = self.check_append(id, op, true).and_then(|epoch| {
            let write = Appending {
                req,
                acks: -1,
                count: 1,
                timeout: WRITE_TIMEOUT_MS,
                coordinator: Some(load),
                marker: None,
                reply: None,
            };
            self.append_pending(id, op, epoch, write)
        });
        if let Err(e) = appended {
            self.txn_write_landed(id, load, req, Err(e));
        }
    }

    /// The replication wait of coordinator write `req` (of load `load`) ended with `result`.
    pub(crate) fn txn_write_landed(&mut self, id: i32, load: u64, req: u64, result: Result<(), E>) {
        let Some(w) = self.txns.writes.get(&req).cloned() else {
            return;
        };
        let now = self.now as i64;
        let result = result.map_err(map_error);
        let outcome = {
            let Some(c) = self.bm(id).txn.as_mut().filter(|c| c.load == load) else {
                match w.then {
                    Then::Reply(r) | Then::Prepare { reply: Some(r), .. } => {
                        self.txn_reply(id, r, Err(E::NotCoordinator))
                    }
                    Then::Added { leader, req } => {
                        self.txn_answer_leader(id, leader, req, Err(E::NotCoordinator))
                    }
                    _ => {}
                }
                return;
            };
            match c.txns.get_mut(&w.tid) {
                None => Err(E::NotCoordinator),
                Some(m) => land(m, &w.t, result).map(|dead| {
                    if dead {
                        c.txns.remove(&w.tid);
                    }
                }),
            }
        };
        let tid = w.tid.clone();
        self.log(|| {
            format!(
                "broker {id}: transaction write {req} ({tid} {:?}, epoch {}) landed: {outcome:?}",
                w.t.state, w.t.producer_epoch
            )
        });
        match (w.then, outcome) {
            (Then::Reply(r), outcome) => {
                if outcome.is_ok() && w.t.state == TxnState::Ongoing {
                    let key = (w.t.producer_id, w.t.producer_epoch);
                    self.txns.opened.entry(key).or_insert(req);
                }
                let answer = outcome.map(|()| (w.t.producer_id, w.t.producer_epoch));
                self.txn_reply(id, r, answer);
            }
            (Then::Added { leader, req: r }, outcome) => {
                if outcome.is_ok() && w.t.state == TxnState::Ongoing {
                    let key = (w.t.producer_id, w.t.producer_epoch);
                    self.txns.opened.entry(key).or_insert(req);
                }
                self.txn_answer_leader(id, leader, r, outcome);
            }
            (Then::Prepare { reply, commit }, Ok(())) => {
                if !self.txn_decide(id, req, &w.t, commit) {
                    return;
                }
                let c = self.bm(id).txn.as_mut().expect("checked above");
                let epoch = c.coordinator_epoch;
                let m = c.txns.get_mut(&tid).expect("landed");
                match steps::markers_after_prepare(m, w.t.producer_id, commit, epoch, now) {
                    Ok((marker, complete)) => {
                        if let Some(r) = reply {
                            let answer = (complete.producer_id, complete.producer_epoch);
                            self.txn_reply(id, r, Ok(answer));
                        }
                        let c = self.bm(id).txn.as_mut().expect("checked above");
                        c.sending.insert(
                            tid.clone(),
                            Sending {
                                pid: marker.producer_id,
                                epoch: marker.producer_epoch,
                                commit,
                                complete,
                                backoff: MARKER_BACKOFF_MS.0,
                                req: 0,
                                attempt: 0,
                            },
                        );
                        self.txn_send_markers(id, &tid);
                    }
                    Err(e) => {
                        if let Some(r) = reply {
                            self.txn_reply(id, r, Err(e));
                        }
                    }
                }
            }
            (Then::Prepare { reply, .. }, Err(e)) => {
                if let Some(m) = self.bm(id).txn.as_mut().and_then(|c| c.txns.get_mut(&tid)) {
                    steps::abandon_fence(m);
                }
                if let Some(r) = reply {
                    self.txn_reply(id, r, Err(e));
                }
            }
            (Then::Complete, Ok(())) => {
                let commit = w.t.state == TxnState::CompleteCommit;
                if !self.txn_decide(id, req, &w.t, commit) {
                    return;
                }
                if let Some(c) = self.bm(id).txn.as_mut() {
                    c.sending.remove(&tid);
                }
            }
            (Then::Complete, Err(E::NotCoordinator)) => {}
            (Then::Complete, Err(_)) => {
                // Retried while this broker coordinates (`send_markers`).
                let pid = w.t.producer_id;
                let again = self.bm(id).txn.as_mut().and_then(|c| {
                    let t = steps::complete_again(c.txns.get_mut(&tid)?, pid, now)?;
                    let s = c.sending.get_mut(&tid)?;
                    s.complete = t;
                    s.attempt += 1;
                    Some((s.attempt, s.backoff))
                });
                if let Some((attempt, backoff)) = again {
                    let ci = self.txn_client_index(&tid);
                    self.timer(id, backoff, Timer::TxnComplete(ci, attempt));
                }
            }
        }
    }

    /// Write `req` of broker `id`, transition `t` (PrepareCommit/PrepareAbort, or the
    /// completion after it), landed answered: the decision of the transaction `t` ends is
    /// written. It must agree with every decision written before and every marker
    /// acknowledged on partition 0. Returns false on a violation.
    fn txn_decide(&mut self, id: i32, req: u64, t: &TxnTransit, commit: bool) -> bool {
        let key = (t.producer_id, t.last_producer_epoch);
        // A decision a power loss without fsync voided (every write that carried it
        // acknowledged, then lost on its last copy) no longer counts: the epoch it ended may
        // be used again.
        if let Some(old) = self.txns.decided.get(&key).filter(|d| self.txn_lost(d)) {
            let old = old.commit;
            self.txns.voided.entry(key).or_default().push(old);
            self.txns.decided.remove(&key);
        }
        if let Some(known) = self.txns.decided.get_mut(&key) {
            if known.commit != commit {
                let (before, by) = (known.commit, known.by.clone());
                self.violate(
                    "txn-decided-twice",
                    format!("producer {} epoch {}: write {req} (commit: {commit}) by broker {id} landed after writes {by:?} decided commit: {before}", key.0, key.1),
                );
                return false;
            }
            if !known.by.contains(&req) {
                known.by.push(req);
            }
            return true;
        }
        if let Some((marked, m)) = self.txns.marked.get(&key).copied() {
            // A marker written from a decision a power loss voided stays on partition 0 while
            // the coordinator's log lost the decision (outside the contract, as the decision).
            if marked != commit && !self.exempt(m) && !self.txn_voided(key, marked) {
                self.violate(
                    "txn-marker-contradicts-decision",
                    format!("producer {} epoch {}: write {req} (commit: {commit}) by broker {id} landed after marker {m} (commit: {marked}) closed the transaction on partition 0", key.0, key.1),
                );
                return false;
            }
        }
        self.txns.decided.insert(
            key,
            Written {
                commit,
                by: vec![req],
            },
        );
        if commit {
            self.txns.commits += 1;
        } else {
            self.txns.aborts += 1;
        }
        true
    }

    /// Whether a power loss without fsync took every write that carried decision `d`.
    fn txn_lost(&self, d: &Written) -> bool {
        d.by.iter().all(|&w| self.exempt(w))
    }

    /// Whether a decision `commit` of transaction `key` (producer id, data epoch) was written
    /// and then voided by a power loss (markers written from it stay where they landed).
    fn txn_voided(&self, key: (i64, i16), commit: bool) -> bool {
        self.txns
            .voided
            .get(&key)
            .is_some_and(|v| v.contains(&commit))
    }

    fn txn_client_index(&self, tid: &str) -> u8 {
        tid.trim_start_matches("tx-").parse().expect("tx-N")
    }

    /// The completion of client `ci`'s transaction is written again (after a failed write).
    pub(crate) fn txn_complete_retry(&mut self, id: i32, ci: u8, attempt: u32) {
        let tid = format!("tx-{ci}");
        let t = match self.b(id).txn.as_ref().and_then(|c| c.sending.get(&tid)) {
            Some(s) if s.attempt == attempt => s.complete.clone(),
            _ => return,
        };
        self.txn_write(id, &tid, t, Then::Complete);
    }

    /// Broker `id`'s coordinator sends `tid`'s markers to partition 0's leader (as its image
    /// names it), again after a timeout or a retriable error.
    fn txn_send_markers(&mut self, id: i32, tid: &str) {
        if !self.txn_serves(id) {
            self.txn_marker_backoff(id, tid);
            return;
        }
        let req = self.next_request_id();
        let ci = self.txn_client_index(tid);
        let leader = self
            .b(id)
            .image
            .partition(TOPIC, DATA_PARTITION)
            .map(|s| s.leader)
            .filter(|l| *l > 0);
        let Some(c) = self.bm(id).txn.as_mut() else {
            return;
        };
        let coordinator_epoch = c.coordinator_epoch;
        let Some(s) = c.sending.get_mut(tid) else {
            return;
        };
        s.req = req;
        s.attempt += 1;
        let (attempt, pid, epoch, commit) = (s.attempt, s.pid, s.epoch, s.commit);
        if let Some(leader) = leader {
            self.send(
                Node::Broker(id),
                Node::Broker(leader),
                Msg::TxnMarkers {
                    req,
                    pid,
                    epoch,
                    commit,
                    coordinator_epoch,
                },
            );
            self.timer(id, MARKER_TIMEOUT_MS, Timer::TxnMarkers(ci, attempt));
        } else {
            self.txn_marker_backoff(id, tid);
        }
    }

    fn txn_marker_backoff(&mut self, id: i32, tid: &str) {
        let ci = self.txn_client_index(tid);
        let Some(s) = self
            .bm(id)
            .txn
            .as_mut()
            .and_then(|c| c.sending.get_mut(tid))
        else {
            return;
        };
        s.attempt += 1;
        s.req = 0;
        let (attempt, backoff) = (s.attempt, s.backoff);
        s.backoff = (s.backoff * 2).min(MARKER_BACKOFF_MS.1);
        self.timer(id, backoff, Timer::TxnMarkers(ci, attempt));
    }

    /// A marker timer of client `ci`'s transaction fired at its coordinator.
    pub(crate) fn txn_markers_timer(&mut self, id: i32, ci: u8, attempt: u32) {
        let tid = format!("tx-{ci}");
        let current = self
            .b(id)
            .txn
            .as_ref()
            .and_then(|c| c.sending.get(&tid))
            .is_some_and(|s| s.attempt == attempt);
        if current {
            self.txn_send_markers(id, &tid);
        }
    }

    /// Partition 0's leader answered a marker request.
    fn txn_markers_answer(&mut self, id: i32, req: u64, result: Result<(), E>) {
        let Some(tid) = self.b(id).txn.as_ref().and_then(|c| {
            c.sending
                .iter()
                .find(|(_, s)| s.req == req && req != 0)
                .map(|(t, _)| t.clone())
        }) else {
            return;
        };
        match steps::marker_outcome(&result) {
            MarkerOutcome::Written | MarkerOutcome::Gone => {
                let c = self.bm(id).txn.as_mut().expect("found above");
                let s = c.sending.get_mut(&tid).expect("found above");
                s.req = 0;
                s.attempt += 1;
                s.backoff = MARKER_BACKOFF_MS.0;
                let t = s.complete.clone();
                self.txn_write(id, &tid, t, Then::Complete);
            }
            MarkerOutcome::Stale => {
                self.log(|| format!("broker {id}: stops sending {tid}'s markers: {result:?}"));
                if let Some(c) = self.bm(id).txn.as_mut() {
                    c.sending.remove(&tid);
                }
            }
            MarkerOutcome::Retry => self.txn_marker_backoff(id, &tid),
        }
    }

    /// Client requests at broker `id`'s coordinator.
    fn on_txn_request(&mut self, id: i32, msg: Msg) {
        let now = self.now as i64;
        let fresh = self.txns.next_pid;
        let serves = self.txn_serves(id);
        let loaded = self.b(id).txn.is_some();
        let Some(c) = self.bm(id).txn.as_mut().filter(|_| serves) else {
            let req = match msg {
                Msg::TxnInit { req, .. } | Msg::TxnAdd { req, .. } | Msg::TxnEnd { req, .. } => req,
                _ => return,
            };
            let e = if loaded {
                E::CoordinatorLoadInProgress
            } else {
                E::NotCoordinator
            };
            self.txn_reply(id, req, Err(e));
            return;
        };
        match msg {
            Msg::TxnInit { req, tid } => {
                if !c.txns.contains_key(&tid) {
                    c.txns.insert(
                        tid.clone(),
                        TxnMetadata::new(&tid, fresh, TXN_TIMEOUT_MS, now),
                    );
                    self.txns.next_pid += 1;
                }
                let c = self.bm(id).txn.as_mut().expect("loaded");
                let m = c.txns.get_mut(&tid).expect("inserted");
                match steps::plan_init(m, TXN_TIMEOUT_MS, None, None, now) {
                    Err(e) => self.txn_reply(id, req, Err(e)),
                    Ok(InitStep::Write(t)) => self.txn_write(id, &tid, t, Then::Reply(req)),
                    Ok(InitStep::Fence(t)) => {
                        self.txn_abort_fenced(id, &tid, &t);
                        self.txn_reply(id, req, Err(E::ConcurrentTransactions));
                    }
                }
            }
            Msg::TxnAdd {
                req,
                tid,
                pid,
                epoch,
            } => {
                let Some(m) = c.txns.get_mut(&tid) else {
                    self.txn_reply(id, req, Err(E::InvalidProducerIdMapping));
                    return;
                };
                let tp = (TOPIC.to_string(), DATA_PARTITION);
                match steps::plan_add_partitions(m, pid, epoch, &[tp], TxnVersion::V2, now) {
                    Err(e) => self.txn_reply(id, req, Err(e)),
                    Ok(None) => self.txn_reply(id, req, Ok((pid, epoch))),
                    Ok(Some(t)) => self.txn_write(id, &tid, t, Then::Reply(req)),
                }
            }
            Msg::TxnEnd {
                req,
                tid,
                pid,
                epoch,
                commit,
            } => {
                let Some(m) = c.txns.get_mut(&tid) else {
                    self.txn_reply(id, req, Err(E::InvalidProducerIdMapping));
                    return;
                };
                match steps::prepare_end_v2(m, pid, epoch, commit, true, NO_PRODUCER_ID, now) {
                    Err(e) => self.txn_reply(id, req, Err(e)),
                    Ok(EndStep::Done(p, e)) => self.txn_reply(id, req, Ok((p, e))),
                    Ok(EndStep::Write(t, _)) => self.txn_write(
                        id,
                        &tid,
                        t,
                        Then::Prepare {
                            reply: Some(req),
                            commit,
                        },
                    ),
                }
            }
            _ => {}
        }
    }

    /// AddPartitionsToTxn v5 from partition 0's leader `from` at broker `id`'s coordinator:
    /// `verify_only` (KIP-890 part 1, `TransactionCoordinators::verify_partitions`: the broker's
    /// [`steps::verify_partitions`]) or, for a Produce v12+ (`add`, part 2), an add of
    /// partition 0 (`add_partitions`: [`steps::plan_add_partitions`], the Ongoing state written
    /// with acks=all before the answer, as a client's AddPartitionsToTxn).
    fn on_txn_verify(&mut self, id: i32, from: i32, req: u64, v: (&str, i64, i16, bool)) {
        let (tid, pid, epoch, add) = v;
        let now = self.now as i64;
        let serves = self.txn_serves(id);
        let tp = (TOPIC.to_string(), DATA_PARTITION);
        let result = match self.bm(id).txn.as_mut() {
            None => Err(E::NotCoordinator),
            Some(_) if !serves => Err(E::CoordinatorLoadInProgress),
            Some(c) => match c.txns.get_mut(tid) {
                None => Err(E::InvalidProducerIdMapping),
                Some(m) if add => {
                    match steps::plan_add_partitions(m, pid, epoch, &[tp], TxnVersion::V2, now) {
                        Err(e) => Err(e),
                        Ok(None) => Ok(()),
                        Ok(Some(t)) => {
                            let then = Then::Added { leader: from, req };
                            return self.txn_write(id, tid, t, then);
                        }
                    }
                }
                Some(m) => steps::verify_partitions(m, pid, epoch, &[tp]).and_then(|r| {
                    match r.into_iter().find_map(|(_, e)| e) {
                        Some(e) => Err(e),
                        None => Ok(()),
                    }
                }),
            },
        };
        self.txn_answer_leader(id, from, req, result);
    }

    /// Broker `id`'s coordinator answers partition 0's leader `leader` on verification or add
    /// `req`.
    fn txn_answer_leader(&mut self, id: i32, leader: i32, req: u64, result: Result<(), E>) {
        self.send(
            Node::Broker(id),
            Node::Broker(leader),
            Msg::TxnVerified { req, result },
        );
    }

    /// Aborts `tid`'s open transaction after epoch fence `t` (`abort_fenced`).
    fn txn_abort_fenced(&mut self, id: i32, tid: &str, t: &TxnTransit) {
        let now = self.now as i64;
        let Some(m) = self.bm(id).txn.as_mut().and_then(|c| c.txns.get_mut(tid)) else {
            return;
        };
        let step = steps::prepare_end_v2(
            m,
            t.producer_id,
            t.producer_epoch,
            false,
            false,
            NO_PRODUCER_ID,
            now,
        );
        match step {
            Ok(EndStep::Write(t, _)) => self.txn_write(
                id,
                tid,
                t,
                Then::Prepare {
                    reply: None,
                    commit: false,
                },
            ),
            Ok(EndStep::Done(..)) => {}
            Err(_) => steps::abandon_fence(m),
        }
    }

    /// The coordinator's timeout check (`abort_timed_out`).
    pub(crate) fn txn_abort_check(&mut self, id: i32) {
        let now = self.now as i64;
        let serves = self.txn_serves(id);
        let fences: Vec<(String, TxnTransit)> = match self.bm(id).txn.as_mut().filter(|_| serves) {
            Some(c) => c
                .txns
                .iter_mut()
                .filter_map(|(tid, m)| Some((tid.clone(), steps::fence_if_timed_out(m, now)?)))
                .collect(),
            None => Vec::new(),
        };
        for (tid, t) in fences {
            self.log(|| format!("broker {id}: aborts {tid}'s transaction past its timeout"));
            self.txn_abort_fenced(id, &tid, &t);
        }
        self.timer(id, ABORT_CHECK_MS, Timer::TxnAbortCheck);
    }

    // ------------------------------------------------------------------ partition 0's leader

    /// Broker `id` became partition 0's leader: its producer state from its log.
    pub(crate) fn txn_leader_state(&mut self, id: i32, p: i32) {
        if !self.txn_run() || p != DATA_PARTITION {
            return;
        }
        let mut state = ProducerStateManager::default();
        let d = &self.b(id).disks[&p];
        for b in d.log.batches() {
            match self.txns.batches.get(&b.id) {
                Some(x @ TxnBatch::Data { .. }) => {
                    state.record(&x.header(), b.base);
                }
                Some(&TxnBatch::Marker {
                    pid,
                    epoch,
                    commit,
                    coordinator_epoch,
                }) => {
                    let marker = EndTxnMarker {
                        control: if commit {
                            ControlType::Commit
                        } else {
                            ControlType::Abort
                        },
                        coordinator_epoch,
                    };
                    state.record_marker(pid, epoch, marker, b.base, 0);
                }
                None => {}
            }
        }
        if d.log.log_start_offset() > 0 {
            state.set_may_have_forgotten();
        }
        self.bm(id).producers = Some(state);
    }

    /// Frame `frame` of connection `conn` reached broker `id`: its read loop takes a
    /// connection's frames in order, once (a later frame waits for the missing one; a
    /// duplicate delivery is dropped), and hands each Produce its ticket in that order.
    fn on_txn_produce(
        &mut self,
        id: i32,
        tid: String,
        (conn, frame): (u64, u64),
        req: u64,
        (batch, adds): (TxnBatch, bool),
    ) {
        let b = self.bm(id);
        if !b.produce_conns.contains_key(&conn) && b.produce_conns.len() >= MAX_CONNS {
            // The oldest connection is long closed (its client moved on to a newer one).
            let oldest = *b.produce_conns.keys().next().expect("full");
            b.produce_conns.remove(&oldest);
        }
        let c = b.produce_conns.entry(conn).or_default();
        c.tid = tid;
        if frame < c.next_frame || c.ahead.contains_key(&frame) {
            return;
        }
        c.ahead.insert(frame, (req, batch, adds));
        let mut taken = Vec::new();
        while let Some(x) = c.ahead.remove(&c.next_frame) {
            let ticket = c.book.issue();
            assert!(
                c.book.register(ticket, &[order_key()]),
                "tickets register in read order"
            );
            c.next_frame += 1;
            taken.push(ConnProduce {
                conn,
                ticket,
                req: x.0,
                batch: x.1,
                adds: x.2,
            });
        }
        for p in taken {
            self.txn_produce_turn(id, p);
        }
    }

    /// A registered produce goes on when its turn to decide its append to partition 0 came
    /// (the broker's `Registered::wait_for_earlier`), else waits for the earlier ones.
    fn txn_produce_turn(&mut self, id: i32, p: ConnProduce) {
        let order_off = self.txns.produce_order_off;
        let Some(c) = self.bm(id).produce_conns.get_mut(&p.conn) else {
            return;
        };
        if !order_off && !c.book.may_decide(p.ticket, &order_key()) {
            c.waiting.push(p);
            self.txns.waited_turns += 1;
            return;
        }
        self.txn_produce_verify(id, p);
    }

    /// The produce's append to partition 0 is decided (appended or refused): the next
    /// produce of its connection there whose turn came goes on.
    fn txn_produce_decided(&mut self, id: i32, conn: u64, ticket: Ticket) {
        let Some(c) = self.bm(id).produce_conns.get_mut(&conn) else {
            return;
        };
        let key = order_key();
        c.book.decided(ticket, &key);
        let (ready, waiting): (Vec<ConnProduce>, Vec<ConnProduce>) = std::mem::take(&mut c.waiting)
            .into_iter()
            .partition(|w| c.book.may_decide(w.ticket, &key));
        c.waiting = waiting;
        for p in ready {
            self.txn_produce_verify(id, p);
        }
    }

    /// KIP-890 at partition 0's leader (`verify_transactions`): a transactional batch that
    /// would open a transaction here waits until the transaction coordinator says partition 0
    /// is in the producer's transaction (part 1) or added it (part 2, Produce v12+: `adds`);
    /// the append then carries the producer
    /// state's verification token.
    fn txn_produce_verify(&mut self, id: i32, p: ConnProduce) {
        let TxnBatch::Data {
            pid,
            epoch,
            transactional,
            ..
        } = p.batch
        else {
            return;
        };
        let answer = |w: &mut World, e: E| {
            w.txn_reply(id, p.req, Err(e));
            w.txn_produce_decided(id, p.conn, p.ticket);
        };
        if let Err(e) = self.check_append(id, DATA_PARTITION, true) {
            self.txn_note_refused(id, &p.batch);
            return answer(self, e);
        }
        let Some(state) = self.bm(id).producers.as_mut() else {
            return answer(self, E::NotLeaderOrFollower);
        };
        if !transactional {
            // An idempotent producer's batch: nothing to verify (`verify_transactions` looks
            // at transactional batches only).
            return self.txn_produce_check(id, p, ProducerCheck::PLAIN);
        }
        // The produce handler's round (`verify_transactions`): Produce v12 for a client whose
        // partition the leader adds, v11 for one that adds it itself; verification is on
        // (`transaction.partition.verification.enable`, Kafka's default).
        let version = if p.adds {
            TXN_V2_VERSION
        } else {
            ABORTABLE_VERSION
        };
        let mut round = VerifyRound::new(version, true);
        // the simulated clients always name their transactional id, one producer per request
        let verify = round
            .admit(true, pid, epoch)
            .expect("a simulated transactional produce is admitted");
        let check = if verify {
            round.wait_for((), state.begin_verification(pid, epoch, round.tv2()))
        } else {
            ProducerCheck::PLAIN
        };
        if round.waiting().is_empty() || (p.adds && self.txns.leader_add_off) {
            return self.txn_produce_check(id, p, check);
        }
        let started = self.now;
        self.txn_ask_coordinator(
            id,
            Verifying {
                p,
                round,
                check,
                started,
            },
        );
    }

    /// Broker `id` asks the transaction coordinator to verify or add partition 0 for
    /// produce `v` (`txn_verify::add_or_verify`), with the verification's timeout.
    fn txn_ask_coordinator(&mut self, id: i32, v: Verifying) {
        let TxnBatch::Data { pid, epoch, .. } = v.p.batch else {
            return;
        };
        let op = self.plan.shape.txn_partition.expect("a txn run");
        let coordinator = self
            .b(id)
            .image
            .partition(TOPIC, op)
            .map(|s| s.leader)
            .filter(|l| *l > 0);
        let Some(coordinator) = coordinator else {
            // `add_or_verify`: COORDINATOR_NOT_AVAILABLE for every partition.
            return self.txn_verify_answered(id, v, Err(E::CoordinatorNotAvailable));
        };
        let Some(tid) = self
            .b(id)
            .produce_conns
            .get(&v.p.conn)
            .map(|c| c.tid.clone())
        else {
            return; // the connection was closed
        };
        let vreq = self.next_request_id();
        self.txns.verifications += 1;
        let add = v.p.adds;
        self.bm(id).verifying.insert(vreq, v);
        self.send(
            Node::Broker(id),
            Node::Broker(coordinator),
            Msg::TxnVerify {
                req: vreq,
                tid,
                pid,
                epoch,
                add,
            },
        );
        self.timer(id, VERIFY_TIMEOUT_MS, Timer::TxnVerifyTimeout(vreq));
    }

    /// The coordinator's answer to verification or add `vreq` at broker `id`.
    fn txn_verified(&mut self, id: i32, vreq: u64, result: Result<(), E>) {
        let Some(v) = self.bm(id).verifying.remove(&vreq) else {
            return; // timed out meanwhile
        };
        self.txn_verify_answered(id, v, result);
    }

    /// The round of produce `v` at broker `id` takes the coordinator's answer
    /// ([`VerifyRound::answered`]): an add answered CONCURRENT_TRANSACTIONS is asked again
    /// after a pause, for a while; else the produce appends or is refused.
    fn txn_verify_answered(&mut self, id: i32, mut v: Verifying, result: Result<(), E>) {
        let elapsed = std::time::Duration::from_millis(self.now - v.started);
        match v.round.answered(|_| result.err(), elapsed) {
            VerifyStep::Pause(pause) => {
                self.txns.add_retries += 1;
                let key = self.next_request_id();
                self.bm(id).add_retries.insert(key, v);
                self.timer(id, pause.as_millis() as Time, Timer::TxnAddRetry(key));
            }
            VerifyStep::Done(refused) => match refused.first() {
                Some(&(_, e)) => {
                    self.txn_reply(id, v.p.req, Err(e));
                    self.txn_produce_decided(id, v.p.conn, v.p.ticket);
                }
                None => self.txn_produce_check(id, v.p, v.check),
            },
        }
    }

    /// The pause before asking again for add `key` at broker `id` is over: as the produce
    /// handler, the partition's verification starts again ([`VerifyRound::restart`]: the
    /// previous transaction's marker may have landed meanwhile, then there is nothing to add).
    pub(crate) fn txn_add_retry(&mut self, id: i32, key: u64) {
        let Some(mut v) = self.bm(id).add_retries.remove(&key) else {
            return;
        };
        let TxnBatch::Data { pid, epoch, .. } = v.p.batch else {
            return;
        };
        let Some(state) = self.bm(id).producers.as_mut() else {
            self.txn_reply(id, v.p.req, Err(E::NotLeaderOrFollower));
            return self.txn_produce_decided(id, v.p.conn, v.p.ticket);
        };
        let tv2 = v.round.tv2();
        for ((), check) in v
            .round
            .restart(|_| state.begin_verification(pid, epoch, tv2))
        {
            v.check = check;
        }
        if v.round.waiting().is_empty() {
            self.txn_produce_check(id, v.p, v.check)
        } else {
            self.txn_ask_coordinator(id, v)
        }
    }

    /// Verification `vreq` at broker `id` got no answer in time (`VERIFY_TIMEOUT`: a network
    /// error, NOT_ENOUGH_REPLICAS to the producer).
    pub(crate) fn txn_verify_timeout(&mut self, id: i32, vreq: u64) {
        self.txn_verified(id, vreq, Err(E::NetworkException));
    }

    /// The producer state's check and the append of a transactional batch at broker `id`
    /// (the produce handler: `check_append`, the check with the verification `token`, the
    /// append; the wait for the replicas follows and does not hold the connection's order).
    fn txn_produce_check(&mut self, id: i32, p: ConnProduce, check: ProducerCheck) {
        if let Err(e) = self.txn_produce_append(id, p, check) {
            self.txn_reply(id, p.req, Err(e));
        }
        self.txn_produce_decided(id, p.conn, p.ticket);
    }

    /// The check and the append; `Err` is the answer to send now.
    fn txn_produce_append(
        &mut self,
        id: i32,
        p: ConnProduce,
        check: ProducerCheck,
    ) -> Result<(), E> {
        let ConnProduce {
            conn,
            ticket,
            req,
            batch,
            ..
        } = p;
        let leader_epoch = match self.check_append(id, DATA_PARTITION, true) {
            Ok(e) => e,
            Err(e) => {
                // `append`: a batch refused before its append is noted, so a later one of
                // the producer that comes first is refused too, not called out of order.
                self.txn_note_refused(id, &batch);
                return Err(e);
            }
        };
        let header = batch.header();
        let TxnBatch::Data {
            pid,
            epoch,
            seq,
            count,
            ..
        } = batch
        else {
            unreachable!("a data batch");
        };
        // `check` as the produce handler gave it (the round's for a transactional batch,
        // PLAIN for an idempotent one); then the partition's own decision
        // (`leader_append::decide`).
        let checked = self.leader_decides(id, &header, check);
        // What `txn-produce-out-of-order` compares: appended or a duplicate (OK), or refused
        // OUT_OF_ORDER_SEQUENCE_NUMBER; a check that passed but whose append failed is neither.
        let checked_as = |ok: bool| Checked {
            frame: ticket,
            seq,
            count,
            leader_epoch,
            ok,
        };
        match &checked {
            Err(E::OutOfOrderSequenceNumber) => {
                self.txn_check_order(id, conn, pid, epoch, checked_as(false))
            }
            Ok(Decision::Duplicate { .. }) => {
                self.txn_check_order(id, conn, pid, epoch, checked_as(true))
            }
            _ => {}
        }
        match checked {
            Err(e) => {
                self.log(|| {
                    format!("broker {id}: refuses transactional produce {req} {batch:?}: {e:?}")
                });
                Err(e)
            }
            Ok(Decision::Duplicate { base_offset, .. }) => {
                // Answered with the original's offset once the original is acknowledged (the
                // produce handler waits for the duplicate's last offset to be replicated).
                let original = self.b(id).disks[&DATA_PARTITION]
                    .log
                    .batch_at(base_offset)
                    .filter(|b| b.base == base_offset)
                    .copied();
                let Some(original) = original else {
                    return Err(E::NotLeaderOrFollower);
                };
                self.txns.dup_of.insert(req, original.id);
                if self.txns.duplicates_at_once {
                    self.txn_reply(id, req, Ok((base_offset, 0)));
                    return Ok(());
                }
                let write = Appending {
                    req,
                    acks: -1,
                    count: original.count,
                    timeout: crate::world::PRODUCE_TIMEOUT_MS,
                    coordinator: None,
                    marker: None,
                    reply: Some(Reply::Produce),
                };
                self.wait_pending(id, DATA_PARTITION, leader_epoch, original, write);
                Ok(())
            }
            Ok(Decision::Append { .. }) => {
                let base = self.b(id).disks[&DATA_PARTITION].log.leo();
                let write = Appending {
                    req,
                    acks: -1,
                    count: header.records_count as i64,
                    timeout: crate::world::PRODUCE_TIMEOUT_MS,
                    coordinator: None,
                    marker: None,
                    reply: Some(Reply::Produce),
                };
                self.append_pending(id, DATA_PARTITION, leader_epoch, write)?;
                self.txn_check_order(id, conn, pid, epoch, checked_as(true));
                self.txns.batches.insert(req, batch);
                if let Some(s) = self.bm(id).producers.as_mut() {
                    s.record(&header, base);
                }
                Ok(())
            }
        }
    }

    /// Broker `id`'s decision, as partition 0's leader, on `header` checked as `check`: the
    /// broker's own [`decide`] (log online, leadership, producer state), on the simulated log
    /// and the broker's producer state. NOT_LEADER_OR_FOLLOWER when it has no producer state
    /// (not the leader).
    fn leader_decides(
        &mut self,
        id: i32,
        header: &BatchHeader,
        check: ProducerCheck,
    ) -> Result<Decision, E> {
        let b = self.bm(id);
        let (Some(producers), Some(d), Some(r)) = (
            b.producers.as_mut(),
            b.disks.get(&DATA_PARTITION),
            b.replicas.get(&DATA_PARTITION),
        ) else {
            return Err(E::NotLeaderOrFollower);
        };
        let mut leader = SimLeader {
            producers,
            offline: d.log.is_offline(),
            repl: &r.repl,
        };
        decide(&mut leader, header, check)
    }

    /// Broker `id`'s producer state notes data batch `batch` refused before its append
    /// (`Partition::note_refused`).
    fn txn_note_refused(&mut self, id: i32, batch: &TxnBatch) {
        let header = batch.header();
        if let Some(s) = self.bm(id).producers.as_mut() {
            s.note_refused(&header);
        }
    }

    /// `txn-produce-out-of-order`: a batch refused OUT_OF_ORDER_SEQUENCE_NUMBER by broker
    /// `id` although the batch before it in sequence, sent before it on the same connection,
    /// was appended (or found a duplicate) by the same broker process in the same leader
    /// epoch. Kafka, one request of a connection at a time, checks the earlier batch first and
    /// the later one is in sequence; overlapped processing must answer the same (issue 57,
    /// defect 3: the earlier batch waited in its verification while the later one was
    /// checked).
    fn txn_check_order(&mut self, id: i32, conn: u64, pid: i64, epoch: i16, c: Checked) {
        let run = self.b(id).run;
        let seen = self
            .txns
            .checks
            .entry((id, run, conn, pid, epoch))
            .or_default();
        let broken = seen.iter().find(|o| {
            o.leader_epoch == c.leader_epoch
                && o.ok != c.ok
                && if c.ok {
                    o.frame > c.frame && o.seq as i64 == c.seq as i64 + c.count
                } else {
                    o.frame < c.frame && o.seq as i64 + o.count == c.seq as i64
                }
        });
        if let Some(o) = broken.copied() {
            self.violate(
                "txn-produce-out-of-order",
                format!("broker {id}, connection {conn}: producer {pid} epoch {epoch}: {c:?} and {o:?} (the earlier frame appended, the later refused OUT_OF_ORDER_SEQUENCE_NUMBER in the same leader epoch)"),
            );
            return;
        }
        seen.push(c);
    }

    /// WriteTxnMarkers at partition 0's leader `id` (`write_marker_locally`).
    fn on_txn_markers(&mut self, id: i32, from: i32, req: u64, marker: TxnBatch) {
        let TxnBatch::Marker {
            pid,
            epoch,
            commit,
            coordinator_epoch,
        } = marker
        else {
            return;
        };
        let answer = |w: &mut World, r: Result<(), E>| {
            w.send(
                Node::Broker(id),
                Node::Broker(from),
                Msg::TxnMarkersReply { req, result: r },
            );
        };
        let leader_epoch = match self.check_append(id, DATA_PARTITION, true) {
            Ok(e) => e,
            Err(e) => return answer(self, Err(e)),
        };
        let check = ProducerCheck::Marker {
            coordinator_epoch,
            bumps_epoch: true,
        };
        if let Err(e) = self.leader_decides(id, &marker.header(), check) {
            return answer(self, Err(e));
        }
        let base = self.b(id).disks[&DATA_PARTITION].log.leo();
        let timeout =
            frieda::broker::txn_markers::MARKER_REPLICATION_TIMEOUT.as_millis() as crate::Time;
        let write = Appending {
            req,
            acks: -1,
            count: 1,
            timeout,
            coordinator: None,
            marker: None,
            reply: Some(Reply::Marker { coordinator: from }),
        };
        if let Err(e) = self.append_pending(id, DATA_PARTITION, leader_epoch, write) {
            return answer(self, Err(e));
        }
        self.txns.batches.insert(req, marker);
        let control = if commit {
            ControlType::Commit
        } else {
            ControlType::Abort
        };
        let closed = self.bm(id).producers.as_mut().and_then(|s| {
            s.record_marker(
                pid,
                epoch,
                EndTxnMarker {
                    control,
                    coordinator_epoch,
                },
                base,
                0,
            )
        });
        if let Some(closed) = closed {
            let first = self.b(id).disks[&DATA_PARTITION]
                .log
                .batch_at(closed.first_offset)
                .map(|b| b.id);
            if let Some(&TxnBatch::Data { pid, epoch, .. }) =
                first.and_then(|f| self.txns.batches.get(&f))
            {
                self.txns.closes.insert(req, (pid, epoch));
            }
            self.txn_check_marker(id, first, req, commit);
        }
    }

    /// The marker `marker` (commit or not) closed the transaction whose first batch is
    /// `first`: it must carry that transaction's decision, if one was written and answered
    /// (a coordinator may resume the markers of a prepared transaction it loaded from its log
    /// before the write was answered: that decision counts once it is replicated, which
    /// [`Self::txn_write_landed`] checks against the acknowledged markers).
    fn txn_check_marker(&mut self, id: i32, first: Option<u64>, marker: u64, commit: bool) {
        let Some(TxnBatch::Data { pid, epoch, .. }) =
            first.and_then(|f| self.txns.batches.get(&f).copied())
        else {
            return;
        };
        let decided = self.txns.decided.get(&(pid, epoch)).cloned();
        let voided = self.txn_voided((pid, epoch), commit);
        // The decision's own marker was acknowledged, then lost to a power loss without fsync
        // (outside the contract, seed 17361): the replica elected without it has the
        // transaction open again, and the producer's next marker closes it.
        let marker_lost = self
            .txns
            .marked
            .get(&(pid, epoch))
            .is_some_and(|&(c, m)| c != commit && self.exempt(m));
        let contradicts = !voided
            && !marker_lost
            && decided
                .as_ref()
                .is_some_and(|d| d.commit != commit && !self.txn_lost(d));
        if contradicts {
            self.violate(
                "txn-marker-contradicts-decision",
                format!("broker {id} wrote marker {marker} (commit: {commit}) closing producer {pid}'s transaction of epoch {epoch}, whose written decision is {decided:?}"),
            );
        }
    }

    /// A transactional append of broker `id` was acknowledged or failed.
    pub(crate) fn txn_appended(&mut self, id: i32, req: u64, reply: Reply, result: Result<i64, E>) {
        match reply {
            Reply::Produce => {
                let r = result.map(|base| (base, 0));
                self.txn_reply(id, req, r);
            }
            Reply::Marker { coordinator } => {
                if let (Ok(_), Some(&key)) = (&result, self.txns.closes.get(&req)) {
                    let commit = matches!(
                        self.txns.batches.get(&req),
                        Some(TxnBatch::Marker { commit: true, .. })
                    );
                    self.txns.marked.entry(key).or_insert((commit, req));
                }
                self.send(
                    Node::Broker(id),
                    Node::Broker(coordinator),
                    Msg::TxnMarkersReply {
                        req,
                        result: result.map(|_| ()),
                    },
                )
            }
        }
    }

    /// Transaction messages at broker `id`.
    pub(crate) fn txn_receive(&mut self, id: i32, from: Node, msg: Msg) {
        match msg {
            Msg::TxnInit { .. } | Msg::TxnAdd { .. } | Msg::TxnEnd { .. } => {
                self.on_txn_request(id, msg)
            }
            Msg::TxnProduce {
                req,
                tid,
                conn,
                frame,
                pid,
                epoch,
                seq,
                count,
                transactional,
                adds,
            } => self.on_txn_produce(
                id,
                tid,
                (conn, frame),
                req,
                (
                    TxnBatch::Data {
                        pid,
                        epoch,
                        seq,
                        count,
                        transactional,
                    },
                    adds,
                ),
            ),
            Msg::TxnVerify {
                req,
                tid,
                pid,
                epoch,
                add,
            } => {
                if let Node::Broker(from) = from {
                    self.on_txn_verify(id, from, req, (&tid, pid, epoch, add));
                }
            }
            Msg::TxnVerified { req, result } => self.txn_verified(id, req, result),
            Msg::TxnMarkers {
                req,
                pid,
                epoch,
                commit,
                coordinator_epoch,
            } => {
                if let Node::Broker(from) = from {
                    let m = TxnBatch::Marker {
                        pid,
                        epoch,
                        commit,
                        coordinator_epoch,
                    };
                    self.on_txn_markers(id, from, req, m);
                }
            }
            Msg::TxnMarkersReply { req, result } => self.txn_markers_answer(id, req, result),
            _ => {}
        }
    }

    // ------------------------------------------------------------------ the end

    /// At the end: partition 0's final leader has every transactional batch below its high
    /// watermark closed by a marker that carries its decision.
    pub(crate) fn check_txn_end(&mut self) {
        if !self.txn_run() {
            return;
        }
        let Some(leader) = self
            .controller
            .image
            .partition(TOPIC, DATA_PARTITION)
            .map(|s| s.leader)
            .filter(|l| *l > 0)
        else {
            return;
        };
        let hw = self.served_hw(leader, DATA_PARTITION);
        // Every produce a client got answered OK is in the log, at the offset it was told.
        let log = &self.b(leader).disks[&DATA_PARTITION].log;
        let lost = self.txns.answered.iter().find(|a| {
            let found = log.batch_at(a.base).and_then(|b| {
                let x = self.txns.batches.get(&b.id)?;
                (b.base == a.base && b.end() <= hw).then_some(*x)
            });
            let here = matches!(found, Some(TxnBatch::Data { pid, epoch, seq, .. })
                if pid == a.pid && epoch == a.epoch && seq == a.seq);
            !here && a.base >= log.log_start_offset() && !self.exempt(a.batch)
        });
        if let Some(a) = lost.copied() {
            let tid = self.txns.clients[a.client as usize].tid.clone();
            self.violate(
                "producer-ack-lost",
                format!("client {tid}'s batch (producer {}, epoch {}, sequence {}, batch {}) was answered OK at offset {}, but partition 0's final leader {leader} holds {:?} there (high watermark {hw})", a.pid, a.epoch, a.seq, a.batch, a.base, self.b(leader).disks[&DATA_PARTITION].log.batch_at(a.base)),
            );
            return;
        }
        let mut open: BTreeMap<i64, (u64, i16, i64)> = BTreeMap::new();
        let batches: Vec<crate::disk::Batch> = self.b(leader).disks[&DATA_PARTITION]
            .log
            .batches()
            .iter()
            .take_while(|b| b.end() <= hw)
            .copied()
            .collect();
        // Every producer batch (producer id, epoch, base sequence) once in the log.
        let mut sequenced: BTreeMap<(i64, i16, i32), (u64, i64)> = BTreeMap::new();
        for b in batches {
            match self.txns.batches.get(&b.id).copied() {
                Some(TxnBatch::Data {
                    pid,
                    epoch,
                    seq,
                    transactional,
                    ..
                }) => {
                    if let Some((other, at)) = sequenced.insert((pid, epoch, seq), (b.id, b.base)) {
                        self.violate(
                            "producer-batch-duplicated",
                            format!("partition 0's final leader {leader} holds producer {pid}'s batch of epoch {epoch}, sequence {seq} twice below its high watermark {hw}: batch {other} at {at} and batch {} at {}", b.id, b.base),
                        );
                        return;
                    }
                    if transactional {
                        open.entry(pid).or_insert((b.id, epoch, b.base));
                    }
                }
                Some(TxnBatch::Marker { pid, commit, .. }) => {
                    if let Some((first, _, _)) = open.remove(&pid) {
                        self.txn_check_marker(leader, Some(first), b.id, commit);
                        if self.violation.is_some() {
                            return;
                        }
                    }
                }
                None => {}
            }
        }
        // With no transaction coordinator left to end them (its partition leaderless as in
        // Kafka, `leaderless_as_in_kafka`: seed 1093 with `--min-insync-changes`), open
        // transactions hang as they would in Kafka.
        if self
            .plan
            .shape
            .txn_partition
            .is_some_and(|tp| self.leaderless_as_in_kafka(tp))
        {
            return;
        }
        // A transaction whose opening write a power loss voided (the coordinator's log lost
        // it, so no coordinator knows to end it) hangs as it would in Kafka, until an
        // operator aborts it (`kafka-transactions --find-hanging`).
        // A transaction whose first batch was acknowledged in the run's last
        // QUIET_BEFORE_END_MS is still in progress, not hanging: clients begin no transaction
        // then, but one already begun keeps retrying its AddPartitionsToTxn, and two of its
        // requests lost in a row hold it 6 s (seed 24194: added at 59.67 s of 60).
        let quiet_from = self.plan.shape.end.saturating_sub(QUIET_BEFORE_END_MS);
        // A transaction whose marker the leader already appended, above the high watermark,
        // is ending, not hanging: the coordinator did its part and the marker waits for
        // replication (a reassignment's new replicas still catching up under
        // min.insync.replicas kept the high watermark still for 20 s in seed 81383). Whether
        // the high watermark moves again is `liveness-no-acks-after-heal`'s to check.
        let marked_above_hw: Vec<i64> = self.b(leader).disks[&DATA_PARTITION]
            .log
            .batches()
            .iter()
            .filter(|b| b.end() > hw)
            .filter_map(|b| match self.txns.batches.get(&b.id) {
                Some(TxnBatch::Marker { pid, .. }) => Some(*pid),
                _ => None,
            })
            .collect();
        let open: Vec<(i64, (u64, i16, i64))> = open
            .into_iter()
            .filter(|(pid, _)| !marked_above_hw.contains(pid))
            .filter(|(pid, (first, epoch, _))| {
                let voided = self
                    .txns
                    .opened
                    .get(&(*pid, *epoch))
                    .is_some_and(|&w| self.exempt(w));
                let late = self.acked.get(first).is_some_and(|a| a.time >= quiet_from);
                !voided && !late
            })
            .collect();
        if let Some((pid, (first, epoch, base))) = open.into_iter().next() {
            let states: Vec<(String, Option<TxnState>)> = self
                .txns
                .clients
                .iter()
                .map(|c| {
                    let coordinator = self
                        .brokers
                        .iter()
                        .find_map(|b| b.txn.as_ref()?.txns.get(&c.tid).map(|m| m.state));
                    (c.tid.clone(), coordinator)
                })
                .collect();
            self.violate(
                "liveness-txn-hanging",
                format!("partition 0's final leader {leader} has producer {pid}'s transaction of epoch {epoch} open from offset {base} (batch {first}) below its high watermark {hw} at the end; coordinator states {states:?}"),
            );
        }
    }
}

/// Partition 0's leader as [`decide`] sees it: the broker's producer state, whether the
/// simulated log is offline, the replica's replication state.
struct SimLeader<'a> {
    producers: &'a mut ProducerStateManager,
    offline: bool,
    repl: &'a Replication,
}

impl LeaderLog for SimLeader<'_> {
    fn is_offline(&self) -> bool {
        self.offline
    }

    fn append_epoch(&self) -> Result<i32, E> {
        self.repl.append_epoch()
    }

    fn note_refused(&mut self, batch: &BatchHeader) {
        self.producers.note_refused(batch);
    }

    fn check_producer(
        &self,
        batch: &BatchHeader,
        verification: Option<u64>,
        require_verification: bool,
    ) -> Result<SequenceCheck, ProducerError> {
        self.producers
            .check(batch, verification, require_verification)
    }

    fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        bumps_epoch: bool,
    ) -> Result<(), ProducerError> {
        self.producers
            .check_marker(producer_id, epoch, coordinator_epoch, bumps_epoch)
    }
}
