//! The invariants, checked after every event and at the end of a run:
//!
//! - **acknowledgement**: an `acks=all` record is on at least `min.insync.replicas` replicas
//!   when it is acknowledged (synced on them with `flush.messages=1`), and no broker
//!   acknowledges anything while the controller has it fenced (its lease);
//! - **survival**: every broker that becomes a leader has every acknowledged `acks=all` record
//!   at its offset, and so does every partition's leader at the end (records whose last in-sync
//!   copy a power loss without fsync destroyed are outside Kafka's contract and exempt);
//! - **high watermark**: never above the log end offset, never down on a leader within its
//!   epoch; replicas agree on every record below their high watermarks; an elected leader
//!   that answers "latest" (ListOffsets -1) answers above every acknowledged `acks=all` record
//!   (KIP-207: until its high watermark reaches its epoch start it answers
//!   OFFSET_NOT_AVAILABLE);
//! - **epochs**: a replica's leader epoch and a leader's partition epoch only grow; in the
//!   controller's image, leader ∈ ISR ⊆ replicas and epochs only grow;
//! - **liveness**: after the faults heal, every partition has a leader that acknowledges;
//! - **offset commits** (`crate::groups`): a commit a group coordinator answered OK is served by
//!   every coordinator that loads later, and by the final one.

use frieda::replication::{LogView, Role};

use crate::world::{World, TOPIC};

impl World {
    /// Checks after one event.
    pub(crate) fn check_step(&mut self) {
        self.complete_parked();
        self.complete_produces();
        if self.violation.is_some() {
            return;
        }
        for bi in 0..self.brokers.len() {
            if !self.brokers[bi].up {
                continue;
            }
            let id = self.brokers[bi].id;
            let parts: Vec<i32> = self.brokers[bi].replicas.keys().copied().collect();
            for p in parts {
                self.check_replica(id, p);
                if self.violation.is_some() {
                    return;
                }
            }
        }
    }

    fn check_replica(&mut self, id: i32, p: i32) {
        let bi = (id - 1) as usize;
        let (hw, leo, epoch, leader) = {
            let b = &self.brokers[bi];
            let r = &b.replicas[&p];
            let d = &b.disks[&p];
            let role = r.repl.role();
            let leader = match &role {
                Role::Leader(l) => Some((l.epoch, l.partition_epoch)),
                _ => None,
            };
            (
                r.repl.high_watermark(),
                d.log.leo(),
                r.repl.leader_epoch(),
                leader,
            )
        };
        if hw > leo {
            self.violate(
                "hw-above-log-end",
                format!("broker {id} partition {p}: high watermark {hw} > log end offset {leo}"),
            );
            return;
        }
        let b = &mut self.brokers[bi];
        let r = b.replicas.get_mut(&p).expect("listed");
        if epoch >= 0 && epoch < r.last_epoch {
            let last = r.last_epoch;
            self.violate(
                "leader-epoch-went-back",
                format!("broker {id} partition {p}: leader epoch {epoch} after {last}"),
            );
            return;
        }
        r.last_epoch = r.last_epoch.max(epoch);
        if let Some((le, pe)) = leader {
            if pe < r.last_partition_epoch && le == r.last_epoch {
                let last = r.last_partition_epoch;
                self.violate(
                    "partition-epoch-went-back",
                    format!("broker {id} partition {p}: the leader took partition epoch {pe} after {last} (a stale ISR)"),
                );
                return;
            }
            r.last_partition_epoch = r.last_partition_epoch.max(pe);
            if let Some((e, last_hw)) = r.last_leader_hw {
                if e == le && hw < last_hw {
                    self.violate(
                        "leader-hw-went-back",
                        format!("broker {id} partition {p}: high watermark {hw} after {last_hw} in epoch {le}"),
                    );
                    return;
                }
            }
            r.last_leader_hw = Some((le, hw));
        } else {
            r.last_leader_hw = None;
        }
        let served = self.served_hw(id, p);
        if let Some((le, _)) = leader {
            self.check_latest_offset(id, p, le, served);
            if self.violation.is_some() {
                return;
            }
        }
        self.check_agreement(id, p, served);
    }

