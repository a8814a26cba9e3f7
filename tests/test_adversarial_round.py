"""Defects found by the adversarial pass over optional projections, the parser's error path and
contextual keywords (session 2).

* A field optional in one member of a union (`A | B`, `a: int?` in `A`) is a `T?` field
  (LANGUAGE.md §4): reading it gives null when it is absent, in plain reads and projections.
* A filter gate that needs a step and then reads an outer loop variable outlines the body it is
  in; the attempt must not leave a hole in the `E<n>` numbering (LANGUAGE.md §10).
* Keywords are contextual (LANGUAGE.md §1): `input.a` (or a name like `task`) may begin a
  statement after another statement, where LALR's merged lookaheads made it an agent clause.
* Error recovery gives the same line numbers with its line index as by counting newlines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.grammar.parser import _Lines

UNION = 'type A { k: "a", a: int? }\ntype B { k: "b", a: text }\n'


def _run(tmp_path: Path, source: str, data: Any = None) -> Any:
    src = tmp_path / "t.flow"
    src.write_text(source, encoding="utf-8")
    return api.run_sync(src, data, shape_cache=False, workspace=tmp_path)


@pytest.mark.parametrize(
    ("decl", "expr", "data", "expected"),
    [
        ("o: A | B", "input.o.a", {"o": {"k": "a"}}, None),
        ("o: A | B", "input.o.a", {"o": {"k": "b", "a": "x"}}, "x"),
        ("o: (A | B)?", "input.o.a", {"o": {"k": "a"}}, None),
        ("o: (A | B)?", "input.o.a", {}, None),
        ("os: (A | B)[]", "input.os[*].a", {"os": [{"k": "a"}, {"k": "b", "a": "x"}]}, [None, "x"]),
        ("os: { x: A | B }[]", "input.os[*].x.a", {"os": [{"x": {"k": "a"}}]}, [None]),
    ],
)
def test_optional_field_of_a_union_member_reads_null(tmp_path, decl, expr, data, expected):
    src = UNION + f"input {{ {decl} }}\nstage s -> json {{ return {expr} }}\n"
    run = _run(tmp_path, src, data)
    assert run.status == "ok", run.error
    assert run.output == expected


def test_gate_attempt_that_outlines_leaves_no_hole_in_step_ids(tmp_path):
    src = (
        "type O { name: text, a: int? }\n"
        "extern tool user__get() -> int\n"
        "input { os: O[] }\n"
        "stage s -> text[][] {\n"
        "  let z = user__get()\n"
        "  return map input.os as x {\n"
        "    (filter input.os as y where null in input.os[*].a and y.name == x.name)[*].name\n"
        "  }\n"
        "}\n"
    )
    plan = api.compile_source(src, "t.flow").plan
    assert [s["id"] for s in plan["steps"]] == ["E0", "E1"]


@pytest.mark.parametrize("word", ["input", "task", "model", "tools", "expect", "timeout", "as"])
def test_contextual_keyword_begins_a_statement_after_a_statement(word):
    if word == "input":
        body = '  let x = 1\n  require x > 0 else fail "m"\n  input.a + x\n'
    else:
        body = f"  let {word} = 1\n  let y = 2\n  {word} + y\n"
    src = f"input {{ a: int }}\nstage s -> int {{\n{body}}}\n"
    result = check_source(src, "t.flow")
    assert result.ok, [d.message for d in result.diagnostics]


def test_agent_clauses_after_an_expression_stay_keywords():
    src = (
        'use agent "w" as w\n'
        "stage s -> text {\n"
        '  agent(w) {\n    task "do ${1}"\n    input { a: 1 }\n    expect text\n'
        "    timeout 2m\n  }\n"
        "}\n"
    )
    result = check_source(src, "t.flow")
    assert result.ok, [d.message for d in result.diagnostics]


def test_line_index_matches_counting_newlines():
    text = "a\n\nbc\nd\n" * 3
    lines = _Lines(text)
    for i in range(len(text) + 1):
        assert lines.line(i) == text.count("\n", 0, i) + 1


def test_error_on_every_item_gives_every_line():
    text = "flow x\n" + "stage s -> int { let x = = 1 }\n" * 300
    diags = check_source(text, "t.flow").diagnostics
    syntax = [d for d in diags if d.code == "syntax-error"]
    assert [d.span.line for d in syntax] == list(range(2, 302))
    assert all(d.span.column == 26 for d in syntax)


def test_tab_expansion_keeps_display_columns():
    from agentflow.compiler.render import _expand

    assert _expand("\tab\tc", 1) == ("    ab  c", 0)
    assert _expand("\tab\tc", 4) == ("    ab  c", 6)
    assert _expand("a\t\tb", 4) == ("a       b", 8)
    assert _expand("ab", 5) == ("ab", 4)  # past the end: the missing columns count


def test_render_text_of_many_diagnostics_shows_each_line():
    from agentflow.compiler.render import render_text

    text = "flow x\n" + "".join(f"stage s{i} -> int {{ let x = = {i} }}\n" for i in range(50))
    diags = check_source(text, "t.flow").diagnostics
    out = render_text(diags, {"t.flow": text})
    for i in range(50):
        assert f"{i + 2} | stage s{i} -> int {{ let x = = {i} }}" in out
