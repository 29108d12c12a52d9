"""Apache Kafka 4.4.0's own Java tools and clients against a 3-broker Frieda cluster, run as a user
runs them (each a JVM on the classpath of tests/java/pom.xml: kafka-clients and kafka-tools from
Maven Central). ``FRIEDA_JAVA_CLASSPATH`` may name a file holding that classpath (scripts/test
writes target/java-classpath.txt); otherwise it is resolved with ``mvn dependency:build-classpath``.

The Java producer is Kafka's VerifiableProducer (idempotent, acks=all; it prints every
acknowledgement with its partition and offset), the Java consumer Kafka's ConsoleConsumer (a
group member, printing partition and offset)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_cluster import moved_off

JAVA_POM = REPO_ROOT / "tests" / "java" / "pom.xml"


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    f = os.environ.get("FRIEDA_JAVA_CLASSPATH") or str(REPO_ROOT / "target" / "java-classpath.txt")
    if not Path(f).exists():
        assert shutil.which("mvn"), "mvn not found: run scripts/test (it installs Maven and a JDK)"
        f = str(tmp_path_factory.mktemp("java") / "classpath.txt")
        subprocess.run(["mvn", "-B", "-q", "-f", str(JAVA_POM), "dependency:build-classpath",
                        f"-Dmdep.outputFile={f}", "-Dmdep.includeScope=test"], check=True, timeout=600)
    cp = Path(f).read_text().strip()
    assert "kafka-tools-4.4.0.jar" in cp and "kafka-clients-4.4.0.jar" in cp, cp[:300]
    return cp


def java(cp: str, cls: str, *args: str) -> list[str]:
    return ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.logFile=System.err", "-cp", cp, cls, *args]


def tool(cp: str, cls: str, *args: str, timeout: float = 90) -> str:
    """Runs a Kafka tool; asserts exit status 0; returns its stdout."""
    r = subprocess.run(java(cp, cls, *args), capture_output=True, text=True, timeout=timeout)
    short = cls.rsplit(".", 1)[1]
    print(f"$ {short} {' '.join(args)}\n{r.stdout}")
    assert r.returncode == 0, f"{short} {' '.join(args)} exited {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    return r.stdout


TOPICS = "org.apache.kafka.tools.TopicCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"

ROW = re.compile(r"Partition: (\d+)\s+Leader: (-?\d+)\s+Replicas: ([\d,]*)\s+Isr: ([\d,]*)")


def describe(cp: str, boot: str, topic: str, *extra: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """kafka-topics --describe: partition -> (leader, replicas, isr)."""
    out = tool(cp, TOPICS, "--bootstrap-server", boot, "--describe", "--topic", topic, *extra)
    ids = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    return {int(m[1]): (int(m[2]), ids(m[3]), ids(m[4])) for m in ROW.finditer(out)}


def test_kafka_tools_and_java_clients_through_a_leader_failover(cluster, topic_name, classpath, tmp_path):
    """kafka-topics creates an RF 3 topic with 6 partitions: leaders on all 3 brokers, Isr of 3
    each. Kafka's VerifiableProducer (idempotent, acks=all, 3000 records at 300/s) runs while the
    leader of partition 0 (not the active controller) is SIGKILLed: `--under-replicated-partitions`
    lists partitions while it is down; it restarts, rejoins (the list is empty again), and
    kafka-leader-election (preferred) gives every partition back to its first replica. Every
    record the producer reports acknowledged is read back by ConsoleConsumer (a group member) at
    its partition and offset, each value once. Then kafka-reassign-partitions --execute moves
    partition 0 to two replicas and --verify reports it complete (Metadata agrees);
    kafka-metadata-quorum describe --status/--replication name the leader and 3 voters;
    kafka-log-dirs --describe reports every replica of the topic on every broker."""
    c = cluster()
    cp = classpath
    boot = c.bootstrap
    t = topic_name()
    tool(cp, TOPICS, "--bootstrap-server", boot, "--create", "--topic", t, "--partitions", "6",
         "--replication-factor", "3")
    c.wait_full_isr(t, 30)
    d = describe(cp, boot, t)
    assert sorted(d) == list(range(6)), d
    assert {leader for leader, _, _ in d.values()} == {1, 2, 3}, f"leaders not spread: {d}"
    assert all(sorted(isr) == [1, 2, 3] and sorted(reps) == [1, 2, 3] for _, reps, isr in d.values()), d

    props = tmp_path / "producer.properties"
    props.write_text("enable.idempotence=true\nretries=2147483647\ndelivery.timeout.ms=120000\n"
                     "max.in.flight.requests.per.connection=5\n")
    out_path = tmp_path / "producer.jsonl"
    with open(out_path, "w") as out, open(tmp_path / "producer.stderr", "w") as err:
        prod = subprocess.Popen(java(cp, PRODUCER, "--bootstrap-server", boot, "--topic", t,
                                     "--max-messages", "3000", "--throughput", "300", "--acks", "-1",
                                     "--value-prefix", "7", "--command-config", str(props)),
                                stdout=out, stderr=err)
    try:
        time.sleep(3)
        ctrl = c.controller()
        victim = d[0][0] if d[0][0] != ctrl else next(leader for leader, _, _ in d.values() if leader != ctrl)
        c.kill(victim)
        c.wait_until(lambda: moved_off(c, t, 6, victim), 30, f"leaderships moved off node {victim}")
        others = [i for i in c.nodes if i != victim]
        live = ",".join(c.node(i).addr for i in others)
        urp = describe(cp, live, t, "--under-replicated-partitions")
        assert urp, "no under-replicated partition listed with a broker down"
        assert all(victim not in isr for _, _, isr in urp.values()), urp
        c.start(victim)
        c.wait_full_isr(t, 60, via=others[0])
        assert describe(cp, boot, t, "--under-replicated-partitions") == {}
        assert prod.wait(timeout=120) == 0, (tmp_path / "producer.stderr").read_text()[-3000:]
    finally:
        if prod.poll() is None:
            prod.send_signal(signal.SIGKILL)
            prod.wait()

    events = [json.loads(line) for line in out_path.read_text().splitlines() if line.startswith("{")]
    acked = [(e["partition"], e["offset"], e["value"]) for e in events if e["name"] == "producer_send_success"]
    errors = [e for e in events if e["name"] == "producer_send_error"]
    assert not errors, errors[:5]
    assert len(acked) == 3000, f"{len(acked)} of 3000 acknowledged"

    tool(cp, ELECTION, "--bootstrap-server", boot, "--election-type", "PREFERRED", "--all-topic-partitions")
    c.wait_until(lambda: all(leader == reps[0] for leader, reps, _ in describe(cp, boot, t).values()), 30,
                 "preferred leaders restored")

    out = tool(cp, CONSUMER, "--bootstrap-server", boot, "--topic", t, "--from-beginning",
               "--max-messages", str(len(acked)), "--timeout-ms", "30000",
               "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
               timeout=120)
    read = {}
    for m in re.finditer(r"Partition:(\d+)\tOffset:(\d+)\t(.*)", out):
        read[(int(m[1]), int(m[2]))] = m[3]
    for p, o, v in acked:
        assert read.get((p, o)) == v, f"acknowledged {v!r} at {t}-{p}@{o}, read {read.get((p, o))!r}"
    values = list(read.values())
    assert len(values) == len(set(values)) == 3000, f"{len(values)} records read, {len(set(values))} distinct"

    plan = tmp_path / "reassign.json"
    target = [i for i in (1, 2, 3) if i != d[0][0]]
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": target}]}))
    tool(cp, REASSIGN, "--bootstrap-server", boot, "--reassignment-json-file", str(plan), "--execute")
    c.wait_until(lambda: "is completed" in tool(cp, REASSIGN, "--bootstrap-server", boot,
                                                "--reassignment-json-file", str(plan), "--verify"),
                 60, "reassignment completed")
    assert sorted(c.replicas_of(t, 0)) == sorted(target)

    status = tool(cp, QUORUM, "--bootstrap-server", boot, "describe", "--status")
    assert re.search(r"LeaderId:\s+[123]\b", status), status
    assert re.search(r"CurrentVoters:\s+\[.*\b1\b.*\b2\b.*\b3\b.*\]", status), status
    repl = tool(cp, QUORUM, "--bootstrap-server", boot, "describe", "--replication")
    assert len(re.findall(r"^\s*[123]\s+", repl, re.M)) == 3, repl
    assert "Leader" in repl and "Follower" in repl, repl

    out = tool(cp, LOG_DIRS, "--bootstrap-server", boot, "--describe", "--broker-list", "1,2,3", "--topic-list", t)
    info = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    held = {(b["broker"], p["partition"]) for b in info["brokers"] for ld in b["logDirs"] for p in ld["partitions"]}
    for q in range(6):
        reps = target if q == 0 else [1, 2, 3]
        for b in reps:
            assert (b, f"{t}-{q}") in held, f"kafka-log-dirs misses {t}-{q} on broker {b}: {sorted(held)}"


DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"


def test_kafka_delete_records_on_the_cluster(cluster, topic_name, classpath, tmp_path):
    """kafka-delete-records moves partition 0 of an RF 3 topic to start at offset 120 (of 200
    acknowledged records): it reports low_watermark 120 only once every in-sync replica has
    taken the new start, which each persisted (its log-start-offset-checkpoint names it). The
    leader is then SIGKILLed: the new leader serves from 120 too (earliest offset 120; a read
    from the beginning starts at 120 with every acknowledged record from there at its offset);
    after the old leader is back and leads again (preferred election), still 120."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    c = cluster()
    cp = classpath
    boot = c.bootstrap
    t = topic_name()
    tool(cp, TOPICS, "--bootstrap-server", boot, "--create", "--topic", t, "--partitions", "2",
         "--replication-factor", "3")
    c.wait_full_isr(t, 30)
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "acks": "all", "batch.num.messages": 10})
    acked = {}

    def cb(err, msg):
        assert err is None, err
        acked[msg.offset()] = msg.value()
    for i in range(200):
        p.produce(t, value=b"record %d " % i + bytes(range(256)), partition=0, on_delivery=cb)
    assert p.flush(60) == 0
    assert sorted(acked) == list(range(200))

    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 0, "offset": 120}]}))
    out = tool(cp, DELETE_RECORDS, "--bootstrap-server", boot, "--offset-json-file", str(plan))
    assert re.search(rf"partition: {re.escape(t)}-0\s+low_watermark: 120", out), out
    for i, node in c.nodes.items():
        text = (node.data_dir / "log-start-offset-checkpoint").read_text()
        assert f"{t} 0 120" in text.splitlines(), f"node {i} did not persist the new log start:\n{text}"

    def earliest_and_read(via: str) -> None:
        cons = Consumer({"bootstrap.servers": via, "group.id": "unused", "enable.auto.commit": False,
                         "auto.offset.reset": "error"})
        try:
            lo, hi = cons.get_watermark_offsets(TopicPartition(t, 0), timeout=30)
            assert (lo, hi) == (120, 200), (lo, hi)
            cons.assign([TopicPartition(t, 0, OFFSET_BEGINNING)])
            got = {}
            deadline = time.monotonic() + 30
            while len(got) < 80 and time.monotonic() < deadline:
                m = cons.poll(0.5)
                if m is not None:
                    assert m.error() is None, m.error()
                    got[m.offset()] = m.value()
            assert sorted(got) == list(range(120, 200)), sorted(got)[:5]
            assert all(got[o] == acked[o] for o in got)
        finally:
            cons.close()

    earliest_and_read(boot)
    leader = c.leader_of(t, 0)
    c.kill(leader)
    c.wait_until(lambda: moved_off(c, t, 2, leader), 30, f"leaderships moved off node {leader}")
    others = [i for i in c.nodes if i != leader]
    earliest_and_read(",".join(c.node(i).addr for i in others))
    c.start(leader)
    c.wait_full_isr(t, 60, via=others[0])
    tool(cp, ELECTION, "--bootstrap-server", boot, "--election-type", "PREFERRED", "--all-topic-partitions")
    c.wait_until(lambda: c.leader_of(t, 0) == c.replicas_of(t, 0)[0], 30, "preferred leader restored")
    earliest_and_read(boot)


