#!/usr/bin/env python3
"""syncfs: a FUSE file system (test-only) where a change is durable only once it was fsynced, and
that can lose power, fail fsyncs and run out of space on command.

It passes through to a *backing directory*, which always holds exactly the durable state: what a
disk would show after a power cut. Everything else is kept in the daemon's memory.

Semantics
---------
- Every data write, truncate (ftruncate/set_len), create, unlink, rename, mkdir and rmdir made
  through the mount is visible at once through the mount (reads return exactly what a reader of a
  real disk would see before a crash), but is pending: kept in memory, not in the backing dir.
- ``fsync``/``fdatasync`` of a file makes that file's data durable: its pending writes and size
  changes are written to its backing file, which is then ``os.fsync``ed. Nothing else becomes
  durable: not the file's directory entry, not other files.
- Namespace operations (create, mkdir, unlink, rmdir, rename) become durable when their parent
  directory is fsynced (strict POSIX; no journal commits them as a side effect of another fsync).
  Fsyncing a directory makes the whole current entry list of that directory durable.
  ``--namespace journal`` models ext4/XFS instead: every successful fsync (of any file or
  directory) also commits every namespace operation made before it, in the whole mount, as a
  metadata journal commit does; file data still needs the file's own fsync.
- A rename is atomic: fsyncing either the source or the destination directory makes the move
  durable as a whole (the entry leaves the old directory and appears in the new one, in one step,
  as a journaling file system commits a rename). A rename over an existing file replaces it
  atomically: after a power cut the name holds either the old file or the new one, never neither.
- Metadata other than names and sizes (modes, owners, times) is kept in memory only; after a power
  cut files have their backing file's mode and times.
- ``link``, ``symlink``, ``mknod`` and ``RENAME_EXCHANGE`` are not supported (ENOSYS / EINVAL).

Corner cases
~~~~~~~~~~~~
- A file that was created and fsynced, but whose directory was never fsynced, disappears after a
  power cut. Its fsynced data is kept (in ``<backing>/.syncfs-orphans/<inode>``) and appears at
  its name if the directory is fsynced later. The same holds for a new directory: entries made
  durable inside a directory that is not itself durably linked are lost with it.
- A file unlinked while still open stays readable and writable through its open descriptors. Until
  the directory is fsynced, the unlink is not durable: after a power cut the file is back, with
  the data that was fsynced (also fsyncs made after the unlink). Once the unlink is durable, the
  file's backing data moves to the orphan area and is freed when the last descriptor is closed.
  After a power cut, the orphan area is emptied (as fsck frees orphaned inodes).
- A failed fsync (``fail-fsync``) behaves as Linux does after a writeback error: fsync returns EIO
  and the pending writes it should have made durable are dropped from the dirty set: they stay
  visible through the mount (as clean pages in the page cache would) but never become durable,
  not even through a later fsync that succeeds ("fsyncgate"). That later fsync makes only the
  writes made after the failure durable (so the durable file can have holes of zeros where the
  failed writes were) and the file's size. A failed directory fsync leaves the namespace changes
  pending (a later successful directory fsync commits them).
- ``enospc BYTES``: a write or size increase that would take the total size of the files in the
  mount above BYTES fails with ENOSPC and changes nothing (no short writes); files unlinked but
  still open count until closed. Creating empty files still works.
- Kernel caching: there is no writeback cache (every write reaches the daemon before the syscall
  returns), so the kernel never holds data the daemon does not know. After a power cut the daemon
  exits and a new daemon is mounted: a new superblock, so no stale page or attribute survives.

Control interface
-----------------
A Unix socket (``--control PATH``), one JSON object per line, one JSON reply per line:

- ``{"cmd": "crash"}``: power cut. Every unsynced change is dropped and the daemon exits at once
  (the reply carries the last fsync log sequence number). Unmount the dead mount lazily and mount
  a new daemon on the same backing dir to see the durable state (``SyncFs.crash`` does both).
  ``"writeback": F, "seed": S`` first writes each unsynced 4 KiB page of data (of files whose
  names are durable) to the backing file with probability F, in no particular order, as the
  kernel's writeback may have done before the power failed: torn writes, holes of zeros, a file
  longer than its last fsync left it. A pending shrink is applied with probability F too.
  Namespace changes are not written back.
- ``{"cmd": "fail-fsync", "mode": "on"|"off"|"once", "glob": "*.log"}``: fsync/fdatasync (of
  files and directories) return EIO while on, or for the next matching one only (``once``);
  ``glob`` (optional, ``fnmatch`` on the path relative to the mount root; ``*`` also matches
  ``/``) limits it to matching paths.
- ``{"cmd": "enospc", "bytes": N}``: writes fail with ENOSPC once the mount holds more than N
  bytes; 0 lifts it.
- ``{"cmd": "stats"}``: per file of the current tree: size, bytes durable, bytes pending, bytes
  lost to a failed fsync, whether its name is durable; directories with pending namespace
  changes; counters; the fsync log's last sequence number.
- ``{"cmd": "fsync-log", "since": SEQ}``: every successful fsync with sequence number >= SEQ:
  ``{"seq", "time", "kind": "file"|"dir", "path", "durable_len" (files), "name_durable"}``.
- ``{"cmd": "sync"}``: makes everything durable (as ``sync(2)``, or the kernel's periodic
  writeback would); fsync failure injection does not apply to it.
- ``{"cmd": "ping"}``.

Command line::

    syncfs.py serve BACKING MOUNTPOINT --control SOCK [--namespace strict|journal]   # the daemon
    syncfs.py ctl SOCK crash [WRITEBACK_FRACTION SEED] | stats | sync | ping | enospc BYTES | fsync-log [SINCE]
    syncfs.py ctl SOCK fail-fsync on|off|once [GLOB]

``SyncFs`` (below) is the helper the tests use: mount, crash, remount, fail_fsync, enospc,
fsync_log, stats, unmount; it stops every process it starts by PID.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import random
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left, bisect_right
from pathlib import Path

try:  # the daemon needs them (tests/powerfail/install.sh); the client side below does not
    import pyfuse3
    import trio
except ImportError:
    pyfuse3 = trio = None

ORPHANS = b".syncfs-orphans"
PAGE = 4096
ATTR_TIMEOUT = 5.0  # every change goes through this daemon, so kernel caching is coherent


# ---------------------------------------------------------------- file content bookkeeping

class Extents:
    """Byte ranges of one file, sorted by offset, never overlapping or touching each other."""

    __slots__ = ("starts", "datas")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.datas: list[bytearray] = []

    def __bool__(self) -> bool:
        return bool(self.starts)

    def total(self) -> int:
        return sum(map(len, self.datas))

    def items(self):
        return zip(self.starts, self.datas)

    def clear(self) -> None:
        self.starts.clear()
        self.datas.clear()

    def write(self, off: int, data) -> None:
        """Stores ``data`` at ``off``, merging with every extent it overlaps or touches."""
        end = off + len(data)
        starts, datas = self.starts, self.datas
        i = bisect_right(starts, off) - 1
        if i < 0 or starts[i] + len(datas[i]) < off:
            i += 1
        j = bisect_right(starts, end)
        if i == j:
            starts.insert(i, off)
            datas.insert(i, bytearray(data))
            return
        if j == i + 1 and starts[i] <= off:  # the common case: an append to (or inside) one extent
            s = starts[i]
            datas[i][off - s:end - s] = data
            return
        s0 = min(off, starts[i])
        e0 = max(end, starts[j - 1] + len(datas[j - 1]))
        merged = bytearray(e0 - s0)
        for k in range(i, j):
            merged[starts[k] - s0:starts[k] - s0 + len(datas[k])] = datas[k]
        merged[off - s0:end - s0] = data
        starts[i:j] = [s0]
        datas[i:j] = [merged]

    def remove(self, off: int, length: int) -> None:
        """Forgets the bytes in ``[off, off + length)``."""
        end = off + length
        starts, datas = self.starts, self.datas
        i = bisect_right(starts, off) - 1
        if i < 0 or starts[i] + len(datas[i]) <= off:
            i += 1
        j = bisect_left(starts, end)
        if i >= j:
            return
        keep_s, keep_d = [], []
        if starts[i] < off:
            keep_s.append(starts[i])
            keep_d.append(datas[i][:off - starts[i]])
        last_s, last_d = starts[j - 1], datas[j - 1]
        if last_s + len(last_d) > end:
            keep_s.append(end)
            keep_d.append(last_d[end - last_s:])
        starts[i:j] = keep_s
        datas[i:j] = keep_d

    def truncate(self, size: int) -> None:
        """Forgets every byte at or after ``size``."""
        j = bisect_left(self.starts, size)
        del self.starts[j:]
        del self.datas[j:]
        if self.starts and self.starts[-1] + len(self.datas[-1]) > size:
            del self.datas[-1][size - self.starts[-1]:]

    def overlay(self, buf: bytearray, off: int) -> None:
        """Copies the bytes it holds in ``[off, off + len(buf))`` into ``buf``."""
        end = off + len(buf)
        starts, datas = self.starts, self.datas
        for k in range(max(bisect_right(starts, off) - 1, 0), len(starts)):
            s = starts[k]
            if s >= end:
                break
            e = s + len(datas[k])
            if e <= off:
                continue
            a, b = max(s, off), min(e, end)
            buf[a - off:b - off] = datas[k][a - s:b - s]


class Node:
    """An inode. ``parent``/``name``: its current directory entry (None once unlinked);
    ``dparent``/``dname``: its durable entry (None if a power cut would lose its name).
    ``has_backing``: its durable object exists, at its durable path or in the orphan area."""

    is_dir = False

    def __init__(self, ino: int, mode: int, uid: int, gid: int) -> None:
        self.ino, self.mode, self.uid, self.gid = ino, mode, uid, gid
        self.atime_ns = self.mtime_ns = self.ctime_ns = time.time_ns()
        self.parent: Dir | None = None
        self.name = b""
        self.dparent: Dir | None = None
        self.dname = b""
        self.has_backing = False
        self.lookups = 0
        self.opens = 0


class File(Node):
    """A regular file. Its current content: the backing file's first ``keep`` bytes, zeros up to
    ``size``, then ``lost`` (writes whose fsync failed) and ``pending`` (unsynced writes) on top.
    ``dsize``: the backing file's length (the durable size)."""

    def __init__(self, ino: int, mode: int, uid: int, gid: int) -> None:
        super().__init__(ino, mode, uid, gid)
        self.fd: int | None = None
        self.size = self.dsize = self.keep = 0
        self.pending = Extents()
        self.lost = Extents()
        self.counted = True  # its size counts towards the mount's used bytes

    def dirty(self) -> bool:
        return bool(self.pending) or self.keep != self.dsize or self.size != self.dsize


