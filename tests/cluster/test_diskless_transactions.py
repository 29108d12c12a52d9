"""Transactions on diskless topics (issue 60; docs/diskless.md, "Idempotence and transactions"):
3 brokers, SeaweedFS (as test_diskless.py), confluent-kafka's transactional producer.

- 40 transactions of 60 records over 3 partitions, every third one aborted, while the broker
  leading ``__diskless_coordinator-0`` (the batch coordinator, which decides the markers) is
  SIGKILLed after the 12th and restarted ~5 s later. A transaction whose commit the client
  could not finish is aborted and counted so. Then a ``read_committed`` consumer reads every
  record of exactly the committed transactions, each once, in the order produced per
  partition; a ``read_uncommitted`` one reads those at the same offsets plus the aborted ones'
  that were written, and each partition's offsets have a gap (the marker) after every
  transaction that wrote there.
- An open transaction holds the last stable offset: a ``read_committed`` consumer gets nothing
  of it (nor what a plain producer writes after it) until it commits, a ``read_uncommitted``
  one gets it at once; ListOffsets latest with ``read_committed`` (the last stable offset) stays
  at its first offsets meanwhile.
- Kafka's own exactly-once copier (``TransactionalMessageCopier``, the Java clients of Kafka's
  system tests ``transactions_test.py``): two copiers, one per partition, read a diskless topic
  ``read_committed`` and write each poll to another diskless topic in a transaction with the
  consumed offsets (TxnOffsetCommit), aborting a third of them at random and rewinding to the
  committed offsets, while the batch coordinator's broker is SIGKILLed and restarted. The
  output, read ``read_committed``, is the input: every record once, in order per partition.
- Kafka's ``kafka-transactions`` tool on a transaction left open on a diskless topic:
  ``describe-producers`` (DescribeProducers, answered from the batch coordinator), also after
  the coordinator's broker is SIGKILLed; ``find-hanging``; ``abort --start-offset`` (its
  WriteTxnMarkers) releases the last stable offset of that partition only.
"""
from __future__ import annotations

import subprocess
import time
from collections import defaultdict

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, Producer, TopicPartition

from conftest import wait_until
from test_diskless import COORDINATOR, KEY_PREFIX, create_diskless, diskless_leader, store  # noqa: F401
from test_kafka_tools_cluster import classpath, java, tool  # noqa: F401
from txn_helpers import parse_table

TXN_TOOL = "org.apache.kafka.tools.TransactionsCommand"

COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"

PARTS = 3


def read_all(boot: str, topic: str, isolation: str, until: dict[int, int], timeout: float = 60) -> dict:
    """(partition, offset) -> (key, value) of every record a consumer with ``isolation.level``
    reads from the beginning until its position in each partition reaches ``until``."""
    cons = Consumer({"bootstrap.servers": boot, "group.id": f"unused-{isolation}", "enable.auto.commit": False,
                     "isolation.level": isolation, "fetch.wait.max.ms": 100})
    got: dict = {}
    try:
        cons.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in until])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = cons.poll(0.3)
            if m is not None and m.error() is None:
                key = (m.partition(), m.offset())
                assert key not in got, f"{isolation}: offset {key} delivered twice"
                got[key] = (m.key(), m.value())
            pos = {tp.partition: tp.offset for tp in cons.position(
                [TopicPartition(topic, p) for p in until])}
            if all(pos.get(p, -1) >= until[p] for p in until):
                return got
        raise AssertionError(f"{isolation}: positions {pos} short of {until} after {timeout} s")
    finally:
        cons.close()


def high_watermarks(boot: str, topic: str, isolation: str = "read_uncommitted", parts: int = PARTS) -> dict[int, int]:
    """ListOffsets latest per partition: the high watermark, or with ``read_committed`` the
    last stable offset."""
    cons = Consumer({"bootstrap.servers": boot, "group.id": "unused-hw", "isolation.level": isolation})
    try:
        return {p: cons.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(parts)}
    finally:
        cons.close()


