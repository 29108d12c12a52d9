"""Diskless topics (issue 60, docs/diskless.md) on a 3-broker cluster with a real S3 store
(SeaweedFS, ``weed mini``, as in test_tiered_storage.py; the bucket settings are tiered storage's
``remote.log.storage.system.enable`` and ``rsm.config.*``).

What this file proves, as a user sees it:

- A topic created with ``diskless.enable=true`` keeps its records in the bucket only: WAL objects
  under ``<rsm.config.key.prefix>diskless/wal/<32 hex digits>.wal`` that hold every acknowledged
  record's key, value and headers, while no broker's local directories of the topic hold a record
  byte (a classic topic beside it, checked the same way, does). Metadata names a running broker
  as the leader of each of its partitions (any broker serves them; Kafka's kafka-topics
  describes them so too). About 20,000 records of varied sizes (null keys, tombstones, headers,
  values up to 100 KB) from an idempotent acks=all confluent-kafka producer are read back by a
  consumer group from the beginning at their acknowledged offsets byte for byte, offsets dense
  from 0 in every partition; ListOffsets earliest/latest (confluent-kafka and Kafka's
  GetOffsetShell) agree; the group's committed offsets are the ends.
- ``diskless.enable=true`` is refused with INVALID_CONFIG on a cluster without a bucket, together
  with ``cleanup.policy=compact`` or ``remote.storage.enable=true``, and changing ``diskless.enable``
  of an existing topic either way (SET and DELETE) is refused too; nothing is created or changed.
- The broker leading ``__diskless_coordinator-0`` SIGKILLed (by PID) under an idempotent acks=all
  producer at about 2 MB/s, and restarted seconds later: production goes on once the coordinator
  partition has a new leader, every acknowledged record is read back at its acknowledged offset
  byte for byte, offsets are dense, no record is stored twice or out of its producer's order, and
  the log holds exactly the acknowledged records.
- Leaderless produce by rack (``test_diskless_leaderless_produce_by_rack_and_a_serving_broker_killed``):
  Metadata names a broker of the rack a client's ``client.id`` names (``diskless_az=``); three
  producers, one per rack, write every partition through their own broker; a broker that does
  not lead the coordinator is SIGKILLed and restarted; every acknowledged record reads back.
- Object affinity (``test_diskless_rack_reads_each_object_once_and_survives_a_paused_owner``):
  brokers 1 and 2 in rack-a, broker 3 in rack-b; a producer of rack-b writes every partition
  through broker 3, a consumer of rack-a reads them through brokers 1 and 2, so both read every
  object. Together they GET each block of the bucket at most once (each asks the object's owner
  in the rack for the other's), /metrics counts blocks given and served between them; then with
  broker 2 paused (SIGSTOP) while a second read runs, broker 1 reads from the bucket what broker
  2 owns, and every acknowledged record reads back byte for byte.
- Long polls (``test_diskless_waiting_consumers_long_poll_the_coordinator``): consumers waiting
  at the end of every partition, through brokers without the coordinator, cost the
  coordinator's broker about one Envelope request per partition and fetch, not one FindBatches
  per partition every 25 ms, and a record produced then reaches them within 3 s.
- Faults one after another under an idempotent acks=all producer at about 4 MB/s to 6 partitions
  (``test_diskless_faults_under_load``, the bucket behind tests/cluster/s3_fault_proxy.py): the
  store answers every request 503, then leaves every request hanging, then the coordinator's
  leader is paused (SIGSTOP) past its lease and resumed deposed, then the next coordinator leader
  is SIGKILLed and restarted. Acknowledgements resume after each fault, and every acknowledged
  record is read back at its offset byte for byte, offsets dense, none stored twice, nothing
  stored that was not acknowledged (only records whose delivery failed, with a retriable-class
  error, may or may not be stored).

- Compaction (``test_diskless_compaction_bounds_coordinates_through_a_coordinator_kill``): with
  a coordinate bound of 64 per partition, thousands of batches per partition are acknowledged
  and read back while the compacting coordinator leader is SIGKILLed and restarted, and the
  bucket ends with about one object per compaction size.
- The coordinate bound met (``test_diskless_partition_at_its_bound_refuses_and_producers_resend``):
  4 producers outrun a bound of 16; the batches refused KAFKA_STORAGE_ERROR are resent by
  librdkafka unseen, every record is read back in order, /metrics counts the refusals.

Transactions on diskless topics are tested in test_diskless_transactions.py.
"""

from __future__ import annotations

import random
import re
import threading
import time
import urllib.request
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from cluster_clients import ProducerThread, check_log, read_all, read_partitions, watermarks
from conftest import LOG_LEVEL, free_ports, wait_until
from kafka_wire_extra import parse_batches
from seaweedfs import started
from test_cluster import create
from test_kafka_tools_cluster import ROW, TOPICS, classpath, tool  # noqa: F401 (classpath: a fixture)

COORDINATOR = "__diskless_coordinator"
OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
KEY_PREFIX = "frieda-dl/"
WAL_KEY = re.compile(rf"^{re.escape(KEY_PREFIX)}diskless/wal/[0-9a-fA-F]{{32}}\.wal$")
UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture
def store(tmp_path):
    """SeaweedFS with the bucket of seaweedfs.py. Requested before ``cluster`` by each test, so
    the brokers stop before the store goes."""
    s = started(tmp_path)
    yield s
    s.kill()  # nothing of it is needed afterwards (SIGTERM may take up to 10 s)


# ---------------------------------------------------------------- helpers

def create_diskless(c, topic: str, partitions: int, config: dict | None = None) -> None:
    """CreateTopics (confluent-kafka's AdminClient) with ``diskless.enable=true``. (Kafka 4.4.0's
    kafka-topics cannot: it checks ``--config`` names against its own list before sending,
    ``LogConfig.validate``, and refuses ``diskless.enable`` as an unknown name.)"""
    nt = NewTopic(topic, num_partitions=partitions, replication_factor=3,
                  config={"diskless.enable": "true", **(config or {})})
    adm = c.admin()  # kept referenced until the result is in
    adm.create_topics([nt], operation_timeout=20, request_timeout=30)[topic].result(timeout=30)


def create_error(c, topic: str, config: dict, partitions: int = 1, rf: int = 3) -> KafkaError | None:
    """CreateTopics; the error it is answered with (None: created)."""
    adm = c.admin()
    try:
        adm.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf, config=config)],
                          operation_timeout=20, request_timeout=30)[topic].result(timeout=30)
        return None
    except KafkaException as e:
        return e.args[0]


def alter_error(c, topic: str, name: str, value: str | None) -> KafkaError | None:
    """IncrementalAlterConfigs of one topic config (SET ``value``, or DELETE when None); the
    error it is answered with (None: altered)."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    res = ConfigResource("TOPIC", topic, incremental_configs=[ConfigEntry(name, value, incremental_operation=op)])
    adm = c.admin()
    try:
        adm.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=30)
        return None
    except KafkaException as e:
        return e.args[0]


def topic_config(c, topic: str, name: str) -> str | None:
    """DescribeConfigs: the topic's value of ``name`` (None: not described)."""
    res = ConfigResource("TOPIC", topic)
    adm = c.admin()
    entries = adm.describe_configs([res], request_timeout=30)[res].result(timeout=30)
    e = entries.get(name)
    return None if e is None else e.value


def assert_invalid_config(err: KafkaError | None, what: str) -> None:
    assert err is not None, f"{what}: accepted (want INVALID_CONFIG)"
    assert err.code() == KafkaError.INVALID_CONFIG, f"{what}: {err} (want INVALID_CONFIG)"
    print(f"{what}: {err.name()}: {err.str()}")


def assert_not_created(c, topic: str) -> None:
    """Metadata (allow_auto_topic_creation=false) of every running node does not know ``topic``."""
    for i in c.running():
        err, _parts = c.raw_metadata(i, [topic]).topics.get(topic, (UNKNOWN_TOPIC_OR_PARTITION, {}))
        assert err == UNKNOWN_TOPIC_OR_PARTITION, f"node {i}: a refused {topic} exists (Metadata error {err})"


