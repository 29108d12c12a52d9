use super::*;
use crate::diskless::testing::{appended, commit_of, header, object, part};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn coordinator(partitions: i32) -> BatchCoordinator {
    let mut c = BatchCoordinator::new(DEFAULT_MAX_BATCHES_PER_PARTITION);
    for p in 0..partitions {
        c.create_partition(part(p));
    }
    c
}

#[test]
fn offsets_are_dense_per_partition_across_objects_and_found_at_every_offset() {
    let mut c = coordinator(2);
    let a = c
        .commit(
            0,
            &commit_of(
                1,
                &[
                    (0, header(3, -1, -1, 0)),
                    (1, header(2, -1, -1, 0)),
                    (0, header(1, -1, -1, 0)),
                ],
            ),
        )
        .unwrap()
        .0;
    assert_eq!(a, vec![appended(0, 2), appended(0, 1), appended(3, 3)]);
    let b = c
        .commit(1, &commit_of(2, &[(0, header(4, -1, -1, 0))]))
        .unwrap()
        .0;
    assert_eq!(b, vec![appended(4, 7)]);
    assert_eq!(c.high_watermark(part(0)), Some(8));
    for offset in 0..8 {
        let found = c.find_batches(part(0), offset, 1).unwrap();
        let first = found.coordinates[0];
        assert!(
            first.base_offset <= offset && offset <= first.last_offset,
            "{offset}: {first:?}"
        );
        assert_eq!(
            found.coordinates.len(),
            1,
            "one coordinate past the byte limit"
        );
    }
    let all = c.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!(
        all.coordinates
            .iter()
            .map(|c| match c.location {
                Location::Object {
                    object,
                    byte_offset,
                    ..
                } => (object, byte_offset),
                Location::Marker(_) => panic!("no markers here"),
            })
            .collect::<Vec<_>>(),
        vec![(object(1), 0), (object(1), 200), (object(2), 0)]
    );
    assert!(c
        .find_batches(part(0), 8, 1)
        .unwrap()
        .coordinates
        .is_empty());
    assert_eq!(c.find_batches(part(0), 9, 1), Err(E::OffsetOutOfRange));
    assert_eq!(
        c.find_batches(part(5), 0, 1),
        Err(E::UnknownTopicOrPartition)
    );
    c.check_invariants().unwrap();
}

#[test]
fn an_idempotent_retry_in_a_later_object_gets_the_original_offsets_and_stores_nothing() {
    let mut c = coordinator(1);
    let first = commit_of(1, &[(0, header(2, 7, 0, 0)), (0, header(3, 7, 0, 2))]);
    assert_eq!(
        c.commit(0, &first).unwrap().0,
        vec![appended(0, 1), appended(2, 4)]
    );
    // the producer's answer was lost; its broker uploads the same batches again
    let retry = commit_of(2, &[(0, header(3, 7, 0, 2))]);
    assert_eq!(
        c.commit(5, &retry).unwrap().0,
        vec![BatchAnswer::Duplicate {
            base_offset: 2,
            last_offset: 4
        }]
    );
    assert_eq!(c.high_watermark(part(0)), Some(5));
    // the retried object holds nothing live: deletable after the delay
    assert_eq!(c.deletable(5, 10), vec![]);
    assert_eq!(c.deletable(15, 10), vec![(object(2), 100, 1)]);
    // the same commit resent (the coordinator's answer was lost): the same answers
    assert_eq!(
        c.commit(20, &first).unwrap().0,
        vec![appended(0, 1), appended(2, 4)]
    );
    assert_eq!(c.high_watermark(part(0)), Some(5));
}

#[test]
fn producer_state_refusals_are_kafkas() {
    let mut c = coordinator(1);
    assert_eq!(
        c.commit(0, &commit_of(1, &[(0, header(2, 7, 3, 0))]))
            .unwrap()
            .0,
        vec![appended(0, 1)]
    );
    let answers = c
        .commit(
            0,
            &commit_of(
                2,
                &[
                    (0, header(1, 7, 3, 5)), // a gap: 2 expected
                    (0, header(1, 7, 2, 2)), // an older epoch
                    (0, header(1, 7, 4, 3)), // a new epoch not from 0
                    (0, header(1, 7, 4, 0)), // a new epoch from 0
                ],
            ),
        )
        .unwrap()
        .0;
    assert_eq!(
        answers,
        vec![
            BatchAnswer::Refused(E::OutOfOrderSequenceNumber),
            BatchAnswer::Refused(E::InvalidProducerEpoch),
            BatchAnswer::Refused(E::OutOfOrderSequenceNumber),
            appended(2, 2),
        ]
    );
    let mut txn = header(1, 8, 0, 0);
    txn.attributes |= 0x10;
    let mut control = header(1, -1, -1, 0);
    control.attributes |= 0x20;
    let answers = c
        .commit(
            0,
            &commit_of(3, &[(0, txn), (0, control), (1, header(1, -1, -1, 0))]),
        )
        .unwrap()
        .0;
    assert_eq!(
        answers,
        vec![
            appended(3, 3),
            BatchAnswer::Refused(E::InvalidRecord),
            BatchAnswer::Refused(E::UnknownTopicOrPartition),
        ]
    );
}

