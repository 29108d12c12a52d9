#!/usr/bin/env bash
# One hot partition at RF 3: 32 producers unthrottled, whole-machine profile.
set -u
ROOT=/work/main; D=$(mktemp -d /tmp/prof32.XXXX); B=$ROOT/target/release/frieda-bench
OUT=$ROOT/bench/results/profile-hot-partition-rf3-20261130; mkdir -p "$OUT"
trap '"$ROOT/bench/frieda/stop-frieda-cluster.sh" "$D/cluster" >/dev/null 2>&1; rm -rf "$D"' EXIT
FRIEDA_BIN=$ROOT/target/release/frieda "$ROOT/bench/frieda/run-frieda-cluster.sh" 3 "$D/cluster" > "$D/cluster.txt" 2>&1 || { cat "$D/cluster.txt"; exit 1; }
BOOT=127.0.0.1:21192,127.0.0.1:21292,127.0.0.1:21392
grep -q listening "$D/cluster.txt" || true
"$B" describe --bootstrap "$BOOT" --brokers 3 --wait-isr-full-secs 60 --json "$D/d.json" >/dev/null 2>&1
"$B" create-topic --bootstrap "$BOOT" --topic hot --partitions 1 --replication-factor 3 --topic-config min.insync.replicas=2 >/dev/null
"$B" produce --bootstrap "$BOOT" --topic hot --partitions 1 --replication-factor 3 --acks all --record-size 100 \
  --producers 32 --rate 0 --warmup-secs 3 --duration-secs 14 --json "$OUT/produce.json" --progress-secs 0 --quiet > "$D/p.txt" 2>&1 &
P=$!
sleep 5
perf record -a -g -e cpu-clock -o "$D/perf.data" -- sleep 10 >/dev/null 2>&1
wait $P
perf report -i "$D/perf.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 > "$OUT/perf-comm.txt"
perf report -i "$D/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40 > "$OUT/perf-sym.txt"
perf report -i "$D/perf.data" --children --comm frieda-net --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40 > "$OUT/perf-net-children.txt"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("throughput %.0f rec/s p50 %s p99.9 %s us errors %s" % (d["throughput_rps"], d["p50_us"], d["p999_us"], d["errors"]))' "$OUT/produce.json"
