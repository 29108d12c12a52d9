//! Topic-level configuration under Kafka's names, and its mapping onto the log's [`LogConfig`].
//!
//! Values are kept as the strings clients send (CreateTopics configs, AlterConfigs,
//! IncrementalAlterConfigs) and validated on the way in, so DescribeConfigs can return them as they
//! were set. Invalid values are refused with INVALID_CONFIG (40); unknown names with
//! INVALID_CONFIG as well (Kafka answers the same for a name it does not know).

use frieda_log::{Codec, LogConfig, RecordPolicy, TimestampType};
use std::collections::BTreeMap;

/// How a config value is checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueKind {
    /// A signed 64-bit integer, at least `min`.
    Long { min: i64 },
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
    /// `true` or `false`.
    Boolean,
    /// A floating-point number in `[min, max]`.
    Ratio { min: f64, max: f64 },
    /// Kafka's throttled-replica list: empty, `*`, or `partition:broker` pairs separated by commas.
    ReplicaList,
}

/// One supported topic config: its Kafka name, default as Kafka documents it, and check.
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigKey {
    /// Kafka's name, e.g. `retention.ms`.
    pub name: &'static str,
    /// Default value, as a string.
    pub default: &'static str,
    /// How values are validated.
    pub kind: ValueKind,
}

