//! The bytes of diskless objects, as reads need them (docs/diskless.md, "The read path"):
//! through the fetch cache, blocks of `diskless.fetch.cache.block.bytes` of the shared and
//! compacted objects kept in the broker's memory by `(object id, block index)`, so the
//! partitions of one object that one broker serves (a consumer's fetch of several partitions,
//! the consumers of several groups) cost one GET per block, not one per partition read. The
//! cache is tiered storage's chunk cache ([`ChunkCache`], memory kind); a block is GET once
//! however many reads want it at the same time (single flight), and kept
//! [`BLOCK_LIFESPAN`] at most, as Inkless's `consume.cache.*` (per broker, in memory, 16 MiB
//! blocks, 60 s). A broker caches the objects it uploads as well, so the tail reads it serves
//! need no GET. Objects never change once written (a new UUIDv7 key per upload and per
//! compaction), so a cached block is never stale; a block of an object deleted since stays
//! until evicted and is only read by a reader holding its coordinates.
//!
//! Compaction reads around the cache ([`get_spans`]): it reads each object once, and its
//! blocks would push out the tail readers'.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError as E;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::diskless::coordinator::{Coordinate, ObjectId};
use crate::remote::chunk_cache::{chunks_of, CacheKind, ChunkCache};
use crate::remote::store::RemoteStore;

/// How long a block stays cached at most (Inkless's `consume.cache.expiration.lifespan.sec`
/// default, 60 s): a tail read needs a block within seconds of its upload.
pub const BLOCK_LIFESPAN: Duration = Duration::from_secs(60);

/// Per object, the first byte fetched and the bytes from there.
pub type Spans = HashMap<ObjectId, (u32, Bytes)>;

/// Why a block could not be read (shared by the reads waiting for one GET).
#[derive(Debug, Clone)]
enum BlockError {
    /// The object is gone (deleted after the coordinates were found).
    Gone,
    /// The bucket failed; the message.
    Failed(Arc<str>),
}

/// One GET of a block under way, and its outcome once it ends.
type Flight = Arc<OnceCell<Result<Bytes, BlockError>>>;

/// Reads byte ranges of diskless objects for fetches (through the fetch cache when it has
/// bytes).
pub struct ObjectReader {
    store: Arc<RemoteStore>,
    /// `None`: `diskless.fetch.cache.max.bytes` is 0, each read GETs its own ranges.
    cache: Option<ChunkCache>,
    /// Bytes per block (`diskless.fetch.cache.block.bytes`).
    block_bytes: u64,
    /// GETs under way by `(object, block)`. Bound: one entry per GET under way, taken out by the
    /// first read it answers, so at most the reads under way at once (each fetch reads its
    /// partitions one after another).
    in_flight: Mutex<HashMap<(ObjectId, u64), Flight>>,
    /// GETs of blocks so far.
    gets: AtomicU64,
}

impl ObjectReader {
    /// A reader of `store` caching at most `cache_max_bytes` (0: no cache) in blocks of
    /// `block_bytes` (at least 1).
    pub fn new(store: Arc<RemoteStore>, cache_max_bytes: u64, block_bytes: u64) -> ObjectReader {
        // (the memory kind creates no file: it does not fail)
        let cache = (cache_max_bytes > 0)
            .then(|| ChunkCache::new(CacheKind::Memory, cache_max_bytes, BLOCK_LIFESPAN).ok())
            .flatten();
        ObjectReader {
            store,
            cache,
            block_bytes: block_bytes.max(1),
            in_flight: Mutex::new(HashMap::new()),
            gets: AtomicU64::new(0),
        }
    }

    /// The bucket.
    pub fn store(&self) -> &Arc<RemoteStore> {
        &self.store
    }

    /// `(hits, misses, GETs)` of the fetch cache's blocks since the broker started (a miss
    /// that finds the block's GET under way waits for it: no GET of its own); zeros without a
    /// cache.
    pub fn cache_counts(&self) -> (u64, u64, u64) {
        let (hits, misses) = self
            .cache
            .as_ref()
            .map_or((0, 0), ChunkCache::hits_and_misses);
        (hits, misses, self.gets.load(Ordering::Relaxed))
    }

    /// Caches the blocks of `object`, just uploaded by this broker with `body` (slices of it,
    /// no copy): the tail readers this broker serves are mostly of the partitions it takes
    /// produces for (Metadata sends a partition's producers and consumers of one rack, or
    /// without a rack all of them, to one broker), so they find what it uploaded without a GET.
    pub fn cache_uploaded(&self, object: ObjectId, body: &Bytes) {
        let Some(cache) = &self.cache else {
            return;
        };
        cache.put(object.0, 0, chunks_of(body, self.block_bytes as usize));
    }

