use super::*;
use crate::control::TRANSACTIONAL_BIT;

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

fn txn_batch(pid: i64, epoch: i16, seq: i32, n: i32) -> BatchHeader {
    let mut b = batch(pid, epoch, seq, n);
    b.attributes = TRANSACTIONAL_BIT;
    b
}

fn marker(control: ControlType, coordinator_epoch: i32) -> EndTxnMarker {
    EndTxnMarker {
        control,
        coordinator_epoch,
    }
}

fn check(t: &ProducerStateManager, b: &BatchHeader) -> Result<SequenceCheck, ProducerError> {
    t.check(b, None, false)
}

#[test]
fn in_order_duplicates_and_gaps() {
    let mut t = ProducerStateManager::default();
    let b0 = batch(7, 0, 0, 3);
    assert_eq!(check(&t, &b0), Ok(SequenceCheck::Append));
    t.record(&b0, 100);
    let b1 = batch(7, 0, 3, 2);
    assert_eq!(check(&t, &b1), Ok(SequenceCheck::Append));
    t.record(&b1, 103);
    // retry of b0 and of b1
    assert_eq!(
        check(&t, &b0),
        Ok(SequenceCheck::Duplicate {
            base_offset: 100,
            last_offset: 102
        })
    );
    assert_eq!(
        check(&t, &b1),
        Ok(SequenceCheck::Duplicate {
            base_offset: 103,
            last_offset: 104
        })
    );
    // gap
    assert_eq!(
        check(&t, &batch(7, 0, 9, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    // next in order
    assert_eq!(check(&t, &batch(7, 0, 5, 1)), Ok(SequenceCheck::Append));
}

#[test]
fn epochs_fence_and_reset() {
    let mut t = ProducerStateManager::default();
    t.record(&batch(1, 3, 0, 1), 0);
    assert_eq!(
        check(&t, &batch(1, 2, 1, 1)),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(
        check(&t, &batch(1, 4, 5, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    assert_eq!(check(&t, &batch(1, 4, 0, 1)), Ok(SequenceCheck::Append));
    t.record(&batch(1, 4, 0, 1), 1);
    assert_eq!(check(&t, &batch(1, 4, 1, 1)), Ok(SequenceCheck::Append));
}

#[test]
fn producers_expire_by_their_last_batch_timestamp_and_the_table_is_bounded() {
    let mut t = ProducerStateManager::default();
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
    let mut t = ProducerStateManager::default();
    for i in 0..6 {
        t.record(&batch(2, 0, i, 1), i as i64);
    }
    // the first batch fell out of the window: no longer a duplicate, and out of order
    assert_eq!(
        check(&t, &batch(2, 0, 0, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    assert_eq!(
        check(&t, &batch(2, 0, 5, 1)),
        Ok(SequenceCheck::Duplicate {
            base_offset: 5,
            last_offset: 5
        })
    );
    assert_eq!(check(&t, &batch(99, 0, 0, 1)), Ok(SequenceCheck::Append));
    assert_eq!(check(&t, &batch(-1, -1, -1, 1)), Ok(SequenceCheck::Append));
}

/// A producer's first batch on a partition starts at sequence 0. A first batch at 4 means the
/// batch at 0 was refused here (or lost with a failed leader): appending it would make
/// librdkafka take the batch at 0 as written (implicit acknowledgement) although it never was
/// (tests/jepsen power-loss seed 2231). Refused as after a refused batch, until the partition
/// may have forgotten producers (an expiry, or its log start moved): then any sequence passes,
/// as in Kafka.
#[test]
fn an_unknown_producer_starts_at_sequence_zero_unless_it_may_have_been_forgotten() {
    let mut t = ProducerStateManager::default();
    assert_eq!(
        check(&t, &batch(7, 0, 4, 1)),
        Err(ProducerError::RetryRefused)
    );
    assert_eq!(
        check(&t, &batch(7, 3, 4, 1)),
        Err(ProducerError::RetryRefused)
    );
    assert_eq!(check(&t, &batch(7, 0, 0, 4)), Ok(SequenceCheck::Append));
    t.record(&batch(7, 0, 0, 4), 0);
    assert_eq!(check(&t, &batch(7, 0, 4, 1)), Ok(SequenceCheck::Append));

    // an expiry makes the table forgetful
    let mut b = batch(8, 0, 0, 1);
    b.max_timestamp = 1_000;
    let mut t = ProducerStateManager::default();
    t.record(&b, 0);
    assert!(!t.would_expire(5_999, 5_000));
    assert!(t.would_expire(6_000, 5_000));
    assert!(!t.may_have_forgotten());
    assert_eq!(t.expire(6_000, 5_000), 1);
    assert!(t.may_have_forgotten());
    assert_eq!(check(&t, &batch(8, 0, 1, 1)), Ok(SequenceCheck::Append));

    // so does the partition (its log start moved)
    let mut t = ProducerStateManager::default();
    t.set_may_have_forgotten();
    assert_eq!(check(&t, &batch(9, 0, 42, 1)), Ok(SequenceCheck::Append));
}

/// Pipelined batches straddling a leadership flap: seq 10 refused before its append
/// (NOT_LEADER_OR_FOLLOWER), seq 11 arriving after the flap must be refused the same way,
/// not called out of order; once 10 is appended, 11 goes in; a gap nobody refused is still
/// OUT_OF_ORDER_SEQUENCE_NUMBER.
#[test]
fn a_gap_this_partition_refused_is_refused_again_not_out_of_order() {
    let mut t = ProducerStateManager::default();
    t.record(&batch(7, 0, 9, 1), 100);
    t.note_refused(&batch(7, 0, 10, 1));
    assert_eq!(
        check(&t, &batch(7, 0, 11, 1)),
        Err(ProducerError::RetryRefused)
    );
    assert_eq!(check(&t, &batch(7, 0, 10, 1)), Ok(SequenceCheck::Append));
    t.record(&batch(7, 0, 10, 1), 101);
    assert_eq!(check(&t, &batch(7, 0, 11, 1)), Ok(SequenceCheck::Append));
    t.record(&batch(7, 0, 11, 1), 102);
    // the refusal is forgotten once covered: a real gap is out of order again
    assert_eq!(
        check(&t, &batch(7, 0, 13, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    // another producer's refusal explains nothing
    t.note_refused(&batch(8, 0, 12, 1));
    assert_eq!(
        check(&t, &batch(7, 0, 13, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    // a refusal under an older epoch explains nothing either
    t.note_refused(&batch(7, 0, 12, 1));
    t.record(&batch(7, 1, 0, 1), 103);
    assert_eq!(
        check(&t, &batch(7, 1, 2, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
}

/// A transaction opens at its first batch, holds the last stable offset back while open and
/// until its marker is below the high watermark; a non-transactional batch of the producer is
/// refused meanwhile; the marker closes it and reports it.
#[test]
fn transactions_open_hold_the_last_stable_offset_and_close_with_a_marker() {
    let mut t = ProducerStateManager::default();
    t.record(&batch(1, 0, 0, 5), 0);
    assert_eq!(t.record(&txn_batch(2, 0, 0, 2), 5), Some(5));
    assert_eq!(t.record(&txn_batch(2, 0, 2, 2), 7), None, "already open");
    assert_eq!(t.frontier().last_stable_offset(9), 5);
    assert_eq!(
        check(&t, &batch(2, 0, 4, 1)),
        Err(ProducerError::InvalidTxnState)
    );
    assert_eq!(check(&t, &txn_batch(2, 0, 4, 1)), Ok(SequenceCheck::Append));
    let done = t
        .record_marker(2, 0, marker(ControlType::Abort, 3), 9, 0)
        .unwrap();
    assert_eq!(
        done,
        CompletedTxn {
            producer_id: 2,
            first_offset: 5,
            last_offset: 9,
            aborted: true
        }
    );
    assert_eq!(t.last_stable_offset_after(&done), 10);
    // the marker is not replicated yet: still unstable below a high watermark at the marker
    assert_eq!(t.frontier().last_stable_offset(9), 5);
    assert_eq!(t.frontier().last_stable_offset(10), 10);
    assert!(t.on_high_watermark(10));
    assert_eq!(t.frontier().last_stable_offset(10), 10);
    assert!(t.frontier().ongoing.is_empty() && t.frontier().unreplicated.is_empty());
    // a second marker closes nothing
    assert_eq!(
        t.record_marker(2, 0, marker(ControlType::Abort, 3), 10, 0),
        None
    );
}

/// KIP-890 part 1: a transactional batch that would open a transaction needs the token of a
/// verification the coordinator confirmed; a marker voids it (a late write of a finished
/// transaction cannot open a hanging one).
#[test]
fn opening_a_transaction_needs_a_verification_a_marker_voids() {
    let mut t = ProducerStateManager::default();
    let b = txn_batch(5, 0, 0, 1);
    assert_eq!(t.check(&b, None, true), Err(ProducerError::InvalidTxnState));
    let token = t.begin_verification(5, 0, false).unwrap();
    assert_eq!(
        t.begin_verification(5, 0, false),
        Some(token),
        "same epoch, same token"
    );
    assert_eq!(
        t.check(&b, Some(token + 1), true),
        Err(ProducerError::InvalidTxnState)
    );
    t.record_marker(5, 0, marker(ControlType::Commit, 0), 0, 0);
    assert_eq!(
        t.check(&b, Some(token), true),
        Err(ProducerError::InvalidTxnState)
    );
    let token = t.begin_verification(5, 0, false).unwrap();
    assert_eq!(t.check(&b, Some(token), true), Ok(SequenceCheck::Append));
    t.record(&b, 1);
    assert_eq!(
        t.begin_verification(5, 0, false),
        None,
        "open here: nothing to verify"
    );
    assert_eq!(
        t.check(&txn_batch(5, 0, 1, 1), None, true),
        Ok(SequenceCheck::Append)
    );
}

/// Transactions v2 (KIP-890 part 2): EndTxn answers with the bumped epoch before the markers
/// are written, so the producer's next transaction may start verifying a partition (at the
/// bumped epoch) while the previous transaction is still open there. The previous
/// transaction's marker carries that same epoch and must not void the verification: the
/// coordinator adds the partition once the markers are written, and the append then needs its
/// token (Kafka's `UnifiedLog.updateProducers`, `isV2NextTransactionStarted`). franz-go's
/// `TestTxnEtl` got INVALID_TXN_STATE on the first produce of a transaction so.
#[test]
fn a_v2_verification_at_the_bumped_epoch_survives_the_previous_transactions_marker() {
    let mut t = ProducerStateManager::default();
    // Transaction 1 at epoch 0 is open here; EndTxn(commit) bumped the epoch to 1.
    t.record(&txn_batch(5, 0, 0, 1), 0);
    // Transaction 2's first batch (epoch 1) arrives before transaction 1's marker.
    let token = t.begin_verification(5, 1, true).unwrap();
    // The marker of transaction 1, with the bumped epoch, lands; then the coordinator
    // (CompleteCommit by now) adds the partition to transaction 2 and the batch is appended.
    t.record_marker(5, 1, marker(ControlType::Commit, 0), 1, 0);
    let first = txn_batch(5, 1, 0, 1);
    assert_eq!(
        t.check(&first, Some(token), true),
        Ok(SequenceCheck::Append)
    );
    t.record(&first, 2);
    assert_eq!(t.begin_verification(5, 1, true), None, "open here now");

    // A marker with another epoch (transaction 2 fenced: epoch 2 aborts) voids a v2
    // verification, and a v1 verification is voided by any marker (the ABA case KIP-890
    // part 1 guards against: the late write of a finished transaction).
    let mut t = ProducerStateManager::default();
    t.record(&txn_batch(6, 0, 0, 1), 0);
    let token = t.begin_verification(6, 1, true).unwrap();
    t.record_marker(6, 2, marker(ControlType::Abort, 0), 1, 0);
    assert_eq!(
        t.check(&txn_batch(6, 2, 0, 1), Some(token), true),
        Err(ProducerError::InvalidTxnState)
    );
    let mut t = ProducerStateManager::default();
    t.record(&txn_batch(7, 0, 0, 1), 0);
    let token = t.begin_verification(7, 0, false);
    assert_eq!(token, None, "v1: the same epoch's transaction is open here");
    t.record_marker(7, 0, marker(ControlType::Commit, 0), 1, 0);
    let token = t.begin_verification(7, 0, false).unwrap();
    t.record_marker(7, 0, marker(ControlType::Abort, 0), 2, 0);
    assert_eq!(
        t.check(&txn_batch(7, 0, 1, 1), Some(token), true),
        Err(ProducerError::InvalidTxnState)
    );
}

/// Markers: transactions v1 keep the epoch (an older one is fenced), v2 must bump it, except a
/// retried marker of a transaction already closed; an older coordinator epoch is fenced.
#[test]
fn markers_are_checked_by_epoch_and_coordinator_epoch() {
    let mut t = ProducerStateManager::default();
    t.record(&txn_batch(9, 4, 0, 1), 0);
    assert_eq!(
        t.check_marker(9, 3, 0, false),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(t.check_marker(9, 4, 0, false), Ok(()));
    assert_eq!(
        t.check_marker(9, 4, 0, true),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(t.check_marker(9, 5, 0, true), Ok(()));
    t.record_marker(9, 5, marker(ControlType::Commit, 2), 1, 0);
    assert_eq!(t.check_marker(9, 5, 2, true), Ok(()), "a retried v2 marker");
    assert_eq!(
        t.check_marker(9, 5, 1, false),
        Err(ProducerError::CoordinatorFenced)
    );
    // the bumped epoch starts its sequences at 0
    assert_eq!(check(&t, &txn_batch(9, 5, 0, 1)), Ok(SequenceCheck::Append));
    assert_eq!(
        check(&t, &txn_batch(9, 4, 1, 1)),
        Err(ProducerError::InvalidProducerEpoch)
    );
}

#[test]
fn a_snapshot_round_trips_in_kafkas_format_and_refuses_damage() {
    let mut t = ProducerStateManager::default();
    t.record(&batch(1, 2, 10, 3), 100);
    t.record(&txn_batch(2, 0, 0, 2), 103);
    t.record_marker(3, 7, marker(ControlType::Abort, 4), 105, 99);
    let bytes = t.snapshot();
    assert_eq!(&bytes[..2], &1i16.to_be_bytes());
    assert_eq!(bytes.len(), 6 + 4 + 3 * 46);
    let back = ProducerStateManager::from_snapshot(&bytes).unwrap();
    assert_eq!(back.describe(), t.describe());
    assert_eq!(back.frontier().ongoing, t.frontier().ongoing);
    assert_eq!(
        check(&back, &batch(1, 2, 10, 3)),
        Ok(SequenceCheck::Duplicate {
            base_offset: 100,
            last_offset: 102
        })
    );
    assert_eq!(check(&back, &batch(1, 2, 13, 1)), Ok(SequenceCheck::Append));
    let mut bad = bytes.clone();
    bad[20] ^= 1;
    assert!(ProducerStateManager::from_snapshot(&bad).is_err());
    assert!(ProducerStateManager::from_snapshot(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn producers_with_an_open_transaction_never_expire() {
    let mut t = ProducerStateManager::default();
    t.record(&txn_batch(1, 0, 0, 1), 0);
    assert_eq!(t.expire(i64::MAX, 1), 0);
    t.record_marker(1, 0, marker(ControlType::Commit, 0), 1, 0);
    assert_eq!(t.expire(i64::MAX, 1), 1);
}

/// The coordinators' own transactional writes carry no sequence: two of them are never
/// duplicates of each other, and they open and close transactions like any other.
#[test]
fn unsequenced_transactional_writes_are_checked_for_epoch_and_state_only() {
    let mut t = ProducerStateManager::default();
    let first = txn_batch(3, 2, -1, 1);
    assert_eq!(check(&t, &first), Ok(SequenceCheck::Append));
    assert_eq!(t.record(&first, 10), Some(10));
    assert_eq!(
        check(&t, &first),
        Ok(SequenceCheck::Append),
        "not a duplicate"
    );
    t.record(&first, 11);
    assert_eq!(
        check(&t, &txn_batch(3, 1, -1, 1)),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(
        t.record_marker(3, 2, marker(ControlType::Commit, 0), 12, 0)
            .map(|c| c.first_offset),
        Some(10)
    );
}
