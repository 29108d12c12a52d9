"""Start-up: what the broker refuses to start with, how it listens, and what it validates.

- A second ``frieda serve`` on a data dir in use exits non-zero at once naming the ``.lock``;
  the first keeps working; once it is gone a new one starts.
- Listeners: ``--listen localhost:PORT`` (host names resolve), ``listeners =
  "PLAINTEXT://localhost:PORT"``, ``advertised.listeners`` is what Metadata returns, an empty
  host listens on every interface; ``SSL://`` and ``0.0.0.0`` without ``advertised.listeners``
  are refused naming the key.
- Impossible settings are refused naming the key.
- A corrupt ``meta/producer_ids`` or ``meta/cluster.json`` is refused naming the file (a silent
  reset would reuse producer ids / change the cluster id).
- Recovery after SIGKILL validates closed segments too (a damaged batch in the first of several
  segments cuts the log there); a clean stop writes ``recovery-point-offset-checkpoint`` (Kafka's
  format) and the next start validates nothing.

All need a broker started by the test (skipped with FRIEDA_EXTERNAL_BOOTSTRAP).
"""

from __future__ import annotations

import re
import signal
import time
import uuid

import pytest
from confluent_kafka import TopicPartition

import helpers as h
import kafka_wire as w
import kafka_wire_extra as wx
from conftest import EXTERNAL, free_port
from frieda_proc import FriedaProc, port_open

pytestmark = pytest.mark.skipif(bool(EXTERNAL), reason="start-up tests start their own brokers "
                                                        "(FRIEDA_EXTERNAL_BOOTSTRAP is set)")
T = 30
REFUSE_WITHIN_S = 5  # "at once"


def _roundtrip(bootstrap: str, n: int = 3) -> None:
    """Create a topic, produce n records (acks=all), read them back byte for byte."""
    topic = f"st-{uuid.uuid4().hex[:8]}"
    h.create_topic(bootstrap, topic, partitions=1)
    now = int(time.time() * 1000)
    log = h.produce_all(h.producer(bootstrap, acks="all"), topic,
                        [h.Rec(b"k%d" % i, b"value %d" % i, [("h", b"x")], now + i, 0) for i in range(n)])
    assert not log.errors and len(log.acked) == n, log.errors
    h.check_acked(log.acked, h.consume_partitions(bootstrap, topic, {0: n}), topic)


def _metadata_brokers(bootstrap: str) -> list[tuple[int, str, int]]:
    md = h.admin(bootstrap).list_topics(timeout=T)
    return sorted((b.id, b.host, b.port) for b in md.brokers.values())


# ---------------------------------------------------------------- 5. the data dir lock

def test_second_broker_on_the_same_data_dir_is_refused(own_broker, tmp_path):
    b = own_broker
    _roundtrip(b.bootstrap)
    second = FriedaProc(tmp_path / "second")
    port = free_port()
    t0 = time.monotonic()
    rc, err = second.run_to_exit(["--listen", f"127.0.0.1:{port}", "--data-dir", str(b.data_dir)],
                                 timeout=REFUSE_WITHIN_S)
    assert rc is not None, f"a second broker on {b.data_dir} kept running\n{err[-2000:]}"
    assert rc != 0 and time.monotonic() - t0 < REFUSE_WITHIN_S, (rc, err[-2000:])
    assert ".lock" in err, f"the refusal must name the .lock file:\n{err[-2000:]}"
    assert str(b.data_dir) in err, f"the refusal must name the data dir:\n{err[-2000:]}"
    assert not port_open("127.0.0.1", port)
    b.assert_alive()
    _roundtrip(b.bootstrap)  # the first one is unharmed
    b.stop(signal.SIGTERM)
    b.start()  # the lock went with the first process: a new one starts on the same data dir
    _roundtrip(b.bootstrap)


# ---------------------------------------------------------------- 6. listeners

def _config(tmp_path, name: str, text: str):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def _start(tmp_path, name: str, args: list[str], port: int) -> FriedaProc:
    proc = FriedaProc(tmp_path / name)
    proc.start(args, "127.0.0.1", port)
    return proc


