//! Committed offsets and group metadata, kept in memory and made durable in an internal log
//! (`<data.dir>/meta/__consumer_offsets-0`, Kafka's record format, see [`codec`]).
//!
//! Writes go through the partition's append path like produce appends, so a commit is
//! answered only after its append (and after the fsync when the flush policy asks for one), and
//! one fsync covers every commit waiting for it. The in-memory map is updated when a write is
//! queued, under the same lock that queues it, so the map and the log always agree on the order
//! of writes ("last value wins" on replay gives the map back).
//!
//! The log is replayed on start. It is kept from growing without bound by [`OffsetStore::compact`]:
//! roll a segment, append every live entry again, then drop the whole segments below that copy.

pub mod codec;

use crate::broker::partition::Partition;
use crate::broker::writer::{now_ms, AppendOutcome};
use bytes::{Bytes, BytesMut};
use codec::{GroupValue, LogKey, OffsetValue};
use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

/// Records per batch when many entries are written at once (compaction, group deletion).
const RECORDS_PER_BATCH: usize = 2000;
/// Compaction runs when the log holds more than twice the live entries plus this many records.
const COMPACTION_SLACK: i64 = 20_000;

/// Topic and partition.
pub type TopicPartition = (String, i32);

#[derive(Default)]
struct Inner {
    offsets: HashMap<String, BTreeMap<TopicPartition, OffsetValue>>,
    groups: HashMap<String, GroupValue>,
}

impl Inner {
    fn live(&self) -> usize {
        self.groups.len() + self.offsets.values().map(BTreeMap::len).sum::<usize>()
    }

    fn apply(&mut self, key: LogKey, value: Option<&[u8]>) {
        match key {
            LogKey::Offset {
                group,
                topic,
                partition,
            } => match value.and_then(codec::decode_offset) {
                Some(v) => {
                    self.offsets
                        .entry(group)
                        .or_default()
                        .insert((topic, partition), v);
                }
                None => {
                    if let Some(m) = self.offsets.get_mut(&group) {
                        m.remove(&(topic, partition));
                        if m.is_empty() {
                            self.offsets.remove(&group);
                        }
                    }
                }
            },
            LogKey::Group { group } => match value.and_then(codec::decode_group) {
                Some(v) => {
                    self.groups.insert(group, v);
                }
                None => {
                    self.groups.remove(&group);
                }
            },
        }
    }
}

/// The offsets store. Thread safe.
pub struct OffsetStore {
    inner: Mutex<Inner>,
    log: Arc<Partition>,
    compacting: AtomicBool,
}

/// A queued write; resolves once it is in the log (and flushed if the policy asks).
pub type WriteResult = oneshot::Receiver<Result<AppendOutcome, ResponseError>>;

/// Waits for a queued write: `Ok` once stored, KAFKA_STORAGE_ERROR-like errors otherwise.
pub async fn written(rx: WriteResult) -> Result<(), ResponseError> {
    match rx.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ResponseError::CoordinatorNotAvailable),
    }
}

