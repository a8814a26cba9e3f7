#!/usr/bin/env bash
# System packages the tests need beyond Python, from the distribution: headless Chromium and its
# driver (tests/e2e/test_report_browser.py drives them with Selenium), node with npm (which
# scripts/npm-tools.sh uses to install node 22 and the npm MCP servers the MCP tests start),
# PostgreSQL (the durable fleet test starts a throwaway server from the distribution's binaries:
# tests/support/postgres.py) and Neovim (editors/vim and its LSP snippet, run headless by
# tests/editors/test_vim.py). scripts/test.sh runs it first: it does nothing when they are
# installed, installs them with apt-get when run as root, and otherwise stops with the command to
# run (a test never skips silently).
set -euo pipefail
have_postgres() { compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; }
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
have_postgres || missing+=(postgresql)
command -v nvim >/dev/null 2>&1 || missing+=(neovim)  # editors/vim: tests/editors/test_vim.py
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${missing[*]}; install them as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
