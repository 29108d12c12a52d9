#!/usr/bin/env python3
"""Apache Kafka behind Frieda's cluster command line, to check the cluster tests' expectations
against Kafka (not used by CI):

    FRIEDA_BIN=$PWD/tests/cluster/tools/kafka_as_frieda_node.py FRIEDA_START_TIMEOUT=90 \\
        FRIEDA_CLUSTER_STOP_TIMEOUT=40 FRIEDA_CLUSTER_FORM_TIMEOUT=90 \\
        .venv/bin/pytest -q tests/cluster -k "sigkilled or min_insync"

Understands `serve --config node-i.toml` with the Kafka-named keys the fixture writes: node.id,
process.roles, listeners (PLAINTEXT + CONTROLLER), controller.quorum.voters (a static quorum),
data.dir (-> log.dirs); every other key is passed to Kafka unchanged. The storage is formatted on
first use with a cluster id derived from the voters (so every node of one cluster agrees). Jars
from $KAFKA_LIB (default /tmp/kafka-anchor/lib, see shared/kafka-baseline). SIGTERM/SIGINT are
forwarded and the wrapper exits 0 once Kafka has stopped (the JVM itself exits 143); SIGKILL of
the wrapper kills Kafka too (PR_SET_PDEATHSIG). SIGSTOP/SIGCONT would stop only the wrapper:
with KAFKA_NODE_EXEC=1 the wrapper execs the JVM instead (then SIGSTOP works, but SIGTERM ends
with status 143, which the fixture's clean-exit check reports).
"""

import base64
import ctypes
import hashlib
import os
import signal
import subprocess
import sys
import tomllib


def main(argv):
    if len(argv) != 3 or argv[0] != "serve" or argv[1] != "--config":
        print("usage: kafka_as_frieda_node.py serve --config node.toml", file=sys.stderr)
        return 2
    with open(argv[2], "rb") as f:
        cfg = tomllib.load(f)
    lib = os.environ.get("KAFKA_LIB", "/tmp/kafka-anchor/lib")
    data = os.path.abspath(cfg.pop("data.dir"))
    os.makedirs(data, exist_ok=True)
    roles = cfg.pop("process.roles")
    listeners = dict(x.split("://", 1) for x in cfg.pop("listeners").split(","))
    voters = cfg.pop("controller.quorum.voters")
    node_id = cfg.pop("node.id")
    controller = "controller" in roles
    props = {
        "process.roles": roles,
        "node.id": node_id,
        "controller.quorum.voters": voters,
        "listeners": ",".join(f"{k}://{v}" for k, v in listeners.items() if controller or k != "CONTROLLER"),
        "advertised.listeners": f"PLAINTEXT://{listeners['PLAINTEXT']}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": data,
        "group.initial.rebalance.delay.ms": 0,
    }
    props.update(cfg)
    conf_dir = os.path.dirname(os.path.abspath(argv[2]))
    path = os.path.join(conf_dir, f"kafka-node-{node_id}.properties")
    with open(path, "w") as f:
        f.write("".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}\n" for k, v in props.items()))
    log4j = os.path.join(conf_dir, "kafka-log4j2.properties")
    with open(log4j, "w") as f:
        f.write("status = warn\nappender.err.type = Console\nappender.err.name = E\nappender.err.target = SYSTEM_ERR\n"
                "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = [%d] %p %m (%c)%n\n"
                "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = E\n")
    java = ["java", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib}/*"]
    if not os.path.exists(os.path.join(data, "meta.properties")):
        cluster_id = base64.urlsafe_b64encode(hashlib.md5(voters.encode()).digest()).decode().rstrip("=")
        subprocess.check_call(java + ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", path],
                              stdout=subprocess.DEVNULL)

    jvm = ["java", "-Xms256m", "-Xmx384m", "-XX:+UseG1GC", "-XX:TieredStopAtLevel=1"] + java[1:] + ["kafka.Kafka", path]
    if os.environ.get("KAFKA_NODE_EXEC") == "1":
        os.execvp("java", jvm)

    libc = ctypes.CDLL("libc.so.6", use_errno=True)

    def die_with_parent():
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    child = subprocess.Popen(jvm, preexec_fn=die_with_parent)

    def forward(sig, _frame):
        child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    rc = child.wait()
    return 0 if rc in (0, 143, -signal.SIGTERM) else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
