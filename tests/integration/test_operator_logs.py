"""Logs an operator can work with (issue 29, "Logs an operator can alert on").

- Log levels change at run time with Kafka's own tool: ``kafka-configs --entity-type
  broker-loggers`` describes every logger with its level (DescribeConfigs on BROKER_LOGGER) and
  sets or removes one (IncrementalAlterConfigs, KIP-412); a debug line of that logger appears
  only after the change and stops after the removal. Unknown loggers and levels, the root
  logger's removal and another broker's id are refused with Kafka's messages.
- ``RUST_LOG`` adds to the default levels rather than replacing them.
- ``log.format = "json"`` writes one JSON object per line; ``log.file`` writes to a file that
  ``tracing-appender`` rotates.

All start their own brokers (skipped with FRIEDA_EXTERNAL_BOOTSTRAP).
"""

from __future__ import annotations

import io
import json
import struct
import socket
import subprocess
import time

import pytest

import helpers as h
import kafka_wire as w
from conftest import EXTERNAL, free_port, frieda_bin
from frieda_proc import FriedaProc
from security_env import KAFKA_LIB, config_command, ensure_kafka_lib

pytestmark = pytest.mark.skipif(bool(EXTERNAL), reason="these tests start their own brokers "
                                                        "(FRIEDA_EXTERNAL_BOOTSTRAP is set)")
T = 30


def kafka_configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    ensure_kafka_lib()
    return subprocess.run(["java", "-Xmx256m", "-cp", f"{KAFKA_LIB}/*", config_command(),
                           "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=180)


def _levels(out: str) -> dict[str, str]:
    """`kafka-configs --describe` lines `  name=VALUE sensitive=false synonyms={}` as a dict."""
    levels = {}
    for line in out.splitlines():
        line = line.strip()
        if "=" in line and " sensitive=" in line:
            name, _, rest = line.partition("=")
            levels[name] = rest.split(" ")[0]
    return levels


def _debug_lines(proc: FriedaProc) -> int:
    """frieda::server's debug lines so far (one per connection closed by its client)."""
    return sum(1 for line in proc.text().splitlines() if "DEBUG frieda::server" in line)


def _connect_and_close(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    time.sleep(0.3)


def test_kafka_configs_broker_loggers_change_levels_at_run_time(tmp_path):
    port = free_port()
    proc = FriedaProc(tmp_path / "run")
    proc.start(["--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data")], "127.0.0.1", port,
               env={"RUST_LOG": ""})
    boot = f"127.0.0.1:{port}"
    try:
        r = kafka_configs(boot, "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        assert r.returncode == 0, r.stdout + r.stderr
        levels = _levels(r.stdout)
        assert levels.get("root") == "INFO", r.stdout
        assert levels.get("kafka.authorizer.logger") == "INFO", r.stdout
        assert levels.get("openraft.engine") == "OFF", r.stdout   # a default, not a replacement
        assert levels.get("frieda.cluster") == "INFO", r.stdout

        _connect_and_close(port)
        assert _debug_lines(proc) == 0

        r = kafka_configs(boot, "--alter", "--entity-type", "broker-loggers", "--entity-name", "1",
                          "--add-config", "frieda.server=DEBUG,frieda.cluster.isr=TRACE")
        assert r.returncode == 0, r.stdout + r.stderr
        r = kafka_configs(boot, "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        levels = _levels(r.stdout)
        assert levels.get("frieda.server") == "DEBUG" and levels.get("frieda.cluster.isr") == "TRACE", r.stdout
        _connect_and_close(port)
        h.wait_until("a debug line after the change", lambda: _debug_lines(proc) > 0, 10)

        r = kafka_configs(boot, "--alter", "--entity-type", "broker-loggers", "--entity-name", "1",
                          "--delete-config", "frieda.server,frieda.cluster.isr")
        assert r.returncode == 0, r.stdout + r.stderr
        time.sleep(0.5)
        before = _debug_lines(proc)
        _connect_and_close(port)
        assert _debug_lines(proc) == before, "debug lines after the removal"
        r = kafka_configs(boot, "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        assert _levels(r.stdout).get("frieda.server") == "INFO", r.stdout

        # Refusals, with Kafka's messages: IncrementalAlterConfigs v0 on the wire (confluent-kafka
        # has no BROKER_LOGGER resource, and kafka-configs refuses unknown loggers itself)
        def alter(name: str, ops: list[tuple[str, str | None]]) -> str:
            configs = [w.string(k) + w.i8(0 if v is not None else 1) + w.string(v) for k, v in ops]
            body = (w.i32(1) + w.i8(8) + w.string(name) + w.i32(len(configs)) + b"".join(configs)
                    + w.i8(0))
            with w.connect("127.0.0.1", port) as s:
                payload = w.request(s, w.frame(w.header_v1(44, 0, 7) + body))
            r = io.BytesIO(payload[4:])
            _throttle, n = struct.unpack(">ii", r.read(8))
            assert n == 1
            code, mlen = struct.unpack(">hh", r.read(4))
            msg = r.read(mlen).decode() if mlen >= 0 else ""
            return "ok" if code == 0 else f"{code}: {msg}"
        INVALID_CONFIG, INVALID_REQUEST = 40, 42
        assert alter("1", [("no.such.logger", "DEBUG")]) == f"{INVALID_CONFIG}: Logger no.such.logger does not exist!"
        assert alter("1", [("frieda", "LOUD")]).startswith(f"{INVALID_CONFIG}: Cannot set the log level"), \
            alter("1", [("frieda", "LOUD")])
        assert alter("1", [("root", None)]) == \
            f"{INVALID_REQUEST}: Removing the log level of the root logger is not allowed"
        assert alter("2", [("frieda", "DEBUG")]).startswith(f"{INVALID_REQUEST}: Unexpected broker id"), \
            alter("2", [("frieda", "DEBUG")])
        assert alter("1", [("root", "WARN")]) == "ok"
        r = kafka_configs(boot, "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        assert _levels(r.stdout).get("root") == "WARN", r.stdout
        assert "panicked" not in proc.text()
    finally:
        proc.kill()


def test_rust_log_adds_to_the_defaults(tmp_path):
    port = free_port()
    proc = FriedaProc(tmp_path / "run")
    proc.start(["--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data")], "127.0.0.1", port,
               env={"RUST_LOG": "frieda::handlers=debug"})
    try:
        r = kafka_configs(f"127.0.0.1:{port}", "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        levels = _levels(r.stdout)
        assert levels.get("frieda.handlers") == "DEBUG", r.stdout
        assert levels.get("root") == "INFO" and levels.get("openraft") == "WARN", r.stdout
    finally:
        proc.kill()


def test_json_lines_to_a_rotated_file(tmp_path):
    port = free_port()
    logdir = tmp_path / "logs"
    conf = tmp_path / "server.properties"
    conf.write_text(f"listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'data'}\n"
                    f"log.format=json\nlog.file={logdir / 'frieda.log'}\nlog.file.rotation=hourly\n")
    proc = FriedaProc(tmp_path / "run")
    proc.start(["--config", str(conf)], "127.0.0.1", port, env={"RUST_LOG": ""})
    try:
        files = sorted(logdir.glob("frieda.log*"))
        assert len(files) == 1 and files[0].name.startswith("frieda.log."), files  # hourly suffix
        lines = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
        assert any(d.get("fields", {}).get("message") == "frieda is listening" for d in lines), lines[-5:]
        assert all({"timestamp", "level", "target"} <= d.keys() for d in lines), lines[:2]
        assert "frieda is listening" not in proc.text(), "lines go to the file, not stderr"
    finally:
        proc.kill()
