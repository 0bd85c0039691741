#!/usr/bin/env bash
# Debian's bubblewrap: the OS boundary of every sandboxed run (generated code
# never runs without it). Idempotent; run by `make setup` (so by `make run`
# and `make test`).
set -euo pipefail
if command -v bwrap >/dev/null; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo -n"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q bubblewrap >/dev/null || {
  $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q bubblewrap >/dev/null
}
bwrap --version
