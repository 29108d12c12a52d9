//! One KIP-1071 streams group (the `streams` group protocol of Kafka Streams 4.x): members
//! heartbeat with their member epoch and, when joining, the application's topology; the
//! coordinator configures the topology against the cluster's topics ([`topology`]: task counts,
//! internal topics to create), computes a target assignment of active tasks with a sticky,
//! balanced assignor whenever the group epoch moves past the assignment epoch, and reconciles each
//! member towards it the way KIP-848 does for partitions: tasks to give up are revoked first (the
//! member keeps its epoch until it reports them gone), tasks still held by another member are
//! given once released. Pure state, unit-tested below.
//!
//! Semantics follow Kafka 4.4's `GroupMetadataManager.streamsGroupHeartbeat`, `StreamsGroup` and
//! the streams `CurrentAssignmentBuilder`: epoch 0 joins (with a topology), -1 leaves, a member
//! with a greater epoch than the coordinator's, or a smaller one that is not its previous epoch
//! with a subset of its tasks, is FENCED_MEMBER_EPOCH (110); a topology that differs from the
//! group's at the same or a newer epoch is INVALID_REQUEST ("Topology updates are not supported
//! yet", as in Kafka 4.4). Group states are Kafka's `StreamsGroupState`: Empty, NotReady,
//! Assigning, Reconciling, Stable.
//!
//! What Frieda does not do (yet): standby and warm-up tasks (`num.standby.replicas` is taken as 0:
//! every member gets empty standby and warm-up lists, which Kafka Streams accepts; state is then
//! restored from the changelog on a move, as with `num.standby.replicas=0` in Kafka), rack-aware
//! placement by client tags, static membership (a static member's leave, epoch -2, leaves), and
//! keeping the group across a coordinator restart (members then get UNKNOWN_MEMBER_ID and rejoin;
//! committed offsets are kept), as for Frieda's consumer groups.

pub mod topology;

use kafka_protocol::error::ResponseError as E;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use topology::{status, Configured, TopicToCreate, Topology};

/// A task: (subtopology id, partition).
pub type TaskId = (String, i32);
/// A set of tasks.
pub type Tasks = BTreeSet<TaskId>;

/// Member epoch of a leave request.
pub const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member's leave.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// Settings (Kafka's broker configs of the same names).
#[derive(Debug, Clone)]
pub struct StreamsGroupConfig {
    /// `group.streams.session.timeout.ms` (default 45000).
    pub session_timeout: Duration,
    /// `group.streams.heartbeat.interval.ms` (default 5000), told to members.
    pub heartbeat_interval: Duration,
    /// `group.streams.max.size` (default unbounded): GROUP_MAX_SIZE_REACHED (81) beyond.
    pub max_size: usize,
    /// `group.streams.initial.rebalance.delay.ms` (default 3000): when the first member joins an
    /// empty group, the first target assignment waits this long for the application's other
    /// instances (members are told ASSIGNMENT_DELAYED meanwhile), as Kafka 4.4 does.
    pub initial_rebalance_delay: Duration,
}

impl Default for StreamsGroupConfig {
    fn default() -> Self {
        StreamsGroupConfig {
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
            max_size: usize::MAX,
            initial_rebalance_delay: Duration::from_millis(3_000),
        }
    }
}

/// `task.offset.interval.ms` told to members (Kafka's `group.streams.task.offset.interval.ms`
/// default, 60 s).
pub const TASK_OFFSET_INTERVAL_MS: i32 = 60_000;
/// `acceptable.recovery.lag` told to members (Kafka's default, 10,000 records).
pub const ACCEPTABLE_RECOVERY_LAG: i64 = 10_000;

/// Group states (Kafka's `StreamsGroupState` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamsGroupState {
    /// No members.
    Empty,
    /// The topology is not configured: topics missing or misconfigured.
    NotReady,
    /// The group epoch moved; the target assignment is not computed yet.
    Assigning,
    /// Some member has not reached its target assignment.
    Reconciling,
    /// Every member has its target assignment.
    Stable,
}

impl StreamsGroupState {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            StreamsGroupState::Empty => "Empty",
            StreamsGroupState::NotReady => "NotReady",
            StreamsGroupState::Assigning => "Assigning",
            StreamsGroupState::Reconciling => "Reconciling",
            StreamsGroupState::Stable => "Stable",
        }
    }
}

