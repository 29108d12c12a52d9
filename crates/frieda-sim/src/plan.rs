//! A run's plan, drawn from its seed: the cluster's shape and the timed list of faults,
//! operator actions and produce requests. Shrinking a failing run removes entries from the plan
//! and runs it again ([`crate::shrink`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Simulated milliseconds.
pub type Time = u64;

/// The shape and settings of a simulated cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Brokers, ids `1..=brokers` (each also heartbeats to the one controller quorum).
    pub brokers: i32,
    /// Partitions of the one topic.
    pub partitions: i32,
    /// Replication factor.
    pub rf: usize,
    /// `min.insync.replicas`.
    pub min_isr: usize,
    /// `flush.messages=1`: every append is fsync'ed before it counts (leaders before they
    /// acknowledge, followers before they fetch again). Power losses are only in these runs
    /// and in runs without acknowledged data at risk (see `crate::check`).
    pub fsync: bool,
    /// `replication.ack.policy=quorum` (issue 34): `acks=all` is acknowledged on
    /// `min.insync.replicas` replicas and leaders are elected from the replicas' claims
    /// (`frieda_meta::quorum`); Kafka's ISR rule otherwise. Drawn from its own generator so
    /// the rest of a seed's plan is what it was before the policy existed.
    pub quorum: bool,
    /// Most batches a replica fetch returns (`replica.fetch.max.bytes` in batches).
    pub fetch_max_batches: usize,
    /// Tiered storage (KIP-405, issue 57): segments copied to a simulated object store by the
    /// broker's own copy task, local retention over the copies, followers starting again above
    /// them. Drawn from its own generator, so the rest of a seed's plan is what it was before.
    pub tier: Option<TierShape>,
    /// The offsets partition of the group coordinator (issue 57, `crate::groups`): the last
    /// partition of the topic, written only by offset commits. Drawn from its own generator
    /// (never in tiered runs: Kafka's offsets topic is not tiered), so the rest of a seed's
    /// plan is what it was before.
    pub offsets_partition: Option<i32>,
    /// A share group (KIP-932, `crate::share`) consumes partition 0, its state kept by the
    /// group coordinator of the offsets partition (only in runs with one). Drawn from its own
    /// generator, so the rest of a seed's plan is what it was before.
    pub share: bool,
    /// The transaction state partition (`__transaction_state`, `crate::txn`): transactional
    /// producers (KIP-98 / KIP-890 transactions v2) write to partition 0, their coordinator is
    /// this partition's leader; one more partition of the topic, its leaders killed. Drawn from
    /// its own generator (never in tiered runs), so the rest of a seed's plan is what it was
    /// before.
    pub txn_partition: Option<i32>,
    /// When faults and new produce requests stop; everything heals and the run settles until
    /// `end`.
    pub heal: Time,
    /// The end of the run.
    pub end: Time,
    /// Every replica's log also runs the broker's own partition log in lock-step on an
    /// in-memory file system, checked against the model after each operation
    /// (`real_log.rs`). On in every generated plan (`frieda-sim --model-log-only` turns it
    /// off).
    pub real_log: bool,
}

/// The tiered-storage settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierShape {
    /// Records a local segment takes before it rolls, per broker (index `id - 1`): replicas
    /// roll at different offsets, as `segment.ms`, restarts and truncations make them.
    pub segment_records: Vec<i64>,
    /// Closed local segments local retention keeps (`local.retention.bytes` in segments).
    pub keep_local: usize,
    /// `remote.log.manager.task.interval.ms`.
    pub task_interval: Time,
    /// How long an object-store request takes, ms (lowest, highest).
    pub store_latency: (Time, Time),
}

