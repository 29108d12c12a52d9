"""Free loopback ports for the brokers the tests start (tests/integration, tests/cluster and
tests/crash share this module).

Ports come from below the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``):
a port in that range can be handed out as the source port of some outgoing connection between
the check here and the broker's bind (a node binds its client port only after it joined the
quorum, while its peers already connect to each other; a broker restarted on the same port is
down for a moment), and the broker then fails with "Address already in use" (stop 75's CI).

Each pytest-xdist worker draws from its own slice of that range, and a process never hands out a
port twice (until its slice runs out): a port of a node that a test has stopped is bindable
again, and when the other worker took it for a cluster of its own, the node could not restart
and the two clusters' quorums talked to each other (stop 90's CI: test_quorum_acks and
test_quorum_logs failed together)."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

LOWEST = 20000


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 if it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# every port this process handed out (never handed out again while others are left)
_HANDED_OUT: set[int] = set()


def worker_slice() -> tuple[int, int]:
    """The ports ``[low, high)`` of this pytest-xdist worker: the range between ``LOWEST`` and
    the ephemeral range cut into ``PYTEST_XDIST_WORKER_COUNT`` slices, one per worker (the whole
    range outside xdist)."""
    low, high = LOWEST, ephemeral_low()
    try:
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    except ValueError:
        return low, high
    if count <= 1 or not 0 <= index < count:
        return low, high
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports of this worker's slice (``worker_slice``), none handed
    out before by this process unless the slice has no others left."""
    low, high = worker_slice()
    fresh = len(_HANDED_OUT) + n < (high - low) // 2
    ports: list[int] = []
    for _ in range(1000 * n):
        port = random.randrange(low, high)
        if port in ports or (fresh and port in _HANDED_OUT) or not bindable(port):
            continue
        ports.append(port)
        if len(ports) == n:
            _HANDED_OUT.update(ports)
            return ports
    raise AssertionError(f"no {n} free ports in {low}..{high}")


def free_block(offsets: list[int]) -> int:
    """A base port P of this worker's slice with P + each of ``offsets`` free and not handed out
    before by this process (scripts/cluster's ``--base-port``: node i on P+100*i and
    P+1+100*i); those ports count as handed out."""
    low, high = worker_slice()
    span = max(offsets) + 1
    for _ in range(1000):
        base = random.randrange(low, high - span)
        ports = [base + o for o in offsets]
        if not any(port in _HANDED_OUT for port in ports) and all(bindable(port) for port in ports):
            _HANDED_OUT.update(ports)
            return base
    raise AssertionError(f"no free block of {span} ports in {low}..{high}")


def free_port() -> int:
    """One free loopback port (see ``free_ports``)."""
    return free_ports(1)[0]
