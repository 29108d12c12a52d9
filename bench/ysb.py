#!/usr/bin/env python3
"""The Yahoo! Streaming Benchmark pipeline on Kafka Streams 4.4.0, both brokers, one command
(`scripts/bench --ysb`): for each repeat and broker (Apache Kafka 4.4.0, Frieda; each fresh),
bench/ysb/Ysb.java runs the pipeline (ad events from PRODUCERS producers at RATE events/s for
SECS seconds; filter views, join ad -> campaign through a GlobalKTable over a compacted topic,
count per campaign in 10 s event-time windows) and reports, per window, the delay from the
window's newest event to its final count reaching a results reader, and whether every count is
exact. Writes OUT/runs.jsonl, OUT/report.md and (with matplotlib) OUT/ysb-window-latency-cdf.png.

Usage: ysb.py OUT [--repeat 3] [--brokers kafka,frieda] [--rate 5000] [--secs 60] [--producers 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from observe_agreement import ROOT, Broker  # noqa: E402

YSB = ROOT / "bench" / "ysb" / "Ysb.java"


def classpath() -> str:
    f = Path(os.environ.get("FRIEDA_JAVA_CLASSPATH") or ROOT / "target" / "java-classpath.txt")
    if not f.exists():
        subprocess.run(["mvn", "-B", "-q", "-f", str(ROOT / "tests" / "java" / "pom.xml"), "dependency:build-classpath",
                        f"-Dmdep.outputFile={f}", "-Dmdep.includeScope=test"], check=True, timeout=900)
    return f.read_text().strip()


def compile_ysb(cp: str, dest: Path) -> None:
    subprocess.run(["javac", "-d", str(dest), "-cp", cp, str(YSB)], check=True, timeout=300)


def run_ysb(cp: str, classes: Path, bootstrap: str, rate: float, secs: float, producers: int, tmp: Path,
            group_protocol: str = "classic") -> dict:
    """One pipeline run against ``bootstrap``: Ysb's JSON line (exit status 1: a count was wrong).
    ``group_protocol``: Kafka Streams' ``group.protocol``, ``classic`` or ``streams`` (KIP-1071)."""
    state = tmp / "streams-state"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    r = subprocess.run(["java", "-Xmx1g", f"-Djava.io.tmpdir={state}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        "-cp", f"{classes}:{cp}", "Ysb", bootstrap, str(rate), str(secs), str(producers), "100", group_protocol],
                       capture_output=True, text=True, timeout=secs + 300)
    shutil.rmtree(state, ignore_errors=True)
    line = next((l for l in r.stdout.splitlines() if l.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"Ysb exited {r.returncode} without a result\n{r.stderr[-3000:]}")
    out = json.loads(line)
    out["exit"] = r.returncode
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="kafka,frieda")
    ap.add_argument("--rate", type=float, default=5000)
    ap.add_argument("--secs", type=float, default=60)
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--group-protocols", default="classic",
                    help="Kafka Streams group.protocol values to run, comma-separated: classic,streams")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    cp = classpath()
    runs = a.out / "runs.jsonl"
    with tempfile.TemporaryDirectory() as t, open(runs, "a") as f:
        tmp = Path(t)
        classes = tmp / "classes"
        compile_ysb(cp, classes)
        for rep in range(a.repeat):
            for kind, protocol in [(k, p) for p in a.group_protocols.split(",") for k in a.brokers.split(",")]:
                with Broker(kind, tmp) as b:
                    row = run_ysb(cp, classes, f"127.0.0.1:{b.port}", a.rate, a.secs, a.producers, tmp, protocol)
                row.update(broker=kind, repeat=rep, group_protocol=protocol)
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(json.dumps({k: v for k, v in row.items() if k != "window_latencies_ms"}), file=sys.stderr)
    report(runs, a.out)


def report(runs: Path, out: Path) -> None:
    rows = [json.loads(l) for l in runs.read_text().splitlines() if l.strip()]
    lines = ["# Yahoo! Streaming Benchmark on Kafka Streams 4.4.0", "",
             "Window latency: the final count's arrival at a results reader minus the event time of the "
             "newest event it counts (ms); YSB's own figure (final update minus window end) in the last "
             "column. Medians over repeats; every run's counts are checked against the generator's.", "",
             "| broker | group.protocol | runs | events/s | producers | s | windows/run | counts short / over / missing | window latency p50 / p90 / p99 / max | after window end p50 / p99 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    med = {}
    for r in rows:
        r.setdefault("group_protocol", "classic")
    for kind, protocol in dict.fromkeys((r["broker"], r["group_protocol"]) for r in rows):
        sel = [r for r in rows if (r["broker"], r["group_protocol"]) == (kind, protocol)]
        m = {p: statistics.median(r["latency_ms"][p] for r in sel) for p in ("p50", "p90", "p99", "max")}
        e = {p: statistics.median(r["after_window_end_ms"][p] for r in sel) for p in ("p50", "p99")}
        med[(kind, protocol)] = m
        over = sum(r.get("over_counted", 0) for r in sel)
        short = sum(r["mismatched"] for r in sel) - over
        wrong = f"{short} / {over} / {sum(r['missing'] for r in sel)}"
        lines.append(f"| {kind} | {protocol} | {len(sel)} | {sel[0]['rate']:.0f} | {sel[0]['producers']} | {sel[0]['secs']:.0f} | "
                     f"{statistics.median(r['windows'] for r in sel):.0f} | {wrong} | "
                     + " / ".join(f"{m[p]:.0f}" for p in ("p50", "p90", "p99", "max"))
                     + f" | {e['p50']:.0f} / {e['p99']:.0f} |")
    for protocol in dict.fromkeys(p for _, p in med):
        f, k = med.get(("frieda", protocol)), med.get(("kafka", protocol))
        if f and k:
            lines += ["", f"Frieda / Kafka ({protocol}): " + ", ".join(
                f"{p} {f[p] / max(k[p], 1):.2f}" for p in ("p50", "p90", "p99", "max"))]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for kind, protocol in med:
            lat = sorted(x for r in rows if (r["broker"], r["group_protocol"]) == (kind, protocol)
                         for x in r["window_latencies_ms"])
            ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], label=f"{kind} ({protocol})")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlabel("window latency (ms, log scale above 10)")
        ax.set_ylabel("fraction of windows")
        ax.set_title("YSB on Kafka Streams: window latency CDF")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "ysb-window-latency-cdf.png", dpi=110)
        lines += ["", "![window latency CDF](ysb-window-latency-cdf.png)"]
    except ImportError:
        lines += ["", "(no plot: matplotlib is not installed)"]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
