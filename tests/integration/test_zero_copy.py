"""Consumers' reads of the segment files sent with sendfile (`fetch.zero.copy`, issue 58 goal 4).

A consumer far behind the tail is answered from the segment files; with `fetch.zero.copy` (the
default) the broker hands the socket file ranges instead of reading them into memory. What a
user checks: every record comes back at its offset byte for byte, through librdkafka and
kafka-python, with zero copy on and off; and reads going on while retention deletes the very
segments being sent, and while consumers are killed in the middle of a response, neither hand
anyone a wrong byte nor disturb the broker.
"""

from __future__ import annotations

import signal
import shutil
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from backlog_data import digest, produce_backlog, value_for
from conftest import free_port
from test_metrics import scrape

PARTITIONS = 2
SEGMENT_BYTES = 8 << 20


def produce(bootstrap: str, topic: str, total_bytes: int) -> dict[tuple[int, int], bytes]:
    """About total_bytes over PARTITIONS (backlog_data.produce_backlog): the digest of each
    acknowledged value by (partition, offset)."""
    return produce_backlog(bootstrap, topic, PARTITIONS, total_bytes)


def consume_all(bootstrap: str, topic: str, part: int, start: int, end: int) -> dict[int, bytes]:
    """Reads partition part from start to end with librdkafka: digest of each value by offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"zc-{part}", "enable.auto.commit": False,
                  "fetch.max.bytes": 4 << 20, "max.partition.fetch.bytes": 1 << 20})
    c.assign([TopicPartition(topic, part, start)])
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 180
    while len(got) < end - start and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            assert m.error() is None, m.error()
            assert m.offset() not in got, f"offset {m.offset()} twice"
            got[m.offset()] = digest(m.value())
    c.close()
    return got


def bytes_sent(port: int, name: str) -> float:
    samples = scrape(port)[name]
    return sum(v for (n, _labels, v) in samples if n.endswith("_total"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("zero_copy", [True, False])
def test_a_backlog_comes_back_byte_for_byte_with_and_without_zero_copy(make_own_broker, topic_name, zero_copy):
    """160 MB over 2 partitions of 8 MiB segments, far beyond the tail cache: read back from
    offset 0 by librdkafka (every record at its offset, byte for byte) and a part of it by
    kafka-python (Fetch v4-v12 at its own versions: int32 record lengths) and kcat. With zero
    copy on, at least the bytes below the tail cache left the broker by sendfile; off, none."""
    port = free_port()
    broker = make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\n"fetch.zero.copy" = {str(zero_copy).lower()}\n')
    topic = topic_name()
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1,
                              config={"segment.bytes": str(SEGMENT_BYTES)})])[topic].result(timeout=30)
    stored = produce(broker.bootstrap, topic, 160 << 20)
    sent0 = bytes_sent(port, "frieda_fetch_zero_copy_bytes")
    for part in range(PARTITIONS):
        offsets = sorted(o for (p, o) in stored if p == part)
        assert offsets == list(range(len(offsets)))
        got = consume_all(broker.bootstrap, topic, part, 0, len(offsets))
        assert len(got) == len(offsets), (part, len(got), len(offsets))
        bad = [o for o in offsets if got[o] != stored[(part, o)]]
        assert not bad, f"partition {part}: {len(bad)} records differ, first at offset {bad[0]}"
    sent = bytes_sent(port, "frieda_fetch_zero_copy_bytes") - sent0
    print(f"zero copy {zero_copy}: {sent / 1e6:.1f} MB sent with sendfile")
    if zero_copy:
        assert sent >= 120e6, sent
    else:
        assert sent == 0, sent

    # kafka-python: its own Fetch versions, 20 MB of partition 1 from offset 100.
    from kafka import KafkaConsumer, TopicPartition as KTP
    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                       max_partition_fetch_bytes=1 << 20, consumer_timeout_ms=20000)
    tp = KTP(topic, 1)
    kc.assign([tp])
    kc.seek(tp, 100)
    n, expect_offset = 0, 100
    for m in kc:
        assert m.offset == expect_offset, (m.offset, expect_offset)
        assert digest(m.value) == stored[(1, m.offset)], m.offset
        expect_offset += 1
        n += len(m.value)
        if n >= 20 << 20:
            break
    kc.close()
    assert n >= 20 << 20, n

    # Kafka's own console consumer (the Java client): 3,000 records of partition 0 from offset 0.
    if zero_copy:
        from txn_helpers import java_classpath
        r = subprocess.run(["java", "-Xmx256m", "-cp", java_classpath(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
                            "--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0",
                            "--offset", "0", "--max-messages", "3000", "--timeout-ms", "60000",
                            "--property", "print.offset=true"],
                           capture_output=True, timeout=180)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        lines = [ln for ln in r.stdout.decode().split("\n") if ln.startswith("Offset:")]
        assert len(lines) == 3000, (len(lines), r.stderr.decode()[-2000:])
        for want, line in enumerate(lines):
            meta, _, value = line.rpartition("\t")
            assert meta == f"Offset:{want}", (meta, want)
            assert digest(value.encode()) == stored[(0, want)], want

    # kcat: the sizes of the first 2,000 records of partition 0.
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.fail("kcat is not installed (.ci/run installs it)")
    out = subprocess.run([kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
                          "-c", "2000", "-e", "-q", "-f", "%o %S\n"], capture_output=True, timeout=120, check=True)
    lines = out.stdout.decode().split("\n")[:-1]
    assert len(lines) == 2000
    for line in lines:
        o, size = map(int, line.split())
        assert size == len(value_for(0, o)), line


@pytest.mark.timeout(600)
def test_reads_while_retention_deletes_their_segments_and_readers_are_killed(make_own_broker, topic_name):
    """Three librdkafka readers go through a 120 MB backlog of 4 MiB segments while the topic's
    retention.bytes is cut to 16 MB (the segments being sent are deleted under them) and kcat
    readers are SIGKILLed in the middle of their responses, over and over. Every record any
    reader gets is the one produced at that offset, offsets only go forward per reader (an
    OFFSET_OUT_OF_RANGE moves it to the new log start), and afterwards a fresh reader gets the
    whole retained log, byte for byte, from a broker that never logged a panic."""
    port = free_port()
    broker = make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\n"log.retention.check.interval.ms" = 500\n')
    topic = topic_name()
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1,
                              config={"segment.bytes": str(4 << 20)})])[topic].result(timeout=30)
    stored = produce(broker.bootstrap, topic, 120 << 20)
    problems: list[str] = []
    received = [0]
    per_reader = [0, 0, 0]
    stop = threading.Event()

    def reader(idx: int) -> None:
        # Slow readers (256 KiB per partition per fetch, a pause per 100 records): still in
        # the backlog when retention deletes it.
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"zcr-{idx}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 256 << 10,
                      "queued.max.messages.kbytes": 1024})
        c.assign([TopicPartition(topic, part, 0) for part in range(PARTITIONS)])
        last = {part: -1 for part in range(PARTITIONS)}
        quiet_since = time.monotonic()
        while not stop.is_set() and time.monotonic() - quiet_since < 10:
            time.sleep(0.02)
            for m in c.consume(100, 0.5):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        problems.append(f"reader {idx}: {m.error()}")
                    continue
                quiet_since = time.monotonic()
                key = (m.partition(), m.offset())
                if m.offset() <= last[m.partition()]:
                    problems.append(f"reader {idx}: offset {key} after {last[m.partition()]}")
                last[m.partition()] = m.offset()
                if digest(m.value()) != stored.get(key):
                    problems.append(f"reader {idx}: wrong bytes at {key}")
                received[0] += 1
                per_reader[idx] += 1
        c.close()

    def guarded(idx: int) -> None:
        try:
            reader(idx)
        except Exception as e:  # a reader that died is a failure, not a silent zero
            problems.append(f"reader {idx} raised {e!r}")

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    assert kcat is not None, "kcat is not installed (.ci/run installs it)"
    time.sleep(0.5)
    # Cut retention while the readers are in the middle of the backlog.
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.bytes": str(16 << 20)})
    for f in a.alter_configs([res]).values():
        f.result(timeout=30)
    kills = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        k = subprocess.Popen([kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-q",
                              "-X", "fetch.max.bytes=8388608", "-f", "%o\n"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3 + 0.1 * (kills % 5))
        k.send_signal(signal.SIGKILL)
        k.wait(timeout=10)
        kills += 1
    stop.set()
    for t in threads:
        t.join(timeout=120)
    assert not problems, problems[:10]
    assert received[0] > 1000, received[0]
    # Retention deleted records before some reader got to them: it skipped to the new start.
    assert min(per_reader) < len(stored), (per_reader, len(stored))
    print(f"{received[0]} records read by 3 readers, {kills} kcat readers killed mid-read")

    # Retention took effect, and what is left reads back whole.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "zc-after", "enable.auto.commit": False})
    for part in range(PARTITIONS):
        low, high = c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)
        assert low > 0, f"partition {part}: retention deleted nothing (log start {low})"
        got = consume_all(broker.bootstrap, topic, part, low, high)
        assert len(got) == high - low
        bad = [o for o in got if got[o] != stored[(part, o)]]
        assert not bad, f"partition {part}: {len(bad)} records differ"
    c.close()
    assert broker.proc.poll() is None, "the broker died"
