"""A Frieda process started with exactly the command line a test gives (no --listen/--data-dir
added), for the start-up tests (listeners, refused settings, the data dir lock) and for brokers
whose data dir is a syncfs mount. Stopped by its PID only."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import START_TIMEOUT_S, STOP_TIMEOUT_S, frieda_bin


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class FriedaProc:
    def __init__(self, workdir: Path, name: str = "frieda"):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.workdir / f"{name}.stderr"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def spawn(self, args: list[str], env: dict | None = None) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        cmd = [str(frieda_bin()), "serve", *args]
        e = dict(os.environ)
        e.setdefault("RUST_LOG", "info")
        e.setdefault("RUST_BACKTRACE", "1")
        e.update(env or {})
        self.starts += 1
        with open(self.stderr_path, "ab") as err:
            err.write(f"\n===== start #{self.starts}: {' '.join(cmd)}\n".encode())
            err.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=e)

    def start(self, args: list[str], host: str, port: int, env: dict | None = None,
              timeout: float = START_TIMEOUT_S) -> None:
        """Spawns and waits until ``host:port`` accepts connections (fails if the process exits)."""
        self.spawn(args, env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise AssertionError(f"broker exited with {rc} during start-up\n{self.tail()}")
            if port_open(host, port):
                return
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"broker did not listen on {host}:{port} within {timeout}s\n{self.tail()}")

    def run_to_exit(self, args: list[str], timeout: float = 10, env: dict | None = None) -> tuple[int | None, str]:
        """Spawns and waits for the process to exit by itself: (exit status, the stderr of this
        run). A process still running after ``timeout`` is killed and reported as None."""
        before = self.text()
        self.spawn(args, env)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = None
        return rc, self.text()[len(before):]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int:
        assert self.alive(), f"broker is not running\n{self.tail()}"
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout if sig != signal.SIGKILL else 10)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"broker did not exit within {timeout}s of signal {sig}\n{self.tail()}") from None
        if sig == signal.SIGTERM:
            assert rc == 0, f"broker exited with {rc} after SIGTERM (want 0)\n{self.tail()}"
        return rc

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def text(self) -> str:
        try:
            return self.stderr_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""

    def tail(self, n: int = 40) -> str:
        lines = self.text().splitlines()
        return f"----- {self.stderr_path} (last {min(n, len(lines))} lines) -----\n" + "\n".join(lines[-n:])
