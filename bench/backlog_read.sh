#!/usr/bin/env bash
# Issue 58, goal 4: what consumers reading a backlog cost the broker, and what they do to the
# tail of acks=all producers beside them. One broker (RF 1) each: Apache Kafka 4.4.0 (sends
# segment data with sendfile, FileRecords.writeTo), Frieda with `fetch.zero.copy` (sendfile,
# the default) and Frieda with it off (`frieda-copy`: pread into memory, then send), the same
# load generator, in one run; each repeat runs every broker in turn, started afresh.
#
# Per broker: a topic `bulk` is filled with BACKLOG_MB of 64 KiB records (acks=all, 2
# producers), written back (`sync`); then a probe producer (frieda-bench produce: open loop,
# PROBE_RATE records/s of 100 B, acks=all, 1 partition, linger 0) runs quiet for PROBE_D s, and
# again for PROBE_D s while BACKLOG_READERS readers (frieda-bench read: 1 MiB fetches of
# partition 0 of `bulk` from spread-out offsets, around again at the log end) read it as fast
# as they can. BACKLOG_DROP_CACHES=1 drops the page cache before the readers start (root only),
# so they read from the device.
#
#   bench/backlog_read.sh [OUT_DIR]      (scripts/bench --backlog runs it)
#
# Environment: BACKLOG_BROKERS "kafka frieda frieda-copy", BACKLOG_MB 2000, BACKLOG_READERS 4,
#   PROBE_RATE 10000, PROBE_W 3 / PROBE_D 15 (warm-up / measured s), BACKLOG_REPEAT 1,
#   BACKLOG_DROP_CACHES 0, BACKLOG_FRIEDA_OVERRIDE (space-separated KEY=VALUE settings for both
#   Frieda brokers), FRIEDA_BIN, BENCH_BIN, KAFKA_PORT (bench/kafka/env.sh), FRIEDA_PORT
#   19192.
# Output: OUT_DIR/<repeat>/<broker>-{quiet,read}.{json,txt}, <broker>-readers.json and
# OUT_DIR/summary.txt (per broker: the probe's p50 p99 p99.9 p99.99 max in µs quiet and under
# the readers, the readers' MB/s, the broker's CPU seconds per GB read: its CPU during the read
# cell less the quiet cell's, over the bytes read).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/bench/results/backlog-$(date -u +%Y%m%dT%H%M%SZ)}"
BROKERS="${BACKLOG_BROKERS:-kafka frieda frieda-copy}"
MB="${BACKLOG_MB:-2000}"; READERS="${BACKLOG_READERS:-4}"
RATE="${PROBE_RATE:-10000}"; W="${PROBE_W:-3}"; D="${PROBE_D:-15}"
REPEAT="${BACKLOG_REPEAT:-1}"; DROP="${BACKLOG_DROP_CACHES:-0}"
FRIEDA_BIN="${FRIEDA_BIN:-$ROOT/target/release/frieda}"
BENCH_BIN="${BENCH_BIN:-$ROOT/target/release/frieda-bench}"
FRIEDA_PORT="${FRIEDA_PORT:-19192}"
DATA=/tmp/frieda-backlog-data
. "$ROOT/bench/kafka/env.sh"
mkdir -p "$OUT"
[ -x "$FRIEDA_BIN" ] && [ -x "$BENCH_BIN" ] || (cd "$ROOT" && cargo build --release -p frieda -p frieda-bench)
# A copy: a rebuild during the run changes nothing.
cp "$FRIEDA_BIN" "$OUT/frieda"
BROKER_PID=""
# A stopped broker's data is deleted (GBs per broker).
stop_broker() {
  if [ -n "$BROKER_PID" ]; then
    kill "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
    BROKER_PID=""
  fi
  if kafka_pid_alive; then "$ROOT/bench/kafka/stop-kafka.sh" >/dev/null 2>&1 || true; fi
  rm -rf "$DATA" "$KAFKA_DATA"
}
trap stop_broker EXIT

start_broker() { # <broker> -> sets BOOT, BROKER_PID
  case "$1" in
    kafka)
      FRESH=1 "$ROOT/bench/kafka/run-kafka.sh" >&2
      BROKER_PID="$(cat "$KAFKA_PIDFILE")"; BOOT="$KAFKA_BOOTSTRAP" ;;
    frieda*)
      local zc=true
      [ "$1" = frieda-copy ] && zc=false
      rm -rf "$DATA"; mkdir -p "$DATA"
      local extra=()
      for kv in ${BACKLOG_FRIEDA_OVERRIDE:-}; do extra+=(--override "$kv"); done
      "$OUT/frieda" serve --listen "127.0.0.1:$FRIEDA_PORT" --data-dir "$DATA" --override "fetch.zero.copy=$zc" \
        "${extra[@]}" > "$OUT/frieda-broker.log" 2>&1 &
      BROKER_PID=$!; BOOT="127.0.0.1:$FRIEDA_PORT"
      for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$FRIEDA_PORT") 2>/dev/null && break; sleep 0.1; done ;;
  esac
}

