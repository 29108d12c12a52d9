//! DescribeConfigs (key 32, v1-4), AlterConfigs (key 33, v0-2) and IncrementalAlterConfigs
//! (key 44, v0-1, KIP-339) for topics and brokers (the dynamic broker configs: see
//! [`crate::broker::dynamic_config`]).

use super::{str_bytes, RequestContext};
use crate::broker::dynamic_config::BrokerConfigSets;
use crate::broker::{dynamic_config, AdminError, Broker};
use crate::config::BrokerConfig;
use crate::storage::topic_config::{
    TopicConfigs, ValueKind, TOPIC_CONFIG_BROKER_SYNONYMS, TOPIC_CONFIG_KEYS,
};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use std::sync::Arc;

/// Resource type TOPIC in the config APIs.
pub const RESOURCE_TOPIC: i8 = 2;
/// Resource type BROKER in the config APIs.
pub const RESOURCE_BROKER: i8 = 4;
/// ConfigResource type BROKER_LOGGER (KIP-412): a broker's log levels.
pub const RESOURCE_BROKER_LOGGER: i8 = 8;
/// ConfigResource type GROUP: a group's configs (KIP-848; [`crate::coordinator::group::config`]).
pub use crate::coordinator::group::config::RESOURCE_GROUP;
/// Config source DYNAMIC_BROKER_LOGGER_CONFIG.
const SOURCE_DYNAMIC_BROKER_LOGGER: i8 = 6;

// Config sources (DescribeConfigs v1+; Kafka's `DescribeConfigsResponse.ConfigSource`).
const SOURCE_TOPIC: i8 = 1;
const SOURCE_DYNAMIC_DEFAULT: i8 = dynamic_config::SOURCE_DYNAMIC_DEFAULT;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

// Config types (DescribeConfigs v3+).
const TYPE_BOOLEAN: i8 = 1;
const TYPE_STRING: i8 = 2;
const TYPE_INT: i8 = 3;
const TYPE_LONG: i8 = 5;
const TYPE_DOUBLE: i8 = 6;
const TYPE_LIST: i8 = 7;
const TYPE_CLASS: i8 = 8;

/// One described config value.
pub struct ConfigEntry {
    /// Kafka name.
    pub name: StrBytes,
    /// Effective value.
    pub value: Option<StrBytes>,
    /// Where it comes from (1 topic, 2 this broker's dynamic config, 3 the cluster's dynamic
    /// default, 4 static broker config, 5 default).
    pub config_source: i8,
    /// Value type (v3+).
    pub config_type: i8,
    /// Every place the value is defined, highest precedence first, the first being the one in
    /// force (DescribeConfigs `include_synonyms`, v1+; KIP-226): for a topic config its
    /// override, then the broker-level synonym's dynamic per-broker, dynamic cluster-default,
    /// static and default values.
    pub synonyms: Vec<Synonym>,
}

/// One place a config value is defined (DescribeConfigs v1+ `Synonyms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    /// The key there (a topic config's broker-level synonym for broker-level values).
    pub name: StrBytes,
    /// Its value there.
    pub value: Option<StrBytes>,
    /// The source (as [`ConfigEntry::config_source`]).
    pub source: i8,
}

impl Synonym {
    fn new(name: &str, value: Option<&str>, source: i8) -> Self {
        Synonym {
            name: str_bytes(name),
            value: value.map(str_bytes),
            source,
        }
    }
}

/// Topic configs whose broker-level synonym has no default in Kafka (`log.retention.ms`,
/// `log.roll.ms`, `log.roll.jitter.ms` and `log.flush.interval.ms` are null; the hours forms
/// carry the defaults): Kafka lists no DEFAULT_CONFIG synonym for them (Kafka 4.3.1 observed,
/// `kafka-configs --describe --all`).
const NO_BROKER_DEFAULT: &[&str] = &[
    "retention.ms",
    "segment.ms",
    "segment.jitter.ms",
    "flush.ms",
];

/// Where a topic's values come from when the topic does not set them, highest precedence
/// first (Kafka's `DynamicBrokerConfig` layering, KIP-226).
#[derive(Clone, Copy)]
pub struct Inherited<'a> {
    /// The dynamic broker configs in force and this broker's id (per-broker values win over the
    /// cluster default); `None` when only the static file counts (`frieda check`).
    pub dynamic: Option<(&'a BrokerConfigSets, i32)>,
    /// The topic defaults the static config file sets.
    pub static_defaults: &'a TopicConfigs,
}

