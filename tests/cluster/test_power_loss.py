"""Power loss of a broker in a cluster. Each node's data directory (partition logs, checkpoints and
the metadata quorum's Raft log) is a syncfs mount (tests/powerfail/syncfs.py: writes are kept in
memory until fsynced; a power cut drops every unsynced change). A power cut here is: SIGKILL of
the node, then the cut of its file system, then a fresh mount and a restart on what was durable.

With the default flush policy (no fsync per record, Kafka's default) a single broker loses the
records it had not fsynced; a cluster must not: an `acks=all` record is on every in-sync replica,
and a broker that comes back with a shorter log must rejoin as a follower, truncate to the
leader and catch up, never lead with the shorter log. The Raft log must survive too (a voter
that forgot a vote or an entry after a power cut breaks the metadata quorum's safety)."""

from __future__ import annotations

import sys
import time

import pytest

from cluster_clients import ProducerThread, check_log, read_all
from conftest import REPO_ROOT
from test_cluster import create, moved_off, wait_identical

sys.path.insert(0, str(REPO_ROOT / "tests" / "powerfail"))
from syncfs import SyncFs  # noqa: E402


@pytest.fixture
def disks(tmp_path):
    """``disks(n)`` -> {node id: a mounted SyncFs}; unmounted at teardown (after the cluster's own
    teardown, which stops the nodes: this fixture is requested first)."""
    made: list[SyncFs] = []

    def make(n: int) -> dict[int, SyncFs]:
        out = {}
        for i in range(1, n + 1):
            fs = SyncFs(tmp_path / f"disk-{i}" / "backing", tmp_path / f"disk-{i}" / "mnt", tmp_path / f"disk-{i}")
            fs.mount()
            made.append(fs)
            out[i] = fs
        return out
    yield make
    for fs in made:
        fs.unmount()


def log_bytes(root) -> int:
    """Bytes in the partition segment files (``*.log``) under ``root``."""
    return sum(f.stat().st_size for f in root.rglob("*.log") if f.is_file())


def power_cut(c, fs: SyncFs, i: int) -> int:
    """Node ``i`` loses power: SIGKILL, then its file system drops what was never fsynced; then
    it is mounted again (the node is not started). Returns the segment bytes the cut took."""
    c.kill(i)
    before = log_bytes(fs.mountpoint)
    fs.crash()
    fs.remount()
    return before - log_bytes(fs.mountpoint)


def test_rolling_power_cuts_lose_nothing_acknowledged(disks, cluster, topic_name):
    """Default durability (no fsync per record). RF 3, 3 partitions, idempotent acks=all
    production at 200 records/s. Each node in turn - leaders, followers, the active controller -
    loses power, stays down for 4 s (its leaderships move after the 3 s session), restarts on
    what was durable (a shorter log, an older high-watermark checkpoint), and must be back in
    every ISR before the next cut. At least one cut must drop unsynced segment bytes (the test
    checks). No delivery error; at the end the log is exactly the
    acknowledged records, at their offsets, byte for byte, and the replicas are identical."""
    d = disks(3)
    c = cluster(3, data_dirs={i: fs.mountpoint for i, fs in d.items()})
    t = topic_name()
    create(c, t, 3)
    p = ProducerThread(c.bootstrap, t, 3, rate=200, tag="pl")
    p.start()
    lost_bytes: list[int] = []
    try:
        p.wait_acked(400, 30, "before the first power cut")
        for i in (c.controller(), *[j for j in sorted(c.nodes) if j != c.controller()]):
            led = [q for q in range(3) if c.leader_of(t, q) == i]
            t_cut = time.monotonic()
            dropped = power_cut(c, d[i], i)
            lost_bytes.append(dropped)
            if led:
                c.wait_until(lambda: moved_off(c, t, 3, i), 30, f"leaderships moved off node {i}")
            print(f"node {i} (led {led}) lost power ({dropped} unsynced segment bytes gone); "
                  f"leaderships moved in {time.monotonic() - t_cut:.1f}s")
            time.sleep(max(0.0, 4 - (time.monotonic() - t_cut)))
            p.wait_more(200, 60, f"with node {i} down")
            c.start(i)
            t_up = time.monotonic()
            others = [j for j in c.nodes if j != i]
            c.wait_full_isr(t, 60, via=others[0])
            print(f"node {i} back in every ISR {time.monotonic() - t_up:.1f}s after its restart")
            p.wait_more(200, 60, f"after node {i} came back")
            assert not p.errors, f"delivery errors: {p.errors[:5]}"
    finally:
        p.stop()
    assert not p.errors, f"delivery errors: {p.errors[:5]}"
    # the cuts must have taken something, or this test proved nothing about power loss
    assert sum(lost_bytes) > 0, f"no power cut dropped unsynced segment data: {lost_bytes}"
    got, hw = read_all(c.bootstrap, t, 3)
    check_log(p, got, hw, t, exact=True)
    wait_identical(c, t, 3)
