"""The shipped example (examples/ticket-triage.flow and its dataset) evaluates: offline with the
test model from the command line, and against the scripted model server with exact figures."""

from __future__ import annotations

import json

from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, answer
from support.paths import REPO

from agentflow import api
from agentflow.cli import main
from agentflow.runtime.config import load_config

EXAMPLE = REPO / "examples" / "ticket-triage.flow"
CASES = REPO / "examples" / "ticket-triage.cases.jsonl"


def test_the_example_eval_runs_offline_with_the_test_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the answer cache goes here, not into the repository
    result = CliRunner().invoke(main, ["eval", str(EXAMPLE), "--model", "test", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["eval"] == "triage quality" and data["requests"] == 0
    # six agents and six judges, each answered by the test model: counted, though none was sent
    assert (data["answered"], data["answered_by"]) == (12, "test model")
    text = CliRunner().invoke(main, ["eval", str(EXAMPLE), "--model", "test"]).output
    assert "· 12 model request(s) answered by the test model, none sent ·" in text
    assert [c["case"] for c in data["cases"]] == [
        "double charge", "login outage", "ios crash", "invoice typo", "slow exports", "dark mode"
    ]  # fmt: skip
    assert {s["scorer"] for s in data["summary"]} == {
        "severity", "team", "one_call", "short", "useful"
    }  # fmt: skip


def test_the_example_eval_scores_a_scripted_model_exactly(tmp_path, chat_server):
    labels = {}
    for line in CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        labels[case["input"]["title"]] = case["expected"]

    def script(request):
        if "strict evaluator" in request["messages"][0]["content"]:
            return answer({"score": 0.8, "reason": "clear enough"})
        user = request["messages"][-1]["content"]
        title = next(t for t in labels if t in user)
        got = dict(labels[title])
        if title == "Exports are slow":
            got["team"] = "billing"  # the one mistake
        return answer({**got, "summary": f"{title}."})

    chat_server.script(script)
    config = load_config(chat_server.write_config(tmp_path), env={"SCRIPTED_API_KEY": TEST_API_KEY})
    report = api.evaluate(EXAMPLE, config=config, cache=tmp_path / "cache")
    assert report.requests == 12  # six agents, six judges
    rates = {s.scorer: s.pass_rate for s in report.summaries()}
    assert rates == {"severity": 1.0, "team": 5 / 6, "one_call": 1.0, "short": 1.0, "useful": 1.0}
    (worst,) = report.worst()
    assert worst.case == "slow exports" and worst.line == 5
