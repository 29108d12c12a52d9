//! The metadata quorum under a seeded simulation (issue 57, "the metadata quorum's voter changes
//! (KIP-853)"): five nodes run the broker's own quorum code ([`frieda_meta::sim::SimNode`]:
//! openraft with Frieda's Raft configuration, metadata log, state machine and controller) on a
//! current-thread tokio runtime with paused time, over a simulated network, while a nemesis
//! crashes and restarts nodes, cuts links, and adds and removes voters through the controller's
//! AddRaftVoter/RemoveRaftVoter path, and clients allocate producer-id blocks (a command whose
//! every answer must be unique). Every random draw (the plan, link delays and losses, Raft's
//! election timeouts through [`frieda_meta::seed_thread_rng`], and the branch an unbiased
//! `tokio::select!` in openraft picks when several are ready, through the runtime's seeded
//! generator) comes from the seed, so a seed replays exactly.
//!
//! Invariants (each a violation kind):
//! - `two-leaders-in-one-epoch`: no two leaders share a KRaft leader epoch (the image's
//!   [`MetadataImage::leader_epoch`], what DescribeQuorum reports), while voters are added and
//!   removed (the Raft term may be shared: openraft's leader ids are (term, node), counted in
//!   `terms_with_two_leaders`), and DescribeQuorum answers one leader per epoch it reports;
//! - `images-diverged`: two nodes that applied the metadata log up to the same index hold the
//!   same image;
//! - `memberships-diverged`: a membership entry at one log position is the same on every node;
//! - `producer-ids-reused`: no two acknowledged producer-id blocks overlap, and the final image
//!   hands out ids above every acknowledged block (an answered write survives);
//! - `voter-change-lost`: after the run, a node's voter status is what the last acknowledged
//!   change of it made it;
//! - `no-progress`: once the network heals and every node runs, a leader is elected and a
//!   write commits (liveness, checked after the faults);
//! - `panicked`: no task of a node panics (tokio keeps running the others, so a panic is
//!   caught by a hook and reported with its seed).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frieda_meta::sim::openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use frieda_meta::sim::openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use frieda_meta::sim::openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use frieda_meta::sim::openraft::{BasicNode, ServerState};
use frieda_meta::sim::{Raft, SimNode, SimTiming, TypeConfig};
use frieda_meta::{ControllerReply, ControllerRequest, MetadataImage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;

/// Node ids of a simulated quorum: `1..=NODES`.
pub const NODES: u64 = 5;
/// Simulated time the nemesis works, ms (then the network heals and every node runs).
const FAULT_MS: u64 = 60_000;
/// After the heal: how long the quorum has to elect a leader and commit a write, ms.
const RECOVERY_MS: u64 = 20_000;
/// A client's or operator's request timeout, ms (`kafka-metadata-quorum`'s default is 30 s).
const REQUEST_MS: u64 = 30_000;
/// Trace lines kept (the first ones).
const MAX_TRACE: usize = 20_000;
/// The broker's timing (`controller.quorum.election.timeout.ms` 1,000, heartbeat a fifth of
/// it), with snapshots every 200 entries (50 kept behind one) instead of 5,000 (1,000) so that snapshots are built and
/// installed (a new voter catching up from one) within a run.
const TIMING: SimTiming = SimTiming {
    election_timeout_ms: 1_000,
    heartbeat_interval_ms: 200,
    snapshot_every: 200,
    logs_kept_behind_snapshot: 50,
};

/// What broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumViolation {
    /// Simulated ms since the start.
    pub time: u64,
    /// The invariant (see the module doc).
    pub kind: &'static str,
    /// What was seen.
    pub detail: String,
}