def diskless_leader(c, topic: str, partitions: int, timeout: float = 30, exclude: int | None = None) -> int:
    """Until every running node's Metadata shows ``topic`` with ``partitions`` partitions, each
    led by a running broker other than ``exclude`` (any broker serves a diskless partition), and
    ``__diskless_coordinator-0`` led by the same broker on every node, not ``exclude``; returns
    that broker, the coordinator's leader. (Raw Metadata v7, which does not auto-create.)"""
    last = {}

    def ok():
        seen = set()
        running = set(c.running()) - {exclude}
        for i in c.running():
            md = c.raw_metadata(i, [topic, COORDINATOR])
            err, parts = md.topics.get(topic, (UNKNOWN_TOPIC_OR_PARTITION, {}))
            cerr, cparts = md.topics.get(COORDINATOR, (UNKNOWN_TOPIC_OR_PARTITION, {}))
            last[i] = (err, {p: x.leader for p, x in parts.items()}, cerr,
                       {p: x.leader for p, x in cparts.items()})
            if err or cerr or len(parts) != partitions or 0 not in cparts:
                return False
            lead = cparts[0].leader
            if lead not in running or any(x.leader not in running for x in parts.values()):
                return False
            seen.add(lead)
        return seen.pop() if len(seen) == 1 else False
    try:
        return wait_until(ok, timeout, f"every partition of {topic} and {COORDINATOR}-0 led by running brokers"
                          + (f" (not node {exclude})" if exclude is not None else ""))
    except AssertionError as e:
        raise AssertionError(f"{e}; per node (topic error, leaders, {COORDINATOR} error, leaders): {last}") from None


def served_leaders(c, topic: str, via: int, client_id: str = "frieda-it") -> dict[int, int]:
    """partition -> the broker node ``via``'s Metadata names as its leader, asked with
    ``client_id``."""
    _err, parts = c.raw_metadata(via, [topic], client_id=client_id).topics[topic]
    return {p: x.leader for p, x in parts.items()}


def local_log_bytes(c, topic: str) -> dict[tuple[int, str], int]:
    """(node, partition directory) -> bytes of the ``.log`` segment files in it, for every
    directory of ``topic``'s partitions under each node's data dir."""
    pattern = re.compile(rf"^{re.escape(topic)}-\d+$")
    out = {}
    for nid, node in c.nodes.items():
        if not node.data_dir.exists():
            continue
        for d in node.data_dir.rglob(f"{topic}-*"):
            if d.is_dir() and pattern.match(d.name):
                out[(nid, str(d.relative_to(node.data_dir)))] = sum(f.stat().st_size for f in d.glob("*.log"))
    return out


def offsets_by_partition(cp: str, boot: str, topic: str, spec: int) -> dict[int, int]:
    """Kafka's GetOffsetShell (kafka-get-offsets) ``--time spec``: partition -> offset."""
    out = tool(cp, OFFSETS, "--bootstrap-server", boot, "--topic", topic, "--time", str(spec))
    return {int(p): int(o) for p, o in re.findall(rf"^{re.escape(topic)}:(\d+):(-?\d+)$", out, re.M)}


def assert_stored_in_order(c, topic: str, parts: int, got: dict, hw: dict[int, int],
                           counts: dict[int, int]) -> None:
    """Each partition's high watermark is its count of stored records (``counts``), its low
    watermark 0, and an idempotent producer's records (keys ending in ``-<sequence>``, the
    sequence's partition ``seq % parts``) sit in the order it produced them."""
    assert hw == {p: counts[p] for p in range(parts)}, (hw, dict(counts))
    assert {p: low for p, (low, _high) in watermarks(c.bootstrap, topic, parts, timeout=30).items()} == \
        {p: 0 for p in range(parts)}
    seqs = defaultdict(list)
    for (p, _off), (key, _value) in sorted(got.items()):
        seq = int(key.rpartition(b"-")[2])
        assert seq % parts == p, f"record {key!r} in partition {p}"
        seqs[p].append(seq)
    for p, s in seqs.items():
        bad = next((j for j in range(1, len(s)) if s[j] <= s[j - 1]), None)
        assert bad is None, f"{topic}[{p}]: sequence {s[bad]} at offset {bad} after {s[bad - 1]}"


def assert_all_acknowledged(producers) -> None:
    """Each of ``producers`` (stopped) had no delivery error and every record it sent
    acknowledged."""
    for prod in producers:
        assert not prod.errors, f"{prod.tag}: {len(prod.errors)} delivery errors, e.g. {prod.errors[:5]}"
        assert len(prod.acks) == prod.sent, (prod.tag, len(prod.acks), prod.sent)


def assert_one_producer_read_back(c, prod, topic: str, parts: int) -> tuple[dict, dict[int, int]]:
    """``prod`` (one idempotent producer, stopped) had no delivery error and every record it
    sent acknowledged; reading ``topic`` from offset 0 gives exactly those records at their
    offsets, byte for byte, dense, none twice, each partition in the producer's order
    (``check_log``, ``assert_stored_in_order``). Returns what was read and the high watermarks."""
    assert_all_acknowledged([prod])
    got, hw = read_all(c.bootstrap, topic, parts, timeout=120)
    check_log(prod, got, hw, topic, exact=True)
    counts = defaultdict(int)
    for a in prod.acks:
        counts[a.partition] += 1
    assert_stored_in_order(c, topic, parts, got, hw, counts)
    return got, hw


# ---- v2 record batches as a WAL object holds them (uncompressed)

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def batch_records(data: bytes, position: int, size: int, count: int) -> list[tuple]:
    """The records of the uncompressed v2 batch at ``position``: (key, value, headers), headers a
    tuple of (name, value) pairs; None for a null key, value or header value."""
    pos, end = position + 61, position + size
    out = []
    for _ in range(count):
        length, pos = _varint(data, pos)
        rec_end = pos + length
        pos += 1  # attributes
        _, pos = _varint(data, pos)  # timestamp delta
        _, pos = _varint(data, pos)  # offset delta
        fields = []
        for _ in range(2):
            n, pos = _varint(data, pos)
            fields.append(None if n < 0 else data[pos:pos + n])
            pos += max(n, 0)
        hcount, pos = _varint(data, pos)
        headers = []
        for _ in range(hcount):
            n, pos = _varint(data, pos)
            hk = data[pos:pos + n].decode()
            pos += n
            n, pos = _varint(data, pos)
            headers.append((hk, None if n < 0 else data[pos:pos + n]))
            pos += max(n, 0)
        assert pos == rec_end, f"record at {pos}: its fields end at {pos}, its length says {rec_end}"
        out.append((fields[0], fields[1], tuple(headers)))
    assert pos == end, f"batch at {position}: records end at {pos}, the batch at {end}"
    return out


def wal_contents(store) -> tuple[dict[str, int], set[tuple]]:
    """The WAL objects in the bucket (key -> size) and every record their batches hold."""
    objects = store.objects()
    outside = [k for k in objects if not k.startswith(KEY_PREFIX)]
    assert not outside, f"objects outside rsm.config.key.prefix {KEY_PREFIX!r}: {outside[:5]}"
    under = {k: s for k, s in objects.items() if k.startswith(KEY_PREFIX + "diskless/")}
    odd = [k for k in under if not WAL_KEY.match(k)]
    assert not odd, f"keys under {KEY_PREFIX}diskless/ that are not WAL objects: {odd[:5]}"
    records: set[tuple] = set()
    for key in sorted(under):
        data = store.get(key)
        assert len(data) == under[key], (key, len(data), under[key])
        batches = parse_batches(data, allow_partial_tail=False)
        assert batches, f"{key}: no record batch"
        for b in batches:
            assert b.crc_ok, f"{key}: the batch at byte {b.position} fails its CRC"
            assert b.codec == 0, f"{key}: the batch at byte {b.position} is compressed ({b.codec})"
            if b.attributes & 0x20:  # a control batch (none expected without transactions)
                continue
            records.update(batch_records(data, b.position, b.size, b.count))
    return under, records


# ---- a consumer group reading everything

def consume_group(bootstrap: str, topic: str, ends: dict[int, int], group: str,
                  timeout: float = 120) -> dict[tuple[int, int], tuple]:
    """A consumer group member (auto.offset.reset=earliest) subscribed to ``topic`` reads until it
    has each partition's records below ``ends``, then commits the ends and checks them committed.
    Returns {(partition, offset): (key, value, headers)}."""
    cons = Consumer({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, "check.crcs": True,
                     "fetch.wait.max.ms": 100})
    got: dict[tuple[int, int], tuple] = {}
    try:
        cons.subscribe([topic])
        todo = {p for p, e in ends.items() if e > 0}
        deadline = time.monotonic() + timeout
        while todo:
            assert time.monotonic() < deadline, \
                f"the group read {len(got)} records in {timeout}s; partitions not complete: {sorted(todo)}"
            for m in cons.consume(1000, 0.5):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(m.error())
                got[(m.partition(), m.offset())] = (m.key(), m.value(), tuple(m.headers() or ()))
                if m.offset() + 1 >= ends.get(m.partition(), 0):
                    todo.discard(m.partition())
        tps = [TopicPartition(topic, p, e) for p, e in sorted(ends.items())]
        cons.commit(offsets=tps, asynchronous=False)
        committed = {tp.partition: tp.offset for tp in cons.committed(tps, timeout=30)}
        assert committed == ends, f"committed offsets {committed} != {ends}"
    finally:
        cons.close()
    return got


