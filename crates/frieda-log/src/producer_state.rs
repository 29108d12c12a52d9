//! Producer state of one partition: the idempotence checks of KIP-98 and the transaction state
//! of KIP-98/KIP-890, as Kafka's `ProducerStateManager` and `ProducerAppendInfo` apply them.
//!
//! For each producer id the partition remembers its epoch, its last five batches (first/last
//! sequence and offsets: as many as a producer may have in flight with idempotence), the max
//! timestamp of its last batch, the epoch of the transaction coordinator that last wrote a marker
//! for it, and the first offset of its open transaction on this partition, if any.
//!
//! A producer silent for `producer.id.expiration.ms` is forgotten (by its last batch's own
//! timestamp, as Kafka's `removeExpiredProducers`), unless it has an open transaction; the table
//! never holds more than [`MAX_PRODUCERS_PER_PARTITION`] ids.
//!
//! The state is rebuilt after a restart from a snapshot (Kafka's ProducerSnapshot v1 format,
//! [`ProducerStateManager::snapshot`]) and a replay of the batches after it.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::batch::BatchHeader;
use crate::control::{ControlType, EndTxnMarker};

/// Batches remembered per producer, as in Kafka (`NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_TO_RETAIN: usize = 5;

/// Most producer ids one partition remembers. Past it the producers with the oldest last
/// timestamps and no open transaction are forgotten first (a forgotten producer's next batch is
/// accepted as from a new producer, as Kafka does after expiration). Kafka has no such bound;
/// each entry costs about 200 bytes, so this caps a partition's table near 20 MB.
pub const MAX_PRODUCERS_PER_PARTITION: usize = 100_000;

/// Most producers whose refused batches one partition remembers (see
/// [`ProducerStateManager::note_refused`]); past it the memory starts over.
pub const MAX_REFUSED_PRODUCERS: usize = 10_000;

/// Most transaction verifications one partition keeps open at once (see
/// [`ProducerStateManager::begin_verification`]); past it the oldest are dropped (their appends
/// are then refused INVALID_TXN_STATE and retried by the producer).
pub const MAX_PENDING_VERIFICATIONS: usize = 10_000;

/// Closed transactions whose marker may not have reached the high watermark yet, remembered
/// for the last stable offset (see [`TxnFrontier`]); past it the oldest are forgotten.
pub const MAX_UNREPLICATED_TXNS: usize = 10_000;

/// Why a batch or marker was refused; each maps to one Kafka error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    /// An epoch older than the producer's current one (INVALID_PRODUCER_EPOCH, 47).
    #[error("the producer epoch is older than the one last seen")]
    InvalidProducerEpoch,
    /// A sequence gap, or a new epoch not starting at 0 (OUT_OF_ORDER_SEQUENCE_NUMBER, 45).
    #[error("out of order sequence number")]
    OutOfOrderSequence,
    /// The gap is a batch this partition itself refused before appending it: retry both
    /// (NOT_LEADER_OR_FOLLOWER, 6; see [`ProducerStateManager::note_refused`]).
    #[error("an earlier batch of this producer was refused; retry in order")]
    RetryRefused,
    /// A non-transactional batch while the producer's transaction is open, or a transactional
    /// batch opening a transaction the coordinator did not confirm (INVALID_TXN_STATE, 48).
    #[error("invalid transaction state")]
    InvalidTxnState,
    /// A marker from an older transaction coordinator (TRANSACTION_COORDINATOR_FENCED, 52).
    #[error("the marker's coordinator epoch is older than the last one seen")]
    CoordinatorFenced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchMeta {
    first_seq: i32,
    last_seq: i32,
    base_offset: i64,
    last_offset: i64,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// Max timestamp of the producer's last batch or marker (ms): its expiration clock.
    last_timestamp: i64,
    /// Epoch of the coordinator of its last marker (-1: none).
    coordinator_epoch: i32,
    /// First offset of its open transaction on this partition.
    current_txn_first_offset: Option<i64>,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: -1,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
            current_txn_first_offset: None,
        }
    }
}

