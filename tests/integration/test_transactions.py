"""Transactions (KIP-98, KIP-890) with real clients on one broker: confluent-kafka and kafka-python
transactional producers committing and aborting, read back under read_committed and
read_uncommitted at their offsets byte for byte (markers take an offset each), the last stable
offset with an open transaction (ListOffsets by isolation level, consumers stopping before it),
zombie fencing, the coordinator aborting a timed-out transaction, exactly-once
consume-transform-produce across a SIGKILL of the broker, and Kafka's kafka-transactions tool
(list, describe, describe-producers, find-hanging, abort).

Tests on the ``broker`` fixture also run against Apache Kafka (FRIEDA_EXTERNAL_BOOTSTRAP); the
timeout test needs a config file and the exactly-once test a restart, so they skip there.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

import helpers as h
import txn_helpers as t

TXN_HELPERS = Path(__file__).with_name("txn_helpers.py")


def now_ms() -> int:
    return int(time.time() * 1000)


class Sent:
    """Records a transactional producer sent, with their delivery reports."""

    def __init__(self):
        self.recs: list[dict] = []

    def produce(self, p, topic: str, partition: int, key: bytes, value: bytes, headers, ts: int,
                txn: int, outcome: str):
        rec = {"partition": partition, "key": key, "value": value, "headers": headers, "ts": ts,
               "txn": txn, "outcome": outcome, "offset": None, "err": None}

        def cb(err, msg):
            if err is not None:
                rec["err"] = err
            else:
                rec["offset"] = msg.offset()
        while True:
            try:
                p.produce(topic, key=key, value=value, headers=headers, partition=partition, timestamp=ts,
                          on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
        self.recs.append(rec)
        return rec


def expect_message(m, rec, where=""):
    assert m.offset() == rec["offset"], f"{where}: offset {m.offset()} != {rec['offset']}"
    assert m.key() == rec["key"], f"{where}@{m.offset()}: key {m.key()!r} != {rec['key']!r}"
    assert m.value() == rec["value"], f"{where}@{m.offset()}: value {m.value()!r:.80} != {rec['value']!r:.80}"
    assert h.norm_headers(m.headers()) == h.norm_headers(rec["headers"]), \
        f"{where}@{m.offset()}: headers {m.headers()!r} != {rec['headers']!r}"
    assert m.timestamp() == (1, rec["ts"]), f"{where}@{m.offset()}: timestamp {m.timestamp()} != (1, {rec['ts']})"


def expect_partition(msgs: list, recs: list, where: str):
    """``msgs`` are exactly ``recs``, in this order, each at its acknowledged offset."""
    got = [m.offset() for m in msgs]
    want = [r["offset"] for r in recs]
    assert got == want, f"{where}: read offsets {got}, want {want}"
    for m, r in zip(msgs, recs):
        expect_message(m, r, where)


# ---------------------------------------------------------------------------------------------
# 1. commit / abort, read_committed vs read_uncommitted, markers, LSO with an open transaction
# ---------------------------------------------------------------------------------------------

# (outcome, {partition: records}) in order; every transaction ends with one marker in each
# partition it wrote to
PLAN = [
    ("commit", {0: 3, 1: 2, 2: 1}),
    ("abort", {0: 2, 2: 2}),
    ("commit", {1: 4}),
    ("abort", {0: 1, 1: 1, 2: 1}),
    ("commit", {0: 2, 2: 3}),
    ("commit", {0: 1}),
]


def test_commit_abort_read_committed_uncommitted_markers_and_last_stable_offset(broker, topic_name):
    """A confluent-kafka transactional producer runs PLAN over a 3-partition topic (records with
    keys, headers and producer timestamps; each aborted transaction is flushed first, so its
    records are in the log). Every delivery report names the offset the log model predicts: each
    transaction end takes one offset in each partition it wrote to. Watermarks and ListOffsets
    latest (both isolation levels) are the log end; read_committed reads exactly the committed
    records, in order, at their offsets, byte for byte, read_uncommitted every record; both
    consumers end positioned at the log end (past the last marker).

    Then a transaction of the same producer is left open on partitions 0 and 1 while a second
    transactional producer commits on partition 0 after it and a plain producer appends one
    record there: ListOffsets read_committed stops at the open transaction's first offset (LSO),
    read_uncommitted is the high watermark; a read_committed consumer reads the committed records
    before the LSO, stops there and sees nothing more for 2 s (a read_uncommitted one sees
    everything); once the first producer commits, the same consumer receives its records and the
    ones that waited behind them, and the LSO moves to the log end."""
    b = broker.bootstrap
    topic = topic_name()
    parts = [0, 1, 2]
    h.create_topic(b, topic, partitions=3)
    tid = f"tx-{topic}"
    p = t.txn_producer(b, tid)
    p.init_transactions(30)
    sent = Sent()
    base = now_ms() - 120_000
    n = 0
    for k, (outcome, per_part) in enumerate(PLAN):
        p.begin_transaction()
        for part, count in per_part.items():
            for i in range(count):
                hdrs = [("txn", b"%d" % k), ("i", b"%d" % i)] if i % 2 == 0 else None
                sent.produce(p, topic, part, b"key-%d-%d" % (part, i), b"t%d/p%d/r%d %s" % (k, part, i, b"x" * (k * 7)),
                             hdrs, base + n, k, outcome)
                n += 1
        if outcome == "commit":
            p.commit_transaction(30)
        else:
            assert p.flush(30) == 0
            p.abort_transaction(30)
        p.poll(0)
    assert p.flush(30) == 0
    assert not [r for r in sent.recs if r["err"] is not None], [r["err"] for r in sent.recs if r["err"]]

    # the log model: records, then one marker per partition the transaction wrote to
    cursor = {q: 0 for q in parts}
    want_offsets: dict[int, list[int]] = {q: [] for q in parts}
    markers: dict[int, list[int]] = {q: [] for q in parts}
    for outcome, per_part in PLAN:
        for part, count in per_part.items():
            want_offsets[part] += list(range(cursor[part], cursor[part] + count))
            cursor[part] += count
            markers[part].append(cursor[part])
            cursor[part] += 1
    for q in parts:
        got = [r["offset"] for r in sent.recs if r["partition"] == q]
        assert got == want_offsets[q], f"partition {q}: delivered at {got}, want {want_offsets[q]} (markers {markers[q]})"

    hw = dict(cursor)
    assert t.watermarks(b, topic, parts) == {q: (0, hw[q]) for q in parts}
    assert t.earliest_offsets(b, topic, parts) == {q: 0 for q in parts}
    assert t.latest_offsets(b, topic, parts, committed=False) == hw
    assert t.latest_offsets(b, topic, parts, committed=True) == hw, "no open transaction: LSO must be the HW"

    committed = {q: [r for r in sent.recs if r["partition"] == q and r["outcome"] == "commit"] for q in parts}
    everything = {q: [r for r in sent.recs if r["partition"] == q] for q in parts}
    msgs, pos = t.read_all(b, topic, parts, "read_committed")
    for q in parts:
        expect_partition(msgs[q], committed[q], f"read_committed {topic}[{q}]")
    assert pos == hw, f"read_committed consumer positions {pos} at EOF, want the log end {hw}"
    msgs, pos = t.read_all(b, topic, parts, "read_uncommitted")
    for q in parts:
        expect_partition(msgs[q], everything[q], f"read_uncommitted {topic}[{q}]")
    assert pos == hw, f"read_uncommitted consumer positions {pos} at EOF, want the log end {hw}"
    # the committed records' offsets are not contiguous: markers (and aborted records) between
    c0 = [r["offset"] for r in committed[0]]
    assert c0 == [0, 1, 2, 9, 10, 12], c0

    # ---- an open transaction holds the LSO ----
    p.begin_transaction()
    open_recs = [sent.produce(p, topic, 0, b"open-0-%d" % i, b"open value %d" % i, [("open", b"1")], base + 1000 + i,
                              99, "commit") for i in range(3)]
    open_recs.append(sent.produce(p, topic, 1, b"open-1", b"open value p1", None, base + 1100, 99, "commit"))
    assert p.flush(30) == 0
    assert all(r["err"] is None for r in open_recs), [r["err"] for r in open_recs]
    lso0, lso1 = hw[0], hw[1]
    assert [r["offset"] for r in open_recs] == [lso0, lso0 + 1, lso0 + 2, lso1]

    q = t.txn_producer(b, f"tx2-{topic}")
    q.init_transactions(30)
    q.begin_transaction()
    behind = [sent.produce(q, topic, 0, b"behind-%d" % i, b"committed behind the open one %d" % i, None,
                           base + 2000 + i, 100, "commit") for i in range(2)]
    q.commit_transaction(30)
    plain = h.producer(b, acks="all")
    plain_rec = sent.produce(plain, topic, 0, b"plain", b"non-transactional", [("plain", b"")], base + 3000, -1, "plain")
    assert plain.flush(30) == 0
    assert [r["offset"] for r in behind] == [lso0 + 3, lso0 + 4], [r["offset"] for r in behind]
    assert plain_rec["offset"] == lso0 + 6, plain_rec  # after Q's marker at lso0 + 5
    hw_open = {0: lso0 + 7, 1: lso1 + 1, 2: hw[2]}

    assert t.watermarks(b, topic, parts) == {q_: (0, hw_open[q_]) for q_ in parts}
    assert t.latest_offsets(b, topic, parts, committed=False) == hw_open
    assert t.latest_offsets(b, topic, parts, committed=True) == {0: lso0, 1: lso1, 2: hw[2]}, \
        "read_committed latest must stop at the open transaction's first offset"
    assert t.watermarks(b, topic, parts, "read_committed") == {0: (0, lso0), 1: (0, lso1), 2: (0, hw[2])}

    rc = t.Reader(b, topic, parts, "read_committed")
    ru = t.Reader(b, topic, parts, "read_uncommitted")
    try:
        got = rc.drain(30)
        for q_ in parts:
            expect_partition(got[q_], committed[q_], f"read_committed with an open transaction {topic}[{q_}]")
        assert rc.quiet(2.0) == [], "read_committed consumer read past the last stable offset"
        got = ru.drain(30)
        expect_partition(got[0], everything[0] + open_recs[:3] + behind + [plain_rec], f"read_uncommitted {topic}[0]")
        expect_partition(got[1], everything[1] + open_recs[3:], f"read_uncommitted {topic}[1]")

        p.commit_transaction(30)
        final_hw = {0: hw_open[0] + 1, 1: hw_open[1] + 1, 2: hw[2]}
        got = rc.drain(30, need={0: plain_rec["offset"], 1: open_recs[3]["offset"]}, eof=[0, 1])
        expect_partition(got[0], open_recs[:3] + behind + [plain_rec], f"read_committed after the commit {topic}[0]")
        expect_partition(got[1], open_recs[3:], f"read_committed after the commit {topic}[1]")
        assert got[2] == []
        assert rc.positions() == final_hw, rc.positions()
        assert t.latest_offsets(b, topic, parts, committed=True) == final_hw
        assert t.latest_offsets(b, topic, parts, committed=False) == final_hw
        assert t.watermarks(b, topic, parts) == {q_: (0, final_hw[q_]) for q_ in parts}
        assert t.watermarks(b, topic, parts, "read_committed") == {q_: (0, final_hw[q_]) for q_ in parts}
    finally:
        rc.close()
        ru.close()


# ---------------------------------------------------------------------------------------------
# 2. zombie fencing
# ---------------------------------------------------------------------------------------------

def test_zombie_fenced_by_a_new_producer_with_the_same_transactional_id(broker, topic_name):
    """Producer A (transactional.id X) begins a transaction and writes 3 records to partition 0
    (flushed: offsets 0-2). Producer B with the same id calls init_transactions: the coordinator
    aborts A's transaction (abort marker at 3) and fences A. A's next record is refused and its
    commit raises a fatal error (fenced); nothing of A's after the fence reaches the log. B
    commits 2 records (offsets 4 and 5, marker 6). read_committed reads exactly B's records,
    read_uncommitted A's 3 and B's 2; LSO = HW = 7."""
    b = broker.bootstrap
    topic = topic_name()
    h.create_topic(b, topic, partitions=1)
    tid = f"tx-{topic}"
    base = now_ms() - 60_000
    sent = Sent()
    a = t.txn_producer(b, tid)
    a.init_transactions(30)
    a.begin_transaction()
    zombie = [sent.produce(a, topic, 0, b"a-%d" % i, b"zombie %d" % i, [("from", b"A")], base + i, 0, "abort")
              for i in range(3)]
    assert a.flush(30) == 0
    assert [r["offset"] for r in zombie] == [0, 1, 2], zombie

    bp = t.txn_producer(b, tid)
    bp.init_transactions(60)  # aborts A's open transaction first

    late = sent.produce(a, topic, 0, b"a-late", b"zombie after the fence", None, base + 10, 0, "abort")
    # librdkafka raises the fatal error from flush() (the produce was refused) or commit
    with pytest.raises(KafkaException) as ei:
        a.flush(30)
        a.commit_transaction(30)
    err = t.error_of(ei.value)
    assert err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), \
        f"A's flush/commit after B's init_transactions: {err} (fatal={err.fatal()}), want a fatal fenced error"
    with pytest.raises(KafkaException) as ei:
        a.commit_transaction(30)
    assert t.error_of(ei.value).fatal(), f"A's commit after the fence: {t.error_of(ei.value)}"
    assert late["offset"] is None or late["offset"] < 0, f"the fenced producer's record was appended: {late}"
    assert late["err"] is not None, "no delivery error for the fenced producer's record"

    bp.begin_transaction()
    good = [sent.produce(bp, topic, 0, b"b-%d" % i, b"from B %d" % i, [("from", b"B")], base + 20 + i, 1, "commit")
            for i in range(2)]
    bp.commit_transaction(30)
    assert [r["offset"] for r in good] == [4, 5], f"B's records at {[r['offset'] for r in good]}, want [4, 5] (A's abort marker at 3)"

    assert t.watermarks(b, topic, [0]) == {0: (0, 7)}
    assert t.latest_offsets(b, topic, [0], committed=True) == {0: 7}
    msgs, pos = t.read_all(b, topic, [0], "read_committed")
    expect_partition(msgs[0], good, "read_committed")
    assert pos == {0: 7}
    msgs, pos = t.read_all(b, topic, [0], "read_uncommitted")
    expect_partition(msgs[0], zombie + good, "read_uncommitted")
    assert pos == {0: 7}
    # the fenced producer stays fenced
    with pytest.raises(KafkaException) as ei:
        a.begin_transaction()
    assert t.error_of(ei.value).fatal() or t.error_of(ei.value).code() == KafkaError._FENCED, t.error_of(ei.value)


# ---------------------------------------------------------------------------------------------
# 3. the coordinator aborts a transaction that outlives transaction.timeout.ms
# ---------------------------------------------------------------------------------------------

TIMEOUT_CONFIG = '"transaction.abort.timed.out.transaction.cleanup.interval.ms" = 500\n'


def test_idle_transaction_aborted_after_its_timeout(make_own_broker, topic_name):
    """Broker with transaction.abort.timed.out.transaction.cleanup.interval.ms = 500. A producer
    with transaction.timeout.ms = 6000 writes 4 records to partition 0 and 2 to partition 1
    (flushed), then stays idle: read_committed latest stays at 0 while it is open, and within
    15 s the broker aborts it (not before ~6 s): abort markers at 4 and 2, read_committed latest
    passes them (5 and 3), a read_committed consumer reads nothing and ends at the log end, a
    read_uncommitted one reads the 6 records. The producer's late commit fails; a new producer
    with the same transactional.id commits normally after the markers."""
    broker = make_own_broker(TIMEOUT_CONFIG)
    b = broker.bootstrap
    topic = topic_name()
    h.create_topic(b, topic, partitions=2)
    tid = f"tx-{topic}"
    base = now_ms() - 60_000
    sent = Sent()
    # 6 s, not less: on a loaded machine the two offset queries below took over 3 s (CI, 2026-12-05)
    p = t.txn_producer(b, tid, transaction_timeout_ms=6000)
    p.init_transactions(30)
    p.begin_transaction()
    t0 = time.monotonic()
    recs = [sent.produce(p, topic, 0, b"k%d" % i, b"timed out %d" % i, [("i", b"%d" % i)], base + i, 0, "abort")
            for i in range(4)]
    recs += [sent.produce(p, topic, 1, b"k%d" % i, b"timed out p1 %d" % i, None, base + 10 + i, 0, "abort")
             for i in range(2)]
    assert p.flush(30) == 0
    assert [r["offset"] for r in recs] == [0, 1, 2, 3, 0, 1], recs
    flushed = time.monotonic()
    assert t.latest_offsets(b, topic, [0, 1], committed=True) == {0: 0, 1: 0}
    assert t.latest_offsets(b, topic, [0, 1], committed=False) == {0: 4, 1: 2}

    def aborted():
        return t.latest_offsets(b, topic, [0, 1], committed=True) == {0: 5, 1: 3}
    h.wait_until("the broker to abort the timed-out transaction (read_committed latest past its markers)",
                 aborted, timeout=15 - (flushed - t0), every=0.25)
    took = time.monotonic() - t0
    assert took >= 5.5, f"transaction aborted {took:.1f}s after it began, before its 6 s timeout"
    assert t.latest_offsets(b, topic, [0, 1], committed=False) == {0: 5, 1: 3}
    msgs, pos = t.read_all(b, topic, [0, 1], "read_committed")
    assert msgs == {0: [], 1: []}, {q: [m.offset() for m in ms] for q, ms in msgs.items()}
    assert pos == {0: 5, 1: 3}
    msgs, pos = t.read_all(b, topic, [0, 1], "read_uncommitted")
    expect_partition(msgs[0], recs[:4], "read_uncommitted [0]")
    expect_partition(msgs[1], recs[4:], "read_uncommitted [1]")

    with pytest.raises(KafkaException) as ei:
        p.commit_transaction(30)
    print("late commit:", t.error_of(ei.value))

    p2 = t.txn_producer(b, tid)
    p2.init_transactions(30)
    p2.begin_transaction()
    ok = sent.produce(p2, topic, 0, b"after", b"committed after the timeout", None, base + 100, 1, "commit")
    p2.commit_transaction(30)
    assert ok["offset"] == 5, ok
    msgs, pos = t.read_all(b, topic, [0, 1], "read_committed")
    expect_partition(msgs[0], [ok], "read_committed [0]")
    assert msgs[1] == [] and pos == {0: 7, 1: 3}, pos


# ---------------------------------------------------------------------------------------------
# 5. kafka-python's transactional producer
# ---------------------------------------------------------------------------------------------

def _committed_offsets(bootstrap: str, group: str, topic: str, partitions, a=None) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions
    a = a or t.admin(bootstrap)
    fut = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, q) for q in partitions])],
        require_stable=True)
    res = fut[group].result(timeout=20)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def test_kafka_python_transactional_producer_commit_abort_and_offsets(broker, topic_name):
    """kafka-python (>= 2.1; transactional_id) runs four transactions over a 2-partition topic:
    commit, abort (flushed first), commit, abort, each also sending an offset of a source topic
    for a group with send_offsets_to_transaction. Every record is acknowledged at the offset the
    log model predicts (markers take one), the group's committed offset is the one of the last
    committed transaction (5, 5, 7, 7 after each), and confluent-kafka read_committed reads
    exactly the committed records byte for byte (kafka-python read_committed the same values),
    read_uncommitted all of them."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    b = broker.bootstrap
    topic, src = topic_name(), topic_name("src")
    h.create_topic(b, topic, partitions=2)
    h.create_topic(b, src, partitions=1)
    group = f"g-{topic}"
    tid = f"tx-{topic}"
    base = now_ms() - 60_000
    p = KafkaProducer(bootstrap_servers=b, transactional_id=tid, linger_ms=5, request_timeout_ms=30000)
    try:
        p.init_transactions()
        plan = [("commit", {0: 3, 1: 2}, 5), ("abort", {0: 2}, 9), ("commit", {1: 1, 0: 1}, 7),
                ("abort", {0: 1, 1: 2}, 11)]
        recs = []
        committed_after = []
        for k, (outcome, per_part, src_offset) in enumerate(plan):
            p.begin_transaction()
            futs = []
            for part, count in per_part.items():
                for i in range(count):
                    rec = {"partition": part, "key": b"kp-%d-%d-%d" % (k, part, i),
                           "value": b"kafka-python txn %d p%d r%d" % (k, part, i),
                           "headers": [("txn", b"%d" % k)] if i % 2 else None,
                           "ts": base + 10 * k + i, "outcome": outcome}
                    futs.append((rec, p.send(topic, key=rec["key"], value=rec["value"], headers=rec["headers"],
                                             partition=part, timestamp_ms=rec["ts"])))
                    recs.append(rec)
            p.send_offsets_to_transaction({KTP(src, 0): OffsetAndMetadata(src_offset, "", -1)}, group)
            p.flush()
            for rec, f in futs:
                rec["offset"] = f.get(timeout=30).offset
            if outcome == "commit":
                p.commit_transaction()
            else:
                p.abort_transaction()
            committed_after.append(_committed_offsets(b, group, src, [0])[0])
    finally:
        p.close(timeout=10)

    assert committed_after == [5, 5, 7, 7], f"group offsets after each transaction {committed_after}"
    cursor = {0: 0, 1: 0}
    want = []
    for _, per_part, _ in plan:
        for part, count in per_part.items():
            want += [(part, o) for o in range(cursor[part], cursor[part] + count)]
            cursor[part] += count + 1
    got = [(r["partition"], r["offset"]) for r in recs]
    assert got == want, f"acknowledged at {got}, want {want}"
    hw = cursor
    assert t.watermarks(b, topic, [0, 1]) == {0: (0, hw[0]), 1: (0, hw[1])}
    assert t.latest_offsets(b, topic, [0, 1], committed=True) == hw

    committed = {q: [r for r in recs if r["partition"] == q and r["outcome"] == "commit"] for q in (0, 1)}
    msgs, pos = t.read_all(b, topic, [0, 1], "read_committed")
    for q in (0, 1):
        expect_partition(msgs[q], committed[q], f"read_committed [{q}]")
    assert pos == hw
    msgs, pos = t.read_all(b, topic, [0, 1], "read_uncommitted")
    for q in (0, 1):
        expect_partition(msgs[q], [r for r in recs if r["partition"] == q], f"read_uncommitted [{q}]")

    kc = KafkaConsumer(bootstrap_servers=b, group_id=None, enable_auto_commit=False,
                       isolation_level="read_committed", auto_offset_reset="earliest")
    try:
        tps = [KTP(topic, q) for q in (0, 1)]
        kc.assign(tps)
        kc.seek_to_beginning()
        seen: dict[int, list] = {0: [], 1: []}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and {q: kc.position(KTP(topic, q)) for q in (0, 1)} != hw:
            for tp, ms in kc.poll(timeout_ms=200).items():
                seen[tp.partition] += [(m.offset, m.key, m.value, m.timestamp) for m in ms]
        for q in (0, 1):
            assert seen[q] == [(r["offset"], r["key"], r["value"], r["ts"]) for r in committed[q]], \
                f"kafka-python read_committed [{q}]: {seen[q]}"
        assert {q: kc.position(KTP(topic, q)) for q in (0, 1)} == hw
    finally:
        kc.close()


