//! Unit tests of the group state machine: joins, rebalances, fencing, static membership,
//! timeouts. Time is driven by hand through `now`.

use super::*;

const SESSION: Duration = Duration::from_secs(10);
const REBALANCE: Duration = Duration::from_secs(30);

fn group() -> Group {
    Group::new("g", GroupConfig::default())
}

fn req(member: &str, instance: Option<&str>, protocols: &[(&str, &[u8])]) -> JoinRequest {
    JoinRequest {
        member_id: member.to_string(),
        instance_id: instance.map(str::to_string),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: SESSION,
        rebalance_timeout: REBALANCE,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|(n, m)| (n.to_string(), Bytes::copy_from_slice(m)))
            .collect(),
        require_known_member_id: true,
        version: 7,
    }
}

fn range(member: &str) -> JoinRequest {
    req(member, None, &[("range", b"m")])
}

fn now_result(r: Reply<JoinResult>) -> JoinResult {
    match r {
        Reply::Now(r) => r,
        Reply::Wait(_) => panic!("expected an immediate answer"),
    }
}

fn now_sync(r: Reply<SyncResult>) -> SyncResult {
    match r {
        Reply::Now(r) => r,
        Reply::Wait(_) => panic!("expected an immediate SyncGroup answer"),
    }
}

fn waiting<T: std::fmt::Debug>(r: Reply<T>) -> oneshot::Receiver<T> {
    match r {
        Reply::Wait(rx) => rx,
        Reply::Now(r) => panic!("expected to wait, got {r:?}"),
    }
}

impl std::fmt::Debug for Reply<JoinResult> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// KIP-394 handshake, then the join; returns the member id and the join receiver.
fn join_new(g: &mut Group, now: Instant) -> (String, oneshot::Receiver<JoinResult>) {
    let r = now_result(g.join(range(""), now));
    assert_eq!(r.error, Some(E::MemberIdRequired));
    assert!(!r.member_id.is_empty());
    let rx = waiting(g.join(range(&r.member_id), now));
    (r.member_id, rx)
}

fn sync_now(
    g: &mut Group,
    gen: i32,
    id: &str,
    assignments: Vec<(String, Bytes)>,
    now: Instant,
) -> Reply<SyncResult> {
    g.sync(gen, id, None, Some("consumer"), None, assignments, now)
}

/// A stable group of `n` dynamic members; returns their ids (the first is the leader).
fn stable_group(n: usize, now: Instant) -> (Group, Vec<String>) {
    let mut g = group();
    let mut ids = Vec::new();
    let mut rxs = Vec::new();
    for _ in 0..n {
        let (id, rx) = join_new(&mut g, now);
        ids.push(id);
        rxs.push(rx);
    }
    // With no initial delay the first member completed a generation alone; the others joined
    // after and forced a new rebalance: the members not waiting rejoin.
    if g.state == GroupState::PreparingRebalance {
        let idle: Vec<usize> = (0..ids.len())
            .filter(|&i| !g.members[&ids[i]].awaiting_join())
            .collect();
        for i in idle {
            rxs[i] = waiting(g.join(range(&ids[i]), now));
        }
    }
    g.tick(now);
    let results: Vec<(usize, JoinResult)> = rxs
        .iter_mut()
        .enumerate()
        .map(|(i, rx)| (i, rx.try_recv().expect("joined")))
        .collect();
    assert_eq!(g.state, GroupState::CompletingRebalance);
    let gen = g.generation;
    let leader = g.leader.clone().unwrap();
    let assignments = ids
        .iter()
        .map(|id| (id.clone(), Bytes::from(format!("a-{id}"))))
        .collect();
    for (_, r) in &results {
        assert_eq!(r.generation, gen);
        assert_eq!(r.leader, leader);
        assert_eq!(r.members.len(), if r.member_id == leader { n } else { 0 });
    }
    let Reply::Wait(mut rx) = sync_now(&mut g, gen, &leader, assignments, now) else {
        panic!()
    };
    assert_eq!(
        rx.try_recv().unwrap().assignment,
        Bytes::from(format!("a-{leader}"))
    );
    assert_eq!(g.state, GroupState::Stable);
    ids.sort_by_key(|id| (id != &leader, id.clone()));
    (g, ids)
}

