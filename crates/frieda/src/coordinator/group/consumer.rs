//! One KIP-848 consumer group (the `consumer` group protocol): members heartbeat with their
//! member epoch, the coordinator computes the target assignment with a server-side assignor
//! ([`assignor`](super::assignor)) whenever the group epoch moves past the assignment epoch, and
//! reconciles each member towards its target: partitions to give up are revoked first (the member
//! keeps its epoch until it reports them gone), partitions still held by another member are
//! assigned once released. Pure state, unit-tested in `consumer_tests.rs`.
//!
//! Semantics follow KIP-848 and Kafka 4.3's `GroupMetadataManager.consumerGroupHeartbeat` and
//! `CurrentAssignmentBuilder`: epoch 0 joins, -1 leaves, -2 is a static member's leave (its
//! partitions stay with its instance id until the session times out); a member with a
//! greater epoch than the coordinator's, or a smaller one that is not its previous epoch with a
//! subset of its partitions, is FENCED_MEMBER_EPOCH (110). Group states are Kafka's
//! `ConsumerGroupState`: Empty, Assigning, Reconciling, Stable.
//!
//! Not kept across a coordinator restart or failover (unlike Kafka, which writes the group's
//! records to `__consumer_offsets`): members then get UNKNOWN_MEMBER_ID and rejoin with epoch 0;
//! committed offsets are kept.

pub mod classic;

use super::assignor::{Assignment, Assignor, AssignorMember, AssignorTopic};
use kafka_protocol::error::ResponseError as E;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Member epoch of a leave request (KIP-848).
pub const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member's leave: it keeps its partitions until its session expires.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// The topics a group can subscribe to, by name.
pub type TopicsView = BTreeMap<String, TopicView>;

/// One topic a group can subscribe to, as its coordinator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicView {
    /// Topic id.
    pub id: Uuid,
    /// Partition count.
    pub partitions: i32,
    /// Per partition (by index), the racks (`broker.rack`) of its replicas; shorter than
    /// `partitions`, or empty sets, where unknown (a single broker, brokers without racks). The
    /// assignors prefer a member whose `rack_id` is among them (KIP-881). A change here changes
    /// the subscribed view and so bumps the group epoch, as Kafka 4.x does for rack topology
    /// changes (KIP-1101).
    pub racks: Arc<Vec<BTreeSet<String>>>,
}

impl TopicView {
    /// A topic with no rack information.
    pub fn new(id: Uuid, partitions: i32) -> TopicView {
        TopicView {
            id,
            partitions,
            racks: Arc::default(),
        }
    }
}

/// Settings (Kafka's broker configs of the same names).
#[derive(Debug, Clone)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.session.timeout.ms` (default 45000): a member that does not heartbeat
    /// for this long is removed.
    pub session_timeout: Duration,
    /// `group.consumer.heartbeat.interval.ms` (default 5000), told to members.
    pub heartbeat_interval: Duration,
    /// `group.consumer.max.size` (default unbounded): GROUP_MAX_SIZE_REACHED (81) beyond.
    pub max_size: usize,
    /// The first of `group.consumer.assignors` (default `uniform`): used when no member names one.
    pub default_assignor: Assignor,
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
            max_size: usize::MAX,
            default_assignor: Assignor::Uniform,
        }
    }
}

/// Group states (Kafka's `ConsumerGroupState` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch moved; the target assignment is not computed yet.
    Assigning,
    /// Some member has not reached its target assignment.
    Reconciling,
    /// Every member has its target assignment.
    Stable,
}

impl ConsumerGroupState {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// Where a member is in its reconciliation (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// It has its target assignment at the assignment epoch.
    Stable,
    /// It must give up `revoking` first; its epoch stays until it reports them gone.
    UnrevokedPartitions,
    /// It is at the assignment epoch but some target partitions are still held by others.
    UnreleasedPartitions,
}

