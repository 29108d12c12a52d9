#!/usr/bin/env python3
"""Brokers added and removed while producing to a diskless topic (issue 60's last measurement;
`scripts/bench --diskless-churn`): how long a new broker takes to serve, and what its removal
costs the producers it served, with every acknowledged record checked afterwards.

A cluster of 5 configured nodes (3 voters, nodes 1-3, started first; `broker.rack` rack-<i>,
nodes 4 and 5 both rack-4) with its bucket on SeaweedFS `weed mini` on this machine, and a
diskless topic of PARTITIONS partitions. Four idempotent confluent-kafka producers run through
the whole measurement, each RATE records/s of SIZE random bytes, acks=all, with
`client.id=churn-p<i>,diskless_az=rack-<i>` (i = 1..4) so Metadata names a broker of its rack as
every partition's leader (any broker serves a diskless partition) and
`topic.metadata.refresh.interval.ms` 1000. Rack 4 has no broker at first, so producer 4 is
served by the others until:

1. node 4 is started (a fresh data directory: it holds no data, as no diskless broker does):
   the time until it listens, until Metadata from node 1 lists it, and until a probe producer
   bootstrapped to node 4 alone (`diskless_az=rack-4`, one record every 20 ms) has its first
   record acknowledged: the **time until the new broker serves**;
2. after HOLD s, node 4 is stopped with SIGTERM (a controlled shutdown): producer 4's longest
   stretch without an acknowledgement and its errors;
3. node 5 is started (rack-4 again), served as in 1, then after HOLD s SIGKILLed (a crash);
4. the producers stop; a consumer reads every partition from the beginning to its high
   watermark and every acknowledged record must be there at its (partition, offset), byte for
   byte: **records lost** (the goal: 0) and records found twice.

Writes OUT/report.md and OUT/runs.json (the data is deleted). Every process it starts is stopped
by PID.

Usage: diskless_churn.py OUT [--rate 500] [--size 1024] [--partitions 6] [--hold 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import NewTopic  # noqa: E402
from conftest import Cluster  # noqa: E402
from seaweedfs import started  # noqa: E402

TOPIC = "churn"
PRODUCERS = 4


class Load(threading.Thread):
    """One producer at a fixed rate; every acknowledgement with its time (monotonic s)."""

    def __init__(self, name: str, conf: dict, rate: int, size: int, partitions: int):
        super().__init__(daemon=True)
        self.name_ = name
        self.p = Producer({"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                           "message.timeout.ms": 120000, "topic.metadata.refresh.interval.ms": 1000,
                           **conf})
        self.rate, self.size, self.partitions = rate, size, partitions
        self.stop_flag = threading.Event()
        self.acked: list[tuple[float, int, int, bytes]] = []  # (time, partition, offset, value)
        self.errors: list[str] = []
        self.sent = 0
        self.lock = threading.Lock()

    def report(self, err, msg) -> None:
        now = time.monotonic()
        with self.lock:
            if err is not None:
                self.errors.append(f"{now:.3f} {err}")
            else:
                self.acked.append((now, msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.stop_flag.is_set():
            due = t0 + self.sent / self.rate
            wait = due - time.monotonic()
            if wait > 0:
                self.p.poll(min(wait, 0.05))
                continue
            value = f"{self.name_}-{self.sent:09d}-".encode() + os.urandom(max(0, self.size - 24))
            try:
                self.p.produce(TOPIC, value=value, partition=self.sent % self.partitions, on_delivery=self.report)
                self.sent += 1
            except BufferError:
                self.p.poll(0.05)
        self.p.flush(120)

    def longest_gap(self, start: float, end: float) -> float:
        """Longest stretch (s) within [start, end] without an acknowledgement."""
        with self.lock:
            times = sorted(t for t, *_ in self.acked if start <= t <= end)
        points = [start, *times, end]
        return max(b - a for a, b in zip(points, points[1:]))


def listening(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.2):
            return True
    except OSError:
        return False


def add_broker(c: Cluster, i: int) -> dict:
    """Starts node ``i``; the seconds until it listens, is listed by node 1's Metadata, and has a
    probe record acknowledged through it alone."""
    node = c.nodes[i]
    probe = Producer({"bootstrap.servers": node.addr, "client.id": f"churn-probe-{i},diskless_az=rack-4",
                      "enable.idempotence": True, "acks": "all", "linger.ms": 0, "message.timeout.ms": 60000,
                      "socket.connection.setup.timeout.ms": 1000, "reconnect.backoff.ms": 20,
                      "reconnect.backoff.max.ms": 100, "topic.metadata.refresh.interval.ms": 200})
    first: list[float] = []
    t0 = time.monotonic()
    node.spawn()
    out = {"node": i}
    while "listen_s" not in out or "registered_s" not in out or not first:
        now = time.monotonic()
        if now - t0 > 60:
            raise RuntimeError(f"node {i} does not serve after 60 s: {out} {node.tail(20)}")
        if "listen_s" not in out and listening(node.addr):
            out["listen_s"] = now - t0
        if "registered_s" not in out and "listen_s" in out and i in c.brokers_seen(1):
            out["registered_s"] = now - t0
        if "listen_s" in out:
            probe.produce(TOPIC, value=b"probe", partition=0,
                          on_delivery=lambda err, _m: first.append(time.monotonic()) if err is None else None)
        probe.poll(0.02)
    out["serves_s"] = first[0] - t0
    probe.flush(30)
    return out


def consume_all(bootstrap: str, partitions: int) -> dict[tuple[int, int], bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "churn-check", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=20)[1] for p in range(partitions)}
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got[(m.partition(), m.offset())] = m.value()
            pos = {tp.partition: tp.offset for tp in c.position([TopicPartition(TOPIC, p) for p in range(partitions)])}
            if all(pos.get(p, -1) >= ends[p] for p in ends):
                return got
        raise RuntimeError(f"consumer short of the high watermarks {ends} after 300 s")
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--rate", type=int, default=500, help="records/s per producer (4 producers)")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--hold", type=float, default=10, help="s a new broker serves before it is removed")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    work = a.out / "work"
    store = started(work)
    racks = {1: "rack-1", 2: "rack-2", 3: "rack-3", 4: "rack-4", 5: "rack-4"}
    c = Cluster(work / "cluster", 5, voters=3, node_settings={i: {"broker.rack": r} for i, r in racks.items()},
                **store.broker_settings(), **{"rsm.config.key.prefix": "churn/"})
    runs: dict = {"settings": vars(a) | {"out": str(a.out)}}
    loads: list[Load] = []
    try:
        for i in (1, 2, 3):
            c.nodes[i].spawn()
        for i in (1, 2, 3):
            c.nodes[i].wait_listening()
        c.wait_brokers({1, 2, 3})
        adm = c.admin()
        adm.create_topics([NewTopic(TOPIC, num_partitions=a.partitions, replication_factor=3,
                                    config={"diskless.enable": "true"})],
                          operation_timeout=20, request_timeout=30)[TOPIC].result(timeout=30)
        c.wait_topic(TOPIC, a.partitions)
        boot = ",".join(c.nodes[i].addr for i in (1, 2, 3))
        loads = [Load(f"p{i}", {"bootstrap.servers": boot, "client.id": f"churn-p{i},diskless_az=rack-{i}"},
                      a.rate, a.size, a.partitions) for i in range(1, PRODUCERS + 1)]
        for load in loads:
            load.start()
        time.sleep(5)
        events = []
        for i, how in ((4, signal.SIGTERM), (5, signal.SIGKILL)):
            added = add_broker(c, i)
            print(f"node {i}: listens after {added['listen_s']:.2f} s, registered {added['registered_s']:.2f} s, "
                  f"serves {added['serves_s']:.2f} s", flush=True)
            time.sleep(a.hold)
            t_removed = time.monotonic()
            if how == signal.SIGTERM:
                added["stop_s"] = c.stop(i)
            else:
                c.kill(i)
            time.sleep(a.hold)
            added["removed_by"] = how.name
            added["p4_longest_gap_s"] = loads[3].longest_gap(t_removed - 1, time.monotonic())
            added["others_longest_gap_s"] = max(x.longest_gap(t_removed - 1, time.monotonic()) for x in loads[:3])
            print(f"node {i} removed ({how.name}): producer 4's longest wait for an acknowledgement "
                  f"{added['p4_longest_gap_s']:.2f} s (the others' {added['others_longest_gap_s']:.2f} s)", flush=True)
            events.append(added)
        runs["events"] = events
        for load in loads:
            load.stop_flag.set()
        for load in loads:
            load.join(150)
        got = consume_all(boot, a.partitions)
        acked = [(p, o, v) for load in loads for _t, p, o, v in load.acked]
        lost = [(p, o) for p, o, v in acked if got.get((p, o)) != v]
        seen: dict[bytes, int] = {}
        for v in got.values():
            if v != b"probe":
                seen[v[:13]] = seen.get(v[:13], 0) + 1  # "p<i>-<sequence>-"
        runs["totals"] = {
            "sent": sum(x.sent for x in loads), "acked": len(acked),
            "errors": sum(len(x.errors) for x in loads), "first_errors": [e for x in loads for e in x.errors[:3]],
            "stored": len(got), "lost": len(lost), "lost_first": lost[:10],
            "twice": sum(1 for n in seen.values() if n > 1),
        }
        print(json.dumps(runs["totals"]), flush=True)
    finally:
        for load in loads:
            load.stop_flag.set()
        problems = c.teardown(passed=True)
        if problems:
            print("broker log problems:", *problems[:10], sep="\n  ", flush=True)
            runs["problems"] = problems[:50]
        store.kill()
        shutil.rmtree(work, ignore_errors=True)
    (a.out / "runs.json").write_text(json.dumps(runs, indent=1))
    report(a, runs)


def report(a, runs: dict) -> None:
    t = runs["totals"]
    lines = [
        "# Brokers added and removed while producing to a diskless topic",
        "",
        f"3 brokers (voters, racks 1-3) + nodes 4 and 5 (rack 4) added and removed in turn; SeaweedFS "
        f"on the same machine; a diskless topic of {a.partitions} partitions; 4 idempotent acks=all "
        f"producers of {a.rate} records/s of {a.size} B, one per rack (`diskless_az=`), producer 4 "
        f"served by rack 4's broker while there is one. `bench/diskless_churn.py` "
        f"(`scripts/bench --diskless-churn`).",
        "",
        "| node | listens | listed by Metadata | serves (first probe record acknowledged through it) | "
        "removed by | producer 4's longest wait for an ack after | the other producers' |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in runs["events"]:
        lines.append(f"| {e['node']} | {e['listen_s']:.2f} s | {e['registered_s']:.2f} s | {e['serves_s']:.2f} s | "
                     f"{e['removed_by']} | {e['p4_longest_gap_s']:.2f} s | {e['others_longest_gap_s']:.2f} s |")
    lines += [
        "",
        f"Records: {t['sent']} sent, {t['acked']} acknowledged, {t['errors']} delivery errors, "
        f"**{t['lost']} acknowledged records lost or changed**, {t['twice']} stored twice "
        f"({t['stored']} records read back, the probes' included).",
    ]
    (a.out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
