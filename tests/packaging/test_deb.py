"""The Debian package (cargo-deb) and its systemd unit (docs/packaging.md).

- ``cargo deb --no-build --fast -p frieda`` packs the release binary (``target/release/frieda``,
  built before: scripts/test's ``cargo build --release``); ``--fast`` only compresses less. Its
  control fields, files, modes and owners, the conffile, the maintainer scripts (``sh -n``, and
  what they do) and the debconf template are checked; the packaged binary is the one built
  (same GNU build id), stripped, its debug info in the ``-dbgsym`` package.
- The unpacked binary serves with the unpacked ``/etc/frieda/server.properties``, moved only to
  free loopback ports and a temporary ``log.dirs`` (``--override``, every other setting as
  packaged, which ``frieda check`` proves), with the unit's ``UMask=0027``: confluent-kafka
  produces with acks=all and reads every record back byte for byte; SIGTERM, exit 0 within 30 s.
- The same broker under ``strace -f``: every system call it makes is allowed by the unit's
  ``SystemCallFilter=`` (expanded by ``systemd-analyze syscall-filter``), every socket family by
  ``RestrictAddressFamilies=``, and it creates, writes, renames and deletes files only inside
  ``log.dirs`` (``ProtectSystem=strict`` leaves it nothing else), so the hardened unit runs it.
- ``systemd-analyze verify`` of the unit inside the unpacked tree (with this host's systemd
  units beside it, for the targets it names): no complaint; ``systemd-analyze security
  --offline`` rates its exposure at most 1.5 (1.1 when written); its hardening directives are
  there with the expected values.

Nothing is installed on this machine: the package is only unpacked into temporary directories.
Needs cargo-deb (``cargo install cargo-deb --locked``), dpkg-deb, strace, binutils (readelf)
and systemd-analyze; scripts/test installs them. A missing tool fails the test, except a
missing systemd-analyze, which skips (with a reason) only the checks that need it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGING = REPO_ROOT / "packaging" / "debian"
_target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
TARGET_DIR = _target if _target.is_absolute() else REPO_ROOT / _target
BUILT_BIN = TARGET_DIR / "release" / "frieda"  # what cargo-deb packs (its `target/release/` asset)

UNIT_PATH = "usr/lib/systemd/system/frieda.service"
CONF_PATH = "etc/frieda/server.properties"
DATA_DIR = "/var/lib/frieda"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
MAX_EXPOSURE = 1.5

# every file the package installs: mode string as `dpkg-deb --contents` prints it
EXPECTED_FILES = {
    "./usr/bin/frieda": "-rwxr-xr-x",
    "./etc/frieda/server.properties": "-rw-r--r--",
    "./usr/lib/systemd/system/frieda.service": "-rw-r--r--",
    "./usr/share/doc/frieda/copyright": "-rw-r--r--",
    "./usr/share/doc/frieda/README.md": "-rw-r--r--",
    "./usr/share/doc/frieda/packaging.md": "-rw-r--r--",
}
# hardening the unit must keep (key -> value; several values of a key are joined by " | ")
EXPECTED_UNIT = {
    "Type": "simple",
    "ExecStart": "/usr/bin/frieda serve --config /etc/frieda/server.properties",
    "User": "frieda",
    "Group": "frieda",
    "Restart": "on-failure",
    "KillSignal": "SIGTERM",
    "LimitNOFILE": "1048576",
    "StateDirectory": "frieda",
    "StateDirectoryMode": "0750",
    "UMask": "0027",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ReadWritePaths": DATA_DIR,
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "PrivateUsers": "yes",
    "PrivateMounts": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "SystemCallFilter": "@system-service | ~@privileged @resources | sched_setscheduler setpriority",
}
# the settings the tests move (ports, data dir); every other one stays as packaged
MOVED_SETTINGS = {"listeners", "advertised.listeners", "controller.quorum.bootstrap.servers",
                  "controller.quorum.voters", "log.dirs", "log.dir"}


def run(cmd: list, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([str(c) for c in cmd], timeout=timeout, **kw)


def need(tool: str, how: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} not found: {how}")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def build_id(path: Path) -> str:
    out = run([need("readelf", "install binutils"), "-n", path]).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"no GNU build id in {path}:\n{out}"
    return m.group(1)


def parse_unit(text: str) -> dict[str, list[str]]:
    """[Service] key -> values in order (systemd allows repeating keys)."""
    section, out = None, {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return out


def properties(text: str) -> dict[str, str]:
    """`frieda check`'s output: key=value lines."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


