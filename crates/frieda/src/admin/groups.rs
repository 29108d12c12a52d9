//! `frieda admin group ...`: list, describe with lag, reset offsets, delete (DeleteGroups,
//! key 42); what `kafka-consumer-groups.sh` does, for classic groups (DescribeGroups) and
//! KIP-848 consumer groups (ConsumerGroupDescribe). A group's own settings are in
//! [`super::configs`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{anyhow, bail};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, DeleteGroupsRequest,
    DescribeGroupsRequest, GroupId, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::client::{check, error_text, Admin, Node};
use super::partitions::{self, TopicPartition, EARLIEST, LATEST};
use super::table::Table;

/// GROUP_ID_NOT_FOUND: ConsumerGroupDescribe's answer for a classic group.
const GROUP_ID_NOT_FOUND: i16 = 69;

fn group_id(g: &str) -> GroupId {
    GroupId(StrBytes::from_string(g.to_string()))
}

/// Prints every group of every broker: name, type, state (ListGroups asks one coordinator,
/// so each broker is asked, as Kafka's tool does).
///
/// Errors: a broker's refusal, by name.
pub async fn list(admin: &mut Admin) -> anyhow::Result<()> {
    let md = admin.metadata(Some(Vec::new())).await?;
    let mut groups = BTreeMap::new();
    for b in &md.brokers {
        let resp = admin
            .call(Node::Id(b.node_id.0), &ListGroupsRequest::default())
            .await?;
        check(resp.error_code, None, "ListGroups")?;
        for g in resp.groups {
            // ListGroups before v5 has no type: every such group is classic.
            let kind = if g.group_type.is_empty() {
                "classic".to_string()
            } else {
                g.group_type.to_string()
            };
            groups.insert(g.group_id.0.to_string(), (kind, g.group_state.to_string()));
        }
    }
    let mut t = Table::new(&["GROUP", "TYPE", "STATE"]);
    for (g, (kind, state)) in groups {
        t.row(vec![g, kind, state]);
    }
    t.print();
    Ok(())
}

/// The member a partition is assigned to, as `kafka-consumer-groups --describe` prints it.
#[derive(Debug, Clone)]
struct Owner {
    member_id: String,
    host: String,
    client_id: String,
}

impl Owner {
    fn of(member_id: &str, host: &str, client_id: &str) -> Owner {
        Owner {
            member_id: member_id.to_string(),
            host: host.to_string(),
            client_id: client_id.to_string(),
        }
    }
}

/// A group's members and their partitions, whichever protocol it speaks.
struct Described {
    /// `Stable`, `Empty`, ... as the coordinator names it.
    state: String,
    /// `consumer` (KIP-848) or `classic`.
    kind: &'static str,
    /// Each assigned partition's member.
    owners: HashMap<TopicPartition, Owner>,
    /// Number of members.
    members: usize,
}

async fn describe_group(
    admin: &mut Admin,
    coordinator: Node,
    group: &str,
) -> anyhow::Result<Described> {
    let mut owners = HashMap::new();
    if admin
        .version_for::<ConsumerGroupDescribeRequest>(coordinator)
        .await
        .is_ok()
    {
        let req = ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_id(group)]);
        let resp = admin.call(coordinator, &req).await?;
        let g = resp
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("ConsumerGroupDescribe: empty answer"))?;
        if g.error_code != GROUP_ID_NOT_FOUND {
            check(
                g.error_code,
                g.error_message.as_ref(),
                &format!("group {group}"),
            )?;
            for m in &g.members {
                for tp in &m.assignment.topic_partitions {
                    for p in &tp.partitions {
                        owners.insert(
                            (tp.topic_name.0.to_string(), *p),
                            Owner::of(&m.member_id, &m.client_host, &m.client_id),
                        );
                    }
                }
            }
            return Ok(Described {
                state: g.group_state.to_string(),
                kind: "consumer",
                owners,
                members: g.members.len(),
            });
        }
    }
    let req = DescribeGroupsRequest::default().with_groups(vec![group_id(group)]);
    let resp = admin.call(coordinator, &req).await?;
    let g = resp
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("DescribeGroups: empty answer"))?;
    check(
        g.error_code,
        g.error_message.as_ref(),
        &format!("group {group}"),
    )?;
    for m in &g.members {
        let mut bytes = m.member_assignment.clone();
        if bytes.len() < 2 {
            continue;
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        let _ = bytes::Buf::get_i16(&mut bytes);
        let Ok(a) = ConsumerProtocolAssignment::decode(&mut bytes, version.clamp(0, 3)) else {
            continue; // not a consumer's assignment (e.g. Connect's protocol)
        };
        for tp in a.assigned_partitions {
            for p in tp.partitions {
                owners.insert(
                    (tp.topic.0.to_string(), p),
                    Owner::of(&m.member_id, &m.client_host, &m.client_id),
                );
            }
        }
    }
    Ok(Described {
        state: g.group_state.to_string(),
        kind: "classic",
        owners,
        members: g.members.len(),
    })
}

