use super::*;
use crate::diskless::coordinator::BatchCoordinator;
use crate::diskless::testing::{appended, header, part};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A batch of `len` bytes for partition `p` whose bytes name (p, tag); no producer id.
fn batch(p: i32, tag: u32, len: usize) -> ProducedBatch {
    let mut bytes = vec![0u8; len.max(8)];
    bytes[..4].copy_from_slice(&(p as u32).to_be_bytes());
    bytes[4..8].copy_from_slice(&tag.to_be_bytes());
    ProducedBatch {
        partition: part(p),
        bytes: Bytes::from(bytes),
        header: BatchHeader {
            batch_length: len as i32 - 12,
            crc: tag,
            ..header(1, -1, -1, 0)
        },
        verification: None,
    }
}

fn config() -> AppendConfig {
    AppendConfig {
        broker_id: 3,
        commit_interval_ms: 250,
        buffer_max_bytes: 1_000,
        max_uploads: 2,
        upload_max_attempts: 2,
        max_buffered_bytes: 5_000,
    }
}

fn uploads(actions: &[Action]) -> Vec<ObjectId> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Upload { object, .. } => Some(*object),
            _ => None,
        })
        .collect()
}

fn commits(actions: &[Action]) -> Vec<CommitBatches> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Commit(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn stored(base_offset: i64) -> BatchAnswer {
    appended(base_offset, base_offset)
}

#[test]
fn a_produce_is_answered_after_the_interval_the_upload_and_the_commit() {
    let mut t = AppendTask::new(config());
    assert!(t
        .produce(0, 1, vec![batch(1, 10, 100), batch(0, 11, 100)])
        .unwrap()
        .is_empty());
    assert!(t
        .produce(10, 2, vec![batch(1, 12, 100)])
        .unwrap()
        .is_empty());
    assert_eq!(t.next_deadline(), Some(250));
    assert!(t.tick(249).is_empty());
    let a = t.tick(250);
    let [Action::Upload { object, body }] = a.as_slice() else {
        panic!("{a:?}")
    };
    // partitions grouped, each in arrival order; the close time readable from the id
    assert_eq!(
        body.chunks(100)
            .map(|c| u32::from_be_bytes(c[4..8].try_into().unwrap()))
            .collect::<Vec<_>>(),
        vec![11, 10, 12]
    );
    assert_eq!(object.0.get_version_num(), 7);
    assert_eq!(object.0.as_u128() >> 80, 250);
    let a = t.uploaded(*object, true);
    let [Action::Commit(c)] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(
        c.batches
            .iter()
            .map(|b| (b.partition.partition, b.byte_offset, b.header.crc))
            .collect::<Vec<_>>(),
        vec![(0, 0, 11), (1, 100, 10), (1, 200, 12)]
    );
    assert_eq!((c.object_size, c.uploader), (300, 3));
    let a = t.committed(*object, &[stored(0), stored(0), stored(1)]);
    assert_eq!(
        a,
        vec![
            Action::Answer {
                request: 1,
                answers: vec![stored(0), stored(0)]
            },
            Action::Answer {
                request: 2,
                answers: vec![stored(1)]
            },
        ]
    );
    assert_eq!((t.waiting(), t.held_bytes()), (0, 0));
}

#[test]
fn objects_commit_in_close_order_one_at_a_time_whatever_order_their_uploads_finish() {
    let mut t = AppendTask::new(config());
    let mut ups = Vec::new();
    for r in 0..3u64 {
        // each fills the buffer: closed at once
        ups.extend(uploads(
            &t.produce(0, r, vec![batch(0, r as u32, 1_000)]).unwrap(),
        ));
    }
    assert_eq!(ups.len(), 2, "two PUTs in flight at most");
    // the second finishes first: nothing commits before the first, and its PUT slot goes to
    // the third object
    let a = t.uploaded(ups[1], true);
    assert!(commits(&a).is_empty());
    let third = uploads(&a);
    assert_eq!(third.len(), 1, "a PUT slot freed: the third object goes");
    let a = t.uploaded(ups[0], true);
    assert_eq!(
        commits(&a).iter().map(|c| c.object).collect::<Vec<_>>(),
        vec![ups[0]]
    );
    assert!(
        commits(&t.uploaded(third[0], true)).is_empty(),
        "one commit in flight"
    );
    // the coordinator did not answer: the same commit again
    assert_eq!(commits(&t.commit_failed(ups[0]))[0].object, ups[0]);
    let a = t.committed(ups[0], &[stored(0)]);
    assert_eq!(
        commits(&a).iter().map(|c| c.object).collect::<Vec<_>>(),
        vec![ups[1]]
    );
    let a = t.committed(ups[1], &[stored(1)]);
    assert_eq!(
        commits(&a).iter().map(|c| c.object).collect::<Vec<_>>(),
        vec![third[0]]
    );
    assert!(!t.committed(third[0], &[stored(2)]).is_empty());
    assert!(
        t.committed(third[0], &[stored(2)]).is_empty(),
        "answered twice: ignored"
    );
}

#[test]
fn a_failing_store_refuses_the_objects_batches_and_later_objects_still_commit() {
    let mut t = AppendTask::new(config());
    let first = uploads(&t.produce(0, 1, vec![batch(0, 1, 1_000)]).unwrap())[0];
    let second = uploads(&t.produce(0, 2, vec![batch(0, 2, 1_000)]).unwrap())[0];
    assert!(commits(&t.uploaded(second, true)).is_empty());
    // attempt 1 fails: tried again; attempt 2 fails: refused
    assert_eq!(uploads(&t.uploaded(first, false)), vec![first]);
    let a = t.uploaded(first, false);
    assert!(a.contains(&Action::Answer {
        request: 1,
        answers: vec![BatchAnswer::Refused(E::KafkaStorageError)]
    }));
    assert_eq!(
        commits(&a).iter().map(|c| c.object).collect::<Vec<_>>(),
        vec![second]
    );
}

#[test]
fn a_commit_refused_for_good_answers_its_batches_and_the_next_object_commits() {
    let mut t = AppendTask::new(config());
    let first = uploads(&t.produce(0, 1, vec![batch(0, 1, 1_000)]).unwrap())[0];
    let second = uploads(&t.produce(0, 2, vec![batch(0, 2, 1_000)]).unwrap())[0];
    assert_eq!(commits(&t.uploaded(first, true)).len(), 1);
    assert!(commits(&t.uploaded(second, true)).is_empty());
    assert!(
        t.commit_refused(second, E::KafkaStorageError).is_empty(),
        "not in flight"
    );
    let a = t.commit_refused(first, E::KafkaStorageError);
    assert!(a.contains(&Action::Answer {
        request: 1,
        answers: vec![BatchAnswer::Refused(E::KafkaStorageError)]
    }));
    assert_eq!(
        commits(&a).iter().map(|c| c.object).collect::<Vec<_>>(),
        vec![second]
    );
    assert_eq!(t.held_bytes(), 1_000);
}

#[test]
fn held_bytes_are_bounded_and_a_full_task_refuses_without_taking_anything() {
    let mut t = AppendTask::new(config());
    for r in 0..5 {
        t.produce(0, r, vec![batch(0, r as u32, 1_000)]).unwrap();
    }
    assert_eq!(t.held_bytes(), 5_000);
    assert_eq!(
        t.produce(0, 9, vec![batch(0, 9, 10)]),
        Err(AppendError::Full)
    );
    assert_eq!((t.waiting(), t.held_bytes()), (5, 5_000));
    assert_eq!(
        t.produce(0, 10, vec![]).unwrap(),
        vec![Action::Answer {
            request: 10,
            answers: vec![]
        }]
    );
}

/// Seeded random runs against the real batch coordinator: produces of 1-3 batches over 3
/// partitions, ticks, PUTs finishing in any order or failing, commits lost and resent. Every
/// produce is answered exactly once; every batch answered stored is found by the coordinator
/// at its offset, and its bytes in the uploaded object are the produced ones; when all is done
/// nothing is held.
#[test]
fn random_runs_answer_every_produce_once_with_the_bytes_at_their_offsets() {
    for seed in 0..30u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut t = AppendTask::new(AppendConfig {
            max_buffered_bytes: 20_000,
            ..config()
        });
        let mut coordinator = BatchCoordinator::new(100_000);
        for p in 0..3 {
            coordinator.create_partition(part(p));
        }
        let mut produced: HashMap<RequestId, Vec<ProducedBatch>> = HashMap::new();
        let mut answered: HashMap<RequestId, Vec<BatchAnswer>> = HashMap::new();
        let mut bodies: HashMap<ObjectId, Bytes> = HashMap::new();
        let mut puts: Vec<ObjectId> = Vec::new();
        let mut commit: Option<CommitBatches> = None;
        let mut now = 0i64;
        let mut next_request = 0u64;
        let mut tag = 0u32;
        for step in 0..2_000 {
            now += rng.gen_range(0..20);
            let mut actions = Vec::new();
            match rng.gen_range(0..10) {
                0..=3 if step < 1_500 => {
                    let n = rng.gen_range(1..4);
                    let batches: Vec<ProducedBatch> = (0..n)
                        .map(|_| {
                            tag += 1;
                            batch(rng.gen_range(0..3), tag, rng.gen_range(20..400))
                        })
                        .collect();
                    if let Ok(a) = t.produce(now, next_request, batches.clone()) {
                        produced.insert(next_request, batches);
                        actions = a;
                    }
                    next_request += 1;
                }
                4 | 5 => actions = t.tick(now),
                6 | 7 if !puts.is_empty() => {
                    let i = rng.gen_range(0..puts.len());
                    let object = puts.swap_remove(i);
                    actions = t.uploaded(object, rng.gen_bool(0.85));
                }
                _ => {
                    if let Some(c) = commit.take() {
                        if rng.gen_bool(0.2) {
                            actions = t.commit_failed(c.object);
                        } else {
                            let (answers, _) = coordinator.commit(now, &c).unwrap();
                            actions = t.committed(c.object, &answers);
                        }
                    } else {
                        actions = t.tick(now + 1_000);
                    }
                }
            }
            if step >= 1_500 {
                actions.extend(t.tick(now + 1_000));
            }
            for a in actions {
                match a {
                    Action::Upload { object, body } => {
                        bodies.insert(object, body);
                        puts.push(object);
                    }
                    Action::Commit(c) => {
                        assert!(commit.is_none(), "seed {seed}: two commits in flight");
                        commit = Some(c);
                    }
                    Action::Answer { request, answers } => {
                        assert!(
                            answered.insert(request, answers).is_none(),
                            "seed {seed}: answered twice"
                        );
                    }
                }
            }
        }
        // drain: finish every PUT and commit
        for _ in 0..10_000 {
            let mut actions = t.tick(now + 10_000);
            if let Some(object) = puts.pop() {
                actions.extend(t.uploaded(object, true));
            } else if let Some(c) = commit.take() {
                let (answers, _) = coordinator.commit(now, &c).unwrap();
                actions.extend(t.committed(c.object, &answers));
            } else if actions.is_empty() {
                break;
            }
            for a in actions {
                match a {
                    Action::Upload { object, body } => {
                        bodies.insert(object, body);
                        puts.push(object);
                    }
                    Action::Commit(c) => commit = Some(c),
                    Action::Answer { request, answers } => {
                        assert!(answered.insert(request, answers).is_none());
                    }
                }
            }
        }
        assert_eq!((t.waiting(), t.held_bytes()), (0, 0), "seed {seed}");
        assert_eq!(
            answered.len(),
            produced.len(),
            "seed {seed}: produces not answered"
        );
        let mut stored_batches = 0;
        for (request, answers) in &answered {
            let batches = &produced[request];
            assert_eq!(answers.len(), batches.len());
            for (b, a) in batches.iter().zip(answers) {
                match a {
                    BatchAnswer::Appended { base_offset, .. } => {
                        stored_batches += 1;
                        let found = coordinator
                            .find_batches(b.partition, *base_offset, 1)
                            .unwrap();
                        let c = found.coordinates[0];
                        assert_eq!(c.base_offset, *base_offset);
                        let (object, byte_offset, byte_len) =
                            c.object_range().expect("a batch, not a marker");
                        let body = &bodies[&object];
                        let at = byte_offset as usize;
                        assert_eq!(
                            &body[at..at + byte_len as usize],
                            &b.bytes[..],
                            "seed {seed}"
                        );
                    }
                    BatchAnswer::Refused(E::KafkaStorageError) => {}
                    other => panic!("seed {seed}: {other:?}"),
                }
            }
        }
        assert!(
            stored_batches > 100,
            "seed {seed}: only {stored_batches} stored"
        );
        coordinator.check_invariants().unwrap();
    }
}