# ---------------------------------------------------------------- the package, built once
@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    need("cargo", "install the Rust toolchain")
    r = run(["cargo", "deb", "--version"], cwd=REPO_ROOT)
    if r.returncode != 0:
        pytest.fail(f"cargo-deb not installed: cargo install cargo-deb --locked (scripts/test installs it)\n{r.stderr}")
    need("dpkg-deb", "this test needs Debian's dpkg")
    assert BUILT_BIN.is_file(), f"{BUILT_BIN} not built: cargo build --release"
    out = tmp_path_factory.mktemp("deb")
    r = run(["cargo", "deb", "--no-build", "--fast", "-p", "frieda", "--output", out],
            timeout=170, cwd=REPO_ROOT)
    assert r.returncode == 0, f"cargo deb failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    debs = sorted(out.glob("frieda_*.deb"))
    ddebs = sorted(out.glob("frieda-dbgsym_*.ddeb"))
    assert len(debs) == 1 and len(ddebs) == 1, f"want one .deb and one -dbgsym .ddeb: {list(out.iterdir())}"
    root = out / "root"
    control = out / "control"
    for cmd in (["dpkg-deb", "-x", debs[0], root], ["dpkg-deb", "-e", debs[0], control]):
        r = run(cmd)
        assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return {"deb": debs[0], "ddeb": ddebs[0], "root": root, "control": control}


# ---------------------------------------------------------------- control, files, conffiles
def test_control_fields_files_and_conffile(pkg):
    fields = {}
    for name in ("Package", "Version", "Architecture", "Section", "Priority", "Maintainer", "Depends"):
        fields[name] = run(["dpkg-deb", "-f", pkg["deb"], name]).stdout.strip()
    version = run([BUILT_BIN, "--version"]).stdout.split()[1]
    assert fields["Package"] == "frieda", fields
    assert fields["Version"] == f"{version}-1", fields
    assert fields["Section"] == "net" and fields["Priority"] == "optional", fields
    assert fields["Maintainer"], fields
    for dep in ("libc6", "adduser", "debconf"):
        assert dep in fields["Depends"], f"Depends lacks {dep}: {fields['Depends']}"

    listing = run(["dpkg-deb", "--contents", pkg["deb"]]).stdout.splitlines()
    files = {}
    for line in listing:
        mode, owner, _size, _date, _time, path = line.split(None, 5)
        assert owner == "0/0", f"{path} owned by {owner}, want root (0/0)"
        if not mode.startswith("d"):
            files[path] = mode
        else:
            assert mode == "drwxr-xr-x", line
            # the data directory is made by postinst (owner frieda), never shipped root-owned
            assert not path.startswith("./var/"), line
    assert files == EXPECTED_FILES, f"package files differ:\n{listing}"

    info = run(["dpkg-deb", "--info", pkg["deb"]]).stdout
    for member in ("conffiles", "control", "postinst", "postrm", "prerm", "templates"):
        assert re.search(rf"\s{member}\s", info), f"no {member} in the control archive:\n{info}"
    conffiles = (pkg["control"] / "conffiles").read_text().split()
    assert conffiles == ["/" + CONF_PATH], conffiles

    # packaged as written in packaging/debian/
    root = pkg["root"]
    assert (root / CONF_PATH).read_bytes() == (PACKAGING / "server.properties").read_bytes()
    assert (root / UNIT_PATH).read_bytes() == (PACKAGING / "frieda.service").read_bytes()

    # the binary built, stripped; its debug info in frieda-dbgsym, found by build id
    packaged = root / "usr/bin/frieda"
    bid = build_id(packaged)
    assert bid == build_id(BUILT_BIN), "the package carries another binary than target/release/frieda"
    sections = run(["readelf", "-S", "--wide", packaged]).stdout
    assert ".text" in sections and ".debug_info" not in sections, "packaged binary not stripped"
    ddeb = run(["dpkg-deb", "--contents", pkg["ddeb"]]).stdout
    assert f"./usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" in ddeb, ddeb
    assert "frieda (= " in run(["dpkg-deb", "-f", pkg["ddeb"], "Recommends"]).stdout