impl Inherited<'_> {
    /// The synonyms of topic config `key` below the topic itself.
    fn synonyms(&self, key: &crate::storage::topic_config::TopicConfigKey) -> Vec<Synonym> {
        let broker_key = TOPIC_CONFIG_BROKER_SYNONYMS
            .iter()
            .find(|(t, _)| *t == key.name)
            .map(|(_, b)| *b);
        let mut out = Vec::new();
        if let (Some(b), Some((sets, node_id))) = (broker_key, self.dynamic) {
            for (source, v) in dynamic_config::dynamic_values(sets, node_id, b) {
                // As `effective_defaults`: a value that no longer validates is not in force.
                if TopicConfigs::default().set(key.name, v).is_ok() {
                    out.push(Synonym::new(b, Some(v), source));
                }
            }
        }
        // Topic configs without a broker-level synonym (the throttled-replica lists) have none.
        let Some(name) = broker_key else {
            return out;
        };
        if let Some(v) = self.static_defaults.get(key.name) {
            out.push(Synonym::new(name, Some(v), SOURCE_STATIC_BROKER));
        }
        if !NO_BROKER_DEFAULT.contains(&key.name) {
            out.push(Synonym::new(name, Some(key.default), SOURCE_DEFAULT));
        }
        out
    }
}

/// The effective configs of a topic: its overrides, then what it inherits (the broker's
/// dynamic and static topic defaults, then Kafka's defaults), each with its synonyms. `only`
/// restricts to the named keys.
pub fn topic_config_entries(
    configs: &TopicConfigs,
    inherited: Inherited<'_>,
    only: Option<&[StrBytes]>,
) -> Vec<ConfigEntry> {
    TOPIC_CONFIG_KEYS
        .iter()
        .filter(|k| only.is_none_or(|o| o.iter().any(|n| n.as_str() == k.name)))
        // Kafka reports its internal override only where it is set.
        .filter(|k| {
            k.name != crate::storage::topic_config::INTERNAL_SEGMENT_BYTES
                || configs.get(k.name).is_some()
        })
        .map(|k| {
            let mut synonyms = Vec::new();
            if let Some(v) = configs.get(k.name) {
                synonyms.push(Synonym::new(k.name, Some(v), SOURCE_TOPIC));
            }
            synonyms.extend(inherited.synonyms(k));
            let (value, source) = synonyms
                .first()
                .map_or((Some(str_bytes(k.default)), SOURCE_DEFAULT), |s| {
                    (s.value.clone(), s.source)
                });
            ConfigEntry {
                name: str_bytes(k.name),
                value,
                config_source: source,
                config_type: match k.kind {
                    ValueKind::Long { .. } => TYPE_LONG,
                    ValueKind::Boolean => TYPE_BOOLEAN,
                    ValueKind::Choice(_) if k.name == "cleanup.policy" => TYPE_LIST,
                    ValueKind::Choice(_) => TYPE_STRING,
                    ValueKind::Ratio { .. } => TYPE_DOUBLE,
                    ValueKind::ReplicaList => TYPE_LIST,
                },
                synonyms,
            }
        })
        .collect()
}

