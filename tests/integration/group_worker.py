"""A group consumer in its own process, for tests that kill members (SIGKILL) or stop them.

    python group_worker.py BOOTSTRAP GROUP TOPIC ASSIGNOR EVENTS_FILE [INSTANCE_ID]

ASSIGNOR is a classic `partition.assignment.strategy` (range, cooperative-sticky), or
`consumer:<uniform|range>` for the KIP-848 protocol (`group.protocol=consumer` with that
`group.remote.assignor`; session and heartbeat timing then come from the broker).

Subscribes with manual commits, commits synchronously after every record and appends one line
per event to EVENTS_FILE (flushed at once, so a SIGKILL loses nothing already written):

    C <partition> <offset> <monotonic ns>       a record was consumed
    K <partition> <next offset> <monotonic ns>  its commit succeeded
    A <partition,...>                           partitions assigned (incrementally or not)
    R <partition,...>                           partitions revoked / lost

SIGTERM closes the consumer cleanly (LeaveGroup) and exits 0.
"""

import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException


def main() -> int:
    bootstrap, group, topic, assignor, events = sys.argv[1:6]
    instance = sys.argv[6] if len(sys.argv) > 6 else None
    out = open(events, "a", buffering=1)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "partition.assignment.strategy": assignor,
        "fetch.wait.max.ms": 100,
    }
    if assignor.startswith("consumer:"):
        for k in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            del conf[k]
        conf["group.protocol"] = "consumer"
        conf["group.remote.assignor"] = assignor.split(":", 1)[1]
    if instance:
        conf["group.instance.id"] = instance

    def on_assign(c, parts):
        out.write("A " + ",".join(str(p.partition) for p in parts) + "\n")

    def on_revoke(c, parts):
        out.write("R " + ",".join(str(p.partition) for p in parts) + "\n")

    c = Consumer(conf)
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        out.write(f"C {m.partition()} {m.offset()} {time.monotonic_ns()}\n")
        try:
            c.commit(message=m, asynchronous=False)
            out.write(f"K {m.partition()} {m.offset() + 1} {time.monotonic_ns()}\n")
        except KafkaException:
            pass  # rebalance in progress / fenced generation: the record may come again
    c.close()
    out.write("X\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
