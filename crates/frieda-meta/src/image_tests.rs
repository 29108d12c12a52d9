//! Tests of the metadata image's transitions.

use super::*;

fn broker(id: BrokerId) -> MetaCommand {
    MetaCommand::RegisterBroker {
        registration: BrokerRegistration {
            id,
            incarnation: Uuid::from_u128(id as u128),
            endpoints: vec![Endpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
            }],
            rack: None,
            fenced: true,
            epoch: 0,
            offline_replicas: Default::default(),
            clean_shutdown: true,
        },
    }
}

/// Broker `id` registering as a new run `incarnation` (restarted; `clean`: after a clean
/// shutdown).
fn registers_again(id: BrokerId, incarnation: u128, clean: bool) -> MetaCommand {
    MetaCommand::RegisterBroker {
        registration: BrokerRegistration {
            id,
            incarnation: Uuid::from_u128(incarnation),
            endpoints: vec![],
            rack: None,
            fenced: false,
            epoch: 0,
            offline_replicas: Default::default(),
            clean_shutdown: clean,
        },
    }
}

fn image_with(brokers: &[BrokerId]) -> MetadataImage {
    let mut img = MetadataImage::default();
    for (i, &b) in brokers.iter().enumerate() {
        img.apply(&broker(b), i as u64 + 1).unwrap();
    }
    img
}

fn create(img: &mut MetadataImage, name: &str, assignment: Vec<Vec<BrokerId>>) {
    img.apply(
        &MetaCommand::CreateTopic {
            name: name.into(),
            id: Uuid::new_v4(),
            configs: BTreeMap::new(),
            assignment,
        },
        100,
    )
    .unwrap();
}

/// Broker `id`'s heartbeat reporting its replica of `t`-0 offline (a failed fsync).
fn reports_t0_offline(img: &MetadataImage, id: BrokerId) -> crate::controller::Heartbeat {
    crate::controller::Heartbeat {
        id,
        incarnation: img.brokers[&id].incarnation,
        endpoints: img.brokers[&id].endpoints.clone(),
        rack: None,
        raft_addr: String::new(),
        shutting_down: false,
        offline_replicas: vec![("t".into(), 0)],
        clean_shutdown: true,
        leader_cost_us: None,
        claims: vec![],
    }
}

/// Applies `cmds` at the next offsets, each must apply.
fn apply_all(img: &mut MetadataImage, cmds: &[MetaCommand]) {
    for c in cmds {
        let o = img.offset + 1;
        img.apply(c, o).unwrap();
    }
}

fn fence(id: BrokerId) -> MetaCommand {
    MetaCommand::FenceBroker {
        id,
        incarnation: Uuid::from_u128(id as u128),
    }
}

#[test]
fn topics_get_leaders_and_isr_from_live_replicas() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![2, 3, 1], vec![3, 1, 2]]);
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.leader, p.isr.clone(), p.leader_epoch),
        (2, vec![2, 3, 1], 0)
    );
    assert_eq!(
        img.apply(
            &MetaCommand::CreateTopic {
                name: "t".into(),
                id: Uuid::new_v4(),
                configs: BTreeMap::new(),
                assignment: vec![vec![1]],
            },
            101
        ),
        Err(MetaError::TopicExists("t".into()))
    );
    for bad in [vec![], vec![1, 1], vec![9]] {
        assert!(matches!(
            img.apply(
                &MetaCommand::CreateTopic {
                    name: "u".into(),
                    id: Uuid::new_v4(),
                    configs: BTreeMap::new(),
                    assignment: vec![bad.clone()],
                },
                102
            ),
            Err(MetaError::InvalidAssignment(_))
        ));
    }
}

#[test]
fn fencing_moves_leadership_within_the_isr_and_back() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    img.apply(&fence(1), 200).unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2, 3]));
    assert_eq!((p.leader_epoch, p.partition_epoch), (1, 1));
    // Fencing is idempotent; a stale incarnation is refused.
    img.apply(&fence(1), 201).unwrap();
    assert_eq!(img.partition("t", 0).unwrap(), &p);
    assert!(img
        .apply(
            &MetaCommand::FenceBroker {
                id: 2,
                incarnation: Uuid::from_u128(99)
            },
            202
        )
        .is_err());
    // The last ISR member leaves the ISR for the ELR (KIP-966, min.insync.replicas 1): the
    // partition is offline until it comes back, and no out-of-sync replica is elected (no
    // unclean election by default).
    img.apply(&fence(2), 203).unwrap();
    img.apply(&fence(3), 204).unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![]));
    assert_eq!(
        (p.elr.clone(), p.last_known_elr.clone()),
        (vec![3], vec![3])
    );
    img.apply(
        &MetaCommand::UnfenceBroker {
            id: 1,
            incarnation: Uuid::from_u128(1),
        },
        205,
    )
    .unwrap();
    assert_eq!(
        img.partition("t", 0).unwrap().leader,
        NO_LEADER,
        "1 is out of sync"
    );
    img.apply(
        &MetaCommand::UnfenceBroker {
            id: 3,
            incarnation: Uuid::from_u128(3),
        },
        206,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (3, vec![3], vec![])
    );
    assert!(p.leader_epoch >= 3);
}

fn set_elr(img: &mut MetadataImage, level: i16, offset: u64) {
    img.apply(
        &MetaCommand::UpdateFeatures {
            levels: [(crate::partition_change::ELR_FEATURE.to_string(), level)].into(),
        },
        offset,
    )
    .unwrap();
}

fn set_min_isr(img: &mut MetadataImage, topic: &str, min_isr: usize, offset: u64) {
    img.apply(
        &MetaCommand::SetTopicConfigs {
            name: topic.into(),
            configs: [("min.insync.replicas".to_string(), min_isr.to_string())].into(),
        },
        offset,
    )
    .unwrap();
}

/// Without ELR (`eligible.leader.replicas.version` 0, Kafka before 4.1) the last ISR member
/// stays in the ISR when fenced, and only it can lead again.
#[test]
fn without_elr_the_last_isr_member_stays_in_the_isr() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    set_elr(&mut img, 0, 150);
    for (i, b) in [1, 2, 3].into_iter().enumerate() {
        img.apply(&fence(b), 200 + i as u64).unwrap();
    }
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (NO_LEADER, vec![3], vec![])
    );
}