/// A member of a consumer group.
#[derive(Debug, Clone)]
pub struct Member {
    /// Member id (a UUID string; from the client in v1, from the coordinator in v0).
    pub id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// `client.rack`.
    pub rack_id: Option<String>,
    /// Client id of its last heartbeat.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Member epoch (-2 after a static leave).
    pub epoch: i32,
    /// The epoch before the last bump.
    pub previous_epoch: i32,
    /// Subscribed topic names.
    pub topic_names: Vec<String>,
    /// Subscribed topic regex (KIP-848; RE2J syntax, matched with the `regex` crate, whose
    /// syntax is RE2's).
    pub topic_regex: Option<String>,
    regex: Option<regex::Regex>,
    /// The server assignor it asks for.
    pub assignor: Option<String>,
    /// Time it may take to revoke partitions, ms.
    pub rebalance_timeout_ms: i32,
    /// Partitions it owns now (as told in the last response).
    pub assigned: Assignment,
    /// Partitions it must revoke.
    pub revoking: Assignment,
    /// The group epoch at which each partition of `assigned` and `revoking` was given to it
    /// (KIP-1251's assignment epochs, Kafka 4.3's `ConsumerGroupMember.assignedPartitions`): a
    /// commit with an older member epoch is accepted for a partition it got at or before that
    /// epoch. Kept in step by [`Member::stamp_assignment_epochs`]; bounded by its partitions.
    assignment_epochs: BTreeMap<(Uuid, i32), i32>,
    /// Reconciliation state.
    pub state: MemberState,
    /// Set for a member that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat) in
    /// this consumer group (KIP-848's upgrade path): its session timeout and protocols.
    pub classic: Option<classic::ClassicMember>,
    session_deadline: Instant,
    revocation_deadline: Option<Instant>,
}

impl Member {
    /// A member at epoch 0 that owns nothing yet.
    fn new(
        id: &str,
        client_id: &str,
        client_host: &str,
        rebalance_timeout_ms: i32,
        session_deadline: Instant,
    ) -> Member {
        Member {
            id: id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            epoch: 0,
            previous_epoch: 0,
            topic_names: vec![],
            topic_regex: None,
            regex: None,
            assignor: None,
            rebalance_timeout_ms,
            assigned: Assignment::new(),
            revoking: Assignment::new(),
            assignment_epochs: BTreeMap::new(),
            state: MemberState::Stable,
            classic: None,
            session_deadline,
            revocation_deadline: None,
        }
    }

    /// Whether it speaks the classic protocol.
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// Brings [`Member::assignment_epochs`] in step with `assigned` and `revoking` after either
    /// changed: partitions it no longer holds lose their epoch, partitions new to it get `epoch`
    /// (the assignment epoch they were given at); the others keep theirs.
    pub(crate) fn stamp_assignment_epochs(&mut self, epoch: i32) {
        let holds = |a: &Assignment, t: &Uuid, p: &i32| a.get(t).is_some_and(|ps| ps.contains(p));
        let (assigned, revoking) = (&self.assigned, &self.revoking);
        self.assignment_epochs
            .retain(|(t, p), _| holds(assigned, t, p) || holds(revoking, t, p));
        for (t, ps) in &self.assigned {
            for p in ps {
                self.assignment_epochs.entry((*t, *p)).or_insert(epoch);
            }
        }
    }

    /// The epoch at which it got partition `partition` of topic `topic`, if it holds it
    /// (assigned or pending revocation).
    pub fn assignment_epoch(&self, topic: Uuid, partition: i32) -> Option<i32> {
        self.assignment_epochs.get(&(topic, partition)).copied()
    }

    fn subscribes_to(&self, topic: &str) -> bool {
        self.topic_names.iter().any(|t| t == topic)
            || self.regex.as_ref().is_some_and(|r| r.is_match(topic))
    }
}

/// A ConsumerGroupHeartbeat request, decoded.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    /// Request version (v1: the client names its member id).
    pub version: i16,
    /// Member id.
    pub member_id: String,
    /// Member epoch.
    pub member_epoch: i32,
    /// Instance id (static membership).
    pub instance_id: Option<String>,
    /// Rack.
    pub rack_id: Option<String>,
    /// Rebalance timeout, ms (-1: unchanged).
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names (`None`: unchanged).
    pub topic_names: Option<Vec<String>>,
    /// Subscribed topic regex (`None`: unchanged; empty: none).
    pub topic_regex: Option<String>,
    /// Server assignor (`None`: unchanged).
    pub assignor: Option<String>,
    /// The partitions the member owns (`None`: unchanged since its last heartbeat).
    pub owned: Option<Assignment>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
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
    /// Its assignment, when it changed or the request was a full one.
    pub assignment: Option<Assignment>,
}

