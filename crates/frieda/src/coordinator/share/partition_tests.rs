use super::*;

fn span(first: i64, last: i64) -> ReadSpan {
    ReadSpan {
        first,
        last,
        deliverable: true,
    }
}

fn sp() -> SharePartition {
    SharePartition::new(
        0,
        SharePartitionConfig {
            lock_duration_ms: 1000,
            delivery_count_limit: 3,
            max_record_locks: 10,
        },
    )
}

#[test]
fn acquire_hands_each_record_to_one_member() {
    let mut p = sp();
    let a = p.acquire("a", &[span(0, 4)], 100, 0);
    assert_eq!(
        a,
        vec![AcquiredRange {
            first: 0,
            last: 4,
            delivery_count: 1
        }]
    );
    assert_eq!(p.next_fetch_offset(), Some(5));
    // The same read again acquires nothing: every record is held by a.
    assert!(p.acquire("b", &[span(0, 4)], 100, 0).is_empty());
    let b = p.acquire("b", &[span(5, 7)], 2, 0);
    assert_eq!(
        b,
        vec![AcquiredRange {
            first: 5,
            last: 6,
            delivery_count: 1
        }]
    );
    assert_eq!(p.end_offset(), 7);
    assert_eq!(p.acquired(), 7);
}

#[test]
fn accept_moves_the_start_past_leading_done_records() {
    let mut p = sp();
    p.acquire("a", &[span(0, 4)], 100, 0);
    p.acknowledge("a", 1, 2, &[AckType::Accept], 0).unwrap();
    assert_eq!(p.start_offset(), 0, "offset 0 is still acquired");
    p.acknowledge("a", 0, 0, &[AckType::Accept], 0).unwrap();
    assert_eq!(p.start_offset(), 3);
    assert_eq!(p.in_flight(), 2);
}

#[test]
fn only_the_holder_acknowledges_and_nothing_applies_on_refusal() {
    let mut p = sp();
    p.acquire("a", &[span(0, 2)], 100, 0);
    p.acquire("b", &[span(3, 4)], 100, 0);
    assert_eq!(
        p.acknowledge("b", 2, 3, &[AckType::Accept], 0),
        Err(E::InvalidRecordState)
    );
    assert_eq!(p.state(3), Some((RecordState::Acquired, 1)));
    assert_eq!(
        p.acknowledge("a", 0, 0, &[AckType::Accept, AckType::Accept], 0),
        Err(E::InvalidRequest)
    );
    assert_eq!(
        p.acknowledge("a", 2, 1, &[AckType::Accept], 0),
        Err(E::InvalidRequest)
    );
    // Already acknowledged: not held any more.
    p.acknowledge("a", 0, 0, &[AckType::Accept], 0).unwrap();
    assert_eq!(p.acknowledge("a", 1, 1, &[AckType::Accept], 0), Ok(()));
    assert_eq!(
        p.acknowledge("a", 1, 1, &[AckType::Accept], 0),
        Err(E::InvalidRecordState)
    );
}

#[test]
fn release_redelivers_with_a_higher_count_until_the_limit_archives() {
    let mut p = sp();
    for round in 1..=3u16 {
        let a = p.acquire("a", &[span(0, 1)], 100, 0);
        assert_eq!(
            a,
            vec![AcquiredRange {
                first: 0,
                last: 1,
                delivery_count: round
            }]
        );
        p.acknowledge("a", 0, 1, &[AckType::Release], 0).unwrap();
    }
    // Third delivery released at the limit: archived, the start moves past both.
    assert_eq!(p.start_offset(), 2);
    let archived = p.take_archived();
    assert_eq!(
        archived,
        vec![
            (0, ArchiveReason::DeliveryLimit, 3),
            (1, ArchiveReason::DeliveryLimit, 3)
        ]
    );
}

#[test]
fn reject_archives_and_per_offset_types_apply_each() {
    let mut p = sp();
    p.acquire("a", &[span(0, 3)], 100, 0);
    p.acknowledge(
        "a",
        0,
        3,
        &[
            AckType::Accept,
            AckType::Reject,
            AckType::Release,
            AckType::Gap,
        ],
        0,
    )
    .unwrap();
    assert_eq!(p.start_offset(), 2);
    assert_eq!(p.state(2), Some((RecordState::Available, 1)));
    assert_eq!(p.state(3), Some((RecordState::Archived, 1)));
    assert_eq!(p.take_archived(), vec![(1, ArchiveReason::Rejected, 1)]);
    // The released record is acquired again before anything new.
    assert_eq!(p.next_fetch_offset(), Some(2));
    let again = p.acquire("b", &[span(2, 6)], 100, 0);
    assert_eq!(
        again,
        vec![
            AcquiredRange {
                first: 2,
                last: 2,
                delivery_count: 2
            },
            AcquiredRange {
                first: 4,
                last: 6,
                delivery_count: 1
            },
        ]
    );
}