/// Every topic config Frieda accepts, with Kafka 4.x's defaults (`LogConfig`). `min.insync.replicas`
/// is what an `acks=all` produce needs in a cluster; `unclean.leader.election.enable` lets the
/// controller elect a replica outside the ISR and the ELR (`frieda_meta::partition_change`); the
/// `*.replication.throttled.replicas` lists `kafka-reassign-partitions.sh` sets are stored and
/// reported, not enforced (Frieda does not throttle replication).
pub const TOPIC_CONFIG_KEYS: &[TopicConfigKey] = &[
    TopicConfigKey {
        name: "leader.replication.throttled.replicas",
        default: "",
        kind: ValueKind::ReplicaList,
    },
    TopicConfigKey {
        name: "follower.replication.throttled.replicas",
        default: "",
        kind: ValueKind::ReplicaList,
    },
    TopicConfigKey {
        name: "cleanup.policy",
        default: "delete",
        kind: ValueKind::Choice(&["delete", "compact", "compact,delete", "delete,compact"]),
    },
    TopicConfigKey {
        name: "delete.retention.ms",
        default: "86400000",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "compression.type",
        default: "producer",
        kind: ValueKind::Choice(&["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]),
    },
    TopicConfigKey {
        name: "flush.messages",
        default: "9223372036854775807",
        kind: ValueKind::Long { min: 1 },
    },
    TopicConfigKey {
        name: "flush.ms",
        default: "9223372036854775807",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "index.interval.bytes",
        default: "4096",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "max.message.bytes",
        default: "1048588",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "max.compaction.lag.ms",
        default: "9223372036854775807",
        kind: ValueKind::Long { min: 1 },
    },
    TopicConfigKey {
        name: "message.timestamp.after.max.ms",
        default: "3600000",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "message.timestamp.before.max.ms",
        default: "9223372036854775807",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "message.timestamp.type",
        default: "CreateTime",
        kind: ValueKind::Choice(&["CreateTime", "LogAppendTime"]),
    },
    TopicConfigKey {
        name: "min.cleanable.dirty.ratio",
        default: "0.5",
        kind: ValueKind::Ratio { min: 0.0, max: 1.0 },
    },
    TopicConfigKey {
        name: "min.compaction.lag.ms",
        default: "0",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "min.insync.replicas",
        default: "1",
        kind: ValueKind::Long { min: 1 },
    },
    // Frieda's own (issue 34): when an acks=all record is acknowledged; docs/cluster.md.
    TopicConfigKey {
        name: "replication.ack.policy",
        default: "isr",
        kind: ValueKind::Choice(&["isr", "quorum"]),
    },
    // A new segment's `.log` is made `segment.bytes` long (sparse) at once and cut when it rolls
    // (LogConfig::preallocate).
    TopicConfigKey {
        name: "preallocate",
        default: "false",
        kind: ValueKind::Boolean,
    },
    TopicConfigKey {
        name: "retention.bytes",
        default: "-1",
        kind: ValueKind::Long { min: -1 },
    },
    TopicConfigKey {
        name: "retention.ms",
        default: "604800000",
        kind: ValueKind::Long { min: -1 },
    },
    // KIP-1030 (Kafka 4.0): at least 1 MiB, so no topic config can make the broker roll a
    // segment per batch and run out of file descriptors.
    TopicConfigKey {
        name: "segment.bytes",
        default: "1073741824",
        kind: ValueKind::Long {
            min: MIN_SEGMENT_BYTES,
        },
    },
    // Kafka 4's internal override of `segment.bytes` for tests (`LogConfig.internalSegmentSize`):
    // any size, reported only when set.
    TopicConfigKey {
        name: INTERNAL_SEGMENT_BYTES,
        default: "",
        kind: ValueKind::Long { min: 1 },
    },
    // A segment rolls when its offset or time index is full (Kafka's `isFull`); Frieda's
    // index files are not preallocated to this size. Segments roll without jitter.
    TopicConfigKey {
        name: "segment.index.bytes",
        default: "10485760",
        kind: ValueKind::Long { min: 4 },
    },
    TopicConfigKey {
        name: "segment.jitter.ms",
        default: "0",
        kind: ValueKind::Long { min: 0 },
    },
    TopicConfigKey {
        name: "segment.ms",
        default: "604800000",
        kind: ValueKind::Long { min: 1 },
    },
    TopicConfigKey {
        name: "unclean.leader.election.enable",
        default: "false",
        kind: ValueKind::Boolean,
    },
    // KIP-1191: a topic share groups may use as their dead-letter queue.
    TopicConfigKey {
        name: "errors.deadletterqueue.group.enable",
        default: "false",
        kind: ValueKind::Boolean,
    },
    // Tiered storage (KIP-405, KIP-950; docs/tiered-storage.md): validated as Kafka does
    // ([`TopicConfigs::check_tiering`]; `remote.storage.enable=true` only with the broker's
    // `remote.log.storage.system.enable`). -2: "as `retention.*`".
    TopicConfigKey {
        name: REMOTE_STORAGE_ENABLE,
        default: "false",
        kind: ValueKind::Boolean,
    },
    TopicConfigKey {
        name: "local.retention.ms",
        default: "-2",
        kind: ValueKind::Long { min: -2 },
    },
    TopicConfigKey {
        name: "local.retention.bytes",
        default: "-2",
        kind: ValueKind::Long { min: -2 },
    },
    TopicConfigKey {
        name: "remote.log.copy.disable",
        default: "false",
        kind: ValueKind::Boolean,
    },
    TopicConfigKey {
        name: "remote.log.delete.on.disable",
        default: "false",
        kind: ValueKind::Boolean,
    },
    // Diskless topics (issue 60, KIP-1150; docs/diskless.md): [`TopicConfigs::check_diskless`].
    TopicConfigKey {
        name: DISKLESS_ENABLE,
        default: "false",
        kind: ValueKind::Boolean,
    },
];

/// The topic config that makes a topic diskless (Aiven Inkless's name; docs/diskless.md), fixed
/// at creation.
pub const DISKLESS_ENABLE: &str = "diskless.enable";

/// The topic config that puts a topic in tiered storage (KIP-405).
pub const REMOTE_STORAGE_ENABLE: &str = "remote.storage.enable";

/// Each total retention with its local one, in the order Kafka checks them (size, then time).
const LOCAL_RETENTION_PAIRS: [(&str, &str); 2] = [
    ("retention.bytes", "local.retention.bytes"),
    ("retention.ms", "local.retention.ms"),
];

/// Smallest `segment.bytes` (and broker `log.segment.bytes`): 1 MiB (KIP-1030).
pub const MIN_SEGMENT_BYTES: i64 = 1024 * 1024;

/// Kafka 4's internal topic config overriding `segment.bytes` below its minimum (tests).
pub const INTERNAL_SEGMENT_BYTES: &str = "internal.segment.bytes";

/// Finds a supported key by name.
pub fn key(name: &str) -> Option<&'static TopicConfigKey> {
    TOPIC_CONFIG_KEYS.iter().find(|k| k.name == name)
}

/// Kafka's broker-level name of each topic config (the synonym a broker's `server.properties`
/// sets the topic default with; Kafka 4.3's `ServerTopicConfigSynonyms`). Topic configs without a
/// broker synonym (the throttled-replica lists) are not listed.
pub const TOPIC_CONFIG_BROKER_SYNONYMS: &[(&str, &str)] = &[
    ("cleanup.policy", "log.cleanup.policy"),
    ("compression.type", "compression.type"),
    ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
    ("file.delete.delay.ms", "log.segment.delete.delay.ms"),
    ("flush.messages", "log.flush.interval.messages"),
    ("flush.ms", "log.flush.interval.ms"),
    ("index.interval.bytes", "log.index.interval.bytes"),
    ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
    ("max.message.bytes", "message.max.bytes"),
    ("message.timestamp.type", "log.message.timestamp.type"),
    (
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
    ),
    (
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
    ),
    (
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
    ),
    ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
    ("min.insync.replicas", "min.insync.replicas"),
    ("replication.ack.policy", "replication.ack.policy"),
    ("preallocate", "log.preallocate"),
    ("retention.bytes", "log.retention.bytes"),
    ("retention.ms", "log.retention.ms"),
    ("segment.bytes", "log.segment.bytes"),
    ("segment.index.bytes", "log.index.size.max.bytes"),
    ("segment.jitter.ms", "log.roll.jitter.ms"),
    ("segment.ms", "log.roll.ms"),
    ("local.retention.ms", "log.local.retention.ms"),
    ("local.retention.bytes", "log.local.retention.bytes"),
    (
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
    ),
];

/// A set of explicitly set topic configs (name -> value), validated.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicConfigs(pub BTreeMap<String, String>);

/// Why a config could not be set; answered as INVALID_CONFIG (40) with this text.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown topic config `{0}`")]
    Unknown(String),
    #[error("invalid value `{value}` for `{name}`: {why}")]
    Invalid {
        name: String,
        value: String,
        why: String,
    },
    /// A rule over several configs, with Kafka's own message.
    #[error("{0}")]
    Rule(String),
}