    /// The bytes of `coordinates`, per object the span from its first to its last byte needed:
    /// through the cache, the blocks covering the span (the missing ones GET at once), else one
    /// ranged GET per object. `None` when an object is gone (deleted after the coordinates were
    /// found: ask again).
    ///
    /// Errors: KAFKA_STORAGE_ERROR (56) when the bucket fails.
    pub async fn get_spans<'a>(
        &self,
        coordinates: impl Iterator<Item = &'a Coordinate>,
    ) -> Result<Option<Spans>, E> {
        let Some(cache) = &self.cache else {
            return get_spans(&self.store, coordinates).await;
        };
        let mut got = Spans::new();
        for (object, (start, end)) in spans_of(coordinates) {
            match self.span(cache, object, start, end).await? {
                Some(bytes) => got.insert(object, (start, bytes)),
                None => return Ok(None),
            };
        }
        Ok(Some(got))
    }

    /// Bytes `[start, end)` of `object` from its blocks (a slice of one block when the span
    /// lies in one, else the blocks' pieces joined); shorter when the object is.
    async fn span(
        &self,
        cache: &ChunkCache,
        object: ObjectId,
        start: u32,
        end: u32,
    ) -> Result<Option<Bytes>, E> {
        let bs = self.block_bytes;
        let (start, end) = (u64::from(start), u64::from(end));
        if end <= start {
            return Ok(Some(Bytes::new()));
        }
        let (first, last) = (start / bs, (end - 1) / bs);
        let blocks =
            futures::future::join_all((first..=last).map(|i| self.block(cache, object, i))).await;
        let mut parts = Vec::with_capacity(blocks.len());
        for b in blocks {
            match b {
                Ok(b) => parts.push(b),
                Err(BlockError::Gone) => return Ok(None),
                Err(BlockError::Failed(e)) => {
                    tracing::warn!(object = %object.0, error = %e, "reading a diskless object failed");
                    return Err(E::KafkaStorageError);
                }
            }
        }
        let from = (start - first * bs) as usize;
        let len = (end - start) as usize;
        if let [one] = parts.as_slice() {
            let from = from.min(one.len());
            return Ok(Some(one.slice(from..(from + len).min(one.len()))));
        }
        let mut out = BytesMut::with_capacity(len);
        let mut skip = from;
        for p in &parts {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            let take = (len - out.len()).min(p.len() - skip);
            out.extend_from_slice(&p[skip..skip + take]);
            skip = 0;
        }
        Ok(Some(out.freeze()))
    }

    /// Block `index` of `object`: cached, or GET (once for all the reads wanting it meanwhile)
    /// and cached.
    async fn block(
        &self,
        cache: &ChunkCache,
        object: ObjectId,
        index: u64,
    ) -> Result<Bytes, BlockError> {
        if let Some(b) = cache.get(object.0, index) {
            return Ok(b);
        }
        let flight = self
            .in_flight
            .lock()
            .entry((object, index))
            .or_default()
            .clone();
        let got = flight
            .get_or_init(|| async {
                self.gets.fetch_add(1, Ordering::Relaxed);
                let key = self.store.wal_key(object.0);
                let at = index * self.block_bytes;
                match self.store.get_range(&key, at, self.block_bytes).await {
                    Ok(bytes) => {
                        cache.put(object.0, index, vec![bytes.clone()]);
                        Ok(bytes)
                    }
                    Err(object_store::Error::NotFound { .. }) => Err(BlockError::Gone),
                    Err(e) => Err(BlockError::Failed(e.to_string().into())),
                }
            })
            .await
            .clone();
        let mut in_flight = self.in_flight.lock();
        if in_flight
            .get(&(object, index))
            .is_some_and(|f| Arc::ptr_eq(f, &flight))
        {
            in_flight.remove(&(object, index));
        }
        got
    }
}

/// Per object, the byte span `[first, end)` covering what `coordinates` name of it.
fn spans_of<'a>(
    coordinates: impl Iterator<Item = &'a Coordinate>,
) -> HashMap<ObjectId, (u32, u32)> {
    let mut spans: HashMap<ObjectId, (u32, u32)> = HashMap::new();
    for c in coordinates {
        let Some((object, byte_offset, byte_len)) = c.object_range() else {
            continue;
        };
        let stop = byte_offset + byte_len;
        spans
            .entry(object)
            .and_modify(|(s, e)| {
                *s = (*s).min(byte_offset);
                *e = (*e).max(stop);
            })
            .or_insert((byte_offset, stop));
    }
    spans
}

/// GETs the bytes of `coordinates` from the bucket, around the cache: one ranged GET per
/// object, the span from its first to its last byte needed (compaction's reads). `None` when
/// an object is gone (deleted after the coordinates were found: ask again).
///
/// Errors: KAFKA_STORAGE_ERROR (56) when the bucket fails.
pub async fn get_spans<'a>(
    store: &RemoteStore,
    coordinates: impl Iterator<Item = &'a Coordinate>,
) -> Result<Option<Spans>, E> {
    let mut got = Spans::new();
    for (object, (start, end)) in spans_of(coordinates) {
        let key = store.wal_key(object.0);
        match store
            .get_range(&key, u64::from(start), u64::from(end - start))
            .await
        {
            Ok(bytes) => {
                got.insert(object, (start, bytes));
            }
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => {
                tracing::warn!(object = %object.0, error = %e, "reading a diskless object failed");
                return Err(E::KafkaStorageError);
            }
        }
    }
    Ok(Some(got))
}

