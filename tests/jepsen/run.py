#!/usr/bin/env python3
"""Runs seeded fault schedules against fresh Frieda clusters and checks every history.

    tests/jepsen/run.py --fault KIND|all --schedules N --seed S --secs 25 --out DIR

KIND: kill-leader, kill-controller, pause, rolling, reassign, partition, power-loss, mixed, tiered,
diskless.

Schedule i of a kind uses seed S+i (printed; ``--schedules 1 --seed S+i`` runs it again). Per
schedule: a fresh cluster (3 voters; reassign and mixed add a broker-only node 4) under
``DIR/<kind>-<seed>/``, one RF 3 topic of ``--partitions`` partitions (min.insync.replicas=2),
client processes for ``--secs`` s (2 idempotent acks=all producers, 2 assign consumers, 2
subscribed consumers of one group), the nemesis's faults from 3 s to ``secs - 5`` s, heal, then
two final readers (bootstrapped from different nodes) read every partition to its high
watermark; the checker (checker.py) judges the histories. The ``tiered`` kind (issue 57) differs:
the cluster tiers to its own SeaweedFS behind the S3 fault proxy, one topic of 4 partitions
tiered with 1 MiB segments and one segment kept locally, the producers write MB/s of padded
values, the two assign() consumers keep going back to offset 0 (no subscribed consumers), and
once the copies are done the bucket is recorded (``history/bucket.jsonl``) for the checker,
before the final reads. The ``diskless`` kind (issue 60) runs the tiered kind's store, proxy and
clients against a topic with ``diskless.enable=true`` (4 partitions, records only in the
bucket), with its own faults (nemesis.py); there is no bucket record and no replica comparison
(the partitions' local logs stay empty). A passing run's data is deleted (its
result.json stays); a failing run keeps its histories and node logs. Prints a table per fault
kind and exits 1 if any run found an anomaly or failed.

The machine is small: do not run this while another benchmark or CI run is using it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from checker import REMOTE_KEY, check  # noqa: E402
from history import HistoryWriter, read_history  # noqa: E402
from nemesis import KINDS, Nemesis, load_cluster_module, load_store_modules, make_schedule, nodes_for  # noqa: E402

PYTHON = sys.executable
WORKLOAD = HERE / "workload.py"

# the cluster's settings (Kafka's names); the rest are tests/cluster/conftest.py's defaults
SETTINGS = {"broker.session.timeout.ms": 3000}

# ---- the tiered kind (issue 57)
MIB = 1 << 20
# with the store's settings (seaweedfs.SeaweedFS.broker_settings, its endpoint the fault proxy's):
# a copy round every 200 ms (in practice as soon as the last one ends: the unfixed broker of issue
# 57 lost records in 3 of 8 schedules with 500 ms, in 3 of 4 of the others with 200 ms), local
# retention every 500 ms; a partition whose copy round failed (store
# stopped or failing) retries after at most 2 s (default 30 s), so the copies settle soon after
# the heal; a chunk stays in the brokers' chunk caches for 2 s (default 10 min): the final reads
# start after the bucket's quiet period (at least 3 s), so they read what the bucket holds, not
# chunks the consumers had cached of a copy deleted since (a 30 s schedule on the unfixed broker
# read back a copy deleted from the bucket through the caches, 2026-12-02)
TIERED_SETTINGS = {"remote.log.manager.task.interval.ms": 200, "log.retention.check.interval.ms": 500,
                   "remote.log.manager.task.retry.backoff.max.ms": 2000,
                   "rsm.config.fetch.chunk.cache.retention.ms": 2000}
# 1 MiB segments (the broker's minimum), one of them kept locally, nothing deleted by total retention
TIERED_TOPIC = {"remote.storage.enable": "true", "segment.bytes": str(MIB), "local.retention.bytes": str(MIB),
                "retention.ms": "-1", "retention.bytes": "-1"}
TIERED_VALUE_BYTES = [1024, 4096]  # each value padded to a seeded size in this range (2.5 KiB mean)
# the diskless kind's topic: every record in the bucket only (issue 60)
DISKLESS_TOPIC = {"diskless.enable": "true"}
# compaction into 1 MiB objects (about one per partition per second at the default rate) and the
# deletion of the objects it replaces 2 s later, so both run through every fault of a schedule
DISKLESS_SETTINGS = {"diskless.compaction.max.bytes": MIB, "diskless.object.delete.delay.ms": 2000}
DEFAULT_PARTITIONS = {"tiered": 4, "diskless": 4}
# records/s per producer (2 producers): tiered and diskless ~2.5 MB/s each, 5 MB/s in all
DEFAULT_RATE = {"tiered": 1000, "diskless": 1000}
# the runner writes HEALED_FILE (in the history dir) once the nemesis healed the cluster; the
# producers go on for TAIL_SECS after it (workload.LoadWindow)
HEALED_FILE = "healed"
TAIL_SECS = 3.0
TIERED_REWIND = 0.6  # the share of an assign() consumer's re-assignments that go back to offset 0
TIERED_MESSAGE_TIMEOUT_MS = 120_000  # see spawn_tiered_clients
TIERED_FINAL_READ_SECS = 90  # the final readers read everything, most of it from the bucket (~300 MB: 2-20 s)


def spawn(role: str, cfg: dict, logdir: Path) -> subprocess.Popen:
    err = open(logdir / f"{cfg['proc']}.stderr", "ab")
    try:
        return subprocess.Popen([PYTHON, str(WORKLOAD), role, json.dumps(cfg)], stdin=subprocess.DEVNULL,
                                stdout=err, stderr=err, cwd=str(HERE))
    finally:
        err.close()


def spawn_clients(base: dict, seed: int, rate: int, txn: bool, group: str, logdir: Path) -> list[subprocess.Popen]:
    """The workload's six client processes: two producers (transactional with ``txn``), two
    assign() consumers, two subscribe() consumers of ``group``."""
    procs = [spawn("txn-producer" if txn else "producer",
                   dict(base, proc=f"prod-{i}", index=i + 1, seed=seed * 100 + i, rate=rate, flush_secs=40,
                        message_timeout_ms=30000), logdir) for i in range(2)]
    procs += [spawn("assign", dict(base, proc=f"asg-{i}", seed=seed * 100 + 10 + i), logdir) for i in range(2)]
    procs += [spawn("subscribe", dict(base, proc=f"sub-{i}", seed=seed * 100 + 20 + i, group=group), logdir)
              for i in range(2)]
    return procs


def spawn_tiered_clients(base: dict, seed: int, rate: int, logdir: Path, txn: bool = False) -> list[subprocess.Popen]:
    """The tiered kind's four client processes: two producers of padded values (MB/s), two
    assign() consumers that keep going back to offset 0 (history read from the bucket while
    copies, local retention and faults go on). With ``txn`` (the diskless kind) the producers
    are transactional (role txn-producer: unpadded values, transactions of 1-4 records) and the
    consumers read ``read_committed`` as always."""
    if txn:
        procs = [spawn("txn-producer", dict(base, proc=f"prod-{i}", index=i + 1, seed=seed * 100 + i, rate=rate,
                                            flush_secs=40), logdir) for i in range(2)]
        procs += [spawn("assign", dict(base, proc=f"asg-{i}", seed=seed * 100 + 10 + i, rewind=TIERED_REWIND),
                        logdir) for i in range(2)]
        return procs
    # message.timeout.ms 120 s, not 30: under this load and these faults an acknowledgement can
    # take 30 s, and when an in-flight message times out librdkafka bumps the idempotent
    # producer's epoch and renumbers the messages it retries ("epoch bump ... message(s) timed
    # out", "resetting epoch base seq" with JEPSEN_RDKAFKA_DEBUG=eos), so a retried batch the
    # broker had already appended is appended again: duplicates of the client's making (seen at
    # 5-7.5 MB/s with 30 s, 2026-12-02), which would hide what this kind looks for
    procs = [spawn("producer", dict(base, proc=f"prod-{i}", index=i + 1, seed=seed * 100 + i, rate=rate,
                                    flush_secs=40, message_timeout_ms=TIERED_MESSAGE_TIMEOUT_MS,
                                    value_bytes=TIERED_VALUE_BYTES), logdir)
             for i in range(2)]
    procs += [spawn("assign", dict(base, proc=f"asg-{i}", seed=seed * 100 + 10 + i, rewind=TIERED_REWIND), logdir)
              for i in range(2)]
    return procs


def spawn_finals(base: dict, group: str | None, bootstraps: list[str], logdir: Path,
                 read_secs: float = 60) -> list[subprocess.Popen]:
    """One final reader per bootstrap address, each also fetching every group's offsets."""
    groups = ([group] if group else []) + ["jepsen-asg-0", "jepsen-asg-1"]
    return [spawn("final", dict(base, proc=f"final-{i}", bootstrap=addr, read_secs=read_secs, groups=groups), logdir)
            for i, addr in enumerate(bootstraps)]


