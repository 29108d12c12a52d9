"""Kafka Connect and MirrorMaker 2 JVMs for the cluster tests (test_connect_distributed.py,
test_mirrormaker2.py): the classpath of tests/java/connect/pom.xml (connect-runtime, connect-file,
connect-mirror and kafka-clients, all 4.3.1: that pom says why not 4.4.0), a process per worker
with its log in a file, the Connect REST API through urllib.

Every process is signalled by its PID only; ``JvmProcess.stop`` (SIGTERM, then SIGKILL after a
bound) is safe to call on one that is already gone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import REPO_ROOT

CONNECT_POM = REPO_ROOT / "tests" / "java" / "connect" / "pom.xml"
CONNECT_VERSION = "4.3.1"


def connect_classpath(tmp_dir: Path) -> str:
    """The classpath of tests/java/connect/pom.xml: the file named by FRIEDA_CONNECT_CLASSPATH
    (scripts/test writes target/connect-classpath.txt), else resolved with mvn into ``tmp_dir``."""
    f = os.environ.get("FRIEDA_CONNECT_CLASSPATH") or str(REPO_ROOT / "target" / "connect-classpath.txt")
    if not Path(f).exists():
        assert shutil.which("mvn"), "mvn not found: run scripts/test (it installs Maven and a JDK)"
        f = str(tmp_dir / "connect-classpath.txt")
        subprocess.run(["mvn", "-B", "-q", "-f", str(CONNECT_POM), "dependency:build-classpath",
                        f"-Dmdep.outputFile={f}"], check=True, timeout=600)
    cp = Path(f).read_text().strip()
    for jar in ("connect-runtime", "connect-file", "connect-mirror", "kafka-clients"):
        name = f"{jar}-{CONNECT_VERSION}.jar"
        assert name in cp, f"{name} not on the classpath of {CONNECT_POM}: {cp[:300]}"
    return cp


class JvmProcess:
    """One JVM (a Connect worker, a MirrorMaker), its stdout and stderr in ``log_path``."""

    def __init__(self, name: str, cp: str, main: str, args: list[str], log_path: Path, heap: str = "384m"):
        self.name = name
        self.log_path = log_path
        self.cp = cp
        self.cmd = ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
                    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common=warn",
                    "-Dorg.slf4j.simpleLogger.log.org.reflections=warn",
                    "-Dorg.slf4j.simpleLogger.log.org.eclipse.jetty=warn",
                    "-cp", cp, main, *args]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            shown = [a if a != self.cp else "<classpath>" for a in self.cmd]
            log.write(f"===== {' '.join(shown)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID; waits for the exit."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM by PID (a graceful stop), SIGKILL after ``timeout`` s; the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        return self.proc.returncode

    def text(self) -> str:
        try:
            return self.log_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""

    def tail(self, n: int = 60) -> str:
        lines = self.text().splitlines()
        errors = [line for line in lines if " ERROR " in line or " WARN " in line]
        return (f"----- {self.name}: first WARN/ERROR lines of {self.log_path} -----\n"
                + "\n".join(e[:400] for e in errors[:25])
                + f"\n----- {self.name}: last {min(n, len(lines))} lines -----\n" + "\n".join(lines[-n:]))


def rest(method: str, url: str, body: dict | None = None, timeout: float = 15) -> tuple[int, object]:
    """One REST call: (HTTP status, parsed JSON or text); a refused connection is (0, reason)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def wait_for(pred, timeout: float, what: str, interval: float = 0.5, procs: list[JvmProcess] = ()):
    """Calls ``pred`` until it returns something truthy (returned); fails after ``timeout`` s, or
    at once when one of ``procs`` has exited, naming ``what`` and the last value. An exception
    from ``pred`` counts as "not yet", but an AssertionError fails at once."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        for p in procs:
            assert p.alive(), f"{p.name} exited with {p.proc.returncode} while waiting for {what}\n{p.tail()}"
        try:
            v = pred()
            if v:
                return v
            last = v
        except AssertionError:
            raise  # a check in ``pred`` that failed: not a "not yet"
        except Exception as e:  # noqa: BLE001 - e.g. a worker that is still starting
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def write_properties(path: Path, props: dict) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path
