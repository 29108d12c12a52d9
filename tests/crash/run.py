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
- committed group offsets never go backwards, and commits did happen (a run where no commit was
  ever confirmed fails), if the broker advertises OffsetCommit; otherwise that check is reported
  as not applicable;
- every stored record is a value some producer sent (nothing torn or mixed up), and each
  producer's records appear in each partition in the order it sent them;
- the broker never exits by itself and never panics.

Power loss (``--power-loss``)
-----------------------------
SIGKILL keeps the page cache, so the variants above cannot catch a missing fsync. With
``--power-loss`` the broker's data dir is a syncfs mount (``tests/powerfail/syncfs.py``: a FUSE
file system where only fsynced data and fsynced directory entries are durable, strict POSIX by
default). At each seeded moment the harness SIGKILLs the broker, pauses the client processes
(SIGSTOP, so that nothing is appended while it looks), and then:

1. reads every segment file of the topic through the mount (the log as the page cache has it:
   the "log before the cut") and asks syncfs for each file's durable length (what its last
   fsync made durable) and whether its name is durable; every record in a complete batch within
   a file's durable length is *fsynced*;
2. cuts the power: every unsynced change is dropped, except that each unsynced 4 KiB page of a
   file whose name is durable was written back with probability ``--writeback`` (default 0.5,
   pages chosen by the seed), as the kernel may have done before the power failed, which leaves
   torn batches, holes and stale bytes past the fsynced end; mounts a fresh syncfs on the same
   backing directory, restarts the broker and reads each partition from its log start to its
   high watermark with ``check.crcs=true``;
3. checks: what survives is a prefix of the log before the cut (every offset served existed
   before the cut with byte-identical content; contiguous; CRC-valid), and every fsynced record
   is in it (the high watermark is past it). A fsynced record that does not survive is reported
   with its cause: its segment's name was not durable (a directory the broker never fsynced),
   or recovery dropped durable data;
4. resumes the clients (SIGCONT).

At the end, every acknowledged record missing from its offset is counted as "lost (fsynced)" if
it was fsynced before the cut that lost it, else as "lost (allowed: not fsynced)". "lost
(fsynced)" must be 0 always; with ``--flush-messages 1`` every acknowledged record must survive
(nothing lost at all). High watermarks sampled before a kill may go backwards (they include
records that were never fsynced); they are reported, not failed. Committed offsets: with
``--flush-messages 1`` they must never go backwards; with the default policy a commit may be lost,
but what the broker returns after a cut must be a value that was committed before (or none).

    tests/crash/run.py --cycles 20 --seed 7
    tests/crash/run.py --cycles 10 --seed 8 --flush-messages 1
    tests/crash/run.py --cycles 10 --seed 9 --segment-bytes 65536 --retention-ms 4000 \
        --retention-bytes 262144 --retention-check-ms 500
    tests/crash/run.py --power-loss --cycles 6 --seed 11 --flush-messages 1
    tests/crash/run.py --power-loss --cycles 6 --seed 12 [--syncfs-namespace journal]

``--syncfs-namespace journal`` makes every fsync commit all earlier directory changes (as ext4 or
XFS do) instead of strict POSIX; use it to see what a broker that misses a directory fsync would
still lose on those file systems.

Compaction (``--compact``)
--------------------------
The topic is compacted (``cleanup.policy=compact``, ``--segment-bytes`` segments, default 32 KiB,
``min.cleanable.dirty.ratio=0.01``, the broker's cleaner looking every 200 ms; the offsets log
gets 4 KiB segments so it is cleaned too) and the producers write under a bounded key space
(producer ``w`` sends its ``seq``-th record under key ``w<w>-k<seq % --keys>``), so every pass
removes most of the log while the broker is SIGKILLed at the seeded moments. Superseded records
may go; the final check is per key, after a start with the cleaner disabled (which must finish
or discard any interrupted pass: no ``.cleaned``/``.swap`` file may be left):

- the latest acknowledged record of every key is at its acknowledged offset, byte for byte;
- every record present is an acknowledged one at its acknowledged offset (and no producer value
  is stored twice, none out of its producer's order);
- no key's newest surviving record is older than its latest acknowledged one;
- every offset below the high watermark that cannot be read is a superseded acknowledged record;
- below the offset up to which the broker's last logged pass (``cleaned log ...
  first_dirty_next=N``) cleaned a partition, every key appears at most once;
- the log start offset stays 0 (retention never applies to a compact-only topic);
- cleaning did happen: ``cleaned log`` lines for the topic that removed records, and acknowledged
  records removed as superseded (a run where nothing was cleaned fails).

    tests/crash/run.py --compact --cycles 8 --seed 13 [--keys 50] [--segment-bytes 32768]

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
sys.path.insert(0, str(REPO / "tests" / "powerfail"))
# the broker's port: below the kernel's ephemeral range, as every test broker's (it is restarted
# on it many times, and a port in that range could become a connection's source port meanwhile)
sys.path.append(str(REPO / "tests" / "integration"))
from ports import free_port  # noqa: E402

try:
    import crc32c
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


def key_of(worker: int, seq: int, keys: int) -> bytes:
    """The key of producer ``worker``'s ``seq``-th record: ``keys`` keys per producer."""
    return b"w%d-k%d" % (worker, seq % keys)


