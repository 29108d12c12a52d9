"""A diskless topic (issue 60, docs/diskless.md) with franz-go (kgo v1.22.3): 3 brokers, SeaweedFS
(as test_diskless.py).

What it proves, as a user of franz-go sees it: franz-go's default producer (idempotent, acks=all)
writes 20,000 records of varied sizes (empty to 128 KB values, random bytes) to explicit
partitions of a 4-partition diskless topic, and every record is acknowledged, at offsets dense
from 0 in each partition. A franz-go consumer group member reading from the beginning then gets
every acknowledged record at its acknowledged partition and offset with the same key and value
bytes, each once and nothing else; its commit is kept (OffsetFetch answers each partition's
record count). The bucket's WAL objects hold at least the records' value bytes. The workload is tests/cluster/tools/diskless_franz/main.go, built once per source
into target/franz-go/.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_diskless import KEY_PREFIX, create_diskless, diskless_leader, store  # noqa: F401
from test_franz_go import go_binary  # tests/integration, on sys.path (conftest.py)

TOOL = REPO_ROOT / "tests" / "cluster" / "tools" / "diskless_franz"
RECORDS = 20000
PARTITIONS = 4


def diskless_franz_binary() -> Path:
    """Builds (once per source) tools/diskless_franz; GOFLAGS=-mod=mod, GOTOOLCHAIN=local."""
    go = go_binary()
    digest = hashlib.sha256(b"".join((TOOL / n).read_bytes() for n in ("main.go", "go.mod", "go.sum")))
    binary = REPO_ROOT / "target" / "franz-go" / f"diskless_franz-{digest.hexdigest()[:16]}"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    tmp = binary.with_suffix(".tmp")
    r = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=TOOL, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"go build diskless_franz failed:\n{r.stderr[-3000:]}"
    tmp.rename(binary)
    return binary


@pytest.mark.timeout(600)  # the first build of the tool fetches and compiles franz-go
def test_franz_go_produces_and_reads_back_a_diskless_topic(store, cluster, topic_name):  # noqa: F811
    binary = diskless_franz_binary()
    c = cluster(3, **store.broker_settings(), **{"rsm.config.key.prefix": KEY_PREFIX})
    t = topic_name()
    create_diskless(c, t, PARTITIONS)
    diskless_leader(c, t, PARTITIONS)

    r = subprocess.run([str(binary), "-brokers", c.bootstrap, "-topic", t, "-records", str(RECORDS),
                        "-partitions", str(PARTITIONS), "-timeout", "120s"],
                       capture_output=True, text=True, timeout=150)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    assert r.returncode == 0, f"diskless_franz exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    out = json.loads(lines[-1])
    print({k: v for k, v in out.items() if k != "errors"})
    assert out["ok"] is True, out
    assert out["produced"] == out["acked"] == out["read"] == RECORDS, out
    assert out["per_partition"] == [RECORDS // PARTITIONS] * PARTITIONS, out
    assert out["committed"] == out["per_partition"], out
    # the records went to the bucket (random value bytes do not compress)
    wal = {k: v for k, v in store.objects().items() if k.startswith(KEY_PREFIX + "diskless/wal/")}
    print(f"{len(wal)} WAL objects, {sum(wal.values())} bytes")
    assert sum(wal.values()) >= out["value_bytes"], f"{sum(wal.values())} bytes in {len(wal)} WAL objects"