# ---------------------------------------------------------------- maintainer scripts
def test_maintainer_scripts(pkg):
    control = pkg["control"]
    for name in ("postinst", "postrm", "prerm"):
        script = control / name
        assert script.stat().st_mode & 0o777 == 0o755, f"{name} mode {oct(script.stat().st_mode)}"
        assert script.read_text().startswith("#!/bin/sh\n"), name
        r = run(["sh", "-n", script])
        assert r.returncode == 0, f"sh -n {name}: {r.stderr}"
        if shutil.which("bash"):
            r = run(["bash", "-n", script])
            assert r.returncode == 0, f"bash -n {name}: {r.stderr}"
    postinst = (control / "postinst").read_text()
    # the system user and group, home = data dir, not created by adduser
    assert re.search(r"adduser --system --quiet --group --home /var/lib/frieda --no-create-home frieda", postinst)
    assert "install -d -o frieda -g frieda -m 0750 /var/lib/frieda" in postinst
    assert "dpkg-statoverride --list /var/lib/frieda" in postinst
    # cargo-deb's systemd fragments: not enabled or started on install, restarted on upgrade if running
    assert "deb-systemd-helper update-state frieda.service" in postinst
    assert "deb-systemd-invoke try-restart frieda.service" in postinst
    assert "deb-systemd-invoke start" not in postinst
    assert "#DEBHELPER#" not in postinst
    prerm = (control / "prerm").read_text()
    assert "deb-systemd-invoke stop frieda.service" in prerm
    postrm = (control / "postrm").read_text()
    assert "#DEBHELPER#" not in postrm
    assert "deb-systemd-helper purge frieda.service" in postrm
    # purge deletes the data only when the debconf question says so (default: keep)
    purge = postrm[postrm.index('if [ "$1" = purge ]; then\n    purge_data=false'):]
    assert "db_get frieda/purge_data" in purge and 'if [ "$purge_data" = true ]' in purge
    assert "rm -rf /var/lib/frieda" in purge
    assert postrm.count("rm -rf") == 1, "postrm deletes something else"
    templates = (control / "templates").read_text()
    assert re.search(r"^Template: frieda/purge_data\nType: boolean\nDefault: false\n", templates, re.M), templates


