"""Security in a 3-node cluster: ACLs and SCRAM credentials go through the metadata quorum, so
a change made through one broker is enforced by every broker, also after a restart; Metadata on
the SASL listener names every broker's SASL endpoint (a client bootstrapped there never meets a
PLAINTEXT port). PLAINTEXT stays the inter-broker listener, whose principal (User:ANONYMOUS) is
a super user, as Kafka deployments give their broker principal.

The last tests secure every listener, the controller listener included (issue 28): a cluster
that speaks only SSL (mutual TLS) or only SASL_SSL runs the README's cluster quickstart, and a
peer that is not a node (no TLS, TLS without a client certificate, a certificate or SASL login of
another principal) has its Raft, heartbeat and AlterAcls frames refused, without effect."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from conftest import Cluster

import kafka_wire as kw  # noqa: E402 (conftest puts tests/integration on the path)
from test_kafka_tools_cluster import classpath  # noqa: F401 (fixture)

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


def produce(cfg: dict, topic: str, partition: int = -1) -> str:
    p = Producer({**cfg, "acks": "all", "message.timeout.ms": 8000})
    out = []
    p.produce(topic, b"v", partition=partition, on_delivery=lambda e, m: out.append(e and e.name()))
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
    # CreateAcls answers once the quorum committed the binding; each broker's authorizer applies
    # it from the metadata log a moment later (as in Kafka, whose tests wait for it on every
    # broker): wait until every partition's leader lets alice write.
    for part in range(3):
        eventually(f"alice to partition {part}",
                   lambda: produce(conf(c, 1, "alice", "alice-secret"), "orders", part), "ok")
    # Every broker enforces the ACL: alice writes all three partitions (their leaders are
    # spread over the nodes) bootstrapped from any node; bob is refused.
    for node in (1, 2, 3):
        p = Producer({**conf(c, node, "alice", "alice-secret"), "acks": "all", "message.timeout.ms": 8000})
        errs = []
        for part in range(3):
            p.produce("orders", b"x", partition=part, on_delivery=lambda e, m: errs.append(e))
        p.flush(20)
        assert len(errs) == 3 and all(e is None for e in errs), (node, [str(e) for e in errs])
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
    SIGKILL moves leadership to a follower that has them all. The controller listener is
    SASL_SSL as User:broker too: a PLAINTEXT one would need User:ANONYMOUS in super.users with an
    authorizer (as in Kafka), which would let the PLAINTEXT client listener do everything."""
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
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL,SECURE:SASL_SSL",
        "inter.broker.listener.name": "SECURE",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.secure.plain.sasl.jaas.config": jaas,
        "listener.name.controller.plain.sasl.jaas.config": jaas,
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
        # CreateAcls answers once the quorum committed the binding; the partition leader's
        # authorizer applies it from the metadata log a moment later (as in Kafka): until then
        # alice's produce is refused with TOPIC_AUTHORIZATION_FAILED and nothing is appended.
        # The first record is sent again (by a new producer) until it is acknowledged.
        deadline = time.monotonic() + 30
        while True:
            p = Producer({**sconf(1, "alice", "alice-secret"), "acks": "all", "enable.idempotence": True,
                          "message.timeout.ms": 60000})
            first = []
            p.produce("replicated", b"v0", on_delivery=lambda e, m: first.append(e))
            assert p.flush(60) == 0 and len(first) == 1
            if first[0] is None:
                break
            assert first[0].code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                       KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError._FATAL), str(first[0])
            assert time.monotonic() < deadline, str(first[0])
            time.sleep(0.2)
        acked = [None]
        for i in range(1, 200):
            p.produce("replicated", f"v{i}".encode(), on_delivery=lambda e, m: acked.append(e))
        # Compare with `is None`: confluent-kafka's KafkaError == None raises inside the C
        # extension and pytest then reports a SystemError instead of the delivery error.
        assert p.flush(60) == 0 and len(acked) == 200, len(acked)
        failed = [str(e) for e in acked if e is not None]
        assert not failed, failed[:3]
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


# ---------------------------------------------------------------- every listener secured (issue 28)

NODE_DN = "CN=frieda-node,OU=nodes,O=Frieda"      # the nodes' certificate: their principal on SSL
ADMIN_DN = "CN=admin,OU=clients,O=Frieda"          # a client certificate allowed everything
STRANGER_DN = "CN=mallory,OU=clients,O=Frieda"     # same CA, not a node


