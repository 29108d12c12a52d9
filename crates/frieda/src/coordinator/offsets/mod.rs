//! Committed offsets and group metadata, kept in memory and made durable in an internal log
//! (`<data.dir>/meta/__consumer_offsets-0`, Kafka's record format, see [`codec`]).
//!
//! Writes go through the partition's append path like produce appends, so a commit is
//! answered only after its append (and after the fsync when the flush policy asks for one), and
//! one fsync covers every commit waiting for it. Persist before apply: the in-memory map changes
//! only once a write is in the log, and writes are applied in log order (by offset), so the map
//! is always what a replay of the log would give. A write that fails changes nothing.
//!
//! In a cluster a write is made as an `acks=all` produce is (Kafka's offset commits and group
//! writes use required acks -1): refused before the append when fewer than the partition's
//! `min.insync.replicas` are in sync, and counted only once its in-sync replicas have it. A
//! write appended but not replicated as asked is answered with the error and not applied
//! (Kafka's `GroupMetadataManager.failPendingOffsetWrite` / `failPendingTxnOffsetCommit`):
//! OffsetFetch never serves it. It stays in the log, so a coordinator that loads the partition
//! later (after a failover, or a restart) may find it, as Kafka's does.
//!
//! The log is replayed on start. It is a compacted log (`cleanup.policy=compact`) kept small by
//! the broker's log cleaner like any compacted topic: the latest record of each key stays,
//! tombstones go after `delete.retention.ms`.
//!
//! Transactional offset commits (TxnOffsetCommit, KIP-98/KIP-447) are written as transactional
//! batches of the producer and stay pending until its transaction's marker lands in this log:
//! a commit marker applies them (unless a plain commit of the same partition landed after
//! them), an abort drops them. While any are pending for a partition, OffsetFetch with
//! `require_stable` answers UNSTABLE_OFFSET_COMMIT for it.

pub mod codec;
pub mod state;

use super::{lease_holds, LeaseCheck};
use crate::clock::now_ms;
use crate::coordinator::records::TxnProducer;
use crate::storage::leader_append::{admit_produce, answer_produce};
use crate::storage::partition::{Partition, ProducerCheck};
use crate::storage::writer::AppendOutcome;
use bytes::Bytes;
use codec::{GroupValue, LogKey, OffsetValue};
use kafka_protocol::error::ResponseError;
use parking_lot::Mutex;
use state::{Landed, LogRecord, OffsetsState};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Records per batch when many entries are written at once (group deletion, expiry).
const RECORDS_PER_BATCH: usize = 2000;
/// Topic and partition.
pub type TopicPartition = (String, i32);

/// The answer to a write's waiter.
type Done = oneshot::Sender<Result<AppendOutcome, ResponseError>>;
/// The offsets state of a running store: a write's waiter is its channel and what to send.
type Inner = OffsetsState<(Done, AppendOutcome)>;

/// How long a write to a replicated offsets partition waits for its in-sync replicas
/// (Kafka's `offsets.commit.timeout.ms`, default 5000).
pub const REPLICATION_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(5000);

/// The error a group coordinator answers for a failed write of its log (Kafka's
/// `GroupMetadataManager.appendGroupMetadataErrorToResponseError` and
/// `CoordinatorOperationExceptionHelper.handleOperationException`):
/// UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND and
/// REQUEST_TIMED_OUT become COORDINATOR_NOT_AVAILABLE (15; the client retries),
/// NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR NOT_COORDINATOR (16; the client looks the
/// coordinator up again), MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE UNKNOWN_SERVER_ERROR;
/// anything else is answered as it is. (Kafka 4's coordinator appends with acks=1 and waits for
/// the high watermark itself, so it never sees NOT_ENOUGH_REPLICAS_AFTER_APPEND; it times out
/// instead, which it answers COORDINATOR_NOT_AVAILABLE.)
pub fn append_error(e: ResponseError) -> ResponseError {
    match e {
        ResponseError::UnknownTopicOrPartition
        | ResponseError::NotEnoughReplicas
        | ResponseError::NotEnoughReplicasAfterAppend
        | ResponseError::RequestTimedOut => ResponseError::CoordinatorNotAvailable,
        ResponseError::NotLeaderOrFollower | ResponseError::KafkaStorageError => {
            ResponseError::NotCoordinator
        }
        ResponseError::MessageTooLarge | ResponseError::RecordListTooLarge => {
            ResponseError::UnknownServerError
        }
        other => other,
    }
}

/// A stored share-partition state: ((topic id, partition), state).
pub type ShareStateEntry = ((uuid::Uuid, i32), codec::ShareStateValue);

/// The offsets store. Thread safe.
pub struct OffsetStore {
    inner: Arc<Mutex<Inner>>,
    log: Arc<Partition>,
    /// Whether this broker's lease holds (a cluster broker; see [`LeaseCheck`]).
    lease: Option<LeaseCheck>,
    /// The end the load replayed to, served once committed ([`is_committed`](Self::is_committed)).
    loaded: super::CommittedLoad,
}