def test_offsets_for_a_partition_that_does_not_exist_are_refused(broker, topic_name):
    """send_offsets_to_transaction for partition 5 of a 1-partition topic (and, with it, a real
    partition): the broker answers UNKNOWN_TOPIC_OR_PARTITION for the missing one, as Kafka's
    `handleTxnOffsetCommitRequest` does, which librdkafka retries until its timeout and then
    reports; the producer aborts, and the group has no committed offset for either partition. A
    later transaction with only the real partition commits its offset."""
    b = broker.bootstrap
    topic, src = topic_name(), topic_name("src")
    h.create_topic(b, topic, partitions=1)
    h.create_topic(b, src, partitions=1)
    group = f"g-{topic}"
    p = t.txn_producer(b, f"tx-{topic}")
    c = h.consumer(b, **{"group.id": group})  # not subscribed: its group metadata only
    group_metadata = c.consumer_group_metadata()
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"in an aborted transaction", partition=0)
    p.flush(30)
    meta = p.list_topics(timeout=10)
    assert len(meta.topics[src].partitions) == 1
    with pytest.raises(KafkaException) as err:
        p.send_offsets_to_transaction([TopicPartition(src, 0, 3), TopicPartition(src, 5, 4)],
                                      group_metadata, 5)
    assert "UNKNOWN_TOPIC_OR_PART" in str(err.value) or "Unknown topic or partition" in str(err.value), err.value
    p.abort_transaction(30)
    assert _committed_offsets(b, group, src, [0, 5]) == {0: -1001, 5: -1001}

    p.begin_transaction()
    p.produce(topic, value=b"in a committed transaction", partition=0)
    p.send_offsets_to_transaction([TopicPartition(src, 0, 7)], group_metadata, 30)
    p.commit_transaction(30)
    c.close()
    assert _committed_offsets(b, group, src, [0]) == {0: 7}


