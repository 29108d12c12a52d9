"""Seeded nemesis schedules (pure: no cluster): the seed reproduces the schedule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nemesis import KINDS, make_schedule, nodes_for  # noqa: E402


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_schedule(kind):
    n = nodes_for(kind)
    a = make_schedule(kind, 42, 25, n, 5)
    assert a == make_schedule(kind, 42, 25, n, 5)
    assert a, "a schedule does something"
    others = [make_schedule(kind, s, 25, n, 5) for s in range(1, 6)]
    assert any(o != a for o in others), "seeds make different schedules"


def test_pauses_outlast_the_session():
    for seed in range(20):
        for s in make_schedule("pause", seed, 25, 3, 5, session_ms=3000):
            assert s["op"] == "pause" and s["down"] > 3.0


def test_rolling_restarts_every_node():
    steps = make_schedule("rolling", 3, 10, 3, 5)
    assert sorted(s["target"]["node"] for s in steps[:3]) == [1, 2, 3]
    assert all(s["op"] == "stop" for s in steps)


def test_reassign_targets_three_distinct_brokers_of_four():
    for seed in range(20):
        for s in make_schedule("reassign", seed, 25, 4, 5):
            assert len(set(s["replicas"])) == 3 and set(s["replicas"]) <= {1, 2, 3, 4}
            assert 0 <= s["partition"] < 5


def test_mixed_mixes():
    ops = {s["op"] for seed in range(10) for s in make_schedule("mixed", seed, 25, 4, 5)}
    assert ops == {"kill", "pause", "stop", "reassign"}


def test_tiered_starts_with_a_leader_kill_and_a_store_stop_with_a_kill():
    for seed in range(20):
        steps = make_schedule("tiered", seed, 30, 3, 4, session_ms=3000)
        first = sorted(s["op"] for s in steps[:2])
        assert first == ["kill", "store-pause"], steps[:2]
        stop = next(s for s in steps[:2] if s["op"] == "store-pause")
        assert 5 <= stop["down"] <= 15 and "leader_of" in stop["kill"]["target"]
        assert all(0 <= s["target"]["leader_of"] < 4 for s in steps if "leader_of" in s.get("target", {}))


def test_tiered_mixes_every_fault():
    steps = [s for seed in range(10) for s in make_schedule("tiered", seed, 60, 3, 4)]
    assert {s["op"] for s in steps} == {"kill", "pause", "store-pause", "store-fault"}
    assert {s["mode"] for s in steps if s["op"] == "store-fault"} == {"slowdown", "stall"}
    assert all(s["down"] > 3.0 for s in steps if s["op"] == "pause")  # past the broker session
    assert all(2.0 <= s["down"] <= 8.0 for s in steps if s["op"] == "kill")
