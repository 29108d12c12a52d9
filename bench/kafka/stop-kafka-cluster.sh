#!/usr/bin/env bash
# Stop the cluster started by run-kafka-cluster.sh: SIGCONT + SIGTERM to each node by the PID in
# $KAFKA_CLUSTER_DIR/node-i.pid (only if that PID is still a kafka.Kafka process started with that
# node's config), broker-only nodes first; wait up to KAFKA_STOP_WAIT_S (default 30) s, then SIGKILL
# the same PIDs. Never kills by name.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
KAFKA_CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$KAFKA_ANCHOR_DIR/cluster}"
KAFKA_STOP_WAIT_S="${KAFKA_STOP_WAIT_S:-30}"

ours() {  # ours PID NODE_DIR: the PID is alive, not a zombie, and runs kafka.Kafka with that node's config
  kill -0 "$1" 2>/dev/null || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ] || return 1
  tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q "kafka\.Kafka $2/server.properties"
}

pids=()
# broker-only nodes (no controller) first, then the voters: a broker's controlled shutdown needs the quorum
for i in $(seq 64 -1 1); do
  f="$KAFKA_CLUSTER_DIR/node-$i.pid"; [ -e "$f" ] || continue
  pid="$(cat "$f")"; node="node-$i"
  if ours "$pid" "$KAFKA_CLUSTER_DIR/$node"; then
    kill -CONT "$pid" 2>/dev/null || true     # a node left paused by a benchmark cannot shut down
    kill -TERM "$pid" 2>/dev/null || true
    echo "[kafka-cluster] SIGTERM $node (pid $pid)"
    pids+=("$pid:$node:$f")
  else
    rm -f "$f"
  fi
done
for _ in $(seq 1 $((KAFKA_STOP_WAIT_S * 2))); do
  left=0
  for x in "${pids[@]}"; do
    IFS=: read -r pid node f <<< "$x"
    if ours "$pid" "$KAFKA_CLUSTER_DIR/$node"; then left=1; else rm -f "$f"; fi
  done
  [ "$left" = 0 ] && { echo "[kafka-cluster] stopped"; exit 0; }
  sleep 0.5
done
for x in "${pids[@]}"; do
  IFS=: read -r pid node f <<< "$x"
  if ours "$pid" "$KAFKA_CLUSTER_DIR/$node"; then
    echo "[kafka-cluster] $node (pid $pid) still alive after $KAFKA_STOP_WAIT_S s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
done