impl TopicConfigs {
    /// Validates and sets one value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        validate(name, value)?;
        self.0.insert(name.to_string(), value.to_string());
        Ok(())
    }

    /// Removes an explicitly set value (back to the default).
    pub fn remove(&mut self, name: &str) -> Result<(), ConfigError> {
        if key(name).is_none() {
            return Err(ConfigError::Unknown(name.to_string()));
        }
        self.0.remove(name);
        Ok(())
    }

    /// The explicitly set value, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Effective value: this set, then `defaults`, then Kafka's default.
    pub fn effective<'a>(&'a self, defaults: &'a TopicConfigs, name: &str) -> Option<&'a str> {
        self.get(name)
            .or_else(|| defaults.get(name))
            .or_else(|| key(name).map(|k| k.default))
    }

    /// The log's configuration for a topic with these overrides over `defaults`.
    pub fn log_config(&self, defaults: &TopicConfigs) -> LogConfig {
        let long = |name: &str| -> i64 {
            self.effective(defaults, name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let unsigned = |name: &str| -> u64 { long(name).max(0) as u64 };
        let policy = self
            .effective(defaults, "cleanup.policy")
            .unwrap_or("delete");
        LogConfig {
            cleanup_delete: policy.split(',').any(|p| p.trim() == "delete"),
            cleanup_compact: policy.split(',').any(|p| p.trim() == "compact"),
            min_cleanable_dirty_ratio: self
                .effective(defaults, "min.cleanable.dirty.ratio")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.5),
            min_compaction_lag_ms: long("min.compaction.lag.ms"),
            max_compaction_lag_ms: long("max.compaction.lag.ms"),
            delete_retention_ms: long("delete.retention.ms"),
            segment_bytes: self
                .effective(defaults, INTERNAL_SEGMENT_BYTES)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| unsigned("segment.bytes")),
            segment_ms: long("segment.ms"),
            retention_ms: long("retention.ms"),
            retention_bytes: long("retention.bytes"),
            max_message_bytes: unsigned("max.message.bytes") as usize,
            index_interval_bytes: unsigned("index.interval.bytes") as usize,
            segment_index_bytes: unsigned("segment.index.bytes"),
            flush_messages: unsigned("flush.messages"),
            flush_ms: unsigned("flush.ms"),
            preallocate: self.effective(defaults, "preallocate") == Some("true"),
            message_timestamp_type: match self.effective(defaults, "message.timestamp.type") {
                Some("LogAppendTime") => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            },
            ..LogConfig::default()
        }
    }
}

