"""Client quotas as a user sets them with Kafka's `kafka-configs` (AlterClientQuotas /
DescribeClientQuotas, KIP-546) and as clients feel them (KIP-219 throttling): a producer held to
its user's producer_byte_rate while another user's producer keeps its latency, a consumer held to
consumer_byte_rate. With ``FRIEDA_SECURITY_VS_KAFKA=1`` the same runs against Apache Kafka 4.4.0
(the rates must hold there too, which is how the bounds below were chosen).

Kafka measures a rate over 11 one-second windows and at least 10 s, so a client first gets about
ten seconds' worth of its quota at once and is held to the quota after that: the checks compare
bytes moved in a run with `quota * (run seconds + 10)`.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from security_env import KAFKA_LIB, Pki, brokers_under_test, config_command, ensure_kafka_lib, make_secure


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(params=brokers_under_test(slow=True))
def secure(request, tmp_path, pki):
    b = make_secure(request.param, tmp_path, pki, authorizer=False)
    yield b
    b.stop()


def configs(b, tmp_path, *args: str) -> str:
    ensure_kafka_lib()
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                     'username="admin" password="admin-secret";\n')
    r = subprocess.run(["java", "-Xmx256m", "-cp", f"{KAFKA_LIB}/*", config_command(),
                        "--bootstrap-server", b.bootstrap(), "--command-config", str(props), *args],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_kafka_configs_sets_describes_and_removes_quotas(secure, tmp_path):
    configs(secure, tmp_path, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            "--entity-type", "users", "--entity-name", "alice")
    configs(secure, tmp_path, "--alter", "--add-config", "producer_byte_rate=4096",
            "--entity-type", "users", "--entity-default")
    configs(secure, tmp_path, "--alter", "--add-config", "consumer_byte_rate=8192",
            "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-name", "app")
    deadline = time.monotonic() + 15
    while True:
        out = configs(secure, tmp_path, "--describe", "--entity-type", "users", "--entity-name", "alice")
        if "producer_byte_rate=1048576" in out or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "producer_byte_rate=1048576" in out and "consumer_byte_rate=2097152" in out, out
    out = configs(secure, tmp_path, "--describe", "--entity-type", "users", "--entity-default")
    assert "producer_byte_rate=4096" in out, out
    out = configs(secure, tmp_path, "--describe", "--entity-type", "users", "--entity-name", "bob",
                  "--entity-type", "clients", "--entity-name", "app")
    assert "consumer_byte_rate=8192" in out, out
    # An invalid value is refused (fractional byte rate), as Kafka refuses it.
    props = tmp_path / "admin.properties"
    r = subprocess.run(["java", "-Xmx256m", "-cp", f"{KAFKA_LIB}/*", config_command(),
                        "--bootstrap-server", secure.bootstrap(), "--command-config", str(props), "--alter",
                        "--add-config", "producer_byte_rate=10.5", "--entity-type", "users", "--entity-name", "carol"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode != 0 and "fractional" in (r.stdout + r.stderr), r.stdout + r.stderr
    configs(secure, tmp_path, "--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate",
            "--entity-type", "users", "--entity-name", "alice")
    deadline = time.monotonic() + 15
    while "producer_byte_rate" in (out := configs(secure, tmp_path, "--describe", "--entity-type", "users",
                                                  "--entity-name", "alice")):
        assert time.monotonic() < deadline, out
        time.sleep(0.5)


def test_a_producer_is_held_to_its_quota_while_another_keeps_its_latency(secure, tmp_path):
    quota = 100_000  # bytes/s
    configs(secure, tmp_path, "--alter", "--add-config", f"producer_byte_rate={quota}",
            "--entity-type", "users", "--entity-name", "alice")
    admin = AdminClient(secure.client())
    for t in ("quota-alice", "quota-bob"):
        admin.create_topics([NewTopic(t, 1, 1)])[t].result(30)
    time.sleep(2)  # Kafka applies the quota from its metadata log
    stats: list[dict] = []
    alice = Producer({**secure.client("alice"), "acks": "1", "linger.ms": 5, "statistics.interval.ms": 500,
                      "stats_cb": lambda s: stats.append(json.loads(s)), "queue.buffering.max.kbytes": 512})
    bob = Producer({**secure.client("bob"), "acks": "all", "linger.ms": 0})
    value = b"q" * 1000
    sent = [0]
    run_s = 12.0
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            try:
                alice.produce("quota-alice", value, on_delivery=lambda e, m: e is None and sent.__setitem__(0, sent[0] + 1))
            except BufferError:
                alice.poll(0.05)
                continue
            alice.poll(0)

    t0 = time.monotonic()
    th = threading.Thread(target=flood, daemon=True)
    th.start()
    time.sleep(2)
    lat = []
    while time.monotonic() - t0 < run_s:
        s = time.perf_counter()
        bob.produce("quota-bob", b"x")
        assert bob.flush(10) == 0
        lat.append(time.perf_counter() - s)
        time.sleep(0.05)
    stop.set()
    th.join(10)
    elapsed = time.monotonic() - t0
    alice.flush(0)
    alice.purge()
    alice.flush(1)
    delivered = sent[0] * len(value)
    # Held to the quota: about (run + the 10 s burst allowance) seconds' worth, never 10x more.
    assert delivered <= quota * (elapsed + 11) * 1.3, (secure.kind, delivered, elapsed)
    assert delivered >= quota * elapsed * 0.4, (secure.kind, delivered, elapsed)
    throttled = max((b.get("throttle", {}).get("max", 0) for s in stats for b in s.get("brokers", {}).values()),
                    default=0)
    assert throttled > 0, f"{secure.kind}: alice's producer was never told to wait"
    lat.sort()
    assert lat[len(lat) // 2] < 0.05, (secure.kind, lat[len(lat) // 2])


def test_a_consumer_is_held_to_its_quota(secure, tmp_path):
    quota = 50_000
    admin = AdminClient(secure.client())
    admin.create_topics([NewTopic("quota-read", 1, 1)])["quota-read"].result(30)
    # small batches: a fetch returns whole batches, and one larger than the quota allows in its
    # window would be throttled for ever (on Kafka too)
    p = Producer({**secure.client("admin"), "acks": "all", "linger.ms": 20, "batch.size": 16384})
    for i in range(3000):
        p.produce("quota-read", b"r" * 1000)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    configs(secure, tmp_path, "--alter", "--add-config", f"consumer_byte_rate={quota}",
            "--entity-type", "users", "--entity-name", "alice")
    time.sleep(2)
    c = Consumer({**secure.client("alice"), "group.id": "quota-reader", "enable.auto.commit": False,
                  "fetch.max.bytes": 1_100_000, "max.partition.fetch.bytes": 100_000})
    c.assign([TopicPartition("quota-read", 0, 0)])
    got, t0 = 0, time.monotonic()
    run_s = 8.0
    while time.monotonic() - t0 < run_s:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got += len(m.value())
    c.close()
    # 3 MB are there; at 50 kB/s (+ the 10 s allowance and one fetch beyond it) far fewer arrive.
    assert 0 < got <= quota * (run_s + 11) + 200_000, (secure.kind, got)


def test_request_quota_slows_a_busy_client(secure, tmp_path):
    """request_percentage (KIP-124): a user allowed 0.1 % of a thread gets far fewer synchronous
    produce round trips through in 6 s than a user without a quota, and is told to wait."""
    configs(secure, tmp_path, "--alter", "--add-config", "request_percentage=0.1",
            "--entity-type", "users", "--entity-name", "alice")
    admin = AdminClient(secure.client())
    admin.create_topics([NewTopic("req-quota", 1, 1)])["req-quota"].result(30)
    time.sleep(2)

    def round_trips(user: str) -> tuple[int, int]:
        stats: list[dict] = []
        p = Producer({**secure.client(user), "acks": "1", "linger.ms": 0, "statistics.interval.ms": 500,
                      "stats_cb": lambda s: stats.append(json.loads(s))})
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 6:
            p.produce("req-quota", b"x")
            if p.flush(10) == 0:
                n += 1
        p.poll(0.6)
        throttled = max((b.get("throttle", {}).get("max", 0) for s in stats for b in s.get("brokers", {}).values()),
                        default=0)
        return n, throttled

    alice, alice_throttle = round_trips("alice")
    bob, _ = round_trips("bob")
    assert alice * 3 < bob, (secure.kind, alice, bob)
    assert alice_throttle > 0, f"{secure.kind}: alice was never told to wait"