class Pki:
    """A CA and PEM files of three certificates it signed (node, admin, stranger): each as a
    Kafka PEM key store (key then chain) and as separate key and certificate files (librdkafka)."""

    def __init__(self, d):
        import trustme
        from cryptography.hazmat.primitives import serialization
        d.mkdir(parents=True, exist_ok=True)
        self.ca = trustme.CA()
        self.ca_pem = d / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_pem))
        for name, dn in (("node", NODE_DN), ("admin", ADMIN_DN), ("stranger", STRANGER_DN)):
            cn, ou, o = (part.split("=", 1)[1] for part in dn.split(","))
            leaf = self.ca.issue_cert("127.0.0.1", "localhost", common_name=cn,
                                      organization_unit_name=ou, organization_name=o)
            key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
            key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
            chain = b"".join(b.bytes() for b in leaf.cert_chain_pems)
            (d / f"{name}.key").write_bytes(key_pem)
            (d / f"{name}.crt").write_bytes(chain)
            (d / f"{name}.pem").write_bytes(key_pem + chain)

    def path(self, name: str) -> str:
        return str(self.ca_pem.parent / name)

    def context(self, cert: str | None) -> ssl.SSLContext:
        """A client TLS context trusting the CA, presenting ``cert`` (node/admin/stranger) if given."""
        ctx = ssl.create_default_context(cafile=str(self.ca_pem))
        if cert is not None:
            ctx.load_cert_chain(self.path(f"{cert}.crt"), self.path(f"{cert}.key"))
        return ctx


NODE_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="node" '
             'password="node-secret" user_node="node-secret" user_alice="alice-secret";')


def secured_cluster(tmp_path, protocol: str) -> tuple[Cluster, Pki]:
    """A 3-node cluster with no PLAINTEXT listener: the client (and inter-broker) listener and
    the controller listener both speak ``protocol``. SSL: mutual TLS everywhere, the nodes'
    certificate subject is their principal; SASL_SSL: PLAIN logins, User:node on both listeners
    (Kafka's JAAS convention: username/password is the node's own login)."""
    pki = Pki(tmp_path / "pki")
    common = {
        "listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:{protocol}",
        "inter.broker.listener.name": protocol,
        "ssl.keystore.location": pki.path("node.pem"),
        "ssl.truststore.location": str(pki.ca_pem),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    }
    if protocol == "SSL":
        settings = {**common,
                    "ssl.client.auth": "required",
                    "super.users": f"User:{NODE_DN};User:{ADMIN_DN}"}
        client = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_pem),
                  "ssl.certificate.location": pki.path("admin.crt"), "ssl.key.location": pki.path("admin.key")}
    else:
        settings = {**common,
                    "sasl.enabled.mechanisms": "PLAIN",
                    "sasl.mechanism.inter.broker.protocol": "PLAIN",
                    "sasl.mechanism.controller.protocol": "PLAIN",
                    "listener.name.sasl_ssl.plain.sasl.jaas.config": NODE_JAAS,
                    "listener.name.controller.plain.sasl.jaas.config": NODE_JAAS,
                    "super.users": "User:node"}
        client = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca_pem),
                  "sasl.mechanisms": "PLAIN", "sasl.username": "node", "sasl.password": "node-secret"}
    c = Cluster(tmp_path / "cluster", 3, client_listener=protocol, client_conf=client, **settings)
    return c, pki


@pytest.fixture(params=["SSL", "SASL_SSL"])
def all_secured(request, tmp_path):
    c, pki = secured_cluster(tmp_path, request.param)
    try:
        c.start_all()
        yield c, pki
    finally:
        rep = getattr(request.node, "rep_call", None)
        failed = rep is None or rep.failed
        problems = c.teardown(passed=not failed)
        if failed or problems:
            print(c.tails(80))
    if problems:
        pytest.fail("; ".join(problems))


def no_plaintext_port(c: Cluster) -> None:
    """Neither listener of any node answers a PLAINTEXT Kafka request."""
    for node in c.nodes.values():
        for port in (node.client_port, node.quorum_port):
            s = kw.connect("127.0.0.1", port, timeout=5)
            try:
                kw.send(s, kw.api_versions_v0(1))
                try:
                    got = kw.recv_frame(s, timeout=5)
                except (OSError, AssertionError, kw.Closed):
                    got = None
                # a TLS listener answers a TLS alert at most, never a Kafka response (whose first
                # bytes would be the correlation id 1)
                assert got is None or got[:4] != struct.pack(">i", 1), (node.id, port, got[:16])
            finally:
                s.close()


