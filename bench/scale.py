#!/usr/bin/env python3
"""Many partitions and many connections on one broker: Frieda vs Apache Kafka in one run
(issue 58, goal 7, "Scale"). `scripts/bench --scale` runs it.

Per broker (in --brokers order), each on fresh data, every step bounded by a timeout; a step
that fails or times out is reported with its error and the harness goes on to the next broker:
1. baseline: the fresh broker's RSS (VmRSS of its process; for Kafka the JVM) and idle CPU
   (utime+stime from /proc/PID/stat over --idle-secs of nothing, % of one core);
2. partitions: --partitions partitions at RF 1 as topics `scale-0`, `scale-1`, ... of
   --topic-partitions each, one CreateTopics per topic, one after the other; the time until all
   are answered and until every partition has a leader in Metadata; one record (acks=all) to
   --sample partitions spread over all topics; then RSS, idle CPU, and the probe: `frieda-bench
   produce` on a 1-partition topic `probe` (1 producer, --probe-rate records/s, 100 B, acks=all,
   --probe-secs measured after 2 s of warm-up), p50/p99/p99.9/max;
3. restart: SIGTERM (Kafka: bench/kafka/stop-kafka.sh, Frieda: the process; SIGKILL after 30 s /
   --stop-timeout) keeping the data, then the same start command on the same data (Kafka:
   bench/kafka/run-kafka.sh without FRESH); the time from the start command until the port
   accepts and until a record (acks=all) to the last partition of the last topic and one to
   `probe` are acknowledged; RSS after;
4. connections: --connections TCP connections opened from this one process (non-blocking
   sockets, --connect-concurrency handshakes at a time), each sending ApiVersions v0 and reading
   its answer, then held open: time to open them all, RSS, idle CPU, the probe again while they
   are held, how many the broker still held at the end; then closed.
Writes OUT_DIR/summary.json (after every broker) and OUT_DIR/report.md (a table per step, Kafka,
Frieda and Frieda/Kafka, and every setting). `scale.py --report OUT_DIR` rebuilds report.md.
Usage: scale.py OUT_DIR [--partitions 50000] [--connections 10000] [--repeat 1] [--brokers frieda,kafka]
"""
import argparse
import datetime as dt
import errno
import hashlib
import json
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer, libversion, version as ck_version
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import BASELINE, FRIEDA, KAFKA_PIDFILE, ROOT, Broker, wait_port  # noqa: E402

BENCH_BIN = os.environ.get("BENCH_BIN", str(ROOT / "target/release/frieda-bench"))
KAFKA_DIR = KAFKA_PIDFILE.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ /proc


def alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st.rsplit(")", 1)[1].split()[0] != "Z"


