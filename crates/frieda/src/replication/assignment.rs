//! Which role the metadata image gives this broker for a partition, and what a replica must do
//! to take it (Kafka's `ReplicaManager.applyDelta`: `makeLeader` / `makeFollower`). Sans-IO: the
//! reconciler ([`crate::cluster::reconciler`]) and the cluster simulator apply the same plan
//! through [`take_role`].

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
