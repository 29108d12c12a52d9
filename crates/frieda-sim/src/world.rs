//! The simulated world: one event queue on simulated time, a network that delays, drops,
//! duplicates and reorders messages and can be cut, brokers that run Frieda's replication rules
//! ([`frieda::replication`]) on simulated logs, the controller quorum deciding with
//! `frieda-meta`'s own functions on its own `MetadataImage`, and producer clients.
//!
//! Everything is driven by the plan's seed: the same seed runs the same events in the same order
//! (no threads, no wall clock, no hash-map iteration order), so a failing seed replays exactly.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use frieda::clock::{LeaseClock, LEASE_CLOCK};
use frieda::cluster::isr::alter_answer;
use frieda::membership::lease::Lease;
use frieda::replication::assignment::{host_step, step_down, take_role, HostStep, TakesRole};
use frieda::replication::fetch::{
    admit_follower_fetch, fetch_completes, read_follower_fetch, ServingReplica,
};
use frieda::replication::follower::{
    self, EpochEnd, NextRequest, PartitionFetch, Refused, Truncation,
};
use frieda::replication::{
    AckStatus, AlterAnswer, IsrChange, LagLimits, LogView, Replication, Role,
};
use frieda::storage::leader_append::{admit_produce, answer_produce};
use frieda::storage::topic_config::TopicConfigs;
use frieda_meta::controller::election;
use frieda_meta::housekeeping::{preferred_leader_elections, tick, Defaults};
use frieda_meta::leadership::plan_moves;
use frieda_meta::sessions::BrokerSessions;
use frieda_meta::{BrokerId, Heartbeat, MetaCommand, MetaError, MetadataImage, PartitionState};
use kafka_protocol::error::ResponseError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use uuid::Uuid;

use crate::disk::{Batch, DiskError, SimLog};
use crate::net::{FetchData, Msg, Node};
use crate::plan::{Action, Plan, Time};

/// The one topic of a simulated cluster.
pub const TOPIC: &str = "t";
/// `broker.heartbeat.interval.ms` in the simulation.
const HEARTBEAT_MS: Time = 250;
/// `broker.session.timeout.ms` in the simulation.
const SESSION_MS: Time = 3_000;
/// How often a broker pulls the metadata log (a Raft learner's fetch).
const META_PULL_MS: Time = 20;
/// How often a broker's fetchers look for partitions to fetch.
const FETCH_TICK_MS: Time = 5;
/// A replica fetch not answered within this is retried.
const FETCH_TIMEOUT_MS: Time = 1_000;
/// `replica.high.watermark.checkpoint.interval.ms`.
const HW_CHECKPOINT_MS: Time = 5_000;
/// `replica.lag.time.max.ms` / `replica.stall.max.ms` in the simulation.
const LIMITS: LagLimits = LagLimits {
    lag_max_ms: 10_000,
    stall_max_ms: 1_500,
};
/// The shrink check period (a quarter of the shorter limit, as the broker's).
const SHRINK_CHECK_MS: Time = 375;
/// How long an AlterPartition may wait for the controller (the broker's `ALTER_TIMEOUT`).
const ALTER_TIMEOUT_MS: Time = 5_000;
/// The produce request timeout (`request.timeout.ms` of the clients, shortened).
pub(crate) const PRODUCE_TIMEOUT_MS: Time = 5_000;
/// The controller's periodic work (session expiry).
const CONTROLLER_TICK_MS: Time = 200;
/// The simulated controller's static configuration as its tick records it: Kafka's defaults
/// (`unclean.leader.election.enable=false`, `replication.ack.policy=isr`,
/// `min.insync.replicas=1`); the topic sets its own policy and `min.insync.replicas`.
const CONTROLLER_DEFAULTS: Defaults = Defaults {
    unclean_leader_election: false,
    quorum_acks: false,
    min_insync_replicas: 1,
};
/// `replica.fetch.wait.max.ms`: a follower fetch with nothing to read waits this long for data.
const FETCH_WAIT_MAX_MS: Time = 500;

/// A broken invariant: when, which, and what was seen.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Simulated ms.
    pub time: Time,
    /// The invariant (stable name, for grouping and shrinking).
    pub kind: &'static str,
    /// What was seen.
    pub detail: String,
}

/// Counts of one run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Events processed.
    pub events: u64,
    /// Simulated ms run.
    pub sim_ms: Time,
    /// Produce requests sent.
    pub produced: u64,
    /// `acks=all` produce requests acknowledged.
    pub acked_all: u64,
    /// `acks=1` produce requests acknowledged.
    pub acked_one: u64,
    /// Fault and operator actions injected.
    pub faults: u64,
    /// Leader changes committed.
    pub elections: u64,
    /// ISR changes committed.
    pub isr_changes: u64,
    /// Leaders elected from the eligible leader replicas, the ISR being empty (KIP-966).
    pub elr_elections: u64,
    /// Leaders of `replication.ack.policy=quorum` partitions elected from the replicas' claims.
    pub claim_elections: u64,
    /// Follower truncations that removed records.
    pub truncations: u64,
    /// Copies to the simulated bucket finished (`COPY_FINISHED`).
    pub copies: u64,
    /// Remote tiers truncated by a leader whose log left the copies' lineage
    /// (`RemoteSegmentChange::Truncated`).
    pub remote_truncations: u64,
    /// Offset commits answered OK by a group coordinator (`crate::groups`).
    pub commits_ok: u64,
    /// Group coordinators loaded (a broker took the offsets partition's lead).
    pub coordinator_loads: u64,
    /// Share group acknowledgements answered OK (`crate::share`).
    pub share_acks_ok: u64,
    /// Transactions whose commit was written (PrepareCommit answered, `crate::txn`).
    pub txn_commits: u64,
    /// Transactions whose abort was written.
    pub txn_aborts: u64,
    /// Written decisions a power loss without fsync took from the coordinator's log (every
    /// write that carried them lost on its last copy; outside the contract).
    pub txn_decisions_voided: u64,
    /// KIP-890 verifications and adds partition 0's leaders asked of a coordinator
    /// (`crate::txn`).
    pub txn_verifications: u64,
    /// Adds (Produce v12+) asked again after CONCURRENT_TRANSACTIONS (`txn_verify::add_retry`).
    pub txn_add_retries: u64,
    /// Rounds of batches idempotent producers got answered OK (`crate::txn`).
    pub idempotent_rounds: u64,
    /// Epoch bumps of idempotent producers that gave a round up.
    pub idempotent_bumps: u64,
    /// Pipelined transactional produces that waited for an earlier one of their connection
    /// to decide its append (the produce-order rule at work).
    pub txn_waited_turns: u64,
    /// Messages dropped by the network (loss, cuts, dead receivers).
    pub dropped: u64,
    /// Acknowledged records whose guarantee a power loss voided (no fsync, last copy).
    pub voided: u64,
}

impl Stats {
    /// Adds `other`'s counts (totals over seeds).
    pub fn add(&mut self, other: &Stats) {
        self.events += other.events;
        self.sim_ms += other.sim_ms;
        self.produced += other.produced;
        self.acked_all += other.acked_all;
        self.acked_one += other.acked_one;
        self.faults += other.faults;
        self.elections += other.elections;
        self.isr_changes += other.isr_changes;
        self.elr_elections += other.elr_elections;
        self.claim_elections += other.claim_elections;
        self.truncations += other.truncations;
        self.copies += other.copies;
        self.remote_truncations += other.remote_truncations;
        self.commits_ok += other.commits_ok;
        self.coordinator_loads += other.coordinator_loads;
        self.share_acks_ok += other.share_acks_ok;
        self.txn_commits += other.txn_commits;
        self.txn_aborts += other.txn_aborts;
        self.txn_decisions_voided += other.txn_decisions_voided;
        self.txn_verifications += other.txn_verifications;
        self.txn_add_retries += other.txn_add_retries;
        self.idempotent_rounds += other.idempotent_rounds;
        self.idempotent_bumps += other.idempotent_bumps;
        self.txn_waited_turns += other.txn_waited_turns;
        self.dropped += other.dropped;
        self.voided += other.voided;
    }
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// The first broken invariant, if any.
    pub violation: Option<Violation>,
    /// Counts.
    pub stats: Stats,
    /// The run's log when tracing.
    pub trace: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) enum Event {
    Deliver {
        from: Node,
        to: Node,
        to_run: u32,
        msg: Msg,
    },
    Timer {
        broker: i32,
        run: u32,
        timer: Timer,
    },
    ControllerTick,
    CreateTopic,
    Plan(usize),
    Restart(i32),
    EndCut(u64),
    EndOutage,
    Stop {
        broker: i32,
        down: Time,
    },
    Kill {
        broker: i32,
        down: Time,
    },
    EndSlow(u64),
    Heal,
    /// An object-store request completes (`crate::tier`).
    StoreDone(u64),
    /// The transaction coordinator of producer id (`crate::groups`) writes its marker (again).
    TxnMarker(i64),
    /// A share group member acknowledges what broker `broker` gave it (`crate::share`).
    ShareAck {
        member: u8,
        broker: i32,
        acks: Vec<(i64, i64, frieda::coordinator::share::partition::AckType)>,
    },
    /// A share group member may send again.
    ShareMemberFree(u8),
    /// A transactional client's (re)send, unless a newer send superseded `attempt`
    /// (`crate::txn`).
    TxnClient {
        client: u8,
        attempt: u32,
    },
    /// Its answer reaches the broker that sent it.
    StoreReply {
        broker: i32,
        run: u32,
        op: u64,
        failed: bool,
        more: bool,
    },
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Timer {
    Heartbeat,
    MetaPull,
    FetchTick,
    ShrinkCheck,
    HwCheckpoint,
    Writeback,
    Flush(i32),
    AlterTimeout(u64),
    /// `remote.log.manager.task.interval.ms` (`crate::tier`).
    TierTick,
    /// Local retention of tiered replicas (`crate::tier`).
    LocalRetention,
    /// Share-partition lock expiry (`crate::share`).
    ShareExpire,
    /// The next attempt of a call to the share group's coordinator.
    ShareRetry,
    /// An attempt of a call to the share group's coordinator timed out (its request id).
    ShareTimeout(u64),
    /// The transaction coordinator's timeout check (`crate::txn`).
    TxnAbortCheck,
    /// A marker send of client `.0`'s transaction, attempt `.1`.
    TxnMarkers(u8, u32),
    /// The completion of client `.0`'s transaction written again, attempt `.1`.
    TxnComplete(u8, u32),
    /// A produce's verification (its request id) got no answer in time.
    TxnVerifyTimeout(u64),
    /// A produce's add answered CONCURRENT_TRANSACTIONS is asked again (the pause's id).
    TxnAddRetry(u64),
}

struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A partition's storage on one broker's disk (survives restarts).
#[derive(Debug, Default)]
pub(crate) struct Disk {
    pub(crate) log: SimLog,
    /// `replication-offset-checkpoint`'s entry (durable).
    pub(crate) checkpoint: Option<i64>,
    /// Offsets below this were checked against the agreed history.
    pub(crate) verified_upto: i64,
}

/// A follower's fetch state for one partition: the broker fetcher's own state machine
/// ([`PartitionFetch`]: truncate or fetch, where from, the back-off after a refusal) and what
/// the simulated transport adds (the request in flight, the pause between fetches, a flush the
/// next fetch waits for).
#[derive(Debug, Clone, Default)]
struct FetchState {
    state: PartitionFetch,
    inflight: Option<(u64, Time)>,
    next_at: Time,
    flushing: bool,
}

pub(crate) struct Replica {
    pub(crate) repl: Replication,
    fetch: FetchState,
    pub(crate) last_epoch: i32,
    pub(crate) last_partition_epoch: i32,
    pub(crate) last_leader_hw: Option<(i32, i64)>,
}

impl Replica {
    /// Its log was started again at its log end (`crate::tier`): fetch from there, no
    /// truncation first.
    pub(crate) fn fetch_starts_again(&mut self) {
        self.fetch = FetchState {
            state: PartitionFetch::started_again(),
            ..FetchState::default()
        };
    }
}

/// What the checks see of an acknowledged produce.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingRef {
    pub(crate) id: u64,
    pub(crate) partition: i32,
    pub(crate) base: i64,
    pub(crate) acks: i16,
}

