//! One partition's ISR change and leader election, with eligible leader replicas (ELR,
//! KIP-966): Kafka's `PartitionChangeBuilder` rules (4.4, `useLastKnownLeaderInBalancedRecovery`
//! on, its default), applied by [`MetadataImage`](crate::MetadataImage) when a broker is fenced
//! or unfenced, a log goes offline, or a leader's AlterPartition changes the ISR.
//!
//! What ELR promises: the high watermark does not advance while the ISR is smaller than
//! `min.insync.replicas` (the leader's rule, `frieda::replication`), so a replica that leaves
//! an ISR already below `min.insync.replicas` holds every committed record. It keeps that claim
//! in the ELR, and when the ISR is empty it may be elected (clean). Without ELR the last ISR
//! member is kept in the ISR and only it can lead again.
//!
//! Election order (`electAnyLeader`): the current leader if still valid, the first valid
//! replica in assignment order (valid: in the target ISR, or in the ELR when the target ISR is
//! empty; and acceptable: live, unfenced, log online), the last known leader when ISR and ELR
//! are both empty (KIP-966 balanced recovery: it was the last ISR member), and, with unclean
//! election allowed, any acceptable replica (the ISR becomes just it and the ELR is cleared).

use crate::image::{BrokerId, Electing, PartitionState, NO_LEADER};

/// The finalized feature that turns ELR on (Kafka's `eligible.leader.replicas.version`, level 1).
pub const ELR_FEATURE: &str = "eligible.leader.replicas.version";

/// The level a cluster that never set [`ELR_FEATURE`] runs at: 1, as Kafka 4.4 bootstraps new
/// clusters (KIP-966 is on by default since 4.1).
pub const ELR_DEFAULT_LEVEL: i16 = 1;

/// What the controller knows when it changes one partition.
pub(crate) struct Context<'a> {
    /// The topic's effective `min.insync.replicas`, at most the replication factor.
    pub min_isr: usize,
    /// [`ELR_FEATURE`] is finalized at level 1 or more.
    pub elr_enabled: bool,
    /// Whether a replica may lead now (live, unfenced, its log online, not the broker leaving).
    pub acceptable: &'a dyn Fn(BrokerId) -> bool,
    /// `unclean.leader.election.enable` for the topic.
    pub unclean: bool,
    /// A broker that restarted after an unclean shutdown: it may have lost unsynced records,
    /// so it leaves the ELR (Kafka's `handleBrokerUncleanShutdown`).
    pub unclean_shutdown: Option<BrokerId>,
    /// The topic's `replication.ack.policy` is `quorum` (issue 34): an ISR member need not hold
    /// every acknowledged record, so a leader is never picked from the ISR here; the partition
    /// goes leaderless with [`Electing`] set and [`crate::quorum`] elects from the replicas'
    /// claims. ELR does not apply.
    pub quorum: bool,
}

/// How a leader was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elected {
    /// No change of leader.
    Unchanged,
    /// From the ISR (or the current leader kept).
    Clean,
    /// From the ELR, the ISR being empty.
    FromElr,
    /// The last known leader, ISR and ELR being empty (KIP-966 balanced recovery).
    LastKnownLeader,
    /// An out-of-sync replica (unclean election): records may be lost.
    Unclean,
    /// No replica can lead: the partition is offline.
    None,
}