def settled(boot: str, topic: str, parts: int = PARTS) -> dict[int, int]:
    """The high watermarks once every transaction's markers are written (the last stable offset
    is the high watermark: EndTxn of transactions v2 answers before its markers land)."""
    last = {}

    def same():
        hw = high_watermarks(boot, topic, parts=parts)
        last["lso"], last["hw"] = high_watermarks(boot, topic, "read_committed", parts), hw
        return hw if last["lso"] == hw else None
    try:
        return wait_until(same, 30, f"{topic}: last stable offsets at the high watermarks")
    except AssertionError as e:
        raise AssertionError(f"{e}: last stable offsets {last.get('lso')}, high watermarks {last.get('hw')}") from None


def run_transaction(p: Producer, topic: str, n: int, commit: bool, records: int) -> bool:
    """Transaction ``n`` of ``records`` records (keys ``t<n>-<j>``, partition ``j % PARTS``):
    committed (True) or aborted, on purpose or because the client could not commit it."""
    p.begin_transaction()
    for j in range(records):
        p.produce(topic, key=b"t%d-%d" % (n, j), value=b"v%d-%d-" % (n, j) + b"x" * 200, partition=j % PARTS)
    if not commit:
        p.flush(60)  # written, then aborted (librdkafka would drop unsent records at the abort)
        p.abort_transaction(60)
        return False
    for _attempt in range(10):
        try:
            p.commit_transaction(60)
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.retriable():
                continue
            if err.txn_requires_abort():
                print(f"transaction {n}: {err}; aborted")
                p.abort_transaction(60)
                return False
            raise
    raise AssertionError(f"transaction {n}: commit not finished after 10 retries")


def test_transactions_on_a_diskless_topic_with_the_coordinator_killed(store, cluster, topic_name):  # noqa: F811
    c = cluster(3, **store.broker_settings(), **{
        "rsm.config.key.prefix": KEY_PREFIX,
        "diskless.append.commit.interval.ms": 50,
    })
    t = topic_name()
    create_diskless(c, t, PARTS)
    lead = diskless_leader(c, t, PARTS)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": f"txn-{t}", "linger.ms": 5,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    committed, aborted = [], []
    t0 = time.monotonic()
    for n in range(40):
        if n == 12:
            c.kill(lead)
            t_kill = time.monotonic()
            print(f"node {lead} (leading the batch coordinator) SIGKILLed {t_kill - t0:.1f} s in")
        if n == 20:
            time.sleep(max(0.0, t_kill + 5 - time.monotonic()))
            c.start(lead)
            print(f"node {lead} restarted {time.monotonic() - t0:.1f} s in")
        (committed if run_transaction(p, t, n, n % 3 != 2, 60) else aborted).append(n)
    print(f"{len(committed)} transactions committed, {len(aborted)} aborted, {time.monotonic() - t0:.1f} s")
    assert len(committed) >= 20, (committed, aborted)

    hw = settled(c.bootstrap, t)
    rc = read_all(c.bootstrap, t, "read_committed", hw)
    ru = read_all(c.bootstrap, t, "read_uncommitted", hw)
    want = {b"t%d-%d" % (n, j) for n in committed for j in range(60)}
    got_keys = [k for k, _ in rc.values()]
    assert len(got_keys) == len(set(got_keys)), "a committed record read twice"
    assert set(got_keys) == want, (f"missing {sorted(want - set(got_keys))[:5]}, "
                                   f"not committed {sorted(set(got_keys) - want)[:5]}")
    for (part, off), (key, value) in rc.items():
        n, j = (int(x) for x in key[1:].split(b"-"))
        assert part == j % PARTS and value.startswith(b"v%d-%d-" % (n, j)), (part, off, key)
        assert ru.get((part, off)) == (key, value), f"read_uncommitted has another record at {part}/{off}"
    # per partition: the committed records in the order produced, and a marker after each
    # transaction (an offset no data record holds)
    by_part = defaultdict(list)
    for (part, off), (key, _) in sorted(ru.items()):
        n, j = (int(x) for x in key[1:].split(b"-"))
        by_part[part].append((off, n, j))
    for part, recs in by_part.items():
        assert [(n, j) for _, n, j in recs] == sorted((n, j) for _, n, j in recs), f"partition {part} out of order"
        gaps = sum(1 for a, b in zip(recs, recs[1:]) if b[1] != a[1] and b[0] > a[0] + 1)
        transactions = len({n for _, n, _ in recs})
        assert gaps >= transactions - 1, f"partition {part}: {gaps} marker gaps for {transactions} transactions"
    aborted_seen = {key for key, _ in ru.values()} - want
    assert all(int(k[1:].split(b"-")[0]) in aborted for k in aborted_seen)
    assert len(aborted_seen) >= 60 * len([n for n in aborted if n % 3 == 2]) // 2, "aborted records not written"
    print(f"read_committed: {len(rc)} records; read_uncommitted: {len(ru)} ({len(aborted_seen)} of aborted "
          f"transactions); high watermarks {hw}")

    # An open transaction holds read_committed readers back; a plain producer's records after it too.
    p.begin_transaction()
    for j in range(30):
        p.produce(t, key=b"open-%d" % j, value=b"o", partition=j % PARTS)
    p.flush(30)
    plain = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
    for j in range(PARTS):
        plain.produce(t, key=b"plain-%d" % j, value=b"p", partition=j)
    assert plain.flush(30) == 0
    hw_open = high_watermarks(c.bootstrap, t)
    assert all(hw_open[q] == hw[q] + 10 + 1 for q in range(PARTS)), (hw, hw_open)
    lso_open = high_watermarks(c.bootstrap, t, "read_committed")
    assert lso_open == hw, f"read_committed latest {lso_open} is not the open transaction's first offsets {hw}"
    ru_open = read_all(c.bootstrap, t, "read_uncommitted", hw_open)
    assert {k for k, _ in ru_open.values()} >= {b"open-%d" % j for j in range(30)} | {b"plain-%d" % j for j in range(PARTS)}
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "unused-lso", "isolation.level": "read_committed"})
    try:
        cons.assign([TopicPartition(t, q, OFFSET_END) for q in range(PARTS)])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            m = cons.poll(0.2)
            assert m is None or m.error() is not None, f"read_committed read {m.key()} past an open transaction"
    finally:
        cons.close()
    p.commit_transaction(60)
    hw_done = settled(c.bootstrap, t)
    rc_done = read_all(c.bootstrap, t, "read_committed", hw_done)
    keys = {k for k, _ in rc_done.values()}
    assert {b"open-%d" % j for j in range(30)} | {b"plain-%d" % j for j in range(PARTS)} <= keys
    assert len(rc_done) == len(rc) + 30 + PARTS


