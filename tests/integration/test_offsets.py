"""Idempotent producer, ListOffsets (earliest / latest / by timestamp), out-of-range fetches."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import OffsetSpec
from kafka import KafkaConsumer, TopicPartition as KPTopicPartition

import helpers as h


def test_idempotent_producer_every_record_once_in_order(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    n = 3000
    now = int(time.time() * 1000)
    recs = [h.Rec(b"k%d" % (i % 23), b"seq-%06d" % i, [("i", b"%d" % i)], now - 60_000 + i) for i in range(n)]
    p = h.producer(broker.bootstrap, enable_idempotence=True, acks="all", linger_ms=2,
                   max_in_flight_requests_per_connection=5, batch_num_messages=50)
    log = h.produce_all(p, topic, recs)
    assert not log.errors, log.errors[:5]
    assert len(log.acked) == n
    ends = h.end_offsets_of(log.acked)
    assert sum(ends.values()) == n, f"log holds {sum(ends.values())} offsets for {n} records: duplicates?"
    got = h.consume_partitions(broker.bootstrap, topic, ends)
    assert len(got) == n
    h.check_acked(log.acked, got, topic)
    # per partition, the log order is the send order, each record exactly once
    sent_order: dict[int, list[bytes]] = {}
    by_rec = {id(a.rec): a for a in log.acked}
    for r in recs:
        sent_order.setdefault(by_rec[id(r)].partition, []).append(r.value)
    for part, values in sent_order.items():
        log_values = [got[(part, o)].value() for o in range(ends[part])]
        assert log_values == values, f"partition {part}: log order differs from send order"


def _produce_timestamped(bootstrap, topic, n=10, step=1000):
    t0 = int(time.time() * 1000) - 3_600_000 + 1000  # a bit under an hour ago
    recs = [h.Rec(b"k", b"v%d" % i, None, t0 + i * step, partition=0) for i in range(n)]
    # one record per request so that each has its own batch and timestamp index entry
    p = h.producer(bootstrap, acks="all", linger_ms=0)
    acked = []
    for r in recs:
        log = h.produce_all(p, topic, [r])
        assert not log.errors
        acked += log.acked
    assert [a.offset for a in acked] == list(range(n))
    return t0, acked


def test_list_offsets_earliest_latest_and_by_timestamp(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=2)
    c = h.consumer(broker.bootstrap)
    try:
        # empty partitions
        assert c.get_watermark_offsets(TopicPartition(topic, 1), timeout=10, cached=False) == (0, 0)
        t0, _ = _produce_timestamped(broker.bootstrap, topic)
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False) == (0, 10)
        assert c.get_watermark_offsets(TopicPartition(topic, 1), timeout=10, cached=False) == (0, 0)
        queries = {t0 - 5000: 0, t0: 0, t0 + 1: 1, t0 + 5500: 6, t0 + 9000: 9}
        for ts, want in queries.items():
            # one partition per query: librdkafka keeps one entry per partition
            tp = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)[0]
            assert tp.error is None, tp.error
            assert tp.offset == want, f"offsets_for_times({ts - t0:+d} ms from first) = {tp.offset}, want {want}"
        # a timestamp after every record: no offset (-1, "end")
        res = c.offsets_for_times([TopicPartition(topic, 0, t0 + 100_000)], timeout=10)
        assert res[0].error is None and res[0].offset == -1, res
        # the empty partition: no offset for any timestamp
        res = c.offsets_for_times([TopicPartition(topic, 1, t0)], timeout=10)
        assert res[0].offset == -1, res
    finally:
        c.close()

    # same through the admin API (ListOffsets with isolation level)
    a = h.admin(broker.bootstrap)
    specs = {TopicPartition(topic, 0): OffsetSpec.earliest()}
    assert a.list_offsets(specs, request_timeout=10)[TopicPartition(topic, 0)].result(10).offset == 0
    specs = {TopicPartition(topic, 0): OffsetSpec.latest()}
    assert a.list_offsets(specs, request_timeout=10)[TopicPartition(topic, 0)].result(10).offset == 10
    specs = {TopicPartition(topic, 0): OffsetSpec.for_timestamp(t0 + 2500)}
    r = a.list_offsets(specs, request_timeout=10)[TopicPartition(topic, 0)].result(10)
    assert r.offset == 3 and r.timestamp == t0 + 3000, (r.offset, r.timestamp, t0)

    # and through kafka-python
    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = KPTopicPartition(topic, 0)
        assert kc.beginning_offsets([tp]) == {tp: 0}
        assert kc.end_offsets([tp]) == {tp: 10}
        oft = kc.offsets_for_times({tp: t0 + 4000})[tp]
        assert oft.offset == 4 and oft.timestamp == t0 + 4000
    finally:
        kc.close()


def _first_message(c, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        return m
    return None


def test_fetch_out_of_range_reset_earliest(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    _produce_timestamped(broker.bootstrap, topic)
    c = h.consumer(broker.bootstrap, auto_offset_reset="earliest")
    try:
        c.assign([TopicPartition(topic, 0, 1000)])
        m = _first_message(c, 20)
        assert m is not None and m.error() is None, m and m.error()
        assert m.offset() == 0 and m.value() == b"v0"
    finally:
        c.close()


def test_fetch_out_of_range_reset_latest(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    _produce_timestamped(broker.bootstrap, topic)
    c = h.consumer(broker.bootstrap, auto_offset_reset="latest")
    try:
        c.assign([TopicPartition(topic, 0, 1000)])
        m = _first_message(c, 3)
        assert m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF), \
            f"expected nothing before a new record, got offset {m.offset()}"
        # after the reset the consumer sits at the log end: a new record is the next one
        p = h.producer(broker.bootstrap, acks="all")
        log = h.produce_all(p, topic, [h.Rec(b"k", b"after-reset", None, int(time.time() * 1000), partition=0)])
        assert log.acked[0].offset == 10
        m = _first_message(c, 20)
        assert m is not None and m.error() is None and m.offset() == 10 and m.value() == b"after-reset"
    finally:
        c.close()


def test_fetch_out_of_range_reset_error(broker, topic_name):
    """auto.offset.reset=error: the client surfaces the broker's OFFSET_OUT_OF_RANGE."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    _produce_timestamped(broker.bootstrap, topic)
    c = h.consumer(broker.bootstrap, auto_offset_reset="error")
    try:
        c.assign([TopicPartition(topic, 0, 1000)])
        m = _first_message(c, 20)
        assert m is not None and m.error() is not None, "expected an error for offset 1000 of 10"
        assert m.error().code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE), m.error()
    finally:
        c.close()


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_fetch_at_log_end_is_not_out_of_range(broker, topic_name, reset):
    """Fetching at exactly the high watermark waits for new records (long poll), no reset."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    _produce_timestamped(broker.bootstrap, topic)
    c = h.consumer(broker.bootstrap, auto_offset_reset=reset, fetch_wait_max_ms=500)
    try:
        c.assign([TopicPartition(topic, 0, 10)])
        assert _first_message(c, 2) is None
        p = h.producer(broker.bootstrap, acks="all")
        h.produce_all(p, topic, [h.Rec(None, b"eleventh", None, int(time.time() * 1000), partition=0)])
        t = time.monotonic()
        m = _first_message(c, 20)
        assert m is not None and m.error() is None and m.offset() == 10 and m.value() == b"eleventh"
        assert time.monotonic() - t < 5, "long poll did not return promptly after the record arrived"
    finally:
        c.close()
