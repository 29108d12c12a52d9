//! Which role the metadata image gives this broker for a partition, and what a replica must do
//! to take it (Kafka's `ReplicaManager.applyDelta`: `makeLeader` / `makeFollower`). Sans-IO: the
//! reconciler ([`crate::cluster::reconciler`]) and the cluster simulator apply an image in the
//! same steps: first every leader the image deposed stops ([`step_down`]), then for each
//! partition of a topic [`host_step`] says whether its replica is removed, opened or kept, and
//! an opened or kept one takes its role through [`take_role`]; what follows the change (a
//! coordinator loaded, a claim sent) is [`RoleChange::leads`] and
//! [`RoleChange::awaits_claims`].

use frieda_meta::{BrokerId, PartitionState, NO_LEADER};

use super::state::Role;

/// What a replica does to follow the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleChange {
    /// Become the leader in the image's leader epoch (a new epoch: followers' progress reset,
    /// the epoch recorded at the log end).
    BecomeLeader,
    /// Already the leader in that epoch: take the image's ISR, partition epoch and replicas.
    UpdateLeader,
    /// Follow `leader` in the image's leader epoch (truncating first).
    BecomeFollower(BrokerId),
    /// Serve nothing: the partition has no leader, or this broker would lead it but is fenced.
    BecomeOffline,
    /// Nothing to change (a follower keeps its fetcher).
    Keep,
}

impl RoleChange {
    /// Whether the replica leads after the change: the coordinator of an internal partition
    /// (`__consumer_offsets`, `__transaction_state`) is loaded (again in a new leader epoch),
    /// and unloaded otherwise.
    pub fn leads(self) -> bool {
        matches!(self, RoleChange::UpdateLeader | RoleChange::BecomeLeader)
    }

    /// Whether the replica, offline, waits for its replicas' claims to elect a leader of a
    /// quorum partition (`p.electing`, issue 34): the broker sends its claim at once instead of
    /// at its next heartbeat.
    pub fn awaits_claims(self, p: &PartitionState) -> bool {
        self == RoleChange::BecomeOffline && p.electing.is_some()
    }
}

/// Whether the image assigns partition `p` to broker `me`: one of its replicas, or one being
/// added by a reassignment (KIP-455 `adding`).
pub fn assigned(p: &PartitionState, me: BrokerId) -> bool {
    p.replicas.contains(&me) || p.adding.contains(&me)
}

/// What applying the image does with one partition's replica on a broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStep {
    /// Hosted here but no longer assigned: the replica (its log included) is removed, and a
    /// coordinator of it unloaded.
    Remove,
    /// Assigned but not hosted: the replica is opened (or created), then takes its role.
    Open,
    /// Assigned and hosted: it takes its role ([`take_role`]).
    TakeRole,
}

/// The step for partition `p` of the image on broker `me`, which `hosted` (or not) a replica
/// of it; `None` when it neither hosts nor is assigned one.
pub fn host_step(p: &PartitionState, me: BrokerId, hosted: bool) -> Option<HostStep> {
    match (assigned(p, me), hosted) {
        (false, false) => None,
        (false, true) => Some(HostStep::Remove),
        (true, false) => Some(HostStep::Open),
        (true, true) => Some(HostStep::TakeRole),
    }
}

/// The first step of applying an image (issue 28, item 7): a replica that leads but that
/// `state` (the image's state of its partition; `None` when the topic is gone or the partition
/// no longer assigned here) gives to another broker or epoch stops leading at once, before
/// replicas are opened, coordinators loaded or topics removed, which can take seconds: a
/// deposed leader must not acknowledge meanwhile. It follows the image's leader (offline when
/// there is none or the replica is no longer assigned) in the image's epoch (its own when the
/// topic is gone). Returns whether it stepped down; any other replica is left to
/// [`take_role`].
pub fn step_down(
    replica: &mut impl TakesRole,
    state: Option<&PartitionState>,
    me: BrokerId,
    fenced: bool,
) -> bool {
    let current = replica.role();
    let Role::Leader(leader) = &current else {
        return false;
    };
    let change = match state.filter(|p| assigned(p, me)) {
        Some(p) => plan(&current, p, me, fenced),
        None => RoleChange::BecomeOffline,
    };
    let epoch = state.map_or(leader.epoch, |p| p.leader_epoch);
    match change {
        RoleChange::BecomeFollower(l) => replica.become_follower(l, epoch),
        RoleChange::BecomeOffline => replica.become_follower(NO_LEADER, epoch),
        _ => return false,
    }
    true
}