fn txn(records: i32, pid: i64, epoch: i16, seq: i32) -> BatchHeader {
    let mut h = header(records, pid, epoch, seq);
    h.attributes |= 0x10;
    h
}

fn marker(pid: i64, epoch: i16, coordinator_epoch: i32, commit: bool) -> TxnMarker {
    TxnMarker {
        producer_id: pid,
        producer_epoch: epoch,
        coordinator_epoch,
        commit,
    }
}

#[test]
fn transactions_hold_the_last_stable_offset_and_aborted_ones_are_listed_for_readers() {
    let mut c = coordinator(1);
    let mut decisions = Vec::new();
    let commit = |c: &mut BatchCoordinator, id, batches: &[(i32, BatchHeader)]| {
        let (answers, d) = c.commit(0, &commit_of(id, batches)).unwrap();
        (answers, d.unwrap())
    };
    // producer 7 opens a transaction at 0-2; a plain producer's batch follows at 3
    let (a, d1) = commit(
        &mut c,
        1,
        &[(0, txn(3, 7, 0, 0)), (0, header(1, -1, -1, 0))],
    );
    decisions.push(d1);
    assert_eq!(a, vec![appended(0, 2), appended(3, 3)]);
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!((found.high_watermark, found.last_stable_offset), (4, 0));
    // DescribeProducers: the open transaction's first offset, its last sequence
    let described = c.producers(part(0)).unwrap();
    assert_eq!(described.len(), 1, "{described:?}");
    let p7 = described[0];
    assert_eq!(
        (p7.producer_id, p7.epoch, p7.last_sequence),
        (7, 0, 2),
        "{p7:?}"
    );
    assert_eq!((p7.coordinator_epoch, p7.current_txn_start_offset), (-1, 0));
    assert_eq!(c.producers(part(1)), None, "a partition not served here");
    // a plain batch of the producer while its transaction is open
    let (a, d2) = commit(&mut c, 2, &[(0, header(1, 7, 0, 3))]);
    decisions.push(d2);
    assert_eq!(a, vec![BatchAnswer::Refused(E::InvalidTxnState)]);
    // aborted (transactions v2: the marker carries the bumped epoch 1) at offset 4
    let (at, d) = c.marker(5, part(0), marker(7, 1, 3, false), true).unwrap();
    decisions.push(d);
    assert_eq!(at, 4);
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!((found.high_watermark, found.last_stable_offset), (5, 5));
    assert_eq!(
        found.aborted,
        vec![AbortedTxn {
            producer_id: 7,
            first_offset: 0,
            last_offset: 4,
            last_stable_offset: 5,
        }]
    );
    assert_eq!(
        found.coordinates[2].location,
        Location::Marker(marker(7, 1, 3, false))
    );
    assert_eq!(found.coordinates[2].max_timestamp, 5);
    // the marker closed the transaction and carried the coordinator's epoch
    let p7 = c.producers(part(0)).unwrap()[0];
    assert_eq!(
        (p7.epoch, p7.coordinator_epoch, p7.current_txn_start_offset),
        (1, 3, -1),
        "{p7:?}"
    );
    // readers that see only the records below the marker: the transaction still holds the
    // last stable offset, and no aborted transaction is listed yet
    let below = c.find_visible(part(0), 0, u64::MAX, 4).unwrap();
    assert_eq!((below.high_watermark, below.last_stable_offset), (4, 0));
    assert!(below.aborted.is_empty());
    assert_eq!(c.offsets(part(0), 4).map(|o| o.last_stable_offset), Some(0));
    // a late batch of the aborted transaction (epoch 0) is fenced by the bumped epoch
    let (a, d3) = commit(&mut c, 3, &[(0, txn(1, 7, 0, 3))]);
    decisions.push(d3);
    assert_eq!(a, vec![BatchAnswer::Refused(E::InvalidProducerEpoch)]);
    // the next transaction at epoch 1, committed at epoch 2
    let (a, d4) = commit(&mut c, 4, &[(0, txn(2, 7, 1, 0))]);
    decisions.push(d4);
    assert_eq!(a, vec![appended(5, 6)]);
    assert_eq!(
        c.offsets(part(0), i64::MAX).map(|o| o.last_stable_offset),
        Some(5)
    );
    assert_eq!(
        c.marker(6, part(0), marker(7, 1, 3, true), true)
            .map(|r| r.0),
        Err(E::InvalidProducerEpoch),
        "a v2 marker must bump the epoch"
    );
    assert_eq!(
        c.marker(6, part(0), marker(7, 2, 2, true), true)
            .map(|r| r.0),
        Err(E::TransactionCoordinatorFenced)
    );
    let (at, d) = c.marker(6, part(0), marker(7, 2, 3, true), true).unwrap();
    decisions.push(d);
    assert_eq!(at, 7);
    let found = c.find_batches(part(0), 5, u64::MAX).unwrap();
    assert_eq!((found.high_watermark, found.last_stable_offset), (8, 8));
    assert!(found.aborted.is_empty(), "the abort lies before offset 5");
    // a resent marker of a closed transaction at the same epoch passes (KAFKA-19999)
    let (at, d) = c.marker(7, part(0), marker(7, 2, 3, true), true).unwrap();
    decisions.push(d);
    assert_eq!(at, 8);
    // a marker for a producer that never wrote here still takes its offset
    let (at, d) = c.marker(7, part(0), marker(9, 0, 3, false), false).unwrap();
    decisions.push(d);
    assert_eq!(at, 9);
    assert!(c.find_batches(part(0), 0, u64::MAX).unwrap().aborted.len() == 1);
    // DeleteRecords past the aborted transaction's marker forgets it
    let (_, d) = c.delete_records(8, part(0), 5).unwrap();
    decisions.push(d);
    assert!(c
        .find_batches(part(0), 5, u64::MAX)
        .unwrap()
        .aborted
        .is_empty());
    c.check_invariants().unwrap();
    // a replica fed the encoded decisions holds the same state
    let mut replica = coordinator(1);
    for d in &decisions {
        replica.apply(&crate::diskless::codec::decode(&crate::diskless::codec::encode(d)).unwrap());
    }
    assert_eq!(replica.state_digest(), c.state_digest());
    assert_eq!(replica.producers(part(0)), c.producers(part(0)));
}

