"""KIP-848 consumer groups (`group.protocol=consumer`) through confluent-kafka/librdkafka:
member churn with both server assignors, a regex subscription picking up a topic created later,
the protocols' mutual exclusion on one group id, and the group as the admin client describes and
lists it.

The broker runs with `group.consumer.session.timeout.ms = 6000` and a 500 ms heartbeat interval
(the KIP-848 timings are the broker's, not the client's), so a SIGKILLed member's partitions come
back after about 6 s, as in the classic churn tests of test_groups.py whose workers and checks
are reused.
"""

from __future__ import annotations

import signal
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState

from conftest import EXTERNAL
from helpers import LOG_LEVEL, admin, create_topic, producer, wait_until
from test_groups import Worker, check_delivery, end_offsets, produce_n, wait_committed_to_ends

BROKER_CONFIG = ('"group.consumer.session.timeout.ms" = 6000\n'
                 '"group.consumer.heartbeat.interval.ms" = 500\n')


def describe(bootstrap: str, group: str):
    a = admin(bootstrap)  # keep the client alive until its future completes
    return a.describe_consumer_groups([group])[group].result(timeout=10)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_consumer_protocol_churn_leave_kill_join_every_record_consumed(make_own_broker, topic_name, tmp_path,
                                                                         assignor):
    """Three members share six partitions; one leaves (close: heartbeat with epoch -1), one is
    SIGKILLed (removed after the session timeout), one joins, while records keep arriving. Every
    record is consumed, a record is consumed twice only by a member that had not committed past
    it, the committed offsets end equal to the end offsets, and the two live members split the
    partitions 3/3 in a Stable group described with its assignor."""
    b = make_own_broker(BROKER_CONFIG).bootstrap
    topic, group, parts = topic_name(), f"g-848-{assignor}", 6
    create_topic(b, topic, partitions=parts)
    produce_n(b, topic, 0, 300, parts)
    kind = f"consumer:{assignor}"
    workers = [Worker(tmp_path, f"w{i}", b, group, topic, kind) for i in range(3)]
    try:
        wait_until("three members holding two partitions each",
                   lambda: all(len(w.assigned_now()) == 2 for w in workers), 60)
        produce_n(b, topic, 300, 2700, parts)
        wait_until("every member consuming", lambda: all(w.consumed() > 0 for w in workers), 60)
        workers[0].stop(signal.SIGTERM)
        assert workers[0].proc.returncode == 0
        workers[1].stop(signal.SIGKILL)
        workers.append(Worker(tmp_path, "w3", b, group, topic, kind))
        produce_n(b, topic, 3000, 3000, parts)
        ends = end_offsets(b, topic, parts)
        assert sum(ends.values()) == 6000
        wait_committed_to_ends(b, group, topic, ends, workers)
        wait_until("the two live members splitting the partitions",
                   lambda: sorted(len(w.assigned_now()) for w in workers[2:]) == [3, 3], 30)
        wait_until("the group Stable with two members",
                   lambda: (lambda d: d.state == ConsumerGroupState.STABLE and len(d.members) == 2)(
                       describe(b, group)), 30)
        d = describe(b, group)
        assert d.partition_assignor == assignor
        held = sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions)
        assert held == list(range(parts)), d
        a = admin(b)  # keep the client alive until its future completes
        res = a.list_consumer_groups().result(timeout=10)
        listed = {g.group_id: g for g in res.valid}
        assert group in listed, (res.valid, res.errors)
        assert str(listed[group].type).endswith("CONSUMER"), listed[group].type
    finally:
        for w in workers:
            w.stop()
    stats = check_delivery(workers, ends)
    print(f"{assignor}: {stats}")


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": LOG_LEVEL}
    conf.update(extra)
    return Consumer(conf)