/// KIP-966 end to end in the image: min.insync.replicas=2, RF 3, brokers fenced one at a time.
/// The broker that left an ISR already below 2 holds every committed record (the leader's
/// high watermark stops there) and is elected when the ISR is empty; the one that left first
/// (out of sync) is not. Turning ELR off clears every claim (Kafka's ClearElrRecord).
#[test]
fn a_cluster_losing_replicas_one_at_a_time_elects_the_eligible_replica() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    set_min_isr(&mut img, "t", 2, 150);
    assert_eq!(img.effective_min_isr("t"), 2);
    img.apply(&fence(3), 200).unwrap();
    img.apply(&fence(2), 201).unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (1, vec![1], vec![2])
    );
    img.apply(&fence(1), 202).unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (NO_LEADER, vec![], vec![1, 2])
    );
    assert_eq!(p.last_known_elr, vec![1]);
    let unfence = |id: BrokerId| MetaCommand::UnfenceBroker {
        id,
        incarnation: Uuid::from_u128(id as u128),
    };
    img.apply(&unfence(3), 203).unwrap();
    assert_eq!(
        img.partition("t", 0).unwrap().leader,
        NO_LEADER,
        "3 left in sync with 2 others"
    );
    img.apply(&unfence(2), 204).unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (2, vec![2], vec![1])
    );
    assert!(p.last_known_elr.is_empty());
    // A preferred-leader election may pick an ELR member only while the ISR is empty.
    assert!(img
        .apply(
            &MetaCommand::ElectLeader {
                topic: "t".into(),
                partition: 0,
                leader: 1,
                unclean: false
            },
            205
        )
        .is_err());
    set_elr(&mut img, 0, 206);
    assert!(img.partition("t", 0).unwrap().elr.is_empty());
}

/// A broker that restarts without a clean shutdown may have lost unsynced records: it leaves
/// every ELR when it registers again (Kafka's `handleBrokerUncleanShutdown`), and a clean one
/// keeps its claim.
#[test]
fn a_broker_back_from_a_crash_leaves_the_elr() {
    for clean in [false, true] {
        let mut img = image_with(&[1, 2, 3]);
        create(&mut img, "t", vec![vec![1, 2, 3]]);
        set_min_isr(&mut img, "t", 2, 150);
        for (i, b) in [3, 2, 1].into_iter().enumerate() {
            img.apply(&fence(b), 200 + i as u64).unwrap();
        }
        let back = registers_again(2, 2002, clean);
        img.apply(&back, 300).unwrap();
        let p = img.partition("t", 0).unwrap();
        if clean {
            assert_eq!(
                (p.leader, p.isr.clone(), p.elr.clone()),
                (2, vec![2], vec![1])
            );
        } else {
            assert_eq!(
                (p.leader, p.isr.clone(), p.elr.clone()),
                (NO_LEADER, vec![], vec![1])
            );
        }
    }
}

#[test]
fn unclean_election_when_allowed() {
    let mut img = image_with(&[1, 2]);
    img.apply(
        &MetaCommand::CreateTopic {
            name: "u".into(),
            id: Uuid::new_v4(),
            configs: BTreeMap::from([("unclean.leader.election.enable".into(), "true".into())]),
            assignment: vec![vec![1, 2]],
        },
        10,
    )
    .unwrap();
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "u".into(),
            partition: 0,
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            isr: vec![1],
            new_isr_epochs: vec![],
        },
        11,
    )
    .unwrap();
    img.apply(&fence(1), 12).unwrap();
    let p = img.partition("u", 0).unwrap();
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
}

#[test]
fn alter_isr_is_fenced_by_epochs() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let shrink = |le, pe, isr: Vec<BrokerId>| MetaCommand::AlterIsr {
        topic: "t".into(),
        partition: 0,
        leader: 1,
        leader_epoch: le,
        partition_epoch: pe,
        isr,
        new_isr_epochs: vec![],
    };
    let out = img.apply(&shrink(0, 0, vec![1, 2]), 300).unwrap();
    assert!(
        matches!(out, MetaOutcome::Partition(p) if p.isr == vec![1, 2] && p.partition_epoch == 1)
    );
    assert!(matches!(
        img.apply(&shrink(0, 0, vec![1]), 301),
        Err(MetaError::StalePartitionEpoch(_))
    ));
    assert!(matches!(
        img.apply(&shrink(1, 1, vec![1]), 302),
        Err(MetaError::StaleLeader(_))
    ));
    assert!(matches!(
        img.apply(&shrink(0, 1, vec![2]), 303),
        Err(MetaError::Ineligible(_))
    ));
    // A fenced replica cannot rejoin.
    img.apply(&fence(3), 304).unwrap();
    let pe = img.partition("t", 0).unwrap().partition_epoch;
    assert!(matches!(
        img.apply(&shrink(0, pe, vec![1, 2, 3]), 305),
        Err(MetaError::Ineligible(_))
    ));
}

/// Found by frieda-sim (seed 44251 before the fix): an expansion refused while the follower was
/// fenced, then a second copy of the same ask (a retry, or a request delayed on an old
/// connection) committed once it was unfenced, after the leader had dropped its pending change
/// and acknowledged records the follower lacked. The refusal moves the partition epoch on, so
/// the copy is stale.
#[test]
fn a_refused_isr_expansion_cannot_be_committed_by_a_copy_of_the_ask() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let alter = |pe: i32, isr: Vec<BrokerId>, epochs: Vec<(BrokerId, u64)>| MetaCommand::AlterIsr {
        topic: "t".into(),
        partition: 0,
        leader: 1,
        leader_epoch: 0,
        partition_epoch: pe,
        isr,
        new_isr_epochs: epochs,
    };
    img.apply(&alter(0, vec![1, 2], vec![]), 200).unwrap();
    img.apply(&fence(3), 201).unwrap();
    let pe = img.partition("t", 0).unwrap().partition_epoch;
    let epoch3 = img.brokers[&3].epoch;
    let ask = alter(pe, vec![1, 2, 3], vec![(3, epoch3)]);
    assert!(matches!(
        img.apply(&ask, 202),
        Err(MetaError::Ineligible(_))
    ));
    let p = img.partition("t", 0).unwrap();
    assert_eq!((p.isr.clone(), p.partition_epoch), (vec![1, 2], pe + 1));
    img.apply(
        &MetaCommand::UnfenceBroker {
            id: 3,
            incarnation: Uuid::from_u128(3),
        },
        203,
    )
    .unwrap();
    assert!(!img.brokers[&3].fenced);
    assert!(matches!(
        img.apply(&ask, 204),
        Err(MetaError::StalePartitionEpoch(_))
    ));
    assert_eq!(img.partition("t", 0).unwrap().isr, vec![1, 2]);
}

