//! One KIP-932 share group's membership (ShareGroupHeartbeat): members join with epoch 0 and a
//! client-chosen member id, leave with -1, and get the partitions of the topics they subscribe
//! to from the simple assignor ([`assign`]). Unlike consumer groups there is no revocation: a
//! partition may be shared by several members, records are handed out one at a time by the
//! share-partitions ([`crate::coordinator::share`]), so a new target assignment applies to each
//! member at its next heartbeat. Pure state, unit-tested in `share_tests.rs`.
//!
//! Semantics follow Kafka 4.4's `GroupMetadataManager.shareGroupHeartbeat`, `ShareGroup` and
//! `SimpleAssignor`. Not built (yet): the `group.share.assignment.interval.ms` batching (the
//! target assignment is recomputed at the first heartbeat after the group epoch moved) and the
//! share-partition initialization round trip (a subscribed partition is assignable at once).

use kafka_protocol::error::ResponseError as E;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Member epoch of a leave request.
pub const LEAVE_EPOCH: i32 = -1;

/// Settings (Kafka's broker configs of the same names).
#[derive(Debug, Clone)]
pub struct ShareGroupConfig {
    /// `group.share.session.timeout.ms` (default 45000).
    pub session_timeout: Duration,
    /// `group.share.heartbeat.interval.ms` (default 5000), told to members.
    pub heartbeat_interval: Duration,
    /// `group.share.max.size` (default 200): GROUP_MAX_SIZE_REACHED (81) beyond.
    pub max_size: usize,
}

impl Default for ShareGroupConfig {
    fn default() -> Self {
        ShareGroupConfig {
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
            max_size: 200,
        }
    }
}

/// A topic partition by name.
pub type TopicPartition = (String, i32);

/// A member of a share group (one `KafkaShareConsumer`).
#[derive(Debug, Clone)]
pub struct ShareMember {
    /// Member id (chosen by the client, at most 36 characters).
    pub id: String,
    /// Member epoch.
    pub epoch: i32,
    /// The epoch before the last bump (a heartbeat with it is still accepted).
    pub previous_epoch: i32,
    /// `RackId`, if given.
    pub rack: Option<String>,
    /// Client id of its last heartbeat.
    pub client_id: String,
    /// Client host of its last heartbeat (`/127.0.0.1`, as Kafka shows it).
    pub client_host: String,
    /// Topics it subscribes to.
    pub subscribed: BTreeSet<String>,
    /// Partitions it has.
    pub assigned: BTreeSet<TopicPartition>,
    last_seen: Instant,
}

/// A heartbeat, as the coordinator takes it.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    /// Member id.
    pub member_id: String,
    /// Member epoch: 0 joins, -1 leaves.
    pub member_epoch: i32,
    /// `RackId` (`None`: unchanged).
    pub rack: Option<String>,
    /// `SubscribedTopicNames` (`None`: unchanged).
    pub subscribed: Option<Vec<String>>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// The group's `share.session.timeout.ms` and `share.heartbeat.interval.ms` in force (its
    /// group configs), if they differ from the broker's.
    pub timeouts: Option<(Duration, Duration)>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatReply {
    /// Member id.
    pub member_id: String,
    /// The member's epoch (-1 after a leave).
    pub member_epoch: i32,
    /// Heartbeat interval (ms); 0 after a leave.
    pub heartbeat_interval_ms: i32,
    /// The whole assignment, when it is to be sent (a join, a full request, or a change).
    pub assignment: Option<BTreeSet<TopicPartition>>,
}

/// Group states (Kafka's `ShareGroupState` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    /// No members.
    Empty,
    /// At least one member.
    Stable,
}

impl ShareGroupState {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
        }
    }
}

/// One share group.
#[derive(Debug, Clone)]
pub struct ShareGroup {
    /// Group id.
    pub id: String,
    /// Group epoch: bumped when members or subscriptions or the subscribed topics change.
    pub epoch: i32,
    /// The epoch of the current target assignment.
    pub assignment_epoch: i32,
    /// Members by id.
    pub members: BTreeMap<String, ShareMember>,
    /// Target assignment by member.
    target: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// Partition counts of the subscribed topics the last target assignment saw.
    seen_topics: BTreeMap<String, i32>,
    config: ShareGroupConfig,
}