# ---------------------------------------------------------------------------------------------
# 6. Kafka's kafka-transactions tool
# ---------------------------------------------------------------------------------------------

def test_kafka_transactions_tool_list_describe_describe_producers_find_hanging_abort(broker, topic_name):
    """With one transaction left open by a confluent-kafka producer (transaction.timeout.ms
    45000) on partitions 0 (1 record, offset 0) and 1 (3 records after a committed transaction
    of 2 and its marker: offsets 3-5), Kafka 4.4.0's kafka-transactions tool shows:
    `list` its id as Ongoing on this broker; `describe` the same producer id, epoch 0, Ongoing,
    timeout 45000, both partitions; `describe-producers` on partition 1 that producer with last
    sequence 4, the last record's timestamp and current transaction start offset 3 (0 on
    partition 0); `find-hanging` (by broker and by topic, limit 0 minutes) none, since its
    coordinator knows it. `abort --topic T --partition 1 --start-offset 3` then aborts it there:
    describe-producers shows no open transaction (None), read_committed latest of partition 1
    moves from 3 to the log end 7 (abort marker at 6) while partition 0 stays at 0, and a
    read_committed consumer reads the 2 committed records of partition 1 and ends at 7. The
    producer's own abort then writes its markers to both partitions (LSO = HW = 2 and 8)."""
    b = broker.bootstrap
    cp = t.java_classpath()
    topic = topic_name()
    h.create_topic(b, topic, partitions=2)
    tid = f"tx-{topic}"
    base = now_ms() - 60_000
    sent = Sent()
    p = t.txn_producer(b, tid, transaction_timeout_ms=45000)
    p.init_transactions(30)
    p.begin_transaction()
    first = [sent.produce(p, topic, 1, b"c%d" % i, b"committed %d" % i, None, base + i, 0, "commit") for i in range(2)]
    p.commit_transaction(30)
    t_begin = now_ms()
    p.begin_transaction()
    open1 = [sent.produce(p, topic, 1, b"o%d" % i, b"open %d" % i, None, base + 10 + i, 1, "abort") for i in range(3)]
    open0 = [sent.produce(p, topic, 0, b"o0", b"open p0", None, base + 20, 1, "abort")]
    assert p.flush(30) == 0
    assert [r["offset"] for r in first + open1 + open0] == [0, 1, 3, 4, 5, 0]
    assert t.latest_offsets(b, topic, [0, 1], committed=True) == {0: 0, 1: 3}

    node_ids = {bk.id for bk in t.admin(b).list_topics(timeout=10).brokers.values()}

    rows = [r for r in t.parse_table(t.txn_tool(cp, b, "list")) if r["TransactionalId"] == tid]
    assert len(rows) == 1, rows
    assert rows[0]["TransactionState"] == "Ongoing", rows
    coordinator = int(rows[0]["Coordinator"])
    assert coordinator in node_ids, (rows, node_ids)
    pid = int(rows[0]["ProducerId"])
    assert pid >= 0

    rows = t.parse_table(t.txn_tool(cp, b, "describe", "--transactional-id", tid))
    assert len(rows) == 1, rows
    d = rows[0]
    assert d["TransactionalId"] == tid and int(d["ProducerId"]) == pid, d
    assert int(d["CoordinatorId"]) == coordinator, (d, coordinator)
    assert d["ProducerEpoch"] == "0", d
    assert d["TransactionState"] == "Ongoing", d
    assert d["TransactionTimeoutMs"] == "45000", d
    assert sorted(d["TopicPartitions"].split(",")) == [f"{topic}-0", f"{topic}-1"], d
    start_ms = int(d["CurrentTransactionStartTimeMs"])
    assert t_begin - 1000 <= start_ms <= now_ms(), (d, t_begin)
    assert int(d["TransactionDurationMs"]) >= 0, d

    def producers(part: int) -> list[dict]:
        return t.parse_table(t.txn_tool(cp, b, "describe-producers", "--topic", topic, "--partition", str(part)))

    rows = producers(1)
    assert len(rows) == 1, rows
    r1 = rows[0]
    assert int(r1["ProducerId"]) == pid and r1["ProducerEpoch"] == "0", r1
    assert r1["LastSequence"] == "4", r1
    # checked at the end (so that a wrong timestamp does not hide what follows): Kafka reports
    # the max timestamp of the producer's last batch, here the producer-set CreateTime
    last_ts = int(r1["LastTimestamp"])
    assert r1["CurrentTransactionStartOffset"] == "3", r1
    rows = producers(0)
    assert len(rows) == 1 and int(rows[0]["ProducerId"]) == pid, rows
    assert rows[0]["CurrentTransactionStartOffset"] == "0" and rows[0]["LastSequence"] == "0", rows

    # find-hanging with a 0-minute limit: both partitions' open transaction is a candidate
    # (DescribeProducers), its producer id maps to the transactional id (ListTransactions filtered
    # by producer id, KIP-664) and its coordinator lists both partitions (DescribeTransactions): not
    # hanging, so only the header is printed
    for where in (["--broker-id", str(min(node_ids))], ["--topic", topic]):
        out = t.txn_tool(cp, b, "find-hanging", *where, "--max-transaction-timeout", "0")
        lines = [l for l in out.splitlines() if l.strip()]
        assert lines and lines[0].split()[:3] == ["Topic", "Partition", "ProducerId"], out
        assert not any(topic in l for l in lines[1:]), out

    t.txn_tool(cp, b, "abort", "--topic", topic, "--partition", "1", "--start-offset", "3")

    rows = producers(1)
    assert len(rows) == 1 and int(rows[0]["ProducerId"]) == pid, rows
    assert rows[0]["CurrentTransactionStartOffset"] in ("None", "-1"), rows
    assert rows[0]["LastSequence"] == "4", rows
    assert t.watermarks(b, topic, [0, 1]) == {0: (0, 1), 1: (0, 7)}
    assert t.latest_offsets(b, topic, [0, 1], committed=True) == {0: 0, 1: 7}
    msgs, pos = t.read_all(b, topic, [1], "read_committed")
    expect_partition(msgs[1], first, "read_committed [1] after the tool's abort")
    assert pos == {1: 7}
    msgs, pos = t.read_all(b, topic, [1], "read_uncommitted")
    expect_partition(msgs[1], first + open1, "read_uncommitted [1]")
    # partition 0 is still in the open transaction
    rows = producers(0)
    assert rows[0]["CurrentTransactionStartOffset"] == "0", rows

    # the producer ends its transaction: partition 0 is aborted too
    p.abort_transaction(30)
    lat = t.latest_offsets(b, topic, [0, 1], committed=True)
    assert lat == t.latest_offsets(b, topic, [0, 1], committed=False), lat
    # its abort marker goes to both partitions (on 1 after the tool's marker): 0 -> 2, 1 -> 8
    assert lat == {0: 2, 1: 8}, lat
    msgs, pos = t.read_all(b, topic, [0], "read_committed")
    assert msgs[0] == [] and pos == {0: 2}
    assert last_ts == open1[-1]["ts"], \
        f"describe-producers LastTimestamp {last_ts}, want the last batch's max timestamp {open1[-1]['ts']}"