    /// Whether the controller's image has broker `id` as `p`'s leader in `epoch` (a broker
    /// acting on a stale image leads nothing: without a lease it neither acknowledges nor
    /// serves).
    pub(crate) fn elected(&self, id: i32, p: i32, epoch: i32) -> bool {
        self.controller
            .image
            .partition(crate::world::TOPIC, p)
            .is_some_and(|s| s.leader == id && s.leader_epoch == epoch)
    }

    /// The "latest" offset an elected leader `id` of `p` in `epoch` gives a client (ListOffsets
    /// -1: its served high watermark `served`, unless the high watermark is still below the
    /// epoch's start, when it answers OFFSET_NOT_AVAILABLE) is above every acknowledged
    /// `acks=all` record: offsets never go back across a leader change (KIP-207).
    fn check_latest_offset(&mut self, id: i32, p: i32, epoch: i32, served: i64) {
        let r = &self.brokers[(id - 1) as usize].replicas[&p];
        if !self.elected(id, p, epoch) || r.repl.high_watermark_lagging().is_some() {
            return;
        }
        // Only the batches acknowledged since the last check of this leader, unless its
        // served high watermark went back: acknowledgements only get added or exempt, so one
        // below an earlier, lower served offset stays below.
        let from = match self.latest_checked.get(&(id, p)) {
            Some(&(checked, next)) if served >= checked => next,
            _ => 0,
        };
        let below = self.acked_order[from..]
            .iter()
            .map(|bid| (bid, &self.acked[bid]))
            .filter(|(bid, a)| a.partition == p && a.acks == -1 && !self.exempt(**bid))
            .find(|(_, a)| a.base >= served);
        self.latest_checked
            .insert((id, p), (served, self.acked_order.len()));
        if let Some((bid, a)) = below {
            let detail = format!(
                "broker {id}, leader of partition {p} in epoch {epoch}, would answer latest offset {served} below acknowledged batch {bid} at offset {} (acknowledged at {} ms)",
                a.base, a.time
            );
            self.violate("latest-offset-below-acknowledged", detail);
        }
    }

    /// Replicas agree below their high watermarks: each batch below a replica's high watermark
    /// is the one every other replica has there (checked once per offset and replica, against
    /// the history built from the first replica that counted it).
    fn check_agreement(&mut self, id: i32, p: i32, hw: i64) {
        if self.disagreement_allowed.contains(&p) {
            return;
        }
        let bi = (id - 1) as usize;
        let d = self.brokers[bi].disks.get(&p).expect("opened");
        if hw <= d.verified_upto {
            return;
        }
        let from = d.verified_upto;
        let batches = d.log.read(from, usize::MAX);
        let history = &mut self.history[p as usize];
        let mut bad = None;
        for b in batches.iter().take_while(|b| b.base < hw) {
            match history.get(&b.base) {
                None => {
                    history.insert(b.base, *b);
                }
                Some(h) if h == b => {}
                Some(h) => {
                    bad = Some((*h, *b));
                    break;
                }
            }
        }
        if let Some((h, b)) = bad {
            self.violate(
                "replicas-disagree-below-hw",
                format!("partition {p}: broker {id} has {b:?} below its high watermark {hw}, another replica counted {h:?} there"),
            );
            return;
        }
        let d = self.brokers[bi].disks.get_mut(&p).expect("opened");
        d.verified_upto = hw;
    }

    /// A broker just became `p`'s leader in `epoch`: if the controller elected it
    /// ([`Self::elected`]), it must have every acknowledged `acks=all` record.
    pub(crate) fn check_new_leader(&mut self, id: i32, p: i32, epoch: i32) {
        if !self.elected(id, p, epoch) {
            return;
        }
        if let Some(missing) = self.missing_acked(id, p) {
            self.violate(
                "leader-lacks-acked-record",
                format!(
                    "broker {id} became leader of partition {p} without acknowledged {missing}"
                ),
            );
        }
    }

