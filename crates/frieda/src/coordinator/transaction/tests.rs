//! The coordinator over a real (single-replica) `__transaction_state` log, with a marker
//! writer that records what it is asked.

use super::*;
use crate::storage::partition::Partition;
use crate::storage::topic_config::TopicConfigs;
use crate::storage::writer::LogWriters;
use frieda_log::{LogConfig, PartitionLog};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::AtomicI64;

/// Records marker requests; refuses them (retriably) while `block` is set.
#[derive(Default)]
struct Markers {
    seen: Mutex<Vec<MarkerRequest>>,
    block: std::sync::atomic::AtomicBool,
}

impl MarkerWriter for Markers {
    fn write(
        &self,
        req: MarkerRequest,
    ) -> BoxFuture<'static, Vec<(TopicPartition, Result<(), E>)>> {
        let blocked = self.block.load(Ordering::Acquire);
        let out = req
            .partitions
            .iter()
            .map(|tp| {
                (
                    tp.clone(),
                    if blocked {
                        Err(E::NotLeaderOrFollower)
                    } else {
                        Ok(())
                    },
                )
            })
            .collect();
        if !blocked {
            self.seen.lock().push(req);
        }
        Box::pin(async move { out })
    }
}

struct Fixture {
    coord: Arc<TransactionCoordinators>,
    markers: Arc<Markers>,
    log: Arc<Partition>,
    _writers: LogWriters,
}

fn open(dir: &Path, markers: Arc<Markers>, epoch: i32) -> Fixture {
    open_with(dir, markers.clone(), markers, epoch)
}

/// [`open`] with the marker writer `writer` (`markers` records nothing then).
fn open_with(
    dir: &Path,
    writer: Arc<dyn MarkerWriter>,
    markers: Arc<Markers>,
    epoch: i32,
) -> Fixture {
    let writers = LogWriters::start(1);
    let (log, _) = PartitionLog::open(dir, LogConfig::default(), now_ms()).unwrap();
    let name: Arc<str> = Arc::from(TRANSACTION_STATE_TOPIC);
    let p = Arc::new(Partition::new(
        name.clone(),
        0,
        log,
        writers.for_partition(&name, 0),
        TopicConfigs::default().produce_policy(&TopicConfigs::default()),
    ));
    let coord = TransactionCoordinators::new(TxnConfig::default(), 1);
    let next = Arc::new(AtomicI64::new(1000));
    let ids: IdSource = Arc::new(move || {
        let id = next.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move { Ok(id) })
    });
    coord.attach(ids, writer);
    coord.load(0, epoch, p.clone()).unwrap();
    Fixture {
        coord,
        markers,
        log: p,
        _writers: writers,
    }
}

fn close(f: Fixture) {
    f.coord.unload(0);
    if let Some(st) = f.log.state.lock().take() {
        st.log.close().unwrap();
    }
}

async fn settle(f: &Fixture, id: &str, state: TxnState) {
    for _ in 0..200 {
        if f.coord.describe(id).map(|d| d.state) == Ok(state) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} never reached {state:?}: {:?}", f.coord.describe(id));
}

fn tp(t: &str, p: i32) -> TopicPartition {
    (t.to_string(), p)
}

/// Transactions v1 (librdkafka): the epoch stays; commit markers carry it; the state is
/// CompleteCommit once they are written, and survives a reload from the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_transaction_commits_with_markers_and_survives_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path(), Arc::default(), 3);
    let (pid, epoch) = f.coord.init_producer_id("tx", 60_000, None).await.unwrap();
    assert_eq!((pid, epoch), (1000, 0));
    f.coord
        .add_partitions("tx", pid, epoch, &[tp("a", 0), tp("b", 1)], TxnVersion::V1)
        .await
        .unwrap();
    assert_eq!(
        f.coord
            .verify_partitions("tx", pid, epoch, &[tp("a", 0), tp("c", 0)])
            .unwrap(),
        vec![
            (tp("a", 0), None),
            (tp("c", 0), Some(E::TransactionAbortable))
        ]
    );
    assert_eq!(
        f.coord
            .end_txn("tx", pid, epoch, true, TxnVersion::V1)
            .await,
        Ok((-1, -1))
    );
    settle(&f, "tx", TxnState::CompleteCommit).await;
    let m = f.markers.seen.lock().clone();
    assert_eq!(m.len(), 1);
    assert_eq!(
        (
            m[0].producer_id,
            m[0].producer_epoch,
            m[0].commit,
            m[0].coordinator_epoch
        ),
        (pid, 0, true, 3)
    );
    assert_eq!(m[0].partitions, vec![tp("a", 0), tp("b", 1)]);
    // a retried commit is answered without a second round of markers
    assert!(f
        .coord
        .end_txn("tx", pid, epoch, true, TxnVersion::V1)
        .await
        .is_ok());
    // a commit with nothing open is INVALID_TXN_STATE (v1)
    assert_eq!(
        f.coord
            .end_txn("tx", pid, epoch, false, TxnVersion::V1)
            .await,
        Err(E::InvalidTxnState)
    );
    close(f);
    let f = open(dir.path(), Arc::default(), 4);
    let d = f.coord.describe("tx").unwrap();
    assert_eq!(
        (d.state, d.producer_id, d.producer_epoch),
        (TxnState::CompleteCommit, pid, 0)
    );
    // the next InitProducerId bumps the epoch (fences the old producer)
    assert_eq!(
        f.coord.init_producer_id("tx", 60_000, None).await,
        Ok((pid, 1))
    );
    assert_eq!(
        f.coord
            .add_partitions("tx", pid, 0, &[tp("a", 0)], TxnVersion::V1)
            .await,
        Err(E::ProducerFenced)
    );
    close(f);
}

