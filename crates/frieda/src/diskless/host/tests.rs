use super::*;
use crate::diskless::coordinator::DEFAULT_MAX_BATCHES_PER_PARTITION;
use crate::diskless::testing::{appended, commit_of, header, part};

/// The records a host handed out, as its partition's log holds them.
type Log = Vec<Vec<u8>>;

fn append(log: &mut Log, step: Step<u32>) {
    match step {
        Step::Append { offset, record } => {
            assert_eq!(offset, log.len() as i64, "a record away from the log end");
            log.push(record);
        }
        other => panic!("expected an append, got {other:?}"),
    }
}

/// A host serving `partitions` partitions, their creation committed.
fn serving(partitions: i32, log: &mut Log) -> CoordinatorHost<u32> {
    let mut h = CoordinatorHost::load(DEFAULT_MAX_BATCHES_PER_PARTITION);
    h.loaded(0);
    assert!(h.high_watermark(0).is_empty());
    assert!(h.is_serving());
    for p in 0..partitions {
        append(log, h.create_partition(part(p)).unwrap());
    }
    assert!(h.high_watermark(log.len() as i64).is_empty());
    h
}

#[test]
fn a_commit_is_answered_and_seen_by_readers_only_below_the_high_watermark() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    append(
        &mut log,
        h.commit(5, 1, &commit_of(1, &[(0, header(3, -1, -1, 0))]))
            .unwrap(),
    );
    append(
        &mut log,
        h.commit(6, 2, &commit_of(2, &[(0, header(2, -1, -1, 0))]))
            .unwrap(),
    );
    // Decided on the first's state (offsets follow each other), invisible to readers.
    let found = h.find_batches(part(0), 0, u64::MAX).unwrap();
    assert!(found.coordinates.is_empty());
    assert_eq!(found.high_watermark, 0);
    assert_eq!(h.waiters(), 2);

    let answered = h.high_watermark(2);
    assert_eq!(
        answered,
        vec![(1, Outcome::Batches(vec![appended(0, 2)]))],
        "only the record below the high watermark"
    );
    let found = h.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!(found.high_watermark, 3);
    assert_eq!(found.coordinates.len(), 1);
    assert_eq!(
        h.find_batches(part(0), 4, u64::MAX),
        Err(E::OffsetOutOfRange),
        "above what readers see"
    );

    let answered = h.high_watermark(3);
    assert_eq!(answered, vec![(2, Outcome::Batches(vec![appended(3, 4)]))]);
    assert_eq!(
        h.find_batches(part(0), 3, u64::MAX).unwrap().high_watermark,
        5
    );
    assert_eq!(h.waiters(), 0);
    assert!(
        h.high_watermark(2).is_empty(),
        "a lower high watermark changes nothing"
    );
}

#[test]
fn a_resent_commit_waits_for_the_first_record_or_is_answered_at_once_once_it_is_committed() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    let commit = commit_of(1, &[(0, header(1, 7, 0, 0))]);
    append(&mut log, h.commit(5, 1, &commit).unwrap());
    assert_eq!(h.commit(6, 2, &commit).unwrap(), Step::Wait);
    assert_eq!(log.len(), 2, "a resend writes nothing");
    let answered = h.high_watermark(2);
    assert_eq!(
        answered,
        vec![
            (1, Outcome::Batches(vec![appended(0, 0)])),
            (2, Outcome::Batches(vec![appended(0, 0)])),
        ]
    );
    assert_eq!(
        h.commit(7, 3, &commit).unwrap(),
        Step::Answered(3, Outcome::Batches(vec![appended(0, 0)]))
    );
}

#[test]
fn a_load_replays_the_log_and_serves_once_the_high_watermark_reaches_its_end() {
    let mut log = Log::new();
    let mut leader = serving(2, &mut log);
    for i in 0..6u32 {
        let c = commit_of(
            u128::from(i) + 1,
            &[
                (0, header(2, 9, 0, 2 * i as i32)),
                (1, header(1, -1, -1, 0)),
            ],
        );
        append(&mut log, leader.commit(i64::from(i), i, &c).unwrap());
    }
    leader.high_watermark(log.len() as i64 - 2);

    // A replica that had every record (the last two not yet committed) takes over.
    let mut next = CoordinatorHost::<u32>::load(DEFAULT_MAX_BATCHES_PER_PARTITION);
    for (o, r) in log.iter().enumerate() {
        next.replay(o as i64, r).unwrap();
    }
    next.high_watermark(log.len() as i64 - 3);
    next.loaded(log.len() as i64);
    assert_eq!(
        next.commit(9, 99, &commit_of(50, &[(0, header(1, -1, -1, 0))])),
        Err(HostError::Loading),
        "its high watermark lags the log it loaded"
    );
    assert_eq!(
        next.find_batches(part(0), 0, 1),
        Err(E::CoordinatorLoadInProgress)
    );
    assert!(next.high_watermark(log.len() as i64).is_empty());
    assert!(next.is_serving());
    assert_eq!(
        next.coordinator().state_digest(),
        leader.coordinator().state_digest(),
        "the same state as the leader that wrote the log"
    );
    assert_eq!(
        next.find_batches(part(0), 0, u64::MAX)
            .unwrap()
            .high_watermark,
        12
    );
    // The producer's next batch follows on (its state came back with the log).
    append(
        &mut log,
        next.commit(10, 7, &commit_of(60, &[(0, header(1, 9, 0, 12))]))
            .unwrap(),
    );
    assert_eq!(
        next.high_watermark(log.len() as i64),
        vec![(7, Outcome::Batches(vec![appended(12, 12)]))]
    );
}