#[test]
fn reassignment_adds_then_removes() {
    let mut img = image_with(&[1, 2, 3, 4]);
    create(&mut img, "t", vec![vec![1, 2]]);
    img.apply(
        &MetaCommand::Reassign {
            topic: "t".into(),
            partition: 0,
            target: vec![3, 4],
        },
        400,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(
        (p.adding.clone(), p.removing.clone()),
        (vec![3, 4], vec![1, 2])
    );
    assert_eq!(
        p.leader, 1,
        "the old leader leads until the new replicas are in sync"
    );
    let out = img
        .apply(
            &MetaCommand::AlterIsr {
                topic: "t".into(),
                partition: 0,
                leader: 1,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                isr: vec![1, 2, 3, 4],
                new_isr_epochs: vec![],
            },
            401,
        )
        .unwrap();
    let MetaOutcome::Partition(p) = out else {
        panic!()
    };
    assert_eq!(p.replicas, vec![3, 4]);
    assert_eq!(p.isr, vec![3, 4]);
    assert_eq!(p.leader, 3);
    assert!(p.adding.is_empty() && p.removing.is_empty());
}

#[test]
fn producer_id_blocks_and_serde_round_trip() {
    let mut img = image_with(&[1]);
    assert_eq!(
        img.apply(&MetaCommand::AllocateProducerIds { count: 1000 }, 5),
        Ok(MetaOutcome::ProducerIds { start: 0 })
    );
    assert_eq!(
        img.apply(&MetaCommand::AllocateProducerIds { count: 1000 }, 6),
        Ok(MetaOutcome::ProducerIds { start: 1000 })
    );
    create(&mut img, "t", vec![vec![1]]);
    let text = serde_json::to_string(&img).unwrap();
    let back: MetadataImage = serde_json::from_str(&text).unwrap();
    assert_eq!(back, img);
}

#[test]
fn a_broker_restarted_within_its_session_gives_up_what_it_led() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3], vec![1]]);
    // Broker 1 comes back as a new run before its session expired: its old run is fenced first
    // (its restarted log may have lost unsynced records), then it registers again.
    let restarted = registers_again(1, 1001, true);
    img.apply(&restarted, 200).unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(p.leader, 2, "an in-sync replica took over");
    assert_eq!(
        p.isr,
        vec![2, 3],
        "the restarted run rejoins once caught up"
    );
    assert_eq!(p.leader_epoch, 1);
    // Its only copy: the partition went leaderless and comes back to it (the last in-sync
    // replica), in a new epoch, so nothing it had is fenced by a stale epoch.
    let q = img.partition("t", 1).unwrap();
    assert_eq!((q.leader, q.isr.clone(), q.leader_epoch), (1, vec![1], 2));
    assert!(!img.brokers[&1].fenced);
    // The same run registering again changes nothing.
    img.apply(&restarted, 201).unwrap();
    assert_eq!(img.partition("t", 0).unwrap().leader_epoch, 1);
}

/// KIP-903: an ISR expansion built on a follower's progress under its previous registration
/// (it restarted meanwhile, and its log may be shorter than the leader counted) is refused; the
/// same expansion under its current registration is taken. Found by tests/jepsen rolling seed
/// 2025: a stale expansion applied after the follower's restart made it leader with a log 80
/// records short, and the other replicas truncated acknowledged records to it.
#[test]
fn an_isr_expansion_for_a_replica_that_registered_again_is_refused() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let pe = |img: &MetadataImage| img.partition("t", 0).unwrap().partition_epoch;
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            isr: vec![1, 2],
            new_isr_epochs: vec![],
        },
        200,
    )
    .unwrap();
    let old_epoch = img.brokers[&3].epoch;
    // broker 3 restarts: a new incarnation registers at a new epoch
    let mut again = broker(3);
    if let MetaCommand::RegisterBroker { registration } = &mut again {
        registration.incarnation = Uuid::from_u128(33);
    }
    img.apply(&again, 201).unwrap();
    assert_ne!(img.brokers[&3].epoch, old_epoch);
    let expand = |epoch: u64, pe: i32| MetaCommand::AlterIsr {
        topic: "t".into(),
        partition: 0,
        leader: 1,
        leader_epoch: 0,
        partition_epoch: pe,
        isr: vec![1, 2, 3],
        new_isr_epochs: vec![(3, epoch)],
    };
    assert!(matches!(
        img.apply(&expand(old_epoch, pe(&img)), 202),
        Err(MetaError::Ineligible(_))
    ));
    assert_eq!(img.partition("t", 0).unwrap().isr, vec![1, 2]);
    let now = img.brokers[&3].epoch;
    let out = img.apply(&expand(now, pe(&img)), 203).unwrap();
    assert!(matches!(out, MetaOutcome::Partition(p) if p.isr == vec![1, 2, 3]));
}

/// Found by frieda-sim (seed 230 before the fix): a reassignment replacing one in progress kept
/// the replica the first one was adding in the ISR after dropping it from the replicas.
#[test]
fn a_reassignment_replacing_another_keeps_the_isr_within_the_replicas() {
    let mut img = image_with(&[1, 2, 3, 4, 5]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::Reassign {
            topic: "t".into(),
            partition: 0,
            target: vec![5, 3, 4],
        },
        o,
    )
    .unwrap();
    // 5 caught up and joined the ISR; 4 has not yet.
    let p = img.partition("t", 0).unwrap().clone();
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            isr: vec![1, 2, 3, 5],
            new_isr_epochs: vec![],
        },
        o,
    )
    .unwrap();
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::Reassign {
            topic: "t".into(),
            partition: 0,
            target: vec![4, 1, 3],
        },
        o,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(p.adding, vec![4]);
    // 5 was in sync: it stays (removing) until the new reassignment completes (seed 76819).
    assert_eq!(p.removing, vec![2, 5]);
    assert!(
        p.isr.iter().all(|b| p.replicas.contains(b)),
        "ISR {:?} within replicas {:?}",
        p.isr,
        p.replicas
    );
    assert!(p.isr.contains(&5));
    // 4 joins the ISR: every target replica is in sync, the removing ones go.
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            isr: vec![1, 2, 3, 4, 5],
            new_isr_epochs: vec![],
        },
        o,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(p.replicas, vec![4, 1, 3]);
    assert_eq!(p.isr, vec![1, 3, 4]);
    assert!(p.adding.is_empty() && p.removing.is_empty());
}

