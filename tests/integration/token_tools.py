"""Kafka's delegation-token tool and Java clients logging in with a token, for the delegation
token tests (tests/integration/test_delegation_tokens.py and the cluster's
test_security_cluster.py). No fixtures here: the caller names the classpath."""

from __future__ import annotations

import re
import subprocess
import time


class Tools:
    """Kafka's tools (the jars of `classpath`) against one broker's SASL_PLAINTEXT listener."""

    def __init__(self, broker, tmp_path, classpath: str):
        self.broker, self.tmp, self.cp = broker, tmp_path, classpath
        self.boot = broker.bootstrap("SASL_PLAINTEXT")

    def props(self, name: str, jaas: str, mechanism: str) -> str:
        p = self.tmp / f"{name}.properties"
        p.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\nsasl.jaas.config={jaas}\n")
        return str(p)

    def user(self, name: str, password: str) -> str:
        return self.props(name, 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                f'username="{name}" password="{password}";', "PLAIN")

    def token(self, token_id: str, hmac: str, mechanism: str = "SCRAM-SHA-256") -> str:
        return self.props(f"token-{token_id}-{mechanism}",
                          'org.apache.kafka.common.security.scram.ScramLoginModule required '
                          f'username="{token_id}" password="{hmac}" tokenauth="true";', mechanism)

    def run(self, main: str, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess:
        r = subprocess.run(["java", "-Xmx256m", "-cp", self.cp, main, *args], input=stdin,
                           capture_output=True, text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, f"{main} {args}: {r.stdout}\n{r.stderr}"
        return r

    def tokens(self, config: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run("org.apache.kafka.tools.DelegationTokenCommand", "--bootstrap-server", self.boot,
                        "--command-config", config, *args, check=check)

    def create(self, config: str, *args: str) -> tuple[str, str]:
        """(token id, HMAC in base64) of a new token, from the tool's table."""
        out = self.tokens(config, "--create", *args).stdout
        rows = [line.split() for line in out.splitlines() if line and not line.startswith(("TOKENID", "Calling", "Created"))]
        rows = [r for r in rows if len(r) >= 2 and re.fullmatch(r"[A-Za-z0-9_-]{22}", r[0])]
        assert len(rows) == 1, out
        return rows[0][0], rows[0][1]

    def describe(self, config: str, *args: str) -> dict[str, list[str]]:
        """Token id -> its row of `--describe`."""
        out = self.tokens(config, "--describe", *args).stdout
        return {r[0]: r for r in (line.split() for line in out.splitlines())
                if r and re.fullmatch(r"[A-Za-z0-9_-]{22}", r[0])}

    def produce(self, config: str, topic: str, lines: list[str], check: bool = True) -> subprocess.CompletedProcess:
        return self.run("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", self.boot, "--topic", topic,
                        "--command-config", config, "--producer-property", "acks=all",
                        "--producer-property", "max.block.ms=15000",
                        stdin="".join(f"{line}\n" for line in lines), check=check)

    def consume(self, config: str, topic: str, n: int) -> list[str]:
        out = self.run("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", self.boot,
                       "--topic", topic, "--from-beginning", "--max-messages", str(n),
                       "--command-config", config, "--timeout-ms", "60000").stdout
        return out.splitlines()


def wait_login_refused(tools: Tools, config: str, timeout: float = 20) -> str:
    """Waits until a token login is refused (the change reaches the broker's credential cache);
    returns what the client said."""
    deadline = time.monotonic() + timeout
    while True:
        r = tools.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", tools.boot, "--list",
                      "--command-config", config, check=False, timeout=60)
        text = r.stdout + r.stderr
        if r.returncode != 0 and "Authentication failed" in text:
            return text
        assert time.monotonic() < deadline, f"the token still logs in:\n{text[-2000:]}"
        time.sleep(1)
