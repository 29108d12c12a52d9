//! Applies each metadata image to this broker (Kafka's `ReplicaManager.applyDelta` and
//! `BrokerMetadataPublisher`): the image says which partitions this broker hosts and who leads
//! them; the reconciler makes it so.
//!
//! For every partition assigned here: its replica is opened (or created), and it becomes
//! - the **leader** when the image names this broker (and it is not fenced): appends are
//!   stamped with the leader epoch, followers are tracked; for `__consumer_offsets` the group
//!   coordinator of that partition is loaded;
//! - a **follower** of the named leader otherwise: the fetcher for that leader copies its log;
//! - **offline** when the partition has no leader (or this broker leads it but is fenced).
//!
//! Replicas no longer assigned here and topics no longer in the image are removed. The same
//! image applied twice changes nothing, so the reconciler simply re-applies the latest image
//! whenever anything changes (and every second, to retry what failed).

use std::sync::Arc;
use std::time::Duration;

use frieda_meta::{MetadataImage, PartitionState};
use tokio::sync::watch;

use crate::broker::Broker;
use crate::clock::now_ms;
use crate::cluster::fetcher::Fetchers;
use crate::membership::ClusterNode;
use crate::replication::assignment::{self, HostStep, TakesRole};
use crate::replication::{Role, RoleChange};
use crate::storage::partition::Partition;
use crate::storage::topic::{
    Topic, DISKLESS_COORDINATOR_TOPIC, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC,
};
use crate::storage::topic_config::TopicConfigs;

/// Re-applies the image at least this often (retries of replicas that failed to open).
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// Runs until `stop`: applies the latest image whenever it, or this broker's readiness or
/// fencing, changes.
pub async fn run(
    broker: Arc<Broker>,
    node: Arc<ClusterNode>,
    fetchers: Arc<Fetchers>,
    mut stop: watch::Receiver<bool>,
) {
    let mut images = node.quorum.subscribe();
    let mut changes = node.changes();
    let mut cleaned = false;
    loop {
        tokio::select! {
            _ = images.changed() => {}
            _ = changes.changed() => {}
            _ = tokio::time::sleep(RETRY_EVERY) => {}
            _ = stop.changed() => return,
        }
        if !node.is_ready() {
            continue;
        }
        let image = node.image();
        apply(&broker, &node, &fetchers, &image).await;
        node.set_applied(image.offset);
        if !cleaned {
            cleaned = true;
            let (b, img, me) = (broker.clone(), image.clone(), node.me);
            let _ = tokio::task::spawn_blocking(move || b.clean_unclaimed_dirs(&img, me)).await;
        }
    }
}

/// Makes local state match `image` (idempotent).
pub async fn apply(
    broker: &Arc<Broker>,
    node: &Arc<ClusterNode>,
    fetchers: &Arc<Fetchers>,
    image: &MetadataImage,
) {
    // Before anything that can take a while: leaderships the image took away end now, so a
    // deposed leader stops acknowledging at once.
    demote_first(broker, node, image);
    // Dynamic broker configs next: topics opened below take the topic defaults in force.
    broker.apply_dynamic_configs(&image.broker_configs);
    broker.apply_group_configs(&image.group_configs);
    broker.security.apply(
        &image.scram_credentials,
        &image.acls,
        &image.client_quotas,
        &image.delegation_tokens,
    );
    broker
        .features
        .set(crate::features::Finalized::with_changes(
            &image.finalized_features,
            image.features_epoch,
        ));
    // Topics gone from the image, or replaced by a namesake with another id.
    for t in broker.topics() {
        if image.topics.get(&*t.name).map(|ti| ti.id) != Some(t.id) {
            let (b, t) = (broker.clone(), t.clone());
            let _ = tokio::task::spawn_blocking(move || b.remove_topic_locally(&t)).await;
        }
    }
    for (name, ti) in &image.topics {
        let topic = broker.cluster_topic(
            name,
            ti.id,
            TopicConfigs(ti.configs.clone()),
            ti.partitions.len(),
        );
        if &*topic.name == OFFSETS_TOPIC {
            broker
                .groups
                .set_partition_count(ti.partitions.len() as i32);
        } else if &*topic.name == TRANSACTION_STATE_TOPIC {
            broker.txns.set_partition_count(ti.partitions.len() as i32);
        }
        for (i, p) in ti.partitions.iter().enumerate() {
            let index = i as i32;
            let hosted = topic.partition(index);
            let partition = match (assignment::host_step(p, node.me, hosted.is_some()), hosted) {
                (None, _) => continue,
                (Some(HostStep::Remove), _) => {
                    let (b, t) = (broker.clone(), topic.clone());
                    let _ = tokio::task::spawn_blocking(move || b.remove_replica(&t, index)).await;
                    continue;
                }
                (Some(HostStep::TakeRole), Some(p)) => p,
                (Some(_), _) => match open(broker, &topic, index).await {
                    Some(p) => p,
                    None => continue,
                },
            };
            take_role(broker, node, fetchers, &topic, &partition, p).await;
        }
    }
}

