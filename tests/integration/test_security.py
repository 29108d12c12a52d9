"""Security through real clients: TLS (with client certificates), SASL PLAIN and SCRAM over
SASL_PLAINTEXT and SASL_SSL, SCRAM credentials managed through the Admin API, re-authentication,
certificates reloaded without a restart, and failed logins that do not slow anyone else.

Clients: confluent-kafka (librdkafka), kafka-python, kcat. The ACL semantics are in
test_acls.py. Every test here runs against Frieda; with ``FRIEDA_SECURITY_VS_KAFKA=1`` the
client-visible ones also run against Apache Kafka 4.4.0 configured the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

from security_env import USERS, Pki, brokers_under_test, make_secure

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=brokers_under_test(slow=True))
def secure_broker(request, tmp_path_factory, pki):
    """One broker of each kind for the tests below that share it (an Apache Kafka start takes
    about 9 s): they use their own topics and users, so none sees another's effects."""
    b = make_secure(request.param, tmp_path_factory.mktemp(request.param), pki, authorizer=False)
    yield b
    b.stop()


@pytest.fixture
def secure(request, secure_broker):
    yield secure_broker
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(secure_broker.log_tail())


def roundtrip(conf: dict, topic: str, n: int = 50) -> list[bytes]:
    """Produces n records with acks=all and reads them back from offset 0."""
    values = [f"{topic}-{i}".encode() * (1 + i % 7) for i in range(n)]
    p = Producer({**conf, "acks": "all", "enable.idempotence": True})
    errors = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(30) == 0 and not errors, errors
    c = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == values
    return got


def create(conf: dict, topic: str) -> None:
    a = AdminClient(conf)
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)


_LOGIN = """
import json, sys
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
conf = json.loads(sys.argv[1])
token = conf.pop("__oauth_token", None)
if token is not None:
    import time
    conf["oauth_cb"] = lambda _cfg: (token, time.time() + 300)
import time
errs = []
a = AdminClient({**conf, "error_cb": lambda e: errs.append(str(e))})
deadline = time.monotonic() + float(sys.argv[2])
# Ask in short steps: a refused login is reported through the error callback within a moment;
# only a login that neither fails nor succeeds waits for the whole timeout.
while True:
    try:
        a.list_topics(timeout=0.5)
        print("LOGGED-IN")
        break
    except KafkaException as e:
        a.poll(0)  # serves the error callback
        if errs or time.monotonic() >= deadline:
            errs.append(str(e))
            break
print(" ".join(errs))
"""


def login_error(conf: dict, timeout: float = 6) -> str:
    """What a client reports (its error callback, its log lines) when its login fails; the
    login must fail (no metadata within `timeout`). The client runs in its own process, so
    nothing of it outlives this call."""
    conf = {k: v for k, v in conf.items() if not callable(v)}
    r = subprocess.run([sys.executable, "-c", _LOGIN, json.dumps(conf), str(timeout)],
                       capture_output=True, text=True, timeout=timeout + 30)
    text = r.stdout + r.stderr
    if "LOGGED-IN" in r.stdout:
        pytest.fail(f"the login did not fail: {conf}")
    return text


def add_scram(conf: dict, user: str, password: str, mech=ScramMechanism.SCRAM_SHA_256, iterations=4096):
    a = AdminClient(conf)
    info = ScramCredentialInfo(mech, iterations)
    for _, f in a.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, info, password.encode())]).items():
        f.result(30)


def test_tls_with_client_certificates_roundtrip(secure, pki):
    cert, key = pki.client_cert("alice")
    ssl_conf = secure.client(protocol="SSL", **{"ssl.certificate.location": str(cert),
                                                 "ssl.key.location": str(key)})
    create(ssl_conf, "tls-topic")
    roundtrip(ssl_conf, "tls-topic", 200)


