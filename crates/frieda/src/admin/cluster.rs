//! `frieda admin cluster status`: the brokers (DescribeCluster), the controller quorum
//! (DescribeQuorum on `__cluster_metadata`, KIP-595/KIP-853) and the partitions that need an
//! operator (Metadata: under-replicated, under `min.insync.replicas`, offline).

use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::{DescribeClusterRequest, DescribeQuorumRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};
use super::table::Table;

/// Under-replicated partitions listed one by one without `--verbose`.
const UNDER_REPLICATED_LISTED: usize = 10;

/// Prints the cluster's state; fails when a partition is offline (exit status for scripts).
/// Fenced brokers are listed as such where the broker answers DescribeCluster v2 (KIP-1073);
/// under-replicated partitions are summarised unless `verbose`.
///
/// Errors: a refused request (by Kafka's error name), or offline partitions.
pub async fn status(admin: &mut Admin, verbose: bool) -> anyhow::Result<()> {
    let version = admin
        .version_for::<DescribeClusterRequest>(Node::Any)
        .await?;
    let cluster = admin
        .call(
            Node::Any,
            &DescribeClusterRequest::default().with_include_fenced_brokers(version >= 2),
        )
        .await?;
    check(
        cluster.error_code,
        cluster.error_message.as_ref(),
        "DescribeCluster",
    )?;
    println!("Cluster id: {}", cluster.cluster_id.as_str());
    println!("Controller (active): {}", cluster.controller_id.0);
    let mut brokers = Table::new(&["BROKER", "ADDRESS", "RACK", "STATE"]);
    let mut sorted: Vec<_> = cluster.brokers.iter().collect();
    sorted.sort_by_key(|b| b.broker_id.0);
    for b in sorted {
        brokers.row(vec![
            b.broker_id.0.to_string(),
            format!("{}:{}", b.host.as_str(), b.port),
            b.rack.as_ref().map_or("-".into(), |r| r.to_string()),
            if b.is_fenced {
                "fenced (down, or catching up)"
            } else {
                "running"
            }
            .into(),
        ]);
    }
    println!();
    brokers.print();

    let quorum = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
        .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
        .with_partitions(vec![PartitionData::default().with_partition_index(0)])]);
    match admin.call(Node::Any, &quorum).await {
        Ok(q) => {
            check(q.error_code, q.error_message.as_ref(), "DescribeQuorum")?;
            let p = q
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .ok_or_else(|| anyhow::anyhow!("DescribeQuorum: no partition in the answer"))?;
            check(p.error_code, p.error_message.as_ref(), "DescribeQuorum")?;
            println!();
            println!(
                "Controller quorum: leader {}, epoch {}, high watermark {}",
                p.leader_id.0, p.leader_epoch, p.high_watermark
            );
            let leader_end = p
                .current_voters
                .iter()
                .find(|v| v.replica_id == p.leader_id)
                .map_or(p.high_watermark, |v| v.log_end_offset);
            let mut t = Table::new(&["NODE", "ROLE", "LOG END OFFSET", "LAG"]);
            let mut row = |id: i32, role: &str, leo: i64| {
                t.row(vec![
                    id.to_string(),
                    role.into(),
                    leo.to_string(),
                    (leader_end - leo).max(0).to_string(),
                ])
            };
            for v in &p.current_voters {
                let role = if v.replica_id == p.leader_id {
                    "leader"
                } else {
                    "voter"
                };
                row(v.replica_id.0, role, v.log_end_offset);
            }
            for o in &p.observers {
                row(o.replica_id.0, "observer", o.log_end_offset);
            }
            t.print();
        }
        Err(e) => println!("\nController quorum: not described ({e:#})"),
    }

    let metadata = admin.metadata(None).await?;
    let (mut total, mut under, mut offline) = (0usize, Vec::new(), Vec::new());
    // Broker -> how many partitions lack it in their ISR.
    let mut missing: std::collections::BTreeMap<i32, usize> = Default::default();
    for topic in &metadata.topics {
        let name = topic.name.as_ref().map_or("?", |n| n.0.as_str());
        for p in &topic.partitions {
            total += 1;
            let id = format!("{name}-{}", p.partition_index);
            if p.leader_id.0 < 0 {
                offline.push(id);
            } else if p.isr_nodes.len() < p.replica_nodes.len() {
                for r in p.replica_nodes.iter().filter(|r| !p.isr_nodes.contains(r)) {
                    *missing.entry(r.0).or_default() += 1;
                }
                under.push(format!(
                    "{id} (ISR {:?} of {:?})",
                    p.isr_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
                    p.replica_nodes.iter().map(|b| b.0).collect::<Vec<_>>()
                ));
            }
        }
    }
    println!();
    println!(
        "Partitions: {total}, under-replicated: {}, offline: {}",
        under.len(),
        offline.len()
    );
    let listed = if verbose {
        under.len()
    } else {
        UNDER_REPLICATED_LISTED
    };
    for p in under.iter().take(listed) {
        println!("  under-replicated: {p}");
    }
    if under.len() > listed {
        println!(
            "  ... and {} more (--verbose lists them all)",
            under.len() - listed
        );
    }
    if !missing.is_empty() {
        let by_broker: Vec<String> = missing
            .iter()
            .map(|(b, n)| format!("broker {b}: {n}"))
            .collect();
        println!("  out of the ISR: {}", by_broker.join(", "));
    }
    for p in &offline {
        println!("  offline: {p}");
    }
    if !offline.is_empty() {
        anyhow::bail!("{} partition(s) offline", offline.len());
    }
    Ok(())
}