#[test]
fn an_expired_lock_makes_records_available_again() {
    let mut p = sp();
    p.acquire("a", &[span(0, 1)], 100, 0);
    assert_eq!(p.next_lock_deadline(), Some(1000));
    assert_eq!(p.expire_locks(999), 0);
    assert_eq!(p.expire_locks(1000), 2);
    assert_eq!(
        p.acknowledge("a", 0, 1, &[AckType::Accept], 1000),
        Err(E::InvalidRecordState)
    );
    let b = p.acquire("b", &[span(0, 1)], 100, 1000);
    assert_eq!(
        b,
        vec![AcquiredRange {
            first: 0,
            last: 1,
            delivery_count: 2
        }]
    );
}

#[test]
fn renew_restarts_the_lock() {
    let mut p = sp();
    p.acquire("a", &[span(0, 0)], 100, 0);
    p.acknowledge("a", 0, 0, &[AckType::Renew], 900).unwrap();
    assert_eq!(p.expire_locks(1000), 0);
    assert_eq!(p.next_lock_deadline(), Some(1900));
    p.acknowledge("a", 0, 0, &[AckType::Accept], 1000).unwrap();
    assert_eq!(p.start_offset(), 1);
}

#[test]
fn releasing_a_member_gives_back_only_its_records() {
    let mut p = sp();
    p.acquire("a", &[span(0, 1)], 100, 0);
    p.acquire("b", &[span(2, 3)], 100, 0);
    assert_eq!(p.release_member("a"), 2);
    assert_eq!(p.state(0), Some((RecordState::Available, 1)));
    assert_eq!(p.state(2), Some((RecordState::Acquired, 1)));
}

#[test]
fn the_window_is_bounded_by_max_record_locks() {
    let mut p = sp();
    let a = p.acquire("a", &[span(0, 50)], 100, 0);
    assert_eq!(
        a,
        vec![AcquiredRange {
            first: 0,
            last: 9,
            delivery_count: 1
        }]
    );
    assert_eq!(p.next_fetch_offset(), None, "full: nothing to acquire");
    p.acknowledge("a", 0, 4, &[AckType::Accept], 0).unwrap();
    assert_eq!(p.next_fetch_offset(), Some(10));
}

#[test]
fn undeliverable_records_are_archived_not_handed_out() {
    let mut p = sp();
    let spans = [
        span(0, 1),
        ReadSpan {
            first: 2,
            last: 2,
            deliverable: false,
        },
        span(3, 3),
    ];
    let a = p.acquire("a", &spans, 100, 0);
    assert_eq!(
        a,
        vec![
            AcquiredRange {
                first: 0,
                last: 1,
                delivery_count: 1
            },
            AcquiredRange {
                first: 3,
                last: 3,
                delivery_count: 1
            },
        ]
    );
    p.acknowledge("a", 0, 1, &[AckType::Accept], 0).unwrap();
    assert_eq!(p.start_offset(), 3);
}

#[test]
fn the_log_start_moving_past_the_start_drops_those_records() {
    let mut p = sp();
    p.acquire("a", &[span(0, 3)], 100, 0);
    p.on_log_start(2);
    assert_eq!((p.start_offset(), p.end_offset()), (2, 4));
    p.on_log_start(10);
    assert_eq!((p.start_offset(), p.end_offset()), (10, 10));
    let a = p.acquire("a", &[span(8, 11)], 100, 0);
    assert_eq!(
        a,
        vec![AcquiredRange {
            first: 10,
            last: 11,
            delivery_count: 1
        }]
    );
}

#[test]
fn a_snapshot_restores_what_is_done_and_what_was_delivered() {
    let mut p = sp();
    p.acquire("a", &[span(0, 5)], 100, 0);
    p.acknowledge("a", 1, 1, &[AckType::Accept], 0).unwrap();
    p.acknowledge("a", 2, 2, &[AckType::Reject], 0).unwrap();
    p.acknowledge("a", 3, 3, &[AckType::Release], 0).unwrap();
    let snap = p.snapshot();
    assert_eq!(
        snap,
        ShareSnapshot {
            start_offset: 0,
            batches: vec![(0, 0, 0, 1), (1, 1, 2, 1), (2, 2, 4, 1), (3, 5, 0, 1)],
        }
    );
    let mut q = SharePartition::restore(&snap, p.config().clone());
    assert_eq!((q.start_offset(), q.end_offset()), (0, 6));
    // Everything that was acquired is available again, with its delivery count.
    let again = q.acquire("b", &[span(0, 7)], 100, 0);
    assert_eq!(
        again,
        vec![
            AcquiredRange {
                first: 0,
                last: 0,
                delivery_count: 2
            },
            AcquiredRange {
                first: 3,
                last: 5,
                delivery_count: 2
            },
            AcquiredRange {
                first: 6,
                last: 7,
                delivery_count: 1
            },
        ]
    );
    assert_eq!(q.completed_in_flight(), 2);
}

