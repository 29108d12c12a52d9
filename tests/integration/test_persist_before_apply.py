"""Metadata changes are persisted before they are applied, and a record is visible only once it
is durable, with the broker's data dir on syncfs (tests/powerfail/syncfs.py), a FUSE file
system that can refuse writes (``enospc``) and fail fsyncs (``fail-fsync``) on command.

- With the disk "full" (syncfs ``enospc`` at the bytes already used), AlterConfigs,
  IncrementalAlterConfigs, DeleteTopics, CreatePartitions and OffsetCommit fail, and every read
  (DescribeConfigs, Metadata, Fetch, OffsetFetch) still shows the old state; once space returns
  they all work; after a restart the state is exactly what the clients were told, both for the
  refused changes and for the accepted ones.
- With the fsync of the metadata directory failing after the new file is in place (the commit
  point), the broker stops instead of answering (either answer could be contradicted by a
  restart); after a restart the change is there, after a power cut it is not.
- ``flush.messages=1``: with fsync failing, the record that was appended but not fsynced is never
  visible: not through ListOffsets (latest), not to a consumer, not to a raw Fetch, not even once
  fsync works again (tests/powerfail/test_fsync_failure.py covers acknowledgements and the power
  cut).

Each test skips (saying so) when /dev/fuse is missing or an external broker is set.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, OffsetSpec,
                                   ResourceType)

import helpers as h
import kafka_wire as w
import kafka_wire_extra as wx
from conftest import EXTERNAL, free_port
from frieda_proc import FriedaProc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "powerfail"))
from syncfs import SyncFs  # noqa: E402

T = 20  # seconds, every admin wait
# the error for an admin change the broker could not persist
STORAGE_ERRORS = {KafkaError.KAFKA_STORAGE_ERROR}
# an OffsetCommit whose append failed: Kafka's coordinator maps KAFKA_STORAGE_ERROR to
# NOT_COORDINATOR; either that, COORDINATOR_NOT_AVAILABLE or the storage error itself
COMMIT_ERRORS = {KafkaError.KAFKA_STORAGE_ERROR, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE}


@pytest.fixture
def syncfs_broker(tmp_path):
    """(SyncFs mounted at tmp/mnt, a FriedaProc factory running the broker with its data dir
    there, port). Everything is stopped by PID and unmounted at the end."""
    if EXTERNAL:
        pytest.skip("needs a broker started by the test on syncfs; FRIEDA_EXTERNAL_BOOTSTRAP is set")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: syncfs (a FUSE file system) cannot be mounted here")
    fs = SyncFs(tmp_path / "backing", tmp_path / "mnt", tmp_path)
    fs.mount()
    port = free_port()
    proc = FriedaProc(tmp_path)
    data = fs.mountpoint / "data"

    def start(config: str = "") -> FriedaProc:
        cfg = tmp_path / f"frieda-{proc.starts}.toml"
        cfg.write_text(config)
        proc.start(["--listen", f"127.0.0.1:{port}", "--data-dir", str(data), "--config", str(cfg)],
                   "127.0.0.1", port)
        return proc

    try:
        yield fs, start, f"127.0.0.1:{port}", proc
        assert "panicked at" not in proc.text(), f"broker panicked\n{proc.tail(80)}"
    finally:
        proc.kill()
        fs.unmount()


def _code(fut) -> int | None:
    """The error code a future fails with, None when it succeeds."""
    try:
        fut.result(timeout=T)
        return None
    except KafkaException as e:
        return e.args[0].code()


def _config(a, topic: str, name: str) -> str:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([res], request_timeout=T)[res].result(timeout=T)[name].value


def _partitions(a, topic: str) -> int | None:
    t = a.list_topics(topic=topic, timeout=T).topics.get(topic)
    if t is None or t.error is not None:
        return None
    return len(t.partitions)


def _listed(a, topic: str) -> bool:
    return topic in a.list_topics(timeout=T).topics


def _read_all(bootstrap: str, topic: str, partition: int, n: int) -> list[bytes]:
    got = h.consume_partitions(bootstrap, topic, {partition: n}, timeout=20, check_crcs=True)
    return [got[(partition, o)].value() for o in range(n)]


def _committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "log_level": h.LOG_LEVEL})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=T)[0].offset
    finally:
        c.close()


def _commit(bootstrap: str, group: str, topic: str, offset: int) -> int | None:
    """OffsetCommit through a consumer (assign()-style, generation -1): None or the error code."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "log_level": h.LOG_LEVEL})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        try:
            res = c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        except KafkaException as e:
            return e.args[0].code()
        errs = [tp.error for tp in res if tp.error is not None]
        return errs[0].code() if errs else None
    finally:
        c.close()