/// A queued write; resolves once it is in the log (and flushed if the policy asks).
pub type WriteResult = oneshot::Receiver<Result<AppendOutcome, ResponseError>>;

/// The offsets log records (key, value) of `group`'s committed `entries`.
fn offset_records(
    group: &str,
    entries: Vec<(TopicPartition, OffsetValue)>,
) -> Vec<(LogKey, Option<Bytes>)> {
    entries
        .into_iter()
        .map(|((topic, partition), v)| {
            (
                LogKey::Offset {
                    group: group.to_string(),
                    topic,
                    partition,
                },
                Some(codec::encode_offset(&v)),
            )
        })
        .collect()
}

/// Sends each answered write its outcome.
fn answer(answered: Vec<((Done, AppendOutcome), Result<(), ResponseError>)>) {
    for ((done, outcome), result) in answered {
        let _ = done.send(result.map(|()| outcome));
    }
}

/// Waits for a queued write: `Ok` once stored, KAFKA_STORAGE_ERROR-like errors otherwise.
pub async fn written(rx: WriteResult) -> Result<(), ResponseError> {
    match rx.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ResponseError::CoordinatorNotAvailable),
    }
}

impl OffsetStore {
    /// Replays the log into memory.
    pub fn open(log: Arc<Partition>) -> anyhow::Result<OffsetStore> {
        let mut inner = Inner::default();
        let (mut records, mut skipped) = (0u64, 0u64);
        let end = crate::storage::records::replay(&log, "the offsets log", |r| {
            records += 1;
            let read = LogRecord {
                offset: r.offset,
                producer_id: r.producer_id,
                transactional: r.transactional,
                control: r.control,
                key: r.key.as_deref(),
                value: r.value.as_deref(),
            };
            if !inner.replay(read) {
                skipped += 1;
            }
            Ok(())
        })?;
        inner.replayed_upto(end);
        tracing::info!(
            records,
            skipped,
            groups = inner.groups.len().max(inner.offsets.len()),
            live = inner.live(),
            "offsets log replayed"
        );
        Ok(OffsetStore {
            inner: Arc::new(Mutex::new(inner)),
            log,
            lease: None,
            loaded: super::CommittedLoad::new(end),
        })
    }

    /// Whether the state loaded is all committed: the partition's high watermark reached the
    /// log end offset the load replayed to (always on a single broker). Until then the
    /// coordinator answers COORDINATOR_LOAD_IN_PROGRESS (14): a new leader's unreplicated tail
    /// may still be lost to the next leader, and a commit or share-partition state served from
    /// it would be taken back (issue 57; the transaction coordinator's seed 743). Kafka's
    /// coordinator runtime (KIP-848 `CoordinatorRuntime`) likewise reads only committed state.
    pub fn is_committed(&self) -> bool {
        self.loaded.holds(&self.log)
    }

    /// Writes go through this broker's lease from now on (a cluster broker's coordinator).
    pub fn set_lease(&mut self, lease: LeaseCheck) {
        self.lease = Some(lease);
    }

    /// The partition holding the log (for maintenance and shutdown).
    pub fn partition(&self) -> &Arc<Partition> {
        &self.log
    }

    /// Appends writes to the log in one batch; they reach the in-memory map once the append
    /// (and the fsync the flush policy asks for) succeeded, in log order. The caller holds the
    /// lock, so writes are appended in the order they were decided on. Needs a tokio runtime
    /// (the outcome is awaited on a task, so writes nobody awaits are applied too).
    fn write(&self, _inner: &mut Inner, records: Vec<(LogKey, Option<Bytes>)>) -> WriteResult {
        self.write_as(records, None, ProducerCheck::PLAIN)
    }

