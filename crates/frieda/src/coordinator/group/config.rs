//! Group configs: per-group overrides of the group coordinator's settings, as Kafka 4.4's
//! `GroupConfig` defines them (KIP-848 brought the resource, KIP-932 the `share.*` keys,
//! KIP-1071 the `streams.*` keys, KIP-1191 the `errors.deadletterqueue.*` keys). They are set
//! and read with IncrementalAlterConfigs / DescribeConfigs on resource type GROUP (32), the name
//! being the group id (`kafka-configs --entity-type groups --entity-name G`); a group need not
//! exist to have configs.
//!
//! This module is the key table, the validation Kafka applies when a config set changes
//! (`GroupConfig.validate`: INVALID_CONFIG with Kafka's messages) and the effective values,
//! clamped into the broker's allowed ranges as Kafka's `GroupConfig.evaluate` does. Where the
//! sets are kept is the broker's business (`crate::broker::group_config`).

use std::collections::BTreeMap;

/// ConfigResource type GROUP in the config APIs.
pub const RESOURCE_GROUP: i8 = 32;

/// Group config overrides by group id, Kafka key names and values as set.
pub type GroupConfigSets = BTreeMap<String, BTreeMap<String, String>>;

/// A group config's value type (Kafka's `ConfigDef.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// 32-bit integer.
    Int,
    /// 64-bit integer.
    Long,
    /// `true` / `false`.
    Boolean,
    /// Free text (some keys have their own check).
    String,
    /// Comma-separated list.
    List,
}

/// One group config key.
#[derive(Debug)]
pub struct GroupConfigKey {
    /// Kafka name.
    pub name: &'static str,
    /// Value type.
    pub value_type: ValueType,
    /// Kafka's default when neither the group nor the broker sets it (`None`: null).
    pub default: Option<&'static str>,
    /// The broker config whose value is the default for every group
    /// (`GroupConfig.ALL_GROUP_CONFIG_SYNONYMS`).
    pub broker_synonym: Option<&'static str>,
    /// Internal keys are described only when a group sets them.
    pub internal: bool,
    /// The lowest value the key's type accepts (`ConfigDef.Range.atLeast`).
    pub at_least: Option<i64>,
    /// The broker's allowed range (Kafka's `group.*.min.*` / `group.*.max.*` defaults): a value
    /// outside is refused when set, and clamped when read.
    pub bounds: (Option<i64>, Option<i64>),
}

const fn key(
    name: &'static str,
    value_type: ValueType,
    default: Option<&'static str>,
    broker_synonym: Option<&'static str>,
    internal: bool,
    at_least: Option<i64>,
    bounds: (Option<i64>, Option<i64>),
) -> GroupConfigKey {
    GroupConfigKey {
        name,
        value_type,
        default,
        broker_synonym,
        internal,
        at_least,
        bounds,
    }
}

use ValueType::{Boolean, Int, List, Long, String as Str};