/// Transactions v2 (KIP-890): every end bumps the epoch, answered to the producer; the
/// markers carry the bumped epoch; a retried EndTxn (the old epoch) gets the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_bumps_the_epoch_at_every_end_and_a_retry_is_answered_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path(), Arc::default(), 0);
    let (pid, epoch) = f.coord.init_producer_id("t2", 60_000, None).await.unwrap();
    f.coord
        .add_partitions("t2", pid, epoch, &[tp("a", 0)], TxnVersion::V2)
        .await
        .unwrap();
    let next = f
        .coord
        .end_txn("t2", pid, epoch, false, TxnVersion::V2)
        .await
        .unwrap();
    assert_eq!(next, (pid, epoch + 1));
    settle(&f, "t2", TxnState::CompleteAbort).await;
    assert_eq!(f.markers.seen.lock()[0].producer_epoch, epoch + 1);
    assert_eq!(
        f.coord
            .end_txn("t2", pid, epoch, false, TxnVersion::V2)
            .await,
        Ok(next),
        "a retry"
    );
    // an abort with nothing open still bumps (v2 allows it) and writes no marker
    let again = f
        .coord
        .end_txn("t2", pid, epoch + 1, false, TxnVersion::V2)
        .await
        .unwrap();
    assert_eq!(again, (pid, epoch + 2));
    settle(&f, "t2", TxnState::CompleteAbort).await;
    assert_eq!(f.markers.seen.lock().len(), 1);
    assert_eq!(
        f.coord
            .end_txn("t2", pid, epoch + 2, true, TxnVersion::V2)
            .await,
        Err(E::InvalidTxnState),
        "a commit of nothing"
    );
    close(f);
}

/// A second producer with the same transactional id fences the first: its open transaction
/// is aborted with a bumped epoch (CONCURRENT_TRANSACTIONS meanwhile), then the new producer
/// gets the epoch after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_producer_fences_the_old_ones_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path(), Arc::default(), 0);
    let (pid, e0) = f.coord.init_producer_id("z", 60_000, None).await.unwrap();
    f.coord
        .add_partitions("z", pid, e0, &[tp("a", 0)], TxnVersion::V1)
        .await
        .unwrap();
    let mut got = f.coord.init_producer_id("z", 60_000, None).await;
    assert_eq!(got, Err(E::ConcurrentTransactions));
    for _ in 0..200 {
        got = f.coord.init_producer_id("z", 60_000, None).await;
        if got != Err(E::ConcurrentTransactions) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (pid2, e2) = got.unwrap();
    assert_eq!(pid2, pid);
    assert!(
        e2 >= e0 + 2,
        "fence bump, then the new producer's bump: {e2}"
    );
    let m = f.markers.seen.lock().clone();
    assert_eq!((m[0].commit, m[0].producer_epoch), (false, e0 + 1));
    // the zombie can neither commit nor add
    assert_eq!(
        f.coord.end_txn("z", pid, e0, true, TxnVersion::V1).await,
        Err(E::ProducerFenced)
    );
    close(f);
}