/// A batch a leader appends and then waits for ([`World::append_pending`]).
pub(crate) struct Appending {
    /// The request (and batch) id.
    pub(crate) req: u64,
    /// -1 or 1.
    pub(crate) acks: i16,
    /// Records.
    pub(crate) count: i64,
    /// How long the acknowledgement may take, ms.
    pub(crate) timeout: Time,
    /// A group coordinator's write, of that load.
    pub(crate) coordinator: Option<u64>,
    /// A transaction marker: producer id, commit.
    pub(crate) marker: Option<(i64, bool)>,
    /// A transactional batch or marker of partition 0, answered once acknowledged
    /// (`crate::txn`).
    pub(crate) reply: Option<crate::txn::Reply>,
}

/// A follower fetch the leader holds until data arrives (a long poll).
#[derive(Debug, Clone)]
struct Parked {
    replica: i32,
    req: u64,
    partition: i32,
    offset: i64,
    deadline: Time,
    /// The leader epoch the fetch was admitted in.
    epoch: i32,
}

#[derive(Debug, Clone)]
struct Pending {
    req: u64,
    partition: i32,
    acks: i16,
    batch: Batch,
    epoch: i32,
    deadline: Time,
    flushed: bool,
    /// A group coordinator's write, of that load (`crate::groups`): its outcome lands in the
    /// coordinator's state.
    coordinator: Option<u64>,
    /// A transaction marker (producer id, commit) written to the offsets partition: its
    /// outcome lands in whichever coordinator is loaded (`GroupCoordinators::land_marker`).
    marker: Option<(i64, bool)>,
    /// A transactional batch or marker of partition 0 (`crate::txn`).
    reply: Option<crate::txn::Reply>,
}

pub(crate) struct Broker {
    pub(crate) id: i32,
    pub(crate) up: bool,
    pub(crate) run: u32,
    pub(crate) incarnation: Uuid,
    paused_until: Time,
    suspended_ms: Time,
    pub(crate) image: MetadataImage,
    ready: bool,
    fenced: bool,
    shutting_down: bool,
    /// The topic's `min.insync.replicas` as this broker applies it: from the topic configs of
    /// its image, computed by the broker's own `TopicConfigs::produce_policy` (set on each
    /// replica's `Replication` and used to admit and acknowledge `acks=all` produces).
    pub(crate) min_insync: usize,
    /// Its previous run ended in a controlled shutdown (the clean-shutdown marker): said when
    /// it registers, or it leaves every ELR.
    previous_run_clean: bool,
    last_answer: Time,
    pub(crate) lease: Lease,
    pending_renew: Option<(u64, u64, bool, Time)>,
    pub(crate) replicas: BTreeMap<i32, Replica>,
    pub(crate) disks: BTreeMap<i32, Disk>,
    pub(crate) next_req: u64,
    pending: Vec<Pending>,
    parked: Vec<Parked>,
    alters: BTreeMap<u64, (i32, IsrChange)>,
    /// The copy tasks of the tiered partitions it leads (`crate::tier`).
    pub(crate) tier: BTreeMap<i32, crate::tier::TierSlot>,
    /// The group coordinator it runs while it leads the offsets partition (`crate::groups`).
    pub(crate) groups: Option<crate::groups::SimCoordinator>,
    /// The share-partition it keeps while it leads the share group's partition
    /// (`crate::share`).
    pub(crate) share: Option<crate::share::ShareSlot>,
    /// The transaction coordinator it runs while it leads the transaction state partition
    /// (`crate::txn`).
    pub(crate) txn: Option<crate::txn::SimTxnCoordinator>,
    /// Its producer state of partition 0 while it leads it (`crate::txn`).
    pub(crate) producers: Option<frieda_log::ProducerStateManager>,
    /// Transactional clients' connections its read loop serves (`crate::txn`), by id.
    pub(crate) produce_conns: BTreeMap<u64, crate::txn::ProduceConn>,
    /// Its produces waiting for the transaction coordinator's verification, by the
    /// verification's request id (`crate::txn`).
    pub(crate) verifying: BTreeMap<u64, crate::txn::Verifying>,
    /// Its produces whose add was answered CONCURRENT_TRANSACTIONS, pausing before they ask
    /// again (`txn_verify::add_retry`), by the pause's id (`crate::txn`).
    pub(crate) add_retries: BTreeMap<u64, crate::txn::Verifying>,
}

impl Broker {
    /// Whether it asked the controller to let it go (controlled shutdown).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }
}

pub(crate) struct Controller {
    pub(crate) image: MetadataImage,
    log: Vec<MetaCommand>,
    /// Broker sessions and quorum-partition claims: the controller's own sans-IO type.
    sessions: BrokerSessions,
    out_until: Time,
}

/// An acknowledged produce.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Acked {
    pub(crate) partition: i32,
    pub(crate) base: i64,
    pub(crate) acks: i16,
    pub(crate) time: Time,
}

/// One simulated cluster run.
pub struct World {
    pub(crate) plan: Plan,
    pub(crate) now: Time,
    seq: u64,
    queue: BinaryHeap<Entry>,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) brokers: Vec<Broker>,
    pub(crate) controller: Controller,
    cuts: BTreeMap<u64, (Vec<i32>, bool)>,
    next_cut: u64,
    /// Slow links: broker and added delay, by id.
    slow: BTreeMap<u64, (i32, Time)>,
    /// KillLeaderTwice waiting for the next leader: partition, the epoch it waits past, gap, down.
    leader_watch: Vec<(i32, i32, Time, Time)>,
    next_produce: u64,
    pub(crate) acked: BTreeMap<u64, Acked>,
    /// The ids of `acked` in the order they were acknowledged.
    pub(crate) acked_order: Vec<u64>,
    /// `check_latest_offset`'s progress per (broker, partition): the served offset checked,
    /// and how much of `acked_order` it covered.
    pub(crate) latest_checked: BTreeMap<(i32, i32), (i64, usize)>,
    pub(crate) voided: BTreeSet<u64>,
    /// Batches some broker lost in a power loss without fsync, and which brokers.
    pub(crate) power_lost: BTreeMap<u64, BTreeSet<i32>>,
    ignored: Vec<String>,
    pub(crate) disagreement_allowed: BTreeSet<i32>,
    /// Partitions whose ELR (and last known ELR) an operator's min.insync.replicas change
    /// cleared while their ISR was empty (KAFKA-16540's ClearElrRecord): no replica may lead
    /// cleanly any more, in Kafka 4.4 as in Frieda, so `liveness-no-leader` exempts them.
    pub(crate) elr_cleared: BTreeSet<i32>,
    pub(crate) history: Vec<BTreeMap<i64, Batch>>,
    pub(crate) violation: Option<Violation>,
    pub(crate) stats: Stats,
    pub(crate) trace: Option<Vec<String>>,
    healed: bool,
    /// The object store of tiered runs.
    pub(crate) store: crate::tier::SimStore,
    /// Offset commits written and answered (`crate::groups`).
    pub(crate) commits: crate::groups::Commits,
    /// The share group's deliveries and acknowledgements (`crate::share`).
    pub(crate) shares: crate::share::Shares,
    /// The transactions (`crate::txn`).
    pub(crate) txns: crate::txn::Txns,
}

impl World {
    /// A world for `plan`, tracing its events when `trace`.
    pub fn new(plan: Plan, trace: bool) -> World {
        let rng = ChaCha8Rng::seed_from_u64(plan.seed ^ 0x5EED_F00D_D15C_0B0B);
        let n = plan.shape.partitions as usize;
        let mut w = World {
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            rng,
            brokers: Vec::new(),
            controller: Controller {
                image: MetadataImage::default(),
                log: Vec::new(),
                sessions: BrokerSessions::default(),
                out_until: 0,
            },
            cuts: BTreeMap::new(),
            next_cut: 0,
            slow: BTreeMap::new(),
            leader_watch: Vec::new(),
            next_produce: 1,
            acked: BTreeMap::new(),
            voided: BTreeSet::new(),
            power_lost: BTreeMap::new(),
            ignored: Vec::new(),
            disagreement_allowed: BTreeSet::new(),
            elr_cleared: BTreeSet::new(),
            history: vec![BTreeMap::new(); n],
            violation: None,
            stats: Stats::default(),
            trace: trace.then(Vec::new),
            healed: false,
            store: Default::default(),
            commits: Default::default(),
            acked_order: Vec::new(),
            latest_checked: BTreeMap::new(),
            shares: Default::default(),
            txns: Default::default(),
            plan,
        };
        for id in 1..=w.plan.shape.brokers {
            w.brokers.push(Broker {
                id,
                up: false,
                run: 0,
                incarnation: Uuid::nil(),
                paused_until: 0,
                suspended_ms: 0,
                image: MetadataImage::default(),
                ready: false,
                fenced: true,
                shutting_down: false,
                min_insync: w.plan.shape.min_isr,
                previous_run_clean: true,
                last_answer: 0,
                lease: Lease::new(),
                pending_renew: None,
                replicas: BTreeMap::new(),
                disks: BTreeMap::new(),
                next_req: 0,
                pending: Vec::new(),
                parked: Vec::new(),
                alters: BTreeMap::new(),
                tier: BTreeMap::new(),
                groups: None,
                share: None,
                txn: None,
                producers: None,
                produce_conns: BTreeMap::new(),
                verifying: BTreeMap::new(),
                add_retries: BTreeMap::new(),
            });
            w.start_broker(id);
        }
        w.txn_start();
        w.push(CONTROLLER_TICK_MS, Event::ControllerTick);
        w.push(1_000, Event::CreateTopic);
        for i in 0..w.plan.actions.len() {
            let t = w.plan.actions[i].0;
            w.push(t, Event::Plan(i));
        }
        let heal = w.plan.shape.heal;
        w.push(heal, Event::Heal);
        w
    }

    /// Runs to the end (or the first violation) and reports.
    pub fn run(mut self) -> Report {
        let end = self.plan.shape.end;
        while let Some(e) = self.queue.pop() {
            if e.time > end {
                break;
            }
            self.now = e.time;
            self.stats.events += 1;
            self.handle(e.event);
            if self.violation.is_none() {
                self.check_step();
            }
            if self.violation.is_some() {
                break;
            }
        }
        if self.violation.is_none() {
            self.now = end;
            self.check_end();
        }
        self.stats.sim_ms = self.now;
        self.stats.txn_commits = self.txns.commits;
        self.stats.txn_aborts = self.txns.aborts;
        self.stats.txn_decisions_voided = self.txns.voided_decisions();
        self.stats.txn_verifications = self.txns.verifications;
        self.stats.txn_add_retries = self.txns.add_retries;
        self.stats.idempotent_rounds = self.txns.idempotent_rounds;
        self.stats.idempotent_bumps = self.txns.idempotent_bumps;
        self.stats.txn_waited_turns = self.txns.waited_turns;
        Report {
            seed: self.plan.seed,
            violation: self.violation,
            stats: self.stats,
            trace: self.trace.unwrap_or_default(),
        }
    }

