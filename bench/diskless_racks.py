#!/usr/bin/env python3
"""Bytes that cross racks per produced byte (issue 60's first measurement;
`scripts/bench --diskless-racks`): a diskless topic beside a classic replication-factor-3 topic,
on the same 3-broker cluster, in the same run.

Three racks, each a network namespace holding one Frieda broker (`broker.rack` rack-<i>) and that
rack's clients. Each namespace has two links to this (the bench's) namespace:

- `eth0` on the **rack network** (a bridge; 10.A.B.<i>): what the brokers and clients of one rack
  send to another rack: produces and fetches to a broker of another rack, replication, the
  metadata quorum, diskless commits to the coordinator's broker. Its transmitted bytes, summed
  over the three namespaces, are the cross-rack bytes.
- `eth1` on the **store network** (a second bridge; 10.C.D.<i>): the S3 store (SeaweedFS
  `weed mini`, in this namespace on 10.C.D.254) is reached only here, as a regional bucket is
  (no cross-zone charge); its bytes are reported apart.

Per topic kind (diskless: `diskless.enable=true`; classic: replication factor 3, one replica per
rack, `min.insync.replicas` 2), 6 partitions: one producer per rack (confluent-kafka, idempotent,
acks=all, RATE records/s of SIZE random bytes, for SECS s) and one consumer per rack (every
partition from the beginning, `client.rack` its rack; the brokers have Kafka's
`RackAwareReplicaSelector`, so a classic consumer reads from the replica in its own rack,
KIP-392), each connected to its own rack's broker and, for diskless, with
`client.id=...,diskless_az=rack-<i>` so Metadata names its rack's broker for every partition.
Before the topics, the cluster idles SECS s: the background cross-rack bytes per second
(heartbeats, the quorum, idle fetchers) are reported, and subtracted in the "net" column.

Writes OUT/report.md and OUT/runs.json (the data is deleted). Needs root (`ip netns`). Every process it starts is
stopped by PID, the namespaces and bridges deleted.

Usage: diskless_racks.py OUT [--rate 2000] [--size 1024] [--secs 20] [--partitions 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from conftest import Cluster  # noqa: E402
from seaweedfs import BUCKET, SeaweedFS, weed_binary  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
CLIENT = str(ROOT / "bench" / "rack_client.py")
RACKS = 3


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=20)


class RackNet:
    """Namespaces ``fr<tag>r<i>`` with ``eth0`` on the rack bridge and ``eth1`` on the store
    bridge (module docstring)."""

    def __init__(self, n: int):
        self.tag = uuid.uuid4().hex[:5]
        pid = os.getpid()
        self.rack_subnet = f"10.{200 + (pid >> 8) % 50}.{pid % 256}"
        self.store_subnet = f"10.{250 + (pid >> 8) % 5}.{pid % 256}"
        self.ns = {i: f"fr{self.tag}r{i}" for i in range(1, n + 1)}
        self.bridges = {"eth0": f"fr{self.tag}rb", "eth1": f"fr{self.tag}sb"}
        self.made: list[str] = []
        try:
            self._setup()
        except Exception:
            self.close()
            raise

    def host(self, i: int) -> str:
        return f"{self.rack_subnet}.{i}"

    @property
    def store_host(self) -> str:
        return f"{self.store_subnet}.254"

    def _setup(self) -> None:
        for dev, br in self.bridges.items():
            subnet = self.rack_subnet if dev == "eth0" else self.store_subnet
            ip("link", "add", br, "type", "bridge")
            self.made.append(br)
            ip("addr", "add", f"{subnet}.254/24", "dev", br)
            ip("link", "set", br, "up")
        for i, ns in self.ns.items():
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
            for dev, br in self.bridges.items():
                subnet = self.rack_subnet if dev == "eth0" else self.store_subnet
                veth = f"fr{self.tag}{dev[-1]}{i}"
                ip("link", "add", veth, "type", "veth", "peer", "name", dev, "netns", ns)
                ip("link", "set", veth, "master", br)
                ip("link", "set", veth, "up")
                ip("-n", ns, "addr", "add", f"{subnet}.{i}/24", "dev", dev)
                ip("-n", ns, "link", "set", dev, "up")

    def counters(self) -> dict[int, dict[str, int]]:
        """Per namespace: tx/rx bytes of eth0 and eth1."""
        out = {}
        for i, ns in self.ns.items():
            out[i] = {}
            for dev in ("eth0", "eth1"):
                for d in ("tx", "rx"):
                    r = subprocess.run(["ip", "netns", "exec", ns, "cat",
                                        f"/sys/class/net/{dev}/statistics/{d}_bytes"],
                                       capture_output=True, text=True, timeout=10, check=True)
                    out[i][f"{dev}_{d}"] = int(r.stdout)
        return out

    def close(self) -> None:
        for name in reversed(self.made):
            if name.startswith(f"fr{self.tag}r") and name in self.ns.values():
                ip("netns", "del", name, check=False)
            else:
                ip("link", "del", name, check=False)
        self.made = []


class Store(SeaweedFS):
    """SeaweedFS on the store network's address (this namespace)."""

    def __init__(self, workdir: Path, host: str):
        super().__init__(workdir)
        self.host = host

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.ports['s3.port']}"

    def start(self, timeout: float = 60) -> None:
        args = [weed_binary(), "mini", f"-dir={self.dir}", f"-ip={self.host}", f"-ip.bind={self.host}",
                f"-bucket={BUCKET}"] + [f"-{k}={v}" for k, v in self.ports.items()]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client().head_bucket(Bucket=BUCKET)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)