# ---------------------------------------------------------------- 1. produce and read back

def test_diskless_roundtrip(store, cluster, topic_name, classpath):  # noqa: F811
    """Three partitions of a diskless topic; ~20,000 records of varied sizes from an idempotent
    acks=all producer; a consumer group reads them all back byte for byte at their acknowledged
    offsets; watermarks, the bucket and the local disks as the module docstring says."""
    ports = dict(zip((1, 2, 3), free_ports(3)))
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i]}"} for i in ports},
                **store.broker_settings(), **{"rsm.config.key.prefix": KEY_PREFIX})
    topic = topic_name()
    parts = 3
    create_diskless(c, topic, parts)
    leader = diskless_leader(c, topic, parts)
    served = served_leaders(c, topic, c.running()[0])
    print(f"{COORDINATOR}-0 led by node {leader}; the partitions of {topic} served by {served}")

    # Kafka's kafka-topics describes it: 3 partitions, each with the broker Metadata names,
    # diskless.enable=true.
    out = tool(classpath, TOPICS, "--bootstrap-server", c.bootstrap, "--describe", "--topic", topic)
    rows = {int(m[1]): int(m[2]) for m in ROW.finditer(out)}
    assert rows == served, out
    assert "diskless.enable=true" in out, out

    # ~20,000 records: null keys, tombstones, headers (repeated names, a null value), values of
    # 0.1-1 KB and every 400th of 30-100 KB; each with its own seeded random bytes (NUL, 0xff).
    n = 20_000
    rnd = random.Random(60)
    sent = []
    for i in range(n):
        key = None if i % 7 == 3 else b"k-%d-" % i + rnd.randbytes(rnd.randint(0, 40))
        if i % 501 == 17:
            value = None
        elif i % 400 == 5:
            value = b"v-%d-" % i + rnd.randbytes(rnd.randint(30_000, 100_000))
        else:
            value = b"v-%d-" % i + rnd.randbytes(rnd.randint(100, 1000))
        if i % 5 == 0:
            headers = (("seq", b"%d" % i), ("h", rnd.randbytes(rnd.randint(1, 30))), ("h", None))
        elif i % 5 == 1:
            headers = (("only", b"\x00\xff"),)
        else:
            headers = ()
        sent.append((i % parts, key, value, headers))

    acks: dict[int, tuple[int, int]] = {}
    errors = []
    reported = {}

    def report(i):
        def cb(err, msg):
            if err is not None:
                errors.append((i, err))
            else:
                acks[i] = (msg.partition(), msg.offset())
                reported[i] = (msg.key(), msg.value())
        return cb

    prod = Producer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "enable.idempotence": True,
                     "acks": "all", "compression.type": "none", "linger.ms": 20, "message.timeout.ms": 120000})
    t0 = time.monotonic()
    for i, (part, key, value, headers) in enumerate(sent):
        while True:
            try:
                prod.produce(topic, value=value, key=key, partition=part, headers=list(headers) or None,
                             on_delivery=report(i))
                break
            except BufferError:
                prod.poll(0.05)
        prod.poll(0)
    left = prod.flush(120)
    took = time.monotonic() - t0
    total = sum(len(k or b"") + len(v or b"") for _p, k, v, _h in sent)
    print(f"{n} records ({total / 1e6:.1f} MB) acknowledged in {took:.1f} s")
    assert left == 0, f"{left} records without a delivery report after 120 s"
    assert not errors, f"{len(errors)} delivery errors, e.g. {errors[:5]}"
    assert len(acks) == n
    wrong = [i for i in range(n) if reported[i] != sent[i][1:3] or acks[i][0] != sent[i][0]]
    assert not wrong, f"delivery reports not of the records sent: {wrong[:10]}"
    prod = None

    # Acknowledged offsets: dense from 0 in every partition, in the order produced.
    ends = {}
    for p in range(parts):
        mine = sorted(i for i in acks if acks[i][0] == p)
        offs = [acks[i][1] for i in mine]
        assert None not in offs, f"partition {p}: a delivery report without an offset"
        assert offs == list(range(len(mine))), f"partition {p}: acknowledged offsets not 0..{len(mine) - 1} in order"
        ends[p] = len(mine)

    # ListOffsets earliest/latest: confluent-kafka and Kafka's GetOffsetShell.
    wm = watermarks(c.bootstrap, topic, parts, timeout=30)
    assert wm == {p: (0, ends[p]) for p in range(parts)}, (wm, ends)
    assert offsets_by_partition(classpath, c.bootstrap, topic, -1) == ends
    assert offsets_by_partition(classpath, c.bootstrap, topic, -2) == {p: 0 for p in range(parts)}

    # A consumer group from the beginning: every record at its acknowledged offset, byte for byte.
    got = consume_group(c.bootstrap, topic, ends, group=f"g-{topic}")
    for p in range(parts):
        offs = sorted(o for (q, o) in got if q == p)
        assert offs == list(range(ends[p])), f"partition {p}: offsets read are not 0..{ends[p] - 1}"
    for i, (p, off) in acks.items():
        _part, key, value, headers = sent[i]
        k, v, h = got[(p, off)]
        at = f"{topic}[{p}]@{off} (record {i})"
        assert k == key, f"{at}: key {k!r:.60} != {key!r:.60}"
        assert v == value, f"{at}: value {v!r:.60} != {value!r:.60}"
        assert h == headers, f"{at}: headers {h!r:.120} != {headers!r:.120}"

    # The reads went through the brokers' fetch caches (diskless.fetch.cache.*), which hold
    # what each broker uploaded; a second group reads the same records byte for byte again,
    # and (almost) no GET of its own, where without the cache it would GET every object again.
    def fetch_cache(name):
        return sum(v for port in ports.values() for (n, _l, v) in scrape(port)
                   if n == f"frieda_diskless_fetch_cache_{name}_total")
    gets, hits = fetch_cache("gets"), fetch_cache("hits")
    assert hits > 0, "the first read found nothing in the fetch cache"
    again = consume_group(c.bootstrap, topic, ends, group=f"g2-{topic}")
    assert again == got, "the second group read other records than the first"
    gets2, hits2 = fetch_cache("gets"), fetch_cache("hits")
    print(f"fetch cache: {gets:.0f} GETs for the first group's read, {gets2 - gets:.0f} for the second's "
          f"({hits2 - hits:.0f} blocks found cached)")
    assert gets2 - gets <= max(2, gets // 10), f"the second read GET {gets2 - gets} blocks again (the first {gets})"
    assert hits2 > hits

    # The bucket holds WAL objects only, and in them every acknowledged record.
    objects, stored = wal_contents(store)
    wal_bytes = sum(objects.values())
    print(f"{len(objects)} WAL objects, {wal_bytes / 1e6:.1f} MB, {len(stored)} distinct records in them")
    assert objects, f"no object under {KEY_PREFIX}diskless/wal/"
    assert wal_bytes >= total, f"the WAL objects hold {wal_bytes} bytes, fewer than the {total} produced"
    missing = [i for i, (_p, k, v, h) in enumerate(sent) if (k, v, h) not in stored]
    assert not missing, f"{len(missing)} acknowledged records in no WAL object, e.g. records {missing[:10]}"

    # No broker holds a record byte of the diskless topic locally; a classic topic beside it,
    # seen the same way, does (so the look is at the right place).
    classic = topic_name("classic")
    create(c, classic, partitions=1, rf=3)
    cp = Producer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "acks": "all"})
    for i in range(10):
        cp.produce(classic, value=b"classic %d" % i, partition=0)
    assert cp.flush(30) == 0
    cp = None
    wait_until(lambda: (lambda b: len(b) == 3 and all(v > 0 for v in b.values()))(local_log_bytes(c, classic)),
               30, "the classic topic's records in its local partition directories on all 3 nodes")
    local = local_log_bytes(c, topic)
    print(f"local partition directories of {topic}: {local}")
    held = {k: v for k, v in local.items() if v}
    assert not held, f"local .log bytes of the diskless topic: {held}"


# ---------------------------------------------------------------- 2. refused configurations

