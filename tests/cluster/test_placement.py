"""Rack-aware replica placement (issue 33): a 4-node cluster over two racks (`broker.rack` a: 1,
2; b: 3, 4). Metadata reports each node's rack; CreateTopics and CreatePartitions without an
explicit assignment put the replicas of every partition (RF 2) in both racks, and spread the
leaders (the first replicas) over all four nodes; RF 3 still spans both racks. Kafka's own
`kafka-reassign-partitions --generate` (it reads the racks from DescribeCluster) proposes
rack-aware plans too. KIP-848 consumer groups assign partitions to consumers in their own rack
(KIP-881).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import NewPartitions

from conftest import LOG_LEVEL, raw_metadata
from test_cluster import create
from test_kafka_tools_cluster import REASSIGN, classpath, tool  # noqa: F401 (fixture)

RACKS = {1: "a", 2: "a", 3: "b", 4: "b"}


def test_replicas_spread_over_racks(cluster, topic_name, classpath, tmp_path):
    c = cluster(4, node_settings={i: {"broker.rack": r} for i, r in RACKS.items()})
    c.wait_brokers({1, 2, 3, 4})
    md = raw_metadata(c.node(1).client_port)
    assert {i: b[2] for i, b in md.brokers.items()} == RACKS

    t = topic_name()
    parts = create(c, t, partitions=8, rf=2)
    for p in parts.values():
        assert {RACKS[r] for r in p.replicas} == {"a", "b"}, (p.id, p.replicas)
    leaders = Counter(p.replicas[0] for p in parts.values())
    assert set(leaders) == {1, 2, 3, 4} and max(leaders.values()) == 2, leaders

    # CreatePartitions places the new ones the same way.
    adm = c.admin()
    adm.create_partitions([NewPartitions(t, 12)], operation_timeout=20, request_timeout=30)[t].result(30)
    parts = c.wait_topic(t, 12)
    for p in parts.values():
        assert {RACKS[r] for r in p.replicas} == {"a", "b"}, (p.id, p.replicas)

    t3 = topic_name("rf3")
    for p in create(c, t3, partitions=4, rf=3).values():
        assert {RACKS[r] for r in p.replicas} == {"a", "b"} and len(set(p.replicas)) == 3, p.replicas

    # kafka-reassign-partitions --generate: Kafka's rack-aware assignment from the racks Frieda
    # reports; every proposed partition spans both racks.
    moving = tmp_path / "topics.json"
    moving.write_text(json.dumps({"version": 1, "topics": [{"topic": t}]}))
    out = tool(classpath, REASSIGN, "--bootstrap-server", c.node(1).addr, "--topics-to-move-json-file",
               str(moving), "--broker-list", "1,2,3,4", "--generate")
    proposed = json.loads(out.split("Proposed partition reassignment configuration")[1].strip().splitlines()[0])
    assert len(proposed["partitions"]) == 12, proposed
    for p in proposed["partitions"]:
        assert {RACKS[r] for r in p["replicas"]} == {"a", "b"}, p


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_consumer_group_assigns_on_rack(cluster, topic_name, assignor):
    """KIP-881 in the KIP-848 server assignors: two confluent-kafka consumers with
    `group.protocol=consumer`, `client.rack` a and b, read an 8-partition RF 1 topic placed so
    that an assignor blind to racks gives each consumer partitions of the other rack (uniform:
    the rack-a consumer joins first and holds partitions 0-3 on rack b, which a rack-blind sticky
    rebalance would let it keep; range: racks alternate, which contiguous ranges would mix).
    Each consumer must end up with four partitions, all with their replica in its own rack."""
    c = cluster(4, node_settings={i: {"broker.rack": r} for i, r in RACKS.items()})
    c.wait_brokers({1, 2, 3, 4})
    t = topic_name(assignor)
    layout = [[3], [4], [3], [4], [1], [2], [1], [2]] if assignor == "uniform" else \
        [[1], [3], [2], [4], [1], [3], [2], [4]]
    create(c, t, assignment=layout)
    rack_of = {p: RACKS[r[0]] for p, r in enumerate(layout)}
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumers = {}

    def join(rack):
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "group.remote.assignor": assignor, "client.rack": rack,
                         "auto.offset.reset": "earliest", "log_level": LOG_LEVEL})
        cons.subscribe([t])
        consumers[rack] = cons

    def settled(want: int, timeout: float = 40) -> dict:
        deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
        while time.monotonic() < deadline:
            for cons in consumers.values():
                cons.poll(0.1)
            now = {r: sorted(tp.partition for tp in cons.assignment()) for r, cons in consumers.items()}
            if now != last:
                last, since = now, time.monotonic()
            if sum(map(len, now.values())) == want and time.monotonic() - since > 3:
                return now
        raise AssertionError(f"assignment did not settle: {last}")

    try:
        join("a")
        assert settled(8) == {"a": list(range(8))}
        join("b")
        final = settled(8)
        for rack, parts in final.items():
            assert len(parts) == 4 and all(rack_of[p] == rack for p in parts), \
                f"{assignor}: consumer in rack {rack} got {parts} (racks {rack_of}); all: {final}"
    finally:
        for cons in consumers.values():
            cons.close()