/// The broker's configs under Kafka's broker config names, with the values in force: the
/// settings Frieda implements (listeners, identity, limits, the cluster's KRaft and replication
/// settings, the group coordinator's, the cleaner's) and every topic default under its broker
/// synonym ([`TOPIC_CONFIG_BROKER_SYNONYMS`]). Kafka lists ~340 keys, most for features Frieda
/// does not have (SASL, SSL, tiered storage, share groups, ...); those are not listed rather
/// than listed with values that would not be true.
pub fn broker_config_entries(c: &BrokerConfig) -> Vec<ConfigEntry> {
    let k = &c.cluster;
    let g = &c.coordinator;
    let join = |v: Vec<String>| v.join(",");
    let listeners = join(c.listeners.iter().map(|e| e.to_string()).collect());
    let advertised = join(
        c.advertised_endpoints()
            .into_iter()
            .map(|(name, host, port)| format!("{name}://{host}:{port}"))
            .collect(),
    );
    let roles = match (k.broker, k.controller) {
        (true, true) => "broker,controller",
        (false, true) => "controller",
        _ => "broker",
    };
    let voters = join(
        k.voters
            .iter()
            .map(|(id, addr)| format!("{id}@{addr}"))
            .collect(),
    );
    let protocol_map = join(
        c.security_protocol_map
            .iter()
            .map(|(l, p)| format!("{l}:{p}"))
            .collect(),
    );
    let mut entries: Vec<ConfigEntry> = [
        ("node.id", c.node_id.to_string(), TYPE_LONG),
        ("broker.id", c.node_id.to_string(), TYPE_LONG),
        ("process.roles", roles.to_string(), TYPE_LIST),
        ("listeners", listeners, TYPE_STRING),
        ("advertised.listeners", advertised, TYPE_STRING),
        ("listener.security.protocol.map", protocol_map, TYPE_STRING),
        (
            "controller.listener.names",
            join(k.controller_listener_names.clone()),
            TYPE_STRING,
        ),
        ("controller.quorum.voters", voters, TYPE_LIST),
        (
            "controller.quorum.bootstrap.servers",
            join(k.bootstrap_servers.clone()),
            TYPE_LIST,
        ),
        ("log.dirs", c.data_dir.display().to_string(), TYPE_STRING),
        ("log.dir", c.data_dir.display().to_string(), TYPE_STRING),
        ("num.partitions", c.num_partitions.to_string(), TYPE_LONG),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
            TYPE_LONG,
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            TYPE_BOOLEAN,
        ),
        ("delete.topic.enable", "true".to_string(), TYPE_BOOLEAN),
        (
            "remote.log.storage.system.enable",
            c.tiered.enabled.to_string(),
            TYPE_BOOLEAN,
        ),
        (
            "remote.log.manager.task.interval.ms",
            c.tiered.task_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "socket.request.max.bytes",
            c.max_request_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "queued.max.request.bytes",
            c.queued_max_request_bytes.to_string(),
            TYPE_LONG,
        ),
        ("max.connections", c.max_connections.to_string(), TYPE_LONG),
        (
            "connections.max.idle.ms",
            c.connections_max_idle_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "num.network.threads",
            c.network_threads.to_string(),
            TYPE_LONG,
        ),
        ("fetch.max.bytes", c.fetch_max_bytes.to_string(), TYPE_LONG),
        (
            "metrics.listen",
            c.metrics_listen.map(|a| a.to_string()).unwrap_or_default(),
            TYPE_STRING,
        ),
        (
            "log.retention.check.interval.ms",
            c.retention_check_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "log.flush.offset.checkpoint.interval.ms",
            c.recovery_checkpoint_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "producer.id.expiration.ms",
            c.producer_id_expiration_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "offsets.topic.segment.bytes",
            c.offsets_topic_segment_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.max.timeout.ms",
            c.transactions.max_timeout_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            c.transactions.abort_check_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "transactional.id.expiration.ms",
            c.transactions.id_expiration_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            c.transactions.remove_expired_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.state.log.num.partitions",
            c.transactions.num_partitions.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.state.log.replication.factor",
            c.transactions.replication_factor.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.state.log.min.isr",
            c.transactions.min_isr.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.state.log.segment.bytes",
            c.transactions.segment_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "transaction.partition.verification.enable",
            c.transactions.partition_verification.to_string(),
            TYPE_BOOLEAN,
        ),
        (
            "max.partitions.per.topic",
            c.max_partitions_per_topic.to_string(),
            TYPE_LONG,
        ),
        (
            "max.broker.partitions",
            c.max_broker_partitions.to_string(),
            TYPE_LONG,
        ),
        (
            "log.segment.files.max",
            frieda_log::limits::open_files_budget()
                .min(i64::MAX as usize)
                .to_string(),
            TYPE_LONG,
        ),
        (
            "log.segment.ms.min",
            c.log_segment_ms_min.to_string(),
            TYPE_LONG,
        ),
        (
            "log.cleaner.enable",
            c.cleaner.enable.to_string(),
            TYPE_BOOLEAN,
        ),
        (
            "log.cleaner.backoff.ms",
            c.cleaner.backoff_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "log.cleaner.dedupe.buffer.size",
            c.cleaner.dedupe_buffer_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "log.cleaner.io.max.bytes.per.second",
            // unlimited is Java's Double.MAX_VALUE, as Kafka prints it
            if c.cleaner.io_max_bytes_per_second.is_finite() {
                c.cleaner.io_max_bytes_per_second.to_string()
            } else {
                "1.7976931348623157E308".to_string()
            },
            TYPE_DOUBLE,
        ),
        (
            "group.initial.rebalance.delay.ms",
            g.group.initial_rebalance_delay.as_millis().to_string(),
            TYPE_LONG,
        ),
        (
            "group.min.session.timeout.ms",
            g.group.min_session_timeout.as_millis().to_string(),
            TYPE_LONG,
        ),
        (
            "group.max.session.timeout.ms",
            g.group.max_session_timeout.as_millis().to_string(),
            TYPE_LONG,
        ),
        (
            "offsets.retention.minutes",
            (g.offsets_retention_ms / 60_000).to_string(),
            TYPE_LONG,
        ),
        (
            "offsets.retention.check.interval.ms",
            g.offsets_retention_check_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "offset.metadata.max.bytes",
            g.offset_metadata_max_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "broker.session.timeout.ms",
            k.broker_session_timeout_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "broker.heartbeat.interval.ms",
            k.broker_heartbeat_interval_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "controller.quorum.election.timeout.ms",
            k.election_timeout_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "replica.lag.time.max.ms",
            k.replica_lag_time_max_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "replica.stall.max.ms",
            k.replica_stall_max_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "leader.placement",
            k.leader_placement.mode.name().to_string(),
            TYPE_STRING,
        ),
        (
            "leader.placement.check.interval.ms",
            k.leader_placement.check_interval.as_millis().to_string(),
            TYPE_LONG,
        ),
        (
            "leader.placement.max.moves.per.minute",
            k.leader_placement.max_moves_per_minute.to_string(),
            TYPE_LONG,
        ),
        (
            "replica.fetch.wait.max.ms",
            k.replica_fetch_wait_max_ms.to_string(),
            TYPE_LONG,
        ),
        (
            "replica.fetch.max.bytes",
            k.replica_fetch_max_bytes.to_string(),
            TYPE_LONG,
        ),
        (
            "offsets.topic.replication.factor",
            k.offsets_topic_replication_factor.to_string(),
            TYPE_LONG,
        ),
        (
            "offsets.topic.num.partitions",
            k.offsets_topic_num_partitions.to_string(),
            TYPE_LONG,
        ),
        (
            "auto.leader.rebalance.enable",
            k.auto_leader_rebalance.to_string(),
            TYPE_BOOLEAN,
        ),
        (
            "leader.imbalance.check.interval.seconds",
            (k.leader_imbalance_check_interval_ms / 1000).to_string(),
            TYPE_LONG,
        ),
        (
            "leader.imbalance.per.broker.percentage",
            k.leader_imbalance_per_broker_percentage.to_string(),
            TYPE_LONG,
        ),
    ]
    .into_iter()
    .map(|(n, v, t)| static_entry(n, Some(&v), t))
    .collect();
    entries.push(static_or_default(
        "broker.rack",
        c.rack.as_deref(),
        TYPE_STRING,
    ));
    entries.push(static_or_default(
        "replica.selector.class",
        c.replica_selector.class_name(),
        TYPE_CLASS,
    ));
    // Security settings (sensitive values null, as Kafka reports them).
    for (name, value) in c.security.describe() {
        if entries.iter().any(|x| x.name.as_str() == name) {
            continue;
        }
        entries.push(static_entry(&name, value.as_deref(), TYPE_STRING));
    }
    if let Some(name) = &c.cluster.inter_broker_listener_name {
        entries.push(static_entry(
            "inter.broker.listener.name",
            Some(name),
            TYPE_STRING,
        ));
    }
    let inherited = Inherited {
        dynamic: None,
        static_defaults: &c.topic_defaults,
    };
    for mut e in topic_config_entries(&TopicConfigs::default(), inherited, None) {
        let Some((_, synonym)) = TOPIC_CONFIG_BROKER_SYNONYMS
            .iter()
            .find(|(topic_key, _)| *topic_key == e.name.as_str())
        else {
            continue;
        };
        if entries.iter().any(|x| x.name.as_str() == *synonym) {
            continue;
        }
        e.name = str_bytes(synonym);
        entries.push(e);
    }
    entries
}

