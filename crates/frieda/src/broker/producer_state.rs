//! Idempotent-producer state of one partition: the sequence checks of KIP-98 as Kafka's
//! `ProducerStateManager` applies them, so retried batches are deduplicated and gaps refused.
//!
//! For each producer id the partition remembers the epoch and the last five batches appended
//! (first/last sequence and offsets), as many as a producer may have in flight
//! (`max.in.flight.requests.per.connection` <= 5 with idempotence), and the max timestamp of its
//! last batch. A producer silent for `producer.id.expiration.ms` is forgotten (Kafka's
//! `ProducerStateManager.removeExpiredProducers`: the batch's own max timestamp, not the broker's
//! clock, counts), and the table never holds more than [`MAX_PRODUCERS_PER_PARTITION`] ids.

use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError;
use std::collections::{HashMap, VecDeque};

/// Batches remembered per producer, as in Kafka (`NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_TO_RETAIN: usize = 5;

/// Most producer ids one partition remembers. Past it the producers with the oldest last
/// timestamps are forgotten first (a forgotten producer's next batch is accepted as from a new
/// producer, as Kafka does after expiration). Kafka has no such bound; each entry costs about
/// 200 bytes, so this caps a partition's table near 20 MB.
pub const MAX_PRODUCERS_PER_PARTITION: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchMeta {
    first_seq: i32,
    last_seq: i32,
    base_offset: i64,
    last_offset: i64,
}

#[derive(Debug, Clone, Default)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// Max timestamp of the producer's last batch (ms): its expiration clock.
    last_timestamp: i64,
}

/// What to do with an incoming batch of an idempotent producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// In sequence (or the producer is new to this partition): append it.
    Append,
    /// A retry of a batch already appended: answer with its original base offset, append nothing.
    Duplicate {
        /// Where the original was appended.
        base_offset: i64,
        /// Its last offset.
        last_offset: i64,
    },
}

/// Most producers whose refused batches one partition remembers (see
/// [`ProducerStateTable::note_refused`]); past it the memory starts over.
pub const MAX_REFUSED_PRODUCERS: usize = 10_000;

/// Per-partition table of producer ids.
#[derive(Debug, Default)]
pub struct ProducerStateTable {
    producers: HashMap<i64, ProducerEntry>,
    /// Per producer id: the epoch and lowest base sequence of a batch this partition refused
    /// before appending it (not leading, fenced, too few in-sync replicas), until a batch
    /// covering that sequence is appended. Bounded by [`MAX_REFUSED_PRODUCERS`].
    refused: HashMap<i64, (i16, i32)>,
}

fn in_sequence(last: i32, next: i32) -> bool {
    next == last.wrapping_add(1) || (next == 0 && last == i32::MAX)
}

