"""Kafka semantics the broker must match, checked through real clients (confluent-kafka,
kafka-python) and raw frames (kafka_wire / kafka_wire_extra) where no client can express the
input. Every test that uses the ``broker`` fixture also runs against Apache Kafka
(FRIEDA_EXTERNAL_BOOTSTRAP=host:port) to validate the expectation itself; checks of the data
dir and of broker settings need a broker started by the test and are skipped there.

- ListOffsets MAX_TIMESTAMP (KIP-734): the offset of the (first) record carrying the largest
  timestamp, not its batch's first offset; uncompressed and gzip/lz4/zstd/snappy; -1 when empty.
- Topic ``compression.type``: batches are stored in the topic's codec whatever the producer
  sent (``producer`` keeps the producer's), records read back byte for byte.
- A batch whose record count does not match its offset range is INVALID_RECORD (87) and stores
  nothing (the old broker stored it and rolled a new segment for each: fd exhaustion).
- ``message.timestamp.after.max.ms`` / ``message.timestamp.before.max.ms``: INVALID_TIMESTAMP
  (32), with record_errors and error_message in Produce v8+ responses.
- ``max.partitions.per.topic`` / ``max.broker.partitions`` (INVALID_PARTITIONS 37) and the
  broker's ``fetch.max.bytes`` (KIP-74).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                   OffsetSpec, ResourceType)

import helpers as h
import kafka_wire as w
import kafka_wire_extra as wx

T = 30  # seconds, every admin wait
INVALID_TIMESTAMP = 32
INVALID_PARTITIONS = 37


def _host_port(broker) -> tuple[str, int]:
    return broker.host, broker.port


def _fetch_all(broker, topic: str, partitions: int, max_bytes: int = 8 << 20) -> dict[int, wx.FetchPartition]:
    """One raw Fetch v11 of every partition from offset 0."""
    with w.connect(*_host_port(broker)) as s:
        _, err, parts = wx.parse_fetch_v11(w.request(s, wx.fetch_v11(
            1, {topic: [(p, 0, max_bytes) for p in range(partitions)]}, max_bytes)))
    assert err == 0, f"Fetch error {err}"
    return {fp.partition: fp for fp in parts}


def _watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    c = h.consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=T, cached=False)
    finally:
        c.close()


def _max_timestamp(a, topic: str, partition: int = 0):
    tp = TopicPartition(topic, partition)
    return a.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=T)[tp].result(timeout=T)


def _produce_one_batch(bootstrap: str, topic: str, timestamps: list[int], tag: str, codec: str) -> list[h.Acked]:
    """One produce call's worth of records, in one batch: the producer knows the topic's metadata
    before the first record (else librdkafka may send that record alone once the metadata
    arrives), and lingers 1 s."""
    p = h.producer(bootstrap, acks="all", linger_ms=1000, compression_type=codec)
    assert topic in p.list_topics(topic, timeout=T).topics
    recs = [h.Rec(b"key-%d" % i, (f"{tag} record {i} " * 20).encode(), [("i", b"%d" % i)], ts, 0)
            for i, ts in enumerate(timestamps)]
    log = h.produce_all(p, topic, recs)
    assert not log.errors, log.errors
    return sorted(log.acked, key=lambda a: a.offset)


# ---------------------------------------------------------------- 1. ListOffsets MAX_TIMESTAMP

@pytest.mark.parametrize("codec", ["none", "gzip", "lz4", "zstd", "snappy"])
def test_list_offsets_max_timestamp_is_the_record_not_its_batch(broker, topic_name, codec):
    topic = topic_name(codec)
    h.create_topic(broker.bootstrap, topic, partitions=1)
    a = h.admin(broker.bootstrap)
    empty = _max_timestamp(a, topic)
    assert (empty.offset, empty.timestamp) == (-1, -1), f"empty partition: {empty.offset}, {empty.timestamp}"

    base = int(time.time() * 1000) - 60_000
    first = _produce_one_batch(broker.bootstrap, topic, [base, base + 10, base + 50, base + 20, base + 50, base + 5],
                               "first", codec)
    second = _produce_one_batch(broker.bootstrap, topic, [base + 3, base + 60, base + 1, base + 60], "second", codec)
    assert [x.offset for x in first + second] == list(range(10))
    batches = wx.parse_batches(_fetch_all(broker, topic, 1)[0].records)
    assert [(b.base_offset, b.count) for b in batches] == [(0, 6), (6, 4)], \
        f"the scenario needs exactly two batches of 6 and 4 records: {[(b.base_offset, b.count) for b in batches]}"
    assert all(b.codec == wx.CODECS[codec] for b in batches), [b.codec for b in batches]

    # the largest timestamp is base+60, first carried by offset 7 (not its batch's offset 6)
    r = _max_timestamp(a, topic)
    assert (r.offset, r.timestamp) == (7, base + 60), f"max timestamp: offset {r.offset} ts {r.timestamp - base}"

    # the largest timestamp in the first batch, later batches smaller: offset 2 (base+50), not 0
    topic2 = topic_name(codec + "-one")
    h.create_topic(broker.bootstrap, topic2, partitions=1)
    _produce_one_batch(broker.bootstrap, topic2, [base, base + 10, base + 50, base + 20, base + 50, base + 5],
                       "only", codec)
    _produce_one_batch(broker.bootstrap, topic2, [base + 3, base + 7], "later", codec)
    r = _max_timestamp(a, topic2)
    assert (r.offset, r.timestamp) == (2, base + 50), f"max timestamp: offset {r.offset} ts {r.timestamp - base}"


# ---------------------------------------------------------------- 2. topic compression.type

PRODUCER_CODECS = {"gzip": ["none", "zstd"], "zstd": ["none", "lz4"], "lz4": ["none", "gzip"],
                   "snappy": ["none", "zstd"], "uncompressed": ["gzip", "lz4"], "producer": ["snappy", "none"]}


def _varied_records(n: int, tag: int, compressible: bool = False) -> list[h.Rec]:
    """``compressible``: every value gets 1 KiB of one repeated byte appended, so that any batch,
    even one of a single record of random bytes, is smaller compressed. librdkafka sends a batch
    uncompressed when its codec does not shrink it, and how records fall into batches depends on
    timing (a loaded machine made 29 one-record batches of 30 records)."""
    recs = h.sample_records(n, seed=tag, big_every=23)
    for r in recs:
        r.partition = 0
        if compressible:
            r.value = (r.value or b"") + b"z" * 1024
    return recs


@pytest.mark.parametrize("topic_codec", list(PRODUCER_CODECS))
def test_topic_compression_type_is_honoured(broker, topic_name, topic_codec):
    topic = topic_name(topic_codec)
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"compression.type": topic_codec})
    acked = []
    want_codecs = []
    for i, pc in enumerate(PRODUCER_CODECS[topic_codec]):
        p = h.producer(broker.bootstrap, acks="all", linger_ms=100, compression_type=pc)
        log = h.produce_all(p, topic, _varied_records(30, 100 + i, compressible=pc != "none"))
        assert not log.errors, log.errors
        acked += log.acked
        n = len(wx.parse_batches(_fetch_all(broker, topic, 1)[0].records, allow_partial_tail=False))
        want = wx.CODECS[pc] if topic_codec == "producer" else wx.CODECS[topic_codec]
        want_codecs += [want] * (n - len(want_codecs))
    batches = wx.parse_batches(_fetch_all(broker, topic, 1)[0].records, allow_partial_tail=False)
    assert [b.codec for b in batches] == want_codecs, \
        f"stored codecs {[b.codec for b in batches]}, want {want_codecs} (topic {topic_codec})"
    assert all(b.crc_ok for b in batches)
    assert batches[-1].last_offset + 1 == len(acked) == 60

    if broker.data_dir is not None:  # the segment file itself: attributes at bytes 21-22 of each batch
        seg = broker.data_dir / f"{topic}-0" / "00000000000000000000.log"
        stored = wx.parse_batches(seg.read_bytes(), allow_partial_tail=False)
        assert [b.codec for b in stored] == want_codecs
        assert [(b.base_offset, b.count) for b in stored] == [(b.base_offset, b.count) for b in batches]

    got = h.consume_partitions(broker.bootstrap, topic, {0: len(acked)}, check_crcs=True)
    h.check_acked(acked, got, topic)


def test_recompressed_batches_read_by_kafka_python(broker, topic_name):
    """kafka-python (its own gzip decoder) reads a topic recompressed to gzip byte for byte."""
    from kafka import KafkaConsumer, TopicPartition as KTP
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"compression.type": "gzip"})
    log = h.produce_all(h.producer(broker.bootstrap, acks="all", linger_ms=50), topic, _varied_records(40, 7))
    assert not log.errors
    assert {b.codec for b in wx.parse_batches(_fetch_all(broker, topic, 1)[0].records)} == {wx.CODECS["gzip"]}
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, check_crcs=True,
                      consumer_timeout_ms=10000)
    try:
        c.assign([KTP(topic, 0)])
        c.seek(KTP(topic, 0), 0)
        got = {}
        deadline = time.monotonic() + 20
        while len(got) < 40 and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                for m in recs:
                    got[m.offset] = m
    finally:
        c.close()
    for a in log.acked:
        m = got.get(a.offset)
        assert m is not None, f"offset {a.offset} not read by kafka-python"
        assert (m.key, m.value, m.timestamp) == (a.rec.key, a.rec.value, a.rec.timestamp)
        assert [(k, v) for k, v in m.headers] == [(k, v) for k, v in (a.rec.headers or [])]


# ---------------------------------------------------------------- 3. record count vs offset range

def _produce_raw(broker, topic: str, batch: bytes, corr: int = 1) -> w.PartitionProduceResponse:
    with w.connect(*_host_port(broker)) as s:
        _, parts = w.parse_produce_v9(w.request(s, w.produce_v9(corr, topic, 0, batch)))
    assert len(parts) == 1
    return parts[0]


@pytest.mark.parametrize("shape", ["0 records, last offset delta 2^31-1", "3 records, last offset delta 5"])
def test_record_count_must_match_offset_range(broker, topic_name, shape):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    now = int(time.time() * 1000)
    recs = [w.Record(b"k%d" % i, b"v%d" % i, [], now + i) for i in range(3)]
    ok = _produce_raw(broker, topic, wx.raw_batch(recs))
    assert (ok.error_code, ok.base_offset) == (0, 0)
    pdir = broker.data_dir / f"{topic}-0" if broker.data_dir is not None else None
    segments = wx.partition_segments(pdir) if pdir else None
    if shape.startswith("0"):
        bad = wx.raw_batch([], last_offset_delta=2**31 - 1)
    else:
        bad = wx.raw_batch(recs, last_offset_delta=5)
    for i in range(5):
        r = _produce_raw(broker, topic, bad, corr=10 + i)
        assert r.error_code == w.INVALID_RECORD, f"{shape}: error {r.error_code} ({r.error_message}), want 87"
        assert r.base_offset == -1
    assert _watermarks(broker.bootstrap, topic) == (0, 3), "a refused batch must store nothing"
    if pdir:
        assert wx.partition_segments(pdir) == segments, "refused batches must not roll segments"
    ok = _produce_raw(broker, topic, wx.raw_batch(recs), corr=99)
    assert (ok.error_code, ok.base_offset) == (0, 3), "the next valid batch continues at offset 3"
    got = h.consume_partitions(broker.bootstrap, topic, {0: 6}, check_crcs=True)
    assert [got[(0, o)].value() for o in range(6)] == [b"v0", b"v1", b"v2"] * 2


# ---------------------------------------------------------------- 4. timestamp bounds

def _produce_ts(bootstrap: str, topic: str, ts: int, value: bytes) -> tuple[object, int]:
    """(error or None, offset) of one record produced by confluent-kafka with timestamp ``ts``."""
    p = h.producer(bootstrap, acks="all", linger_ms=0, retries=0)
    out = []
    p.produce(topic, value=value, partition=0, timestamp=ts, on_delivery=lambda e, m: out.append((e, m.offset())))
    assert p.flush(20) == 0
    return out[0]


def _describe(a, topic: str) -> dict:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([res], request_timeout=T)[res].result(timeout=T)


def test_timestamp_after_max_ms(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    a = h.admin(broker.bootstrap)
    conf = _describe(a, topic)
    assert conf["message.timestamp.after.max.ms"].value == "3600000"
    assert conf["message.timestamp.before.max.ms"].value == "9223372036854775807"

    now = int(time.time() * 1000)
    err, _ = _produce_ts(broker.bootstrap, topic, now + 2 * 3600_000, b"future")
    assert err is not None and err.code() == KafkaError.INVALID_TIMESTAMP, f"2 h in the future: {err}"
    assert _watermarks(broker.bootstrap, topic) == (0, 0), "a refused record must not be stored"
    err, off = _produce_ts(broker.bootstrap, topic, now - 30 * 86400_000, b"old")  # before: unlimited
    assert err is None and off == 0, f"30 days old, default before.max.ms: {err}"

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(
        "message.timestamp.after.max.ms", str(3 * 3600_000), incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)
    deadline = time.monotonic() + 10
    while _describe(a, topic)["message.timestamp.after.max.ms"].value != str(3 * 3600_000):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    future = int(time.time() * 1000) + 2 * 3600_000
    err, off = _produce_ts(broker.bootstrap, topic, future, b"future")
    assert err is None and off == 1, f"2 h in the future with after.max.ms = 3 h: {err}"
    got = h.consume_partitions(broker.bootstrap, topic, {0: 2})
    assert got[(0, 1)].value() == b"future" and got[(0, 1)].timestamp() == (1, future)


def test_timestamp_before_max_ms(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"message.timestamp.before.max.ms": "60000"})
    now = int(time.time() * 1000)
    err, _ = _produce_ts(broker.bootstrap, topic, now - 600_000, b"ten minutes old")
    assert err is not None and err.code() == KafkaError.INVALID_TIMESTAMP, f"10 min old, before.max.ms 60 s: {err}"
    assert _watermarks(broker.bootstrap, topic) == (0, 0)
    err, off = _produce_ts(broker.bootstrap, topic, now, b"now")
    assert err is None and off == 0, err


def test_no_timestamp_is_not_checked(broker, topic_name):
    """Timestamp -1 (NO_TIMESTAMP, only a raw batch can carry it) is not checked, even with tight
    bounds both ways."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={
        "message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"})
    r = _produce_raw(broker, topic, w.record_batch([w.Record(b"k", b"no timestamp", [], -1)]))
    assert (r.error_code, r.base_offset) == (0, 0), f"timestamp -1: {r}"
    got = h.consume_partitions(broker.bootstrap, topic, {0: 1})
    assert got[(0, 0)].value() == b"no timestamp"


