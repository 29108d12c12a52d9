"""Committed offsets in a cluster need `__consumer_offsets`' own `min.insync.replicas` (Kafka
writes the offsets topic with acks=-1; the topic takes the broker's `min.insync.replicas`, 2 here,
and `offsets.topic.replication.factor=3`).

Raw FindCoordinator v1, OffsetCommit v2 (a "simple" commit: generation -1, no member) and
OffsetFetch v1 go to the group's coordinator itself, so the test sees each answer's error code
(client libraries retry COORDINATOR_NOT_AVAILABLE and hide it).
"""

from __future__ import annotations

import time
import uuid

import cluster_wire as cw
import kafka_wire as kw

FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH = 10, 8, 9
COORDINATOR_NOT_AVAILABLE = 15
OFFSETS = "__consumer_offsets"


def _call(port: int, api: int, version: int, body: bytes, timeout: float = 15) -> kw.Reader:
    s = kw.connect("127.0.0.1", port, timeout=timeout)
    try:
        payload = kw.request(s, kw.frame(kw.header_v1(api, version, 21) + body), timeout=timeout)
    finally:
        s.close()
    r = kw.Reader(payload)
    assert r.i32() == 21  # correlation id
    return r


def _string(r: kw.Reader) -> str | None:
    n = r.i16()
    return None if n < 0 else r.take(n).decode()


def find_coordinator(port: int, group: str) -> tuple[int, int]:
    """FindCoordinator v1 (group) -> (error code, node id)."""
    r = _call(port, FIND_COORDINATOR, 1, kw.string(group) + kw.i8(0))
    r.i32()  # throttle
    err = r.i16()
    _string(r)  # error message
    return err, r.i32()


def offset_commit(port: int, group: str, topic: str, partition: int, offset: int) -> int:
    """OffsetCommit v2 of one partition, generation -1 and no member -> the partition's error."""
    body = kw.string(group) + kw.i32(-1) + kw.string("") + kw.i64(-1)
    body += kw.i32(1) + kw.string(topic) + kw.i32(1) + kw.i32(partition) + kw.i64(offset) + kw.string("m")
    r = _call(port, OFFSET_COMMIT, 2, body, timeout=30)
    assert r.i32() == 1
    assert _string(r) == topic
    assert r.i32() == 1
    assert r.i32() == partition
    return r.i16()


def offset_fetch(port: int, group: str, topic: str, partition: int) -> tuple[int, int]:
    """OffsetFetch v1 of one partition -> (committed offset, error)."""
    body = kw.string(group) + kw.i32(1) + kw.string(topic) + kw.i32(1) + kw.i32(partition)
    r = _call(port, OFFSET_FETCH, 1, body)
    assert r.i32() == 1
    assert _string(r) == topic
    assert r.i32() == 1
    assert r.i32() == partition
    offset = r.i64()
    _string(r)  # metadata
    return offset, r.i16()


def java_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group: str, n: int) -> int:
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % n


def test_a_commit_without_min_insync_replicas_is_neither_acknowledged_nor_fetched(cluster):
    """5 nodes, all voters (pausing two keeps the metadata quorum), offsets RF 3, 6 partitions,
    min.insync.replicas=2. A commit to the group's coordinator succeeds and is fetched. Both
    followers of the group's `__consumer_offsets` partition are paused (SIGSTOP by PID) until the
    ISR is the coordinator alone: a commit is then answered COORDINATOR_NOT_AVAILABLE (Kafka's
    mapping of NOT_ENOUGH_REPLICAS) and OffsetFetch keeps answering the earlier offset, also
    after the followers resume (before: the offsets log waited for 1 in-sync replica, so the
    commit was acknowledged by the coordinator alone and served). Once the ISR is full again a
    commit succeeds."""
    c = cluster(n=5, voters=5)
    topic = "t-offsets"
    assert cw.create_topic(c.node(1).client_port, topic, 1, 3)[0] == 0
    c.wait_topic(topic, 1)
    # FindCoordinator creates __consumer_offsets
    c.wait_until(lambda: find_coordinator(c.node(1).client_port, "any")[0] == 0, 30, "__consumer_offsets")
    c.wait_full_isr(OFFSETS)
    # A group whose partition's followers do not include the active controller: pausing the
    # controller would also cost the coordinator its lease for a moment (NOT_COORDINATOR).
    ctrl = c.controller()
    n = c.setting("offsets.topic.num.partitions")
    parts = c.partitions(OFFSETS)
    part = next(q for q in range(n) if ctrl not in set(parts[q].replicas) - {parts[q].leader})
    group = next(g for g in (f"g-{uuid.uuid4().hex[:8]}" for _ in range(10000)) if offsets_partition(g, n) == part)
    coordinator = c.wait_until(
        lambda: (lambda r: r[1] if r[0] == 0 else None)(find_coordinator(c.node(1).client_port, group)),
        30, f"a coordinator for {group}")
    assert c.leader_of(OFFSETS, part) == coordinator, "the coordinator leads the group's partition"
    followers = [b for b in c.replicas_of(OFFSETS, part) if b != coordinator]
    assert len(followers) == 2 and ctrl not in followers, (c.replicas_of(OFFSETS, part), ctrl)
    port = c.node(coordinator).client_port

    # (NOT_COORDINATOR until the new leader has loaded the partition)
    c.wait_until(lambda: offset_commit(port, group, topic, 0, 10) == 0, 30, "a first commit")
    assert offset_fetch(port, group, topic, 0) == (10, 0)

    for f in followers:
        c.pause(f)
    t0 = time.monotonic()
    c.wait_until(lambda: c.raw_metadata(coordinator, [OFFSETS]).topics[OFFSETS][1][part].isr == [coordinator],
                 30, f"the ISR of {OFFSETS}-{part} shrunk to the coordinator {coordinator}")
    print(f"ISR of {OFFSETS}-{part} is [{coordinator}] {time.monotonic() - t0:.1f}s after pausing {followers}")
    err = offset_commit(port, group, topic, 0, 20)
    assert err == COORDINATOR_NOT_AVAILABLE, \
        f"a commit with 1 of min.insync.replicas=2 in sync was answered {err}, not COORDINATOR_NOT_AVAILABLE"
    assert offset_fetch(port, group, topic, 0) == (10, 0), "the refused commit is served"

    for f in followers:
        c.resume(f)
    c.wait_until(lambda: sorted(c.raw_metadata(coordinator, [OFFSETS]).topics[OFFSETS][1][part].isr)
                 == sorted([coordinator] + followers), 60, f"the full ISR of {OFFSETS}-{part} again")
    assert offset_fetch(port, group, topic, 0) == (10, 0), "the refused commit is served after the resume"
    c.wait_until(lambda: offset_commit(port, group, topic, 0, 30) == 0, 30, "a commit succeeding again")
    assert offset_fetch(port, group, topic, 0) == (30, 0)