@pytest.mark.timeout(120)
def test_regex_subscription_picks_up_a_topic_created_later(make_own_broker, topic_name):
    """A member subscribed to `^<prefix>-.*` (the regex evaluated by the broker, KIP-848) reads
    the matching topic, then a second matching topic created while it runs, and never the topic
    that does not match."""
    b = make_own_broker(BROKER_CONFIG).bootstrap
    prefix = topic_name("rx")
    first, second, other = f"{prefix}-a", f"{prefix}-b", topic_name("other")
    for t in (first, other):
        create_topic(b, t, partitions=2)
    p = producer(b)
    for t in (first, other):
        for i in range(10):
            p.produce(t, value=f"{t}-{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    c = _consumer(b, f"g-{prefix}", **{"topic.metadata.refresh.interval.ms": 1000})
    got: dict[str, set] = {}
    try:
        c.subscribe([f"^{prefix}-.*"])

        def poll_until(want: dict[str, int]):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.setdefault(m.topic(), set()).add(m.value())
            return all(len(got.get(t, ())) >= n for t, n in want.items())
        wait_until("the first matching topic read", lambda: poll_until({first: 10}), 60, every=0)
        create_topic(b, second, partitions=3)
        for i in range(9):
            p.produce(second, value=f"{second}-{i}".encode(), partition=i % 3)
        assert p.flush(30) == 0
        wait_until("the topic created later read", lambda: poll_until({first: 10, second: 9}), 60, every=0)
        end = time.monotonic() + 2
        while time.monotonic() < end:
            poll_until({})
        assert other not in got, "a topic the regex does not match was consumed"
        assert got[second] == {f"{second}-{i}".encode() for i in range(9)}
    finally:
        c.close()


@pytest.mark.timeout(120)
def test_one_group_id_both_protocols_and_admin_views(make_own_broker, topic_name):
    """While a consumer-protocol member is in group G, a classic member joins G too (KIP-848's
    upgrade path: it gets a share of the partitions through SyncGroup); the admin client describes G with its member, member epoch
    assignment and `uniform` assignor; a classic group still describes as before (the admin
    client falls back from ConsumerGroupDescribe to DescribeGroups). Once G is empty it can be
    deleted with its offsets."""
    b = make_own_broker(BROKER_CONFIG).bootstrap
    topic = topic_name()
    create_topic(b, topic, partitions=3)
    group = f"g-{topic}"
    c = _consumer(b, group)
    c.subscribe([topic])
    wait_until("the member holding the partitions", lambda: (c.poll(0.1), len(c.assignment()) == 3)[1], 60, every=0)
    d = describe(b, group)
    assert d.state == ConsumerGroupState.STABLE
    assert d.partition_assignor == "uniform"
    assert len(d.members) == 1
    assert sorted(tp.partition for tp in d.members[0].assignment.topic_partitions) == [0, 1, 2]

    # A classic member (librdkafka's default assignors range,roundrobin) joins the consumer group
    # (KIP-848's upgrade path): the server assignor gives it a share, through SyncGroup.
    classic = Consumer({"bootstrap.servers": b, "group.id": group, "session.timeout.ms": 6000,
                        "heartbeat.interval.ms": 500, "log_level": LOG_LEVEL})
    classic.subscribe([topic])
    wait_until("the classic member and the consumer member sharing the partitions",
               lambda: (classic.poll(0.1), c.poll(0.1),
                        len(classic.assignment()) >= 1 and len(classic.assignment()) + len(c.assignment()) == 3)[2],
               60, every=0)
    d = describe(b, group)
    assert len(d.members) == 2, d
    classic.close()

    other = f"g-classic-{topic}"
    cl = Consumer({"bootstrap.servers": b, "group.id": other, "session.timeout.ms": 6000,
                   "heartbeat.interval.ms": 500, "log_level": LOG_LEVEL})
    cl.subscribe([topic])
    wait_until("the classic member holding the partitions", lambda: (cl.poll(0.1), len(cl.assignment()) == 3)[1],
               60, every=0)
    dc = describe(b, other)
    assert dc.state == ConsumerGroupState.STABLE and len(dc.members) == 1
    cl.close()

    c.close()
    wait_until("the consumer group empty", lambda: describe(b, group).state == ConsumerGroupState.EMPTY, 30)
    a = admin(b)
    assert a.delete_consumer_groups([group])[group].result(timeout=10) is None


@pytest.fixture
def mixed_bootstrap(request):
    """Frieda with the fast KIP-848 timings, or the external broker (Kafka 4.3.1 checks the same
    expectations: FRIEDA_EXTERNAL_BOOTSTRAP=127.0.0.1:19092)."""
    if EXTERNAL:
        return request.getfixturevalue("broker").bootstrap
    return request.getfixturevalue("make_own_broker")(BROKER_CONFIG).bootstrap


def _group_type(b: str, group: str) -> str:
    a = admin(b)  # keep the client alive until its future completes
    listed = {g.group_id: g for g in a.list_consumer_groups().result(timeout=10).valid}
    return str(listed[group].type).rsplit(".", 1)[-1] if group in listed else "absent"


@pytest.mark.timeout(300)
def test_mixed_classic_and_consumer_members_upgrade_and_downgrade(mixed_bootstrap, topic_name, tmp_path):
    """Kafka's online upgrade and downgrade (KIP-848, `group.consumer.migration.policy`
    bidirectional): two classic members (cooperative-sticky) form a classic group; two members
    of the consumer protocol join it, which makes it a consumer group of four members sharing
    six partitions; a consumer member leaves, a classic member is SIGKILLed (removed after its
    6 s session), the last consumer member leaves, which makes it a classic group again, and a
    new classic member joins it. Records keep arriving throughout: every record is consumed, a
    record comes twice only to a member that had not committed past it, and the committed
    offsets end equal to the end offsets."""
    b = mixed_bootstrap
    topic, group, parts = topic_name(), f"g-mixed-{topic_name()}", 6
    create_topic(b, topic, partitions=parts)
    produce_n(b, topic, 0, 300, parts)
    classic = [Worker(tmp_path, f"classic{i}", b, group, topic, "cooperative-sticky") for i in range(2)]
    workers = list(classic)
    try:
        wait_until("two classic members holding three partitions each",
                   lambda: all(len(w.assigned_now()) == 3 for w in classic), 60)
        assert _group_type(b, group) == "CLASSIC"
        modern = [Worker(tmp_path, f"consumer{i}", b, group, topic, "consumer:uniform") for i in range(2)]
        workers += modern
        wait_until("four members, each holding partitions, six in all",
                   lambda: all(w.assigned_now() for w in workers)
                   and sorted(p for w in workers for p in w.assigned_now()) == list(range(parts)), 90)
        assert _group_type(b, group) == "CONSUMER"
        d = describe(b, group)
        assert len(d.members) == 4, d
        produce_n(b, topic, 300, 1500, parts)
        wait_until("every member consuming", lambda: all(w.consumed() > 0 for w in workers), 60)

        modern[0].stop(signal.SIGTERM)
        assert modern[0].proc.returncode == 0
        classic[1].stop(signal.SIGKILL)
        produce_n(b, topic, 1800, 1200, parts)
        wait_until("the two live members holding every partition",
                   lambda: sorted(p for w in (classic[0], modern[1]) for p in w.assigned_now()) == list(range(parts)),
                   90)
        modern[1].stop(signal.SIGTERM)
        assert modern[1].proc.returncode == 0
        wait_until("the group classic again with its one member",
                   lambda: _group_type(b, group) == "CLASSIC", 30)
        late = Worker(tmp_path, "classic2", b, group, topic, "cooperative-sticky")
        workers.append(late)
        produce_n(b, topic, 3000, 1200, parts)
        ends = end_offsets(b, topic, parts)
        assert sum(ends.values()) == 4200
        wait_until("the two classic members splitting the partitions",
                   lambda: sorted(len(w.assigned_now()) for w in (classic[0], late)) == [3, 3], 90)
        wait_committed_to_ends(b, group, topic, ends, workers)
    finally:
        for w in workers:
            w.stop()
    stats = check_delivery(workers, ends)
    print(f"mixed: {stats}")