/// KIP-890 at the coordinator: a transactional batch that opens a transaction needs a
/// verification token still valid. A transactions v1 producer (no epoch bump) whose batch was
/// verified before its transaction's marker and committed after it is refused, not let open a
/// transaction its next commit would commit (the librdkafka case of tests/jepsen's diskless
/// kind); so is a token of another load of the coordinator, and a batch that meant to continue
/// a transaction a marker has closed meanwhile.
#[test]
fn a_late_transactional_batch_verified_before_a_marker_opens_no_transaction() {
    let mut c = coordinator(1).with_token_epoch(5);
    let mut n = 0;
    let mut commit = |c: &mut BatchCoordinator, h: BatchHeader, token: Option<u64>| {
        n += 1;
        let mut batches = commit_of(n, &[(0, h)]);
        batches.batches[0].verification = token;
        c.commit(0, &batches).unwrap().0[0]
    };
    let t1 = c.begin_verification(part(0), 7, 0, false).unwrap();
    assert_eq!(
        t1 >> 32,
        5,
        "the token carries the coordinator's token epoch"
    );
    // the late copy's token was asked before the marker; the first copy opens the transaction
    let late = t1;
    assert_eq!(commit(&mut c, txn(2, 7, 0, 0), Some(t1)), appended(0, 1));
    // a batch of the open transaction continues it with the token a verification answers then
    let ongoing = c.begin_verification(part(0), 7, 0, false).unwrap();
    assert_eq!(
        ongoing & 0xffff_ffff,
        0,
        "nothing to verify while it is open"
    );
    assert_eq!(
        commit(&mut c, txn(1, 7, 0, 2), Some(ongoing)),
        appended(2, 2)
    );
    // aborted (transactions v1: the same epoch)
    c.marker(1, part(0), marker(7, 0, 3, false), false).unwrap();
    // the late batch (the next sequence, the same epoch) would open a transaction: refused
    assert_eq!(
        commit(&mut c, txn(1, 7, 0, 3), Some(late)),
        BatchAnswer::Refused(E::InvalidTxnState)
    );
    assert_eq!(
        commit(&mut c, txn(1, 7, 0, 3), Some(ongoing)),
        BatchAnswer::Refused(E::InvalidTxnState),
        "a continuation of a transaction the marker closed"
    );
    // a token of another load of the coordinator
    let other = BatchCoordinator::new(DEFAULT_MAX_BATCHES_PER_PARTITION).with_token_epoch(6);
    let mut other_part = other;
    other_part.create_partition(part(0));
    let foreign = other_part.begin_verification(part(0), 7, 0, false).unwrap();
    assert_eq!(
        commit(&mut c, txn(1, 7, 0, 3), Some(foreign)),
        BatchAnswer::Refused(E::InvalidTxnState)
    );
    // the next transaction, verified after the marker, opens
    let t2 = c.begin_verification(part(0), 7, 0, false).unwrap();
    assert_eq!(commit(&mut c, txn(1, 7, 0, 3), Some(t2)), appended(4, 4));
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!(
        found.last_stable_offset, 4,
        "the new transaction is open at 4"
    );
    assert_eq!(found.aborted.len(), 1);
    // without a token (verification off) a batch is not checked
    c.marker(2, part(0), marker(7, 0, 3, true), false).unwrap();
    assert_eq!(commit(&mut c, txn(1, 7, 0, 4), None), appended(6, 6));
    c.check_invariants().unwrap();
}

