"""How `flowc eval` runs (docs/reference/evals.md "Running", "Reports"), on the scripted model
server: a model matrix, the per-case time limit, an eval cut short resumed from the cache, a
judge's verdict that does not fit, the `--fail-under` gate and the JUnit XML."""

from __future__ import annotations

import json
import re
import threading
import xml.etree.ElementTree as ET

from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, answer, status, text
from support.timing import contention

from agentflow import api
from agentflow.cli import main
from agentflow.runtime.config import load_config

FLOW = """\
input { n: int }
type Parity { label: "even" | "odd" }
use agent "classifier" as classifier

stage classify -> Parity {
  return agent(classifier) { task "Is ${input.n} even or odd?" tools none expect Parity }
}

eval "parity" {
  dataset "cases.jsonl"
  score exact = output.label == expected.label
}
"""

MATRIX = """\
[models.named.small]
provider = "scripted"
model = "small-model"

[models.named.large]
provider = "scripted"
model = "large-model"
"""


def _number(request: dict) -> int:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return int(re.search(r"Is (\d+) even", user).group(1))


def _truth(n: int) -> str:
    return "even" if n % 2 == 0 else "odd"


def _project(tmp_path, chat_server, cases=6, flow=FLOW, extra=""):
    chat_server.write_config(tmp_path, retries=0, extra=extra)
    (tmp_path / "parity.flow").write_text(flow, encoding="utf-8")
    lines = [
        json.dumps({"name": f"n{n}", "input": {"n": n}, "expected": {"label": _truth(n)}})
        for n in range(1, cases + 1)
    ]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})


def test_a_model_matrix_answers_every_call_with_each_named_model(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, extra=MATRIX)

    def script(request):
        n = _number(request)
        wrong = request["model"] == "small-model" and n % 3 == 0  # small is wrong on 3 and 6
        return answer({"label": ("odd" if n % 2 == 0 else "even") if wrong else _truth(n)})

    chat_server.script(script)
    report = api.evaluate(
        tmp_path / "parity.flow", config=config, models=["small", "large"], cache=None
    )
    assert (
        sorted(r["model"] for r in chat_server.requests)
        == ["large-model"] * 6 + ["small-model"] * 6
    )
    rates = {s.model: s.pass_rate for s in report.summaries()}
    assert rates == {"small": 4 / 6, "large": 1.0}
    assert {(r.case, r.model) for r in report.runs if not r.passed} == {
        ("n3", "small"),
        ("n6", "small"),
    }
    assert "[small]" in report.to_text() and "exact   large" in report.to_text()


def test_an_unknown_model_of_the_matrix_is_refused_before_any_request(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, extra=MATRIX)
    try:
        api.evaluate(tmp_path / "parity.flow", config=config, models=["huge"], cache=None)
    except Exception as e:  # noqa: BLE001 - the public error type is checked below
        from agentflow.errors import ConfigError

        assert isinstance(e, ConfigError) and "unknown model 'huge'" in str(e)
    else:
        raise AssertionError("no error")
    assert chat_server.requests == []


def test_a_case_over_its_time_limit_fails_with_status_timeout(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, cases=3)
    release = threading.Event()

    def script(request):
        n = _number(request)
        if n == 2:
            release.wait(60)  # answers only once the eval is over
        return answer({"label": _truth(n)})

    chat_server.script(script)
    limit = 0.5 * contention()  # a normal case takes a fifth of it on an idle machine
    try:
        report = api.evaluate(tmp_path / "parity.flow", config=config, timeout=limit, cache=None)
    finally:
        release.set()
    statuses = {r.case: r.status for r in report.runs}
    assert statuses == {"n1": "ok", "n2": "timeout", "n3": "ok"}
    (slow,) = [r for r in report.runs if r.case == "n2"]
    assert slow.scores["exact"].passed is False
    assert slow.scores["exact"].reason == "the run ended timeout (timeout)"


def test_an_eval_cut_short_pays_only_for_the_rest_when_run_again(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, cases=10)

    def failing(request):  # the provider goes down after five answers
        n = _number(request)
        if n > 5:
            return status(500, {"error": {"message": "down"}})
        return answer({"label": _truth(n)})

    chat_server.script(failing)
    first = api.evaluate(tmp_path / "parity.flow", config=config, cache=tmp_path / "c")
    assert sum(r.passed for r in first.runs) == 5
    sent = len(chat_server.requests)
    chat_server.script(lambda r: answer({"label": _truth(_number(r))}))
    again = api.evaluate(tmp_path / "parity.flow", config=config, cache=tmp_path / "c")
    assert all(r.passed for r in again.runs)
    assert again.requests == 5 and again.cached == 5  # the five answered ones are not paid again
    assert sorted(_number(r) for r in chat_server.requests[sent:]) == [6, 7, 8, 9, 10]


def test_a_judge_verdict_that_does_not_fit_fails_its_scorer_with_the_reason(tmp_path, chat_server):
    flow = FLOW.replace(
        "  score exact = output.label == expected.label\n",
        '  score exact = output.label == expected.label\n  judge sure "Is ${output.label} sure?"\n',
    )
    config = _project(tmp_path, chat_server, cases=2, flow=flow)

    def script(request):
        if "strict evaluator" in request["messages"][0]["content"]:
            return text('{"score": 7, "reason": "very"}')  # out of 0..1
        return answer({"label": _truth(_number(request))})

    chat_server.script(script)
    report = api.evaluate(tmp_path / "parity.flow", config=config, cache=None)
    for run in report.runs:
        assert run.scores["exact"].passed is True
        sure = run.scores["sure"]
        assert sure.passed is False and sure.score == 0.0
        assert sure.reason.startswith("the judge's verdict does not fit: $.score")