impl ProducerEntry {
    fn set_epoch(&mut self, epoch: i16) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.batches.clear();
        }
    }
}

/// What to do with an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// In sequence (or the producer is new to this partition): append it.
    Append,
    /// A retry of a batch already appended: answer with its original offsets, append nothing.
    Duplicate {
        /// Where the original was appended.
        base_offset: i64,
        /// Its last offset.
        last_offset: i64,
    },
}

/// A transaction that a marker closed on this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// Its producer.
    pub producer_id: i64,
    /// Its first offset here.
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    /// Aborted (its records are dropped by `read_committed` readers).
    pub aborted: bool,
}

/// One producer as DescribeProducers reports it (KIP-664).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerInfo {
    /// Producer id.
    pub producer_id: i64,
    /// Current epoch.
    pub epoch: i16,
    /// Last sequence written (-1 if none).
    pub last_sequence: i32,
    /// Max timestamp of its last batch (ms).
    pub last_timestamp: i64,
    /// Coordinator epoch of its last marker (-1 if none).
    pub coordinator_epoch: i32,
    /// First offset of its open transaction (-1 if none).
    pub current_txn_start_offset: i64,
}

/// The open and recently closed transactions of a partition: what its last stable offset
/// (KIP-98) depends on. Published to readers after every change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnFrontier {
    /// First offset of each open transaction.
    pub ongoing: BTreeMap<i64, i64>,
    /// Closed transactions by marker offset, with their first offset: they stay unstable until
    /// the high watermark passes the marker (Kafka's `unreplicatedTxns`).
    pub unreplicated: BTreeMap<i64, i64>,
}

impl TxnFrontier {
    /// The last stable offset for high watermark `hw`: the smallest first offset of a
    /// transaction that is open or whose marker is at or above `hw`, capped at `hw`.
    pub fn last_stable_offset(&self, hw: i64) -> i64 {
        let open = self.ongoing.keys().next().copied().unwrap_or(i64::MAX);
        let unreplicated = self
            .unreplicated
            .range(hw..)
            .map(|(_, &first)| first)
            .min()
            .unwrap_or(i64::MAX);
        hw.min(open).min(unreplicated)
    }
}

/// The producer table of one partition.
#[derive(Debug, Default)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    frontier: TxnFrontier,
    /// Per producer id: the epoch and lowest base sequence of a batch this partition refused
    /// before appending it (not leading, fenced, too few in-sync replicas), until a batch
    /// covering that sequence is appended. Bounded by [`MAX_REFUSED_PRODUCERS`].
    refused: HashMap<i64, (i16, i32)>,
    /// Transaction verifications in flight (KIP-890): producer id -> the verification.
    verifying: HashMap<i64, Verification>,
    next_token: u64,
    /// Whether this table may lack a producer that wrote here: one was expired or evicted, the
    /// partition's log start moved past batches, or the log was reopened after a restart (set
    /// by the partition, which also remembers an expiry across restarts). Until then an unknown producer's first batch must
    /// start at sequence 0 (see [`check`](Self::check)).
    may_have_forgotten: bool,
}

/// A transaction verification in flight (Kafka's `VerificationStateEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verification {
    /// The producer epoch verified.
    epoch: i16,
    /// The token its append must carry (Kafka's `VerificationGuard`).
    token: u64,
    /// Asked by a transactions v2 producer (Produce v12+, KIP-890 part 2), whose epoch was
    /// bumped when its previous transaction ended.
    supports_epoch_bump: bool,
}

fn in_sequence(last: i32, next: i32) -> bool {
    next == last.wrapping_add(1) || (next == 0 && last == i32::MAX)
}