cpu_ticks() { # <pid> -> utime + stime of the process, clock ticks
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

"$BENCH_BIN" roof-wake --rate "$RATE" --secs 10 > "$OUT/roof-wake.txt" 2>&1 || true
HZ="$(getconf CLK_TCK)"
for r in $(seq 1 "$REPEAT"); do
  mkdir -p "$OUT/$r"
  for b in $BROKERS; do
    start_broker "$b"
    "$BENCH_BIN" create-topic --bootstrap "$BOOT" --topic bulk --partitions 1 >/dev/null 2>&1
    filled=0; chunk=0
    while [ "$filled" -lt "$MB" ] && [ "$chunk" -lt 60 ]; do
      chunk=$((chunk + 1))
      "$BENCH_BIN" produce --bootstrap "$BOOT" --topic bulk --partitions 1 --acks all --record-size 65536 \
        --batch-records 1 --producers 2 --rate 0 --warmup-secs 0 --duration-secs 2 \
        --json "$OUT/$r/$b-fill.json" --progress-secs 0 --quiet >/dev/null 2>&1 || break
      filled=$(( filled + $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d["acked_total"] * 65536 / 1e6))' "$OUT/$r/$b-fill.json") ))
    done
    sync
    "$BENCH_BIN" produce --bootstrap "$BOOT" --topic probe --create-topic --partitions 1 --acks all \
      --rate "$RATE" --warmup-secs "$W" --duration-secs "$D" --broker-pid "$BROKER_PID" \
      --json "$OUT/$r/$b-quiet.json" > "$OUT/$r/$b-quiet.txt" 2>&1 || true
    q0="$(cpu_ticks "$BROKER_PID")"; qt0="$(date +%s.%N)"
    # the quiet cell's broker CPU rate (its CPU over the next 5 s of the same probe load)
    "$BENCH_BIN" produce --bootstrap "$BOOT" --topic probe --partitions 1 --acks all \
      --rate "$RATE" --warmup-secs 0 --duration-secs 5 --progress-secs 0 --quiet >/dev/null 2>&1 || true
    q1="$(cpu_ticks "$BROKER_PID")"; qt1="$(date +%s.%N)"
    if [ "$DROP" = 1 ]; then sync; echo 1 > /proc/sys/vm/drop_caches; fi
    secs=$(( W + D + 4 ))
    "$BENCH_BIN" read --bootstrap "$BOOT" --topic bulk --readers "$READERS" --secs "$secs" \
      --json "$OUT/$r/$b-readers.json" > "$OUT/$r/$b-readers.txt" 2>&1 &
    readers=$!
    sleep 2
    c0="$(cpu_ticks "$BROKER_PID")"; t0="$(date +%s.%N)"
    "$BENCH_BIN" produce --bootstrap "$BOOT" --topic probe --partitions 1 --acks all \
      --rate "$RATE" --warmup-secs "$W" --duration-secs "$D" --broker-pid "$BROKER_PID" \
      --json "$OUT/$r/$b-read.json" > "$OUT/$r/$b-read.txt" 2>&1 || true
    c1="$(cpu_ticks "$BROKER_PID")"; t1="$(date +%s.%N)"
    wait "$readers" || true
    python3 - "$OUT/$r" "$b" "$HZ" "$q0" "$q1" "$qt0" "$qt1" "$c0" "$c1" "$t0" "$t1" "$filled" >> "$OUT/summary.txt" <<'EOF'
import json, sys
d, b, hz = sys.argv[1], sys.argv[2], float(sys.argv[3])
q0, q1, qt0, qt1, c0, c1, t0, t1 = map(float, sys.argv[4:12])
filled = sys.argv[12]
def lat(name):
    try:
        j = json.load(open(f"{d}/{b}-{name}.json"))
        return " / ".join(f"{j[k]:.0f}" for k in ("p50_us", "p99_us", "p999_us", "p9999_us", "max_us"))
    except Exception as e:  # a failed cell says so
        return f"no result ({e})"
rd = json.load(open(f"{d}/{b}-readers.json"))
quiet_rate = (q1 - q0) / hz / max(qt1 - qt0, 1e-9)
extra = (c1 - c0) / hz - quiet_rate * (t1 - t0)
gb = rd["mb_s"] * (t1 - t0) / 1e3
print(f"repeat {d.rsplit('/', 1)[-1]}  {b:<11} backlog {filled} MB  probe p50/p99/p99.9/p99.99/max µs quiet {lat('quiet')}  "
      f"under readers {lat('read')}  readers {rd['mb_s']:.0f} MB/s  broker CPU {extra / max(gb, 1e-9):.2f} s per GB read "
      f"({(c1 - c0) / hz:.1f} s in {t1 - t0:.1f} s, quiet {quiet_rate:.2f} s/s)")
EOF
    tail -1 "$OUT/summary.txt"
    stop_broker
    sleep 3
  done
done
rm -f "$OUT/frieda"
echo "[backlog] wrote $OUT" >&2