/// The bytes `len` long at byte `at` of `object`, from what [`get_spans`] or
/// [`ObjectReader::get_spans`] fetched.
pub fn range_of(got: &Spans, object: ObjectId, at: u32, len: u32) -> Option<Bytes> {
    let (start, bytes) = got.get(&object)?;
    let from = at.checked_sub(*start)? as usize;
    (from + len as usize <= bytes.len()).then(|| bytes.slice(from..from + len as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskless::coordinator::Location;

    fn coordinate(object: ObjectId, byte_offset: u32, byte_len: u32) -> Coordinate {
        Coordinate {
            location: Location::Object {
                object,
                byte_offset,
                byte_len,
            },
            base_offset: 0,
            last_offset: 0,
            max_timestamp: 0,
        }
    }

    async fn stored(store: &RemoteStore, len: usize) -> (ObjectId, Bytes) {
        let object = ObjectId::v7(1_765_000_000_000, rand::random());
        let data: Bytes = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        store
            .put(&store.wal_key(object.0), data.clone())
            .await
            .unwrap();
        (object, data)
    }

    #[tokio::test]
    async fn spans_come_from_cached_blocks_each_got_once() {
        let store = Arc::new(RemoteStore::in_memory());
        let (a, data) = stored(&store, 10_000).await;
        let reader = ObjectReader::new(store.clone(), 1 << 20, 4096);
        // a span inside one block, then one across two, then the whole object
        for (from, to, gets) in [
            (10, 20, 1),
            (4000, 4200, 2),
            (0, 10_000, 3),
            (9000, 10_000, 3),
        ] {
            let got = reader
                .get_spans([coordinate(a, from, to - from)].iter())
                .await
                .unwrap()
                .unwrap();
            let (start, bytes) = &got[&a];
            assert_eq!(*start, from);
            assert_eq!(bytes, &data[from as usize..to as usize], "{from}..{to}");
            assert_eq!(range_of(&got, a, from, to - from).as_ref(), Some(bytes));
            assert_eq!(reader.cache_counts().2, gets, "GETs after {from}..{to}");
        }
        assert_eq!(reader.cache_counts(), (4, 3, 3));

        // Reads of a block nobody has yet, all at once: one GET.
        let (b, data) = stored(&store, 3000).await;
        let c = [coordinate(b, 100, 900)];
        let reads = futures::future::join_all((0..8).map(|_| reader.get_spans(c.iter()))).await;
        for r in reads {
            assert_eq!(r.unwrap().unwrap()[&b].1, &data[100..1000]);
        }
        assert_eq!(reader.cache_counts().2, 4);
        assert!(reader.in_flight.lock().is_empty());
    }

    #[tokio::test]
    async fn an_uploaded_object_is_read_without_a_get() {
        let store = Arc::new(RemoteStore::in_memory());
        let (a, data) = stored(&store, 10_000).await;
        let reader = ObjectReader::new(store.clone(), 1 << 20, 4096);
        reader.cache_uploaded(a, &data);
        let c = [coordinate(a, 4000, 6000)];
        let got = reader.get_spans(c.iter()).await.unwrap().unwrap();
        assert_eq!(got[&a].1, &data[4000..]);
        assert_eq!(reader.cache_counts(), (3, 0, 0));
        // without a cache, nothing is kept
        let none = ObjectReader::new(store, 0, 4096);
        none.cache_uploaded(a, &data);
        assert_eq!(none.cache_counts(), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_gone_object_asks_again_and_no_cache_gets_ranges() {
        let store = Arc::new(RemoteStore::in_memory());
        let (a, data) = stored(&store, 5000).await;
        let gone = ObjectId::v7(1_765_000_000_000, rand::random());
        for cache in [1 << 20, 0] {
            let reader = ObjectReader::new(store.clone(), cache, 4096);
            let both = [coordinate(a, 0, 5000), coordinate(gone, 0, 10)];
            assert!(reader.get_spans(both.iter()).await.unwrap().is_none());
            let got = reader.get_spans(both[..1].iter()).await.unwrap().unwrap();
            assert_eq!(got[&a].1, data);
            // spans of two coordinates of one object cover both
            let two = [coordinate(a, 4000, 100), coordinate(a, 10, 20)];
            let got = reader.get_spans(two.iter()).await.unwrap().unwrap();
            assert_eq!(got[&a], (10, data.slice(10..4100)));
        }
    }
}