# ---------------------------------------------------------------- workers (separate processes)

def producer_worker(a) -> int:
    """Produces at ``a.rate`` records/s until the stop file appears, appending each delivery
    report to ``a.out``: ``A partition offset seq``, ``E seq error``; then ``F error`` for each
    fatal error and ``S sent unacknowledged``. A fatal error ends production, unless
    ``a.recreate_on_fatal``: then the producer is set aside untouched with what it still holds
    (never acknowledged: confluent-kafka cannot flush after a fatal error) and a new one (a new
    idempotent producer id) goes on with the next sequence numbers (used with power loss, where
    a broker that lost acknowledged records desynchronises the producer)."""
    stop = Path(a.stop_file)
    out = open(a.out, "a", buffering=1)
    fatal = []

    def on_error(err):
        if err.fatal():
            fatal.append(str(err))

    def new_producer():
        return Producer({
            "bootstrap.servers": a.bootstrap, "log_level": LOG_LEVEL,
            "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            # records must survive every restart of the run: retried, never expired
            "message.timeout.ms": 600000, "retry.backoff.ms": 100, "retry.backoff.max.ms": 1000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "queue.buffering.max.messages": 5000, "error_cb": on_error,
            # e.g. FRIEDA_CRASH_RDKAFKA_DEBUG=eos,msg,protocol (with FRIEDA_TEST_RDKAFKA_LOG_LEVEL=7)
            **({"debug": os.environ["FRIEDA_CRASH_RDKAFKA_DEBUG"]} if os.environ.get("FRIEDA_CRASH_RDKAFKA_DEBUG") else {}),
        })

    p = new_producer()
    abandoned = []  # producers set aside after a fatal error, kept until the worker exits
    seq = 0

    def note_fatal(e: KafkaException) -> None:
        """confluent-kafka raises a fatal error from produce/poll/flush too: recorded like
        error_cb's; any other error is not expected here and propagates."""
        err = e.args[0]
        if not (err.fatal() or err.code() == KafkaError._FATAL):
            raise e
        if not fatal:
            fatal.append(str(err))

    def flush(timeout: float) -> int:
        try:
            return p.flush(timeout)
        except KafkaException as e:
            note_fatal(e)
            return len(p)

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
    while not stop.exists():
        if fatal:
            if not a.recreate_on_fatal:
                break
            for f in fatal:
                out.write(f"F {f}\n")
            fatal.clear()
            abandoned.append(p)
            p = new_producer()
        try:
            p.produce(a.topic, key=key_of(w, seq, a.keys), value=value_of(a.seed, w, seq),
                      on_delivery=cb_for(seq))
            seq += 1
            p.poll(0)
        except BufferError:
            try:
                p.poll(0.05)
            except KafkaException as e:
                note_fatal(e)
            continue
        except KafkaException as e:
            note_fatal(e)
            continue
        next_t += delay
        pause = next_t - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            next_t = time.monotonic()
    left = flush(a.flush_timeout)
    for f in fatal:
        out.write(f"F {f}\n")
    out.write(f"S {seq} {left}\n")  # sent, still unacknowledged
    out.close()
    return 2 if fatal and not a.recreate_on_fatal else 0


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
                # when the broker confirmed it (the line may be written later: a SIGSTOP can
                # come between the two, and the harness must know which side of a cut it was)
                confirmed_at = time.time()
                for tp in res or []:
                    if tp.error is None:
                        out.write(f"C {tp.partition} {tp.offset} {confirmed_at:.6f}\n")
            except KafkaException:
                pass  # broker down: not confirmed, not recorded
    c.close()
    return 0


# ---------------------------------------------------------------- broker

class Broker:
    def __init__(self, binary: Path, workdir: Path, port: int, data: Path):
        self.binary, self.workdir, self.port = binary, workdir, port
        self.data = data
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
            except KafkaException:
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


# ---------------------------------------------------------------- power loss

