#!/usr/bin/env python3
"""Does the wire observer agree with the client? (`scripts/bench --observe`)

For each broker (Apache Kafka 4.4.0 from bench/kafka, Frieda) and each offered rate,
`frieda-bench produce` (acks=all, 100 B records, 1 partition, 1 producer, no fsync per message)
runs at a fixed rate while `frieda-bench observe` captures the broker's port on loopback during
the measured window (after the warm-up). Compared per run: the observer's Produce latency (the
request's first byte to the response's last byte, kernel timestamps) and the client's request
round trip (request written to response read, `request_rtt_us`), p50/p99/p99.9/max, and the
Frieda/Kafka ratio each of them gives. Writes OUT/runs.jsonl and OUT/report.md.

Needs root (AF_PACKET capture).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Broker  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("BENCH_BIN", ROOT / "target" / "release" / "frieda-bench"))
PCTS = ("p50", "p99", "p999", "max")


def run_once(b: Broker, rate: int, warmup: float, secs: float, tmp: Path, topic: str) -> dict:
    bench_json, obs_json = tmp / "bench.json", tmp / "obs.json"
    bench = subprocess.Popen([str(BENCH), "produce", "--bootstrap", f"127.0.0.1:{b.port}", "--topic", topic,
                              "--rate", str(rate), "--acks", "all", "--record-size", "100",
                              "--warmup-secs", str(warmup), "--duration-secs", str(secs), "--json", str(bench_json)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(warmup + 0.2)
    subprocess.run([str(BENCH), "observe", "--port", str(b.port), "--secs", str(secs - 0.5), "--every", "0",
                    "--json", str(obs_json)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bench.wait(timeout=secs + 120)
    client = json.loads(bench_json.read_text())
    obs = json.loads(obs_json.read_text())
    produce = next(a for a in obs["apis"] if a["api"] == "Produce")
    rtt = client["request_rtt_us"]
    return {
        "broker": b.kind, "rate": rate, "secs": secs,
        "observer": {"count": produce["count"], **{p: produce[f"{p}_us"] for p in PCTS}},
        "client_rtt": {"count": rtt["count"], **{p: rtt[p] for p in PCTS}},
        "client_scheduled": {p: client[f"{p}_us"] for p in PCTS},
        "kernel_drops": obs["kernel_drops"], "resyncs": obs["resyncs"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="kafka,frieda")
    ap.add_argument("--rates", default="1000,10000")
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--secs", type=float, default=10)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    runs = a.out / "runs.jsonl"
    with tempfile.TemporaryDirectory() as t, open(runs, "a") as f:
        tmp = Path(t)
        for r in range(a.repeat):
            for kind in a.brokers.split(","):
                with Broker(kind, tmp) as b:
                    subprocess.run([str(BENCH), "create-topic", "--bootstrap", f"127.0.0.1:{b.port}",
                                    "--topic", "observe", "--partitions", "1"], check=True,
                                   stdout=subprocess.DEVNULL)
                    for rate in (int(x) for x in a.rates.split(",")):
                        row = run_once(b, rate, a.warmup, a.secs, tmp, "observe")
                        row["repeat"] = r
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(json.dumps(row), file=sys.stderr)
    report(runs, a.out / "report.md")


def report(runs: Path, dest: Path) -> None:
    rows = [json.loads(l) for l in runs.read_text().splitlines() if l.strip()]
    med = {}
    for key in sorted({(r["broker"], r["rate"]) for r in rows}):
        sel = [r for r in rows if (r["broker"], r["rate"]) == key]
        med[key] = {side: {p: statistics.median(r[side][p] for r in sel) for p in PCTS}
                    for side in ("observer", "client_rtt")}
        med[key]["n"] = len(sel)
        med[key]["drops"] = sum(r["kernel_drops"] + r["resyncs"] for r in sel)
    lines = ["# Wire observer vs client (Produce, acks=all, 100 B, 1 partition, 1 producer)", "",
             "Medians over repeats, µs. observer: request's first byte to response's last byte on the wire "
             "(frieda-bench observe, kernel timestamps); client: request written to response read "
             "(frieda-bench request_rtt_us).", "",
             "| broker | rate/s | runs | observer p50 / p99 / p99.9 / max | client p50 / p99 / p99.9 / max | client - observer p50 / p99 / p99.9 | drops+resyncs |",
             "|---|---|---|---|---|---|---|"]
    for (broker, rate), m in med.items():
        o, c = m["observer"], m["client_rtt"]
        lines.append(f"| {broker} | {rate} | {m['n']} | " + " / ".join(f"{o[p]:.0f}" for p in PCTS) + " | "
                     + " / ".join(f"{c[p]:.0f}" for p in PCTS) + " | "
                     + " / ".join(f"{c[p] - o[p]:+.0f}" for p in PCTS[:3]) + f" | {m['drops']} |")
    rates = sorted({r for (_, r) in med})
    if all(("frieda", r) in med and ("kafka", r) in med for r in rates):
        lines += ["", "Frieda / Kafka latency ratio, as each side measures it:", "",
                  "| rate/s | observer p50 / p99 / p99.9 | client p50 / p99 / p99.9 |", "|---|---|---|"]
        for r in rates:
            f, k = med[("frieda", r)], med[("kafka", r)]
            lines.append(f"| {r} | " + " / ".join(f"{f['observer'][p] / max(k['observer'][p], 1):.2f}" for p in PCTS[:3])
                         + " | " + " / ".join(f"{f['client_rtt'][p] / max(k['client_rtt'][p], 1):.2f}" for p in PCTS[:3]) + " |")
    dest.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
