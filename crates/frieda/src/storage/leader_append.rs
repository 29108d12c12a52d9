//! A leader's decision on one batch, taken under its partition's lock just before the append
//! (Kafka's `UnifiedLog.append` with `analyzeAndValidateProducerState`): the log must be online,
//! this replica must lead (the epoch the batch is stamped with), and the producer's state must
//! take the batch: a new batch is appended, a retry of one of the producer's last five batches
//! is a duplicate answered with the original's offsets. Sans-IO over [`LeaderLog`]: the
//! broker's partition ([`super::partition::Partition`]) and the cluster simulator's leader
//! decide through [`decide`], so the order of these checks is one piece of code (issue 57: the
//! simulator runs the broker's own glue).

use frieda_log::{BatchHeader, ProducerError, SequenceCheck};
use kafka_protocol::error::ResponseError;

use crate::replication::Replication;

/// How an append's batch is checked against its producer's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// A client's data batch (or a coordinator's unsequenced one): sequences, epoch and
    /// transaction state; `verification` is the token of a KIP-890 verification the append
    /// completes, required when `require_verification` and the batch opens a transaction.
    Client {
        /// The verification token (see `Partition::begin_verification`).
        verification: Option<u64>,
        /// Whether a batch opening a transaction needs one.
        require_verification: bool,
    },
    /// A transaction marker from a coordinator at `coordinator_epoch` (transactions v2 when
    /// `bumps_epoch`).
    Marker {
        /// The coordinator's epoch.
        coordinator_epoch: i32,
        /// Transactions v2: the marker carries the bumped epoch.
        bumps_epoch: bool,
    },
}

impl ProducerCheck {
    /// A batch nobody verified (idempotent producers, the coordinators' own writes).
    pub const PLAIN: ProducerCheck = ProducerCheck::Client {
        verification: None,
        require_verification: false,
    };

    /// A batch whose transaction was verified (KIP-890): it may open a transaction only with
    /// `token`, the one `Partition::begin_verification` gave (`None`: the transaction was
    /// already open here, so it may only continue it).
    pub fn verified(token: Option<u64>) -> ProducerCheck {
        ProducerCheck::Client {
            verification: token,
            require_verification: true,
        }
    }
}

/// The Kafka error for a producer-state refusal.
pub fn producer_error(e: ProducerError) -> ResponseError {
    match e {
        ProducerError::InvalidProducerEpoch => ResponseError::InvalidProducerEpoch,
        ProducerError::OutOfOrderSequence => ResponseError::OutOfOrderSequenceNumber,
        ProducerError::RetryRefused => ResponseError::NotLeaderOrFollower,
        ProducerError::InvalidTxnState => ResponseError::InvalidTxnState,
        ProducerError::CoordinatorFenced => ResponseError::TransactionCoordinatorFenced,
    }
}

