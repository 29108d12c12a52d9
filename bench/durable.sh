#!/usr/bin/env bash
# Issue 58, goal 6 ("durable by default"): Frieda with every acks=all record fsync'ed before its
# answer (flush.messages=1, group commit) against Apache Kafka 4.4.0 without fsync (its default),
# and Frieda without fsync, one broker (RF 1) each, the same load generator (frieda-bench
# produce: open loop, 100 B, acks=all, one partition, linger 0, 5 requests in flight), in one
# run. Each repeat runs every broker in turn; a broker is started afresh, burnt in (unreported
# heavy load: the JVM's JIT, page cache), then measured in each cell. The machine's wake-up floor
# (frieda-bench roof-wake) is measured in the same run. Each cell starts after a `sync`, with no
# dirty pages left from the burn-in or an earlier broker.
#
#   bench/durable.sh [OUT_DIR]      (scripts/bench --durable runs it)
#
# scripts/bench --large runs the same harness for issue 58's goal 3 (large records at ~50 MB/s,
# Frieda and Kafka both without fsync): a cell may name its record size, rate:producers:bytes.
#
# DURABLE_RF=3: 3-node clusters instead (bench/kafka/run-kafka-cluster.sh and
# bench/frieda/run-frieda-cluster.sh, ports 22092+ / 21092+), topics with RF 3 and
# min.insync.replicas=2; with flush.messages=1 every replica fsyncs (a follower before its next
# fetch, which is what moves the high watermark), and all nodes' CPU is summed.
#
# Environment: DURABLE_CELLS "1000:1 10000:1 10000:8 50000:1 50000:8" (rate:producers, or
#   rate:producers:record bytes; 100 B when not given), DURABLE_RF 1,
#   DURABLE_W 3 / DURABLE_D 15 (warm-up / measured s per cell), DURABLE_BURNIN 30,
#   DURABLE_REPEAT 1, DURABLE_BROKERS "kafka frieda-fsync frieda" (frieda-fsync-pre: Frieda
#   with flush.messages=1 and preallocate=true), FRIEDA_BIN, BENCH_BIN,
#   KAFKA_PORT (bench/kafka/env.sh), FRIEDA_PORT 19192.
# Output: OUT_DIR/<repeat>/<broker>-<rate>-<producers>[-<bytes>].json (frieda-bench --json) and
# OUT_DIR/summary.txt (one line per cell: p50 p99 p99.9 p99.99 max in µs, broker CPU s per
# million records).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/bench/results/durable-$(date -u +%Y%m%dT%H%M%SZ)}"
CELLS="${DURABLE_CELLS:-1000:1 10000:1 10000:8 50000:1 50000:8}"
W="${DURABLE_W:-3}"; D="${DURABLE_D:-15}"; BURNIN="${DURABLE_BURNIN:-30}"
REPEAT="${DURABLE_REPEAT:-1}"
RF="${DURABLE_RF:-1}"
[ "$RF" = 1 ] || [ "$RF" = 3 ] || { echo "DURABLE_RF must be 1 or 3" >&2; exit 2; }
FRIEDA_CLUSTER_DIR="${FRIEDA_CLUSTER_DIR:-/tmp/frieda-durable-cluster}"
BROKERS="${DURABLE_BROKERS:-kafka frieda-fsync frieda}"
FRIEDA_BIN="${FRIEDA_BIN:-$ROOT/target/release/frieda}"
BENCH_BIN="${BENCH_BIN:-$ROOT/target/release/frieda-bench}"
FRIEDA_PORT="${FRIEDA_PORT:-19192}"
. "$ROOT/bench/kafka/env.sh"
mkdir -p "$OUT"
[ -x "$FRIEDA_BIN" ] && [ -x "$BENCH_BIN" ] || (cd "$ROOT" && cargo build --release -p frieda -p frieda-bench)
# A copy: a rebuild during the run changes nothing.
cp "$FRIEDA_BIN" "$OUT/frieda"
BROKER_PID=""
# A stopped broker's data is deleted: an unthrottled burn-in writes GBs (at RF 3 about 10 GB per
# cluster), and left behind they filled this machine's disk on 2026-12-06.
stop_broker() {
  if [ "$RF" = 3 ]; then
    "$ROOT/bench/kafka/stop-kafka-cluster.sh" >/dev/null 2>&1 || true
    "$ROOT/bench/frieda/stop-frieda-cluster.sh" "$FRIEDA_CLUSTER_DIR" >/dev/null 2>&1 || true
    BROKER_PID=""
    rm -rf "$FRIEDA_CLUSTER_DIR" "${KAFKA_CLUSTER_DIR:-$KAFKA_ANCHOR_DIR/cluster}"
    return
  fi
  if [ -n "$BROKER_PID" ]; then
    kill "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
    BROKER_PID=""
  fi
  if kafka_pid_alive; then "$ROOT/bench/kafka/stop-kafka.sh" >/dev/null 2>&1 || true; fi
  rm -rf /tmp/frieda-durable-data "$KAFKA_DATA"
}
trap stop_broker EXIT

