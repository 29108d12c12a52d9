"""Kafka 4.4's protocol surface, compared with Apache Kafka 4.4.0 itself: a Kafka 4.4.0 broker is
started next to Frieda (jars from Maven Central, `scripts/test` fetches them into
target/kafka-4.4.0/lib; `KAFKA44_LIB` names another directory) and both answer the same raw
requests.

- ApiVersions: every API Frieda serves is offered at Kafka 4.4.0's versions, key by key, and the
  supported features Frieda has carry Kafka's ranges.
- ApiVersions v5 (Kafka 4.4): a client naming another cluster, or this cluster with another
  node id, is told REBOOTSTRAP_REQUIRED (129); the right pair, or none, gets the table.
- TxnOffsetCommit v6 (Kafka 4.4) names topics by id: a transactional commit with it is read back
  once the transaction commits; an unknown id is UNKNOWN_TOPIC_ID (100).
- DeleteGroups v3 (Kafka 4.4) answers with an error message field.
- Streams groups (KIP-1071) at the wire: a member joining with a topology whose source topic does
  not exist is admitted with no tasks and the MISSING_SOURCE_TOPICS status; a malformed heartbeat
  is INVALID_REQUEST; StreamsGroupTopologyDescriptionUpdate is UNSUPPORTED_VERSION without a
  description plugin (Kafka's default). tests/java's JavaStreamsGroupsTest runs Kafka Streams.
- Topic configs as Kafka 4: KIP-1030's segment sizes; KIP-405's tiered-storage keys with tiering
  off (described with Kafka's defaults, `remote.storage.enable=true` refused with its message).
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as w
from pipelined_txn import pipelined_transactions
from conftest import EXTERNAL, REPO_ROOT, free_port, port_open

KAFKA44_LIB = Path(os.environ.get("KAFKA44_LIB", REPO_ROOT / "target" / "kafka-4.4.0" / "lib"))
WRAPPER = REPO_ROOT / "tests" / "integration" / "tools" / "kafka_as_frieda.py"

IMPLEMENTED_FEATURES = ["metadata.version", "share.version", "transaction.version", "group.version", "streams.version",
                        "eligible.leader.replicas.version", "kraft.version"]

API_VERSIONS, TXN_OFFSET_COMMIT, DELETE_GROUPS, INIT_PRODUCER_ID, END_TXN, FIND_COORDINATOR = 18, 28, 42, 22, 26, 10
STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 88, 93


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory):
    """A single-node Apache Kafka 4.4.0 (KRaft) on a free loopback port."""
    assert any(KAFKA44_LIB.glob("kafka_2.13-4.4.0.jar")), (
        f"Kafka 4.4.0's jars are not in {KAFKA44_LIB}: scripts/test fetches them (mvn -f "
        "../shared/kafka-baseline/pom.xml dependency:copy-dependencies -Dkafka.version=4.4.0 "
        "-Dkafka.lib.dir=target/kafka-4.4.0/lib)")
    tmp = tmp_path_factory.mktemp("kafka44")
    port = free_port()
    log = open(tmp / "kafka.out", "wb")
    proc = subprocess.Popen([sys.executable, str(WRAPPER), "serve", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", str(tmp / "data")], stdout=log, stderr=log,
                            env={**os.environ, "KAFKA_LIB": str(KAFKA44_LIB)})
    deadline = time.monotonic() + 120
    while not port_open("127.0.0.1", port):
        assert proc.poll() is None, (tmp / "kafka.out").read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "Kafka 4.4.0 did not listen within 120 s"
        time.sleep(0.3)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def hostport(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def call(bootstrap: str, api: int, version: int, body: bytes, corr: int = 1) -> w.Reader:
    """One request with a v2 header; the reader is past the correlation id and the response
    header's tags (ApiVersions answers with header v0: no tags)."""
    with socket.create_connection(hostport(bootstrap), timeout=10) as s:
        payload = w.request(s, w.frame(w.header_v2(api, version, corr) + body))
    r = w.Reader(payload)
    assert r.i32() == corr
    if api != API_VERSIONS:
        r.tags()
    return r


