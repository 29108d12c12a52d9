use super::*;

const T1: u128 = 1;
const T2: u128 = 2;

fn topics(list: &[(&str, u128, i32)]) -> TopicsView {
    list.iter()
        .map(|(n, id, c)| (n.to_string(), TopicView::new(Uuid::from_u128(*id), *c)))
        .collect()
}

fn parts(t: u128, ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    Assignment::from([(Uuid::from_u128(t), ps.iter().copied().collect())])
}

fn join(id: &str, names: &[&str]) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 10_000,
        topic_names: Some(names.iter().map(|s| s.to_string()).collect()),
        owned: Some(Assignment::new()),
        client_id: "c".into(),
        ..Default::default()
    }
}

fn beat(id: &str, epoch: i32, owned: Option<Assignment>) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned,
        client_id: "c".into(),
        ..Default::default()
    }
}

fn count(a: &Assignment) -> usize {
    a.values().map(BTreeSet::len).sum()
}

#[test]
fn second_member_gets_half_after_the_first_revokes() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 4)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let a = g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.assignment, Some(parts(T1, &[0, 1, 2, 3])));
    assert_eq!(g.state(), ConsumerGroupState::Stable);

    let b = g.heartbeat(join("b", &["t"]), &tv, now).unwrap();
    assert_eq!(
        b.member_epoch, 2,
        "at the assignment epoch, its partitions unreleased"
    );
    assert_eq!(b.assignment, Some(Assignment::new()));
    assert_eq!(g.state(), ConsumerGroupState::Reconciling);

    // a must revoke two first; it keeps its epoch meanwhile.
    let a = g.heartbeat(beat("a", 1, None), &tv, now).unwrap();
    assert_eq!(a.member_epoch, 1);
    let kept = a.assignment.clone().unwrap();
    assert_eq!(count(&kept), 2);
    // Not yet reported as revoked: nothing moves.
    let again = g
        .heartbeat(beat("a", 1, Some(parts(T1, &[0, 1, 2, 3]))), &tv, now)
        .unwrap();
    assert_eq!(again.member_epoch, 1);
    let b = g.heartbeat(beat("b", 2, None), &tv, now).unwrap();
    assert_eq!(b.assignment, None, "still nothing free for b");
    // a reports the revocation: it moves to epoch 2, and b gets the other two.
    let a = g
        .heartbeat(beat("a", 1, Some(kept.clone())), &tv, now)
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    let b = g.heartbeat(beat("b", 2, None), &tv, now).unwrap();
    let got = b.assignment.unwrap();
    assert_eq!(count(&got), 2);
    assert!(!intersects(&got, &kept));
    assert_eq!(g.state(), ConsumerGroupState::Stable);
}

#[test]
fn epochs_are_fenced_as_kafka_does() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 2)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    assert_eq!(
        g.heartbeat(beat("a", 5, None), &tv, now),
        Err(E::FencedMemberEpoch)
    );
    assert_eq!(
        g.heartbeat(beat("zz", 1, None), &tv, now),
        Err(E::UnknownMemberId)
    );
    // A second member bumps a to epoch 2 (after revoking); its previous epoch 1 with a subset of
    // its partitions is still accepted (the response may have been lost).
    g.heartbeat(join("b", &["t"]), &tv, now).unwrap();
    let a = g.heartbeat(beat("a", 1, None), &tv, now).unwrap();
    let kept = a.assignment.unwrap();
    let a = g
        .heartbeat(beat("a", 1, Some(kept.clone())), &tv, now)
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    assert!(g.heartbeat(beat("a", 1, Some(kept)), &tv, now).is_ok());
    assert_eq!(
        g.heartbeat(beat("a", 1, Some(parts(T1, &[0, 1]))), &tv, now),
        Err(E::FencedMemberEpoch)
    );
}

