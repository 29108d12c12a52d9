//! Follower fetchers (Kafka's `ReplicaFetcherThread`): one task per leader broker copies the
//! logs of every partition this broker follows there, with Fetch requests that carry this
//! broker's id as `replica_id`, over one connection.
//!
//! For each partition the fetcher first **truncates** (KIP-101/279): it asks the leader, with
//! OffsetForLeaderEpoch, where this replica's latest leader epoch ends in the leader's log, and
//! cuts its own log there, so a follower that had records the leader never got (a deposed
//! leader's unreplicated tail) drops them before copying. Then it **fetches** from its log end
//! offset: the leader's batches are appended as they are (offsets, epochs, CRCs), and the
//! follower's high watermark follows the leader's. A fetch offset below the leader's log start
//! (retention removed it there) moves to the leader's log start.
//!
//! A partition leaves its fetcher as soon as it stops following that leader in that epoch
//! (the reconciler gave it another role); errors back the partition off for
//! [`RETRY_BACKOFF`] (`replica.fetch.backoff.ms`), and a broken connection is re-made.
//!
//! Each partition's decisions (truncate or fetch, where from, what a refusal means, the
//! back-off) are [`PartitionFetch`]'s, the sans-IO state machine the cluster simulator runs
//! too; this module does the requests and applies the answers to the partition.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use frieda_meta::BrokerId;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId as WireBrokerId, FetchRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::clock::monotonic_ms;
use crate::membership::client::BrokerClient;
use crate::membership::ClusterNode;
use crate::replication::follower::{
    EpochEnd, NextRequest, PartitionFetch, Refused, FETCH_BACKOFF_MS,
};
use crate::storage::partition::Partition;

/// Fetch version followers use: names topics, carries `replica_id` (v12; KIP-320 fields).
const FETCH_VERSION: i16 = 12;
/// OffsetForLeaderEpoch version followers use.
const OFFSET_FOR_EPOCH_VERSION: i16 = 4;
/// Back-off after an error, per partition and for the connection (`replica.fetch.backoff.ms`,
/// [`FETCH_BACKOFF_MS`]).
pub const RETRY_BACKOFF: Duration = Duration::from_millis(FETCH_BACKOFF_MS);
/// Largest fetch response asked for (`replica.fetch.response.max.bytes`, Kafka's default).
const RESPONSE_MAX_BYTES: i32 = 10 << 20;
/// A fetcher with nothing to follow for this long stops (a new one starts when needed).
const IDLE_STOP: Duration = Duration::from_secs(10);
/// Connect timeout to a leader.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One partition a fetcher follows.
struct Followed {
    partition: Arc<Partition>,
    epoch: i32,
    /// Truncated yet, where to fetch, the back-off: the decisions, sans-IO.
    state: PartitionFetch,
    /// The producer snapshot being read before the log starts again (KIP-405).
    snapshot: Option<SnapshotRead>,
}

type Key = (Arc<str>, i32);

/// Partitions handed to one fetcher and not yet picked up (a bound: the reconciler only hands
/// over changes, at most one per partition hosted).
const MAX_PENDING_FOLLOWS: usize = 100_000;

/// A partition handed to a fetcher, with the epoch it follows in.
type Follow = (Arc<Partition>, i32);

/// A hand-over: the leader, the epoch and the replica object.
type Handed = (BrokerId, i32, Weak<Partition>);

fn same_hand_over(h: &Handed, leader: BrokerId, epoch: i32, partition: &Arc<Partition>) -> bool {
    h.0 == leader
        && h.1 == epoch
        && std::ptr::eq(h.2.as_ptr(), Arc::as_ptr(partition))
        && h.2.upgrade().is_some_and(|p| !p.is_deleted())
}

/// The follower fetchers of this broker, one per leader.
pub struct Fetchers {
    node: Arc<ClusterNode>,
    tasks: Mutex<HashMap<BrokerId, mpsc::Sender<Follow>>>,
    /// What each partition was last handed over as (leader, epoch, which replica object), so
    /// re-applying the same image sends nothing. The replica is held weakly: a replica removed
    /// and re-created (a reassignment taking this broker off and back on) is a new object even if
    /// the allocator puts it where the old one was, because the weak reference keeps the old
    /// allocation from being reused (a bare address did not: the re-created replica was taken
    /// for the one already handed over and never fetched).
    handed: Mutex<HashMap<Key, Handed>>,
}

