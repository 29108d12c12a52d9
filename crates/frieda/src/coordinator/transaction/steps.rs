//! The transaction coordinator's decisions, sans-IO: each takes one transactional id's
//! [`TxnMetadata`] and a request and says what to write (a [`TxnTransit`]) or what to answer,
//! without touching a log, a clock or a network. [`super::TransactionCoordinators`] runs them
//! around its `__transaction_state` writes and marker sends; the simulator (`frieda-sim`,
//! `txn.rs`) runs the same functions on simulated logs and networks (issue 57).
//!
//! Sources: Kafka 4.4's `TransactionCoordinator` (`handleInitProducerId`,
//! `handleAddPartitionsToTransaction`, `handleEndTransaction`/`endTransaction`,
//! `abortTimedOutTransactions`) and `TransactionMarkerChannelManager`; KIP-98, KIP-360,
//! KIP-890.

use kafka_protocol::error::ResponseError as E;

use super::metadata::{epoch_exhausted, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use super::{MarkerRequest, TopicPartition, TxnMetadata, TxnState, TxnTransit, TxnVersion};

/// What an InitProducerId does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitStep {
    /// Write this transition (a new epoch, or a new producer id), then answer with its
    /// producer id and epoch.
    Write(TxnTransit),
    /// The id has an open transaction: abort it with this fence's epoch first (see
    /// [`prepare_end_v2`] with `from_client = false`); the producer is answered
    /// CONCURRENT_TRANSACTIONS and retries.
    Fence(TxnTransit),
}

/// What a prepared EndTxn does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndStep {
    /// Nothing to write: answer with this producer id and epoch (a retry).
    Done(i64, i16),
    /// Write this PrepareCommit/PrepareAbort transition; `true` when it ends an epoch fence.
    Write(TxnTransit, bool),
}

/// InitProducerId for an id whose state is `m` (Kafka's `handleInitProducerId` after the
/// producer id is known): `fresh` is a new producer id, needed when the epoch is exhausted;
/// `expected` the producer's own id and epoch (KIP-360, v3+).
///
/// Errors: CONCURRENT_TRANSACTIONS (51) while a transition is in flight, the previous
/// transaction's markers are written or no fresh id was given where one is needed;
/// PRODUCER_FENCED (90) for an `expected` that is neither the current nor the previous id;
/// UNKNOWN_SERVER_ERROR for a state InitProducerId cannot meet (a coordinator bug).
pub fn plan_init(
    m: &mut TxnMetadata,
    timeout_ms: i32,
    expected: Option<(i64, i16)>,
    fresh: Option<i64>,
    now: i64,
) -> Result<InitStep, E> {
    if m.pending.is_some() {
        return Err(E::ConcurrentTransactions);
    }
    if let Some((epid, eepoch)) = expected {
        let valid = m.producer_epoch == NO_PRODUCER_EPOCH
            || epid == m.producer_id
            || (epid == m.prev_producer_id && epoch_exhausted(eepoch));
        if !valid {
            return Err(E::ProducerFenced);
        }
    }
    match m.state {
        TxnState::PrepareAbort | TxnState::PrepareCommit => Err(E::ConcurrentTransactions),
        TxnState::CompleteAbort | TxnState::CompleteCommit | TxnState::Empty => {
            if epoch_exhausted(m.producer_epoch)
                && expected.is_none_or(|(_, e)| e == m.producer_epoch)
            {
                let pid = fresh.ok_or(E::ConcurrentTransactions)?;
                Ok(InitStep::Write(m.prepare_rotate_producer_id(
                    pid,
                    timeout_ms,
                    now,
                    expected.is_some(),
                )?))
            } else {
                Ok(InitStep::Write(m.prepare_increment_epoch(
                    timeout_ms,
                    expected.map(|(_, e)| e),
                    now,
                )?))
            }
        }
        TxnState::Ongoing => Ok(InitStep::Fence(m.prepare_fence_epoch()?)),
        TxnState::Dead | TxnState::PrepareEpochFence => {
            tracing::error!(transactional_id = %m.transactional_id, state = ?m.state,
                "illegal state at InitProducerId");
            Err(E::UnknownServerError)
        }
    }
}