/// Counts of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumStats {
    /// Simulated ms.
    pub sim_ms: u64,
    /// Raft terms in which some node led.
    pub terms_led: u64,
    /// Node crashes (each restarted later).
    pub crashes: u64,
    /// Network cuts (a set of nodes cut off from the rest).
    pub cuts: u64,
    /// RPCs lost in the network.
    pub lost: u64,
    /// AddRaftVoter answered OK.
    pub voters_added: u64,
    /// RemoveRaftVoter answered OK.
    pub voters_removed: u64,
    /// Voter changes refused or timed out.
    pub voter_changes_failed: u64,
    /// Producer-id blocks answered.
    pub allocations: u64,
    /// Snapshots installed on a node from the leader (a lagging or new member).
    pub snapshots_installed: u64,
    /// Violations of an ignored kind (`--ignore`).
    pub ignored: u64,
    /// Raft terms two nodes led one after the other (openraft's (term, node) leader ids, by
    /// design; the KRaft epoch Frieda reports is [`MetadataImage::leader_epoch`]).
    pub terms_with_two_leaders: u64,
}

impl QuorumStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &QuorumStats) {
        self.sim_ms += other.sim_ms;
        self.terms_led += other.terms_led;
        self.crashes += other.crashes;
        self.cuts += other.cuts;
        self.lost += other.lost;
        self.voters_added += other.voters_added;
        self.voters_removed += other.voters_removed;
        self.voter_changes_failed += other.voter_changes_failed;
        self.allocations += other.allocations;
        self.snapshots_installed += other.snapshots_installed;
        self.ignored += other.ignored;
        self.terms_with_two_leaders += other.terms_with_two_leaders;
    }
}

/// The outcome of one seed.
#[derive(Debug, Clone)]
pub struct QuorumReport {
    /// The seed.
    pub seed: u64,
    /// The first invariant broken, if any.
    pub violation: Option<QuorumViolation>,
    /// Counts.
    pub stats: QuorumStats,
    /// The event log (with `trace`), at most [`MAX_TRACE`] lines.
    pub trace: Vec<String>,
}

/// The simulated network and what the checks saw: one value shared by every task of a run.
struct Shared {
    start: Instant,
    rng: ChaCha8Rng,
    /// Running nodes.
    up: BTreeMap<u64, Arc<SimNode>>,
    /// Directed links that drop everything: (from, to).
    cut: BTreeSet<(u64, u64)>,
    /// While set, this share of RPCs is lost (per mille).
    loss_per_mille: u32,
    /// The leaders of each term seen (one, unless `two-leaders-in-one-epoch`).
    leaders: BTreeMap<u64, BTreeSet<u64>>,
    /// The Raft leader id (term, node) of each KRaft leader epoch the images counted.
    epochs: BTreeMap<u64, (u64, u64)>,
    /// The leader DescribeQuorum answered for each epoch it reported.
    reported: BTreeMap<u64, u64>,
    /// (term, node) of leaders seen leading while not voters (traced once).
    non_voting_leader: BTreeSet<(u64, u64)>,
    /// Image digest by image offset (and the first node that applied it).
    images: BTreeMap<u64, (u64, u64, Arc<MetadataImage>)>,
    /// Voter set of each membership entry by its log position (term, index).
    memberships: BTreeMap<(u64, u64), BTreeSet<u64>>,
    /// Acknowledged producer-id blocks: start -> end (exclusive).
    blocks: BTreeMap<i64, i64>,
    stats: QuorumStats,
    violation: Option<QuorumViolation>,
    /// Kinds counted, not stopped for (`--ignore`).
    ignore: Vec<String>,
    tracing: bool,
    trace: Vec<String>,
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if self.tracing && self.trace.len() < MAX_TRACE {
            let t = self.now();
            self.trace.push(format!("{t:>7} ms  {}", line()));
        }
    }

    fn violate(&mut self, kind: &'static str, detail: String) {
        if self.ignore.iter().any(|k| k == kind) {
            self.stats.ignored += 1;
            self.log(|| format!("(ignored) {kind}: {detail}"));
            return;
        }
        if self.violation.is_none() {
            let time = self.now();
            self.log(|| format!("VIOLATION {kind}: {detail}"));
            self.violation = Some(QuorumViolation { time, kind, detail });
        }
    }
}

type Net = Arc<Mutex<Shared>>;

fn lock(net: &Net) -> std::sync::MutexGuard<'_, Shared> {
    net.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A node's Raft client side of the simulated network.
struct SimNetwork {
    from: u64,
    net: Net,
}