#[test]
fn past_the_coordinate_bound_a_batch_is_refused_and_its_successor_waits_for_it() {
    let mut c = BatchCoordinator::new(2);
    let mut replica = BatchCoordinator::new(2);
    replica.apply(&c.create_partition(part(0)));
    let first = commit_of(
        1,
        &[
            (0, header(1, 7, 0, 0)),
            (0, header(1, 7, 0, 1)),
            (0, header(1, 7, 0, 2)),
            (0, header(1, 7, 0, 3)),
        ],
    );
    let (answers, decision) = c.commit(0, &first).unwrap();
    // the refusal at the bound is counted where decided (/metrics), once: not for the batch
    // refused after it, not for a resent commit, not on a replica applying the decision
    assert_eq!(c.refused_at_bound(part(0)), Some(1));
    assert_eq!(c.commit(0, &first).unwrap().0, answers);
    assert_eq!(c.refused_at_bound(part(0)), Some(1));
    replica.apply(&decision.unwrap());
    assert_eq!(replica.refused_at_bound(part(0)), Some(0));
    assert_eq!(c.refused_at_bound(part(1)), None);
    assert_eq!(
        answers,
        vec![
            appended(0, 0),
            appended(1, 1),
            BatchAnswer::Refused(E::KafkaStorageError),
            // not OUT_OF_ORDER_SEQUENCE_NUMBER: the producer resends both in order
            BatchAnswer::Refused(E::NotLeaderOrFollower),
        ]
    );
    // room again (DeleteRecords), and the resent batches go in order
    assert_eq!(c.delete_records(1, part(0), 2).map(|r| r.0), Ok(2));
    let answers = c
        .commit(
            2,
            &commit_of(2, &[(0, header(1, 7, 0, 2)), (0, header(1, 7, 0, 3))]),
        )
        .unwrap()
        .0;
    assert_eq!(answers, vec![appended(2, 2), appended(3, 3)]);
    assert_eq!(c.refused_at_bound(part(0)), Some(1));
}

