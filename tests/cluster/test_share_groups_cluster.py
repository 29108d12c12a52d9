"""Share groups (KIP-932) on a 3-node cluster while brokers are SIGKILLed: three Kafka 4.4
`KafkaShareConsumer`s (tests/cluster/tools/ShareWorker.java) accept every record of a 3-partition
topic (RF 3, min.insync.replicas 2) while the share group's coordinator and then a partition
leader are SIGKILLed and restarted, and then one of the consumers is SIGKILLed. Afterwards every record the producer got acknowledged was
accepted at least once, and no record was delivered again after a consumer's acknowledgement of
it was reported stored (commitSync without an error for its partition). The same on a diskless
topic (issue 60) with SeaweedFS, where the batch coordinator's broker is SIGKILLed too.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from test_cluster import create
from test_diskless import (SizedProducer, assert_one_producer_read_back, create_diskless, diskless_leader,
                           store)  # noqa: F401 (store: a fixture)
from test_kafka_tools_cluster import classpath, java  # noqa: F401 (fixture)
from test_offsets_min_isr import find_coordinator
from conftest import REPO_ROOT, port_open, wait_until

WORKER = REPO_ROOT / "tests" / "cluster" / "tools" / "ShareWorker.java"


class Worker:
    """One ShareWorker process; its GOT/ACK lines are collected as they come."""

    def __init__(self, cp: str, bootstrap: str, group: str, topic: str, name: str, log):
        self.name = name
        self.log = log
        self.proc = subprocess.Popen(
            ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err",
             "-cp", cp, str(WORKER), bootstrap, group, topic, name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        self.got: list[tuple[int, int, int, str, int]] = []  # (ms, partition, offset, value, delivery count)
        self.acked: list[tuple[int, str]] = []  # (ms, value)
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            f = line.split()
            with self.lock:
                if f[:1] == ["GOT"]:
                    self.got.append((int(f[1]), int(f[2]), int(f[3]), f[4], int(f[5])))
                elif f[:1] == ["ACK"]:
                    self.acked.append((int(f[1]), f[2]))
                elif f[:1] == ["ERR"]:
                    self.errors.append(line.strip())

    def kill(self):
        """SIGKILL: the consumer dies mid-batch, holding records it acquired."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc.poll() is not None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def diagnose(workers, produced: set[str]) -> str:
    acked = acked_values(workers)
    missing = sorted(produced - acked, key=lambda v: int(v[1:]))
    lines = [f"{len(produced)} produced, {len(acked & produced)} accepted, {len(missing)} missing: {missing[:20]}"]
    for w in workers:
        with w.lock:
            last_got = w.got[-1] if w.got else None
            lines.append(f"{w.name}: alive={w.proc.poll() is None} got={len(w.got)} acked={len(w.acked)} "
                         f"last got={last_got} errors={w.errors[-3:]}")
        try:
            tail = open(w.log).read()[-1500:]
        except OSError:
            tail = ""
        lines.append(f"{w.name} stderr tail:\n{tail}")
    return "\n".join(lines)


def acked_values(workers) -> set[str]:
    out = set()
    for w in workers:
        with w.lock:
            out.update(v for _, v in w.acked)
    return out


KAFKA_LIB = Path(os.environ.get("KAFKA44_LIB", REPO_ROOT / "target" / "kafka-4.4.0" / "lib"))


