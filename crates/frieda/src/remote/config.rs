//! The settings of tiered storage (issue 32): Kafka's broker keys (KIP-405,
//! `RemoteLogManagerConfig`) and the object store's, named as Aiven's S3 plugin for Kafka
//! names them under Kafka's `rsm.config.` prefix (its `docs/configs.rst`), so an existing
//! configuration carries over. Keys of that plugin Frieda does not implement (encryption,
//! compression, other backends) are refused at start, never ignored.

use anyhow::{bail, Context};
use std::path::PathBuf;

/// The one backend accepted for `rsm.config.storage.backend.class`.
pub const AIVEN_S3_BACKEND: &str = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage";
/// `rsm.config.fetch.chunk.cache.class` for the chunk cache on disk (the default here).
pub const AIVEN_DISK_CACHE: &str = "io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache";
/// `rsm.config.fetch.chunk.cache.class` for the chunk cache in memory.
pub const AIVEN_MEMORY_CACHE: &str = "io.aiven.kafka.tieredstorage.fetch.cache.MemoryChunkCache";

/// Broker-wide tiered-storage settings.
#[derive(Clone, PartialEq, Eq)]
pub struct TieredConfig {
    /// `remote.log.storage.system.enable` (default false): the broker tiers at all; topics
    /// cannot set `remote.storage.enable=true` otherwise.
    pub enabled: bool,
    /// `remote.log.manager.task.interval.ms` (Kafka's default 30000): how often each led tiered
    /// partition looks for closed segments to copy.
    pub task_interval_ms: u64,
    /// `remote.fetch.max.wait.ms` (KIP-1018, Kafka's default 500): how long a fetch waits for
    /// its read from the remote tier.
    pub fetch_max_wait_ms: u64,
    /// `remote.list.offsets.request.timeout.ms` (KIP-1075, Kafka's default 30000): how long a
    /// ListOffsets by timestamp waits for its lookup in the remote tier when the request gives
    /// no `timeout_ms` (before v10, or 0); then the partition answers REQUEST_TIMED_OUT (7),
    /// as Kafka's `DelayedRemoteListOffsets` does.
    pub list_offsets_timeout_ms: u64,
    /// `remote.log.manager.copy.max.bytes.per.second` (KIP-956; Kafka's default
    /// `Long.MAX_VALUE`, here `None`): bytes per second this broker copies to the bucket.
    pub copy_max_bytes_per_second: Option<u64>,
    /// `remote.log.manager.fetch.max.bytes.per.second` (KIP-956; default unlimited): bytes per
    /// second this broker reads from the bucket for fetches.
    pub fetch_max_bytes_per_second: Option<u64>,
    /// `remote.log.manager.task.retry.backoff.ms` (Kafka's default 500): a partition whose copy
    /// round failed waits this long before the next, doubled per failure in a row...
    pub retry_backoff_ms: u64,
    /// ...up to `remote.log.manager.task.retry.backoff.max.ms` (default 30000).
    pub retry_backoff_max_ms: u64,
    /// `remote.log.manager.thread.priority` (Frieda's; `idle`, `low` (default) or `normal`):
    /// the CPU priority of the remote-log threads (copies, reads from the bucket), as
    /// `backlog.read.priority` sets the backlog lane's: `low` is `nice 19`, so copies and history
    /// reads take the CPU that produce and tail reads leave, yet always progress.
    pub thread_priority: ThreadPriority,
    /// The object store (`rsm.config.*`).
    pub s3: S3Config,
}

/// CPU priority of the remote-log threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadPriority {
    /// `SCHED_IDLE`: only when no normal thread wants the CPU.
    Idle,
    /// `nice 19`.
    Low,
    /// As every other thread.
    Normal,
}