impl RaftNetworkFactory<TypeConfig> for SimNetwork {
    type Network = SimClient;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> SimClient {
        SimClient {
            from: self.from,
            to: target,
            net: self.net.clone(),
        }
    }
}

/// One node's RPCs to another: each way takes 0.1-2 ms (1% of them 20-300 ms, so messages
/// overtake each other), a cut link or a stopped node is unreachable, a lost request or answer
/// is a timeout after the RPC's time to live.
struct SimClient {
    from: u64,
    to: u64,
    net: Net,
}

fn delay(rng: &mut ChaCha8Rng) -> Duration {
    if rng.gen_ratio(1, 100) {
        Duration::from_millis(rng.gen_range(20..300))
    } else {
        Duration::from_micros(rng.gen_range(100..2_000))
    }
}

impl SimClient {
    async fn call<R, E, F, Fut>(
        &self,
        option: &RPCOption,
        rpc: F,
    ) -> Result<R, RPCError<u64, BasicNode, RaftError<u64, E>>>
    where
        E: std::error::Error,
        F: FnOnce(Raft) -> Fut,
        Fut: Future<Output = Result<R, RaftError<u64, E>>>,
    {
        let unreachable = |why: &str| {
            RPCError::Unreachable(Unreachable::new(&std::io::Error::other(why.to_string())))
        };
        let ttl = option.hard_ttl();
        let (there, back, lost) = {
            let mut s = lock(&self.net);
            let lost = s.loss_per_mille > 0 && s.rng.gen_range(0..1000) < s.loss_per_mille;
            let there = delay(&mut s.rng);
            let back = delay(&mut s.rng);
            (there, back, lost)
        };
        tokio::time::sleep(there).await;
        let target = {
            let mut s = lock(&self.net);
            if lost {
                s.stats.lost += 1;
            }
            if s.cut.contains(&(self.from, self.to)) {
                return Err(unreachable("link cut"));
            }
            s.up.get(&self.to).map(|n| n.raft.clone())
        };
        let Some(raft) = target else {
            return Err(unreachable("node down"));
        };
        if lost {
            tokio::time::sleep(ttl.saturating_sub(there)).await;
            return Err(RPCError::Network(NetworkError::new(
                &std::io::Error::other("lost"),
            )));
        }
        let answer = match tokio::time::timeout(ttl, rpc(raft)).await {
            Ok(a) => a,
            Err(_) => {
                return Err(RPCError::Network(NetworkError::new(
                    &std::io::Error::other("timed out"),
                )))
            }
        };
        tokio::time::sleep(back).await;
        if lock(&self.net).cut.contains(&(self.to, self.from)) {
            return Err(unreachable("link cut"));
        }
        match answer {
            Ok(r) => Ok(r),
            // A stopped node's connection closes.
            Err(RaftError::Fatal(_)) => Err(unreachable("node stopped")),
            Err(e) => Err(RemoteError::new(self.to, e).into()),
        }
    }
}

impl RaftNetwork<TypeConfig> for SimClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&option, |r| async move { r.append_entries(rpc).await })
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        let done = rpc.done;
        let to = self.to;
        let net = self.net.clone();
        let answer = self
            .call(&option, |r| async move { r.install_snapshot(rpc).await })
            .await;
        if done && answer.is_ok() {
            let mut s = lock(&net);
            s.stats.snapshots_installed += 1;
            s.log(|| format!("node {to} installed a snapshot"));
        }
        answer
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&option, |r| async move { r.vote(rpc).await })
            .await
    }
}

fn addr(node: u64) -> String {
    format!("controller-{node}:9093")
}

/// A digest of an image that does not depend on map order, without the leader epoch (which
/// entries other than commands move on; checked on its own).
fn digest(image: &MetadataImage) -> u64 {
    let mut image = image.clone();
    image.leader_epoch = 0;
    image.epoch_leader = None;
    let value = serde_json::to_value(&image).unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut h);
    h.finish()
}

