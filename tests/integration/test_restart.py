"""Durability across restarts: clean stop/start, SIGTERM and SIGKILL in the middle of acks=all
production, a torn segment tail. These need a broker started by the test (skipped with
FRIEDA_EXTERNAL_BOOTSTRAP)."""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType

import helpers as h


RETRIABLE = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART}


def _watermarks(bootstrap, topic, partitions, timeout=30):
    """Watermarks per partition; retriable errors (a just-restarted broker) are retried for a while,
    as clients do."""
    c = h.consumer(bootstrap)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
                        for p in range(partitions)}
            except KafkaException as e:
                if e.args[0].code() not in RETRIABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


def _check_topic(bootstrap, topic, acked, partitions):
    """All acknowledged records at their offsets, byte for byte; offsets readable from 0 to the HW."""
    h.wait_topic(bootstrap, topic, partitions)
    wm = _watermarks(bootstrap, topic, partitions)
    ends = h.end_offsets_of(acked)
    for p, end in ends.items():
        assert wm[p][0] == 0 and wm[p][1] >= end, f"partition {p}: watermarks {wm[p]}, acknowledged up to {end}"
    got = h.consume_partitions(bootstrap, topic, {p: hw for p, (_, hw) in wm.items()})
    h.check_acked(acked, got, topic)
    for p, (_, hw) in wm.items():
        missing = [o for o in range(hw) if (p, o) not in got]
        assert not missing, f"partition {p}: offsets {missing[:10]} below the high watermark {hw} unreadable"
    return wm


def _produce_more_and_check_offsets_continue(bootstrap, topic, partitions, acked_before):
    wm = _watermarks(bootstrap, topic, partitions)
    now = int(time.time() * 1000)
    recs = [h.Rec(b"after-%d" % i, b"after restart %d" % i, [("phase", b"after")], now + i, partition=i % partitions)
            for i in range(3 * partitions)]
    log = h.produce_all(h.producer(bootstrap, acks="all"), topic, recs)
    assert not log.errors, log.errors[:3]
    for p in range(partitions):
        offs = sorted(a.offset for a in log.acked if a.partition == p)
        assert offs == list(range(wm[p][1], wm[p][1] + 3)), \
            f"partition {p}: new offsets {offs} do not continue from the high watermark {wm[p][1]}"
    _check_topic(bootstrap, topic, acked_before + log.acked, partitions)


def test_stop_start_keeps_everything(own_broker, topic_name):
    b = own_broker
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=3, config={"retention.ms": "86400000"})
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, h.sample_records(200, seed=21))
    assert not log.errors
    # a consumer long-polling at the log end while the broker stops must not hold up the shutdown
    c = h.consumer(b.bootstrap, fetch_wait_max_ms=3000)
    c.assign([TopicPartition(topic, p, hw) for p, (_, hw) in _watermarks(b.bootstrap, topic, 3).items()])
    c.poll(0.5)
    b.restart(signal.SIGTERM)  # asserts exit 0 within 5 s
    c.close()
    _check_topic(b.bootstrap, topic, log.acked, 3)
    # topic configs are persisted too
    res = ConfigResource(ResourceType.TOPIC, topic)
    a = h.admin(b.bootstrap)  # keep a reference: a destroyed client fails its futures
    conf = a.describe_configs([res], request_timeout=30)[res].result(timeout=30)
    assert conf["retention.ms"].value == "86400000"
    _produce_more_and_check_offsets_continue(b.bootstrap, topic, 3, log.acked)
    # and a second restart, with SIGINT this time
    b.restart(signal.SIGINT)
    _check_topic(b.bootstrap, topic, log.acked, 3)


def test_restart_with_no_data_and_empty_topic(own_broker, topic_name):
    b = own_broker
    b.restart()
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=2)
    b.restart()
    h.wait_topic(b.bootstrap, topic, 2)
    assert _watermarks(b.bootstrap, topic, 2) == {0: (0, 0), 1: (0, 0)}


def test_deleted_topic_stays_deleted_after_restart(own_broker, topic_name):
    b = own_broker
    keep, gone = topic_name("keep"), topic_name("gone")
    h.create_topic(b.bootstrap, keep, partitions=1)
    h.create_topic(b.bootstrap, gone, partitions=1)
    h.produce_all(h.producer(b.bootstrap, acks="all"), gone, h.sample_records(5, big_every=1000))
    a = h.admin(b.bootstrap)
    a.delete_topics([gone], operation_timeout=30)[gone].result(timeout=30)
    b.restart()
    names = h.topic_names(b.bootstrap)
    assert keep in names and gone not in names


