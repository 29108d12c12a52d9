//! One transactional id's state, and its transitions, as Kafka's `TransactionMetadata` and
//! `TransactionState` define them (KIP-98, KIP-360 epoch bumps, KIP-890 transactions v2).
//!
//! A transition is prepared under the coordinator's lock (`prepare_*`, which sets the pending
//! state and returns the [`TxnTransit`] to write), written to `__transaction_state`, and only
//! then applied ([`TxnMetadata::complete`]): persist before apply. While a transition is pending
//! every other request for the id gets CONCURRENT_TRANSACTIONS (51) and retries.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError as E;

/// A topic partition of a transaction.
pub type TopicPartition = (String, i32);

/// No producer id (-1).
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (-1).
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Kafka's `TransactionState`, with its ids in `__transaction_state` and the names
/// DescribeTransactions/ListTransactions report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction yet (after InitProducerId).
    Empty,
    /// Partitions or offsets were added.
    Ongoing,
    /// EndTxn(commit) is written; markers are being written.
    PrepareCommit,
    /// EndTxn(abort) (or a timeout, or a fencing InitProducerId) is written; markers pending.
    PrepareAbort,
    /// Every commit marker is written.
    CompleteCommit,
    /// Every abort marker is written.
    CompleteAbort,
    /// Expired; about to be removed.
    Dead,
    /// A newer producer of the same id is fencing this one's open transaction (never written).
    PrepareEpochFence,
}

impl TxnState {
    /// The id in `TransactionLogValue.TransactionStatus`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// From a stored id.
    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// The name the admin APIs use (Kafka's `TransactionState.stateName`).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` (ListTransactions filters).
    pub fn from_name(name: &str) -> Option<TxnState> {
        [
            TxnState::Empty,
            TxnState::Ongoing,
            TxnState::PrepareCommit,
            TxnState::PrepareAbort,
            TxnState::CompleteCommit,
            TxnState::CompleteAbort,
            TxnState::Dead,
            TxnState::PrepareEpochFence,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Whether the id may expire in this state (`transactional.id.expiration.ms`).
    pub fn expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    /// Kafka's `VALID_PREVIOUS_STATES`.
    fn valid_previous(self, from: TxnState) -> bool {
        use TxnState::*;
        match self {
            Empty => matches!(from, Empty | CompleteCommit | CompleteAbort),
            Ongoing => matches!(from, Ongoing | Empty | CompleteCommit | CompleteAbort),
            PrepareCommit => from == Ongoing,
            PrepareAbort => matches!(
                from,
                Ongoing | PrepareEpochFence | Empty | CompleteCommit | CompleteAbort
            ),
            CompleteCommit => from == PrepareCommit,
            CompleteAbort => from == PrepareAbort,
            Dead => matches!(from, Empty | CompleteAbort | CompleteCommit),
            PrepareEpochFence => from == Ongoing,
        }
    }
}

/// Transactions v1 (librdkafka, kafka-python, older Java: the epoch stays across transactions)
/// or v2 (KIP-890 part 2: every commit and abort bumps the epoch; partitions are added by the
/// partition leaders as the producer writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TxnVersion {
    /// TV0/TV1.
    V1,
    /// TV2.
    V2,
}

impl TxnVersion {
    /// `ClientTransactionVersion` as stored (0 or 2).
    pub fn level(self) -> i16 {
        match self {
            TxnVersion::V1 => 0,
            TxnVersion::V2 => 2,
        }
    }

    /// From a stored level.
    pub fn from_level(level: i16) -> TxnVersion {
        if level >= 2 {
            TxnVersion::V2
        } else {
            TxnVersion::V1
        }
    }

    /// Whether the epoch is bumped at every commit and abort.
    pub fn bumps_epoch(self) -> bool {
        self == TxnVersion::V2
    }
}

/// What a transition writes and, once written, applies (Kafka's `TxnTransitMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnTransit {
    /// Producer id after the transition.
    pub producer_id: i64,
    /// The producer id before it (`PreviousProducerId`).
    pub prev_producer_id: i64,
    /// The producer id the next completion rotates to (v2 epoch overflow), or -1.
    pub next_producer_id: i64,
    /// Epoch after the transition.
    pub producer_epoch: i16,
    /// The epoch before it (retries of a bump), or -1.
    pub last_producer_epoch: i16,
    /// `transaction.timeout.ms` of the producer.
    pub txn_timeout_ms: i32,
    /// The state written.
    pub state: TxnState,
    /// The transaction's partitions.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the transaction started (ms), -1 if none.
    pub txn_start_ms: i64,
    /// When it was last updated (ms).
    pub txn_last_update_ms: i64,
    /// The client's transaction version.
    pub version: TxnVersion,
}