def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka record fields) at ``pos``: (value, next position)."""
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def parse_batches(data: bytes) -> list[tuple[int, list[tuple[int, bytes]]]]:
    """The record batches (v2) of a segment file, from its start up to the first incomplete or
    CRC-invalid one (a torn tail): [(end position, [(offset, value), ...]), ...]. The harness's
    producers do not compress."""
    out, pos = [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if length < 49 or end > len(data) or data[pos + 16] != 2:
            break
        crc, attributes = struct.unpack_from(">Ih", data, pos + 17)
        if crc32c.crc32c(data[pos + 21:end]) != crc:
            break
        if attributes & 0x07:
            raise RuntimeError(f"compressed batch at {pos}: the harness's producers do not compress")
        count = struct.unpack_from(">i", data, pos + 57)[0]
        records, r = [], pos + 61
        for _ in range(count):
            _length, r = read_varint(data, r)
            r += 1  # attributes
            _ts, r = read_varint(data, r)
            delta, r = read_varint(data, r)
            klen, r = read_varint(data, r)
            r += max(klen, 0)
            vlen, r = read_varint(data, r)
            value = data[r:r + vlen] if vlen >= 0 else None
            r += max(vlen, 0)
            nheaders, r = read_varint(data, r)
            for _ in range(nheaders):
                hk, r = read_varint(data, r)
                r += hk
                hv, r = read_varint(data, r)
                r += max(hv, 0)
            records.append((base + delta, value))
        out.append((end, records))
        pos = end
    return out


class PowerLoss:
    """The broker's data dir on syncfs, power cuts, and what each cut may and may not lose (see
    the module docstring). ``mount`` is the data dir."""

    def __init__(self, workdir: Path, namespace: str):
        from syncfs import SyncFs  # tests/powerfail/syncfs.py

        self.mount = workdir / "mnt"
        self.fs = SyncFs(workdir / "backing", self.mount, workdir, namespace=namespace)
        self.fsynced_keys: dict[tuple[int, int], tuple[int, int]] = {}  # (producer, seq) -> (partition, offset)
        self.problems: list[str] = []  # a fsynced record lost, or a record served that was never written
        self.fsynced_lost = 0
        self.fsyncs = 0
        self.pages_written_back = 0
        self.hw_behind_sample = 0

    def capture(self, topic: str, partitions: int):
        """After the kill, before the cut: per partition, the log the page cache holds
        ({offset: value}) and its fsynced records ({offset: value}); the files with fsynced data
        whose names are not durable; the directories with pending entries."""
        st = self.fs.stats()
        files = {f["path"]: f for f in st["files"]}
        self.fsyncs += st["counters"]["fsyncs"]
        log: dict[int, dict[int, bytes]] = {}
        fsynced: dict[int, dict[int, bytes]] = {}
        names_not_durable = [f["path"] for f in st["files"] if f["durable"] and not f["name_durable"]]
        for p in range(partitions):
            log[p], fsynced[p] = {}, {}
            pdir = self.mount / f"{topic}-{p}"
            segments = sorted(f for f in os.listdir(pdir) if re.fullmatch(r"\d{20}\.log", f)) if pdir.is_dir() else []
            for name in segments:
                rel = f"{topic}-{p}/{name}"
                durable = files.get(rel, {}).get("durable", 0)
                for end, records in parse_batches((pdir / name).read_bytes()):
                    for off, value in records:
                        log[p][off] = value
                        if end <= durable:
                            fsynced[p][off] = value
                            m = VALUE_RE.match(value or b"")
                            if m:
                                self.fsynced_keys[(int(m.group(1)), int(m.group(2)))] = (p, off)
        return log, fsynced, names_not_durable, st["dirty_dirs"]

    def cut(self, writeback: float, seed: int) -> None:
        self.pages_written_back += self.fs.crash(writeback=writeback, seed=seed)["written_back_pages"]
        self.fs.remount()

    def check(self, cycle: int, bootstrap: str, topic: str, wm: dict[int, tuple[int, int]], before) -> None:
        """After the restart (clients still paused): the surviving log is a prefix of the log
        before the cut and holds every fsynced record."""
        log, fsynced, names_not_durable, dirty_dirs = before
        for p, (lo, hi) in wm.items():
            got = read_partition(bootstrap, topic, p, lo, hi, timeout=max(60, (hi - lo) / 2000))
            wrong = [o for o in range(lo, hi) if o not in got or got[o] != log[p].get(o)]
            if wrong:
                o = wrong[0]
                self.problems.append(
                    f"cycle {cycle}: partition {p}: {len(wrong)} offsets served after the cut differ from the log "
                    f"before it, first {o}: {got.get(o, b'')[:24]!r} (before: {log[p].get(o, b'<none>')[:24]!r})")
            lost = sorted(o for o in fsynced[p] if o >= hi)
            if lost:
                self.fsynced_lost += len(lost)
                mine = [n for n in names_not_durable if n.startswith(f"{topic}-{p}/")]
                cause = (f"the segment names {mine} were not durable (pending entries in {dirty_dirs}): "
                         "a directory was never fsynced" if mine else "recovery dropped durable data")
                self.problems.append(f"cycle {cycle}: partition {p}: {len(lost)} fsynced records lost "
                                     f"(offsets {lost[0]}..{lost[-1]}, high watermark now {hi}): {cause}")

    def close(self) -> None:
        self.fs.unmount()


# ---------------------------------------------------------------- the run

def broker_config(a, verify: bool = False) -> str:
    lines = [f"num.partitions = {a.partitions}", "auto.create.topics.enable = false"]
    if a.flush_messages:
        lines.append(f"flush.messages = {a.flush_messages}")
    if a.segment_bytes:
        lines.append(f'"internal.segment.bytes" = {a.segment_bytes}')  # below 1 MiB (KIP-1030)
    if not verify:
        if a.retention_ms:
            lines.append(f"retention.ms = {a.retention_ms}")
        if a.retention_bytes:
            lines.append(f"retention.bytes = {a.retention_bytes}")
        if a.retention_check_ms:
            lines.append(f'"log.retention.check.interval.ms" = {a.retention_check_ms}')
    if a.compact:
        lines.append('"offsets.topic.segment.bytes" = 4096')
        if verify:  # nothing changes while the log is read back
            lines.append('"log.cleaner.enable" = false')
        else:
            lines.append(f'"log.cleaner.backoff.ms" = {a.cleaner_backoff_ms}')
            if a.cleaner_io_bytes:
                lines.append(f'"log.cleaner.io.max.bytes.per.second" = {a.cleaner_io_bytes}')
    return "\n".join(lines) + "\n"


def topic_configs(a) -> dict[str, str]:
    if not a.compact:
        return {}
    return {"cleanup.policy": "compact", "internal.segment.bytes": str(a.segment_bytes),
            "min.cleanable.dirty.ratio": "0.01"}


def commits_after(path: Path, t: float) -> list[tuple[int, int]]:
    """The (partition, offset) commits a committer worker recorded as confirmed after wall time `t`."""
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            f = line.split(" ")
            if f[0] == "C" and float(f[3]) > t:
                out.append((int(f[1]), int(f[2])))
    return out


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
            commits.append((int(f[1]), int(f[2])))  # f[3]: when confirmed (commits_after)
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


def signal_workers(workers: list[subprocess.Popen], sig: int) -> None:
    for pr in workers:
        if pr.poll() is None:
            os.kill(pr.pid, sig)


# ---------------------------------------------------------------- compaction (--compact)

def pass_files(data: Path, topic: str, partitions: int) -> list[str]:
    """Files of a cleaning pass in progress (``.cleaned``) or committed but not yet in place
    (``.swap``), in the topic's partition directories and the offsets log's."""
    out = []
    for d in [data / f"{topic}-{p}" for p in range(partitions)] + [data / "meta" / "__consumer_offsets-0"]:
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            continue
        out += sorted(f"{d.name}/{n}" for n in names if n.endswith((".cleaned", ".swap")))
    return out


def cleaned_passes(stderr: str, topic: str) -> dict[int, list[dict[str, str]]]:
    """The broker's ``cleaned log`` lines for ``topic``: {partition: [{field: value}, ...]}."""
    out: dict[int, list[dict[str, str]]] = {}
    for line in stderr.splitlines():
        if "cleaned log" not in line:
            continue
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        if f.get("topic", "").strip('"') == topic and "partition" in f:
            out.setdefault(int(f["partition"]), []).append(f)
    return out


