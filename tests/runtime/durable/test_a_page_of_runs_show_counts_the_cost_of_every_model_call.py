"""A page of ``flowc runs show`` reads only the first item records in start order
(items.item_page), yet its cost counts every model call the run made: an agent's rounds are
item records of the run's unit too (a real durable run on SQLite with the built-in test
model, in this process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agentflow
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.runs import show_run

PLAN = """\
version: 1
name: labelled
input_schema: {type: object}
steps:
  - id: E1
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 4
      do: {tool_name: user__note, input: {n: "{{ item }}"}}
  - id: E2
    tool_name: agent
    input:
      prompt: "Label {{ E1 }}."
      tools: none
      output_schema: {type: object, properties: {x: {type: integer}}, required: [x]}
finish: {mode: output, output: "{{ E2.output }}"}
"""

TOOLS = '''\
def note(n: int) -> int:
    """Ten times n."""
    return 10 * n
'''


def test_a_page_of_runs_show_counts_the_cost_of_every_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / '.flowc' / 'durable.sqlite'}"
    try:
        result = asyncio.run(
            agentflow.run(
                tmp_path / "plan.yaml", {"xs": list(range(6))}, config=tmp_path / "flow.toml",
                durable=True, run_id="labelled-1", model="test",
            )
        )  # fmt: skip
        assert result.status == "ok", result.error
        whole = asyncio.run(show_run(url, "labelled-1"))
        first = asyncio.run(show_run(url, "labelled-1", limit=2))
    finally:
        shutdown()
    kinds = [s["kind"] for s in whole.steps]
    assert kinds.count("tool user__note") == 6 and kinds[-1].startswith("model"), kinds
    assert whole.cost["inferences"] >= 1
    # the model call is not on the first page, and still counted
    assert [s["kind"] for s in first.steps] == ["tool user__note"] * 2
    assert (first.cost, first.steps_total) == (whole.cost, whole.steps_total)
