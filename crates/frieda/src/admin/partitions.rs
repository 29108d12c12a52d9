//! Where partitions live and what offsets they hold: leaders from Metadata, offsets from
//! ListOffsets sent to each leader (earliest -2, latest -1: the high watermark, Kafka's
//! `OffsetSpec`, protocol guide "ListOffsets").

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
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
    let mut out = BTreeMap::new();
    if topics.is_empty() {
        return Ok(out);
    }
    let md = admin.metadata(Some(topics.to_vec())).await?;
    for t in &md.topics {
        let topic = t.name.as_ref().map_or(String::new(), |n| n.0.to_string());
        check(t.error_code, None, &format!("topic {topic}"))?;
        for p in &t.partitions {
            out.insert((topic.clone(), p.partition_index), p.leader_id.0);
        }
    }
    Ok(out)
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