/// One planned event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A client sends a produce of `count` records to `partition` with `acks` (-1 or 1), to the
    /// leader it believes in (a stale guess when `stale`).
    Produce {
        /// Partition.
        partition: i32,
        /// -1 (all) or 1.
        acks: i16,
        /// Records.
        count: i64,
        /// Sent to a random broker instead of the leader.
        stale: bool,
    },
    /// SIGKILL; the page cache survives. Restarted after `down` ms.
    Crash {
        /// Broker.
        broker: i32,
        /// Down for, ms.
        down: Time,
    },
    /// The machine loses power: unsynced writes are gone. Restarted after `down` ms.
    PowerLoss {
        /// Broker.
        broker: i32,
        /// Down for, ms.
        down: Time,
    },
    /// SIGSTOP for `len` ms (its clocks keep running).
    Pause {
        /// Broker.
        broker: i32,
        /// Paused for, ms.
        len: Time,
    },
    /// The machine is suspended for `len` ms: the process stops and its monotonic clock
    /// (CLOCK_MONOTONIC) stops too; CLOCK_BOOTTIME keeps counting.
    Suspend {
        /// Broker.
        broker: i32,
        /// Suspended for, ms.
        len: Time,
    },
    /// SIGTERM: controlled shutdown, then down for `down` ms.
    Shutdown {
        /// Broker.
        broker: i32,
        /// Down for, ms.
        down: Time,
    },
    /// The network between `side` and everyone else (brokers and, if `with_controller`, the
    /// controller quorum) drops everything for `len` ms.
    Partition {
        /// Brokers cut off.
        side: Vec<i32>,
        /// Cut off from the controller too.
        with_controller: bool,
        /// For, ms.
        len: Time,
    },
    /// The controller quorum answers nothing for `len` ms (an election); the next active
    /// controller gives every broker a new session.
    ControllerOutage {
        /// For, ms.
        len: Time,
    },
    /// Every message to or from `broker` takes `extra` ms longer, for `len` ms (a slow link or
    /// an overloaded machine: its fetches keep coming, late).
    SlowLink {
        /// Broker.
        broker: i32,
        /// Added delay, ms.
        extra: Time,
        /// For, ms.
        len: Time,
    },
    /// Kill the partition's leader (SIGKILL, down for `down` ms), then kill the next leader
    /// `gap` ms after it takes over (Jepsen's leader-killing nemesis).
    KillLeaderTwice {
        /// Partition.
        partition: i32,
        /// After the next leader takes over, ms.
        gap: Time,
        /// Each stays down for, ms.
        down: Time,
    },
    /// The next fsync of `partition`'s log on `broker` fails.
    FsyncFailure {
        /// Broker.
        broker: i32,
        /// Partition.
        partition: i32,
    },
    /// An operator sets the topic's `min.insync.replicas` (kafka-configs --alter): the
    /// controller records it (clearing the ELR when the value changes, KAFKA-16540) and each
    /// broker applies it when its image has it, as the broker's `apply_topic_configs`.
    AlterMinInsync {
        /// The new value (1 to the replication factor).
        value: usize,
    },
    /// The controller's auto leader rebalance runs (`leader.imbalance.check.interval.seconds`
    /// come round): every broker over `leader.imbalance.per.broker.percentage` (10) is elected
    /// back for the partitions `frieda_meta::housekeeping::preferred_leader_elections` selects,
    /// the controller's own selection.
    RebalanceLeaders,
    /// Preferred-leader election (kafka-leader-election --election-type preferred).
    ElectPreferred {
        /// Partition.
        partition: i32,
    },
    /// Measured leader placement (`leader.placement=measured`, issue 33): the controller plans
    /// moves with `frieda_meta::leadership::plan_moves` for these leader costs (µs, brokers
    /// `1..`) and elects each target, as the real controller does.
    PlaceLeaders {
        /// Each broker's reported cost, by broker id - 1.
        costs: Vec<u64>,
    },
    /// Reassignment to `target` (kafka-reassign-partitions).
    Reassign {
        /// Partition.
        partition: i32,
        /// New replicas.
        target: Vec<i32>,
    },
    /// The object store hangs for `len` ms: requests sent meanwhile complete after it (a
    /// SIGSTOPped store, a network stall).
    StoreStall {
        /// For, ms.
        len: Time,
    },
    /// The object store answers every request with 503 SlowDown for `len` ms.
    StoreErrors {
        /// For, ms.
        len: Time,
    },
    /// A client commits the next offset of `group`'s partition `key` (OffsetCommit, `acks=all`
    /// into the offsets partition), to the coordinator it believes in (a random broker when
    /// `stale`).
    Commit {
        /// Group (index into the run's group names).
        group: u8,
        /// Partition of the consumed topic.
        key: u8,
        /// Sent to a random broker instead of the coordinator.
        stale: bool,
    },
    /// A transactional producer commits `group`'s partition `key` in a transaction
    /// (TxnOffsetCommit into the offsets partition), then its transaction coordinator writes
    /// the marker: COMMIT, or ABORT when `abort` or the commit was not answered OK.
    TxnCommit {
        /// Group (index into the run's group names).
        group: u8,
        /// Partition of the consumed topic.
        key: u8,
        /// The transaction aborts.
        abort: bool,
    },
    /// Share group member `member` fetches (ShareFetch) from partition 0's leader and
    /// acknowledges what it gets (`crate::share`).
    ShareFetch {
        /// The member.
        member: u8,
    },
    /// SIGKILL of the partition's current leader (tiered runs: most often in the middle of a
    /// copy), restarted after `down` ms.
    CrashLeader {
        /// Partition.
        partition: i32,
        /// Down for, ms.
        down: Time,
    },
}

