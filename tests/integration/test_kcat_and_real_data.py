"""kcat (Debian's package) against the broker, and a real text corpus streamed through it."""

from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import subprocess
import time

import pytest

import helpers as h

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
needs_kcat = pytest.mark.skipif(KCAT is None, reason="kcat not installed (apt-get install kcat)")
T = 60


def kcat(bootstrap: str, *args: str, input: bytes | None = None, timeout: float = T) -> bytes:
    cmd = [KCAT, "-b", bootstrap, "-X", "log_level=3", *args]
    p = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}"
    assert b"ERROR" not in p.stderr, p.stderr.decode(errors="replace")[-2000:]
    return p.stdout


def kcat_consume(bootstrap: str, topic: str, partition: int, fmt: str = "%s\\n", *extra: str) -> bytes:
    # -e: exit at the end of the partition; -o beginning; no group (simple assign consumer)
    return kcat(bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning", "-e", "-q",
                "-f", fmt.encode().decode("unicode_escape"), *extra)


def kcat_produce(bootstrap: str, topic: str, data: bytes, *extra: str) -> None:
    kcat(bootstrap, "-P", "-t", topic, "-X", "acks=all", *extra, input=data)


def corpus_files() -> list[str]:
    """Real text on any Debian machine: the GPL-3 text, and the largest gzipped Debian changelog."""
    out = []
    if os.path.exists("/usr/share/common-licenses/GPL-3"):
        out.append("/usr/share/common-licenses/GPL-3")
    logs = sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz"), key=lambda p: (-os.path.getsize(p), p))
    if logs:
        out.append(logs[0])
    return out


def read_corpus(path: str) -> bytes:
    if path.endswith(".gz"):
        with gzip.open(path) as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


@needs_kcat
def test_kcat_lists_metadata(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    md = json.loads(kcat(broker.bootstrap, "-L", "-J", "-t", topic))
    assert len(md["brokers"]) == 1
    b = md["brokers"][0]
    assert b["name"] == f"{broker.host}:{broker.port}", b
    [t] = [t for t in md["topics"] if t["topic"] == topic]
    assert "error" not in t, t
    assert sorted(p["partition"] for p in t["partitions"]) == [0, 1, 2]
    for p in t["partitions"]:
        assert p["leader"] == b["id"] and [r["id"] for r in p["replicas"]] == [b["id"]], p
    text = kcat(broker.bootstrap, "-L").decode()
    assert "1 brokers:" in text, text
    assert f'topic "{topic}" with 3 partitions:' in text, text


@needs_kcat
def test_kcat_produce_consume_lines(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    lines = [b"hello", b"tab\tseparated\tline", "ünïcødé ✓ ☃".encode(), b"x" * 5000, b"last line"]
    kcat_produce(broker.bootstrap, topic, b"\n".join(lines) + b"\n", "-p", "0")
    out = kcat_consume(broker.bootstrap, topic, 0)
    assert out.split(b"\n")[:-1] == lines
    # a second batch appends; offsets continue
    kcat_produce(broker.bootstrap, topic, b"more\n", "-p", "0")
    out = kcat_consume(broker.bootstrap, topic, 0, "%o:%s\\n")
    assert out.split(b"\n")[:-1] == [b"%d:%s" % (i, l) for i, l in enumerate(lines + [b"more"])]


@needs_kcat
def test_kcat_keys(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    pairs = [(b"user-%d" % (i % 7), b"event %d" % i) for i in range(100)]
    kcat_produce(broker.bootstrap, topic, b"".join(k + b":" + v + b"\n" for k, v in pairs), "-K:")
    got = []
    for p in range(3):
        out = kcat_consume(broker.bootstrap, topic, p, "%k:%s\\n")
        got += [tuple(l.split(b":", 1)) for l in out.split(b"\n")[:-1]]
    assert sorted(got) == sorted(pairs)
    # same key -> same partition, and per key the order is kept
    for p in range(3):
        out = kcat_consume(broker.bootstrap, topic, p, "%k:%s\\n")
        recs = [tuple(l.split(b":", 1)) for l in out.split(b"\n")[:-1]]
        for k in {k for k, _ in recs}:
            assert [v for kk, v in recs if kk == k] == [v for kk, v in pairs if kk == k]
    # kcat and confluent-kafka agree on the key bytes
    c_msgs = h.consume_partitions(broker.bootstrap, topic,
                                  {p: len(kcat_consume(broker.bootstrap, topic, p).split(b"\n")) - 1
                                   for p in range(3)})
    assert sorted((m.key(), m.value()) for m in c_msgs.values()) == sorted(pairs)


@needs_kcat
@pytest.mark.parametrize("path", corpus_files() or ["(none)"])
def test_real_corpus_through_kcat(broker, topic_name, path):
    if path == "(none)":
        pytest.skip("no text corpus found on this machine")
    data = read_corpus(path)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    nonempty = [l for l in lines if l != b""]  # kcat -P skips empty lines
    assert len(nonempty) > 100, f"{path}: too small to be a useful corpus"
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    kcat_produce(broker.bootstrap, topic, data, "-p", "0")
    out = kcat_consume(broker.bootstrap, topic, 0)
    got = out.split(b"\n")[:-1]
    assert len(got) == len(nonempty), f"{len(got)} lines back, {len(nonempty)} sent"
    for i, (a, b) in enumerate(zip(got, nonempty)):
        assert a == b, f"line {i} differs: {a!r} != {b!r}"


@pytest.mark.parametrize("path", corpus_files() or ["(none)"])
def test_real_corpus_through_confluent_kafka(broker, topic_name, path):
    """Every line (empty ones too) produced with its line number as key; read back the file, identical."""
    if path == "(none)":
        pytest.skip("no text corpus found on this machine")
    data = read_corpus(path)
    lines = data.split(b"\n")
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    now = int(time.time() * 1000)
    recs = [h.Rec(b"%d" % i, l, [("source", path.encode())], now, partition=i % 3) for i, l in enumerate(lines)]
    log = h.produce_all(h.producer(broker.bootstrap, acks="all", linger_ms=20), topic, recs)
    assert not log.errors, log.errors[:3]
    got = h.consume_partitions(broker.bootstrap, topic, h.end_offsets_of(log.acked))
    h.check_acked(log.acked, got, topic)
    by_line = {int(m.key()): m.value() for m in got.values()}
    assert len(by_line) == len(lines)
    assert b"\n".join(by_line[i] for i in range(len(lines))) == data
