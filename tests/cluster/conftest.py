"""Fixtures for Frieda's cluster (fault-proof) tests.

``cluster`` is a factory: ``cluster(n=3, voters=None, **settings)`` starts ``n`` Frieda nodes on
free loopback ports, each ``$FRIEDA_BIN serve --config <tmp>/node-<i>.toml`` with its own data dir
and its stderr in ``<tmp>/node-<i>.stderr``. The first ``voters`` nodes (default ``min(n, 3)``) are
``broker,controller`` (voters of the metadata quorum), the others ``broker`` only. It returns once
Metadata from a node lists all ``n`` brokers.

Settings are Kafka's names; the defaults here are shortened for test speed (each test states the
values it relies on):

    broker.session.timeout.ms = 3000       broker.heartbeat.interval.ms = 200
    replica.lag.time.max.ms = 3000         controller.quorum.election.timeout.ms = 1000
    default.replication.factor = 3         offsets.topic.replication.factor = 3
    offsets.topic.num.partitions = 6       min.insync.replicas = 2

Processes are signalled only by their PID. At teardown paused nodes are resumed, every running
node gets SIGTERM (exit 0 within the stop bound is asserted when the test passed), and no node's
stderr may contain "panicked"; when a test fails the tails of every node's stderr are printed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# the client helpers and the raw wire encoder of the integration suite
sys.path.append(str(REPO_ROOT / "tests" / "integration"))

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

import kafka_wire as kw  # noqa: E402
from ports import bindable, ephemeral_low, free_block, free_ports  # noqa: E402,F401 (the tests import them from here)

START_TIMEOUT_S = float(os.environ.get("FRIEDA_START_TIMEOUT", "15"))
# SIGTERM is a controlled shutdown (leaderships move first): exit 0 within this bound
STOP_TIMEOUT_S = float(os.environ.get("FRIEDA_CLUSTER_STOP_TIMEOUT", "10"))
# until Metadata lists every broker after start-up
FORM_TIMEOUT_S = float(os.environ.get("FRIEDA_CLUSTER_FORM_TIMEOUT", "30"))
LOG_LEVEL = int(os.environ.get("FRIEDA_TEST_RDKAFKA_LOG_LEVEL", "3"))

DEFAULT_SETTINGS = {
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 200,
    "replica.lag.time.max.ms": 3000,
    "controller.quorum.election.timeout.ms": 1000,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 6,
    "min.insync.replicas": 2,
}


def frieda_bin() -> Path:
    return Path(os.environ.get("FRIEDA_BIN", REPO_ROOT / "target" / "release" / "frieda"))


def port_open(port: int, timeout: float = 0.2, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def wait_until(pred: Callable, timeout: float, what: str = "condition", interval: float = 0.1):
    """Calls ``pred`` until it returns something truthy (returned) or ``timeout`` seconds pass
    (AssertionError naming ``what`` and the last value or exception). Exceptions from ``pred``
    count as "not yet"."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = pred()
            if v:
                return v
            last = v
        except Exception as e:  # noqa: BLE001 - e.g. a metadata request to a node being killed
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


# ---------------------------------------------------------------- raw Metadata v7 from one node

@dataclass
class RawPartition:
    error: int
    partition: int
    leader: int
    leader_epoch: int
    replicas: list
    isr: list
    offline: list


@dataclass
class RawMetadata:
    brokers: dict  # node id -> (host, port, rack)
    cluster_id: str | None
    controller: int
    topics: dict  # name -> (error, {partition: RawPartition})


def _string(r: kw.Reader) -> str | None:
    n = r.i16()
    return None if n < 0 else r.take(n).decode()


def _i32_array(r: kw.Reader) -> list:
    n = r.i32()
    return [r.i32() for _ in range(max(n, 0))]


