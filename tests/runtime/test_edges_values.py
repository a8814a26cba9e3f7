"""Values at the edges (issue 28, item 13): an empty write scope grants nothing (refused), an
integer beyond an `int` is refused as an answer or input."""

from __future__ import annotations

import json

import pytest

import agentflow
from agentflow.core.vocabulary import MAX_INT, MIN_INT
from agentflow.errors import PlanLoadError
from agentflow.runtime.extract import ExtractionError, NonJsonNumber, extract_json, loads_value

FLOW = """flow scoped "Write where told"
input { dir: path }

type Done {
  ok: bool
}

use agent "writer" as writer

stage write -> Done {
  return agent(writer) {
    task "Write notes."
    tools [write_file]
    write [input.dir]
    expect Done
  }
}
"""


async def test_an_empty_write_scope_computed_at_run_time_is_refused(tmp_path):
    (tmp_path / "scoped.flow").write_text(FLOW)
    result = await agentflow.run(
        str(tmp_path / "scoped.flow"), {"dir": ""}, model="test", workspace=str(tmp_path)
    )
    assert result.status == "error" and result.error is not None
    assert result.error.code == "validation" and 'empty path ""' in result.error.message
    ok = await agentflow.run(
        str(tmp_path / "scoped.flow"), {"dir": "out"}, model="test", workspace=str(tmp_path)
    )
    assert ok.status == "ok"


async def test_an_empty_write_scope_written_in_the_flow_is_refused(tmp_path):
    (tmp_path / "scoped.flow").write_text(FLOW.replace("[input.dir]", '["out", ""]'))
    result = await agentflow.run(
        str(tmp_path / "scoped.flow"), {"dir": "x"}, model="test", workspace=str(tmp_path)
    )
    assert result.error is not None and result.error.code == "validation"
    assert 'empty path ""' in result.error.message and "writer" in result.error.message


def test_an_empty_write_scope_in_a_plan_file_is_a_plan_error():
    from agentflow.ir.loader import load_plan_data

    plan = {
        "version": 1,
        "name": "p",
        "steps": [
            {
                "id": "E0",
                "tool_name": "agent",
                "input": {"prompt": "hi", "tools": ["builtin__write_file"], "write": ["out", ""]},
            }
        ],
    }
    with pytest.raises(PlanLoadError, match='empty path ""'):
        load_plan_data(plan, "p.yaml")


@pytest.mark.parametrize("text", [str(MAX_INT + 1), str(MIN_INT - 1), "1" + "0" * 400])
def test_a_whole_number_beyond_an_int_is_refused_as_a_value(text):
    with pytest.raises(NonJsonNumber, match="outside the range of an int"):
        loads_value(text)
    with pytest.raises(ExtractionError, match="outside the range of an int"):
        extract_json(json.dumps({"n": 0})[:-2] + text + "}")
    assert loads_value(str(MAX_INT)) == MAX_INT and loads_value(str(MIN_INT)) == MIN_INT
