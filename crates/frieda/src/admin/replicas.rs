//! `frieda admin partition ...`: which brokers hold a partition and which one leads it.
//! Reassignment with AlterPartitionReassignments (key 45) and ListPartitionReassignments
//! (key 46), KIP-455 (`kafka-reassign-partitions.sh --execute/--cancel/--list`); leader
//! election with ElectLeaders (key 43), KIP-460 (`kafka-leader-election.sh`).

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId, ElectLeadersRequest,
    ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, error_text, Admin, Node};
use super::partitions::{by_topic, TopicPartition};
use super::table::Table;

/// ELECTION_NOT_NEEDED: the partition's leader already is the one asked for.
const ELECTION_NOT_NEEDED: i16 = 84;

fn topic_name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_string()))
}

/// Parses a replica list `1,2,3` (broker ids, the first the preferred leader).
///
/// Errors: an empty list, an id that is not a number, or an id named twice.
pub fn parse_replicas(s: &str) -> anyhow::Result<Vec<i32>> {
    let ids = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<i32>()
                .map_err(|_| anyhow::anyhow!("`{s}`: `{x}` is not a broker id"))
        })
        .collect::<anyhow::Result<Vec<i32>>>()?;
    anyhow::ensure!(!ids.is_empty(), "`{s}`: no replicas");
    let mut seen = ids.clone();
    seen.sort_unstable();
    seen.dedup();
    anyhow::ensure!(seen.len() == ids.len(), "`{s}`: a broker named twice");
    Ok(ids)
}

