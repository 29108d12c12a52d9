//! Config files and command-line overrides as a list of settings (`key`, `value` as text), and
//! the names they may use.
//!
//! Two formats: Kafka's Java-properties `server.properties` (any file not ending in `.toml`;
//! Kafka's own shipped KRaft file starts a broker unchanged) and TOML (`*.toml`, the format
//! Frieda started with). Both yield the same settings, applied by `BrokerConfig::from_settings`.
//!
//! Names: a key is Frieda's (it changes something), Kafka's without meaning here (one of
//! Apache Kafka 4.4.0's 379 broker settings, [`KAFKA_BROKER_KEYS`], accepted with one warning
//! listing them all), or neither (refused, every such key in one message, each with the nearest
//! known name when one is close: "did you mean").

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::path::Path;

/// Every broker setting of Apache Kafka 4.4.0 (`kafka.server.KafkaConfig.configNames()`), one per
/// line; regenerate with `scripts/kafka-config-keys 4.4.0`.
const KAFKA_BROKER_KEYS_TXT: &str = include_str!("kafka-4.4.0-broker-keys.txt");

/// Prefixes under which Kafka hands settings to plugins or scopes them: per-listener settings
/// (`listener.name.<l>.`), the remote storage and remote log metadata managers' own settings
/// (`rsm.config.`, `rlmm.config.`: KIP-405's default `remote.log.*.impl.prefix`).
const KAFKA_KEY_PREFIXES: &[&str] = &["listener.name.", "rsm.config.", "rlmm.config."];

/// Settings only Frieda has (not Kafka broker settings), for "did you mean". Each is accepted by
/// `BrokerConfig::from_settings` (a unit test checks it).
pub const FRIEDA_ONLY_KEYS: &[&str] = &[
    "listen",
    "data.dir",
    "advertised.listener",
    "max.inflight.requests.per.connection",
    "request.read.timeout.ms",
    "log.writer.threads",
    "backlog.read.threads",
    "backlog.read.priority",
    "backlog.read.max.bytes.per.second",
    "bulk.append.min.bytes",
    "bulk.append.priority",
    "overlapped.processing",
    "response.vectored.writes",
    "fetch.zero.copy",
    "metrics.listen",
    "log.append.mode",
    "log.group.commit",
    "fetch.batched.wakeups",
    "max.partitions.per.topic",
    "max.broker.partitions",
    "log.segment.files.max",
    "log.segment.ms.min",
    "replica.stall.max.ms",
    "leader.placement",
    "leader.placement.check.interval.ms",
    "leader.placement.max.moves.per.minute",
    "offsets.retention.ms",
    "ssl.reload.check.interval.ms",
    "log.format",
    "log.file",
    "log.file.rotation",
    "log.file.max.files",
];

/// Whether `key` is one of Apache Kafka 4.4.0's broker settings (or under one of Kafka's
/// plugin and listener prefixes).
pub fn is_kafka_broker_key(key: &str) -> bool {
    KAFKA_BROKER_KEYS_TXT.lines().any(|k| k == key)
        || KAFKA_KEY_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Apache Kafka 4.4.0's broker settings, sorted.
pub fn kafka_broker_keys() -> impl Iterator<Item = &'static str> {
    KAFKA_BROKER_KEYS_TXT.lines().filter(|l| !l.is_empty())
}

/// The known name nearest to an unknown `key`, when it is close enough to be a typo (edit
/// distance at most 2, or 3 for names of 16 characters or more).
pub fn did_you_mean<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = if key.len() >= 16 { 3 } else { 2 };
    known
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

/// The settings of a config file: TOML when the name ends in `.toml`, else Java properties.
///
/// Errors: the file cannot be read or does not parse (naming the file and, for TOML, the line).
pub fn read_settings(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    let toml = path.extension().is_some_and(|e| e == "toml");
    let parsed = if toml {
        toml_settings(&text)
    } else {
        properties_settings(&text)
    };
    parsed.with_context(|| format!("in config file {}", path.display()))
}

