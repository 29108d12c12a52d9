//! Share groups' records (KIP-932): the share-partitions this broker keeps for the partitions it
//! leads, one per (share group, topic, partition), and the share sessions of the members that
//! fetch from it.
//!
//! - [`partition`]: one share-partition's state machine (start offset, in-flight records,
//!   acquisition locks, delivery counts).
//! - [`session`]: share sessions (ShareFetch/ShareAcknowledge epochs).
//!
//! A share-partition is created at the first ShareFetch of its group on the partition's leader,
//! starting where `share.auto.offset.reset` says (latest by default). Its state is kept in memory
//! only: after a restart or a leader change the share-partition starts again from the log end
//! (`latest`) or start (`earliest`) and acquired records are not remembered. Kafka keeps it in
//! `__share_group_state`; Frieda does not yet (see the README).

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
}

impl Default for ShareConfig {
    fn default() -> Self {
        ShareConfig {
            partition: SharePartitionConfig::default(),
            max_share_sessions: 2000,
            auto_offset_reset: AutoOffsetReset::Latest,
            read_committed: false,
        }
    }
}

/// The key of a share-partition: (group, topic, partition).
pub type ShareKey = (String, String, i32);

/// A share-partition, locked while a fetch reads and acquires or an acknowledgement applies.
pub type SharedPartition = Arc<Mutex<SharePartition>>;

/// This broker's share-partitions and share sessions.
pub struct SharePartitions {
    partitions: Mutex<HashMap<ShareKey, SharedPartition>>,
    /// Share sessions.
    pub sessions: Mutex<ShareSessions>,
    config: ShareConfig,
    /// Woken when records become available again (released, lock expired, acknowledged), so
    /// that waiting ShareFetch requests look again.
    pub changed: tokio::sync::Notify,
}

impl SharePartitions {
    /// No share-partitions yet.
    pub fn new(config: ShareConfig) -> Self {
        SharePartitions {
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessions::new(config.max_share_sessions)),
            config,
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Settings.
    pub fn config(&self) -> &ShareConfig {
        &self.config
    }

    /// The share-partition of `key`, if it exists.
    pub fn get(&self, key: &ShareKey) -> Option<SharedPartition> {
        self.partitions.lock().get(key).cloned()
    }

    /// The share-partition of `key`, created at `start()` if new.
    pub fn get_or_create(&self, key: &ShareKey, start: impl FnOnce() -> i64) -> SharedPartition {
        let mut all = self.partitions.lock();
        all.entry(key.clone())
            .or_insert_with(|| {
                let at = start();
                tracing::info!(group = %key.0, topic = %key.1, partition = key.2, start_offset = at, "share-partition created");
                Arc::new(Mutex::new(SharePartition::new(at, self.config.partition.clone())))
            })
            .clone()
    }

    /// Every share-partition of `group`: (topic, partition, share-partition).
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

    /// Gives back what `member` of `group` holds in `topics` partitions (its session closed).
    pub fn release_member(&self, group: &str, member: &str, partitions: &[(String, i32)]) {
        let mut released = 0;
        for (topic, p) in partitions {
            if let Some(sp) = self.get(&(group.to_string(), topic.clone(), *p)) {
                released += sp.lock().release_member(member);
            }
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
        for (_, _, sp) in self.of_group(group) {
            released += sp.lock().release_member(member);
        }
        if released > 0 {
            self.changed.notify_waiters();
        }
    }

    /// Releases the records whose acquisition lock expired by `now_ms` (call periodically).
    pub fn expire_locks(&self, now_ms: u64) {
        let all: Vec<SharedPartition> = self.partitions.lock().values().cloned().collect();
        let mut released = 0;
        for sp in all {
            let mut p = sp.lock();
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

    /// Drops the share-partitions of a partition this broker no longer leads.
    pub fn forget_partition(&self, topic: &str, partition: i32) {
        self.partitions
            .lock()
            .retain(|k, _| !(k.1 == topic && k.2 == partition));
    }
}