impl TopicConfigs {
    /// Whether these configs (over `defaults`) make the topic diskless.
    pub fn is_diskless(&self, defaults: &TopicConfigs) -> bool {
        self.effective(defaults, DISKLESS_ENABLE) == Some("true")
    }

    /// The rules of `diskless.enable` (docs/diskless.md, "What a user gets") over a topic's
    /// whole new config set; `previous` is the set before an alter (`None` on create),
    /// `system_enabled` the broker's `remote.log.storage.system.enable` (the bucket).
    ///
    /// Errors ([`ConfigError`], answered INVALID_CONFIG (40)): `diskless.enable` changed by an
    /// alter; `diskless.enable=true` without the bucket, with `remote.storage.enable=true`, with
    /// a compacted `cleanup.policy`, or with `message.timestamp.type=LogAppendTime` (not built).
    pub fn check_diskless(
        &self,
        defaults: &TopicConfigs,
        previous: Option<&TopicConfigs>,
        system_enabled: bool,
    ) -> Result<(), ConfigError> {
        let on = self.is_diskless(defaults);
        if let Some(p) = previous {
            if p.is_diskless(defaults) != on {
                return Err(ConfigError::Rule(format!(
                    "`{DISKLESS_ENABLE}` cannot be changed after the topic is created"
                )));
            }
        }
        if !on {
            return Ok(());
        }
        if !system_enabled {
            return Err(ConfigError::Rule(
                "diskless topics need the broker's bucket: set `remote.log.storage.system.enable=true` and `rsm.config.*`".into(),
            ));
        }
        if self.effective(defaults, REMOTE_STORAGE_ENABLE) == Some("true") {
            return Err(ConfigError::Rule(
                "a diskless topic cannot set `remote.storage.enable=true`".into(),
            ));
        }
        if self
            .effective(defaults, "cleanup.policy")
            .is_some_and(|p| p.to_ascii_lowercase().contains("compact"))
        {
            return Err(ConfigError::Rule(
                "diskless topics cannot be compacted (`cleanup.policy=compact`)".into(),
            ));
        }
        if self.effective(defaults, "message.timestamp.type") == Some("LogAppendTime") {
            return Err(ConfigError::Rule(
                "diskless topics do not support `message.timestamp.type=LogAppendTime` yet".into(),
            ));
        }
        Ok(())
    }

