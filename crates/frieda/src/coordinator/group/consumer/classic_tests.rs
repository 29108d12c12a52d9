use super::super::{ConsumerGroupState, Heartbeat};
use super::*;
use crate::coordinator::group::assignor::Assignment;
use crate::coordinator::group::consumer::TopicView;
use crate::coordinator::group::state::{GroupConfig, GroupState, Reply};
use bytes::BytesMut;
use kafka_protocol::messages::{
    consumer_protocol_subscription, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use std::collections::BTreeSet;

const T1: u128 = 1;

fn topics() -> TopicsView {
    TopicsView::from([("t".to_string(), TopicView::new(Uuid::from_u128(T1), 4))])
}

fn parts(ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    Assignment::from([(
        Uuid::from_u128(T1),
        ps.iter().copied().collect::<BTreeSet<i32>>(),
    )])
}

/// A `ConsumerProtocolSubscription` v1 of topic `t` owning `owned`.
fn subscription(owned: &[i32]) -> Bytes {
    let sub = ConsumerProtocolSubscription::default()
        .with_topics(vec![StrBytes::from_static_str("t")])
        .with_owned_partitions(if owned.is_empty() {
            vec![]
        } else {
            vec![consumer_protocol_subscription::TopicPartition::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(owned.to_vec())]
        });
    let mut b = BytesMut::new();
    b.extend_from_slice(&1i16.to_be_bytes());
    sub.encode(&mut b, 1).unwrap();
    b.freeze()
}

fn classic_join(id: &str, owned: &[i32]) -> JoinRequest {
    JoinRequest {
        member_id: id.into(),
        instance_id: None,
        client_id: "java".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: Duration::from_secs(45),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".into(),
        protocols: vec![
            ("cooperative-sticky".into(), subscription(owned)),
            ("range".into(), subscription(owned)),
        ],
        require_known_member_id: true,
        version: 9,
    }
}

fn consumer_join(id: &str) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 10_000,
        topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        client_id: "c".into(),
        ..Default::default()
    }
}

fn beat(id: &str, epoch: i32, owned: Assignment) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned),
        client_id: "c".into(),
        ..Default::default()
    }
}

fn synced(g: &mut ConsumerGroup, id: &str, generation: i32, now: Instant) -> Result<Assignment, E> {
    let (bytes, name) = g.classic_sync(
        id,
        None,
        generation,
        Some("consumer"),
        Some("cooperative-sticky"),
        &topics(),
        now,
    )?;
    assert_eq!(name, "cooperative-sticky");
    Ok(decode_assignment(&bytes, &topics()))
}

