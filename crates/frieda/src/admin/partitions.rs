//! Where partitions live and what offsets they hold: leaders from Metadata, offsets from
//! ListOffsets sent to each leader (earliest -2, latest -1: the high watermark, Kafka's
//! `OffsetSpec`, protocol guide "ListOffsets").

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};

/// A topic's partition: (topic, partition index).
pub type TopicPartition = (String, i32);

/// ListOffsets timestamp asking for the log start offset.
pub const EARLIEST: i64 = -2;
/// ListOffsets timestamp asking for the high watermark (`read_uncommitted`).
pub const LATEST: i64 = -1;

/// Each partition of `topics` and its leader (-1 when it has none), sorted.
///
/// Errors: a topic the cluster does not have (UNKNOWN_TOPIC_OR_PARTITION), by name.
pub async fn leaders(
    admin: &mut Admin,
    topics: &[String],
) -> anyhow::Result<BTreeMap<TopicPartition, i32>> {
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    leaders_in(&admin.metadata(Some(topics.to_vec())).await?)
}

/// Each partition of the topics of a Metadata answer and its leader (-1 when it has none).
///
/// Errors: a topic's error, by name.
fn leaders_in(md: &MetadataResponse) -> anyhow::Result<BTreeMap<TopicPartition, i32>> {
    let mut out = BTreeMap::new();
    for t in &md.topics {
        let topic = t.name.as_ref().map_or(String::new(), |n| n.0.to_string());
        check(t.error_code, None, &format!("topic {topic}"))?;
        for p in &t.partitions {
            out.insert((topic.clone(), p.partition_index), p.leader_id.0);
        }
    }
    Ok(out)
}

/// The leader of each partition of `topic` for a producer: the Metadata request asks the
/// broker to create the topic where its `auto.create.topics.enable` allows, as a Kafka
/// producer's does, and is asked again while a just-created topic has no leaders yet
/// (LEADER_NOT_AVAILABLE), for up to `wait`.
///
/// Errors: the topic's error by name (UNKNOWN_TOPIC_OR_PARTITION where the broker does not
/// create topics), or LEADER_NOT_AVAILABLE after `wait`.
pub async fn leaders_for_produce(
    admin: &mut Admin,
    topic: &str,
    wait: std::time::Duration,
) -> anyhow::Result<BTreeMap<TopicPartition, i32>> {
    const LEADER_NOT_AVAILABLE: i16 = 5;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let md = admin
            .metadata_with(Some(vec![topic.to_string()]), true)
            .await?;
        anyhow::ensure!(
            !md.topics.is_empty(),
            "topic {topic}: not in the Metadata answer"
        );
        // A just-created topic answers LEADER_NOT_AVAILABLE, or partitions without leaders.
        if md
            .topics
            .iter()
            .all(|t| t.error_code != LEADER_NOT_AVAILABLE)
        {
            let leaders = leaders_in(&md)?;
            if !leaders.is_empty() && leaders.values().all(|l| *l >= 0) {
                return Ok(leaders);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            check(LEADER_NOT_AVAILABLE, None, &format!("topic {topic}"))?;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The offset at `timestamp` ([`EARLIEST`] or [`LATEST`]) of each partition in `leaders`,
/// asked of its leader.
///
/// Errors: a partition without a leader (LEADER_NOT_AVAILABLE), or the leader's error, by
/// name.
pub async fn list_offsets(
    admin: &mut Admin,
    leaders: &BTreeMap<TopicPartition, i32>,
    timestamp: i64,
) -> anyhow::Result<HashMap<TopicPartition, i64>> {
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for ((topic, partition), leader) in leaders {
        if *leader < 0 {
            anyhow::bail!("{topic}-{partition}: LEADER_NOT_AVAILABLE (no leader)");
        }
        by_leader
            .entry(*leader)
            .or_default()
            .entry(topic.clone())
            .or_default()
            .push(*partition);
    }
    let mut out = HashMap::new();
    for (leader, topics) in by_leader {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t)))
                            .with_partitions(
                                ps.into_iter()
                                    .map(|p| {
                                        ListOffsetsPartition::default()
                                            .with_partition_index(p)
                                            .with_current_leader_epoch(-1)
                                            .with_timestamp(timestamp)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let resp = admin.call(Node::Id(leader), &req).await?;
        for t in resp.topics {
            for p in t.partitions {
                let tp = (t.name.0.to_string(), p.partition_index);
                check(p.error_code, None, &format!("offsets of {}-{}", tp.0, tp.1))?;
                out.insert(tp, p.offset);
            }
        }
    }
    Ok(out)
}
