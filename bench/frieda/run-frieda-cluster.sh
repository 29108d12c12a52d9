#!/usr/bin/env bash
# Start an N-node Frieda cluster on loopback for `scripts/bench --cluster`: the same node configs
# as scripts/cluster (Kafka's KRaft names; the first min(N, 3) nodes are voters of the metadata
# quorum, the rest broker-only), but on ports of its own, so a cluster someone else started with
# scripts/cluster (19192, ...) or the tests is never disturbed. Always fresh: wipes DIR first.
#
#   bench/frieda/run-frieda-cluster.sh N DIR     N >= 1; DIR e.g. /tmp/frieda-bench/cluster
#   bench/frieda/stop-frieda-cluster.sh DIR      stop every node, by the PIDs recorded here
#
# Node i: client listener 127.0.0.1:(FRIEDA_CLUSTER_PORT_BASE + 100*i), quorum listener
# 127.0.0.1:(FRIEDA_CLUSTER_PORT_BASE + 1 + 100*i) (base 21092 by default); config DIR/node-i.toml,
# log DIR/node-i.log, data DIR/data-i, PID DIR/node-i.pid. Settings: default.replication.factor and
# offsets.topic.replication.factor min(N, 3), min.insync.replicas 2 (1 for N = 1), everything else
# Frieda's defaults (broker.session.timeout.ms 9000, replica.lag.time.max.ms 30000,
# replica.stall.max.ms 1500, no fsync per message). Extra TOML lines for every node:
# FRIEDA_CLUSTER_CONFIG. Binary: FRIEDA_BIN (default target/release/frieda).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${FRIEDA_BIN:-$ROOT/target/release/frieda}"
N="${1:-}"; DIR="${2:-}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] && [ -n "$DIR" ] || { echo "usage: $0 N DIR" >&2; exit 2; }
BASE="${FRIEDA_CLUSTER_PORT_BASE:-21092}"
client_port() { echo $((BASE + 100 * $1)); }
quorum_port() { echo $((BASE + 1 + 100 * $1)); }
say() { echo "[frieda-cluster] $*"; }

[ -x "$BIN" ] || { say "no executable $BIN" >&2; exit 1; }
for f in "$DIR"/node-*.pid; do
  [ -e "$f" ] || continue
  if kill -0 "$(cat "$f")" 2>/dev/null; then say "$(basename "$f" .pid) still running (pid $(cat "$f")); stop it first" >&2; exit 1; fi
done
for i in $(seq 1 "$N"); do
  for p in "$(client_port "$i")" "$(quorum_port "$i")"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then say "port 127.0.0.1:$p already in use by another process; aborting" >&2; exit 1; fi
  done
done
rm -rf "$DIR"; mkdir -p "$DIR"; DIR="$(cd "$DIR" && pwd)"
nv=$(( N < 3 ? N : 3 )); rf=$(( N < 3 ? N : 3 ))
voters=""
for i in $(seq 1 "$nv"); do voters="${voters:+$voters,}$i@127.0.0.1:$(quorum_port "$i")"; done
for i in $(seq 1 "$N"); do
  roles="broker,controller"; [ "$i" -gt "$nv" ] && roles="broker"
  cat > "$DIR/node-$i.toml" <<TOML
"node.id" = $i
"process.roles" = "$roles"
"listeners" = "PLAINTEXT://127.0.0.1:$(client_port "$i"),CONTROLLER://127.0.0.1:$(quorum_port "$i")"
"controller.quorum.voters" = "$voters"
"data.dir" = "$DIR/data-$i"
"default.replication.factor" = $rf
"offsets.topic.replication.factor" = $rf
"min.insync.replicas" = $(( rf > 1 ? 2 : 1 ))
${FRIEDA_CLUSTER_CONFIG:-}
TOML
  "$BIN" serve --config "$DIR/node-$i.toml" >>"$DIR/node-$i.log" 2>&1 </dev/null &
  echo $! > "$DIR/node-$i.pid"
  say "node $i ($roles) pid $! on 127.0.0.1:$(client_port "$i")"
done
# a node listens for clients once it is registered and has caught up with the metadata
for i in $(seq 1 "$N"); do
  pid="$(cat "$DIR/node-$i.pid")"; ok=0
  for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then say "node $i exited during start-up; tail of $DIR/node-$i.log:" >&2; tail -20 "$DIR/node-$i.log" >&2; exit 1; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$(client_port "$i")") 2>/dev/null; then ok=1; break; fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || { say "node $i did not open 127.0.0.1:$(client_port "$i") within 60 s (see $DIR/node-$i.log)" >&2; exit 1; }
done
bootstrap=""
for i in $(seq 1 "$N"); do bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:$(client_port "$i")"; done
say "listening: $bootstrap"
