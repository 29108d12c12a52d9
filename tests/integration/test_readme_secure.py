"""The "A secure broker" section (docs/security.md, which the README links), run as written: its
openssl commands and config, the broker started with that config, its Python admin snippet, and
then what the text promises
(alice writes `orders` and nothing else, bob logs in with SCRAM-SHA-512, an SSL client is its
certificate's subject). Only the directory and the ports are this test's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from conftest import free_port, frieda_bin, port_open
from test_readme import block, marked_page

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")


def section() -> str:
    """The section holding the `secure-setup` marker, from its heading to the next one."""
    text = marked_page("secure-setup").read_text()
    start = text.index("## A secure broker")
    return text[start:text.index("\n## ", start + 5)]


def fenced(lang: str, nth: int = 0) -> str:
    return re.findall(r"```" + lang + r"\n(.*?)\n```", section(), re.S)[nth]


def produce_once(conf: dict, topic: str) -> str:
    """Produces one record with the client settings `conf` (acks=all); returns "ok", the
    delivery error's name, or "timeout"."""
    p = Producer({**conf, "message.timeout.ms": 5000, "acks": "all"})
    out = []
    p.produce(topic, b"x", on_delivery=lambda e, m: out.append(e and e.name()))
    p.flush(15)
    p.purge()
    p.flush(1)
    return "ok" if out[:1] == [None] else (out[0] if out else "timeout")


