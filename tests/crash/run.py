#!/usr/bin/env python3
"""Crash harness: nothing acknowledged is ever lost.

Real clients (confluent-kafka, acks=all, enable.idempotence=True) run in separate processes and
append every acknowledged (partition, offset, producer, sequence) to a file. The broker is
SIGKILLed at seeded random moments, restarted, and production goes on. At the end the broker is
restarted without retention and everything is read back with CRC checks on (check.crcs=true):

- every acknowledged record still above the log start offset is at its offset, byte for byte
  (values are derived from (seed, producer, sequence), so the check is exact);
- no value of an idempotent producer appears twice in the log;
- high watermarks (and log start offsets) sampled before each kill never go backwards after the
  restart;
- committed group offsets never go backwards, if the broker advertises OffsetCommit; otherwise
  that check is reported as not applicable;
- the broker never exits by itself and never panics.

    tests/crash/run.py --cycles 20 --seed 7
    tests/crash/run.py --cycles 10 --seed 8 --flush-messages 1
    tests/crash/run.py --cycles 10 --seed 9 --segment-bytes 65536 --retention-ms 4000 \
        --retention-bytes 262144 --retention-check-ms 500

Prints a summary and one JSON line (``RESULT {...}``); exits 0 only if every check passed.
Everything listens on 127.0.0.1; every process started is stopped by its PID.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # re-run with the repository's venv (scripts/test creates it)
    venv_py = REPO / ".venv" / "bin" / "python"
    if venv_py.exists() and Path(sys.executable).resolve() != venv_py.resolve():
        os.execv(str(venv_py), [str(venv_py), *sys.argv])
    raise

LOG_LEVEL = int(os.environ.get("FRIEDA_TEST_RDKAFKA_LOG_LEVEL", "2"))  # the restarts make librdkafka log connection errors
API_OFFSET_COMMIT = 8
API_VERSIONS = 18


# ---------------------------------------------------------------- records

def value_of(seed: int, worker: int, seq: int) -> bytes:
    """The value producer ``worker`` sends as its ``seq``-th record: a parseable prefix and 0-399
    pseudo-random bytes, reproducible from the seed."""
    n = (seq * 2654435761 + worker * 97 + seed) % 400
    h = hashlib.blake2b(b"%d/%d/%d" % (seed, worker, seq), digest_size=32).digest()
    return b"w%d-s%d|" % (worker, seq) + (h * (n // 32 + 1))[:n]


VALUE_RE = re.compile(rb"^w(\d+)-s(\d+)\|")


# ---------------------------------------------------------------- workers (separate processes)

def producer_worker(a) -> int:
    stop = Path(a.stop_file)
    out = open(a.out, "a", buffering=1)
    fatal = []

    def on_error(err):
        if err.fatal():
            fatal.append(str(err))

    p = Producer({
        "bootstrap.servers": a.bootstrap, "log_level": LOG_LEVEL,
        "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        # records must survive every restart of the run: retried, never expired
        "message.timeout.ms": 600000, "retry.backoff.ms": 100, "retry.backoff.max.ms": 1000,
        "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
        "queue.buffering.max.messages": 5000, "error_cb": on_error,
        # e.g. FRIEDA_CRASH_RDKAFKA_DEBUG=eos,msg,protocol (with FRIEDA_TEST_RDKAFKA_LOG_LEVEL=7)
        **({"debug": os.environ["FRIEDA_CRASH_RDKAFKA_DEBUG"]} if os.environ.get("FRIEDA_CRASH_RDKAFKA_DEBUG") else {}),
    })
    seq = 0

    def cb_for(s):
        def cb(err, msg):
            if err is None:
                out.write(f"A {msg.partition()} {msg.offset()} {s}\n")
            else:
                out.write(f"E {s} {err.name()}\n")
        return cb

    w = a.worker
    delay = 1.0 / a.rate
    next_t = time.monotonic()
    while not stop.exists() and not fatal:
        try:
            p.produce(a.topic, key=b"w%d-k%d" % (w, seq % 50), value=value_of(a.seed, w, seq),
                      on_delivery=cb_for(seq))
            seq += 1
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
        next_t += delay
        pause = next_t - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            next_t = time.monotonic()
    left = p.flush(a.flush_timeout)
    for f in fatal:
        out.write(f"F {f}\n")
    out.write(f"S {seq} {left}\n")  # sent, still unacknowledged
    out.close()
    return 2 if fatal else 0


def committer_worker(a) -> int:
    """Consumes by assignment and commits its position every ~0.3 s (OffsetCommit, simple
    commits without group membership); each commit the broker confirmed is recorded."""
    stop = Path(a.stop_file)
    out = open(a.out, "a", buffering=1)
    c = Consumer({"bootstrap.servers": a.bootstrap, "log_level": LOG_LEVEL, "group.id": a.group,
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(a.topic, p, 0) for p in range(a.partitions)])
    pos: dict[int, int] = {}
    last = time.monotonic()
    while not stop.exists():
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            pos[m.partition()] = m.offset() + 1
        if time.monotonic() - last > 0.3 and pos:
            last = time.monotonic()
            offs = [TopicPartition(a.topic, p, o) for p, o in sorted(pos.items())]
            try:
                res = c.commit(offsets=offs, asynchronous=False)
                for tp in res or []:
                    if tp.error is None:
                        out.write(f"C {tp.partition} {tp.offset}\n")
            except KafkaException:
                pass  # broker down: not confirmed, not recorded
    c.close()
    return 0


# ---------------------------------------------------------------- broker

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, binary: Path, workdir: Path, port: int):
        self.binary, self.workdir, self.port = binary, workdir, port
        self.data = workdir / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.stderr_path = workdir / "frieda.stderr"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.unexpected_exits = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, config: str, timeout: float = 30) -> None:
        cfg = self.workdir / f"frieda-{self.starts}.toml"
        cfg.write_text(f'listen = "{self.bootstrap}"\n"data.dir" = "{self.data}"\n' + config)
        self.starts += 1
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        env.setdefault("RUST_BACKTRACE", "1")
        with open(self.stderr_path, "ab") as err:
            err.write(f"\n===== start #{self.starts}\n".encode())
            err.flush()
            self.proc = subprocess.Popen([str(self.binary), "serve", "--config", str(cfg)],
                                         stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode} during start-up\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"broker did not listen within {timeout}s\n{self.tail()}")

    def check_running(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self.unexpected_exits.append(self.proc.returncode)
            raise RuntimeError(f"broker exited by itself with {self.proc.returncode}\n{self.tail()}")

    def kill(self) -> None:
        self.check_running()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> int:
        self.check_running()
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            return -9

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""


def api_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 over a raw socket: {api_key: (min, max)}."""
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(struct.pack(">ihhih", 2 + 2 + 4 + 2 + 5, API_VERSIONS, 0, 1, 5) + b"crash")
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("ApiVersions: connection closed")
            buf += chunk
    body = buf[4:]
    _corr, err, n = struct.unpack(">ihi", body[:10])
    apis, pos = {}, 10
    for _ in range(max(n, 0)):
        k, lo, hi = struct.unpack(">hhh", body[pos:pos + 6])
        apis[k] = (lo, hi)
        pos += 6
    return apis