def test_tls_refuses_missing_and_untrusted_client_certificates(secure, pki):
    no_cert = secure.client(protocol="SSL")
    err = login_error(no_cert)
    assert "certificate required" in err or "SSL" in err, err
    cert, key = pki.client_cert("mallory", ca=pki.untrusted)
    bad = secure.client(protocol="SSL", **{"ssl.certificate.location": str(cert),
                                            "ssl.key.location": str(key)})
    login_error(bad)
    # A client that does not trust the broker's CA refuses it.
    wrong_ca = dict(no_cert)
    alien = pki.dir / "untrusted-ca.pem"
    pki.untrusted.cert_pem.write_to_path(str(alien))
    cert, key = pki.client_cert("alice")
    wrong_ca.update({"ssl.ca.location": str(alien), "ssl.certificate.location": str(cert),
                     "ssl.key.location": str(key)})
    login_error(wrong_ca)


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_plain_and_scram_roundtrip(secure, protocol):
    admin = secure.client(protocol=protocol)
    topic = f"sasl-{protocol.lower()}"
    create(admin, topic)
    roundtrip(secure.client("alice", "PLAIN", protocol), topic)
    add_scram(admin, "bob", "bob-scram-256", ScramMechanism.SCRAM_SHA_256)
    add_scram(admin, "carol", "carol-scram-512", ScramMechanism.SCRAM_SHA_512, iterations=8192)
    roundtrip(secure.client("bob", "SCRAM-SHA-256", protocol, password="bob-scram-256"), topic + "-256")
    roundtrip(secure.client("carol", "SCRAM-SHA-512", protocol, password="carol-scram-512"), topic + "-512")


def test_wrong_password_unknown_user_and_mechanism_are_refused(secure):
    err = login_error(secure.client("alice", "PLAIN", password="nope"))
    assert "Authentication failed" in err, err
    err = login_error(secure.client("nobody", "SCRAM-SHA-256", password="x"))
    assert "Authentication failed" in err, err
    add_scram(secure.client(), "dave", "right")
    err = login_error(secure.client("dave", "SCRAM-SHA-256", password="wrong"))
    assert "Authentication failed" in err, err
    # SCRAM credentials are per mechanism: dave has none for SHA-512.
    err = login_error(secure.client("dave", "SCRAM-SHA-512", password="right"))
    assert "Authentication failed" in err, err
    # a mechanism the listener does not enable: the broker names the ones it has
    err = login_error({**secure.client("alice", "OAUTHBEARER"),
                       "sasl.oauthbearer.config": "principal=alice"})
    assert "PLAIN" in err and "mechanism" in err.lower(), err


def test_scram_credentials_admin_api(secure):
    a = AdminClient(secure.client())
    add_scram(secure.client(), "erin", "p1", ScramMechanism.SCRAM_SHA_256, 4096)
    add_scram(secure.client(), "erin", "p2", ScramMechanism.SCRAM_SHA_512, 16384)
    desc = a.describe_user_scram_credentials(["erin"])
    desc = desc.result(30) if hasattr(desc, "result") else {u: f.result(30) for u, f in desc.items()}
    infos = sorted((i.mechanism, i.iterations) for i in desc["erin"].scram_credential_infos)
    assert infos == [(ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 16384)]
    # Too few iterations: UNACCEPTABLE_CREDENTIAL, nothing changed.
    bad = a.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"p3")])
    with pytest.raises(KafkaException) as e:
        bad["erin"].result(30)
    assert e.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    roundtrip(secure.client("erin", "SCRAM-SHA-256", password="p1"), "scram-admin")
    # Deleting the SHA-256 credential stops that login; SHA-512 still works.
    for _, f in a.alter_user_scram_credentials(
            [UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)]).items():
        f.result(30)
    # (Kafka applies the deletion from its metadata log a moment after answering)
    deadline = time.monotonic() + 15
    while True:
        try:
            login_error(secure.client("erin", "SCRAM-SHA-256", password="p1"), timeout=3)
            break
        except pytest.fail.Exception:
            assert time.monotonic() < deadline, "the deleted credential still logs in"
    roundtrip(secure.client("erin", "SCRAM-SHA-512", password="p2"), "scram-admin-512")
    # Deleting what does not exist: RESOURCE_NOT_FOUND.
    gone = a.alter_user_scram_credentials([UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256)])
    with pytest.raises(KafkaException) as e:
        gone["nobody"].result(30)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def test_kafka_python_over_sasl_ssl_scram_and_tls(secure, pki):
    from kafka import KafkaConsumer, KafkaProducer
    add_scram(secure.client(), "frank", "frank-pw", ScramMechanism.SCRAM_SHA_512)
    create(secure.client(), "kp-topic")
    ctx = ssl.create_default_context(cafile=str(pki.ca_pem))
    common = dict(bootstrap_servers=secure.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                  ssl_context=ctx, sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="frank",
                  sasl_plain_password="frank-pw")
    p = KafkaProducer(acks="all", **common)
    for i in range(20):
        p.send("kp-topic", f"v{i}".encode())
    p.flush(30)
    p.close()
    cert, key = pki.client_cert("grace")
    c = KafkaConsumer(bootstrap_servers=secure.bootstrap("SSL"), security_protocol="SSL",
                      ssl_cafile=str(pki.ca_pem), ssl_certfile=str(cert), ssl_keyfile=str(key),
                      auto_offset_reset="earliest", consumer_timeout_ms=10000)
    c.assign([__import__("kafka").TopicPartition("kp-topic", 0)])
    got = [m.value for m in c]
    c.close()
    assert got == [f"v{i}".encode() for i in range(20)]