/// A consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// Group id.
    pub id: String,
    /// Group epoch: bumped by membership, subscription and subscribed-topic changes.
    pub epoch: i32,
    /// The group epoch the target assignment was computed at.
    pub assignment_epoch: i32,
    /// The assignor of the last target assignment.
    pub assignor: Assignor,
    members: BTreeMap<String, Member>,
    target: HashMap<String, Assignment>,
    /// The subscribed topics (name -> id, partitions) the target was computed for.
    subscribed: TopicsView,
    config: ConsumerGroupConfig,
}

fn subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|bs| ps.is_subset(bs)))
}

fn intersects(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .any(|(t, ps)| b.get(t).is_some_and(|bs| !ps.is_disjoint(bs)))
}

fn minus(a: &Assignment, b: &Assignment) -> Assignment {
    let mut out = Assignment::new();
    for (t, ps) in a {
        let rest: BTreeSet<i32> = match b.get(t) {
            Some(bs) => ps.difference(bs).copied().collect(),
            None => ps.clone(),
        };
        if !rest.is_empty() {
            out.insert(*t, rest);
        }
    }
    out
}

fn intersection(a: &Assignment, b: &Assignment) -> Assignment {
    minus(a, &minus(a, b))
}

fn union(a: &mut Assignment, b: &Assignment) {
    for (t, ps) in b {
        a.entry(*t).or_default().extend(ps.iter().copied());
    }
    a.retain(|_, ps| !ps.is_empty());
}

/// Topic names sorted, each once (a member's `topic_names`).
fn sorted_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort();
    names.dedup();
    names
}

fn compile(regex: &str) -> Result<regex::Regex, E> {
    // RE2J patterns match the whole topic name, as Kafka's `Pattern.matcher(topic).matches()`.
    regex::Regex::new(&format!("^(?:{regex})$")).map_err(|_| E::InvalidRegularExpression)
}

impl ConsumerGroup {
    /// A new, empty group.
    pub fn new(id: &str, config: ConsumerGroupConfig) -> ConsumerGroup {
        ConsumerGroup {
            id: id.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            assignor: config.default_assignor,
            members: BTreeMap::new(),
            target: HashMap::new(),
            subscribed: TopicsView::new(),
            config,
        }
    }

    /// Its state.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable)
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Whether it has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Members in member id order.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    /// A member's target assignment.
    pub fn target_of(&self, member: &str) -> Assignment {
        self.target.get(member).cloned().unwrap_or_default()
    }

