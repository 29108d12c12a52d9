"""Rack-aware replica placement (issue 33): a 4-node cluster over two racks (`broker.rack` a: 1,
2; b: 3, 4). Metadata reports each node's rack; CreateTopics and CreatePartitions without an
explicit assignment put the replicas of every partition (RF 2) in both racks, and spread the
leaders (the first replicas) over all four nodes; RF 3 still spans both racks. Kafka's own
`kafka-reassign-partitions --generate` (it reads the racks from DescribeCluster) proposes
rack-aware plans too.
"""

from __future__ import annotations

import json
from collections import Counter

from confluent_kafka.admin import NewPartitions

from conftest import raw_metadata
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
