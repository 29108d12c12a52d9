//! The group coordinators this broker runs: one per partition of `__consumer_offsets` it leads
//! (Kafka's `GroupCoordinator` sharded by `GroupMetadataManager.partitionFor`). A group belongs
//! to partition `abs(hash(group id)) % partitions`, with Java's `String.hashCode`, so every
//! broker, and Kafka's own tools, agree on which broker coordinates it.
//!
//! On a single broker the offsets log has one partition, always loaded. In a cluster the
//! reconciler loads a partition's coordinator when this broker becomes its leader (replaying
//! the log) and unloads it when leadership moves; requests for a group whose partition is not
//! loaded here get NOT_COORDINATOR (16), so clients look the coordinator up again, unless the
//! metadata already names this broker the partition's leader: COORDINATOR_LOAD_IN_PROGRESS
//! (14) until the load is done ([`super::LeadsCheck`]).

use super::group::consumer::{Committer, TopicsView};
use super::group::state::{JoinRequest, JoinResult, SyncResult};
use super::group::{CoordinatorConfig, GroupCoordinator, GroupDescription, GroupListing, TICK};
use super::offsets::codec::OffsetValue;
use super::offsets::TopicPartition;
use super::share::SharePartitions;
use super::{LeadsCheck, LeaseCheck};
use crate::storage::partition::Partition;
use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Java's `String.hashCode` over the UTF-16 code units.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The offsets partition of a group among `partitions` (Kafka's `Utils.abs(hashCode) % n`;
/// `Utils.abs` maps `i32::MIN` to 0).
pub fn offsets_partition_for(group: &str, partitions: i32) -> i32 {
    let h = java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

/// A transaction marker that landed while its partition's coordinator was loading: (offset,
/// producer id, commit, replicated).
type EarlyMarker = (i64, i64, bool, bool);

/// The coordinators of the offsets partitions this broker leads.
pub struct GroupCoordinators {
    /// Partitions of `__consumer_offsets` (0 until the cluster created it).
    partitions: AtomicI32,
    loaded: RwLock<HashMap<i32, Arc<GroupCoordinator>>>,
    /// Offsets partitions whose coordinator is being loaded, with the transaction markers that
    /// landed on them meanwhile (offset, producer id, commit): a marker appended after the
    /// replay read the log end must still reach the store, or its offset stays a gap that
    /// every later write waits behind. Lock order: `loading`, then `loaded`.
    loading: Mutex<HashMap<i32, Vec<EarlyMarker>>>,
    config: CoordinatorConfig,
    /// The share-partitions and share sessions of the partitions led here (KIP-932).
    pub shares: Arc<SharePartitions>,
    /// This broker's lease, given to every coordinator loaded (a cluster broker's).
    lease: std::sync::OnceLock<LeaseCheck>,
    /// Whether the metadata names this broker the leader of an offsets partition (a cluster
    /// broker's).
    leads: std::sync::OnceLock<LeadsCheck>,
}

impl GroupCoordinators {
    /// A single broker's: one offsets partition, loaded.
    pub fn single(coordinator: GroupCoordinator) -> GroupCoordinators {
        let config = coordinator.config().clone();
        GroupCoordinators {
            partitions: AtomicI32::new(1),
            loaded: RwLock::new(HashMap::from([(0, Arc::new(coordinator))])),
            loading: Mutex::new(HashMap::new()),
            shares: Arc::new(SharePartitions::new(config.share_records.clone())),
            config,
            lease: std::sync::OnceLock::new(),
            leads: std::sync::OnceLock::new(),
        }
    }

    /// A cluster broker's: nothing loaded until it leads offsets partitions.
    pub fn cluster(config: CoordinatorConfig) -> GroupCoordinators {
        GroupCoordinators {
            partitions: AtomicI32::new(0),
            loaded: RwLock::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            shares: Arc::new(SharePartitions::new(config.share_records.clone())),
            config,
            lease: std::sync::OnceLock::new(),
            leads: std::sync::OnceLock::new(),
        }
    }

    /// Every coordinator loaded from now on writes only while `lease` holds (set once, when
    /// the broker joins the cluster, before any load).
    pub fn set_lease(&self, lease: LeaseCheck) {
        if self.lease.set(lease).is_err() {
            tracing::error!("the group coordinators' lease was set twice; keeping the first");
        }
    }

    /// How a request for a partition not loaded here learns whether this broker is about to
    /// load it (set once, when the broker joins the cluster).
    pub fn set_leads(&self, leads: LeadsCheck) {
        if self.leads.set(leads).is_err() {
            tracing::error!(
                "the group coordinators' leadership check was set twice; keeping the first"
            );
        }
    }

    /// Settings.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Partitions of the offsets topic (0 before it exists).
    pub fn partition_count(&self) -> i32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Sets the offsets topic's partition count (from the cluster metadata).
    pub fn set_partition_count(&self, n: i32) {
        self.partitions.store(n, Ordering::Release);
    }

    /// The offsets partition of `group`.
    pub fn partition_for(&self, group: &str) -> i32 {
        offsets_partition_for(group, self.partition_count())
    }

    /// The coordinator of `group` if this broker runs it.
    ///
    /// Errors: COORDINATOR_NOT_AVAILABLE (15) before the offsets topic exists, NOT_COORDINATOR
    /// (16) when another broker leads the group's partition, COORDINATOR_LOAD_IN_PROGRESS (14)
    /// while this broker leads it by the metadata but has not loaded it yet, and until what the
    /// load read is committed ([`OffsetStore::is_committed`]).
    ///
    /// [`OffsetStore::is_committed`]: crate::coordinator::offsets::OffsetStore::is_committed
    pub fn for_group(&self, group: &str) -> Result<Arc<GroupCoordinator>, E> {
        if self.partition_count() == 0 {
            return Err(E::CoordinatorNotAvailable);
        }
        let index = self.partition_for(group);
        let c = self
            .loaded
            .read()
            .get(&index)
            .cloned()
            .ok_or_else(|| super::not_loaded(self.leads.get(), index))?;
        if !c.offsets.is_committed() {
            return Err(E::CoordinatorLoadInProgress);
        }
        Ok(c)
    }

    /// Whether the coordinator of offsets partition `index` runs here.
    pub fn is_loaded(&self, index: i32) -> bool {
        self.loaded.read().contains_key(&index)
    }

    /// Loads the coordinator of offsets partition `index` (this broker became its leader):
    /// replays the partition's log. Blocking (reads the log).
    ///
    /// Errors: the log cannot be read or decoded.
    pub fn load(&self, index: i32, partition: Arc<Partition>) -> anyhow::Result<()> {
        let started = Instant::now();
        self.loading.lock().insert(index, Vec::new());
        let opened = GroupCoordinator::open(partition, self.config.clone()).map(|mut c| {
            if let Some(lease) = self.lease.get() {
                c.offsets.set_lease(lease.clone());
            }
            c
        });
        let mut loading = self.loading.lock();
        let early = loading.remove(&index).unwrap_or_default();
        let c = Arc::new(opened?);
        // Markers appended while the log was replayed: those the replay read are skipped by
        // the store (below its next offset), the others fill their place in the log order.
        for (offset, producer_id, commit, replicated) in early {
            c.offsets
                .land_marker(offset, producer_id, commit, replicated);
        }
        self.loaded.write().insert(index, c);
        drop(loading);
        tracing::info!(
            partition = index,
            ms = started.elapsed().as_millis() as u64,
            "loaded group coordinator"
        );
        Ok(())
    }

    /// Unloads the coordinator of offsets partition `index` (leadership moved): parked
    /// JoinGroup/SyncGroup requests are answered NOT_COORDINATOR.
    pub fn unload(&self, index: i32) {
        if let Some(c) = self.loaded.write().remove(&index) {
            c.shutdown();
            tracing::info!(partition = index, "unloaded group coordinator");
        }
    }

    /// Every loaded coordinator.
    pub fn all(&self) -> Vec<Arc<GroupCoordinator>> {
        self.loaded.read().values().cloned().collect()
    }

    /// The loaded coordinators whose load is committed ([`Self::for_group`]): the ones that
    /// list groups and run timers and retention (which write).
    pub fn serving(&self) -> Vec<Arc<GroupCoordinator>> {
        self.loaded
            .read()
            .values()
            .filter(|c| c.offsets.is_committed())
            .cloned()
            .collect()
    }

    /// JoinGroup (see [`GroupCoordinator::join`]).
    pub async fn join(&self, group: &str, req: JoinRequest, topics: &TopicsView) -> JoinResult {
        match self.for_group(group) {
            Ok(c) => c.join(group, req, topics).await,
            Err(e) => JoinResult::error(&req.member_id, e),
        }
    }

    /// SyncGroup (see [`GroupCoordinator::sync`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        topics: &TopicsView,
    ) -> SyncResult {
        match self.for_group(group) {
            Ok(c) => {
                c.sync(
                    group,
                    generation,
                    member_id,
                    instance_id,
                    protocol_type,
                    protocol_name,
                    assignments,
                    topics,
                )
                .await
            }
            Err(e) => SyncResult::error(e),
        }
    }

    /// Heartbeat (see [`GroupCoordinator::heartbeat`]).
    pub fn heartbeat(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Option<E> {
        match self.for_group(group) {
            Ok(c) => c.heartbeat(group, generation, member_id, instance_id),
            Err(e) => Some(e),
        }
    }

    /// LeaveGroup (see [`GroupCoordinator::leave`]).
    pub fn leave(
        &self,
        group: &str,
        members: &[(String, Option<String>)],
    ) -> (Option<E>, Vec<Option<E>>) {
        match self.for_group(group) {
            Ok(c) => c.leave(group, members),
            Err(e) => (Some(e), vec![None; members.len()]),
        }
    }

    /// OffsetCommit (see [`GroupCoordinator::commit`]).
    pub async fn commit(
        &self,
        group: &str,
        committer: Committer<'_>,
        entries: Vec<(TopicPartition, OffsetValue)>,
        topic_ids: &(dyn Fn(&str) -> Option<uuid::Uuid> + Sync),
    ) -> Result<(), E> {
        self.for_group(group)?
            .commit(group, committer, entries, topic_ids)
            .await
    }

    /// TxnOffsetCommit (see [`GroupCoordinator::txn_commit`]).
    pub async fn txn_commit(
        &self,
        group: &str,
        producer: crate::coordinator::records::TxnProducer,
        committer: Committer<'_>,
        entries: Vec<(TopicPartition, OffsetValue)>,
        topic_ids: &(dyn Fn(&str) -> Option<uuid::Uuid> + Sync),
        check: crate::storage::partition::ProducerCheck,
    ) -> Result<(), E> {
        self.for_group(group)?
            .txn_commit(group, producer, committer, entries, topic_ids, check)
            .await
    }

    /// A transaction marker landed at `offset` of offsets partition `index`, `replicated` or
    /// not (see [`crate::coordinator::offsets::OffsetStore::land_marker`]); nothing if its
    /// coordinator does not run here (the one that loads it replays the marker).
    pub fn land_marker(
        &self,
        index: i32,
        offset: i64,
        producer_id: i64,
        commit: bool,
        replicated: bool,
    ) {
        let mut loading = self.loading.lock();
        if let Some(c) = self.loaded.read().get(&index) {
            c.offsets
                .land_marker(offset, producer_id, commit, replicated);
        } else if let Some(early) = loading.get_mut(&index) {
            early.push((offset, producer_id, commit, replicated));
        }
    }

    /// Whether `group`'s committed offset of a partition waits for a transaction (OffsetFetch
    /// `require_stable`); false when the group is not coordinated here.
    pub fn has_pending_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.for_group(group)
            .is_ok_and(|c| c.offsets.has_pending(group, topic, partition))
    }

    /// OffsetDelete (see [`GroupCoordinator::delete_offsets`]).
    pub async fn delete_offsets(
        &self,
        group: &str,
        parts: Vec<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, Option<E>)>, E> {
        self.for_group(group)?.delete_offsets(group, parts).await
    }

    /// DeleteGroups of one group (see [`GroupCoordinator::delete_group`]).
    pub async fn delete_group(&self, group: &str) -> Result<(), E> {
        self.for_group(group)?.delete_group(group).await
    }

    /// DescribeGroups of one group.
    ///
    /// Errors: as [`for_group`](Self::for_group).
    pub fn describe(&self, group: &str) -> Result<GroupDescription, E> {
        Ok(self.for_group(group)?.describe(group))
    }

    /// ListGroups: the groups of every coordinator here (clients ask every broker).
    pub fn list(&self, states: &[String]) -> Vec<GroupListing> {
        let mut out: Vec<GroupListing> =
            self.serving().iter().flat_map(|c| c.list(states)).collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// Answers every parked request of every coordinator (shutdown).
    pub fn shutdown(&self) {
        for c in self.all() {
            c.shutdown();
        }
    }

    /// Periodic work until `stop`: group timers every [`TICK`], offsets retention every
    /// `offsets.retention.check.interval.ms`, for whichever coordinators are loaded. `topics`
    /// lists the topics consumer groups can subscribe to (see [`GroupCoordinator::tick`]).
    pub async fn run(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        topics: Box<dyn Fn() -> TopicsView + Send + Sync>,
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let retention_every =
            Duration::from_millis(self.config.offsets_retention_check_interval_ms.max(100));
        let mut last_retention = Instant::now();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => {
                    self.shutdown();
                    return;
                }
            }
            let all = self.serving();
            for c in &all {
                c.tick(&*topics);
            }
            self.shares.expire_locks(crate::clock::now_ms() as u64);
            if last_retention.elapsed() >= retention_every {
                last_retention = Instant::now();
                for c in &all {
                    c.expire_offsets();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_led_here_but_not_loaded_is_loading_not_another_brokers() {
        let groups = GroupCoordinators::cluster(CoordinatorConfig::default());
        assert_eq!(
            groups.for_group("g").err(),
            Some(E::CoordinatorNotAvailable),
            "no offsets topic yet"
        );
        groups.set_partition_count(50);
        // without a leadership check (before the broker joined): another broker's
        assert_eq!(groups.for_group("g").err(), Some(E::NotCoordinator));
        let mine = offsets_partition_for("g", 50);
        groups.set_leads(Arc::new(move |index| index == mine));
        assert_eq!(
            groups.for_group("g").err(),
            Some(E::CoordinatorLoadInProgress),
            "the metadata names this broker: loading"
        );
        let other = (0..)
            .map(|i| format!("g{i}"))
            .find(|g| offsets_partition_for(g, 50) != mine)
            .unwrap();
        assert_eq!(groups.for_group(&other).err(), Some(E::NotCoordinator));
    }

    #[test]
    fn groups_map_to_partitions_as_in_kafka() {
        // Values of Java's "...".hashCode().
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("my-group"), -1_906_497_762);
        assert_eq!(offsets_partition_for("my-group", 50), 1_906_497_762 % 50);
        assert_eq!(offsets_partition_for("hello", 50), 99_162_322 % 50);
        assert!((0..50).contains(&offsets_partition_for("zzzzzzzzzzzzzzzz", 50)));
        assert_eq!(offsets_partition_for("anything", 1), 0);
    }
}
