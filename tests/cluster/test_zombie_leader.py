"""A leader paused (SIGSTOP) for longer than its session, then resumed, acknowledges nothing as
leader: by the time it runs again the controller has fenced it and another broker leads (and
takes writes), so anything it acknowledged could be truncated away when it rejoins as a
follower. Frieda's leaders hold a lease (the send time of their last answered heartbeat plus
`broker.session.timeout.ms`); a produce is refused before the append, and not acknowledged
after it, once the lease has run out, and reads are not served as leader either (the resumed
node's metadata may still name it leader until it has caught up)."""

from __future__ import annotations

import signal
import time

import kafka_wire as kw
from confluent_kafka import Producer
from cluster_clients import read_all
from test_cluster import create

NOT_LEADER_OR_FOLLOWER = 6


def test_leader_paused_past_its_session_acknowledges_nothing_after_it_resumes(cluster, topic_name):
    """broker.session.timeout.ms=3000, broker.heartbeat.interval.ms=200. A 1-partition RF 3 topic;
    a raw connection to its leader L gets one acks=all Produce acknowledged (the control; an acks=1
    record may be lost with its leader, as in Kafka). L is
    SIGSTOPped; 20 Produce requests (acks=1 and acks=all alternately, distinct values) are written
    to L's socket while it sleeps. Once the other nodes' Metadata names a new leader, a
    confluent-kafka producer writes 50 acks=all records through them. L gets SIGCONT: every one of
    the 20 requests is answered NOT_LEADER_OR_FOLLOWER (none acknowledged). L rejoins the ISR; the
    partition then holds the control record and the 50 at their acknowledged offsets, and none of
    the 20."""
    c = cluster(3, **{"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 200})
    topic = topic_name()
    create(c, topic, partitions=1, rf=3)
    leader = c.leader_of(topic, 0)
    others = [i for i in (1, 2, 3) if i != leader]
    s = kw.connect("127.0.0.1", c.node(leader).client_port)
    ts = int(time.time() * 1000)

    def batch(value: bytes) -> bytes:
        return kw.record_batch([kw.Record(key=b"k", value=value, headers=[], timestamp=ts)])

    # The metadata names L before L's replica has taken its role (until then it refuses with
    # NOT_LEADER_OR_FOLLOWER, as a client would be told to retry): retry for a moment.
    deadline = time.monotonic() + 10
    while True:
        _, (ctl,) = kw.parse_produce_v9(kw.request(s, kw.produce_v9(1, topic, 0, batch(b"control"), acks=-1)))
        if ctl.error_code != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert ctl.error_code == 0, ctl

    c.pause(leader)
    zombie = [f"zombie-{i}".encode() for i in range(20)]
    for i, v in enumerate(zombie):
        kw.send(s, kw.produce_v9(100 + i, topic, 0, batch(v), acks=1 if i % 2 == 0 else -1,
                                 timeout_ms=5000))
    c.wait_until(lambda: c.leader_of(topic, 0, via=others[0]) not in (leader, -1), 30,
                 f"a new leader of {topic}-0 while node {leader} is paused")

    bootstrap = ",".join(c.node(i).addr for i in others)
    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, "log_level": 3})
    for i in range(50):
        p.produce(topic, key=b"k", value=f"after-{i}".encode(), partition=0,
                  on_delivery=lambda err, m: acked.append((err, m.offset(), m.value())))
    assert p.flush(60) == 0
    assert all(err is None for err, _, _ in acked), [e for e, _, _ in acked if e][:3]

    c.resume(leader)
    answers = []
    for i in range(len(zombie)):
        corr, (r,) = kw.parse_produce_v9(kw.recv_frame(s, timeout=30))
        assert corr == 100 + i
        answers.append(r)
    s.close()
    acknowledged = [(zombie[i], r.base_offset) for i, r in enumerate(answers) if r.error_code == 0]
    assert not acknowledged, f"the resumed, fenced leader acknowledged {acknowledged}"
    assert all(r.error_code == NOT_LEADER_OR_FOLLOWER for r in answers), [r.error_code for r in answers]

    # asked of a node that was never paused (the resumed one's image may be stale for a moment)
    c.wait_until(lambda: sorted(c.isr_of(topic, 0, via=others[0])) == [1, 2, 3], 60,
                 f"node {leader} back in the ISR")
    got, hw = read_all(bootstrap, topic, 1)
    if hw[0] != 51:
        from cluster_clients import watermarks
        again = watermarks(bootstrap, topic, 1)
        views = {i: (c.leader_of(topic, 0, via=i), c.isr_of(topic, 0, via=i)) for i in (1, 2, 3)}
        raise AssertionError(f"high watermark {hw}, asked again {again}, leader/isr per node {views}")
    values = {v for (_k, v) in got.values()}
    assert got.get((0, ctl.base_offset), (None, None))[1] == b"control", (hw, sorted(got)[:5])
    for _err, off, v in acked:
        assert got.get((0, off), (None, None))[1] == v, (off, v, hw, len(got), sorted(got)[:5])
    assert not values & set(zombie), sorted(values & set(zombie))
    assert hw[0] == 51, hw
    # Nothing of the 20 was even appended: refused before the append, not truncated after.
    assert "truncating a diverged log" not in c.node(leader).text(), c.node(leader).tail()
