"""Self-tests of syncfs (syncfs.py): each durability rule, proven with plain file operations on a
real mount, a power cut (``crash``) and a fresh mount of the same backing directory."""

from __future__ import annotations

import errno
import os
import random
import time

import pytest


def fsync_path(path) -> None:
    """fsync of a file or directory by path (O_RDONLY is enough for both on Linux)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def power_cut(fs) -> None:
    fs.crash()
    assert not os.path.ismount(fs.mountpoint)
    fs.remount()


def write_file(path, data: bytes, sync: bool = False) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def listing(path) -> list[str]:
    return sorted(os.listdir(path))


def test_unsynced_writes_vanish_synced_stay_byte_for_byte(syncfs):
    m = syncfs.mountpoint
    rnd = random.Random(1)
    first, second = rnd.randbytes(100_000), rnd.randbytes(5_000)
    with open(m / "log", "wb") as f:
        f.write(first)
        f.flush()
        os.fsync(f.fileno())
        f.write(second)  # never fsynced
        f.flush()
        f.seek(10)
        f.write(b"OVERWRITE")  # inside the synced part, never fsynced
    fsync_path(m)
    assert read(m / "log") == first[:10] + b"OVERWRITE" + first[19:] + second  # visible before the cut
    power_cut(syncfs)
    assert read(m / "log") == first
    assert read(syncfs.backing / "log") == first


def test_crash_with_partial_writeback_tears_unsynced_pages_only(syncfs):
    m = syncfs.mountpoint
    rnd = random.Random(3)
    synced, unsynced = rnd.randbytes(10_000), rnd.randbytes(64 * 4096)
    with open(m / "seg", "wb") as f:
        f.write(synced)
        f.flush()
        os.fsync(f.fileno())
        f.write(unsynced)
    fsync_path(m)
    write_file(m / "new", b"n" * 8192)  # its name is not durable: nothing to write back into
    assert syncfs.crash(writeback=0.5, seed=9)["written_back_pages"] > 0
    syncfs.remount()
    assert listing(m) == ["seg"]
    got = read(m / "seg")
    assert got[:10_000] == synced  # fsynced bytes are untouched
    current = synced + unsynced
    assert 10_000 < len(got) <= len(current)
    old = new = 0
    for page in range(10_000 // 4096 + 1, len(got) // 4096):  # pages wholly after the fsynced part
        chunk = got[page * 4096:(page + 1) * 4096]
        if chunk == current[page * 4096:(page + 1) * 4096]:
            new += 1
        else:
            assert chunk == bytes(4096), f"page {page} is neither written back nor a hole"
            old += 1
    assert new and old, (new, old)  # torn: some pages made it, some did not
    power_cut(syncfs)  # a fresh mount has nothing pending: another cut changes nothing
    assert read(m / "seg") == got


def test_fsync_of_one_file_leaves_the_others_pending(syncfs):
    m = syncfs.mountpoint
    for name in ("a", "b"):
        write_file(m / name, b"")
    fsync_path(m)
    fa, fb = open(m / "a", "r+b"), open(m / "b", "r+b")
    fa.write(b"A" * 3000)
    fb.write(b"B" * 3000)
    fa.flush()
    fb.flush()
    os.fsync(fa.fileno())
    fa.close()
    fb.close()
    st = {f["path"]: f for f in syncfs.stats()["files"]}
    assert (st["a"]["durable"], st["a"]["pending"]) == (3000, 0)
    assert (st["b"]["durable"], st["b"]["pending"]) == (0, 3000)
    power_cut(syncfs)
    assert read(m / "a") == b"A" * 3000
    assert read(m / "b") == b""


def test_truncates(syncfs):
    m = syncfs.mountpoint
    data = random.Random(2).randbytes(10_000)
    write_file(m / "seg", data, sync=True)
    fsync_path(m)
    # an unsynced truncate (shrink, then grow with a hole) vanishes
    with open(m / "seg", "r+b") as f:
        f.truncate(100)
        f.seek(5000)
        f.write(b"tail")
    assert read(m / "seg") == data[:100] + bytes(4900) + b"tail"  # the hole reads zeros, not old data
    power_cut(syncfs)
    assert read(m / "seg") == data
    # the same, synced: durable exactly as it was read
    with open(m / "seg", "r+b") as f:
        f.truncate(100)
        f.seek(5000)
        f.write(b"tail")
        f.flush()
        os.fsync(f.fileno())
        f.truncate(50)  # unsynced again
    power_cut(syncfs)
    assert read(m / "seg") == data[:100] + bytes(4900) + b"tail"
    # truncate to a larger size (set_len), synced
    with open(m / "seg", "r+b") as f:
        f.truncate(20_000)
        os.fsync(f.fileno())
    power_cut(syncfs)
    assert read(m / "seg") == data[:100] + bytes(4900) + b"tail" + bytes(20_000 - 5004)


def test_created_and_fsynced_file_needs_its_directory_fsynced(syncfs):
    m = syncfs.mountpoint
    write_file(m / "new", b"data", sync=True)
    assert syncfs.stats()["dirty_dirs"] == [""]
    power_cut(syncfs)
    assert listing(m) == []  # strict: the entry was never made durable
    write_file(m / "new", b"data", sync=True)
    fsync_path(m)
    assert syncfs.stats()["dirty_dirs"] == []
    power_cut(syncfs)
    assert listing(m) == ["new"] and read(m / "new") == b"data"
    # a file fsynced, then made durable by a directory fsync later, has its fsynced data only
    with open(m / "later", "wb") as f:
        f.write(b"synced")
        f.flush()
        os.fsync(f.fileno())
        f.write(b" and not")
    fsync_path(m)
    power_cut(syncfs)
    assert read(m / "later") == b"synced"


def test_new_directory_needs_its_parent_fsynced(syncfs):
    m = syncfs.mountpoint
    os.mkdir(m / "d")
    write_file(m / "d" / "f", b"inside", sync=True)
    fsync_path(m / "d")  # d's entries are durable, d itself is not linked durably
    power_cut(syncfs)
    assert listing(m) == []
    os.mkdir(m / "d")
    write_file(m / "d" / "f", b"inside", sync=True)
    fsync_path(m / "d")
    fsync_path(m)
    power_cut(syncfs)
    assert listing(m / "d") == ["f"] and read(m / "d" / "f") == b"inside"
    # rmdir of the (now empty) directory: durable only with the parent's fsync
    os.unlink(m / "d" / "f")
    os.rmdir(m / "d")
    fsync_path(m)  # commits the rmdir, and with it the unlink inside (a journal orders them)
    power_cut(syncfs)
    assert listing(m) == []
    assert listing(syncfs.backing) == [".syncfs-orphans"]


def test_journal_mode_commits_namespace_changes_with_any_fsync(syncfs_journal):
    fs = syncfs_journal
    m = fs.mountpoint
    os.mkdir(m / "d")
    write_file(m / "d" / "synced", b"data", sync=True)  # commits mkdir d and the create
    write_file(m / "d" / "later", b"never synced")  # created after the last fsync: not durable
    power_cut(fs)
    assert listing(m) == ["d"] and listing(m / "d") == ["synced"]
    assert read(m / "d" / "synced") == b"data"
    os.rename(m / "d" / "synced", m / "renamed")
    fsync_path(m / "d")  # any directory, too
    power_cut(fs)
    assert listing(m) == ["d", "renamed"] and listing(m / "d") == []


def test_rename_over_existing_file_with_and_without_directory_fsync(syncfs):
    m = syncfs.mountpoint
    write_file(m / "meta.json", b"old", sync=True)
    fsync_path(m)
    # temp file, fsync, rename; the directory not fsynced: the old content is what survives
    write_file(m / "meta.tmp", b"new", sync=True)
    os.rename(m / "meta.tmp", m / "meta.json")
    assert read(m / "meta.json") == b"new" and listing(m) == ["meta.json"]
    power_cut(syncfs)
    assert listing(m) == ["meta.json"] and read(m / "meta.json") == b"old"
    # with the directory fsync: the new content, atomically, and no temp file
    write_file(m / "meta.tmp", b"new", sync=True)
    os.rename(m / "meta.tmp", m / "meta.json")
    fsync_path(m)
    power_cut(syncfs)
    assert listing(m) == ["meta.json"] and read(m / "meta.json") == b"new"
    # the rename is durable, but the renamed file's data was never fsynced: empty (as ext4 without
    # auto_da_alloc would leave it): the reason for the fsync before the rename
    write_file(m / "meta.tmp", b"newer")
    os.rename(m / "meta.tmp", m / "meta.json")
    fsync_path(m)
    power_cut(syncfs)
    assert listing(m) == ["meta.json"] and read(m / "meta.json") == b""


def test_rename_between_directories_is_atomic(syncfs):
    m = syncfs.mountpoint
    os.mkdir(m / "src")
    os.mkdir(m / "dst")
    write_file(m / "src" / "f", b"moved", sync=True)
    fsync_path(m / "src")
    fsync_path(m)
    os.rename(m / "src" / "f", m / "dst" / "g")
    fsync_path(m / "dst")  # only the destination: the whole move is durable, never both or neither
    power_cut(syncfs)
    assert listing(m / "src") == [] and listing(m / "dst") == ["g"]
    assert read(m / "dst" / "g") == b"moved"


def test_unlinked_while_open(syncfs):
    m = syncfs.mountpoint
    write_file(m / "seg", b"durable", sync=True)
    fsync_path(m)
    f = open(m / "seg", "r+b")
    os.unlink(m / "seg")
    assert listing(m) == []
    assert f.read() == b"durable"  # a reader holding it open still reads it
    f.write(b"+more")
    f.flush()
    os.fsync(f.fileno())
    f.seek(0)
    assert f.read() == b"durable+more"
    f.close()
    power_cut(syncfs)  # the unlink was never made durable: the file is back, with what was fsynced
    assert listing(m) == ["seg"] and read(m / "seg") == b"durable+more"
    # now with the directory fsync while it is open: gone for good, readable until closed
    f = open(m / "seg", "rb")
    os.unlink(m / "seg")
    fsync_path(m)
    assert listing(syncfs.backing) == [".syncfs-orphans"]
    assert f.read() == b"durable+more"
    f.close()
    deadline = time.monotonic() + 5  # the kernel sends release and forget asynchronously
    while os.listdir(syncfs.backing / ".syncfs-orphans") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.listdir(syncfs.backing / ".syncfs-orphans") == [], "orphan not freed after the last close"
    power_cut(syncfs)
    assert listing(m) == []


def test_fail_fsync_gives_eio_and_nothing_becomes_durable(syncfs):
    m = syncfs.mountpoint
    write_file(m / "a.log", b"", sync=True)
    write_file(m / "b.idx", b"", sync=True)
    fsync_path(m)
    syncfs.fail_fsync("on", "*.log")
    with open(m / "a.log", "r+b") as fa, open(m / "b.idx", "r+b") as fb:
        fa.write(b"failed-write")
        fa.flush()
        fb.write(b"index")
        fb.flush()
        with pytest.raises(OSError) as e:
            os.fsync(fa.fileno())
        assert e.value.errno == errno.EIO
        with pytest.raises(OSError) as e:  # still on: fails again
            os.fdatasync(fa.fileno())
        assert e.value.errno == errno.EIO
        os.fsync(fb.fileno())  # not matching the glob: fine
        syncfs.fail_fsync("off")
        # Linux after a writeback error: the failed pages stay readable but are clean; the next
        # fsync succeeds without writing them ("fsyncgate")
        fa.seek(0)
        assert fa.read() == b"failed-write"
        fa.write(b"+later")
        fa.flush()
        os.fsync(fa.fileno())
        fa.seek(0)
        assert fa.read() == b"failed-write+later"
    st = {f["path"]: f for f in syncfs.stats()["files"]}
    assert st["a.log"]["lost"] == len(b"failed-write") and st["a.log"]["durable"] == len(b"failed-write+later")
    assert syncfs.stats()["counters"]["fsync_failures"] == 2
    power_cut(syncfs)
    assert read(m / "a.log") == bytes(len(b"failed-write")) + b"+later"  # a hole where the failed write was
    assert read(m / "b.idx") == b"index"


def test_fail_fsync_once_and_on_directories(syncfs):
    m = syncfs.mountpoint
    syncfs.fail_fsync("once")
    with open(m / "f", "wb") as f:
        f.write(b"x")
        f.flush()
        with pytest.raises(OSError) as e:
            os.fsync(f.fileno())
        assert e.value.errno == errno.EIO
        f.write(b"y")
        f.flush()
        os.fsync(f.fileno())  # only once
    syncfs.fail_fsync("on", "")  # an empty glob matches every path, directories too
    with pytest.raises(OSError) as e:
        fsync_path(m)
    assert e.value.errno == errno.EIO
    syncfs.fail_fsync("off")
    power_cut(syncfs)
    assert listing(m) == []  # the directory fsync failed: the create is not durable
    write_file(m / "f", b"xy", sync=True)
    syncfs.fail_fsync("on")
    with pytest.raises(OSError):
        fsync_path(m)
    syncfs.fail_fsync("off")
    fsync_path(m)  # a failed directory fsync leaves the changes pending: this one commits them
    power_cut(syncfs)
    assert read(m / "f") == b"xy"


def test_enospc(syncfs):
    m = syncfs.mountpoint
    write_file(m / "big", b"b" * 6000)
    syncfs.enospc(10_000)
    with open(m / "f", "wb", buffering=0) as f:
        f.write(b"x" * 3000)
        with pytest.raises(OSError) as e:
            f.write(b"y" * 2000)
        assert e.value.errno == errno.ENOSPC
    assert os.path.getsize(m / "f") == 3000  # nothing of the failed write
    assert os.statvfs(m).f_bavail * os.statvfs(m).f_frsize <= 10_000 - 9000
    os.unlink(m / "big")  # frees its bytes
    with open(m / "f", "ab") as f:
        f.write(b"y" * 2000)
    with pytest.raises(OSError) as e:
        os.truncate(m / "f", 20_000)
    assert e.value.errno == errno.ENOSPC
    syncfs.enospc(0)
    os.truncate(m / "f", 20_000)
    assert read(m / "f") == b"x" * 3000 + b"y" * 2000 + bytes(15_000)


def test_fsync_log_and_sync(syncfs):
    m = syncfs.mountpoint
    os.mkdir(m / "p-0")
    with open(m / "p-0" / "seg.log", "wb") as f:
        f.write(b"1" * 100)
        f.flush()
        os.fsync(f.fileno())
        f.write(b"2" * 50)
        f.flush()
        os.fsync(f.fileno())
        f.write(b"3" * 10)
    fsync_path(m / "p-0")
    log = syncfs.fsync_log()
    assert [(e["kind"], e["path"], e.get("durable_len")) for e in log] == [
        ("file", "p-0/seg.log", 100), ("file", "p-0/seg.log", 150), ("dir", "p-0", None)]
    assert [e["seq"] for e in syncfs.fsync_log(since=2)] == [2, 3]
    assert not log[0]["name_durable"]  # neither the file's entry nor p-0's was durable yet
    # sync makes everything durable, like sync(2) or the kernel's writeback
    syncfs.sync()
    st = syncfs.stats()
    assert st["dirty_dirs"] == [] and all(f["pending"] == 0 for f in st["files"])
    power_cut(syncfs)
    assert read(m / "p-0" / "seg.log") == b"1" * 100 + b"2" * 50 + b"3" * 10


def test_random_operations_match_a_model(syncfs):
    """Random writes, truncates and fsyncs on a few files: every read through the mount equals a
    model of the current content, and after each power cut every file equals the model of what
    was fsynced."""
    m = syncfs.mountpoint
    rnd = random.Random(42)
    names = [f"f{i}" for i in range(4)]
    for n in names:
        write_file(m / n, b"")
    fsync_path(m)
    current = {n: bytearray() for n in names}
    durable = {n: b"" for n in names}
    for _round in range(4):
        files = {n: open(m / n, "r+b", buffering=0) for n in names}
        for _ in range(400):
            n = rnd.choice(names)
            f, c = files[n], current[n]
            op = rnd.random()
            if op < 0.6:
                off = rnd.choice([len(c), rnd.randint(0, len(c) + 100)])
                data = rnd.randbytes(rnd.choice([1, 7, 300, 5000]))
                os.pwrite(f.fileno(), data, off)
                if off > len(c):
                    c.extend(bytes(off - len(c)))
                c[off:off + len(data)] = data
            elif op < 0.75:
                size = rnd.randint(0, len(c) + 50)
                os.ftruncate(f.fileno(), size)
                del c[size:]
                c.extend(bytes(size - len(c)))
            elif op < 0.85:
                os.fsync(f.fileno())
                durable[n] = bytes(c)
            else:
                off = rnd.randint(0, len(c))
                assert os.pread(f.fileno(), 10_000, off) == bytes(c[off:off + 10_000])
        for n in names:
            assert read(m / n) == current[n]
            files[n].close()
        power_cut(syncfs)
        for n in names:
            assert read(m / n) == durable[n], n
            current[n] = bytearray(durable[n])
