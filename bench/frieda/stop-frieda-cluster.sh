#!/usr/bin/env bash
# Stop the nodes started by run-frieda-cluster.sh DIR: SIGCONT + SIGTERM to each PID in
# DIR/node-i.pid (only if that PID still runs `serve --config DIR/node-i.toml`), broker-only
# nodes first; wait up to 30 s, then SIGKILL the same PIDs. Never kills by name.
set -uo pipefail
DIR="${1:-}"; [ -n "$DIR" ] || { echo "usage: $0 DIR" >&2; exit 2; }
ours() {  # ours PID NODE: alive, not a zombie, serving that node's config
  kill -0 "$1" 2>/dev/null || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ] || return 1
  tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "serve --config $DIR/$2.toml"
}
pids=()
for i in $(seq 64 -1 1); do
  f="$DIR/node-$i.pid"; [ -e "$f" ] || continue
  pid="$(cat "$f")"
  if ours "$pid" "node-$i"; then
    kill -CONT "$pid" 2>/dev/null || true     # a node left paused by a benchmark cannot shut down
    kill -TERM "$pid" 2>/dev/null || true
    echo "[frieda-cluster] SIGTERM node-$i (pid $pid)"
    pids+=("$pid:node-$i:$f")
  else
    rm -f "$f"
  fi
done
for _ in $(seq 1 60); do
  left=0
  for x in "${pids[@]}"; do IFS=: read -r pid node f <<< "$x"; if ours "$pid" "$node"; then left=1; else rm -f "$f"; fi; done
  [ "$left" = 0 ] && { echo "[frieda-cluster] stopped"; exit 0; }
  sleep 0.5
done
for x in "${pids[@]}"; do
  IFS=: read -r pid node f <<< "$x"
  if ours "$pid" "$node"; then echo "[frieda-cluster] $node (pid $pid) still alive after 30 s; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$f"
done
