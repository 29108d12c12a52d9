//! The remote tier of tiered storage (issue 32, KIP-405): the S3 bucket through the
//! `object_store` crate ([`store`]), its settings under Aiven's `rsm.config.*` names
//! ([`config`]), and reads from it ([`reader`]) through a chunk cache on disk or in memory
//! ([`chunk_cache`]). Used by the
//! fetch path (reads below a partition's local log) and by the remote-log manager
//! (`crate::tiering`, which copies segments and keeps the metadata). Depends on no other module
//! of this crate.

pub mod chunk_cache;
pub mod config;
pub mod quota;
pub mod reader;
pub mod store;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// What the fetch path needs to read from the remote tier.
pub struct RemoteAccess {
    /// The reader and its chunk cache.
    pub reader: Arc<reader::RemoteReader>,
    /// The remote-log runtime, where reads run.
    pub runtime: tokio::runtime::Handle,
    /// `remote.fetch.max.wait.ms`: how long a fetch waits for a remote read before it answers
    /// without that partition's records.
    pub wait: Duration,
    /// `remote.list.offsets.request.timeout.ms`: how long a ListOffsets without its own
    /// `timeout_ms` waits for a lookup by timestamp in the remote tier before the partition
    /// answers REQUEST_TIMED_OUT.
    pub list_offsets_wait: Duration,
    /// Remote reads queued or running; at [`MAX_PENDING_READS`] a fetch below the local log
    /// is answered without records (the client asks again) instead of queueing more.
    pub pending: Arc<std::sync::atomic::AtomicUsize>,
    /// `remote.log.manager.fetch.max.bytes.per.second`: over it, a fetch below the local log
    /// is answered without records (as Kafka's, which skips remote reads while throttled).
    pub fetch_quota: Option<Arc<quota::ByteRate>>,
}

/// Most remote reads queued or running at once (Kafka's `remote.log.reader.max.pending.tasks`
/// default): memory in flight is at most this many reads of a fetch's partition bytes.
pub const MAX_PENDING_READS: usize = 100;

/// Counters of this process's reads from the remote tier (the `frieda_remote_fetch_*` and
/// `frieda_remote_chunk_cache_*` metrics; Kafka's `RemoteFetchRequestsPerSec`,
/// `RemoteFetchBytesPerSec`, `RemoteFetchErrorsPerSec`, `RemoteLogReaderFetchRateAndTimeMs`,
/// as totals).
pub struct RemoteReadStats {
    /// Reads of a partition below its local log started (fetches of consumers and followers).
    pub requests: AtomicU64,
    /// Bytes of record batches they returned.
    pub bytes: AtomicU64,
    /// Reads that failed (the fetch answered KAFKA_STORAGE_ERROR for the partition).
    pub errors: AtomicU64,
    /// Microseconds the finished reads took, summed (mean = this / requests).
    pub micros: AtomicU64,
    /// Chunks found in the chunk cache.
    pub cache_hits: AtomicU64,
    /// Chunks not found there (fetched from the bucket).
    pub cache_misses: AtomicU64,
}

/// This process's counters.
pub static READS: RemoteReadStats = RemoteReadStats {
    requests: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    errors: AtomicU64::new(0),
    micros: AtomicU64::new(0),
    cache_hits: AtomicU64::new(0),
    cache_misses: AtomicU64::new(0),
};
