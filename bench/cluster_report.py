#!/usr/bin/env python3
"""Report of a `scripts/bench --cluster` run: Frieda and Apache Kafka as clusters, medians over the
repeats, Frieda/Kafka ratios, and what a paused follower did to acks=all.

    cluster_report.py RESULTS_DIR

Reads RESULTS_DIR/raw/: runs.jsonl, settings.json, machine.json, the frieda-bench JSON of every cell
(<broker>-<cell>-r<N>.json) and, for the paused-follower cells, the ISR as the leader reported it
every 200 ms (<broker>-<cell>-r<N>.isr.jsonl). Writes RESULTS_DIR/report.md and
RESULTS_DIR/summary.json. Standard library only.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import load_json, load_lines  # noqa: E402

K, F, FQ = "kafka", "frieda", "frieda-quorum"
BROKERS = [K, F, FQ]
METRICS = ["throughput_rps", "throughput_mb_s", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us",
           "errors", "broker_cpu_s_per_million"]
PCTS = [("p50", "p50_us"), ("p99", "p99_us"), ("p99.9", "p999_us"), ("p99.99", "p9999_us"), ("max", "max_us")]
CELL_RE = re.compile(r"^c(\d+)-(lat5|unth5|mixed5|pause5|lat|unth|pause|burnin|mixed)(?:-(\d+)p)?$")
KIND_ORDER = ["burnin", "lat", "lat5", "mixed", "mixed5", "unth", "unth5", "pause", "pause5"]


def base_kind(kind):
    """The cell's kind without the linger.ms=5 suffix: pause5 -> pause (issue 34: every cell at
    librdkafka's default linger.ms as well as 0)."""
    return kind[:-1] if kind.endswith("5") else kind


