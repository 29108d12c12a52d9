"""Fault-proof tests of Frieda's cluster mode (Kafka's ISR protocol over the metadata quorum).

Every test starts its own cluster (``conftest.Cluster``: 3 nodes, all broker+controller, unless
it says otherwise) with, unless stated: broker.session.timeout.ms=3000,
broker.heartbeat.interval.ms=200, replica.lag.time.max.ms=3000,
controller.quorum.election.timeout.ms=1000, default.replication.factor=3,
offsets.topic.replication.factor=3, offsets.topic.num.partitions=6, min.insync.replicas=2.

What is checked is what a user checks: every acknowledged record comes back at its offset byte for
byte, read by assignment from offset 0 without a group; nothing below the high watermark is
missing; nothing is stored twice; and the replicas hold the same batches byte for byte.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import uuid

import pytest

from confluent_kafka import Consumer, ElectionType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic)

import cluster_wire as cw
import kafka_wire as kw
from cluster_clients import (ProducerThread, check_acked, check_log, read_all, read_partitions,
                             replicas_identical, watermarks)
from conftest import LOG_LEVEL

NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
NOT_LEADER_OR_FOLLOWER = 6
MSG_SIZE_TOO_LARGE = 10


def create(c, name: str, partitions: int = 3, rf: int = 3, assignment=None, config=None, via=None) -> dict:
    """CreateTopics with confluent-kafka's AdminClient; waits until every running node shows the
    topic with a leader and a full ISR for each partition."""
    if assignment is not None:
        nt = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=config or {})
    else:
        nt = NewTopic(name, num_partitions=partitions, replication_factor=rf, config=config or {})
    adm = c.admin(via)  # kept referenced until the result is in
    fs = adm.create_topics([nt], operation_timeout=20, request_timeout=30)
    fs[name].result(timeout=30)
    return c.wait_topic(name, len(assignment) if assignment is not None else partitions)


def led_by(c, topic: str, partitions: int, node: int) -> list[int]:
    return [p for p in range(partitions) if c.leader_of(topic, p) == node]


def moved_off(c, topic: str, partitions: int, node: int, isr_too: bool = False) -> bool:
    parts = c.partitions(topic)
    return len(parts) == partitions and all(
        p.leader >= 0 and p.leader != node and (not isr_too or node not in p.isrs) for p in parts.values())


def wait_identical(c, topic: str, partitions: int, timeout: float = 20) -> None:
    last = ["?"]

    def ok():
        same, why = replicas_identical(c, topic, partitions)
        last[0] = why
        return same
    try:
        c.wait_until(ok, timeout, f"identical replicas of {topic}")
    except AssertionError as e:
        raise AssertionError(f"{e}: {last[0]}") from None


# ---------------------------------------------------------------- a. leader killed mid-production

def test_leader_sigkilled_during_idempotent_acks_all_production(cluster, topic_name):
    """RF 3, 3 partitions, idempotent acks=all producer (message.timeout.ms=120000) at 300
    records/s. The leader of a partition (not the active controller) is SIGKILLed; within the
    session timeout (3 s) plus an election its leaderships move, production continues without a
    delivery error. The killed node restarts, truncates what diverged and rejoins every ISR. Then
    every partition is read from offset 0: exactly the acknowledged records, at their offsets,
    byte for byte; every replica holds the same batches; and with each node stopped in turn
    (SIGTERM) the new leaders report high watermarks >= the acknowledged end offsets and serve
    every acknowledged record."""
    c = cluster()
    t = topic_name()
    create(c, t, 3)
    p = ProducerThread(c.bootstrap, t, 3, rate=300, tag="a")
    p.start()
    try:
        p.wait_acked(600, 30, "before the kill")
        ctrl = c.controller()
        leaders = {q: c.leader_of(t, q) for q in range(3)}
        victim = next((n for n in leaders.values() if n != ctrl), leaders[0])
        c.kill(victim)
        t_kill = time.monotonic()
        c.wait_until(lambda: moved_off(c, t, 3, victim), 30, f"leaderships moved off killed node {victim}")
        print(f"leaderships moved {time.monotonic() - t_kill:.1f}s after SIGKILL of node {victim}")
        p.wait_more(600, 60, "after the leader was killed")
        assert not p.errors, f"delivery errors: {p.errors[:5]}"
        c.start(victim)
        c.wait_full_isr(t, 60)
        p.wait_more(300, 30, "after the killed node rejoined")
    finally:
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.live_bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 3)

    ends = p.acked_by_partition()
    for i in sorted(c.nodes):
        c.stop(i)
        c.wait_until(lambda: moved_off(c, t, 3, i), 15, f"leaderships moved off stopped node {i}")
        # A new leader's high watermark can lag its log until its followers fetch in the new
        # epoch (Kafka's too: the HW advances with the ISR's end offsets); it must get there.
        deadline = time.monotonic() + 20
        while True:
            wm = watermarks(c.live_bootstrap, t, 3, timeout=20)
            if all(wm[q][1] >= ends[q] for q in range(3)) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for q in range(3):
            assert wm[q][1] >= ends[q], \
                f"node {i} stopped: {t}[{q}] high watermark {wm[q][1]} < acknowledged end {ends[q]} after 20 s"
        check_acked(p.acks, read_partitions(c.live_bootstrap, t, ends), t)
        c.start(i)
        c.wait_full_isr(t, 30)


# ---------------------------------------------------------------- b. follower paused

def test_follower_sigstopped_leaves_isr_and_rejoins(cluster, topic_name):
    """broker.session.timeout.ms=20000 (the paused node is not fenced while paused, so only the
    leaders' replica.lag.time.max.ms=3000 can take it out of the ISR). Two partitions led by the
    two other nodes, the paused node a follower of both (explicit assignment; it is not the active
    controller). acks=all production (idempotent, 200 records/s) stalls at most ~1.5 x
    replica.lag.time.max.ms + 2.5 s, then continues with the ISR shrunk (metadata); after SIGCONT
    the follower catches up and rejoins both ISRs; no acknowledged record is lost and the replicas
    end identical."""
    c = cluster(broker_session_timeout_ms=20000)
    lag_s = c.setting("replica.lag.time.max.ms") / 1000
    ctrl = c.controller()
    f = max(i for i in c.nodes if i != ctrl)
    a, b = [i for i in sorted(c.nodes) if i != f]
    t = topic_name()
    create(c, t, assignment=[[a, b, f], [b, a, f]])
    p = ProducerThread(c.bootstrap, t, 2, rate=200, tag="b")
    p.start()
    try:
        p.wait_acked(300, 30, "before the pause")
        c.pause(f)
        t_pause = time.monotonic()
        c.wait_until(lambda: all(f not in c.isr_of(t, q) for q in range(2)), 3 * lag_s + 10,
                     f"ISRs without paused node {f}")
        print(f"ISR shrunk {time.monotonic() - t_pause:.1f}s after SIGSTOP of node {f}")
        assert [c.leader_of(t, 0), c.leader_of(t, 1)] == [a, b], "leaders changed although they ran"
        p.wait_more(400, 30, "with a follower paused")
        stall = p.max_latency(since=t_pause)
        print(f"acks=all stalled at most {stall:.1f}s with node {f} paused")
        assert stall <= 1.5 * lag_s + 2.5, f"acks=all stalled {stall:.1f}s with a follower paused (lag {lag_s}s)"
        c.resume(f)
        t_resume = time.monotonic()
        c.wait_full_isr(t, 30)
        print(f"node {f} back in every ISR {time.monotonic() - t_resume:.1f}s after SIGCONT")
        p.wait_more(200, 30, "after the follower rejoined")
    finally:
        if c.node(f).paused:
            c.resume(f)
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.live_bootstrap, t, 2)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 2)


# ---------------------------------------------------------------- c. min.insync.replicas

def test_min_insync_replicas_with_two_of_three_replicas_down(cluster, topic_name):
    """min.insync.replicas=2, a topic with 3 partitions whose three replicas are on nodes 1, 2
    and 3 (explicit assignment). The cluster has five voters (nodes 4 and 5 hold no replica), so
    that with two of the three replica brokers down the metadata quorum (3 of 5) still has a
    controller to fence them and shrink the ISRs: with only three voters, two down would take the
    quorum with them, and Kafka would not answer NOT_ENOUGH_REPLICAS either. After SIGKILL of
    nodes 2 and 3 every partition is led by node 1 with ISR [1]; an acks=all producer (not
    idempotent, retries=0) gets NOT_ENOUGH_REPLICAS (19) for every record and none of them is
    stored; acks=1 still works on node 1; nodes 2 and 3 restart, rejoin every ISR and acks=all
    works again. The log holds exactly the acknowledged records of the three phases, and the
    replicas are identical."""
    c = cluster(5, voters=5)
    t = topic_name()
    create(c, t, assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    before = ProducerThread(c.bootstrap, t, 3, tag="before")
    acks, errs = before.produce_now(300)
    assert len(acks) == 300 and not errs, errs[:5]

    c.kill(2)
    c.kill(3)
    c.wait_until(lambda: all(c.leader_of(t, q) == 1 and c.isr_of(t, q) == [1] for q in range(3)), 30,
                 "node 1 leading every partition with ISR [1]")
    nr = ProducerThread(c.node(1).addr, t, 3, tag="refused", enable_idempotence=False, acks="all", retries=0,
                        message_timeout_ms=20000)
    acks, errs = nr.produce_now(30)
    assert not acks, f"{len(acks)} acks=all records acknowledged with ISR [1] < min.insync.replicas=2"
    codes = {e.code() for _seq, e in errs}
    assert codes == {NOT_ENOUGH_REPLICAS}, f"want NOT_ENOUGH_REPLICAS for every record, got {errs[:5]}"

    one = ProducerThread(c.node(1).addr, t, 3, tag="acks1", enable_idempotence=False, acks=1)
    acks, errs = one.produce_now(300)
    assert len(acks) == 300 and not errs, f"acks=1 with one replica left: {errs[:5]}"

    c.start(2, wait_registered=False)
    c.start(3, wait_registered=False)
    c.wait_brokers({2, 3})
    c.wait_full_isr(t, 60)
    after = ProducerThread(c.bootstrap, t, 3, tag="after")
    acks, errs = after.produce_now(300)
    assert len(acks) == 300 and not errs, f"acks=all after the brokers came back: {errs[:5]}"

    got, hw = read_all(c.live_bootstrap, t, 3)
    check_log([before, nr, one, after], got, hw, t, exact=True)
    wait_identical(c, t, 3)


def test_acks_all_is_not_acknowledged_with_both_followers_paused(cluster, topic_name):
    """Issue 28, item 1 (tried from outside): min.insync.replicas=2, one partition on nodes 1, 4
    and 5 of a five-node cluster whose voters are nodes 1-3 (pausing both followers leaves the
    quorum whole, and the teardown stops the nodes in two quick waves),
    broker.session.timeout.ms=20000 (the paused nodes are not fenced, only the leader's ISR rules
    apply). Both followers get SIGSTOP while an acks=all
    producer (not idempotent, retries=0) sends 100 records/s; the leader shrinks the ISR to
    itself (stall detection in Frieda, replica.lag.time.max.ms=3000 in Kafka). Not one record
    sent after the SIGSTOP may be acknowledged: each is answered NOT_ENOUGH_REPLICAS(_AFTER_APPEND)
    or times out. Before the fix, the records waiting when the ISR shrank were acknowledged with
    only the leader holding them. After SIGCONT the followers rejoin, acks=all works again, and
    every acknowledged record comes back at its offset. (Run against Kafka with
    tools/kafka_as_frieda_node.py and KAFKA_NODE_EXEC=1, so SIGSTOP reaches the JVM.)"""
    c = cluster(5, voters=3, broker_session_timeout_ms=20000)
    t = topic_name()
    create(c, t, assignment=[[1, 4, 5]])
    conf = dict(enable_idempotence=False, acks="all", retries=0, message_timeout_ms=15000, linger_ms=0)
    before = ProducerThread(c.node(1).addr, t, 1, tag="before", **conf)
    acks, errs = before.produce_now(50)
    assert len(acks) == 50 and not errs, errs[:5]

    during = ProducerThread(c.node(1).addr, t, 1, rate=100, tag="during", **conf)
    c.pause(4)
    c.pause(5)
    paused_at = time.monotonic()
    during.start()
    try:
        c.wait_until(lambda: c.isr_of(t, 0, via=1) == [1], 30, "the ISR shrunk to the leader")
        print(f"ISR [1] {time.monotonic() - paused_at:.1f}s after SIGSTOP of both followers")
        time.sleep(1.5)  # records sent after the shrink too
    finally:
        during.stop(flush_timeout=40)
        c.resume(4)
        c.resume(5)
    assert during.sent > 50, f"only {during.sent} records sent while the followers were paused"
    assert not during.acks, (
        f"{len(during.acks)} of {during.sent} acks=all records acknowledged while only the leader had them "
        f"(min.insync.replicas=2), e.g. offsets {[a.offset for a in during.acks[:10]]}")
    codes = {e.code() for _seq, e in during.errors}
    assert codes <= {NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, KafkaError._MSG_TIMED_OUT,
                     KafkaError.REQUEST_TIMED_OUT}, f"unexpected errors: {during.errors[:5]}"

    # Asked of the leader: a follower just resumed still answers Metadata from the image it had
    # before its pause (ISR [1, 2, 3]), which once let this wait pass before the ISR grew back.
    # Retries: the leader's produce path may apply the grown ISR a moment after its Metadata.
    c.wait_full_isr(t, 60, via=1)
    after = ProducerThread(c.bootstrap, t, 1, tag="after", **dict(conf, retries=20, retry_backoff_ms=250))
    acks, errs = after.produce_now(50)
    assert len(acks) == 50 and not errs, f"acks=all after the followers resumed: {errs[:5]}"
    got, hw = read_all(c.live_bootstrap, t, 1)
    check_log([before, during, after], got, hw, t, exact=False)
    wait_identical(c, t, 1)


def _fetch_v4_as_replica(port: int, topic: str, partition: int, offset: int, replica: int,
                         max_wait_ms: int) -> "socket.socket":
    """Sends a follower's Fetch v4 (replica_id set, no leader epoch) and returns the socket; read
    the answer with ``_fetch_v4_answer``."""
    body = (kw.i32(replica) + kw.i32(max_wait_ms) + kw.i32(1) + kw.i32(1 << 20) + kw.i8(0)
            + kw.i32(1) + kw.string(topic) + kw.i32(1) + kw.i32(partition) + kw.i64(offset) + kw.i32(1 << 20))
    s = kw.connect("127.0.0.1", port, timeout=30)
    kw.send(s, kw.frame(kw.header_v1(1, 4, 41) + body))
    return s


def _fetch_v4_answer(s, timeout: float) -> tuple[int, int, bytes]:
    """(error code, high watermark, records) of the one partition of a Fetch v4 answer."""
    r = kw.Reader(kw.recv_frame(s, timeout=timeout))
    assert r.i32() == 41
    r.i32()  # throttle
    assert r.i32() == 1
    r.take(r.i16())  # topic
    assert r.i32() == 1
    r.i32()  # partition
    err, hw = r.i16(), r.i64()
    r.i64()  # last stable offset
    for _ in range(max(r.i32(), 0)):
        r.i64(), r.i64()
    n = r.i32()
    return err, hw, (r.take(n) if n > 0 else b"")


def test_a_waiting_replica_fetch_is_not_served_by_a_deposed_leader(cluster, topic_name):
    """Found by frieda-sim (soak seeds 8694 and 16378): a follower's fetch long-polls on its
    leader; the leadership moves (a preferred election), the old leader becomes a follower and
    copies the new leader's records; the waiting fetch must not hand those to the fetcher as if
    they were the old leader's (its log would then hold both leaders' records at different
    offsets and join the ISR diverged). Kafka's DelayedFetch checks the leader epoch before it
    completes; Frieda now answers NOT_LEADER_OR_FOLLOWER. Before the fix the fetch came back
    with the new leader's records. auto.leader.rebalance.enable=false, one partition on nodes
    1, 2, 3; node 1 is killed so node 2 leads, restarted, and the fetch (as replica 3, at the
    log end, max_wait 10 s) waits on node 2 while the preferred election gives node 1 back the
    partition and 10 records are produced to it."""
    c = cluster(auto_leader_rebalance_enable=False)
    t = topic_name()
    create(c, t, assignment=[[1, 2, 3]])
    p = ProducerThread(c.bootstrap, t, 1, tag="a")
    acks, errs = p.produce_now(20)
    assert len(acks) == 20 and not errs, errs[:5]
    c.kill(1)
    c.wait_until(lambda: c.leader_of(t, 0, via=2) == 2, 30, "node 2 leading")
    c.start(1)
    c.wait_full_isr(t, 60, via=2)
    end = watermarks(c.node(2).addr, t, 1)[0][1]
    s = _fetch_v4_as_replica(c.node(2).client_port, t, 0, end, 3, 10000)
    try:
        time.sleep(0.5)  # parked: nothing past the log end yet
        adm = c.admin(via=2)
        adm.elect_leaders(ElectionType.PREFERRED, [TopicPartition(t, 0)]).result(timeout=30)
        c.wait_until(lambda: c.leader_of(t, 0, via=2) == 1, 30, "node 1 leading again")
        more = ProducerThread(c.node(1).addr, t, 1, tag="b")
        acks, errs = more.produce_now(10)
        assert len(acks) == 10 and not errs, errs[:5]
        err, _hw, records = _fetch_v4_answer(s, timeout=20)
    finally:
        s.close()
    assert not records, f"a deposed leader served {len(records)} bytes of another leader's records to a waiting replica fetch"
    assert err == NOT_LEADER_OR_FOLLOWER, f"error {err}, want NOT_LEADER_OR_FOLLOWER"


# ---------------------------------------------------------------- d. group coordinator failover

@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group_survives_coordinator_sigkill(cluster, topic_name, protocol):
    """A confluent-kafka consumer (subscribe, enable.auto.commit=false, synchronous commit every
    ~25 records) reads a 3-partition RF 3 topic while a producer adds 100 records/s. The group's
    coordinator (DescribeConsumerGroups; the leader of its __consumer_offsets partition) is
    SIGKILLed: the group goes on with a new coordinator (a commit succeeds again), the committed
    offsets read back from the new coordinator are at least the last ones committed before the
    kill, no record is skipped, a record is consumed twice only at or above the partition's last
    successful commit, and at the end the committed offsets equal the end offsets. With the
    classic protocol the new coordinator loads the group's members (no commit fails for lost
    membership); with KIP-848's `group.protocol=consumer` the membership is not persisted, so the
    member rejoins (epoch 0) and resumes from the committed offsets."""
    c = cluster()
    t = topic_name()
    create(c, t, 3)
    group = f"g-{uuid.uuid4().hex[:8]}"
    p = ProducerThread(c.bootstrap, t, 3, rate=100, tag="d")
    p.start()
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "log_level": LOG_LEVEL,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                     "group.protocol": protocol})
    consumed: dict[tuple[int, int], bytes] = {}
    committed: dict[int, int] = {}  # partition -> offset of the last successful commit
    bad_dups = []
    commit_errors = []
    commits_ok = [0]

    def commit():
        try:
            res = cons.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                commit_errors.append(e.args[0])
            return
        for tp in res or []:
            if tp.error is None and tp.offset >= 0:
                committed[tp.partition] = tp.offset
        if res and all(tp.error is None for tp in res):
            commits_ok[0] += 1

    def consume_for(cond, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        since_commit = 0
        while not cond():
            assert time.monotonic() < deadline, f"timed out consuming ({what}); {len(consumed)} consumed"
            m = cons.poll(0.2)
            if m is not None and not m.error():
                key = (m.partition(), m.offset())
                if key in consumed and m.offset() < committed.get(m.partition(), 0):
                    bad_dups.append((key, committed.get(m.partition())))
                consumed[key] = m.value()
                since_commit += 1
            if since_commit >= 25 or (m is None and since_commit):
                commit()
                since_commit = 0

    try:
        cons.subscribe([t])
        p.wait_acked(300, 30)
        consume_for(lambda: len(consumed) >= 300 and commits_ok[0] >= 3, 60, "before the kill")
        adm = c.admin()
        coord = adm.describe_consumer_groups([group])[group].result(timeout=15).coordinator.id
        before_kill = dict(committed)
        c.kill(coord)
        t_kill = time.monotonic()
        ok_at_kill = commits_ok[0]
        consume_for(lambda: commits_ok[0] >= ok_at_kill + 3 and len(consumed) >= len(p.acks) - 50, 90,
                    f"after SIGKILL of coordinator {coord}")
        print(f"commits succeed again {time.monotonic() - t_kill:.1f}s after SIGKILL of coordinator {coord}")
        adm = c.admin()
        new_coord = adm.describe_consumer_groups([group])[group].result(timeout=15).coordinator.id
        assert new_coord != coord, f"the group's coordinator is still the killed node {coord}"
        check = Consumer({"bootstrap.servers": c.live_bootstrap, "group.id": group, "log_level": LOG_LEVEL,
                          "enable.auto.commit": False})
        try:
            fetched = check.committed([TopicPartition(t, q) for q in range(3)], timeout=15)
        finally:
            check.close()
        for tp in fetched:
            assert tp.error is None, tp.error
            assert tp.offset >= before_kill.get(tp.partition, -1001), \
                f"committed offset of {t}[{tp.partition}] went back to {tp.offset} after the failover " \
                f"(was {before_kill[tp.partition]})"
        p.stop()
        assert not p.errors, f"delivery errors: {p.errors[:5]}"
        ends = p.acked_by_partition()
        consume_for(lambda: all((q, ends[q] - 1) in consumed for q in ends), 60, "to the end")
        c.wait_until(lambda: commit() or all(committed.get(q) == ends[q] for q in ends), 20,
                     f"committed offsets {committed} = end offsets {ends}")
    finally:
        cons.close()
        if p.is_alive():
            p.stop()
    assert not bad_dups, f"records consumed again below the last successful commit: {bad_dups[:10]}"
    for a in p.acks:
        v = consumed.get((a.partition, a.offset))
        assert v is not None, f"{t}[{a.partition}]@{a.offset} skipped by the group"
        assert v == a.value, f"{t}[{a.partition}]@{a.offset}: value differs"
    print(f"commit errors during the failover: {[str(e) for e in commit_errors[:5]]}")
    # The new coordinator loads the group with its members (as Kafka's does): their commits
    # carry on without a rebalance.
    if protocol == "classic":
        lost = [str(e) for e in commit_errors if "UNKNOWN_MEMBER_ID" in str(e) or "ILLEGAL_GENERATION" in str(e)]
        assert not lost, f"the group's membership was lost in the failover: {lost[:5]}"


# ---------------------------------------------------------------- e. admin through any node

def test_admin_through_any_node_and_no_resurrection(cluster, topic_name):
    """CreateTopics (4 partitions, RF 3, a config) and CreatePartitions (4 -> 6) sent over raw
    sockets to nodes that are not the controller; IncrementalAlterConfigs (SET retention.ms,
    max.message.bytes) from an AdminClient bootstrapped at a non-controller node: DescribeConfigs
    from every node shows the values, every partition leader enforces max.message.bytes
    (MSG_SIZE_TOO_LARGE); Metadata v7 asked of each node is identical (brokers, cluster id, every
    partition's leader, epoch, replicas, ISR; not the controller id, for which Kafka names a
    random live broker). Then one node is stopped
    (SIGTERM) while a topic is deleted and another is deleted and created again under its name
    (explicit assignment including the stopped node): after its restart no partition directory
    of its data dir holds the old records and the deleted topic has none (directories set aside
    as Kafka does, `<topic>-<p>.<id>-stray` or `-delete`, are never loaded and are tolerated), its
    replica of the new topic has the new topic id, reading gives exactly the new records, and its
    replicas match the others byte for byte. Finally DeleteTopics through a non-controller node: gone from every
    node's Metadata and data dir."""
    c = cluster()
    ctrl = c.controller()
    others = [i for i in sorted(c.nodes) if i != ctrl]
    port = {i: c.node(i).client_port for i in c.nodes}
    t = topic_name("admin")

    err, msg = cw.create_topic(port[others[0]], t, 4, 3, configs={"retention.ms": "7200000"})
    assert err == 0, (err, msg)
    c.wait_topic(t, 4)
    assert cw.create_topic(port[others[1]], t, 4, 3)[0] == 36, "TOPIC_ALREADY_EXISTS expected"
    err, msg = cw.create_partitions(port[others[1]], t, 6)
    assert err == 0, (err, msg)
    c.wait_topic(t, 6)

    res = ConfigResource("TOPIC", t, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("max.message.bytes", "200000", incremental_operation=AlterConfigOpType.SET)])
    adm = c.admin(others[0])
    adm.incremental_alter_configs([res])[res].result(timeout=30)

    def configs_everywhere():
        for i in c.nodes:
            r = ConfigResource("TOPIC", t)
            adm_i = c.admin(i)
            cfg = adm_i.describe_configs([r], request_timeout=10)[r].result(timeout=10)
            if cfg["retention.ms"].value != "3600000" or cfg["max.message.bytes"].value != "200000":
                return False
        return True
    c.wait_until(configs_everywhere, 20, "the altered configs from every node")

    prod = Producer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "acks": "all",
                     "enable.idempotence": False, "retries": 0, "message.timeout.ms": 20000})
    big_errs = []
    for q in range(6):
        prod.produce(t, value=b"x" * 250_000, partition=q, on_delivery=lambda e, m: big_errs.append(e))
    assert prod.flush(30) == 0
    del prod  # no librdkafka handle may ask for the topics deleted below (auto-creation)
    assert [e.code() if e else None for e in big_errs] == [MSG_SIZE_TOO_LARGE] * 6, big_errs
    ok = ProducerThread(c.bootstrap, t, 6, tag="small")
    acks, errs = ok.produce_now(120)
    assert len(acks) == 120 and not errs, errs[:5]
    ok.close()

    def normalized(i):
        md = c.raw_metadata(i)
        return (md.brokers, md.cluster_id,
                {name: (err, {q: (x.error, x.leader, x.leader_epoch, sorted(x.replicas), sorted(x.isr),
                                  sorted(x.offline)) for q, x in parts.items()})
                 for name, (err, parts) in md.topics.items()})

    def identical():
        views = [normalized(i) for i in sorted(c.nodes)]
        return all(v == views[0] for v in views) and t in views[0][2]
    c.wait_until(identical, 20, "identical Metadata from every node")
    got, hw = read_all(c.live_bootstrap, t, 6)
    check_log(ok, got, hw, t, exact=True)

    # ---- a node that is down while topics are deleted and re-created
    y, z = topic_name("recreated"), topic_name("deleted")
    create(c, y, 3)
    create(c, z, 2)
    old_y = ProducerThread(c.bootstrap, y, 3, tag=f"old{uuid.uuid4().hex}")
    old_z = ProducerThread(c.bootstrap, z, 2, tag=f"old{uuid.uuid4().hex}")
    for pr in (old_y, old_z):
        acks, errs = pr.produce_now(200)
        assert len(acks) == 200 and not errs, errs[:5]
        pr.close()
    wait_identical(c, y, 3)
    wait_identical(c, z, 2)
    v = others[-1]
    old_id = (c.node(v).data_dir / f"{y}-0" / "partition.metadata").read_text()
    c.stop(v)
    assert cw.delete_topic(port[ctrl], y) == 0
    assert cw.delete_topic(port[others[0]], z) == 0
    live = [i for i in sorted(c.nodes) if i != v]
    c.wait_until(lambda: all(y not in c.raw_metadata(i).topics and z not in c.raw_metadata(i).topics for i in live),
                 20, "deleted topics gone from the running nodes' Metadata")
    a, b = live
    adm = c.admin()
    fs = adm.create_topics([NewTopic(y, num_partitions=3, replica_assignment=[[a, b, v], [b, v, a], [v, a, b]])],
                           operation_timeout=20, request_timeout=30)
    fs[y].result(timeout=30)
    c.wait_until(lambda: all(x.leader in live for x in c.partitions(y).values()) and len(c.partitions(y)) == 3,
                 20, f"re-created {y} led by running nodes")
    new_y = ProducerThread(c.bootstrap, y, 3, tag="new")
    acks, errs = new_y.produce_now(200)
    assert len(acks) == 200 and not errs, errs[:5]
    new_y.close()

    c.start(v)
    c.wait_full_isr(y, 30)
    vdir = c.node(v).data_dir
    markers = [old_y.tag, old_z.tag]

    def aside(f) -> bool:
        # Kafka renames the replicas of topics deleted while it was down to
        # `<topic>-<p>.<id>-stray` (and deletes via `-delete`); such directories are never loaded
        top = f.relative_to(vdir).parts[0]
        return top.endswith("-stray") or top.endswith("-delete")

    def leftovers():
        files = sorted(str(f.relative_to(vdir)) for f in vdir.rglob("*")
                       if f.is_file() and not aside(f) and any(m in f.read_bytes() for m in markers))
        dirs = sorted(d.name for d in vdir.glob(f"{z}-*") if re.fullmatch(re.escape(z) + r"-\d+", d.name))
        return files, dirs

    try:
        c.wait_until(lambda: leftovers() == ([], []), 20, f"node {v}'s data dir free of the deleted topics' records")
    except AssertionError:
        files, dirs = leftovers()
        raise AssertionError(f"node {v} keeps the deleted topics' data after its restart: files {files[:10]}, "
                             f"partition directories of the deleted {z}: {dirs}") from None
    print(f"set aside on node {v}: {sorted(d.name for d in vdir.iterdir() if aside(d / 'x'))}")
    for q in range(3):
        meta = (vdir / f"{y}-{q}" / "partition.metadata").read_text()
        assert meta != old_id and meta == (c.node(a).data_dir / f"{y}-{q}" / "partition.metadata").read_text(), \
            f"node {v}'s {y}-{q}/partition.metadata: {meta!r} (old: {old_id!r})"
    got, hw = read_all(c.live_bootstrap, y, 3)
    check_log(new_y, got, hw, y, exact=True)
    wait_identical(c, y, 3)

    # ---- DeleteTopics through a node that is not the controller
    ctrl = c.controller()
    via = next(i for i in sorted(c.nodes) if i != ctrl)
    assert cw.delete_topic(port[via], t) == 0
    c.wait_until(lambda: all(t not in c.raw_metadata(i).topics for i in c.nodes), 20,
                 f"{t} gone from every node's Metadata")
    c.wait_until(lambda: not any(re.fullmatch(re.escape(t) + r"-\d+", d.name)
                                 for i in c.nodes for d in c.node(i).data_dir.iterdir()), 20,
                 f"{t}'s partition directories removed on every node")
    assert cw.delete_topic(port[via], t) == 3, "deleting again: UNKNOWN_TOPIC_OR_PARTITION expected"


