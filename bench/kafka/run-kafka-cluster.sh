#!/usr/bin/env bash
# Start an N-node Apache Kafka KRaft cluster on loopback from the jars in $KAFKA_LIB, for
# `scripts/bench --cluster`. Always fresh: wipes $KAFKA_CLUSTER_DIR first.
#
#   bench/kafka/run-kafka-cluster.sh N        (N >= 1; default 3)
#   bench/kafka/stop-kafka-cluster.sh         stop every node, by the PIDs recorded here
#
# Node i (1..N): client listener 127.0.0.1:(KAFKA_CLUSTER_PORT_BASE + 100*i), controller listener
# 127.0.0.1:(KAFKA_CLUSTER_PORT_BASE + 1 + 100*i). The first min(N, 3) nodes are combined
# broker,controller nodes and form a static quorum (controller.quorum.voters); the others are
# broker-only, as in scripts/cluster. Each node: $KAFKA_CLUSTER_DIR/node-i/{data,logs,server.properties},
# PID in $KAFKA_CLUSTER_DIR/node-i.pid. Every node's storage is formatted with the same cluster id.
#
# Settings (same names and values as the Frieda nodes of scripts/bench --cluster): Kafka's defaults
# except default.replication.factor / offsets.topic.replication.factor = min(N, 3),
# min.insync.replicas = 2 (1 for N = 1), group.initial.rebalance.delay.ms = 0 and
# file.delete.delay.ms = 1000 (as in run-kafka.sh). Left at Kafka's defaults and written out so the
# report can show them: num.network.threads 3, num.io.threads 8, broker.session.timeout.ms 9000,
# broker.heartbeat.interval.ms 2000, replica.lag.time.max.ms 30000, no log.flush.* (no fsync per
# message). Heap per broker: $KAFKA_BROKER_HEAP_OPTS (env.sh: -Xms1g -Xmx1g); 4 brokers fit in 24 GiB.
# Extra properties for every node: KAFKA_CLUSTER_EXTRA="key=value" lines. Racks:
# KAFKA_CLUSTER_RACKS="a a b b ..." gives node i the i-th word as broker.rack (tests/cluster's
# fetch-from-follower test compares a 6-node, 3-rack Kafka with Frieda).
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

N="${1:-3}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 N" >&2; exit 2; }
KAFKA_CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$KAFKA_ANCHOR_DIR/cluster}"
BASE="${KAFKA_CLUSTER_PORT_BASE:-22092}"
client_port() { echo $((BASE + 100 * $1)); }
ctl_port() { echo $((BASE + 1 + 100 * $1)); }
say() { echo "[kafka-cluster] $*"; }

# A previous cluster of ours still running: refuse (stop-kafka-cluster.sh first).
for f in "$KAFKA_CLUSTER_DIR"/node-*.pid; do
  [ -e "$f" ] || continue
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka'; then
    say "node $(basename "$f" .pid) still running (pid $pid); run stop-kafka-cluster.sh first" >&2; exit 1
  fi
done
for i in $(seq 1 "$N"); do
  for p in "$(client_port "$i")" "$(ctl_port "$i")"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      say "port 127.0.0.1:$p already in use by another process; aborting" >&2; exit 1
    fi
  done
done