start_broker() { # <broker> -> sets BOOT, BROKER_PID (comma-separated for a cluster)
  if [ "$RF" = 3 ]; then
    local base dir
    case "$1" in
      kafka) "$ROOT/bench/kafka/run-kafka-cluster.sh" 3 >&2
             base="${KAFKA_CLUSTER_PORT_BASE:-22092}"; dir="${KAFKA_CLUSTER_DIR:-$KAFKA_ANCHOR_DIR/cluster}" ;;
      frieda*) FRIEDA_BIN="$OUT/frieda" "$ROOT/bench/frieda/run-frieda-cluster.sh" 3 "$FRIEDA_CLUSTER_DIR" >&2
             base="${FRIEDA_CLUSTER_PORT_BASE:-21092}"; dir="$FRIEDA_CLUSTER_DIR" ;;
    esac
    BROKER_PID="$(cat "$dir"/node-[123].pid | paste -sd,)"
    BOOT="127.0.0.1:$((base + 100)),127.0.0.1:$((base + 200)),127.0.0.1:$((base + 300))"
    return
  fi
  case "$1" in
    kafka)
      FRESH=1 "$ROOT/bench/kafka/run-kafka.sh" >&2
      BROKER_PID="$(cat "$KAFKA_PIDFILE")"; BOOT="$KAFKA_BOOTSTRAP" ;;
    frieda*)
      rm -rf /tmp/frieda-durable-data; mkdir -p /tmp/frieda-durable-data
      "$OUT/frieda" serve --listen "127.0.0.1:$FRIEDA_PORT" --data-dir /tmp/frieda-durable-data \
        > "$OUT/frieda-broker.log" 2>&1 &
      BROKER_PID=$!; BOOT="127.0.0.1:$FRIEDA_PORT"
      for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$FRIEDA_PORT") 2>/dev/null && break; sleep 0.1; done ;;
  esac
}

topic_args() { # <broker> <topic>
  local a=(--topic "$2" --create-topic)
  [ "$RF" = 3 ] && a+=(--replication-factor 3 --topic-config min.insync.replicas=2)
  [ "$1" = frieda-fsync ] && a+=(--topic-config flush.messages=1)
  [ "$1" = frieda-fsync-pre ] && a+=(--topic-config flush.messages=1 --topic-config preallocate=true)
  echo "${a[@]}"
}

"$BENCH_BIN" roof-wake --help >/dev/null 2>&1 && "$BENCH_BIN" roof-wake --rate 10000 --secs 10 \
  > "$OUT/roof-wake.txt" 2>&1 || true
for r in $(seq 1 "$REPEAT"); do
  mkdir -p "$OUT/$r"
  for b in $BROKERS; do
    start_broker "$b"
    # shellcheck disable=SC2046
    "$BENCH_BIN" produce --bootstrap "$BOOT" $(topic_args "$b" burnin) --producers 8 --rate 0 \
      --warmup-secs 0 --duration-secs "$BURNIN" > "$OUT/$r/$b-burnin.txt" 2>&1 || true
    for cell in $CELLS; do
      IFS=: read -r rate prod size <<< "$cell"
      name="$rate-$prod${size:+-$size}"
      # Every cell starts with no dirty pages anywhere: the burn-in's (GBs without fsync), the
      # previous cell's and a stopped broker's deleted data are written back before it, not
      # during it. The fsync of one cell otherwise waits behind another's writeback in the
      # disk's queue (a 60 s run of this cell under `perf record` showed fsyncs of 66-102 ms
      # while 1.9 GB of other writeback went out; without it, 0 stalls in 3 x 60 s).
      sync
      # shellcheck disable=SC2046
      "$BENCH_BIN" produce --bootstrap "$BOOT" $(topic_args "$b" "d-$name") \
        --producers "$prod" --rate "$rate" --record-size "${size:-100}" --warmup-secs "$W" --duration-secs "$D" \
        --broker-pid "$BROKER_PID" --json "$OUT/$r/$b-$name.json" > "$OUT/$r/$b-$name.txt" 2>&1 || true
      lat="$(grep -h 'latency µs' "$OUT/$r/$b-$name.txt" || echo 'no result')"
      cpu="$(grep -ho '([0-9.]* s per million records)' "$OUT/$r/$b-$name.txt" || true)"
      printf 'repeat %s  %-16s %6s rec/s %2s producers %6s B  %s %s\n' "$r" "$b" "$rate" "$prod" "${size:-100}" "$lat" "$cpu" | tee -a "$OUT/summary.txt"
    done
    stop_broker
    sleep 5
  done
done
echo "[durable] wrote $OUT" >&2