/// AddPartitionsToTxn (or AddOffsetsToTxn, or a transactions v2 leader's implicit add) of
/// `partitions` to `m`'s transaction: `None` when they are all in the open transaction
/// already (answer OK without a write), else the Ongoing transition to write.
///
/// Errors: CONCURRENT_TRANSACTIONS (51) while a transition is in flight or the markers of the
/// previous transaction are written; INVALID_PRODUCER_ID_MAPPING (49) for another producer
/// id; PRODUCER_FENCED (90) for another epoch.
pub fn plan_add_partitions(
    m: &mut TxnMetadata,
    producer_id: i64,
    epoch: i16,
    partitions: &[TopicPartition],
    version: TxnVersion,
    now: i64,
) -> Result<Option<TxnTransit>, E> {
    if m.pending.is_some() {
        return Err(E::ConcurrentTransactions);
    }
    if m.producer_id != producer_id {
        return Err(E::InvalidProducerIdMapping);
    }
    if m.producer_epoch != epoch {
        return Err(E::ProducerFenced);
    }
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => Err(E::ConcurrentTransactions),
        TxnState::Ongoing if partitions.iter().all(|tp| m.partitions.contains(tp)) => Ok(None),
        _ => m.prepare_add_partitions(partitions, now, version).map(Some),
    }
}

/// Whether `partitions` are in `m`'s open transaction (KIP-890 part 1, AddPartitionsToTxn
/// v4+ with `verify_only`, Kafka's `handleVerifyPartitionsInTransaction`): per partition
/// `None` (it is) or TRANSACTION_ABORTABLE (120: the producer aborts). Nothing is written.
///
/// Errors (for every partition): INVALID_PRODUCER_ID_MAPPING (49) for another producer id,
/// PRODUCER_FENCED (90) for another epoch, CONCURRENT_TRANSACTIONS (51) while the transaction
/// is being ended (PrepareCommit/PrepareAbort).
pub fn verify_partitions(
    m: &TxnMetadata,
    producer_id: i64,
    epoch: i16,
    partitions: &[TopicPartition],
) -> Result<Vec<(TopicPartition, Option<E>)>, E> {
    if m.producer_id != producer_id {
        return Err(E::InvalidProducerIdMapping);
    }
    if m.producer_epoch != epoch {
        return Err(E::ProducerFenced);
    }
    if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
        return Err(E::ConcurrentTransactions);
    }
    Ok(partitions
        .iter()
        .map(|tp| {
            let err = (!m.partitions.contains(tp)).then_some(E::TransactionAbortable);
            (tp.clone(), err)
        })
        .collect())
}

/// After the PrepareCommit/PrepareAbort of producer `producer_id` was written (and applied):
/// the markers to send, with the coordinator's `coordinator_epoch`, and the completion to
/// write once every partition took them.
///
/// Errors: INVALID_PRODUCER_ID_MAPPING when the id moved to another producer meanwhile,
/// CONCURRENT_TRANSACTIONS when another transition is in flight, INVALID_TXN_STATE when the
/// state is no longer the prepared one.
pub fn markers_after_prepare(
    m: &mut TxnMetadata,
    producer_id: i64,
    commit: bool,
    coordinator_epoch: i32,
    now: i64,
) -> Result<(MarkerRequest, TxnTransit), E> {
    if m.producer_id != producer_id {
        return Err(E::InvalidProducerIdMapping);
    }
    if m.pending.is_some() {
        return Err(E::ConcurrentTransactions);
    }
    let want = if commit {
        TxnState::PrepareCommit
    } else {
        TxnState::PrepareAbort
    };
    if m.state != want {
        return Err(E::InvalidTxnState);
    }
    let marker = marker_request(m, coordinator_epoch);
    Ok((marker, m.prepare_complete(now)?))
}