def _stop(proc: FriedaProc) -> None:
    proc.stop(signal.SIGTERM)
    assert "panicked at" not in proc.text(), proc.tail()


def test_listen_with_a_host_name(tmp_path):
    port = free_port()
    proc = _start(tmp_path, "cli", ["--listen", f"localhost:{port}", "--data-dir", str(tmp_path / "d1")], port)
    try:
        _roundtrip(f"localhost:{port}")
        assert _metadata_brokers(f"localhost:{port}") == [(1, "localhost", port)]
        _stop(proc)
    finally:
        proc.kill()


def test_listeners_and_advertised_listeners_from_the_config_file(tmp_path):
    port = free_port()
    data = tmp_path / "d"
    cfg = _config(tmp_path, "a", f'listeners = "PLAINTEXT://localhost:{port}"\n"data.dir" = "{data}"\n')
    proc = _start(tmp_path, "a", ["--config", str(cfg)], port)
    try:
        assert _metadata_brokers(f"localhost:{port}") == [(1, "localhost", port)]
        _roundtrip(f"localhost:{port}")
        _stop(proc)
    finally:
        proc.kill()
    cfg = _config(tmp_path, "b", f'listeners = "PLAINTEXT://localhost:{port}"\n'
                                 f'advertised.listeners = "PLAINTEXT://127.0.0.1:{port}"\n"data.dir" = "{data}"\n'
                                 '"log.retention.hours" = 5\n')
    proc = _start(tmp_path, "b", ["--config", str(cfg)], port)
    try:
        assert _metadata_brokers(f"localhost:{port}") == [(1, "127.0.0.1", port)], \
            "Metadata must return advertised.listeners"
        _roundtrip(f"localhost:{port}")
        # start-up logs the settings in force under Kafka's names, one per line
        log = proc.text()
        for line in (f"listeners = PLAINTEXT://localhost:{port}", f"advertised.listeners = PLAINTEXT://127.0.0.1:{port}",
                     f"log.dirs = {data}", "log.retention.ms = 18000000", "num.partitions = 1"):
            assert f"frieda::config: {line}\n" in log, f"start-up log lacks {line!r}\n{log[:3000]}"
        _stop(proc)
    finally:
        proc.kill()


def test_listener_with_an_empty_host_listens_everywhere(tmp_path):
    port = free_port()
    data = tmp_path / "d"
    cfg = _config(tmp_path, "a", f'listeners = "PLAINTEXT://:{port}"\n'
                                 f'advertised.listeners = "PLAINTEXT://127.0.0.1:{port}"\n"data.dir" = "{data}"\n')
    proc = _start(tmp_path, "a", ["--config", str(cfg)], port)
    try:
        assert port_open("127.0.0.2", port), "an empty host must listen on every interface (127.0.0.2 refused)"
        assert _metadata_brokers(f"127.0.0.2:{port}") == [(1, "127.0.0.1", port)]
        _roundtrip(f"127.0.0.1:{port}")
        _stop(proc)
    finally:
        proc.kill()
    # without advertised.listeners the broker advertises a host name of this machine, never "" or 0.0.0.0
    cfg = _config(tmp_path, "b", f'listeners = "PLAINTEXT://:{port}"\n"data.dir" = "{data}"\n')
    proc = _start(tmp_path, "b", ["--config", str(cfg)], port)
    try:
        [(node, host, p)] = _metadata_brokers(f"127.0.0.1:{port}")
        assert p == port and host not in ("", "0.0.0.0", "::"), f"advertised {host!r}:{p}"
        _stop(proc)
    finally:
        proc.kill()


def _refused(tmp_path, name: str, config: str, key: str, extra_args: list[str] | None = None) -> str:
    """The broker exits non-zero within REFUSE_WITHIN_S with ``key`` in its error, never
    listening. Returns the error output."""
    proc = FriedaProc(tmp_path / name)
    cfg = _config(tmp_path, name, config)
    t0 = time.monotonic()
    rc, err = proc.run_to_exit(["--config", str(cfg), *(extra_args or [])], timeout=REFUSE_WITHIN_S)
    assert rc is not None, f"the broker started with {config!r}\n{err[-2000:]}"
    assert rc != 0, f"exit status 0 with {config!r}\n{err[-2000:]}"
    assert time.monotonic() - t0 < REFUSE_WITHIN_S
    assert key in err, f"the refusal of {config!r} must name `{key}`:\n{err[-2000:]}"
    assert "panicked at" not in err, err[-2000:]
    return err


