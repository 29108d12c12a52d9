"""Log compaction (`cleanup.policy=compact` and `compact,delete`) seen by real clients.

What a user of a compacted topic checks: after the cleaner ran, a consumer reading from offset 0
sees exactly the latest record of each key, at the offset its producer's delivery report gave
(offsets never change; gaps are normal), byte for byte (key, value, headers, timestamp), the
same with confluent-kafka, kafka-python and kcat; tombstones stay for `delete.retention.ms`
and then go; retention never deletes from a compact-only topic; keyless records are refused;
`__consumer_offsets` stays small and keeps the last commits across restarts; a cleaner killed
mid-pass loses nothing.

The tests marked "external" below also run against another broker (Apache Kafka) with
FRIEDA_EXTERNAL_BOOTSTRAP, with topic-level configs only: they then wait for its cleaner
(15 s backoff) by reading the topic until it looks compacted, within generous limits. With
Frieda they start a broker with `log.cleaner.backoff.ms = 200` and wait for its
`cleaned log` lines, whose figures are checked too.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import re
import select
import signal
import struct
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

import helpers as h
from conftest import EXTERNAL, _make_broker

FAST_CLEANER = '"log.cleaner.backoff.ms" = 200\n'
# how long to wait for a cleaning pass: Frieda looks every 200 ms; Kafka's cleaner every 15 s
CLEAN_TIMEOUT = 150 if EXTERNAL else 60
SEGMENT_MS = 2000  # segment.ms of the topics that roll by time


@pytest.fixture
def cbroker(request, tmp_path):
    """A broker for the tests that also run against an external broker: a Frieda with a fast
    cleaner, or the external one (FRIEDA_EXTERNAL_BOOTSTRAP)."""
    yield from _make_broker(request, tmp_path, config=None if EXTERNAL else FAST_CLEANER)


# ---------------------------------------------------------------- reading a partition

def norm_headers(hs) -> tuple:
    return tuple((k, v) for k, v in (hs or []))


def read_confluent(bootstrap: str, topic: str, partition: int = 0, start: int | None = None,
                   timeout: float = 60) -> tuple[dict, tuple[int, int]]:
    """Every record from ``start`` (default: the log start offset) to the high watermark
    (confluent-kafka, CRCs checked): ({offset: (key, value, headers, timestamp)}, (low, high))."""
    c = h.consumer(bootstrap, **{"check.crcs": True, "enable.partition.eof": True})
    got: dict[int, tuple] = {}
    try:
        tp = TopicPartition(topic, partition)
        lo, hi = c.get_watermark_offsets(tp, timeout=10, cached=False)
        start = lo if start is None else start
        if hi <= start:
            return got, (lo, hi)
        c.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"timed out reading {topic}[{partition}] {start}..{hi}: got {len(got)}"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= hi:
                        break
                    continue
                raise KafkaException(m.error())
            ts_type, ts = m.timestamp()
            assert ts_type == 1, f"{topic}[{partition}]@{m.offset()}: timestamp type {ts_type}, want CreateTime"
            assert m.offset() not in got, f"{topic}[{partition}]@{m.offset()} delivered twice"
            got[m.offset()] = (m.key(), m.value(), norm_headers(m.headers()), ts)
    finally:
        c.close()
    return got, (lo, hi)


def read_kafka_python(bootstrap: str, topic: str, partition: int = 0, start: int = 0,
                      timeout: float = 60) -> dict:
    """The same with kafka-python: {offset: (key, value, headers, timestamp)}."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      check_crcs=True, fetch_max_wait_ms=100, auto_offset_reset="none")
    got: dict[int, tuple] = {}
    try:
        tp = KTP(topic, partition)
        c.assign([tp])
        hi = c.end_offsets([tp])[tp]
        c.seek(tp, start)
        deadline = time.monotonic() + timeout
        while c.position(tp) < hi:
            assert time.monotonic() < deadline, f"kafka-python: timed out reading {topic}[{partition}]: got {len(got)}"
            for recs in c.poll(timeout_ms=500).values():
                for r in recs:
                    assert r.offset not in got, f"kafka-python: {topic}[{partition}]@{r.offset} delivered twice"
                    got[r.offset] = (r.key, r.value, norm_headers(r.headers), r.timestamp)
    finally:
        c.close()
    return got


def read_kcat(bootstrap: str, topic: str, partition: int = 0) -> dict:
    """The same with kcat -C -e: {offset: (key, value)} (keys and values must not contain tabs
    or newlines; null keys and values come back as None)."""
    p = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning",
                        "-e", "-q", "-X", "check.crcs=true", "-f", "%o\t%K\t%k\t%S\t%s\n"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, f"kcat exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}"
    got = {}
    for line in p.stdout.split(b"\n"):
        if not line:
            continue
        off, klen, key, vlen, value = line.split(b"\t")
        assert int(off) not in got, f"kcat: offset {int(off)} printed twice"
        got[int(off)] = (None if int(klen) < 0 else key, None if int(vlen) < 0 else value)
        assert len(key) == max(int(klen), 0) and len(value) == max(int(vlen), 0), f"kcat line {line[:120]!r}"
    return got


def first_at_or_after(bootstrap: str, topic: str, offsets: list[int], partition: int = 0) -> dict[int, int]:
    """For each offset: the offset of the first record a consumer started there gets (a fetch in
    a gap left by compaction returns the next record)."""
    c = h.consumer(bootstrap, **{"check.crcs": True})
    out = {}
    try:
        for o in offsets:
            c.assign([TopicPartition(topic, partition, o)])
            deadline = time.monotonic() + 20
            while o not in out:
                assert time.monotonic() < deadline, f"nothing read from {topic}[{partition}] starting at {o}"
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    raise KafkaException(m.error())
                out[o] = m.offset()
    finally:
        c.close()
    return out


def compare(got: dict, want: dict, label: str) -> None:
    """Asserts ``got == want`` ({offset: record}), listing what is missing, extra or different."""
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = [o for o in sorted(set(want) & set(got)) if got[o] != want[o]]
    assert not (missing or extra or wrong), (
        f"{label}: {len(got)} records read, {len(want)} expected; {len(missing)} missing "
        f"{[(o, want[o]) for o in missing[:3]]}; {len(extra)} unexpected {[(o, got[o]) for o in extra[:3]]}; "
        f"{len(wrong)} differ {[(o, got[o], want[o]) for o in wrong[:3]]}")


def kv(view: dict) -> dict:
    return {o: r[:2] for o, r in view.items()}


# ---------------------------------------------------------------- the broker's cleaner

