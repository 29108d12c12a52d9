//! Coordinators: state that spans requests, beyond a single partition's log.
//!
//! - [`producer_ids`]: producer id allocation for InitProducerId (single broker; a cluster's
//!   controller hands out blocks).
//! - [`group`]: the consumer group coordinator (classic protocol).
//! - [`offsets`]: committed offsets, stored in an internal log.
//! - [`registry`]: which group coordinators run here (one per offsets partition led).
//! - [`transaction`]: the transaction coordinator (KIP-98, KIP-890), one per
//!   `__transaction_state` partition led.
//! - [`records`]: the batches coordinators write to their internal logs (`storage::records`).
//! - [`share`]: share-partitions and share sessions (KIP-932), on each partition's leader.

pub mod group;
pub mod offsets;
pub mod producer_ids;
/// The batches coordinators write to their internal logs (moved to [`crate::storage::records`],
/// which the diskless coordinator shares).
pub mod records {
    pub use crate::storage::records::{encode_batch, TxnProducer};
}
pub mod registry;
pub mod share;
pub mod transaction;

/// Whether this broker may act as the leader it believes it is: its heartbeat lease holds
/// (`ClusterNode::holds_lease`). A coordinator whose broker may have been fenced (paused, cut
/// off from the controller for a session) neither appends nor answers a write OK, as the
/// produce handler does not (`storage::leader_append::admit_produce` / `answer_produce`):
/// another broker may lead its partition by now. Given to the group coordinators
/// (`registry::GroupCoordinators::set_lease`; found by the simulator, groups, seed 314) and to
/// the transaction coordinators (`transaction::TransactionCoordinators::set_lease`; a drift
/// from the simulator found in issue 57).
pub type LeaseCheck = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

/// Whether the cluster metadata names this broker the leader of partition `index` of a
/// coordinator's internal topic (`__consumer_offsets` for the group coordinators,
/// `__transaction_state` for the transaction coordinators). Between the metadata naming it and
/// the reconciler loading that partition's coordinator (a replay of its log, one partition
/// after another: tens of ms for 50 new partitions, seconds under a tracer), a request for a
/// key of the partition is answered COORDINATOR_LOAD_IN_PROGRESS (14), as Kafka's coordinator
/// runtime answers a partition in its loading state, not NOT_COORDINATOR (16): librdkafka
/// marks a coordinator that answered NOT_COORDINATOR dead and can churn its connection for
/// tens of seconds before a commit goes through (the packaged broker's sandbox test, CI of
/// 2026-12-06).
pub type LeadsCheck = std::sync::Arc<dyn Fn(i32) -> bool + Send + Sync>;

/// The error for a key whose coordinator partition `index` is not loaded here:
/// COORDINATOR_LOAD_IN_PROGRESS (14) where `leads` says this broker leads it, NOT_COORDINATOR
/// (16) otherwise (and always without a check: a single broker loads its one partition at start).
pub(crate) fn not_loaded(
    leads: Option<&LeadsCheck>,
    index: i32,
) -> kafka_protocol::error::ResponseError {
    use kafka_protocol::error::ResponseError;
    if leads.is_some_and(|leads| leads(index)) {
        ResponseError::CoordinatorLoadInProgress
    } else {
        ResponseError::NotCoordinator
    }
}

/// Whether `lease` holds (always without one: a single broker).
pub(crate) fn lease_holds(lease: &Option<LeaseCheck>) -> bool {
    lease.as_ref().is_none_or(|holds| holds())
}

/// Whether a coordinator's load is committed: the high watermark of the partition it replayed
/// reached the log end offset the replay read to (always on an unreplicated partition). A new
/// leader's unreplicated tail may be lost to the next leader, so a coordinator serves and acts
/// only once this holds (issue 57: the transaction coordinator's seed 743, the group
/// coordinator's seed 271; Kafka's coordinator runtime reads only committed state too).
pub struct CommittedLoad {
    /// The log end offset the load replayed to.
    end: i64,
    /// Set once the high watermark reached `end` (it never goes back for this load).
    reached: std::sync::atomic::AtomicBool,
}

impl CommittedLoad {
    /// A load that replayed its partition to log end offset `end`.
    pub fn new(end: i64) -> CommittedLoad {
        CommittedLoad {
            end,
            reached: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether `log`'s high watermark reached the end this load replayed to.
    pub fn holds(&self, log: &crate::storage::partition::Partition) -> bool {
        use std::sync::atomic::Ordering;
        if self.reached.load(Ordering::Acquire) {
            return true;
        }
        let reached = !log.repl.is_replicated() || log.high_watermark() >= self.end;
        if reached {
            self.reached.store(true, Ordering::Release);
        }
        reached
    }
}

/// Tests' partition state: led by broker 1 in leader epoch 4, with broker 2 in sync (the
/// coordinators' tests of a replicated leader).
#[cfg(test)]
pub(crate) fn led_with_a_follower() -> frieda_meta::PartitionState {
    frieda_meta::PartitionState {
        replicas: vec![1, 2],
        isr: vec![1, 2],
        leader: 1,
        leader_epoch: 4,
        partition_epoch: 1,
        adding: vec![],
        removing: vec![],
        elr: vec![],
        last_known_elr: vec![],
        electing: None,
    }
}