def test_produce_response_names_the_record_with_a_bad_timestamp(broker, topic_name):
    """Produce v9, a batch whose record 1 (of 3) is 2 h in the future: INVALID_TIMESTAMP, the
    response's record_errors holds (1, message), error_message is set, nothing is stored."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    now = int(time.time() * 1000)
    recs = [w.Record(b"k", b"v0", [], now), w.Record(b"k", b"v1", [], now + 2 * 3600_000),
            w.Record(b"k", b"v2", [], now)]
    r = _produce_raw(broker, topic, w.record_batch(recs))
    assert r.error_code == INVALID_TIMESTAMP, r
    assert [i for i, _ in r.record_errors] == [1], f"record_errors {r.record_errors}"
    assert r.record_errors[0][1] and str(now + 2 * 3600_000) in r.record_errors[0][1], r.record_errors
    assert r.error_message, "error_message must be set"
    assert _watermarks(broker.bootstrap, topic) == (0, 0)


def test_produce_response_lists_every_record_with_a_bad_timestamp(broker, topic_name):
    """As Kafka does: every invalid record of the batch is in record_errors (here 1 and 3 of 4,
    one too far ahead, one too old), not only the first."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"message.timestamp.before.max.ms": "60000"})
    now = int(time.time() * 1000)
    recs = [w.Record(b"k", b"v0", [], now), w.Record(b"k", b"v1", [], now + 2 * 3600_000),
            w.Record(b"k", b"v2", [], now), w.Record(b"k", b"v3", [], now - 600_000)]
    r = _produce_raw(broker, topic, w.record_batch(recs))
    assert r.error_code == INVALID_TIMESTAMP, r
    assert [i for i, _ in r.record_errors] == [1, 3], f"record_errors {r.record_errors}"
    assert _watermarks(broker.bootstrap, topic) == (0, 0)


