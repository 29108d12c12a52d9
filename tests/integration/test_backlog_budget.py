"""The backlog lane's byte budget (`backlog.read.max.bytes.per.second`, issue 58 goal 4): a
consumer reading history that is no longer in the broker's in-memory tail is held to the budget,
gets every record back at its offset byte for byte, and a producer writing meanwhile is not
slowed by it."""

from __future__ import annotations

import signal
import threading
import time

import helpers as h

BUDGET = 2_000_000  # bytes per second


def test_a_backlog_reader_is_held_to_the_budget_and_producers_are_not(make_own_broker, topic_name):
    b = make_own_broker(f'"backlog.read.max.bytes.per.second" = {BUDGET}\n')
    topic, live = topic_name("history"), topic_name("live")
    h.create_topic(b.bootstrap, topic, partitions=2)
    h.create_topic(b.bootstrap, live, partitions=1)
    # About 12 MB: every tenth record has a 100 KiB value.
    recs = h.sample_records(1300, seed=58, big_every=10)
    log = h.produce_all(h.producer(b.bootstrap, acks="all"), topic, recs)
    assert not log.errors
    history = sum(len(a.rec.value or b"") for a in log.acked)
    assert history > 11_000_000, history
    # After a restart nothing is in the in-memory tail: every read goes to the segment files.
    b.restart(signal.SIGTERM)

    acks: list[float] = []
    stop = threading.Event()

    def produce_meanwhile():
        p = h.producer(b.bootstrap, acks="all", linger_ms=0)
        while not stop.is_set():
            t = time.monotonic()
            p.produce(live, b"x" * 100)
            assert p.flush(30) == 0
            acks.append(time.monotonic() - t)
            time.sleep(0.01)

    writer = threading.Thread(target=produce_meanwhile, daemon=True)
    writer.start()
    started = time.monotonic()
    got = h.consume_partitions(b.bootstrap, topic, h.end_offsets_of(log.acked), timeout=120,
                               fetch_max_bytes=1_048_576, max_partition_fetch_bytes=1_048_576)
    took = time.monotonic() - started
    stop.set()
    writer.join(40)
    h.check_acked(log.acked, got, topic)
    # The budget banks a tenth of a second of its rate; the rest is paid for at the rate (the
    # same read without a budget takes well under a second here).
    assert took >= (history - BUDGET * 0.1) / BUDGET * 0.9, f"{history} bytes read in {took:.2f} s"
    assert len(acks) > 20, len(acks)
    assert max(acks) < 1.0, f"a producer's acknowledgement took {max(acks):.3f} s"