impl Fetchers {
    /// No fetchers yet.
    pub fn new(node: Arc<ClusterNode>) -> Arc<Fetchers> {
        Arc::new(Fetchers {
            node,
            tasks: Mutex::new(HashMap::new()),
            handed: Mutex::new(HashMap::new()),
        })
    }

    /// Makes sure `partition` is copied from `leader` in `epoch` (idempotent: only a change is
    /// handed to the fetcher).
    pub fn follow(&self, partition: Arc<Partition>, leader: BrokerId, epoch: i32) {
        let key = (partition.topic.clone(), partition.index);
        let me: Handed = (leader, epoch, Arc::downgrade(&partition));
        let mut tasks = self.tasks.lock();
        let alive = tasks.get(&leader).is_some_and(|tx| !tx.is_closed());
        if alive
            && self
                .handed
                .lock()
                .get(&key)
                .is_some_and(|h| same_hand_over(h, leader, epoch, &partition))
        {
            return;
        }
        if let Some(tx) = tasks.get(&leader).filter(|_| alive) {
            match tx.try_send((partition.clone(), epoch)) {
                Ok(()) => {
                    self.handed.lock().insert(key, me);
                    return;
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    // Retried at the reconciler's next pass.
                    tracing::warn!(leader, "fetcher hand-over queue full");
                    self.handed.lock().remove(&key);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        let (tx, rx) = mpsc::channel(MAX_PENDING_FOLLOWS);
        let _ = tx.try_send((partition, epoch));
        self.handed.lock().insert(key, me);
        tasks.insert(leader, tx);
        let node = self.node.clone();
        tokio::spawn(run(node, leader, rx));
    }
}

/// One leader's fetcher.
async fn run(node: Arc<ClusterNode>, leader: BrokerId, mut rx: mpsc::Receiver<Follow>) {
    let mut followed: HashMap<Key, Followed> = HashMap::new();
    let mut client: Option<BrokerClient> = None;
    let mut idle_since = Instant::now();
    let wait = Duration::from_millis(node.config.replica_fetch_wait_max_ms);
    tracing::debug!(leader, "fetcher started");
    loop {
        // New partitions (or new epochs of known ones).
        while let Ok((p, epoch)) = rx.try_recv() {
            add(&mut followed, p, epoch);
        }
        followed.retain(|key, f| {
            if !f.partition.is_online() {
                // A failed fsync took the log offline: it stops fetching, so its unsynced
                // records never count as its progress (the leader's stall detection and the
                // controller, told by the heartbeat, take it out of the ISR; issue 28, item 6).
                tracing::warn!(topic = %key.0, partition = key.1, leader,
                    "the log is offline: this replica stops fetching until the broker restarts");
                return false;
            }
            !f.partition.is_deleted() && f.partition.repl.is_follower_of(leader, f.epoch)
        });
        if followed.is_empty() {
            if idle_since.elapsed() > IDLE_STOP {
                rx.close();
                let mut rest = false;
                while let Ok((p, epoch)) = rx.try_recv() {
                    add(&mut followed, p, epoch);
                    rest = true;
                }
                if !rest {
                    tracing::debug!(leader, "fetcher stopped (nothing to follow)");
                    return;
                }
            } else {
                match tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                    Ok(Some((p, epoch))) => add(&mut followed, p, epoch),
                    Ok(None) => return,
                    Err(_) => {}
                }
                continue;
            }
        }
        idle_since = Instant::now();
        let conn = match &mut client {
            Some(c) => c,
            None => match connect(&node, leader).await {
                Some(c) => client.insert(c),
                None => {
                    tokio::time::sleep(RETRY_BACKOFF).await;
                    continue;
                }
            },
        };
        let ok = if followed
            .values()
            .any(|f| f.state.needs_truncation() && ready(f))
        {
            truncate(&node, leader, conn, &mut followed).await
        } else {
            fetch(&node, leader, conn, &mut followed, wait).await
        };
        if !ok {
            client = None;
            tokio::time::sleep(RETRY_BACKOFF).await;
        }
    }
}

fn add(followed: &mut HashMap<Key, Followed>, partition: Arc<Partition>, epoch: i32) {
    let key = (partition.topic.clone(), partition.index);
    match followed.get(&key) {
        Some(f) if f.epoch == epoch && Arc::ptr_eq(&f.partition, &partition) => {}
        _ => {
            followed.insert(
                key,
                Followed {
                    partition,
                    epoch,
                    state: PartitionFetch::default(),
                    snapshot: None,
                },
            );
        }
    }
}

fn ready(f: &Followed) -> bool {
    f.state.ready(monotonic_ms())
}

fn back_off(f: &mut Followed) {
    f.state.back_off(monotonic_ms());
}

async fn connect(node: &ClusterNode, leader: BrokerId) -> Option<BrokerClient> {
    let addr = node.address_of(leader)?;
    let client_id = format!("frieda-replica-fetcher-{}", node.me);
    let security = node.inter_broker_security();
    match BrokerClient::connect(&addr, &client_id, CONNECT_TIMEOUT, &security).await {
        Ok(c) => {
            tracing::debug!(leader, %addr, "fetcher connected");
            Some(c)
        }
        Err(e) => {
            tracing::debug!(leader, %addr, error = %e, "fetcher cannot connect");
            None
        }
    }
}

/// OffsetForLeaderEpoch for every partition not yet truncated in its epoch, then the
/// truncations. Returns false when the connection failed.
async fn truncate(
    node: &ClusterNode,
    leader: BrokerId,
    conn: &mut BrokerClient,
    followed: &mut HashMap<Key, Followed>,
) -> bool {
    let mut by_topic: HashMap<Arc<str>, Vec<OffsetForLeaderPartition>> = HashMap::new();
    let mut asked: HashMap<Key, i32> = HashMap::new();
    for (key, f) in followed.iter() {
        if !f.state.needs_truncation() || !ready(f) {
            continue;
        }
        let latest = f.partition.latest_epoch();
        asked.insert(key.clone(), latest);
        by_topic.entry(key.0.clone()).or_default().push(
            OffsetForLeaderPartition::default()
                .with_partition(key.1)
                .with_current_leader_epoch(f.epoch)
                .with_leader_epoch(latest),
        );
    }
    let req = OffsetForLeaderEpochRequest::default()
        .with_replica_id(WireBrokerId(node.me))
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, parts)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partitions(parts)
                })
                .collect(),
        );
    let resp = match conn
        .call(OFFSET_FOR_EPOCH_VERSION, &req, Duration::from_secs(10))
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(leader, error = %e, "OffsetForLeaderEpoch failed");
            return false;
        }
    };
    for t in resp.topics {
        let topic: Arc<str> = Arc::from(t.topic.0.as_str());
        for r in t.partitions {
            let key = (topic.clone(), r.partition);
            let Some(f) = followed.get_mut(&key) else {
                continue;
            };
            let Some(&asked_epoch) = asked.get(&key) else {
                continue;
            };
            if r.error_code != 0 {
                tracing::debug!(topic = %key.0, partition = key.1, leader, error = r.error_code,
                    "leader refused OffsetForLeaderEpoch; backing off");
                back_off(f);
                continue;
            }
            let leo = f.partition.reader().log_end_offset();
            let leader_end = EpochEnd {
                epoch: r.leader_epoch,
                end_offset: r.end_offset,
            };
            let Some(truncation) = f.partition.truncation_for(asked_epoch, leader_end) else {
                back_off(f);
                continue;
            };
            let target = truncation.offset();
            if target <= leo {
                if target < leo {
                    tracing::info!(topic = %key.0, partition = key.1, leader, epoch = f.epoch,
                        from = leo, to = target, "truncating a diverged log");
                }
                if let Err(e) = f.partition.truncate_from_leader(leader, f.epoch, target) {
                    tracing::warn!(topic = %key.0, partition = key.1, error = ?e, "truncation failed");
                    back_off(f);
                    continue;
                }
            }
            f.state.truncated_to(truncation);
        }
    }
    true
}

