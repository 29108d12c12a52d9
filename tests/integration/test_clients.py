"""Real clients produce keyed records with headers and read them back by assignment, byte for byte."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KPTopicPartition

import helpers as h

N = 300


def _assert_unique_offsets(acked):
    seen = {}
    for a in acked:
        k = (a.partition, a.offset)
        assert k not in seen, f"two acknowledged records got the same offset {k}"
        seen[k] = a


@pytest.mark.parametrize("acks", ["all", "1"])
def test_confluent_produce_consume_admin_topic(broker, topic_name, acks):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    recs = h.sample_records(N, seed=1 if acks == "all" else 2)
    p = h.producer(broker.bootstrap, acks=acks, enable_idempotence=False)
    log = h.produce_all(p, topic, recs)
    assert not log.errors, f"delivery errors: {log.errors[:5]}"
    assert len(log.acked) == N
    _assert_unique_offsets(log.acked)
    assert {a.partition for a in log.acked} == {0, 1, 2}, "keyed records should spread over all 3 partitions"
    for a in log.acked:
        assert a.timestamp == a.rec.timestamp, "delivery report timestamp should be the CreateTime we set"
    # per partition, offsets of acknowledged records are 0..n-1 (nothing else was written)
    ends = h.end_offsets_of(log.acked)
    assert sum(ends.values()) == N
    got = h.consume_partitions(broker.bootstrap, topic, ends)
    h.check_acked(log.acked, got, topic)
    assert len(got) == N


def test_confluent_explicit_partitions_and_keys_land_by_hash(broker, topic_name):
    """Records sent to an explicit partition land there; the same key always goes to the same partition."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    recs = h.sample_records(60, seed=7)
    for i, r in enumerate(recs[:30]):
        r.partition = i % 3
    p = h.producer(broker.bootstrap, acks="all")
    log = h.produce_all(p, topic, recs)
    assert not log.errors
    by_rec = {id(a.rec): a for a in log.acked}
    for r in recs[:30]:
        assert by_rec[id(r)].partition == r.partition
    key_part = {}
    for r in recs[30:]:
        if r.key:
            key_part.setdefault(r.key, set()).add(by_rec[id(r)].partition)
    assert key_part and all(len(s) == 1 for s in key_part.values()), key_part
    got = h.consume_partitions(broker.bootstrap, topic, h.end_offsets_of(log.acked))
    h.check_acked(log.acked, got, topic)


def test_confluent_auto_created_topic(broker, topic_name):
    """Producing to an unknown topic auto-creates it (Metadata auto-create, on by default)."""
    topic = topic_name()
    assert topic not in h.topic_names(broker.bootstrap)
    recs = h.sample_records(50, seed=3)
    p = h.producer(broker.bootstrap, acks="all")
    log = h.produce_all(p, topic, recs)
    assert not log.errors, log.errors[:3]
    assert topic in h.topic_names(broker.bootstrap)
    nparts = h.wait_topic(broker.bootstrap, topic)
    assert nparts >= 1
    assert {a.partition for a in log.acked} <= set(range(nparts))
    got = h.consume_partitions(broker.bootstrap, topic, h.end_offsets_of(log.acked))
    h.check_acked(log.acked, got, topic)


def test_auto_create_uses_configured_num_partitions(make_own_broker, topic_name):
    """Frieda's config file sets the default partition count of auto-created topics."""
    b = make_own_broker('"num.partitions" = 3\n"auto.create.topics.enable" = true\n')
    topic = topic_name()
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, h.sample_records(30, seed=5))
    assert not log.errors
    assert h.wait_topic(b.bootstrap, topic) == 3


def test_auto_create_disabled_by_config(make_own_broker, topic_name):
    b = make_own_broker('"auto.create.topics.enable" = false\n')
    topic = topic_name()
    p = h.producer(b.bootstrap, acks="all", message_timeout_ms=3000)
    log = h.produce_all(p, topic, h.sample_records(3, seed=5), timeout=20)
    assert not log.acked and len(log.errors) == 3
    assert topic not in h.topic_names(b.bootstrap)


# ---------------------------------------------------------------- kafka-python

def _kp_headers(rec):
    return [(k, v) for k, v in (rec.headers or [])]