def cleaned_lines(b, topic: str, partition: int = 0) -> list[dict]:
    """The broker's `cleaned log` lines for ``topic``-``partition``, as {field: value} (and
    ``_at``: the line's time, s since the epoch)."""
    out = []
    for line in b.stderr_text().splitlines():
        if "cleaned log" in line:
            f = dict(re.findall(r"(\w+)=(\S+)", line))
            if f.get("topic", "").strip('"') == topic and f.get("partition") == str(partition):
                stamp = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
                f["_at"] = datetime.fromisoformat(stamp.group(1)).replace(tzinfo=timezone.utc).timestamp()
                out.append(f)
    return out


def wait_cleaned(b, topic: str, through: int, partition: int = 0, timeout: float = 60,
                 until=lambda lines: True) -> list[dict]:
    """Waits for a `cleaned log` line of the partition with first_dirty_next >= ``through`` (a pass
    that cleaned everything below that offset) and ``until(lines)``; returns all its lines."""
    deadline = time.monotonic() + timeout
    while True:
        lines = cleaned_lines(b, topic, partition)
        if any(int(f["first_dirty_next"]) >= through for f in lines) and until(lines):
            return lines
        b.assert_alive()
        assert time.monotonic() < deadline, (
            f"no cleaning pass of {topic}-{partition} through offset {through} within {timeout}s; "
            f"its `cleaned log` lines: {lines[-4:]}\n{b.stderr_tail(30)}")
        time.sleep(0.1)


def settle(b, topic: str, want: dict, through: int, timeout: float = CLEAN_TIMEOUT, until=lambda lines: True,
           partition: int = 0):
    """Waits for the cleaner: Frieda's `cleaned log` line through offset ``through``; an external
    broker's log is read (confluent-kafka) until it equals ``want``. Returns the view read."""
    if not b.external:
        wait_cleaned(b, topic, through, partition=partition, timeout=timeout, until=until)
        return read_confluent(b.bootstrap, topic, partition)[0]
    deadline = time.monotonic() + timeout
    while True:
        got = read_confluent(b.bootstrap, topic, partition)[0]
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(2)


def partition_dir(b, topic: str, partition: int = 0) -> Path:
    return b.data_dir / f"{topic}-{partition}"


def log_bytes(d: Path) -> int:
    total = 0
    for f in d.glob("*.log"):
        try:
            total += f.stat().st_size
        except FileNotFoundError:  # deleted by the cleaner meanwhile
            pass
    return total


def leftovers(d: Path) -> list[str]:
    return sorted(f.name for f in d.iterdir() if f.name.endswith((".cleaned", ".swap")))


class RenameWatch:
    """inotify on a directory: ``wait(suffix)`` returns as soon as a file whose name ends with
    ``suffix`` is renamed into it or created there (a `.swap` file exists only for milliseconds,
    too briefly to catch by polling)."""

    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, d: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, f"inotify_init1: errno {ctypes.get_errno()}"
        wd = libc.inotify_add_watch(self.fd, str(d).encode(), self.IN_CREATE | self.IN_MOVED_TO)
        assert wd >= 0, f"inotify_add_watch({d}): errno {ctypes.get_errno()}"

    def wait(self, suffix: str, timeout: float, alive) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive()
            if not select.select([self.fd], [], [], 0.1)[0]:
                continue
            buf, pos = os.read(self.fd, 1 << 16), 0
            while pos < len(buf):
                _wd, _mask, _cookie, length = struct.unpack_from("iIII", buf, pos)
                name = buf[pos + 16:pos + 16 + length].rstrip(b"\0").decode()
                pos += 16 + length
                if name.endswith(suffix):
                    return name
        return None

    def close(self) -> None:
        os.close(self.fd)


# ---------------------------------------------------------------- producing

class Acks:
    """Delivery reports: ``ok[tag] = (offset, timestamp)``, ``errors[tag] = KafkaError``."""

    def __init__(self):
        self.ok: dict = {}
        self.errors: dict = {}

    def cb(self, tag):
        def on_delivery(err, msg):
            if err is not None:
                self.errors[tag] = err
            else:
                self.ok[tag] = (msg.offset(), msg.timestamp()[1])
        return on_delivery


def produce(p: Producer, topic: str, items, acks: Acks, timeout: float = 120, partition: int = 0) -> None:
    """Produces ``(tag, key, value, headers)`` items to ``partition`` and flushes."""
    for tag, key, value, headers in items:
        while True:
            try:
                p.produce(topic, key=key, value=value, headers=headers, partition=partition,
                          on_delivery=acks.cb(tag))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(timeout) == 0, f"records still in flight after {timeout}s"


def idempotent_producer(bootstrap: str, **conf) -> Producer:
    return h.producer(bootstrap, **{"enable.idempotence": True, "acks": "all", "linger.ms": 20, **conf})


def roll(p: Producer, topic: str, acks: Acks, tag: str, partition: int = 0, wait: bool = True) -> int:
    """Closes the active segment: waits past segment.ms, then appends one record (key ``tag``)
    that starts a new segment. Returns its offset."""
    if wait:
        time.sleep(SEGMENT_MS / 1000 + 0.7)
    produce(p, topic, [(tag, tag.encode(), b"roll", None)], acks, partition=partition)
    assert tag in acks.ok, f"the record rolling the segment failed: {acks.errors.get(tag)}"
    return acks.ok[tag][0]


def value_of(k: int, v: int) -> bytes:
    """Printable (kcat reads it back), 12-44 bytes, different for every (key, version)."""
    pad = hashlib.blake2b(b"%d/%d" % (k, v), digest_size=16).hexdigest().encode()
    return b"k%05d=v%02d:" % (k, v) + pad[:(k * 7 + v * 3) % 33]


# ---------------------------------------------------------------- 1. the scenario

N_KEYS, VERSIONS = 10_000, 20


