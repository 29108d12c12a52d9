"""Secure brokers for the security tests: Frieda, or Apache Kafka 4.4.0 with the same settings.

Both get the same listeners (SASL_PLAINTEXT, SASL_SSL and SSL with client certificates), the
same users (PLAIN users from a JAAS line; SCRAM credentials added through the Admin API) and,
when asked, Kafka's StandardAuthorizer with ``super.users=User:admin``. The ACL tests run
against both to prove their expectations (``FRIEDA_SECURITY_VS_KAFKA=1``, or the Kafka jars at
``$KAFKA_LIB`` / ``target/kafka-4.4.0/lib``).

Certificates come from ``trustme``: one CA, a broker certificate for 127.0.0.1/localhost, client
certificates with subjects such as ``CN=alice,OU=eng,O=Frieda Tests``, and a second, untrusted
CA for negative tests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import trustme

from conftest import REPO_ROOT, frieda_bin, free_port, port_open

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
KAFKA_LIB = Path(os.environ.get("KAFKA_LIB", Path(__file__).resolve().parents[2] / "target" / "kafka-4.4.0" / "lib"))
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass
class Pki:
    """PEM files of a test PKI in ``dir``."""

    dir: Path
    ca: trustme.CA = field(default_factory=trustme.CA)
    untrusted: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_pem = self.dir / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_pem))
        self.broker_pem = self.dir / "broker.pem"
        self.write_broker_cert(self.broker_pem)

    def write_broker_cert(self, path: Path, ca: trustme.CA | None = None) -> None:
        """Private key (PKCS#8) and chain in one PEM file, Kafka's PEM keystore layout."""
        leaf = (ca or self.ca).issue_cert("127.0.0.1", "localhost")
        with open(path, "wb") as f:
            f.write(pkcs8(leaf.private_key_pem.bytes()))
            for blob in leaf.cert_chain_pems:
                f.write(blob.bytes())

    def client_cert(self, name: str, ca: trustme.CA | None = None) -> tuple[Path, Path]:
        """(certificate chain, key) for subject CN=<name>,OU=eng,O=Frieda Tests."""
        leaf = (ca or self.ca).issue_cert(
            f"{name}@example.com", common_name=name,
            organization_name="Frieda Tests", organization_unit_name="eng")
        cert, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        with open(cert, "wb") as f:
            for blob in leaf.cert_chain_pems:
                f.write(blob.bytes())
        leaf.private_key_pem.write_to_path(str(key))
        return cert, key


def pkcs8(pem: bytes) -> bytes:
    """The key as unencrypted PKCS#8 PEM (Kafka's PEM keystore reads only PKCS#8)."""
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class SecureBroker:
    """Listeners: SASL_PLAINTEXT, SASL_SSL, SSL (client certificates required)."""

    kind = "?"

    def __init__(self, tmp: Path, pki: Pki, authorizer: bool, extra: dict[str, str] | None = None):
        self.tmp, self.pki, self.authorizer = tmp, pki, authorizer
        self.extra = extra or {}
        self.ports = {"SASL_PLAINTEXT": free_port(), "SASL_SSL": free_port(), "SSL": free_port()}
        self.proc: subprocess.Popen | None = None

    def bootstrap(self, protocol: str = "SASL_PLAINTEXT") -> str:
        return f"127.0.0.1:{self.ports[protocol]}"

    # -- client configs (librdkafka names) ------------------------------------------------
    def client(self, user: str = "admin", mechanism: str = "PLAIN", protocol: str = "SASL_PLAINTEXT",
               password: str | None = None, **extra) -> dict:
        conf = {
            "bootstrap.servers": self.bootstrap(protocol),
            "security.protocol": protocol,
        }
        if protocol.startswith("SASL"):
            conf.update({"sasl.mechanisms": mechanism, "sasl.username": user,
                         "sasl.password": USERS.get(user, "") if password is None else password})
        if protocol.endswith("SSL"):
            conf["ssl.ca.location"] = str(self.pki.ca_pem)
        conf.update(extra)
        return conf

    def wait_listening(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.kind} exited with {self.proc.returncode}\n{self.log_tail()}")
            if all(port_open("127.0.0.1", p, 0.2) for p in self.ports.values()):
                return
            time.sleep(0.1)
        tail = self.log_tail()
        self.stop()  # never leave a half-started broker behind
        raise AssertionError(f"{self.kind} did not listen within {timeout}s\n{tail}")

    def log_tail(self, n: int = 60) -> str:
        p = self.log_path
        if not p.exists():
            return ""
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class SecureFrieda(SecureBroker):
    kind = "frieda"

    def __init__(self, tmp: Path, pki: Pki, authorizer: bool, extra: dict[str, str] | None = None):
        super().__init__(tmp, pki, authorizer, extra)
        self.data = tmp / "frieda-data"
        self.log_path = tmp / "frieda.stderr"
        self.config_path = tmp / "frieda-secure.toml"
        settings = {
            "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in self.ports.items()),
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
            "data.dir": str(self.data),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.broker_pem),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca_pem),
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "connection.failed.authentication.delay.ms": "100",
        }
        if authorizer:
            settings.update({"authorizer.class.name": AUTHORIZER, "super.users": "User:admin"})
        settings.update(self.extra)
        self.config_path.write_text("".join(f'"{k}" = {toml_str(v)}\n' for k, v in settings.items()))
        self.start()

    def start(self) -> None:
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"))
        with open(self.log_path, "ab") as err:
            self.proc = subprocess.Popen([str(frieda_bin()), "serve", "--config", str(self.config_path)],
                                         stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env)
        self.wait_listening(15)