class ProducerThread(threading.Thread):
    """Produces acks=all records as fast as the broker takes them, recording every delivery report."""

    def __init__(self, bootstrap, topic, partitions):
        super().__init__(daemon=True)
        self.topic, self.partitions = topic, partitions
        self.p = h.producer(bootstrap, acks="all", enable_idempotence=False, linger_ms=1,
                            message_timeout_ms=90000, retry_backoff_ms=100, retry_backoff_max_ms=500,
                            reconnect_backoff_max_ms=500, queue_buffering_max_messages=20000)
        self.log = h.DeliveryLog()
        self.stop_flag = threading.Event()
        self.sent = 0
        self.rnd = random.Random(99)
        self.exc = None

    def run(self):
        try:
            base = int(time.time() * 1000) - 60_000
            while not self.stop_flag.is_set() and self.sent < 200_000:
                i = self.sent
                size = self.rnd.choice([0, 10, 100, 1000, 20_000])
                value = (b"%08d|" % i) + self.rnd.randbytes(size)
                rec = h.Rec(b"key-%d" % (i % 101), value, [("seq", b"%d" % i)], base + i)
                try:
                    self.p.produce(self.topic, key=rec.key, value=rec.value, headers=rec.headers,
                                   timestamp=rec.timestamp, on_delivery=self.log.callback(rec))
                    self.sent += 1
                except BufferError:
                    self.p.poll(0.05)
                self.p.poll(0)
                if i % 50 == 0:
                    time.sleep(0.002)
        except Exception as e:  # surfaced by the test
            self.exc = e

    def acked_count(self):
        return len(self.log.acked)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_signal_during_acks_all_production(own_broker, topic_name, sig):
    b = own_broker
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=3)
    t = ProducerThread(b.bootstrap, topic, 3)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while t.acked_count() < 2000 and time.monotonic() < deadline:
            assert t.exc is None, t.exc
            assert not t.log.errors, t.log.errors[:3]
            time.sleep(0.02)
        assert t.acked_count() >= 2000, f"only {t.acked_count()} records acknowledged in 60 s"
        acked_at_signal = t.acked_count()
        b.stop(sig)  # SIGTERM: exit 0 within 5 s, in-flight requests finished
        acked_when_down = t.acked_count()
        time.sleep(0.5)  # the producer keeps trying against a dead broker
        t.stop_flag.set()
        t.join(timeout=10)
        assert not t.is_alive()
        b.start()
        # queued and in-flight records are retried against the restarted broker
        remaining = t.p.flush(60)
        assert remaining == 0, f"{remaining} records neither acknowledged nor failed after 60 s"
    finally:
        t.stop_flag.set()
        t.join(timeout=10)
    assert t.exc is None, t.exc
    assert not t.log.errors, f"{len(t.log.errors)} delivery errors, first: {t.log.errors[:3]}"
    assert acked_when_down >= acked_at_signal
    print(f"sent {t.sent}, acked {len(t.log.acked)} ({acked_at_signal} before the signal)")
    _check_topic(b.bootstrap, topic, t.log.acked, 3)
    _produce_more_and_check_offsets_continue(b.bootstrap, topic, 3, t.log.acked)


def _partition_dir(b, topic, p) -> Path:
    d = b.data_dir / f"{topic}-{p}"
    if not d.is_dir():
        found = [str(x.relative_to(b.data_dir)) for x in b.data_dir.rglob(f"{topic}-{p}")]
        raise AssertionError(f"no partition directory {topic}-{p} under the data dir (found {found})")
    return d


def _segments(d: Path) -> list[Path]:
    return sorted((x for x in d.iterdir() if re.fullmatch(r"\d+\.log", x.name)), key=lambda x: int(x.stem))


