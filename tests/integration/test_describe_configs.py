"""DescribeConfigs as Kafka's own `kafka-configs` shows it (issue 29): the source of a value a
topic inherits from a dynamic broker config, and every synonym in precedence order.

Kafka layers a topic's value (KIP-226, `DynamicBrokerConfig`): the topic's own override
(DYNAMIC_TOPIC_CONFIG), then the broker-level synonym set for this broker
(DYNAMIC_BROKER_CONFIG), for the whole cluster (DYNAMIC_DEFAULT_BROKER_CONFIG), in the static
file (STATIC_BROKER_CONFIG), and Kafka's default (DEFAULT_CONFIG, under the broker-level name:
`log.retention.hours=168` for `retention.ms`). `kafka-configs --describe --all` prints them as
`name=value sensitive=false synonyms={SOURCE:key=value, ...}`.

The expectations are Kafka's: run against Apache Kafka with
`FRIEDA_BIN=tests/integration/tools/kafka_as_frieda.py FRIEDA_START_TIMEOUT=60`.
"""

from __future__ import annotations

import re
import subprocess

from confluent_kafka.admin import AdminClient, NewTopic

from security_env import KAFKA_LIB, config_command, ensure_kafka_lib

T = 30


def kafka_configs(bootstrap: str, *args: str) -> str:
    ensure_kafka_lib()
    # Kafka 4.4 moved the tool to kafka-tools (org.apache.kafka.tools); 4.3 has it in core.
    main = config_command()
    r = subprocess.run(["java", "-Xmx256m", "-cp", f"{KAFKA_LIB}/*", main,
                        "--bootstrap-server", bootstrap, *args],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"kafka-configs {' '.join(args)}: {r.returncode}\n{r.stdout}\n{r.stderr[-2000:]}"
    return r.stdout


LINE = re.compile(r"^\s+([\w.]+)=(.*?) sensitive=(?:true|false) synonyms=\{(.*)\}$")


def described(out: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (value, ["SOURCE:key=value", ...])."""
    got = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            got[m[1]] = (m[2], [s for s in m[3].split(", ") if s])
    return got


def test_inherited_values_name_their_source_and_every_synonym(own_broker, topic_name):
    b = own_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    node = str(next(iter(admin.list_topics(timeout=T).brokers)))
    topic = topic_name()
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(T)

    kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-default",
                  "--add-config", "log.retention.bytes=1000000000,log.segment.bytes=104857600")
    kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", node,
                  "--add-config", "log.retention.bytes=2000000000")

    got = described(kafka_configs(b, "--describe", "--all", "--entity-type", "topics", "--entity-name", topic))
    # Kafka's broker-level log.retention.ms has no default (log.retention.hours does): no
    # DEFAULT_CONFIG synonym, as for segment.ms; the throttled-replica lists have no broker synonym.
    assert got["retention.ms"] == ("3600000", ["DYNAMIC_TOPIC_CONFIG:retention.ms=3600000"]), got["retention.ms"]
    assert got["segment.ms"] == ("604800000", []), got["segment.ms"]
    assert got["follower.replication.throttled.replicas"] == ("", []), got["follower.replication.throttled.replicas"]
    assert got["retention.bytes"] == ("2000000000", [
        "DYNAMIC_BROKER_CONFIG:log.retention.bytes=2000000000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1000000000",
        "DEFAULT_CONFIG:log.retention.bytes=-1"]), got["retention.bytes"]
    assert got["segment.bytes"] == ("104857600", [
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=104857600",
        "DEFAULT_CONFIG:log.segment.bytes=1073741824"]), got["segment.bytes"]
    assert got["cleanup.policy"] == ("delete", ["DEFAULT_CONFIG:log.cleanup.policy=delete"]), got["cleanup.policy"]

    # Without --all the tool shows the topic's own overrides only (source DYNAMIC_TOPIC_CONFIG).
    own = described(kafka_configs(b, "--describe", "--entity-type", "topics", "--entity-name", topic))
    assert set(own) == {"retention.ms"}, own

    # The broker: its dynamic values, each over the cluster default.
    got = described(kafka_configs(b, "--describe", "--entity-type", "brokers", "--entity-name", node))
    assert got["log.retention.bytes"] == ("2000000000", [
        "DYNAMIC_BROKER_CONFIG:log.retention.bytes=2000000000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1000000000",
        "DEFAULT_CONFIG:log.retention.bytes=-1"]), got
    got = described(kafka_configs(b, "--describe", "--entity-type", "brokers", "--entity-default"))
    assert got["log.segment.bytes"] == ("104857600",
                                        ["DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=104857600"]), got

    # Removing the per-broker value hands the topic back to the cluster default.
    kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", node,
                  "--delete-config", "log.retention.bytes")
    got = described(kafka_configs(b, "--describe", "--all", "--entity-type", "topics", "--entity-name", topic))
    assert got["retention.bytes"] == ("1000000000", [
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1000000000",
        "DEFAULT_CONFIG:log.retention.bytes=-1"]), got["retention.bytes"]
