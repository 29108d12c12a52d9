"""DeleteRecords (KIP-107) through confluent-kafka's AdminClient.delete_records, as
`kafka-delete-records.sh` uses it: the log start offset moves to the offset asked for, records
below it are gone for every reader, the rest come back at their offsets byte for byte, and the
new start survives a clean restart and a SIGKILL (it is persisted before it applies)."""

from __future__ import annotations

import signal

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

import helpers as h

T = 30


def _delete(a, topic: str, offsets: dict[int, int]) -> dict[int, object]:
    """{partition: DeletedRecords or the KafkaError code}."""
    fs = a.delete_records([TopicPartition(topic, p, o) for p, o in offsets.items()],
                          request_timeout=T, operation_timeout=T)
    out = {}
    for tp, f in fs.items():
        try:
            out[tp.partition] = f.result(timeout=T)
        except KafkaException as e:
            out[tp.partition] = e.args[0].code()
    return out


def _watermarks(bootstrap: str, topic: str, p: int) -> tuple[int, int]:
    c = h.consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, p), timeout=T)
    finally:
        c.close()


def _first_read(bootstrap: str, topic: str, p: int, start: int, reset: str):
    """The first message (or error) a consumer assigned at ``start`` gets."""
    c = h.consumer(bootstrap, auto_offset_reset=reset)
    try:
        c.assign([TopicPartition(topic, p, start)])
        for _ in range(60):
            m = c.poll(0.5)
            if m is not None:
                return m
        raise AssertionError(f"nothing read from {topic}[{p}] at {start}")
    finally:
        c.close()


def test_delete_records_moves_the_log_start_for_good(own_broker, topic_name):
    """Two partitions with small segments (4 KiB): 300 records in partition 0, 60 in 1. Deleting
    below offset 170 of partition 0 and below the high watermark (-1) of partition 1 answers
    low watermarks 170 and 60; ListOffsets earliest says so; a consumer reading from the
    beginning starts at 170 (every record from 170 on at its offset, byte for byte), one asking
    for offset 10 gets OFFSET_OUT_OF_RANGE; whole segments below 170 are deleted from disk. The
    start stays at 170 after a SIGTERM restart and after a SIGKILL; appends go on at 300."""
    b = own_broker
    topic = topic_name()
    a = h.admin(b.bootstrap)
    a.create_topics([NewTopic(topic, 2, 1, config={"internal.segment.bytes": "4096"})])[topic].result(T)
    h.wait_topic(b.bootstrap, topic, 2)
    recs = h.sample_records(360, big_every=10_000)
    for i, r in enumerate(recs):
        r.partition = 0 if i < 300 else 1
    log = h.produce_all(h.producer(b.bootstrap, enable_idempotence=True, acks="all", batch_num_messages=10), topic, recs)
    assert not log.errors
    assert _watermarks(b.bootstrap, topic, 0) == (0, 300)

    res = _delete(a, topic, {0: 170, 1: -1})
    assert res[0].low_watermark == 170, res
    assert res[1].low_watermark == 60, res

    def check() -> None:
        assert _watermarks(b.bootstrap, topic, 0) == (170, 300)
        assert _watermarks(b.bootstrap, topic, 1) == (60, 60)
        got = h.consume_partitions(b.bootstrap, topic, {0: 300}, start=170)
        h.check_acked([x for x in log.acked if x.partition == 0 and x.offset >= 170], got, topic)
        assert min(o for (_p, o) in got) == 170
        m = _first_read(b.bootstrap, topic, 0, OFFSET_BEGINNING, "error")
        assert m.error() is None and m.offset() == 170, (m.error(), m.offset())
        m = _first_read(b.bootstrap, topic, 0, 10, "error")
        assert m.error() is not None, f"read offset {m.offset()} below the log start"
        assert m.error().code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET), m.error()
        m = _first_read(b.bootstrap, topic, 0, 10, "earliest")
        assert m.error() is None and m.offset() == 170
        # no segment lies wholly below the start any more
        bases = sorted(int(f.stem) for f in (b.data_dir / f"{topic}-0").glob("*.log"))
        assert bases[0] <= 170 and (len(bases) == 1 or bases[1] > 170), bases
        assert bases[0] > 0, f"no segment was deleted: {bases}"

    check()
    b.restart(signal.SIGTERM)
    check()
    b.restart(signal.SIGKILL)
    check()
    more = h.produce_all(h.producer(b.bootstrap), topic, [h.Rec(b"k", b"after", None, 0, partition=0)])
    assert [x.offset for x in more.acked] == [300]
    # deleting less than what is gone already changes nothing
    assert _delete(a, topic, {0: 100})[0].low_watermark == 170


def test_delete_records_errors(broker, topic_name):
    """An offset past the high watermark is OFFSET_OUT_OF_RANGE, a compacted topic
    POLICY_VIOLATION (as Kafka); nothing moves. (A partition that does not exist never reaches
    the broker: librdkafka refuses it from the metadata.)"""
    topic, compacted = topic_name(), topic_name("c")
    a = h.admin(broker.bootstrap)
    fs = a.create_topics([NewTopic(topic, 1, 1), NewTopic(compacted, 1, 1, config={"cleanup.policy": "compact"})])
    for f in fs.values():
        f.result(T)
    h.wait_topic(broker.bootstrap, topic, 1)
    h.wait_topic(broker.bootstrap, compacted, 1)
    p = h.producer(broker.bootstrap)
    h.produce_all(p, topic, [h.Rec(b"k", b"v%d" % i, None, 0, partition=0) for i in range(10)])
    h.produce_all(p, compacted, [h.Rec(b"k%d" % i, b"v", None, 0, partition=0) for i in range(10)])
    assert _delete(a, topic, {0: 11})[0] == KafkaError.OFFSET_OUT_OF_RANGE
    assert _delete(a, compacted, {0: 5})[0] == KafkaError.POLICY_VIOLATION
    assert _watermarks(broker.bootstrap, topic, 0) == (0, 10)
    assert _watermarks(broker.bootstrap, compacted, 0) == (0, 10)
    assert _delete(a, topic, {0: 10})[0].low_watermark == 10
    assert _watermarks(broker.bootstrap, topic, 0) == (10, 10)