# ---------------------------------------------------------------- the packaged broker
class PackagedBroker:
    """`<unpacked>/usr/bin/frieda serve --config <unpacked>/etc/frieda/server.properties`, moved
    to free loopback ports and a temporary log.dirs; optionally under `strace -f`."""

    def __init__(self, root: Path, work: Path, strace: str | None = None):
        self.root, self.work = root, work
        self.port, self.cport = free_port(), free_port()
        self.data = work / "data"
        self.cwd = work / "cwd"
        self.cwd.mkdir(parents=True)
        self.stderr_path = work / "frieda.stderr"
        self.trace = work / "strace.txt"
        self.metrics_port = free_port()
        self.binary = root / "usr/bin/frieda"
        self.config = root / CONF_PATH
        self.strace = strace
        self.proc: subprocess.Popen | None = None

    def overrides(self) -> list[str]:
        return ["--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.cport}",
                "--override", f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "--override", f"controller.quorum.bootstrap.servers=127.0.0.1:{self.cport}",
                "--override", f"log.dirs={self.data}"]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, extra: list[str] = ()) -> None:
        cmd = [str(self.binary), "serve", "--config", str(self.config), *self.overrides(), *extra]
        if self.strace:
            # -y: file descriptors with their paths, so that openat(dirfd, "name") resolves
            cmd = [self.strace, "-f", "-qq", "-y", "-o", str(self.trace), *cmd]
        env = {"PATH": "/usr/bin:/bin", "RUST_LOG": "info", "RUST_BACKTRACE": "1"}
        with open(self.stderr_path, "wb") as err:
            # the unit's UMask=0027
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         env=env, cwd=self.cwd, umask=0o027)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise AssertionError(f"broker exited with {rc} during start-up\n{self.tail()}")
            if port_open(self.port):
                return
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"broker did not listen on {self.bootstrap} within {START_TIMEOUT_S}s\n{self.tail()}")

    def broker_pid(self) -> int:
        if not self.strace:
            return self.proc.pid
        first = self.trace.read_text().split("\n", 1)[0]
        m = re.match(r"(\d+)\s+execve\(", first)
        assert m, f"unexpected first strace line: {first!r}"
        return int(m.group(1))

    def stop(self) -> float:
        """SIGTERM to the broker; asserts exit 0 within STOP_TIMEOUT_S (strace exits with the
        broker's status). Returns the seconds it took."""
        t0 = time.monotonic()
        os.kill(self.broker_pid(), signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"broker did not exit within {STOP_TIMEOUT_S}s of SIGTERM\n{self.tail()}") from None
        assert rc == 0, f"broker exited with {rc} after SIGTERM (want 0)\n{self.tail()}"
        text = self.stderr_path.read_text(errors="replace")
        assert "panicked at" not in text, self.tail()
        return time.monotonic() - t0

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.broker_pid(), signal.SIGKILL)
            except (OSError, AssertionError):
                pass
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no stderr)"
        return f"----- {self.stderr_path} (last {min(n, len(lines))} lines) -----\n" + "\n".join(lines[-n:])


def round_trip(bootstrap: str, n: int = 30) -> None:
    """A 2-partition topic; n keyed records with headers produced with acks=all (idempotent);
    each read back at its acknowledged offset, byte for byte; a group commits its offsets."""
    topic = f"pkg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)],
                        operation_timeout=30, request_timeout=30)[topic].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        t = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == 2 and all(
                p.leader >= 0 for p in t.partitions.values()):
            break
        assert time.monotonic() < deadline, f"topic {topic} has no leaders: {t}"
        time.sleep(0.2)

    now = int(time.time() * 1000)
    sent = [(i % 2, b"key-%d" % i, bytes(range(256)) * (i % 5) + b"value %d" % i,
             [("h", b"\x00\xff%d" % i)], now + i) for i in range(n)]
    acked, errors = {}, []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 30000, "log_level": 3})

    def report(rec):
        def cb(err, msg):
            if err is not None:
                errors.append(err)
            else:
                acked[(msg.partition(), msg.offset())] = rec
        return cb

    for rec in sent:
        part, key, value, headers, ts = rec
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=part,
                         on_delivery=report(rec))
    assert producer.flush(30) == 0, "records still in flight after 30 s"
    assert not errors and len(acked) == n, f"delivery errors {errors}, {len(acked)} of {n} acknowledged"

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"pkg-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "auto.offset.reset": "error", "log_level": 3})
    got = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            got[(m.partition(), m.offset())] = m
        consumer.commit(offsets=[TopicPartition(topic, p, 1 + max(o for (q, o) in acked if q == p))
                                 for p in (0, 1)], asynchronous=False)
    finally:
        consumer.close()
    assert set(got) == set(acked), f"read {sorted(got)} != acknowledged {sorted(acked)}"
    for where, (part, key, value, headers, ts) in acked.items():
        m = got[where]
        assert (m.key(), m.value(), m.headers(), m.timestamp()) == (key, value, headers, (1, ts)), where


