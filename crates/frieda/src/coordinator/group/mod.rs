//! The group coordinator: every consumer group of this broker (a single broker coordinates
//! all groups), their committed offsets, and the timers that expire members.
//!
//! - [`state`]: one group's membership and rebalance state machine (pure, unit-tested).
//! - The coordinator keeps the groups behind one lock held only for in-memory work; JoinGroup
//!   and SyncGroup answers that must wait are awaited after the lock is released.
//! - [`consumer`]: one KIP-848 consumer group (the `consumer` protocol, ConsumerGroupHeartbeat),
//!   with the server-side assignors of [`assignor`]. A group id is either a classic group or a
//!   consumer group; an empty one of either kind becomes the other kind when a member of the other
//!   protocol arrives (its committed offsets stay). A non-empty classic group becomes a consumer
//!   group when a consumer-protocol member joins, a consumer group takes classic members, and it
//!   turns classic again when its last consumer-protocol member goes ([`consumer::classic`],
//!   KIP-848's upgrade path).
//! - [`streams`]: one KIP-1071 streams group (the `streams` protocol of Kafka Streams,
//!   StreamsGroupHeartbeat). A group id is a streams group only while no classic or consumer group
//!   of that id has members.
//! - [`share`]: one KIP-932 share group's membership (ShareGroupHeartbeat); its records are
//!   handed out by the share-partitions of [`crate::coordinator::share`].
//! - Offsets live in [`OffsetStore`](crate::coordinator::offsets::OffsetStore); group metadata
//!   (protocol type, generation) is stored there too when a generation starts, so groups and
//!   their offsets come back after a restart (members rejoin: their sessions are not restored).

pub mod assignor;
pub mod config;
pub mod consumer;
pub mod embedded;
pub mod share;
pub mod state;
pub mod streams;

use crate::clock::now_ms;
use crate::coordinator::offsets::codec::OffsetValue;
use crate::coordinator::offsets::codec::ShareStateValue;
use crate::coordinator::offsets::{OffsetStore, TopicPartition};
use crate::storage::partition::Partition;
use bytes::Bytes;
use consumer::classic;
use consumer::{
    Committer, ConsumerGroup, ConsumerGroupConfig, Heartbeat, HeartbeatReply, TopicsView,
};
use kafka_protocol::error::ResponseError as E;
use parking_lot::{Mutex, MutexGuard};
use share::ShareGroup;
use state::{Group, GroupConfig, GroupState, JoinRequest, JoinResult, Reply, SyncResult};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use streams::StreamsGroup;
use uuid::Uuid;

/// Coordinator settings (Kafka names in the broker config).
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// Group timeouts and the initial rebalance delay.
    pub group: GroupConfig,
    /// KIP-848 consumer groups: session timeout, heartbeat interval, assignor.
    pub consumer: ConsumerGroupConfig,
    /// KIP-1071 streams groups: session timeout, heartbeat interval, size.
    pub streams: streams::StreamsGroupConfig,
    /// KIP-932 share groups: session timeout, heartbeat interval, size.
    pub share: share::ShareGroupConfig,
    /// KIP-932 share-partitions: lock duration, delivery limit, in-flight bound, sessions.
    pub share_records: crate::coordinator::share::ShareConfig,
    /// `offsets.retention.minutes` as ms: offsets of an empty group are deleted this long after
    /// it became empty (or after their commit, for offsets-only groups). Default 7 days.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`, default 600000.
    pub offsets_retention_check_interval_ms: u64,
    /// `offset.metadata.max.bytes`, default 4096.
    pub offset_metadata_max_bytes: usize,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            group: GroupConfig::default(),
            consumer: ConsumerGroupConfig::default(),
            streams: streams::StreamsGroupConfig::default(),
            share: share::ShareGroupConfig::default(),
            share_records: Default::default(),
            offsets_retention_ms: 7 * 24 * 3600 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
        }
    }
}

/// How often the timers run (session timeouts are enforced within this).
pub const TICK: Duration = Duration::from_millis(100);

/// One group in a listing.
#[derive(Debug, Clone)]
pub struct GroupListing {
    /// Group id.
    pub group_id: String,
    /// Protocol type, empty for offsets-only groups.
    pub protocol_type: String,
    /// State, as Kafka names it (classic: `GroupState::name`; consumer: `ConsumerGroupState::name`).
    pub state: &'static str,
    /// `classic` or `consumer` (ListGroups v5 `GroupType`).
    pub group_type: &'static str,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Instance id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Metadata for the selected protocol (Stable groups only).
    pub metadata: Bytes,
    /// Assignment (Stable groups only).
    pub assignment: Bytes,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    /// State (`Dead` for an unknown group).
    pub state: GroupState,
    /// Protocol type.
    pub protocol_type: String,
    /// Selected protocol (Stable groups only).
    pub protocol: String,
    /// Members.
    pub members: Vec<MemberDescription>,
    /// Why there is no classic group of this id (state `Dead`): Kafka's GroupIdNotFoundException
    /// message ("Group g not found." or "Group g is not a classic group."), which DescribeGroups
    /// v6+ answers with GROUP_ID_NOT_FOUND (69, KIP-1043).
    pub not_found: Option<String>,
}

/// The coordinator.
pub struct GroupCoordinator {
    groups: Mutex<HashMap<String, Group>>,
    /// KIP-848 consumer groups. Lock order: `groups`, then `consumers`.
    consumers: Mutex<HashMap<String, ConsumerGroup>>,
    /// KIP-1071 streams groups. Lock order: `groups`, `consumers`, then `streams`.
    streams: Mutex<HashMap<String, StreamsGroup>>,
    /// KIP-932 share groups. Lock order: `groups`, `consumers`, `streams`, then `shares`.
    shares: Mutex<HashMap<String, ShareGroup>>,
    /// Set at shutdown (under the groups lock): no JoinGroup or SyncGroup parks any more.
    stopped: std::sync::atomic::AtomicBool,
    /// Committed offsets.
    pub offsets: OffsetStore,
    config: CoordinatorConfig,
}

