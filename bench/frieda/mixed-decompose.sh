#!/usr/bin/env bash
# What sets the acks=all tail in the mixed-load cell (issue 34): the cell of `scripts/bench
# --cluster` (CLUSTER3_CELLS=mixed:8) on a 3-node Frieda cluster, run once per variant with one
# part of the load changed, so each part's share of the p99.9 shows; then the full load again
# under a whole-machine `perf record -a -g`, its CPU attributed to processes and threads.
#
#   bench/frieda/mixed-decompose.sh [OUT]     default OUT bench/results/mixed-decompose-<stamp>
#
# Load (as the bench cell): 8 producers, 10,000 records/s in total, acks=all, 100 B, linger 0, one
# RF 3 partition with min.insync.replicas=2; 4 backlog readers (`frieda-bench read`, 1 MiB
# fetches from spread-out offsets to the high watermark and around again) of a second RF 3 topic
# first filled for FILL_SECS (default 15) by 2 unthrottled 64 KiB producers; one producer of
# 64 KiB records, acks=all, one in flight, unthrottled, to that topic. Variants, each measured
# MEASURE_SECS (default 30) after a 5 s warm-up, one after another on the same cluster:
#   quiet            the 8 producers alone
#   full             everything
#   readers-nice19   everything, the reader processes (the load generator's, not Frieda's) at nice 19
#   no-readers       the 8 producers and the bulk producer
#   no-bulk          the 8 producers and the readers
# Needs target/release/frieda and frieda-bench (cargo build --release), perf for the profile
# (PERF=0 leaves it out; KEEP_PERF=FILE keeps perf.data). VARIANTS="quiet full ..." runs a subset,
# in that order. Stops the cluster it started by PID on exit.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/bench/results/mixed-decompose-$(date -u +%Y%m%dT%H%M%SZ)}"
BIN="${FRIEDA_BIN:-$ROOT/target/release/frieda}"
B="${BENCH_BIN:-$ROOT/target/release/frieda-bench}"
FILL_SECS="${FILL_SECS:-15}"; MEASURE_SECS="${MEASURE_SECS:-30}"; PERF="${PERF:-1}"
D="$(mktemp -d /tmp/frieda-mixed.XXXXXX)"
mkdir -p "$OUT/raw"
say() { echo "[mixed $(date -u +%H:%M:%S)] $*" >&2; }
cleanup() { "$ROOT/bench/frieda/stop-frieda-cluster.sh" "$D/cluster" >/dev/null 2>&1; rm -rf "$D"; }
trap cleanup EXIT

export FRIEDA_CLUSTER_PORT_BASE="${FRIEDA_CLUSTER_PORT_BASE:-21092}"
FRIEDA_BIN="$BIN" "$ROOT/bench/frieda/run-frieda-cluster.sh" 3 "$D/cluster" > "$OUT/raw/cluster.txt" 2>&1 \
  || { cat "$OUT/raw/cluster.txt" >&2; exit 1; }
BOOT="$(sed -n 's/.*listening: //p' "$OUT/raw/cluster.txt")"
"$B" describe --bootstrap "$BOOT" --brokers 3 --wait-isr-full-secs 120 >/dev/null 2>&1
"$B" create-topic --bootstrap "$BOOT" --topic bulk --partitions 1 --replication-factor 3 \
  --topic-config min.insync.replicas=2 >/dev/null 2>&1
say "filling the backlog for ${FILL_SECS} s"
"$B" produce --bootstrap "$BOOT" --topic bulk --partitions 1 --acks all --record-size 65536 --batch-records 1 \
  --producers 2 --rate 0 --warmup-secs 0 --duration-secs "$FILL_SECS" --broker frieda \
  --json "$OUT/raw/fill.json" --progress-secs 0 --quiet >/dev/null 2>&1
"$B" describe --bootstrap "$BOOT" --topic bulk --brokers 3 --wait-isr-full-secs 300 >/dev/null 2>&1
PIDS="$(cat "$D"/cluster/node-*.pid | paste -sd,)"

