"""Configuration the way Kafka operators write it (issue 29, "Configuration").

- Kafka 4.4's shipped KRaft ``config/server.properties`` (``data/kafka-4.4-server.properties``)
  starts a broker as it is; ``--override key=value`` (as ``kafka-server-start.sh``) moves its
  ports and log dir so the test does not take 9092/9093. Its ``controller.quorum.bootstrap.servers``
  naming the node itself makes a one-voter quorum (Kafka's ``format --standalone``). Records go in
  and come back byte for byte; Metadata lists the client listener only.
- The Kafka settings that mean nothing to Frieda are named in one warning; keys that are neither
  Kafka's nor Frieda's are refused all at once, near misses with "did you mean"; a bad value names
  the key, the value and what was expected.
- ``frieda check`` prints the settings in force and creates no data directory.
- A start that fails (the port is taken) leaves no data directory behind.

All start their own brokers (skipped with FRIEDA_EXTERNAL_BOOTSTRAP).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

import helpers as h
from conftest import EXTERNAL, free_port, frieda_bin
from frieda_proc import FriedaProc

pytestmark = pytest.mark.skipif(bool(EXTERNAL), reason="these tests start their own brokers "
                                                        "(FRIEDA_EXTERNAL_BOOTSTRAP is set)")
SHIPPED = Path(__file__).parent / "data" / "kafka-4.4-server.properties"
T = 30


def _check(args: list[str], timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(frieda_bin()), "check", *args], capture_output=True, text=True,
                          timeout=timeout, env={"RUST_LOG": "info", "PATH": "/usr/bin:/bin"})


def _port_overrides(port: int, cport: int, data: Path) -> list[str]:
    return ["--override", f"listeners=PLAINTEXT://:{port},CONTROLLER://:{cport}",
            "--override", f"advertised.listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{cport}",
            "--override", f"controller.quorum.bootstrap.servers=localhost:{cport}",
            "--override", f"log.dirs={data}"]


def test_kafkas_shipped_server_properties_starts_a_broker(tmp_path):
    conf = tmp_path / "server.properties"
    shutil.copy(SHIPPED, conf)  # unchanged
    port, cport = free_port(), free_port()
    data = tmp_path / "kraft-combined-logs"
    proc = FriedaProc(tmp_path / "run")
    proc.start(["--config", str(conf), *_port_overrides(port, cport, data)], "127.0.0.1", port,
               timeout=60)
    try:
        bootstrap = f"localhost:{port}"
        topic = f"sp-{uuid.uuid4().hex[:8]}"
        h.create_topic(bootstrap, topic, partitions=2)
        now = int(time.time() * 1000)
        recs = [h.Rec(b"k%d" % i, b"value %d" % i, [("h", b"x")], now + i, i % 2) for i in range(20)]
        log = h.produce_all(h.producer(bootstrap, acks="all"), topic, recs)
        assert not log.errors and len(log.acked) == 20, log.errors
        h.check_acked(log.acked, h.consume_partitions(bootstrap, topic, {0: 10, 1: 10}), topic)
        md = h.admin(bootstrap).list_topics(timeout=T)
        assert sorted((b.id, b.host, b.port) for b in md.brokers.values()) == [(1, "localhost", port)]
        assert data.is_dir(), "log.dirs is the data directory"
        text = proc.text()
        warn = [line for line in text.splitlines() if "no meaning in Frieda" in line]
        assert len(warn) == 1, text[-3000:]
        for key in ("num.io.threads", "num.recovery.threads.per.data.dir",
                    "share.coordinator.state.topic.replication.factor"):
            assert key in warn[0], warn[0]
        # --override wins over the file: the file's ports are not taken
        assert f"PLAINTEXT://:{port}" in text or f":{port}" in text
        proc.stop(signal.SIGTERM)
        assert "panicked at" not in proc.text(), proc.tail()
        # and it starts again on what it wrote
        proc.start(["--config", str(conf), *_port_overrides(port, cport, data)], "127.0.0.1", port,
                   timeout=60)
        h.check_acked(log.acked, h.consume_partitions(bootstrap, topic, {0: 10, 1: 10}), topic)
        proc.stop(signal.SIGTERM)
    finally:
        proc.kill()


def test_check_prints_the_settings_in_force_and_creates_nothing(tmp_path):
    data = tmp_path / "never-created"
    r = _check(["--config", str(SHIPPED), *_port_overrides(free_port(), free_port(), data),
                "--override", "num.partitions=4"])
    assert r.returncode == 0, r.stderr[-3000:]
    lines = set(r.stdout.splitlines())
    assert "num.partitions=4" in lines, r.stdout[:3000]        # the override over the file's 1
    assert "log.segment.bytes=1073741824" in lines, r.stdout[:3000]
    assert "log.retention.ms=604800000" in lines, r.stdout[:3000]  # log.retention.hours=168
    assert "num.io.threads" in r.stderr  # named in the warning
    assert not data.exists(), "check must not create the data directory"


def test_unknown_keys_are_refused_together_with_suggestions(tmp_path):
    conf = tmp_path / "typos.properties"
    conf.write_text("num.partition=3\nlog.retention.hour=1\nno.such.setting.anywhere=1\n"
                    "num.io.threads=8\n")
    data = tmp_path / "d"
    r = _check(["--config", str(conf), "--override", f"log.dirs={data}"])
    assert r.returncode == 1, (r.stdout, r.stderr)
    err = r.stderr
    assert "`num.partition` (did you mean `num.partitions`?)" in err, err
    assert "`log.retention.hour` (did you mean `log.retention.hours`?)" in err, err
    assert "`no.such.setting.anywhere`" in err, err
    assert "`num.io.threads`" not in err.split("unknown setting")[-1], err  # Kafka's: not refused
    # serve refuses the same, and leaves nothing behind
    proc = FriedaProc(tmp_path / "run")
    rc, out = proc.run_to_exit(["--config", str(conf), "--override", f"log.dirs={data}"], timeout=20)
    assert rc not in (None, 0), out[-2000:]
    assert "did you mean `num.partitions`" in out, out[-2000:]
    assert not data.exists()


def test_a_bad_value_names_key_value_and_what_was_expected(tmp_path):
    conf = tmp_path / "bad.properties"
    conf.write_text("num.partitions=many\nauto.create.topics.enable=perhaps\n")
    r = _check(["--config", str(conf)])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "config key `num.partitions` = `many`: expected an integer" in r.stderr, r.stderr
    assert "config key `auto.create.topics.enable` = `perhaps`: expected true or false" in r.stderr, r.stderr


def test_replica_selector_class_takes_kafkas_rack_aware_selector_only(tmp_path):
    """KIP-392's `replica.selector.class`: Kafka's rack-aware selector is taken (and shown by
    `check`); any other class is refused at start-up, as Frieda runs no plugins."""
    good = tmp_path / "good.properties"
    good.write_text("broker.rack=r1\n"
                    "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector\n")
    r = _check(["--config", str(good)])
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "RackAware" in r.stdout + r.stderr, (r.stdout, r.stderr)
    bad = tmp_path / "bad.properties"
    bad.write_text("replica.selector.class=com.example.MySelector\n")
    r = _check(["--config", str(bad)])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "config key `replica.selector.class` = `com.example.MySelector`" in r.stderr, r.stderr
    assert "RackAwareReplicaSelector" in r.stderr, r.stderr


def test_bootstrap_servers_naming_other_controllers_join_their_quorum(tmp_path):
    """KIP-853: `controller.quorum.bootstrap.servers` naming other controllers (no static
    voters) is a node that joins their quorum as an observer (`kafka-storage format
    --no-initial-controllers`); tests/cluster/test_dynamic_quorum.py runs it. A controller-only
    node cannot join that way yet, and is refused naming process.roles."""
    cport = free_port()
    joining = ["--config", str(SHIPPED), *_port_overrides(free_port(), cport, tmp_path / "d"),
               "--override", f"controller.quorum.bootstrap.servers=localhost:{cport},otherhost:9093"]
    r = _check(joining)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert f"controller.quorum.bootstrap.servers=localhost:{cport},otherhost:9093" in r.stdout, r.stdout
    r = _check([*joining, "--override", "process.roles=controller"])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "process.roles" in r.stderr and "must also be a broker" in r.stderr, r.stderr


def test_a_failed_start_leaves_no_data_directory(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        data = tmp_path / "fresh"
        proc = FriedaProc(tmp_path / "run")
        rc, out = proc.run_to_exit(["--listen", f"127.0.0.1:{port}", "--data-dir", str(data)],
                                   timeout=20)
        assert rc not in (None, 0), out[-2000:]
        assert f"127.0.0.1:{port}" in out, out[-2000:]
        assert not data.exists(), f"a failed start left {data} behind: {list(data.rglob('*'))[:20]}"
        # an existing data directory is never removed
        data.mkdir()
        (data / "keep").write_text("x")
        rc, out = proc.run_to_exit(["--listen", f"127.0.0.1:{port}", "--data-dir", str(data)],
                                   timeout=20)
        assert rc not in (None, 0), out[-2000:]
        assert (data / "keep").read_text() == "x"
