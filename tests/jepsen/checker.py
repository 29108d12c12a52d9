"""Checks a history of the queue workload, after Jepsen's Kafka workload (jepsen/tests/kafka.clj):
linear scans over the history, no solver.

Every partition is a "key". The **version order** of a partition maps each offset to the set of
values anyone saw there: acknowledged sends (with the offset the broker answered) and every
record read (consumers' polls, the final readers). From it:

    inconsistent   an offset holding two values (different readers, or a reader and an ack)
    duplicate      a value at two offsets (or in two partitions)
    lost           an acknowledged value nobody ever read, acknowledged at an offset below the
                   partition's end (the high watermark the final readers read up to, or a higher
                   offset someone read): the log moved past it without it
    vanished       a value some consumer read during the run that the complete final reads do
                   not hold (it was below a high watermark once, then gone)
    unseen         an acknowledged value nobody read, at or above the end (not yet readable);
                   allowed up to ``unseen_bound`` (default 0: the final read runs on a healed,
                   quiet cluster, so every acknowledged record must be readable)
    gap            an offset below the end that nobody saw (Frieda writes no transaction markers,
                   so a non-transactional log is contiguous)
    phantom        a value read that no producer sent (or sent to another partition)
    aborted-read   a value read whose send surely failed (type fail)
    poll-skip      a consumer whose next record in a partition is past the next offset in the
                   version order, within one assignment (a skipped record); after a group
                   rebalance, a first read past every offset the group committed or tried to
    nonmonotonic-poll  a consumer going back (or repeating) within one assignment
    nonmonotonic-send  a producer's later send to a partition acknowledged at a lower offset
    commit-backwards   a commit acknowledged after another one of the same group and partition
                   completed, with a lower offset; an OffsetFetch answer lower than a commit
                   completed before it was asked; a group member resuming below an offset the
                   group had committed
    final-incomplete   a final reader that could not read every partition to its high watermark
    log-start-moved    a final reader found a partition's log start above offset 0 (nothing in
                   these runs deletes records: retention is unbounded, no DeleteRecords)

The bucket of a tiered run (the ``tiered`` kind, issue 57: one ``bucket`` op, recorded by the
runner after the heal once the copies are done; keys ``<topic>-<id>/<partition>/<base offset, 20
digits>-<segment id>.<log|indexes|rsm-manifest>``, the manifests' ``start_offset``/``end_offset``):

    remote-incomplete  objects of a copy without all three of its objects (no manifest: an
                   unfinished or abandoned copy left behind), a key of no copy, or a manifest
                   whose offsets or sizes do not match its key and objects
    remote-overlap     two finished copies of a partition holding a common offset
    remote-gap         the finished copies of a partition not contiguous from offset 0 (a copy
                   deleted, or never made, below the copied end: those offsets are in no tier
                   once local retention passed them)
    remote-behind      after the quiet period, a partition's finished copies end below the base
                   offset of its leader's active segment (``active_bases``): a closed segment not
                   in the bucket, which local retention deletes once the log grows past it if
                   the broker counts it copied (a copy deleted at the end of the copied run)

Transactional histories (``txn`` ops of the txn-producer role; readers use read_committed), after
Jepsen's transactional Kafka checks: a record's fate is its transaction's, so a send in a committed
transaction counts as acknowledged (``lost`` if never read below the end), one in an aborted
transaction as failed (read: ``aborted-read``), one whose commit was unresolved as unknown. And:

    torn-txn       a committed or unresolved transaction of which the complete final reads hold
                   some records but not all (atomicity)
    write-cycle    (reported, not failed) committed transactions T1..Tn whose records follow each
                   other in opposite orders in different partitions (Adya's G0, found as strongly
                   connected components of the per-partition write order). Kafka's transaction
                   protocol does not order concurrent transactions across partitions, so Kafka
                   itself allows these; Jepsen's Kafka workload reports them the same way.

``gap`` is not checked for transactional histories: commit/abort markers and aborted records hold
offsets that no read_committed reader returns.

Assignment changes reset a consumer's expectations as in Jepsen: ``assign`` keeps the position on
the partitions it keeps (with explicit ``positions`` it expects to continue there); a group
rebalance (``rebalance`` events) drops them for the partitions concerned.

``check(ops)`` returns a ``Result``: ``valid``, ``counts`` (per kind), ``examples`` (the first few
cases of each kind) and ``stats`` (acknowledged writes, failovers, the longest time a partition
acknowledged no write while writes to it were pending).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

FATAL = ["lost", "vanished", "duplicate", "inconsistent", "gap", "phantom", "aborted-read", "poll-skip",
         "nonmonotonic-poll", "nonmonotonic-send", "commit-backwards", "final-incomplete", "torn-txn",
         "log-start-moved", "remote-incomplete", "remote-overlap", "remote-gap", "remote-behind"]
INFORMATIONAL = ["unseen", "write-cycle"]
EXAMPLES = 10


@dataclass
class Result:
    valid: bool
    counts: dict
    examples: dict
    stats: dict
    unseen_bound: int = 0
    errors: list = field(default_factory=list)  # the kinds that fail the run

    def summary(self) -> str:
        lines = [f"valid: {self.valid}" + (f" (failed: {', '.join(self.errors)})" if self.errors else "")]
        lines.append("stats: " + json.dumps(self.stats, sort_keys=True))
        lines.append("counts: " + json.dumps(self.counts, sort_keys=True))
        for kind, ex in self.examples.items():
            if ex:
                lines.append(f"{kind} (first {len(ex)}):")
                lines += ["  " + json.dumps(e, sort_keys=True, default=str)[:400] for e in ex]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"valid": self.valid, "errors": self.errors, "counts": self.counts, "stats": self.stats,
                "unseen_bound": self.unseen_bound, "examples": self.examples}


def _int_keys(d: dict | None) -> dict:
    return {int(k): v for k, v in (d or {}).items()}


def _reads(op: dict):
    """(part, offset, value) triples of a poll/final-read op."""
    for m in op.get("msgs") or []:
        yield int(m[0]), int(m[1]), m[2]


def check(ops: list[dict], unseen_bound: int = 0) -> Result:
    ops = sorted(ops, key=lambda o: o.get("mono", 0))
    ex: dict[str, list] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)

    def report(kind: str, case: dict) -> None:
        counts[kind] += 1
        if len(ex[kind]) < EXAMPLES:
            ex[kind].append(case)

    # ---- sends: value -> what became of it
    sends: dict = {}  # value -> {part, proc, type, offset, invoke, done, error}
    for op in ops:
        if op["f"] != "send":
            continue
        v = op["value"]
        s = sends.get(v)
        if op["type"] == "invoke":
            if s is None:
                sends[v] = {"part": op["part"], "proc": op["proc"], "type": "info", "offset": None,
                            "invoke": op["mono"], "done": None, "epoch": 0}
                if "size" in op:
                    sends[v]["size"] = op["size"]
            continue
        if s is None:  # a completion without its invoke (torn history): still a fact
            s = sends[v] = {"part": op["part"], "proc": op["proc"], "type": "info", "offset": None,
                            "invoke": op["mono"], "done": None, "epoch": 0}
        if s["type"] == "ok":
            continue  # an ok is final
        s["type"] = op["type"]
        s["done"] = op["mono"]
        if op["type"] == "ok":
            # librdkafka may acknowledge without an offset (a retried batch the broker called a
            # duplicate): acknowledged all the same, at an unknown offset
            s["offset"] = int(op["offset"]) if op.get("offset") is not None else None
            s["part"] = int(op["part"])
        if "error" in op:
            s["error"] = op["error"]
    # transactions: a record's fate is its transaction's outcome
    txns = transactions(ops)
    for t in txns.values():
        for v in t["values"]:
            s = sends.get(v)
            if s is None:
                continue
            if t["type"] == "ok":
                if s["type"] != "ok":  # committed, so written, at an offset its report did not give
                    s["type"], s["offset"], s["done"] = "ok", None, t["done"]
            else:
                s["type"] = t["type"]
                s["error"] = t.get("error") or s.get("error")
    # producer epochs (a producer replaced after a fatal error starts a new order)
    epoch: dict[str, int] = defaultdict(int)
    for op in ops:
        if op["f"] == "producer-reset":
            epoch[op["proc"]] += 1
        elif op["f"] == "send" and op["type"] == "invoke" and op["value"] in sends:
            sends[op["value"]]["epoch"] = epoch[op["proc"]]

    # ---- the version order: part -> offset -> {value: [sources]}
    vo: dict[int, dict[int, dict]] = defaultdict(lambda: defaultdict(dict))
    read_at: dict = defaultdict(set)  # value -> {(part, offset)} read
    max_read: dict[int, int] = defaultdict(lambda: -1)
    for v, s in sends.items():
        if s["type"] == "ok" and s["offset"] is not None:
            vo[s["part"]][s["offset"]].setdefault(v, []).append(f"ack:{s['proc']}")
    for op in ops:
        if op["f"] in ("poll", "final-read") and op["type"] == "ok":
            for p, o, v in _reads(op):
                srcs = vo[p][o].setdefault(v, [])
                if op["proc"] not in srcs:
                    srcs.append(op["proc"])
                read_at[v].add((p, o))
                max_read[p] = max(max_read[p], o)

    # ---- ends: what the final readers read up to
    ends: dict[int, int] = {}
    finals = [op for op in ops if op["f"] == "final-end"]
    for op in finals:
        for p, e in _int_keys(op.get("ends")).items():
            ends[p] = max(ends.get(p, 0), int(e))
        if not op.get("complete", False):
            report("final-incomplete", {"proc": op["proc"], "ends": op.get("ends"),
                                        "positions": op.get("positions")})
    if not finals:
        report("final-incomplete", {"why": "no final reader finished"})
    parts = set(vo) | set(ends) | {s["part"] for s in sends.values()}
    bound = {p: max(ends.get(p, 0), max_read[p] + 1) for p in parts}

    # ---- inconsistent offsets, gaps
    dense: dict[int, list[int]] = {}
    for p in sorted(parts):
        offs = sorted(vo[p])
        dense[p] = offs
        for o in offs:
            if len(vo[p][o]) > 1:
                report("inconsistent", {"part": p, "offset": o,
                                        "values": {str(v): srcs for v, srcs in vo[p][o].items()}})
        seen = set(offs)
        missing = [] if txns else [o for o in range(bound[p]) if o not in seen]
        if missing:
            counts["gap"] += len(missing)
            if len(ex["gap"]) < EXAMPLES:
                ex["gap"].append({"part": p, "offsets": missing[:20], "count": len(missing), "end": bound[p]})

    # ---- duplicates: a value at several positions (reads and acknowledgements)
    positions: dict = defaultdict(set)
    for p, offs in vo.items():
        for o, vals in offs.items():
            for v in vals:
                positions[v].add((p, o))
    for v, pos in positions.items():
        if len(pos) > 1:
            report("duplicate", {"value": v, "at": sorted(pos)})

    # ---- phantom and aborted reads
    for v, pos in read_at.items():
        s = sends.get(v)
        if s is None:
            report("phantom", {"value": v, "at": sorted(pos), "why": "never sent"})
        elif any(p != s["part"] for p, _o in pos):
            report("phantom", {"value": v, "at": sorted(pos), "why": f"sent to partition {s['part']}"})
        elif s["type"] == "fail":
            report("aborted-read", {"value": v, "at": sorted(pos), "error": s.get("error")})

    # ---- lost / unseen acknowledged writes
    acked = [(v, s) for v, s in sends.items() if s["type"] == "ok"]
    for v, s in acked:
        if v in read_at:
            continue
        case = {"value": v, "part": s["part"], "offset": s["offset"], "end": bound.get(s["part"], 0),
                "proc": s["proc"], "at_offset": {str(x): y for x, y in vo[s["part"]].get(s["offset"], {}).items()
                                                  if x != v}}
        if s["offset"] is None:
            # no offset to compare with the end: lost if the final reads were complete
            complete = bool(finals) and all(op.get("complete", False) for op in finals)
            report("lost" if complete else "unseen", case)
        elif s["offset"] < bound.get(s["part"], 0):
            report("lost", case)
        else:
            report("unseen", case)

    # ---- vanished: read during the run (so below a high watermark then), absent from the final reads
    final_seen: set = set()
    for op in ops:
        if op["f"] == "final-read" and op["type"] == "ok":
            final_seen.update(v for _p, _o, v in _reads(op))
    if finals and all(op.get("complete", False) for op in finals):
        for v, pos in read_at.items():
            if v not in final_seen:
                s = sends.get(v) or {}
                report("vanished", {"value": v, "at": sorted(pos), "ack": s.get("type"),
                                    "acked_offset": s.get("offset")})

    # ---- transactions: torn ones, write cycles among committed ones
    if txns and finals and all(op.get("complete", False) for op in finals):
        for name, t in txns.items():
            if t["type"] == "fail":
                continue
            seen_vals = [v for v in t["values"] if v in final_seen]
            if seen_vals and len(seen_vals) != len(t["values"]):
                report("torn-txn", {"txn": name, "outcome": t["type"], "values": t["values"],
                                    "read": seen_vals})
    if txns:
        for cycle in write_cycles(vo, txns):
            report("write-cycle", {"cycle": cycle[:8], "length": len(cycle)})

    # ---- sends of one producer to one partition acknowledged out of order
    last_send: dict = {}
    for v, s in sorted(acked, key=lambda vs: vs[1]["invoke"]):
        if s["offset"] is None:
            continue
        k = (s["proc"], s["epoch"], s["part"])
        prev = last_send.get(k)
        if prev is not None and s["offset"] <= prev[1]:
            report("nonmonotonic-send", {"proc": s["proc"], "part": s["part"], "values": [prev[0], v],
                                         "offsets": [prev[1], s["offset"]]})
        last_send[k] = (v, s["offset"])

    # ---- commits: ok commits per (group, part) with their invoke and completion times
    commits: dict = defaultdict(list)  # (group, part) -> [(invoke, done, offset, type, proc)]
    observations = []  # (invoke, group, {part: offset}, proc)
    pending_inv: dict = {}
    for op in ops:
        if op["f"] not in ("commit", "committed"):
            continue
        key = (op["proc"], op["f"])
        if op["type"] == "invoke":
            pending_inv[key] = op
            continue
        inv = pending_inv.pop(key, op)
        if op["f"] == "commit":
            for p, o in _int_keys(op.get("offsets") or inv.get("offsets")).items():
                commits[(op["group"], p)].append((inv["mono"], op["mono"], int(o), op["type"], op["proc"]))
        elif op["type"] == "ok":
            asked = inv.get("parts")
            offs = _int_keys(op.get("offsets"))
            observations.append((inv["mono"], op["group"], offs, asked, op["proc"]))
    for key in list(pending_inv):  # invoked, never completed: unknown
        inv = pending_inv.pop(key)
        if inv["f"] == "commit":
            for p, o in _int_keys(inv.get("offsets")).items():
                commits[(inv["group"], p)].append((inv["mono"], None, int(o), "info", inv["proc"]))

    def committed_before(group: str, p: int, t: int) -> tuple[int, tuple | None]:
        """The highest offset of an ok commit that completed before ``t`` (-1 if none)."""
        best, which = -1, None
        for c in commits.get((group, p), ()):
            if c[3] == "ok" and c[1] is not None and c[1] < t and c[2] > best:
                best, which = c[2], c
        return best, which

    def attempted_before(group: str, p: int, t: int) -> int:
        """The highest offset of any commit (ok, unknown or failed) invoked before ``t`` (0 if none)."""
        return max([c[2] for c in commits.get((group, p), ()) if c[0] < t], default=0)

    for (group, p), cs in commits.items():
        oks = sorted((c for c in cs if c[3] == "ok"), key=lambda c: c[1])
        for c2 in oks:
            prev, which = committed_before(group, p, c2[0])
            if prev > c2[2]:
                report("commit-backwards", {"group": group, "part": p, "why": "commit lower than one completed before",
                                            "earlier": {"offset": prev, "proc": which[4]},
                                            "later": {"offset": c2[2], "proc": c2[4]}})
    for t, group, offs, asked, proc in observations:
        for p in (asked if asked is not None else offs.keys()):
            p = int(p)
            prev, which = committed_before(group, p, t)
            got = offs.get(p, -1)
            if prev > got:
                report("commit-backwards", {"group": group, "part": p, "why": "OffsetFetch below a completed commit",
                                            "committed": prev, "by": which[4], "fetched": got, "reader": proc})

    # ---- polls, per consumer process in its own order
    def between(p: int, a: int, b: int) -> list[int]:
        """Offsets of the version order in [a, b)."""
        offs = dense.get(p, [])
        return offs[bisect.bisect_left(offs, a):bisect.bisect_left(offs, b)]

    by_proc: dict = defaultdict(list)
    for op in ops:
        if op["f"] in ("poll", "final-read", "assign", "rebalance", "subscribe"):
            by_proc[op["proc"]].append(op)
    for proc, pops in by_proc.items():
        expect: dict[int, int] = {}  # part -> next offset expected within the assignment
        fresh: dict[int, tuple] = {}  # part -> (group, assign time): first read after a rebalance
        group = None
        for op in pops:
            f = op["f"]
            if f == "subscribe":
                group = op.get("group")
                expect.clear()
                fresh.clear()
            elif f == "assign" and op["type"] == "ok":
                keep = set(op.get("parts") or [])
                pos = _int_keys(op.get("positions"))
                for p in list(expect):
                    if p not in keep:
                        del expect[p]
                for p in keep:
                    if p in pos:
                        expect[p] = int(pos[p])
            elif f == "rebalance":
                for p in op.get("parts") or []:
                    expect.pop(p, None)
                    fresh.pop(p, None)
                if op.get("event") == "assign":
                    for p in list(expect):
                        if p not in op["parts"]:
                            del expect[p]
                    for p in op["parts"]:
                        fresh[p] = (group, op["mono"])
            elif f in ("poll", "final-read") and op["type"] == "ok":
                internal: set[int] = set()
                for p, o, v in _reads(op):
                    if p in fresh and p not in expect:
                        g, t_assign = fresh.pop(p)
                        if g is not None:
                            lo, which = committed_before(g, p, t_assign)
                            hi = attempted_before(g, p, op["mono"])
                            if o < lo:
                                report("commit-backwards", {"group": g, "part": p, "proc": proc,
                                                            "why": "member resumed below a completed commit",
                                                            "committed": lo, "resumed_at": o})
                            elif o > hi and between(p, hi, o):
                                sk = between(p, hi, o)
                                report("poll-skip", {"proc": proc, "part": p, "after": "rebalance",
                                                     "committed_at_most": hi, "read": o,
                                                     "skipped": sk[:10], "delta": len(sk)})
                    elif p in expect:
                        n = expect[p]
                        if o < n:
                            report("nonmonotonic-poll", {"proc": proc, "part": p, "expected": n, "read": o,
                                                         "internal": p in internal, "value": v})
                        elif o > n and between(p, n, o):
                            sk = between(p, n, o)
                            report("poll-skip", {"proc": proc, "part": p, "expected": n, "read": o,
                                                 "internal": p in internal, "skipped": sk[:10],
                                                 "delta": len(sk)})
                    expect[p] = o + 1
                    internal.add(p)

    # ---- the final readers' log starts; the bucket of a tiered run
    for op in ops:
        if op["f"] == "log-start" and op.get("low", 0) > 0:
            report("log-start-moved", {"proc": op["proc"], "part": op["part"], "low": op["low"],
                                       "end": op.get("end"), "reading_at": op.get("reading_at")})
    remote = None
    for op in ops:
        if op["f"] == "bucket" and op["type"] == "ok":
            remote = check_bucket(op, report)

    # ---- statistics
    stats = {
        "acknowledged": len(acked),
        "sent": len(sends),
        "info": sum(1 for s in sends.values() if s["type"] == "info"),
        "failed": sum(1 for s in sends.values() if s["type"] == "fail"),
        "acked_without_offset": sum(1 for _v, s in acked if s["offset"] is None),
        "info_read": sum(1 for v, s in sends.items() if s["type"] == "info" and v in read_at),
        "read_records": sum(len(r) for r in read_at.values()),
        "commits_ok": sum(1 for cs in commits.values() for c in cs if c[3] == "ok"),
        "ends": {str(p): bound[p] for p in sorted(bound)},
    }
    stats.update(failover_stats(ops))
    stats["max_no_write_window_s"] = round(no_write_window(sends), 3)
    # the longest a single acknowledged send waited (one producer stalled while another went on
    # does not show in the no-write window)
    stats["max_ack_latency_s"] = round(max((s["done"] - s["invoke"] for _v, s in acked if s["done"] is not None),
                                           default=0) / 1e9, 3)

    if txns:
        stats["txns"] = {k: sum(1 for t in txns.values() if t["type"] == k) for k in ("ok", "fail", "info")}
    if finals and all(op.get("complete", False) for op in finals):
        # acknowledged and absent from the complete final reads: lost (never read) or vanished
        # (read during the run, gone since), in one figure
        stats["acked_missing_final"] = sum(1 for v, _s in acked if v not in final_seen)
    if any("size" in s for s in sends.values()):
        stats["acked_mb"] = round(sum(s.get("size", 0) for _v, s in acked) / 1e6, 1)
    if remote is not None:
        stats["remote"] = remote
    errors = [k for k in FATAL if counts.get(k)]
    if counts.get("unseen", 0) > unseen_bound:
        errors.append("unseen")
    all_kinds = FATAL + INFORMATIONAL
    return Result(valid=not errors, counts={k: counts.get(k, 0) for k in all_kinds},
                  examples={k: ex[k] for k in all_kinds if ex.get(k)}, stats=stats,
                  unseen_bound=unseen_bound, errors=errors)


REMOTE_KEY = re.compile(r"^(?P<prefix>.*)/(?P<part>\d+)/(?P<base>\d{20})-(?P<id>[A-Za-z0-9_-]{22})"
                        r"\.(?P<kind>log|indexes|rsm-manifest)$")


def check_bucket(op: dict, report) -> dict:
    """The bucket of a tiered run (a ``bucket`` op: ``objects`` {key: size}, ``manifests`` {key:
    {start_offset, end_offset, log_bytes, indexes_bytes}}): every object belongs to a finished
    copy (its three objects, the manifest's offsets and sizes matching its key and objects), and
    per partition the finished copies follow each other from offset 0 without overlap or hole.
    Returns statistics (copies, copied MB, per partition the copied end)."""
    objects: dict = op.get("objects") or {}
    manifests: dict = op.get("manifests") or {}
    copies: dict = defaultdict(dict)  # (prefix, part, base, id) -> {kind: (key, size)}
    for key, size in objects.items():
        m = REMOTE_KEY.match(key)
        if m is None:
            report("remote-incomplete", {"key": key, "why": "a key of no copy"})
            continue
        copies[(m["prefix"], int(m["part"]), int(m["base"]), m["id"])][m["kind"]] = (key, size)
    finished: dict = defaultdict(list)  # (prefix, part) -> [(start, end, id)]
    copied = 0
    for (prefix, part, base, sid), kinds in sorted(copies.items()):
        case = {"part": part, "base": base, "segment_id": sid, "objects": sorted(kinds)}
        if set(kinds) != {"log", "indexes", "rsm-manifest"}:
            report("remote-incomplete", dict(case, why="not all three objects of the copy (no manifest: an "
                                                  "unfinished or abandoned copy)" if "rsm-manifest" not in kinds
                                             else "a manifest without its other objects"))
            if "rsm-manifest" not in kinds:
                continue
        man = manifests.get(kinds["rsm-manifest"][0]) or {}
        start, end = man.get("start_offset"), man.get("end_offset")
        if not isinstance(start, int) or not isinstance(end, int):
            report("remote-incomplete", dict(case, why="manifest unreadable", manifest=man))
            continue
        if start != base or end < start:
            report("remote-incomplete", dict(case, why="manifest offsets do not match the key", manifest=man))
        elif "log" in kinds and man.get("log_bytes") not in (None, kinds["log"][1]):
            report("remote-incomplete", dict(case, why=".log size is not the manifest's", manifest=man,
                                             log_bytes=kinds["log"][1]))
        if "log" in kinds:
            copied += kinds["log"][1]
        finished[(prefix, part)].append((start, end, sid))
    ends = {}
    for (prefix, part), segs in sorted(finished.items()):
        segs.sort()
        nxt = 0
        prev = None
        for start, end, sid in segs:
            if start < nxt and prev is not None:
                report("remote-overlap", {"part": part, "copies": [
                    {"start": prev[0], "end": prev[1], "segment_id": prev[2]},
                    {"start": start, "end": end, "segment_id": sid}]})
            elif start > nxt:
                report("remote-gap", {"part": part, "missing": [nxt, start - 1], "count": start - nxt,
                                      "before": None if prev is None else {"start": prev[0], "end": prev[1]},
                                      "after": {"start": start, "end": end, "segment_id": sid}})
            nxt = max(nxt, end + 1)
            prev = (start, end, sid)
        ends[str(part)] = nxt - 1
    for part, base in (op.get("active_bases") or {}).items():
        if isinstance(base, int) and int(ends.get(str(part), -1)) + 1 < base:
            report("remote-behind", {"part": int(part), "copied_end": ends.get(str(part), -1),
                                     "active_segment_base": base, "settled": op.get("settled")})
    return {"copies": sum(len(v) for v in finished.values()), "copied_mb": round(copied / 1e6, 1),
            "copied_end": ends, "settled": op.get("settled"), "objects": len(objects)}


def transactions(ops: list[dict]) -> dict:
    """txn name -> {values, type (ok committed, fail aborted, info unknown), done, error}; an ok
    is final, an abort after an unknown outcome settles it."""
    txns: dict = {}
    for op in ops:
        if op["f"] != "txn":
            continue
        t = txns.setdefault(op["txn"], {"values": list(op.get("values") or []), "type": "info", "done": None})
        if op["type"] == "invoke" or t["type"] == "ok":
            continue
        t["type"], t["done"] = op["type"], op["mono"]
        if "error" in op:
            t["error"] = op["error"]
    return txns


def write_cycles(vo: dict, txns: dict) -> list[list[str]]:
    """Committed transactions in a cycle of the write order (T1 before T2 in one partition, T2
    before T1 in another): one per strongly connected component of more than one transaction
    (Tarjan's algorithm, iterative), given as a shortest cycle in it."""
    of: dict = {v: name for name, t in txns.items() if t["type"] == "ok" for v in t["values"]}
    edges: dict = defaultdict(set)
    for offs in vo.values():
        prev = None
        for o in sorted(offs):
            here = {of[v] for v in offs[o] if v in of}
            if len(here) != 1:
                continue
            t = next(iter(here))
            if prev is not None and prev != t:
                edges[prev].add(t)
            prev = t
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    out: list = []
    counter = 0
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                if len(comp) > 1:
                    out.append(shortest_cycle(edges, set(comp)))
    return out


def shortest_cycle(edges: dict, comp: set) -> list:
    """A shortest cycle through the smallest transaction of a strongly connected component
    (breadth-first, inside the component): the example a reader can check by hand."""
    start = min(comp)
    parent = {start: None}
    queue = [start]
    for node in queue:
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return list(reversed(path))
            if nxt in comp and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return sorted(comp)


def no_write_window(sends: dict) -> float:
    """The longest time (s) a partition acknowledged nothing while a send to it was pending: per
    pair of consecutive acknowledgements (t0, t1) of a partition, t1 minus the later of t0 and the
    earliest invoke of a send still pending at t1."""
    by_part: dict = defaultdict(list)
    for s in sends.values():
        by_part[s["part"]].append(s)
    worst = 0
    for ss in by_part.values():
        acks = sorted(s["done"] for s in ss if s["type"] == "ok" and s["done"] is not None)
        if not acks:
            continue
        items = sorted((s["done"] if s["done"] is not None else float("inf"), s["invoke"]) for s in ss)
        dones = [d for d, _ in items]
        suffix_min = [0] * len(items)
        m = float("inf")
        for i in range(len(items) - 1, -1, -1):
            m = min(m, items[i][1])
            suffix_min[i] = m
        prev = None
        for t in acks:
            first_pending = suffix_min[bisect.bisect_left(dones, t)]
            start = first_pending if prev is None else max(prev, first_pending)
            worst = max(worst, t - start)
            prev = t
    return worst / 1e9


def failover_stats(ops: list[dict]) -> dict:
    """From the nemesis's metadata samples (f "leaders"): leader changes of the workload's
    partitions, controller changes, and the nemesis's fault count."""
    last: dict = {}
    changes = 0
    ctrl_changes = 0
    last_ctrl = None
    faults = 0
    for op in ops:
        if op.get("proc") != "nemesis":
            continue
        if op["f"] == "leaders" and op["type"] == "ok":
            for p, leader in _int_keys(op.get("leaders")).items():
                if leader is None or leader < 0:
                    continue
                if p in last and last[p] != leader:
                    changes += 1
                last[p] = leader
            c = op.get("controller")
            if c is not None and c >= 0:
                if last_ctrl is not None and c != last_ctrl:
                    ctrl_changes += 1
                last_ctrl = c
        elif op["type"] == "invoke" and op.get("fault"):
            faults += 1
    return {"failovers": changes, "controller_changes": ctrl_changes, "faults": faults}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="check a queue-workload history (a directory of *.jsonl)")
    ap.add_argument("history")
    ap.add_argument("--unseen-bound", type=int, default=0)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from history import read_history
    res = check(read_history(args.history), args.unseen_bound)
    print(res.summary())
    return 0 if res.valid else 1


if __name__ == "__main__":
    sys.exit(main())
