"""scripts/cluster as an operator uses it (issue 29): ports by option, readiness checked against
each node's own PID, `status` / `stop i` / `start i` / `restart i`, a node restarted by hand found
again, and `up` failing (with the node's log, and no node left running) when a node cannot start.
Every process is found and stopped by PID."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

from conftest import free_block

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "cluster"
BIN = os.environ.get("FRIEDA_BIN", str(REPO_ROOT / "target" / "release" / "frieda"))


def free_base(nodes: int) -> int:
    """A base port P with P+100*i and P+1+100*i free for i in 1..nodes, from this pytest-xdist
    worker's ports (ports.free_block: below the kernel's ephemeral range, so no outgoing
    connection takes one before the node binds it, and never the other worker's: stop 91's
    check had this test hold a port the other worker's SeaweedFS was about to bind)."""
    return free_block([o for i in range(1, nodes + 1) for o in (100 * i, 100 * i + 1)])


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, FRIEDA_BIN=BIN))


def status(d: Path) -> dict[int, str]:
    r = run("status", str(d))
    assert r.returncode == 0, r.stderr
    return {int(m[1]): m[2] for m in re.finditer(r"node-(\d+) (.*)", r.stdout)}


def pid_of(d: Path, i: int) -> int:
    return int((d / f"node-{i}.pid").read_text())


def alive(pid: int) -> bool:
    """Runs (a zombie, exited but not yet reaped by its parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_ports_by_option_status_restart_and_a_node_started_by_hand(tmp_path):
    d = tmp_path / "c"
    base = free_base(3)
    r = run("up", "3", str(d), "--base-port", str(base))
    pids = []
    by_hand = None
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip() == ",".join(f"127.0.0.1:{base + 100 * i}" for i in (1, 2, 3))
        pids = [pid_of(d, i) for i in (1, 2, 3)]
        st = status(d)
        for i in (1, 2, 3):
            assert st[i] == f"running (pid {pids[i - 1]}, listening on 127.0.0.1:{base + 100 * i})", st

        # stop / start / restart by node number
        assert run("stop", "2", str(d)).returncode == 0
        assert not alive(pids[1]) and status(d)[2] == "stopped"
        r = run("start", "2", str(d))
        assert r.returncode == 0, r.stderr
        assert status(d)[2].startswith(f"running (pid {pid_of(d, 2)}, listening")
        old = pid_of(d, 3)
        r = run("restart", "3", str(d))
        assert r.returncode == 0, r.stderr
        assert not alive(old) and pid_of(d, 3) != old
        assert run("start", "3", str(d)).returncode != 0  # already running

        # a node killed and started by hand, as the README says: found by its command line
        os.kill(pid_of(d, 1), 9)
        time.sleep(0.3)
        assert status(d)[1] == "stopped"
        with open(d / "node-1.log", "ab") as log:
            by_hand = subprocess.Popen([BIN, "serve", "--config", str(d / "node-1.toml")],
                                       stdout=log, stderr=log, start_new_session=True)
        pids.append(by_hand.pid)
        deadline = time.monotonic() + 30
        while not status(d)[1].startswith(f"running (pid {by_hand.pid}, listening"):
            assert time.monotonic() < deadline, status(d)
            time.sleep(0.2)
        pids += [pid_of(d, i) for i in (2, 3)]
    finally:
        r = run("down", str(d))
        if by_hand is not None:
            by_hand.wait(30)
        assert r.returncode == 0, r.stderr
    assert not any(alive(p) for p in pids), "scripts/cluster down left a node running"
    assert all(s == "stopped" for s in status(d).values())


def test_up_fails_when_a_node_cannot_start(tmp_path):
    d = tmp_path / "c"
    base = free_base(2)
    with socket.socket() as taken:  # node 2's client port is in use
        taken.bind(("127.0.0.1", base + 200))
        taken.listen()
        r = run("up", "2", str(d), "--base-port", str(base))
    assert r.returncode != 0, r.stdout
    assert "node 2" in r.stderr and "exited during start" in r.stderr, r.stderr
    assert "Address already in use" in r.stderr, r.stderr  # the tail of its log
    assert all(s == "stopped" for s in status(d).values()), status(d)