def test_every_listener_secured_runs_the_readme_cluster_quickstart(all_secured):
    """The README's cluster quickstart with no PLAINTEXT port anywhere: 3 brokers listed,
    records produced with acks=all to an auto-created RF 3 topic, the active controller (a node
    like any other) killed with SIGKILL, more records through the others, every record read back
    in order through another node; the node restarted catches up and rejoins the ISR. Raft,
    heartbeats, controller forwarding and follower fetches all ran over TLS (and SASL)."""
    c, pki = all_secured
    no_plaintext_port(c)
    admin = c.admin()
    md = admin.list_topics(timeout=15)
    assert sorted(md.brokers) == [1, 2, 3]
    boot = c.bootstrap
    topic = "readme-cluster"
    p = Producer({**c.client_conf, "bootstrap.servers": boot, "acks": "all", "message.timeout.ms": 60000})
    sent = [f"line {i} " + "x" * (i % 37) for i in range(200)]
    errs = []
    for v in sent[:100]:
        p.produce(topic, v.encode(), on_delivery=lambda e, m: errs.append(e))
    # `is None`: confluent-kafka's KafkaError == None raises inside its C extension.
    assert p.flush(60) == 0 and len(errs) == 100, len(errs)
    assert all(e is None for e in errs), [str(e) for e in errs if e is not None][:3]
    c.wait_full_isr(topic)
    assert len(c.replicas_of(topic, 0)) == 3

    controller = admin.describe_cluster(request_timeout=15).result(30).controller.id
    c.kill(controller)
    others = [i for i in (1, 2, 3) if i != controller]
    p = Producer({**c.client_conf, "bootstrap.servers": ",".join(c.node(i).addr for i in others),
                  "acks": "all", "message.timeout.ms": 60000})
    for v in sent[100:]:
        p.produce(topic, v.encode(), on_delivery=lambda e, m: errs.append(e))
    assert p.flush(90) == 0 and len(errs) == 200, len(errs)
    assert all(e is None for e in errs), [str(e) for e in errs if e is not None][:3]
    # a new active controller among the two others takes requests (Raft elected it over TLS)
    admin2 = AdminClient({**c.client_conf, "bootstrap.servers": c.node(others[0]).addr})
    admin2.create_topics([NewTopic("after-failover", 1, 2)])["after-failover"].result(30)
    cons = Consumer({**c.client_conf, "bootstrap.servers": c.node(others[1]).addr, "group.id": "readme",
                     "enable.auto.commit": False})
    cons.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        m = cons.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    cons.close()
    assert got == sent

    c.start(controller)
    c.wait_full_isr(topic, timeout=60, via=others[0])
    # the nodes never refused each other (the only failed handshakes were no_plaintext_port's)
    for i in (1, 2, 3):
        text = c.node(i).text()
        assert "refused a quorum request" not in text and "refused this node" not in text, c.node(i).tail()
        assert "SASL authentication failed" not in text, c.node(i).tail()


# ---- a peer that is not a node, speaking the controller listener's JSON frames

def quorum_frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def read_quorum_frame(s, timeout: float = 10):
    return json.loads(kw.recv_frame(s, timeout=timeout))


def sasl_plain(s, user: str, password: str) -> bool:
    """SaslHandshake v1 (PLAIN) and SaslAuthenticate v0 on socket ``s``: whether it logged in."""
    kw.send(s, kw.frame(kw.header_v1(17, 1, 1, "attacker") + kw.string("PLAIN")))
    r = kw.Reader(kw.recv_frame(s))
    assert r.i32() == 1
    if r.i16() != 0:
        return False
    token = f"\0{user}\0{password}".encode()
    kw.send(s, kw.frame(kw.header_v1(36, 0, 2, "attacker") + kw.i32(len(token)) + token))
    r = kw.Reader(kw.recv_frame(s))
    assert r.i32() == 2
    return r.i16() == 0


