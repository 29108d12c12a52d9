"""The first requests to a new cluster's coordinators: answered "load in progress", never "not
coordinator", while the broker the metadata names is still loading the partition.

FindCoordinator creates `__consumer_offsets` (or `__transaction_state`) on first use and names the
leader of the key's partition at once; that leader loads the partitions' coordinators one after
another (a replay of each log), so a request can reach it before its partition is loaded. Kafka's
coordinator runtime answers such a partition COORDINATOR_LOAD_IN_PROGRESS (14), which clients
retry in place. Frieda answered NOT_COORDINATOR (16): librdkafka then marks the coordinator dead,
closes its connection on the "nodename change" and fails the retried commit with a transport
error, round after round; a synchronous commit took 1-40 s, and 180 s once under strace (the
packaged broker's sandbox test, CI of 2026-12-06).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

GROUPS = 12
TRANSACTIONAL_IDS = 6
# a commit or init_transactions answered in a fresh cluster; the churn took 1-40 s
ANSWERED_WITHIN_S = 15


class Lines(logging.Handler):
    """Collects a client's log lines (librdkafka's `debug` output through `logger`)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []
        self.guard = threading.Lock()

    def emit(self, record):
        with self.guard:
            self.lines.append(record.getMessage())


def client_logger(name: str) -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(name)
    log.propagate = False
    log.setLevel(logging.DEBUG)
    lines = Lines()
    log.addHandler(lines)
    return log, lines


def test_a_new_clusters_first_commits_and_transactions_never_hear_not_coordinator(cluster, topic_name):
    """A fresh 3-node cluster with 50 offsets and 50 transaction-state partitions (RF 3, so
    leaders on every node load theirs one after another). A 2-partition topic gets 20 records;
    then, all at once, 12 confluent-kafka consumers of 12 groups (their partitions spread over
    `__consumer_offsets`) each commit offsets synchronously, and 6 transactional producers
    init_transactions, produce one record and commit. Each answers OK within 15 s, the committed
    offsets read back, every transactional record reads back committed, and no client's debug log
    shows a NOT_COORDINATOR answer."""
    c = cluster(3, **{"offsets.topic.num.partitions": 50, "transaction.state.log.num.partitions": 50})
    t = topic_name()
    admin = c.admin()
    admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=3)])[t].result(timeout=30)
    c.wait_full_isr(t)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(20):
        p.produce(t, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0

    results: dict[str, object] = {}
    logs: dict[str, Lines] = {}

    def commit(name: str) -> None:
        log, lines = client_logger(name)
        logs[name] = lines
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": name, "enable.auto.commit": False,
                         "debug": "cgrp,protocol", "logger": log})
        try:
            t0 = time.monotonic()
            offsets = [TopicPartition(t, q, 10) for q in (0, 1)]
            done = cons.commit(offsets=offsets, asynchronous=False)
            took = time.monotonic() - t0
            assert all(x.error is None for x in done), done
            back = cons.committed([TopicPartition(t, q) for q in (0, 1)], timeout=15)
            results[name] = (took, sorted((x.partition, x.offset) for x in back))
        except Exception as e:  # noqa: BLE001 (reported below with the client's name)
            results[name] = e
        finally:
            cons.close()

    def transact(name: str) -> None:
        log, lines = client_logger(name)
        logs[name] = lines
        prod = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": name, "debug": "eos,protocol",
                         "logger": log})
        try:
            t0 = time.monotonic()
            prod.init_transactions(30)
            prod.begin_transaction()
            prod.produce(t, value=name.encode(), partition=0)
            prod.commit_transaction(30)
            results[name] = (time.monotonic() - t0, None)
        except Exception as e:  # noqa: BLE001
            results[name] = e

    names = [f"g-{i}-{uuid.uuid4().hex[:6]}" for i in range(GROUPS)]
    tids = [f"tx-{i}-{uuid.uuid4().hex[:6]}" for i in range(TRANSACTIONAL_IDS)]
    threads = [threading.Thread(target=commit, args=(n,)) for n in names]
    threads += [threading.Thread(target=transact, args=(n,)) for n in tids]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads), "a client is still waiting after 120 s"

    failed = {n: r for n, r in results.items() if isinstance(r, Exception)}
    assert not failed, f"clients failed: {failed}"
    assert set(results) == set(names) | set(tids)
    for n in names:
        took, back = results[n]
        assert back == [(0, 10), (1, 10)], f"{n} committed offsets read back {back}"
    slow = {n: round(r[0], 2) for n, r in results.items() if r[0] > ANSWERED_WITHIN_S}
    assert not slow, f"answered after more than {ANSWERED_WITHIN_S} s: {slow}"
    heard = {n: [line for line in lines.lines if "Not coordinator" in line][:2] for n, lines in logs.items()}
    heard = {n: v for n, v in heard.items() if v}
    assert not heard, f"NOT_COORDINATOR answered by the broker the metadata named: {heard}"

    # every transactional record reads back, committed
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    try:
        cons.assign([TopicPartition(t, 0, 0)])
        seen, deadline = set(), time.monotonic() + 30
        while not set(tids) <= seen and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None and not m.error():
                seen.add(m.value().decode())
        assert set(tids) <= seen, f"transactional records missing: {set(tids) - seen}"
    finally:
        cons.close()
