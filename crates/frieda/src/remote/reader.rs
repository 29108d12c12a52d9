//! Reads from the remote tier (docs/tiered-storage.md, "Reading from the bucket"): a fetch
//! below a tiered partition's local log start is served from the copied segment holding its
//! offset, chunk by chunk (`rsm.config.chunk.size`) through a bounded chunk cache on local disk
//! with read-ahead after a miss (HuronFS's burst buffer; Aiven's `DiskChunkCache` settings).
//! Runs on the remote-log runtime; the fetch waits for it at most
//! `remote.fetch.max.wait.ms`, so a slow object store delays only these fetches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use frieda_log::{AbortedTxn, RemoteIndexes};
use frieda_meta::remote_log::RemoteSegment;
use parking_lot::Mutex;
use uuid::Uuid;

use super::store::{ObjectKind, RemoteStore, SegmentKey};

/// Parsed `.indexes` objects kept in memory, by segment id (each a few KiB).
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
    /// The chunk cache's directory failed.
    #[error("chunk cache: {0}")]
    Cache(#[from] std::io::Error),
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

/// A chunk cache on local disk: chunks of segments' `.log` objects as files, evicted least
/// recently used beyond a byte bound.
pub struct ChunkCache {
    dir: PathBuf,
    limit: u64,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    /// (segment id, chunk index) -> (bytes, last use tick).
    entries: HashMap<(Uuid, u64), (u64, u64)>,
    bytes: u64,
    tick: u64,
    hits: u64,
    misses: u64,
}

impl ChunkCache {
    /// A cache in `dir` (emptied: chunks of a previous run are not trusted) holding at most
    /// `limit` bytes.
    ///
    /// Errors: the directory cannot be made.
    pub fn new(dir: PathBuf, limit: u64) -> std::io::Result<ChunkCache> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(ChunkCache {
            dir,
            limit,
            state: Mutex::new(CacheState::default()),
        })
    }

    fn path(&self, id: Uuid, chunk: u64) -> PathBuf {
        self.dir.join(format!("{}-{chunk}", id.simple()))
    }

    /// The cached chunk, if any.
    fn get(&self, id: Uuid, chunk: u64) -> Option<Bytes> {
        {
            let mut st = self.state.lock();
            st.tick += 1;
            let tick = st.tick;
            match st.entries.get_mut(&(id, chunk)) {
                Some(e) => e.1 = tick,
                None => {
                    st.misses += 1;
                    super::READS.cache_misses.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
            st.hits += 1;
        }
        super::READS.cache_hits.fetch_add(1, Ordering::Relaxed);
        std::fs::read(self.path(id, chunk)).ok().map(Bytes::from)
    }

    /// Stores a chunk, evicting the least recently used beyond the bound.
    fn put(&self, id: Uuid, chunk: u64, data: &[u8]) -> std::io::Result<()> {
        std::fs::write(self.path(id, chunk), data)?;
        let mut evict = Vec::new();
        {
            let mut st = self.state.lock();
            st.tick += 1;
            let tick = st.tick;
            if let Some((old, _)) = st.entries.insert((id, chunk), (data.len() as u64, tick)) {
                st.bytes -= old;
            }
            st.bytes += data.len() as u64;
            while st.bytes > self.limit && st.entries.len() > 1 {
                let Some((&k, &(size, _))) = st.entries.iter().min_by_key(|(_, (_, t))| *t) else {
                    break;
                };
                st.entries.remove(&k);
                st.bytes -= size;
                evict.push(k);
            }
        }
        for (id, chunk) in evict {
            let _ = std::fs::remove_file(self.path(id, chunk));
        }
        Ok(())
    }

    /// (hits, misses) so far.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.hits, st.misses)
    }
}

/// Reads from the bucket through the chunk cache.
pub struct RemoteReader {
    store: Arc<RemoteStore>,
    cache: ChunkCache,
    chunk_size: u64,
    /// Chunks fetched after the missed one in the same GET (`fetch.chunk.cache.prefetch.max.size`
    /// / `chunk.size`).
    prefetch_chunks: u64,
    indexes: Mutex<HashMap<Uuid, Arc<RemoteIndexes>>>,
}

impl RemoteReader {
    /// A reader of `store` with a chunk cache in `cache_dir` of `cache_bytes`.
    ///
    /// Errors: the cache directory cannot be made.
    pub fn new(
        store: Arc<RemoteStore>,
        cache_dir: PathBuf,
        cache_bytes: u64,
        chunk_size: u64,
        prefetch_bytes: u64,
    ) -> std::io::Result<RemoteReader> {
        Ok(RemoteReader {
            store,
            cache: ChunkCache::new(cache_dir, cache_bytes)?,
            chunk_size: chunk_size.max(1),
            prefetch_chunks: prefetch_bytes / chunk_size.max(1),
            indexes: Mutex::new(HashMap::new()),
        })
    }

    /// The chunk cache.
    pub fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    async fn indexes(&self, key: &SegmentKey<'_>) -> Result<Arc<RemoteIndexes>, ReadError> {
        if let Some(i) = self.indexes.lock().get(&key.segment_id) {
            return Ok(i.clone());
        }
        let mut parsed = self.fetch_indexes(key).await?;
        // Reads need no producer snapshot: the cache does not keep it.
        parsed.producer_snapshot = Vec::new();
        let parsed = Arc::new(parsed);
        let mut map = self.indexes.lock();
        if map.len() >= MAX_CACHED_INDEXES {
            map.clear();
        }
        map.insert(key.segment_id, parsed.clone());
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
    /// (with read-ahead).
    async fn chunk(&self, key: &SegmentKey<'_>, size: u64, chunk: u64) -> Result<Bytes, ReadError> {
        if let Some(b) = self.cache.get(key.segment_id, chunk) {
            return Ok(b);
        }
        let cs = self.chunk_size;
        let start = chunk * cs;
        let end = ((chunk + 1 + self.prefetch_chunks) * cs).min(size);
        let data = self
            .store
            .get_range(&self.store.key(key, ObjectKind::Log), start, end - start)
            .await?;
        let mut first = None;
        for (i, part) in data.chunks(cs as usize).enumerate() {
            let idx = chunk + i as u64;
            self.cache.put(key.segment_id, idx, part)?;
            if i == 0 {
                first = Some(Bytes::copy_from_slice(part));
            }
        }
        first
            .ok_or_else(|| ReadError::Corrupt(format!("empty range of segment {}", key.segment_id)))
    }

    /// `len` bytes of the segment's `.log` from `pos` (fewer at its end). `memo` holds the
    /// chunk the previous call of the same read ended in, so one read takes each chunk from the
    /// cache (a whole file) once, not once per batch header and batch.
    async fn bytes(
        &self,
        key: &SegmentKey<'_>,
        size: u64,
        pos: u64,
        len: u64,
        memo: &mut Option<(u64, Bytes)>,
    ) -> Result<Bytes, ReadError> {
        let end = (pos + len).min(size);
        let mut out = BytesMut::with_capacity((end.saturating_sub(pos)) as usize);
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
            out.extend_from_slice(&data[from..from + take]);
            at += take as u64;
        }
        Ok(out.freeze())
    }

    /// Reads `segment` (of the partition in `key`) from the batch holding `offset`: whole
    /// batches, at least one, then more while they fit in `max_bytes` and start below
    /// `upper` (exclusive).
    ///
    /// Errors: [`ReadError`].
    pub async fn read(
        &self,
        key: &SegmentKey<'_>,
        segment: &RemoteSegment,
        offset: i64,
        max_bytes: usize,
        upper: i64,
    ) -> Result<RemoteRead, ReadError> {
        const HEADER: u64 = 61;
        let size = segment.size_bytes;
        let mut memo = None;
        let indexes = if offset <= segment.start_offset && size > 0 {
            // From the segment's first byte (a reader going on from the segment before): no
            // position to look up, so its first chunk and its indexes (for the aborted
            // transactions) are fetched together, one round trip to the bucket instead of two.
            let (indexes, first) = tokio::join!(self.indexes(key), self.chunk(key, size, 0));
            memo = Some((0, first?));
            indexes?
        } else {
            self.indexes(key).await?
        };
        let mut pos = indexes.position_for(segment.start_offset, offset);
        let mut out = BytesMut::new();
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
            if last < offset {
                pos += total;
                continue;
            }
            if base >= upper || (!out.is_empty() && out.len() + total as usize > max_bytes) {
                break;
            }
            out.extend_from_slice(&self.bytes(key, size, pos, total, &mut memo).await?);
            if first_offset < 0 {
                first_offset = base;
            }
            next_offset = last + 1;
            pos += total;
            if out.len() >= max_bytes {
                break;
            }
        }
        let aborted = indexes
            .aborted
            .iter()
            .filter(|a| a.last_offset >= offset && a.first_offset < next_offset)
            .cloned()
            .collect();
        Ok(RemoteRead {
            data: out.freeze(),
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