#[test]
fn delete_records_drops_coordinates_and_frees_objects_no_batch_names() {
    let mut c = coordinator(2);
    c.commit(
        0,
        &commit_of(1, &[(0, header(5, -1, -1, 0)), (1, header(5, -1, -1, 0))]),
    )
    .unwrap();
    c.commit(0, &commit_of(2, &[(0, header(5, -1, -1, 0))]))
        .unwrap();
    // inside the first batch: it stays (it holds the new log start)
    assert_eq!(c.delete_records(10, part(0), 3).map(|r| r.0), Ok(3));
    assert_eq!(c.find_batches(part(0), 2, 1), Err(E::OffsetOutOfRange));
    assert_eq!(
        c.find_batches(part(0), 3, 1).unwrap().coordinates[0].base_offset,
        0
    );
    // past it: object 1 is still named by partition 1
    assert_eq!(c.delete_records(20, part(0), 5).map(|r| r.0), Ok(5));
    assert!(c.deletable(i64::MAX, 0).is_empty());
    // never back; -1 is the high watermark
    assert_eq!(c.delete_records(30, part(0), 4).map(|r| r.0), Ok(5));
    assert_eq!(c.delete_records(40, part(0), -1).map(|r| r.0), Ok(10));
    assert_eq!(
        c.delete_records(40, part(0), 11).map(|r| r.0),
        Err(E::OffsetOutOfRange)
    );
    assert_eq!(c.deletable(40, 0), vec![(object(2), 100, 1)]);
    c.delete_topic(50, Uuid::from_u128(0xd15c));
    assert_eq!(
        c.deletable(50, 0),
        vec![(object(2), 100, 1), (object(1), 200, 1)]
    );
    assert_eq!(c.objects_deleted(&[object(1), object(2), object(9)]).0, 2);
    assert_eq!(c.object_count(), 0);
    // a deleted object's commit resent while its answers are kept: the same answers
    assert_eq!(
        c.commit(60, &commit_of(2, &[(0, header(5, -1, -1, 0))]))
            .unwrap()
            .0,
        vec![appended(5, 9)]
    );
}

#[test]
fn a_commit_is_decided_once_and_checked_against_its_object() {
    let mut c = coordinator(1);
    let mut bad = commit_of(1, &[(0, header(1, -1, -1, 0))]);
    bad.object_size = 99;
    assert_eq!(c.commit(0, &bad).err(), Some(CommitError::OutsideObject));
    assert_eq!(c.high_watermark(part(0)), Some(0));
    for n in 0..=RECENT_COMMITS as u128 {
        c.commit(0, &commit_of(10 + n, &[(0, header(1, -1, -1, 0))]))
            .unwrap();
    }
    // the first one's answers are forgotten: refused, not decided again
    assert_eq!(
        c.commit(0, &commit_of(10, &[(0, header(1, -1, -1, 0))]))
            .err(),
        Some(CommitError::CommittedBefore)
    );
    assert_eq!(c.high_watermark(part(0)), Some(RECENT_COMMITS as i64 + 1));
}

#[test]
fn a_commit_older_than_the_age_bound_is_refused_and_its_object_stays_unknown() {
    let mut c = coordinator(1).with_max_commit_age(30_000);
    // UUIDv7: the close time (ms) in the top 48 bits
    let closed_at = 1_000_000i64;
    let id = (closed_at as u128) << 80 | 0x7000 << 64 | 1;
    let mut commit = commit_of(0, &[(0, header(1, -1, -1, 0))]);
    commit.object = ObjectId(Uuid::from_u128(id));
    assert_eq!(commit.object.created_ms(), closed_at);
    assert_eq!(
        c.commit(closed_at + 30_001, &commit).err(),
        Some(CommitError::TooOld)
    );
    assert!(!c.knows(commit.object));
    assert_eq!(c.high_watermark(part(0)), Some(0));
    c.commit(closed_at + 30_000, &commit).unwrap();
    assert!(c.knows(commit.object));
}