impl ProducerStateManager {
    /// Checks a data batch a client produced, before it is appended (Kafka's
    /// `analyzeAndValidateProducerState` for origin CLIENT). `verification` is the token of a
    /// transaction verification this append completed (see
    /// [`begin_verification`](Self::begin_verification)), required when a transactional batch
    /// would open a transaction and `require_verification` is set.
    ///
    /// Errors: INVALID_PRODUCER_EPOCH for an older epoch; OUT_OF_ORDER_SEQUENCE_NUMBER for a
    /// gap or a new epoch not starting at 0; [`ProducerError::RetryRefused`] for a gap this
    /// partition caused; INVALID_TXN_STATE for a non-transactional batch while the producer's
    /// transaction is open, or an unverified transactional batch opening one.
    /// Batches without a producer id always pass.
    pub fn check(
        &self,
        batch: &BatchHeader,
        verification: Option<u64>,
        require_verification: bool,
    ) -> Result<SequenceCheck, ProducerError> {
        if batch.producer_id < 0 {
            return Ok(SequenceCheck::Append);
        }
        let entry = self.producers.get(&batch.producer_id);
        // Batches without sequences (base sequence -1): the coordinators' own transactional
        // writes (TxnOffsetCommit), checked for epoch and transaction state only, as Kafka
        // checks origin COORDINATOR appends.
        let sequenced = batch.base_sequence >= 0;
        if let Some(e) = entry {
            if batch.producer_epoch < e.epoch {
                return Err(ProducerError::InvalidProducerEpoch);
            }
            if sequenced && batch.producer_epoch == e.epoch {
                let last_seq = batch.last_sequence();
                if let Some(dup) = e
                    .batches
                    .iter()
                    .find(|b| b.first_seq == batch.base_sequence && b.last_seq == last_seq)
                {
                    return Ok(SequenceCheck::Duplicate {
                        base_offset: dup.base_offset,
                        last_offset: dup.last_offset,
                    });
                }
            }
        }
        let open_txn = entry.and_then(|e| e.current_txn_first_offset.map(|_| e.epoch));
        if batch.is_transactional() {
            let continues = open_txn == Some(batch.producer_epoch);
            if !continues
                && require_verification
                && (verification.is_none()
                    || self.verifying.get(&batch.producer_id).map(|v| v.token) != verification)
            {
                return Err(ProducerError::InvalidTxnState);
            }
        } else if open_txn.is_some() {
            return Err(ProducerError::InvalidTxnState);
        }
        if !sequenced {
            return Ok(SequenceCheck::Append);
        }
        let Some(entry) = entry else {
            // Sequences count from 0 per partition at every epoch, so the first batch of a
            // producer this partition never forgot starts at 0. A later one means an earlier
            // batch was refused here (a replica not leading yet) or lost with a failed leader:
            // appending it would let the producer take the earlier batch as written (librdkafka
            // acknowledges it, `rd_kafka_dr_implicit_ack`: tests/jepsen power-loss seed 2231
            // lost four acknowledged records so). It is refused as a batch after a refused one
            // (NOT_LEADER_OR_FOLLOWER), so the producer resends in order. Where the producer may
            // have been forgotten (expired, evicted, batches below the log start, or a log
            // reopened after a restart, whose unsynced tail a crash may have taken) any sequence
            // is accepted, as Kafka accepts it for a producer without an entry: refusing it
            // there would stall a producer whose acknowledged but unsynced batches a power cut
            // took (tests/crash power-loss, default durability).
            return if batch.base_sequence == 0 || self.may_have_forgotten {
                Ok(SequenceCheck::Append)
            } else {
                Err(ProducerError::RetryRefused)
            };
        };
        if batch.producer_epoch > entry.epoch {
            return if batch.base_sequence == 0 || entry.epoch < 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ProducerError::OutOfOrderSequence)
            };
        }
        match entry.batches.back() {
            Some(last) if in_sequence(last.last_seq, batch.base_sequence) => {
                Ok(SequenceCheck::Append)
            }
            Some(last)
                if self.refused.get(&batch.producer_id)
                    == Some(&(batch.producer_epoch, last.last_seq.wrapping_add(1))) =>
            {
                // The gap is a batch this partition itself refused a moment ago (pipelined
                // requests straddling a leadership flap): this one is refused the same way, so
                // the producer retries both in order. OUT_OF_ORDER_SEQUENCE_NUMBER would make
                // librdkafka bump its epoch and renumber every unacknowledged record, and
                // records appended here but answered NOT_LEADER_OR_FOLLOWER would then be
                // written twice (tests/jepsen mixed seed 1031).
                Err(ProducerError::RetryRefused)
            }
            Some(_) => Err(ProducerError::OutOfOrderSequence),
            None => Ok(SequenceCheck::Append),
        }
    }

    /// Checks a transaction marker the coordinator asks for (Kafka's `appendEndTxnMarker` for
    /// origin COORDINATOR). With transactions v2 (`bumps_epoch`) the marker carries the epoch
    /// the coordinator bumped to, so it must be above the producer's; a marker at the current
    /// epoch of a transaction already closed is a retry and passes (KAFKA-19999).
    ///
    /// Errors: INVALID_PRODUCER_EPOCH for an older (v2: not newer) epoch;
    /// TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch.
    pub fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        bumps_epoch: bool,
    ) -> Result<(), ProducerError> {
        let Some(e) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        let older = if bumps_epoch {
            epoch <= e.epoch
        } else {
            epoch < e.epoch
        };
        if older {
            let retry = bumps_epoch
                && epoch == e.epoch
                && (e.current_txn_first_offset.is_none() || epoch == i16::MAX);
            if !retry {
                return Err(ProducerError::InvalidProducerEpoch);
            }
        }
        if e.coordinator_epoch > coordinator_epoch {
            return Err(ProducerError::CoordinatorFenced);
        }
        Ok(())
    }

    /// Starts verifying that `producer_id`'s transaction at `epoch` includes this partition
    /// (KIP-890 part 1, Kafka's `maybeStartTransactionVerification`): `None` when no
    /// verification is needed (its transaction is already open here at that epoch), else a
    /// token to pass to [`check`](Self::check) once the coordinator confirmed it.
    /// `supports_epoch_bump`: the producer uses transactions v2 (KIP-890 part 2).
    ///
    /// A marker for the producer voids the token (a late write of a finished transaction
    /// cannot open a hanging one), except a transactions v2 verification whose epoch is the
    /// marker's: the marker carries the epoch the coordinator bumped to when the previous
    /// transaction ended, so the verification is for the next transaction (Kafka's
    /// `UnifiedLog.updateProducers`, `isV2NextTransactionStarted`). A newer verification
    /// replaces the token.
    pub fn begin_verification(
        &mut self,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Option<u64> {
        if let Some(e) = self.producers.get(&producer_id) {
            if e.current_txn_first_offset.is_some() && e.epoch == epoch {
                return None;
            }
        }
        if self.verifying.len() >= MAX_PENDING_VERIFICATIONS
            && !self.verifying.contains_key(&producer_id)
        {
            self.verifying.clear();
        }
        if let Some(v) = self.verifying.get(&producer_id) {
            if v.epoch == epoch {
                return Some(v.token);
            }
        }
        self.next_token += 1;
        self.verifying.insert(
            producer_id,
            Verification {
                epoch,
                token: self.next_token,
                supports_epoch_bump,
            },
        );
        Some(self.next_token)
    }

    /// Notes that `batch` was refused before it could be appended (NOT_LEADER_OR_FOLLOWER,
    /// NOT_ENOUGH_REPLICAS: the producer retries it), so a later batch of the same producer
    /// that arrives first is refused too instead of being called out of order (see
    /// [`check`](Self::check)).
    pub fn note_refused(&mut self, batch: &BatchHeader) {
        if batch.producer_id < 0 {
            return;
        }
        if self.refused.len() >= MAX_REFUSED_PRODUCERS
            && !self.refused.contains_key(&batch.producer_id)
        {
            self.refused.clear();
        }
        let e = self
            .refused
            .entry(batch.producer_id)
            .or_insert((batch.producer_epoch, batch.base_sequence));
        if e.0 != batch.producer_epoch {
            *e = (batch.producer_epoch, batch.base_sequence);
        } else if batch.base_sequence < e.1 {
            e.1 = batch.base_sequence;
        }
    }

    /// Records a data batch appended at `base_offset` (its header carries the producer id,
    /// epoch, sequences and the transactional bit), on a leader, a follower or a replay after a
    /// restart. Returns the first offset of the transaction it opened, if it opened one.
    pub fn record(&mut self, batch: &BatchHeader, base_offset: i64) -> Option<i64> {
        if batch.producer_id < 0 {
            return None;
        }
        if let Some(&(epoch, seq)) = self.refused.get(&batch.producer_id) {
            if epoch != batch.producer_epoch || seq <= batch.last_sequence() {
                self.refused.remove(&batch.producer_id);
            }
        }
        let entry = self.producers.entry(batch.producer_id).or_default();
        entry.set_epoch(batch.producer_epoch);
        if batch.base_sequence >= 0 {
            if entry.batches.len() == BATCHES_TO_RETAIN {
                entry.batches.pop_front();
            }
            entry.batches.push_back(BatchMeta {
                first_seq: batch.base_sequence,
                last_seq: batch.last_sequence(),
                base_offset,
                last_offset: base_offset + i64::from(batch.last_offset_delta),
            });
        }
        // Kafka's ProducerAppendInfo: the last batch's max timestamp (not a running max), as
        // DescribeProducers reports it and producer expiry measures from it.
        entry.last_timestamp = batch.max_timestamp;
        let mut opened = None;
        if batch.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(base_offset);
            opened = Some(base_offset);
        } else if !batch.is_transactional() && entry.current_txn_first_offset.is_some() {
            // Only a replica or a replay sees this (a leader refuses it): Kafka's followers
            // take what the leader wrote.
            tracing::warn!(
                producer_id = batch.producer_id,
                offset = base_offset,
                "a non-transactional batch of a producer with an open transaction"
            );
        }
        if let Some(first) = opened {
            self.frontier.ongoing.insert(first, batch.producer_id);
            self.verifying.remove(&batch.producer_id);
        }
        if self.producers.len() > MAX_PRODUCERS_PER_PARTITION {
            self.evict_oldest(MAX_PRODUCERS_PER_PARTITION / 100);
        }
        opened
    }

    /// Records a transaction marker written at `offset` (`timestamp` its record's, ms): the
    /// producer takes the marker's epoch and coordinator epoch, and its open transaction, if
    /// any, closes. Returns the closed transaction.
    ///
    /// The producer's verification in flight is voided, unless it is a transactions v2 one at
    /// the marker's epoch (see [`begin_verification`](Self::begin_verification)): a v2
    /// producer's next transaction may start verifying here, with the epoch EndTxn bumped
    /// to, before the previous transaction's marker (carrying that same epoch) lands; voiding
    /// it refused the producer's first batch with INVALID_TXN_STATE although the coordinator
    /// had added the partition.
    pub fn record_marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        marker: EndTxnMarker,
        offset: i64,
        timestamp: i64,
    ) -> Option<CompletedTxn> {
        let next_transaction_started = self
            .verifying
            .get(&producer_id)
            .is_some_and(|v| v.supports_epoch_bump && v.epoch == epoch);
        if !next_transaction_started {
            self.verifying.remove(&producer_id);
        }
        self.refused.remove(&producer_id);
        let entry = self.producers.entry(producer_id).or_default();
        entry.set_epoch(epoch);
        entry.coordinator_epoch = entry.coordinator_epoch.max(marker.coordinator_epoch);
        entry.last_timestamp = timestamp;
        let first = entry.current_txn_first_offset.take()?;
        self.frontier.ongoing.remove(&first);
        if self.frontier.unreplicated.len() >= MAX_UNREPLICATED_TXNS {
            self.frontier.unreplicated.pop_first();
        }
        self.frontier.unreplicated.insert(offset, first);
        Some(CompletedTxn {
            producer_id,
            first_offset: first,
            last_offset: offset,
            aborted: marker.control == ControlType::Abort,
        })
    }

    /// The last stable offset a closed transaction's index entry records (Kafka's
    /// `ProducerStateManager.lastStableOffset(completedTxn)`): the first offset of the oldest
    /// other open transaction, else one past the marker.
    pub fn last_stable_offset_after(&self, completed: &CompletedTxn) -> i64 {
        self.frontier
            .ongoing
            .iter()
            .find(|(_, &pid)| pid != completed.producer_id)
            .map_or(completed.last_offset + 1, |(&first, _)| first)
    }

    /// Forgets closed transactions whose markers are below `hw` (replicated: they no longer
    /// hold the last stable offset back).
    pub fn on_high_watermark(&mut self, hw: i64) -> bool {
        if self
            .frontier
            .unreplicated
            .first_key_value()
            .is_some_and(|(&m, _)| m < hw)
        {
            self.frontier.unreplicated = self.frontier.unreplicated.split_off(&hw);
            return true;
        }
        false
    }

    /// The open and unreplicated transactions (for the last stable offset).
    pub fn frontier(&self) -> &TxnFrontier {
        &self.frontier
    }

    /// Forgets the `n` producers with the oldest last timestamps and no open transaction.
    fn evict_oldest(&mut self, n: usize) {
        let mut by_age: Vec<(i64, i64)> = self
            .producers
            .iter()
            .filter(|(_, e)| e.current_txn_first_offset.is_none())
            .map(|(&pid, e)| (e.last_timestamp, pid))
            .collect();
        by_age.sort_unstable();
        for (_, pid) in by_age.into_iter().take(n.max(1)) {
            self.producers.remove(&pid);
        }
        // In memory only: after a restart the evicted producers are replayed from the log
        // again (unless below the log start, which the partition reports itself).
        self.may_have_forgotten = true;
        tracing::warn!(
            kept = self.producers.len(),
            "a partition's producer table reached its bound; forgot the producers idle longest"
        );
    }

    /// Forgets producers without an open transaction whose last batch's max timestamp is at
    /// least `expiration_ms` older than `now_ms` (`producer.id.expiration.ms`). Returns how many
    /// were forgotten.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| !Self::expired(e, now_ms, expiration_ms));
        let gone = before - self.producers.len();
        if gone > 0 {
            self.may_have_forgotten = true;
        }
        gone
    }

    /// Whether [`expire`](Self::expire) with these arguments would forget any producer.
    pub fn would_expire(&self, now_ms: i64, expiration_ms: i64) -> bool {
        self.producers
            .values()
            .any(|e| Self::expired(e, now_ms, expiration_ms))
    }

    fn expired(e: &ProducerEntry, now_ms: i64, expiration_ms: i64) -> bool {
        e.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(e.last_timestamp) >= expiration_ms
    }

    /// Notes that this table may lack producers that wrote to the partition (its log start
    /// moved past their batches, or an expiry before a restart): from now on an unknown
    /// producer's first batch is accepted at any sequence.
    pub fn set_may_have_forgotten(&mut self) {
        self.may_have_forgotten = true;
    }

    /// See [`set_may_have_forgotten`](Self::set_may_have_forgotten).
    pub fn may_have_forgotten(&self) -> bool {
        self.may_have_forgotten
    }

    /// Each known producer's id and the last offset of its last batch: the batch the log
    /// cleaner keeps (as a bare header if all its records go) so the producer's sequence state
    /// survives a rebuild from the log.
    pub fn last_batch_offsets(&self) -> HashMap<i64, i64> {
        self.producers
            .iter()
            .filter_map(|(&pid, e)| e.batches.back().map(|b| (pid, b.last_offset)))
            .collect()
    }

    /// Every producer as DescribeProducers reports it.
    pub fn describe(&self) -> Vec<ProducerInfo> {
        let mut out: Vec<ProducerInfo> = self
            .producers
            .iter()
            .map(|(&pid, e)| ProducerInfo {
                producer_id: pid,
                epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: e.last_timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.current_txn_first_offset.unwrap_or(-1),
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }

    /// Number of producer ids known.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// The table in Kafka's ProducerSnapshot v1 format (`<offset>.snapshot`):
    ///
    /// ```text
    /// version int16 (1), crc uint32 (CRC-32C of what follows), count int32, then per producer:
    /// producer_id int64, epoch int16, last_sequence int32, last_offset int64,
    /// offset_delta int32 (last - first sequence of its last batch), timestamp int64,
    /// coordinator_epoch int32, current_txn_first_offset int64 (-1: none)
    /// ```
    ///
    /// Only each producer's last batch is kept (as in Kafka); a recovery replays at least one
    /// segment after the snapshot, which brings back the recent batches.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(4 + self.producers.len() * 46);
        body.extend_from_slice(&(self.producers.len() as i32).to_be_bytes());
        let mut pids: Vec<&i64> = self.producers.keys().collect();
        pids.sort_unstable();
        for pid in pids {
            let e = &self.producers[pid];
            let last = e.batches.back();
            body.extend_from_slice(&pid.to_be_bytes());
            body.extend_from_slice(&e.epoch.to_be_bytes());
            body.extend_from_slice(&last.map_or(-1, |b| b.last_seq).to_be_bytes());
            body.extend_from_slice(&last.map_or(-1, |b| b.last_offset).to_be_bytes());
            body.extend_from_slice(
                &last
                    .map_or(0, |b| (b.last_offset - b.base_offset) as i32)
                    .to_be_bytes(),
            );
            body.extend_from_slice(&e.last_timestamp.to_be_bytes());
            body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            body.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
        }
        let mut out = Vec::with_capacity(6 + body.len());
        out.extend_from_slice(&1i16.to_be_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// A table from a [`snapshot`](Self::snapshot).
    ///
    /// Errors: a message naming what is wrong (version, CRC, length).
    pub fn from_snapshot(bytes: &[u8]) -> Result<ProducerStateManager, String> {
        if bytes.len() < 10 {
            return Err(format!("{} bytes is too short for a snapshot", bytes.len()));
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        if version != 1 {
            return Err(format!("snapshot version {version}, expected 1"));
        }
        let crc = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
        let body = &bytes[6..];
        if crc32c::crc32c(body) != crc {
            return Err("snapshot CRC mismatch".into());
        }
        let count = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        const ENTRY: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;
        let count = usize::try_from(count).map_err(|_| "negative entry count".to_string())?;
        if body.len() != 4 + count * ENTRY {
            return Err(format!(
                "snapshot of {} bytes cannot hold {count} entries",
                bytes.len()
            ));
        }
        let mut m = ProducerStateManager::default();
        for chunk in body[4..].chunks_exact(ENTRY) {
            let i64_at = |i: usize| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&chunk[i..i + 8]);
                i64::from_be_bytes(a)
            };
            let i32_at =
                |i: usize| i32::from_be_bytes([chunk[i], chunk[i + 1], chunk[i + 2], chunk[i + 3]]);
            let pid = i64_at(0);
            let epoch = i16::from_be_bytes([chunk[8], chunk[9]]);
            let last_seq = i32_at(10);
            let last_offset = i64_at(14);
            let delta = i32_at(22);
            let timestamp = i64_at(26);
            let coordinator_epoch = i32_at(34);
            let txn_first = i64_at(38);
            let mut e = ProducerEntry {
                epoch,
                last_timestamp: timestamp,
                coordinator_epoch,
                current_txn_first_offset: (txn_first >= 0).then_some(txn_first),
                ..ProducerEntry::default()
            };
            if last_offset >= 0 {
                e.batches.push_back(BatchMeta {
                    first_seq: if last_seq >= 0 {
                        last_seq.wrapping_sub(delta)
                    } else {
                        -1
                    },
                    last_seq,
                    base_offset: last_offset - i64::from(delta),
                    last_offset,
                });
            }
            if txn_first >= 0 {
                m.frontier.ongoing.insert(txn_first, pid);
            }
            m.producers.insert(pid, e);
        }
        Ok(m)
    }
}

#[cfg(test)]
#[path = "producer_state_tests.rs"]
mod tests;
