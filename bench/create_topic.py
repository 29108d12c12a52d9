#!/usr/bin/env python3
"""Creating a topic with many partitions on one broker: Frieda vs Apache Kafka in one run
(issue 58, goal 7). `scripts/bench --create` runs it.

Per repeat and broker: a fresh data directory, the broker started, one CreateTopics of N
partitions at RF 1, then one record produced (acks=all, librdkafka) to every partition. Three
times are reported, from the CreateTopics call:
- answered: the CreateTopics answer (Kafka answers once its controller committed the records,
  before any broker created a log);
- leaders: every partition has a leader in Metadata;
- writable: every partition acknowledged its record (a produce to a partition whose log does
  not exist yet is refused NOT_LEADER_OR_FOLLOWER and retried by the client), i.e. when the
  topic can be used.
Usage: create_topic.py OUT_DIR [--partitions 4000] [--repeat 3]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Broker  # noqa: E402


def measure(bootstrap: str, n: int, topic: str) -> dict:
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.list_topics(timeout=60)
    t0 = time.monotonic()
    a.create_topics([NewTopic(topic, n, 1)], operation_timeout=120, request_timeout=180)[topic].result()
    answered = time.monotonic() - t0
    while True:
        md = a.list_topics(topic, timeout=60).topics.get(topic)
        if md and md.error is None and len(md.partitions) == n and all(p.leader >= 0 for p in md.partitions.values()):
            break
        time.sleep(0.01)
    leaders = time.monotonic() - t0
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 300000, "queue.buffering.max.messages": 10 * n})
    errors = []
    for i in range(n):
        p.produce(topic, b"x", partition=i, on_delivery=lambda e, m: e and errors.append(str(e)))
    left = p.flush(300)
    writable = time.monotonic() - t0
    if left or errors:
        raise RuntimeError(f"{left} records not acknowledged, errors {errors[:3]}")
    return {"answered_ms": round(answered * 1000), "leaders_ms": round(leaders * 1000),
            "writable_ms": round(writable * 1000)}


def run(kind: str, out: Path, n: int, rep: int) -> dict:
    tmp = out / f"{kind}-{rep}"
    tmp.mkdir(exist_ok=True)
    with Broker(kind, tmp) as b:
        return measure(f"127.0.0.1:{b.port}", n, f"create-{rep}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--partitions", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with open(out / "runs.jsonl", "w") as f:
        for rep in range(args.repeat):
            for broker in ("frieda", "kafka"):
                subprocess.run(["sync"])
                r = {"broker": broker, "repeat": rep, "partitions": args.partitions,
                     **run(broker, out, args.partitions, rep)}
                print(json.dumps(r), flush=True)
                f.write(json.dumps(r) + "\n")
                runs.append(r)
    lines = [f"# Creating a topic of {args.partitions} partitions (RF 1, one broker), median of {args.repeat}",
             "", "| | answered | all leaders in Metadata | every partition acknowledged a record |",
             "|---|---|---|---|"]
    med = {}
    for broker in ("frieda", "kafka"):
        rs = [r for r in runs if r["broker"] == broker]
        med[broker] = {k: statistics.median(r[k] for r in rs) for k in ("answered_ms", "leaders_ms", "writable_ms")}
        m = med[broker]
        lines.append(f"| {broker} | {m['answered_ms']:.0f} ms | {m['leaders_ms']:.0f} ms | {m['writable_ms']:.0f} ms |")
    ratio = {k: med["frieda"][k] / med["kafka"][k] for k in med["frieda"]}
    lines.append(f"| frieda / kafka | {ratio['answered_ms']:.2f}x | {ratio['leaders_ms']:.2f}x | {ratio['writable_ms']:.2f}x |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
