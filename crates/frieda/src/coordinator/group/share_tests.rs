use super::*;

fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rack: None,
        subscribed: topics.map(|t| t.iter().map(|s| s.to_string()).collect()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        timeouts: None,
    }
}

fn topics(name: &str) -> Option<i32> {
    match name {
        "one" => Some(1),
        "four" => Some(4),
        _ => None,
    }
}

fn tp(t: &str, p: i32) -> TopicPartition {
    (t.to_string(), p)
}

#[test]
fn members_share_a_single_partition() {
    let mut g = ShareGroup::new("g", ShareGroupConfig::default());
    let now = Instant::now();
    let a = g
        .heartbeat(hb("a", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.assignment, Some([tp("one", 0)].into()));
    let b = g
        .heartbeat(hb("b", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert_eq!(
        (b.member_epoch, b.assignment),
        (2, Some([tp("one", 0)].into()))
    );
    // a's next heartbeat moves it to epoch 2 with the same partition: nothing to send.
    let a = g.heartbeat(hb("a", 1, None), &topics, now).unwrap();
    assert_eq!((a.member_epoch, a.assignment), (2, None));
    assert_eq!(g.state(), ShareGroupState::Stable);
}

#[test]
fn partitions_are_spread_when_there_are_enough() {
    let mut g = ShareGroup::new("g", ShareGroupConfig::default());
    let now = Instant::now();
    for m in ["a", "b", "c"] {
        g.heartbeat(hb(m, 0, Some(&["four"])), &topics, now)
            .unwrap();
    }
    let mut all = Vec::new();
    for m in ["a", "b", "c"] {
        let epoch = g.members[m].epoch;
        g.heartbeat(hb(m, epoch, None), &topics, now).unwrap();
        let got = &g.members[m].assigned;
        assert!((1..=2).contains(&got.len()), "{m}: {got:?}");
        all.extend(got.iter().cloned());
    }
    all.sort();
    assert_eq!(
        all,
        (0..4).map(|p| tp("four", p)).collect::<Vec<_>>(),
        "each partition once"
    );
}

#[test]
fn leave_and_epoch_checks() {
    let mut g = ShareGroup::new("g", ShareGroupConfig::default());
    let now = Instant::now();
    g.heartbeat(hb("a", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert_eq!(
        g.heartbeat(hb("a", 5, None), &topics, now).unwrap_err().0,
        E::FencedMemberEpoch
    );
    assert_eq!(
        g.heartbeat(hb("x", 1, None), &topics, now).unwrap_err().0,
        E::UnknownMemberId
    );
    assert_eq!(
        g.heartbeat(hb("x", 0, None), &topics, now).unwrap_err().0,
        E::InvalidRequest
    );
    assert_eq!(
        g.heartbeat(hb("x", -2, None), &topics, now).unwrap_err().0,
        E::InvalidRequest
    );
    let left = g.heartbeat(hb("a", -1, None), &topics, now).unwrap();
    assert_eq!((left.member_epoch, left.heartbeat_interval_ms), (-1, 0));
    assert!(g.is_empty());
    assert_eq!(g.state(), ShareGroupState::Empty);
}

#[test]
fn the_group_size_is_bounded() {
    let config = ShareGroupConfig {
        max_size: 1,
        ..Default::default()
    };
    let mut g = ShareGroup::new("g", config);
    let now = Instant::now();
    g.heartbeat(hb("a", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert_eq!(
        g.heartbeat(hb("b", 0, Some(&["one"])), &topics, now)
            .unwrap_err()
            .0,
        E::GroupMaxSizeReached
    );
}

#[test]
fn an_expired_member_leaves() {
    let config = ShareGroupConfig {
        session_timeout: Duration::from_millis(10),
        ..Default::default()
    };
    let mut g = ShareGroup::new("g", config);
    let now = Instant::now();
    g.heartbeat(hb("a", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert!(g.expire(now).is_empty());
    assert_eq!(
        g.expire(now + Duration::from_millis(11)),
        vec!["a".to_string()]
    );
    assert!(g.is_empty());
}

#[test]
fn each_member_gets_only_topics_it_subscribes_to() {
    let mut g = ShareGroup::new("g", ShareGroupConfig::default());
    let now = Instant::now();
    g.heartbeat(hb("a", 0, Some(&["four"])), &topics, now)
        .unwrap();
    let b = g
        .heartbeat(hb("b", 0, Some(&["one"])), &topics, now)
        .unwrap();
    assert_eq!(b.assignment, Some([tp("one", 0)].into()));
    let e = g.members["a"].epoch;
    g.heartbeat(hb("a", e, None), &topics, now).unwrap();
    assert_eq!(g.members["a"].assigned.len(), 4);
}
