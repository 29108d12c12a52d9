"""A failed fsync is never acknowledged ("fsyncgate"), with the broker's data dir on syncfs.

With ``flush.messages = 1`` a record is acknowledged only once it is fsynced. When fsync fails
(syncfs ``fail-fsync``: EIO, and, as Linux does after a writeback error, the unsynced data is
dropped from the dirty set, so a later fsync "succeeds" without making it durable), the broker
must not acknowledge the records whose fsync failed, must keep refusing produces to that
partition with KAFKA_STORAGE_ERROR even once fsync works again (retrying the fsync and then
acknowledging is exactly the PostgreSQL fsyncgate bug), and must stay up. After a restart (SIGKILL
and a power cut) it recovers from what is durable: every record acknowledged before the failure is
there byte for byte, and production works again.

The scenario runs to the end and reports every check; each is labelled either
``[baseline]`` (expected of the current broker) or ``[needs fsync-failure handling]`` (the
behaviour being built: expected to fail against a broker without it). The test fails if any
check fails, listing all of them.

Setup (topic creation) is made durable with a global ``sync`` before the scenario, so that this
test is about fsync failures alone; whether the broker makes its directories durable itself is
what the crash harness's power-loss variants check (tests/crash/run.py --power-loss).
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("crash_run", REPO / "tests" / "crash" / "run.py")
crash_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crash_run)  # the crash harness's Broker and CRC-checked reader

BASELINE = "[baseline]"
NEW = "[needs fsync-failure handling]"
CONFIG = "flush.messages = 1\nauto.create.topics.enable = false\nnum.partitions = 1\n"


class Checklist:
    """Checks collected over one scenario, each labelled with what it depends on; ``verify``
    fails listing every result, so one run shows which checks pass and which do not."""

    def __init__(self) -> None:
        self.results: list[tuple[bool, str, str]] = []

    def check(self, ok: bool, label: str, what: str) -> bool:
        self.results.append((bool(ok), label, what))
        print(f"{'PASS' if ok else 'FAIL'} {label} {what}", flush=True)
        return bool(ok)

    def verify(self) -> None:
        failed = [r for r in self.results if not r[0]]
        report = "\n".join(f"  {'PASS' if ok else 'FAIL'} {label} {what}" for ok, label, what in self.results)
        assert not failed, f"{len(failed)} of {len(self.results)} checks failed:\n{report}"


def produce(bootstrap: str, topic: str, values: list[bytes], timeout: float = 40) -> list[tuple[bytes, KafkaError | None, int]]:
    """Produces each value (acks=all, no idempotence, few retries, a short delivery timeout)
    and returns (value, error or None, offset) for every delivery report."""
    reports: list[tuple[bytes, KafkaError | None, int]] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "retries": 2, "retry.backoff.ms": 200, "message.timeout.ms": 10000, "linger.ms": 0,
                  "log_level": crash_run.LOG_LEVEL})
    for v in values:
        p.produce(topic, value=v, partition=0,
                  on_delivery=lambda err, msg, v=v: reports.append((v, err, msg.offset())))
    left = p.flush(timeout)
    assert left == 0, f"{left} records without a delivery report after {timeout}s"
    return reports


def values(tag: str, n: int, rnd: random.Random) -> list[bytes]:
    return [b"%s-%d|" % (tag.encode(), i) + rnd.randbytes(rnd.randint(0, 300)) for i in range(n)]


def test_failed_fsync_is_never_acknowledged(syncfs, tmp_path):
    binary = Path(os.environ.get("FRIEDA_BIN", REPO / "target" / "release" / "frieda")).resolve()
    if not binary.exists():
        pytest.fail(f"broker binary {binary} not found: build it or set FRIEDA_BIN")
    rnd = random.Random(56)
    checks = Checklist()
    topic = f"fsync-failure-{uuid.uuid4().hex[:8]}"
    broker = crash_run.Broker(binary, tmp_path, crash_run.free_port(), syncfs.mountpoint)
    try:
        broker.start(CONFIG)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": crash_run.LOG_LEVEL})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
        syncfs.sync()

        before = produce(broker.bootstrap, topic, values("before", 50, rnd))
        assert all(err is None for _, err, _ in before), f"produce failed before any fault: {before[:3]}"
        fsyncs_before = syncfs.stats()["counters"]["fsyncs"]
        assert fsyncs_before > 0, "flush.messages=1 made no fsync: the scenario would test nothing"

        syncfs.fail_fsync("on", f"{topic}-0/*")
        during = produce(broker.bootstrap, topic, values("during", 20, rnd))
        failures = syncfs.stats()["counters"]["fsync_failures"]
        assert failures > 0, "the broker did not fsync the partition while fsync was failing"
        acked_during = [(v, off) for v, err, off in during if err is None]
        checks.check(not acked_during, NEW,
                     f"no record whose fsync failed is acknowledged ({len(acked_during)} of 20 were; "
                     f"{failures} fsyncs failed)")
        codes = sorted({err.name() for _, err, _ in during if err is not None})
        checks.check(set(codes) <= {"KAFKA_STORAGE_ERROR", "_MSG_TIMED_OUT"}, NEW,
                     f"the producer gets KAFKA_STORAGE_ERROR or a timeout (got {codes})")
        checks.check(broker.proc.poll() is None, BASELINE, "the broker is still up after failed fsyncs")

        syncfs.fail_fsync("off")
        after = produce(broker.bootstrap, topic, values("after", 5, rnd)) if broker.proc.poll() is None else []
        acked_after = [(v, off) for v, err, off in after if err is None]
        codes = sorted({err.name() for _, err, _ in after if err is not None})
        checks.check(after and not acked_after and codes == ["KAFKA_STORAGE_ERROR"], NEW,
                     f"once fsync works again the partition still refuses produces with KAFKA_STORAGE_ERROR "
                     f"({len(acked_after)} of {len(after)} acknowledged, errors {codes})")
        checks.check(broker.proc.poll() is None, BASELINE, "the broker is still up after fsync works again")

        # restart through a power cut: only what was durable is left
        if broker.proc.poll() is None:
            broker.proc.send_signal(signal.SIGKILL)
            broker.proc.wait(timeout=10)
        syncfs.crash()
        syncfs.remount()
        broker.start(CONFIG)
        lo, hi = crash_run.watermarks(broker.bootstrap, topic, 1, timeout=30)[0]
        log = crash_run.read_partition(broker.bootstrap, topic, 0, lo, hi, timeout=60)
        missing = [off for v, _, off in before if log.get(off) != v]
        checks.check(not missing, BASELINE,
                     f"after the power cut every record acknowledged before the failure is at its offset, byte "
                     f"for byte ({len(missing)} of 50 missing or different, log {lo}..{hi})")
        missing = [off for v, off in acked_during + acked_after if log.get(off) != v]
        checks.check(not missing, NEW,
                     f"every record acknowledged while or after fsync failed survives the power cut "
                     f"({len(missing)} of {len(acked_during) + len(acked_after)} missing or different)")

        again = produce(broker.bootstrap, topic, values("again", 10, rnd))
        ok = all(err is None for _, err, _ in again)
        if ok:
            lo, hi = crash_run.watermarks(broker.bootstrap, topic, 1, timeout=30)[0]
            log = crash_run.read_partition(broker.bootstrap, topic, 0, lo, hi, timeout=60)
            ok = all(log.get(off) == v for v, _, off in again)
        checks.check(ok, BASELINE, "after the restart production works again and is read back byte for byte")
        checks.check("panicked at" not in broker.text(), BASELINE, "no panic in the broker's log")
    finally:
        broker.cleanup()
    checks.verify()
