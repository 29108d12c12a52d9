//! Dynamic broker configs: the topic defaults a running broker takes from
//! `kafka-configs --alter --entity-type brokers (--entity-default | --entity-name ID)` without a
//! restart (Kafka's `DynamicBrokerConfig`/`DynamicLogConfig`, KIP-226). A resource is `""` (the
//! cluster-wide default) or a broker id; a broker's value wins over the default, which wins over
//! the static config file, which wins over Kafka's default.
//!
//! The settings that may change are the broker-level synonyms of topic configs
//! ([`TOPIC_CONFIG_BROKER_SYNONYMS`]: `log.retention.ms`, `log.segment.bytes`,
//! `message.max.bytes`, `log.flush.interval.messages`, `min.insync.replicas`, ...); a change
//! reaches every partition that does not override the topic config itself. Anything else is
//! refused with INVALID_CONFIG ("Cannot update these configs dynamically"). Persisted before
//! applied: on a single broker in `meta/broker-configs.json`, in a cluster through the metadata
//! quorum (the image's `broker_configs`).

use super::AdminError;
use crate::durable;
use crate::storage::topic_config::{TopicConfigs, TOPIC_CONFIG_BROKER_SYNONYMS};
use kafka_protocol::error::ResponseError;
use std::collections::BTreeMap;
use std::path::Path;

/// Dynamic config sets by resource (`""` or a broker id), Kafka broker key names.
pub type BrokerConfigSets = BTreeMap<String, BTreeMap<String, String>>;

/// The cluster-wide default resource.
pub const DEFAULT_RESOURCE: &str = "";
/// File of a single broker's dynamic configs, under `meta/`.
pub const FILE: &str = "broker-configs.json";

/// DescribeConfigs source of a per-broker dynamic value (Kafka's `DYNAMIC_BROKER_CONFIG`).
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
/// DescribeConfigs source of a cluster-default dynamic value (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
pub const SOURCE_DYNAMIC_DEFAULT: i8 = 3;

/// The topic config a dynamic broker key sets, if it may change at run time.
pub fn topic_key(broker_key: &str) -> Option<&'static str> {
    TOPIC_CONFIG_BROKER_SYNONYMS
        .iter()
        .find(|(_, b)| *b == broker_key)
        .map(|(t, _)| *t)
}

/// Checks a resource name: `""` or a broker id.
///
/// Errors: INVALID_REQUEST for anything else.
pub fn check_resource(name: &str) -> Result<(), AdminError> {
    if name == DEFAULT_RESOURCE || name.parse::<i32>().is_ok_and(|id| id >= 0) {
        return Ok(());
    }
    Err(AdminError::new(
        ResponseError::InvalidRequest,
        format!(
            "invalid broker resource name `{name}`: a broker id, or empty for the cluster default"
        ),
    ))
}

/// Checks a whole new config set of one resource.
///
/// Errors: INVALID_REQUEST (as Kafka's `DynamicBrokerConfig.validateConfigs`, whose
/// `ConfigException` the controller answers with INVALID_REQUEST) naming the keys that cannot
/// change at run time, or a value the topic config refuses.
pub fn validate(configs: &BTreeMap<String, String>) -> Result<(), AdminError> {
    let fixed: Vec<&str> = configs
        .keys()
        .map(String::as_str)
        .filter(|k| topic_key(k).is_none())
        .collect();
    if !fixed.is_empty() {
        return Err(AdminError::new(
            ResponseError::InvalidRequest,
            format!(
                "Cannot update these configs dynamically: [{}] (only the broker-level topic defaults such as log.retention.ms can change at run time)",
                fixed.join(", ")
            ),
        ));
    }
    let mut probe = TopicConfigs::default();
    for (k, v) in configs {
        let t = topic_key(k).unwrap_or(k);
        probe.set(t, v).map_err(|e| {
            AdminError::new(
                ResponseError::InvalidRequest,
                format!("Invalid value {v} for configuration {k}: {e}"),
            )
        })?;
    }
    Ok(())
}