class Dir(Node):
    """A directory: ``cur`` its current entries, ``dur`` its durable ones (loaded lazily from the
    backing directory, when ``cur`` is None)."""

    is_dir = True

    def __init__(self, ino: int, mode: int, uid: int, gid: int) -> None:
        super().__init__(ino, mode, uid, gid)
        self.cur: dict[bytes, Node] | None = None
        self.dur: dict[bytes, Node] = {}


# ---------------------------------------------------------------- the file system

class SyncOps(pyfuse3.Operations if pyfuse3 is not None else object):
    """The pyfuse3 operations. Every handler runs to completion without awaiting, so the single
    trio thread sees each request as one atomic step (no locking needed)."""

    def __init__(self, backing: str, namespace: str = "strict") -> None:
        super().__init__()
        assert namespace in ("strict", "journal"), namespace
        self.journal = namespace == "journal"
        self.backing = os.fsencode(os.path.abspath(backing))
        self.orphans = os.path.join(self.backing, ORPHANS)
        shutil.rmtree(self.orphans, ignore_errors=True)  # a power cut frees orphaned inodes
        os.mkdir(self.orphans)
        st = os.stat(self.backing)
        self.root = Dir(pyfuse3.ROOT_INODE, st.st_mode, st.st_uid, st.st_gid)
        self.root.has_backing = True
        self.nodes: dict[int, Node] = {self.root.ino: self.root}
        self.next_ino = pyfuse3.ROOT_INODE + 1
        self.handles: dict[int, object] = {}
        self.next_fh = 1
        self.used = 0
        self.enospc_limit = 0
        self.fail_mode, self.fail_glob = "off", None
        self.fsync_log: list[dict] = []
        self.dead = False  # set by a power cut: nothing may reach the backing dir any more
        self.counters = {"writes": 0, "bytes_written": 0, "fsyncs": 0, "dir_fsyncs": 0,
                         "fsync_failures": 0, "enospc_errors": 0}

    # ---- helpers -----------------------------------------------------------------------
    @staticmethod
    def err(code: int):
        return pyfuse3.FUSEError(code)

    def new_ino(self) -> int:
        ino = self.next_ino
        self.next_ino += 1
        return ino

    def node(self, ino: int) -> Node:
        try:
            return self.nodes[ino]
        except KeyError:
            raise self.err(errno.ENOENT) from None

    def entries(self, d: Dir) -> dict[bytes, Node]:
        """``d``'s current entries, read from the backing directory on first use."""
        if d.cur is None:
            d.cur = {}
            with os.scandir(self.loc(d)) as it:
                for e in it:
                    if d is self.root and e.name == ORPHANS:
                        continue
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        n: Node = Dir(self.new_ino(), st.st_mode, st.st_uid, st.st_gid)
                    elif stat.S_ISREG(st.st_mode):
                        n = File(self.new_ino(), st.st_mode, st.st_uid, st.st_gid)
                        n.size = n.dsize = n.keep = st.st_size
                        self.used += st.st_size
                    else:
                        continue  # the broker makes no special files; hide them
                    n.atime_ns, n.mtime_ns, n.ctime_ns = st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns
                    n.parent = n.dparent = d
                    n.name = n.dname = e.name
                    n.has_backing = True
                    self.nodes[n.ino] = n
                    d.cur[e.name] = n
            d.dur = dict(d.cur)
        return d.cur

    def loc(self, n: Node) -> bytes:
        """Where ``n``'s durable object is in the backing dir (valid while ``has_backing``)."""
        if n is self.root:
            return self.backing
        if n.dparent is None:
            return os.path.join(self.orphans, b"%d" % n.ino)
        return os.path.join(self.loc(n.dparent), n.dname)

    def path(self, n: Node) -> str:
        """Current path relative to the mount root; ``(deleted)/...`` once unlinked."""
        parts = []
        while n.parent is not None:
            parts.append(n.name)
            n = n.parent
        if n is not self.root:
            parts.append(n.name)
            parts.append(b"(deleted)")
        return os.fsdecode(b"/".join(reversed(parts)))

    def name_durable(self, n: Node) -> bool:
        while n.dparent is not None:
            n = n.dparent
        return n is self.root

    def attrs(self, n: Node):
        a = pyfuse3.EntryAttributes()
        a.st_ino = n.ino
        a.st_mode = n.mode
        a.st_uid, a.st_gid = n.uid, n.gid
        a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns = n.atime_ns, n.mtime_ns, n.ctime_ns
        a.st_blksize = 4096
        if n.is_dir:
            a.st_nlink = 2
            a.st_size = 4096
        else:
            a.st_nlink = 1 if n.parent is not None else 0
            a.st_size = n.size
            a.st_blocks = (n.size + 511) // 512
        a.entry_timeout = a.attr_timeout = ATTR_TIMEOUT
        return a

    def backing_fd(self, f: File) -> int:
        if f.fd is None:
            f.fd = os.open(self.loc(f), os.O_RDWR)
        return f.fd

    def maybe_drop(self, n: Node) -> None:
        """Frees an inode nothing refers to any more (no entry, no descriptor, unknown to the
        kernel). Its durable entry, if the unlink is not durable yet, stays until committed."""
        if isinstance(n, File) and n.parent is None and n.opens == 0:
            if n.counted:
                self.used -= n.size
                n.counted = False
            if n.fd is not None:
                os.close(n.fd)
                n.fd = None
        if n.parent is None and n.opens == 0 and n.lookups == 0 and n is not self.root:
            self.nodes.pop(n.ino, None)
            if n.has_backing and n.dparent is None and not self.dead:
                self.remove_backing(n, self.loc(n))

    def remove_backing(self, n: Node, at: bytes) -> None:
        if n.is_dir:
            os.rmdir(at)
        else:
            os.unlink(at)
        n.has_backing = False

    def fail_fsync_now(self, path: str) -> bool:
        if self.fail_mode == "off" or (self.fail_glob and not fnmatch.fnmatchcase(path, self.fail_glob)):
            return False
        if self.fail_mode == "once":
            self.fail_mode, self.fail_glob = "off", None
        self.counters["fsync_failures"] += 1
        return True

    def grow(self, f: File, new_size: int) -> None:
        """Accounts ``f`` growing to ``new_size`` (ENOSPC if over the limit)."""
        if new_size > f.size:
            if self.enospc_limit and self.used + new_size - f.size > self.enospc_limit:
                self.counters["enospc_errors"] += 1
                raise self.err(errno.ENOSPC)
            self.used += new_size - f.size
            f.size = new_size

    def truncate(self, f: File, size: int) -> None:
        if size < f.size:
            f.pending.truncate(size)
            f.lost.truncate(size)
            f.keep = min(f.keep, size)
            self.used -= f.size - size
            f.size = size
        else:
            self.grow(f, size)
        f.mtime_ns = f.ctime_ns = time.time_ns()

    # ---- durability --------------------------------------------------------------------
    def sync_file(self, f: File) -> None:
        """Writes ``f``'s pending changes to its backing file and fsyncs it."""
        if not f.has_backing:
            f.fd = os.open(self.loc(f), os.O_RDWR | os.O_CREAT | os.O_EXCL, f.mode & 0o7777)
            f.has_backing = True
        fd = self.backing_fd(f)
        if f.keep < f.dsize:
            os.ftruncate(fd, f.keep)
        for s, d in f.pending.items():
            os.pwrite(fd, d, s)
        os.ftruncate(fd, f.size)
        os.fsync(fd)
        f.pending.clear()
        f.dsize = f.keep = f.size

    def commit_dir(self, d: Dir) -> None:
        """Makes ``d``'s current entries durable (and, atomically, the other half of a rename)."""
        cur = self.entries(d)
        changed = [n for name, n in cur.items() if d.dur.get(name) is not n]
        changed += [n for name, n in d.dur.items() if cur.get(name) is not n]
        for n in changed:
            self.commit_link(n)

    def commit_link(self, first: Node) -> None:
        """Makes ``first``'s durable entry equal its current one; a node displaced from its
        durable entry by that is committed too (its own rename or unlink is part of the step)."""
        work, done = [first], set()
        while work:
            n = work.pop()
            if n.ino in done:
                continue
            done.add(n.ino)
            if n.parent is n.dparent and (n.parent is None or n.name == n.dname):
                continue
            old = self.loc(n) if n.has_backing else None
            if n.dparent is not None:
                del n.dparent.dur[n.dname]
                n.dparent = None
            if n.parent is None:
                if old is not None:
                    self.unlinked_backing(n, old)
                continue
            p, name = n.parent, n.name
            self.ensure_dir_backing(p)
            displaced = p.dur.pop(name, None)
            if displaced is not None:
                at = self.loc(displaced)
                displaced.dparent = None
                self.unlinked_backing(displaced, at)
                work.append(displaced)
            p.dur[name] = n
            n.dparent, n.dname = p, name
            if old is not None:
                os.rename(old, self.loc(n))
            elif n.is_dir:
                os.mkdir(self.loc(n), n.mode & 0o7777)
                n.has_backing = True
            else:
                os.close(os.open(self.loc(n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, n.mode & 0o7777))
                n.has_backing = True

    def ensure_dir_backing(self, d: Dir) -> None:
        """A directory not durably linked gets its durable entries in the orphan area."""
        if not d.has_backing:
            os.mkdir(self.loc(d), d.mode & 0o7777)
            d.has_backing = True

    def unlinked_backing(self, n: Node, at: bytes) -> None:
        """``n`` lost its durable entry; its durable object was at ``at``. A directory's durable
        entries are committed first (it is empty now, so they all go); a file that is still open
        or linked elsewhere moves to the orphan area; the rest is deleted."""
        orphan = self.loc(n)
        os.rename(at, orphan)
        if n.is_dir:
            self.commit_dir(n)
            if n.parent is None:
                self.remove_backing(n, orphan)
        elif n.parent is None and n.opens == 0 and n.lookups == 0:
            self.remove_backing(n, orphan)
            if n.fd is not None:
                os.close(n.fd)
                n.fd = None

    def writeback(self, fraction: float, seed: int) -> int:
        """Writes a random subset of the unsynced pages of every file with a durable name to its
        backing file (see ``crash``); returns how many pages."""
        rnd = random.Random(seed)
        pages = 0
        for n in sorted(self.nodes.values(), key=lambda n: n.ino):
            if not isinstance(n, File) or not n.dirty() or not self.name_durable(n):
                continue
            fd = self.backing_fd(n)
            if n.keep < n.dsize and rnd.random() < fraction:
                os.ftruncate(fd, n.keep)
            for s, d in n.pending.items():
                for page in range(s - s % PAGE, s + len(d), PAGE):
                    if rnd.random() < fraction:
                        a, b = max(page, s), min(page + PAGE, s + len(d))
                        os.pwrite(fd, d[a - s:b - s], a)
                        pages += 1
        return pages

    def log_fsync(self, kind: str, n: Node) -> None:
        entry = {"seq": len(self.fsync_log) + 1, "time": time.time(), "kind": kind,
                 "path": self.path(n), "name_durable": self.name_durable(n)}
        if isinstance(n, File):
            entry["durable_len"] = n.dsize
        self.fsync_log.append(entry)

    def commit_namespace(self) -> None:
        """Every namespace operation durable: every directory of the current tree, top down."""
        stack = [self.root]
        while stack:
            d = stack.pop()
            if d.cur is None:
                continue  # never loaded: nothing changed below it
            self.commit_dir(d)
            stack.extend(n for n in d.cur.values() if n.is_dir)

    def sync_all(self) -> None:
        """Everything durable, as sync(2): the namespace, then every file with pending changes."""
        self.commit_namespace()
        for n in list(self.nodes.values()):
            if isinstance(n, File) and n.dirty():
                self.sync_file(n)

    # ---- pyfuse3 operations ------------------------------------------------------------
    async def lookup(self, parent_inode, name, ctx):
        d = self.node(parent_inode)
        if name == b".":
            n = d
        elif name == b"..":
            n = d.parent or self.root
        else:
            n = self.entries(d).get(name)
            if n is None:
                raise self.err(errno.ENOENT)
        n.lookups += 1
        return self.attrs(n)

    async def forget(self, inode_list):
        for ino, nlookup in inode_list:
            n = self.nodes.get(ino)
            if n is not None:
                n.lookups -= nlookup
                self.maybe_drop(n)

    async def getattr(self, inode, ctx):
        return self.attrs(self.node(inode))

    async def setattr(self, inode, attr, fields, fh, ctx):
        n = self.node(inode)
        if fields.update_size:
            if n.is_dir:
                raise self.err(errno.EISDIR)
            self.truncate(n, attr.st_size)
        if fields.update_mode:
            n.mode = (n.mode & ~0o7777) | (attr.st_mode & 0o7777)
        if fields.update_uid:
            n.uid = attr.st_uid
        if fields.update_gid:
            n.gid = attr.st_gid
        if fields.update_atime:
            n.atime_ns = attr.st_atime_ns
        if fields.update_mtime:
            n.mtime_ns = attr.st_mtime_ns
        n.ctime_ns = time.time_ns()
        return self.attrs(n)

    def make(self, parent_inode, name, node: Node) -> Node:
        d = self.node(parent_inode)
        if not d.is_dir:
            raise self.err(errno.ENOTDIR)
        if d is not self.root and d.parent is None:
            raise self.err(errno.ENOENT)  # inside a removed directory
        if d is self.root and name == ORPHANS:
            raise self.err(errno.EACCES)
        cur = self.entries(d)
        if name in cur:
            raise self.err(errno.EEXIST)
        cur[name] = node
        node.parent, node.name = d, name
        node.lookups += 1
        self.nodes[node.ino] = node
        d.mtime_ns = d.ctime_ns = time.time_ns()
        return node

    async def mkdir(self, parent_inode, name, mode, ctx):
        n = Dir(self.new_ino(), stat.S_IFDIR | (mode & 0o7777 & ~ctx.umask), ctx.uid, ctx.gid)
        n.cur = {}
        return self.attrs(self.make(parent_inode, name, n))

    async def create(self, parent_inode, name, mode, flags, ctx):
        n = File(self.new_ino(), stat.S_IFREG | (mode & 0o7777 & ~ctx.umask), ctx.uid, ctx.gid)
        self.make(parent_inode, name, n)
        return self.open_handle(n), self.attrs(n)

    def detach(self, d: Dir, name: bytes, n: Node) -> None:
        del self.entries(d)[name]
        n.parent = None
        n.ctime_ns = d.mtime_ns = d.ctime_ns = time.time_ns()
        self.maybe_drop(n)

    async def unlink(self, parent_inode, name, ctx):
        d = self.node(parent_inode)
        n = self.entries(d).get(name)
        if n is None:
            raise self.err(errno.ENOENT)
        if n.is_dir:
            raise self.err(errno.EISDIR)
        self.detach(d, name, n)

    async def rmdir(self, parent_inode, name, ctx):
        d = self.node(parent_inode)
        n = self.entries(d).get(name)
        if n is None:
            raise self.err(errno.ENOENT)
        if not n.is_dir:
            raise self.err(errno.ENOTDIR)
        if self.entries(n):
            raise self.err(errno.ENOTEMPTY)
        self.detach(d, name, n)

    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise self.err(errno.EINVAL)
        src_dir, dst_dir = self.node(parent_inode_old), self.node(parent_inode_new)
        n = self.entries(src_dir).get(name_old)
        if n is None:
            raise self.err(errno.ENOENT)
        if dst_dir is self.root and name_new == ORPHANS:
            raise self.err(errno.EACCES)
        target = self.entries(dst_dir).get(name_new)
        if target is n:
            return
        if target is not None:
            if flags & pyfuse3.RENAME_NOREPLACE:
                raise self.err(errno.EEXIST)
            if n.is_dir and not target.is_dir:
                raise self.err(errno.ENOTDIR)
            if target.is_dir and not n.is_dir:
                raise self.err(errno.EISDIR)
            if target.is_dir and self.entries(target):
                raise self.err(errno.ENOTEMPTY)
        a = dst_dir
        while a is not None:  # a directory cannot move into itself
            if a is n:
                raise self.err(errno.EINVAL)
            a = a.parent
        del src_dir.cur[name_old]
        if target is not None:
            self.detach(dst_dir, name_new, target)
        dst_dir.cur[name_new] = n
        n.parent, n.name = dst_dir, name_new
        n.ctime_ns = src_dir.mtime_ns = dst_dir.mtime_ns = time.time_ns()

    def open_handle(self, n: File):
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = n
        n.opens += 1
        return pyfuse3.FileInfo(fh=fh)

    async def open(self, inode, flags, ctx):
        n = self.node(inode)
        if n.is_dir:
            raise self.err(errno.EISDIR)
        if flags & os.O_TRUNC:
            self.truncate(n, 0)
        return self.open_handle(n)

    async def read(self, fh, off, size):
        f = self.handles[fh]
        if off >= f.size:
            return b""
        size = min(size, f.size - off)
        buf = bytearray(size)
        k = min(f.keep, off + size)
        if k > off:
            data = os.pread(self.backing_fd(f), k - off, off)
            buf[:len(data)] = data
        f.lost.overlay(buf, off)
        f.pending.overlay(buf, off)
        f.atime_ns = time.time_ns()
        return bytes(buf)

    async def write(self, fh, off, buf):
        f = self.handles[fh]
        if not buf:
            return 0
        self.grow(f, off + len(buf))
        f.pending.write(off, buf)
        if f.lost:
            f.lost.remove(off, len(buf))
        f.mtime_ns = f.ctime_ns = time.time_ns()
        self.counters["writes"] += 1
        self.counters["bytes_written"] += len(buf)
        return len(buf)

    async def flush(self, fh):
        pass

    async def release(self, fh):
        f = self.handles.pop(fh)
        f.opens -= 1
        if f.opens == 0 and f.fd is not None:
            os.close(f.fd)
            f.fd = None
        self.maybe_drop(f)

    async def fsync(self, fh, datasync):
        f = self.handles[fh]
        if self.dead:
            raise self.err(errno.EIO)
        self.counters["fsyncs"] += 1
        if self.fail_fsync_now(self.path(f)):
            for s, d in f.pending.items():  # Linux: the failed pages are marked clean, never written
                f.lost.write(s, d)
            f.pending.clear()
            raise self.err(errno.EIO)
        self.sync_file(f)
        if self.journal:
            self.commit_namespace()
        self.log_fsync("file", f)

    async def opendir(self, inode, ctx):
        d = self.node(inode)
        if not d.is_dir:
            raise self.err(errno.ENOTDIR)
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = (d, sorted(self.entries(d).items()))
        return fh

    async def readdir(self, fh, start_id, token):
        d, snapshot = self.handles[fh]
        for i in range(start_id, len(snapshot)):
            name, n = snapshot[i]
            if d.cur.get(name) is not n:
                continue  # removed since opendir
            if not pyfuse3.readdir_reply(token, name, self.attrs(n), i + 1):
                return
            n.lookups += 1

    async def releasedir(self, fh):
        del self.handles[fh]

    async def fsyncdir(self, fh, datasync):
        d, _ = self.handles[fh]
        if self.dead:
            raise self.err(errno.EIO)
        self.counters["dir_fsyncs"] += 1
        if self.fail_fsync_now(self.path(d)):
            raise self.err(errno.EIO)
        if self.journal:
            self.commit_namespace()
        else:
            self.commit_dir(d)
        self.log_fsync("dir", d)

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        host = os.statvfs(self.backing)
        s.f_bsize = s.f_frsize = 4096
        if self.enospc_limit:
            s.f_blocks = self.enospc_limit // 4096
            s.f_bfree = s.f_bavail = max(self.enospc_limit - self.used, 0) // 4096
        else:
            s.f_blocks = host.f_blocks * host.f_frsize // 4096
            s.f_bfree = s.f_bavail = host.f_bavail * host.f_frsize // 4096
        s.f_files, s.f_ffree, s.f_favail = host.f_files, host.f_ffree, host.f_favail
        s.f_namemax = 255
        return s

    # ---- control -----------------------------------------------------------------------
    def stats(self) -> dict:
        files, dirty_dirs = [], []
        stack = [self.root]
        while stack:
            d = stack.pop()
            if d.cur is None:
                continue
            if d.cur != d.dur:
                dirty_dirs.append(self.path(d))
            for n in d.cur.values():
                if n.is_dir:
                    stack.append(n)
        for n in self.nodes.values():
            if isinstance(n, File):
                files.append({"path": self.path(n), "size": n.size, "durable": n.dsize if n.has_backing else 0,
                              "pending": n.pending.total(), "lost": n.lost.total(),
                              "name_durable": self.name_durable(n), "open": n.opens})
        files.sort(key=lambda f: f["path"])
        return {"files": files, "dirty_dirs": sorted(dirty_dirs), "used_bytes": self.used,
                "enospc_limit": self.enospc_limit, "fail_fsync": [self.fail_mode, self.fail_glob],
                "counters": dict(self.counters), "fsync_seq": len(self.fsync_log)}

    def control(self, req: dict) -> dict:
        cmd = req.get("cmd")
        if self.dead:
            return {"ok": False, "error": "the power is off (crash was requested)"}
        if cmd == "ping":
            return {"ok": True}
        if cmd == "crash":
            pages = self.writeback(float(req.get("writeback", 0)), int(req.get("seed", 0)))
            self.dead = True
            return {"ok": True, "fsync_seq": len(self.fsync_log), "written_back_pages": pages}
        if cmd == "fail-fsync":
            mode = req.get("mode")
            if mode not in ("on", "off", "once"):
                return {"ok": False, "error": f"fail-fsync mode must be on, off or once, not {mode!r}"}
            self.fail_mode, self.fail_glob = mode, (req.get("glob") if mode != "off" else None)
            return {"ok": True}
        if cmd == "enospc":
            self.enospc_limit = int(req.get("bytes", 0))
            return {"ok": True, "used_bytes": self.used}
        if cmd == "stats":
            return {"ok": True, **self.stats()}
        if cmd == "fsync-log":
            since = int(req.get("since", 1))
            return {"ok": True, "entries": self.fsync_log[max(since - 1, 0):]}
        if cmd == "sync":
            self.sync_all()
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {cmd!r}"}


def serve(backing: str, mountpoint: str, control_path: str, namespace: str = "strict",
          debug: bool = False) -> None:
    """Mounts syncfs and serves it until unmounted, or until a ``crash`` command."""
    if pyfuse3 is None:
        raise SystemExit("syncfs needs pyfuse3 and trio: run tests/powerfail/install.sh")
    ops = SyncOps(backing, namespace)
    options = set(pyfuse3.default_options) | {"fsname=syncfs", "subtype=syncfs"}
    if debug:
        options.add("debug")
    try:
        os.unlink(control_path)
    except FileNotFoundError:
        pass
    pyfuse3.init(ops, mountpoint, options)

    async def handle(stream) -> None:
        async with stream:
            buf = b""
            while b"\n" not in buf:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                buf += chunk
            try:
                reply = ops.control(json.loads(buf.split(b"\n", 1)[0]))
            except Exception as e:  # a bad request must not take the file system down
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            await stream.send_all(json.dumps(reply).encode() + b"\n")
            if ops.dead:
                os._exit(0)  # power cut: the in-memory state is gone with the process

    async def main() -> None:
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.bind(control_path)
        sock.listen(16)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, handle, [trio.SocketListener(sock)])
            await pyfuse3.main(min_tasks=1, max_tasks=1)
            nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    finally:
        pyfuse3.close(unmount=False)