/// The group's committed offsets (OffsetFetch of every topic).
async fn committed(
    admin: &mut Admin,
    coordinator: Node,
    group: &str,
) -> anyhow::Result<BTreeMap<TopicPartition, i64>> {
    let version = admin.version_for::<OffsetFetchRequest>(coordinator).await?;
    let mut out = BTreeMap::new();
    if version >= 8 {
        let req =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(group_id(group))
                .with_member_epoch(-1)
                .with_topics(None)]);
        let resp = admin.call(coordinator, &req).await?;
        for g in resp.groups {
            check(g.error_code, None, &format!("offsets of group {group}"))?;
            for t in g.topics {
                for p in t.partitions {
                    if p.error_code == 0 && p.committed_offset >= 0 {
                        out.insert(
                            (t.name.0.to_string(), p.partition_index),
                            p.committed_offset,
                        );
                    }
                }
            }
        }
    } else {
        let req = OffsetFetchRequest::default()
            .with_group_id(group_id(group))
            .with_topics(None);
        let resp = admin.call(coordinator, &req).await?;
        check(resp.error_code, None, &format!("offsets of group {group}"))?;
        for t in resp.topics {
            for p in t.partitions {
                if p.error_code == 0 && p.committed_offset >= 0 {
                    out.insert(
                        (t.name.0.to_string(), p.partition_index),
                        p.committed_offset,
                    );
                }
            }
        }
    }
    Ok(out)
}

