"""One broker for a bench harness, started and stopped by PID: Apache Kafka 4.4.0 from
bench/kafka (run-kafka.sh / stop-kafka.sh, KAFKA_VERSION) on KAFKA_PORT (19092), or Frieda
(FRIEDA_BIN, default target/release/frieda) on FRIEDA_PORT (19192), each on fresh data.
Used by observe_agreement.py, create_topic.py and stall_series.py."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "bench" / "kafka"
FRIEDA = Path(os.environ.get("FRIEDA_BIN", ROOT / "target" / "release" / "frieda"))
PORTS = {"frieda": int(os.environ.get("FRIEDA_PORT", "19192")), "kafka": int(os.environ.get("KAFKA_PORT", "19092"))}
KAFKA_PIDFILE = Path(os.environ.get("KAFKA_ANCHOR_DIR", "/tmp/kafka-anchor")) / "kafka.pid"


def wait_port(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"port {port} did not open")


class Broker:
    """`with Broker(kind, tmp) as b:` runs broker `kind` ("kafka" or "frieda") on 127.0.0.1:b.port
    with fresh data (Frieda's in tmp/frieda-data, removed again on exit; its log appended to
    tmp/frieda.log); `b.pid` is the broker's process id."""

    def __init__(self, kind: str, tmp: Path):
        self.kind, self.tmp, self.proc = kind, tmp, None
        self.port = PORTS[kind]
        self.data = tmp / "frieda-data"

    def __enter__(self):
        if self.kind == "kafka":
            subprocess.run([str(BASELINE / "run-kafka.sh")], env=dict(os.environ, FRESH="1"), check=True,
                           stdout=subprocess.DEVNULL)
        else:
            shutil.rmtree(self.data, ignore_errors=True)
            self.log = open(self.tmp / "frieda.log", "ab")
            self.proc = subprocess.Popen([str(FRIEDA), "serve", "--listen", f"127.0.0.1:{self.port}",
                                          "--data-dir", str(self.data)], stdout=self.log, stderr=self.log)
        wait_port(self.port)
        return self

    @property
    def pid(self) -> int:
        if self.proc is not None:
            return self.proc.pid
        return int(KAFKA_PIDFILE.read_text().split()[0])

    def __exit__(self, *exc):
        if self.kind == "kafka":
            subprocess.run([str(BASELINE / "stop-kafka.sh")], check=False, stdout=subprocess.DEVNULL)
        elif self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.data, ignore_errors=True)