def hello(s, to: int | None) -> None:
    """The Hello a node opens each quorum connection with (meant for node ``to``, from a node
    id no node has, its cluster id not known), as a node sends it; asserts it is admitted."""
    kw.send(s, quorum_frame({"Hello": {"from": 99, "to": to, "cluster_id": None}}))
    got = read_quorum_frame(s)
    assert got == "Hello", got


def attempt(port: int, request, tls: ssl.SSLContext | None = None, login: tuple | None = None,
            greet: bool = False):
    """Sends one quorum frame to the controller listener on ``port`` over plain TCP or
    ``tls``, after a SASL PLAIN ``login`` and a ``hello`` (``greet``: what a node sends first)
    if given. Returns ("answer", json) or ("closed", why)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = raw
    try:
        if tls is not None:
            s = tls.wrap_socket(raw, server_hostname="127.0.0.1")
        if login is not None and not sasl_plain(s, *login):
            return "closed", "SASL login refused"
        if greet:
            hello(s, None)
        kw.send(s, quorum_frame(request))
        return "answer", read_quorum_frame(s)
    except (OSError, AssertionError, ValueError, kw.Closed) as e:
        return "closed", repr(e)
    finally:
        s.close()


def controller_port(c: Cluster, i: int) -> int:
    return c.node(i).quorum_port


def quorum_term(c: Cluster, pki: Pki, via: int = 1) -> int:
    """The Raft term (KRaft's leader epoch) from DescribeQuorum v0, asked of node ``via``'s
    client listener as the super user (admin certificate or the node's SASL login)."""
    raw = socket.create_connection(("127.0.0.1", c.node(via).client_port), timeout=10)
    s = (pki.context("admin") if c.client_listener == "SSL" else pki.context(None)).wrap_socket(
        raw, server_hostname="127.0.0.1")
    try:
        if c.client_listener != "SSL":
            assert sasl_plain(s, "node", "node-secret")
        body = kw.compact_array([kw.compact_string("__cluster_metadata")
                                 + kw.compact_array([kw.i32(0) + kw.NO_TAGS]) + kw.NO_TAGS]) + kw.NO_TAGS
        kw.send(s, kw.frame(kw.header_v2(55, 0, 7, "term") + body))
        r = kw.Reader(kw.recv_frame(s))
        assert r.i32() == 7
        r.tags()
        assert r.i16() == 0, "DescribeQuorum refused"
        r.uvarint()          # topics
        r.compact_string()   # __cluster_metadata
        r.uvarint()          # partitions
        r.i32()              # partition 0
        assert r.i16() == 0
        r.i32()              # leader id
        return r.i32()       # leader epoch
    finally:
        s.close()


def acl_json(principal: str, topic: str) -> dict:
    return {"resource_type": 2, "resource_name": topic, "pattern_type": 3, "principal": principal,
            "host": "*", "operation": 2, "permission": 3}


def test_unauthenticated_and_unauthorized_peers_are_refused_without_effect(all_secured):
    """Frames straight to every node's secured controller listener: AlterSecurity(AlterAcls),
    Heartbeats for broker 2 (shutting_down; a new incarnation re-registering it with other
    endpoints), Raft Vote and AppendEntries with term 1000. Against a PLAINTEXT controller
    listener (today's default, and all there was before) the AlterAcls adds the ACL, the
    re-registration is taken and the AppendEntries moves a node to term 1000. Without TLS, or TLS without a client certificate, the connection closes before any
    frame is read; a certificate or SASL login of another principal (User:mallory's DN, alice)
    gets the answer Refused and a closed connection. The node itself (its certificate, its
    login) gets the same AlterAcls through, so the frame is well-formed and would have worked.
    Afterwards: no ACL from the strangers, broker 2 registered as before (not fenced, its own
    endpoint, its leaderships kept), the Raft term below the strangers' 1000."""
    c, pki = all_secured
    protocol = c.client_listener
    admin = c.admin()
    admin.create_topics([NewTopic("guarded", 3, 3)])["guarded"].result(30)
    c.wait_full_isr("guarded")
    leaders_before = {p: c.leader_of("guarded", p) for p in range(3)}
    term = quorum_term(c, pki)
    assert term < 1000
    incarnation = str(uuid.uuid4())
    hijack = {"id": 2, "incarnation": incarnation, "rack": None, "raft_addr": "127.0.0.1:1",
              "endpoints": [{"name": protocol, "host": "127.0.0.1", "port": 1}], "shutting_down": False}
    attacks = {
        "AlterAcls": {"Controller": {"AlterSecurity": {"AlterAcls": {
            "create": [acl_json("User:mallory", "stolen")], "delete": []}}}},
        "Heartbeat": {"Controller": {"Heartbeat": {
            "id": 2, "incarnation": incarnation,
            "endpoints": [{"name": protocol, "host": "127.0.0.1", "port": c.node(2).client_port}],
            "rack": None, "raft_addr": f"127.0.0.1:{c.node(2).quorum_port}", "shutting_down": True}}},
        # a new incarnation re-registers broker 2 (fenced, endpoints to port 1): PLAINTEXT takes it
        "Heartbeat (re-registration)": {"Controller": {"Heartbeat": hijack}},
        "Vote": {"Vote": {"vote": {"leader_id": {"term": 1000, "node_id": 2}, "committed": False},
                          "last_log_id": {"leader_id": {"term": 999, "node_id": 2}, "index": 10 ** 6}}},
        "AppendEntries": {"AppendEntries": {
            "vote": {"leader_id": {"term": 1000, "node_id": 2}, "committed": True},
            "prev_log_id": None, "entries": [], "leader_commit": None}},
    }
    node_tls = pki.context("node") if protocol == "SSL" else pki.context(None)
    if protocol == "SSL":
        unauthenticated = [("plain TCP", None, None), ("TLS without a client certificate", pki.context(None), None)]
        strangers = [("User:" + STRANGER_DN, pki.context("stranger"), None)]
        node_login = None
    else:
        unauthenticated = [("plain TCP", None, None), ("TLS without SASL", pki.context(None), None),
                           ("a wrong password", pki.context(None), ("node", "guess"))]
        strangers = [("User:alice", pki.context(None), ("alice", "alice-secret"))]
        node_login = ("node", "node-secret")
    for i in (1, 2, 3):
        port = controller_port(c, i)
        for what, request in attacks.items():
            for how, tls, login in unauthenticated:
                kind, got = attempt(port, request, tls, login)
                assert kind == "closed", (i, what, how, got)
            for who, tls, login in strangers:
                kind, got = attempt(port, request, tls, login)
                assert kind == "answer" and "Refused" in got and who in got["Refused"], (i, what, who, got)
    # The node's own identity sends the same kind of AlterAcls (to whichever node leads).
    done = []
    for i in (1, 2, 3):
        kind, got = attempt(controller_port(c, i), {"Controller": {"AlterSecurity": {"AlterAcls": {
            "create": [acl_json("User:carol", "control")], "delete": []}}}}, node_tls, node_login, greet=True)
        assert kind == "answer", (i, got)
        done.append(got == {"Controller": {"Ok": "Done"}})
    assert done.count(True) == 1, done

    from confluent_kafka.admin import AclBindingFilter
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    eventually("the node's control ACL", lambda: sorted(b.principal for b in admin.describe_acls(everything).result(15)),
               ["User:carol"])
    time.sleep(2 * c.setting("broker.session.timeout.ms") / 1000)
    assert sorted(b.principal for b in admin.describe_acls(everything).result(15)) == ["User:carol"]
    assert sorted(admin.list_topics(timeout=15).brokers) == [1, 2, 3]  # broker 2 not fenced
    assert {p: c.leader_of("guarded", p) for p in range(3)} == leaders_before
    assert c.metadata().brokers[2].port == c.node(2).client_port
    after = quorum_term(c, pki)
    assert term <= after < 1000, (term, after)  # no node took the strangers' term
    logs = "".join(c.node(i).text() for i in (1, 2, 3))
    assert incarnation not in logs  # never registered
    assert "refused a quorum request" in logs


def test_delegation_tokens_are_kept_in_the_metadata_quorum(tmp_path, classpath):
    """A token created through one broker (Kafka's kafka-delegation-tokens tool) logs in at
    every broker, also at one restarted since (it is kept in the metadata quorum, and each
    broker derives its credential from the shared delegation.token.secret.key); expired
    through another broker, it logs in nowhere."""
    from token_tools import Tools, wait_login_refused
    c = Cluster(tmp_path, 3, sasl=True, **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.secure.plain.sasl.jaas.config": JAAS,
        "delegation.token.secret.key": "cluster-token-secret",
    })
    passed = False
    try:
        c.start_all()

        class Via:
            """One node's SASL listener, as Tools wants a broker."""
            def __init__(self, i: int):
                self.port = c.node(i).sasl_port

            def bootstrap(self, _protocol: str) -> str:
                return f"127.0.0.1:{self.port}"

        tools = {i: Tools(Via(i), tmp_path, classpath) for i in (1, 2, 3)}
        alice = tools[1].user("alice", "alice-secret")
        token_id, hmac = tools[1].create(alice, "--max-life-time-period", "-1")

        def logs_in(i: int) -> bool:
            r = tools[i].run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", tools[i].boot,
                             "--list", "--command-config", tools[i].token(token_id, hmac, "SCRAM-SHA-512"),
                             check=False, timeout=60)
            return r.returncode == 0

        for i in (1, 2, 3):
            eventually(f"token login at node {i}", lambda: logs_in(i), True)
        c.stop(2)
        c.start(2)
        assert logs_in(2), "the token did not log in at a restarted broker"
        assert token_id in tools[3].describe(alice, "--owner-principal", "User:alice")
        r = tools[3].tokens(alice, "--expire", "--expiry-time-period", "-1", "--hmac", hmac)
        assert "Completed expire operation" in r.stdout, r.stdout
        for i in (1, 2, 3):
            wait_login_refused(tools[i], tools[i].token(token_id, hmac))
        passed = True
    finally:
        c.teardown(passed)


