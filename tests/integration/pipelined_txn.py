"""Pipelined transactional produces at the wire (issue 57, defect 3), shared by
tests/integration/test_kafka44_surface.py (one broker, and Apache Kafka 4.4.0) and
tests/cluster/test_transactions_cluster.py (the coordinator on another node)."""

from __future__ import annotations

import socket
import time

import kafka_wire as w

PRODUCE, INIT_PRODUCER_ID, END_TXN = 0, 22, 26

# Errors a client answers by sending the same batches again, with the pause before it (s):
# CONCURRENT_TRANSACTIONS (51) while the coordinator adds the partition, and, right after the
# topic is created, UNKNOWN_TOPIC_OR_PARTITION (3), LEADER_NOT_AVAILABLE (5) and
# NOT_LEADER_OR_FOLLOWER (6) until the broker has applied its leadership (Kafka 4.4.0 answered
# 6 on a loaded CI machine, and the pipelined second produce 45 behind it).
RETRIABLE = {51: 0.02, 3: 0.2, 5: 0.2, 6: 0.2}


def hostport(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def call(bootstrap: str, api: int, version: int, body: bytes, corr: int = 1) -> w.Reader:
    """One request with a v2 header on a connection of its own; the reader is past the
    correlation id and the response header's tags."""
    with socket.create_connection(hostport(bootstrap), timeout=10) as s:
        payload = w.request(s, w.frame(w.header_v2(api, version, corr) + body))
    r = w.Reader(payload)
    assert r.i32() == corr
    r.tags()
    return r


def retry(fn, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v is not None:
            return v
        assert time.monotonic() < deadline, what
        time.sleep(0.5)



def produce_v12(corr: int, topic: str, records: bytes, txn_id: str) -> bytes:
    part = w.i32(0) + w.compact_bytes(records) + w.NO_TAGS
    topic_data = w.compact_string(topic) + w.compact_array([part]) + w.NO_TAGS
    body = w.compact_string(txn_id) + w.i16(-1) + w.i32(30000) + w.compact_array([topic_data]) + w.NO_TAGS
    return w.frame(w.header_v2(PRODUCE, 12, corr) + body)


def parse_produce_v12(payload: bytes) -> tuple[int, int, int]:
    """-> (correlation id, error code, base offset) of the one partition."""
    r = w.Reader(payload)
    corr = r.i32()
    r.tags()
    assert r.uvarint() == 2
    r.compact_string()
    assert r.uvarint() == 2
    r.i32()
    err, base = r.i16(), r.i64()
    return corr, err, base


def pipelined_transactions(leader: str, tc: str, topic: str, txn_id: str, n: int) -> list:
    """``n`` transactions of a transactional producer on partition 0 of ``topic``: in each, two
    produces (v12, 5 records each, sequences 0 and 5) pipelined on one connection to the
    partition's ``leader``, sent again while the first is refused as retriable
    (``RETRIABLE``), as a client retries; then EndTxn (v5, commit) at the
    transaction coordinator ``tc``. Returns every pair of answers ``(corr, error, base offset)``
    and checks Kafka's one-at-a-time order: never the first appended and the second refused,
    the second appended right behind the first, every transaction's records appended."""

    def init():
        body = w.compact_string(txn_id) + w.i32(60000) + w.i64(-1) + w.i16(-1) + w.NO_TAGS
        r = call(tc, INIT_PRODUCER_ID, 5, body)
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        return (pid, epoch) if err == 0 else None
    pid, epoch = retry(init, "InitProducerId")
    results = []
    appended = 0
    with socket.create_connection(hostport(leader), timeout=30) as s:
        for txn in range(n):
            batches = [w.record_batch([w.Record(None, f"{txn}-{i}-{j}".encode(), [], int(time.time() * 1000))
                                       for j in range(5)],
                                      producer_id=pid, producer_epoch=epoch, base_sequence=5 * i,
                                      attributes=0x10)
                       for i in range(2)]
            # Both sent before either is answered (one write), as a pipelining client does.
            for attempt in range(200):
                corr = 100_000 * txn + 2 * attempt
                w.send(s, produce_v12(corr + 1, topic, batches[0], txn_id)
                       + produce_v12(corr + 2, topic, batches[1], txn_id))
                answers = [parse_produce_v12(w.recv_frame(s, timeout=30)) for _ in range(2)]
                results.append(answers)
                if answers[0][1] not in RETRIABLE:
                    break
                time.sleep(RETRIABLE[answers[0][1]])
            appended += answers[0][1] == 0

            def end():
                body = w.compact_string(txn_id) + w.i64(pid) + w.i16(epoch) + w.i8(1) + w.NO_TAGS
                r = call(tc, END_TXN, 5, body)
                r.i32()  # throttle
                err = r.i16()
                if err != 0:
                    return None
                return r.i64(), r.i16()  # transactions v2: the epoch the next transaction uses
            pid, epoch = retry(end, "EndTxn")
    broken = [a for a in results if a[0][1] == 0 and a[1][1] != 0]
    assert not broken, f"the first appended, the second refused: {broken}"
    for (_, e1, first), (_, e2, second) in results:
        if e1 == 0:
            assert second == first + 5, results
    assert appended == n, results
    return results