/// One Fetch for every truncated partition not backing off. Returns false when the connection
/// failed.
async fn fetch(
    node: &ClusterNode,
    leader: BrokerId,
    conn: &mut BrokerClient,
    followed: &mut HashMap<Key, Followed>,
    wait: Duration,
) -> bool {
    let mut by_topic: HashMap<Arc<str>, Vec<FetchPartition>> = HashMap::new();
    let mut offsets: HashMap<Key, i64> = HashMap::new();
    for (key, f) in followed.iter() {
        if !ready(f) {
            continue;
        }
        let NextRequest::Fetch { skip_to } = f.state.next_request() else {
            continue;
        };
        let Some((offset, last_fetched_epoch)) = f.partition.fetch_position(skip_to) else {
            continue;
        };
        offsets.insert(key.clone(), offset);
        by_topic.entry(key.0.clone()).or_default().push(
            FetchPartition::default()
                .with_partition(key.1)
                .with_current_leader_epoch(f.epoch)
                .with_fetch_offset(offset)
                .with_last_fetched_epoch(last_fetched_epoch)
                .with_log_start_offset(f.partition.log_start_offset())
                .with_partition_max_bytes(node.config.replica_fetch_max_bytes as i32),
        );
    }
    if by_topic.is_empty() {
        // Everything is backing off.
        tokio::time::sleep(RETRY_BACKOFF / 4).await;
        return true;
    }
    let req = FetchRequest::default()
        .with_replica_id(WireBrokerId(node.me))
        .with_max_wait_ms(wait.as_millis() as i32)
        .with_min_bytes(1)
        .with_max_bytes(RESPONSE_MAX_BYTES)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, parts)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partitions(parts)
                })
                .collect(),
        );
    let resp = match conn
        .call(FETCH_VERSION, &req, wait + Duration::from_secs(10))
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(leader, error = %e, "replica fetch failed");
            return false;
        }
    };
    if resp.error_code != 0 {
        tracing::debug!(leader, error = resp.error_code, "replica fetch refused");
        return false;
    }
    let mut to_flush = Vec::new();
    let mut to_advance = Vec::new();
    for t in resp.responses {
        let topic: Arc<str> = Arc::from(t.topic.0.as_str());
        for pd in t.partitions {
            let key = (topic.clone(), pd.partition_index);
            let (Some(f), Some(&offset)) = (followed.get_mut(&key), offsets.get(&key)) else {
                continue;
            };
            let leader_start = pd.log_start_offset;
            apply_partition(node, leader, f, offset, pd);
            if f.partition.flush_due() {
                to_flush.push(f.partition.clone());
            }
            // The leader's log start moved past ours (DeleteRecords, retention): follow it, up
            // to what this replica has (Kafka's follower `maybeIncrementLogStartOffset`).
            let start = leader_start.min(f.partition.high_watermark());
            if start > f.partition.log_start_offset() {
                to_advance.push((f.partition.clone(), start));
            }
        }
    }
    if !to_advance.is_empty() {
        // Blocking: the log start offset checkpoint is fsync'ed before the start moves.
        let _ = tokio::task::spawn_blocking(move || {
            for (p, start) in to_advance {
                if let Err(e) = p.advance_log_start(start) {
                    tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "could not follow the leader's log start offset");
                }
            }
        })
        .await;
    }
    // The flush policy holds on followers too (`flush.messages`); the next fetch, which tells
    // the leader how far this replica got, waits for it.
    for p in to_flush {
        let part = p.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || part.flush_now_if_due()).await {
            tracing::error!(topic = %p.topic, partition = p.index, error = %e, "follower flush failed");
        }
    }
    true
}