/// Found by frieda-sim (seed 76819): a reassignment replacing one in progress dropped at once
/// (with the ISR) a replica the first was adding and that had joined the ISR, Kafka's revert
/// rule; the leader, not yet aware, counted that replica's in-flight fetch and acknowledged an
/// acks=all record which, once the dropped replica deleted its log, was on one broker with
/// min.insync.replicas=2. And a reassignment completes only when every replica that stays is in
/// the ISR (Kafka's maybeCompleteReassignment), not when there is nothing to add.
#[test]
fn an_in_sync_replica_leaves_only_when_the_reassignment_completes() {
    let mut img = image_with(&[1, 2, 3, 4, 5]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let p = img.partition("t", 0).unwrap().clone();
    // 2 falls out of the ISR.
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            isr: vec![1, 3],
            new_isr_epochs: vec![],
        },
        o,
    )
    .unwrap();
    // [1, 2, 3] -> [1, 2]: nothing to add, but 2 is not in sync: 3 must stay.
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::Reassign {
            topic: "t".into(),
            partition: 0,
            target: vec![1, 2],
        },
        o,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(p.replicas, vec![1, 2, 3]);
    assert_eq!(p.isr, vec![1, 3]);
    assert_eq!(p.removing, vec![3]);
    // 2 catches up: now 3 goes.
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            isr: vec![1, 2, 3],
            new_isr_epochs: vec![],
        },
        o,
    )
    .unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(p.replicas, vec![1, 2]);
    assert_eq!(p.isr, vec![1, 2]);
    assert!(p.removing.is_empty());
}

/// Issue 28, item 6: a broker reports a replica whose log went offline; its leadership moves to
/// an in-sync replica, it leaves the ISR, and it is not elected again until it registers anew.
#[test]
fn an_offline_replica_loses_its_leadership_and_its_isr_place() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3], vec![2, 1, 3]]);
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!((p.leader, p.isr.clone()), (1, vec![1, 2, 3]));
    let hb = reports_t0_offline(&img, 1);
    let cmds = crate::controller::heartbeat_commands(&img, &hb);
    assert_eq!(cmds.len(), 1, "{cmds:?}");
    apply_all(&mut img, &cmds);
    let p0 = img.partition("t", 0).unwrap();
    assert_eq!(p0.leader, 2, "an in-sync replica leads");
    assert_eq!(p0.isr, vec![2, 3]);
    assert!(p0.leader_epoch > p.leader_epoch);
    // Partition 1, whose replica on broker 1 is fine, is untouched.
    assert_eq!(img.partition("t", 1).unwrap().isr, vec![2, 1, 3]);
    // Reported again: nothing new to commit.
    assert!(crate::controller::heartbeat_commands(&img, &hb).is_empty());
    // Broker 1 cannot be elected for partition 0 while its replica is offline...
    let o = img.offset + 1;
    assert!(img
        .apply(
            &MetaCommand::ElectLeader {
                topic: "t".into(),
                partition: 0,
                leader: 1,
                unclean: true,
            },
            o
        )
        .is_err());
    // ...nor re-admitted to the ISR.
    let p0 = img.partition("t", 0).unwrap().clone();
    let o = img.offset + 1;
    assert!(img
        .apply(
            &MetaCommand::AlterIsr {
                topic: "t".into(),
                partition: 0,
                leader: 2,
                leader_epoch: p0.leader_epoch,
                partition_epoch: p0.partition_epoch,
                isr: vec![1, 2, 3],
                new_isr_epochs: vec![],
            },
            o
        )
        .is_err());
    // A restart (a new registration) recovers the log: eligible again.
    let mut again = match broker(1) {
        MetaCommand::RegisterBroker { registration } => registration,
        _ => unreachable!(),
    };
    again.incarnation = Uuid::from_u128(99);
    let o = img.offset + 1;
    img.apply(
        &MetaCommand::RegisterBroker {
            registration: again,
        },
        o,
    )
    .unwrap();
    assert!(!img.replica_offline(1, "t", 0));
}

/// Issue 28, item 8: unclean election reads the topic's setting, else the dynamic cluster
/// default, else the active controller's static setting.
#[test]
fn unclean_election_reads_the_broker_defaults() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    assert!(!img.unclean_allowed("t"));
    img.apply(
        &MetaCommand::SetUncleanDefault { enable: true },
        img.offset + 1,
    )
    .unwrap();
    assert!(img.unclean_allowed("t"), "the static default");
    let mut dynamic = BTreeMap::new();
    dynamic.insert(
        "unclean.leader.election.enable".to_string(),
        "false".to_string(),
    );
    img.apply(
        &MetaCommand::SetBrokerConfigs {
            resource: String::new(),
            configs: dynamic,
        },
        img.offset + 1,
    )
    .unwrap();
    assert!(
        !img.unclean_allowed("t"),
        "the dynamic default wins over the static one"
    );
    let mut topic = BTreeMap::new();
    topic.insert(
        "unclean.leader.election.enable".to_string(),
        "true".to_string(),
    );
    img.apply(
        &MetaCommand::SetTopicConfigs {
            name: "t".into(),
            configs: topic,
        },
        img.offset + 1,
    )
    .unwrap();
    assert!(img.unclean_allowed("t"), "the topic's own setting wins");
    // With it, the last in-sync replica fenced, an out-of-sync live replica leads.
    let p = img.partition("t", 0).unwrap().clone();
    img.apply(
        &MetaCommand::AlterIsr {
            topic: "t".into(),
            partition: 0,
            leader: 1,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            isr: vec![1],
            new_isr_epochs: vec![],
        },
        img.offset + 1,
    )
    .unwrap();
    img.apply(&fence(1), img.offset + 1).unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
}

/// UnregisterBroker (`kafka-cluster unregister`): the registration goes, with every ISR and ELR
/// place; the partitions keep the broker among their replicas; an unknown id is refused.
#[test]
fn an_unregistered_broker_leaves_every_isr_and_elr() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    set_min_isr(&mut img, "t", 2, 150);
    img.apply(&fence(3), 200).unwrap();
    img.apply(&fence(2), 201).unwrap();
    assert_eq!(img.partition("t", 0).unwrap().elr, vec![2]);
    img.apply(&MetaCommand::UnregisterBroker { id: 2 }, 202)
        .unwrap();
    assert!(!img.brokers.contains_key(&2));
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (1, vec![1], vec![])
    );
    assert_eq!(p.replicas, vec![1, 2, 3]);
    assert!(matches!(
        img.apply(&MetaCommand::UnregisterBroker { id: 2 }, 203),
        Err(MetaError::UnknownBroker(2))
    ));
}

