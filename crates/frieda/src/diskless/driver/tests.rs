//! The drivers against a real (unreplicated) partition log and an in-memory bucket: produced
//! batches come back at their offsets, an idempotent resend is answered with the first offsets,
//! and a coordinator loaded again from the log serves the same partitions.

use super::coordinator::HostedCoordinator;
use super::route::CoordinatorRef;
use super::*;
use crate::clock::now_ms;
use crate::diskless::append::ProducedBatch;
use crate::diskless::coordinator::BatchAnswer;
use crate::diskless::testing::appended;
use crate::storage::partition::Partition;
use crate::storage::topic_config::TopicConfigs;
use crate::storage::writer::LogWriters;
use bytes::{Bytes, BytesMut};
use frieda_log::{BatchHeader, LogConfig, PartitionLog};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use std::path::Path;
use std::time::Duration;

fn open_log(dir: &Path, writers: &LogWriters) -> Arc<Partition> {
    let (log, _) = PartitionLog::open(dir, LogConfig::default(), now_ms()).unwrap();
    let name: Arc<str> = Arc::from(crate::diskless::config::COORDINATOR_TOPIC);
    Arc::new(Partition::new(
        name.clone(),
        0,
        log,
        writers.for_partition(&name, 0),
        TopicConfigs::default().produce_policy(&TopicConfigs::default()),
    ))
}