def median(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return statistics.median(vals)


def f_us(v):
    if v is None:
        return "–"
    if v >= 1_000_000:
        return "%.2f s" % (v / 1e6)
    if v >= 10_000:
        return "%.1f ms" % (v / 1e3)
    return "%d µs" % round(v)


def f_int(v):
    return "–" if v is None else "{:,}".format(int(round(v)))


def f_cpu(v):
    return "–" if v is None else "%.2f" % v


def f_ratio(r):
    if r is None:
        return "–"
    return "%.2f×" % r if r >= 0.01 else "%.3f×" % r


def ratio(f, k):
    if f is None or k in (None, 0):
        return None
    return f / k


def cell_key(name):
    return re.sub(r"-r\d+$", "", name)


def cell_parts(cell):
    m = CELL_RE.match(cell)
    if not m:
        return (0, "", 0)
    return (int(m.group(1)), m.group(2), int(m.group(3) or 0))


def cell_order(cell):
    n, kind, p = cell_parts(cell)
    return (n, KIND_ORDER.index(kind) if kind in KIND_ORDER else 9, p)


# ---------------------------------------------------------------- data
class Data:
    def __init__(self, out):
        raw = os.path.join(out, "raw")
        self.out, self.raw = out, raw
        self.settings = load_json(os.path.join(raw, "settings.json"), {})
        self.machine = load_json(os.path.join(raw, "machine.json"), {})
        self.events, self.runs = [], {}          # runs[(broker, cell)] = [run, ...]
        for r in load_lines(os.path.join(raw, "runs.jsonl")):
            if "event" in r:
                self.events.append(r)
                continue
            res = load_json(os.path.join(raw, r["json"])) if r.get("json") else None
            failure = None
            if r.get("rc", 0) != 0:
                failure = r.get("error") or "exit code %s" % r.get("rc")
            if r.get("rc", 0) == 0 and res is None:
                failure = "no result file"
            run = {"meta": r, "result": res if r.get("rc", 0) == 0 else res, "failure": failure,
                   "repeat": r.get("repeat", 1), "isr": None}
            if r.get("kind") == "pause":
                isr_path = os.path.join(raw, r["json"].replace(".json", ".isr.jsonl")) if r.get("json") else None
                run["isr"] = isr_events(load_lines(isr_path) if isr_path else [], res, r)
            broker, cell = r["broker"], cell_key(r["name"])
            if r.get("ack_policy") == "quorum":
                # issue 34: the paused-follower cell under replication.ack.policy=quorum, shown as
                # a third broker row next to Kafka and Frieda (isr) in the pause tables
                broker, cell = FQ, cell.replace("-qpause-", "-pause-").replace("-qpause5-", "-pause5-")
            self.runs.setdefault((broker, cell), []).append(run)

    def cells(self, nodes=None, kind=None):
        cs = sorted({c for (_, c) in self.runs}, key=cell_order)
        out = []
        for c in cs:
            n, k, _ = cell_parts(c)
            if k == "burnin":
                continue
            if nodes is not None and n != nodes:
                continue
            if kind is not None and k != kind:
                continue
            out.append(c)
        return out

    def ok(self, b, cell):
        return [r for r in self.runs.get((b, cell), []) if r["result"] and not r["failure"]]

    def med(self, b, cell, metric):
        return median([r["result"].get(metric) for r in self.ok(b, cell)])

    def med_f(self, b, cell, fn):
        return median([fn(r) for r in self.ok(b, cell)])

    def errors(self, b, cell):
        return sum((r["result"] or {}).get("errors", 0) for r in self.runs.get((b, cell), []))

    def failures(self, b, cell):
        return [r["failure"] for r in self.runs.get((b, cell), []) if r["failure"]]

    def brokers(self):
        return [b for b in BROKERS if any(k[0] == b for k in self.runs)]


def both(d):
    """Kafka and Frieda both ran (the Frieda/Kafka ratio rows)."""
    return K in d.brokers() and F in d.brokers()


def phase(res, i):
    t = (res or {}).get("timeline") or {}
    ph = t.get("phases") or []
    return ph[i] if i < len(ph) else None


def pause_phase(r):
    return phase(r["result"], 1)


def isr_events(lines, res, meta):
    """When the paused node left the ISR and came back, from the leader's view (200 ms polls)."""
    p = (res or {}).get("pause") or {}
    node = meta.get("paused_node")
    t_stop, t_cont = p.get("stopped_at_unix"), p.get("continued_at_unix")
    out = {"node": node, "left_after_stop_s": None, "rejoined_after_cont_s": None, "unregistered_after_stop_s": None,
           "back_registered_after_cont_s": None, "leader_changes": [], "errors": 0, "polls": len(lines)}
    if node is None or t_stop is None:
        return out
    leader0 = None
    in_isr_prev, reg_prev = True, True
    for ln in lines:
        if "error" in ln:
            out["errors"] += 1
            continue
        t = ln.get("t_unix")
        parts = ln.get("partitions") or []
        if not parts:
            continue
        pt = parts[0]
        if leader0 is None:
            leader0 = pt.get("leader")
        elif pt.get("leader") != leader0:
            out["leader_changes"].append({"t_after_stop_s": round(t - t_stop, 2), "leader": pt.get("leader")})
            leader0 = pt.get("leader")
        in_isr = node in (pt.get("isr") or [])
        reg = node in (ln.get("brokers") or [])
        if t >= t_stop - 0.5:
            if in_isr_prev and not in_isr and out["left_after_stop_s"] is None:
                out["left_after_stop_s"] = round(t - t_stop, 2)
            if not in_isr_prev and in_isr and t_cont and out["rejoined_after_cont_s"] is None and t >= t_cont - 0.5:
                out["rejoined_after_cont_s"] = round(t - t_cont, 2)
            if reg_prev and not reg and out["unregistered_after_stop_s"] is None:
                out["unregistered_after_stop_s"] = round(t - t_stop, 2)
            if not reg_prev and reg and t_cont and out["back_registered_after_cont_s"] is None:
                out["back_registered_after_cont_s"] = round(t - t_cont, 2)
        in_isr_prev, reg_prev = in_isr, reg
    return out


# ---------------------------------------------------------------- sections
def cell_title(cell):
    n, kind, p = cell_parts(cell)
    return "%d producer%s" % (p, "" if p == 1 else "s")


def phase_table(d, cells, i):
    """Percentiles of the records scheduled in phase i of the pause cells (0 before, 1 during, 2 after)."""
    get = lambda b, c, m: d.med_f(b, c, lambda r: (phase(r["result"], i) or {}).get(m))  # noqa: E731
    lines = ["| producers | broker | p50 | p99 | p99.9 | p99.99 | max | records |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for b in d.brokers():
            if not d.ok(b, c):
                continue
            lines.append("| %s | %s | %s | %s |" % (cell_title(c), b, " | ".join(f_us(get(b, c, m)) for _, m in PCTS),
                                                   f_int(get(b, c, "records"))))
        if both(d):
            lines.append("| %s | **Frieda/Kafka** | %s | |" % (
                cell_title(c), " | ".join("**%s**" % f_ratio(ratio(get(F, c, m), get(K, c, m))) for _, m in PCTS)))
    return lines + [""]


def missing_row(d, b, c):
    """The row of a broker without a result in cell c: its failures, or "not run" (none for the
    quorum policy, which runs in the paused-follower cells only)."""
    fl = d.failures(b, c)
    if b == FQ and not fl:
        return []
    return ["| %s | %s | %s | | | | | | | |" % (cell_title(c), b, "failed: " + "; ".join(fl) if fl else "not run")]


def lat_table(d, cells, get=None):
    """Rows: cell × broker with percentiles, errors, CPU/M; then the ratio row."""
    get = get or (lambda b, c, m: d.med(b, c, m))
    lines = ["| producers | broker | p50 | p99 | p99.9 | p99.99 | max | acked rec/s | errors | broker CPU s / M records |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for b in d.brokers():
            if not d.ok(b, c):
                lines += missing_row(d, b, c)
                continue
            lines.append("| %s | %s | %s | %s | %d | %s |" % (
                cell_title(c), b, " | ".join(f_us(get(b, c, m)) for _, m in PCTS), f_int(d.med(b, c, "throughput_rps")),
                d.errors(b, c), f_cpu(d.med(b, c, "broker_cpu_s_per_million"))))
        if both(d):
            lines.append("| %s | **Frieda/Kafka** | %s | %s | | %s |" % (
                cell_title(c), " | ".join("**%s**" % f_ratio(ratio(get(F, c, m), get(K, c, m))) for _, m in PCTS),
                f_ratio(ratio(d.med(F, c, "throughput_rps"), d.med(K, c, "throughput_rps"))),
                f_ratio(ratio(d.med(F, c, "broker_cpu_s_per_million"), d.med(K, c, "broker_cpu_s_per_million")))))
    return lines + [""]


def unth_table(d, cells):
    lines = ["| producers | broker | throughput rec/s | MB/s | p50 | p99 | p99.9 | max | errors | broker CPU s / M records |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for b in d.brokers():
            if not d.ok(b, c):
                lines += missing_row(d, b, c)
                continue
            lines.append("| %s | %s | %s | %.2f | %s | %s | %s | %s | %d | %s |" % (
                cell_title(c), b, f_int(d.med(b, c, "throughput_rps")), d.med(b, c, "throughput_mb_s") or 0,
                f_us(d.med(b, c, "p50_us")), f_us(d.med(b, c, "p99_us")), f_us(d.med(b, c, "p999_us")),
                f_us(d.med(b, c, "max_us")), d.errors(b, c), f_cpu(d.med(b, c, "broker_cpu_s_per_million"))))
        if both(d):
            lines.append("| %s | **Frieda/Kafka** | **%s** | | %s | %s | %s | %s | | %s |" % (
                cell_title(c), f_ratio(ratio(d.med(F, c, "throughput_rps"), d.med(K, c, "throughput_rps"))),
                *[f_ratio(ratio(d.med(F, c, m), d.med(K, c, m))) for m in ("p50_us", "p99_us", "p999_us", "max_us")],
                f_ratio(ratio(d.med(F, c, "broker_cpu_s_per_million"), d.med(K, c, "broker_cpu_s_per_million")))))
    return lines + [""]


def pause_sections(d, cells):
    st = d.settings
    at, secs, dur = st.get("pause_at_s", 20), st.get("pause_secs", 20), st.get("pause_duration_s", 60)
    lines = ["Whole measured window (%gs, the pause inside it):" % dur, ""]
    lines += lat_table(d, cells)
    lines += ["Records scheduled before the pause (0-%g s of the window):" % at, ""] + phase_table(d, cells, 0)
    lines += ["Records scheduled while the follower was stopped (%g-%g s of the window):" % (at, at + secs), ""]
    lines += phase_table(d, cells, 1)
    lines += ["Records scheduled after SIGCONT (%g-%g s):" % (at + secs, dur), ""] + phase_table(d, cells, 2)
    lines += ["How long acks=all stopped, and the paused node in the leader's ISR (Metadata polled every 200 ms "
              "from the leader; times after SIGSTOP / SIGCONT):", "",
              "| producers | broker | repeat | paused node | longest stretch without any ack | stretches ≥ 100 ms (start s in window: ms) "
              "| left the ISR | unregistered (fenced) | back in Metadata | back in the ISR | leader changes | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for b in d.brokers():
            for r in d.runs.get((b, c), []):
                res, m, ev = r["result"] or {}, r["meta"], r["isr"] or {}
                t = res.get("timeline") or {}
                gaps = ", ".join("%.2f: %d" % (g["from_s"], g["ms"]) for g in t.get("ack_gaps", [])) or "none"
                fs = lambda v: "–" if v is None else "+%.1f s" % v  # noqa: E731
                lines.append("| %s | %s | %d | %s%s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    cell_title(c), b, r["repeat"], m.get("paused_node", "?"),
                    "" if m.get("paused_node") is None else " (pid %s)" % m.get("paused_pid"),
                    "%d ms" % t["longest_ack_gap_ms"] if "longest_ack_gap_ms" in t else "–", gaps,
                    fs(ev.get("left_after_stop_s")), fs(ev.get("unregistered_after_stop_s")),
                    fs(ev.get("back_registered_after_cont_s")), fs(ev.get("rejoined_after_cont_s")),
                    ", ".join("%+.1f s → %s" % (x["t_after_stop_s"], x["leader"]) for x in ev.get("leader_changes", [])) or "none",
                    res.get("errors", "–") if not r["failure"] else "failed: " + r["failure"]))
    lines.append("")
    # per-second max around the pause
    lo, hi = max(0, int(at) - 2), min(int(dur), int(at + secs) + 8)
    lines += ["Max latency of the records scheduled in each second of the window (ms; first repeat), %d-%d s:" % (lo, hi), "",
              "| producers | broker | " + " | ".join(str(s) for s in range(lo, hi)) + " |",
              "|---|---|" + "---|" * (hi - lo)]
    for c in cells:
        for b in d.brokers():
            runs = d.ok(b, c)
            if not runs:
                continue
            ps = {int(round(x["t_s"])): x for x in ((runs[0]["result"].get("timeline") or {}).get("per_second") or [])}
            lines.append("| %s | %s | %s |" % (cell_title(c), b, " | ".join(
                "%.0f" % (ps[s]["max_us"] / 1000) if s in ps else "–" for s in range(lo, hi))))
    return lines + [""]


def goal_section(d):
    lines = ["## The goal: Frieda's p99.9 ≤ 1/10 of Kafka's in every cell", "",
             "Every fixed-rate cell (the same offered load on both), and the paused-follower cells over the whole "
             "window and over the records scheduled during the pause. The unthrottled cells are not in it: there "
             "the two brokers run at different throughputs (see their table).", "",
             "| cell | Kafka p99.9 | Frieda p99.9 | Frieda/Kafka | ≤ 0.1× |", "|---|---|---|---|---|"]
    met = total = 0
    for c in d.cells():
        n, kind, p = cell_parts(c)
        if kind in ("unth", "unth5", "lat5"):
            continue
        rows = [("%s" % c, lambda b: d.med(b, c, "p999_us"))]
        if base_kind(kind) == "pause":
            rows.append(("%s, pause window" % c, lambda b: d.med_f(b, c, lambda r: (pause_phase(r) or {}).get("p999_us"))))
        for label, get in rows:
            if base_kind(kind) == "pause" and d.ok(FQ, c):
                # issue 34's goal for the quorum policy: p99.9 <= 1/100 of Kafka's
                k, q = get(K), get(FQ)
                r = ratio(q, k)
                lines.append("| %s, %s | %s | %s | %s | %s |" % (label, FQ, f_us(k), f_us(q), f_ratio(r),
                             "–" if r is None else ("≤ 0.01×: MET" if r <= 0.01 else "≤ 0.01×: **NOT MET**")))
            k, f = get(K), get(F)
            r = ratio(f, k)
            ok = r is not None and r <= 0.1
            if r is not None:
                total += 1
                met += ok
            lines.append("| %s | %s | %s | %s | %s |" % (label, f_us(k), f_us(f), f_ratio(r),
                                                         "–" if r is None else ("MET" if ok else "**NOT MET**")))
    lines += ["", "**%d of %d cells meet the goal.**" % (met, total), ""]
    return lines


def mixed_section(d, cells, suffix=""):
    """Issue 34's mixed load: the fixed-rate acks=all producers while backlog readers and a bulk
    producer load the same cluster; against the quiet cell with the same producers and Kafka
    (for mixed5, linger.ms=5: the quiet cell is lat5)."""
    st = d.settings
    lines = ["### Mixed load: %s records/s acks=all, %s backlog readers, one unthrottled 64 KiB producer%s" % (
        f_int(st.get("rate")), st.get("mixed_readers", 4), suffix), "",
             "The fixed-rate acks=all producers of the latency cell, measured while %s readers fetch a second topic "
             "(first filled with %s MB of 64 KiB records) from spread-out offsets to its high watermark and around again (never following the tail) "
             "(`frieda-bench read`, 1 MiB fetches), and one producer appends 64 KiB records (one per batch, acks=all) "
             "to that topic unthrottled, one request in flight. The readers are unthrottled too: each broker serves "
             "them as fast as it can (the read MB/s column). Goals (issue 34): Frieda's p99.9 within 2× of its quiet run (the latency "
             "cell with as many producers) and ≤ 1/10 of Kafka's in this cell." % (
                 st.get("mixed_readers", 4), f_int(st.get("mixed_backlog_mb"))), ""] + lat_table(d, cells)
    lines += ["| producers | broker | backlog MB | backlog read MB/s | bulk producer MB/s | p99.9 / quiet p99.9 |",
              "|---|---|---|---|---|---|"]
    for c in cells:
        n, kind, p = cell_parts(c)
        quiet = "c%d-%s-%dp" % (n, "lat5" if kind == "mixed5" else "lat", p)
        for b in d.brokers():
            runs = d.ok(b, c)
            if not runs:
                continue
            back = median([r["meta"].get("backlog_mb") for r in runs])
            rd = median([(r["meta"].get("read") or {}).get("mb_s") for r in runs])
            bulk = median([(load_json(os.path.join(d.raw, r["meta"]["bulk"])) or {}).get("throughput_mb_s")
                           for r in runs if r["meta"].get("bulk")])
            q = d.med(b, quiet, "p999_us") if d.ok(b, quiet) else None
            r = ratio(d.med(b, c, "p999_us"), q)
            lines.append("| %s | %s | %s | %s | %s | %s%s |" % (
                cell_title(c), b, f_int(back), "–" if rd is None else "%.0f" % rd,
                "–" if bulk is None else "%.0f" % bulk, f_ratio(r),
                "" if r is None or b == K else (" (≤ 2×: MET)" if r <= 2 else " (≤ 2×: **NOT MET**)")))
    return lines + [""]


def floor_section(d):
    """The echo floor measured in the same run (frieda-bench roof-wake at the cells' rate, no broker
    running), and Frieda's quiet p99.9 against it (issue 34: within 2x)."""
    floors = [load_json(os.path.join(d.raw, e["json"])) for e in d.events if e.get("event") == "floor"]
    floors = [f for f in floors if f]
    if not floors:
        return []
    med = {k: median([f.get(k) for f in floors]) for k in
           ("echo_p50_us", "echo_p99_us", "echo_p999_us", "echo_p9999_us", "echo_max_us")}
    lines = ["## The echo floor", "",
             "A do-nothing loopback TCP echo at %s round trips/s (`frieda-bench roof-wake`), no broker running, at the "
             "start of each repeat: what this machine's scheduler and loopback cost any request/response. Medians of %d." % (
                 f_int(d.settings.get("rate")), len(floors)), "",
             "| p50 | p99 | p99.9 | p99.99 | max |", "|---|---|---|---|---|",
             "| %s |" % " | ".join(f_us(med[k]) for k in ("echo_p50_us", "echo_p99_us", "echo_p999_us", "echo_p9999_us",
                                                          "echo_max_us")), ""]
    quiet = [c for c in d.cells(kind="lat") if cell_parts(c)[2] == 1]
    for c in quiet:
        for b in (F, FQ):
            v = d.med(b, c, "p999_us") if d.ok(b, c) else None
            r = ratio(v, med["echo_p999_us"])
            if r is not None:
                lines.append("- %s %s (quiet: 1 producer, fixed rate): p99.9 %s = %s the echo floor's (goal ≤ 2×: %s)" % (
                    b, c, f_us(v), f_ratio(r), "MET" if r <= 2 else "**NOT MET**"))
    return lines + [""]


def noise_section(d):
    cores = d.machine.get("cores") or 2
    lines = ["## How noisy the machine was", "",
             "Before each cluster start the harness waited until the 1-minute load average was below %s (at most %s s). "
             "During a cell the load is mostly the cluster and the generator themselves; what other processes took is "
             "`other CPU`: the machine's busy CPU time over the measured window (/proc/stat) minus every broker "
             "process and the generator, in cores (of %d)." % (
                 d.settings.get("max_load", "?"), d.settings.get("quiet_wait_s", "?"), cores), ""]
    starts = [e for e in d.events if e.get("event") == "start"]
    if starts:
        lines += ["| cluster start | load then | waited for quiet |", "|---|---|---|"]
        for e in starts:
            lines.append("| %s %s nodes, repeat %s | %s | %s s |" % (e.get("broker"), e.get("nodes"), e.get("repeat", 1),
                                                                   e.get("loadavg", "?"), e.get("quiet_wait_s", "?")))
        lines.append("")
    lines += ["| cell | broker | repeat | load before → after | other CPU (cores) | generator CPU (cores) | broker CPU (cores) | wall s | exit |",
              "|---|---|---|---|---|---|---|---|---|"]
    for (b, c), runs in sorted(d.runs.items(), key=lambda kv: (cell_order(kv[0][1]), kv[0][0])):
        for r in runs:
            res, m = r["result"] or {}, r["meta"]
            w = res.get("window_s") or 0
            core = lambda v: "–" if v is None or not w else "%.2f" % (v / w)  # noqa: E731
            lines.append("| %s | %s | %d | %s → %s | %s | %s | %s | %s | %s |" % (
                c, b, r["repeat"], m.get("loadavg_before", "?"), m.get("loadavg_after", "?"), core(res.get("other_cpu_s")),
                core(res.get("client_cpu_s")), core(res.get("broker_cpu_s")), m.get("wall_s", "–"), m.get("rc")))
    return lines + [""]


def settings_section(d):
    st = d.settings
    return ["## Settings", "",
            "| | |", "|---|---|",
            "| topic | fresh per cell, **1 partition** (the thesis's ProducerPerformance runs wrote one topic; the "
            "generator sends to one leader), created with CreateTopics: RF 3 on 3 brokers, RF 4 on 4 brokers; "
            "topic config `min.insync.replicas=2` (RF 4: %s) |" % st.get("min_insync4", 2),
            "| records | %s B values, no keys, uncompressed RecordBatch v2, batch.size 16384, linger 0, 5 requests in flight per producer |" % st.get("record_size", 100),
            "| acks | all (every in-sync replica) |",
            "| fsync | none per message on both (Kafka's default flush policy; Frieda's default): acks=all means "
            "in the page cache of every in-sync replica |",
            "| fixed-rate cells | %s records/s aggregate, open loop (latency from the scheduled send time), %gs warm-up + %gs measured |" % (
                f_int(st.get("rate")), st.get("warmup_s", 0), st.get("duration_s", 0)),
            "| unthrottled cells | %gs warm-up + %gs measured; latency from when the batch was built |" % (
                st.get("unthrottled_warmup_s", 0), st.get("unthrottled_duration_s", 0)),
            "| paused follower | same load as the fixed-rate cells, %gs warm-up + %gs measured; a follower of the partition "
            "(not its leader, and not the active controller when there is a choice) gets SIGSTOP %gs into the measured "
            "window and SIGCONT %gs later (sent by the generator itself); the next cell waits until the ISR is full again |" % (
                st.get("warmup_s", 0), st.get("pause_duration_s", 0), st.get("pause_at_s", 0), st.get("pause_secs", 0)),
            "| burn-in | %gs at the fixed rate with 8 producers after each cluster start, not reported |" % st.get("burnin_s", 0),
            "| producers | 3 brokers: %s; 4 brokers: %s |" % (st.get("producers3", "?"), st.get("producers4", "?")),
            "| Kafka | %s from Maven jars, KRaft" % (d.machine.get("kafka_version") or "?") + ", nodes 1-3 broker+controller (static `controller.quorum.voters`), "
            "node 4 broker-only; num.network.threads 3, num.io.threads 8, num.replica.fetchers 1, "
            "broker.session.timeout.ms 9000, broker.heartbeat.interval.ms 2000, replica.lag.time.max.ms 30000, "
            "replica.fetch.wait.max.ms 500 (all Kafka's defaults), default.replication.factor / "
            "offsets.topic.replication.factor 3, min.insync.replicas 2, heap `%s` per broker "
            "(`bench/kafka/run-kafka-cluster.sh`) |" % st.get("kafka_heap", "?"),
            "| Frieda | nodes 1-3 voters of the metadata quorum, node 4 broker-only; the same keys and values as "
            "`scripts/cluster` (default.replication.factor / offsets.topic.replication.factor 3, "
            "min.insync.replicas 2); the rest Frieda's defaults: broker.session.timeout.ms 9000, "
            "broker.heartbeat.interval.ms 500, replica.lag.time.max.ms 30000, **replica.stall.max.ms 1500**, "
            "replica.fetch.wait.max.ms 500 (`bench/frieda/run-frieda-cluster.sh`) |",
            "| broker CPU | utime + stime of every broker process of the cluster over the measured window, summed, "
            "per million acknowledged measured records |",
            "| order | each broker type in turn (alternating per repeat), each setting on a freshly started cluster; "
            "%s repeat%s, medians |" % (st.get("repeat", 1), "" if st.get("repeat", 1) == 1 else "s"),
            ""]


def machine_section(d):
    mc, st = d.machine, d.settings
    end = next((e for e in d.events if e.get("event") == "end"), {})
    tot = end.get("total_s")
    return ["## Machine and versions", "", "| | |", "|---|---|",
            "| CPU | %s, %s cores, %s MiB RAM |" % (mc.get("cpu", "?"), mc.get("cores", "?"), mc.get("mem_mib", "?")),
            "| kernel | %s |" % mc.get("kernel", "?"),
            "| Frieda | `%s` (%s), sha256 %s…, source rev %s, repo at %s%s |" % (
                st.get("frieda_bin", "?"), mc.get("frieda_version", "?"), mc.get("frieda_sha256", "?"),
                mc.get("frieda_rev") or "–", mc.get("git_rev", "?"), " (dirty)" if mc.get("git_dirty") else ""),
            "| Kafka | %s |" % (mc.get("kafka_version") or "–"),
            "| Java / Rust | %s / %s |" % (mc.get("java", "?"), mc.get("rustc", "?")),
            "| ports | Frieda nodes 127.0.0.1:%s+100·i, Kafka nodes 127.0.0.1:%s+100·i. %s |" % (
                st.get("frieda_port_base", "?"), st.get("kafka_port_base", "?"), st.get("port_note", "")),
            "| load at start / end | %s / %s |" % (st.get("loadavg_start", "?"), end.get("loadavg_end", "?")),
            "| wall time | %s |" % ("%d s (%.1f min)" % (tot, tot / 60) if tot else "?"),
            "", "## Reproduce", "", "```bash", "cargo build --release -p frieda",
            st.get("reproduce", "scripts/bench --cluster"),
            "python3 bench/cluster_report.py RESULTS_DIR   # rebuilds report.md and summary.json from raw/", "```",
            "", "(this run: `%s`)" % st.get("argv", "?"), ""]


def notes(d):
    out = []
    for (b, c), runs in sorted(d.runs.items(), key=lambda kv: (cell_order(kv[0][1]), kv[0][0])):
        for r in runs:
            res = r["result"] or {}
            if r["failure"]:
                out.append("%s %s repeat %d failed: %s" % (b, c, r["repeat"], r["failure"]))
            if res.get("errors"):
                ed = res.get("error_detail") or {}
                kinds = dict(ed.get("by_code") or {})
                for k in ("timeout_records", "connection_lost_records", "unsent_records"):
                    if ed.get(k):
                        kinds[k] = ed[k]
                out.append("%s %s repeat %d: %d failed records (%s)%s" % (
                    b, c, r["repeat"], res["errors"], ", ".join("%s %d" % kv for kv in kinds.items()),
                    "; " + "; ".join(ed.get("messages", [])[:2]) if ed.get("messages") else ""))
            if res.get("offered_rate") and res.get("throughput_rps", 0) < 0.95 * res["offered_rate"] and r["meta"].get("kind") != "pause":
                out.append("%s %s repeat %d: acknowledged %s rec/s of %s offered: the cluster fell behind" % (
                    b, c, r["repeat"], f_int(res["throughput_rps"]), f_int(res["offered_rate"])))
            p = res.get("pause") or {}
            if p.get("error"):
                out.append("%s %s repeat %d: pause: %s" % (b, c, r["repeat"], p["error"]))
            if r["meta"].get("isr_full_after") == "timeout":
                out.append("%s %s repeat %d: the ISR was not full again within 300 s after the run" % (b, c, r["repeat"]))
    for e in d.events:
        if e.get("event") in ("start_failed", "node_died"):
            out.append("%s: %s %s nodes repeat %s%s" % (e["event"], e.get("broker"), e.get("nodes", ""), e.get("repeat", "?"),
                                                       " before " + e["before"] if e.get("before") else ""))
    return out


def summary(d):
    rows = []
    for (b, c) in sorted(d.runs, key=lambda k: (cell_order(k[1]), k[0])):
        n, kind, p = cell_parts(c)
        if kind == "burnin":
            continue
        ok = d.ok(b, c)
        first = ok[0]["result"] if ok else {}
        meta = d.runs[(b, c)][0]["meta"]
        row = {"name": c, "broker": b, "kind": kind, "brokers": n, "replication_factor": meta.get("rf"),
               "min_insync_replicas": meta.get("min_insync"), "acks": "all", "fsync": "none per message",
               "record_size": first.get("record_size"), "partitions": first.get("partitions", 1), "producers": p,
               "offered_rate": first.get("offered_rate"), "warmup_s": first.get("warmup_s"),
               "duration_s": first.get("duration_s"), "repeats": len(d.runs[(b, c)]), "ok_repeats": len(ok)}
        for m in METRICS:
            row[m] = d.med(b, c, m)
        row["errors"] = d.errors(b, c)
        if base_kind(kind) == "pause":
            row["pause_window"] = {m: d.med_f(b, c, lambda r, m=m: (pause_phase(r) or {}).get(m))
                                   for m in ("records", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us")}
            row["longest_ack_gap_ms"] = d.med_f(b, c, lambda r: ((r["result"] or {}).get("timeline") or {}).get("longest_ack_gap_ms"))
            row["isr"] = [r["isr"] for r in d.runs[(b, c)]]
        rows.append(row)
    return {"settings": d.settings, "scenarios": rows}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    d = Data(out)
    st = d.settings
    end = next((e for e in d.events if e.get("event") == "end"), {})
    tot = end.get("total_s")
    L = ["# Frieda vs Apache Kafka %s as clusters, on one machine" % (d.machine.get("kafka_version") or "?"), "",
         "Run %s (`%s`), %s. Both broker types on the same 2-core machine, one at a time, the same load from the same "
         "generator (`frieda-bench`). Every cell: **acks=all, 1 partition, %s B records, no fsync per message**, "
         "RF 3 with min.insync.replicas=2 on 3 brokers, RF 4 with min.insync.replicas=%s on 4 brokers. "
         "Fixed-rate cells offer %s records/s in total. Latencies are from the scheduled send time (open loop). "
         "Ratios are Frieda/Kafka: below 1 is better for latency and CPU, above 1 for throughput." % (
             st.get("stamp", "?"), st.get("argv", "?"), "%.1f min" % (tot / 60) if tot else "?",
             st.get("record_size", 100), st.get("min_insync4", 2), f_int(st.get("rate"))), ""]
    L += goal_section(d)
    for n, title in ((1, "1 broker, RF 1 (issue 34's one hot partition on a single node)"),
                     (3, "3 brokers, RF 3, min.insync.replicas=2"),
                     (4, "4 brokers, RF 4, min.insync.replicas=%s (the thesis's §4.3.1, fig. 4.10)" % st.get("min_insync4", 2))):
        if not d.cells(nodes=n):
            continue
        L += ["## %s" % title, ""]
        if d.cells(n, "lat"):
            L += ["### Fixed rate, %s records/s, acks=all" % f_int(st.get("rate")), ""] + lat_table(d, d.cells(n, "lat"))
        if d.cells(n, "lat5"):
            L += ["### Fixed rate, %s records/s, acks=all, linger.ms=5 (librdkafka's default)" % f_int(st.get("rate")), "",
                  "What a client with default settings gets: its batches wait up to 5 ms to fill, on both brokers. "
                  "Not in the 1/10 goal above (the linger sets the floor of both).", ""] + lat_table(d, d.cells(n, "lat5"))
        if d.cells(n, "mixed"):
            L += mixed_section(d, d.cells(n, "mixed"))
        if d.cells(n, "mixed5"):
            L += mixed_section(d, d.cells(n, "mixed5"), ", linger.ms=5 for the acks=all producers (their quiet run: "
                               "the linger.ms=5 cell)")
        if d.cells(n, "unth"):
            L += ["### Unthrottled, acks=all", ""] + unth_table(d, d.cells(n, "unth"))
        if d.cells(n, "unth5"):
            L += ["### Unthrottled, acks=all, linger.ms=5", ""] + unth_table(d, d.cells(n, "unth5"))
        if d.cells(n, "pause"):
            L += ["### One follower paused (SIGSTOP) for %gs, %s records/s, acks=all" % (
                st.get("pause_secs", 20), f_int(st.get("rate"))), ""] + pause_sections(d, d.cells(n, "pause"))
        if d.cells(n, "pause5"):
            L += ["### One follower paused (SIGSTOP) for %gs, %s records/s, acks=all, linger.ms=5" % (
                st.get("pause_secs", 20), f_int(st.get("rate"))), ""] + pause_sections(d, d.cells(n, "pause5"))
    L += floor_section(d)
    nts = notes(d)
    L += ["## Errors and notes", ""] + (["- " + x for x in nts] if nts else
                                        ["No failed runs and no failed records in any cell."]) + [""]
    L += settings_section(d)
    L += noise_section(d)
    L += machine_section(d)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary(d), f, indent=1)
        f.write("\n")
    print("wrote %s and %s" % (os.path.join(out, "report.md"), os.path.join(out, "summary.json")))


if __name__ == "__main__":
    main()
