"""Figures of issue 30's acceptance (`flowc eval`, docs/reference/evals.md), measured against the
scripted model server on loopback (the suite asserts them in tests/evals/test_eval_acceptance.py):

- requests sent when a dataset has a bad row (want 0) and where the diagnostics point;
- the exact scorer's pass rate on 50 cases with a model right on 40 (want 80 %);
- with --repeat 3 and a model that flips on 5 cases: those cases' variance and pass^3;
- requests of an unchanged rerun (want 0) and of a rerun after one prompt changed (want only the
  cases that prompt reaches);
- the cases `--baseline` lists, and the exit code of `--fail-on-regression` (1, then 0).

    .venv/bin/python bench/eval_figures.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from click.testing import CliRunner  # noqa: E402
from support.chat_server import TEST_API_KEY, ChatServer, answer  # noqa: E402

from agentflow import api  # noqa: E402
from agentflow.cli import main as flowc  # noqa: E402
from agentflow.runtime.config import load_config  # noqa: E402

FLOW = """\
input { n: int, note: text }
type Parity { label: "even" | "odd" }
use agent "classifier" as classifier

stage classify -> Parity {
  if input.n > 40 {
    return agent(classifier) { task "BIG: is ${input.n} even or odd?" tools none expect Parity }
  }
  return agent(classifier) { task "Is ${input.n} even or odd?" tools none expect Parity }
}

eval "parity" {
  dataset "cases.jsonl"
  score exact = output.label == expected.label
}
"""


def _n(request: dict) -> int:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return int(re.search(r"is (\d+) even", user, re.I).group(1))


def _label(n: int, right: bool = True) -> str:
    return ("even" if n % 2 == 0 else "odd") if right else ("odd" if n % 2 == 0 else "even")


def main() -> int:
    with tempfile.TemporaryDirectory() as base, ChatServer() as server:
        work = Path(base)
        server.write_config(work, retries=0)
        config = load_config(work / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})
        flow = work / "parity.flow"
        flow.write_text(FLOW, encoding="utf-8")
        rows = [
            {"name": f"n{n}", "input": {"n": n, "note": "x"}, "expected": {"label": _label(n)}}
            for n in range(1, 51)
        ]
        bad = [dict(r) for r in rows]
        bad[6] = {"name": "n7", "input": {"n": 7}, "expected": {"label": "odd"}}
        bad[9] = {"name": "n10", "input": {"n": 10, "note": "x"}, "expected": {"label": 10}}
        cases = work / "cases.jsonl"
        cases.write_text("\n".join(json.dumps(r) for r in bad) + "\n", encoding="utf-8")
        server.script(lambda r: answer({"label": _label(_n(r))}))
        report = api.evaluate(flow, config=config, cache=None)
        where = [f"{d.span.line}:{d.span.column} {d.code}" for d in report.errors]
        print(f"bad rows: {len(server.requests)} requests; diagnostics at {', '.join(where)}")

        cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        server.script(lambda r: answer({"label": _label(n := _n(r), n % 5 != 0)}))
        t0 = time.perf_counter()
        report = api.evaluate(flow, config=config, cache=None, concurrency=8)
        took = time.perf_counter() - t0
        print(
            f"50 cases, right on 40: exact {report.pass_rate('exact'):.0%} "
            f"({report.requests} requests, {took:.2f} s at -j 8)"
        )

        calls: dict[int, int] = {}
        flips = {3, 6, 9, 12, 15}

        def flipping(request: dict):
            n = _n(request)
            calls[n] = calls.get(n, 0) + 1
            return answer({"label": _label(n, not (n in flips and calls[n] == 2))})

        server.script(flipping)
        report = api.evaluate(flow, config=config, cache=None, repeat=3)
        flaky = [s for s in report.stats() if s.flaky]
        (summary,) = report.summaries()
        print(
            f"--repeat 3, 5 flipping cases: pass rate {summary.pass_rate:.1%}, "
            f"pass^3 {summary.pass_k:.0%}; flaky: "
            + ", ".join(f"{s.case} variance {s.variance:.3f} pass^3 {s.pass_k:.0f}" for s in flaky)
        )

        server.script(lambda r: answer({"label": _label(_n(r))}))
        cache = work / ".flowc-cache"
        before = len(server.requests)
        api.evaluate(flow, config=config, cache=cache)
        first = len(server.requests) - before
        before = len(server.requests)
        api.evaluate(flow, config=config, cache=cache)
        again = len(server.requests) - before
        flow.write_text(FLOW.replace("BIG: is", "LARGE: is"), encoding="utf-8")
        before = len(server.requests)
        api.evaluate(flow, config=config, cache=cache)
        changed = sorted(_n(r) for r in server.requests[before:])
        print(
            f"cache: first run {first} requests, unchanged rerun {again}, one prompt changed "
            f"{len(changed)} (cases {changed[0]}..{changed[-1]})"
        )

        flow.write_text(FLOW, encoding="utf-8")
        os.chdir(work)
        os.environ["SCRIPTED_API_KEY"] = TEST_API_KEY
        runner = CliRunner()
        runner.invoke(flowc, ["eval", "parity.flow", "--no-cache", "--save", "base.json"])
        server.script(lambda r: answer({"label": _label(n := _n(r), n not in (4, 7))}))
        worse = runner.invoke(
            flowc,
            ["eval", "parity.flow", "--no-cache", "--json", "--baseline", "base.json",
             "--fail-on-regression"],
        )  # fmt: skip
        listed = [c["case"] for c in json.loads(worse.stdout)["baseline"]["regressions"]]
        server.script(lambda r: answer({"label": _label(_n(r))}))
        same = runner.invoke(
            flowc,
            ["eval", "parity.flow", "--no-cache", "--baseline", "base.json", "--fail-on-regression"],
        )  # fmt: skip
        print(
            f"baseline: regressions listed {listed}; --fail-on-regression exits "
            f"{worse.exit_code} then, {same.exit_code} unchanged"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
