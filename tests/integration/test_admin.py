"""Admin APIs through confluent_kafka.admin.AdminClient."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions,
                                   NewTopic, ResourceType)

import helpers as h

T = 30  # seconds, every admin wait


def _err_code(fut) -> int:
    with pytest.raises(KafkaException) as ei:
        fut.result(timeout=T)
    return ei.value.args[0].code()


def _describe(a, topic) -> dict:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([res], request_timeout=T)[res].result(timeout=T)


def _wait_config(a, topic, name, pred, timeout=T):
    deadline = time.monotonic() + timeout
    while True:
        entry = _describe(a, topic)[name]
        if pred(entry) or time.monotonic() > deadline:
            return entry
        time.sleep(0.2)


def test_create_topic_with_configs_then_describe(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    cfg = {"retention.ms": "3600000", "segment.bytes": "1048576", "cleanup.policy": "delete",
           "max.message.bytes": "500000"}
    fs = a.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1, config=cfg)],
                         operation_timeout=T, request_timeout=T)
    assert fs[topic].result(timeout=T) is None
    assert h.wait_topic(broker.bootstrap, topic, 4) == 4
    conf = _describe(a, topic)
    for k, v in cfg.items():
        assert conf[k].value == v, f"{k}={conf[k].value}, want {v}"
        assert conf[k].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, f"{k} source {conf[k].source}"
        assert not conf[k].is_default
    # a setting we did not touch shows the broker default
    assert conf["retention.bytes"].value == "-1"
    assert conf["retention.bytes"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    md = a.list_topics(topic=topic, timeout=T).topics[topic]
    assert sorted(md.partitions) == [0, 1, 2, 3]
    for p in md.partitions.values():
        assert p.replicas and p.isrs and p.leader == p.replicas[0]


def test_describe_configs_defaults(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1)
    conf = _describe(a, topic)
    for name in ("retention.ms", "retention.bytes", "segment.bytes", "cleanup.policy", "max.message.bytes",
                 "message.timestamp.type", "min.insync.replicas"):
        assert name in conf, f"DescribeConfigs does not list {name}"
    assert conf["retention.ms"].value == "604800000"  # Kafka's default: 7 days
    assert conf["cleanup.policy"].value == "delete"
    assert conf["message.timestamp.type"].value == "CreateTime"
    assert int(conf["segment.bytes"].value) > 0
    assert int(conf["max.message.bytes"].value) >= 1_000_000


def test_create_topic_validate_only_creates_nothing(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    fs = a.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], validate_only=True,
                         operation_timeout=T, request_timeout=T)
    assert fs[topic].result(timeout=T) is None
    time.sleep(0.5)
    assert topic not in h.topic_names(broker.bootstrap)
    # validate_only still validates
    bad = topic_name("bad")
    fs = a.create_topics([NewTopic(bad, num_partitions=2, replication_factor=1,
                                   config={"retention.ms": "not-a-number"})], validate_only=True,
                         operation_timeout=T, request_timeout=T)
    assert _err_code(fs[bad]) == KafkaError.INVALID_CONFIG
    assert bad not in h.topic_names(broker.bootstrap)


def test_create_duplicate_and_invalid_topics(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=2)
    fs = a.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], operation_timeout=T,
                         request_timeout=T)
    assert _err_code(fs[topic]) == KafkaError.TOPIC_ALREADY_EXISTS
    # the existing topic is unchanged
    assert h.wait_topic(broker.bootstrap, topic) == 2
    bad_name = "bad/name"
    fs = a.create_topics([NewTopic(bad_name, num_partitions=1, replication_factor=1)], operation_timeout=T,
                         request_timeout=T)
    assert _err_code(fs[bad_name]) == KafkaError.TOPIC_EXCEPTION  # 17 INVALID_TOPIC_EXCEPTION
    bad_cfg = topic_name("cfg")
    fs = a.create_topics([NewTopic(bad_cfg, num_partitions=1, replication_factor=1,
                                   config={"no.such.config": "1"})], operation_timeout=T, request_timeout=T)
    assert _err_code(fs[bad_cfg]) == KafkaError.INVALID_CONFIG
    bad_rf = topic_name("rf")
    fs = a.create_topics([NewTopic(bad_rf, num_partitions=1, replication_factor=3)], operation_timeout=T,
                         request_timeout=T)
    assert _err_code(fs[bad_rf]) == KafkaError.INVALID_REPLICATION_FACTOR
    names = h.topic_names(broker.bootstrap)
    assert bad_name not in names and bad_cfg not in names and bad_rf not in names


def test_delete_topic(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=2)
    log = h.produce_all(h.producer(broker.bootstrap, acks="all"), topic, h.sample_records(20, big_every=1000))
    assert not log.errors
    fs = a.delete_topics([topic], operation_timeout=T, request_timeout=T)
    assert fs[topic].result(timeout=T) is None
    deadline = time.monotonic() + T
    while topic in h.topic_names(broker.bootstrap) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert topic not in h.topic_names(broker.bootstrap), "deleted topic still listed in metadata"
    fs = a.delete_topics([topic], operation_timeout=T, request_timeout=T)
    assert _err_code(fs[topic]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    # the name can be used again, and starts empty
    h.create_topic(broker.bootstrap, topic, partitions=1)
    c = h.consumer(broker.bootstrap)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=T, cached=False) == (0, 0)
    finally:
        c.close()


def test_create_partitions(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=3)
    fs = a.create_partitions([NewPartitions(topic, 5)], operation_timeout=T, request_timeout=T)
    assert fs[topic].result(timeout=T) is None
    assert h.wait_topic(broker.bootstrap, topic, 5) == 5
    now = int(time.time() * 1000)
    recs = [h.Rec(b"k", b"to-%d" % p, None, now, partition=p) for p in range(5)]
    log = h.produce_all(h.producer(broker.bootstrap, acks="all"), topic, recs)
    assert not log.errors and sorted(a_.partition for a_ in log.acked) == [0, 1, 2, 3, 4]
    got = h.consume_partitions(broker.bootstrap, topic, h.end_offsets_of(log.acked))
    h.check_acked(log.acked, got, topic)
    # shrinking is refused
    fs = a.create_partitions([NewPartitions(topic, 2)], operation_timeout=T, request_timeout=T)
    assert _err_code(fs[topic]) == KafkaError.INVALID_PARTITIONS
    fs = a.create_partitions([NewPartitions(topic_name("missing"), 2)], operation_timeout=T, request_timeout=T)
    assert _err_code(list(fs.values())[0]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert h.wait_topic(broker.bootstrap, topic) == 5


def test_incremental_alter_configs(broker, topic_name):
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"segment.bytes": "1048576"})
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "1234567", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("max.message.bytes", "300000", incremental_operation=AlterConfigOpType.SET),
    ])
    a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)
    e = _wait_config(a, topic, "retention.ms", lambda e: e.value == "1234567")
    assert e.value == "1234567" and e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    conf = _describe(a, topic)
    assert conf["max.message.bytes"].value == "300000"
    assert conf["segment.bytes"].value == "1048576", "incremental alter must keep other topic configs"
    # DELETE reverts to the default
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)
    e = _wait_config(a, topic, "retention.ms", lambda e: e.value == "604800000")
    assert e.value == "604800000" and e.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # the new max.message.bytes is enforced
    p = h.producer(broker.bootstrap, acks="all", message_max_bytes=5_000_000, enable_idempotence=False)
    log = h.produce_all(p, topic, [h.Rec(b"k", b"x" * 400_000, None, int(time.time() * 1000))])
    assert len(log.errors) == 1 and log.errors[0][1].code() == KafkaError.MSG_SIZE_TOO_LARGE, log.errors
    # invalid values are refused
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as ei:
        a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)
    assert ei.value.args[0].code() == KafkaError.INVALID_CONFIG
    # unknown topic
    res = ConfigResource(ResourceType.TOPIC, topic_name("missing"), incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as ei:
        a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_legacy_alter_configs_replaces_topic_configs(broker, topic_name):
    """AlterConfigs (non-incremental) sets the whole set of topic configs."""
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    h.create_topic(broker.bootstrap, topic, partitions=1, config={"segment.bytes": "1048576"})
    res = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "7654321"})
    a.alter_configs([res], request_timeout=T)[res].result(timeout=T)
    _wait_config(a, topic, "retention.ms", lambda e: e.value == "7654321")
    conf = _describe(a, topic)
    assert conf["retention.ms"].value == "7654321"
    assert conf["segment.bytes"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value, \
        "non-incremental AlterConfigs replaces the topic's config set"


def test_describe_cluster(broker):
    a = h.admin(broker.bootstrap)
    d = a.describe_cluster(request_timeout=T).result(timeout=T)
    assert d.cluster_id, "cluster id is empty"
    assert len(d.nodes) == 1
    node = d.nodes[0]
    assert (node.host, node.port) == (broker.host, broker.port)
    assert d.controller is not None and d.controller.id == node.id
    md = a.list_topics(timeout=T)
    assert list(md.brokers) == [node.id]
    assert (md.brokers[node.id].host, md.brokers[node.id].port) == (broker.host, broker.port)
    assert md.cluster_id == d.cluster_id


def test_acl_apis_without_an_authorizer_answer_security_disabled(broker, topic_name):
    """No authorizer is configured (the default, as in Kafka): CreateAcls, DescribeAcls and
    DeleteAcls are advertised and answered SECURITY_DISABLED (54), as Apache Kafka 4.3.1 answers
    them (checked with `kafka-acls --list/--add/--remove` against both), and nothing is stored:
    the topic the ACL named stays usable."""
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                       ResourcePatternType)
    a = h.admin(broker.bootstrap)
    topic = topic_name()
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    fs = a.create_acls([binding], request_timeout=T)
    assert _err_code(fs[binding]) == KafkaError.SECURITY_DISABLED
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    # librdkafka 2.x drops DescribeAcls's top-level error (an empty list, against Kafka too);
    # kafka-python raises it with the broker's message
    from kafka.admin import ACLFilter, ACLOperation as KpOp, ACLPermissionType as KpPerm, KafkaAdminClient
    from kafka.admin import ResourcePatternFilter, ResourceType as KpRes, ACLResourcePatternType as KpPat
    from kafka.errors import SecurityDisabledError
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    try:
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the broker"):
            kp.describe_acls(ACLFilter(principal=None, host="*", operation=KpOp.ANY, permission_type=KpPerm.ANY,
                                       resource_pattern=ResourcePatternFilter(KpRes.ANY, None, KpPat.ANY)))
    finally:
        kp.close()
    fs = a.delete_acls([flt], request_timeout=T)
    assert _err_code(fs[flt]) == KafkaError.SECURITY_DISABLED
    fs = a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], operation_timeout=T,
                         request_timeout=T)
    assert fs[topic].result(timeout=T) is None


def test_describe_broker_configs_under_kafkas_names(broker):
    """DescribeConfigs of the broker answers with Kafka's broker config names (compared with a
    Kafka 4.3.1 broker: every key Frieda lists that Kafka also knows is spelled as Kafka spells
    it), including the keys tools read: advertised.listeners and listeners as
    `PLAINTEXT://host:port`, node.id/broker.id, process.roles, and the topic defaults under their
    broker synonyms (message.max.bytes, log.retention.ms, log.cleanup.policy, compression.type,
    min.insync.replicas, log.cleaner.min.cleanable.ratio); no invented names such as
    log.max.message.bytes; broker.rack null when unset."""
    a = h.admin(broker.bootstrap)
    res = ConfigResource(ResourceType.BROKER, "1")
    conf = a.describe_configs([res], request_timeout=T)[res].result(timeout=T)
    want = {
        "advertised.listeners": f"PLAINTEXT://{broker.bootstrap}",
        "listeners": f"PLAINTEXT://{broker.bootstrap}",
        "node.id": "1", "broker.id": "1",
        "message.max.bytes": "1048588",
        "log.retention.ms": "604800000",
        "log.cleanup.policy": "delete",
        "compression.type": "producer",
        "min.insync.replicas": "1",
        "log.cleaner.min.cleanable.ratio": "0.5",
        "log.segment.bytes": "1073741824",
        "auto.create.topics.enable": "true",
    }
    for k, v in want.items():
        assert k in conf, f"{k} missing from the broker's configs: {sorted(conf)}"
        assert conf[k].value == v, f"{k}={conf[k].value!r}, want {v!r}"
    assert conf["broker.rack"].value is None
    for invented in ("log.max.message.bytes", "log.min.insync.replicas", "log.compression.type",
                     "log.flush.messages", "log.retention.bytes.x"):
        assert invented not in conf, invented


def _alter_broker(a, name: str, ops: list[tuple[str, str | None]]):
    """IncrementalAlterConfigs of broker resource ``name`` ("" = the cluster default): SET for a
    value, DELETE for None. Returns the future's result (raises KafkaException)."""
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in ops]
    res = ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)
    return a.incremental_alter_configs([res], request_timeout=T)[res].result(timeout=T)


