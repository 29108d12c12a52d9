#!/usr/bin/env python3
"""Issue 58, goal 1 ("no stalls"): consecutive fixed-rate runs against one broker, each checked
against the machine's wake-up floor measured right before it. `scripts/bench --stalls` runs it.

Per broker (Frieda, then Kafka 4.4.0 unless --brokers says otherwise): a fresh broker, a 30-s
burn-in, then RUNS times: `frieda-bench roof-wake` (5 s, a do-nothing loopback echo at
10k round trips/s) and `frieda-bench produce` (RATE records/s, 100 B, acks=all, 1 partition,
PRODUCERS producers, linger 0, SECS seconds after 3 s of warm-up, `--timeline`). A run passes
when its p99.9 is at most 3x the floor's echo p99.9 and its max at most 5x the floor's echo
p99.99 (the issue's goal).
Usage: stall_series.py OUT_DIR [--runs 20] [--secs 20] [--rate 50000] [--producers 1]
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import ROOT, Broker  # noqa: E402

BENCH_BIN = os.environ.get("BENCH_BIN", str(ROOT / "target/release/frieda-bench"))


def produce(port: int, pid: int, args, secs: float, warmup: float, js: Path) -> dict:
    subprocess.run([BENCH_BIN, "produce", "--bootstrap", f"127.0.0.1:{port}", "--topic", "stalls",
                    "--create-topic", "--rate", str(args.rate), "--producers", str(args.producers),
                    "--record-size", "100", "--acks", "all", "--warmup-secs", str(warmup),
                    "--duration-secs", str(secs), "--broker-pid", str(pid), "--timeline",
                    "--json", str(js)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(js.read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--secs", type=int, default=20)
    ap.add_argument("--rate", type=int, default=50000)
    ap.add_argument("--producers", type=int, default=1)
    ap.add_argument("--brokers", default="frieda,kafka")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(out / "runs.jsonl", "w") as f:
        for broker in args.brokers.split(","):
            bdir = out / broker
            bdir.mkdir(exist_ok=True)
            subprocess.run(["sync"])
            with Broker(broker, bdir) as b:
                port, pid = b.port, b.pid
                produce(port, pid, args, 30, 2, bdir / "burnin.json")
                for i in range(args.runs):
                    wake = bdir / f"wake-{i}.json"
                    subprocess.run([BENCH_BIN, "roof-wake", "--secs", "5", "--json", str(wake)], check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    floor = json.loads(wake.read_text())
                    r = produce(port, pid, args, args.secs, 3, bdir / f"run-{i}.json")
                    row = {"broker": broker, "run": i, "floor_p999_us": floor["echo_p999_us"],
                           "floor_p9999_us": floor["echo_p9999_us"], "p50_us": r["p50_us"],
                           "p999_us": r["p999_us"], "p9999_us": r["p9999_us"], "max_us": r["max_us"],
                           "errors": r["errors"], "cpu_s_per_million": r["broker_cpu_s_per_million"]}
                    row["p999_ok"] = r["p999_us"] <= 3 * floor["echo_p999_us"]
                    row["max_ok"] = r["max_us"] <= 5 * floor["echo_p9999_us"]
                    print(json.dumps(row), flush=True)
                    f.write(json.dumps(row) + "\n")
                    rows.append(row)
    lines = [f"# {args.runs} consecutive {args.secs}-s runs at {args.rate} records/s, {args.producers} producer(s), "
             "100 B, acks=all, 1 partition, RF 1, each after a 5-s echo floor", "",
             "| broker | runs with p99.9 ≤ 3x floor p99.9 | runs with max ≤ 5x floor p99.99 | p99.9 ms (min / median / max) | max ms (median / max) | floor p99.9 ms (median) |",
             "|---|---|---|---|---|---|"]
    for broker in args.brokers.split(","):
        rs = [r for r in rows if r["broker"] == broker]
        if not rs:
            continue
        p = sorted(r["p999_us"] for r in rs)
        m = sorted(r["max_us"] for r in rs)
        fl = sorted(r["floor_p999_us"] for r in rs)
        lines.append(f"| {broker} | {sum(r['p999_ok'] for r in rs)} of {len(rs)} | {sum(r['max_ok'] for r in rs)} of {len(rs)} | "
                     f"{p[0]/1000:.1f} / {p[len(p)//2]/1000:.1f} / {p[-1]/1000:.1f} | {m[len(m)//2]/1000:.1f} / {m[-1]/1000:.1f} | {fl[len(fl)//2]/1000:.1f} |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
