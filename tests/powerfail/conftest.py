"""Fixtures for the syncfs tests: a syncfs mount per test (unmounted in teardown, even when the
test fails). Tests skip only when /dev/fuse is missing, and say so; a missing pyfuse3 is an
error (run tests/powerfail/install.sh)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from syncfs import SyncFs  # noqa: E402


def require_fuse() -> None:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: syncfs (a FUSE file system) cannot be mounted here")


def mounted(tmp_path: Path, namespace: str):
    require_fuse()
    fs = SyncFs(tmp_path / "backing", tmp_path / "mnt", tmp_path, namespace=namespace)
    fs.mount()
    try:
        yield fs
    finally:
        fs.unmount()


@pytest.fixture
def syncfs(tmp_path):
    """A mounted SyncFs (strict POSIX namespace durability): ``syncfs.mountpoint`` is the mount,
    ``syncfs.backing`` the durable state."""
    yield from mounted(tmp_path, "strict")


@pytest.fixture
def syncfs_journal(tmp_path):
    """The same with ``namespace="journal"`` (any fsync commits every earlier namespace change)."""
    yield from mounted(tmp_path, "journal")