/// Where a member is in its reconciliation (Kafka's streams `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// It has its target tasks at the assignment epoch.
    Stable,
    /// It must give up `revoking` first.
    UnrevokedTasks,
    /// Some target tasks are still held by other members.
    UnreleasedTasks,
}

/// A user endpoint for interactive queries (`application.server`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A member of a streams group (one stream thread of a Kafka Streams instance).
#[derive(Debug, Clone)]
pub struct Member {
    /// Member id (chosen by the client).
    pub id: String,
    /// Member epoch.
    pub epoch: i32,
    /// The epoch before the last bump.
    pub previous_epoch: i32,
    /// Reconciliation state.
    pub state: MemberState,
    /// Active tasks it holds, each with the assignment epoch it got it at (a commit with an
    /// older member epoch is accepted for a task it got at or before that epoch, as Kafka 4.4's
    /// `TasksTupleWithEpochs`).
    pub assigned: BTreeMap<TaskId, i32>,
    /// Active tasks it must revoke, with their assignment epochs.
    pub revoking: BTreeMap<TaskId, i32>,
    /// The Kafka Streams instance (process) it belongs to.
    pub process_id: String,
    /// Its endpoint for interactive queries.
    pub user_endpoint: Option<Endpoint>,
    /// `client.tag.*` settings.
    pub client_tags: BTreeMap<String, String>,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id of its last heartbeat.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Time it may take to revoke tasks, ms.
    pub rebalance_timeout_ms: i32,
    /// The topology epoch it runs.
    pub topology_epoch: i32,
    /// Cumulative changelog offsets per task, as last reported.
    pub task_offsets: BTreeMap<TaskId, i64>,
    /// Changelog end offsets per task, as last reported.
    pub task_end_offsets: BTreeMap<TaskId, i64>,
    session_deadline: Instant,
    revocation_deadline: Option<Instant>,
}

impl Member {
    /// Its active tasks, without epochs.
    pub fn active(&self) -> Tasks {
        self.assigned.keys().cloned().collect()
    }
}

/// A StreamsGroupHeartbeat request, decoded.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    /// Member id.
    pub member_id: String,
    /// Member epoch.
    pub member_epoch: i32,
    /// Endpoint information epoch the member has.
    pub endpoint_epoch: i32,
    /// Instance id.
    pub instance_id: Option<String>,
    /// Rack.
    pub rack_id: Option<String>,
    /// Rebalance timeout, ms (-1: unchanged).
    pub rebalance_timeout_ms: i32,
    /// The topology (joining only).
    pub topology: Option<Topology>,
    /// Active tasks owned (`None`: unchanged).
    pub active: Option<Tasks>,
    /// Standby tasks owned (`None`: unchanged).
    pub standby: Option<Tasks>,
    /// Warm-up tasks owned (`None`: unchanged).
    pub warmup: Option<Tasks>,
    /// Process id (`None`: unchanged).
    pub process_id: Option<String>,
    /// User endpoint (`None`: unchanged, or none when joining).
    pub user_endpoint: Option<Endpoint>,
    /// Client tags (`None`: unchanged).
    pub client_tags: Option<BTreeMap<String, String>>,
    /// Changelog offsets (`None`: unchanged).
    pub task_offsets: Option<BTreeMap<TaskId, i64>>,
    /// Changelog end offsets (`None`: unchanged).
    pub task_end_offsets: Option<BTreeMap<TaskId, i64>>,
    /// Whether the member asks every member to shut down.
    pub shutdown_application: bool,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
}

/// The partitions an endpoint's members serve (for interactive queries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPartitions {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// Topic -> partitions of its active tasks' source topics.
    pub active: BTreeMap<String, BTreeSet<i32>>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatReply {
    /// Member id.
    pub member_id: String,
    /// The member's epoch.
    pub member_epoch: i32,
    /// Heartbeat interval, ms.
    pub heartbeat_interval_ms: i32,
    /// Its active tasks, when joining or when they changed (standby and warm-up lists are then
    /// sent empty).
    pub active: Option<Tasks>,
    /// Statuses: (code, detail), [`topology::status`].
    pub status: Vec<(i8, String)>,
    /// The group's endpoint information epoch.
    pub endpoint_epoch: i32,
    /// Every member's endpoint and partitions, when the member's endpoint epoch is behind.
    pub endpoints: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker should create.
    pub to_create: Vec<TopicToCreate>,
}