    /// Every member of `p`'s committed ISR and ELR holds every acknowledged `acks=all` record
    /// (what makes electing any of them safe; Kafka admits a follower only once it has everything the
    /// current and earlier leaders acknowledged, `isFollowerInSync`, KAFKA-7128). Checked for the
    /// members in `members` when they join, after an acknowledgement, and after a truncation.
    ///
    /// Not under `replication.ack.policy=quorum`: there an ISR member may lack acknowledged
    /// records (that is the point), and what is checked instead is that no replica ever loses
    /// an acknowledged record it held ([`Self::check_truncation`]) and that every elected
    /// leader has them all.
    pub(crate) fn check_isr_members(&mut self, p: i32, members: &[i32], when: &str) {
        if self.plan.shape.quorum {
            return;
        }
        for &m in members {
            if m < 1 || m > self.plan.shape.brokers {
                continue;
            }
            if let Some(missing) = self.missing_acked(m, p) {
                let isr = self
                    .controller
                    .image
                    .partition(crate::world::TOPIC, p)
                    .map(|s| s.isr.clone())
                    .unwrap_or_default();
                self.violate(
                    "isr-member-lacks-acked-record",
                    format!("partition {p}: broker {m}, in the committed ISR {isr:?} or ELR ({when}), lacks acknowledged {missing}"),
                );
                return;
            }
        }
    }

    /// Broker `id` is about to truncate its log of `p` to end at `offset`: it must not hold an
    /// acknowledged, not voided, `acks=all` batch there (a leader elected without it would
    /// have lost it). Kafka's ISR rule allows it (an ISR member holds it anyway); checked under
    /// `replication.ack.policy=quorum`, where the replicas that hold it may be just
    /// `min.insync.replicas`.
    pub(crate) fn check_truncation(&mut self, id: i32, p: i32, offset: i64) {
        if !self.plan.shape.quorum {
            return;
        }
        let Some(d) = self.brokers[(id - 1) as usize].disks.get(&p) else {
            return;
        };
        let lost = self
            .acked
            .iter()
            .filter(|(bid, a)| {
                a.partition == p && a.acks == -1 && a.base >= offset && !self.exempt(**bid)
            })
            .find(|(bid, a)| d.log.batch_at(a.base).is_some_and(|b| b.id == **bid))
            .map(|(bid, a)| format!("batch {bid} at offset {}", a.base));
        if let Some(lost) = lost {
            self.violate(
                "truncated-acked-record",
                format!(
                    "broker {id} truncates partition {p} to {offset}, dropping acknowledged {lost}"
                ),
            );
        }
    }

    /// The first acknowledged, not voided, `acks=all` batch of `p` that broker `id`'s log lacks
    /// at its offset.
    fn missing_acked(&self, id: i32, p: i32) -> Option<String> {
        let d = self.brokers[(id - 1) as usize].disks.get(&p)?;
        // Tiered runs: what lies below the replica's local log start is held if a finished
        // copy in the bucket holds it (`crate::tier`).
        let start = d.log.log_start_offset();
        self.acked
            .iter()
            .filter(|(bid, a)| a.partition == p && a.acks == -1 && !self.exempt(**bid))
            .find(|(bid, a)| {
                let local = d.log.batch_at(a.base).is_some_and(|b| b.id == **bid);
                let remote = a.base < start && self.remotely_held(p, a.base, **bid);
                !(local || remote)
            })
            .map(|(bid, a)| {
                format!(
                    "batch {bid} at offset {} (acknowledged at {} ms; its log ends at {})",
                    a.base,
                    a.time,
                    d.log.log_end_offset()
                )
            })
    }

