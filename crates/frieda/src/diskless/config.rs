//! Broker settings of diskless topics (docs/diskless.md, "What a user gets"). The bucket and its
//! credentials are tiered storage's (`rsm.config.*`); a diskless topic needs
//! `remote.log.storage.system.enable=true`. The fetch cache is a chunk cache of its own, in
//! memory (`diskless.fetch.cache.*`).

use anyhow::{bail, Context};

pub use crate::storage::topic::DISKLESS_COORDINATOR_TOPIC as COORDINATOR_TOPIC;

pub use crate::storage::topic_config::DISKLESS_ENABLE;

/// Broker-wide diskless settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisklessConfig {
    /// `diskless.append.commit.interval.ms` (default 250): the longest a produced batch waits
    /// in the broker's buffer before its object is closed and uploaded (ms).
    pub commit_interval_ms: i64,
    /// `diskless.append.buffer.max.bytes` (default 8 MiB): a buffer this full is closed at
    /// once (bytes).
    pub buffer_max_bytes: usize,
    /// `diskless.append.upload.max.attempts` (default 3): PUT attempts before the object's
    /// batches are refused KAFKA_STORAGE_ERROR.
    pub upload_max_attempts: u32,
    /// `diskless.commit.max.age.ms` (default 30000): a commit of an object older than this is
    /// refused (the orphan sweep may delete such an object).
    pub commit_max_age_ms: i64,
    /// `diskless.coordinator.replication.factor` (default 3): replicas of
    /// `__diskless_coordinator`, capped at the brokers registered when it is created.
    pub coordinator_replication_factor: i16,
    /// `diskless.coordinator.min.isr` (default 2): the coordinator's writes need this many
    /// in-sync replicas (`min.insync.replicas` of `__diskless_coordinator`).
    pub coordinator_min_isr: usize,
    /// `diskless.coordinator.max.batches.per.partition` (default 16384): the bound on one
    /// partition's batch coordinates; commits beyond are refused KAFKA_STORAGE_ERROR.
    pub max_batches_per_partition: usize,
    /// `diskless.object.delete.delay.ms` (default 60000): grace between the last batch of an
    /// object going (DeleteRecords, topic deletion) and the object's deletion, so reads that
    /// found it still finish (ms).
    pub object_delete_delay_ms: i64,
    /// `diskless.orphan.grace.ms` (default 600000): an object no commit names is deleted only
    /// when older than this (ms; above the commit-age bound plus clock skew).
    pub orphan_grace_ms: i64,
    /// The broker's `producer.id.expiration.ms` (default 86400000): a diskless partition's
    /// batch coordinator forgets a producer whose last batch is this old (ms).
    pub producer_id_expiration_ms: i64,
    /// The broker's `producer.id.expiration.check.interval.ms` (default 600000): how often the
    /// coordinators loaded on a broker look for such producers (ms).
    pub producer_id_expiration_check_interval_ms: u64,
    /// `diskless.compaction.max.bytes` (default 8 MiB): the most bytes of one partition's
    /// batches compaction rewrites into one object; a run of uncompacted batches this large is
    /// compacted at once (bytes, 1 KiB to 1 GiB).
    pub compaction_max_bytes: u64,
    /// `diskless.compaction.max.age.ms` (default 600000): uncompacted batches this old are
    /// compacted however few (ms; 0 compacts every batch at the next round).
    pub compaction_max_age_ms: i64,
    /// `diskless.compaction.max.bytes.per.second` (default `-1`, no budget, as Kafka's
    /// `remote.log.manager.copy.max.bytes.per.second`, KIP-956, for tiered storage's copies):
    /// the bytes compaction rewrites per second on this broker (each run's object counted once;
    /// its GETs read about as much), so the rewrite leaves the bucket and the broker to the
    /// produce path; a token bucket of one second's bytes, and a run goes whole once it is not
    /// in debt (so a burst is one second plus one run). A partition holding half its coordinate
    /// bound compacts past the budget without spending from it. `None` (`-1`) or at least 1024.
    pub compaction_max_bytes_per_second: Option<u64>,
    /// `diskless.fetch.cache.max.bytes` (default 256 MiB): the broker memory the fetch cache
    /// of diskless objects' blocks takes at most (bytes; 0: no cache, every read GETs its own
    /// byte ranges). Blocks live 60 s at most (`driver::objects`).
    pub fetch_cache_max_bytes: u64,
    /// `diskless.fetch.cache.block.bytes` (default 4 MiB, tiered storage's `chunk.size`;
    /// Inkless's `consume.cache.block.bytes` is 16 MiB): a read missing the cache GETs whole
    /// blocks of this size, so the other partitions of the object find theirs cached (bytes,
    /// 64 KiB to 1 GiB).
    pub fetch_cache_block_bytes: u64,
    /// `diskless.fetch.cache.affinity.enable` (default `true`): the brokers of a rack share
    /// their fetch caches, each object read from the bucket by one of them (its owner by
    /// rendezvous hashing) and asked of it by the others, so an object is read about once per
    /// rack rather than once per broker serving its partitions (`driver::objects`; KIP-1163's
    /// rack-aware caching; Inkless hashes partitions, not objects). Brokers without a rack
    /// form one rack. `false`: each broker GETs what it misses.
    pub fetch_cache_affinity: bool,
}

