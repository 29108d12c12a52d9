//! Measured leader placement (issue 33; the ALOR seed, "Adaptive Layout Optimization of Raft
//! Groups", `seeds/000_00b2c58f2a1e5093.txt`): leaderships move toward the replicas that
//! measure fastest, instead of staying on Kafka's fixed preferred (first) replica.
//!
//! Every broker measures what it costs to lead (its *leader cost*, µs: see
//! `frieda::cluster::leader_cost`) and sends it with each heartbeat. Every
//! `leader.placement.check.interval.ms` the active controller plans moves with [`plan_moves`]:
//!
//! - only to replicas that are in the ISR, live and whose log is online, with a known cost
//!   (never to a replica that lacks acknowledged records);
//! - **away**: a leader whose cost exceeds [`AWAY_RATIO`] × the cheapest eligible replica's
//!   plus [`AWAY_MARGIN_US`] hands its leadership to that replica (reason `slower`);
//! - **back**: a partition led elsewhere goes back to its preferred replica once that
//!   replica's cost is within [`BACK_RATIO`] × the cheapest plus [`BACK_MARGIN_US`] (reason
//!   `recovered`); between the two thresholds nothing moves (hysteresis, so a leadership does
//!   not flap on noise);
//! - the biggest gaps first, at most `leader.placement.max.moves.per.minute` (the controller
//!   counts the budget).
//!
//! With measured placement the controller's preferred-leader rebalance (Kafka's
//! `auto.leader.rebalance.enable`) is replaced by the `back` rule: a partition returns to its
//! preferred replica when that replica is healthy, without Kafka's per-broker imbalance
//! percentage. Costs are soft state of the active controller (a new controller learns them from
//! the next heartbeats); moves are ordinary leader elections in the metadata log.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::image::{BrokerId, MetadataImage};

/// A leader costs this many times the cheapest replica (plus [`AWAY_MARGIN_US`]) before its
/// leadership moves away.
pub const AWAY_RATIO: f64 = 2.0;
/// Absolute part of the move-away threshold, µs: differences below it are noise.
pub const AWAY_MARGIN_US: u64 = 2_000;
/// A preferred replica within this many times the cheapest (plus [`BACK_MARGIN_US`]) gets its
/// leaderships back.
pub const BACK_RATIO: f64 = 1.25;
/// Absolute part of the move-back threshold, µs.
pub const BACK_MARGIN_US: u64 = 500;

/// `leader.placement`: where partitions are led.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LeaderPlacement {
    /// `preferred` (Kafka's): the first replica leads whenever it is in sync
    /// (`auto.leader.rebalance.enable`).
    #[default]
    Preferred,
    /// `measured`: leaderships follow the brokers' measured leader cost (this module).
    Measured,
}

impl LeaderPlacement {
    /// Parses `preferred` or `measured`.
    pub fn parse(s: &str) -> Option<LeaderPlacement> {
        [LeaderPlacement::Preferred, LeaderPlacement::Measured]
            .into_iter()
            .find(|p| p.name() == s.trim())
    }

    /// The setting's value: `preferred` or `measured`.
    pub fn name(self) -> &'static str {
        match self {
            LeaderPlacement::Preferred => "preferred",
            LeaderPlacement::Measured => "measured",
        }
    }
}

/// The settings of leader placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementConfig {
    /// `leader.placement` (default `preferred`).
    pub mode: LeaderPlacement,
    /// `leader.placement.check.interval.ms` (default 2000): how often moves are planned.
    pub check_interval: Duration,
    /// `leader.placement.max.moves.per.minute` (default 60): leaderships moved in any minute.
    pub max_moves_per_minute: u32,
}

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            mode: LeaderPlacement::Preferred,
            check_interval: Duration::from_millis(2_000),
            max_moves_per_minute: 60,
        }
    }
}

/// Leaderships this process moved as the active controller, by reason (`slower`,
/// `recovered`): the metric `frieda_leader_placement_moves_total`.
pub static MOVES: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Why a leadership moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveReason {
    /// Its leader measures much slower than another in-sync replica.
    Slower,
    /// Its preferred replica measures healthy again.
    Recovered,
}

impl MoveReason {
    /// Both, in [`MOVES`] order.
    pub const ALL: [MoveReason; 2] = [MoveReason::Slower, MoveReason::Recovered];

    /// The `reason` label of the metrics and log lines.
    pub fn label(self) -> &'static str {
        match self {
            MoveReason::Slower => "slower",
            MoveReason::Recovered => "recovered",
        }
    }
}

/// One planned leadership move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderMove {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The current leader.
    pub from: BrokerId,
    /// The new leader (in the ISR).
    pub to: BrokerId,
    /// Why.
    pub reason: MoveReason,
    /// The current leader's cost minus the new one's, µs (what the move saves; may be
    /// negative for a `recovered` move).
    pub gap_us: i64,
}

fn away(cheapest: u64) -> u64 {
    (cheapest as f64 * AWAY_RATIO) as u64 + AWAY_MARGIN_US
}

fn back(cheapest: u64) -> u64 {
    (cheapest as f64 * BACK_RATIO) as u64 + BACK_MARGIN_US
}