/// A transaction open past its timeout is aborted by the coordinator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_past_its_timeout_is_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path(), Arc::default(), 0);
    let (pid, e) = f.coord.init_producer_id("slow", 100, None).await.unwrap();
    f.coord
        .add_partitions("slow", pid, e, &[tp("a", 3)], TxnVersion::V1)
        .await
        .unwrap();
    f.coord.abort_timed_out().await;
    assert_eq!(f.coord.describe("slow").unwrap().state, TxnState::Ongoing);
    tokio::time::sleep(Duration::from_millis(150)).await;
    f.coord.abort_timed_out().await;
    settle(&f, "slow", TxnState::CompleteAbort).await;
    assert_eq!(f.coord.describe("slow").unwrap().producer_epoch, e + 1);
    assert_eq!(
        f.coord.end_txn("slow", pid, e, true, TxnVersion::V1).await,
        Err(E::ProducerFenced)
    );
    close(f);
}

/// Markers that cannot be written keep the transaction prepared; a coordinator that loads the
/// partition later resumes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_coordinator_resumes_the_markers_of_a_prepared_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let markers = Arc::new(Markers::default());
    markers.block.store(true, Ordering::Release);
    let f = open(dir.path(), markers, 0);
    let (pid, e) = f.coord.init_producer_id("p", 60_000, None).await.unwrap();
    f.coord
        .add_partitions("p", pid, e, &[tp("a", 0)], TxnVersion::V1)
        .await
        .unwrap();
    f.coord
        .end_txn("p", pid, e, true, TxnVersion::V1)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        f.coord.describe("p").unwrap().state,
        TxnState::PrepareCommit
    );
    assert_eq!(
        f.coord
            .add_partitions("p", pid, e, &[tp("a", 0)], TxnVersion::V1)
            .await,
        Err(E::ConcurrentTransactions)
    );
    close(f);
    let f = open(dir.path(), Arc::default(), 1);
    settle(&f, "p", TxnState::CompleteCommit).await;
    let m = f.markers.seen.lock().clone();
    assert_eq!((m[0].commit, m[0].coordinator_epoch), (true, 1));
    assert_eq!(
        f.coord
            .list(&TxnFilter {
                states: vec![TxnState::CompleteCommit],
                pattern: Some("p.*".into()),
                duration_ms: -1,
                ..TxnFilter::default()
            })
            .len(),
        1
    );
    close(f);
}

/// Appends the markers of partition `p` to it, as a partition leader does, once `gate` has
/// permits (the markers of a transaction wait there like markers still in flight).
struct PartitionMarkers {
    p: Arc<Partition>,
    gate: Arc<tokio::sync::Semaphore>,
}

impl MarkerWriter for PartitionMarkers {
    fn write(
        &self,
        req: MarkerRequest,
    ) -> BoxFuture<'static, Vec<(TopicPartition, Result<(), E>)>> {
        let (p, gate) = (self.p.clone(), self.gate.clone());
        Box::pin(async move {
            let _open = gate.acquire().await;
            let mut out = Vec::new();
            for tp in req.partitions {
                let r = if tp == (p.topic.to_string(), p.index) {
                    let marker = frieda_log::EndTxnMarker {
                        control: if req.commit {
                            frieda_log::ControlType::Commit
                        } else {
                            frieda_log::ControlType::Abort
                        },
                        coordinator_epoch: req.coordinator_epoch,
                    };
                    p.append_marker(
                        req.producer_id,
                        req.producer_epoch,
                        marker,
                        req.version.bumps_epoch(),
                    )
                    .await
                    .map(|_| ())
                } else {
                    Err(E::UnknownTopicOrPartition)
                };
                out.push((tp, r));
            }
            out
        })
    }
}

/// A client's transactional batch of one record: producer `pid` at `epoch`, sequence `seq`.
fn txn_batch(pid: i64, epoch: i16, seq: i32) -> (bytes::BytesMut, frieda_log::BatchHeader) {
    use kafka_protocol::records::{Record, TimestampType};
    crate::storage::testing::one_record_batch(&Record {
        transactional: true,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: pid,
        producer_epoch: epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: seq,
        timestamp: now_ms(),
        key: None,
        value: Some(bytes::Bytes::from_static(b"v")),
        headers: Default::default(),
    })
}