impl ProducerStateTable {
    /// Checks a batch before it is appended.
    ///
    /// Errors: INVALID_PRODUCER_EPOCH (47) for an epoch older than the one seen;
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45) for a gap, or a new epoch not starting at sequence 0.
    /// Non-idempotent batches (producer id < 0) always pass.
    pub fn check(&self, batch: &BatchHeader) -> Result<SequenceCheck, ResponseError> {
        if batch.producer_id < 0 {
            return Ok(SequenceCheck::Append);
        }
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            // Unknown to this partition (first batch, or state gone with old segments): accept,
            // as Kafka does for a producer without an entry.
            return Ok(SequenceCheck::Append);
        };
        if batch.producer_epoch < entry.epoch {
            return Err(ResponseError::InvalidProducerEpoch);
        }
        if batch.producer_epoch > entry.epoch {
            return if batch.base_sequence == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ResponseError::OutOfOrderSequenceNumber)
            };
        }
        let last_seq = batch.last_sequence();
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == batch.base_sequence && b.last_seq == last_seq)
        {
            return Ok(SequenceCheck::Duplicate {
                base_offset: dup.base_offset,
                last_offset: dup.last_offset,
            });
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
                Err(ResponseError::NotLeaderOrFollower)
            }
            Some(_) => Err(ResponseError::OutOfOrderSequenceNumber),
            None => Ok(SequenceCheck::Append),
        }
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

    /// Records a batch that was appended at `base_offset` (its header carries the producer id,
    /// epoch and sequences). Also used to rebuild the table from the log after a restart.
    pub fn record(&mut self, batch: &BatchHeader, base_offset: i64) {
        if batch.producer_id < 0 {
            return;
        }
        if let Some(&(epoch, seq)) = self.refused.get(&batch.producer_id) {
            if epoch != batch.producer_epoch || seq <= batch.last_sequence() {
                self.refused.remove(&batch.producer_id);
            }
        }
        let entry = self.producers.entry(batch.producer_id).or_default();
        if batch.producer_epoch != entry.epoch {
            entry.epoch = batch.producer_epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == BATCHES_TO_RETAIN {
            entry.batches.pop_front();
        }
        entry.batches.push_back(BatchMeta {
            first_seq: batch.base_sequence,
            last_seq: batch.last_sequence(),
            base_offset,
            last_offset: base_offset + batch.last_offset_delta as i64,
        });
        entry.last_timestamp = entry.last_timestamp.max(batch.max_timestamp);
        if self.producers.len() > MAX_PRODUCERS_PER_PARTITION {
            self.evict_oldest(MAX_PRODUCERS_PER_PARTITION / 100);
        }
    }

    /// Forgets the `n` producers with the oldest last timestamps.
    fn evict_oldest(&mut self, n: usize) {
        let mut by_age: Vec<(i64, i64)> = self
            .producers
            .iter()
            .map(|(&pid, e)| (e.last_timestamp, pid))
            .collect();
        by_age.sort_unstable();
        for (_, pid) in by_age.into_iter().take(n.max(1)) {
            self.producers.remove(&pid);
        }
        tracing::warn!(
            kept = self.producers.len(),
            "a partition's producer table reached its bound; forgot the producers idle longest"
        );
    }

    /// Forgets producers whose last batch's max timestamp is at least `expiration_ms` older
    /// than `now_ms` (`producer.id.expiration.ms`). Returns how many were forgotten.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| now_ms.saturating_sub(e.last_timestamp) < expiration_ms);
        before - self.producers.len()
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

    /// Number of producer ids known.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is known.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(pid: i64, epoch: i16, seq: i32, n: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: n - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: n,
        }
    }

    #[test]
    fn in_order_duplicates_and_gaps() {
        let mut t = ProducerStateTable::default();
        let b0 = batch(7, 0, 0, 3);
        assert_eq!(t.check(&b0), Ok(SequenceCheck::Append));
        t.record(&b0, 100);
        let b1 = batch(7, 0, 3, 2);
        assert_eq!(t.check(&b1), Ok(SequenceCheck::Append));
        t.record(&b1, 103);
        // retry of b0 and of b1
        assert_eq!(
            t.check(&b0),
            Ok(SequenceCheck::Duplicate {
                base_offset: 100,
                last_offset: 102
            })
        );
        assert_eq!(
            t.check(&b1),
            Ok(SequenceCheck::Duplicate {
                base_offset: 103,
                last_offset: 104
            })
        );
        // gap
        assert_eq!(
            t.check(&batch(7, 0, 9, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        // next in order
        assert_eq!(t.check(&batch(7, 0, 5, 1)), Ok(SequenceCheck::Append));
    }

    #[test]
    fn epochs_fence_and_reset() {
        let mut t = ProducerStateTable::default();
        t.record(&batch(1, 3, 0, 1), 0);
        assert_eq!(
            t.check(&batch(1, 2, 1, 1)),
            Err(ResponseError::InvalidProducerEpoch)
        );
        assert_eq!(
            t.check(&batch(1, 4, 5, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        assert_eq!(t.check(&batch(1, 4, 0, 1)), Ok(SequenceCheck::Append));
        t.record(&batch(1, 4, 0, 1), 1);
        assert_eq!(t.check(&batch(1, 4, 1, 1)), Ok(SequenceCheck::Append));
    }

    #[test]
    fn producers_expire_by_their_last_batch_timestamp_and_the_table_is_bounded() {
        let mut t = ProducerStateTable::default();
        let mut b = batch(1, 0, 0, 1);
        b.max_timestamp = 1_000;
        t.record(&b, 0);
        let mut b2 = batch(2, 0, 0, 1);
        b2.max_timestamp = 5_000;
        t.record(&b2, 1);
        assert_eq!(t.last_batch_offsets(), HashMap::from([(1, 0), (2, 1)]));
        assert_eq!(t.expire(5_999, 5_000), 0);
        assert_eq!(t.expire(6_000, 5_000), 1);
        assert_eq!(t.len(), 1);
        for pid in 0..(MAX_PRODUCERS_PER_PARTITION as i64 + 10) {
            let mut b = batch(100 + pid, 0, 0, 1);
            b.max_timestamp = pid;
            t.record(&b, pid);
        }
        assert!(t.len() <= MAX_PRODUCERS_PER_PARTITION);
        // The newest survive.
        let last = 100 + MAX_PRODUCERS_PER_PARTITION as i64 + 9;
        assert!(t.last_batch_offsets().contains_key(&last));
    }

    #[test]
    fn only_five_batches_are_remembered_and_unknown_producers_pass() {
        let mut t = ProducerStateTable::default();
        for i in 0..6 {
            t.record(&batch(2, 0, i, 1), i as i64);
        }
        // the first batch fell out of the window: no longer a duplicate, and out of order
        assert_eq!(
            t.check(&batch(2, 0, 0, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        assert_eq!(
            t.check(&batch(2, 0, 5, 1)),
            Ok(SequenceCheck::Duplicate {
                base_offset: 5,
                last_offset: 5
            })
        );
        assert_eq!(t.check(&batch(99, 0, 42, 1)), Ok(SequenceCheck::Append));
        assert_eq!(t.check(&batch(-1, -1, -1, 1)), Ok(SequenceCheck::Append));
    }

    /// Pipelined batches straddling a leadership flap: seq 10 refused before its append
    /// (NOT_LEADER_OR_FOLLOWER), seq 11 arriving after the flap must be refused the same way,
    /// not called out of order; once 10 is appended, 11 goes in; a gap nobody refused is still
    /// OUT_OF_ORDER_SEQUENCE_NUMBER.
    #[test]
    fn a_gap_this_partition_refused_is_refused_again_not_out_of_order() {
        let mut t = ProducerStateTable::default();
        t.record(&batch(7, 0, 9, 1), 100);
        t.note_refused(&batch(7, 0, 10, 1));
        assert_eq!(
            t.check(&batch(7, 0, 11, 1)),
            Err(ResponseError::NotLeaderOrFollower)
        );
        assert_eq!(t.check(&batch(7, 0, 10, 1)), Ok(SequenceCheck::Append));
        t.record(&batch(7, 0, 10, 1), 101);
        assert_eq!(t.check(&batch(7, 0, 11, 1)), Ok(SequenceCheck::Append));
        t.record(&batch(7, 0, 11, 1), 102);
        // the refusal is forgotten once covered: a real gap is out of order again
        assert_eq!(
            t.check(&batch(7, 0, 13, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        // another producer's refusal explains nothing
        t.note_refused(&batch(8, 0, 12, 1));
        assert_eq!(
            t.check(&batch(7, 0, 13, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        // a refusal under an older epoch explains nothing either
        t.note_refused(&batch(7, 0, 12, 1));
        t.record(&batch(7, 1, 0, 1), 103);
        assert_eq!(
            t.check(&batch(7, 1, 2, 1)),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
    }
}