def test_packaged_broker_serves_with_the_packaged_config(pkg, tmp_path):
    root = pkg["root"]
    b = PackagedBroker(root, tmp_path)
    # the packaged config as it is: valid, no setting Frieda ignores or does not know
    r = run([b.binary, "check", "--config", b.config])
    assert r.returncode == 0 and "WARN" not in r.stderr and "ERROR" not in r.stderr, r.stderr
    packaged = properties(r.stdout)
    assert packaged["log.dirs"] == DATA_DIR
    assert packaged["process.roles"] == "broker,controller"
    assert packaged["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert packaged["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert packaged["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert packaged["node.id"] == "1"
    assert not b.data.exists()
    # the test's overrides move the ports and the data dir, nothing else
    r = run([b.binary, "check", "--config", b.config, *b.overrides()])
    assert r.returncode == 0, r.stderr
    moved = properties(r.stdout)
    changed = {k for k in packaged.keys() | moved.keys() if packaged.get(k) != moved.get(k)}
    assert changed <= MOVED_SETTINGS, f"the overrides changed more than ports and log.dirs: {changed}"
    assert not b.data.exists(), "frieda check created the data directory"

    b.start()
    try:
        round_trip(b.bootstrap)
        took = b.stop()
    finally:
        b.kill()
    assert took < STOP_TIMEOUT_S
    text = b.stderr_path.read_text(errors="replace")
    assert "no meaning in Frieda" not in text, text[-3000:]
    assert (b.data / "meta.properties").is_file(), "log.dirs is the data directory"
    # UMask=0027: nothing the broker made is readable by others
    for p in [b.data, *b.data.rglob("*")]:
        assert p.stat().st_mode & 0o007 == 0, f"{p} has mode {oct(p.stat().st_mode)}"


# ---------------------------------------------------------------- the unit's sandbox
def syscall_groups(analyze: str) -> dict[str, list[str]]:
    out = run([analyze, "syscall-filter"]).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not line[0].isspace() and s.startswith("@"):
            cur = groups.setdefault(s, [])
        elif cur is not None:
            cur.append(s)
    assert "@system-service" in groups, out[:2000]
    return groups


def expand(groups: dict, items: list[str], seen: set | None = None) -> set[str]:
    seen = set() if seen is None else seen
    out = set()
    for item in items:
        if item.startswith("@"):
            assert item in groups, f"unknown syscall group {item}"
            if item not in seen:
                seen.add(item)
                out |= expand(groups, groups[item], seen)
        else:
            out.add(item)
    return out


def unit_syscall_filter(unit: dict, groups: dict) -> tuple[set[str], set[str]]:
    """(allowed, denied) by the unit's SystemCallFilter= lines as systemd applies them, in order:
    the first line is an allow list, then each ~ line removes from it and each further allow line
    adds to it again (systemd.exec(5), SystemCallFilter=). `denied`: what is refused in the end
    of what some ~ line named."""
    allowed, named = None, set()
    for value in unit["Service.SystemCallFilter"]:
        if value.startswith("~"):
            assert allowed is not None, "SystemCallFilter starts with a deny list"
            calls = expand(groups, value[1:].split())
            named |= calls
            allowed -= calls
        else:
            allowed = (allowed or set()) | expand(groups, value.split())
    assert allowed is not None, "SystemCallFilter has no allow list"
    return allowed, named - allowed


WRITE_CALLS = ("mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir",
               "link", "linkat", "symlink", "symlinkat", "truncate", "creat", "mknod", "mknodat",
               "chmod", "fchmodat", "chown", "fchownat", "lchown", "utimensat")


def written_paths(trace: str, cwd: Path) -> set[str]:
    """Paths the traced processes opened for writing, created, renamed, deleted or changed."""
    out = set()
    call = re.compile(r"^\d+\s+([a-z0-9_]+)\((.*)$")
    # with -y a directory fd reads `5</dir>` and the cwd `AT_FDCWD</dir>`
    arg = re.compile(r'(?:(?:AT_FDCWD|\d+)(?:<([^>]*)>)?,\s*)?"([^"]*)"')
    for line in trace.splitlines():
        m = call.match(line)
        if not m:
            continue
        name, args = m.groups()
        if name in ("open", "openat", "openat2"):
            if not re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args):
                continue
        elif name not in WRITE_CALLS:
            continue
        for a in arg.finditer(args):
            dirpath, path = a.groups()
            if not path.startswith("/"):
                path = os.path.join(dirpath or str(cwd), path)
            out.add(os.path.normpath(path))
    return out


def test_broker_runs_inside_the_units_sandbox(pkg, tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed: the unit's SystemCallFilter cannot be expanded "
                    "(apt install systemd)")
    strace = need("strace", "apt install strace (scripts/test installs it)")
    unit = parse_unit((pkg["root"] / UNIT_PATH).read_text())
    allowed, denied = unit_syscall_filter(unit, syscall_groups(analyze))
    families = set(unit["Service.RestrictAddressFamilies"][0].split())

    b = PackagedBroker(pkg["root"], tmp_path, strace=strace)
    # the metrics endpoint too: its process_* metrics read /proc
    b.start(["--override", f"metrics.listen=127.0.0.1:{b.metrics_port}"])
    try:
        round_trip(b.bootstrap, n=20)
        body = urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=10).read()
        assert b"process_open_fds" in body
        b.stop()
    finally:
        b.kill()
    trace = b.trace.read_text(errors="replace")

    used = set(re.findall(r"^\d+\s+([a-z0-9_]+)\(", trace, re.M))
    assert {"execve", "openat", "epoll_wait"} <= used, f"strace saw too little: {sorted(used)}"
    refused = sorted(used - allowed)
    assert not refused, (f"system calls the unit's SystemCallFilter refuses (EPERM): {refused} "
                         f"({sorted(used & denied)} explicitly denied)")

    socket_families = set(re.findall(r"^\d+\s+socket(?:pair)?\((AF_[A-Z0-9]+)", trace, re.M))
    assert socket_families, "no socket() seen"
    assert socket_families <= families, f"socket families outside RestrictAddressFamilies: {socket_families - families}"

    data = os.path.normpath(b.data)
    outside = sorted(p for p in written_paths(trace, b.cwd) if p != data and not p.startswith(data + "/"))
    assert not outside, f"the broker writes outside log.dirs (read-only under ProtectSystem=strict): {outside}"


