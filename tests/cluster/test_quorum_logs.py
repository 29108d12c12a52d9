"""What a voter going away and coming back looks like in the other nodes' logs (issue 29: logs an
operator can alert on). A voter that is down while the quorum holds is normal operation: no
ERROR line on any node, and each change of a peer's reachability is one line (WARN when a peer
that answered stops, INFO when it answers again), not one per retry. openraft reports every
failed leadership check and vote request itself (several a second); Frieda leaves those out
(logging.rs) and says it once (frieda_meta::network)."""

from __future__ import annotations

import re
import time

DOWN_S = 8


def lines(node, pattern: str) -> list[str]:
    return [l for l in node.text().splitlines() if re.search(pattern, l)]


def test_a_voter_down_and_back_is_one_warning_and_no_error(cluster):
    c = cluster(3)
    ctrl = c.controller()
    victim = next(i for i in c.nodes if i != ctrl)
    others = [i for i in c.nodes if i != victim]
    time.sleep(1)
    c.kill(victim)
    time.sleep(DOWN_S)  # openraft checks leadership several times a second meanwhile
    c.start(victim)
    time.sleep(3)
    c.assert_alive()
    for i in others:
        node = c.node(i)
        errors = lines(node, r" ERROR ")
        assert not errors, f"node {i} logged ERROR lines while voter {victim} was down:\n" + "\n".join(errors[:10])
        lost = lines(node, rf"WARN .*quorum peer does not answer.*node={victim}\b")
        assert len(lost) <= 1, f"node {i}: more than one warning for one outage:\n" + "\n".join(lost)
    # The active controller (the Raft leader) replicates to the victim, so it saw the change
    # both ways, once each.
    leader = c.node(ctrl)
    assert len(lines(leader, rf"WARN .*quorum peer does not answer.*node={victim}\b")) == 1, leader.tail(60)
    assert len(lines(leader, rf"INFO .*quorum peer answers again node={victim}\b")) == 1, leader.tail(60)


def test_a_rolling_restart_under_load_logs_no_error_and_an_idle_cluster_no_warning(cluster):
    """Issue 59 item 3: a rolling restart (each node in turn stopped with SIGTERM and started
    again, the active controller last, as an operator upgrades) while a producer writes: no node
    logs an ERROR line, and a node logs at most one WARN about a peer per restart of that peer.
    Then 20 s of an idle, healthy cluster log no WARN or ERROR at all, and stopping every node
    in turn logs no ERROR."""
    import threading
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    c = cluster(3)
    topic = "rolling-logs"
    admin = c.admin()  # kept referenced until the futures resolve
    for f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)]).values():
        f.result(30)
    c.wait_topic(topic, 3)
    stop = threading.Event()
    acked = []

    def produce():
        p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all",
                      "linger.ms": 5})
        i = 0
        while not stop.is_set():
            p.produce(topic, value=b"%d" % i, on_delivery=lambda e, m: e is None and acked.append(m.offset()))
            i += 1
            p.poll(0.002)
        p.flush(30)
    t = threading.Thread(target=produce, daemon=True)
    t.start()
    ctrl = c.controller()
    order = [i for i in sorted(c.nodes) if i != ctrl] + [ctrl]
    for i in order:
        c.stop(i)
        time.sleep(2)
        c.start(i)
        c.wait_until(lambda: all(len(c.isr_of(topic, p)) == 3 for p in range(3)), 60,
                     f"full ISRs after node {i} came back")
    stop.set()
    t.join(60)
    assert len(acked) > 100, len(acked)
    c.assert_alive()
    for i in c.nodes:
        node = c.node(i)
        errors = lines(node, r" ERROR ")
        assert not errors, f"node {i} logged ERROR lines in a rolling restart:\n" + "\n".join(errors[:10])
        for peer in c.nodes:
            if peer == i:
                continue
            lost = lines(node, rf"WARN .*quorum peer does not answer.*node={peer}\b")
            assert len(lost) <= 1, f"node {i}: {len(lost)} warnings for one restart of {peer}:\n" + "\n".join(lost)
    before = {i: len(c.node(i).text().splitlines()) for i in c.nodes}
    time.sleep(20)
    for i in c.nodes:
        new = c.node(i).text().splitlines()[before[i]:]
        loud = [l for l in new if re.search(r" (WARN|ERROR) ", l)]
        assert not loud, f"node {i} logged while idle and healthy:\n" + "\n".join(loud[:10])
    # Every node stopped in turn, the whole cluster down: still no ERROR, on the nodes stopping
    # either (openraft reports every call that meets its stopped core as an ERROR).
    for i in order:
        c.stop(i)
    for i in c.nodes:
        errors = lines(c.node(i), r" ERROR ")
        assert not errors, f"node {i} logged ERROR lines stopping:\n" + "\n".join(errors[:10])
