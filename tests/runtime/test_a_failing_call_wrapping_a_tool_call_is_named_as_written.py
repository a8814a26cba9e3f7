"""A library function failing at run time on a tool call's result that the `.flow` wrote inside
it — ``let n = parse_int(read_file(path: "x"))`` — is named by the call as the user wrote it
(``parse_int(read_file(path: "x"))``), placed at it with the caret under it, as every run-time
error that quotes the source is (docs/reference/expressions.md).  It used to be named
``parse_int(s)``: the tool call became the stage's last step, which the error read as the
stage's value (``s``), a name the user never wrote there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentflow import api

CASES = {
    # the let read by the stage's output (the finish)
    "let returned": (
        '  let n = parse_int(read_file(path: "x"))\n  return n\n',
        '`parse_int(read_file(path: "x"))`: "abc\\n" is not an integer',
        "s › n",
        "f.flow:3:11",
    ),
    "nested twice": (
        '  let n = parse_int(trim(read_file(path: "x")))\n  return n + 1\n',
        '`parse_int(trim(read_file(path: "x")))`: "abc" is not an integer',
        "s › n",
        "f.flow:3:11",
    ),
    # the let inlined into a later tool call's argument
    "let read by a step": (
        '  let n = parse_int(read_file(path: "x"))\n'
        '  let w = write_file(path: "y", content: "${n}")\n  return 1\n',
        '`parse_int(read_file(path: "x"))`: "abc\\n" is not an integer',
        "s › n",
        "f.flow:3:11",
    ),
    # no let: the stage's own tool call is the call it is, never the stage's name
    "returned directly": (
        '  return parse_int(read_file(path: "x"))\n',
        '`parse_int(read_file(…))`: "abc\\n" is not an integer',
        "s › return",
        "f.flow:3:10",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_failing_library_call_around_a_tool_call_is_named_as_written(
    tmp_path: Path, case: str
) -> None:
    body, message, label, source = CASES[case]
    (tmp_path / "x").write_text("abc\n", encoding="utf-8")
    flow = tmp_path / "f.flow"
    flow.write_text(f'flow f "parse"\nstage s -> int {{\n{body}}}\n', encoding="utf-8")
    result = api.run_sync(api.load(flow), {}, workspace=str(tmp_path))
    assert result.status == "error"
    error = result.error.to_dict()
    assert (error["code"], error["message"]) == ("parse_error", message)
    assert error["label"] == label
    assert error["source"].endswith(source)


def test_flowc_run_puts_the_caret_under_the_call_as_written(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("abc\n", encoding="utf-8")
    (tmp_path / "f.flow").write_text(
        'flow f "parse"\nstage s -> int {\n  let n = parse_int(read_file(path: "x"))\n'
        "  return n\n}\n",
        encoding="utf-8",
    )
    ran = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "f.flow"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 1
    err = ran.stderr
    assert 'in s › n (step finish): `parse_int(read_file(path: "x"))`: "abc\\n"' in err, err
    call = 'parse_int(read_file(path: "x"))'
    assert f"  --> f.flow:3:11\n   |   let n = {call}\n   |           {'^' * len(call)}\n" in err


def test_in_a_map_body_the_tool_call_under_the_failing_call_is_named_by_its_call(
    tmp_path: Path,
) -> None:
    # the call becomes the item's step and the library call its `select`, reading `result`:
    # said as the step's call (`read_file(…)`), never the plan's `result`
    (tmp_path / "x").write_text("abc\n", encoding="utf-8")
    flow = tmp_path / "f.flow"
    flow.write_text(
        'flow f "parse"\ninput { xs: path[] }\nstage s -> int[] {\n'
        "  return map input.xs as it {\n    let n = parse_int(read_file(path: it))\n    n\n  }\n}\n",
        encoding="utf-8",
    )
    result = api.run_sync(api.load(flow), {"xs": ["x"]}, workspace=str(tmp_path))
    error = result.error.to_dict()
    assert error["message"] == '`parse_int(read_file(…))`: "abc\\n" is not an integer'
    assert error["label"] == "s › item 0 › read_file"