/// Every group config of Kafka 4.4.0 (`GroupConfig.CONFIG_DEF`), in its order.
#[rustfmt::skip]
pub const GROUP_CONFIG_KEYS: &[GroupConfigKey] = &[
    key("consumer.session.timeout.ms", Int, Some("45000"), Some("group.consumer.session.timeout.ms"), false, Some(1), (Some(45_000), Some(60_000))),
    key("consumer.heartbeat.interval.ms", Int, Some("5000"), Some("group.consumer.heartbeat.interval.ms"), false, Some(1), (Some(5_000), Some(15_000))),
    key("consumer.assignment.interval.ms", Int, Some("1000"), Some("group.consumer.assignment.interval.ms"), false, Some(0), (Some(0), Some(15_000))),
    key("consumer.assignor.offload.enable", Boolean, Some("true"), Some("group.consumer.assignor.offload.enable"), true, None, (None, None)),
    key("share.session.timeout.ms", Int, Some("45000"), Some("group.share.session.timeout.ms"), false, Some(1), (Some(45_000), Some(60_000))),
    key("share.heartbeat.interval.ms", Int, Some("5000"), Some("group.share.heartbeat.interval.ms"), false, Some(1), (Some(5_000), Some(15_000))),
    key("share.record.lock.duration.ms", Int, Some("30000"), Some("group.share.record.lock.duration.ms"), false, Some(1000), (Some(15_000), Some(60_000))),
    key("share.delivery.count.limit", Int, Some("5"), Some("group.share.delivery.count.limit"), false, Some(2), (Some(2), Some(10))),
    key("share.partition.max.record.locks", Int, Some("2000"), Some("group.share.partition.max.record.locks"), false, Some(100), (Some(100), Some(4000))),
    key("share.auto.offset.reset", Str, Some("latest"), None, false, None, (None, None)),
    key("share.isolation.level", Str, Some("read_uncommitted"), None, false, None, (None, None)),
    key("share.renew.acknowledge.enable", Boolean, Some("true"), None, false, None, (None, None)),
    key("share.assignment.interval.ms", Int, Some("1000"), Some("group.share.assignment.interval.ms"), false, Some(0), (Some(0), Some(15_000))),
    key("share.assignor.offload.enable", Boolean, Some("true"), Some("group.share.assignor.offload.enable"), true, None, (None, None)),
    key("streams.session.timeout.ms", Int, Some("45000"), Some("group.streams.session.timeout.ms"), false, Some(1), (Some(45_000), Some(60_000))),
    key("streams.heartbeat.interval.ms", Int, Some("5000"), Some("group.streams.heartbeat.interval.ms"), false, Some(1), (Some(5_000), Some(15_000))),
    key("streams.num.standby.replicas", Int, Some("0"), Some("group.streams.num.standby.replicas"), false, Some(0), (None, Some(2))),
    key("streams.initial.rebalance.delay.ms", Int, Some("3000"), Some("group.streams.initial.rebalance.delay.ms"), false, Some(0), (None, None)),
    key("streams.assignment.interval.ms", Int, Some("1000"), Some("group.streams.assignment.interval.ms"), false, Some(0), (Some(0), Some(15_000))),
    key("streams.assignor.offload.enable", Boolean, Some("true"), Some("group.streams.assignor.offload.enable"), true, None, (None, None)),
    key("streams.task.offset.interval.ms", Int, Some("60000"), Some("group.streams.task.offset.interval.ms"), true, Some(1), (Some(15_000), None)),
    key("streams.num.warmup.replicas", Int, Some("2"), Some("group.streams.num.warmup.replicas"), true, Some(0), (None, Some(20))),
    key("streams.rack.aware.assignment.tags", List, Some(""), Some("group.streams.rack.aware.assignment.tags"), false, None, (None, None)),
    key("streams.acceptable.recovery.lag", Long, Some("10000"), Some("group.streams.acceptable.recovery.lag"), true, Some(0), (None, None)),
    key("streams.assignor.name", Str, None, Some("group.streams.assignors"), false, None, (None, None)),
    key("errors.deadletterqueue.topic.name", Str, Some(""), None, false, None, (None, None)),
    key("errors.deadletterqueue.copy.record.enable", Boolean, Some("false"), None, false, None, (None, None)),
];

/// The key named `name`.
pub fn find(name: &str) -> Option<&'static GroupConfigKey> {
    GROUP_CONFIG_KEYS.iter().find(|k| k.name == name)
}

/// The task assignors a streams group may name (`group.streams.assignors` of Kafka 4.4).
const STREAMS_ASSIGNORS: &[&str] = &["sticky"];

/// (session key, heartbeat key) pairs: the session timeout must exceed the heartbeat interval.
const SESSION_HEARTBEAT: &[(&str, &str)] = &[
    (
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
    ),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    (
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
    ),
];