/// A value of the static config file (STATIC_BROKER_CONFIG), its only synonym itself.
/// A static setting that is `value` when set, else unset: null with a default-source synonym, as
/// Kafka reports an unset `broker.rack` or `replica.selector.class`.
fn static_or_default(name: &str, value: Option<&str>, config_type: i8) -> ConfigEntry {
    match value {
        Some(v) => static_entry(name, Some(v), config_type),
        None => ConfigEntry {
            name: str_bytes(name),
            value: None,
            config_source: SOURCE_DEFAULT,
            config_type,
            synonyms: vec![Synonym::new(name, None, SOURCE_DEFAULT)],
        },
    }
}

fn static_entry(name: &str, value: Option<&str>, config_type: i8) -> ConfigEntry {
    ConfigEntry {
        name: str_bytes(name),
        value: value.map(str_bytes),
        config_source: SOURCE_STATIC_BROKER,
        config_type,
        synonyms: vec![Synonym::new(name, value, SOURCE_STATIC_BROKER)],
    }
}

/// Checks `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config resource as Kafka does:
/// on the topic for a topic (TOPIC_AUTHORIZATION_FAILED), on the cluster for a broker or broker
/// logger (CLUSTER_AUTHORIZATION_FAILED), on the group for a group (GROUP_AUTHORIZATION_FAILED).
fn config_access(
    broker: &Broker,
    ctx: &RequestContext,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> Result<(), AdminError> {
    use crate::security::acl::{resource, CLUSTER_NAME};
    let (acl_type, acl_name, denied) = match resource_type {
        RESOURCE_TOPIC => (
            resource::TOPIC,
            name,
            ResponseError::TopicAuthorizationFailed,
        ),
        RESOURCE_GROUP => (
            resource::GROUP,
            name,
            ResponseError::GroupAuthorizationFailed,
        ),
        _ => (
            resource::CLUSTER,
            CLUSTER_NAME,
            ResponseError::ClusterAuthorizationFailed,
        ),
    };
    if super::authorized(broker, ctx, operation, acl_type, acl_name) {
        Ok(())
    } else {
        Err(AdminError::new(denied, "Authorization failed."))
    }
}

/// Describes topics and the broker. Errors per resource: UNKNOWN_TOPIC_OR_PARTITION (3),
/// INVALID_REQUEST (42) for other resource types or another broker's id,
/// TOPIC/CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS.
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let include_synonyms = req.include_synonyms;
    let mut results = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        let result = DescribeConfigsResult::default()
            .with_resource_type(r.resource_type)
            .with_resource_name(r.resource_name.clone());
        if let Err(e) = config_access(
            broker,
            ctx,
            crate::security::acl::op::DESCRIBE_CONFIGS,
            r.resource_type,
            r.resource_name.as_str(),
        ) {
            results.push(
                result
                    .with_error_code(e.code.code())
                    .with_error_message(Some(str_bytes(&e.message))),
            );
            continue;
        }
        let entries = match r.resource_type {
            RESOURCE_TOPIC => match broker.topic(r.resource_name.as_str()) {
                Some(t) => Ok(topic_config_entries(
                    &t.configs.read(),
                    Inherited {
                        dynamic: Some((&broker.dynamic_configs(), broker.config.node_id)),
                        static_defaults: &broker.config.topic_defaults,
                    },
                    r.configuration_keys.as_deref(),
                )),
                None => Err((ResponseError::UnknownTopicOrPartition, "unknown topic")),
            },
            RESOURCE_BROKER
                if r.resource_name.is_empty()
                    || r.resource_name.as_str() == broker.config.node_id.to_string() =>
            {
                let mut all = broker_entries_in_force(broker, r.resource_name.is_empty());
                if let Some(keys) = &r.configuration_keys {
                    all.retain(|e| keys.iter().any(|k| k.as_str() == e.name.as_str()));
                }
                Ok(all)
            }
            RESOURCE_BROKER_LOGGER
                if r.resource_name.as_str() == broker.config.node_id.to_string() =>
            {
                let mut all: Vec<ConfigEntry> = crate::logging::describe()
                    .into_iter()
                    .map(|(logger, level)| ConfigEntry {
                        name: str_bytes(&logger),
                        value: Some(str_bytes(&level)),
                        config_source: SOURCE_DYNAMIC_BROKER_LOGGER,
                        config_type: 2, // STRING
                        synonyms: Vec::new(),
                    })
                    .collect();
                if let Some(keys) = &r.configuration_keys {
                    all.retain(|e| keys.iter().any(|k| k.as_str() == e.name.as_str()));
                }
                Ok(all)
            }
            RESOURCE_GROUP if r.resource_name.is_empty() => Err((
                ResponseError::InvalidRequest,
                "Group name must not be empty",
            )),
            RESOURCE_GROUP => {
                let mut all = group_config_entries(broker, r.resource_name.as_str());
                if let Some(keys) = r.configuration_keys.as_ref().filter(|k| !k.is_empty()) {
                    all.retain(|e| keys.iter().any(|k| k.as_str() == e.name.as_str()));
                }
                Ok(all)
            }
            _ => Err((ResponseError::InvalidRequest, "unsupported resource")),
        };
        results.push(match entries {
            Ok(entries) => result.with_configs(
                entries
                    .into_iter()
                    .map(|e| {
                        let read_only = r.resource_type == RESOURCE_BROKER
                            && dynamic_config::topic_key(e.name.as_str()).is_none();
                        let synonyms = if include_synonyms {
                            e.synonyms
                                .into_iter()
                                .map(|s| {
                                    DescribeConfigsSynonym::default()
                                        .with_name(s.name)
                                        .with_value(s.value)
                                        .with_source(s.source)
                                })
                                .collect()
                        } else {
                            Vec::new()
                        };
                        DescribeConfigsResourceResult::default()
                            .with_name(e.name)
                            .with_value(e.value)
                            .with_read_only(read_only)
                            .with_synonyms(synonyms)
                            .with_config_source(e.config_source)
                            .with_is_sensitive(false)
                            .with_config_type(if ctx.api_version >= 3 {
                                e.config_type
                            } else {
                                0
                            })
                    })
                    .collect(),
            ),
            Err((code, msg)) => result
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(msg))),
        });
    }
    DescribeConfigsResponse::default().with_results(results)
}

