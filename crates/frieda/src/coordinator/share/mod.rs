//! Share groups' records (KIP-932): the share-partitions this broker keeps for the partitions it
//! leads, one per (share group, topic, partition), and the share sessions of the members that
//! fetch from it.
//!
//! - [`partition`]: one share-partition's state machine (start offset, in-flight records,
//!   acquisition locks, delivery counts).
//! - [`session`]: share sessions (ShareFetch/ShareAcknowledge epochs).
//!
//! A share-partition is loaded at the first ShareFetch of its group on the partition's leader:
//! from its durable state, which the share group's coordinator keeps in `__consumer_offsets`
//! (ReadShareGroupState), or, for a new one, where `share.auto.offset.reset` says (latest by
//! default). Every acknowledgement is written there (WriteShareGroupState) before it is
//! answered, so a new leader or a restarted broker continues from it: acknowledged records are
//! never delivered again; records acquired but not acknowledged may be (at-least-once). Kafka
//! keeps this state in `__share_group_state` with a share coordinator; Frieda with the group
//! coordinator.

pub mod partition;
pub mod session;

use parking_lot::Mutex;
use partition::{SharePartition, SharePartitionConfig};
use session::ShareSessions;
use std::collections::HashMap;
use std::sync::Arc;

/// Where a new share-partition starts (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    /// The log start offset.
    Earliest,
    /// The log end offset (Kafka's default).
    Latest,
    /// The first record whose timestamp is at most this many ms old (`by_duration:<ISO-8601>`);
    /// the log end offset if there is none.
    ByDurationMs(i64),
}

/// A share group's settings in force: its group configs over the broker's
/// ([`ShareConfig::for_group`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupShareConfig {
    /// `share.record.lock.duration.ms`, `share.delivery.count.limit`,
    /// `share.partition.max.record.locks`.
    pub partition: SharePartitionConfig,
    /// `share.auto.offset.reset`.
    pub auto_offset_reset: AutoOffsetReset,
    /// `share.isolation.level` is `read_committed`.
    pub read_committed: bool,
    /// `share.renew.acknowledge.enable` (KIP-1222, default true): RENEW acknowledgements are
    /// accepted.
    pub renew_enabled: bool,
    /// `errors.deadletterqueue.topic.name` (KIP-1191), if set.
    pub dlq_topic: Option<String>,
    /// `errors.deadletterqueue.copy.record.enable` (KIP-1191, default false): DLQ records carry
    /// the original key and value.
    pub dlq_copy_record: bool,
    /// `share.session.timeout.ms` in ms.
    pub session_timeout_ms: u64,
    /// `share.heartbeat.interval.ms` in ms.
    pub heartbeat_interval_ms: u64,
}

/// Broker-wide share settings (Kafka's `group.share.*` broker configs).
#[derive(Debug, Clone)]
pub struct ShareConfig {
    /// Per share-partition settings.
    pub partition: SharePartitionConfig,
    /// `group.share.max.share.sessions` (default 2000).
    pub max_share_sessions: usize,
    /// `share.auto.offset.reset` for every group (Kafka sets it per group; default latest).
    pub auto_offset_reset: AutoOffsetReset,
    /// `share.isolation.level` is `read_committed` for every group (default read_uncommitted).
    pub read_committed: bool,
    /// `errors.deadletterqueue.auto.create.topics.enable` (KIP-1191, default false): a missing
    /// dead-letter topic is created (with `errors.deadletterqueue.group.enable=true`).
    pub dlq_auto_create: bool,
    /// `errors.deadletterqueue.topic.name.prefix` (KIP-1191, default `dlq.`): dead-letter topics
    /// must start with it (empty: any name).
    pub dlq_topic_prefix: String,
}

impl Default for ShareConfig {
    fn default() -> Self {
        ShareConfig {
            partition: SharePartitionConfig::default(),
            max_share_sessions: 2000,
            auto_offset_reset: AutoOffsetReset::Latest,
            read_committed: false,
            dlq_auto_create: false,
            dlq_topic_prefix: "dlq.".into(),
        }
    }
}

