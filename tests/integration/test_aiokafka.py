"""aiokafka (the asyncio client, 0.14) against the broker: what its users do and check.

- an idempotent acks=all producer sends keyed records with binary values and headers to a
  3-partition topic: every record is acknowledged once, at contiguous offsets from 0 per
  partition, each key on one partition;
- a consumer group: the first member gets every partition and reads every record back, byte for
  byte, and commits; a second member joins (a rebalance: the partitions are split between them)
  and continues from the first member's committed offsets, not from the beginning; both commit
  and leave, the broker restarts (a broker the test started), and a new member of the group
  resumes at the committed offsets: it reads exactly the records produced since;
- without a group: beginning_offsets, end_offsets, offsets_for_times (the first offset at or
  after a record's timestamp, None past the last one) and a seek to the offset found;
- a transactional producer commits one transaction (with the group offsets it sends), aborts one
  and commits another: a read_committed consumer sees only the committed records, at their
  acknowledged offsets; a read_uncommitted one sees the aborted ones too (they reached the log);
  the group's committed offset is the committed transaction's, not the aborted one's.

Runs against an external broker as well (FRIEDA_EXTERNAL_BOOTSTRAP): there the restart is left out.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import OffsetAndMetadata

import helpers as h

PARTITIONS = 3


def run(coro, timeout: float = 60):
    """Runs ``coro`` on a fresh event loop, bounded by ``timeout`` seconds."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def make_records(n: int, seed: int, base_ts: int, tag: str) -> list[tuple[bytes, bytes, list, int]]:
    """(key, value, headers, timestamp): keys repeat (so several land on one partition), values
    are binary (NUL, 0xff, empty) or text, headers repeat keys and have empty and binary values;
    timestamps rise by 10 ms per record."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = b"key-%d-\x00\xff" % (i % 23)
        if i % 7 == 3:
            value = b""
        elif i % 3 == 0:
            value = rnd.randbytes(rnd.randint(1, 2000))
        else:
            value = f"{tag} record {i} ünïcødé ✓ ".encode() * rnd.randint(1, 5)
        headers = [("tag", tag.encode()), ("i", str(i).encode()), ("bin", bytes([0, 255, 10, 13, i % 256]))]
        if i % 4 == 1:
            headers += [("dup", b"a"), ("dup", b"b"), ("empty", b"")]
        out.append((key, value, headers, base_ts + i * 10))
    return out


async def produce(producer: AIOKafkaProducer, topic: str, recs) -> list[tuple[tuple, object]]:
    """Sends every record (all in flight at once), returns [(record, RecordMetadata)]."""
    futs = [await producer.send(topic, key=k, value=v, headers=hd, timestamp_ms=ts) for k, v, hd, ts in recs]
    return list(zip(recs, await asyncio.gather(*futs)))


def check_read(acked, got: dict, what: str) -> None:
    """Every acknowledged record was read at its partition and offset, byte for byte."""
    for (k, v, hd, ts), md in acked:
        where = f"{what}: {md.topic}[{md.partition}]@{md.offset}"
        m = got.get((md.partition, md.offset))
        assert m is not None, f"{where} not read back"
        assert m.key == k, f"{where}: key {m.key!r} != {k!r}"
        assert m.value == v, f"{where}: value differs ({len(m.value or b'')} bytes read, {len(v)} sent)"
        assert list(m.headers) == hd, f"{where}: headers {list(m.headers)!r} != {hd!r}"
        assert (m.timestamp, m.timestamp_type) == (ts, 0), f"{where}: timestamp {m.timestamp}/{m.timestamp_type}"


def ends_of(acked) -> dict[int, int]:
    ends = {p: 0 for p in range(PARTITIONS)}
    for _, md in acked:
        ends[md.partition] = max(ends[md.partition], md.offset + 1)
    return ends


class Recorder(ConsumerRebalanceListener):
    def __init__(self):
        self.assigned: list[set] = []

    async def on_partitions_revoked(self, revoked):
        pass

    async def on_partitions_assigned(self, assigned):
        self.assigned.append({tp.partition for tp in assigned})


async def read_until(consumers: list[AIOKafkaConsumer], want: int, timeout: float) -> list[dict]:
    """Polls every consumer at once until they have read ``want`` records between them; returns
    per consumer {(partition, offset): record} (a record read twice by one consumer fails)."""
    got: list[dict] = [{} for _ in consumers]
    deadline = time.monotonic() + timeout
    while sum(map(len, got)) < want and time.monotonic() < deadline:
        batches = await asyncio.gather(*(c.getmany(timeout_ms=300) for c in consumers))
        for mine, batch in zip(got, batches):
            for records in batch.values():
                for m in records:
                    assert (m.partition, m.offset) not in mine, f"read twice: {m.topic}[{m.partition}]@{m.offset}"
                    mine[(m.partition, m.offset)] = m
    assert sum(map(len, got)) >= want, f"read {[len(g) for g in got]} records, want {want} in all"
    return got


async def wait_assignments(consumers, want: list[int], timeout: float = 30) -> list[set]:
    """Polls every consumer (records are not expected) until their assignments have the sizes
    ``want``, are disjoint and cover every partition."""
    deadline = time.monotonic() + timeout
    while True:
        for c in consumers:
            batch = await c.getmany(timeout_ms=200)
            assert not any(batch.values()), f"no record expected while the group rebalances: {batch}"
        sets = [{tp.partition for tp in c.assignment()} for c in consumers]
        if sorted(map(len, sets)) == sorted(want) and set().union(*sets) == set(range(PARTITIONS)) \
                and sum(map(len, sets)) == PARTITIONS:
            return sets
        assert time.monotonic() < deadline, f"assignments {sets}, want sizes {want} covering {PARTITIONS} partitions"


def test_aiokafka_idempotent_producer_group_rebalance_resume_and_offsets(broker, topic_name):
    topic = topic_name()
    group = f"aio-group-{uuid.uuid4().hex[:8]}"
    h.create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    base_ts = int(time.time() * 1000) - 600_000
    batch1 = make_records(240, 1, base_ts, "one")
    batch2 = make_records(150, 2, base_ts + 10_000, "two")
    batch3 = make_records(90, 3, base_ts + 20_000, "three")
    boot = broker.bootstrap

    def producer() -> AIOKafkaProducer:
        return AIOKafkaProducer(bootstrap_servers=boot, enable_idempotence=True, acks="all", linger_ms=5,
                                request_timeout_ms=30000)

    def member(listener=None) -> tuple[AIOKafkaConsumer, Recorder]:
        rec = listener or Recorder()
        c = AIOKafkaConsumer(bootstrap_servers=boot, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100,
                             session_timeout_ms=10000, heartbeat_interval_ms=500)
        return c, rec

    async def first_phase():
        p = producer()
        await p.start()
        try:
            acked1 = await produce(p, topic, batch1)
        finally:
            await p.stop()
        # idempotent, acks=all: each record once, contiguous offsets from 0 in every partition
        by_part: dict[int, list[int]] = {}
        key_part: dict[bytes, int] = {}
        for (k, *_), md in acked1:
            by_part.setdefault(md.partition, []).append(md.offset)
            assert key_part.setdefault(k, md.partition) == md.partition, f"key {k!r} on two partitions"
        assert sorted(by_part) == list(range(PARTITIONS)), f"records on partitions {sorted(by_part)}"
        for part, offs in by_part.items():
            assert sorted(offs) == list(range(len(offs))), f"partition {part}: offsets {sorted(offs)[:10]}..."

        c1, r1 = member()
        await c1.start()
        c1.subscribe([topic], listener=r1)
        try:
            (got1,) = await read_until([c1], len(batch1), 30)
            assert r1.assigned[-1] == set(range(PARTITIONS)), r1.assigned
            assert len(got1) == len(batch1), f"c1 read {len(got1)} records, {len(batch1)} produced"
            check_read(acked1, got1, "group member 1, every partition")
            await c1.commit()
            ends1 = ends_of(acked1)
            for part in range(PARTITIONS):
                assert await c1.committed(TopicPartition(topic, part)) == ends1[part]

            # a second member joins: the partitions are split, and each continues from the
            # offsets committed for the group (nothing of batch 1 is read again)
            c2, r2 = member()
            await c2.start()
            try:
                c2.subscribe([topic], listener=r2)
                sets = await wait_assignments([c1, c2], [1, 2])
                print(f"after the rebalance: member 1 has partitions {sorted(sets[0])}, member 2 {sorted(sets[1])}")
                assert sets[0] == r1.assigned[-1] and sets[1] == r2.assigned[-1], (sets, r1.assigned, r2.assigned)
                p = producer()
                await p.start()
                try:
                    acked2 = await produce(p, topic, batch2)
                finally:
                    await p.stop()
                got_a, got_b = await read_until([c1, c2], len(batch2), 30)
                print(f"batch 2: member 1 read {len(got_a)}, member 2 {len(got_b)} of {len(batch2)}")
                for mine, parts, name in ((got_a, sets[0], "member 1"), (got_b, sets[1], "member 2")):
                    stray = sorted(k for k in mine if k[0] not in parts)
                    assert not stray, f"{name} read partitions it was not assigned: {stray[:5]}"
                    early = sorted(k for k in mine if k[1] < ends1[k[0]])
                    assert not early, f"{name} reread records below the committed offsets {ends1}: {early[:5]}"
                assert len(got_a) + len(got_b) == len(batch2)
                check_read(acked2, {**got_a, **got_b}, "after the rebalance")
                await asyncio.gather(c1.commit(), c2.commit())
            finally:
                await c2.stop()
        finally:
            await c1.stop()
        return ends_of(acked1 + acked2)

    ends2 = run(first_phase())
    if not broker.external:
        broker.restart()  # the committed offsets outlive the broker process

    async def second_phase():
        p = producer()
        await p.start()
        try:
            acked3 = await produce(p, topic, batch3)
        finally:
            await p.stop()
        c3, r3 = member()
        await c3.start()
        c3.subscribe([topic], listener=r3)
        try:
            (got3,) = await read_until([c3], len(batch3), 30)
            # one more poll: nothing older than the committed offsets arrives
            for records in (await c3.getmany(timeout_ms=500)).values():
                for m in records:
                    got3[(m.partition, m.offset)] = m
            assert r3.assigned[-1] == set(range(PARTITIONS)), r3.assigned
            early = sorted(k for k in got3 if k[1] < ends2[k[0]])
            assert not early, f"the restarted member reread records below the committed offsets {ends2}: {early[:5]}"
            assert len(got3) == len(batch3), f"read {len(got3)} records after the restart, {len(batch3)} produced"
            check_read(acked3, got3, "resumed after the restart")
            for part in range(PARTITIONS):
                assert await c3.committed(TopicPartition(topic, part)) == ends2[part]
        finally:
            await c3.stop()
        return acked3

    acked3 = run(second_phase())
    ends3 = ends_of(acked3)
    ends3 = {p: max(ends3[p], ends2[p]) for p in range(PARTITIONS)}

    async def offsets_phase():
        c = AIOKafkaConsumer(bootstrap_servers=boot, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", fetch_max_wait_ms=100)
        await c.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            c.assign(tps)
            assert await c.beginning_offsets(tps) == {tp: 0 for tp in tps}
            assert await c.end_offsets(tps) == {tp: ends3[tp.partition] for tp in tps}
            # batch 3's first record in each partition: its timestamp is after every record of
            # batches 1 and 2, so the first offset at or after it is its own
            firsts = {}
            for rec, md in acked3:
                if md.partition not in firsts or md.offset < firsts[md.partition][1].offset:
                    firsts[md.partition] = (rec, md)
            found = await c.offsets_for_times({TopicPartition(topic, p): rec[3] for p, (rec, _) in firsts.items()})
            for tp, ot in found.items():
                rec, md = firsts[tp.partition]
                assert ot is not None and (ot.offset, ot.timestamp) == (md.offset, rec[3]), (tp, ot, md)
            late = await c.offsets_for_times({tp: base_ts + 3_600_000 for tp in tps})
            assert all(v is None for v in late.values()), late
            for tp in tps:
                c.seek(tp, found[tp].offset)
            got = {}
            deadline = time.monotonic() + 20
            while len(got) < len(batch3) and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=300)).values():
                    for m in records:
                        got[(m.partition, m.offset)] = m
            assert len(got) == len(batch3), f"read {len(got)} records from the offsets found, want {len(batch3)}"
            check_read(acked3, got, "after seek to offsets_for_times")
        finally:
            await c.stop()

    run(offsets_phase())


def test_aiokafka_transactions_read_committed(broker, topic_name):
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=2)
    boot = broker.bootstrap
    group = f"aio-txn-group-{uuid.uuid4().hex[:8]}"
    base_ts = int(time.time() * 1000) - 60_000
    committed1 = make_records(30, 11, base_ts, "commit-1")
    aborted = make_records(25, 12, base_ts + 1000, "abort")
    committed2 = make_records(20, 13, base_ts + 2000, "commit-2")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    async def transactions():
        p = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=f"aio-tx-{uuid.uuid4().hex[:8]}",
                             request_timeout_ms=30000)
        await p.start()
        try:
            async with p.transaction():
                acked1 = await produce(p, topic, committed1)
                await p.send_offsets_to_transaction({tp0: OffsetAndMetadata(5, "t1")}, group)
            await p.begin_transaction()
            acked_ab = await produce(p, topic, aborted)
            await p.send_offsets_to_transaction({tp0: OffsetAndMetadata(10, "t2")}, group)
            await p.abort_transaction()
            async with p.transaction():
                acked2 = await produce(p, topic, committed2)
        finally:
            await p.stop()
        return acked1, acked_ab, acked2

    acked1, acked_ab, acked2 = run(transactions())

    async def read(isolation: str) -> dict:
        c = AIOKafkaConsumer(bootstrap_servers=boot, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level=isolation, fetch_max_wait_ms=100)
        await c.start()
        try:
            c.assign([tp0, tp1])
            # read_committed: the end is the last stable offset; past every marker of the three
            # transactions once they are all complete
            ends = await c.end_offsets([tp0, tp1])
            got = {}
            deadline = time.monotonic() + 20
            while True:
                positions = {tp: await c.position(tp) for tp in (tp0, tp1)}
                if all(positions[tp] >= ends[tp] for tp in positions):
                    break
                assert time.monotonic() < deadline, f"{isolation}: positions {positions}, ends {ends}"
                for records in (await c.getmany(timeout_ms=300)).values():
                    for m in records:
                        assert (m.partition, m.offset) not in got
                        got[(m.partition, m.offset)] = m
            return got
        finally:
            await c.stop()

    got = run(read("read_committed"))
    check_read(acked1 + acked2, got, "read_committed")
    ab = {(md.partition, md.offset) for _, md in acked_ab}
    assert not ab & set(got), f"read_committed returned aborted records at {sorted(ab & set(got))[:5]}"
    assert len(got) == len(committed1) + len(committed2), f"{len(got)} records read_committed"

    got_all = run(read("read_uncommitted"))
    check_read(acked1 + acked_ab + acked2, got_all, "read_uncommitted")
    assert len(got_all) == len(committed1) + len(aborted) + len(committed2)

    async def group_offset():
        c = AIOKafkaConsumer(bootstrap_servers=boot, group_id=group, enable_auto_commit=False)
        await c.start()
        try:
            return await c.committed(tp0)
        finally:
            await c.stop()

    assert run(group_offset()) == 5, "the group's offset is the committed transaction's (5), not the aborted one's (10)"
