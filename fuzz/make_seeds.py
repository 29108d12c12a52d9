#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz targets (fuzz/seeds/<target>/) from the integration
tests' wire encoder (tests/integration/kafka_wire.py). Deterministic: rerun after changing it.

These are the hand-made, realistic seeds; the request targets also start from a request for every
version of every API of the broker's API table (crates/frieda/src/handlers/table.rs), generated at
run time by the fuzz crate (`frieda_fuzz::table_seeds`), so a new API needs no edit here."""

import hashlib
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import kafka_wire as w  # noqa: E402

OUT = ROOT / "fuzz" / "seeds"
rnd = random.Random(2026)
TS = 1_700_000_000_000


def put(target: str, data: bytes) -> None:
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def batches():
    yield w.record_batch([w.Record(b"k", b"v", [], TS)])
    yield w.record_batch([w.Record(None, b"", [("h", None)], TS)])
    yield w.record_batch([w.Record(b"key-%d" % i, rnd.randbytes(rnd.randrange(0, 200)),
                                   [("a", b"b"), ("dup", b"1"), ("dup", b"2")], TS + i) for i in range(5)])
    yield w.record_batch([w.Record(b"p", b"idempotent", [], TS)], producer_id=7, producer_epoch=0, base_sequence=0)
    yield w.record_batch([w.Record(b"x", b"y" * 1000, [], TS)], attributes=0x08)  # LogAppendTime bit


frames = []
bs = list(batches())
corr = 1
frames.append(w.api_versions_v0(corr)[4:])
frames.append(w.api_versions_v3(2)[4:])
frames.append(w.api_versions_v3(3, version=99)[4:])
frames.append(w.metadata_v1(4, None)[4:])
frames.append(w.metadata_v1(5, ["topic-a", "b"])[4:])
frames.append(w.metadata_v1(6, [], version=9)[4:] if "version" in w.metadata_v1.__code__.co_varnames else w.metadata_v1(6, [])[4:])
for i, b in enumerate(bs):
    frames.append(w.produce_v9(10 + i, "topic", i % 3, b, acks=-1)[4:])
frames.append(w.produce_v9(20, "topic", 0, None, acks=1)[4:])
frames.append(w.init_producer_id_v4(21)[4:])
for f in frames:
    put("request_frame", f)
put("request_stream", b"".join(w.frame(f) for f in frames[:4]))
put("request_stream", b"".join(w.frame(f) for f in frames[4:]))
put("request_stream", w.frame(frames[0]) + (0x7fffffff).to_bytes(4, "big"))
for b in bs:
    put("record_batch", b)
put("record_batch", bs[0] + bs[1])
put("record_batch", bs[2][:40])


def segment(parts):
    out, off = b"", 0
    for b in parts:
        n = int.from_bytes(b[57:61], "big")
        out += off.to_bytes(8, "big") + b[8:]
        off += n
    return out


seg = segment(bs)
put("log_recovery", seg)
put("log_recovery", seg + seg[:70])
put("log_recovery", seg + b"\0" * 100)
flipped = bytearray(seg)
flipped[len(seg) // 2] ^= 0x10
put("log_recovery", bytes(flipped))
put("log_recovery", segment(bs[:1]))
print(f"wrote seeds under {OUT}")