def raw_metadata(port: int, topics: list[str] | None = None, timeout: float = 5,
                 host: str = "127.0.0.1", client_id: str = "frieda-it") -> RawMetadata:
    """Metadata v7 asked of the broker at ``host:port`` itself (a client library would pick
    any broker): what this very node believes (``client_id``: the request header's)."""
    body = (kw.i32(-1) if topics is None else kw.i32(len(topics)) + b"".join(kw.string(t) for t in topics))
    body += kw.i8(0)  # allow_auto_topic_creation = false
    s = kw.connect(host, port, timeout=timeout)
    try:
        payload = kw.request(s, kw.frame(kw.header_v1(kw.METADATA, 7, 7, client_id) + body), timeout=timeout)
    finally:
        s.close()
    r = kw.Reader(payload)
    assert r.i32() == 7  # correlation id
    r.i32()  # throttle
    brokers = {}
    for _ in range(r.i32()):
        nid, host, bport, rack = r.i32(), _string(r), r.i32(), _string(r)
        brokers[nid] = (host, bport, rack)
    cluster_id = _string(r)
    controller = r.i32()
    out = {}
    for _ in range(r.i32()):
        err, name = r.i16(), _string(r)
        r.i8()  # is_internal
        parts = {}
        for _ in range(r.i32()):
            p = RawPartition(r.i16(), r.i32(), r.i32(), r.i32(), _i32_array(r), _i32_array(r), _i32_array(r))
            parts[p.partition] = p
        out[name] = (err, parts)
    return RawMetadata(brokers, cluster_id, controller, out)


# ---------------------------------------------------------------- nodes and the cluster