kafka_require_lib
rm -rf "$KAFKA_CLUSTER_DIR"
mkdir -p "$KAFKA_CLUSTER_DIR"
read -r -a racks <<< "${KAFKA_CLUSTER_RACKS:-}"
nv=$(( N < 3 ? N : 3 ))
rf=$(( N < 3 ? N : 3 ))
minisr=$(( rf > 1 ? 2 : 1 ))
voters=""
for i in $(seq 1 "$nv"); do voters="${voters:+$voters,}$i@127.0.0.1:$(ctl_port "$i")"; done
CLUSTER_ID="$(java -cp "$KAFKA_LIB/*" -Dlog4j2.configurationFile=/dev/null kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
say "cluster id $CLUSTER_ID, $N nodes, voters $voters"

for i in $(seq 1 "$N"); do
  d="$KAFKA_CLUSTER_DIR/node-$i"
  mkdir -p "$d/data" "$d/logs"
  if [ "$i" -le "$nv" ]; then
    roles="broker,controller"
    listeners="PLAINTEXT://127.0.0.1:$(client_port "$i"),CONTROLLER://127.0.0.1:$(ctl_port "$i")"
  else
    roles="broker"
    listeners="PLAINTEXT://127.0.0.1:$(client_port "$i")"
  fi
  cat > "$d/server.properties" <<EOF
process.roles=$roles
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "$i")
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$d/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$minisr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$minisr
group.initial.rebalance.delay.ms=0
# Kafka's defaults, written out:
num.network.threads=3
num.io.threads=8
num.replica.fetchers=1
broker.session.timeout.ms=9000
broker.heartbeat.interval.ms=2000
replica.lag.time.max.ms=30000
replica.fetch.wait.max.ms=500
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
num.recovery.threads.per.data.dir=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
# frieda bench: a deleted topic's files go after 1 s instead of 60 s (the harness deletes every
# cell's topic to give the shared disk back; no effect on the produce/replication path)
file.delete.delay.ms=1000
# no log.flush.* settings: Kafka's default is to never fsync explicitly (page cache + replication)
${KAFKA_CLUSTER_EXTRA:-}
EOF
  if [ -n "${racks[$((i - 1))]:-}" ]; then echo "broker.rack=${racks[$((i - 1))]}" >> "$d/server.properties"; fi
  cat > "$d/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $d/logs/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
  java -cp "$KAFKA_LIB/*" -Dlog4j2.configurationFile="$d/log4j2.properties" \
    kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$d/server.properties" > "$d/logs/format.out" 2>&1 \
    || { say "formatting node $i failed:" >&2; cat "$d/logs/format.out" >&2; exit 1; }
done

for i in $(seq 1 "$N"); do
  d="$KAFKA_CLUSTER_DIR/node-$i"
  # shellcheck disable=SC2086
  nohup java $KAFKA_BROKER_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS \
    -Xlog:gc*:file="$d/logs/kafkaServer-gc.log":time,tags:filecount=2,filesize=50M \
    -Dkafka.logs.dir="$d/logs" -Dlog4j2.configurationFile="$d/log4j2.properties" \
    -cp "$KAFKA_LIB/*" kafka.Kafka "$d/server.properties" \
    > "$d/logs/kafka.out" 2>&1 < /dev/null &
  echo $! > "$KAFKA_CLUSTER_DIR/node-$i.pid"
  say "node $i ($(sed -n 's/^process.roles=//p' "$d/server.properties")) pid $! on 127.0.0.1:$(client_port "$i")"
done

# Wait until every node's client listener accepts connections (a KRaft broker opens it once it
# has caught up with the metadata log and registered).
for i in $(seq 1 "$N"); do
  pid="$(cat "$KAFKA_CLUSTER_DIR/node-$i.pid")"
  ok=0
  for _ in $(seq 1 240); do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "node $i exited during start-up; tail of its logs:" >&2
      tail -30 "$KAFKA_CLUSTER_DIR/node-$i/logs/kafka.out" "$KAFKA_CLUSTER_DIR/node-$i/logs/server.log" >&2 2>/dev/null || true
      exit 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$(client_port "$i")") 2>/dev/null; then ok=1; break; fi
    sleep 0.5
  done
  [ "$ok" = 1 ] || { say "node $i did not open 127.0.0.1:$(client_port "$i") within 120 s (see $KAFKA_CLUSTER_DIR/node-$i/logs)" >&2; exit 1; }
done
bootstrap=""
for i in $(seq 1 "$N"); do bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:$(client_port "$i")"; done
say "listening: $bootstrap"
