"""Eligible leader replicas (KIP-966, Kafka 4.4's default): a cluster that loses the replicas of
a partition one at a time elects the replica that holds every acknowledged record, where Kafka
before KIP-966 (the last ISR member only) would wait and unclean election would lose some.

Five nodes, three of them voters (1, 2, 3); one partition on nodes 3, 4 and 5,
min.insync.replicas=2. The replicas are paused (SIGSTOP: fenced after
broker.session.timeout.ms, not shut down, so each keeps its claim) in the order 5, 4, 3, and
kafka-topics --describe shows ISR, Elr and LastKnownElr at each step. The waits poll Metadata
(a few ms a call) and only then ask kafka-topics (a JVM start, 2-3 s here) for the ELR columns.
"""

from __future__ import annotations

import re
import subprocess
import time

from confluent_kafka import KafkaError

from cluster_clients import ProducerThread, check_log, read_all, watermarks
from conftest import raw_metadata
from test_cluster import create, wait_identical
from test_dynamic_quorum import ids
from test_kafka_tools_cluster import QUORUM, TOPICS, classpath, java, tool  # noqa: F401 (fixture)

NOT_ENOUGH_REPLICAS = KafkaError.NOT_ENOUGH_REPLICAS

ROW = re.compile(r"Partition: 0\s+Leader: (\S+)\s+Replicas: (\S*)\s+Isr: (\S*)\s+Elr: (\S*)\s+LastKnownElr: (\S*)")


def describe(cp: str, boot: str, topic: str) -> tuple[int, list[int], list[int], list[int]]:
    """kafka-topics --describe of partition 0: (leader, isr, elr, last known elr)."""
    out = tool(cp, TOPICS, "--bootstrap-server", boot, "--describe", "--topic", topic)
    m = ROW.search(out)
    assert m, out
    ids = lambda s: [int(x) for x in s.split(",") if x and x != "N/A"]  # noqa: E731
    leader = -1 if m[1] == "none" else int(m[1])
    return leader, ids(m[3]), ids(m[4]), ids(m[5])


def wait_observers(c, cp: str, nodes: set[int]) -> None:
    """Until the broker-only nodes follow the metadata log as learners: a node paused while the
    controller is still adding it is another test (see the issue note on paused learners)."""
    status = lambda: tool(cp, QUORUM, "--bootstrap-server", c.bootstrap, "describe", "--status")  # noqa: E731
    c.wait_until(lambda: nodes <= ids(status(), "CurrentObservers"), 30, f"nodes {nodes} observe the quorum")


def test_replicas_lost_one_at_a_time_elect_the_eligible_replica(cluster, topic_name, classpath):
    c = cluster(5, voters=3)
    wait_observers(c, classpath, {4, 5})
    t = topic_name()
    create(c, t, partitions=1, assignment=[[3, 4, 5]], config={"min.insync.replicas": "2"})
    conf = dict(enable_idempotence=False, acks="all", retries=0, message_timeout_ms=15000, linger_ms=0)
    boot = lambda: c.live_bootstrap  # noqa: E731
    before = ProducerThread(c.node(3).addr, t, 1, tag="before", **conf)
    acks, errs = before.produce_now(100)
    assert len(acks) == 100 and not errs, errs[:5]

    # 5 goes: the ISR keeps min.insync.replicas members, no ELR; acks=all still works.
    c.pause(5)
    c.wait_until(lambda: c.isr_of(t, 0, via=1) == [3, 4], 60, "ISR [3, 4] (Metadata)")
    assert describe(classpath, boot(), t)[1] == [3, 4]
    mid = ProducerThread(c.node(3).addr, t, 1, tag="mid", **dict(conf, retries=10, retry_backoff_ms=200))
    acks, errs = mid.produce_now(100)
    assert len(acks) == 100 and not errs, errs[:5]
    hw_mid = watermarks(boot(), t, 1)[0][1]
    assert hw_mid == 200, hw_mid

    # 4 goes: below min.insync.replicas, 4 keeps its claim; acks=all is refused and the high
    # watermark stays where 4 left it (what makes the claim true).
    c.pause(4)
    c.wait_until(lambda: c.isr_of(t, 0, via=1) == [3], 60, "ISR [3] (Metadata)")
    c.wait_until(lambda: describe(classpath, boot(), t)[1:3] == ([3], [4]), 60, "ISR [3], Elr [4]")
    refused = ProducerThread(c.node(3).addr, t, 1, tag="refused", **conf)
    acks, errs = refused.produce_now(20)
    assert not acks and {e.code() for _s, e in errs} == {NOT_ENOUGH_REPLICAS}, errs[:5]
    one = ProducerThread(c.node(3).addr, t, 1, tag="acks1", enable_idempotence=False, acks=1, retries=0)
    acks, errs = one.produce_now(10)
    assert len(acks) == 10 and not errs, errs[:5]
    assert watermarks(boot(), t, 1)[0][1] == hw_mid, "the high watermark moved with the ISR below 2"

    # 3 (the leader) goes: no ISR, both eligible, 3 the last known leader.
    c.pause(3)
    # 3 is a voter (and may have been the active controller): admin calls wait for the quorum
    # to fence it first, or kafka-topics would send its call to the paused node.
    c.wait_until(lambda: 3 not in c.brokers_seen(via=1) and c.controller(via=1) != 3, 30, "3 fenced")
    c.wait_until(lambda: c.leader_of(t, 0, via=1) == -1, 60, "no leader (Metadata)")
    c.wait_until(lambda: describe(classpath, boot(), t) == (-1, [], [3, 4], [3]), 60,
                 "no leader, Isr [], Elr [3, 4], LastKnownElr [3]")

    # 5 comes back: it left while two others were in sync, so it may lack acknowledged records
    # (the "mid" ones: an unclean election of it would lose them). It is not elected.
    c.resume(5)
    c.wait_until(lambda: 5 in c.brokers_seen(via=1), 30, "5 unfenced")
    time.sleep(2)
    assert describe(classpath, boot(), t)[0] == -1, "an out-of-sync replica was elected"

    # 4 comes back: elected from the ELR; every acknowledged record is there.
    c.resume(4)
    c.wait_until(lambda: c.leader_of(t, 0, via=1) == 4, 30, "4 leads from the ELR (Metadata)")
    # At once ISR [4] with 3 still eligible; 5 may catch up and join right after (ISR [4, 5]
    # is at min.insync.replicas again, which clears the ELR). 3 is paused: never in the ISR.
    _, isr, elr, _ = describe(classpath, boot(), t)
    assert (isr, elr) in (([4], [3]), ([4, 5], [])), (isr, elr)
    c.resume(3)
    c.wait_full_isr(t, 60)
    assert describe(classpath, boot(), t)[2:] == ([], []), "a full ISR clears the ELR"
    after = ProducerThread(c.bootstrap, t, 1, tag="after", **dict(conf, retries=20, retry_backoff_ms=250))
    acks, errs = after.produce_now(100)
    assert len(acks) == 100 and not errs, errs[:5]
    got, hw = read_all(c.bootstrap, t, 1)
    # The acks=1 records were only on 3, above the high watermark: not committed, and gone
    # when 4 took over (Kafka's contract for acks=1). Every acks=all record is at its offset.
    check_log([before, mid, refused, after], got, hw, t, exact=False)
    assert not any(v[1] and b"acks1" in v[1] for v in got.values())
    wait_identical(c, t, 1)


