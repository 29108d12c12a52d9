"""Measured leader placement (issue 33, ALOR): with `leader.placement=measured` a node that is slow
to lead loses its leaderships to the other in-sync replicas within a bounded time and gets them
back once it recovers; no acknowledged record is lost through the moves.

A 3-node cluster, a topic of 12 partitions (RF 3, each node the preferred leader of 4), a producer
(acks=all, idempotent) running throughout. Node 2 is made slow by stopping its process for 20 ms
every 100 ms (SIGSTOP/SIGCONT by PID): CPU it does not get, which its leader cost measures. Each
node's metrics show its cost and the moves the controller made, by reason.
"""

from __future__ import annotations

import threading
import time
import urllib.request

from cluster_clients import ProducerThread, check_acked, read_all
from conftest import free_ports, wait_until
from test_cluster import create

PARTITIONS = 12
SLOW = 2


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


class Staller(threading.Thread):
    """Stops process `pid` for `stop_s` every `period_s` until `halt()`."""

    def __init__(self, pid: int, stop_s: float = 0.02, period_s: float = 0.1):
        super().__init__(daemon=True)
        self.pid, self.stop_s, self.period_s = pid, stop_s, period_s
        self._halt = threading.Event()

    def run(self) -> None:
        import os
        import signal
        while not self._halt.is_set():
            os.kill(self.pid, signal.SIGSTOP)
            time.sleep(self.stop_s)
            os.kill(self.pid, signal.SIGCONT)
            self._halt.wait(self.period_s - self.stop_s)

    def halt(self) -> None:
        self._halt.set()
        self.join(5)


def test_leaderships_leave_a_slow_node_and_come_back(cluster, topic_name):
    ports = free_ports(3)
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i - 1]}"} for i in (1, 2, 3)},
                leader_placement="measured", leader_placement_check_interval_ms=1000)
    topic = topic_name()
    create(c, topic, partitions=PARTITIONS, rf=3)

    def led_by(node: int) -> list[int]:
        return sorted(p for p, part in c.partitions(topic).items() if part.leader == node)

    preferred = sorted(p for p, part in c.partitions(topic).items() if part.replicas[0] == SLOW)
    assert len(preferred) == 4, preferred
    wait_until(lambda: led_by(SLOW) == preferred, 30, f"node {SLOW} leads its preferred partitions")
    # Every node measured a cost; healthy nodes are cheap, so nothing moves.
    wait_until(lambda: all("frieda_leader_cost_microseconds" in scrape(p) for p in ports), 15,
               "every node reports its leader cost")
    time.sleep(2)
    costs = [{k: v for k, v in scrape(p).items() if k.startswith("frieda_leader_cost")} for p in ports]
    assert led_by(SLOW) == preferred, f"leaderships moved between healthy nodes; costs by node: {costs}"

    prod = ProducerThread(c.bootstrap, topic, PARTITIONS, rate=300)
    prod.start()
    staller = Staller(c.node(SLOW).pid)
    try:
        time.sleep(1)
        t0 = time.monotonic()
        staller.start()
        wait_until(lambda: led_by(SLOW) == [], 30, f"node {SLOW}'s leaderships moved away")
        away_s = time.monotonic() - t0
        cost = scrape(ports[SLOW - 1])["frieda_leader_cost_microseconds"]
        others = [scrape(ports[i - 1])["frieda_leader_cost_microseconds"] for i in (1, 3)]
        assert cost > 2 * max(others), (cost, others)
        time.sleep(2)
        assert led_by(SLOW) == [], "a leadership went back to the slow node"

        staller.halt()
        t1 = time.monotonic()
        wait_until(lambda: led_by(SLOW) == preferred, 60, f"node {SLOW} leads its preferred partitions again")
        back_s = time.monotonic() - t1
        print(f"leaderships moved away in {away_s:.1f} s, came back in {back_s:.1f} s")
    finally:
        staller.halt()
        prod.stop()
        prod.join(60)
    assert not prod.errors, prod.errors[:5]
    moves = {}
    for p in ports:
        for name, v in scrape(p).items():
            if name.startswith("frieda_leader_placement_moves_total"):
                moves[name] = moves.get(name, 0) + v
    assert moves.get('frieda_leader_placement_moves_total{reason="slower"}', 0) >= 4, moves
    assert moves.get('frieda_leader_placement_moves_total{reason="recovered"}', 0) >= 4, moves

    got, _hw = read_all(c.bootstrap, topic, PARTITIONS)
    check_acked(prod.acks, got, topic)
