//! Leader election for topics with `replication.ack.policy=quorum` (issue 34).
//!
//! Under Kafka's rule (`isr`) an `acks=all` record is acknowledged once every in-sync replica
//! has it, so any ISR member may lead next. Under `quorum` it is acknowledged once
//! `min.insync.replicas` replicas (the leader included) have it, so a slow follower is never
//! waited for; but then an ISR member may lack acknowledged records, and the controller must
//! find out who holds them before it picks a leader. It does so as Raft's vote does:
//!
//! 1. When the leader has to change (it was fenced, shut down, its log went offline, an
//!    election or a reassignment moves it), the partition goes **leaderless** in a new leader
//!    epoch, with [`Electing`] naming the previous leader and the replica asked for
//!    ([`crate::partition_change`], [`crate::MetadataImage`]). A replica that sees that epoch
//!    stops following the previous leader.
//! 2. Each replica then sends a [`Claim`] with its heartbeat: the leaderless epoch it saw, the
//!    epoch of its last record and its log end offset; the previous leader adds where its
//!    acknowledgements ended.
//! 3. [`choose`] picks a leader whose log holds every acknowledged record, and the controller
//!    commits it (`ElectFromClaims`). Followers then truncate to its log (KIP-101, KIP-279).
//!
//! Why it is safe (the argument of Raft's §5.4, with the leader's rules in
//! `frieda::replication`): a record is acknowledged when `m` = `min.insync.replicas` replicas
//! have it, and a leader counts replicas only for records of its own epoch, or when every
//! replica has them (so an older epoch's record cannot be overwritten by a replica whose last
//! record is newer, Raft's figure 8). Hence any `n - m + 1` claims of the `n` replicas include
//! one holding every acknowledged record, and the claim with the largest (last epoch, log end
//! offset) holds them all. With fewer than `m` replicas failed, `n - m + 1` of them can claim.
//! The previous leader alone knows where its acknowledgements ended; when it claims, any
//! replica of its lineage holding everything below that point may lead (a moved leadership
//! does not wait for the slowest follower).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::image::{BrokerId, Electing, MetadataImage, PartitionState, NO_LEADER};
use crate::MetaCommand;

/// What a replica of a leaderless `quorum` partition says of its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The leaderless leader epoch the replica saw (it follows nobody in it).
    pub leader_epoch: i32,
    /// The leader epoch of its last record (-1 for an empty log): Raft's last log term.
    pub last_epoch: i32,
    /// Its log end offset.
    pub log_end: i64,
    /// Set by the leader of the epoch just before: where its acknowledgements ended.
    pub led: Option<Led>,
}

/// What a replica that led says of its leadership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Led {
    /// The leader epoch it led in.
    pub epoch: i32,
    /// Every record it acknowledged lies below this offset: its high watermark when that
    /// covered a record of its own epoch (so everything earlier leaders acknowledged too),
    /// else its log end offset.
    pub committed: i64,
}

/// The leader to elect for `p`, leaderless in a `quorum` topic with `min_isr` =
/// `min.insync.replicas`, from its replicas' `claims` (by broker; claims of another epoch are
/// ignored), or `None` to wait for more. `acceptable(b)`: `b` may lead (live, log online).
///
/// - With the previous leader's claim (it led the epoch just before): a replica may lead if it
///   is that leader, or if its last record is of the same epoch as the leader's and its log
///   reaches the leader's `committed` offset.
/// - Otherwise, once `n - min_isr + 1` of the `n` replicas claimed: a replica whose
///   (last epoch, log end offset) is the largest claimed.
///
/// Among those allowed, the replica asked for ([`Electing::wanted`]) first, then the one with
/// the largest (last epoch, log end offset), then assignment order.
pub fn choose(
    p: &PartitionState,
    claims: &BTreeMap<BrokerId, Claim>,
    min_isr: usize,
    acceptable: impl Fn(BrokerId) -> bool,
) -> Option<BrokerId> {
    let electing = p.electing.filter(|_| p.leader == NO_LEADER)?;
    let claims: Vec<(BrokerId, Claim)> = claims
        .iter()
        .filter(|(b, c)| c.leader_epoch == p.leader_epoch && p.replicas.contains(b))
        .map(|(b, c)| (*b, *c))
        .collect();
    let key = |c: &Claim| (c.last_epoch, c.log_end);
    let previous = claims.iter().find(|(b, c)| {
        *b == electing.previous && c.led.is_some_and(|l| l.epoch == p.leader_epoch - 1)
    });
    let allowed: Vec<(BrokerId, Claim)> = match previous {
        Some(&(prev, pc)) => {
            let committed = pc.led.map_or(pc.log_end, |l| l.committed);
            claims
                .iter()
                .filter(|(b, c)| {
                    *b == prev || (c.last_epoch == pc.last_epoch && c.log_end >= committed)
                })
                .copied()
                .collect()
        }
        None => {
            let n = p.replicas.len();
            let need = n - min_isr.clamp(1, n.max(1)) + 1;
            if claims.len() < need {
                return None;
            }
            let best = claims.iter().map(|(_, c)| key(c)).max()?;
            claims
                .iter()
                .filter(|(_, c)| key(c) == best)
                .copied()
                .collect()
        }
    };
    pick(&allowed, p, electing, acceptable)
}

