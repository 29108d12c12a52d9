"""The README's cluster quickstart, run as written (only the cluster directory is this test's):
`scripts/cluster up 3` forms a cluster that kcat sees with 3 brokers; records produced with kcat
to an auto-created topic (replication factor 3 from the script's config) survive `kill -9` of a
node, the README's second block, and are read back identical through another node; `scripts/cluster
down` stops every node by PID.

The script uses fixed loopback ports (19192-19393); the test fails clearly if they are taken."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"


def blocks_after(marker: str) -> list[str]:
    """The fenced bash blocks of the README section that starts at `<!-- marker ... -->`, up to the
    next heading."""
    text = README.read_text()
    start = text.index(f"<!-- {marker}")
    end = text.index("\n## ", start)
    return re.findall(r"```bash\n(.*?)\n```", text[start:end], re.S)


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("FRIEDA_BIN", str(REPO_ROOT / "target" / "release" / "frieda"))
    return subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT, env=env)


def pids(d: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(d.glob("node-*.pid"))]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_readme_cluster_quickstart(tmp_path):
    for port in (19192, 19193, 19292, 19293, 19392, 19393):
        assert not port_taken(port), f"port {port} is taken: scripts/cluster needs 19192-19393 free"
    d = tmp_path / "frieda-cluster"
    up, down = [b.replace("/tmp/frieda-cluster", str(d)) for b in blocks_after("quickstart-cluster")[:2]]
    started: list[int] = []
    try:
        p = run(up)
        started = pids(d)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "127.0.0.1:19192,127.0.0.1:19292,127.0.0.1:19392" in p.stdout, p.stdout
        # kcat -L lists every broker once the cluster formed (the block runs it at once; the
        # brokers register within a heartbeat or two, so look again if needed)
        deadline = time.monotonic() + 20
        while "3 brokers:" not in p.stdout and time.monotonic() < deadline:
            time.sleep(0.5)
            p = run("kcat -b 127.0.0.1:19192 -L")
        assert "3 brokers:" in p.stdout, p.stdout + p.stderr
        assert len(started) == 3 and all(alive(x) for x in started)

        lines = [f"line {i} " + "x" * (i % 37) for i in range(200)]
        first, second = "\n".join(lines[:100]) + "\n", "\n".join(lines[100:]) + "\n"
        prod = run(f"kcat -b 127.0.0.1:19192 -P -t readme-cluster -X acks=all -X message.timeout.ms=60000 <<'EOF'\n{first}EOF")
        assert prod.returncode == 0, prod.stderr
        # every replica in sync before the kill (the topic was auto-created with RF 3)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            md = run("kcat -b 127.0.0.1:19292 -L -t readme-cluster").stdout
            if re.search(r"replicas: \d+,\d+,\d+, isrs: \d+,\d+,\d+", md):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"readme-cluster never had 3 in-sync replicas:\n{md}")

        kill = down.splitlines()[0]
        assert kill.startswith("kill -9"), down
        k = run(kill)
        assert k.returncode == 0, k.stderr
        prod = run(f"kcat -b 127.0.0.1:19292,127.0.0.1:19392 -P -t readme-cluster -X acks=all "
                   f"-X message.timeout.ms=60000 <<'EOF'\n{second}EOF", timeout=120)
        assert prod.returncode == 0, prod.stderr
        cons = run("kcat -b 127.0.0.1:19392 -C -t readme-cluster -o beginning -e -q", timeout=60)
        assert cons.returncode == 0, cons.stderr
        assert cons.stdout.splitlines() == lines

        stop = run("\n".join(down.splitlines()[1:]), timeout=60)
        assert stop.returncode == 0, stop.stderr
        deadline = time.monotonic() + 30
        while any(alive(x) for x in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(x) for x in started), "scripts/cluster down left a node running"
        for log in d.glob("node-*.log"):
            assert "panicked" not in log.read_text(errors="replace"), log
    finally:
        for pid in started:
            if alive(pid):
                os.kill(pid, 9)
