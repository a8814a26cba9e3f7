"""A `use` alias is only an agent target: used as a value anywhere — even where `json` is
expected, in an object or an interpolation — it is a `type-mismatch` at check time (it used to
pass the checker and fail `flowc compile` as an internal compiler error)."""

from __future__ import annotations

import pytest

from agentflow.api import compile_source
from agentflow.compiler.api import check_source

HEAD = 'use agent "helper" as helper\nuse team "dev-team" as dev\ntype Out { ok: bool }\n'


@pytest.mark.parametrize(
    "body",
    [
        "let x = helper\n  return x",
        "return { who: helper }",
        'return "${helper}"',
        "return [dev]",
    ],
)
def test_an_alias_used_as_a_value_is_a_type_mismatch(body):
    diags = check_source(HEAD + f"stage s -> json {{\n  {body}\n}}\n", "s.flow").diagnostics
    diags = [d for d in diags if d.code != "unused-alias"]  # no agent(…) names the aliases here
    assert [d.code for d in diags] == ["type-mismatch"]
    assert "alias, not a value" in diags[0].message
    assert diags[0].hint == "a `use` alias can only be the target of `agent(…)`"


def test_a_team_member_outside_an_agent_target_says_what_it_is_for():
    diags = check_source(HEAD + "stage s -> json {\n  return dev.main\n}\n", "s.flow").diagnostics
    (diag,) = [d for d in diags if d.code != "unused-alias"]  # no agent(…) names the aliases
    assert diag.message == "`dev` is a `use team` alias, not a value"
    assert diag.hint == "a `use` alias can only be the target of `agent(…)`"


def test_aliases_as_agent_targets_still_compile():
    src = HEAD + (
        'stage a -> Out {\n  agent(helper) { task "x" expect Out tools none }\n}\n'
        'stage b -> Out {\n  agent(dev.main) { task "x" expect Out tools none }\n}\n'
        'stage c -> Out {\n  agent(dev.member("backend")) { task "x" expect Out tools none }\n}\n'
    )
    plan = compile_source(src, "s.flow").plan
    assert [s["input"]["agent"]["kind"] for s in plan["steps"]] == [
        "alias",
        "team.main",
        "team.member",
    ]