class KafkaThree:
    """Apache Kafka 4.4.0 on 3 broker+controller nodes (bench/kafka/run-kafka-cluster.sh), with
    the few methods of the cluster fixture the scenario uses, so the same test code runs on it."""

    class _Node:
        def __init__(self, port: int):
            self.client_port = port

    def __init__(self, workdir: Path):
        if not (KAFKA_LIB / "kafka_2.13-4.4.0.jar").exists():
            pytest.fail(f"Kafka 4.4.0 jars not in {KAFKA_LIB} (scripts/test fetches them)")
        self.dir = workdir / "kafka-cluster"
        for _ in range(50):
            base = random.randrange(23000, 29000, 10)
            if not any(port_open(base + 100 * i + d) for i in range(1, 4) for d in (0, 1)):
                break
        self.base = base
        self.env = dict(os.environ, KAFKA_LIB=str(KAFKA_LIB), KAFKA_CLUSTER_DIR=str(self.dir),
                        KAFKA_CLUSTER_PORT_BASE=str(base), KAFKA_BROKER_HEAP_OPTS="-Xms256m -Xmx512m")
        r = subprocess.run([str(REPO_ROOT / "bench/kafka/run-kafka-cluster.sh"), "3"], env=self.env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            self.close()
            raise AssertionError(f"Kafka cluster did not start:\n{r.stdout}\n{r.stderr}")
        self.wait_until(lambda: len(self.admin().list_topics(timeout=5).brokers) == 3, 60, "3 Kafka brokers")

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.base + 100 * i}" for i in range(1, 4))

    def running(self) -> list[int]:
        return [i for i in range(1, 4) if port_open(self.base + 100 * i)]

    def node(self, i: int):
        return self._Node(self.base + 100 * i)

    def wait_until(self, pred, timeout: float, what: str = "condition", interval: float = 0.1):
        return wait_until(pred, timeout, what, interval)

    def admin(self, via=None):
        from confluent_kafka.admin import AdminClient
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def wait_topic(self, name: str, partitions: int):
        def ready():
            t = self.admin().list_topics(name, timeout=5).topics.get(name)
            return t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values())
        return self.wait_until(ready, 60, f"{name} ready")

    def leader_of(self, topic: str, partition: int) -> int:
        return self.admin().list_topics(topic, timeout=10).topics[topic].partitions[partition].leader

    def kill(self, i: int) -> None:
        pid = int((self.dir / f"node-{i}.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        self.wait_until(lambda: not port_open(self.base + 100 * i), 30, f"Kafka node {i} gone")

    def start(self, i: int) -> None:
        d = self.dir / f"node-{i}"
        proc = subprocess.Popen(
            ["java", "-Xms256m", "-Xmx512m", f"-Dkafka.logs.dir={d}/logs",
             f"-Dlog4j2.configurationFile={d}/log4j2.properties", "-cp", f"{KAFKA_LIB}/*", "kafka.Kafka",
             str(d / "server.properties")],
            stdout=open(d / "logs" / "kafka.out", "a"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        (self.dir / f"node-{i}.pid").write_text(str(proc.pid))
        self.wait_until(lambda: port_open(self.base + 100 * i), 60, f"Kafka node {i} listening")

    def close(self) -> None:
        subprocess.run([str(REPO_ROOT / "bench/kafka/stop-kafka-cluster.sh")],
                       env={**self.env, "KAFKA_STOP_WAIT_S": "3"}, capture_output=True, timeout=120)


# The same scenario on Apache Kafka 4.4.0 with FRIEDA_SHARE_KAFKA_COMPARE=1 (about 2 min; not in
# scripts/test's time budget).
@pytest.fixture(params=["frieda"] + (["kafka"] if os.environ.get("FRIEDA_SHARE_KAFKA_COMPARE") == "1" else []))
def three(request, cluster, tmp_path):
    if request.param == "frieda":
        yield cluster(3)
        return
    k = KafkaThree(tmp_path)
    try:
        yield k
    finally:
        k.close()


def kill_and_restart(c, node: int, what: str) -> None:
    """SIGKILL ``node`` (by PID), and start it again 3 s later."""
    print(f"SIGKILL {what}, node {node}")
    c.kill(node)
    time.sleep(3)
    c.start(node)


def share_coordinator(c, group: str) -> int:
    """The node coordinating share group ``group`` (FindCoordinator)."""
    err, coordinator = find_coordinator(c.node(c.running()[0]).client_port, group)
    assert err == 0, err
    return coordinator


@pytest.mark.timeout(400)
def test_share_group_accepts_every_record_once_through_sigkills_of_the_coordinator_and_a_leader(
        three, topic_name, classpath, tmp_path):
    c = three
    topic = topic_name("jobs")
    create(c, topic, partitions=3, rf=3, config={"min.insync.replicas": "2"})
    group = "workers-" + topic
    share_scenario(c, topic, group, classpath, tmp_path, faults=[
        (0.25, lambda: kill_and_restart(c, share_coordinator(c, group), "the share group's coordinator")),
        (0.5, lambda: kill_and_restart(c, c.leader_of(topic, 1), f"the leader of {topic}-1")),
    ])


def share_scenario(c, topic: str, group: str, classpath: str, tmp_path: Path, faults) -> None:
    """Three ShareWorkers of ``group`` accept every record of ``topic`` (3 partitions) while
    3,000 records are produced; each of ``faults`` ``(fraction, action)`` runs once that
    fraction of the records is accepted, then a worker is SIGKILLed holding records. Every
    acknowledged record is accepted at least once, the group's lag ends 0, and no record is
    delivered again after its acceptance was reported stored."""
    workers = [Worker(classpath, c.bootstrap, group, topic, f"w{i}", tmp_path / f"w{i}.stderr") for i in range(3)]
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 120000, "linger.ms": 5})
    produced: set[str] = set()
    failed: list[str] = []
    stop = threading.Event()
    # The last quarter waits for the consumer SIGKILL below, so there are records to hold.
    last_quarter = threading.Event()

    def cb(err, msg):
        if err is None:
            produced.add(msg.value().decode())
        else:
            failed.append(str(err))

    try:
        # A new share group starts at the log end: sentinels until every partition's reached a worker.
        # Each sentinel's value is unique, like every record's (the checks below go by value).
        deadline = time.monotonic() + 90
        for r in range(1_000_000):
            for p in range(3):
                producer.produce(topic, value=b"sentinel-%d-%d" % (p, r), partition=p)
            producer.flush(30)
            time.sleep(0.5)
            seen = {p for w in workers for (_, p, _, v, _) in list(w.got) if v.startswith("sentinel")}
            if len(seen) == 3:
                break
            assert time.monotonic() < deadline, f"the workers got no record of every partition: {seen}"

        n = 3000

        def produce():
            for i in range(n):
                if i == 3 * n // 4:
                    producer.flush(120)
                    last_quarter.wait(240)
                producer.produce(topic, value=b"v%d" % i, partition=i % 3, on_delivery=cb)
                if i % 100 == 99:
                    producer.poll(0)
                    time.sleep(0.05)
                if stop.is_set():
                    break
            producer.flush(120)

        pt = threading.Thread(target=produce, daemon=True)
        pt.start()

        def accepted(k: int) -> bool:
            return len([v for v in acked_values(workers) if v.startswith("v")]) >= k

        for fraction, action in faults:
            k = int(n * fraction)
            c.wait_until(lambda: accepted(k), 120, f"{k} records accepted")
            action()

        # A consumer SIGKILLed mid-batch: the records it held come back to the other two (its
        # connections close, so its share sessions end and its records are released).
        c.wait_until(lambda: accepted(3 * n // 4), 120, f"{3 * n // 4} records accepted")

        def held(w, last: int = 200) -> set[str]:
            """Records w got and has not reported accepted (acquired, in its hands)."""
            with w.lock:
                done = {v for _, v in w.acked}
                return {v for (_, _, _, v, _) in w.got[-last:] if v.startswith("v") and v not in done}

        # Killed while it holds records, when it does within 10 s (it may be between batches).
        last_quarter.set()
        deadline = time.monotonic() + 10
        while not held(workers[0]) and time.monotonic() < deadline:
            time.sleep(0.002)
        workers[0].kill()
        workers[0].reader.join(10)
        held_at_kill = held(workers[0], last=len(workers[0].got))
        print(f"SIGKILL consumer {workers[0].name}, holding {len(held_at_kill)} records")

        pt.join(180)
        assert not failed, failed[:5]
        assert len(produced) == n, f"{len(produced)} of {n} produced"
        lag_checked = [0.0, None]

        def all_accepted() -> bool:
            """Every record reported accepted; or the only ones not are among those the killed
            consumer held, and the group counts every record done (lag 0 on each partition):
            its last acknowledgement was stored, with nobody left to report it."""
            missing = produced - acked_values(workers)
            if not missing:
                return True
            if not missing <= held_at_kill or time.monotonic() - lag_checked[0] < 3:
                return False
            lag_checked[0] = time.monotonic()
            lag_checked[1] = share_lag(classpath, c.bootstrap, group, topic)
            return lag_checked[1] == {0: 0, 1: 0, 2: 0}

        try:
            c.wait_until(all_accepted, 180, "every produced record accepted at least once")
            unreported = produced - acked_values(workers)
            lag = lag_checked[1] if unreported else share_lag(classpath, c.bootstrap, group, topic)
            print(f"{len(unreported)} records accepted by {workers[0].name} unreported; lag {lag}")
            assert lag == {0: 0, 1: 0, 2: 0}, f"every record accepted, yet the group's lag is {lag}"
        except AssertionError as e:
            raise AssertionError(f"{e}\n{diagnose(workers, produced)}") from None
    finally:
        stop.set()
        last_quarter.set()
        for w in workers:
            w.stop()

    # No record came back after its acknowledgement was reported stored.
    acked_at: dict[str, int] = {}
    for w in workers:
        for ms, v in w.acked:
            acked_at[v] = min(ms, acked_at.get(v, ms))
    again = [(w.name, ms, p, o, v, dc) for w in workers for (ms, p, o, v, dc) in w.got
             if v in acked_at and ms > acked_at[v]]
    deliveries = sum(len(w.got) for w in workers)
    redelivered = sum(1 for w in workers for g in w.got if g[4] > 1)
    print(f"{len(produced)} produced, {len(acked_at)} accepted, {deliveries} deliveries "
          f"({redelivered} with delivery count > 1), worker errors: {[w.errors[:2] for w in workers]}")
    # where the redeliveries were: per partition, per second of the run
    t_first = min((g[0] for w in workers for g in w.got), default=0)
    again_at: dict[int, dict[int, int]] = {}
    for w in workers:
        for ms, p, _o, _v, dc in w.got:
            if dc > 1:
                per = again_at.setdefault(p, {})
                per[(ms - t_first) // 1000] = per.get((ms - t_first) // 1000, 0) + 1
    print(f"delivery count > 1 by partition and second: {again_at}")
    assert not again, f"delivered again after an acknowledgement was stored: {again[:10]}"
    per_worker = {w.name: len(w.acked) for w in workers}
    assert sum(1 for k in per_worker.values() if k > 0) >= 2, f"records were shared: {per_worker}"


@pytest.mark.timeout(500)
def test_share_group_on_a_diskless_topic_through_sigkills_of_the_coordinators_and_a_leader(
        store, cluster, topic_name, classpath, tmp_path):
    """The same on a diskless topic (issue 60, docs/diskless.md "Share groups"): its
    share-partitions live on the partitions' leaders in the metadata image, which read the
    records through the batch coordinator and the bucket; besides the share group's coordinator
    and a partition's leader, the batch coordinator's broker is SIGKILLed and restarted.
    Meanwhile a second diskless topic takes about 2 MB/s (SizedProducer, 2,500 records/s), so
    the records shared with the group travel in shared objects that compaction (every 3 s,
    objects deleted 1 s after) rewrites and deletes while the share-partitions read them; that
    topic reads back exactly as acknowledged afterwards."""
    c = cluster(3, **store.broker_settings(), **{
        "diskless.compaction.max.bytes": 1 << 20,
        "diskless.compaction.max.age.ms": 3000,
        "diskless.object.delete.delay.ms": 1000,
    })
    topic, bulk = topic_name("jobs"), topic_name("bulk")
    create_diskless(c, topic, 3)
    create_diskless(c, bulk, 3)
    diskless_leader(c, topic, 3)
    group = "workers-" + topic
    load = SizedProducer(c.bootstrap, bulk, 3, rate=2500, tag="bulk")
    load.start()
    try:
        share_scenario(c, topic, group, classpath, tmp_path, faults=[
            (0.2, lambda: kill_and_restart(c, share_coordinator(c, group), "the share group's coordinator")),
            (0.4, lambda: kill_and_restart(c, c.leader_of(topic, 1), f"the leader of {topic}-1")),
            (0.6, lambda: kill_and_restart(c, diskless_leader(c, topic, 3), "the batch coordinator's broker")),
        ])
    finally:
        load.stop(flush_timeout=120)
    print(f"{load.sent} records of load acknowledged beside the share group")
    assert_one_producer_read_back(c, load, bulk, 3)


def share_lag(cp: str, bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The lag of each of ``topic``'s partitions in share group ``group``, as Kafka's
    kafka-share-groups --describe --offsets prints it (records not yet acknowledged or archived)."""
    r = subprocess.run(java(cp, "org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server",
                            bootstrap, "--describe", "--group", group, "--offsets"),
                       capture_output=True, text=True, timeout=60)
    out = {}
    if "-" in r.stdout.split():
        print(r.stdout)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[1] == topic and f[-1].lstrip("-").isdigit():
            out[int(f[2])] = int(f[-1])
    return out


def group_configs(addr: str, group: str) -> dict:
    """DescribeConfigs of GROUP ``group`` asked of the broker at ``addr``: name -> (value, source)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    a = AdminClient({"bootstrap.servers": addr})
    res = ConfigResource(ResourceType.GROUP, group)
    got = a.describe_configs([res])[res].result(timeout=20)
    return {n: (e.value, e.source) for n, e in got.items()}


@pytest.mark.timeout(120)
def test_group_configs_go_through_the_quorum_to_every_broker(cluster):
    """Group configs (IncrementalAlterConfigs on GROUP) set through one broker are kept by the
    metadata quorum: every broker describes them (source GROUP_CONFIG, 8), a broker restarted
    afterwards too, and a DELETE brings the broker's default back everywhere."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    c = cluster(3)
    group = "configured-share-group"

    def alter(op, value=None):
        a = AdminClient({"bootstrap.servers": c.nodes[1].addr})
        res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry("share.record.lock.duration.ms", value, incremental_operation=op),
            ConfigEntry("errors.deadletterqueue.topic.name", "dlq.jobs", incremental_operation=op)])
        a.incremental_alter_configs([res])[res].result(timeout=30)

    def everywhere(want_lock: tuple, want_dlq: tuple):
        deadline = time.monotonic() + 20
        while True:
            seen = {i: group_configs(n.addr, group) for i, n in c.nodes.items()}
            ok = all(s["share.record.lock.duration.ms"] == want_lock
                     and s["errors.deadletterqueue.topic.name"] == want_dlq for s in seen.values())
            if ok:
                return
            assert time.monotonic() < deadline, f"brokers describe {group}: {seen}"
            time.sleep(0.2)

    alter(AlterConfigOpType.SET, "20000")
    everywhere(("20000", 8), ("dlq.jobs", 8))
    c.stop(3)
    c.start(3)
    everywhere(("20000", 8), ("dlq.jobs", 8))
    alter(AlterConfigOpType.DELETE)
    everywhere(("30000", 5), ("", 5))
