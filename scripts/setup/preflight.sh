#!/usr/bin/env bash
# Before .venv is made (by make run and make test): the Python it is made from
# must be 3.11 with venv and pip, and memory below about 12 GB gets a warning.
# Usage: preflight.sh PYTHON
set -euo pipefail
python=${1:-python3}
if ! command -v "$python" >/dev/null; then
  echo "error: '$python' is not on PATH; evoflow needs Python 3.11" \
    "(install python3.11, then: make run PYTHON=python3.11)" >&2
  exit 1
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || {
  echo "error: '$python' does not run; evoflow needs Python 3.11" \
    "(install python3.11, then: make run PYTHON=python3.11)" >&2
  exit 1
}
if [ "$version" != 3.11 ]; then
  echo "error: $python is Python $version; evoflow needs Python 3.11 exactly" \
    "(pyproject.toml: >=3.11,<3.12). Install python3.11, then:" \
    "make run PYTHON=python3.11" >&2
  exit 1
fi
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "error: $python has no venv module with pip (Debian: apt-get install" \
    "python3.11-venv)" >&2
  exit 1
fi
kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
if [ "${kib:-0}" -gt 0 ] && [ "$kib" -lt $((12 * 1024 * 1024)) ]; then
  echo "warning: this machine has $((kib / 1024 / 1024)) GB of memory; two" \
    "embedded jobs at once peak at about 6-7 GB, so below 12 GB run one at a" \
    "time: make run CORES=1" >&2
fi