/// A transactional id's state (Kafka's `TransactionMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    /// `transactional.id`.
    pub transactional_id: String,
    /// Producer id in use.
    pub producer_id: i64,
    /// The producer id before the last rotation.
    pub prev_producer_id: i64,
    /// The producer id the pending completion rotates to, or -1.
    pub next_producer_id: i64,
    /// Current epoch.
    pub producer_epoch: i16,
    /// The epoch before the last bump (lets a retried InitProducerId succeed), or -1.
    pub last_producer_epoch: i16,
    /// `transaction.timeout.ms` (ms).
    pub txn_timeout_ms: i32,
    /// Current state.
    pub state: TxnState,
    /// Partitions of the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction started (ms), -1 if none.
    pub txn_start_ms: i64,
    /// Last update (ms).
    pub txn_last_update_ms: i64,
    /// The client's transaction version.
    pub version: TxnVersion,
    /// The state a transition in flight goes to.
    pub pending: Option<TxnState>,
    /// An epoch fence whose write failed: the next fence does not bump again (v1).
    pub failed_epoch_fence: bool,
}

/// The last two epochs are reserved: a producer at `i16::MAX - 1` gets a new id.
pub fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

impl TxnMetadata {
    /// A new id with `producer_id` and no epoch yet.
    pub fn new(transactional_id: &str, producer_id: i64, timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_ms: -1,
            txn_last_update_ms: now_ms,
            version: TxnVersion::V1,
            pending: None,
            failed_epoch_fence: false,
        }
    }

    /// The state a stored value describes.
    pub fn from_transit(transactional_id: &str, t: &TxnTransit) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id: t.producer_id,
            prev_producer_id: t.prev_producer_id,
            next_producer_id: t.next_producer_id,
            producer_epoch: t.producer_epoch,
            last_producer_epoch: t.last_producer_epoch,
            txn_timeout_ms: t.txn_timeout_ms,
            state: t.state,
            partitions: t.partitions.clone(),
            txn_start_ms: t.txn_start_ms,
            txn_last_update_ms: t.txn_last_update_ms,
            version: t.version,
            pending: None,
            failed_epoch_fence: false,
        }
    }

    /// The state as a transition record (what a write of it stores).
    pub fn transit(&self) -> TxnTransit {
        TxnTransit {
            producer_id: self.producer_id,
            prev_producer_id: self.prev_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            txn_timeout_ms: self.txn_timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            txn_start_ms: self.txn_start_ms,
            txn_last_update_ms: self.txn_last_update_ms,
            version: self.version,
        }
    }

    /// Whether a transaction is open or being ended.
    pub fn has_pending_transaction(&self) -> bool {
        matches!(
            self.state,
            TxnState::Ongoing | TxnState::PrepareAbort | TxnState::PrepareCommit
        )
    }

    /// Marks `t` as the transition in flight (Kafka's `prepareTransitionTo`).
    ///
    /// Errors: a transition already pending, or one Kafka's state machine does not allow
    /// (a coordinator bug: reported as UNKNOWN_SERVER_ERROR rather than applied).
    fn prepare(&mut self, mut t: TxnTransit) -> Result<TxnTransit, E> {
        if self.pending.is_some() {
            return Err(E::ConcurrentTransactions);
        }
        if t.producer_id < 0 || (t.state != TxnState::Dead && t.producer_epoch < 0) {
            tracing::error!(transactional_id = %self.transactional_id, ?t, "illegal producer id or epoch in a transition");
            return Err(E::UnknownServerError);
        }
        if !t.state.valid_previous(self.state) {
            tracing::error!(transactional_id = %self.transactional_id, from = ?self.state, to = ?t.state,
                "illegal transaction state transition");
            return Err(E::UnknownServerError);
        }
        t.prev_producer_id = self.producer_id;
        self.pending = Some(t.state);
        Ok(t)
    }

    /// Fences the current producer's open transaction (PrepareEpochFence): the epoch is bumped
    /// unless a previous fence failed to be written or it is at the maximum.
    pub fn prepare_fence_epoch(&mut self) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        t.state = TxnState::PrepareEpochFence;
        if !(self.failed_epoch_fence || self.producer_epoch == i16::MAX) {
            t.producer_epoch = self.producer_epoch + 1;
        }
        self.prepare(t)
    }

    /// InitProducerId: the next epoch (KIP-360: with `expected`, a retry of a bump that
    /// succeeded gets the same epoch; a producer whose epoch is neither current nor the last
    /// is fenced).
    ///
    /// Errors: PRODUCER_FENCED (90).
    pub fn prepare_increment_epoch(
        &mut self,
        timeout_ms: i32,
        expected: Option<i16>,
        now_ms: i64,
    ) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        t.state = TxnState::Empty;
        let bumped = self.producer_epoch.wrapping_add(1);
        match expected {
            None => {
                t.producer_epoch = bumped;
                t.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                t.producer_epoch = bumped;
                t.last_producer_epoch = self.producer_epoch;
            }
            Some(e) if e == self.last_producer_epoch => {}
            Some(_) => return Err(E::ProducerFenced),
        }
        t.txn_timeout_ms = timeout_ms;
        t.partitions.clear();
        t.txn_start_ms = -1;
        t.txn_last_update_ms = now_ms;
        self.prepare(t)
    }

    /// InitProducerId past the last epoch: a new producer id at epoch 0.
    pub fn prepare_rotate_producer_id(
        &mut self,
        new_id: i64,
        timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        t.state = TxnState::Empty;
        t.producer_id = new_id;
        t.producer_epoch = 0;
        t.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        t.txn_timeout_ms = timeout_ms;
        t.partitions.clear();
        t.txn_start_ms = -1;
        t.txn_last_update_ms = now_ms;
        self.prepare(t)
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn / an implicit add (v2): Ongoing with `added`.
    pub fn prepare_add_partitions(
        &mut self,
        added: &[TopicPartition],
        now_ms: i64,
        version: TxnVersion,
    ) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        if matches!(
            self.state,
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit
        ) {
            t.txn_start_ms = now_ms;
        }
        t.partitions.extend(added.iter().cloned());
        t.state = TxnState::Ongoing;
        t.txn_last_update_ms = now_ms;
        t.version = version;
        self.prepare(t)
    }

    /// EndTxn (or a timeout's abort): PrepareCommit or PrepareAbort. With transactions v2 the
    /// epoch is bumped (a producer at the maximum aborting keeps it, to recover), and
    /// `next_producer_id` is the id to rotate to when the epoch is exhausted.
    pub fn prepare_abort_or_commit(
        &mut self,
        state: TxnState,
        version: TxnVersion,
        next_producer_id: i64,
        now_ms: i64,
        no_partition_added: bool,
    ) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        t.state = state;
        if version.bumps_epoch() {
            if !(self.producer_epoch == i16::MAX && state == TxnState::PrepareAbort) {
                t.producer_epoch = self.producer_epoch + 1;
            }
            t.last_producer_epoch = self.producer_epoch;
        }
        if no_partition_added {
            t.txn_start_ms = now_ms;
        }
        t.next_producer_id = next_producer_id;
        t.txn_last_update_ms = now_ms;
        t.version = version;
        self.prepare(t)
    }

    /// All markers written: CompleteCommit or CompleteAbort (v2 epoch overflow: the next
    /// producer id at epoch 0).
    pub fn prepare_complete(&mut self, now_ms: i64) -> Result<TxnTransit, E> {
        self.failed_epoch_fence = false;
        let mut t = self.transit();
        t.state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        if self.version.bumps_epoch() && self.next_producer_id != NO_PRODUCER_ID {
            t.producer_id = self.next_producer_id;
            t.producer_epoch = 0;
        }
        t.next_producer_id = NO_PRODUCER_ID;
        t.partitions.clear();
        t.txn_last_update_ms = now_ms;
        self.prepare(t)
    }

    /// Expiration (`transactional.id.expiration.ms`): Dead, removed once written.
    pub fn prepare_dead(&mut self) -> Result<TxnTransit, E> {
        let mut t = self.transit();
        t.state = TxnState::Dead;
        t.partitions.clear();
        self.prepare(t)
    }

    /// Applies a written transition (Kafka's `completeTransitionTo`): the pending state must
    /// be `t`'s.
    ///
    /// Errors: no pending transition, or another one (the coordinator lost track: answered
    /// UNKNOWN_SERVER_ERROR, nothing applied).
    pub fn complete(&mut self, t: &TxnTransit) -> Result<(), E> {
        if self.pending != Some(t.state) {
            tracing::error!(transactional_id = %self.transactional_id, pending = ?self.pending, to = ?t.state,
                "completing a transition that is not pending");
            return Err(E::UnknownServerError);
        }
        self.producer_id = t.producer_id;
        self.prev_producer_id = t.prev_producer_id;
        self.next_producer_id = t.next_producer_id;
        self.producer_epoch = t.producer_epoch;
        self.last_producer_epoch = t.last_producer_epoch;
        self.txn_timeout_ms = t.txn_timeout_ms;
        self.partitions = t.partitions.clone();
        self.txn_start_ms = t.txn_start_ms;
        self.txn_last_update_ms = t.txn_last_update_ms;
        self.version = t.version;
        self.state = t.state;
        self.pending = None;
        Ok(())
    }

    /// The transition in flight failed to be written: it is forgotten.
    pub fn abandon(&mut self) {
        self.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(m: &mut TxnMetadata, t: Result<TxnTransit, E>) {
        let t = t.unwrap();
        m.complete(&t).unwrap();
    }

    #[test]
    fn a_v1_transaction_keeps_its_epoch_and_v2_bumps_it_at_every_end() {
        let mut m = TxnMetadata::new("t", 7, 60_000, 0);
        let t = m.prepare_increment_epoch(60_000, None, 1);
        // a pending transition refuses the next one
        assert_eq!(
            m.prepare_add_partitions(&[("a".into(), 0)], 2, TxnVersion::V1),
            Err(E::ConcurrentTransactions)
        );
        m.complete(&t.unwrap()).unwrap();
        assert_eq!((m.producer_epoch, m.state), (0, TxnState::Empty));
        let add = m.prepare_add_partitions(&[("a".into(), 0)], 5, TxnVersion::V1);
        apply(&mut m, add);
        assert_eq!((m.state, m.txn_start_ms), (TxnState::Ongoing, 5));
        let end = m.prepare_abort_or_commit(TxnState::PrepareCommit, TxnVersion::V1, -1, 6, false);
        apply(&mut m, end);
        assert_eq!(m.producer_epoch, 0, "v1 keeps the epoch");
        let done = m.prepare_complete(7);
        apply(&mut m, done);
        assert_eq!((m.state, m.partitions.len()), (TxnState::CompleteCommit, 0));
        // v2
        let add = m.prepare_add_partitions(&[("a".into(), 1)], 8, TxnVersion::V2);
        apply(&mut m, add);
        let end = m.prepare_abort_or_commit(TxnState::PrepareAbort, TxnVersion::V2, -1, 9, false);
        apply(&mut m, end);
        assert_eq!((m.producer_epoch, m.last_producer_epoch), (1, 0));
        let done = m.prepare_complete(10);
        apply(&mut m, done);
        assert_eq!((m.state, m.producer_epoch), (TxnState::CompleteAbort, 1));
    }

    #[test]
    fn init_producer_id_retries_and_fencing_follow_kip_360() {
        let mut m = TxnMetadata::new("t", 7, 1000, 0);
        let t = m.prepare_increment_epoch(1000, None, 1);
        m.complete(&t.unwrap()).unwrap();
        assert_eq!(m.producer_epoch, 0);
        // the producer at epoch 0 recovers: bumped to 1, last epoch 0
        let t = m.prepare_increment_epoch(1000, Some(0), 2);
        m.complete(&t.unwrap()).unwrap();
        assert_eq!((m.producer_epoch, m.last_producer_epoch), (1, 0));
        // its retry (still saying 0) gets the same epoch
        let t = m.prepare_increment_epoch(1000, Some(0), 3);
        m.complete(&t.unwrap()).unwrap();
        assert_eq!(m.producer_epoch, 1);
        // a stale producer is fenced
        assert_eq!(
            m.prepare_increment_epoch(1000, Some(-5), 4),
            Err(E::ProducerFenced)
        );
        // an illegal transition is refused, not applied
        assert_eq!(m.prepare_complete(5), Err(E::UnknownServerError));
        assert_eq!(m.pending, None);
    }

    #[test]
    fn v2_epoch_overflow_rotates_the_producer_id_at_completion() {
        let mut m = TxnMetadata::new("t", 7, 1000, 0);
        m.producer_epoch = i16::MAX - 2;
        m.state = TxnState::Ongoing;
        m.partitions.insert(("a".into(), 0));
        let end = m.prepare_abort_or_commit(TxnState::PrepareCommit, TxnVersion::V2, 99, 1, false);
        apply(&mut m, end);
        assert_eq!((m.producer_epoch, m.next_producer_id), (i16::MAX - 1, 99));
        let done = m.prepare_complete(2);
        apply(&mut m, done);
        assert_eq!(
            (m.producer_id, m.producer_epoch, m.prev_producer_id),
            (99, 0, 7)
        );
    }
}