/// The top-level fields in which two images differ, with both values (shortened).
fn image_diff(a: &MetadataImage, b: &MetadataImage) -> String {
    let value = |i: &MetadataImage| serde_json::to_value(i).unwrap_or_default();
    let (a, b) = (value(a), value(b));
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return String::new();
    };
    let short = |v: Option<&serde_json::Value>| {
        let t = v.map(|v| v.to_string()).unwrap_or_default();
        t.chars().take(300).collect::<String>()
    };
    a.keys()
        .chain(b.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| {
            !matches!(k.as_str(), "leader_epoch" | "epoch_leader") && a.get(*k) != b.get(*k)
        })
        .map(|k| format!("{k}: {} vs {}", short(a.get(k)), short(b.get(k))))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Watches node `id`'s Raft metrics and images until it stops, checking them against what the
/// other nodes showed.
fn watch_node(net: Net, id: u64, node: Arc<SimNode>) {
    let mut metrics = node.raft.metrics();
    let mut images = node.image.clone();
    let n = net.clone();
    tokio::spawn(async move {
        loop {
            let m = metrics.borrow_and_update().clone();
            let mut new_leadership = false;
            {
                let mut s = lock(&n);
                if m.state == ServerState::Leader {
                    let term = m.current_term;
                    let voter = m
                        .membership_config
                        .membership()
                        .voter_ids()
                        .any(|v| v == id);
                    if !voter && s.non_voting_leader.insert((term, id)) {
                        s.log(|| format!("node {id} leads term {term} but is not a voter"));
                    }
                    let seen = s.leaders.get(&term).cloned().unwrap_or_default();
                    if !seen.contains(&id) {
                        let voters: Vec<u64> =
                            m.membership_config.membership().voter_ids().collect();
                        s.log(|| format!("node {id} leads term {term} (voters {voters:?})"));
                        if seen.is_empty() {
                            s.stats.terms_led += 1;
                        } else {
                            // openraft's leader ids are (term, node): by design, not an epoch.
                            s.stats.terms_with_two_leaders += 1;
                            s.log(|| format!("nodes {seen:?} and {id} both lead Raft term {term}"));
                        }
                        s.leaders.entry(term).or_default().insert(id);
                        new_leadership = true;
                    }
                }
                if let Some(at) = m.membership_config.log_id() {
                    let voters: BTreeSet<u64> =
                        m.membership_config.membership().voter_ids().collect();
                    let key = (at.leader_id.term, at.index);
                    match s.memberships.get(&key) {
                        Some(v) if *v != voters => {
                            let seen = v.clone();
                            s.violate(
                                "memberships-diverged",
                                format!("membership entry {key:?}: voters {seen:?} elsewhere, {voters:?} on node {id}"),
                            )
                        }
                        Some(_) => {}
                        None => {
                            s.memberships.insert(key, voters);
                        }
                    }
                }
            }
            if new_leadership {
                // Every leadership is asked what it reports (a short one too).
                let (n, node) = (n.clone(), node.clone());
                tokio::spawn(async move {
                    let asked = node.handle(ControllerRequest::DescribeQuorum);
                    if let Ok(Ok(ControllerReply::Quorum(status))) =
                        tokio::time::timeout(Duration::from_secs(3), asked).await
                    {
                        record_reported(&n, &status);
                    }
                });
            }
            if metrics.changed().await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let image = images.borrow_and_update().clone();
            let d = digest(&image);
            {
                let mut s = lock(&net);
                if let Some(leader) = image.epoch_leader {
                    let epoch = image.leader_epoch;
                    match s.epochs.get(&epoch).copied() {
                        Some(other) if other != leader => s.violate(
                            "two-leaders-in-one-epoch",
                            format!(
                                "leader epoch {epoch}: Raft leader {other:?} elsewhere, {leader:?} on node {id}"
                            ),
                        ),
                        Some(_) => {}
                        None => {
                            s.epochs.insert(epoch, leader);
                        }
                    }
                }
                match s.images.get(&image.offset).cloned() {
                    Some((other, first, theirs)) if other != d => {
                        let diff = image_diff(&theirs, &image);
                        s.violate(
                            "images-diverged",
                            format!(
                                "the image at log index {} differs between nodes {first} and {id}: {diff}",
                                image.offset
                            ),
                        )
                    }
                    Some(_) => {}
                    None => {
                        s.images.insert(image.offset, (d, id, image.clone()));
                    }
                }
            }
            if images.changed().await.is_err() {
                break;
            }
        }
    });
}

