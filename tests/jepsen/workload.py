"""The client processes of the Jepsen-style workload; each writes its own history file (see
history.py). Run as ``python workload.py ROLE CONFIG_JSON``; every role stops by itself:

    producer   an idempotent acks=all confluent-kafka producer appending unique integers to
               seeded-random partitions at ``rate``/s for ``secs`` seconds, then flushing (at most
               ``flush_secs``); what is still unacknowledged then is recorded as info. Given
               ``healed_file``, it goes on past ``secs`` until ``tail_secs`` after the nemesis
               healed the cluster (see ``LoadWindow``). With
               ``value_bytes`` [lo, hi] each value is padded to a seeded size in that range (the
               ``tiered`` kind: MB/s of data), with filler derived from the value itself so a
               reader can tell a corrupted record (see ``encode_value``).
    txn-producer  a transactional producer (transactional.id ``jepsen-<proc>``): transactions of
               1-4 unique integers to seeded-random partitions at ``rate`` records/s, each
               committed or (one in four) aborted; every record's send and acknowledgement and
               every transaction's outcome (ok: committed, fail: aborted, info: unknown) are
               recorded. A fatal error replaces the producer (the same transactional id fences
               the old one and completes or aborts what it left open).
    assign     a consumer that assign()s partitions with explicit positions (its own group id, for
               its commits), polls, commits every few polls, and now and then re-assigns a seeded
               random subset (keeping its position on the partitions it keeps). With ``rewind``
               (a probability) each re-assignment also sends a seeded subset of its partitions
               back to offset 0, so history is read (from the object store, on a tiered topic)
               while the run goes on.
    subscribe  a consumer in the shared group ``group`` (subscribe(), eager rebalances recorded by
               callbacks), committing synchronously what each poll returned; now and then it
               fetches the group's committed offsets (an observation for the checker).
    final      after the run: reads every partition from offset 0 up to its high watermark (asked
               of the leader, uncached) by assignment without a group, then fetches the committed
               offsets of the ``groups`` given. A partition whose log start is above 0 (asked with
               the watermarks, or an offset-out-of-range answer on the way) is recorded
               (``log-start``) and read from its log start.

The config is a JSON object: bootstrap, topic, partitions, out (history dir), proc (name), secs,
seed, and per role: index, rate, flush_secs, message_timeout_ms, value_bytes, healed_file,
tail_secs, group, groups, read_secs, rewind.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history import HistoryWriter  # noqa: E402

# librdkafka's warnings too (offset resets, truncation detected): they explain a consumer's jumps
LOG_LEVEL = 4
VALUE_STRIDE = 10_000_000


def filler(value: int, n: int) -> bytes:
    """``n`` bytes of padding derived from ``value`` (its decimal text and a dot, repeated)."""
    unit = f"{value}.".encode()
    return (unit * (n // len(unit) + 1))[:n]


def encode_value(value: int, size: int = 0) -> bytes:
    """The record value of ``value``: its decimal text, padded to ``size`` bytes (when larger)
    with a space and ``filler(value, ...)``."""
    head = str(value).encode()
    if size <= len(head) + 1:
        return head
    return head + b" " + filler(value, size - len(head) - 1)


def parse_value(raw):
    """The unique integer of a record value (``encode_value``'s); anything else, a padding that
    is not the value's own filler included, comes back as a "?..." string, which the checker
    reports as a phantom (a record nobody wrote)."""
    try:
        head, sep, pad = raw.partition(b" ")
        value = int(head.decode())
        if sep and pad != filler(value, len(pad)):
            return f"?corrupt:{value}:" + repr(raw[:40])
        return value
    except (AttributeError, ValueError, UnicodeDecodeError):
        return "?" + repr(raw)[:60]  # a record nobody wrote: the checker reports it


def err_name(err) -> str:
    if isinstance(err, KafkaException):
        err = err.args[0] if err.args else err
    if isinstance(err, KafkaError):
        return f"{err.name()}: {err.str()}"
    return repr(err)


# ---------------------------------------------------------------- producer

class LoadWindow:
    """When a producer stops: at ``secs`` after its start, and, given ``healed_file`` (written by
    the runner, holding the ``time.monotonic()`` of the heal), not before ``tail_secs`` (default
    3) after the nemesis healed the cluster: every run ends with load on a whole cluster, so a
    cluster that does not recover shows as no progress after the heal (the runner's
    ``after_heal`` counts), however long the faults took on a slow machine. At most
    ``MAX_PAST_SECS`` past ``secs`` (a runner that never heals)."""

    MAX_PAST_SECS = 75

    def __init__(self, cfg: dict, start: float):
        self.deadline = start + cfg["secs"]
        self.healed_file = Path(cfg["healed_file"]) if cfg.get("healed_file") else None
        self.tail = float(cfg.get("tail_secs", 3))
        self.healed_at: float | None = None

    def open(self) -> bool:
        now = time.monotonic()
        if now < self.deadline:
            return True
        if self.healed_file is None or now >= self.deadline + self.MAX_PAST_SECS:
            return False
        if self.healed_at is None:
            try:
                self.healed_at = float(self.healed_file.read_text())
            except (OSError, ValueError):
                return True  # not healed yet (or the runner is writing it)
        return now < self.healed_at + self.tail


def run_producer(cfg: dict) -> None:
    h = HistoryWriter(Path(cfg["out"]) / f"{cfg['proc']}.jsonl", cfg["proc"])
    rnd = random.Random(cfg["seed"])
    topic, nparts, rate = cfg["topic"], cfg["partitions"], cfg.get("rate", 100)
    conf = {"bootstrap.servers": cfg["bootstrap"], "log_level": LOG_LEVEL, "enable.idempotence": True,
            "acks": "all", "linger.ms": 5, "message.timeout.ms": cfg.get("message_timeout_ms", 30000),
            "client.id": cfg["proc"]}
    if os.environ.get("JEPSEN_RDKAFKA_DEBUG"):
        # e.g. "eos,msg,protocol": librdkafka's own account of retries and epoch bumps (stderr)
        conf.update({"debug": os.environ["JEPSEN_RDKAFKA_DEBUG"], "log_level": 7})
    pending: dict[int, int] = {}  # value -> partition
    # padded values (the tiered kind): sizes from their own stream, so the partitions are the same
    value_bytes = cfg.get("value_bytes")
    sizes = random.Random(cfg["seed"] * 7 + 1)

    def on_delivery(part: int, value: int):
        def cb(err, msg):
            pending.pop(value, None)
            if err is None:
                h.write("ok", "send", part=msg.partition(), value=value, offset=msg.offset())
            else:
                # an idempotent producer's failed record may still be stored: unknown, not failed
                h.write("info", "send", part=part, value=value, error=err_name(err))
        return cb

    producer = Producer(conf)
    start = time.monotonic()
    window = LoadWindow(cfg, start)
    seq = 0
    while True:
        now = time.monotonic()
        if not window.open():
            break
        due = start + seq / rate
        if now < due:
            producer.poll(min(due - now, 0.05))
            continue
        value = cfg["index"] * VALUE_STRIDE + seq
        seq += 1
        part = rnd.randrange(nparts)
        size = sizes.randint(*value_bytes) if value_bytes else 0
        if size:
            h.write("invoke", "send", part=part, value=value, size=size)
        else:
            h.write("invoke", "send", part=part, value=value)
        try:
            producer.produce(topic, key=str(part).encode(), value=encode_value(value, size), partition=part,
                             on_delivery=on_delivery(part, value))
            pending[value] = part
        except BufferError as e:
            h.write("fail", "send", part=part, value=value, error=f"BufferError: {e}")
            producer.poll(0.1)
        except KafkaException as e:
            h.write("fail", "send", part=part, value=value, error=err_name(e))
            if e.args and isinstance(e.args[0], KafkaError) and e.args[0].fatal():
                # the idempotent producer is unusable: what it still holds is unknown; start anew
                for v, p in list(pending.items()):
                    h.write("info", "send", part=p, value=v, error="producer fatal error, abandoned")
                pending.clear()
                h.write("info", "producer-reset", error=err_name(e))
                producer = Producer(conf)
        producer.poll(0)
    left = producer.flush(cfg.get("flush_secs", 30))
    for v, p in list(pending.items()):
        h.write("info", "send", part=p, value=v, error=f"no delivery report within flush ({left} left)")
    h.close()


# ---------------------------------------------------------------- transactional producer

def run_txn_producer(cfg: dict) -> None:
    h = HistoryWriter(Path(cfg["out"]) / f"{cfg['proc']}.jsonl", cfg["proc"])
    rnd = random.Random(cfg["seed"])
    topic, nparts, rate = cfg["topic"], cfg["partitions"], cfg.get("rate", 100)
    conf = {"bootstrap.servers": cfg["bootstrap"], "log_level": LOG_LEVEL, "acks": "all", "linger.ms": 5,
            "transactional.id": f"jepsen-{cfg['proc']}", "transaction.timeout.ms": 10000,
            "message.timeout.ms": 9000, "client.id": cfg["proc"],
            # librdkafka keeps its transaction coordinator until a connection to it fails, and backs
            # off reconnecting exponentially up to reconnect.backoff.max.ms (default 10 s): after
            # a SIGKILL of the coordinator's node, it asked FindCoordinator only between failed
            # connects, 7.7-9.5 s apart, so it learned of the new coordinator (loaded 3.7 s after
            # the kill) long after the heal, and the schedule's 3 s of load after the heal got no
            # commit (1 run in 2-4 of the kill-leader schedule, 2026-12-03, JEPSEN_RDKAFKA_DEBUG=eos).
            # A 1 s cap keeps the liveness check about the cluster's recovery, not the backoff.
            "reconnect.backoff.max.ms": 1000}
    if os.environ.get("JEPSEN_RDKAFKA_DEBUG"):
        conf.update({"debug": os.environ["JEPSEN_RDKAFKA_DEBUG"], "log_level": 7})

    def new_producer() -> Producer:
        while True:
            p = Producer(conf)
            try:
                p.init_transactions(30)
                h.write("ok", "init-transactions")
                return p
            except KafkaException as e:
                h.write("fail", "init-transactions", error=err_name(e))
                if time.monotonic() > hard_stop:
                    raise
                time.sleep(0.5)

    def on_delivery(txn: str, part: int, value: int):
        def cb(err, msg):
            if err is None:
                h.write("ok", "send", part=msg.partition(), value=value, offset=msg.offset(), txn=txn)
            else:
                h.write("info", "send", part=part, value=value, error=err_name(err), txn=txn)
        return cb

    def abort(p: Producer, txn: str, values: list, why: str) -> bool:
        try:
            p.abort_transaction(30)
            h.write("fail", "txn", txn=txn, values=values, error=why)
            return True
        except KafkaException as e:
            h.write("info", "txn", txn=txn, values=values, error=f"{why}; abort failed: {err_name(e)}")
            return False

    start = time.monotonic()
    window = LoadWindow(cfg, start)
    hard_stop = window.deadline + 60
    producer = new_producer()
    seq = 0
    n = 0
    while window.open():
        due = start + seq / rate
        if time.monotonic() < due:
            time.sleep(min(due - time.monotonic(), 0.05))
            continue
        n += 1
        txn = f"{cfg['proc']}-{n}"
        sends = []
        for _ in range(rnd.randint(1, 4)):
            sends.append([rnd.randrange(nparts), cfg["index"] * VALUE_STRIDE + seq])
            seq += 1
        values = [v for _p, v in sends]
        commit = rnd.random() >= 0.25
        h.write("invoke", "txn", txn=txn, values=values, parts=[p for p, _v in sends],
                intent="commit" if commit else "abort")
        replace = False
        try:
            producer.begin_transaction()
            for part, value in sends:
                h.write("invoke", "send", part=part, value=value, txn=txn)
                producer.produce(topic, key=str(part).encode(), value=str(value).encode(), partition=part,
                                 on_delivery=on_delivery(txn, part, value))
            if not commit:
                producer.flush(10)  # the records are in the log, then the abort marker follows them
                replace = not abort(producer, txn, values, "aborted by the workload")
                continue
            for attempt in range(3):
                try:
                    producer.commit_transaction(30)
                    h.write("ok", "txn", txn=txn, values=values)
                    break
                except KafkaException as e:
                    err = e.args[0] if e.args else None
                    if isinstance(err, KafkaError) and err.retriable() and attempt < 2:
                        continue  # librdkafka: a retriable commit error may be retried
                    raise
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if isinstance(err, KafkaError) and err.txn_requires_abort():
                replace = not abort(producer, txn, values, err_name(e))
            else:
                # a fatal or unresolved error: the commit may or may not have happened
                h.write("info", "txn", txn=txn, values=values, error=err_name(e))
                replace = True
        except BufferError as e:
            replace = not abort(producer, txn, values, f"BufferError: {e}")
        finally:
            if replace:
                # e.g. librdkafka's EndTxn(abort) after an AddPartitionsToTxn it could not confirm
                # (transport error) that the coordinator never got: INVALID_TXN_STATE, fatal for
                # the client (Kafka answers the same: CompleteCommit + abort); the new producer's
                # InitProducerId fences this one
                h.write("info", "producer-reset", error="replaced after an unresolved transaction")
                try:
                    producer.flush(1)
                except KafkaException:
                    pass  # a fatal producer refuses even this; its records are unknown already
                producer = new_producer()
    try:
        producer.flush(5)
    except KafkaException:
        pass
    h.close()


# ---------------------------------------------------------------- consumers

def consumer_conf(cfg: dict, group: str, **extra) -> dict:
    c = {"bootstrap.servers": cfg["bootstrap"], "log_level": LOG_LEVEL, "group.id": group,
         "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
         "fetch.wait.max.ms": 100, "check.crcs": True, "client.id": cfg["proc"],
         # librdkafka's default, stated: aborted transactions' records must never be returned
         "isolation.level": "read_committed"}
    if os.environ.get("JEPSEN_RDKAFKA_DEBUG"):
        c.update({"debug": os.environ["JEPSEN_RDKAFKA_DEBUG"], "log_level": 7})
    c.update(extra)
    return c


def record_poll(h: HistoryWriter, msgs, positions: dict, f: str = "poll") -> list:
    batch = []
    for m in msgs:
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            h.write("info", f, error=err_name(m.error()), part=m.partition())
            continue
        batch.append([m.partition(), m.offset(), parse_value(m.value())])
        positions[m.partition()] = m.offset() + 1
    if batch:
        h.write("ok", f, msgs=batch)
    return batch


def commit(h: HistoryWriter, c: Consumer, topic: str, group: str, offsets: dict) -> None:
    if not offsets:
        return
    h.write("invoke", "commit", group=group, offsets=offsets)
    try:
        res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
        errs = {tp.partition: err_name(tp.error) for tp in (res or []) if tp.error is not None}
        if errs:
            h.write("fail", "commit", group=group, offsets=offsets, error=json.dumps(errs))
        else:
            h.write("ok", "commit", group=group, offsets=offsets)
    except KafkaException as e:
        # a commit refused by the coordinator did not happen; a timeout may have
        err = e.args[0] if e.args else None
        t = "info" if isinstance(err, KafkaError) and err.code() in (
            KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT) else "fail"
        h.write(t, "commit", group=group, offsets=offsets, error=err_name(e))


def observe_committed(h: HistoryWriter, c: Consumer, topic: str, group: str, parts: list) -> None:
    if not parts:
        return
    h.write("invoke", "committed", group=group, parts=parts)
    try:
        res = c.committed([TopicPartition(topic, p) for p in parts], timeout=5)
        offs = {tp.partition: tp.offset for tp in res if tp.error is None and tp.offset >= 0}
        h.write("ok", "committed", group=group, offsets=offs)
    except KafkaException as e:
        h.write("fail", "committed", group=group, parts=parts, error=err_name(e))


def run_assign(cfg: dict) -> None:
    h = HistoryWriter(Path(cfg["out"]) / f"{cfg['proc']}.jsonl", cfg["proc"])
    rnd = random.Random(cfg["seed"])
    topic, nparts = cfg["topic"], cfg["partitions"]
    group = f"jepsen-{cfg['proc']}"
    c = Consumer(consumer_conf(cfg, group))
    positions = {p: 0 for p in range(nparts)}
    committed: dict[int, int] = {}
    assigned = list(range(nparts))
    rewind = float(cfg.get("rewind", 0))

    def assign(parts):
        pos = {p: positions.get(p, 0) for p in parts}
        c.assign([TopicPartition(topic, p, o) for p, o in pos.items()])
        h.write("ok", "assign", parts=parts, positions=pos)

    assign(assigned)
    deadline = time.monotonic() + cfg["secs"]
    next_reassign = time.monotonic() + rnd.uniform(3, 8)
    polls = 0
    while time.monotonic() < deadline:
        msgs = c.consume(num_messages=200, timeout=0.5)
        record_poll(h, msgs, positions)
        polls += 1
        if polls % 5 == 0:
            todo = {p: positions[p] for p in assigned if positions.get(p, 0) > committed.get(p, -1)}
            commit(h, c, topic, group, todo)
            committed.update(todo)
        if time.monotonic() >= next_reassign:
            next_reassign = time.monotonic() + rnd.uniform(3, 8)
            k = rnd.randint(1, nparts)
            assigned = sorted(rnd.sample(range(nparts), k))
            if rewind and rnd.random() < rewind:
                # back to offset 0 on a seeded subset: the history again, from the bucket on a
                # tiered topic, while copies, local retention and faults go on
                for p in rnd.sample(assigned, rnd.randint(1, len(assigned))):
                    positions[p] = 0
            assign(assigned)
    c.close()
    h.close()


def run_subscribe(cfg: dict) -> None:
    h = HistoryWriter(Path(cfg["out"]) / f"{cfg['proc']}.jsonl", cfg["proc"])
    rnd = random.Random(cfg["seed"])
    topic, group = cfg["topic"], cfg["group"]
    c = Consumer(consumer_conf(cfg, group, **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                                              "partition.assignment.strategy": "range"}))
    owned: set[int] = set()
    last_rebalance = [time.monotonic()]  # when a rebalance callback last ran

    def on_assign(consumer, parts):
        last_rebalance[0] = time.monotonic()
        owned.clear()
        owned.update(tp.partition for tp in parts)
        h.write("ok", "rebalance", event="assign", parts=sorted(owned))

    def on_revoke(consumer, parts):
        last_rebalance[0] = time.monotonic()
        h.write("ok", "rebalance", event="revoke", parts=sorted(tp.partition for tp in parts))
        owned.difference_update(tp.partition for tp in parts)

    def on_lost(consumer, parts):
        last_rebalance[0] = time.monotonic()
        h.write("ok", "rebalance", event="lost", parts=sorted(tp.partition for tp in parts))
        owned.difference_update(tp.partition for tp in parts)

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    h.write("ok", "subscribe", topic=topic, group=group)
    deadline = time.monotonic() + cfg["secs"]
    next_observe = time.monotonic() + rnd.uniform(2, 5)
    positions: dict[int, int] = {}
    while time.monotonic() < deadline:
        msgs = c.consume(num_messages=200, timeout=0.5)
        batch = record_poll(h, msgs, positions)
        if batch:
            done = {}
            for p, o, _v in batch:
                done[p] = max(done.get(p, 0), o + 1)
            commit(h, c, topic, group, done)
        if time.monotonic() >= next_observe:
            next_observe = time.monotonic() + rnd.uniform(2, 5)
            observe_committed(h, c, topic, group, sorted(owned))
    # Leave the group on the poll path before close(): librdkafka can deadlock when close()
    # itself runs the revoke callback (its automatic assign(NULL) waits for an op queue that only
    # close()'s own, blocked thread serves: the "subscriber hung in close()" of
    # tests/jepsen/README.md, gdb stacks in Consumer_rebalance_cb -> rd_kafka_assign ->
    # rd_kafka_op_req from rd_kafka_consumer_close). Unsubscribing runs the revoke inside
    # consume(), where the callback's assign is served; close() then has nothing to revoke.
    # "Nothing owned" alone is not enough: a member caught between the revoke and the assign of
    # a rebalance (the other subscriber left first) owns nothing while its assign is still on
    # the way, and close() would serve that one. So the poll goes on until nothing is owned and
    # no rebalance callback has run for 1.5 s (at most 10 s).
    c.unsubscribe()
    left = time.monotonic()
    leave_by = left + 10
    while time.monotonic() < leave_by and (owned or time.monotonic() - max(left, last_rebalance[0]) < 1.5):
        record_poll(h, c.consume(num_messages=200, timeout=0.2), positions)
    c.close()  # leaves the group (its partitions go to the others)
    h.close()


def run_final(cfg: dict) -> None:
    h = HistoryWriter(Path(cfg["out"]) / f"{cfg['proc']}.jsonl", cfg["proc"])
    topic, nparts = cfg["topic"], cfg["partitions"]
    # the end of a partition is where the consumer reports EOF at or past the high watermark asked
    # before: with transactions the last offsets may be control records no poll returns
    c = Consumer(consumer_conf(cfg, f"jepsen-unused-{cfg['proc']}",
                               **{"auto.offset.reset": "error", "enable.partition.eof": True}))
    ends = {}
    lows = {}
    for p in range(nparts):
        for attempt in range(10):
            try:
                low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
                ends[p] = high
                lows[p] = low
                break
            except KafkaException as e:
                h.write("info", "watermark", part=p, error=err_name(e))
                time.sleep(1)
                # librdkafka takes a cached partition without a usable leader (leader -1 from a
                # Metadata answer between two leaders, or a leader id it has no broker for) as
                # final for this call: rd_kafka_topic_partition_list_get_leaders answers
                # "_UNKNOWN_PARTITION" without asking again, and the cache is refreshed only
                # minutes later. Refresh the topic's metadata before the next try (soak F,
                # partition seed 5028: 10 tries failed while the other reader read it).
                try:
                    c.list_topics(topic, timeout=5)
                except KafkaException:
                    pass
    h.write("ok", "watermarks", ends=ends, lows=lows)
    todo = {p: e for p, e in ends.items() if e > 0}
    positions: dict[int, int] = {}
    # Every partition from offset 0; one whose log start is above 0 (nothing in these runs
    # deletes records: a lost prefix) from its log start, recorded for the checker.
    start = {p: max(0, lows.get(p, 0)) for p in todo}
    for p, low in start.items():
        if low > 0:
            h.write("info", "log-start", part=p, low=low, end=todo[p])
    c.assign([TopicPartition(topic, p, start[p]) for p in todo])
    h.write("ok", "assign", parts=sorted(todo), positions=start)
    deadline = time.monotonic() + cfg.get("read_secs", 60)
    out_of_range: dict[int, int] = {}
    while todo and time.monotonic() < deadline:
        msgs = c.consume(num_messages=500, timeout=0.5)
        batch = record_poll(h, msgs, positions, f="final-read")
        for p, o, _v in batch:
            if p in todo and o + 1 >= todo[p]:
                del todo[p]
        for m in msgs:
            err = m.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF and m.partition() in todo \
                    and m.offset() >= todo[m.partition()]:
                del todo[m.partition()]
            elif err is not None and err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE) \
                    and m.partition() in todo and out_of_range.get(m.partition(), 0) < 5:
                # the log start moved above where this reader stood (auto.offset.reset=error):
                # record where it is now and read on from there
                p = m.partition()
                out_of_range[p] = out_of_range.get(p, 0) + 1
                try:
                    low, _high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
                except KafkaException as e:
                    h.write("info", "watermark", part=p, error=err_name(e))
                    continue
                at = positions.get(p, start.get(p, 0))
                h.write("info", "log-start", part=p, low=low, end=todo[p], reading_at=at)
                if low > at:
                    # the checker's expectations restart at the new position (an explicit assign)
                    keep = {q: positions.get(q, start[q]) for q in todo if q != p}
                    keep[p] = low
                    c.assign([TopicPartition(topic, q, o) for q, o in keep.items()])
                    h.write("ok", "assign", parts=sorted(keep), positions=keep)
    complete = not todo and len(ends) == nparts
    h.write("ok", "final-end", ends=ends, complete=complete, positions=positions)
    c.close()
    for group in cfg.get("groups", []):
        g = Consumer(consumer_conf(cfg, group))
        observe_committed(h, g, topic, group, list(range(nparts)))
        g.close()
    h.close()


ROLES = {"producer": run_producer, "txn-producer": run_txn_producer, "assign": run_assign, "subscribe": run_subscribe, "final": run_final}

if __name__ == "__main__":
    ROLES[sys.argv[1]](json.loads(sys.argv[2]))
