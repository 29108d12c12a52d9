//! The active controller's periodic work as decisions over its metadata image (sans-IO): what
//! one round of its tick records (the cluster-wide defaults of its static configuration, the
//! cluster id, the fencing of brokers whose session expired) and which partitions Kafka's auto
//! leader rebalance gives back to their preferred replica. The controller
//! ([`crate::controller::Controller`]) proposes these commands; the cluster simulator
//! (`frieda-sim`) commits the same ones, so both run one rule.

use std::collections::BTreeMap;

use crate::image::MetadataImage;
use crate::image::{BrokerId, MetaCommand};
use crate::sessions::BrokerSessions;

/// The cluster-wide defaults the active controller's static configuration sets and its tick
/// records in the metadata log where the image differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election: bool,
    /// `replication.ack.policy=quorum` (issue 34).
    pub quorum_acks: bool,
    /// `min.insync.replicas` (at least 1).
    pub min_insync_replicas: i32,
}

/// The commands one round of the controller's own work proposes, in order: each default of
/// `defaults` the image does not hold yet (`SetUncleanDefault`, `SetAckPolicyDefault`,
/// `SetMinInsyncDefault`, the last also when ELR is on and the `min.insync.replicas` configs
/// break KAFKA-16540's rules: applying it repairs them), `InitCluster` with `new_cluster_id()`
/// when the cluster has no id yet (called only then), and a `FenceBroker` for every live broker
/// whose session `sessions` saw expire at `now_ms` (`session_timeout_ms`,
/// [`BrokerSessions::expired`]).
pub fn tick(
    image: &MetadataImage,
    defaults: Defaults,
    sessions: &BrokerSessions,
    (now_ms, session_timeout_ms): (u64, u64),
    new_cluster_id: impl FnOnce() -> String,
) -> Vec<MetaCommand> {
    let mut commands = Vec::new();
    if image.unclean_default != defaults.unclean_leader_election {
        commands.push(MetaCommand::SetUncleanDefault {
            enable: defaults.unclean_leader_election,
        });
    }
    if image.quorum_ack_default != defaults.quorum_acks {
        commands.push(MetaCommand::SetAckPolicyDefault {
            quorum: defaults.quorum_acks,
        });
    }
    let min_insync = defaults.min_insync_replicas.max(1);
    if image.min_insync_default != min_insync || image.min_isr_configs_need_reset() {
        commands.push(MetaCommand::SetMinInsyncDefault { min_insync });
    }
    if image.cluster_id.is_none() {
        commands.push(MetaCommand::InitCluster {
            cluster_id: new_cluster_id(),
        });
    }
    for (id, incarnation) in sessions.expired(image, now_ms, session_timeout_ms) {
        commands.push(MetaCommand::FenceBroker { id, incarnation });
    }
    commands
}

/// A broker whose preferred partitions are led elsewhere for more than the allowed share, and
/// the partitions to elect it back for ([`preferred_leader_elections`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imbalance {
    /// The preferred replica (the first of a partition's replicas).
    pub broker: BrokerId,
    /// The share of its preferred partitions led elsewhere, in percent (rounded down).
    pub percent: usize,
    /// (topic, partition) to elect it the leader of: each led elsewhere while it is live, in
    /// the ISR, and the partition is not adding replicas.
    pub partitions: Vec<(String, i32)>,
}

/// Kafka's auto leader rebalance selection (`QuorumController`'s
/// `maybeTriggerLeaderRebalance`, `leader.imbalance.per.broker.percentage`): for each broker,
/// the share of the partitions it is the preferred replica of that another broker leads
/// although it could lead (live, in the ISR, no reassignment adding replicas); a broker over
/// `imbalance_percent` gets those partitions back. Brokers in id order, partitions in topic
/// then index order.
pub fn preferred_leader_elections(image: &MetadataImage, imbalance_percent: u32) -> Vec<Imbalance> {
    let mut per_broker: BTreeMap<BrokerId, (usize, Vec<(String, i32)>)> = BTreeMap::new();
    for (name, t) in &image.topics {
        for (i, p) in t.partitions.iter().enumerate() {
            let Some(&preferred) = p.replicas.first() else {
                continue;
            };
            let entry = per_broker.entry(preferred).or_default();
            entry.0 += 1;
            if p.leader != preferred
                && p.isr.contains(&preferred)
                && image.is_live(preferred)
                && p.adding.is_empty()
            {
                entry.1.push((name.clone(), i as i32));
            }
        }
    }
    per_broker
        .into_iter()
        .filter_map(|(broker, (total, partitions))| {
            let percent = partitions.len() * 100 / total.max(1);
            (!partitions.is_empty() && percent > imbalance_percent as usize).then_some(Imbalance {
                broker,
                percent,
                partitions,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_images::{brokers_and_topic, elect};

    /// Brokers 1-3 registered, topic `t` with partitions preferring 1, 1, 2, 3.
    fn image() -> MetadataImage {
        brokers_and_topic(vec![
            vec![1, 2, 3],
            vec![1, 3, 2],
            vec![2, 3, 1],
            vec![3, 1, 2],
        ])
    }

    const DEFAULTS: Defaults = Defaults {
        unclean_leader_election: false,
        quorum_acks: false,
        min_insync_replicas: 2,
    };

    #[test]
    fn a_tick_records_what_the_image_lacks_once_and_fences_silent_brokers() {
        let mut img = image();
        let mut named = 0;
        let commands = tick(
            &img,
            DEFAULTS,
            &BrokerSessions::default(),
            (0, 9_000),
            || {
                named += 1;
                "c1".into()
            },
        );
        assert_eq!(named, 1);
        assert!(commands.contains(&MetaCommand::SetMinInsyncDefault { min_insync: 2 }));
        assert!(commands.contains(&MetaCommand::InitCluster {
            cluster_id: "c1".into()
        }));
        let fenced: Vec<BrokerId> = commands
            .iter()
            .filter_map(|c| match c {
                MetaCommand::FenceBroker { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(fenced, vec![1, 2, 3], "no broker has a session here");
        for c in &commands {
            if !matches!(c, MetaCommand::FenceBroker { .. }) {
                img.apply(c, img.offset + 1).unwrap();
            }
        }
        // Once recorded, a tick asks for nothing but the fences.
        let again = tick(
            &img,
            DEFAULTS,
            &BrokerSessions::default(),
            (0, 9_000),
            || unreachable!("the cluster has an id"),
        );
        assert!(again
            .iter()
            .all(|c| matches!(c, MetaCommand::FenceBroker { .. })));
    }

    #[test]
    fn only_a_broker_over_the_imbalance_share_gets_its_partitions_back() {
        let mut img = image();
        assert!(preferred_leader_elections(&img, 10).is_empty());
        // Broker 1 prefers partitions 0 and 1; one of them led elsewhere is 50 %.
        elect(&mut img, 1, 3);
        assert_eq!(
            preferred_leader_elections(&img, 10),
            vec![Imbalance {
                broker: 1,
                percent: 50,
                partitions: vec![("t".into(), 1)],
            }]
        );
        assert!(
            preferred_leader_elections(&img, 50).is_empty(),
            "not over 50 %"
        );
    }
}
