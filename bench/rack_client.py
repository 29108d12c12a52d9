#!/usr/bin/env python3
"""One client of bench/diskless_racks.py, run inside a rack's network namespace: a producer or a
consumer (confluent-kafka) that prints one JSON line of what it did.

  rack_client.py produce BOOTSTRAP TOPIC --rate N --secs S --size B --client-id ID
      idempotent, acks=all, linger.ms 5; N records/s of B random bytes (keys null) for S s, then
      flush; prints {"sent", "acked", "acked_bytes", "errors"}.
  rack_client.py consume BOOTSTRAP TOPIC --partitions P --secs S --client-id ID --rack R
      assigned every partition from the beginning (no group), client.rack R; reads for S s;
      prints {"records", "bytes"}.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


def produce(a) -> dict:
    p = Producer({"bootstrap.servers": a.bootstrap, "client.id": a.client_id, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 60000})
    out = {"sent": 0, "acked": 0, "acked_bytes": 0, "errors": 0}

    def cb(err, msg):
        if err is None:
            out["acked"] += 1
            out["acked_bytes"] += len(msg.value())
        else:
            out["errors"] += 1

    payload = os.urandom(a.size)
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.secs:
        due = int((time.monotonic() - t0) * a.rate)
        while out["sent"] < due:
            try:
                p.produce(a.topic, payload, on_delivery=cb)
                out["sent"] += 1
            except BufferError:
                p.poll(0.01)
        p.poll(0.002)
    p.flush(60)
    return out


def consume(a) -> dict:
    c = Consumer({"bootstrap.servers": a.bootstrap, "client.id": a.client_id, "group.id": "unused",
                  "client.rack": a.rack, "enable.auto.commit": False})
    c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in range(a.partitions)])
    out = {"records": 0, "bytes": 0}
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.secs:
        for m in c.consume(1000, 0.2):
            if m.error() is None:
                out["records"] += 1
                out["bytes"] += len(m.value() or b"")
    c.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["produce", "consume"])
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--secs", type=float, default=20)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--client-id", default="rack-client")
    ap.add_argument("--rack", default="")
    a = ap.parse_args()
    print(json.dumps(produce(a) if a.mode == "produce" else consume(a)), flush=True)


if __name__ == "__main__":
    main()