/// The S3 bucket and how to reach it (`rsm.config.storage.*`, Aiven's names).
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// `storage.s3.bucket.name` (required when tiering is on).
    pub bucket: Option<String>,
    /// `storage.s3.region` (default `us-east-1`).
    pub region: String,
    /// `storage.s3.endpoint.url`, e.g. `http://127.0.0.1:8333` (SeaweedFS, MinIO); AWS's own
    /// endpoint when absent.
    pub endpoint: Option<String>,
    /// `storage.s3.path.style.access.enabled` (default false as in Aiven's; S3-compatible
    /// servers mostly need true).
    pub path_style: bool,
    /// `storage.aws.access.key.id`; otherwise the `AWS_ACCESS_KEY_ID` environment.
    pub access_key_id: Option<String>,
    /// `storage.aws.secret.access.key`; otherwise `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: Option<String>,
    /// `storage.s3.multipart.upload.part.size`, bytes per upload part (default 25 MiB, at
    /// least 5 MiB as S3 requires).
    pub part_size: u64,
    /// `key.prefix`: prefix of every object key (default empty).
    pub key_prefix: String,
    /// `chunk.size`: bytes per ranged read of a segment (required by Aiven's; default 4 MiB
    /// here, its recommended start).
    pub chunk_size: u64,
    /// `fetch.chunk.cache.class`: [`AIVEN_MEMORY_CACHE`] keeps chunks in memory; the default,
    /// [`AIVEN_DISK_CACHE`], on disk (`crate::remote::chunk_cache`).
    pub cache_in_memory: bool,
    /// `fetch.chunk.cache.path` (default `<data dir>/remote-cache`; the disk cache only).
    pub cache_path: Option<PathBuf>,
    /// `fetch.chunk.cache.size`, bytes (default 1 GiB here; Aiven's requires it).
    pub cache_size: u64,
    /// `fetch.chunk.cache.prefetch.max.size`, bytes read ahead after a miss (default 0).
    pub prefetch_bytes: u64,
    /// `fetch.chunk.cache.retention.ms` (default 600000).
    pub cache_retention_ms: u64,
}

const MIB: u64 = 1024 * 1024;

impl Default for TieredConfig {
    fn default() -> Self {
        TieredConfig {
            enabled: false,
            task_interval_ms: 30_000,
            fetch_max_wait_ms: 500,
            list_offsets_timeout_ms: 30_000,
            copy_max_bytes_per_second: None,
            fetch_max_bytes_per_second: None,
            thread_priority: ThreadPriority::Low,
            retry_backoff_ms: 500,
            retry_backoff_max_ms: 30_000,
            s3: S3Config {
                bucket: None,
                region: "us-east-1".into(),
                endpoint: None,
                path_style: false,
                access_key_id: None,
                secret_access_key: None,
                part_size: 25 * MIB,
                key_prefix: String::new(),
                chunk_size: 4 * MIB,
                cache_in_memory: false,
                cache_path: None,
                cache_size: 1024 * MIB,
                prefetch_bytes: 0,
                cache_retention_ms: 600_000,
            },
        }
    }
}

impl std::fmt::Debug for TieredConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.s3;
        f.debug_struct("TieredConfig")
            .field("enabled", &self.enabled)
            .field("task_interval_ms", &self.task_interval_ms)
            .field("copy_max_bytes_per_second", &self.copy_max_bytes_per_second)
            .field(
                "fetch_max_bytes_per_second",
                &self.fetch_max_bytes_per_second,
            )
            .field("thread_priority", &self.thread_priority)
            .field("bucket", &s.bucket)
            .field("region", &s.region)
            .field("endpoint", &s.endpoint)
            .field("path_style", &s.path_style)
            .field("access_key_id", &s.access_key_id)
            .field(
                "secret_access_key",
                &s.secret_access_key.as_ref().map(|_| "[hidden]"),
            )
            .field("part_size", &s.part_size)
            .field("key_prefix", &s.key_prefix)
            .field("chunk_size", &s.chunk_size)
            .finish_non_exhaustive()
    }
}

