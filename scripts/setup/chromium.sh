#!/usr/bin/env bash
# Debian's Chromium for the explorer's browser tests (Playwright drives it; no
# browser build is downloaded). Idempotent; run by `make test`.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
source "$(dirname "$0")/apt.sh"
apt_install chromium "the trajectory explorer's browser tests"
/usr/bin/chromium --version