/// Starts node `id` on its data directory and puts it on the network.
async fn start_node(
    net: &Net,
    dirs: &BTreeMap<u64, PathBuf>,
    voters: &BTreeMap<u64, String>,
    id: u64,
) {
    let network = SimNetwork {
        from: id,
        net: net.clone(),
    };
    match SimNode::start(id, &dirs[&id], voters, network, TIMING).await {
        Ok(node) => {
            let node = Arc::new(node);
            lock(net).up.insert(id, node.clone());
            watch_node(net.clone(), id, node);
        }
        Err(e) => lock(net).violate("node-does-not-start", format!("node {id}: {e:#}")),
    }
}

/// Stops node `id` (a crash: what it wrote stays, it answers nothing).
async fn crash_node(net: &Net, id: u64) {
    let node = lock(net).up.remove(&id);
    if let Some(node) = node {
        let _ = node.raft.shutdown().await;
    }
}

/// Asks the quorum `req` as a client or operator would: through each running node in turn
/// until one is the active controller, within [`REQUEST_MS`]. `None` when no answer came.
async fn ask(net: &Net, req: ControllerRequest) -> Option<Result<ControllerReply, String>> {
    let deadline = Instant::now() + Duration::from_millis(REQUEST_MS);
    while Instant::now() < deadline {
        let nodes: Vec<Arc<SimNode>> = lock(net).up.values().cloned().collect();
        for node in nodes {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, node.handle(req.clone())).await {
                Err(_) => return None,
                Ok(Err(frieda_meta::ControllerError::NotController { .. })) => continue,
                Ok(Err(frieda_meta::ControllerError::Unavailable(_))) => continue,
                Ok(Err(e)) => return Some(Err(format!("{e}"))),
                Ok(Ok(reply)) => return Some(Ok(reply)),
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// A client: allocates producer-id blocks one after another and records every answer.
async fn client(net: Net, until: Instant) {
    while Instant::now() < until {
        let pause = lock(&net).rng.gen_range(10..300);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if lock(&net).rng.gen_ratio(1, 4) {
            // `kafka-metadata-quorum describe --status`.
            if let Some(Ok(ControllerReply::Quorum(status))) =
                ask(&net, ControllerRequest::DescribeQuorum).await
            {
                record_reported(&net, &status);
            }
            continue;
        }
        if let Some(Ok(ControllerReply::ProducerIds { start, count })) =
            ask(&net, ControllerRequest::AllocateProducerIds).await
        {
            record_block(&net, start, start + count);
        }
    }
}

/// DescribeQuorum names one leader per epoch it reports.
fn record_reported(net: &Net, status: &frieda_meta::QuorumStatus) {
    let epoch = status.kraft_epoch();
    let mut s = lock(net);
    match (s.reported.get(&epoch).copied(), status.leader) {
        (Some(other), Some(leader)) if other != leader => s.violate(
            "two-leaders-in-one-epoch",
            format!("DescribeQuorum answered leader {other} and leader {leader} for epoch {epoch}"),
        ),
        (None, Some(leader)) => {
            s.reported.insert(epoch, leader);
        }
        _ => {}
    }
}

fn record_block(net: &Net, start: i64, end: i64) {
    let mut s = lock(net);
    s.stats.allocations += 1;
    let before = s.blocks.range(..end).next_back().map(|(a, b)| (*a, *b));
    if let Some((a, b)) = before {
        if b > start {
            s.violate(
                "producer-ids-reused",
                format!("block [{start}, {end}) overlaps the acknowledged block [{a}, {b})"),
            );
        }
    }
    s.blocks.insert(start, end);
}

/// An operator's voter change: the node, whether added, and the answer (`None`: none came).
type VoterChange = (u64, bool, Option<Result<ControllerReply, String>>);

/// Every running node's Raft state, for a violation's detail.
fn node_states(net: &Net) -> Vec<String> {
    lock(net)
        .up
        .values()
        .map(|n| {
            let m = n.raft.metrics().borrow().clone();
            let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
            format!(
                "node {} {:?} term {} leader {:?} voters {voters:?} log {:?} applied {:?}",
                m.id, m.state, m.current_term, m.current_leader, m.last_log_index, m.last_applied
            )
        })
        .collect()
}

/// The voters as the node leading the highest term sees them.
fn voters_now(net: &Net) -> BTreeSet<u64> {
    let s = lock(net);
    s.up.values()
        .map(|n| n.raft.metrics().borrow().clone())
        .max_by_key(|m| (m.current_leader == Some(m.id), m.current_term))
        .map(|m| m.membership_config.membership().voter_ids().collect())
        .unwrap_or_default()
}

thread_local! {
    /// The first panic of a task on this thread while a seed runs.
    static PANICKED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Records panics in [`PANICKED`] (once per process; the default hook still prints them).
fn catch_task_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // "panicked at file:line:col: message", on one line.
            let what = info.to_string().replace('\n', " ");
            PANICKED.with(|p| {
                p.borrow_mut().get_or_insert(what);
            });
            previous(info);
        }));
    });
}