impl Default for DisklessConfig {
    fn default() -> Self {
        DisklessConfig {
            commit_interval_ms: 250,
            buffer_max_bytes: 8 << 20,
            upload_max_attempts: 3,
            commit_max_age_ms: super::coordinator::DEFAULT_MAX_COMMIT_AGE_MS,
            coordinator_replication_factor: 3,
            coordinator_min_isr: 2,
            max_batches_per_partition: 16_384,
            object_delete_delay_ms: 60_000,
            orphan_grace_ms: 600_000,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            compaction_max_bytes: 8 << 20,
            compaction_max_age_ms: 600_000,
            compaction_max_bytes_per_second: None,
            fetch_cache_max_bytes: 256 << 20,
            fetch_cache_block_bytes: 4 << 20,
            fetch_cache_affinity: true,
        }
    }
}

impl DisklessConfig {
    /// Checks what no single key can.
    ///
    /// Errors: `diskless.orphan.grace.ms` not above `diskless.commit.max.age.ms` (an upload
    /// whose commit may still come could be swept).
    pub fn check(&self) -> anyhow::Result<()> {
        if self.orphan_grace_ms <= self.commit_max_age_ms {
            bail!(
                "`diskless.orphan.grace.ms` ({}) must exceed `diskless.commit.max.age.ms` ({})",
                self.orphan_grace_ms,
                self.commit_max_age_ms
            );
        }
        Ok(())
    }

    /// Sets `key` from `text` if it is a diskless key (`Ok(false)`: not one).
    ///
    /// Errors: a value that does not parse or is out of range (named in the message).
    pub fn set(&mut self, key: &str, text: &str) -> anyhow::Result<bool> {
        let number = |min: i64| -> anyhow::Result<i64> {
            let v: i64 = text.trim().parse().context("expected an integer")?;
            if v < min {
                bail!("must be at least {min}");
            }
            Ok(v)
        };
        match key {
            "diskless.append.commit.interval.ms" => self.commit_interval_ms = number(1)?,
            "diskless.append.buffer.max.bytes" => {
                self.buffer_max_bytes = usize::try_from(number(1024)?)?
            }
            "diskless.append.upload.max.attempts" => {
                self.upload_max_attempts = u32::try_from(number(1)?)?
            }
            "diskless.commit.max.age.ms" => self.commit_max_age_ms = number(1000)?,
            "diskless.coordinator.replication.factor" => {
                self.coordinator_replication_factor = i16::try_from(number(1)?)?
            }
            "diskless.coordinator.min.isr" => {
                self.coordinator_min_isr = usize::try_from(number(1)?)?
            }
            "diskless.coordinator.max.batches.per.partition" => {
                self.max_batches_per_partition = usize::try_from(number(16)?)?
            }
            "diskless.object.delete.delay.ms" => self.object_delete_delay_ms = number(0)?,
            "diskless.orphan.grace.ms" => self.orphan_grace_ms = number(0)?,
            "diskless.compaction.max.bytes" => {
                let v = number(1024)?;
                if v > 1 << 30 {
                    bail!("must be at most 1 GiB (1073741824)");
                }
                self.compaction_max_bytes = v as u64
            }
            "diskless.compaction.max.age.ms" => self.compaction_max_age_ms = number(0)?,
            "diskless.compaction.max.bytes.per.second" => {
                self.compaction_max_bytes_per_second = match text.trim() {
                    "-1" => None,
                    _ => Some(
                        number(1024).context("must be -1 (no budget) or at least 1024")? as u64,
                    ),
                }
            }
            "diskless.fetch.cache.max.bytes" => self.fetch_cache_max_bytes = number(0)? as u64,
            "diskless.fetch.cache.block.bytes" => {
                let v = number(64 << 10)?;
                if v > 1 << 30 {
                    bail!("must be at most 1 GiB (1073741824)");
                }
                self.fetch_cache_block_bytes = v as u64
            }
            "diskless.fetch.cache.affinity.enable" => {
                self.fetch_cache_affinity = match text.trim() {
                    "true" => true,
                    "false" => false,
                    _ => bail!("expected true or false"),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_refuse_nonsense() {
        let mut c = DisklessConfig::default();
        assert!(c.set("diskless.append.commit.interval.ms", "50").unwrap());
        assert_eq!(c.commit_interval_ms, 50);
        assert!(c.set("diskless.append.commit.interval.ms", "0").is_err());
        assert!(c.set("diskless.coordinator.min.isr", "x").is_err());
        assert!(c.set("diskless.fetch.cache.max.bytes", "0").unwrap());
        assert_eq!(c.fetch_cache_max_bytes, 0);
        assert!(c.set("diskless.fetch.cache.block.bytes", "1000").is_err());
        assert!(c
            .set("diskless.fetch.cache.block.bytes", "2147483648")
            .is_err());
        assert!(c
            .set("diskless.fetch.cache.block.bytes", "1048576")
            .unwrap());
        assert_eq!(c.fetch_cache_block_bytes, 1 << 20);
        assert!(c.fetch_cache_affinity);
        assert!(c
            .set("diskless.fetch.cache.affinity.enable", "false")
            .unwrap());
        assert!(!c.fetch_cache_affinity);
        assert!(c
            .set("diskless.fetch.cache.affinity.enable", "yes")
            .is_err());
        assert!(!c.set("log.dirs", "/tmp").unwrap());
        assert!(c
            .set("diskless.compaction.max.bytes.per.second", "-1")
            .unwrap());
        assert_eq!(c.compaction_max_bytes_per_second, None);
        assert!(c
            .set("diskless.compaction.max.bytes.per.second", "5000000")
            .unwrap());
        assert_eq!(c.compaction_max_bytes_per_second, Some(5_000_000));
        assert!(c
            .set("diskless.compaction.max.bytes.per.second", "0")
            .is_err());
    }
}
