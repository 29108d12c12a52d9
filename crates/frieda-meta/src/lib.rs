//! Frieda's metadata quorum: the cluster's metadata (brokers and their fencing, topics, partition
//! assignments, leaders, leader epochs, in-sync replicas, configs) in one replicated log, run by
//! `openraft` (Raft; no consensus code of our own), as KRaft keeps Kafka's.
//!
//! Layers, each using only those below:
//! - [`image`]: the metadata image and the commands that change it (the state machine's
//!   deterministic transition function);
//! - `types`, `log_store` (the Raft log in a Frieda partition log), `state_machine` (the image,
//!   its snapshots), `network` (the controller listener's protocol, secured by an injected
//!   [`QuorumTransport`]): openraft's plumbing;
//! - [`controller`]: what the node leading the quorum decides (broker sessions and fencing,
//!   placement, elections, ISR changes); [`sessions`]: its broker sessions and quorum claims,
//!   sans-IO (the cluster simulator keeps its sessions in the same type);
//! - [`MetadataQuorum`]: the handle a broker holds;
//! - [`remote_log`]: the rules over a tiered partition's remote segments (KIP-405; the image
//!   keeps them from step 2 of `docs/tiered-storage.md`).

#![warn(missing_docs)]

pub mod controller;
pub mod housekeeping;
pub mod image;
pub mod leadership;
mod log_store;
mod network;
pub mod partition_change;
pub mod placement;
pub mod quorum;
pub mod remote_log;
mod runtime;
pub mod security;
pub mod sessions;
pub mod sim;
mod state_machine;
mod types;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use openraft::{BasicNode, Config, ServerState};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

pub use controller::{
    ControllerError, ControllerReply, ControllerRequest, Heartbeat, PRODUCER_ID_BLOCK,
};
pub use image::{
    BrokerId, BrokerRegistration, Electing, Endpoint, MetaCommand, MetaError, MetaOutcome,
    MetadataImage, PartitionState, TopicImage, NO_LEADER,
};
pub use leadership::{LeaderPlacement, PlacementConfig};
pub use security::{
    AclEntry, ClientQuotas, DelegationToken, DelegationTokens, QuotaEntity, ScramCredential,
    ScramCredentials,
};

use controller::{Controller, ControllerConfig};
use log_store::LogStore;
pub use network::{
    BoxFuture, Contact, PeerIdentity, PlaintextTransport, QuorumStream, QuorumTransport,
    Reachability, AUTHENTICATION_TIMEOUT, MAX_AUTHENTICATING, MAX_CONNECTIONS, MAX_FRAME_BYTES,
    UNAUTHORIZED_MAX_FRAME_BYTES,
};

use network::{Conn, Network, Request, Response};
pub use runtime::{seed_thread_rng, unseed_thread_rng};
use state_machine::StateMachine;
use types::Raft;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Writes `value` as JSON durably (temporary file, fsync, rename, directory fsync).
pub(crate) fn durable_write<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        serde_json::to_writer(&mut f, value).map_err(std::io::Error::other)?;
        f.flush()?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads a JSON file written by [`durable_write`]; `None` if it does not exist.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> std::io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// How a node takes part in the quorum.