/// Seeded random commits (idempotent producers with retries, gaps and epoch bumps, plain
/// batches, unknown partitions), resent commits, DeleteRecords and object deletions: after each
/// step the invariants hold, and every batch ever answered Appended at or above its partition's
/// log start is found at its offsets in the object and byte range it was committed with. A
/// replica applying the leader's decisions holds the same state after every step, and, promoted,
/// answers the next commits as the leader does.
#[test]
fn random_histories_keep_every_invariant_and_every_answer() {
    let mut total_compactions = 0;
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut c = BatchCoordinator::new(64);
        let mut replica = BatchCoordinator::new(64);
        for p in 0..3 {
            replica.apply(&c.create_partition(part(p)));
        }
        // producer id -> (epoch, next sequence per partition)
        let mut producers: HashMap<i64, (i16, [i32; 4])> = HashMap::new();
        let mut stored: Vec<(DisklessPartition, Coordinate)> = Vec::new();
        let mut sent: Vec<CommitBatches> = Vec::new();
        let mut next_object = 1u128;
        let mut now = 0i64;
        let mut compactions = 0;
        for _ in 0..300 {
            now += rng.gen_range(0..50);
            match rng.gen_range(0..10) {
                0..=6 => {
                    let n = rng.gen_range(1..6);
                    let mut batches = Vec::new();
                    for _ in 0..n {
                        let p = rng.gen_range(0..4); // 3: unknown
                        let records = rng.gen_range(1..4);
                        let h = if rng.gen_bool(0.3) {
                            header(records, -1, -1, 0)
                        } else {
                            let pid = rng.gen_range(1..4);
                            let e = producers.entry(pid).or_insert((0, [0; 4]));
                            if rng.gen_bool(0.05) {
                                *e = (e.0 + 1, [0; 4]);
                            }
                            let mut seq = e.1[p as usize];
                            if rng.gen_bool(0.1) {
                                seq = (seq - rng.gen_range(1..4)).max(0); // a retry
                            } else if rng.gen_bool(0.05) {
                                seq += 1; // a gap
                            } else {
                                e.1[p as usize] += records;
                            }
                            header(records, pid, e.0, seq)
                        };
                        batches.push((p, h));
                    }
                    let commit = commit_of(next_object, &batches);
                    next_object += 1;
                    let (answers, decision) = c.commit(now, &commit).unwrap();
                    replica.apply(&decision.expect("a new object is a decision"));
                    assert_eq!(answers.len(), commit.batches.len());
                    for (b, a) in commit.batches.iter().zip(&answers) {
                        if let BatchAnswer::Appended {
                            base_offset,
                            last_offset,
                        } = *a
                        {
                            assert_eq!(
                                last_offset - base_offset,
                                i64::from(b.header.last_offset_delta)
                            );
                            stored.push((
                                b.partition,
                                Coordinate {
                                    location: Location::Object {
                                        object: commit.object,
                                        byte_offset: b.byte_offset,
                                        byte_len: b.byte_len,
                                    },
                                    base_offset,
                                    last_offset,
                                    max_timestamp: b.header.max_timestamp,
                                },
                            ));
                        }
                    }
                    sent.push(commit);
                }
                7 => {
                    // a resent commit: the same answers, nothing new
                    if let Some(old) = sent.last().cloned() {
                        let hw: Vec<_> = (0..3).map(|p| c.high_watermark(part(p))).collect();
                        assert!(
                            c.commit(now, &old).unwrap().1.is_none(),
                            "a resent commit is no new decision"
                        );
                        assert_eq!(
                            hw,
                            (0..3)
                                .map(|p| c.high_watermark(part(p)))
                                .collect::<Vec<_>>()
                        );
                    }
                }
                8 if rng.gen_bool(0.5) => {
                    let p = part(rng.gen_range(0..3));
                    let hw = c.high_watermark(p).unwrap();
                    let to = rng.gen_range(0..=hw);
                    replica.apply(&c.delete_records(now, p, to).unwrap().1);
                }
                8 => {
                    // compaction of a run (the bytes are the compactor's business here)
                    let p = part(rng.gen_range(0..3));
                    let policy = CompactionPolicy {
                        max_bytes: rng.gen_range(100..2_000),
                        max_age_ms: rng.gen_range(0..500),
                    };
                    let hw = c.high_watermark(p).unwrap();
                    if let Some(plan) = c.compaction_plan(p, now, hw, &policy) {
                        let id = ObjectId::v7(now, next_object);
                        next_object += 1;
                        let run = plan.compacted(id, 1_000, 1);
                        let d = c
                            .compacted(now, run)
                            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                        replica.apply(&d);
                        assert_eq!(c.compacted(now, run), Err(CompactError::CommittedBefore));
                        let fresh = ObjectId::v7(now, next_object << 20);
                        let shifted = CompactedRun {
                            object: fresh,
                            base_offset: run.base_offset + 1,
                            ..run
                        };
                        assert_eq!(
                            c.compacted(now, shifted),
                            Err(CompactError::Stale),
                            "a run that does not start at a coordinate's start"
                        );
                        assert_eq!(
                            c.compacted(
                                now + 40_000,
                                CompactedRun {
                                    object: fresh,
                                    ..run
                                }
                            ),
                            Err(CompactError::TooOld)
                        );
                        compactions += 1;
                    }
                }
                _ => {
                    let gone: Vec<ObjectId> = c
                        .deletable(now, 100)
                        .into_iter()
                        .map(|(id, _, _)| id)
                        .collect();
                    replica.apply(&c.objects_deleted(&gone).1);
                }
            }
            c.check_invariants()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(
                c.state_digest(),
                replica.state_digest(),
                "seed {seed}: the replica differs"
            );
            for (p, want) in &stored {
                let found = match c.find_batches(*p, want.base_offset, 1) {
                    Ok(f) => f,
                    Err(E::OffsetOutOfRange) => continue, // below the log start now
                    Err(e) => panic!("seed {seed}: {e:?}"),
                };
                if found.log_start > want.last_offset {
                    continue;
                }
                let first = found.coordinates.first().expect("a coordinate");
                if first != want {
                    // compacted: one coordinate holds it, in an object compaction wrote
                    assert!(
                        first.base_offset <= want.base_offset
                            && want.last_offset <= first.last_offset
                            && first.max_timestamp >= want.max_timestamp
                            && matches!(first.location, Location::Object { byte_offset: 0, .. }),
                        "seed {seed}: {want:?} in {first:?}"
                    );
                }
            }
        }
        total_compactions += compactions;
        // the replica promoted: the same answers to the same next commits (producer windows,
        // refusals noted at the bound, kept answers and all)
        for n in 0..20u128 {
            let p = (n % 3) as i32;
            let pid = 1 + (n % 3) as i64;
            let epoch = producers.get(&pid).map_or(0, |e| e.0);
            let seq = producers.get(&pid).map_or(0, |e| e.1[p as usize]) - (n % 2) as i32;
            let commit = commit_of(next_object + n, &[(p, header(1, pid, epoch, seq.max(0)))]);
            let mine = c.commit(now, &commit).unwrap().0;
            assert_eq!(mine, replica.commit(now, &commit).unwrap().0, "seed {seed}");
        }
        if let Some(old) = sent.last() {
            assert_eq!(
                c.commit(now, old).ok(),
                replica.commit(now, old).ok(),
                "seed {seed}"
            );
        }
    }
    assert!(
        total_compactions > 40,
        "{total_compactions} compactions in 40 histories"
    );
}