#[test]
fn a_staged_acknowledgement_waits_for_its_write() {
    let mut p = sp();
    p.acquire("a", &[span(0, 2)], 100, 0);
    p.stage_acknowledge("a", 0, 1, &[AckType::Accept], 0)
        .unwrap();
    // The snapshot to write shows the outcome; the records stay with a until it is written.
    assert_eq!(p.snapshot().batches, vec![(0, 1, 2, 1), (2, 2, 0, 1)]);
    assert_eq!(p.start_offset(), 0);
    assert_eq!(
        p.expire_locks(10_000),
        1,
        "only the unacknowledged record expires"
    );
    assert_eq!(
        p.acknowledge("a", 0, 0, &[AckType::Accept], 0),
        Err(E::InvalidRecordState)
    );
    p.rollback_pending();
    // The write failed: still a's, redelivered once the lock expires.
    assert_eq!(p.state(0), Some((RecordState::Acquired, 1)));
    assert_eq!(p.expire_locks(20_000), 2);
    let again = p.acquire("b", &[span(0, 2)], 100, 20_000);
    assert_eq!(
        again,
        vec![AcquiredRange {
            first: 0,
            last: 2,
            delivery_count: 2
        }]
    );
    p.stage_acknowledge(
        "b",
        0,
        2,
        &[AckType::Accept, AckType::Reject, AckType::Accept],
        0,
    )
    .unwrap();
    p.commit_pending();
    assert_eq!(p.start_offset(), 3);
    assert_eq!(p.take_archived(), vec![(1, ArchiveReason::Rejected, 2)]);
}

#[test]
fn acknowledgements_off_the_wire_at_any_offsets_end_quickly() {
    let mut p = sp();
    p.acquire("a", &[span(0, 2)], 100, 0);
    p.acknowledge("a", 0, 2, &[AckType::Accept], 0).unwrap();
    // Gaps below the window are done already; anything else there is refused, at once.
    assert_eq!(p.acknowledge("a", i64::MIN, 2, &[AckType::Gap], 0), Ok(()));
    assert_eq!(
        p.acknowledge("a", i64::MIN, i64::MAX, &[AckType::Accept], 0),
        Err(E::InvalidRecordState)
    );
    assert_eq!(
        p.acknowledge("a", 3, i64::MAX, &[AckType::Accept], 0),
        Err(E::InvalidRecordState)
    );
    assert_eq!(
        p.acknowledge("a", i64::MIN, i64::MAX, &[AckType::Accept, AckType::Gap], 0),
        Err(E::InvalidRequest)
    );
}

#[test]
fn fetch_span_covers_what_a_fetch_can_take() {
    let mut p = sp();
    assert_eq!(p.fetch_span(4), Some((0, 4)), "empty window: 4 new records");
    assert_eq!(
        p.fetch_span(50),
        Some((0, 10)),
        "no more than the window holds"
    );
    p.acquire("a", &[span(0, 5)], 100, 0);
    // 0..=5 acquired by a; 4 records of room past the end.
    assert_eq!(p.fetch_span(3), Some((6, 3)));
    assert_eq!(p.fetch_span(9), Some((6, 4)));
    p.acknowledge("a", 1, 1, &[AckType::Release], 0).unwrap();
    p.acknowledge("a", 3, 3, &[AckType::Release], 0).unwrap();
    // Available: 1 and 3 in the window, then room for 4 past its end (6..=9).
    assert_eq!(p.fetch_span(1), Some((1, 1)));
    assert_eq!(
        p.fetch_span(2),
        Some((1, 3)),
        "1..=3 holds both Available records"
    );
    assert_eq!(p.fetch_span(3), Some((1, 6)), "then one past the end");
    assert_eq!(p.fetch_span(100), Some((1, 9)));
    p.acquire("b", &[span(0, 50)], 100, 0);
    assert_eq!(p.fetch_span(5), None, "full: nothing to acquire");
}

#[test]
fn holds_names_members_with_acquired_records_not_already_being_acknowledged() {
    let mut p = sp();
    p.acquire("a", &[span(0, 5)], 100, 0);
    p.acquire("b", &[span(6, 9)], 100, 0);
    assert_eq!(p.fetch_span(10), None, "the window (10) is full");
    assert!(p.holds("a") && p.holds("b") && !p.holds("c"));
    // b's acknowledgement is being written: b holds nothing it could still give back.
    p.stage_acknowledge("b", 6, 9, &[AckType::Accept], 0)
        .unwrap();
    assert!(!p.holds("b"));
    p.commit_pending();
    p.acknowledge("a", 0, 5, &[AckType::Release], 0).unwrap();
    assert!(!p.holds("a"));
}
