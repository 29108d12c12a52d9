"""A short version of the soak: one seeded schedule per fault kind (see run.py), each on a fresh
cluster, checked for lost, duplicated and inconsistent records, skipped or repeated polls and
commits going backwards. Every run ends with 3 s of load on the healed cluster (whenever the
nemesis finished), in which the producers must get acknowledgements (and commits) again: the
liveness check. About 20 s per kind on 2 cores.

    FRIEDA_BIN=target/release/frieda .venv/bin/pytest -q tests/jepsen

``JEPSEN_SECS`` (default 15) sets each schedule's length, ``JEPSEN_SEED`` (default 1) its seed; a
failing schedule's histories and node logs stay under pytest's tmp dir (the path is printed) and
``tests/jepsen/run.py --fault KIND --seed SEED --secs SECS`` runs it again.

The transactional schedules (``--txn``): transactional producers commit and abort under the same
faults (leader kills reach the transaction coordinators and the markers' partitions); read_committed
consumers and final readers must see every committed record once and no aborted one.

The diskless transactional schedule (issue 60, ``JEPSEN_DISKLESS_SECS``, default 30; about 45 s):
librdkafka's transactional producers (transactions v1) on a diskless topic while the batch
coordinator's broker and serving brokers are killed and paused and the store fails; the
``read_committed`` consumers must read no record of an aborted transaction and lose none of a
committed one (its first run, before the batch coordinator's verification tokens, read 6).

The tiered schedule (issue 57, ``JEPSEN_TIERED_SECS``, default 30; about 60 s in all): a tiered
topic (1 MiB segments, one kept locally, SeaweedFS behind the fault proxy) written at ~5 MB/s while
leaders are killed and paused and the store is stopped or failing; every acknowledged record must
read back from offset 0 and the bucket must hold whole, contiguous, non-overlapping copies only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nemesis import KINDS  # noqa: E402
from run import run_schedule  # noqa: E402

SECS = float(os.environ.get("JEPSEN_SECS", "15"))
TIERED_SECS = float(os.environ.get("JEPSEN_TIERED_SECS", "30"))
DISKLESS_SECS = float(os.environ.get("JEPSEN_DISKLESS_SECS", "30"))
SEED = int(os.environ.get("JEPSEN_SEED", "1"))
# the transactional workload under the faults that move transaction coordinators and leaders
TXN_KINDS = ["kill-leader", "power-loss"]


def run_checked(kind: str, tmp_path, txn: bool = False, secs: float = SECS) -> tuple[dict, str]:
    """Runs one schedule and asserts what every run must show: it ran (no crash, the nemesis
    did something), the checker found nothing, the runner saw no problem. Returns the checker's
    result and the failure detail for further assertions."""
    # keep=True: histories and node logs stay for any failing assertion, not only the checker's
    # (pytest keeps the last three sessions' tmp dirs)
    r = run_schedule(kind, SEED, secs, tmp_path, txn=txn, keep=True)
    ck = r["checker"]
    detail = (f"{kind}{' txn' if txn else ''} seed {SEED}: errors {ck['errors']}, crashed {r['crashed']}, "
              f"problems {r['problems']}, after the heal {r['after_heal']}; kept in {r['dir']}\n"
              + (f"node logs: {json.dumps(r['broker_log'], default=str)[:3000]}\n" if "broker_log" in r else "")
              + json.dumps(ck["examples"], indent=1, default=str)[:6000])
    assert r["crashed"] is None, detail
    assert ck["valid"], detail
    assert not r["problems"], detail
    assert r["steps"] >= 1, detail  # the nemesis did something
    # liveness: the healed cluster serves the producers again (3 s of load after the heal)
    assert r["after_heal"] and r["after_heal"]["acked"] > 0, detail
    if txn:
        assert r["after_heal"]["txns_committed"] > 0, detail
    return ck, detail


# tiered and diskless (transactional) have their own tests below; the diskless kind's plain
# producers run in `scripts/soak diskless` only (time)
@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ("tiered", "diskless")])
def test_schedule(kind, tmp_path):
    ck, detail = run_checked(kind, tmp_path)
    assert ck["stats"]["acknowledged"] > 100 * SECS, detail  # the load ran


@pytest.mark.parametrize("kind", TXN_KINDS)
def test_transactional_schedule(kind, tmp_path):
    ck, detail = run_checked(kind, tmp_path, txn=True)
    txns = ck["stats"]["txns"]
    # Commits and aborts both ran. A floor, not a rate goal: a power-loss schedule spends seconds
    # of its 15 with no broker up, more on a loaded machine (one CI run, 2026-12-03: the power
    # cut of every node and its restart took until the end of the 15 s, 4 commits; the run now
    # ends with 3 s of load after the heal, 56-332 commits in 8 local runs of this schedule).
    assert txns["ok"] > 2 * SECS and txns["fail"] > SECS, detail
    assert ck["stats"]["read_records"] >= ck["stats"]["acknowledged"], detail


def test_tiered_schedule(tmp_path):
    """One tiered schedule (issue 57): leader kills while segments upload, the store stopped
    with a leader killed meanwhile, and the rest of the seeded mix; nothing acknowledged lost,
    the bucket whole copies only, contiguous from offset 0."""
    ck, detail = run_checked("tiered", tmp_path, secs=TIERED_SECS)
    st = ck["stats"]
    # the load ran at MB/s (5 MB/s nominal; a floor well below it, for a slow machine), copies
    # were made and settled, and everything acknowledged was read back from offset 0
    assert st["acked_mb"] > 1.5 * TIERED_SECS, detail
    assert st["remote"]["copies"] >= 4 * 3 and st["remote"]["settled"], detail
    assert st["read_records"] >= st["acknowledged"], detail


def test_diskless_transactional_schedule(tmp_path):
    """One diskless schedule with transactional producers (issue 60): commits and aborts both
    ran, nothing of an aborted transaction read ``read_committed``, nothing committed lost."""
    ck, detail = run_checked("diskless", tmp_path, txn=True, secs=DISKLESS_SECS)
    txns = ck["stats"]["txns"]
    # floors, not rates: a transaction waits for the commit interval, an upload and the
    # coordinator (seeds 1-5 of 30 s: 47-68 commits and 17-35 aborts each, 2026-12-07)
    assert txns["ok"] >= 10 and txns["fail"] >= 1, detail
    assert ck["stats"]["read_records"] >= ck["stats"]["acknowledged"], detail
