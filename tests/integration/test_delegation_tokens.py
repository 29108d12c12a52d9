"""Delegation tokens (KIP-48) as a user meets them: Kafka's own `kafka-delegation-tokens` tool
creates, describes, renews and expires tokens, and the Java clients log in with one (SCRAM,
user name = token id, password = the HMAC, `tokenauth=true`) to produce and consume as the
token's owner.

Every test runs against Frieda; with ``FRIEDA_SECURITY_VS_KAFKA=1`` the same tests run against
Apache Kafka 4.4.0 configured the same way (security_env.py), to prove the expectations.
"""

from __future__ import annotations

import re
import time

import pytest

from security_env import KAFKA_LIB, Pki, brokers_under_test, ensure_kafka_lib, make_secure
from token_tools import Tools, wait_login_refused

SECRET = "frieda-token-secret"
TOKEN_SETTINGS = {
    "delegation.token.secret.key": SECRET,
    "delegation.token.expiry.check.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=brokers_under_test(slow=True))
def secure(request, tmp_path_factory, pki):
    ensure_kafka_lib()
    b = make_secure(request.param, tmp_path_factory.mktemp(request.param), pki, authorizer=False,
                    extra=TOKEN_SETTINGS)
    yield b
    b.stop()


def test_token_lifecycle_with_kafkas_tool_and_java_clients(secure, tmp_path):
    """alice creates a token renewable by bob; a producer and a consumer logged in with it
    (both SCRAM mechanisms) write and read as alice; the token cannot ask for tokens; bob
    renews it, admin may not; alice expires it, after which it neither
    logs in nor renews."""
    t = Tools(secure, tmp_path, f"{KAFKA_LIB}/*")
    alice, bob, admin = t.user("alice", "alice-secret"), t.user("bob", "bob-secret"), t.user("admin", "admin-secret")
    token_id, hmac = t.create(alice, "--max-life-time-period", "-1", "--renewer-principal", "User:bob")

    # The tool without --owner-principal sends an empty owner list, which Kafka answers with
    # no tokens (KafkaApis: ownersListEmpty); owners named, the tokens they own or may renew.
    assert t.describe(alice) == {}
    described = t.describe(alice, "--owner-principal", "User:alice")
    assert token_id in described, described
    row = described[token_id]
    assert row[1] == hmac and "User:alice" in row and "[User:bob]" in " ".join(row), row
    assert token_id in t.describe(bob, "--owner-principal", "User:bob"), "a renewer sees the token"
    assert token_id not in t.describe(alice, "--owner-principal", "User:nobody")

    lines = [f"token line {i}" for i in range(30)]
    as_token = t.token(token_id, hmac)
    deadline = time.monotonic() + 20  # Kafka's broker takes the token from its metadata log
    while (r := t.produce(as_token, "token-topic", lines, check=False)).returncode != 0:
        assert time.monotonic() < deadline, r.stdout + r.stderr
        time.sleep(1)
    assert t.consume(t.token(token_id, hmac, "SCRAM-SHA-512"), "token-topic", len(lines)) == lines

    # A connection authenticated with a token may not ask for tokens (KIP-48).
    r = t.tokens(as_token, "--describe", check=False)
    assert r.returncode != 0 and "DelegationTokenDisabledException" not in r.stderr
    assert "Delegation Token authentication is not allowed" in r.stdout + r.stderr or \
           "DelegationTokenRequestNotAllowed" in r.stdout + r.stderr or \
           "not allowed" in (r.stdout + r.stderr).lower(), r.stdout + r.stderr

    # bob (a renewer) renews; admin (neither owner nor renewer) may not.
    r = t.tokens(bob, "--renew", "--renew-time-period", "-1", "--hmac", hmac)
    assert "Completed renew operation" in r.stdout, r.stdout
    r = t.tokens(admin, "--renew", "--renew-time-period", "-1", "--hmac", hmac, check=False)
    assert r.returncode != 0 and "DelegationTokenOwnerMismatch" in r.stdout + r.stderr, r.stdout + r.stderr

    r = t.tokens(alice, "--expire", "--expiry-time-period", "-1", "--hmac", hmac)
    assert "Completed expire operation" in r.stdout, r.stdout
    assert token_id not in t.describe(alice, "--owner-principal", "User:alice")
    wait_login_refused(t, as_token)
    r = t.tokens(bob, "--renew", "--renew-time-period", "-1", "--hmac", hmac, check=False)
    assert r.returncode != 0 and "DelegationTokenNotFound" in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_token_past_its_maximum_lifetime_stops_logging_in_and_is_swept(secure, tmp_path):
    """A token asked with a 4 s maximum lifetime logs in at first; after it the login is refused
    and the sweep (every second here) removes it from describe."""
    t = Tools(secure, tmp_path, f"{KAFKA_LIB}/*")
    alice = t.user("alice", "alice-secret")
    token_id, hmac = t.create(alice, "--max-life-time-period", "4000")
    as_token = t.token(token_id, hmac)
    r = t.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", t.boot, "--list",
              "--command-config", as_token, check=False, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    time.sleep(4.5)
    deadline = time.monotonic() + 15
    while token_id in t.describe(alice, "--owner-principal", "User:alice"):
        assert time.monotonic() < deadline, "the expired token was never swept"
        time.sleep(1)
    wait_login_refused(t, as_token)


def test_tokens_disabled_without_a_secret_key(tmp_path, pki):
    """Without delegation.token.secret.key: DELEGATION_TOKEN_AUTH_DISABLED (the tool reports
    DelegationTokenDisabledException). Frieda only: one broker start less."""
    ensure_kafka_lib()
    b = make_secure("frieda", tmp_path, pki, authorizer=False)
    try:
        t = Tools(b, tmp_path, f"{KAFKA_LIB}/*")
        r = t.tokens(t.user("alice", "alice-secret"), "--create", "--max-life-time-period", "-1", check=False)
        assert r.returncode != 0 and "DelegationTokenDisabledException" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        b.stop()


@pytest.mark.parametrize("kind", brokers_under_test(slow=True))
def test_tokens_for_another_owner_need_create_tokens(kind, tmp_path, pki):
    """With an authorizer (KIP-373): alice may not create a token owned by bob
    (DELEGATION_TOKEN_AUTHORIZATION_FAILED); with CREATE_TOKENS on User:bob she may, and the
    token then belongs to bob with alice as its requester; carol sees it only with DESCRIBE_TOKENS
    on User:bob."""
    ensure_kafka_lib()
    b = make_secure(kind, tmp_path, pki, authorizer=True, extra=TOKEN_SETTINGS)
    try:
        t = Tools(b, tmp_path, f"{KAFKA_LIB}/*")
        alice, admin = t.user("alice", "alice-secret"), t.user("admin", "admin-secret")
        r = t.tokens(alice, "--create", "--max-life-time-period", "-1", "--owner-principal", "User:bob", check=False)
        assert r.returncode != 0 and "DelegationTokenAuthorizationException" in r.stdout + r.stderr, \
            r.stdout + r.stderr
        acls = ["org.apache.kafka.tools.AclCommand", "--bootstrap-server", t.boot, "--command-config", admin, "--add"]
        t.run(*acls, "--allow-principal", "User:alice", "--operation", "CreateTokens", "--user-principal", "User:bob")
        deadline = time.monotonic() + 15
        while (r := t.tokens(alice, "--create", "--max-life-time-period", "-1", "--owner-principal", "User:bob",
                             check=False)).returncode != 0:
            assert time.monotonic() < deadline, r.stdout + r.stderr
            time.sleep(1)
        token_id = re.search(r"tokenId : (\S+)", r.stdout).group(1)
        row = t.describe(admin, "--owner-principal", "User:bob")[token_id]
        assert row[2:4] == ["User:bob", "User:alice"], row
        bob = t.user("bob", "bob-secret")
        assert token_id in t.describe(bob, "--owner-principal", "User:bob")
        assert token_id in t.describe(alice, "--owner-principal", "User:bob"), "the requester sees it"
        # carol (a SCRAM user) is neither owner, requester nor renewer: she sees it only with
        # DESCRIBE_TOKENS on User:bob.
        from test_security import add_scram
        add_scram(b.client(), "carol", "carol-secret")
        carol = t.props("carol", 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                 'username="carol" password="carol-secret";', "SCRAM-SHA-256")
        deadline = time.monotonic() + 15
        while (r := t.tokens(carol, "--describe", "--owner-principal", "User:bob", check=False)).returncode != 0:
            assert time.monotonic() < deadline, r.stdout + r.stderr  # the credential reaches Kafka's broker
            time.sleep(1)
        assert token_id not in r.stdout, r.stdout
        t.run(*acls, "--allow-principal", "User:carol", "--operation", "DescribeTokens", "--user-principal", "User:bob")
        deadline = time.monotonic() + 15
        while token_id not in t.describe(carol, "--owner-principal", "User:bob"):
            assert time.monotonic() < deadline, "DESCRIBE_TOKENS on the owner did not show the token"
            time.sleep(1)
    finally:
        b.stop()