#[test]
fn first_member_handshake_and_generation_one() {
    let now = Instant::now();
    let mut g = group();
    let (id, mut rx) = join_new(&mut g, now);
    let r = rx.try_recv().expect("no initial delay: completes at once");
    assert_eq!(r.error, None);
    assert_eq!((r.generation, r.leader.as_str()), (1, id.as_str()));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(g.state, GroupState::CompletingRebalance);
    let Reply::Wait(mut s) = sync_now(
        &mut g,
        1,
        &id,
        vec![(id.clone(), Bytes::from_static(b"x"))],
        now,
    ) else {
        panic!()
    };
    assert_eq!(s.try_recv().unwrap().assignment, Bytes::from_static(b"x"));
    assert_eq!(g.state, GroupState::Stable);
    assert_eq!(g.heartbeat(1, &id, None, now), None);
    assert_eq!(g.heartbeat(0, &id, None, now), Some(E::IllegalGeneration));
    assert_eq!(
        g.heartbeat(1, "nobody", None, now),
        Some(E::UnknownMemberId)
    );
}

#[test]
fn second_member_triggers_rebalance_and_both_get_assignments() {
    let now = Instant::now();
    let (mut g, ids) = stable_group(1, now);
    let gen = g.generation;
    let (b, mut brx) = join_new(&mut g, now);
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert!(brx.try_recv().is_err(), "waits for the existing member");
    assert_eq!(
        g.heartbeat(gen, &ids[0], None, now),
        Some(E::RebalanceInProgress)
    );
    // A commit of the current generation is still allowed while preparing.
    assert_eq!(g.validate_commit(gen, &ids[0], None, now), Ok(()));
    let mut arx = waiting(g.join(range(&ids[0]), now));
    let a = arx.try_recv().unwrap();
    let br = brx.try_recv().unwrap();
    assert_eq!(a.generation, gen + 1);
    assert_eq!(br.generation, gen + 1);
    assert_eq!(a.leader, ids[0]);
    assert_eq!(a.members.len(), 2);
    assert!(br.members.is_empty());
    // Follower syncs first and waits for the leader.
    let mut frx = waiting(sync_now(&mut g, gen + 1, &b, vec![], now));
    assert_eq!(
        g.validate_commit(gen + 1, &b, None, now),
        Err(E::RebalanceInProgress)
    );
    let _ = sync_now(
        &mut g,
        gen + 1,
        &ids[0],
        vec![
            (ids[0].clone(), Bytes::from_static(b"A")),
            (b.clone(), Bytes::from_static(b"B")),
        ],
        now,
    );
    assert_eq!(frx.try_recv().unwrap().assignment, Bytes::from_static(b"B"));
    assert_eq!(g.state, GroupState::Stable);
    // A late SyncGroup in Stable gets the assignment at once.
    match sync_now(&mut g, gen + 1, &b, vec![], now) {
        Reply::Now(r) => assert_eq!(r.assignment, Bytes::from_static(b"B")),
        Reply::Wait(_) => panic!(),
    }
    // Old generation is fenced.
    assert_eq!(
        g.validate_commit(gen, &b, None, now),
        Err(E::IllegalGeneration)
    );
    assert!(matches!(
        sync_now(&mut g, gen, &b, vec![], now),
        Reply::Now(SyncResult {
            error: Some(E::IllegalGeneration),
            ..
        })
    ));
}

#[test]
fn session_timeout_expires_a_silent_member() {
    let t0 = Instant::now();
    let (mut g, ids) = stable_group(2, t0);
    let gen = g.generation;
    let t1 = t0 + SESSION / 2;
    assert_eq!(g.heartbeat(gen, &ids[0], None, t1), None);
    g.tick(t1);
    assert_eq!(g.members.len(), 2);
    let t2 = t0 + SESSION + Duration::from_millis(1);
    g.tick(t2);
    assert_eq!(
        g.members.len(),
        1,
        "the member that stopped heartbeating expired"
    );
    assert!(g.members.contains_key(&ids[0]));
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert_eq!(
        g.heartbeat(gen, &ids[1], None, t2),
        Some(E::UnknownMemberId)
    );
    let mut rx = waiting(g.join(range(&ids[0]), t2));
    let r = rx.try_recv().unwrap();
    assert_eq!((r.generation, r.members.len()), (gen + 1, 1));
}