# ---------------------------------------------------------------- 11. bounds

def _create_code(a, topic: str, partitions: int, validate_only: bool = False):
    fs = a.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                         validate_only=validate_only, operation_timeout=T, request_timeout=T)
    try:
        fs[topic].result(timeout=T)
        return None
    except KafkaException as e:
        return e.args[0].code()


def _grow_code(a, topic: str, partitions: int):
    fs = a.create_partitions([NewPartitions(topic, partitions)], operation_timeout=T, request_timeout=T)
    try:
        fs[topic].result(timeout=T)
        return None
    except KafkaException as e:
        return e.args[0].code()


def test_partition_bounds(make_own_broker, topic_name):
    """max.partitions.per.topic = 8, max.broker.partitions = 13: the single broker's internal
    logs (__consumer_offsets-0 and __transaction_state-0) count among the hosted partitions."""
    b = make_own_broker("max.partitions.per.topic = 8\nmax.broker.partitions = 13\n")
    a = h.admin(b.bootstrap)
    t1, t2, t3 = topic_name("a"), topic_name("b"), topic_name("c")
    assert _create_code(a, t1, 9) == INVALID_PARTITIONS, "9 partitions > max.partitions.per.topic 8"
    assert _create_code(a, t1, 9, validate_only=True) == INVALID_PARTITIONS
    assert t1 not in h.topic_names(b.bootstrap)
    assert _create_code(a, t1, 6) is None
    assert _grow_code(a, t1, 9) == INVALID_PARTITIONS, "growing to 9 > max.partitions.per.topic 8"
    assert _create_code(a, t2, 7) == INVALID_PARTITIONS, "6 (+2) + 7 > max.broker.partitions 13"
    assert t2 not in h.topic_names(b.bootstrap)
    assert _create_code(a, t2, 5) is None, "6 (+2) + 5 <= 13"
    assert _grow_code(a, t1, 8) == INVALID_PARTITIONS, "6 (+2) + 5 + 2 > 13"
    assert _create_code(a, t3, 2) == INVALID_PARTITIONS
    assert h.wait_topic(b.bootstrap, t1) == 6 and h.wait_topic(b.bootstrap, t2) == 5
    # refused requests left nothing behind: the topics still work
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), t1,
                        [h.Rec(b"k", b"v%d" % p, None, int(time.time() * 1000), p) for p in range(6)])
    assert not log.errors and len(log.acked) == 6