/// A group's configs as DescribeConfigs reports them (Kafka's `ConfigHelper` for resource type
/// GROUP): every group config, the group's own values with source GROUP_CONFIG (8).
fn group_config_entries(broker: &Broker, group: &str) -> Vec<ConfigEntry> {
    use crate::coordinator::group::config::{describe, ValueType};
    let sets = broker.group_configs();
    let value = |k: &str| broker.group_config_broker_value(k);
    describe(sets.get(group), &value)
        .into_iter()
        .map(|c| ConfigEntry {
            name: str_bytes(c.name),
            value: c.value.as_deref().map(str_bytes),
            config_source: c.source,
            config_type: match c.value_type {
                ValueType::Int => TYPE_INT,
                ValueType::Long => TYPE_LONG,
                ValueType::Boolean => TYPE_BOOLEAN,
                ValueType::String => TYPE_STRING,
                ValueType::List => TYPE_LIST,
            },
            synonyms: c
                .synonyms
                .iter()
                .map(|(n, v, source)| Synonym::new(n, v.as_deref(), *source))
                .collect(),
        })
        .collect()
}

/// This broker's configs as DescribeConfigs reports them: the static entries with the dynamic
/// values over them (source DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG, both listed
/// as synonyms above the static and default ones); for the cluster-default resource
/// (`default_only`) only the dynamic defaults, as Kafka answers.
fn broker_entries_in_force(broker: &Broker, default_only: bool) -> Vec<ConfigEntry> {
    let sets = broker.dynamic_configs();
    let mut all = broker_config_entries(&broker.config);
    if default_only {
        let defaults = sets.get(dynamic_config::DEFAULT_RESOURCE);
        return defaults
            .into_iter()
            .flatten()
            .map(|(k, v)| ConfigEntry {
                name: str_bytes(k),
                value: Some(str_bytes(v)),
                config_source: SOURCE_DYNAMIC_DEFAULT,
                config_type: all
                    .iter()
                    .find(|e| e.name.as_str() == k)
                    .map_or(TYPE_STRING, |e| e.config_type),
                synonyms: vec![Synonym::new(k, Some(v), SOURCE_DYNAMIC_DEFAULT)],
            })
            .collect();
    }
    for e in all.iter_mut() {
        let mut dynamic: Vec<Synonym> =
            dynamic_config::dynamic_values(&sets, broker.config.node_id, e.name.as_str())
                .into_iter()
                .map(|(source, v)| Synonym::new(e.name.as_str(), Some(v), source))
                .collect();
        if let Some(first) = dynamic.first() {
            e.value = first.value.clone();
            e.config_source = first.source;
            dynamic.append(&mut e.synonyms);
            e.synonyms = dynamic;
        }
    }
    all
}

