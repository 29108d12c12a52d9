"""Client-side helpers of the cluster tests: a producer thread keeping every delivery report,
reading partitions back by assignment, and the checks a user makes on what came back."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from conftest import LOG_LEVEL


@dataclass
class Ack:
    seq: int
    partition: int
    offset: int
    key: bytes
    value: bytes
    sent: float  # time.monotonic() at produce()
    acked: float  # time.monotonic() at the delivery report


class ProducerThread(threading.Thread):
    """Produces ``rate`` records/s to ``topic`` (record ``seq`` goes to partition ``seq %
    partitions``) until ``stop()``; keeps every delivery report. Values are unique per ``tag`` and
    ``seq`` and carry seeded random bytes (incl. NUL and 0xff), so a stored record names its origin.

    Default producer settings: idempotent, acks=all, message.timeout.ms=120000 (generous: a
    failover must not make a record fail), linger.ms=5."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int = 300, tag: str = "r",
                 **conf):
        super().__init__(daemon=True, name=f"producer-{topic}")
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.tag = tag.encode()
        c = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL, "enable.idempotence": True, "acks": "all",
             "message.timeout.ms": 120000, "linger.ms": 5}
        c.update({k.replace("_", "."): v for k, v in conf.items()})
        self.conf = c
        self.producer = Producer(c)
        self.acks: list[Ack] = []
        self.errors: list[tuple[int, KafkaError]] = []
        self.sent = 0
        self.unflushed = None
        self.flush_timeout = 60.0
        self._halt = threading.Event()
        self._paused = threading.Event()
        self.exc: BaseException | None = None

    def value_of(self, seq: int) -> bytes:
        rnd = random.Random(b"%s|%d" % (self.tag, seq))
        return b"%s|%d|" % (self.tag, seq) + rnd.randbytes(rnd.randint(0, 200))

    def _cb(self, seq: int, key: bytes, value: bytes, sent: float):
        def cb(err, msg):
            if err is not None:
                self.errors.append((seq, err))
            else:
                self.acks.append(Ack(seq, msg.partition(), msg.offset(), key, value, sent, time.monotonic()))
        return cb

    def produce_one(self) -> None:
        seq = self.sent
        key = b"%s-%d" % (self.tag, seq)
        value = self.value_of(seq)
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, partition=seq % self.partitions,
                                      on_delivery=self._cb(seq, key, value, time.monotonic()))
                break
            except BufferError:
                self.producer.poll(0.05)
        self.sent += 1

    def run(self) -> None:
        try:
            start = time.monotonic()
            while not self._halt.is_set():
                if self._paused.is_set():
                    self.producer.poll(0.05)
                    start = time.monotonic() - self.sent / self.rate
                    continue
                due = int((time.monotonic() - start) * self.rate) + 1
                while self.sent < due and not self._halt.is_set():
                    self.produce_one()
                self.producer.poll(0.01)
            self.unflushed = self.producer.flush(self.flush_timeout)
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.exc = e

    # ---- control from the test ------------------------------------------------
    def pause(self) -> None:
        """Stops producing new records (delivery reports keep coming)."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def stop(self, flush_timeout: float = 60) -> None:
        """Stops producing, waits for every delivery report (at most ``flush_timeout`` s)."""
        self.flush_timeout = flush_timeout
        self._halt.set()
        self.join(flush_timeout + 15)
        assert not self.is_alive(), "producer thread did not finish"
        if self.exc is not None:
            raise self.exc
        assert self.unflushed == 0, f"{self.unflushed} records without a delivery report after {flush_timeout}s"

    def close(self) -> None:
        """Destroys the librdkafka handle (a live handle keeps asking Metadata for its topics, and
        a Metadata request may auto-create a topic a test has just deleted)."""
        assert not self.is_alive(), "stop() the thread first"
        self.producer = None

    def produce_now(self, n: int, timeout: float = 60) -> tuple[list[Ack], list]:
        """Without the thread: produces ``n`` records at once and waits for their delivery
        reports. Returns (the new acks, the new errors)."""
        a0, e0 = len(self.acks), len(self.errors)
        for _ in range(n):
            self.produce_one()
            self.producer.poll(0)
        left = self.producer.flush(timeout)
        assert left == 0, f"{left} records without a delivery report after {timeout}s"
        return self.acks[a0:], self.errors[e0:]

    def wait_acked(self, n: int, timeout: float, what: str = "") -> None:
        """Until at least ``n`` records are acknowledged in total."""
        deadline = time.monotonic() + timeout
        while len(self.acks) < n:
            assert self.exc is None, f"producer thread failed: {self.exc!r}"
            assert time.monotonic() < deadline, \
                f"only {len(self.acks)} of {n} records acknowledged within {timeout}s {what}; errors {self.errors[:5]}"
            time.sleep(0.05)

    def wait_more(self, n: int, timeout: float, what: str = "") -> None:
        """Until ``n`` more records than now are acknowledged."""
        self.wait_acked(len(self.acks) + n, timeout, what)

    def acked_by_partition(self) -> dict[int, int]:
        """partition -> end offset implied by the acknowledgements (highest acked offset + 1)."""
        ends: dict[int, int] = {}
        for a in self.acks:
            ends[a.partition] = max(ends.get(a.partition, 0), a.offset + 1)
        return ends

    def max_latency(self, since: float = 0.0) -> float:
        lat = [a.acked - a.sent for a in self.acks if a.sent >= since]
        return max(lat) if lat else 0.0


# ---------------------------------------------------------------- reading back

def consumer(bootstrap: str, **conf) -> Consumer:
    c = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL,
         # librdkafka wants a group.id, but no group API is used: assign() + explicit offsets
         "group.id": "frieda-cluster-unused", "enable.auto.commit": False, "enable.auto.offset.store": False,
         "auto.offset.reset": "error", "fetch.wait.max.ms": 100, "check.crcs": True}
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(c)


def watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 10) -> dict[int, tuple[int, int]]:
    """partition -> (low, high) as ListOffsets (via the leader) reports them."""
    c = consumer(bootstrap)
    try:
        return {p: _watermark(c, topic, p, timeout) for p in range(partitions)}
    finally:
        c.close()


# A leader moved after the client's metadata: it asked the old leader. Kafka's clients refresh
# their metadata and retry; librdkafka's get_watermark_offsets does not, so this does. Also when
# the broker it asked just left the client's metadata (a node stopped: _DESTROY_BROKER), and when
# no leader answered in time (a controller failover: _TIMED_OUT), until the caller's timeout.
# And while a new leader's high watermark is still below its epoch start (OFFSET_NOT_AVAILABLE,
# KIP-207: it does not know yet where the acknowledged records end).
_MOVED = {KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError._UNKNOWN_PARTITION,
          KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT}


def _watermark(c: Consumer, topic: str, p: int, timeout: float) -> tuple[int, int]:
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.5, deadline - time.monotonic())
        try:
            return c.get_watermark_offsets(TopicPartition(topic, p), timeout=min(3.0, left), cached=False)
        except KafkaException as e:
            if e.args[0].code() not in _MOVED or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
            try:
                c.list_topics(topic, timeout=5)  # refreshes the partition's leader
            except KafkaException:
                pass


def read_partitions(bootstrap: str, topic: str, ends: dict[int, int], timeout: float = 60,
                    start: int = 0, **conf) -> dict:
    """Reads each partition p from offset ``start`` up to ``ends[p]`` (exclusive) by assignment,
    without a group (``conf``: more consumer settings, as ``consumer``'s). Returns
    {(partition, offset): (key, value)}."""
    c = consumer(bootstrap, **conf)
    got = {}
    try:
        todo = {p: e for p, e in ends.items() if e > start}
        c.assign([TopicPartition(topic, p, start) for p in todo])
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            got[(m.partition(), m.offset())] = (m.key(), m.value())
            if m.partition() in todo and m.offset() + 1 >= todo[m.partition()]:
                del todo[m.partition()]
        assert not todo, f"timed out reading {topic}: partitions not complete {todo}, got {len(got)} records"
    finally:
        c.close()
    return got


def read_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60,
             start: int = 0) -> tuple[dict, dict]:
    """Every record from ``start`` below the high watermarks: ({(p, offset): (key, value)},
    {p: high watermark})."""
    hw = {p: high for p, (_low, high) in watermarks(bootstrap, topic, partitions).items()}
    return read_partitions(bootstrap, topic, hw, timeout, start), hw


def check_acked(acks: list[Ack], got: dict, topic: str) -> set[tuple[int, int]]:
    """Every acknowledged record is at its offset, byte for byte. Returns where each one is.

    librdkafka reports some records delivered without an offset: those of a batch whose answer
    was lost (its connection died with a node) once the broker acknowledged a later batch of the
    same idempotent producer (`rd_kafka_dr_implicit_ack`). Such a record must be in its
    partition all the same, exactly once, with its key and value; it is looked up by key."""
    assert acks, "no record was acknowledged"
    by_key = {(part, key): off for (part, off), (key, _value) in got.items()}
    where: dict[int, tuple[int, int]] = {}
    lost = []
    for a in acks:
        off = a.offset if a.offset is not None else by_key.get((a.partition, a.key))
        if (a.partition, off) in got:
            where[id(a)] = (a.partition, off)
        else:
            lost.append(a)
    assert not lost, (f"{len(lost)} of {len(acks)} acknowledged records of {topic} not read back, e.g. "
                      + ", ".join(f"[{a.partition}]@{a.offset} (seq {a.seq})" for a in lost[:10]))
    for a in acks:
        key, value = got[where[id(a)]]
        at = f"{topic}[{a.partition}]@{where[id(a)][1]} (seq {a.seq}{', offset not reported' if a.offset is None else ''})"
        assert key == a.key, f"{at}: key {key!r:.60} != {a.key!r:.60}"
        assert value == a.value, f"{at}: value {value!r:.60} != {a.value!r:.60}"
    return set(where.values())


def check_log(producers, got: dict, hw: dict, topic: str, exact: bool = True) -> None:
    """What a user checks after producing with ``producers`` (ProducerThreads of distinct tags):
    every acknowledged record at its offset byte for byte; every offset below each high
    watermark readable (no gaps); every stored record is one that was produced, with the key and
    value it was produced with, and none is stored twice (idempotence). With ``exact`` the log
    holds exactly the acknowledged records (nothing refused or never acknowledged was stored)."""
    if isinstance(producers, ProducerThread):
        producers = [producers]
    by_tag = {p.tag: p for p in producers}
    assert len(by_tag) == len(producers), "producers need distinct tags"
    acked: set[tuple[int, int]] = set()
    for p in producers:
        if p.acks:
            acked |= check_acked(p.acks, got, topic)
    assert any(p.acks for p in producers), "no record was acknowledged"
    for part, high in hw.items():
        missing = [o for o in range(high) if (part, o) not in got]
        assert not missing, f"{topic}[{part}]: offsets below the high watermark {high} not readable: {missing[:10]}"
    seen: dict[bytes, tuple[int, int]] = {}
    for (part, off), (key, value) in sorted(got.items()):
        tag, _, seq = (key or b"").rpartition(b"-")
        p = by_tag.get(tag)
        assert p is not None and seq.isdigit(), f"{topic}[{part}]@{off}: a record nobody produced, key {key!r:.60}"
        assert value == p.value_of(int(seq)), f"{topic}[{part}]@{off}: value is not the one produced for {key!r}"
        assert key not in seen, f"{topic}: {key!r} stored twice, at [{seen[key][0]}]@{seen[key][1]} and [{part}]@{off}"
        seen[key] = (part, off)
    if exact:
        extra = sorted(set(got) - acked)
        assert not extra, f"{topic}: {len(extra)} records stored that were never acknowledged, e.g. {extra[:10]}"


# ---------------------------------------------------------------- replicas on disk

def replica_batches(data_dir, topic: str, partition: int) -> list[bytes]:
    """The record batches (whole, as bytes) in a replica's segment files, oldest first; a partial
    batch at the end of a segment (being written) is left out."""
    from kafka_wire_extra import parse_batches, partition_segments

    out = []
    pdir = data_dir / f"{topic}-{partition}"
    for seg in partition_segments(pdir):
        data = seg.read_bytes()
        out += [data[b.position:b.position + b.size] for b in parse_batches(data)]
    return out


def replicas_identical(cluster, topic: str, partitions: int) -> tuple[bool, str]:
    """Whether every replica of every partition holds the same batches byte for byte (and which
    differ, else)."""
    for p in range(partitions):
        replicas = cluster.replicas_of(topic, p)
        logs = {r: replica_batches(cluster.node(r).data_dir, topic, p) for r in replicas}
        first = logs[replicas[0]]
        for r, batches in logs.items():
            if batches != first:
                n = next((i for i, (a, b) in enumerate(zip(first, batches)) if a != b), min(len(first), len(batches)))
                return False, (f"{topic}[{p}]: replica {r} has {len(batches)} batches, replica {replicas[0]} "
                               f"{len(first)}; first difference at batch {n}")
    return True, "identical"