def dump_stacks(p: subprocess.Popen) -> str:
    """Issue 12 diagnosis: a hung client's native stacks (librdkafka's threads and the Python
    thread's C frames; gdb, if installed) into ``logs/<proc>.stack.txt`` before the runner kills it.
    Returns a one-line summary for the problem report (a CI run keeps no tmp dir): the main
    thread's innermost librdkafka/confluent-kafka frames and the client's last history entry."""
    summary = []
    try:
        cfg = json.loads(p.args[3])
        hist = Path(cfg["out"]) / f"{cfg['proc']}.jsonl"
        if hist.exists():
            lines = hist.read_text().splitlines()
            if lines:
                summary.append(f"last history entry: {lines[-1][:300]}")
    except Exception as e:  # noqa: BLE001 - diagnosis only
        return f"(no diagnosis: {e})"
    gdb = shutil.which("gdb")
    if gdb is None:
        return "; ".join(summary)
    try:
        dest = Path(cfg["out"]).parent / "logs" / f"{cfg['proc']}.stack.txt"
        r = subprocess.run([gdb, "-p", str(p.pid), "-batch", "-ex", "thread apply all bt 40"],
                           capture_output=True, text=True, timeout=120)
        dest.write_text(r.stdout + r.stderr)
        # the Python thread is the process's first thread: gdb prints it last ("Thread 1")
        main = r.stdout.rsplit("\nThread 1 ", 1)[-1] if "\nThread 1 " in r.stdout else ""
        frames = [m.group(1) for m in re.finditer(r" in (\w+) \(", main)
                  if m.group(1).startswith(("rd_kafka", "Consumer_", "Producer_", "cnd_", "pthread_cond"))]
        summary.append(f"main thread: {' <- '.join(frames[:8]) or 'no librdkafka frames'}")
    except Exception as e:  # noqa: BLE001 - diagnosis only
        summary.append(f"dump_stacks failed: {e}")
    return "; ".join(summary)


def wait_procs(procs: list[subprocess.Popen], timeout: float) -> list[str]:
    """Waits for every process; SIGKILLs (by PID) the ones still running at ``timeout``, with
    their stacks and last history entry in the problem report."""
    problems = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            why = dump_stacks(p)
            problems.append(f"client pid {p.pid} ({' '.join(p.args[2:3])}) still running after {timeout:.0f}s: "
                            f"killed; {why}")
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)
        if p.returncode not in (0, -signal.SIGKILL):
            problems.append(f"client {p.args[2]} pid {p.pid} exited with {p.returncode}")
    return problems