#[derive(Debug, Clone)]
pub struct QuorumConfig {
    /// This node's id (`node.id`).
    pub node_id: u64,
    /// `controller.quorum.voters`: voter id -> controller listener address (`host:port`).
    /// Empty for a node that joins an existing quorum through `bootstrap`.
    pub voters: BTreeMap<u64, String>,
    /// `controller.quorum.bootstrap.servers` (KIP-853) when `voters` is empty: controller
    /// listeners (`host:port`) to send this node's first requests to (its heartbeat makes it an
    /// observer, a learner of the metadata log; `kafka-metadata-quorum add-controller` may then
    /// make it a voter).
    pub bootstrap: Vec<String>,
    /// Address to bind the controller listener to.
    pub listen: SocketAddr,
    /// How other nodes reach this node's controller listener (`host:port`).
    pub advertised: String,
    /// Where the metadata log, vote and snapshot live (`<data.dir>/meta/__cluster_metadata-0`).
    pub dir: PathBuf,
    /// `controller.quorum.election.timeout.ms` (openraft's minimum; the maximum is twice it).
    pub election_timeout_ms: u64,
    /// Raft heartbeat interval, ms (below the election timeout).
    pub heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`: brokers silent this long are fenced.
    pub broker_session_timeout_ms: u64,
    /// Preferred-leader rebalancing: every this many ms (`leader.imbalance.check.interval.seconds`),
    /// `None` when off (`auto.leader.rebalance.enable=false`).
    pub leader_rebalance_interval_ms: Option<u64>,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_percentage: u32,
    /// `leader.placement` and its settings (issue 33, see [`leadership`]).
    pub leader_placement: PlacementConfig,
    /// `unclean.leader.election.enable` of this node's static configuration.
    pub unclean_leader_election: bool,
    /// `min.insync.replicas` of this node's static configuration.
    pub min_insync_replicas: i32,
    /// `replication.ack.policy=quorum` in this node's static configuration (issue 34).
    pub quorum_acks: bool,
    /// How the controller listener authenticates and authorizes peers and how this node
    /// connects to the others ([`PlaintextTransport`]: Kafka's PLAINTEXT).
    pub transport: Arc<dyn QuorumTransport>,
}

/// One voter as DescribeQuorum reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoterState {
    /// Node id.
    pub id: u64,
    /// The last log index known replicated to it (the leader's view), -1 if unknown.
    pub log_end_offset: i64,
    /// When it last acknowledged the leader's entries (KRaft's LastFetchTimestamp), ms since
    /// the epoch, -1 if unknown; the leader's own is the time of the answer.
    #[serde(default = "unknown_ms")]
    pub last_fetch_ms: i64,
    /// When it last held everything the leader had committed (KRaft's LastCaughtUpTimestamp),
    /// ms since the epoch, -1 if unknown; the leader's own is the time of the answer.
    pub last_caught_up_ms: i64,
}

/// -1: a time not known (a status from a node that predates `last_fetch_ms`).
fn unknown_ms() -> i64 {
    -1
}

/// Set once this process's quorum node begins to stop ([`MetadataQuorum::shutdown`]).
static SHUTTING_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process's quorum node is stopping: openraft then reports, as ERRORs, each call
/// that meets its stopped core (a broker task's last controller request, a leadership check),
/// which is routine at that point; the broker's log filter leaves those reports out
/// (`frieda::logging`).
pub fn shutting_down() -> bool {
    SHUTTING_DOWN.load(std::sync::atomic::Ordering::Relaxed)
}

/// How long an observer (a learner: a broker-only node) stays listed by DescribeQuorum after
/// its last acknowledgement (Kafka's `LeaderState` observer session, 5 minutes): a node removed
/// and stopped drops out of `kafka-metadata-quorum describe` (issue 59).
pub const OBSERVER_SESSION_MS: i64 = 300_000;

/// The quorum's state for DescribeQuorum (`kafka-metadata-quorum describe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumStatus {
    /// The leader's node id, if any.
    pub leader: Option<u64>,
    /// The Raft term (not unique per leader: see `leader_epoch`).
    pub term: u64,
    /// KRaft's leader epoch ([`MetadataImage::leader_epoch`] of the answering node), 0 if
    /// unknown (an answer from a node that predates it).
    #[serde(default)]
    pub leader_epoch: u64,
    /// The highest committed index + 1 (KRaft's high watermark), -1 if none.
    pub high_watermark: i64,
    /// Voters (with replication state when this node leads).
    pub voters: Vec<VoterState>,
    /// Learners (broker-only nodes).
    pub observers: Vec<VoterState>,
    /// Every member's controller-listener address (`host:port`), by node id.
    #[serde(default)]
    pub addresses: BTreeMap<u64, String>,
}

impl QuorumStatus {
    /// The leader epoch to report as KRaft's (DescribeQuorum's LeaderEpoch): the image's
    /// [`leader_epoch`](Self::leader_epoch), which names one leader, or the Raft term from a
    /// node that predates it.
    pub fn kraft_epoch(&self) -> u64 {
        if self.leader_epoch > 0 {
            self.leader_epoch
        } else {
            self.term
        }
    }
}

/// Whether DescribeQuorum lists an observer that last acknowledged the leader's entries at
/// `last_fetch_ms` (-1: never since this node leads) at `now_ms`: within
/// [`OBSERVER_SESSION_MS`].
fn observer_listed(last_fetch_ms: i64, now_ms: i64) -> bool {
    last_fetch_ms >= 0 && now_ms - last_fetch_ms <= OBSERVER_SESSION_MS
}

/// The quorum's state from `raft`'s metrics on node `me` (the followers' progress is known on
/// the leader only), with the leader epoch of `image` and the times each peer last
/// acknowledged this node's entries (`contacts`). Observers not heard from within
/// [`OBSERVER_SESSION_MS`] are left out.
pub(crate) fn quorum_status(
    raft: &Raft,
    me: u64,
    image: &MetadataImage,
    contacts: &network::Reachability,
) -> QuorumStatus {
    let m = raft.metrics().borrow().clone();
    let now_ms = now_ms();
    let progress = m.replication.clone().unwrap_or_default();
    let leading = m.current_leader == Some(me);
    let state_of = |id: u64| {
        if Some(id) == m.current_leader && leading {
            return VoterState {
                id,
                log_end_offset: m.last_log_index.map_or(-1, |i| i as i64 + 1),
                last_fetch_ms: now_ms,
                last_caught_up_ms: now_ms,
            };
        }
        let leo = match progress.get(&id) {
            Some(Some(l)) => l.index as i64 + 1,
            _ => -1,
        };
        let contact = contacts.contact(id).filter(|_| leading);
        VoterState {
            id,
            log_end_offset: leo,
            last_fetch_ms: contact.map_or(-1, |c| c.last_fetch_ms),
            last_caught_up_ms: contact.map_or(-1, |c| c.last_caught_up_ms),
        }
    };
    let membership = m.membership_config.membership().clone();
    let addresses = membership
        .nodes()
        .map(|(id, n)| (*id, n.addr.clone()))
        .collect();
    let voters: Vec<u64> = membership.voter_ids().collect();
    let observers: Vec<VoterState> = membership
        .learner_ids()
        .map(state_of)
        .filter(|o| observer_listed(o.last_fetch_ms, now_ms))
        .collect();
    QuorumStatus {
        leader: m.current_leader,
        term: m.current_term,
        leader_epoch: image.leader_epoch,
        high_watermark: m.last_applied.map_or(-1, |l| l.index as i64 + 1),
        voters: voters.into_iter().map(state_of).collect(),
        observers,
        addresses,
    }
}

/// Raft log entries between two snapshots of the image (openraft's `LogsSinceLast`).
const SNAPSHOT_EVERY: u64 = 5000;
/// Raft log entries kept behind the last snapshot (openraft's `max_in_snapshot_log_to_keep`).
const LOGS_KEPT_BEHIND_SNAPSHOT: u64 = 1000;

/// The quorum's Raft configuration: an election timeout drawn from
/// `[election_timeout_ms, 2 * election_timeout_ms)`, a heartbeat every `heartbeat_interval_ms`,
/// a snapshot every `snapshot_every` entries, `logs_kept_behind` entries kept behind it.
///
/// Errors: openraft refuses the timeouts (the heartbeat not below the election timeout).
pub(crate) fn raft_config(
    election_timeout_ms: u64,
    heartbeat_interval_ms: u64,
    snapshot_every: u64,
    logs_kept_behind: u64,
) -> anyhow::Result<Arc<Config>> {
    let config = Config {
        cluster_name: "frieda".into(),
        election_timeout_min: election_timeout_ms,
        election_timeout_max: election_timeout_ms * 2,
        heartbeat_interval: heartbeat_interval_ms,
        install_snapshot_timeout: 10_000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(snapshot_every),
        max_in_snapshot_log_to_keep: logs_kept_behind,
        ..Config::default()
    }
    .validate()
    .context("invalid quorum timeouts")?;
    Ok(Arc::new(config))
}

/// Opens node `node_id`'s metadata log and snapshot in `dir` (creating them) and starts its
/// Raft node on `network`. Returns the node, the images it applies, and whether its log was
/// empty (a first start).
///
/// Errors: the data cannot be opened or Raft refuses to start on it.
pub(crate) async fn open_raft<N: openraft::network::RaftNetworkFactory<types::TypeConfig>>(
    node_id: u64,
    dir: &Path,
    config: Arc<Config>,
    network: N,
) -> anyhow::Result<(Raft, watch::Receiver<Arc<MetadataImage>>, bool)> {
    frieda_log::create_dir_durably(dir)?;
    let log = LogStore::open(dir)
        .with_context(|| format!("opening the metadata log in {}", dir.display()))?;
    let fresh = log.end() == 0;
    let (tx, image) = watch::channel(Arc::new(MetadataImage::default()));
    let sm = StateMachine::open(dir, Arc::new(tx))
        .with_context(|| format!("opening the metadata snapshot in {}", dir.display()))?;
    let raft = Raft::new(node_id, config, network, log, sm)
        .await
        .context("starting the Raft node")?;
    tokio::spawn(resign_when_removed(raft.clone(), node_id));
    Ok((raft, image, fresh))
}

/// On a voter's first start (`fresh`: its log is empty), proposes `voters`
/// (`controller.quorum.voters`) as the initial membership, in a task of its own. Every voter
/// proposes the same one; openraft accepts it where the log is empty, and the elected leader's
/// log wins. `None` for a node that is not among them or has started before.
pub(crate) fn propose_initial_voters(
    raft: &Raft,
    me: u64,
    voters: &BTreeMap<u64, String>,
    fresh: bool,
) -> Option<tokio::task::JoinHandle<()>> {
    if !fresh || !voters.contains_key(&me) {
        return None;
    }
    let members: BTreeMap<u64, BasicNode> = voters
        .iter()
        .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
        .collect();
    let r = raft.clone();
    Some(tokio::spawn(async move {
        if let Err(e) = r.initialize(members).await {
            tracing::debug!(error = %e, "quorum already initialized");
        }
    }))
}

/// Keeps node `me` from leading once the voters no longer include it: a leader whose removal
/// is committed and applied stops sending heartbeats, so the voters elect a leader among
/// themselves (KIP-853: the removed leader resigns once the change is committed). openraft 0.9
/// may keep such a node leading as a learner; with a second voter change it then starts, the
/// quorum can be left with no node able to win an election (`frieda-sim --quorum` seed 647).
/// Ends when the node stops.
async fn resign_when_removed(raft: Raft, me: u64) {
    let mut metrics = raft.metrics();
    let mut resigned = false;
    loop {
        let removed_leader = {
            let m = metrics.borrow_and_update();
            let config = &m.membership_config;
            m.state == ServerState::Leader
                && !config.membership().voter_ids().any(|v| v == me)
                && config.log_id().is_some()
                && m.last_applied >= *config.log_id()
        };
        if removed_leader != resigned {
            resigned = removed_leader;
            raft.runtime_config().heartbeat(!resigned);
            if resigned {
                tracing::info!(
                    node = me,
                    "removed from the voters: resigning the leadership"
                );
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

/// Gives `identity` the cluster id once the metadata image holds it (the first InitCluster),
/// then ends.
async fn learn_cluster_id(
    mut image: watch::Receiver<Arc<MetadataImage>>,
    identity: Arc<network::Identity>,
) {
    loop {
        if let Some(id) = image.borrow_and_update().cluster_id.clone() {
            identity.set_cluster_id(&id);
            return;
        }
        if image.changed().await.is_err() {
            return;
        }
    }
}

/// Idle controller-request connections kept per node.
const POOLED_PER_NODE: usize = 4;

/// A node's handle on the metadata quorum.
pub struct MetadataQuorum {
    node_id: u64,
    raft: Raft,
    controller: Arc<Controller>,
    image: watch::Receiver<Arc<MetadataImage>>,
    voters: BTreeMap<u64, String>,
    /// See [`QuorumConfig::bootstrap`].
    bootstrap: Vec<String>,
    transport: Arc<dyn QuorumTransport>,
    /// This node on its quorum connections (their Hello).
    identity: Arc<network::Identity>,
    /// Idle connections to other nodes' controller listeners, by node id (a secured
    /// connection's handshake is paid once, not per heartbeat).
    pool: parking_lot::Mutex<BTreeMap<u64, Vec<Conn>>>,
    stop: watch::Sender<bool>,
    /// The controller listener ([`network::serve`]) and its connections: aborted at shutdown
    /// before Raft stops, so no peer's request reaches a stopping core.
    server: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
    tasks: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl MetadataQuorum {
    /// Starts this node: opens (or creates) its metadata log and snapshot, binds the controller
    /// listener, joins the quorum (the voters form it on their first start: no format step),
    /// and runs the controller duties whenever this node leads.
    ///
    /// Errors: the data cannot be opened, the listener cannot be bound.
    pub async fn start(cfg: QuorumConfig) -> anyhow::Result<Arc<MetadataQuorum>> {
        let config = raft_config(
            cfg.election_timeout_ms,
            cfg.heartbeat_interval_ms,
            SNAPSHOT_EVERY,
            LOGS_KEPT_BEHIND_SNAPSHOT,
        )?;
        let contacts = Arc::new(network::Reachability::default());
        let identity = Arc::new(network::Identity::new(cfg.node_id));
        let (raft, image, fresh) = open_raft(
            cfg.node_id,
            &cfg.dir,
            config,
            Network::with_reachability(cfg.transport.clone(), identity.clone(), contacts.clone()),
        )
        .await?;
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .with_context(|| format!("binding the controller listener {}", cfg.listen))?;
        let controller = Arc::new(Controller::new(
            raft.clone(),
            cfg.node_id,
            image.clone(),
            contacts.clone(),
            ControllerConfig {
                session_timeout: Duration::from_millis(cfg.broker_session_timeout_ms),
                leader_rebalance_interval: cfg
                    .leader_rebalance_interval_ms
                    .map(Duration::from_millis),
                leader_imbalance_percentage: cfg.leader_imbalance_percentage,
                placement: cfg.leader_placement,
                unclean_leader_election: cfg.unclean_leader_election,
                min_insync_replicas: cfg.min_insync_replicas,
                quorum_acks: cfg.quorum_acks,
            },
        ));
        let (stop, stop_rx) = watch::channel(false);
        let server = tokio::spawn(network::serve(
            listener,
            raft.clone(),
            controller.clone(),
            cfg.transport.clone(),
            identity.clone(),
        ));
        let mut tasks = vec![
            tokio::spawn(controller.clone().run(stop_rx)),
            tokio::spawn(learn_cluster_id(image.clone(), identity.clone())),
        ];
        if let Some(task) = propose_initial_voters(&raft, cfg.node_id, &cfg.voters, fresh) {
            tasks.push(task);
        }
        tracing::info!(node = cfg.node_id, listen = %cfg.listen, voters = ?cfg.voters,
            security_protocol = cfg.transport.protocol(), "metadata quorum started");
        Ok(Arc::new(MetadataQuorum {
            node_id: cfg.node_id,
            raft,
            controller,
            image,
            voters: cfg.voters,
            bootstrap: cfg.bootstrap,
            transport: cfg.transport,
            identity,
            pool: parking_lot::Mutex::new(BTreeMap::new()),
            stop,
            server: parking_lot::Mutex::new(Some(server)),
            tasks: parking_lot::Mutex::new(tasks),
        }))
    }

    /// This node's id.
    pub fn node_id(&self) -> u64 {
        self.node_id
    }

    /// The latest applied image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// A receiver of every new image (one per applied batch of commands).
    pub fn subscribe(&self) -> watch::Receiver<Arc<MetadataImage>> {
        self.image.clone()
    }

    /// The active controller's node id, if known.
    pub fn leader(&self) -> Option<u64> {
        self.raft.metrics().borrow().current_leader
    }

    /// Whether this node is the active controller.
    pub fn is_leader(&self) -> bool {
        let m = self.raft.metrics().borrow().clone();
        m.state == ServerState::Leader && m.current_leader == Some(self.node_id)
    }

    /// The controller-listener address of node `id`.
    fn address_of(&self, id: u64) -> Option<String> {
        let m = self.raft.metrics().borrow().clone();
        m.membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
            .or_else(|| self.voters.get(&id).cloned())
    }

    /// Sends `req` to the active controller (this node, or forwarded), retrying while the
    /// quorum elects a leader, for up to `timeout`.
    ///
    /// Errors: the controller's answer, or `Unavailable` when no leader answered in time.
    pub async fn request(
        &self,
        req: ControllerRequest,
        timeout: Duration,
    ) -> Result<ControllerReply, ControllerError> {
        let deadline = Instant::now() + timeout;
        let mut last = ControllerError::Unavailable("no active controller".into());
        // Voters to ask when no leader is known here (a broker-only node learns the leader from
        // the metadata log, which it only gets once its first heartbeat made it a learner): a
        // voter that does not lead answers NOT_CONTROLLER with the leader it knows.
        let others: Vec<u64> = self
            .voters
            .keys()
            .copied()
            .filter(|v| *v != self.node_id)
            .collect();
        let mut hint: Option<u64> = None;
        let mut turn = 0usize;
        while Instant::now() < deadline {
            let leader = self.leader().or(hint.take()).or_else(|| {
                turn += 1;
                (!others.is_empty()).then(|| others[turn % others.len()])
            });
            let result = match leader {
                Some(l) if l == self.node_id => {
                    // Decided here, in a task of its own: a leader that lost its quorum waits on
                    // the commit until the quorum heals or a new leader deposes it, and the
                    // caller must not wait that long (a controlled shutdown of the controller
                    // while the other voters stop hung here). The task keeps the decision lock
                    // until the outcome is known, so no later decision is made on an image that
                    // misses this one's entry.
                    let controller = self.controller.clone();
                    let r = req.clone();
                    let task = tokio::spawn(async move { controller.handle(r).await });
                    let left = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, task).await {
                        Ok(Ok(reply)) => reply,
                        Ok(Err(join)) => Err(ControllerError::Unavailable(format!(
                            "the controller's decision failed: {join}"
                        ))),
                        Err(_) => Err(ControllerError::Unavailable(
                            "timed out waiting for the metadata quorum to commit".into(),
                        )),
                    }
                }
                Some(l) => match self.address_of(l) {
                    Some(addr) => {
                        let conn = self.pooled(l, addr);
                        self.call_at(Some(l), conn, &req, deadline).await
                    }
                    None => Err(ControllerError::Unavailable(format!(
                        "no address for node {l}"
                    ))),
                },
                // A node joining through controller.quorum.bootstrap.servers knows no voter
                // yet: ask the bootstrap controllers in turn until the leader answers.
                None if !self.bootstrap.is_empty() => {
                    turn += 1;
                    let addr = self.bootstrap[turn % self.bootstrap.len()].clone();
                    let conn = Conn::new(addr, self.transport.clone(), self.identity.clone(), None);
                    self.call_at(None, conn, &req, deadline).await
                }
                None => Err(ControllerError::Unavailable("no active controller".into())),
            };
            match result {
                Err(ControllerError::NotController { leader: Some(l) })
                    if Some(l) != leader && self.leader().is_none() =>
                {
                    // Go straight to the leader the voter named.
                    hint = Some(l);
                    last = ControllerError::NotController { leader: Some(l) };
                }
                Err(
                    e @ (ControllerError::NotController { .. } | ControllerError::Unavailable(_)),
                ) => {
                    last = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => return other,
            }
        }
        Err(last)
    }

    /// Sends `req` on `conn` (to node `id`, pooled again after an answer; `None`: a bootstrap
    /// address, not pooled).
    async fn call_at(
        &self,
        id: Option<u64>,
        mut conn: Conn,
        req: &ControllerRequest,
        deadline: Instant,
    ) -> Result<ControllerReply, ControllerError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let answer = conn
            .call(
                &Request::Controller(req.clone()),
                left.max(Duration::from_millis(100)),
            )
            .await;
        match answer {
            Ok(Response::Controller(r)) => {
                if let Some(l) = id {
                    self.unpool(l, conn);
                }
                r
            }
            Ok(Response::Refused(why)) => {
                tracing::warn!(node = ?id, addr = %conn.addr(), reason = %why, request = req.kind(),
                    "the active controller refused this node's request (a principal that is not a super user there, or an address that reaches another node or cluster)");
                Err(ControllerError::Refused(why))
            }
            Ok(_) => Err(ControllerError::Unavailable("unexpected answer".into())),
            Err(e) => Err(ControllerError::Unavailable(e.to_string())),
        }
    }

    /// An idle connection to node `id` at `addr` from the pool, or a new one.
    fn pooled(&self, id: u64, addr: String) -> Conn {
        let mut pool = self.pool.lock();
        let idle = pool.entry(id).or_default();
        while let Some(c) = idle.pop() {
            if c.addr() == addr {
                return c;
            }
        }
        Conn::new(
            addr,
            self.transport.clone(),
            self.identity.clone(),
            Some(id),
        )
    }

    /// Gives a connection that just answered back to the pool (at most [`POOLED_PER_NODE`]
    /// idle ones per node; more are closed).
    fn unpool(&self, id: u64, conn: Conn) {
        let mut pool = self.pool.lock();
        let idle = pool.entry(id).or_default();
        if idle.len() < POOLED_PER_NODE {
            idle.push(conn);
        }
    }

    /// Waits until the applied image satisfies `done`, for up to `timeout`; returns it.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&MetadataImage) -> bool,
    ) -> Option<Arc<MetadataImage>> {
        let mut rx = self.image.clone();
        let wait = async {
            loop {
                let img = rx.borrow_and_update().clone();
                if done(&img) {
                    return img;
                }
                if rx.changed().await.is_err() {
                    return img;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.ok()
    }

    /// The quorum's state as this node sees it (replication progress only on the leader;
    /// [`ControllerRequest::DescribeQuorum`] asks the leader).
    pub fn status(&self) -> QuorumStatus {
        quorum_status(
            &self.raft,
            self.node_id,
            &self.image.borrow(),
            &self.controller.contacts,
        )
    }

    /// Resolves when this node's Raft stops for good (a storage failure, a violated
    /// invariant): the reason. A node whose metadata can no longer advance must stop serving,
    /// since it would act on a stale image.
    pub async fn fatal(&self) -> String {
        let mut metrics = self.raft.metrics();
        loop {
            if let Err(e) = &metrics.borrow_and_update().running_state {
                return e.to_string();
            }
            if metrics.changed().await.is_err() {
                return "the Raft node stopped".into();
            }
        }
    }

    /// Stops the node's quorum tasks and Raft: first every task that calls into Raft (the
    /// controller listener and its connections, the controller's loop), so that none is
    /// mid-call when the core stops (a peer's AppendEntries or the controller's leadership
    /// check reaching a stopped core made openraft log ERRORs on every routine restart), then
    /// Raft.
    pub async fn shutdown(&self) {
        SHUTTING_DOWN.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.stop.send(true);
        let mut tasks: Vec<_> = self.server.lock().take().into_iter().collect();
        tasks.extend(self.tasks.lock().drain(..));
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
        self.pool.lock().clear();
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "stopping Raft");
        }
    }
}

#[cfg(test)]
mod test_images;
#[cfg(test)]
mod tests;
