//! Settings of a config resource (a topic, a broker, the brokers' cluster-wide default, a
//! group): DescribeConfigs (key 32) and IncrementalAlterConfigs (key 44, KIP-339), what
//! `kafka-configs.sh --describe` and `--alter --add-config/--delete-config` do.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{DescribeConfigsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};
use super::table::Table;

/// A config resource: Kafka's `ConfigResource` (type code and name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// A topic (type 2).
    Topic(String),
    /// One broker (type 4, named by its id).
    Broker(i32),
    /// Every broker's cluster-wide default (type 4, the empty name; `--entity-default`).
    BrokerDefault,
    /// A group (type 32, KIP-848 group configs such as `consumer.session.timeout.ms`).
    Group(String),
}

impl Resource {
    /// The `ConfigResource.Type` code.
    fn type_code(&self) -> i8 {
        match self {
            Resource::Topic(_) => 2,
            Resource::Broker(_) | Resource::BrokerDefault => 4,
            Resource::Group(_) => 32,
        }
    }

    /// The resource name on the wire.
    fn name(&self) -> String {
        match self {
            Resource::Topic(n) | Resource::Group(n) => n.clone(),
            Resource::Broker(id) => id.to_string(),
            Resource::BrokerDefault => String::new(),
        }
    }

    /// Where the request goes: a broker's own settings to that broker (as Kafka's admin client
    /// sends them), everything else to any broker.
    fn node(&self) -> Node {
        match self {
            Resource::Broker(id) => Node::Id(*id),
            _ => Node::Any,
        }
    }

    /// How messages name it: `topic t`, `broker 1`, `the broker default`, `group g`.
    pub fn describe(&self) -> String {
        match self {
            Resource::Topic(n) => format!("topic {n}"),
            Resource::Broker(id) => format!("broker {id}"),
            Resource::BrokerDefault => "the brokers' default".to_string(),
            Resource::Group(n) => format!("group {n}"),
        }
    }
}

/// DescribeConfigs `config_source` codes (Kafka's `DescribeConfigsResponse.ConfigSource`).
pub mod source {
    /// Set on the topic itself.
    pub const TOPIC_CONFIG: i8 = 1;
    /// Set dynamically on this broker.
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    /// Set dynamically as every broker's default.
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    /// From the broker's configuration file.
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    /// Nothing set: the built-in default.
    pub const DEFAULT_CONFIG: i8 = 5;
    /// A broker logger's level.
    pub const DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;
    /// Set on the group itself.
    pub const GROUP_CONFIG: i8 = 8;

    /// Kafka's name of a source (`ConfigEntry.ConfigSource`), as `kafka-configs` prints it.
    pub fn name(code: i8) -> &'static str {
        match code {
            TOPIC_CONFIG => "DYNAMIC_TOPIC_CONFIG",
            DYNAMIC_BROKER_CONFIG => "DYNAMIC_BROKER_CONFIG",
            DYNAMIC_DEFAULT_BROKER_CONFIG => "DYNAMIC_DEFAULT_BROKER_CONFIG",
            STATIC_BROKER_CONFIG => "STATIC_BROKER_CONFIG",
            DEFAULT_CONFIG => "DEFAULT_CONFIG",
            DYNAMIC_BROKER_LOGGER_CONFIG => "DYNAMIC_BROKER_LOGGER_CONFIG",
            7 => "CLIENT_METRICS_CONFIG",
            GROUP_CONFIG => "GROUP_CONFIG",
            _ => "UNKNOWN",
        }
    }
}

/// One setting as DescribeConfigs answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The setting's name.
    pub name: String,
    /// Its value; `[hidden]` for a sensitive one, `null` for none.
    pub value: String,
    /// Where the value comes from ([`source`] codes).
    pub source: i8,
}

/// Every setting of `resource`, sorted by name.
///
/// Errors: the resource's error by name (UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND,
/// INVALID_REQUEST, ...).
pub async fn entries(admin: &mut Admin, resource: &Resource) -> anyhow::Result<Vec<Entry>> {
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(resource.type_code())
            .with_resource_name(StrBytes::from_string(resource.name()))
            .with_configuration_keys(None)]);
    let resp = admin.call(resource.node(), &req).await?;
    let mut out = Vec::new();
    for r in &resp.results {
        check(
            r.error_code,
            r.error_message.as_ref(),
            &format!("configs of {}", resource.describe()),
        )?;
        for c in &r.configs {
            let value = if c.is_sensitive {
                "[hidden]".to_string()
            } else {
                c.value.as_ref().map_or("null".into(), |v| v.to_string())
            };
            out.push(Entry {
                name: c.name.to_string(),
                value,
                source: c.config_source,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Prints the settings of `resource` as a NAME / VALUE / SOURCE table: those set anywhere
/// (on the resource, dynamically, in the configuration file), or with `all` every one,
/// built-in defaults too.
///
/// Errors: as [`entries`].
pub async fn describe(admin: &mut Admin, resource: &Resource, all: bool) -> anyhow::Result<()> {
    let entries = entries(admin, resource).await?;
    let mut table = Table::new(&["NAME", "VALUE", "SOURCE"]);
    for e in entries
        .iter()
        .filter(|e| all || e.source != source::DEFAULT_CONFIG)
    {
        table.row(vec![
            e.name.clone(),
            e.value.clone(),
            source::name(e.source).to_string(),
        ]);
    }
    table.print();
    Ok(())
}

/// Sets (`set`) and removes (`delete`, back to the default) settings of `resource` in one
/// IncrementalAlterConfigs request.
///
/// Errors: nothing to change; INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION,
/// CLUSTER_AUTHORIZATION_FAILED, ... by name.
pub async fn alter(
    admin: &mut Admin,
    resource: &Resource,
    set: &[(String, String)],
    delete: &[String],
) -> anyhow::Result<()> {
    if set.is_empty() && delete.is_empty() {
        anyhow::bail!("nothing to change: give --set key=value or --delete key");
    }
    let mut configs: Vec<AlterableConfig> = set
        .iter()
        .map(|(k, v)| {
            AlterableConfig::default()
                .with_name(StrBytes::from_string(k.clone()))
                .with_config_operation(0) // SET
                .with_value(Some(StrBytes::from_string(v.clone())))
        })
        .collect();
    configs.extend(delete.iter().map(|k| {
        AlterableConfig::default()
            .with_name(StrBytes::from_string(k.clone()))
            .with_config_operation(1) // DELETE
    }));
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(resource.type_code())
            .with_resource_name(StrBytes::from_string(resource.name()))
            .with_configs(configs),
    ]);
    let resp = admin.call(resource.node(), &req).await?;
    for r in &resp.responses {
        check(
            r.error_code,
            r.error_message.as_ref(),
            &format!("alter configs of {}", resource.describe()),
        )?;
    }
    println!("Completed updating config for {}.", resource.describe());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_map_to_kafka_config_resource_types_and_names() {
        assert_eq!(Resource::Topic("t".into()).type_code(), 2);
        assert_eq!(Resource::Broker(3).type_code(), 4);
        assert_eq!(Resource::Broker(3).name(), "3");
        assert_eq!(Resource::Broker(3).node(), Node::Id(3));
        assert_eq!(Resource::BrokerDefault.name(), "");
        assert_eq!(Resource::BrokerDefault.node(), Node::Any);
        assert_eq!(Resource::Group("g".into()).type_code(), 32);
        assert_eq!(
            source::name(source::STATIC_BROKER_CONFIG),
            "STATIC_BROKER_CONFIG"
        );
    }
}