def replicas_identical(cluster, topic: str, attempts: int = 5) -> list[str]:
    """Every replica of every partition holds the same batches, byte for byte, in its segment
    files (asked again for a few seconds: a follower may still be fetching the tail)."""
    import kafka_wire_extra as kx  # tests/integration (on sys.path through the cluster module)

    def batches(node_id: int, p: int) -> list[bytes]:
        out = []
        for seg in kx.partition_segments(cluster.nodes[node_id].data_dir / f"{topic}-{p}"):
            data = seg.read_bytes()
            out += [data[b.position:b.position + b.size] for b in kx.parse_batches(data)]
        return out

    diffs: list[str] = []
    for _ in range(attempts):
        diffs = []
        md = cluster.raw_metadata(cluster.running()[0], [topic])
        for p, part in sorted(md.topics[topic][1].items()):
            logs = {r: batches(r, p) for r in part.replicas}
            first = logs[part.replicas[0]]
            for r, bs in logs.items():
                if bs != first:
                    n = next((i for i, (a, b) in enumerate(zip(first, bs)) if a != b), min(len(first), len(bs)))
                    diffs.append(f"{topic}[{p}]: replica {r} has {len(bs)} batches, replica {part.replicas[0]} "
                                 f"{len(first)}; first difference at batch {n}")
        if not diffs:
            return []
        time.sleep(2)
    return ["replicas differ: " + "; ".join(diffs)]


def replicas_agree(cluster, topic: str, attempts: int = 8) -> list[str]:
    """``replicas_identical`` for a tiered topic, whose replicas delete their oldest local
    segments at their own pace (local retention) and may start their log again above the copied
    offsets: per partition, every replica ends at the same batch, and the batches at base offsets
    several replicas hold are the same bytes (asked again for a few seconds: a follower may still
    be fetching, a segment may go while it is read)."""
    import kafka_wire_extra as kx  # tests/integration (on sys.path through the cluster module)

    def batches(node_id: int, p: int) -> dict[int, bytes]:
        out = {}
        for seg in kx.partition_segments(cluster.nodes[node_id].data_dir / f"{topic}-{p}"):
            try:
                data = seg.read_bytes()
            except FileNotFoundError:
                continue  # deleted by local retention since the listing
            out.update({b.base_offset: data[b.position:b.position + b.size] for b in kx.parse_batches(data)})
        return out

    diffs: list[str] = []
    for _ in range(attempts):
        diffs = []
        md = cluster.raw_metadata(cluster.running()[0], [topic])
        for p, part in sorted(md.topics[topic][1].items()):
            logs = {r: batches(r, p) for r in part.replicas}
            last = {r: max(bs, default=-1) for r, bs in logs.items()}
            if len(set(last.values())) > 1:
                diffs.append(f"{topic}[{p}]: the replicas' last batches start at {last}")
            for r, bs in logs.items():
                for r2, bs2 in logs.items():
                    if r2 <= r:
                        continue
                    bad = [o for o in bs.keys() & bs2.keys() if bs[o] != bs2[o]]
                    if bad:
                        diffs.append(f"{topic}[{p}]: replicas {r} and {r2} differ in {len(bad)} batches "
                                     f"(first at offset {min(bad)})")
        if not diffs:
            return []
        time.sleep(2)
    return ["replicas differ: " + "; ".join(diffs)]


def record_bucket(store, cluster, topic: str, hist: Path, timeout: float = 60) -> dict:
    """After the heal, before the final reads: waits until the copies are done (on every partition
    the finished copies reach the leader's active segment, and the bucket's listing is the same
    3 s apart; at most ``timeout`` s, or 12 s without a change while behind), then writes the
    bucket's listing, every manifest's offsets and the leaders' active segments to
    ``history/bucket.jsonl`` (proc "bucket") for the checker, which requires of it that every
    object belong to a finished copy (its three objects), that a partition's finished copies
    neither overlap nor leave a hole from offset 0 on, and that they reach the active segment.
    Returns the op."""
    h = HistoryWriter(hist / "bucket.jsonl", "bucket")
    manifests: dict[str, dict] = {}

    def listing() -> dict[str, int]:
        objs = store.objects()
        for key in objs:
            if key.endswith(".rsm-manifest") and key not in manifests:
                try:
                    m = json.loads(store.get(key))
                    manifests[key] = {k: m.get(k) for k in ("start_offset", "end_offset", "log_bytes",
                                                            "indexes_bytes", "segment_id")}
                except Exception as e:  # noqa: BLE001 - deleted since the listing, or unreadable
                    manifests[key] = {"error": repr(e)[:200]}
        return objs

    def active_bases() -> dict[int, int | None]:
        """The base offset of the newest local segment of each partition's leader."""
        md = cluster.raw_metadata(cluster.running()[0], [topic])
        out = {}
        for p, part in md.topics[topic][1].items():
            if part.leader not in cluster.nodes:
                out[p] = None
                continue
            d = cluster.nodes[part.leader].data_dir / f"{topic}-{p}"
            bases = sorted(int(f.stem) for f in d.glob("*.log") if f.stem.isdigit())
            out[p] = bases[-1] if bases else None
        return out

    def copied_ends(objs: dict) -> dict[int, int]:
        ends: dict[int, int] = {}
        for key in objs:
            m = REMOTE_KEY.match(key)
            if m and m["kind"] == "rsm-manifest" and isinstance(manifests.get(key, {}).get("end_offset"), int):
                p = int(m["part"])
                ends[p] = max(ends.get(p, -1), manifests[key]["end_offset"])
        return ends

    t0 = time.monotonic()
    settled = False
    objs = listing()
    changed = time.monotonic()
    bases: dict = {}
    while time.monotonic() - t0 < timeout:
        time.sleep(3)
        again = listing()
        try:
            bases = active_bases()
        except Exception as e:  # noqa: BLE001 - recorded; tried again
            bases = {"error": repr(e)[:200]}
        ends = copied_ends(again)
        caught_up = "error" not in bases and all(b is None or ends.get(p, -1) + 1 >= b for p, b in bases.items())
        if again != objs:
            changed = time.monotonic()
        elif caught_up:
            settled = True
            break
        elif time.monotonic() - changed >= 12:
            break  # nothing changes and the copies are behind: stuck (the checker's remote-behind)
        objs = again
    live = {k: v for k, v in manifests.items() if k in objs}
    return h.write("ok", "bucket", topic=topic, settled=settled, waited_s=round(time.monotonic() - t0, 1),
                   active_bases={str(p): b for p, b in bases.items()}, objects=objs, manifests=live)


