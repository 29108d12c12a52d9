"""A backlog of distinct records to read back byte for byte: the zero-copy tests' data, one
broker (tests/integration/test_zero_copy.py) and a cluster under faults
(tests/cluster/test_zero_copy_faults.py)."""

from __future__ import annotations

import hashlib

from confluent_kafka import Producer


def value_for(p: int, i: int) -> bytes:
    """The i-th value produced to partition p: 300-8,300 printable bytes (Kafka's console
    consumer prints them as they are), different for every record."""
    seed = hashlib.blake2b(b"%d/%d" % (p, i), digest_size=32).hexdigest().encode()
    n = 300 + (i * 7919) % 8000
    return (seed * (n // 64 + 1))[:n]


def digest(value: bytes) -> bytes:
    return hashlib.blake2b(value, digest_size=16).digest()


def produce_backlog(bootstrap: str, topic: str, partitions: int, total_bytes: int, key_prefix: bytes = b"",
                    flush_timeout: float = 120, **conf) -> dict[tuple[int, int], bytes]:
    """Produces about total_bytes over the partitions (acks=all; record i of each partition
    keyed key_prefix + i, valued value_for(partition, i)); returns the digest of each
    acknowledged value by (partition, offset), from the delivery reports. `conf`: more producer
    settings (Kafka's names)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1 << 20, "compression.type": "none",
                  "queue.buffering.max.kbytes": 256 << 10, **conf})
    stored: dict[tuple[int, int], bytes] = {}
    errors: list = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            stored[(msg.partition(), msg.offset())] = digest(msg.value())

    sent, i = 0, 0
    while sent < total_bytes:
        for part in range(partitions):
            v = value_for(part, i)
            while True:
                try:
                    p.produce(topic, value=v, key=key_prefix + b"%d" % i, partition=part, on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.05)
            sent += len(v)
        i += 1
        p.poll(0)
    assert p.flush(flush_timeout) == 0
    assert not errors, errors[:3]
    return stored