def api_versions(bootstrap: str, version: int = 4, extra: bytes = b"") -> dict:
    body = w.compact_string("frieda-it") + w.compact_string("1.0") + extra + w.NO_TAGS
    r = call(bootstrap, API_VERSIONS, version, body)
    out = {"error": r.i16(), "apis": {}, "supported": {}, "finalized": {}}
    for _ in range(r.uvarint() - 1):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.tags()
        out["apis"][k] = (lo, hi)
    r.i32()  # throttle
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        field = w.Reader(r.take(size))
        if tag == 0:
            for _ in range(field.uvarint() - 1):
                name, lo, hi = field.compact_string(), field.i16(), field.i16()
                field.tags()
                out["supported"][name] = (lo, hi)
        elif tag == 2:
            for _ in range(field.uvarint() - 1):
                name, hi, lo = field.compact_string(), field.i16(), field.i16()
                field.tags()
                out["finalized"][name] = (lo, hi)
    return out


def test_api_versions_equal_kafka_44_for_every_api_frieda_serves(broker, kafka44):
    ours, theirs = api_versions(broker.bootstrap), api_versions(kafka44)
    assert ours["error"] == theirs["error"] == 0
    differ = {k: (v, theirs["apis"].get(k)) for k, v in ours["apis"].items() if theirs["apis"].get(k) != v}
    assert not differ, f"API key: (Frieda's range, Kafka 4.4.0's): {differ}"
    missing = sorted(set(theirs["apis"]) - set(ours["apis"]))
    print(f"Kafka 4.4.0 offers {len(theirs['apis'])} APIs, Frieda {len(ours['apis'])}; not yet: {missing}")
    print(f"features, Kafka 4.4.0: {theirs['supported']} finalized {theirs['finalized']}")
    print(f"features, Frieda: {ours['supported']} finalized {ours['finalized']}")
    # The features whose every level Frieda implements: the same ranges, and a new cluster
    # finalizes the same levels (share.version 2: share groups with the KIP-1191 dead-letter queue).
    for name in IMPLEMENTED_FEATURES:
        assert ours["supported"].get(name) == theirs["supported"].get(name), name
        assert ours["finalized"].get(name) == theirs["finalized"].get(name), name