/// Parses a `share.auto.offset.reset` value: `latest`, `earliest` or
/// `by_duration:<ISO-8601 duration>` (`PnDTnHnMn.nS`, not negative; Kafka's
/// `ShareGroupAutoOffsetResetStrategy`). Returns the duration in ms for `by_duration`.
///
/// Errors: a message saying what is wrong.
pub fn parse_auto_offset_reset(value: &str) -> Result<AutoOffsetResetValue, String> {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "latest" => Ok(AutoOffsetResetValue::Latest),
        "earliest" => Ok(AutoOffsetResetValue::Earliest),
        _ => match v.strip_prefix("by_duration:") {
            Some(d) => {
                let ms = parse_iso_duration_ms(d.trim())
                    .ok_or_else(|| format!("Unable to parse duration string '{}'", d.trim()))?;
                if ms < 0 {
                    return Err("Negative duration is not supported.".into());
                }
                Ok(AutoOffsetResetValue::ByDurationMs(ms))
            }
            None => Err(format!(
                "Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
            )),
        },
    }
}

/// A parsed `share.auto.offset.reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetResetValue {
    /// The log start offset.
    Earliest,
    /// The log end offset.
    Latest,
    /// The first record not older than this many ms.
    ByDurationMs(i64),
}

/// Milliseconds of an ISO-8601 duration as Java's `Duration.parse` reads it
/// (`[-]PnDTnHnMn.nS`, case-insensitive, each part optional but at least one); `None` if
/// malformed or out of range.
fn parse_iso_duration_ms(text: &str) -> Option<i64> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let rest = rest.strip_prefix(['P', 'p'])?;
    let (date, time) = match rest.find(['T', 't']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut total: f64 = 0.0;
    let mut parts = 0;
    let mut take = |section: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        let mut next_unit = 0usize;
        for c in section.chars() {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' {
                number.push(c);
                continue;
            }
            let c = c.to_ascii_uppercase();
            let at = units[next_unit..].iter().position(|(u, _)| *u == c)? + next_unit;
            let n: f64 = number.parse().ok()?;
            if number.contains('.') && c != 'S' {
                return None;
            }
            total += n * units[at].1;
            parts += 1;
            number.clear();
            next_unit = at + 1;
        }
        number.is_empty().then_some(())
    };
    take(date, &[('D', 86_400_000.0)])?;
    if let Some(t) = time {
        if t.is_empty() {
            return None;
        }
        take(t, &[('H', 3_600_000.0), ('M', 60_000.0), ('S', 1000.0)])?;
    }
    if parts == 0 || !total.is_finite() || total.abs() > i64::MAX as f64 {
        return None;
    }
    let ms = total.round() as i64;
    Some(if negative { -ms } else { ms })
}

/// Checks one value against its key's type and validator (Kafka's `ConfigDef.parse` messages).
fn check_value(k: &GroupConfigKey, value: &str) -> Result<Option<i64>, String> {
    let invalid = |why: &str| format!("Invalid value {value} for configuration {}: {why}", k.name);
    match k.value_type {
        Int | Long => {
            let n: i64 = value.trim().parse().map_err(|_| {
                invalid(if k.value_type == Int {
                    "Not a number of type INT"
                } else {
                    "Not a number of type LONG"
                })
            })?;
            if k.value_type == Int && i32::try_from(n).is_err() {
                return Err(invalid("Not a number of type INT"));
            }
            if let Some(min) = k.at_least {
                if n < min {
                    return Err(invalid(&format!("Value must be at least {min}")));
                }
            }
            Ok(Some(n))
        }
        Boolean => match value.trim().to_ascii_lowercase().as_str() {
            "true" | "false" => Ok(None),
            _ => Err(invalid("Expected value to be either true or false")),
        },
        Str => {
            match k.name {
                "share.auto.offset.reset" => {
                    parse_auto_offset_reset(value).map_err(|e| invalid(&e))?;
                }
                "share.isolation.level"
                    if value != "read_committed" && value != "read_uncommitted" =>
                {
                    return Err(invalid(
                        "String must be one of: read_committed, read_uncommitted",
                    ));
                }
                _ => {}
            }
            Ok(None)
        }
        List => Ok(None),
    }
}