fn pick(
    allowed: &[(BrokerId, Claim)],
    p: &PartitionState,
    electing: Electing,
    acceptable: impl Fn(BrokerId) -> bool,
) -> Option<BrokerId> {
    let ok: Vec<&(BrokerId, Claim)> = allowed.iter().filter(|(b, _)| acceptable(*b)).collect();
    if let Some((b, _)) = ok.iter().find(|(b, _)| *b == electing.wanted) {
        return Some(*b);
    }
    let rank = |b: BrokerId| {
        p.replicas
            .iter()
            .position(|r| *r == b)
            .unwrap_or(usize::MAX)
    };
    ok.iter()
        .max_by(|(a, ca), (b, cb)| {
            (ca.last_epoch, ca.log_end)
                .cmp(&(cb.last_epoch, cb.log_end))
                .then(rank(*b).cmp(&rank(*a)))
        })
        .map(|(b, _)| *b)
}

/// Claims the controller holds: by `(topic, partition)`, then by broker. Kept in memory only
/// (a new active controller waits for the next heartbeats).
pub type Claims = BTreeMap<(String, i32), BTreeMap<BrokerId, Claim>>;

/// The `ElectFromClaims` commands `claims` allow now, one per leaderless `quorum` partition
/// [`choose`] finds a leader for. Pure, so the cluster simulator decides as the controller.
pub fn elections(image: &MetadataImage, claims: &Claims) -> Vec<MetaCommand> {
    let mut out = Vec::new();
    for ((topic, partition), by_broker) in claims {
        let Some(p) = image.partition(topic, *partition) else {
            continue;
        };
        if p.leader != NO_LEADER || p.electing.is_none() || !image.quorum_acks(topic) {
            continue;
        }
        let acceptable =
            |b: BrokerId| image.is_live(b) && !image.replica_offline(b, topic, *partition);
        if let Some(leader) = choose(p, by_broker, image.effective_min_isr(topic), acceptable) {
            out.push(MetaCommand::ElectFromClaims {
                topic: topic.clone(),
                partition: *partition,
                leader_epoch: p.leader_epoch,
                leader,
            });
        }
    }
    out
}

/// Records the claims of broker `id` (from its heartbeat) and forgets claims of partitions that
/// are no longer leaderless in the claimed epoch.
pub fn record(
    claims: &mut Claims,
    image: &MetadataImage,
    id: BrokerId,
    from: &[(String, i32, Claim)],
) {
    for (topic, partition, c) in from {
        claims
            .entry((topic.clone(), *partition))
            .or_default()
            .insert(id, *c);
    }
    claims.retain(|(topic, partition), by_broker| {
        let Some(p) = image.partition(topic, *partition) else {
            return false;
        };
        by_broker.retain(|_, c| p.leader == NO_LEADER && c.leader_epoch == p.leader_epoch);
        !by_broker.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaderless(previous: BrokerId, wanted: BrokerId) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader: NO_LEADER,
            leader_epoch: 6,
            partition_epoch: 9,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: Some(Electing { previous, wanted }),
        }
    }

    fn claim(last_epoch: i32, log_end: i64) -> Claim {
        Claim {
            leader_epoch: 6,
            last_epoch,
            log_end,
            led: None,
        }
    }

    fn all(_: BrokerId) -> bool {
        true
    }

    /// The leader 1 died; 2 has records 3 lacks (acknowledged by 1 and 2 alone).
    #[test]
    fn without_the_previous_leader_the_longest_log_of_enough_claims_wins() {
        let p = leaderless(1, NO_LEADER);
        let mut c = BTreeMap::new();
        c.insert(3, claim(5, 90));
        assert_eq!(choose(&p, &c, 2, all), None, "one claim of the 2 needed");
        c.insert(2, claim(5, 100));
        assert_eq!(choose(&p, &c, 2, all), Some(2));
        // A newer last epoch beats a longer log (Raft's election restriction).
        c.insert(3, claim(6, 95));
        assert_eq!(choose(&p, &c, 2, all), Some(3));
        // A claim of another epoch does not count.
        let mut old = BTreeMap::new();
        old.insert(
            2,
            Claim {
                leader_epoch: 5,
                ..claim(5, 100)
            },
        );
        old.insert(3, claim(5, 90));
        assert_eq!(choose(&p, &old, 2, all), None);
    }

    /// A moved leadership: the previous leader says it acknowledged below 100; the wanted
    /// replica 2 has 100 (not 104, unacknowledged) and may lead; 3 at 97 may not.
    #[test]
    fn with_the_previous_leader_a_replica_with_everything_acknowledged_may_lead() {
        let mut c = BTreeMap::new();
        c.insert(
            1,
            Claim {
                led: Some(Led {
                    epoch: 5,
                    committed: 100,
                }),
                ..claim(5, 104)
            },
        );
        c.insert(2, claim(5, 100));
        assert_eq!(choose(&leaderless(1, 2), &c, 2, all), Some(2));
        c.insert(3, claim(5, 97));
        assert_eq!(
            choose(&leaderless(1, 3), &c, 2, all),
            Some(1),
            "3 lacks 97..100"
        );
        // A replica whose last record is of an older epoch is not of the leader's lineage.
        c.insert(2, claim(4, 100));
        assert_eq!(choose(&leaderless(1, 2), &c, 2, all), Some(1));
        // The wanted replica must be acceptable.
        c.insert(2, claim(5, 100));
        assert_eq!(choose(&leaderless(1, 2), &c, 2, |b| b != 2), Some(1));
    }

    #[test]
    fn a_claim_of_a_leadership_before_the_last_is_an_ordinary_claim() {
        let p = leaderless(1, NO_LEADER);
        let mut c = BTreeMap::new();
        c.insert(
            1,
            Claim {
                led: Some(Led {
                    epoch: 3,
                    committed: 10,
                }),
                ..claim(5, 50)
            },
        );
        c.insert(2, claim(5, 60));
        assert_eq!(choose(&p, &c, 2, all), Some(2));
    }
}
