"""Acceptance of issue 30 (`flowc eval`, docs/reference/evals.md), against the scripted model
server on loopback, counting the requests it receives:

- a dataset row whose `input` misses a required field, or whose `expected` has a wrong type, is a
  diagnostic at its line before any model call (0 requests);
- 50 cases, a model right on 40: the exact scorer says 80 %; with `--repeat 3` and a model that
  flips on 5 cases, those cases show their variance and pass^3;
- a second run with nothing changed sends 0 requests (the cache); changing one prompt re-runs only
  the requests that changed;
- `--baseline` lists exactly the cases whose scores changed; `--fail-on-regression` exits 1 then
  and 0 otherwise.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, answer

from agentflow import api
from agentflow.cli import main
from agentflow.runtime.config import load_config

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
  score cheap = usage.inferences <= 1
}
"""


def _number(request: dict) -> int:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return int(re.search(r"is (\d+) even", user, re.I).group(1))


def _truth(n: int) -> str:
    return "even" if n % 2 == 0 else "odd"


def _wrong(n: int) -> str:
    return "odd" if n % 2 == 0 else "even"


def _project(tmp_path, chat_server, cases=50):
    chat_server.write_config(tmp_path, retries=0)
    (tmp_path / "parity.flow").write_text(FLOW, encoding="utf-8")
    lines = [
        json.dumps(
            {"name": f"n{n}", "input": {"n": n, "note": "x"}, "expected": {"label": _truth(n)}}
        )
        for n in range(1, cases + 1)
    ]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})


def test_a_bad_case_is_a_diagnostic_at_its_line_and_no_request_is_sent(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, cases=3)
    rows = [
        '{"name": "ok", "input": {"n": 1, "note": "x"}, "expected": {"label": "odd"}}',
        '{"name": "no note", "input": {"n": 2}, "expected": {"label": "even"}}',
        '{"name": "bad label", "input": {"n": 3, "note": "x"}, "expected": {"label": 3}}',
    ]
    (tmp_path / "cases.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    chat_server.script(lambda r: answer({"label": _truth(_number(r))}))
    report = api.evaluate(tmp_path / "parity.flow", config=config, cache=tmp_path / "c")
    shown = [(d.code, d.span.line, d.span.column, d.message) for d in report.errors]
    assert shown == [
        (
            "type-mismatch",
            2,
            rows[1].index('{"n": 2}') + 1,  # the `input` object that lacks it
            "`input` lacks the required field `note` of the flow's input type "
            "`{ n: int, note: text }`",
        ),
        (
            "type-mismatch",
            3,
            rows[2].index("3}}") + 1,  # the value itself
            '`expected.label` is 3, but the flow\'s output type wants `"even" | "odd"` here',
        ),
    ]
    assert all(d.span.file.endswith("cases.jsonl") for d in report.errors)
    assert report.runs == [] and chat_server.requests == []
    # the command line shows them with their source line, and exits 1
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "parity.flow")])
    assert result.exit_code == 1
    assert "cases.jsonl:2:30" in result.output and '"no note"' in result.output
    assert chat_server.requests == []


def test_fifty_cases_right_on_forty_score_eighty_percent(tmp_path, chat_server):
    config = _project(tmp_path, chat_server)
    chat_server.script(
        lambda r: answer({"label": _wrong(n) if (n := _number(r)) % 5 == 0 else _truth(n)})
    )
    report = api.evaluate(tmp_path / "parity.flow", config=config, cache=None, concurrency=8)
    assert len(chat_server.requests) == 50 and report.requests == 50
    assert report.pass_rate("exact") == 0.8
    (summary,) = [s for s in report.summaries() if s.scorer == "exact"]
    assert summary.mean == 0.8 and summary.pass_rate == 0.8
    text = report.to_text()
    assert re.search(r"exact\s+configured\s+0\.80\s+80%", text), text
    assert "  n5 (" in text and "cases.jsonl:5)" in text  # the worst cases are listed