# ---- a PLAINTEXT controller listener with an authorizer (issue 57 C)

def sasl_quorum_term(port: int, user: str, password: str) -> int:
    """The Raft term from DescribeQuorum v0 asked on the SASL_PLAINTEXT listener at ``port``."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        assert sasl_plain(s, user, password)
        body = kw.compact_array([kw.compact_string("__cluster_metadata")
                                 + kw.compact_array([kw.i32(0) + kw.NO_TAGS]) + kw.NO_TAGS]) + kw.NO_TAGS
        kw.send(s, kw.frame(kw.header_v2(55, 0, 7, "term") + body))
        r = kw.Reader(kw.recv_frame(s))
        assert r.i32() == 7
        r.tags()
        assert r.i16() == 0, "DescribeQuorum refused"
        r.uvarint()
        r.compact_string()
        r.uvarint()
        r.i32()
        assert r.i16() == 0
        r.i32()
        return r.i32()
    finally:
        s.close()


def plaintext_attempt(port: int, request, check_closed: bool = True,
                      greet: bool = False) -> tuple[str, object, bool]:
    """One quorum frame over plain TCP (after a ``hello`` if ``greet``): ("answer", json, closed
    after it) or ("closed", why, True)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if greet:
            hello(s, None)
        kw.send(s, quorum_frame(request))
        got = read_quorum_frame(s)
        if not check_closed:
            return "answer", got, False
        try:
            s.settimeout(5)
            closed = s.recv(1) == b""
        except OSError:
            closed = True
        return "answer", got, closed
    except (OSError, AssertionError, ValueError, kw.Closed) as e:
        return "closed", repr(e), True
    finally:
        s.close()