/// The change a replica whose role is `current` makes for the image's state `p`, this broker
/// being `me` and `fenced` (a fenced broker leads nothing).
pub fn plan(current: &Role, p: &PartitionState, me: BrokerId, fenced: bool) -> RoleChange {
    if p.leader == me && !fenced {
        return match current {
            Role::Leader(l) if l.epoch == p.leader_epoch => RoleChange::UpdateLeader,
            _ => RoleChange::BecomeLeader,
        };
    }
    let leader = if p.leader == me { NO_LEADER } else { p.leader };
    let unchanged = match current {
        Role::Follower { leader: l, epoch } => *l == leader && *epoch == p.leader_epoch,
        Role::Offline { epoch } => leader == NO_LEADER && *epoch == p.leader_epoch,
        _ => false,
    };
    match (unchanged, leader) {
        (true, _) => RoleChange::Keep,
        (false, NO_LEADER) => RoleChange::BecomeOffline,
        (false, l) => RoleChange::BecomeFollower(l),
    }
}

/// A replica the image gives a role: the broker's partition (`cluster::reconciler`) and the
/// cluster simulator's replica take roles through it, so both follow [`take_role`].
pub trait TakesRole {
    /// The role it has now.
    fn role(&self) -> Role;
    /// Already the leader in `p`'s leader epoch: take `p`'s ISR, partition epoch and replicas
    /// ([`Replication::update_leader`](super::Replication::update_leader)); `false` when it
    /// does not lead in that epoch after all (then it becomes the leader anew).
    fn update_leader(&mut self, p: &PartitionState) -> bool;
    /// Lead in `p`'s leader epoch (the epoch recorded at the log end, followers' progress
    /// reset).
    fn become_leader(&mut self, p: &PartitionState);
    /// Follow `leader` in `epoch`; [`NO_LEADER`] for an offline replica.
    fn become_follower(&mut self, leader: BrokerId, epoch: i32);
}

