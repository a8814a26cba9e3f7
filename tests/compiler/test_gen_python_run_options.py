"""The run functions of a `flowc gen python` module take every keyword option of
:func:`agentflow.run`, spelled as its signature spells them (name, annotation, default, order),
and so does :func:`agentflow.client.run_flow` they call: a new option of `agentflow.run` fails
here until the generator's table (`gen_python.RUN_OPTIONS`) has it
(docs/reference/python-clients.md)."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import pytest
from support.paths import EXAMPLES

import agentflow
from agentflow import api, client
from agentflow.compiler.gen_python import RUN_OPTIONS
from agentflow.errors import InputError


def _options(fn: object) -> list[tuple[str, object, object, object]]:
    """The keyword-only parameters of ``fn``: name, kind, annotation (source text), default."""
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    return [(p.name, p.kind, p.annotation, p.default) for p in params if p.kind is p.KEYWORD_ONLY]


def _generated(tmp_path: Path, flow: Path = EXAMPLES / "bug-triage.flow") -> types.ModuleType:
    module = tmp_path / f"{flow.stem.replace('-', '_')}.py"
    module.write_text(api.gen_python(flow, module), encoding="utf-8")
    namespace = types.ModuleType(module.stem)
    namespace.__file__ = str(module)
    exec(compile(module.read_text(encoding="utf-8"), str(module), "exec"), namespace.__dict__)
    return namespace


def test_the_generator_table_is_agentflow_runs_signature():
    wanted = _options(agentflow.run)
    table = [(n, inspect.Parameter.KEYWORD_ONLY, a, eval(d)) for n, a, d in RUN_OPTIONS]
    assert table == wanted


@pytest.mark.parametrize("name", ["run_bug_triage", "run_bug_triage_sync"])
def test_generated_run_functions_take_every_option_of_agentflow_run(tmp_path, name):
    generated = getattr(_generated(tmp_path), name)
    assert _options(generated) == _options(agentflow.run)
    assert _options(generated) == _options(agentflow.run_sync)


@pytest.mark.parametrize("fn", [client.run_flow, client.run_flow_sync])
def test_client_run_flow_takes_every_option_of_agentflow_run(fn):
    assert _options(fn) == _options(agentflow.run)


CONFIRM = """
flow confirm "one question"

stage pick -> "ship" | "hold" {
  let choice = ask "Ship or hold?" expect "ship" | "hold" default "hold"
  return choice
}
"""


def test_answers_reach_the_run_through_a_generated_client(tmp_path):
    flow = tmp_path / "confirm.flow"
    flow.write_text(CONFIRM, encoding="utf-8")
    generated = _generated(tmp_path, flow)
    result = generated.run_confirm_sync(
        None, workspace=tmp_path, shape_cache=False, answers={"choice": "ship"}
    )
    assert result.ok and result.output == "ship"
    with pytest.raises(InputError, match="choise"):  # the name is checked before the run
        generated.run_confirm_sync(None, workspace=tmp_path, answers={"choise": "ship"})
