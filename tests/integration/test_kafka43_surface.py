"""Kafka 4.3's additions to the protocol surface, checked as a user and a client see them:

- UpdateFeatures (KIP-584/KIP-778) through Kafka's own `kafka-features` tool (FeatureCommand
  4.4.0, from the jars `scripts/test` fetches into target/kafka-4.4.0/lib): upgrade, downgrade,
  disable, --dry-run and the refusals, with Apache Kafka's messages; a new cluster finalizes
  metadata.version 4.4-IV2, as Kafka 4.4.0; `group.version` 0 turns KIP-848 consumer groups off (ConsumerGroupHeartbeat answers
  UNSUPPORTED_VERSION) and 1 back on; finalized levels survive a restart.
- DescribeGroups v6 (KIP-1043): GROUP_ID_NOT_FOUND with Kafka's message for a group that does not
  exist or is not a classic group (v5 keeps answering Dead without an error).
- OffsetCommit / OffsetFetch v10 (KAFKA-14690): topics named by topic id only; an unknown id gets
  UNKNOWN_TOPIC_ID; offsets committed by id read back by name through librdkafka and vice versa.

Every expectation was taken from Apache Kafka 4.3.1: run the file against it with
`FRIEDA_EXTERNAL_BOOTSTRAP=127.0.0.1:19092` (../shared/kafka-baseline/run-kafka.sh); the restart
test then skips.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition

import kafka_wire as w
from helpers import admin, create_topic, wait_until
from conftest import REPO_ROOT

FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"
UNSUPPORTED_VERSION, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID = 35, 69, 100


def kafka44_classpath() -> str:
    """Kafka 4.4.0's jars (its kafka-features knows the 4.4 metadata versions by name)."""
    lib = os.environ.get("KAFKA44_LIB") or str(REPO_ROOT / "target" / "kafka-4.4.0" / "lib")
    assert os.path.exists(os.path.join(lib, "kafka-tools-4.4.0.jar")), f"no Kafka 4.4.0 tools in {lib} (scripts/test fetches them)"
    return os.path.join(lib, "*")


def features_tool(bootstrap: str, *args: str) -> tuple[int, str]:
    """Runs kafka-features with ``args``; returns (exit status, stdout + stderr without JVM noise)."""
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", kafka44_classpath(), FEATURE_TOOL,
           "--bootstrap-server", bootstrap, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    out = "\n".join(l for l in (r.stdout + r.stderr).splitlines()
                    if l.strip() and "SLF4J" not in l and " WARN " not in l)
    print(f"$ kafka-features {' '.join(args)} -> {r.returncode}\n{out}")
    return r.returncode, out


def describe_features(bootstrap: str) -> dict[str, dict[str, str]]:
    """`kafka-features describe` as {feature: {SupportedMinVersion, ..., FinalizedVersionLevel, Epoch}}."""
    rc, out = features_tool(bootstrap, "describe")
    assert rc == 0, out
    table = {}
    for line in out.splitlines():
        cells = dict(re.findall(r"(\w+):\s+(\S+)", line))
        if "Feature" in cells:
            table[cells.pop("Feature")] = cells
    return table


def consumer_group_heartbeat(bootstrap: str, group: str, topic: str) -> int:
    """A first ConsumerGroupHeartbeat v0 (member epoch 0) for ``group``: its error code."""
    host, _, port = bootstrap.rpartition(":")
    s = w.connect(host, int(port))
    try:
        body = (w.header_v2(68, 0, 5) + w.compact_string(group) + w.compact_string("") + w.i32(0)
                + w.compact_string(None) + w.compact_string(None) + w.i32(60000)
                + w.compact_array([w.compact_string(topic)]) + w.compact_string(None)
                + w.compact_array([]) + w.NO_TAGS)
        r = w.Reader(w.request(s, w.frame(body)))
        r.i32(), r.tags()  # correlation id, header tags
        r.i32()  # throttle
        return r.i16()
    finally:
        s.close()


