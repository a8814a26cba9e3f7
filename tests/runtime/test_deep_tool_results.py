"""A tool result nested thousands of levels deep fails its step as a result-shape problem
(``output_validation``, naming the limit), not as the tool's failure (``tool_error:
RecursionError``): the tool ran and succeeded (round 41, item 2; docs/decisions.md "integral
numbers and deep values (round 41)")."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentflow
from agentflow.errors import RunError
from agentflow.runtime.effects import call_tool_cleaned
from agentflow.runtime.extract import MAX_JSON_DEPTH
from agentflow.runtime.tools.catalog import Tool, ToolContext

TOOLS = '''
import agentflow

@agentflow.tool
def val(depth: int) -> dict:
    """A value nested `depth` objects deep."""
    d = {}
    cur = d
    for _ in range(depth):
        cur["a"] = {}
        cur = cur["a"]
    return d
'''

FLOW = """flow deep "deep"
input { depth: int }
extern tool user__val(depth: int) -> json
stage s -> json { return user__val(depth: input.depth) }
"""


async def _run(tmp_path: Path, depth: int) -> agentflow.RunResult:
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "deep.flow").write_text(FLOW)
    return await agentflow.run(
        str(tmp_path / "deep.flow"),
        {"depth": depth},
        config=str(tmp_path / "flow.toml"),
        workspace=str(tmp_path),
        shape_cache=False,
        trace=str(tmp_path / "t.jsonl"),
    )


async def test_a_5000_level_tool_result_is_refused_as_too_deep_not_as_the_tools_failure(tmp_path):
    result = await _run(tmp_path, 5000)
    assert result.status == "error" and result.error is not None
    assert result.error.code == "output_validation"
    assert result.error.message == (
        f"tool user__val returned a result nested too deeply (more than {MAX_JSON_DEPTH} levels "
        "of arrays/objects); the tool ran, but a result this deep cannot be carried through the run"
    )
    assert "RecursionError" not in (tmp_path / "t.jsonl").read_text()
    ok = await _run(tmp_path, MAX_JSON_DEPTH - 1)  # 100 objects deep: at the limit, carried
    assert ok.status == "ok", ok.error


async def test_any_tools_too_deep_result_is_refused_where_results_enter_the_run(tmp_path):
    deep: list = []
    for _ in range(5000):
        deep = [deep]

    async def func(args: dict, ctx: ToolContext) -> object:
        return deep

    tool = Tool("srv__deep", "deep", {"type": "object"}, func, source="mcp")
    with pytest.raises(RunError) as caught:
        await call_tool_cleaned(tool, {}, ToolContext(workspace=tmp_path))
    assert caught.value.code == "output_validation"
    assert "tool srv__deep returned a result nested too deeply" in caught.value.message