def _fill(bootstrap: str, topic: str, partitions: int, per_partition: int, value_size: int = 1000):
    p = h.producer(bootstrap, acks=1, linger_ms=20, batch_size=16384)
    for part in range(partitions):
        for i in range(per_partition):
            while True:
                try:
                    p.produce(topic, value=bytes([65 + part]) * value_size, partition=part)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
    assert p.flush(60) == 0


def _fetch_response_bounded(b, topic: str, partitions: int, limit: int, request_max: int) -> None:
    """Raw Fetch (request max_bytes ``request_max``, 50 MB per partition) of every partition:
    the records total at most ``limit``; a larger response is one whole first batch (KIP-74)."""
    with w.connect(b.host, b.port) as s:
        for offsets in ([0] * partitions, [900] + [0] * (partitions - 1)):
            _, err, parts = wx.parse_fetch_v11(w.request(s, wx.fetch_v11(
                1, {topic: [(p, offsets[p], 50 << 20) for p in range(partitions)]}, request_max), timeout=30))
            assert err == 0
            total = sum(len(fp.records) for fp in parts)
            got = [(fp.partition, fp.error_code, len(fp.records)) for fp in parts]
            assert total > 0, got
            if total > limit:
                first = next(fp for fp in parts if fp.records)
                whole = wx.parse_batches(first.records, allow_partial_tail=False)
                assert len(whole) == 1 and total == len(first.records), \
                    f"fetch from {offsets}: {total} bytes > {limit} and not one first batch: {got}"
            else:
                assert total <= limit, got


