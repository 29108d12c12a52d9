"""The wire observer (`frieda-bench observe`, FSObserver): measured from captured loopback
packets alone, its figures must equal what the broker and the clients know.

A Frieda with its metrics endpoint on; the observer captures the broker's port while a
confluent-kafka producer sends 200 records one request at a time (flush after each) and a
consumer reads them back. Then: every API's request count the observer saw equals the broker's
own `kafka_network_requests_total`; the producer's client id made the Produce requests and the
consumer's the Fetch requests; no capture drop or resynchronisation; and the observer's Produce
latency (on the wire) is no longer than what the producer measured around it (produce() to the
delivery report) at the median and the maximum. The comparison with frieda-bench's own
histograms on both brokers is `scripts/bench --observe`.

Needs root (AF_PACKET), as the README's test command runs.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from conftest import REPO_ROOT, free_port
from helpers import LOG_LEVEL, create_topic

BENCH = REPO_ROOT / "target" / "release" / "frieda-bench"


def scrape_requests(port: int) -> dict[str, int]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, int] = {}
    for m in re.finditer(r'^kafka_network_requests_total\{request="(\w+)",version="\d+"\} (\d+)', text, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
    return out


@pytest.mark.timeout(120)
def test_observer_counts_and_latencies_match_the_broker_and_clients(make_own_broker, topic_name, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("AF_PACKET capture needs root (the README's test command runs as root)")
    assert BENCH.exists(), f"{BENCH} missing: cargo build --release"
    metrics_port = free_port()
    b = make_own_broker(f'"metrics.listen" = "127.0.0.1:{metrics_port}"\n')
    report = tmp_path / "observe.json"
    obs = subprocess.Popen([str(BENCH), "observe", "--port", str(b.port), "--secs", "8", "--every", "0",
                            "--json", str(report)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = obs.stderr.readline()
        assert "capturing on lo" in line, line + obs.stderr.read()
        t0 = time.monotonic()
        topic = topic_name()
        create_topic(b.bootstrap, topic, partitions=1)
        p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "obs-producer", "linger.ms": 0,
                      "acks": "all", "log_level": LOG_LEVEL})
        client_us = []
        for i in range(200):
            sent = time.perf_counter()
            done = []
            p.produce(topic, value=b"observed %d" % i, on_delivery=lambda e, m: done.append((e, time.perf_counter())))
            assert p.flush(10) == 0
            assert done and done[0][0] is None, done
            client_us.append((done[0][1] - sent) * 1e6)
        c = Consumer({"bootstrap.servers": b.bootstrap, "client.id": "obs-consumer", "group.id": "obs",
                      "enable.auto.commit": False, "log_level": LOG_LEVEL})
        c.assign([TopicPartition(topic, 0, 0)])
        got = 0
        deadline = time.monotonic() + 30
        while got < 200 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        c.close()
        assert got == 200
        del p
        # every client is gone before the capture ends
        assert time.monotonic() - t0 < 7, "the workload outlasted the capture window"
        out, err = obs.communicate(timeout=30)
    finally:
        if obs.poll() is None:
            obs.kill()
            obs.wait()
    assert obs.returncode == 0, err
    print(out)
    r = json.loads(report.read_text())
    assert r["kernel_drops"] == 0 and r["resyncs"] == 0, r
    seen = {a["api"]: a for a in r["apis"]}
    broker_counts = scrape_requests(metrics_port)
    assert {k: v["requests"] for k, v in seen.items()} == broker_counts, (seen.keys(), broker_counts)
    assert seen["Produce"]["requests"] >= 200 and seen["Produce"]["count"] == seen["Produce"]["requests"]
    clients = {c["client_id"]: c for c in r["clients"]}
    assert clients["obs-producer"]["requests"] >= seen["Produce"]["requests"], clients
    assert "obs-consumer" in clients and seen["Fetch"]["count"] >= 1, clients
    produce = seen["Produce"]
    client_p50, client_max = statistics.median(client_us), max(client_us)
    print(f"Produce on the wire p50 {produce['p50_us']} µs max {produce['max_us']} µs; "
          f"client p50 {client_p50:.0f} µs max {client_max:.0f} µs")
    assert 0 < produce["p50_us"] <= client_p50, (produce, client_p50)
    # HdrHistogram keeps 3 significant digits: its max may sit 0.1 % above the true value.
    assert produce["max_us"] <= client_max * 1.001 + 1, (produce, client_max)