    /// The names of the topics its members subscribe to (for OffsetDelete).
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.subscribed.keys().cloned().collect()
    }

    /// ConsumerGroupHeartbeat (API 68).
    ///
    /// Errors: INVALID_REQUEST (42) for a malformed first heartbeat, UNKNOWN_MEMBER_ID (25),
    /// FENCED_MEMBER_EPOCH (110), UNRELEASED_INSTANCE_ID (111), FENCED_INSTANCE_ID (82),
    /// UNSUPPORTED_ASSIGNOR (112), INVALID_REGULAR_EXPRESSION (128), GROUP_MAX_SIZE_REACHED (81).
    pub fn heartbeat(
        &mut self,
        req: Heartbeat,
        topics: &TopicsView,
        now: Instant,
    ) -> Result<HeartbeatReply, E> {
        if let Some(a) = &req.assignor {
            Assignor::parse(a).ok_or(E::UnsupportedAssignor)?;
        }
        let regex = match req.topic_regex.as_deref() {
            Some(r) if !r.is_empty() => Some(compile(r)?),
            _ => None,
        };
        // One heartbeat moves the group epoch by one at most, whatever it changed.
        let epoch_before = self.epoch;
        let member_id = match req.member_epoch {
            LEAVE_EPOCH | STATIC_LEAVE_EPOCH => return self.leave(&req),
            0 => self.join(&req, now)?,
            e if e > 0 => {
                if req.member_id.is_empty() {
                    return Err(E::InvalidRequest);
                }
                let m = self.members.get(&req.member_id).ok_or(E::UnknownMemberId)?;
                if e > m.epoch
                    || (e < m.epoch
                        && (e != m.previous_epoch
                            || !req.owned.as_ref().is_none_or(|o| subset(o, &m.assigned))))
                {
                    return Err(E::FencedMemberEpoch);
                }
                req.member_id.clone()
            }
            _ => return Err(E::InvalidRequest),
        };
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1 && req.topic_names.is_some() && req.owned.is_some());
        let before = self.members[&member_id].assigned.clone();
        // Subscription changes bump the group epoch.
        {
            let m = self.members.get_mut(&member_id).expect("member");
            let mut changed = false;
            if let Some(names) = &req.topic_names {
                let names = sorted_names(names.iter().cloned());
                if names != m.topic_names {
                    m.topic_names = names;
                    changed = true;
                }
            }
            if let Some(r) = &req.topic_regex {
                let r = (!r.is_empty()).then(|| r.clone());
                if r != m.topic_regex {
                    m.topic_regex = r;
                    m.regex = regex;
                    changed = true;
                }
            }
            if req.assignor.is_some() && req.assignor != m.assignor {
                m.assignor = req.assignor.clone();
                changed = true;
            }
            if req.rebalance_timeout_ms >= 0 {
                m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            }
            if req.rack_id.is_some() {
                m.rack_id = req.rack_id.clone();
            }
            m.client_id = req.client_id.clone();
            m.client_host = req.client_host.clone();
            m.session_deadline = now + self.config.session_timeout;
            if changed {
                self.epoch += 1;
            }
        }
        self.refresh(topics, epoch_before);
        self.reconcile(&member_id, req.owned.as_ref(), now);
        let m = &self.members[&member_id];
        Ok(HeartbeatReply {
            member_id: m.id.clone(),
            member_epoch: m.epoch,
            heartbeat_interval_ms: self.config.heartbeat_interval.as_millis() as i32,
            assignment: (full || m.assigned != before).then(|| m.assigned.clone()),
        })
    }

    /// Epoch 0: a new member, a member rejoining, or a static member replacing its old self.
    /// Returns the member id (made here for a v0 request without one).
    fn join(&mut self, req: &Heartbeat, now: Instant) -> Result<String, E> {
        if req.version >= 1 && req.member_id.is_empty() {
            return Err(E::InvalidRequest);
        }
        if req.rebalance_timeout_ms < 0 || (req.topic_names.is_none() && req.topic_regex.is_none())
        {
            return Err(E::InvalidRequest);
        }
        let id = if req.member_id.is_empty() {
            Uuid::new_v4().to_string()
        } else {
            req.member_id.clone()
        };
        let fresh = |id: &str| {
            let mut m = Member::new(
                id,
                &req.client_id,
                &req.client_host,
                req.rebalance_timeout_ms,
                now + self.config.session_timeout,
            );
            m.instance_id = req.instance_id.clone();
            m.rack_id = req.rack_id.clone();
            m
        };
        if let Some(instance) = &req.instance_id {
            let old = self
                .members
                .values()
                .find(|m| m.instance_id.as_deref() == Some(instance) && m.id != id)
                .map(|m| (m.id.clone(), m.epoch));
            if let Some((old_id, old_epoch)) = old {
                if old_epoch != STATIC_LEAVE_EPOCH {
                    return Err(E::UnreleasedInstanceId);
                }
                // The new incarnation takes the old one's place and target, not its epoch.
                let old = self.members.remove(&old_id).expect("member");
                let target = self.target.remove(&old_id).unwrap_or_default();
                let mut m = fresh(&id);
                m.topic_names = old.topic_names;
                m.topic_regex = old.topic_regex;
                m.regex = old.regex;
                m.assignor = old.assignor;
                self.target.insert(id.clone(), target);
                self.members.insert(id.clone(), m);
                return Ok(id);
            }
        }
        match self.members.get_mut(&id) {
            Some(m) => {
                // Rejoining: it has dropped everything it owned.
                m.previous_epoch = m.epoch;
                m.epoch = 0;
                m.assigned.clear();
                m.revoking.clear();
                m.stamp_assignment_epochs(0);
                m.state = MemberState::Stable;
                m.revocation_deadline = None;
            }
            None => {
                if self.members.len() >= self.config.max_size {
                    return Err(E::GroupMaxSizeReached);
                }
                self.members.insert(id.clone(), fresh(&id));
                self.epoch += 1;
            }
        }
        Ok(id)
    }

    fn leave(&mut self, req: &Heartbeat) -> Result<HeartbeatReply, E> {
        let Some(m) = self.members.get_mut(&req.member_id) else {
            return Err(E::UnknownMemberId);
        };
        if req.member_epoch == STATIC_LEAVE_EPOCH {
            if m.instance_id.is_none() || m.instance_id != req.instance_id {
                return Err(E::FencedInstanceId);
            }
            // Its partitions stay its own until the session ends or the instance rejoins.
            m.previous_epoch = m.epoch;
            m.epoch = STATIC_LEAVE_EPOCH;
        } else {
            self.remove(&req.member_id.clone(), "left the group");
        }
        Ok(HeartbeatReply {
            member_id: req.member_id.clone(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    fn remove(&mut self, id: &str, why: &str) {
        if self.members.remove(id).is_some() {
            self.target.remove(id);
            self.epoch += 1;
            tracing::info!(group = %self.id, member = id, epoch = self.epoch, "consumer group member removed: {why}");
        }
    }

    /// Recomputes the subscribed topics, and the target assignment if the group epoch moved
    /// (to one past `epoch_before` at most).
    fn refresh(&mut self, topics: &TopicsView, epoch_before: i32) {
        let subscribed = self.subscribed_in(topics);
        if subscribed != self.subscribed {
            self.subscribed = subscribed;
            self.epoch += 1;
        }
        self.epoch = self.epoch.min(epoch_before + 1);
        if self.epoch <= self.assignment_epoch {
            return;
        }
        self.assignor = self.chosen_assignor();
        let members: Vec<AssignorMember<'_>> = self
            .members
            .values()
            .map(|m| AssignorMember {
                id: &m.id,
                topics: self
                    .subscribed
                    .iter()
                    .filter(|(n, _)| m.subscribes_to(n))
                    .map(|(_, t)| t.id)
                    .collect(),
                rack: m.rack_id.as_deref(),
            })
            .collect();
        let partitions: BTreeMap<Uuid, AssignorTopic<'_>> = self
            .subscribed
            .values()
            .map(|t| {
                let topic = AssignorTopic {
                    partitions: t.partitions,
                    racks: &t.racks,
                };
                (t.id, topic)
            })
            .collect();
        self.target = self.assignor.assign(&members, &partitions, &self.target);
        self.assignment_epoch = self.epoch;
        tracing::debug!(group = %self.id, epoch = self.epoch, members = self.members.len(),
            assignor = self.assignor.name(), "consumer group target assignment computed");
    }

    /// The topics of `topics` some member subscribes to.
    fn subscribed_in(&self, topics: &TopicsView) -> TopicsView {
        topics
            .iter()
            .filter(|(name, _)| self.members.values().any(|m| m.subscribes_to(name)))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    }

    /// The partitions every member but `id` owns or is still revoking.
    fn held_by_others(&self, id: &str) -> Assignment {
        let mut held = Assignment::new();
        for o in self.members.values().filter(|o| o.id != id) {
            union(&mut held, &o.assigned);
            union(&mut held, &o.revoking);
        }
        held
    }

    /// The assignor most members ask for, else the default.
    fn chosen_assignor(&self) -> Assignor {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for a in self.members.values().filter_map(|m| m.assignor.as_deref()) {
            *votes.entry(a).or_default() += 1;
        }
        votes
            .into_iter()
            .max_by_key(|(name, n)| (*n, std::cmp::Reverse(*name)))
            .and_then(|(name, _)| Assignor::parse(name))
            .unwrap_or(self.config.default_assignor)
    }

    /// Moves `id` towards its target (Kafka's `CurrentAssignmentBuilder`).
    fn reconcile(&mut self, id: &str, owned: Option<&Assignment>, now: Instant) {
        let m = &self.members[id];
        if m.epoch == STATIC_LEAVE_EPOCH {
            return;
        }
        if m.state == MemberState::UnrevokedPartitions {
            match owned {
                Some(o) if !intersects(o, &m.revoking) => {}
                _ => return,
            }
        }
        if m.epoch == self.assignment_epoch && m.state == MemberState::Stable {
            return;
        }
        let target = self.target.get(id).cloned().unwrap_or_default();
        let held_by_others = self.held_by_others(id);
        let epoch = self.assignment_epoch;
        let m = self.members.get_mut(id).expect("member");
        m.revoking.clear();
        let keep = intersection(&m.assigned, &target);
        let revoke = minus(&m.assigned, &target);
        if !revoke.is_empty() {
            m.assigned = keep;
            m.revoking = revoke;
            m.stamp_assignment_epochs(epoch);
            m.state = MemberState::UnrevokedPartitions;
            m.revocation_deadline =
                Some(now + Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64));
            return;
        }
        let wanted = minus(&target, &keep);
        let free = minus(&wanted, &held_by_others);
        let unreleased = !minus(&wanted, &free).is_empty();
        m.assigned = keep;
        union(&mut m.assigned, &free);
        m.stamp_assignment_epochs(epoch);
        if m.epoch != epoch {
            m.previous_epoch = m.epoch;
            m.epoch = epoch;
        }
        m.revocation_deadline = None;
        m.state = if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
    }

    /// Session and revocation timeouts, and a classic member's join and sync timeouts; returns
    /// whether anything changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        let expired: Vec<(String, &'static str)> = self
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    Some((m.id.clone(), "session timed out"))
                } else if m.revocation_deadline.is_some_and(|d| d <= now) {
                    Some((
                        m.id.clone(),
                        "did not revoke its partitions within its rebalance timeout",
                    ))
                } else if let Some(why) = m.classic.as_ref().and_then(|c| c.expired(now)) {
                    Some((m.id.clone(), why))
                } else {
                    None
                }
            })
            .collect();
        for (id, why) in &expired {
            self.remove(id, why);
        }
        !expired.is_empty()
    }

    /// OffsetCommit / TxnOffsetCommit validation (Kafka 4.4's
    /// `ConsumerGroup.validateOffsetCommit`, with KIP-1251's assignment epochs): a member
    /// committing at its current epoch may commit any partition; at an older epoch (its
    /// heartbeat answer with the newer one has not reached it yet) only partitions it holds
    /// (assigned or pending revocation) that it got at or before that epoch. Epoch < 0 from a
    /// client outside the group is allowed while the group is empty, and a transactional
    /// commit without member information (generation -1, no member, no instance) always.
    /// `partitions` names what is committed: (topic id, topic name, partition).
    ///
    /// Errors (one for the whole request, as Kafka's): UNKNOWN_MEMBER_ID (25);
    /// UNSUPPORTED_VERSION (35) for OffsetCommit below v9 from a member of the consumer
    /// protocol; STALE_MEMBER_EPOCH (113) for an epoch newer than the member's, or older than a
    /// partition's assignment epoch, or a partition it does not hold; ILLEGAL_GENERATION (22)
    /// instead for a classic member (its generation is its epoch).
    pub fn validate_commit(
        &self,
        c: &Committer<'_>,
        partitions: &[(Uuid, &str, i32)],
    ) -> Result<(), E> {
        if c.epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        if c.transactional && c.epoch == -1 && c.member_id.is_empty() && c.instance_id.is_none() {
            return Ok(());
        }
        let m = self.members.get(c.member_id).ok_or(E::UnknownMemberId)?;
        if !c.transactional && !m.uses_classic_protocol() && c.version < 9 {
            tracing::debug!(group = %self.id, member = c.member_id, version = c.version,
                "OffsetCommit version 9 or above must be used by members using the consumer group protocol");
            return Err(E::UnsupportedVersion);
        }
        if c.epoch == m.epoch {
            return Ok(());
        }
        let stale = if m.uses_classic_protocol() {
            E::IllegalGeneration
        } else {
            E::StaleMemberEpoch
        };
        if c.epoch > m.epoch {
            tracing::debug!(group = %self.id, member = c.member_id,
                "Received member epoch {} is newer than current member epoch {}.", c.epoch, m.epoch);
            return Err(stale);
        }
        for &(topic_id, topic, partition) in partitions {
            match m.assignment_epoch(topic_id, partition) {
                None => {
                    tracing::debug!(group = %self.id, member = c.member_id,
                        "Partition {topic}-{partition} is not assigned or pending revocation for member.");
                    return Err(stale);
                }
                Some(at) if c.epoch < at => {
                    tracing::debug!(group = %self.id, member = c.member_id,
                        "Received member epoch {} is older than assignment epoch {at} for partition {topic}-{partition}.", c.epoch);
                    return Err(stale);
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Who commits offsets: the member fields of an OffsetCommit or TxnOffsetCommit request.
#[derive(Debug, Clone, Copy)]
pub struct Committer<'a> {
    /// Member id (empty for a client outside the group).
    pub member_id: &'a str,
    /// Generation id (classic) or member epoch (consumer protocol); -1 outside the group.
    pub epoch: i32,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<&'a str>,
    /// TxnOffsetCommit (KIP-447) rather than OffsetCommit.
    pub transactional: bool,
    /// The request's version (OffsetCommit v9+ for consumer-protocol members).
    pub version: i16,
}

#[cfg(test)]
#[path = "consumer_tests.rs"]
mod tests;
