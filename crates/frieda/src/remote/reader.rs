//! Reads from the remote tier (docs/tiered-storage.md, "Reading from the bucket"): a fetch
//! below a tiered partition's local log start is served from the copied segment holding its
//! offset, chunk by chunk (`rsm.config.chunk.size`) through a bounded chunk cache
//! ([`super::chunk_cache`]) with read-ahead after a miss (HuronFS's burst buffer).
//! Runs on the remote-log runtime; the fetch waits for it at most
//! `remote.fetch.max.wait.ms`, so a slow object store delays only these fetches.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use frieda_log::{AbortedTxn, BatchHeader, RemoteIndexes};
use frieda_meta::remote_log::{RemoteLog, RemoteSegment};
use parking_lot::Mutex;
use uuid::Uuid;

use super::chunk_cache::{chunks_of, ChunkCache};
use super::store::{ObjectKind, RemoteStore, SegmentKey};

/// Parsed `.indexes` objects kept in memory, by segment id (each a few KiB); beyond, the one
/// cached first goes.
pub const MAX_CACHED_INDEXES: usize = 1024;

/// Why a remote read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The bucket failed.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    /// An object is not what this broker wrote.
    #[error("corrupt remote object {0}")]
    Corrupt(String),
}

/// What a remote read returns: whole batches from the one holding the offset, and the
/// transactions aborted in the segment (for `read_committed` fetches).
#[derive(Debug, Clone)]
pub struct RemoteRead {
    /// Whole batches, back to back.
    pub data: Bytes,
    /// Base offset of the first batch.
    pub first_offset: i64,
    /// One past the last offset returned.
    pub next_offset: i64,
    /// The segment's aborted transactions overlapping what was returned.
    pub aborted: Vec<AbortedTxn>,
}

/// Reads from the bucket through the chunk cache.
pub struct RemoteReader {
    store: Arc<RemoteStore>,
    cache: ChunkCache,
    chunk_size: u64,
    /// Chunks fetched after the missed one in the same GET (`fetch.chunk.cache.prefetch.max.size`
    /// / `chunk.size`).
    prefetch_chunks: u64,
    /// Parsed `.indexes` by segment id, and the ids in the order cached (at most
    /// [`MAX_CACHED_INDEXES`]).
    indexes: Mutex<(IndexesById, VecDeque<Uuid>)>,
}

type IndexesById = HashMap<Uuid, Arc<RemoteIndexes>>;

