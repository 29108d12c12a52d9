//! One consumer group of the classic protocol: membership, generations and the rebalance state
//! machine, following Kafka's classic `GroupCoordinator` (KIP-62 rebalance timeouts, KIP-394
//! member ids, KIP-345 static membership, pending-sync expiry).
//!
//! The state machine is pure: no I/O and no timers. Time comes in as `now`; JoinGroup and
//! SyncGroup answers that must wait are oneshot receivers the handler awaits (so a waiting
//! member is a parked future, not a thread). [`Group::tick`] runs the deadlines: session
//! timeouts, the (initial) rebalance delay, pending members and pending syncs.

use crate::coordinator::offsets::codec::{GroupValue, MemberValue};
use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// A member that joined but has not completed its first rebalance is dropped after this long
/// (Kafka's `NewMemberJoinTimeoutMs`).
pub const NEW_MEMBER_JOIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Group-level settings from the broker config.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group waits
    /// for more members.
    pub initial_rebalance_delay: Duration,
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout: Duration,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout: Duration,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            initial_rebalance_delay: Duration::ZERO,
            min_session_timeout: Duration::from_millis(6000),
            max_session_timeout: Duration::from_millis(1_800_000),
        }
    }
}

/// Group states, named as Kafka names them in ListGroups and DescribeGroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members (offsets may exist).
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment (SyncGroup).
    CompletingRebalance,
    /// Assignment distributed.
    Stable,
    /// Deleted.
    Dead,
}

impl GroupState {
    /// Kafka's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A member of the JoinGroup answer given to the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// A JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResult {
    /// Error, if any.
    pub error: Option<E>,
    /// The member id (assigned by the coordinator for new members).
    pub member_id: String,
    /// Generation, -1 on error.
    pub generation: i32,
    /// Group protocol type.
    pub protocol_type: Option<String>,
    /// Selected protocol.
    pub protocol_name: Option<String>,
    /// Leader's member id.
    pub leader: String,
    /// KIP-814: the (static) leader need not compute an assignment.
    pub skip_assignment: bool,
    /// Every member's metadata, for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinResult {
    /// An error answer.
    pub fn error(member_id: &str, e: E) -> JoinResult {
        JoinResult {
            error: Some(e),
            member_id: member_id.to_string(),
            generation: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

/// A SyncGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncResult {
    /// Error, if any.
    pub error: Option<E>,
    /// Group protocol type.
    pub protocol_type: Option<String>,
    /// Selected protocol.
    pub protocol_name: Option<String>,
    /// This member's assignment.
    pub assignment: Bytes,
}

impl SyncResult {
    /// A SyncGroup answer with only an error.
    pub fn error(e: E) -> SyncResult {
        SyncResult {
            error: Some(e),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// An answer now, or one to wait for.
pub enum Reply<T> {
    /// Ready.
    Now(T),
    /// Completes when the rebalance gets there.
    Wait(oneshot::Receiver<T>),
}

/// What a JoinGroup asks.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// Member id; empty for a new member.
    pub member_id: String,
    /// `group.instance.id` (static membership).
    pub instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address, as Kafka shows it (`/1.2.3.4`).
    pub client_host: String,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Protocol type (`consumer`).
    pub protocol_type: String,
    /// Supported protocols (assignors), preferred first, with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: a new member first gets MEMBER_ID_REQUIRED with its id (KIP-394).
    pub require_known_member_id: bool,
    /// Request version (v9+ knows `skip_assignment`).
    pub version: i16,
}

/// One member.
#[derive(Debug)]
pub struct Member {
    /// Member id.
    pub id: String,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Supported protocols with metadata, preferred first.
    pub protocols: Vec<(String, Bytes)>,
    /// Assignment of the current generation.
    pub assignment: Bytes,
    join_waiter: Option<oneshot::Sender<JoinResult>>,
    sync_waiter: Option<oneshot::Sender<SyncResult>>,
    last_heartbeat: Instant,
    is_new: bool,
    seq: u64,
}

impl Member {
    fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(n, _)| n == protocol)
    }

    /// Its metadata for `protocol` (empty if it does not support it).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    fn should_keep_alive(&self, now: Instant) -> bool {
        if self.join_waiter.is_some() {
            !self.is_new || self.last_heartbeat + NEW_MEMBER_JOIN_TIMEOUT > now
        } else {
            self.sync_waiter.is_some() || self.last_heartbeat + self.session_timeout > now
        }
    }

    /// Whether the member waits for a JoinGroup answer.
    pub fn awaiting_join(&self) -> bool {
        self.join_waiter.is_some()
    }
}

#[derive(Debug, Clone, Copy)]
struct InitialDelay {
    delay: Duration,
    remaining: Duration,
}

/// A group.
pub struct Group {
    /// Group id.
    pub id: String,
    /// State.
    pub state: GroupState,
    /// Generation (0 before the first rebalance).
    pub generation: i32,
    /// Protocol type of the members (`consumer`), `None` for offsets-only groups.
    pub protocol_type: Option<String>,
    /// Selected protocol of the current generation.
    pub protocol_name: Option<String>,
    /// Leader member id.
    pub leader: Option<String>,
    /// Members by id.
    pub members: HashMap<String, Member>,
    /// Static members: instance id to member id.
    pub static_members: HashMap<String, String>,
    /// Members that were given an id (MEMBER_ID_REQUIRED) and have not joined with it yet, with
    /// the deadline to do so.
    pending_members: HashMap<String, Instant>,
    pending_sync: HashSet<String>,
    sync_deadline: Option<Instant>,
    join_deadline: Option<Instant>,
    initial_delay: Option<InitialDelay>,
    new_member_added: bool,
    /// When the group entered its current state, ms since the epoch.
    pub state_since_ms: i64,
    /// Set when something worth persisting changed (new generation, emptied); cleared by the
    /// coordinator after it stored the group.
    pub meta_changed: bool,
    config: GroupConfig,
    next_seq: u64,
}

fn wall_ms() -> i64 {
    crate::clock::now_ms()
}

impl Group {
    /// A new, empty group.
    pub fn new(id: &str, config: GroupConfig) -> Group {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: HashMap::new(),
            static_members: HashMap::new(),
            pending_members: HashMap::new(),
            pending_sync: HashSet::new(),
            sync_deadline: None,
            join_deadline: None,
            initial_delay: None,
            new_member_added: false,
            state_since_ms: wall_ms(),
            meta_changed: false,
            config,
            next_seq: 0,
        }
    }