/// Moves `p` to `target_isr` and elects a leader if its current one is no longer valid,
/// keeping ELR and last known ELR as Kafka does. Bumps the leader epoch on a leader change
/// and the partition epoch on any change. Returns how the leader was chosen.
pub(crate) fn change(p: &mut PartitionState, target_isr: Vec<BrokerId>, cx: &Context) -> Elected {
    let before = p.clone();
    let mut isr = target_isr;
    let mut elr = p.elr.clone();
    // maybePopulateTargetElr.
    if cx.elr_enabled {
        if isr.len() >= cx.min_isr {
            elr.clear();
        } else {
            let mut candidates = elr.clone();
            for b in &p.isr {
                if !candidates.contains(b) {
                    candidates.push(*b);
                }
            }
            elr = candidates
                .into_iter()
                .filter(|b| !isr.contains(b) && Some(*b) != cx.unclean_shutdown)
                .collect();
            elr.sort_unstable();
        }
    } else {
        elr.clear();
    }
    // tryElection.
    let valid = |b: BrokerId, isr: &[BrokerId], elr: &[BrokerId]| {
        (isr.contains(&b) || (isr.is_empty() && elr.contains(&b))) && (cx.acceptable)(b)
    };
    let mut how = Elected::Unchanged;
    let mut leader = p.leader;
    if cx.quorum && (p.leader == NO_LEADER || !valid(p.leader, &isr, &elr)) {
        if p.leader != NO_LEADER {
            p.electing = Some(Electing {
                previous: p.leader,
                wanted: NO_LEADER,
            });
            leader = NO_LEADER;
            how = Elected::None;
        } else if p.electing.is_none() {
            p.electing = Some(Electing {
                previous: NO_LEADER,
                wanted: NO_LEADER,
            });
        }
    } else if p.leader == NO_LEADER || !valid(p.leader, &isr, &elr) {
        let clean = p.replicas.iter().copied().find(|b| valid(*b, &isr, &elr));
        let last_known = (cx.elr_enabled
            && isr.is_empty()
            && elr.is_empty()
            && p.last_known_elr.len() == 1
            && (cx.acceptable)(p.last_known_elr[0]))
        .then(|| p.last_known_elr[0]);
        let unclean = || {
            cx.unclean
                .then(|| p.replicas.iter().copied().find(|b| (cx.acceptable)(*b)))
                .flatten()
        };
        (leader, how) = match (clean, last_known) {
            (Some(b), _) if isr.contains(&b) => (b, Elected::Clean),
            (Some(b), _) => (b, Elected::FromElr),
            (None, Some(b)) => (b, Elected::LastKnownLeader),
            (None, None) => match unclean() {
                Some(b) => (b, Elected::Unclean),
                None => (NO_LEADER, Elected::None),
            },
        };
        if leader == p.leader {
            how = Elected::Unchanged;
        }
        match how {
            Elected::FromElr => {
                isr = vec![leader];
                elr.retain(|b| *b != leader);
            }
            Elected::LastKnownLeader | Elected::Unclean => {
                // The new leader's log is the truth now; nothing else can claim to hold it.
                isr = vec![leader];
                elr.clear();
            }
            _ => {}
        }
    }
    // Without ELR an ISR is never empty: its last member stays (Kafka before KIP-966).
    if isr.is_empty() && !cx.elr_enabled {
        isr = p.isr.clone();
    }
    // maybeUpdateLastKnownLeader: the leader of the moment the ISR became empty, cleared once
    // the partition has a leader again.
    let mut last_known = p.last_known_elr.clone();
    if !cx.elr_enabled || matches!(how, Elected::Unclean | Elected::LastKnownLeader) {
        last_known.clear();
    }
    if cx.elr_enabled && isr.is_empty() && !p.isr.is_empty() && p.leader != NO_LEADER {
        last_known = vec![p.leader];
    } else if leader != NO_LEADER {
        last_known.clear();
    }
    isr.sort_unstable();
    isr.dedup();
    p.isr = isr;
    p.elr = elr;
    p.last_known_elr = last_known;
    if leader != p.leader {
        p.leader = leader;
        p.leader_epoch += 1;
    }
    if *p != before {
        p.partition_epoch += 1;
    }
    how
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(isr: &[BrokerId], leader: BrokerId) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            leader,
            leader_epoch: 5,
            partition_epoch: 7,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    fn cx<'a>(acceptable: &'a dyn Fn(BrokerId) -> bool) -> Context<'a> {
        Context {
            min_isr: 2,
            elr_enabled: true,
            acceptable,
            unclean: false,
            unclean_shutdown: None,
            quorum: false,
        }
    }

    /// KIP-966's example: min.insync.replicas=2, replicas lost one at a time. The replica that
    /// left an ISR already below 2 keeps its claim and is elected when the ISR empties.
    #[test]
    fn replicas_lost_one_at_a_time_leave_the_last_to_leave_below_min_isr_eligible() {
        let mut p = partition(&[1, 2, 3], 1);
        let all = |_: BrokerId| true;
        // 3 leaves: the ISR stays at min.insync.replicas, no ELR.
        assert_eq!(change(&mut p, vec![1, 2], &cx(&all)), Elected::Unchanged);
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![1, 2], vec![]));
        assert_eq!((p.leader_epoch, p.partition_epoch), (5, 8));
        // 2 leaves: below min.insync.replicas, 2 keeps its claim.
        change(&mut p, vec![1], &cx(&all));
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![1], vec![2]));
        // The leader 1 is fenced while 2 is fenced too: no leader, both eligible, 1 last known.
        let only3 = |b: BrokerId| b == 3;
        assert_eq!(change(&mut p, vec![], &cx(&only3)), Elected::None);
        assert_eq!(p.leader, NO_LEADER);
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![], vec![1, 2]));
        assert_eq!(p.last_known_elr, vec![1]);
        assert_eq!(p.leader_epoch, 6);
        // 3 (out of sync when it left) cannot lead; 2 comes back and is elected from the ELR.
        let two_three = |b: BrokerId| b != 1;
        assert_eq!(change(&mut p, vec![], &cx(&two_three)), Elected::FromElr);
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (2, vec![2], vec![1])
        );
        assert_eq!(p.last_known_elr, Vec::<BrokerId>::new());
        // 3 catches up and joins: at min.insync.replicas again, the ELR is cleared.
        change(&mut p, vec![2, 3], &cx(&two_three));
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![2, 3], vec![]));
    }

    #[test]
    fn without_elr_the_last_isr_member_stays_and_only_it_can_lead() {
        let mut p = partition(&[1], 1);
        let only2 = |b: BrokerId| b == 2;
        let off = Context {
            elr_enabled: false,
            ..cx(&only2)
        };
        assert_eq!(change(&mut p, vec![], &off), Elected::None);
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (NO_LEADER, vec![1], vec![])
        );
    }

    #[test]
    fn an_unclean_shutdown_leaves_the_elr() {
        let mut p = partition(&[1], 1);
        p.elr = vec![2, 3];
        let all = |b: BrokerId| b != 1;
        let c = Context {
            unclean_shutdown: Some(2),
            ..cx(&all)
        };
        assert_eq!(change(&mut p, vec![], &c), Elected::FromElr);
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (3, vec![3], vec![1])
        );
    }

    #[test]
    fn the_last_known_leader_is_elected_only_when_isr_and_elr_are_empty() {
        let mut p = partition(&[], NO_LEADER);
        p.last_known_elr = vec![1];
        let none = |_: BrokerId| false;
        assert_eq!(change(&mut p, vec![], &cx(&none)), Elected::Unchanged);
        let one = |b: BrokerId| b == 1;
        assert_eq!(change(&mut p, vec![], &cx(&one)), Elected::LastKnownLeader);
        assert_eq!(
            (p.leader, p.isr.clone(), p.last_known_elr.clone()),
            (1, vec![1], vec![])
        );
    }

    #[test]
    fn unclean_election_clears_every_claim() {
        let mut p = partition(&[1], 1);
        p.elr = vec![2];
        let only3 = |b: BrokerId| b == 3;
        let c = Context {
            unclean: true,
            ..cx(&only3)
        };
        assert_eq!(change(&mut p, vec![], &c), Elected::Unclean);
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (3, vec![3], vec![])
        );
        assert!(p.last_known_elr.is_empty());
    }
}