# run VARIANT READERS(0/1) READER_NICE BULK(0/1) PERF(0/1)
run() {
  local v="$1" readers="$2" rnice="$3" bulk="$4" perf="$5" secs=$((MEASURE_SECS + 10)) r="" p=""
  "$B" create-topic --bootstrap "$BOOT" --topic "lat-$v" --partitions 1 --replication-factor 3 \
    --topic-config min.insync.replicas=2 >/dev/null 2>&1
  "$B" describe --bootstrap "$BOOT" --topic "lat-$v" --brokers 3 --wait-isr-full-secs 60 >/dev/null 2>&1
  say "$v"
  if [ "$readers" = 1 ]; then
    nice -n "$rnice" "$B" read --bootstrap "$BOOT" --topic bulk --readers 4 --secs "$secs" \
      --json "$OUT/raw/$v.read.json" >/dev/null 2>&1 & r=$!
  fi
  if [ "$bulk" = 1 ]; then
    "$B" produce --bootstrap "$BOOT" --topic bulk --partitions 1 --acks all --record-size 65536 --batch-records 1 \
      --producers 1 --max-in-flight 1 --rate 0 --warmup-secs 0 --duration-secs "$secs" --broker frieda \
      --json "$OUT/raw/$v.bulk.json" --progress-secs 0 --quiet >/dev/null 2>&1 & p=$!
  fi
  sleep 3
  "$B" produce --bootstrap "$BOOT" --topic "lat-$v" --partitions 1 --acks all --record-size 100 --producers 8 \
    --linger-us 0 --rate 10000 --warmup-secs 5 --duration-secs "$MEASURE_SECS" --broker frieda --broker-pid "$PIDS" \
    --json "$OUT/raw/$v.lat.json" --progress-secs 0 --quiet >/dev/null 2>"$OUT/raw/$v.lat.stderr" & local l=$!
  if [ "$perf" = 1 ]; then
    sleep 10
    perf record -a -g -e cpu-clock -o "$D/perf.data" -- sleep 10 >/dev/null 2>&1
    perf report -i "$D/perf.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep -v '^#' \
      | grep -v '^$' | head -40 > "$OUT/raw/$v.perf-comm.txt"
    perf report -i "$D/perf.data" --no-children --sort pid --stdio -g none 2>/dev/null | grep -v '^#' \
      | grep -v '^$' | head -20 > "$OUT/raw/$v.perf-pid.txt"
    perf report -i "$D/perf.data" --no-children --sort comm,sym --stdio -g none 2>/dev/null | grep -v '^#' \
      | grep -v '^$' | head -60 > "$OUT/raw/$v.perf-sym.txt"
    # the network threads' time by the Frieda function that called into the kernel or libc
    perf report -i "$D/perf.data" --children --comm frieda-net --sort sym --stdio -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | grep -E 'frieda|tokio::runtime|\[k\] (sys_|__x64_sys|do_sys|x64_sys)' \
      | head -60 > "$OUT/raw/$v.perf-net-children.txt"
    [ -n "${KEEP_PERF:-}" ] && cp "$D/perf.data" "$KEEP_PERF"
  fi
  wait "$l"; [ -n "$r" ] && wait "$r"; [ -n "$p" ] && wait "$p"
}
VARIANTS="${VARIANTS:-quiet full readers-nice19 no-readers no-bulk full-profiled}"
for v in $VARIANTS; do
  case "$v" in
    quiet) run quiet 0 0 0 0 ;;
    full) run full 1 0 1 0 ;;
    readers-nice19) run readers-nice19 1 19 1 0 ;;
    no-readers) run no-readers 0 0 1 0 ;;
    no-bulk) run no-bulk 1 0 0 0 ;;
    full-profiled) [ "$PERF" = 1 ] && run full-profiled 1 0 1 1 ;;
    *) say "unknown variant $v" ;;
  esac
done

python3 - "$OUT" "$FILL_SECS" "$MEASURE_SECS" <<'PY'
import json, os, sys
out, fill, secs = sys.argv[1], sys.argv[2], sys.argv[3]
raw = os.path.join(out, "raw")
def load(name):
    p = os.path.join(raw, name)
    return json.load(open(p)) if os.path.exists(p) else None
quiet = load("quiet.lat.json")
rows = []
for v in ["quiet", "full", "readers-nice19", "no-readers", "no-bulk", "full-profiled"]:
    l = load(v + ".lat.json")
    if not l:
        continue
    r, b = load(v + ".read.json"), load(v + ".bulk.json")
    rows.append("| %s | %d | %d | %d | %d | %d | %.2fx | %s | %s | %d |" % (
        v, l["p50_us"], l["p99_us"], l["p999_us"], l.get("p9999_us", 0), l["max_us"],
        l["p999_us"] / quiet["p999_us"] if quiet else 0,
        "%.0f" % r["mb_s"] if r else "-", "%.1f" % b["throughput_mb_s"] if b else "-", l.get("errors", 0)))
fillj = load("fill.json")
lines = ["# The mixed-load cell taken apart (issue 34)", "",
         "`bench/frieda/mixed-decompose.sh`: 3 Frieda nodes on this 2-core machine, RF 3, "
         "min.insync.replicas=2; 8 producers at 10,000 records/s in total, acks=all, 100 B, linger 0, "
         "%s s measured after 5 s warm-up per variant; backlog filled for %s s (%.0f MB); 4 readers with 1 MiB "
         "fetches; one unthrottled 64 KiB producer, one request in flight. Latencies in µs from the scheduled "
         "send time (open loop). One run per variant." % (secs, fill, fillj["throughput_mb_s"] * float(fill) if fillj else 0), "",
         "| variant | p50 | p99 | p99.9 | p99.99 | max | p99.9 / quiet | readers MB/s | bulk MB/s | errors |",
         "|---|---|---|---|---|---|---|---|---|---|"] + rows
for f, title in [("full-profiled.perf-comm.txt", "CPU by thread name (perf record -a -g -e cpu-clock, 10 s, whole machine)"),
                 ("full-profiled.perf-pid.txt", "CPU by process"),
                 ("full-profiled.perf-sym.txt", "Top symbols by thread name"),
                 ("full-profiled.perf-net-children.txt", "Network threads (frieda-net): time under each function, callees included")]:
    p = os.path.join(raw, f)
    if os.path.exists(p):
        lines += ["", "## " + title, "", "```", open(p).read().rstrip(), "```"]
open(os.path.join(out, "README.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines[:10 + len(rows)]))
PY