#[test]
fn leave_and_session_timeout_give_partitions_back() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 4)]);
    let cfg = ConsumerGroupConfig {
        session_timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let mut g = ConsumerGroup::new("g", cfg);
    g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    g.heartbeat(join("b", &["t"]), &tv, now).unwrap();
    let a = g.heartbeat(beat("a", 1, None), &tv, now).unwrap();
    g.heartbeat(beat("a", 1, a.assignment), &tv, now).unwrap();
    g.heartbeat(beat("b", 2, None), &tv, now).unwrap();
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    // b leaves: a gets everything at epoch 3.
    let left = g.heartbeat(beat("b", LEAVE_EPOCH, None), &tv, now).unwrap();
    assert_eq!(left.member_epoch, LEAVE_EPOCH);
    let a = g.heartbeat(beat("a", 2, None), &tv, now).unwrap();
    assert_eq!(a.member_epoch, 3);
    assert_eq!(a.assignment, Some(parts(T1, &[0, 1, 2, 3])));
    // A third member joins and never heartbeats again: removed after its session.
    g.heartbeat(join("c", &["t"]), &tv, now).unwrap();
    assert!(!g.tick(now + Duration::from_secs(5)));
    g.heartbeat(beat("a", 3, None), &tv, now + Duration::from_secs(5))
        .unwrap();
    assert!(g.tick(now + Duration::from_secs(11)));
    assert_eq!(g.members().count(), 1);
}

#[test]
fn a_static_member_keeps_its_partitions_across_a_restart() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 4)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let mut j = join("a1", &["t"]);
    j.instance_id = Some("i".into());
    let a = g.heartbeat(j, &tv, now).unwrap();
    let epoch = g.epoch;
    let mut leave = beat("a1", STATIC_LEAVE_EPOCH, None);
    leave.instance_id = Some("i".into());
    g.heartbeat(leave, &tv, now).unwrap();
    assert_eq!(g.epoch, epoch, "a static leave does not rebalance");
    // Another instance id cannot take them; the same instance id with a new member id does.
    let mut other = join("a2", &["t"]);
    other.instance_id = Some("i".into());
    let again = g.heartbeat(other, &tv, now).unwrap();
    assert_eq!(again.assignment, a.assignment);
    assert_eq!(g.members().count(), 1);
    let mut dup = join("a3", &["t"]);
    dup.instance_id = Some("i".into());
    assert_eq!(g.heartbeat(dup, &tv, now), Err(E::UnreleasedInstanceId));
}

#[test]
fn regex_subscriptions_follow_new_topics() {
    let now = Instant::now();
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let mut j = join("a", &[]);
    j.topic_names = None;
    j.topic_regex = Some("orders-.*".into());
    let tv = topics(&[("orders-1", T1, 1), ("other", 9, 3)]);
    let a = g.heartbeat(j, &tv, now).unwrap();
    assert_eq!(a.assignment, Some(parts(T1, &[0])));
    let tv2 = topics(&[("orders-1", T1, 1), ("orders-2", T2, 2), ("other", 9, 3)]);
    let a = g
        .heartbeat(beat("a", a.member_epoch, None), &tv2, now)
        .unwrap();
    let mut want = parts(T1, &[0]);
    want.extend(parts(T2, &[0, 1]));
    assert_eq!(a.assignment, Some(want));
    let mut bad = join("b", &[]);
    bad.topic_regex = Some("(".into());
    assert_eq!(
        g.heartbeat(bad, &tv2, now),
        Err(E::InvalidRegularExpression)
    );
}

fn committer(id: &str, epoch: i32) -> Committer<'_> {
    Committer {
        member_id: id,
        epoch,
        instance_id: None,
        transactional: false,
        version: 9,
    }
}

/// The partitions of `a` as a commit names them (topic "t").
fn committed(a: &Assignment) -> Vec<(Uuid, &'static str, i32)> {
    a.iter()
        .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, "t", *p)))
        .collect()
}

#[test]
fn commits_need_the_member_epoch() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 1)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let p0 = committed(&parts(T1, &[0]));
    assert!(
        g.validate_commit(&committer("", -1), &p0).is_ok(),
        "empty group: simple commits"
    );
    g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    assert_eq!(
        g.validate_commit(&committer("", -1), &p0),
        Err(E::UnknownMemberId)
    );
    assert_eq!(
        g.validate_commit(&committer("a", 0), &p0),
        Err(E::StaleMemberEpoch),
        "older than the partition's assignment epoch (1)"
    );
    assert_eq!(
        g.validate_commit(&committer("a", 2), &p0),
        Err(E::StaleMemberEpoch),
        "newer than the member's epoch"
    );
    assert!(g.validate_commit(&committer("a", 1), &p0).is_ok());
    // OffsetCommit below v9 is refused to consumer-protocol members (Kafka 4.4).
    let v8 = Committer {
        version: 8,
        ..committer("a", 1)
    };
    assert_eq!(g.validate_commit(&v8, &p0), Err(E::UnsupportedVersion));
    // A transactional commit without member information is not checked (KIP-447's
    // sendOffsetsToTransaction with a group id only).
    let txn = Committer {
        transactional: true,
        version: 3,
        ..committer("", -1)
    };
    assert!(g.validate_commit(&txn, &p0).is_ok());
}