/// The topic defaults in force on broker `node_id`: `static_defaults`, then the cluster default
/// resource, then this broker's (values that no longer validate are skipped with a warning).
pub fn effective_defaults(
    static_defaults: &TopicConfigs,
    sets: &BrokerConfigSets,
    node_id: i32,
) -> TopicConfigs {
    let mut out = static_defaults.clone();
    for resource in [DEFAULT_RESOURCE.to_string(), node_id.to_string()] {
        for (k, v) in sets.get(&resource).into_iter().flatten() {
            let Some(t) = topic_key(k) else { continue };
            if let Err(e) = out.set(t, v) {
                tracing::warn!(key = %k, value = %v, error = %e, "ignoring a dynamic broker config");
            }
        }
    }
    out
}

/// Broker `node_id`'s dynamic values of `broker_key`, the one in force first: this broker's
/// (source DYNAMIC_BROKER_CONFIG), then the cluster default's (DYNAMIC_DEFAULT_BROKER_CONFIG);
/// DescribeConfigs lists both as synonyms.
pub fn dynamic_values<'a>(
    sets: &'a BrokerConfigSets,
    node_id: i32,
    broker_key: &str,
) -> Vec<(i8, &'a str)> {
    [
        (node_id.to_string(), SOURCE_DYNAMIC_BROKER),
        (DEFAULT_RESOURCE.to_string(), SOURCE_DYNAMIC_DEFAULT),
    ]
    .into_iter()
    .filter_map(|(resource, source)| {
        sets.get(&resource)
            .and_then(|c| c.get(broker_key))
            .map(|v| (source, v.as_str()))
    })
    .collect()
}

/// Reads a single broker's `meta/broker-configs.json` (missing: none).
///
/// Errors: the file exists but is unreadable or not JSON of the right shape (named, so the
/// broker refuses to start rather than silently drop settings an operator made).
pub fn load(meta_dir: &Path) -> anyhow::Result<BrokerConfigSets> {
    durable::read_json(&meta_dir.join(FILE))
}

/// Writes a single broker's dynamic configs durably (before they are applied).
///
/// Errors: the write failed before its commit point (nothing changed); past it the broker halts
/// ([`durable::halt`]), as for topic metadata.
pub fn persist(meta_dir: &Path, sets: &BrokerConfigSets) -> std::io::Result<()> {
    durable::write_json_or_halt(
        &meta_dir.join(FILE),
        sets,
        "writing the dynamic broker configs",
    )
}

impl super::Broker {
    /// The topic defaults in force (static ones with the dynamic broker configs over them).
    pub fn topic_defaults(&self) -> std::sync::Arc<TopicConfigs> {
        self.topic_defaults.read().clone()
    }

    /// The dynamic broker configs in force, by resource.
    pub fn dynamic_configs(&self) -> BrokerConfigSets {
        self.dynamic_configs.read().clone()
    }

    /// Applies `topic`'s explicit configs over the topic defaults in force to each of its local
    /// partitions (the offsets topic keeps its unbounded record size and no tail cache).
    pub(crate) fn apply_topic_configs(&self, topic: &super::Topic) {
        let defaults = self.topic_defaults();
        let configs = topic.configs.read().clone();
        let log_config = configs.log_config(&defaults);
        let policy = configs.produce_policy(&defaults);
        for p in topic.local_partitions() {
            let mut c = log_config.clone();
            if topic.is_internal() {
                c.max_message_bytes = usize::MAX / 2;
                c.tail_cache_bytes = 0;
            }
            p.set_configs(c, policy);
        }
    }

