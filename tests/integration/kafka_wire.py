"""A tiny hand-written Kafka wire encoder/decoder for raw-socket tests.

Only what the bad-input tests need: request headers v1/v2, ApiVersions v0/v3, Produce v9
(flexible), InitProducerId v4, Metadata v1, record batches v2 (CRC-32C) and a magic-1 message set.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib
from dataclasses import dataclass

try:
    from crc32c import crc32c as _crc32c
except ImportError:  # pure-Python fallback (Castagnoli, reflected 0x82F63B78)
    _T = []
    for _i in range(256):
        _c = _i
        for _ in range(8):
            _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
        _T.append(_c)

    def _crc32c(data: bytes, crc: int = 0) -> int:
        crc ^= 0xFFFFFFFF
        for b in data:
            crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF


def crc32c(data: bytes) -> int:
    return _crc32c(data)


assert crc32c(b"123456789") == 0xE3069283  # the standard check value

# API keys
PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 1, 2, 3, 18, 22

# error codes
NONE = 0
CORRUPT_MESSAGE = 2
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_RECORD = 87
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43


# ---------------------------------------------------------------- primitives

def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def u32(v): return struct.pack(">I", v)
def i64(v): return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v: int) -> bytes:  # zigzag, 64-bit
    return uvarint((v << 1) ^ (v >> 63))


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_bytes(b: bytes | None) -> bytes:
    if b is None:
        return uvarint(0)
    return uvarint(len(b) + 1) + b


def compact_array(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = uvarint(0)


class Reader:
    def __init__(self, data: bytes):
        self.d = data
        self.p = 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise ValueError(f"short response: want {n} bytes at {self.p}, have {len(self.d)}")
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i8(self): return struct.unpack(">b", self.take(1))[0]
    def i16(self): return struct.unpack(">h", self.take(2))[0]
    def i32(self): return struct.unpack(">i", self.take(4))[0]
    def i64(self): return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = v = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7

    def compact_string(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def rest(self):
        return self.d[self.p:]


# ---------------------------------------------------------------- records

@dataclass
class Record:
    key: bytes | None
    value: bytes | None
    headers: list  # [(str, bytes|None)]
    timestamp: int


def encode_record(r: Record, offset_delta: int, base_ts: int) -> bytes:
    body = i8(0) + varint(r.timestamp - base_ts) + varint(offset_delta)
    body += varint(-1) if r.key is None else varint(len(r.key)) + r.key
    body += varint(-1) if r.value is None else varint(len(r.value)) + r.value
    body += varint(len(r.headers))
    for hk, hv in r.headers:
        kb = hk.encode()
        body += varint(len(kb)) + kb
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + body


def record_batch(records: list[Record], base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, attributes: int = 0, corrupt_crc: bool = False,
                 magic: int = 2) -> bytes:
    """A v2 record batch (uncompressed)."""
    base_ts = min(r.timestamp for r in records)
    max_ts = max(r.timestamp for r in records)
    recs = b"".join(encode_record(r, i, base_ts) for i, r in enumerate(records))
    after_crc = (i16(attributes) + i32(len(records) - 1) + i64(base_ts) + i64(max_ts) + i64(producer_id)
                 + i16(producer_epoch) + i32(base_sequence) + i32(len(records)) + recs)
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0xDEADBEEF
    after_len = i32(0) + i8(magic) + u32(crc) + after_crc  # partition leader epoch, magic, crc, ...
    return i64(base_offset) + i32(len(after_len)) + after_len


def message_set_v1(key: bytes | None, value: bytes | None, timestamp: int, offset: int = 0) -> bytes:
    """A legacy magic-1 message (one entry of a MessageSet)."""
    body = i8(1) + i8(0) + i64(timestamp)
    body += i32(-1) if key is None else i32(len(key)) + key
    body += i32(-1) if value is None else i32(len(value)) + value
    crc = zlib.crc32(body) & 0xFFFFFFFF
    msg = u32(crc) + body
    return i64(offset) + i32(len(msg)) + msg


# ---------------------------------------------------------------- requests

def header_v1(api_key: int, version: int, corr: int, client_id: str | None = "frieda-it") -> bytes:
    return i16(api_key) + i16(version) + i32(corr) + string(client_id)


def header_v2(api_key: int, version: int, corr: int, client_id: str | None = "frieda-it") -> bytes:
    return header_v1(api_key, version, corr, client_id) + NO_TAGS


def frame(payload: bytes) -> bytes:
    return i32(len(payload)) + payload


def api_versions_v0(corr: int) -> bytes:
    return frame(header_v1(API_VERSIONS, 0, corr))


def api_versions_v3(corr: int, version: int = 3) -> bytes:
    return frame(header_v2(API_VERSIONS, version, corr) + compact_string("frieda-it") + compact_string("1.0")
                 + NO_TAGS)


def metadata_v1(corr: int, topics: list[str] | None, version: int = 1) -> bytes:
    body = i32(-1) if topics is None else i32(len(topics)) + b"".join(string(t) for t in topics)
    return frame(header_v1(METADATA, version, corr) + body)


def produce_v9(corr: int, topic: str, partition: int, records: bytes | None, acks: int = -1,
               timeout_ms: int = 10000, transactional_id: str | None = None) -> bytes:
    part = i32(partition) + compact_bytes(records) + NO_TAGS
    topic_data = compact_string(topic) + compact_array([part]) + NO_TAGS
    body = compact_string(transactional_id) + i16(acks) + i32(timeout_ms) + compact_array([topic_data]) + NO_TAGS
    return frame(header_v2(PRODUCE, 9, corr) + body)


def init_producer_id_v4(corr: int) -> bytes:
    body = compact_string(None) + i32(60000) + i64(-1) + i16(-1) + NO_TAGS
    return frame(header_v2(INIT_PRODUCER_ID, 4, corr) + body)


# ---------------------------------------------------------------- responses

def parse_api_versions_v0(payload: bytes) -> tuple[int, int, dict]:
    """-> (correlation id, error code, {api_key: (min, max)})"""
    r = Reader(payload)
    corr = r.i32()
    err = r.i16()
    apis = {}
    for _ in range(r.i32()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        apis[k] = (lo, hi)
    return corr, err, apis


def parse_api_versions_v3(payload: bytes) -> tuple[int, int, dict]:
    r = Reader(payload)
    corr = r.i32()  # ApiVersions responses always use header v0
    err = r.i16()
    apis = {}
    for _ in range(r.uvarint() - 1):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.tags()
        apis[k] = (lo, hi)
    return corr, err, apis


def parse_api_versions_finalized(payload: bytes) -> tuple[int, dict[str, int]]:
    """An ApiVersions v3+ response's finalized features: (epoch, {feature: max level})."""
    r = Reader(payload)
    r.i32(), r.i16()  # correlation id, error code
    for _ in range(r.uvarint() - 1):
        r.i16(), r.i16(), r.i16()
        r.tags()
    r.i32()  # throttle
    epoch, levels = -1, {}
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        field = Reader(r.take(size))
        if tag == 1:
            epoch = field.i64()
        elif tag == 2:
            for _ in range(field.uvarint() - 1):
                name, hi, _lo = field.compact_string(), field.i16(), field.i16()
                field.tags()
                levels[name] = hi
    return epoch, levels


