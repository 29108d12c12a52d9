#!/usr/bin/env python3
"""Turns one scripts/bench run directory into summary.json, report.md and plots/*.png.

    report.py RESULTS_DIR [--no-plots]

Reads RESULTS_DIR/raw/: runs.jsonl (what ran, exit codes, load average), machine.json,
settings.json, roof-*.json, <broker>-<scenario>.json[l] (frieda-bench output) and
<broker>-pp-*.pp.txt (Kafka's ProducerPerformance). Only the standard library is needed for
the tables; matplotlib for the plots.
"""
import json
import math
import os
import re
import sys

BROKERS = ["kafka", "frieda"]
SCHEMA_KEYS = ["name", "broker", "acks", "record_size", "producers", "offered_rate", "throughput_rps",
               "p50_us", "p99_us", "p999_us", "p9999_us", "max_us", "broker_cpu_s_per_million"]


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def load_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def acks_str(a):
    return "all" if a in (-1, "-1", "all") else str(a)


PP_RE = re.compile(r"(\d+) (steady state )?records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                   r"([\d.]+) ms max latency(?:, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th)?")


def parse_pp(path):
    """Last summary line of ProducerPerformance; the steady-state line when there is one."""
    total, steady = None, None
    try:
        text = open(path).read()
    except OSError:
        return None
    for m in PP_RE.finditer(text):
        if m.group(7) is None:
            continue  # the interim "In steady state" line has no percentiles
        row = {"records": int(m.group(1)), "throughput_rps": float(m.group(3)), "mb_s": float(m.group(4)),
               "avg_ms": float(m.group(5)), "max_ms": float(m.group(6)), "p50_ms": int(m.group(7)),
               "p95_ms": int(m.group(8)), "p99_ms": int(m.group(9)), "p999_ms": int(m.group(10))}
        if m.group(2):
            steady = row
        else:
            total = row
    if steady:
        steady["steady_state"] = True
        return steady
    return total


class Run:
    def __init__(self, d):
        raw = d["_raw"]
        self.raw = raw
        self.runs = load_lines(os.path.join(raw, "runs.jsonl"))
        self.machine = load_json(os.path.join(raw, "machine.json"), {})
        self.settings = load_json(os.path.join(raw, "settings.json"), {})
        self.roof_net = load_json(os.path.join(raw, "roof-net.json"), {})
        self.roof_disk = load_json(os.path.join(raw, "roof-disk.json"), {})
        self.results = {}    # (broker, name) -> frieda-bench summary dict
        self.kind = {}       # name -> kind
        self.failed = {}     # (broker, name) -> message
        self.pp = {}         # (broker, name) -> parsed ProducerPerformance
        self.meta = {}       # (broker, name) -> runs.jsonl row
        self.start_failed = set()
        self.events = []
        for r in self.runs:
            if "event" in r:
                self.events.append(r)
                if r["event"] == "start_failed":
                    self.start_failed.add(r["broker"])
                continue
            b, name, kind = r["broker"], r["name"], r["kind"]
            self.kind[name] = kind
            self.meta[(b, name)] = r
            if kind == "pp":
                p = parse_pp(os.path.join(raw, r.get("out", "")))
                if p and r.get("rc") == 0:
                    p["broker_cpu_s"] = r.get("broker_cpu_s")
                    self.pp[(b, name)] = p
                else:
                    self.failed[(b, name)] = "ProducerPerformance exit %s" % r.get("rc")
                continue
            path = os.path.join(raw, r.get("json", ""))
            if r.get("rc") != 0:
                err = ""
                try:
                    err = open(os.path.join(raw, "%s-%s.stderr" % (b, name))).read().strip().splitlines()[-1][:200]
                except (OSError, IndexError):
                    pass
                self.failed[(b, name)] = "exit %s %s" % (r.get("rc"), err or r.get("error", ""))
            if kind == "trajectory":
                for row in load_lines(path):
                    n = "traj-%dp" % row["producers"]
                    self.kind[n] = "trajectory"
                    self.results[(b, n)] = row
            elif r.get("rc") == 0:
                res = load_json(path)
                if res:
                    self.results[(b, name)] = res

    def load_of(self, b, n):
        """1-minute load average before -> after the scenario (trajectory: the whole sweep)."""
        r = self.meta.get((b, n)) or (self.meta.get((b, "trajectory")) if n.startswith("traj-") else None)
        if not r or "loadavg_before" not in r:
            return "–"
        return "%s→%s" % (r["loadavg_before"].split()[0], r["loadavg_after"].split()[0])

    def names(self, kind):
        seen = []
        for (b, n), _ in sorted(self.results.items(), key=lambda kv: order_key(kv[0][1])):
            if self.kind.get(n) == kind and n not in seen:
                seen.append(n)
        for (b, n) in self.failed:
            if self.kind.get(n) == kind and n not in seen:
                seen.append(n)
        return sorted(seen, key=order_key)


def order_key(name):
    m = re.search(r"(\d+)p", name)
    return (re.sub(r"\d+p", "", name), int(m.group(1)) if m else 0, name)


def fmt_us(v):
    if v is None:
        return "–"
    if v >= 10000:
        return "%.1f ms" % (v / 1000)
    if v >= 1000:
        return "%.2f ms" % (v / 1000)
    return "%d µs" % v


def fmt_rate(v):
    if v is None:
        return "–"
    if v >= 1e6:
        return "%.2fM/s" % (v / 1e6)
    if v >= 1e3:
        return "%.1fk/s" % (v / 1e3)
    return "%.0f/s" % v


def ratio(f, k):
    if f is None or k is None or not k:
        return "–"
    return "%.2f×" % (f / k)


def summary_json(run):
    rows = []
    for (b, n), r in sorted(run.results.items(), key=lambda kv: (order_key(kv[0][1]), kv[0][0])):
        row = {"name": n, "broker": b, "acks": acks_str(r["acks"]), "record_size": r["record_size"],
               "producers": r["producers"], "offered_rate": r["offered_rate"], "throughput_rps": r["throughput_rps"],
               "p50_us": r["p50_us"], "p99_us": r["p99_us"], "p999_us": r["p999_us"], "p9999_us": r["p9999_us"],
               "max_us": r["max_us"], "broker_cpu_s_per_million": r.get("broker_cpu_s_per_million")}
        rows.append({k: row[k] for k in SCHEMA_KEYS})
    return {"scenarios": rows}


def settings_line(r):
    rate = "unthrottled" if not r["offered_rate"] else "%s rec/s offered" % fmt_rate(r["offered_rate"]).replace("/s", "")
    s = "acks=%s, %d B records, %d partition%s, %d producer%s, %s, %gs measured after %gs warm-up, max in flight %d, linger %d µs, batch %d B" % (
        acks_str(r["acks"]), r["record_size"], r["partitions"], "" if r["partitions"] == 1 else "s", r["producers"],
        "" if r["producers"] == 1 else "s", rate, r["duration_s"], r["warmup_s"], r["max_in_flight"], r["linger_us"], r["batch_bytes"])
    return s


def table(run, names, title_fn=None, with_ratio=True):
    lines = ["| scenario | broker | throughput | p50 | p99 | p99.9 | p99.99 | max | errors | broker CPU s / M records | broker RSS | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in names:
        per = {}
        for b in BROKERS:
            r = run.results.get((b, n))
            label = title_fn(n) if title_fn else n
            if r:
                per[b] = r
                errs = r["errors"]
                lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    label, b, fmt_rate(r["throughput_rps"]), fmt_us(r["p50_us"]), fmt_us(r["p99_us"]), fmt_us(r["p999_us"]),
                    fmt_us(r["p9999_us"]), fmt_us(r["max_us"]), ("**%d**" % errs) if errs else "0",
                    "%.2f" % r["broker_cpu_s_per_million"] if r.get("broker_cpu_s_per_million") is not None else "–",
                    "%d MiB" % (r["broker_rss_max_kb"] // 1024) if r.get("broker_rss_max_kb") else "–",
                    run.load_of(b, n)))
            elif (b, n) in run.failed:
                lines.append("| %s | %s | **failed**: %s |  |  |  |  |  |  |  |  |  |" % (label, b, run.failed[(b, n)].replace("|", "/")))
            elif b in run.start_failed:
                lines.append("| %s | %s | not run: broker did not start |  |  |  |  |  |  |  |  |  |" % (label, b))
        if with_ratio and "kafka" in per and "frieda" in per:
            k, f = per["kafka"], per["frieda"]
            lines.append("| %s | **Frieda/Kafka** | %s | %s | %s | %s | %s | %s |  | %s |  |  |" % (
                title_fn(n) if title_fn else n, ratio(f["throughput_rps"], k["throughput_rps"]), ratio(f["p50_us"], k["p50_us"]),
                ratio(f["p99_us"], k["p99_us"]), ratio(f["p999_us"], k["p999_us"]), ratio(f["p9999_us"], k["p9999_us"]),
                ratio(f["max_us"], k["max_us"]), ratio(f.get("broker_cpu_s_per_million"), k.get("broker_cpu_s_per_million"))))
    return "\n".join(lines)


def first_settings(run, names):
    for n in names:
        for b in BROKERS:
            r = run.results.get((b, n))
            if r:
                return r
    return None


def headline(run):
    """A few honest sentences from whatever is there."""
    out = []
    def both(n):
        return run.results.get(("kafka", n)), run.results.get(("frieda", n))
    for n in run.names("latency"):
        k, f = both(n)
        if k and f and k["p999_us"]:
            out.append("%s: p99.9 Frieda %s vs Kafka %s (%s)" % (n, fmt_us(f["p999_us"]), fmt_us(k["p999_us"]), ratio(f["p999_us"], k["p999_us"])))
    for n in ["yahoo-8p-120k", "e2e-10k", "unthrottled-1part"]:
        k, f = both(n)
        if k and f:
            if "unthrottled" in n:
                out.append("%s: throughput Frieda %s vs Kafka %s (%s)" % (n, fmt_rate(f["throughput_rps"]), fmt_rate(k["throughput_rps"]), ratio(f["throughput_rps"], k["throughput_rps"])))
            else:
                out.append("%s: p99 Frieda %s vs Kafka %s (%s)" % (n, fmt_us(f["p99_us"]), fmt_us(k["p99_us"]), ratio(f["p99_us"], k["p99_us"])))
    return out


def noise_notes(run):
    notes = []
    las = []
    for r in run.runs:
        for key in ("loadavg_before", "loadavg_after"):
            if key in r:
                try:
                    las.append(float(r[key].split()[0]))
                except (ValueError, IndexError):
                    pass
    cores = run.machine.get("cores") or 1
    if las:
        notes.append("1-minute load average during the runs: min %.1f, median %.1f, max %.1f on %d cores "
                     "(the broker and the load generator alone account for up to ~%d)." % (
                         min(las), sorted(las)[len(las) // 2], max(las), cores, cores))
        if max(las) > cores * 1.5:
            notes.append("**Noisy run**: other work was using the machine (load well above the core count); "
                         "treat the numbers as indicative only, compare ratios not absolutes.")
    gen_cpu = [r.get("client_cpu_s", 0) / max(r.get("duration_s", 1), 0.001) for r in run.results.values()]
    if gen_cpu:
        notes.append("The load generator itself used %.2f cores on average over the measured windows (max %.2f); "
                     "it shares the 2 cores with the broker." % (sum(gen_cpu) / len(gen_cpu), max(gen_cpu)))
    restarts = [e for e in run.events if e.get("event") == "restart"]
    if restarts:
        notes.append("**Broker restarts during the run**: %s." % ", ".join("%s at +%ds" % (e["broker"], e["t"] - run.events[0]["t"]) for e in restarts))
    return notes


def report_md(run, plots):
    m, s = run.machine, run.settings
    L = []
    L.append("# Frieda vs Apache Kafka: benchmark report (%s, `scripts/bench --%s`)" % (s.get("stamp", "?"), s.get("mode", "?")))
    L.append("")
    L.append("Same machine, same load generator (`frieda-bench`, open loop, latency from each record's scheduled send time, "
             "microsecond HdrHistogram), one broker at a time, each started fresh. Ratios are Frieda/Kafka: "
             "below 1× is better for latency and CPU, above 1× is better for throughput.")
    L.append("")
    hl = headline(run)
    if hl:
        L.append("**Headline** (this run only):")
        L.append("")
        for h in hl:
            L.append("- " + h)
        L.append("")
    L.append("## Setup")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    L.append("| machine | %s cores (%s), %s MiB RAM, kernel %s |" % (m.get("cores"), m.get("cpu"), m.get("mem_mib"), m.get("kernel")))
    L.append("| Apache Kafka | %s (Maven Central jars), KRaft single node, %s, Java: %s; 127.0.0.1:%s |" % (
        m.get("kafka_version"), s.get("kafka_heap"), m.get("java"), s.get("kafka_port")))
    L.append("| Frieda | `%s` (%s, sha256 %s%s); 127.0.0.1:%s |" % (
        m.get("frieda_bin"), m.get("frieda_version"), m.get("frieda_sha256") or "?",
        ", source " + m["frieda_rev"] if m.get("frieda_rev") else "", s.get("frieda_port")))
    L.append("| harness | git %s%s |" % (m.get("git_rev"), " (dirty tree)" if m.get("git_dirty") else ""))
    L.append("| load generator | frieda-bench (tokio + kafka-protocol), %s |" % m.get("rustc"))
    L.append("| durability | RF=1, no forced fsync on either broker (Kafka's default; Frieda's default), so acks=all means "
             "appended to the page cache; the `fsync-*` scenario (full run) sets `flush.messages=1` on both |")
    L.append("| topics | created fresh per scenario by CreateTopics with the same settings on both brokers |")
    L.append("| client | one connection per producer, max 5 requests in flight, linger 0, batch.size 16384 B, "
             "no compression, no idempotence, pacing tick 100 µs (records due within a tick go together); "
             "errors are not retried, they are counted |")
    L.append("| durations | %ss warm-up + %ss measured per latency scenario; trajectory steps %ss + %ss; "
             "unthrottled %ss + %ss |" % (s.get("warmup_s"), s.get("duration_s"), s.get("traj_warmup_s"), s.get("traj_duration_s"),
                                          s.get("traj_warmup_s"), s.get("unthrottled_duration_s")))
    if run.roof_net or run.roof_disk:
        L.append("| roofs | loopback TCP %s; sequential write + fdatasync %s (page cache %s) |" % (
            "%.2f GB/s" % (run.roof_net["bytes_per_s"] / 1e9) if run.roof_net else "–",
            "%.0f MB/s" % (run.roof_disk["synced_bytes_per_s"] / 1e6) if run.roof_disk else "–",
            "%.0f MB/s" % (run.roof_disk["buffered_bytes_per_s"] / 1e6) if run.roof_disk else "–"))
    end = [e for e in run.events if e.get("event") == "end"]
    if end:
        L.append("| wall time | %d s for the whole run |" % end[0]["total_s"])
    L.append("")
    notes = noise_notes(run)
    if s.get("port_note"):
        notes.append(s["port_note"])
    if notes:
        L.append("**Noise.** " + " ".join(notes))
        L.append("")
    if run.start_failed:
        L.append("**Not run**: %s did not start (see raw/bench.log)." % ", ".join(sorted(run.start_failed)))
        L.append("")

    def section(title, kind, text, plot_names=()):
        names = run.names(kind)
        if not names:
            return
        L.append("## " + title)
        L.append("")
        L.append(text)
        r = first_settings(run, names)
        if r and kind != "trajectory":
            L.append("")
            L.append("Settings: " + settings_line(r) + ("" if len(names) == 1 else " (producers/record size per row)") + ".")
        L.append("")
        L.append(table(run, names))
        L.append("")
        for p in plot_names:
            if p in plots:
                L.append("![%s](plots/%s)" % (p, p))
                L.append("")

    lat_plots = sorted([p for p in plots if p.startswith("latency-percentiles-")], key=lambda p: int(re.search(r"(\d+)p", p).group(1)))
    section("Percentile latencies (thesis figs. 4.6-4.9)", "latency",
            "Fixed aggregate offered rate split evenly over N producers: 100 B records at 50,000 records/s and 10 KiB records "
            "at 5,000 records/s, acks=all, 1 partition. The 64-producer row repeats the thesis's stress point, where Kafka "
            "timed out there.", lat_plots + ["cdf-lat-100B-8p.png"])
    section("Yahoo!-style fixed rate (thesis 4.3.2)", "yahoo",
            "8 producers at 120,000 records/s aggregate, 100 B records, acks=all: the producer side of the YSB run "
            "(no stream processor).", ["cdf-yahoo-8p-120k.png"])
    section("End-to-end latency", "e2e",
            "One producer at a fixed rate writes its scheduled send time (ns) into each value; a consumer in the same "
            "process long-polls Fetch (max wait 500 ms, min bytes 1) and charges each record from its scheduled send "
            "time to the moment it is decoded.", ["cdf-e2e-10k.png"])
    # produce-ack part of e2e
    for n in run.names("e2e"):
        rows = [(b, run.results[(b, n)].get("produce_ack")) for b in BROKERS if (b, n) in run.results]
        rows = [(b, pa) for b, pa in rows if pa]
        if rows:
            L.append("Produce→ack latency of the same records: " + "; ".join(
                "%s p50 %s, p99 %s, p99.9 %s, max %s" % (b, fmt_us(pa["p50_us"]), fmt_us(pa["p99_us"]), fmt_us(pa["p999_us"]), fmt_us(pa["max_us"]))
                for b, pa in rows) + ".")
            L.append("")
    section("Unthrottled throughput", "unthrottled",
            "4 producers sending as fast as 5 in-flight requests per connection allow, each request one full 16 KiB batch "
            "per partition, acks=1; 1 partition and 16 partitions. Latency here is queueing under saturation, not a "
            "service level.")
    section("Throughput vs producers and roofline trajectory (thesis figs. 4.11 and 4.1)", "trajectory",
            "Unthrottled, acks=all, 100 B records, 1 partition, at each producer count. The roofline plots achieved "
            "payload bandwidth against the machine's measured roofs: loopback TCP, sequential disk write with fdatasync, "
            "and each broker's CPU roof (its measured payload bytes per broker CPU-second × %s cores). The CPU roof "
            "assumes the broker has every core; here the load generator runs on the same cores, so the achieved "
            "points stay well below it." % run.machine.get("cores", "?"),
            ["throughput-vs-producers.png", "roofline.png"])
    section("fsync before acknowledge", "fsync",
            "`flush.messages=1` on the topic for both brokers: every acknowledged record is on disk. Kafka flushes per "
            "append; Frieda commits a group of appends with one fsync.")
    # cross-check
    xnames = run.names("xcheck")
    pp_rows = [(b, n, p) for (b, n), p in sorted(run.pp.items())]
    pp_failed = [(b, n, msg) for (b, n), msg in run.failed.items() if run.kind.get(n) == "pp"]
    if xnames or pp_rows or pp_failed:
        L.append("## Cross-check: Kafka's ProducerPerformance vs frieda-bench")
        L.append("")
        L.append("The same settings through both tools against each broker: 1 producer, 1 partition, 100 B records, "
                 "(a) unthrottled acks=1, (b) 50,000 records/s acks=all. ProducerPerformance (`linger.ms=0 "
                 "enable.idempotence=false`) reports whole milliseconds, measures from its `send()` call (so stalls "
                 "of its own throttled send loop are not charged: coordinated omission) and, with --warmup-records, a "
                 "steady-state line, used here. Its throttler sleeps in steps of at least 2 ms, so at a fixed rate it "
                 "sends bursts; `xcheck-50k` gives frieda-bench the same 2 ms pacing (`--tick-us 2000`), "
                 "`xcheck-50k-smooth` shows our default 100 µs pacing (many more, smaller requests: the load every "
                 "other fixed-rate scenario uses). Unthrottled, ProducerPerformance is usually limited by its own "
                 "client (one sender thread, on a 2-core machine shared with the broker), frieda-bench by the broker.")
        L.append("")
        L.append("| broker | tool | load | throughput | p50 | p99 | p99.9 | max | records/request | broker CPU s |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for b in BROKERS:
            for n, load in (("xcheck-unthrottled", "unthrottled, acks=1"), ("xcheck-50k", "50k/s, acks=all, 2 ms bursts"),
                            ("xcheck-50k-smooth", "50k/s, acks=all, 100 µs pacing")):
                r = run.results.get((b, n))
                if r:
                    L.append("| %s | frieda-bench | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        b, load, fmt_rate(r["throughput_rps"]), fmt_us(r["p50_us"]), fmt_us(r["p99_us"]), fmt_us(r["p999_us"]),
                        fmt_us(r["max_us"]), r.get("records_per_request", "–"), r.get("broker_cpu_s", "–")))
                elif (b, n) in run.failed:
                    L.append("| %s | frieda-bench | %s | **failed**: %s | | | | | | |" % (b, load, run.failed[(b, n)].replace("|", "/")))
            for n, load in (("pp-unthrottled", "unthrottled, acks=1"), ("pp-50k", "50k/s, acks=all, 2 ms bursts")):
                p = run.pp.get((b, n))
                if p:
                    L.append("| %s | ProducerPerformance%s | %s | %s | %d ms | %d ms | %d ms | %.0f ms | – | %s |" % (
                        b, " (steady state)" if p.get("steady_state") else "", load, fmt_rate(p["throughput_rps"]), p["p50_ms"], p["p99_ms"],
                        p["p999_ms"], p["max_ms"], p.get("broker_cpu_s", "–")))
                elif (b, n) in run.failed:
                    L.append("| %s | ProducerPerformance | %s | **failed**: %s | | | | | | |" % (b, load, run.failed[(b, n)]))
        L.append("")
    try:
        notes_md = open(os.path.join(os.path.dirname(run.raw), "notes.md")).read().strip()
    except OSError:
        notes_md = ""
    if notes_md:
        L.append("## Notes on this run (written by hand)")
        L.append("")
        L.append(notes_md)
        L.append("")
    L.append("## Files")
    L.append("")
    L.append("`summary.json` (one row per scenario and broker: name, broker, acks, record_size, producers, offered_rate, "
             "throughput_rps, p50_us, p99_us, p999_us, p9999_us, max_us, broker_cpu_s_per_million), `plots/*.png`, and, "
             "not committed, `raw/` (every frieda-bench JSON with the full percentile distribution and error detail, "
             "ProducerPerformance output, broker logs' pointers, `runs.jsonl` with each command line and load average).")
    L.append("")
    return "\n".join(L)


# ------------------------------------------------------------------ plots

def nines(p):
    return -math.log10(max(1e-7, 1 - p / 100.0)) if p < 100 else None


def make_plots(run, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    made = []
    colors = {"kafka": "#d62728", "frieda": "#1f77b4"}
    ticks = [0, 1, 2, 3, 4, 5]
    tick_labels = ["0", "90", "99", "99.9", "99.99", "99.999"]

    def pct_curve(ax, r, **kw):
        pts = [(nines(x["p"]), x["us"]) for x in r.get("percentiles", []) if x["p"] < 100]
        pts = [(a, b) for a, b in pts if a is not None and b > 0]
        if pts:
            ax.plot([a for a, _ in pts], [b / 1000 for _, b in pts], **kw)

    # percentile curves per producer count
    by_n = {}
    for (b, n), r in run.results.items():
        if run.kind.get(n) == "latency":
            by_n.setdefault(r["producers"], []).append((b, n, r))
    for npr, rows in sorted(by_n.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for b, n, r in sorted(rows, key=lambda x: (x[2]["record_size"], x[0])):
            ls = "-" if r["record_size"] <= 1000 else "--"
            pct_curve(ax, r, color=colors.get(b), ls=ls, marker=".", ms=3,
                      label="%s, %s B @ %s" % (b, r["record_size"], fmt_rate(r["offered_rate"])))
        ax.set_yscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels(tick_labels)
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency (ms, log)")
        ax.set_title("Percentile latencies, %d producers, acks=all (open loop)" % npr)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        name = "latency-percentiles-%dp.png" % npr
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=110)
        plt.close(fig)
        made.append(name)

    # CDFs
    for n in ["lat-100B-8p", "yahoo-8p-120k", "e2e-10k", "lat-100B-64p"]:
        rows = [(b, run.results[(b, n)]) for b in BROKERS if (b, n) in run.results]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for b, r in rows:
            pts = [(x["us"] / 1000, x["p"] / 100) for x in r.get("percentiles", []) if x["us"] > 0]
            if pts:
                ax.plot([a for a, _ in pts], [c for _, c in pts], marker=".", ms=3, color=colors.get(b), label=b)
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms, log)")
        ax.set_ylabel("fraction of records")
        ax.set_title("Latency CDF: %s" % n)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        name = "cdf-%s.png" % n
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=110)
        plt.close(fig)
        made.append(name)

    # throughput vs producers
    traj = {b: sorted([r for (bb, n), r in run.results.items() if bb == b and run.kind.get(n) == "trajectory"],
                      key=lambda r: r["producers"]) for b in BROKERS}
    if any(traj.values()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for b, rows in traj.items():
            if rows:
                ax.plot([r["producers"] for r in rows], [r["throughput_rps"] for r in rows], marker="o", color=colors.get(b), label=b)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("producers (connections)")
        ax.set_ylabel("records/s (100 B, acks=all)")
        ax.set_title("Throughput vs producers (unthrottled)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "throughput-vs-producers.png"), dpi=110)
        plt.close(fig)
        made.append("throughput-vs-producers.png")

        # roofline trajectory
        fig, ax = plt.subplots(figsize=(7, 4.5))
        cores = run.machine.get("cores") or 1
        allx = [r["producers"] for rows in traj.values() for r in rows]
        xs = [min(allx) / 1.3, max(allx) * 1.3]
        if run.roof_net:
            ax.plot(xs, [run.roof_net["bytes_per_s"] / 1e6] * 2, color="k", ls="-", lw=1)
            ax.text(xs[0], run.roof_net["bytes_per_s"] / 1e6 * 1.08, "loopback TCP %.0f MB/s" % (run.roof_net["bytes_per_s"] / 1e6), fontsize=8)
        if run.roof_disk:
            v = run.roof_disk["synced_bytes_per_s"] / 1e6
            ax.plot(xs, [v] * 2, color="k", ls="--", lw=1)
            ax.text(xs[0], v * 1.08, "disk write+fdatasync %.0f MB/s" % v, fontsize=8)
        for b, rows in traj.items():
            if not rows:
                continue
            ach = [r["throughput_rps"] * r["record_size"] / 1e6 for r in rows]
            ax.plot([r["producers"] for r in rows], ach, marker="o", color=colors.get(b), label="%s achieved" % b)
            per_cpu = [r["throughput_rps"] * r["record_size"] * r["duration_s"] / r["broker_cpu_s"] / 1e6
                       for r in rows if r.get("broker_cpu_s")]
            if per_cpu:
                roof = max(per_cpu) * cores
                ax.plot(xs, [roof] * 2, color=colors.get(b), ls=":", lw=1.5)
                ax.text(xs[1], roof * 1.08, "%s CPU roof %.0f MB/s" % (b, roof), fontsize=8, ha="right", color=colors.get(b))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("producers (concurrency)")
        ax.set_ylabel("payload MB/s (log)")
        ax.set_title("Roofline trajectory (100 B records, acks=all, 1 partition)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "roofline.png"), dpi=110)
        plt.close(fig)
        made.append("roofline.png")
    return made


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__)
        sys.exit(2)
    d = args[0]
    run = Run({"_raw": os.path.join(d, "raw")})
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary_json(run), f, indent=1)
        f.write("\n")
    plots = []
    if "--no-plots" not in sys.argv:
        try:
            plots = make_plots(run, os.path.join(d, "plots"))
        except ImportError as e:
            print("no plots (%s)" % e, file=sys.stderr)
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write(report_md(run, plots))
    print("wrote %s/summary.json, %s/report.md, %d plots" % (d, d, len(plots)))


if __name__ == "__main__":
    main()