impl Action {
    /// A client's request (produce, offset commit), not a fault or operator action.
    pub fn is_client_request(&self) -> bool {
        matches!(
            self,
            Action::Produce { .. }
                | Action::Commit { .. }
                | Action::TxnCommit { .. }
                | Action::ShareFetch { .. }
        )
    }
}

/// A run: its seed, shape and timed actions (sorted by time).
#[derive(Debug, Clone)]
pub struct Plan {
    /// The seed everything else was drawn from (the network's randomness too).
    pub seed: u64,
    /// Cluster shape.
    pub shape: Shape,
    /// `(time, action)`, by time.
    pub actions: Vec<(Time, Action)>,
}

/// Whether an action takes a broker away for a while (at most one such at a time, so the
/// cluster can make progress).
fn takes_broker_down(a: &Action) -> Option<(i32, Time)> {
    match a {
        Action::KillLeaderTwice { down, gap, .. } => Some((0, 2 * down + gap + 4_000)),
        Action::CrashLeader { down, .. } => Some((0, *down)),
        Action::Crash { broker, down }
        | Action::PowerLoss { broker, down }
        | Action::Shutdown { broker, down } => Some((*broker, *down)),
        Action::Pause { broker, len } | Action::Suspend { broker, len } => Some((*broker, *len)),
        _ => None,
    }
}

