"""The checker on small synthetic histories: a clean history passes, and every anomaly kind is
found (a checker that cannot fail proves nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checker import check  # noqa: E402
from history import HistoryWriter, read_history  # noqa: E402


class H:
    """Builds a history; every op gets the next monotonic stamp."""

    def __init__(self):
        self.ops = []
        self.t = 0

    def op(self, proc, type_, f, **kw):
        self.t += 1000
        o = {"proc": proc, "type": type_, "f": f, "mono": self.t, "wall": self.t / 1e9}
        o.update(kw)
        self.ops.append(o)
        return o

    def send(self, value, part, offset, proc="prod-0", type_="ok"):
        self.op(proc, "invoke", "send", part=part, value=value)
        if type_ == "ok":
            self.op(proc, "ok", "send", part=part, value=value, offset=offset)
        elif type_ is not None:
            self.op(proc, type_, "send", part=part, value=value, error="boom")

    def poll(self, proc, msgs, f="poll"):
        self.op(proc, "ok", f, msgs=[list(m) for m in msgs])

    def assign(self, proc, parts, positions=None):
        kw = {"parts": parts}
        if positions is not None:
            kw["positions"] = {str(k): v for k, v in positions.items()}
        self.op(proc, "ok", "assign", **kw)

    def commit(self, proc, group, offsets, type_="ok"):
        offs = {str(k): v for k, v in offsets.items()}
        self.op(proc, "invoke", "commit", group=group, offsets=offs)
        self.op(proc, type_, "commit", group=group, offsets=offs)

    def final(self, proc, log, ends, complete=True):
        """``log``: {part: [values at offsets 0..]}."""
        self.assign(proc, sorted(log), {p: 0 for p in log})
        for p, vals in log.items():
            self.poll(proc, [(p, o, v) for o, v in enumerate(vals) if v is not None], f="final-read")
        self.op(proc, "ok", "final-end", ends={str(k): v for k, v in ends.items()}, complete=complete)


LOG = {0: [1, 3, 5, 7], 1: [2, 4, 6, 8]}
ENDS = {0: 4, 1: 4}


def clean(final_log=None, skip_final=False) -> H:
    """Two partitions, 8 values, an assign consumer, a subscribed one with commits, two final readers."""
    h = H()
    for v in range(1, 9):
        h.send(v, (v - 1) % 2, (v - 1) // 2)
    h.assign("asg-0", [0, 1], {0: 0, 1: 0})
    h.poll("asg-0", [(0, 0, 1), (0, 1, 3), (1, 0, 2)])
    h.poll("asg-0", [(0, 2, 5), (1, 1, 4), (1, 2, 6)])
    h.commit("asg-0", "g-asg", {0: 3, 1: 3})
    h.assign("asg-0", [1])  # keeps partition 1's position
    h.poll("asg-0", [(1, 3, 8)])
    h.op("sub-0", "ok", "subscribe", topic="t", group="g")
    h.op("sub-0", "ok", "rebalance", event="assign", parts=[0, 1])
    h.poll("sub-0", [(0, 0, 1), (0, 1, 3)])
    h.commit("sub-0", "g", {0: 2})
    h.op("sub-0", "ok", "rebalance", event="revoke", parts=[0, 1])
    h.op("sub-0", "ok", "rebalance", event="assign", parts=[0])
    h.poll("sub-0", [(0, 2, 5), (0, 3, 7)])  # resumes at the committed offset
    h.commit("sub-0", "g", {0: 4})
    h.op("sub-0", "invoke", "committed", group="g", parts=[0])
    h.op("sub-0", "ok", "committed", group="g", offsets={"0": 4})
    if not skip_final:
        for r in ("final-0", "final-1"):
            h.final(r, final_log or LOG, ENDS)
    return h


def kinds(res):
    return {k for k, n in res.counts.items() if n}


def test_clean_history_passes():
    res = check(clean().ops)
    assert res.valid, res.summary()
    assert kinds(res) == set()
    assert res.stats["acknowledged"] == 8


def test_history_files_round_trip(tmp_path):
    h = clean()
    writers = {}
    for o in h.ops:
        w = writers.setdefault(o["proc"], HistoryWriter(tmp_path / f"{o['proc']}.jsonl", o["proc"]))
        fields = {k: v for k, v in o.items() if k not in ("proc", "type", "f", "mono", "wall")}
        w.write(o["type"], o["f"], **fields)
    for w in writers.values():
        w.close()
    (tmp_path / "torn.jsonl").write_text('{"proc":"x","type":"ok","f":"po')  # a line torn by a kill
    res = check(read_history(tmp_path))
    assert res.valid, res.summary()


def test_lost_write():
    log = {0: [1, 3, 5, 7], 1: [2, 4, 6, 8]}
    h = clean(final_log=log)
    h.send(100, 0, 1, proc="prod-1")  # acknowledged at offset 1 ... where everyone read 3
    res = check(h.ops)
    assert not res.valid
    assert res.counts["lost"] == 1 and res.examples["lost"][0]["value"] == 100
    assert res.counts["inconsistent"] == 1  # the ack and the readers disagree on offset 1


def test_lost_write_never_read_below_end():
    h = H()
    for v in range(1, 5):
        h.send(v, 0, v - 1)
    for r in ("final-0", "final-1"):
        h.final(r, {0: [1, 2, None, 4]}, {0: 4})
    res = check(h.ops)
    assert "lost" in res.errors and res.examples["lost"][0]["value"] == 3
    assert res.counts["gap"] == 0  # offset 2 is known from the acknowledgement


def test_vanished_after_it_was_consumed():
    h = clean(final_log={0: [1, 3, 5], 1: [2, 4, 6, 8]})  # 7 (offset 3) consumed by sub-0, then gone
    res = check(h.ops)
    assert res.errors == ["vanished"], res.summary()
    assert res.examples["vanished"][0]["value"] == 7


def test_unseen_is_bounded():
    h = clean()
    h.send(9, 0, 4)  # acknowledged at the end offset, never read
    res = check(h.ops)
    assert res.counts["unseen"] == 1 and res.errors == ["unseen"]
    assert check(h.ops, unseen_bound=1).valid


def test_duplicate():
    h = clean(final_log={0: [1, 3, 5, 7, 1], 1: [2, 4, 6, 8]})
    res = check(h.ops)
    assert "duplicate" in res.errors
    assert res.examples["duplicate"][0] == {"value": 1, "at": [(0, 0), (0, 4)]}


def test_duplicate_across_partitions_is_also_phantom():
    h = clean(final_log={0: [1, 3, 5, 7], 1: [2, 4, 6, 8, 3]})
    res = check(h.ops)
    assert {"duplicate", "phantom"} <= set(res.errors)


def test_inconsistent_offsets_between_readers():
    h = clean()
    h.send(50, 1, None, type_=None)  # invoked, never completed (unknown)
    h.final("final-2", {0: [1, 3, 5, 7], 1: [2, 50, 6, 8]}, ENDS)
    res = check(h.ops)
    assert "inconsistent" in res.errors
    case = res.examples["inconsistent"][0]
    assert case["part"] == 1 and case["offset"] == 1 and set(case["values"]) == {"4", "50"}
    assert "lost" not in res.errors  # 4 was read by others


def test_gap():
    h = H()
    for v, o in ((1, 0), (2, 1), (4, 3)):
        h.send(v, 0, o)
    h.send(3, 0, None, type_="info")
    for r in ("final-0", "final-1"):
        h.final(r, {0: [1, 2, None, 4]}, {0: 4})
    res = check(h.ops)
    assert res.errors == ["gap"]
    assert res.examples["gap"][0]["offsets"] == [2]


def test_phantom_read():
    h = clean(final_log={0: [1, 3, 5, 7, 999], 1: [2, 4, 6, 8]})
    res = check(h.ops)
    assert "phantom" in res.errors


def test_aborted_read():
    h = clean(final_log={0: [1, 3, 5, 7, 9], 1: [2, 4, 6, 8]})
    h.send(9, 0, None, type_="fail")
    res = check(h.ops)
    assert "aborted-read" in res.errors


def test_info_write_read_is_fine():
    h = clean(final_log={0: [1, 3, 5, 7, 9], 1: [2, 4, 6, 8]})
    h.send(9, 0, None, type_="info")
    res = check(h.ops)
    assert res.valid, res.summary()
    assert res.stats["info_read"] == 1


def test_poll_skip():
    h = clean()
    h.assign("asg-1", [0], {0: 0})
    h.poll("asg-1", [(0, 0, 1)])
    h.poll("asg-1", [(0, 2, 5)])  # skips offset 1
    res = check(h.ops)
    assert res.errors == ["poll-skip"]
    assert res.examples["poll-skip"][0]["skipped"] == [1]


def test_poll_skip_inside_one_poll():
    h = clean()
    h.assign("asg-1", [1], {1: 1})
    h.poll("asg-1", [(1, 1, 4), (1, 3, 8)])
    res = check(h.ops)
    assert res.errors == ["poll-skip"] and res.examples["poll-skip"][0]["internal"]


def test_poll_skip_from_explicit_position():
    h = clean()
    h.assign("asg-1", [0], {0: 1})
    h.poll("asg-1", [(0, 2, 5)])
    assert check(h.ops).errors == ["poll-skip"]


def test_nonmonotonic_poll():
    h = clean()
    h.assign("asg-1", [0], {0: 0})
    h.poll("asg-1", [(0, 0, 1), (0, 1, 3)])
    h.poll("asg-1", [(0, 1, 3)])  # goes back
    res = check(h.ops)
    assert res.errors == ["nonmonotonic-poll"]


def test_final_reader_skip_and_repeat():
    h = clean()
    h.assign("final-9", [0], {0: 0})
    h.poll("final-9", [(0, 0, 1), (0, 1, 3), (0, 0, 1)], f="final-read")
    assert check(h.ops).errors == ["nonmonotonic-poll"]


def test_assignment_change_resets_expectations():
    h = clean()
    h.assign("asg-1", [0], {0: 0})
    h.poll("asg-1", [(0, 0, 1), (0, 1, 3)])
    h.assign("asg-1", [1])  # drops partition 0
    h.assign("asg-1", [0, 1])  # back, from wherever (no explicit position)
    h.poll("asg-1", [(0, 0, 1)])
    assert check(h.ops).valid


def test_rebalance_resets_expectations_but_not_below_commits():
    h = clean()
    h.op("sub-1", "ok", "subscribe", topic="t", group="g2")
    h.op("sub-1", "ok", "rebalance", event="assign", parts=[1])
    h.poll("sub-1", [(1, 0, 2), (1, 1, 4)])
    h.op("sub-1", "ok", "rebalance", event="revoke", parts=[1])
    h.op("sub-1", "ok", "rebalance", event="assign", parts=[1])
    h.poll("sub-1", [(1, 0, 2)])  # nothing committed: re-reading from 0 is allowed
    assert check(h.ops).valid
    h.commit("sub-1", "g2", {1: 1})
    h.op("sub-1", "ok", "rebalance", event="revoke", parts=[1])
    h.op("sub-1", "ok", "rebalance", event="assign", parts=[1])
    h.poll("sub-1", [(1, 0, 2)])  # below the completed commit of offset 1
    res = check(h.ops)
    assert res.errors == ["commit-backwards"]
    assert res.examples["commit-backwards"][0]["why"] == "member resumed below a completed commit"


def test_rebalance_skip_past_commits():
    h = clean()
    h.op("sub-1", "ok", "subscribe", topic="t", group="g2")
    h.op("sub-1", "ok", "rebalance", event="assign", parts=[1])
    h.poll("sub-1", [(1, 0, 2)])
    h.commit("sub-1", "g2", {1: 1})
    h.op("sub-1", "ok", "rebalance", event="revoke", parts=[1])
    h.op("sub-1", "ok", "rebalance", event="assign", parts=[1])
    h.poll("sub-1", [(1, 3, 8)])  # the group committed 1: offsets 1 and 2 never consumed
    res = check(h.ops)
    assert res.errors == ["poll-skip"] and res.examples["poll-skip"][0]["after"] == "rebalance"


def test_commit_backwards():
    h = clean()
    h.commit("sub-1", "g", {0: 2})  # after sub-0's commit of 4 completed
    res = check(h.ops)
    assert res.errors == ["commit-backwards"]


def test_concurrent_commits_are_not_backwards():
    h = clean()
    h.op("sub-1", "invoke", "commit", group="g", offsets={"1": 3})
    h.op("sub-2", "invoke", "commit", group="g", offsets={"1": 2})
    h.op("sub-1", "ok", "commit", group="g", offsets={"1": 3})
    h.op("sub-2", "ok", "commit", group="g", offsets={"1": 2})
    assert check(h.ops).valid


def test_failed_commit_is_not_backwards():
    h = clean()
    h.commit("sub-1", "g", {0: 2}, type_="fail")
    assert check(h.ops).valid


def test_offset_fetch_below_commit():
    h = clean()
    h.op("final-0", "invoke", "committed", group="g", parts=[0, 1])
    h.op("final-0", "ok", "committed", group="g", offsets={"0": 2})
    res = check(h.ops)
    assert res.errors == ["commit-backwards"]
    assert res.examples["commit-backwards"][0]["why"] == "OffsetFetch below a completed commit"


def test_nonmonotonic_send():
    h = H()
    h.send(1, 0, 1)
    h.send(2, 0, 0)
    for r in ("final-0", "final-1"):
        h.final(r, {0: [2, 1]}, {0: 2})
    res = check(h.ops)
    assert res.errors == ["nonmonotonic-send"]


def test_final_incomplete():
    h = clean(skip_final=True)
    h.final("final-0", LOG, ENDS)
    h.final("final-1", LOG, ENDS, complete=False)
    assert check(h.ops).errors == ["final-incomplete"]
    assert check(clean(skip_final=True).ops).errors == ["final-incomplete"]


def test_no_write_window_and_failovers():
    h = H()
    h.t = 0
    h.op("nemesis", "ok", "leaders", leaders={"0": 1}, controller=1)
    h.send(1, 0, 0)
    h.op("nemesis", "invoke", "kill", fault=True, node=1)
    h.op("prod-0", "invoke", "send", part=0, value=2)
    h.t += 5_000_000_000  # 5 s later
    h.op("nemesis", "ok", "leaders", leaders={"0": 2}, controller=2)
    h.op("prod-0", "ok", "send", part=0, value=2, offset=1)
    for r in ("final-0", "final-1"):
        h.final(r, {0: [1, 2]}, {0: 2})
    res = check(h.ops)
    assert res.valid, res.summary()
    assert res.stats["failovers"] == 1 and res.stats["controller_changes"] == 1 and res.stats["faults"] == 1
    assert 5.0 <= res.stats["max_no_write_window_s"] < 5.1
    assert 5.0 <= res.stats["max_ack_latency_s"] < 5.1


def test_acknowledged_without_offset():
    h = clean(final_log={0: [1, 3, 5, 7, 9], 1: [2, 4, 6, 8]})
    h.send(9, 0, None)  # ok, offset unknown (librdkafka's answer to a duplicate)
    res = check(h.ops)
    assert res.valid, res.summary()
    assert res.stats["acked_without_offset"] == 1
    h = clean()
    h.send(9, 0, None)  # ... and never read by the complete final reads: lost
    res = check(h.ops)
    assert res.errors == ["lost"]


# ---------------------------------------------------------------- transactional histories

def txn(h: H, name, sends, outcome, proc="prod-0"):
    """``sends``: [(value, part, offset)], each delivered; ``outcome`` ok, fail or info."""
    h.op(proc, "invoke", "txn", txn=name, values=[v for v, _p, _o in sends])
    for v, p, o in sends:
        h.op(proc, "invoke", "send", part=p, value=v, txn=name)
        h.op(proc, "ok", "send", part=p, value=v, offset=o, txn=name)
    h.op(proc, outcome, "txn", txn=name, values=[v for v, _p, _o in sends])


def txn_history(final_log, committed=True) -> H:
    """T1 writes 1 (p0 @0) and 2 (p1 @0), committed; T2 writes 3 (p0 @2) and 4 (p1 @2), aborted
    (offsets 1 and 3 are markers); T3 writes 5 (p0 @4), committed."""
    h = H()
    txn(h, "T1", [(1, 0, 0), (2, 1, 0)], "ok" if committed else "info")
    txn(h, "T2", [(3, 0, 2), (4, 1, 2)], "fail")
    txn(h, "T3", [(5, 0, 4)], "ok")
    h.final("final-0", final_log, {0: 6, 1: 4})
    return h


def test_clean_transactional_history_passes():
    res = check(txn_history({0: [1, None, None, None, 5], 1: [2]}).ops)
    assert res.valid, res.summary()
    assert res.stats["txns"] == {"ok": 2, "fail": 1, "info": 0}
    assert res.counts["gap"] == 0  # markers and aborted records hold offsets nobody reads


def test_transactional_aborted_read():
    res = check(txn_history({0: [1, None, 3, None, 5], 1: [2]}).ops)
    assert kinds(res) == {"aborted-read"}, res.summary()


def test_transactional_lost_committed_write_and_torn():
    res = check(txn_history({0: [1, None, None, None, 5], 1: [None]}).ops)
    assert {"lost", "torn-txn"} <= kinds(res), res.summary()


def test_transactional_unknown_outcome_all_or_nothing():
    assert check(txn_history({0: [None, None, None, None, 5], 1: [None]}, committed=False).ops).valid
    res = check(txn_history({0: [1, None, None, None, 5], 1: [None]}, committed=False).ops)
    assert kinds(res) == {"torn-txn"}, res.summary()


def test_write_cycle_is_reported_not_failed():
    h = H()
    txn(h, "T1", [(1, 0, 0), (2, 1, 1)], "ok")
    txn(h, "T2", [(3, 1, 0), (4, 0, 1)], "ok", proc="prod-1")
    h.final("final-0", {0: [1, 4], 1: [3, 2]}, {0: 2, 1: 2})
    res = check(h.ops)
    assert res.valid, res.summary()
    assert res.counts["write-cycle"] == 1
    assert res.examples["write-cycle"][0]["cycle"] == ["T1", "T2"]


# ---- the tiered kind (issue 57): the bucket op, the log start, padded values

def bucket_op(h: H, copies, extra_keys=(), active_bases=None):
    """``copies``: (part, start, end, kinds) per copy; each gets its own segment id."""
    import base64
    import uuid
    objects, manifests = {}, {}
    for i, (part, start, end, kinds_) in enumerate(copies):
        sid = base64.urlsafe_b64encode(uuid.UUID(int=i + 1).bytes).decode().rstrip("=")
        stem = f"t-AAAAAAAAAAAAAAAAAAAAAA/{part}/{start:020d}-{sid}"
        for k in kinds_:
            objects[f"{stem}.{k}"] = 1000 if k == "log" else 10
        if "rsm-manifest" in kinds_:
            manifests[f"{stem}.rsm-manifest"] = {"start_offset": start, "end_offset": end, "log_bytes": 1000}
    for k in extra_keys:
        objects[k] = 1
    h.op("bucket", "ok", "bucket", settled=True, objects=objects, manifests=manifests, active_bases=active_bases)


WHOLE = ("log", "indexes", "rsm-manifest")


def test_whole_contiguous_copies_pass():
    h = clean()
    bucket_op(h, [(0, 0, 1, WHOLE), (0, 2, 3, WHOLE), (1, 0, 3, WHOLE)])
    res = check(h.ops)
    assert res.valid, res.summary()
    assert res.stats["remote"]["copies"] == 3 and res.stats["remote"]["copied_end"] == {"0": 3, "1": 3}


def test_bucket_anomalies():
    h = clean()
    bucket_op(h, [(0, 0, 1, WHOLE), (0, 2, 3, ("log", "indexes")),  # an unfinished copy left behind
                  (0, 0, 2, WHOLE),                                 # overlaps the first
                  (1, 0, 1, WHOLE), (1, 5, 6, WHOLE)],              # offsets 2-4 in no copy
              extra_keys=["t-AAAAAAAAAAAAAAAAAAAAAA/1/stray"])
    res = check(h.ops)
    assert not res.valid
    assert {"remote-incomplete", "remote-overlap", "remote-gap"} <= set(res.errors)
    assert res.counts["remote-incomplete"] == 2  # the copy without its manifest, the stray key
    assert res.examples["remote-gap"][0]["missing"] == [2, 4]


def test_copies_behind_the_active_segment_after_the_quiet_period():
    h = clean()
    bucket_op(h, [(0, 0, 1, WHOLE), (1, 0, 3, WHOLE)], active_bases={"0": 4, "1": 4})
    res = check(h.ops)
    assert res.errors == ["remote-behind"], res.summary()
    assert res.examples["remote-behind"][0] == {"part": 0, "copied_end": 1, "active_segment_base": 4,
                                                "settled": True}


def test_a_log_start_above_zero_fails():
    h = clean()
    h.op("final-0", "info", "log-start", part=0, low=2, end=4)
    res = check(h.ops)
    assert res.errors == ["log-start-moved"], res.summary()


def test_padded_values_round_trip_and_corruption_is_a_phantom():
    from workload import encode_value, parse_value
    raw = encode_value(10_000_123, 2048)
    assert len(raw) == 2048 and parse_value(raw) == 10_000_123
    assert parse_value(encode_value(7)) == 7
    assert str(parse_value(raw[:-1] + b"#")).startswith("?corrupt:10000123")
    h = clean()
    h.poll("asg-1", [(0, 0, parse_value(raw[:-1] + b"#"))])
    res = check(h.ops)
    assert "phantom" in res.errors