def stranger_frames(c: Cluster, target: int) -> dict:
    """AlterAcls, a shutting-down heartbeat and a re-registration of broker ``target``, Raft Vote
    and AppendEntries at term 1000 (as the secured-listener test sends them)."""
    incarnation = str(uuid.uuid4())
    node = c.node(target)
    return {
        "AlterAcls": {"Controller": {"AlterSecurity": {"AlterAcls": {
            "create": [acl_json("User:mallory", "stolen")], "delete": []}}}},
        "Heartbeat": {"Controller": {"Heartbeat": {
            "id": target, "incarnation": incarnation,
            "endpoints": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": node.client_port}],
            "rack": None, "raft_addr": f"127.0.0.1:{node.quorum_port}", "shutting_down": True}}},
        "Heartbeat (re-registration)": {"Controller": {"Heartbeat": {
            "id": target, "incarnation": str(uuid.uuid4()), "rack": None, "raft_addr": "127.0.0.1:1",
            "endpoints": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 1}], "shutting_down": False}}},
        "Vote": {"Vote": {"vote": {"leader_id": {"term": 1000, "node_id": 2}, "committed": False},
                          "last_log_id": {"leader_id": {"term": 999, "node_id": 2}, "index": 10 ** 6}}},
        "AppendEntries": {"AppendEntries": {
            "vote": {"leader_id": {"term": 1000, "node_id": 2}, "committed": True},
            "prev_log_id": None, "entries": [], "leader_commit": None}},
    }