/// Broker-level replication throttles (Kafka's dynamic broker configs); Frieda does not throttle,
/// so only their removal is accepted.
const REPLICATION_THROTTLES: &[&str] = &[
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// Checks the resource is an existing topic.
fn topic_resource(
    broker: &Broker,
    resource_type: i8,
    name: &StrBytes,
) -> Result<Arc<crate::storage::topic::Topic>, AdminError> {
    if resource_type != RESOURCE_TOPIC {
        return Err(AdminError {
            code: ResponseError::InvalidRequest,
            message: "only topic and broker configs can be altered".into(),
        });
    }
    broker.topic(name.as_str()).ok_or_else(|| AdminError {
        code: ResponseError::UnknownTopicOrPartition,
        message: format!("unknown topic `{}`", name.as_str()),
    })
}

/// Shared by AlterConfigs and IncrementalAlterConfigs: checks the resource is a topic, builds
/// its new config set from the current one with `edit`, and applies it unless `validate_only`.
async fn alter_topic_configs(
    broker: &Arc<Broker>,
    resource_type: i8,
    name: &StrBytes,
    validate_only: bool,
    edit: impl FnOnce(&TopicConfigs) -> Result<TopicConfigs, AdminError>,
) -> Result<(), AdminError> {
    let topic = topic_resource(broker, resource_type, name)?;
    let previous = topic.configs.read().clone();
    let configs = edit(&previous)?;
    // Kafka's tiered-storage rules over the whole new set (docs/tiered-storage.md).
    configs.check_tiering(
        &broker.topic_defaults(),
        Some(&previous),
        broker.config.tiered.enabled,
    )?;
    configs.check_diskless(
        &broker.topic_defaults(),
        Some(&previous),
        broker.config.tiered.enabled,
    )?;
    if !validate_only {
        broker.set_topic_configs(topic, configs).await?;
    }
    Ok(())
}

/// Error code and message of a resource's outcome (0 and no message on success).
fn outcome_fields(outcome: &Result<(), AdminError>) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (0, None),
        Err(e) => (e.code.code(), Some(str_bytes(&e.message))),
    }
}

