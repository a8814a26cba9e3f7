"""`flowc report` of traces written by hand: every field of a small trace replaced by each of a
dozen odd values (a text, a number, NaN, infinity, 1e300, null, a list, an object, a boolean),
one at a time; each trace written to a file and reported with :func:`agentflow.api.report`.
A report either is written (and holds no ``<img``) or refused with an ``InputError``; anything
else is a failure.  Prints ``N traces, N written, N refused, N failures`` and the first failures.

    nice -n 19 .venv/bin/python bench/report_shapes_fuzz.py

(docs/decisions.md "HTML pages escape every value"; the suite's small version is
tests/e2e/test_html_pages_escape_every_value.py.)"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentflow import api
from agentflow.errors import FlowError

H = "<img src=x onerror=alert(1)>"
ODD: list[Any] = [
    "x",
    H,
    1,
    1.5,
    float("nan"),
    float("inf"),
    1e300,
    None,
    [],
    {},
    [H],
    {H: 1},
    True,
]


def base() -> list[dict[str, Any]]:
    """A trace of one agent step with a model call and a failed tool call, and a plain step."""

    def ev(kind: str, path: str = "", data: dict[str, Any] | None = None, t: float = 1.0) -> dict:
        return {"kind": kind, "path": path, "data": data or {}, "time": t, "stack": ["f"]}

    usage = {"inferences": 1, "input_tokens": 10, "output_tokens": 5, "cost": 0.1}
    return [
        ev("run_started", data={"plan": "f", "file": "f.flow", "input": {"a": 1}}),
        ev("step_started", "E0", {"tool_name": "agent", "source": "f.flow:3:3", "stage": "s",
                                  "label": "s › agent(a)", "input": {"agent": "a", "model": "m",
                                  "tools": ["t"], "prompt": "p", "input": {"a": 1}}}, 1.1),
        ev("model_call", "E0", {"model": "m", "role": "chat", "round": 1, "latency_ms": 10,
                                "input_tokens": 10, "output_tokens": 5, "finish_reason": "stop",
                                "reply": {"text": "r", "tool_calls": [{"name": "t",
                                                                       "arguments": {}}]}}, 1.2),
        ev("tool_started", "E0/agent.1/t", {"tool_name": "t", "input": {}}, 1.3),
        ev("tool_finished", "E0/agent.1/t", {"tool_name": "t", "error": {"code": "tool_error",
                                                                          "message": "m"}}, 1.4),
        ev("warning", "E0", {"message": "w", "round": 1}, 1.45),
        ev("step_finished", "E0", {"tool_name": "agent", "elapsed_ms": 100, "usage": usage,
                                   "result": {"a": 1}}, 1.5),
        ev("step_started", "E1", {"tool_name": "echo", "input": {}}, 1.6),
        ev("step_finished", "E1", {"tool_name": "echo", "elapsed_ms": 1, "usage": usage,
                                   "error": {"code": "failed", "message": "m",
                                             "source": "f.flow:9:1"}}, 1.7),
        ev("run_finished", data={"status": "error", "error": {"code": "failed", "message": "m",
                                                             "step_path": "E1"},
                                 "output": None, "usage": usage}, t=2.0),
    ]  # fmt: skip


def places(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path into ``value``."""
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, inner in items:
            yield (*at, key)
            yield from places(inner, (*at, key))


def main() -> int:
    trace = Path(tempfile.mkdtemp()) / "trace.jsonl"
    written = refused = 0
    failures: list[str] = []
    events = base()
    for place in places(events):
        for odd in ODD:
            mutated = copy.deepcopy(events)
            holder: Any = mutated
            for key in place[:-1]:
                holder = holder[key]
            holder[place[-1]] = odd
            trace.write_text("".join(json.dumps(e) + "\n" for e in mutated), encoding="utf-8")
            try:
                page = api.report(trace)
            except FlowError:
                refused += 1
                continue
            except Exception as e:  # noqa: BLE001 - what the script counts
                where = traceback.extract_tb(e.__traceback__)[-1]
                failures.append(f"{place} = {odd!r}: {type(e).__name__} at {where.name}: {e}")
                continue
            if "<img" in page:
                failures.append(f"{place} = {odd!r}: an <img> element in the page")
            written += 1
    total = written + refused + len(failures)
    print(f"{total} traces, {written} written, {refused} refused, {len(failures)} failures")
    for line in failures[:20]:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