def test_repeat_three_shows_variance_and_pass_k_of_the_flipping_cases(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, cases=20)
    flips = {3, 6, 9, 12, 15}
    calls: dict[int, int] = {}

    def script(request):
        n = _number(request)
        calls[n] = calls.get(n, 0) + 1
        wrong = n in flips and calls[n] == 2  # the second of its three runs is wrong
        return answer({"label": _wrong(n) if wrong else _truth(n)})

    chat_server.script(script)
    report = api.evaluate(tmp_path / "parity.flow", config=config, repeat=3, cache=tmp_path / "c")
    assert len(chat_server.requests) == 60
    flaky = {s.case: s for s in report.stats() if s.scorer == "exact" and s.flaky}
    assert set(flaky) == {f"n{n}" for n in flips}
    for s in flaky.values():
        assert s.passes == 2 and s.runs == 3
        assert s.variance == pytest.approx(2 / 9)
        assert s.pass_k == 0
    (summary,) = [s for s in report.summaries() if s.scorer == "exact"]
    assert summary.pass_rate == pytest.approx(55 / 60)
    assert summary.pass_k == pytest.approx(15 / 20)  # pass^3: the cases right in all three
    text = report.to_text()
    assert "pass^3" in text
    assert "n3 · exact: passed 2/3, mean 0.67, variance 0.222, pass^3 0" in text


def test_an_unchanged_rerun_sends_nothing_and_a_changed_prompt_only_its_requests(
    tmp_path, chat_server
):
    config = _project(tmp_path, chat_server)
    chat_server.script(lambda r: answer({"label": _truth(_number(r))}))
    flow = tmp_path / "parity.flow"
    first = api.evaluate(flow, config=config, cache=tmp_path / ".flowc-cache")
    assert len(chat_server.requests) == 50 and first.requests == 50
    again = api.evaluate(flow, config=config, cache=tmp_path / ".flowc-cache")
    assert len(chat_server.requests) == 50  # nothing new reached the server
    assert again.requests == 0 and again.cached == 50
    assert [r.scores["exact"].passed for r in again.runs] == [True] * 50
    # one prompt changes: only the cases that reach it (n > 40) ask again
    flow.write_text(FLOW.replace("BIG: is", "LARGE: is"), encoding="utf-8")
    changed = api.evaluate(flow, config=config, cache=tmp_path / ".flowc-cache")
    assert len(chat_server.requests) == 60 and changed.requests == 10
    assert sorted(_number(r) for r in chat_server.requests[50:]) == list(range(41, 51))
    assert {r.case for r in changed.runs if r.requests} == {f"n{n}" for n in range(41, 51)}


def test_baseline_lists_exactly_the_changed_cases_and_gates_on_regressions(
    tmp_path, chat_server, monkeypatch
):
    _project(tmp_path, chat_server, cases=12)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    worse = {4, 7}
    better = {5}
    state = {"mode": "base"}

    def script(request):
        n = _number(request)
        if state["mode"] == "base":
            right = n not in better
        else:
            right = n not in worse
        return answer({"label": _truth(n) if right else _wrong(n)})

    chat_server.script(script)
    runner = CliRunner()
    base = runner.invoke(main, ["eval", "parity.flow", "--json", "--no-cache"])
    assert base.exit_code == 0, base.output
    (tmp_path / "base.json").write_text(base.stdout, encoding="utf-8")

    same = runner.invoke(
        main,
        ["eval", "parity.flow", "--no-cache", "--baseline", "base.json", "--fail-on-regression"],
    )
    assert same.exit_code == 0, same.output
    assert "0 regression(s), 0 improvement(s)" in same.output

    state["mode"] = "changed"
    out = runner.invoke(
        main,
        ["eval", "parity.flow", "--no-cache", "--json", "--baseline", "base.json",
         "--fail-on-regression", "--html", "page.html"],
    )  # fmt: skip
    assert out.exit_code == 1
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.count('<tr class="delta regression">') == 2  # the page shows the comparison too
    assert page.count('<tr class="delta improvement">') == 1
    data = json.loads(out.stdout)
    assert sorted(c["case"] for c in data["baseline"]["regressions"]) == ["n4", "n7"]
    assert [c["case"] for c in data["baseline"]["improvements"]] == ["n5"]
    assert {c["scorer"] for c in data["baseline"]["regressions"]} == {"exact"}
    assert "gate: 2 case(s) regressed from base.json" in out.stderr
    # without the gate the same comparison exits 0
    plain = runner.invoke(main, ["eval", "parity.flow", "--no-cache", "--baseline", "base.json"])
    assert plain.exit_code == 0
    assert "- n4 · exact [configured]: 1.00 → 0.00" in plain.stdout
    assert "+ n5 · exact [configured]: 0.00 → 1.00" in plain.stdout