FEATURES = "org.apache.kafka.tools.FeatureCommand"


def test_kafka_features_downgrade_goes_through_the_quorum(cluster, classpath):
    """kafka-features downgrade --feature group.version=0, sent to node 1, is finalized through the
    metadata quorum: every node's ApiVersions reports level 0 with a newer epoch, node 2 still does
    after a SIGKILL and restart (it can only have read it from the metadata log), and the upgrade
    back to 1 reaches every node the same way. kraft.version 1 cannot be downgraded."""
    import kafka_wire as kw

    c = cluster()
    cp = classpath

    def finalized(i: int) -> tuple[int, dict[str, int]]:
        host, _, port = c.node(i).addr.rpartition(":")
        s = kw.connect(host, int(port))
        try:
            return kw.parse_api_versions_finalized(kw.request(s, kw.api_versions_v3(1)))
        finally:
            s.close()

    epoch0, levels0 = finalized(1)
    assert levels0.get("group.version") == 1, levels0
    out = tool(cp, FEATURES, "--bootstrap-server", c.node(1).addr, "downgrade", "--feature", "group.version=0")
    assert "group.version was downgraded to 0." in out, out
    for i in c.running():
        c.wait_until(lambda: "group.version" not in finalized(i)[1] and finalized(i)[0] > epoch0, 20,
                     f"node {i} reports group.version 0")
    c.kill(2)
    c.start(2)
    epoch, levels = finalized(2)
    assert "group.version" not in levels and epoch > epoch0, (epoch, levels)
    assert levels["transaction.version"] == 2, levels
    out = tool(cp, FEATURES, "--bootstrap-server", c.node(2).addr, "upgrade", "--feature", "group.version=1")
    assert "group.version was upgraded to 1." in out, out
    for i in c.running():
        c.wait_until(lambda: finalized(i)[1].get("group.version") == 1, 20, f"node {i} reports group.version 1")
    # kraft.version 1 (KIP-853: the voters live in the metadata log) is never lowered, as Kafka
    # 4.4's FeatureControlManager refuses it.
    assert levels["kraft.version"] == 1, levels
    r = subprocess.run(java(cp, FEATURES, "--bootstrap-server", c.node(1).addr, "downgrade", "--feature",
                            "kraft.version=0"), capture_output=True, text=True, timeout=90)
    print(r.stdout, r.stderr[-2000:])
    assert r.returncode != 0 and "Can't downgrade the version of this feature." in r.stdout + r.stderr
    assert finalized(1)[1]["kraft.version"] == 1