@pytest.mark.parametrize("acks", ["all", 1])
def test_kafka_python_produce_consume(broker, topic_name, acks):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    recs = h.sample_records(200, seed=11)
    # kafka-python cannot send a null header value; use b"" there
    for r in recs:
        if r.headers:
            r.headers = [(k, v if v is not None else b"") for k, v in r.headers]
    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=acks, linger_ms=5,
                         max_request_size=2 * 1024 * 1024, request_timeout_ms=30000)
    try:
        futs = [(r, prod.send(topic, key=r.key, value=r.value, headers=_kp_headers(r), timestamp_ms=r.timestamp))
                for r in recs]
        prod.flush(timeout=60)
        acked = []
        for r, f in futs:
            md = f.get(timeout=30)
            acked.append(h.Acked(r, md.partition, md.offset, md.timestamp))
    finally:
        prod.close(timeout=10)
    _assert_unique_offsets(acked)
    assert {a.partition for a in acked} == {0, 1, 2}
    ends = h.end_offsets_of(acked)

    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         auto_offset_reset="none", fetch_max_wait_ms=100, consumer_timeout_ms=1000)
    got = {}
    try:
        tps = [KPTopicPartition(topic, p) for p in ends]
        cons.assign(tps)
        for tp in tps:
            cons.seek(tp, 0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
                max((o for (p, o) in got if p == tp.partition), default=-1) + 1 < ends[tp.partition] for tp in tps):
            batch = cons.poll(timeout_ms=500)
            for tp, msgs in batch.items():
                for m in msgs:
                    got[(m.partition, m.offset)] = m
    finally:
        cons.close()
    assert len(got) == len(recs), f"read back {len(got)} of {len(recs)}"
    for a in acked:
        m = got[(a.partition, a.offset)]
        where = f"{topic}[{a.partition}]@{a.offset}"
        assert m.key == a.rec.key, where
        assert (m.value or b"") == (a.rec.value or b""), where
        assert list(m.headers) == _kp_headers(a.rec), f"{where}: {m.headers} != {a.rec.headers}"
        assert m.timestamp == a.rec.timestamp and m.timestamp_type == 0, where  # 0 = CreateTime


def test_kafka_python_read_what_confluent_wrote(broker, topic_name):
    """Two client libraries agree on the bytes: confluent-kafka writes, kafka-python reads."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    recs = h.sample_records(40, seed=13)
    log = h.produce_all(h.producer(broker.bootstrap, acks="all", compression_type="none"), topic, recs)
    assert not log.errors
    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         fetch_max_wait_ms=100, consumer_timeout_ms=1000)
    tp = KPTopicPartition(topic, 0)
    got = {}
    try:
        cons.assign([tp])
        cons.seek_to_beginning(tp)
        deadline = time.monotonic() + 30
        while len(got) < len(recs) and time.monotonic() < deadline:
            for msgs in cons.poll(timeout_ms=500).values():
                for m in msgs:
                    got[m.offset] = m
    finally:
        cons.close()
    for a in log.acked:
        m = got[a.offset]
        assert m.key == a.rec.key and (m.value or b"") == a.rec.value and m.timestamp == a.rec.timestamp
        assert list(m.headers) == h.norm_headers(a.rec.headers)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_round_trip(broker, topic_name, codec):
    """Compressed batches are stored as received and come back intact."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    recs = h.sample_records(80, seed=17, big_every=1000)
    log = h.produce_all(h.producer(broker.bootstrap, acks="all", compression_type=codec, linger_ms=20), topic, recs)
    assert not log.errors
    got = h.consume_partitions(broker.bootstrap, topic, h.end_offsets_of(log.acked))
    h.check_acked(log.acked, got, topic)


def test_message_too_large_is_refused(broker, topic_name):
    """A record above the topic's max.message.bytes gets MSG_SIZE_TOO_LARGE; smaller ones still work."""
    from confluent_kafka import KafkaError
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"max.message.bytes": "200000"})
    p = h.producer(broker.bootstrap, acks="all", message_max_bytes=5_000_000, batch_size=5_000_000,
                   enable_idempotence=False)
    now = int(time.time() * 1000)
    big = h.Rec(b"big", b"x" * 400_000, None, now)
    small = h.Rec(b"small", b"y" * 1000, None, now)
    log = h.produce_all(p, topic, [big])
    assert not log.acked and len(log.errors) == 1
    assert log.errors[0][1].code() == KafkaError.MSG_SIZE_TOO_LARGE, log.errors[0][1]
    log2 = h.produce_all(p, topic, [small])
    assert not log2.errors and log2.acked[0].offset == 0, "the refused record must not take an offset"
    got = h.consume_partitions(broker.bootstrap, topic, {0: 1})
    h.check_acked(log2.acked, got, topic)
