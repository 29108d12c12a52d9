//! One partition's replication state: its role, and for a leader the followers' progress, the
//! in-sync replicas and the high watermark (Kafka's ISR protocol, `Partition.scala`).
//!
//! - The **high watermark** is the smallest log end offset over the ISR (the leader's included):
//!   what every in-sync replica has. `acks=all` is answered once it passes the record; consumers
//!   read below it. It never goes backwards on a leader.
//! - A follower's progress is its fetch offset (= its log end offset). It is **caught up** when it
//!   fetches at (or past) the leader's log end offset as of its previous fetch; a follower not
//!   caught up for `replica.lag.time.max.ms` leaves the ISR, and one caught up with the high
//!   watermark joins it again. A follower that **stalls** — sends no fetch at all for
//!   `replica.stall.max.ms` while the leader has records it lacks — leaves too: it is stuck
//!   (paused, swapping, a hung disk), not slow, and every `acks=all` produce would otherwise wait
//!   for it for the whole lag time (Kafka's failure mode; docs/cluster.md measures it). Both go
//!   through the controller (AlterPartition) first: while a
//!   change is pending the high watermark is computed over the larger of the two sets (Kafka's
//!   "maximal ISR"), so a record is never counted as replicated by a set the controller has not
//!   committed.
//! - A leader serves produce only while its ISR has at least `min.insync.replicas` members.

use std::collections::HashMap;

use frieda_meta::{BrokerId, PartitionState};

/// One follower as its leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Its log end offset (its last fetch offset), -1 before its first fetch.
    pub leo: i64,
    /// When it was last caught up with the leader, ms since the epoch.
    pub caught_up_ms: i64,
    /// The leader's log end offset at its previous fetch, and when that was (ms).
    last_fetch: (i64, i64),
    /// Its log start offset as its last fetch said (Fetch v5+ `log_start_offset`), -1 unknown.
    pub log_start: i64,
    /// The broker epoch (registration) it fetched under, as the leader's metadata said at its
    /// last fetch (KIP-903): an ISR expansion names it, so one built on a previous run's
    /// progress is refused after the follower restarts.
    pub broker_epoch: Option<u64>,
}

impl Progress {
    /// A follower not heard from yet, counted as caught up at `now_ms`.
    fn new(now_ms: i64) -> Progress {
        Progress {
            leo: -1,
            caught_up_ms: now_ms,
            last_fetch: (-1, now_ms),
            log_start: -1,
            broker_epoch: None,
        }
    }
}

/// When followers leave the ISR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagLimits {
    /// `replica.lag.time.max.ms`: not caught up for this long.
    pub lag_max_ms: i64,
    /// `replica.stall.max.ms`: no fetch at all for this long while behind.
    pub stall_max_ms: i64,
}

/// What a leader knows.
#[derive(Debug, Clone)]
pub struct Leader {
    /// Leader epoch (KIP-101).
    pub epoch: i32,
    /// The partition epoch AlterPartition requests carry.
    pub partition_epoch: i32,
    /// Assigned replicas (reassignment targets included).
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas as the controller committed them.
    pub isr: Vec<BrokerId>,
    /// The ISR this leader asked the controller for and has not heard back about.
    pub pending_isr: Option<Vec<BrokerId>>,
    /// Followers by broker id.
    pub followers: HashMap<BrokerId, Progress>,
    /// The leader's log end offset when it took this epoch (Kafka's
    /// `leaderEpochStartOffsetOpt`): everything acknowledged in earlier epochs lies below it.
    pub epoch_start_offset: i64,
    /// The replica sets a `quorum` acknowledgement needs `min.insync.replicas` of: the
    /// replicas, or during a reassignment both the old and the new set (Raft's joint
    /// consensus).
    pub voters: Vec<Vec<BrokerId>>,
}