def broker_log_evidence(node_logs: dict[int, str], before: float | None = None) -> dict:
    """What the node logs say about the copies (issue 57): every "deleted an unfinished remote
    copy" line (node, partition, offsets, segment id) and, among them, the ones of a segment id
    that some node logged "copied a segment to remote storage" for (a finished copy deleted as
    unfinished: the mechanism of issue 57; ``own`` when the same node copied it). A finished copy
    whose CopyFinished commit answered late or not at all leaves no "copied" line, so the runner
    also matches the deletions against the bucket's gaps (``gap_deletions``). Also counts the
    ERROR and WARN lines stamped before ``before`` (a wall time: not the final SIGTERMs'
    openraft "Stopped" errors) and panics."""
    import datetime
    sid = re.compile(r"segment_id=([0-9a-fA-F-]{36})")
    field = re.compile(r"\b(partition|start_offset|end_offset)=(\d+)")
    stamp = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z ")
    copied: dict[str, int] = {}  # segment id -> the node that logged its copy
    deleted = []
    errors = warns = panics = 0
    first_errors: list[str] = []

    def in_run(line: str) -> bool:
        m = stamp.match(line)
        if before is None or m is None:
            return True
        t = datetime.datetime.fromisoformat(m[1][:26]).replace(tzinfo=datetime.timezone.utc).timestamp()
        return t < before

    for node, text in sorted(node_logs.items()):
        for line in text.splitlines():
            if (" ERROR " in line or " WARN " in line) and not in_run(line):
                continue
            if " ERROR " in line:
                errors += 1
                if len(first_errors) < 5:
                    first_errors.append(f"node {node}: {line[:300]}")
            elif " WARN " in line:
                warns += 1
            if "panicked" in line:
                panics += 1
            m = sid.search(line)
            if not m:
                continue
            if "copied a segment to remote storage" in line:
                copied[m[1]] = node
            elif "deleted an unfinished remote copy" in line:
                f = {k: int(v) for k, v in field.findall(line)}
                deleted.append({"node": node, "partition": f.get("partition"), "start": f.get("start_offset"),
                                "end": f.get("end_offset"), "segment_id": m[1], "at": line[:27]})
    finished = [dict(d, copied_by=copied[d["segment_id"]], own=copied[d["segment_id"]] == d["node"])
                for d in deleted if d["segment_id"] in copied]
    return {"finished_copy_deleted": len(finished), "own_copy_deleted": sum(1 for d in finished if d["own"]),
            "examples": finished[:5], "unfinished_deleted": deleted[:50], "error_lines": errors,
            "warn_lines": warns, "panics": panics, "first_errors": first_errors}


def gap_deletions(gaps: list[dict], deleted: list[dict]) -> list[dict]:
    """The "deleted an unfinished remote copy" lines of the bucket's gaps (the checker's
    ``remote-gap`` examples): the copies whose deletion left each gap."""
    out = []
    for g in gaps:
        a, b = g["missing"]
        out += [dict(d, gap=[g["part"], a, b]) for d in deleted
                if d["partition"] == g["part"] and d["start"] is not None and d["end"] is not None
                and d["start"] <= b and d["end"] >= a]
    return out


