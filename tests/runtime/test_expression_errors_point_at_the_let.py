"""A run-time error of an expression written in a `let` that lowering inlined into the statement
reading it (docs/decisions.md "Where a run-time expression error points") is placed at the `let`
— its line and column, labelled by the let's name — not at the statement that reads it, in
every kind of step the let's text lands in: a value step, the plan's finish, a condition, a
`map` body, a message template."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.ir.loader import load_plan_data

PROGRAMS = {
    "a value step": (
        "stage s -> int {\n  let n = parse_int(input.raw)\n  let doubled = n * 2\n"
        "  return doubled + 1\n}\n",
        (4, 11),
        "s › n",
    ),
    "the finish after a step": (
        'stage s -> int {\n  let t = read_file(path: "x.txt")\n'
        "  let n = parse_int(input.raw)\n  return n + len(t)\n}\n",
        (5, 11),
        "s › n",
    ),
    "a condition": (
        'stage s -> text {\n  let n = parse_int(input.raw)\n  if n > 3 {\n    return "big"\n'
        '  }\n  return "small"\n}\n',
        (4, 11),
        "s › n",
    ),
    "a map body": (
        "stage s -> int[] {\n  map [input.raw] as x {\n    let v = parse_int(x)\n"
        "    return v + 1\n  }\n}\n",
        (5, 13),
        "s › item 0 › v",
    ),
    "a message template": (
        'stage s -> int {\n  let n = parse_int(input.raw)\n  require len(input.raw) > 9 else fail "bad ${n}"\n'
        "  return 1\n}\n",
        (4, 11),
        "s › n",
    ),
}


@pytest.mark.parametrize("kind", list(PROGRAMS))
def test_an_error_in_an_inlined_let_points_at_the_let(tmp_path, kind):
    body, (line, column), label = PROGRAMS[kind]
    source = f"flow loc\ninput {{ raw: text }}\n{body}"
    (tmp_path / "x.txt").write_text("abc", encoding="utf-8")
    compiled = api.compile_source(source, "loc.flow")
    plan = load_plan_data(compiled.plan, "loc.flow")
    result = api.run_sync(plan, {"raw": "abc"}, workspace=str(tmp_path))
    assert result.status == "error", (source, result.output)
    error = result.error
    assert error is not None and error.code == "parse_error", error
    assert error.source == f"loc.flow:{line}:{column}", (kind, error)
    assert error.where.get("label") == label, (kind, error.where)


def test_an_overflow_in_a_let_read_by_a_let_points_at_the_inner_let(tmp_path):
    source = (
        "flow loc\ninput { raw: text }\nstage s -> int {\n  let n = parse_int(input.raw)\n"
        "  let doubled = n * 2\n  return doubled + 1\n}\n"
    )
    plan = load_plan_data(api.compile_source(source, "loc.flow").plan, "loc.flow")
    result = api.run_sync(plan, {"raw": "4611686018427387904"}, workspace=str(tmp_path))
    error = result.error
    assert error is not None and error.code == "arithmetic", error
    assert (error.source, error.where.get("label")) == ("loc.flow:5:17", "s › doubled")


def test_an_error_of_the_statement_itself_stays_at_the_statement(tmp_path):
    source = (
        "flow loc\ninput { raw: text }\nstage s -> int {\n  let n = parse_int(input.raw)\n"
        "  return n * n * n * n * n * n * n * n\n}\n"
    )
    plan = load_plan_data(api.compile_source(source, "loc.flow").plan, "loc.flow")
    result = api.run_sync(plan, {"raw": "99999"}, workspace=str(tmp_path))
    error = result.error
    assert error is not None and error.code == "arithmetic", error
    # at the failing product in the statement (its caret on the sub-expression: trialrun8)
    assert (error.source, error.where.get("label")) == ("loc.flow:5:10", "s › return")