/// A coordinator that loaded `m` in PrepareCommit/PrepareAbort resumes its markers: the
/// markers and the completion to write after them; `None` in any other state.
pub fn resume_markers(
    m: &mut TxnMetadata,
    coordinator_epoch: i32,
    now: i64,
) -> Option<(MarkerRequest, TxnTransit)> {
    if !matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
        return None;
    }
    let marker = marker_request(m, coordinator_epoch);
    let complete = m.prepare_complete(now).ok()?;
    Some((marker, complete))
}

fn marker_request(m: &TxnMetadata, coordinator_epoch: i32) -> MarkerRequest {
    MarkerRequest {
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        commit: m.state == TxnState::PrepareCommit,
        coordinator_epoch,
        version: m.version,
        partitions: m.partitions.iter().cloned().collect(),
    }
}

/// The completion to write again after a failed write of it, if `m` is still the prepared
/// transaction of `producer_id` whose markers were written (Kafka's
/// `TransactionMarkerChannelManager` retries it on every error but NOT_COORDINATOR).
pub fn complete_again(m: &mut TxnMetadata, producer_id: i64, now: i64) -> Option<TxnTransit> {
    let prepared = m.pending.is_none()
        && m.producer_id == producer_id
        && matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort);
    if prepared {
        m.prepare_complete(now).ok()
    } else {
        None
    }
}

/// The epoch fence of an Ongoing transaction older than its `transaction.timeout.ms` at
/// `now` (ms; Kafka's `abortTimedOutTransactions`), to be followed by an abort with the fence's
/// epoch; `None` if it has not timed out or a transition is in flight.
pub fn fence_if_timed_out(m: &mut TxnMetadata, now: i64) -> Option<TxnTransit> {
    let timed_out = m.state == TxnState::Ongoing
        && m.pending.is_none()
        && m.txn_start_ms >= 0
        && now.saturating_sub(m.txn_start_ms) > i64::from(m.txn_timeout_ms);
    if timed_out {
        m.prepare_fence_epoch().ok()
    } else {
        None
    }
}

/// Forgets a fence still pending after its abort failed early (so the id is not stuck in
/// CONCURRENT_TRANSACTIONS; the next InitProducerId or timeout check fences again).
pub fn abandon_fence(m: &mut TxnMetadata) {
    if m.pending == Some(TxnState::PrepareEpochFence) {
        m.abandon();
    }
}

/// What a marker sender does with one partition's answer to WriteTxnMarkers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// The leader took the marker: the partition is done.
    Written,
    /// The topic is gone (UNKNOWN_TOPIC_OR_PARTITION): the partition is dropped.
    Gone,
    /// INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: this coordinator is stale;
    /// it stops sending for the transaction.
    Stale,
    /// Any other error: sent again after a backoff.
    Retry,
}

/// Classifies one partition's answer to WriteTxnMarkers.
pub fn marker_outcome(r: &Result<(), E>) -> MarkerOutcome {
    match r {
        Ok(()) => MarkerOutcome::Written,
        Err(E::UnknownTopicOrPartition) => MarkerOutcome::Gone,
        Err(E::InvalidProducerEpoch | E::TransactionCoordinatorFenced) => MarkerOutcome::Stale,
        Err(_) => MarkerOutcome::Retry,
    }
}