impl ShareGroup {
    /// An empty group.
    pub fn new(id: &str, config: ShareGroupConfig) -> Self {
        ShareGroup {
            id: id.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            seen_topics: BTreeMap::new(),
            config,
        }
    }

    /// Its state.
    pub fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    /// No members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every topic some member subscribes to.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| m.subscribed.iter().cloned())
            .collect()
    }

    /// Whether `member` is in the group (ShareFetch checks the member id).
    pub fn has_member(&self, member: &str) -> bool {
        self.members.contains_key(member)
    }

    /// A heartbeat at `now`; `partitions_of(topic)` is an existing topic's partition count.
    ///
    /// Errors (with Kafka's messages): INVALID_REQUEST (42) for a first heartbeat without
    /// subscriptions or an epoch below -1; GROUP_MAX_SIZE_REACHED (81); UNKNOWN_MEMBER_ID (25) for
    /// an unknown member with a non-zero epoch; FENCED_MEMBER_EPOCH (110) for an epoch that is
    /// neither the member's nor its previous one.
    pub fn heartbeat(
        &mut self,
        req: Heartbeat,
        partitions_of: &dyn Fn(&str) -> Option<i32>,
        now: Instant,
    ) -> Result<HeartbeatReply, (E, String)> {
        if let Some((session, heartbeat)) = req.timeouts {
            self.config.session_timeout = session;
            self.config.heartbeat_interval = heartbeat;
        }
        if req.member_epoch < LEAVE_EPOCH {
            return Err((E::InvalidRequest, "MemberEpoch is invalid.".into()));
        }
        if req.member_epoch == 0 && req.subscribed.as_ref().is_none_or(|s| s.is_empty()) {
            return Err((
                E::InvalidRequest,
                "SubscribedTopicNames must be set in first request.".into(),
            ));
        }
        if req.member_epoch == LEAVE_EPOCH {
            if self.members.remove(&req.member_id).is_none() {
                return Err((
                    E::UnknownMemberId,
                    format!(
                        "Member {} is not a member of group {}.",
                        req.member_id, self.id
                    ),
                ));
            }
            self.target.remove(&req.member_id);
            self.epoch += 1;
            return Ok(HeartbeatReply {
                member_id: req.member_id,
                member_epoch: LEAVE_EPOCH,
                heartbeat_interval_ms: 0,
                assignment: None,
            });
        }
        let known = self.members.contains_key(&req.member_id);
        if !known {
            if req.member_epoch != 0 {
                return Err((
                    E::UnknownMemberId,
                    format!(
                        "Member {} is not a member of group {}.",
                        req.member_id, self.id
                    ),
                ));
            }
            if self.members.len() >= self.config.max_size {
                return Err((
                    E::GroupMaxSizeReached,
                    format!(
                        "The share group has reached its maximum capacity of {} members.",
                        self.config.max_size
                    ),
                ));
            }
        } else {
            let m = &self.members[&req.member_id];
            if req.member_epoch != 0
                && (req.member_epoch > m.epoch
                    || (req.member_epoch < m.epoch && req.member_epoch != m.previous_epoch))
            {
                return Err((
                    E::FencedMemberEpoch,
                    format!(
                        "The share group member has a invalid epoch {} (expected {}).",
                        req.member_epoch, m.epoch
                    ),
                ));
            }
        }
        let full = req.subscribed.is_some();
        let member = self
            .members
            .entry(req.member_id.clone())
            .or_insert_with(|| ShareMember {
                id: req.member_id.clone(),
                epoch: 0,
                previous_epoch: 0,
                rack: None,
                client_id: String::new(),
                client_host: String::new(),
                subscribed: BTreeSet::new(),
                assigned: BTreeSet::new(),
                last_seen: now,
            });
        member.last_seen = now;
        member.client_id = req.client_id;
        member.client_host = req.client_host;
        if req.rack.is_some() {
            member.rack = req.rack;
        }
        let mut bump = !known;
        if let Some(topics) = req.subscribed {
            let topics: BTreeSet<String> = topics.into_iter().collect();
            if topics != member.subscribed {
                member.subscribed = topics;
                bump = true;
            }
        }
        // The subscribed topics' partition counts (a topic created or grown) move the epoch.
        let seen: BTreeMap<String, i32> = self
            .subscribed_topics()
            .into_iter()
            .filter_map(|t| partitions_of(&t).map(|n| (t, n)))
            .collect();
        if seen != self.seen_topics {
            bump = true;
        }
        if bump {
            self.epoch += 1;
        }
        if self.assignment_epoch < self.epoch {
            self.seen_topics = seen;
            self.target = assign(&self.members, &self.seen_topics, &self.target);
            self.assignment_epoch = self.epoch;
        }
        let member = self.members.get_mut(&req.member_id).expect("inserted");
        let target = self.target.get(&member.id).cloned().unwrap_or_default();
        let changed = target != member.assigned;
        if member.epoch != self.assignment_epoch {
            member.previous_epoch = member.epoch;
            member.epoch = self.assignment_epoch;
        }
        member.assigned = target;
        let send = req.member_epoch == 0 || full || changed;
        Ok(HeartbeatReply {
            member_id: member.id.clone(),
            member_epoch: member.epoch,
            heartbeat_interval_ms: self.config.heartbeat_interval.as_millis() as i32,
            assignment: send.then(|| member.assigned.clone()),
        })
    }

    /// Removes members whose session expired at `now`; returns their ids.
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        let timeout = self.config.session_timeout;
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| now.duration_since(m.last_seen) > timeout)
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            self.members.remove(id);
            self.target.remove(id);
        }
        if !gone.is_empty() {
            self.epoch += 1;
        }
        gone
    }
}

