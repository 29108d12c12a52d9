"""Zero-copy reads (`fetch.zero.copy`, issue 58 goal 4) while leaders are SIGKILLed and paused.

Consumers far behind the tail are answered from the segment files with sendfile. In a cluster
the partition they read moves between brokers under them: the leader they read from is killed
in the middle of a response, a paused leader is fenced and comes back a follower, a restarted
broker truncates its unacknowledged tail and catches up while the backlog is read from the new
leader's own copy of the files. What a user checks: every record any reader got is the one
produced at that offset, byte for byte; each reader's offsets only go forward; afterwards every
acknowledged record reads back at its offset; and the reads really went by sendfile.
"""

from __future__ import annotations

import threading
import time
import urllib.request

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

import backlog_data
from backlog_data import digest
from cluster_clients import ProducerThread, check_acked, read_all
from conftest import LOG_LEVEL, free_ports

PARTITIONS = 2
SEGMENT_BYTES = 8 << 20
BACKLOG_BYTES = 160 << 20
READERS = 3
FAULT_ROUNDS = 3


def produce_backlog(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    """About BACKLOG_BYTES over the partitions (acks=all, idempotent): the digest of each
    acknowledged value by (partition, offset)."""
    return backlog_data.produce_backlog(bootstrap, topic, PARTITIONS, BACKLOG_BYTES, key_prefix=b"bk-",
                                        flush_timeout=180, **{"enable.idempotence": True,
                                                              "log_level": LOG_LEVEL})


def zero_copy_bytes(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("frieda_fetch_zero_copy_bytes_total"))


class SendfileMeter(threading.Thread):
    """Adds up every node's frieda_fetch_zero_copy_bytes across its restarts (a restarted
    node's counter starts at 0 again), scraping each second."""

    def __init__(self, ports: dict[int, int]):
        super().__init__(daemon=True, name="sendfile-meter")
        self.ports = ports
        self.last = {i: 0.0 for i in ports}
        self.total = 0.0
        self.halt = threading.Event()

    def sample(self) -> None:
        for i, port in self.ports.items():
            try:
                now = zero_copy_bytes(port)
            except OSError:
                continue  # killed or paused right now
            self.total += now - self.last[i] if now >= self.last[i] else now
            self.last[i] = now

    def run(self) -> None:
        while not self.halt.wait(1.0):
            self.sample()


def test_backlog_reads_by_sendfile_survive_leader_kills_and_pauses(cluster, topic_name):
    """A 3-node cluster (RF 3, min.insync.replicas 2, 8 MiB segments); 160 MB of acknowledged
    records over 2 partitions; then 3 librdkafka readers read the whole backlog from offset 0 again
    and again (slowed, so faults land in the middle of their reads) beside a 200 records/s
    idempotent producer, while 3 rounds SIGKILL the leader of a partition (restarted 3 s later)
    and SIGSTOP the other partition's leader for 5 s (past the 3 s session: fenced, then back as a
    follower). Every record a reader got is the one produced at its offset (backlog digests, the
    live producer's values by key), offsets only forward per reader and partition; afterwards
    the whole log reads back and every acknowledgement is in it; over the test at least the
    backlog's size left the brokers by sendfile."""
    ports = dict(zip((1, 2, 3), free_ports(3)))
    c = cluster(3, node_settings={i: {"metrics.listen": f"127.0.0.1:{ports[i]}"} for i in ports})
    t = topic_name()
    admin = c.admin()
    admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=3,
                                  config={"segment.bytes": str(SEGMENT_BYTES)})])[t].result(timeout=30)
    c.wait_full_isr(t)
    t0 = time.monotonic()
    stored = produce_backlog(c.bootstrap, t)
    backlog_end = {p: 1 + max(o for (q, o) in stored if q == p) for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        assert sorted(o for (q, o) in stored if q == p) == list(range(backlog_end[p])), f"partition {p} has gaps"
    print(f"backlog: {len(stored)} records in {time.monotonic() - t0:.1f} s, ends {backlog_end}")
    c.wait_full_isr(t)

    live = ProducerThread(c.bootstrap, t, PARTITIONS, rate=200, tag="live")
    meter = SendfileMeter(ports)
    meter.sample()
    halt = threading.Event()
    problems: list[str] = []
    passes = [0] * READERS
    read_bytes = [0] * READERS

    def check(idx: int, m, last: dict[int, int]) -> None:
        p, o = m.partition(), m.offset()
        if o <= last.get(p, -1):
            problems.append(f"reader {idx}: [{p}]@{o} after @{last[p]}")
        last[p] = o
        if o < backlog_end[p]:
            if digest(m.value()) != stored[(p, o)]:
                problems.append(f"reader {idx}: [{p}]@{o} is not the record produced there")
        else:
            tag, _, seq = (m.key() or b"").rpartition(b"-")
            if tag != b"live" or not seq.isdigit() or m.value() != live.value_of(int(seq)):
                problems.append(f"reader {idx}: [{p}]@{o} key {m.key()!r:.40} is not a live record")

    def reader(idx: int) -> None:
        while not halt.is_set():
            cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"zcf-{idx}",
                             "enable.auto.commit": False, "log_level": LOG_LEVEL,
                             "fetch.max.bytes": 4 << 20, "max.partition.fetch.bytes": 1 << 20,
                             "fetch.wait.max.ms": 100})
            try:
                cons.assign([TopicPartition(t, p, 0) for p in range(PARTITIONS)])
                last: dict[int, int] = {}
                while not halt.is_set() and any(last.get(p, -1) + 1 < backlog_end[p] for p in range(PARTITIONS)):
                    for m in cons.consume(200, 0.5):
                        if m.error():
                            # a failover's transport errors are librdkafka's to retry
                            if m.error().fatal():
                                problems.append(f"reader {idx}: {m.error()}")
                            continue
                        check(idx, m, last)
                        read_bytes[idx] += len(m.value())
                    time.sleep(0.02)  # about 15-30 MB/s each: a pass spans several faults
                passes[idx] += 1
            finally:
                cons.close()

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(READERS)]
    live.start()
    meter.start()
    for th in threads:
        th.start()
    try:
        time.sleep(3)
        for r in range(FAULT_ROUNDS):
            victim = c.leader_of(t, r % PARTITIONS)
            c.kill(victim)
            time.sleep(3)
            c.start(victim)
            c.wait_full_isr(t, timeout=60)
            sleeper = c.leader_of(t, (r + 1) % PARTITIONS)
            c.pause(sleeper)
            time.sleep(5)
            c.resume(sleeper)
            c.wait_full_isr(t, timeout=60)
            live.wait_more(100, 60, f"after fault round {r}")
            time.sleep(2)
    finally:
        halt.set()
        for th in threads:
            th.join(60)
        live.stop(flush_timeout=120)
        meter.halt.set()
        meter.join(10)
    meter.sample()
    assert not any(th.is_alive() for th in threads), "a reader did not stop"
    assert not problems, f"{len(problems)} problems, e.g. {problems[:10]}"
    print(f"reader passes {passes}, MB read {[round(b / 1e6) for b in read_bytes]}, "
          f"sendfile MB {meter.total / 1e6:.0f}, live acks {len(live.acks)}")
    assert sum(read_bytes) >= BACKLOG_BYTES, f"the readers read only {sum(read_bytes)} bytes"
    assert meter.total >= BACKLOG_BYTES * 0.75, f"only {meter.total / 1e6:.0f} MB left the brokers by sendfile"

    # afterwards: the whole log, every acknowledgement in it, the backlog byte for byte
    c.wait_full_isr(t, timeout=60)
    got, hw = read_all(c.bootstrap, t, PARTITIONS, timeout=240)
    for (p, o), want in stored.items():
        assert digest(got[(p, o)][1]) == want, f"[{p}]@{o} differs after the faults"
    check_acked(live.acks, got, t)
    for p, high in hw.items():
        assert all((p, o) in got for o in range(high)), f"[{p}] has gaps below its high watermark {high}"
