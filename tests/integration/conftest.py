"""Fixtures for Frieda's integration tests.

By default every test that asks for ``broker`` gets its own Frieda process:
``$FRIEDA_BIN serve --listen 127.0.0.1:<free port> --data-dir <fresh tmp dir>``,
stderr captured to ``<tmp>/frieda.stderr`` (its tail is printed when a test fails).

With ``FRIEDA_EXTERNAL_BOOTSTRAP=host:port`` the tests run against that broker
instead (e.g. Apache Kafka, to validate the tests themselves). Tests that need
to stop, restart or kill the broker, or look into its data dir, are skipped in
that mode, and only in that mode.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from ports import free_port  # noqa: F401 (the tests import it from here)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = os.environ.get("FRIEDA_EXTERNAL_BOOTSTRAP", "").strip()
START_TIMEOUT_S = float(os.environ.get("FRIEDA_START_TIMEOUT", "15"))
# the interface promises exit 0 within 5 s of SIGTERM (raise only to validate the tests with a slower broker)
STOP_TIMEOUT_S = float(os.environ.get("FRIEDA_STOP_TIMEOUT", "5"))


def frieda_bin() -> Path:
    return Path(os.environ.get("FRIEDA_BIN", REPO_ROOT / "target" / "release" / "frieda"))


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class BrokerError(AssertionError):
    pass


class Broker:
    """A broker under test. ``external`` brokers cannot be stopped or restarted."""

    def __init__(self, tmp_path: Path, external: str = "", config: str | None = None):
        self.external = bool(external)
        self.tmp_path = tmp_path
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        if external:
            host, _, port = external.rpartition(":")
            self.host, self.port = host, int(port)
            self.data_dir = None
            self.stderr_path = None
            self.config_path = None
            return
        self.host, self.port = "127.0.0.1", free_port()
        self.data_dir = tmp_path / "data"
        self.data_dir.mkdir()
        self.stderr_path = tmp_path / "frieda.stderr"
        self.config_path = None
        if config is not None:
            self.config_path = tmp_path / "frieda.toml"
            self.config_path.write_text(config)
        self.start()

    # ---- addresses -------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    # ---- lifecycle -------------------------------------------------------
    def _require_own(self, what: str) -> None:
        if self.external:
            pytest.skip(f"{what} needs a broker started by the test (FRIEDA_EXTERNAL_BOOTSTRAP is set)")

    def start(self) -> None:
        self._require_own("start")
        assert self.proc is None or self.proc.poll() is not None, "broker already running"
        binary = frieda_bin()
        if not binary.exists():
            raise BrokerError(
                f"broker binary {binary} not found: run `cargo build --release` or set FRIEDA_BIN "
                "(or FRIEDA_EXTERNAL_BOOTSTRAP to test an external broker)"
            )
        cmd = [str(binary), "serve", "--listen", self.bootstrap, "--data-dir", str(self.data_dir)]
        if self.config_path is not None:
            cmd += ["--config", str(self.config_path)]
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        env.setdefault("RUST_BACKTRACE", "1")
        self.starts += 1
        with open(self.stderr_path, "ab") as err:
            err.write(f"\n===== start #{self.starts}: {' '.join(cmd)}\n".encode())
            err.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise BrokerError(f"broker exited with {rc} during start-up\n{self.stderr_tail()}")
            if port_open(self.host, self.port, timeout=0.2):
                return
            time.sleep(0.05)
        self.kill_hard()
        raise BrokerError(f"broker did not listen on {self.bootstrap} within {START_TIMEOUT_S}s\n{self.stderr_tail()}")

    def alive(self) -> bool:
        if self.external:
            return port_open(self.host, self.port)
        return self.proc is not None and self.proc.poll() is None

    def assert_alive(self) -> None:
        if self.external:
            assert port_open(self.host, self.port), f"external broker {self.bootstrap} no longer accepts connections"
            return
        rc = self.proc.poll() if self.proc else "never started"
        assert rc is None, f"broker process is gone (exit status {rc})\n{self.stderr_tail()}"

    def send_signal(self, sig: int) -> None:
        self._require_own("signalling the broker")
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int:
        """Send ``sig``; for SIGTERM/SIGINT assert exit status 0 within ``timeout``."""
        self._require_own("stopping the broker")
        assert self.proc is not None and self.proc.poll() is None, "broker is not running"
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout if sig != signal.SIGKILL else 10)
        except subprocess.TimeoutExpired:
            self.kill_hard()
            raise BrokerError(
                f"broker did not exit within {timeout}s of signal {sig}\n{self.stderr_tail()}"
            ) from None
        took = time.monotonic() - t0
        if sig in (signal.SIGTERM, signal.SIGINT):
            assert rc == 0, f"broker exited with status {rc} after signal {sig} (want 0)\n{self.stderr_tail()}"
        elif sig == signal.SIGKILL:
            assert rc == -signal.SIGKILL, rc
        self.last_stop_seconds = took
        return rc

    def restart(self, sig: int = signal.SIGTERM) -> None:
        """Stop with ``sig`` (SIGTERM: asserting a clean exit) and start again on the same port and data dir."""
        self._require_own("restarting the broker")
        self.stop(sig)
        self.start()

    def kill_hard(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    # ---- diagnostics -----------------------------------------------------
    def stderr_tail(self, lines: int = 60) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return "(no broker stderr: external broker)"
        text = self.stderr_path.read_bytes().decode("utf-8", "replace").splitlines()
        return "----- broker stderr (last %d lines of %s) -----\n%s" % (
            min(lines, len(text)), self.stderr_path, "\n".join(text[-lines:]))

    def stderr_text(self) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_bytes().decode("utf-8", "replace")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def _make_broker(request, tmp_path, config=None):
    b = Broker(tmp_path, EXTERNAL, config=config)
    yield b
    failed = any(getattr(request.node, "rep_" + w, None) is not None and getattr(request.node, "rep_" + w).failed
                 for w in ("setup", "call"))
    if b.external:
        return
    try:
        if b.proc is not None and b.proc.poll() is None:
            if failed:
                b.kill_hard()
            else:
                # Every test ends with a clean shutdown check: SIGTERM -> exit 0 within 5 s.
                b.stop(signal.SIGTERM)
        elif not failed and b.proc is not None:
            # The test left the broker stopped on purpose (e.g. after stop()), nothing to check.
            pass
    finally:
        if failed:
            print(b.stderr_tail())
        b.kill_hard()
        text = b.stderr_text()
        if not failed and "panicked at" in text:
            print(b.stderr_tail(200))
            pytest.fail("broker stderr contains a panic")


@pytest.fixture
def broker(request, tmp_path):
    """A running broker: a fresh Frieda per test, or the external one."""
    yield from _make_broker(request, tmp_path)


@pytest.fixture
def own_broker(request, tmp_path):
    """A Frieda started by the test (skips when FRIEDA_EXTERNAL_BOOTSTRAP is set)."""
    if EXTERNAL:
        pytest.skip("needs a broker started by the test (restart/kill/data dir); FRIEDA_EXTERNAL_BOOTSTRAP is set")
    yield from _make_broker(request, tmp_path)


@pytest.fixture
def make_own_broker(request, tmp_path):
    """Factory for a Frieda started with a given TOML config (skips in external mode)."""
    if EXTERNAL:
        pytest.skip("needs a broker started by the test with a config file; FRIEDA_EXTERNAL_BOOTSTRAP is set")
    gens = []

    def make(config: str):
        g = _make_broker(request, tmp_path, config=config)
        gens.append(g)
        return next(g)

    yield make
    for g in gens:
        for _ in g:
            pass


@pytest.fixture
def topic_name(request):
    """Returns a function making unique topic names for this test."""
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name)[:80].strip("-")

    def make(suffix: str = "") -> str:
        return f"it-{base}{'-' + suffix if suffix else ''}-{uuid.uuid4().hex[:8]}"

    return make