impl RemoteReader {
    /// A reader of `store` through `cache`, reading `chunk_size` bytes per chunk and
    /// `prefetch_bytes` more after a miss (rounded down to whole chunks).
    pub fn new(
        store: Arc<RemoteStore>,
        cache: ChunkCache,
        chunk_size: u64,
        prefetch_bytes: u64,
    ) -> RemoteReader {
        RemoteReader {
            store,
            cache,
            chunk_size: chunk_size.max(1),
            prefetch_chunks: prefetch_bytes / chunk_size.max(1),
            indexes: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    /// The chunk cache.
    pub fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    async fn indexes(&self, key: &SegmentKey<'_>) -> Result<Arc<RemoteIndexes>, ReadError> {
        if let Some(i) = self.indexes.lock().0.get(&key.segment_id) {
            return Ok(i.clone());
        }
        let mut parsed = self.fetch_indexes(key).await?;
        // Reads need no producer snapshot: the cache does not keep it.
        parsed.producer_snapshot = Vec::new();
        let parsed = Arc::new(parsed);
        let (map, order) = &mut *self.indexes.lock();
        if map.insert(key.segment_id, parsed.clone()).is_none() {
            order.push_back(key.segment_id);
            while map.len() > MAX_CACHED_INDEXES {
                let Some(oldest) = order.pop_front() else {
                    break;
                };
                map.remove(&oldest);
            }
        }
        Ok(parsed)
    }

    async fn fetch_indexes(&self, key: &SegmentKey<'_>) -> Result<RemoteIndexes, ReadError> {
        let k = self.store.key(key, ObjectKind::Indexes);
        let bytes = self.store.get(&k).await?;
        RemoteIndexes::parse(&bytes).ok_or_else(|| ReadError::Corrupt(k.to_string()))
    }

    /// The producer snapshot copied with the segment (KIP-405's `producerSnapshotIndex`: the
    /// producers before the offset after it), read from its `.indexes` object (not cached);
    /// `None` when the copy carries none.
    ///
    /// Errors: [`ReadError`] from the bucket or an object that does not parse.
    pub async fn producer_snapshot(
        &self,
        key: &SegmentKey<'_>,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let snapshot = self.fetch_indexes(key).await?.producer_snapshot;
        Ok((!snapshot.is_empty()).then_some(snapshot))
    }

    /// Chunk `chunk` of the segment's `.log` (`size` bytes long), from the cache or the bucket
    /// (with read-ahead). A chunk from the bucket is a slice of the ranged GET's body, cached
    /// after it is returned.
    async fn chunk(&self, key: &SegmentKey<'_>, size: u64, chunk: u64) -> Result<Bytes, ReadError> {
        if let Some(b) = self.cache.get(key.segment_id, chunk) {
            super::READS.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(b);
        }
        super::READS.cache_misses.fetch_add(1, Ordering::Relaxed);
        let cs = self.chunk_size;
        let start = chunk * cs;
        let end = ((chunk + 1 + self.prefetch_chunks) * cs).min(size);
        let data = self
            .store
            .get_range(&self.store.key(key, ObjectKind::Log), start, end - start)
            .await?;
        if data.is_empty() {
            return Err(ReadError::Corrupt(format!(
                "empty range of segment {}",
                key.segment_id
            )));
        }
        let parts = chunks_of(&data, cs as usize);
        let first = parts[0].clone();
        self.cache.put(key.segment_id, chunk, parts);
        Ok(first)
    }

    /// `len` bytes of the segment's `.log` from `pos` (fewer at its end): a slice of one chunk
    /// when the range lies in one (no copy), else the chunks' pieces joined. `memo` holds the
    /// chunk the previous call of the same read ended in, so one read takes each chunk from the
    /// cache (a whole file) once, not once per batch header.
    async fn bytes(
        &self,
        key: &SegmentKey<'_>,
        size: u64,
        pos: u64,
        len: u64,
        memo: &mut Option<(u64, Bytes)>,
    ) -> Result<Bytes, ReadError> {
        let end = (pos + len).min(size);
        let mut out = BytesMut::new();
        let mut at = pos;
        while at < end {
            let chunk = at / self.chunk_size;
            let data = match memo {
                Some((i, data)) if *i == chunk => data.clone(),
                _ => {
                    let data = self.chunk(key, size, chunk).await?;
                    *memo = Some((chunk, data.clone()));
                    data
                }
            };
            let from = (at - chunk * self.chunk_size) as usize;
            let take = ((end - at) as usize).min(data.len().saturating_sub(from));
            if take == 0 {
                return Err(ReadError::Corrupt(format!(
                    "segment {} shorter than its {size} bytes",
                    key.segment_id
                )));
            }
            if at == pos && at + take as u64 == end {
                return Ok(data.slice(from..from + take));
            }
            if out.is_empty() {
                out.reserve((end - at) as usize);
            }
            out.extend_from_slice(&data[from..from + take]);
            at += take as u64;
        }
        Ok(out.freeze())
    }

    /// Reads `segment` (of the partition in `key`) from the batch holding `offset`: whole
    /// batches, at least one, then more while they fit in `max_bytes` and start below
    /// `upper` (exclusive). `aborted` asks for the segment's aborted transactions
    /// (`read_committed` fetches); without it a read from the segment's first offset does not
    /// fetch the segment's `.indexes` object (no position to look up), and
    /// [`RemoteRead::aborted`] is empty.
    ///
    /// Errors: [`ReadError`].
    pub async fn read(
        &self,
        key: &SegmentKey<'_>,
        segment: &RemoteSegment,
        offset: i64,
        max_bytes: usize,
        upper: i64,
        aborted: bool,
    ) -> Result<RemoteRead, ReadError> {
        const HEADER: u64 = 61;
        let size = segment.size_bytes;
        let mut memo = None;
        let from_start = offset <= segment.start_offset && size > 0;
        let indexes = if from_start && !aborted {
            None
        } else if from_start {
            // From the segment's first byte (a reader going on from the segment before): its
            // first chunk and its indexes (for the aborted transactions) are fetched together,
            // one round trip to the bucket instead of two.
            let (indexes, first) = tokio::join!(self.indexes(key), self.chunk(key, size, 0));
            memo = Some((0, first?));
            Some(indexes?)
        } else {
            Some(self.indexes(key).await?)
        };
        let mut pos = indexes
            .as_ref()
            .map_or(0, |i| i.position_for(segment.start_offset, offset));
        // The batches returned are one run of the segment's bytes: [start, pos) once found.
        let mut start = None;
        let mut first_offset = -1;
        let mut next_offset = offset;
        while pos + HEADER <= size {
            let head = self.bytes(key, size, pos, HEADER, &mut memo).await?;
            let base = i64::from_be_bytes(head[0..8].try_into().unwrap_or_default());
            let len = i32::from_be_bytes(head[8..12].try_into().unwrap_or_default());
            let delta = i32::from_be_bytes(head[23..27].try_into().unwrap_or_default());
            if len < 49 || delta < 0 || pos + 12 + len as u64 > size {
                return Err(ReadError::Corrupt(format!(
                    "bad batch header at {pos} of segment {}",
                    key.segment_id
                )));
            }
            let total = 12 + len as u64;
            let last = base + i64::from(delta);
            if base > segment.end_offset {
                // Past a truncated copy's end: batches of a lineage the leader no longer has
                // (`RemoteSegmentChange::Truncated`).
                break;
            }
            if last < offset {
                pos += total;
                continue;
            }
            let taken = start.map_or(0, |s| pos - s);
            if base >= upper || (taken > 0 && taken + total > max_bytes as u64) {
                break;
            }
            start.get_or_insert(pos);
            if first_offset < 0 {
                first_offset = base;
            }
            next_offset = last + 1;
            pos += total;
            if taken + total >= max_bytes as u64 {
                break;
            }
        }
        let data = match start {
            Some(s) => self.bytes(key, size, s, pos - s, &mut memo).await?,
            None => Bytes::new(),
        };
        let aborted = indexes
            .iter()
            .flat_map(|i| i.aborted.iter())
            .filter(|a| a.last_offset >= offset && a.first_offset < next_offset)
            .cloned()
            .collect();
        Ok(RemoteRead {
            data,
            first_offset: if first_offset < 0 {
                offset
            } else {
                first_offset
            },
            next_offset,
            aborted,
        })
    }
}

/// The copy a lookup by timestamp `ts` searches (Kafka's `RemoteLogManager.findOffsetByTimestamp`):
/// the first readable copy, by offset, whose largest timestamp is `ts` or later and which holds
/// an offset at or above `log_start` (the partition's log start offset, DeleteRecords
/// included). Kafka walks the leader-epoch lineage from the epoch of `log_start` and skips
/// copies outside it (`isRemoteSegmentWithinLeaderEpochs`); here the quorum admits a copy only
/// from the current leader and only above every offset copied before, and a leader truncates
/// the copies where they leave its lineage (`RemoteSegmentChange::Truncated`), so the readable
/// copies are one lineage already and ascending offset order is that walk. `None`: no copy can hold
/// the answer.
pub fn segment_for_timestamp(
    remote: &RemoteLog,
    ts: i64,
    log_start: i64,
) -> Option<&RemoteSegment> {
    remote
        .finished()
        .find(|s| s.max_timestamp_ms >= ts && s.end_offset >= log_start)
}

/// The copy holding the partition's largest timestamp among the readable copies with an offset
/// at or above `log_start` (ListOffsets `MAX_TIMESTAMP`, KIP-734, over the remote tier): the
/// first, by offset, of those with the largest `max_timestamp_ms`, as the earliest record
/// carrying it is the answer. `None` without such a copy, or when no copy has a timestamp.
pub fn segment_for_max_timestamp(remote: &RemoteLog, log_start: i64) -> Option<&RemoteSegment> {
    remote
        .finished()
        .filter(|s| s.end_offset >= log_start && s.max_timestamp_ms >= 0)
        .fold(None, |best: Option<&RemoteSegment>, s| match best {
            Some(b) if b.max_timestamp_ms >= s.max_timestamp_ms => Some(b),
            _ => Some(s),
        })
}

impl RemoteReader {
    /// In the copy `segment` (of the partition in `key`), the first record whose timestamp is
    /// `ts` or later and whose offset is `starting_offset` or later: `(offset, timestamp ms)`,
    /// or `None` (Kafka's `RemoteLogManager.lookupTimestamp`). Starts at the position the
    /// copy's time and offset indexes give ([`RemoteIndexes::time_position`]), then reads batch
    /// headers and looks into the first batch whose largest timestamp is `ts` or later and
    /// whose last offset is `starting_offset` or later, and the batches after it, record by
    /// record (decompressing). Reads through the chunk cache.
    ///
    /// Errors: [`ReadError`] from the bucket, an `.indexes` object that does not parse, or a
    /// batch that fails its CRC or does not decode.
    pub async fn offset_for_timestamp(
        &self,
        key: &SegmentKey<'_>,
        segment: &RemoteSegment,
        ts: i64,
        starting_offset: i64,
    ) -> Result<Option<(i64, i64)>, ReadError> {
        let indexes = self.indexes(key).await?;
        let pos = indexes.time_position(segment.start_offset, ts, starting_offset);
        self.first_record_where(
            key,
            segment,
            pos,
            |h| h.max_timestamp >= ts && h.last_offset() >= starting_offset,
            |o, t| t >= ts && o >= starting_offset,
        )
        .await
    }

    /// In the copy `segment`, the earliest record carrying its largest timestamp
    /// (`segment.max_timestamp_ms`) at offset `starting_offset` or later: `(offset, timestamp
    /// ms)` (Kafka's `RecordBatch.offsetOfMaxTimestamp` in the first batch reaching it: the
    /// first such record, or the batch's first record for a `LogAppendTime` batch). `None` if
    /// no batch carries it.
    ///
    /// Errors: as [`Self::offset_for_timestamp`].
    pub async fn max_timestamp(
        &self,
        key: &SegmentKey<'_>,
        segment: &RemoteSegment,
        starting_offset: i64,
    ) -> Result<Option<(i64, i64)>, ReadError> {
        let max = segment.max_timestamp_ms;
        let indexes = self.indexes(key).await?;
        let pos = indexes.time_position(segment.start_offset, max, starting_offset);
        self.first_record_where(
            key,
            segment,
            pos,
            |h| h.max_timestamp == max && h.last_offset() >= starting_offset,
            |o, t| t == max && o >= starting_offset,
        )
        .await
    }

    /// From byte `pos` of the copy's `.log`, the first batch `batch_ok` accepts and in it the
    /// first record `record_ok` accepts (offset, timestamp); batches after it when it has
    /// none.
    async fn first_record_where(
        &self,
        key: &SegmentKey<'_>,
        segment: &RemoteSegment,
        mut pos: u64,
        batch_ok: impl Fn(&BatchHeader) -> bool,
        record_ok: impl Fn(i64, i64) -> bool,
    ) -> Result<Option<(i64, i64)>, ReadError> {
        let size = segment.size_bytes;
        let header_len = frieda_log::BATCH_HEADER_LEN as u64;
        let corrupt = |pos: u64, why: &str| {
            ReadError::Corrupt(format!("segment {} at byte {pos}: {why}", key.segment_id))
        };
        let mut memo = None;
        while pos + header_len <= size {
            let head = self.bytes(key, size, pos, header_len, &mut memo).await?;
            let h = BatchHeader::parse(&head).map_err(|e| corrupt(pos, &e.to_string()))?;
            let total = h.total_size() as u64;
            if h.batch_length < 49 || pos + total > size {
                return Err(corrupt(pos, "bad batch length"));
            }
            if h.base_offset > segment.end_offset {
                break;
            }
            if batch_ok(&h) && h.records_count > 0 {
                let batch = self.bytes(key, size, pos, total, &mut memo).await?;
                let found = frieda_log::find_record(&batch, &h, &record_ok)
                    .map_err(|e| corrupt(pos, &e.to_string()))?;
                if found.is_some() {
                    return Ok(found);
                }
            }
            pos += total;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk_cache::CacheKind;
    use super::*;
    use frieda_meta::remote_log::RemoteSegmentState;

    /// Chunk size of the tests: batches straddle chunks.
    const CHUNK: u64 = 100;

    /// A segment's `.log` of `n` batches (only the header fields a read looks at are set):
    /// batch `i` at base offset `3i` with 3 records, `61 + 13i` bytes long. Returns the bytes
    /// and each batch's byte position.
    fn segment_log(n: usize) -> (Vec<u8>, Vec<usize>) {
        let mut log = Vec::new();
        let mut positions = Vec::new();
        for i in 0..n {
            positions.push(log.len());
            let total = 61 + 13 * i;
            let mut b = vec![i as u8; total];
            b[0..8].copy_from_slice(&(3 * i as i64).to_be_bytes());
            b[8..12].copy_from_slice(&((total - 12) as i32).to_be_bytes());
            b[23..27].copy_from_slice(&2i32.to_be_bytes());
            log.extend_from_slice(&b);
        }
        (log, positions)
    }

    /// The aborted transaction of the tests' `.indexes` objects: producer 5, offsets 4-8.
    fn aborted_txn() -> AbortedTxn {
        AbortedTxn {
            producer_id: 5,
            first_offset: 4,
            last_offset: 8,
            last_stable_offset: 9,
        }
    }

    /// An `.indexes` object with no offset index entries and one aborted transaction.
    fn indexes_object(aborted: &AbortedTxn) -> Vec<u8> {
        let mut txn = Vec::new();
        txn.extend_from_slice(&0i16.to_be_bytes());
        for v in [
            aborted.producer_id,
            aborted.first_offset,
            aborted.last_offset,
            aborted.last_stable_offset,
        ] {
            txn.extend_from_slice(&v.to_be_bytes());
        }
        let mut out = frieda_log::INDEXES_MAGIC.to_vec();
        for len in [0, 0, txn.len(), 0, 0] {
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
        out.extend_from_slice(&txn);
        out
    }

    fn segment(size: usize, batches: usize) -> RemoteSegment {
        RemoteSegment {
            id: Uuid::from_u128(7),
            start_offset: 0,
            end_offset: 3 * batches as i64 - 1,
            max_timestamp_ms: 0,
            size_bytes: size as u64,
            broker: 1,
            leader_epoch: 0,
            segment_epochs: vec![(0, 0)],
            truncated: false,
            state: RemoteSegmentState::CopyFinished,
        }
    }

    fn key() -> SegmentKey<'static> {
        SegmentKey {
            topic: "t",
            topic_id: Uuid::from_u128(1),
            partition: 0,
            base_offset: 0,
            segment_id: Uuid::from_u128(7),
        }
    }

    async fn wait_cached(reader: &RemoteReader, chunks: usize) {
        for _ in 0..5000 {
            if reader.cache.len_and_bytes().0 >= chunks {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        panic!("chunks not cached");
    }

    /// Reads return whole batches byte for byte, bounded by max_bytes (at least one batch) and
    /// the upper offset; a read_uncommitted read from the segment's start needs no `.indexes`
    /// object, a read_committed one fetches it and gets the aborted transactions; a second
    /// read of the same bytes comes from the chunk cache.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_return_whole_batches_from_the_bucket_then_the_cache() {
        let (log, pos) = segment_log(10);
        let store = Arc::new(RemoteStore::in_memory());
        let k = key();
        store
            .put(&store.key(&k, ObjectKind::Log), Bytes::from(log.clone()))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = ChunkCache::new(
            CacheKind::Disk(dir.path().join("cache")),
            1 << 20,
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        let reader = RemoteReader::new(store.clone(), cache, CHUNK, 0);
        let seg = segment(log.len(), 10);

        // read_uncommitted from the start: no .indexes object in the bucket, yet it reads.
        let r = reader
            .read(&k, &seg, 0, 1 << 20, i64::MAX, false)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[..]);
        assert_eq!((r.first_offset, r.next_offset), (0, 30));
        assert!(r.aborted.is_empty());

        // max_bytes: whole batches that fit, at least one; upper: batches based below it.
        let r = reader.read(&k, &seg, 0, 1, i64::MAX, false).await.unwrap();
        assert_eq!(&r.data[..], &log[..pos[1]]);
        let r = reader
            .read(&k, &seg, 0, pos[3] + 5, i64::MAX, false)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[..pos[3]]);
        assert_eq!(r.next_offset, 9);
        let r = reader.read(&k, &seg, 0, 1 << 20, 7, false).await.unwrap();
        assert_eq!(&r.data[..], &log[..pos[3]]);
        // A copy truncated to end at 8 (its later batches are of another lineage): the read
        // stops at its end whatever the object holds.
        let cut = RemoteSegment {
            end_offset: 8,
            ..seg.clone()
        };
        let r = reader
            .read(&k, &cut, 0, 1 << 20, i64::MAX, false)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[..pos[3]]);
        assert_eq!(r.next_offset, 9);

        // read_committed, or a read from inside the segment, needs the .indexes object.
        assert!(reader
            .read(&k, &seg, 0, 1 << 20, i64::MAX, true)
            .await
            .is_err());
        assert!(reader
            .read(&k, &seg, 7, 1 << 20, i64::MAX, false)
            .await
            .is_err());
        let txn = aborted_txn();
        store
            .put(
                &store.key(&k, ObjectKind::Indexes),
                Bytes::from(indexes_object(&txn)),
            )
            .await
            .unwrap();
        let r = reader
            .read(&k, &seg, 0, 1 << 20, i64::MAX, true)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[..]);
        assert_eq!(r.aborted.len(), 1);
        assert_eq!(r.aborted[0].producer_id, 5);
        // From offset 7 (in the batch based at 6, the third): from that batch on.
        let r = reader
            .read(&k, &seg, 7, 1 << 20, i64::MAX, false)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[pos[2]..]);
        assert_eq!((r.first_offset, r.next_offset), (6, 30));
        // The aborted transaction ends at 8: a read from 9 on does not carry it.
        let r = reader
            .read(&k, &seg, 9, 1 << 20, i64::MAX, true)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[pos[3]..]);
        assert!(r.aborted.is_empty());

        // Every chunk cached (written after the reads answered): the bytes come back from
        // the cache, even with the bucket emptied.
        let chunks = log.len().div_ceil(CHUNK as usize);
        wait_cached(&reader, chunks).await;
        store.delete(&store.key(&k, ObjectKind::Log)).await.unwrap();
        let (hits, _) = reader.cache().hits_and_misses();
        let r = reader
            .read(&k, &seg, 0, 1 << 20, i64::MAX, false)
            .await
            .unwrap();
        assert_eq!(&r.data[..], &log[..]);
        assert!(reader.cache().hits_and_misses().0 >= hits + chunks as u64);
    }