fn bytes(text: &str, min: u64) -> anyhow::Result<u64> {
    let n: u64 = text.parse().context("expected a number of bytes")?;
    if n < min {
        bail!("must be at least {min}");
    }
    Ok(n)
}

/// A byte rate: at least 1; Kafka's default `Long.MAX_VALUE` (9223372036854775807) is none.
fn rate(text: &str) -> anyhow::Result<Option<u64>> {
    let n = bytes(text, 1).context("expected bytes per second")?;
    Ok((n < i64::MAX as u64).then_some(n))
}

impl TieredConfig {
    /// Sets `key` (a broker key, `rsm.config.` included) if it is a tiered-storage key;
    /// `Ok(false)` if it is not one.
    ///
    /// Errors: a bad value, or an `rsm.config.` key Frieda does not implement (naming it).
    pub fn set(&mut self, key: &str, text: &str) -> anyhow::Result<bool> {
        match key {
            "remote.log.storage.system.enable" => {
                self.enabled = text.parse().context("expected true or false")?
            }
            "remote.log.manager.task.interval.ms" => {
                self.task_interval_ms = bytes(text, 1).context("expected milliseconds")?
            }
            "remote.fetch.max.wait.ms" => {
                self.fetch_max_wait_ms = bytes(text, 1).context("expected milliseconds")?
            }
            "remote.list.offsets.request.timeout.ms" => {
                self.list_offsets_timeout_ms = bytes(text, 1).context("expected milliseconds")?
            }
            "remote.log.manager.copy.max.bytes.per.second" => {
                self.copy_max_bytes_per_second = rate(text)?
            }
            "remote.log.manager.fetch.max.bytes.per.second" => {
                self.fetch_max_bytes_per_second = rate(text)?
            }
            "remote.log.manager.task.retry.backoff.ms" => {
                self.retry_backoff_ms = bytes(text, 1).context("expected milliseconds")?
            }
            "remote.log.manager.task.retry.backoff.max.ms" => {
                self.retry_backoff_max_ms = bytes(text, 1).context("expected milliseconds")?
            }
            "remote.log.manager.thread.priority" => {
                self.thread_priority = match text {
                    "idle" => ThreadPriority::Idle,
                    "low" => ThreadPriority::Low,
                    "normal" => ThreadPriority::Normal,
                    _ => bail!("expected \"idle\", \"low\" or \"normal\""),
                }
            }
            _ => match key.strip_prefix("rsm.config.") {
                Some(k) => self.set_rsm(k, text)?,
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    fn set_rsm(&mut self, key: &str, text: &str) -> anyhow::Result<()> {
        let s = &mut self.s3;
        let some = || Some(text.to_string());
        match key {
            "storage.backend.class" => {
                if text != AIVEN_S3_BACKEND {
                    bail!("the only storage backend is {AIVEN_S3_BACKEND} (S3 and S3-compatible servers)");
                }
            }
            "storage.s3.bucket.name" => s.bucket = some(),
            "storage.s3.region" => s.region = text.to_string(),
            "storage.s3.endpoint.url" => s.endpoint = some(),
            "storage.s3.path.style.access.enabled" => {
                s.path_style = text.parse().context("expected true or false")?
            }
            "storage.aws.access.key.id" => s.access_key_id = some(),
            "storage.aws.secret.access.key" => s.secret_access_key = some(),
            "storage.s3.multipart.upload.part.size" => s.part_size = bytes(text, 5 * MIB)?,
            "key.prefix" => s.key_prefix = text.to_string(),
            "chunk.size" => s.chunk_size = bytes(text, 1)?,
            "fetch.chunk.cache.class" => {
                s.cache_in_memory = match text {
                    AIVEN_DISK_CACHE => false,
                    AIVEN_MEMORY_CACHE => true,
                    _ => bail!("the chunk caches are {AIVEN_DISK_CACHE} and {AIVEN_MEMORY_CACHE}"),
                }
            }
            "fetch.chunk.cache.path" => s.cache_path = Some(PathBuf::from(text)),
            "fetch.chunk.cache.size" => s.cache_size = bytes(text, 1)?,
            "fetch.chunk.cache.prefetch.max.size" => s.prefetch_bytes = bytes(text, 0)?,
            "fetch.chunk.cache.retention.ms" => s.cache_retention_ms = bytes(text, 1)?,
            _ => bail!(
                "not implemented by Frieda's tiered storage (it has S3 storage, path-style or \
                 virtual-hosted, static or environment credentials, key prefix, chunk size and \
                 the disk chunk cache; no encryption or compression of its own): remove it"
            ),
        }
        Ok(())
    }

    /// Checks what no single key can: with tiering on, a bucket is named and the broker runs
    /// in a cluster (remote segment metadata lives in the metadata quorum).
    ///
    /// Errors: a message naming the setting.
    pub fn check(&self, in_cluster: bool) -> anyhow::Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if self.s3.bucket.is_none() {
            bail!(
                "`remote.log.storage.system.enable=true` needs `rsm.config.storage.s3.bucket.name`"
            );
        }
        if !in_cluster {
            bail!(
                "`remote.log.storage.system.enable=true` needs the metadata quorum (remote segment \
                 metadata lives there): set `process.roles` and `controller.quorum.bootstrap.servers` \
                 (one node may name only itself)"
            );
        }
        if self.s3.access_key_id.is_some() != self.s3.secret_access_key.is_some() {
            bail!("`rsm.config.storage.aws.access.key.id` and `rsm.config.storage.aws.secret.access.key` go together");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aiven_keys_set_the_bucket_and_unknown_ones_are_refused() {
        let mut c = TieredConfig::default();
        for (k, v) in [
            ("remote.log.storage.system.enable", "true"),
            ("rsm.config.storage.backend.class", AIVEN_S3_BACKEND),
            ("rsm.config.storage.s3.bucket.name", "b"),
            (
                "rsm.config.storage.s3.endpoint.url",
                "http://127.0.0.1:8333",
            ),
            ("rsm.config.storage.s3.path.style.access.enabled", "true"),
            ("rsm.config.chunk.size", "4194304"),
        ] {
            assert!(c.set(k, v).unwrap(), "{k}");
        }
        assert!(!c.set("num.partitions", "3").unwrap());
        c.set("remote.log.manager.copy.max.bytes.per.second", "1048576")
            .unwrap();
        c.set(
            "remote.log.manager.fetch.max.bytes.per.second",
            "9223372036854775807",
        )
        .unwrap();
        assert_eq!(
            (c.copy_max_bytes_per_second, c.fetch_max_bytes_per_second),
            (Some(1 << 20), None)
        );
        assert!(c
            .set("remote.log.manager.copy.max.bytes.per.second", "0")
            .is_err());
        assert_eq!(c.s3.bucket.as_deref(), Some("b"));
        assert!(c.s3.path_style);
        c.check(true).unwrap();
        assert!(c.check(false).is_err(), "needs the quorum");
        assert!(c.set("rsm.config.encryption.enabled", "true").is_err());
        assert!(c
            .set("rsm.config.storage.backend.class", "x.GcsStorage")
            .is_err());
        assert!(!c.s3.cache_in_memory, "the disk cache by default");
        c.set("rsm.config.fetch.chunk.cache.class", AIVEN_MEMORY_CACHE)
            .unwrap();
        assert!(c.s3.cache_in_memory);
        assert!(c
            .set("rsm.config.fetch.chunk.cache.class", "x.OtherCache")
            .is_err());
        assert!(c
            .set("rsm.config.storage.s3.multipart.upload.part.size", "1024")
            .is_err());
        c.set("rsm.config.storage.aws.secret.access.key", "s")
            .unwrap();
        assert!(
            !format!("{c:?}").contains("\"s\""),
            "the secret is not printed"
        );
        assert!(c.check(true).is_err(), "key id and secret go together");
    }
}