def commit_start_offsets(admin, group: str, topic: str, partitions: int) -> None:
    """Commits offset 0 of every partition for the subscribed consumers' group before they start,
    so they begin at a committed offset instead of asking ListOffsets for the earliest one.

    Why: librdkafka (2.x, rdkafka_partition.c, rd_kafka_toppar_handle_Offset) treats a ListOffsets
    reply that arrives after the partition moved on (an older op version, e.g. a request retried
    for seconds against a powered-off broker) as "outdated" and then calls
    rd_kafka_toppar_offset_retry, which puts the partition back into the offset-query state with
    the stale logical position: the consumer re-queries BEGINNING and jumps back to offset 0 in
    the middle of its assignment, without an error or a rebalance. Power-loss soaks B and C (8 of
    95 and 1 of 24 schedules) and seeds 2132 and 2133 with librdkafka's debug log
    (``JEPSEN_RDKAFKA_DEBUG=fetch,topic,consumer``): "outdated offset response: (re)starting
    offset query timer for offset BEGINNING", then "start fetching at offset 0". The broker's
    answers were right (BEGINNING is 0); the reset is the client's.
    """
    from confluent_kafka import TopicPartition
    from confluent_kafka import ConsumerGroupTopicPartitions
    deadline = time.monotonic() + 30
    missing = list(range(partitions))
    while True:
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, 0) for p in missing])
        try:
            res = admin.alter_consumer_group_offsets([req])[group].result(10)
            # Errors come per partition too, without an exception: a coordinator whose metadata
            # has not seen the new topic yet answers UNKNOWN_TOPIC_OR_PARTITION for it (Kafka's
            # OffsetCommit does the same). Soak F's three power-loss jumps to offset 0 were
            # partitions left without this commit, which then met the ListOffsets case above.
            missing = [tp.partition for tp in res.topic_partitions if tp.error is not None]
            if not missing:
                return
            errors = {tp.partition: str(tp.error) for tp in res.topic_partitions if tp.error is not None}
            why = f"not committed: {errors}"
            print(f"start offsets of {group}: {why}; retrying", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - the coordinator may still be loading: retried, bounded
            why = str(e)
        if time.monotonic() > deadline:
            raise RuntimeError(f"committing the start offsets of {group}: {why}")
        time.sleep(0.5)


def after_heal(ops: list[dict], healed_at: float | None) -> dict | None:
    """What the producers got done after the nemesis healed the cluster (the history's ``mono``
    times against ``healed_at``): acknowledged sends and committed transactions. The liveness
    check of a run: a cluster that recovers serves its producers again (``None`` if the run
    never healed)."""
    if healed_at is None:
        return None
    acked = committed = 0
    for op in ops:
        if not op.get("proc", "").startswith("prod-") or op.get("type") != "ok":
            continue
        if op.get("mono", 0) / 1e9 < healed_at:
            continue
        if op.get("f") == "send":
            acked += 1
        elif op.get("f") == "txn":
            committed += 1
    return {"acked": acked, "txns_committed": committed}


def run_schedule(kind: str, seed: int, secs: float, out: Path, partitions: int | None = None,
                 rate: int | None = None, keep: bool = False, n_nodes: int | None = None, quiet: bool = False,
                 txn: bool = False) -> dict:
    """One seeded schedule on a fresh cluster; returns its result (also in ``<dir>/result.json``).
    ``txn``: the producers are transactional (workload role txn-producer) and the checker adds
    its transactional checks (not with the tiered kind: ValueError; the diskless kind's
    transactional producers send unpadded values, at most ``rate`` records/s each in transactions
    of 1-4). ``partitions`` and ``rate`` (records/s per producer) default per kind (5 and 100;
    tiered 4 and 1000 padded values)."""
    partitions = partitions or DEFAULT_PARTITIONS.get(kind, 5)
    rate = rate or DEFAULT_RATE.get(kind, 100)
    tiered = kind == "tiered"
    diskless = kind == "diskless"
    if txn and tiered:
        raise ValueError("the tiered kind has no transactional workload")
    cm = load_cluster_module()
    n = n_nodes or nodes_for(kind)
    rundir = Path(out).resolve() / f"{kind}-{'txn-' if txn else ''}{seed}"
    if rundir.exists():
        shutil.rmtree(rundir)
    hist = rundir / "history"
    logs = rundir / "logs"
    hist.mkdir(parents=True)
    logs.mkdir()
    steps = make_schedule(kind, seed, secs, n, partitions, SETTINGS["broker.session.timeout.ms"])
    (rundir / "schedule.json").write_text(json.dumps(steps, indent=1))
    topic = f"jepsen-{kind}-{seed}-{uuid.uuid4().hex[:6]}"
    group = "jepsen-sub"
    procs: list[subprocess.Popen] = []
    problems: list[str] = []
    nemesis = None
    net = None
    disks: dict = {}
    store = proxy = None
    settings = dict(SETTINGS)
    cluster_kw: dict = {}
    try:
        if tiered or diskless:
            # the object store of this schedule: its own ports and directory, behind the fault proxy
            seaweedfs, s3_fault_proxy = load_store_modules()
            store = seaweedfs.SeaweedFS(rundir)
            store.start()
            proxy = s3_fault_proxy.FaultProxy(store.ports["s3.port"])
            settings.update(store.broker_settings())
            settings["rsm.config.storage.s3.endpoint.url"] = proxy.endpoint
            if tiered:
                settings.update(TIERED_SETTINGS)
            if diskless:
                settings.update(DISKLESS_SETTINGS)
        elif kind == "partition":
            sys.path.append(str(HERE.parent / "cluster"))
            from netns import Net
            net = Net(n)
            cluster_kw = {"hosts": net.hosts, "netns": net.ns}
        elif kind == "power-loss":
            sys.path.append(str(HERE.parent / "powerfail"))
            from syncfs import SyncFs
            # every append fsync'ed before it is acknowledged, on leaders and followers, for every
            # topic (__consumer_offsets too): then even a power cut of every node loses nothing
            settings["log.flush.interval.messages"] = 1
            for i in range(1, n + 1):
                d = rundir / f"disk-{i}"
                disks[i] = SyncFs(d / "backing", d / "mnt", d)
                disks[i].mount()
            cluster_kw = {"data_dirs": {i: fs.mountpoint for i, fs in disks.items()}}
    except BaseException:
        if net is not None:
            net.close()
        for fs in disks.values():
            fs.unmount()
        if proxy is not None:
            proxy.close()
        if store is not None:
            store.kill()
        raise
    cluster = cm.Cluster(rundir / "cluster", n, **settings, **cluster_kw)
    steps_run = 0
    t_start = time.monotonic()
    healed_at = None
    result = None
    crashed = None
    bucket = None
    try:
        cluster.start_all()
        from confluent_kafka.admin import NewTopic
        admin = cluster.admin()  # kept referenced until the future resolves
        config = {"min.insync.replicas": "2", **(TIERED_TOPIC if tiered else DISKLESS_TOPIC if diskless else {})}
        fs = admin.create_topics([NewTopic(topic, partitions, 3, config=config)])
        fs[topic].result(30)
        cluster.wait_topic(topic, partitions)
        if not (tiered or diskless):  # the tiered and diskless kinds have no subscribed consumers
            commit_start_offsets(admin, group, topic, partitions)
        del admin
        base = {"bootstrap": cluster.bootstrap, "topic": topic, "partitions": partitions, "out": str(hist),
                "secs": secs, "healed_file": str(hist / HEALED_FILE), "tail_secs": TAIL_SECS}
        if tiered or diskless:
            procs += spawn_tiered_clients(base, seed, rate, logs, txn=txn)
        else:
            procs += spawn_clients(base, seed, rate, txn, group, logs)
        nemesis = Nemesis(cluster, topic, partitions, hist, seed, net=net, disks=disks, store=store, proxy=proxy)
        steps_run = nemesis.run(steps, start_after=3, fault_secs=max(4.0, secs - 5))
        nemesis.heal()
        # the producers go on for TAIL_SECS from here (workload.LoadWindow): load on a whole
        # cluster at the end of every run, however long the faults took
        healed_at = time.monotonic()
        (hist / (HEALED_FILE + ".tmp")).write_text(repr(healed_at))
        (hist / (HEALED_FILE + ".tmp")).rename(hist / HEALED_FILE)
        problems += wait_procs(procs, timeout=max(5.0, secs - (time.monotonic() - t_start)) + 75)
        if tiered:
            # the copies done and the bucket quiet (>= 3 s: the chunk caches expire meanwhile)
            bucket = record_bucket(store, cluster, topic, hist)
        # the final reads: two independent readers bootstrapped from different nodes
        read_secs = TIERED_FINAL_READ_SECS if tiered or diskless else 60
        finals = spawn_finals(base, None if tiered or diskless else group, [cluster.nodes[1 + i % n].addr for i in range(2)],
                              logs, read_secs=read_secs)
        problems += wait_procs(finals, timeout=read_secs + 60)
        procs += finals
        if tiered:
            problems += replicas_agree(cluster, topic)
        elif not diskless:
            problems += replicas_identical(cluster, topic)
    except Exception as e:  # noqa: BLE001 - the run could not be carried out: kept, reported
        import traceback
        crashed = f"{type(e).__name__}: {str(e)[:1000]}"
        (rundir / "runner-error.txt").write_text(traceback.format_exc())
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)
        if nemesis is not None:
            nemesis.close()
            problems += nemesis.problems
        teardown_wall = time.time()
        problems += cluster.teardown(passed=True)
        for node in cluster.nodes.values():
            try:
                shutil.copy(node.stderr_path, logs / f"node-{node.id}.stderr")
            except OSError:
                pass
        if net is not None:
            net.heal()
            net.close()
        for fs in disks.values():
            try:
                fs.unmount()
            except Exception as e:  # noqa: BLE001
                problems.append(f"unmount {fs.mountpoint}: {e}")
        if proxy is not None:
            proxy.close()
        if store is not None:
            store.kill()  # by PID (SIGKILL ends a stopped process too)
            try:
                shutil.move(str(store.log_path), logs / "seaweedfs.log")
            except OSError:
                pass
    node_logs = {}
    if tiered:
        for node in cluster.nodes.values():
            try:
                node_logs[node.id] = (logs / f"node-{node.id}.stderr").read_text(errors="replace")
            except OSError:
                pass
    ops: list[dict] = []
    try:
        ops = read_history(hist)
        res = check(ops)
    except Exception as e:  # noqa: BLE001 - a checker bug must not end a soak; the run is kept
        import traceback
        (rundir / "checker-error.txt").write_text(traceback.format_exc())
        crashed = (crashed or "") + f" checker: {type(e).__name__}: {e}"
        res = check([])
    elapsed = time.monotonic() - t_start
    after = after_heal(ops, healed_at)
    result = {"kind": kind, "txn": txn, "seed": seed, "secs": secs, "nodes": n, "partitions": partitions, "topic": topic,
              "steps": steps_run, "elapsed_s": round(elapsed, 1), "valid": res.valid and crashed is None and not problems,
              "checker": res.to_json(), "problems": problems, "crashed": crashed, "dir": str(rundir),
              "after_heal": after}
    if tiered:
        # not a verdict by itself (the checker's is): the broker logs' account, for the report
        bl = broker_log_evidence(node_logs, before=teardown_wall)
        bl["gap_deletions"] = gap_deletions(res.examples.get("remote-gap", []), bl["unfinished_deleted"])
        result["broker_log"] = bl
        result["rate"] = rate
        result["bucket_settled"] = bucket.get("settled") if bucket else None
    (rundir / "result.json").write_text(json.dumps(result, indent=1, default=str))
    (rundir / "summary.txt").write_text(res.summary() + "\n" + "\n".join(problems) + "\n")
    if not quiet:
        c, st = res.counts, res.stats
        txns = (f", txns committed/aborted/unknown {'/'.join(str(st['txns'][k]) for k in ('ok', 'fail', 'info'))}"
                f", aborted reads {c['aborted-read']}, torn {c['torn-txn']}, write cycles {c['write-cycle']}"
                if "txns" in st else "")
        print(f"[{kind}{' txn' if txn else ''} seed {seed}] {'ok' if result['valid'] else 'FAIL'} in {elapsed:.0f}s: "
              f"steps {steps_run}, acked {st['acknowledged']}, lost {c['lost']}, dup {c['duplicate']}, "
              f"inconsistent {c['inconsistent']}, unseen {c['unseen']}, failovers {st['failovers']}, "
              f"max no-write {st['max_no_write_window_s']}s, max ack {st['max_ack_latency_s']}s{txns}"
              + (f"; errors {res.errors}" if res.errors else "") + (f"; crashed: {crashed}" if crashed else "")
              + (f"; problems: {problems}" if problems else ""), flush=True)
        if tiered:
            rs, bl = st.get("remote", {}), result["broker_log"]
            print(f"[{kind} seed {seed}] MB acked {st.get('acked_mb', 0)}, acked records missing from the final "
                  f"reads {st.get('acked_missing_final', '?')}, copies {rs.get('copies', 0)} "
                  f"({rs.get('copied_mb', 0)} MB), bucket settled {result['bucket_settled']}, anomalies: "
                  f"lost {c['lost']}, vanished {c['vanished']}, log-start {c['log-start-moved']}, "
                  f"remote-gap {c['remote-gap']}, remote-behind {c['remote-behind']}, "
                  f"remote-overlap {c['remote-overlap']}, "
                  f"remote-incomplete {c['remote-incomplete']}; node logs: finished copy deleted as unfinished "
                  f"{bl['finished_copy_deleted']}x (by its own copier {bl['own_copy_deleted']}x), copies deleted "
                  f"as unfinished where the bucket has a gap {len(bl['gap_deletions'])}, {bl['error_lines']} ERROR, "
                  f"{bl['warn_lines']} WARN, {bl['panics']} panics", flush=True)
    if result["valid"] and not keep:
        if store is not None:
            shutil.rmtree(store.dir, ignore_errors=True)
        shutil.rmtree(rundir / "cluster", ignore_errors=True)
        for i in disks:
            shutil.rmtree(rundir / f"disk-{i}", ignore_errors=True)
        shutil.rmtree(hist, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)
    return result