impl ShareConfig {
    /// The settings of a share group whose effective group config is `group` (its overrides
    /// over the broker's `group.share.*` values; the broker-wide `share.auto.offset.reset` and
    /// `share.isolation.level` of Frieda's config file are the defaults of those two).
    pub fn for_group(
        &self,
        group: &crate::coordinator::group::config::EffectiveGroupConfig<'_>,
    ) -> GroupShareConfig {
        use crate::coordinator::group::config::{parse_auto_offset_reset, AutoOffsetResetValue};
        let auto_offset_reset = match group.overridden("share.auto.offset.reset") {
            Some(v) => match parse_auto_offset_reset(v) {
                Ok(AutoOffsetResetValue::Earliest) => AutoOffsetReset::Earliest,
                Ok(AutoOffsetResetValue::Latest) => AutoOffsetReset::Latest,
                Ok(AutoOffsetResetValue::ByDurationMs(ms)) => AutoOffsetReset::ByDurationMs(ms),
                Err(_) => self.auto_offset_reset,
            },
            None => self.auto_offset_reset,
        };
        let read_committed = match group.overridden("share.isolation.level") {
            Some(v) => v == "read_committed",
            None => self.read_committed,
        };
        let dlq_topic = group
            .raw("errors.deadletterqueue.topic.name")
            .filter(|t| !t.trim().is_empty());
        GroupShareConfig {
            partition: SharePartitionConfig {
                lock_duration_ms: group.number("share.record.lock.duration.ms").max(1) as u64,
                delivery_count_limit: group
                    .number("share.delivery.count.limit")
                    .clamp(1, i64::from(u16::MAX)) as u16,
                max_record_locks: group.number("share.partition.max.record.locks").max(1) as usize,
            },
            auto_offset_reset,
            read_committed,
            renew_enabled: group.boolean("share.renew.acknowledge.enable"),
            dlq_topic,
            dlq_copy_record: group.boolean("errors.deadletterqueue.copy.record.enable"),
            session_timeout_ms: group.number("share.session.timeout.ms").max(1) as u64,
            heartbeat_interval_ms: group.number("share.heartbeat.interval.ms").max(1) as u64,
        }
    }
}

/// The key of a share-partition: (group, topic, partition).
pub type ShareKey = (String, String, i32);

/// A share-partition kept here, with what its durable state is tied to.
pub struct ShareEntry {
    /// The state, locked while a fetch acquires or an acknowledgement applies.
    pub state: Mutex<SharePartition>,
    /// Held across a state write, so the snapshots reach the group coordinator in the order
    /// they were taken; holds the outcome of the last writes: the highest stage generation made
    /// durable and the highest one whose write failed ([`SharePartition::stage_gen`]).
    pub persist: tokio::sync::Mutex<(u64, u64)>,
    /// The topic's id (the durable state's key).
    pub topic_id: uuid::Uuid,
    /// The partition's leader epoch when this share-partition was loaded: a leader change
    /// (or losing and regaining the leadership) loads it again from the durable state.
    pub leader_epoch: i32,
    /// The durable state's epoch (bumped by AlterShareGroupOffsets).
    pub state_epoch: i32,
    /// Log bytes per record seen by the last read of this share-partition's log (0: none yet):
    /// sizes the next read to the records it can acquire.
    pub bytes_per_record: std::sync::atomic::AtomicU32,
    /// Held by a fetch from choosing what to read until it acquired: fetches woken together
    /// (an acknowledgement made room) take turns instead of all reading the same records of
    /// which one wins.
    pub acquiring: tokio::sync::Mutex<()>,
    /// Woken when an acknowledgement of this share-partition was applied (accepted, released
    /// or rejected records: room in the window, or records available again), so that the
    /// ShareFetches waiting on it, and only those, look again. Events of every share-partition
    /// (released sessions, expired locks) wake [`SharePartitions::changed`] instead.
    pub acknowledged: tokio::sync::Notify,
}