def _state(bootstrap: str, topics: dict, group: str) -> dict:
    a = h.admin(bootstrap)
    return {
        "retention.ms": _config(a, topics["cfg"], "retention.ms"),
        "max.message.bytes": _config(a, topics["cfg"], "max.message.bytes"),
        "doomed listed": _listed(a, topics["doomed"]),
        "grow partitions": _partitions(a, topics["grow"]),
        "committed": _committed(bootstrap, group, topics["cfg"]),
    }


def test_refused_metadata_changes_leave_no_trace(syncfs_broker):
    fs, start, bootstrap, proc = syncfs_broker
    start("auto.create.topics.enable = false\n")
    a = h.admin(bootstrap)
    tag = uuid.uuid4().hex[:6]
    topics = {"cfg": f"pba-cfg-{tag}", "doomed": f"pba-doomed-{tag}", "grow": f"pba-grow-{tag}"}
    group = f"pba-group-{tag}"
    h.create_topic(bootstrap, topics["cfg"], 1, config={"retention.ms": "3600000"})
    h.create_topic(bootstrap, topics["doomed"], 1)
    h.create_topic(bootstrap, topics["grow"], 2)
    now = int(time.time() * 1000)
    for t in (topics["cfg"], topics["doomed"]):
        log = h.produce_all(h.producer(bootstrap, acks="all"), t,
                            [h.Rec(b"k%d" % i, b"%s-%d" % (t.encode(), i), None, now + i, 0) for i in range(5)])
        assert not log.errors and len(log.acked) == 5
    assert _commit(bootstrap, group, topics["cfg"], 2) is None
    before = _state(bootstrap, topics, group)
    assert before == {"retention.ms": "3600000", "max.message.bytes": "1048588", "doomed listed": True,
                      "grow partitions": 2, "committed": 2}, before
    fs.sync()

    # ---- the disk is full: nothing may grow
    def disk_full() -> None:  # (again: a successful deletion frees space)
        fs.enospc(fs.stats()["used_bytes"])

    disk_full()
    errors_before = fs.stats()["counters"]["enospc_errors"]

    res = ConfigResource(ResourceType.TOPIC, topics["cfg"], set_config={"retention.ms": "7200000"})
    code = _code(a.alter_configs([res], request_timeout=T)[res])
    assert code in STORAGE_ERRORS, f"AlterConfigs on a full disk: {code}, want KAFKA_STORAGE_ERROR"
    res = ConfigResource(ResourceType.TOPIC, topics["cfg"], incremental_configs=[
        ConfigEntry("max.message.bytes", "500000", incremental_operation=AlterConfigOpType.SET)])
    code = _code(a.incremental_alter_configs([res], request_timeout=T)[res])
    assert code in STORAGE_ERRORS, f"IncrementalAlterConfigs on a full disk: {code}"
    # Deleting a topic removes its metadata file: that needs no space, so it may succeed on a
    # full disk; whatever the client is told must hold (here and after the restart).
    code = _code(a.delete_topics([topics["doomed"]], operation_timeout=T, request_timeout=T)[topics["doomed"]])
    assert code is None or code in STORAGE_ERRORS, f"DeleteTopics on a full disk: {code}"
    if code is None:
        before["doomed listed"] = False
    disk_full()
    code = _code(a.create_partitions([NewPartitions(topics["grow"], 4)], operation_timeout=T,
                                     request_timeout=T)[topics["grow"]])
    assert code in STORAGE_ERRORS, f"CreatePartitions on a full disk: {code}"
    code = _commit(bootstrap, group, topics["cfg"], 4)
    assert code in COMMIT_ERRORS, f"OffsetCommit on a full disk: {code}"
    assert fs.stats()["counters"]["enospc_errors"] > errors_before, "the broker never hit ENOSPC"

    # every read still shows the old state, and the topic that was not deleted is still readable
    assert _state(bootstrap, topics, group) == before
    if before["doomed listed"]:
        assert _read_all(bootstrap, topics["doomed"], 0, 5) == [b"%s-%d" % (topics["doomed"].encode(), i)
                                                                for i in range(5)]

    # ---- a restart (SIGKILL: what is on "disk" is what the mount shows) keeps the old state
    proc.stop(signal.SIGKILL)
    fs.enospc(0)
    start("auto.create.topics.enable = false\n")
    assert _state(bootstrap, topics, group) == before, "after a restart the refused changes must not appear"

    # ---- with space, every change works and survives a restart
    a = h.admin(bootstrap)
    res = ConfigResource(ResourceType.TOPIC, topics["cfg"], set_config={"retention.ms": "7200000"})
    assert _code(a.alter_configs([res], request_timeout=T)[res]) is None
    res = ConfigResource(ResourceType.TOPIC, topics["cfg"], incremental_configs=[
        ConfigEntry("max.message.bytes", "500000", incremental_operation=AlterConfigOpType.SET)])
    assert _code(a.incremental_alter_configs([res], request_timeout=T)[res]) is None
    if before["doomed listed"]:
        assert _code(a.delete_topics([topics["doomed"]], operation_timeout=T,
                                     request_timeout=T)[topics["doomed"]]) is None
    assert _code(a.create_partitions([NewPartitions(topics["grow"], 4)], operation_timeout=T,
                                     request_timeout=T)[topics["grow"]]) is None
    assert _commit(bootstrap, group, topics["cfg"], 4) is None
    after = {"retention.ms": "7200000", "max.message.bytes": "500000", "doomed listed": False,
             "grow partitions": 4, "committed": 4}
    deadline = time.monotonic() + 10
    while _state(bootstrap, topics, group) != after and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _state(bootstrap, topics, group) == after
    proc.stop(signal.SIGKILL)
    start("auto.create.topics.enable = false\n")
    assert _state(bootstrap, topics, group) == after, "after a restart the accepted changes must be there"
    proc.stop(signal.SIGTERM)