    /// Takes `sets` as the dynamic configs in force: recomputes the topic defaults and, if they
    /// changed, applies them to every partition. Idempotent (the cluster's reconciler calls it
    /// with every image).
    pub fn apply_dynamic_configs(&self, sets: &BrokerConfigSets) {
        if *self.dynamic_configs.read() == *sets {
            return;
        }
        let defaults = effective_defaults(&self.config.topic_defaults, sets, self.config.node_id);
        *self.dynamic_configs.write() = sets.clone();
        let changed = *self.topic_defaults() != defaults;
        *self.topic_defaults.write() = std::sync::Arc::new(defaults);
        if changed {
            for t in self.topics() {
                self.apply_topic_configs(&t);
            }
            tracing::info!(configs = ?sets, "applied dynamic broker configs");
        }
    }

    /// Replaces the dynamic configs of broker resource `resource` (`""`: the cluster default)
    /// with `configs` (validated here), persisted first (single broker: `meta/`; cluster: the
    /// metadata quorum) and then applied. `validate_only` checks without changing anything.
    ///
    /// Errors: INVALID_REQUEST for a bad resource name, INVALID_CONFIG for keys that cannot
    /// change at run time or bad values, KAFKA_STORAGE_ERROR when the file cannot be written,
    /// REQUEST_TIMED_OUT without a controller.
    pub async fn set_broker_configs(
        self: &std::sync::Arc<Self>,
        resource: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), AdminError> {
        check_resource(resource)?;
        validate(&configs)?;
        if validate_only {
            return Ok(());
        }
        if let Some(node) = self.cluster() {
            return self
                .cluster_set_broker_configs(node, resource, configs)
                .await;
        }
        let _admin = self.admin.lock().await;
        let mut sets = self.dynamic_configs();
        if configs.is_empty() {
            sets.remove(resource);
        } else {
            sets.insert(resource.to_string(), configs);
        }
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            persist(&broker.meta_dir, &sets)?;
            broker.apply_dynamic_configs(&sets);
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_then_per_broker_over_static() {
        let mut st = TopicConfigs::default();
        st.set("retention.ms", "1000").unwrap();
        st.set("segment.bytes", "2000000").unwrap();
        let mut sets = BrokerConfigSets::new();
        sets.entry("".into())
            .or_default()
            .insert("log.retention.ms".into(), "5000".into());
        sets.entry("2".into())
            .or_default()
            .insert("log.retention.ms".into(), "7000".into());
        let on1 = effective_defaults(&st, &sets, 1);
        let on2 = effective_defaults(&st, &sets, 2);
        assert_eq!(on1.0.get("retention.ms").map(String::as_str), Some("5000"));
        assert_eq!(on2.0.get("retention.ms").map(String::as_str), Some("7000"));
        assert_eq!(
            on1.0.get("segment.bytes").map(String::as_str),
            Some("2000000")
        );
        assert_eq!(
            dynamic_values(&sets, 2, "log.retention.ms"),
            [
                (SOURCE_DYNAMIC_BROKER, "7000"),
                (SOURCE_DYNAMIC_DEFAULT, "5000")
            ]
        );
        assert_eq!(
            dynamic_values(&sets, 1, "log.retention.ms"),
            [(SOURCE_DYNAMIC_DEFAULT, "5000")]
        );
        assert_eq!(dynamic_values(&sets, 1, "log.segment.bytes"), []);
    }

    #[test]
    fn only_topic_defaults_change_at_run_time() {
        let ok: BTreeMap<String, String> =
            [("log.retention.ms".to_string(), "60000".to_string())].into();
        assert!(validate(&ok).is_ok());
        let fixed: BTreeMap<String, String> =
            [("num.partitions".to_string(), "3".to_string())].into();
        let e = validate(&fixed).unwrap_err();
        assert_eq!(e.code, ResponseError::InvalidRequest);
        assert!(e.message.contains("num.partitions"), "{}", e.message);
        let bad: BTreeMap<String, String> =
            [("log.retention.ms".to_string(), "soon".to_string())].into();
        assert_eq!(
            validate(&bad).unwrap_err().code,
            ResponseError::InvalidRequest
        );
        assert!(check_resource("").is_ok() && check_resource("3").is_ok());
        assert!(check_resource("broker-3").is_err());
    }
}