    /// A real segment for lookups by timestamp, based at offset 100: six batches of three
    /// records, batch `j` at offset `100 + 3j` with record times `t, t + 10, t + 5` for
    /// `t = 1000 + 30j` (batch 3 gzip-compressed), except batch 5, a `LogAppendTime` batch
    /// stamped 2000. Returns the `.log` bytes, each batch's position, and its `.indexes`
    /// object: offset index entries for batches 2 and 4, time index entries (largest time so
    /// far, the batch carrying it) for batches 0, 2 and 4.
    fn timed_segment() -> (Vec<u8>, Vec<usize>, Vec<u8>) {
        let mut log = Vec::new();
        let mut positions = Vec::new();
        for j in 0..6i64 {
            positions.push(log.len());
            let t = 1000 + 30 * j;
            let append_time = j == 5;
            let mut records = Vec::new();
            for (k, dt) in [0i64, 10, 5].into_iter().enumerate() {
                let value = [j as u8; 20];
                frieda_log::encode_record(
                    &mut records,
                    &frieda_log::RecordRef {
                        attributes: 0,
                        timestamp_delta: dt,
                        offset_delta: k as i32,
                        key: None,
                        value: Some(&value),
                        headers: &[0],
                    },
                );
            }
            let h = BatchHeader {
                base_offset: 100 + 3 * j,
                batch_length: 0,
                partition_leader_epoch: 0,
                magic: 2,
                crc: 0,
                attributes: if append_time { 0x08 } else { 0 },
                last_offset_delta: 2,
                base_timestamp: t,
                max_timestamp: if append_time { 2000 } else { t + 10 },
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                records_count: 3,
            };
            let codec = if j == 3 {
                frieda_log::Codec::Gzip
            } else {
                frieda_log::Codec::None
            };
            log.extend_from_slice(&frieda_log::build_batch(&h, codec, &records));
        }
        let mut offsets = Vec::new();
        for j in [2usize, 4] {
            offsets.extend_from_slice(&(3 * j as u32).to_be_bytes());
            offsets.extend_from_slice(&(positions[j] as u32).to_be_bytes());
        }
        let mut times = Vec::new();
        for (ts, rel) in [(1010i64, 0u32), (1070, 6), (1130, 12)] {
            times.extend_from_slice(&ts.to_be_bytes());
            times.extend_from_slice(&rel.to_be_bytes());
        }
        let mut indexes = frieda_log::INDEXES_MAGIC.to_vec();
        for len in [offsets.len(), times.len(), 0, 0, 0] {
            indexes.extend_from_slice(&(len as u32).to_be_bytes());
        }
        indexes.extend_from_slice(&offsets);
        indexes.extend_from_slice(&times);
        (log, positions, indexes)
    }

