"""More raw wire pieces for test_semantics.py / test_startup.py, on top of ``kafka_wire``.

- ``raw_batch``: a v2 record batch whose header fields (last offset delta, record count,
  attributes, timestamps) can be set independently of the records it carries;
- Fetch v11 (non-flexible: the oldest version that may carry zstd batches) request and response;
- ``parse_batches``: the batch headers of a Fetch response's records or of a segment file
  (base offset, length, attributes, last offset delta, record count, CRC check);
- ``partition_segments``: the ``.log`` files of a partition directory.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_wire import (Reader, crc32c, encode_record, frame, header_v1, i8, i16, i32, i64, string, u32)

FETCH = 1

CODECS = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def raw_batch(records, last_offset_delta: int | None = None, count: int | None = None, attributes: int = 0,
              base_ts: int | None = None, max_ts: int | None = None, base_offset: int = 0) -> bytes:
    """A v2 batch (uncompressed records) with a valid CRC; ``last_offset_delta`` and ``count``
    default to what the records give, and can be set to disagree with them."""
    now = int(time.time() * 1000)
    if base_ts is None:
        base_ts = min((r.timestamp for r in records), default=now)
    if max_ts is None:
        max_ts = max((r.timestamp for r in records), default=now)
    recs = b"".join(encode_record(r, i, base_ts) for i, r in enumerate(records))
    lod = len(records) - 1 if last_offset_delta is None else last_offset_delta
    cnt = len(records) if count is None else count
    after_crc = (i16(attributes) + i32(lod) + i64(base_ts) + i64(max_ts) + i64(-1) + i16(-1) + i32(-1)
                 + i32(cnt) + recs)
    after_len = i32(0) + i8(2) + u32(crc32c(after_crc)) + after_crc
    return i64(base_offset) + i32(len(after_len)) + after_len


# ---------------------------------------------------------------- Fetch v11

def fetch_v11(corr: int, topics: dict[str, list[tuple[int, int, int]]], max_bytes: int,
              max_wait_ms: int = 0, min_bytes: int = 1) -> bytes:
    """``topics``: {topic: [(partition, fetch_offset, partition_max_bytes)]}."""
    body = i32(-1) + i32(max_wait_ms) + i32(min_bytes) + i32(max_bytes) + i8(0)  # replica, wait, min, max, isolation
    body += i32(0) + i32(-1)  # session id 0, session epoch -1: a full fetch, no session
    body += i32(len(topics))
    for name, parts in topics.items():
        body += string(name) + i32(len(parts))
        for p, off, pmax in parts:
            body += i32(p) + i32(-1) + i64(off) + i64(-1) + i32(pmax)  # partition, leader epoch, offset, log start, max
    body += i32(0)  # forgotten topics
    body += string("")  # rack id
    return frame(header_v1(FETCH, 11, corr) + body)


@dataclass
class FetchPartition:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: bytes


def parse_fetch_v11(payload: bytes) -> tuple[int, int, list[FetchPartition]]:
    """-> (correlation id, top-level error code, partitions)"""
    r = Reader(payload)
    corr = r.i32()
    r.i32()  # throttle
    err = r.i16()
    r.i32()  # session id
    out = []
    for _ in range(r.i32()):
        name = r.take(r.i16()).decode()
        for _ in range(r.i32()):
            p, perr, hw = r.i32(), r.i16(), r.i64()
            r.i64()  # last stable offset
            lstart = r.i64()
            n = r.i32()
            for _ in range(max(n, 0)):
                r.i64()
                r.i64()
            r.i32()  # preferred read replica
            size = r.i32()
            recs = b"" if size < 0 else r.take(size)
            out.append(FetchPartition(name, p, perr, hw, lstart, recs))
    return corr, err, out


# ---------------------------------------------------------------- batches

@dataclass
class BatchHeader:
    position: int  # byte position in the buffer
    base_offset: int
    size: int  # whole batch, including the 12-byte offset + length prefix
    attributes: int
    last_offset_delta: int
    count: int
    crc_ok: bool

    @property
    def codec(self) -> int:
        return self.attributes & 7

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def parse_batches(data: bytes, allow_partial_tail: bool = True) -> list[BatchHeader]:
    """The v2 batches in ``data`` (segment bytes or a Fetch response's records). A trailing
    partial batch (allowed in Fetch responses, as Kafka may cut one) is ignored when
    ``allow_partial_tail``; otherwise it is an error."""
    out = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 61:
            assert allow_partial_tail, f"{len(data) - pos} stray bytes at {pos}"
            break
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            assert allow_partial_tail, f"batch at {pos} runs past the end ({end} > {len(data)})"
            break
        magic = data[pos + 16]
        assert magic == 2, f"batch at {pos}: magic {magic}"
        (crc,) = struct.unpack_from(">I", data, pos + 17)
        attrs, lod = struct.unpack_from(">hi", data, pos + 21)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        out.append(BatchHeader(pos, base, end - pos, attrs, lod, count, crc32c(data[pos + 21:end]) == crc))
        pos = end
    return out


def partition_segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"))
