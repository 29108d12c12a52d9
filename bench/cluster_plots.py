#!/usr/bin/env python3
"""Plots of one `scripts/bench --cluster` run, drawn from its summary.json (the medians the report
gives), so a run whose raw/ directory is gone can still be plotted.

    cluster_plots.py RESULTS_DIR

Writes RESULTS_DIR/plots/latency-<nodes>n.png (one panel per fixed-rate cell: p50, p99, p99.9,
p99.99 and max of each broker, µs on a log scale) and RESULTS_DIR/plots/throughput-<nodes>n.png
(unthrottled cells: records/s per producer count), and replaces the "## Plots" section at the end
of RESULTS_DIR/report.md with links to them. Needs matplotlib (scripts/bench installs it into
bench/.venv-bench); without it, prints why and exits 0, leaving the report as it was.
"""
import json
import os
import sys

PCTS = [("p50", "p50_us"), ("p99", "p99_us"), ("p99.9", "p999_us"), ("p99.99", "p9999_us"), ("max", "max_us")]
COLORS = {"kafka": "#d62728", "frieda": "#1f77b4", "frieda-quorum": "#2ca02c"}
FIXED = ["lat", "lat5", "mixed", "mixed5", "pause", "pause5"]
UNTH = ["unth", "unth5"]
TITLES = {"lat": "quiet", "lat5": "quiet, linger.ms=5", "mixed": "mixed load", "mixed5": "mixed load, linger.ms=5",
          "pause": "follower paused 20 s", "pause5": "follower paused 20 s, linger.ms=5",
          "unth": "unthrottled", "unth5": "unthrottled, linger.ms=5"}
MARK = "## Plots"


def label(b):
    return {"kafka": "Kafka", "frieda": "Frieda", "frieda-quorum": "Frieda, quorum acks"}.get(b, b)


def plot(out):
    summ = json.load(open(os.path.join(out, "summary.json")))
    rows = [r for r in summ.get("scenarios", []) if r.get("ok_repeats")]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("cluster_plots: matplotlib is not installed; no plots", file=sys.stderr)
        return []
    kv = summ.get("settings", {}).get("stamp", "")
    made = []

    def finish(fig, name, what, n):
        fig.suptitle("%d broker%s, acks=all, 1 partition, 100 B, %s (run %s)" % (
            n, "" if n == 1 else "s", what, kv), fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "plots", name), dpi=90)
        plt.close(fig)
        made.append(name)
    for n in sorted({r["brokers"] for r in rows}):
        cells = sorted({(r["kind"], r["producers"]) for r in rows if r["brokers"] == n and r["kind"] in FIXED},
                       key=lambda c: (FIXED.index(c[0]), c[1]))
        if cells:
            cols = min(3, len(cells))
            nrows = (len(cells) + cols - 1) // cols
            fig, axes = plt.subplots(nrows, cols, figsize=(max(7.0, 4.2 * cols), 3.4 * nrows), squeeze=False)
            for ax, (kind, p) in zip(axes.flat, cells):
                for r in rows:
                    if r["brokers"] == n and r["kind"] == kind and r["producers"] == p:
                        ys = [r.get(m) for _, m in PCTS]
                        xs = [i for i, y in enumerate(ys) if y]
                        ax.plot(xs, [ys[i] for i in xs], marker="o", color=COLORS.get(r["broker"]), label=label(r["broker"]))
                ax.set_yscale("log")
                ax.set_xticks(range(len(PCTS)))
                ax.set_xticklabels([x for x, _ in PCTS])
                ax.set_title("%s, %d producer%s" % (TITLES[kind], p, "" if p == 1 else "s"), fontsize=9)
                ax.set_ylabel("latency, µs (log)")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=7)
            for ax in list(axes.flat)[len(cells):]:
                ax.axis("off")
            finish(fig, "latency-%dn.png" % n, "fixed rate; medians of repeats", n)
        kinds = [k for k in UNTH if any(r["brokers"] == n and r["kind"] == k for r in rows)]
        if kinds:
            fig, axes = plt.subplots(1, len(kinds), figsize=(max(7.0, 4.6 * len(kinds)), 3.4), squeeze=False)
            for ax, kind in zip(axes.flat, kinds):
                sel = [r for r in rows if r["brokers"] == n and r["kind"] == kind]
                prods = sorted({r["producers"] for r in sel})
                brokers = [b for b in COLORS if any(r["broker"] == b for r in sel)]
                w = 0.8 / max(1, len(brokers))
                for j, b in enumerate(brokers):
                    ys = [next((r["throughput_rps"] / 1e6 for r in sel if r["broker"] == b and r["producers"] == p), 0) for p in prods]
                    ax.bar([i + (j - (len(brokers) - 1) / 2) * w for i in range(len(prods))], ys, w,
                           color=COLORS[b], label=label(b))
                ax.set_xticks(range(len(prods)))
                ax.set_xticklabels(["%d producer%s" % (p, "" if p == 1 else "s") for p in prods])
                ax.set_ylabel("million records/s")
                ax.set_title(TITLES[kind], fontsize=9)
                ax.legend(fontsize=7)
                ax.grid(True, axis="y", alpha=0.3)
            finish(fig, "throughput-%dn.png" % n, "unthrottled; medians", n)
    return made


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    made = plot(out)
    if not made:
        return
    path = os.path.join(out, "report.md")
    text = open(path).read() if os.path.exists(path) else ""
    if MARK in text:
        text = text[:text.index(MARK)].rstrip("\n") + "\n"
    text += "\n%s\n\nDrawn from summary.json by `bench/cluster_plots.py` (medians of the repeats).\n\n" % MARK
    text += "".join("![%s](plots/%s)\n\n" % (m[:-4], m) for m in made)
    with open(path, "w") as f:
        f.write(text)
    print("wrote %s" % ", ".join(os.path.join(out, "plots", m) for m in made))


if __name__ == "__main__":
    main()