/// A streams group.
#[derive(Debug, Clone)]
pub struct StreamsGroup {
    /// Group id.
    pub id: String,
    /// Group epoch: bumped by membership, topology configuration and task-count changes.
    pub epoch: i32,
    /// The group epoch the target assignment was computed at.
    pub assignment_epoch: i32,
    /// The topology, as the first member declared it.
    pub topology: Option<Topology>,
    /// The topology's configuration against the cluster's topics, as last computed.
    pub configured: Configured,
    /// Members by id.
    pub members: BTreeMap<String, Member>,
    /// Target active tasks per member.
    pub target: BTreeMap<String, Tasks>,
    endpoint_epoch: i32,
    shutdown_requested_by: Option<String>,
    /// Until when the first target assignment waits (the initial rebalance delay).
    delayed_until: Option<Instant>,
    config: StreamsGroupConfig,
}

/// The tasks of a configured topology: every (subtopology, partition) below its task count.
fn all_tasks(tasks: &BTreeMap<String, i32>) -> Tasks {
    tasks
        .iter()
        .flat_map(|(s, n)| (0..*n).map(move |p| (s.clone(), p)))
        .collect()
}

/// The sticky, balanced assignor: every task to exactly one member; member loads differ by at
/// most one; a task stays with its previous owner where that keeps the balance (an owner keeps
/// at most `floor(tasks / members)` of its tasks, then the rest go to the least-loaded member,
/// ties broken by member id). Members of the same process are treated alike (Kafka's
/// `StickyTaskAssignor` balances processes first; with one member per process, as with
/// `num.stream.threads=1`, the two agree).
pub fn assign(
    members: &[&str],
    tasks: &Tasks,
    previous: &BTreeMap<String, Tasks>,
) -> BTreeMap<String, Tasks> {
    let mut out: BTreeMap<String, Tasks> = members
        .iter()
        .map(|m| (m.to_string(), Tasks::new()))
        .collect();
    if members.is_empty() {
        return out;
    }
    let floor = tasks.len() / members.len();
    let mut left: Tasks = tasks.clone();
    for m in members {
        if let Some(prev) = previous.get(*m) {
            let mine = out.get_mut(*m).expect("member");
            for t in prev.iter().filter(|t| tasks.contains(*t)).take(floor) {
                if left.remove(t) {
                    mine.insert(t.clone());
                }
            }
        }
    }
    for t in left {
        let least = out
            .iter()
            .min_by_key(|(id, ts)| {
                (
                    ts.len(),
                    previous.get(*id).is_none_or(|p| !p.contains(&t)),
                    (*id).clone(),
                )
            })
            .map(|(id, _)| id.clone())
            .expect("members");
        out.get_mut(&least).expect("member").insert(t);
    }
    out
}

impl StreamsGroup {
    /// An empty group.
    pub fn new(id: &str, config: StreamsGroupConfig) -> StreamsGroup {
        StreamsGroup {
            id: id.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            topology: None,
            configured: Configured::default(),
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            endpoint_epoch: 0,
            shutdown_requested_by: None,
            delayed_until: None,
            config,
        }
    }

    /// Whether it has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The group's state.
    pub fn state(&self) -> StreamsGroupState {
        if self.members.is_empty() {
            StreamsGroupState::Empty
        } else if self.configured.tasks.is_none() {
            StreamsGroupState::NotReady
        } else if self.epoch > self.assignment_epoch {
            StreamsGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| m.state != MemberState::Stable || m.epoch != self.assignment_epoch)
        {
            StreamsGroupState::Reconciling
        } else {
            StreamsGroupState::Stable
        }
    }

    /// The source topics (external and repartition) of every subtopology, by subtopology id.
    fn source_topics(&self) -> BTreeMap<&str, Vec<&str>> {
        self.topology
            .iter()
            .flat_map(|t| &t.subtopologies)
            .map(|s| {
                (
                    s.id.as_str(),
                    s.source_topics.iter().map(String::as_str).collect(),
                )
            })
            .collect()
    }

    /// The topics of the topology that a commit may name (source topics; Kafka checks commits
    /// against `sourceTopicMap`).
    pub fn topics(&self) -> BTreeSet<String> {
        self.source_topics()
            .values()
            .flatten()
            .map(|t| t.to_string())
            .collect()
    }

