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
//! **Object affinity** (`diskless.fetch.cache.affinity.enable`): the brokers of a rack share
//! their caches. Each object has one owner among the rack's live brokers, the one with the
//! highest rendezvous score (xxHash64 of the object id, seeded with the broker id; Thaler and
//! Ravishankar's highest random weight), the same on every broker that sees the same brokers. A
//! read missing a block asks the owner for it (a `Block` request in an Envelope,
//! [`crate::diskless::wire`]); the owner answers from its cache or GETs it once for the rack, and
//! never asks further. So an object is read from the bucket about once per rack (once more by
//! its uploader, which cached it when it uploaded), not once per broker serving its partitions.
//! An owner that does not answer within [`PEER_TIMEOUT`] is passed over for [`PEER_BACKOFF`]
//! (the next score owns its objects meanwhile) and the read GETs the block itself.
//!
//! Compaction reads around the cache ([`get_spans`]): it reads each object once, and its
//! blocks would push out the tail readers'.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError as E;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use super::route::CoordinatorLink;
use crate::diskless::coordinator::{Coordinate, ObjectId};
use crate::diskless::wire::{self, Answer, Call, CoordinatorRequest};
use crate::remote::chunk_cache::{chunks_of, CacheKind, ChunkCache};
use crate::remote::store::RemoteStore;

/// How long a block stays cached at most (Inkless's `consume.cache.expiration.lifespan.sec`
/// default, 60 s): a tail read needs a block within seconds of its upload.
pub const BLOCK_LIFESPAN: Duration = Duration::from_secs(60);

/// How long a read waits for the object's owner in the rack to answer a block before it GETs
/// the block itself (the owner's own GET of a 4 MiB block takes tens to hundreds of ms).
pub const PEER_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an owner that did not answer a block is passed over, so a paused or dead broker
/// costs the reads one [`PEER_TIMEOUT`] until the metadata fences it, not one each.
pub const PEER_BACKOFF: Duration = Duration::from_secs(10);

/// The block sizes another broker may ask for (bytes; `diskless.fetch.cache.block.bytes` is at
/// most 1 GiB).
const BLOCK_BYTES_RANGE: std::ops::RangeInclusive<u64> = 1..=(1 << 30);

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

/// Counters of the rack's cache sharing since the broker started (`/metrics`:
/// `frieda_diskless_fetch_cache_peer_*`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PeerCounts {
    /// Blocks this broker got from their owner in its rack (no GET of its own).
    pub reads: u64,
    /// Blocks asked of an owner that did not answer them (down, paused, refused, or the
    /// bucket failed it there); this broker GETs them itself.
    pub fallbacks: u64,
    /// Blocks this broker served to others of its rack, as their owner.
    pub served: u64,
}

/// The rack's brokers for object affinity, and who passed over until when.
struct Peers {
    link: Arc<dyn CoordinatorLink>,
    /// Brokers that did not answer a block, passed over until the instant. Bound: one entry
    /// per broker of the cluster (a broker's entry is replaced, never added twice).
    passed_over: Mutex<HashMap<i32, Instant>>,
}

/// Reads byte ranges of diskless objects for fetches (through the fetch cache when it has
/// bytes).
pub struct ObjectReader {
    store: Arc<RemoteStore>,
    /// `None`: `diskless.fetch.cache.max.bytes` is 0, each read GETs its own ranges.
    cache: Option<ChunkCache>,
    /// Bytes per block (`diskless.fetch.cache.block.bytes`).
    block_bytes: u64,
    /// `None`: no object affinity (`diskless.fetch.cache.affinity.enable=false`, no cache, or
    /// a broker outside a cluster).
    peers: Option<Peers>,
    /// GETs (or asks of the owner, `true`) under way by `(object, block, asks the owner)`.
    /// Bound: one entry per flight under way, taken out by the first read it answers, so at
    /// most the reads under way at once (each fetch reads its partitions one after another)
    /// plus the blocks other brokers ask for meanwhile. A block served to another broker never
    /// joins a flight that asks the owner (two brokers disagreeing on the owner would wait on
    /// each other).
    in_flight: Mutex<HashMap<(ObjectId, u64, bool), Flight>>,
    /// GETs of blocks so far.
    gets: AtomicU64,
    peer_reads: AtomicU64,
    peer_fallbacks: AtomicU64,
    peer_served: AtomicU64,
}