/// Checks a whole new config set of one group as Kafka's `GroupConfig.validate` does.
/// `broker_value(synonym)` gives the broker's value of a broker config (for the session/heartbeat
/// comparison when the set names only one of them).
///
/// Errors (INVALID_CONFIG in the config APIs): `Unknown group config name: X`, a value its type
/// refuses, `<key> must be in the range <min> to <max> inclusive.`, `<session key> must be
/// greater than <heartbeat key>`, an unregistered `streams.assignor.name`, a dead-letter topic
/// whose name starts with `__`, duplicate rack tags.
pub fn validate(
    configs: &BTreeMap<String, String>,
    broker_value: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    for name in configs.keys() {
        if find(name).is_none() {
            return Err(format!("Unknown group config name: {name}"));
        }
    }
    if let Some(tags) = configs.get("streams.rack.aware.assignment.tags") {
        let t = tags.trim();
        let list: Vec<&str> = if t.is_empty() {
            Vec::new()
        } else {
            t.split(',').map(str::trim).collect()
        };
        let unique: std::collections::BTreeSet<&str> = list.iter().copied().collect();
        if unique.len() != list.len() {
            return Err(
                "streams.rack.aware.assignment.tags must not contain duplicate tag keys.".into(),
            );
        }
    }
    let mut numbers: BTreeMap<&str, i64> = BTreeMap::new();
    for (name, value) in configs {
        let k = find(name).expect("checked");
        if let Some(n) = check_value(k, value)? {
            numbers.insert(k.name, n);
        }
    }
    for k in GROUP_CONFIG_KEYS {
        let Some(&n) = numbers.get(k.name) else {
            continue;
        };
        match k.bounds {
            (Some(min), Some(max)) if n < min || n > max => {
                return Err(format!(
                    "{} must be in the range {min} to {max} inclusive.",
                    k.name
                ))
            }
            (None, Some(max)) if n > max => {
                return Err(format!("{} must be less than or equal to {max}", k.name))
            }
            (Some(min), None) if n < min => {
                return Err(format!("{} must be greater than or equal to {min}", k.name))
            }
            _ => {}
        }
    }
    if let Some(name) = configs.get("streams.assignor.name") {
        if !STREAMS_ASSIGNORS.contains(&name.as_str()) {
            return Err(format!(
                "streams.assignor.name '{name}' is not a registered task assignor. Registered assignors are: [{}].",
                STREAMS_ASSIGNORS.join(", ")
            ));
        }
    }
    for (session, heartbeat) in SESSION_HEARTBEAT {
        if !numbers.contains_key(session) && !numbers.contains_key(heartbeat) {
            continue;
        }
        let value = |key: &str| {
            numbers.get(key).copied().unwrap_or_else(|| {
                let k = find(key).expect("known");
                k.broker_synonym
                    .and_then(broker_value)
                    .or(k.default.map(str::to_string))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            })
        };
        if value(session) <= value(heartbeat) {
            return Err(format!("{session} must be greater than {heartbeat}"));
        }
    }
    if let Some(dlq) = configs.get("errors.deadletterqueue.topic.name") {
        if dlq.starts_with("__") {
            return Err(
                "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'".into(),
            );
        }
    }
    Ok(())
}

