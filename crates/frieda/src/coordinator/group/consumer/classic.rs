//! Classic-protocol members of a KIP-848 consumer group: the online upgrade and downgrade path
//! (KIP-848 "Upgrade/downgrade", Kafka 4.3's `group.consumer.migration.policy=bidirectional`,
//! its default).
//!
//! - A consumer that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
//!   joins a non-empty consumer group as a member like any other: its subscription and owned
//!   partitions come from the embedded consumer protocol (`ConsumerProtocolSubscription`), the
//!   server-side assignor assigns it, JoinGroup answers at once with its member epoch as the
//!   generation and no leader, SyncGroup answers its assignment (`ConsumerProtocolAssignment`),
//!   and a Heartbeat answers REBALANCE_IN_PROGRESS whenever it has to rejoin to move towards
//!   its target (Kafka's `classicGroupJoinToConsumerGroup`, `classicGroupSyncToConsumerGroup`,
//!   `classicGroupHeartbeatToConsumerGroup`, `classicGroupLeaveToConsumerGroup`).
//! - Upgrade: the first ConsumerGroupHeartbeat to a classic group of the `consumer` protocol type
//!   turns it into a consumer group whose members are the classic ones, at their generation with
//!   their last assignment ([`ConsumerGroup::from_classic`], Kafka's `ConsumerGroup.fromClassicGroup`).
//! - Downgrade: when the last member of the consumer protocol leaves and classic members remain,
//!   the group becomes a classic group again and rebalances ([`ConsumerGroup::to_classic`],
//!   Kafka's `ClassicGroup.fromConsumerGroup`).

use super::{ConsumerGroup, ConsumerGroupConfig, Member, MemberState, TopicsView};
use crate::coordinator::group::embedded::{
    decode_assignment, decode_subscription, embedded_version, encode_assignment, owned_partitions,
};
use crate::coordinator::group::state::{Group, JoinRequest};
use crate::coordinator::offsets::codec::{GroupValue, MemberValue};
use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The protocol type every classic member of a consumer group must use.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// What a consumer group keeps of a classic member (Kafka's `ClassicMemberMetadata`).
#[derive(Debug, Clone)]
pub struct ClassicMember {
    /// `session.timeout.ms` of its JoinGroup.
    pub session_timeout: Duration,
    /// Its protocols (assignor names) with their metadata, preferred first.
    pub protocols: Vec<(String, Bytes)>,
    /// It must send JoinGroup (after REBALANCE_IN_PROGRESS) or SyncGroup (after JoinGroup) by
    /// then (its rebalance timeout), or it is removed; with the reason logged.
    deadline: Option<(Instant, &'static str)>,
}

impl ClassicMember {
    /// The reason it is removed at `now`, if its join or sync deadline passed.
    pub fn expired(&self, now: Instant) -> Option<&'static str> {
        self.deadline.filter(|(d, _)| *d <= now).map(|(_, why)| why)
    }

    /// The protocol it prefers: the one its JoinGroup and SyncGroup answers name.
    pub fn protocol_name(&self) -> &str {
        self.protocols
            .first()
            .map(|(n, _)| n.as_str())
            .unwrap_or("")
    }
}

/// The answer to a JoinGroup of a classic member ([`ConsumerGroup::classic_join`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicJoined {
    /// Member id.
    pub member_id: String,
    /// Generation: the member's epoch.
    pub generation: i32,
    /// The member's preferred protocol.
    pub protocol_name: String,
}

impl ConsumerGroup {
    fn classic_members(&self) -> impl Iterator<Item = (&Member, &ClassicMember)> {
        self.members
            .values()
            .filter_map(|m| m.classic.as_ref().map(|c| (m, c)))
    }

    /// Whether it has members and every one speaks the classic protocol (it then turns back
    /// into a classic group).
    pub fn all_classic(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(Member::uses_classic_protocol)
    }