/// How long a follower waits for the producer snapshot of a remote segment before it asks
/// the bucket again.
const SNAPSHOT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A read of the producer snapshot a follower starts its log again from (KIP-405).
struct SnapshotRead {
    /// The offset the log starts again at.
    start: i64,
    /// The snapshot (`None`: the copy carries none), or why it could not be read.
    rx: tokio::sync::oneshot::Receiver<Result<Option<Vec<u8>>, String>>,
}

/// The producer snapshot to start `f`'s log again at `start` from: `Some(snapshot)` once known
/// (`Some(None)` when there is none to read: no copy ends just below `start`, the one that
/// does was truncated to end there, or no remote tier here), `None` while it is being read from the bucket on the remote-log runtime (the
/// next answer of the leader asks again). A failed read is logged and tried again.
fn producer_snapshot_for(
    node: &ClusterNode,
    f: &mut Followed,
    start: i64,
) -> Option<Option<Vec<u8>>> {
    use tokio::sync::oneshot::error::TryRecvError;
    let p = f.partition.clone();
    if let Some(read) = f.snapshot.as_mut().filter(|r| r.start == start) {
        match read.rx.try_recv() {
            Err(TryRecvError::Empty) => return None,
            Ok(Ok(snapshot)) => {
                f.snapshot = None;
                return Some(snapshot);
            }
            Ok(Err(e)) => {
                tracing::warn!(topic = %p.topic, partition = p.index, start, error = %e,
                    "reading the producer snapshot of the remote segment below the new log start failed; retrying");
                f.snapshot = None;
                return None;
            }
            Err(TryRecvError::Closed) => {
                f.snapshot = None;
                return None;
            }
        }
    }
    let image = node.image();
    let copy = image
        .remote_log(&p.topic, p.index)
        .and_then(|log| log.finished_holding(start - 1))
        // A truncated copy's snapshot describes its original end, records of a lost lineage.
        .filter(|s| s.end_offset == start - 1 && !s.truncated)
        .cloned();
    let topic_id = image.topics.get(&*p.topic).map(|t| t.id);
    let (Some(copy), Some(topic_id), Some((reader, runtime))) =
        (copy, topic_id, node.remote_reader())
    else {
        return Some(None);
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let reader = reader.clone();
    runtime.spawn(async move {
        let key = crate::remote::store::SegmentKey {
            topic: &p.topic,
            topic_id,
            partition: p.index,
            base_offset: copy.start_offset,
            segment_id: copy.id,
        };
        let result =
            match tokio::time::timeout(SNAPSHOT_READ_TIMEOUT, reader.producer_snapshot(&key)).await
            {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!(
                    "no answer in {} s",
                    SNAPSHOT_READ_TIMEOUT.as_secs()
                )),
            };
        let _ = tx.send(result);
    });
    f.snapshot = Some(SnapshotRead { start, rx });
    None
}