/// A group's effective config: its overrides over the broker's values, numbers clamped into the
/// broker's allowed ranges (Kafka's `GroupConfig.evaluate`).
pub struct EffectiveGroupConfig<'a> {
    overrides: Option<&'a BTreeMap<String, String>>,
    broker_value: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> EffectiveGroupConfig<'a> {
    /// The config of a group with `overrides` (none: the broker's values only).
    pub fn new(
        overrides: Option<&'a BTreeMap<String, String>>,
        broker_value: &'a dyn Fn(&str) -> Option<String>,
    ) -> Self {
        EffectiveGroupConfig {
            overrides,
            broker_value,
        }
    }

    /// The group's own value of `name`, if it sets one.
    pub fn overridden(&self, name: &str) -> Option<&'a str> {
        self.overrides?.get(name).map(String::as_str)
    }

    /// The value in force: the group's, else the broker's synonym, else Kafka's default.
    pub fn raw(&self, name: &str) -> Option<String> {
        if let Some(v) = self.overridden(name) {
            return Some(v.to_string());
        }
        let k = find(name)?;
        k.broker_synonym
            .and_then(|b| (self.broker_value)(b))
            .or(k.default.map(str::to_string))
    }

    /// A numeric value in force, clamped into the broker's range (0 if unset or malformed,
    /// which validation prevents).
    pub fn number(&self, name: &str) -> i64 {
        let n: i64 = self
            .raw(name)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        match find(name).map(|k| k.bounds) {
            Some((min, max)) if self.overridden(name).is_some() => {
                let n = min.map_or(n, |m| n.max(m));
                max.map_or(n, |m| n.min(m))
            }
            _ => n,
        }
    }

    /// A boolean value in force.
    pub fn boolean(&self, name: &str) -> bool {
        self.raw(name)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }
}

/// Where a described value comes from (DescribeConfigs `ConfigSource`).
pub mod source {
    /// Set on the group (`GROUP_CONFIG`).
    pub const GROUP: i8 = 8;
    /// Set in the broker's config file (`STATIC_BROKER_CONFIG`).
    pub const STATIC_BROKER: i8 = 4;
    /// Kafka's default (`DEFAULT_CONFIG`).
    pub const DEFAULT: i8 = 5;
}

/// One described group config (DescribeConfigs of a GROUP resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroupConfig {
    /// Kafka name.
    pub name: &'static str,
    /// Value in force (unclamped, as Kafka shows it); `None` for a null default.
    pub value: Option<String>,
    /// Where it comes from ([`source`]).
    pub source: i8,
    /// Value type.
    pub value_type: ValueType,
    /// Every place it is defined, the one in force first: (name, value, source).
    pub synonyms: Vec<(String, Option<String>, i8)>,
}

