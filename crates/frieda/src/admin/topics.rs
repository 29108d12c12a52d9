//! `frieda admin topic ...`: list, create, describe, alter-config, delete (Metadata,
//! CreateTopics, DescribeConfigs, IncrementalAlterConfigs (KIP-339), DeleteTopics), printed
//! as `kafka-topics.sh` and `kafka-configs.sh` print them.

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{CreateTopicsRequest, DeleteTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};
use super::configs::{self, Resource};

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Splits `key=value`.
///
/// Errors: no `=`.
pub fn key_value(s: &str) -> anyhow::Result<(String, String)> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .ok_or_else(|| anyhow::anyhow!("`{s}`: expected key=value"))
}

/// Prints the topic names, one per line, sorted; internal topics only with `internal`.
pub async fn list(admin: &mut Admin, internal: bool) -> anyhow::Result<()> {
    let md = admin.metadata(None).await?;
    let mut names: Vec<&str> = md
        .topics
        .iter()
        .filter(|t| internal || !t.is_internal)
        .filter_map(|t| t.name.as_ref().map(|n| n.0.as_str()))
        .collect();
    names.sort_unstable();
    for n in names {
        println!("{n}");
    }
    Ok(())
}

/// Creates `topic` with `partitions` and `replication_factor` (-1: the broker's defaults) and
/// topic settings `configs`.
///
/// Errors: TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, ... by name.
pub async fn create(
    admin: &mut Admin,
    topic: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(String, String)],
) -> anyhow::Result<()> {
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(admin.timeout().as_millis() as i32)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(k.clone()))
                            .with_value(Some(StrBytes::from_string(v.clone())))
                    })
                    .collect(),
            )]);
    let resp = admin.call(Node::Any, &req).await?;
    for t in &resp.topics {
        check(
            t.error_code,
            t.error_message.as_ref(),
            &format!("create topic {topic}"),
        )?;
    }
    println!("Created topic {topic}.");
    Ok(())
}

/// Prints each topic's partitions (leader, replicas, ISR) and the settings set on it, as
/// `kafka-topics --describe` does; every topic when `topics` is empty.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION and the like, by name.
pub async fn describe(admin: &mut Admin, topics: &[String]) -> anyhow::Result<()> {
    let md = admin
        .metadata(if topics.is_empty() {
            None
        } else {
            Some(topics.to_vec())
        })
        .await?;
    let mut found: Vec<_> = md.topics.iter().collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    for t in found {
        let topic = t.name.as_ref().map_or("?", |n| n.0.as_str());
        check(t.error_code, None, &format!("topic {topic}"))?;
        let configs = topic_configs(admin, topic).await?;
        let rf = t.partitions.first().map_or(0, |p| p.replica_nodes.len());
        let settings: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "Topic: {topic}\tTopicId: {}\tPartitionCount: {}\tReplicationFactor: {rf}\tConfigs: {}",
            // As Kafka's tools print a topic id (`Uuid.toString`: URL-safe base64, no padding).
            frieda_meta::controller::base64_url(t.topic_id.as_bytes()),
            t.partitions.len(),
            settings.join(",")
        );
        let mut parts: Vec<_> = t.partitions.iter().collect();
        parts.sort_by_key(|p| p.partition_index);
        let ids = |v: &[kafka_protocol::messages::BrokerId]| {
            v.iter()
                .map(|b| b.0.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        for p in parts {
            let leader = if p.leader_id.0 < 0 {
                "none".to_string()
            } else {
                p.leader_id.0.to_string()
            };
            println!(
                "\tTopic: {topic}\tPartition: {}\tLeader: {leader}\tReplicas: {}\tIsr: {}{}",
                p.partition_index,
                ids(&p.replica_nodes),
                ids(&p.isr_nodes),
                if p.offline_replicas.is_empty() {
                    String::new()
                } else {
                    format!("\tOffline: {}", ids(&p.offline_replicas))
                }
            );
        }
    }
    Ok(())
}

/// The settings set on `topic` itself (not defaults), sorted by name; sensitive values as
/// `[hidden]`.
async fn topic_configs(admin: &mut Admin, topic: &str) -> anyhow::Result<Vec<(String, String)>> {
    let entries = configs::entries(admin, &Resource::Topic(topic.to_string())).await?;
    Ok(entries
        .into_iter()
        .filter(|e| e.source == configs::source::TOPIC_CONFIG)
        .map(|e| (e.name, e.value))
        .collect())
}

/// Sets (`set`) and removes (`delete`, back to the default) settings of `topic` in one
/// IncrementalAlterConfigs request.
///
/// Errors: INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, ... by name.
pub async fn alter_config(
    admin: &mut Admin,
    topic: &str,
    set: &[(String, String)],
    delete: &[String],
) -> anyhow::Result<()> {
    configs::alter(admin, &Resource::Topic(topic.to_string()), set, delete).await
}

/// Deletes `topics`.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION and the like, by name, for the first topic refused
/// (the others are still deleted).
pub async fn delete(admin: &mut Admin, topics: &[String]) -> anyhow::Result<()> {
    let version = admin.version_for::<DeleteTopicsRequest>(Node::Any).await?;
    let mut req =
        DeleteTopicsRequest::default().with_timeout_ms(admin.timeout().as_millis() as i32);
    if version >= 6 {
        req.topics = topics
            .iter()
            .map(|t| DeleteTopicState::default().with_name(Some(name(t))))
            .collect();
    } else {
        req.topic_names = topics.iter().map(|t| name(t)).collect();
    }
    let resp = admin.call(Node::Any, &req).await?;
    let mut first_error = None;
    for r in &resp.responses {
        let topic = r.name.as_ref().map_or("?", |n| n.0.as_str());
        match check(
            r.error_code,
            r.error_message.as_ref(),
            &format!("delete topic {topic}"),
        ) {
            Ok(()) => println!("Deleted topic {topic}."),
            Err(e) => {
                eprintln!("{e}");
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