#[test]
fn member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() {
    let t0 = Instant::now();
    let (mut g, ids) = stable_group(2, t0);
    let gen = g.generation;
    let mut rx = waiting(g.join(range(&ids[0]), t0)); // leader rejoin forces a rebalance
                                                      // The other keeps heartbeating but never rejoins.
    let t1 = t0 + REBALANCE - Duration::from_secs(1);
    assert_eq!(
        g.heartbeat(gen, &ids[1], None, t1),
        Some(E::RebalanceInProgress)
    );
    g.tick(t1);
    assert!(rx.try_recv().is_err());
    let t2 = t0 + REBALANCE;
    g.tick(t2);
    let r = rx.try_recv().unwrap();
    assert_eq!((r.generation, r.members.len()), (gen + 1, 1));
    assert!(!g.members.contains_key(&ids[1]));
}

#[test]
fn leave_triggers_rebalance_and_unknown_member_after() {
    let now = Instant::now();
    let (mut g, ids) = stable_group(2, now);
    assert_eq!(g.leave(&ids[1], None, now), None);
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert_eq!(g.leave(&ids[1], None, now), Some(E::UnknownMemberId));
    assert_eq!(g.leave(&ids[0], None, now), None);
    g.tick(now);
    assert_eq!(g.state, GroupState::Empty);
    assert!(g.is_empty_state());
    // Simple commits are allowed on an empty group, generation commits are not.
    assert_eq!(g.validate_commit(-1, "", None, now), Ok(()));
    assert_eq!(
        g.validate_commit(3, &ids[0], None, now),
        Err(E::UnknownMemberId)
    );
}

