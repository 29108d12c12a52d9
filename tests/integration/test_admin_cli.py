"""`frieda admin`, the native admin tool, checked with real clients as a user would: topics it
creates, configures and deletes are seen so by librdkafka's AdminClient; lines it produces come
back byte for byte, at their offsets, on the partitions Kafka's Java partitioner would choose;
what it prints of a group's offsets and lag is what the group committed; offsets it resets are
what the consumer then reads; ACLs it adds allow and deny what they say, over SASL_SSL with
Kafka client properties (`--command-config`).

The same tests run against Apache Kafka (the tool speaks only the Kafka protocol):

    FRIEDA_BIN=$PWD/tests/integration/tools/kafka_as_frieda.py FRIEDA_START_TIMEOUT=90 \\
      KAFKA_LIB=/tmp/kafka-4.4/lib FRIEDA_SECURITY_VS_KAFKA=1 \\
      .venv/bin/pytest -q tests/integration/test_admin_cli.py
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from conftest import REPO_ROOT, frieda_bin
from security_env import Pki, brokers_under_test, make_secure


def admin_bin() -> Path:
    """The real `frieda` binary (FRIEDA_BIN may be the Kafka wrapper when validating)."""
    if os.environ.get("FRIEDA_ADMIN_BIN"):
        return Path(os.environ["FRIEDA_ADMIN_BIN"])
    b = frieda_bin()
    return b if b.name == "frieda" else REPO_ROOT / "target" / "release" / "frieda"


def fa(bootstrap: str, *args: str, stdin: str | None = None, check: bool = True,
       config: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [str(admin_bin()), "admin", "--bootstrap-server", bootstrap]
    if config is not None:
        cmd += ["--command-config", str(config)]
    r = subprocess.run(cmd + list(args), input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def table(out: str, header: str) -> list[dict[str, str]]:
    """Rows of the table whose header line starts with `header`, as dicts."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(header))
    cols = lines[start].split()
    rows = []
    for l in lines[start + 1:]:
        if not l.strip():
            break
        rows.append(dict(zip(cols, l.split())))
    return rows


