"""Network partitions for cluster tests: each broker in its own network namespace.

``Net(n)`` creates ``n`` namespaces ``fr<tag>n<i>`` whose ``eth0`` (address ``10.<a>.<b>.<i>/24``)
is one end of a veth pair; the other ends hang on a bridge ``fr<tag>br`` in this (the test's)
namespace, which holds ``10.<a>.<b>.254``. So every broker reaches every other broker and the
test's clients reach every broker, all without leaving the machine.

A partition is made of **blackhole routes** inside the namespaces (iptables and nft are not
installed here, and `tc netem` does not exist; see MACHINE-NOTES.md): ``cut(i, j)`` adds a route
to ``j``'s address that discards everything in ``i``'s namespace, and the reverse in ``j``'s, so
neither reaches the other (established connections stop too: packets are dropped, a new
``connect`` fails at once with EINVAL on the sending side and times out on the other). The
clients' link to every broker is left alone: as in Jepsen's partitions between servers, clients
may still reach a minority. ``heal()`` removes every blackhole route. ``close()`` deletes the
namespaces (with them the veth ends) and the bridge; it is safe to call twice.

Needs root (``ip netns add``); the subnet is picked from the test process's pid so parallel runs
do not collide.
"""

from __future__ import annotations

import os
import subprocess
import uuid


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=20)


class Net:
    def __init__(self, n: int):
        self.n = n
        self.tag = uuid.uuid4().hex[:5]
        pid = os.getpid()
        self.subnet = f"10.{200 + (pid >> 8) % 50}.{pid % 256}"  # 10.200-249.x.0/24
        self.bridge = f"fr{self.tag}br"
        self.ns = {i: f"fr{self.tag}n{i}" for i in range(1, n + 1)}
        self.cuts: set[tuple[int, int]] = set()
        self._made: list[str] = []
        self._bridge_made = False
        try:
            self._setup()
        except Exception:
            self.close()
            raise

    def host(self, i: int) -> str:
        """Node ``i``'s address (on its namespace's eth0)."""
        return f"{self.subnet}.{i}"

    @property
    def hosts(self) -> dict[int, str]:
        return {i: self.host(i) for i in self.ns}

    def _setup(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self._bridge_made = True
        _ip("addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, ns in self.ns.items():
            _ip("netns", "add", ns)
            self._made.append(ns)
            veth = f"fr{self.tag}v{i}"
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", self.bridge)
            _ip("link", "set", veth, "up")
            _ip("-n", ns, "addr", "add", f"{self.host(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    # ---- faults -------------------------------------------------------------
    def cut(self, i: int, j: int) -> None:
        """No packet between nodes ``i`` and ``j``, either way."""
        for a, b in ((i, j), (j, i)):
            if (a, b) not in self.cuts:
                _ip("-n", self.ns[a], "route", "add", "blackhole", f"{self.host(b)}/32")
                self.cuts.add((a, b))

    def isolate(self, i: int) -> None:
        """Node ``i`` reaches no other node (the clients still reach it)."""
        for j in self.ns:
            if j != i:
                self.cut(i, j)

    def partition(self, *groups: set[int]) -> None:
        """Nodes in different groups cannot reach each other."""
        for gi, a in enumerate(groups):
            for b in groups[gi + 1:]:
                for i in a:
                    for j in b:
                        self.cut(i, j)

    def heal(self) -> None:
        for a, b in sorted(self.cuts):
            _ip("-n", self.ns[a], "route", "del", "blackhole", f"{self.host(b)}/32", check=False)
        self.cuts.clear()

    def close(self) -> None:
        for ns in self._made:
            _ip("netns", "del", ns, check=False)
        self._made.clear()
        if self._bridge_made:
            _ip("link", "del", self.bridge, check=False)
            self._bridge_made = False