def test_ssl_listener_is_refused(tmp_path):
    port = free_port()
    err = _refused(tmp_path, "ssl", f'listeners = "SSL://127.0.0.1:{port}"\n"data.dir" = "{tmp_path / "d"}"\n',
                   "listeners")
    said = [ln for ln in err.splitlines() if not ln.startswith("=====")]  # not the command line
    assert any("SSL" in ln for ln in said), f"the refusal must name the SSL security protocol:\n{err[-2000:]}"
    assert not port_open("127.0.0.1", port)


def test_wildcard_listener_needs_advertised_listeners(tmp_path):
    port = free_port()
    data = tmp_path / "d"
    _refused(tmp_path, "wild", f'listeners = "PLAINTEXT://0.0.0.0:{port}"\n"data.dir" = "{data}"\n',
             "advertised.listeners")
    cfg = _config(tmp_path, "ok", f'listeners = "PLAINTEXT://0.0.0.0:{port}"\n'
                                  f'advertised.listeners = "PLAINTEXT://127.0.0.1:{port}"\n"data.dir" = "{data}"\n')
    proc = _start(tmp_path, "ok", ["--config", str(cfg)], port)
    try:
        assert _metadata_brokers(f"127.0.0.1:{port}") == [(1, "127.0.0.1", port)]
        _roundtrip(f"127.0.0.1:{port}")
        _stop(proc)
    finally:
        proc.kill()


# ---------------------------------------------------------------- 7. impossible settings

@pytest.mark.parametrize("setting,possible,key", [
    ("node.id = -1", "node.id = 2", "node.id"),
    ("max.connections = 0", "max.connections = 5", "max.connections"),
    ('"fetch.max.bytes" = 10', '"fetch.max.bytes" = 65536', "fetch.max.bytes"),
    ('"log.dirs" = "{a},{b}"', '"log.dirs" = "{a}"', "log.dirs"),
], ids=["node.id", "max.connections", "fetch.max.bytes", "log.dirs"])
def test_impossible_setting_is_refused(tmp_path, setting, possible, key):
    """Refused naming the key; the same key with a possible value starts (the key is known, the
    value is the problem)."""
    port = free_port()
    dirs = {"a": tmp_path / "a", "b": tmp_path / "b"}
    for d in dirs.values():
        d.mkdir()
    data = "" if key == "log.dirs" else f'"data.dir" = "{tmp_path / "d"}"\n'
    _refused(tmp_path, key, f'listen = "127.0.0.1:{port}"\n{data}{setting.format(**dirs)}\n', key)
    assert not port_open("127.0.0.1", port)
    cfg = _config(tmp_path, "possible", f'listen = "127.0.0.1:{port}"\n{data}{possible.format(**dirs)}\n')
    proc = _start(tmp_path, "possible", ["--config", str(cfg)], port)
    try:
        _roundtrip(f"127.0.0.1:{port}")
        if key == "node.id":
            assert _metadata_brokers(f"127.0.0.1:{port}") == [(2, "127.0.0.1", port)]
        if key == "log.dirs":
            assert (dirs["a"] / "meta").is_dir(), "log.dirs names the data dir"
        _stop(proc)
    finally:
        proc.kill()


# ---------------------------------------------------------------- 8. corrupt metadata files

def _init_producer_id(b) -> int:
    with w.connect(b.host, b.port) as s:
        _, err, pid, _ = w.parse_init_producer_id_v4(w.request(s, w.init_producer_id_v4(1)))
    assert err == 0, f"InitProducerId error {err}"
    return pid


def _cluster_id(b) -> str:
    a = h.admin(b.bootstrap)  # kept alive until the future is resolved
    return a.describe_cluster(request_timeout=T).result(timeout=T).cluster_id