def run_external(bootstrap: str, seed: int, secs: float, out: Path, partitions: int = 5, rate: int = 100,
                 txn: bool = False, replication: int = 1) -> dict:
    """The same clients and checker against a broker this runner did not start (e.g. Apache
    Kafka from ../shared/kafka-baseline), without faults: what the checker reports on Kafka
    itself, so its expectations are Kafka's (``write-cycle`` counts above all). Nothing is
    killed; the topic is left for the broker's owner to delete."""
    from confluent_kafka.admin import AdminClient, NewTopic
    rundir = Path(out).resolve() / f"external-{'txn-' if txn else ''}{seed}"
    if rundir.exists():
        shutil.rmtree(rundir)
    hist, logs = rundir / "history", rundir / "logs"
    hist.mkdir(parents=True)
    logs.mkdir()
    topic = f"jepsen-external-{seed}-{uuid.uuid4().hex[:6]}"
    group = "jepsen-sub"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(30)
    time.sleep(1)
    commit_start_offsets(admin, group, topic, partitions)
    base = {"bootstrap": bootstrap, "topic": topic, "partitions": partitions, "out": str(hist), "secs": secs}
    t0 = time.monotonic()
    procs = spawn_clients(base, seed, rate, txn, group, logs)
    problems = wait_procs(procs, timeout=secs + 75)
    problems += wait_procs(spawn_finals(base, group, [bootstrap, bootstrap], logs), timeout=120)
    res = check(read_history(hist))
    result = {"kind": "external", "txn": txn, "seed": seed, "secs": secs, "bootstrap": bootstrap,
              "partitions": partitions, "topic": topic, "elapsed_s": round(time.monotonic() - t0, 1),
              "valid": res.valid and not problems, "checker": res.to_json(), "problems": problems,
              "crashed": None, "steps": 0, "dir": str(rundir)}
    (rundir / "result.json").write_text(json.dumps(result, indent=1, default=str))
    (rundir / "summary.txt").write_text(res.summary() + "\n" + "\n".join(problems) + "\n")
    print(res.summary())
    return result