/// KIP-1251 (Kafka 4.3): a member whose heartbeat answer with a new epoch has not reached it
/// yet commits with its previous epoch; that is accepted for the partitions it got at or before
/// that epoch, and refused for partitions it gave up or got later.
#[test]
fn commits_with_a_lagging_epoch_are_accepted_for_partitions_held_since() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 2)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let a = g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    assert_eq!(
        (a.member_epoch, a.assignment),
        (1, Some(parts(T1, &[0, 1])))
    );
    let b = g.heartbeat(join("b", &["t"]), &tv, now).unwrap();
    assert_eq!(b.member_epoch, 2);
    // a revokes one partition (it keeps epoch 1 meanwhile), then moves to epoch 2.
    let kept = g
        .heartbeat(beat("a", 1, None), &tv, now)
        .unwrap()
        .assignment
        .unwrap();
    let gone = minus(&parts(T1, &[0, 1]), &kept);
    assert_eq!((count(&kept), count(&gone)), (1, 1));
    let revoking = g.members().find(|m| m.id == "a").unwrap().clone();
    assert_eq!(
        g.validate_commit(&committer("a", 1), &committed(&gone)),
        Ok(()),
        "pending revocation: still its own at epoch 1"
    );
    let gone_partition = committed(&gone)[0].2;
    assert_eq!(
        revoking.assignment_epoch(Uuid::from_u128(T1), gone_partition),
        Some(1)
    );
    let a = g
        .heartbeat(beat("a", 1, Some(kept.clone())), &tv, now)
        .unwrap();
    assert_eq!(a.member_epoch, 2);

    assert_eq!(
        g.validate_commit(&committer("a", 1), &committed(&kept)),
        Ok(()),
        "lagging epoch, partition held since epoch 1"
    );
    assert_eq!(
        g.validate_commit(&committer("a", 1), &committed(&gone)),
        Err(E::StaleMemberEpoch),
        "lagging epoch, partition given up"
    );
    assert_eq!(
        g.validate_commit(&committer("a", 2), &committed(&gone)),
        Ok(()),
        "the member's own epoch: every partition, as Kafka"
    );
    assert_eq!(
        g.validate_commit(&committer("a", 3), &committed(&kept)),
        Err(E::StaleMemberEpoch)
    );
    // b gets the released partition at epoch 2: a commit of it at epoch 1 is too old.
    let b = g.heartbeat(beat("b", 2, None), &tv, now).unwrap();
    assert_eq!(b.assignment, Some(gone.clone()));
    let b = g
        .heartbeat(beat("b", 2, Some(gone.clone())), &tv, now)
        .unwrap();
    assert_eq!(b.member_epoch, 2);
    assert_eq!(
        g.validate_commit(&committer("b", 1), &committed(&gone)),
        Err(E::StaleMemberEpoch)
    );
    // A rejoin (epoch 0) drops what a member held: it gets its partition anew, at the current
    // assignment epoch, and its commits at epoch 1 no longer count.
    g.heartbeat(join("a", &["t"]), &tv, now).unwrap();
    assert_eq!(
        g.validate_commit(&committer("a", 1), &committed(&kept)),
        Err(E::StaleMemberEpoch)
    );
}

#[test]
fn first_heartbeat_must_be_complete() {
    let now = Instant::now();
    let tv = topics(&[("t", T1, 1)]);
    let mut g = ConsumerGroup::new("g", ConsumerGroupConfig::default());
    let mut j = join("", &["t"]);
    assert_eq!(g.heartbeat(j.clone(), &tv, now), Err(E::InvalidRequest));
    j.version = 0;
    let a = g.heartbeat(j, &tv, now).unwrap();
    assert!(
        !a.member_id.is_empty(),
        "v0: the coordinator names the member"
    );
    let mut j = join("x", &["t"]);
    j.rebalance_timeout_ms = -1;
    assert_eq!(g.heartbeat(j, &tv, now), Err(E::InvalidRequest));
    let mut j = join("x", &["t"]);
    j.assignor = Some("sticky".into());
    assert_eq!(g.heartbeat(j, &tv, now), Err(E::UnsupportedAssignor));
}