    /// [`write`](Self::write) as transactional producer `txn` (pending until its marker), the
    /// batch checked against the producer's state in this log as `check` says.
    fn write_as(
        &self,
        records: Vec<(LogKey, Option<Bytes>)>,
        txn: Option<TxnProducer>,
        check: ProducerCheck,
    ) -> WriteResult {
        let encoded: Vec<(Bytes, Option<Bytes>)> = records
            .iter()
            .map(|(k, v)| (codec::encode_key(k), v.clone()))
            .collect();
        let (batch, header) = super::records::encode_batch(&encoded, now_ms(), txn);
        let (tx, rx) = oneshot::channel();
        // acks=all, as Kafka writes its offsets topic: with fewer than the partition's
        // `min.insync.replicas` in sync the write is refused before the append
        // (NOT_ENOUGH_REPLICAS, answered COORDINATOR_NOT_AVAILABLE).
        let min_insync = self.log.produce_policy().min_insync_replicas;
        if self.log.repl.is_replicated() {
            // The lease first, as the produce handler (`admit_produce`): NOT_COORDINATOR.
            let holds = lease_holds(&self.lease);
            if let Err(e) = admit_produce(&self.log.repl, holds, true, min_insync) {
                let _ = tx.send(Err(append_error(e)));
                return rx;
            }
        }
        let appended = self.log.submit_checked(batch, header, check);
        let inner = self.inner.clone();
        let log = self.log.clone();
        let lease = self.lease.clone();
        tokio::spawn(async move {
            match appended.await {
                Ok(Ok(outcome)) => {
                    // In a cluster a write counts once the partition's in-sync replicas have it
                    // (acks=all, `min.insync.replicas`). It is in the log either way, so it
                    // lands either way (writes apply in log order); one that did not replicate
                    // is not applied.
                    let waited = log
                        .repl
                        .wait_replicated(
                            outcome.last_offset,
                            outcome.leader_epoch,
                            min_insync,
                            REPLICATION_TIMEOUT,
                        )
                        .await;
                    // The lease again before the answer (the produce handler's rule): in the
                    // log here, perhaps not on the new leader; not applied.
                    let replicated =
                        answer_produce(waited, lease_holds(&lease)).map_err(append_error);
                    let count = records.len();
                    let answered = inner.lock().land(
                        outcome.base_offset,
                        count,
                        Landed::Write {
                            records,
                            waiter: (tx, outcome),
                            replicated,
                            txn: txn.map(|p| p.id),
                        },
                    );
                    answer(answered);
                }
                Ok(Err(e)) => drop(tx.send(Err(append_error(e)))),
                Err(_) => drop(tx.send(Err(append_error(ResponseError::KafkaStorageError)))),
            }
        });
        rx
    }

    /// Commits offsets of a group inside producer `txn`'s transaction (TxnOffsetCommit): they
    /// stay pending until its marker; resolves once written. `check`: how the batch is checked
    /// against the producer's state in this log; a verified commit carries the token of
    /// [`begin_txn_verification`](Self::begin_txn_verification) (KIP-890).
    ///
    /// Errors: INVALID_PRODUCER_EPOCH (47) for a fenced producer (a transactions v2 marker
    /// bumped its epoch), INVALID_TXN_STATE (48) when the verification `check` requires was
    /// voided by a marker of the transaction (it ended after the coordinator verified it: the
    /// commit would open a transaction nobody ends, its offsets pending for ever), and the
    /// write's errors.
    pub async fn txn_commit(
        &self,
        group: &str,
        txn: TxnProducer,
        entries: Vec<(TopicPartition, OffsetValue)>,
        check: ProducerCheck,
    ) -> Result<(), ResponseError> {
        if entries.is_empty() {
            return Ok(());
        }
        let records = offset_records(group, entries);
        let rx = {
            let _order = self.inner.lock();
            self.write_as(records, Some(txn), check)
        };
        written(rx).await
    }

    /// Starts a KIP-890 verification of producer `txn`'s transaction on this log, before its
    /// coordinator is asked (Kafka's `maybeStartTransactionVerificationForPartition` for a
    /// TxnOffsetCommit): `None` when the transaction is already open here at that epoch, else
    /// the token [`txn_commit`](Self::txn_commit)'s check carries. A marker of the transaction
    /// landing before the commit voids it. `transactions_v2`: TxnOffsetCommit v5+ (see
    /// [`frieda_log::ProducerStateManager::begin_verification`]).
    pub fn begin_txn_verification(&self, txn: TxnProducer, transactions_v2: bool) -> Option<u64> {
        self.log
            .begin_verification(txn.id, txn.epoch, transactions_v2)
    }

    /// A transaction marker of `producer_id` was appended at `offset` of this log: once every
    /// write before it is applied, the producer's pending offsets are applied (commit) or
    /// dropped (abort) if the marker `replicated` (reached the partition's in-sync replicas);
    /// if not, they stay pending until the coordinator's next attempt. Every marker appended
    /// must be reported, replicated or not (writes apply in log order).
    pub fn land_marker(&self, offset: i64, producer_id: i64, commit: bool, replicated: bool) {
        let answered = self.inner.lock().land(
            offset,
            1,
            Landed::Marker {
                producer_id,
                commit,
                replicated,
            },
        );
        answer(answered);
    }

