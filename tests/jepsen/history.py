"""The history format shared by the workload processes, the nemesis and the checker.

One JSON object per line, one file per process (``<out>/history/<proc>.jsonl``). Every line has

    proc   the process name ("prod-0", "asg-1", "sub-0", "final-1", "nemesis", ...)
    type   "invoke" | "ok" | "fail" | "info"   (Jepsen's: fail = surely not done, info = unknown)
    f      "send" | "poll" | "commit" | "committed" | "assign" | "subscribe" | "rebalance"
           | "final-read" | "final-end" | nemesis operations
    mono   time.monotonic_ns() (CLOCK_MONOTONIC: one clock for every process on the machine)
    wall   time.time()

and per ``f``:

    send       part, value (int), and on ok: offset; on fail/info: error
    poll       msgs: [[part, offset, value], ...] (one line per consume() call that returned
               records); type info + error for an error event the consumer returned
    commit     group, offsets {part: next offset}; ok/fail/info + error
    committed  group, offsets {part: committed offset} (an OffsetFetch answer: an observation)
    assign     parts (the whole new assignment; positions {part: next offset} when explicit)
    subscribe  topic
    rebalance  event "assign" | "revoke" | "lost", parts
    final-read part, end (the high watermark the reader read up to), msgs as for poll
    final-end  ends {part: high watermark}, complete (bool)

Values are unique integers (``producer index * 10_000_000 + sequence``), stored as their
decimal ASCII text in the record value; the record key is ``b"<partition>"``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path


class HistoryWriter:
    def __init__(self, path: Path, proc: str):
        self.proc = proc
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", buffering=1)  # line-buffered: a SIGKILLed client loses at most a line
        self._lock = threading.Lock()  # the nemesis writes from two threads

    def write(self, type_: str, f: str, **fields) -> dict:
        op = {"proc": self.proc, "type": type_, "f": f, "mono": time.monotonic_ns(), "wall": time.time()}
        op.update(fields)
        line = json.dumps(op, separators=(",", ":")) + "\n"
        with self._lock:
            self._f.write(line)
        return op

    def flush(self) -> None:
        self._f.flush()
        try:
            os.fsync(self._f.fileno())
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._f.close()


def read_history(path_or_dir) -> list[dict]:
    """Every op of a history file, or of every ``*.jsonl`` under a directory, sorted by ``mono``
    (stable: a process's own order is kept for equal stamps). A torn last line is skipped."""
    p = Path(path_or_dir)
    files = sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    ops = []
    for fp in files:
        with open(fp) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    ops.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line torn by a kill
    ops.sort(key=lambda o: o.get("mono", 0))
    return ops