/// Prints the group's state and, per partition it has committed or been assigned, the
/// committed offset, the log end (high watermark), the lag and the member that owns it.
///
/// Errors: GROUP_ID_NOT_FOUND, COORDINATOR_NOT_AVAILABLE, ... by name.
pub async fn describe(admin: &mut Admin, group: &str) -> anyhow::Result<()> {
    let coordinator = admin.group_coordinator(group).await?;
    let d = describe_group(admin, coordinator, group).await?;
    let offsets = committed(admin, coordinator, group).await?;
    let topics: BTreeSet<String> = offsets
        .keys()
        .chain(d.owners.keys())
        .map(|(t, _)| t.clone())
        .collect();
    let all = partitions::leaders(admin, &topics.into_iter().collect::<Vec<_>>()).await?;
    let shown: BTreeMap<TopicPartition, i32> = all
        .into_iter()
        .filter(|(tp, _)| offsets.contains_key(tp) || d.owners.contains_key(tp))
        .collect();
    let ends = partitions::list_offsets(admin, &shown, LATEST).await?;
    println!(
        "Group: {group}  Type: {}  State: {}  Members: {}",
        d.kind, d.state, d.members
    );
    let mut t = Table::new(&[
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for tp in shown.keys() {
        let current = offsets.get(tp).copied();
        let end = ends.get(tp).copied();
        let lag = match (current, end) {
            (Some(c), Some(e)) => (e - c).max(0).to_string(),
            _ => "-".into(),
        };
        let Owner {
            member_id: member,
            host,
            client_id: client,
        } = d
            .owners
            .get(tp)
            .cloned()
            .unwrap_or(Owner::of("-", "-", "-"));
        t.row(vec![
            group.to_string(),
            tp.0.clone(),
            tp.1.to_string(),
            current.map_or("-".into(), |c| c.to_string()),
            end.map_or("-".into(), |e| e.to_string()),
            lag,
            member,
            host,
            client,
        ]);
    }
    t.print();
    Ok(())
}

/// Where `reset` moves each offset to.
#[derive(Debug, Clone, Copy)]
pub enum ResetTo {
    /// The log start offset.
    Earliest,
    /// The high watermark.
    Latest,
    /// This offset, kept within [log start, high watermark].
    Offset(i64),
    /// The committed offset plus this (negative: back), kept within the log.
    ShiftBy(i64),
}

/// Moves the committed offsets of `group` on `topics` (`topic` or `topic:0,1`) as `to` says,
/// printing the plan; commits it only with `execute` (Kafka's `--dry-run` default). The group
/// must have no members, as Kafka's tool requires.
///
/// Errors: the group is active ("can only be reset if the group is inactive"), a shift of a
/// partition with no committed offset, the coordinator's refusal (by name).
pub async fn reset_offsets(
    admin: &mut Admin,
    group: &str,
    topics: &[String],
    to: ResetTo,
    execute: bool,
) -> anyhow::Result<()> {
    let coordinator = admin.group_coordinator(group).await?;
    match describe_group(admin, coordinator, group).await {
        Ok(d) if d.state != "Empty" && d.state != "Dead" => bail!(
            "Assignments can only be reset if the group '{group}' is inactive, but the current state is {}.",
            d.state
        ),
        Ok(_) => {}
        Err(e) if e.to_string().contains("GROUP_ID_NOT_FOUND") => {}
        Err(e) => return Err(e),
    }
    let mut names = Vec::new();
    let mut only: HashMap<String, BTreeSet<i32>> = HashMap::new();
    for spec in topics {
        match spec.split_once(':') {
            Some((t, ps)) => {
                for p in ps.split(',') {
                    let p: i32 = p
                        .trim()
                        .parse()
                        .map_err(|_| anyhow!("--topic {spec}: partitions are numbers"))?;
                    only.entry(t.to_string()).or_default().insert(p);
                }
                names.push(t.to_string());
            }
            None => names.push(spec.clone()),
        }
    }
    let chosen: BTreeMap<TopicPartition, i32> = partitions::leaders(admin, &names)
        .await?
        .into_iter()
        .filter(|((t, p), _)| only.get(t).is_none_or(|ps| ps.contains(p)))
        .collect();
    if chosen.is_empty() {
        bail!("no partitions chosen: give --topic TOPIC or TOPIC:0,1");
    }
    let earliest = partitions::list_offsets(admin, &chosen, EARLIEST).await?;
    let latest = partitions::list_offsets(admin, &chosen, LATEST).await?;
    let current = committed(admin, coordinator, group).await?;
    let mut plan = BTreeMap::new();
    for tp in chosen.keys() {
        let (lo, hi) = (earliest[tp], latest[tp]);
        let target = match to {
            ResetTo::Earliest => lo,
            ResetTo::Latest => hi,
            ResetTo::Offset(o) => o,
            ResetTo::ShiftBy(n) => match current.get(tp) {
                Some(c) => c.saturating_add(n),
                None => bail!(
                    "{}-{}: no committed offset to shift (use --to-earliest, --to-latest or --to-offset)",
                    tp.0,
                    tp.1
                ),
            },
        };
        plan.insert(tp.clone(), target.clamp(lo, hi.max(lo)));
    }
    let mut t = Table::new(&["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]);
    for ((topic, p), o) in &plan {
        t.row(vec![
            group.into(),
            topic.clone(),
            p.to_string(),
            o.to_string(),
        ]);
    }
    t.print();
    if !execute {
        println!("\n(dry run: add --execute to commit these offsets)");
        return Ok(());
    }
    let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for ((topic, p), o) in &plan {
        by_topic.entry(topic).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(*p)
                .with_committed_offset(*o)
                .with_committed_leader_epoch(-1),
        );
    }
    let req = OffsetCommitRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id_or_member_epoch(-1)
        .with_retention_time_ms(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let resp = admin.call(coordinator, &req).await?;
    for t in &resp.topics {
        for p in &t.partitions {
            if p.error_code != 0 {
                bail!(
                    "commit {}-{}: {}",
                    t.name.0.as_str(),
                    p.partition_index,
                    error_text(p.error_code, None)
                );
            }
        }
    }
    println!("Committed {} offset(s) for group {group}.", plan.len());
    Ok(())
}

/// Deletes `groups` (their committed offsets too), asking each group's coordinator; prints
/// the outcome as `kafka-consumer-groups.sh --delete` does.
///
/// Errors: a group that still has members (NON_EMPTY_GROUP), an unknown one
/// (GROUP_ID_NOT_FOUND), GROUP_AUTHORIZATION_FAILED, ... by name; the other groups are still
/// deleted.
pub async fn delete(admin: &mut Admin, groups: &[String]) -> anyhow::Result<()> {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for group in groups {
        let result = async {
            let coordinator = admin.group_coordinator(group).await?;
            let req = DeleteGroupsRequest::default().with_groups_names(vec![group_id(group)]);
            let resp = admin.call(coordinator, &req).await?;
            let r = resp
                .results
                .first()
                .ok_or_else(|| anyhow!("DeleteGroups: empty answer"))?;
            check(r.error_code, r.error_message.as_ref(), "DeleteGroups")
        }
        .await;
        match result {
            Ok(()) => deleted.push(format!("'{group}'")),
            Err(e) => failed.push(format!(
                "* Group '{group}' could not be deleted due to: {e:#}"
            )),
        }
    }
    if !deleted.is_empty() {
        println!(
            "Deletion of requested consumer groups ({}) was successful.",
            deleted.join(", ")
        );
    }
    if !failed.is_empty() {
        eprintln!("Error: Deletion of some consumer groups failed:");
        for f in &failed {
            eprintln!("{f}");
        }
        bail!("{} group(s) not deleted", failed.len());
    }
    Ok(())
}