    /// Issue 57 A: the lookup by timestamp in one copy (Kafka's
    /// `RemoteLogManager.lookupTimestamp`): the first record at or after the time and at or
    /// above the starting offset, record by record inside a batch (times not in order, a gzip
    /// batch decompressed, a `LogAppendTime` batch's records all at its time), nothing past
    /// the copy's last time; MAX_TIMESTAMP finds the earliest record carrying the copy's
    /// largest time. The search starts where the time and offset indexes point: with the
    /// first batch's bytes corrupted, a lookup the index sends past it still answers, one that
    /// must read it fails (CRC).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_by_timestamp_in_a_copy_use_its_time_index_and_records() {
        let (log, positions, indexes) = timed_segment();
        let store = Arc::new(RemoteStore::in_memory());
        let k = SegmentKey {
            base_offset: 100,
            ..key()
        };
        store
            .put(&store.key(&k, ObjectKind::Log), Bytes::from(log.clone()))
            .await
            .unwrap();
        store
            .put(&store.key(&k, ObjectKind::Indexes), Bytes::from(indexes))
            .await
            .unwrap();
        let cache = ChunkCache::new(
            CacheKind::Memory,
            1 << 20,
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        let reader = RemoteReader::new(store.clone(), cache, CHUNK, 0);
        let seg = RemoteSegment {
            start_offset: 100,
            end_offset: 117,
            max_timestamp_ms: 2000,
            ..segment(log.len(), 6)
        };
        let at = |ts: i64, start: i64| {
            let (reader, k, seg) = (&reader, &k, &seg);
            async move {
                reader
                    .offset_for_timestamp(k, seg, ts, start)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(at(0, 100).await, Some((100, 1000)));
        assert_eq!(
            at(1006, 100).await,
            Some((101, 1010)),
            "102 is older (1005)"
        );
        assert_eq!(at(1011, 100).await, Some((103, 1030)));
        assert_eq!(at(1072, 100).await, Some((109, 1090)), "the gzip batch");
        assert_eq!(at(1095, 100).await, Some((110, 1100)));
        assert_eq!(at(1131, 100).await, Some((115, 2000)), "LogAppendTime");
        assert_eq!(at(2001, 100).await, None);
        assert_eq!(at(0, 104).await, Some((104, 1040)), "the starting offset");
        assert_eq!(
            reader.max_timestamp(&k, &seg, 100).await.unwrap(),
            Some((115, 2000))
        );
        let seg_b = RemoteSegment {
            max_timestamp_ms: 1130,
            ..seg.clone()
        };
        // (a copy whose largest time is batch 4's: its second record)
        assert_eq!(
            reader.max_timestamp(&k, &seg_b, 100).await.unwrap(),
            Some((113, 1130)),
        );

        // The first batch corrupted (a copy of its own id, nothing cached).
        let mut bad = log.clone();
        bad[positions[0] + 70] ^= 0xff;
        let kb = SegmentKey {
            segment_id: Uuid::from_u128(8),
            ..k
        };
        let segb = RemoteSegment {
            id: Uuid::from_u128(8),
            ..seg.clone()
        };
        store
            .put(&store.key(&kb, ObjectKind::Log), Bytes::from(bad))
            .await
            .unwrap();
        let (_, _, idx) = timed_segment();
        store
            .put(&store.key(&kb, ObjectKind::Indexes), Bytes::from(idx))
            .await
            .unwrap();
        assert_eq!(
            reader
                .offset_for_timestamp(&kb, &segb, 1072, 100)
                .await
                .unwrap(),
            Some((109, 1090)),
            "the time index (1070 at batch 2) skips the first batches"
        );
        assert!(matches!(
            reader.offset_for_timestamp(&kb, &segb, 0, 100).await,
            Err(ReadError::Corrupt(_))
        ));
    }

    /// Which copy a lookup searches (Kafka's `findOffsetByTimestamp`): the first readable one,
    /// by offset, whose largest time reaches the target and which holds offsets at or above
    /// the log start; for MAX_TIMESTAMP the first with the largest time.
    #[test]
    fn the_first_copy_reaching_the_time_is_searched() {
        use frieda_meta::remote_log::RemoteSegmentChange;
        let mut log = RemoteLog::default();
        // copies [0, 9] max 500, [10, 19] max 300, [20, 29] max 900, [30, 39] max 900
        for (i, max) in [500i64, 300, 900, 900].into_iter().enumerate() {
            let s = RemoteSegment {
                id: Uuid::from_u128(i as u128 + 1),
                start_offset: 10 * i as i64,
                end_offset: 10 * i as i64 + 9,
                max_timestamp_ms: max,
                state: RemoteSegmentState::CopyStarted,
                ..segment(100, 1)
            };
            log.apply(&RemoteSegmentChange::CopyStarted(s.clone()), 0, 0)
                .unwrap();
            log.apply(&RemoteSegmentChange::CopyFinished(s.id), 0, 0)
                .unwrap();
        }
        let start =
            |ts, log_start| segment_for_timestamp(&log, ts, log_start).map(|s| s.start_offset);
        assert_eq!(start(0, 0), Some(0));
        assert_eq!(start(400, 0), Some(0));
        assert_eq!(
            start(501, 0),
            Some(20),
            "the second copy's times are all earlier"
        );
        assert_eq!(start(400, 10), Some(20), "below the log start");
        assert_eq!(start(901, 0), None);
        let max = |log_start| segment_for_max_timestamp(&log, log_start).map(|s| s.start_offset);
        assert_eq!(max(0), Some(20), "the first of the two with 900");
        assert_eq!(max(35), Some(30));
        assert_eq!(max(40), None);
    }

    /// The parsed `.indexes` kept are bounded: beyond [`MAX_CACHED_INDEXES`] the one cached
    /// first goes, the others stay (they used to be dropped all at once).
    #[tokio::test]
    async fn cached_indexes_are_bounded_dropping_the_oldest() {
        let store = Arc::new(RemoteStore::in_memory());
        let cache = ChunkCache::new(
            CacheKind::Memory,
            1 << 20,
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        let reader = RemoteReader::new(store.clone(), cache, CHUNK, 0);
        let txn = aborted_txn();
        let ids: Vec<Uuid> = (0..=MAX_CACHED_INDEXES as u128)
            .map(Uuid::from_u128)
            .collect();
        for &id in &ids {
            let k = SegmentKey {
                segment_id: id,
                ..key()
            };
            store
                .put(
                    &store.key(&k, ObjectKind::Indexes),
                    Bytes::from(indexes_object(&txn)),
                )
                .await
                .unwrap();
            assert_eq!(reader.indexes(&k).await.unwrap().aborted.len(), 1);
        }
        let (map, order) = &*reader.indexes.lock();
        assert_eq!(
            (map.len(), order.len()),
            (MAX_CACHED_INDEXES, MAX_CACHED_INDEXES)
        );
        assert!(!map.contains_key(&ids[0]));
        assert!(map.contains_key(&ids[1]) && map.contains_key(&ids[MAX_CACHED_INDEXES]));
    }
}
