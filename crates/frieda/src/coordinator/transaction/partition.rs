//! One `__transaction_state` partition this broker leads: the state of the transactional ids
//! that hash to it, replayed from the partition at load and written through it (acks=all)
//! before every change is applied (Kafka's `TransactionStateManager` for one partition).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use parking_lot::Mutex;

use super::log;
use super::metadata::{TxnMetadata, TxnState, TxnTransit};
use crate::clock::now_ms;
use crate::coordinator::records::encode_batch;
use crate::coordinator::{lease_holds, LeaseCheck};
use crate::storage::leader_append::{admit_produce, answer_produce};
use crate::storage::partition::Partition;
use crate::storage::records::replay;

/// How long a write to `__transaction_state` waits for its in-sync replicas (Kafka's
/// `transaction.state.log` appends use the request timeout; 5 s here).
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(5);

/// A loaded `__transaction_state` partition.
pub struct TxnPartition {
    /// Partition index.
    pub index: i32,
    /// The coordinator epoch: the partition's leader epoch when this broker loaded it
    /// (markers carry it; a deposed coordinator's markers are refused).
    pub coordinator_epoch: i32,
    log: Arc<Partition>,
    /// `transaction.state.log.min.isr`: the writes need this many in-sync replicas.
    min_isr: usize,
    /// This broker's lease (a cluster broker): writes are taken and answered only while it
    /// holds, as the produce handler's (`storage::leader_append::admit_produce`).
    lease: Option<LeaseCheck>,
    /// The transactional ids of this partition.
    pub(super) txns: Mutex<HashMap<String, TxnMetadata>>,
    active: AtomicBool,
    /// The end the load replayed to: the state may hold records not yet replicated (a new
    /// leader's tail), so nothing is served or acted on until the high watermark reaches it
    /// (see [`is_committed`](Self::is_committed)).
    loaded: crate::coordinator::CommittedLoad,
}

impl TxnPartition {
    /// Replays `log` (the partition `index`, led here since `coordinator_epoch`): the latest
    /// value of each id wins, a tombstone removes it. Its writes will go through `lease` (a
    /// cluster broker's; `None`: a single broker). Blocking (reads the log).
    ///
    /// Errors: the log cannot be read or a batch does not decode.
    pub fn load(
        index: i32,
        coordinator_epoch: i32,
        log: Arc<Partition>,
        min_isr: usize,
        lease: Option<LeaseCheck>,
    ) -> anyhow::Result<TxnPartition> {
        let mut txns: HashMap<String, TxnMetadata> = HashMap::new();
        let mut skipped = 0u64;
        let end = replay(&log, &format!("__transaction_state-{index}"), |r| {
            let Some(id) = r.key.as_deref().and_then(log::decode_key) else {
                skipped += 1;
                return Ok(());
            };
            let value = match r.value.as_deref() {
                None => None,
                Some(v) => match log::decode_value(v) {
                    Some(t) => Some(t),
                    None => {
                        skipped += 1;
                        return Ok(());
                    }
                },
            };
            match replayed(&id, value.as_ref()) {
                Some(m) => txns.insert(id, m),
                None => txns.remove(&id),
            };
            Ok(())
        })?;
        tracing::info!(
            partition = index,
            coordinator_epoch,
            transactional_ids = txns.len(),
            skipped,
            "transaction log replayed"
        );
        Ok(TxnPartition {
            index,
            coordinator_epoch,
            log,
            min_isr: min_isr.max(1),
            lease,
            txns: Mutex::new(txns),
            active: AtomicBool::new(true),
            loaded: crate::coordinator::CommittedLoad::new(end),
        })
    }

    /// Whether this broker still coordinates the partition (not unloaded).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Whether the state loaded is all committed: the partition's high watermark reached the
    /// log end offset the load replayed to. Until then requests are answered
    /// COORDINATOR_LOAD_IN_PROGRESS (14) and the markers of prepared transactions wait: a new
    /// leader's unreplicated tail may still be lost to the next leader, and markers written
    /// from a PrepareCommit there committed a transaction that the next coordinator, without
    /// it, aborted (issue 57, frieda-sim seed 743: `txn-marker-contradicts-decision`). Kafka's
    /// group coordinator runtime (KIP-848) likewise exposes only committed state.
    pub fn is_committed(&self) -> bool {
        self.loaded.holds(&self.log)
    }