# ---------------------------------------------------------------------------------------------
# 4. exactly-once consume-transform-produce across a SIGKILL of the broker
# ---------------------------------------------------------------------------------------------

def check_exactly_once_output(b: str, dst: str, parts, inputs: dict) -> dict:
    """The eos-worker's output topic ``dst`` holds, read with read_committed, per partition
    the transformed ``inputs`` ({partition: [(key, value)]}) in input order, each once, with
    header src = partition:offset; no transaction is left open (LSO = high watermark). Returns
    the records read, by partition."""
    hw = {q: hi for q, (_, hi) in t.watermarks(b, dst, parts).items()}
    assert t.latest_offsets(b, dst, parts, committed=True) == hw, "an output transaction is still open"
    msgs, pos = t.read_all(b, dst, parts, "read_committed", timeout=60)
    assert pos == hw
    problems = []
    for q in parts:
        got = [(m.key(), m.value(), h.norm_headers(m.headers())) for m in msgs[q]]
        want = [(k, b"out:" + v, [("src", b"%d:%d" % (q, o))]) for o, (k, v) in enumerate(inputs[q])]
        if got != want:
            srcs = collections.Counter(dict(hd).get("src") for _, _, hd in got)
            dups = sorted(s for s, c in srcs.items() if c > 1)
            missing = [o for o in range(len(inputs[q])) if srcs.get(b"%d:%d" % (q, o), 0) == 0]
            problems.append(f"output partition {q}: {len(got)} records for {len(inputs[q])} inputs, "
                            f"{len(dups)} duplicated (e.g. {dups[:5]}), {len(missing)} missing (e.g. {missing[:5]})"
                            + ("" if dups or missing else ", order or content differs"))
    assert not problems, problems
    return msgs