def test_a_plaintext_controller_listener_with_an_authorizer_obeys_only_a_super_user_anonymous(tmp_path):
    """Issue 57 C. A node with ``authorizer.class.name`` set and a PLAINTEXT controller listener
    whose ``super.users`` is only ``User:admin`` (a single voter: its own Raft and heartbeats
    never leave the process): a stranger's AlterAcls, heartbeats (fencing broker 1 as shutting
    down, re-registering it on port 1) and Raft Vote and AppendEntries at term 1000, sent over
    plain TCP, each get the answer ``Refused`` naming ``User:ANONYMOUS`` and a closed
    connection, a WARN line per frame, and change nothing: no ACL, broker 1 registered on its own
    port, the Raft term below 1000. As Kafka's ``ControllerApis``: CLUSTER_ACTION asked of the
    listener's principal, ``User:ANONYMOUS`` on PLAINTEXT (before the fix the AlterAcls was
    taken and the term moved to 1000)."""
    c = Cluster(tmp_path, 1, sasl=True, **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.secure.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "default.replication.factor": 1, "offsets.topic.replication.factor": 1, "min.insync.replicas": 1,
    })
    passed = False
    try:
        c.start_all()
        admin = AdminClient(conf(c, 1, "admin", "admin-secret"))
        term = sasl_quorum_term(c.node(1).sasl_port, "admin", "admin-secret")
        assert term < 1000
        for what, request in stranger_frames(c, 1).items():
            kind, got, closed = plaintext_attempt(c.node(1).quorum_port, request)
            assert kind == "answer" and "Refused" in got and "User:ANONYMOUS" in got["Refused"], (what, got)
            assert closed, f"{what}: the connection stayed open after the refusal"
        from confluent_kafka.admin import AclBindingFilter
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        time.sleep(2 * c.setting("broker.session.timeout.ms") / 1000)
        assert admin.describe_acls(everything).result(15) == []
        md = admin.list_topics(timeout=15)
        assert sorted(md.brokers) == [1] and md.brokers[1].port == c.node(1).sasl_port
        assert term <= sasl_quorum_term(c.node(1).sasl_port, "admin", "admin-secret") < 1000
        text = c.node(1).text()
        refusals = [line for line in text.splitlines()
                    if "WARN" in line and "refused a quorum request" in line and "User:ANONYMOUS" in line]
        assert len(refusals) == 5, refusals
        assert "User:ANONYMOUS, which is not allowed CLUSTER_ACTION" in text
        passed = True
    finally:
        c.teardown(passed)


def test_a_plaintext_controller_listener_with_anonymous_a_super_user_forms_the_cluster(secure_cluster):
    """The same settings with ``User:ANONYMOUS`` in ``super.users`` (what Kafka requires of a
    PLAINTEXT controller listener with an authorizer): the 3 nodes form the quorum, register and
    replicate an RF 3 topic, and an AlterAcls frame over plain TCP is taken, as Kafka takes it
    from a super user."""
    c = secure_cluster
    admin = AdminClient(conf(c, 1, "admin", "admin-secret"))
    admin.create_topics([NewTopic("formed", 1, 3)])["formed"].result(30)
    c.wait_full_isr("formed")
    assert sorted(admin.list_topics(timeout=15).brokers) == [1, 2, 3]
    done = []
    for i in (1, 2, 3):
        kind, got, _closed = plaintext_attempt(c.node(i).quorum_port, {"Controller": {"AlterSecurity": {
            "AlterAcls": {"create": [acl_json("User:carol", "control")], "delete": []}}}}, check_closed=False,
            greet=True)
        assert kind == "answer" and "Refused" not in got, (i, got)
        done.append(got == {"Controller": {"Ok": "Done"}})
    assert done.count(True) == 1, done  # the active controller takes it, the others name it
    from confluent_kafka.admin import AclBindingFilter
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    eventually("the ACL sent over plain TCP", lambda: sorted(
        b.principal for b in admin.describe_acls(everything).result(15)), ["User:carol"])