def test_dynamic_broker_configs_apply_without_a_restart_and_persist(own_broker, topic_name):
    """kafka-configs --alter --entity-type brokers --entity-name 1 --add-config
    message.max.bytes=2000 (IncrementalAlterConfigs of broker resource "1"): a 5,000-byte record
    is refused MSG_SIZE_TOO_LARGE at once on an existing topic without its own max.message.bytes;
    DescribeConfigs of broker 1 shows the value with source DYNAMIC_BROKER_CONFIG, not read-only;
    it survives a restart; deleting it restores the static value (1048588) and the record goes
    in. A setting Kafka cannot change at run time (num.partitions) is refused INVALID_REQUEST
    (Kafka's code for a broker config it does not validate) and changes nothing. (The cluster-wide default, `--entity-default`, is the empty resource name,
    which confluent-kafka refuses to send: tests/cluster/test_kafka_tools_cluster.py drives it
    with Kafka's own kafka-configs.)"""
    b = own_broker
    a = h.admin(b.bootstrap)
    topic = topic_name()
    h.create_topic(b.bootstrap, topic, 1)
    big = [h.Rec(b"k", b"x" * 5000, None, 0, partition=0)]

    def produce_big() -> int | None:
        log = h.produce_all(h.producer(b.bootstrap, message_timeout_ms=5000), topic, big)
        return log.errors[0][1].code() if log.errors else None

    def broker_conf() -> dict:
        res = ConfigResource(ResourceType.BROKER, "1")
        return a.describe_configs([res], request_timeout=T)[res].result(timeout=T)

    assert produce_big() is None
    _alter_broker(a, "1", [("message.max.bytes", "2000")])
    assert produce_big() == KafkaError.MSG_SIZE_TOO_LARGE
    c = broker_conf()["message.max.bytes"]
    assert (c.value, c.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value), c
    assert not c.is_read_only
    assert broker_conf()["num.partitions"].is_read_only

    with pytest.raises(KafkaException) as ei:
        _alter_broker(a, "1", [("num.partitions", "7")])
    assert ei.value.args[0].code() == KafkaError.INVALID_REQUEST, ei.value
    assert broker_conf()["num.partitions"].value == "1"

    b.restart()
    a = h.admin(b.bootstrap)
    c = broker_conf()["message.max.bytes"]
    assert (c.value, c.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value), c
    assert produce_big() == KafkaError.MSG_SIZE_TOO_LARGE
    _alter_broker(a, "1", [("message.max.bytes", None)])
    c = broker_conf()["message.max.bytes"]
    assert c.value == "1048588" and c.source != ConfigSource.DYNAMIC_BROKER_CONFIG.value, c
    assert produce_big() is None