fn valid_group_id(id: &str) -> Result<(), E> {
    if id.is_empty() {
        Err(E::InvalidGroupId)
    } else {
        Ok(())
    }
}

/// JoinGroup of a classic member to the consumer group `c`, answered at once.
/// The committed partitions as a consumer group's commit check names them: (topic id, topic
/// name, partition); a topic without an id (deleted meanwhile) gets the nil id, which no member
/// holds.
fn committed<'a>(
    entries: &'a [(TopicPartition, OffsetValue)],
    topic_ids: &(dyn Fn(&str) -> Option<Uuid> + Sync),
) -> Vec<(Uuid, &'a str, i32)> {
    entries
        .iter()
        .map(|((topic, partition), _)| {
            let id = topic_ids(topic).unwrap_or(Uuid::nil());
            (id, topic.as_str(), *partition)
        })
        .collect()
}

/// The committed partitions as a streams group's commit check names them: (topic, partition).
fn streams_committed(entries: &[(TopicPartition, OffsetValue)]) -> Vec<(&str, i32)> {
    entries
        .iter()
        .map(|((topic, partition), _)| (topic.as_str(), *partition))
        .collect()
}

fn classic_join(c: &mut ConsumerGroup, req: &JoinRequest, topics: &TopicsView) -> JoinResult {
    match c.classic_join(req, topics, Instant::now()) {
        Ok(j) => {
            tracing::debug!(group = %c.id, member = %j.member_id, generation = j.generation, "JoinGroup of a classic member to a consumer group answered");
            JoinResult {
                error: None,
                member_id: j.member_id,
                generation: j.generation,
                protocol_type: Some(classic::CONSUMER_PROTOCOL_TYPE.to_string()),
                protocol_name: Some(j.protocol_name),
                leader: String::new(),
                skip_assignment: false,
                members: Vec::new(),
            }
        }
        Err((e, member_id)) => JoinResult::error(&member_id, e),
    }
}

async fn await_join(reply: Reply<JoinResult>, member_id: &str) -> JoinResult {
    match reply {
        Reply::Now(r) => r,
        Reply::Wait(rx) => rx
            .await
            .unwrap_or_else(|_| JoinResult::error(member_id, E::RebalanceInProgress)),
    }
}

impl GroupCoordinator {
    /// Loads the offsets log and rebuilds the groups it names: Stable with their members where
    /// the log has them (after a coordinator failover their members carry on), else Empty.
    pub fn open(log: Arc<Partition>, config: CoordinatorConfig) -> anyhow::Result<Self> {
        let offsets = OffsetStore::open(log)?;
        let mut groups = HashMap::new();
        for (id, meta) in offsets.stored_groups() {
            let g = match meta {
                Some(m) => Group::restore(&id, config.group.clone(), &m),
                None => Group::new(&id, config.group.clone()),
            };
            groups.insert(id, g);
        }
        // Share groups with stored share-partition states come back Empty (members rejoin).
        let shares: HashMap<String, ShareGroup> = offsets
            .share_groups()
            .into_iter()
            .map(|id| {
                let g = ShareGroup::new(&id, config.share.clone());
                (id, g)
            })
            .collect();
        Ok(GroupCoordinator {
            groups: Mutex::new(groups),
            consumers: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            shares: Mutex::new(shares),
            stopped: std::sync::atomic::AtomicBool::new(false),
            offsets,
            config,
        })
    }