/// The replica sets of `p` a `quorum` acknowledgement counts in (see [`Leader::voters`]).
fn voters(p: &PartitionState) -> Vec<Vec<BrokerId>> {
    if p.adding.is_empty() && p.removing.is_empty() {
        return vec![p.replicas.clone()];
    }
    let old = p.replicas.iter().filter(|b| !p.adding.contains(b));
    let new = p.replicas.iter().filter(|b| !p.removing.contains(b));
    vec![old.copied().collect(), new.copied().collect()]
}

/// What this broker is for a partition.
#[derive(Debug, Clone)]
pub enum Role {
    /// Single-broker mode: the only replica (the high watermark is the log's own).
    Sole,
    /// The leader.
    Leader(Leader),
    /// A follower of `leader` in `epoch`.
    Follower {
        /// The leader's broker id.
        leader: BrokerId,
        /// The leader epoch.
        epoch: i32,
    },
    /// A replica of a partition without a leader (or of a fenced broker): serves nothing.
    Offline {
        /// The leader epoch it last knew.
        epoch: i32,
    },
}

/// An ISR change for the controller (AlterPartition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch.
    pub partition_epoch: i32,
    /// The ISR wanted.
    pub isr: Vec<BrokerId>,
    /// Broker epochs of the replicas added (KIP-903), as [`Progress::broker_epoch`].
    pub new_isr_epochs: Vec<(BrokerId, u64)>,
}

impl Leader {
    /// A new leader for `p` (the image's state), this broker `me`, at `now_ms`, its log ending
    /// at `leo`: every follower starts caught up (a new leader gives them
    /// `replica.lag.time.max.ms` before shrinking).
    pub fn new(p: &PartitionState, me: BrokerId, now_ms: i64, leo: i64) -> Leader {
        let followers = p
            .replicas
            .iter()
            .chain(&p.adding)
            .filter(|b| **b != me)
            .map(|b| (*b, Progress::new(now_ms)))
            .collect();
        Leader {
            epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            replicas: p.replicas.iter().chain(&p.adding).copied().collect(),
            isr: p.isr.clone(),
            pending_isr: None,
            followers,
            epoch_start_offset: leo,
            voters: voters(p),
        }
    }

    /// Takes the assigned replicas of `p` (a reassignment adds or removes some): new followers
    /// start caught up at `now_ms`, removed ones are forgotten.
    pub fn set_replicas(&mut self, me: BrokerId, p: &PartitionState, now_ms: i64) {
        self.replicas = p.replicas.iter().chain(&p.adding).copied().collect();
        self.voters = voters(p);
        let replicas = self.replicas.clone();
        self.followers.retain(|b, _| replicas.contains(b));
        for b in replicas.into_iter().filter(|b| *b != me) {
            self.followers.entry(b).or_insert(Progress::new(now_ms));
        }
    }

    /// The low watermark (Kafka's `Partition.lowWatermarkIfLeader`): the smallest log start
    /// offset over the leader (`own_start`) and the in-sync followers that reported one. A
    /// DeleteRecords is complete once it reaches the requested offset.
    pub fn low_watermark(&self, me: BrokerId, own_start: i64) -> i64 {
        self.maximal_isr()
            .iter()
            .filter(|b| **b != me)
            .filter_map(|b| self.followers.get(b))
            .map(|p| p.log_start)
            .filter(|s| *s >= 0)
            .fold(own_start, i64::min)
    }

    /// The ISR the high watermark waits for: the committed one, or the pending one when larger.
    /// The pending ISR change as the AlterPartition that asks for it (the broker epochs of
    /// the members it adds from their fetches, KIP-903); `None` when nothing is pending.
    pub fn pending_change(&self) -> Option<IsrChange> {
        let isr = self.pending_isr.clone()?;
        let new_isr_epochs = isr
            .iter()
            .filter(|b| !self.isr.contains(b))
            .filter_map(|b| Some((*b, self.followers.get(b)?.broker_epoch?)))
            .collect();
        Some(IsrChange {
            leader_epoch: self.epoch,
            partition_epoch: self.partition_epoch,
            isr,
            new_isr_epochs,
        })
    }