/// `producer.id.expiration.ms` on diskless partitions: an idle producer is forgotten (its next
/// batch accepted at any sequence, as after expiry on a classic partition), one with an open
/// transaction or a recent batch is kept, and a replica applying the decision agrees.
#[test]
fn idle_producers_expire_by_a_recorded_decision_and_open_transactions_stay() {
    let mut c = coordinator(2);
    let mut replica = coordinator(2);
    let at = |mut h: BatchHeader, ts: i64| {
        h.max_timestamp = ts;
        h
    };
    let mut decisions = Vec::new();
    for (id, batches) in [
        (1, vec![(0, at(header(2, 7, 0, 0), 1_000))]),
        (2, vec![(1, at(txn(1, 8, 0, 0), 1_000))]),
        (3, vec![(0, at(header(1, 9, 0, 0), 50_000))]),
    ] {
        let (answers, d) = c.commit(0, &commit_of(id, &batches)).unwrap();
        assert!(matches!(answers[0], BatchAnswer::Appended { .. }));
        decisions.push(d.unwrap());
    }
    assert_eq!(c.producer_count(), 3);
    assert_eq!(
        c.expire_producers(5_000, 86_400_000),
        None,
        "nobody that old"
    );
    let d = c
        .expire_producers(10_000, 5_000)
        .expect("producer 7 is idle");
    assert_eq!(
        d,
        Decision::ExpireProducers {
            now_ms: 10_000,
            expiration_ms: 5_000
        }
    );
    decisions.push(d);
    let ids = |c: &BatchCoordinator, p| {
        c.producers(part(p))
            .unwrap()
            .iter()
            .map(|i| i.producer_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&c, 0), vec![9], "7 forgotten, 9 recent");
    assert_eq!(ids(&c, 1), vec![8], "an open transaction is never expired");
    assert_eq!(c.expire_producers(10_000, 5_000), None);
    for d in &decisions {
        replica.apply(d);
    }
    assert_eq!(replica.state_digest(), c.state_digest());
    // the forgotten producer goes on at a later sequence: accepted, as Kafka does after expiry
    let (answers, _) = c
        .commit(0, &commit_of(4, &[(0, at(header(1, 7, 0, 5), 60_000))]))
        .unwrap();
    assert_eq!(answers, vec![appended(3, 3)]);
    c.check_invariants().unwrap();
}