/// Transactions v2 (KIP-890 part 2), the race franz-go's `TestTxnEtl` hit (INVALID_TXN_STATE on
/// the first produce after a successful EndTxn): EndTxn answers with the bumped epoch while the
/// markers are still being written. The producer's next batch for a partition of the previous
/// transaction starts its verification there before that partition's marker lands (the old
/// transaction is still open there), is answered CONCURRENT_TRANSACTIONS while the coordinator
/// is in PrepareCommit (Kafka's `handleAddPartitionsToTransaction`), and its retry verifies
/// again while the marker is still in flight; the marker lands, the coordinator completes and
/// adds the partition, and the append must then accept the verification: the marker carried
/// the epoch that verification was made with (Kafka keeps it: `isV2NextTransactionStarted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_produce_verified_before_the_previous_marker_lands_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let data_writers = LogWriters::start(1);
    let (log, _) = PartitionLog::open(data_dir.path(), LogConfig::default(), now_ms()).unwrap();
    let name: Arc<str> = Arc::from("a");
    let a0 = Arc::new(Partition::new(
        name.clone(),
        0,
        log,
        data_writers.for_partition(&name, 0),
        TopicConfigs::default().produce_policy(&TopicConfigs::default()),
    ));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let writer = Arc::new(PartitionMarkers {
        p: a0.clone(),
        gate: gate.clone(),
    });
    let f = open_with(dir.path(), writer, Arc::default(), 0);
    let (pid, e0) = f.coord.init_producer_id("etl", 60_000, None).await.unwrap();
    let produce = |epoch: i16, token: Option<u64>| {
        let (buf, header) = txn_batch(pid, epoch, 0);
        let a0 = a0.clone();
        async move {
            a0.append_checked(
                buf,
                header,
                crate::storage::partition::ProducerCheck::verified(token),
            )
            .await
        }
    };
    // Transaction 1 (epoch e0): the partition leader verifies, the coordinator adds, append.
    let token = a0.begin_verification(pid, e0, true);
    assert!(token.is_some());
    f.coord
        .add_partitions("etl", pid, e0, &[tp("a", 0)], TxnVersion::V2)
        .await
        .unwrap();
    produce(e0, token).await.unwrap();
    // EndTxn(commit): answered with the bumped epoch; the markers wait at the gate.
    let (pid1, e1) = f
        .coord
        .end_txn("etl", pid, e0, true, TxnVersion::V2)
        .await
        .unwrap();
    assert_eq!((pid1, e1), (pid, e0 + 1));
    // Transaction 2's first produce: verification starts (transaction 1 is still open here)
    // and the coordinator answers CONCURRENT_TRANSACTIONS, as Kafka does, the client retries.
    let token = a0.begin_verification(pid, e1, true);
    assert!(token.is_some());
    assert_eq!(
        f.coord
            .add_partitions("etl", pid, e1, &[tp("a", 0)], TxnVersion::V2)
            .await,
        Err(E::ConcurrentTransactions)
    );
    // The retry verifies again, still before the marker.
    let retry = a0.begin_verification(pid, e1, true);
    assert_eq!(retry, token, "the same verification, same epoch");
    // The marker (epoch e1) lands and the coordinator completes the transaction.
    gate.add_permits(100);
    settle(&f, "etl", TxnState::CompleteCommit).await;
    // The coordinator adds the partition to transaction 2, and the batch is appended.
    f.coord
        .add_partitions("etl", pid, e1, &[tp("a", 0)], TxnVersion::V2)
        .await
        .unwrap();
    assert!(
        produce(e1, retry).await.is_ok(),
        "the first batch of the next transaction is appended"
    );
    close(f);
    if let Some(st) = a0.state.lock().take() {
        st.log.close().unwrap();
    }
    data_writers.stop();
}

