"""MirrorMaker 2 (org.apache.kafka.connect.mirror.MirrorMaker, dedicated mode; 4.3.1,
tests/java/connect/pom.xml says why not 4.4.0) between two Frieda clusters, both ways, as an
operator runs it with an mm2.properties (issue 59, item 9).

Cluster "a" has 3 nodes, cluster "b" one; every topic MirrorMaker creates (the remote topics, its
Connect herders' config/offset/status topics, heartbeats, checkpoints, offset syncs) has the
replication factor of the cluster it lives in, as the properties say, and every topic of each
cluster is checked for it. Replication is a->b and b->a with the default topic filter (every
topic but internal ones); MirrorMaker's cycle detection keeps a.orders on b from coming back to a
as b.a.orders.

Checked: a's `orders` (3 partitions) appears on b as `a.orders` and b's `events` (2 partitions) on a
as `b.events`, every record at the same partition and offset, byte for byte (key, value, headers,
timestamp), for records produced before MirrorMaker started (one burst) and while it runs (a
steady flow). Consumer group offsets are translated (MirrorCheckpointConnector,
sync.group.offsets.enabled) and written into the other cluster's groups: a group that consumed
all of a's `orders` finds its offsets on b at the end of `a.orders` and reads nothing again;
groups that stopped 15 records before the end of each partition (of `orders` on a, of `events`
on b) resume on the other cluster at or before the offset they committed, never after it
(nothing skipped), and not much before it (MirrorMaker translates through its nearest offset
sync: a few records again, not everything), and read every record from there on.

Not asserted: the translation of a group far behind the end (e.g. half of a partition). After a
burst MirrorMaker has kept few offset syncs that far back, and such a group can come back at
offset 1: seen with Apache Kafka 4.4.0 in place of the Frieda nodes as well
(tests/cluster/tools/kafka_as_frieda_node.py)."""

from __future__ import annotations

import struct
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

import helpers as h
from conftest import LOG_LEVEL
from connect_workers import JvmProcess, connect_classpath, wait_for, write_properties

MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"
OFFSET_LAG_MAX = 10
BEHIND = 15


def produce(boot: str, topic: str, recs: list, chunk: int | None = None, pause: float = 0.1) -> list:
    """Idempotent acks=all; every record acknowledged. Returns [Acked]. With ``chunk``, that many
    records at a time, ``pause`` s apart (a steady flow rather than one burst)."""
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                  "log_level": LOG_LEVEL})
    acked = []
    step = chunk or len(recs)
    for i in range(0, len(recs), step):
        log = h.produce_all(p, topic, recs[i:i + step])
        assert not log.errors, log.errors[:3]
        acked += log.acked
        if chunk:
            time.sleep(pause)
    assert len(acked) == len(recs)
    return acked


def consume_group(boot: str, group: str, topic: str, stop_at: dict[int, int] | None, ends: dict[int, int],
                  timeout: float = 60) -> dict[tuple[int, int], object]:
    """A member of ``group`` subscribed to ``topic`` reads until it has passed ``stop_at[p]`` (or
    the end) in every partition, commits exactly ``stop_at`` (every offset it read when None),
    and leaves. Returns {(partition, offset): Message} of what it read."""
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "log_level": LOG_LEVEL, "fetch.wait.max.ms": 100,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    target = stop_at if stop_at is not None else ends
    got = {}
    pos = {}
    try:
        # a group that has committed offsets resumes there: nothing before them is waited for
        for tp in c.committed([TopicPartition(topic, p) for p in target], timeout=10):
            if tp.offset >= 0:
                pos[tp.partition] = tp.offset - 1
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while any(pos.get(p, -1) + 1 < target[p] for p in target if target[p] > 0):
            assert time.monotonic() < deadline, f"group {group} read {pos} of {target} in {topic}"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                continue
            got[(m.partition(), m.offset())] = m
            pos[m.partition()] = max(pos.get(m.partition(), -1), m.offset())
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in target.items()], asynchronous=False)
    finally:
        c.close()
    return got


