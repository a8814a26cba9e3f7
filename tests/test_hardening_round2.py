"""Regression tests for adversarial findings, round 2 (/tmp/breakit2/FINDINGS.md #5, #7, #9, #10,
#11, #12, #13): each gives a clean, positioned error instead of a silent wrong value, a
traceback, or a silently ended process."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.errors import ConfigError, PlanLoadError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.executor import run_plan
from agentflow.runtime.expressions import ExprError, evaluate_condition
from agentflow.runtime.shape_cache import ShapeCache
from agentflow.runtime.tools.catalog import Catalog


def _problems(text: str) -> list[str]:
    with pytest.raises(PlanLoadError) as exc:
        load_plan_text(text, "p.yaml")
    return [str(p) for p in exc.value.errors]


def _one_step(step: str) -> str:
    return f"version: 1\nname: a\nsteps:\n  - {step}\n"


# -- #5 ask: when_unanswered.default must be a valid answer ------------------------------------


def test_literal_ask_default_outside_choices_is_a_load_error():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [a, b], "
            "when_unanswered: {default: c}}}"
        )
    )
    assert errs == [
        "p.yaml:4:98: steps[0].input.when_unanswered.default: the default 'c' is not one of "
        "the choices ['a', 'b']"
    ]


def test_literal_ask_default_against_schema_is_a_load_error():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, schema: {type: integer}, "
            "when_unanswered: {default: nope}}}"
        )
    )
    assert errs == [
        "p.yaml:4:106: steps[0].input.when_unanswered.default: the default does not match "
        "`schema`: 'nope' is not of type 'integer'"
    ]


def test_valid_literal_ask_defaults_load():
    load_plan_text(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [1, 2], "
            "schema: {type: integer}, when_unanswered: {default: 2}}}"
        )
    )


async def test_templated_ask_default_is_checked_at_run_time():
    plan = load_plan_text(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [a, b], "
            "when_unanswered: {default: '{{ input.d }}'}}}"
        )
    )
    bad = await run_plan(plan, {"d": "c"}, catalog=Catalog())
    assert bad.status == "error"
    assert bad.error["code"] == "validation" and bad.error["step_path"] == "E0"
    assert bad.error["message"] == (
        "`when_unanswered.default` of `pick`: 'c' is not one of ['a', 'b']"
    )
    good = await run_plan(plan, {"d": "b"}, catalog=Catalog())
    assert good.status == "ok" and good.output == {"answer": "b", "answered": False}


# -- #9 verify: a non-bool `ok` is an error, like decide ----------------------------------------


async def test_verify_check_with_non_bool_ok_is_a_step_error():
    plan = load_plan_text(
        _one_step("{id: E0, tool_name: verify, input: {checks: [{ok: '{{ 1 }}', message: m}]}}")
    )
    res = await run_plan(plan, catalog=Catalog())
    assert res.status == "error"
    assert res.error["code"] == "validation"
    assert res.error["message"] == "check 0: `ok` must be a bool, got number"
    ok = load_plan_text(
        _one_step(
            "{id: E0, tool_name: verify, input: {checks: [{ok: '{{ 1 == 2 }}', message: m}, "
            "{ok: {value: 1, op: eq, to: 1}, message: n}]}}"
        )
    )
    res = await run_plan(ok, catalog=Catalog())
    assert res.output == {"passed": False, "failures": ["m"]}


# -- #10 map/filter/reduce over null ------------------------------------------------------------


@pytest.mark.parametrize(
    "step",
    [
        "{id: E0, tool_name: map, input: {over: '{{ input.x }}', do: {tool_name: value, "
        "input: {value: 1}}}}",
        "{id: E0, tool_name: filter, input: {over: '{{ input.x }}', when: {expr: 'true'}}}",
        "{id: E0, tool_name: reduce, input: {over: '{{ input.x }}', initial: 0, "
        "do: {tool_name: value, input: {value: 1}}}}",
    ],
)
async def test_over_null_is_an_error_not_an_empty_list(step):
    res = await run_plan(load_plan_text(_one_step(step)), {"x": None}, catalog=Catalog())
    assert res.status == "error"
    assert res.error["code"] == "validation"
    assert res.error["message"].startswith("`over` must be a list, got null")


async def test_over_with_a_default_opts_in_to_no_items():
    step = (
        "{id: E0, tool_name: map, input: {over: '{{ input.x ?? [] }}', "
        "do: {tool_name: value, input: {value: 1}}}}"
    )
    res = await run_plan(load_plan_text(_one_step(step)), {"x": None}, catalog=Catalog())
    assert res.status == "ok" and res.output == []


# -- #11 retry bounds ---------------------------------------------------------------------------


def test_absurd_retry_settings_are_load_errors():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: value, input: {value: 1}, retry: {attempts: 21, on: [timeout], "
            "backoff: {initial: 100000h, factor: 1e308, max: 2h}}}"
        )
    )
    assert errs == [
        "p.yaml:4:69: steps[0].retry.attempts: `attempts` is 21; at most 20 extra tries",
        "p.yaml:4:107: steps[0].retry.backoff.initial: `backoff.initial` is 100000h; "
        "a retry waits at most 1h",
        "p.yaml:4:124: steps[0].retry.backoff.factor: `backoff.factor` is 1e+308; at most 10",
        "p.yaml:4:136: steps[0].retry.backoff.max: `backoff.max` is 2h; a retry waits at most 1h",
    ]


def test_retry_at_the_bounds_loads():
    load_plan_text(
        _one_step(
            "{id: E0, tool_name: value, input: {value: 1}, retry: {attempts: 20, on: [timeout], "
            "backoff: {initial: 1h, factor: 10, max: 60m}}}"
        )
    )


# -- #13 condition messages ---------------------------------------------------------------------


def test_contains_condition_error_names_the_op():
    with pytest.raises(ExprError) as exc:
        evaluate_condition({"value": 5, "op": "contains", "to": 3}, {})
    assert exc.value.message == (
        "condition `contains` needs an array, text, map or range, got number"
    )
    with pytest.raises(ExprError) as exc:
        evaluate_condition({"value": 1, "op": "in", "to": "abc"}, {})
    assert exc.value.message == "condition `in` on a text needs a text operand, got number"


# -- #7 user tool modules -----------------------------------------------------------------------


def _tools_dir(tmp_path, module: str, body: str):
    (tmp_path / module).write_text(body)
    (tmp_path / "flow.toml").write_text(
        f'# tools\n[tools]\nentry_points = false\nmodules = ["{module}"]\n'
    )
    return tmp_path


@pytest.mark.parametrize(
    "body, why",
    [
        ("import sys\nsys.exit(3)\n", "it called sys.exit(3)"),
        ("raise SystemExit\n", "it called sys.exit()"),
        ("raise GeneratorExit('x')\n", "GeneratorExit: x"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ],
)
def test_user_module_failing_at_import_is_a_config_error(tmp_path, monkeypatch, body, why):
    _tools_dir(tmp_path, "m.py", body)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["tools"])
    assert res.exit_code == 1, res.output
    assert (
        f"error: {tmp_path / 'flow.toml'}:4:1: [tools] modules: importing 'm.py' failed: {why}"
        in res.stderr
    )


def test_user_module_with_unsupported_annotation_names_the_function(tmp_path):
    from agentflow.runtime.config import load_config
    from agentflow.runtime.tools.build import build_catalog

    _tools_dir(
        tmp_path,
        "ann.py",
        "import socket\n\ndef f(s: socket.socket, n: int = 1) -> int:\n    return 1\n",
    )
    config = load_config(tmp_path / "flow.toml", env={})
    with pytest.raises(ConfigError) as exc:
        build_catalog(config)
    assert str(exc.value) == (
        f"{tmp_path / 'flow.toml'}:4:1: [tools] modules: 'ann.py': tool function `f`: "
        "`s: socket.socket` cannot become a JSON Schema input; annotate parameters with JSON "
        "types (str, int, float, bool, list[...], dict[str, ...]), Optional, Literal or a "
        "pydantic model"
    )


# -- #12 flowc cache edge cases -----------------------------------------------------------------


def test_cache_dir_that_is_a_file_is_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(blocker))
    runner = CliRunner()
    for cmd in (["cache", "show"], ["cache", "clear"]):
        res = runner.invoke(main, cmd)
        assert res.exit_code == 1
        assert f"{blocker} is not a directory" in res.stderr


def test_foreign_shapes_table_is_never_touched(tmp_path, monkeypatch):
    db = tmp_path / "shapes.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE shapes (x)")
    conn.execute("INSERT INTO shapes VALUES (1)")
    conn.commit()
    conn.close()
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path))
    runner = CliRunner()
    for cmd in (["cache", "clear"], ["cache", "show"]):
        res = runner.invoke(main, cmd)
        assert res.exit_code == 1
        assert "not an agentflow shape cache" in res.stderr
    with pytest.raises(sqlite3.DatabaseError):
        ShapeCache(db).record_shape("t__x", {"type": "integer"})
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT x FROM shapes").fetchall() == [(1,)]
    conn.close()


def test_empty_cache_env_is_unset_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    res = CliRunner().invoke(main, ["cache", "show"])
    assert res.exit_code == 0
    assert "AGENTFLOW_CACHE_DIR is empty, so it is ignored" in res.stderr
    assert f"{tmp_path / 'agentflow' / 'shapes.sqlite'}: no shapes recorded" in res.stderr


def test_flow_retry_attempts_bound_is_a_check_diagnostic():
    from pathlib import Path

    from agentflow.compiler.api import check_source

    text = Path("/work/shared/examples/bug-triage.flow").read_text()
    assert "retry { attempts: 1," in text
    result = check_source(text.replace("retry { attempts: 1,", "retry { attempts: 21,"), "b.flow")
    msgs = [(d.code, d.message) for d in result.diagnostics]
    assert ("invalid-value", "`attempts` must be at most 20, found 21") in msgs