def test_kafkas_transactional_copier_between_diskless_topics(store, cluster, topic_name, classpath, tmp_path):  # noqa: F811
    c = cluster(3, **store.broker_settings(), **{
        "rsm.config.key.prefix": KEY_PREFIX,
        "diskless.append.commit.interval.ms": 50,
    })
    src, dst = topic_name(), topic_name()
    create_diskless(c, src, 2)
    create_diskless(c, dst, 2)
    diskless_leader(c, dst, 2)
    lead = diskless_leader(c, src, 2)
    n = 3000  # records per partition
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(2 * n):
        p.produce(src, key=b"k%d" % i, value=b"s%d-%05d" % (i % 2, i // 2), partition=i % 2)
    assert p.flush(60) == 0
    copiers = []
    for q in range(2):
        out = open(tmp_path / f"copier-{q}.out", "w")
        err = open(tmp_path / f"copier-{q}.err", "w")
        copiers.append(subprocess.Popen(java(
            classpath, COPIER, "--broker-list", c.bootstrap, "--input-topic", src, "--input-partition", str(q),
            "--output-topic", dst, "--transactional-id", f"copier-{dst}-{q}", "--consumer-group", f"copier-{dst}-{q}",
            "--transaction-size", "100", "--transaction-timeout", "30000", "--enable-random-aborts"),
            stdout=out, stderr=err))
    try:
        t0 = time.monotonic()
        time.sleep(4)
        c.kill(lead)
        print(f"node {lead} (leading the batch coordinator) SIGKILLed {time.monotonic() - t0:.1f} s in")
        time.sleep(5)
        c.start(lead)
        print(f"node {lead} restarted {time.monotonic() - t0:.1f} s in")
        for q, cp in enumerate(copiers):
            rc = cp.wait(timeout=240)
            assert rc == 0, f"copier {q} exited {rc}: {(tmp_path / f'copier-{q}.err').read_text()[-3000:]}"
        print(f"both copiers done {time.monotonic() - t0:.1f} s in")
    finally:
        for cp in copiers:
            if cp.poll() is None:
                cp.kill()
                cp.wait()
    status = [line for q in range(2) for line in (tmp_path / f"copier-{q}.out").read_text().splitlines()]
    print(status[-2:])
    hw = settled(c.bootstrap, dst, 2)
    got = read_all(c.bootstrap, dst, "read_committed", hw)
    for q in range(2):
        values = [v for (part, _off), (_k, v) in sorted(got.items()) if part == q]
        want = [b"s%d-%05d" % (q, j) for j in range(n)]
        assert values == want, (f"partition {q}: {len(values)} records, first difference at "
                                f"{next((i for i, (a, b) in enumerate(zip(values, want)) if a != b), min(len(values), n))}")
    ru = read_all(c.bootstrap, dst, "read_uncommitted", hw)
    print(f"output: {len(got)} records committed, {len(ru) - len(got)} of aborted transactions; high watermarks {hw}")


def test_kafka_transactions_tool_describes_and_aborts_a_diskless_transaction(store, cluster, topic_name,  # noqa: F811
                                                                             classpath):  # noqa: F811
    """A confluent-kafka transactional producer commits 2 records to partition 1 of a diskless
    topic (offsets 0-1, marker 2), then leaves a transaction open with 3 records there (3-5) and
    1 on partition 0 (0). Kafka 4.4.0's kafka-transactions: `describe-producers` shows the
    producer with last sequence 4 and current transaction start offset 3 on partition 1 (0 on
    partition 0), the same after the broker leading ``__diskless_coordinator-0`` is SIGKILLed
    (another broker's coordinator has the producer state from the replicated decisions);
    `find-hanging --topic` lists nothing (its transaction coordinator knows it); `abort --topic
    T --partition 1 --start-offset 3` writes an abort marker there (6): the open transaction is
    gone from describe-producers, read_committed latest of partition 1 moves from 3 to 7 and
    partition 0 stays at 0. The producer's own abort then ends it on both partitions."""
    c = cluster(3, **store.broker_settings(), **{
        "rsm.config.key.prefix": KEY_PREFIX,
        "diskless.append.commit.interval.ms": 50,
    })
    t = topic_name()
    create_diskless(c, t, 2)
    lead = diskless_leader(c, t, 2)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": f"txn-{t}", "linger.ms": 5,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    acked: list[tuple[int, int]] = []

    def report(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset()))

    p.begin_transaction()
    for i in range(2):
        p.produce(t, key=b"c%d" % i, value=b"committed", partition=1, on_delivery=report)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, key=b"o%d" % i, value=b"open", partition=1, on_delivery=report)
    p.produce(t, key=b"o-p0", value=b"open", partition=0, on_delivery=report)
    assert p.flush(60) == 0
    assert sorted(acked) == [(0, 0), (1, 0), (1, 1), (1, 3), (1, 4), (1, 5)], acked
    assert high_watermarks(c.bootstrap, t, "read_committed", parts=2) == {0: 0, 1: 3}

    def producers(part: int) -> list[dict]:
        out = tool(classpath, TXN_TOOL, "--bootstrap-server", c.live_bootstrap, "describe-producers",
                   "--topic", t, "--partition", str(part))
        return parse_table(out)

    def open_transactions() -> dict:
        rows = {q: producers(q) for q in (0, 1)}
        assert all(len(r) == 1 for r in rows.values()), rows
        return {q: (r[0]["ProducerId"], r[0]["LastSequence"], r[0]["CurrentTransactionStartOffset"])
                for q, r in rows.items()}

    before = open_transactions()
    pid = before[1][0]
    assert int(pid) >= 0 and before == {0: (pid, "0", "0"), 1: (pid, "4", "3")}, before

    c.kill(lead)
    new = diskless_leader(c, t, 2, exclude=lead)
    print(f"node {lead} (leading {COORDINATOR}-0) SIGKILLed; node {new} leads it now")
    assert open_transactions() == before

    out = tool(classpath, TXN_TOOL, "--bootstrap-server", c.live_bootstrap, "find-hanging", "--topic", t,
               "--max-transaction-timeout", "0")
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and lines[0].split()[:3] == ["Topic", "Partition", "ProducerId"], out
    assert not any(t in line for line in lines[1:]), out

    tool(classpath, TXN_TOOL, "--bootstrap-server", c.live_bootstrap, "abort", "--topic", t, "--partition", "1",
         "--start-offset", "3")
    rows = producers(1)
    assert len(rows) == 1 and rows[0]["ProducerId"] == pid, rows
    assert rows[0]["CurrentTransactionStartOffset"] in ("None", "-1"), rows
    assert high_watermarks(c.live_bootstrap, t, parts=2) == {0: 1, 1: 7}
    assert high_watermarks(c.live_bootstrap, t, "read_committed", parts=2) == {0: 0, 1: 7}
    rc = read_all(c.live_bootstrap, t, "read_committed", {1: 7})
    assert sorted((off, key) for (_, off), (key, _) in rc.items()) == [(0, b"c0"), (1, b"c1")], rc

    # the producer ends its own transaction: aborted on both partitions (0 -> 2, 1 -> 8)
    p.abort_transaction(60)
    # (transactions v2: EndTxn is answered before its markers are written)
    wait_until(lambda: high_watermarks(c.live_bootstrap, t, "read_committed", parts=2) == {0: 2, 1: 8}, 30,
               "the producer's abort markers on both partitions")
    assert producers(0)[0]["CurrentTransactionStartOffset"] in ("None", "-1")