/// Replaces a topic's whole config set (the legacy, non-incremental semantics).
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_CONFIG (40), INVALID_REQUEST (42).
pub async fn alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        let access = config_access(
            broker,
            ctx,
            crate::security::acl::op::ALTER_CONFIGS,
            r.resource_type,
            r.resource_name.as_str(),
        );
        let outcome = if let Err(e) = access {
            Err(e)
        } else if r.resource_type == RESOURCE_BROKER_LOGGER {
            Err(AdminError::new(
                ResponseError::InvalidRequest,
                "AlterConfigs does not support the resource type BROKER_LOGGER: use IncrementalAlterConfigs",
            ))
        } else if r.resource_type == RESOURCE_BROKER || r.resource_type == RESOURCE_GROUP {
            let configs = r
                .configs
                .iter()
                .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                .collect();
            if r.resource_type == RESOURCE_GROUP {
                broker
                    .set_group_configs(r.resource_name.as_str(), configs, req.validate_only)
                    .await
            } else {
                broker
                    .set_broker_configs(r.resource_name.as_str(), configs, req.validate_only)
                    .await
            }
        } else {
            alter_topic_configs(
                broker,
                r.resource_type,
                &r.resource_name,
                req.validate_only,
                |_| {
                    let mut configs = TopicConfigs::default();
                    for c in &r.configs {
                        match &c.value {
                            Some(v) => configs.set(c.name.as_str(), v.as_str())?,
                            None => configs.remove(c.name.as_str())?,
                        }
                    }
                    Ok(configs)
                },
            )
            .await
        };
        let (code, message) = outcome_fields(&outcome);
        responses.push(
            AlterConfigsResourceResponse::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    AlterConfigsResponse::default().with_responses(responses)
}

