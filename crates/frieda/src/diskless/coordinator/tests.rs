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
            .map(|c| (c.object, c.byte_offset))
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
            BatchAnswer::Refused(E::InvalidTxnState),
            BatchAnswer::Refused(E::InvalidRecord),
            BatchAnswer::Refused(E::UnknownTopicOrPartition),
        ]
    );
}

#[test]
fn past_the_coordinate_bound_a_batch_is_refused_and_its_successor_waits_for_it() {
    let mut c = BatchCoordinator::new(2);
    c.create_partition(part(0));
    let answers = c
        .commit(
            0,
            &commit_of(
                1,
                &[
                    (0, header(1, 7, 0, 0)),
                    (0, header(1, 7, 0, 1)),
                    (0, header(1, 7, 0, 2)),
                    (0, header(1, 7, 0, 3)),
                ],
            ),
        )
        .unwrap()
        .0;
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
                                    object: commit.object,
                                    byte_offset: b.byte_offset,
                                    byte_len: b.byte_len,
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
                8 => {
                    let p = part(rng.gen_range(0..3));
                    let hw = c.high_watermark(p).unwrap();
                    let to = rng.gen_range(0..=hw);
                    replica.apply(&c.delete_records(now, p, to).unwrap().1);
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
                assert_eq!(found.coordinates.first(), Some(want), "seed {seed}");
            }
        }
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
}
