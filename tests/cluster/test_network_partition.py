"""Network partitions between brokers (netns.py: each node in its own network namespace on a
bridge; a cut is a pair of blackhole routes). The test's clients stay connected to every node,
including a cut-off minority, as in Jepsen's partitions between servers: a client that reaches a
deposed leader must get no acknowledgement from it.

Settings as in conftest (broker.session.timeout.ms=3000, broker.heartbeat.interval.ms=200,
replica.lag.time.max.ms=3000, controller.quorum.election.timeout.ms=1000, RF 3,
min.insync.replicas=2), unless a test says otherwise. Each test ends with what a user checks:
every acknowledged record at its offset byte for byte, nothing else in the log (idempotent
producers: no duplicates), and the replicas' segment files identical once healed."""

from __future__ import annotations

import time

import pytest

import kafka_wire as kw
from cluster_clients import ProducerThread, check_log, read_all
from netns import Net
from test_cluster import create, moved_off, wait_identical

NOT_LEADER_OR_FOLLOWER = 6
# what a leader that lost the cluster may answer an acks=all produce with: never 0
REFUSALS = {NOT_LEADER_OR_FOLLOWER, 7, 19, 20}  # + REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND)


@pytest.fixture
def net():
    made: list[Net] = []

    def make(n: int) -> Net:
        made.append(Net(n))
        return made[-1]
    yield make
    for n in made:
        n.heal()
        n.close()


def netted_cluster(cluster, net, n: int = 3, **settings):
    nt = net(n)
    c = cluster(n, hosts=nt.hosts, netns=nt.ns, **settings)
    return c, nt


def raw_produce(node, topic: str, partition: int, value: bytes, corr: int, acks: int = -1,
                timeout_ms: int = 4000):
    """One Produce v9 (acks=all) straight to ``node``; its partition response."""
    ts = int(time.time() * 1000)
    batch = kw.record_batch([kw.Record(key=b"k", value=value, headers=[], timestamp=ts)])
    s = kw.connect(node.host, node.client_port, timeout=timeout_ms / 1000 + 10)
    try:
        got_corr, (r,) = kw.parse_produce_v9(kw.request(
            s, kw.produce_v9(corr, topic, partition, batch, acks=acks, timeout_ms=timeout_ms),
            timeout=timeout_ms / 1000 + 10))
        assert got_corr == corr
        return r
    finally:
        s.close()


def test_leader_cut_off_from_the_other_brokers(net, cluster, topic_name):
    """RF 3, 3 partitions, idempotent acks=all production at 300 records/s from this namespace
    (reaching every node). The leader L of a partition (not the active controller) is cut off
    from both other brokers for 12 s (4 sessions); the clients still reach it. Within the
    session plus an election the majority leads every partition; L's lease runs out, so an
    acks=all Produce sent straight to L while it is cut off is never acknowledged (and neither
    is anything the producer sends it); production goes on through the majority without a
    delivery error. After the heal L truncates what it alone had, catches up and rejoins every
    ISR; the log is exactly the acknowledged records; replicas identical."""
    c, nt = netted_cluster(cluster, net)
    t = topic_name()
    create(c, t, 3)
    p = ProducerThread(c.bootstrap, t, 3, rate=300, tag="np")
    p.start()
    try:
        p.wait_acked(600, 30, "before the partition")
        ctrl = c.controller()
        leaders = {q: c.leader_of(t, q) for q in range(3)}
        victim = next((n for n in leaders.values() if n != ctrl), None)
        if victim is None:  # the controller leads all three: cut it off instead (still a leader)
            victim = ctrl
        others = [i for i in c.nodes if i != victim]
        led = [q for q, n in leaders.items() if n == victim]
        nt.isolate(victim)
        t_cut = time.monotonic()
        c.wait_until(lambda: moved_off(c, t, 3, victim) if c.controller(via=others[0]) in others else False,
                     30, f"the majority leads every partition of {t} (node {victim} cut off)")
        print(f"majority took over {time.monotonic() - t_cut:.1f}s after node {victim} was cut off")
        # a lease is one session (3 s) from the last answered heartbeat: wait it out, then ask L
        time.sleep(max(0.0, 3.5 - (time.monotonic() - t_cut)))
        for k, q in enumerate(led):
            r = raw_produce(c.node(victim), t, q, b"to-the-cut-off-leader-%d" % k, corr=900 + k)
            assert r.error_code != 0, f"cut-off node {victim} acknowledged a record for {t}-{q} at {r.base_offset}"
            assert r.error_code in REFUSALS, r
        p.wait_more(900, 60, f"with node {victim} cut off")
        assert not p.errors, f"delivery errors: {p.errors[:5]}"
        while time.monotonic() - t_cut < 12:
            time.sleep(0.2)
        nt.heal()
        t_heal = time.monotonic()
        c.wait_full_isr(t, 60, via=others[0])  # not the healed node: its image may be stale
        print(f"node {victim} back in every ISR {time.monotonic() - t_heal:.1f}s after the heal")
        p.wait_more(300, 30, "after the heal")
    finally:
        nt.heal()
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    assert not any(v.startswith(b"to-the-cut-off-leader") for (_k, v) in got.values())
    wait_identical(c, t, 3)