    /// Kafka's tiered-storage rules over a topic's whole new config set (these overrides over
    /// `defaults`, the broker's topic defaults), as `LogConfig.validateTopicLogConfigValues`
    /// applies them (Kafka 4.x, KIP-405 and KIP-950). `previous` is the topic's config set
    /// before an alter (`None` on create); `system_enabled` is the broker's
    /// `remote.log.storage.system.enable`.
    ///
    /// Errors ([`ConfigError`], answered as INVALID_CONFIG (40) with Kafka's text): with
    /// `remote.storage.enable=true`, a broker without tiering, a compacted topic, a local
    /// retention of -1 or above the total one (unless either is unlimited or -2), and with
    /// `remote.log.copy.disable=true` a local retention other than -2 or the total; turning
    /// `remote.storage.enable` off without `remote.log.delete.on.disable=true`.
    pub fn check_tiering(
        &self,
        defaults: &TopicConfigs,
        previous: Option<&TopicConfigs>,
        system_enabled: bool,
    ) -> Result<(), ConfigError> {
        let flag = |name: &str| self.effective(defaults, name) == Some("true");
        let long = |name: &str| -> i64 {
            self.effective(defaults, name)
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(-2)
        };
        if !flag(REMOTE_STORAGE_ENABLE) {
            let was = previous
                .is_some_and(|p| p.effective(defaults, REMOTE_STORAGE_ENABLE) == Some("true"));
            if was && !flag("remote.log.delete.on.disable") {
                return Err(ConfigError::Rule(
                    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`."
                        .into(),
                ));
            }
            return Ok(());
        }
        if !system_enabled {
            return Err(ConfigError::Rule(
                "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
                    .into(),
            ));
        }
        if self
            .effective(defaults, "cleanup.policy")
            .is_some_and(|p| p.to_ascii_lowercase().contains("compact"))
        {
            return Err(ConfigError::Rule(
                "Remote log storage is unsupported for the compacted topics".into(),
            ));
        }
        for (total, local) in LOCAL_RETENTION_PAIRS {
            let (t, l) = (long(total), long(local));
            // Kafka: an unlimited total is `retention.bytes <= -1` but `retention.ms == -1`.
            let unlimited = if total == "retention.bytes" {
                t <= -1
            } else {
                t == -1
            };
            if unlimited || l == -2 {
                continue;
            }
            let why = if l == -1 {
                format!("Value must not be -1 as {total} value is set as {t}.")
            } else if l > t {
                format!("Value must not be more than {total} property value: {t}")
            } else {
                continue;
            };
            return Err(ConfigError::Invalid {
                name: local.into(),
                value: l.to_string(),
                why,
            });
        }
        if flag("remote.log.copy.disable") {
            for (total, local) in LOCAL_RETENTION_PAIRS {
                let (t, l) = (long(total), long(local));
                if l != -2 && l != t {
                    return Err(ConfigError::Rule(format!(
                        "When `remote.log.copy.disable` is set to true, the `{local}` and `{total}` must be set to the identical value because there will be no more logs copied to the remote storage."
                    )));
                }
            }
        }
        Ok(())
    }
}

/// What a produce to a topic must check and do, read on the request path without locking the
/// partition (see [`crate::storage::partition::Partition::produce_policy`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProducePolicy {
    /// `max.message.bytes`: largest batch accepted, bytes (MESSAGE_TOO_LARGE beyond).
    pub max_message_bytes: usize,
    /// `cleanup.policy` contains `compact`: every record needs a key (INVALID_RECORD).
    pub compacted: bool,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` (INVALID_TIMESTAMP beyond), ms.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (INVALID_TIMESTAMP beyond), ms.
    pub timestamp_after_max_ms: i64,
    /// `compression.type`: the codec batches are stored with, `None` for `producer` (as sent).
    pub target_codec: Option<Codec>,
    /// `flush.messages=1`: every append is fsync'ed before it is acknowledged, and the high
    /// watermark follows what is fsync'ed.
    pub flush_every_append: bool,
    /// `min.insync.replicas`: an `acks=all` produce needs this many in-sync replicas
    /// (NOT_ENOUGH_REPLICAS before the append, NOT_ENOUGH_REPLICAS_AFTER_APPEND after).
    pub min_insync_replicas: usize,
    /// `replication.ack.policy=quorum` (issue 34): an `acks=all` record is acknowledged once
    /// `min.insync.replicas` replicas have it, not every in-sync replica
    /// (`frieda_meta::quorum`).
    pub quorum_acks: bool,
}

impl ProducePolicy {
    /// The record checks at `now_ms` (ms since the epoch).
    pub fn record_policy(&self, now_ms: i64) -> RecordPolicy {
        RecordPolicy {
            compacted: self.compacted,
            timestamp_type: self.timestamp_type,
            timestamp_before_max_ms: self.timestamp_before_max_ms,
            timestamp_after_max_ms: self.timestamp_after_max_ms,
            now_ms,
        }
    }
}

impl TopicConfigs {
    /// The produce policy of a topic with these overrides over `defaults`.
    pub fn produce_policy(&self, defaults: &TopicConfigs) -> ProducePolicy {
        let log = self.log_config(defaults);
        let long = |name: &str| -> i64 {
            self.effective(defaults, name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(i64::MAX)
        };
        ProducePolicy {
            max_message_bytes: log.max_message_bytes,
            compacted: log.cleanup_compact,
            timestamp_type: log.message_timestamp_type,
            timestamp_before_max_ms: long("message.timestamp.before.max.ms"),
            timestamp_after_max_ms: long("message.timestamp.after.max.ms"),
            target_codec: self
                .effective(defaults, "compression.type")
                .and_then(Codec::from_topic_config),
            flush_every_append: log.flush_messages <= 1,
            min_insync_replicas: long("min.insync.replicas").clamp(1, i64::from(i16::MAX)) as usize,
            quorum_acks: self.effective(defaults, "replication.ack.policy") == Some("quorum"),
        }
    }
}

fn validate(name: &str, value: &str) -> Result<(), ConfigError> {
    let k = key(name).ok_or_else(|| ConfigError::Unknown(name.to_string()))?;
    let invalid = |why: String| ConfigError::Invalid {
        name: name.to_string(),
        value: value.to_string(),
        why,
    };
    match k.kind {
        ValueKind::Long { min } => {
            let v: i64 = value
                .trim()
                .parse()
                .map_err(|_| invalid("not an integer".into()))?;
            if v < min {
                return Err(invalid(format!("must be at least {min}")));
            }
        }
        ValueKind::Choice(options) => {
            if !options.contains(&value) {
                return Err(invalid(format!("must be one of {}", options.join(", "))));
            }
        }
        ValueKind::Boolean => {
            if value != "true" && value != "false" {
                return Err(invalid("must be true or false".into()));
            }
        }
        ValueKind::ReplicaList => {
            let v = value.trim();
            let pair_ok = |p: &str| {
                p.trim().split_once(':').is_some_and(|(a, b)| {
                    a.trim().parse::<i32>().is_ok() && b.trim().parse::<i32>().is_ok()
                })
            };
            if !(v.is_empty() || v == "*" || v.split(',').all(pair_ok)) {
                return Err(invalid(
                    "must be empty, `*`, or partition:broker pairs separated by commas".into(),
                ));
            }
        }
        ValueKind::Ratio { min, max } => {
            let v: f64 = value
                .trim()
                .parse()
                .map_err(|_| invalid("not a number".into()))?;
            if !(min..=max).contains(&v) {
                return Err(invalid(format!("must be within [{min}, {max}]")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_over_defaults_and_map_to_log_config() {
        let mut defaults = TopicConfigs::default();
        defaults.set("retention.ms", "1000").unwrap();
        defaults.set("segment.bytes", "4194304").unwrap();
        let mut topic = TopicConfigs::default();
        topic.set("segment.bytes", "8388608").unwrap();
        topic
            .set("message.timestamp.type", "LogAppendTime")
            .unwrap();
        let log = topic.log_config(&defaults);
        assert_eq!(log.retention_ms, 1000);
        assert_eq!(log.segment_bytes, 8388608);
        // KIP-1030: below 1 MiB only through Kafka's internal override.
        assert!(topic.set("segment.bytes", "1048575").is_err());
        topic.set(INTERNAL_SEGMENT_BYTES, "4096").unwrap();
        assert_eq!(topic.log_config(&defaults).segment_bytes, 4096);
        topic.remove(INTERNAL_SEGMENT_BYTES).unwrap();
        assert_eq!(log.max_message_bytes, 1048588);
        assert_eq!(log.message_timestamp_type, TimestampType::LogAppendTime);
        assert!(log.cleanup_delete && !log.cleanup_compact);
        topic.set("cleanup.policy", "compact").unwrap();
        topic.set("min.cleanable.dirty.ratio", "0.25").unwrap();
        topic.set("delete.retention.ms", "5000").unwrap();
        let log = topic.log_config(&defaults);
        assert!(!log.cleanup_delete && log.cleanup_compact);
        assert_eq!(log.min_cleanable_dirty_ratio, 0.25);
        assert_eq!(log.delete_retention_ms, 5000);
        assert_eq!(log.max_compaction_lag_ms, i64::MAX);
        topic.set("cleanup.policy", "compact,delete").unwrap();
        let log = topic.log_config(&defaults);
        assert!(log.cleanup_delete && log.cleanup_compact);
        assert!(topic.set("min.cleanable.dirty.ratio", "1.5").is_err());
    }

    #[test]
    fn diskless_is_fixed_at_creation_and_needs_the_bucket() {
        let defaults = TopicConfigs::default();
        let with = |pairs: &[(&str, &str)]| {
            let mut c = TopicConfigs::default();
            for (k, v) in pairs {
                c.set(k, v).unwrap();
            }
            c
        };
        let diskless = with(&[(DISKLESS_ENABLE, "true")]);
        let classic = TopicConfigs::default();
        assert!(diskless.is_diskless(&defaults) && !classic.is_diskless(&defaults));
        assert!(diskless.check_diskless(&defaults, None, true).is_ok());
        assert!(diskless.check_diskless(&defaults, None, false).is_err());
        for refused in [
            with(&[(DISKLESS_ENABLE, "true"), ("cleanup.policy", "compact")]),
            with(&[(DISKLESS_ENABLE, "true"), (REMOTE_STORAGE_ENABLE, "true")]),
            with(&[
                (DISKLESS_ENABLE, "true"),
                ("message.timestamp.type", "LogAppendTime"),
            ]),
        ] {
            assert!(refused.check_diskless(&defaults, None, true).is_err());
        }
        // An alter keeps it (other keys change freely), either way.
        let retention = with(&[(DISKLESS_ENABLE, "true"), ("retention.ms", "1000")]);
        assert!(retention
            .check_diskless(&defaults, Some(&diskless), true)
            .is_ok());
        assert!(classic
            .check_diskless(&defaults, Some(&diskless), true)
            .is_err());
        assert!(diskless
            .check_diskless(&defaults, Some(&classic), true)
            .is_err());
        assert!(classic.check_diskless(&defaults, None, false).is_ok());
    }

    #[test]
    fn tiering_rules_are_kafkas() {
        let defaults = TopicConfigs::default();
        let with = |pairs: &[(&str, &str)]| {
            let mut c = TopicConfigs::default();
            for (k, v) in pairs {
                c.set(k, v).unwrap();
            }
            c
        };
        let tiered = with(&[(REMOTE_STORAGE_ENABLE, "true")]);
        // Refused while the broker does not tier (Kafka's default, and Frieda's only setting).
        let e = tiered.check_tiering(&defaults, None, false).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("Tiered Storage functionality is disabled"));
        assert!(tiered.check_tiering(&defaults, None, true).is_ok());
        // Compacted topics never.
        let compacted = with(&[
            (REMOTE_STORAGE_ENABLE, "true"),
            ("cleanup.policy", "delete,compact"),
        ]);
        assert!(compacted.check_tiering(&defaults, None, true).is_err());
        // Local retention: -1 and above the total refused, -2 and any value under an unlimited
        // total accepted.
        for (pairs, ok) in [
            (
                &[("retention.ms", "1000"), ("local.retention.ms", "-1")][..],
                false,
            ),
            (
                &[("retention.ms", "1000"), ("local.retention.ms", "1001")][..],
                false,
            ),
            (
                &[("retention.ms", "1000"), ("local.retention.ms", "1000")][..],
                true,
            ),
            (
                &[("retention.ms", "-1"), ("local.retention.ms", "5")][..],
                true,
            ),
            (
                &[("retention.bytes", "100"), ("local.retention.bytes", "-1")][..],
                false,
            ),
            (
                &[("retention.bytes", "-1"), ("local.retention.bytes", "-1")][..],
                true,
            ),
            (&[("local.retention.bytes", "7")][..], true),
        ] {
            let mut c = with(pairs);
            c.set(REMOTE_STORAGE_ENABLE, "true").unwrap();
            assert_eq!(
                c.check_tiering(&defaults, None, true).is_ok(),
                ok,
                "{pairs:?}"
            );
        }
        // The local retention defaults to -2 even where the broker sets the total one.
        let broker = with(&[("retention.ms", "1000")]);
        assert!(tiered.check_tiering(&broker, None, true).is_ok());
        let local = with(&[
            (REMOTE_STORAGE_ENABLE, "true"),
            ("local.retention.ms", "2000"),
        ]);
        assert!(local.check_tiering(&broker, None, true).is_err());
        // Copy disabled: the local retention must be the total one.
        let ro = with(&[
            (REMOTE_STORAGE_ENABLE, "true"),
            ("remote.log.copy.disable", "true"),
        ]);
        assert!(ro.check_tiering(&defaults, None, true).is_ok());
        let mut ro_local = ro.clone();
        ro_local.set("local.retention.ms", "5").unwrap();
        assert!(ro_local.check_tiering(&defaults, None, true).is_err());
        // Turning it off needs remote.log.delete.on.disable; a topic that never tiered is free.
        let off = TopicConfigs::default();
        assert!(off.check_tiering(&defaults, Some(&tiered), true).is_err());
        assert!(off.check_tiering(&defaults, Some(&off), false).is_ok());
        let off_delete = with(&[("remote.log.delete.on.disable", "true")]);
        assert!(off_delete
            .check_tiering(&defaults, Some(&tiered), true)
            .is_ok());
    }

    #[test]
    fn bad_values_are_refused() {
        let mut c = TopicConfigs::default();
        assert!(matches!(
            c.set("retention.ms", "x"),
            Err(ConfigError::Invalid { .. })
        ));
        assert!(matches!(
            c.set("retention.ms", "-2"),
            Err(ConfigError::Invalid { .. })
        ));
        assert!(matches!(c.set("nope", "1"), Err(ConfigError::Unknown(_))));
        assert!(matches!(
            c.set("cleanup.policy", "shred"),
            Err(ConfigError::Invalid { .. })
        ));
        assert!(c.0.is_empty());
    }
}