def test_idle_producers_expire_on_a_diskless_topic(store, cluster, topic_name, classpath):  # noqa: F811
    """``producer.id.expiration.ms`` on diskless partitions (the batch coordinator's producer
    state stays bounded by the producers active in that window): with 4 s, an idempotent
    producer writes 5 records to partition 0 and a transactional one leaves a transaction open
    on partition 1. ``describe-producers`` lists both; once the idempotent one has been idle
    past the expiration (checked every second) it is gone and the open transaction stays, also
    after the broker leading ``__diskless_coordinator-0`` is SIGKILLed (the expiry is a
    replicated decision). The expired producer then writes 5 more: accepted, at offsets 5-9,
    all 10 read back byte for byte."""
    c = cluster(3, **store.broker_settings(), **{
        "rsm.config.key.prefix": KEY_PREFIX,
        "diskless.append.commit.interval.ms": 50,
        "producer.id.expiration.ms": 4000,
        "producer.id.expiration.check.interval.ms": 1000,
    })
    t = topic_name()
    create_diskless(c, t, 2)
    lead = diskless_leader(c, t, 2)
    idem = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    acked: list[tuple[int, int, bytes]] = []

    def report(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.value()))

    for i in range(5):
        idem.produce(t, key=b"k%d" % i, value=b"idempotent %d" % i, partition=0, on_delivery=report)
    assert idem.flush(60) == 0
    txn = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": f"txn-{t}", "linger.ms": 5,
                    "transaction.timeout.ms": 60000})
    txn.init_transactions(60)
    txn.begin_transaction()
    txn.produce(t, key=b"open", value=b"open", partition=1, on_delivery=report)
    assert txn.flush(60) == 0

    def producers(part: int) -> list[dict]:
        out = tool(classpath, TXN_TOOL, "--bootstrap-server", c.live_bootstrap, "describe-producers",
                   "--topic", t, "--partition", str(part))
        return parse_table(out)

    assert len(producers(0)) == 1 and len(producers(1)) == 1
    opened = producers(1)[0]
    wait_until(lambda: producers(0) == [], 30, "the idle idempotent producer expired")
    # the transaction keeps its producer however long it stays open
    assert producers(1) == [opened]

    c.kill(lead)
    new = diskless_leader(c, t, 2, exclude=lead)
    print(f"node {lead} (leading {COORDINATOR}-0) SIGKILLed; node {new} leads it now")
    assert producers(0) == [] and producers(1) == [opened]

    for i in range(5, 10):
        idem.produce(t, key=b"k%d" % i, value=b"idempotent %d" % i, partition=0, on_delivery=report)
    assert idem.flush(60) == 0
    mine = sorted((off, v) for part, off, v in acked if part == 0)
    assert mine == [(i, b"idempotent %d" % i) for i in range(10)], mine
    got = read_all(c.live_bootstrap, t, "read_uncommitted", {0: 10})
    assert sorted((off, v) for (part, off), (_, v) in got.items() if part == 0) == mine
    txn.abort_transaction(60)