    /// Whether a transactional commit of `group`'s partition waits for its transaction (KIP-447
    /// `require_stable`: UNSTABLE_OFFSET_COMMIT).
    pub fn has_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.inner
            .lock()
            .has_pending(group, &(topic.to_string(), partition))
    }

    /// Commits offsets of a group; resolves once durable.
    pub fn commit(
        &self,
        group: &str,
        entries: Vec<(TopicPartition, OffsetValue)>,
    ) -> impl Future<Output = Result<(), ResponseError>> {
        let records = offset_records(group, entries);
        let rx = if records.is_empty() {
            None
        } else {
            let mut inner = self.inner.lock();
            Some(self.write(&mut inner, records))
        };
        async move {
            match rx {
                Some(rx) => written(rx).await,
                None => Ok(()),
            }
        }
    }

    /// Deletes committed offsets (tombstones); returns the write if anything was deleted.
    pub fn delete_offsets(&self, group: &str, parts: &[TopicPartition]) -> Option<WriteResult> {
        let mut inner = self.inner.lock();
        let existing = inner.offsets.get(group)?;
        let records: Vec<_> = parts
            .iter()
            .filter(|tp| existing.contains_key(*tp))
            .map(|(t, p)| {
                (
                    LogKey::Offset {
                        group: group.to_string(),
                        topic: t.clone(),
                        partition: *p,
                    },
                    None,
                )
            })
            .collect();
        if records.is_empty() {
            return None;
        }
        Some(self.write(&mut inner, records))
    }

    /// Deletes every offset of a group and its metadata.
    pub fn delete_group(&self, group: &str) -> Option<WriteResult> {
        let mut inner = self.inner.lock();
        let mut records: Vec<_> = inner
            .offsets
            .get(group)
            .map(|m| {
                m.keys()
                    .map(|(t, p)| {
                        (
                            LogKey::Offset {
                                group: group.to_string(),
                                topic: t.clone(),
                                partition: *p,
                            },
                            None,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if inner.groups.contains_key(group) {
            records.push((
                LogKey::Group {
                    group: group.to_string(),
                },
                None,
            ));
        }
        records.extend(inner.shares.keys().filter(|(g, _, _)| g == group).map(
            |(g, topic_id, partition)| {
                (
                    LogKey::ShareState {
                        group: g.clone(),
                        topic_id: *topic_id,
                        partition: *partition,
                    },
                    None,
                )
            },
        ));
        if records.is_empty() {
            return None;
        }
        let mut last = None;
        for chunk in records.chunks(RECORDS_PER_BATCH) {
            last = Some(self.write(&mut inner, chunk.to_vec()));
        }
        last
    }

    /// The stored state of `group`'s share-partition `topic_id`/`partition` (KIP-932).
    pub fn share_state(
        &self,
        group: &str,
        topic_id: uuid::Uuid,
        partition: i32,
    ) -> Option<codec::ShareStateValue> {
        self.inner
            .lock()
            .share_state(group, topic_id, partition)
            .cloned()
    }

    /// Every stored share-partition state of `group`: ((topic id, partition), state).
    pub fn share_states(&self, group: &str) -> Vec<ShareStateEntry> {
        let inner = self.inner.lock();
        let mut out: Vec<_> = inner
            .shares
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, t, p), v)| ((*t, *p), v.clone()))
            .collect();
        out.sort_by_key(|(k, _)| *k);
        out
    }

    /// The groups with stored share-partition states.
    pub fn share_groups(&self) -> Vec<String> {
        let inner = self.inner.lock();
        let set: std::collections::BTreeSet<&String> =
            inner.shares.keys().map(|(g, _, _)| g).collect();
        set.into_iter().cloned().collect()
    }

    /// Stores (`Some`) or deletes (`None`) share-partition states of `group`: ((topic id,
    /// partition), state). Resolves once in the log and replicated.
    pub fn store_share_states(
        &self,
        group: &str,
        states: Vec<((uuid::Uuid, i32), Option<codec::ShareStateValue>)>,
    ) -> WriteResult {
        let mut inner = self.inner.lock();
        let records = states
            .into_iter()
            .map(|((topic_id, partition), v)| {
                (
                    LogKey::ShareState {
                        group: group.to_string(),
                        topic_id,
                        partition,
                    },
                    v.map(|v| codec::encode_share_state(&v)),
                )
            })
            .collect();
        self.write(&mut inner, records)
    }

    /// Stores a group's metadata (a new generation, or the group became empty).
    pub fn store_group(&self, group: &str, value: GroupValue) -> WriteResult {
        let mut inner = self.inner.lock();
        let v = codec::encode_group(&value);
        self.write(
            &mut inner,
            vec![(
                LogKey::Group {
                    group: group.to_string(),
                },
                Some(v),
            )],
        )
    }

    /// One committed offset.
    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<OffsetValue> {
        self.inner
            .lock()
            .offsets
            .get(group)?
            .get(&(topic.to_string(), partition))
            .cloned()
    }

    /// Every committed offset of a group, by topic and partition.
    pub fn group_offsets(&self, group: &str) -> Vec<(TopicPartition, OffsetValue)> {
        self.inner
            .lock()
            .offsets
            .get(group)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Whether a group has committed offsets.
    pub fn has_offsets(&self, group: &str) -> bool {
        self.inner.lock().offsets.contains_key(group)
    }

    /// Every group known to the store (with offsets or metadata), with its metadata if any.
    pub fn stored_groups(&self) -> Vec<(String, Option<GroupValue>)> {
        let inner = self.inner.lock();
        let mut names: Vec<&String> = inner.offsets.keys().chain(inner.groups.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|g| (g.clone(), inner.groups.get(g).cloned()))
            .collect()
    }

    /// Deletes the offsets of `group` whose age, counted from `max(commit time, since_ms)`,
    /// exceeds `retention_ms`. Returns how many were deleted.
    pub fn expire(&self, group: &str, since_ms: i64, retention_ms: i64, now: i64) -> usize {
        let mut inner = self.inner.lock();
        let Some(m) = inner.offsets.get(group) else {
            return 0;
        };
        let expired: Vec<_> = m
            .iter()
            .filter(|(_, v)| now.saturating_sub(v.commit_timestamp.max(since_ms)) > retention_ms)
            .map(|((t, p), _)| {
                (
                    LogKey::Offset {
                        group: group.to_string(),
                        topic: t.clone(),
                        partition: *p,
                    },
                    None,
                )
            })
            .collect();
        let n = expired.len();
        for chunk in expired.chunks(RECORDS_PER_BATCH) {
            drop(self.write(&mut inner, chunk.to_vec()));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::topic_config::TopicConfigs;
    use crate::storage::writer::LogWriters;
    use frieda_log::{LogConfig, PartitionLog};
    use std::path::Path;

    fn open(dir: &Path, writers: &LogWriters) -> OffsetStore {
        OffsetStore::open(crate::storage::testing::offsets_partition(dir, writers)).unwrap()
    }

    /// A store over a replicated `__consumer_offsets` partition led by broker 1 in leader
    /// epoch 5, with replicas 1, 2, 3, in-sync replicas `isr` and the topic's
    /// `min.insync.replicas` = `min_isr`.
    fn open_replicated(
        dir: &Path,
        writers: &LogWriters,
        isr: Vec<i32>,
        min_isr: usize,
    ) -> OffsetStore {
        let cfg = LogConfig {
            segment_bytes: 64 << 10,
            retention_ms: -1,
            tail_cache_bytes: 0,
            ..LogConfig::default()
        };
        let (log, _) = PartitionLog::open(dir, cfg, now_ms()).unwrap();
        let name: Arc<str> = Arc::from("__consumer_offsets");
        let mut topic = TopicConfigs::default();
        topic
            .set("min.insync.replicas", &min_isr.to_string())
            .unwrap();
        let policy = topic.produce_policy(&TopicConfigs::default());
        assert_eq!(policy.min_insync_replicas, min_isr);
        let p = Partition::new(
            name.clone(),
            0,
            log,
            writers.for_partition(&name, 0),
            policy,
        );
        let state = frieda_meta::PartitionState {
            replicas: vec![1, 2, 3],
            isr,
            leader: 1,
            leader_epoch: 5,
            partition_epoch: 1,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        };
        p.repl.become_leader(1, &state, now_ms(), 0);
        OffsetStore::open(Arc::new(p)).unwrap()
    }

    fn close(store: OffsetStore) {
        if let Some(st) = store.log.state.lock().take() {
            st.log.close().unwrap();
        }
    }

    fn value(offset: i64, ts: i64) -> OffsetValue {
        OffsetValue {
            offset,
            leader_epoch: 1,
            metadata: format!("m{offset}"),
            commit_timestamp: ts,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_survive_reopen_and_the_last_write_wins() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        for round in 0..300i64 {
            let entries = (0..10)
                .map(|p| (("t".to_string(), p), value(round, now)))
                .collect();
            store
                .commit(&format!("g{}", round % 3), entries)
                .await
                .unwrap();
        }
        written(store.store_group(
            "g0",
            GroupValue {
                protocol_type: "consumer".into(),
                generation: 7,
                protocol: Some("range".into()),
                leader: None,
                state_timestamp: now,
                members: vec![],
            },
        ))
        .await
        .unwrap();
        written(store.delete_group("g2").unwrap()).await.unwrap();
        store
            .commit("g1", vec![(("t".into(), 3), value(99_999, now))])
            .await
            .unwrap();
        let check = |s: &OffsetStore| {
            assert_eq!(s.get("g0", "t", 5), Some(value(297, now)));
            assert_eq!(s.get("g1", "t", 3), Some(value(99_999, now)));
            assert_eq!(s.get("g1", "t", 4), Some(value(298, now)));
            assert_eq!(s.get("g2", "t", 4), None);
            assert!(!s.has_offsets("g2"));
            let groups = s.stored_groups();
            assert_eq!(groups.len(), 2);
            assert_eq!(groups[0].1.as_ref().map(|g| g.generation), Some(7));
        };
        check(&store);
        close(store);
        writers.stop();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        check(&store);
        close(store);
        writers.stop();
    }

    /// A transaction marker reported for an offset the store already applied (its replay read
    /// it: the marker landed while the coordinator was loading) is answered and dropped; kept,
    /// it sat first in the landed queue below the next offset to apply and every later commit
    /// of the partition waited behind it for ever.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_marker_below_the_applied_offsets_does_not_block_later_commits() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        store
            .commit("g", vec![(("t".into(), 0), value(1, now))])
            .await
            .unwrap();
        store.land_marker(0, 42, true, true);
        let later = store.commit("g", vec![(("t".into(), 0), value(2, now))]);
        tokio::time::timeout(std::time::Duration::from_secs(5), later)
            .await
            .expect("a commit after a stale marker must resolve")
            .unwrap();
        assert_eq!(store.get("g", "t", 0), Some(value(2, now)));
        close(store);
        writers.stop();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_that_fails_changes_nothing_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        store
            .commit("g", vec![(("t".into(), 0), value(1, now))])
            .await
            .unwrap();
        // The log closes under the store (as when the disk refuses): appends fail.
        let log = store.log.state.lock().take().unwrap();
        let err = store
            .commit("g", vec![(("t".into(), 0), value(2, now))])
            .await;
        assert!(err.is_err());
        assert_eq!(
            store.get("g", "t", 0),
            Some(value(1, now)),
            "persist before apply"
        );
        assert!(store.delete_group("g").is_some());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(store.has_offsets("g"), "a failed deletion deletes nothing");
        log.log.close().unwrap();
        writers.stop();
    }

    /// The write waits for the partition's own `min.insync.replicas` (acks=all), not for 1:
    /// with only the leader in sync and `min.insync.replicas=2` a commit is refused before its
    /// append (NOT_ENOUGH_REPLICAS, answered COORDINATOR_NOT_AVAILABLE) and never served;
    /// with `min.insync.replicas=1` the same commit is taken.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_needs_the_partitions_min_insync_replicas() {
        let now = now_ms();
        for (min_isr, expected) in [
            (2, Err(ResponseError::CoordinatorNotAvailable)),
            (1, Ok(())),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let writers = LogWriters::start(1);
            let store = open_replicated(dir.path(), &writers, vec![1], min_isr);
            let got = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                store.commit("g", vec![(("t".into(), 0), value(7, now))]),
            )
            .await
            .expect("answered");
            assert_eq!(got, expected, "min.insync.replicas={min_isr}");
            let group = written(store.store_group(
                "g",
                GroupValue {
                    protocol_type: "consumer".into(),
                    generation: 1,
                    protocol: None,
                    leader: None,
                    state_timestamp: now,
                    members: vec![],
                },
            ))
            .await;
            assert_eq!(group, expected, "group metadata goes the same way");
            let served = expected.is_ok().then(|| value(7, now));
            assert_eq!(store.get("g", "t", 0), served);
            assert_eq!(store.stored_groups().len(), usize::from(expected.is_ok()));
            close(store);
            writers.stop();
        }
    }

    /// A commit appended but not replicated (the leader lost the partition while its followers
    /// had not fetched it) is answered with the error (NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR)
    /// and is not served, nor is a transactional commit left pending (Kafka's
    /// `failPendingOffsetWrite` / `failPendingTxnOffsetCommit`); a replicated one is served.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_that_did_not_replicate_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open_replicated(dir.path(), &writers, vec![1, 2, 3], 2);
        let now = now_ms();
        // Replicated: both followers fetch past it.
        let first = store.commit("g", vec![(("t".into(), 0), value(1, now))]);
        let log = store.partition().clone();
        let follow = |leo: i64| {
            for f in [2, 3] {
                log.repl
                    .on_follower_fetch(f, None, leo, 0, 5, leo, now_ms())
                    .unwrap();
            }
        };
        while log.reader().log_end_offset() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        follow(log.reader().log_end_offset());
        first.await.unwrap();
        assert_eq!(store.get("g", "t", 0), Some(value(1, now)));
        // Not replicated: nobody fetches; the leadership ends while the commits wait.
        let plain = store.commit("g", vec![(("t".into(), 0), value(2, now))]);
        let txn = store.txn_commit(
            "g",
            TxnProducer { id: 9, epoch: 0 },
            vec![(("t".into(), 1), value(3, now))],
            ProducerCheck::PLAIN,
        );
        let stop = async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            log.repl.stop();
        };
        let (plain, txn, ()) = tokio::join!(plain, txn, stop);
        assert_eq!(plain, Err(ResponseError::NotCoordinator));
        assert_eq!(txn, Err(ResponseError::NotCoordinator));
        assert_eq!(store.get("g", "t", 0), Some(value(1, now)), "not served");
        assert!(!store.has_pending("g", "t", 1), "not pending either");
        close(store);
        writers.stop();
    }

    /// Issue 57: a coordinator loads its offsets partition to the log end offset, and a new
    /// leader's tail may not be replicated yet (the next leader may not have it). Until the
    /// high watermark reaches what the load read, the group is answered
    /// COORDINATOR_LOAD_IN_PROGRESS and no coordinator lists it or runs its timers; then the
    /// commit in that tail is served (the transaction coordinator's seed 743 was this window).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_load_is_served_only_once_its_tail_is_committed() {
        use crate::coordinator::group::CoordinatorConfig;
        use crate::coordinator::registry::GroupCoordinators;
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        store
            .commit("g", vec![(("t".into(), 0), value(7, now))])
            .await
            .unwrap();
        let log = store.partition().clone();
        let leo = log.reader().log_end_offset();
        assert!(leo > 0);
        // The partition gets a replicated leader whose follower has not fetched the tail.
        let state = crate::coordinator::led_with_a_follower();
        log.repl.become_leader(1, &state, now_ms(), leo);
        let coordinators = GroupCoordinators::cluster(CoordinatorConfig::default());
        coordinators.set_partition_count(1);
        coordinators.load(0, log.clone()).unwrap();
        assert!(coordinators.is_loaded(0));
        assert_eq!(
            coordinators.for_group("g").err(),
            Some(ResponseError::CoordinatorLoadInProgress)
        );
        assert!(
            coordinators.list(&[]).is_empty(),
            "listed from an uncommitted load"
        );
        assert!(coordinators.serving().is_empty());
        // The follower fetches to the end: the high watermark reaches what the load read.
        log.repl
            .on_follower_fetch(2, None, leo, 0, 4, leo, now_ms())
            .unwrap();
        let c = coordinators.for_group("g").expect("served once committed");
        assert_eq!(c.offsets.get("g", "t", 0), Some(value(7, now)));
        assert_eq!(coordinators.serving().len(), 1);
        close(store);
        writers.stop();
    }

    /// A coordinator whose broker's lease does not hold (it may have been fenced, another
    /// broker may lead the offsets partition) appends nothing and answers NOT_COORDINATOR; one
    /// whose lease ends while a commit waits for its replicas answers NOT_COORDINATOR and does
    /// not serve it, as the produce handler (simulator seed 314: before, a fenced coordinator
    /// acknowledged commits).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_coordinator_without_its_lease_takes_and_answers_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let mut store = open_replicated(dir.path(), &writers, vec![1], 1);
        let holds = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let h = holds.clone();
        store.set_lease(Arc::new(move || {
            h.load(std::sync::atomic::Ordering::SeqCst)
        }));
        let now = now_ms();
        let refused = store
            .commit("g", vec![(("t".into(), 0), value(1, now))])
            .await;
        assert_eq!(refused, Err(ResponseError::NotCoordinator));
        assert_eq!(
            store.partition().reader().log_end_offset(),
            0,
            "nothing appended"
        );
        assert_eq!(store.get("g", "t", 0), None);
        // The lease holds: taken and served (the ISR is the leader alone).
        holds.store(true, std::sync::atomic::Ordering::SeqCst);
        store
            .commit("g", vec![(("t".into(), 0), value(2, now))])
            .await
            .unwrap();
        assert_eq!(store.get("g", "t", 0), Some(value(2, now)));
        close(store);
        writers.stop();

        // The lease ends while a commit waits for its followers.
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let mut store = open_replicated(dir.path(), &writers, vec![1, 2, 3], 2);
        let holds = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let h = holds.clone();
        store.set_lease(Arc::new(move || {
            h.load(std::sync::atomic::Ordering::SeqCst)
        }));
        let waiting = store.commit("g", vec![(("t".into(), 0), value(3, now))]);
        let log = store.partition().clone();
        let fetched = async {
            while log.reader().log_end_offset() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            holds.store(false, std::sync::atomic::Ordering::SeqCst);
            let leo = log.reader().log_end_offset();
            for f in [2, 3] {
                log.repl
                    .on_follower_fetch(f, None, leo, 0, 5, leo, now_ms())
                    .unwrap();
            }
        };
        let (answer, ()) = tokio::join!(waiting, fetched);
        assert_eq!(answer, Err(ResponseError::NotCoordinator));
        assert_eq!(store.get("g", "t", 0), None, "not served");
        close(store);
        writers.stop();
    }

    /// A transaction marker that did not replicate completes nothing (Kafka completes the
    /// offsets only for marker appends that succeeded); the coordinator's next attempt does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_marker_that_did_not_replicate_leaves_the_offsets_pending() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        store
            .txn_commit(
                "g",
                TxnProducer { id: 9, epoch: 0 },
                vec![(("t".into(), 1), value(3, now))],
                ProducerCheck::PLAIN,
            )
            .await
            .unwrap();
        assert!(store.has_pending("g", "t", 1));
        let marker = frieda_log::EndTxnMarker {
            control: frieda_log::ControlType::Commit,
            coordinator_epoch: 0,
        };
        let first = store
            .partition()
            .append_marker(9, 0, marker, false)
            .await
            .unwrap();
        store.land_marker(first.base_offset, 9, true, false);
        assert!(store.has_pending("g", "t", 1), "still pending");
        assert_eq!(store.get("g", "t", 1), None);
        let again = store
            .partition()
            .append_marker(9, 0, marker, false)
            .await
            .unwrap();
        store.land_marker(again.base_offset, 9, true, true);
        assert!(!store.has_pending("g", "t", 1));
        assert_eq!(store.get("g", "t", 1), Some(value(3, now)));
        close(store);
        writers.stop();
    }

    /// KIP-890 for TxnOffsetCommit: a commit verified with the transaction coordinator whose
    /// transaction ended (its marker landed here) before the commit was written is refused with
    /// INVALID_TXN_STATE and leaves nothing pending; without the check it opened a transaction
    /// no marker ends (offsets pending for ever). Both ways a verification meets a marker: begun
    /// while the transaction was open here (no token), and begun before its first commit here
    /// (a token the marker voids). The next transaction's verified commit is written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_whose_transaction_ended_after_its_verification_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        let producer = TxnProducer { id: 9, epoch: 0 };
        let abort = frieda_log::EndTxnMarker {
            control: frieda_log::ControlType::Abort,
            coordinator_epoch: 0,
        };
        let land_abort = || async {
            let m = store
                .partition()
                .append_marker(9, 0, abort, false)
                .await
                .unwrap();
            store.land_marker(m.base_offset, 9, false, true);
        };
        let commit = |partition: i32, offset: i64, check| {
            store.txn_commit(
                "g",
                producer,
                vec![(("t".into(), partition), value(offset, now))],
                check,
            )
        };
        // The first transaction's first commit, verified: written and pending.
        let token = store.begin_txn_verification(producer, false);
        assert!(
            token.is_some(),
            "no transaction of producer 9 is open here yet"
        );
        commit(1, 3, ProducerCheck::verified(token)).await.unwrap();
        assert!(store.has_pending("g", "t", 1));
        // A second commit of it is verified (open here: no token needed), then it aborts.
        let open = store.begin_txn_verification(producer, false);
        assert_eq!(open, None, "the transaction is open here");
        land_abort().await;
        assert!(!store.has_pending("g", "t", 1));
        let r = commit(2, 7, ProducerCheck::verified(open)).await;
        assert_eq!(r, Err(ResponseError::InvalidTxnState));
        assert!(
            !store.has_pending("g", "t", 2),
            "nothing pending after a refusal"
        );
        // The next transaction's commit is verified, and the transaction aborts before the
        // commit is written: the marker voids the token.
        let voided = store.begin_txn_verification(producer, false);
        assert!(voided.is_some());
        land_abort().await;
        let r = commit(2, 7, ProducerCheck::verified(voided)).await;
        assert_eq!(r, Err(ResponseError::InvalidTxnState));
        assert!(!store.has_pending("g", "t", 2));
        assert_eq!(store.get("g", "t", 2), None);
        // Verified again, with no marker in between: written.
        let next = store.begin_txn_verification(producer, false);
        assert!(next.is_some());
        commit(2, 8, ProducerCheck::verified(next)).await.unwrap();
        assert!(store.has_pending("g", "t", 2));
        close(store);
        writers.stop();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn retention_expires_old_offsets_durably() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        let entries = vec![
            (("t".to_string(), 0), value(5, now - 10_000)),
            (("t".to_string(), 1), value(6, now)),
        ];
        store.commit("g", entries).await.unwrap();
        // Writes apply in log order: once a later write is answered, the expiry is applied.
        let settle = || {
            written(store.store_group(
                "h",
                GroupValue {
                    protocol_type: String::new(),
                    generation: 0,
                    protocol: None,
                    leader: None,
                    state_timestamp: now,
                    members: vec![],
                },
            ))
        };
        // Offsets-only group: each offset ages from its commit.
        assert_eq!(store.expire("g", i64::MIN, 5_000, now), 1);
        settle().await.unwrap();
        assert_eq!(store.get("g", "t", 0), None);
        assert_eq!(store.get("g", "t", 1), Some(value(6, now)));
        // A group that became empty long ago: every offset ages from then, but never from
        // before its own commit.
        assert_eq!(store.expire("g", now - 10_000, 5_000, now), 0);
        assert_eq!(store.expire("g", now - 10_000, 5_000, now + 6_000), 1);
        settle().await.unwrap();
        assert!(!store.has_offsets("g"));
        close(store);
        writers.stop();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        assert!(!store.has_offsets("g"));
        close(store);
        writers.stop();
    }
}