/// Applies SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) operations (KIP-339); APPEND and
/// SUBTRACT apply to the list-typed `cleanup.policy`. Errors: UNKNOWN_TOPIC_OR_PARTITION (3),
/// INVALID_CONFIG (40), INVALID_REQUEST (42).
pub async fn incremental_alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        // `kafka-reassign-partitions.sh --verify` clears the throttle rates it may have set;
        // Frieda has none set, so removing them changes nothing and succeeds.
        let clears_throttles = r.resource_type == RESOURCE_BROKER
            && !r.configs.is_empty()
            && r.configs.iter().all(|c| {
                c.config_operation == 1 && REPLICATION_THROTTLES.contains(&c.name.as_str())
            });
        let access = config_access(
            broker,
            ctx,
            crate::security::acl::op::ALTER_CONFIGS,
            r.resource_type,
            r.resource_name.as_str(),
        );
        let outcome = if let Err(e) = access {
            Err(e)
        } else if clears_throttles {
            Ok(())
        } else if r.resource_type == RESOURCE_BROKER_LOGGER {
            incremental_broker_logger(broker, &r, req.validate_only)
        } else if r.resource_type == RESOURCE_BROKER {
            incremental_broker(broker, &r, req.validate_only).await
        } else if r.resource_type == RESOURCE_GROUP {
            incremental_group(broker, &r, req.validate_only).await
        } else {
            incremental_topic(broker, &r, req.validate_only).await
        };
        let (code, message) = outcome_fields(&outcome);
        responses.push(
            IncrementalResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// IncrementalAlterConfigs of a group (resource type GROUP, KIP-848): SET (0) and DELETE (1)
/// on its config set, APPEND (2) / SUBTRACT (3) on the list-typed
/// `streams.rack.aware.assignment.tags`; the new set is checked as a whole
/// ([`crate::coordinator::group::config::validate`]). Errors: INVALID_REQUEST (42) for an empty
/// group id, INVALID_CONFIG (40) for unknown keys, bad values and APPEND/SUBTRACT elsewhere.
async fn incremental_group(
    broker: &Arc<Broker>,
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AdminError> {
    use crate::coordinator::group::config::{find, ValueType};
    let group = r.resource_name.as_str();
    let mut configs = broker
        .group_configs()
        .get(group)
        .cloned()
        .unwrap_or_default();
    for c in &r.configs {
        let name = c.name.to_string();
        let value = c.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
        match c.config_operation {
            0 => {
                configs.insert(name, value);
            }
            1 => {
                configs.remove(&name);
            }
            2 | 3 if find(&name).is_some_and(|k| k.value_type == ValueType::List) => {
                let mut items: Vec<String> = configs
                    .get(&name)
                    .map(|v| {
                        v.split(',')
                            .map(|i| i.trim().to_string())
                            .filter(|i| !i.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                    if c.config_operation == 2 {
                        if !items.iter().any(|i| i == v) {
                            items.push(v.to_string());
                        }
                    } else {
                        items.retain(|i| i != v);
                    }
                }
                configs.insert(name, items.join(","));
            }
            2 | 3 => {
                return Err(AdminError::new(
                    ResponseError::InvalidConfig,
                    format!(
                        "Config value {} is not allowed for config key: {name}",
                        if c.config_operation == 2 {
                            "append"
                        } else {
                            "subtract"
                        }
                    ),
                ))
            }
            op => {
                return Err(AdminError::new(
                    ResponseError::InvalidConfig,
                    format!("operation {op} is not valid for `{name}`"),
                ))
            }
        }
    }
    broker
        .set_group_configs(group, configs, validate_only)
        .await
}

/// IncrementalAlterConfigs of a topic: SET, DELETE, and APPEND/SUBTRACT on `cleanup.policy`.
async fn incremental_topic(
    broker: &Arc<Broker>,
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AdminError> {
    alter_topic_configs(
        broker,
        r.resource_type,
        &r.resource_name,
        validate_only,
        |current| {
            let mut configs = current.clone();
            for c in &r.configs {
                let name = c.name.as_str();
                let value = c.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
                match c.config_operation {
                    0 => configs.set(name, &value)?,
                    1 => configs.remove(name)?,
                    2 | 3 if name == "cleanup.policy" => {
                        let current = configs
                            .effective(&broker.topic_defaults(), name)
                            .unwrap_or("delete")
                            .to_string();
                        let mut items: Vec<String> =
                            current.split(',').map(str::to_string).collect();
                        for v in value.split(',').filter(|v| !v.is_empty()) {
                            if c.config_operation == 2 {
                                if !items.iter().any(|i| i == v) {
                                    items.push(v.to_string());
                                }
                            } else {
                                items.retain(|i| i != v);
                            }
                        }
                        configs.set(name, &items.join(","))?;
                    }
                    op => {
                        return Err(AdminError {
                            code: ResponseError::InvalidConfig,
                            message: format!("operation {op} is not valid for `{name}`"),
                        })
                    }
                }
            }
            Ok(configs)
        },
    )
    .await
}

/// IncrementalAlterConfigs of a broker resource (`""`: the cluster default, or a broker id):
/// SET (0) and DELETE (1) on its dynamic config set (see [`dynamic_config`]).
/// Errors: INVALID_CONFIG for other operations, keys that cannot change at run time and bad
/// values; INVALID_REQUEST for a bad resource name.
/// Log levels at run time (KIP-412, Kafka's `ConfigAdminManager` rules): SET a logger to a
/// log4j level name, DELETE to let it follow its parent again. Errors: INVALID_REQUEST (42)
/// for another broker's id, APPEND/SUBTRACT, or removing the root logger's level;
/// INVALID_CONFIG (40) for an unknown logger or level. All are checked before any applies.
fn incremental_broker_logger(
    broker: &Broker,
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AdminError> {
    use crate::logging;
    let id = broker.config.node_id.to_string();
    if r.resource_name.as_str() != id {
        return Err(AdminError::new(
            ResponseError::InvalidRequest,
            format!(
                "Unexpected broker id, expected {id}, but received {}",
                r.resource_name.as_str()
            ),
        ));
    }
    for c in &r.configs {
        let logger = c.name.as_str();
        match (c.config_operation, &c.value) {
            (0, Some(v)) => {
                if !logging::logger_exists(logger) {
                    return Err(AdminError::new(
                        ResponseError::InvalidConfig,
                        format!("Logger {logger} does not exist!"),
                    ));
                }
                logging::parse_level(v.as_str())
                    .map_err(|m| AdminError::new(ResponseError::InvalidConfig, m))?;
            }
            (1, _) if logger == logging::ROOT => {
                return Err(AdminError::new(
                    ResponseError::InvalidRequest,
                    "Removing the log level of the root logger is not allowed",
                ))
            }
            (1, _) if !logging::logger_exists(logger) => {
                return Err(AdminError::new(
                    ResponseError::InvalidConfig,
                    format!("Logger {logger} does not exist!"),
                ))
            }
            (1, _) => {}
            (op, _) => {
                return Err(AdminError::new(
                    ResponseError::InvalidRequest,
                    format!(
                        "operation {op} is not supported for BROKER_LOGGER (only SET and DELETE)"
                    ),
                ))
            }
        }
    }
    if validate_only {
        return Ok(());
    }
    for c in &r.configs {
        let applied = match (c.config_operation, &c.value) {
            (0, Some(v)) => logging::set_level(c.name.as_str(), v.as_str()),
            _ => logging::unset_level(c.name.as_str()),
        };
        applied.map_err(|m| AdminError::new(ResponseError::InvalidConfig, m))?;
    }
    Ok(())
}

async fn incremental_broker(
    broker: &Arc<Broker>,
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AdminError> {
    let name = r.resource_name.as_str();
    let mut configs = broker.dynamic_configs().remove(name).unwrap_or_default();
    for c in &r.configs {
        let key = c.name.to_string();
        match (c.config_operation, &c.value) {
            (0, Some(v)) => {
                configs.insert(key, v.to_string());
            }
            (1, _) => {
                configs.remove(&key);
            }
            (op, _) => {
                return Err(AdminError::new(
                    ResponseError::InvalidConfig,
                    format!("operation {op} is not valid for the broker config `{key}`"),
                ))
            }
        }
    }
    broker
        .set_broker_configs(name, configs, validate_only)
        .await
}