@pytest.mark.timeout(300)
def test_kafka_features_upgrade_downgrade_disable_as_kafka(broker, topic_name):
    """kafka-features against the broker: the levels a fresh Kafka 4.4.0 cluster reports for the
    features Frieda implements, the refusals with Kafka's messages, and downgrades that take
    effect: group.version 0 refuses KIP-848 heartbeats until it is upgraded again."""
    b = broker.bootstrap
    topic = topic_name()
    create_topic(b, topic, partitions=1)
    before = describe_features(b)
    assert before["metadata.version"]["FinalizedVersionLevel"] == "4.4-IV2", before
    assert before["group.version"]["FinalizedVersionLevel"] == "1", before
    assert before["transaction.version"]["FinalizedVersionLevel"] == "2", before
    epoch0 = int(before["group.version"]["Epoch"])

    refusals = {
        ("upgrade", "--feature", "foo.version=1"):
            "Could not upgrade foo.version to 1. The update failed for all features since the following "
            "feature had an error: Invalid update version 1 for feature foo.version. Local controller "
            "{node} does not support this feature.",
        ("downgrade", "--metadata", "3.9"):
            "Could not downgrade metadata.version to 21. The update failed for all features since the "
            "following feature had an error: Unsupported metadata.version downgrade from 33 to 21. "
            "Refusing to perform the requested downgrade because it might delete metadata information.",
        ("upgrade", "--feature", "group.version=2"):
            "Could not upgrade group.version to 2. The update failed for all features since the following "
            "feature had an error: Invalid update version 2 for feature group.version. Local controller "
            "{node} only supports versions 0-1",
    }
    node = admin(b).list_topics(timeout=10).controller_id
    for args, message in refusals.items():
        rc, out = features_tool(b, *args)
        assert rc != 0, out
        assert message.format(node=node) in out, out
        assert "1 out of 1 operation(s) failed." in out, out

    try:
        assert consumer_group_heartbeat(b, f"g-on-{uuid.uuid4().hex[:6]}", topic) == 0
        rc, out = features_tool(b, "downgrade", "--feature", "group.version=0")
        assert rc == 0 and "group.version was downgraded to 0." in out, out
        after = describe_features(b)
        assert after["group.version"]["FinalizedVersionLevel"] == "0", after
        assert int(after["group.version"]["Epoch"]) > epoch0, after
        assert consumer_group_heartbeat(b, f"g-off-{uuid.uuid4().hex[:6]}", topic) == UNSUPPORTED_VERSION
        # An upgrade that would lower the level must say it is a downgrade.
        rc, out = features_tool(b, "upgrade", "--feature", "transaction.version=1")
        assert rc != 0 and "Can't downgrade the version of this feature without setting the upgrade type" in out, out
        rc, out = features_tool(b, "upgrade", "--feature", "group.version=1", "--dry-run")
        assert rc == 0 and "group.version can be upgraded to 1." in out, out
        assert describe_features(b)["group.version"]["FinalizedVersionLevel"] == "0"
        rc, out = features_tool(b, "disable", "--feature", "transaction.version")
        assert rc == 0 and "transaction.version was disabled." in out, out
        assert describe_features(b)["transaction.version"]["FinalizedVersionLevel"] == "0"
    finally:
        for f, level in (("group.version", 1), ("transaction.version", 2)):
            rc, out = features_tool(b, "upgrade", "--feature", f"{f}={level}")
            assert rc == 0 and f"{f} was upgraded to {level}." in out, out
    restored = describe_features(b)
    assert restored["group.version"]["FinalizedVersionLevel"] == "1", restored
    assert restored["transaction.version"]["FinalizedVersionLevel"] == "2", restored
    assert consumer_group_heartbeat(b, f"g-back-{uuid.uuid4().hex[:6]}", topic) == 0


@pytest.mark.timeout(200)
def test_finalized_feature_levels_survive_a_restart(own_broker):
    """A downgrade is persisted before it is answered: after SIGKILL and a restart the level and
    its epoch are still in force."""
    b = own_broker.bootstrap
    rc, out = features_tool(b, "downgrade", "--feature", "transaction.version=1")
    assert rc == 0 and "transaction.version was downgraded to 1." in out, out
    before = describe_features(b)["transaction.version"]
    own_broker.kill_hard()
    own_broker.start()
    after = describe_features(b)["transaction.version"]
    assert after == before, (before, after)
    assert after["FinalizedVersionLevel"] == "1"