#[test]
fn a_failed_write_hands_back_every_waiter_and_stops_serving() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    append(
        &mut log,
        h.commit(1, 1, &commit_of(1, &[(0, header(1, -1, -1, 0))]))
            .unwrap(),
    );
    append(&mut log, h.delete_records(2, 2, part(0), 0).unwrap());
    let mut back = h.fail();
    back.sort();
    assert_eq!(back, vec![1, 2]);
    assert_eq!(h.waiters(), 0);
    assert_eq!(
        h.commit(3, 3, &commit_of(2, &[(0, header(1, -1, -1, 0))])),
        Err(HostError::Failed)
    );
    assert_eq!(HostError::Failed.code(), E::NotCoordinator);
    assert!(
        h.high_watermark(3).is_empty(),
        "nothing answered after a failure"
    );
}

#[test]
fn delete_records_is_answered_below_the_high_watermark_and_bounded_by_what_readers_see() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    append(
        &mut log,
        h.commit(1, 1, &commit_of(1, &[(0, header(4, -1, -1, 0))]))
            .unwrap(),
    );
    assert_eq!(
        h.delete_records(2, 2, part(0), 2),
        Err(HostError::Refused(E::OffsetOutOfRange)),
        "offsets no reader can see yet"
    );
    h.high_watermark(log.len() as i64);
    append(&mut log, h.delete_records(2, 3, part(0), -1).unwrap());
    assert_eq!(
        h.high_watermark(log.len() as i64),
        vec![(3, Outcome::LogStart(4))]
    );
    assert_eq!(
        h.delete_records(3, 4, part(3), 0),
        Err(HostError::Refused(E::UnknownTopicOrPartition))
    );
}

#[test]
fn objects_are_deletable_only_while_no_decision_is_pending() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    // Every batch refused (partition 5 does not exist): nothing names the object.
    append(
        &mut log,
        h.commit(1, 1, &commit_of(1, &[(5, header(1, -1, -1, 0))]))
            .unwrap(),
    );
    assert!(
        h.deletable(1_000, 0).is_empty(),
        "its mark is not committed"
    );
    h.high_watermark(log.len() as i64);
    let deletable = h.deletable(1_000, 0);
    assert_eq!(deletable.len(), 1);
    append(&mut log, h.objects_deleted(&[deletable[0].0]).unwrap());
    h.high_watermark(log.len() as i64);
    assert!(h.deletable(1_000, 0).is_empty());
    assert_eq!(h.coordinator().object_count(), 0);
}

#[test]
fn a_corrupt_record_stops_the_load() {
    let mut log = Log::new();
    let _ = serving(1, &mut log);
    let mut bad = log[0].clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let mut h = CoordinatorHost::<u32>::load(DEFAULT_MAX_BATCHES_PER_PARTITION);
    assert!(h.replay(0, &bad).is_err());
    assert_eq!(h.log_end(), 0, "nothing applied");
}

#[test]
fn the_sweep_takes_old_objects_the_coordinator_does_not_know_and_nothing_pending() {
    let mut log = Log::new();
    let mut h = serving(1, &mut log);
    let at = |ms: i64, n: u128| {
        crate::diskless::coordinator::ObjectId(uuid::Uuid::from_u128(
            (ms as u128) << 80 | 0x7000 << 64 | n,
        ))
    };
    let mut committed = commit_of(0, &[(0, header(1, -1, -1, 0))]);
    committed.object = at(1_000, 1);
    append(&mut log, h.commit(2_000, 1, &committed).unwrap());
    let orphan = at(1_000, 2);
    let young = at(50_000, 3);
    let listed = [committed.object, orphan, young];
    assert_eq!(
        h.sweepable(&listed, 70_000, 60_000),
        vec![orphan],
        "not the pending commit's object, not the young one"
    );
    h.high_watermark(log.len() as i64);
    assert_eq!(h.sweepable(&listed, 70_000, 60_000), vec![orphan]);
    assert_eq!(h.sweepable(&listed, 110_000, 60_000), vec![orphan, young]);
    h.fail();
    assert!(
        h.sweepable(&listed, 110_000, 60_000).is_empty(),
        "not serving"
    );
}
