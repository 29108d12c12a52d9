"""The README's quickstart, run as written (only the broker address is this test's broker):
the kcat commands must print `identical` twice, the Python snippet must print every line of the
corpus at consecutive offsets. Also the metrics blocks of docs/metrics.md and the runbook's
`frieda admin` block of docs/operations.md, as written. A block is found by its marker comment
(`<!-- marker ... -->`) in README.md or any page under docs/, wherever it moves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
GPL3 = Path("/usr/share/common-licenses/GPL-3")


def doc_pages() -> list[Path]:
    """README.md and the documentation site's pages."""
    return [README, *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def marked_page(marker: str) -> Path:
    """The one page (README.md or docs/) holding `<!-- marker ... -->`."""
    found = [p for p in doc_pages() if f"<!-- {marker}" in p.read_text()]
    assert len(found) == 1, f"{marker}: expected on one page of README.md and docs/, found on {found}"
    return found[0]


def block(marker: str, lang: str) -> str:
    """The fenced code block right after `<!-- marker ... -->`, wherever it is."""
    text = marked_page(marker).read_text()
    m = re.search(re.escape(f"<!-- {marker}") + r"[^\n]*-->\n```" + lang + r"\n(.*?)\n```", text, re.S)
    assert m, f"no {marker} block right after its marker"
    return m.group(1)


def at(code: str, broker) -> str:
    assert "127.0.0.1:9092" in code
    return code.replace("127.0.0.1:9092", broker.bootstrap)


@pytest.mark.skipif(not GPL3.exists(), reason="/usr/share/common-licenses/GPL-3 missing")
def test_kcat_quickstart_prints_identical(broker, tmp_path):
    code = at(block("quickstart-kcat", "bash"), broker)
    code = code.replace("/tmp/gpl3.out", str(tmp_path / "gpl3.out")).replace("/tmp/lines.out", str(tmp_path / "lines.out"))
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("identical") == 2, p.stdout + p.stderr
    assert (tmp_path / "gpl3.out").read_bytes() == GPL3.read_bytes()


@pytest.mark.skipif(not GPL3.exists(), reason="/usr/share/common-licenses/GPL-3 missing")
def test_python_quickstart_reads_every_line(broker, tmp_path):
    code = at(block("quickstart-python", "python"), broker)
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = GPL3.read_bytes().decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    got = p.stdout.split("\n")[: len(lines)]
    assert got == [f"{i} {line}" for i, line in enumerate(lines)]


def test_metrics_scrape_as_written(make_own_broker, topic_name):
    """The metrics page's blocks (docs/metrics.md): its curl against a broker started with its
    config line, after a produce, prints the Produce counter and the topic's log end offset."""
    from confluent_kafka import Producer

    from conftest import free_port

    text = marked_page("metrics-curl").read_text()
    assert "printf '\"metrics.listen\" = \"127.0.0.1:9644\"\\n' > frieda-metrics.toml" in text
    port = free_port()
    broker = make_own_broker(f'"metrics.listen" = "127.0.0.1:{port}"\n')
    topic = topic_name()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        p.produce(topic, b"v%d" % i)
    assert p.flush(30) == 0
    code = block("metrics-curl", "bash").replace("127.0.0.1:9644", f"127.0.0.1:{port}")
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r'^kafka_network_requests_total\{request="Produce",version="\d+"\} [1-9]', out.stdout, re.M), out.stdout
    assert f'kafka_log_log_log_end_offset{{topic="{topic}",partition="0"}} 5' in out.stdout, out.stdout


def test_runbook_admin_block_as_written(broker):
    """The runbook's `frieda admin` block (docs/operations.md), every command as written (the
    address is this test's broker): each exits 0, the records come back with their keys, the reset
    group shows its lag."""
    from test_admin_cli import admin_bin

    code = block("runbook-admin", "sh")
    assert code.count("frieda admin ") >= 10
    code = code.replace("frieda admin ", f"{admin_bin()} admin --bootstrap-server {broker.bootstrap} ")
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "o-1\tfirst order" in p.stdout and "o-2\tsecond order" in p.stdout, p.stdout
    assert "retention.ms=604800000" in p.stdout, p.stdout
    lags = re.findall(r"^billing\s+orders\s+(\d+)\s+0\s+(\d+)\s+(\d+)", p.stdout, re.M)
    assert sum(int(lag) for _, _, lag in lags) == 2 and len(lags) == 6, p.stdout
    assert "Deleted topic orders." in p.stdout, p.stdout