def test_compacted_topic_keeps_latest_value_of_each_key(cbroker, topic_name):  # external
    """10,000 keys x 20 versions through an idempotent acks=all producer; after the cleaner ran,
    confluent-kafka, kafka-python and kcat read from offset 0 exactly the latest value of each
    key at the offset its delivery report gave, and the record that rolled the segment."""
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                                       "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    items = ((("r", k, v), b"key-%05d" % k, value_of(k, v), [("version", b"%02d" % v)])
             for v in range(VERSIONS) for k in range(N_KEYS))
    t0 = time.monotonic()
    produce(p, t, items, acks)
    produce_s = time.monotonic() - t0
    assert not acks.errors, f"{len(acks.errors)} delivery errors: {list(acks.errors.items())[:3]}"
    assert len(acks.ok) == N_KEYS * VERSIONS
    assert sorted(o for o, _ in acks.ok.values()) == list(range(N_KEYS * VERSIONS)), \
        "the delivery reports' offsets are not 0..199999"
    for k in range(0, N_KEYS, 97):  # an idempotent producer appends each key's versions in order
        offs = [acks.ok[("r", k, v)][0] for v in range(VERSIONS)]
        assert offs == sorted(offs), f"key {k}: versions at offsets {offs}"
    filler = roll(p, t, acks, "filler")
    assert filler == N_KEYS * VERSIONS

    want = {}
    for k in range(N_KEYS):
        off, ts = acks.ok[("r", k, VERSIONS - 1)]
        want[off] = (b"key-%05d" % k, value_of(k, VERSIONS - 1), (("version", b"%02d" % (VERSIONS - 1)),), ts)
    want[filler] = (b"filler", b"roll", (), acks.ok["filler"][1])

    got = settle(b, t, want, through=filler)
    compare(got, want, "confluent-kafka from offset 0 after cleaning")
    lo, hi = read_confluent(b.bootstrap, t)[1]
    assert (lo, hi) == (0, filler + 1), f"watermarks {(lo, hi)}: offsets must not change"
    compare(read_kafka_python(b.bootstrap, t), want, "kafka-python from offset 0")
    compare(read_kcat(b.bootstrap, t), kv(want), "kcat -C -e from the beginning")

    # fetches starting inside the gaps compaction left get the next surviving record
    rnd = random.Random(1)
    starts = [0, 1, filler - 1, filler] + rnd.sample(range(filler), 20)
    survivors = sorted(want)
    for o, first in first_at_or_after(b.bootstrap, t, starts).items():
        assert first == min(s for s in survivors if s >= o), f"a consumer starting at {o} got {first} first"

    if not b.external:
        lines = cleaned_lines(b, t)
        removed = sum(int(f["records_removed"]) for f in lines)
        assert removed == N_KEYS * (VERSIONS - 1), f"`cleaned log` lines count {removed} records removed: {lines}"
        d = partition_dir(b, t)
        payload = sum(len(b"key-%05d" % k) + len(value_of(k, v)) + 9 for v in range(VERSIONS) for k in range(N_KEYS))
        assert log_bytes(d) < payload // 10, \
            f"{log_bytes(d)} bytes of segments left for {payload} bytes produced (1/20 of the records survive)"
        assert leftovers(d) == []
    print(f"produced {N_KEYS * VERSIONS} records in {produce_s:.1f}s; {len(want)} survive")


# ---------------------------------------------------------------- 2. tombstones

DELETE_RETENTION_MS = 5000


def test_tombstones_stay_for_delete_retention_then_go(cbroker, topic_name):  # external
    """Tombstones (null values) survive the first cleaning (the older values of their keys do
    not), still after delete.retention.ms/2, and are gone after delete.retention.ms and another
    pass; the other keys keep their latest values throughout."""
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS),
                                       "min.cleanable.dirty.ratio": "0.01",
                                       "delete.retention.ms": str(DELETE_RETENTION_MS)})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    n = 300
    deleted = [k for k in range(n) if k % 3 == 0]            # tombstoned
    revived = [k for k in deleted if k % 6 == 0]              # tombstoned, then a new value
    only_tombstone = list(range(n, n + 10))                   # a tombstone for a key never written
    rec = {}  # tag -> (key, value, headers)
    items = []
    for v in range(4):
        for k in range(n):
            rec[("v", k, v)] = (b"key-%d" % k, value_of(k, v), [("v", b"%d" % v)])
    for k in deleted + only_tombstone:
        rec[("del", k)] = (b"key-%d" % k, None, [("tombstone", b"1")])
    for k in revived:
        rec[("rev", k)] = (b"key-%d" % k, b"revived-%d" % k, None)
    for tag in [tg for tg in rec if tg[0] == "v"] + [tg for tg in rec if tg[0] == "del"] + \
               [tg for tg in rec if tg[0] == "rev"]:
        items.append((tag, *rec[tag]))
    produce(p, t, items, acks)
    assert not acks.errors, f"delivery errors: {list(acks.errors.items())[:3]}"

    def want_of(tags):
        return {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], norm_headers(rec[tg][2]), acks.ok[tg][1]) for tg in tags}

    live_tags = {k: ("v", k, 3) for k in range(n) if k not in deleted}
    live_tags.update({k: ("rev", k) for k in revived})
    tomb_tags = [("del", k) for k in deleted + only_tombstone if k not in revived]
    filler1 = roll(p, t, acks, "filler-1")
    rec["filler-1"] = (b"filler-1", b"roll", None)
    want1 = want_of(list(live_tags.values()) + tomb_tags + ["filler-1"])

    got = settle(b, t, want1, through=filler1)
    t_first = time.monotonic()
    compare(got, want1, "after the first cleaning (tombstones kept, older values gone)")
    compare(read_kcat(b.bootstrap, t), kv(want1), "kcat after the first cleaning")
    assert sum(1 for r in got.values() if r[1] is None) == len(tomb_tags)

    # still there half-way through delete.retention.ms
    time.sleep(max(0.0, t_first + DELETE_RETENTION_MS / 2000 - time.monotonic()))
    compare(read_confluent(b.bootstrap, t)[0], want1, f"{DELETE_RETENTION_MS / 2000}s after the first cleaning")

    # past the delete horizon: new updates of some keys and a roll make another pass due (Kafka
    # cleans only for its dirty ratio; Frieda also for the horizon alone)
    time.sleep(max(0.0, t_first + DELETE_RETENTION_MS / 1000 + 1.0 - time.monotonic()))
    items = []
    for k in range(n):
        if k % 3 == 1:
            rec[("v", k, 4)] = (b"key-%d" % k, value_of(k, 4), [("v", b"4")])
            items.append((("v", k, 4), *rec[("v", k, 4)]))
            live_tags[k] = ("v", k, 4)
    produce(p, t, items, acks)
    filler2 = roll(p, t, acks, "filler-2")
    rec["filler-2"] = (b"filler-2", b"roll", None)
    want2 = want_of(list(live_tags.values()) + ["filler-1", "filler-2"])
    got = settle(b, t, want2, through=filler2,
                 until=lambda lines: sum(int(f["tombstones_removed"]) for f in lines) >= len(tomb_tags))
    compare(got, want2, f"after delete.retention.ms ({DELETE_RETENTION_MS} ms) and another cleaning")
    compare(read_kafka_python(b.bootstrap, t), want2, "kafka-python at the end")
    if not b.external:
        lines = cleaned_lines(b, t)
        assert sum(int(f["tombstones_removed"]) for f in lines) == len(tomb_tags), lines
        # the pass that removed them started delete.retention.ms or more after the pass that first
        # kept them (and stamped the delete horizon) started: a line's time less its `ms` is about
        # when its pass started (give or take the file renames after it, hence the slack)
        oldest_tombstone = min(acks.ok[tg][0] for tg in tomb_tags)
        stamped = next(f for f in lines if int(f["first_dirty_next"]) > oldest_tombstone)
        removed = next(f for f in lines if int(f["tombstones_removed"]) > 0)
        waited_ms = (removed["_at"] - stamped["_at"]) * 1000 + int(stamped["ms"]) - int(removed["ms"])
        assert waited_ms >= DELETE_RETENTION_MS - 300, \
            f"tombstones removed {waited_ms:.0f} ms after the pass that kept them: {stamped} {removed}"
        assert leftovers(partition_dir(b, t)) == []