# ---------------------------------------------------------------- client-side probes

RETRY_CODES = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
               KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
               KafkaError._ALL_BROKERS_DOWN}


def watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 30) -> dict[int, tuple[int, int]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-probe", "log_level": LOG_LEVEL})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
                        for p in range(partitions)}
            except KafkaException as e:
                if e.args[0].code() not in RETRY_CODES or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        c.close()


def committed(bootstrap: str, topic: str, partitions: int, group: str, timeout: float = 30) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": LOG_LEVEL,
                  "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                res = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
                return {tp.partition: tp.offset for tp in res if tp.error is None}
            except KafkaException as e:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


def read_partition(bootstrap: str, topic: str, p: int, low: int, high: int, timeout: float) -> dict[int, bytes]:
    """Every record in [low, high), with librdkafka checking each batch's CRC."""
    got: dict[int, bytes] = {}
    if high <= low:
        return got
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-verify", "log_level": LOG_LEVEL,
                  "enable.auto.commit": False, "auto.offset.reset": "error", "check.crcs": True,
                  "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, p, low)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"consuming {topic}[{p}]: {m.error()}")
            got[m.offset()] = m.value()
            if m.offset() + 1 >= high:
                return got
        raise RuntimeError(f"timed out reading {topic}[{p}] {low}..{high}: got {len(got)}")
    finally:
        c.close()