    /// Kafka's `supportsClassicProtocols`: the `consumer` protocol type, and one of `protocols`
    /// that every classic member supports.
    fn supports_classic_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
        if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
            return false;
        }
        protocols.iter().any(|(name, _)| {
            self.classic_members()
                .all(|(_, c)| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// The member `member_id` (or the static member `instance_id`) as a classic request names
    /// it (Kafka's `validateConsumerGroupMember` and `throwIfMemberDoesNotUseClassicProtocol`).
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25) for an unknown member or one of the consumer protocol,
    /// FENCED_INSTANCE_ID (82) when the instance id belongs to another member id.
    fn classic_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<&Member, E> {
        let m = match instance_id {
            None => self.members.get(member_id).ok_or(E::UnknownMemberId)?,
            Some(i) => {
                let m = self
                    .members
                    .values()
                    .find(|m| m.instance_id.as_deref() == Some(i))
                    .ok_or(E::UnknownMemberId)?;
                if !member_id.is_empty() && m.id != member_id {
                    return Err(E::FencedInstanceId);
                }
                m
            }
        };
        if !m.uses_classic_protocol() {
            return Err(E::UnknownMemberId);
        }
        Ok(m)
    }

    /// JoinGroup of a classic member to this (non-empty) consumer group. Answers at once: the
    /// member is added or updated, the target assignment recomputed if the group epoch moved,
    /// and the member reconciled with the partitions its subscription says it owns.
    ///
    /// Errors (with the member id to answer): INCONSISTENT_GROUP_PROTOCOL (23) for another
    /// protocol type, protocols no classic member shares, or unreadable metadata;
    /// MEMBER_ID_REQUIRED (79) for a new dynamic member of v4+; GROUP_MAX_SIZE_REACHED (81);
    /// FENCED_INSTANCE_ID (82) when a static member's instance id has another member id.
    pub fn classic_join(
        &mut self,
        req: &JoinRequest,
        topics: &TopicsView,
        now: Instant,
    ) -> Result<ClassicJoined, (E, String)> {
        let unknown = req.member_id.is_empty();
        let rebalance_timeout_ms = req.rebalance_timeout.as_millis().min(i32::MAX as u128) as i32;
        let member_id = if unknown {
            Uuid::new_v4().to_string()
        } else {
            req.member_id.clone()
        };
        let fail = |e: E| Err((e, member_id.clone()));
        let exists = self.members.contains_key(&member_id)
            || req.instance_id.as_ref().is_some_and(|i| {
                self.members
                    .values()
                    .any(|m| m.instance_id.as_ref() == Some(i))
            });
        if !exists && self.members.len() >= self.config.max_size {
            return fail(E::GroupMaxSizeReached);
        }
        if !self.supports_classic_protocols(&req.protocol_type, &req.protocols) {
            return fail(E::InconsistentGroupProtocol);
        }
        if req.require_known_member_id && unknown && req.instance_id.is_none() {
            return fail(E::MemberIdRequired);
        }
        let sub = match decode_subscription(&req.protocols[0].1) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let owned = owned_partitions(&sub, topics);
        let epoch_before = self.epoch;
        // Get or create the member (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember
        // with the classic protocol).
        let static_holder = req.instance_id.as_ref().and_then(|i| {
            self.members
                .values()
                .find(|m| m.instance_id.as_ref() == Some(i))
                .map(|m| m.id.clone())
        });
        match static_holder {
            Some(old) if old != member_id => {
                if !unknown {
                    return fail(E::FencedInstanceId);
                }
                // A new incarnation of the static member takes its place and its target.
                let prev = self.members.remove(&old).expect("member");
                let target = self.target.remove(&old).unwrap_or_default();
                let mut m = prev.clone();
                m.id = member_id.clone();
                m.epoch = 0;
                m.previous_epoch = 0;
                m.assigned.clear();
                m.revoking.clear();
                m.stamp_assignment_epochs(0);
                m.state = MemberState::Stable;
                m.revocation_deadline = None;
                self.target.insert(member_id.clone(), target);
                self.members.insert(member_id.clone(), m);
                tracing::info!(group = %self.id, member = %member_id, replaced = %old,
                    "static member rejoined the consumer group with the classic protocol");
            }
            _ if !self.members.contains_key(&member_id) => {
                let m = Member::new(
                    &member_id,
                    &req.client_id,
                    &req.client_host,
                    rebalance_timeout_ms,
                    now + req.session_timeout,
                );
                self.members.insert(member_id.clone(), m);
                self.epoch += 1;
                tracing::info!(group = %self.id, member = %member_id, "member joined the consumer group with the classic protocol");
            }
            _ => {}
        }
        {
            let m = self.members.get_mut(&member_id).expect("member");
            let names = super::sorted_names(sub.topics.iter().map(|t| t.to_string()));
            if names != m.topic_names || m.topic_regex.is_some() {
                m.topic_names = names;
                m.topic_regex = None;
                m.regex = None;
                self.epoch = self.epoch.max(epoch_before + 1);
            }
            m.instance_id = req.instance_id.clone();
            if let Some(rack) = &sub.rack_id {
                m.rack_id = Some(rack.to_string());
            }
            m.rebalance_timeout_ms = rebalance_timeout_ms;
            m.client_id = req.client_id.clone();
            m.client_host = req.client_host.clone();
            m.session_deadline = now + req.session_timeout;
            m.classic = Some(ClassicMember {
                session_timeout: req.session_timeout,
                protocols: req.protocols.clone(),
                deadline: Some((
                    now + Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
                    "did not send SyncGroup within its rebalance timeout",
                )),
            });
        }
        self.refresh(topics, epoch_before);
        self.reconcile(&member_id, Some(&owned), now);
        let m = &self.members[&member_id];
        Ok(ClassicJoined {
            member_id: member_id.clone(),
            generation: m.epoch,
            protocol_name: m
                .classic
                .as_ref()
                .expect("classic")
                .protocol_name()
                .to_string(),
        })
    }

    /// SyncGroup of a classic member: its current assignment as `ConsumerProtocolAssignment`,
    /// in the version of its subscription; returns (assignment, protocol name).
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82), ILLEGAL_GENERATION (22) when the
    /// generation is not its epoch, INCONSISTENT_GROUP_PROTOCOL (23) for another protocol type or
    /// name, REBALANCE_IN_PROGRESS (27) when the group epoch moved past it (it must rejoin).
    #[allow(clippy::too_many_arguments)]
    pub fn classic_sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        topics: &TopicsView,
        now: Instant,
    ) -> Result<(Bytes, String), E> {
        let m = self.classic_member(member_id, instance_id)?;
        if generation != m.epoch {
            return Err(E::IllegalGeneration);
        }
        let c = m.classic.as_ref().expect("classic");
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|n| n != c.protocol_name())
        {
            return Err(E::InconsistentGroupProtocol);
        }
        let id = m.id.clone();
        let rejoin = self.epoch > m.epoch && m.state != MemberState::UnrevokedPartitions;
        let m = self.members.get_mut(&id).expect("member");
        let c = m.classic.as_mut().expect("classic");
        m.session_deadline = now + c.session_timeout;
        if rejoin {
            c.deadline.get_or_insert((
                now + Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
                "did not rejoin within its rebalance timeout",
            ));
            return Err(E::RebalanceInProgress);
        }
        c.deadline = None;
        let version = embedded_version(&c.protocols[0].1);
        let name = c.protocol_name().to_string();
        Ok((encode_assignment(&m.assigned, topics, version), name))
    }

    /// Heartbeat of a classic member: REBALANCE_IN_PROGRESS (27) when it must rejoin (the group
    /// epoch is past its epoch, it has partitions to revoke, or the partitions it waits for are
    /// free now); `None` otherwise.
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82), ILLEGAL_GENERATION (22).
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: Instant,
    ) -> Option<E> {
        let m = match self.classic_member(member_id, instance_id) {
            Ok(m) => m,
            Err(e) => return Some(e),
        };
        if generation != m.epoch {
            return Some(E::IllegalGeneration);
        }
        let id = m.id.clone();
        let rejoin = m.epoch < self.epoch
            || m.state == MemberState::UnrevokedPartitions
            || (m.state == MemberState::UnreleasedPartitions && !self.waiting_on_unreleased(m));
        let m = self.members.get_mut(&id).expect("member");
        let c = m.classic.as_mut().expect("classic");
        m.session_deadline = now + c.session_timeout;
        if !rejoin {
            return None;
        }
        c.deadline.get_or_insert((
            now + Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
            "did not rejoin within its rebalance timeout",
        ));
        Some(E::RebalanceInProgress)
    }

    /// Kafka's `waitingOnUnreleasedPartition`: some partition of its target that it does not
    /// have is still held by another member.
    fn waiting_on_unreleased(&self, m: &Member) -> bool {
        let wanted = super::minus(&self.target_of(&m.id), &m.assigned);
        super::intersects(&wanted, &self.held_by_others(&m.id))
    }

    /// LeaveGroup of one classic member (by member id, or by instance id with an empty or
    /// matching member id).
    ///
    /// Errors: UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82).
    pub fn classic_leave(&mut self, member_id: &str, instance_id: Option<&str>) -> Option<E> {
        let id = match self.classic_member(member_id, instance_id) {
            Ok(m) => m.id.clone(),
            Err(e) => return Some(e),
        };
        self.remove(&id, "left the group (LeaveGroup)");
        None
    }

    /// The consumer group a classic group of the `consumer` protocol type becomes when a
    /// member of the consumer protocol joins it: group and assignment epochs at its generation,
    /// every member Stable at that epoch with the partitions of its last assignment as its
    /// current and target assignment (Kafka's `ConsumerGroup.fromClassicGroup`).
    ///
    /// Errors: GROUP_ID_NOT_FOUND (69) when the group is not of the consumer protocol type or a
    /// member's subscription cannot be read (Kafka: "Cannot upgrade the classic group ...").
    pub fn from_classic(
        g: &Group,
        topics: &TopicsView,
        config: ConsumerGroupConfig,
        now: Instant,
    ) -> Result<ConsumerGroup, E> {
        if g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return Err(E::GroupIdNotFound);
        }
        if g.members.len() > config.max_size {
            return Err(E::GroupIdNotFound);
        }
        let mut c = ConsumerGroup::new(&g.id, config);
        c.epoch = g.generation;
        c.assignment_epoch = g.generation;
        for gm in g.members_ordered() {
            let meta = g
                .protocol_name
                .as_deref()
                .map(|p| gm.metadata(p))
                .filter(|b| !b.is_empty())
                .or_else(|| gm.protocols.first().map(|(_, b)| b.clone()))
                .unwrap_or_default();
            let sub = decode_subscription(&meta).map_err(|_| E::GroupIdNotFound)?;
            let assigned = decode_assignment(&gm.assignment, topics);
            let mut m = Member::new(
                &gm.id,
                &gm.client_id,
                &gm.client_host,
                gm.rebalance_timeout.as_millis().min(i32::MAX as u128) as i32,
                now + gm.session_timeout,
            );
            m.instance_id = gm.instance_id.clone();
            m.rack_id = sub.rack_id.as_ref().map(|r| r.to_string());
            m.epoch = g.generation;
            m.previous_epoch = g.generation;
            let names = super::sorted_names(sub.topics.iter().map(|t| t.to_string()));
            m.topic_names = names;
            m.assigned = assigned.clone();
            m.stamp_assignment_epochs(g.generation);
            m.classic = Some(ClassicMember {
                session_timeout: gm.session_timeout,
                protocols: gm.protocols.clone(),
                deadline: None,
            });
            c.target.insert(gm.id.clone(), assigned);
            c.members.insert(gm.id.clone(), m);
        }
        c.subscribed = c.subscribed_in(topics);
        tracing::info!(group = %g.id, generation = g.generation, members = c.members.len(),
            "classic group upgraded to a consumer group (a member of the consumer protocol joined)");
        Ok(c)
    }

    /// What the classic group this one turns back into starts from (all members classic):
    /// generation = group epoch, the first protocol of the oldest member that every member
    /// supports, each member with its metadata for it and its current assignment encoded
    /// (Kafka's `ClassicGroup.fromConsumerGroup`). `None` if no protocol is common.
    pub fn to_classic(&self, topics: &TopicsView) -> Option<GroupValue> {
        let first = self.classic_members().next()?.1;
        let protocol = first.protocols.iter().map(|(n, _)| n.clone()).find(|n| {
            self.classic_members()
                .all(|(_, c)| c.protocols.iter().any(|(p, _)| p == n))
        })?;
        let members = self
            .classic_members()
            .map(|(m, c)| {
                let meta = c
                    .protocols
                    .iter()
                    .find(|(n, _)| *n == protocol)
                    .map(|(_, b)| b.clone())
                    .unwrap_or_default();
                MemberValue {
                    member_id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: c.session_timeout.as_millis().min(i32::MAX as u128) as i32,
                    assignment: encode_assignment(&m.assigned, topics, embedded_version(&meta)),
                    subscription: meta,
                }
            })
            .collect::<Vec<_>>();
        Some(GroupValue {
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            generation: self.epoch,
            protocol: Some(protocol),
            leader: members.first().map(|m| m.member_id.clone()),
            state_timestamp: crate::clock::now_ms(),
            members,
        })
    }
}

#[cfg(test)]
#[path = "classic_tests.rs"]
mod tests;