# ---------------------------------------------------------------- f. controlled shutdown

def test_sigterm_of_a_leader_is_a_controlled_shutdown(cluster, topic_name):
    """broker.session.timeout.ms=15000 (so that only a controlled shutdown can move leaderships
    quickly). SIGTERM to the leader of a partition (not the active controller) during idempotent
    acks=all production: it exits 0 within 10 s, its leaderships (and ISR memberships) have moved
    within 5 s of the signal, the producer's records sent from the signal on are acknowledged
    within 5 s, and it sees no error. After a restart it rejoins every ISR; the log holds exactly
    the acknowledged records and the replicas are identical."""
    c = cluster(broker_session_timeout_ms=15000)
    t = topic_name()
    create(c, t, 3)
    p = ProducerThread(c.bootstrap, t, 3, rate=300, tag="f")
    p.start()
    try:
        p.wait_acked(600, 30, "before the shutdown")
        ctrl = c.controller()
        leaders = {q: c.leader_of(t, q) for q in range(3)}
        victim = next((n for n in leaders.values() if n != ctrl), leaders[0])
        t0 = time.monotonic()
        took = c.stop(victim)
        c.wait_until(lambda: moved_off(c, t, 3, victim, isr_too=True), max(0.1, 5 - (time.monotonic() - t0)),
                     f"leaderships and ISRs moved off node {victim} within 5 s of SIGTERM")
        print(f"node {victim} exited {took:.2f}s after SIGTERM; leaderships moved within "
              f"{time.monotonic() - t0:.2f}s")
        p.wait_more(600, 30, "after the controlled shutdown")
        stall = p.max_latency(since=t0)
        print(f"acks=all waited at most {stall:.2f}s across the controlled shutdown")
        assert stall < 5, f"records waited {stall:.1f}s for their acknowledgement across a controlled shutdown"
        c.start(victim)
        c.wait_full_isr(t, 30)
        p.wait_more(300, 30, "after the restart")
    finally:
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.live_bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 3)