/// Kafka's `endTransactionWithTV1`.
pub fn prepare_end_v1(
    m: &mut TxnMetadata,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    from_client: bool,
    now: i64,
) -> Result<EndStep, E> {
    if m.producer_id != producer_id {
        return Err(E::InvalidProducerIdMapping);
    }
    // Clients may not bump the epoch: strict equality for them.
    if (from_client && epoch != m.producer_epoch) || epoch < m.producer_epoch {
        return Err(E::ProducerFenced);
    }
    if m.pending.is_some() && m.pending != Some(TxnState::PrepareEpochFence) {
        return Err(E::ConcurrentTransactions);
    }
    match m.state {
        TxnState::Ongoing => {
            let next = if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            };
            let mut fence = false;
            if next == TxnState::PrepareAbort && m.pending == Some(TxnState::PrepareEpochFence) {
                fence = true;
                m.pending = None;
                m.producer_epoch = epoch;
                m.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            let t = m.prepare_abort_or_commit(next, TxnVersion::V1, NO_PRODUCER_ID, now, false)?;
            Ok(EndStep::Write(t, fence))
        }
        TxnState::CompleteCommit if commit => Ok(EndStep::Done(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)),
        TxnState::CompleteAbort if !commit => Ok(EndStep::Done(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)),
        TxnState::PrepareCommit if commit => Err(E::ConcurrentTransactions),
        TxnState::PrepareAbort if !commit => Err(E::ConcurrentTransactions),
        TxnState::Dead | TxnState::PrepareEpochFence => Err(E::UnknownServerError),
        _ => {
            tracing::warn!(transactional_id = %m.transactional_id, state = ?m.state, commit,
                "EndTxn in a state that does not allow it");
            Err(E::InvalidTxnState)
        }
    }
}

/// Kafka's `endTransaction` for transactions v2 (the table in Kafka's TransactionCoordinator:
/// a retry has the epoch before the bump).
pub fn prepare_end_v2(
    m: &mut TxnMetadata,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    from_client: bool,
    next_producer_id: i64,
    now: i64,
) -> Result<EndStep, E> {
    let fence = m.pending == Some(TxnState::PrepareEpochFence);
    let retry_on_overflow = !fence
        && m.prev_producer_id == producer_id
        && epoch == i16::MAX - 1
        && m.producer_epoch == 0;
    let retry_on_bump = !fence && i32::from(m.producer_epoch) == i32::from(epoch) + 1;
    let valid_epoch = if fence {
        (!from_client || epoch == m.producer_epoch) && epoch >= m.producer_epoch
    } else {
        match m.state {
            TxnState::Ongoing | TxnState::Empty | TxnState::Dead | TxnState::PrepareEpochFence => {
                epoch == m.producer_epoch
            }
            TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                retry_on_bump || retry_on_overflow || epoch == m.producer_epoch
            }
        }
    };
    let retry = retry_on_bump || retry_on_overflow;
    if m.pending.is_some() && !fence {
        return Err(E::ConcurrentTransactions);
    }
    if m.producer_id != producer_id && !retry_on_overflow {
        return Err(E::InvalidProducerIdMapping);
    }
    if !valid_epoch {
        return Err(E::ProducerFenced);
    }
    let complete_with = |m: &mut TxnMetadata, next: TxnState, none_added: bool| {
        if next == TxnState::PrepareAbort && fence {
            m.pending = None;
        }
        m.prepare_abort_or_commit(next, TxnVersion::V2, next_producer_id, now, none_added)
            .map(|t| EndStep::Write(t, fence))
    };
    let invalid = |m: &TxnMetadata| {
        tracing::warn!(transactional_id = %m.transactional_id, state = ?m.state, commit,
            "EndTxn in a state that does not allow it");
        Err(E::InvalidTxnState)
    };
    match m.state {
        TxnState::Ongoing => {
            let next = if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            };
            complete_with(m, next, false)
        }
        TxnState::CompleteCommit => match (commit, retry) {
            (true, true) => Ok(EndStep::Done(m.producer_id, m.producer_epoch)),
            (false, false) => complete_with(m, TxnState::PrepareAbort, true),
            _ => invalid(m),
        },
        TxnState::CompleteAbort => match (commit, retry) {
            (false, true) => Ok(EndStep::Done(m.producer_id, m.producer_epoch)),
            (false, false) => complete_with(m, TxnState::PrepareAbort, true),
            _ => invalid(m),
        },
        TxnState::PrepareCommit if commit => Err(E::ConcurrentTransactions),
        TxnState::PrepareAbort if !commit => Err(E::ConcurrentTransactions),
        TxnState::Empty if !commit => complete_with(m, TxnState::PrepareAbort, true),
        TxnState::Dead | TxnState::PrepareEpochFence => Err(E::UnknownServerError),
        _ => invalid(m),
    }
}
