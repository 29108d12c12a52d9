"""kafka-python's own integration tests against Frieda: transactional (issue 13), version inference and admin (issue 14)

The tests are kafka-python's, unchanged: `test/integration/test_producer_integration.py` from the
sdist of the installed kafka-python version (PyPI, `pip download --no-binary`), run by pytest
against this broker through the suite's own switch for an external broker (`KAFKA_URI`; with
`KAFKA_VERSION` naming the protocol level the suite assumes). The ones selected:

- `test_transactional_producer_messages`: abort two records, commit two, read_committed sees only
  the committed ones;
- `test_transactional_producer_offsets`: `send_offsets_to_transaction` commits a group's offsets
  with the transaction (read back through the admin client);
- `test_kafka_version_infer` (test_consumer_integration.py): kafka-python infers the broker's
  version from ApiVersions, and must infer 4.3 (`KAFKA_VERSION`; ListOffsets v11, DescribeLogDirs
  v5).

Not selected: `test_idempotent_producer_max_in_flight[1,2,5]` and
`test_kafka_consumer_max_bytes_simple`, which fail now and then on a client race, not on the
broker: the consumer's bootstrap Metadata request (no topics) is in flight when the test calls
`subscribe()`; `subscribe()` asks for a metadata update, and the answer to the earlier request
clears that request (`ClusterMetadata.update_metadata` sets `_need_update` from the answer's own
retry topics), so the consumer sleeps `metadata_max_age_ms` (300 s) without ever asking for its
topic ("Updated partition assignment: []", then "Sleeping 299.99 for next Metadata refresh").
Frieda's sub-millisecond Metadata answer lands inside that window more often than Kafka's.

The sdist ships `test/integration/` but not two modules it imports: `test/__init__.py` and
`test/service.py` (the classes that spawn or name the broker under test). With `KAFKA_URI` set the
suite only constructs `ExternalService(host, port)`; `SERVICE_ADAPTER` below is this project's own
stand-in for it (written here, not taken from kafka-python), and a `SpawnedService` that refuses
to start, so nothing is run but the broker this test started.

The test asserts which of them ran and passed, so a skipped one cannot pass silently.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest

from helpers import create_topic

REPO_ROOT = Path(__file__).resolve().parents[2]
SELECTED = "transactional or kafka_version_infer"
EXPECTED = {
    "test_transactional_producer_messages",
    "test_transactional_producer_offsets",
    "test_kafka_version_infer",
}

SERVICE_ADAPTER = '''"""Frieda's stand-in for kafka-python's test/service.py (tests/integration/test_kafka_python_suite.py)."""


class ExternalService:
    """A broker started outside the suite: nothing to start, stop or wait for."""

    def __init__(self, host, port):
        self.host = host
        self.port = port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    """The suite must not spawn its own broker here: KAFKA_URI names Frieda."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("kafka-python's suite tried to spawn a broker; KAFKA_URI must be set")