/// Object `object`'s rendezvous score at broker `broker` (the highest owns it).
fn score(object: ObjectId, broker: i32) -> u64 {
    twox_hash::XxHash64::oneshot(u64::from(broker as u32), object.0.as_bytes())
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
            peers: None,
            in_flight: Mutex::new(HashMap::new()),
            gets: AtomicU64::new(0),
            peer_reads: AtomicU64::new(0),
            peer_fallbacks: AtomicU64::new(0),
            peer_served: AtomicU64::new(0),
        }
    }

    /// The reader sharing its cache with the brokers of its rack through `link` (object
    /// affinity); without a cache it has nothing to share and stays as it is.
    pub fn with_peers(mut self, link: Arc<dyn CoordinatorLink>) -> ObjectReader {
        if self.cache.is_some() {
            self.peers = Some(Peers {
                link,
                passed_over: Mutex::new(HashMap::new()),
            });
        }
        self
    }

    /// What the rack's cache sharing did since the broker started.
    pub fn peer_counts(&self) -> PeerCounts {
        PeerCounts {
            reads: self.peer_reads.load(Ordering::Relaxed),
            fallbacks: self.peer_fallbacks.load(Ordering::Relaxed),
            served: self.peer_served.load(Ordering::Relaxed),
        }
    }

    /// The broker of this rack that reads `object` from the bucket, when it is another one
    /// (`None`: this broker, or no affinity): the highest rendezvous score among the rack's
    /// live brokers, those passed over left out.
    fn owner(&self, object: ObjectId) -> Option<i32> {
        let peers = self.peers.as_ref()?;
        let me = peers.link.me();
        let now = Instant::now();
        let mut passed_over = peers.passed_over.lock();
        passed_over.retain(|_, until| *until > now);
        peers
            .link
            .rack_peers()
            .into_iter()
            .filter(|b| *b == me || !passed_over.contains_key(b))
            .max_by_key(|b| (score(object, *b), *b))
            .filter(|b| *b != me)
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
            futures::future::join_all((first..=last).map(|i| self.block(cache, object, i, true)))
                .await;
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

    /// Block `index` of `object`: cached, else (`ask_owner`) from its owner in the rack when
    /// that is another broker, else GET; once for all the reads wanting it meanwhile, and
    /// cached.
    async fn block(
        &self,
        cache: &ChunkCache,
        object: ObjectId,
        index: u64,
        ask_owner: bool,
    ) -> Result<Bytes, BlockError> {
        if let Some(b) = cache.get(object.0, index) {
            return Ok(b);
        }
        let owner = if ask_owner { self.owner(object) } else { None };
        let key = (object, index, owner.is_some());
        let flight = self.in_flight.lock().entry(key).or_default().clone();
        let got = flight
            .get_or_init(|| async {
                let from_owner = match owner {
                    Some(owner) => self.ask_owner(owner, object, index).await,
                    None => None,
                };
                let got = match from_owner {
                    Some(got) => got,
                    None => {
                        self.get(object, index * self.block_bytes, self.block_bytes)
                            .await
                    }
                };
                if let Ok(bytes) = &got {
                    cache.put(object.0, index, vec![bytes.clone()]);
                }
                got
            })
            .await
            .clone();
        let mut in_flight = self.in_flight.lock();
        if in_flight.get(&key).is_some_and(|f| Arc::ptr_eq(f, &flight)) {
            in_flight.remove(&key);
        }
        got
    }

    /// One GET of `len` bytes at byte `at` of `object` (fewer at its end).
    async fn get(&self, object: ObjectId, at: u64, len: u64) -> Result<Bytes, BlockError> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        get_range(&self.store, object, at, len).await
    }

    /// Block `index` of `object` from broker `owner`; `None` when it did not give it (then
    /// this broker GETs it): unreachable, no answer within [`PEER_TIMEOUT`] or refused (it is
    /// passed over for [`PEER_BACKOFF`]), or the bucket failed it there.
    async fn ask_owner(
        &self,
        owner: i32,
        object: ObjectId,
        index: u64,
    ) -> Option<Result<Bytes, BlockError>> {
        let peers = self.peers.as_ref()?;
        let call = Call::Block {
            object,
            index,
            block_bytes: self.block_bytes,
        };
        let request = wire::encode_request(&CoordinatorRequest {
            index: -1,
            call: call.clone(),
        });
        let answer = match peers.link.call(owner, request, PEER_TIMEOUT).await {
            Ok(bytes) => wire::decode_response(&call, &bytes)
                .map_err(|e| std::io::Error::other(format!("the answer does not decode: {e}"))),
            Err(e) => Err(e),
        };
        match answer {
            Ok(Ok(Answer::Block(Some(bytes)))) if bytes.len() as u64 <= self.block_bytes => {
                self.peer_reads.fetch_add(1, Ordering::Relaxed);
                return Some(Ok(bytes));
            }
            Ok(Ok(Answer::Block(None))) => return Some(Err(BlockError::Gone)),
            Ok(Ok(_)) => tracing::warn!(owner, object = %object.0, index,
                "a broker answered a block with something else; reading it from the bucket"),
            // the owner is there but could not read it (the bucket failing): not passed over
            Ok(Err(e)) => tracing::debug!(owner, object = %object.0, index, error = ?e,
                "the object's owner in the rack could not read a block; reading it from the bucket"),
            Err(e) => {
                tracing::info!(owner, object = %object.0, error = %e,
                    pass_over_ms = PEER_BACKOFF.as_millis() as u64,
                    "the object's owner in the rack did not answer a block; reading it from the bucket, and passing the broker over");
                peers
                    .passed_over
                    .lock()
                    .insert(owner, Instant::now() + PEER_BACKOFF);
            }
        }
        self.peer_fallbacks.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Block `index` (`block_bytes` long) of `object` for a broker of this rack that takes this
    /// one for the object's owner: from the cache, or one GET (kept when the block size is this
    /// broker's); never asked of a further broker. `None`: the object is gone.
    ///
    /// Errors: INVALID_REQUEST (42) for a block size of 0 or above 1 GiB, or a block past
    /// 2^64 bytes; KAFKA_STORAGE_ERROR (56) when the bucket fails.
    pub async fn serve_block(
        &self,
        object: ObjectId,
        index: u64,
        block_bytes: u64,
    ) -> Result<Option<Bytes>, E> {
        if !BLOCK_BYTES_RANGE.contains(&block_bytes) {
            return Err(E::InvalidRequest);
        }
        let at = index.checked_mul(block_bytes).ok_or(E::InvalidRequest)?;
        self.peer_served.fetch_add(1, Ordering::Relaxed);
        let got = match &self.cache {
            Some(cache) if block_bytes == self.block_bytes => {
                self.block(cache, object, index, false).await
            }
            _ => self.get(object, at, block_bytes).await,
        };
        match got {
            Ok(bytes) => Ok(Some(bytes)),
            Err(BlockError::Gone) => Ok(None),
            Err(BlockError::Failed(e)) => {
                tracing::warn!(object = %object.0, error = %e,
                    "reading a diskless object for another broker failed");
                Err(E::KafkaStorageError)
            }
        }
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
        match get_range(store, object, u64::from(start), u64::from(end - start)).await {
            Ok(bytes) => {
                got.insert(object, (start, bytes));
            }
            Err(BlockError::Gone) => return Ok(None),
            Err(BlockError::Failed(e)) => {
                tracing::warn!(object = %object.0, error = %e, "reading a diskless object failed");
                return Err(E::KafkaStorageError);
            }
        }
    }
    Ok(Some(got))
}

