#!/usr/bin/env python3
"""Diskless topics (issue 60, docs/diskless.md; `scripts/bench --diskless`): one Frieda node (its
own metadata quorum, `__diskless_coordinator-0` at replication factor 1, min ISR 1) with its
bucket on SeaweedFS `weed mini` on this machine (bench/tiered_bench.py's store and node).

Per commit interval of --intervals (`diskless.append.commit.interval.ms`, a broker setting: a
fresh node, fresh data and its own `rsm.config.key.prefix` `i<interval>/` each), per rate of
--rates:

1. Produce latency: frieda-bench produce, open loop, RATE records/s of RECORD_SIZE B from
   PRODUCERS producers into PARTITIONS partitions, acks=all, --batch-bytes per partition batch,
   5 requests in flight per connection, WARMUP s then SECS s, into a new diskless topic
   (`diskless.enable=true`, created with frieda-bench create-topic: CreateTopics with the
   config). On the first interval's node also into a classic topic (no fsync: Frieda's default)
   with the same load, in the same run.
2. The store's own PUT latency right after each diskless cell: boto3 PUTs, one at a time for
   PUT_SECS s, of objects the size the broker's objects have at that rate (RATE x RECORD_SIZE x
   interval, at most 8 MiB: `diskless.append.buffer.max.bytes`), p50/p99/p99.9; the issue's goal:
   diskless produce p99.9 <= interval + 2 x PUT p99.9.
3. Object-store requests per MB: the WAL objects the cell created (LIST of
   `<prefix>diskless/wal/` before and after) and SeaweedFS's own counter
   (`SeaweedFS_s3_request_total` on its metricsPort, by type) of PUTs during the produce and of
   GETs during a read pass: a confluent-kafka consumer reading the cell's topic, all partitions,
   from the beginning to the high watermark (librdkafka's defaults: fetch.max.bytes 50 MiB,
   max.partition.fetch.bytes 1 MiB).
4. CPU: the broker's (frieda-bench --broker-pid, /proc/PID/stat) and the store's
   (/proc/PID/stat) CPU seconds over the produce, per million records.

Writes OUT/runs.jsonl, OUT/report.md and OUT/logs/ (the broker's and the store's logs). Every
process it starts is stopped by PID.

Usage: diskless_bench.py OUT [--rates 10000,50000] [--intervals 250,100] [--secs 20]
                             [--put-secs 10] [--partitions 3] [--producers 4] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiered_bench import BUCKET, PCTS, Frieda, SeaweedFS, bench  # noqa: E402

MIB = 1 << 20
MAX_OBJECT = 8 * MIB  # diskless.append.buffer.max.bytes, default


def pct(xs: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of xs."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))] if s else float("nan")


def store_requests(store: SeaweedFS) -> dict[str, float]:
    """SeaweedFS's S3 request counter of the bench bucket, summed over answer codes, by type
    (GET, PUT, LIST, DELETE, ...)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{store.ports['metricsPort']}/metrics", timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("SeaweedFS_s3_request_total{"):
            labels, value = line[len("SeaweedFS_s3_request_total{"):].rsplit("} ", 1)
            lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            if lab.get("bucket") == BUCKET:
                out[lab.get("type", "?")] = out.get(lab.get("type", "?"), 0.0) + float(value)
    return out


def diff(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: b.get(k, 0.0) - a.get(k, 0.0) for k in set(a) | set(b) if b.get(k, 0.0) - a.get(k, 0.0)}


def wal_objects(store: SeaweedFS, prefix: str) -> dict[str, int]:
    pages = store.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "diskless/wal/")
    return {o["Key"]: o["Size"] for p in pages for o in p.get("Contents", [])}


