"""`unused-alias` (docs/diagnostics.md): the hint of each kind, and no warning where the call may
be in an item that failed to parse. The golden tests/compiler/check/unused_alias.flow pins the
messages."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def _unused(text: str) -> list[tuple[int, str, str | None]]:
    result = check_source(text, "u.flow")
    return [
        (d.span.line, d.message, d.hint) for d in result.diagnostics if d.code == "unused-alias"
    ]


def test_an_unused_agent_alias_hints_removing_or_calling_it():
    text = 'use agent "unused" as unused\nstage s -> int { return 1 }\n'
    assert _unused(text) == [
        (
            1,
            "`unused` is never called: no `agent(…)` names this `use agent` alias",
            "remove it, or call it: `agent(unused) { … }`",
        )
    ]


def test_an_unused_team_alias_hints_its_main_agent():
    text = 'use team "ops-team" as ops\nstage s -> int { return 1 }\n'
    assert [h for _, _, h in _unused(text)] == ["remove it, or call it: `agent(ops.main) { … }`"]


def test_a_called_alias_and_a_team_used_through_main_are_not_reported():
    text = (
        'use agent "w" as w\nuse team "dev" as dev\n'
        'stage a -> text { agent(w) { task "a" tools none expect text } }\n'
        'stage b -> text { agent(dev.main) { task "b" tools none expect text } }\n'
    )
    assert _unused(text) == []


def test_a_file_with_a_syntax_error_is_not_checked_for_unused_aliases():
    # the stage that calls `w` failed to parse: its call is unknown, so nothing is reported
    text = 'use agent "w" as w\nstage a -> text { agent(w) { task "a" tools none expect text } +\n'
    result = check_source(text, "u.flow")
    assert [d.code for d in result.diagnostics] == ["syntax-error"]
