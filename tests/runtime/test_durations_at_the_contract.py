"""An agent's answer holding a duration longer than the longest one (876000h, 100 years) is
refused at its contract, like any contract violation — repaired, or the step fails naming the
field — never first met by `seconds` at a comparison (docs/reference/lexical.md "Durations",
docs/decisions.md "Durations inside lists, objects and maps (durdeep)")."""

from __future__ import annotations

import agentflow
from agentflow.runtime.config import load_config
from agentflow.testing import ChatServer, answer

FLOW = """
input { n: int }
type Plan { wait: duration, steps: duration[] }
use agent "planner" as planner
stage s -> bool {
  let plan = agent(planner) { task "Plan ${input.n}." expect Plan }
  return plan.wait > 1h
}
"""


def _run(tmp_path, script):
    (tmp_path / "plan.flow").write_text(FLOW)
    with ChatServer(script) as server:
        config = load_config(server.write_config(tmp_path), env=server.env())
        result = agentflow.run_sync(
            str(tmp_path / "plan.flow"), {"n": 1}, config=config, workspace=tmp_path
        )
    return result, server.requests


def test_a_too_long_duration_in_an_answer_is_repaired_at_the_contract(tmp_path):
    result, requests = _run(
        tmp_path,
        [answer({"wait": "877000h", "steps": ["1s"]}), answer({"wait": "2h", "steps": ["1s"]})],
    )
    assert result.status == "ok", result.error
    assert result.output is True
    repair = requests[1]["messages"][-1]["content"]
    assert '$.wait: "877000h" is longer than the longest duration, 876000h (100 years)' in repair


def test_an_answer_that_stays_too_long_fails_its_step_naming_the_field(tmp_path):
    long = {"wait": "1h", "steps": ["1s", "99999999999999999999h"]}
    result, _ = _run(tmp_path, lambda request: answer(long))
    assert result.status == "error"
    assert result.error["code"] == "output_validation", result.error
    assert (
        '$.steps[1]: "99999999999999999999h" is longer than the longest duration'
        in (result.error["message"])
    )
    assert "seconds" not in result.error["message"]


def test_a_tool_result_over_the_longest_duration_breaks_its_declared_type(tmp_path):
    (tmp_path / "tools.py").write_text("def wait() -> dict:\n    return {'w': '877000h'}\n")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (tmp_path / "t.flow").write_text(
        "extern tool user__wait() -> { w: duration }\n"
        "stage s -> bool {\n  let got = user__wait()\n  return got.w > 1h\n}\n"
    )
    config = load_config(tmp_path / "flow.toml", env={})
    result = agentflow.run_sync(str(tmp_path / "t.flow"), {}, config=config, workspace=tmp_path)
    assert result.error["code"] == "output_validation", result.error
    assert '`result.w` is "877000h", longer than the longest duration' in result.error["message"]