/// Runs seed `seed`: the plan's faults and voter changes for [`FAULT_MS`], then heal and check.
pub fn run_quorum_seed(seed: u64, trace: bool, ignore: &[String]) -> QuorumReport {
    catch_task_panics();
    PANICKED.with(|p| p.borrow_mut().take());
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    // `tokio::select!` without `biased` (openraft's replication loop) picks a ready branch at
    // random from the runtime's generator; seeded, a seed replays. The seed API is tokio's
    // unstable one (`--cfg tokio_unstable`, set in .cargo/config.toml).
    #[cfg(tokio_unstable)]
    builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
    let rt = match builder.build() {
        Ok(rt) => rt,
        Err(e) => panic!("a current-thread runtime: {e}"),
    };
    frieda_meta::seed_thread_rng(seed ^ 0x5241_4654);
    let report = rt.block_on(simulate(seed, trace, ignore.to_vec()));
    drop(rt);
    frieda_meta::unseed_thread_rng();
    report
}

async fn simulate(seed: u64, trace: bool, ignore: Vec<String>) -> QuorumReport {
    let mut plan = ChaCha8Rng::seed_from_u64(seed);
    let root = std::path::Path::new("/dev/shm");
    let tmp = if root.is_dir() {
        tempfile::Builder::new()
            .prefix("frieda-quorum-")
            .tempdir_in(root)
    } else {
        tempfile::Builder::new().prefix("frieda-quorum-").tempdir()
    };
    let tmp = match tmp {
        Ok(t) => t,
        Err(e) => panic!("a temporary directory: {e}"),
    };
    let dirs: BTreeMap<u64, PathBuf> = (1..=NODES)
        .map(|id| (id, tmp.path().join(format!("node-{id}"))))
        .collect();
    let initial = plan.gen_range(1..=3u64);
    let voters: BTreeMap<u64, String> = (1..=initial).map(|id| (id, addr(id))).collect();
    let net: Net = Arc::new(Mutex::new(Shared {
        start: Instant::now(),
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x4e45_5457),
        up: BTreeMap::new(),
        cut: BTreeSet::new(),
        loss_per_mille: 0,
        leaders: BTreeMap::new(),
        non_voting_leader: BTreeSet::new(),
        epochs: BTreeMap::new(),
        reported: BTreeMap::new(),
        images: BTreeMap::new(),
        memberships: BTreeMap::new(),
        blocks: BTreeMap::new(),
        stats: QuorumStats::default(),
        violation: None,
        ignore,
        tracing: trace,
        trace: Vec::new(),
    }));
    lock(&net).log(|| {
        format!(
            "seed {seed}: {NODES} nodes, initial voters {:?}",
            voters.keys().collect::<Vec<_>>()
        )
    });
    for id in 1..=NODES {
        start_node(&net, &dirs, &voters, id).await;
    }
    let faults_end = Instant::now() + Duration::from_millis(FAULT_MS);
    let clients = plan.gen_range(1..=3);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        tasks.push(tokio::spawn(client(net.clone(), faults_end)));
    }
    // The last acknowledged voter status of each node (None: a change of it failed since).
    let mut expected: BTreeMap<u64, Option<bool>> =
        (1..=NODES).map(|id| (id, Some(id <= initial))).collect();
    let mut down: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut heal_at: Option<Instant> = None;
    let mut change: Option<tokio::task::JoinHandle<VoterChange>> = None;
    while Instant::now() < faults_end && lock(&net).violation.is_none() {
        tokio::time::sleep(Duration::from_millis(plan.gen_range(100..1_500))).await;
        let now = Instant::now();
        // Restarts and heals that are due.
        let due: Vec<u64> = down
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            down.remove(&id);
            lock(&net).log(|| format!("node {id} restarts"));
            start_node(&net, &dirs, &voters, id).await;
        }
        if heal_at.is_some_and(|at| at <= now) {
            heal_at = None;
            let mut s = lock(&net);
            s.cut.clear();
            s.loss_per_mille = 0;
            s.log(|| "the network heals".to_string());
        }
        if let Some(c) = change.take_if(|c| c.is_finished()) {
            if let Ok((node, add, answer)) = c.await {
                settle_change(&net, &mut expected, node, add, answer);
            }
        }
        match plan.gen_range(0..100) {
            0..=19 => {
                let up: Vec<u64> = lock(&net).up.keys().copied().collect();
                if up.len() > 1 {
                    let id = up[plan.gen_range(0..up.len())];
                    let back = plan.gen_range(200..6_000);
                    lock(&net).log(|| format!("node {id} crashes (back in {back} ms)"));
                    lock(&net).stats.crashes += 1;
                    crash_node(&net, id).await;
                    down.insert(id, Instant::now() + Duration::from_millis(back));
                }
            }
            20..=34 if heal_at.is_none() => {
                let side: BTreeSet<u64> = (1..=NODES).filter(|_| plan.gen_bool(0.4)).collect();
                let one_way = plan.gen_ratio(1, 4);
                let len = plan.gen_range(500..8_000);
                let mut s = lock(&net);
                for a in &side {
                    for b in (1..=NODES).filter(|b| !side.contains(b)) {
                        s.cut.insert((*a, b));
                        if !one_way {
                            s.cut.insert((b, *a));
                        }
                    }
                }
                if plan.gen_ratio(1, 3) {
                    s.loss_per_mille = plan.gen_range(10..200);
                }
                s.stats.cuts += 1;
                let loss = s.loss_per_mille;
                s.log(|| {
                    format!(
                        "nodes {side:?} cut off{} for {len} ms, {loss}‰ of RPCs lost",
                        if one_way { " one way" } else { "" }
                    )
                });
                heal_at = Some(Instant::now() + Duration::from_millis(len));
            }
            35..=59 if change.is_none() => {
                let current = voters_now(&net);
                let add =
                    current.len() < 2 || (current.len() < NODES as usize && plan.gen_bool(0.5));
                let node = if add {
                    let others: Vec<u64> = (1..=NODES).filter(|n| !current.contains(n)).collect();
                    others[plan.gen_range(0..others.len())]
                } else {
                    let v: Vec<u64> = current.iter().copied().collect();
                    v[plan.gen_range(0..v.len())]
                };
                lock(&net).log(|| {
                    format!(
                        "operator: {} voter {node}",
                        if add { "add" } else { "remove" }
                    )
                });
                let n = net.clone();
                change = Some(tokio::spawn(async move {
                    let req = if add {
                        ControllerRequest::AddVoter {
                            node,
                            addr: addr(node),
                        }
                    } else {
                        ControllerRequest::RemoveVoter { node }
                    };
                    (node, add, ask(&n, req).await)
                }));
            }
            _ => {}
        }
    }
    // Heal: every node runs, every link works; the operator's last change gets its answer.
    {
        let mut s = lock(&net);
        s.cut.clear();
        s.loss_per_mille = 0;
        s.log(|| "faults end: the network heals, every node runs".to_string());
    }
    for id in down.keys().copied().collect::<Vec<_>>() {
        start_node(&net, &dirs, &voters, id).await;
    }
    if let Some(c) = change.take() {
        if let Ok((node, add, answer)) = c.await {
            settle_change(&net, &mut expected, node, add, answer);
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    // Liveness: a leader and a committed write.
    let recovered = tokio::time::timeout(Duration::from_millis(RECOVERY_MS), async {
        loop {
            if let Some(Ok(ControllerReply::ProducerIds { start, count })) =
                ask(&net, ControllerRequest::AllocateProducerIds).await
            {
                record_block(&net, start, start + count);
                return;
            }
        }
    })
    .await;
    if recovered.is_err() {
        let states = node_states(&net);
        lock(&net).violate(
            "no-progress",
            format!("no write committed within {RECOVERY_MS} ms of the heal: {states:?}"),
        );
    }
    // Let every member apply the log's end, then compare.
    let deadline = Instant::now() + Duration::from_millis(RECOVERY_MS);
    loop {
        if final_checks(&net, &expected) {
            break;
        }
        if Instant::now() >= deadline {
            let states = node_states(&net);
            lock(&net).violate(
                "no-progress",
                format!(
                    "no leader with every member caught up within {RECOVERY_MS} ms: {states:?}"
                ),
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let nodes: Vec<Arc<SimNode>> = std::mem::take(&mut lock(&net).up).into_values().collect();
    for n in nodes {
        let _ = n.raft.shutdown().await;
    }
    let mut s = lock(&net);
    if let Some(what) = PANICKED.with(|p| p.borrow_mut().take()) {
        s.violate("panicked", what);
    }
    s.stats.sim_ms = s.now();
    QuorumReport {
        seed,
        violation: s.violation.clone(),
        stats: s.stats.clone(),
        trace: std::mem::take(&mut s.trace),
    }
}

fn settle_change(
    net: &Net,
    expected: &mut BTreeMap<u64, Option<bool>>,
    node: u64,
    add: bool,
    answer: Option<Result<ControllerReply, String>>,
) {
    let mut s = lock(net);
    let what = if add { "add" } else { "remove" };
    match answer {
        Some(Ok(_)) => {
            expected.insert(node, Some(add));
            if add {
                s.stats.voters_added += 1;
            } else {
                s.stats.voters_removed += 1;
            }
            s.log(|| format!("operator: {what} voter {node}: OK"));
        }
        other => {
            expected.insert(node, None);
            s.stats.voter_changes_failed += 1;
            s.log(|| format!("operator: {what} voter {node}: {other:?}"));
        }
    }
}

/// After the heal, once a leader leads and every member applied what it applied (`false`
/// until then): the leader's voters are what the last acknowledged changes made them, and
/// every member hands out ids above every acknowledged block.
fn final_checks(net: &Net, expected: &BTreeMap<u64, Option<bool>>) -> bool {
    let mut s = lock(net);
    let views: Vec<_> =
        s.up.values()
            .map(|n| (n.raft.metrics().borrow().clone(), n.image.borrow().clone()))
            .collect();
    let Some((leader, _)) = views.iter().find(|(m, _)| m.state == ServerState::Leader) else {
        return false;
    };
    let membership = leader.membership_config.membership().clone();
    let members: Vec<_> = views
        .iter()
        .filter(|(m, _)| membership.get_node(&m.id).is_some())
        .collect();
    if members
        .iter()
        .any(|(m, _)| m.last_applied != leader.last_applied)
        || leader.last_applied.map(|l| l.index) != leader.last_log_index
    {
        return false;
    }
    let voters: BTreeSet<u64> = membership.voter_ids().collect();
    for (node, want) in expected {
        if let Some(want) = want {
            if voters.contains(node) != *want {
                let detail = format!(
                    "node {node} should {}be a voter after its last acknowledged change; voters {voters:?}",
                    if *want { "" } else { "not " }
                );
                s.violate("voter-change-lost", detail);
            }
        }
    }
    let top = s.blocks.values().copied().max().unwrap_or(0);
    for (m, image) in &members {
        if image.next_producer_id < top {
            let detail = format!(
                "node {} hands out producer ids from {}, below the acknowledged block ending at {top}",
                m.id, image.next_producer_id
            );
            s.violate("producer-ids-reused", detail);
        }
    }
    true
}