# ---------------------------------------------------------------- g. rolling restart

def test_rolling_restart_under_production(cluster, topic_name):
    """Nodes 1, 2, 3 in turn: SIGTERM (exit 0), start again, wait until it is back in every ISR
    of the topic, under continuous idempotent acks=all production (300 records/s,
    message.timeout.ms=120000). No delivery error; the log holds exactly the acknowledged
    records, each at its offset byte for byte, offsets contiguous per partition; the replicas are
    identical."""
    c = cluster()
    t = topic_name()
    create(c, t, 3)
    p = ProducerThread(c.bootstrap, t, 3, rate=300, tag="g")
    p.start()
    try:
        p.wait_acked(300, 30, "before the rolling restart")
        for i in sorted(c.nodes):
            c.stop(i)
            p.wait_more(150, 30, f"with node {i} stopped")
            c.start(i)
            c.wait_full_isr(t, 60)
            p.wait_more(150, 30, f"after node {i} came back")
    finally:
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    got, hw = read_all(c.live_bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 3)


# ---------------------------------------------------------------- h. other clients

def test_kcat_and_kafka_python_through_a_non_leader(cluster, topic_name):
    """kcat -L (and -J) and kafka-python's DescribeCluster list the 3 brokers; a 1-partition RF 3
    topic is written and read with bootstrap = a node that does not lead it: kcat -P lines then
    kcat -C -e the same lines at offsets 0..n-1; kafka-python acks=all keyed records then a
    kafka-python consumer by assignment: byte for byte at the acknowledged offsets."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    c = cluster()
    t = topic_name()
    create(c, t, 1)
    leader = c.leader_of(t, 0)
    boot = c.node(next(i for i in sorted(c.nodes) if i != leader)).addr

    out = subprocess.run(["kcat", "-b", boot, "-L", "-J"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    md = json.loads(out.stdout)
    assert sorted(b["id"] for b in md["brokers"]) == [1, 2, 3], md["brokers"]
    (kt,) = [x for x in md["topics"] if x["topic"] == t]
    (kp,) = kt["partitions"]
    assert kp["leader"] == leader and sorted(r["id"] for r in kp["replicas"]) == [1, 2, 3] \
        and sorted(r["id"] for r in kp["isrs"]) == [1, 2, 3], kp
    text = subprocess.run(["kcat", "-b", boot, "-L"], capture_output=True, text=True, timeout=30).stdout
    assert " 3 brokers:" in text, text

    lines = [f"kcat line {i} ünïcødé {'x' * (i % 50)}" for i in range(500)]
    out = subprocess.run(["kcat", "-b", boot, "-P", "-t", t, "-p", "0", "-X", "acks=all"],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run(["kcat", "-b", boot, "-C", "-t", t, "-p", "0", "-o", "beginning", "-e", "-f", "%o %s\n"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{i} {line}" for i, line in enumerate(lines)]

    adm = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=20000)
    try:
        brokers = adm.describe_cluster()["brokers"]
        assert sorted(b["broker_id"] for b in brokers) == [1, 2, 3], brokers
    finally:
        adm.close()
    prod = KafkaProducer(bootstrap_servers=boot, acks="all", retries=5, request_timeout_ms=30000)
    sent = []
    try:
        for i in range(300):
            key, value = b"kp-%d" % i, bytes(range(256)) * (i % 5) + b"v%d" % i
            md = prod.send(t, key=key, value=value, partition=0).get(timeout=30)
            sent.append((md.offset, key, value))
    finally:
        prod.close(timeout=10)
    assert [o for o, _k, _v in sent] == list(range(len(lines), len(lines) + 300))
    cons = KafkaConsumer(bootstrap_servers=boot, enable_auto_commit=False, group_id=None,
                         consumer_timeout_ms=1000)
    got = {}
    try:
        tp = KTP(t, 0)
        cons.assign([tp])
        cons.seek(tp, len(lines))
        deadline = time.monotonic() + 30
        while len(got) < 300 and time.monotonic() < deadline:
            for recs in cons.poll(timeout_ms=500).values():
                for r in recs:
                    got[r.offset] = (r.key, r.value)
    finally:
        cons.close()
    for o, k, v in sent:
        assert got.get(o) == (k, v), f"{t}[0]@{o}: kafka-python read {got.get(o)!r:.80}"


# ---------------------------------------------------------------- i. broker-only node

def test_broker_only_node_hosts_and_leads_replicas(cluster, topic_name):
    """4 nodes: 1-3 voters (broker,controller), 4 broker-only. Metadata lists 4 brokers; an RF 4
    topic has node 4 in every replica set and ISR; a topic created with an explicit assignment
    led by node 4 ([4,1,2], [4,2,3]) shows node 4 as leader, takes idempotent acks=all records
    and serves them back byte for byte; node 4's data dir holds both topics' partitions with the
    same batches as the other replicas. SIGTERM of node 4 moves its leaderships; after its
    restart it rejoins every ISR."""
    c = cluster(4)
    assert set(c.metadata().brokers) == {1, 2, 3, 4}
    assert not c.node(4).voter
    t4, tl = topic_name("rf4"), topic_name("led")
    create(c, t4, 2, rf=4)
    for q in range(2):
        assert sorted(c.replicas_of(t4, q)) == [1, 2, 3, 4] and sorted(c.isr_of(t4, q)) == [1, 2, 3, 4]
    create(c, tl, assignment=[[4, 1, 2], [4, 2, 3]])
    assert [c.leader_of(tl, 0), c.leader_of(tl, 1)] == [4, 4]
    p4 = ProducerThread(c.bootstrap, t4, 2, tag="rf4")
    pl = ProducerThread(c.bootstrap, tl, 2, tag="led")
    for pr in (p4, pl):
        acks, errs = pr.produce_now(400)
        assert len(acks) == 400 and not errs, errs[:5]
    got, hw = read_all(c.live_bootstrap, t4, 2)
    check_log(p4, got, hw, t4, exact=True)
    got, hw = read_all(c.node(4).addr, tl, 2)
    check_log(pl, got, hw, tl, exact=True)
    wait_identical(c, t4, 2)
    wait_identical(c, tl, 2)
    for name in (t4, tl):
        assert sorted(d.name for d in c.node(4).data_dir.glob(f"{name}-*")) == [f"{name}-0", f"{name}-1"]

    c.stop(4)
    c.wait_until(lambda: moved_off(c, tl, 2, 4), 10, "leaderships moved off node 4")
    more = ProducerThread(c.live_bootstrap, tl, 2, tag="more")
    acks, errs = more.produce_now(200)
    assert len(acks) == 200 and not errs, errs[:5]
    c.start(4)
    c.wait_full_isr(tl, 30)
    c.wait_full_isr(t4, 30)
    got, hw = read_all(c.live_bootstrap, tl, 2)
    check_log([pl, more], got, hw, tl, exact=True)
    wait_identical(c, tl, 2)


def _tagged(r: kw.Reader) -> dict[int, bytes]:
    """A tagged-field section: {tag: its bytes}."""
    out = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = r.take(r.uvarint())
    return out


def test_produce_to_a_follower_names_the_leader_kip_951(cluster, topic_name):
    """Produce v10 (KIP-951) sent straight to a follower of a partition: the partition is
    answered NOT_LEADER_OR_FOLLOWER with its current leader and leader epoch (tagged field 0 of
    the partition response), and the response carries the leader's endpoint (tagged field 0 of
    the response: node id, host, port), which Metadata agrees with; so clients such as the Java
    producer and librdkafka go to the new leader without a Metadata round trip."""
    c = cluster()
    t = topic_name()
    create(c, t, 1)
    md = c.raw_metadata(1, [t])
    part = md.topics[t][1][0]
    follower = next(i for i in part.replicas if i != part.leader)
    node = c.node(follower)
    ts = int(time.time() * 1000)
    batch = kw.record_batch([kw.Record(key=b"k", value=b"v", headers=[], timestamp=ts)])
    req = bytearray(kw.produce_v9(7, t, 0, batch))
    req[4 + 2:4 + 4] = (10).to_bytes(2, "big")  # the same body is Produce v10
    s = kw.connect(node.host, node.client_port)
    try:
        payload = kw.request(s, bytes(req))
    finally:
        s.close()
    r = kw.Reader(payload)
    assert r.i32() == 7
    r.tags()
    hint = None
    for _ in range(r.uvarint() - 1):
        assert r.compact_string() == t
        for _ in range(r.uvarint() - 1):
            idx, err = r.i32(), r.i16()
            r.i64(), r.i64(), r.i64()
            for _ in range(r.uvarint() - 1):
                r.i32(), r.compact_string(), r.tags()
            r.compact_string()
            tags = _tagged(r)
            assert (idx, err) == (0, 6), (idx, err)  # NOT_LEADER_OR_FOLLOWER
            assert 0 in tags, f"no CurrentLeader tag: {tags}"
            lr = kw.Reader(tags[0])
            hint = (lr.i32(), lr.i32())
        r.tags()
    r.i32()  # throttle
    tags = _tagged(r)
    assert hint == (part.leader, md.topics[t][1][0].leader_epoch), (hint, part)
    assert 0 in tags, f"no NodeEndpoints tag: {tags}"
    er = kw.Reader(tags[0])
    endpoints = []
    for _ in range(er.uvarint() - 1):
        endpoints.append((er.i32(), er.compact_string(), er.i32(), er.compact_string()))
        er.tags()
    leader = c.node(part.leader)
    assert endpoints == [(leader.id, leader.host, leader.client_port, None)], endpoints


def test_dynamic_broker_config_goes_through_the_quorum(cluster, topic_name):
    """kafka-configs --alter --entity-type brokers --entity-name 2 --add-config
    message.max.bytes=2000, sent to broker 1: the change goes through the metadata quorum, so
    broker 2 (and only it) refuses a 5,000-byte record for a partition it leads, its
    DescribeConfigs shows the value as DYNAMIC_BROKER_CONFIG, and still does after broker 2 is
    SIGKILLed and restarted (it can only have read it from the metadata log); deleting the value
    restores the static one."""
    from confluent_kafka.admin import ConfigSource, ResourceType
    c = cluster()
    t = topic_name()
    create(c, t, 3, config={"min.insync.replicas": "1"})
    led = {c.leader_of(t, q): q for q in range(3)}
    assert 2 in led and 1 in led, led
    a = c.admin(via=1)

    def alter(value):
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        res = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[
            ConfigEntry("message.max.bytes", value, incremental_operation=op)])
        a.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=30)

    def produce_big(partition: int):
        p = Producer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "message.timeout.ms": 10000})
        errs = []
        p.produce(t, value=b"x" * 5000, partition=partition, on_delivery=lambda e, m: errs.append(e))
        assert p.flush(30) == 0
        return errs[0].code() if errs[0] is not None else None

    def described():
        res = ConfigResource(ResourceType.BROKER, "2")
        adm = c.admin(via=2)  # kept referenced until the result is in
        return adm.describe_configs([res], request_timeout=30)[res].result(timeout=30)["message.max.bytes"]

    alter("2000")
    c.wait_until(lambda: produce_big(led[2]) == KafkaError.MSG_SIZE_TOO_LARGE, 20, "broker 2 applies the limit")
    assert produce_big(led[1]) is None, "broker 1 must keep its own limit"
    e = described()
    assert (e.value, e.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value), e
    c.kill(2)
    c.start(2)
    c.wait_full_isr(t, 30)
    # what broker 2 reports now it can only have taken from the metadata log
    e = described()
    assert (e.value, e.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value), e
    alter(None)
    c.wait_until(lambda: described().value == "1048588", 20, "broker 2 back on its static limit")


def test_api_versions_v5_accepts_the_cluster_id_clients_learned(cluster):
    """Kafka 4.4's clients send the cluster id and node id they learned from Metadata in
    ApiVersions v5 (KIP-1102 rebootstrap): every node accepts its own pair (a node that compared
    with its own meta.properties answered REBOOTSTRAP_REQUIRED, and a 4.4 producer never reached
    a new leader after a failover); another node's id is REBOOTSTRAP_REQUIRED (129)."""
    c = cluster()
    cluster_id = c.admin().list_topics(timeout=10).cluster_id
    for i in c.running():
        for node, want in ((i, 0), (i % 3 + 1, 129)):
            body = kw.compact_string("frieda-it") + kw.compact_string("1.0") + kw.compact_string(cluster_id) \
                + kw.i32(node) + kw.NO_TAGS
            with kw.connect(c.node(i).host, c.node(i).client_port) as s:
                corr, err, _ = kw.parse_api_versions_v3(kw.request(s, kw.frame(kw.header_v2(18, 5, 7) + body)))
            assert (corr, err) == (7, want), f"node {i} asked as node {node}: error {err}"
