#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, installed by scripts/npm-tools.sh)
# against flowc's MCP client (python -m agentflow.mcp_conformance_client): every client scenario
# of the pinned suite, one at a time (the suite's parallel mode times clients out on 2 cores),
# then the pass figure.  Fails when fewer than 90 % of the scenarios pass, or when a scenario of
# initialize, tools_call, elicitation or authorization fails that is not listed below.
#
# Known failures, with the reason (a listed scenario that passes is reported, not failed):
#   auth/2025-03-26-oauth-metadata-backcompat — the suite's 0.1.x mock publishes authorization
#     server metadata whose issuer (<origin>/oauth) is not the origin it is served for; the SDK's
#     OAuth client refuses it as RFC 8414 §3.3 requires (the suite fixed its mock in its #359,
#     not yet released as a stable version).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/npm-tools.sh
export PATH="$PWD/.ci/node/node_modules/node/bin:$PATH"
suite=.ci/node/node_modules/.bin/conformance
client="$PWD/.venv/bin/python -m agentflow.mcp_conformance_client"
declare -A why=(
  [auth/2025-03-26-oauth-metadata-backcompat]="the suite's 0.1.x mock: its metadata issuer is not its URL (RFC 8414 §3.3); fixed upstream, unreleased"
)
known="${!why[*]}"
mapfile -t scenarios < <("$suite" list --client 2>/dev/null | sed -n 's/^  - \([^ ]*\).*/\1/p')
if [ "${#scenarios[@]}" -eq 0 ]; then
  mapfile -t scenarios < <("$suite" list 2>/dev/null | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi
if [ "${#scenarios[@]}" -eq 0 ]; then
  echo "conformance: could not list the client scenarios" >&2
  exit 1
fi
passed=0 failed=0 unexpected=() failing=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for s in "${scenarios[@]}"; do
  if "$suite" client --command "$client" --scenario "$s" --timeout 60000 >"$log" 2>&1; then
    passed=$((passed + 1))
    result=pass
    case " $known " in *" $s "*) result="pass (listed as a known failure: remove it)" ;; esac
  else
    failed=$((failed + 1))
    failing+=("$s")
    result=FAIL
    case " $known " in
      *" $s "*) result="fail (known: ${why[$s]})" ;;
      *) unexpected+=("$s"); sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "FAILURE|exited|Stderr|not available" | head -5 ;;
    esac
  fi
  printf '  %-48s %s\n' "$s" "$result"
done
total=$((passed + failed))
percent=$((passed * 1000 / total))
printf 'MCP conformance, client: %d of %d scenarios pass (%d.%d %%)\n' \
  "$passed" "$total" $((percent / 10)) $((percent % 10))
for s in "${failing[@]}"; do
  printf '  fails: %s — %s\n' "$s" "${why[$s]:-unexpected}"
done
if [ "${#unexpected[@]}" -gt 0 ]; then
  echo "unexpected failures: ${unexpected[*]}" >&2
  exit 1
fi
if [ $((passed * 10)) -lt $((total * 9)) ]; then
  echo "fewer than 90 % of the scenarios pass" >&2
  exit 1
fi
