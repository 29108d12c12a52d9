"""Leader placement on a cluster with one slow node: `scripts/bench --placement` (issue 33, ALOR).

Three configurations, each a fresh 3-node cluster on loopback (RF 3, min.insync.replicas 2):
Apache Kafka 4.4.0 (bench/kafka/run-kafka-cluster.sh; fixed preferred leaders), Frieda with
`leader.placement=preferred` (Kafka's rule) and Frieda with `leader.placement=measured`. In each,
node SLOW is made slow the same way: its process is stopped for STOP ms of every PERIOD ms
(SIGSTOP/SIGCONT by PID, from this script), which a noisy neighbour or a stalling VM does to a
real node. Twelve single-partition topics (12 partitions, as issue 33 asks), node (k mod 3) + 1 the
preferred leader of topic k, so each node prefers four. After SETTLE s (measured placement moves
leaderships then; the others do not), the same load generator (frieda-bench produce: open loop,
fixed rate, acks=all and acks=1 (a table each), 100 B records; one process per topic, connected
to its partition's leader, RATE/12 each) measures for SECS s; the twelve latency distributions are
merged (record-weighted) into one.

    python3 bench/placement.py OUT_DIR [--repeat N] [--brokers kafka,frieda] [--rate R]
        [--secs S] [--settle S] [--producers N] [--topics N] [--stop-ms MS] [--period-ms MS] [--quorum]

`--quorum` adds Frieda's two placements again with `replication.ack.policy=quorum` topics (issue
34): a slow follower is then outvoted, so only a slow leader is left to move.

Writes OUT_DIR/runs.jsonl (one line per cell) and OUT_DIR/report.md: medians over repeats of
p50-p99.99, max and throughput per configuration, and the ratios measured / preferred and
measured / Kafka. Configurations run in an order rotated per repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "target" / "release" / "frieda-bench"
FRIEDA = Path(os.environ.get("FRIEDA_BIN", ROOT / "target" / "release" / "frieda"))
SLOW = 2
FRIEDA_BASE = int(os.environ.get("FRIEDA_CLUSTER_PORT_BASE", "21092"))
KAFKA_BASE = int(os.environ.get("KAFKA_CLUSTER_PORT_BASE", "22092"))
KEYS = ["p50_us", "p90_us", "p99_us", "p999_us", "p9999_us", "max_us", "throughput_rps"]


class Staller(threading.Thread):
    def __init__(self, pid: int, stop_s: float, period_s: float):
        super().__init__(daemon=True)
        self.pid, self.stop_s, self.period_s = pid, stop_s, period_s
        self.halted = threading.Event()

    def run(self) -> None:
        while not self.halted.is_set():
            try:
                os.kill(self.pid, signal.SIGSTOP)
                time.sleep(self.stop_s)
            finally:
                os.kill(self.pid, signal.SIGCONT)
            self.halted.wait(self.period_s - self.stop_s)

    def halt(self) -> None:
        self.halted.set()
        self.join(5)
        try:
            os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def log(out: Path, msg: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    with open(out / "bench.log", "a") as f:
        f.write(line + "\n")


def start(config: str, workdir: Path, out: Path) -> tuple[str, list[int], callable]:
    """Starts the configuration's cluster; returns (bootstrap, node pids, stop function)."""
    env = dict(os.environ)
    if config == "kafka":
        d = workdir / "kafka"
        env.update(KAFKA_CLUSTER_DIR=str(d), KAFKA_CLUSTER_PORT_BASE=str(KAFKA_BASE))
        cmd = [str(ROOT / "bench/kafka/run-kafka-cluster.sh"), "3"]
        stop_cmd = [str(ROOT / "bench/kafka/stop-kafka-cluster.sh")]
        base, piddir = KAFKA_BASE, d
    else:
        d = workdir / "frieda"
        mode = "measured" if config.startswith("frieda-measured") else "preferred"
        env.update(FRIEDA_BIN=str(FRIEDA), FRIEDA_CLUSTER_PORT_BASE=str(FRIEDA_BASE),
                   FRIEDA_CLUSTER_CONFIG=f'"leader.placement" = "{mode}"\n')
        cmd = [str(ROOT / "bench/frieda/run-frieda-cluster.sh"), "3", str(d)]
        stop_cmd = [str(ROOT / "bench/frieda/stop-frieda-cluster.sh"), str(d)]
        base, piddir = FRIEDA_BASE, d
    with open(out / "bench.log", "a") as f:
        subprocess.run(cmd, env=env, stdout=f, stderr=f, timeout=300, check=True)
    pids = [int((piddir / (f"node-{i}.pid")).read_text()) for i in (1, 2, 3)]
    boot = ",".join(f"127.0.0.1:{base + 100 * i}" for i in (1, 2, 3))

    def stop() -> None:
        for p in pids:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
        with open(out / "bench.log", "a") as f:
            subprocess.run(stop_cmd, env=env, stdout=f, stderr=f, timeout=180)
    return boot, pids, stop


