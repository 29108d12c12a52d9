"""Seeded fault schedules over a Frieda cluster (tests/cluster/conftest.py's ``Cluster``).

``make_schedule(kind, seed, secs, ...)`` is a pure function of its arguments: the same seed gives
the same list of steps. A step names its target abstractly ("the leader of partition 2", "the
active controller", "node 3"); ``Nemesis.run`` resolves it against the cluster when the step comes
(so which node that is depends on the run, but the sequence of decisions does not). Kinds:

    kill-leader      SIGKILL the leader of a seeded partition, restart it after a seeded pause
    kill-controller  SIGKILL the active controller (Metadata's controller id), restart it
    pause            SIGSTOP a partition leader, the controller or a node for longer than
                     broker.session.timeout.ms, then SIGCONT
    rolling          SIGTERM each node in a seeded order, restart it, wait for full ISRs
    reassign         AlterPartitionReassignments of a seeded partition to a seeded replica set
                     (a 4th broker makes it a real membership change), wait until it completes
    partition        network partitions between brokers (each in its own network namespace,
                     tests/cluster/netns.py): one node isolated (a leader, the controller, any),
                     random halves (majority/minority), a bridge (two sides that cannot reach
                     each other, one node reaching both); the clients still reach every broker
    power-loss       a node loses power (SIGKILL, then its syncfs file system drops everything
                     not fsynced, tests/powerfail/syncfs.py) with flush.messages=1, restarts on
                     what was durable; now and then every node at once
    mixed            a seeded mix of kills, pauses, SIGTERM restarts and reassignments
    tiered           on a tiered topic (remote.storage.enable, 1 MiB segments, one segment kept
                     locally, SeaweedFS behind tests/cluster/s3_fault_proxy.py): SIGKILL a
                     partition's leader while segments upload (restart after 2-8 s), SIGSTOP a
                     leader past the session, SIGSTOP the object store for 5-15 s (a leader
                     SIGKILLed during the stop), the store answering 503 SlowDown or hanging
    diskless         on a diskless topic (diskless.enable, issue 60; the same store and proxy):
                     SIGKILL or SIGSTOP the leader of ``__diskless_coordinator-0`` (the batch
                     coordinator) or a broker serving a partition, the store stopped (with a
                     broker killed meanwhile), answering 503 or hanging

Every fault is undone by the step itself (restart, SIGCONT, the proxy back to ``pass``) and
``heal()`` restarts or resumes whatever is left before the final reads. Processes are signalled
by PID only (Cluster's methods; the object store's PID for ``store-pause``). Every fault and
every metadata sample goes into the nemesis's history file (proc "nemesis")."""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from history import HistoryWriter  # noqa: E402

KINDS = ["kill-leader", "kill-controller", "pause", "rolling", "reassign", "partition", "power-loss", "mixed",
         "tiered", "diskless"]
# the partition whose leader hosts the diskless batch coordinator (``{"coordinator": True}`` targets)
DISKLESS_COORDINATOR = "__diskless_coordinator"


def load_cluster_module():
    """tests/cluster/conftest.py, imported under its own name (not as a pytest conftest)."""
    name = "frieda_cluster_conftest"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tests" / "cluster" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_store_modules():
    """tests/cluster's seaweedfs.py (``weed mini`` on free ports, a boto3 view of its bucket) and
    s3_fault_proxy.py (503 SlowDown / hanging requests), imported under names of their own:
    seaweedfs.py imports ``conftest``, which must be tests/cluster's here (under pytest another
    conftest may hold that name; it is put back)."""
    cm = load_cluster_module()
    mods = []
    for name, fname in (("frieda_seaweedfs", "seaweedfs.py"), ("frieda_s3_fault_proxy", "s3_fault_proxy.py")):
        if name not in sys.modules:
            saved = sys.modules.get("conftest")
            sys.modules["conftest"] = cm
            try:
                spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tests" / "cluster" / fname)
                mod = importlib.util.module_from_spec(spec)
                sys.modules[name] = mod
                spec.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(name, None)
                raise
            finally:
                if saved is None:
                    sys.modules.pop("conftest", None)
                else:
                    sys.modules["conftest"] = saved
        mods.append(sys.modules[name])
    return mods[0], mods[1]


