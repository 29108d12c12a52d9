"""Hostile clients and resource bounds: slowloris (a byte a second), idle connections, thousands of
idle connections, a request flood from many connections, clients that never read their responses.
Throughout, the broker's resident memory (from /proc) stays under a bound and a real client on its
own connections keeps a sane produce+consume round trip (p99 under 1 s: the machine is shared
and noisy, so the bound is generous; a broker that stalls misses it by far).

Own broker only (the limits are set in its config file, its memory is read from /proc)."""

from __future__ import annotations

import resource
import select
import socket
import statistics
import threading
import time

import pytest
from confluent_kafka import KafkaError, TopicPartition

import helpers as h
import kafka_wire as w

# 3000 client sockets in this process, as many in the broker (which inherits the limit)
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if _soft < 8192:
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(_hard, 8192), 65536) if _hard != resource.RLIM_INFINITY
                                                    else 65536, _hard))
    except (ValueError, OSError):
        pass
NOFILE = resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class RoundTrips(threading.Thread):
    """A confluent-kafka producer (acks=all) and consumer: produce one record, wait for it to be
    consumed, record the time; repeat until stopped."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.p = h.producer(bootstrap, acks="all", linger_ms=0, message_timeout_ms=20000)
        self.c = h.consumer(bootstrap, fetch_wait_max_ms=10)
        self.c.assign([TopicPartition(topic, 0, 0)])
        self.topic = topic
        self.samples: list[float] = []
        self.errors: list[str] = []
        self.stop_flag = threading.Event()
        self.n = 0

    def one(self) -> None:
        value = b"rt %d" % self.n
        t0 = time.monotonic()
        log = h.DeliveryLog()
        self.p.produce(self.topic, value=value, partition=0, on_delivery=log.callback(h.Rec(None, value, None, 0)))
        self.p.flush(20)
        if log.errors or not log.acked:
            self.errors.append(f"produce {self.n}: {log.errors}")
            return
        deadline = t0 + 20
        while time.monotonic() < deadline:
            m = self.c.poll(0.05)
            if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                continue
            if m.error():
                self.errors.append(str(m.error()))
                return
            if m.value() == value:
                self.samples.append(time.monotonic() - t0)
                self.n += 1
                return
        self.errors.append(f"record {self.n} not consumed within 20 s")

    def run(self) -> None:
        while not self.stop_flag.is_set():
            self.one()
            time.sleep(0.02)

    def reset(self) -> None:
        self.samples.clear()

    def stop(self) -> None:
        self.stop_flag.set()
        self.join(timeout=30)
        self.c.close()
        self.p.flush(5)
        self.p = None  # destroys the producer (and its connections)

    def p99(self) -> float:
        s = sorted(self.samples)
        return s[min(len(s) - 1, int(len(s) * 0.99))]

    def check(self, what: str, min_samples: int = 10) -> str:
        assert not self.errors, f"{what}: the real client failed: {self.errors[:3]}"
        assert len(self.samples) >= min_samples, f"{what}: only {len(self.samples)} round trips completed"
        p99 = self.p99()
        summary = (f"{what}: {len(self.samples)} round trips, p50 {statistics.median(self.samples) * 1000:.1f} ms, "
                   f"p99 {p99 * 1000:.1f} ms")
        print(summary)
        assert p99 < 1.0, summary
        return summary


@pytest.fixture
def limited(make_own_broker, topic_name):
    """A broker with short limits, a topic and a running round-trip client."""
    started = []

    def make(extra: str = "", idle_ms: int = 3000):
        b = make_own_broker(f"connections.max.idle.ms = {idle_ms}\nrequest.read.timeout.ms = 1500\n" + extra)
        topic = topic_name("rt")
        h.create_topic(b.bootstrap, topic, partitions=1)
        rt = RoundTrips(b.bootstrap, topic)
        rt.start()
        started.append(rt)
        time.sleep(0.5)
        return b, rt

    yield make
    for rt in started:
        rt.stop()


def closed_within(s: socket.socket, seconds: float) -> float | None:
    """Seconds until the broker closed ``s`` (EOF or reset; data is drained), None if still open."""
    t0 = time.monotonic()
    s.setblocking(False)
    poller = select.poll()
    poller.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
    while time.monotonic() - t0 < seconds:
        if poller.poll(100):
            try:
                if not s.recv(65536):
                    return time.monotonic() - t0
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - t0
            except BlockingIOError:
                pass
    return None


def test_slowloris_byte_a_second_is_cut_off(limited):
    """A request trickled a byte a second is closed after request.read.timeout.ms (1.5 s here),
    long before it would be complete; 200 such connections at once do not hurt the real client."""
    b, rt = limited()
    frame = w.api_versions_v0(7)
    conns = [w.connect(b.host, b.port) for _ in range(200)]
    rss0 = rss_bytes(b.proc.pid)
    rt.reset()
    t0 = time.monotonic()
    sent = 0
    open_ = list(conns)
    while open_ and time.monotonic() - t0 < 15:
        for s in list(open_):
            try:
                s.send(frame[sent:sent + 1])
            except OSError:
                open_.remove(s)
        sent += 1
        time.sleep(1.0)
        open_ = [s for s in open_ if closed_within(s, 0.001) is None]
    took = time.monotonic() - t0
    assert not open_, f"{len(open_)} slowloris connections still open after {took:.1f}s"
    assert sent < len(frame), f"the broker waited for the whole {len(frame)}-byte request at a byte a second"
    assert took < 8, f"slowloris connections took {took:.1f}s to be closed (request.read.timeout.ms = 1500)"
    assert "request read too slowly" in b.stderr_text()
    rt.check("during 200 slowloris connections")
    assert rss_bytes(b.proc.pid) < rss0 + 64 * 2**20
    for s in conns:
        s.close()
    # and a frame header announcing a large request, then silence, is cut off as well
    with w.connect(b.host, b.port) as s:
        s.sendall((50_000_000).to_bytes(4, "big") + b"\x00\x12")
        t = closed_within(s, 10)
        assert t is not None and t < 5, f"half-announced 50 MB request not cut off ({t})"


def test_idle_connection_closed_after_connections_max_idle(limited):
    b, rt = limited()
    with w.connect(b.host, b.port) as idle, w.connect(b.host, b.port) as busy:
        # a connection that talks now and then stays open
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            assert w.parse_api_versions_v0(w.request(busy, w.api_versions_v0(1)))[1] == 0
            time.sleep(0.5)
        t = closed_within(idle, 5)
        assert t is not None, "an idle connection outlived connections.max.idle.ms (3 s) by 5 s"
        assert w.parse_api_versions_v0(w.request(busy, w.api_versions_v0(2)))[1] == 0
    assert "closing idle connection" in b.stderr_text()
    rt.check("with idle connections being closed", min_samples=5)


@pytest.mark.timeout(240)
def test_thousands_of_idle_connections(limited):
    """3000 idle connections: bounded memory, the real client unaffected, all closed when idle."""
    n = min(3000, NOFILE - 500)
    assert n >= 1000, f"file descriptor limit {NOFILE} too low for this test"
    b, rt = limited(idle_ms=15000)
    rss0 = rss_bytes(b.proc.pid)
    rt.reset()
    conns = []
    try:
        for i in range(n):
            conns.append(w.connect(b.host, b.port))
            if i % 500 == 499:
                time.sleep(0.2)
        # they are really served: a sample of them gets answers
        for s in conns[::300]:
            assert w.parse_api_versions_v0(w.request(s, w.api_versions_v0(3)))[1] == 0
        time.sleep(3)
        rss = rss_bytes(b.proc.pid)
        print(f"{n} idle connections: broker RSS {rss0 >> 20} MiB -> {rss >> 20} MiB")
        assert rss - rss0 < 150 * 2**20, f"{n} idle connections cost {(rss - rss0) >> 20} MiB"
        rt.check(f"with {n} idle connections")
        # connections.max.idle.ms: they are all closed by the broker
        deadline = time.monotonic() + 40
        poller = select.poll()
        by_fd = {}
        for s in conns:
            s.setblocking(False)
            poller.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
            by_fd[s.fileno()] = s
        while by_fd and time.monotonic() < deadline:
            for fd, _ev in poller.poll(1000):
                try:
                    data = by_fd[fd].recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    poller.unregister(fd)
                    del by_fd[fd]
        still = list(by_fd.values())
        assert not still, f"{len(still)} of {n} idle connections not closed by the broker"
    finally:
        for s in conns:
            s.close()


@pytest.mark.timeout(180)
def test_request_flood_from_many_connections(limited, topic_name):
    """50 connections pipelining Metadata and small Produce requests as fast as they can (reading
    the responses): the real client keeps its latency, memory stays bounded."""
    b, rt = limited()
    topic = topic_name("flood")
    h.create_topic(b.bootstrap, topic, partitions=1)
    rss0 = rss_bytes(b.proc.pid)
    rt.reset()
    stop = threading.Event()
    counts = []
    errors = []
    batch = w.record_batch([w.Record(b"k", b"v" * 100, [], int(time.time() * 1000))])

    def flood(i):
        n = 0
        try:
            with w.connect(b.host, b.port) as s:
                while not stop.is_set():
                    reqs = b"".join(w.metadata_v1(n + j, [topic]) if j % 2 else
                                    w.produce_v9(n + j, topic, 0, batch, acks=1) for j in range(32))
                    s.sendall(reqs)
                    for _ in range(32):
                        w.recv_frame(s, timeout=30)
                    n += 32
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(repr(e))
        counts.append(n)

    threads = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(50)]
    for t in threads:
        t.start()
    peak = rss0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 12:
        time.sleep(0.5)
        peak = max(peak, rss_bytes(b.proc.pid))
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[:3]
    total = sum(counts)
    print(f"flood: {total} requests in 12 s from 50 connections; RSS {rss0 >> 20} -> peak {peak >> 20} MiB")
    assert total > 1000, "the flood did not get through"
    assert peak - rss0 < 300 * 2**20, f"RSS grew by {(peak - rss0) >> 20} MiB under the flood"
    rt.check("during a request flood from 50 connections")
    b.assert_alive()


@pytest.mark.timeout(180)
def test_clients_that_never_read_responses(limited, topic_name):
    """40 connections send Metadata requests, and now and then a 256 KiB Produce, and never read
    a response. Backpressure (TCP, then bounded queued responses and in-flight requests per
    connection) keeps memory bounded and the real client keeps its latency; a connection whose
    responses cannot be handed to its socket for connections.max.idle.ms (3 s here) is closed
    and what it left unread is dropped."""
    # small kernel send buffers (Kafka's default is 100 KiB): a non-reader blocks quickly
    b, rt = limited("max.inflight.requests.per.connection = 16\nlog.retention.check.interval.ms = 1000\n"
                    "socket.send.buffer.bytes = 65536\n")
    topic = topic_name("nr")
    h.create_topic(b.bootstrap, topic, partitions=1, config={"retention.bytes": "20000000", "segment.bytes": "4000000"})
    rss0 = rss_bytes(b.proc.pid)
    rt.reset()
    big = w.record_batch([w.Record(b"k", b"x" * (256 * 1024), [], int(time.time() * 1000))])
    stop = threading.Event()
    sent_bytes = []
    socks = []

    def never_read(i):
        sent = 0
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        s.connect((b.host, b.port))
        socks.append(s)
        s.settimeout(0.5)
        j = 0
        pending = b""
        try:
            while not stop.is_set():
                if not pending:
                    pending = w.produce_v9(j, topic, 0, big, acks=-1) if j % 16 == 0 else w.metadata_v1(j, None)
                    j += 1
                try:
                    n = s.send(pending)
                    sent += n
                    pending = pending[n:]
                except socket.timeout:
                    continue  # blocked: backpressure
                except OSError:
                    break  # the broker closed us
        finally:
            sent_bytes.append(sent)

    threads = [threading.Thread(target=never_read, args=(i,), daemon=True) for i in range(40)]
    for t in threads:
        t.start()
    peak = rss0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        time.sleep(0.5)
        peak = max(peak, rss_bytes(b.proc.pid))
    summary = rt.check("with 40 connections that never read their responses")
    stop.set()
    for t in threads:
        t.join(timeout=30)
    total = sum(sent_bytes)
    print(f"non-readers sent {total >> 20} MiB; broker RSS {rss0 >> 20} -> peak {peak >> 20} MiB; {summary}")
    assert peak - rss0 < 200 * 2**20, f"RSS grew by {(peak - rss0) >> 20} MiB"
    # all of them are closed by the broker (their unread responses drained here first)
    open_ = list(socks)
    deadline = time.monotonic() + 20
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if closed_within(s, 0.2) is None]
    assert not open_, f"{len(open_)} connections that never read are still open"
    assert "has not read its responses" in b.stderr_text(), "no connection was blocked by backpressure"
    for s in socks:
        s.close()
    b.assert_alive()


@pytest.mark.timeout(180)
def test_large_requests_share_one_budget(limited):
    """40 connections each start a 4 MiB request, send 3.5 MB of it and stall. With
    queued.max.request.bytes = 32 MiB only a few of them are buffered by the broker at a time
    (the others wait, unread, in their sockets), so memory stays bounded; the real client's small
    requests never wait for that budget; each stalled request is cut off by
    request.read.timeout.ms once it holds budget, and the next ones get their turn."""
    budget = 32 * 2**20
    b, rt = limited(f"queued.max.request.bytes = {budget}\n")
    rss0 = rss_bytes(b.proc.pid)
    rt.reset()
    size = 4 * 2**20
    chunk = size.to_bytes(4, "big") + bytes(3_500_000)
    socks = [w.connect(b.host, b.port) for _ in range(40)]

    def push(s):
        s.settimeout(20)
        try:
            s.sendall(chunk)
        except OSError:
            pass  # cut off, or still blocked after 20 s: both fine here

    threads = [threading.Thread(target=push, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    peak = rss0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 8:
        time.sleep(0.2)
        peak = max(peak, rss_bytes(b.proc.pid))
    summary = rt.check("with 40 stalled 4 MiB requests")
    print(f"stalled large requests: broker RSS {rss0 >> 20} -> peak {peak >> 20} MiB (budget {budget >> 20} MiB); {summary}")
    assert peak - rss0 < budget + 48 * 2**20, \
        f"RSS grew by {(peak - rss0) >> 20} MiB with a {budget >> 20} MiB request budget"
    open_ = [s for s in socks if closed_within(s, 0.01) is None]
    deadline = time.monotonic() + 40
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if closed_within(s, 0.2) is None]
    assert not open_, f"{len(open_)} stalled requests never cut off"
    for t in threads:
        t.join(timeout=30)
    for s in socks:
        s.close()
    b.assert_alive()