'''


def kafka_python_sources() -> Path:
    """The unpacked sdist of the installed kafka-python (downloaded once into target/)."""
    version = metadata.version("kafka-python")
    out = REPO_ROOT / "target" / "kafka-python"
    src = out / f"kafka_python-{version}"
    if (src / "test" / "integration" / "test_producer_integration.py").exists():
        return src
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                        "-d", str(out), f"kafka-python=={version}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"pip download kafka-python=={version} failed:\n{r.stderr[-2000:]}"
    with tarfile.open(out / f"kafka_python-{version}.tar.gz") as tar:
        tar.extractall(out, filter="data")
    assert (src / "test" / "integration" / "test_producer_integration.py").exists(), f"no integration tests in {src}"
    return src


def add_service_adapter(src: Path) -> None:
    """Write the two modules the sdist lacks (see the module docstring)."""
    (src / "test" / "__init__.py").write_text("")
    (src / "test" / "service.py").write_text(SERVICE_ADAPTER)


def run_suite(src: Path, bootstrap: str, tmp_path: Path, files: list[str], selected: str) -> set[str]:
    """Runs kafka-python's pytest on `files` (`-k selected`) against `bootstrap`; asserts that
    nothing failed, errored or was skipped, and returns the names of the tests that passed."""
    # KAFKA_ROOT: the suite insists that a Kafka installation directory exists even when it uses
    # an external broker; an empty one shows that nothing of Kafka's is run.
    (tmp_path / "no-kafka-here").mkdir(exist_ok=True)
    env = {"KAFKA_URI": f"kafka://{bootstrap}", "KAFKA_VERSION": "4.3.0",
           "KAFKA_ROOT": str(tmp_path / "no-kafka-here"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-o", "addopts=",
           *[f"test/integration/{f}" for f in files], "-k", selected]
    r = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=560)
    out = r.stdout + r.stderr
    print(out[-5000:])
    others = re.findall(r"^(FAILED|ERROR|SKIPPED) \S+", out, re.M)
    assert r.returncode == 0 and not others, f"kafka-python's tests: exit {r.returncode}, {others}\n{out[-4000:]}"
    return set(re.findall(r"^PASSED \S+::(\S+)", out, re.M))


@pytest.mark.timeout(600)
def test_kafka_python_transactional_integration_tests(broker, tmp_path):
    src = kafka_python_sources()
    add_service_adapter(src)
    # The suite's own brokers run with num.partitions=4 (its kafka_broker_factory), and
    # test_transactional_producer_offsets commits an offset for partition 1 of the topic it
    # auto-creates: both Kafka and Frieda answer UNKNOWN_TOPIC_OR_PARTITION for a partition that
    # does not exist, which kafka-python retries for ever. So the topic is made as its CI has it.
    create_topic(broker.bootstrap, "transactional_test_topic", partitions=4)
    passed = run_suite(src, broker.bootstrap, tmp_path,
                       ["test_producer_integration.py", "test_consumer_integration.py"], SELECTED)
    assert passed == EXPECTED, f"passed {sorted(passed)}, want {sorted(EXPECTED)}"


ADMIN_EXPECTED = {
    "test_describe_configs_broker_resource_returns_configs",
    "test_describe_configs_topic_resource_returns_configs",
    "test_describe_configs_mixed_resources_returns_configs",
    "test_describe_configs_invalid_broker_id_raises",
    "test_describe_group_exists",
    "test_delete_groups",
    "test_delete_groups_with_errors",
    "test_delete_records",
    "test_delete_records_with_errors",
    "test_create_delete_topics",
    "test_create_partitions",
    "test_elect_leaders",
    "test_describe_log_dirs",
    "test_alter_replica_log_dirs",
    "test_describe_metadata_quorum",
    "test_alter_partition_reassignments",
    "test_list_partition_reassignments",
    "test_describe_topic_partitions",
    "test_describe_topic_partitions_pagination",
    "test_list_partition_offsets",
    "test_list_config_resources",
}


@pytest.mark.timeout(600)
def test_kafka_python_admin_integration_tests(make_own_broker, tmp_path):
    """kafka-python's own `test_admin_integration.py` (issue 14: the admin APIs through
    kafka-python's admin client): configs, groups, DeleteRecords, topics and partitions,
    ElectLeaders, DescribeLogDirs, AlterReplicaLogDirs, DescribeQuorum, reassignments,
    DescribeTopicPartitions with pagination, ListOffsets, ListConfigResources. The broker runs as
    the suite's own does (node id 0, which its CreatePartitions assignments name; 4 partitions per
    new topic). Not selected: `test_create_describe_delete_acls`, which needs an authorizer (the
    security issue)."""
    src = kafka_python_sources()
    add_service_adapter(src)
    b = make_own_broker('"node.id" = 0\n"num.partitions" = 4\n')
    passed = run_suite(src, b.bootstrap, tmp_path, ["test_admin_integration.py"], "not acls")
    assert passed == ADMIN_EXPECTED, f"passed {sorted(passed)}, want {sorted(ADMIN_EXPECTED)}"