@dataclass
class PartitionProduceResponse:
    topic: str
    partition: int
    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int
    record_errors: list
    error_message: str | None


def parse_produce_v9(payload: bytes) -> tuple[int, list[PartitionProduceResponse]]:
    r = Reader(payload)
    corr = r.i32()
    r.tags()  # response header v1
    out = []
    for _ in range(r.uvarint() - 1):
        name = r.compact_string()
        for _ in range(r.uvarint() - 1):
            idx, err, base, lat, lso = r.i32(), r.i16(), r.i64(), r.i64(), r.i64()
            rec_errs = []
            for _ in range(r.uvarint() - 1):
                rec_errs.append((r.i32(), r.compact_string()))
                r.tags()
            msg = r.compact_string()
            r.tags()
            out.append(PartitionProduceResponse(name, idx, err, base, lat, lso, rec_errs, msg))
        r.tags()
    r.i32()  # throttle
    r.tags()
    return corr, out


def parse_init_producer_id_v4(payload: bytes) -> tuple[int, int, int, int]:
    """-> (corr, error, producer_id, epoch)"""
    r = Reader(payload)
    corr = r.i32()
    r.tags()
    r.i32()  # throttle
    err = r.i16()
    pid = r.i64()
    epoch = r.i16()
    return corr, err, pid, epoch


# ---------------------------------------------------------------- socket helpers

class Closed(Exception):
    """The broker closed the connection (EOF or reset)."""


def connect(host: str, port: int, timeout: float = 10) -> socket.socket:
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s: socket.socket, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no complete response within the deadline ({len(buf)}/{n} bytes)")
        s.settimeout(left)
        try:
            chunk = s.recv(n - len(buf))
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(str(e)) from None
        except socket.timeout:
            raise TimeoutError(f"no complete response within the deadline ({len(buf)}/{n} bytes)") from None
        if not chunk:
            raise Closed(f"EOF after {len(buf)} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(s: socket.socket, timeout: float = 10) -> bytes:
    deadline = time.monotonic() + timeout
    (n,) = struct.unpack(">i", recv_exact(s, 4, deadline))
    assert 0 <= n < 64 * 1024 * 1024, f"response frame length {n}"
    return recv_exact(s, n, deadline)


def send(s: socket.socket, data: bytes) -> None:
    try:
        s.sendall(data)
    except (ConnectionResetError, BrokenPipeError) as e:
        raise Closed(str(e)) from None


def request(s: socket.socket, data: bytes, timeout: float = 10) -> bytes:
    send(s, data)
    return recv_frame(s, timeout)


def outcome(s: socket.socket, timeout: float = 10) -> tuple[str, bytes | None]:
    """Wait for the broker's reaction: ("closed", None) or ("response", payload) or ("timeout", None)."""
    try:
        return "response", recv_frame(s, timeout)
    except Closed:
        return "closed", None
    except TimeoutError:
        return "timeout", None
