"""Fetch from follower (KIP-392, issue 33): a 6-node cluster over three racks (`broker.rack` a: 1, 2;
b: 3, 4; c: 5, 6) with `replica.selector.class` = Kafka's RackAwareReplicaSelector, run once on
Frieda and once on Apache Kafka 4.4.0 (bench/kafka/run-kafka-cluster.sh, same racks, same setting)
with the same checks:

- a topic of 3 partitions, RF 3, created without an assignment, has a replica in every rack;
- a raw Fetch v11 to a partition's leader from a consumer in another replica's rack answers with
  that follower as `preferred_read_replica` and no records; from the leader's rack or without a
  rack it answers with the records and no preferred replica;
- a Fetch v11 sent straight to a follower returns the records up to the follower's high watermark
  (never past it, and that high watermark is not past the leader's);
- a confluent-kafka consumer with `client.rack` = c reads every acknowledged record, byte for byte
  at its offset, and librdkafka's statistics show each partition fetched from its rack-c replica;
- with that follower of one partition stopped, the consumer falls back to the partition's leader
  and reads every record produced after the stop.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as kw
from conftest import port_open, wait_until

RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
ROOT = Path(__file__).resolve().parents[2]
KAFKA_LIB = Path(os.environ.get("KAFKA44_LIB", ROOT / "target" / "kafka-4.4.0" / "lib"))
FETCH = 1
PARTITIONS = 3


# ---------------------------------------------------------------- the two clusters

class FriedaSix:
    def __init__(self, cluster):
        self.c = cluster(6, node_settings={i: {"broker.rack": r, "replica.selector.class": SELECTOR}
                                           for i, r in RACKS.items()})
        self.c.wait_brokers(set(RACKS))

    def port(self, i: int) -> int:
        return self.c.node(i).client_port

    @property
    def bootstrap(self) -> str:
        return self.c.bootstrap

    def stop(self, i: int) -> None:
        self.c.stop(i)

    def bootstrap_without(self, i: int) -> str:
        return ",".join(f"127.0.0.1:{self.port(j)}" for j in RACKS if j != i)

    def close(self) -> None:
        pass  # the cluster fixture stops the nodes


class KafkaSix:
    """Apache Kafka 4.4.0, 6 nodes (3 broker+controller, 3 broker), by bench/kafka's script."""

    def __init__(self, workdir: Path):
        if not (KAFKA_LIB / "kafka_2.13-4.4.0.jar").exists():
            pytest.fail(f"Kafka 4.4.0 jars not in {KAFKA_LIB} (scripts/test fetches them)")
        self.dir = workdir / "kafka-cluster"
        # 6 client + 3 controller ports at base + 100 i (+1): pick a free base.
        for _ in range(50):
            base = random.randrange(23000, 29000, 10)
            if not any(port_open(base + 100 * i + d) for i in range(1, 7) for d in (0, 1)):
                break
        self.base = base
        env = dict(os.environ, KAFKA_LIB=str(KAFKA_LIB), KAFKA_CLUSTER_DIR=str(self.dir),
                   KAFKA_CLUSTER_PORT_BASE=str(base), KAFKA_BROKER_HEAP_OPTS="-Xms256m -Xmx512m",
                   KAFKA_CLUSTER_RACKS=" ".join(RACKS[i] for i in range(1, 7)),
                   KAFKA_CLUSTER_EXTRA=f"replica.selector.class={SELECTOR}")
        self.env = env
        r = subprocess.run([str(ROOT / "bench/kafka/run-kafka-cluster.sh"), "6"], env=env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            self.close()
            raise AssertionError(f"Kafka cluster did not start:\n{r.stdout}\n{r.stderr}")

    def port(self, i: int) -> int:
        return self.base + 100 * i

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port(i)}" for i in range(1, 7))

    def bootstrap_without(self, i: int) -> str:
        return ",".join(f"127.0.0.1:{self.port(j)}" for j in RACKS if j != i)

    def stop(self, i: int) -> None:
        pid = int((self.dir / f"node-{i}.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not Path(f"/proc/{pid}").exists()
                   or Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z",
                   60, f"Kafka node {i} (pid {pid}) stopped")

    def close(self) -> None:
        # The baseline's own shutdown is not under test: all six stop at once, so its controlled
        # shutdowns would wait for a quorum that is going away (30 s); SIGKILL after 3 s.
        subprocess.run([str(ROOT / "bench/kafka/stop-kafka-cluster.sh")],
                       env={**self.env, "KAFKA_STOP_WAIT_S": "3"},
                       capture_output=True, timeout=120)


# Apache Kafka's six brokers take ~35 s to start and stop: the comparison runs with
# FRIEDA_KAFKA_COMPARE_SLOW=1 (scripts/compare-kafka), not in scripts/test's budget.
@pytest.fixture(params=["frieda"] + (["kafka"] if os.environ.get("FRIEDA_KAFKA_COMPARE_SLOW") == "1" else []))
def six(request, cluster, tmp_path):
    d = FriedaSix(cluster) if request.param == "frieda" else KafkaSix(tmp_path)
    try:
        yield d
    finally:
        d.close()


# ---------------------------------------------------------------- raw Fetch v11

def fetch_v11(port: int, topic: str, partition: int, offset: int, rack: str, leader_epoch: int = -1) -> dict:
    """One partition's answer to a consumer's Fetch v11 (min_bytes 0): error, high watermark,
    preferred read replica and the offsets of the records returned."""
    body = (kw.i32(-1) + kw.i32(0) + kw.i32(0) + kw.i32(1 << 20) + kw.i8(0) + kw.i32(0) + kw.i32(-1)
            + kw.i32(1) + kw.string(topic) + kw.i32(1)
            + kw.i32(partition) + kw.i32(leader_epoch) + kw.i64(offset) + kw.i64(-1) + kw.i32(1 << 20)
            + kw.i32(0) + kw.string(rack))
    s = kw.connect("127.0.0.1", port)
    try:
        r = kw.Reader(kw.request(s, kw.frame(kw.header_v1(FETCH, 11, 7) + body)))
    finally:
        s.close()
    assert r.i32() == 7
    r.i32()  # throttle
    assert r.i16() == 0  # top-level error
    r.i32()  # session id
    assert r.i32() == 1
    assert r.take(r.i16()).decode() == topic
    assert r.i32() == 1
    out = {"partition": r.i32(), "error": r.i16(), "hw": r.i64(), "lso": r.i64(), "log_start": r.i64()}
    n = r.i32()
    for _ in range(max(n, 0)):
        r.i64(), r.i64()
    out["preferred"] = r.i32()
    size = r.i32()
    records = r.take(size) if size > 0 else b""
    offsets = []
    pos = 0
    while len(records) - pos >= 61:
        base, length = int.from_bytes(records[pos:pos + 8], "big", signed=True), int.from_bytes(
            records[pos + 8:pos + 12], "big", signed=True)
        if pos + 12 + length > len(records):
            break
        last_delta = int.from_bytes(records[pos + 23:pos + 27], "big", signed=True)
        offsets += list(range(base, base + last_delta + 1))
        pos += 12 + length
    out["offsets"] = offsets
    return out


# ---------------------------------------------------------------- helpers

def partitions_of(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics[topic]
    return {p: (pm.leader, list(pm.replicas), list(pm.isrs)) for p, pm in t.partitions.items()}


def produce(bootstrap: str, topic: str, n: int, tag: str) -> dict[tuple[int, int], bytes]:
    """n records over the partitions, acks=all; {(partition, offset): value} of the acknowledged."""
    acked: dict[tuple[int, int], bytes] = {}
    errors = []

    def done(err, m):
        if err is None:
            acked[(m.partition(), m.offset())] = m.value()
        else:
            errors.append(err)

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=f"{tag}-{i}-".encode() + bytes([i % 256]) * 50, partition=i % PARTITIONS,
                  on_delivery=done)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    assert len(acked) == n
    return acked


class StatsConsumer:
    """A confluent-kafka consumer in `rack`, assigned every partition from offset 0; remembers the
    broker librdkafka last fetched each partition from (its statistics' `broker`)."""

    def __init__(self, bootstrap: str, topic: str, rack: str):
        self.fetched_from: dict[int, int] = {}
        self.topic = topic

        def stats(s: str) -> None:
            for p, st in json.loads(s).get("topics", {}).get(topic, {}).get("partitions", {}).items():
                if int(p) >= 0 and st.get("broker", -1) >= 0:
                    self.fetched_from[int(p)] = st["broker"]

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "frieda-unused", "client.rack": rack,
                           "enable.auto.commit": False, "auto.offset.reset": "error", "check.crcs": True,
                           "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 2000,
                           "statistics.interval.ms": 200, "stats_cb": stats})
        self.c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.got: dict[tuple[int, int], bytes] = {}

    def read_until(self, want: set[tuple[int, int]], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not want <= set(self.got) and time.monotonic() < deadline:
            m = self.c.poll(0.2)
            if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                continue
            assert not m.error(), m.error()
            self.got[(m.partition(), m.offset())] = m.value()
        missing = want - set(self.got)
        assert not missing, f"{len(missing)} acknowledged records not read, e.g. {sorted(missing)[:5]}"

    def wait_fetched_from(self, want: dict[int, int], timeout: float) -> None:
        """Polls (statistics arrive in poll) until the partitions in `want` are fetched from
        those brokers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.fetched_from.get(p) == b for p, b in want.items()):
                return
            m = self.c.poll(0.2)
            if m is not None and not m.error():
                self.got[(m.partition(), m.offset())] = m.value()
        raise AssertionError(f"partitions fetched from {self.fetched_from}, want {want}")

    def close(self) -> None:
        self.c.close()


# ---------------------------------------------------------------- the test

def test_consumers_read_from_their_racks_follower(six, topic_name):
    topic = topic_name()
    adm = AdminClient({"bootstrap.servers": six.bootstrap})
    adm.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=3)],
                      operation_timeout=30, request_timeout=40)[topic].result(60)
    wait_until(lambda: (lambda ps: len(ps) == PARTITIONS and all(
        lead >= 0 and len(isr) == 3 for lead, _, isr in ps.values()))(partitions_of(six.bootstrap, topic)),
        60, f"{topic}: a leader and 3 in-sync replicas per partition")
    parts = partitions_of(six.bootstrap, topic)
    for p, (_, replicas, _) in parts.items():
        assert sorted(RACKS[r] for r in replicas) == ["a", "b", "c"], (p, replicas)

    acked = produce(six.bootstrap, topic, 300, "before")
    ends = {p: 1 + max(o for (q, o) in acked if q == p) for p in range(PARTITIONS)}

    # The leader names the follower of the consumer's rack, and reads nothing for it.
    in_rack = {p: {RACKS[r]: r for r in replicas} for p, (_, replicas, _) in parts.items()}
    for p, (leader, replicas, _) in parts.items():
        wait_until(lambda: fetch_v11(six.port(leader), topic, p, 0, "")["hw"] == ends[p], 30,
                   f"partition {p}: the leader's high watermark at {ends[p]}")
        for rack, r in in_rack[p].items():
            ans = fetch_v11(six.port(leader), topic, p, 0, rack)
            assert ans["error"] == 0, ans
            if r == leader:
                assert ans["preferred"] == -1 and ans["offsets"], (p, rack, ans)
            else:
                assert ans["preferred"] == r and ans["offsets"] == [], (p, rack, r, ans)
        ans = fetch_v11(six.port(leader), topic, p, 0, "")
        assert ans["preferred"] == -1 and ans["offsets"][0] == 0, ans
        # Straight to each follower: records up to its high watermark, and no further.
        for r in replicas:
            if r == leader:
                continue
            ans = fetch_v11(six.port(r), topic, p, 0, "c")
            assert ans["error"] == 0 and ans["preferred"] == -1, (p, r, ans)
            assert ans["hw"] <= ends[p] and all(o < ans["hw"] for o in ans["offsets"]), (p, r, ans)
            wait_until(lambda: fetch_v11(six.port(r), topic, p, 0, "c")["hw"] == ends[p], 30,
                       f"partition {p}: follower {r}'s high watermark at {ends[p]}")
        # A consumer's fetch names the epoch it knows: an older one is fenced on a follower too.
        ep = [r for r in replicas if r != leader][0]
        assert fetch_v11(six.port(ep), topic, p, 0, "c", leader_epoch=10_000)["error"] == 75  # UNKNOWN_LEADER_EPOCH

    sc = StatsConsumer(six.bootstrap, topic, "c")
    try:
        sc.read_until(set(acked), 60)
        for k, v in acked.items():
            assert sc.got[k] == v, k
        assert set(sc.got) == set(acked), sorted(set(sc.got) - set(acked))[:5]
        sc.wait_fetched_from({p: in_rack[p]["c"] for p in range(PARTITIONS)}, 10)

        # Stop the rack-c follower of a partition led elsewhere: that partition falls back to its
        # leader, and every record produced afterwards is read.
        p, r = next((p, in_rack[p]["c"]) for p, (leader, _, _) in parts.items() if in_rack[p]["c"] != leader)
        six.stop(r)
        later = produce(six.bootstrap_without(r), topic, 150, "after")
        sc.read_until(set(later), 90)
        parts_now = partitions_of(six.bootstrap_without(r), topic)
        for k, v in later.items():
            assert sc.got[k] == v, k
        sc.wait_fetched_from({p: parts_now[p][0]}, 10)
    finally:
        sc.close()
