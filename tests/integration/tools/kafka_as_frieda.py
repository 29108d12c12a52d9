#!/usr/bin/env python3
"""Apache Kafka behind Frieda's command line, to validate the tests that stop, kill and restart the broker.

    FRIEDA_BIN=tests/integration/tools/kafka_as_frieda.py FRIEDA_START_TIMEOUT=60 \
        .venv/bin/pytest -q tests/integration/test_restart.py

Understands `serve --listen HOST:PORT --data-dir DIR [--config FILE]` (the config file is ignored).
Runs a single-node KRaft Kafka (jars from $KAFKA_LIB, default target/kafka-4.4.0/lib, see
shared/kafka-baseline) with its data in DIR. SIGTERM/SIGINT are forwarded and the wrapper exits 0 once
Kafka has stopped; if the wrapper is SIGKILLed, the kernel kills Kafka too (PR_SET_PDEATHSIG).
Not used by CI.
"""

import ctypes
import os
import signal
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    if not argv or argv[0] != "serve":
        print("usage: kafka_as_frieda.py serve --listen HOST:PORT --data-dir DIR", file=sys.stderr)
        return 2
    opts = dict(zip(argv[1::2], argv[2::2]))
    host, port = opts["--listen"].rsplit(":", 1)
    data = os.path.abspath(opts["--data-dir"])
    lib = os.environ.get("KAFKA_LIB", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target", "kafka-4.4.0", "lib"))
    os.makedirs(data, exist_ok=True)
    props = os.path.join(data, "server.properties")
    if not os.path.exists(props):
        cport = free_port()
        with open(props, "w") as f:
            f.write(f"""process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers={host}:{cport}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}
advertised.listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
""")
    log4j = os.path.join(data, "..", "log4j2.properties")
    with open(log4j, "w") as f:
        f.write("status = warn\nappender.err.type = Console\nappender.err.name = E\nappender.err.target = SYSTEM_ERR\n"
                "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = [%d] %p %m (%c)%n\n"
                "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = E\n")
    java = ["java", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib}/*"]
    if not os.path.exists(os.path.join(data, "meta.properties")):
        uuid = subprocess.check_output(java + ["kafka.tools.StorageTool", "random-uuid"]).decode().strip()
        subprocess.check_call(java + ["kafka.tools.StorageTool", "format", "--standalone", "-t", uuid, "-c", props],
                              stdout=subprocess.DEVNULL)

    libc = ctypes.CDLL("libc.so.6", use_errno=True)

    def die_with_parent():
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    child = subprocess.Popen(["java", "-Xms512m", "-Xmx512m", "-XX:+UseG1GC"] + java[1:] + ["kafka.Kafka", props],
                             preexec_fn=die_with_parent)

    def forward(sig, _frame):
        child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    rc = child.wait()
    # the JVM exits 143 on SIGTERM even after a clean shutdown
    return 0 if rc in (0, 143, -signal.SIGTERM) else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
