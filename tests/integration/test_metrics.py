"""The Prometheus endpoint (issue 16): scraped while real clients run, its counters must agree
with what the clients did.

The cross-checks come from outside Frieda: librdkafka's own statistics (``statistics.interval.ms``:
per broker, the requests it sent by type) give the exact Produce count; delivery reports give each
partition's log end offset; the committed offsets come from the consumer. The exposition is parsed
with the Prometheus project's Python client (its strict OpenMetrics parser), so a format error fails
the test too.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import REPO_ROOT, free_port

PARTITIONS = 3
RECORDS = 3000
VALUE = b"m" * 200


def scrape(port: int) -> dict[str, list]:
    """Every sample by metric family name: [(sample name, labels, value), ...]."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        text = r.read().decode()
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = [(s.name, s.labels, s.value) for s in fam.samples]
    return out


def value(m: dict, family: str, sample: str | None = None, **labels) -> float:
    """The one sample of ``family`` (named ``sample``, default the family) with these labels."""
    want = {k: str(v) for k, v in labels.items()}
    found = [v for (n, lab, v) in m.get(family, [])
             if (sample is None or n == sample) and all(lab.get(k) == x for k, x in want.items())
             and (sample is not None or n == family)]
    assert len(found) == 1, f"{family} {sample} {labels}: {found} in {m.get(family)}"
    return found[0]


def stage_count(m: dict, request: str, stage: str) -> float:
    return value(m, "kafka_network_request_duration_seconds", "kafka_network_request_duration_seconds_count",
                 request=request, stage=stage)


def stage_sum(m: dict, request: str, stage: str) -> float:
    return value(m, "kafka_network_request_duration_seconds", "kafka_network_request_duration_seconds_sum",
                 request=request, stage=stage)


def test_metrics_agree_with_what_clients_did(make_own_broker, topic_name):
    port = free_port()
    broker = make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\nlog.flush.interval.messages = 1000\n')
    topic = topic_name()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # referenced until the result
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)

    # Produce, counting the Produce requests librdkafka itself sent.
    stats: list[dict] = []
    ends: dict[int, int] = {}

    def delivered(err, msg):
        assert err is None, err
        ends[msg.partition()] = max(ends.get(msg.partition(), 0), msg.offset() + 1)

    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.num.messages": 200, "statistics.interval.ms": 100,
                  "stats_cb": lambda s: stats.append(json.loads(s))})
    for i in range(RECORDS):
        p.produce(topic, VALUE, partition=i % PARTITIONS, on_delivery=delivered)
        if i % 500 == 499:
            p.poll(0)
    assert p.flush(30) == 0
    during = scrape(port)
    assert value(during, "kafka_server_socket_server_metrics_connection_count") >= 1
    deadline = time.monotonic() + 5
    n_stats = len(stats)
    while len(stats) < n_stats + 2 and time.monotonic() < deadline:
        p.poll(0.1)
    sent = sum(b["req"].get("Produce", 0) for b in stats[-1]["brokers"].values())
    assert sent >= RECORDS // 200, stats[-1]["brokers"]
    del p

    m = scrape(port)
    produce_requests = sum(v for (_, lab, v) in m["kafka_network_requests"] if lab["request"] == "Produce")
    assert produce_requests == sent, "broker-side Produce count differs from librdkafka's own"
    assert value(m, "kafka_network_request_bytes", "kafka_network_request_bytes_total",
                 request="Produce") > RECORDS * len(VALUE)
    # Every stage of every Produce was timed; the parts fit in the total.
    for stage in ("queue", "decode", "local", "append", "encode", "response_queue", "send", "total"):
        assert stage_count(m, "Produce", stage) == sent, stage
    parts = sum(stage_sum(m, "Produce", s)
                for s in ("queue", "decode", "local", "append", "encode", "response_queue", "send"))
    assert parts <= stage_sum(m, "Produce", "total") * 1.001 + 1e-4
    # The log as the delivery reports saw it.
    for part in range(PARTITIONS):
        assert value(m, "kafka_log_log_log_end_offset", topic=topic, partition=part) == ends[part]
        assert value(m, "kafka_cluster_partition_high_watermark", topic=topic, partition=part) == ends[part]
        assert value(m, "kafka_log_log_log_start_offset", topic=topic, partition=part) == 0
        assert value(m, "kafka_log_log_num_log_segments", topic=topic, partition=part) == 1
        assert value(m, "kafka_log_log_size", topic=topic, partition=part) > ends[part] * len(VALUE)
    assert sum(ends.values()) == RECORDS
    assert value(m, "kafka_server_replicamanager_under_replicated_partitions") == 0
    flushes = value(m, "kafka_log_log_flush_duration_seconds", "kafka_log_log_flush_duration_seconds_count")
    assert flushes >= 1, "log.flush.interval.messages=1000 with 3000 records flushes"

    # Consume everything in a group and commit: lag 0; then 10 more records: lag 10.
    group = f"g-{topic}"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < RECORDS and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and msg.error() is None:
            got += 1
    assert got == RECORDS
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in c.committed(
        [TopicPartition(topic, i) for i in range(PARTITIONS)], timeout=10)}
    c.close()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for _ in range(10):
        p.produce(topic, VALUE, partition=0)
    assert p.flush(30) == 0
    del p
    m = scrape(port)
    for part in range(PARTITIONS):
        assert value(m, "kafka_consumergroup_current_offset", group=group, topic=topic, partition=part) \
            == committed[part] == ends[part]
        assert value(m, "kafka_consumergroup_lag", group=group, topic=topic,
                     partition=part) == (10 if part == 0 else 0)
    fetch_bytes = value(m, "kafka_network_response_bytes", "kafka_network_response_bytes_total", request="Fetch")
    assert fetch_bytes > RECORDS * len(VALUE)
    # A consumer's fetches wait at the end of the log (max.wait.ms): the remote stage.
    assert stage_count(m, "Fetch", "remote") >= 1
    assert value(m, "kafka_network_requests", "kafka_network_requests_total",
                 request="OffsetCommit", version=9) >= 1

    # The Grafana dashboard in the repository uses only metrics the broker serves (the offline
    # partitions count exists in cluster mode only).
    dashboard = json.loads((REPO_ROOT / "docs" / "grafana" / "frieda.json").read_text())
    used = {name for panel in dashboard["panels"] for t in panel["targets"]
            for name in re.findall(r"\bkafka_[a-z_]+", t["expr"])}
    # a sample name is its family's, or the family's plus a histogram or counter suffix
    missing = {name for name in used
               if name not in m and re.sub(r"_(bucket|sum|count|total)$", "", name) not in m}
    missing -= {"kafka_controller_kafkacontroller_offline_partitions_count"}
    assert not missing, f"the dashboard uses metrics the broker does not serve: {missing}"

    # Every client is gone: no connection stays counted.
    del admin
    deadline = time.monotonic() + 10
    while value(scrape(port), "kafka_server_socket_server_metrics_connection_count") != 0:
        assert time.monotonic() < deadline, "connections still counted after every client closed"
        time.sleep(0.2)


