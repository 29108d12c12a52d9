//! Where partitions live and what offsets they hold: leaders from Metadata, offsets from
//! ListOffsets sent to each leader (earliest -2, latest -1: the high watermark, Kafka's
//! `OffsetSpec`, protocol guide "ListOffsets"), and the log start moved up by DeleteRecords
//! (key 21, KIP-107; `kafka-delete-records.sh`).

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    BrokerId, DeleteRecordsRequest, ListOffsetsRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};

/// A topic's partition: (topic, partition index).
pub type TopicPartition = (String, i32);

/// ListOffsets timestamp asking for the log start offset.
pub const EARLIEST: i64 = -2;
/// ListOffsets timestamp asking for the high watermark (`read_uncommitted`).
pub const LATEST: i64 = -1;

/// Parses `TOPIC:PARTITION` (a topic name has no `:`).
///
/// Errors: no `:`, or a partition that is not a non-negative number.
pub fn parse_partition(s: &str) -> anyhow::Result<TopicPartition> {
    let (topic, partition) = s
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("`{s}`: expected TOPIC:PARTITION"))?;
    let partition: i32 = partition
        .parse()
        .ok()
        .filter(|p| *p >= 0)
        .ok_or_else(|| anyhow::anyhow!("`{s}`: the partition must be a number >= 0"))?;
    anyhow::ensure!(!topic.is_empty(), "`{s}`: no topic before `:`");
    Ok((topic.to_string(), partition))
}

/// Parses `TOPIC:PARTITION=VALUE`, the `VALUE` left as text.
///
/// Errors: no `=`, or a bad `TOPIC:PARTITION`.
pub fn parse_partition_value(s: &str) -> anyhow::Result<(TopicPartition, String)> {
    let (tp, value) = s
        .split_once('=')
        .ok_or_else(|| anyhow::anyhow!("`{s}`: expected TOPIC:PARTITION=VALUE"))?;
    Ok((parse_partition(tp)?, value.to_string()))
}

/// Groups partitions by topic, keeping each partition's value, in the order given.
pub fn by_topic<V: Clone>(items: &[(TopicPartition, V)]) -> BTreeMap<String, Vec<(i32, V)>> {
    let mut out: BTreeMap<String, Vec<(i32, V)>> = BTreeMap::new();
    for ((t, p), v) in items {
        out.entry(t.clone()).or_default().push((*p, v.clone()));
    }
    out
}

/// Partitions by leader, then by topic: (partition index, value) each.
type ByLeader<V> = BTreeMap<i32, BTreeMap<String, Vec<(i32, V)>>>;

