"""The time budget of the library's regular expressions (docs/reference/functions.md): `match`,
`matches` and `find_all` on pathological input end within their budget with `regex_timeout`.

Runs `(a+)+$` on 50,000 `a` (matches at once) and on 50,000 `a` followed by `!` (catastrophic
backtracking) through the evaluator, with the shipped budget (``REGEX_TIMEOUT_S``), and prints
for each call its wall-clock and CPU time and its outcome (value or run-time error code).

    .venv/bin/python bench/regex_budget.py

Exit status 0 when every pathological call ended with `regex_timeout` within budget + 0.5 s of
CPU, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import time

from agentflow.errors import RunError
from agentflow.grammar.parser import parse_expression
from agentflow.runtime.expressions import evaluate
from agentflow.runtime.functions import REGEX_TIMEOUT_S


def main() -> int:
    ok = True
    print(f"budget: {REGEX_TIMEOUT_S:g} s   load average: {os.getloadavg()[0]:.1f}")
    for label, text in (("50,000 a", "a" * 50_000), ("50,000 a + !", "a" * 50_000 + "!")):
        for fn in ("matches", "match", "find_all"):
            expr = parse_expression(f'{fn}(s, "(a+)+$")', "bench")
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                value = evaluate(expr, {"s": text})
                outcome = f"value {str(value)[:20]}…" if not isinstance(value, bool) else str(value)
                code = None
            except RunError as e:
                outcome, code = f"error[{e.code}]", e.code
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"{fn:9} on {label:13} {outcome:24} wall {wall:6.2f} s  cpu {cpu:6.2f} s")
            if text.endswith("!") and (code != "regex_timeout" or cpu > REGEX_TIMEOUT_S + 0.5):
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
