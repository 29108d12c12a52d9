"""UnregisterBroker (API 64) through Kafka's own `kafka-cluster unregister --id N`
(org.apache.kafka.tools.ClusterTool): a broker stopped for good is unregistered, it leaves every
ISR and ELR, a second unregistration is refused (BROKER_ID_NOT_REGISTERED), and the same node
started again registers anew and rejoins the ISR.
"""

from __future__ import annotations

import subprocess

from cluster_clients import ProducerThread, check_log, read_all
from test_cluster import create, wait_identical
from test_elr import describe, wait_observers
from test_kafka_tools_cluster import classpath, java  # noqa: F401 (fixture)

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"


def unregister(cp: str, boot: str, node: int) -> subprocess.CompletedProcess:
    r = subprocess.run(java(cp, CLUSTER_TOOL, "unregister", "--bootstrap-server", boot, "--id", str(node)),
                       capture_output=True, text=True, timeout=90)
    print(f"$ kafka-cluster unregister --id {node}: exit {r.returncode}\n{r.stdout}{r.stderr[-1500:]}")
    return r


def test_kafka_cluster_unregister_removes_a_stopped_broker(cluster, topic_name, classpath):
    c = cluster(5, voters=3)
    wait_observers(c, classpath, {4, 5})
    t = topic_name()
    create(c, t, partitions=1, assignment=[[2, 4, 5]], config={"min.insync.replicas": "2"})
    conf = dict(enable_idempotence=False, acks="all", retries=5, retry_backoff_ms=200)
    before = ProducerThread(c.node(2).addr, t, 1, tag="before", **conf)
    acks, errs = before.produce_now(50)
    assert len(acks) == 50 and not errs, errs[:5]

    # 5 stops (out of the ISR, which stays at min.insync.replicas), then 4 stops: ISR [2] keeps
    # 4's claim in the ELR. (Neither is a voter. 5 is stopped rather than paused: with a
    # broker-only node paused, the ISR shrink has stalled until its resume in one run of several,
    # a controller liveness issue of its own that test_elr and test_cluster's pause tests meet.)
    c.stop(5)
    c.wait_until(lambda: describe(classpath, c.live_bootstrap, t)[1] == [2, 4], 30, "ISR [2, 4]")
    c.stop(4)
    c.wait_until(lambda: describe(classpath, c.live_bootstrap, t)[1:3] == ([2], [4]), 30, "ISR [2], Elr [4]")

    r = unregister(classpath, c.live_bootstrap, 4)
    assert r.returncode == 0, r.stderr[-2000:]
    # The controller answered once committed; the broker describe asks may apply it a moment later.
    c.wait_until(lambda: describe(classpath, c.live_bootstrap, t)[1:3] == ([2], []), 15,
                 "4 left the ELR with its registration")
    again = unregister(classpath, c.live_bootstrap, 4)
    assert again.returncode != 0 and "not currently registered" in again.stdout + again.stderr

    c.start(5)
    c.start(4)
    c.wait_full_isr(t, 60)
    after = ProducerThread(c.bootstrap, t, 1, tag="after", **conf)
    acks, errs = after.produce_now(50)
    assert len(acks) == 50 and not errs, errs[:5]
    got, hw = read_all(c.bootstrap, t, 1)
    check_log([before, after], got, hw, t, exact=True)
    wait_identical(c, t, 1)


def unregister_controller(cp: str, boot: str, node: int) -> subprocess.CompletedProcess:
    r = subprocess.run(java(cp, CLUSTER_TOOL, "unregister-controller", "--bootstrap-server", boot, "--id", str(node)),
                       capture_output=True, text=True, timeout=90)
    print(f"$ kafka-cluster unregister-controller --id {node}: exit {r.returncode}\n{r.stdout}{r.stderr[-1500:]}")
    return r


def test_kafka_cluster_unregister_controller_removes_a_stopped_observer(cluster, classpath):
    """UnregisterController (API 94, KIP-1312) through Kafka 4.4's own `kafka-cluster
    unregister-controller --id N`: the active controller and a voter are refused, an unknown id is
    CONTROLLER_ID_NOT_REGISTERED; an observer of the metadata quorum, stopped for good, is
    unregistered and `kafka-metadata-quorum describe` no longer lists it (at once, not after the
    5-minute observer session), a second unregistration is refused; started again, the node
    observes the quorum again (its heartbeat registers it anew, as Kafka's controller does)."""
    from test_dynamic_quorum import ids
    from test_kafka_tools_cluster import QUORUM, tool
    c = cluster(4, voters=3)
    wait_observers(c, classpath, {4})
    ctrl = c.controller()
    r = unregister_controller(classpath, c.live_bootstrap, ctrl)
    assert r.returncode != 0 and "Controller cannot unregister itself while it is active." in r.stdout + r.stderr
    voter = next(i for i in (1, 2, 3) if i != ctrl)
    r = unregister_controller(classpath, c.live_bootstrap, voter)
    assert r.returncode != 0 and "remove it from the voter set first" in r.stdout + r.stderr
    r = unregister_controller(classpath, c.live_bootstrap, 99)
    assert r.returncode != 0 and "not currently registered" in r.stdout + r.stderr

    c.stop(4)
    r = unregister_controller(classpath, c.live_bootstrap, 4)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    status = tool(classpath, QUORUM, "--bootstrap-server", c.live_bootstrap, "describe", "--status")
    assert 4 not in ids(status, "CurrentObservers"), status
    again = unregister_controller(classpath, c.live_bootstrap, 4)
    assert again.returncode != 0 and "not currently registered" in again.stdout + again.stderr

    c.start(4)
    wait_observers(c, classpath, {4})
    c.assert_alive()
