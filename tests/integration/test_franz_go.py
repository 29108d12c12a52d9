"""franz-go's own integration tests against Frieda: the transactional ETL (issue 13) and the share groups.

`TestTxnEtl` (franz-go v1.22.3, `pkg/kgo/txn_test.go`, unchanged, built from the Go module proxy
with `go test -c`): a transactional producer writes KGO_TEST_RECORDS records to a topic,
committing every 10000 (`EndAndBeginTransaction`, the safe and unsafe variants), while chains of
group consumers (range and cooperative-sticky balancers, dynamic and static members) consume with
`read_committed`, produce each record to the next topic in the same transaction
(`GroupTransactSession`: TxnOffsetCommit, EndTxn, rebalances that abort) and check that every
record arrives exactly once, in order per key, with control records at their own offsets.

Its KIP-848 subtests (`range/848`, `sticky/848`, `sticky/848/static`: the same chains with the
consumer group protocol, ConsumerGroupHeartbeat v1) run too; the test asserts which subtests ran
and passed, so a skipped one (franz-go skips the 848 ones when the broker does not advertise
ConsumerGroupHeartbeat v1) cannot pass silently.

Needs `go` (the machine has it; scripts/test's environment) and the Go module proxy on first run;
the test binary is cached in ``target/franz-go/`` keyed by the version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FRANZ_VERSION = "v1.22.3"
RECORDS = int(os.environ.get("FRIEDA_FRANZ_RECORDS", "200000"))
# the subtests that must run and pass (franz-go's names)
EXPECTED_SUBTESTS = ["range", "cooperative-sticky", "cooperative-sticky/static", "range/848", "sticky/848",
                     "sticky/848/static"]


def go_binary() -> str:
    """The Go toolchain's `go` (PATH, else the machine image's /usr/local/go)."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    assert go, "go not found: franz-go needs the Go toolchain (the machine image has /usr/local/go)"
    return go


