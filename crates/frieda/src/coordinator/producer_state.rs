//! Idempotent-producer state of one partition: the sequence checks of KIP-98 as Kafka's
//! `ProducerStateManager` applies them, so retried batches are deduplicated and gaps refused.
//!
//! For each producer id the partition remembers the epoch and the last five batches appended
//! (first/last sequence and offsets), as many as a producer may have in flight
//! (`max.in.flight.requests.per.connection` <= 5 with idempotence).

use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError;
use std::collections::{HashMap, VecDeque};

/// Batches remembered per producer, as in Kafka (`NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_TO_RETAIN: usize = 5;

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
}

/// What to do with an incoming batch of an idempotent producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// In sequence (or the producer is new to this partition): append it.
    Append,
    /// A retry of a batch already appended: answer with its original base offset, append nothing.
    Duplicate { base_offset: i64 },
}

/// Per-partition table of producer ids.
#[derive(Debug, Default)]
pub struct ProducerStateTable {
    producers: HashMap<i64, ProducerEntry>,
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
            });
        }
        match entry.batches.back() {
            Some(last) if in_sequence(last.last_seq, batch.base_sequence) => {
                Ok(SequenceCheck::Append)
            }
            Some(_) => Err(ResponseError::OutOfOrderSequenceNumber),
            None => Ok(SequenceCheck::Append),
        }
    }

    /// Records a batch that was appended at `base_offset` (its header carries the producer id,
    /// epoch and sequences). Also used to rebuild the table from the log after a restart.
    pub fn record(&mut self, batch: &BatchHeader, base_offset: i64) {
        if batch.producer_id < 0 {
            return;
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
            Ok(SequenceCheck::Duplicate { base_offset: 100 })
        );
        assert_eq!(
            t.check(&b1),
            Ok(SequenceCheck::Duplicate { base_offset: 103 })
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
            Ok(SequenceCheck::Duplicate { base_offset: 5 })
        );
        assert_eq!(t.check(&batch(99, 0, 42, 1)), Ok(SequenceCheck::Append));
        assert_eq!(t.check(&batch(-1, -1, -1, 1)), Ok(SequenceCheck::Append));
    }
}
