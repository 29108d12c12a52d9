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