def _start_refused(b, tmp_path, what: str) -> str:
    """Starts a broker on ``b``'s data dir and port; it must exit non-zero at once. Its stderr."""
    proc = FriedaProc(tmp_path / f"refused-{what}")
    rc, err = proc.run_to_exit(["--listen", b.bootstrap, "--data-dir", str(b.data_dir)], timeout=REFUSE_WITHIN_S)
    assert rc is not None, f"the broker started with a corrupt {what}\n{err[-2000:]}"
    assert rc != 0, err[-2000:]
    assert "panicked at" not in err, err[-2000:]
    return err


def test_corrupt_producer_ids_file_is_refused(own_broker, tmp_path):
    b = own_broker
    first = _init_producer_id(b)
    _roundtrip(b.bootstrap)
    b.stop(signal.SIGTERM)
    path = b.data_dir / "meta" / "producer_ids"
    assert path.exists(), "meta/producer_ids was not written by InitProducerId"
    good = path.read_text()
    for bad in ("12x", "", "-5"):
        path.write_text(bad)
        err = _start_refused(b, tmp_path, f"producer_ids {bad!r}")
        assert "producer_ids" in err, f"the refusal must name meta/producer_ids:\n{err[-2000:]}"
    path.write_text(good)
    b.start()
    assert _init_producer_id(b) > first, "producer ids must not be handed out again after a restart"


@pytest.mark.parametrize("bad", ['{"id": "x"}', '{"cluster_id": ""}', "not json", ""],
                         ids=["no-cluster-id", "empty-cluster-id", "not-json", "empty-file"])
def test_corrupt_cluster_json_is_refused(own_broker, tmp_path, bad):
    b = own_broker
    cluster = _cluster_id(b)
    assert cluster
    b.stop(signal.SIGTERM)
    path = b.data_dir / "meta" / "cluster.json"
    good = path.read_text()
    path.write_text(bad)
    err = _start_refused(b, tmp_path, "cluster.json")
    assert "cluster.json" in err, f"the refusal must name meta/cluster.json:\n{err[-2000:]}"
    path.write_text(good)
    b.start()
    assert _cluster_id(b) == cluster, "the cluster id must survive restarts"


# ---------------------------------------------------------------- 10. recovery of closed segments

def _watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    c = h.consumer(bootstrap)
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=T, cached=False)
                for p in range(partitions)}
    finally:
        c.close()


def _fill_small_segments(b, topic: str, per_partition: int = 400) -> list[h.Acked]:
    """2 partitions, 64 KiB segments, ~8 KiB batches of ~400-byte records: 3 segments each."""
    h.create_topic(b.bootstrap, topic, partitions=2, config={"internal.segment.bytes": "65536"})
    p = h.producer(b.bootstrap, acks="all", linger_ms=5, batch_size=8192)
    now = int(time.time() * 1000)
    recs = [h.Rec(b"k%d" % i, (b"%06d|" % i) * 60 + bytes([i % 256]) * (i % 50), [("n", b"%d" % i)],
                  now - 10_000 + i, i % 2) for i in range(2 * per_partition)]
    log = h.produce_all(p, topic, recs)
    assert not log.errors and len(log.acked) == 2 * per_partition
    return log.acked


def _read(bootstrap: str, topic: str, ends: dict[int, int]) -> dict:
    return h.consume_partitions(bootstrap, topic, ends, check_crcs=True)