/// TOML text as settings: dotted tables flattened (`[log] "retention.ms" = 1` is
/// `log.retention.ms`), strings as they are, other values as TOML writes them.
pub fn toml_settings(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let table: toml::Table = text.parse().context("invalid TOML")?;
    let mut flat = BTreeMap::new();
    flatten("", &table, &mut flat);
    Ok(flat.into_iter().collect())
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(&key, t, out),
            toml::Value::String(s) => {
                out.insert(key, s.clone());
            }
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
}

/// Java-properties text as settings, in file order (`java.util.Properties.load`: `#` and `!`
/// comments, `=`, `:` or blanks between key and value, `\` line continuations, `\uXXXX` and
/// other escapes), values trimmed as Kafka's `ConfigDef` trims them. A key given twice keeps
/// its last value, as in Java.
///
/// Errors: malformed escapes, naming the line.
pub fn properties_settings(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    java_properties::PropertiesIter::new(text.as_bytes())
        .read_into(|k, v| {
            let v = v.trim().to_string();
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        })
        .map_err(|e| anyhow::anyhow!("invalid properties file: {e}"))?;
    Ok(out)
}

/// `--override key=value` arguments (as `kafka-server-start.sh --override`).
///
/// Errors: an argument without `=` or with an empty key.
pub fn parse_overrides(args: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => bail!("--override `{a}`: expected key=value"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_key_list_is_kafka_4_4s() {
        assert_eq!(kafka_broker_keys().count(), 379);
        for k in [
            "num.io.threads",
            "num.recovery.threads.per.data.dir",
            "controller.quorum.bootstrap.servers",
            "share.coordinator.state.topic.replication.factor",
        ] {
            assert!(is_kafka_broker_key(k), "{k}");
        }
        assert!(is_kafka_broker_key(
            "listener.name.internal.ssl.keystore.location"
        ));
        assert!(is_kafka_broker_key("rsm.config.storage.s3.bucket.name"));
        assert!(!is_kafka_broker_key("num.io.thread"));
        assert!(!is_kafka_broker_key("listen"));
    }

    #[test]
    fn near_misses_get_a_suggestion() {
        let known = || kafka_broker_keys().chain(FRIEDA_ONLY_KEYS.iter().copied());
        assert_eq!(
            did_you_mean("num.partition", known()),
            Some("num.partitions")
        );
        assert_eq!(
            did_you_mean("log.retention.hour", known()),
            Some("log.retention.hours")
        );
        assert_eq!(
            did_you_mean("metrics.listn", known()),
            Some("metrics.listen")
        );
        assert_eq!(did_you_mean("completely.different", known()), None);
    }

    #[test]
    fn properties_follow_java_rules() {
        let s = properties_settings(
            "# comment\n! also a comment\nprocess.roles=broker,controller\n\
             listeners = PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\n\
             node.id:1\nlog.dirs /tmp/x\nnum.partitions=1\nnum.partitions=3  \n\
             sasl.jaas.config=a\\u0020b\n",
        )
        .unwrap();
        let get = |k: &str| s.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("process.roles"), Some("broker,controller"));
        assert_eq!(
            get("listeners"),
            Some("PLAINTEXT://:9092,CONTROLLER://:9093")
        );
        assert_eq!(get("node.id"), Some("1"));
        assert_eq!(get("log.dirs"), Some("/tmp/x"));
        assert_eq!(get("num.partitions"), Some("3"));
        assert_eq!(get("sasl.jaas.config"), Some("a b"));
        assert_eq!(s.len(), 6);
    }

    #[test]
    fn toml_and_properties_give_the_same_settings() {
        let t = toml_settings("\"num.partitions\" = 3\nlog.retention.ms = 1000\n").unwrap();
        let p = properties_settings("num.partitions=3\nlog.retention.ms=1000\n").unwrap();
        let sorted = |mut v: Vec<(String, String)>| {
            v.sort();
            v
        };
        assert_eq!(sorted(t), sorted(p));
    }

    #[test]
    fn overrides_need_key_and_value() {
        let o =
            parse_overrides(&["node.id=2".into(), "listeners=PLAINTEXT://:1=2".into()]).unwrap();
        assert_eq!(o[1], ("listeners".into(), "PLAINTEXT://:1=2".into()));
        assert!(parse_overrides(&["node.id".into()]).is_err());
        assert!(parse_overrides(&["=3".into()]).is_err());
    }
}