/// One ranged GET of `len` bytes at byte `at` of `object` (fewer at its end); a 404 is
/// [`BlockError::Gone`].
async fn get_range(
    store: &RemoteStore,
    object: ObjectId,
    at: u64,
    len: u64,
) -> Result<Bytes, BlockError> {
    match store.get_range(&store.wal_key(object.0), at, len).await {
        Ok(bytes) => Ok(bytes),
        Err(object_store::Error::NotFound { .. }) => Err(BlockError::Gone),
        Err(e) => Err(BlockError::Failed(e.to_string().into())),
    }
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

    /// Brokers of one rack in process: a block request goes through the wire encoding to the
    /// owner's `serve_block`, as the Envelope handler sends it; brokers in `down` do not answer.
    struct Rack {
        me: i32,
        readers: Arc<Mutex<HashMap<i32, Arc<ObjectReader>>>>,
        down: Brokers,
        calls: Brokers,
    }

    impl CoordinatorLink for Rack {
        fn leader_of(&self, _index: i32) -> Option<i32> {
            None
        }

        fn me(&self) -> i32 {
            self.me
        }

        fn rack_peers(&self) -> Vec<i32> {
            self.readers.lock().keys().copied().collect()
        }

        fn call(
            &self,
            to: i32,
            request: Vec<u8>,
            _timeout: Duration,
        ) -> super::super::route::Reply {
            self.calls.lock().push(to);
            let down = self.down.lock().contains(&to);
            let reader = self.readers.lock().get(&to).cloned();
            Box::pin(async move {
                if down {
                    return Err(std::io::Error::other("broker down"));
                }
                let reader = reader.ok_or_else(|| std::io::Error::other("no such broker"))?;
                let CoordinatorRequest { index, call } = wire::decode_request(&request).unwrap();
                assert_eq!(index, -1);
                let Call::Block {
                    object,
                    index,
                    block_bytes,
                } = call
                else {
                    panic!("not a block request: {call:?}");
                };
                let answer = reader
                    .serve_block(object, index, block_bytes)
                    .await
                    .map(Answer::Block);
                Ok(Bytes::from(wire::encode_response(&answer)))
            })
        }
    }

    /// A list of brokers, shared with a [`Rack`].
    type Brokers = Arc<Mutex<Vec<i32>>>;

    /// Readers of brokers 1..=n in one rack over `store`, the brokers in `down` not answering,
    /// and the brokers asked so far.
    fn rack(store: &Arc<RemoteStore>, n: i32) -> (Vec<Arc<ObjectReader>>, Brokers, Brokers) {
        let readers = Arc::new(Mutex::new(HashMap::new()));
        let (down, calls) = (Arc::default(), Arc::default());
        let all: Vec<_> = (1..=n)
            .map(|me| {
                let link = Arc::new(Rack {
                    me,
                    readers: readers.clone(),
                    down: Arc::clone(&down),
                    calls: Arc::clone(&calls),
                });
                let r = Arc::new(ObjectReader::new(store.clone(), 1 << 20, 4096).with_peers(link));
                readers.lock().insert(me, r.clone());
                r
            })
            .collect();
        (all, down, calls)
    }

    fn owner_of(object: ObjectId, brokers: impl Iterator<Item = i32>) -> i32 {
        brokers.max_by_key(|b| (score(object, *b), *b)).unwrap()
    }

    #[tokio::test]
    async fn a_rack_gets_each_block_once_from_its_owner() {
        let store = Arc::new(RemoteStore::in_memory());
        let (a, data) = stored(&store, 10_000).await;
        let (readers, _, _) = rack(&store, 3);
        let owner = owner_of(a, 1..=3);
        for r in &readers {
            let got = r
                .get_spans([coordinate(a, 0, 10_000)].iter())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(got[&a].1, data);
        }
        // 3 blocks, each GET once in the rack, by the owner
        let gets: u64 = readers.iter().map(|r| r.cache_counts().2).sum();
        assert_eq!(gets, 3);
        for (i, r) in readers.iter().enumerate() {
            let me = i as i32 + 1;
            let c = r.peer_counts();
            if me == owner {
                assert_eq!(r.cache_counts().2, 3);
                assert_eq!(
                    (c.reads, c.served),
                    (0, 6),
                    "the owner served the other two"
                );
            } else {
                assert_eq!((c.reads, c.fallbacks, c.served), (3, 0, 0), "broker {me}");
            }
        }
        // the others cached what they were given: a second read asks nobody
        for r in &readers {
            r.get_spans([coordinate(a, 0, 10_000)].iter())
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(readers.iter().map(|r| r.cache_counts().2).sum::<u64>(), 3);
        assert_eq!(
            readers.iter().map(|r| r.peer_counts().reads).sum::<u64>(),
            6
        );
        // a gone object is gone through the owner too: ask again
        let gone = ObjectId::v7(1_765_000_000_000, rand::random());
        let asker = readers
            .iter()
            .enumerate()
            .find(|(i, _)| *i as i32 + 1 != owner_of(gone, 1..=3))
            .unwrap()
            .1;
        assert!(asker
            .get_spans([coordinate(gone, 0, 10)].iter())
            .await
            .unwrap()
            .is_none());
    }

    #[tokio::test]
    async fn an_owner_that_does_not_answer_is_passed_over() {
        let store = Arc::new(RemoteStore::in_memory());
        let (readers, down, calls) = rack(&store, 3);
        // an object broker 1 does not own, and broker 1 reading it while its owner is down
        let (a, data) = loop {
            let (a, data) = stored(&store, 5000).await;
            if owner_of(a, 1..=3) != 1 {
                break (a, data);
            }
        };
        let owner = owner_of(a, 1..=3);
        down.lock().push(owner);
        let got = readers[0]
            .get_spans([coordinate(a, 0, 5000)].iter())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got[&a].1, data);
        let c = readers[0].peer_counts();
        // the first block's ask failed and passed the owner over, so the second went to the
        // next score (broker 1 itself, or the third broker): each block GET once in the rack
        assert_eq!(c.fallbacks, 1);
        assert_eq!(c.reads + readers[0].cache_counts().2, 2);
        assert_eq!(readers.iter().map(|r| r.cache_counts().2).sum::<u64>(), 2);
        let asked_down =
            |calls: &Mutex<Vec<i32>>| calls.lock().iter().filter(|b| **b == owner).count();
        let before = asked_down(&calls);
        // meanwhile the next objects it would own go to the next highest score
        for _ in 0..20 {
            let (b, data) = stored(&store, 100).await;
            let got = readers[0]
                .get_spans([coordinate(b, 0, 100)].iter())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(got[&b].1, data);
        }
        assert_eq!(
            asked_down(&calls),
            before,
            "a passed-over broker is not asked"
        );
        assert_eq!(readers[0].peer_counts().fallbacks, 1);
    }

    #[tokio::test]
    async fn a_block_request_out_of_range_is_refused() {
        let store = Arc::new(RemoteStore::in_memory());
        let (a, data) = stored(&store, 5000).await;
        let reader = ObjectReader::new(store, 1 << 20, 4096);
        for (index, block_bytes) in [(0, 0), (0, 2 << 30), (u64::MAX, 1 << 16)] {
            assert_eq!(
                reader.serve_block(a, index, block_bytes).await,
                Err(E::InvalidRequest),
                "{index} {block_bytes}"
            );
        }
        // another block size than this broker's: served, not cached
        let got = reader.serve_block(a, 0, 1 << 16).await.unwrap().unwrap();
        assert_eq!(got, data);
        assert_eq!(reader.cache_counts(), (0, 0, 1));
    }

    #[test]
    fn the_rendezvous_score_does_not_change_between_builds() {
        // Brokers of one rack must agree on an object's owner: the score is xxHash64 of the
        // object id's 16 bytes seeded with the broker id. A change here moves every object
        // to another owner while brokers of two builds run together (a GET more per object).
        // The value is xxHash64's reference answer (Python's `xxhash.xxh64_intdigest(bytes,
        // seed=1)` gives the same).
        let object = ObjectId(uuid::Uuid::from_u128(
            0x0193_0000_0000_7000_8000_0000_0000_0001,
        ));
        assert_eq!(score(object, 1), SCORE_OF_1);
        assert_ne!(score(object, 1), score(object, 2));
    }
    const SCORE_OF_1: u64 = 13_074_129_053_350_474_414;
}