def check_compacted(a, acked, logs: dict[int, dict[int, bytes]], wm, passes) -> dict:
    """The per-key checks of ``--compact`` (see the module docstring). ``acked``: [(partition,
    offset, producer, seq)]; ``logs``: {partition: {offset: value}} read back; ``passes``: the
    broker's ``cleaned log`` lines per partition."""
    problems: list[str] = []
    examples: list[str] = []
    acked_at: dict[tuple[int, int], tuple[int, int]] = {}
    latest: dict[tuple[int, int, int], int] = {}  # (partition, producer, key) -> offset
    for p, off, w, seq in acked:
        acked_at[(p, off)] = (w, seq)
        kk = (p, w, seq % a.keys)
        latest[kk] = max(latest.get(kk, -1), off)
    latest_at = {(kk[0], off) for kk, off in latest.items()}
    verified = lost = corrupt = removed = 0
    for p, off, w, seq in acked:
        v = logs[p].get(off)
        if v == value_of(a.seed, w, seq):
            verified += 1
        elif v is None and (p, off) not in latest_at:
            removed += 1  # superseded by a later record of its key: the cleaner may remove it
        elif v is None:
            lost += 1
            examples.append(f"{p}@{off} (w{w} s{seq}, key {key_of(w, seq, a.keys).decode()}): the key's latest "
                            f"acknowledged record is missing")
        else:
            corrupt += 1
            examples.append(f"{p}@{off} (w{w} s{seq}): different value {v[:24]!r}")
    # every record present is an acknowledged one at its acknowledged offset
    not_there = 0
    newest: dict[tuple[int, int, int], int] = {}
    for p, recs in logs.items():
        for off, v in recs.items():
            m = VALUE_RE.match(v or b"")
            k = (int(m.group(1)), int(m.group(2))) if m else None
            if k is None or acked_at.get((p, off)) != k:
                not_there += 1
                problems.append(f"{p}@{off}: {(v or b'')[:24]!r} was not acknowledged at this offset "
                                f"(acknowledged there: {acked_at.get((p, off))})")
                continue
            kk = (p, k[0], k[1] % a.keys)
            newest[kk] = max(newest.get(kk, -1), off)
    # no key's newest surviving record is older than its latest acknowledged one
    stale = 0
    for kk, off in latest.items():
        if newest.get(kk, -1) < off:
            stale += 1
            problems.append(f"key w{kk[1]}-k{kk[2]} in partition {kk[0]}: newest record stored at "
                            f"{newest.get(kk)}, latest acknowledged at {off}")
    # offsets that cannot be read must be superseded acknowledged records
    unexplained = [(p, o) for p, (lo, hi) in wm.items() for o in range(lo, hi)
                   if o not in logs[p] and ((p, o) not in acked_at or (p, o) in latest_at)]
    if unexplained:
        problems.append(f"offsets missing that were not superseded records: {unexplained[:8]}")
    # below what the broker logged as cleaned, one record per key
    cleaned_through = {p: max(int(f["first_dirty_next"]) for f in ls) for p, ls in passes.items()}
    twice = 0
    for p, through in cleaned_through.items():
        first_at: dict[bytes, int] = {}
        for off in sorted(o for o in logs.get(p, {}) if o < through):
            m = VALUE_RE.match(logs[p][off] or b"")
            if not m:
                continue  # reported above
            key = key_of(int(m.group(1)), int(m.group(2)), a.keys)
            if key in first_at:
                twice += 1
                problems.append(f"partition {p}: key {key.decode()} at {first_at[key]} and {off}, both below "
                                f"{through} (first_dirty_next of the last `cleaned log` line)")
            first_at.setdefault(key, off)
    return {
        "verified": verified, "lost": lost, "corrupt": corrupt, "removed_by_compaction": removed,
        "not_acknowledged_there": not_there, "stale_keys": stale, "unexplained_gaps": len(unexplained),
        "duplicate_keys_below_cleaned": twice, "keys": len(latest), "cleaned_through": cleaned_through,
        "passes_logged": sum(len(ls) for ls in passes.values()),
        "records_removed_logged": sum(int(f.get("records_removed", 0)) for ls in passes.values() for f in ls),
        "problems": problems, "examples": examples,
    }