/// A share-partition kept here.
pub type SharedPartition = Arc<ShareEntry>;

/// This broker's share-partitions and share sessions.
pub struct SharePartitions {
    partitions: Mutex<HashMap<ShareKey, SharedPartition>>,
    /// Share sessions.
    pub sessions: Mutex<ShareSessions>,
    /// Held while a share-partition is loaded from (or first written to) its durable state, so
    /// two fetches never load the same one twice.
    pub loading: tokio::sync::Mutex<()>,
    config: ShareConfig,
    /// Woken when records of any share-partition may be available again without an
    /// acknowledgement (a session's records released, locks expired, a failed state write), so
    /// that every waiting ShareFetch looks again; an acknowledgement wakes only its own
    /// share-partition's waiters ([`ShareEntry::acknowledged`]).
    pub changed: tokio::sync::Notify,
}

impl SharePartitions {
    /// No share-partitions yet.
    pub fn new(config: ShareConfig) -> Self {
        SharePartitions {
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessions::new(config.max_share_sessions)),
            loading: tokio::sync::Mutex::new(()),
            config,
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Settings.
    pub fn config(&self) -> &ShareConfig {
        &self.config
    }

    /// The share-partition of `key`, if it is kept here for `leader_epoch` (a share-partition
    /// of an older leadership is dropped).
    pub fn get(&self, key: &ShareKey, leader_epoch: i32) -> Option<SharedPartition> {
        let mut all = self.partitions.lock();
        match all.get(key) {
            Some(e) if e.leader_epoch == leader_epoch => Some(e.clone()),
            Some(_) => {
                all.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `state` as the share-partition of `key`, unless another fetch loaded it first
    /// (that one is returned).
    pub fn insert(
        &self,
        key: &ShareKey,
        state: SharePartition,
        topic_id: uuid::Uuid,
        leader_epoch: i32,
        state_epoch: i32,
    ) -> SharedPartition {
        let mut all = self.partitions.lock();
        if let Some(e) = all.get(key).filter(|e| e.leader_epoch == leader_epoch) {
            return e.clone();
        }
        tracing::info!(group = %key.0, topic = %key.1, partition = key.2, leader_epoch, state_epoch,
            start_offset = state.start_offset(), in_flight = state.in_flight(), "share-partition loaded");
        let e = Arc::new(ShareEntry {
            state: Mutex::new(state),
            persist: tokio::sync::Mutex::new((0, 0)),
            topic_id,
            leader_epoch,
            state_epoch,
            bytes_per_record: std::sync::atomic::AtomicU32::new(0),
            acquiring: tokio::sync::Mutex::new(()),
            acknowledged: tokio::sync::Notify::new(),
        });
        all.insert(key.clone(), e.clone());
        e
    }

    /// The share-partition kept for `key`, whatever its leadership (a waiting ShareFetch arms
    /// its [`ShareEntry::acknowledged`]; [`Self::get`] checks the leader epoch).
    pub fn current(&self, key: &ShareKey) -> Option<SharedPartition> {
        self.partitions.lock().get(key).cloned()
    }

    /// Drops the share-partition of `key` (its durable state moved on: it is loaded again).
    pub fn forget(&self, key: &ShareKey) {
        self.partitions.lock().remove(key);
    }

    /// Every share-partition kept here, with its key (for the metrics endpoint).
    pub fn all(&self) -> Vec<(ShareKey, SharedPartition)> {
        self.partitions
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// This group's share-partitions kept here: (topic, partition, share-partition).
    pub fn of_group(&self, group: &str) -> Vec<(String, i32, SharedPartition)> {
        let all = self.partitions.lock();
        let mut out: Vec<_> = all
            .iter()
            .filter(|(k, _)| k.0 == group)
            .map(|(k, p)| (k.1.clone(), k.2, p.clone()))
            .collect();
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        out
    }

    /// Gives back what `member` of `group` holds in `partitions` (its session closed). When
    /// `group` has no share session left here, its share-partitions are dropped: their durable
    /// state has every acknowledgement, and the next fetch loads it again (so offsets altered
    /// meanwhile are seen).
    pub fn release_member(&self, group: &str, member: &str, partitions: &[(String, i32)]) {
        let mut released = 0;
        {
            let all = self.partitions.lock();
            for (topic, p) in partitions {
                if let Some(e) = all.get(&(group.to_string(), topic.clone(), *p)) {
                    released += e.state.lock().release_member(member);
                }
            }
        }
        if !self.sessions.lock().has_group(group) {
            self.partitions.lock().retain(|k, _| k.0 != group);
        }
        if released > 0 {
            tracing::debug!(
                group,
                member,
                released,
                "records released with the share session"
            );
            self.changed.notify_waiters();
        }
    }

    /// Gives back what `member` of `group` holds anywhere here and closes its share session
    /// (it left the group).
    pub fn release_member_everywhere(&self, group: &str, member: &str) {
        self.sessions.lock().close(group, member);
        let mut released = 0;
        for (_, _, e) in self.of_group(group) {
            released += e.state.lock().release_member(member);
        }
        if !self.sessions.lock().has_group(group) {
            self.partitions.lock().retain(|k, _| k.0 != group);
        }
        if released > 0 {
            self.changed.notify_waiters();
        }
    }

    /// A client connection closed: the share sessions it opened close, and their members'
    /// records are released (Kafka's `ShareSessionCache` connection-disconnect listener).
    /// `name_of` gives a topic id's name.
    pub fn connection_closed(
        &self,
        conn: std::net::SocketAddr,
        name_of: &dyn Fn(&uuid::Uuid) -> Option<String>,
    ) {
        let closed = self.sessions.lock().close_connection(conn);
        for (group, member, partitions) in closed {
            tracing::debug!(group = %group, member = %member, %conn, "share session closed with its connection");
            self.release_session_partitions(&group, &member, &partitions, name_of);
        }
    }

    /// Closes `member`'s share session in `group` (a request with epoch -1) and releases what it
    /// holds in the session's partitions. `name_of` gives a topic id's name.
    pub fn close_session(
        &self,
        group: &str,
        member: &str,
        name_of: &dyn Fn(&uuid::Uuid) -> Option<String>,
    ) {
        let partitions = self.sessions.lock().close(group, member);
        self.release_session_partitions(group, member, &partitions, name_of);
    }

    fn release_session_partitions(
        &self,
        group: &str,
        member: &str,
        partitions: &[session::SessionPartition],
        name_of: &dyn Fn(&uuid::Uuid) -> Option<String>,
    ) {
        let named: Vec<(String, i32)> = partitions
            .iter()
            .filter_map(|(id, p)| name_of(id).map(|n| (n, *p)))
            .collect();
        self.release_member(group, member, &named);
    }

    /// Releases the records whose acquisition lock expired by `now_ms` (call periodically).
    pub fn expire_locks(&self, now_ms: u64) {
        let all: Vec<SharedPartition> = self.partitions.lock().values().cloned().collect();
        let mut released = 0;
        for e in all {
            let mut p = e.state.lock();
            if p.next_lock_deadline().is_some_and(|d| d <= now_ms) {
                released += p.expire_locks(now_ms);
            }
        }
        if released > 0 {
            tracing::debug!(
                released,
                "acquisition locks expired: records available again"
            );
            self.changed.notify_waiters();
        }
    }

    /// Drops every share-partition of `group` (the group was deleted).
    pub fn delete_group(&self, group: &str) {
        self.partitions.lock().retain(|k, _| k.0 != group);
    }
}