def test_diskless_config_refusals(store, cluster, topic_name):
    """INVALID_CONFIG, and nothing created or changed: ``diskless.enable=true`` on a broker
    without the bucket settings; with the bucket, ``diskless.enable=true`` with
    ``cleanup.policy=compact`` or with ``remote.storage.enable=true``; ``diskless.enable`` of an
    existing diskless topic set to false or deleted (back to the default false), and of an
    existing classic topic set to true."""
    # One node without remote.log.storage.system.enable / rsm.config.*: no bucket to keep records.
    bare = cluster(1, **{"default.replication.factor": 1, "offsets.topic.replication.factor": 1,
                         "min.insync.replicas": 1})
    t = topic_name("nobucket")
    assert_invalid_config(create_error(bare, t, {"diskless.enable": "true"}, rf=1), "diskless without a bucket")
    assert_not_created(bare, t)
    bare.stop(1)

    c = cluster(3, **store.broker_settings())
    for what, config in (("with cleanup.policy=compact", {"cleanup.policy": "compact"}),
                         ("with remote.storage.enable=true", {"remote.storage.enable": "true"})):
        t = topic_name("refused")
        assert_invalid_config(create_error(c, t, {"diskless.enable": "true", **config}), f"diskless {what}")
        assert_not_created(c, t)

    diskless = topic_name("diskless")
    create_diskless(c, diskless, 1)
    diskless_leader(c, diskless, 1)
    classic = topic_name("classic")
    create(c, classic, partitions=1, rf=3)

    assert_invalid_config(alter_error(c, diskless, "diskless.enable", "false"), "diskless.enable set to false")
    assert_invalid_config(alter_error(c, diskless, "diskless.enable", None), "diskless.enable deleted")
    assert_invalid_config(alter_error(c, classic, "diskless.enable", "true"), "diskless.enable set on a classic topic")

    assert topic_config(c, diskless, "diskless.enable") == "true"
    assert topic_config(c, classic, "diskless.enable") in (None, "false")
    # still diskless: served by a running broker
    diskless_leader(c, diskless, 1, timeout=10)


# ---------------------------------------------------------------- 3. the coordinator's leader killed

class SizedProducer(ProducerThread):
    """ProducerThread whose values carry their tag and sequence number and 0-1,600 seeded random
    bytes (~0.8 KB on average), so that 2,500 records/s are about 2 MB/s."""

    def value_of(self, seq: int) -> bytes:
        rnd = random.Random(b"%s|%d" % (self.tag, seq))
        return b"%s|%d|" % (self.tag, seq) + rnd.randbytes(rnd.randint(0, 1600))


def test_diskless_coordinator_leader_killed(store, cluster, topic_name):
    """An idempotent acks=all producer (message.timeout.ms 120 s) at 2,500 records/s (~2 MB/s)
    to 3 partitions of a diskless topic for about 20 s; after ~5 s the broker leading
    ``__diskless_coordinator-0`` (found with confluent-kafka's list_topics) is SIGKILLed, and
    restarted ~5 s later. Session timeout 3 s (the fixture's): a new coordinator leader within
    60 s, acknowledgements resume. Then every
    record is read back from offset 0: exactly the acknowledged records (no delivery error), at
    their offsets, byte for byte, dense, none twice, each partition in its producer's order."""
    c = cluster(3, **store.broker_settings())
    topic = topic_name()
    parts = 3
    create_diskless(c, topic, parts)
    raw_leader = diskless_leader(c, topic, parts)
    victim = c.leader_of(COORDINATOR, 0)  # confluent-kafka list_topics("__diskless_coordinator")
    assert victim == raw_leader, (victim, raw_leader)

    prod = SizedProducer(c.bootstrap, topic, parts, rate=2500, tag="dl")
    t0 = time.monotonic()
    prod.start()
    try:
        prod.wait_acked(1000, 60, "before the kill")
        time.sleep(max(0.0, t0 + 5 - time.monotonic()))
        acked_before = len(prod.acks)
        c.kill(victim)
        t_kill = time.monotonic()
        print(f"node {victim} ({COORDINATOR}-0's leader) SIGKILLed {t_kill - t0:.1f} s in, "
              f"{acked_before} records acknowledged")

        new = diskless_leader(c, topic, parts, timeout=60, exclude=victim)
        print(f"node {new} leads {COORDINATOR}-0 and {topic} {time.monotonic() - t_kill:.1f} s after the kill")
        prod.wait_more(1000, 60, "after the coordinator's leader was killed")
        print(f"acknowledgements resumed {time.monotonic() - t_kill:.1f} s after the kill")

        time.sleep(max(0.0, t_kill + 5 - time.monotonic()))
        c.start(victim)
        print(f"node {victim} restarted {time.monotonic() - t_kill:.1f} s after the kill")
        prod.wait_more(1000, 60, "after the killed node restarted")
        time.sleep(max(0.0, t0 + 20 - time.monotonic()))
    finally:
        prod.stop(flush_timeout=120)
    print(f"{prod.sent} records sent; slowest acknowledgement {prod.max_latency():.1f} s")
    assert_one_producer_read_back(c, prod, topic, parts)


COMPACTION_LINE = re.compile(r"diskless compaction: runs of batches rewritten.*?runs=(\d+) coordinates=(\d+) bytes=(\d+)")


def scrape(port: int) -> list[tuple[str, str, float]]:
    """A node's /metrics as (name, labels as written inside the braces, value) samples."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = []
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
        if m:
            out.append((m.group(1), m.group(2) or "", float(m.group(3))))
    return out


def crowded_runs(c) -> int:
    """Compactions of crowded partitions (past the byte budget), summed over every broker's log
    lines (``crowded=``)."""
    return sum(int(m.group(1)) for path in sorted(c.workdir.glob("node-*.stderr"))
               for m in re.finditer(r"diskless compaction: runs of batches rewritten.*?crowded=(\d+)",
                                    path.read_text(errors="replace")))


def compaction_totals(c) -> tuple[int, int, int]:
    """(runs, coordinates, bytes) compacted, summed over every broker's log lines."""
    runs = coords = size = 0
    for path in sorted(c.workdir.glob("node-*.stderr")):
        for m in COMPACTION_LINE.finditer(path.read_text(errors="replace")):
            runs += int(m.group(1))
            coords += int(m.group(2))
            size += int(m.group(3))
    return runs, coords, size


def test_diskless_compaction_bounds_coordinates_through_a_coordinator_kill(store, cluster, topic_name):
    """Compaction (docs/diskless.md, "Compaction and garbage collection") keeps a diskless
    partition writable past its coordinate bound and its history readable.

    Brokers with ``diskless.coordinator.max.batches.per.partition=64`` (each produced batch is one
    coordinate: without compaction a partition refuses KAFKA_STORAGE_ERROR from its 65th batch
    on), ``diskless.compaction.max.bytes=131072``, ``diskless.compaction.max.age.ms=3000`` and
    ``diskless.object.delete.delay.ms=1000``. An idempotent acks=all producer (linger.ms 0 and
    batch.size 16 KiB, so batches are small and many: each produce request waits for an upload
    and a commit, about 4 batches per partition per second) sends 150 records/s to 2
    partitions for about 45 s, about 180 batches per partition (3x the bound); 10 s in, the broker leading ``__diskless_coordinator-0`` (which runs
    the compactions) is SIGKILLed and restarted 5 s later.

    Then: no delivery error, every record read back from offset 0 at its acknowledged offset byte
    for byte, dense, in its producer's order (each fetch of history reads compacted objects); the
    brokers' logs count the compacted runs (more coordinates replaced than the bound allows one
    partition to hold); and once quiet, the bucket holds few objects: the shared objects are
    deleted once compacted, so their count is about the bytes over the compaction size, far below
    the number of uploads."""
    settings = dict(store.broker_settings(), **{
        "diskless.coordinator.max.batches.per.partition": 64,
        "diskless.compaction.max.bytes": 131072,
        "diskless.compaction.max.age.ms": 3000,
        "diskless.object.delete.delay.ms": 1000,
    })
    c = cluster(3, **settings)
    topic = topic_name()
    parts = 2
    create_diskless(c, topic, parts)
    victim = diskless_leader(c, topic, parts)

    prod = SizedProducer(c.bootstrap, topic, parts, rate=150, tag="cp", linger_ms=0, batch_size=16384)
    t0 = time.monotonic()
    prod.start()
    try:
        prod.wait_acked(500, 60, "before the kill")
        time.sleep(max(0.0, t0 + 10 - time.monotonic()))
        c.kill(victim)
        t_kill = time.monotonic()
        print(f"node {victim} ({COORDINATOR}-0's leader, the compactor) SIGKILLed {t_kill - t0:.1f} s in, "
              f"{len(prod.acks)} records acknowledged")
        new = diskless_leader(c, topic, parts, timeout=60, exclude=victim)
        print(f"node {new} leads {COORDINATOR}-0 {time.monotonic() - t_kill:.1f} s after the kill")
        time.sleep(max(0.0, t_kill + 5 - time.monotonic()))
        c.start(victim)
        prod.wait_more(500, 60, "after the killed node restarted")
        time.sleep(max(0.0, t0 + 45 - time.monotonic()))
    finally:
        prod.stop(flush_timeout=120)
    got, hw = assert_one_producer_read_back(c, prod, topic, parts)

    # quiet: the last runs are compacted (max age 3 s), their shared objects deleted (1 s delay,
    # collected every 5 s)
    acked_bytes = sum(len(a.key or b"") + len(a.value) for a in prod.acks)
    bound = acked_bytes // 65536 + 4 * parts + 8

    def wal_objects() -> int:
        return len([k for k in store.objects() if "diskless/wal/" in k])

    def few_objects():
        return wal_objects() <= bound

    try:
        wait_until(few_objects, 60, f"at most {bound} objects in the bucket")
    finally:
        runs, coords, size = compaction_totals(c)
        n = wal_objects()
        print(f"{prod.sent} records ({acked_bytes / 1e6:.1f} MB) acknowledged; compaction: {runs} runs "
              f"replaced {coords} coordinates with {runs} ({size / 1e6:.1f} MB written); {n} objects in "
              f"the bucket (bound {bound})")
    assert coords > 3 * 64 * parts // 2, f"only {coords} coordinates compacted"
    # the history reads back the same after compaction settled (every record from a compacted object)
    again, hw2 = read_all(c.bootstrap, topic, parts, timeout=120)
    assert hw2 == hw and again == got


