//! The remote tier of tiered storage (issue 32, KIP-405): the S3 bucket through the
//! `object_store` crate ([`store`]), its settings under Aiven's `rsm.config.*` names
//! ([`config`]), and reads from it through a chunk cache on local disk ([`reader`]). Used by the
//! fetch path (reads below a partition's local log) and by the remote-log manager
//! (`crate::tiering`, which copies segments and keeps the metadata). Depends on no other module
//! of this crate.

pub mod config;
pub mod quota;
pub mod reader;
pub mod store;

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
