"""The principal of a TLS client certificate, against Apache Kafka 4.4.0 (issue 59 item 2).

Kafka's default principal builder names an mTLS client `User:` + the certificate subject as
Java's `X500Principal.getName()` writes it (RFC 2253: the RDNs last-first, special characters
escaped, attribute types Java has no keyword for written as an OID with the value's DER in hex),
then `ssl.principal.mapping.rules` (KIP-371) may rewrite it. An ACL names that exact string, so a
wrong principal is a denied client. For each certificate below the test grants the principal
written here, by hand, WRITE and DESCRIBE on a topic of its own and produces over the SSL
listener: with the principal right the record is acknowledged, with it wrong the producer gets
TOPIC_AUTHORIZATION_FAILED. The same test runs against Apache Kafka 4.4.0
(FRIEDA_SECURITY_VS_KAFKA=1, as scripts/test runs it), which proves the strings.
"""

from __future__ import annotations

import datetime

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, NewTopic,
                                   ResourcePatternType, ResourceType)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from security_env import Pki, brokers_under_test, make_secure

# One rule for subjects with OU=mapped (`alice@mapped`, lower-cased), then Kafka's default: the
# whole distinguished name. No backslash in it: the same text goes into server.properties.
RULES = "RULE:^CN=([^,]*),OU=mapped,O=.*$/$1@mapped/L,DEFAULT"


def attr(oid, value):
    return x509.NameAttribute(oid, value)


def rdn(*attrs):
    return x509.RelativeDistinguishedName(list(attrs))


def der_ia5_hex(s: str) -> str:
    """The DER of an IA5String (tag 0x16), as Java writes an attribute it has no keyword for."""
    b = s.encode("ascii")
    assert len(b) < 128
    return "16" + f"{len(b):02x}" + b.hex()


# (case, subject RDNs in certificate order (first = most significant), the principal Kafka makes)
CASES = [
    ("several-rdns",
     [rdn(attr(NameOID.COUNTRY_NAME, "DE")), rdn(attr(NameOID.STATE_OR_PROVINCE_NAME, "Berlin")),
      rdn(attr(NameOID.LOCALITY_NAME, "Berlin")), rdn(attr(NameOID.ORGANIZATION_NAME, "Example Org")),
      rdn(attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng")), rdn(attr(NameOID.COMMON_NAME, "alice"))],
     "User:CN=alice,OU=eng,O=Example Org,L=Berlin,ST=Berlin,C=DE"),
    ("escapes",
     [rdn(attr(NameOID.ORGANIZATION_NAME, "Example")),
      rdn(attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "#hash")),
      rdn(attr(NameOID.COMMON_NAME, 'doe, jane+x "q" <y>;z\\w'))],
     'User:CN=doe\\, jane\\+x \\"q\\" \\<y\\>\\;z\\\\w,OU=\\#hash,O=Example'),
    ("email-oid",
     [rdn(attr(NameOID.ORGANIZATION_NAME, "Example")), rdn(attr(NameOID.COMMON_NAME, "carol")),
      rdn(attr(NameOID.EMAIL_ADDRESS, "carol@example.com"))],
     f"User:1.2.840.113549.1.9.1=#{der_ia5_hex('carol@example.com')},CN=carol,O=Example"),
    ("domain-components",
     [rdn(attr(NameOID.DOMAIN_COMPONENT, "com")), rdn(attr(NameOID.DOMAIN_COMPONENT, "example")),
      rdn(attr(NameOID.USER_ID, "dave42")), rdn(attr(NameOID.COMMON_NAME, "dave"))],
     "User:CN=dave,UID=dave42,DC=example,DC=com"),
    ("non-ascii-and-spaces",
     [rdn(attr(NameOID.ORGANIZATION_NAME, " Spaced Org ")), rdn(attr(NameOID.COMMON_NAME, "José Müller"))],
     "User:CN=José Müller,O=\\ Spaced Org\\ "),
    ("mapped",
     [rdn(attr(NameOID.ORGANIZATION_NAME, "Example")),
      rdn(attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "mapped")), rdn(attr(NameOID.COMMON_NAME, "Erin"))],
     "User:erin@mapped"),
    ("mapped-falls-back",
     [rdn(attr(NameOID.ORGANIZATION_NAME, "Example")),
      rdn(attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "other")), rdn(attr(NameOID.COMMON_NAME, "Frank"))],
     "User:CN=Frank,OU=other,O=Example"),
]


def issue(pki: Pki, name: str, rdns: list) -> tuple[str, str]:
    """A client certificate with exactly these subject RDNs, signed by the test CA."""
    ca_key = serialization.load_pem_private_key(pki.ca.private_key_pem.bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(pki.ca.cert_pem.bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name(rdns))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = pki.dir / f"p-{name}.crt", pki.dir / f"p-{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=brokers_under_test())
def mapped_broker(request, tmp_path_factory, pki):
    b = make_secure(request.param, tmp_path_factory.mktemp(request.param), pki, authorizer=True,
                    extra={"ssl.principal.mapping.rules": RULES})
    yield b
    b.stop()


def produce_one(conf: dict, topic: str) -> KafkaError | None:
    p = Producer({**conf, "message.timeout.ms": 15000, "acks": "all"})
    result = []
    p.produce(topic, value=b"v", on_delivery=lambda err, msg: result.append(err))
    p.flush(30)
    assert result, "no delivery report"
    return result[0]


@pytest.mark.parametrize("case,rdns,principal", CASES, ids=[c[0] for c in CASES])
def test_the_principal_of_a_client_certificate_is_kafkas(mapped_broker, pki, case, rdns, principal):
    b = mapped_broker
    admin_conf = b.client("admin")
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(admin_conf)
    topic = f"mtls-{case}"
    for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        f.result(30)
    cert, key = issue(pki, case, rdns)
    client = b.client(protocol="SSL", **{"ssl.certificate.location": cert, "ssl.key.location": key})
    # Nothing granted yet: denied (so the grant below is what lets it in).
    err = produce_one(client, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, (b.kind, err)
    for op in (AclOperation.WRITE, AclOperation.DESCRIBE):
        binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*", op,
                             AclPermissionType.ALLOW)
        for f in admin.create_acls([binding]).values():
            f.result(30)
    err = produce_one(client, topic)
    assert err is None, f"{b.kind}: {principal!r} is not this certificate's principal ({err})"