# ---------------------------------------------------------------- compressed batches, a policy switch

CODECS = ["gzip", "snappy", "lz4", "zstd"]


def test_compressed_batches_are_compacted(cbroker, topic_name):  # external
    """Batches compressed with gzip, snappy, lz4 and zstd (one partition each; keys in random
    order, so cleaning removes some records of most batches): after cleaning each partition holds
    exactly the latest record of each key at its offset, byte for byte (confluent-kafka with CRC
    checks, kcat); with Frieda the rewritten batches are still compressed."""
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, len(CODECS), {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS),
                                                 "min.cleanable.dirty.ratio": "0.01"})
    rnd = random.Random(7)
    wants, fillers, producers, acks = {}, {}, {}, Acks()
    for part, codec in enumerate(CODECS):
        p = producers[codec] = idempotent_producer(b.bootstrap, **{"compression.type": codec})
        rec = {}
        for i in range(10_000):
            k = rnd.randrange(2000)
            rec[(codec, i)] = (b"key-%04d" % k, b"%s %d: " % (codec.encode(), i) + b"compressible text " * 4,
                               [("codec", codec.encode())])
        produce(p, t, [(tg, *r) for tg, r in rec.items()], acks, partition=part)
        assert not acks.errors, f"{codec}: delivery errors {list(acks.errors.items())[:3]}"
        latest = {}
        for tg in sorted(rec, key=lambda tg: acks.ok[tg][0]):
            latest[rec[tg][0]] = tg
        wants[part] = {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], norm_headers(rec[tg][2]), acks.ok[tg][1])
                       for tg in latest.values()}
    time.sleep(SEGMENT_MS / 1000 + 0.7)
    for part, codec in enumerate(CODECS):
        tag = f"filler-{codec}"
        fillers[part] = roll(producers[codec], t, acks, tag, partition=part, wait=False)
        wants[part][fillers[part]] = (tag.encode(), b"roll", (), acks.ok[tag][1])
    for part, codec in enumerate(CODECS):
        got = settle(b, t, wants[part], through=fillers[part], partition=part)
        compare(got, wants[part], f"{codec} partition {part} after cleaning")
        compare(read_kcat(b.bootstrap, t, part), kv(wants[part]), f"kcat, {codec} partition {part}")
        if not b.external:
            raw = sum(len(k) + len(v) for k, v, _, _ in wants[part].values())
            size = log_bytes(partition_dir(b, t, part))
            assert size < raw // 2, f"{codec}: {size} bytes of segments for {raw} bytes of surviving keys and values"
            assert sum(int(f["records_removed"]) for f in cleaned_lines(b, t, part)) == 10_000 - len(wants[part]) + 1


