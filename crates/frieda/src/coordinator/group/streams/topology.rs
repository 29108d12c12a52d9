//! A streams group's topology (KIP-1071) and its configuration against the cluster's topics:
//! how many tasks each subtopology has, which partition counts the internal topics
//! (repartition and changelog topics) must have, and which of them are still to be created.
//!
//! The rules are Kafka 4.4's `InternalTopicManager.configureTopics`, `RepartitionTopics`,
//! `CopartitionedTopicsEnforcer` and `ChangelogTopics`:
//! - every source topic that is not a repartition topic must exist (else MISSING_SOURCE_TOPICS);
//! - a repartition topic without a fixed count gets the largest count among the source topics of
//!   the subtopology that writes to it, iterated until every count is known (a loop that never
//!   resolves is an invalid topology);
//! - copartitioned topics must agree (INCORRECTLY_PARTITIONED_TOPICS), repartition topics of a
//!   copartition group take the count of its external topics;
//! - a changelog topic has as many partitions as its subtopology has tasks;
//! - a subtopology has as many tasks as its largest source topic has partitions;
//! - an internal topic that exists with another count is INCORRECTLY_PARTITIONED_TOPICS; one that
//!   does not exist is to be created (MISSING_INTERNAL_TOPICS until it is).

use std::collections::{BTreeMap, BTreeSet};

/// Status codes of the StreamsGroupHeartbeat response (`StreamsGroupHeartbeatResponse.Status`,
/// Kafka 4.4).
pub mod status {
    /// The member's topology epoch is behind the group's.
    pub const STALE_TOPOLOGY: i8 = 0;
    /// A source topic does not exist.
    pub const MISSING_SOURCE_TOPICS: i8 = 1;
    /// Topics that must be copartitioned are not.
    pub const INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
    /// Internal topics are still to be created.
    pub const MISSING_INTERNAL_TOPICS: i8 = 3;
    /// A member asked the whole application to shut down.
    pub const SHUTDOWN_APPLICATION: i8 = 4;
    /// The target assignment waits for the initial rebalance delay.
    pub const ASSIGNMENT_DELAYED: i8 = 5;
    /// Not a status: the topology itself is invalid, which the heartbeat answers with the error
    /// STREAMS_INVALID_TOPOLOGY (130), as Kafka's `StreamsInvalidTopologyException`.
    pub const INVALID_TOPOLOGY: i8 = -1;
}

/// An internal topic as the topology declares it (`TopicInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicInfo {
    /// Topic name.
    pub name: String,
    /// Partition count; 0 when the coordinator decides it (always 0 for changelog topics).
    pub partitions: i32,
    /// Replication factor; 0 for the broker's default.
    pub replication_factor: i16,
    /// Topic configs to create it with.
    pub configs: BTreeMap<String, String>,
}

/// Topics that must have the same partition count, as indexes into the subtopology's
/// `source_topics` and `repartition_source_topics`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopartitionGroup {
    /// Indexes into `source_topics`.
    pub source_topics: Vec<i16>,
    /// Indexes into `repartition_source_topics`.
    pub repartition_source_topics: Vec<i16>,
}

/// One subtopology: a connected piece of the processing graph, run as one task per partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subtopology {
    /// Its id (Kafka Streams numbers them "0", "1", ...).
    pub id: String,
    /// Topics it reads, repartition topics included.
    pub source_topics: Vec<String>,
    /// Repartition topics it writes.
    pub repartition_sink_topics: Vec<String>,
    /// Changelog topics of its state stores.
    pub state_changelog_topics: Vec<TopicInfo>,
    /// Repartition topics it reads.
    pub repartition_source_topics: Vec<TopicInfo>,
    /// Copartitioning constraints.
    pub copartition_groups: Vec<CopartitionGroup>,
}

/// A streams application's topology, as the first member to join declares it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    /// Topology epoch.
    pub epoch: i32,
    /// Subtopologies.
    pub subtopologies: Vec<Subtopology>,
}

/// An internal topic the coordinator asks the broker to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicToCreate {
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor, -1 for the broker's default.
    pub replication_factor: i16,
    /// Configs.
    pub configs: BTreeMap<String, String>,
}