/// Delegation tokens (KIP-48): a new token needs a free id, a renewal a token still there (an
/// expiry or sweep in between wins: a renewal never brings a removed token back); removal
/// ignores absent ids.
#[test]
fn delegation_tokens_are_created_renewed_only_while_present_and_removed() {
    let mut img = MetadataImage::default();
    let t = DelegationToken {
        token_id: "tok".into(),
        owner: "User:alice".into(),
        requester: "User:alice".into(),
        renewers: vec!["User:bob".into()],
        issue_ms: 1,
        max_ms: 100,
        expiry_ms: 10,
    };
    let put = |token: &DelegationToken, create| MetaCommand::PutDelegationToken {
        token: token.clone(),
        create,
    };
    img.apply(&put(&t, true), 1).unwrap();
    assert!(matches!(
        img.apply(&put(&t, true), 2),
        Err(MetaError::Invalid(_))
    ));
    let renewed = DelegationToken {
        expiry_ms: 50,
        ..t.clone()
    };
    img.apply(&put(&renewed, false), 3).unwrap();
    assert_eq!(img.delegation_tokens["tok"].expiry_ms, 50);
    let remove = MetaCommand::RemoveDelegationTokens {
        ids: vec!["tok".into(), "absent".into()],
    };
    img.apply(&remove, 4).unwrap();
    assert!(img.delegation_tokens.is_empty());
    assert!(matches!(
        img.apply(&put(&renewed, false), 5),
        Err(MetaError::DelegationTokenNotFound(_))
    ));
    // Kept through a snapshot.
    img.apply(&put(&t, true), 6).unwrap();
    let back: MetadataImage = serde_json::from_str(&serde_json::to_string(&img).unwrap()).unwrap();
    assert_eq!(back.delegation_tokens, img.delegation_tokens);
}

/// Issue 34: a `quorum` topic's partition never gets a leader picked from its ISR: a fenced
/// leader, a preferred election and a reassignment away from the leader each leave it leaderless
/// in a new epoch with [`Electing`] set, and `ElectFromClaims` elects (only in that epoch, only
/// a live replica).
#[test]
fn quorum_partitions_go_leaderless_and_are_elected_from_claims() {
    let mut img = image_with(&[1, 2, 3, 4]);
    img.apply(&MetaCommand::SetAckPolicyDefault { quorum: true }, 10)
        .unwrap();
    create(&mut img, "q", vec![vec![1, 2, 3]]);
    assert!(img.quorum_acks("q"));
    let p = img.partition("q", 0).unwrap().clone();
    assert_eq!((p.leader, p.leader_epoch, p.electing), (1, 0, None));

    // The leader is fenced: leaderless in epoch 1, not 2 picked from the ISR.
    img.apply(&fence(1), 101).unwrap();
    let p = img.partition("q", 0).unwrap().clone();
    assert_eq!((p.leader, p.leader_epoch), (NO_LEADER, 1));
    assert_eq!(
        p.electing,
        Some(Electing {
            previous: 1,
            wanted: NO_LEADER
        })
    );
    // Another broker fenced meanwhile: still leaderless, same epoch (claims stay valid).
    img.apply(&fence(4), 102).unwrap();
    assert_eq!(img.partition("q", 0).unwrap().leader_epoch, 1);

    let elect = |epoch, leader| MetaCommand::ElectFromClaims {
        topic: "q".into(),
        partition: 0,
        leader_epoch: epoch,
        leader,
    };
    assert_eq!(
        img.apply(&elect(0, 3), 103),
        Err(MetaError::ElectionNotNeeded),
        "stale epoch"
    );
    assert!(
        matches!(img.apply(&elect(1, 1), 104), Err(MetaError::Ineligible(_))),
        "fenced"
    );
    img.apply(&elect(1, 3), 105).unwrap();
    let p = img.partition("q", 0).unwrap().clone();
    assert_eq!((p.leader, p.leader_epoch, p.electing), (3, 2, None));
    assert!(p.isr.contains(&3));
    assert_eq!(
        img.apply(&elect(1, 2), 106),
        Err(MetaError::ElectionNotNeeded)
    );

    // A preferred election asks for 1 (back and live): leaderless, 1 wanted.
    img.apply(&registers_again(1, 11, true), 107).unwrap();
    img.apply(
        &MetaCommand::ElectLeader {
            topic: "q".into(),
            partition: 0,
            leader: 1,
            unclean: false,
        },
        108,
    )
    .unwrap();
    let p = img.partition("q", 0).unwrap().clone();
    assert_eq!((p.leader, p.leader_epoch), (NO_LEADER, 3));
    assert_eq!(
        p.electing,
        Some(Electing {
            previous: 3,
            wanted: 1
        })
    );
    img.apply(&elect(3, 1), 109).unwrap();
    assert_eq!(img.partition("q", 0).unwrap().leader, 1);

    // A reassignment that removes the leader: leaderless until the claims elect.
    img.apply(
        &MetaCommand::Reassign {
            topic: "q".into(),
            partition: 0,
            target: vec![2, 3],
        },
        110,
    )
    .unwrap();
    let p = img.partition("q", 0).unwrap().clone();
    assert!(p.leader == 1 || p.leader == NO_LEADER);
}

#[test]
fn remote_segments_are_fenced_by_leader_epoch_and_topic_id() {
    use crate::remote_log::{RemoteSegment, RemoteSegmentChange, RemoteSegmentState};
    let mut img = image_with(&[1, 2, 3]);
    for b in [1, 2, 3] {
        img.apply(
            &MetaCommand::UnfenceBroker {
                id: b,
                incarnation: Uuid::from_u128(b as u128),
            },
            10 + b as u64,
        )
        .unwrap();
    }
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let (topic_id, epoch) = (
        img.topics["t"].id,
        img.topics["t"].partitions[0].leader_epoch,
    );
    let seg = |n: u128, start: i64, end: i64| RemoteSegment {
        id: Uuid::from_u128(n),
        start_offset: start,
        end_offset: end,
        max_timestamp_ms: 0,
        size_bytes: 10,
        broker: 1,
        leader_epoch: epoch,
        segment_epochs: vec![(epoch, start)],
        truncated: false,
        state: RemoteSegmentState::CopyStarted,
    };
    let change =
        |id: Uuid, leader_epoch: i32, change: RemoteSegmentChange| MetaCommand::RemoteSegment {
            topic: "t".into(),
            topic_id: id,
            partition: 0,
            leader_epoch,
            change,
        };
    img.apply(
        &change(
            topic_id,
            epoch,
            RemoteSegmentChange::CopyStarted(seg(1, 0, 9)),
        ),
        200,
    )
    .unwrap();
    img.apply(
        &change(
            topic_id,
            epoch,
            RemoteSegmentChange::CopyFinished(Uuid::from_u128(1)),
        ),
        201,
    )
    .unwrap();
    assert_eq!(img.remote_log("t", 0).and_then(|r| r.copied_end()), Some(9));
    // A deposed leader (an older epoch) changes nothing.
    assert!(matches!(
        img.apply(
            &change(
                topic_id,
                epoch - 1,
                RemoteSegmentChange::CopyStarted(seg(2, 10, 19))
            ),
            202,
        ),
        Err(MetaError::StaleLeader(_))
    ));
    // Nor does a change for a deleted topic's partition under a recreated topic of that name.
    assert!(matches!(
        img.apply(
            &change(
                Uuid::from_u128(99),
                epoch,
                RemoteSegmentChange::CopyStarted(seg(2, 10, 19))
            ),
            203,
        ),
        Err(MetaError::UnknownTopic(_))
    ));
    // A second copy of copied offsets is refused.
    assert!(matches!(
        img.apply(
            &change(
                topic_id,
                epoch,
                RemoteSegmentChange::CopyStarted(seg(3, 5, 19))
            ),
            204,
        ),
        Err(MetaError::Invalid(_))
    ));
    // The entries survive a snapshot round trip; after the last deletion the partition's
    // remote log holds no segment but remembers the highest offset copied.
    let back: MetadataImage = serde_json::from_slice(&serde_json::to_vec(&img).unwrap()).unwrap();
    assert_eq!(back, img);
    for (i, c) in [
        RemoteSegmentChange::DeleteStarted(Uuid::from_u128(1)),
        RemoteSegmentChange::DeleteFinished(Uuid::from_u128(1)),
    ]
    .into_iter()
    .enumerate()
    {
        img.apply(&change(topic_id, epoch, c), 205 + i as u64)
            .unwrap();
    }
    let log = img.remote_log("t", 0).unwrap();
    assert_eq!(
        (log.len(), log.copied_end(), log.copied_upto()),
        (0, None, Some(9))
    );
    // A deleted topic with remote segments leaves its id for the bucket's sweep; one without
    // leaves nothing.
    img.apply(
        &change(
            topic_id,
            epoch,
            RemoteSegmentChange::CopyStarted(seg(4, 10, 19)),
        ),
        210,
    )
    .unwrap();
    create(&mut img, "plain", vec![vec![1, 2, 3]]);
    for (i, name) in ["t", "plain"].into_iter().enumerate() {
        img.apply(
            &MetaCommand::DeleteTopic { name: name.into() },
            211 + i as u64,
        )
        .unwrap();
    }
    assert_eq!(
        img.deleted_remote,
        BTreeMap::from([(topic_id, "t".to_string())])
    );
    img.apply(&MetaCommand::RemoteTopicDeleted { topic_id }, 213)
        .unwrap();
    assert!(img.deleted_remote.is_empty());
}

