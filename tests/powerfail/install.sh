#!/usr/bin/env bash
# Installs what the power-loss tests need, on a fresh Debian machine as root; does nothing that is
# already there (idempotent): FUSE 3 (fusermount3, libfuse3), the tools to build pyfuse3 from its
# source distribution, and pyfuse3 + trio (plus the clients the tests drive) in the repository's
# virtualenv .venv (created if missing).
#
#   tests/powerfail/install.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

APT_UPDATED=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing $* and no apt-get: install them by hand" >&2
    return 1
  fi
  if [ "$APT_UPDATED" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
pkg-config --exists fuse3 2>/dev/null || missing+=(libfuse3-dev pkg-config)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  if ! python3 -m venv .venv 2>/dev/null; then
    rm -rf .venv
    apt_install python3-venv
    python3 -m venv .venv
  fi
fi
# pyfuse3 compiles against the interpreter's headers (Debian's python3 has them in python3-dev)
if ! .venv/bin/python -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  apt_install python3-dev
fi
if ! .venv/bin/python -c 'import pyfuse3, trio, confluent_kafka, pytest, pytest_timeout, crc32c' 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check pyfuse3 trio confluent-kafka pytest pytest-timeout crc32c
fi
[ -e /dev/fuse ] || echo "note: /dev/fuse is missing: the syncfs tests will skip" >&2