/// Gives `replica` the role the image's state `p` says it has on broker `me` (`fenced`: a fenced
/// broker leads nothing): [`plan`], then the transition (Kafka's `makeLeader` /
/// `makeFollower`). Returns the change made; what else follows from it (a fetcher for a
/// follower, a coordinator to load or unload, a claim for a leaderless quorum partition) is
/// the caller's.
pub fn take_role(
    replica: &mut impl TakesRole,
    p: &PartitionState,
    me: BrokerId,
    fenced: bool,
) -> RoleChange {
    let change = plan(&replica.role(), p, me, fenced);
    match change {
        RoleChange::UpdateLeader => {
            if !replica.update_leader(p) {
                replica.become_leader(p);
            }
        }
        RoleChange::BecomeLeader => replica.become_leader(p),
        RoleChange::BecomeFollower(leader) => replica.become_follower(leader, p.leader_epoch),
        RoleChange::BecomeOffline => replica.become_follower(NO_LEADER, p.leader_epoch),
        RoleChange::Keep => {}
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::Leader;

    fn state(leader: BrokerId, epoch: i32) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader,
            leader_epoch: epoch,
            partition_epoch: epoch,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    /// A replica that records the transitions it was asked for.
    struct Recorded {
        role: Role,
        updates: bool,
        calls: Vec<String>,
    }

    impl TakesRole for Recorded {
        fn role(&self) -> Role {
            self.role.clone()
        }
        fn update_leader(&mut self, p: &PartitionState) -> bool {
            self.calls.push(format!("update {}", p.partition_epoch));
            self.updates
        }
        fn become_leader(&mut self, p: &PartitionState) {
            self.calls.push(format!("lead {}", p.leader_epoch));
        }
        fn become_follower(&mut self, leader: BrokerId, epoch: i32) {
            self.calls.push(format!("follow {leader} {epoch}"));
        }
    }

    #[test]
    fn take_role_makes_the_planned_transition() {
        let leading = Role::Leader(Leader::new(&state(1, 3), 1, 0, 0));
        let mut r = Recorded {
            role: leading.clone(),
            updates: true,
            calls: vec![],
        };
        // Same epoch: the leader takes the new ISR in place.
        assert_eq!(
            take_role(&mut r, &state(1, 3), 1, false),
            RoleChange::UpdateLeader
        );
        assert_eq!(r.calls, ["update 3"]);
        // An update it cannot take (it does not lead that epoch after all): it leads anew.
        r.updates = false;
        r.calls.clear();
        take_role(&mut r, &state(1, 3), 1, false);
        assert_eq!(r.calls, ["update 3", "lead 3"]);
        // Fenced, or no leader: offline in the image's epoch; another leader: follow it.
        r.calls.clear();
        assert_eq!(
            take_role(&mut r, &state(1, 4), 1, true),
            RoleChange::BecomeOffline
        );
        assert_eq!(
            take_role(&mut r, &state(2, 5), 1, false),
            RoleChange::BecomeFollower(2)
        );
        assert_eq!(r.calls, ["follow -1 4", "follow 2 5"]);
        // Already following that leader in that epoch: nothing.
        r.role = Role::Follower {
            leader: 2,
            epoch: 5,
        };
        r.calls.clear();
        assert_eq!(take_role(&mut r, &state(2, 5), 1, false), RoleChange::Keep);
        assert!(r.calls.is_empty());
    }

    /// Step one of an image: only a deposed leader steps down, and it follows the image's
    /// leader in the image's epoch, or goes offline (its own epoch) when the partition is gone.
    #[test]
    fn a_deposed_leader_steps_down_first() {
        let leading = || Recorded {
            role: Role::Leader(Leader::new(&state(1, 3), 1, 0, 0)),
            updates: true,
            calls: vec![],
        };
        let mut r = leading();
        assert!(!step_down(&mut r, Some(&state(1, 3)), 1, false));
        assert!(!step_down(&mut r, Some(&state(1, 4)), 1, false));
        assert!(step_down(&mut r, Some(&state(2, 4)), 1, false));
        assert!(step_down(&mut r, Some(&state(1, 5)), 1, true));
        assert!(step_down(&mut r, None, 1, false));
        let moved = PartitionState {
            replicas: vec![2, 3, 4],
            ..state(2, 6)
        };
        assert!(step_down(&mut r, Some(&moved), 1, false));
        assert_eq!(
            r.calls,
            ["follow 2 4", "follow -1 5", "follow -1 3", "follow -1 6"]
        );
        let mut f = Recorded {
            role: Role::Follower {
                leader: 2,
                epoch: 3,
            },
            ..leading()
        };
        assert!(!step_down(&mut f, Some(&state(3, 4)), 1, false));
        assert!(!step_down(&mut f, None, 1, false));
        assert!(f.calls.is_empty());
    }

    #[test]
    fn each_partition_is_removed_opened_or_given_its_role() {
        let p = state(2, 3);
        assert_eq!(host_step(&p, 1, false), Some(HostStep::Open));
        assert_eq!(host_step(&p, 1, true), Some(HostStep::TakeRole));
        assert_eq!(host_step(&p, 4, true), Some(HostStep::Remove));
        assert_eq!(host_step(&p, 4, false), None);
        let adding = PartitionState {
            adding: vec![4],
            ..state(2, 3)
        };
        assert_eq!(host_step(&adding, 4, false), Some(HostStep::Open));
        let electing = PartitionState {
            electing: Some(frieda_meta::Electing {
                previous: 1,
                wanted: NO_LEADER,
            }),
            ..state(NO_LEADER, 3)
        };
        assert!(RoleChange::BecomeOffline.awaits_claims(&electing));
        assert!(!RoleChange::BecomeOffline.awaits_claims(&p));
        assert!(RoleChange::BecomeLeader.leads() && RoleChange::UpdateLeader.leads());
        assert!(!RoleChange::Keep.leads());
    }

    #[test]
    fn roles_follow_the_image() {
        let off = Role::Offline { epoch: -1 };
        assert_eq!(plan(&off, &state(1, 3), 1, false), RoleChange::BecomeLeader);
        assert_eq!(plan(&off, &state(1, 3), 1, true), RoleChange::BecomeOffline);
        assert_eq!(
            plan(&off, &state(2, 3), 1, false),
            RoleChange::BecomeFollower(2)
        );
        let leading = Role::Leader(Leader::new(&state(1, 3), 1, 0, 0));
        assert_eq!(
            plan(&leading, &state(1, 3), 1, false),
            RoleChange::UpdateLeader
        );
        assert_eq!(
            plan(&leading, &state(1, 4), 1, false),
            RoleChange::BecomeLeader
        );
        assert_eq!(
            plan(&leading, &state(2, 4), 1, false),
            RoleChange::BecomeFollower(2)
        );
        let following = Role::Follower {
            leader: 2,
            epoch: 4,
        };
        assert_eq!(plan(&following, &state(2, 4), 1, false), RoleChange::Keep);
        assert_eq!(
            plan(&following, &state(NO_LEADER, 5), 1, false),
            RoleChange::BecomeOffline
        );
        let offline = Role::Offline { epoch: 5 };
        assert_eq!(
            plan(&offline, &state(NO_LEADER, 5), 1, false),
            RoleChange::Keep
        );
    }
}