def test_topic_switched_to_compact_is_cleaned(cbroker, topic_name):  # external
    """A cleanup.policy=delete topic with keyed and keyless records is switched to compact with
    IncrementalAlterConfigs: keyless records are refused from then on, and the cleaner leaves
    exactly the latest record of each key (the keyless ones written before are dropped)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"segment.ms": str(SEGMENT_MS)})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    rec = {}
    for i in range(600):
        key = None if i % 4 == 3 else b"key-%d" % (i % 50)
        rec[i] = (key, b"value %d" % i, None)
    produce(p, t, [(tg, *r) for tg, r in rec.items()], acks)
    assert not acks.errors, f"keyless records on a delete topic: {list(acks.errors.items())[:3]}"
    res = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
    a = h.admin(b.bootstrap)
    a.incremental_alter_configs([res])[res].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:  # the new policy applies to produce requests (a broker may take a moment)
        produce(p, t, [("keyless-after", None, b"refused", None)], acks)
        if "keyless-after" in acks.errors:
            break
        rec[acks.ok.pop("keyless-after")[0]] = None  # stored: not expected to survive either
        assert time.monotonic() < deadline, "keyless records still accepted 30s after the switch to compact"
        time.sleep(0.5)
    assert acks.errors["keyless-after"].code() == KafkaError.INVALID_RECORD
    filler = roll(p, t, acks, "filler")
    latest = {}
    for tg in sorted((tg for tg in rec if isinstance(tg, int)), key=lambda tg: acks.ok[tg][0]):
        if rec[tg][0] is not None:
            latest[rec[tg][0]] = tg
    want = {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], (), acks.ok[tg][1]) for tg in latest.values()}
    want[filler] = (b"filler", b"roll", (), acks.ok["filler"][1])
    got = settle(b, t, want, through=filler)
    compare(got, want, "after the switch to compact and a cleaning")
    compare(read_kafka_python(b.bootstrap, t), want, "kafka-python after the switch")


def test_min_compaction_lag_keeps_recent_updates(cbroker, topic_name):  # external
    """min.compaction.lag.ms = 8000: a closed segment whose records are younger than that is not
    cleaned (every version stays readable), after that it is."""
    lag_ms = 8000
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS),
                                       "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": str(lag_ms)})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    rec = {(k, v): (b"key-%d" % k, value_of(k, v), None) for v in range(5) for k in range(200)}
    produce(p, t, [(tg, *r) for tg, r in rec.items()], acks)
    newest_ts = max(ts for _, ts in acks.ok.values())
    filler = roll(p, t, acks, "filler")
    rec["filler"] = (b"filler", b"roll", None)
    everything = {acks.ok[tg][0]: (r[0], r[1], (), acks.ok[tg][1]) for tg, r in rec.items()}
    # until the newest record is lag_ms old, nothing may be cleaned away
    while time.time() * 1000 < newest_ts + lag_ms - 1500:
        compare(read_confluent(b.bootstrap, t)[0], everything, f"younger than min.compaction.lag.ms ({lag_ms})")
        time.sleep(1)
    want = {o: r for o, r in everything.items() if r[0] == b"filler" or acks.ok[(int(r[0][4:]), 4)][0] == o}
    got = settle(b, t, want, through=filler)
    compare(got, want, "after min.compaction.lag.ms")
    if not b.external:
        first = next(f for f in cleaned_lines(b, t) if int(f["first_dirty_next"]) > 0)
        assert first["_at"] * 1000 >= newest_ts + lag_ms, f"cleaned before min.compaction.lag.ms: {first}"


def test_max_compaction_lag_forces_cleaning(cbroker, topic_name):  # external
    """min.cleanable.dirty.ratio = 0.99 (a few updates after a first cleaning never reach it) but
    max.compaction.lag.ms = 3000: the updates are cleaned anyway once older than that."""
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS),
                                       "min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "3000"})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    rec = {(k, v): (b"key-%d" % k, value_of(k, v) + b"-" * 200, None) for v in range(3) for k in range(300)}
    produce(p, t, [(tg, *r) for tg, r in rec.items()], acks)
    filler1 = roll(p, t, acks, "filler-1")  # the first pass: a never-cleaned log is all dirty (ratio 1.0)
    rec["filler-1"] = (b"filler-1", b"roll", None)

    def want_now():
        latest = {}
        for tg in sorted(acks.ok, key=lambda tg: acks.ok[tg][0]):
            latest[rec[tg][0]] = tg
        return {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], (), acks.ok[tg][1]) for tg in latest.values()}

    compare(settle(b, t, want_now(), through=filler1), want_now(), "after the first cleaning")
    for k in range(10):  # ~2 KiB of updates against ~60 KiB cleaned: dirty ratio far below 0.99
        rec[(k, 3)] = (b"key-%d" % k, value_of(k, 3), None)
    produce(p, t, [((k, 3), *rec[(k, 3)]) for k in range(10)], acks)
    filler2 = roll(p, t, acks, "filler-2")
    rec["filler-2"] = (b"filler-2", b"roll", None)
    got = settle(b, t, want_now(), through=filler2)
    compare(got, want_now(), "after max.compaction.lag.ms")
    if not b.external:
        last = [f for f in cleaned_lines(b, t) if int(f["first_dirty_next"]) >= filler2][0]
        assert last["reason"] == "MaxCompactionLag" and float(last["dirty_ratio"]) < 0.99, last


@pytest.fixture
def slow_cleaner_broker(request, tmp_path):
    """Like ``cbroker``, but Frieda's cleaner looks every 8 s (Kafka's default is 15 s)."""
    yield from _make_broker(request, tmp_path, config=None if EXTERNAL else '"log.cleaner.backoff.ms" = 8000\n')


def test_recreated_topic_is_compacted_from_its_start(slow_cleaner_broker, topic_name):  # external
    """A compacted topic is cleaned, deleted and created again under the same name before the
    cleaner looks again (within log.cleaner.backoff.ms): the new topic's first cleaning must cover
    its whole log, not start at the old topic's cleaner checkpoint (Kafka drops a deleted log's
    checkpoint)."""
    b = slow_cleaner_broker
    t = topic_name()
    conf = {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"}
    h.create_topic(b.bootstrap, t, 1, conf)
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    produce(p, t, [(("old", k, v), b"key-%d" % k, b"old %d %d" % (k, v), None) for v in range(50) for k in range(100)], acks)
    filler = roll(p, t, acks, "old-filler")
    assert filler == 5000
    old_want = {acks.ok[("old", k, 49)][0]: (b"key-%d" % k, b"old %d 49" % k, (), acks.ok[("old", k, 49)][1])
                for k in range(100)}
    old_want[filler] = (b"old-filler", b"roll", (), acks.ok["old-filler"][1])
    compare(settle(b, t, old_want, through=filler, timeout=CLEAN_TIMEOUT + 20), old_want, "the first topic, cleaned")
    time.sleep(0.5)  # the cleaner has gone back to sleep

    a = h.admin(b.bootstrap)
    a.delete_topics([t], operation_timeout=30)[t].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:  # a broker may take a moment to forget the deleted topic
        try:
            h.create_topic(b.bootstrap, t, 1, conf)
            break
        except KafkaException as e:
            assert time.monotonic() < deadline, f"re-creating {t}: {e}"
            time.sleep(0.2)
    p = idempotent_producer(b.bootstrap, **{"batch.size": 16384})
    acks = Acks()
    # offsets 0..1999: 100 keys x 20 versions, never written again; then 100 other keys x 60
    items = [(("a", k, v), b"a-%d" % k, b"new %d %d" % (k, v), None) for v in range(20) for k in range(100)]
    items += [(("b", k, v), b"b-%d" % k, b"new %d %d" % (k, v), None) for v in range(60) for k in range(100)]
    produce(p, t, items, acks)
    filler = roll(p, t, acks, "new-filler")
    want = {acks.ok[(g, k, last)][0]: (b"%s-%d" % (g.encode(), k), b"new %d %d" % (k, last), (), acks.ok[(g, k, last)][1])
            for g, last in (("a", 19), ("b", 59)) for k in range(100)}
    want[filler] = (b"new-filler", b"roll", (), acks.ok["new-filler"][1])
    got = settle(b, t, want, through=filler, timeout=CLEAN_TIMEOUT + 20)
    dup = sum(1 for o, r in got.items() if r[0].startswith(b"a-") and o not in want)
    compare(got, want, f"the re-created topic after its first cleaning ({dup} superseded records of keys a-* "
                       "below the old topic's last cleaned offset 5000 are still there)")


# ---------------------------------------------------------------- 3. retention and compaction

RETENTION_CONF = FAST_CLEANER + '"log.retention.check.interval.ms" = 500\n'


def _produce_static_then_updates(b, t):
    """20 keys written once, then 40 keys x 25 versions: (producer, acks, tags in order, records)."""
    p = idempotent_producer(b.bootstrap, **{"batch.size": 1024})  # batches smaller than a segment
    acks = Acks()
    rec = {}
    for k in range(20):
        rec[("static", k)] = (b"static-%d" % k, b"written once %d " % k + b"s" * 50, None)
    for v in range(25):
        for k in range(40):
            rec[("v", k, v)] = (b"key-%d" % k, value_of(k, v) + b"." * 40, None)
    produce(p, t, [(tg, *r) for tg, r in rec.items()], acks)
    assert not acks.errors, f"delivery errors: {list(acks.errors.items())[:3]}"
    return p, acks, rec


def test_retention_never_deletes_from_compact_only_topic(make_own_broker, topic_name):
    """cleanup.policy=compact with retention.ms=5000 and retention.bytes=4096, retention checked
    every 500 ms: long past retention, the log still starts at 0 and every key's latest value is
    there (the data loss of retention applied to a compacted topic)."""
    b = make_own_broker(RETENTION_CONF)
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "retention.ms": "5000",
                                       "retention.bytes": "4096", "internal.segment.bytes": "4096",
                                       "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"})
    p, acks, rec = _produce_static_then_updates(b, t)
    latest = {}
    for tg in rec:  # in production order: the last tag of each key wins
        latest[rec[tg][0]] = tg
    want = {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], (), acks.ok[tg][1]) for tg in latest.values()}
    deadline = time.monotonic() + 12  # retention.ms 5 s, checked every 0.5 s
    while time.monotonic() < deadline:
        got, (lo, hi) = read_confluent(b.bootstrap, t)
        assert lo == 0, f"retention moved the log start of a compact-only topic to {lo}"
        missing = [o for o in want if got.get(o) != want[o]]
        assert not missing, f"latest values gone from a compact-only topic: offsets {missing[:10]}"
        time.sleep(1)
    filler = roll(p, t, acks, "filler")
    want[filler] = (b"filler", b"roll", (), acks.ok["filler"][1])
    wait_cleaned(b, t, filler)
    got, (lo, hi) = read_confluent(b.bootstrap, t)
    compare(got, want, "compact-only topic long past retention.ms/retention.bytes, after cleaning")
    assert (lo, hi) == (0, filler + 1)
    assert sum(int(f["records_removed"]) for f in cleaned_lines(b, t)) == 40 * 24


def test_compact_delete_topic_applies_retention_and_compaction(make_own_broker, topic_name):
    """cleanup.policy=compact,delete with retention.ms=5000: the cleaner compacts the closed
    segments, then retention deletes them (the log start offset moves: ListOffsets earliest > 0,
    confluent-kafka and kafka-python); what is left is acknowledged records at their offsets.
    (No retention.bytes here: it would delete the segments before the cleaner sees them.)"""
    b = make_own_broker(RETENTION_CONF)
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact,delete", "retention.ms": "5000",
                                       "internal.segment.bytes": "4096", "segment.ms": str(SEGMENT_MS),
                                       "min.cleanable.dirty.ratio": "0.01"})
    p, acks, rec = _produce_static_then_updates(b, t)
    by_offset = {acks.ok[tg][0]: (rec[tg][0], rec[tg][1], (), acks.ok[tg][1]) for tg in rec}
    last = max(by_offset)
    deadline = time.monotonic() + 20
    while True:
        got, (lo, hi) = read_confluent(b.bootstrap, t)
        if lo > 0 and sum(int(f["records_removed"]) for f in cleaned_lines(b, t)) > 0:
            break
        assert time.monotonic() < deadline, \
            f"after 20s: log start {lo} (retention.ms 5000), `cleaned log` lines {cleaned_lines(b, t)}"
        time.sleep(0.5)
    assert hi == last + 1, f"high watermark {hi}, {last + 1} records produced"
    wrong = [o for o in got if got[o] != by_offset.get(o)]
    assert not wrong, f"records that were not produced there: {[(o, got[o]) for o in wrong[:3]]}"
    assert all(acks.ok[("static", k)][0] < lo for k in range(20)), "retention should have deleted the oldest segments"
    # (as in Kafka, retention.ms may delete the active segment too once all of it is old: then
    # the log is empty, starting at the high watermark, and the next record continues the offsets)
    produce(p, t, [("next", b"next", b"after retention", None)], acks)
    assert acks.ok["next"][0] == hi
    got, (lo2, hi2) = read_confluent(b.bootstrap, t)
    assert hi2 == hi + 1 and got[hi] == (b"next", b"after retention", (), acks.ok["next"][1])

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    kc = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        assert kc.beginning_offsets([KTP(t, 0)])[KTP(t, 0)] == lo > 0
    finally:
        kc.close()


# ---------------------------------------------------------------- 4. keyless records

def test_keyless_records_refused_on_compacted_topic(cbroker, topic_name):  # external
    """A record without a key gets INVALID_RECORD (87) and is not stored (no offset taken); the
    same producer's keyed records succeed, an empty key is a key; a batch mixing keyed and
    keyless records is refused whole; kafka-python sees the error too."""
    b = cbroker
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact"})
    stored = {}  # offset -> (key, value)
    for idempotent in (False, True):
        p = h.producer(b.bootstrap, **{"acks": "all", "enable.idempotence": idempotent, "linger.ms": 5})
        acks = Acks()
        steps = [("a", b"a", b"first"), ("null", None, b"no key"), ("empty", b"", b"empty key"),
                 ("b", b"b", b"after"), ("null-2", None, b"no key again"), ("c", b"c", b"last")]
        for tag, key, value in steps:
            produce(p, t, [(tag, key, value, None)], acks)  # each its own batch (flushed)
        for tag in ("null", "null-2"):
            err = acks.errors.get(tag)
            assert err is not None and err.code() == KafkaError.INVALID_RECORD == 87, \
                f"idempotent={idempotent}: keyless record: {err!r} (acked: {acks.ok.get(tag)})"
        assert set(acks.errors) == {"null", "null-2"}, acks.errors
        offs = [acks.ok[tg][0] for tg in ("a", "empty", "b", "c")]
        assert offs == list(range(offs[0], offs[0] + 4)), f"refused records must take no offset: {offs}"
        for tg, key, value in steps:
            if tg in acks.ok:
                stored[acks.ok[tg][0]] = (key, value)

    # keyed and keyless records in one batch: Kafka refuses the whole batch. librdkafka sends a
    # batch when it holds batch.num.messages records or linger.ms passed: 3 and 10 s make the
    # three one batch however slowly this thread runs (500 ms of linger alone let m1 go alone
    # once, on a loaded machine). A producer that has not yet learned the partition's leader
    # may still send its first record alone once it does (m1 alone, acknowledged, in one full
    # run): a keyed record first, waited for, so the three meet a known leader and connection.
    p = h.producer(b.bootstrap, **{"acks": "all", "linger.ms": 10000, "batch.num.messages": 3})
    acks = Acks()
    p.produce(t, key=b"warm", value=b"before the mixed batch", partition=0, on_delivery=acks.cb("warm"))
    assert p.flush(30) == 0 and "warm" in acks.ok, f"warm-up record: {acks.errors}"
    stored[acks.ok.pop("warm")[0]] = (b"warm", b"before the mixed batch")
    for tag, key in (("m1", b"m1"), ("m-null", None), ("m2", b"m2")):
        p.produce(t, key=key, value=b"mixed", partition=0, on_delivery=acks.cb(tag))
    assert p.flush(30) == 0
    assert {tg: e.code() for tg, e in acks.errors.items()} == {"m1": 87, "m-null": 87, "m2": 87}, \
        f"mixed batch: errors {acks.errors}, acknowledged {acks.ok}"

    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    kp = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
    try:
        with pytest.raises(InvalidRecordError) as e:
            kp.send(t, key=None, value=b"kafka-python no key", partition=0).get(timeout=30)
        assert e.value.errno == 87
    finally:
        kp.close()
    # (kafka-python 3.0 fails every later send of a producer that had this error, with Kafka too:
    # a fresh producer for the keyed records)
    kp = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
    try:
        for key, value in ((b"kp", b"kafka-python keyed"), (b"", b"kafka-python empty key")):
            md = kp.send(t, key=key, value=value, partition=0).get(timeout=30)
            stored[md.offset] = (key, value)
    finally:
        kp.close()

    got, (lo, hi) = read_confluent(b.bootstrap, t)
    assert (lo, hi) == (0, len(stored)), f"watermarks {(lo, hi)} for {len(stored)} stored records"
    compare(kv(got), stored, "the compacted topic after keyless records were refused")
    compare(read_kcat(b.bootstrap, t), stored, "kcat")


# ---------------------------------------------------------------- 5. __consumer_offsets

def offsets_dir(b) -> Path:
    return b.data_dir / "meta" / "__consumer_offsets-0"


def test_consumer_offsets_log_is_compacted(make_own_broker, topic_name):
    """offsets.topic.segment.bytes = 16384: a group commits 3000 times (synchronously, 3
    partitions each, in rounds of 500); after each round's cleaning the offsets log is back to a
    few KiB (it does not grow with the commits), and after SIGTERM and SIGKILL restarts the
    committed offsets are the last ones committed."""
    segment = 16384
    b = make_own_broker(FAST_CLEANER + f'"offsets.topic.segment.bytes" = {segment}\n')
    t = topic_name()
    h.create_topic(b.bootstrap, t, 3)
    group = f"g-{t}"
    d = offsets_dir(b)
    sizes: list[tuple[int, int, int]] = []  # (high watermark, bytes before cleaning, bytes after)

    def commit_round(c, first: int, count: int = 500) -> dict[int, int]:
        """``count`` synchronous commits, then waits for the pass that cleans everything below
        the active segment; records the offsets log's size before and after."""
        offs = []
        for i in range(first, first + count):
            offs = [TopicPartition(t, p, i * 10 + p) for p in range(3)]
            res = c.commit(offsets=offs, asynchronous=False)
            assert all(tp.error is None for tp in res), res
        before = log_bytes(d)
        active = max(int(f.stem) for f in d.glob("*.log"))
        wait_cleaned(b, "__consumer_offsets", active, timeout=30)
        probe = h.consumer(b.bootstrap)
        try:
            hw = probe.get_watermark_offsets(TopicPartition("__consumer_offsets", 0), timeout=10, cached=False)[1]
        finally:
            probe.close()
        sizes.append((hw, before, log_bytes(d)))
        return {tp.partition: tp.offset for tp in offs}

    def committed_now() -> dict[int, int]:
        c = h.consumer(b.bootstrap, **{"group.id": group})
        try:
            return {tp.partition: tp.offset for tp in c.committed([TopicPartition(t, p) for p in range(3)], timeout=30)}
        finally:
            c.close()

    c = h.consumer(b.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([t])
    deadline = time.monotonic() + 30
    while not c.assignment():
        assert time.monotonic() < deadline, "the consumer never got its partitions"
        c.poll(0.1)
    for r in range(6):
        last = commit_round(c, 1 + r * 500)
    c.close()
    assert sizes[-1][0] >= 9000, f"__consumer_offsets high watermark {sizes[-1][0]} after 9000 offset commits"
    # a round writes 1500 commit records of 100+ bytes each (the key alone names group and
    # topic): over 150 KB per round, while the cleaner (every 200 ms) may already be at work,
    # so what proves compaction is the log staying small, not its size before a pass
    hws = [0] + [hw for hw, _, _ in sizes]
    assert all(b - a >= 1500 for a, b in zip(hws, hws[1:])), sizes
    assert all(after < 4 * segment for _, _, after in sizes), \
        f"offsets log (high watermark, bytes before cleaning, after) per round: {sizes}"
    assert committed_now() == last

    b.restart(signal.SIGTERM)
    assert committed_now() == last, "committed offsets after SIGTERM"
    c = h.consumer(b.bootstrap, **{"group.id": group})
    c.assign([TopicPartition(t, p, 0) for p in range(3)])  # assign()-style commits (generation -1)
    for r in range(2):
        last = commit_round(c, 3001 + r * 500)
    c.close()
    b.restart(signal.SIGKILL)
    assert committed_now() == last, "committed offsets after SIGKILL"
    assert leftovers(d) == []
    assert log_bytes(d) < 4 * segment
    print(f"offsets log (high watermark, bytes before cleaning, after) per round: {sizes}")


def test_consumers_reading_while_the_cleaner_swaps_segments(make_own_broker, topic_name):
    """Consumers scan a 7 MB compacted log from offset 0 over and over while a throttled cleaner
    (1.5 MB/s) rewrites it in several passes: every scan sees every key's latest value at its
    offset, and nothing that was not produced at the offset it is read at."""
    b = make_own_broker(FAST_CLEANER + '"log.cleaner.io.max.bytes.per.second" = 1500000\n')
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                                       "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    rnd = random.Random(8)
    rec = {}
    for i in range(60_000):
        k = rnd.randrange(20_000)
        rec[i] = (b"key-%05d" % k, value_of(k, i % 100) + b"|%06d|" % i + b"y" * 60, None)
    produce(p, t, [(i, *r) for i, r in rec.items()], acks)
    filler = roll(p, t, acks, "filler")
    rec["filler"] = (b"filler", b"roll", None)
    by_offset = {acks.ok[tg][0]: (r[0], r[1], (), acks.ok[tg][1]) for tg, r in rec.items()}
    latest = {}
    for o in sorted(by_offset):
        latest[by_offset[o][0]] = o
    want = {o: by_offset[o] for o in latest.values()}
    # Two readers scan back to back, staggered, so that a consumer is mid-read at almost every
    # moment; a pass counts as finished during a scan by the time of its `cleaned log` line.
    scans: list[tuple[float, float, int]] = []  # (start, end, records seen), s since the epoch
    failures: list[str] = []
    stop = threading.Event()

    def reader(delay: float) -> None:
        time.sleep(delay)
        while not stop.is_set() and not failures and len(scans) < 300:
            try:
                t0 = time.time()
                got, (lo, hi) = read_confluent(b.bootstrap, t)
                t1 = time.time()
                assert (lo, hi) == (0, filler + 1), f"watermarks {(lo, hi)}"
                lost = [o for o in want if got.get(o) != want[o]]
                assert not lost, f"{len(lost)} latest values missing, e.g. {[(o, got.get(o)) for o in lost[:3]]}"
                wrong = [o for o in got if got[o] != by_offset.get(o)]
                assert not wrong, f"{len(wrong)} records not produced there: {[(o, got[o]) for o in wrong[:3]]}"
                scans.append((t0, t1, len(got)))
            except Exception as e:  # noqa: BLE001 - reported by the test thread below
                failures.append(f"scan {len(scans) + 1}: {e!r}")

    threads = [threading.Thread(target=reader, args=(d,), daemon=True) for d in (0.0, 0.4)]
    for th in threads:
        th.start()
    try:
        deadline = time.monotonic() + 240
        while not failures:
            done_at = [f["_at"] for f in cleaned_lines(b, t) if int(f["first_dirty_next"]) >= filler]
            if done_at and any(s0 > done_at[0] and n == len(want) for s0, _, n in scans):
                break
            assert time.monotonic() < deadline, f"no complete pass seen by a scan: {[n for _, _, n in scans[-5:]]}"
            assert len(scans) < 300, f"no complete pass after {len(scans)} scans"
            time.sleep(0.5)
    finally:
        stop.set()
        for th in threads:
            th.join(timeout=90)
    assert not failures, failures[0]
    passes = [f["_at"] for f in cleaned_lines(b, t)]
    during = [at for at in passes if any(s0 < at < s1 for s0, s1, _ in scans)]
    assert during, f"no pass finished during a scan: passes at {passes}, scans {[(s0, s1) for s0, s1, _ in scans]}"
    print(f"{len(scans)} scans, {len(passes)} passes, {len(during)} finished during a scan; "
          f"records seen: {[n for _, _, n in scans]}")


# ---------------------------------------------------------------- 6. killed while cleaning

def test_cleaner_killed_mid_pass_loses_nothing(make_own_broker, topic_name):
    """A throttled cleaner (2 MB/s) compacts ~7 MB; the broker is SIGKILLed during the pass
    (while it writes `.cleaned` files, once a `.swap` is committed, at a seeded moment) and
    started without the cleaner: no `.cleaned`/`.swap` file is left, every key's latest value is
    at its offset and every record read is one produced there. At the end an unthrottled pass
    gives exactly the compacted log."""
    base = FAST_CLEANER
    b = make_own_broker(base + '"log.cleaner.enable" = false\n')
    t = topic_name()
    h.create_topic(b.bootstrap, t, 1, {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                                       "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"})
    p = idempotent_producer(b.bootstrap)
    acks = Acks()
    rnd = random.Random(6)
    n, keys = 60_000, 30_000
    rec = {}
    for i in range(n):
        k = rnd.randrange(keys)
        rec[i] = (b"key-%05d" % k, value_of(k, i % 100) + b"|%06d|" % i + b"x" * 60, None)
    produce(p, t, [(i, *r) for i, r in rec.items()], acks)
    assert not acks.errors
    filler = roll(p, t, acks, "filler")
    rec["filler"] = (b"filler", b"roll", None)
    by_offset = {acks.ok[tg][0]: (r[0], r[1], (), acks.ok[tg][1]) for tg, r in rec.items()}
    latest = {}
    for o in sorted(by_offset):
        latest[by_offset[o][0]] = o
    want = {o: by_offset[o] for o in latest.values()}
    d = partition_dir(b, t)

    def check(label):
        assert leftovers(d) == [], f"{label}: files of the interrupted pass left after the start: {leftovers(d)}"
        got, (lo, hi) = read_confluent(b.bootstrap, t)
        assert (lo, hi) == (0, filler + 1), f"{label}: watermarks {(lo, hi)}"
        lost = [o for o in want if got.get(o) != want[o]]
        assert not lost, f"{label}: {len(lost)} latest values lost, e.g. {[(o, want[o][:2], got.get(o)) for o in lost[:3]]}"
        wrong = [o for o in got if got[o] != by_offset.get(o)]
        assert not wrong, f"{label}: {len(wrong)} records not produced there, e.g. {[(o, got[o]) for o in wrong[:3]]}"
        return got

    check("before cleaning")
    kills = []
    for moment in ("cleaned", "swap", "seeded"):
        b.stop(signal.SIGTERM)
        b.config_path.write_text(base + '"log.cleaner.io.max.bytes.per.second" = 2000000\n')
        watch = RenameWatch(d)
        try:
            b.start()
            # cleaned: the pass is writing its first output; swap: it committed one (renamed to
            # .log.swap), the old segments are still there; seeded: some time into the pass
            seen = watch.wait(".log.swap" if moment == "swap" else ".log.cleaned", 40, b.assert_alive)
            assert seen, f"kill at {moment}: no such moment within 40s; passes {cleaned_lines(b, t)}"
            if moment != "swap":
                time.sleep(0.3 if moment == "cleaned" else rnd.uniform(0.2, 2.0))
            b.stop(signal.SIGKILL)
        finally:
            watch.close()
        kills.append((moment, leftovers(d)))
        b.config_path.write_text(base + '"log.cleaner.enable" = false\n')
        b.start()
        got = check(f"after SIGKILL at {moment} {kills[-1][1]}")
        print(f"killed at {moment}: {kills[-1][1]}; {len(got)} records after the restart")
    assert any(".log.swap" in f for _, files in kills for f in files), f"never killed with a committed swap: {kills}"

    b.stop(signal.SIGTERM)
    b.config_path.write_text(base)
    b.start()
    wait_cleaned(b, t, filler, timeout=60)
    b.restart(signal.SIGTERM)
    got = check("after a complete pass and a restart")
    compare(got, want, "the compacted log after the interrupted passes")
    assert (b.data_dir / "cleaner-offset-checkpoint").read_text().count(t) == 1