    /// An acknowledgement was just decided by broker `id`.
    pub(crate) fn check_acknowledgement(&mut self, id: i32, x: &crate::world::PendingRef) {
        // The lease: no broker acknowledges while the controller has fenced it.
        let b = &self.brokers[(id - 1) as usize];
        let fenced_here = self
            .controller
            .image
            .brokers
            .get(&id)
            .is_some_and(|r| r.incarnation == b.incarnation && r.fenced);
        if fenced_here && !b.is_shutting_down() {
            self.violate(
                "acknowledged-while-fenced",
                format!("broker {id} acknowledged produce {} (acks={}) while the controller had fenced it", x.id, x.acks),
            );
            return;
        }
        if x.acks != -1 {
            return;
        }
        if let Some(state) = self
            .controller
            .image
            .partition(crate::world::TOPIC, x.partition)
        {
            let isr: Vec<i32> = state.isr.iter().chain(&state.elr).copied().collect();
            self.check_isr_members(x.partition, &isr, "when the record was acknowledged");
            if self.violation.is_some() {
                return;
            }
        }
        let fsync = self.plan.shape.fsync;
        let lost_by = self.power_lost.get(&x.id);
        let copies = self
            .brokers
            .iter()
            .filter(|b| {
                let here = b.disks.get(&x.partition).is_some_and(|d| {
                    d.log.batch_at(x.base).is_some_and(|bt| bt.id == x.id)
                        && (!fsync || d.log.is_synced(x.id))
                });
                here || lost_by.is_some_and(|l| l.contains(&b.id))
            })
            .count();
        // The value the acknowledging broker applies (its image's; an operator may have
        // changed it since the run began, and a broker acts on the configs it has seen).
        let min_insync = self.brokers[(id - 1) as usize].min_insync;
        if copies < min_insync {
            let what = if fsync { "synced copies" } else { "copies" };
            self.violate(
                "acked-below-min-insync",
                format!(
                    "broker {id} acknowledged produce {} (partition {}, offset {}) with acks=all on {copies} {what}; min.insync.replicas={min_insync}",
                    x.id, x.partition, x.base
                ),
            );
        }
    }

    /// Whether partition `p` ends without a leader because an operator's min.insync.replicas
    /// change cleared the ELR of its empty ISR (`elr_cleared`). Kafka 4.4 leaves such a
    /// partition leaderless too (ClearElrRecord empties the ELR and the last known ELR; only an
    /// unclean election, off here, would elect), so the end checks exempt it and what only it
    /// could serve (the share group of seed 527 with `--min-insync-changes`).
    pub(crate) fn leaderless_as_in_kafka(&self, p: i32) -> bool {
        self.elr_cleared.contains(&p)
            && self.controller.image.partition(TOPIC, p).is_some_and(|s| {
                s.leader < 0 && s.isr.is_empty() && s.elr.is_empty() && s.last_known_elr.is_empty()
            })
    }

    /// At the end of the run (faults healed long since).
    pub(crate) fn check_end(&mut self) {
        self.check_tier_end();
        if self.violation.is_some() {
            return;
        }
        self.check_groups_end();
        if self.violation.is_some() {
            return;
        }
        for p in 0..self.plan.shape.partitions {
            let Some(state) = self.controller.image.partition(TOPIC, p).cloned() else {
                self.violate("no-topic", "the topic was never created".into());
                return;
            };
            if self.leaderless_as_in_kafka(p) {
                continue;
            }
            if state.leader < 0 {
                self.violate(
                    "liveness-no-leader",
                    format!("partition {p} has no leader after the faults healed: {state:?}"),
                );
                return;
            }
            if let Some(missing) = self.missing_acked(state.leader, p) {
                self.violate(
                    "acked-record-lost",
                    format!(
                        "partition {p}: the final leader {} lacks acknowledged {missing}",
                        state.leader
                    ),
                );
                return;
            }
            let heal = self.plan.shape.heal;
            let settled = self
                .acked
                .values()
                .any(|a| a.partition == p && a.acks == -1 && a.time > heal);
            // Under replication.ack.policy=quorum a reassignment counts acknowledgements in the
            // old and the new replica set (Raft's joint consensus, without learners): when it
            // adds more replicas than the new set can spare (more than RF - min.insync.replicas),
            // acknowledgements wait until the new ones catch up, which the simulator's slow
            // catch-up (one batch per fetch) may not finish before the end (seed 1200).
            // docs/cluster.md states it; safety is still checked.
            let catching_up = self.plan.shape.quorum && !state.adding.is_empty();
            if !settled && !catching_up {
                self.violate(
                    "liveness-no-acks-after-heal",
                    format!("partition {p}: no acks=all produce was acknowledged after the faults healed; final state {state:?}"),
                );
                return;
            }
        }
        self.check_txn_end();
    }
}
