//! Transactions in the partition log: markers, the last stable offset, the aborted transactions
//! index, and the producer state rebuilt from snapshots after a restart or a truncation.

use super::*;
use crate::batch::testutil::simple_batch;
use crate::batch::{build_batch, BATCH_HEADER_LEN};
use crate::closed_segment::{RemoteIndexes, INDEXES_MAGIC_V1};
use crate::compression::Codec;
use crate::control::{ControlType, TRANSACTIONAL_BIT};
use crate::producer_state::ProducerError;
use std::fs;

const NOW: i64 = 1_700_000_000_000;

/// A batch of `n` records of producer `pid` at `epoch`, sequences from `seq`.
fn pbatch(pid: i64, epoch: i16, seq: i32, n: usize, transactional: bool) -> BytesMut {
    let b = simple_batch(n, NOW, 10);
    let mut h = BatchHeader::parse(&b).unwrap();
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.attributes = if transactional { TRANSACTIONAL_BIT } else { 0 };
    BytesMut::from(&build_batch(&h, Codec::None, &b[BATCH_HEADER_LEN..])[..])
}

fn abort(coordinator_epoch: i32) -> EndTxnMarker {
    EndTxnMarker {
        control: ControlType::Abort,
        coordinator_epoch,
    }
}

fn commit(coordinator_epoch: i32) -> EndTxnMarker {
    EndTxnMarker {
        control: ControlType::Commit,
        coordinator_epoch,
    }
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    }
}

fn append(log: &mut PartitionLog, b: BytesMut) -> AppendInfo {
    let h = BatchHeader::parse(&b).unwrap();
    assert_eq!(
        log.check_producer(&h, None, false),
        Ok(SequenceCheck::Append)
    );
    log.append(b, NOW).unwrap()
}

/// An aborted transaction: the LSO waits at its first offset while it is open, the abort
/// marker closes it and indexes it in `.txnindex` (34 bytes, Kafka's format), and a fetch over
/// its range gets it back; a committed one is not indexed.
#[test]
fn an_aborted_transaction_holds_the_lso_then_is_indexed_for_fetches() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), LogConfig::default(), NOW).unwrap();
    append(&mut log, pbatch(-1, -1, -1, 2, false)); // 0-1
    append(&mut log, pbatch(10, 0, 0, 3, true)); // 2-4, txn of 10 opens at 2
    append(&mut log, pbatch(-1, -1, -1, 1, false)); // 5
    append(&mut log, pbatch(11, 0, 0, 1, true)); // 6, txn of 11 opens at 6
    let r = log.reader();
    assert_eq!(r.last_stable_offset(7), 2);
    assert_eq!(r.first_unstable_offset(), Some(2));
    let m = log.append_marker(10, 0, abort(5), false, NOW).unwrap();
    assert_eq!(m.base_offset, 7);
    assert_eq!(r.last_stable_offset(8), 6, "11's transaction is still open");
    let c = log.append_marker(11, 0, commit(5), false, NOW).unwrap();
    assert_eq!(c.base_offset, 8);
    assert_eq!(r.last_stable_offset(9), 9);
    assert_eq!(
        r.last_stable_offset(8),
        6,
        "the commit marker is not below the HW yet"
    );
    let want = AbortedTxn {
        producer_id: 10,
        first_offset: 2,
        last_offset: 7,
        last_stable_offset: 6,
    };
    assert_eq!(r.aborted_transactions(0, 9), vec![want]);
    assert_eq!(r.aborted_transactions(8, 9), vec![]);
    assert_eq!(r.aborted_transactions(0, 2), vec![]);
    let idx = dir.path().join("00000000000000000000.txnindex");
    assert_eq!(fs::metadata(&idx).unwrap().len(), 34);
    // a non-transactional batch of 10 is fine now, and 10's marker retry is refused (v1 keeps
    // the epoch: a retry at the same epoch is a new marker; an older epoch is fenced)
    append(&mut log, pbatch(10, 0, 3, 1, false));
    assert!(matches!(
        log.append_marker(10, 0, abort(4), false, NOW),
        Err(LogError::Producer(ProducerError::CoordinatorFenced))
    ));
}

