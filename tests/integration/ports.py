"""Free loopback ports for the brokers the tests start (tests/integration, tests/cluster and
tests/crash share this module).

Ports come from below the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``):
a port in that range can be handed out as the source port of some outgoing connection between
the check here and the broker's bind (a node binds its client port only after it joined the
quorum, while its peers already connect to each other; a broker restarted on the same port is
down for a moment), and the broker then fails with "Address already in use" (stop 75's CI)."""

from __future__ import annotations

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


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports between ``LOWEST`` and the ephemeral range."""
    high = ephemeral_low()
    ports: list[int] = []
    for _ in range(1000 * n):
        port = random.randrange(LOWEST, high)
        if port not in ports and bindable(port):
            ports.append(port)
            if len(ports) == n:
                return ports
    raise AssertionError(f"no {n} free ports in {LOWEST}..{high}")


def free_port() -> int:
    """One free loopback port (see ``free_ports``)."""
    return free_ports(1)[0]
