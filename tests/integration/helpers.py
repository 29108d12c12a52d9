"""Client helpers shared by the integration tests (confluent-kafka based)."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

# librdkafka logs to stderr by default; keep it quiet unless asked.
LOG_LEVEL = int(os.environ.get("FRIEDA_TEST_RDKAFKA_LOG_LEVEL", "3"))


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL})


def create_topic(bootstrap: str, name: str, partitions: int = 3, config: dict | None = None,
                 timeout: float = 30) -> None:
    a = admin(bootstrap)
    fs = a.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                   config=config or {})], operation_timeout=timeout, request_timeout=timeout)
    fs[name].result(timeout=timeout)
    wait_topic(bootstrap, name, partitions, timeout=timeout)


def wait_until(what: str, cond, timeout: float, every: float = 0.25):
    """Polls ``cond()`` every ``every`` s until it returns something truthy (returned), or fails
    after ``timeout`` s naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def wait_topic(bootstrap: str, name: str, partitions: int | None = None, timeout: float = 30) -> int:
    """Wait until metadata lists ``name`` with a leader for every partition; return the partition count."""
    a = admin(bootstrap)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            md = a.list_topics(topic=name, timeout=10)
        except KafkaException as e:  # e.g. a broker that is still starting up: retried like clients do
            last = e
            time.sleep(0.2)
            continue
        t = md.topics.get(name)
        last = t
        if t is not None and t.error is None and t.partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            if partitions is None or len(t.partitions) == partitions:
                return len(t.partitions)
        time.sleep(0.1)
    raise AssertionError(f"topic {name} not ready (want {partitions} partitions): {last!r} "
                         f"error={getattr(last, 'error', None)}")


def topic_names(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=10).topics)


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    headers: list | None
    timestamp: int
    partition: int | None = None


@dataclass
class Acked:
    rec: Rec
    partition: int
    offset: int
    timestamp: int


@dataclass
class DeliveryLog:
    acked: list = field(default_factory=list)
    errors: list = field(default_factory=list)

    def callback(self, rec: Rec):
        def cb(err, msg):
            if err is not None:
                self.errors.append((rec, err))
            else:
                self.acked.append(Acked(rec, msg.partition(), msg.offset(), msg.timestamp()[1]))
        return cb


def sample_records(n: int, seed: int = 1, now_ms: int | None = None, big_every: int = 37) -> list[Rec]:
    """Varied records: keyed and null-keyed, empty and large (~100 KiB) values, binary bytes, headers
    (including duplicate keys, empty and null header values), producer-set timestamps."""
    rnd = random.Random(seed)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    base_ts = now_ms - 600_000  # 10 minutes ago: inside Kafka's default timestamp bounds
    out = []
    for i in range(n):
        if i % 11 == 3:
            key = None
        elif i % 13 == 5:
            key = b""
        else:
            key = b"key-%d" % (i % 17)
        if i % 9 == 2:
            value = b""
        elif i % big_every == 7:
            value = rnd.randbytes(100 * 1024)
        elif i % 5 == 1:
            value = rnd.randbytes(rnd.randint(1, 300))  # binary incl. NUL, 0xff
        else:
            value = ("value %d ünïcødé ✓ " % i).encode() * rnd.randint(1, 4)
        if i % 4 == 0:
            headers = None
        elif i % 4 == 1:
            headers = [("h1", b"v%d" % i), ("bin", bytes([0, 255, 10, 13]))]
        elif i % 4 == 2:
            headers = [("dup", b"a"), ("dup", b"b"), ("empty", b"")]
        else:
            headers = [("null-value", None), ("k", b"x" * 200)]
        out.append(Rec(key, value, headers, base_ts + i * 7))
    return out


def producer(bootstrap: str, **conf) -> Producer:
    c = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL, "linger.ms": 5,
         "message.timeout.ms": 30000}
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(c)


def produce_all(p: Producer, topic: str, recs: list[Rec], timeout: float = 60) -> DeliveryLog:
    log = DeliveryLog()
    for r in recs:
        kw = {}
        if r.partition is not None:
            kw["partition"] = r.partition
        while True:
            try:
                p.produce(topic, value=r.value, key=r.key, headers=r.headers, timestamp=r.timestamp,
                          on_delivery=log.callback(r), **kw)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    remaining = p.flush(timeout)
    assert remaining == 0, f"{remaining} messages still in flight after {timeout}s"
    return log


def consumer(bootstrap: str, **conf) -> Consumer:
    c = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL,
         # a group.id is required by librdkafka, but no group API is used: assign() + explicit offsets
         "group.id": "frieda-it-unused", "enable.auto.commit": False, "enable.auto.offset.store": False,
         "auto.offset.reset": "error", "fetch.wait.max.ms": 100}
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(c)


def consume_partitions(bootstrap: str, topic: str, end_offsets: dict[int, int], start: int = 0,
                       timeout: float = 60, **conf) -> dict[tuple[int, int], object]:
    """Read each partition p from ``start`` until offset ``end_offsets[p]`` (exclusive) is reached.
    Returns {(partition, offset): Message}."""
    c = consumer(bootstrap, **conf)
    got = {}
    try:
        todo = {p: e for p, e in end_offsets.items() if e > start}
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
            got[(m.partition(), m.offset())] = m
            if m.partition() in todo and m.offset() + 1 >= todo[m.partition()]:
                del todo[m.partition()]
        assert not todo, f"timed out reading {topic}: partitions not complete {todo}, got {len(got)} messages"
    finally:
        c.close()
    return got


def norm_headers(h) -> list:
    """confluent-kafka returns None for no headers; compare as lists of (str, bytes|None)."""
    return [(k, v) for k, v in (h or [])]


def check_acked(acked: list[Acked], got: dict, topic: str = "") -> None:
    """Every acknowledged record is at its offset, byte for byte."""
    assert acked, "no record was acknowledged"
    for a in acked:
        m = got.get((a.partition, a.offset))
        assert m is not None, f"acknowledged record at {topic}[{a.partition}]@{a.offset} not read back"
        where = f"{topic}[{a.partition}]@{a.offset}"
        assert m.key() == a.rec.key, f"{where}: key {m.key()!r:.80} != {a.rec.key!r:.80}"
        assert m.value() == a.rec.value, f"{where}: value differs (len {len(m.value() or b'')} vs {len(a.rec.value or b'')})"
        assert norm_headers(m.headers()) == norm_headers(a.rec.headers), \
            f"{where}: headers {m.headers()!r} != {a.rec.headers!r}"
        ts_type, ts = m.timestamp()
        assert ts_type == 1, f"{where}: timestamp type {ts_type}, want CreateTime (1)"
        assert ts == a.rec.timestamp, f"{where}: timestamp {ts} != {a.rec.timestamp}"


def end_offsets_of(acked: list[Acked]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for a in acked:
        ends[a.partition] = max(ends.get(a.partition, 0), a.offset + 1)
    return ends