def test_diskless_compaction_budget_holds_back_all_but_crowded_partitions(store, cluster, topic_name):
    """Compaction's byte budget (``diskless.compaction.max.bytes.per.second``) keeps the rewrite
    off the produce path without ever refusing a produce: past it, only a partition holding half
    its coordinate bound is compacted.

    Brokers with the smallest budget (1024 B/s: a run of a few 16-KiB batches spends it for
    tens of seconds), ``diskless.coordinator.max.batches.per.partition=64``,
    ``diskless.compaction.max.bytes=1048576`` and ``diskless.compaction.max.age.ms=0`` (without
    the budget every batch would be compacted within a second of its commit, ~60 runs). An
    idempotent acks=all producer (linger.ms 0, batch.size 16 KiB: about 4 batches per partition
    per second) sends 150 records/s to 2 partitions for 30 s, about 120 batches per partition
    (nearly twice the bound).

    Then: no delivery error (crowded partitions compact past the budget, before the bound),
    every record read back at its acknowledged offset byte for byte, in order; the brokers' logs
    show compactions of crowded partitions (at least one per partition) and at most 8 others
    (what the budget let through); their /metrics (``frieda_diskless_compaction_*_total``) count
    the same runs, coordinates and bytes as their logs, and the coordinator's broker shows both
    partitions' coordinates (``frieda_diskless_partition_coordinates``) within the bound."""
    settings = dict(store.broker_settings(), **{
        "diskless.coordinator.max.batches.per.partition": 64,
        "diskless.compaction.max.bytes": 1048576,
        "diskless.compaction.max.age.ms": 0,
        "diskless.compaction.max.bytes.per.second": 1024,
    })
    ports = dict(zip((1, 2, 3), free_ports(3)))
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i]}"} for i in ports}, **settings)
    topic = topic_name()
    parts = 2
    create_diskless(c, topic, parts)
    prod = SizedProducer(c.bootstrap, topic, parts, rate=150, tag="bg", linger_ms=0, batch_size=16384)
    t0 = time.monotonic()
    prod.start()
    try:
        prod.wait_acked(500, 60, "at the start")
        time.sleep(max(0.0, t0 + 30 - time.monotonic()))
    finally:
        prod.stop(flush_timeout=120)
    assert_one_producer_read_back(c, prod, topic, parts)
    # /metrics says what the logs say: the counters add up to the log lines (no broker
    # restarted; read until a compaction finishing meanwhile is in both)
    seen = {}

    def agree() -> bool:
        seen["samples"] = [x for port in ports.values() for x in scrape(port)]
        seen["logs"] = compaction_totals(c)
        counters = tuple(sum(v for n, _lb, v in seen["samples"] if n == f"frieda_diskless_compaction_{k}_total")
                         for k in ("runs", "coordinates", "bytes"))
        return counters == seen["logs"]

    wait_until(agree, 20, "the compaction counters of /metrics add up to the brokers' log lines")
    runs, coords, size = seen["logs"]
    crowded = crowded_runs(c)
    print(f"{prod.sent} records acknowledged; compaction: {runs} runs ({crowded} of crowded partitions) "
          f"replaced {coords} coordinates ({size / 1e6:.2f} MB written)")
    assert crowded >= parts, f"only {crowded} compactions of crowded partitions"
    assert runs - crowded <= 8, f"{runs - crowded} compactions within a budget of 1024 B/s"
    # the coordinator's broker shows each partition's coordinates, within the bound
    held = {lb: v for n, lb, v in seen["samples"] if n == "frieda_diskless_partition_coordinates"}
    print(f"coordinates per partition: {held}")
    assert len(held) == parts and all(f'topic="{topic}"' in lb for lb in held), held
    assert all(1 <= v <= 64 for v in held.values()), held


def test_diskless_partition_at_its_bound_refuses_and_producers_resend(store, cluster, topic_name):
    """The coordinate bound as producers meet it: brokers with the least bound
    (``diskless.coordinator.max.batches.per.partition=16``), compaction only of crowded partitions
    (``diskless.compaction.max.age.ms`` 10 minutes, ``max.bytes`` 16 MiB: a run is rewritten only
    once its partition holds 8 coordinates, once a second; 16 coordinates of up to 16 MiB hold
    far more than the test writes, ~12 MB) and 4 idempotent acks=all producers (linger.ms 0, so
    each produce request is a batch of its own; up to 5 in flight each) sending 250 records/s
    each to one partition for 15 s: far more batches a second than 16.

    The partition's coordinator refuses the batches past the bound KAFKA_STORAGE_ERROR (and the
    ones behind them NOT_LEADER_OR_FOLLOWER), and librdkafka resends them, so the application
    sees no delivery error: every record acknowledged and read back at its offset byte for byte,
    none twice, each producer's records in its order. /metrics shows the refusals
    (``frieda_diskless_partition_refused_at_bound_total`` > 0 at the coordinator's broker) and
    the partition within the bound."""
    settings = dict(store.broker_settings(), **{
        "diskless.coordinator.max.batches.per.partition": 16,
        "diskless.compaction.max.bytes": 16 << 20,
        "diskless.compaction.max.age.ms": 600000,
    })
    ports = dict(zip((1, 2, 3), free_ports(3)))
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i]}"} for i in ports}, **settings)
    topic = topic_name()
    create_diskless(c, topic, 1)
    prods = [SizedProducer(c.bootstrap, topic, 1, rate=250, tag=f"b{i}", linger_ms=0) for i in range(4)]
    t0 = time.monotonic()
    for prod in prods:
        prod.start()
    try:
        for prod in prods:
            prod.wait_acked(100, 30, "at the start")
        time.sleep(max(0.0, t0 + 15 - time.monotonic()))
    finally:
        for prod in prods:
            prod.stop(flush_timeout=120)
    assert_all_acknowledged(prods)
    got, hw = read_all(c.bootstrap, topic, 1, timeout=120)
    check_log(prods, got, hw, topic, exact=True)
    assert hw == {0: sum(p.sent for p in prods)}, hw
    last: dict[bytes, int] = {}
    for (_p, off), (key, _value) in sorted(got.items()):
        tag, _, seq = key.rpartition(b"-")
        assert int(seq) > last.get(tag, -1), f"{key!r} at offset {off} after sequence {last[tag]} of {tag!r}"
        last[tag] = int(seq)
    samples = [x for port in ports.values() for x in scrape(port)]
    refused = sum(v for n, _lb, v in samples if n == "frieda_diskless_partition_refused_at_bound_total")
    held = [v for n, _lb, v in samples if n == "frieda_diskless_partition_coordinates"]
    runs, coords, _size = compaction_totals(c)
    print(f"{hw[0]} records acknowledged; {refused:.0f} batches refused at the bound and resent; "
          f"compaction: {runs} runs replaced {coords} coordinates; coordinates held: {held}")
    assert refused > 0, "no batch met the bound: the test did not test it"
    assert held and all(1 <= v <= 16 for v in held), held


