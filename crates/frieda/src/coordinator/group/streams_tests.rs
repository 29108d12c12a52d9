use super::topology::{Subtopology, TopicInfo};
use super::*;
use crate::coordinator::group::consumer::Committer;

/// One subtopology reading `input` (4 partitions) into a store with a changelog.
fn topology() -> Topology {
    Topology {
        epoch: 0,
        subtopologies: vec![Subtopology {
            id: "0".into(),
            source_topics: vec!["input".into()],
            state_changelog_topics: vec![TopicInfo {
                name: "app-store-changelog".into(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn topics_ready(t: &str) -> Option<i32> {
    match t {
        "input" | "app-store-changelog" => Some(4),
        _ => None,
    }
}

fn join(id: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 60_000,
        topology: Some(topology()),
        active: Some(Tasks::new()),
        standby: Some(Tasks::new()),
        warmup: Some(Tasks::new()),
        process_id: Some(format!("process-{id}")),
        ..Default::default()
    }
}

fn beat(id: &str, epoch: i32, owned: Option<Tasks>) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        active: owned,
        ..Default::default()
    }
}

fn tasks(ps: &[i32]) -> Tasks {
    ps.iter().map(|p| ("0".to_string(), *p)).collect()
}

/// A group without the initial rebalance delay (its own test below).
fn group() -> StreamsGroup {
    StreamsGroup::new(
        "app",
        StreamsGroupConfig {
            initial_rebalance_delay: Duration::ZERO,
            ..Default::default()
        },
    )
}

#[test]
fn the_first_assignment_waits_for_the_initial_rebalance_delay() {
    let mut g = StreamsGroup::new("app", StreamsGroupConfig::default());
    let now = Instant::now();
    let a = g.heartbeat(join("a"), &topics_ready, now).unwrap();
    assert_eq!(a.status[0].0, status::ASSIGNMENT_DELAYED);
    assert_eq!(a.active, Some(Tasks::new()));
    let b = g
        .heartbeat(join("b"), &topics_ready, now + Duration::from_secs(1))
        .unwrap();
    assert_eq!(b.status[0].0, status::ASSIGNMENT_DELAYED);
    // Once the delay is over, both members share the tasks from the first assignment.
    assert!(g.tick(now + Duration::from_secs(3)));
    let later = now + Duration::from_secs(4);
    let a2 = g
        .heartbeat(
            beat("a", a.member_epoch, Some(Tasks::new())),
            &topics_ready,
            later,
        )
        .unwrap();
    let b2 = g
        .heartbeat(
            beat("b", b.member_epoch, Some(Tasks::new())),
            &topics_ready,
            later,
        )
        .unwrap();
    assert!(a2.status.is_empty() && b2.status.is_empty());
    assert_eq!(a2.active.unwrap().len(), 2);
    assert_eq!(b2.active.unwrap().len(), 2);
}

#[test]
fn missing_internal_topics_are_reported_and_no_task_is_given_until_they_exist() {
    let mut g = group();
    let now = Instant::now();
    let only_input = |t: &str| (t == "input").then_some(4);
    let r = g.heartbeat(join("a"), &only_input, now).unwrap();
    assert_eq!(r.active, Some(Tasks::new()));
    assert_eq!(r.status[0].0, status::MISSING_INTERNAL_TOPICS);
    assert_eq!(r.to_create.len(), 1);
    assert_eq!(r.to_create[0].name, "app-store-changelog");
    assert_eq!(r.to_create[0].partitions, 4);
    assert_eq!(g.state(), StreamsGroupState::NotReady);
    // Once the changelog exists, the next heartbeat gets every task.
    let r = g
        .heartbeat(beat("a", r.member_epoch, None), &topics_ready, now)
        .unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert_eq!(r.active, Some(tasks(&[0, 1, 2, 3])));
    assert_eq!(g.state(), StreamsGroupState::Stable);
}

#[test]
fn a_second_member_gets_tasks_only_after_the_first_revoked_them() {
    let mut g = group();
    let now = Instant::now();
    let a = g.heartbeat(join("a"), &topics_ready, now).unwrap();
    assert_eq!(a.active, Some(tasks(&[0, 1, 2, 3])));
    let b = g.heartbeat(join("b"), &topics_ready, now).unwrap();
    // b's target tasks are still held by a: nothing yet.
    assert_eq!(b.active, Some(Tasks::new()));
    assert_eq!(g.state(), StreamsGroupState::Reconciling);
    // a must revoke two tasks, keeping its epoch.
    let a2 = g
        .heartbeat(beat("a", a.member_epoch, None), &topics_ready, now)
        .unwrap();
    assert_eq!(a2.member_epoch, a.member_epoch);
    let kept = a2.active.clone().unwrap();
    assert_eq!(kept.len(), 2);
    // Until a reports them gone, b still gets nothing.
    let b2 = g
        .heartbeat(
            beat("b", b.member_epoch, Some(Tasks::new())),
            &topics_ready,
            now,
        )
        .unwrap();
    assert_eq!(b2.active, None);
    let a3 = g
        .heartbeat(
            beat("a", a2.member_epoch, Some(kept.clone())),
            &topics_ready,
            now,
        )
        .unwrap();
    assert!(a3.member_epoch > a.member_epoch);
    let b3 = g
        .heartbeat(
            beat("b", b2.member_epoch, Some(Tasks::new())),
            &topics_ready,
            now,
        )
        .unwrap();
    let given = b3.active.unwrap();
    assert_eq!(given.len(), 2);
    assert!(given.is_disjoint(&kept));
    assert_eq!(g.state(), StreamsGroupState::Stable);
}

#[test]
fn epochs_are_fenced_and_unknown_members_refused() {
    let mut g = group();
    let now = Instant::now();
    let a = g.heartbeat(join("a"), &topics_ready, now).unwrap();
    let e = g
        .heartbeat(beat("a", a.member_epoch + 1, None), &topics_ready, now)
        .unwrap_err();
    assert_eq!(e.0, E::FencedMemberEpoch);
    let e = g
        .heartbeat(beat("nobody", 3, None), &topics_ready, now)
        .unwrap_err();
    assert_eq!(e.0, E::UnknownMemberId);
}

#[test]
fn a_different_topology_is_refused() {
    let mut g = group();
    let now = Instant::now();
    g.heartbeat(join("a"), &topics_ready, now).unwrap();
    let mut other = join("b");
    other.topology.as_mut().unwrap().subtopologies[0]
        .source_topics
        .push("more".into());
    assert_eq!(
        g.heartbeat(other, &topics_ready, now).unwrap_err().0,
        E::InvalidRequest
    );
}

#[test]
fn an_expired_member_gives_its_tasks_to_the_others() {
    let mut g = group();
    let now = Instant::now();
    g.heartbeat(join("a"), &topics_ready, now).unwrap();
    let a = g.heartbeat(beat("a", 1, None), &topics_ready, now).unwrap();
    let later = now + Duration::from_secs(30);
    let b = g.heartbeat(join("b"), &topics_ready, later).unwrap();
    assert!(g.tick(now + Duration::from_secs(50)));
    assert!(!g.members.contains_key("a"));
    let b2 = g
        .heartbeat(
            beat("b", b.member_epoch, Some(Tasks::new())),
            &topics_ready,
            later,
        )
        .unwrap();
    assert_eq!(b2.active, Some(tasks(&[0, 1, 2, 3])));
    assert!(a.member_epoch < b2.member_epoch);
}

#[test]
fn commits_are_checked_against_the_tasks_and_their_epochs() {
    let mut g = group();
    let now = Instant::now();
    let a = g.heartbeat(join("a"), &topics_ready, now).unwrap();
    let c = |epoch, version| Committer {
        member_id: "a",
        epoch,
        instance_id: None,
        transactional: false,
        version,
    };
    assert_eq!(
        g.validate_commit(&c(a.member_epoch, 9), &[("input", 0)]),
        Ok(())
    );
    assert_eq!(
        g.validate_commit(&c(a.member_epoch, 8), &[("input", 0)]),
        Err(E::UnsupportedVersion)
    );
    assert_eq!(
        g.validate_commit(&c(a.member_epoch + 1, 9), &[("input", 0)]),
        Err(E::StaleMemberEpoch)
    );
    // After b joins and a keeps two tasks at a newer epoch, a commit at the old epoch is still
    // accepted for a task a got then.
    let b = g.heartbeat(join("b"), &topics_ready, now).unwrap();
    let a2 = g
        .heartbeat(beat("a", a.member_epoch, None), &topics_ready, now)
        .unwrap();
    let kept = a2.active.unwrap();
    g.heartbeat(
        beat("a", a.member_epoch, Some(kept.clone())),
        &topics_ready,
        now,
    )
    .unwrap();
    let p = kept.iter().next().unwrap().1;
    assert_eq!(
        g.validate_commit(&c(a.member_epoch, 9), &[("input", p)]),
        Ok(())
    );
    let gone = (0..4)
        .find(|q| !kept.contains(&("0".to_string(), *q)))
        .unwrap();
    assert_eq!(
        g.validate_commit(&c(a.member_epoch, 9), &[("input", gone)]),
        Err(E::StaleMemberEpoch)
    );
    let _ = b;
}

#[test]
fn the_assignor_is_balanced_and_sticky() {
    let all: Tasks = (0..7).map(|p| ("0".to_string(), p)).collect();
    let first = assign(&["a", "b"], &all, &BTreeMap::new());
    let sizes: Vec<usize> = first.values().map(|t| t.len()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 7);
    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    let second = assign(&["a", "b", "c"], &all, &first);
    for m in ["a", "b"] {
        assert!(
            second[m].is_subset(&first[m]),
            "{m} moved tasks it could keep"
        );
    }
    let sizes: Vec<usize> = second.values().map(|t| t.len()).collect();
    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
}

#[test]
fn a_shutdown_request_reaches_every_member() {
    let mut g = group();
    let now = Instant::now();
    let a = g.heartbeat(join("a"), &topics_ready, now).unwrap();
    let b = g.heartbeat(join("b"), &topics_ready, now).unwrap();
    let mut ask = beat("a", a.member_epoch, None);
    ask.shutdown_application = true;
    g.heartbeat(ask, &topics_ready, now).unwrap();
    let r = g
        .heartbeat(beat("b", b.member_epoch, None), &topics_ready, now)
        .unwrap();
    assert!(r
        .status
        .iter()
        .any(|(c, _)| *c == status::SHUTDOWN_APPLICATION));
}
