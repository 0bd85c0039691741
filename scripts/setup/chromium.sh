#!/usr/bin/env bash
# Debian's Chromium for the explorer's browser tests (Playwright drives it; no
# browser build is downloaded). Idempotent; run by `make test`.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo -n"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q chromium >/dev/null || {
  $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null
}
/usr/bin/chromium --version