/// Groups partitions by their leader in `leaders`, then by topic (one request per leader).
///
/// Errors: a partition `leaders` does not have (UNKNOWN_TOPIC_OR_PARTITION) or whose leader is
/// -1 (LEADER_NOT_AVAILABLE), the first in `items` order.
fn by_leader<V: Clone>(
    leaders: &BTreeMap<TopicPartition, i32>,
    items: &[(TopicPartition, V)],
) -> anyhow::Result<ByLeader<V>> {
    let mut per_leader: BTreeMap<i32, Vec<(TopicPartition, V)>> = BTreeMap::new();
    for ((topic, partition), v) in items {
        let leader = *leaders
            .get(&(topic.clone(), *partition))
            .ok_or_else(|| anyhow::anyhow!("{topic}-{partition}: UNKNOWN_TOPIC_OR_PARTITION"))?;
        anyhow::ensure!(
            leader >= 0,
            "{topic}-{partition}: LEADER_NOT_AVAILABLE (no leader)"
        );
        per_leader
            .entry(leader)
            .or_default()
            .push(((topic.clone(), *partition), v.clone()));
    }
    Ok(per_leader
        .into_iter()
        .map(|(leader, items)| (leader, by_topic(&items)))
        .collect())
}

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
    let every: Vec<(TopicPartition, ())> = leaders.keys().map(|tp| (tp.clone(), ())).collect();
    let mut out = HashMap::new();
    for (leader, topics) in by_leader(leaders, &every)? {
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
                                    .map(|(p, ())| {
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

/// Deletes the records below `offset` of each partition (-1: below the high watermark, i.e.
/// all of them), asking each partition's leader, and prints each partition's new log start
/// offset (`low_watermark`) as `kafka-delete-records.sh` does.
///
/// Errors: a partition the cluster does not have or without a leader; a count of the
/// partitions refused, each named on stderr with its error (OFFSET_OUT_OF_RANGE: an offset
/// above the high watermark; POLICY_VIOLATION: a compacted topic; ...); the others are
/// still done.
pub async fn delete_records(
    admin: &mut Admin,
    targets: &[(TopicPartition, i64)],
) -> anyhow::Result<()> {
    let topics: Vec<String> = targets
        .iter()
        .map(|((t, _), _)| t.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let leaders = leaders(admin, &topics).await?;
    let mut refused = 0;
    for (leader, topics) in by_leader(&leaders, targets)? {
        let req = DeleteRecordsRequest::default()
            .with_timeout_ms(admin.request_timeout().as_millis() as i32)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        DeleteRecordsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t)))
                            .with_partitions(
                                ps.into_iter()
                                    .map(|(p, o)| {
                                        DeleteRecordsPartition::default()
                                            .with_partition_index(p)
                                            .with_offset(o)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let resp = admin.call(Node::Id(leader), &req).await?;
        for t in resp.topics {
            for p in t.partitions {
                let what = format!("delete records of {}-{}", t.name.0, p.partition_index);
                match check(p.error_code, None, &what) {
                    Ok(()) => println!(
                        "partition: {}-{}\tlow_watermark: {}",
                        t.name.0, p.partition_index, p.low_watermark
                    ),
                    Err(e) => {
                        eprintln!("{e}");
                        refused += 1;
                    }
                }
            }
        }
    }
    anyhow::ensure!(refused == 0, "{refused} partition(s) refused");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_named_topic_colon_index() {
        assert_eq!(
            parse_partition("a.b-c:3").unwrap(),
            ("a.b-c".to_string(), 3)
        );
        assert!(parse_partition("topic").is_err());
        assert!(parse_partition("topic:-1").is_err());
        assert!(parse_partition(":0").is_err());
        assert_eq!(
            parse_partition_value("t:0=-1").unwrap(),
            (("t".to_string(), 0), "-1".to_string())
        );
        assert!(parse_partition_value("t:0").is_err());
    }

    #[test]
    fn partitions_group_by_topic_and_by_leader() {
        let items = vec![
            (("b".to_string(), 1), 10),
            (("a".to_string(), 0), 20),
            (("b".to_string(), 0), 30),
        ];
        let grouped = by_topic(&items);
        assert_eq!(grouped["a"], vec![(0, 20)]);
        assert_eq!(grouped["b"], vec![(1, 10), (0, 30)]);

        let leaders: BTreeMap<TopicPartition, i32> = [
            (("a".to_string(), 0), 2),
            (("b".to_string(), 0), 1),
            (("b".to_string(), 1), 2),
        ]
        .into();
        let grouped = by_leader(&leaders, &items).unwrap();
        assert_eq!(grouped[&2]["a"], vec![(0, 20)]);
        assert_eq!(grouped[&2]["b"], vec![(1, 10)]);
        assert_eq!(grouped[&1]["b"], vec![(0, 30)]);
        let unknown = vec![(("c".to_string(), 0), 1)];
        assert!(by_leader(&leaders, &unknown).is_err());
        let leaderless: BTreeMap<TopicPartition, i32> = [(("a".to_string(), 0), -1)].into();
        let e = by_leader(&leaderless, &[(("a".to_string(), 0), ())]).unwrap_err();
        assert!(e.to_string().contains("LEADER_NOT_AVAILABLE"), "{e}");
    }
}