#[test]
fn a_classic_member_joins_a_consumer_group_and_gets_its_half_after_the_other_revokes() {
    let now = Instant::now();
    let tv = topics();
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let a = g.heartbeat(consumer_join("a"), &tv, now).unwrap();
    assert_eq!(a.assignment, Some(parts(&[0, 1, 2, 3])));

    // KIP-394: a new member first learns its id.
    let (e, id) = g
        .classic_join(&classic_join("", &[]), &tv, now)
        .unwrap_err();
    assert_eq!(e, E::MemberIdRequired);
    let j = g.classic_join(&classic_join(&id, &[]), &tv, now).unwrap();
    assert_eq!(j.member_id, id);
    assert_eq!(
        j.generation, 2,
        "a new member is reconciled to the new epoch at once"
    );
    assert_eq!(j.protocol_name, "cooperative-sticky");
    // Its two partitions are still a's: it gets nothing yet, and must not rejoin yet.
    assert_eq!(synced(&mut g, &id, 2, now).unwrap(), parts(&[]));
    assert_eq!(g.classic_heartbeat(&id, None, 2, now), None);

    // a revokes two.
    let r = g
        .heartbeat(beat("a", 1, parts(&[0, 1, 2, 3])), &tv, now)
        .unwrap();
    let kept = r.assignment.expect("revocation");
    assert_eq!(kept.values().map(BTreeSet::len).sum::<usize>(), 2);
    g.heartbeat(beat("a", 1, kept.clone()), &tv, now).unwrap();
    // Now the classic member is told to rejoin, and gets the other two.
    assert_eq!(
        g.classic_heartbeat(&id, None, 2, now),
        Some(E::RebalanceInProgress)
    );
    let j = g.classic_join(&classic_join(&id, &[]), &tv, now).unwrap();
    let got = synced(&mut g, &id, j.generation, now).unwrap();
    let mut all = got.clone();
    super::super::union(&mut all, &kept);
    assert_eq!(all, parts(&[0, 1, 2, 3]));
    assert_eq!(g.classic_heartbeat(&id, None, j.generation, now), None);
    assert_eq!(g.state(), ConsumerGroupState::Stable);

    // Its commits are checked by generation (ILLEGAL_GENERATION, not STALE_MEMBER_EPOCH).
    let commit = |member: &str, epoch: i32| {
        let c = crate::coordinator::group::consumer::Committer {
            member_id: member,
            epoch,
            instance_id: None,
            transactional: false,
            version: 2,
        };
        let names: Vec<(Uuid, &str, i32)> = got
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, "t", *p)))
            .collect();
        g.validate_commit(&c, &names)
    };
    assert_eq!(commit(&id, j.generation), Ok(()));
    assert_eq!(
        commit(&id, j.generation - 1),
        Err(E::IllegalGeneration),
        "its partitions were assigned at this generation"
    );
    assert_eq!(
        commit("a", 0),
        Err(E::UnsupportedVersion),
        "a consumer-protocol member must use OffsetCommit v9+"
    );
    // A consumer-protocol member cannot use the classic calls.
    assert_eq!(
        g.classic_heartbeat("a", None, 2, now),
        Some(E::UnknownMemberId)
    );

    // The consumer member leaves: only classic members remain (the coordinator downgrades).
    g.heartbeat(
        beat("a", super::super::LEAVE_EPOCH, Assignment::new()),
        &tv,
        now,
    )
    .unwrap();
    assert!(g.all_classic());
    let v = g.to_classic(&tv).expect("a common protocol");
    assert_eq!(v.protocol.as_deref(), Some("cooperative-sticky"));
    assert_eq!(v.generation, g.epoch);
    assert_eq!(v.members.len(), 1);
    assert_eq!(decode_assignment(&v.members[0].assignment, &tv), got);
    let mut classic = Group::restore("g", GroupConfig::default(), &v);
    classic.prepare_rebalance(now);
    assert_eq!(classic.state, GroupState::PreparingRebalance);
}

#[test]
fn a_classic_member_with_another_protocol_type_or_no_shared_protocol_is_refused() {
    let now = Instant::now();
    let tv = topics();
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    g.heartbeat(consumer_join("a"), &tv, now).unwrap();
    let mut connect = classic_join("m1", &[]);
    connect.protocol_type = "connect".into();
    assert_eq!(
        g.classic_join(&connect, &tv, now).unwrap_err().0,
        E::InconsistentGroupProtocol
    );
    g.classic_join(&classic_join("m1", &[]), &tv, now).unwrap();
    let mut other = classic_join("m2", &[]);
    other.protocols = vec![("roundrobin".into(), subscription(&[]))];
    assert_eq!(
        g.classic_join(&other, &tv, now).unwrap_err().0,
        E::InconsistentGroupProtocol
    );
    // SyncGroup naming another protocol, and a stale generation.
    assert_eq!(
        g.classic_sync("m1", None, 2, Some("consumer"), Some("range"), &tv, now)
            .unwrap_err(),
        E::InconsistentGroupProtocol
    );
    assert_eq!(
        g.classic_sync("m1", None, 1, None, None, &tv, now)
            .unwrap_err(),
        E::IllegalGeneration
    );
    // A member that does not send SyncGroup within its rebalance timeout is removed.
    assert!(g.tick(now + Duration::from_secs(31)));
    assert!(g.members().all(|m| m.id != "m1"));
}

