"""Helpers for test_transactions.py: transactional producers, readers that stop at the end a
consumer of a given isolation level can see (partition EOF), ListOffsets by isolation level,
Kafka's `kafka-transactions` tool (TransactionsCommand) with its tables parsed, and the
exactly-once consume-transform-produce worker, run as its own process:

    python txn_helpers.py eos-worker BOOTSTRAP GROUP IN_TOPIC OUT_TOPIC TXN_ID EVENTS_FILE BATCH

The worker subscribes GROUP to IN_TOPIC (read_committed, no auto commit), and for every batch of
at most BATCH records begins a transaction, produces ``b"out:" + value`` (same key, same
partition, header ``src = "<partition>:<offset>"``) to OUT_TOPIC, adds the consumed offsets with
send_offsets_to_transaction and commits. On an abortable error it aborts; on an abortable or
fatal error (or an abort that fails) it closes and re-creates both its producer and its consumer
(the new consumer starts from the group's committed offsets). A retriable commit error retries
the commit. One line per event goes to EVENTS_FILE, flushed at once:

    I <monotonic ns>                            producer initialised (init_transactions done)
    B <records> <ns>                            a transaction began for that many records
    O <ns> / T <ns>                             send_offsets_to_transaction called / returned
    C <records> <p>:<next offset>,... <ns>      a transaction committed with these input offsets
    E <stage> <code name> <fatal> <abortable> <retriable> <message>    an error
    A <ok|failed>                               abort_transaction after an abortable error
    W <stage>                                   watchdog: a call hung past its timeout + 15 s;
                                                the worker exits with status 3 (restart it)
    X                                           SIGTERM: clean exit

The producer sets metadata.recovery.strategy=none: with librdkafka's default (rebootstrap,
KIP-1102, librdkafka >= 2.10) a single-broker cluster going down makes the client decommission
its broker objects at once; the group coordinator cached for send_offsets_to_transaction still
names the decommissioned object, which never comes up, and the call never returns whatever its
timeout (seen on every run of the SIGKILL test: "REBOOTSTRAP ... Decommissioning 1 broker(s)",
then AddOffsetsToTxn answered and no TxnOffsetCommit sent). The watchdog stays as a guard: an
application supervisor would restart such a process, and the test does the same (a new
producer's init_transactions fences the old one and aborts its open transaction).
"""

from __future__ import annotations

import faulthandler
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import (Consumer, IsolationLevel, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, OffsetSpec

LOG_LEVEL = int(os.environ.get("FRIEDA_TEST_RDKAFKA_LOG_LEVEL", "3"))
REPO_ROOT = Path(__file__).resolve().parents[2]


# ---- clients ---------------------------------------------------------------------------------

def txn_producer(bootstrap: str, txn_id: str, **conf) -> Producer:
    """A confluent-kafka transactional producer (idempotent, acks=all implied)."""
    c = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL, "transactional.id": txn_id,
         "linger.ms": 5, "reconnect.backoff.max.ms": 1000}
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(c)


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL})


def latest_offsets(bootstrap: str, topic: str, partitions, committed: bool) -> dict[int, int]:
    """ListOffsets LATEST with isolation level read_committed (the last stable offset) or
    read_uncommitted (the high watermark)."""
    a = admin(bootstrap)
    iso = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    fs = a.list_offsets(specs, isolation_level=iso, request_timeout=15)
    return {tp.partition: f.result(timeout=20).offset for tp, f in fs.items()}


def earliest_offsets(bootstrap: str, topic: str, partitions) -> dict[int, int]:
    a = admin(bootstrap)
    specs = {TopicPartition(topic, p): OffsetSpec.earliest() for p in partitions}
    fs = a.list_offsets(specs, request_timeout=15)
    return {tp.partition: f.result(timeout=20).offset for tp, f in fs.items()}