fn set_cluster_min_isr(img: &mut MetadataImage, min_isr: Option<usize>, offset: u64) {
    let mut configs = img.broker_configs.get("").cloned().unwrap_or_default();
    match min_isr {
        Some(m) => configs.insert(MIN_INSYNC_REPLICAS.to_string(), m.to_string()),
        None => configs.remove(MIN_INSYNC_REPLICAS),
    };
    img.apply(
        &MetaCommand::SetBrokerConfigs {
            resource: String::new(),
            configs,
        },
        offset,
    )
    .unwrap();
}

/// Issue 57 B (KAFKA-16540), the issue's scenario: RF 3 and min.insync.replicas 3 put 3 in
/// the ELR when it leaves; min.insync.replicas 2 then lets records commit on 1 and 2 alone, so
/// 3's claim is void: it is cleared, and with 1 and 2 fenced 3 is not elected (it used to
/// be, without the records committed under 2).
#[test]
fn a_topic_min_isr_change_clears_the_elr_so_a_stale_claim_is_not_elected() {
    let mut img = image_with(&[1, 2, 3]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    set_min_isr(&mut img, "t", 3, 150);
    img.apply(&fence(3), 200).unwrap();
    let p = img.partition("t", 0).unwrap().clone();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (1, vec![1, 2], vec![3])
    );
    set_min_isr(&mut img, "t", 2, 201);
    let q = img.partition("t", 0).unwrap().clone();
    assert!(q.elr.is_empty() && q.last_known_elr.is_empty(), "{q:?}");
    assert_eq!(q.partition_epoch, p.partition_epoch + 1);
    img.apply(&fence(1), 202).unwrap();
    img.apply(&fence(2), 203).unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (NO_LEADER, vec![], vec![1, 2]),
        "3 lacks what was committed under min.insync.replicas 2"
    );
}

/// The ELR is cleared on a change of the effective value only: the topic's config deleted
/// (back to the cluster default), the cluster default changed (only topics that take it), the
/// active controller's static value changed; a new value that caps to the same one (above the
/// replication factor) keeps the claims.
#[test]
fn every_change_of_the_effective_min_isr_clears_the_elr_and_only_that() {
    let claim = |img: &mut MetadataImage, topic: &str, at: u64| {
        // 3 leaves an ISR of 3 below min.insync.replicas 3: ELR [3].
        img.apply(&fence(3), at).unwrap();
        img.apply(
            &MetaCommand::UnfenceBroker {
                id: 3,
                incarnation: Uuid::from_u128(3),
            },
            at + 1,
        )
        .unwrap();
        assert_eq!(img.partition(topic, 0).unwrap().elr, vec![3], "{topic}");
    };
    let mut img = image_with(&[1, 2, 3]);
    img.apply(&MetaCommand::SetMinInsyncDefault { min_insync: 3 }, 50)
        .unwrap();
    create(&mut img, "own", vec![vec![1, 2, 3]]);
    create(&mut img, "dflt", vec![vec![1, 2, 3]]);
    set_min_isr(&mut img, "own", 3, 60);
    claim(&mut img, "own", 100);
    assert_eq!(img.partition("dflt", 0).unwrap().elr, vec![3]);

    // 3 -> 4 with 3 replicas: still 3 in effect, the claims stand.
    set_min_isr(&mut img, "own", 4, 110);
    assert_eq!(img.partition("own", 0).unwrap().elr, vec![3]);
    // The cluster default 3 -> 2: "dflt" takes it (cleared), "own" does not.
    set_cluster_min_isr(&mut img, Some(2), 120);
    assert!(img.partition("dflt", 0).unwrap().elr.is_empty());
    assert_eq!(img.partition("own", 0).unwrap().elr, vec![3]);
    // The topic's own config deleted: back to the default 2, cleared.
    img.apply(
        &MetaCommand::SetTopicConfigs {
            name: "own".into(),
            configs: BTreeMap::new(),
        },
        130,
    )
    .unwrap();
    assert!(img.partition("own", 0).unwrap().elr.is_empty());

    // An image from before the cluster-wide record: the active controller's static value is
    // the default; its change clears, and the new value is written cluster-wide.
    let mut img = image_with(&[1, 2, 3]);
    img.apply(&MetaCommand::SetMinInsyncDefault { min_insync: 3 }, 50)
        .unwrap();
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    claim(&mut img, "t", 100);
    img.broker_configs.clear();
    img.apply(&MetaCommand::SetMinInsyncDefault { min_insync: 2 }, 110)
        .unwrap();
    assert_eq!(img.effective_min_isr("t"), 2);
    assert!(img.partition("t", 0).unwrap().elr.is_empty());
    assert_eq!(
        img.broker_configs[""]
            .get(MIN_INSYNC_REPLICAS)
            .map(String::as_str),
        Some("2")
    );
}