    /// Handles one heartbeat at `now`; `partitions_of(topic)` gives the partition count of an
    /// existing topic.
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25) for a member not in the group (epoch > 0);
    /// FENCED_MEMBER_EPOCH (110); INVALID_REQUEST (42) for a topology that changes the group's, or
    /// owned tasks outside the topology; STREAMS_INVALID_TOPOLOGY (130);
    /// GROUP_MAX_SIZE_REACHED (81).
    pub fn heartbeat(
        &mut self,
        req: Heartbeat,
        partitions_of: &dyn Fn(&str) -> Option<i32>,
        now: Instant,
    ) -> Result<HeartbeatReply, (E, String)> {
        if req.member_epoch == LEAVE_EPOCH || req.member_epoch == STATIC_LEAVE_EPOCH {
            return Ok(self.leave(&req));
        }
        let joining = req.member_epoch == 0;
        if joining {
            if !self.members.contains_key(&req.member_id)
                && self.members.len() >= self.config.max_size
            {
                return Err((
                    E::GroupMaxSizeReached,
                    format!(
                        "The streams group has reached its maximum capacity of {} members.",
                        self.config.max_size
                    ),
                ));
            }
        } else {
            let m = self.members.get(&req.member_id).ok_or_else(|| {
                (
                    E::UnknownMemberId,
                    format!(
                        "Member {} is not a member of group {}.",
                        req.member_id, self.id
                    ),
                )
            })?;
            if req.member_epoch > m.epoch {
                return Err((E::FencedMemberEpoch, format!(
                    "The streams group member has a greater member epoch ({}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                    req.member_epoch, m.epoch)));
            }
            if req.member_epoch < m.epoch {
                let held: Tasks = m.assigned.keys().cloned().collect();
                let ok = req.member_epoch == m.previous_epoch
                    && req.active.as_ref().is_none_or(|a| a.is_subset(&held));
                if !ok {
                    return Err((E::FencedMemberEpoch, format!(
                        "The streams group member has a smaller member epoch ({}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                        req.member_epoch, m.epoch)));
                }
            }
        }
        // The topology: the first member's, then every joiner's must equal it.
        let mut status = Vec::new();
        if let Some(t) = &req.topology {
            match &self.topology {
                None => {
                    tracing::info!(group = %self.id, member = %req.member_id, epoch = t.epoch,
                        "member initialized the streams group's topology");
                    self.topology = Some(t.clone());
                }
                Some(g) if g.epoch > t.epoch => {}
                Some(g) if g != t => {
                    return Err((
                        E::InvalidRequest,
                        "Topology updates are not supported yet.".into(),
                    ))
                }
                Some(_) => {}
            }
        }
        let Some(topology) = self.topology.clone() else {
            return Err((
                E::InvalidRequest,
                "Topology must be non-null when (re-)joining.".into(),
            ));
        };
        // Configure it against the topics as they are now; a change of the task counts moves
        // the group epoch.
        let configured = topology::configure(&topology, partitions_of);
        if let Some((status::INVALID_TOPOLOGY, detail)) = &configured.problem {
            return Err((E::StreamsInvalidTopology, detail.clone()));
        }
        let mut bump = configured.tasks != self.configured.tasks;
        self.configured = configured;
        if let Some(tasks) = &self.configured.tasks {
            for owned in [&req.active, &req.standby, &req.warmup]
                .into_iter()
                .flatten()
            {
                if let Some((s, p)) = owned
                    .iter()
                    .find(|(s, p)| tasks.get(s).is_none_or(|n| *p < 0 || *p >= *n))
                {
                    return Err((
                        E::InvalidRequest,
                        format!("Task {s}-{p} does not exist in the topology."),
                    ));
                }
            }
        }
        // The member.
        let before = self.members.get(&req.member_id).cloned();
        if joining && before.is_some() {
            tracing::info!(group = %self.id, member = %req.member_id, "member rejoins the streams group");
        }
        let session_deadline = now + self.config.session_timeout;
        if self.members.is_empty() && !self.config.initial_rebalance_delay.is_zero() {
            self.delayed_until = Some(now + self.config.initial_rebalance_delay);
        }
        let group_id = self.id.clone();
        let m = self
            .members
            .entry(req.member_id.clone())
            .or_insert_with(|| {
                bump = true;
                tracing::info!(group = %group_id, member = %req.member_id, "member joins the streams group");
                Member {
                    id: req.member_id.clone(),
                    epoch: 0,
                    previous_epoch: 0,
                    state: MemberState::Stable,
                    assigned: BTreeMap::new(),
                    revoking: BTreeMap::new(),
                    process_id: String::new(),
                    user_endpoint: None,
                    client_tags: BTreeMap::new(),
                    instance_id: None,
                    rack_id: None,
                    client_id: String::new(),
                    client_host: String::new(),
                    rebalance_timeout_ms: 300_000,
                    topology_epoch: -1,
                    task_offsets: BTreeMap::new(),
                    task_end_offsets: BTreeMap::new(),
                    session_deadline,
                    revocation_deadline: None,
                }
            });
        if joining {
            // A rejoining member gave up everything it held.
            m.epoch = 0;
            m.assigned.clear();
            m.revoking.clear();
            m.state = MemberState::Stable;
            m.user_endpoint = req.user_endpoint.clone();
        } else if let Some(e) = &req.user_endpoint {
            m.user_endpoint = Some(e.clone());
        }
        if let Some(p) = &req.process_id {
            if *p != m.process_id {
                bump |= !m.process_id.is_empty();
                m.process_id = p.clone();
            }
        }
        if let Some(t) = &req.client_tags {
            m.client_tags = t.clone();
        }
        if req.instance_id.is_some() {
            m.instance_id = req.instance_id.clone();
        }
        if req.rack_id.is_some() {
            m.rack_id = req.rack_id.clone();
        }
        if req.rebalance_timeout_ms >= 0 {
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(t) = &req.topology {
            m.topology_epoch = t.epoch;
        }
        if let Some(o) = &req.task_offsets {
            m.task_offsets = o.clone();
        }
        if let Some(o) = &req.task_end_offsets {
            m.task_end_offsets = o.clone();
        }
        m.client_id = req.client_id.clone();
        m.client_host = req.client_host.clone();
        m.session_deadline = session_deadline;
        if bump {
            self.epoch += 1;
            tracing::info!(group = %self.id, epoch = self.epoch, "streams group epoch bumped");
        }
        if self.delayed_until.is_some_and(|t| now < t) {
            status.push((
                status::ASSIGNMENT_DELAYED,
                "Assignment delayed due to the configured initial rebalance delay.".to_string(),
            ));
            // No target yet: the member holds nothing, at the group epoch (Kafka 4.4 answers a
            // joining member with epoch >= 1 during the delay; epoch 0 would be a new join).
            let epoch = self.epoch;
            let m = self.members.get_mut(&req.member_id).expect("member");
            if m.epoch < epoch && m.assigned.is_empty() && m.revoking.is_empty() {
                m.previous_epoch = m.epoch;
                m.epoch = epoch;
            }
        } else {
            if self.delayed_until.is_some() {
                self.end_delay();
            }
            self.maybe_compute_target();
            self.reconcile(&req.member_id, req.active.as_ref(), now);
        }
        if req.shutdown_application {
            self.shutdown_requested_by = Some(req.member_id.clone());
        }
        let m = &self.members[&req.member_id];
        let changed = before.as_ref().is_none_or(|b| b.assigned != m.assigned);
        let endpoint_changed = before
            .as_ref()
            .is_none_or(|b| b.user_endpoint != m.user_endpoint);
        if endpoint_changed || (changed && m.user_endpoint.is_some()) {
            self.endpoint_epoch += 1;
        }
        let m = &self.members[&req.member_id];
        if let Some(t) = &self.topology {
            if m.topology_epoch < t.epoch {
                status.push((
                    status::STALE_TOPOLOGY,
                    format!(
                        "The member's topology epoch {} is behind the group's topology epoch {}.",
                        m.topology_epoch, t.epoch
                    ),
                ));
            }
        }
        if let Some((code, detail)) = &self.configured.problem {
            status.push((*code, detail.clone()));
        }
        if let Some(by) = &self.shutdown_requested_by {
            status.push((status::SHUTDOWN_APPLICATION, format!(
                "Streams group member {by} encountered a fatal error and requested a shutdown for the entire application.")));
        }
        Ok(HeartbeatReply {
            member_id: m.id.clone(),
            member_epoch: m.epoch,
            heartbeat_interval_ms: self.config.heartbeat_interval.as_millis() as i32,
            active: (joining || changed).then(|| m.active()),
            status,
            endpoint_epoch: self.endpoint_epoch,
            endpoints: (req.endpoint_epoch != self.endpoint_epoch).then(|| self.endpoints()),
            to_create: self.configured.to_create.clone(),
        })
    }

    /// A member leaves (epoch -1 or -2): its tasks go back to the group.
    fn leave(&mut self, req: &Heartbeat) -> HeartbeatReply {
        if req.shutdown_application {
            self.shutdown_requested_by = Some(req.member_id.clone());
        }
        if self.remove(&req.member_id, "left") {
            tracing::info!(group = %self.id, member = %req.member_id, "member left the streams group");
        }
        HeartbeatReply {
            member_id: req.member_id.clone(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            active: None,
            status: Vec::new(),
            endpoint_epoch: self.endpoint_epoch,
            endpoints: None,
            to_create: Vec::new(),
        }
    }

    /// Removes a member (left, fenced, expired); moves the group epoch. Returns whether it was
    /// there.
    fn remove(&mut self, member: &str, why: &str) -> bool {
        let Some(m) = self.members.remove(member) else {
            return false;
        };
        tracing::debug!(group = %self.id, member, why, "streams group member removed");
        self.target.remove(member);
        self.epoch += 1;
        if m.user_endpoint.is_some() {
            self.endpoint_epoch += 1;
        }
        if self.members.is_empty() {
            self.shutdown_requested_by = None;
        }
        true
    }

    /// The initial rebalance delay is over: the group epoch moves, so that the first target
    /// assignment is at an epoch newer than the one members were given during the delay.
    fn end_delay(&mut self) {
        self.delayed_until = None;
        self.epoch += 1;
        tracing::info!(group = %self.id, epoch = self.epoch, "streams group initial rebalance delay over");
    }

    /// Recomputes the target assignment if the group epoch moved past the assignment epoch.
    fn maybe_compute_target(&mut self) {
        if self.epoch <= self.assignment_epoch {
            return;
        }
        let tasks = self
            .configured
            .tasks
            .as_ref()
            .map(all_tasks)
            .unwrap_or_default();
        let ids: Vec<&str> = self.members.keys().map(String::as_str).collect();
        // Stickiness from what members hold now, then from the previous target.
        let mut previous: BTreeMap<String, Tasks> = self.target.clone();
        for m in self.members.values() {
            let held: Tasks = m
                .assigned
                .keys()
                .chain(m.revoking.keys())
                .cloned()
                .collect();
            if !held.is_empty() {
                previous.insert(m.id.clone(), held);
            }
        }
        self.target = assign(&ids, &tasks, &previous);
        self.assignment_epoch = self.epoch;
        tracing::info!(group = %self.id, epoch = self.epoch, members = ids.len(), tasks = tasks.len(),
            "streams group target assignment computed");
    }

    /// Whether another member holds `task` (assigned or still revoking).
    fn held_by_other(&self, member: &str, task: &TaskId) -> bool {
        self.members.values().any(|o| {
            o.id != member && (o.assigned.contains_key(task) || o.revoking.contains_key(task))
        })
    }

    /// Moves `member` towards its target (Kafka's streams `CurrentAssignmentBuilder`, active
    /// tasks only). `owned`: the active tasks it reported (`None`: unchanged).
    fn reconcile(&mut self, member: &str, owned: Option<&Tasks>, now: Instant) {
        let target = self.target.get(member).cloned().unwrap_or_default();
        let target_epoch = self.assignment_epoch;
        let Some(m) = self.members.get(member) else {
            return;
        };
        // Still revoking: wait until the member reports the revoked tasks gone.
        if m.state == MemberState::UnrevokedTasks {
            let released = owned.is_some_and(|o| m.revoking.keys().all(|t| !o.contains(t)));
            if !released {
                return;
            }
        } else if m.state == MemberState::Stable && m.epoch == target_epoch {
            return;
        }
        let keep: BTreeMap<TaskId, i32> = m
            .assigned
            .iter()
            .filter(|(t, _)| target.contains(*t))
            .map(|(t, e)| (t.clone(), *e))
            .collect();
        let revoke: BTreeMap<TaskId, i32> = m
            .assigned
            .iter()
            .filter(|(t, _)| !target.contains(*t))
            .map(|(t, e)| (t.clone(), *e))
            .collect();
        let (epoch, previous_epoch) = (m.epoch, m.previous_epoch);
        let rebalance_timeout = Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64);
        let pending: Vec<TaskId> = target
            .iter()
            .filter(|t| !keep.contains_key(*t))
            .cloned()
            .collect();
        let free: Vec<TaskId> = pending
            .iter()
            .filter(|t| !self.held_by_other(member, t))
            .cloned()
            .collect();
        let unreleased = free.len() < pending.len();
        let m = self.members.get_mut(member).expect("member");
        if !revoke.is_empty() {
            m.assigned = keep;
            m.revoking = revoke;
            m.state = MemberState::UnrevokedTasks;
            m.revocation_deadline = Some(now + rebalance_timeout);
            return;
        }
        let mut assigned = keep;
        for t in free {
            assigned.insert(t, target_epoch);
        }
        m.assigned = assigned;
        m.revoking.clear();
        m.revocation_deadline = None;
        m.state = if unreleased {
            MemberState::UnreleasedTasks
        } else {
            MemberState::Stable
        };
        if epoch != target_epoch {
            m.previous_epoch = epoch;
            m.epoch = target_epoch;
        } else {
            m.previous_epoch = previous_epoch;
        }
    }

    /// Every member's endpoint with the source partitions of its active tasks (for interactive
    /// queries), one entry per member with an endpoint.
    pub fn endpoints(&self) -> Vec<EndpointPartitions> {
        let sources = self.source_topics();
        self.members
            .values()
            .filter_map(|m| {
                let endpoint = m.user_endpoint.clone()?;
                let mut active: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
                for (s, p) in m.assigned.keys() {
                    for t in sources.get(s.as_str()).into_iter().flatten() {
                        active.entry(t.to_string()).or_default().insert(*p);
                    }
                }
                Some(EndpointPartitions { endpoint, active })
            })
            .collect()
    }

    /// Runs deadlines at `now`: members whose session expired, or that did not revoke within
    /// their rebalance timeout, are removed. Returns whether anything changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        let expired: Vec<(String, &'static str)> = self
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    Some((m.id.clone(), "session expired"))
                } else if m.revocation_deadline.is_some_and(|d| d <= now) {
                    Some((
                        m.id.clone(),
                        "did not revoke its tasks within the rebalance timeout",
                    ))
                } else {
                    None
                }
            })
            .collect();
        for (id, why) in &expired {
            tracing::info!(group = %self.id, member = %id, why, "streams group member fenced");
            self.remove(id, why);
        }
        let delay_over = self.delayed_until.is_some_and(|t| t <= now);
        if delay_over {
            self.end_delay();
        }
        if (!expired.is_empty() || delay_over) && self.delayed_until.is_none() {
            self.maybe_compute_target();
        }
        !expired.is_empty() || delay_over
    }

    /// Validates an offset commit (Kafka 4.4's `StreamsGroup.validateOffsetCommit`) of `topics`
    /// partitions `(topic, partition)`.
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25); UNSUPPORTED_VERSION (35) for OffsetCommit below v9;
    /// STALE_MEMBER_EPOCH (113) for an epoch newer than the member's, or older than the task's
    /// assignment epoch, or a partition of a task it does not hold.
    pub fn validate_commit(
        &self,
        c: &super::consumer::Committer<'_>,
        partitions: &[(&str, i32)],
    ) -> Result<(), E> {
        if c.epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        if c.transactional && c.epoch == -1 && c.member_id.is_empty() && c.instance_id.is_none() {
            return Ok(());
        }
        let m = self.members.get(c.member_id).ok_or(E::UnknownMemberId)?;
        if !c.transactional && c.version < 9 {
            return Err(E::UnsupportedVersion);
        }
        if c.epoch == m.epoch {
            return Ok(());
        }
        if c.epoch > m.epoch {
            return Err(E::StaleMemberEpoch);
        }
        let sources = self.source_topics();
        for &(topic, partition) in partitions {
            let Some(sub) = sources
                .iter()
                .find(|(_, ts)| ts.contains(&topic))
                .map(|(s, _)| s.to_string())
            else {
                return Err(E::StaleMemberEpoch);
            };
            let task = (sub, partition);
            match m.assigned.get(&task).or_else(|| m.revoking.get(&task)) {
                Some(at) if c.epoch >= *at => {}
                _ => return Err(E::StaleMemberEpoch),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "streams_tests.rs"]
mod tests;
