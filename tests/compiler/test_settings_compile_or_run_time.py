"""Clauses that take an expression (docs/decisions.md "Settings: compile time or run time").

`limit` and `max_iterations` take any `int` expression: a constant one (a literal, arithmetic of
constants, a `let` of one) is checked when the flow is compiled and written into the plan as a
number; any other becomes a template the run evaluates and checks the same way (a `validation`
error naming the `.flow` source). `timeout`, `retry { attempts }` and budget limits are fixed in
the plan: they take constant expressions, and anything only known at run time is
`invalid-value` with a note at the part that is. Nothing the user wrote is dropped.
"""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.tools.catalog import Catalog

HEAD = """\
input { n: int, t: duration, xs: int[] }
type Out { ok: bool }
use agent "a" as a
extern tool user__inc(n: int) -> int
"""


def _agent(clause: str, lets: str = "") -> str:
    return HEAD + f'stage s -> Out {{\n{lets}  agent(a) {{ task "x" expect Out {clause} }}\n}}\n'


def _map(limit: str, lets: str = "") -> str:
    return HEAD + (
        f"stage s -> int[] {{\n{lets}  parallel map input.xs as x limit {limit} "
        "{ user__inc(n: x) }\n}\n"
    )


def _step(source: str) -> dict:
    return api.compile_source(source, "s.flow").plan["steps"][0]


# -- constants are computed and written into the plan ---------------------------------------


@pytest.mark.parametrize(
    "clause, lets, key, value",
    [
        ("timeout 90s", "", "timeout", "90s"),
        ("timeout t", "  let t = 90s\n", "timeout", "90s"),
        ("timeout 1m + 30s", "", "timeout", "1m30s"),
        ("timeout 2h - 1500ms", "", "timeout", "1h59m58s500ms"),
        ("retry { attempts: 1 + 2 }", "", "retry", {"attempts": 3, "on": ["transient"]}),
        ("retry { attempts: k }", "  let k = 2\n", "retry", {"attempts": 2, "on": ["transient"]}),
        ("max_iterations 2 + 1", "", "max_iterations", 3),
        ("max_iterations k * 2", "  let k = 3\n", "max_iterations", 6),
        ("budget { tokens: 1000 * 50, cost: 0.5 }", "", "budget", {"tokens": 50000, "cost": 0.5}),
    ],
)
def test_a_constant_setting_is_computed_into_the_plan(clause, lets, key, value):
    step = _step(_agent(clause, lets))
    holder = step["input"] if key in ("max_iterations", "budget") else step
    assert holder[key] == value


@pytest.mark.parametrize("limit, lets, value", [("3", "", 3), ("k + 1", "  let k = 1\n", 2)])
def test_a_constant_limit_is_the_maps_concurrency(limit, lets, value):
    assert _step(_map(limit, lets))["input"]["concurrency"] == value


# -- limit and max_iterations: computed at run time -----------------------------------------


def test_a_computed_limit_is_a_template_the_run_checks():
    plan = api.compile_source(_map("input.n"), "s.flow").plan
    assert plan["steps"][0]["input"]["concurrency"] == "{{ input.n }}"
    catalog = Catalog()
    catalog.register_function("user__inc", lambda n: n + 1)
    loaded = load_plan_data(plan, "s.plan.yaml")
    ok = api.run_sync(loaded, {"n": 2, "t": "1s", "xs": [1, 2]}, catalog=catalog, shape_cache=False)
    assert (ok.status, ok.output) == ("ok", [2, 3])
    for n in (0, 1001):
        run = api.run_sync(
            loaded, {"n": n, "t": "1s", "xs": [1]}, catalog=catalog, shape_cache=False
        )
        assert run.status == "error"
        assert run.error["code"] == "validation"
        assert run.error["source"] == "s.flow:6:12"
        assert run.error["message"] == (
            f"the limit `input.n` of the `parallel map` must be an integer from 1 to 1000, got {n}"
        )


def test_a_computed_max_iterations_is_a_template_the_run_checks(scripted_config):
    plan = api.compile_source(_agent("max_iterations input.n + 1"), "s.flow").plan
    assert plan["steps"][0]["input"]["max_iterations"] == "{{ input.n + 1 }}"
    run = api.run_sync(
        load_plan_data(plan, "s.plan.yaml"),
        {"n": -1, "t": "1s", "xs": []},
        config=scripted_config,
        shape_cache=False,
    )
    assert run.status == "error" and run.error["code"] == "validation"
    assert run.error["source"] == "s.flow:6:3"
    assert run.error["message"] == "`max_iterations` must be an integer from 1 to 1000, got 0"