/// Applies one partition of a fetch response.
fn apply_partition(
    node: &ClusterNode,
    leader: BrokerId,
    f: &mut Followed,
    offset: i64,
    pd: kafka_protocol::messages::fetch_response::PartitionData,
) {
    let p = &f.partition;
    if let Some(error) = ResponseError::try_from_code(pd.error_code) {
        let step = f
            .state
            .refused(monotonic_ms(), offset, error, pd.log_start_offset);
        match step {
            Refused::BackedOff if error == ResponseError::OffsetOutOfRange => {
                if let NextRequest::Fetch {
                    skip_to: Some(start),
                } = f.state.next_request()
                {
                    tracing::info!(topic = %p.topic, partition = p.index, leader, offset,
                        leader_log_start = start, "fetch offset below the leader's log start; skipping ahead");
                }
            }
            Refused::BackedOff => {
                tracing::debug!(topic = %p.topic, partition = p.index, leader, error = ?error, "leader refused a replica fetch; backing off");
            }
            Refused::StartAgainAboveCopies => start_again_above_copies(node, leader, f, offset),
        }
        return;
    }
    let diverging = &pd.diverging_epoch;
    if diverging.epoch >= 0 || diverging.end_offset >= 0 {
        // KIP-595: this log diverged from the leader's; truncate as for OffsetForLeaderEpoch.
        let end = EpochEnd {
            epoch: diverging.epoch,
            end_offset: diverging.end_offset,
        };
        let asked = p.latest_epoch();
        let Some(t) = p.truncation_for(asked, end) else {
            return;
        };
        let leo = p.reader().log_end_offset();
        tracing::info!(topic = %p.topic, partition = p.index, leader, epoch = f.epoch,
            from = leo, to = t.offset(), "the leader says this log diverged; truncating");
        if let Err(e) = p.truncate_from_leader(leader, f.epoch, t.offset()) {
            tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "truncation failed");
            back_off(f);
            return;
        }
        f.state.truncated_to(t);
        return;
    }
    let mut leo = p.reader().log_end_offset();
    if let Some(records) = pd.records.filter(|r| !r.is_empty()) {
        // Whole batches only (a response may end in a partial one).
        let whole = whole_batches(&records);
        if whole > 0 {
            let append =
                || p.append_from_leader(leader, f.epoch, BytesMut::from(&records[..whole]));
            // A bulk write (the bulk-append lane's size) leaves this network thread's other
            // tasks to another thread while it copies into the page cache, so acks=all
            // produces and tail reads queued here never wait for it.
            let lane = crate::storage::bulk::lane();
            let bulk = whole >= lane.min_bytes();
            let result = if bulk && multi_threaded() {
                tokio::task::block_in_place(append)
            } else {
                append()
            };
            match result {
                Ok(new_leo) => {
                    leo = new_leo;
                    // As the leader's bulk lane does after its append (see storage::bulk); small
                    // appends once a megabyte of whole pages gathered.
                    let wb = if bulk {
                        p.plan_writeback()
                    } else {
                        p.plan_writeback_due()
                    };
                    if let Some(wb) = wb {
                        lane.submit_writeback(wb);
                    }
                    f.state.appended(leo);
                }
                Err(ResponseError::NotLeaderOrFollower) => return,
                Err(e) => {
                    tracing::warn!(topic = %p.topic, partition = p.index, leader, error = ?e, "appending the leader's records failed");
                    back_off(f);
                    return;
                }
            }
        }
    }
    if p.repl.follower_high_watermark(pd.high_watermark, leo) {
        // Consumers reading from this follower (KIP-392) wait for its high watermark.
        p.notify_data();
    }
}