# ---------------------------------------------------------------- the run

def broker_config(a, verify: bool = False) -> str:
    lines = [f"num.partitions = {a.partitions}", "auto.create.topics.enable = false"]
    if a.flush_messages:
        lines.append(f"flush.messages = {a.flush_messages}")
    if a.segment_bytes:
        lines.append(f"segment.bytes = {a.segment_bytes}")
    if not verify:
        if a.retention_ms:
            lines.append(f"retention.ms = {a.retention_ms}")
        if a.retention_bytes:
            lines.append(f"retention.bytes = {a.retention_bytes}")
        if a.retention_check_ms:
            lines.append(f'"log.retention.check.interval.ms" = {a.retention_check_ms}')
    return "\n".join(lines) + "\n"


def parse_worker_file(path: Path, worker: int):
    acked, errors, fatal, commits, sent, unacked = [], [], [], [], 0, 0
    if not path.exists():
        return acked, errors, fatal, commits, sent, unacked
    for line in path.read_text().splitlines():
        f = line.split(" ", 3)
        if f[0] == "A":
            acked.append((int(f[1]), int(f[2]), worker, int(f[3])))
        elif f[0] == "E":
            errors.append(line)
        elif f[0] == "F":
            fatal.append(line)
        elif f[0] == "C":
            commits.append((int(f[1]), int(f[2])))
        elif f[0] == "S":
            sent, unacked = int(f[1]), int(f[2])
    return acked, errors, fatal, commits, sent, unacked


def count_lines(paths, prefix: str) -> int:
    n = 0
    for p in paths:
        try:
            with open(p, "rb") as f:
                n += sum(1 for line in f if line.startswith(prefix.encode()))
        except OSError:
            pass
    return n


