"""ACLs with Kafka's StandardAuthorizer semantics, through real clients (confluent-kafka) and
Kafka's own `kafka-acls` tool.

Each case of the matrix creates some ACLs as the super user, then lets `alice` (SASL PLAIN) try
one thing and checks the outcome: allowed, or the error Kafka gives (TOPIC_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED). With ``FRIEDA_SECURITY_VS_KAFKA=1`` the same matrix runs
against Apache Kafka (4.4.0 in scripts/test, `KAFKA_LIB`) with the same settings (security_env.SecureKafka), which is how the
expectations below were checked.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

import pytest
from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, ConfigResource, NewTopic, ResourcePatternType,
                                   ResourceType)

from security_env import Pki, brokers_under_test, make_secure

OK = "ok"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=brokers_under_test())
def secured(request, tmp_path_factory, pki):
    b = make_secure(request.param, tmp_path_factory.mktemp(request.param), pki, authorizer=True)
    yield b
    b.stop()


def code_name(e) -> str:
    if isinstance(e, KafkaException):
        e = e.args[0]
    if isinstance(e, KafkaError):
        return e.name()
    return repr(e)


# ---------------------------------------------------------------------------- actions (as alice)
def produce(b, names, idempotent: bool = False) -> str:
    """One record as alice: its delivery report's error, or ok. The producer is drained and
    purged before it goes, so no callback of it runs later."""
    p = Producer({**b.client("alice"), "acks": "all", "enable.idempotence": idempotent,
                  "message.timeout.ms": 5000})
    out = []
    p.produce(names["t"], b"v", on_delivery=lambda e, m: out.append(e and e.name()))
    p.flush(15)
    p.purge()
    p.flush(1)
    return OK if out[:1] == [None] else out[0] if out else "timeout"


def produce_idempotent(b, names) -> str:
    return produce(b, names, idempotent=True)


def transactional(b, names) -> str:
    p = Producer({**b.client("alice"), "transactional.id": names["txn"],
                  "transaction.timeout.ms": 10000})
    try:
        p.init_transactions(15)
        p.begin_transaction()
        p.produce(names["t"], b"v")
        p.commit_transaction(15)
        return OK
    except KafkaException as e:
        return code_name(e)


def kafka_python(b, **extra) -> dict:
    """kafka-python settings for alice (it raises the broker's errors where librdkafka retries
    or waits: a fetch of an unreadable topic, a commit to a group it may not describe)."""
    return dict(bootstrap_servers=b.bootstrap(), security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN", sasl_plain_username="alice",
                sasl_plain_password="alice-secret", request_timeout_ms=10000, **extra)


def kp_error(e: Exception) -> str:
    """kafka-python's exception as Kafka's error name."""
    import kafka.errors as ke
    if isinstance(e, ke.BrokerResponseError):
        return type(e).__name__.removesuffix("Error").upper().replace("AUTHORIZATIONFAILED",
                                                                        "_AUTHORIZATION_FAILED")
    return repr(e)


def fetch(b, names, subscribe: bool = False, from_committed: bool = False) -> str:
    """The first thing alice's consumer gets: a record or the end of the partition (ok), or an
    error. `subscribe`: through the group (a topic it may not describe is reported so).
    `from_committed`: assigned without an offset, so the consumer asks the group coordinator for
    its committed offset before it fetches (with offset 0 given, the group is consulted only in
    the background, and whether its error or the end of the partition comes first is a race)."""
    c = Consumer({**b.client("alice"), "group.id": names["g"], "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        if subscribe:
            c.subscribe([names["t"]])
        else:
            c.assign([TopicPartition(names["t"], 0) if from_committed else TopicPartition(names["t"], 0, 0)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is None or m.error().code() == KafkaError._PARTITION_EOF:
                return OK
            return code_name(m.error())
        return "timeout"
    finally:
        c.close()


def fetch_subscribed(b, names) -> str:
    return fetch(b, names, subscribe=True)


def fetch_from_committed(b, names) -> str:
    return fetch(b, names, from_committed=True)


def commit(b, names) -> str:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KTP
    c = KafkaConsumer(**kafka_python(b, group_id=names["g"], enable_auto_commit=False))
    try:
        c.commit({KTP(names["t"], 0): OffsetAndMetadata(0, "", -1)})
        return OK
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return kp_error(e)
    finally:
        c.close()


def visible_topics(b, names) -> str:
    md = AdminClient(b.client("alice")).list_topics(timeout=10)
    mine = sorted(n for n in md.topics if n.startswith(names["prefix"]))
    return ",".join(x.removeprefix(names["prefix"]) for x in mine) or "none"


def admin_call(call: Callable, key=None) -> str:
    """Runs an Admin call as alice; the client lives until its future is done."""
    admin = AdminClient({**ALICE_CONF, "bootstrap.servers": ALICE_CONF["bootstrap.servers"]})
    try:
        fut = call(admin)
        (fut[key] if key is not None else fut).result(15)
        return OK
    except KafkaException as e:
        return code_name(e)


ALICE_CONF: dict = {}


def as_alice(b) -> None:
    ALICE_CONF.clear()
    ALICE_CONF.update(b.client("alice"))


def create_topic(b, names) -> str:
    as_alice(b)
    t = names["new"]
    return admin_call(lambda a: a.create_topics([NewTopic(t, 1, 1)]), t)


def delete_topic(b, names) -> str:
    as_alice(b)
    t = names["t"]
    return admin_call(lambda a: a.delete_topics([t]), t)


def describe_configs(b, names) -> str:
    as_alice(b)
    r = ConfigResource(ResourceType.TOPIC, names["t"])
    return admin_call(lambda a: a.describe_configs([r]), r)


def describe_acls(b, names) -> str:
    """kafka-python's admin (librdkafka's describe_acls drops the top-level error)."""
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             KafkaAdminClient, ResourcePatternFilter)
    from kafka.admin import ResourceType as KRT
    a = KafkaAdminClient(**kafka_python(b))
    try:
        a.describe_acls(ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                                  permission_type=ACLPermissionType.ANY,
                                  resource_pattern=ResourcePatternFilter(KRT.ANY, None,
                                                                         ACLResourcePatternType.ANY)))
        return OK
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return kp_error(e)
    finally:
        a.close()


def list_groups(b, names) -> str:
    a = AdminClient(b.client("alice"))
    r = a.list_consumer_groups().result(15)
    mine = sorted(g.group_id for g in r.valid if g.group_id.startswith(names["prefix"]))
    return ",".join(x.removeprefix(names["prefix"]) for x in mine) or "none"


# ---------------------------------------------------------------------------- the matrix
A, D = AclPermissionType.ALLOW, AclPermissionType.DENY
T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER, ResourceType.TRANSACTIONAL_ID
LIT, PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
O = AclOperation


@dataclass
class Case:
    id: str
    acls: list  # (resource type, name template, pattern, principal, operation, permission[, host])
    act: Callable
    expect: str
    topics: list = field(default_factory=lambda: ["t"])
    groups: list = field(default_factory=list)


def alice(rt, name, op, perm=A, pattern=LIT, host="*", principal="User:alice"):
    return (rt, name, pattern, principal, op, perm, host)


CASES = [
    Case("no-acl-produce", [], produce, "TOPIC_AUTHORIZATION_FAILED"),
    Case("write-produce", [alice(T, "{t}", O.WRITE)], produce, OK),
    Case("read-does-not-write", [alice(T, "{t}", O.READ)], produce, "TOPIC_AUTHORIZATION_FAILED"),
    Case("all-produce", [alice(T, "{t}", O.ALL)], produce, OK),
    Case("deny-wins", [alice(T, "{t}", O.WRITE), alice(T, "{t}", O.WRITE, D)], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("deny-all-wins", [alice(T, "{t}", O.WRITE), alice(T, "{t}", O.ALL, D)], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("prefixed-allow", [alice(T, "{prefix}", O.WRITE, pattern=PRE)], produce, OK),
    Case("prefixed-deny-over-literal-allow",
         [alice(T, "{t}", O.WRITE), alice(T, "{prefix}", O.WRITE, D, pattern=PRE)], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("wildcard-principal", [alice(T, "{t}", O.WRITE, principal="User:*")], produce, OK),
    Case("other-principal", [alice(T, "{t}", O.WRITE, principal="User:bob")], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("other-host", [alice(T, "{t}", O.WRITE, host="10.9.9.9")], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("this-host", [alice(T, "{t}", O.WRITE, host="127.0.0.1")], produce, OK),
    # CIDR hosts (Kafka 4.4, metadata.version 4.4-IV1): the client's address in the range.
    Case("cidr-this-net", [alice(T, "{t}", O.WRITE, host="127.0.0.0/8")], produce, OK),
    Case("cidr-host-bits-set", [alice(T, "{t}", O.WRITE, host="127.1.2.3/8")], produce, OK),
    Case("cidr-other-net", [alice(T, "{t}", O.WRITE, host="10.0.0.0/8")], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("cidr-deny-wins", [alice(T, "{t}", O.WRITE), alice(T, "{t}", O.WRITE, D, host="127.0.0.1/32")],
         produce, "TOPIC_AUTHORIZATION_FAILED"),
    Case("cidr-ipv6-range", [alice(T, "{t}", O.WRITE, host="::1/128")], produce,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("idempotent-with-topic-write", [alice(T, "{t}", O.WRITE)], produce_idempotent, OK),
    Case("txn-without-txn-acl", [alice(T, "{t}", O.WRITE)], transactional,
         "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    Case("txn-with-acls", [alice(T, "{t}", O.WRITE), alice(X, "{txn}", O.WRITE)], transactional, OK),
    # (the consumer's group is readable, so only the topic decides)
    Case("fetch-no-topic-acl", [alice(G, "{g}", O.READ)], fetch_subscribed,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("fetch-subscribed", [alice(T, "{t}", O.READ), alice(G, "{g}", O.READ)], fetch_subscribed, OK),
    Case("fetch-read", [alice(T, "{t}", O.READ), alice(G, "{g}", O.READ)], fetch, OK),
    Case("fetch-describe-only", [alice(T, "{t}", O.DESCRIBE), alice(G, "{g}", O.READ)], fetch,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("fetch-group-denied", [alice(T, "{t}", O.READ)], fetch_from_committed, "GROUP_AUTHORIZATION_FAILED"),
    Case("fetch-from-committed", [alice(T, "{t}", O.READ), alice(G, "{g}", O.READ)], fetch_from_committed, OK),
    Case("commit-without-group", [alice(T, "{t}", O.READ)], commit, "GROUP_AUTHORIZATION_FAILED"),
    Case("commit-with-group", [alice(T, "{t}", O.READ), alice(G, "{g}", O.READ)], commit, OK,
         groups=["g"]),
    Case("commit-group-but-not-topic", [alice(G, "{g}", O.READ)], commit,
         "TOPIC_AUTHORIZATION_FAILED", groups=["g"]),
    Case("metadata-hides-topics", [alice(T, "{t}", O.DESCRIBE), alice(T, "{u}", O.WRITE)],
         visible_topics, "t,u", topics=["t", "u", "v"]),
    Case("metadata-none", [], visible_topics, "none", topics=["t", "u"]),
    Case("create-denied", [], create_topic, "TOPIC_AUTHORIZATION_FAILED", topics=[]),
    Case("create-on-topic", [alice(T, "{new}", O.CREATE)], create_topic, OK, topics=[]),
    Case("create-on-cluster", [alice(C, "kafka-cluster", O.CREATE)], create_topic, OK, topics=[]),
    Case("delete-denied", [alice(T, "{t}", O.DESCRIBE)], delete_topic, "TOPIC_AUTHORIZATION_FAILED"),
    Case("delete-allowed", [alice(T, "{t}", O.DELETE)], delete_topic, OK),
    Case("describe-configs-denied", [alice(T, "{t}", O.WRITE)], describe_configs,
         "TOPIC_AUTHORIZATION_FAILED"),
    Case("alter-configs-implies-describe", [alice(T, "{t}", O.ALTER_CONFIGS)], describe_configs, OK),
    Case("describe-acls-denied", [alice(T, "{t}", O.ALL)], describe_acls, "CLUSTER_AUTHORIZATION_FAILED"),
    Case("describe-acls-allowed", [alice(C, "kafka-cluster", O.DESCRIBE)], describe_acls, OK),
    Case("groups-listed-by-describe", [alice(G, "{g}", O.DESCRIBE)], list_groups, "g",
         groups=["g", "h"]),
]


def _bindings(case: Case, names: dict) -> list[AclBinding]:
    return [AclBinding(rt, name.format(**names), pat, principal, host, op, perm)
            for rt, name, pat, principal, op, perm, host in case.acls]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_acl_matrix(secured, case: Case):
    prefix = f"{case.id}-{uuid.uuid4().hex[:6]}-"
    names = {"prefix": prefix, "t": prefix + "t", "u": prefix + "u", "v": prefix + "v",
             "new": prefix + "new", "g": prefix + "g", "h": prefix + "h", "txn": prefix + "txn"}
    admin = AdminClient(secured.client("admin"))
    for t in case.topics:
        admin.create_topics([NewTopic(names[t], 1, 1)])[names[t]].result(15)
    for g in case.groups:
        c = Consumer({**secured.client("admin"), "group.id": names[g], "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(names[case.topics[0]], 0, 0)], asynchronous=False)
        c.close()
    bindings = _bindings(case, names)
    if bindings:
        for b, f in admin.create_acls(bindings).items():
            f.result(15)
    try:
        # Kafka applies ACLs from its metadata log a moment after CreateAcls answers.
        deadline = time.monotonic() + (8 if secured.kind == "kafka" else 0)
        while True:
            got = case.act(secured, names)
            if got == case.expect or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert got == case.expect, f"{secured.kind}: {case.id}: got {got}, want {case.expect}"
    finally:
        if bindings:
            filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                        b.host, b.operation, b.permission_type) for b in bindings]
            for f in admin.delete_acls(filters).values():
                f.result(15)


def test_acls_create_describe_delete_and_validation(secured):
    admin = AdminClient(secured.client("admin"))
    mine = [AclBinding(T, "acl-api-topic", LIT, "User:carol", "*", O.READ, A),
            AclBinding(T, "acl-api-", PRE, "User:carol", "*", O.WRITE, D),
            AclBinding(G, "acl-api-group", LIT, "User:carol", "10.0.0.1", O.ALL, A)]
    for _, f in admin.create_acls(mine).items():
        f.result(15)
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:carol", None,
                           AclOperation.ANY, AclPermissionType.ANY)
    deadline = time.monotonic() + 10
    while True:
        found = admin.describe_acls(flt).result(15)
        if len(found) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert sorted(map(str, found)) == sorted(map(str, mine))
    # MATCH: the ACLs that apply to topic acl-api-topic (the literal one and the prefix).
    match = AclBindingFilter(T, "acl-api-topic", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert len(admin.describe_acls(match).result(15)) == 2
    # Invalid bindings: a cluster resource not named kafka-cluster.
    bad = AclBinding(C, "my-cluster", LIT, "User:carol", "*", O.ALTER, A)
    with pytest.raises(KafkaException) as e:
        admin.create_acls([bad])[bad].result(15)
    assert e.value.args[0].code() == KafkaError.INVALID_REQUEST
    # A host that is not a CIDR range (Kafka 4.4's AclControlManager.validateHostPattern).
    for host in ("10.0.0.0/33", "10.0.0/8", "not-an-ip/8"):
        bad = AclBinding(T, "acl-api-topic", LIT, "User:carol", host, O.READ, A)
        with pytest.raises(KafkaException) as e:
            admin.create_acls([bad])[bad].result(15)
        assert e.value.args[0].code() == KafkaError.INVALID_REQUEST, host
        assert f"Invalid CIDR notation '{host}'" in e.value.args[0].str(), e.value.args[0].str()
    deleted = admin.delete_acls([flt])[flt].result(15)
    assert sorted(map(str, deleted)) == sorted(map(str, mine))
    assert admin.describe_acls(flt).result(15) == []


def test_acls_survive_a_restart(tmp_path, pki):
    b = make_secure("frieda", tmp_path, pki, authorizer=True)

    def setup():
        # (the admin client is gone before the broker stops: a client left connected to a
        # broker that goes away reports errors from its own threads)
        admin = AdminClient(b.client("admin"))
        admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(15)
        acl = AclBinding(T, "kept", LIT, "User:alice", "*", O.WRITE, A)
        admin.create_acls([acl])[acl].result(15)

    try:
        setup()
        b.stop()
        b.start()
        assert produce(b, {"t": "kept"}) == OK
        assert produce(b, {"t": "other"}) == "TOPIC_AUTHORIZATION_FAILED"
    finally:
        b.stop()


def test_kafka_acls_tool_adds_and_removes(secured, tmp_path):
    """Kafka 4.4.0's own `kafka-acls` (org.apache.kafka.tools.AclCommand) against the broker."""
    cp = os.environ.get("FRIEDA_JAVA_CLASSPATH")
    if not cp:
        pytest.skip("FRIEDA_JAVA_CLASSPATH not set (scripts/test sets it: Kafka's tools from Maven Central)")
    classpath = open(cp).read().strip()
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                     'username="admin" password="admin-secret";\n')
    topic = f"tool-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(secured.client("admin"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)

    def acls(*args) -> str:
        r = subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.AclCommand",
                            "--bootstrap-server", secured.bootstrap(), "--command-config", str(props),
                            *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
    listed = acls("--list", "--topic", topic)
    assert "User:alice" in listed and "WRITE" in listed, listed
    deadline = time.monotonic() + 10
    while produce(secured, {"t": topic}) != OK:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
    deadline = time.monotonic() + 10
    while produce(secured, {"t": topic}) != "TOPIC_AUTHORIZATION_FAILED":
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_tls_client_certificate_subject_is_the_principal(secured, pki):
    """On the SSL listener the principal is the certificate's subject as Kafka prints it
    (RFC 2253, most specific first): an ACL for that principal lets the client write."""
    topic = f"mtls-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(secured.client("admin"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    principal = "User:CN=dora,OU=eng,O=Frieda Tests"
    acl = AclBinding(T, topic, LIT, principal, "*", O.WRITE, A)
    admin.create_acls([acl])[acl].result(15)

    def write(name: str) -> str:
        cert, key = pki.client_cert(name)
        p = Producer({**secured.client(protocol="SSL"), "ssl.certificate.location": str(cert),
                      "ssl.key.location": str(key), "acks": "all", "message.timeout.ms": 5000})
        out = []
        p.produce(topic, b"v", on_delivery=lambda e, m: out.append(e and e.name()))
        p.flush(15)
        p.purge()
        p.flush(1)
        return OK if out[:1] == [None] else out[0] if out else "timeout"

    deadline = time.monotonic() + (10 if secured.kind == "kafka" else 0)
    while write("dora") != OK:
        assert time.monotonic() < deadline, f"{secured.kind}: {principal} could not write"
        time.sleep(0.5)
    assert write("erik") == "TOPIC_AUTHORIZATION_FAILED"


