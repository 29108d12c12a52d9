"""Consumer groups: subscribe + commits with member churn, static membership, committed offsets
across broker restarts, kafka-python groups, group admin (list, describe, delete, offsets).

Each churn test runs its members as separate processes (group_worker.py) so one can be
SIGKILLed; a dead member's partitions come back after its session timeout (6 s).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka import ConsumerGroupState

from helpers import LOG_LEVEL, admin, create_topic, producer, wait_until

WORKER = Path(__file__).with_name("group_worker.py")


def produce_n(bootstrap: str, topic: str, start: int, n: int, partitions: int) -> None:
    p = producer(bootstrap)
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % partitions)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe-watermarks", "log_level": LOG_LEVEL})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        c.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    a = admin(bootstrap)  # keep the client alive until its future completes
    fut = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])])
    res = fut[group].result(timeout=10)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def wait_committed_to_ends(bootstrap: str, group: str, topic: str, ends: dict[int, int],
                           workers: list["Worker"], timeout: float = 90) -> None:
    """Waits until the group's committed offsets equal `ends`; on a timeout the failure names the
    partitions still behind and each worker's last failed commits (its `E` lines)."""
    last: dict[int, int] = {}

    def reached() -> bool:
        last.update(committed(bootstrap, group, topic, len(ends)))
        return last == ends

    try:
        wait_until("committed offsets reaching the end offsets", reached, timeout, every=0.5)
    except AssertionError as e:
        behind = {p: (last.get(p), end) for p, end in ends.items() if last.get(p) != end}
        errors = {w.name: [" ".join(l) for l in w.lines() if l[0] == "E"][-5:] for w in workers}
        raise AssertionError(f"{e}: behind (committed, end): {behind}; last failed commits: {errors}") from None


def describe(bootstrap: str, group: str):
    a = admin(bootstrap)  # keep the client alive until its future completes
    return a.describe_consumer_groups([group])[group].result(timeout=10)


class Worker:
    def __init__(self, tmp: Path, name: str, bootstrap: str, group: str, topic: str, assignor: str,
                 instance: str | None = None):
        self.name = name
        self.events = tmp / f"{name}.events"
        self.events.touch()
        args = [sys.executable, str(WORKER), bootstrap, group, topic, assignor, str(self.events)]
        if instance:
            args.append(instance)
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(tmp / f"{name}.stderr", "w"))

    def lines(self) -> list[list[str]]:
        return [l.split() for l in self.events.read_text().splitlines() if l.strip()]

    def consumed(self) -> int:
        return sum(1 for l in self.lines() if l[0] == "C")

    def assigned_now(self) -> set[int]:
        """Partitions currently held, from the assign/revoke events."""
        held: set[int] = set()
        for l in self.lines():
            parts = {int(p) for p in l[1].split(",")} if len(l) > 1 and l[1] else set()
            if l[0] == "A":
                held |= parts
            elif l[0] == "R":
                held -= parts
        return held

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def check_delivery(workers: list[Worker], ends: dict[int, int]) -> dict:
    """Every offset below the end was consumed; a record consumed more than once was, every time
    but the last, consumed by a member that did not commit past it before the record came again
    (it died, or lost the partition or its generation before its commit): the only duplicates
    at-least-once delivery allows."""
    consumptions = collections.defaultdict(list)  # (p, o) -> [(t, worker index)]
    commits = collections.defaultdict(list)  # (worker, p) -> [(t, next offset)]
    for wi, w in enumerate(workers):
        for l in w.lines():
            if l[0] == "C":
                consumptions[(int(l[1]), int(l[2]))].append((int(l[3]), wi))
            elif l[0] == "K":
                commits[(wi, int(l[1]))].append((int(l[3]), int(l[2])))
    missing = [(p, o) for p, end in ends.items() for o in range(end) if (p, o) not in consumptions]
    assert not missing, f"{len(missing)} records never consumed, e.g. {missing[:10]}"
    bad = []
    dups = 0
    for (p, o), events in consumptions.items():
        if len(events) < 2:
            continue
        dups += len(events) - 1
        events.sort()
        for (t, wi), (t_again, _) in zip(events, events[1:]):
            covered = any(t <= ct < t_again and nxt > o for ct, nxt in commits[(wi, p)])
            if covered:
                bad.append((p, o, workers[wi].name))
    assert not bad, f"records consumed again although a member had committed past them: {bad[:10]}"
    return {"duplicates": dups, "records": sum(ends.values())}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_group_churn_leave_kill_join_every_record_consumed(broker, topic_name, tmp_path, assignor):
    topic, group, parts = topic_name(), f"g-churn-{assignor}", 6
    create_topic(broker.bootstrap, topic, partitions=parts)
    produce_n(broker.bootstrap, topic, 0, 300, parts)
    workers = [Worker(tmp_path, f"w{i}", broker.bootstrap, group, topic, assignor) for i in range(3)]
    try:
        # All three share the six partitions and make progress.
        wait_until("three members holding two partitions each",
                   lambda: all(len(w.assigned_now()) == 2 for w in workers), 60)
        produce_n(broker.bootstrap, topic, 300, 2700, parts)
        wait_until("every member consuming", lambda: all(w.consumed() > 0 for w in workers), 60)
        # One leaves cleanly, one is killed (its session must expire), one new member joins,
        # while more records arrive.
        workers[0].stop(signal.SIGTERM)
        assert workers[0].proc.returncode == 0
        workers[1].stop(signal.SIGKILL)
        workers.append(Worker(tmp_path, "w3", broker.bootstrap, group, topic, assignor))
        produce_n(broker.bootstrap, topic, 3000, 3000, parts)
        ends = end_offsets(broker.bootstrap, topic, parts)
        assert sum(ends.values()) == 6000
        # The survivors take over everything, including the killed member's partitions.
        wait_committed_to_ends(broker.bootstrap, group, topic, ends, workers)
        wait_until("the two live members splitting the partitions",
                   lambda: sorted(len(w.assigned_now()) for w in workers[2:]) == [3, 3], 30)
        d = describe(broker.bootstrap, group)
        assert d.state == ConsumerGroupState.STABLE
        assert len(d.members) == 2
    finally:
        for w in workers:
            w.stop()
    stats = check_delivery(workers, ends)
    print(f"{assignor}: {stats}")