/// Every partition this broker leads but `image` gives to another broker or epoch, or no
/// longer assigns here, stops leading before the rest of the image is applied
/// ([`assignment::step_down`], issue 28, item 7): replicas to open, coordinators to load and
/// topics to remove can take seconds, and a leader the image deposed must not acknowledge
/// meanwhile (its followers moved on, so only `acks=1` writes could still land, and they would
/// be truncated).
fn demote_first(broker: &Broker, node: &ClusterNode, image: &MetadataImage) {
    let me = node.me;
    for topic in broker.topics() {
        let current = image
            .topics
            .get(&*topic.name)
            .filter(|ti| ti.id == topic.id);
        for partition in topic.local_partitions() {
            let state = current.and_then(|ti| ti.partitions.get(partition.index as usize));
            let mut hosted = Hosted {
                partition: &partition,
                me,
            };
            if assignment::step_down(&mut hosted, state, me, node.is_fenced()) {
                tracing::info!(topic = %topic.name, partition = partition.index,
                    epoch = partition.repl.leader_epoch(),
                    "no longer the leader: stopped acknowledging");
            }
        }
    }
}

async fn open(broker: &Arc<Broker>, topic: &Arc<Topic>, index: i32) -> Option<Arc<Partition>> {
    let (b, t) = (broker.clone(), topic.clone());
    match tokio::task::spawn_blocking(move || b.open_replica(&t, index)).await {
        Ok(Ok(p)) => Some(p),
        Ok(Err(e)) => {
            tracing::error!(topic = %topic.name, partition = index, error = %format!("{e:#}"),
                "cannot open a replica; retrying");
            None
        }
        Err(e) => {
            tracing::error!(topic = %topic.name, partition = index, error = %e, "opening a replica panicked");
            None
        }
    }
}

/// A hosted replica as [`assignment::take_role`] sees it.
struct Hosted<'a> {
    partition: &'a Partition,
    me: frieda_meta::BrokerId,
}

impl TakesRole for Hosted<'_> {
    fn role(&self) -> Role {
        self.partition.repl.role()
    }

    fn update_leader(&mut self, p: &PartitionState) -> bool {
        let leo = self.partition.reader().log_end_offset();
        self.partition.repl.update_leader(p, leo, now_ms())
    }

    fn become_leader(&mut self, p: &PartitionState) {
        self.partition.become_leader(self.me, p);
    }

    fn become_follower(&mut self, leader: frieda_meta::BrokerId, epoch: i32) {
        self.partition.become_follower(self.me, leader, epoch);
    }
}