def test_metrics_endpoint_answers_only_get_metrics(make_own_broker):
    port = free_port()
    make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\n')
    for path in ("/other", "/", "/metrics/x"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
        assert e.value.code == 404, path
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 405
    m = scrape(port)
    # Before any client: the gauges are there, no request family yet.
    assert value(m, "kafka_server_socket_server_metrics_connection_count") == 0
    assert "kafka_network_requests" not in m


def test_metrics_off_by_default(own_broker):
    """Without metrics.listen nothing listens besides the Kafka port and the broker says so in
    its effective configuration."""
    text = own_broker.stderr_text()
    assert "metrics.listen = \n" in text or "metrics.listen = \r\n" in text or "metrics.listen = " in text
    assert "metrics endpoint listening" not in text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("zero_copy", [False, True])
def test_fetch_reads_say_whether_the_page_cache_missed(make_own_broker, topic_name, zero_copy):
    """Page-cache-miss reads: 8 MB in one partition (twice the 4 MiB tail cache), the segment
    files written back and dropped from the page cache (fsync, then posix_fadvise DONTNEED); a
    consumer reading the partition from offset 0 makes the broker read from the device
    (source="disk"), a second consumer reading it all again is served by the page cache (the
    first one read every byte, so nothing is left to miss), and reading the newest records comes
    from the tail cache. Both with reads copied (preadv2 RWF_NOWAIT says what was cached) and
    sent with sendfile (cachestat says it, before the read)."""
    import os

    port = free_port()
    broker = make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\n"fetch.zero.copy" = {str(zero_copy).lower()}\n')
    topic = topic_name()
    a = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the future completes
    a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": "all"})
    for _ in range(8000):
        p.produce(topic, value=b"x" * 1000)
        p.poll(0)
    assert p.flush(30) == 0

    def drop_page_cache():
        for path in (broker.data_dir).rglob("*.log"):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)

    def read_bytes(source: str) -> float:
        return value(scrape(port), "frieda_log_fetch_read_bytes", "frieda_log_fetch_read_bytes_total", source=source)

    def consume(first: int, n: int) -> None:
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "fr", "enable.auto.commit": False,
                      "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 20})
        c.assign([TopicPartition(topic, 0, first)])
        got, deadline = 0, time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        c.close()
        assert got >= n

    drop_page_cache()
    disk0, cached0 = read_bytes("disk"), read_bytes("page_cache")
    consume(0, 8000)
    disk1, cached1 = read_bytes("disk"), read_bytes("page_cache")
    # Records below the tail cache came from the device (kernel readahead serves some of them
    # from memory, so not all 4 MB). A sendfile of the first fetch's missing pages starts the
    # device's readahead (read_ahead_kb, 8 MiB on this machine's disk), whose pages are in the
    # cache (if still being read) when the next fetches ask: only about the first 1 MiB fetch
    # counts as missed then.
    assert disk1 - disk0 >= (1_000_000 if not zero_copy else 100_000), (disk0, disk1)
    # The device's readahead the first read started may still be under way (slower when other
    # tests load the machine), and a page being read counts as missed (RWF_NOWAIT answers
    # EAGAIN for it): the segments are read here to the end first, so every page is in memory.
    for path in (broker.data_dir).rglob("*.log"):
        path.read_bytes()
    consume(0, 8000)
    disk2, cached2 = read_bytes("disk"), read_bytes("page_cache")
    print(f"fetch bytes: disk {disk0:.0f} -> {disk1:.0f} -> {disk2:.0f}, page cache {cached0:.0f} -> {cached1:.0f} -> {cached2:.0f}")
    # Read again, everything is in memory: the page cache serves it, the device nothing more.
    assert cached2 - cached1 >= 1_000_000, (cached1, cached2)
    assert disk2 - disk1 < (disk1 - disk0) / 10, (disk0, disk1, disk2)
    tail0 = read_bytes("tail_cache")
    consume(7500, 500)
    assert read_bytes("tail_cache") - tail0 >= 400_000