def group_offsets(boot: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets of ``topic`` (-1001: none)."""
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "log_level": LOG_LEVEL})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def offset_syncs(boot: str, syncs_topic: str, topic: str) -> dict[int, list[tuple[int, int]]]:
    """MirrorMaker's offset syncs of ``topic`` in ``syncs_topic`` (its key: topic as an int16-length
    string, partition int32; its value: upstream and downstream offsets, int64): per partition,
    [(upstream, downstream)] in the order written. A diagnostic for the translations."""
    c = h.consumer(boot)
    out: dict[int, list[tuple[int, int]]] = {}
    try:
        _, high = c.get_watermark_offsets(TopicPartition(syncs_topic, 0), timeout=10)
        c.assign([TopicPartition(syncs_topic, 0, 0)])
        n = 0
        deadline = time.monotonic() + 20
        while n < high and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            n += 1
            key, value = m.key(), m.value()
            tlen = struct.unpack(">h", key[:2])[0]
            if key[2:2 + tlen].decode() != topic:
                continue
            part = struct.unpack(">i", key[2 + tlen:6 + tlen])[0]
            out.setdefault(part, []).append(struct.unpack(">qq", value[:16]))
    finally:
        c.close()
    return out


def check_mirrored(acked: list, got: dict, where: str) -> None:
    """Every acknowledged source record is at the same partition and offset, byte for byte."""
    for a in acked:
        m = got.get((a.partition, a.offset))
        at = f"{where}[{a.partition}]@{a.offset}"
        assert m is not None, f"{at}: the source's record is missing"
        assert m.key() == a.rec.key, f"{at}: key {m.key()!r:.60} != {a.rec.key!r:.60}"
        assert m.value() == a.rec.value, f"{at}: value differs ({len(m.value() or b'')} vs {len(a.rec.value or b'')} bytes)"
        assert h.norm_headers(m.headers()) == h.norm_headers(a.rec.headers), \
            f"{at}: headers {m.headers()!r} != {a.rec.headers!r}"
        assert m.timestamp() == (1, a.rec.timestamp), f"{at}: timestamp {m.timestamp()} != (1, {a.rec.timestamp})"


def test_mirrormaker2_both_ways_records_and_group_offsets(cluster, tmp_path):
    t0 = time.monotonic()

    def step(what: str) -> None:
        print(f"[{time.monotonic() - t0:5.1f}s] {what}", flush=True)

    cp = connect_classpath(tmp_path)
    a = cluster()
    b = cluster(n=1, default_replication_factor=1, offsets_topic_replication_factor=1, min_insync_replicas=1,
                transaction_state_log_replication_factor=1, transaction_state_log_min_isr=1)
    rf = {"a": 3, "b": 1}
    run = uuid.uuid4().hex[:6]
    orders, events = f"orders-{run}", f"events-{run}"
    admin_a, admin_b = a.admin(), b.admin()
    admin_a.create_topics([NewTopic(orders, num_partitions=3, replication_factor=3)])[orders].result(timeout=30)
    admin_b.create_topics([NewTopic(events, num_partitions=2, replication_factor=1)])[events].result(timeout=30)
    a.wait_full_isr(orders, 30)
    b.wait_full_isr(events, 30)

    def records(n: int, seed: int) -> list:
        # no ~100 KiB values: the replication is what is tested, not the record size
        return h.sample_records(n, seed=seed, big_every=10**9)

    orders1 = produce(a.bootstrap, orders, records(450, 1))
    events1 = produce(b.bootstrap, events, records(240, 2))
    ends = lambda acked: {p: 1 + max((x.offset for x in acked if x.partition == p), default=-1)  # noqa: E731
                          for p in {x.partition for x in acked}}
    orders_ends1, events_ends1 = ends(orders1), ends(events1)
    assert sorted(orders_ends1) == [0, 1, 2] and sorted(events_ends1) == [0, 1]

    g_all, g_part, g_events = f"orders-all-{run}", f"orders-part-{run}", f"events-part-{run}"

    props = {
        "clusters": "a, b",
        "a.bootstrap.servers": a.bootstrap,
        "b.bootstrap.servers": b.bootstrap,
        "a->b.enabled": "true",
        "b->a.enabled": "true",
        # each topic MirrorMaker creates has the replication factor of the cluster it lives in:
        # remote topics, heartbeats and checkpoints in the target, offset syncs in the source,
        # each herder's config/offset/status topics in its target
        "a->b.replication.factor": rf["b"],
        "b->a.replication.factor": rf["a"],
        "a->b.heartbeats.topic.replication.factor": rf["b"],
        "b->a.heartbeats.topic.replication.factor": rf["a"],
        "a->b.checkpoints.topic.replication.factor": rf["b"],
        "b->a.checkpoints.topic.replication.factor": rf["a"],
        "a->b.offset-syncs.topic.replication.factor": rf["a"],
        "b->a.offset-syncs.topic.replication.factor": rf["b"],
        **{f"{alias}.{kind}.storage.replication.factor": n
           for alias, n in rf.items() for kind in ("config", "offset", "status")},
        "offset.storage.partitions": 5,
        "tasks.max": 2,
        # offsets and groups followed closely, for a test that waits on them
        "offset.lag.max": OFFSET_LAG_MAX,
        # a worker setting: only per herder (by its target cluster's alias) does MirrorMaker pass
        # it on; at the top level it would be ignored for the default 60 s, and the last offset
        # sync of a partition (emitted when the source task commits) would come a minute late
        **{f"{alias}.offset.flush.interval.ms": 1000 for alias in rf},
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": 1,
        "emit.checkpoints.interval.seconds": 1,
        "emit.heartbeats.interval.seconds": 1,
        "refresh.topics.interval.seconds": 2,
        "refresh.groups.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 5,
    }
    mm2 = JvmProcess("MirrorMaker", cp, MIRROR_MAKER, [str(write_properties(tmp_path / "mm2.properties", props))],
                     tmp_path / "mirrormaker.log", heap="512m")
    passed = False
    try:
        step("starting MirrorMaker")
        mm2.start()
        remote_orders, remote_events = f"a.{orders}", f"b.{events}"

        def mirrored(c, topic: str, want: dict[int, int]):
            """The remote topic has the source's partitions and at least ``want`` records in each."""
            md = c.metadata(topic)
            t = md.topics.get(topic)
            if t is None or t.error is not None or len(t.partitions) != len(want):
                return None
            cons = h.consumer(c.bootstrap)
            try:
                highs = {p: cons.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1] for p in want}
            finally:
                cons.close()
            return highs if all(highs[p] >= want[p] for p in want) else None

        step("waiting for the first batch on the other clusters")
        wait_for(lambda: mirrored(b, remote_orders, orders_ends1), 120, f"{remote_orders} on b", interval=1,
                 procs=[mm2])
        wait_for(lambda: mirrored(a, remote_events, events_ends1), 60, f"{remote_events} on a", interval=1,
                 procs=[mm2])

        # records produced while MirrorMaker runs, as a steady flow: MirrorMaker emits an offset
        # sync every offset.lag.max records of a partition, but with at most 10 in flight it
        # keeps only the newest of a partition while they are stuck, so a burst leaves few syncs
        # (gaps of 50-100 offsets seen in the offset syncs topic after a burst)
        step("producing the second batch")
        orders2 = produce(a.bootstrap, orders, records(150, 3), chunk=10)
        events2 = produce(b.bootstrap, events, records(90, 4), chunk=10)
        orders_ends, events_ends = ends(orders1 + orders2), ends(events1 + events2)
        step("waiting for the second batch on the other clusters")
        highs = wait_for(lambda: mirrored(b, remote_orders, orders_ends), 60, f"all of {orders} in {remote_orders}",
                         interval=1, procs=[mm2])
        assert highs == orders_ends, f"{remote_orders} has more records than {orders}: {highs} vs {orders_ends}"
        highs = wait_for(lambda: mirrored(a, remote_events, events_ends), 60, f"all of {events} in {remote_events}",
                         interval=1, procs=[mm2])
        assert highs == events_ends, f"{remote_events} has more records than {events}: {highs} vs {events_ends}"
        check_mirrored(orders1 + orders2, h.consume_partitions(b.bootstrap, remote_orders, orders_ends),
                       f"b:{remote_orders}")
        check_mirrored(events1 + events2, h.consume_partitions(a.bootstrap, remote_events, events_ends),
                       f"a:{remote_events}")

        # consumer groups on the source clusters, now that MirrorMaker has copied everything: one
        # read all of orders, one all but the last BEHIND records of each partition of orders,
        # one all but the last BEHIND of events
        step("consumer groups on the source clusters")
        consume_group(a.bootstrap, g_all, orders, None, orders_ends)
        part = {p: e - BEHIND for p, e in orders_ends.items()}
        consume_group(a.bootstrap, g_part, orders, part, orders_ends)
        events_part = {p: e - BEHIND for p, e in events_ends.items()}
        consume_group(b.bootstrap, g_events, events, events_part, events_ends)

        # the group offsets, translated and written into the other cluster's groups.
        # MirrorMaker translates an offset through the nearest offset sync at or before it, and
        # keeps fewer syncs the further they are behind the newest (OffsetSyncStore, KAFKA-14666);
        # its checkpoints move up as the last syncs arrive. Every offset it writes must be at or
        # before the committed one (later would skip records); in the end, an offset BEHIND
        # records before the end comes back at most about BEHIND records earlier, plus the sync
        # spacing (offset.lag.max), and the end itself exactly.
        def converged(c, group: str, topic: str, committed: dict[int, int], slack: int) -> dict[int, int]:
            deadline = time.monotonic() + 60
            seen = None
            while True:
                assert mm2.alive(), f"MirrorMaker exited with {mm2.proc.returncode}\n{mm2.tail()}"
                offs = group_offsets(c.bootstrap, group, topic, len(committed))
                if offs != seen:
                    step(f"{group}'s offsets of {topic}: {offs}")
                    seen = offs
                for p, t_off in offs.items():
                    assert t_off <= committed[p], \
                        f"{group}[{p}]: committed {committed[p]} on the source, {t_off} on the target: records skipped"
                if all(offs[p] >= committed[p] - slack for p in committed):
                    return offs
                if time.monotonic() >= deadline:
                    src, dst = ("a", "b") if c is b else ("b", "a")
                    src_cluster = a if c is b else b
                    syncs = offset_syncs(src_cluster.bootstrap, f"mm2-offset-syncs.{dst}.internal",
                                         topic.split(".", 1)[1])
                    raise AssertionError(f"{group}'s offsets of {topic} are {offs} after 60 s, want within {slack} "
                                         f"below {committed}; offset syncs {src}->{dst} (upstream, downstream): {syncs}")
                time.sleep(1)

        step("waiting for the translated group offsets")
        translated_all = converged(b, g_all, remote_orders, orders_ends, 0)
        slack = 2 * BEHIND + OFFSET_LAG_MAX
        translated_part = converged(b, g_part, remote_orders, part, slack)
        translated_events = converged(a, g_events, remote_events, events_part, slack)
        print(f"translated: {g_all} {orders_ends} -> {translated_all}; {g_part} {part} -> {translated_part}; "
              f"{g_events} {events_part} -> {translated_events}")

        # the groups resume on the other cluster at those offsets and read every record from there
        step("stopping MirrorMaker, resuming the groups on the other clusters")
        mm2.stop(timeout=30)  # no more offset syncs into groups that now have members
        for c, group, topic, translated, acked, end in (
                (b, g_all, remote_orders, translated_all, orders1 + orders2, orders_ends),
                (b, g_part, remote_orders, translated_part, orders1 + orders2, orders_ends),
                (a, g_events, remote_events, translated_events, events1 + events2, events_ends)):
            got = consume_group(c.bootstrap, group, topic, end, end)
            for p in end:
                first = min((o for (q, o) in got if q == p), default=end[p])
                assert first == translated[p], f"{group} resumed {topic}[{p}] at {first}, its offset is {translated[p]}"
            check_mirrored([x for x in acked if x.offset >= translated[x.partition]], got, f"{group} on {topic}")
            assert len(got) == sum(end[p] - translated[p] for p in end), f"{group} read {len(got)} records"

        step("checking topics and replication factors")
        # no cycles; every topic has the replication factor of its cluster
        for c, alias, other in ((a, "a", "b"), (b, "b", "a")):
            topics = c.metadata().topics
            cycled = [t for t in topics if t.startswith(f"{other}.{alias}.") or t.startswith(f"{alias}.")]
            assert not cycled, f"cluster {alias} has topics mirrored back to it: {cycled}"
            for name, t in topics.items():
                assert all(len(p.replicas) == rf[alias] for p in t.partitions.values()), \
                    f"{alias}:{name} has replicas {[p.replicas for p in t.partitions.values()]}, want RF {rf[alias]}"
            for want in (f"mm2-configs.{other}.internal", f"mm2-offsets.{other}.internal",
                         f"mm2-status.{other}.internal", "heartbeats", f"{other}.checkpoints.internal",
                         f"mm2-offset-syncs.{other}.internal"):
                assert want in topics, f"{want} not on cluster {alias}: {sorted(topics)}"
        passed = True
    finally:
        mm2.stop(timeout=30)
        if not passed:
            print(mm2.tail(120))