/// The moves measured placement asks for in `image`, given each broker's leader cost in µs
/// (brokers without one are never chosen and their leaderships stay), biggest savings first:
/// `slower` moves by gap, then `recovered` moves; at most `budget`. Pure, so the simulator and
/// unit tests decide as the controller does.
pub fn plan_moves(
    image: &MetadataImage,
    costs: &BTreeMap<BrokerId, u64>,
    budget: usize,
) -> Vec<LeaderMove> {
    let mut moves = Vec::new();
    for (name, t) in &image.topics {
        for (i, p) in t.partitions.iter().enumerate() {
            let partition = i as i32;
            if p.leader < 0 || !p.adding.is_empty() || !p.removing.is_empty() {
                continue;
            }
            let Some(&leader_cost) = costs.get(&p.leader) else {
                continue;
            };
            let cost_of = |b: BrokerId| -> Option<u64> {
                let eligible = p.isr.contains(&b)
                    && image.is_live(b)
                    && !image.replica_offline(b, name, partition);
                eligible.then(|| costs.get(&b).copied()).flatten()
            };
            // The cheapest eligible replica, ties to the earlier in the replica list.
            let Some((best, best_cost)) = p
                .replicas
                .iter()
                .filter_map(|&b| cost_of(b).map(|c| (b, c)))
                .min_by_key(|&(_, c)| c)
            else {
                continue;
            };
            let preferred = p.replicas[0];
            let mv = |to: BrokerId, to_cost: u64, reason: MoveReason| LeaderMove {
                topic: name.clone(),
                partition,
                from: p.leader,
                to,
                reason,
                gap_us: leader_cost as i64 - to_cost as i64,
            };
            if p.leader != preferred {
                if let Some(pc) = cost_of(preferred).filter(|&c| c <= back(best_cost)) {
                    moves.push(mv(preferred, pc, MoveReason::Recovered));
                    continue;
                }
            }
            if best != p.leader && leader_cost > away(best_cost) {
                moves.push(mv(best, best_cost, MoveReason::Slower));
            }
        }
    }
    moves.sort_by(|a, b| {
        (a.reason == MoveReason::Recovered)
            .cmp(&(b.reason == MoveReason::Recovered))
            .then(b.gap_us.cmp(&a.gap_us))
            .then((&a.topic, a.partition).cmp(&(&b.topic, b.partition)))
    });
    moves.truncate(budget);
    moves
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MetaCommand;
    use crate::test_images::{brokers_and_topic, elect};

    /// Brokers 1-3, topic `t` with partitions led by 1, 2, 3 (replicas rotated), all in sync.
    fn image() -> MetadataImage {
        brokers_and_topic(vec![vec![1, 2, 3], vec![2, 3, 1], vec![3, 1, 2]])
    }

    fn costs(c: [u64; 3]) -> BTreeMap<BrokerId, u64> {
        (1..=3).zip(c).collect()
    }

    #[test]
    fn a_slow_leader_hands_over_to_the_fastest_in_sync_replica() {
        let img = image();
        // Broker 2 is slow: its partition 1 moves to the cheapest other replica (3).
        let moves = plan_moves(&img, &costs([300, 40_000, 200]), 10);
        assert_eq!(moves.len(), 1, "{moves:?}");
        let m = &moves[0];
        assert_eq!(
            (m.partition, m.from, m.to, m.reason),
            (1, 2, 3, MoveReason::Slower)
        );
        assert_eq!(m.gap_us, 39_800);
        // Within the margin: nothing moves.
        assert!(plan_moves(&img, &costs([300, 2_300, 200]), 10).is_empty());
        // Unknown costs: nothing moves.
        assert!(plan_moves(&img, &BTreeMap::new(), 10).is_empty());
        // The budget caps the moves, the biggest gap first.
        let moves = plan_moves(&img, &costs([20_000, 90_000, 100]), 1);
        assert_eq!((moves[0].partition, moves[0].to), (1, 3));
    }

    #[test]
    fn leaderships_come_back_once_the_preferred_replica_recovers() {
        let mut img = image();
        elect(&mut img, 1, 3);
        // Still slow, or between the thresholds: it stays away.
        assert!(plan_moves(&img, &costs([300, 40_000, 200]), 10).is_empty());
        assert!(plan_moves(&img, &costs([300, 1_000, 200]), 10).is_empty());
        // Healthy again: back to the preferred replica.
        let moves = plan_moves(&img, &costs([300, 600, 200]), 10);
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert_eq!(
            (moves[0].from, moves[0].to, moves[0].reason),
            (3, 2, MoveReason::Recovered)
        );
    }

    #[test]
    fn only_in_sync_live_replicas_are_chosen() {
        let mut img = image();
        // Broker 3 leaves partition 1's ISR: the slow leader 2 goes to 1 instead.
        let cmd = MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 1,
            leader: 2,
            leader_epoch: img.partition("t", 1).unwrap().leader_epoch,
            partition_epoch: img.partition("t", 1).unwrap().partition_epoch,
            isr: vec![2, 1],
            new_isr_epochs: vec![],
        };
        img.apply(&cmd, img.offset + 1).unwrap();
        let moves = plan_moves(&img, &costs([300, 40_000, 10]), 10);
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert_eq!((moves[0].partition, moves[0].to), (1, 1));
    }
}