def test_the_audit_log_speaks_kafkas_words(tmp_path, pki):
    """Issue 29: a denied operation is an INFO line in Kafka's StandardAuthorizer words (what
    operators alert on), an allowed one is not at INFO, an all-topics listing logs no denial,
    and ACL changes are logged as Kafka's StandardAcl."""
    b = make_secure("frieda", tmp_path, pki, authorizer=True)
    try:
        admin = AdminClient(b.client("admin"))
        for f in admin.create_topics([NewTopic("orders", 1, 1), NewTopic("open", 1, 1)]).values():
            f.result(15)
        acl = AclBinding(T, "open", LIT, "User:alice", "*", O.WRITE, A)
        see = AclBinding(T, "orders", LIT, "User:alice", "*", O.DESCRIBE, A)  # Metadata answers
        for f in admin.create_acls([acl, see]).values():
            f.result(15)
        assert produce(b, {"t": "orders"}) == "TOPIC_AUTHORIZATION_FAILED"
        assert produce(b, {"t": "open"}) == OK
        AdminClient(b.client("alice")).list_topics(timeout=10)  # all topics: a filter
        deadline = time.monotonic() + 5
        want = ("INFO kafka.authorizer.logger: Principal = User:alice is Denied operation = WRITE "
                "from host = 127.0.0.1 on resource = Topic:LITERAL:orders for request = Produce "
                "with resourceRefCount = 1 based on rule DefaultDeny")
        while want not in b.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = b.log_path.read_text()
        assert want in text, text[-4000:]
        assert "Added ACL StandardAcl(resourceType=TOPIC, resourceName=open, patternType=LITERAL, " \
               "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) (by User:admin)" in text, text[-4000:]
        info = [line for line in text.splitlines() if "INFO kafka.authorizer.logger" in line]
        assert not [line for line in info if "is Allowed" in line], info[:5]
        assert not [line for line in info if "request = Metadata" in line and "is Denied" in line], info[:5]
        flt = AclBindingFilter(T, "open", LIT, "User:alice", "*", O.WRITE, A)
        assert len(admin.delete_acls([flt])[flt].result(15)) == 1
        deadline = time.monotonic() + 5
        while "Removed ACL StandardAcl(resourceType=TOPIC, resourceName=open" not in b.log_path.read_text() \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "Removed ACL StandardAcl(resourceType=TOPIC, resourceName=open" in b.log_path.read_text()
    finally:
        b.stop()