def run(a) -> dict:
    rnd = random.Random(a.seed)
    binary = Path(a.bin or os.environ.get("FRIEDA_BIN", REPO / "target" / "release" / "frieda")).resolve()
    workdir = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="frieda-crash-"))
    workdir.mkdir(parents=True, exist_ok=True)
    power = PowerLoss(workdir, a.syncfs_namespace) if a.power_loss else None
    broker = Broker(binary, workdir, a.port or free_port(), power.mount if power else workdir / "data")
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
    topic_gone = False
    kills_during_cleaning: list[dict] = []
    try:
        if power:
            power.fs.mount()
        broker.start(broker_config(a))
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": LOG_LEVEL})
        admin.create_topics([NewTopic(topic, a.partitions, 1, config=topic_configs(a))])[topic].result(timeout=30)
        apis = api_versions("127.0.0.1", broker.port)
        groups_supported = API_OFFSET_COMMIT in apis
        me = [sys.executable, str(Path(__file__).resolve())]
        common = ["--bootstrap", broker.bootstrap, "--topic", topic, "--seed", str(a.seed),
                  "--stop-file", str(stop_file), "--partitions", str(a.partitions), "--keys", str(a.keys)]
        # losing acknowledged records (allowed with power loss and no flush.messages) makes an
        # idempotent producer's sequence numbers disagree with the broker's: a fatal error
        loss_allowed = bool(power) and not a.flush_messages
        for w in range(a.producers):
            out = workdir / f"producer-{w}.acked"
            out_files.append(out)
            workers.append(subprocess.Popen(me + ["--worker", "producer", "--id", str(w), "--out", str(out),
                                                  "--rate", str(a.rate)] + common
                                            + (["--recreate-on-fatal"] if loss_allowed else []),
                                            stdin=subprocess.DEVNULL))
        commit_file = workdir / "committer.log"
        if groups_supported:
            workers.append(subprocess.Popen(me + ["--worker", "committer", "--out", str(commit_file),
                                                  "--group", group] + common, stdin=subprocess.DEVNULL))
        hw_seen = {p: (0, 0) for p in range(a.partitions)}
        commits_seen: dict[int, int] = {}
        commits_confirmed: dict[int, set[int]] = {}  # every value the broker confirmed, per partition

        def note_confirmed_commits(also_seen: bool) -> None:
            """Adds the commits the committer has written to its file (each one the broker
            confirmed) to `commits_confirmed`, and with `also_seen` to `commits_seen`."""
            if not (groups_supported and commit_file.exists()):
                return
            for p, o in parse_worker_file(commit_file, -1)[3]:
                if also_seen:
                    commits_seen[p] = max(commits_seen.get(p, -1), o)
                commits_confirmed.setdefault(p, set()).add(o)
        last_kill_at = 0.0  # wall time of the last kill: commits confirmed before it may be lost to the cut
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
            note_confirmed_commits(also_seen=True)
            last_kill_at = time.time()
            broker.kill()
            if a.compact:  # was a pass under way? (its files are finished or discarded at the start)
                interrupted = pass_files(broker.data, topic, a.partitions)
                if interrupted:
                    kills_during_cleaning.append({"cycle": cycle, "files": interrupted[:6]})
            before_cut = None
            if power:
                # nothing may append while the log before the cut is compared with what survives
                signal_workers(workers, signal.SIGSTOP)
                # Commits the broker confirmed between the sample above and the kill: the
                # committer wrote them to its file since (a commit confirmed in that window and
                # written back before the cut was reported as "never confirmed", 2026-12-02).
                note_confirmed_commits(also_seen=False)
                before_cut = power.capture(topic, a.partitions)
                power.cut(a.writeback, rnd.randrange(1 << 30))
            acked_after = count_lines(out_files, "A")
            broker.start(broker_config(a))
            try:
                wm = watermarks(broker.bootstrap, topic, a.partitions, timeout=60 if not power else 20)
            except KafkaException as e:
                if not power:
                    raise
                _, fsynced, names_not_durable, dirty_dirs = before_cut
                failures.append(
                    f"cycle {cycle}: the topic is gone after the power cut ({e.args[0].str()}); "
                    f"{sum(map(len, fsynced.values()))} fsynced records with it; files with fsynced data "
                    f"whose names were not durable: {names_not_durable[:8]}; directories with pending entries: "
                    f"{dirty_dirs[:6]} (a directory the broker never fsynced)")
                topic_gone = True
                result["cycles"] = cycle + 1
                break
            if power:
                power.check(cycle, broker.bootstrap, topic, wm, before_cut)
            # after the restart: nothing sampled before the kill went backwards (with power loss,
            # records that were never fsynced may go: reported, not failed)
            for p, (lo, hi) in wm.items():
                if hi < hw_seen[p][1]:
                    if power:
                        power.hw_behind_sample += 1
                    else:
                        hw_regressions.append(f"cycle {cycle}: partition {p} high watermark {hi} < {hw_seen[p][1]} before the kill")
                if lo < hw_seen[p][0]:
                    hw_regressions.append(f"cycle {cycle}: partition {p} log start {lo} < {hw_seen[p][0]} before the kill")
                hw_seen[p] = (lo, hi) if power else (max(hw_seen[p][0], lo), max(hw_seen[p][1], hi))
            if groups_supported and commits_seen:
                now = committed(broker.bootstrap, topic, a.partitions, group)
                for p, o in commits_seen.items():
                    c = now.get(p, -1)
                    if power and not a.flush_messages:
                        # unsynced commits may be lost, but only to a value committed before (or none)
                        if c >= 0 and c not in commits_confirmed.get(p, set()):
                            commit_regressions.append(f"cycle {cycle}: partition {p} committed {c}, never confirmed")
                        commits_seen[p] = c
                    elif c < o:
                        commit_regressions.append(f"cycle {cycle}: partition {p} committed {now.get(p)} < {o} confirmed before the kill")
            if power:
                signal_workers(workers, signal.SIGCONT)
            cycle_log.append({"cycle": cycle, "up_s": round(up, 3), "acked": acked_after,
                              "new_acks": acked_after - acked_before, "sampled": sampled,
                              "hw": {p: hi for p, (_, hi) in wm.items()}})
            print(f"cycle {cycle + 1}/{a.cycles}: up {up:.2f}s, acked {acked_after} (+{acked_after - acked_before}), "
                  f"high watermarks {[hi for _, (_, hi) in sorted(wm.items())]}", flush=True)
            result["cycles"] = cycle + 1
        if topic_gone:
            # nothing left to produce to: stop the clients without waiting for their flush
            signal_workers(workers, signal.SIGKILL)
            for pr in workers:
                pr.wait(timeout=10)
        else:
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
        commits_total = 0
        if groups_supported:
            all_commits = parse_worker_file(commit_file, -1)[3]
            commits_total = len(all_commits)
            if loss_allowed:
                # What the final (clean) restart must keep: the last commit confirmed since the
                # last cut, by confirmation time (the line may have been written after the
                # SIGSTOP of the cut). Not the largest: after records were lost to the cut, the
                # committer first commits its stale position, then, reset to the earliest offset
                # by OFFSET_OUT_OF_RANGE, smaller ones, as any consumer would.
                commits_seen = {}
                for p, o in commits_after(commit_file, last_kill_at):
                    commits_seen[p] = o
            else:
                for p, o in all_commits:
                    commits_seen[p] = max(commits_seen.get(p, -1), o)
        rc = broker.stop()
        if rc != 0:
            failures.append(f"broker exited {rc} on SIGTERM (want 0)")
        # verification: no retention any more, so nothing disappears while we read
        broker.start(broker_config(a, verify=True))
        if topic_gone:
            wm = {p: (0, 0) for p in range(a.partitions)}
        else:
            wm = watermarks(broker.bootstrap, topic, a.partitions, timeout=60)
        for p, (lo, hi) in wm.items():
            if lo < hw_seen[p][0] or (hi < hw_seen[p][1] and not power):
                hw_regressions.append(f"final: partition {p} watermarks {(lo, hi)} < {hw_seen[p]}")
        if groups_supported and commits_seen and not topic_gone:
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
        verified = below_start = lost = corrupt = lost_fsynced = 0
        lost_examples = []
        compaction = None
        if a.compact:
            compaction = check_compacted(a, acked, logs, wm, cleaned_passes(broker.text(), topic))
            verified, lost, corrupt = compaction["verified"], compaction["lost"], compaction["corrupt"]
            lost_examples = compaction.pop("examples")
            leftover = pass_files(broker.data, topic, a.partitions)
            if leftover:
                failures.append(f"files of an interrupted cleaning left after the start: {leftover[:6]}")
            compaction["kills_during_cleaning"] = len(kills_during_cleaning)
            compaction["kills_during_cleaning_files"] = kills_during_cleaning[:4]
            compaction["offsets_log_passes"] = len(cleaned_passes(broker.text(), "__consumer_offsets").get(0, []))
        for p, off, w, seq in ([] if a.compact else acked):
            lo, hi = wm[p]
            if off < lo:
                below_start += 1
                continue
            v = logs[p].get(off)
            if v == value_of(a.seed, w, seq):
                verified += 1
                continue
            if power:  # a lost record's offset may have been reused by a later one
                lost += 1
                if power.fsynced_keys.get((w, seq)) == (p, off):
                    lost_fsynced += 1
                    lost_examples.append(f"{p}@{off} (w{w} s{seq}): fsynced, then lost")
            elif v is None:
                lost += 1
                lost_examples.append(f"{p}@{off} (w{w} s{seq}): missing, log {lo}..{hi}")
            else:
                corrupt += 1
                lost_examples.append(f"{p}@{off} (w{w} s{seq}): different value {v[:24]!r}")
        if compaction is not None:  # offsets removed by compaction are no gaps; unexplained ones are
            gaps = compaction["unexplained_gaps"]
        else:
            gaps = sum(1 for p, (lo, hi) in wm.items() for o in range(lo, hi) if o not in logs[p])
        seen: dict[tuple[int, int], tuple[int, int]] = {}
        duplicates, not_sent, reordered = [], [], []
        stored = 0
        for p, recs in logs.items():
            last_seq: dict[int, int] = {}
            for off in sorted(recs):
                v = recs[off]
                m = VALUE_RE.match(v or b"")
                k = (int(m.group(1)), int(m.group(2))) if m else None
                if k is None or v != value_of(a.seed, *k):
                    not_sent.append(f"{p}@{off}: {(v or b'')[:24]!r}")
                    continue
                stored += 1
                if k in seen:
                    duplicates.append(f"w{k[0]} s{k[1]} at {seen[k]} and {(p, off)}")
                seen[k] = (p, off)
                if k[1] <= last_seq.get(k[0], -1):
                    reordered.append(f"{p}@{off}: w{k[0]} s{k[1]} after s{last_seq[k[0]]}")
                last_seq[k[0]] = k[1]
        acked_keys = {(w, seq) for _, _, w, seq in acked}
        if len(acked_keys) != len(acked):
            duplicates.append(f"{len(acked) - len(acked_keys)} records acknowledged twice")
        panics = broker.text().count("panicked at")
        result.update({
            "records_acked": len(acked), "records_verified": verified, "deleted_by_retention": below_start,
            "lost": lost, "corrupt": corrupt, "gaps_below_hw": gaps, "duplicates": len(duplicates),
            "not_sent_values": len(not_sent), "reordered": len(reordered),
            "stored_records": stored, "sent": sent, "unacked_at_end": unacked, "delivery_errors": len(errors),
            "producer_fatal_errors": len(fatal), "hw_regressions": len(hw_regressions),
            "committed_offsets_check": "not applicable (OffsetCommit not advertised)" if not groups_supported
            else "not checked (the topic is gone)" if topic_gone
            else "passed" if not commit_regressions and commits_total else "FAILED",
            "commit_regressions": len(commit_regressions), "commits_checked": len(commits_seen),
            "commits_confirmed": commits_total,
            "broker_crashes": len(broker.unexpected_exits) + panics, "broker_starts": broker.starts,
            "log_start_offsets": {p: lo for p, (lo, _) in wm.items()},
            "high_watermarks": {p: hi for p, (_, hi) in wm.items()},
            "truncations_logged": len(re.findall(r"truncating torn tail", broker.text())),
            "seconds": round(time.monotonic() - t_start, 1),
        })
        if compaction is not None:
            result["compaction"] = compaction
            result["removed_by_compaction"] = compaction["removed_by_compaction"]
            for what, n in (("acknowledged records not at their acknowledged offset", compaction["not_acknowledged_there"]),
                            ("keys whose newest surviving record is older than their latest acknowledged one",
                             compaction["stale_keys"]),
                            ("keys stored twice below the offset the broker logged as cleaned",
                             compaction["duplicate_keys_below_cleaned"])):
                if n:
                    failures.append(f"compaction: {n} {what}: {compaction['problems'][:5]}")
            if below_start or any(lo for lo, _ in wm.values()):
                failures.append(f"compaction: the log start moved on a compact-only topic: {wm}")
            if not compaction["records_removed_logged"] or not compaction["removed_by_compaction"]:
                failures.append(f"compaction: nothing was cleaned during the run (`cleaned log` lines removed "
                                f"{compaction['records_removed_logged']} records, {compaction['removed_by_compaction']} "
                                "acknowledged records superseded and gone): the per-key check tested nothing")
        if power:
            result.update({
                "power_cuts": power.fs.crashes, "syncfs_namespace": a.syncfs_namespace,
                "lost_fsynced": lost_fsynced, "lost_not_fsynced": lost - lost_fsynced,
                "fsynced_records_lost_at_cuts": power.fsynced_lost, "fsynced_records": len(power.fsynced_keys),
                "power_loss_problems": len(power.problems), "fsyncs": power.fsyncs,
                "pages_written_back": power.pages_written_back,
                "hw_behind_sample_after_cut": power.hw_behind_sample,
            })
            if power.problems:
                failures.append(f"power loss: {power.problems[:5]}")
            if lost_fsynced:
                failures.append(f"{lost_fsynced} acknowledged records lost although fsynced: {lost_examples[:5]}")
            if lost and a.flush_messages:
                failures.append(f"{lost} acknowledged records lost with flush.messages={a.flush_messages} "
                                f"({lost_fsynced} of them fsynced)")
        elif lost or corrupt:
            failures.append(f"{lost} lost and {corrupt} corrupt acknowledged records: {lost_examples[:5]}")
        if gaps:
            failures.append(f"{gaps} offsets below the high watermark unreadable")
        if duplicates:
            failures.append(f"duplicates: {duplicates[:5]}")
        if not_sent:
            failures.append(f"{len(not_sent)} stored records are no value a producer sent: {not_sent[:3]}")
        if reordered:
            failures.append(f"{len(reordered)} records stored out of their producer's order: {reordered[:3]}")
        if loss_allowed and lost:
            # the producers noticed the loss (sequence desynchronisation): allowed, reported
            result["errors_after_allowed_loss"] = {"fatal": len(fatal), "delivery": len(errors)}
        else:
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
        if groups_supported and not commits_total and not topic_gone:
            failures.append("OffsetCommit is advertised but no commit was ever confirmed: the committed-offsets check tested nothing")
        if panics:
            failures.append("broker stderr contains a panic")
        if verified == 0 and not topic_gone:
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
        signal_workers(workers, signal.SIGCONT)
        for pr in workers:
            if pr.poll() is None:
                try:
                    pr.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    pr.wait(timeout=10)
        broker.cleanup()
        if power:
            power.close()
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
    ap.add_argument("--compact", action="store_true",
                    help="compacted topic, bounded key space, per-key checks (see the docstring)")
    ap.add_argument("--keys", type=int, default=50, help="keys per producer (key = w<producer>-k<seq %% keys>)")
    ap.add_argument("--cleaner-backoff-ms", type=int, default=200, help="with --compact: log.cleaner.backoff.ms")
    ap.add_argument("--cleaner-io-bytes", type=int, default=0,
                    help="with --compact: log.cleaner.io.max.bytes.per.second (default unlimited)")
    ap.add_argument("--power-loss", action="store_true",
                    help="data dir on syncfs; every kill also cuts the power (unsynced changes are lost)")
    ap.add_argument("--syncfs-namespace", choices=["strict", "journal"], default="strict",
                    help="with --power-loss: when directory changes become durable (see the docstring)")
    ap.add_argument("--writeback", type=float, default=0.5,
                    help="with --power-loss: probability that an unsynced page reached the disk before the cut")
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
    ap.add_argument("--recreate-on-fatal", action="store_true")
    a = ap.parse_args(argv)
    if a.worker == "producer":
        a.worker = a.worker_id
        return producer_worker(a)
    if a.worker == "committer":
        return committer_worker(a)
    if not a.max_seconds:
        a.max_seconds = 30 * a.cycles + 180
    if a.compact:
        a.segment_bytes = a.segment_bytes or 32768
    if not a.variant:
        parts = []
        if a.flush_messages:
            parts.append(f"flush.messages={a.flush_messages}")
        if a.segment_bytes:
            parts.append(f"segment.bytes={a.segment_bytes}")
        if a.retention_ms or a.retention_bytes:
            parts.append(f"retention.ms={a.retention_ms} retention.bytes={a.retention_bytes}")
        if a.compact:
            parts = [f"compaction (segment.bytes={a.segment_bytes}, {a.keys} keys per producer"
                     + (f", cleaner {a.cleaner_io_bytes} bytes/s" if a.cleaner_io_bytes else "") + ")"] + \
                [x for x in parts if not x.startswith("segment.bytes")]
        a.variant = ", ".join(parts) or "default durability"
        if a.power_loss:
            a.variant = f"power loss ({a.syncfs_namespace} namespace), {a.variant}"
    if a.power_loss and (a.retention_ms or a.retention_bytes):
        ap.error("--power-loss checks every record from the log start: no retention")
    if a.compact and (a.power_loss or a.retention_ms or a.retention_bytes):
        ap.error("--compact checks a compact-only topic: no retention, no power loss")
    r = run(a)
    lost = f"lost {r.get('lost', '?')}"
    if a.power_loss:
        lost += (f" (allowed: not fsynced {r.get('lost_not_fsynced', '?')}, fsynced {r.get('lost_fsynced', '?')}), "
                 f"{r.get('power_cuts', '?')} power cuts")
    if a.compact and "compaction" in r:
        c = r["compaction"]
        lost += (f" (per key: {c['keys']} keys; {c['removed_by_compaction']} superseded records removed, "
                 f"{c['passes_logged']} passes logged, {c['kills_during_cleaning']} kills during a pass)")
    print(f"\n{'PASSED' if r['ok'] else 'FAILED'}: {r['variant']}, seed {r['seed']}: {r['cycles']} kill/restart cycles, "
          f"{r.get('records_acked', 0)} acknowledged, {r.get('records_verified', 0)} verified byte for byte, "
          f"{r.get('deleted_by_retention', 0)} deleted by retention, {lost}, "
          f"duplicates {r.get('duplicates', '?')}, watermark regressions {r.get('hw_regressions', '?')}, "
          f"committed offsets: {r.get('committed_offsets_check', '?')} ({r.get('commits_confirmed', '?')} confirmed), "
          f"broker crashes {r.get('broker_crashes', '?')}")
    for f in r["failures"]:
        print(f"  failure: {f}")
    print("RESULT " + json.dumps(r, sort_keys=True), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(r, sort_keys=True, indent=1))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
