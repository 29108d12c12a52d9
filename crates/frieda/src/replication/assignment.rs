//! Which role the metadata image gives this broker for a partition, and what a replica must do
//! to take it (Kafka's `ReplicaManager.applyDelta`: `makeLeader` / `makeFollower`). Pure: the
//! reconciler ([`crate::cluster::reconciler`]) and the cluster simulator apply the same plan.

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
