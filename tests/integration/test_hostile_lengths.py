"""Length fields that lie: arrays claiming billions of elements in a request of a few bytes. The
decoder must not reserve what the length claims (kafka-protocol 0.18 did: a 27-byte Metadata
request made the broker allocate 154 GB and abort; found by the request_frame fuzz target, fixed in
vendor/kafka-protocol). Each such request closes its connection; the broker and a real client on
other connections are unaffected."""

from __future__ import annotations

import struct

import pytest

import kafka_wire as w
from test_bad_input import api_versions_ok, canary, expect_closed  # noqa: F401 (fixture)

HUGE_I32 = struct.pack(">i", 0x7FFFFFFF)
HUGE_UVARINT = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])

CASES = {
    # Metadata v1: topics ARRAY(int32 length)
    "metadata-v1-topics": w.header_v1(w.METADATA, 1, 1) + HUGE_I32,
    # Metadata v12 (flexible): topics COMPACT_ARRAY(uvarint length)
    "metadata-v12-topics": w.header_v2(w.METADATA, 12, 2) + HUGE_UVARINT,
    # Produce v9 (flexible): transactional id (null), acks, timeout, then topic_data COMPACT_ARRAY
    "produce-v9-topics": w.header_v2(w.PRODUCE, 9, 3) + w.compact_string(None) + w.i16(-1) + w.i32(1000)
    + HUGE_UVARINT,
    # Produce v3: transactional id (null), acks, timeout, topic_data ARRAY
    "produce-v3-topics": w.header_v1(w.PRODUCE, 3, 4) + w.i16(-1) + w.i16(-1) + w.i32(1000) + HUGE_I32,
    # Produce v3, one topic, partition_data ARRAY claiming 2^31-1 partitions
    "produce-v3-partitions": w.header_v1(w.PRODUCE, 3, 5) + w.i16(-1) + w.i16(-1) + w.i32(1000) + w.i32(1)
    + w.string("t") + HUGE_I32,
    # ListOffsets v1: replica id, topics ARRAY
    "list-offsets-v1-topics": w.header_v1(w.LIST_OFFSETS, 1, 6) + w.i32(-1) + HUGE_I32,
}


@pytest.mark.parametrize("case", list(CASES))
def test_huge_array_length_closes_connection(broker, canary, case):  # noqa: F811
    payload = CASES[case]
    assert len(payload) < 64
    with w.connect(broker.host, broker.port) as s:
        w.send(s, w.frame(payload))
        expect_closed(s, case)
    broker.assert_alive()
    api_versions_ok(broker)
    canary.check(case)