def delta(a: dict, b: dict) -> dict[int, dict[str, int]]:
    return {i: {k: b[i][k] - a[i][k] for k in a[i]} for i in a}


def run_clients(net: RackNet, c: Cluster, topic: str, a, diskless: bool) -> dict:
    procs = []
    for i, ns in net.ns.items():
        boot = c.nodes[i].addr
        # the rack item last in client.id, after the role: "bench-1-c,diskless_az=rack-1"
        cid = (lambda role: f"bench-{i}-{role}" + (f",diskless_az=rack-{i}" if diskless else ""))
        base = ["ip", "netns", "exec", ns, PY, CLIENT]
        procs.append(("consume", i, subprocess.Popen(
            base + ["consume", boot, topic, "--partitions", str(a.partitions), "--secs", str(a.secs + 15),
                    "--client-id", cid("c"), "--rack", f"rack-{i}"],
            stdout=subprocess.PIPE, text=True)))
        procs.append(("produce", i, subprocess.Popen(
            base + ["produce", boot, topic, "--rate", str(a.rate // RACKS), "--secs", str(a.secs),
                    "--size", str(a.size), "--client-id", cid("p")],
            stdout=subprocess.PIPE, text=True)))
    out = {"produce": {}, "consume": {}}
    for kind, i, p in procs:
        try:
            stdout, _ = p.communicate(timeout=a.secs + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, _ = p.communicate()
        out[kind][i] = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {"failed": p.returncode}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--rate", type=int, default=3000, help="records/s over the 3 producers")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--secs", type=float, default=20)
    ap.add_argument("--partitions", type=int, default=6)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    work = a.out / "work"
    net = RackNet(RACKS)
    store = Store(work, net.store_host)
    c = None
    runs = {"settings": vars(a) | {"out": str(a.out)}, "cells": {}}
    try:
        store.start()
        selector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
        c = Cluster(work / "cluster", RACKS, hosts={i: net.host(i) for i in net.ns}, netns=net.ns,
                    node_settings={i: {"broker.rack": f"rack-{i}", "replica.selector.class": selector}
                                   for i in net.ns},
                    **store.broker_settings())
        c.start_all()
        before = net.counters()
        time.sleep(a.secs)
        idle = delta(before, net.counters())
        idle_per_s = sum(d["eth0_tx"] for d in idle.values()) / a.secs
        runs["idle_cross_rack_bytes_per_s"] = idle_per_s
        print(f"idle: {idle_per_s:,.0f} cross-rack bytes/s", flush=True)
        from confluent_kafka.admin import NewTopic
        for kind in ("diskless", "classic"):
            topic = f"racks-{kind}"
            config = {"diskless.enable": "true"} if kind == "diskless" else {"min.insync.replicas": "2"}
            adm = c.admin()
            adm.create_topics([NewTopic(topic, num_partitions=a.partitions, replication_factor=3, config=config)],
                              operation_timeout=20, request_timeout=30)[topic].result(timeout=30)
            c.wait_topic(topic, a.partitions)
            time.sleep(3)
            before = net.counters()
            t0 = time.monotonic()
            clients = run_clients(net, c, topic, a, kind == "diskless")
            secs = time.monotonic() - t0
            d = delta(before, net.counters())
            produced = sum(p.get("acked_bytes", 0) for p in clients["produce"].values())
            consumed = sum(p.get("bytes", 0) for p in clients["consume"].values())
            cross = sum(x["eth0_tx"] for x in d.values())
            net_cross = max(0.0, cross - idle_per_s * secs)
            store_bytes = sum(x["eth1_tx"] + x["eth1_rx"] for x in d.values())
            cell = {"clients": clients, "secs": secs, "counters": d, "produced_bytes": produced,
                    "consumed_bytes": consumed, "cross_rack_bytes": cross, "net_cross_rack_bytes": net_cross,
                    "store_bytes": store_bytes,
                    "cross_per_produced": cross / produced if produced else None,
                    "net_cross_per_produced": net_cross / produced if produced else None,
                    "store_per_produced": store_bytes / produced if produced else None}
            runs["cells"][kind] = cell
            print(f"{kind}: produced {produced / 1e6:.1f} MB, consumed {consumed / 1e6:.1f} MB, "
                  f"cross-rack {cross / 1e6:.1f} MB ({cell['cross_per_produced']:.3f} per produced byte; "
                  f"net of idle {cell['net_cross_per_produced']:.3f}), store {store_bytes / 1e6:.1f} MB",
                  flush=True)
    finally:
        if c is not None:
            c.teardown(passed=True)
        store.stop()
        net.close()
        shutil.rmtree(work, ignore_errors=True)  # the brokers' and the store's data
    (a.out / "runs.json").write_text(json.dumps(runs, indent=1))
    report(a, runs)


def report(a, runs: dict) -> None:
    s = runs["settings"]
    lines = [
        "# Bytes across racks per produced byte: diskless vs classic RF 3",
        "",
        f"3 brokers in 3 racks (network namespaces), SeaweedFS on its own network; per rack one "
        f"idempotent acks=all producer ({s['rate'] // RACKS} records/s of {s['size']} B, {s['secs']:.0f} s) "
        f"and one consumer of every partition (client.rack its rack), {s['partitions']} partitions. "
        f"`bench/diskless_racks.py` (`scripts/bench --diskless-racks`).",
        "",
        f"Idle cluster: {runs['idle_cross_rack_bytes_per_s']:,.0f} cross-rack bytes/s (subtracted in 'net').",
        "",
        "| topic | produced MB | consumed MB | cross-rack MB | per produced byte | net of idle | store MB (not cross-rack) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, cell in runs["cells"].items():
        lines.append(f"| {kind} | {cell['produced_bytes'] / 1e6:.1f} | {cell['consumed_bytes'] / 1e6:.1f} | "
                     f"{cell['cross_rack_bytes'] / 1e6:.1f} | {cell['cross_per_produced']:.3f} | "
                     f"{cell['net_cross_per_produced']:.3f} | {cell['store_bytes'] / 1e6:.1f} |")
    (a.out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