/// The outcome of configuring a topology.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configured {
    /// Tasks per subtopology, when every topic is in place (the topology is ready).
    pub tasks: Option<BTreeMap<String, i32>>,
    /// Why it is not ready: (status code, detail).
    pub problem: Option<(i8, String)>,
    /// Internal topics to create (MISSING_INTERNAL_TOPICS).
    pub to_create: Vec<TopicToCreate>,
}

impl Configured {
    fn failed(code: i8, detail: String) -> Configured {
        Configured {
            tasks: None,
            problem: Some((code, detail)),
            to_create: Vec::new(),
        }
    }
}

/// Kafka's topic-list summary in status details: at most 3 names, then "and N additional topics".
fn summarize<'a>(topics: impl IntoIterator<Item = &'a String>) -> String {
    let all: Vec<&String> = topics.into_iter().collect();
    if all.is_empty() {
        return "<none>".into();
    }
    let shown: Vec<&str> = all.iter().take(3).map(|s| s.as_str()).collect();
    let mut out = shown.join(", ");
    if all.len() > 3 {
        out.push_str(&format!(" and {} additional topics", all.len() - 3));
    }
    out
}

/// Configures `topology` against the existing topics (`partitions_of(name)`: the partition count
/// of an existing topic).
pub fn configure(topology: &Topology, partitions_of: &dyn Fn(&str) -> Option<i32>) -> Configured {
    let subs = &topology.subtopologies;
    let repartition: BTreeSet<&str> = subs
        .iter()
        .flat_map(|s| s.repartition_source_topics.iter().map(|t| t.name.as_str()))
        .collect();
    // External source topics must exist.
    let missing: BTreeSet<String> = subs
        .iter()
        .flat_map(|s| s.source_topics.iter())
        .filter(|t| !repartition.contains(t.as_str()) && partitions_of(t).is_none())
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Configured::failed(
            status::MISSING_SOURCE_TOPICS,
            format!("Source topics {} are missing.", summarize(&missing)),
        );
    }
    let mut decided: BTreeMap<String, i32> = BTreeMap::new();
    // Repartition topics: fixed counts first, then from the writers' sources until settled.
    for t in subs.iter().flat_map(|s| &s.repartition_source_topics) {
        if t.partitions > 0 {
            decided.insert(t.name.clone(), t.partitions);
        }
    }
    let count = |t: &str, decided: &BTreeMap<String, i32>| {
        partitions_of(t).or_else(|| decided.get(t).copied())
    };
    loop {
        let mut needed = false;
        let mut progress = false;
        for s in subs {
            for sink in &s.repartition_sink_topics {
                if decided.contains_key(sink) {
                    continue;
                }
                let n = s
                    .repartition_source_topics
                    .iter()
                    .filter_map(|t| decided.get(&t.name).copied())
                    .chain(s.source_topics.iter().filter_map(|t| partitions_of(t)))
                    .max();
                match n {
                    Some(n) => {
                        decided.insert(sink.clone(), n);
                        progress = true;
                    }
                    None => needed = true,
                }
            }
        }
        if !needed {
            break;
        }
        if !progress {
            return Configured::failed(
                status::INVALID_TOPOLOGY,
                "Failed to compute number of partitions for all repartition topics. There may be \
                 loops in the topology that cannot be resolved."
                    .into(),
            );
        }
    }
    if let Some(t) = repartition.iter().find(|t| !decided.contains_key(**t)) {
        return Configured::failed(
            status::INVALID_TOPOLOGY,
            format!(
                "Failed to compute number of partitions for all repartition topics, because a \
                 repartition source topic ({t}) is never used as a sink topic."
            ),
        );
    }
    // Copartitioning.
    let fixed: BTreeSet<&str> = subs
        .iter()
        .flat_map(|s| &s.repartition_source_topics)
        .filter(|t| t.partitions > 0)
        .map(|t| t.name.as_str())
        .collect();
    for s in subs {
        for g in &s.copartition_groups {
            let topics: BTreeSet<String> = g
                .source_topics
                .iter()
                .filter_map(|&i| s.source_topics.get(i as usize).cloned())
                .chain(
                    g.repartition_source_topics
                        .iter()
                        .filter_map(|&i| s.repartition_source_topics.get(i as usize))
                        .map(|t| t.name.clone()),
                )
                .collect();
            if let Err(detail) = copartition(&topics, &repartition, &fixed, &mut decided, &count) {
                return Configured::failed(status::INCORRECTLY_PARTITIONED_TOPICS, detail);
            }
        }
    }
    // Tasks per subtopology, then changelog topics.
    let mut tasks = BTreeMap::new();
    for s in subs {
        let n = s
            .source_topics
            .iter()
            .chain(s.repartition_source_topics.iter().map(|t| &t.name))
            .filter_map(|t| count(t, &decided))
            .max();
        let Some(n) = n else {
            return Configured::failed(
                status::INVALID_TOPOLOGY,
                format!("No source topics found for subtopology {}", s.id),
            );
        };
        tasks.insert(s.id.clone(), n);
        for t in &s.state_changelog_topics {
            decided.insert(t.name.clone(), n);
        }
    }
    // Internal topics: created if missing, refused if they exist with another count.
    let mut to_create = BTreeMap::new();
    for t in subs.iter().flat_map(|s| {
        s.repartition_source_topics
            .iter()
            .chain(&s.state_changelog_topics)
    }) {
        let want = decided[&t.name];
        match partitions_of(&t.name) {
            Some(have) if have != want => {
                return Configured::failed(
                    status::INCORRECTLY_PARTITIONED_TOPICS,
                    format!(
                        "Existing topic {} has different number of partitions: expected {want}, found {have}",
                        t.name
                    ),
                )
            }
            Some(_) => {}
            None => {
                to_create.insert(
                    t.name.clone(),
                    TopicToCreate {
                        name: t.name.clone(),
                        partitions: want,
                        replication_factor: if t.replication_factor > 0 {
                            t.replication_factor
                        } else {
                            -1
                        },
                        configs: t.configs.clone(),
                    },
                );
            }
        }
    }
    if to_create.is_empty() {
        Configured {
            tasks: Some(tasks),
            problem: None,
            to_create: Vec::new(),
        }
    } else {
        Configured {
            tasks: None,
            problem: Some((
                status::MISSING_INTERNAL_TOPICS,
                format!(
                    "Internal topics are missing: {}",
                    summarize(to_create.keys())
                ),
            )),
            to_create: to_create.into_values().collect(),
        }
    }
}