def test_fail_under_gates_on_a_pass_rate_and_junit_lists_the_failures(
    tmp_path, chat_server, monkeypatch
):
    _project(tmp_path, chat_server, cases=4)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    chat_server.script(lambda r: answer({"label": "odd"}))  # right on n1 and n3
    runner = CliRunner()
    gated = runner.invoke(
        main, ["eval", "parity.flow", "--fail-under", "60%", "--junit", "eval.xml"]
    )
    assert gated.exit_code == 1
    assert "gate: exact [configured] passes 50%, under 60%" in gated.stderr
    suite = ET.parse(tmp_path / "eval.xml").getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2"
    failed = {c.get("name"): c.find("failure").text for c in suite if c.find("failure") is not None}
    why = 'exact: 0.00 — output.label is "odd"; expected.label is "even"'
    assert failed == {"n2": why, "n4": why}
    passing = runner.invoke(main, ["eval", "parity.flow", "--fail-under", "0.5"])
    assert passing.exit_code == 0, passing.output


def test_an_eval_replays_a_recorded_cassette_with_no_model(tmp_path, chat_server):
    config = _project(tmp_path, chat_server, cases=3)
    chat_server.script(lambda r: answer({"label": _truth(_number(r))}))
    cassette = tmp_path / "parity.cassette.jsonl"
    first = api.evaluate(tmp_path / "parity.flow", config=config, cache=None)
    # the same exchanges, recorded as `flowc run --record` does, case by case

    lines = []
    for n in (1, 2, 3):
        part = tmp_path / f"part{n}.jsonl"
        api.run_sync(
            tmp_path / "parity.flow", {"n": n}, config=config, record=part, shape_cache=False
        )
        lines += part.read_text(encoding="utf-8").splitlines()
    cassette.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sent = len(chat_server.requests)
    replayed = api.evaluate(tmp_path / "parity.flow", replay=cassette, cache=None)
    assert len(chat_server.requests) == sent  # nothing reached the server
    assert [r.output for r in replayed.runs] == [r.output for r in first.runs]
    assert replayed.models == ["replay"] and all(r.passed for r in replayed.runs)
    assert (replayed.requests, replayed.answered, replayed.answered_by) == (0, 3, "cassette")
    assert "3 model request(s) answered from the cassette, none sent" in replayed.to_text()


def test_scorers_read_the_stages_and_a_flow_without_a_model_needs_none(tmp_path, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "pure.flow").write_text(
        "input { n: int }\n"
        "stage double -> int { return input.n * 2 }\n"
        'stage label -> text { return if double > 5 then "big" else "small" }\n'
        'eval "pure" {\n'
        "  expect int\n"
        "  score doubled = double == expected\n"
        '  score labelled = label == (if input.n > 2 then "big" else "small")\n'
        "  score free = usage.inferences == 0 and usage.cost == 0\n"
        "}\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"input": {"n": 2}, "expected": 4}\n{"input": {"n": 3}, "expected": 7}\n',
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "pure.flow", [tmp_path / "cases.jsonl"], cache=None)
    assert report.errors == []
    scores = {r.case: {k: s.passed for k, s in r.scores.items()} for r in report.runs}
    assert scores == {
        "cases.jsonl:1": {"doubled": True, "labelled": True, "free": True},
        "cases.jsonl:2": {"doubled": False, "labelled": True, "free": True},
    }


def test_a_number_score_outside_zero_to_one_is_counted_at_the_nearer_end_with_a_reason(
    tmp_path, monkeypatch
):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "close.flow").write_text(
        "input { n: int }\n"
        "stage twice -> int { return input.n * 2 }\n"
        'eval "closeness" {\n'
        "  expect int\n"
        "  score close = 1 - abs(twice - expected) / expected threshold 90%\n"
        "}\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"input": {"n": 3}, "expected": 1}\n{"input": {"n": 1}, "expected": 2}\n',
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "close.flow", [tmp_path / "cases.jsonl"], cache=None)
    far, exact = (r.scores["close"] for r in report.runs)
    assert (far.score, far.passed) == (0.0, False)
    assert far.reason == "the score -4 is outside 0..1: counted as 0"
    assert (exact.score, exact.passed, exact.reason) == (1.0, True, None)


def test_an_eval_with_no_model_configured_says_how_to_run_it_offline(tmp_path, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.flow").write_text(
        'input { n: int }\nuse agent "a" as a\n'
        'stage d -> int { return agent(a) { task "double ${input.n}" expect int } }\n'
        'eval "e" {\n  expect int\n  score ok = d == expected\n}\n',
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text('{"input": {"n": 1}, "expected": 2}\n')
    res = CliRunner().invoke(main, ["eval", "g.flow", "cases.jsonl"])
    assert res.exit_code == 1
    assert "no model is configured" in res.output
    assert "hint: `flowc eval FLOW --model test` runs it offline" in res.output
    assert "Traceback" not in res.output