/// An idempotent producer's batch of `n` records (`value-<first + i>`) at sequence `seq`.
fn batch(pid: i64, seq: i32, first: usize, n: usize) -> (Bytes, BatchHeader) {
    let records: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: pid,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: seq + i as i32,
            timestamp: 1_000 + (first + i) as i64,
            key: None,
            value: Some(Bytes::from(format!("value-{}", first + i))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    let header = BatchHeader::parse(&buf).unwrap();
    (buf.freeze(), header)
}

fn part(i: i32) -> DisklessPartition {
    DisklessPartition {
        topic_id: uuid::Uuid::from_u128(0xd15c_1e55),
        partition: i,
    }
}

async fn produce(d: &Diskless, batches: Vec<(i32, (Bytes, BatchHeader))>) -> Vec<BatchAnswer> {
    let batches = batches
        .into_iter()
        .map(|(p, (bytes, header))| ProducedBatch {
            partition: part(p),
            bytes,
            header,
            verification: None,
        })
        .collect();
    let rx = d.appender.produce(batches).unwrap();
    tokio::time::timeout(Duration::from_secs(10), rx)
        .await
        .expect("answered within 10 s")
        .unwrap()
}

async fn load(d: &Diskless, log: &Arc<Partition>) {
    let host = HostedCoordinator::load(0, 0, log.clone(), d.new_coordinator(), 1, None).unwrap();
    d.coordinators.install(host);
    for _ in 0..500 {
        if d.coordinators
            .get(0)
            .is_some_and(|h| h.offsets(part(0)).is_ok())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the coordinator did not start serving");
}

/// Every value of `partition` read from offset 0, with its offset.
async fn read_all(d: &Diskless, partition: DisklessPartition) -> Vec<(i64, String)> {
    let host = d.coordinators.get(0).unwrap();
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = read::read(
            &CoordinatorRef::Local(host.clone()),
            &d.objects,
            partition,
            offset,
            100,
            false,
        )
        .await
        .unwrap();
        if r.records.is_empty() {
            assert_eq!(
                offset, r.high_watermark,
                "nothing read below the high watermark"
            );
            return out;
        }
        let mut buf = r.records.clone();
        for set in RecordBatchDecoder::decode_all(&mut buf).unwrap() {
            for rec in set.records {
                out.push((
                    rec.offset,
                    String::from_utf8(rec.value.unwrap().to_vec()).unwrap(),
                ));
                offset = rec.offset + 1;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produced_batches_read_back_at_their_offsets_and_survive_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let writers = LogWriters::start(1);
    let log = open_log(dir.path(), &writers);
    let config = DisklessConfig {
        commit_interval_ms: 5,
        ..DisklessConfig::default()
    };
    let d = Diskless::start(1, config, Arc::new(RemoteStore::in_memory()), None, None);
    load(&d, &log).await;

    // Two partitions in one produce (one object), then more.
    let answers = produce(&d, vec![(0, batch(7, 0, 0, 3)), (1, batch(8, 0, 0, 2))]).await;
    assert_eq!(answers, vec![appended(0, 2), appended(0, 1),]);
    let answers = produce(&d, vec![(0, batch(7, 3, 3, 4))]).await;
    assert_eq!(answers, vec![appended(3, 6)]);
    // An idempotent resend (a new object) is answered with the first offsets, stored once.
    let answers = produce(&d, vec![(0, batch(7, 3, 3, 4))]).await;
    assert_eq!(
        answers,
        vec![BatchAnswer::Duplicate {
            base_offset: 3,
            last_offset: 6
        }]
    );
    // A gap in the sequence is refused.
    let answers = produce(&d, vec![(0, batch(7, 9, 9, 1))]).await;
    assert!(
        matches!(answers[..], [BatchAnswer::Refused(_)]),
        "{answers:?}"
    );

    let want: Vec<(i64, String)> = (0..7).map(|i| (i, format!("value-{i}"))).collect();
    assert_eq!(read_all(&d, part(0)).await, want);
    assert_eq!(read_all(&d, part(1)).await.len(), 2);
    let host = d.coordinators.get(0).unwrap();
    assert_eq!(
        host.offsets(part(0))
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((0, 7))
    );
    // By time: the record with timestamp 1_004 is value-4 at offset 4.
    let found = read::offset_for_time(
        &CoordinatorRef::Local(host.clone()),
        &d.objects,
        part(0),
        read::TimeLookup::AtOrAfter(1_004),
    )
    .await
    .unwrap();
    assert_eq!(found, Some((4, 1_004)));
    let max = read::offset_for_time(
        &CoordinatorRef::Local(host.clone()),
        &d.objects,
        part(0),
        read::TimeLookup::Max,
    )
    .await
    .unwrap();
    assert_eq!(max, Some((6, 1_006)));

    // Loaded again from the log: the same offsets, and the producer state (the resend is
    // still a duplicate).
    d.coordinators.unload(0);
    assert!(d.coordinators.get(0).is_none());
    load(&d, &log).await;
    assert_eq!(read_all(&d, part(0)).await, want);
    let answers = produce(&d, vec![(0, batch(7, 3, 3, 4))]).await;
    assert_eq!(
        answers,
        vec![BatchAnswer::Duplicate {
            base_offset: 3,
            last_offset: 6
        }]
    );
    let answers = produce(&d, vec![(0, batch(7, 7, 7, 1))]).await;
    assert_eq!(answers, vec![appended(7, 7)]);

    // Compaction: partition 0's three batches (in three shared objects) become one object of
    // its own and one coordinate; reads, time lookups and a reload see the same records.
    let host = d.coordinators.get(0).unwrap();
    let policy = crate::diskless::coordinator::CompactionPolicy {
        max_bytes: 1 << 20,
        max_age_ms: 0,
    };
    // a spent byte budget holds the run back (the partition is not crowded)
    let budget = crate::remote::quota::ByteRate::new(1);
    budget.spend(1 << 20, std::time::Instant::now());
    let held = host.compact(&d.store, part(0), &policy, Some(&budget), 1);
    assert!(held.await.unwrap().is_none(), "the budget is spent");
    let budget = crate::remote::quota::ByteRate::new(1);
    let done = host.compact(&d.store, part(0), &policy, Some(&budget), 1);
    let done = done.await.unwrap().expect("due by age");
    assert!(
        !budget.throttle(std::time::Instant::now()).is_zero(),
        "the run spent its object's bytes"
    );
    assert_eq!(
        (done.coordinates, done.base_offset, done.last_offset),
        (3, 0, 7)
    );
    assert!(host
        .compact(&d.store, part(0), &policy, None, 1)
        .await
        .unwrap()
        .is_none());
    let mut want = want;
    want.push((7, "value-7".into()));
    assert_eq!(read_all(&d, part(0)).await, want);
    assert_eq!(
        read_all(&d, part(1)).await.len(),
        2,
        "the other partition's batches stay"
    );
    let found = read::offset_for_time(
        &CoordinatorRef::Local(host.clone()),
        &d.objects,
        part(0),
        read::TimeLookup::AtOrAfter(1_004),
    )
    .await
    .unwrap();
    assert_eq!(found, Some((4, 1_004)));
    d.coordinators.unload(0);
    load(&d, &log).await;
    assert_eq!(read_all(&d, part(0)).await, want);
    let answers = produce(&d, vec![(0, batch(7, 3, 3, 4))]).await;
    assert!(
        matches!(answers[..], [BatchAnswer::Duplicate { base_offset: 3, .. }]),
        "the producer state is compaction's no business: {answers:?}"
    );

    // DeleteRecords: the log start moves (and stays over a reload); below it is out of range.
    let host = d.coordinators.get(0).unwrap();
    assert_eq!(host.delete_records(part(0), 3).await, Ok(3));
    assert_eq!(
        host.delete_records(part(0), 99).await,
        Err(E::OffsetOutOfRange)
    );
    assert_eq!(host.delete_records(part(5), -1).await, Ok(0));
    assert_eq!(
        host.offsets(part(0))
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((3, 8))
    );
    let below = read::read(
        &CoordinatorRef::Local(host.clone()),
        &d.objects,
        part(0),
        0,
        100,
        false,
    )
    .await;
    assert_eq!(
        below.map(|r| r.high_watermark).err(),
        Some(E::OffsetOutOfRange)
    );
    d.coordinators.unload(0);
    load(&d, &log).await;
    assert_eq!(
        d.coordinators
            .get(0)
            .unwrap()
            .offsets(part(0))
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((3, 8))
    );
}

/// Compaction's byte budget past the half of the coordinate bound, through the driver: a
/// partition holding half its bound is compacted although the budget is in debt, and its run
/// spends nothing from it (so the budget never makes a partition reach the bound); below half,
/// the same spent budget holds a run back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowded_partition_is_compacted_past_a_spent_budget_without_spending_it() {
    let dir = tempfile::tempdir().unwrap();
    let writers = LogWriters::start(1);
    let log = open_log(dir.path(), &writers);
    let config = DisklessConfig {
        commit_interval_ms: 5,
        max_batches_per_partition: 8,
        ..DisklessConfig::default()
    };
    let d = Diskless::start(1, config, Arc::new(RemoteStore::in_memory()), None, None);
    load(&d, &log).await;
    let host = d.coordinators.get(0).unwrap();
    let policy = crate::diskless::coordinator::CompactionPolicy {
        max_bytes: 1 << 20,
        max_age_ms: i64::MAX,
    };
    let now = std::time::Instant::now;
    let budget = crate::remote::quota::ByteRate::new(1);
    budget.spend(1 << 20, now());
    let debt = budget.throttle(now());
    // three batches of partition 0 (each its own object), four of partition 1
    for i in 0..4 {
        if i < 3 {
            produce(&d, vec![(0, batch(7, i, i as usize, 1))]).await;
        }
        produce(&d, vec![(1, batch(8, i, i as usize, 1))]).await;
    }
    // partition 0 holds 3 of 8: not crowded, not due by age or size, and the budget is spent
    let held = host.compact(&d.store, part(0), &policy, Some(&budget), 1);
    assert!(held.await.unwrap().is_none());
    // partition 1 holds 4 of 8: crowded, compacted in debt, spending nothing
    let done = host.compact(&d.store, part(1), &policy, Some(&budget), 1);
    let done = done
        .await
        .unwrap()
        .expect("a crowded partition is compacted");
    assert!(done.crowded);
    assert_eq!(
        (done.coordinates, done.base_offset, done.last_offset),
        (4, 0, 3)
    );
    assert!(
        budget.throttle(now()) <= debt,
        "a crowded run spent from the budget"
    );
    let want: Vec<(i64, String)> = (0..4).map(|i| (i, format!("value-{i}"))).collect();
    assert_eq!(read_all(&d, part(1)).await, want);
    assert_eq!(host.coordinate_counts().len(), 2);
    assert!(host
        .coordinate_counts()
        .iter()
        .all(|&(p, n, refused)| refused == 0 && n == if p == part(1) { 1 } else { 3 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_coordinator_a_commit_is_retried_until_the_commit_age_bound() {
    let config = DisklessConfig {
        commit_interval_ms: 5,
        commit_max_age_ms: 400,
        ..DisklessConfig::default()
    };
    let d = Diskless::start(1, config, Arc::new(RemoteStore::in_memory()), None, None);
    let started = std::time::Instant::now();
    let answers = produce(&d, vec![(0, batch(7, 0, 0, 1))]).await;
    assert_eq!(answers, vec![BatchAnswer::Refused(E::RequestTimedOut)]);
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_topics_objects_and_orphans_leave_the_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let writers = LogWriters::start(1);
    let log = open_log(dir.path(), &writers);
    let config = DisklessConfig {
        commit_interval_ms: 5,
        ..DisklessConfig::default()
    };
    let store = Arc::new(RemoteStore::in_memory());
    let d = Diskless::start(1, config, store.clone(), None, None);
    load(&d, &log).await;
    for seq in 0..3 {
        produce(&d, vec![(0, batch(7, seq, seq as usize, 1))]).await;
    }
    // An upload whose commit never came, from long ago (its UUIDv7 time is 1 s after the epoch).
    let orphan = uuid::Uuid::from_u128((1_000u128 << 80) | (0x7 << 76) | (0b10 << 62) | 42);
    store
        .put(&store.wal_key(orphan), Bytes::from_static(b"lost"))
        .await
        .unwrap();
    let listed = || async { store.list(&store.wal_prefix()).await.unwrap().len() };
    assert_eq!(listed().await, 4);
    let host = d.coordinators.get(0).unwrap();
    // The topic lives: nothing to delete but the orphan.
    let live = std::collections::HashSet::from([part(0).topic_id]);
    assert_eq!(host.forget_deleted_topics(&live).await, Ok(0));
    assert_eq!(
        host.collect_garbage(&store, 0, 60_000).await.unwrap(),
        (0, 1)
    );
    assert_eq!(listed().await, 3);
    // The topic deleted: its objects go once the delay passed.
    assert_eq!(host.forget_deleted_topics(&Default::default()).await, Ok(1));
    assert_eq!(
        host.collect_garbage(&store, 60_000, 60_000).await.unwrap(),
        (0, 0)
    );
    for _ in 0..100 {
        if host.collect_garbage(&store, 0, 60_000).await.unwrap().0 > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(listed().await, 0);
    // Replayed, the coordinator knows the objects are gone.
    d.coordinators.unload(0);
    load(&d, &log).await;
    let host = d.coordinators.get(0).unwrap();
    assert_eq!(
        host.collect_garbage(&store, 0, 60_000).await.unwrap(),
        (0, 0)
    );
    assert_eq!(
        host.offsets(part(0))
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((0, 0))
    );
}

#[test]
fn retention_moves_past_old_batches_and_beyond_the_byte_bound() {
    use crate::diskless::coordinator::{Coordinate, Found, Location, ObjectId};
    // Four batches of 100 bytes, offsets 0-9, 10-19, ..., largest timestamps 1_000, 2_000, ...
    let coordinates = (0..4)
        .map(|i| Coordinate {
            location: Location::Object {
                object: ObjectId(uuid::Uuid::from_u128(i as u128)),
                byte_offset: 0,
                byte_len: 100,
            },
            base_offset: i * 10,
            last_offset: i * 10 + 9,
            max_timestamp: (i + 1) * 1_000,
        })
        .collect();
    let found = Found {
        coordinates,
        high_watermark: 40,
        log_start: 0,
        last_stable_offset: 40,
        aborted: Vec::new(),
    };
    use coordinator::retention_point as at;
    assert_eq!(at(&found, 10_000, -1, -1), None);
    // time: at 3_500 with 1_000 ms kept, batches with timestamps 1_000 and 2_000 expire
    assert_eq!(at(&found, 3_500, 1_000, -1), Some(20));
    assert_eq!(at(&found, 3_500, 10_000, -1), None);
    assert_eq!(at(&found, 100_000, 0, -1), Some(40));
    // bytes: 250 kept means the oldest two go
    assert_eq!(at(&found, 0, -1, 250), Some(20));
    assert_eq!(at(&found, 0, -1, 400), None);
    assert_eq!(at(&found, 0, -1, 0), Some(40));
    // both: the further one
    assert_eq!(at(&found, 2_500, 1_000, 350), Some(10));
    assert_eq!(at(&found, 3_500, 1_000, 350), Some(20));
}

/// Broker 2's link to broker 1 (whose coordinator `to` is loaded), in process: each request is
/// encoded, served by [`route::serve`] on broker 1 and its answer encoded back, as the Envelope
/// handler does; `down` makes broker 1 unreachable.
struct InProcessLink {
    to: Arc<Diskless>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl route::CoordinatorLink for InProcessLink {
    fn leader_of(&self, _index: i32) -> Option<i32> {
        Some(1)
    }

    fn me(&self) -> i32 {
        2
    }

    fn rack_peers(&self) -> Vec<i32> {
        Vec::new()
    }

    fn call(&self, to: i32, request: Vec<u8>, _timeout: Duration) -> route::Reply {
        assert_eq!(to, 1);
        let (d, down) = (self.to.clone(), self.down.clone());
        Box::pin(async move {
            if down.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(std::io::Error::other("broker 1 unreachable"));
            }
            let req = crate::diskless::wire::decode_request(&request).unwrap();
            let answer = d.serve(req).await;
            Ok(Bytes::from(crate::diskless::wire::encode_response(&answer)))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_the_coordinator_commits_and_reads_through_the_one_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let writers = LogWriters::start(1);
    let log = open_log(dir.path(), &writers);
    let store = Arc::new(RemoteStore::in_memory());
    let config = DisklessConfig {
        commit_interval_ms: 5,
        ..DisklessConfig::default()
    };
    let one = Diskless::start(1, config.clone(), store.clone(), None, None);
    load(&one, &log).await;
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let link: Arc<dyn route::CoordinatorLink> = Arc::new(InProcessLink {
        to: one.clone(),
        down: down.clone(),
    });
    let two = Diskless::start(2, config, store.clone(), None, Some(link));
    assert!(two.coordinator(part(0)).unwrap().is_remote());

    // Both brokers take produces of the same partitions; offsets are dense across them.
    let a = produce(&one, vec![(0, batch(7, 0, 0, 3))]).await;
    let b = produce(&two, vec![(0, batch(8, 0, 3, 2)), (1, batch(8, 0, 0, 1))]).await;
    assert_eq!(a, vec![appended(0, 2)]);
    assert_eq!(b, vec![appended(3, 4), appended(0, 0)]);
    // broker 2 uploaded its own object
    assert_eq!(store.list(&store.wal_prefix()).await.unwrap().len(), 2);

    // While broker 1 is unreachable, broker 2's commit waits and is sent again.
    down.store(true, std::sync::atomic::Ordering::Relaxed);
    let rx = two
        .appender
        .produce(vec![ProducedBatch {
            partition: part(0),
            bytes: batch(8, 2, 5, 1).0,
            header: batch(8, 2, 5, 1).1,
            verification: None,
        }])
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    down.store(false, std::sync::atomic::Ordering::Relaxed);
    let answers = tokio::time::timeout(Duration::from_secs(10), rx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answers, vec![appended(5, 5)]);

    // Reads, offsets and DeleteRecords through broker 2 see what broker 1's coordinator holds.
    let remote = two.coordinator(part(0)).unwrap();
    assert_eq!(
        remote
            .offsets(part(0))
            .await
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((0, 6))
    );
    let r = read::read(&remote, &two.objects, part(0), 3, 1 << 20, false)
        .await
        .unwrap();
    assert_eq!(r.high_watermark, 6);
    let mut bytes = r.records.clone();
    let offsets: Vec<i64> = RecordBatchDecoder::decode_all(&mut bytes)
        .unwrap()
        .into_iter()
        .flat_map(|s| s.records)
        .map(|rec| rec.offset)
        .collect();
    assert_eq!(offsets, vec![3, 4, 5]);
    assert_eq!(remote.delete_records(part(0), 3).await, Ok(3));
    assert_eq!(
        one.coordinators
            .get(0)
            .unwrap()
            .offsets(part(0))
            .map(|o| (o.log_start, o.high_watermark)),
        Ok((3, 6))
    );
    assert_eq!(
        remote.find_batches(part(0), 1, 100).await.err(),
        Some(E::OffsetOutOfRange)
    );

    // Long polls: a count the asker does not know is answered at once; the current one is
    // held until a commit comes below the high watermark, and on broker 2 the waiting fetches'
    // mirror moves with it.
    let local = one.coordinators.get(0).unwrap();
    let now = *local.changes().borrow();
    assert_eq!(
        remote
            .changed_since(now.wrapping_add(7), Duration::from_secs(3))
            .await,
        Ok(now)
    );
    let t0 = std::time::Instant::now();
    assert_eq!(
        remote.changed_since(now, Duration::from_millis(200)).await,
        Ok(now)
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "answered before anything changed"
    );
    let mut mirror = watch::changes(&two).unwrap();
    // (the mirror's poller first learns the count: one move, then none without a commit)
    tokio::time::sleep(Duration::from_millis(300)).await;
    mirror.borrow_and_update();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        !mirror.has_changed().unwrap(),
        "the mirror moved without a commit"
    );
    let poll = tokio::spawn({
        let remote = remote.clone();
        async move { remote.changed_since(now, Duration::from_secs(5)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t0 = std::time::Instant::now();
    assert_eq!(
        produce(&one, vec![(0, batch(7, 3, 6, 1))]).await,
        vec![appended(6, 6)]
    );
    let changed = tokio::time::timeout(Duration::from_secs(3), poll)
        .await
        .expect("the long poll was not answered after the commit")
        .unwrap()
        .unwrap();
    assert_ne!(changed, now);
    tokio::time::timeout(Duration::from_secs(3), mirror.changed())
        .await
        .expect("broker 2's mirror did not move")
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));

    // Unreachable: a lookup fails as not reached (the handlers answer NOT_LEADER_OR_FOLLOWER).
    down.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(remote.offsets(part(0)).await, Err(E::RequestTimedOut));
    assert_eq!(
        remote.changed_since(now, Duration::from_secs(1)).await,
        Err(E::RequestTimedOut)
    );
}

#[test]
fn the_client_rack_is_read_from_its_client_id() {
    assert_eq!(client_rack("app,diskless_az=rack-b"), Some("rack-b"));
    assert_eq!(client_rack("diskless_az=a"), Some("a"));
    assert_eq!(client_rack("inkless_az=az1, aaa=bbb"), Some("az1"));
    assert_eq!(client_rack("x inkless_az=az2"), Some("az2"));
    for none in [
        "",
        "app",
        "mydiskless_az=a",
        "diskless_az=",
        "diskless_az=a=b",
    ] {
        assert_eq!(client_rack(none), None, "{none:?}");
    }
}

/// A 3-broker image (racks r1, r2, r2; broker 3 fenced when `fenced3`) with a diskless topic of
/// 4 partitions whose image leaders are broker 1, 2, 3 and none.
fn racked_image(fenced3: bool) -> frieda_meta::MetadataImage {
    let mut image = frieda_meta::MetadataImage::default();
    for (id, rack) in [(1, "r1"), (2, "r2"), (3, "r2")] {
        image.brokers.insert(
            id,
            frieda_meta::BrokerRegistration {
                id,
                incarnation: uuid::Uuid::from_u128(id as u128),
                endpoints: Vec::new(),
                rack: Some(rack.to_string()),
                fenced: id == 3 && fenced3,
                epoch: 1,
                offline_replicas: Default::default(),
                clean_shutdown: false,
            },
        );
    }
    let partitions = [1, 2, 3, frieda_meta::NO_LEADER]
        .into_iter()
        .map(|leader| frieda_meta::PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader,
            leader_epoch: 4,
            partition_epoch: 1,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        })
        .collect();
    let configs = [(
        crate::diskless::config::DISKLESS_ENABLE.to_string(),
        "true".to_string(),
    )];
    image.topics.insert(
        "dl".into(),
        frieda_meta::TopicImage {
            id: uuid::Uuid::from_u128(0xd1),
            configs: configs.into_iter().collect(),
            partitions,
            remote: Default::default(),
        },
    );
    image
}

#[test]
fn a_diskless_partition_is_served_by_a_broker_of_the_clients_rack_else_by_a_live_one() {
    let image = racked_image(false);
    let t = &image.topics["dl"];
    let leaders = |client: Option<&str>| -> Vec<i32> {
        t.partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = served(&image, t, i as i32, p, client);
                assert_eq!(
                    (s.replicas.clone(), s.isr.clone()),
                    (vec![s.leader], vec![s.leader])
                );
                assert_eq!(s.leader_epoch, 4);
                s.leader
            })
            .collect()
    };
    // rack r1 has broker 1 only; rack r2 brokers 2 and 3, alternating over the partitions
    assert_eq!(leaders(Some("c,diskless_az=r1")), vec![1, 1, 1, 1]);
    let r2 = leaders(Some("c,diskless_az=r2"));
    assert!(r2.iter().all(|b| [2, 3].contains(b)), "{r2:?}");
    assert_ne!(r2[0], r2[1]);
    assert_eq!(r2[0], r2[2]);
    // no rack, or a rack without a live broker: the image's leader, and for the leaderless
    // partition one of the live brokers
    for client in [None, Some("c"), Some("diskless_az=r9")] {
        let got = leaders(client);
        assert_eq!(got[..3], [1, 2, 3], "{client:?}");
        assert!([1, 2, 3].contains(&got[3]), "{client:?}");
    }
    // a fenced broker serves nothing: not for its rack, not as the image's leader
    let image = racked_image(true);
    let t = &image.topics["dl"];
    for (i, p) in t.partitions.iter().enumerate() {
        for client in [None, Some("diskless_az=r2")] {
            let leader = served(&image, t, i as i32, p, client).leader;
            assert!(
                [1, 2].contains(&leader),
                "partition {i}, {client:?}: {leader}"
            );
        }
    }
    // a classic topic is told as the image has it
    let mut classic = t.clone();
    classic.configs.clear();
    let p = &classic.partitions[3];
    assert_eq!(
        served(&image, &classic, 3, p, None).leader,
        frieda_meta::NO_LEADER
    );
}