    pub fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut set = self.isr.clone();
        if let Some(p) = &self.pending_isr {
            for b in p {
                if !set.contains(b) {
                    set.push(*b);
                }
            }
        }
        set
    }

    /// `min.insync.replicas` as `acks=all` applies it: at most the replicas there are (Kafka's
    /// `Partition.effectiveMinIsr`), at least 1.
    pub fn effective_min_insync(&self, min_insync: usize) -> usize {
        min_insync.clamp(1, self.replicas.len().max(1))
    }

    /// The high watermark given the leader's log end offset `leo` at `now_ms`: the smallest
    /// log end offset over the maximal ISR (a follower that has not fetched yet counts as 0
    /// progress past `current`) and over the followers outside it that are caught up and may
    /// join it ([`Self::may_join`], with `join` the lag limits; Kafka's
    /// `shouldWaitForReplicaToJoinIsr`: without it, under steady load the high watermark runs
    /// ahead of such a follower, which can then never reach it to join). It stays at `current`
    /// while the committed ISR is smaller than `min_insync` (capped at the replication factor):
    /// Kafka's `maybeIncrementLeaderHW` under KIP-966, which is what lets a replica that leaves
    /// such an ISR keep its claim to lead (ELR).
    #[allow(clippy::too_many_arguments)]
    pub fn high_watermark(
        &self,
        me: BrokerId,
        leo: i64,
        current: i64,
        min_insync: usize,
        quorum: bool,
        now_ms: i64,
        join: Option<LagLimits>,
    ) -> i64 {
        if quorum {
            return self.quorum_high_watermark(me, leo, current, min_insync);
        }
        if self.isr.len() < self.effective_min_insync(min_insync) {
            return current.min(leo);
        }
        let mut hw = leo;
        let isr = self.maximal_isr();
        for b in &isr {
            if *b == me {
                continue;
            }
            let f = self.followers.get(b).map_or(-1, |p| p.leo);
            hw = hw.min(if f < 0 { current } else { f });
        }
        if let Some(limits) = join {
            for (b, p) in &self.followers {
                if !isr.contains(b) && self.may_join(p, leo, now_ms, limits) {
                    hw = hw.min(p.leo);
                }
            }
        }
        hw.max(current).min(leo)
    }

    /// Whether the high watermark waits for follower `p` outside the ISR (Kafka's
    /// `isCaughtUp` and `isReplicaIsrEligible`): it fetched in this epoch under a known
    /// registration, was caught up within `lag_max_ms` and, when behind, fetched within
    /// `stall_max_ms` (a follower that stops fetching, e.g. shutting down, is not waited for
    /// longer than that).
    pub fn may_join(&self, p: &Progress, leo: i64, now_ms: i64, limits: LagLimits) -> bool {
        let lagged = now_ms.saturating_sub(p.caught_up_ms) > limits.lag_max_ms;
        let stalled = p.leo < leo && now_ms.saturating_sub(p.last_fetch.1) > limits.stall_max_ms;
        p.leo >= 0 && p.broker_epoch.is_some() && !lagged && !stalled
    }

    /// The high watermark under `replication.ack.policy=quorum` (issue 34), the leader's log
    /// ending at `leo`; never below `current`. The largest offset such that
    ///
    /// - `min_insync` replicas of each voter set (the leader counted with its own log end) have
    ///   fetched past it in this epoch, provided that covers a record of this epoch (past
    ///   [`Leader::epoch_start_offset`]): counting replicas for an earlier epoch's record alone
    ///   could acknowledge a record a replica with a newer last epoch may still overwrite
    ///   (Raft §5.4.2, figure 8);
    /// - or every replica has fetched past it in this epoch (no replica can lack it).
    ///
    /// The ISR plays no part: [`frieda_meta::quorum`] elects from the replicas' logs.
    pub fn quorum_high_watermark(
        &self,
        me: BrokerId,
        leo: i64,
        current: i64,
        min_insync: usize,
    ) -> i64 {
        let progress = |b: BrokerId| {
            if b == me {
                leo
            } else {
                self.followers.get(&b).map_or(-1, |p| p.leo)
            }
        };
        let mut quorum = i64::MAX;
        let mut all = i64::MAX;
        for set in &self.voters {
            let mut ends: Vec<i64> = set.iter().map(|b| progress(*b)).collect();
            ends.sort_unstable_by(|a, b| b.cmp(a));
            let m = min_insync.clamp(1, ends.len().max(1));
            quorum = quorum.min(ends.get(m - 1).copied().unwrap_or(-1));
            all = all.min(ends.last().copied().unwrap_or(-1));
        }
        let mut hw = current;
        if quorum > self.epoch_start_offset {
            hw = hw.max(quorum);
        }
        hw.max(all).min(leo)
    }

    /// Notes the broker epoch `replica` fetches under (see [`Progress::broker_epoch`]).
    pub fn note_broker_epoch(&mut self, replica: BrokerId, epoch: Option<u64>) {
        if let Some(p) = self.followers.get_mut(&replica) {
            p.broker_epoch = epoch;
        }
    }

    /// Records a follower's fetch at `fetch_offset` when the leader's log ends at `leo` (a fetch
    /// the leader validated and read: [`crate::replication::fetch`]). Returns an ISR expansion to
    /// ask for when the follower is out of the ISR, is in sync by [`Leader::is_in_sync`], and its
    /// broker epoch is known.
    pub fn on_fetch(
        &mut self,
        replica: BrokerId,
        fetch_offset: i64,
        log_start: i64,
        leo: i64,
        hw: i64,
        now_ms: i64,
    ) -> Option<IsrChange> {
        let p = self.followers.get_mut(&replica)?;
        p.leo = fetch_offset;
        if log_start >= 0 {
            p.log_start = log_start;
        }
        if fetch_offset >= leo {
            p.caught_up_ms = now_ms;
        } else if fetch_offset >= p.last_fetch.0 {
            p.caught_up_ms = p.caught_up_ms.max(p.last_fetch.1);
        }
        p.last_fetch = (leo, now_ms);
        let broker_epoch = p.broker_epoch?;
        if self.isr.contains(&replica)
            || self.pending_isr.is_some()
            || !self.is_in_sync(fetch_offset, hw)
        {
            return None;
        }
        let mut isr = self.isr.clone();
        isr.push(replica);
        isr.sort_unstable();
        self.pending_isr = Some(isr.clone());
        Some(IsrChange {
            leader_epoch: self.epoch,
            partition_epoch: self.partition_epoch,
            isr,
            new_isr_epochs: vec![(replica, broker_epoch)],
        })
    }

    /// Whether a follower whose log ends at `follower_leo` may join the ISR, the high watermark
    /// being `hw` (Kafka's `Partition.isFollowerInSync`, KAFKA-7128): it has everything below
    /// the high watermark *and* everything this leader had when its epoch began. A new leader's
    /// high watermark can lag what the previous leader acknowledged (followers learn the high
    /// watermark one fetch late); a follower admitted at that lagging high watermark could be
    /// elected after a second failure without the acknowledged records in between.
    pub fn is_in_sync(&self, follower_leo: i64, hw: i64) -> bool {
        follower_leo >= hw && follower_leo >= self.epoch_start_offset
    }

    /// The ISR shrink to ask for when the leader's log ends at `leo`: the followers not caught
    /// up for `lag_max_ms`, and those behind that sent no fetch for `stall_max_ms`, leave.
    pub fn shrink(
        &mut self,
        me: BrokerId,
        now_ms: i64,
        leo: i64,
        limits: LagLimits,
    ) -> Option<IsrChange> {
        if self.pending_isr.is_some() {
            return None;
        }
        let lagging: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|b| *b != me)
            .filter(|b| {
                self.followers.get(b).is_none_or(|p| {
                    let lagged = now_ms.saturating_sub(p.caught_up_ms) > limits.lag_max_ms;
                    let stalled =
                        p.leo < leo && now_ms.saturating_sub(p.last_fetch.1) > limits.stall_max_ms;
                    lagged || stalled
                })
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let isr: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|b| !lagging.contains(b))
            .collect();
        self.pending_isr = Some(isr.clone());
        Some(IsrChange {
            leader_epoch: self.epoch,
            partition_epoch: self.partition_epoch,
            isr,
            new_isr_epochs: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(isr: Vec<BrokerId>) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr,
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 9,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    #[test]
    fn the_high_watermark_waits_for_every_in_sync_replica() {
        let mut l = Leader::new(&state(vec![1, 2, 3]), 1, 0, 0);
        assert_eq!(
            l.high_watermark(1, 100, 40, 1, false, 0, None),
            40,
            "no follower fetched yet"
        );
        l.on_fetch(2, 90, -1, 100, 40, 10);
        assert_eq!(l.high_watermark(1, 100, 40, 1, false, 0, None), 40);
        l.on_fetch(3, 70, -1, 100, 40, 10);
        assert_eq!(l.high_watermark(1, 100, 40, 1, false, 0, None), 70);
        l.on_fetch(3, 100, -1, 100, 70, 20);
        l.on_fetch(2, 100, -1, 100, 70, 20);
        assert_eq!(l.high_watermark(1, 100, 70, 1, false, 0, None), 100);
        // Never backwards, never past the leader's log end.
        assert_eq!(l.high_watermark(1, 100, 100, 1, false, 0, None), 100);
    }

    #[test]
    fn lagging_followers_leave_and_caught_up_ones_join() {
        let mut l = Leader::new(&state(vec![1, 2, 3]), 1, 0, 0);
        l.on_fetch(2, 100, -1, 100, 0, 1_000);
        l.on_fetch(3, 10, -1, 100, 0, 1_000);
        let limits = LagLimits {
            lag_max_ms: 30_000,
            stall_max_ms: 60_000,
        };
        assert_eq!(
            l.shrink(1, 20_000, 100, limits),
            None,
            "within replica.lag.time.max.ms"
        );
        let change = l.shrink(1, 31_000, 100, limits).expect("3 fell behind");
        assert_eq!(change.isr, vec![1, 2]);
        assert_eq!((change.leader_epoch, change.partition_epoch), (4, 9));
        // While the shrink is pending the high watermark still waits for 3 (maximal ISR).
        assert_eq!(l.high_watermark(1, 100, 10, 1, false, 0, None), 10);
        // Committed: 3 is out, the high watermark follows 2.
        l.isr = vec![1, 2];
        l.pending_isr = None;
        l.partition_epoch = 10;
        assert_eq!(l.high_watermark(1, 100, 10, 1, false, 0, None), 100);
        // 3 catches up with the high watermark: it asks back in, naming 3's broker epoch
        // (none known yet: no expansion).
        assert_eq!(l.on_fetch(3, 100, -1, 100, 100, 31_500), None);
        l.note_broker_epoch(3, Some(77));
        assert_eq!(l.on_fetch(3, 50, -1, 100, 100, 32_000), None);
        let back = l.on_fetch(3, 100, -1, 100, 100, 33_000).expect("caught up");
        assert_eq!(back.isr, vec![1, 2, 3]);
        assert_eq!(back.partition_epoch, 10);
        assert_eq!(back.new_isr_epochs, vec![(3, 77)]);
    }
}

#[cfg(test)]
mod kafka_7128_tests {
    use super::*;

    /// Issue 28, item 2 (KAFKA-7128): a new leader whose log ends at 10 but whose high
    /// watermark is still 5 (it learnt the previous leader's last acknowledgements one fetch
    /// late) must not admit a follower at 5..9 into the ISR: a second failure could elect it
    /// without offsets 5..9, which the previous leader acknowledged.
    #[test]
    fn a_follower_joins_only_once_it_has_the_epoch_start() {
        let p = PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2],
            leader: 1,
            leader_epoch: 7,
            partition_epoch: 3,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        };
        let mut l = Leader::new(&p, 1, 0, 10);
        l.note_broker_epoch(3, Some(40));
        assert_eq!(
            l.on_fetch(3, 5, -1, 10, 5, 100),
            None,
            "at the lagging HW only"
        );
        assert_eq!(l.on_fetch(3, 9, -1, 10, 5, 200), None);
        let change = l
            .on_fetch(3, 10, -1, 10, 5, 300)
            .expect("has the epoch start");
        assert_eq!(change.isr, vec![1, 2, 3]);
    }
}