def test_one_cluster_wide_min_insync_replicas_and_its_change_clears_the_elr(cluster, topic_name, classpath):
    """Issue 57 B (KAFKA-16540, Kafka 4.x's ConfigurationControlManager). Three nodes (static
    min.insync.replicas=2): the cluster-wide value is written from the active controller's
    static one (DescribeConfigs of the default broker resource: 2, DYNAMIC_DEFAULT_BROKER_CONFIG),
    a broker's own value is refused and the cluster-wide one cannot be removed, INVALID_CONFIG
    with Kafka's messages. A topic on the 3 nodes with min.insync.replicas=3 loses one replica
    (paused, fenced): it is the ELR; the topic's min.insync.replicas set to 2 clears the ELR (the
    claim was made under 3 and does not cover what the other two alone commit under 2)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    c = cluster(3)
    a = c.admin(via=1)  # a replica is paused below: requests go to node 1

    def alter(resource_type, name, key, value):
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        res = ConfigResource(resource_type, name, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=op)])
        a.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=30)

    # (confluent-kafka takes no empty resource name: Kafka's kafka-configs for the default.)
    configs = "org.apache.kafka.tools.ConfigCommand"
    out = c.wait_until(lambda: (o := tool(classpath, configs, "--bootstrap-server", c.bootstrap, "--describe",
                                          "--entity-type", "brokers", "--entity-default"))
                       and "min.insync.replicas=2" in o and o, 20, "the cluster-wide min.insync.replicas")
    assert "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=2" in out, out
    try:
        alter(ResourceType.BROKER, "1", "min.insync.replicas", "3")
        raise AssertionError("a broker-level min.insync.replicas was taken")
    except KafkaException as err:
        k = err.args[0]
        assert k.code() == KafkaError.INVALID_CONFIG, k
        assert "Broker-level min.insync.replicas cannot be altered while ELR is enabled." in k.str(), k
    r = subprocess.run(java(classpath, configs, "--bootstrap-server", c.bootstrap, "--alter", "--entity-type",
                            "brokers", "--entity-default", "--delete-config", "min.insync.replicas"),
                       capture_output=True, text=True, timeout=90)
    assert r.returncode != 0, r.stdout
    assert "Cluster-level min.insync.replicas cannot be removed while ELR is enabled." in r.stdout + r.stderr, \
        (r.stdout, r.stderr[-2000:])

    # The replica paused is not the active controller (an admin client would keep sending
    # its requests there) nor node 1 (which the admin client asks).
    controller = raw_metadata(c.node(1).client_port).controller
    victim = 3 if controller != 3 else 2
    others = sorted({1, 2, 3} - {victim})
    t = topic_name()
    create(c, t, partitions=1, assignment=[others + [victim]], config={"min.insync.replicas": "3"})
    c.pause(victim)
    c.wait_until(lambda: c.isr_of(t, 0, via=1) == others, 60, f"ISR {others} (Metadata)")
    c.wait_until(lambda: describe(classpath, c.live_bootstrap, t)[2] == [victim], 30, f"ELR [{victim}]")
    alter(ResourceType.TOPIC, t, "min.insync.replicas", "2")
    c.wait_until(lambda: describe(classpath, c.live_bootstrap, t)[1:] == (others, [], []), 20,
                 f"ISR {others}, ELR and LastKnownElr cleared")