/// Whether a leader takes a produce at all, checked before its batch is decided (Kafka's
/// `Partition.appendRecordsToLeader` checks of the leadership and of `min.insync.replicas`,
/// behind Frieda's lease): refused here, a retry leaves no duplicate in the log. In this
/// order: the lease (`lease_holds`; a leader that may have been fenced, e.g. it was paused,
/// takes nothing, as another broker may lead by now), then the role and, for `acks=all`, the
/// ISR against `min_insync` ([`Replication::check_writable`]). Returns the leader epoch it
/// would append in. The broker's produce handler (`handlers::produce::check_append`) and the
/// cluster simulator's leaders call it.
///
/// Errors: NOT_LEADER_OR_FOLLOWER (6), NOT_ENOUGH_REPLICAS (19).
pub fn admit_produce(
    repl: &Replication,
    lease_holds: bool,
    acks_all: bool,
    min_insync: usize,
) -> Result<i32, ResponseError> {
    if !lease_holds {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    repl.check_writable(acks_all, min_insync)
}

/// The answer to an appended (or duplicate) produce once its wait ended with `waited`: the
/// flush when fsync is on and, for `acks=all`, the replicas (Kafka's
/// `checkEnoughReplicasReachOffset`, [`Replication::ack_status`]); `Ok` when there was nothing
/// to wait for. Then the lease again (`lease_holds`): a leader that lost it while it waited may
/// have been replaced, and its records may not survive on the new leader, so the producer
/// retries (an idempotent retry is deduplicated wherever the batch survived). The broker's
/// produce handler and the simulator's leaders answer through it.
///
/// Errors: the wait's (REQUEST_TIMED_OUT (7), NOT_ENOUGH_REPLICAS_AFTER_APPEND (20),
/// NOT_LEADER_OR_FOLLOWER (6), KAFKA_STORAGE_ERROR (56)), then NOT_LEADER_OR_FOLLOWER without
/// the lease.
pub fn answer_produce(
    waited: Result<(), ResponseError>,
    lease_holds: bool,
) -> Result<(), ResponseError> {
    waited?;
    if !lease_holds {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    Ok(())
}

/// What [`decide`] reads and notes of a leader's log and producer state (held under the
/// partition's lock for the whole decision and the append that follows).
pub trait LeaderLog {
    /// Whether the log is offline (a failed fsync took it offline).
    fn is_offline(&self) -> bool;
    /// The leader epoch an append is stamped with now
    /// ([`Replication::append_epoch`](crate::replication::Replication::append_epoch)).
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when this replica does not lead.
    fn append_epoch(&self) -> Result<i32, ResponseError>;
    /// Notes `batch` refused before its append (`ProducerStateManager::note_refused`), so that
    /// a later batch of its producer is refused too rather than called out of order.
    fn note_refused(&mut self, batch: &BatchHeader);
    /// The producer state's check of a data batch (`ProducerStateManager::check`).
    fn check_producer(
        &self,
        batch: &BatchHeader,
        verification: Option<u64>,
        require_verification: bool,
    ) -> Result<SequenceCheck, ProducerError>;
    /// The producer state's check of a transaction marker
    /// (`ProducerStateManager::check_marker`).
    fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        bumps_epoch: bool,
    ) -> Result<(), ProducerError>;
}

/// What the leader does with a batch that passed [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Append it, stamped with `leader_epoch`.
    Append {
        /// The leader epoch of the append.
        leader_epoch: i32,
    },
    /// A retry of a batch already in the log at `base_offset..=last_offset`: nothing is
    /// appended; the answer is the original's offsets, once they are acknowledged as an append
    /// in `leader_epoch` would be.
    Duplicate {
        /// The original's first offset.
        base_offset: i64,
        /// The original's last offset (what the answer waits for).
        last_offset: i64,
        /// The leader epoch the wait is in.
        leader_epoch: i32,
    },
}