    /// A group as the offsets log stored it (a coordinator loading it after a failover or a
    /// restart): Stable with its members and their assignments when it stored them, their
    /// sessions starting now (Kafka's `GroupMetadataManager.loadGroup`); else Empty with its
    /// protocol type and generation.
    pub fn restore(id: &str, config: GroupConfig, stored: &GroupValue) -> Group {
        let mut g = Group::new(id, config);
        if !stored.protocol_type.is_empty() {
            g.protocol_type = Some(stored.protocol_type.clone());
        }
        g.generation = stored.generation.max(0);
        if stored.state_timestamp > 0 {
            g.state_since_ms = stored.state_timestamp;
        }
        let Some(protocol) = stored
            .protocol
            .clone()
            .filter(|_| !stored.members.is_empty())
        else {
            return g;
        };
        let now = Instant::now();
        for m in &stored.members {
            g.next_seq += 1;
            if let Some(i) = &m.instance_id {
                g.static_members.insert(i.clone(), m.member_id.clone());
            }
            g.members.insert(
                m.member_id.clone(),
                Member {
                    id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout: Duration::from_millis(m.session_timeout_ms.max(0) as u64),
                    rebalance_timeout: Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
                    protocols: vec![(protocol.clone(), m.subscription.clone())],
                    assignment: m.assignment.clone(),
                    join_waiter: None,
                    sync_waiter: None,
                    last_heartbeat: now,
                    is_new: false,
                    seq: g.next_seq,
                },
            );
        }
        g.protocol_name = Some(protocol);
        g.leader = stored
            .leader
            .clone()
            .filter(|l| g.members.contains_key(l))
            .or_else(|| g.members.keys().next().cloned());
        g.state = GroupState::Stable;
        g
    }