def toml_str(v: str) -> str:
    return "'" + v + "'" if "'" not in v and '"' in v else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kafka_available() -> bool:
    return any(KAFKA_LIB.glob("kafka_2.13-*.jar"))


def config_command() -> str:
    """kafka-configs' main class in the jars of KAFKA_LIB (it moved to the tools module in 4.4)."""
    moved = any(KAFKA_LIB.glob("kafka-tools-4.4*.jar")) or any(KAFKA_LIB.glob("kafka-tools-5*.jar"))
    return "org.apache.kafka.tools.ConfigCommand" if moved else "kafka.admin.ConfigCommand"


def ensure_kafka_lib() -> None:
    """Fetches Kafka 4.4.0's jars from Maven Central (../shared/kafka-baseline/pom.xml) if absent."""
    if kafka_available():
        return
    pom = REPO_ROOT.parent / "shared" / "kafka-baseline" / "pom.xml"
    subprocess.run(["mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies", "-Dkafka.version=4.4.0",
                    f"-Dkafka.lib.dir={KAFKA_LIB}"], check=True, timeout=600)


class SecureKafka(SecureBroker):
    """Apache Kafka 4.4.0 (KRaft, one combined node) with the same listeners, users and ACL
    settings. PEM stores as Frieda's (KIP-651)."""

    kind = "kafka"

    def __init__(self, tmp: Path, pki: Pki, authorizer: bool, extra: dict[str, str] | None = None):
        super().__init__(tmp, pki, authorizer, extra)
        ensure_kafka_lib()
        self.controller_port = free_port()
        self.data = tmp / "kafka-data"
        self.log_path = tmp / "kafka.out"
        conf = tmp / "server.properties"
        listeners = ",".join(f"{n}://127.0.0.1:{p}" for n, p in self.ports.items())
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"{listeners},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "listener.security.protocol.map":
                "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.broker_pem),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca_pem),
            "listener.name.ssl.ssl.client.auth": "required",
            "log.dirs": str(self.data),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
        }
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        for listener in ("sasl_plaintext", "sasl_ssl"):
            for mech in ("scram-sha-256", "scram-sha-512"):
                lines[f"listener.name.{listener}.{mech}.sasl.jaas.config"] = scram
        if authorizer:
            # The controller listener is PLAINTEXT: its principal is ANONYMOUS (no client can
            # reach it for anything but the quorum).
            lines.update({"authorizer.class.name": AUTHORIZER,
                          "super.users": "User:admin;User:ANONYMOUS"})
        lines.update(self.extra)
        conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        cp = f"{KAFKA_LIB}/*"
        log4j = tmp / "log4j2.properties"
        log4j.write_text("rootLogger.level = WARN\nappender.c.type = Console\nappender.c.name = C\n"
                         "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = [%d] %p %m (%c)%n\n"
                         "rootLogger.appenderRef.c.ref = C\n")
        jvm = ["java", "-Xmx512m", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
        cluster_id = subprocess.run(jvm + ["kafka.tools.StorageTool", "random-uuid"], check=True,
                                    capture_output=True, text=True, timeout=120).stdout.strip()
        subprocess.run(jvm + ["kafka.tools.StorageTool", "format", "--standalone", "-t", cluster_id,
                              "-c", str(conf)], check=True, capture_output=True, timeout=120)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(jvm + ["kafka.Kafka", str(conf)], stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=out)
        self.wait_listening(90)


def make_secure(kind: str, tmp: Path, pki: Pki, authorizer: bool, extra: dict[str, str] | None = None) -> SecureBroker:
    cls = {"frieda": SecureFrieda, "kafka": SecureKafka}[kind]
    return cls(tmp, pki, authorizer, extra)


def brokers_under_test(slow: bool = False) -> list[str]:
    """Frieda always; Kafka too with FRIEDA_SECURITY_VS_KAFKA=1 (scripts/test sets it). A
    `slow` comparison (tens of seconds against Kafka: quotas, delegation tokens, the client
    security matrix) runs against Kafka only with FRIEDA_KAFKA_COMPARE_SLOW=1 as well, which
    scripts/compare-kafka sets, so that scripts/test keeps within its time budget."""
    kinds = ["frieda"]
    if os.environ.get("FRIEDA_SECURITY_VS_KAFKA", "0") == "1" and (
            not slow or os.environ.get("FRIEDA_KAFKA_COMPARE_SLOW", "0") == "1"):
        kinds.append("kafka")
    return kinds