#[test]
fn protocol_selection_and_inconsistent_protocols() {
    let now = Instant::now();
    let mut g = group();
    let r = now_result(g.join(
        req("", None, &[("cooperative-sticky", b"1"), ("range", b"2")]),
        now,
    ));
    let mut a = waiting(g.join(
        req(
            &r.member_id,
            None,
            &[("cooperative-sticky", b"1"), ("range", b"2")],
        ),
        now,
    ));
    let a = a.try_recv().unwrap();
    assert_eq!(a.protocol_name.as_deref(), Some("cooperative-sticky"));
    // A member without any common protocol is refused.
    let bad = now_result(g.join(req("", None, &[("roundrobin", b"")]), now));
    assert_eq!(bad.error, Some(E::InconsistentGroupProtocol));
    // Another type is refused too.
    let mut other = range("");
    other.protocol_type = "connect".into();
    assert_eq!(
        now_result(g.join(other, now)).error,
        Some(E::InconsistentGroupProtocol)
    );
    // A member that supports only range moves the group to range (the only common one).
    let r2 = now_result(g.join(req("", None, &[("range", b"3")]), now));
    let mut b = waiting(g.join(req(&r2.member_id, None, &[("range", b"3")]), now));
    let mut a2 = waiting(g.join(
        req(
            &a.member_id,
            None,
            &[("cooperative-sticky", b"1"), ("range", b"2")],
        ),
        now,
    ));
    let (x, y) = (a2.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!(x.protocol_name.as_deref(), Some("range"));
    assert_eq!(y.protocol_name.as_deref(), Some("range"));
    // The leader sees each member's metadata for the selected protocol.
    let meta: Vec<&[u8]> = x.members.iter().map(|m| &m.metadata[..]).collect();
    assert_eq!(meta, vec![&b"2"[..], &b"3"[..]]);
}

#[test]
fn static_member_rejoin_in_stable_group_keeps_generation_and_assignment() {
    let now = Instant::now();
    let mut g = group();
    // Static members skip the member-id handshake.
    let mut a = waiting(g.join(req("", Some("i-a"), &[("range", b"a")]), now));
    let a = a.try_recv().unwrap();
    let _ = sync_now(
        &mut g,
        1,
        &a.member_id,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        now,
    );
    let r = now_result(g.join(range(""), now));
    let mut b = waiting(g.join(range(&r.member_id), now));
    let mut a2 = waiting(g.join(req(&a.member_id, Some("i-a"), &[("range", b"a")]), now));
    let (a2, b) = (a2.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!(a2.generation, 2);
    let _ = sync_now(
        &mut g,
        2,
        &a2.member_id,
        vec![
            (a2.member_id.clone(), Bytes::from_static(b"A2")),
            (b.member_id.clone(), Bytes::from_static(b"B2")),
        ],
        now,
    );
    assert_eq!(g.state, GroupState::Stable);
    // The static member restarts: unknown member id, same instance id.
    let back = now_result(g.join(req("", Some("i-a"), &[("range", b"a")]), now));
    assert_eq!(back.error, None);
    assert_eq!(back.generation, 2, "no rebalance");
    assert_ne!(back.member_id, a.member_id);
    assert_eq!(
        back.leader, a.member_id,
        "v<9: the old leader id, so it does not assign"
    );
    assert_eq!(g.state, GroupState::Stable);
    match g.sync(2, &back.member_id, Some("i-a"), None, None, vec![], now) {
        Reply::Now(r) => assert_eq!(r.assignment, Bytes::from_static(b"A2")),
        Reply::Wait(_) => panic!(),
    }
    // The old incarnation is fenced; the other member never noticed.
    assert_eq!(
        g.heartbeat(2, &a.member_id, Some("i-a"), now),
        Some(E::FencedInstanceId)
    );
    assert_eq!(
        g.validate_commit(2, &a.member_id, Some("i-a"), now),
        Err(E::FencedInstanceId)
    );
    assert_eq!(g.heartbeat(2, &b.member_id, None, now), None);
    assert_eq!(g.heartbeat(2, &back.member_id, Some("i-a"), now), None);
    // LeaveGroup by instance id alone removes it (KIP-345).
    assert_eq!(g.leave("", Some("i-a"), now), None);
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert_eq!(g.leave("", Some("i-a"), now), Some(E::UnknownMemberId));
}

#[test]
fn static_leader_rejoin_v9_skips_assignment() {
    let now = Instant::now();
    let mut g = group();
    let mut a = waiting(g.join(req("", Some("i-a"), &[("range", b"a")]), now));
    let a = a.try_recv().unwrap();
    let _ = sync_now(
        &mut g,
        1,
        &a.member_id,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        now,
    );
    let mut r = req("", Some("i-a"), &[("range", b"a")]);
    r.version = 9;
    let back = now_result(g.join(r, now));
    assert_eq!(back.leader, back.member_id);
    assert!(back.skip_assignment);
    assert_eq!(back.members.len(), 1);
    assert_eq!(back.generation, 1);
}

#[test]
fn pending_member_and_pending_sync_expire() {
    let t0 = Instant::now();
    let (mut g, ids) = stable_group(2, t0);
    // A new member gets its id but never comes back: the rebalance does not wait forever.
    let r = now_result(g.join(range(""), t0));
    assert_eq!(r.error, Some(E::MemberIdRequired));
    let mut rx0 = waiting(g.join(range(&ids[0]), t0));
    let mut rx1 = waiting(g.join(range(&ids[1]), t0));
    g.tick(t0);
    assert!(rx0.try_recv().is_err(), "waits for the pending member");
    let t1 = t0 + SESSION + Duration::from_millis(1);
    // The two members keep the session alive while they wait for their join.
    g.tick(t1);
    let r0 = rx0.try_recv().unwrap();
    let _ = rx1.try_recv().unwrap();
    assert_eq!(g.members.len(), 2);
    assert_eq!(g.state, GroupState::CompletingRebalance);
    // The leader never sends SyncGroup: after the rebalance timeout it is removed.
    let mut f = waiting(sync_now(&mut g, r0.generation, &ids[1], vec![], t1));
    g.tick(t1 + REBALANCE);
    assert_eq!(f.try_recv().unwrap().error, Some(E::RebalanceInProgress));
    assert!(!g.members.contains_key(&ids[0]));
    assert_eq!(g.state, GroupState::PreparingRebalance);
}

/// Three consumers start at once (the scenario): X gets its member id
/// (MEMBER_ID_REQUIRED), then Y's handshake and join complete the initial rebalance before X's
/// JoinGroup with that id arrives. Kafka keeps X a pending member until it joins, leaves or its
/// session expires (`completeClassicGroupJoin` removes only members that did not rejoin, never
/// `pendingJoinMembers`), so X's join is accepted and starts the next rebalance at once. Frieda
/// used to forget pending members when a generation completed and answered UNKNOWN_MEMBER_ID:
/// the client started over with a new id after its join backoff, one more rebalance seconds
/// later, in the middle of the others' cooperative rebalance.
#[test]
fn pending_member_survives_a_completed_generation() {
    let t0 = Instant::now();
    let mut g = group();
    let x = now_result(g.join(range(""), t0));
    assert_eq!(x.error, Some(E::MemberIdRequired));
    let (y, mut ry) = join_new(&mut g, t0);
    let r = ry
        .try_recv()
        .expect("initial rebalance (no delay) completes without X");
    assert_eq!((r.generation, r.leader.as_str()), (1, y.as_str()));
    assert_eq!(g.state, GroupState::CompletingRebalance);

    // X's JoinGroup with its id: accepted, and it starts a rebalance (not UNKNOWN_MEMBER_ID).
    let t1 = t0 + Duration::from_millis(1);
    let mut rx = match g.join(range(&x.member_id), t1) {
        Reply::Wait(rx) => rx,
        Reply::Now(r) => panic!("pending member refused: {:?}", r.error),
    };
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert!(g.members.contains_key(&x.member_id));
    // Y's SyncGroup of generation 1 is too late; Y rejoins and generation 2 has both.
    let s = now_sync(sync_now(&mut g, 1, &y, vec![], t1));
    assert_eq!(s.error, Some(E::RebalanceInProgress));
    let mut ry = waiting(g.join(range(&y), t1));
    let (rx, ry) = (rx.try_recv().unwrap(), ry.try_recv().unwrap());
    assert_eq!((rx.error, rx.generation), (None, 2));
    assert_eq!(
        (ry.generation, ry.leader.as_str(), ry.members.len()),
        (2, y.as_str(), 2)
    );
    assert_eq!(g.state, GroupState::CompletingRebalance);
}

/// A pending member that never comes back still expires after its session timeout, also when a
/// generation completed in between, and no rebalance waits for it any more.
#[test]
fn pending_member_kept_across_generations_still_expires() {
    let t0 = Instant::now();
    let mut g = group();
    let x = now_result(g.join(range(""), t0));
    let (y, mut ry) = join_new(&mut g, t0);
    assert_eq!(ry.try_recv().unwrap().generation, 1);
    let Reply::Wait(_) = sync_now(
        &mut g,
        1,
        &y,
        vec![(y.clone(), Bytes::from_static(b"a"))],
        t0,
    ) else {
        panic!()
    };
    assert_eq!(g.state, GroupState::Stable);
    // The leader rejoins: the rebalance waits for the pending member, up to its session timeout.
    let mut ry = waiting(g.join(range(&y), t0));
    g.tick(t0 + SESSION - Duration::from_millis(1));
    assert!(ry.try_recv().is_err(), "waits for the pending member");
    g.tick(t0 + SESSION + Duration::from_millis(1));
    assert_eq!(ry.try_recv().unwrap().generation, 2);
    let late = now_result(g.join(range(&x.member_id), t0 + SESSION * 2));
    assert_eq!(late.error, Some(E::UnknownMemberId));
}

#[test]
fn initial_delay_waits_for_more_members() {
    let t0 = Instant::now();
    let mut g = Group::new(
        "g",
        GroupConfig {
            initial_rebalance_delay: Duration::from_secs(3),
            ..GroupConfig::default()
        },
    );
    let (_a, mut arx) = join_new(&mut g, t0);
    g.tick(t0 + Duration::from_secs(1));
    assert!(arx.try_recv().is_err());
    let (_b, mut brx) = join_new(&mut g, t0 + Duration::from_secs(2));
    g.tick(t0 + Duration::from_secs(3));
    assert!(arx.try_recv().is_err(), "a new member extended the delay");
    g.tick(t0 + Duration::from_secs(6));
    let (a, b) = (arx.try_recv().unwrap(), brx.try_recv().unwrap());
    assert_eq!((a.generation, b.generation), (1, 1));
}

#[test]
fn session_timeout_bounds_and_dead_group() {
    let now = Instant::now();
    let mut g = group();
    let mut r = range("");
    r.session_timeout = Duration::from_millis(100);
    assert_eq!(
        now_result(g.join(r, now)).error,
        Some(E::InvalidSessionTimeout)
    );
    g.mark_dead();
    assert_eq!(
        now_result(g.join(range(""), now)).error,
        Some(E::CoordinatorNotAvailable)
    );
}