def describe_groups(bootstrap: str, group: str, version: int) -> tuple[int, str | None, str]:
    """DescribeGroups of one group: (error code, error message (v6+), state)."""
    host, _, port = bootstrap.rpartition(":")
    s = w.connect(host, int(port))
    try:
        body = w.header_v2(15, version, 7) + w.compact_array([w.compact_string(group)]) + w.i8(0) + w.NO_TAGS
        r = w.Reader(w.request(s, w.frame(body)))
        r.i32(), r.tags(), r.i32()  # correlation id, header tags, throttle
        assert r.uvarint() == 2  # one group
        error = r.i16()
        message = r.compact_string() if version >= 6 else None
        assert r.compact_string() == group
        return error, message, r.compact_string()
    finally:
        s.close()


@pytest.mark.timeout(120)
def test_describe_groups_v6_says_group_id_not_found(broker, topic_name):
    """KIP-1043: v6 answers GROUP_ID_NOT_FOUND with "Group g not found." for an unknown group and
    "Group g is not a classic group." for a KIP-848 group; v5 answers both Dead without an error;
    a classic group (here: offsets committed without members) is described as before."""
    b = broker.bootstrap
    topic = topic_name()
    create_topic(b, topic, partitions=1)
    classic, modern, missing = (f"g-{k}-{uuid.uuid4().hex[:6]}" for k in ("classic", "848", "missing"))
    c = Consumer({"bootstrap.servers": b, "group.id": classic, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    c.close()
    m = Consumer({"bootstrap.servers": b, "group.id": modern, "group.protocol": "consumer"})
    try:
        m.subscribe([topic])
        wait_until("the KIP-848 member assigned",
                   lambda: (m.poll(0.2), len(m.assignment()) == 1)[1], 30)
        assert describe_groups(b, missing, 6) == (GROUP_ID_NOT_FOUND, f"Group {missing} not found.", "Dead")
        assert describe_groups(b, missing, 5) == (0, None, "Dead")
        assert describe_groups(b, modern, 6) == (GROUP_ID_NOT_FOUND, f"Group {modern} is not a classic group.",
                                                 "Dead")
        assert describe_groups(b, modern, 5) == (0, None, "Dead")
        assert describe_groups(b, classic, 6) == (0, None, "Empty")
        assert describe_groups(b, classic, 5) == (0, None, "Empty")
    finally:
        m.close()


def uuid_bytes(u) -> bytes:
    """The 16 bytes of a confluent_kafka.Uuid (a topic id), as the wire carries them."""
    mask = 2**64 - 1
    return ((u.get_most_significant_bits() & mask).to_bytes(8, "big")
            + (u.get_least_significant_bits() & mask).to_bytes(8, "big"))


def offset_commit_v10(bootstrap: str, group: str, commits: list[tuple[bytes, int, int]]) -> list[tuple[bytes, int, int]]:
    """OffsetCommit v10 (generation -1, no member: as an assign()-style consumer commits) of
    ``(topic id, partition, offset)``; returns ``(topic id, partition, error code)``."""
    host, _, port = bootstrap.rpartition(":")
    s = w.connect(host, int(port))
    try:
        by_topic: dict[bytes, list[tuple[int, int]]] = {}
        for tid, p, o in commits:
            by_topic.setdefault(tid, []).append((p, o))
        topics = [tid + w.compact_array([w.i32(p) + w.i64(o) + w.i32(-1) + w.compact_string("v10") + w.NO_TAGS
                                         for p, o in parts]) + w.NO_TAGS
                  for tid, parts in by_topic.items()]
        body = (w.header_v2(8, 10, 11) + w.compact_string(group) + w.i32(-1) + w.compact_string("")
                + w.compact_string(None) + w.compact_array(topics) + w.NO_TAGS)
        r = w.Reader(w.request(s, w.frame(body)))
        r.i32(), r.tags(), r.i32()
        out = []
        for _ in range(r.uvarint() - 1):
            tid = r.take(16)
            for _ in range(r.uvarint() - 1):
                out.append((tid, r.i32(), r.i16()))
                r.tags()
            r.tags()
        return out
    finally:
        s.close()


def offset_fetch_v10(bootstrap: str, group: str, topics: list[tuple[bytes, list[int]]] | None) -> dict:
    """OffsetFetch v10 of one group, topics by id (None: all): {(topic id, partition): (offset,
    metadata, error)} and the group's error code under key "error"."""
    host, _, port = bootstrap.rpartition(":")
    s = w.connect(host, int(port))
    try:
        if topics is None:
            wanted = w.uvarint(0)  # null array
        else:
            wanted = w.compact_array([tid + w.compact_array([w.i32(p) for p in parts]) + w.NO_TAGS
                                      for tid, parts in topics])
        group_req = w.compact_string(group) + w.compact_string(None) + w.i32(-1) + wanted + w.NO_TAGS
        body = w.header_v2(9, 10, 12) + w.compact_array([group_req]) + w.i8(0) + w.NO_TAGS
        r = w.Reader(w.request(s, w.frame(body)))
        r.i32(), r.tags(), r.i32()
        assert r.uvarint() == 2
        assert r.compact_string() == group
        out: dict = {}
        for _ in range(r.uvarint() - 1):
            tid = r.take(16)
            for _ in range(r.uvarint() - 1):
                p, offset, _epoch, meta, err = r.i32(), r.i64(), r.i32(), r.compact_string(), r.i16()
                r.tags()
                out[(tid, p)] = (offset, meta, err)
            r.tags()
        out["error"] = r.i16()
        return out
    finally:
        s.close()


@pytest.mark.timeout(120)
def test_offset_commit_and_fetch_v10_name_topics_by_id(broker, topic_name):
    """Offsets committed with OffsetCommit v10 (topic ids) are what librdkafka's committed() reads
    by name, and offsets librdkafka commits by name are what OffsetFetch v10 reads by id; an
    unknown topic id gets UNKNOWN_TOPIC_ID in both, without failing the known topic."""
    b = broker.bootstrap
    t1, t2 = topic_name("a"), topic_name("b")
    create_topic(b, t1, partitions=2)
    create_topic(b, t2, partitions=1)
    a = admin(b)  # alive until its futures complete
    descs = a.describe_topics(TopicCollection([t1, t2]))
    tid = {t: uuid_bytes(descs[t].result(timeout=10).topic_id) for t in (t1, t2)}
    unknown = uuid.uuid4().bytes
    group = f"g-v10-{uuid.uuid4().hex[:6]}"

    result = offset_commit_v10(b, group, [(tid[t1], 0, 5), (tid[t1], 1, 7), (unknown, 0, 1)])
    assert sorted(result) == sorted([(tid[t1], 0, 0), (tid[t1], 1, 0), (unknown, 0, UNKNOWN_TOPIC_ID)])

    c = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(t1, 0), TopicPartition(t1, 1)], timeout=10)
        # (confluent-kafka 2.x returns the metadata string unterminated: compared below, raw)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 5), (1, 7)]
        c.commit(offsets=[TopicPartition(t2, 0, 3)], asynchronous=False)
    finally:
        c.close()

    fetched = offset_fetch_v10(b, group, [(tid[t1], [0, 1]), (tid[t2], [0]), (unknown, [0])])
    assert fetched["error"] == 0
    assert fetched[(tid[t1], 0)] == (5, "v10", 0)
    assert fetched[(tid[t1], 1)] == (7, "v10", 0)
    assert fetched[(tid[t2], 0)][0::2] == (3, 0)
    assert fetched[(unknown, 0)][2] == UNKNOWN_TOPIC_ID
    everything = offset_fetch_v10(b, group, None)
    assert {k: v[0] for k, v in everything.items() if k != "error"} == {
        (tid[t1], 0): 5, (tid[t1], 1): 7, (tid[t2], 0): 3}