def kgo_test_binary() -> Path:
    """Builds (once per version) franz-go's kgo test binary with `go test -c`."""
    go = go_binary()
    out = REPO_ROOT / "target" / "franz-go" / FRANZ_VERSION
    binary = out / "kgo.test"
    if binary.exists():
        return binary
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    if not (out / "go.mod").exists():
        subprocess.run([go, "mod", "init", "frieda-franz-go-tests"], cwd=out, check=True, env=env,
                       capture_output=True, timeout=60)
    r = subprocess.run([go, "get", f"github.com/twmb/franz-go@{FRANZ_VERSION}"], cwd=out, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"go get franz-go {FRANZ_VERSION} failed:\n{r.stderr[-3000:]}"
    tmp = out / "kgo.test.tmp"
    r = subprocess.run([go, "test", "-c", "-o", str(tmp), "github.com/twmb/franz-go/pkg/kgo"], cwd=out, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"go test -c franz-go/pkg/kgo failed:\n{r.stderr[-3000:]}"
    tmp.rename(binary)
    return binary


@pytest.mark.timeout(1500)
def test_franz_go_txn_etl(broker, tmp_path):
    """TestTxnEtl passes against a single Frieda broker (RF 1, 200000 records by default; FRIEDA_FRANZ_RECORDS): every
    expected subtest ran and passed, nothing failed."""
    binary = kgo_test_binary()
    env = dict(os.environ, KGO_SEEDS=broker.bootstrap, KGO_TEST_RF="1", KGO_TEST_RECORDS=str(RECORDS),
               KGO_LOG_LEVEL="warn")
    cmd = [str(binary), "-test.run", "^TestTxnEtl$",
           "-test.v", "-test.timeout", "1200s", "-test.count", "1"]
    log = tmp_path / "kgo-test.log"
    with open(log, "w") as f:
        r = subprocess.run(cmd, cwd=tmp_path, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=1400)
    text = log.read_text(errors="replace")
    tail = text[-6000:]
    print(tail)
    passed = set(re.findall(r"--- PASS: TestTxnEtl/(\S+)", text))
    failed = set(re.findall(r"--- FAIL: (\S+)", text))
    skipped = set(re.findall(r"--- SKIP: (\S+)", text))
    assert r.returncode == 0 and not failed, f"kgo.test exited {r.returncode}; failed {sorted(failed)}\n{tail}"
    assert re.search(r"^--- PASS: TestTxnEtl ", text, re.M), tail
    assert not skipped, f"subtests skipped: {sorted(skipped)}"
    assert sorted(passed) == sorted(EXPECTED_SUBTESTS), f"subtests passed {sorted(passed)}, want {EXPECTED_SUBTESTS}"


# franz-go's share-group tests (KIP-932; `pkg/kgo/share_test.go` and `client_test.go`), unchanged. They skip
# unless the broker advertises ShareFetch v2 and ShareAcknowledge v2, and they set group configs
# (`share.auto.offset.reset`, `share.record.lock.duration.ms`) through IncrementalAlterConfigs on the GROUP resource
# and wait until DescribeConfigs shows them.
SHARE_TESTS = ["TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin"]


@pytest.mark.timeout(900)
def test_franz_go_share_groups(broker, tmp_path):
    """franz-go's share-group tests pass against a single Frieda broker: TestShareGroup (200 records, every one
    delivered), TestShareGroupETL (a two-level ETL of share groups over 3+1-partition topics with accept, release,
    reject, short-lived consumers and rebalances; at-least-once, rejected keys never reach the next level, delivery
    counts and bodies intact), TestShareGroupAckOnClose (acknowledgements sent on close stick) and
    TestShareGroupOffsetsAdmin (Alter/Describe/DeleteShareGroupOffsets round trip). Each must run and pass; a skip
    fails."""
    binary = kgo_test_binary()
    env = dict(os.environ, KGO_SEEDS=broker.bootstrap, KGO_TEST_RF="1", KGO_LOG_LEVEL="warn")
    cmd = [str(binary), "-test.run", "^(" + "|".join(SHARE_TESTS) + ")$",
           "-test.v", "-test.timeout", "800s", "-test.count", "1"]
    log = tmp_path / "kgo-share.log"
    with open(log, "w") as f:
        r = subprocess.run(cmd, cwd=tmp_path, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=850)
    text = log.read_text(errors="replace")
    tail = text[-6000:]
    print(tail)
    passed = set(re.findall(r"^--- PASS: (\S+)", text, re.M))
    failed = set(re.findall(r"--- FAIL: (\S+)", text))
    skipped = set(re.findall(r"--- SKIP: (\S+)", text))
    assert r.returncode == 0 and not failed, f"kgo.test exited {r.returncode}; failed {sorted(failed)}\n{tail}"
    assert not skipped, f"skipped: {sorted(skipped)}\n{tail}"
    assert sorted(passed) == sorted(SHARE_TESTS), f"passed {sorted(passed)}, want {SHARE_TESTS}\n{tail}"


SHARE_PREFETCH = REPO_ROOT / "tests" / "integration" / "tools" / "share_prefetch"


def share_prefetch_binary() -> Path:
    """Builds (once per source) tools/share_prefetch, a franz-go v1.22.3 share consumer workload."""
    go = go_binary()
    digest = hashlib.sha256(b"".join((SHARE_PREFETCH / n).read_bytes() for n in ("main.go", "go.mod", "go.sum")))
    binary = REPO_ROOT / "target" / "franz-go" / f"share_prefetch-{digest.hexdigest()[:16]}"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    tmp = binary.with_suffix(".tmp")
    r = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=SHARE_PREFETCH, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"go build share_prefetch failed:\n{r.stderr[-3000:]}"
    tmp.rename(binary)
    return binary


@pytest.mark.timeout(300)
def test_franz_go_share_consumers_are_not_held_by_their_own_acknowledgements(broker):
    """4 franz-go share consumers (FetchMaxWait 30 s) drain 30,000 records of one partition, each poll's records
    accepted and flushed before the next poll. franz-go sends its next ShareFetch while the application still holds
    the last poll's records and piggybacks their acknowledgements on the fetch after it; once the consumers' records
    fill the share-partition's window (group.share.partition.max.record.locks, 2,000), a fetch that waited for room
    would wait its whole FetchMaxWait, since the room it waits for is what its own client cannot acknowledge yet
    (Kafka 4.4.0 waits so; Frieda answers such a fetch at once the first time, ShareSessions::held_wait).
    Every record is accepted once, and no poll that returned records took 15 s (half the FetchMaxWait; with the
    fetch waiting the drain took 60 s, with 30 s polls, before this)."""
    binary = share_prefetch_binary()
    r = subprocess.run([str(binary), broker.bootstrap, "4", "30000", "100"], capture_output=True, text=True,
                       timeout=200)
    assert r.returncode == 0, f"share_prefetch exited {r.returncode}:\n{r.stderr[-3000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print(out)
    assert out["accepted"] == out["records"] == 30000, out
    assert out["accepted_again"] == 0, out
    assert out["longest_poll_ms"] < 15000, out