class Node:
    def __init__(self, cluster: "Cluster", node_id: int, voter: bool, client_port: int, quorum_port: int,
                 host: str = "127.0.0.1", netns: str | None = None):
        self.cluster = cluster
        # the address it listens on, and the network namespace it runs in (None: this one)
        self.host = host
        self.netns = netns
        self.id = node_id
        self.voter = voter
        self.client_port = client_port
        self.quorum_port = quorum_port
        self.dir = cluster.workdir / f"node-{node_id}"
        self.data_dir = self.dir / "data"
        self.config_path = cluster.workdir / f"node-{node_id}.toml"
        self.stderr_path = cluster.workdir / f"node-{node_id}.stderr"
        self.proc: subprocess.Popen | None = None
        self.paused = False
        self.starts = 0
        self.sasl_port: int | None = None
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def write_config(self, voters: str, settings: dict) -> None:
        listeners = (f"{self.cluster.client_listener}://{self.host}:{self.client_port},"
                     f"CONTROLLER://{self.host}:{self.quorum_port}")
        if self.sasl_port is not None:
            # a second client listener named SECURE (its protocol comes from the settings'
            # listener.security.protocol.map)
            listeners += f",SECURE://{self.host}:{self.sasl_port}"
        lines = [
            f'"node.id" = {self.id}',
            f'"process.roles" = "{"broker,controller" if self.voter else "broker"}"',
            f'"listeners" = "{listeners}"',
            f'"controller.quorum.voters" = "{voters}"',
            f'"data.dir" = {toml_value(str(self.data_dir))}',
        ]
        settings = {**settings, **self.cluster.node_settings.get(self.id, {})}
        lines += [f'"{k}" = {toml_value(v)}' for k, v in settings.items()]
        self.config_path.write_text("\n".join(lines) + "\n")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def spawn(self) -> None:
        assert not self.alive(), f"node {self.id} already running (pid {self.pid})"
        binary = frieda_bin()
        if not binary.exists():
            raise AssertionError(f"broker binary {binary} not found: run `cargo build --release` or set FRIEDA_BIN")
        cmd = [str(binary), "serve", "--config", str(self.config_path)]
        if self.netns is not None:
            cmd = ["ip", "netns", "exec", self.netns] + cmd  # execs the broker: the pid is the broker's
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info,openraft=warn")  # openraft is chatty at info
        env.setdefault("RUST_BACKTRACE", "1")
        self.starts += 1
        with open(self.stderr_path, "ab") as err:
            err.write(f"\n===== start #{self.starts}: {' '.join(cmd)}\n".encode())
            err.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env)
        self.paused = False

    def wait_listening(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise AssertionError(f"node {self.id} exited with {rc} during start-up\n{self.tail()}")
            if port_open(self.client_port, host=self.host):
                return
            time.sleep(0.05)
        self.kill_hard()
        raise AssertionError(f"node {self.id} did not listen on {self.addr} within {timeout}s\n{self.tail()}")

    def signal(self, sig: int) -> None:
        assert self.alive(), f"node {self.id} is not running\n{self.tail()}"
        os.kill(self.proc.pid, sig)

    def kill_hard(self) -> None:
        if self.alive():
            if self.paused:
                os.kill(self.proc.pid, signal.SIGCONT)
                self.paused = False
            os.kill(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def text(self) -> str:
        try:
            return self.stderr_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""

    def tail(self, n: int = 40) -> str:
        lines = self.text().splitlines()
        return f"----- node {self.id}: {self.stderr_path} (last {min(n, len(lines))} lines) -----\n" + \
            "\n".join(lines[-n:])


class Cluster:
    def __init__(self, workdir: Path, n: int = 3, voters: int | None = None,
                 hosts: dict[int, str] | None = None, netns: dict[int, str] | None = None,
                 data_dirs: dict[int, Path] | None = None, sasl: bool = False,
                 client_listener: str = "PLAINTEXT", client_conf: dict | None = None,
                 node_settings: dict[int, dict] | None = None, **settings):
        """``hosts``/``netns``/``data_dirs``: per node id, the address it listens on (default
        127.0.0.1), the network namespace it runs in (default none; see netns.py) and its data
        directory (default ``<workdir>/node-<i>/data``; e.g. a syncfs mount). ``sasl``: each node
        also gets a client listener named SECURE (``Node.sasl_port``; its protocol and settings
        come in ``settings``). ``client_listener``: the name of the listener on ``client_port``
        (its protocol from ``listener.security.protocol.map``), and ``client_conf`` the
        confluent-kafka settings the fixture's admin clients need to use it (TLS, SASL).
        ``node_settings``: per node id, settings of that node only (e.g. ``broker.rack``)."""
        self.workdir = Path(workdir)
        self.client_listener = client_listener
        self.client_conf = dict(client_conf or {})
        self.n = n
        self.voters = min(n, 3) if voters is None else voters
        assert 1 <= self.voters <= n
        self.settings = dict(DEFAULT_SETTINGS)
        # python-style names (broker_session_timeout_ms) become Kafka's; dotted names stay as given
        self.settings.update({k if "." in k else k.replace("_", "."): v for k, v in settings.items()})
        self.node_settings = node_settings or {}
        ports = free_ports(3 * n if sasl else 2 * n)
        hosts = hosts or {}
        netns = netns or {}
        self.nodes = {i: Node(self, i, i <= self.voters, ports[2 * (i - 1)], ports[2 * (i - 1) + 1],
                              hosts.get(i, "127.0.0.1"), netns.get(i))
                      for i in range(1, n + 1)}
        for i, d in (data_dirs or {}).items():
            self.nodes[i].data_dir = Path(d)
        if sasl:
            for i, node in self.nodes.items():
                node.sasl_port = ports[2 * n + i - 1]
        voter_list = ",".join(f"{i}@{self.nodes[i].host}:{self.nodes[i].quorum_port}"
                              for i in range(1, self.voters + 1))
        for node in self.nodes.values():
            node.write_config(voter_list, self.settings)

    def start_all(self) -> None:
        for node in self.nodes.values():
            node.spawn()
        for node in self.nodes.values():
            node.wait_listening()
        self.wait_brokers(set(self.nodes))

    # ---- addresses --------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(n.addr for n in self.nodes.values())

    @property
    def live_bootstrap(self) -> str:
        """The running, not paused nodes."""
        return ",".join(self.nodes[i].addr for i in self.running())

    def node(self, i: int) -> Node:
        return self.nodes[i]

    def running(self) -> list[int]:
        """Ids of the nodes that run and are not paused."""
        return [i for i, n in self.nodes.items() if n.alive() and not n.paused]

    def setting(self, key: str) -> int:
        return int(self.settings[key])

    # ---- lifecycle --------------------------------------------------------
    def start(self, i: int, wait_registered: bool = True) -> None:
        """Starts node ``i`` again with the same config and data dir; waits until it listens and,
        by default, until Metadata from another running node lists it."""
        node = self.nodes[i]
        node.spawn()
        node.wait_listening()
        if wait_registered:
            self.wait_brokers({i})

    def stop(self, i: int, timeout: float = STOP_TIMEOUT_S) -> float:
        """SIGTERM (controlled shutdown); asserts exit status 0 within ``timeout``. Returns seconds taken."""
        node = self.nodes[i]
        assert not node.paused, f"node {i} is paused"
        t0 = time.monotonic()
        node.signal(signal.SIGTERM)
        try:
            rc = node.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            node.kill_hard()
            raise AssertionError(f"node {i} did not exit within {timeout}s of SIGTERM\n{node.tail()}") from None
        assert rc == 0, f"node {i} exited with status {rc} after SIGTERM (want 0)\n{node.tail()}"
        return time.monotonic() - t0

    def kill(self, i: int) -> None:
        """SIGKILL by PID. A process in an fsync or a write the kernel throttles exits only once
        that returns: up to tens of seconds under the tiered soak's MB/s with builds beside it."""
        node = self.nodes[i]
        node.signal(signal.SIGKILL)
        rc = node.proc.wait(timeout=60)
        node.paused = False
        assert rc == -signal.SIGKILL, rc

    def pause(self, i: int) -> None:
        """SIGSTOP by PID; returns once every thread of the process is stopped (a thread running
        on another core when the signal is sent goes on for a moment otherwise)."""
        node = self.nodes[i]
        node.signal(signal.SIGSTOP)
        node.paused = True

        def stopped() -> bool:
            states = []
            for stat in Path(f"/proc/{node.pid}/task").glob("*/stat"):
                try:
                    states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
                except (OSError, IndexError):
                    pass
            return bool(states) and all(st in ("T", "t") for st in states)
        wait_until(stopped, 5, f"every thread of node {i} stopped")

    def resume(self, i: int) -> None:
        node = self.nodes[i]
        node.signal(signal.SIGCONT)
        node.paused = False

    def assert_alive(self, *ids: int) -> None:
        for i in ids or self.running():
            node = self.nodes[i]
            rc = node.proc.poll()
            assert rc is None, f"node {i} is gone (exit status {rc})\n{node.tail()}"

    def teardown(self, passed: bool) -> list[str]:
        """Stops every node (paused ones are resumed first); returns the problems found."""
        problems = []
        for node in self.nodes.values():
            if node.alive() and node.paused:
                os.kill(node.proc.pid, signal.SIGCONT)
                node.paused = False
        running = [n for n in self.nodes.values() if n.alive()]
        # Stopped all at once, the quorum goes away under the controlled shutdowns: a node waits
        # for the controller's acknowledgement up to its broker session timeout (the moment its
        # leaderships would move anyway), then stops; 3 s of every test's teardown (20 s with a
        # 20 s session). With at most three voters the nodes stop in waves instead: the
        # broker-only nodes (every voter still up commits their fencings in ms), then every
        # voter but the active controller (it and any asking voter are a majority of three),
        # then the controller, which finds every other broker fenced and stops at once. With
        # more voters the second wave can take the majority away before its last fencing
        # commits, so the voters stop in one wave; so does a cluster whose controller cannot be
        # asked.
        waves = [running]
        if self.voters <= 3 and len(running) > 1:
            try:
                ctrl = self.controller()
            except Exception:  # noqa: BLE001 - e.g. no node answers Metadata: one wave
                ctrl = None
            if any(n.id == ctrl for n in running):
                waves = [[n for n in running if not n.voter],
                         [n for n in running if n.voter and n.id != ctrl],
                         [n for n in running if n.id == ctrl]]
                waves = [w for w in waves if w]
        limit = STOP_TIMEOUT_S + 10 + self.setting("broker.session.timeout.ms") / 1000
        for wave in waves:
            for node in wave:
                os.kill(node.proc.pid, signal.SIGTERM)
            for node in wave:
                try:
                    rc = node.proc.wait(timeout=limit)
                    if rc != 0:
                        problems.append(f"node {node.id} exited with {rc} after the final SIGTERM")
                except subprocess.TimeoutExpired:
                    problems.append(f"node {node.id} did not exit within {limit}s of the final SIGTERM")
                    node.kill_hard()
        for node in self.nodes.values():
            if "panicked" in node.text():
                problems.append(f"node {node.id}'s stderr contains 'panicked'")
        return problems

    # ---- metadata ---------------------------------------------------------
    def admin(self, via: int | None = None) -> AdminClient:
        """An AdminClient bootstrapped from node ``via`` (default: every running node)."""
        if via is not None:
            boot = self.nodes[via].addr
        else:
            boot = ",".join(self.nodes[i].addr for i in self.running())
        return AdminClient({"bootstrap.servers": boot, "log_level": LOG_LEVEL, **self.client_conf})

    def metadata(self, topic: str | None = None, via: int | None = None, timeout: float = 5):
        """confluent-kafka ClusterMetadata from node ``via`` (default: the first running node)."""
        if via is None:
            via = self.running()[0]
        return self.admin(via).list_topics(topic=topic, timeout=timeout)

    def partitions(self, topic: str, via: int | None = None) -> dict:
        md = self.metadata(topic, via)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise KafkaException(t.error if t is not None else f"{topic} not in metadata")
        return t.partitions

    def leader_of(self, topic: str, partition: int, via: int | None = None) -> int:
        return self.partitions(topic, via)[partition].leader

    def isr_of(self, topic: str, partition: int, via: int | None = None) -> list[int]:
        return list(self.partitions(topic, via)[partition].isrs)

    def replicas_of(self, topic: str, partition: int, via: int | None = None) -> list[int]:
        return list(self.partitions(topic, via)[partition].replicas)

    def raw_metadata(self, i: int, topics: list[str] | None = None, client_id: str = "frieda-it") -> RawMetadata:
        return raw_metadata(self.nodes[i].client_port, topics, host=self.nodes[i].host, client_id=client_id)

    def controller(self, via: int | None = None) -> int:
        """The controller id that Metadata (v7, asked of node ``via``) reports."""
        return self.raw_metadata(via if via is not None else self.running()[0]).controller

    def brokers_seen(self, via: int) -> set[int]:
        return set(self.metadata(via=via).brokers)

    def wait_brokers(self, ids: set[int], timeout: float = FORM_TIMEOUT_S) -> None:
        """Until Metadata from a running node (another than those in ``ids`` if possible) lists ``ids``."""
        def ok():
            others = [i for i in self.running() if i not in ids] or self.running()
            return ids <= self.brokers_seen(others[0])
        wait_until(ok, timeout, f"Metadata listing brokers {sorted(ids)}")

    def wait_topic(self, topic: str, partitions: int, timeout: float = 30) -> dict:
        """Until every running node's Metadata shows ``topic`` with ``partitions`` partitions, each
        with a leader and a full ISR."""
        def ok():
            for i in self.running():
                md = raw_metadata(self.nodes[i].client_port, [topic], host=self.nodes[i].host)
                err, parts = md.topics.get(topic, (3, {}))
                if err != 0 or len(parts) != partitions:
                    return False
                if any(p.leader < 0 or sorted(p.isr) != sorted(p.replicas) for p in parts.values()):
                    return False
            return self.partitions(topic)
        return wait_until(ok, timeout, f"topic {topic} with {partitions} partitions and full ISRs on every node")

    def wait_full_isr(self, topic: str, timeout: float = 30, via: int | None = None) -> dict:
        """Until every partition of ``topic`` has a leader and its ISR equals its replicas."""
        def ok():
            parts = self.partitions(topic, via)
            if parts and all(p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in parts.values()):
                return parts
            return False
        return wait_until(ok, timeout, f"full ISR for every partition of {topic}")

    def wait_until(self, pred: Callable, timeout: float, what: str = "condition", interval: float = 0.1):
        return wait_until(pred, timeout, what, interval)

    def tails(self, n: int = 60) -> str:
        """The last ``n`` lines of every node's stderr, and before them its first ERROR lines
        (openraft's warnings can push the interesting lines out of a tail)."""
        out = []
        for node in self.nodes.values():
            errors = [line for line in node.text().splitlines() if " ERROR " in line]
            if errors:
                out.append(f"----- node {node.id}: first ERROR lines ({len(errors)} in all) -----\n"
                           + "\n".join(e[:400] for e in errors[:10]))
            out.append(node.tail(n))
        return "\n".join(out)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def cluster(request, tmp_path):
    """Factory: ``cluster(n=3, voters=None, **settings)`` -> a started ``Cluster`` (one per call)."""
    made: list[Cluster] = []

    def make(n: int = 3, voters: int | None = None, hosts=None, netns=None, data_dirs=None,
             node_settings=None, **settings) -> Cluster:
        c = Cluster(tmp_path / f"cluster-{len(made)}", n, voters, hosts=hosts, netns=netns,
                    data_dirs=data_dirs, node_settings=node_settings, **settings)
        made.append(c)
        c.start_all()
        return c

    try:
        yield make
    finally:
        failed = any(getattr(request.node, "rep_" + w, None) is not None and getattr(request.node, "rep_" + w).failed
                     for w in ("setup", "call"))
        problems = []
        for c in made:
            problems += c.teardown(passed=not failed)
        if failed or problems:
            for c in made:
                print(c.tails(80))
        if problems and not failed:
            pytest.fail("; ".join(problems))


@pytest.fixture
def topic_name(request):
    import re
    import uuid
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name)[:60].strip("-")

    def make(suffix: str = "") -> str:
        return f"cl-{base}{'-' + suffix if suffix else ''}-{uuid.uuid4().hex[:6]}"

    return make