/// Starts moving each partition to its new replicas, or with `None` cancels the partition's
/// ongoing reassignment (its replicas go back to the ones before it).
///
/// Errors: the request's refusal (NOT_CONTROLLER, CLUSTER_AUTHORIZATION_FAILED, ...) by
/// name, or a count of the partitions refused, each named on stderr with its error
/// (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS for a
/// cancel, ...); the other partitions are still done.
pub async fn reassign(
    admin: &mut Admin,
    moves: &[(TopicPartition, Option<Vec<i32>>)],
) -> anyhow::Result<()> {
    let req = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(admin.request_timeout().as_millis() as i32)
        .with_topics(
            by_topic(moves)
                .into_iter()
                .map(|(t, ps)| {
                    ReassignableTopic::default()
                        .with_name(topic_name(&t))
                        .with_partitions(
                            ps.into_iter()
                                .map(|(p, r)| {
                                    ReassignablePartition::default()
                                        .with_partition_index(p)
                                        .with_replicas(
                                            r.map(|ids| ids.into_iter().map(BrokerId).collect()),
                                        )
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let resp = admin.call(Node::Any, &req).await?;
    check(
        resp.error_code,
        resp.error_message.as_ref(),
        "AlterPartitionReassignments",
    )?;
    let mut refused = 0;
    for t in &resp.responses {
        for p in &t.partitions {
            let tp = format!("{}-{}", t.name.0, p.partition_index);
            let cancel = moves.iter().any(|((mt, mp), r)| {
                mt == t.name.0.as_str() && *mp == p.partition_index && r.is_none()
            });
            match check(p.error_code, p.error_message.as_ref(), &tp) {
                Ok(()) if cancel => println!("Cancelled the reassignment of {tp}."),
                Ok(()) => println!("Started the reassignment of {tp}."),
                Err(e) => {
                    eprintln!("{e}");
                    refused += 1;
                }
            }
        }
    }
    anyhow::ensure!(refused == 0, "{refused} partition(s) refused");
    Ok(())
}

/// Prints the reassignments in progress (of `topics`, or all): partition, replicas, the
/// replicas being added and those being removed.
///
/// Errors: the request's refusal, by name.
pub async fn reassignments(admin: &mut Admin, topics: &[String]) -> anyhow::Result<()> {
    let wanted = if topics.is_empty() {
        None
    } else {
        // ListPartitionReassignments names partitions; take every partition of each topic.
        let leaders = super::partitions::leaders(admin, topics).await?;
        let mut ts: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p) in leaders.keys() {
            ts.entry(t.clone()).or_default().push(*p);
        }
        Some(
            ts.into_iter()
                .map(|(t, ps)| {
                    ListPartitionReassignmentsTopics::default()
                        .with_name(topic_name(&t))
                        .with_partition_indexes(ps)
                })
                .collect(),
        )
    };
    let req = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(admin.request_timeout().as_millis() as i32)
        .with_topics(wanted);
    let resp = admin.call(Node::Any, &req).await?;
    check(
        resp.error_code,
        resp.error_message.as_ref(),
        "ListPartitionReassignments",
    )?;
    let ids = |v: &[BrokerId]| {
        v.iter()
            .map(|b| b.0.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut rows = Vec::new();
    for t in &resp.topics {
        for p in &t.partitions {
            rows.push((
                (t.name.0.to_string(), p.partition_index),
                ids(&p.replicas),
                ids(&p.adding_replicas),
                ids(&p.removing_replicas),
            ));
        }
    }
    if rows.is_empty() {
        println!("No partition reassignment is in progress.");
        return Ok(());
    }
    rows.sort();
    let mut table = Table::new(&["PARTITION", "REPLICAS", "ADDING", "REMOVING"]);
    for ((t, p), replicas, adding, removing) in rows {
        table.row(vec![format!("{t}-{p}"), replicas, adding, removing]);
    }
    table.print();
    Ok(())
}

/// Elects leaders: the preferred replica (the first of the replica list), or with `unclean`
/// any live replica, also one outside the ISR (data the ISR had may be lost). `partitions`
/// empty: every partition (preferred elections only, as Kafka's tool).
///
/// Prints the partitions elected and those whose leader already was the one asked for.
///
/// Errors: unclean without partitions named; the request's refusal
/// (CLUSTER_AUTHORIZATION_FAILED, ...) or a partition's (PREFERRED_LEADER_NOT_AVAILABLE,
/// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, ...), by name.
pub async fn elect(
    admin: &mut Admin,
    unclean: bool,
    partitions: &[TopicPartition],
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !(unclean && partitions.is_empty()),
        "an unclean election names its partitions (TOPIC:PARTITION ...)"
    );
    let topic_partitions = if partitions.is_empty() {
        None
    } else {
        let named: Vec<(TopicPartition, ())> =
            partitions.iter().map(|tp| (tp.clone(), ())).collect();
        Some(
            by_topic(&named)
                .into_iter()
                .map(|(t, ps)| {
                    TopicPartitions::default()
                        .with_topic(topic_name(&t))
                        .with_partitions(ps.into_iter().map(|(p, ())| p).collect())
                })
                .collect(),
        )
    };
    let req = ElectLeadersRequest::default()
        .with_election_type(if unclean { 1 } else { 0 })
        .with_topic_partitions(topic_partitions)
        .with_timeout_ms(admin.request_timeout().as_millis() as i32);
    let resp = admin.call(Node::Any, &req).await?;
    check(resp.error_code, None, "ElectLeaders")?;
    let mut elected = Vec::new();
    let mut already = Vec::new();
    let mut failed = Vec::new();
    for t in &resp.replica_election_results {
        for p in &t.partition_result {
            let tp = format!("{}-{}", t.topic.0, p.partition_id);
            match p.error_code {
                0 => elected.push(tp),
                ELECTION_NOT_NEEDED => already.push(tp),
                code => failed.push(format!(
                    "{tp}: {}",
                    error_text(code, p.error_message.as_ref())
                )),
            }
        }
    }
    let kind = if unclean { "UNCLEAN" } else { "PREFERRED" };
    for list in [&mut elected, &mut already, &mut failed] {
        list.sort();
    }
    if !elected.is_empty() {
        println!(
            "Successfully completed leader election ({kind}) for partitions {}",
            elected.join(", ")
        );
    }
    if !already.is_empty() {
        println!(
            "Valid replica already elected for partitions {}",
            already.join(", ")
        );
    }
    if elected.is_empty() && already.is_empty() && failed.is_empty() {
        println!("No partition needed an election.");
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("Leader election ({kind}) failed for {f}");
        }
        anyhow::bail!("{} partition(s) could not be elected", failed.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_lists_are_broker_ids_each_named_once() {
        assert_eq!(parse_replicas("3,1,2").unwrap(), vec![3, 1, 2]);
        assert!(parse_replicas("1,x").is_err());
        assert!(parse_replicas("1,1").is_err());
        assert!(parse_replicas("").is_err());
    }
}