    pub(crate) fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            let l = line();
            t.push(format!("{:>6} {l}", self.now));
        }
    }

    pub(crate) fn violate(&mut self, kind: &'static str, detail: String) {
        if self.ignored.iter().any(|k| k == kind) {
            return;
        }
        if self.violation.is_none() {
            self.log(|| format!("VIOLATION {kind}: {detail}"));
            self.violation = Some(Violation {
                time: self.now,
                kind,
                detail,
            });
        }
    }

    pub(crate) fn push(&mut self, at: Time, event: Event) {
        self.seq += 1;
        self.queue.push(Entry {
            time: at,
            seq: self.seq,
            event,
        });
    }

    pub(crate) fn after(&mut self, delay: Time, event: Event) {
        let at = self.now + delay;
        self.push(at, event);
    }

    pub(crate) fn b(&self, id: i32) -> &Broker {
        &self.brokers[(id - 1) as usize]
    }

    pub(crate) fn bm(&mut self, id: i32) -> &mut Broker {
        &mut self.brokers[(id - 1) as usize]
    }

    pub(crate) fn timer(&mut self, broker: i32, delay: Time, timer: Timer) {
        let run = self.b(broker).run;
        self.after(delay, Event::Timer { broker, run, timer });
    }

    // ------------------------------------------------------------------ network

    fn cut_between(&self, a: Node, b: Node) -> bool {
        let side_of = |n: Node, side: &[i32]| match n {
            Node::Broker(id) => side.contains(&id),
            _ => false,
        };
        self.cuts.values().any(|(side, with_controller)| {
            let (ia, ib) = (side_of(a, side), side_of(b, side));
            match (a, b) {
                (Node::Controller, _) | (_, Node::Controller) => *with_controller && (ia || ib),
                (Node::Client, _) | (_, Node::Client) => false,
                _ => ia != ib,
            }
        })
    }

    fn run_of(&self, n: Node) -> u32 {
        match n {
            Node::Broker(id) => self.b(id).run,
            _ => 0,
        }
    }

    /// Sends `msg`: delayed 0-3 ms (sometimes 10-60 ms, reordering it), sometimes lost or
    /// delivered twice; dropped on a cut link.
    pub(crate) fn send(&mut self, from: Node, to: Node, msg: Msg) {
        if self.cut_between(from, to) {
            self.stats.dropped += 1;
            return;
        }
        let roll: f64 = self.rng.gen();
        if roll < 0.003 {
            self.stats.dropped += 1;
            self.log(|| format!("the network loses a message from {from:?} to {to:?}: {msg:?}"));
            self.share_call_broken(from, to, &msg);
            return;
        }
        let to_run = self.run_of(to);
        let slow = self
            .slow
            .values()
            .filter(|(b, _)| from == Node::Broker(*b) || to == Node::Broker(*b))
            .map(|(_, extra)| *extra)
            .max()
            .unwrap_or(0);
        let delay = slow
            + if self.rng.gen_bool(0.03) {
                self.rng.gen_range(10..60)
            } else {
                self.rng.gen_range(0..=3)
            };
        if roll > 0.997 {
            let again = delay + self.rng.gen_range(1..80);
            self.after(
                again,
                Event::Deliver {
                    from,
                    to,
                    to_run,
                    msg: msg.clone(),
                },
            );
        }
        self.after(
            delay,
            Event::Deliver {
                from,
                to,
                to_run,
                msg,
            },
        );
    }

    /// A share-state call's request or answer lost on a connection that is not cut off: the
    /// connection broke, and the share-partition leader that called sees it at once (an I/O
    /// error, `share_state::io_error`: COORDINATOR_NOT_AVAILABLE, retried) instead of waiting
    /// out its 10-s attempt timeout; a network cut still leaves it to the timeout. Without
    /// this, two lost answers in a row after healing held the group for 20 s (seeds 10779,
    /// 11823: `liveness-share-group-stuck`).
    fn share_call_broken(&mut self, from: Node, to: Node, msg: &Msg) {
        let (caller, peer, req) = match *msg {
            Msg::ShareWrite { req } | Msg::ShareRead { req, .. } => (from, to, req),
            Msg::ShareReply { req, .. } => (to, from, req),
            _ => return,
        };
        let to_run = self.run_of(caller);
        self.after(
            1,
            Event::Deliver {
                from: peer,
                to: caller,
                to_run,
                msg: Msg::ShareReply {
                    req,
                    result: Err(ResponseError::CoordinatorNotAvailable),
                },
            },
        );
    }

    // ------------------------------------------------------------------ events

    fn handle(&mut self, event: Event) {
        // A paused (or suspended) broker runs nothing until it resumes; its events wait.
        let target = match &event {
            Event::Deliver {
                to: Node::Broker(id),
                ..
            } => Some(*id),
            Event::Timer { broker, .. } => Some(*broker),
            Event::StoreReply { broker, .. } => Some(*broker),
            _ => None,
        };
        if let Some(id) = target {
            let b = self.b(id);
            if b.up && b.paused_until > self.now {
                let at = b.paused_until;
                self.push(at, event);
                return;
            }
        }
        match event {
            Event::Deliver {
                from,
                to,
                to_run,
                msg,
            } => self.deliver(from, to, to_run, msg),
            Event::Timer { broker, run, timer } => {
                let b = self.b(broker);
                if b.up && b.run == run {
                    self.on_timer(broker, timer);
                }
            }
            Event::ControllerTick => {
                self.controller_tick();
                self.after(CONTROLLER_TICK_MS, Event::ControllerTick);
            }
            Event::CreateTopic => self.create_topic(),
            Event::Plan(i) => {
                let action = self.plan.actions[i].1.clone();
                if !self.healed || action.is_client_request() {
                    self.act(action);
                }
            }
            Event::Restart(id) => {
                if !self.b(id).up {
                    self.start_broker(id);
                }
            }
            Event::EndCut(c) => {
                if self.cuts.remove(&c).is_some() {
                    self.log(|| format!("network cut {c} healed"));
                }
            }
            Event::EndOutage => self.end_outage(),
            Event::Stop { broker, down } => {
                if self.b(broker).up && self.b(broker).shutting_down {
                    self.stop_broker(broker, false, true);
                    self.after(down, Event::Restart(broker));
                }
            }
            Event::Kill { broker, down } => {
                if self.b(broker).up && !self.healed {
                    self.log(|| format!("nemesis kills broker {broker}, the new leader"));
                    self.stop_broker(broker, false, false);
                    self.after(down, Event::Restart(broker));
                }
            }
            Event::EndSlow(id) => {
                self.slow.remove(&id);
            }
            Event::Heal => self.heal(),
            Event::StoreDone(op) => self.store_done(op),
            Event::TxnMarker(pid) => self.send_txn_marker(pid),
            Event::ShareAck {
                member,
                broker,
                acks,
            } => self.send_share_ack(member, broker, acks),
            Event::ShareMemberFree(m) => self.share_member_free(m),
            Event::TxnClient { client, attempt } => self.txn_client_timer(client, attempt),
            Event::StoreReply {
                broker,
                run,
                op,
                failed,
                more,
            } => {
                let b = self.b(broker);
                if b.up && b.run == run {
                    self.store_reply(broker, op, failed, more);
                }
            }
        }
    }

    fn deliver(&mut self, from: Node, to: Node, to_run: u32, msg: Msg) {
        match to {
            Node::Controller => {
                if self.controller.out_until > self.now {
                    self.stats.dropped += 1;
                    return;
                }
                self.controller_receive(from, msg);
            }
            Node::Broker(id) => {
                let b = self.b(id);
                if !b.up || b.run != to_run {
                    self.stats.dropped += 1;
                    return;
                }
                self.broker_receive(id, from, msg);
            }
            Node::Client => {
                if let Msg::TxnReply { req, result } = msg {
                    self.txn_client_reply(req, result);
                }
            }
        }
    }

    fn act(&mut self, action: Action) {
        if !action.is_client_request() {
            self.stats.faults += 1;
            let a = action.clone();
            self.log(|| format!("FAULT {a:?}"));
        }
        match action {
            Action::Produce {
                partition,
                acks,
                count,
                stale,
            } => self.produce(partition, acks, count, stale),
            Action::Commit { group, key, stale } => self.offset_commit(group, key, stale),
            Action::TxnCommit { group, key, abort } => self.txn_offset_commit(group, key, abort),
            Action::ShareFetch { member } => self.share_fetch(member),
            Action::Crash { broker, down } => {
                if self.b(broker).up {
                    self.stop_broker(broker, false, false);
                    self.after(down, Event::Restart(broker));
                }
            }
            Action::PowerLoss { broker, down } => {
                if self.b(broker).up {
                    self.stop_broker(broker, true, false);
                } else {
                    self.power_loss(broker);
                }
                self.after(down, Event::Restart(broker));
            }
            Action::Pause { broker, len } => {
                let now = self.now;
                let b = self.bm(broker);
                if b.up {
                    b.paused_until = b.paused_until.max(now + len);
                }
            }
            Action::Suspend { broker, len } => {
                let now = self.now;
                let b = self.bm(broker);
                if b.up {
                    b.paused_until = b.paused_until.max(now + len);
                    b.suspended_ms += len;
                }
            }
            Action::Shutdown { broker, down } => {
                if self.b(broker).up && !self.b(broker).shutting_down {
                    self.bm(broker).shutting_down = true;
                    self.send_heartbeat(broker);
                    self.after(300, Event::Stop { broker, down });
                }
            }
            Action::Partition {
                side,
                with_controller,
                len,
            } => {
                let c = self.next_cut;
                self.next_cut += 1;
                self.cuts.insert(c, (side, with_controller));
                self.after(len, Event::EndCut(c));
            }
            Action::ControllerOutage { len } => {
                self.controller.out_until = self.controller.out_until.max(self.now + len);
                self.after(len, Event::EndOutage);
            }
            Action::SlowLink { broker, extra, len } => {
                let id = self.next_cut;
                self.next_cut += 1;
                self.slow.insert(id, (broker, extra));
                self.after(len, Event::EndSlow(id));
            }
            Action::KillLeaderTwice {
                partition,
                gap,
                down,
            } => {
                if let Some(p) = self.controller.image.partition(TOPIC, partition).cloned() {
                    if p.leader > 0 && self.b(p.leader).up {
                        self.log(|| {
                            format!(
                                "nemesis kills broker {}, leader of partition {partition}",
                                p.leader
                            )
                        });
                        self.stop_broker(p.leader, false, false);
                        self.after(down, Event::Restart(p.leader));
                        self.leader_watch
                            .push((partition, p.leader_epoch, gap, down));
                    }
                }
            }
            Action::FsyncFailure { broker, partition } => {
                if let Some(d) = self.bm(broker).disks.get_mut(&partition) {
                    d.log.fail_next_sync();
                }
            }
            Action::AlterMinInsync { value } => {
                let configs = self.controller.image.topics.get(TOPIC).map(|t| {
                    let mut c = t.configs.clone();
                    c.insert("min.insync.replicas".to_string(), value.to_string());
                    c
                });
                if let Some(configs) = configs.filter(|_| self.controller.out_until <= self.now) {
                    self.log(|| format!("operator: min.insync.replicas={value}"));
                    let isr_empty_with_elr = |w: &World| -> BTreeSet<i32> {
                        (0..w.plan.shape.partitions)
                            .filter(|p| {
                                w.controller.image.partition(TOPIC, *p).is_some_and(|s| {
                                    s.isr.is_empty()
                                        && !(s.elr.is_empty() && s.last_known_elr.is_empty())
                                })
                            })
                            .collect()
                    };
                    let before = isr_empty_with_elr(self);
                    let _ = self.commit(MetaCommand::SetTopicConfigs {
                        name: TOPIC.into(),
                        configs,
                    });
                    for p in before {
                        let cleared = self.controller.image.partition(TOPIC, p).is_some_and(|s| {
                            s.isr.is_empty() && s.elr.is_empty() && s.last_known_elr.is_empty()
                        });
                        if cleared {
                            self.log(|| format!("partition {p}: the change cleared the ELR of an empty ISR; no clean leader is left (Kafka's ClearElrRecord)"));
                            self.elr_cleared.insert(p);
                        }
                    }
                }
            }
            Action::RebalanceLeaders => {
                if self.controller.out_until <= self.now {
                    let imbalances = preferred_leader_elections(&self.controller.image, 10);
                    for i in imbalances {
                        self.log(|| format!("controller: leader rebalance {i:?}"));
                        for (topic, partition) in i.partitions {
                            let _ = self.commit(MetaCommand::ElectLeader {
                                topic,
                                partition,
                                leader: i.broker,
                                unclean: false,
                            });
                        }
                    }
                }
            }
            Action::ElectPreferred { partition } => {
                if self.controller.out_until <= self.now {
                    if let Ok(cmd) = election(&self.controller.image, TOPIC, partition, true) {
                        let _ = self.commit(cmd);
                    }
                }
            }
            Action::PlaceLeaders { costs } => {
                if self.controller.out_until <= self.now {
                    let costs = (1..).zip(costs).collect();
                    for m in plan_moves(&self.controller.image, &costs, 60) {
                        self.log(|| format!("controller: leader placement {m:?}"));
                        let _ = self.commit(MetaCommand::ElectLeader {
                            topic: m.topic,
                            partition: m.partition,
                            leader: m.to,
                            unclean: false,
                        });
                    }
                }
            }
            Action::StoreStall { len } => {
                self.store.stall_until = self.store.stall_until.max(self.now + len);
            }
            Action::StoreErrors { len } => {
                self.store.errors_until = self.store.errors_until.max(self.now + len);
            }
            Action::CrashLeader { partition, down } => {
                if let Some(p) = self.controller.image.partition(TOPIC, partition).cloned() {
                    if p.leader > 0 && self.b(p.leader).up {
                        self.stop_broker(p.leader, false, false);
                        self.after(down, Event::Restart(p.leader));
                    }
                }
            }
            Action::Reassign { partition, target } => {
                if self.controller.out_until <= self.now {
                    let _ = self.commit(MetaCommand::Reassign {
                        topic: TOPIC.into(),
                        partition,
                        target,
                    });
                }
            }
        }
    }

    fn heal(&mut self) {
        self.healed = true;
        self.log(|| "HEAL: every fault ends".into());
        self.cuts.clear();
        self.slow.clear();
        self.leader_watch.clear();
        self.store.stall_until = self.store.stall_until.min(self.now);
        self.store.errors_until = self.store.errors_until.min(self.now);
        if self.controller.out_until > self.now {
            self.controller.out_until = self.now;
            self.end_outage();
        }
        for id in 1..=self.plan.shape.brokers {
            let now = self.now;
            let b = self.bm(id);
            for d in b.disks.values_mut() {
                d.log.heal();
            }
            if b.up && b.disks.values().any(|d| d.log.is_offline()) {
                // Its disk failed: the operator restarts it (Kafka halts a broker whose only
                // log directory failed), which recovers the logs.
                self.stop_broker(id, false, false);
                self.start_broker(id);
            } else if b.up {
                b.paused_until = b.paused_until.min(now);
            } else {
                self.start_broker(id);
            }
        }
        // Settle: a few produce requests after the faults, so every partition has a record
        // written by its final leader.
        let settle = self.plan.shape.end.saturating_sub(self.now + 4_000) / 1_000;
        for p in 0..self.plan.shape.partitions {
            for i in 0..settle {
                let at = self.now + 3_000 + i * 1_000;
                let idx = self.plan.actions.len();
                let action = if Some(p) == self.offsets_partition() {
                    Action::Commit {
                        group: (i % 3) as u8,
                        key: (i % 4) as u8,
                        stale: false,
                    }
                } else {
                    Action::Produce {
                        partition: p,
                        acks: -1,
                        count: 1,
                        stale: false,
                    }
                };
                self.plan.actions.push((at, action));
                self.push(at, Event::Plan(idx));
            }
        }
    }

    // ------------------------------------------------------------------ brokers: lifecycle

    fn start_broker(&mut self, id: i32) {
        let incarnation = Uuid::from_u128(self.rng.gen());
        let now = self.now;
        let b = self.bm(id);
        b.up = true;
        b.run += 1;
        b.incarnation = incarnation;
        b.paused_until = 0;
        b.image = MetadataImage::default();
        b.ready = false;
        b.fenced = true;
        b.shutting_down = false;
        b.last_answer = now;
        b.lease = Lease::new();
        b.pending_renew = None;
        b.replicas.clear();
        b.pending.clear();
        b.parked.clear();
        b.alters.clear();
        b.tier.clear();
        b.groups = None;
        b.share = None;
        b.txn = None;
        b.producers = None;
        b.produce_conns.clear();
        b.verifying.clear();
        b.add_retries.clear();
        for d in b.disks.values_mut() {
            d.log.restart();
        }
        self.log(|| format!("broker {id} starts (incarnation {incarnation})"));
        self.timer(id, 0, Timer::Heartbeat);
        self.timer(id, 0, Timer::MetaPull);
        self.timer(id, FETCH_TICK_MS, Timer::FetchTick);
        self.timer(id, SHRINK_CHECK_MS, Timer::ShrinkCheck);
        self.timer(id, HW_CHECKPOINT_MS, Timer::HwCheckpoint);
        let wb = self.rng.gen_range(500..5_000);
        self.timer(id, wb, Timer::Writeback);
        self.tier_start(id);
        if self.plan.shape.share {
            self.timer(id, crate::share::EXPIRE_EVERY_MS, Timer::ShareExpire);
        }
        if self.txn_run() {
            self.timer(id, crate::txn::ABORT_CHECK_MS, Timer::TxnAbortCheck);
        }
    }

    /// The process stops: a crash (page cache kept), a power loss (`power`: unsynced writes
    /// gone), or the end of a controlled shutdown (`clean`: logs flushed, checkpoint written).
    fn stop_broker(&mut self, id: i32, power: bool, clean: bool) {
        if clean {
            self.write_hw_checkpoint(id);
            for d in self.bm(id).disks.values_mut() {
                let _ = d.log.sync();
            }
        }
        let b = self.bm(id);
        b.up = false;
        b.previous_run_clean = clean;
        b.replicas.clear();
        b.pending.clear();
        b.parked.clear();
        b.alters.clear();
        b.tier.clear();
        b.groups = None;
        b.share = None;
        b.txn = None;
        b.producers = None;
        b.produce_conns.clear();
        b.verifying.clear();
        b.add_retries.clear();
        self.log(|| format!("broker {id} stops (power loss: {power}, clean: {clean})"));
        self.share_peer_stopped(id);
        if power {
            self.power_loss(id);
        }
    }

    fn power_loss(&mut self, id: i32) {
        let parts: Vec<i32> = self.b(id).disks.keys().copied().collect();
        for p in parts {
            let lost = {
                let d = self.bm(id).disks.get_mut(&p).expect("listed");
                let lost = d.log.power_loss();
                d.verified_upto = d.verified_upto.min(d.log.leo());
                lost
            };
            self.on_lost(id, p, &lost);
        }
    }

    /// Batches `lost` from `broker`'s replica of `p` in a power loss.
    ///
    /// With `flush.messages=1` nothing acknowledged may depend on unsynced data: losing the last
    /// in-sync copy of an acknowledged batch is a violation. Without fsync, Kafka's contract
    /// counts a replica's page cache as its copy and a power loss as the loss of that replica:
    /// a lost batch still counts as that replica's copy for the acknowledgement check, is exempt
    /// from the survival checks, and if some replica had counted it below its high watermark,
    /// the partition's replicas may disagree from then on (an in-sync replica that lost data
    /// can still be elected: Kafka before KIP-966 does the same).
    fn on_lost(&mut self, broker: i32, p: i32, lost: &[u64]) {
        if lost.is_empty() {
            return;
        }
        if !self.plan.shape.fsync {
            // Its progress before the loss may still count on the leader, so records it lost can
            // pass the high watermark later: replicas may disagree from now on.
            self.disagreement_allowed.insert(p);
            for id in lost {
                self.power_lost.entry(*id).or_default().insert(broker);
                if self.acked.get(id).is_some_and(|a| a.acks == -1) && self.voided.insert(*id) {
                    self.stats.voided += 1;
                }
            }
            self.log(|| format!("broker {broker} lost {} unsynced batches of partition {p} (no fsync: outside the contract)", lost.len()));
            return;
        }
        // The replicas that may lead: the ISR, the ELR and the last known leader (KIP-966).
        let isr: Vec<i32> = self
            .controller
            .image
            .partition(TOPIC, p)
            .map(|s| {
                s.isr
                    .iter()
                    .chain(&s.elr)
                    .chain(&s.last_known_elr)
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        for id in lost {
            let Some(a) = self.acked.get(id).copied() else {
                continue;
            };
            if a.acks != -1 {
                continue;
            }
            let elsewhere = isr.iter().any(|&c| {
                c != broker
                    && self
                        .b(c)
                        .disks
                        .get(&p)
                        .is_some_and(|d| d.log.find(*id).is_some() && d.log.is_synced(*id))
            });
            // A finished copy in the bucket holds it too: the other replicas may have applied
            // local retention to it (frieda-sim seed 1015 flagged that, a false alarm).
            if !elsewhere && !self.remotely_held(p, a.base, *id) {
                self.violate(
                    "fsync-acked-record-lost-in-power-loss",
                    format!(
                        "partition {p}: acknowledged batch {id} (base {}) was unsynced on broker {broker}, its last in-sync copy, with flush.messages=1",
                        a.base
                    ),
                );
            }
        }
    }

    /// Whether acknowledged batch `id` is exempt from the survival checks.
    pub(crate) fn exempt(&self, id: u64) -> bool {
        self.voided.contains(&id) || self.power_lost.contains_key(&id)
    }

    /// Ignores violations of `kinds` (to look past a known defect for the next one).
    pub fn ignore(mut self, kinds: &[String]) -> World {
        self.ignored = kinds.to_vec();
        self
    }

    /// Turns the broker's produce-order rule off (`frieda::handlers::produce_order`): a
    /// connection's transactional produces decide their appends as their verifications come
    /// back, as before issue 57's fix of defect 3. The mutation test of the rule: the check
    /// `txn-produce-out-of-order` must find it.
    pub fn without_produce_order(mut self) -> World {
        self.txns.produce_order_off = true;
        self
    }

    /// Lets partition 0's leader append the first batch of a Produce v12+ transaction without
    /// asking the coordinator to add the partition (KIP-890 part 2 skipped): the mutation test
    /// of the add; the transaction checks must find the batch the coordinator never heard of.
    pub fn without_leader_add(mut self) -> World {
        self.txns.leader_add_off = true;
        self
    }

    /// Answers a producer's duplicate batch with its original's offset at once, without
    /// waiting for the original to be acknowledged (the mutation test of that wait: the check
    /// `producer-ack-lost` must find it).
    pub fn answer_duplicates_at_once(mut self) -> World {
        self.txns.duplicates_at_once = true;
        self
    }

    fn end_outage(&mut self) {
        if self.controller.out_until > self.now {
            return;
        }
        // A new active controller: every registered broker gets a whole session.
        let now = self.now;
        let c = &mut self.controller;
        c.sessions.new_term(&c.image, now);
        self.log(|| "controller available again (new term)".into());
    }

    // ------------------------------------------------------------------ controller

    pub(crate) fn commit(
        &mut self,
        cmd: MetaCommand,
    ) -> Result<frieda_meta::MetaOutcome, MetaError> {
        let before = self.controller.image.clone();
        let offset = self.controller.log.len() as u64 + 1;
        let result = self.controller.image.apply(&cmd, offset);
        self.controller.log.push(cmd.clone());
        // A refusal can change the image too (an ineligible ISR change moves the partition
        // epoch on): the invariants are checked either way.
        self.note_image_change(&before);
        let c = cmd.clone();
        if result.is_ok() && matches!(c, MetaCommand::ElectFromClaims { .. }) {
            self.stats.claim_elections += 1;
        }
        match &result {
            Ok(_) => self.log(|| format!("controller commits {offset}: {}", brief(&c))),
            Err(e) => {
                let e = e.clone();
                self.log(|| format!("controller refuses {offset}: {} ({e})", brief(&c)))
            }
        }
        result
    }

    fn note_image_change(&mut self, before: &MetadataImage) {
        let Some(new) = self.controller.image.topics.get(TOPIC).cloned() else {
            return;
        };
        for (i, n) in new.partitions.iter().enumerate() {
            let replicas: Vec<BrokerId> = n.replicas.iter().chain(&n.adding).copied().collect();
            if n.leader >= 0 && !n.isr.contains(&n.leader) {
                self.violate("image-leader-not-in-isr", format!("partition {i}: {n:?}"));
                return;
            }
            if n.isr.iter().any(|b| !replicas.contains(b)) {
                self.violate("image-isr-not-in-replicas", format!("partition {i}: {n:?}"));
                return;
            }
            // KIP-966: a replica claims leadership through the ISR or the ELR, never both.
            if n.elr
                .iter()
                .any(|b| n.isr.contains(b) || !replicas.contains(b))
            {
                self.violate("image-elr-overlaps-isr", format!("partition {i}: {n:?}"));
                return;
            }
        }
        let Some(old) = before.topics.get(TOPIC) else {
            return;
        };
        for (i, (o, n)) in old.partitions.iter().zip(&new.partitions).enumerate() {
            if o.leader != n.leader || o.leader_epoch != n.leader_epoch {
                if n.leader > 0 {
                    let i = i as i32;
                    if let Some(w) = self
                        .leader_watch
                        .iter()
                        .position(|(p, e, _, _)| *p == i && n.leader_epoch > *e)
                    {
                        let (_, _, gap, down) = self.leader_watch.remove(w);
                        let broker = n.leader;
                        self.after(gap, Event::Kill { broker, down });
                    }
                }
                self.stats.elections += 1;
                if n.leader >= 0 && o.isr.is_empty() && o.elr.contains(&n.leader) {
                    self.stats.elr_elections += 1;
                }
                let (l, e, isr, elr) = (n.leader, n.leader_epoch, n.isr.clone(), n.elr.clone());
                self.log(|| {
                    format!("image: partition {i} leader {l} epoch {e} isr {isr:?} elr {elr:?}")
                });
            }
            if o.isr != n.isr {
                self.stats.isr_changes += 1;
                self.check_isr_members(i as i32, &newcomers(&o.isr, &n.isr), "joined");
            }
            if o.elr != n.elr {
                // KIP-966: a replica's claim in the ELR is that it holds every committed record.
                self.check_isr_members(i as i32, &newcomers(&o.elr, &n.elr), "joined the ELR");
            }
            if n.leader_epoch < o.leader_epoch || n.partition_epoch < o.partition_epoch {
                self.violate(
                    "image-epoch-went-back",
                    format!("partition {i}: {o:?} -> {n:?}"),
                );
            }
        }
    }

    fn create_topic(&mut self) {
        let n = self.plan.shape.brokers;
        let registered = self.controller.image.live_brokers().count() as i32;
        if registered < n || self.controller.out_until > self.now {
            self.after(200, Event::CreateTopic);
            return;
        }
        let rf = self.plan.shape.rf as i32;
        let assignment: Vec<Vec<BrokerId>> = (0..self.plan.shape.partitions)
            .map(|p| (0..rf).map(|i| (p + i) % n + 1).collect())
            .collect();
        let mut configs = BTreeMap::new();
        configs.insert(
            "min.insync.replicas".to_string(),
            self.plan.shape.min_isr.to_string(),
        );
        if self.plan.shape.quorum {
            configs.insert("replication.ack.policy".to_string(), "quorum".to_string());
        }
        let id = Uuid::from_u128(self.rng.gen());
        let _ = self.commit(MetaCommand::CreateTopic {
            name: TOPIC.into(),
            id,
            configs,
            assignment,
        });
    }

    fn controller_tick(&mut self) {
        if self.controller.out_until > self.now {
            return;
        }
        // The controller's own tick (`frieda_meta::housekeeping::tick`): its defaults and the
        // cluster id recorded once, expired sessions fenced.
        let c = &self.controller;
        let commands = tick(
            &c.image,
            CONTROLLER_DEFAULTS,
            &c.sessions,
            (self.now, SESSION_MS),
            || "frieda-sim".to_string(),
        );
        for cmd in commands {
            if let MetaCommand::FenceBroker { id, .. } = &cmd {
                let id = *id;
                self.log(|| format!("controller: broker {id} session expired"));
            }
            let _ = self.commit(cmd);
        }
        // As the controller's run loop after each tick: elections the recorded claims allow
        // in the image as it is now (a fence above may have left a quorum partition
        // leaderless; its replicas' claims may be recorded already).
        let c = &self.controller;
        for cmd in c.sessions.elections(&c.image) {
            let _ = self.commit(cmd);
        }
    }

    fn controller_receive(&mut self, from: Node, msg: Msg) {
        let Node::Broker(id) = from else { return };
        match msg {
            Msg::Heartbeat { hb, sent } => {
                let now = self.now;
                let c = &mut self.controller;
                let decision = c.sessions.heartbeat(&c.image, &hb, now);
                for c in decision.commands {
                    let _ = self.commit(c);
                }
                let c = &mut self.controller;
                if !decision.fenced && c.sessions.record_claims(&c.image, &hb) {
                    for c in c.sessions.elections(&c.image) {
                        let _ = self.commit(c);
                    }
                }
                let offset = self.controller.log.len() as u64;
                self.send(
                    Node::Controller,
                    from,
                    Msg::HeartbeatReply {
                        fenced: decision.fenced,
                        offset,
                        sent,
                    },
                );
            }
            Msg::MetaFetch { from: first } => {
                let log = &self.controller.log;
                let start = (first.max(1) - 1) as usize;
                if start >= log.len() {
                    self.send(Node::Controller, from, Msg::MetaEntries { entries: vec![] });
                    return;
                }
                let entries: Vec<(u64, MetaCommand)> = log[start..]
                    .iter()
                    .take(500)
                    .enumerate()
                    .map(|(i, c)| ((start + i + 1) as u64, c.clone()))
                    .collect();
                self.send(Node::Controller, from, Msg::MetaEntries { entries });
            }
            Msg::AlterIsr {
                req,
                partition,
                change,
            } => {
                let result = self
                    .commit(MetaCommand::AlterIsr {
                        topic: TOPIC.into(),
                        partition,
                        leader: id,
                        leader_epoch: change.leader_epoch,
                        partition_epoch: change.partition_epoch,
                        isr: change.isr.clone(),
                        new_isr_epochs: change.new_isr_epochs.clone(),
                    })
                    .map(|o| match o {
                        frieda_meta::MetaOutcome::Partition(p) => p,
                        _ => unreachable!("AlterIsr answers with the partition"),
                    });
                self.send(
                    Node::Controller,
                    from,
                    Msg::AlterIsrReply {
                        req,
                        partition,
                        result,
                    },
                );
            }
            Msg::RemoteCommit {
                req,
                partition,
                leader_epoch,
                change,
            } => self.tier_commit(from, req, partition, leader_epoch, change),
            _ => {}
        }
    }

    // ------------------------------------------------------------------ brokers: timers

    pub(crate) fn lease_clock(&self, id: i32) -> u64 {
        match LEASE_CLOCK {
            LeaseClock::Boot => self.now,
            LeaseClock::Monotonic => self.now - self.b(id).suspended_ms.min(self.now),
        }
    }

    fn on_timer(&mut self, id: i32, timer: Timer) {
        match timer {
            Timer::Heartbeat => {
                let session = SESSION_MS;
                let now = self.now;
                let b = self.b(id);
                if !b.fenced && now.saturating_sub(b.last_answer) > session {
                    self.log(|| {
                        format!("broker {id}: no heartbeat answered for a session: fencing itself")
                    });
                    self.bm(id).fenced = true;
                    self.reconcile(id);
                }
                if !self.b(id).shutting_down {
                    self.send_heartbeat(id);
                }
                self.timer(id, HEARTBEAT_MS, Timer::Heartbeat);
            }
            Timer::MetaPull => {
                let from = self.b(id).image.offset + 1;
                self.send(Node::Broker(id), Node::Controller, Msg::MetaFetch { from });
                self.timer(id, META_PULL_MS, Timer::MetaPull);
            }
            Timer::FetchTick => {
                self.fetch_tick(id);
                self.timer(id, FETCH_TICK_MS, Timer::FetchTick);
            }
            Timer::ShrinkCheck => {
                let now = self.now as i64;
                let parts: Vec<i32> = self.b(id).replicas.keys().copied().collect();
                for p in parts {
                    let leo = self.b(id).disks[&p].log.leo();
                    let change = self.b(id).replicas[&p].repl.shrink_check(now, leo, LIMITS);
                    if let Some(change) = change {
                        self.send_alter(id, p, change);
                    }
                }
                self.timer(id, SHRINK_CHECK_MS, Timer::ShrinkCheck);
            }
            Timer::HwCheckpoint => {
                self.write_hw_checkpoint(id);
                self.timer(id, HW_CHECKPOINT_MS, Timer::HwCheckpoint);
            }
            Timer::Writeback => {
                // The kernel's write-back (and Frieda's periodic flushes): an armed fsync
                // failure fires here.
                let parts: Vec<i32> = self.b(id).disks.keys().copied().collect();
                for p in parts {
                    self.sync_log(id, p);
                }
                let wb = self.rng.gen_range(500..5_000);
                self.timer(id, wb, Timer::Writeback);
            }
            Timer::Flush(p) => {
                self.sync_log(id, p);
                if let Some(r) = self.bm(id).replicas.get_mut(&p) {
                    r.fetch.flushing = false;
                }
            }
            Timer::AlterTimeout(req) => {
                if let Some((p, change)) = self.bm(id).alters.remove(&req) {
                    self.alter_answer(id, p, &change, AlterAnswer::Unknown);
                }
            }
            Timer::TierTick => self.tier_tick(id),
            Timer::LocalRetention => self.local_retention(id),
            Timer::ShareExpire => self.share_expire(id),
            Timer::ShareRetry => self.share_attempt(id),
            Timer::ShareTimeout(req) => {
                self.share_answer(id, req, Err(ResponseError::CoordinatorNotAvailable))
            }
            Timer::TxnAbortCheck => self.txn_abort_check(id),
            Timer::TxnMarkers(c, attempt) => self.txn_markers_timer(id, c, attempt),
            Timer::TxnComplete(c, attempt) => self.txn_complete_retry(id, c, attempt),
            Timer::TxnVerifyTimeout(req) => self.txn_verify_timeout(id, req),
            Timer::TxnAddRetry(key) => self.txn_add_retry(id, key),
        }
    }

    fn sync_log(&mut self, id: i32, p: i32) {
        let Some(d) = self.bm(id).disks.get_mut(&p) else {
            return;
        };
        if d.log.sync().is_err() {
            self.log(|| format!("broker {id}: fsync of partition {p} failed: log offline"));
        }
    }

    fn send_heartbeat(&mut self, id: i32) {
        let sent = self.lease_clock(id);
        let b = self.b(id);
        // The offline replicas it reports (the broker's `offline_replicas()`): open ones.
        let offline_replicas = b
            .disks
            .iter()
            .filter(|(p, d)| d.log.is_offline() && b.replicas.contains_key(p))
            .map(|(p, _)| (TOPIC.to_string(), *p))
            .collect();
        // Claims of its replicas of leaderless quorum partitions (the broker's `claims()`).
        let claims = b
            .replicas
            .iter()
            .filter(|(_, r)| r.repl.quorum_acks())
            .filter_map(|(p, r)| {
                let d = b.disks.get(p)?;
                Some((TOPIC.to_string(), *p, r.repl.claim(&d.log)?))
            })
            .collect();
        let hb = Heartbeat {
            id,
            incarnation: b.incarnation,
            endpoints: vec![],
            rack: None,
            raft_addr: String::new(),
            shutting_down: b.shutting_down,
            offline_replicas,
            clean_shutdown: b.previous_run_clean,
            leader_cost_us: None,
            claims,
        };
        self.send(
            Node::Broker(id),
            Node::Controller,
            Msg::Heartbeat { hb, sent },
        );
    }

    fn write_hw_checkpoint(&mut self, id: i32) {
        let parts: Vec<i32> = self.b(id).replicas.keys().copied().collect();
        for p in parts {
            let hw = self.served_hw(id, p);
            if let Some(d) = self.bm(id).disks.get_mut(&p) {
                d.checkpoint = Some(hw);
            }
        }
    }

    /// The high watermark a replica serves (the broker's `Partition::high_watermark`): the
    /// replication's, capped by the log end, and with `flush.messages=1` by what is synced.
    pub(crate) fn served_hw(&self, id: i32, p: i32) -> i64 {
        let b = self.b(id);
        let (Some(r), Some(d)) = (b.replicas.get(&p), b.disks.get(&p)) else {
            return 0;
        };
        let hw = r.repl.high_watermark().min(d.log.leo());
        if self.plan.shape.fsync {
            hw.min(d.log.recovery_point())
        } else {
            hw
        }
    }

    // ------------------------------------------------------------------ brokers: messages

    fn broker_receive(&mut self, id: i32, from: Node, msg: Msg) {
        match msg {
            Msg::HeartbeatReply {
                fenced,
                offset,
                sent,
            } => {
                let now = self.now;
                // The broker's rule (`cluster::heartbeat`): an answer older than a session says
                // nothing (seed 73576: a paused leader took one for "unfenced").
                if !frieda::membership::lease::answer_is_fresh(
                    sent,
                    self.lease_clock(id),
                    SESSION_MS,
                ) {
                    self.log(|| format!("broker {id}: ignores a heartbeat answer sent at {sent}, older than a session"));
                    return;
                }
                let b = self.bm(id);
                b.last_answer = now;
                b.pending_renew = Some((sent, offset, fenced, now + HEARTBEAT_MS));
                self.after_metadata(id);
            }
            Msg::MetaEntries { entries } => {
                let mut changed = false;
                for (offset, cmd) in entries {
                    let b = self.bm(id);
                    if offset != b.image.offset + 1 {
                        continue;
                    }
                    let _ = b.image.apply(&cmd, offset);
                    changed = true;
                }
                if changed {
                    self.reconcile(id);
                    self.after_metadata(id);
                    self.tier_image_advanced(id);
                }
            }
            Msg::AlterIsrReply {
                req,
                partition,
                result,
            } => {
                let Some((p, change)) = self.bm(id).alters.remove(&req) else {
                    return;
                };
                debug_assert_eq!(p, partition);
                let answer = alter_answer(result.map_err(frieda_meta::ControllerError::Meta));
                self.alter_answer(id, p, &change, answer);
            }
            Msg::EpochReq {
                req,
                partition,
                current_epoch,
                asked,
            } => {
                let result = self.serve_epoch(id, partition, current_epoch, asked);
                self.send(
                    Node::Broker(id),
                    from,
                    Msg::EpochReply {
                        req,
                        partition,
                        asked,
                        result,
                    },
                );
            }
            Msg::EpochReply {
                req,
                partition,
                asked,
                result,
            } => self.on_epoch_reply(id, from, req, partition, asked, result),
            Msg::FetchReq {
                req,
                partition,
                current_epoch,
                offset,
                last_fetched_epoch,
                log_start,
            } => {
                let Node::Broker(replica) = from else { return };
                let result = self.serve_fetch(
                    id,
                    replica,
                    partition,
                    current_epoch,
                    offset,
                    last_fetched_epoch,
                    log_start,
                );
                if result
                    .as_ref()
                    .is_ok_and(|d| d.batches.is_empty() && d.diverging.is_none())
                {
                    // Nothing to read: a long poll (the broker's fetch handler waits for data
                    // up to max_wait_ms, as Kafka's DelayedFetch).
                    let deadline = self.now + FETCH_WAIT_MAX_MS;
                    let epoch = self.b(id).replicas[&partition].repl.leader_epoch();
                    self.bm(id).parked.push(Parked {
                        replica,
                        req,
                        partition,
                        offset,
                        deadline,
                        epoch,
                    });
                    return;
                }
                self.send(
                    Node::Broker(id),
                    from,
                    Msg::FetchReply {
                        req,
                        partition,
                        offset,
                        result,
                    },
                );
            }
            Msg::FetchReply {
                req,
                partition,
                offset,
                result,
            } => self.on_fetch_reply(id, from, req, partition, offset, result),
            Msg::Produce {
                req,
                partition,
                acks,
                count,
            } => self.on_produce(id, req, partition, acks, count),
            Msg::OffsetCommit { req } => self.on_offset_commit(id, req),
            Msg::TxnMarker { req, pid, commit } => self.on_txn_marker(id, req, pid, commit),
            Msg::ShareFetch { member } => self.on_share_fetch(id, member),
            Msg::ShareAck { member, acks } => self.on_share_ack(id, member, acks),
            Msg::ShareRead { req, leader_epoch } => {
                if let Node::Broker(from) = from {
                    self.on_share_read(id, from, req, leader_epoch);
                }
            }
            Msg::ShareWrite { req } => {
                if let Node::Broker(from) = from {
                    self.on_share_write(id, from, req);
                }
            }
            Msg::ShareReply { req, result } => self.share_answer(id, req, result),
            msg @ (Msg::TxnInit { .. }
            | Msg::TxnAdd { .. }
            | Msg::TxnEnd { .. }
            | Msg::TxnProduce { .. }
            | Msg::TxnMarkers { .. }
            | Msg::TxnMarkersReply { .. }
            | Msg::TxnVerify { .. }
            | Msg::TxnVerified { .. }) => self.txn_receive(id, from, msg),
            Msg::RemoteCommitReply {
                req,
                partition,
                result,
            } => self.tier_commit_reply(id, req, partition, result),
            _ => {}
        }
    }

    /// The broker's heartbeat loop after an answer (`cluster::heartbeat::run`): once the image
    /// reaches the answer's offset the broker is ready, takes the answer's fencing, and (unfenced)
    /// renews its lease from the heartbeat's send time; an answer whose offset the image does not
    /// reach within a heartbeat interval renews nothing.
    fn after_metadata(&mut self, id: i32) {
        let now = self.now;
        let b = self.bm(id);
        let Some((sent, offset, fenced, deadline)) = b.pending_renew else {
            return;
        };
        if b.image.offset < offset {
            if now > deadline {
                b.pending_renew = None;
                if b.fenced != fenced {
                    b.fenced = fenced;
                    self.reconcile(id);
                }
            }
            return;
        }
        b.pending_renew = None;
        let changed = !b.ready || b.fenced != fenced;
        b.ready = true;
        b.fenced = fenced;
        if changed {
            self.log(|| format!("broker {id}: ready, fenced={fenced}"));
            self.reconcile(id);
        }
        if !fenced {
            self.b(id).lease.renew(sent, SESSION_MS);
        }
    }

    // ------------------------------------------------------------------ reconciler

    fn reconcile(&mut self, id: i32) {
        if !self.b(id).ready {
            return;
        }
        let Some(topic) = self.b(id).image.topics.get(TOPIC).cloned() else {
            return;
        };
        let me = id;
        let fenced = self.b(id).fenced;
        self.apply_topic_configs(id, &topic.configs);
        // The broker's steps (`cluster::reconciler::apply`): deposed leaders step down first,
        // then each partition is removed, opened or kept, and takes its role.
        let hosted: Vec<i32> = self.b(id).replicas.keys().copied().collect();
        for i in hosted {
            let mut replica = SimReplica {
                world: self,
                id,
                partition: i,
            };
            step_down(&mut replica, topic.partitions.get(i as usize), me, fenced);
        }
        for (i, p) in topic.partitions.iter().enumerate() {
            let i = i as i32;
            match host_step(p, me, self.b(id).replicas.contains_key(&i)) {
                None => continue,
                Some(HostStep::Remove) => {
                    let b = self.bm(id);
                    b.replicas.remove(&i);
                    b.disks.remove(&i);
                    b.pending.retain(|x| x.partition != i);
                    self.log(|| format!("broker {me}: replica of partition {i} removed"));
                    if Some(i) == self.offsets_partition() {
                        self.coordinator_role(id, false);
                    }
                    if Some(i) == self.plan.shape.txn_partition {
                        self.txn_role(id, false);
                    }
                    continue;
                }
                Some(HostStep::Open) => self.open_replica(id, i),
                Some(HostStep::TakeRole) => {}
            }
            let mut replica = SimReplica {
                world: self,
                id,
                partition: i,
            };
            let change = take_role(&mut replica, p, me, fenced);
            if change.awaits_claims(p) && !self.b(id).fenced && !self.b(id).shutting_down {
                // The broker sends its claim at once (heartbeat.rs `CLAIMS`).
                self.send_heartbeat(id);
            }
            if Some(i) == self.offsets_partition() {
                self.coordinator_role(id, change.leads());
            }
            if Some(i) == self.plan.shape.txn_partition {
                self.txn_role(id, change.leads());
            }
        }
    }

    /// Broker `id` applies the topic's configs of its image (the broker's
    /// `apply_topic_configs`): `min.insync.replicas` as the broker's `produce_policy` computes
    /// it, set on every replica it hosts.
    fn apply_topic_configs(&mut self, id: i32, configs: &BTreeMap<String, String>) {
        let defaults = TopicConfigs::default();
        let policy = TopicConfigs(configs.clone()).produce_policy(&defaults);
        let b = self.bm(id);
        if b.min_insync == policy.min_insync_replicas {
            return;
        }
        b.min_insync = policy.min_insync_replicas;
        for r in b.replicas.values() {
            r.repl.set_min_insync(policy.min_insync_replicas);
        }
        let v = policy.min_insync_replicas;
        self.log(|| format!("broker {id}: applies min.insync.replicas={v}"));
    }

    fn open_replica(&mut self, id: i32, p: i32) {
        let min_isr = self.b(id).min_insync;
        let quorum = self.plan.shape.quorum;
        let real_log = self.plan.shape.real_log;
        let b = self.bm(id);
        let existing = b.disks.contains_key(&p);
        let d = b.disks.entry(p).or_insert_with(|| Disk {
            log: if real_log {
                SimLog::with_real_log()
            } else {
                SimLog::default()
            },
            ..Disk::default()
        });
        let repl = Replication::default();
        repl.set_min_insync(min_isr);
        repl.set_quorum_acks(quorum);
        repl.restore_high_watermark(
            if existing {
                d.checkpoint.unwrap_or(0)
            } else {
                0
            },
            d.log.leo(),
        );
        repl.await_role();
        b.replicas.insert(
            p,
            Replica {
                repl,
                fetch: FetchState::default(),
                last_epoch: -1,
                last_partition_epoch: -1,
                last_leader_hw: None,
            },
        );
        self.tier_open(id, p);
    }

    fn become_leader(&mut self, id: i32, p: i32, state: &PartitionState) {
        let now = self.now as i64;
        let b = self.bm(id);
        let d = b.disks.get_mut(&p).expect("opened");
        d.log.assign_epoch(state.leader_epoch);
        let leo = d.log.leo();
        let r = b.replicas.get_mut(&p).expect("opened");
        r.repl.become_leader(id, state, now, leo);
        r.fetch = FetchState::default();
        let (e, isr, hw) = (
            state.leader_epoch,
            state.isr.clone(),
            r.repl.high_watermark(),
        );
        self.log(|| {
            format!(
                "broker {id}: leads partition {p} in epoch {e}, isr {isr:?}, leo {leo}, hw {hw}"
            )
        });
        self.check_new_leader(id, p, e);
        self.txn_leader_state(id, p);
        // As the broker's reconciler: an unanswered ISR change taken back is asked again.
        let taken_back = self.b(id).replicas[&p].repl.pending_isr_change();
        if let Some(change) = taken_back {
            let isr = change.isr.clone();
            self.log(|| {
                format!(
                    "broker {id}: partition {p} takes back its unanswered ISR change to {isr:?}"
                )
            });
            self.send_alter(id, p, change);
        }
    }

    fn become_follower(&mut self, id: i32, p: i32, leader: i32, epoch: i32) {
        let b = self.bm(id);
        let leo = b.disks[&p].log.leo();
        let r = b.replicas.get_mut(&p).expect("opened");
        r.repl.become_follower(id, leader, epoch, leo);
        r.fetch = FetchState::default();
        b.pending.retain(|x| x.partition != p);
        self.log(|| format!("broker {id}: partition {p} follows {leader} in epoch {epoch}"));
    }

    // ------------------------------------------------------------------ ISR changes

    fn send_alter(&mut self, id: i32, p: i32, change: IsrChange) {
        let b = self.bm(id);
        b.next_req += 1;
        let req = b.next_req;
        b.alters.insert(req, (p, change.clone()));
        let c = change.clone();
        self.log(|| {
            format!(
                "broker {id}: asks ISR {:?} for partition {p} (partition epoch {})",
                c.isr, c.partition_epoch
            )
        });
        self.send(
            Node::Broker(id),
            Node::Controller,
            Msg::AlterIsr {
                req,
                partition: p,
                change,
            },
        );
        self.timer(id, ALTER_TIMEOUT_MS, Timer::AlterTimeout(req));
    }

    /// As the broker's `cluster::isr::alter`: the answer applied (a committed one waits for
    /// the image), and asked again after no answer while the change is still pending.
    fn alter_answer(&mut self, id: i32, p: i32, change: &IsrChange, answer: AlterAnswer) {
        let now = self.now as i64;
        let b = self.b(id);
        let (Some(r), Some(d)) = (b.replicas.get(&p), b.disks.get(&p)) else {
            return;
        };
        let leo = d.log.leo();
        let unknown = answer == AlterAnswer::Unknown;
        r.repl.on_alter_answer(change, answer, leo, now);
        if unknown && r.repl.pending_change(change) {
            self.send_alter(id, p, change.clone());
        }
    }

    // ------------------------------------------------------------------ follower side

    fn fetch_tick(&mut self, id: i32) {
        let now = self.now;
        let parts: Vec<i32> = self.b(id).replicas.keys().copied().collect();
        for p in parts {
            let b = self.b(id);
            let r = &b.replicas[&p];
            let Some((leader, epoch)) = r.repl.following() else {
                continue;
            };
            let f = &r.fetch;
            if f.flushing || now < f.next_at || !f.state.ready(now) || b.disks[&p].log.is_offline()
            {
                // An offline log stops fetching (the broker's fetcher drops it).
                continue;
            }
            if let Some((_, since)) = f.inflight {
                if now < since + FETCH_TIMEOUT_MS {
                    continue;
                }
            }
            let log = &b.disks[&p].log;
            let next = f.state.next_request();
            let asked = log.latest_epoch();
            let log_start = log.log_start_offset();
            let b = self.bm(id);
            b.next_req += 1;
            let req = b.next_req;
            b.replicas.get_mut(&p).expect("listed").fetch.inflight = Some((req, now));
            let msg = match next {
                NextRequest::OffsetForLeaderEpoch => Msg::EpochReq {
                    req,
                    partition: p,
                    current_epoch: epoch,
                    asked,
                },
                NextRequest::Fetch { skip_to } => {
                    let position = follower::fetch_position(&self.b(id).disks[&p].log, skip_to);
                    Msg::FetchReq {
                        req,
                        partition: p,
                        current_epoch: epoch,
                        offset: position.0,
                        last_fetched_epoch: position.1,
                        log_start,
                    }
                }
            };
            self.send(Node::Broker(id), Node::Broker(leader), msg);
        }
    }

    /// Whether `id` still follows `from` in the epoch it sent request `req` for `p` in; clears
    /// the request.
    fn takes_answer(&mut self, id: i32, from: Node, req: u64, p: i32) -> Option<i32> {
        let Node::Broker(leader) = from else {
            return None;
        };
        let r = self.bm(id).replicas.get_mut(&p)?;
        if r.fetch.inflight.map(|(q, _)| q) != Some(req) {
            return None;
        }
        r.fetch.inflight = None;
        match r.repl.following() {
            Some((l, epoch)) if l == leader => Some(epoch),
            _ => None,
        }
    }

    fn back_off(&mut self, id: i32, p: i32) {
        let now = self.now;
        if let Some(r) = self.bm(id).replicas.get_mut(&p) {
            r.fetch.state.back_off(now);
        }
    }

    fn on_epoch_reply(
        &mut self,
        id: i32,
        from: Node,
        req: u64,
        p: i32,
        asked: i32,
        result: Result<EpochEnd, ResponseError>,
    ) {
        let Some(_epoch) = self.takes_answer(id, from, req, p) else {
            return;
        };
        let end = match result {
            Ok(end) => end,
            Err(_) => {
                self.back_off(id, p);
                return;
            }
        };
        let b = self.b(id);
        let hw = b.replicas[&p].repl.high_watermark();
        let log = &b.disks[&p].log;
        let leo = log.leo();
        let t = follower::truncation(log, hw, asked, end);
        self.log(|| format!("broker {id}: partition {p}: the leader says epoch {asked} ends at {end:?}; truncation {t:?} (leo {leo}, hw {hw})"));
        self.apply_truncation(id, p, leo, t);
    }

    fn apply_truncation(&mut self, id: i32, p: i32, leo: i64, t: Truncation) {
        let target = t.offset();
        if target < leo {
            self.check_truncation(id, p, target);
        }
        if target <= leo {
            let b = self.bm(id);
            let d = b.disks.get_mut(&p).expect("opened");
            match d.log.truncate_to(target) {
                Ok(new_leo) => {
                    d.verified_upto = d.verified_upto.min(new_leo);
                    b.replicas[&p].repl.on_truncated(new_leo);
                    if new_leo < leo {
                        let in_isr = self
                            .controller
                            .image
                            .partition(TOPIC, p)
                            .is_some_and(|s| s.isr.contains(&id) || s.elr.contains(&id));
                        if in_isr {
                            self.check_isr_members(p, &[id], "after it truncated");
                        }
                        self.stats.truncations += 1;
                        self.log(|| {
                            format!("broker {id}: partition {p} truncated from {leo} to {new_leo}")
                        });
                    }
                }
                Err(_) => {
                    self.back_off(id, p);
                    return;
                }
            }
        }
        if let Some(r) = self.bm(id).replicas.get_mut(&p) {
            r.fetch.state.truncated_to(t);
        }
    }

    fn on_fetch_reply(
        &mut self,
        id: i32,
        from: Node,
        req: u64,
        p: i32,
        offset: i64,
        result: Result<FetchData, ResponseError>,
    ) {
        let Some(_epoch) = self.takes_answer(id, from, req, p) else {
            return;
        };
        let data = match result {
            Ok(d) => d,
            Err(e) => {
                // The leader's log start is not in the error answer; the leader never moves it
                // by retention here, so OFFSET_OUT_OF_RANGE is a retruncation.
                let now = self.now;
                let Some(r) = self.bm(id).replicas.get_mut(&p) else {
                    return;
                };
                match r.fetch.state.refused(now, offset, e, 0) {
                    Refused::BackedOff => {}
                    Refused::StartAgainAboveCopies => {
                        if !self.tier_start_again(id, p, offset) {
                            self.back_off(id, p);
                        }
                    }
                }
                return;
            }
        };
        if let Some(end) = data.diverging {
            let b = self.b(id);
            let hw = b.replicas[&p].repl.high_watermark();
            let log = &b.disks[&p].log;
            let (leo, asked) = (log.leo(), log.latest_epoch());
            let t = follower::truncation(log, hw, asked, end);
            self.apply_truncation(id, p, leo, t);
            return;
        }
        let got = !data.batches.is_empty();
        if got {
            let d = self.bm(id).disks.get_mut(&p).expect("opened");
            if d.log.append_replicated(&data.batches).is_err() {
                self.back_off(id, p);
                return;
            }
        }
        let fsync = self.plan.shape.fsync;
        let delay = self.rng.gen_range(0..=2);
        let flush_delay = self.rng.gen_range(1..4);
        let now = self.now;
        let b = self.bm(id);
        let leo = b.disks[&p].log.leo();
        let all_synced = b.disks[&p].log.all_synced();
        let r = b.replicas.get_mut(&p).expect("listed");
        r.fetch.state.appended(leo);
        r.repl.follower_high_watermark(data.hw, leo);
        r.fetch.next_at = now + delay;
        if fsync && got && !all_synced {
            r.fetch.flushing = true;
            self.timer(id, flush_delay, Timer::Flush(p));
        }
    }

    // ------------------------------------------------------------------ leader side

    fn serve_epoch(
        &mut self,
        id: i32,
        p: i32,
        current_epoch: i32,
        asked: i32,
    ) -> Result<EpochEnd, ResponseError> {
        let lease_now = self.lease_clock(id);
        let b = self.b(id);
        let r = b
            .replicas
            .get(&p)
            .ok_or(ResponseError::NotLeaderOrFollower)?;
        r.repl.check_leader(current_epoch)?;
        if !b.lease.holds(lease_now) {
            return Err(ResponseError::NotLeaderOrFollower);
        }
        let log = &b.disks[&p].log;
        if log.is_offline() {
            return Err(ResponseError::KafkaStorageError);
        }
        let (epoch, end_offset) = log.end_offset_for_epoch(asked);
        Ok(EpochEnd { epoch, end_offset })
    }

    /// What broker `id`'s replica of `p` knows of itself for a follower's fetch at `offset`
    /// admitted in `admitted_epoch`, each time it is read (the broker's
    /// `Partition::read_follower_fetch`).
    fn follower_serving(
        &self,
        id: i32,
        p: i32,
        admitted_epoch: i32,
        offset: i64,
    ) -> ServingReplica {
        let b = self.b(id);
        let leads = b
            .replicas
            .get(&p)
            .is_some_and(|r| r.repl.leads_in(admitted_epoch));
        ServingReplica {
            leadership: if leads {
                Ok(())
            } else {
                Err(ResponseError::NotLeaderOrFollower)
            },
            offline: b.disks.get(&p).is_some_and(|d| d.log.is_offline()),
            only_remote: self.tier_fetch_below_start(id, p, offset),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn serve_fetch(
        &mut self,
        id: i32,
        replica: i32,
        p: i32,
        current_epoch: i32,
        offset: i64,
        last_fetched_epoch: i32,
        log_start: i64,
    ) -> Result<FetchData, ResponseError> {
        let now = self.now as i64;
        let b = self.b(id);
        let (Some(r), Some(d)) = (b.replicas.get(&p), b.disks.get(&p)) else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        // The broker's admission (leadership and epoch, log online, offset held locally, the
        // fetch validated against the log), then the read, and only then the follower's
        // progress.
        let serving = ServingReplica {
            leadership: r.repl.check_follower(current_epoch),
            offline: d.log.is_offline(),
            only_remote: self.tier_fetch_below_start(id, p, offset),
        };
        let validated = admit_follower_fetch(serving, &d.log, offset, last_fetched_epoch);
        // The leader epoch the fetch is admitted in (the fetch handler's `admitted_epoch`):
        // its progress counts only for that epoch.
        let admitted_epoch = r.repl.leader_epoch();
        let (leo_now, hw_now) = (d.log.leo(), r.repl.high_watermark());
        self.log(|| {
            format!("broker {id}: fetch of partition {p} by {replica} at {offset} (last fetched epoch {last_fetched_epoch}): {validated:?}; leo {leo_now}, hw {hw_now}")
        });
        let b = self.b(id);
        let (Some(_), Some(d)) = (b.replicas.get(&p), b.disks.get(&p)) else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        if let Some(end) = validated? {
            return Ok(FetchData {
                batches: vec![],
                hw: self.served_hw(id, p),
                log_start: d.log.log_start_offset(),
                diverging: Some(end),
            });
        }
        // The read, by the broker's rules for it (`read_follower_fetch`); only a fetch that
        // read without an error counts as the follower's progress.
        let readable = read_follower_fetch(
            self.follower_serving(id, p, admitted_epoch, offset),
            &self.b(id).disks[&p].log,
            offset,
        )?;
        let b = self.b(id);
        let (r, d) = (&b.replicas[&p], &b.disks[&p]);
        let batches = if readable {
            d.log.read(offset, self.plan.shape.fetch_max_batches)
        } else {
            vec![]
        };
        let broker_epoch = b.image.brokers.get(&replica).map(|x| x.epoch);
        let leo = d.log.leo();
        let (change, _moved) = r.repl.on_follower_fetch(
            replica,
            broker_epoch,
            offset,
            log_start,
            admitted_epoch,
            leo,
            now,
        )?;
        if let Some(change) = change {
            self.send_alter(id, p, change);
        }
        let d = &self.b(id).disks[&p];
        Ok(FetchData {
            batches,
            hw: self.served_hw(id, p),
            log_start: d.log.log_start_offset(),
            diverging: None,
        })
    }

    // ------------------------------------------------------------------ produce

    /// A new client request id (produce and offset commit share them: each is also the id
    /// of the batch it writes).
    pub(crate) fn next_request_id(&mut self) -> u64 {
        let req = self.next_produce;
        self.next_produce += 1;
        req
    }

    /// The broker a client sends a request for `partition` to: its leader in the controller's
    /// image, or a random broker when there is none or the client's guess is `stale`.
    pub(crate) fn client_target(&mut self, partition: i32, stale: bool) -> i32 {
        let n = self.plan.shape.brokers;
        self.controller
            .image
            .partition(TOPIC, partition)
            .map(|s| s.leader)
            .filter(|l| *l > 0 && !stale)
            .unwrap_or_else(|| self.rng.gen_range(1..=n))
    }

    fn produce(&mut self, partition: i32, acks: i16, count: i64, stale: bool) {
        let req = self.next_request_id();
        self.stats.produced += 1;
        let leader = self.client_target(partition, stale);
        self.send(
            Node::Client,
            Node::Broker(leader),
            Msg::Produce {
                req,
                partition,
                acks,
                count,
            },
        );
    }

    /// Whether broker `id` may append to `p` now as its leader, and in which leader epoch (the
    /// broker's `handlers::produce::check_append`, which the produce handler, the group
    /// coordinator's writes and the transaction markers all pass): a replica here, the lease,
    /// `min.insync.replicas` for `acks_all`, then the leader epoch.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, or `append_epoch`'s.
    pub(crate) fn check_append(
        &self,
        id: i32,
        p: i32,
        acks_all: bool,
    ) -> Result<i32, ResponseError> {
        let b = self.b(id);
        let r = b
            .replicas
            .get(&p)
            .ok_or(ResponseError::NotLeaderOrFollower)?;
        // The broker's admission (`handlers::produce::check_append`).
        let lease_holds = b.lease.holds(self.lease_clock(id));
        admit_produce(&r.repl, lease_holds, acks_all, b.min_insync)
    }

    fn on_produce(&mut self, id: i32, req: u64, p: i32, acks: i16, count: i64) {
        // The client's answer is not simulated (the checks look at the broker's decision).
        let answer = |_: &mut World, _: Result<i64, ResponseError>| {};
        let epoch = match self.check_append(id, p, acks == -1) {
            Ok(e) => e,
            Err(e) => {
                answer(self, Err(e));
                return;
            }
        };
        let write = Appending {
            req,
            acks,
            count,
            timeout: PRODUCE_TIMEOUT_MS,
            coordinator: None,
            marker: None,
            reply: None,
        };
        if let Err(e) = self.append_pending(id, p, epoch, write) {
            answer(self, Err(e));
        }
    }

    /// Leader `id` appends `x`'s batch to its log of `p` in leader `epoch` and waits for its
    /// acknowledgement (the flush, then the in-sync replicas for `acks=all`), at most
    /// `x.timeout` ms. Errors: KAFKA_STORAGE_ERROR when the log is offline.
    pub(crate) fn append_pending(
        &mut self,
        id: i32,
        p: i32,
        epoch: i32,
        x: Appending,
    ) -> Result<(), ResponseError> {
        let now = self.now;
        let b = self.bm(id);
        let d = b.disks.get_mut(&p).expect("opened");
        let batch = match d.log.append_leader(epoch, x.count, x.req) {
            Ok(batch) => batch,
            Err(DiskError::Offline | DiskError::NotContiguous) => {
                return Err(ResponseError::KafkaStorageError);
            }
        };
        let leo = d.log.leo();
        b.replicas[&p].repl.advance(leo, now as i64);
        self.wait_pending(id, p, epoch, batch, x);
        Ok(())
    }

    /// Broker `id` answers `x` once `batch`, already in its log of `p`, is acknowledged as an
    /// append of leader epoch `epoch` would be (flushed if fsync is on; with `acks=all`
    /// replicated to the in-sync replicas): the wait of [`Self::append_pending`], also for a
    /// duplicate of a producer's batch, whose answer the broker's produce handler holds until
    /// the original is replicated (`append`: `wait_replicated` of the duplicate's last
    /// offset, as Kafka's delayed produce waits for it).
    pub(crate) fn wait_pending(&mut self, id: i32, p: i32, epoch: i32, batch: Batch, x: Appending) {
        let fsync = self.plan.shape.fsync;
        let now = self.now;
        self.bm(id).pending.push(Pending {
            req: x.req,
            partition: p,
            acks: x.acks,
            batch,
            epoch,
            deadline: now + x.timeout,
            flushed: !fsync,
            coordinator: x.coordinator,
            marker: x.marker,
            reply: x.reply,
        });
        if fsync {
            let d = self.rng.gen_range(1..4);
            self.timer(id, d, Timer::Flush(p));
        }
    }

    /// Answers the long-polling follower fetches that can be answered now: data arrived, or
    /// their wait is over (called after every event). The fetch counted when it was first
    /// read; its answer reads again, with the high watermark as it is now.
    pub(crate) fn complete_parked(&mut self) {
        let now = self.now;
        for id in 1..=self.plan.shape.brokers {
            let b = self.b(id);
            if !b.up || b.paused_until > now || b.parked.is_empty() {
                continue;
            }
            let parked = std::mem::take(&mut self.bm(id).parked);
            let mut keep = Vec::new();
            for x in parked {
                let b = self.b(id);
                let (Some(d), Some(_)) = (b.disks.get(&x.partition), b.replicas.get(&x.partition))
                else {
                    continue;
                };
                // As the broker's fetch handler: a woken long poll reads again by the same
                // rules (the leadership it was admitted under first: Kafka's DelayedFetch) and
                // is answered on data, an error or its deadline.
                let read = read_follower_fetch(
                    self.follower_serving(id, x.partition, x.epoch, x.offset),
                    &d.log,
                    x.offset,
                );
                let bytes = usize::from(read == Ok(true));
                if !fetch_completes(bytes, 1, read.is_err(), now >= x.deadline) {
                    keep.push(x);
                    continue;
                }
                let result = read.map(|readable| FetchData {
                    batches: if readable {
                        d.log.read(x.offset, self.plan.shape.fetch_max_batches)
                    } else {
                        vec![]
                    },
                    hw: self.served_hw(id, x.partition),
                    log_start: d.log.log_start_offset(),
                    diverging: None,
                });
                self.send(
                    Node::Broker(id),
                    Node::Broker(x.replica),
                    Msg::FetchReply {
                        req: x.req,
                        partition: x.partition,
                        offset: x.offset,
                        result,
                    },
                );
            }
            self.bm(id).parked.extend(keep);
        }
    }

    /// Answers the produce requests that can be answered now (called after every event).
    pub(crate) fn complete_produces(&mut self) {
        for id in 1..=self.plan.shape.brokers {
            let b = self.b(id);
            if !b.up || b.paused_until > self.now || b.pending.is_empty() {
                continue;
            }
            let lease_now = self.lease_clock(id);
            let min_isr = b.min_insync;
            let now = self.now;
            let mut done: Vec<(Pending, Result<i64, ResponseError>)> = Vec::new();
            let b = self.bm(id);
            let mut keep = Vec::new();
            for mut x in std::mem::take(&mut b.pending) {
                let Some(d) = b.disks.get(&x.partition) else {
                    continue;
                };
                if !x.flushed {
                    if d.log.is_offline() {
                        done.push((x, Err(ResponseError::KafkaStorageError)));
                        continue;
                    }
                    if d.log.recovery_point() >= x.batch.end() && d.log.is_synced(x.batch.id) {
                        x.flushed = true;
                    }
                }
                let status = if !x.flushed {
                    AckStatus::Pending
                } else if x.acks == -1 {
                    match b.replicas.get(&x.partition) {
                        Some(r) => r.repl.ack_status(x.batch.end() - 1, x.epoch, min_isr),
                        None => AckStatus::Done(Err(ResponseError::NotLeaderOrFollower)),
                    }
                } else {
                    AckStatus::Done(Ok(()))
                };
                match status {
                    AckStatus::Pending if now >= x.deadline => {
                        done.push((x, Err(ResponseError::RequestTimedOut)))
                    }
                    AckStatus::Pending => keep.push(x),
                    AckStatus::Done(waited) => {
                        // The lease again before the answer (the broker's produce handler,
                        // the group coordinator's writes and the transaction markers).
                        let base = x.batch.base;
                        let answer = answer_produce(waited, b.lease.holds(lease_now));
                        done.push((x, answer.map(|()| base)));
                    }
                }
            }
            self.bm(id).pending = keep;
            for (x, result) in done {
                match &result {
                    Ok(base) => self.on_acknowledged(id, &x, *base),
                    Err(e)
                        if x.coordinator.is_none() && x.marker.is_none() && x.reply.is_none() =>
                    {
                        let req = x.req;
                        self.log(|| format!("broker {id}: answers produce {req} with {e:?}"));
                    }
                    Err(_) => {}
                }
                if let (Some(load), false) = (x.coordinator, self.violation.is_some()) {
                    let outcome = result.map(|_| ());
                    self.commit_landed(id, load, x.req, x.batch.base, outcome);
                }
                if let (Some((pid, commit)), false) = (x.marker, self.violation.is_some()) {
                    let outcome = result.map(|_| ());
                    self.marker_landed(id, x.req, pid, commit, x.batch.base, outcome);
                }
                if let (Some(reply), false) = (x.reply, self.violation.is_some()) {
                    self.txn_appended(id, x.req, reply, result);
                }
                if self.violation.is_some() {
                    return;
                }
            }
        }
    }

    fn on_acknowledged(&mut self, id: i32, x: &Pending, base: i64) {
        if x.acks == -1 {
            self.stats.acked_all += 1;
        } else {
            self.stats.acked_one += 1;
        }
        self.acked_order.push(x.batch.id);
        self.acked.insert(
            x.batch.id,
            Acked {
                partition: x.partition,
                base,
                acks: x.acks,
                time: self.now,
            },
        );
        let (req, p, acks) = (x.req, x.partition, x.acks);
        self.log(|| format!("broker {id}: acknowledges produce {req} (partition {p}, acks={acks}) at offset {base}"));
        let r = PendingRef {
            id: x.batch.id,
            partition: x.partition,
            base,
            acks: x.acks,
        };
        self.check_acknowledgement(id, &r);
    }
}

/// A simulated broker's replica as the reconciler's [`take_role`] sees it.
struct SimReplica<'a> {
    world: &'a mut World,
    id: i32,
    partition: i32,
}

impl TakesRole for SimReplica<'_> {
    fn role(&self) -> Role {
        self.world.b(self.id).replicas[&self.partition].repl.role()
    }

    fn update_leader(&mut self, p: &PartitionState) -> bool {
        let now = self.world.now as i64;
        let b = self.world.b(self.id);
        let leo = b.disks[&self.partition].log.leo();
        b.replicas[&self.partition].repl.update_leader(p, leo, now)
    }

    fn become_leader(&mut self, p: &PartitionState) {
        self.world.become_leader(self.id, self.partition, p);
    }

    fn become_follower(&mut self, leader: BrokerId, epoch: i32) {
        self.world
            .become_follower(self.id, self.partition, leader, epoch);
    }
}

/// A one-line description of a metadata command for traces.
/// The members of `new` not in `old`.
fn newcomers(old: &[BrokerId], new: &[BrokerId]) -> Vec<BrokerId> {
    new.iter().copied().filter(|b| !old.contains(b)).collect()
}

fn brief(c: &MetaCommand) -> String {
    match c {
        MetaCommand::RegisterBroker { registration } => {
            format!("RegisterBroker {}", registration.id)
        }
        MetaCommand::FenceBroker { id, .. } => format!("FenceBroker {id}"),
        MetaCommand::UnfenceBroker { id, .. } => format!("UnfenceBroker {id}"),
        MetaCommand::CreateTopic { assignment, .. } => format!("CreateTopic {assignment:?}"),
        MetaCommand::AlterIsr {
            partition,
            leader,
            isr,
            partition_epoch,
            ..
        } => format!(
            "AlterIsr p{partition} by {leader} -> {isr:?} (from partition epoch {partition_epoch})"
        ),
        MetaCommand::ElectLeader {
            partition, leader, ..
        } => format!("ElectLeader p{partition} -> {leader}"),
        MetaCommand::Reassign {
            partition, target, ..
        } => format!("Reassign p{partition} -> {target:?}"),
        other => format!("{other:?}"),
    }
}