@pytest.mark.skipif(KCAT is None, reason="kcat not installed (scripts/test installs it)")
def test_kcat_over_sasl_ssl(secure):
    create(secure.client(), "kcat-secure")
    args = ["-b", secure.bootstrap("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
            "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
            "-X", f"sasl.password={USERS['alice']}", "-X", f"ssl.ca.location={secure.pki.ca_pem}"]
    lines = "".join(f"line {i}\n" for i in range(100))
    subprocess.run([KCAT, *args, "-P", "-t", "kcat-secure"], input=lines.encode(), check=True, timeout=60)
    out = subprocess.run([KCAT, *args, "-C", "-t", "kcat-secure", "-e", "-q"], capture_output=True,
                         check=True, timeout=60).stdout.decode()
    assert out == lines


def test_reauthentication_keeps_the_connection(tmp_path, pki):
    """connections.max.reauth.ms (KIP-368): the session lifetime is sent to the client, which
    authenticates again on the same connection before it ends; a producer keeps producing
    across several lifetimes without a reconnect."""
    b = make_secure("frieda", tmp_path, pki, authorizer=False,
                    extra={"connections.max.reauth.ms": "1500"})
    try:
        create(b.client(), "reauth")
        p = Producer({**b.client("alice"), "acks": "all"})
        errors, done = [], [0]

        def cb(e, m):
            if e:
                errors.append(e)
            else:
                done[0] += 1

        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            p.produce("reauth", b"x", on_delivery=cb)
            p.poll(0.05)
        assert p.flush(30) == 0
        assert not errors, errors
        assert done[0] > 50
        log = b.log_tail(2000)
        assert "SASL session expired" not in log, log
        # More authentications than connections: the client re-authenticated.
        reauths = b.log_path.read_text().count("re-authenticated")
        assert reauths >= 2, f"expected re-authentications in the broker log\n{log}"
    finally:
        b.stop()


def test_certificates_reload_without_restart(tmp_path, pki):
    b = make_secure("frieda", tmp_path, pki, authorizer=False,
                    extra={"ssl.reload.check.interval.ms": "200"})
    try:
        def serial() -> int:
            ctx = ssl.create_default_context(cafile=str(pki.ca_pem))
            with socket.create_connection(("127.0.0.1", b.ports["SASL_SSL"])) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                    der = t.getpeercert(binary_form=True)
            from cryptography import x509
            return x509.load_der_x509_certificate(der).serial_number

        first = serial()
        tmp = pki.broker_pem.with_suffix(".new")
        pki.write_broker_cert(tmp)
        tmp.replace(pki.broker_pem)
        deadline = time.monotonic() + 10
        while serial() == first:
            assert time.monotonic() < deadline, "the new certificate was not served within 10 s"
            time.sleep(0.2)
        # A broken file keeps the previous certificate.
        served = serial()
        pki.broker_pem.write_text("not a certificate")
        time.sleep(1)
        assert serial() == served
        assert "does not load; keeping the previous one" in b.log_tail(200)
        pki.write_broker_cert(pki.broker_pem)
        roundtrip(b.client(protocol="SASL_SSL"), "after-reload")
    finally:
        pki.write_broker_cert(pki.broker_pem)
        b.stop()


def test_failed_login_flood_does_not_slow_other_clients(tmp_path, pki):
    """Eight threads log in with a wrong password as fast as the broker lets them (each failure
    answered after connection.failed.authentication.delay.ms) while a producer's acks=all
    latency is measured; it stays within a few milliseconds of its latency without the flood."""
    b = make_secure("frieda", tmp_path, pki, authorizer=False)
    try:
        create(b.client(), "flood")
        p = Producer({**b.client("alice"), "acks": "all", "linger.ms": 0})

        def latencies(n: int) -> list[float]:
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                p.produce("flood", b"x")
                assert p.flush(10) == 0
                out.append(time.perf_counter() - t0)
            return sorted(out)

        quiet = latencies(200)
        stop = threading.Event()
        failures = [0]

        def flood():
            import struct
            while not stop.is_set():
                try:
                    with socket.create_connection(("127.0.0.1", b.ports["SASL_PLAINTEXT"]), timeout=5) as s:
                        def req(key, ver, cid, body):
                            hdr = struct.pack(">hhih", key, ver, cid, 5) + b"flood"
                            msg = hdr + body
                            s.sendall(struct.pack(">i", len(msg)) + msg)
                            size = struct.unpack(">i", s.recv(4))[0]
                            data = b""
                            while len(data) < size:
                                data += s.recv(size - len(data))
                            return data
                        mech = b"PLAIN"
                        req(17, 1, 1, struct.pack(">h", len(mech)) + mech)
                        token = b"\0alice\0wrong"
                        req(36, 0, 2, struct.pack(">i", len(token)) + token)
                        failures[0] += 1
                except OSError:
                    pass

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        loaded = latencies(200)
        stop.set()
        for t in threads:
            t.join(10)
        assert failures[0] > 20, failures
        p50_q, p50_l = quiet[100], loaded[100]
        # the flood is bounded by the delay: the producer's median stays within 5 ms
        assert p50_l < p50_q + 0.005, (p50_q, p50_l)
        assert "SASL authentication failed" in b.log_tail(50)
    finally:
        b.stop()


def _rsa_jwks(tmp_path, kid: str):
    """An RSA key and a JWKS file holding its public half."""
    import json
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig", "alg": "RS256"})
    path = tmp_path / f"jwks-{kid}.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    return key, path


def _token(key, kid: str, sub: str = "alice", aud: str = "frieda", exp_in: float = 300,
           iss: str = "https://idp.test") -> str:
    import jwt
    now = int(time.time())
    return jwt.encode({"sub": sub, "aud": aud, "iss": iss, "iat": now, "exp": now + int(exp_in)},
                      key, algorithm="RS256", headers={"kid": kid})


def test_oauthbearer_tokens_checked_against_a_jwks(tmp_path, pki):
    """OAUTHBEARER (KIP-768): a token signed by a key of the JWKS, for the expected audience and
    issuer, logs in as its subject; an expired token, a token of another key or another
    audience is refused."""
    key, jwks = _rsa_jwks(tmp_path, "k1")
    other, _ = _rsa_jwks(tmp_path, "k2")
    b = make_secure("frieda", tmp_path, pki, authorizer=False, extra={
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        "sasl.oauthbearer.jwks.endpoint.url": f"file://{jwks}",
        "sasl.oauthbearer.expected.audience": "frieda",
        "sasl.oauthbearer.expected.issuer": "https://idp.test",
    })
    try:
        create(b.client(), "oauth")

        def conf(token: str) -> dict:
            c = b.client("alice", "OAUTHBEARER")
            c.pop("sasl.username"), c.pop("sasl.password")
            c["oauth_cb"] = lambda _cfg: (token, time.time() + 300)
            return c

        roundtrip(conf(_token(key, "k1")), "oauth")
        for bad, why in [(_token(key, "k1", exp_in=-120), "xpired"),
                         (_token(other, "k1"), "ignature"),
                         (_token(key, "k1", aud="someone-else"), "udience")]:
            err = login_error({**conf(bad), "__oauth_token": bad})
            assert "invalid_token" in err and why in err, err
        # kafka-python with a token provider
        from kafka import KafkaProducer
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Provider(AbstractTokenProvider):
            def token(self):
                return _token(key, "k1", sub="bob")

        p = KafkaProducer(bootstrap_servers=b.bootstrap(), security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Provider())
        p.send("oauth", b"from kafka-python").get(timeout=30)
        p.close()
    finally:
        b.stop()


def test_java_clients_and_kafka_tools_over_sasl_ssl_and_mtls(secure, pki, tmp_path):
    """Kafka's own tools (the Java clients) as a user would run them: `kafka-configs` adds a
    SCRAM-SHA-512 credential and describes it, `kafka-console-producer` writes over SASL_SSL with
    it, `kafka-console-consumer` reads the lines back over SSL with a client certificate (PEM
    key store)."""
    from security_env import KAFKA_LIB, config_command, ensure_kafka_lib, pkcs8
    ensure_kafka_lib()
    cp = f"{KAFKA_LIB}/*"

    def tool(main: str, *args: str, stdin: str | None = None) -> str:
        r = subprocess.run(["java", "-Xmx256m", "-cp", cp, main, *args], input=stdin, capture_output=True,
                           text=True, timeout=180)
        assert r.returncode == 0, f"{main} {args}: {r.stdout}\n{r.stderr}"
        return r.stdout

    def props(name: str, lines: dict) -> str:
        p = tmp_path / f"{name}.properties"
        p.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return str(p)

    trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem)}
    admin = props("admin", {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", **trust,
                            "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                                'required username="admin" password="admin-secret";'})
    boot = secure.bootstrap("SASL_SSL")
    tool(config_command(), "--bootstrap-server", boot, "--command-config", admin, "--alter",
         "--add-config", "SCRAM-SHA-512=[iterations=8192,password=java-pw]", "--entity-type", "users",
         "--entity-name", "javauser")
    deadline = time.monotonic() + 15
    while "SCRAM-SHA-512=iterations=8192" not in (out := tool(
            config_command(), "--bootstrap-server", boot, "--command-config", admin,
            "--describe", "--entity-type", "users", "--entity-name", "javauser")):
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    create(secure.client(), "java-secure")
    user = props("javauser", {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **trust,
                              "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                                                  'required username="javauser" password="java-pw";'})
    lines = "".join(f"java line {i}\n" for i in range(100))
    tool("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", boot, "--topic", "java-secure",
         "--command-config", user, "--producer-property", "acks=all", stdin=lines)
    cert, key = pki.client_cert("javareader")
    keystore = tmp_path / "javareader.pem"
    keystore.write_bytes(pkcs8(key.read_bytes()) + cert.read_bytes())
    mtls = props("mtls", {"security.protocol": "SSL", **trust, "ssl.keystore.type": "PEM",
                          "ssl.keystore.location": str(keystore)})
    out = tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", secure.bootstrap("SSL"),
               "--topic", "java-secure", "--from-beginning", "--max-messages", "100",
               "--command-config", mtls, "--timeout-ms", "60000")
    assert out == lines


def _kgo_sasl_tests(tests: list[str], env: dict, tmp_path) -> None:
    """Runs franz-go's own tests (pkg/kgo v1.22.3, unchanged: test_franz_go.py builds the binary)
    and asserts each of `tests` ran and passed: franz-go skips them when their environment is
    missing, and a skip must not pass here."""
    from test_franz_go import kgo_test_binary
    cmd = [str(kgo_test_binary()), "-test.run", "^(" + "|".join(tests) + ")$", "-test.v", "-test.count", "1",
           "-test.timeout", "120s"]
    r = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, KGO_LOG_LEVEL="warn", **env),
                       capture_output=True, text=True, timeout=180)
    out = r.stdout + r.stderr
    print(out[-4000:])
    passed = set(re.findall(r"^--- PASS: (\S+)", out, re.M))
    assert r.returncode == 0 and passed == set(tests), f"want {tests} passed, got {sorted(passed)}:\n{out[-4000:]}"


def test_franz_go_scram_tests(secure, tmp_path):
    """franz-go's TestSCRAMAuth (a SCRAM-SHA-512 login, Ping, Metadata naming the brokers) and
    TestSCRAMAuthBadCredentials (an unknown user refused) over SASL_PLAINTEXT."""
    add_scram(secure.client(), "kgo", "kgo-pw", ScramMechanism.SCRAM_SHA_512)
    conf = secure.client("kgo", "SCRAM-SHA-512", password="kgo-pw")
    deadline = time.monotonic() + 15  # Kafka applies the credential from its metadata log
    while True:
        try:
            AdminClient(conf).list_topics(timeout=3)
            break
        except KafkaException:
            assert time.monotonic() < deadline, "the new SCRAM credential never logged in"
    boot = secure.bootstrap("SASL_PLAINTEXT")
    _kgo_sasl_tests(["TestSCRAMAuth", "TestSCRAMAuthBadCredentials"],
                    {"KGO_SEEDS": boot, "KGO_TEST_SCRAM_SEEDS": boot, "KGO_TEST_SCRAM": "kgo:kgo-pw:512"}, tmp_path)


def test_franz_go_oauthbearer_test(tmp_path, pki):
    """franz-go's TestOAuthAuth against a listener with OAUTHBEARER and no JWKS (Kafka's default
    unsecured validator, for tests): an unsigned token for `admin` logs in, an expired one is
    refused with SASL_AUTHENTICATION_FAILED naming invalid_token. Frieda only: Kafka's
    unsecured OAUTHBEARER needs its own JAAS login module settings per listener."""
    b = make_secure("frieda", tmp_path, pki, authorizer=False,
                    extra={"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER"})
    try:
        boot = b.bootstrap("SASL_PLAINTEXT")
        _kgo_sasl_tests(["TestOAuthAuth"], {"KGO_SEEDS": boot, "KGO_TEST_OAUTH_SEEDS": boot}, tmp_path)
    finally:
        b.stop()

