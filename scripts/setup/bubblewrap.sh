#!/usr/bin/env bash
# Debian's bubblewrap: the OS boundary of every sandboxed run (generated code
# never runs without it). Only SAGE's code verifier and Helmsman run generated
# code, so only `make test` and `make sandbox` run this; the embedded default
# (`make run`, Fed-SE) needs no sandbox. Idempotent.
set -euo pipefail
if command -v bwrap >/dev/null; then exit 0; fi
source "$(dirname "$0")/apt.sh"
apt_install bubblewrap "the sandbox of SAGE's and Helmsman's generated code"
bwrap --version
