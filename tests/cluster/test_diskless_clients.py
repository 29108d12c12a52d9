"""Diskless topics (issue 60) with the Java clients and Kafka's tools, and their lifecycle in the
bucket: 3 brokers, SeaweedFS (as test_diskless.py).

- Kafka's VerifiableProducer (the Java producer, idempotent, acks=all) writes 3,000 records to a
  diskless topic of 3 partitions; ConsoleConsumer (the Java consumer, a group member) reads every
  acknowledged record back at its partition and offset, each once. kafka-delete-records moves the
  fullest partition's start to a third of its records: it reports that low_watermark,
  GetOffsetShell's earliest says it, and a read from the beginning starts there with every
  acknowledged record from there on.
- ``retention.bytes`` on a diskless topic moves its log start past the oldest batches; a read from
  the beginning starts there.
- A consumer of a diskless topic is held to its ``consumer_byte_rate`` (set with Kafka's
  kafka-configs for its client id) as on other topics, while another client id reads everything
  in the same time.
- Deleting the topic empties the bucket: the coordinator forgets its partitions, their objects
  are deleted (``diskless.object.delete.delay.ms=0``), and an orphan (an object under
  ``diskless/wal/`` that no commit names, older than ``diskless.orphan.grace.ms``) is swept too,
  while a young one stays.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from conftest import wait_until
from seaweedfs import BUCKET
from test_diskless import KEY_PREFIX, create_diskless, diskless_leader, offsets_by_partition, store  # noqa: F401
from test_kafka_tools_cluster import CONSUMER, PRODUCER, classpath, java, tool  # noqa: F401

DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
WAL = KEY_PREFIX + "diskless/wal/"


def wal_objects(s) -> dict[str, int]:
    return {k: v for k, v in s.objects().items() if k.startswith(WAL)}


def test_java_clients_and_kafka_tools_on_a_diskless_topic(store, cluster, topic_name, classpath, tmp_path):  # noqa: F811
    c = cluster(3, **store.broker_settings(), **{"rsm.config.key.prefix": KEY_PREFIX})
    cp, boot, t = classpath, c.bootstrap, topic_name()
    create_diskless(c, t, 3)
    diskless_leader(c, t, 3)

    props = tmp_path / "producer.properties"
    props.write_text("enable.idempotence=true\nretries=2147483647\ndelivery.timeout.ms=120000\n"
                     "max.in.flight.requests.per.connection=5\nlinger.ms=5\n")
    out_path = tmp_path / "producer.jsonl"
    with open(out_path, "w") as out, open(tmp_path / "producer.stderr", "w") as err:
        prod = subprocess.Popen(java(cp, PRODUCER, "--bootstrap-server", boot, "--topic", t,
                                     "--max-messages", "3000", "--throughput", "1000", "--acks", "-1",
                                     "--value-prefix", "60", "--command-config", str(props)),
                                stdout=out, stderr=err)
    try:
        assert prod.wait(timeout=120) == 0, (tmp_path / "producer.stderr").read_text()[-3000:]
    finally:
        if prod.poll() is None:
            prod.kill()
            prod.wait()
    events = [json.loads(line) for line in out_path.read_text().splitlines() if line.startswith("{")]
    acked = [(e["partition"], e["offset"], e["value"]) for e in events if e["name"] == "producer_send_success"]
    errors = [e for e in events if e["name"] == "producer_send_error"]
    assert not errors, errors[:5]
    assert len(acked) == 3000, f"{len(acked)} of 3000 acknowledged"
    per_partition: dict[int, list[int]] = {}
    for p, o, _ in acked:
        per_partition.setdefault(p, []).append(o)
    for p, offsets in per_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"partition {p}: offsets not dense from 0"

    out = tool(cp, CONSUMER, "--bootstrap-server", boot, "--topic", t, "--from-beginning",
               "--group", "java-diskless", "--max-messages", "3000", "--timeout-ms", "30000",
               "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
               timeout=120)
    read = {(int(m[1]), int(m[2])): m[3] for m in re.finditer(r"Partition:(\d+)\tOffset:(\d+)\t(.*)", out)}
    for p, o, v in acked:
        assert read.get((p, o)) == v, f"acknowledged {v!r} at {t}-{p}@{o}, read {read.get((p, o))!r}"
    assert len(read) == len(set(read.values())) == 3000, f"{len(read)} records read"

    # kafka-delete-records on the partition with the most records (the Java producer's sticky
    # partitioner fills partitions unevenly).
    q = max(per_partition, key=lambda p: len(per_partition[p]))
    n0 = len(per_partition[q])
    cut = n0 // 3
    assert cut > 0, per_partition
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": q, "offset": cut}]}))
    out = tool(cp, DELETE_RECORDS, "--bootstrap-server", boot, "--offset-json-file", str(plan))
    assert re.search(rf"partition: {re.escape(t)}-{q}\s+low_watermark: {cut}\b", out), out
    assert offsets_by_partition(cp, boot, t, -2)[q] == cut
    assert offsets_by_partition(cp, boot, t, -1)[q] == n0
    values0 = {o: v for p, o, v in acked if p == q}
    cons = Consumer({"bootstrap.servers": boot, "group.id": "unused", "enable.auto.commit": False,
                     "auto.offset.reset": "error"})
    try:
        cons.assign([TopicPartition(t, q, OFFSET_BEGINNING)])
        got = {}
        deadline = time.monotonic() + 30
        while len(got) < n0 - cut and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got[m.offset()] = m.value().decode()
        assert sorted(got) == list(range(cut, n0)), sorted(got)[:5]
        assert all(got[o] == values0[o] for o in got)
    finally:
        cons.close()


def test_a_consumer_of_a_diskless_topic_is_held_to_its_quota(store, cluster, topic_name, classpath):  # noqa: F811
    """consumer_byte_rate 50 kB/s for client id quota-reader (kafka-configs); 3 MB in the topic.
    Kafka measures over 11 one-second windows (at least 10 s), so a client first gets about ten
    seconds' worth at once: in 8 s the quota's reader gets at most quota x (8 + 11) plus a fetch,
    about a third of it; a reader of another client id gets all 3 MB in the same 8 s (as
    tests/integration/test_quotas.py on a classic topic, where Kafka 4.4.0 holds to the same
    bound)."""
    c = cluster(3, **store.broker_settings(), **{"rsm.config.key.prefix": KEY_PREFIX})
    cp, boot, t = classpath, c.bootstrap, topic_name()
    create_diskless(c, t, 1)
    diskless_leader(c, t, 1)
    quota, n = 50_000, 3000
    # small batches: a fetch returns whole batches, and one larger than the quota allows in its
    # window would be throttled for ever (on Kafka too)
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 20, "batch.size": 16384})
    for i in range(n):
        p.produce(t, b"r" * 1000, partition=0)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    tool(cp, CONFIGS, "--bootstrap-server", boot, "--alter", "--add-config", f"consumer_byte_rate={quota}",
         "--entity-type", "clients", "--entity-name", "quota-reader")
    out = tool(cp, CONFIGS, "--bootstrap-server", boot, "--describe", "--entity-type", "clients",
               "--entity-name", "quota-reader")
    assert f"consumer_byte_rate={quota}" in out, out
    time.sleep(2)

    def read(client_id: str, secs: float) -> int:
        r = Consumer({"bootstrap.servers": boot, "client.id": client_id, "group.id": f"g-{client_id}",
                      "enable.auto.commit": False, "fetch.max.bytes": 1_100_000,
                      "max.partition.fetch.bytes": 100_000})
        r.assign([TopicPartition(t, 0, 0)])
        got, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < secs and got < n * 1000:
            m = r.poll(0.2)
            if m is not None and m.error() is None:
                got += len(m.value())
        r.close()
        return got

    free = read("free-reader", 8.0)
    held = read("quota-reader", 8.0)
    print(f"in 8 s: {free} bytes without a quota, {held} held to {quota} B/s")
    assert free == n * 1000, f"the reader without a quota got {free} of {n * 1000} bytes in 8 s"
    assert 0 < held <= quota * (8 + 11) + 200_000, held


def test_deleting_a_diskless_topic_empties_the_bucket(store, cluster, topic_name):  # noqa: F811
    c = cluster(3, **store.broker_settings(), **{
        "rsm.config.key.prefix": KEY_PREFIX,
        "diskless.object.delete.delay.ms": 0,
        "diskless.commit.max.age.ms": 1000,
        "diskless.orphan.grace.ms": 3000,
    })
    t = topic_name()
    create_diskless(c, t, 2)
    diskless_leader(c, t, 2)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 20})
    for i in range(2000):
        p.produce(t, value=b"x%d" % i * 50, partition=i % 2)
    assert p.flush(60) == 0
    made = wal_objects(store)
    assert made, "no WAL object in the bucket after producing"

    # Two objects no commit names: one from long ago (its UUIDv7 time is 2020), one just made.
    def uuid7(ms: int) -> str:
        return uuid.UUID(int=(ms << 80) | (0x7 << 76) | (0b10 << 62) | 12345).hex
    old = f"{WAL}{uuid7(1_600_000_000_000)}.wal"
    young = f"{WAL}{uuid7(int(time.time() * 1000) + 3_600_000)}.wal"  # an hour ahead: never old
    for key in (old, young):
        store.client().put_object(Bucket=BUCKET, Key=key, Body=b"orphan")

    # Retention by bytes on another diskless topic: 40 batches of ~1 KB, 4,000 bytes kept.
    r = topic_name()
    create_diskless(c, r, 1, {"retention.bytes": "4000"})
    diskless_leader(c, r, 1)
    for i in range(40):
        p.produce(r, value=b"%04d" % i + b"r" * 1000, partition=0)
        assert p.flush(30) == 0
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "unused"})
    try:
        def moved():
            lo, hi = cons.get_watermark_offsets(TopicPartition(r, 0), timeout=10)
            return (lo, hi) if hi == 40 and 40 - 4 <= lo < 40 else None
        lo, hi = wait_until(moved, 30, "retention.bytes=4000 moved the log start to keep <= 4 batches")
        print(f"retention.bytes: log start {lo}, high watermark {hi}")
        cons.assign([TopicPartition(r, 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < hi - lo and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.value()[:4]))
        assert got == [(o, b"%04d" % o) for o in range(lo, hi)], got
    finally:
        cons.close()

    adm = c.admin()  # kept referenced until the result is in
    adm.delete_topics([t], operation_timeout=30)[t].result(timeout=30)
    retained = {k for k in wal_objects(store) if k not in made and k not in (old, young)}
    wait_until(lambda: set(wal_objects(store)) - retained == {young}, 40,
               "the deleted topic's objects and the old orphan gone from the bucket, the young one kept")
    print(f"{len(made)} objects of the deleted topic and the orphan deleted; the young upload kept")
