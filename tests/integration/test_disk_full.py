"""Disk full: the data directory is a small tmpfs (8 MiB). When it fills up, Produce gets
KAFKA_STORAGE_ERROR (56), reads keep working, nothing half-written stays in the log (checked on
the files and after a restart), and production resumes at the next offset once space returns.

Needs root (mount -t tmpfs); skipped, with the reason, where mounting is refused, and with
FRIEDA_EXTERNAL_BOOTSTRAP."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import helpers as h
import kafka_wire as w

KAFKA_STORAGE_ERROR = 56


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): disk-full test needs root")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=20)


@pytest.fixture
def small_disk_broker(make_own_broker, tmp_path):
    """A broker whose data dir is an 8 MiB tmpfs (data moved onto it after a first start)."""
    mounted = []

    def make(config: str = ""):
        b = make_own_broker(config)
        b.stop()
        saved = tmp_path / "data-saved"
        shutil.copytree(b.data_dir, saved)
        _mount_tmpfs(b.data_dir, "8m")
        mounted.append((b, b.data_dir))
        shutil.copytree(saved, b.data_dir, dirs_exist_ok=True)
        b.start()
        return b

    yield make
    for b, m in mounted:
        try:
            if b.alive():
                b.stop(signal.SIGTERM)  # the clean-exit check, before the tmpfs goes away
        finally:
            b.kill_hard()
            _umount(m)


def _batch(i: int, size: int) -> bytes:
    now = int(time.time() * 1000)
    return w.record_batch([w.Record(b"k%d" % i, (b"%08d" % i) * (size // 8), [("i", b"%d" % i)], now)])


def _produce(b, s, topic: str, batch: bytes, corr: int) -> w.PartitionProduceResponse:
    corr_r, parts = w.parse_produce_v9(w.request(s, w.produce_v9(corr, topic, 0, batch), timeout=30))
    assert corr_r == corr and len(parts) == 1
    return parts[0]


def _segment_files(d: Path) -> list[Path]:
    return sorted((x for x in d.iterdir() if re.fullmatch(r"\d+\.log", x.name)), key=lambda x: int(x.stem))


def _assert_whole_batches(d: Path) -> int:
    """Every segment is whole, CRC-valid v2 batches up to its last byte; returns the record count."""
    count = 0
    for seg in _segment_files(d):
        data = seg.read_bytes()
        pos = 0
        while pos < len(data):
            assert len(data) - pos >= 61, f"{seg.name}: {len(data) - pos} stray bytes at {pos}"
            n = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
            assert pos + n <= len(data), f"{seg.name}: half-written batch at {pos} ({len(data) - pos} of {n} bytes)"
            crc = int.from_bytes(data[pos + 17:pos + 21], "big")
            assert w.crc32c(data[pos + 21:pos + n]) == crc, f"{seg.name}: CRC mismatch at {pos}"
            count += int.from_bytes(data[pos + 57:pos + 61], "big")
            pos += n
    return count


@pytest.mark.parametrize("segment_bytes", [1 << 30, 256 * 1024], ids=["one-segment", "rolling"])
@pytest.mark.timeout(120)
def test_disk_full_storage_error_then_recovery(small_disk_broker, topic_name, segment_bytes):
    b = small_disk_broker(f'"internal.segment.bytes" = {segment_bytes}\n')
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, partitions=1)
    pdir = b.data_dir / f"{topic}-0"
    # fill most of the disk with a file we can delete later
    filler = b.data_dir / "filler"
    st = os.statvfs(b.data_dir)
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 1_500_000))
    acked = {}
    with w.connect(b.host, b.port) as s:
        errors = []
        for i in range(200):
            r = _produce(b, s, topic, _batch(i, 40_000), corr=i + 1)
            if r.error_code == 0:
                assert r.base_offset == len(acked), (r, len(acked))
                acked[r.base_offset] = i
            else:
                errors.append(r.error_code)
                if len(errors) >= 3:
                    break
        assert acked, "nothing could be produced before the disk filled"
        assert errors and set(errors) == {KAFKA_STORAGE_ERROR}, \
            f"want KAFKA_STORAGE_ERROR (56) once the disk is full, got {errors} after {len(acked)} batches"
        b.assert_alive()
        n_before = len(acked)
        print(f"disk full after {n_before} batches of 40 kB: errors {errors}")
        # reads keep working while the disk is full, and the files hold only whole batches
        got = h.consume_partitions(b.bootstrap, topic, {0: n_before}, check_crcs=True)
        for off, i in acked.items():
            assert got[(0, off)].value() == (b"%08d" % i) * 5000
        assert _assert_whole_batches(pdir) == n_before
        # metadata and list-offsets keep working too
        assert topic in h.topic_names(b.bootstrap)
        c = h.consumer(b.bootstrap)
        assert c.get_watermark_offsets(w_tp(topic), timeout=10, cached=False) == (0, n_before)
        c.close()
        # space returns: production resumes at the next offset, on the same connection
        filler.unlink()
        r = _produce(b, s, topic, _batch(1000, 40_000), corr=9999)
        assert r.error_code == 0 and r.base_offset == n_before, r
        acked[r.base_offset] = 1000
    # a client with retries sees no error at all once space is back
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, h.sample_records(20, seed=3, big_every=1000))
    assert not log.errors
    total = n_before + 1 + 20
    assert _assert_whole_batches(pdir) == total
    # after a crash nothing needs truncating: no half-written batch was left behind
    before = len(re.findall(r"truncating torn tail", b.stderr_text()))
    b.stop(signal.SIGKILL)
    b.start()
    assert len(re.findall(r"truncating torn tail", b.stderr_text())) == before, b.stderr_tail(20)
    got = h.consume_partitions(b.bootstrap, topic, {0: total}, check_crcs=True)
    assert sorted(o for _, o in got) == list(range(total))
    for off, i in acked.items():
        assert got[(0, off)].value() == (b"%08d" % i) * 5000
    h.check_acked(log.acked, got, topic)
    assert re.search(r"append failed.*(No space|ENOSPC|os error 28)", b.stderr_text()), "no log line naming the cause"


def w_tp(topic):
    from confluent_kafka import TopicPartition
    return TopicPartition(topic, 0)
