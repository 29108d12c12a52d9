"""The table of ``scripts/bench --txn``: per cell and broker, medians over the repeats of Kafka's
ProducerPerformance summary line (records/s, latency in ms) and the broker's CPU seconds per
million records.

    python3 bench/txn_report.py RUNS_JSONL RAW_DIR
"""

import json
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
                  r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def main(runs_path: str, raw: str) -> None:
    cells = defaultdict(list)
    for line in open(runs_path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") != "pp" or r.get("rc") != 0 or not r["name"].startswith("txn-"):
            continue
        found = LINE.findall(open(f"{raw}/{r['out']}").read())
        if not found:
            continue
        n, rps, avg, mx, p50, _p95, p99, p999 = (float(x) for x in found[-1])
        cells[(r["name"], r["broker"])].append({"rps": rps, "avg": avg, "p50": p50, "p99": p99, "p999": p999,
                                                "max": mx, "cpu": r["broker_cpu_s"] / n * 1e6})
    print("| cell | broker | repeats | records/s | avg ms | p50 ms | p99 ms | p99.9 ms | max ms | broker CPU s / M records |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, b), xs in sorted(cells.items()):
        m = {k: statistics.median(x[k] for x in xs) for k in xs[0]}
        print(f"| {name} | {b} | {len(xs)} | {m['rps']:.0f} | {m['avg']:.2f} | {m['p50']:.0f} | {m['p99']:.0f} | "
              f"{m['p999']:.0f} | {m['max']:.0f} | {m['cpu']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