def run(a) -> dict:
    rnd = random.Random(a.seed)
    binary = Path(a.bin or os.environ.get("FRIEDA_BIN", REPO / "target" / "release" / "frieda")).resolve()
    workdir = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="frieda-crash-"))
    workdir.mkdir(parents=True, exist_ok=True)
    broker = Broker(binary, workdir, a.port or free_port())
    topic = f"crash-{a.seed}-{os.getpid()}"
    group = f"crash-group-{a.seed}"
    stop_file = workdir / "stop"
    workers: list[subprocess.Popen] = []
    out_files: list[Path] = []
    failures: list[str] = []
    hw_regressions: list[str] = []
    commit_regressions: list[str] = []
    cycle_log = []
    t_start = time.monotonic()
    deadline = t_start + a.max_seconds
    result: dict = {"seed": a.seed, "cycles": 0, "variant": a.variant, "workdir": str(workdir)}
    try:
        broker.start(broker_config(a))
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": LOG_LEVEL})
        admin.create_topics([NewTopic(topic, a.partitions, 1)])[topic].result(timeout=30)
        apis = api_versions("127.0.0.1", broker.port)
        groups_supported = API_OFFSET_COMMIT in apis
        me = [sys.executable, str(Path(__file__).resolve())]
        common = ["--bootstrap", broker.bootstrap, "--topic", topic, "--seed", str(a.seed),
                  "--stop-file", str(stop_file), "--partitions", str(a.partitions)]
        for w in range(a.producers):
            out = workdir / f"producer-{w}.acked"
            out_files.append(out)
            workers.append(subprocess.Popen(me + ["--worker", "producer", "--id", str(w), "--out", str(out),
                                                  "--rate", str(a.rate)] + common, stdin=subprocess.DEVNULL))
        commit_file = workdir / "committer.log"
        if groups_supported:
            workers.append(subprocess.Popen(me + ["--worker", "committer", "--out", str(commit_file),
                                                  "--group", group] + common, stdin=subprocess.DEVNULL))
        hw_seen = {p: (0, 0) for p in range(a.partitions)}
        commits_seen: dict[int, int] = {}
        for cycle in range(a.cycles):
            if time.monotonic() > deadline:
                failures.append(f"time limit of {a.max_seconds}s reached after {cycle} cycles")
                break
            # a seeded moment: mostly while production runs, sometimes right after start-up
            up = rnd.uniform(0.02, 0.4) if rnd.random() < 0.15 else rnd.uniform(a.min_up, a.max_up)
            acked_before = count_lines(out_files, "A")
            time.sleep(up)
            broker.check_running()
            sampled = False
            if up >= 0.3:
                try:
                    wm = watermarks(broker.bootstrap, topic, a.partitions, timeout=5)
                    for p, (lo, hi) in wm.items():
                        hw_seen[p] = (max(hw_seen[p][0], lo), max(hw_seen[p][1], hi))
                    sampled = True
                except KafkaException:
                    pass
            if groups_supported and commit_file.exists():
                for p, o in parse_worker_file(commit_file, -1)[3]:
                    commits_seen[p] = max(commits_seen.get(p, -1), o)
            broker.kill()
            acked_after = count_lines(out_files, "A")
            broker.start(broker_config(a))
            # after the restart: nothing sampled before the kill went backwards
            wm = watermarks(broker.bootstrap, topic, a.partitions, timeout=60)
            for p, (lo, hi) in wm.items():
                if hi < hw_seen[p][1]:
                    hw_regressions.append(f"cycle {cycle}: partition {p} high watermark {hi} < {hw_seen[p][1]} before the kill")
                if lo < hw_seen[p][0]:
                    hw_regressions.append(f"cycle {cycle}: partition {p} log start {lo} < {hw_seen[p][0]} before the kill")
                hw_seen[p] = (max(hw_seen[p][0], lo), max(hw_seen[p][1], hi))
            if groups_supported and commits_seen:
                now = committed(broker.bootstrap, topic, a.partitions, group)
                for p, o in commits_seen.items():
                    if now.get(p, -1) < o:
                        commit_regressions.append(f"cycle {cycle}: partition {p} committed {now.get(p)} < {o} confirmed before the kill")
            cycle_log.append({"cycle": cycle, "up_s": round(up, 3), "acked": acked_after,
                              "new_acks": acked_after - acked_before, "sampled": sampled,
                              "hw": {p: hi for p, (_, hi) in wm.items()}})
            print(f"cycle {cycle + 1}/{a.cycles}: up {up:.2f}s, acked {acked_after} (+{acked_after - acked_before}), "
                  f"high watermarks {[hi for _, (_, hi) in sorted(wm.items())]}", flush=True)
            result["cycles"] = cycle + 1
        # let production run a little after the last restart, then stop the workers
        time.sleep(a.max_up)
        stop_file.touch()
        for pr in workers:
            try:
                rc = pr.wait(timeout=max(30.0, a.flush_timeout + 30))
            except subprocess.TimeoutExpired:
                failures.append(f"worker {pr.pid} did not stop")
                continue
            if rc != 0:
                failures.append(f"worker {pr.pid} exited with {rc}")
        broker.check_running()
        if groups_supported:
            for p, o in parse_worker_file(commit_file, -1)[3]:
                commits_seen[p] = max(commits_seen.get(p, -1), o)
        rc = broker.stop()
        if rc != 0:
            failures.append(f"broker exited {rc} on SIGTERM (want 0)")
        # verification: no retention any more, so nothing disappears while we read
        broker.start(broker_config(a, verify=True))
        wm = watermarks(broker.bootstrap, topic, a.partitions, timeout=60)
        for p, (lo, hi) in wm.items():
            if hi < hw_seen[p][1] or lo < hw_seen[p][0]:
                hw_regressions.append(f"final: partition {p} watermarks {(lo, hi)} < {hw_seen[p]}")
        if groups_supported and commits_seen:
            now = committed(broker.bootstrap, topic, a.partitions, group)
            for p, o in commits_seen.items():
                if now.get(p, -1) < o:
                    commit_regressions.append(f"final: partition {p} committed {now.get(p)} < {o}")
        acked, errors, fatal, sent, unacked = [], [], [], 0, 0
        for w, path in enumerate(out_files):
            ac, er, fa, _, s, u = parse_worker_file(path, w)
            acked += ac
            errors += er
            fatal += fa
            sent += s
            unacked += u
        logs = {}
        for p, (lo, hi) in wm.items():
            logs[p] = read_partition(broker.bootstrap, topic, p, lo, hi, timeout=max(60, (hi - lo) / 2000))
        verified = below_start = lost = corrupt = 0
        lost_examples = []
        for p, off, w, seq in acked:
            lo, hi = wm[p]
            if off < lo:
                below_start += 1
                continue
            v = logs[p].get(off)
            if v is None:
                lost += 1
                lost_examples.append(f"{p}@{off} (w{w} s{seq}): missing, log {lo}..{hi}")
            elif v != value_of(a.seed, w, seq):
                corrupt += 1
                lost_examples.append(f"{p}@{off} (w{w} s{seq}): different value {v[:24]!r}")
            else:
                verified += 1
        gaps = sum(1 for p, (lo, hi) in wm.items() for o in range(lo, hi) if o not in logs[p])
        seen: dict[tuple[int, int], tuple[int, int]] = {}
        duplicates = []
        stored = 0
        for p, recs in logs.items():
            for off, v in recs.items():
                m = VALUE_RE.match(v or b"")
                if not m:
                    continue
                stored += 1
                k = (int(m.group(1)), int(m.group(2)))
                if k in seen:
                    duplicates.append(f"w{k[0]} s{k[1]} at {seen[k]} and {(p, off)}")
                seen[k] = (p, off)
        acked_keys = {(w, seq) for _, _, w, seq in acked}
        if len(acked_keys) != len(acked):
            duplicates.append(f"{len(acked) - len(acked_keys)} records acknowledged twice")
        panics = broker.text().count("panicked at")
        result.update({
            "records_acked": len(acked), "records_verified": verified, "deleted_by_retention": below_start,
            "lost": lost, "corrupt": corrupt, "gaps_below_hw": gaps, "duplicates": len(duplicates),
            "stored_records": stored, "sent": sent, "unacked_at_end": unacked, "delivery_errors": len(errors),
            "producer_fatal_errors": len(fatal), "hw_regressions": len(hw_regressions),
            "committed_offsets_check": ("passed" if not commit_regressions else "FAILED") if groups_supported
            else "not applicable (OffsetCommit not advertised)",
            "commit_regressions": len(commit_regressions), "commits_checked": len(commits_seen),
            "broker_crashes": len(broker.unexpected_exits) + panics, "broker_starts": broker.starts,
            "log_start_offsets": {p: lo for p, (lo, _) in wm.items()},
            "high_watermarks": {p: hi for p, (_, hi) in wm.items()},
            "truncations_logged": len(re.findall(r"truncating torn tail", broker.text())),
            "seconds": round(time.monotonic() - t_start, 1),
        })
        if lost or corrupt:
            failures.append(f"{lost} lost and {corrupt} corrupt acknowledged records: {lost_examples[:5]}")
        if gaps:
            failures.append(f"{gaps} offsets below the high watermark unreadable")
        if duplicates:
            failures.append(f"duplicates: {duplicates[:5]}")
        if fatal:
            failures.append(f"producer fatal errors: {fatal[:3]}")
        if errors:
            failures.append(f"{len(errors)} delivery errors: {errors[:3]}")
        if unacked:
            failures.append(f"{unacked} records neither acknowledged nor failed at the end")
        if hw_regressions:
            failures.append(f"watermarks went backwards: {hw_regressions[:5]}")
        if commit_regressions:
            failures.append(f"committed offsets went backwards: {commit_regressions[:5]}")
        if panics:
            failures.append("broker stderr contains a panic")
        if verified == 0:
            failures.append("no acknowledged record verified: the run tested nothing")
        # a broker that stops serving after a restart: production stalls. Single short stalls
        # happen on a loaded machine (client back-off after the restart), so the bound is loose;
        # a broker that never recovers also fails the final flush (unacked records)
        stalled = [c for c in cycle_log if c["new_acks"] == 0 and c["up_s"] >= a.min_up]
        result["stalled_cycles"] = len(stalled)
        if len(stalled) > a.cycles // 2 or sum(c["up_s"] for c in stalled) > 8:
            failures.append(f"production made no progress in cycles {[c['cycle'] for c in stalled]}")
        rc = broker.stop()
        if rc != 0:
            failures.append(f"broker exited {rc} on the final SIGTERM (want 0)")
    except Exception as e:  # reported as a failure with context, never swallowed
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        stop_file.touch()
        for pr in workers:
            if pr.poll() is None:
                try:
                    pr.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    pr.wait(timeout=10)
        broker.cleanup()
    result["failures"] = failures
    result["ok"] = not failures
    if failures:
        print(f"broker stderr tail ({broker.stderr_path}):\n{broker.tail(30)}", file=sys.stderr)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--rate", type=float, default=400, help="records/s per producer")
    ap.add_argument("--min-up", type=float, default=0.8, help="seconds of production before a kill, at least")
    ap.add_argument("--max-up", type=float, default=2.5)
    ap.add_argument("--flush-messages", type=int, default=0)
    ap.add_argument("--segment-bytes", type=int, default=0)
    ap.add_argument("--retention-ms", type=int, default=0)
    ap.add_argument("--retention-bytes", type=int, default=0)
    ap.add_argument("--retention-check-ms", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=0, help="time limit (default: 30 s per cycle + 180)")
    ap.add_argument("--flush-timeout", type=float, default=90)
    ap.add_argument("--bin", default="")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--variant", default="")
    ap.add_argument("--json", default="", help="also write the result here")
    # worker mode
    ap.add_argument("--worker", choices=["producer", "committer"])
    ap.add_argument("--id", dest="worker_id", type=int, default=0)
    ap.add_argument("--bootstrap")
    ap.add_argument("--topic")
    ap.add_argument("--out")
    ap.add_argument("--stop-file")
    ap.add_argument("--group", default="")
    a = ap.parse_args(argv)
    if a.worker == "producer":
        a.worker = a.worker_id
        return producer_worker(a)
    if a.worker == "committer":
        return committer_worker(a)
    if not a.max_seconds:
        a.max_seconds = 30 * a.cycles + 180
    if not a.variant:
        parts = []
        if a.flush_messages:
            parts.append(f"flush.messages={a.flush_messages}")
        if a.segment_bytes:
            parts.append(f"segment.bytes={a.segment_bytes}")
        if a.retention_ms or a.retention_bytes:
            parts.append(f"retention.ms={a.retention_ms} retention.bytes={a.retention_bytes}")
        a.variant = ", ".join(parts) or "default durability"
    r = run(a)
    print(f"\n{'PASSED' if r['ok'] else 'FAILED'}: {r['variant']}, seed {r['seed']}: {r['cycles']} kill/restart cycles, "
          f"{r.get('records_acked', 0)} acknowledged, {r.get('records_verified', 0)} verified byte for byte, "
          f"{r.get('deleted_by_retention', 0)} deleted by retention, lost {r.get('lost', '?')}, "
          f"duplicates {r.get('duplicates', '?')}, watermark regressions {r.get('hw_regressions', '?')}, "
          f"committed offsets: {r.get('committed_offsets_check', '?')}, broker crashes {r.get('broker_crashes', '?')}")
    for f in r["failures"]:
        print(f"  failure: {f}")
    print("RESULT " + json.dumps(r, sort_keys=True), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(r, sort_keys=True, indent=1))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