/// KAFKA-16540's config rules while ELR is on (Kafka 4.x `ConfigurationControlManager`): the
/// active controller's static value is written as the cluster-wide `min.insync.replicas` and
/// then decides (a later controller's other static value changes nothing); a broker's own
/// value is refused and the cluster-wide one cannot be removed (INVALID_CONFIG with Kafka's
/// messages); turning ELR on removes the brokers' own values. Without ELR both are allowed.
#[test]
fn with_elr_on_one_cluster_wide_min_isr_decides_and_broker_overrides_are_refused() {
    let mut img = image_with(&[1, 2, 3]);
    assert!(img.elr_enabled());
    assert!(img.min_isr_configs_need_reset());
    img.apply(&MetaCommand::SetMinInsyncDefault { min_insync: 2 }, 50)
        .unwrap();
    assert_eq!(
        img.broker_configs[""]
            .get(MIN_INSYNC_REPLICAS)
            .map(String::as_str),
        Some("2")
    );
    assert!(!img.min_isr_configs_need_reset());
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    assert_eq!(img.min_insync_replicas("t"), 2);
    // Another controller with static 3: the cluster-wide 2 still decides.
    img.apply(&MetaCommand::SetMinInsyncDefault { min_insync: 3 }, 60)
        .unwrap();
    assert_eq!(img.min_insync_replicas("t"), 2);

    let broker_level = MetaCommand::SetBrokerConfigs {
        resource: "1".into(),
        configs: [(MIN_INSYNC_REPLICAS.to_string(), "3".to_string())].into(),
    };
    assert_eq!(
        img.apply(&broker_level, 70),
        Err(MetaError::InvalidConfig(
            "Broker-level min.insync.replicas cannot be altered while ELR is enabled.".into()
        ))
    );
    let mut other = img.broker_configs[""].clone();
    other.remove(MIN_INSYNC_REPLICAS);
    other.insert("log.retention.ms".into(), "1000".into());
    assert_eq!(
        img.apply(
            &MetaCommand::SetBrokerConfigs {
                resource: String::new(),
                configs: other,
            },
            71
        ),
        Err(MetaError::InvalidConfig(
            "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.".into()
        ))
    );
    assert!(!img.broker_configs.contains_key("1"));
    // Other broker-level keys are still fine.
    img.apply(
        &MetaCommand::SetBrokerConfigs {
            resource: "1".into(),
            configs: [("log.retention.ms".to_string(), "1000".to_string())].into(),
        },
        72,
    )
    .unwrap();

    // Without ELR both are allowed; turning it on removes the broker's own value.
    set_elr(&mut img, 0, 80);
    img.apply(
        &MetaCommand::SetBrokerConfigs {
            resource: "1".into(),
            configs: [
                (MIN_INSYNC_REPLICAS.to_string(), "3".to_string()),
                ("log.retention.ms".to_string(), "1000".to_string()),
            ]
            .into(),
        },
        81,
    )
    .unwrap();
    set_cluster_min_isr(&mut img, None, 82);
    assert!(!img.min_isr_configs_need_reset());
    set_elr(&mut img, 1, 83);
    assert_eq!(
        img.broker_configs["1"].get(MIN_INSYNC_REPLICAS),
        None,
        "the broker's own min.insync.replicas goes"
    );
    assert_eq!(
        img.broker_configs["1"]
            .get("log.retention.ms")
            .map(String::as_str),
        Some("1000")
    );
    assert_eq!(
        img.broker_configs[""]
            .get(MIN_INSYNC_REPLICAS)
            .map(String::as_str),
        Some("3"),
        "written from the active controller's static value"
    );
}

#[test]
fn the_leader_epoch_counts_leaderships_not_raft_terms() {
    let mut img = MetadataImage::default();
    // The initial membership (term 0), then node 2 and node 3 each leading Raft term 1 (openraft's
    // leader ids are (term, node)), then node 3 again in term 2.
    img.note_leader(0, 1);
    assert_eq!(img.leader_epoch, 1);
    img.note_leader(1, 2);
    img.note_leader(1, 2);
    assert_eq!((img.leader_epoch, img.epoch_leader), (2, Some((1, 2))));
    img.note_leader(1, 3);
    assert_eq!((img.leader_epoch, img.epoch_leader), (3, Some((1, 3))));
    img.note_leader(2, 3);
    assert_eq!(img.leader_epoch, 4);
    // An image from before the count (a snapshot of an older version) starts at its term.
    let mut old = MetadataImage::default();
    old.note_leader(7, 2);
    assert_eq!(old.leader_epoch, 8);
    // And the count survives a snapshot.
    let back: MetadataImage = serde_json::from_str(&serde_json::to_string(&img).unwrap()).unwrap();
    assert_eq!((back.leader_epoch, back.epoch_leader), (4, Some((2, 3))));
}

