"""Admin requests sent to one chosen node over a raw socket (client libraries send CreateTopics,
DeleteTopics and CreatePartitions to the controller they see in Metadata; these go to the node a
test names, so that a broker that is not the controller has to pass them on).

CreateTopics v4, DeleteTopics v3, CreatePartitions v1: the newest non-flexible versions."""

from __future__ import annotations

import kafka_wire as kw

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


def _call(port: int, api: int, version: int, body: bytes, timeout: float) -> kw.Reader:
    s = kw.connect("127.0.0.1", port, timeout=timeout)
    try:
        payload = kw.request(s, kw.frame(kw.header_v1(api, version, 11) + body), timeout=timeout)
    finally:
        s.close()
    r = kw.Reader(payload)
    assert r.i32() == 11  # correlation id
    return r


def _string(r: kw.Reader) -> str | None:
    n = r.i16()
    return None if n < 0 else r.take(n).decode()


def create_topic(port: int, name: str, partitions: int = -1, replication_factor: int = -1,
                 assignment: list[list[int]] | None = None, configs: dict | None = None,
                 timeout_ms: int = 15000) -> tuple[int, str | None]:
    """CreateTopics v4 for one topic -> (error code, error message)."""
    assigns = assignment or []
    body = kw.i32(1) + kw.string(name) + kw.i32(partitions) + kw.i16(replication_factor)
    body += kw.i32(len(assigns)) + b"".join(
        kw.i32(i) + kw.i32(len(brokers)) + b"".join(kw.i32(b) for b in brokers) for i, brokers in enumerate(assigns))
    cfg = configs or {}
    body += kw.i32(len(cfg)) + b"".join(kw.string(k) + kw.string(str(v)) for k, v in cfg.items())
    body += kw.i32(timeout_ms) + kw.i8(0)  # validate_only = false
    r = _call(port, CREATE_TOPICS, 4, body, timeout_ms / 1000 + 10)
    r.i32()  # throttle
    assert r.i32() == 1
    got, err, msg = _string(r), r.i16(), _string(r)
    assert got == name, got
    return err, msg


def delete_topic(port: int, name: str, timeout_ms: int = 15000) -> int:
    """DeleteTopics v3 for one topic -> error code."""
    body = kw.i32(1) + kw.string(name) + kw.i32(timeout_ms)
    r = _call(port, DELETE_TOPICS, 3, body, timeout_ms / 1000 + 10)
    r.i32()  # throttle
    assert r.i32() == 1
    got, err = _string(r), r.i16()
    assert got == name, got
    return err


def create_partitions(port: int, name: str, count: int, timeout_ms: int = 15000) -> tuple[int, str | None]:
    """CreatePartitions v1 for one topic, placed by the controller -> (error code, message)."""
    body = kw.i32(1) + kw.string(name) + kw.i32(count) + kw.i32(-1)  # assignments: null
    body += kw.i32(timeout_ms) + kw.i8(0)
    r = _call(port, CREATE_PARTITIONS, 1, body, timeout_ms / 1000 + 10)
    r.i32()  # throttle
    assert r.i32() == 1
    got, err, msg = _string(r), r.i16(), _string(r)
    assert got == name, got
    return err, msg