def test_data_dir_layout(own_broker, topic_name):
    b = own_broker
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=2)
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, h.sample_records(50, big_every=1000))
    assert not log.errors
    for p in range(2):
        segs = _segments(_partition_dir(b, topic, p))
        assert segs and int(segs[0].stem) == 0, f"partition {p}: segments {segs}"
    total = sum(s.stat().st_size for p in range(2) for s in _segments(_partition_dir(b, topic, p)))
    assert total >= sum(len(a.rec.value or b"") for a in log.acked), "log files smaller than the data written"


@pytest.mark.parametrize("damage", ["garbage", "half-batch", "zeros"])
def test_torn_tail_is_truncated_on_start(own_broker, topic_name, damage):
    b = own_broker
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=1)
    log = h.produce_all(h.producer(b.bootstrap, acks="all", linger_ms=0), topic, h.sample_records(100, seed=5))
    assert not log.errors
    b.stop(signal.SIGKILL)
    seg = _segments(_partition_dir(b, topic, 0))[-1]
    data = seg.read_bytes()
    with open(seg, "ab") as f:
        if damage == "garbage":
            f.write(os.urandom(3000))
        elif damage == "half-batch":
            # a copy of the first batch, renumbered to follow, cut in the middle
            n = int.from_bytes(data[8:12], "big") + 12
            f.write((100).to_bytes(8, "big") + data[8:min(n, 200) // 2])
        else:
            f.write(b"\x00" * 4096)  # preallocated / zero-filled tail
    b.start()
    _check_topic(b.bootstrap, topic, log.acked, 1)
    assert _watermarks(b.bootstrap, topic, 1)[0] == (0, 100)
    assert re.search(r"truncat", b.stderr_text(), re.I), "no log line about truncating the torn tail"
    _produce_more_and_check_offsets_continue(b.bootstrap, topic, 1, log.acked)


def test_segment_roll_then_restart(broker, topic_name):
    """Small segments (segment.bytes = 1 MiB): many segments, all readable, also after a restart."""
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"segment.bytes": "1048576"})
    rnd = random.Random(3)
    now = int(time.time() * 1000)
    recs = [h.Rec(b"%d" % i, rnd.randbytes(30_000), None, now + i) for i in range(150)]
    log = h.produce_all(h.producer(broker.bootstrap, acks="all"), topic, recs)
    assert not log.errors
    if not broker.external:
        segs = _segments(_partition_dir(broker, topic, 0))
        assert len(segs) >= 3, f"want several segments for ~4.5 MB at 1 MiB each: {[s.name for s in segs]}"
        assert [int(s.stem) for s in segs] == sorted({int(s.stem) for s in segs}) and int(segs[0].stem) == 0
    _check_topic(broker.bootstrap, topic, log.acked, 1)
    if not broker.external:
        broker.restart()
        _check_topic(broker.bootstrap, topic, log.acked, 1)
        # reading from the middle of a later segment
        got = h.consume_partitions(broker.bootstrap, topic, {0: 150}, start=120)
        assert min(o for _, o in got) == 120


def _batches(data: bytes) -> list[tuple[int, int, int, int]]:
    """(position, length, base offset, last offset) of each v2 batch of a segment, read client-side."""
    out, pos = [], 0
    while pos + 61 <= len(data):
        base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
        n = 12 + int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        delta = int.from_bytes(data[pos + 23:pos + 27], "big", signed=True)
        if n < 61 or pos + n > len(data):
            break
        out.append((pos, n, base, base + delta))
        pos += n
    return out


def _truncation_lines(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"truncating torn tail.*?truncated_bytes=(\d+)", text)]


