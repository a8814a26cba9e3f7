"""Projections through optional parts (docs/spec/LANGUAGE.md §4: "an absent optional field is null,
never bad_path"; docs/decisions.md "Lowering").

``xs[*].a`` with ``a: T?`` used to lower to the template ``xs[*].a``, which fails with ``bad_path``
on an element without ``a``.  A projection whose per-element path crosses an optional part is now a
``map`` step whose ``value`` body reads ``item`` with the defaults of plain reads; a missing
*required* field is still ``bad_path``.  The lowering itself is pinned by the golden
``tests/compiler/compile/projection_optional.flow``; these tests run real flows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentflow import api
from agentflow.runtime.tools.catalog import Catalog

HERE = Path(__file__).parent / "compile"

TYPES = """\
type Tag { b: text? }
type Inner { a: int }
type O {
  name: text
  a: int?
  o: Inner?
  tags: Tag[]
  maybe: Inner?[]
}
"""


def _run(tmp_path: Path, source: str, data: Any = None, *, tool: Any = None) -> Any:
    """Run ``source`` (a `.flow` file written to ``tmp_path``); ``tool`` is the result of the
    extern tool ``user__get()``.  The compiled plan's ``result_schema`` checks are dropped (as in
    a plan written by hand), so data that breaks the declared type reaches the templates: these
    tests are about what projections do with it."""
    from agentflow.ir.loader import load_plan_data

    src = tmp_path / "t.flow"
    src.write_text(source, encoding="utf-8")
    plan = api.compile_flow(src).plan
    for step in plan["steps"]:
        step.pop("result_schema", None)
    cat = Catalog()
    cat.register_function("user__get", lambda: tool)
    return api.run_sync(
        load_plan_data(plan, str(src)), data, catalog=cat, shape_cache=False, workspace=tmp_path
    )


def test_brief_reproduction_gives_null_for_the_absent_field(tmp_path):
    src = "input { os: { a: int? }[] }\nstage s -> int?[] { return input.os[*].a }\n"
    run = _run(tmp_path, src, {"os": [{}, {"a": 1}]})
    assert run.status == "ok", run.error
    assert run.output == [None, 1]


OS = [
    {"name": "p", "tags": [{}, {"b": "xy"}], "maybe": [None, {"a": 3}]},
    {"name": "q", "a": 2, "o": {"a": 5}, "tags": [], "maybe": []},
]


@pytest.mark.parametrize(
    ("expr", "ty", "expected"),
    [
        ("input.os[*].a", "int?[]", [None, 2]),
        ("input.os[*].o.a", "int?[]", [None, 5]),
        ("input.os[*].tags[*].b", "text?[][]", [[None, "xy"], []]),
        ("input.os[*].tags[*].b.count", "int?[][]", [[None, 2], []]),
        ("input.os[0].maybe[*].a", "int?[]", [None, 3]),
        ("input.os[*].maybe[*].a", "int?[][]", [[None, 3], []]),
        ("(input.os[*].a).count", "int", 2),
        ("input.os[*].name", "text[]", ["p", "q"]),  # no optional part: a plain template
        ("input.os[1].o.a", "int?", 5),  # plain reads through a `T?` value
        ("input.os[0].o.a", "int?", None),
        (
            '"a=${input.os[*].a} b=${input.os[*].tags[*].b}"',
            "text",
            'a=[null,2] b=[[null,"xy"],[]]',
        ),
    ],
)
def test_projection_reads_absent_optional_parts_as_null(tmp_path, expr, ty, expected):
    src = TYPES + f"input {{ os: O[] }}\nstage s -> {ty} {{ return {expr} }}\n"
    run = _run(tmp_path, src, {"os": OS})
    assert run.status == "ok", (expr, run.error)
    assert run.output == expected


def test_conditions_gates_and_bodies(tmp_path):
    src = TYPES + (
        "input { os: O[], n: int }\n"
        "stage cond -> text {\n"
        '  require input.os[*].a != [] else fail "none"\n'
        '  if null in input.os[*].o.a { return "missing ${input.os[*].o.a}" }\n'
        '  "all there"\n'
        "}\n"
        "stage gate -> text[] {\n"
        "  (filter input.os as x where null in x.tags[*].b and index < input.n)[*].name\n"
        "}\n"
        "stage body -> int?[][] { map input.os as x { x.tags[*].b.count } }\n"
        "stage out -> json { { cond: cond, gate: gate, body: body } }\n"
    )
    run = _run(tmp_path, src, {"os": OS, "n": 5})
    assert run.status == "ok", run.error
    assert run.output == {"cond": "missing [null,5]", "gate": ["p"], "body": [[None, 2], []]}
    run = _run(tmp_path, src, {"os": OS, "n": 0})  # the gate still reads `index` and the input
    assert run.status == "ok", run.error
    assert run.output["gate"] == []


def test_gate_needing_a_step_inside_a_map_body_is_outlined(tmp_path):
    src = TYPES + (
        "input { groups: O[][] }\n"
        "stage s -> text[][] {\n"
        "  map input.groups as g { (filter g as x where null in x.tags[*].b)[*].name }\n"
        "}\n"
    )
    p = {"name": "p", "tags": [{}], "maybe": []}
    q = {"name": "q", "tags": [{"b": "x"}], "maybe": []}
    run = _run(tmp_path, src, {"groups": [[p, q], [], [q, p]]})
    assert run.status == "ok", run.error
    assert run.output == [["p"], [], ["p"]]
    plan = api.compile_source(src, "t.flow").plan
    assert [s["id"] for s in plan["steps"]] == ["E0"]  # no id left behind by the gate attempt


@pytest.mark.parametrize(
    ("expr", "data", "missing"),
    [
        ("xs[*].name", [{"tags": [], "maybe": []}], "name"),
        ("xs[*].o.a", [{"name": "p", "o": {}, "tags": [], "maybe": []}], "a"),
        ("xs[*].tags[*].b", [{"name": "p", "maybe": []}], "tags"),
        ("xs[*].maybe[*].a", [{"name": "p", "tags": [], "maybe": [{}]}], "a"),
    ],
)
def test_missing_required_field_is_still_bad_path(tmp_path, expr, data, missing):
    src = TYPES + (
        "extern tool user__get() -> O[]\n"
        f"stage s -> json {{\n  let xs = user__get()\n  return {expr}\n}}\n"
    )
    run = _run(tmp_path, src, tool=data)
    assert run.status == "error", (expr, run.output)
    assert run.error["code"] == "bad_path"
    assert f"`{missing}` is missing" in run.error["message"]


def test_same_tool_data_with_optional_parts_absent_runs(tmp_path):
    src = TYPES + (
        "extern tool user__get() -> O[]\n"
        "stage s -> json {\n  let xs = user__get()\n"
        "  return { a: xs[*].a, oa: xs[*].o.a, b: xs[*].tags[*].b }\n}\n"
    )
    run = _run(tmp_path, src, tool=[{"name": "p", "tags": [{}], "maybe": []}])
    assert run.status == "ok", run.error
    assert run.output == {"a": [None], "oa": [None], "b": [[None]]}


def test_agent_prompt_and_input_see_nulls(chat_server, scripted_config, tmp_path):
    from support.chat_server import text

    chat_server.script([text(json.dumps({"value": "done"}))])
    run = api.run_sync(
        HERE / "projection_optional.flow",
        {"os": OS, "n": 5},
        config=scripted_config,
        shape_cache=False,
        workspace=tmp_path,
    )
    assert run.status == "ok", run.error
    assert run.output == "done"
    user = next(m["content"] for m in chat_server.requests[-1]["messages"] if m["role"] == "user")
    prompt, _, data = user.partition("Input (JSON):")
    assert prompt.strip() == "Summarize [null,2]."
    assert json.loads(data) == {"as": [None, 2], "names": ["p", "q"]}


def test_bad_path_message_parenthesizes_the_defaulted_object(tmp_path):
    src = TYPES + (
        "extern tool user__get() -> O[]\n"
        "stage s -> json {\n  let xs = user__get()\n  return xs[*].o.a\n}\n"
    )
    run = _run(tmp_path, src, tool=[{"name": "p", "o": {}, "tags": [], "maybe": []}])
    assert run.error["code"] == "bad_path"
    assert "path `(item.o ?? {a: null}).a`: `a` is missing" in run.error["message"]
    assert run.error["source"] == "t.flow:13:10"  # the projection `xs[*].o.a`


def test_compiled_plans_check_the_tool_result_before_any_projection(tmp_path):
    src = TYPES + (
        "extern tool user__get() -> O[]\n"
        "stage s -> json {\n  let xs = user__get()\n  return xs[*].name\n}\n"
    )
    (tmp_path / "t.flow").write_text(src, encoding="utf-8")
    cat = Catalog()
    cat.register_function("user__get", lambda: [{"tags": [], "maybe": []}])
    run = api.run_sync(tmp_path / "t.flow", catalog=cat, shape_cache=False, workspace=tmp_path)
    assert run.error["code"] == "output_validation"
    assert (
        "user__get returned a result that does not match its declared type"
        in (run.error["message"])
    )
    assert "`result[0]` lacks the required field `name`" in run.error["message"]


def test_an_effectful_index_in_an_optional_projection_is_refused():
    """It would run once per element inside the projection's map body: refused, with the fix."""
    src = (
        "extern tool user__idx() -> int\n"
        "input { os: { tags: { b: text? }[] }[] }\n"
        "stage s -> json {\n"
        "  return input.os[*].tags[user__idx()].b\n"
        "}\n"
    )
    with pytest.raises(api.CompileError) as info:
        api.compile_source(src, "idx.flow")
    (diag,) = info.value.diagnostics
    assert diag.code == "unsupported-construct"
    assert (diag.span.line, diag.span.column) == (4, 27)
    assert "let i = " in diag.hint
    # bound first, it is one call and compiles
    ok = src.replace(
        "  return input.os[*].tags[user__idx()].b",
        "  let i = user__idx()\n  return input.os[*].tags[i].b",
    )
    assert api.compile_source(ok, "idx.flow").plan["steps"][0]["tool_name"] == "user__idx"


UNION = 'type A { k: "a", a: int? }\ntype B { k: "b", a: text }\n'


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
    """A field optional in one member of a union (`a: int?` in `A`) is a `T?` field of `A | B`
    (docs/spec/LANGUAGE.md §4): absent, it reads null, in plain reads and projections."""
    src = UNION + f"input {{ {decl} }}\nstage s -> json {{ return {expr} }}\n"
    run = _run(tmp_path, src, data)
    assert run.status == "ok", run.error
    assert run.output == expected