/// OFFSET_MOVED_TO_TIERED_STORAGE for the fetch at `offset` (KIP-405): the leader holds it only
/// in remote storage. Rather than copy the history, this log starts again above every offset
/// copied there (the leader's local log reaches at least that low: it deletes only copied
/// segments); the history stays readable through the remote tier. Kafka asks the leader for its
/// local log start (ListOffsets -4) instead; either start lies in the leader's local tail. A
/// view older than the leader's waits for the next refresh. The producer state comes from the
/// copy ending below the new start (Kafka's `buildRemoteLogAuxState`), read from the bucket
/// first, off this task; until it is read, or when the start fails, the partition backs off.
fn start_again_above_copies(node: &ClusterNode, leader: BrokerId, f: &mut Followed, offset: i64) {
    let start = f.partition.tiered.copied_end() + 1;
    if start > offset {
        if let Some(snapshot) = producer_snapshot_for(node, f, start) {
            let p = &f.partition;
            tracing::info!(topic = %p.topic, partition = p.index, leader, offset, start,
                producers_restored = snapshot.is_some(),
                "fetch offset only in remote storage; starting the log again above the copied offsets");
            // The lineage of what only the bucket holds becomes the new log's epoch cache.
            let epochs = node
                .image()
                .remote_log(&p.topic, p.index)
                .map(|log| log.epochs_upto(start - 1))
                .unwrap_or_default();
            match p.start_again_from_leader(leader, f.epoch, start, snapshot.as_deref(), &epochs) {
                Ok(()) => {
                    f.state = PartitionFetch::started_again();
                    return;
                }
                Err(e) => tracing::warn!(topic = %p.topic, partition = p.index, error = ?e,
                    "could not start the log again"),
            }
        }
    }
    back_off(f);
}

/// Whether this runs on a multi-threaded tokio runtime (where `block_in_place` may be used).
fn multi_threaded() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Bytes of `records` that are whole batches.
fn whole_batches(records: &[u8]) -> usize {
    let mut pos = 0;
    while records.len() - pos >= 12 {
        let len = i32::from_be_bytes([
            records[pos + 8],
            records[pos + 9],
            records[pos + 10],
            records[pos + 11],
        ]);
        let total = 12 + len.max(0) as usize;
        if len <= 0 || pos + total > records.len() {
            break;
        }
        pos += total;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_batches_are_taken() {
        let mut buf = Vec::new();
        for len in [20i32, 30] {
            buf.extend_from_slice(&0i64.to_be_bytes());
            buf.extend_from_slice(&len.to_be_bytes());
            buf.extend(std::iter::repeat_n(0u8, len as usize));
        }
        assert_eq!(whole_batches(&buf), 32 + 42);
        assert_eq!(whole_batches(&buf[..50]), 32);
        assert_eq!(whole_batches(&buf[..5]), 0);
    }
}