#[test]
fn upgrade_keeps_the_classic_members_and_their_assignment() {
    let now = Instant::now();
    let tv = topics();
    let mut classic = Group::new("g", GroupConfig::default());
    let req = |id: &str| JoinRequest {
        member_id: id.into(),
        instance_id: None,
        client_id: "java".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: Duration::from_secs(45),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), subscription(&[]))],
        require_known_member_id: false,
        version: 3,
    };
    let Reply::Wait(_rx) = classic.join(req(""), now) else {
        panic!("the first join waits for the rebalance")
    };
    classic.tick(now + Duration::from_millis(1));
    let id = classic.members.keys().next().unwrap().clone();
    let assignment = encode_assignment(&parts(&[0, 1, 2, 3]), &tv, 1);
    let _ = classic.sync(
        1,
        &id,
        None,
        None,
        None,
        vec![(id.clone(), assignment)],
        now,
    );
    assert_eq!(classic.state, GroupState::Stable);

    let mut c =
        ConsumerGroup::from_classic(&classic, &tv, ConsumerGroupConfig::default(), now).unwrap();
    assert_eq!((c.epoch, c.assignment_epoch), (1, 1));
    let m = c.members().next().unwrap();
    assert!(m.uses_classic_protocol());
    assert_eq!((m.epoch, m.assigned.clone()), (1, parts(&[0, 1, 2, 3])));
    // The consumer-protocol member that triggered the upgrade joins; the classic member keeps
    // its partitions until it rejoins, which its next heartbeat asks for.
    c.heartbeat(consumer_join("new"), &tv, now).unwrap();
    assert_eq!(
        c.classic_heartbeat(&id, None, 1, now),
        Some(E::RebalanceInProgress)
    );
    assert_eq!(c.state(), ConsumerGroupState::Reconciling);
}

/// CI of 2026-12-03 (JavaGroupsTest.classicAndConsumerProtocolMembersShareOneGroup): a classic
/// member's first JoinGroup got MEMBER_ID_REQUIRED, then a member of the consumer protocol
/// joined the still Empty group and was refused GROUP_ID_NOT_FOUND ("is not a consumer group":
/// the group counted as non-empty for its pending member, and an upgrade needs a protocol
/// type). Kafka replaces an Empty classic group (`isEmptyClassicGroup`); the pending member's
/// JoinGroup with its id then joins the consumer group as a classic member.
#[tokio::test]
async fn a_consumer_member_joins_a_classic_group_whose_only_member_is_pending() {
    use crate::coordinator::group::{CoordinatorConfig, GroupCoordinator};
    let dir = tempfile::tempdir().unwrap();
    let writers = crate::storage::writer::LogWriters::start(1);
    let log = crate::storage::testing::offsets_partition(dir.path(), &writers);
    let coordinator = GroupCoordinator::open(log, CoordinatorConfig::default()).unwrap();
    let tv = topics();
    let first = coordinator.join("g", classic_join("", &[]), &tv).await;
    assert_eq!(first.error, Some(E::MemberIdRequired));
    assert!(!first.member_id.is_empty());

    let reply = coordinator
        .consumer_heartbeat("g", consumer_join("m-848"), &tv)
        .expect("an Empty classic group becomes a consumer group");
    assert_eq!(reply.member_id, "m-848");
    assert!(reply.member_epoch > 0);

    let second = coordinator
        .join("g", classic_join(&first.member_id, &[]), &tv)
        .await;
    assert_eq!(
        second.error, None,
        "the pending member joins as a classic member"
    );
    assert_eq!(second.member_id, first.member_id);
    let g = coordinator
        .consumer_describe("g")
        .expect("a consumer group");
    assert_eq!(g.members.len(), 2);
    coordinator.shutdown();
    writers.stop();
}
