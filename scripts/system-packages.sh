#!/usr/bin/env bash
# System packages the tests need beyond Python, from the distribution: headless Chromium and its
# driver (tests/e2e/test_report_browser.py drives them with Selenium) and PostgreSQL (the durable
# fleet test starts a throwaway server from the distribution's binaries: tests/support/postgres.py).
# scripts/test.sh runs it first: it does nothing when they are installed, installs them with
# apt-get when run as root, and otherwise stops with the command to run (a browser or fleet test
# never skips silently).
set -euo pipefail
have_postgres() { compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; }
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && have_postgres; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium, chromedriver or postgresql is missing; install them as root:" \
    "apt-get install -y chromium chromium-driver postgresql" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium chromium-driver postgresql