#[cfg(test)]
mod stall_tests {
    use super::*;

    #[test]
    fn a_follower_that_stops_fetching_leaves_the_isr_long_before_the_lag_time() {
        let p = PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        };
        let limits = LagLimits {
            lag_max_ms: 30_000,
            stall_max_ms: 1_500,
        };
        let mut l = Leader::new(&p, 1, 0, 0);
        // Both fetch at the log end (caught up) at t=1000.
        l.on_fetch(2, 50, -1, 50, 50, 1_000);
        l.on_fetch(3, 50, -1, 50, 50, 1_000);
        // Nothing new: neither is behind, so silence is not a stall (long polls can be quiet).
        assert_eq!(l.shrink(1, 5_000, 50, limits), None);
        // Records arrive; 2 keeps fetching, 3 is paused.
        l.on_fetch(2, 60, -1, 60, 50, 2_000);
        l.on_fetch(2, 70, -1, 70, 60, 2_400);
        assert_eq!(
            l.shrink(1, 2_400, 70, limits),
            None,
            "3 silent for 1.4 s only"
        );
        let change = l.shrink(1, 2_600, 70, limits).expect("3 stalled behind");
        assert_eq!(change.isr, vec![1, 2]);
    }
}

#[cfg(test)]
mod quorum_tests {
    use super::*;