/// Gives `partition` the role `p` says it has here.
async fn take_role(
    broker: &Arc<Broker>,
    node: &Arc<ClusterNode>,
    fetchers: &Arc<Fetchers>,
    topic: &Arc<Topic>,
    partition: &Arc<Partition>,
    p: &PartitionState,
) {
    let me = node.me;
    let internal = &*topic.name == OFFSETS_TOPIC;
    let txn_log = &*topic.name == TRANSACTION_STATE_TOPIC;
    let diskless_log = &*topic.name == DISKLESS_COORDINATOR_TOPIC;
    let change = assignment::take_role(&mut Hosted { partition, me }, p, me, node.is_fenced());
    match change {
        RoleChange::BecomeLeader => {
            tracing::info!(topic = %topic.name, partition = partition.index, epoch = p.leader_epoch,
                isr = ?p.isr, log_end_offset = partition.reader().log_end_offset(), "leading");
            // An ISR change its last leadership in this epoch left unanswered, taken back.
            if let Some(change) = partition.repl.pending_isr_change() {
                super::isr::alter(node, partition, change);
            }
        }
        RoleChange::BecomeFollower(leader) => {
            tracing::info!(topic = %topic.name, partition = partition.index, leader, epoch = p.leader_epoch, "following");
        }
        RoleChange::BecomeOffline => {
            tracing::info!(topic = %topic.name, partition = partition.index, epoch = p.leader_epoch, "offline (no leader here)");
            if change.awaits_claims(p) {
                // A quorum partition waits for its replicas' claims: send this one now.
                super::heartbeat::CLAIMS.notify_one();
            }
        }
        RoleChange::UpdateLeader | RoleChange::Keep => {}
    }
    if change.leads() {
        if txn_log && broker.txns.loaded_epoch(partition.index) != Some(p.leader_epoch) {
            let (b, part) = (broker.clone(), partition.clone());
            let (index, epoch) = (partition.index, p.leader_epoch);
            // Load on a blocking thread, inside the runtime (resumed markers are spawned).
            let handle = tokio::runtime::Handle::current();
            match tokio::task::spawn_blocking(move || {
                let _enter = handle.enter();
                b.txns.load(index, epoch, part)
            })
            .await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(partition = index, error = %format!("{e:#}"),
                    "cannot load the transaction coordinator; retrying"),
                Err(e) => {
                    tracing::error!(partition = index, error = %e, "loading the transaction coordinator panicked")
                }
            }
        }
        if diskless_log {
            load_diskless(broker, node, partition, p.leader_epoch).await;
        }
        if internal && !broker.groups.is_loaded(partition.index) {
            let (b, part) = (broker.clone(), partition.clone());
            let index = partition.index;
            match tokio::task::spawn_blocking(move || b.groups.load(index, part)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(partition = index, error = %format!("{e:#}"),
                    "cannot load the group coordinator; retrying"),
                Err(e) => {
                    tracing::error!(partition = index, error = %e, "loading the group coordinator panicked")
                }
            }
        }
        return;
    }
    if internal {
        broker.groups.unload(partition.index);
    }
    if txn_log {
        broker.txns.unload(partition.index);
    }
    if diskless_log {
        if let Some(d) = broker.diskless() {
            d.coordinators.unload(partition.index);
        }
    }
    if let Role::Follower { leader, epoch } = partition.repl.role() {
        fetchers.follow(partition.clone(), leader, epoch);
    }
}

/// Loads the diskless batch coordinator of `partition` (a `__diskless_coordinator` partition
/// this broker leads in `epoch`) unless it is loaded and serving at that epoch: a failed host
/// (a write that did not replicate in time) is loaded again here.
async fn load_diskless(
    broker: &Arc<Broker>,
    node: &Arc<ClusterNode>,
    partition: &Arc<Partition>,
    epoch: i32,
) {
    let Some(diskless) = broker.diskless().cloned() else {
        return;
    };
    let index = partition.index;
    if diskless.coordinators.is_loaded(index, epoch) {
        return;
    }
    let min_isr = partition.produce_policy().min_insync_replicas;
    let weak = Arc::downgrade(node);
    let lease: crate::diskless::driver::coordinator::Lease =
        Arc::new(move || weak.upgrade().is_some_and(|n| n.holds_lease()));
    let (d, part) = (diskless.clone(), partition.clone());
    let loaded = tokio::task::spawn_blocking(move || {
        crate::diskless::driver::coordinator::HostedCoordinator::load(
            index,
            epoch,
            part,
            d.new_coordinator(),
            min_isr,
            Some(lease),
        )
    })
    .await;
    match loaded {
        Ok(Ok(host)) => diskless.coordinators.install(host),
        Ok(Err(e)) => tracing::error!(partition = index, error = %format!("{e:#}"),
            "cannot load the diskless coordinator; retrying"),
        Err(e) => tracing::error!(partition = index, error = %e,
            "loading the diskless coordinator panicked"),
    }
}