def replication_rows(cp: str, boot: str) -> dict[int, tuple[int, int]]:
    """`kafka-metadata-quorum describe --replication`: node id -> (LastFetchTimestamp,
    LastCaughtUpTimestamp), epoch milliseconds as the tool prints them."""
    out = tool(cp, QUORUM, "--bootstrap-server", boot, "describe", "--replication")
    rows = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 7 and f[0].isdigit():
            # NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status
            rows[int(f[0])] = (int(f[4]), int(f[5]))
    return rows


def test_describe_quorum_reports_when_each_voter_was_last_heard_from(cluster, classpath):
    """Issue 59, item 1: `kafka-metadata-quorum describe --replication` showed every node's
    LastFetchTimestamp and LastCaughtUpTimestamp as "now", a stopped node included. A voter
    SIGKILLed keeps the times of its last acknowledgement, older than the kill; the running
    follower's are recent, and the leader's are the time of the answer (as Kafka's LeaderState
    reports its own)."""
    c = cluster()
    cp = classpath
    ctrl = c.controller()
    victim = next(i for i in c.nodes if i != ctrl)
    other = next(i for i in c.nodes if i not in (ctrl, victim))
    before = replication_rows(cp, c.bootstrap)
    assert sorted(before) == sorted(c.nodes), before
    killed_ms = int(time.time() * 1000)
    c.kill(victim)
    try:
        time.sleep(4)
        live = ",".join(c.node(i).addr for i in c.nodes if i != victim)
        asked_ms = int(time.time() * 1000)
        rows = replication_rows(cp, live)
        answered_ms = int(time.time() * 1000)
        fetch, caught_up = rows[victim]
        assert 0 < fetch <= killed_ms + 1000, f"node {victim} stopped at {killed_ms}, reported {rows}"
        assert 0 < caught_up <= fetch, rows
        for node in (other, ctrl):
            fetch, caught_up = rows[node]
            assert asked_ms - 3000 <= fetch <= answered_ms, f"node {node} not recent: {rows}"
            assert asked_ms - 3000 <= caught_up <= answered_ms, f"node {node} not caught up: {rows}"
    finally:
        c.start(victim)
    c.wait_until(lambda: replication_rows(cp, c.bootstrap)[victim][0] >= int(time.time() * 1000) - 3000,
                 60, f"node {victim} heard from again", interval=1)