    fn state(adding: Vec<BrokerId>, removing: Vec<BrokerId>) -> PartitionState {
        let mut replicas = vec![1, 2, 3];
        replicas.extend(adding.iter().copied());
        PartitionState {
            replicas,
            isr: vec![1, 2, 3],
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 9,
            adding,
            removing,
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    /// Issue 34: min.insync.replicas=2 of 3 replicas is enough, provided it covers a record of
    /// this epoch (the leader took it at log end 10); every replica having it is enough too.
    #[test]
    fn the_quorum_high_watermark_counts_min_insync_replicas() {
        let mut l = Leader::new(&state(vec![], vec![]), 1, 0, 10);
        let hw = |l: &Leader, current| l.high_watermark(1, 20, current, 2, true, 0, None);
        assert_eq!(hw(&l, 5), 5, "no follower fetched in this epoch");
        l.on_fetch(2, 8, -1, 20, 5, 1);
        assert_eq!(
            hw(&l, 5),
            5,
            "8 is below the epoch start: not counted by 2 of 3"
        );
        l.on_fetch(3, 9, -1, 20, 5, 1);
        assert_eq!(hw(&l, 5), 8, "every replica has 8");
        l.on_fetch(2, 15, -1, 20, 8, 2);
        assert_eq!(
            hw(&l, 8),
            15,
            "the leader and 2 have a record of this epoch"
        );
        assert_eq!(
            l.high_watermark(1, 20, 8, 3, true, 0, None),
            9,
            "min.insync.replicas=3: everyone"
        );
        assert_eq!(
            l.high_watermark(1, 20, 8, 2, false, 0, None),
            9,
            "the ISR rule waits for 3"
        );
        assert_eq!(hw(&l, 17), 17, "never backwards");
    }

    /// During a reassignment of [1, 2, 3] to [1, 2, 4] both sets need min.insync.replicas (joint
    /// consensus), so a record acknowledged then is on 2 replicas of whichever set remains.
    #[test]
    fn a_reassignment_counts_in_both_replica_sets() {
        let mut l = Leader::new(&state(vec![4], vec![3]), 1, 0, 0);
        assert_eq!(l.voters, vec![vec![1, 2, 3], vec![1, 2, 4]]);
        l.on_fetch(3, 30, -1, 40, 0, 1);
        assert_eq!(
            l.high_watermark(1, 40, 0, 2, true, 0, None),
            0,
            "[1, 2, 4] has it once only"
        );
        l.on_fetch(4, 20, -1, 40, 0, 1);
        assert_eq!(l.high_watermark(1, 40, 0, 2, true, 0, None), 20);
        l.on_fetch(2, 25, -1, 40, 20, 2);
        assert_eq!(l.high_watermark(1, 40, 20, 2, true, 0, None), 25);
    }

    fn isr_state(isr: Vec<BrokerId>) -> PartitionState {
        PartitionState {
            isr,
            ..state(vec![], vec![])
        }
    }

    #[test]
    fn the_high_watermark_waits_for_a_caught_up_follower_outside_the_isr() {
        // Issue 57, defect 6 (Kafka's shouldWaitForReplicaToJoinIsr): ISR [1] with
        // min.insync.replicas 1 under steady load; follower 2 fetches close behind.
        let limits = LagLimits {
            lag_max_ms: 10_000,
            stall_max_ms: 1_500,
        };
        let mut l = Leader::new(&isr_state(vec![1]), 1, 0, 100);
        assert_eq!(
            l.high_watermark(1, 100, 90, 1, false, 0, Some(limits)),
            100,
            "no fetch yet: not waited for"
        );
        l.note_broker_epoch(2, Some(7));
        l.on_fetch(2, 95, 0, 100, 90, 1_000); // behind the log end, caught up at its start
        assert_eq!(
            l.high_watermark(1, 100, 90, 1, false, 1_000, Some(limits)),
            95
        );
        assert_eq!(
            l.high_watermark(1, 100, 90, 1, false, 1_000, None),
            100,
            "without the limits (before the first shrink check): the ISR alone"
        );
        // It stopped fetching: after replica.stall.max.ms the leader goes on without it.
        assert_eq!(
            l.high_watermark(1, 100, 90, 1, false, 2_600, Some(limits)),
            100
        );
        // One without a known registration is not waited for (it could not join).
        let mut m = Leader::new(&isr_state(vec![1]), 1, 0, 100);
        m.on_fetch(3, 95, 0, 100, 90, 1_000);
        assert_eq!(
            m.high_watermark(1, 100, 90, 1, false, 1_000, Some(limits)),
            100
        );
        // And one not caught up for replica.lag.time.max.ms neither.
        let mut n = Leader::new(&isr_state(vec![1]), 1, 0, 100);
        n.note_broker_epoch(2, Some(7));
        n.on_fetch(2, 50, 0, 100, 40, 20_000);
        assert_eq!(
            n.high_watermark(1, 100, 40, 1, false, 20_000, Some(limits)),
            100
        );
    }

    #[test]
    fn min_insync_replicas_is_capped_at_the_replica_count() {
        let l = Leader::new(&isr_state(vec![1, 2, 3]), 1, 0, 0);
        assert_eq!(l.effective_min_insync(5), 3);
        assert_eq!(l.effective_min_insync(2), 2);
        assert_eq!(l.effective_min_insync(0), 1);
    }
}