def test_broker_fetch_max_bytes(make_own_broker, topic_name):
    """fetch.max.bytes = 65536: a Fetch asking 50 MB over 4 partitions of ~1 MB each gets at most
    64 KiB of records; a 200 KB batch still goes out alone (KIP-74)."""
    b = make_own_broker("fetch.max.bytes = 65536\n")
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=4)
    _fill(b.bootstrap, topic, 4, 1000)
    log = h.produce_all(h.producer(b.bootstrap, acks="all", message_max_bytes=1 << 20), topic,
                        [h.Rec(None, b"B" * 200_000, None, int(time.time() * 1000), 0)])
    # partition 0: offsets 0..999 (~1 KB records, 16 KiB batches), then the 200 KB record at 1000
    assert not log.errors and log.acked[0].offset == 1000
    _fetch_response_bounded(b, topic, 4, 65536, 50 << 20)
    with w.connect(b.host, b.port) as s:
        _, _, parts = wx.parse_fetch_v11(w.request(s, wx.fetch_v11(
            2, {topic: [(0, 1000, 50 << 20), (1, 0, 50 << 20)]}, 50 << 20), timeout=30))
    sizes = {fp.partition: len(fp.records) for fp in parts}
    big = wx.parse_batches(parts[0].records, allow_partial_tail=False)
    assert len(big) == 1 and big[0].size > 200_000, "the 200 KB batch goes out whole (KIP-74)"
    assert sizes[1] == 0, f"nothing else fits once the first batch passed fetch.max.bytes: {sizes}"