    /// What the offsets log keeps of this group: its protocol, generation and leader, and when
    /// it is Stable its members with their assignments.
    pub fn stored(&self) -> GroupValue {
        let members = if self.state == GroupState::Stable {
            let protocol = self.protocol_name.clone().unwrap_or_default();
            let mut ms: Vec<&Member> = self.members.values().collect();
            ms.sort_by_key(|m| m.seq);
            ms.into_iter()
                .map(|m| MemberValue {
                    member_id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout.as_millis().min(i32::MAX as u128)
                        as i32,
                    session_timeout_ms: m.session_timeout.as_millis().min(i32::MAX as u128) as i32,
                    subscription: m.metadata(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol_name.clone(),
            leader: self.leader.clone(),
            state_timestamp: self.state_since_ms,
            members,
        }
    }

    fn transition(&mut self, state: GroupState) {
        if self.state != state {
            tracing::debug!(group = %self.id, from = self.state.name(), to = state.name(), generation = self.generation, "group state");
        }
        self.state = state;
        self.state_since_ms = wall_ms();
    }

    /// Whether nothing is left of the group but (maybe) offsets.
    pub fn is_empty_state(&self) -> bool {
        self.state == GroupState::Empty
            && self.members.is_empty()
            && self.pending_members.is_empty()
    }

    fn is_fenced(&self, member_id: &str, instance_id: Option<&str>) -> bool {
        instance_id
            .and_then(|i| self.static_members.get(i))
            .is_some_and(|m| m != member_id)
    }

    fn max_rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols
                    .iter()
                    .any(|(p, _)| self.members.values().all(|m| m.supports(p)))
        }
    }

    /// The protocol every member supports that most members prefer; ties go to the leader's
    /// order of preference.
    pub fn select_protocol(&self) -> Option<String> {
        let leader = self.leader.as_ref().and_then(|l| self.members.get(l));
        let first = leader.or_else(|| self.members.values().min_by_key(|m| m.seq))?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(p, _)| p)
            .filter(|p| self.members.values().all(|m| m.supports(p)))
            .collect();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            if let Some((p, _)) = m.protocols.iter().find(|(p, _)| candidates.contains(&p)) {
                *votes.entry(p.as_str()).or_default() += 1;
            }
        }
        let mut best: Option<(&String, usize)> = None;
        for c in candidates {
            let v = votes.get(c.as_str()).copied().unwrap_or(0);
            match best {
                Some((_, bv)) if v <= bv => {}
                _ => best = Some((c, v)),
            }
        }
        best.map(|(p, _)| p.clone())
    }

    fn members_by_seq(&self) -> Vec<&Member> {
        let mut v: Vec<&Member> = self.members.values().collect();
        v.sort_by_key(|m| m.seq);
        v
    }

    fn current_member_metadata(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members_by_seq()
            .into_iter()
            .map(|m| JoinedMember {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect()
    }

    fn current_join_result(&self, member_id: &str, with_members: bool) -> JoinResult {
        JoinResult {
            error: None,
            member_id: member_id.to_string(),
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment: false,
            members: if with_members {
                self.current_member_metadata()
            } else {
                Vec::new()
            },
        }
    }

    // ---- JoinGroup ------------------------------------------------------------------------

    /// JoinGroup. Errors: COORDINATOR_NOT_AVAILABLE (group being deleted),
    /// INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED (with the new id), FENCED_INSTANCE_ID,
    /// UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT.
    pub fn join(&mut self, req: JoinRequest, now: Instant) -> Reply<JoinResult> {
        tracing::debug!(group = %self.id, member = %req.member_id, state = self.state.name(),
            generation = self.generation, "JoinGroup received");
        if req.session_timeout < self.config.min_session_timeout
            || req.session_timeout > self.config.max_session_timeout
        {
            return Reply::Now(JoinResult::error(&req.member_id, E::InvalidSessionTimeout));
        }
        if self.state == GroupState::Dead {
            return Reply::Now(JoinResult::error(
                &req.member_id,
                E::CoordinatorNotAvailable,
            ));
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return Reply::Now(JoinResult::error(
                &req.member_id,
                E::InconsistentGroupProtocol,
            ));
        }
        if req.member_id.is_empty() {
            self.new_member_join(req, now)
        } else {
            self.current_member_join(req, now)
        }
    }

    fn new_member_join(&mut self, req: JoinRequest, now: Instant) -> Reply<JoinResult> {
        let prefix = req.instance_id.as_deref().unwrap_or(&req.client_id);
        let new_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
        if let Some(instance) = req.instance_id.clone() {
            if let Some(old_id) = self.static_members.get(&instance).cloned() {
                return self.update_static_member_and_rebalance(old_id, new_id, req, now);
            }
            return self.add_member_and_rebalance(new_id, req, now);
        }
        if req.require_known_member_id {
            self.pending_members
                .insert(new_id.clone(), now + req.session_timeout);
            return Reply::Now(JoinResult::error(&new_id, E::MemberIdRequired));
        }
        self.add_member_and_rebalance(new_id, req, now)
    }

    fn current_member_join(&mut self, req: JoinRequest, now: Instant) -> Reply<JoinResult> {
        let id = req.member_id.clone();
        if self.pending_members.remove(&id).is_some() {
            return self.add_member_and_rebalance(id, req, now);
        }
        if self.is_fenced(&id, req.instance_id.as_deref()) {
            return Reply::Now(JoinResult::error(&id, E::FencedInstanceId));
        }
        let instance_unknown = req
            .instance_id
            .as_ref()
            .is_some_and(|i| !self.static_members.contains_key(i));
        if !self.members.contains_key(&id) || instance_unknown {
            return Reply::Now(JoinResult::error(&id, E::UnknownMemberId));
        }
        let matches = self.members[&id].protocols == req.protocols;
        tracing::debug!(group = %self.id, member = %id, state = self.state.name(), generation = self.generation,
            matches, awaiting_join = self.members[&id].awaiting_join(), "JoinGroup of a known member");
        match self.state {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(req, now),
            GroupState::CompletingRebalance => {
                if matches {
                    // Lost the first answer: give it again.
                    let leader = self.leader.as_deref() == Some(id.as_str());
                    Reply::Now(self.current_join_result(&id, leader))
                } else {
                    self.update_member_and_rebalance(req, now)
                }
            }
            GroupState::Stable => {
                let leader = self.leader.as_deref() == Some(id.as_str());
                if leader || !matches {
                    // A leader's JoinGroup asks for a rebalance (e.g. topic metadata changed).
                    self.update_member_and_rebalance(req, now)
                } else {
                    Reply::Now(self.current_join_result(&id, false))
                }
            }
            GroupState::Empty | GroupState::Dead => {
                Reply::Now(JoinResult::error(&id, E::UnknownMemberId))
            }
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        id: String,
        req: JoinRequest,
        now: Instant,
    ) -> Reply<JoinResult> {
        let (tx, rx) = oneshot::channel();
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if self.state == GroupState::PreparingRebalance && self.generation == 0 {
            self.new_member_added = true;
        }
        if let Some(i) = &req.instance_id {
            self.static_members.insert(i.clone(), id.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(id.clone());
        }
        self.next_seq += 1;
        let member = Member {
            id: id.clone(),
            instance_id: req.instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            session_timeout: req.session_timeout,
            rebalance_timeout: req.rebalance_timeout,
            protocols: req.protocols,
            assignment: Bytes::new(),
            join_waiter: Some(tx),
            sync_waiter: None,
            last_heartbeat: now,
            is_new: true,
            seq: self.next_seq,
        };
        tracing::debug!(group = %self.id, member = %id, "member added");
        self.members.insert(id, member);
        self.maybe_prepare_rebalance(now);
        self.try_complete_join(now);
        Reply::Wait(rx)
    }

    fn update_member_and_rebalance(&mut self, req: JoinRequest, now: Instant) -> Reply<JoinResult> {
        let (tx, rx) = oneshot::channel();
        if let Some(m) = self.members.get_mut(&req.member_id) {
            m.protocols = req.protocols;
            m.session_timeout = req.session_timeout;
            m.rebalance_timeout = req.rebalance_timeout;
            m.client_id = req.client_id;
            m.client_host = req.client_host;
            m.last_heartbeat = now;
            // An earlier JoinGroup of this member still waiting is superseded.
            m.join_waiter = Some(tx);
        }
        self.maybe_prepare_rebalance(now);
        self.try_complete_join(now);
        Reply::Wait(rx)
    }

    fn update_static_member_and_rebalance(
        &mut self,
        old_id: String,
        new_id: String,
        req: JoinRequest,
        now: Instant,
    ) -> Reply<JoinResult> {
        let old_leader = self.leader.clone().unwrap_or_default();
        let Some(mut m) = self.members.remove(&old_id) else {
            return self.add_member_and_rebalance(new_id, req, now);
        };
        // Fence whatever the old incarnation is waiting for.
        if let Some(tx) = m.join_waiter.take() {
            let _ = tx.send(JoinResult::error(&old_id, E::FencedInstanceId));
        }
        if let Some(tx) = m.sync_waiter.take() {
            let _ = tx.send(SyncResult::error(E::FencedInstanceId));
        }
        tracing::info!(group = %self.id, old = %old_id, new = %new_id, instance = ?req.instance_id, "static member rejoined with a new member id");
        m.id = new_id.clone();
        m.protocols = req.protocols;
        m.session_timeout = req.session_timeout;
        m.rebalance_timeout = req.rebalance_timeout;
        m.client_id = req.client_id;
        m.client_host = req.client_host;
        m.last_heartbeat = now;
        let (tx, rx) = oneshot::channel();
        m.join_waiter = Some(tx);
        self.members.insert(new_id.clone(), m);
        if let Some(i) = &req.instance_id {
            self.static_members.insert(i.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        if self.pending_sync.remove(&old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        match self.state {
            GroupState::Stable => {
                if self.select_protocol() == self.protocol_name {
                    // Same assignment: no rebalance; the member gets it back with SyncGroup.
                    let is_leader = self.leader.as_deref() == Some(new_id.as_str());
                    let skip = req.version >= 9 && is_leader;
                    let mut result = self.current_join_result(&new_id, skip);
                    result.skip_assignment = skip;
                    if req.version < 9 {
                        // Older clients must not think they lead: they would compute an
                        // assignment a stable group never distributes.
                        result.leader = old_leader;
                    }
                    if let Some(m) = self.members.get_mut(&new_id) {
                        m.join_waiter = None;
                    }
                    self.meta_changed = true;
                    return Reply::Now(result);
                }
                self.maybe_prepare_rebalance(now);
            }
            GroupState::CompletingRebalance => self.maybe_prepare_rebalance(now),
            _ => {}
        }
        self.try_complete_join(now);
        Reply::Wait(rx)
    }

    fn maybe_prepare_rebalance(&mut self, now: Instant) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(now);
        }
    }

    /// Starts a rebalance now: every member must rejoin (also a consumer group just downgraded
    /// to this classic group, KIP-848).
    pub fn prepare_rebalance(&mut self, now: Instant) {
        if self.state == GroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_error(E::RebalanceInProgress);
        }
        self.pending_sync.clear();
        self.sync_deadline = None;
        if self.state == GroupState::Empty {
            let delay = self.config.initial_rebalance_delay;
            let remaining = self.max_rebalance_timeout().saturating_sub(delay);
            self.initial_delay = Some(InitialDelay { delay, remaining });
            self.join_deadline = Some(now + delay);
        } else {
            self.initial_delay = None;
            self.join_deadline = Some(now + self.max_rebalance_timeout());
        }
        tracing::info!(group = %self.id, generation = self.generation, members = self.members.len(), "preparing to rebalance");
        self.transition(GroupState::PreparingRebalance);
        // Completes at once when nobody is left to wait for (the last member left).
        self.try_complete_join(now);
    }

    fn reset_and_propagate_assignment_error(&mut self, e: E) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
            if let Some(tx) = m.sync_waiter.take() {
                let _ = tx.send(SyncResult::error(e));
            }
        }
    }

    fn all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(Member::awaiting_join)
    }

    fn try_complete_join(&mut self, now: Instant) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let deadline_passed = match self.join_deadline {
            Some(d) => now >= d,
            None => true,
        };
        if let Some(init) = self.initial_delay {
            if !deadline_passed {
                return;
            }
            if self.new_member_added && !init.remaining.is_zero() {
                // More members came during the delay: wait a little longer, within the
                // rebalance timeout.
                self.new_member_added = false;
                let delay = init.delay.min(init.remaining);
                self.initial_delay = Some(InitialDelay {
                    delay,
                    remaining: init.remaining.saturating_sub(delay),
                });
                self.join_deadline = Some(now + delay);
                return;
            }
            self.complete_join(now);
        } else if deadline_passed || self.all_members_joined() {
            self.complete_join(now);
        }
    }

    fn complete_join(&mut self, now: Instant) {
        // Dynamic members that did not rejoin in time are out; static ones stay until their
        // session expires.
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.awaiting_join() && m.instance_id.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in gone {
            tracing::info!(group = %self.id, member = %id, "member did not rejoin in time; removed");
            self.remove_member(&id);
        }
        // Pending members (KIP-394: given an id, not joined with it yet) stay pending as in
        // Kafka's completeClassicGroupJoin: one whose JoinGroup with its id comes after this
        // generation completed is accepted and starts the next rebalance, instead of getting
        // UNKNOWN_MEMBER_ID and starting over. They leave by LeaveGroup or their deadline.
        self.initial_delay = None;
        self.new_member_added = false;
        if self.state == GroupState::Dead {
            return;
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined: wait again until session timeouts remove the silent members.
            self.join_deadline = Some(now + self.max_rebalance_timeout());
            return;
        }
        self.join_deadline = None;
        self.generation += 1;
        self.meta_changed = true;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition(GroupState::Empty);
            tracing::info!(group = %self.id, generation = self.generation, "group is empty");
            return;
        }
        self.protocol_name = self.select_protocol();
        self.transition(GroupState::CompletingRebalance);
        self.pending_sync = self.members.keys().cloned().collect();
        self.sync_deadline = Some(now + self.max_rebalance_timeout());
        tracing::info!(group = %self.id, generation = self.generation, members = self.members.len(),
            protocol = ?self.protocol_name, leader = ?self.leader, "rebalance: members joined");
        let leader = self.leader.clone().unwrap_or_default();
        let all = self.current_member_metadata();
        let base = self.current_join_result("", false);
        for m in self.members.values_mut() {
            if let Some(tx) = m.join_waiter.take() {
                let mut r = base.clone();
                r.member_id = m.id.clone();
                if m.id == leader {
                    r.members = all.clone();
                }
                let _ = tx.send(r);
            }
            m.last_heartbeat = now;
            m.is_new = false;
        }
    }

    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.clone() else {
            return false;
        };
        if self.members.get(&leader).is_some_and(Member::awaiting_join) {
            return true;
        }
        let joined = self
            .members_by_seq()
            .into_iter()
            .find(|m| m.awaiting_join())
            .map(|m| m.id.clone());
        match joined {
            Some(id) => {
                self.leader = Some(id);
                true
            }
            None => false,
        }
    }

    fn remove_member(&mut self, id: &str) {
        if let Some(m) = self.members.remove(id) {
            if let Some(i) = &m.instance_id {
                if self.static_members.get(i).map(String::as_str) == Some(id) {
                    self.static_members.remove(i);
                }
            }
        }
        self.pending_sync.remove(id);
        if self.leader.as_deref() == Some(id) {
            self.leader = self.members_by_seq().first().map(|m| m.id.clone());
        }
    }

    fn remove_member_and_update_group(&mut self, id: &str, now: Instant) {
        if let Some(m) = self.members.get_mut(id) {
            if let Some(tx) = m.join_waiter.take() {
                let _ = tx.send(JoinResult::error(id, E::UnknownMemberId));
            }
        }
        self.remove_member(id);
        match self.state {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(now)
            }
            GroupState::PreparingRebalance => self.try_complete_join(now),
        }
    }

    // ---- SyncGroup ------------------------------------------------------------------------

    /// SyncGroup. The leader's call carries every member's assignment. Errors:
    /// COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
    /// INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: Instant,
    ) -> Reply<SyncResult> {
        let err = |e| Reply::Now(SyncResult::error(e));
        if self.state == GroupState::Dead {
            return err(E::CoordinatorNotAvailable);
        }
        if self.is_fenced(member_id, instance_id) {
            return err(E::FencedInstanceId);
        }
        if !self.members.contains_key(member_id) {
            return err(E::UnknownMemberId);
        }
        if generation != self.generation {
            return err(E::IllegalGeneration);
        }
        if protocol_type.is_some_and(|p| self.protocol_type.as_deref() != Some(p))
            || protocol_name.is_some_and(|p| self.protocol_name.as_deref() != Some(p))
        {
            return err(E::InconsistentGroupProtocol);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => err(E::UnknownMemberId),
            GroupState::PreparingRebalance => err(E::RebalanceInProgress),
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                let m = self.members.get_mut(member_id).expect("checked above");
                m.sync_waiter = Some(tx);
                m.last_heartbeat = now;
                self.remove_pending_sync(member_id);
                if self.leader.as_deref() == Some(member_id) {
                    let mut by_member: HashMap<String, Bytes> = assignments.into_iter().collect();
                    let result = SyncResult {
                        error: None,
                        protocol_type: self.protocol_type.clone(),
                        protocol_name: self.protocol_name.clone(),
                        assignment: Bytes::new(),
                    };
                    for m in self.members.values_mut() {
                        m.assignment = by_member.remove(&m.id).unwrap_or_default();
                        if let Some(tx) = m.sync_waiter.take() {
                            let mut r = result.clone();
                            r.assignment = m.assignment.clone();
                            let _ = tx.send(r);
                        }
                    }
                    self.meta_changed = true;
                    self.transition(GroupState::Stable);
                    tracing::info!(group = %self.id, generation = self.generation, "rebalance complete: assignment distributed");
                }
                Reply::Wait(rx)
            }
            GroupState::Stable => {
                self.remove_pending_sync(member_id);
                let m = self.members.get_mut(member_id).expect("checked above");
                m.last_heartbeat = now;
                Reply::Now(SyncResult {
                    error: None,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: m.assignment.clone(),
                })
            }
        }
    }

    fn remove_pending_sync(&mut self, id: &str) {
        self.pending_sync.remove(id);
        if self.pending_sync.is_empty() {
            self.sync_deadline = None;
        }
    }

    // ---- Heartbeat, LeaveGroup, OffsetCommit checks ---------------------------------------

    /// Heartbeat. `None` is success. Errors: COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID,
    /// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS.
    pub fn heartbeat(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        now: Instant,
    ) -> Option<E> {
        if self.state == GroupState::Dead {
            return Some(E::CoordinatorNotAvailable);
        }
        if self.is_fenced(member_id, instance_id) {
            return Some(E::FencedInstanceId);
        }
        if !self.members.contains_key(member_id) {
            return Some(E::UnknownMemberId);
        }
        if generation != self.generation {
            return Some(E::IllegalGeneration);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => Some(E::UnknownMemberId),
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.get_mut(member_id)?.last_heartbeat = now;
                None
            }
            GroupState::PreparingRebalance => {
                self.members.get_mut(member_id)?.last_heartbeat = now;
                Some(E::RebalanceInProgress)
            }
        }
    }

    /// One member of a LeaveGroup (by member id, or by instance id alone, KIP-345). `None` is
    /// success. Errors: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID.
    pub fn leave(&mut self, member_id: &str, instance_id: Option<&str>, now: Instant) -> Option<E> {
        if self.state == GroupState::Dead {
            return Some(E::CoordinatorNotAvailable);
        }
        if member_id.is_empty() {
            let Some(id) = instance_id
                .and_then(|i| self.static_members.get(i))
                .cloned()
            else {
                return Some(E::UnknownMemberId);
            };
            tracing::info!(group = %self.id, member = %id, "static member removed by LeaveGroup");
            self.remove_member_and_update_group(&id, now);
            return None;
        }
        if self.is_fenced(member_id, instance_id) {
            return Some(E::FencedInstanceId);
        }
        if self.pending_members.remove(member_id).is_some() {
            self.try_complete_join(now);
            return None;
        }
        if !self.members.contains_key(member_id) {
            return Some(E::UnknownMemberId);
        }
        tracing::info!(group = %self.id, member = %member_id, "member left");
        self.remove_member_and_update_group(member_id, now);
        None
    }

    /// May this member commit offsets for `generation`? A commit also counts as a heartbeat.
    /// `generation < 0` with an empty group is a simple (assign()-style) commit. Errors:
    /// COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
    /// REBALANCE_IN_PROGRESS.
    pub fn validate_commit(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        now: Instant,
    ) -> Result<(), E> {
        if self.state == GroupState::Dead {
            return Err(E::CoordinatorNotAvailable);
        }
        if self.is_fenced(member_id, instance_id) {
            return Err(E::FencedInstanceId);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        let Some(m) = self.members.get_mut(member_id) else {
            return Err(E::UnknownMemberId);
        };
        if generation != self.generation {
            return Err(E::IllegalGeneration);
        }
        match self.state {
            GroupState::Stable | GroupState::PreparingRebalance => {
                m.last_heartbeat = now;
                Ok(())
            }
            GroupState::CompletingRebalance => Err(E::RebalanceInProgress),
            GroupState::Empty | GroupState::Dead => Err(E::UnknownMemberId),
        }
    }

    /// Topics the members subscribe to (consumer protocol metadata), if they can be read.
    pub fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let protocol = self.protocol_name.clone()?;
        let mut topics = HashSet::new();
        for m in self.members.values() {
            let sub = super::embedded::decode_subscription(&m.metadata(&protocol)).ok()?;
            topics.extend(sub.topics.iter().map(|t| t.to_string()));
        }
        Some(topics)
    }

    // ---- Time -------------------------------------------------------------------------------

    /// Runs the deadlines due at `now`: expired sessions, pending members that never rejoined,
    /// the rebalance (or initial delay) deadline, members that never sent SyncGroup.
    pub fn tick(&mut self, now: Instant) {
        if self.state == GroupState::Dead {
            return;
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.should_keep_alive(now))
            .map(|m| m.id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.id, member = %id, "member session expired");
            self.remove_member_and_update_group(&id, now);
        }
        let before = self.pending_members.len();
        self.pending_members.retain(|_, deadline| *deadline > now);
        if self.pending_members.len() != before {
            self.try_complete_join(now);
        }
        self.try_complete_join(now);
        if matches!(
            self.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) && self.sync_deadline.is_some_and(|d| now >= d)
            && !self.pending_sync.is_empty()
        {
            let late: Vec<String> = self.pending_sync.drain().collect();
            tracing::info!(group = %self.id, members = ?late, "members did not send SyncGroup in time; removed");
            for id in &late {
                self.remove_member(id);
            }
            self.sync_deadline = None;
            self.prepare_rebalance(now);
            self.try_complete_join(now);
        }
    }

    /// Answers every waiting JoinGroup and SyncGroup with `e` (broker shutdown).
    pub fn fail_waiters(&mut self, e: E) {
        for m in self.members.values_mut() {
            if let Some(tx) = m.join_waiter.take() {
                let _ = tx.send(JoinResult::error(&m.id, e));
            }
            if let Some(tx) = m.sync_waiter.take() {
                let _ = tx.send(SyncResult::error(e));
            }
        }
    }

    /// Marks the group deleted.
    pub fn mark_dead(&mut self) {
        self.fail_waiters(E::CoordinatorNotAvailable);
        self.transition(GroupState::Dead);
    }

    /// Members, oldest first.
    pub fn members_ordered(&self) -> Vec<&Member> {
        self.members_by_seq()
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