def _static_consumer(bootstrap, group, topic, instance, assigns):
    def on_assign(c, parts):
        assigns.append(sorted(p.partition for p in parts))

    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range", "log_level": LOG_LEVEL,
    })
    c.subscribe([topic], on_assign=on_assign)
    return c


@pytest.mark.timeout(120)
def test_static_member_restart_gets_its_partitions_back_without_rebalance(broker, topic_name):
    topic, group, parts = topic_name(), "g-static", 6
    create_topic(broker.bootstrap, topic, partitions=parts)
    produce_n(broker.bootstrap, topic, 0, 60, parts)
    assigns = {i: [] for i in ("s1", "s2", "s3")}
    consumers = {i: _static_consumer(broker.bootstrap, group, topic, i, assigns[i]) for i in assigns}

    def poll_all(cs):
        for c in cs.values():
            c.poll(0.05)

    def settled():
        poll_all(consumers)
        held = [c.assignment() for c in consumers.values()]
        return all(len(h) == 2 for h in held) and \
            describe(broker.bootstrap, group).state == ConsumerGroupState.STABLE
    wait_until("three static members with two partitions each", settled, 60)
    before = {i: sorted(tp.partition for tp in c.assignment()) for i, c in consumers.items()}
    calls_before = {i: len(a) for i, a in assigns.items()}
    members_before = {m.group_instance_id: m.member_id for m in
                      describe(broker.bootstrap, group).members}
    # A static member does not send LeaveGroup when it closes (KIP-345): restart s1.
    consumers["s1"].close()
    assigns["s1b"] = []
    consumers["s1"] = _static_consumer(broker.bootstrap, group, topic, "s1", assigns["s1b"])
    wait_until("the restarted member holding partitions", lambda: (poll_all(consumers), assigns["s1b"])[1], 30)
    # Keep everyone polling for a while: no rebalance may happen.
    t_end = time.monotonic() + 4
    while time.monotonic() < t_end:
        poll_all(consumers)
    assert assigns["s1b"] == [before["s1"]], (assigns["s1b"], before)
    assert {i: len(assigns[i]) for i in ("s2", "s3")} == {i: calls_before[i] for i in ("s2", "s3")}, \
        "the other members were rebalanced"
    for i in ("s2", "s3"):
        assert sorted(tp.partition for tp in consumers[i].assignment()) == before[i]
    d = describe(broker.bootstrap, group)
    assert d.state == ConsumerGroupState.STABLE
    members_after = {m.group_instance_id: m.member_id for m in d.members}
    assert set(members_after) == {"s1", "s2", "s3"}
    assert members_after["s1"] != members_before["s1"], "the rejoin has a new member id"
    assert {k: members_after[k] for k in ("s2", "s3")} == {k: members_before[k] for k in ("s2", "s3")}
    for c in consumers.values():
        c.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_committed_offsets_survive_broker_restart(own_broker, topic_name, sig):
    b = own_broker
    topic, group, parts = topic_name(), "g-restart", 3
    create_topic(b.bootstrap, topic, partitions=parts)
    produce_n(b.bootstrap, topic, 0, 300, parts)

    def group_consumer():
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "log_level": LOG_LEVEL})
        c.subscribe([topic])
        return c

    # Consume 200 of the 300 records, committing each.
    c = group_consumer()
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 200 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append((m.partition(), m.offset()))
            c.commit(message=m, asynchronous=False)
    assert len(seen) == 200
    want = collections.Counter()
    for p, o in seen:
        want[p] = max(want[p], o + 1)
    c.close()
    assert committed(b.bootstrap, group, topic, parts) == {p: want.get(p, -1001) for p in range(parts)} or \
        all(committed(b.bootstrap, group, topic, parts)[p] == want[p] for p in want)

    b.restart(sig)
    got = committed(b.bootstrap, group, topic, parts)
    for p in want:
        assert got[p] == want[p], (got, want)
    produce_n(b.bootstrap, topic, 300, 60, parts)
    ends = end_offsets(b.bootstrap, topic, parts)
    # The resumed group reads exactly what came after its commits.
    c = group_consumer()
    rest = []
    expect = sum(ends[p] - want.get(p, 0) for p in range(parts))
    deadline = time.monotonic() + 30
    while len(rest) < expect and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            rest.append((m.partition(), m.offset()))
    extra_deadline = time.monotonic() + 2
    while time.monotonic() < extra_deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            rest.append((m.partition(), m.offset()))
    c.close()
    assert sorted(rest) == sorted((p, o) for p in range(parts) for o in range(want.get(p, 0), ends[p]))
    assert set(rest).isdisjoint(seen)