/// Issue 57, found by `frieda-sim --min-insync-changes`: a `replication.ack.policy=quorum`
/// topic acknowledges a record once `m` replicas have it and elects from `n - m + 1` claims, so
/// raising `m` (1 -> 2 of 3) let an election from two claims miss a record acknowledged on one
/// replica (28 of seeds 0-299 lost acknowledged records). Its policy and its effective
/// `min.insync.replicas` are fixed at creation; `isr` topics change both as Kafka allows.
#[test]
fn a_quorum_topic_keeps_its_ack_policy_and_min_insync_replicas() {
    let mut img = image_with(&[1, 2, 3]);
    let quorum: BTreeMap<String, String> = [
        ("replication.ack.policy".to_string(), "quorum".to_string()),
        ("min.insync.replicas".to_string(), "1".to_string()),
    ]
    .into();
    img.apply(
        &MetaCommand::CreateTopic {
            name: "q".into(),
            id: Uuid::new_v4(),
            configs: quorum.clone(),
            assignment: vec![vec![1, 2, 3]],
        },
        100,
    )
    .unwrap();
    let set = |img: &mut MetadataImage, configs: &[(&str, &str)]| {
        img.apply(
            &MetaCommand::SetTopicConfigs {
                name: "q".into(),
                configs: configs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
            110,
        )
    };
    let raised = set(
        &mut img,
        &[
            ("replication.ack.policy", "quorum"),
            ("min.insync.replicas", "2"),
        ],
    );
    assert!(
        matches!(raised, Err(MetaError::InvalidConfig(_))),
        "{raised:?}"
    );
    assert_eq!(
        img.effective_min_isr("q"),
        1,
        "a refused change leaves the configs"
    );
    assert_eq!(img.topics["q"].configs, quorum);
    // Back to Kafka's rule: refused too (an ISR member may lack acknowledged records).
    let to_isr = set(&mut img, &[("min.insync.replicas", "1")]);
    assert!(
        matches!(to_isr, Err(MetaError::InvalidConfig(_))),
        "{to_isr:?}"
    );
    // Other configs change; the same values may be written again.
    set(
        &mut img,
        &[
            ("replication.ack.policy", "quorum"),
            ("min.insync.replicas", "1"),
            ("retention.ms", "60000"),
        ],
    )
    .unwrap();
    // An isr topic changes min.insync.replicas as Kafka allows.
    create(&mut img, "i", vec![vec![1, 2, 3]]);
    set_min_isr(&mut img, "i", 3, 120);
    assert_eq!(img.effective_min_isr("i"), 3);
}

/// A replica whose log went offline and that a reassignment then moved away is forgotten: the
/// broker deleted that log, so when a later reassignment brings the partition back, its new
/// log may join the ISR (and lead). Before, the mark stayed for the broker's whole run and a
/// `quorum` partition whose longest claim it held never elected (frieda-sim, seed 64373).
#[test]
fn an_offline_replica_moved_away_and_back_is_a_new_healthy_replica() {
    let mut img = image_with(&[1, 2, 3, 4]);
    create(&mut img, "t", vec![vec![1, 2, 3]]);
    let hb = reports_t0_offline(&img, 3);
    let cmds = crate::controller::heartbeat_commands(&img, &hb);
    apply_all(&mut img, &cmds);
    assert!(img.replica_offline(3, "t", 0));
    assert_eq!(img.partition("t", 0).unwrap().isr, vec![1, 2]);
    let alter_isr = |img: &mut MetadataImage, isr: Vec<BrokerId>| {
        let p = img.partition("t", 0).unwrap().clone();
        let o = img.offset + 1;
        img.apply(
            &MetaCommand::AlterIsr {
                topic: "t".into(),
                partition: 0,
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                isr,
                new_isr_epochs: vec![],
            },
            o,
        )
    };
    let reassign = |img: &mut MetadataImage, target: Vec<BrokerId>| {
        let o = img.offset + 1;
        img.apply(
            &MetaCommand::Reassign {
                topic: "t".into(),
                partition: 0,
                target,
            },
            o,
        )
        .unwrap();
    };
    // Away: 3 leaves once 4 is in sync.
    reassign(&mut img, vec![1, 2, 4]);
    assert!(
        img.replica_offline(3, "t", 0),
        "still assigned, still offline"
    );
    alter_isr(&mut img, vec![1, 2, 4]).unwrap();
    assert_eq!(img.partition("t", 0).unwrap().replicas, vec![1, 2, 4]);
    assert!(
        !img.replica_offline(3, "t", 0),
        "forgotten with the replica"
    );
    // A heartbeat sent before broker 3 deleted the log commits nothing.
    assert!(crate::controller::heartbeat_commands(&img, &hb).is_empty());
    // Back: the new replica on 3 may join the ISR.
    reassign(&mut img, vec![1, 2, 3]);
    alter_isr(&mut img, vec![1, 2, 3, 4]).unwrap();
    let p = img.partition("t", 0).unwrap();
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (vec![1, 2, 3], vec![1, 2, 3])
    );
    // And an offline report of it now counts again.
    let cmds = crate::controller::heartbeat_commands(&img, &hb);
    assert_eq!(cmds.len(), 1, "{cmds:?}");
    apply_all(&mut img, &cmds);
    assert!(img.replica_offline(3, "t", 0));
}

/// Issue 57, the second hazard `--min-insync-changes` showed: a `quorum` topic without its own
/// `min.insync.replicas` (or policy) followed the cluster-wide default, which an operator could
/// still change. A new `quorum` topic now gets both as its own configs at creation, and before a
/// default changes, older topics following it are pinned the same way (a changed default
/// `replication.ack.policy` decides only for topics created after it).
#[test]
fn a_quorum_topic_is_pinned_at_creation_and_defaults_do_not_move_it() {
    let mut img = image_with(&[1, 2, 3]);
    let default_min_isr = |img: &mut MetadataImage, v: &str| {
        let o = img.offset + 1;
        img.apply(
            &MetaCommand::SetBrokerConfigs {
                resource: String::new(),
                configs: [(MIN_INSYNC_REPLICAS.to_string(), v.to_string())].into(),
            },
            o,
        )
        .unwrap();
    };
    let default_policy = |img: &mut MetadataImage, quorum: bool| {
        let o = img.offset + 1;
        img.apply(&MetaCommand::SetAckPolicyDefault { quorum }, o)
            .unwrap();
    };
    default_policy(&mut img, true);
    default_min_isr(&mut img, "2");
    create(&mut img, "q", vec![vec![1, 2, 3]]);
    let pinned: BTreeMap<String, String> = [
        (ACK_POLICY.to_string(), "quorum".to_string()),
        (MIN_INSYNC_REPLICAS.to_string(), "2".to_string()),
    ]
    .into();
    assert_eq!(img.topics["q"].configs, pinned, "pinned at creation");
    default_min_isr(&mut img, "1");
    assert_eq!(
        img.effective_min_isr("q"),
        2,
        "the default moved, the topic did not"
    );
    // A quorum topic from before pinning, following the defaults: pinned before they change.
    img.topics.get_mut("q").unwrap().configs.clear();
    assert_eq!(img.effective_min_isr("q"), 1);
    default_min_isr(&mut img, "3");
    assert_eq!(img.effective_min_isr("q"), 1);
    assert_eq!(img.topics["q"].configs[MIN_INSYNC_REPLICAS], "1");
    // The default policy turns back to isr: q stays quorum, an isr topic created before stays
    // isr (written out), and only a topic created after follows the new default.
    default_min_isr(&mut img, "1");
    img.topics.get_mut("q").unwrap().configs.clear();
    create(&mut img, "early", vec![vec![1, 2, 3]]);
    assert!(img.quorum_acks("early"));
    img.topics.get_mut("early").unwrap().configs.clear();
    default_policy(&mut img, false);
    assert!(img.quorum_acks("q") && img.quorum_acks("early"));
    create(&mut img, "late", vec![vec![1, 2, 3]]);
    assert!(!img.quorum_acks("late"));
    assert!(
        img.topics["late"].configs.is_empty(),
        "an isr topic is not pinned at creation"
    );
    default_policy(&mut img, true);
    assert!(!img.quorum_acks("late"), "kept its policy");
    assert_eq!(img.topics["late"].configs[ACK_POLICY], "isr");
}