# ---------------------------------------------------------------- the unit file
def test_unit_hardening_directives(pkg):
    text = (pkg["root"] / UNIT_PATH).read_text()
    unit = parse_unit(text)
    for key, want in EXPECTED_UNIT.items():
        got = " | ".join(unit.get(f"Service.{key}", ["<missing>"]))
        assert got == want, f"{key}={got}, want {want}"
    assert "Service.TimeoutStopSec" in unit, "no TimeoutStopSec"
    assert unit["Install.WantedBy"] == ["multi-user.target"]
    # consistent with the packaged config: log.dirs is the state directory the unit may write
    conf = (pkg["root"] / CONF_PATH).read_text()
    assert re.search(r"^log\.dirs=/var/lib/frieda$", conf, re.M), "packaged log.dirs moved"
    assert "/var/lib/" + unit["Service.StateDirectory"][0] == DATA_DIR
    # frieda has no sd_notify: Type=notify would time out the start
    assert unit["Service.Type"] == ["simple"]


def test_systemd_analyze_verify_and_security(pkg, tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed (apt install systemd): the unit is not verified")
    # the unpacked tree as the root, with this host's units for the targets frieda.service names
    vroot = tmp_path / "root"
    shutil.copytree(pkg["root"], vroot, symlinks=True)
    host_units = Path("/usr/lib/systemd/system")
    assert host_units.is_dir(), "systemd-analyze without /usr/lib/systemd/system"
    shutil.copytree(host_units, vroot / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    assert (vroot / UNIT_PATH).read_bytes() == (pkg["root"] / UNIT_PATH).read_bytes()

    r = run([analyze, "verify", f"--root={vroot}", "frieda.service"], timeout=60)
    lines = (r.stdout + r.stderr).splitlines()
    problems = [line for line in lines if "frieda" in line]
    assert r.returncode == 0 and not problems, f"systemd-analyze verify: rc {r.returncode}\n" + "\n".join(lines)

    r = run([analyze, "security", "--offline=yes", f"--root={vroot}", "--no-pager", "frieda.service"], timeout=60)
    m = re.search(r"Overall exposure level for frieda\.service: ([0-9.]+)", r.stdout)
    assert m, f"systemd-analyze security: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    exposure = float(m.group(1))
    assert exposure <= MAX_EXPOSURE, f"exposure {exposure} > {MAX_EXPOSURE}:\n{r.stdout}"