/// Issue 57 (frieda-sim seeds 651 and 743 of 150..750, `txn-end-answered-wrong` and
/// `txn-marker-contradicts-decision`): a coordinator loads its partition to the log end
/// offset, and a new leader's tail may not be replicated yet; a PrepareCommit found there had
/// its markers written, and when the next leader (without that tail) aborted the transaction,
/// partition 0 held a committed transaction its coordinator had aborted. The coordinator now
/// answers COORDINATOR_LOAD_IN_PROGRESS and resumes no markers until the high watermark reaches
/// the end it loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_serves_and_resumes_markers_only_once_its_tail_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let markers: Arc<Markers> = Arc::default();
    markers.block.store(true, Ordering::Release);
    let f = open(dir.path(), markers.clone(), 3);
    let (pid, epoch) = f.coord.init_producer_id("tx", 60_000, None).await.unwrap();
    f.coord
        .add_partitions("tx", pid, epoch, &[tp("a", 0)], TxnVersion::V2)
        .await
        .unwrap();
    assert_eq!(
        f.coord
            .end_txn("tx", pid, epoch, true, TxnVersion::V2)
            .await,
        Ok((pid, epoch + 1))
    );
    f.coord.unload(0);
    // The partition now has a replicated leader whose follower has not fetched its tail.
    let leo = f.log.reader().log_end_offset();
    assert!(leo > 0);
    let state = crate::coordinator::led_with_a_follower();
    f.log.repl.become_leader(1, &state, now_ms(), leo);
    markers.seen.lock().clear();
    markers.block.store(false, Ordering::Release);
    f.coord.load(0, 4, f.log.clone()).unwrap();
    assert_eq!(
        f.coord.describe("tx").map(|d| d.state),
        Err(E::CoordinatorLoadInProgress)
    );
    assert_eq!(
        f.coord
            .end_txn("tx", pid, epoch, true, TxnVersion::V2)
            .await,
        Err(E::CoordinatorLoadInProgress)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        markers.seen.lock().is_empty(),
        "markers resumed from a load that is not committed"
    );
    // The follower fetches to the end: the high watermark reaches what the load read.
    f.log
        .repl
        .on_follower_fetch(2, None, leo, 0, 4, leo, now_ms())
        .unwrap();
    for _ in 0..200 {
        if !markers.seen.lock().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let m = markers.seen.lock().clone();
    assert_eq!(m.len(), 1, "the prepared transaction's markers are resumed");
    assert_eq!(
        (m[0].producer_id, m[0].commit, m[0].coordinator_epoch),
        (pid, true, 4)
    );
    assert_eq!(
        f.coord.describe("tx").map(|d| d.state),
        Ok(TxnState::PrepareCommit)
    );
    close(f);
}

/// Issue 57 (sharing the produce handler's admission with the simulator): a coordinator
/// whose broker's lease does not hold (it may have been fenced while paused; another broker
/// may coordinate the partition by now) appends nothing and answers NOT_COORDINATOR; one whose
/// lease ends while a write waits for its replicas answers NOT_COORDINATOR too. The simulated
/// coordinator always checked the lease; this one checked neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_without_its_lease_writes_and_answers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path(), Arc::default(), 3);
    f.coord.unload(0);
    let holds = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = holds.clone();
    f.coord
        .set_lease(Arc::new(move || h.load(Ordering::SeqCst)));
    let state = crate::coordinator::led_with_a_follower();
    f.log.repl.become_leader(1, &state, now_ms(), 0);
    f.coord.load(0, 4, f.log.clone()).unwrap();
    // Without the lease: refused before the append.
    assert_eq!(
        f.coord.init_producer_id("tx", 60_000, None).await,
        Err(E::NotCoordinator)
    );
    assert_eq!(f.log.reader().log_end_offset(), 0, "nothing appended");
    // With it: written once the follower has it.
    holds.store(true, Ordering::SeqCst);
    let follow = |to_lose_lease: bool| {
        let (log, holds) = (f.log.clone(), holds.clone());
        let start = log.reader().log_end_offset();
        async move {
            while log.reader().log_end_offset() == start {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            if to_lose_lease {
                holds.store(false, Ordering::SeqCst);
            }
            let leo = log.reader().log_end_offset();
            log.repl
                .on_follower_fetch(2, None, leo, 0, 4, leo, now_ms())
                .unwrap();
        }
    };
    let (answer, ()) = tokio::join!(f.coord.init_producer_id("tx", 60_000, None), follow(false));
    let (pid, epoch) = answer.unwrap();
    // The lease ends while the next write waits for the follower: not answered OK.
    let added = [tp("a", 0)];
    let (answer, ()) = tokio::join!(
        f.coord
            .add_partitions("tx", pid, epoch, &added, TxnVersion::V2),
        follow(true)
    );
    assert_eq!(answer, Err(E::NotCoordinator));
    close(f);
}

#[test]
fn a_partition_led_here_but_not_loaded_is_loading_not_another_brokers() {
    let coord = TransactionCoordinators::new(TxnConfig::default(), 50);
    let mine = coord.partition_for("tx");
    assert_eq!(coord.partition("tx").err(), Some(E::NotCoordinator));
    coord.set_leads(std::sync::Arc::new(move |index| index == mine));
    assert_eq!(
        coord.partition("tx").err(),
        Some(E::CoordinatorLoadInProgress),
        "the metadata names this broker: loading"
    );
    let other = (0..)
        .map(|i| format!("tx{i}"))
        .find(|id| coord.partition_for(id) != mine)
        .unwrap();
    assert_eq!(coord.partition(&other).err(), Some(E::NotCoordinator));
}
