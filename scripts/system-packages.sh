#!/usr/bin/env bash
# System packages the tests need beyond Python: headless Chromium and its driver, from the
# distribution (tests/e2e/test_report_browser.py drives them with Selenium). scripts/test.sh runs
# it first: it does nothing when they are installed, installs them with apt-get when run as root,
# and otherwise stops with the command to run (a browser test never skips silently).
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium and chromedriver are missing; install them as root: apt-get install -y chromium chromium-driver" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium chromium-driver