/// Describes a group's configs as Kafka's `ConfigHelper.createGroupConfigEntry` does: every
/// non-internal key (internal ones only when the group sets them), the value in force, source
/// GROUP_CONFIG for the group's own values, else the broker synonym's source (its value counts
/// as set in the broker's config file, STATIC_BROKER_CONFIG, when it is not Kafka's default).
pub fn describe(
    overrides: Option<&BTreeMap<String, String>>,
    broker_value: &dyn Fn(&str) -> Option<String>,
) -> Vec<DescribedGroupConfig> {
    let effective = EffectiveGroupConfig::new(overrides, broker_value);
    let mut out = Vec::new();
    for k in GROUP_CONFIG_KEYS {
        let own = effective.overridden(k.name);
        if k.internal && own.is_none() {
            continue;
        }
        let mut synonyms = Vec::new();
        if let Some(v) = own {
            synonyms.push((k.name.to_string(), Some(v.to_string()), source::GROUP));
        }
        match k.broker_synonym {
            Some(b) => {
                if let Some(v) = broker_value(b).filter(|v| Some(v.as_str()) != k.default) {
                    synonyms.push((b.to_string(), Some(v), source::STATIC_BROKER));
                }
                if let Some(d) = k.default {
                    synonyms.push((b.to_string(), Some(d.to_string()), source::DEFAULT));
                }
            }
            None => {
                if let Some(d) = k.default {
                    synonyms.push((k.name.to_string(), Some(d.to_string()), source::DEFAULT));
                }
            }
        }
        out.push(DescribedGroupConfig {
            name: k.name,
            value: effective.raw(k.name),
            source: synonyms.first().map_or(source::DEFAULT, |s| s.2),
            value_type: k.value_type,
            synonyms,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn set(kvs: &[(&str, &str)]) -> BTreeMap<String, String> {
        kvs.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn validation_messages_match_kafka() {
        let err = |kvs: &[(&str, &str)]| validate(&set(kvs), &none).unwrap_err();
        assert_eq!(err(&[("nope", "1")]), "Unknown group config name: nope");
        assert_eq!(
            err(&[("share.record.lock.duration.ms", "100")]),
            "Invalid value 100 for configuration share.record.lock.duration.ms: Value must be at least 1000"
        );
        assert_eq!(
            err(&[("share.record.lock.duration.ms", "5000")]),
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
        );
        assert_eq!(
            err(&[("share.delivery.count.limit", "x")]),
            "Invalid value x for configuration share.delivery.count.limit: Not a number of type INT"
        );
        assert_eq!(
            err(&[("errors.deadletterqueue.topic.name", "__dlq")]),
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
        );
        // The broker's heartbeat interval counts when the set names only the session timeout.
        let slow_heartbeat =
            |k: &str| (k == "group.share.heartbeat.interval.ms").then(|| "50000".to_string());
        assert_eq!(
            validate(
                &set(&[("share.session.timeout.ms", "45000")]),
                &slow_heartbeat
            )
            .unwrap_err(),
            "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"
        );
        assert!(
            err(&[("share.auto.offset.reset", "sometimes")]).contains("share.auto.offset.reset")
        );
        assert!(err(&[("share.isolation.level", "x")]).contains("read_committed"));
        assert!(validate(
            &set(&[
                ("share.auto.offset.reset", "earliest"),
                ("share.record.lock.duration.ms", "15000"),
                ("errors.deadletterqueue.topic.name", "dlq"),
                ("share.isolation.level", "read_committed"),
            ]),
            &none
        )
        .is_ok());
    }

    #[test]
    fn iso_durations() {
        assert_eq!(parse_iso_duration_ms("PT1H"), Some(3_600_000));
        assert_eq!(
            parse_iso_duration_ms("P1DT2M3.5S"),
            Some(86_400_000 + 120_000 + 3500)
        );
        assert_eq!(parse_iso_duration_ms("pt0.001s"), Some(1));
        assert_eq!(parse_iso_duration_ms("-PT1S"), Some(-1000));
        assert_eq!(parse_iso_duration_ms("P"), None);
        assert_eq!(parse_iso_duration_ms("PT"), None);
        assert_eq!(parse_iso_duration_ms("PT1S1H"), None);
        assert_eq!(parse_iso_duration_ms("1H"), None);
        assert_eq!(
            parse_auto_offset_reset("by_duration:PT10M"),
            Ok(AutoOffsetResetValue::ByDurationMs(600_000))
        );
        assert!(parse_auto_offset_reset("by_duration:-PT10M").is_err());
    }

    #[test]
    fn effective_values_clamp_and_fall_back() {
        let broker =
            |k: &str| (k == "group.share.record.lock.duration.ms").then(|| "20000".to_string());
        let o = set(&[("share.delivery.count.limit", "99")]);
        let e = EffectiveGroupConfig::new(Some(&o), &broker);
        assert_eq!(e.number("share.delivery.count.limit"), 10);
        assert_eq!(e.number("share.record.lock.duration.ms"), 20_000);
        assert_eq!(e.raw("share.auto.offset.reset").as_deref(), Some("latest"));
        assert!(e.boolean("share.renew.acknowledge.enable"));
        let d = describe(Some(&o), &broker);
        let lock = d
            .iter()
            .find(|c| c.name == "share.record.lock.duration.ms")
            .unwrap();
        assert_eq!(
            (lock.value.as_deref(), lock.source),
            (Some("20000"), source::STATIC_BROKER)
        );
        let limit = d
            .iter()
            .find(|c| c.name == "share.delivery.count.limit")
            .unwrap();
        assert_eq!(
            (limit.value.as_deref(), limit.source),
            (Some("99"), source::GROUP)
        );
        assert!(!d.iter().any(|c| c.name == "share.assignor.offload.enable"));
    }
}