/// The leader's decision on `batch` checked as `check`, in this order: the log online (not even
/// a duplicate is confirmed by a log whose fsync failed), the leadership (a refusal is noted in
/// the producer state), then the producer state.
///
/// Errors: KAFKA_STORAGE_ERROR (56) offline, NOT_LEADER_OR_FOLLOWER (6) not leading, and the
/// producer state's refusals ([`producer_error`]): INVALID_PRODUCER_EPOCH (47),
/// OUT_OF_ORDER_SEQUENCE_NUMBER (45), INVALID_TXN_STATE (48), TRANSACTION_COORDINATOR_FENCED
/// (52), NOT_LEADER_OR_FOLLOWER for a retry of a batch refused before.
pub fn decide(
    log: &mut impl LeaderLog,
    batch: &BatchHeader,
    check: ProducerCheck,
) -> Result<Decision, ResponseError> {
    if log.is_offline() {
        return Err(ResponseError::KafkaStorageError);
    }
    let leader_epoch = match log.append_epoch() {
        Ok(epoch) => epoch,
        Err(e) => {
            log.note_refused(batch);
            return Err(e);
        }
    };
    let checked = match check {
        ProducerCheck::Client {
            verification,
            require_verification,
        } => log.check_producer(batch, verification, require_verification),
        ProducerCheck::Marker {
            coordinator_epoch,
            bumps_epoch,
        } => log
            .check_marker(
                batch.producer_id,
                batch.producer_epoch,
                coordinator_epoch,
                bumps_epoch,
            )
            .map(|()| SequenceCheck::Append),
    };
    Ok(match checked.map_err(producer_error)? {
        SequenceCheck::Duplicate {
            base_offset,
            last_offset,
        } => Decision::Duplicate {
            base_offset,
            last_offset,
            leader_epoch,
        },
        SequenceCheck::Append => Decision::Append { leader_epoch },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use frieda_meta::PartitionState;

    /// Before the append: the lease first, then the role, then the ISR for `acks=all`; after
    /// the wait: its error first, then the lease again.
    #[test]
    fn a_produce_is_admitted_and_answered_in_one_order() {
        let r = Replication::default();
        let state = PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1],
            leader: 1,
            leader_epoch: 7,
            partition_epoch: 7,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        };
        r.become_follower(1, 2, 6, 0);
        assert_eq!(
            admit_produce(&r, true, false, 2),
            Err(ResponseError::NotLeaderOrFollower)
        );
        r.become_leader(1, &state, 0, 0);
        assert_eq!(
            admit_produce(&r, false, false, 2),
            Err(ResponseError::NotLeaderOrFollower)
        );
        assert_eq!(
            admit_produce(&r, true, true, 2),
            Err(ResponseError::NotEnoughReplicas)
        );
        assert_eq!(admit_produce(&r, true, false, 2), Ok(7));
        assert_eq!(answer_produce(Ok(()), true), Ok(()));
        assert_eq!(
            answer_produce(Ok(()), false),
            Err(ResponseError::NotLeaderOrFollower)
        );
        assert_eq!(
            answer_produce(Err(ResponseError::RequestTimedOut), false),
            Err(ResponseError::RequestTimedOut)
        );
    }

    /// A leader log whose answers are set by the test; it records the refusals noted.
    struct Fake {
        offline: bool,
        epoch: Result<i32, ResponseError>,
        producer: Result<SequenceCheck, ProducerError>,
        refused: usize,
    }

    impl LeaderLog for Fake {
        fn is_offline(&self) -> bool {
            self.offline
        }
        fn append_epoch(&self) -> Result<i32, ResponseError> {
            self.epoch
        }
        fn note_refused(&mut self, _: &BatchHeader) {
            self.refused += 1;
        }
        fn check_producer(
            &self,
            _: &BatchHeader,
            _: Option<u64>,
            _: bool,
        ) -> Result<SequenceCheck, ProducerError> {
            self.producer
        }
        fn check_marker(&self, _: i64, _: i16, _: i32, _: bool) -> Result<(), ProducerError> {
            self.producer.map(|_| ())
        }
    }

    fn header() -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            records_count: 1,
        }
    }

    #[test]
    fn the_checks_run_in_the_brokers_order() {
        let duplicate = SequenceCheck::Duplicate {
            base_offset: 10,
            last_offset: 12,
        };
        let mut log = Fake {
            offline: false,
            epoch: Ok(4),
            producer: Ok(duplicate),
            refused: 0,
        };
        // A retry is answered with its original's offsets, in the current leader epoch.
        assert_eq!(
            decide(&mut log, &header(), ProducerCheck::PLAIN),
            Ok(Decision::Duplicate {
                base_offset: 10,
                last_offset: 12,
                leader_epoch: 4
            })
        );
        // Not even a duplicate is confirmed by an offline log.
        log.offline = true;
        assert_eq!(
            decide(&mut log, &header(), ProducerCheck::PLAIN),
            Err(ResponseError::KafkaStorageError)
        );
        // Not leading: refused, and the refusal is noted for the producer's later batches.
        log.offline = false;
        log.epoch = Err(ResponseError::NotLeaderOrFollower);
        assert_eq!(
            decide(&mut log, &header(), ProducerCheck::PLAIN),
            Err(ResponseError::NotLeaderOrFollower)
        );
        assert_eq!(log.refused, 1);
        // The producer state's refusal becomes its Kafka error; a marker passes as an append.
        log.epoch = Ok(4);
        log.producer = Err(ProducerError::OutOfOrderSequence);
        assert_eq!(
            decide(&mut log, &header(), ProducerCheck::verified(Some(1))),
            Err(ResponseError::OutOfOrderSequenceNumber)
        );
        log.producer = Ok(SequenceCheck::Append);
        let marker = ProducerCheck::Marker {
            coordinator_epoch: 2,
            bumps_epoch: true,
        };
        assert_eq!(
            decide(&mut log, &header(), marker),
            Ok(Decision::Append { leader_epoch: 4 })
        );
    }
}