def test_request_max_bytes_bounds_the_response(broker, topic_name):
    """The same bound from the request's max_bytes (65536) alone (runs against Kafka too)."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=4)
    _fill(broker.bootstrap, topic, 4, 1000)
    _fetch_response_bounded(broker, topic, 4, 65536, 65536)


def test_list_offsets_v11_tiered_timestamps_without_tiered_storage(broker, topic_name):
    """ListOffsets v11 (Kafka 4.2+, which version-inferring clients look for): latest (-1) and
    earliest (-2, -4) as usual; latest tiered (-5) and earliest pending upload (-6, KIP-1023) give
    offset -1 and leader epoch -1 without an error, as on Kafka 4.3.1 without tiered storage; -7
    is UNSUPPORTED_VERSION (35). Checked against Apache Kafka 4.3.1 with FRIEDA_EXTERNAL_BOOTSTRAP."""
    import struct

    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    p = h.producer(broker.bootstrap)
    for _ in range(3):
        p.produce(topic, value=b"x", partition=0)
    assert p.flush(30) == 0
    host, port = broker.bootstrap.rsplit(":", 1)

    def list_offset(ts: int) -> tuple[int, int, int, int]:
        body = (w.i32(-1) + w.i8(0) + w.compact_array([w.compact_string(topic) + w.compact_array(
            [w.i32(0) + w.i32(-1) + w.i64(ts) + b"\x00"]) + b"\x00"]) + w.i32(1000) + b"\x00")
        s = w.connect(host, int(port))
        try:
            s.sendall(w.frame(w.header_v2(2, 11, 7) + body))
            r = w.recv_frame(s)
        finally:
            s.close()
        assert struct.unpack(">i", r[:4])[0] == 7
        i = 4 + 1 + 4 + 1  # correlation id, header tags, throttle, topics (compact length 1 + 1)
        i += 1 + (r[i] - 1) + 1  # topic name, then the partitions' compact length
        part, err, t, off, ep = struct.unpack(">ihqqi", r[i:i + 26])
        assert part == 0
        return err, t, off, ep

    assert list_offset(-1)[:3] == (0, -1, 3)
    assert list_offset(-2)[:3] == (0, -1, 0)
    assert list_offset(-4)[:3] == (0, -1, 0)
    assert list_offset(-5) == (0, -1, -1, -1)
    assert list_offset(-6) == (0, -1, -1, -1)
    assert list_offset(-7) == (35, -1, -1, -1)