def test_damaged_closed_segment_is_recovered(own_broker, topic_name, monkeypatch):
    b = own_broker
    topic = topic_name()
    acked = _fill_small_segments(b, topic)
    b.stop(signal.SIGKILL)
    pdir = b.data_dir / f"{topic}-0"
    segments = wx.partition_segments(pdir)
    assert len(segments) >= 3, f"the scenario needs several segments: {segments}"
    first = segments[0]
    data = bytearray(first.read_bytes())
    batches = wx.parse_batches(bytes(data), allow_partial_tail=False)
    assert len(batches) >= 4 and all(x.crc_ok for x in batches)
    bad = batches[len(batches) // 2]
    pos = bad.position + 61 + (bad.size - 61) // 2  # inside the records, past the batch header
    data[pos] ^= 0x40
    first.write_bytes(bytes(data))

    monkeypatch.setenv("RUST_LOG", "info,frieda::broker=debug")
    before = len(b.stderr_text())
    b.start()
    log = b.stderr_text()[before:]
    torn = [ln for ln in log.splitlines() if "truncating torn tail" in ln]
    assert torn and str(first) in torn[0], f"no torn-tail truncation of {first.name}:\n{log[-3000:]}"
    m = re.search(r"truncated_bytes=(\d+)", torn[0])
    assert m and int(m.group(1)) == len(data) - bad.position, torn[0]
    deleted = [ln for ln in log.splitlines() if "deleting a segment that follows an invalid batch" in ln]
    assert len(deleted) == len(segments) - 1, f"later segments must be deleted:\n{log[-3000:]}"
    assert wx.partition_segments(pdir) == [first] and first.stat().st_size == bad.position

    ends = {p: sum(1 for a in acked if a.partition == p) for p in (0, 1)}
    assert _watermarks(b.bootstrap, topic, 2) == {0: (0, bad.base_offset), 1: (0, ends[1])}
    got = _read(b.bootstrap, topic, {0: bad.base_offset, 1: ends[1]})
    below = [a for a in acked if a.partition == 1 or a.offset < bad.base_offset]
    h.check_acked(below, got, topic)
    assert not [k for k in got if k[0] == 0 and k[1] >= bad.base_offset]

    now = int(time.time() * 1000)
    more = h.produce_all(h.producer(b.bootstrap, acks="all"), topic,
                         [h.Rec(b"new", b"after recovery %d" % i, None, now + i, 0) for i in range(5)])
    assert not more.errors and sorted(a.offset for a in more.acked) == list(range(bad.base_offset,
                                                                                  bad.base_offset + 5))
    got = _read(b.bootstrap, topic, {0: bad.base_offset + 5})
    h.check_acked(more.acked + [a for a in below if a.partition == 0], got, topic)


def _checkpoint(path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    assert lines[0] == "0", f"checkpoint version line {lines[0]!r}"
    entries = {}
    for ln in lines[2:]:
        t, p, off = ln.split(" ")
        entries[(t, int(p))] = int(off)
    assert int(lines[1]) == len(lines) - 2 == len(entries), lines
    return entries


def test_clean_restart_checkpoints_recovery_points(own_broker, topic_name, monkeypatch):
    b = own_broker
    topic = topic_name()
    acked = _fill_small_segments(b, topic, per_partition=300)
    wm = _watermarks(b.bootstrap, topic, 2)
    b.stop(signal.SIGTERM)
    cp = b.data_dir / "recovery-point-offset-checkpoint"
    assert cp.exists(), "a clean stop must write recovery-point-offset-checkpoint"
    points = _checkpoint(cp)
    assert {k: v for k, v in points.items() if k[0] == topic} == {(topic, p): wm[p][1] for p in (0, 1)}, points

    def validated(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if "validated segments above the recovery point" in ln
                and topic in ln]

    monkeypatch.setenv("RUST_LOG", "info,frieda::broker=debug")
    before = len(b.stderr_text())
    b.start()
    assert validated(b.stderr_text()[before:]) == [], "after a clean stop nothing needs validating"
    assert "truncat" not in b.stderr_text()[before:]
    got = _read(b.bootstrap, topic, {p: wm[p][1] for p in (0, 1)})
    h.check_acked(acked, got, topic)

    # positive control: records appended after the checkpoint, then SIGKILL: those are validated
    now = int(time.time() * 1000)
    more = h.produce_all(h.producer(b.bootstrap, acks="all"), topic,
                         [h.Rec(b"k", b"more %d" % i, None, now + i, i % 2) for i in range(10)])
    assert not more.errors
    b.stop(signal.SIGKILL)
    before = len(b.stderr_text())
    b.start()
    assert validated(b.stderr_text()[before:]), \
        f"after SIGKILL the segments above the recovery point are validated:\n{b.stderr_tail(20)}"
    wm2 = _watermarks(b.bootstrap, topic, 2)
    assert {p: wm2[p][1] for p in (0, 1)} == {p: wm[p][1] + 5 for p in (0, 1)}