# ---------------------------------------------------------------- client side

def control(sock_path: str | os.PathLike, req: dict, timeout: float = 30) -> dict:
    """Sends one command to a syncfs daemon and returns its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(os.fspath(sock_path))
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"syncfs at {sock_path} closed the connection (request {req})")
            buf += chunk
    reply = json.loads(buf)
    if not reply.get("ok"):
        raise RuntimeError(f"syncfs {req.get('cmd')}: {reply.get('error')}")
    return reply


def lazy_unmount(mountpoint: str | os.PathLike) -> None:
    """Detaches a FUSE mount even if files on it are still open (or its daemon is gone)."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount")
    cmd = [tool, "-u", "-z", os.fspath(mountpoint)] if tool else ["umount", "-l", os.fspath(mountpoint)]
    subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)


def is_mounted(mountpoint: str | os.PathLike) -> bool:
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


class SyncFs:
    """A syncfs mount for tests: ``mount()``, ``crash()`` (power cut, then the mountpoint is
    empty until ``remount()``), ``fail_fsync(mode, glob)``, ``enospc(bytes)``, ``fsync_log()``,
    ``stats()``, ``sync()``, ``unmount()``. Usable as a context manager (unmounts on exit). The
    daemon's output goes to ``<workdir>/syncfs-<n>.log``; the daemon is stopped by its PID.
    ``namespace``: "strict" (POSIX, the default) or "journal" (ext4-like), see the module doc."""

    def __init__(self, backing: str | os.PathLike, mountpoint: str | os.PathLike,
                 workdir: str | os.PathLike | None = None, namespace: str = "strict") -> None:
        self.backing, self.mountpoint = Path(backing), Path(mountpoint)
        self.namespace = namespace
        self.workdir = Path(workdir) if workdir else self.mountpoint.parent
        self.control_path = self.workdir / f"syncfs-{os.getpid()}-{id(self):x}.sock"
        # A Unix socket path has at most 107 bytes (sun_path): a deep work dir gets its socket
        # in the temporary directory instead.
        if len(os.fsencode(self.control_path)) > 100:
            self.control_path = Path(tempfile.gettempdir()) / f"syncfs-{os.getpid()}-{id(self):x}.sock"
        self.proc: subprocess.Popen | None = None
        self.mounts = 0
        self.crashes = 0

    def __enter__(self) -> SyncFs:
        self.mount()
        return self

    def __exit__(self, *exc) -> None:
        self.unmount()

    def mount(self, timeout: float = 20) -> None:
        """Starts a daemon on the backing dir and waits until the mount answers."""
        assert self.proc is None, "already mounted"
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.mounts += 1
        log = open(self.workdir / f"syncfs-{self.mounts}.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "serve", str(self.backing), str(self.mountpoint),
             "--control", str(self.control_path), "--namespace", self.namespace],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                rc, self.proc = self.proc.returncode, None
                raise RuntimeError(f"syncfs daemon exited with {rc} while mounting:\n{self.log_tail()}")
            try:
                control(self.control_path, {"cmd": "ping"}, timeout=2)
                if is_mounted(self.mountpoint):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.unmount()
                raise RuntimeError(f"syncfs did not come up within {timeout}s:\n{self.log_tail()}")
            time.sleep(0.02)

    def log_tail(self, n: int = 30) -> str:
        try:
            text = (self.workdir / f"syncfs-{self.mounts}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-n:])

    def command(self, cmd: str, **args) -> dict:
        assert self.proc is not None, "not mounted"
        return control(self.control_path, {"cmd": cmd, **args})

    def crash(self, writeback: float = 0.0, seed: int = 0) -> dict:
        """Power cut: every unsynced change is gone (but for the pages a ``writeback`` fraction
        wrote back, chosen by ``seed``); the mount is detached. Returns the daemon's reply:
        ``fsync_seq`` (the last fsync logged before the cut) and ``written_back_pages``."""
        reply = self.command("crash", writeback=writeback, seed=seed)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None
        lazy_unmount(self.mountpoint)
        self.crashes += 1
        return reply

    def remount(self) -> None:
        self.mount()

    def fail_fsync(self, mode: str, glob: str | None = None) -> None:
        self.command("fail-fsync", mode=mode, **({"glob": glob} if glob else {}))

    def enospc(self, limit: int) -> None:
        self.command("enospc", bytes=limit)

    def fsync_log(self, since: int = 1) -> list[dict]:
        return self.command("fsync-log", since=since)["entries"]

    def stats(self) -> dict:
        return self.command("stats")

    def sync(self) -> None:
        self.command("sync")

    def unmount(self) -> None:
        """Detaches the mount and stops the daemon (unsynced changes are dropped, as at a power
        cut; call ``sync()`` first for a clean shutdown). Safe to call when not mounted."""
        if is_mounted(self.mountpoint):
            tool = shutil.which("fusermount3") or shutil.which("fusermount")
            r = subprocess.run([tool, "-u", str(self.mountpoint)] if tool else ["umount", str(self.mountpoint)],
                               stdin=subprocess.DEVNULL, capture_output=True)
            if r.returncode != 0 or is_mounted(self.mountpoint):
                lazy_unmount(self.mountpoint)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None
        try:
            self.control_path.unlink()
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("serve", help="mount and serve (foreground)")
    s.add_argument("backing")
    s.add_argument("mountpoint")
    s.add_argument("--control", required=True, help="Unix socket for commands")
    s.add_argument("--namespace", choices=["strict", "journal"], default="strict",
                   help="when namespace operations become durable (see the module docstring)")
    s.add_argument("--debug", action="store_true", help="libfuse debug output")
    c = sub.add_parser("ctl", help="send a command to a running daemon")
    c.add_argument("socket")
    c.add_argument("cmd", choices=["crash", "fail-fsync", "enospc", "stats", "fsync-log", "sync", "ping"])
    c.add_argument("args", nargs="*")
    a = ap.parse_args(argv)
    if a.what == "serve":
        serve(a.backing, a.mountpoint, a.control, a.namespace, a.debug)
        return 0
    req: dict = {"cmd": a.cmd}
    if a.cmd == "fail-fsync":
        req["mode"] = a.args[0] if a.args else ""
        if len(a.args) > 1:
            req["glob"] = a.args[1]
    elif a.cmd == "enospc":
        req["bytes"] = int(a.args[0])
    elif a.cmd == "fsync-log" and a.args:
        req["since"] = int(a.args[0])
    elif a.cmd == "crash" and a.args:
        req["writeback"], req["seed"] = float(a.args[0]), int(a.args[1]) if len(a.args) > 1 else 0
    print(json.dumps(control(a.socket, req), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
