"""`retry { attempts }` and `timeout` are fixed when the flow is compiled (the plan holds a number
or a duration there): one only known at run time is `invalid-value` at check time, not an
internal compiler error (or, for `timeout`, silently no timeout); `limit` and `max_iterations`
may be computed (the run checks them)."""

from __future__ import annotations

import pytest

from agentflow.api import compile_source
from agentflow.compiler.api import check_source

HEAD = """\
input { n: int, t: duration, xs: int[] }
type Out { ok: bool }
use agent "a" as a
"""


def _agent(clause: str) -> str:
    return HEAD + f'stage s -> Out {{\n  agent(a) {{ task "x" expect Out {clause} }}\n}}\n'


@pytest.mark.parametrize(
    "source, what",
    [
        (_agent("retry { attempts: input.n }"), "attempts"),
        (_agent("timeout input.t"), "timeout"),
    ],
)
def test_a_setting_known_only_at_run_time_is_an_invalid_value(source, what):
    diags = check_source(source, "s.flow").diagnostics
    assert [(d.code, d.span.line) for d in diags] == [("invalid-value", 5)]
    assert diags[0].message.startswith(f"`{what}` must be a constant")
    assert diags[0].hint.startswith("write a ")


@pytest.mark.parametrize(
    "source",
    [
        HEAD + "stage s -> int[] {\n  parallel map input.xs as x limit input.n { x }\n}\n",
        _agent("max_iterations input.n"),
    ],
)
def test_a_computed_limit_or_round_budget_checks_clean(source):
    diags = check_source(source, "s.flow").diagnostics
    # the header's agent is not called by the `map` case: unused-alias, not this test's concern
    assert [d for d in diags if d.code != "unused-alias"] == []


@pytest.mark.parametrize(
    "clause, key, value",
    [
        ("max_iterations 3", "max_iterations", 3),
        ("timeout 90s", "timeout", "90s"),
        ("retry { attempts: 2 }", "retry", {"attempts": 2, "on": ["transient"]}),
    ],
)
def test_literal_settings_reach_the_plan(clause, key, value):
    step = compile_source(_agent(clause), "s.flow").plan["steps"][0]
    assert (step["input"] if key == "max_iterations" else step)[key] == value


def test_a_literal_limit_is_the_maps_concurrency():
    src = HEAD + "stage s -> int[] {\n  parallel map input.xs as x limit 3 { x }\n}\n"
    assert compile_source(src, "s.flow").plan["steps"][0]["input"]["concurrency"] == 3