def cpu_ticks(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime, stime (fields 14, 15)


def proc_snapshot(pid: int) -> dict:
    """RSS and peak RSS (MiB), threads, open files and memory maps of the process."""
    s = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            s[k] = round(int(v.split()[0]) / 1024, 1)
        elif k == "Threads":
            s["threads"] = int(v)
    try:
        s["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            s["maps"] = sum(1 for _ in f)
    except OSError:
        pass
    return {"rss_mib": s.get("VmRSS"), "hwm_mib": s.get("VmHWM"), "threads": s.get("threads"),
            "fds": s.get("fds"), "maps": s.get("maps")}


def idle(pid: int, secs: float) -> dict:
    """The broker left alone for `secs`: its CPU over the window (% of one core), then its memory."""
    la = os.getloadavg()[0]
    c0, t0 = cpu_ticks(pid), time.monotonic()
    time.sleep(secs)
    c1, t1 = cpu_ticks(pid), time.monotonic()
    r = {"idle_cpu_pct": round((c1 - c0) / CLK_TCK / (t1 - t0) * 100, 2), "idle_secs": round(t1 - t0, 1),
         "loadavg_before": round(la, 2), "loadavg_after": round(os.getloadavg()[0], 2)}
    r.update(proc_snapshot(pid))
    return r


# ------------------------------------------------------------------ broker


class ScaleBroker(Broker):
    """Broker (bench/brokers.py) plus a restart on the same data: `stop_keep()` then `launch_keep()`.
    Frieda may get a config file (`frieda serve --config`); its data is removed on exit as Broker does."""

    def __init__(self, kind: str, tmp: Path, frieda_config: str = ""):
        super().__init__(kind, tmp)
        self.frieda_config = frieda_config
        self.runner = None  # a run-kafka.sh still waiting for its port

    def _frieda_cmd(self) -> list:
        cmd = [str(FRIEDA), "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.data)]
        return cmd + (["--config", self.frieda_config] if self.frieda_config else [])

    def __enter__(self):
        try:
            if self.kind == "kafka":
                return super().__enter__()
            shutil.rmtree(self.data, ignore_errors=True)
            self.log = open(self.tmp / "frieda.log", "ab")
            self.proc = subprocess.Popen(self._frieda_cmd(), stdout=self.log, stderr=self.log)
            wait_port(self.port)
            return self
        except BaseException:
            self.__exit__(None, None, None)  # a start that failed half-way leaves nothing running
            raise

    def stop_keep(self, timeout: float) -> dict:
        """SIGTERM, keeping the data; SIGKILL after `timeout` s (Kafka: stop-kafka.sh's 30 s)."""
        t0 = time.monotonic()
        if self.kind == "kafka":
            r = subprocess.run([str(BASELINE / "stop-kafka.sh")], capture_output=True, text=True, timeout=timeout + 60)
            killed = "SIGKILL" in r.stdout
        else:
            self.proc.send_signal(signal.SIGTERM)
            killed = False
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                killed = True
        return {"stop_s": round(time.monotonic() - t0, 2), "stop_killed": killed}

    def launch_keep(self) -> None:
        """The same start command on the same data, not waiting for the port."""
        if self.kind == "kafka":
            env = {k: v for k, v in os.environ.items() if k != "FRESH"}
            self.runner_log = open(self.tmp / "run-kafka-restart.log", "ab")
            self.runner = subprocess.Popen([str(BASELINE / "run-kafka.sh")], env=env,
                                           stdout=self.runner_log, stderr=self.runner_log)
        else:
            self.proc = subprocess.Popen(self._frieda_cmd(), stdout=self.log, stderr=self.log)

    def current_pid(self):
        try:
            return self.pid
        except (OSError, ValueError, IndexError):
            return None

    def __exit__(self, *exc):
        if self.runner is not None and self.runner.poll() is None:
            self.runner.terminate()
            try:
                self.runner.wait(10)
            except subprocess.TimeoutExpired:
                self.runner.kill()
                self.runner.wait()
        return super().__exit__(*exc)


def broker_log_tail(kind: str, tmp: Path, n: int = 15) -> list:
    """The broker's last ERROR/FATAL/WARN lines (and OOM / open-file / mmap failures)."""
    files = [tmp / "frieda.log"] if kind == "frieda" else [KAFKA_DIR / "logs" / "server.log", KAFKA_DIR / "logs" / "kafka.out"]
    keys = ("ERROR", "FATAL", "WARN", "Map failed", "OutOfMemory", "Too many open files", "panicked")
    hits = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                fh.seek(max(0, os.path.getsize(f) - 4_000_000))
                for line in fh.read().decode(errors="replace").splitlines():
                    if any(k in line for k in keys):
                        hits.append(f"{f.name}: {line[:400]}")
        except OSError:
            pass
    # the same message again and again (one per refused connection, say): once, with a count
    out, last, count = [], None, 0
    for h in hits + [None]:
        key = None if h is None else re.sub(r"\d{4}-\d\d-\d\d[T ][\d:.,]+Z?|peer=\S+|\b\d+\b", "#", h)
        if key == last:
            count += 1
            continue
        if last is not None:
            out[-1] += f" (and {count} more like it)" if count else ""
        if h is not None:
            out.append(h)
        last, count = key, 0
    return out[-n:]


# ------------------------------------------------------------------ steps


def probe(port: int, pid: int, rate: int, secs: int, js: Path) -> dict:
    """frieda-bench produce on `probe`: 1 producer, `rate` records/s, 100 B, acks=all, 2 s warm-up."""
    cmd = [BENCH_BIN, "produce", "--bootstrap", f"127.0.0.1:{port}", "--topic", "probe", "--create-topic",
           "--partitions", "1", "--replication-factor", "1", "--acks", "all", "--record-size", "100",
           "--producers", "1", "--rate", str(rate), "--warmup-secs", "2", "--duration-secs", str(secs),
           "--drain-secs", "10", "--request-timeout-ms", "30000", "--broker-pid", str(pid),
           "--progress-secs", "0", "--quiet", "--json", str(js)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 120)
    if r.returncode != 0 or not js.exists():
        msg = " ".join((r.stderr or r.stdout).split("Stack backtrace:")[0].split())
        raise RuntimeError(f"frieda-bench exited {r.returncode}: {msg[-500:]}")
    d = json.loads(js.read_text())
    out = {k: d.get(k) for k in ("p50_us", "p99_us", "p999_us", "p9999_us", "max_us", "records", "errors",
                                 "throughput_rps", "broker_cpu_s", "broker_rss_max_kb", "client_cpu_s", "other_cpu_s")}
    out["cmd"] = " ".join(cmd[1:])
    if d.get("errors"):
        out["error_detail"] = d.get("error_detail")
    return out


def topics_plan(n: int, per: int) -> list:
    plan, i = [], 0
    while n > 0:
        plan.append((f"scale-{i}", min(per, n)))
        n -= per
        i += 1
    return plan


def create_partitions(bootstrap: str, plan: list, timeout: float, r: dict) -> None:
    """One CreateTopics per topic, in turn; then Metadata until every partition has a leader.
    Fills `r` as it goes, so a failure leaves what was reached."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.list_topics(timeout=60)
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    r["topics_answered"], r["partitions_answered"] = 0, 0
    per_topic = []
    for name, n in plan:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"step timeout ({timeout:.0f} s) after {r['partitions_answered']} partitions answered")
        t1 = time.monotonic()
        fut = a.create_topics([NewTopic(name, n, 1)], operation_timeout=min(120, left),
                              request_timeout=min(180, left + 5))[name]
        fut.result(timeout=left + 10)
        per_topic.append(time.monotonic() - t1)
        r["topics_answered"] += 1
        r["partitions_answered"] += n
        r["answered_s"] = round(time.monotonic() - t0, 3)
    r["create_per_topic_ms_median"] = round(statistics.median(per_topic) * 1000, 1)
    r["create_per_topic_ms_max"] = round(max(per_topic) * 1000, 1)
    want = dict(plan)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"step timeout ({timeout:.0f} s): not every partition has a leader "
                               f"({r.get('partitions_with_leader', 0)} of {sum(want.values())})")
        md = a.list_topics(timeout=min(120, left)).topics
        ok = 0
        for name, n in want.items():
            t = md.get(name)
            if t is not None and t.error is None and len(t.partitions) == n:
                ok += sum(1 for p in t.partitions.values() if p.leader >= 0)
        r["partitions_with_leader"] = ok
        if ok == sum(want.values()):
            break
        time.sleep(0.1)  # a Metadata answer for every topic is large at 50,000 partitions
    r["leaders_s"] = round(time.monotonic() - t0, 3)


def produce_sample(bootstrap: str, plan: list, count: int, timeout: float) -> dict:
    """One record (acks=all) to each of `count` partitions spread evenly over all topics."""
    flat = [(name, p) for name, n in plan for p in range(n)]
    count = min(count, len(flat))
    picks = [flat[(i * len(flat)) // count] for i in range(count)]
    picks[-1] = flat[-1]
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": int(timeout * 1000), "queue.buffering.max.messages": 10 * count + 1000})
    errors = []
    t0 = time.monotonic()
    for name, part in picks:
        p.produce(name, b"x" * 100, partition=part, on_delivery=lambda e, m: e and errors.append(str(e)))
    left = p.flush(timeout + 10)
    took = time.monotonic() - t0
    if left or errors:
        raise RuntimeError(f"sample produce: {left} records not acknowledged, errors {errors[:3]}")
    return {"sample_partitions": count, "sample_s": round(took, 3)}


def port_accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.3).close()
        return True
    except OSError:
        return False


def restart(b: ScaleBroker, last: tuple, timeout: float, stop_timeout: float, r: dict) -> None:
    """Stop keeping the data, start again; from the start command: port accepts, a record to the last
    partition of the last topic acknowledged, one to `probe` acknowledged."""
    pid = b.current_pid()
    if pid is None or not alive(pid):
        raise RuntimeError("the broker was not running before the restart")
    r.update(b.stop_keep(stop_timeout))
    gone = time.monotonic() + 30
    while port_accepts(b.port):  # a process on its way out may hold the port a moment longer
        if time.monotonic() > gone:
            raise RuntimeError(f"port {b.port} still accepts connections 30 s after the broker stopped")
        time.sleep(0.1)
    t0 = time.monotonic()
    b.launch_keep()
    bootstrap = f"127.0.0.1:{b.port}"
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": int(timeout * 1000), "reconnect.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
                  "socket.connection.setup.timeout.ms": 5000, "topic.metadata.refresh.fast.interval.ms": 50,
                  "log_level": 2})  # not every refused connect while the broker starts
    acked = {}

    def cb(key):
        def f(err, msg):
            acked[key] = (time.monotonic() - t0, str(err) if err else None)
        return f

    p.produce(last[0], b"y" * 100, partition=last[1], on_delivery=cb("last_partition"))
    p.produce("probe", b"y" * 100, partition=0, on_delivery=cb("probe"))
    deadline = t0 + timeout
    while time.monotonic() < deadline and len(acked) < 2:
        if "port_s" not in r and port_accepts(b.port):
            r["port_s"] = round(time.monotonic() - t0, 3)
        p.poll(0.02)
        if b.kind == "kafka" and b.runner.poll() not in (None, 0) and b.current_pid() is None:
            raise RuntimeError(f"run-kafka.sh exited {b.runner.returncode} and Kafka is not running")
        if b.kind == "frieda" and b.proc.poll() is not None:
            raise RuntimeError(f"frieda exited {b.proc.returncode} during the restart")
    for k in ("last_partition", "probe"):
        if k in acked:
            r[f"{k}_acked_s"] = round(acked[k][0], 3)
            if acked[k][1]:
                raise RuntimeError(f"restart: produce to {k} failed: {acked[k][1]}")
    if len(acked) < 2:
        raise TimeoutError(f"step timeout ({timeout:.0f} s): acknowledged {sorted(acked) or 'nothing'}")
    if "port_s" not in r:
        r["port_s"] = r["last_partition_acked_s"]  # it answered, so it accepted; sampled late
    if b.runner is not None:
        try:
            b.runner.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    del p


class Holder:
    """N TCP connections from this process, each after one ApiVersions v0 round trip."""

    REQ_CLIENT = b"frieda-scale"

    def __init__(self):
        self.socks = []

    def open(self, port: int, n: int, concurrency: int, timeout: float, handshake_timeout: float = 10,
             give_up_after: int = 64) -> dict:
        """Opens up to n; a handshake not answered within `handshake_timeout` s fails; after
        `give_up_after` failures in a row, or at `timeout`, no more are started."""
        sel = selectors.DefaultSelector()
        state = {}  # fd -> [sock, phase, buffer, correlation id, start]
        nxt, failed, handshake = 0, [], []
        in_a_row, stopped = 0, None
        t0 = time.monotonic()
        deadline = t0 + timeout

        def fail(fd, why):
            nonlocal in_a_row
            s = state.pop(fd)[0]
            sel.unregister(s)
            s.close()
            failed.append(why)
            in_a_row += 1

        while state or (nxt < n and stopped is None):
            now = time.monotonic()
            if now > deadline:
                for fd in list(state):
                    fail(fd, "step timeout")
                stopped = f"step timeout ({timeout:.0f} s)"
                break
            if in_a_row >= give_up_after and stopped is None:
                stopped = f"gave up after {in_a_row} failed connections in a row"
            while stopped is None and nxt < n and len(state) < concurrency:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                rc = s.connect_ex(("127.0.0.1", port))
                if rc not in (0, errno.EINPROGRESS):
                    s.close()
                    failed.append(os.strerror(rc))
                    in_a_row += 1
                else:
                    state[s.fileno()] = [s, "connect", b"", nxt, time.monotonic()]
                    sel.register(s, selectors.EVENT_WRITE)
                nxt += 1
            for fd, st in list(state.items()):
                if now - st[4] > handshake_timeout:
                    fail(fd, f"no ApiVersions answer within {handshake_timeout:.0f} s")
            for key, _ in sel.select(0.2):
                fd = key.fd
                st = state.get(fd)
                if st is None:
                    continue
                s = st[0]
                if st[1] == "connect":
                    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if e:
                        fail(fd, os.strerror(e))
                        continue
                    hdr = struct.pack(">hhih", 18, 0, st[3], len(self.REQ_CLIENT)) + self.REQ_CLIENT
                    try:
                        s.send(struct.pack(">i", len(hdr)) + hdr)
                    except OSError as ex:
                        fail(fd, f"send: {ex}")
                        continue
                    st[1] = "read"
                    sel.modify(s, selectors.EVENT_READ)
                else:
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError as ex:
                        fail(fd, f"recv: {ex}")
                        continue
                    if not chunk:
                        fail(fd, "closed by the broker before the ApiVersions answer")
                        continue
                    st[2] += chunk
                    if len(st[2]) >= 4 and len(st[2]) >= 4 + struct.unpack(">i", st[2][:4])[0]:
                        corr, err = struct.unpack(">ih", st[2][4:10])
                        if corr != st[3] or err != 0:
                            fail(fd, f"ApiVersions answer: correlation {corr} error {err}")
                            continue
                        sel.unregister(s)
                        del state[fd]
                        handshake.append(time.monotonic() - st[4])
                        self.socks.append(s)
                        in_a_row = 0
        sel.close()
        hs = sorted(handshake)
        r = {"opened": len(self.socks), "failed": len(failed), "not_tried": n - nxt,
             "open_s": round(time.monotonic() - t0, 3),
             "handshake_ms_p50": round(hs[len(hs) // 2] * 1000, 2) if hs else None,
             "handshake_ms_max": round(hs[-1] * 1000, 2) if hs else None}
        if stopped:
            r["stopped"] = stopped
        if failed:
            r["fail_reasons"] = sorted({f: failed.count(f) for f in set(failed)}.items(), key=lambda x: -x[1])[:5]
        return r

    def still_open(self) -> int:
        """Connections the broker has not closed (no EOF / reset pending)."""
        n = 0
        for s in self.socks:
            try:
                if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    continue
            except BlockingIOError:
                pass
            except OSError:
                continue
            n += 1
        return n

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks = []


# ------------------------------------------------------------------ one broker


def run_broker(kind: str, out: Path, rep: int, args) -> dict:
    tmp = out / "raw" / (f"{kind}-{rep}" if args.repeat > 1 else kind)  # not committed (.gitignore)
    tmp.mkdir(parents=True, exist_ok=True)
    res = {"broker": kind, "repeat": rep, "started_utc": now_utc(), "steps": {}}
    steps = res["steps"]
    plan = topics_plan(args.partitions, args.topic_partitions)
    subprocess.run(["sync"])

    def step(name: str, fn):
        """Runs one step; False if it failed (recorded with the error and the broker's log)."""
        r = steps.setdefault(name, {})
        r["started_utc"] = now_utc()
        r["load_start"] = round(os.getloadavg()[0], 2)
        t0 = time.monotonic()
        log(f"{kind}: {name}")
        try:
            fn(r)
            r["ok"] = True
        except Exception as e:  # noqa: BLE001 - reported, then the next broker
            r["ok"] = False
            r["error"] = f"{type(e).__name__}: {e}"[:800]
            log(f"{kind}: {name} FAILED: {r['error']}")
        r["step_s"] = round(time.monotonic() - t0, 1)
        r["load_end"] = round(os.getloadavg()[0], 2)
        pid = b.current_pid() if b else None
        if pid is None or not alive(pid):
            r["ok"] = False
            r["broker_died"] = True
            r.setdefault("error", "broker process exited")
            r["broker_log"] = broker_log_tail(kind, tmp)
            log(f"{kind}: the broker is not running after {name}")
        elif not r["ok"]:
            r["broker_log"] = broker_log_tail(kind, tmp)
        log(f"{kind}: {name} -> {json.dumps({k: v for k, v in r.items() if k not in ('broker_log', 'cmd')})}")
        return r["ok"]

    b = None
    try:
        with ScaleBroker(kind, tmp, args.frieda_config if kind == "frieda" else "") as b:
            res["pid_start"] = b.pid
            port, boot = b.port, f"127.0.0.1:{b.port}"

            def baseline(r):
                r.update(idle(b.pid, args.idle_secs))

            def created():
                return plan[:steps.get("partitions", {}).get("topics_answered", 0)]

            def partitions(r):
                errors = []
                try:
                    create_partitions(boot, plan, args.create_timeout, r)
                except Exception as e:  # noqa: BLE001 - with --keep-going: measure what was created
                    if not args.keep_going or not alive(b.pid) or not created():
                        raise
                    errors.append(f"{type(e).__name__}: {e}")
                    log(f"{kind}: creating partitions failed ({e}); going on with {r['partitions_answered']}")
                for what, fn in (("sample", lambda: r.update(produce_sample(boot, created(), args.sample, 120))),
                                 ("idle", lambda: r.update(idle(b.pid, args.idle_secs))),
                                 ("probe", lambda: r.update(probe=probe(port, b.pid, args.probe_rate, args.probe_secs,
                                                                        tmp / "probe-partitions.json")))):
                    try:
                        fn()
                    except Exception as e:  # noqa: BLE001
                        if not args.keep_going or not alive(b.pid):
                            raise
                        errors.append(f"{what}: {type(e).__name__}: {e}")
                if errors:
                    raise RuntimeError("; ".join(errors))

            def do_restart(r):
                if not created():
                    raise RuntimeError("no partitions were created")
                last = created()[-1]
                r["last_partition"] = f"{last[0]}/{last[1] - 1}"
                restart(b, (last[0], last[1] - 1), args.restart_timeout, args.stop_timeout, r)
                r.update(proc_snapshot(b.pid))

            holder = Holder()

            def connections(r):
                errors = []
                try:
                    r.update(holder.open(port, args.connections, args.connect_concurrency, args.connect_timeout))
                    if r["opened"] < args.connections:
                        errors.append(f"{r['opened']} of {args.connections} connections open ({r['failed']} failed"
                                      f"{', ' + r['stopped'] if r.get('stopped') else ''}: {r.get('fail_reasons')})")
                        if not args.keep_going or not r["opened"]:
                            raise RuntimeError(errors[0])
                    r.update(idle(b.pid, args.idle_secs))
                    try:
                        r["probe"] = probe(port, b.pid, args.probe_rate, args.probe_secs, tmp / "probe-connections.json")
                    except Exception as e:  # noqa: BLE001
                        if not args.keep_going:
                            raise
                        errors.append(f"probe: {type(e).__name__}: {e}")
                    r["held_at_end"] = holder.still_open()
                finally:
                    holder.close()
                if errors:
                    raise RuntimeError("; ".join(errors))

            for name, fn in (("baseline", baseline), ("partitions", partitions), ("restart", do_restart),
                             ("connections", connections)):
                if not step(name, fn) and (not args.keep_going or steps[name].get("broker_died")):
                    break
            res["pid_end"] = b.current_pid()
    except Exception as e:  # noqa: BLE001 - the broker did not start
        res["error"] = f"{type(e).__name__}: {e}"[:800]
        res["broker_log"] = broker_log_tail(kind, tmp)
        log(f"{kind}: {res['error']}")
    res["finished_utc"] = now_utc()
    if kind == "kafka":
        for f in ("server.log", "kafka.out"):
            src = KAFKA_DIR / "logs" / f
            if src.exists():
                shutil.copy(src, tmp / f"kafka-{f}")
    return res


# ------------------------------------------------------------------ environment


def environment(args) -> dict:
    def cmd(*c):
        try:
            r = subprocess.run(list(c), capture_output=True, text=True, timeout=30)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return None

    def read(p):
        try:
            return Path(p).read_text().strip()
        except OSError:
            return None

    mem = next((l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal")), "0")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    sha = hashlib.sha256(FRIEDA.read_bytes()).hexdigest()[:12] if FRIEDA.exists() else None
    rev = cmd("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD")
    return {
        "nproc": os.cpu_count(), "mem_total_gib": round(int(mem) / 1024 / 1024, 1),
        "vm_max_map_count": int(read("/proc/sys/vm/max_map_count") or 0),
        "rlimit_nofile": [soft, hard], "ip_local_port_range": read("/proc/sys/net/ipv4/ip_local_port_range"),
        "somaxconn": read("/proc/sys/net/core/somaxconn"), "kernel": platform.release(),
        "frieda": cmd(str(FRIEDA), "--version"), "frieda_sha256": sha, "frieda_bin": str(FRIEDA),
        "git_rev": rev, "frieda_bench": cmd(BENCH_BIN, "--version"),
        "kafka_version": os.environ.get("KAFKA_VERSION", "4.4.0"),
        "kafka_heap": os.environ.get("KAFKA_BROKER_HEAP_OPTS", "-Xms1g -Xmx1g"),
        "java": cmd("java", "-version"), "python": platform.python_version(),
        "confluent_kafka": f"{ck_version()[0] if isinstance(ck_version(), tuple) else ck_version()} "
                           f"(librdkafka {libversion()[0]})",
        "loadavg_start": read("/proc/loadavg"),
    }


# ------------------------------------------------------------------ report


def fmt(v, unit="", nd=1):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.{nd}f}{unit}"
    if isinstance(v, int):
        return f"{v:,}{unit}"
    return f"{v}{unit}"


def median_of(vals):
    vals = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(vals) if vals else None


def report(out: Path, summ: dict) -> str:
    s, env = summ["settings"], summ["environment"]
    runs = summ["runs"]
    kinds = [k for k in ("kafka", "frieda") if any(r["broker"] == k for r in runs)]
    reps = max((r["repeat"] for r in runs), default=0) + 1

    def val(kind, step, key, sub=None):
        vs = []
        for r in runs:
            if r["broker"] != kind:
                continue
            st = r.get("steps", {}).get(step, {})
            x = st.get(sub, {}) if sub else st
            vs.append(x.get(key) if isinstance(x, dict) else None)
        if any(isinstance(v, bool) for v in vs):
            return any(v for v in vs if isinstance(v, bool))
        return median_of(vs)

    def status(kind, step):
        bad = []
        for r in runs:
            if r["broker"] != kind:
                continue
            st = r.get("steps", {}).get(step)
            if r.get("error") and not r.get("steps"):
                bad.append("did not start")
            elif st is None:
                bad.append("not run")
            elif not st.get("ok"):
                bad.append("**FAILED**" + (" (broker died)" if st.get("broker_died") else ""))
        return ", ".join(sorted(set(bad))) if bad else "ok"

    us_ms = 1000.0
    rows = [  # (step, label, key, sub, scale, unit, decimals)
        ("baseline", "RSS (MiB)", "rss_mib", None, 1, "", 0),
        ("baseline", "idle CPU (% of one core)", "idle_cpu_pct", None, 1, "", 2),
        ("baseline", "threads", "threads", None, 1, "", 0),
        ("partitions", "CreateTopics: all answered (s)", "answered_s", None, 1, "", 2),
        ("partitions", "every partition has a leader in Metadata (s)", "leaders_s", None, 1, "", 2),
        ("partitions", "partitions answered", "partitions_answered", None, 1, "", 0),
        ("partitions", "one CreateTopics, median (ms)", "create_per_topic_ms_median", None, 1, "", 1),
        ("partitions", "one CreateTopics, max (ms)", "create_per_topic_ms_max", None, 1, "", 1),
        ("partitions", f"1 record to each of {min(s['sample'], s['partitions']):,} partitions acknowledged (s)", "sample_s",
         None, 1, "", 2),
        ("partitions", "RSS (MiB)", "rss_mib", None, 1, "", 0),
        ("partitions", "idle CPU (% of one core)", "idle_cpu_pct", None, 1, "", 2),
        ("partitions", "open files", "fds", None, 1, "", 0),
        ("partitions", "memory maps", "maps", None, 1, "", 0),
        ("partitions", "threads", "threads", None, 1, "", 0),
        ("partitions", "probe p50 (ms)", "p50_us", "probe", us_ms, "", 2),
        ("partitions", "probe p99 (ms)", "p99_us", "probe", us_ms, "", 2),
        ("partitions", "probe p99.9 (ms)", "p999_us", "probe", us_ms, "", 2),
        ("partitions", "probe max (ms)", "max_us", "probe", us_ms, "", 2),
        ("partitions", "probe errors", "errors", "probe", 1, "", 0),
        ("restart", "stop (SIGTERM until exit) (s)", "stop_s", None, 1, "", 2),
        ("restart", "stop needed SIGKILL", "stop_killed", None, 1, "", 0),
        ("restart", "start: port accepts (s)", "port_s", None, 1, "", 2),
        ("restart", "start: record to the last partition acknowledged (s)", "last_partition_acked_s", None, 1, "", 2),
        ("restart", "start: record to `probe` acknowledged (s)", "probe_acked_s", None, 1, "", 2),
        ("restart", "RSS after the restart (MiB)", "rss_mib", None, 1, "", 0),
        ("connections", "connections opened", "opened", None, 1, "", 0),
        ("connections", "time to open them all (s)", "open_s", None, 1, "", 2),
        ("connections", "connect + ApiVersions, max (ms)", "handshake_ms_max", None, 1, "", 1),
        ("connections", "RSS while held (MiB)", "rss_mib", None, 1, "", 0),
        ("connections", "idle CPU while held (% of one core)", "idle_cpu_pct", None, 1, "", 2),
        ("connections", "open files", "fds", None, 1, "", 0),
        ("connections", "probe p50 (ms)", "p50_us", "probe", us_ms, "", 2),
        ("connections", "probe p99 (ms)", "p99_us", "probe", us_ms, "", 2),
        ("connections", "probe p99.9 (ms)", "p999_us", "probe", us_ms, "", 2),
        ("connections", "probe max (ms)", "max_us", "probe", us_ms, "", 2),
        ("connections", "probe errors", "errors", "probe", 1, "", 0),
        ("connections", "connections still held at the end", "held_at_end", None, 1, "", 0),
    ]
    no_ratio = {"stop_killed", "partitions_answered", "opened", "held_at_end", "errors"}
    titles = {"baseline": "1. fresh broker", "partitions": f"2. {s['partitions']:,} partitions",
              "restart": f"3. restart with {s['partitions']:,} partitions",
              "connections": f"4. {s['connections']:,} connections held"}
    L = [f"# Scale: {s['partitions']:,} partitions and {s['connections']:,} connections on one broker, "
         f"Frieda vs Kafka {env['kafka_version']}" + (f" (median of {reps} repeats)" if reps > 1 else ""), "",
         f"Run {summ['started_utc']} – {summ.get('finished_utc', '?')}; brokers in order {s['brokers']}; "
         f"issue 58 goal 7. `bench/scale.py`, command: `{summ['command']}`", "",
         "| step | measure | " + " | ".join(kinds) + (" | frieda / kafka |" if len(kinds) == 2 else " |"),
         "|---|---|" + "---|" * len(kinds) + ("---|" if len(kinds) == 2 else "")]
    cur = None
    for step, label, key, sub, scale, unit, nd in rows:
        if step != cur:
            cur = step
            L.append(f"| **{titles[step]}** | status | " + " | ".join(status(k, step) for k in kinds)
                     + (" | |" if len(kinds) == 2 else " |"))
        vals = {}
        for k in kinds:
            v = val(k, step, key, sub)
            vals[k] = v if v is None or isinstance(v, bool) else v / scale
        cells = [fmt(vals[k], unit, nd) for k in kinds]
        ratio = ""
        if len(kinds) == 2:
            f, ka = vals.get("frieda"), vals.get("kafka")
            both_ok = status("frieda", step) == "ok" and status("kafka", step) == "ok"
            ratio = (f"{f / ka:.2f}x" if both_ok and key not in no_ratio and isinstance(f, (int, float))
                     and isinstance(ka, (int, float)) and not isinstance(f, bool) and ka else "–")
        L.append(f"| | {label} | " + " | ".join(cells) + (f" | {ratio} |" if len(kinds) == 2 else " |"))
    errs = []
    for r in runs:
        tag = f"{r['broker']}" + (f" repeat {r['repeat']}" if reps > 1 else "")
        seen = set()  # the broker's log lines once per run, under the first step that failed
        if r.get("error"):
            errs.append(f"- {tag}: did not start: `{r['error']}`")
            errs += [f"    - `{x}`" for x in r.get("broker_log", [])]
        for name, st in r.get("steps", {}).items():
            if not st.get("ok"):
                errs.append(f"- {tag}, {name}: `{st.get('error')}`" + (" — the broker process exited" if st.get("broker_died") else ""))
                errs += [f"    - `{x.replace('`', chr(39))}`" for x in st.get("broker_log", []) if x not in seen]
                seen.update(st.get("broker_log", []))
            if st.get("fail_reasons"):
                errs.append(f"- {tag}, {name}: failed connections: {st['fail_reasons']}")
            pr = st.get("probe") or {}
            if pr.get("errors"):
                errs.append(f"- {tag}, {name} probe: {pr['errors']} errors {pr.get('error_detail')}")
    if errs:
        L += ["", "## Failures and errors", ""] + errs
    L += ["", "## Settings", "",
          f"- Partitions: {s['partitions']:,} at RF 1 as {len(topics_plan(s['partitions'], s['topic_partitions']))} topics "
          f"`scale-0`, `scale-1`, ... of {s['topic_partitions']:,} partitions, one CreateTopics per topic, one after the "
          f"other (confluent_kafka AdminClient); times from the first CreateTopics. Step timeout {s['create_timeout']:.0f} s.",
          f"- After creating: one 100-B record (acks=all, librdkafka) to each of {min(s['sample'], s['partitions']):,} "
          "partitions spread evenly "
          "over all topics (the last one included).",
          f"- Idle CPU: utime+stime of the broker process (`/proc/PID/stat`; Kafka: the JVM) over {s['idle_secs']} s with "
          "no requests, in % of one core; RSS: VmRSS of `/proc/PID/status` at the end of that window "
          "(open files: `/proc/PID/fd`, memory maps: lines of `/proc/PID/maps`).",
          f"- Probe: `frieda-bench produce`, topic `probe` (1 partition, RF 1), 1 producer, {s['probe_rate']:,} records/s "
          f"open loop, 100 B, acks=all, linger 0, 2 s warm-up, {s['probe_secs']} s measured; latency from the scheduled "
          "send to the acknowledgement (HdrHistogram).",
          f"- Restart: Kafka `bench/kafka/stop-kafka.sh` (SIGTERM, SIGKILL after 30 s) then `bench/kafka/run-kafka.sh` "
          f"without FRESH (same data); Frieda SIGTERM (SIGKILL after {s['stop_timeout']:.0f} s) then the same `frieda serve` "
          "command on the same data directory. Times from the start command; a librdkafka producer created "
          "with it (reconnect/retry backoff 50-200 ms) sends one record to the last partition of the last topic and "
          f"one to `probe`. Step timeout {s['restart_timeout']:.0f} s.",
          f"- Connections: {s['connections']:,} TCP connections from one Python process (non-blocking sockets, "
          f"{s['connect_concurrency']} handshakes at a time), each sends ApiVersions v0 and reads the answer (error 0), "
          f"then stays open and silent; held through the idle window and the probe, then closed. A handshake not "
          "answered in 10 s fails; after 64 failures in a row no more are started. Step timeout "
          f"{s['connect_timeout']:.0f} s. Kafka's `socket.listen.backlog.size` is 50, Frieda's backlog 1024; "
          "Frieda's `max.connections` default is 10,000 (Kafka's: unlimited) and the probe needs one more.",
          f"- Kafka {env['kafka_version']}: bench/kafka/run-kafka.sh (KRaft, combined broker+controller, heap "
          f"`{env['kafka_heap']}`, G1). Frieda: `{env['frieda']}` (sha256 {env['frieda_sha256']}, repo {env['git_rev']})"
          + (f" with `--config {s['frieda_config']}`" if s.get("frieda_config") else " with its defaults") + ".",
          ("- After a failed step the next ones ran as long as the broker did (`--keep-going`): a row after a failed "
           "create is for the partitions answered, the restart's record goes to the last partition created."
           if s.get("keep_going") else
           "- A failed step ends that broker's run (the later steps are \"not run\"; `--keep-going` goes on)."),
          "", "## Machine", "",
          f"- {env['nproc']} cores, {env['mem_total_gib']} GiB memory, kernel {env['kernel']}",
          f"- vm.max_map_count {env['vm_max_map_count']:,} (not changed; Kafka maps two index files per partition: "
          f"{2 * s['partitions']:,} for {s['partitions']:,} partitions)",
          f"- RLIMIT_NOFILE {env['rlimit_nofile'][0]:,} soft / {env['rlimit_nofile'][1]:,} hard (the harness raised its "
          "soft limit to the hard one; both brokers inherit it); ip_local_port_range "
          f"{env['ip_local_port_range']}, somaxconn {env['somaxconn']}",
          f"- {env['java']}; Python {env['python']}, confluent_kafka {env['confluent_kafka']}; {env['frieda_bench']}",
          f"- load average at the start: {env['loadavg_start']}", ""]
    for r in runs:
        L.append(f"- {r['broker']}" + (f" repeat {r['repeat']}" if reps > 1 else "") +
                 f": {r['started_utc']} – {r['finished_utc']}; steps: " +
                 ", ".join(f"{n} {st.get('started_utc', '')[11:]} ({st.get('step_s')} s, load "
                           f"{st.get('load_start', '–')}→{st.get('load_end', '–')})"
                           for n, st in r.get("steps", {}).items()))
    text = "\n".join(L) + "\n"
    (out / "report.md").write_text(text)
    return text


# ------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--report", action="store_true", help="rebuild report.md from OUT/summary.json")
    ap.add_argument("--partitions", type=int, default=50000)
    ap.add_argument("--topic-partitions", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--brokers", default="frieda,kafka")
    ap.add_argument("--idle-secs", type=float, default=30)
    ap.add_argument("--probe-secs", type=int, default=20)
    ap.add_argument("--probe-rate", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--connect-concurrency", type=int, default=32)
    ap.add_argument("--create-timeout", type=float, default=600)
    ap.add_argument("--restart-timeout", type=float, default=600)
    ap.add_argument("--stop-timeout", type=float, default=30)
    ap.add_argument("--connect-timeout", type=float, default=600)
    ap.add_argument("--keep-going", action="store_true",
                    help="after a failed step go on with the next while the broker runs (not after a failed start)")
    ap.add_argument("--frieda-config", default=os.environ.get("SCALE_FRIEDA_CONFIG", ""))
    args = ap.parse_args()
    out = Path(args.out)
    # SIGTERM (timeout, a CI runner) unwinds like Ctrl-C: every broker stopped by PID, sockets closed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.report:
        print(report(out, json.loads((out / "summary.json").read_text())))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.frieda_config:
        args.frieda_config = str(Path(args.frieda_config).resolve())
    brokers = [b for b in args.brokers.split(",") if b]
    if not brokers or set(brokers) - {"frieda", "kafka"}:
        ap.error(f"--brokers {args.brokers!r}: a comma-separated list of frieda and kafka")
    summ = {"started_utc": now_utc(), "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "settings": {k: v for k, v in vars(args).items() if k not in ("out", "report")},
            "environment": environment(args), "runs": []}
    summ["settings"]["brokers"] = ",".join(brokers)
    if summ["environment"]["vm_max_map_count"] < 2 * args.partitions + 1000 and "kafka" in brokers:
        log(f"vm.max_map_count {summ['environment']['vm_max_map_count']} < 2 x {args.partitions} partitions: "
            "Kafka may fail to map its index files (left as it is; see the report)")
    for rep in range(args.repeat):
        for kind in brokers:
            summ["runs"].append(run_broker(kind, out, rep, args))
            summ["finished_utc"] = now_utc()
            (out / "summary.json").write_text(json.dumps(summ, indent=1) + "\n")
            report(out, summ)
    print(report(out, summ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