def nodes_for(kind: str) -> int:
    """Cluster size per kind: 3 voters; reassign and mixed add a broker-only node 4 so a partition
    can move to a broker that has none of it."""
    return 4 if kind in ("reassign", "mixed") else 3


# ---------------------------------------------------------------- schedules

def make_schedule(kind: str, seed: int, secs: float, n_nodes: int, partitions: int,
                  session_ms: int = 3000) -> list[dict]:
    """The steps of one schedule; their nominal durations fill ``secs`` (the run stops starting
    steps when its time is up)."""
    rnd = random.Random(f"{kind}|{seed}")
    steps: list[dict] = []
    t = 0.0
    session = session_ms / 1000

    def kill(target):
        return {"op": "kill", "target": target, "down": round(rnd.uniform(0.5, 4.0), 2),
                "after": round(rnd.uniform(1.5, 4.0), 2)}

    def pause(target):
        return {"op": "pause", "target": target, "down": round(session + rnd.uniform(0.5, 3.0), 2),
                "after": round(rnd.uniform(1.5, 4.0), 2)}

    def stop(node):
        return {"op": "stop", "target": {"node": node}, "down": round(rnd.uniform(0.3, 2.0), 2),
                "after": round(rnd.uniform(0.5, 2.0), 2)}

    def reassign():
        # a seeded replica list of 3 of the brokers, in a seeded order
        return {"op": "reassign", "partition": rnd.randrange(partitions),
                "replicas": rnd.sample(range(1, n_nodes + 1), 3), "after": round(rnd.uniform(1.0, 3.0), 2)}

    def leader():
        return {"leader_of": rnd.randrange(partitions)}

    def any_target():
        r = rnd.random()
        return leader() if r < 0.4 else {"controller": True} if r < 0.7 else {"node": rnd.randint(1, n_nodes)}

    def cut():
        # held for 1-8 s: shorter and longer than the broker session (3 s)
        down = round(rnd.uniform(1.0, 8.0), 2)
        r = rnd.random()
        if r < 0.5:
            shape = {"shape": "isolate", "target": any_target()}
        elif r < 0.75:
            nodes = rnd.sample(range(1, n_nodes + 1), n_nodes)
            minority = nodes[: (n_nodes - 1) // 2] if n_nodes > 3 else nodes[:1]
            shape = {"shape": "halves", "groups": [sorted(minority), sorted(nodes[len(minority):])]}
        else:
            nodes = rnd.sample(range(1, n_nodes + 1), n_nodes)
            bridge, rest = nodes[0], nodes[1:]
            half = len(rest) // 2
            shape = {"shape": "bridge", "bridge": bridge, "groups": [sorted(rest[:half]), sorted(rest[half:])]}
        return dict({"op": "partition", "down": down, "after": round(rnd.uniform(1.5, 4.0), 2)}, **shape)

    def power():
        if rnd.random() < 0.2:
            return {"op": "power-all", "down": round(rnd.uniform(0.5, 3.0), 2),
                    "after": round(rnd.uniform(2.0, 4.0), 2)}
        return {"op": "power", "target": any_target(), "down": round(rnd.uniform(0.5, 4.0), 2),
                "after": round(rnd.uniform(1.5, 4.0), 2)}

    # tiered: a leader SIGKILLed (restarted after a few seconds: long enough for the others to
    # copy, delete locally and move on) while its partitions' segments upload
    def tkill(target):
        return {"op": "kill", "target": target, "down": round(rnd.uniform(2.0, 8.0), 2),
                "after": round(rnd.uniform(1.0, 3.0), 2)}

    def store_pause(with_kill: bool):
        # the object store SIGSTOPped for 5-15 s; a leader SIGKILLed during the stop (at 0.5-4 s
        # into it, restarted 2-8 s later, before or after the store resumes)
        step = {"op": "store-pause", "down": round(rnd.uniform(5.0, 15.0), 2),
                "after": round(rnd.uniform(1.0, 3.0), 2)}
        if with_kill:
            step["kill"] = {"target": leader(), "at": round(rnd.uniform(0.5, 4.0), 2),
                            "down": round(rnd.uniform(2.0, 8.0), 2)}
        return step

    def store_fault():
        # through the proxy: every request answered 503 SlowDown, or every request left hanging
        return {"op": "store-fault", "mode": rnd.choice(["slowdown", "stall"]),
                "down": round(rnd.uniform(3.0, 10.0), 2), "after": round(rnd.uniform(1.0, 3.0), 2)}

    if kind == "diskless":
        # first the coordinator's broker killed while commits run, and the store stopped with
        # a broker killed meanwhile, in a seeded order
        first = [tkill({"coordinator": True}), store_pause(True)]
        rnd.shuffle(first)
        for step in first:
            steps.append(step)
            t += step["down"] + step["after"] + 2
    if kind == "tiered":
        # the first two steps are the report's (issue 57): a leader killed while copies run, and
        # the store stopped with a leader killed meanwhile, in a seeded order; a short schedule
        # has both
        first = [tkill(leader()), store_pause(True)]
        rnd.shuffle(first)
        for step in first:
            steps.append(step)
            t += step["down"] + step["after"] + 2
    while t < secs:
        if kind == "kill-leader":
            step = kill(leader())
        elif kind == "kill-controller":
            step = kill({"controller": True})
        elif kind == "pause":
            r = rnd.random()
            step = pause(leader() if r < 0.5 else {"controller": True} if r < 0.75
                         else {"node": rnd.randint(1, n_nodes)})
        elif kind == "rolling":
            order = rnd.sample(range(1, n_nodes + 1), n_nodes)
            for node in order:
                steps.append(stop(node))
                t += steps[-1]["down"] + steps[-1]["after"] + 4  # + restart and ISR catch-up
            continue
        elif kind == "reassign":
            step = reassign()
        elif kind == "partition":
            step = cut()
        elif kind == "power-loss":
            step = power()
        elif kind == "mixed":
            r = rnd.random()
            step = (kill(leader()) if r < 0.2 else kill({"controller": True}) if r < 0.35
                    else kill({"node": rnd.randint(1, n_nodes)}) if r < 0.45
                    else pause(leader()) if r < 0.6 else pause({"controller": True}) if r < 0.7
                    else stop(rnd.randint(1, n_nodes)) if r < 0.8 else reassign())
        elif kind == "tiered":
            r = rnd.random()
            step = (tkill(leader()) if r < 0.35 else pause(leader()) if r < 0.5
                    else store_pause(rnd.random() < 0.8) if r < 0.7 else store_fault() if r < 0.9
                    else tkill({"controller": True}))
        elif kind == "diskless":
            r = rnd.random()
            step = (tkill({"coordinator": True}) if r < 0.25 else tkill(leader()) if r < 0.4
                    else pause({"coordinator": True}) if r < 0.5 else pause(leader()) if r < 0.55
                    else store_pause(rnd.random() < 0.8) if r < 0.75 else store_fault() if r < 0.95
                    else tkill({"controller": True}))
        else:
            raise ValueError(f"unknown fault kind {kind!r}; one of {KINDS}")
        steps.append(step)
        settle = 2 if step["op"] in ("kill", "stop", "reassign", "power", "power-all", "store-pause") else 0
        t += step.get("down", 0) + step["after"] + settle
    return steps


# ---------------------------------------------------------------- running a schedule

def _segment_bytes(root: Path) -> int:
    """Bytes in the partition segment files (``*.log``) under ``root``."""
    total = 0
    for f in Path(root).rglob("*.log"):
        try:
            total += f.stat().st_size
        except OSError:
            pass
    return total


class Nemesis:
    def __init__(self, cluster, topic: str, partitions: int, history_dir: Path, seed: int,
                 sample_interval: float = 0.5, net=None, disks: dict | None = None, store=None, proxy=None):
        """``net``: the cluster's ``netns.Net`` (for ``partition`` steps); ``disks``: node id ->
        its mounted ``syncfs.SyncFs`` (for ``power``/``power-all`` steps); ``store`` and
        ``proxy``: the object store (seaweedfs.SeaweedFS) and the fault proxy in front of it
        (s3_fault_proxy.FaultProxy), for ``store-pause``/``store-fault`` steps."""
        self.cluster = cluster
        self.net = net
        self.disks = disks or {}
        self.store = store
        self.proxy = proxy
        self.store_paused = False
        self.topic = topic
        self.partitions = partitions
        self.h = HistoryWriter(Path(history_dir) / "nemesis.jsonl", "nemesis")
        self.rnd = random.Random(f"resolve|{seed}")  # fallbacks when a target is gone
        self.sample_interval = sample_interval
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample_loop, daemon=True, name="nemesis-sampler")

    # ---- metadata sampling --------------------------------------------------
    def _sample(self) -> None:
        running = self.cluster.running()
        if not running:
            return
        via = running[0]
        try:
            md = self.cluster.raw_metadata(via, [self.topic])
        except Exception as e:  # noqa: BLE001 - a node being killed
            self.h.write("fail", "leaders", via=via, error=repr(e)[:200])
            return
        _err, parts = md.topics.get(self.topic, (3, {}))
        self.h.write("ok", "leaders", via=via, controller=md.controller,
                     leaders={p.partition: p.leader for p in parts.values()},
                     isr={p.partition: p.isr for p in parts.values()})

    def _sample_loop(self) -> None:
        while not self._stop.wait(self.sample_interval):
            self._sample()

    # ---- targets ------------------------------------------------------------
    def _alive(self) -> list[int]:
        return self.cluster.running()

    def resolve(self, target: dict) -> int | None:
        alive = self._alive()
        node = None
        try:
            if "leader_of" in target:
                md = self.cluster.raw_metadata(alive[0], [self.topic])
                _e, parts = md.topics.get(self.topic, (3, {}))
                p = parts.get(target["leader_of"])
                node = p.leader if p is not None else None
            elif target.get("controller"):
                node = self.cluster.controller(alive[0])
            elif target.get("coordinator"):
                md = self.cluster.raw_metadata(alive[0], [DISKLESS_COORDINATOR])
                _e, parts = md.topics.get(DISKLESS_COORDINATOR, (3, {}))
                p = parts.get(0)
                node = p.leader if p is not None else None
            else:
                node = target["node"]
        except Exception as e:  # noqa: BLE001
            self.h.write("info", "resolve", target=target, error=repr(e)[:200])
        if node not in alive:
            fallback = self.rnd.choice(alive) if alive else None
            self.h.write("info", "resolve", target=target, resolved=node, fallback=fallback)
            node = fallback
        return node

    # ---- faults -------------------------------------------------------------
    def _start(self, node: int) -> None:
        try:
            self.cluster.start(node)
            self.h.write("ok", "start", node=node)
        except Exception as e:  # noqa: BLE001 - recorded; heal() tries again
            self.problems.append(f"node {node} did not come back: {str(e)[:300]}")
            self.h.write("fail", "start", node=node, error=str(e)[:500])

    def step(self, s: dict, deadline: float) -> None:
        op = s["op"]
        if op in ("kill", "pause", "stop"):
            node = self.resolve(s["target"])
            if node is None:
                return
            down = s["down"]
            self.h.write("invoke", op, fault=True, node=node, target=s["target"], down=down)
            if op == "kill":
                self.cluster.kill(node)
                self.h.write("ok", op, node=node)
                time.sleep(down)
                self._start(node)
            elif op == "pause":
                self.cluster.pause(node)
                self.h.write("ok", op, node=node)
                time.sleep(down)
                self.cluster.resume(node)
                self.h.write("ok", "resume", node=node)
            else:
                try:
                    took = self.cluster.stop(node)
                    self.h.write("ok", op, node=node, took=round(took, 3))
                except AssertionError as e:
                    self.problems.append(f"node {node} SIGTERM: {str(e)[:300]}")
                    self.h.write("fail", op, node=node, error=str(e)[:500])
                time.sleep(down)
                self._start(node)
                self._wait_isr(min(20, max(1, deadline - time.monotonic() + 10)))
        elif op == "store-pause":
            self.store_pause(s)
        elif op == "store-fault":
            self.h.write("invoke", op, fault=True, mode=s["mode"], down=s["down"])
            self.proxy.set_mode(s["mode"])
            self.h.write("ok", op, mode=s["mode"])
            time.sleep(s["down"])
            self.proxy.set_mode("pass")
            self.h.write("ok", "store-heal", faulted=dict(self.proxy.faults))
        elif op == "reassign":
            self.reassign(s["partition"], s["replicas"], deadline)
        elif op == "partition":
            self.partition(s)
        elif op == "power":
            node = self.resolve(s["target"])
            if node is None:
                return
            self.h.write("invoke", op, fault=True, node=node, target=s["target"], down=s["down"])
            dropped = self._power_cut(node)
            self.h.write("ok", op, node=node, dropped_bytes=dropped)
            time.sleep(s["down"])
            self._start(node)
        elif op == "power-all":
            nodes = sorted(self.cluster.nodes)
            self.h.write("invoke", op, fault=True, nodes=nodes, down=s["down"])
            for node in nodes:  # all at once: every process dies before any disk is cut
                if self.cluster.nodes[node].alive():
                    self.cluster.kill(node)
            dropped = {node: self._power_cut(node, kill=False) for node in nodes}
            self.h.write("ok", op, nodes=nodes, dropped_bytes=dropped)
            time.sleep(s["down"])
            for node in nodes:
                self.cluster.nodes[node].spawn()
            for node in nodes:
                try:
                    self.cluster.nodes[node].wait_listening()
                except Exception as e:  # noqa: BLE001 - recorded; heal() tries again
                    self.problems.append(f"node {node} did not come back: {str(e)[:300]}")
            try:
                self.cluster.wait_brokers(set(nodes), timeout=30)
                self.h.write("ok", "start", nodes=nodes)
            except AssertionError as e:
                self.h.write("fail", "start", nodes=nodes, error=str(e)[:500])
        time.sleep(s["after"])

    def _store_signal(self, sig: int) -> bool:
        proc = self.store.proc
        if proc is None or proc.poll() is not None:
            self.h.write("info", "store-signal", sig=int(sig), error="the object store is not running")
            return False
        os.kill(proc.pid, sig)  # by PID: weed mini is one process (no children)
        return True

    def store_pause(self, s: dict) -> None:
        """SIGSTOP the object store for ``down`` s; with ``kill``, SIGKILL a partition's leader
        ``kill.at`` s into the stop and start it again ``kill.down`` s later (the events in time
        order: the restart may come before or after SIGCONT)."""
        k = s.get("kill")
        self.h.write("invoke", "store-pause", fault=True, down=s["down"], kill=k)
        t0 = time.monotonic()
        events = [(0.0, "stop"), (s["down"], "cont")]
        if k:
            events += [(k["at"], "kill"), (k["at"] + k["down"], "start")]
        events.sort(key=lambda e: e[0])
        killed = None
        for at, what in events:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            if what == "stop":
                if self._store_signal(signal.SIGSTOP):
                    self.store_paused = True
                    self.h.write("ok", "store-pause")
            elif what == "cont":
                if self.store_paused:
                    self._store_signal(signal.SIGCONT)
                    self.store_paused = False
                self.h.write("ok", "store-resume")
            elif what == "kill":
                node = self.resolve(k["target"])
                if node is not None:
                    self.h.write("invoke", "kill", fault=True, node=node, target=k["target"], down=k["down"],
                                 during="store-pause")
                    self.cluster.kill(node)
                    killed = node
                    self.h.write("ok", "kill", node=node)
            elif what == "start" and killed is not None:
                self._start(killed)

    def _power_cut(self, node: int, kill: bool = True) -> int:
        """Node ``node`` loses power: SIGKILL (unless already dead), its file system drops every
        write and directory entry not fsynced, and is mounted again. Returns the bytes dropped."""
        fs = self.disks[node]
        if kill and self.cluster.nodes[node].alive():
            self.cluster.kill(node)
        before = _segment_bytes(fs.mountpoint)
        fs.crash()
        fs.remount()
        return before - _segment_bytes(fs.mountpoint)

    def partition(self, s: dict) -> None:
        """Cuts links between brokers for ``down`` s (clients keep reaching every broker), heals."""
        n = self.net
        shape = s["shape"]
        if shape == "isolate":
            node = self.resolve(s["target"])
            if node is None:
                return
            self.h.write("invoke", "partition", fault=True, shape=shape, node=node, target=s["target"],
                         down=s["down"])
            n.isolate(node)
        else:
            groups = [set(g) for g in s["groups"]]
            self.h.write("invoke", "partition", fault=True, shape=shape, groups=s["groups"],
                         bridge=s.get("bridge"), down=s["down"])
            n.partition(*groups)  # a bridge node is in neither group: it reaches both
        self.h.write("ok", "partition", cuts=sorted(n.cuts))
        time.sleep(s["down"])
        n.heal()
        self.h.write("ok", "heal-partition")

    def _wait_isr(self, timeout: float) -> bool:
        try:
            self.cluster.wait_full_isr(self.topic, timeout=timeout, via=self._alive()[0])
            return True
        except Exception as e:  # noqa: BLE001
            self.h.write("info", "wait-isr", error=str(e)[:300])
            return False

    def reassign(self, partition: int, replicas: list[int], deadline: float) -> None:
        from kafka import TopicPartition as KTP
        from kafka.admin import KafkaAdminClient
        current = None
        try:
            md = self.cluster.raw_metadata(self._alive()[0], [self.topic])
            current = md.topics[self.topic][1][partition].replicas
        except Exception:  # noqa: BLE001
            pass
        target = list(replicas)
        if current is not None and target == list(current):
            target = target[1:] + target[:1]  # same list: rotate (a new preferred leader)
        self.h.write("invoke", "reassign", fault=True, partition=partition, replicas=target, current=current)
        admin = None
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.cluster.live_bootstrap.split(","),
                                     request_timeout_ms=15000, client_id="jepsen-nemesis")
            res = admin.alter_partition_reassignments({KTP(self.topic, partition): target}, timeout_ms=15000)
            errs = {f"{tp.topic}-{tp.partition}": str(e) for tp, e in res.items() if e is not None}
            self.h.write("fail" if errs else "ok", "reassign", partition=partition, replicas=target,
                         errors=errs or None)
            if errs:
                return
            # until it completes: no reassignment listed and the replicas are the target
            end = min(time.monotonic() + 30, deadline + 20)
            while time.monotonic() < end:
                try:
                    ongoing = admin.list_partition_reassignments([KTP(self.topic, partition)], timeout_ms=5000)
                    md = self.cluster.raw_metadata(self._alive()[0], [self.topic])
                    reps = md.topics[self.topic][1][partition].replicas
                    if not ongoing and sorted(reps) == sorted(target):
                        self.h.write("ok", "reassign-done", partition=partition, replicas=reps)
                        return
                except Exception as e:  # noqa: BLE001
                    self.h.write("info", "reassign-wait", error=repr(e)[:200])
                time.sleep(0.5)
            self.h.write("info", "reassign-done", partition=partition, error="not complete in time")
        except Exception as e:  # noqa: BLE001 - e.g. the controller moving: recorded
            self.h.write("info", "reassign", partition=partition, replicas=target, error=repr(e)[:300])
        finally:
            if admin is not None:
                try:
                    admin.close()
                except Exception:  # noqa: BLE001
                    pass

    def run(self, steps: list[dict], start_after: float, fault_secs: float) -> int:
        """Runs ``steps`` from ``start_after`` s on, starting none after ``fault_secs`` s; returns
        the number of steps run."""
        self._sampler.start()
        t0 = time.monotonic()
        time.sleep(start_after)
        deadline = t0 + fault_secs
        done = 0
        for s in steps:
            if time.monotonic() >= deadline:
                break
            self.step(s, deadline)
            done += 1
        return done

    def heal(self, timeout: float = 60) -> bool:
        """Resumes paused nodes, starts stopped ones, waits for every broker and full ISRs."""
        self.h.write("invoke", "heal")
        if self.net is not None:
            self.net.heal()
        if self.proxy is not None:
            self.proxy.set_mode("pass")
        if self.store is not None and self.store_paused:
            self._store_signal(signal.SIGCONT)
            self.store_paused = False
        for i, node in self.cluster.nodes.items():
            if node.alive() and node.paused:
                self.cluster.resume(i)
        for i, node in self.cluster.nodes.items():
            if not node.alive():
                self._start(i)
        ok = True
        try:
            self.cluster.wait_brokers(set(self.cluster.nodes), timeout=timeout)
        except AssertionError as e:
            ok = False
            self.problems.append(f"heal: {str(e)[:300]}")
        ok = self._wait_isr(timeout) and ok
        if not ok:
            self.problems.append("heal: ISRs not full")
        self.h.write("ok" if ok else "fail", "heal")
        return ok

    def close(self) -> None:
        self._stop.set()
        if self._sampler.is_alive():
            self._sampler.join(10)
        self._sample()
        self.h.close()