def test_unsynced_record_is_never_visible(syncfs_broker):
    """flush.messages=1 (topic config): the high watermark covers only fsynced records. With
    fsync failing, the record appended but not fsynced must not be seen by ListOffsets (latest),
    a consumer or a raw Fetch, not even after fsync works again."""
    fs, start, bootstrap, proc = syncfs_broker
    start("auto.create.topics.enable = false\n")
    topic = f"pba-hw-{uuid.uuid4().hex[:6]}"
    h.create_topic(bootstrap, topic, 1, config={"flush.messages": "1"})
    fs.sync()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False, "retries": 0,
                  "linger.ms": 0, "message.timeout.ms": 8000, "log_level": h.LOG_LEVEL})
    reports = []
    for i in range(5):
        p.produce(topic, value=b"durable-%d" % i, partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    assert p.flush(20) == 0
    assert [r for r in reports if r[0] is not None] == [] and sorted(o for _, o in reports) == list(range(5))

    fs.fail_fsync("on", f"data/{topic}-0/*")
    reports.clear()
    p.produce(topic, value=b"never-durable", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    assert p.flush(20) == 0
    assert len(reports) == 1 and reports[0][0] is not None, f"a record whose fsync failed was acknowledged: {reports}"
    assert fs.stats()["counters"]["fsync_failures"] > 0, "the broker never fsynced the partition"
    # the record reached the segment file (the page cache) but not the disk
    seg = fs.mountpoint / "data" / f"{topic}-0" / "00000000000000000000.log"
    assert b"never-durable" in seg.read_bytes(), "the scenario needs the record appended to the segment"

    def check_invisible(when: str) -> None:
        a = h.admin(bootstrap)
        tp = TopicPartition(topic, 0)
        try:
            latest = a.list_offsets({tp: OffsetSpec.latest()}, request_timeout=T)[tp].result(timeout=T).offset
        except KafkaException as e:
            latest = e.args[0].name()  # an offline partition may refuse: fine, it shows nothing
        assert latest in (5, "KAFKA_STORAGE_ERROR"), f"{when}: ListOffsets latest {latest}, want 5"
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw-probe", "enable.auto.commit": False,
                      "auto.offset.reset": "error", "fetch.wait.max.ms": 100, "enable.partition.eof": True,
                      "log_level": h.LOG_LEVEL})
        seen = []
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                m = c.poll(0.3)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        break
                    continue
                seen.append(m.value())
        finally:
            c.close()
        assert b"never-durable" not in seen, f"{when}: a consumer read the record that was never fsynced"
        assert len(seen) <= 5 and seen == [b"durable-%d" % i for i in range(len(seen))], seen
        host, port = bootstrap.split(":")
        with w.connect(host, int(port)) as s:
            _, _, parts = wx.parse_fetch_v11(w.request(s, wx.fetch_v11(1, {topic: [(0, 0, 1 << 20)]}, 1 << 20)))
        fp = parts[0]
        assert b"never-durable" not in fp.records, f"{when}: a raw Fetch returned the record never fsynced"
        # the partition may be offline after the failed fsync (KAFKA_STORAGE_ERROR 56); either way
        # the high watermark it reports does not cover the record
        assert fp.error_code in (w.NONE, 56) and fp.high_watermark in (5, -1), \
            f"{when}: Fetch error {fp.error_code}, high watermark {fp.high_watermark}"

    check_invisible("while fsync fails")
    fs.fail_fsync("off")
    reports.clear()
    p.produce(topic, value=b"after", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    assert p.flush(20) == 0
    check_invisible("after fsync works again")
    assert proc.alive()
    proc.stop(signal.SIGKILL)


HALT_STATUS = 70  # frieda's exit status when its metadata directory fails (durable::halt)


def _await_halt(proc: FriedaProc, what: str) -> None:
    """The broker stops by itself, with the metadata-failure status and log line."""
    deadline = time.monotonic() + T
    while proc.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not proc.alive(), f"{what}: the broker kept running after its metadata fsync failed\n{proc.tail()}"
    assert proc.proc.returncode == HALT_STATUS, f"{what}: exit status {proc.proc.returncode}\n{proc.tail()}"
    assert "the metadata directory failed" in proc.text(), proc.tail()


@pytest.mark.parametrize("power_cut", [False, True], ids=["restart", "power-cut"])
def test_topic_deletion_whose_metadata_fsync_failed_stops_the_broker(syncfs_broker, power_cut):
    """A deletion whose metadata fsync fails after the unlink (the commit point) may or may not
    survive a crash, so no answer the broker could give is true: it stops (as Kafka halts when
    its metadata directory fails), the client never hears "deleted" or "kept", and nothing is
    acknowledged in between. After a restart the topic is there with every record (power cut:
    the unlink never became durable) or gone (plain restart: the unlink is on disk)."""
    fs, start, bootstrap, proc = syncfs_broker
    start("auto.create.topics.enable = false\n")
    topic = f"pba-del-{uuid.uuid4().hex[:6]}"
    h.create_topic(bootstrap, topic, 1)
    now = int(time.time() * 1000)
    log = h.produce_all(h.producer(bootstrap, acks="all"), topic,
                        [h.Rec(b"k", b"before-%d" % i, None, now + i, 0) for i in range(5)])
    assert not log.errors and len(log.acked) == 5
    fs.sync()
    a = h.admin(bootstrap)
    fs.fail_fsync("on", "data/meta/topics")
    code = _code(a.delete_topics([topic], operation_timeout=T, request_timeout=T)[topic])
    assert code is not None, "the client was told the deletion succeeded"
    _await_halt(proc, "DeleteTopics")
    fs.fail_fsync("off")
    assert fs.stats()["counters"]["fsync_failures"] > 0, "the deletion never fsynced the metadata directory"
    if power_cut:
        fs.crash()
        fs.remount()
    start("auto.create.topics.enable = false\n")
    a = h.admin(bootstrap)
    if power_cut:
        assert _listed(a, topic), "the deletion was never durable, yet the topic is gone after the power cut"
        assert _read_all(bootstrap, topic, 0, 5) == [b"before-%d" % i for i in range(5)]
    else:
        assert not _listed(a, topic), "the unlinked metadata file came back without a power cut"
    proc.stop(signal.SIGTERM)


@pytest.mark.parametrize("op", ["AlterConfigs", "IncrementalAlterConfigs", "CreatePartitions"])
@pytest.mark.parametrize("power_cut", [False, True], ids=["restart", "power-cut"])
def test_change_whose_metadata_fsync_failed_stops_the_broker(syncfs_broker, op, power_cut):
    """The same for AlterConfigs, IncrementalAlterConfigs and CreatePartitions when the fsync of
    the metadata directory fails after the new file was renamed into place: the broker stops
    instead of answering, and after a restart it shows the old state (power cut: the rename never
    became durable) or the new one (plain restart), never a mix."""
    fs, start, bootstrap, proc = syncfs_broker
    start("auto.create.topics.enable = false\n")
    topic = f"pba-fsync-{uuid.uuid4().hex[:6]}"
    h.create_topic(bootstrap, topic, 2, config={"retention.ms": "3600000"})
    fs.sync()
    a = h.admin(bootstrap)

    def state(a) -> dict:
        return {"retention.ms": _config(a, topic, "retention.ms"),
                "max.message.bytes": _config(a, topic, "max.message.bytes"),
                "partitions": _partitions(a, topic)}

    old = state(a)
    assert old == {"retention.ms": "3600000", "max.message.bytes": "1048588", "partitions": 2}, old
    new = dict(old)
    fs.fail_fsync("on", "data/meta/topics")
    if op == "AlterConfigs":
        res = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "7200000"})
        code = _code(a.alter_configs([res], request_timeout=T)[res])
        new["retention.ms"] = "7200000"
    elif op == "IncrementalAlterConfigs":
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry("max.message.bytes", "500000", incremental_operation=AlterConfigOpType.SET)])
        code = _code(a.incremental_alter_configs([res], request_timeout=T)[res])
        new["max.message.bytes"] = "500000"
    else:
        code = _code(a.create_partitions([NewPartitions(topic, 4)], operation_timeout=T, request_timeout=T)[topic])
        new["partitions"] = 4
    assert code is not None, f"the client was told {op} succeeded"
    _await_halt(proc, op)
    fs.fail_fsync("off")
    assert fs.stats()["counters"]["fsync_failures"] > 0, "the broker never fsynced the metadata directory"
    if power_cut:
        fs.crash()
        fs.remount()
    start("auto.create.topics.enable = false\n")
    got = state(h.admin(bootstrap))
    assert got == (old if power_cut else new), f"after the {'power cut' if power_cut else 'restart'}: {got}"
    proc.stop(signal.SIGTERM)