impl Plan {
    /// The plan of `seed`.
    pub fn generate(seed: u64) -> Plan {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let brokers = rng.gen_range(3..=5);
        let rf = if brokers >= 4 && rng.gen_bool(0.3) {
            4
        } else {
            3
        };
        let min_isr = match rng.gen_range(0..10) {
            0 => 1,
            1 => rf,
            _ => 2,
        };
        let shape = Shape {
            brokers,
            partitions: rng.gen_range(1..=3),
            rf,
            min_isr,
            fsync: rng.gen_bool(0.3),
            quorum: ChaCha8Rng::seed_from_u64(seed ^ 0x5155_4f52_554d).gen_bool(0.5),
            fetch_max_batches: [1, 2, 8, 32][rng.gen_range(0..4)],
            tier: None,
            offsets_partition: None,
            txn_partition: None,
            share: false,
            heal: 40_000,
            end: 60_000,
            real_log: true,
        };
        let mut tier_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5449_4552_4544);
        let mut shape = shape;
        if tier_rng.gen_bool(0.5) {
            let base = tier_rng.gen_range(10..60);
            shape.tier = Some(TierShape {
                segment_records: (0..brokers)
                    .map(|_| {
                        if tier_rng.gen_bool(0.5) {
                            base
                        } else {
                            tier_rng.gen_range(10..60)
                        }
                    })
                    .collect(),
                keep_local: tier_rng.gen_range(0..=2),
                task_interval: [50, 200, 1_000][tier_rng.gen_range(0..3)],
                store_latency: if tier_rng.gen_bool(0.3) {
                    (20, 400)
                } else {
                    (1, 30)
                },
            });
        }
        let mut actions = Vec::new();
        // Produce requests: 20-80 per second over the fault phase.
        let rate = rng.gen_range(20..=80);
        let mut t: Time = 2_000;
        while t < shape.heal {
            actions.push((
                t,
                Action::Produce {
                    partition: rng.gen_range(0..shape.partitions),
                    acks: if rng.gen_bool(0.8) { -1 } else { 1 },
                    count: rng.gen_range(1..=5),
                    stale: rng.gen_bool(0.1),
                },
            ));
            t += rng.gen_range(1..=2_000 / rate);
        }
        // Faults: one every 0.5-4 s; brokers taken away one at a time.
        let mut t: Time = 3_000;
        let mut busy_until: Time = 0;
        while t < shape.heal - 5_000 {
            let broker = rng.gen_range(1..=brokers);
            let a = match rng.gen_range(0..108) {
                0..=14 => Action::Crash {
                    broker,
                    down: rng.gen_range(200..8_000),
                },
                15..=24 => Action::PowerLoss {
                    broker,
                    down: rng.gen_range(200..8_000),
                },
                25..=39 => Action::Pause {
                    broker,
                    len: rng.gen_range(100..6_000),
                },
                40..=44 => Action::Suspend {
                    broker,
                    len: rng.gen_range(500..12_000),
                },
                45..=49 => Action::Shutdown {
                    broker,
                    down: rng.gen_range(200..5_000),
                },
                50..=64 => {
                    let mut side: Vec<i32> = (1..=brokers).filter(|_| rng.gen_bool(0.4)).collect();
                    if side.is_empty() || side.len() as i32 == brokers {
                        side = vec![broker];
                    }
                    Action::Partition {
                        side,
                        with_controller: rng.gen_bool(0.5),
                        len: rng.gen_range(200..8_000),
                    }
                }
                65..=69 => Action::ControllerOutage {
                    len: rng.gen_range(200..4_000),
                },
                70..=72 => Action::SlowLink {
                    broker,
                    extra: rng.gen_range(20..400),
                    len: rng.gen_range(500..8_000),
                },
                73..=77 => Action::KillLeaderTwice {
                    partition: rng.gen_range(0..shape.partitions),
                    gap: rng.gen_range(0..300),
                    down: rng.gen_range(1_000..6_000),
                },
                100..=107 => Action::FsyncFailure {
                    broker,
                    partition: rng.gen_range(0..shape.partitions),
                },
                78..=82 => Action::ElectPreferred {
                    partition: rng.gen_range(0..shape.partitions),
                },
                // A slow broker (or none) among healthy ones, as measured placement sees them.
                83..=87 => Action::PlaceLeaders {
                    costs: (1..=brokers)
                        .map(|_| {
                            if rng.gen_bool(0.3) {
                                rng.gen_range(5_000..50_000)
                            } else {
                                rng.gen_range(200..1_500)
                            }
                        })
                        .collect(),
                },
                _ => {
                    let mut all: Vec<i32> = (1..=brokers).collect();
                    let mut target = Vec::new();
                    while target.len() < rf {
                        let i = rng.gen_range(0..all.len());
                        target.push(all.remove(i));
                    }
                    Action::Reassign {
                        partition: rng.gen_range(0..shape.partitions),
                        target,
                    }
                }
            };
            if let Some((_, len)) = takes_broker_down(&a) {
                if t < busy_until {
                    t += rng.gen_range(500..4_000);
                    continue;
                }
                busy_until = t + len + 1_000;
            }
            actions.push((t, a));
            t += rng.gen_range(500..4_000);
        }
        if shape.tier.is_some() {
            // Faults of the object store, and leaders killed while they copy.
            let mut t: Time = 3_000;
            while t < shape.heal - 5_000 {
                let a = match tier_rng.gen_range(0..3) {
                    0 => Action::StoreStall {
                        len: tier_rng.gen_range(500..12_000),
                    },
                    1 => Action::StoreErrors {
                        len: tier_rng.gen_range(200..6_000),
                    },
                    _ => Action::CrashLeader {
                        partition: tier_rng.gen_range(0..shape.partitions),
                        down: tier_rng.gen_range(500..6_000),
                    },
                };
                actions.push((t, a));
                t += tier_rng.gen_range(2_000..9_000);
            }
        }
        let mut groups_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x4752_4f55_5053);
        if shape.tier.is_none() && groups_rng.gen_bool(0.5) {
            // Group offsets: commits into one more partition, and its leaders killed.
            let op = shape.partitions;
            shape.offsets_partition = Some(op);
            shape.partitions += 1;
            let rate = groups_rng.gen_range(5..=40);
            let mut t: Time = 2_000;
            while t < shape.heal {
                let (group, key) = (groups_rng.gen_range(0..3), groups_rng.gen_range(0..4));
                let a = if groups_rng.gen_bool(0.3) {
                    Action::TxnCommit {
                        group,
                        key,
                        abort: groups_rng.gen_bool(0.3),
                    }
                } else {
                    Action::Commit {
                        group,
                        key,
                        stale: groups_rng.gen_bool(0.1),
                    }
                };
                actions.push((t, a));
                t += groups_rng.gen_range(1..=2_000 / rate);
            }
            let mut t: Time = groups_rng.gen_range(3_000..8_000);
            while t < shape.heal - 5_000 {
                let a = if groups_rng.gen_bool(0.7) {
                    Action::CrashLeader {
                        partition: op,
                        down: groups_rng.gen_range(500..6_000),
                    }
                } else {
                    Action::KillLeaderTwice {
                        partition: op,
                        gap: groups_rng.gen_range(0..300),
                        down: groups_rng.gen_range(1_000..4_000),
                    }
                };
                actions.push((t, a));
                t += groups_rng.gen_range(4_000..12_000);
            }
        }
        let mut share_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5348_4152_4553);
        if shape.offsets_partition.is_some() && share_rng.gen_bool(0.5) {
            // A share group on partition 0: its members fetch until the end.
            shape.share = true;
            for member in 0..crate::share::MEMBERS {
                let mut t: Time = share_rng.gen_range(2_000..3_000);
                while t < shape.end - 1_000 {
                    actions.push((t, Action::ShareFetch { member }));
                    t += share_rng.gen_range(80..250);
                }
            }
        }
        let mut txn_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5458_4e53);
        if shape.tier.is_none() && txn_rng.gen_bool(0.5) {
            let tp = shape.partitions;
            shape.txn_partition = Some(tp);
            shape.partitions += 1;
            let mut t: Time = txn_rng.gen_range(3_000..8_000);
            while t < shape.heal - 5_000 {
                let a = if txn_rng.gen_bool(0.7) {
                    Action::CrashLeader {
                        partition: tp,
                        down: txn_rng.gen_range(500..6_000),
                    }
                } else {
                    Action::KillLeaderTwice {
                        partition: tp,
                        gap: txn_rng.gen_range(0..300),
                        down: txn_rng.gen_range(1_000..4_000),
                    }
                };
                actions.push((t, a));
                t += txn_rng.gen_range(4_000..12_000);
            }
        }
        actions.sort_by_key(|(t, _)| *t);
        Plan {
            seed,
            shape,
            actions,
        }
    }

    /// The plan without its share group (a seed's run as it was before share groups were
    /// simulated: the regression tests of earlier findings keep their schedules).
    pub fn without_share_group(mut self) -> Plan {
        self.shape.share = false;
        self.actions
            .retain(|(_, a)| !matches!(a, Action::ShareFetch { .. }));
        self
    }

    /// The plan with the topic's `min.insync.replicas` altered while the faults run (every
    /// 3-15 s from 3-10 s on, to 1..=RF; draws of their own, so the seed's other actions stay
    /// as they were). Not in the default plans yet (it would change every seed's schedule);
    /// seeds 0-299 with it run clean (issue 57, `docs/cluster.md`).
    pub fn with_min_insync_changes(mut self) -> Plan {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x4d49_4e49_5352);
        let mut t: Time = rng.gen_range(3_000..10_000);
        while t < self.shape.heal - 5_000 {
            let value = rng.gen_range(1..=self.shape.rf);
            self.actions.push((t, Action::AlterMinInsync { value }));
            t += rng.gen_range(3_000..15_000);
        }
        self.actions.sort_by_key(|(t, _)| *t);
        self
    }

    /// The plan with the controller's auto leader rebalance running every 4-12 s while the
    /// faults run and after (draws of their own, so the seed's other actions stay as they
    /// were). Not in the default plans (it would change every seed's schedule).
    pub fn with_leader_rebalance(mut self) -> Plan {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x5245_4241_4c41);
        let mut t: Time = rng.gen_range(2_000..8_000);
        while t < self.shape.end - 5_000 {
            self.actions.push((t, Action::RebalanceLeaders));
            t += rng.gen_range(4_000..12_000);
        }
        self.actions.sort_by_key(|(t, _)| *t);
        self
    }

    /// The plan without the broker's own partition log beside every replica's model log
    /// ([`Shape::real_log`]); the seed's actions are unchanged.
    pub fn without_real_log(mut self) -> Plan {
        self.shape.real_log = false;
        self
    }

    /// The plan without its transactional producers (a seed's run as it was before they were
    /// simulated).
    pub fn without_transactions(mut self) -> Plan {
        if let Some(tp) = self.shape.txn_partition.take() {
            self.shape.partitions -= 1;
            self.actions.retain(|(_, a)| match a {
                Action::CrashLeader { partition, .. }
                | Action::KillLeaderTwice { partition, .. } => *partition != tp,
                _ => true,
            });
        }
        self
    }

    /// The number of fault and operator actions (produce requests not counted).
    pub fn faults(&self) -> usize {
        self.actions
            .iter()
            .filter(|(_, a)| !a.is_client_request())
            .count()
    }
}