/// A clean restart and an unclean one (recovery point 0) rebuild the same state: the open
/// transaction still holds the LSO, the aborted index is the same, the last batch of a
/// producer is still a duplicate.
#[test]
fn the_transaction_state_survives_clean_and_unclean_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), small_segments(), NOW).unwrap();
    for i in 0..6 {
        append(&mut log, pbatch(20, 0, i * 2, 2, true)); // 0-11, open from 0
    }
    log.append_marker(20, 0, abort(1), false, NOW).unwrap(); // 12
    append(&mut log, pbatch(21, 3, 0, 2, true)); // 13-14, open from 13
    for i in 0..4 {
        append(&mut log, pbatch(22, 0, i, 1, false)); // 15-18
    }
    let leo = log.log_end_offset();
    assert!(log.segment_count() > 3, "rolled: snapshots written");
    assert!(!snapshot::list(&LogDir::os(dir.path())).unwrap().is_empty());
    let aborted = log.reader().aborted_transactions(0, leo);
    let producers = log.describe_producers();
    log.close().unwrap();
    for rp in [leo, 0] {
        let (log, _) = PartitionLog::open_from(dir.path(), small_segments(), NOW, rp).unwrap();
        let r = log.reader();
        assert_eq!(r.last_stable_offset(leo), 13, "recovery point {rp}");
        assert_eq!(r.aborted_transactions(0, leo), aborted);
        assert_eq!(log.describe_producers(), producers);
        let h = BatchHeader::parse(&pbatch(22, 0, 3, 1, false)).unwrap();
        assert_eq!(
            log.check_producer(&h, None, false),
            Ok(SequenceCheck::Duplicate {
                base_offset: 18,
                last_offset: 18
            })
        );
        log.close().unwrap();
    }
    // damaged snapshots are ignored (and deleted as they are tried): the replay goes back to
    // the first segment
    let before = snapshot::list(&LogDir::os(dir.path())).unwrap();
    for &o in &before {
        fs::write(snapshot::path(dir.path(), o), b"garbage").unwrap();
    }
    let (log, _) = PartitionLog::open_from(dir.path(), small_segments(), NOW, leo).unwrap();
    assert_eq!(log.reader().last_stable_offset(leo), 13);
    assert_eq!(log.describe_producers(), producers);
    assert!(snapshot::list(&LogDir::os(dir.path())).unwrap().len() < before.len());
}

/// A lost `.txnindex` (an unsynced file on a power cut) is rebuilt when its segment is
/// replayed.
#[test]
fn a_missing_transaction_index_is_rebuilt_from_the_markers() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), LogConfig::default(), NOW).unwrap();
    append(&mut log, pbatch(30, 0, 0, 2, true));
    log.append_marker(30, 0, abort(0), false, NOW).unwrap();
    let leo = log.log_end_offset();
    log.close().unwrap();
    fs::remove_file(dir.path().join("00000000000000000000.txnindex")).unwrap();
    let (log, _) = PartitionLog::open_from(dir.path(), LogConfig::default(), NOW, 0).unwrap();
    assert_eq!(log.reader().aborted_transactions(0, leo).len(), 1);
    assert!(dir.path().join("00000000000000000000.txnindex").exists());
}

/// A follower truncating below a marker reopens the transaction it closed and drops its index
/// entry; snapshots above the cut go.
#[test]
fn truncating_below_a_marker_reopens_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), small_segments(), NOW).unwrap();
    for i in 0..8 {
        append(&mut log, pbatch(40, 0, i, 1, false)); // 0-7
    }
    append(&mut log, pbatch(41, 0, 0, 1, true)); // 8
    let m = log.append_marker(41, 0, abort(0), false, NOW).unwrap(); // 9
    append(&mut log, pbatch(40, 0, 8, 1, false)); // 10
    assert_eq!(log.reader().last_stable_offset(11), 11);
    let removed = log.truncate_to(m.base_offset).unwrap();
    removed.delete_files().unwrap();
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(log.reader().last_stable_offset(9), 8);
    assert!(log.reader().aborted_transactions(0, 9).is_empty());
    assert!(snapshot::list(&LogDir::os(dir.path()))
        .unwrap()
        .iter()
        .all(|&o| o <= 9));
    // the marker comes again (from the new leader)
    log.append_marker(41, 0, abort(1), false, NOW).unwrap();
    assert_eq!(log.reader().last_stable_offset(10), 10);
}