/// The partition count of a topic: an existing topic's, else one decided so far (the map).
type PartitionCount<'a> = dyn Fn(&str, &BTreeMap<String, i32>) -> Option<i32> + 'a;

/// One copartition group (Kafka's `CopartitionedTopicsEnforcer.enforce`): its repartition
/// topics take the count of its external topics (which must agree), or, when it has only
/// repartition topics, the fixed count (which must agree) or else the largest.
fn copartition(
    topics: &BTreeSet<String>,
    repartition: &BTreeSet<&str>,
    fixed: &BTreeSet<&str>,
    decided: &mut BTreeMap<String, i32>,
    count: &PartitionCount<'_>,
) -> Result<(), String> {
    if topics.is_empty() {
        return Ok(());
    }
    let counts: BTreeMap<&str, i32> = topics
        .iter()
        .filter_map(|t| Some((t.as_str(), count(t, decided)?)))
        .collect();
    let (internal, external): (BTreeMap<&str, i32>, BTreeMap<&str, i32>) = counts
        .iter()
        .map(|(t, n)| (*t, *n))
        .partition(|(t, _)| repartition.contains(t));
    let listed = |m: &BTreeMap<&str, i32>| {
        m.iter()
            .map(|(t, n)| format!("{t}={n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let n = if external.is_empty() {
        let fixed_here: Vec<i32> = internal
            .iter()
            .filter(|(t, _)| fixed.contains(*t))
            .map(|(_, n)| *n)
            .collect();
        match fixed_here.first() {
            Some(&first) if fixed_here.iter().any(|&n| n != first) => {
                return Err(format!(
                    "Following topics do not have the same number of partitions: [{}]",
                    listed(&internal)
                ))
            }
            Some(&first) => first,
            None => internal.values().copied().max().unwrap_or(0),
        }
    } else {
        let first = *external.values().next().expect("non-empty");
        if external.values().any(|&n| n != first) {
            return Err(format!(
                "Following topics do not have the same number of partitions: [{}]",
                listed(&external)
            ));
        }
        first
    };
    for (t, have) in internal {
        if fixed.contains(t) && have != n {
            return Err(format!(
                "Number of partitions [{have}] of repartition topic [{t}] doesn't match number of partitions [{n}] of the source topic."
            ));
        }
        decided.insert(t.to_string(), n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, partitions: i32) -> TopicInfo {
        TopicInfo {
            name: name.into(),
            partitions,
            ..Default::default()
        }
    }

    /// Word count: subtopology 0 reads `input` and writes `app-repartition`; subtopology 1 reads
    /// it into a store with a changelog.
    fn word_count() -> Topology {
        Topology {
            epoch: 0,
            subtopologies: vec![
                Subtopology {
                    id: "0".into(),
                    source_topics: vec!["input".into()],
                    repartition_sink_topics: vec!["app-repartition".into()],
                    ..Default::default()
                },
                Subtopology {
                    id: "1".into(),
                    source_topics: vec!["app-repartition".into()],
                    repartition_source_topics: vec![info("app-repartition", 0)],
                    state_changelog_topics: vec![info("app-changelog", 0)],
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn a_missing_source_topic_is_reported() {
        let c = configure(&word_count(), &|_| None);
        assert_eq!(c.problem.unwrap().0, status::MISSING_SOURCE_TOPICS);
        assert!(c.tasks.is_none());
    }

    #[test]
    fn internal_topics_take_the_source_count_and_are_created() {
        let c = configure(&word_count(), &|t| (t == "input").then_some(6));
        assert_eq!(
            c.problem.as_ref().unwrap().0,
            status::MISSING_INTERNAL_TOPICS
        );
        let made: Vec<(&str, i32)> = c
            .to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(made, vec![("app-changelog", 6), ("app-repartition", 6)]);
        let ready = configure(&word_count(), &|t| match t {
            "input" | "app-repartition" | "app-changelog" => Some(6),
            _ => None,
        });
        assert_eq!(ready.problem, None);
        assert_eq!(
            ready.tasks.unwrap(),
            BTreeMap::from([("0".to_string(), 6), ("1".to_string(), 6)])
        );
    }

    #[test]
    fn an_existing_internal_topic_with_another_count_is_refused() {
        let c = configure(&word_count(), &|t| match t {
            "input" => Some(6),
            "app-repartition" => Some(3),
            _ => None,
        });
        assert_eq!(c.problem.unwrap().0, status::INCORRECTLY_PARTITIONED_TOPICS);
    }

    #[test]
    fn copartitioned_sources_must_agree() {
        let join = Topology {
            epoch: 0,
            subtopologies: vec![Subtopology {
                id: "0".into(),
                source_topics: vec!["left".into(), "right".into()],
                copartition_groups: vec![CopartitionGroup {
                    source_topics: vec![0, 1],
                    repartition_source_topics: vec![],
                }],
                ..Default::default()
            }],
        };
        let bad = configure(&join, &|t| Some(if t == "left" { 4 } else { 2 }));
        assert_eq!(
            bad.problem.unwrap().0,
            status::INCORRECTLY_PARTITIONED_TOPICS
        );
        let good = configure(&join, &|_| Some(4));
        assert_eq!(good.tasks.unwrap()["0"], 4);
    }

    #[test]
    fn a_repartition_topic_nobody_writes_is_refused() {
        let t = Topology {
            epoch: 0,
            subtopologies: vec![Subtopology {
                id: "0".into(),
                source_topics: vec!["r".into()],
                repartition_source_topics: vec![info("r", 0)],
                ..Default::default()
            }],
        };
        assert_eq!(
            configure(&t, &|_| None).problem.unwrap().0,
            status::INVALID_TOPOLOGY
        );
    }
}
