#!/usr/bin/env python3
"""Report of a `scripts/bench --goals` or `--ablation` run: medians over the repeats.

    goals.py RESULTS_DIR

Reads RESULTS_DIR/raw/: runs.jsonl (what ran, repeat, configuration, exit codes, load average),
settings.json, machine.json, config-*.toml (ablation) and the frieda-bench JSON of every run.
Writes RESULTS_DIR/report.md and RESULTS_DIR/summary.json. Standard library only.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import acks_str, load_json, load_lines  # noqa: E402  (the full-run report's readers)

BROKERS = ["kafka", "frieda"]
METRICS = ["throughput_rps", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us", "errors", "broker_cpu_s_per_million"]
SETTING_KEYS = ["acks", "record_size", "producers", "partitions", "offered_rate"]
GOAL_CELLS = ["g-lat-100B-1p"] + ["g-lat-100B-%dp" % n for n in (2, 4, 8, 16)] + \
    ["g-lat-10KiB-%dp" % n for n in (2, 4, 8, 16)] + ["g-lat-100B-64p", "g-unth-1part", "g-unth-16part",
                                                      "g-nofsync-16p", "g-fsync-16p"]
GOAL2_CELLS = ["g-lat-100B-%dp" % n for n in (2, 4, 8, 16)] + ["g-lat-10KiB-%dp" % n for n in (2, 4, 8, 16)]
ABL_CELLS = ["a-lat-100B-1p", "a-lat-100B-8p", "a-lat-10KiB-8p", "a-unth-16part", "a-fsync-16p", "a-e2e-10k"]
# ablation table columns: (title, cell, metric)
ABL_COLUMNS = [("1p 100 B 50k/s p99.9 µs", "a-lat-100B-1p", "p999_us"),
               ("1p CPU s/M", "a-lat-100B-1p", "broker_cpu_s_per_million"),
               ("8p 100 B 50k/s p99.9 µs", "a-lat-100B-8p", "p999_us"),
               ("8p 10 KiB 5k/s p99.9 µs", "a-lat-10KiB-8p", "p999_us"),
               ("unthrottled 16 part. rec/s", "a-unth-16part", "throughput_rps"),
               ("fsync 16p rec/s", "a-fsync-16p", "throughput_rps"),
               ("e2e 10k/s p99.9 µs", "a-e2e-10k", "p999_us")]


def border(b):
    return (BROKERS.index(b) if b in BROKERS else len(BROKERS), b)


def median(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    m = statistics.median(vals)
    return int(m) if all(isinstance(v, int) for v in vals) and m == int(m) else m


# ---------------------------------------------------------------- formatting
def f_int(v):
    return "–" if v is None else "{:,}".format(int(round(v)))


def f_rate(v):
    return "–" if v is None else "{:,.0f}".format(v)


def f_cpu(v):
    return "–" if v is None else "%.1f" % v


def f_metric(m, v):
    if m == "broker_cpu_s_per_million":
        return f_cpu(v)
    if m == "throughput_rps":
        return f_rate(v)
    return f_int(v)


def ratio(f, k):
    return f / k if f is not None and k else None


def f_ratio(r):
    return "–" if r is None else "%.2f×" % r


def f_delta(v, base):
    if v is None or not base:
        return ""
    return " (%+.0f%%)" % ((v - base) / base * 100)


def verdict(ok):
    return "NO DATA" if ok is None else ("**MET**" if ok else "**NOT MET**")


# ---------------------------------------------------------------- data
class Data:
    def __init__(self, out):
        self.out = out
        raw = os.path.join(out, "raw")
        self.raw = raw
        self.settings = load_json(os.path.join(raw, "settings.json"), {})
        self.machine = load_json(os.path.join(raw, "machine.json"), {})
        self.events = []
        self.runs = {}   # (broker, config, scenario) -> [run dict, ...] by repeat
        for r in load_lines(os.path.join(raw, "runs.jsonl")):
            if "event" in r:
                self.events.append(r)
                continue
            if r.get("kind") == "burnin":   # unreported load after each broker start
                self.burnins = getattr(self, "burnins", 0) + 1
                continue
            name = r["name"]
            m = re.match(r"^(.*)-r(\d+)$", name)
            scen, rep = (m.group(1), int(m.group(2))) if m else (name, 1)
            rep = r.get("repeat", rep)
            config = r.get("config", "")
            if config and scen.startswith(config + "-"):
                scen = scen[len(config) + 1:]
            run = {"name": name, "repeat": rep, "meta": r, "result": None, "failure": None}
            if r.get("rc") == 0:
                run["result"] = load_json(os.path.join(raw, r.get("json", "")))
                if run["result"] is None:
                    run["failure"] = "no JSON output"
            else:
                err = r.get("error", "")
                try:
                    with open(os.path.join(raw, "%s-%s.stderr" % (r["broker"], name))) as f:
                        err = (f.read().strip().splitlines() or [err])[-1][:200]
                except OSError:
                    pass
                run["failure"] = "exit %s %s" % (r.get("rc"), err)
            self.runs.setdefault((r["broker"], config, scen), []).append(run)
        for v in self.runs.values():
            v.sort(key=lambda x: x["repeat"])
        self.mode = self.settings.get("mode") or (
            "ablation" if any(k[1] for k in self.runs) else "goals")

    def ok_results(self, key):
        return [r["result"] for r in self.runs.get(key, []) if r["result"]]

    def med(self, broker, scen, metric, config=""):
        return median([r.get(metric) for r in self.ok_results((broker, config, scen))])

    def errors_total(self, broker, scen, config=""):
        res = self.ok_results((broker, config, scen))
        return sum(r.get("errors", 0) for r in res) if res else None

    def setting(self, key):
        """Settings of a scenario from its first result, plus the fsync policy from the command line."""
        res = self.ok_results(key)
        runs = self.runs.get(key, [])
        s = {k: (res[0].get(k) if res else None) for k in SETTING_KEYS + ["warmup_s", "duration_s"]}
        cmd = runs[0]["meta"].get("cmd", "") if runs else ""
        s["fsync"] = "flush.messages=1" if "flush.messages=1" in cmd else "none (page cache)"
        s["cmd"] = cmd
        return s

    def scenario_order(self, names):
        order = GOAL_CELLS if self.mode == "goals" else ABL_CELLS
        return sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), n))

    def summary(self):
        rows = []
        order = GOAL_CELLS + ABL_CELLS
        keys = sorted(self.runs, key=lambda k: (k[1] != "baseline", k[1], order.index(k[2]) if k[2] in order
                                                else len(order), k[2], border(k[0])))
        for key in keys:
            b, config, scen = key
            res = self.ok_results(key)
            if not res:
                continue
            row = {"name": scen, "broker": b}
            if self.mode == "ablation":
                row["config"] = config
            row["repeats"] = len(res)
            first = res[0]
            row.update({"acks": acks_str(first["acks"]), "record_size": first["record_size"],
                        "producers": first["producers"], "partitions": first["partitions"],
                        "offered_rate": first["offered_rate"]})
            for m in METRICS:
                row[m] = median([r.get(m) for r in res])
            rows.append(row)
        return {"scenarios": rows}


# ---------------------------------------------------------------- report parts
def loads_of(d):
    out = []
    for runs in d.runs.values():
        for r in runs:
            la = r["meta"].get("loadavg_before")
            if la:
                out.append(float(la.split()[0]))
    return out


def load_note(d):
    cores = d.machine.get("cores") or 2
    loads = loads_of(d)
    if not loads:
        return []
    high = [x for x in loads if x > cores]
    s = "1-minute load average at the start of the runs: %.2f to %.2f (median %.2f) on %d cores." % (
        min(loads), max(loads), statistics.median(loads), cores)
    if high:
        s += " **%d of %d runs started with a load above the core count: those numbers are noise-prone.**" % (
            len(high), len(loads))
    return [s, ""]


def start_error(e):
    """The broker's own message, without the log line's timestamp."""
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z\s+", "", e.get("error", "")).strip()


def warnings(d):
    out = []
    for (b, config, scen), runs in sorted(d.runs.items()):
        label = "%s %s%s" % (b, config + " " if config else "", scen)
        for r in runs:
            if r["failure"]:
                out.append("%s repeat %d failed: %s" % (label, r["repeat"], r["failure"]))
            res = r["result"]
            if not res:
                continue
            if res.get("errors"):
                out.append("%s repeat %d: %d errors (failed records are not in the latency histogram)" % (
                    label, r["repeat"], res["errors"]))
            if res.get("offered_rate") and res.get("throughput_rps", 0) < 0.95 * res["offered_rate"]:
                out.append("%s repeat %d: acknowledged %s rec/s of %s offered: the broker fell behind" % (
                    label, r["repeat"], f_rate(res["throughput_rps"]), f_rate(res["offered_rate"])))
    for e in d.events:
        if e.get("event") == "start_failed" and e.get("config"):
            continue   # listed under the ablation table
        if e.get("event") == "start_failed":
            out.append("%s did not start in repeat %s%s" % (
                e.get("broker"), e.get("repeat", "?"), ": " + start_error(e) if e.get("error") else ""))
        elif e.get("event") == "restart":
            out.append("%s was restarted mid-run (crashed or was killed) at %s" % (e.get("broker"), e.get("t")))
    return out


def settings_section(d, keys):
    st = d.settings
    lines = ["## Settings", "",
             "Every cell: fresh topic (created with the settings below, deleted afterwards), RF 1, "
             "load generator `frieda-bench` (open loop, latency from the scheduled send time), "
             "fixed-rate cells %gs measured after %gs warm-up, unthrottled cells %gs after %gs; "
             "%d repeat%s; the broker is started fresh for each %s." % (
                 st.get("duration_s", 0), st.get("warmup_s", 0), st.get("unthrottled_duration_s", 0),
                 st.get("unthrottled_warmup_s", 0), st.get("repeat", 1), "" if st.get("repeat", 1) == 1 else "s",
                 "broker and repeat (order alternated: kafka, frieda, then frieda, kafka, ...)" if d.mode == "goals"
                 else "configuration and repeat"), "",
             "| scenario | acks | record size | partitions | producers | offered rate | warm-up + measured | fsync | command |",
             "|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for key in keys:
        scen = key[2]
        if scen in seen:
            continue
        seen.add(scen)
        s = d.setting(key)
        rate = "unthrottled" if s["offered_rate"] == 0 else (f_rate(s["offered_rate"]) + "/s" if s["offered_rate"] else "–")
        dur = "%gs + %gs" % (s["warmup_s"], s["duration_s"]) if s["duration_s"] is not None else "–"
        cmd = re.sub(r"-r\d+\b", "-r<N>", s["cmd"])
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | `%s` |" % (
            scen, acks_str(s["acks"]) if s["acks"] is not None else "–", "%s B" % s["record_size"] if s["record_size"] else "–",
            s["partitions"] or "–", s["producers"] or "–", rate, dur, s["fsync"], cmd))
    return lines + [""]


def runs_section(d, keys):
    lines = ["## Individual runs", "",
             "The values the medians are taken from; load average (1, 5, 15 min) before → after each run.", "",
             "| scenario | broker | repeat | throughput rec/s | p50 | p99 | p99.9 | p99.99 | max (µs) | errors | CPU s/M | load before → after | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        b, config, scen = key
        for r in d.runs.get(key, []):
            m, res = r["meta"], r["result"]
            name = "%s %s" % (config, scen) if config else scen
            la = "%s → %s" % (m.get("loadavg_before", "–"), m.get("loadavg_after", "–"))
            if res:
                vals = " | ".join(f_metric(x, res.get(x)) for x in METRICS)
            else:
                vals = "failed: %s | | | | | | | " % (r["failure"] or "").replace("|", "/")
            lines.append("| %s | %s | %d | %s | %s | %s |" % (name, b, r["repeat"], vals, la, m.get("wall_s", "–")))
    return lines + [""]


def machine_section(d):
    mc, st = d.machine, d.settings
    lines = ["## Machine and versions", "",
             "| | |", "|---|---|",
             "| CPU | %s, %s cores, %s MiB RAM |" % (mc.get("cpu", "?"), mc.get("cores", "?"), mc.get("mem_mib", "?")),
             "| kernel | %s |" % mc.get("kernel", "?"),
             "| Frieda | `%s` (%s), sha256 %s…, source rev %s, repo at %s%s |" % (
                 st.get("frieda_bin", mc.get("frieda_bin", "?")), mc.get("frieda_version", "?"), mc.get("frieda_sha256", "?"),
                 mc.get("frieda_rev") or "–", mc.get("git_rev", "?"), " (dirty)" if mc.get("git_dirty") else ""),
             "| Kafka | %s, heap `%s` |" % (mc.get("kafka_version") or "–", st.get("kafka_heap", "?")),
             "| Java / Rust | %s / %s |" % (mc.get("java", "?"), mc.get("rustc", "?")),
             "| ports | Kafka %s, Frieda %s. %s |" % (st.get("kafka_port", "?"), st.get("frieda_port", "?"), st.get("port_note", "")),
             "| load at start / end | %s / %s |" % (st.get("loadavg_start", "?"), next(
                 (e.get("loadavg_end") for e in d.events if e.get("event") == "end"), "?")),
             "| total time | %s s |" % next((e.get("total_s") for e in d.events if e.get("event") == "end"), "?"),
             ""]
    return lines


def reproduce_section(d):
    return ["## Reproduce", "", "```bash", "cargo build --release -p frieda", d.settings.get("reproduce", "scripts/bench --" + d.mode),
            "python3 bench/goals.py RESULTS_DIR   # rebuilds report.md and summary.json from raw/", "```",
            "", "(this run: `%s`)" % d.settings.get("argv", "?"), ""]


def notes_section(d):
    w = warnings(d)
    if not w:
        return ["No failed runs, no errors, no restarts; every fixed-rate cell got ≥ 95% of its offered rate.", ""]
    return ["### Notes", ""] + ["- " + x for x in w] + [""]


# ---------------------------------------------------------------- goals
def goals_report(d):
    K, F = "kafka", "frieda"
    med = d.med
    lines = ["# Performance goals: Frieda vs Apache Kafka %s" % (d.machine.get("kafka_version") or "?"), "",
             "Run `%s`: %d repeat%s, both brokers in each, one at a time. Every number is the **median over the "
             "repeats** (individual values at the end). Ratio = Frieda / Kafka: below 1 is better for latency and "
             "CPU, above 1 for throughput. Latencies in µs." % (
                 d.settings.get("stamp", "?"), d.settings.get("repeat", 1), "" if d.settings.get("repeat", 1) == 1 else "s"), ""]
    lines += load_note(d)
    rows = []

    # 1. one producer, 50k/s
    c = "g-lat-100B-1p"
    k9, f9, k99, f99 = med(K, c, "p999_us"), med(F, c, "p999_us"), med(K, c, "p9999_us"), med(F, c, "p9999_us")
    ok = None if None in (k9, f9, k99, f99) else (f9 <= k9 / 10 and f9 <= 1000 and f99 <= k99 / 10)
    rows.append(("1", "1 producer, 1 partition, 100 B at 50k/s, acks=all (`%s`)" % c,
                 "p99.9 ≤ Kafka/10 and ≤ 1,000; p99.99 ≤ Kafka/10",
                 "p99.9 %s<br>p99.99 %s" % (f_int(k9), f_int(k99)), "p99.9 %s<br>p99.99 %s" % (f_int(f9), f_int(f99)),
                 "%s<br>%s" % (f_ratio(ratio(f9, k9)), f_ratio(ratio(f99, k99))), verdict(ok)))

    # 2. several producers, small and large records
    g2 = []
    for c in GOAL2_CELLS:
        k, f = med(K, c, "p999_us"), med(F, c, "p999_us")
        g2.append((c, k, f, ratio(f, k)))
    rs = [x[3] for x in g2]
    if any(r is None for r in rs):
        ok = None
    else:
        ok = all(r < 1 for r in rs) and sum(r <= 0.2 for r in rs) > len(rs) / 2
    known = [r for r in rs if r is not None]
    rows.append(("2", "2, 4, 8, 16 producers: 100 B at 50k/s and 10 KiB at 5k/s (8 cells)",
                 "p99.9 < Kafka's in every cell, ≤ 0.2× in more than half",
                 "see below", "below Kafka in %d/8, ≤ 0.2× in %d/8" % (sum(r < 1 for r in known), sum(r <= 0.2 for r in known)),
                 ("%s … %s" % (f_ratio(min(known)), f_ratio(max(known)))) if known else "–", verdict(ok)))

    # 3. unthrottled throughput
    t = [(c, med(K, c, "throughput_rps"), med(F, c, "throughput_rps")) for c in ("g-unth-1part", "g-unth-16part")]
    rr = [ratio(f, k) for _, k, f in t]
    ok = None if None in rr else all(r >= 1 for r in rr)
    aim = "" if None in rr else ("<br>2× aim met" if all(r >= 2 for r in rr) else "<br>2× aim not met")
    rows.append(("3", "unthrottled, 4 producers, acks=all, 1 and 16 partitions (rec/s)", "throughput ≥ Kafka's (aim 2×)",
                 "1 part. %s<br>16 part. %s" % (f_rate(t[0][1]), f_rate(t[1][1])),
                 "1 part. %s<br>16 part. %s" % (f_rate(t[0][2]), f_rate(t[1][2])),
                 "%s<br>%s" % (f_ratio(rr[0]), f_ratio(rr[1])), verdict(ok) + aim))

    # 4. 64 producers
    c = "g-lat-100B-64p"
    f9, fe, k9, ke = med(F, c, "p999_us"), d.errors_total(F, c), med(K, c, "p999_us"), d.errors_total(K, c)
    ffail = sum(1 for r in d.runs.get((F, "", c), []) if not r["result"])   # a failed run counts against the goal
    ok = None if f9 is None else (f9 <= 5000 and fe == 0 and ffail == 0)
    rows.append(("4", "64 producers, 100 B at 50k/s aggregate (`%s`)" % c, "p99.9 ≤ 5,000 and no errors (all repeats)",
                 "p99.9 %s<br>errors %s" % (f_int(k9), f_int(ke)),
                 "p99.9 %s<br>errors %s%s" % (f_int(f9), f_int(fe), "<br>**%d failed run(s)**" % ffail if ffail else ""),
                 f_ratio(ratio(f9, k9)), verdict(ok)))

    # 5. CPU per million records
    c = "g-lat-100B-1p"
    kc, fc = med(K, c, "broker_cpu_s_per_million"), med(F, c, "broker_cpu_s_per_million")
    r = ratio(fc, kc)
    rows.append(("5", "broker CPU s per million records, 1 producer at 50k/s (`%s`)" % c, "≤ 1/3 of Kafka's (≤ 0.33×)",
                 f_cpu(kc), f_cpu(fc), f_ratio(r), verdict(None if r is None else r <= 1 / 3)))

    # 6. fsync per message vs none, Frieda against itself
    kf, kn = med(K, "g-fsync-16p", "throughput_rps"), med(K, "g-nofsync-16p", "throughput_rps")
    ff, fn = med(F, "g-fsync-16p", "throughput_rps"), med(F, "g-nofsync-16p", "throughput_rps")
    r = ratio(ff, fn)
    rows.append(("6", "`flush.messages=1`, 16 producers unthrottled, 1 partition (rec/s)",
                 "Frieda with fsync ≥ 0.5 × Frieda without",
                 "fsync %s / none %s = %s" % (f_rate(kf), f_rate(kn), f_ratio(ratio(kf, kn))),
                 "fsync %s / none %s = **%s**" % (f_rate(ff), f_rate(fn), f_ratio(r)),
                 "fsync: %s" % f_ratio(ratio(ff, kf)), verdict(None if r is None else r >= 0.5)))

    lines += ["## Goals", "", "| # | goal | target (Frieda) | Kafka | Frieda | Frieda/Kafka | verdict |",
              "|---|---|---|---|---|---|---|"]
    lines += ["| %s |" % " | ".join(r) for r in rows]
    floors = [load_json(os.path.join(d.raw, f)) for f in sorted(os.listdir(d.raw)) if f.startswith("roof-wake")]
    floors = [x for x in floors if x]
    if floors:
        m = lambda k: median([x[k] for x in floors])
        lines += ["", "### The machine's floor (`frieda-bench roof-wake`, no broker running, median of %d)" % len(floors), "",
                  "A do-nothing loopback TCP echo (1 byte each way, blocking threads) at 10,000 round trips/s, "
                  "timed from each scheduled send like the load generator; and the overshoot of a 100 µs sleep. "
                  "No broker can show lower percentiles on this machine than its threads wake up.", "",
                  "| probe | p50 | p99 | p99.9 | p99.99 | max (µs) |", "|---|---|---|---|---|---|",
                  "| echo round trip | %s | %s | %s | %s | %s |" % tuple(f_int(m("echo_%s_us" % q)) for q in ("p50", "p99", "p999", "p9999", "max")),
                  "| 100 µs sleep overshoot | %s | %s | %s | %s | %s |" % tuple(f_int(m("sleep_overshoot_%s_us" % q)) for q in ("p50", "p99", "p999", "p9999", "max"))]
    lines += ["", "### Goal 2, cell by cell (p99.9 µs)", "", "| cell | Kafka | Frieda | Frieda/Kafka | below Kafka | ≤ 0.2× |",
              "|---|---|---|---|---|---|"]
    for c, k, f, r in g2:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (c, f_int(k), f_int(f), f_ratio(r),
                                                           "–" if r is None else ("yes" if r < 1 else "**no**"),
                                                           "–" if r is None else ("yes" if r <= 0.2 else "no")))
    lines += ["", "### Goal 5, every fixed-rate 100 B cell at 50k/s (broker CPU s per million records)", "",
              "| cell | Kafka | Frieda | Frieda/Kafka |", "|---|---|---|---|"]
    for c in ["g-lat-100B-%dp" % n for n in (1, 2, 4, 8, 16, 64)]:
        kc, fc = med(K, c, "broker_cpu_s_per_million"), med(F, c, "broker_cpu_s_per_million")
        lines.append("| %s | %s | %s | %s |" % (c, f_cpu(kc), f_cpu(fc), f_ratio(ratio(fc, kc))))
    lines += [""] + notes_section(d)

    # every scenario
    scens = d.scenario_order([k[2] for k in d.runs])
    lines += ["## All cells (medians)", "",
              "| scenario | broker | runs | throughput rec/s | p50 | p99 | p99.9 | p99.99 | max (µs) | errors | CPU s/M |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in scens:
        vals = {}
        for b in (K, F):
            runs = d.runs.get((b, "", s), [])
            if not runs:
                continue
            res = d.ok_results((b, "", s))
            vals[b] = {m: median([r.get(m) for r in res]) for m in METRICS}
            lines.append("| %s | %s | %d/%d | %s |" % (s, b, len(res), len(runs),
                                                       " | ".join(f_metric(m, vals[b][m]) for m in METRICS)))
        if K in vals and F in vals:
            lines.append("| | Frieda/Kafka | | %s | – | %s |" % (
                " | ".join(f_ratio(ratio(vals[F][m], vals[K][m])) for m in METRICS[:6]),
                f_ratio(ratio(vals[F][METRICS[7]], vals[K][METRICS[7]]))))
    lines.append("")
    keys = sorted(d.runs, key=lambda k: (scens.index(k[2]), border(k[0])))
    lines += settings_section(d, keys) + machine_section(d) + reproduce_section(d) + runs_section(d, keys)
    return lines


# ---------------------------------------------------------------- ablation
def ablation_report(d):
    configs = []   # in run order (the ABLATION array of scripts/bench)
    for c in [e.get("config") for e in d.events if e.get("event") in ("start", "start_failed")] + [k[1] for k in d.runs]:
        if c and c not in configs:
            configs.append(c)
    if "baseline" in configs:
        configs.remove("baseline")
        configs.insert(0, "baseline")
    failed_start = {e["config"]: start_error(e) for e in d.events if e.get("event") == "start_failed" and e.get("config")}

    def toml(c):
        try:
            with open(os.path.join(d.raw, "config-%s.toml" % c)) as f:
                body = "; ".join(x.strip() for x in f.read().splitlines() if x.strip())
        except OSError:
            body = "?"
        return "`%s`" % body if body else "(defaults)"

    lines = ["# Frieda ablation: one broker configuration at a time", "",
             "Run `%s`: Frieda only, restarted fresh with each configuration; %d repeat%s (medians when more than one). "
             "In parentheses: the change against `baseline`. Latency and CPU: lower is better; throughput: higher is "
             "better. CPU s/M = broker CPU seconds per million records." % (
                 d.settings.get("stamp", "?"), d.settings.get("repeat", 1), "" if d.settings.get("repeat", 1) == 1 else "s"), ""]
    lines += load_note(d)
    lines += ["| configuration | TOML | " + " | ".join(t for t, _, _ in ABL_COLUMNS) + " |",
              "|---|---|" + "---|" * len(ABL_COLUMNS)]
    for c in configs:
        has = any(d.ok_results(("frieda", c, cell)) for cell in ABL_CELLS)
        if not has and c in failed_start:
            lines.append("| %s | %s | %s |" % (c, toml(c), " | ".join(["did not start"] * len(ABL_COLUMNS))))
            continue
        cells = []
        for _, cell, m in ABL_COLUMNS:
            v = d.med("frieda", cell, m, c)
            if v is None:
                cells.append("failed" if d.runs.get(("frieda", c, cell)) else "–")
                continue
            base = d.med("frieda", cell, m, "baseline") if c != "baseline" else None
            cells.append(f_metric(m, v) + f_delta(v, base))
        lines.append("| %s | %s | %s |" % (c, toml(c), " | ".join(cells)))
    lines.append("")
    if failed_start:
        lines += ["Did not start (the broker rejected the configuration or crashed at start-up):", ""]
        lines += ["- `%s`: %s" % (c, e or "?") for c, e in failed_start.items()] + [""]
    lines += notes_section(d)

    lines += ["## All cells (medians)", "",
              "| configuration | cell | runs | throughput rec/s | p50 | p99 | p99.9 | p99.99 | max (µs) | errors | CPU s/M |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = []
    for c in configs:
        for cell in d.scenario_order([k[2] for k in d.runs if k[1] == c]):
            key = ("frieda", c, cell)
            keys.append(key)
            res = d.ok_results(key)
            lines.append("| %s | %s | %d/%d | %s |" % (c, cell, len(res), len(d.runs[key]), " | ".join(
                f_metric(m, median([r.get(m) for r in res])) for m in METRICS)))
    lines.append("")
    lines += settings_section(d, keys) + machine_section(d) + reproduce_section(d) + runs_section(d, keys)
    return lines


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = sys.argv[1]
    d = Data(out)
    if not d.runs and not d.events:
        print("no runs in %s/raw/runs.jsonl" % out, file=sys.stderr)
        return 1
    lines = goals_report(d) if d.mode == "goals" else ablation_report(d)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(d.summary(), f, indent=1)
        f.write("\n")
    # the headline table on stdout
    start = next((i for i, l in enumerate(lines) if l.startswith("| # |") or l.startswith("| configuration | TOML")), None)
    if start is not None:
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        print("\n".join(lines[start:end]))
    print("wrote %s and %s" % (os.path.join(out, "report.md"), os.path.join(out, "summary.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