def describe_cluster_id(bootstrap: str) -> tuple[str, int]:
    """(cluster id, node id) of a one-broker cluster, from Metadata via librdkafka."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20)
    assert len(md.brokers) == 1, md.brokers
    return md.cluster_id, next(iter(md.brokers))


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_api_versions_v5_tells_a_misrouted_client_to_rebootstrap(broker, kafka44, which):
    b = broker.bootstrap if which == "frieda" else kafka44
    cluster, node = describe_cluster_id(b)
    v5 = lambda c, n: api_versions(b, 5, w.compact_string(c) + struct.pack(">i", n))
    right = v5(cluster, node)
    assert right["error"] == 0 and right["apis"][API_VERSIONS][1] == 5
    assert api_versions(b, 5, w.compact_string(None) + struct.pack(">i", -1))["error"] == 0
    # Only one of the two: INVALID_REQUEST (42).
    assert api_versions(b, 5, w.compact_string(None) + struct.pack(">i", node))["error"] == 42
    assert api_versions(b, 5, w.compact_string(cluster) + struct.pack(">i", -1))["error"] == 42
    for wrong in (v5("another-cluster-id", node), v5(cluster, node + 7)):
        assert wrong["error"] == 129 and wrong["apis"] == {}, wrong
    # Kafka 4.4's client software name rule (v3+): INVALID_REQUEST (42).
    body = w.compact_string("-bad name") + w.compact_string("1.0") + w.NO_TAGS
    assert call(b, API_VERSIONS, 3, body).i16() == 42


def coordinator(bootstrap: str, key: str, key_type: int) -> str:
    body = w.i8(key_type) + w.compact_array([w.compact_string(key)]) + w.NO_TAGS
    r = call(bootstrap, FIND_COORDINATOR, 4, body)
    r.i32()  # throttle
    assert r.uvarint() == 2
    r.compact_string()
    node, host, port, err = r.i32(), r.compact_string(), r.i32(), r.i16()
    assert err == 0, err
    return f"{host}:{port}"


def retry(fn, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v is not None:
            return v
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_txn_offset_commit_v6_names_topics_by_id(broker, kafka44, which, topic_name):
    b = broker.bootstrap if which == "frieda" else kafka44
    topic = topic_name()
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    topic_id = topic_uuid(admin, topic, timeout=20)
    group, txn_id = f"g-{topic}", f"t-{topic}"

    # InitProducerId v5 at the transaction coordinator.
    tc = retry(lambda: _try(lambda: coordinator(b, txn_id, 1)), "a transaction coordinator")
    def init():
        body = w.compact_string(txn_id) + w.i32(60000) + w.i64(-1) + w.i16(-1) + w.NO_TAGS
        r = call(tc, INIT_PRODUCER_ID, 5, body)
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        return (pid, epoch) if err == 0 else None
    pid, epoch = retry(init, "InitProducerId")

    gc = retry(lambda: _try(lambda: coordinator(b, group, 0)), "a group coordinator")

    def commit(tid: uuid.UUID):
        parts = [w.i32(p) + w.i64(o) + w.i32(-1) + w.compact_string(None) + w.NO_TAGS for p, o in ((0, 5), (1, 7))]
        topic_entry = tid.bytes + w.compact_array(parts) + w.NO_TAGS
        body = (w.compact_string(txn_id) + w.compact_string(group) + w.i64(pid) + w.i16(epoch)
                + w.i32(-1) + w.compact_string("") + w.compact_string(None)
                + w.compact_array([topic_entry]) + w.NO_TAGS)
        r = call(gc, TXN_OFFSET_COMMIT, 6, body)
        r.i32()
        out = {}
        for _ in range(r.uvarint() - 1):
            got_id = uuid.UUID(bytes=r.take(16))
            for _ in range(r.uvarint() - 1):
                p, err = r.i32(), r.i16()
                r.tags()
                out[(got_id, p)] = err
            r.tags()
        return out

    unknown = uuid.uuid4()
    assert commit(unknown) == {(unknown, 0): 100, (unknown, 1): 100}
    res = retry(lambda: (lambda r: r if set(r.values()) == {0} else None)(commit(topic_id)), "TxnOffsetCommit v6")
    assert res == {(topic_id, 0): 0, (topic_id, 1): 0}

    # EndTxn v5 (commit), then the offsets are the group's.
    def end():
        body = w.compact_string(txn_id) + w.i64(pid) + w.i16(epoch) + w.i8(1) + w.NO_TAGS
        r = call(tc, END_TXN, 5, body)
        r.i32()
        err = r.i16()
        return True if err == 0 else None
    retry(end, "EndTxn")
    c = Consumer({"bootstrap.servers": b, "group.id": group})
    got = retry(lambda: (lambda offs: offs if [o.offset for o in offs] == [5, 7] else None)(
        c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)), "the committed offsets")
    c.close()
    assert [o.offset for o in got] == [5, 7]


def _try(fn):
    try:
        return fn()
    except AssertionError:
        return None


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_delete_groups_v3_answers_with_an_error_message(broker, kafka44, which):
    b = broker.bootstrap if which == "frieda" else kafka44
    group = f"no-such-group-{uuid.uuid4().hex[:8]}"
    gc = retry(lambda: _try(lambda: coordinator(b, group, 0)), "a group coordinator")
    r = call(gc, DELETE_GROUPS, 3, w.compact_array([w.compact_string(group)]) + w.NO_TAGS)
    r.i32()
    assert r.uvarint() == 2
    assert r.compact_string() == group
    err, message = r.i16(), r.compact_string()
    r.tags()
    print(which, err, repr(message))
    assert err == 69  # GROUP_ID_NOT_FOUND


UNREGISTER_BROKER = 64


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_unregister_broker_of_an_unknown_id_is_broker_id_not_registered(broker, kafka44, which):
    """UnregisterBroker v0 (`kafka-cluster unregister --id`), served by Kafka 4.4 and Frieda:
    an id the cluster never registered is BROKER_ID_NOT_REGISTERED (102) with Kafka's message.
    (Unregistering a stopped broker of a cluster: tests/cluster/test_unregister.py.)"""
    b = broker.bootstrap if which == "frieda" else kafka44
    r = call(b, UNREGISTER_BROKER, 0, struct.pack(">i", 4242) + w.NO_TAGS)
    r.i32()  # throttle
    err, message = r.i16(), r.compact_string()
    print(which, err, repr(message))
    assert (err, message) == (102, "Broker ID 4242 is not currently registered")


LIST_GROUPS = 16


def list_groups_v5(corr: int, states: int, tags: int) -> bytes:
    """ListGroups v5 with `states` empty state names (1 byte each) and `tags` unknown tagged
    fields (tags 100.., empty) on the request body."""
    body = w.uvarint(states + 1) + b"\x01" * states + w.uvarint(1)  # states filter, no types filter
    body += w.uvarint(tags) + b"".join(w.uvarint(100 + t) + w.uvarint(0) for t in range(tags))
    return w.frame(w.header_v2(LIST_GROUPS, 5, corr) + body)


@pytest.mark.parametrize("which", ["frieda", "kafka"])
@pytest.mark.parametrize("states,tags,answered", [
    (1_000_000, 0, True), (1_000_001, 0, False),  # MAX_ARRAY_LENGTH
    (0, 10_000, True), (0, 10_001, False),  # MAX_TAGGED_FIELD_COUNT
])
def test_kafka_44_request_bounds(broker, kafka44, which, states, tags, answered):
    """Kafka 4.4's bounds on what a request may claim (MessageUtil: an array of at most
    1,000,000 elements, at most 10,000 tagged fields per structure): one element or tag more,
    with every byte of it present, and the connection closes without an answer; at the bound
    the request is answered. Another client is unaffected."""
    from test_bad_input import expect_closed
    b = broker.bootstrap if which == "frieda" else kafka44
    with socket.create_connection(hostport(b), timeout=30) as s:
        w.send(s, list_groups_v5(5, states, tags))
        if answered:
            r = w.Reader(w.recv_frame(s, 60))
            assert r.i32() == 5
        else:
            expect_closed(s, f"{states} states, {tags} tags", timeout=60)
    assert api_versions(b)["error"] == 0


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_segment_configs_as_kafka_4(broker, kafka44, which, topic_name):
    """KIP-1030 (Kafka 4.0): segment.bytes below 1 MiB is INVALID_CONFIG, on create and on
    alter; Kafka's internal.segment.bytes takes any size (and is described where set);
    segment.ms needs at least 1; segment.index.bytes and segment.jitter.ms are accepted."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    a = AdminClient({"bootstrap.servers": broker.bootstrap if which == "frieda" else kafka44})

    def create(cfg: dict) -> str:
        t = topic_name()
        try:
            a.create_topics([NewTopic(t, 1, 1, config=cfg)])[t].result(30)
            return "ok"
        except KafkaException as e:
            return e.args[0].name()

    assert create({"segment.bytes": "1048575"}) == "INVALID_CONFIG"
    assert create({"segment.ms": "0"}) == "INVALID_CONFIG"
    assert create({"segment.jitter.ms": "-1"}) == "INVALID_CONFIG"
    for ok in ({"segment.bytes": "1048576"}, {"segment.index.bytes": "4096"}, {"segment.jitter.ms": "10"}):
        assert create(ok) == "ok", ok
    t = topic_name()
    a.create_topics([NewTopic(t, 1, 1, config={"internal.segment.bytes": "4096"})])[t].result(30)
    r = ConfigResource("topic", t)
    got = {n: c.value for n, c in configs_of(a, r).items()}
    assert got["internal.segment.bytes"] == "4096" and got["segment.bytes"] == "1073741824", got
    r.add_incremental_config(ConfigEntry("segment.bytes", "1000", incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([r])[r].result(30)
    assert e.value.args[0].name() == "INVALID_CONFIG"
    plain = ConfigResource("topic", create_plain(a, topic_name()))
    got = set(configs_of(a, plain))
    assert "internal.segment.bytes" not in got and "segment.index.bytes" in got, sorted(got)


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_tiered_storage_topic_configs_with_tiering_off(broker, kafka44, which, topic_name):
    """KIP-405 / KIP-950 topic configs on a broker without `remote.log.storage.system.enable`
    (Kafka's default, and Frieda's only setting until tiered storage is built,
    docs/tiered-storage.md): described with Kafka's defaults; `remote.storage.enable=true`
    refused with Kafka's message on create and on alter; local retention values a topic may
    hold without tiering accepted, out-of-range ones refused."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    a = AdminClient({"bootstrap.servers": broker.bootstrap if which == "frieda" else kafka44})
    disabled = "Tiered Storage functionality is disabled in the broker"

    def create(cfg: dict) -> tuple[str, str]:
        t = topic_name()
        try:
            a.create_topics([NewTopic(t, 1, 1, config=cfg)])[t].result(30)
            return "ok", t
        except KafkaException as e:
            return e.args[0].name(), e.args[0].str()

    code, msg = create({"remote.storage.enable": "true"})
    assert code == "INVALID_CONFIG" and disabled in msg, (code, msg)
    code, msg = create({"remote.storage.enable": "true", "cleanup.policy": "compact"})
    assert code == "INVALID_CONFIG" and disabled in msg, (code, msg)
    assert create({"local.retention.ms": "-3"})[0] == "INVALID_CONFIG"
    code, t = create({"local.retention.ms": "1000", "local.retention.bytes": "-1", "remote.log.copy.disable": "true"})
    assert code == "ok", t
    r = ConfigResource("topic", t)
    got = {n: c.value for n, c in configs_of(a, r).items()}
    assert (got["local.retention.ms"], got["local.retention.bytes"], got["remote.log.copy.disable"]) == \
        ("1000", "-1", "true"), got
    plain = ConfigResource("topic", create_plain(a, topic_name()))
    got = {n: c.value for n, c in configs_of(a, plain).items()}
    assert {k: got.get(k) for k in ("remote.storage.enable", "local.retention.ms", "local.retention.bytes",
                                     "remote.log.copy.disable", "remote.log.delete.on.disable")} == {
        "remote.storage.enable": "false", "local.retention.ms": "-2", "local.retention.bytes": "-2",
        "remote.log.copy.disable": "false", "remote.log.delete.on.disable": "false"}, got
    plain.add_incremental_config(ConfigEntry("remote.storage.enable", "true",
                                             incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([plain])[plain].result(30)
    assert e.value.args[0].name() == "INVALID_CONFIG" and disabled in e.value.args[0].str(), e.value


def create_plain(a: AdminClient, t: str) -> str:
    a.create_topics([NewTopic(t, 1, 1)])[t].result(30)
    return t


def configs_of(a: AdminClient, r, timeout: float = 15) -> dict:
    """DescribeConfigs of a topic just created: Kafka answers CreateTopics once the controller
    has committed it and a broker may not have applied that record yet, so
    UNKNOWN_TOPIC_OR_PARTITION is retried for up to `timeout` s (seen against Kafka 4.4.0 in
    CI)."""
    from confluent_kafka import KafkaError, KafkaException
    deadline = time.monotonic() + timeout
    while True:
        try:
            return a.describe_configs([r])[r].result(30)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT = 68, 8


def topic_uuid(admin: AdminClient, topic: str, timeout: float = 30) -> uuid.UUID:
    def get():
        try:
            tid = admin.describe_topics(TopicCollection([topic]))[topic].result(10).topic_id
        except Exception:  # noqa: BLE001 - not yet visible
            return None
        return uuid.UUID(int=((tid.get_most_significant_bits() & (2**64 - 1)) << 64)
                         | (tid.get_least_significant_bits() & (2**64 - 1)))
    return retry(get, f"the id of {topic}", timeout)


def heartbeat(gc: str, group: str, member: str, epoch: int, topic: str | None,
              owned: list[tuple[uuid.UUID, list[int]]] | None) -> tuple[int, int, dict | None]:
    """ConsumerGroupHeartbeat v1: (error, member epoch, assignment {topic id: partitions} or None
    when unchanged). `topic` subscribes (first heartbeat); `owned` reports what it holds."""
    parts = None if owned is None else w.compact_array(
        [t.bytes + w.compact_array([w.i32(p) for p in ps]) + w.NO_TAGS for t, ps in owned])
    body = (w.compact_string(group) + w.compact_string(member) + w.i32(epoch)
            + w.compact_string(None) + w.compact_string(None)  # instance id, rack
            + w.i32(30000 if topic else -1)
            + (w.compact_array([w.compact_string(topic)]) if topic else w.uvarint(0))
            + w.compact_string(None)  # regex
            + w.compact_string("uniform" if topic else None)
            + (parts if parts is not None else w.uvarint(0)) + w.NO_TAGS)
    r = call(gc, CONSUMER_GROUP_HEARTBEAT, 1, body)
    r.i32()  # throttle
    err, _msg, _member, member_epoch, _interval = r.i16(), r.compact_string(), r.compact_string(), r.i32(), r.i32()
    assignment = None
    if r.i8() == 1:
        assignment = {}
        for _ in range(r.uvarint() - 1):
            tid = uuid.UUID(bytes=r.take(16))
            assignment[tid] = sorted(r.i32() for _ in range(r.uvarint() - 1))
            r.tags()
        r.tags()
    return err, member_epoch, assignment


def offset_commit(gc: str, group: str, member: str, epoch: int, topic: str, partitions: list[int],
                  version: int = 9) -> set[int]:
    """OffsetCommit v8/v9 of offset 1 for `partitions`: the set of error codes answered."""
    ps = [w.i32(p) + w.i64(1) + w.i32(-1) + w.compact_string(None) + w.NO_TAGS for p in partitions]
    body = (w.compact_string(group) + w.i32(epoch) + w.compact_string(member) + w.compact_string(None)
            + w.compact_array([w.compact_string(topic) + w.compact_array(ps) + w.NO_TAGS]) + w.NO_TAGS)
    r = call(gc, OFFSET_COMMIT, version, body)
    r.i32()
    errors = set()
    for _ in range(r.uvarint() - 1):
        r.compact_string()
        for _ in range(r.uvarint() - 1):
            r.i32()
            errors.add(r.i16())
            r.tags()
        r.tags()
    return errors


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_offset_commit_with_a_lagging_member_epoch(broker, kafka44, which, topic_name):
    """KIP-1251 (Kafka 4.3's assignment epochs): a consumer-protocol member that commits with its
    previous epoch (the heartbeat answer with the new one is still on its way) is accepted for a
    partition it has held since then, and refused with STALE_MEMBER_EPOCH (113) for one it gave
    up, for an epoch newer than its own or older than the partition's; at its own epoch any
    partition goes; OffsetCommit v8 is UNSUPPORTED_VERSION (35) for it. The same requests and
    answers with Kafka 4.4.0."""
    b = broker.bootstrap if which == "frieda" else kafka44
    topic = topic_name()
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    tid = topic_uuid(admin, topic)
    group = f"g-{topic}"
    gc = retry(lambda: _try(lambda: coordinator(b, group, 0)), "a group coordinator")
    a, bm = str(uuid.uuid4()), str(uuid.uuid4())

    # a joins alone and gets both partitions.
    err, ea, got = heartbeat(gc, group, a, 0, topic, [])
    assert err == 0, err
    asg_seen = got == {tid: [0, 1]}
    while not asg_seen:
        err, ea, got = heartbeat(gc, group, a, ea, None, [])
        assert err == 0, err
        asg_seen = got == {tid: [0, 1]} or asg_seen
        time.sleep(0.2)
    first = ea
    # b joins; a must give up one partition, keeping its epoch until it reports it gone.
    err, eb, _ = heartbeat(gc, group, bm, 0, topic, [])
    assert err == 0, err
    kept = retry(lambda: (lambda r: r[2][tid] if r[0] == 0 and r[2] and len(r[2].get(tid, [])) == 1 else None)(
        heartbeat(gc, group, a, first, None, [(tid, [0, 1])])), "a is asked to revoke a partition")
    gone = [p for p in (0, 1) if p not in kept]
    assert offset_commit(gc, group, a, first, topic, gone) == {0}, "pending revocation: still a's"
    second = retry(lambda: (lambda r: r[1] if r[0] == 0 and r[1] > first else None)(
        heartbeat(gc, group, a, first, None, [(tid, kept)])), "a moves to the new epoch")
    print(which, "epochs", first, second, "kept", kept, "gone", gone)

    assert offset_commit(gc, group, a, first, topic, kept) == {0}, "lagging epoch, partition held since"
    assert offset_commit(gc, group, a, first, topic, gone) == {113}, "lagging epoch, partition given up"
    assert offset_commit(gc, group, a, first, topic, kept + gone) == {113}, "one refusal fails the request"
    assert offset_commit(gc, group, a, first - 1, topic, kept) == {113}, "older than the assignment epoch"
    assert offset_commit(gc, group, a, second + 1, topic, kept) == {113}, "newer than the member's epoch"
    assert offset_commit(gc, group, a, second, topic, gone) == {0}, "its own epoch: any partition"
    assert offset_commit(gc, group, a, second, topic, kept, version=8) == {35}
    assert offset_commit(gc, group, "no-such-member", second, topic, kept) == {25}


def streams_heartbeat(bootstrap: str, group: str, member: str, source_topic: str) -> tuple[int, list[int], int | None]:
    """A StreamsGroupHeartbeat v1 join (epoch 0) with a one-subtopology topology reading
    ``source_topic``: (error code, status codes, number of active tasks or None)."""
    NULL_ARRAY = w.uvarint(0)
    subtopology = (w.compact_string("0") + w.compact_array([w.compact_string(source_topic)])
                   + w.compact_array([]) * 5 + w.NO_TAGS)
    topology = w.i8(1) + w.i32(0) + w.compact_array([subtopology]) + w.NO_TAGS
    body = (w.compact_string(group) + w.compact_string(member) + w.i32(0) + w.i32(-1)
            + w.compact_string(None) + w.compact_string(None) + w.i32(30000) + topology
            + w.compact_array([]) * 3 + w.compact_string("p-" + member) + w.i8(-1)
            + NULL_ARRAY * 3 + w.i8(0) + w.NO_TAGS)
    r = call(bootstrap, STREAMS_GROUP_HEARTBEAT, 1, body)
    r.i32()  # throttle
    err = r.i16()
    r.compact_string()  # error message
    if err:
        return err, [], None
    r.compact_string(), r.i32(), r.i32(), r.i32(), r.i64()  # member, epoch, interval, offsets, lag
    statuses = []
    for _ in range(r.uvarint() - 1):
        statuses.append(r.i8())
        r.compact_string()
        r.tags()
    n = r.uvarint()
    return err, statuses, (None if n == 0 else n - 1)


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_streams_group_heartbeat_and_topology_description_update(broker, kafka44, which):
    b = broker.bootstrap if which == "frieda" else kafka44
    group = f"sg-{uuid.uuid4().hex[:8]}"
    gc = retry(lambda: _try(lambda: coordinator(b, group, 0)), "a group coordinator")
    member = uuid.uuid4().hex[:22]
    # Admitted with no tasks; statuses ASSIGNMENT_DELAYED (5: the initial rebalance delay of
    # group.streams.initial.rebalance.delay.ms, 3 s) and MISSING_SOURCE_TOPICS (1).
    assert streams_heartbeat(gc, group, member, f"absent-{group}") == (0, [5, 1], 0)
    # An empty member id: INVALID_REQUEST (42).
    assert streams_heartbeat(gc, group + "x", "", "t")[0] == 42
    # A topology reading an internal topic: STREAMS_INVALID_TOPOLOGY (130).
    assert streams_heartbeat(gc, group + "y", member, "__consumer_offsets")[0] == 130
    body = (w.compact_string(group) + w.compact_string(member) + w.i32(0)
            + w.compact_array([]) + w.compact_array([]) + w.NO_TAGS + w.NO_TAGS)
    r = call(gc, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, body)
    r.i32()
    assert r.i16() == 35


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_pipelined_transactional_produces_keep_the_order_they_were_sent_in(broker, kafka44, which, topic_name):
    """Issue 57, defect 3: a transactional producer pipelines two produces to one partition,
    the first opening the transaction there (transactions v2: the leader adds the partition at
    the coordinator first), the second its next sequence. Kafka serves them one at a time; with
    overlapped processing Frieda checked the second while the first waited for the coordinator
    and refused it with OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka Streams' exactly-once producers
    re-initialised on it). Checked as ``pipelined_transactions`` says, against Kafka 4.4.0 too;
    tests/cluster/test_transactions_cluster.py runs it with the coordinator on another node."""
    b = broker.bootstrap if which == "frieda" else kafka44
    topic = topic_name()
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    retry(lambda: (lambda md: md if md.topics[topic].partitions else None)(admin.list_topics(topic, timeout=10)),
          "the topic's partition")
    txn_id = f"pipelined-{topic}"
    tc = retry(lambda: _try(lambda: coordinator(b, txn_id, 1)), "a transaction coordinator")
    pipelined_transactions(b, tc, topic, txn_id, 15)


@pytest.mark.parametrize("which", ["frieda", "kafka"])
def test_transactions_committing_offsets_out_of_order_keep_the_offset_written_later(broker, kafka44, which):
    """Two transactional producers commit offsets of one partition for one group (a group
    without members: its metadata from an unsubscribed consumer). A's TxnOffsetCommit (10) is
    written before B's (20), then B commits and A commits after it: the group's committed
    offset is B's 20. A committed transaction's offset replaces the current one only if its
    record was written later (Kafka's `OffsetMetadataManager.replayEndTransactionMarker`);
    the simulator (seed 21) found Frieda applying the last marker's offset, which answered 10.
    Then a plain commit (30) and a transaction written before it and committed after it (40):
    30 stays."""
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer

    b = broker.bootstrap if which == "frieda" else kafka44
    topic = f"txn-order-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    group = f"g-{topic}"
    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False})
    meta = consumer.consumer_group_metadata()

    def producer(name: str) -> Producer:
        p = Producer({"bootstrap.servers": b, "transactional.id": f"{name}-{topic}"})
        p.init_transactions(30)
        p.begin_transaction()
        return p

    def committed(stable: bool = True, until=None) -> int:
        """The committed offset (once stable: a transaction's markers land after its EndTxn
        is answered, and while a transaction's offset of the partition is pending OffsetFetch
        with require_stable answers UNSTABLE_OFFSET_COMMIT), or, not `stable`, once `until`."""
        parts = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
        deadline = time.monotonic() + 30
        while True:
            res = admin.list_consumer_group_offsets(parts, require_stable=stable)[group].result(30)
            tp = res.topic_partitions[0]
            if tp.error is None and (until is None or tp.offset == until):
                return tp.offset
            assert time.monotonic() < deadline, f"{which}: {tp.error}, offset {tp.offset}"
            time.sleep(0.2)

    a, b_ = producer("a"), producer("b")
    a.send_offsets_to_transaction([TopicPartition(topic, 0, 10)], meta, 30)
    b_.send_offsets_to_transaction([TopicPartition(topic, 0, 20)], meta, 30)
    b_.commit_transaction(30)
    committed(stable=False, until=20)  # A's offset is still pending
    a.commit_transaction(30)
    assert committed() == 20, f"{which}: the offset written later stays"

    a.begin_transaction()
    a.send_offsets_to_transaction([TopicPartition(topic, 0, 40)], meta, 30)
    consumer.commit(offsets=[TopicPartition(topic, 0, 30)], asynchronous=False)
    a.commit_transaction(30)
    assert committed() == 30, f"{which}: a plain commit written later stays"
    consumer.close()