def test_secure_broker_section_as_written(tmp_path):
    d = tmp_path / "tls"
    sasl_port, ssl_port = free_port(), free_port()

    def here(code: str) -> str:
        return (code.replace("/tmp/frieda-tls", str(d)).replace("127.0.0.1:9093", f"127.0.0.1:{sasl_port}")
                .replace("127.0.0.1:9094", f"127.0.0.1:{ssl_port}"))

    setup = here(fenced("bash"))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", setup], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    log = open(tmp_path / "frieda.stderr", "wb")
    proc = subprocess.Popen([str(frieda_bin()), "serve", "--config", str(d / "secure.toml")],
                            stdout=log, stderr=log, env=dict(os.environ, RUST_LOG="info"))
    try:
        deadline = time.monotonic() + 15
        while not (port_open("127.0.0.1", sasl_port) and port_open("127.0.0.1", ssl_port)):
            assert proc.poll() is None, (tmp_path / "frieda.stderr").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        script = tmp_path / "admin.py"
        script.write_text(here(fenced("python")))
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr

        def produce(user: str, password: str, mech: str, topic: str) -> str:
            return produce_once({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_SSL",
                                 "ssl.ca.location": str(d / "ca.pem"), "sasl.mechanisms": mech,
                                 "sasl.username": user, "sasl.password": password}, topic)

        assert produce("alice", "alice-secret", "PLAIN", "orders") == "ok"
        assert produce("alice", "alice-secret", "PLAIN", "payments") == "TOPIC_AUTHORIZATION_FAILED"
        assert produce("bob", "bob-secret", "SCRAM-SHA-512", "orders") == "TOPIC_AUTHORIZATION_FAILED"
        assert "SASL authentication failed" not in (tmp_path / "frieda.stderr").read_text()

        # The runbook's admin.properties (docs/operations.md) logs in as this broker's super user
        # and lists the ACL just made; its SCRAM lines log bob in (issue 59: it had admin log in
        # with SCRAM-SHA-512, which admin has no credential for, so every command was refused).
        props = re.search(r"cat > admin.properties <<'END'\n(.*?)\nEND", block("runbook-acls", "sh"), re.S)[1]
        props = props.replace("/etc/frieda/ca.pem", str(d / "ca.pem"))
        (tmp_path / "admin.properties").write_text(props + "\n")
        fa = [str(frieda_bin()), "admin", "--bootstrap-server", f"127.0.0.1:{sasl_port}", "--command-config"]
        r = subprocess.run(fa + [str(tmp_path / "admin.properties"), "acl", "list", "--topic", "orders"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "principal=User:alice" in r.stdout, r.stdout + r.stderr
        scram = dict(line.split("=", 1) for line in block("runbook-scram", "properties").splitlines())
        assert scram["sasl.mechanism"] == "SCRAM-SHA-512", scram
        bob = [line for line in props.splitlines() if line.split("=", 1)[0] not in scram]
        (tmp_path / "bob.properties").write_text("\n".join(bob + [f"{k}={v}" for k, v in scram.items()]) + "\n")
        r = subprocess.run(fa + [str(tmp_path / "bob.properties"), "topic", "list"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "orders" not in r.stdout, r.stdout + r.stderr  # logged in; no ACL: sees nothing

        # The client certificate block: a v3 certificate logs in on the SSL listener as its
        # subject; a v1 one (the same request signed without extensions) is refused with the
        # broker's log line saying why.
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", here(fenced("bash", 1))],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        v = subprocess.run(["openssl", "x509", "-in", str(d / "alice.crt"), "-noout", "-text"],
                           capture_output=True, text=True, check=True).stdout
        assert "Version: 3" in v

        def ssl_metadata(cert: str) -> str:
            from confluent_kafka.admin import AdminClient
            a = AdminClient({"bootstrap.servers": f"127.0.0.1:{ssl_port}", "security.protocol": "SSL",
                             "ssl.ca.location": str(d / "ca.pem"), "ssl.certificate.location": cert,
                             "ssl.key.location": str(d / "alice.key"), "log_level": 0})
            try:
                a.list_topics(timeout=5)
                return "ok"
            except Exception as e:  # noqa: BLE001 - the client's failure is the result
                return str(e)

        assert ssl_metadata(str(d / "alice.crt")) == "ok"

        # The principal the page names for that certificate is the one ACLs match (issue 59:
        # it named `User:CN=alice,O=example`, and an ACL written that way was denied).
        principal = re.search(r"and is `(User:[^`]+)`", section())[1]
        from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                           ResourcePatternType, ResourceType)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_SSL",
                             "ssl.ca.location": str(d / "ca.pem"), "sasl.mechanisms": "PLAIN",
                             "sasl.username": "admin", "sasl.password": "admin-secret"})
        acl = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, principal, "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
        admin.create_acls([acl])[acl].result(30)

        def ssl_produce(topic: str) -> str:
            return produce_once({"bootstrap.servers": f"127.0.0.1:{ssl_port}", "security.protocol": "SSL",
                                 "ssl.ca.location": str(d / "ca.pem"),
                                 "ssl.certificate.location": str(d / "alice.crt"),
                                 "ssl.key.location": str(d / "alice.key")}, topic)

        assert ssl_produce("orders") == "ok", principal
        assert ssl_produce("payments") == "TOPIC_AUTHORIZATION_FAILED"

        # `frieda admin` pointed at the TLS port without its settings says so (issue 59).
        r = subprocess.run([str(frieda_bin()), "admin", "--bootstrap-server", f"127.0.0.1:{ssl_port}",
                            "cluster", "status"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "answered with TLS" in r.stderr, r.stdout + r.stderr
        subprocess.run(["openssl", "x509", "-req", "-in", str(d / "alice.csr"), "-CA", str(d / "ca.pem"),
                        "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "1", "-out", str(d / "v1.crt")],
                       capture_output=True, check=True)
        if "Version: 1" in subprocess.run(["openssl", "x509", "-in", str(d / "v1.crt"), "-noout", "-text"],
                                          capture_output=True, text=True).stdout:
            assert ssl_metadata(str(d / "v1.crt")) != "ok"
            deadline = time.monotonic() + 10
            while "the certificate is X.509 v1" not in (tmp_path / "frieda.stderr").read_text():
                assert time.monotonic() < deadline, (tmp_path / "frieda.stderr").read_text()[-3000:]
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