COLUMNS = ["fault", "schedules", "failed", "acked", "lost", "dup", "inconsistent", "unseen", "other",
           "failovers", "max no-write s", "max ack s", "seeds"]


def table(results: list[dict]) -> str:
    rows = []

    def label(r: dict) -> str:  # a cluster size other than the kind's default gets its own row
        n = r.get("nodes", nodes_for(r["kind"]))
        k = r["kind"] + (" txn" if r.get("txn") else "")
        return k if n == nodes_for(r["kind"]) else f"{k} ({n} nodes)"

    present = {label(r) for r in results}
    order = [x for k in KINDS for x in sorted(present) if x == k or x.startswith((k + " (", k + " txn"))]
    for kind in order + sorted(present - set(order)):
        rs = [r for r in results if label(r) == kind]
        cnt = lambda k: sum(r["checker"]["counts"].get(k, 0) for r in rs)  # noqa: E731
        other = sum(v for r in rs for k, v in r["checker"]["counts"].items()
                    if k not in ("lost", "duplicate", "inconsistent", "unseen", "write-cycle"))
        seeds = sorted(r["seed"] for r in rs)
        rows.append([kind, len(rs), sum(1 for r in rs if not r["valid"]),
                     sum(r["checker"]["stats"]["acknowledged"] for r in rs), cnt("lost"), cnt("duplicate"),
                     cnt("inconsistent"), cnt("unseen"), other,
                     sum(r["checker"]["stats"]["failovers"] for r in rs),
                     max(r["checker"]["stats"]["max_no_write_window_s"] for r in rs),
                     max([r["checker"]["stats"]["max_ack_latency_s"] for r in rs
                          if "max_ack_latency_s" in r["checker"]["stats"]], default="-"),
                     f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])])
    widths = [max(len(str(x)) for x in col) for col in zip(COLUMNS, *rows)]
    fmt = " | ".join(f"{{:{'<' if i in (0, len(COLUMNS) - 1) else '>'}{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*COLUMNS), "-+-".join("-" * w for w in widths)]
    lines += [fmt.format(*row) for row in rows]
    return "\n".join(lines)


TIERED_COLUMNS = ["fault", "schedules", "failed", "MB acked", "copies", "acked missing", "lost", "vanished",
                  "dup", "log start moved",
                  "remote gaps", "remote behind", "remote overlaps", "remote incomplete",
                  "finished copy deleted (logs)", "gap deleted (logs)", "failed seeds"]


def tiered_table(results: list[dict]) -> str:
    """The tiered runs' own table: data written and copied, acknowledged records absent from the
    final reads (lost: never read; vanished: read during the run, gone since), the bucket's
    anomalies, and how often the node logs show a copier deleting its own finished copy (issue
    57's mechanism)."""
    rs = [r for r in results if r["kind"] == "tiered"]
    if not rs:
        return ""
    cnt = lambda k: sum(r["checker"]["counts"].get(k, 0) for r in rs)  # noqa: E731
    failed = sorted(r["seed"] for r in rs if not r["valid"])
    row = ["tiered", len(rs), len(failed), round(sum(r["checker"]["stats"].get("acked_mb", 0) for r in rs), 1),
           sum(r["checker"]["stats"].get("remote", {}).get("copies", 0) for r in rs),
           sum(r["checker"]["stats"].get("acked_missing_final", 0) for r in rs), cnt("lost"), cnt("vanished"),
           cnt("duplicate"),
           cnt("log-start-moved"), cnt("remote-gap"), cnt("remote-behind"), cnt("remote-overlap"),
           cnt("remote-incomplete"),
           sum(r.get("broker_log", {}).get("finished_copy_deleted", r.get("broker_log", {}).get("own_copy_deleted", 0))
               for r in rs),
           sum(len(r.get("broker_log", {}).get("gap_deletions", [])) for r in rs),
           ",".join(map(str, failed)) or "-"]
    widths = [max(len(str(x)) for x in col) for col in zip(TIERED_COLUMNS, row)]
    fmt = " | ".join(f"{{:{'<' if i in (0, len(TIERED_COLUMNS) - 1) else '>'}{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*TIERED_COLUMNS), "-+-".join("-" * w for w in widths), fmt.format(*row)])


TXN_COLUMNS = ["fault", "schedules", "committed txns", "aborted txns", "unknown txns", "aborted reads",
               "lost committed", "dup", "torn", "write cycles (allowed)"]


def txn_table(results: list[dict]) -> str:
    """The transactional runs' own table: transactions by outcome and the transactional checks."""
    rs = [r for r in results if r.get("txn")]
    if not rs:
        return ""
    rows = []
    for kind in [k for k in KINDS if any(r["kind"] == k for r in rs)]:
        ks = [r for r in rs if r["kind"] == kind]
        cnt = lambda k: sum(r["checker"]["counts"].get(k, 0) for r in ks)  # noqa: E731
        tx = lambda k: sum(r["checker"]["stats"].get("txns", {}).get(k, 0) for r in ks)  # noqa: E731
        rows.append([kind, len(ks), tx("ok"), tx("fail"), tx("info"), cnt("aborted-read"), cnt("lost"),
                     cnt("duplicate"), cnt("torn-txn"), cnt("write-cycle")])
    widths = [max(len(str(x)) for x in col) for col in zip(TXN_COLUMNS, *rows)]
    fmt = " | ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*TXN_COLUMNS), "-+-".join("-" * w for w in widths)]
    return "\n".join(lines + [fmt.format(*row) for row in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fault", choices=KINDS + ["all"])
    ap.add_argument("--table", type=Path, nargs="+", metavar="DIR",
                    help="only print the table of the runs (result.json) found under these directories")
    ap.add_argument("--schedules", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--secs", type=float, default=25)
    ap.add_argument("--out", type=Path, default=Path("/tmp/frieda-jepsen"))
    ap.add_argument("--partitions", type=int, default=None, help="partitions of the topic (default 5; tiered 4)")
    ap.add_argument("--rate", type=int, default=None,
                    help="records/s per producer (2 producers; default 100; tiered 1000 values of 1-4 KiB)")
    ap.add_argument("--nodes", type=int, default=None, help="cluster size (default: 3, 4 for reassign/mixed)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="schedules run at once, each on its own cluster (2 cores: at most 2-3)")
    ap.add_argument("--keep", action="store_true", help="keep every run's data, not only failing ones")
    ap.add_argument("--external", metavar="BOOTSTRAP",
                    help="no cluster and no faults: run the clients and the checker against this broker "
                         "(e.g. Apache Kafka, ../shared/kafka-baseline), --schedules times")
    ap.add_argument("--txn", action="store_true",
                    help="transactional producers (committing and aborting) and the transactional checks")
    ap.add_argument("--stop-file", action="append", default=[],
                    help="stop (before the next schedule) once this file exists, e.g. /tmp/frieda-bench-running")
    args = ap.parse_args(argv)
    if args.table:
        results = [json.loads(p.read_text()) for d in args.table for p in sorted(d.rglob("result.json"))]
        print(table(results))
        if txn_table(results):
            print("\n" + txn_table(results))
        if tiered_table(results):
            print("\n" + tiered_table(results))
        for r in results:
            if not r["valid"]:
                print(f"  failed: {r['kind']} seed {r['seed']}: {r['dir']} errors {r['checker']['errors']} "
                      f"crashed {r['crashed']} problems {r['problems']}")
        return 1 if any(not r["valid"] for r in results) else 0
    if args.external:
        args.out.mkdir(parents=True, exist_ok=True)
        rs = [run_external(args.external, args.seed + i, args.secs, args.out, args.partitions or 5, args.rate or 100,
                           args.txn)
              for i in range(args.schedules)]
        return 0 if all(r["valid"] for r in rs) else 1
    if not args.fault:
        ap.error("--fault is required")
    kinds = KINDS if args.fault == "all" else [args.fault]
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    # seed by seed, every kind in turn: a soak stopped early still covers every kind
    todo = [(kind, args.seed + i) for i in range(args.schedules) for kind in kinds]
    stop_files = [Path(f) for f in args.stop_file]

    def busy() -> list[str]:
        return [str(f) for f in stop_files if f.exists()]

    if args.jobs <= 1:
        for kind, seed in todo:
            if busy():
                print(f"stopping before {kind} seed {seed}: {busy()} exists", flush=True)
                break
            results.append(run_schedule(kind, seed, args.secs, args.out, args.partitions, args.rate,
                                        args.keep, args.nodes, txn=args.txn))
    else:
        # each schedule in its own (forked) process: own clusters, namespaces and mounts
        import concurrent.futures as cf
        import multiprocessing as mp
        with cf.ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("fork")) as pool:
            pending: set = set()
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < args.jobs and not busy():
                    kind, seed = queue.pop(0)
                    pending.add(pool.submit(run_schedule, kind, seed, args.secs, args.out, args.partitions,
                                            args.rate, args.keep, args.nodes, False, args.txn))
                if queue and busy() and not pending:
                    print(f"stopping before {queue[0]}: {busy()} exists", flush=True)
                    break
                if not pending:
                    break
                done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                results += [f.result() for f in done]
    if not results:
        return 2
    print()
    print(table(results))
    if txn_table(results):
        print("\n" + txn_table(results))
    if tiered_table(results):
        print("\n" + tiered_table(results))
    bad = [r for r in results if not r["valid"]]
    (args.out / f"table-{int(time.time())}.json").write_text(json.dumps(results, indent=1, default=str))
    if bad:
        print("\nfailing runs (kept):")
        for r in bad:
            print(f"  {r['kind']} seed {r['seed']}: {r['dir']} errors {r['checker']['errors']} "
                  f"crashed {r['crashed']} problems {r['problems']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