def _proc_status(pid: int, key: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{key} not in /proc/{pid}/status")


def test_process_metrics_and_build_info_describe_the_running_process(make_own_broker, topic_name):
    """``process_*`` as every Prometheus client library names them, checked against what the
    kernel says of the broker's PID from outside, and ``frieda_build_info`` against the git
    checkout the binary was built from and ``frieda --version``."""
    import os
    import subprocess
    from conftest import frieda_bin

    port = free_port()
    before = time.time()
    b = make_own_broker(f'metrics.listen = "127.0.0.1:{port}"\n')
    after = time.time()
    pid = b.proc.pid
    m = scrape(port)

    fds = len(os.listdir(f"/proc/{pid}/fd"))
    assert abs(value(m, "process_open_fds") - fds) <= 8, (value(m, "process_open_fds"), fds)
    soft = int(open(f"/proc/{pid}/limits").read().split("Max open files")[1].split()[0])
    assert value(m, "process_max_fds") == soft
    rss = _proc_status(pid, "VmRSS") * 1024
    assert 0.5 * rss <= value(m, "process_resident_memory_bytes") <= 2 * rss, rss
    assert value(m, "process_virtual_memory_bytes") >= value(m, "process_resident_memory_bytes")
    assert value(m, "process_threads") == _proc_status(pid, "Threads")
    assert before - 1 <= value(m, "process_start_time_seconds") <= after + 1, (before, after)
    # CPU seconds: what the kernel counts for the PID (utime + stime, whole ticks), read from
    # outside just before and after the scrape. The kernel counts in ticks (10 ms), so a broker
    # that has done little can honestly be at 0: produce until the kernel has counted some CPU
    # (bounded), then the scraped counter must lie between the two outside readings.
    def kernel_cpu_seconds() -> float:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    topic = topic_name()
    deadline = time.time() + 60
    while kernel_cpu_seconds() < 0.05:
        assert time.time() < deadline, "the broker was never seen using 50 ms of CPU"
        for i in range(20000):
            p.produce(topic, value=VALUE)
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(30) == 0
    low = kernel_cpu_seconds()
    cpu = value(scrape(port), "process_cpu_seconds", "process_cpu_seconds_total")
    high = kernel_cpu_seconds()
    assert low <= cpu <= high + 0.01, (low, cpu, high)
    assert cpu > 0

    # Build info: the commit this checkout is at, as ``frieda --version`` says it.
    info = [(lab, v) for (n, lab, v) in m["frieda_build_info"] if n == "frieda_build_info"]
    assert len(info) == 1 and info[0][1] == 1, info
    labels = info[0][0]
    version = subprocess.run([str(frieda_bin()), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.strip() == f"frieda {labels['version']} ({labels['revision']})", version
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    if "FRIEDA_BIN" in os.environ:
        pass  # a binary built elsewhere
    elif head.returncode == 0:
        # The binary under test is built from this checkout (scripts/test builds it first); a
        # commit made since the build would show here as a stale binary.
        assert labels["revision"] == head.stdout.strip()
    else:
        assert labels["revision"] == "unknown"