def wait_for(cond, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def commit(c: Consumer, offsets: list[TopicPartition]) -> bool:
    try:
        c.commit(offsets=offsets, asynchronous=False)
        return True
    except KafkaException as e:
        if e.args[0].retriable():
            return False
        raise


def topic_settings(bootstrap: str, topic: str) -> dict[str, tuple[str, int]]:
    a = AdminClient({"bootstrap.servers": bootstrap})
    fut = a.describe_configs([ConfigResource("topic", topic)])
    res = list(fut.values())[0].result(timeout=30)
    return {k: (v.value, v.source) for k, v in res.items()}


def test_topic_create_describe_alter_delete(broker, topic_name):
    b = broker.bootstrap
    t = topic_name()
    fa(b, "topic", "create", t, "--partitions", "3", "--replication-factor", "1",
       "--config", "retention.ms=123456", "--config", "max.message.bytes=200000")
    assert t in fa(b, "topic", "list").stdout.split()
    cfg = topic_settings(b, t)
    assert cfg["retention.ms"][0] == "123456" and cfg["max.message.bytes"][0] == "200000"

    out = fa(b, "topic", "describe", t).stdout
    head = out.splitlines()[0]
    assert "PartitionCount: 3" in head and "ReplicationFactor: 1" in head, out
    assert "max.message.bytes=200000" in head and "retention.ms=123456" in head, out
    parts = [l for l in out.splitlines() if "\tPartition: " in l]
    assert [re.search(r"Partition: (\d+)", l).group(1) for l in parts] == ["0", "1", "2"]
    # The topic id as Kafka's tools and clients print it (base64), not a UUID (issue 59).
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient
    client = AdminClient({"bootstrap.servers": b})  # kept referenced until the future resolves
    desc = client.describe_topics(TopicCollection([t]))[t].result(30)
    # librdkafka prints the id in standard base64 ('+', '/'); Kafka's `Uuid.toString` is the
    # URL-safe alphabet ('-', '_'), what frieda admin prints.
    kafkas = str(desc.topic_id).replace("+", "-").replace("/", "_")
    assert f"TopicId: {kafkas}\t" in head, (str(desc.topic_id), head)

    fa(b, "topic", "alter-config", t, "--set", "cleanup.policy=compact", "--delete", "retention.ms")
    cfg = topic_settings(b, t)
    assert cfg["cleanup.policy"][0] == "compact"
    assert cfg["retention.ms"][1] != 1, "retention.ms is back to its default"
    head = fa(b, "topic", "describe", t).stdout.splitlines()[0]
    assert "cleanup.policy=compact" in head and "retention.ms" not in head, head

    # Errors carry Kafka's name and a non-zero exit status.
    r = fa(b, "topic", "create", t, "--partitions", "1", check=False)
    assert r.returncode == 1 and "TOPIC_ALREADY_EXISTS" in r.stderr, r.stderr
    r = fa(b, "topic", "alter-config", t, "--set", "no.such.setting=1", check=False)
    assert r.returncode == 1 and "INVALID" in r.stderr, r.stderr

    fa(b, "topic", "delete", t)
    wait_for(lambda: t not in fa(b, "topic", "list").stdout.split(), "the topic to go")
    r = fa(b, "topic", "describe", t, check=False)
    assert r.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in r.stderr, r.stderr


def test_produce_and_consume_lines_round_trip_at_their_offsets(broker, topic_name):
    b = broker.bootstrap
    t, ref = topic_name("lines"), topic_name("ref")
    fa(b, "topic", "create", t, "--partitions", "4")
    fa(b, "topic", "create", ref, "--partitions", "4")
    keys = [f"key-{i}" for i in range(40)]
    lines = [f"{k}:value {i} \u00e9\u00e8 {'x' * i}" for i, k in enumerate(keys)]
    r = fa(b, "produce", t, "--key-separator", ":", stdin="\n".join(lines) + "\n")
    assert "Produced 40 record(s)" in r.stderr

    # Keyed records land where Kafka's Java partitioner puts them (murmur2; librdkafka's
    # murmur2_random partitioner is the same function for non-empty keys).
    p = Producer({"bootstrap.servers": b, "partitioner": "murmur2_random", "acks": "all"})
    placed = {}
    for k in keys:
        p.produce(ref, key=k.encode(), value=b"", on_delivery=lambda e, m: placed.__setitem__(m.key().decode(), m.partition()))
    assert p.flush(30) == 0

    c = Consumer({"bootstrap.servers": b, "group.id": f"g-{t}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(t, i, 0) for i in range(4)])
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < 40 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[m.key().decode()] = (m.partition(), m.offset(), m.value())
    c.close()
    assert len(got) == 40
    per_partition: dict[int, int] = {}
    for i, k in enumerate(keys):
        part, offset, value = got[k]
        assert value == lines[i].split(":", 1)[1].encode(), k
        assert part == placed[k], f"{k}: partition {part}, Kafka's partitioner says {placed[k]}"
        assert offset == per_partition.get(part, 0), "records of a partition keep their line order"
        per_partition[part] = offset + 1

    # And back out through `consume`: every record, at its offset, byte for byte.
    out = fa(b, "consume", t, "--from-beginning", "--max-messages", "40", "--print-key",
             "--print-offset", "--timeout-ms", "20000").stdout
    printed = {}
    for line in out.splitlines():
        where, key, value = line.split("\t", 2)
        part, offset = where.split(":")
        printed[key] = (int(part), int(offset), value.encode())
    assert printed == got

    # One partition from an offset.
    part = got["key-7"][0]
    out = fa(b, "consume", t, "--partition", str(part), "--offset", "1", "--timeout-ms", "3000").stdout
    expect = sorted((o, v) for (p_, o, v) in got.values() if p_ == part and o >= 1)
    assert out.encode().splitlines() == [v for _, v in expect]


def test_group_describe_shows_committed_offsets_and_lag_and_reset_moves_them(broker, topic_name):
    b = broker.bootstrap
    t = topic_name()
    g = f"group-{t}"
    fa(b, "topic", "create", t, "--partitions", "2")
    fa(b, "produce", t, "--partition", "0", stdin="".join(f"a{i}\n" for i in range(10)))
    fa(b, "produce", t, "--partition", "1", stdin="".join(f"b{i}\n" for i in range(6)))
    c = Consumer({"bootstrap.servers": b, "group.id": g, "enable.auto.commit": False})
    # A broker just started may still be loading its group coordinator (a retriable error).
    wait_for(lambda: commit(c, [TopicPartition(t, 0, 4), TopicPartition(t, 1, 6)]), "a commit")
    c.close()

    assert g in [r["GROUP"] for r in table(fa(b, "group", "list").stdout, "GROUP")]
    out = fa(b, "group", "describe", g).stdout
    assert "State: Empty" in out, out
    rows = {r["PARTITION"]: r for r in table(out, "GROUP")}
    assert (rows["0"]["CURRENT-OFFSET"], rows["0"]["LOG-END-OFFSET"], rows["0"]["LAG"]) == ("4", "10", "6")
    assert (rows["1"]["CURRENT-OFFSET"], rows["1"]["LOG-END-OFFSET"], rows["1"]["LAG"]) == ("6", "6", "0")

    def committed():
        c = Consumer({"bootstrap.servers": b, "group.id": g})
        offs = c.committed([TopicPartition(t, 0), TopicPartition(t, 1)], timeout=20)
        c.close()
        return [o.offset for o in offs]

    # A dry run prints the plan and changes nothing.
    out = fa(b, "group", "reset-offsets", g, "--topic", t, "--to-earliest").stdout
    assert {r["PARTITION"]: r["NEW-OFFSET"] for r in table(out, "GROUP")} == {"0": "0", "1": "0"}
    assert committed() == [4, 6]
    fa(b, "group", "reset-offsets", g, "--topic", f"{t}:0", "--shift-by", "-3", "--execute")
    assert committed() == [1, 6]
    fa(b, "group", "reset-offsets", g, "--topic", t, "--to-offset", "99", "--execute")
    assert committed() == [10, 6], "an offset past the end is kept at the high watermark"
    fa(b, "group", "reset-offsets", g, "--topic", f"{t}:0", "--to-offset", "8", "--execute")

    # The group's next consumer starts where the reset put it.
    c = Consumer({"bootstrap.servers": b, "group.id": g, "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    c.subscribe([t])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 2 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append((m.partition(), m.offset(), m.value()))
    # While it is a member, the group is active: describe names it, a reset is refused.
    out = fa(b, "group", "describe", g).stdout
    assert "State: Stable" in out, out
    owners = {r["CONSUMER-ID"] for r in table(out, "GROUP")}
    assert len(owners) == 1 and "-" not in owners, out
    r = fa(b, "group", "reset-offsets", g, "--topic", t, "--to-earliest", "--execute", check=False)
    assert r.returncode == 1 and "inactive" in r.stderr, r.stderr
    c.close()
    assert sorted(seen) == [(0, 8, b"a8"), (0, 9, b"a9")]


def test_cluster_status_names_the_broker_and_the_partitions(broker, topic_name):
    b = broker.bootstrap
    t = topic_name()
    fa(b, "topic", "create", t, "--partitions", "2")
    out = fa(b, "cluster", "status").stdout
    assert re.search(r"^Cluster id: \S+", out, re.M), out
    brokers = table(out, "BROKER")
    assert [r["ADDRESS"] for r in brokers] == [b] and brokers[0]["STATE"] == "running", out
    m = re.search(r"Partitions: (\d+), under-replicated: 0, offline: 0", out)
    assert m and int(m.group(1)) >= 2, out
    assert re.search(r"Controller quorum: leader \d+", out), out


def test_a_reader_that_closes_the_pipe_ends_the_tool_quietly(broker, topic_name):
    """`frieda admin consume ... | head -1`: the tool ends as other command-line tools do when
    its reader goes away (SIGPIPE), not with a panic ("Broken pipe", exit 101; issue 59)."""
    b = broker.bootstrap
    t = topic_name("pipe")
    fa(b, "topic", "create", t, "--partitions", "1")
    # 300 KB of output: more than a pipe holds, so the tool writes after the reader closed it
    lines = [f"{i:06d} " + "x" * 150 for i in range(2000)]
    fa(b, "produce", t, stdin="\n".join(lines) + "\n")
    p = subprocess.Popen([str(admin_bin()), "admin", "--bootstrap-server", b, "consume", t, "--from-beginning",
                          "--max-messages", "2000", "--timeout-ms", "20000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"000000 ")
    p.stdout.close()
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait(60)
    assert rc == -13, f"rc {rc} (SIGPIPE is -13): {err}"
    assert "panicked" not in err and "Broken pipe" not in err, err


def test_unreachable_cluster_and_bad_client_settings_fail_with_a_reason(tmp_path):
    r = subprocess.run([str(admin_bin()), "admin", "--bootstrap-server", "127.0.0.1:1", "topic", "list"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "no broker answered" in r.stderr, r.stderr
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
    r = subprocess.run([str(admin_bin()), "admin", "--command-config", str(cfg), "topic", "list"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "GSSAPI" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=brokers_under_test())
def acl_broker(request, tmp_path_factory, pki):
    b = make_secure(request.param, tmp_path_factory.mktemp(request.param), pki, authorizer=True)
    yield b
    b.stop()


def client_properties(path: Path, pki: Pki, user: str, password: str, mechanism: str = "PLAIN") -> Path:
    module = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule"}.get(
        mechanism, "org.apache.kafka.common.security.scram.ScramLoginModule")
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        f'sasl.jaas.config={module} required username="{user}" password="{password}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca_pem}\n")
    return path


def test_acls_over_sasl_ssl_with_kafka_client_properties(acl_broker, pki, tmp_path):
    b = acl_broker.bootstrap("SASL_SSL")
    admin = client_properties(tmp_path / "admin.properties", pki, "admin", "admin-secret")
    alice = client_properties(tmp_path / "alice.properties", pki, "alice", "alice-secret")
    t = f"acl-{os.getpid()}-{int(time.time() * 1000) % 100000}"
    fa(b, "topic", "create", t, "--partitions", "1", config=admin)

    # Alice may not write until an ACL says she may.
    r = fa(b, "produce", t, stdin="denied\n", config=alice, check=False)
    assert r.returncode == 1 and "AUTHORIZATION_FAILED" in r.stderr, r.stderr
    fa(b, "acl", "add", "--topic", t, "--allow-principal", "User:alice",
       "--operation", "Write", "--operation", "Describe", config=admin)
    out = fa(b, "acl", "list", "--topic", t, config=admin).stdout
    assert f"ResourcePattern(resourceType=TOPIC, name={t}, patternType=LITERAL)" in out, out
    for op in ("WRITE", "DESCRIBE"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in out, out
    fa(b, "produce", t, stdin="allowed\n", config=alice)

    # She still may not read; after a prefixed READ on topic and group she may.
    r = fa(b, "consume", t, "--from-beginning", "--timeout-ms", "3000", config=alice, check=False)
    assert r.returncode == 1 and "AUTHORIZATION_FAILED" in r.stderr, r.stderr
    fa(b, "acl", "add", "--topic", t[:5], "--resource-pattern-type", "prefixed",
       "--allow-principal", "User:alice", "--operation", "Read", config=admin)
    out = fa(b, "consume", t, "--from-beginning", "--max-messages", "1", "--timeout-ms", "20000",
             config=alice).stdout
    assert out == "allowed\n"

    # Alice cannot change ACLs; removing hers takes her write away again.
    r = fa(b, "acl", "add", "--topic", t, "--allow-principal", "User:bob", "--operation", "Read",
           config=alice, check=False)
    assert r.returncode == 1 and "AUTHORIZATION_FAILED" in r.stderr, r.stderr
    out = fa(b, "acl", "remove", "--topic", t, "--allow-principal", "User:alice",
             "--operation", "Write", config=admin).stdout
    assert "Removed 1 ACL(s)." in out, out
    out = fa(b, "acl", "list", "--principal", "User:alice", config=admin).stdout
    assert "operation=WRITE" not in out and "operation=DESCRIBE" in out and "operation=READ" in out, out

    def write_refused():
        r = fa(b, "produce", t, stdin="late\n", config=alice, check=False)
        return r.returncode == 1 and "AUTHORIZATION_FAILED" in r.stderr
    wait_for(write_refused, "the removed ACL to take effect")

    # Wrong password: the login is refused by name.
    wrong = client_properties(tmp_path / "wrong.properties", pki, "alice", "nope")
    r = fa(b, "topic", "list", config=wrong, check=False)
    assert r.returncode == 1 and "SASL" in r.stderr, r.stderr


def test_produce_creates_the_topic_where_the_broker_would(broker, topic_name):
    """Issue 59: `frieda admin produce` to a topic that does not exist creates it as Kafka's
    console producer does (its Metadata request allows auto-creation; the broker's
    `auto.create.topics.enable` is on by default), waits for its leaders, and writes."""
    b = broker.bootstrap
    t = topic_name("autocreated")
    assert t not in fa(b, "topic", "list").stdout.split()
    r = fa(b, "produce", t, stdin="one\ntwo\nthree\n")
    assert "Produced 3 record(s)" in r.stderr, r.stderr
    assert t in fa(b, "topic", "list").stdout.split()
    out = fa(b, "consume", t, "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000").stdout
    assert sorted(out.split()) == ["one", "three", "two"], out


def broker_id(bootstrap: str) -> int:
    return next(iter(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers))


def test_delete_records_moves_the_log_start_and_keeps_the_rest(broker, topic_name):
    """Issue 59: `topic delete-records TOPIC:PARTITION=OFFSET` moves the log start offset as
    `kafka-delete-records.sh` does (-1: up to the high watermark); what is left reads back byte
    for byte at its offsets; an offset above the high watermark is refused by name, with nothing
    deleted."""
    b = broker.bootstrap
    t = topic_name()
    fa(b, "topic", "create", t, "--partitions", "2", "--replication-factor", "1")
    p = Producer({"bootstrap.servers": b, "enable.idempotence": True, "linger.ms": 0})
    values = [f"record-{i}-\u00e9".encode() for i in range(10)]
    for v in values:
        p.produce(t, value=v, partition=0)
    p.produce(t, value=b"other", partition=1)
    assert p.flush(30) == 0

    r = fa(b, "topic", "delete-records", f"{t}:0=4", f"{t}:1=-1")
    assert f"partition: {t}-0\tlow_watermark: 4" in r.stdout, r.stdout
    assert f"partition: {t}-1\tlow_watermark: 1" in r.stdout, r.stdout
    c = Consumer({"bootstrap.servers": b, "group.id": f"{t}-check", "enable.auto.commit": False})
    assert c.get_watermark_offsets(TopicPartition(t, 0), timeout=30) == (4, 10)
    assert c.get_watermark_offsets(TopicPartition(t, 1), timeout=30) == (1, 1)
    c.assign([TopicPartition(t, 0, -2)])  # from the log start
    got = []
    deadline = time.time() + 30
    while len(got) < 6 and time.time() < deadline:
        m = c.poll(1)
        if m is not None and not m.error():
            got.append((m.offset(), m.value()))
    c.close()
    assert got == [(i, values[i]) for i in range(4, 10)], got

    r = fa(b, "topic", "delete-records", f"{t}:0=11", check=False)
    assert r.returncode == 1 and "OFFSET_OUT_OF_RANGE" in r.stderr, r.stderr
    c = Consumer({"bootstrap.servers": b, "group.id": f"{t}-check2"})
    assert c.get_watermark_offsets(TopicPartition(t, 0), timeout=30) == (4, 10)
    c.close()
    r = fa(b, "topic", "delete-records", f"{t}:0", check=False)
    assert r.returncode == 1 and "TOPIC:PARTITION=VALUE" in r.stderr, r.stderr


def test_broker_and_group_settings_are_what_librdkafka_describes(broker, topic_name):
    """Issue 59: `broker alter-config ID` / `--default` and `group alter-config` change the
    settings librdkafka's AdminClient then describes, with Kafka's sources (a broker's own
    dynamic value over the cluster-wide default over the file); `--delete` takes each back."""
    b = broker.bootstrap
    bid = broker_id(b)
    client = AdminClient({"bootstrap.servers": b})

    def broker_setting(name: str, rid: str) -> tuple[str, int]:
        res = list(client.describe_configs([ConfigResource("broker", rid)]).values())[0].result(30)
        return res[name].value, res[name].source

    fa(b, "broker", "alter-config", "--default", "--set", "log.retention.ms=654321000")
    fa(b, "broker", "alter-config", str(bid), "--set", "log.retention.ms=123456000")
    # ConfigSource: 2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG (librdkafka's codes).
    # Applied as the metadata reaches the broker (in Kafka too, a moment after the answer).
    wait_for(lambda: broker_setting("log.retention.ms", str(bid)) == ("123456000", 2), "the broker's value")
    rows = {r["NAME"]: r for r in table(fa(b, "broker", "describe-config", str(bid)).stdout, "NAME")}
    assert rows["log.retention.ms"]["VALUE"] == "123456000", rows.get("log.retention.ms")
    assert rows["log.retention.ms"]["SOURCE"] == "DYNAMIC_BROKER_CONFIG"
    rows = {r["NAME"]: r for r in table(fa(b, "broker", "describe-config", "--default").stdout, "NAME")}
    assert rows["log.retention.ms"]["SOURCE"] == "DYNAMIC_DEFAULT_BROKER_CONFIG", rows
    fa(b, "broker", "alter-config", str(bid), "--delete", "log.retention.ms")
    wait_for(lambda: broker_setting("log.retention.ms", str(bid)) == ("654321000", 3), "the default back")
    fa(b, "broker", "alter-config", "--default", "--delete", "log.retention.ms")
    wait_for(lambda: broker_setting("log.retention.ms", str(bid))[1] not in (2, 3), "the file's value back")
    r = fa(b, "broker", "alter-config", str(bid), "--set", "log.retention.ms=soon", check=False)
    # Kafka answers a bad broker value with INVALID_REQUEST (a topic's with INVALID_CONFIG).
    assert r.returncode == 1 and "INVALID_REQUEST" in r.stderr and "log.retention.ms" in r.stderr, r.stderr
    r = fa(b, "broker", "describe-config", check=False)
    assert r.returncode == 2, r.stderr

    g = topic_name("group")
    fa(b, "group", "alter-config", g, "--set", "consumer.session.timeout.ms=50000")
    res = list(client.describe_configs([ConfigResource("group", g)]).values())[0].result(30)
    assert res["consumer.session.timeout.ms"].value == "50000"
    rows = {r["NAME"]: r for r in table(fa(b, "group", "describe-config", g).stdout, "NAME")}
    assert list(rows) == ["consumer.session.timeout.ms"], rows
    assert rows["consumer.session.timeout.ms"]["SOURCE"] == "GROUP_CONFIG"
    assert "consumer.heartbeat.interval.ms" in fa(b, "group", "describe-config", g, "--all").stdout
    fa(b, "group", "alter-config", g, "--delete", "consumer.session.timeout.ms")
    res = list(client.describe_configs([ConfigResource("group", g)]).values())[0].result(30)
    assert res["consumer.session.timeout.ms"].value != "50000"


def test_group_delete_removes_an_empty_group_and_refuses_an_active_one(broker, topic_name):
    """Issue 59: `group delete` removes a group without members and its committed offsets (a
    new consumer of the group starts over from auto.offset.reset); a group with a member is
    refused with NON_EMPTY_GROUP and keeps its offsets; an unknown one is GROUP_ID_NOT_FOUND."""
    b = broker.bootstrap
    t, idle, active = topic_name(), topic_name("idle"), topic_name("active")
    fa(b, "topic", "create", t, "--partitions", "1", "--replication-factor", "1")
    c = Consumer({"bootstrap.servers": b, "group.id": idle, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, 0, 0)], asynchronous=False)
    c.close()
    member = Consumer({"bootstrap.servers": b, "group.id": active, "enable.auto.commit": False,
                       "session.timeout.ms": 45000})
    member.subscribe([t])
    wait_for(lambda: (member.poll(0.5), member.assignment())[1], "the member's assignment")
    member.commit(offsets=[TopicPartition(t, 0, 0)], asynchronous=False)
    try:
        r = fa(b, "group", "delete", idle, active, "no-such-group-" + idle, check=False)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"Deletion of requested consumer groups ('{idle}') was successful." in r.stdout, r.stdout
        assert f"Group '{active}' could not be deleted due to: DeleteGroups: NON_EMPTY_GROUP" in r.stderr, r.stderr
        assert "GROUP_ID_NOT_FOUND" in r.stderr, r.stderr
        groups = {row["GROUP"] for row in table(fa(b, "group", "list").stdout, "GROUP")}
        assert idle not in groups and active in groups, groups
        check = Consumer({"bootstrap.servers": b, "group.id": idle})
        assert check.committed([TopicPartition(t, 0)], timeout=30)[0].offset < 0
        check.close()
    finally:
        member.close()


def test_quotas_listed_by_principal(broker):
    """Issue 59: `quota alter` sets a user's, a user and client's and a default quota; `quota
    list --user alice` lists every quota whose entity names alice (her own and her client's),
    not others; `--delete` takes a quota back; values print as Kafka's tool prints them."""
    b = broker.bootstrap
    fa(b, "quota", "alter", "--user", "alice", "--set", "producer_byte_rate=1024")
    fa(b, "quota", "alter", "--user", "alice", "--client-id", "app", "--set", "consumer_byte_rate=2048")
    fa(b, "quota", "alter", "--user", "bob", "--set", "request_percentage=50")
    fa(b, "quota", "alter", "--client-default", "--set", "producer_byte_rate=4096")
    try:
        out = fa(b, "quota", "list", "--user", "alice").stdout.splitlines()
        assert out == ["Quota configs for user-principal 'alice' are producer_byte_rate=1024.0",
                       "Quota configs for user-principal 'alice', client-id 'app' are consumer_byte_rate=2048.0"], out
        out = fa(b, "quota", "list").stdout.splitlines()
        assert "Quota configs for user-principal 'bob' are request_percentage=50.0" in out, out
        assert "Quota configs for the default client-id are producer_byte_rate=4096.0" in out, out
        assert fa(b, "quota", "list", "--client-default").stdout.splitlines() == \
            ["Quota configs for the default client-id are producer_byte_rate=4096.0"]
        r = fa(b, "quota", "alter", "--user", "alice", "--set", "producer_byte_rate=fast", check=False)
        assert r.returncode == 1 and "a quota is a number" in r.stderr, r.stderr
        r = fa(b, "quota", "alter", "--user", "alice", "--set", "no_such_quota=1", check=False)
        assert r.returncode == 1 and "INVALID_REQUEST" in r.stderr, r.stderr
    finally:
        fa(b, "quota", "alter", "--user", "alice", "--delete", "producer_byte_rate")
        fa(b, "quota", "alter", "--user", "alice", "--client-id", "app", "--delete", "consumer_byte_rate")
        fa(b, "quota", "alter", "--user", "bob", "--delete", "request_percentage")
        fa(b, "quota", "alter", "--client-default", "--delete", "producer_byte_rate")
    assert fa(b, "quota", "list", "--user", "alice").stdout.strip() == "No quota matches."