def put_latency(store: SeaweedFS, size: int, secs: float) -> dict:
    """Sequential boto3 PUTs of `size`-byte objects for `secs`: latency percentiles (µs); the
    objects are deleted afterwards."""
    c = store.client()
    body = os.urandom(size)
    lat: list[float] = []
    keys: list[str] = []
    stop = time.monotonic() + secs
    cpu0 = store.cpu_s()
    while time.monotonic() < stop:
        key = f"putbench/{len(keys):06d}.bin"
        t0 = time.perf_counter()
        c.put_object(Bucket=BUCKET, Key=key, Body=body)
        lat.append((time.perf_counter() - t0) * 1e6)
        keys.append(key)
    cpu = store.cpu_s() - cpu0
    for i in range(0, len(keys), 1000):
        c.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    return {"put_size": size, "puts": len(lat), "put_p50_us": pct(lat, 50), "put_p99_us": pct(lat, 99),
            "put_p999_us": pct(lat, 99.9), "put_max_us": max(lat), "put_store_cpu_s": cpu}


def read_pass(bootstrap: str, topic: str, partitions: int, timeout: float) -> dict:
    """A confluent-kafka consumer reads every partition of `topic` from the beginning to its high
    watermark: records, value bytes, seconds, errors."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"diskless-bench-{topic}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        pos = {p: 0 for p in range(partitions)}
        records = nbytes = 0
        errors: list[str] = []
        t0 = time.monotonic()
        while any(pos[p] < ends[p] for p in pos) and time.monotonic() - t0 < timeout:
            for m in c.consume(num_messages=10000, timeout=1.0):
                if m.error():
                    errors.append(str(m.error()))
                    continue
                records += 1
                nbytes += len(m.value() or b"")
                pos[m.partition()] = m.offset() + 1
        secs = time.monotonic() - t0
        return {"read_records": records, "read_mb": nbytes / 1e6, "read_secs": secs, "read_errors": errors[:10],
                "read_complete": all(pos[p] >= ends[p] for p in pos), "high_watermarks": sum(ends.values())}
    finally:
        c.close()


def produce(f: Frieda, store: SeaweedFS, a, topic: str, rate: int, js: Path) -> dict:
    store_cpu0 = store.cpu_s()
    out = bench("produce", "--bootstrap", f.bootstrap, "--topic", topic, "--partitions", str(a.partitions),
                "--producers", str(a.producers), "--rate", str(rate), "--record-size", str(a.record_size),
                "--acks", "all", "--batch-bytes", str(a.batch_bytes), "--warmup-secs", str(a.warmup),
                "--duration-secs", str(a.secs), "--broker-pid", str(f.proc.p.pid), "--json", str(js),
                "--timeline", "--progress-secs", "0", timeout=a.secs + a.warmup + 150)
    (js.with_suffix(".stderr")).write_text(out.stderr)
    r = json.loads(js.read_text())
    r.pop("percentiles", None)
    timeline = r.pop("timeline", None) or {}  # per second and every pause in acks: raw/<topic>.json
    r["longest_ack_gap_ms"] = timeline.get("longest_ack_gap_ms")
    r["store_cpu_s"] = store.cpu_s() - store_cpu0
    r["store_cpu_s_per_million"] = r["store_cpu_s"] / max(r["acked_total"], 1) * 1e6
    return r


def diskless_cell(f: Frieda, store: SeaweedFS, a, rep: int, interval: int, rate: int) -> dict:
    prefix = f"r{rep}-i{interval}/"
    topic = f"dl-i{interval}-r{rate}-rep{rep}"
    bench("create-topic", "--bootstrap", f.bootstrap, "--topic", topic, "--partitions", str(a.partitions),
          "--replication-factor", "1", "--topic-config", "diskless.enable=true")
    keys0 = wal_objects(store, prefix)
    req0 = store_requests(store)
    comp0 = compacted_mb(f)
    r = produce(f, store, a, topic, rate, a.out / "raw" / f"{topic}.json")
    time.sleep(1)
    r["compacted_mb_produce"] = compacted_mb(f) - comp0
    req1 = store_requests(store)
    new = {k: s for k, s in wal_objects(store, prefix).items() if k not in keys0}
    produced_mb = r["acked_total"] * a.record_size / 1e6
    r.update(cell="produce", kind="diskless", rep=rep, interval_ms=interval, rate=rate, topic=topic,
             wal_objects=len(new), wal_mb=sum(new.values()) / 1e6,
             wal_mean_object_bytes=(sum(new.values()) / len(new)) if new else 0,
             store_requests_produce=diff(req0, req1), produced_mb=produced_mb,
             wal_objects_per_mb=len(new) / produced_mb if produced_mb else float("nan"),
             put_requests_per_mb=diff(req0, req1).get("PUT", 0.0) / produced_mb if produced_mb else float("nan"))
    # The read pass: GETs per MB read.
    req2 = store_requests(store)
    cpu0 = f.cpu_s()
    rd = read_pass(f.bootstrap, topic, a.partitions, a.read_timeout)
    req3 = store_requests(store)
    r.update(rd, store_requests_read=diff(req2, req3), read_broker_cpu_s=f.cpu_s() - cpu0,
             get_requests_per_mb=diff(req2, req3).get("GET", 0.0) / rd["read_mb"] if rd["read_mb"] else float("nan"))
    # The store's own PUT latency, objects the size the broker's have at this rate.
    size = min(int(rate * a.record_size * interval / 1000), MAX_OBJECT)
    r.update(put_latency(store, size, a.put_secs))
    bound = interval * 1000 + 2 * r["put_p999_us"]
    r.update(goal_bound_us=bound, goal_pass=r["p999_us"] <= bound)
    r["compacted_mb_cell"] = compacted_mb(f) - comp0
    return r


def classic_cell(f: Frieda, store: SeaweedFS, a, rep: int, interval: int, rate: int) -> dict:
    topic = f"classic-r{rate}-rep{rep}"
    bench("create-topic", "--bootstrap", f.bootstrap, "--topic", topic, "--partitions", str(a.partitions),
          "--replication-factor", "1")
    req0 = store_requests(store)
    r = produce(f, store, a, topic, rate, a.out / "raw" / f"{topic}.json")
    r.update(cell="produce", kind="classic", rep=rep, interval_ms=interval, rate=rate, topic=topic,
             store_requests_produce=diff(req0, store_requests(store)),
             produced_mb=r["acked_total"] * a.record_size / 1e6)
    bench("delete-topic", "--bootstrap", f.bootstrap, "--topic", topic)
    return r


def log_problems(path: Path) -> list[str]:
    """WARN and ERROR lines of a broker log."""
    if not path.exists():
        return []
    return [l.rstrip() for l in path.read_text(errors="replace").splitlines() if re.search(r"\b(WARN|ERROR)\b", l)]


def compacted_mb(f: Frieda) -> float:
    """MB the node's compaction has rewritten so far (its "diskless compaction: runs of batches
    rewritten" log lines, `bytes=`)."""
    path = f.work / "frieda.log"
    if not path.exists():
        return 0.0
    return sum(int(m.group(1)) for m in re.finditer(r"diskless compaction: runs of batches rewritten.*?\bbytes=(\d+)",
                                                     path.read_text(errors="replace"))) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeat", type=int, default=1, help="runs of every node and cell; the report gives medians")
    ap.add_argument("--rates", default="10000,50000")
    ap.add_argument("--intervals", default="250,100", help="diskless.append.commit.interval.ms values, ms")
    ap.add_argument("--secs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--put-secs", type=float, default=10)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--batch-bytes", type=int, default=1_000_000,
                    help="frieda-bench's per-partition batch limit (Kafka's batch.size); its default 16 KiB "
                         "caps a diskless producer at ~5 requests x 16 KiB per partition per commit; 1 MiB "
                         "made batches just over message.max.bytes (1048588): MESSAGE_TOO_LARGE")
    ap.add_argument("--read-timeout", type=float, default=120)
    ap.add_argument("--no-classic", action="store_true", help="leave out the classic topic's cells")
    ap.add_argument("--node-config", default="",
                    help="more broker settings for every node, key=value separated by spaces")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/frieda-bench-diskless"))
    a = ap.parse_args()
    rates = [int(x) for x in a.rates.replace(",", " ").split()]
    intervals = [int(x) for x in a.intervals.replace(",", " ").split()]
    (a.out / "raw").mkdir(parents=True, exist_ok=True)
    (a.out / "logs").mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(a.workdir)], check=True)
    a.workdir.mkdir(parents=True)
    t_start = time.monotonic()
    runs: list[dict] = []
    store = SeaweedFS(a.workdir)
    f: Frieda | None = None
    try:
        # The store's first PUTs after its start are slow (volumes being created): a few seconds
        # of 1 MiB PUTs first, not reported.
        put_latency(store, MIB, 3)
        for rep in range(a.repeat):
            for i, interval in enumerate(intervals):
                work = a.workdir / f"r{rep}-i{interval}"
                work.mkdir()
                f = Frieda(work, store, [f"diskless.append.commit.interval.ms={interval}",
                                         f"rsm.config.key.prefix=r{rep}-i{interval}/"]
                           + a.node_config.split())
                f.start()
                time.sleep(2)
                # The classic cells after the node's diskless ones: their page-cache writeback
                # would otherwise share the disk with the next diskless cell's coordinator fsyncs.
                cells = [("diskless", diskless_cell, rate) for rate in rates]
                if i == 0 and not a.no_classic:
                    cells += [("classic", classic_cell, rate) for rate in rates]
                for kind, cell, rate in cells:
                    try:
                        r = cell(f, store, a, rep, interval, rate)
                    except Exception as e:  # a failed cell is reported, the others still run
                        r = {"cell": "produce", "kind": kind, "rep": rep, "interval_ms": interval, "rate": rate,
                             "failed": str(e)[-1500:]}
                        print(f"[diskless] {kind} i{interval} r{rate} rep {rep} FAILED: {e}", flush=True)
                    else:
                        print(f"[diskless] {kind} i{interval} r{rate} rep {rep}: {r['throughput_rps']:.0f}/s "
                              f"p99.9 {r['p999_us']} µs max {r['max_us']} µs errors {r['errors']}"
                              + (f", {r['wal_objects']} objects, PUT p99.9 {r['put_p999_us']:.0f} µs, GETs "
                                 f"{r['store_requests_read'].get('GET', 0):.0f} for {r['read_mb']:.0f} MB"
                                 if kind == "diskless" else ""), flush=True)
                    runs.append(r)
                f.stop()
                runs.append({"cell": "log", "rep": rep, "interval_ms": interval,
                             "problems": log_problems(work / "frieda.log")[:200]})
                shutil.copy(work / "frieda.log", a.out / "logs" / f"frieda-{work.name}.log")
                f = None
    finally:
        if f:
            f.stop()
            shutil.copy(f.work / "frieda.log", a.out / "logs" / f"frieda-{f.work.name}.log")
        store.proc.stop()
        shutil.copy(a.workdir / "seaweedfs.log", a.out / "logs" / "seaweedfs.log")
        subprocess.run(["rm", "-rf", str(store.dir), str(a.workdir)], check=False)
    a.wall_s = time.monotonic() - t_start
    with open(a.out / "runs.jsonl", "w") as fh:
        for r in runs:
            fh.write(json.dumps(r) + "\n")
    report(a, runs, rates, intervals)


