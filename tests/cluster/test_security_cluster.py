"""Security in a 3-node cluster: ACLs and SCRAM credentials go through the metadata quorum, so
a change made through one broker is enforced by every broker, also after a restart; Metadata on
the SASL listener names every broker's SASL endpoint (a client bootstrapped there never meets a
PLAINTEXT port). PLAINTEXT stays the inter-broker listener, whose principal (User:ANONYMOUS) is
a super user, as Kafka deployments give their broker principal."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from conftest import Cluster

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')


@pytest.fixture
def secure_cluster(tmp_path):
    c = Cluster(tmp_path, 3, sasl=True, **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.secure.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
    })
    passed = False
    try:
        c.start_all()
        yield c
        passed = True
    finally:
        c.teardown(passed)


def conf(c: Cluster, node: int, user: str, password: str, mech: str = "PLAIN") -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{c.node(node).sasl_port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mech, "sasl.username": user, "sasl.password": password}


def produce(cfg: dict, topic: str) -> str:
    p = Producer({**cfg, "acks": "all", "message.timeout.ms": 8000})
    out = []
    p.produce(topic, b"v", on_delivery=lambda e, m: out.append(e and e.name()))
    p.flush(20)
    p.purge()
    p.flush(1)
    return "ok" if out[:1] == [None] else (out[0] if out else "timeout")


def eventually(what, fn, want, timeout=20):
    deadline = time.monotonic() + timeout
    while (got := fn()) != want:
        assert time.monotonic() < deadline, f"{what}: {got}, want {want}"
        time.sleep(0.5)


def test_acls_and_scram_credentials_reach_every_broker(secure_cluster):
    c = secure_cluster
    admin = AdminClient(conf(c, 1, "admin", "admin-secret"))
    admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(30)
    c.wait_topic("orders", 3)
    acl = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([acl])[acl].result(30)
    cred = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                        b"carol-secret")
    admin.alter_user_scram_credentials([cred])["carol"].result(30)
    # Every broker enforces the ACL: alice writes all three partitions (their leaders are
    # spread over the nodes) bootstrapped from any node; bob is refused.
    for node in (1, 2, 3):
        p = Producer({**conf(c, node, "alice", "alice-secret"), "acks": "all", "message.timeout.ms": 8000})
        errs = []
        for part in range(3):
            p.produce("orders", b"x", partition=part, on_delivery=lambda e, m: errs.append(e))
        p.flush(20)
        assert errs == [None, None, None], (node, errs)
        assert produce(conf(c, node, "bob", "bob-secret"), "orders") == "TOPIC_AUTHORIZATION_FAILED"
        # the SCRAM credential made through node 1 logs in at every node
        eventually(f"carol at node {node}",
                   lambda: produce(conf(c, node, "carol", "carol-secret", "SCRAM-SHA-256"), "orders"),
                   "TOPIC_AUTHORIZATION_FAILED")
    # A restarted broker enforces the same set, from the metadata log.
    c.stop(2)
    c.start(2)
    eventually("alice via restarted node 2", lambda: produce(conf(c, 2, "alice", "alice-secret"), "orders"), "ok")
    assert produce(conf(c, 2, "bob", "bob-secret"), "orders") == "TOPIC_AUTHORIZATION_FAILED"
    # Removing the ACL through node 3 closes node 1 too.
    from confluent_kafka.admin import AclBindingFilter
    flt = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", None,
                           AclOperation.ANY, AclPermissionType.ANY)
    admin3 = AdminClient(conf(c, 3, "admin", "admin-secret"))
    deleted = admin3.delete_acls([flt])[flt].result(30)
    assert len(deleted) == 1
    eventually("alice via node 1 after the delete",
               lambda: produce(conf(c, 1, "alice", "alice-secret"), "orders"), "TOPIC_AUTHORIZATION_FAILED")


def test_metadata_names_the_sasl_endpoints(secure_cluster):
    c = secure_cluster
    admin = AdminClient(conf(c, 1, "admin", "admin-secret"))
    md = admin.list_topics(timeout=15)
    ports = {b.id: b.port for b in md.brokers.values()}
    assert ports == {i: c.node(i).sasl_port for i in (1, 2, 3)}


def test_brokers_replicate_over_sasl_ssl_as_an_authorized_principal(tmp_path):
    """The cluster's own traffic secured: SECURE (SASL_SSL, PLAIN) is the inter-broker listener,
    so follower fetches, and the coordinators' requests, run over TLS as User:broker, the only
    super user; ANONYMOUS (the PLAINTEXT listener) may do nothing. acks=all records to an RF 3
    topic are acknowledged only once both followers fetched them over that listener; a leader
    SIGKILL moves leadership to a follower that has them all."""
    import trustme
    ca = trustme.CA()
    ca_pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pem = tmp_path / "broker.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
                    + b"".join(b.bytes() for b in leaf.cert_chain_pems))
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
            'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')
    c = Cluster(tmp_path / "cluster", 3, sasl=True, **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL",
        "inter.broker.listener.name": "SECURE",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.secure.plain.sasl.jaas.config": jaas,
        "ssl.keystore.location": str(pem),
        "ssl.truststore.location": str(ca_pem),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker",
    })
    passed = False
    try:
        c.start_all()

        def sconf(node: int, user: str, password: str) -> dict:
            return {"bootstrap.servers": f"127.0.0.1:{c.node(node).sasl_port}", "security.protocol": "SASL_SSL",
                    "ssl.ca.location": str(ca_pem), "sasl.mechanisms": "PLAIN", "sasl.username": user,
                    "sasl.password": password}

        admin = AdminClient(sconf(1, "broker", "broker-secret"))
        admin.create_topics([NewTopic("replicated", 1, 3)])["replicated"].result(30)
        acl = AclBinding(ResourceType.TOPIC, "replicated", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
        admin.create_acls([acl])[acl].result(30)
        p = Producer({**sconf(1, "alice", "alice-secret"), "acks": "all", "enable.idempotence": True,
                      "message.timeout.ms": 60000})
        acked = []
        for i in range(200):
            p.produce("replicated", f"v{i}".encode(), on_delivery=lambda e, m: acked.append(e))
        assert p.flush(60) == 0 and acked == [None] * 200, acked[:3]
        md = admin.list_topics("replicated", timeout=15).topics["replicated"].partitions[0]
        assert sorted(md.isrs) == [1, 2, 3], md.isrs  # both followers fetched over SASL_SSL
        leader = md.leader
        for i in (1, 2, 3):
            assert "SASL authentication failed" not in c.node(i).text(), c.node(i).tail()
        # ANONYMOUS on the PLAINTEXT listener may not even see the topic.
        plain = AdminClient({"bootstrap.servers": c.node(1).addr})
        assert "replicated" not in plain.list_topics(timeout=15).topics
        c.kill(leader)
        other = next(i for i in (1, 2, 3) if i != leader)
        consumer_conf = {**sconf(other, "alice", "alice-secret"), "group.id": "g", "enable.auto.commit": False}
        from confluent_kafka import Consumer, TopicPartition
        cons = Consumer(consumer_conf)
        cons.assign([TopicPartition("replicated", 0, 0)])
        got, deadline = [], time.monotonic() + 60
        while len(got) < 200 and time.monotonic() < deadline:
            m = cons.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value())
        cons.close()
        assert got == [f"v{i}".encode() for i in range(200)]
        c.start(leader)
        passed = True
    finally:
        c.teardown(passed)