class EosWorker:
    """The eos-worker process, restarted (at most MAX_RESTARTS times) when its watchdog made it
    exit with status 3 (a librdkafka call hung; see txn_helpers.py), as a supervisor would."""

    MAX_RESTARTS = 3

    def __init__(self, tmp: Path, bootstrap: str, group: str, src: str, dst: str, tid: str, batch: int):
        self.events = tmp / "eos-worker.events"
        self.events.touch()
        self.stderr_path = tmp / "eos-worker.stderr"
        self.argv = [sys.executable, str(TXN_HELPERS), "eos-worker", bootstrap, group, src, dst, tid,
                     str(self.events), str(batch)]
        self.restarts = 0
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "w"))

    def supervise(self):
        """Restarts a worker that exited with status 3; fails on any other exit."""
        rc = self.proc.poll()
        if rc is None:
            return
        assert rc == 3 and self.restarts < self.MAX_RESTARTS, \
            f"worker exited {rc} after {self.restarts} restarts: {self.stderr_path.read_text()[-3000:]}"
        self.restarts += 1
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "a"))

    def lines(self) -> list[list[str]]:
        return [l.split(" ") for l in self.events.read_text().splitlines() if l.strip()]

    def committed_records(self) -> int:
        return sum(int(l[1]) for l in self.lines() if l[0] == "C")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)  # its Python stacks to its stderr, for the record
            time.sleep(0.3)
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