def test_active_controller_cut_off_in_a_minority(net, cluster, topic_name):
    """The active controller (Raft leader of the metadata quorum), also leading partitions, is
    cut off from the other two voters for 10 s while acks=all production runs. The majority
    elects a new controller, fences the cut-off node and moves its leaderships; the cut-off node
    commits nothing (no topic can be created through it: its controller has no quorum) and
    acknowledges nothing as leader. After the heal it follows the new controller and rejoins
    every ISR; nothing acknowledged is lost."""
    c, nt = netted_cluster(cluster, net)
    t = topic_name()
    # the controller leads partition 0 (explicit assignment, it first)
    ctrl = c.controller()
    others = [i for i in c.nodes if i != ctrl]
    create(c, t, assignment=[[ctrl, *others], [others[0], ctrl, others[1]], [others[1], others[0], ctrl]])
    p = ProducerThread(c.bootstrap, t, 3, rate=300, tag="nc")
    p.start()
    try:
        p.wait_acked(600, 30, "before the partition")
        nt.isolate(ctrl)
        t_cut = time.monotonic()
        c.wait_until(lambda: c.controller(via=others[0]) in others and moved_off(c, t, 3, ctrl), 30,
                     f"a new controller and leaders among {others}")
        print(f"new controller {c.controller(via=others[0])} and leaders "
              f"{time.monotonic() - t_cut:.1f}s after controller {ctrl} was cut off")
        time.sleep(max(0.0, 3.5 - (time.monotonic() - t_cut)))
        r = raw_produce(c.node(ctrl), t, 0, b"to-the-cut-off-controller", corr=901)
        assert r.error_code != 0, f"cut-off controller {ctrl} acknowledged a record at {r.base_offset}"
        p.wait_more(600, 60, f"with controller {ctrl} cut off")
        while time.monotonic() - t_cut < 10:
            time.sleep(0.2)
        nt.heal()
        c.wait_full_isr(t, 60, via=others[0])  # not the healed node: its image may be stale
        p.wait_more(300, 30, "after the heal")
    finally:
        nt.heal()
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    assert not any(v == b"to-the-cut-off-controller" for (_k, v) in got.values())
    wait_identical(c, t, 3)


def test_follower_cut_off_from_its_leader_only(net, cluster, topic_name):
    """A 'bridge' partition: the follower F of a 1-partition topic cannot reach the leader L but
    both still reach the third node, the active controller C (so F keeps its session and is not
    fenced). F's fetches stop arriving, so L drops it from the ISR (replica.stall.max.ms /
    replica.lag.time.max.ms) through C and acks=all continues with ISR [L, C]; no leader changes.
    After the heal F catches up and rejoins; the log is exactly the acknowledged records."""
    c, nt = netted_cluster(cluster, net)
    ctrl = c.controller()
    lead, fol = [i for i in sorted(c.nodes) if i != ctrl]
    t = topic_name()
    create(c, t, assignment=[[lead, fol, ctrl]])
    p = ProducerThread(c.bootstrap, t, 1, rate=200, tag="nf")
    p.start()
    try:
        p.wait_acked(300, 30, "before the partition")
        nt.cut(lead, fol)
        t_cut = time.monotonic()
        c.wait_until(lambda: fol not in c.isr_of(t, 0, via=ctrl), 20, f"node {fol} out of the ISR")
        print(f"ISR shrunk {time.monotonic() - t_cut:.1f}s after node {fol} was cut off from leader {lead}")
        p.wait_more(400, 30, "with the follower cut off")
        stall = p.max_latency(since=t_cut)
        print(f"acks=all stalled at most {stall:.1f}s")
        assert stall < 6, f"acks=all stalled {stall:.1f}s with a follower cut off"
        assert c.leader_of(t, 0, via=ctrl) == lead, "the leader changed although it ran"
        assert fol in c.brokers_seen(ctrl), f"node {fol} was fenced although it reaches the controller"
        nt.heal()
        c.wait_full_isr(t, 60, via=ctrl)
        p.wait_more(200, 30, "after the heal")
    finally:
        nt.heal()
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.bootstrap, t, 1)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 1)