def merged(rs: list[dict]) -> dict:
    """One row of the median of every number of `rs` (runs of one cell; dicts of numbers key by
    key), the rest from the first."""
    out = dict(rs[0])
    for k, v in rs[0].items():
        if k in ("rep", "interval_ms", "rate"):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = statistics.median(r[k] for r in rs if isinstance(r.get(k), (int, float)))
        elif isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values()):
            keys = {kk for r in rs for kk in r.get(k, {})}
            m = {kk: statistics.median(r.get(k, {}).get(kk, 0) for r in rs) for kk in keys}
            out[k] = {kk: x for kk, x in m.items() if x}
    out["read_complete"] = all(r.get("read_complete", True) for r in rs)
    out["errors"] = sum(r["errors"] for r in rs)  # all runs' failed records, not a median
    out["unacked"] = sum(r["sent_total"] - r["acked_total"] for r in rs)
    if "put_p999_us" in out:
        out["goal_bound_us"] = out["interval_ms"] * 1000 + 2 * out["put_p999_us"]
        out["goal_pass"] = out["p999_us"] <= out["goal_bound_us"]
        out["goal_runs_passed"] = sum(bool(r["goal_pass"]) for r in rs)
    out["runs"] = len(rs)
    return out


def report(a, runs: list[dict], rates: list[int], intervals: list[int]) -> None:
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        if r.get("cell") == "produce" and "failed" not in r:
            groups.setdefault((r["kind"], r["interval_ms"], r["rate"]), []).append(r)
    ok = [merged(rs) for rs in groups.values()]
    dl = [r for r in ok if r["kind"] == "diskless"]
    rows = sorted(ok, key=lambda r: (r["rate"], r["kind"] != "classic", -r["interval_ms"]))
    nice = os.environ.get("TIERED_STORE_NICE")
    cond = ("One Frieda node (its own metadata quorum, replication factor 1; `__diskless_coordinator-0` RF 1, "
            "min ISR 1, `flush.messages=1`), SeaweedFS `weed mini` on the same 2-core VM"
            + (f" at nice {nice} (process and autogroup)" if nice else " at normal priority")
            + (f", its data in {os.environ['TIERED_STORE_DIR']}" if os.environ.get("TIERED_STORE_DIR") else "")
            + f". frieda-bench produce, open loop, acks=all, {a.record_size}-B records (no key, sticky per batch), "
            f"{a.partitions} partitions, {a.producers} producers (connections), 5 requests in flight each, "
            f"batch limit {a.batch_bytes} B per partition, linger 0, {a.warmup} s warm-up then {a.secs} s measured. "
            f"Fsync: Frieda's default (classic topic: none; the coordinator's partition: `flush.messages=1`). "
            f"Diskless: `diskless.enable=true`, `diskless.append.commit.interval.ms` as stated (one fresh node per "
            f"interval), buffer max 8 MiB (default)"
            + (f"; every node also `{a.node_config}`" if a.node_config.strip() else "")
            + ". Classic: the same load on the first interval's node, after its diskless cells. "
            + ("One run" if a.repeat == 1 else f"Medians of {a.repeat} runs (errors: all runs' sum)")
            + f"; wall time {a.wall_s:.0f} s.")
    lines = ["# Diskless topics (issue 60), `scripts/bench --diskless`", "", cond, ""]
    failed = [r for r in runs if "failed" in r]
    if failed:
        lines += ["**Failed cells:**", ""] + [f"- {r['kind']} interval {r['interval_ms']} ms, {r['rate']}/s: "
                                               f"`{r['failed'].splitlines()[-1][:300]}`" for r in failed] + [""]
    lines += ["## 1. Produce latency (µs, from each record's scheduled send time)", "",
              "| topic | commit interval ms | offered/s | achieved/s | " + " | ".join(p.replace("_us", "") for p in PCTS)
              + " | longest ack gap ms | errors | unacked |", "|---|" + "---|" * (len(PCTS) + 6)]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['interval_ms'] if r['kind'] == 'diskless' else '-'} | {r['rate']} | "
                     f"{r['throughput_rps']:.0f} | " + " | ".join(f"{r[p]:.0f}" for p in PCTS)
                     + f" | {r.get('longest_ack_gap_ms') if r.get('longest_ack_gap_ms') is not None else '-'}"
                     + f" | {r['errors']} | {r['unacked']} |")
    lines += ["", "longest ack gap: the longest time in which none of the producers got an acknowledgement "
              "(frieda-bench --timeline; per-second percentiles in raw/<topic>.json); errors: records answered "
              "with an error; unacked: records sent but not acknowledged (all runs)."]
    lines += ["", "## 2. The store's PUT latency and the goal (diskless p99.9 <= interval + 2 x PUT p99.9)", "",
              f"boto3 PUTs one at a time for {a.put_secs:.0f} s right after each diskless cell, of objects of rate x "
              f"{a.record_size} B x interval (at most 8 MiB); µs.", "",
              "| commit interval ms | rate/s | PUT object B | broker's mean WAL object B | PUTs | PUT p50 | PUT p99 "
              "| PUT p99.9 | bound | diskless p99.9 | goal |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(dl, key=lambda r: (-r["interval_ms"], r["rate"])):
        lines.append(f"| {r['interval_ms']} | {r['rate']} | {r['put_size']} | {r['wal_mean_object_bytes']:.0f} | "
                     f"{r['puts']} | {r['put_p50_us']:.0f} | {r['put_p99_us']:.0f} | {r['put_p999_us']:.0f} | "
                     f"{r['goal_bound_us']:.0f} | {r['p999_us']:.0f} | {'PASS' if r['goal_pass'] else 'FAIL'} |")
    lines += ["", "## 3. Object-store requests per MB", "",
              "MB = 10^6 B of record values. PUTs: SeaweedFS's `SeaweedFS_s3_request_total{type=\"PUT\"}` over the "
              "produce (warm-up, measured and drain); WAL objects: new keys under `<prefix>diskless/wal/`. GETs: the "
              "same counter over the read pass (one confluent-kafka consumer, all partitions, from the beginning, "
              "librdkafka's fetch defaults). Compacted MB: what the node's compaction rewrote (its log's `bytes=`) "
              "over the produce, and over the whole cell (produce, read pass and the PUT measurement).", "",
              "| commit interval ms | rate/s | MB produced | WAL objects | object MB | PUTs | PUTs/MB | compacted MB "
              "produce / cell | MB read | GETs | GETs/MB read | read s | other requests |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(dl, key=lambda r: (-r["interval_ms"], r["rate"])):
        other = {**{f"{k}(produce)": v for k, v in r["store_requests_produce"].items() if k != "PUT"},
                 **{f"{k}(read)": v for k, v in r["store_requests_read"].items() if k != "GET"}}
        lines.append(f"| {r['interval_ms']} | {r['rate']} | {r['produced_mb']:.1f} | {r['wal_objects']} | "
                     f"{r['wal_mb']:.1f} | {r['store_requests_produce'].get('PUT', 0):.0f} | {r['put_requests_per_mb']:.3f} | "
                     f"{r.get('compacted_mb_produce', 0):.1f} / {r.get('compacted_mb_cell', 0):.1f} | "
                     f"{r['read_mb']:.1f}{'' if r['read_complete'] else ' (incomplete)'} | "
                     f"{r['store_requests_read'].get('GET', 0):.0f} | {r['get_requests_per_mb']:.3f} | "
                     f"{r['read_secs']:.1f} | {', '.join(f'{k} {v:.0f}' for k, v in sorted(other.items())) or '-'} |")
    cl = [r for r in ok if r["kind"] == "classic"]
    if cl:
        lines += ["", "Store requests during the classic cells (no diskless traffic; a LIST is the broker's garbage collection, every 5 s): "
                  + "; ".join(f"{r['rate']}/s: {r['store_requests_produce'] or 'none'}" for r in cl)]
    lines += ["", "## 4. CPU (s per million records acknowledged, over the produce)", "",
              "Broker: frieda-bench's /proc/PID/stat over the measured window / measured records; store: SeaweedFS's "
              "/proc/PID/stat over the whole produce (warm-up and drain too) / all acknowledged records.", "",
              "| topic | commit interval ms | rate/s | broker CPU s/M | broker CPU s | store CPU s/M | store CPU s "
              "| records/request | broker CPU s, read pass |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['interval_ms'] if r['kind'] == 'diskless' else '-'} | {r['rate']} | "
                     f"{r['broker_cpu_s_per_million']:.2f} | {r['broker_cpu_s']:.2f} | {r['store_cpu_s_per_million']:.2f} | "
                     f"{r['store_cpu_s']:.2f} | {r['records_per_request']:.1f} | "
                     + (f"{r['read_broker_cpu_s']:.2f} |" if "read_broker_cpu_s" in r else "- |"))
    logs = [r for r in runs if r.get("cell") == "log"]
    lines += ["", "## Broker log warnings", ""]
    for r in logs:
        lines.append(f"- interval {r['interval_ms']} ms node, run {r['rep']}: {len(r['problems'])} WARN/ERROR lines "
                     f"(logs/frieda-r{r['rep']}-i{r['interval_ms']}.log)"
                     + "".join(f"\n  - `{p[:240]}`" for p in r["problems"][:5]))
    errs = [r for rs in groups.values() for r in rs if r["errors"]]
    for r in errs:
        lines.append(f"- producer errors, {r['kind']} interval {r['interval_ms']} ms, {r['rate']}/s, run {r['rep']}: "
                     f"{r['errors']} records, {json.dumps(r['error_detail'])[:400]}")
    lines.append("")
    (a.out / "report.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