# ---------------------------------------------------------------- 3b. leaderless: any broker, racks

RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}


def test_diskless_leaderless_produce_by_rack_and_a_serving_broker_killed(store, cluster, topic_name):
    """Three brokers in three racks (``broker.rack``), a diskless topic of 6 partitions.
    Metadata asked with a ``client.id`` naming a rack (``app,diskless_az=rack-b``, or Inkless's
    ``inkless_az=``) names that rack's broker as the leader of every partition; without one, the
    partitions are spread over the brokers. Three idempotent acks=all producers, one per rack
    (each ~1,000 records/s to all 6 partitions), so every broker takes produces for every
    partition and commits them (two of them at the coordinator on another broker). After ~5 s
    the broker of a rack that does not lead ``__diskless_coordinator-0`` is SIGKILLed: its rack's
    producer is told another broker and goes on; the broker restarts ~5 s later. Every
    acknowledged record of the three is read back at its offset byte for byte, offsets dense,
    none twice, nothing stored that was not acknowledged, each partition in each producer's
    order."""
    c = cluster(3, node_settings={i: {"broker.rack": r} for i, r in RACKS.items()}, **store.broker_settings())
    topic = topic_name()
    parts = 6
    create_diskless(c, topic, parts)
    coordinator = diskless_leader(c, topic, parts)
    via = c.running()[0]
    for node, rack in RACKS.items():
        for client_id in (f"app,diskless_az={rack}", f"inkless_az={rack} x=y"):
            served = served_leaders(c, topic, via, client_id)
            assert served == {p: node for p in range(parts)}, (client_id, served)
    spread = served_leaders(c, topic, via)
    assert len(set(spread.values())) > 1, f"without a rack every partition is served by one broker: {spread}"
    print(f"{COORDINATOR}-0 led by node {coordinator}; without a rack the partitions go to {spread}")

    producers = [SizedProducer(c.bootstrap, topic, parts, rate=1000, tag=f"r{node}",
                               client_id=f"producer-{node},diskless_az={rack}")
                 for node, rack in RACKS.items()]
    victim = next(n for n in RACKS if n != coordinator)
    t0 = time.monotonic()
    for prod in producers:
        prod.start()
    try:
        for prod in producers:
            prod.wait_acked(500, 60, f"{prod.tag} before the kill")
        time.sleep(max(0.0, t0 + 5 - time.monotonic()))
        c.kill(victim)
        t_kill = time.monotonic()
        print(f"node {victim} ({RACKS[victim]}, not the coordinator's leader) SIGKILLed {t_kill - t0:.1f} s in")
        for prod in producers:
            prod.wait_more(500, 60, f"{prod.tag} after node {victim} was killed")
        print(f"every producer acknowledged again {time.monotonic() - t_kill:.1f} s after the kill")
        time.sleep(max(0.0, t_kill + 5 - time.monotonic()))
        c.start(victim)
        for prod in producers:
            prod.wait_more(500, 60, f"{prod.tag} after node {victim} restarted")
        time.sleep(max(0.0, t0 + 20 - time.monotonic()))
    finally:
        for prod in producers:
            prod.stop(flush_timeout=120)
    assert_all_acknowledged(producers)
    print(f"{sum(p.sent for p in producers)} records acknowledged; slowest acknowledgement "
          f"{max(p.max_latency() for p in producers):.1f} s")

    got, hw = read_all(c.bootstrap, topic, parts, timeout=120)
    check_log(producers, got, hw, topic, exact=True)
    for prod in producers:
        # each producer's records, partition by partition, in the order it sent them
        last = {}
        for a in sorted(prod.acks, key=lambda a: a.seq):
            assert a.offset > last.get(a.partition, -1), (prod.tag, a)
            last[a.partition] = a.offset


def metric_sum(port: int, name: str) -> float:
    """The value of counter ``name`` (its ``_total`` sample) on the node with /metrics at
    ``port``."""
    return sum(v for (n, _l, v) in scrape(port) if n == f"{name}_total")


AFFINITY_RACKS = {1: "rack-a", 2: "rack-a", 3: "rack-b"}
BLOCK = 4 << 20  # diskless.fetch.cache.block.bytes' default