/// Which runs compaction takes: full runs at once, young small ones only when old or when the
/// partition is crowded; never a batch or compacted run alone in its object that is already
/// large (it is left as it is and later runs go on past it); smaller compacted runs are merged
/// again.
#[test]
fn compaction_takes_due_runs_and_steps_over_large_batches_alone_in_their_object() {
    let mut c = coordinator(2);
    // objects 1-4: one 100-byte batch of partition 0 each (alone), object 5 shares one with
    // partition 1
    for id in 1..=4u128 {
        c.commit(0, &commit_of(id, &[(0, header(2, -1, -1, 0))]))
            .unwrap();
    }
    c.commit(
        0,
        &commit_of(5, &[(0, header(1, -1, -1, 0)), (1, header(1, -1, -1, 0))]),
    )
    .unwrap();
    let young = CompactionPolicy {
        max_bytes: 1_000,
        max_age_ms: 60_000,
    };
    assert_eq!(
        c.compaction_plan(part(0), 10, 9, &young),
        None,
        "young and not full"
    );
    // full: 300 bytes of room take three batches
    let full = CompactionPolicy {
        max_bytes: 300,
        max_age_ms: 60_000,
    };
    let plan = c.compaction_plan(part(0), 10, 9, &full).unwrap();
    assert_eq!((plan.base_offset(), plan.last_offset()), (0, 5));
    // 100-byte batches alone in their objects are "large" at max_bytes 200: settled, so the
    // run worth taking is the one sharing object 5, and only once it is old
    let small = CompactionPolicy {
        max_bytes: 200,
        max_age_ms: 5,
    };
    let plan = c.compaction_plan(part(0), 10, 9, &small).unwrap();
    assert_eq!((plan.base_offset(), plan.last_offset()), (8, 8), "{plan:?}");
    // the end readers see bounds the run
    assert_eq!(c.compaction_plan(part(0), 10, 8, &small), None);
    // compacted objects are not compacted again; what follows them is
    let d = c
        .compacted(
            10,
            CompactedRun {
                partition: part(0),
                object: ObjectId::v7(10, 1),
                size: 300,
                compactor: 1,
                base_offset: 0,
                last_offset: 5,
                max_timestamp: 1_002,
            },
        )
        .unwrap();
    assert!(matches!(d, Decision::Compacted { .. }));
    // a compacted run at least half max_bytes large is not compacted again; what follows it is
    let old = CompactionPolicy {
        max_bytes: 600,
        max_age_ms: 0,
    };
    let plan = c.compaction_plan(part(0), 10, 9, &old).unwrap();
    assert_eq!((plan.base_offset(), plan.last_offset()), (6, 8));
    assert_eq!(c.compacted_coordinates(part(0)), Some((1, 3)));
    // a smaller one is merged again with what follows it
    let larger = CompactionPolicy {
        max_bytes: 1_000,
        max_age_ms: 0,
    };
    let plan = c.compaction_plan(part(0), 10, 9, &larger).unwrap();
    assert_eq!((plan.base_offset(), plan.last_offset()), (0, 8));
    c.check_invariants().unwrap();
}

/// A plan says whether the partition is crowded (at least half its coordinate bound), the one
/// case compaction goes on past its byte budget: a young, small run is then due too.
#[test]
fn compaction_plans_say_when_the_partition_is_crowded() {
    let mut c = BatchCoordinator::new(8);
    c.create_partition(part(0));
    let policy = CompactionPolicy {
        max_bytes: 300,
        max_age_ms: 60_000,
    };
    for id in 1..=3u128 {
        c.commit(0, &commit_of(id, &[(0, header(1, -1, -1, 0))]))
            .unwrap();
    }
    // three 100-byte batches fill 300 bytes: due, the partition not crowded (3 of 8)
    let plan = c.compaction_plan(part(0), 10, 3, &policy).unwrap();
    assert_eq!(
        (plan.base_offset(), plan.last_offset(), plan.crowded),
        (0, 2, false)
    );
    c.commit(0, &commit_of(4, &[(0, header(1, -1, -1, 0))]))
        .unwrap();
    // four of eight: crowded, and so the run is due before it is full or old
    let young = CompactionPolicy {
        max_bytes: 1_000,
        max_age_ms: 60_000,
    };
    let plan = c.compaction_plan(part(0), 10, 4, &young).unwrap();
    assert_eq!(
        (plan.base_offset(), plan.last_offset(), plan.crowded),
        (0, 3, true)
    );
    c.check_invariants().unwrap();
}