@pytest.mark.parametrize("damage", ["cut-last-batch", "bit-flip-middle", "random-bytes"])
def test_damaged_newest_segment_truncates_to_last_valid_batch(own_broker, topic_name, damage):
    """After SIGKILL the newest segment is damaged: the last batch cut mid-way, one bit flipped in
    the middle of the file, or random bytes appended. The broker starts, cuts everything from the
    first invalid batch on (and logs how many bytes), serves only the batches before it with
    valid CRCs (librdkafka's check.crcs=true verifies every batch), and continues the offsets."""
    b = own_broker
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=1)
    # one flush per 10 records: 12 batches
    p = h.producer(b.bootstrap, acks="all", linger_ms=0)
    recs = h.sample_records(120, seed=11, big_every=50)
    log = h.DeliveryLog()
    for i in range(0, 120, 10):
        part = h.produce_all(p, topic, recs[i:i + 10])
        log.acked += part.acked
        log.errors += part.errors
    assert not log.errors
    b.stop(signal.SIGKILL)
    seg = _segments(_partition_dir(b, topic, 0))[-1]
    data = bytearray(seg.read_bytes())
    batches = _batches(bytes(data))
    assert sum(n for _, n, _, _ in batches) == len(data) and len(batches) >= 10, \
        f"segment {seg.name}: {len(batches)} batches, {len(data)} bytes"
    rnd = random.Random(damage)
    if damage == "cut-last-batch":
        pos, n, base, _ = batches[-1]
        cut = pos + n // 2
        data = data[:cut]
        keep, end = pos, base
    elif damage == "bit-flip-middle":
        mid = len(data) // 2
        pos, n, base, _ = next(x for x in batches if x[0] <= mid < x[0] + x[1])
        if 12 <= mid - pos < 16:
            mid += 8  # the partition leader epoch is outside the CRC (and harmless): flip past it
        data[mid] ^= 1 << rnd.randrange(8)
        keep, end = pos, base
    else:
        keep, end = len(data), 120
        data += os.urandom(rnd.randrange(100, 5000))
    seg.write_bytes(bytes(data))
    before = len(_truncation_lines(b.stderr_text()))
    b.start()
    lines = _truncation_lines(b.stderr_text())[before:]
    assert lines == [len(data) - keep], \
        f"want one log line truncating {len(data) - keep} bytes, got {lines}\n{b.stderr_tail(20)}"
    assert seg.stat().st_size == keep
    assert _watermarks(b.bootstrap, topic, 1)[0] == (0, end)
    survivors = [a for a in log.acked if a.offset < end]
    assert len(survivors) == end
    got = h.consume_partitions(b.bootstrap, topic, {0: end}, check_crcs=True)
    h.check_acked(survivors, got, topic)
    assert sorted(o for _, o in got) == list(range(end)), "offsets below the new log end are not all readable"
    _produce_more_and_check_offsets_continue(b.bootstrap, topic, 1, survivors)
    # the next restart finds nothing to cut
    b.restart()
    assert _truncation_lines(b.stderr_text())[before + 1:] == []
    _check_topic(b.bootstrap, topic, survivors, 1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_preallocated_segments_across_rolls_and_restarts(own_broker, topic_name, sig):
    """preallocate=true (Kafka's topic config) with flush.messages=1: a new segment's file is
    segment.bytes long at once (sparse), a rolled one holds exactly its batches, and after a
    clean stop (cut) or a SIGKILL (zeros left, cut by recovery) every acknowledged record reads
    back at its offset, and offsets go on from the log end."""
    b = own_broker
    topic = topic_name()
    seg_bytes = 1 << 20
    h.create_topic(b.bootstrap, topic, partitions=1, config={
        "segment.bytes": str(seg_bytes), "preallocate": "true", "flush.messages": "1"})
    rnd = random.Random(58)
    now = int(time.time() * 1000)
    recs = [h.Rec(b"%d" % i, rnd.randbytes(rnd.choice([10, 1000, 30_000])), None, now + i) for i in range(200)]
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, recs)
    assert not log.errors, log.errors[:3]
    segs = _segments(_partition_dir(b, topic, 0))
    assert len(segs) >= 2, f"want a roll: {[s.name for s in segs]}"
    *closed, active = segs
    assert active.stat().st_size == seg_bytes, "the active segment is preallocated to segment.bytes"
    for s in closed:
        size = s.stat().st_size
        assert 0 < size <= seg_bytes and s.read_bytes()[-12:] != b"\x00" * 12, \
            f"{s.name}: a rolled segment is cut to its batches ({size} bytes)"
    b.stop(sig)
    if sig == signal.SIGTERM:
        assert active.stat().st_size < seg_bytes, "a clean stop cuts the preallocated zeros"
    else:
        assert active.stat().st_size == seg_bytes
    b.start()
    _check_topic(b.bootstrap, topic, log.acked, 1)
    assert active.stat().st_size < seg_bytes, "the zeros are gone after the restart"
    if sig == signal.SIGKILL:
        assert re.search(r"truncat", b.stderr_text(), re.I), "no log line about cutting the zeros"
    _produce_more_and_check_offsets_continue(b.bootstrap, topic, 1, log.acked)