@pytest.mark.parametrize(
    "source, message",
    [
        (_map("0"), "`limit` must be positive, found 0"),
        (_map("k - 3", "  let k = 2\n"), "`limit` must be positive, found -1"),
        (_map("1001"), "`limit` must be at most 1000, found 1001"),
        (_agent("max_iterations 0"), "`max_iterations` must be positive, found 0"),
        (_agent("max_iterations 500 * 3"), "`max_iterations` must be at most 1000, found 1500"),
        (_agent("retry { attempts: 7 * 3 }"), "`attempts` must be at most 20, found 21"),
        (_agent("retry { attempts: 1 - 2 }"), "`attempts` must be zero or more, found -1"),
    ],
)
def test_a_constant_out_of_range_is_an_invalid_value_whose_hint_gives_the_range(source, message):
    diags = check_source(source, "s.flow").diagnostics
    (diag,) = [d for d in diags if d.code != "unused-alias"]  # the header's agent is not called
    assert (diag.code, diag.message) == ("invalid-value", message)
    what = message.split(" must ")[0]
    low = "0" if what == "`attempts`" else "1"
    high = "20" if what == "`attempts`" else "1000"
    assert diag.hint is not None and f"{what} takes a whole number from {low} to {high}" in (
        diag.hint
    )


# -- timeout, retry attempts and budgets: fixed when the flow is compiled ---------------------


@pytest.mark.parametrize(
    "clause, message, note",
    [
        (
            "timeout input.t",
            "`timeout` must be a constant: the plan gives the step a fixed timeout when the "
            "flow is compiled",
            ("`input.t` is only known when the flow runs", 6, 42),
        ),
        (
            "timeout 1m + input.t",
            "`timeout` must be a constant: the plan gives the step a fixed timeout when the "
            "flow is compiled",
            ("`input.t` is only known when the flow runs", 6, 47),
        ),
        (
            "retry { attempts: input.n }",
            "`attempts` must be a constant: the plan fixes a step's retries when the flow is "
            "compiled",
            ("`input.n` is only known when the flow runs", 6, 52),
        ),
        (
            "retry { attempts: user__inc(n: 1) }",
            "`attempts` must be a constant: the plan fixes a step's retries when the flow is "
            "compiled",
            ("this value is only known when the flow runs", 6, 52),
        ),
        (
            "budget { inferences: input.n }",
            "budget `inferences` must be a constant: budgets are fixed when the flow is "
            "compiled (`flowc cost` reads them)",
            ("`input.n` is only known when the flow runs", 6, 55),
        ),
    ],
)
def test_a_setting_known_only_at_run_time_is_refused_where_the_plan_fixes_it(clause, message, note):
    (diag,) = check_source(_agent(clause), "s.flow").diagnostics
    assert (diag.code, diag.message) == ("invalid-value", message)
    (n,) = diag.notes
    assert (n.message, n.span.line, n.span.column) == note
    assert diag.hint.startswith("write ")


def test_a_non_positive_constant_timeout_is_an_invalid_duration():
    (diag,) = check_source(_agent("timeout 1s - 1s"), "s.flow").diagnostics
    assert (diag.code, diag.message) == (
        "invalid-duration",
        "`timeout` must be a positive duration",
    )


def test_limit_on_a_sequential_map_is_reported_not_dropped():
    src = HEAD + "stage s -> int[] {\n  map input.xs as x limit 2 { x }\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert diag.code == "syntax-error"
    assert diag.message == "`limit` needs `parallel map`: a `map` runs its items one at a time"
    assert (diag.span.line, diag.span.column) == (6, 27)


def test_plan_validation_bounds_literal_concurrency_and_max_iterations():
    plan = api.compile_source(_map("3"), "s.flow").plan
    plan["steps"][0]["input"]["concurrency"] = 1001
    with pytest.raises(api.PlanLoadError) as e:
        load_plan_data(plan, "s.plan.yaml")
    assert "`concurrency` must be at most 1000, not 1001" in str(e.value)