    /// Waits until [`is_committed`](Self::is_committed); false if the partition was unloaded
    /// meanwhile. Polls every 10 ms (a load waits for its followers' next fetch).
    pub async fn wait_committed(&self) -> bool {
        while !self.is_committed() {
            if !self.is_active() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.is_active()
    }

    /// Stops coordinating: writes in flight answer NOT_COORDINATOR, marker senders stop.
    pub fn deactivate(&self) {
        self.active.store(false, Ordering::Release);
    }

    /// Writes transition `t` of `id` (a tombstone for Dead), acks=all, then applies it to the
    /// pending state set by its `prepare_*`. A failed write forgets the pending transition.
    ///
    /// Errors: as Kafka's `appendTransactionToLog` maps them: NOT_COORDINATOR (16) when this
    /// broker no longer leads the partition or its log failed, COORDINATOR_NOT_AVAILABLE (15)
    /// when too few replicas are in sync or they did not confirm in time.
    pub async fn write(&self, id: &str, t: &TxnTransit) -> Result<(), E> {
        let result = self.append(id, t).await;
        let mut txns = self.txns.lock();
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let Some(m) = txns.get_mut(id) else {
            return Err(E::NotCoordinator);
        };
        if land(m, t, result)? {
            txns.remove(id);
        }
        Ok(())
    }

    async fn append(&self, id: &str, t: &TxnTransit) -> Result<(), E> {
        let value = (t.state != TxnState::Dead).then(|| Bytes::from(log::encode_value(t)));
        let (batch, header) =
            encode_batch(&[(Bytes::from(log::encode_key(id)), value)], now_ms(), None);
        let replicated = self.log.repl.is_replicated();
        // As the produce handler: the lease, then min.isr, before the append; the replicas,
        // then the lease again, before the answer. A coordinator whose broker may have been
        // fenced (paused past its session) neither writes nor answers a write OK: another
        // broker may coordinate the partition by now. The simulator's coordinator always did
        // (`frieda-sim`, txn.rs); this one checked neither lease until the glue was shared.
        if replicated {
            admit_produce(&self.log.repl, lease_holds(&self.lease), true, self.min_isr)
                .map_err(map_error)?;
        }
        let outcome = self.log.append(batch, header).await.map_err(map_error)?;
        if replicated {
            let waited = self
                .log
                .repl
                .wait_replicated(
                    outcome.last_offset,
                    outcome.leader_epoch,
                    self.min_isr,
                    REPLICATION_TIMEOUT,
                )
                .await;
            answer_produce(waited, lease_holds(&self.lease)).map_err(map_error)?;
        }
        Ok(())
    }
}

/// The state of `id` after replaying its record `value` (`None`: a tombstone): `None` when the
/// id is gone (a tombstone or Dead), else the stored state, no transition pending.
pub fn replayed(id: &str, value: Option<&TxnTransit>) -> Option<TxnMetadata> {
    value
        .filter(|t| t.state != TxnState::Dead)
        .map(|t| TxnMetadata::from_transit(id, t))
}

/// The write of transition `t` of `m` ended with `result` (Kafka's
/// `TransactionStateManager.appendTransactionToLog` callback): written, it is applied
/// (`Ok(true)`: Dead, the id is to be removed); failed, the pending transition is forgotten
/// and the error returned.
///
/// Errors: `result`'s, or UNKNOWN_SERVER_ERROR when `t` is not the pending transition.
pub fn land(m: &mut TxnMetadata, t: &TxnTransit, result: Result<(), E>) -> Result<bool, E> {
    match result {
        Ok(()) => {
            m.complete(t)?;
            Ok(t.state == TxnState::Dead)
        }
        Err(e) => {
            m.abandon();
            Err(e)
        }
    }
}

/// Kafka's mapping of a transaction log append error (NOT_COORDINATOR where this broker does
/// not lead the partition or its log failed, else COORDINATOR_NOT_AVAILABLE).
pub fn map_error(e: E) -> E {
    match e {
        E::NotLeaderOrFollower | E::KafkaStorageError | E::UnknownTopicOrPartition => {
            E::NotCoordinator
        }
        E::MessageTooLarge | E::RecordListTooLarge => E::UnknownServerError,
        _ => E::CoordinatorNotAvailable,
    }
}
