"""The typed embedding API (docs/reference/python-api.md): `run_sync` takes exactly `run`'s
keyword options, by name (a misspelt one is a TypeError before anything runs, and a type error
for mypy: tests/e2e/test_gen_python_client.py); `RunResult` is generic in its output; and
`agentflow.run` prepares the run (imports, compiling the `.flow`, flow.toml, the catalog) on a
worker thread, not on the caller's event loop (bench/loop_blocking.py measures the longest
blocking slice)."""

from __future__ import annotations

import inspect
import threading
import typing

import pytest
from support.paths import EXAMPLES

import agentflow
from agentflow import api, api_run
from agentflow.runtime.result import RunResult


def test_run_sync_spells_out_every_option_of_run():
    run, run_sync = inspect.signature(api.run), inspect.signature(api.run_sync)
    assert list(run.parameters) == list(run_sync.parameters)
    for name, param in run.parameters.items():
        twin = run_sync.parameters[name]
        assert (twin.kind, twin.default) == (param.kind, param.default), name
    assert not any(p.kind is p.VAR_KEYWORD for p in run_sync.parameters.values())


def test_a_misspelt_option_is_refused_before_anything_runs():
    with pytest.raises(TypeError, match="replya"):
        agentflow.run_sync(EXAMPLES / "bug-triage.flow", {}, replya="cassette.jsonl")


def test_run_result_is_generic_in_its_output():
    assert typing.get_args(RunResult[int]) == (int,)
    typed: RunResult[list[int]] = RunResult(status="ok", output=[1])
    assert typed.output == [1] and RunResult(status="error").output is None


async def test_run_prepares_on_a_worker_thread_not_on_the_loop(monkeypatch):
    seen: list[threading.Thread] = []
    prepare = api_run._prepare

    def spy(*args):
        seen.append(threading.current_thread())
        return prepare(*args)

    monkeypatch.setattr(api_run, "_prepare", spy)  # where `run` calls it
    result = await agentflow.run(
        EXAMPLES / "bug-triage.flow",
        {"title": "t", "body": "b"},
        workspace=EXAMPLES / "workspace",
        config=EXAMPLES / "flow.toml",
        model="test",
    )
    assert result.status in ("ok", "error")
    assert seen and seen[0] is not threading.main_thread()