@pytest.mark.timeout(240)
def test_diskless_rack_reads_each_object_once_and_survives_a_paused_owner(store, cluster, topic_name):
    """Object affinity (diskless.fetch.cache.affinity.enable, on by default). Brokers 1 and 2 in
    rack-a, broker 3 in rack-b; a diskless topic of 6 partitions. An idempotent acks=all producer
    with ``client.id`` naming rack-b writes all partitions through broker 3 (~2 MB/s for 8 s), so
    every object holds every partition; a consumer naming rack-a is told brokers 1 and 2 for
    them, three partitions each, so both brokers read every object. Before affinity each GET
    every block (about twice the blocks in the bucket); now each block is GET once in rack-a,
    by its owner, and the other broker asks the owner: brokers 1 and 2 together make at most
    the bucket's block count of GETs (+2), and each both got and served blocks. Then a second
    8 s of records, and broker 2 paused (SIGSTOP) for 8 s while a second consumer reads
    everything: broker 1's asks of broker 2 time out (2 s) and it GETs those blocks itself
    (/metrics: peer fallbacks); every acknowledged record reads back at its offset byte for
    byte, offsets dense, exactly the acknowledged ones."""
    ports = dict(zip((1, 2, 3), free_ports(3)))
    # no compaction: reads go through the shared objects the producer's broker uploaded
    settings = {**store.broker_settings(), "rsm.config.key.prefix": KEY_PREFIX,
                "diskless.compaction.max.bytes": 1 << 30}
    c = cluster(3, node_settings={i: {"broker.rack": AFFINITY_RACKS[i], "metrics.listen": f"127.0.0.1:{ports[i]}"}
                                  for i in ports}, **settings)
    topic = topic_name()
    parts = 6
    create_diskless(c, topic, parts)
    diskless_leader(c, topic, parts)
    via = c.running()[0]
    assert set(served_leaders(c, topic, via, "p,diskless_az=rack-b").values()) == {3}
    readers = served_leaders(c, topic, via, "c,diskless_az=rack-a")
    assert set(readers.values()) == {1, 2}, readers

    prod = SizedProducer(c.bootstrap, topic, parts, rate=2500, tag="aff", client_id="p,diskless_az=rack-b")
    prod.start()
    try:
        prod.wait_acked(2000, 60, "phase 1")
        time.sleep(8)
        prod.pause()
        time.sleep(1)
        hw = {p: high for p, (_low, high) in watermarks(c.bootstrap, topic, parts, timeout=30).items()}
        before = {i: (metric_sum(ports[i], "frieda_diskless_fetch_cache_gets"),
                      metric_sum(ports[i], "frieda_diskless_fetch_cache_peer_reads"),
                      metric_sum(ports[i], "frieda_diskless_fetch_cache_peer_served")) for i in (1, 2)}
        got = read_partitions(c.bootstrap, topic, hw, timeout=120, client_id="c,diskless_az=rack-a")
        after = {i: (metric_sum(ports[i], "frieda_diskless_fetch_cache_gets"),
                     metric_sum(ports[i], "frieda_diskless_fetch_cache_peer_reads"),
                     metric_sum(ports[i], "frieda_diskless_fetch_cache_peer_served")) for i in (1, 2)}
        wal = {k: n for k, n in store.objects().items() if WAL_KEY.match(k)}
        blocks = sum(-(-n // BLOCK) for n in wal.values())
        gets = {i: after[i][0] - before[i][0] for i in (1, 2)}
        peer_reads = {i: after[i][1] - before[i][1] for i in (1, 2)}
        served = {i: after[i][2] - before[i][2] for i in (1, 2)}
        print(f"{sum(hw.values())} records in {len(wal)} objects ({blocks} blocks of 4 MiB): rack-a GET "
              f"{gets} blocks, got {peer_reads} from the other broker, served {served}")
        assert len(got) == sum(hw.values())
        assert sum(gets.values()) <= blocks + 2, \
            f"rack-a GET {gets} blocks for {blocks} in the bucket: each broker read the objects itself"
        assert all(v > 0 for v in peer_reads.values()), f"a broker got no block from the other: {peer_reads}"
        assert all(v > 0 for v in served.values()), f"a broker served no block to the other: {served}"

        # Phase 2: more records, then broker 2 paused while everything is read again.
        prod.resume()
        prod.wait_more(2000, 60, "phase 2")
        time.sleep(8)
    finally:
        prod.stop(flush_timeout=120)
    assert_all_acknowledged([prod])
    fallbacks0 = metric_sum(ports[1], "frieda_diskless_fetch_cache_peer_fallbacks")
    hw = {p: high for p, (_low, high) in watermarks(c.bootstrap, topic, parts, timeout=30).items()}
    c.pause(2)
    resumer = threading.Timer(8, c.resume, args=(2,))
    resumer.start()
    t0 = time.monotonic()
    try:
        got = read_partitions(c.bootstrap, topic, hw, timeout=150, client_id="c2,diskless_az=rack-a")
    finally:
        resumer.join()
        if c.nodes[2].paused:
            c.resume(2)
    fallbacks = metric_sum(ports[1], "frieda_diskless_fetch_cache_peer_fallbacks") - fallbacks0
    print(f"read {len(got)} records in {time.monotonic() - t0:.1f} s with broker 2 paused for 8 s; "
          f"broker 1 read {fallbacks:.0f} blocks from the bucket that broker 2 owns")
    assert fallbacks >= 1, "broker 1 never asked the paused broker 2 for a block"
    check_log(prod, {k: v for k, v in got.items()}, hw, topic, exact=True)
    counts = defaultdict(int)
    for a in prod.acks:
        counts[a.partition] += 1
    assert_stored_in_order(c, topic, parts, got, hw, counts)


def envelopes(port: int) -> float:
    """Envelope requests the node with /metrics at ``port`` has served (diskless calls from the
    other brokers)."""
    return sum(v for (n, labels, v) in scrape(port)
               if n == "kafka_network_requests_total" and 'request="Envelope"' in labels)


def test_diskless_waiting_consumers_long_poll_the_coordinator(store, cluster, topic_name):
    """Six partitions of a diskless topic, spread over the three brokers; four consumers
    (confluent-kafka, fetch.wait.max.ms 500) assigned to every partition at its end, so their
    fetches wait at each broker. A waiting fetch on a broker without the coordinator waits for
    the coordinator to change (one long poll per broker, ``Changed``, held up to 1 s) instead of
    asking it FindBatches per partition every 25 ms: over 5 idle seconds the coordinator's broker
    serves fewer than 150 Envelope requests a second (638 before long polls, one run; 4 consumers
    x 2 brokers x 2 partitions x 40 looks a second, fewer where a look takes a while; about 35
    with them: each fetch's one look per partition and the long polls). Then 20 records, one at
    a time: every consumer reads each within 3 s of its acknowledgement (a commit wakes the
    waiting fetches), byte for byte."""
    ports = dict(zip((1, 2, 3), free_ports(3)))
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i]}"} for i in ports},
                **store.broker_settings())
    topic = topic_name()
    parts = 6
    create_diskless(c, topic, parts)
    coordinator = diskless_leader(c, topic, parts)
    spread = served_leaders(c, topic, c.running()[0])
    assert set(spread.values()) - {coordinator}, f"every partition on the coordinator's broker: {spread}"
    prod = Producer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "acks": "all",
                     "enable.idempotence": True, "linger.ms": 0})
    for p in range(parts):
        prod.produce(topic, value=b"first-%d" % p, partition=p)
    assert prod.flush(60) == 0
    ends = {p: high for p, (_low, high) in watermarks(c.bootstrap, topic, parts, timeout=30).items()}
    assert ends == {p: 1 for p in range(parts)}, ends

    seen: list[dict] = [dict() for _ in range(4)]
    stop = threading.Event()
    errors = []

    def consume(k: int) -> None:
        cons = Consumer({"bootstrap.servers": c.bootstrap, "log_level": LOG_LEVEL, "group.id": f"unused-{k}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 500, "check.crcs": True})
        try:
            cons.assign([TopicPartition(topic, p, ends[p]) for p in range(parts)])
            while not stop.is_set():
                m = cons.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    errors.append(m.error())
                    continue
                seen[k][(m.partition(), m.offset())] = (m.value(), time.monotonic())
        except Exception as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)
        finally:
            cons.close()

    threads = [threading.Thread(target=consume, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(3)
        e0, t0 = envelopes(ports[coordinator]), time.monotonic()
        time.sleep(5)
        rate = (envelopes(ports[coordinator]) - e0) / (time.monotonic() - t0)
        print(f"coordinator on node {coordinator}, partitions on {spread}: {rate:.1f} Envelope requests/s "
              "with 4 consumers waiting")
        assert rate < 150, f"{rate:.0f} Envelope requests/s at the coordinator's broker with idle consumers"

        sent = {}
        for i in range(20):
            p = i % parts
            prod.produce(topic, value=b"later-%d" % i, partition=p,
                         on_delivery=lambda err, msg, i=i: sent.__setitem__(i, (err, msg.offset(), time.monotonic())))
            assert prod.flush(30) == 0
        assert all(err is None for err, _o, _t in sent.values()), sent
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
                (i % parts, sent[i][1]) not in seen[k] for k in range(4) for i in range(20)):
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors[:5]
    lags = []
    for k in range(4):
        for i in range(20):
            at = (i % parts, sent[i][1])
            assert at in seen[k], f"consumer {k} never read record {i} at {topic}[{at[0]}]@{at[1]}"
            value, t_read = seen[k][at]
            assert value == b"later-%d" % i, (k, i, value)
            lags.append(t_read - sent[i][2])
    print(f"read after acknowledgement: median {sorted(lags)[len(lags) // 2] * 1000:.0f} ms, "
          f"max {max(lags) * 1000:.0f} ms")
    assert max(lags) < 3, f"a record reached a waiting consumer {max(lags):.1f} s after its acknowledgement"


# ---------------------------------------------------------------- 4. store faults and coordinator failovers under load

class LoadProducer(ProducerThread):
    """ProducerThread whose values carry their tag and sequence number and 1,000-4,000 seeded
    random bytes (~2.5 KB on average)."""

    def value_of(self, seq: int) -> bytes:
        rnd = random.Random(b"%s|%d" % (self.tag, seq))
        return b"%s|%d|" % (self.tag, seq) + rnd.randbytes(rnd.randint(1000, 4000))


# Errors a client retries (KafkaError.retriable() aside): a delivery report with another error,
# or more than a few of these, fails the test.
RETRIABLE_CLASS = {KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                   KafkaError.REQUEST_TIMED_OUT, KafkaError.KAFKA_STORAGE_ERROR,
                   KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                   KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                   KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NETWORK_EXCEPTION}


class AckWatch:
    """How many of ``prod``'s records sent at or after a moment are acknowledged (the list of
    acknowledgements is scanned once, incrementally)."""

    def __init__(self, prod: ProducerThread):
        self.prod = prod
        self.seen = 0
        self.sent_at: list[float] = []

    def acked_sent_since(self, t: float) -> int:
        acks = self.prod.acks
        n = len(acks)
        self.sent_at.extend(a.sent for a in acks[self.seen:n])
        self.seen = n
        return sum(1 for s in self.sent_at if s >= t)

    def wait(self, t: float, n: int, timeout: float, what: str) -> float:
        """Until ``n`` records sent at or after ``t`` are acknowledged; returns when (monotonic)."""
        deadline = time.monotonic() + timeout
        while self.acked_sent_since(t) < n:
            assert self.prod.exc is None, f"producer thread failed: {self.prod.exc!r}"
            assert self.prod.is_alive(), "producer thread ended"
            assert time.monotonic() < deadline, (
                f"only {self.acked_sent_since(t)} of {n} records sent after {what} acknowledged within "
                f"{timeout} s; {len(self.prod.acks)} acknowledged in all; errors {self.prod.errors[:5]}")
            time.sleep(0.1)
        return time.monotonic()


@pytest.mark.timeout(240)
def test_diskless_faults_under_load(store, cluster, topic_name):
    """A 3-broker cluster whose bucket is reached through s3_fault_proxy.FaultProxy in front of
    SeaweedFS; a diskless topic of 6 partitions; an idempotent acks=all confluent-kafka producer
    (message.timeout.ms 120 s, other settings librdkafka's defaults but linger.ms 5) sends
    1,600 records/s of 1-4 KB values (~4 MB/s, catching up after a stall; librdkafka's queue
    bounded to 64 MB), while a nemesis, a few seconds apart:

    1. the store answers every request 503 SlowDown for 4 s;
    2. the store leaves every request hanging for 4 s (open connections reset when it heals);
    3. the broker leading ``__diskless_coordinator-0`` is SIGSTOPped for 12 s (session timeout
       3 s: another broker takes the coordinator over), then SIGCONTed, deposed;
    4. the (new) coordinator leader is SIGKILLed and restarted 5 s later;

    all the while compaction rewrites the partitions into 1 MiB objects
    (``diskless.compaction.max.bytes``) and the objects it replaces are deleted 2 s after
    (``diskless.object.delete.delay.ms``), so both meet every fault.

    After each fault, acknowledgements of records sent after it ended resume (500 within 60 s).
    Then production stops and every record is read back from offset 0: every acknowledged record
    at its acknowledged offset byte for byte, offsets dense from 0 (low watermark 0, every offset
    below the high watermark readable), none stored twice, each partition in its producer's
    order, and nothing stored that was not acknowledged, except records whose delivery report
    was an error: those may or may not be stored (at most once). Delivery errors must be few (at
    most 1% of the records) and each of a retriable class (``RETRIABLE_CLASS`` or
    ``KafkaError.retriable()``); they are printed. Compaction rewrote at least 50 MB (the
    brokers' log lines)."""
    from s3_fault_proxy import FaultProxy
    proxy = FaultProxy(store.ports["s3.port"])
    try:
        # compaction into 1 MiB objects and the deletion of what it replaces run all along
        settings = dict(store.broker_settings(), **{"rsm.config.storage.s3.endpoint.url": proxy.endpoint,
                                                    "rsm.config.key.prefix": KEY_PREFIX,
                                                    "diskless.compaction.max.bytes": 1 << 20,
                                                    "diskless.object.delete.delay.ms": 2000})
        c = cluster(3, **settings)
        print(f"cluster in {c.workdir}")
        topic = topic_name()
        parts = 6
        create_diskless(c, topic, parts)
        first = diskless_leader(c, topic, parts)
        print(f"{COORDINATOR}-0 and every partition of {topic} led by node {first}")

        rate = 1600
        prod = LoadProducer(c.bootstrap, topic, parts, rate=rate, tag="load",
                            queue_buffering_max_kbytes=65536, queue_buffering_max_messages=100000)
        watch = AckWatch(prod)
        phases: list[str] = []
        t0 = time.monotonic()

        def at(t: float) -> str:
            return f"{t - t0:5.1f} s"

        def resumed(what: str, since: float, healed: float) -> None:
            """Acknowledgements of records sent after ``healed`` resume; records the phase."""
            ok = watch.wait(healed, 500, 60, what)
            slowest = prod.max_latency(since)
            line = (f"{what}: fault {at(since)} .. {at(healed)}, acknowledgements of records sent after it "
                    f"resumed {ok - healed:.1f} s after it; slowest acknowledgement since its start "
                    f"{slowest:.1f} s; {len(prod.acks)} acknowledged so far")
            phases.append(line)
            print(line)

        prod.start()
        finished = False
        try:
            prod.wait_acked(2000, 60, "before the faults")
            time.sleep(max(0.0, t0 + 4 - time.monotonic()))

            # (1) 503 SlowDown, (2) hanging requests: 4 s each
            for mode in ("slowdown", "stall"):
                since = time.monotonic()
                proxy.set_mode(mode)
                time.sleep(4)
                proxy.set_mode("pass")
                healed = time.monotonic()
                assert proxy.faults[mode] > 0, f"no request reached the proxy in mode {mode}"
                print(f"{mode}: {proxy.faults[mode]} store requests faulted")
                resumed(f"store {mode}", since, healed)
                time.sleep(3)

            # (3) the coordinator's leader paused for 12 s, then resumed deposed
            paused = diskless_leader(c, topic, parts)
            since = time.monotonic()
            c.pause(paused)
            print(f"node {paused} ({COORDINATOR}-0's leader) SIGSTOPped at {at(since)}")
            new = diskless_leader(c, topic, parts, timeout=30, exclude=paused)
            print(f"node {new} leads {COORDINATOR}-0 {time.monotonic() - since:.1f} s after the pause")
            time.sleep(max(0.0, since + 12 - time.monotonic()))
            during = watch.acked_sent_since(since)
            c.resume(paused)
            healed = time.monotonic()
            print(f"node {paused} SIGCONTed at {at(healed)}; {during} records sent during the pause "
                  f"were acknowledged before it ended")
            resumed(f"node {paused} paused", since, healed)
            time.sleep(3)

            # (4) the coordinator's leader SIGKILLed, restarted 5 s later
            victim = diskless_leader(c, topic, parts, timeout=30)
            since = time.monotonic()
            c.kill(victim)
            print(f"node {victim} ({COORDINATOR}-0's leader) SIGKILLed at {at(since)}")
            new = diskless_leader(c, topic, parts, timeout=60, exclude=victim)
            print(f"node {new} leads {COORDINATOR}-0 {time.monotonic() - since:.1f} s after the kill")
            time.sleep(max(0.0, since + 5 - time.monotonic()))
            c.start(victim)
            healed = time.monotonic()
            print(f"node {victim} restarted at {at(healed)}")
            resumed(f"node {victim} killed", since, healed)
            time.sleep(3)
            finished = True
        finally:
            t_stop = time.monotonic()
            if finished:
                prod.stop(flush_timeout=90)
            else:  # the failure above is the one to report
                try:
                    prod.stop(flush_timeout=20)
                except AssertionError as e:
                    print(f"after the failure: {e}")
        flushed = time.monotonic()
        c.assert_alive()

        acked_bytes = sum(len(a.key) + len(a.value) for a in prod.acks)
        print(f"produced {t_stop - t0:.1f} s, flushed in {flushed - t_stop:.1f} s: {prod.sent} records sent, "
              f"{len(prod.acks)} acknowledged ({acked_bytes / 1e6:.1f} MB), {len(prod.errors)} delivery errors; "
              f"slowest acknowledgement {prod.max_latency():.1f} s; store faults {dict(proxy.faults)}")
        for line in phases:
            print("  " + line)
        by_code = defaultdict(list)
        for seq, err in prod.errors:
            by_code[err.name()].append(seq)
        for name, seqs in sorted(by_code.items()):
            print(f"delivery error {name}: {len(seqs)} records, e.g. seqs {sorted(seqs)[:10]}")
        assert len(prod.acks) + len(prod.errors) == prod.sent, (len(prod.acks), len(prod.errors), prod.sent)
        bad = [(seq, err) for seq, err in prod.errors if err.code() not in RETRIABLE_CLASS and not err.retriable()]
        assert not bad, f"{len(bad)} delivery errors not of a retriable class, e.g. {bad[:5]}"
        assert len(prod.errors) <= prod.sent // 100, f"{len(prod.errors)} delivery errors of {prod.sent} records"
        assert acked_bytes >= 100e6, f"only {acked_bytes / 1e6:.1f} MB acknowledged"

        t_read = time.monotonic()
        got, hw = read_all(c.bootstrap, topic, parts, timeout=90)
        print(f"read back {len(got)} records in {time.monotonic() - t_read:.1f} s; high watermarks {hw}")
        # every acknowledged record at its offset byte for byte, no gap below the high
        # watermarks, every stored record one produced, none twice; exact unless some failed
        failed = {seq for seq, _err in prod.errors}
        check_log(prod, got, hw, topic, exact=not failed)
        acked_keys = {(a.partition, a.key) for a in prod.acks}
        extra = [(p, off, key) for (p, off), (key, _v) in sorted(got.items()) if (p, key) not in acked_keys]
        unexplained = [x for x in extra if int(x[2].rpartition(b"-")[2]) not in failed]
        assert not unexplained, (f"{len(unexplained)} records stored that were never acknowledged nor reported "
                                 f"failed, e.g. {unexplained[:10]}")
        if failed:
            print(f"{len(extra)} of the {len(failed)} records whose delivery failed are stored")
        counts = defaultdict(int)
        for a in prod.acks:
            counts[a.partition] += 1
        for p, _off, _key in extra:
            counts[p] += 1
        assert_stored_in_order(c, topic, parts, got, hw, counts)
        runs, coords, size = compaction_totals(c)
        print(f"compaction during the faults: {runs} runs replaced {coords} coordinates ({size / 1e6:.1f} MB)")
        assert size >= 50e6, f"compaction rewrote only {size / 1e6:.1f} MB"
    finally:
        proxy.close()