/// Kafka's simple assignor (`SimpleAssignor`), topic by topic among the members subscribing to
/// it (as its heterogeneous builder): every partition goes to ceil(members / partitions) members,
/// each member gets about the same number of partitions (member i: ceil(q(i+1)) - ceil(qi) with
/// q = sharing × partitions / members), and previous holdings are kept where the counts allow
/// (sticky).
pub fn assign(
    members: &BTreeMap<String, ShareMember>,
    topics: &BTreeMap<String, i32>,
    previous: &BTreeMap<String, BTreeSet<TopicPartition>>,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .keys()
        .map(|id| (id.clone(), BTreeSet::new()))
        .collect();
    for (topic, n) in topics {
        let subscribers: Vec<&String> = members
            .values()
            .filter(|m| m.subscribed.contains(topic))
            .map(|m| &m.id)
            .collect();
        let (m, p) = (subscribers.len(), (*n).max(0) as usize);
        if m == 0 || p == 0 {
            continue;
        }
        let sharing = m.div_ceil(p);
        let q = (sharing * p) as f64 / m as f64;
        let desired: Vec<usize> = (0..m)
            .map(|i| (q * (i + 1) as f64).ceil() as usize - (q * i as f64).ceil() as usize)
            .collect();
        let mut holders = vec![0usize; p];
        let mut got: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); m];
        // Sticky: keep what each member had, within its desired count and the sharing bound.
        for (k, id) in subscribers.iter().enumerate() {
            for (t, part) in previous.get(*id).into_iter().flatten() {
                let i = *part as usize;
                if t == topic && i < p && got[k].len() < desired[k] && holders[i] < sharing {
                    holders[i] += 1;
                    got[k].insert(*part);
                }
            }
        }
        // Round robin: each unfilled member takes the least-shared partition it lacks.
        loop {
            let mut progressed = false;
            for k in 0..m {
                if got[k].len() >= desired[k] {
                    continue;
                }
                let pick = (0..p)
                    .filter(|i| holders[*i] < sharing && !got[k].contains(&(*i as i32)))
                    .min_by_key(|i| holders[*i]);
                if let Some(i) = pick {
                    holders[i] += 1;
                    got[k].insert(i as i32);
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        for (k, id) in subscribers.iter().enumerate() {
            let set = out.get_mut(*id).expect("every member");
            set.extend(got[k].iter().map(|part| (topic.clone(), *part)));
        }
    }
    out
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
