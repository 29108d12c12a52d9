"""A group consumer in its own process, for tests that kill members (SIGKILL) or stop them.

    python group_worker.py BOOTSTRAP GROUP TOPIC ASSIGNOR EVENTS_FILE [INSTANCE_ID]

ASSIGNOR is a classic `partition.assignment.strategy` (range, cooperative-sticky), or
`consumer:<uniform|range>` for the KIP-848 protocol (`group.protocol=consumer` with that
`group.remote.assignor`; session and heartbeat timing then come from the broker).

Subscribes with manual commits, commits synchronously after every record (a failed commit is
tried again while the member holds the partition) and appends one line per event to EVENTS_FILE
(flushed at once, so a SIGKILL loses nothing already written):

    C <partition> <offset> <monotonic ns>       a record was consumed
    K <partition> <next offset> <monotonic ns>  its commit succeeded
    E <partition> <next offset> <error>         its commit failed (tried again while the partition is held)
    A <partition,...>                           partitions assigned (incrementally or not)
    R <partition,...>                           partitions revoked / lost

SIGTERM closes the consumer cleanly (LeaveGroup) and exits 0.
"""

import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition


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

    # partition -> next offset consumed but not yet committed (its commit failed). A member that
    # keeps the partition (cooperative rebalancing keeps it through a rebalance) commits it again
    # later, as an application would; a revoked or lost partition's pending commit is dropped
    # (its record may then come again to another member).
    pending: dict[int, int] = {}

    def on_revoke(c, parts):
        for p in parts:
            pending.pop(p.partition, None)
        out.write("R " + ",".join(str(p.partition) for p in parts) + "\n")

    def commit(partition: int, offset: int) -> None:
        try:
            c.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
        except KafkaException as e:
            # rebalance in progress / fenced generation: kept and tried again
            pending[partition] = offset
            out.write(f"E {partition} {offset} {e.args[0].name() if e.args else e}\n")
            return
        if pending.get(partition, -1) <= offset:
            pending.pop(partition, None)
        out.write(f"K {partition} {offset} {time.monotonic_ns()}\n")

    c = Consumer(conf)
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop:
        m = c.poll(0.2)
        if m is None or m.error():
            for partition, offset in list(pending.items()):
                commit(partition, offset)
            continue
        out.write(f"C {m.partition()} {m.offset()} {time.monotonic_ns()}\n")
        commit(m.partition(), m.offset() + 1)
    c.close()
    out.write("X\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