    /// The KIP-848 consumer groups, locked. The guard of `groups` it asks for states the one lock
    /// order, `groups` then `consumers`: nothing takes `groups` while it holds `consumers`.
    fn lock_consumers<'a>(
        &'a self,
        _groups: &MutexGuard<'_, HashMap<String, Group>>,
    ) -> MutexGuard<'a, HashMap<String, ConsumerGroup>> {
        self.consumers.lock()
    }

    /// The KIP-1071 streams groups, locked; after `groups` (and `consumers`, if held): nothing
    /// takes either while it holds `streams`.
    fn lock_streams<'a>(
        &'a self,
        _groups: &MutexGuard<'_, HashMap<String, Group>>,
    ) -> MutexGuard<'a, HashMap<String, StreamsGroup>> {
        self.streams.lock()
    }

    /// The KIP-932 share groups, locked; last in the lock order: nothing else is taken while
    /// it is held.
    fn lock_shares<'a>(
        &'a self,
        _groups: &MutexGuard<'_, HashMap<String, Group>>,
    ) -> MutexGuard<'a, HashMap<String, ShareGroup>> {
        self.shares.lock()
    }

    /// Settings.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Persists what changed in a group (new generation, emptied). Fire and forget: the write
    /// is queued in order, and a failure is logged by the writer.
    fn persist(&self, g: &mut Group) {
        if !g.meta_changed {
            return;
        }
        g.meta_changed = false;
        drop(self.offsets.store_group(&g.id, g.stored()));
    }

    /// JoinGroup; waits until the rebalance completes (or an error). A JoinGroup to a consumer
    /// group with members joins it as a classic member and is answered at once
    /// ([`ConsumerGroup::classic_join`]; `topics` is what its subscription can name).
    pub async fn join(&self, group_id: &str, req: JoinRequest, topics: &TopicsView) -> JoinResult {
        if let Err(e) = valid_group_id(group_id) {
            return JoinResult::error(&req.member_id, e);
        }
        let member_id = req.member_id.clone();
        let reply = {
            let mut groups = self.groups.lock();
            if self.is_stopped() {
                return JoinResult::error(&req.member_id, E::NotCoordinator);
            }
            {
                let mut consumers = self.lock_consumers(&groups);
                match consumers.get_mut(group_id) {
                    Some(c) if !c.is_empty() => {
                        return classic_join(c, &req, topics);
                    }
                    Some(_) => {
                        consumers.remove(group_id);
                    }
                    None => {}
                }
            }
            if self
                .lock_streams(&groups)
                .get(group_id)
                .is_some_and(|s| !s.is_empty())
            {
                // Kafka: a classic member cannot join a streams group.
                return JoinResult::error(&req.member_id, E::InconsistentGroupProtocol);
            }
            if !groups.contains_key(group_id) {
                if !req.member_id.is_empty() {
                    return JoinResult::error(&req.member_id, E::UnknownMemberId);
                }
                groups.insert(
                    group_id.to_string(),
                    Group::new(group_id, self.config.group.clone()),
                );
            }
            let g = groups.get_mut(group_id).expect("inserted");
            let reply = g.join(req, Instant::now());
            self.persist(g);
            reply
        };
        let r = await_join(reply, &member_id).await;
        tracing::debug!(group = group_id, member = %member_id, error = ?r.error, generation = r.generation,
            leader = %r.leader, members = r.members.len(), "JoinGroup answered");
        r
    }

    /// SyncGroup; the leader's call distributes the assignment; others wait for it. In a
    /// consumer group, a classic member gets its assignment at once
    /// ([`ConsumerGroup::classic_sync`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        topics: &TopicsView,
    ) -> SyncResult {
        let error = |e| SyncResult {
            error: Some(e),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        };
        if let Err(e) = valid_group_id(group_id) {
            return error(e);
        }
        let reply = {
            let mut groups = self.groups.lock();
            if self.is_stopped() {
                return error(E::NotCoordinator);
            }
            if let Some(c) = self.lock_consumers(&groups).get_mut(group_id) {
                return match c.classic_sync(
                    member_id,
                    instance_id,
                    generation,
                    protocol_type,
                    protocol_name,
                    topics,
                    Instant::now(),
                ) {
                    Ok((assignment, name)) => SyncResult {
                        error: None,
                        protocol_type: Some(classic::CONSUMER_PROTOCOL_TYPE.to_string()),
                        protocol_name: Some(name),
                        assignment,
                    },
                    Err(e) => error(e),
                };
            }
            let Some(g) = groups.get_mut(group_id) else {
                return error(E::UnknownMemberId);
            };
            let reply = g.sync(
                generation,
                member_id,
                instance_id,
                protocol_type,
                protocol_name,
                assignments,
                Instant::now(),
            );
            self.persist(g);
            reply
        };
        let r = match reply {
            Reply::Now(r) => r,
            Reply::Wait(rx) => rx.await.unwrap_or_else(|_| error(E::RebalanceInProgress)),
        };
        tracing::debug!(group = group_id, member = %member_id, generation, error = ?r.error,
            assignment_bytes = r.assignment.len(), "SyncGroup answered");
        r
    }

    /// Heartbeat; `None` is success. A classic member of a consumer group is told
    /// REBALANCE_IN_PROGRESS when it must rejoin ([`ConsumerGroup::classic_heartbeat`]).
    pub fn heartbeat(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Option<E> {
        if let Err(e) = valid_group_id(group_id) {
            return Some(e);
        }
        let mut groups = self.groups.lock();
        if let Some(c) = self.lock_consumers(&groups).get_mut(group_id) {
            return c.classic_heartbeat(member_id, instance_id, generation, Instant::now());
        }
        let Some(g) = groups.get_mut(group_id) else {
            return Some(E::UnknownMemberId);
        };
        let r = g.heartbeat(generation, member_id, instance_id, Instant::now());
        self.persist(g);
        if r.is_some() {
            tracing::debug!(group = group_id, member = %member_id, generation, error = ?r, state = g.state.name(), "Heartbeat refused");
        }
        r
    }

    /// LeaveGroup of several members: the group-level error, and one result per member.
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> (Option<E>, Vec<Option<E>>) {
        if let Err(e) = valid_group_id(group_id) {
            return (Some(e), vec![]);
        }
        let mut groups = self.groups.lock();
        {
            let mut consumers = self.lock_consumers(&groups);
            if let Some(c) = consumers.get_mut(group_id) {
                let results = members
                    .iter()
                    .map(|(m, i)| c.classic_leave(m, i.as_deref()))
                    .collect();
                return (None, results);
            }
        }
        let Some(g) = groups.get_mut(group_id) else {
            return (None, vec![Some(E::UnknownMemberId); members.len()]);
        };
        if g.state == GroupState::Dead {
            return (Some(E::CoordinatorNotAvailable), vec![]);
        }
        let now = Instant::now();
        let results = members
            .iter()
            .map(|(m, i)| g.leave(m, i.as_deref(), now))
            .collect();
        self.persist(g);
        (None, results)
    }

    /// OffsetCommit: validates the member and generation, then stores the offsets; resolves
    /// once they are durable. The error applies to every partition.
    ///
    /// `topic_ids` resolves the committed topics' ids for a consumer group's assignment epochs
    /// (KIP-1251; see [`ConsumerGroup::validate_commit`]).
    pub async fn commit(
        &self,
        group_id: &str,
        committer: Committer<'_>,
        entries: Vec<(TopicPartition, OffsetValue)>,
        topic_ids: &(dyn Fn(&str) -> Option<Uuid> + Sync),
    ) -> Result<(), E> {
        valid_group_id(group_id)?;
        let Committer {
            epoch: generation,
            member_id,
            instance_id,
            ..
        } = committer;
        let pending = {
            let mut groups = self.groups.lock();
            let mut consumer_group = match self.lock_consumers(&groups).get(group_id) {
                Some(c) => {
                    c.validate_commit(&committer, &committed(&entries, topic_ids))?;
                    true
                }
                None => false,
            };
            if let Some(s) = self.lock_streams(&groups).get(group_id) {
                s.validate_commit(&committer, &streams_committed(&entries))?;
                consumer_group = true;
            }
            match groups.get_mut(group_id) {
                _ if consumer_group => {}
                None if generation < 0 => {
                    groups.insert(
                        group_id.to_string(),
                        Group::new(group_id, self.config.group.clone()),
                    );
                }
                None => return Err(E::IllegalGeneration),
                Some(g) => {
                    let r = g.validate_commit(generation, member_id, instance_id, Instant::now());
                    tracing::debug!(group = group_id, member = %member_id, generation, state = g.state.name(),
                        group_generation = g.generation, result = ?r, "OffsetCommit validated");
                    r?
                }
            }
            self.offsets.commit(group_id, entries)
        };
        pending.await
    }

    /// TxnOffsetCommit (KIP-98; KIP-447 generation checks from v3): validates the member and
    /// generation when given (generation -1 skips them, as Kafka does for producers without
    /// group metadata), then writes the offsets as `producer`'s transactional commit, pending
    /// until its transaction ends.
    ///
    /// `check`: the producer-state check of the write (see
    /// [`crate::coordinator::offsets::OffsetStore::txn_commit`]).
    ///
    /// Errors: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, the write's errors
    /// (INVALID_PRODUCER_EPOCH for a fenced producer, INVALID_TXN_STATE for a voided
    /// verification).
    pub async fn txn_commit(
        &self,
        group_id: &str,
        producer: crate::coordinator::records::TxnProducer,
        committer: Committer<'_>,
        entries: Vec<(TopicPartition, OffsetValue)>,
        topic_ids: &(dyn Fn(&str) -> Option<Uuid> + Sync),
        check: crate::storage::partition::ProducerCheck,
    ) -> Result<(), E> {
        valid_group_id(group_id)?;
        let Committer {
            epoch: generation,
            member_id,
            instance_id,
            ..
        } = committer;
        {
            // Lock order: `groups`, then `consumers` (an `if let` on `consumers.lock()` would hold
            // it through its `else`, and taking `groups` there deadlocked against JoinGroup,
            // LeaveGroup and OffsetCommit).
            let mut groups = self.groups.lock();
            let consumers = self.lock_consumers(&groups);
            let streams = self.lock_streams(&groups);
            if let Some(c) = consumers.get(group_id) {
                c.validate_commit(&committer, &committed(&entries, topic_ids))?;
            } else if let Some(s) = streams.get(group_id) {
                s.validate_commit(&committer, &streams_committed(&entries))?;
            } else if generation >= 0 {
                match groups.get_mut(group_id) {
                    None => return Err(E::IllegalGeneration),
                    Some(g) => {
                        g.validate_commit(generation, member_id, instance_id, Instant::now())?
                    }
                }
            }
        }
        self.offsets
            .txn_commit(group_id, producer, entries, check)
            .await
    }

    /// OffsetDelete: group-level error, or per-partition errors (GROUP_SUBSCRIBED_TO_TOPIC for
    /// topics the active members consume).
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        parts: Vec<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, Option<E>)>, E> {
        valid_group_id(group_id)?;
        let (results, pending) = {
            let groups = self.groups.lock();
            let consumer_topics = self
                .lock_consumers(&groups)
                .get(group_id)
                .map(|c| {
                    if c.is_empty() {
                        Default::default()
                    } else {
                        c.subscribed_topics()
                    }
                })
                .or_else(|| {
                    self.lock_streams(&groups).get(group_id).map(|s| {
                        if s.is_empty() {
                            Default::default()
                        } else {
                            s.topics()
                        }
                    })
                });
            let subscribed = match (consumer_topics, groups.get(group_id)) {
                (Some(topics), _) => topics.into_iter().collect(),
                (None, None) => return Err(E::GroupIdNotFound),
                (None, Some(g)) => match g.state {
                    GroupState::Dead => return Err(E::GroupIdNotFound),
                    GroupState::Empty => Default::default(),
                    _ => match g.subscribed_topics() {
                        Some(t) => t,
                        None => return Err(E::NonEmptyGroup),
                    },
                },
            };
            let mut results = Vec::new();
            let mut deletable = Vec::new();
            for tp in parts {
                if subscribed.contains(&tp.0) {
                    results.push((tp, Some(E::GroupSubscribedToTopic)));
                } else {
                    deletable.push(tp.clone());
                    results.push((tp, None));
                }
            }
            (results, self.offsets.delete_offsets(group_id, &deletable))
        };
        if let Some(rx) = pending {
            crate::coordinator::offsets::written(rx).await?;
        }
        Ok(results)
    }

    /// ListGroups, optionally filtered by state names (case-insensitive).
    pub fn list(&self, states: &[String]) -> Vec<GroupListing> {
        let groups = self.groups.lock();
        let mut out: Vec<GroupListing> = groups
            .values()
            .filter(|g| g.state != GroupState::Dead)
            .filter(|g| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state.name()))
            })
            .map(|g| GroupListing {
                group_id: g.id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                state: g.state.name(),
                group_type: "classic",
            })
            .collect();
        for c in self.lock_consumers(&groups).values() {
            let state = c.state().name();
            if states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state)) {
                out.retain(|l| l.group_id != c.id);
                out.push(GroupListing {
                    group_id: c.id.clone(),
                    protocol_type: "consumer".to_string(),
                    state,
                    group_type: "consumer",
                });
            }
        }
        for s in self.lock_streams(&groups).values() {
            let state = s.state().name();
            if states.is_empty() || states.iter().any(|x| x.eq_ignore_ascii_case(state)) {
                out.retain(|l| l.group_id != s.id);
                out.push(GroupListing {
                    group_id: s.id.clone(),
                    protocol_type: "streams".to_string(),
                    state,
                    group_type: "streams",
                });
            }
        }
        for g in self.lock_shares(&groups).values() {
            let state = g.state().name();
            if states.is_empty() || states.iter().any(|x| x.eq_ignore_ascii_case(state)) {
                out.retain(|l| l.group_id != g.id);
                out.push(GroupListing {
                    group_id: g.id.clone(),
                    protocol_type: "share".to_string(),
                    state,
                    group_type: "share",
                });
            }
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// DescribeGroups of one group (Dead with no members if unknown).
    pub fn describe(&self, group_id: &str) -> GroupDescription {
        let groups = self.groups.lock();
        let Some(g) = groups.get(group_id) else {
            let why = if self.lock_consumers(&groups).contains_key(group_id)
                || self.lock_streams(&groups).contains_key(group_id)
                || self.lock_shares(&groups).contains_key(group_id)
            {
                format!("Group {group_id} is not a classic group.")
            } else {
                format!("Group {group_id} not found.")
            };
            return GroupDescription {
                state: GroupState::Dead,
                protocol_type: String::new(),
                protocol: String::new(),
                members: vec![],
                not_found: Some(why),
            };
        };
        let stable = g.state == GroupState::Stable;
        let protocol = g.protocol_name.clone().unwrap_or_default();
        GroupDescription {
            state: g.state,
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: g
                .members_ordered()
                .into_iter()
                .map(|m| MemberDescription {
                    member_id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable {
                        m.protocols
                            .iter()
                            .find(|(n, _)| *n == protocol)
                            .map(|(_, b)| b.clone())
                            .unwrap_or_default()
                    } else {
                        Bytes::new()
                    },
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
                })
                .collect(),
            not_found: None,
        }
    }

    /// DeleteGroups of one group: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, INVALID_GROUP_ID.
    pub async fn delete_group(&self, group_id: &str) -> Result<(), E> {
        valid_group_id(group_id)?;
        let pending = {
            let mut groups = self.groups.lock();
            let consumer_group = {
                let mut consumers = self.lock_consumers(&groups);
                match consumers.get(group_id) {
                    Some(c) if !c.is_empty() => return Err(E::NonEmptyGroup),
                    Some(_) => {
                        consumers.remove(group_id);
                        true
                    }
                    None => {
                        let mut streams = self.lock_streams(&groups);
                        match streams.get(group_id) {
                            Some(s) if !s.is_empty() => return Err(E::NonEmptyGroup),
                            Some(_) => {
                                streams.remove(group_id);
                                true
                            }
                            None => {
                                let mut shares = self.lock_shares(&groups);
                                match shares.get(group_id) {
                                    Some(g) if !g.is_empty() => return Err(E::NonEmptyGroup),
                                    Some(_) => {
                                        shares.remove(group_id);
                                        true
                                    }
                                    None => false,
                                }
                            }
                        }
                    }
                }
            };
            if consumer_group {
                if let Some(mut g) = groups.remove(group_id) {
                    g.mark_dead();
                }
                self.offsets.delete_group(group_id)
            } else {
                self.delete_classic_group(&mut groups, group_id)?
            }
        };
        if let Some(rx) = pending {
            crate::coordinator::offsets::written(rx).await?;
        }
        tracing::info!(group = group_id, "group deleted");
        Ok(())
    }

    fn delete_classic_group(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
    ) -> Result<Option<crate::coordinator::offsets::WriteResult>, E> {
        match groups.get_mut(group_id) {
            None => return Err(E::GroupIdNotFound),
            Some(g) if g.state == GroupState::Dead => return Err(E::GroupIdNotFound),
            Some(g) if !g.is_empty_state() => return Err(E::NonEmptyGroup),
            Some(g) => g.mark_dead(),
        }
        groups.remove(group_id);
        Ok(self.offsets.delete_group(group_id))
    }

    /// Runs every group's deadlines (call every [`TICK`]); `topics` gives the topics a consumer
    /// group downgraded to a classic group encodes its members' assignments with.
    pub fn tick(&self, topics: &dyn Fn() -> TopicsView) {
        let now = Instant::now();
        let mut groups = self.groups.lock();
        for g in groups.values_mut() {
            g.tick(now);
            self.persist(g);
        }
        let mut downgrade = Vec::new();
        for c in self.lock_consumers(&groups).values_mut() {
            if c.tick(now) && c.all_classic() {
                downgrade.push(c.id.clone());
            }
        }
        for s in self.lock_streams(&groups).values_mut() {
            s.tick(now);
        }
        for g in self.lock_shares(&groups).values_mut() {
            for member in g.expire(now) {
                tracing::info!(group = %g.id, member = %member, "share group member's session expired: it left");
            }
        }
        drop(groups);
        if !downgrade.is_empty() {
            let topics = topics();
            for id in downgrade {
                self.downgrade(&id, &topics);
            }
        }
    }

    /// ConsumerGroupHeartbeat (KIP-848) of `group_id` over the cluster's `topics`. An Empty
    /// classic group of that id (offsets only, pending members at most) becomes a consumer
    /// group; one with members is upgraded to a consumer group that keeps them
    /// ([`ConsumerGroup::from_classic`]). A leave
    /// that leaves only classic members downgrades the group to a classic one.
    ///
    /// Errors: INVALID_GROUP_ID (24), GROUP_ID_NOT_FOUND (69) when a classic group with members
    /// cannot be upgraded (another protocol type than `consumer`, unreadable subscriptions),
    /// NOT_COORDINATOR (16) after shutdown, and the group's ([`ConsumerGroup::heartbeat`]).
    pub fn consumer_heartbeat(
        &self,
        group_id: &str,
        req: Heartbeat,
        topics: &TopicsView,
    ) -> Result<HeartbeatReply, E> {
        valid_group_id(group_id)?;
        let mut groups = self.groups.lock();
        if self.is_stopped() {
            return Err(E::NotCoordinator);
        }
        let mut consumers = self.lock_consumers(&groups);
        if !consumers.contains_key(group_id)
            && self
                .lock_streams(&groups)
                .get(group_id)
                .is_some_and(|s| !s.is_empty())
        {
            return Err(E::GroupIdNotFound);
        }
        if !consumers.contains_key(group_id) {
            if req.member_epoch != 0 {
                return Err(E::UnknownMemberId);
            }
            // An Empty classic group (offsets only, or members whose first JoinGroup got
            // MEMBER_ID_REQUIRED and who have not joined yet) is replaced, as Kafka's
            // `isEmptyClassicGroup` (state Empty): its pending members' JoinGroup with their id
            // joins the consumer group as classic members.
            let c = match groups.get_mut(group_id) {
                Some(g) if g.state != GroupState::Empty => {
                    // KIP-848 online upgrade: the classic group becomes a consumer group.
                    let c = ConsumerGroup::from_classic(
                        g,
                        topics,
                        self.config.consumer.clone(),
                        Instant::now(),
                    )?;
                    g.fail_waiters(E::RebalanceInProgress);
                    self.store_upgraded(g);
                    c
                }
                _ => ConsumerGroup::new(group_id, self.config.consumer.clone()),
            };
            groups.remove(group_id);
            consumers.insert(group_id.to_string(), c);
        }
        drop(groups);
        let c = consumers.get_mut(group_id).expect("inserted");
        let member = req.member_id.clone();
        let epoch = req.member_epoch;
        let r = c.heartbeat(req, topics, Instant::now());
        if let Err(e) = &r {
            tracing::debug!(group = group_id, member = %member, epoch, error = ?e, "ConsumerGroupHeartbeat refused");
        }
        if epoch < 0 && c.all_classic() {
            drop(consumers);
            self.downgrade(group_id, topics);
        }
        r
    }

    /// Stores a classic group that became a consumer group as an empty group of its generation:
    /// after a coordinator restart its members rejoin (consumer group membership is not stored).
    fn store_upgraded(&self, g: &Group) {
        let mut v = g.stored();
        v.members.clear();
        v.protocol = None;
        v.leader = None;
        drop(self.offsets.store_group(&g.id, v));
    }

    /// KIP-848 online downgrade: a consumer group whose members all speak the classic protocol
    /// (the last member of the consumer protocol left or was fenced) becomes a classic group of
    /// those members, which rebalances at once. Lock order: `groups`, then `consumers`.
    fn downgrade(&self, group_id: &str, topics: &TopicsView) {
        let mut groups = self.groups.lock();
        let mut consumers = self.lock_consumers(&groups);
        let Some(c) = consumers.get(group_id).filter(|c| c.all_classic()) else {
            return;
        };
        let Some(value) = c.to_classic(topics) else {
            tracing::warn!(
                group = group_id,
                "cannot downgrade the consumer group: its classic members share no protocol"
            );
            return;
        };
        consumers.remove(group_id);
        let mut g = Group::restore(group_id, self.config.group.clone(), &value);
        tracing::info!(group = group_id, generation = g.generation, members = g.members.len(),
            "consumer group downgraded to a classic group (no member of the consumer protocol left)");
        g.prepare_rebalance(Instant::now());
        g.meta_changed = true;
        self.persist(&mut g);
        groups.insert(group_id.to_string(), g);
    }

    /// StreamsGroupHeartbeat (KIP-1071) of `group_id`; `partitions_of(topic)` is the partition
    /// count of an existing topic. An empty classic or consumer group of that id (offsets only)
    /// becomes a streams group.
    ///
    /// Errors (with Kafka's message): INVALID_GROUP_ID (24), NOT_COORDINATOR (16) after shutdown,
    /// GROUP_ID_NOT_FOUND (69) when a classic or consumer group of that id has members,
    /// UNKNOWN_MEMBER_ID (25) for a heartbeat to an unknown group, and the group's
    /// ([`StreamsGroup::heartbeat`]).
    pub fn streams_heartbeat(
        &self,
        group_id: &str,
        req: streams::Heartbeat,
        partitions_of: &dyn Fn(&str) -> Option<i32>,
    ) -> Result<streams::HeartbeatReply, (E, String)> {
        valid_group_id(group_id).map_err(|e| (e, "GroupId can't be empty.".to_string()))?;
        let mut groups = self.groups.lock();
        if self.is_stopped() {
            return Err((E::NotCoordinator, String::new()));
        }
        let not_streams = || {
            (
                E::GroupIdNotFound,
                format!("Group {group_id} is not a streams group."),
            )
        };
        let mut consumers = self.lock_consumers(&groups);
        if consumers.get(group_id).is_some_and(|c| !c.is_empty()) {
            return Err(not_streams());
        }
        let mut streams = self.lock_streams(&groups);
        let created = !streams.contains_key(group_id);
        if created {
            if groups.get(group_id).is_some_and(|g| !g.is_empty_state()) {
                return Err(not_streams());
            }
            if req.member_epoch != 0 {
                return Err((
                    E::UnknownMemberId,
                    format!("Streams group {group_id} not found."),
                ));
            }
            consumers.remove(group_id);
            drop(consumers);
            streams.insert(
                group_id.to_string(),
                StreamsGroup::new(group_id, self.config.streams.clone()),
            );
            drop(streams);
            groups.remove(group_id);
            streams = self.lock_streams(&groups);
        } else {
            drop(consumers);
        }
        let s = streams.get_mut(group_id).expect("inserted");
        let (member, epoch) = (req.member_id.clone(), req.member_epoch);
        let r = s.heartbeat(req, partitions_of, Instant::now());
        if let Err((e, why)) = &r {
            tracing::debug!(group = group_id, member = %member, epoch, error = ?e, why = %why, "StreamsGroupHeartbeat refused");
            if created && s.is_empty() {
                // A refused first join leaves no group behind (Kafka writes no records for it).
                streams.remove(group_id);
            }
        }
        r
    }

    /// ShareGroupHeartbeat (KIP-932) of `group_id`; `partitions_of(topic)` is an existing
    /// topic's partition count. A group id free of other groups with members becomes a share
    /// group at a member's first join.
    ///
    /// Errors (with Kafka's messages): INVALID_GROUP_ID (24), NOT_COORDINATOR (16) after
    /// shutdown, GROUP_ID_NOT_FOUND (69) for a group of another type or a heartbeat to an
    /// unknown group, and the group's ([`ShareGroup::heartbeat`]).
    pub fn share_heartbeat(
        &self,
        group_id: &str,
        req: share::Heartbeat,
        partitions_of: &dyn Fn(&str) -> Option<i32>,
    ) -> Result<share::HeartbeatReply, (E, String)> {
        valid_group_id(group_id).map_err(|e| (e, "GroupId can't be empty.".to_string()))?;
        let groups = self.groups.lock();
        if self.is_stopped() {
            return Err((E::NotCoordinator, String::new()));
        }
        let not_share = || {
            (
                E::GroupIdNotFound,
                format!("Group {group_id} is not a share group."),
            )
        };
        if groups.get(group_id).is_some_and(|g| !g.is_empty_state())
            || self
                .lock_consumers(&groups)
                .get(group_id)
                .is_some_and(|c| !c.is_empty())
            || self
                .lock_streams(&groups)
                .get(group_id)
                .is_some_and(|s| !s.is_empty())
        {
            return Err(not_share());
        }
        let mut shares = self.lock_shares(&groups);
        let created = !shares.contains_key(group_id);
        if created {
            if req.member_epoch != 0 {
                return Err((
                    E::GroupIdNotFound,
                    format!("Share group {group_id} not found."),
                ));
            }
            shares.insert(
                group_id.to_string(),
                ShareGroup::new(group_id, self.config.share.clone()),
            );
        }
        let g = shares.get_mut(group_id).expect("inserted");
        let r = g.heartbeat(req, partitions_of, Instant::now());
        if r.is_err() && created && g.is_empty() {
            shares.remove(group_id);
        }
        r
    }

    /// A share group as ShareGroupDescribe shows it (a clone of its state).
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) for an unknown group or one of another type.
    pub fn share_describe(&self, group_id: &str) -> Result<ShareGroup, E> {
        let groups = self.groups.lock();
        let found = self.lock_shares(&groups).get(group_id).cloned();
        found.ok_or(E::GroupIdNotFound)
    }

    /// ReadShareGroupState (84) of `group_id`'s share-partition: its stored state, `None` if
    /// it has none yet (the leader then starts it from `share.auto.offset.reset`). A leader of a
    /// newer epoch than the stored one has its epoch recorded first (a record that only raises
    /// the leader epoch, Kafka's `readStateAndMaybeUpdateLeaderEpoch`), and is answered once
    /// that record landed: every earlier write of an older leader has landed by then (so the
    /// answer includes it) and every later one is fenced (found by the simulator, share seed 21:
    /// without it a deposed leader's acknowledgement and the new leader's delivery of the same
    /// record were both answered OK).
    ///
    /// Errors: FENCED_LEADER_EPOCH (74) when a newer leader epoch wrote the state, and the
    /// epoch record's write errors (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).
    pub async fn read_share_state(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
    ) -> Result<Option<ShareStateValue>, E> {
        let rx = {
            let groups = self.groups.lock();
            let _order = self.lock_shares(&groups);
            match self.offsets.share_state(group_id, topic_id, partition) {
                Some(v) if v.leader_epoch > leader_epoch && leader_epoch >= 0 => {
                    return Err(E::FencedLeaderEpoch)
                }
                Some(v) if leader_epoch > v.leader_epoch => {
                    if self.is_stopped() {
                        return Err(E::NotCoordinator);
                    }
                    let raise = ShareStateValue {
                        state_epoch: v.state_epoch,
                        leader_epoch,
                        start_offset: crate::coordinator::offsets::state::LEADER_EPOCH_ONLY,
                        batches: Vec::new(),
                    };
                    self.offsets
                        .store_share_states(group_id, vec![((topic_id, partition), Some(raise))])
                }
                other => return Ok(other),
            }
        };
        crate::coordinator::offsets::written(rx).await?;
        Ok(self.offsets.share_state(group_id, topic_id, partition))
    }

    /// WriteShareGroupState (85) of `group_id`'s share-partition; resolves once the state is in
    /// the offsets log and replicated.
    ///
    /// Errors: FENCED_STATE_EPOCH (124) for a state epoch older than the stored one (the offsets
    /// were altered since), FENCED_LEADER_EPOCH (74) for an older leader epoch, and the write's
    /// (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).
    pub async fn write_share_state(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
        value: ShareStateValue,
    ) -> Result<(), E> {
        let rx = {
            let groups = self.groups.lock();
            if self.is_stopped() {
                return Err(E::NotCoordinator);
            }
            let mut shares = self.lock_shares(&groups);
            let stored = self.offsets.share_state(group_id, topic_id, partition);
            crate::coordinator::offsets::state::check_share_epochs(&value, stored.as_ref())?;
            shares
                .entry(group_id.to_string())
                .or_insert_with(|| ShareGroup::new(group_id, self.config.share.clone()));
            self.offsets
                .store_share_states(group_id, vec![((topic_id, partition), Some(value))])
        };
        crate::coordinator::offsets::written(rx).await
    }

    /// DescribeShareGroupOffsets (90): every stored share-partition state of `group_id`.
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) when `group_id` is not a share group.
    pub fn share_offsets(
        &self,
        group_id: &str,
    ) -> Result<Vec<crate::coordinator::offsets::ShareStateEntry>, E> {
        let groups = self.groups.lock();
        if !self.lock_shares(&groups).contains_key(group_id) {
            return Err(E::GroupIdNotFound);
        }
        Ok(self.offsets.share_states(group_id))
    }

    /// AlterShareGroupOffsets (91): each partition's share-partition starts again at the offset
    /// given, with nothing in flight and the state epoch bumped (a leader still holding the old
    /// state is fenced, FENCED_STATE_EPOCH, and reads the new one). Creates the group if new.
    ///
    /// Errors: NON_EMPTY_GROUP (68) while the group has members, GROUP_ID_NOT_FOUND (69) for a
    /// group of another type, and the write's.
    pub async fn alter_share_offsets(
        &self,
        group_id: &str,
        entries: Vec<((Uuid, i32), i64)>,
    ) -> Result<(), E> {
        valid_group_id(group_id)?;
        let rx = {
            let groups = self.groups.lock();
            if groups.get(group_id).is_some_and(|g| !g.is_empty_state())
                || self.lock_consumers(&groups).contains_key(group_id)
                || self.lock_streams(&groups).contains_key(group_id)
            {
                return Err(E::GroupIdNotFound);
            }
            let mut shares = self.lock_shares(&groups);
            let g = shares
                .entry(group_id.to_string())
                .or_insert_with(|| ShareGroup::new(group_id, self.config.share.clone()));
            if !g.is_empty() {
                return Err(E::NonEmptyGroup);
            }
            let states = entries
                .into_iter()
                .map(|((topic_id, partition), start)| {
                    let old = self.offsets.share_state(group_id, topic_id, partition);
                    let value = ShareStateValue {
                        state_epoch: old.as_ref().map_or(0, |o| o.state_epoch + 1),
                        leader_epoch: old.as_ref().map_or(-1, |o| o.leader_epoch),
                        start_offset: start,
                        batches: Vec::new(),
                    };
                    ((topic_id, partition), Some(value))
                })
                .collect();
            self.offsets.store_share_states(group_id, states)
        };
        crate::coordinator::offsets::written(rx).await
    }

    /// DeleteShareGroupOffsets (92): forgets the share-partition states of `topic_ids` (the
    /// group starts those topics again from `share.auto.offset.reset`).
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) for an unknown or non-share group, NON_EMPTY_GROUP (68)
    /// while it has members, and the write's.
    pub async fn delete_share_offsets(&self, group_id: &str, topic_ids: &[Uuid]) -> Result<(), E> {
        let rx = {
            let groups = self.groups.lock();
            let shares = self.lock_shares(&groups);
            match shares.get(group_id) {
                None => return Err(E::GroupIdNotFound),
                Some(g) if !g.is_empty() => return Err(E::NonEmptyGroup),
                Some(_) => {}
            }
            let gone: Vec<_> = self
                .offsets
                .share_states(group_id)
                .into_iter()
                .filter(|((t, _), _)| topic_ids.contains(t))
                .map(|(k, _)| (k, None))
                .collect();
            if gone.is_empty() {
                return Ok(());
            }
            self.offsets.store_share_states(group_id, gone)
        };
        crate::coordinator::offsets::written(rx).await
    }

    /// Whether `member` belongs to the share group `group_id`.
    pub fn is_share_member(&self, group_id: &str, member: &str) -> bool {
        let groups = self.groups.lock();
        let found = self
            .lock_shares(&groups)
            .get(group_id)
            .is_some_and(|g| g.has_member(member));
        found
    }

    /// A streams group as StreamsGroupDescribe shows it (a clone of its state).
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) for an unknown group or one of another type.
    pub fn streams_describe(&self, group_id: &str) -> Result<StreamsGroup, E> {
        let groups = self.groups.lock();
        self.lock_streams(&groups)
            .get(group_id)
            .cloned()
            .ok_or(E::GroupIdNotFound)
    }

    /// A consumer group as ConsumerGroupDescribe shows it (a clone of its state).
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) for an unknown group or a classic one.
    pub fn consumer_describe(&self, group_id: &str) -> Result<ConsumerGroup, E> {
        let groups = self.groups.lock();
        self.lock_consumers(&groups)
            .get(group_id)
            .cloned()
            .ok_or(E::GroupIdNotFound)
    }

    /// Offsets retention: deletes expired offsets of empty and offsets-only groups, then
    /// removes empty groups that have no offsets left.
    pub fn expire_offsets(&self) {
        let now = now_ms();
        let retention = self.config.offsets_retention_ms;
        let mut groups = self.groups.lock();
        let mut dead = Vec::new();
        for g in groups.values_mut() {
            if g.state != GroupState::Empty {
                continue;
            }
            // Offsets-only groups age from each commit; consumer groups from when they emptied.
            let since = if g.protocol_type.is_some() {
                g.state_since_ms
            } else {
                i64::MIN
            };
            let n = self.offsets.expire(&g.id, since, retention, now);
            if n > 0 {
                tracing::info!(group = %g.id, offsets = n, "expired committed offsets");
            }
            if g.is_empty_state() && !self.offsets.has_offsets(&g.id) {
                dead.push(g.id.clone());
            }
        }
        for id in dead {
            if let Some(mut g) = groups.remove(&id) {
                g.mark_dead();
                drop(self.offsets.delete_group(&id));
                tracing::info!(group = %id, "removed empty group with no offsets");
            }
        }
    }

    /// Answers every parked JoinGroup and SyncGroup (shutdown), so connections can close.
    pub fn shutdown(&self) {
        let mut groups = self.groups.lock();
        self.stopped
            .store(true, std::sync::atomic::Ordering::Release);
        for g in groups.values_mut() {
            g.fail_waiters(E::NotCoordinator);
        }
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }
}