def watermarks(bootstrap: str, topic: str, partitions, isolation: str = "read_uncommitted") -> dict[int, tuple[int, int]]:
    """get_watermark_offsets of a consumer with this isolation level (librdkafka's default is
    read_committed, whose "high" is the last stable offset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-probe-watermarks",
                  "log_level": LOG_LEVEL, "isolation.level": isolation})
    try:
        return {p: tuple(c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False))
                for p in partitions}
    finally:
        c.close()


class Reader:
    """A consumer assigned to ``partitions`` of ``topic`` from ``start``, with the given
    isolation level. ``drain`` reads until every partition reported EOF (the high watermark for
    read_uncommitted, the last stable offset for read_committed) after its last message."""

    def __init__(self, bootstrap: str, topic: str, partitions, isolation: str, start: int = 0):
        assert isolation in ("read_committed", "read_uncommitted")
        self.topic = topic
        self.partitions = list(partitions)
        self.c = Consumer({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL,
                           "group.id": "txn-reader-" + uuid.uuid4().hex[:8],
                           "enable.auto.commit": False, "enable.auto.offset.store": False,
                           "auto.offset.reset": "error", "enable.partition.eof": True,
                           "isolation.level": isolation, "fetch.wait.max.ms": 100,
                           "check.crcs": True})
        self.c.assign([TopicPartition(topic, p, start) for p in self.partitions])
        self.all: dict[int, list] = {p: [] for p in self.partitions}

    def drain(self, timeout: float = 30, need: dict[int, int] | None = None, eof=None) -> dict[int, list]:
        """Poll until every partition in ``eof`` (default: all) is at EOF with nothing after it
        and, for each p in ``need``, a record at offset >= need[p] was read. Returns the
        messages read now. (EOF is reported once per position: wait only for partitions that
        move.)"""
        need = dict(need or {})
        eof_parts = set(self.partitions if eof is None else eof)
        got: dict[int, list] = {p: [] for p in self.partitions}
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if at_eof >= eof_parts and not need:
                return got
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_eof.add(m.partition())
                    continue
                raise KafkaException(m.error())
            p = m.partition()
            at_eof.discard(p)
            got[p].append(m)
            self.all[p].append(m)
            if p in need and m.offset() >= need[p]:
                del need[p]
        raise AssertionError(f"{self.topic}: no EOF on {eof_parts - at_eof} or records "
                             f"still expected {need} after {timeout}s; read "
                             f"{ {p: [m.offset() for m in ms] for p, ms in got.items()} }")

    def quiet(self, seconds: float) -> list:
        """Poll for ``seconds``; return the records read (EOF events ignored)."""
        out = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = self.c.poll(0.1)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            out.append(m)
            self.all[m.partition()].append(m)
        return out

    def positions(self) -> dict[int, int]:
        tps = self.c.position([TopicPartition(self.topic, p) for p in self.partitions])
        return {tp.partition: tp.offset for tp in tps}

    def close(self):
        self.c.close()


def read_all(bootstrap: str, topic: str, partitions, isolation: str, timeout: float = 30):
    """(messages per partition, consumer position per partition once at EOF)."""
    r = Reader(bootstrap, topic, partitions, isolation)
    try:
        r.drain(timeout)
        return r.all, r.positions()
    finally:
        r.close()


def norm_headers(h) -> list:
    return [(k, v) for k, v in (h or [])]


def describe_message(m) -> tuple:
    """What a user compares: offset, key, value, headers, timestamp (type and value)."""
    return (m.offset(), m.key(), m.value(), norm_headers(m.headers()), m.timestamp())


def error_of(exc: BaseException) -> KafkaError:
    assert isinstance(exc, KafkaException), repr(exc)
    err = exc.args[0]
    assert isinstance(err, KafkaError), repr(exc.args)
    return err


# ---- Kafka's kafka-transactions tool ---------------------------------------------------------

TXN_TOOL = "org.apache.kafka.tools.TransactionsCommand"


def java_classpath() -> str:
    f = os.environ.get("FRIEDA_JAVA_CLASSPATH") or str(REPO_ROOT / "target" / "java-classpath.txt")
    if not Path(f).exists():
        assert shutil.which("mvn"), "mvn not found: run scripts/test (it installs Maven and a JDK)"
        f = "/tmp/frieda-txn-test-classpath.txt"
        subprocess.run(["mvn", "-B", "-q", "-f", str(REPO_ROOT / "tests" / "java" / "pom.xml"),
                        "dependency:build-classpath", f"-Dmdep.outputFile={f}", "-Dmdep.includeScope=test"],
                       check=True, timeout=600)
    cp = Path(f).read_text().strip()
    assert "kafka-tools-4.4.0.jar" in cp and "kafka-clients-4.4.0.jar" in cp, cp[:300]
    return cp


def txn_tool(cp: str, bootstrap: str, *args: str, timeout: float = 90) -> str:
    """Runs kafka-transactions with ``args``; asserts exit status 0; returns stdout."""
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err",
           "-cp", cp, TXN_TOOL, "--bootstrap-server", bootstrap, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    print(f"$ kafka-transactions {' '.join(args)}\n{r.stdout}")
    assert r.returncode == 0, f"kafka-transactions {' '.join(args)} exited {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    return r.stdout


def parse_table(out: str) -> list[dict[str, str]]:
    """The tools print a header line of column names and one line per row, cells separated by
    tabs and padded with spaces. Lines before the header (none expected) are ignored."""
    lines = [l for l in out.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        cells = [c.strip() for c in re.split(r"\t", line.rstrip("\t \n"))]
        if len(cells) >= 2 and all(re.fullmatch(r"[A-Z][A-Za-z]*", c) for c in cells):
            header = cells
            rows = []
            for row_line in lines[i + 1:]:
                row = [c.strip() for c in row_line.rstrip("\n").split("\t")]
                while row and row[-1] == "" and len(row) > len(header):
                    row.pop()
                assert len(row) == len(header), f"row {row_line!r} does not match header {header}"
                rows.append(dict(zip(header, row)))
            return rows
    raise AssertionError(f"no table in the tool's output:\n{out}")


# ---- the exactly-once worker -----------------------------------------------------------------

def eos_worker(bootstrap, group, in_topic, out_topic, txn_id, events_path, batch) -> int:
    out = open(events_path, "a", buffering=1)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test dumps our stacks when we hang

    def ev(*parts):
        out.write(" ".join(str(p) for p in parts) + "\n")

    # stage name and monotonic deadline of the client call in progress (None: none)
    watch: list = [None]

    def watchdog():
        while True:
            time.sleep(0.5)
            w = watch[0]
            if w is not None and time.monotonic() > w[1]:
                ev("W", w[0])
                faulthandler.dump_traceback(all_threads=True)
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()

    def call(stage, fn, *args):
        """fn(*args, 30) under the watchdog (30 s API timeout + 15 s grace)."""
        watch[0] = (stage, time.monotonic() + 45)
        try:
            return fn(*args, 30)
        finally:
            watch[0] = None

    def err_line(stage, e):
        err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
        if err is None:
            ev("E", stage, "exception", 0, 0, 0, repr(e).replace("\n", " ")[:300])
            return False, False, False
        ev("E", stage, err.name(), int(err.fatal()), int(err.txn_requires_abort()), int(err.retriable()),
           str(err.str()).replace("\n", " ")[:300])
        return err.fatal(), err.txn_requires_abort(), err.retriable()

    common = {"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL, "reconnect.backoff.ms": 50,
              "reconnect.backoff.max.ms": 500}
    if os.environ.get("FRIEDA_TEST_RDKAFKA_DEBUG"):  # e.g. "eos,protocol,cgrp": librdkafka's debug log
        common.update({"debug": os.environ["FRIEDA_TEST_RDKAFKA_DEBUG"], "log_level": 7})
    producer = consumer = None
    in_txn = False
    while not stop:
        try:
            if producer is None:
                producer = Producer(dict(common, **{"transactional.id": txn_id, "linger.ms": 5,
                                                     "transaction.timeout.ms": 10000,
                                                     "metadata.recovery.strategy": "none"}))
                call("init", producer.init_transactions)
                ev("I", time.monotonic_ns())
            if consumer is None:
                consumer = Consumer(dict(common, **{
                    "group.id": group, "isolation.level": "read_committed", "enable.auto.commit": False,
                    "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                    "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100}))
                consumer.subscribe([in_topic])
            msgs = consumer.consume(batch, 0.5)
            recs = []
            for m in msgs:
                if m.error():
                    ev("E", "consume", m.error().name(), int(m.error().fatal()), 0, 0,
                       str(m.error().str()).replace("\n", " ")[:200])
                    if m.error().fatal():
                        raise KafkaException(m.error())
                    continue
                recs.append(m)
            if not recs:
                continue
            producer.begin_transaction()
            in_txn = True
            ev("B", len(recs), time.monotonic_ns())
            nxt: dict[int, int] = {}
            for m in recs:
                while True:
                    try:
                        producer.produce(out_topic, key=m.key(), value=b"out:" + m.value(),
                                         partition=m.partition(),
                                         headers=[("src", f"{m.partition()}:{m.offset()}".encode())])
                        break
                    except BufferError:
                        producer.poll(0.1)
                nxt[m.partition()] = m.offset() + 1
            offsets = [TopicPartition(in_topic, p, o) for p, o in sorted(nxt.items())]
            ev("O", time.monotonic_ns())
            call("send_offsets", producer.send_offsets_to_transaction, offsets, consumer.consumer_group_metadata())
            ev("T", time.monotonic_ns())
            for attempt in range(10):
                try:
                    call("commit", producer.commit_transaction)
                    break
                except KafkaException as e:
                    fatal, abortable, retriable = err_line("commit", e)
                    if retriable and not fatal and not abortable and attempt < 9:
                        continue
                    raise
            in_txn = False
            ev("C", len(recs), ",".join(f"{p}:{o}" for p, o in sorted(nxt.items())), time.monotonic_ns())
        except KafkaException as e:
            fatal, abortable, _ = err_line("loop", e)
            if abortable and not fatal and producer is not None and in_txn:
                try:
                    call("abort", producer.abort_transaction)
                    ev("A", "ok")
                except KafkaException as e2:
                    err_line("abort", e2)
                    ev("A", "failed")
            in_txn = False
            # start over from the committed offsets with a fresh producer (its init_transactions
            # fences and aborts whatever the old one left open) and a fresh consumer
            if consumer is not None:
                try:
                    consumer.close()
                except Exception as e3:  # noqa: BLE001
                    ev("E", "close", "exception", 0, 0, 0, repr(e3)[:200])
            consumer = None
            producer = None
            time.sleep(0.2)
    if consumer is not None:
        consumer.close()
    ev("X")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "eos-worker":
        b, g, it, ot, tid, evp, n = sys.argv[2:9]
        sys.exit(eos_worker(b, g, it, ot, tid, evp, int(n)))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
