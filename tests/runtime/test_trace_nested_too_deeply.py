"""A ``--trace`` line nested deeper than Python's JSON parser can follow is a user error naming
``file:line`` ("nested too deeply"), not a RecursionError traceback, for `flowc report` and
`flowc graph --run` alike (both read the trace with :func:`read_trace`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentflow.errors import InputError
from agentflow.runtime.events import read_trace

FLOW = "input { n: int }\n\nstage s -> int {\n  return input.n\n}\n"


def _deep_trace(tmp_path: Path, depth: int) -> Path:
    trace = tmp_path / "trace.jsonl"
    deep = "[" * depth + "]" * depth
    trace.write_text(
        '{"kind": "run_started", "data": {}}\n'
        f'{{"kind": "step_finished", "path": "E0", "data": {{"result": {deep}}}}}\n'
    )
    return trace


def test_a_trace_line_nested_too_deeply_names_its_file_and_line(tmp_path: Path) -> None:
    trace = _deep_trace(tmp_path, 5000)
    with pytest.raises(InputError, match=r"trace\.jsonl:2: not a trace event \(nested too deeply"):
        read_trace(trace)


def test_a_deep_but_parseable_trace_line_is_read(tmp_path: Path) -> None:
    events = read_trace(_deep_trace(tmp_path, 150))
    assert [e["kind"] for e in events] == ["run_started", "step_finished"]


@pytest.mark.parametrize(
    "command", [["report", "trace.jsonl"], ["graph", "one.flow", "--run", "trace.jsonl"]]
)
def test_report_and_graph_of_a_too_deep_trace_fail_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "one.flow").write_text(FLOW)
    _deep_trace(tmp_path, 5000)
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", *command],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: trace.jsonl:2: not a trace event (nested too deeply"), (
        done.stderr
    )
