"""Every JSON agentflow writes is JSON (round 41): a tool's result holding NaN or an infinity
(which Python's ``json.dumps`` writes as the bare tokens ``NaN`` / ``Infinity``, which no JSON
reader accepts) is written as ``null`` in the ``--trace`` file (``tool_finished``,
``step_finished``, ``run_finished``), in OpenTelemetry attributes, in the MCP server's text
result and in an eval report, as stdout's ``--json`` already did (:func:`finite_dumps`)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

import agentflow
from agentflow.core.text import finite_dumps, finite_only

FLOW = """\
flow vnan "vals"
extern tool user__val(kind: text) -> json
stage s -> json { return user__val(kind: "nan") }
"""

TOOLS = '''\
def val(kind: str) -> dict:
    """Numbers JSON cannot hold."""
    return {"v": float("nan"), "i": float("inf"), "n": [float("-inf"), 1.5]}
'''


def strict(line: str) -> Any:
    """``line`` read as JSON proper: a bare NaN / Infinity token is an error."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(line, parse_constant=refuse)


def test_a_trace_holds_null_for_nan_and_infinity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "v.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    result = asyncio.run(
        agentflow.run(
            tmp_path / "v.flow", None, config=tmp_path / "flow.toml", trace=tmp_path / "t.jsonl"
        )
    )
    assert result.status == "ok", result.error
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    events = [strict(line) for line in lines]  # every line is JSON
    assert "NaN" not in "".join(lines) and "Infinity" not in "".join(lines)
    expected = {"v": None, "i": None, "n": [None, 1.5]}
    kinds = {e["kind"]: e for e in events}
    assert {"tool_finished", "step_finished", "run_finished"} <= set(kinds)
    text = json.dumps([kinds[k] for k in ("tool_finished", "step_finished", "run_finished")])
    assert text.count(json.dumps(expected)) >= 3, text


def test_finite_dumps_writes_null_for_what_json_cannot_hold() -> None:
    value = {"a": [math.nan, (math.inf, 1)], "b": {"c": -math.inf}, "d": "NaN"}
    assert strict(finite_dumps(value)) == {"a": [None, [None, 1]], "b": {"c": None}, "d": "NaN"}
    # also what default= makes
    assert finite_dumps({"x": object()}, default=lambda o: math.nan) == '{"x": null}'
    # the common case: exactly json.dumps
    plain = {"k": [1, 2.5, "é"], "t": True}
    assert finite_dumps(plain, ensure_ascii=False, sort_keys=True) == json.dumps(
        plain, ensure_ascii=False, sort_keys=True
    )
    assert finite_only((1.0, math.nan)) == [1.0, None]


def test_otel_attributes_and_the_mcp_text_write_null() -> None:
    from agentflow.runtime.telemetry_spans import _json
    from agentflow.serve import _text

    assert strict(_json({"v": math.nan})) == {"v": None}
    assert strict(_text({"v": math.inf})) == {"v": None}