/// Transactions v2 markers carry the bumped epoch; a late batch of the old epoch is fenced
/// (KAFKA-17754's hanging transaction cannot start).
#[test]
fn a_v2_marker_bumps_the_epoch_and_fences_late_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = PartitionLog::open(dir.path(), LogConfig::default(), NOW).unwrap();
    append(&mut log, pbatch(50, 4, 0, 1, true));
    assert!(matches!(
        log.append_marker(50, 4, commit(0), true, NOW),
        Err(LogError::Producer(ProducerError::InvalidProducerEpoch))
    ));
    log.append_marker(50, 5, commit(0), true, NOW).unwrap();
    let late = BatchHeader::parse(&pbatch(50, 4, 1, 1, true)).unwrap();
    assert_eq!(
        log.check_producer(&late, None, false),
        Err(ProducerError::InvalidProducerEpoch)
    );
    // the retried marker of the closed transaction is accepted again
    log.append_marker(50, 5, commit(0), true, NOW).unwrap();
    append(&mut log, pbatch(50, 5, 0, 1, true));
    assert_eq!(log.reader().first_unstable_offset(), Some(3));
}

/// KIP-405's producer snapshot travels with a closed segment: a copy takes the snapshot at the
/// offset after it, the `.indexes` object carries it (a version 1 object, without, still
/// parses), and a follower that starts its log again at that offset from it knows the
/// producers: the last batch is a duplicate, the next sequence appends, a gap is refused.
/// Without it, the unknown producer's batch is accepted at any sequence.
#[test]
fn a_log_started_again_from_a_copied_producer_snapshot_knows_the_producers() {
    let dir = tempfile::tempdir().unwrap();
    let (mut leader, _) =
        PartitionLog::open(dir.path().join("l").as_path(), small_segments(), NOW).unwrap();
    for i in 0..8 {
        append(&mut leader, pbatch(30, 2, i * 2, 2, false)); // 0-15, sequences 0-15
    }
    let closed = leader.reader().closed_segments(0, i64::MAX);
    assert!(closed.len() >= 2, "rolled");
    let seg = &closed[closed.len() - 1];
    let snapshot = seg
        .producer_snapshot()
        .expect("the roll after it wrote a snapshot");
    let idx = RemoteIndexes::parse(&seg.indexes(&seg.leader_epochs().unwrap(), &snapshot)).unwrap();
    assert_eq!(idx.producer_snapshot, snapshot);
    // Version 1 (four parts) still parses, with no snapshot.
    let mut v1 = INDEXES_MAGIC_V1.to_vec();
    v1.extend_from_slice(&[0; 16]);
    assert!(RemoteIndexes::parse(&v1)
        .unwrap()
        .producer_snapshot
        .is_empty());

    let start = seg.last_offset + 1;
    // The sequence of the batch ending at `start - 1`: two records per batch from offset 0.
    let last_seq = (start - 2) as i32;
    let check = |log: &PartitionLog, seq: i32| {
        log.check_producer(
            &BatchHeader::parse(&pbatch(30, 2, seq, 2, false)).unwrap(),
            None,
            false,
        )
    };
    let (mut restored, _) =
        PartitionLog::open(dir.path().join("f").as_path(), small_segments(), NOW).unwrap();
    restored
        .truncate_fully_and_start_at(start, NOW, Some(&idx.producer_snapshot), &[])
        .unwrap()
        .delete_files()
        .unwrap();
    assert_eq!(restored.producer_count(), 1);
    assert!(matches!(
        check(&restored, last_seq),
        Ok(SequenceCheck::Duplicate { .. })
    ));
    assert_eq!(check(&restored, last_seq + 2), Ok(SequenceCheck::Append));
    assert_eq!(
        check(&restored, last_seq + 10),
        Err(ProducerError::OutOfOrderSequence)
    );
    // Reopened, it still knows them (the snapshot is its own at `start`).
    restored.close().unwrap();
    let (restored, _) =
        PartitionLog::open(dir.path().join("f").as_path(), small_segments(), NOW).unwrap();
    assert_eq!(check(&restored, last_seq + 2), Ok(SequenceCheck::Append));

    let (mut bare, _) =
        PartitionLog::open(dir.path().join("g").as_path(), small_segments(), NOW).unwrap();
    bare.truncate_fully_and_start_at(start, NOW, Some(b"not a snapshot"), &[])
        .unwrap()
        .delete_files()
        .unwrap();
    assert_eq!(bare.producer_count(), 0);
    assert_eq!(check(&bare, last_seq + 10), Ok(SequenceCheck::Append));
}