def leaders(boot: str, topics: list[str], path: Path) -> dict[int, int]:
    """Partitions led per node (over `topics`), from Metadata."""
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": boot, "log_level": 0}).list_topics(timeout=20)
    count: dict[int, int] = {}
    for t in topics:
        for pm in md.topics[t].partitions.values():
            count[pm.leader] = count.get(pm.leader, 0) + 1
    path.write_text(json.dumps(count))
    return count


def merge(runs: list[dict]) -> dict:
    """One latency distribution from several frieda-bench runs (their percentile curves, weighted
    by records): the combined CDF at x is the record-weighted mean of each run's CDF at x."""
    curves = [(r["records"], [(c["us"], c["p"] / 100) for c in r["percentiles"]]) for r in runs]
    total = sum(w for w, _ in curves)

    def cdf(x: float) -> float:
        acc = 0.0
        for w, pts in curves:
            below = 0.0
            for us, q in pts:
                if us <= x:
                    below = q
                else:
                    break
            acc += w * below
        return acc / total

    xs = sorted({us for _, pts in curves for us, _ in pts})

    def quantile(q: float) -> int:
        for x in xs:
            if cdf(x) >= q:
                return x
        return xs[-1]
    out = {k: quantile(q) for k, q in (("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99), ("p999_us", 0.999),
                                       ("p9999_us", 0.9999))}
    out["max_us"] = max(r["max_us"] for r in runs)
    out["throughput_rps"] = sum(r["throughput_rps"] for r in runs)
    out["errors"] = sum(r.get("errors") or 0 for r in runs)
    return out


def cell(config: str, rep: int, acks: str, args, out: Path) -> dict:
    """One measurement: a fresh cluster, `args.topics` single-partition topics (node (k mod 3) + 1
    the preferred leader of topic k), node SLOW slowed, one frieda-bench per topic in parallel (each connects to its
    topic's leader), latencies merged."""
    from confluent_kafka.admin import AdminClient, NewTopic
    workdir = Path(args.workdir)
    boot, pids, stop = start(config, workdir, out)
    raw = out / "raw"
    staller = None
    try:
        subprocess.run([str(BENCH), "describe", "--bootstrap", boot, "--brokers", "3", "--wait-isr-full-secs", "120",
                        "--json", str(raw / f"{config}-{rep}-cluster.json")], capture_output=True, timeout=180, check=True)
        topics = [f"placement-{config}-acks{acks}-{rep}-{k}" for k in range(args.topics)]
        adm = AdminClient({"bootstrap.servers": boot, "log_level": 0})
        rotations = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
        tconf = {"min.insync.replicas": "2"}
        if config.endswith("-quorum"):
            tconf["replication.ack.policy"] = "quorum"  # issue 34
        fs = adm.create_topics([NewTopic(t, num_partitions=1, replica_assignment=[rotations[k % 3]], config=tconf)
                                for k, t in enumerate(topics)], operation_timeout=30, request_timeout=60)
        for f in fs.values():
            f.result(60)
        for t in topics:
            subprocess.run([str(BENCH), "describe", "--bootstrap", boot, "--topic", t, "--brokers", "3",
                            "--wait-isr-full-secs", "120", "--json", str(raw / f"{t}-start.json")],
                           capture_output=True, timeout=180, check=True)
        before = leaders(boot, topics, raw / f"{config}-{rep}-before.json")
        staller = Staller(pids[SLOW - 1], args.stop_ms / 1000, args.period_ms / 1000)
        staller.start()
        time.sleep(args.settle)
        settled = leaders(boot, topics, raw / f"{config}-{rep}-settled.json")
        procs = []
        for t in topics:
            js = raw / f"{t}.json"
            cmd = [str(BENCH), "produce", "--bootstrap", boot, "--topic", t, "--partitions", "1",
                   "--acks", acks, "--record-size", "100", "--producers", str(args.producers),
                   "--rate", str(args.rate // len(topics)), "--warmup-secs", "5", "--duration-secs", str(args.secs),
                   "--broker-pid", ",".join(map(str, pids)), "--threads", "1",
                   "--broker", "kafka" if config == "kafka" else "frieda", "--label", t,
                   "--json", str(js), "--progress-secs", "0", "--quiet"]
            procs.append((js, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
        runs, errors = [], []
        for js, pr in procs:
            _, err = pr.communicate(timeout=args.secs + 300)
            if pr.returncode == 0:
                runs.append(json.loads(js.read_text()))
            else:
                errors.append(err[-300:])
        after = leaders(boot, topics, raw / f"{config}-{rep}-after.json")
        res = {"config": config, "acks": acks, "repeat": rep, "rc": 0 if not errors else 1, "leaders_before": before,
               "leaders_settled": settled, "leaders_after": after, "slow_node": SLOW}
        if errors:
            res["error"] = " | ".join(errors)
        else:
            res.update(merge(runs))
            res["per_topic_p999_us"] = [r["p999_us"] for r in runs]
            res["broker_cpu_s"] = runs[0].get("broker_cpu_s")
        return res
    finally:
        if staller:
            staller.halt()
        stop()


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(out: Path, all_rows: list[dict], args) -> None:
    lines = []
    for acks in args.acks.split(","):
        lines += table(acks, [r for r in all_rows if r.get("acks") == acks], args)
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def table(acks: str, rows: list[dict], args) -> list[str]:
    configs = [c for c in ("kafka", "frieda-preferred", "frieda-measured", "frieda-preferred-quorum",
                           "frieda-measured-quorum") if any(r["config"] == c for r in rows)]
    med = {c: {k: median([r.get(k) for r in rows if r["config"] == c and r["rc"] == 0]) for k in KEYS}
           for c in configs}
    lines = [
        f"## acks={acks}: leader placement with one slow node (`scripts/bench --placement`)",
        "",
        f"3-node clusters on loopback, RF 3, min.insync.replicas 2, {args.topics} single-partition topics (node "
        f"(k mod 3) + 1 the preferred leader of topic k; one frieda-bench per topic, connected to its leader, "
        f"latencies merged); node {SLOW} stopped "
        f"{args.stop_ms} ms of every {args.period_ms} ms (SIGSTOP/SIGCONT) from {args.settle} s before the "
        f"measurement to its end. frieda-bench produce: open loop {args.rate} records/s in all, {args.producers} "
        f"producer(s) per topic, acks={acks}, 100 B values, no fsync per message, 5 s warm-up, {args.secs} s measured. "
        f"Medians of {args.repeat} repeat(s); latency in µs (HdrHistogram).",
        "",
        "| configuration | p50 | p90 | p99 | p99.9 | p99.99 | max | records/s | partitions led by the slow node (per repeat) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in configs:
        m = med[c]
        slow_led = [r.get("leaders_settled", {}).get(SLOW, 0) for r in rows if r["config"] == c]
        fmt = lambda v: "-" if v is None else f"{v:,.0f}"  # noqa: E731
        lines.append(f"| {c} | " + " | ".join(fmt(m[k]) for k in KEYS) + f" | {slow_led} |")
    lines.append("")
    for a, b in (("frieda-measured", "frieda-preferred"), ("frieda-measured", "kafka"), ("frieda-preferred", "kafka"),
                 ("frieda-measured-quorum", "frieda-preferred"), ("frieda-measured-quorum", "frieda-preferred-quorum"),
                 ("frieda-measured-quorum", "kafka")):
        if a in med and b in med and med[b]["p999_us"]:
            lines.append(f"- {a} / {b}: p99 {med[a]['p99_us'] / med[b]['p99_us']:.2f}x, "
                         f"p99.9 {med[a]['p999_us'] / med[b]['p999_us']:.2f}x, "
                         f"throughput {med[a]['throughput_rps'] / med[b]['throughput_rps']:.2f}x")
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="kafka,frieda")
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--secs", type=int, default=30)
    ap.add_argument("--settle", type=int, default=20)
    ap.add_argument("--producers", type=int, default=1, help="producers (connections) per topic")
    ap.add_argument("--topics", type=int, default=12, help="single-partition topics (partitions)")
    ap.add_argument("--acks", default="all,1", help="comma-separated: each is a table")
    ap.add_argument("--stop-ms", type=int, default=20)
    ap.add_argument("--period-ms", type=int, default=100)
    ap.add_argument("--workdir", default="/tmp/frieda-bench-placement")
    ap.add_argument("--quorum", action="store_true",
                    help="also Frieda's two placements with replication.ack.policy=quorum topics (issue 34)")
    args = ap.parse_args()
    out = Path(args.out)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    configs = []
    if "kafka" in args.brokers:
        configs.append("kafka")
    if "frieda" in args.brokers:
        configs += ["frieda-preferred", "frieda-measured"]
        if args.quorum:
            configs += ["frieda-preferred-quorum", "frieda-measured-quorum"]
    rows = []
    for rep in range(args.repeat):
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for acks in args.acks.split(","):
            for c in order:
                log(out, f"repeat {rep + 1}/{args.repeat}: {c}, acks={acks}")
                try:
                    r = cell(c, rep, acks, args, out)
                except Exception as e:  # a cell that fails is reported, the others still run
                    detail = getattr(e, "stderr", b"") or b""
                    detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
                    r = {"config": c, "acks": acks, "repeat": rep, "rc": -1, "error": repr(e)[:300] + " " + detail[-300:]}
                log(out, f"  -> {json.dumps(r)}")
                rows.append(r)
                with open(out / "runs.jsonl", "a") as f:
                    f.write(json.dumps(r) + "\n")
    report(out, rows, args)


if __name__ == "__main__":
    main()
