"""The open-file budget and the shortest time-based roll (issue 30): topic configs and topic
counts cannot make the broker run out of file descriptors.

Every segment keeps its .log open, and its .index and .timeindex once it has an index entry
(issue 58: an idle partition holds one file, not three). The broker raises its soft
RLIMIT_NOFILE to the hard limit and lets segments take `log.segment.files.max` files (default:
80% of the limit). Here the budget is 46 files:

- CreateTopics that would take the broker past it (one file per new partition, less a tenth kept
  for rolls) is refused with INVALID_PARTITIONS and a message naming the budget;
- a partition rolling 4 KiB segments fills the budget (a closed segment holds three files; the
  last ones, whose indexes no longer fit, keep them in memory); the produce that needs one segment
  more gets KAFKA_STORAGE_ERROR (56), every acknowledged record reads back at its offset byte for
  byte, the log stays online, the metrics show the budget used; after a crash and after a clean
  restart every record reads back again (the in-memory indexes rebuilt from the log); deleting
  the topic gives the files back and a new topic takes produces again;
- `segment.ms = 1` (accepted as in Kafka 4.4) rolls at most once per `log.segment.ms.min`
  (1 s by default), not once per batch.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

import helpers as h
from conftest import free_port


def metric(port: int, name: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return None


def produce_one(bootstrap: str, topic: str, value: bytes) -> tuple[int | None, int | None]:
    """(offset, None) when acknowledged, (None, Kafka error code) when refused."""
    p = h.producer(bootstrap, **{"message.send.max.retries": 0, "message.timeout.ms": 10000,
                                 "linger.ms": 0, "enable.idempotence": False})
    out = []
    p.produce(topic, value=value, key=value[:8], partition=0,
              on_delivery=lambda err, msg: out.append((err, msg)))
    p.flush(15)
    assert out, "no delivery report"
    err, msg = out[0]
    return (msg.offset(), None) if err is None else (None, err.code())


def test_open_file_budget_refuses_new_segments_cleanly(make_own_broker, topic_name):
    port = free_port()
    budget = 46
    b = make_own_broker(f'log.segment.files.max = {budget}\nmetrics.listen = "127.0.0.1:{port}"\n')
    assert metric(port, "frieda_log_segment_files_budget") == budget
    baseline = metric(port, "frieda_log_segment_files_open")  # the internal topics' segments
    assert baseline is not None and baseline < 20, baseline

    big = topic_name("big")
    a = h.admin(b.bootstrap)
    fs = a.create_topics([NewTopic(big, 45, 1)], operation_timeout=30)
    with pytest.raises(KafkaException) as refused:
        fs[big].result(30)
    err = refused.value.args[0]
    assert err.name() == "INVALID_PARTITIONS", err
    assert "open-file budget" in err.str(), err.str()

    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=1, config={"internal.segment.bytes": "4096"})
    acked: dict[int, bytes] = {}
    refusal = None
    for i in range(400):
        value = f"{i:06d}".encode() + bytes([i % 251]) * 1200
        offset, code = produce_one(b.bootstrap, topic, value)
        if code is not None:
            refusal = code
            break
        acked[offset] = value
    assert refusal == 56, f"after {len(acked)} records: {refusal}"  # KAFKA_STORAGE_ERROR
    # Segments of 4 KiB, three 1.2 KB records each; every closed one holds three files unless
    # its indexes did not fit (then one), the active one holds one.
    pdir = b.data_dir / f"{topic}-0"
    segments = sorted(pdir.glob("*.log"))
    indexed = sorted(pdir.glob("*.timeindex"))
    assert 3 * len(segments) - 3 <= len(acked) <= 3 * len(segments), (len(acked), len(segments))
    assert len(segments) + 2 * len(indexed) == budget - baseline, (len(segments), len(indexed), baseline)
    # n segments with indexes take 3n - 2 files; what is left over (1 or 2 files) is taken by
    # segments whose indexes no longer fit, one each (the budget is picked so that, with the
    # baseline of 2 files seen here, one segment has them in memory only).
    memory_only = {1: 0, 2: 1, 0: 2}[(budget - baseline) % 3]
    assert len(segments) - 1 - len(indexed) == memory_only, (len(segments), len(indexed), baseline)
    assert not (pdir / segments[-1].name.replace(".log", ".index")).exists()
    assert metric(port, "frieda_log_segment_files_open") == budget
    log_text = b.stderr_path.read_text(errors="replace")
    assert "open-file budget reached" in log_text
    assert ("indexes are kept in memory only" in log_text) == (memory_only > 0)

    # Nothing acknowledged is lost; the log is online (reads work; a produce is still refused
    # cleanly, not with an offline log).
    got = h.consume_partitions(b.bootstrap, topic, {0: max(acked) + 1})
    assert {o: m.value() for (_, o), m in got.items()} == acked
    assert produce_one(b.bootstrap, topic, b"x" * 2000)[1] == 56
    with pytest.raises(KafkaException):
        h.create_topic(b.bootstrap, topic_name("more"), partitions=1, timeout=15)

    # After a crash and after a clean stop the segments without index files get them rebuilt
    # from the log (a start-up opens what exists whatever the budget), and every record reads
    # back at its offset.
    for sig in (signal.SIGKILL, signal.SIGTERM):
        b.restart(sig)
        got = h.consume_partitions(b.bootstrap, topic, {0: max(acked) + 1})
        assert {o: m.value() for (_, o), m in got.items()} == acked, sig
    assert len(sorted(pdir.glob("*.timeindex"))) == len(segments) - 1, "rebuilt at start-up"

    # Deleting the topic gives its files back.
    a.delete_topics([topic], operation_timeout=30)[topic].result(30)
    deadline = time.monotonic() + 30
    while metric(port, "frieda_log_segment_files_open") > baseline:
        assert time.monotonic() < deadline, metric(port, "frieda_log_segment_files_open")
        time.sleep(0.5)
    again = topic_name("again")
    h.create_topic(b.bootstrap, again, partitions=1)
    assert produce_one(b.bootstrap, again, b"back")[0] == 0


def test_segment_ms_rolls_at_most_once_per_log_segment_ms_min(make_own_broker, topic_name):
    b = make_own_broker("log.segment.ms.min = 1000\n")
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=1, config={"segment.ms": "1"})
    p = h.producer(b.bootstrap, **{"linger.ms": 0})
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < 3.0:
        p.produce(topic, value=b"v%d" % n, partition=0)
        p.flush(10)
        n += 1
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    logs = sorted(Path(b.data_dir).rglob(f"{topic}-0/*.log"))
    print(f"{n} batches in {elapsed:.1f} s: {len(logs)} segments")
    assert n >= 50, n
    assert 2 <= len(logs) <= int(elapsed) + 2, [x.name for x in logs]
