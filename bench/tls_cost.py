"""The cost of TLS (and SASL), Frieda against Apache Kafka 4.4.0: `scripts/bench --tls`.

Both brokers get the same listeners (tests/integration/security_env.py): SASL_PLAINTEXT (SCRAM-
SHA-512, no encryption), SASL_SSL (the same over TLS 1.3) and SSL (TLS with a client
certificate). The same load generator, Kafka's own ProducerPerformance (Java client), runs
against each listener: 100-byte records, acks=all, one partition, idempotence off, linger 0;
an unthrottled cell (throughput) and a fixed-rate cell (latency and broker CPU per record). Each
broker is fresh per repeat; cells run in an order rotated per repeat after an unreported warm-up.

    python3 bench/tls_cost.py OUT_DIR [--repeat N] [--records N] [--rate R] [--brokers frieda,kafka]

Writes OUT_DIR/runs.jsonl and OUT_DIR/report.md (medians over repeats; ratios Frieda / Kafka).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from security_env import KAFKA_LIB, Pki, ensure_kafka_lib, make_secure, pkcs8  # noqa: E402

LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
                  r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")
WINDOW = re.compile(r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, "
                    r"([\d.]+) ms max latency\.$", re.M)
PROTOCOLS = ["SASL_PLAINTEXT", "SASL_SSL", "SSL"]


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    import os
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_props(b, pki: Pki, protocol: str, tmp: Path) -> Path:
    lines = {"security.protocol": protocol, "acks": "all", "linger.ms": "0", "enable.idempotence": "false"}
    if protocol.startswith("SASL"):
        lines.update({"sasl.mechanism": "SCRAM-SHA-512",
                      "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                          'username="bench" password="bench-secret";'})
    if protocol.endswith("SSL"):
        lines.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem)})
    if protocol == "SSL":
        cert, key = pki.client_cert("bench")
        ks = tmp / "bench-keystore.pem"
        ks.write_bytes(pkcs8(key.read_bytes()) + cert.read_bytes())
        lines.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(ks)})
    p = tmp / f"{protocol}.properties"
    p.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return p


def run_pp(b, pki, protocol: str, topic: str, records: int, rate: int, tmp: Path) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(b.client())
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    props = client_props(b, pki, protocol, tmp)
    cmd = ["java", "-Xmx512m", "-cp", f"{KAFKA_LIB}/*", "org.apache.kafka.tools.ProducerPerformance",
           "--topic", topic, "--num-records", str(records), "--record-size", "100", "--throughput", str(rate),
           "--producer.config", str(props), "--producer-props", f"bootstrap.servers={b.bootstrap(protocol)}"]
    c0, t0 = cpu_s(b.proc.pid), time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    c1, wall = cpu_s(b.proc.pid), time.monotonic() - t0
    found = LINE.findall(out)
    if not found:
        return {"error": out[-500:]}
    n, rps, avg, mx, p50, _p95, p99, p999 = (float(x) for x in found[-1])
    # ProducerPerformance's 5-second windows: where in the run the slow records were
    windows = [(int(w[0]), float(w[1]), float(w[2])) for w in WINDOW.findall(out)]
    return {"records": n, "rps": rps, "avg_ms": avg, "p50_ms": p50, "p99_ms": p99, "p999_ms": p999, "max_ms": mx,
            "cpu_s_per_m": (c1 - c0) / n * 1e6, "wall_s": wall,
            "windows_records_avg_max_ms": windows,
            # the client's start (a new JVM, the login, the TLS handshake) falls in the first window
            "max_after_5s_ms": max((w[2] for w in windows[1:]), default=float("nan"))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--records", type=int, default=1_000_000, help="unthrottled cell")
    ap.add_argument("--rate", type=int, default=20_000, help="fixed-rate cell, records/s (15 s of records)")
    ap.add_argument("--brokers", default="frieda,kafka")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ensure_kafka_lib()
    runs = out / "runs.jsonl"
    cells = [(p, kind) for p in PROTOCOLS for kind in ("unthrottled", "rate")]
    for r in range(1, a.repeat + 1):
        for broker in a.brokers.split(","):
            with tempfile.TemporaryDirectory(prefix=f"tls-{broker}-") as d:
                tmp = Path(d)
                pki = Pki(tmp / "pki")
                b = make_secure(broker, tmp, pki, authorizer=False)
                try:
                    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                                       UserScramCredentialUpsertion)
                    admin = AdminClient(b.client())
                    up = UserScramCredentialUpsertion("bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                                      b"bench-secret")
                    admin.alter_user_scram_credentials([up])["bench"].result(30)
                    time.sleep(1)  # Kafka applies the credential from its metadata log
                    run_pp(b, pki, "SASL_SSL", "warmup", 300_000, -1, tmp)
                    order = cells[r % len(cells):] + cells[:r % len(cells)]
                    for protocol, kind in order:
                        n, rate = (a.records, -1) if kind == "unthrottled" else (a.rate * 15, a.rate)
                        res = run_pp(b, pki, protocol, f"{protocol.lower()}-{kind}-{r}", n, rate, tmp)
                        rec = {"broker": broker, "repeat": r, "protocol": protocol, "cell": kind, **res}
                        print(json.dumps(rec), flush=True)
                        with open(runs, "a") as f:
                            f.write(json.dumps(rec) + "\n")
                finally:
                    b.stop()
    report(runs, out / "report.md")


def report(runs: Path, dest: Path) -> None:
    by = defaultdict(list)
    for line in runs.read_text().splitlines():
        r = json.loads(line)
        if "error" not in r:
            by[(r["cell"], r["protocol"], r["broker"])].append(r)
    fields = ("rps", "p50_ms", "p99_ms", "p999_ms", "cpu_s_per_m", "max_after_5s_ms")
    med = {k: {f: statistics.median(x.get(f, float("nan")) for x in v) for f in fields} | {"n": len(v)}
           for k, v in by.items()}
    lines = ["| cell | listener | Frieda records/s | Kafka records/s | ratio | Frieda p99 / p99.9 ms | Kafka p99 / p99.9 ms "
             "| Frieda / Kafka max ms after the first 5 s | Frieda CPU s / M | Kafka CPU s / M | CPU ratio | repeats |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for cell in ("unthrottled", "rate"):
        for p in PROTOCOLS:
            f, k = med.get((cell, p, "frieda")), med.get((cell, p, "kafka"))
            if not f:
                continue
            def ms(v):  # an unthrottled cell may end within its first window
                return "-" if v != v else f"{v:.0f}"

            def ratio(a, b):
                return f"{a / b:.2f}x" if b else "-"
            kk = k or {}
            lines.append(f"| {cell} | {p} | {f['rps']:.0f} | {kk.get('rps', float('nan')):.0f} | "
                         f"{ratio(f['rps'], kk.get('rps', 0))} | {f['p99_ms']:.0f} / {f['p999_ms']:.0f} | "
                         f"{kk.get('p99_ms', float('nan')):.0f} / {kk.get('p999_ms', float('nan')):.0f} | "
                         f"{ms(f['max_after_5s_ms'])} / {ms(kk.get('max_after_5s_ms', float('nan')))} | "
                         f"{f['cpu_s_per_m']:.1f} | {kk.get('cpu_s_per_m', float('nan')):.1f} | "
                         f"{ratio(f['cpu_s_per_m'], kk.get('cpu_s_per_m', 0))} | {f['n']} |")
    dest.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        report(Path(sys.argv[2]) / "runs.jsonl", Path(sys.argv[2]) / "report.md")
    else:
        main()
