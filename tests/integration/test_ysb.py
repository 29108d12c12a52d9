"""The Yahoo! Streaming Benchmark pipeline (bench/ysb/Ysb.java) on Kafka Streams 4.4.0 against
Frieda, short, with the `streams` group protocol (KIP-1071, where the broker assigns the tasks;
`YSB_PROTOCOLS=classic,streams` adds `classic` rebalancing, which the Java suite's Kafka Streams
exactly-once test already runs, to keep the test command within its time): 4 producers send YSB's JSON ad events at 3,000 events/s for 21 s; Kafka Streams
filters the views, joins each ad to its campaign through a GlobalKTable over a compacted topic
(the changelog of 1,000 ads), repartitions by campaign and counts in 10 s event-time windows,
writing every update to a results topic. Every window wholly inside the production period (at
least one per campaign) must end with exactly the number of views the generator sent for it,
and its final count must arrive within 10 s of its newest event. `scripts/bench --ysb` runs the
long version on both brokers."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import REPO_ROOT
from txn_helpers import java_classpath

sys.path.insert(0, str(REPO_ROOT / "bench"))
from ysb import compile_ysb, run_ysb  # noqa: E402


@pytest.fixture(scope="module")
def ysb_classes(tmp_path_factory):
    """The classpath and Ysb compiled once for both protocols."""
    cp = java_classpath()
    classes = tmp_path_factory.mktemp("ysb") / "classes"
    compile_ysb(cp, classes)
    return cp, classes


@pytest.mark.timeout(300)
@pytest.mark.parametrize("group_protocol", os.environ.get("YSB_PROTOCOLS", "streams").split(","))
def test_ysb_pipeline_counts_every_window_exactly(own_broker, tmp_path, group_protocol, ysb_classes):
    cp, classes = ysb_classes
    r = run_ysb(cp, classes, own_broker.bootstrap, 3000, 21, 4, tmp_path, group_protocol)
    print(json.dumps({k: v for k, v in r.items() if k != "window_latencies_ms"}))
    assert r["windows"] >= 100, r  # 100 campaigns x at least one complete window
    assert (r["mismatched"], r["missing"], r["exit"]) == (0, 0, 0), r
    assert r["events"] > 0.9 * 3000 * 21, r
    assert 0 <= r["latency_ms"]["max"] < 10_000, r