@pytest.mark.timeout(300)
def test_exactly_once_consume_transform_produce_across_a_broker_sigkill(own_broker, topic_name, tmp_path):
    """2000 records (3 partitions) are processed by a worker process (txn_helpers.py
    eos-worker): a group consumer with isolation.level=read_committed and manual commits, a
    transactional producer writing ``out:<value>`` (same key and partition, header src =
    partition:offset) and sending the consumed offsets with send_offsets_to_transaction, one
    transaction per batch of at most 20 records. Once a quarter is committed, the broker is
    SIGKILLed and restarted; the worker recovers (aborts on abortable errors, re-creates its
    producer and consumer on abortable or fatal ones; a process whose librdkafka call hung is
    restarted, see EosWorker). At the end the group's committed offsets
    are the input's end offsets, and the output read with read_committed holds every input record
    exactly once: per partition the transformed input in input order, nothing missing, no
    duplicate; its LSO is its high watermark."""
    broker = own_broker
    b = broker.bootstrap
    src, dst = topic_name("in"), topic_name("out")
    parts = [0, 1, 2]
    h.create_topic(b, src, partitions=3)
    h.create_topic(b, dst, partitions=3)
    n = 2000
    inputs = {q: [] for q in parts}
    p = h.producer(b, enable_idempotence=True, acks="all")
    for i in range(n):
        key, value = b"k%05d" % i, b"in-%05d-" % i + bytes([i % 256]) * (i % 7)
        while True:
            try:
                p.produce(src, key=key, value=value, partition=i % 3)
                break
            except BufferError:
                p.poll(0.1)
        inputs[i % 3].append((key, value))
    assert p.flush(60) == 0
    ends = {q: len(inputs[q]) for q in parts}
    assert t.watermarks(b, src, parts) == {q: (0, ends[q]) for q in parts}

    group, tid = f"g-{src}", f"eos-{src}"
    w = EosWorker(tmp_path, b, group, src, dst, tid, batch=20)
    try:
        h.wait_until("the worker to commit a quarter of the input", lambda: w.committed_records() >= n // 4, 90,
                     every=0.05)
        before = w.committed_records()
        assert before < n, f"the worker committed {before} of {n} records before the kill: nothing left to test"
        w.supervise()
        broker.restart(signal.SIGKILL)

        probe = t.admin(b)  # one client for the whole wait (destroying one with a request pending is unsafe)

        def done():
            w.supervise()
            try:
                return _committed_offsets(b, group, src, parts, probe) == ends
            except Exception:  # noqa: BLE001  the broker restarting: not yet
                return False
        h.wait_until("the group's committed offsets to reach the input's end offsets", done, 120, every=0.5)
        w.supervise()
    finally:
        rc = w.stop()
        print("worker restarts (watchdog):", w.restarts, "events:", [l for l in w.lines() if l[0] not in "BOTC"])
        print("worker stderr tail:", w.stderr_path.read_text()[-2000:])
    assert rc == 0, f"worker exit status {rc}"
    assert _committed_offsets(b, group, src, parts) == ends

    msgs = check_exactly_once_output(b, dst, parts, inputs)
    all_msgs, _ = t.read_all(b, dst, parts, "read_uncommitted", timeout=60)
    print("output records in the log (aborted included):", sum(len(v) for v in all_msgs.values()),
          "committed:", sum(len(v) for v in msgs.values()), "committed before the kill:", before)