fn encode_batch(records: &[(Bytes, Option<Bytes>)], now: i64) -> (BytesMut, BatchHeader) {
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp: now,
            key: Some(k.clone()),
            value: v.clone(),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::with_capacity(64 + records.len() * 64);
    RecordBatchEncoder::encode(
        &mut buf,
        recs.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encoding an uncompressed v2 batch cannot fail");
    let header = BatchHeader::parse(&buf).expect("a batch we just encoded parses");
    (buf, header)
}

impl OffsetStore {
    /// Replays the log into memory.
    pub fn open(log: Arc<Partition>) -> anyhow::Result<OffsetStore> {
        let mut inner = Inner::default();
        let reader = log.reader().clone();
        let mut offset = reader.log_start_offset();
        let end = reader.log_end_offset();
        let (mut records, mut skipped) = (0u64, 0u64);
        while offset < end {
            let data = reader.read(offset, 8 << 20, end)?;
            if data.chunks.is_empty() || data.next_offset <= offset {
                break;
            }
            for chunk in &data.chunks {
                let mut buf = chunk.clone();
                let sets = RecordBatchDecoder::decode_all(&mut buf)
                    .map_err(|e| anyhow::anyhow!("decoding the offsets log at {offset}: {e}"))?;
                for set in sets {
                    for r in set.records {
                        records += 1;
                        match r.key.as_deref().and_then(codec::decode_key) {
                            Some(k) => inner.apply(k, r.value.as_deref()),
                            None => skipped += 1,
                        }
                    }
                }
            }
            offset = data.next_offset;
        }
        tracing::info!(
            records,
            skipped,
            groups = inner.groups.len().max(inner.offsets.len()),
            live = inner.live(),
            "offsets log replayed"
        );
        Ok(OffsetStore {
            inner: Mutex::new(inner),
            log,
            compacting: AtomicBool::new(false),
        })
    }

    /// The partition holding the log (for maintenance and shutdown).
    pub fn partition(&self) -> &Arc<Partition> {
        &self.log
    }

    /// Applies writes to memory and queues them, in one batch, under the lock.
    fn write(&self, inner: &mut Inner, records: Vec<(LogKey, Option<Bytes>)>) -> WriteResult {
        let encoded: Vec<(Bytes, Option<Bytes>)> = records
            .iter()
            .map(|(k, v)| (codec::encode_key(k), v.clone()))
            .collect();
        for (k, v) in records {
            inner.apply(k, v.as_deref());
        }
        let (batch, header) = encode_batch(&encoded, now_ms());
        self.log.submit(batch, header)
    }

    /// Commits offsets of a group; resolves once durable.
    pub fn commit(
        &self,
        group: &str,
        entries: Vec<(TopicPartition, OffsetValue)>,
    ) -> impl Future<Output = Result<(), ResponseError>> {
        let records = entries
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
            .collect::<Vec<_>>();
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
        if records.is_empty() {
            return None;
        }
        let mut last = None;
        for chunk in records.chunks(RECORDS_PER_BATCH) {
            last = Some(self.write(&mut inner, chunk.to_vec()));
        }
        last
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

    /// Entries in the log now (from its start) and live entries in memory.
    pub fn sizes(&self) -> (i64, usize) {
        let r = self.log.reader();
        (
            r.log_end_offset() - r.log_start_offset(),
            self.inner.lock().live(),
        )
    }

    /// Whether the log holds enough dead entries to be worth compacting.
    pub fn needs_compaction(&self) -> bool {
        let (in_log, live) = self.sizes();
        in_log > 2 * live as i64 + COMPACTION_SLACK
    }

    /// Rewrites every live entry at the end of the log and drops the whole segments before the
    /// copy. Safe alongside commits: they are queued after or before the copy in log order,
    /// and the copy is taken under the same lock that queues them.
    pub async fn compact(&self) -> anyhow::Result<()> {
        if self.compacting.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = self.compact_inner().await;
        self.compacting.store(false, Ordering::Release);
        result
    }

    async fn compact_inner(&self) -> anyhow::Result<()> {
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            if let Some(state) = log.state.lock().as_mut() {
                state.log.roll_segment(now_ms())?;
            }
            Ok(())
        })
        .await??;
        let receivers = {
            let inner = self.inner.lock();
            let mut records: Vec<(LogKey, Option<Bytes>)> = Vec::with_capacity(inner.live());
            for (g, v) in &inner.groups {
                records.push((
                    LogKey::Group { group: g.clone() },
                    Some(codec::encode_group(v)),
                ));
            }
            for (g, m) in &inner.offsets {
                for ((t, p), v) in m {
                    records.push((
                        LogKey::Offset {
                            group: g.clone(),
                            topic: t.clone(),
                            partition: *p,
                        },
                        Some(codec::encode_offset(v)),
                    ));
                }
            }
            let now = now_ms();
            records
                .chunks(RECORDS_PER_BATCH)
                .map(|chunk| {
                    let encoded: Vec<_> = chunk
                        .iter()
                        .map(|(k, v)| (codec::encode_key(k), v.clone()))
                        .collect();
                    let (batch, header) = encode_batch(&encoded, now);
                    self.log.submit(batch, header)
                })
                .collect::<Vec<_>>()
        };
        let mut copy_start = None;
        for rx in receivers {
            let outcome = rx
                .await
                .map_err(|_| anyhow::anyhow!("log writer stopped"))?
                .map_err(|e| anyhow::anyhow!("append failed: {e:?}"))?;
            copy_start.get_or_insert(outcome.base_offset);
        }
        // With no live entries at all, everything before the log end can go.
        let below = copy_start.unwrap_or_else(|| self.log.reader().log_end_offset());
        let log = self.log.clone();
        let report = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            match log.state.lock().as_mut() {
                Some(state) => Ok(Some(state.log.delete_segments_below(below)?)),
                None => Ok(None),
            }
        })
        .await??;
        if let Some(r) = report {
            tracing::info!(
                deleted_segments = r.deleted_segments,
                deleted_bytes = r.deleted_bytes,
                log_start_offset = r.log_start_offset,
                "offsets log compacted"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::writer::LogWriters;
    use frieda_log::{LogConfig, PartitionLog};
    use std::path::Path;

    fn open(dir: &Path, writers: &LogWriters) -> OffsetStore {
        let cfg = LogConfig {
            segment_bytes: 64 << 10,
            retention_ms: -1,
            tail_cache_bytes: 0,
            ..LogConfig::default()
        };
        let (log, _) = PartitionLog::open(dir, cfg, now_ms()).unwrap();
        let name: Arc<str> = Arc::from("__consumer_offsets");
        let p = Partition::new(name.clone(), 0, log, writers.for_partition(&name, 0));
        OffsetStore::open(Arc::new(p)).unwrap()
    }

    fn close(store: OffsetStore) {
        if let Some(st) = store.log.state.lock().take() {
            st.log.close().unwrap();
        }
    }

    fn segments(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "log")
            })
            .count()
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
    async fn commits_survive_reopen_and_compaction_bounds_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        let now = now_ms();
        for round in 0..3000i64 {
            let entries = (0..10)
                .map(|p| (("t".to_string(), p), value(round, now)))
                .collect();
            store
                .commit(&format!("g{}", round % 3), entries)
                .await
                .unwrap();
        }
        drop(store.store_group(
            "g0",
            GroupValue {
                protocol_type: "consumer".into(),
                generation: 7,
                protocol: Some("range".into()),
                leader: None,
                state_timestamp: now,
            },
        ));
        written(store.delete_group("g2").unwrap()).await.unwrap();
        let many = segments(dir.path());
        assert!(many > 5, "{many} segments");
        assert!(store.needs_compaction());
        store.compact().await.unwrap();
        assert!(!store.needs_compaction());
        assert!(
            segments(dir.path()) <= 2,
            "{} segments left",
            segments(dir.path())
        );
        let (in_log, live) = store.sizes();
        assert_eq!(live, 21);
        assert!(in_log < 1000, "{in_log} records left in the log");
        // Commits after the compaction win over the copy.
        store
            .commit("g1", vec![(("t".into(), 3), value(99_999, now))])
            .await
            .unwrap();
        let check = |s: &OffsetStore| {
            assert_eq!(s.get("g0", "t", 5), Some(value(2997, now)));
            assert_eq!(s.get("g1", "t", 3), Some(value(99_999, now)));
            assert_eq!(s.get("g1", "t", 4), Some(value(2998, now)));
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
        // Offsets-only group: each offset ages from its commit.
        assert_eq!(store.expire("g", i64::MIN, 5_000, now), 1);
        assert_eq!(store.get("g", "t", 0), None);
        assert_eq!(store.get("g", "t", 1), Some(value(6, now)));
        // A group that became empty long ago: every offset ages from then, but never from
        // before its own commit.
        assert_eq!(store.expire("g", now - 10_000, 5_000, now), 0);
        assert_eq!(store.expire("g", now - 10_000, 5_000, now + 6_000), 1);
        assert!(!store.has_offsets("g"));
        // The deletions are in the log (tombstones): wait for them, then reopen.
        written(store.store_group(
            "h",
            GroupValue {
                protocol_type: String::new(),
                generation: 0,
                protocol: None,
                leader: None,
                state_timestamp: now,
            },
        ))
        .await
        .unwrap();
        close(store);
        writers.stop();
        let writers = LogWriters::start(1);
        let store = open(dir.path(), &writers);
        assert!(!store.has_offsets("g"));
        close(store);
        writers.stop();
    }
}