@pytest.mark.timeout(120)
def test_kafka_python_group_subscribe_and_commit(broker, topic_name):
    from kafka import KafkaConsumer, TopicPartition as KTP

    topic, group, parts = topic_name(), "g-kpy", 4
    create_topic(broker.bootstrap, topic, partitions=parts)
    produce_n(broker.bootstrap, topic, 0, 400, parts)
    consumers = [KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                               enable_auto_commit=False, auto_offset_reset="earliest",
                               session_timeout_ms=6000, heartbeat_interval_ms=500,
                               consumer_timeout_ms=1000) for _ in range(2)]
    seen = collections.Counter()
    deadline = time.monotonic() + 60
    while sum(seen.values()) < 400 and time.monotonic() < deadline:
        for c in consumers:
            batch = c.poll(timeout_ms=200)
            for tp, msgs in batch.items():
                for m in msgs:
                    seen[(m.partition, m.offset)] += 1
            if batch:
                c.commit()
    assert len(seen) == 400, len(seen)
    # Both members took part once the group settled.
    wait_until("two kafka-python members with two partitions each",
               lambda: ([c.poll(timeout_ms=100) for c in consumers],
                        sorted(len(c.assignment()) for c in consumers) == [2, 2])[1], 30)
    for c in consumers:
        c.commit()
    assert committed(broker.bootstrap, group, topic, parts) == end_offsets(broker.bootstrap, topic, parts)
    got = {p: consumers[0].committed(KTP(topic, p)) for p in range(parts)}
    assert got == end_offsets(broker.bootstrap, topic, parts)
    for c in consumers:
        c.close()


@pytest.mark.timeout(120)
def test_group_admin_list_describe_delete_and_simple_commits(broker, topic_name):
    topic, parts = topic_name(), 2
    create_topic(broker.bootstrap, topic, partitions=parts)
    produce_n(broker.bootstrap, topic, 0, 20, parts)
    a = admin(broker.bootstrap)
    # An assign()-style consumer commits with generation -1 (no membership).
    simple = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-simple",
                       "enable.auto.commit": False, "log_level": LOG_LEVEL})
    simple.assign([TopicPartition(topic, 0, 0)])
    simple.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    assert simple.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 7
    simple.close()
    # A live subscribed group.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-live", "client.id": "live-client",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": LOG_LEVEL})
    c.subscribe([topic])
    wait_until("assignment", lambda: (c.poll(0.2), len(c.assignment()) == parts)[1], 30)
    listed = {g.group_id: g for g in a.list_consumer_groups().result(10).valid}
    assert {"g-simple", "g-live"} <= set(listed)
    assert listed["g-live"].state == ConsumerGroupState.STABLE
    assert listed["g-simple"].state == ConsumerGroupState.EMPTY
    stable_only = a.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(10).valid
    assert {g.group_id for g in stable_only} >= {"g-live"} and "g-simple" not in {g.group_id for g in stable_only}
    d = a.describe_consumer_groups(["g-live"])["g-live"].result(10)
    assert d.state == ConsumerGroupState.STABLE and len(d.members) == 1
    m = d.members[0]
    assert m.client_id == "live-client"
    assert sorted(tp.partition for tp in m.assignment.topic_partitions) == [0, 1]
    assert d.partition_assignor == "range" or d.partition_assignor  # the selected protocol
    # A non-empty group cannot be deleted; an empty one can, with its offsets.
    with pytest.raises(KafkaException) as e:
        a.delete_consumer_groups(["g-live"])["g-live"].result(10)
    assert "NON_EMPTY_GROUP" in str(e.value) or "not empty" in str(e.value).lower()
    c.close()
    a.delete_consumer_groups(["g-simple"])["g-simple"].result(10)
    assert committed(broker.bootstrap, "g-simple", topic, parts) == {0: -1001, 1: -1001}
    with pytest.raises(KafkaException):
        a.delete_consumer_groups(["g-simple"])["g-simple"].result(10)
    assert "g-simple" not in {g.group_id for g in a.list_consumer_groups().result(10).valid}
