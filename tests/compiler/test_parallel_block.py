"""The checker, the lowering and `flowc fmt` of `parallel [limit N] { name: expr, … }`
(docs/reference/control.md "parallel blocks", docs/decisions.md "parallel blocks"): the block's
type is the object of its branches' types; names are unique identifiers; `limit` is a
`parallel map`'s; one branch is a warning; effectful branches become the bodies of one
`parallel` step keyed by the names written, pure ones are computed in the value."""

from __future__ import annotations

import pytest

from agentflow.api import compile_source
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source

HEAD = """\
flow f
input { diff: text, path: text, n: int }
use agent "reviewer" as style
type StyleReview { ok: bool }
extern tool check_deps(path: text) -> { ok: bool }
"""

REVIEW = (
    HEAD
    + """\
stage review {
  parallel limit 2 {
    style: agent(style) { task "Review ${input.diff}" expect StyleReview },
    deps: check_deps(path: input.path),
    lines: split(input.diff, "\\n").count,
  }
}
"""
)


def _codes(text: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check_source(text, "f.flow").diagnostics]


def test_the_block_has_the_object_type_of_its_branches():
    result = check_source(REVIEW, "f.flow")
    assert result.diagnostics == []
    shown = str(result.stage_types["review"])
    assert shown == "{ style: StyleReview, deps: { ok: bool }, lines: int }"


def test_a_branch_of_the_wrong_type_for_the_stage_is_a_type_mismatch():
    text = REVIEW.replace(
        "stage review {", "stage review -> { style: StyleReview, deps: int, lines: int } {"
    )
    assert [c for c, _ in _codes(text)] == ["type-mismatch"]


def test_a_name_given_twice_is_a_duplicate_field_naming_the_branch():
    text = REVIEW.replace("    lines:", "    deps:")
    (diag,) = check_source(text, "f.flow").diagnostics
    assert diag.code == "duplicate-field"
    assert diag.message == "branch `deps` is given twice in this `parallel` block"
    assert diag.notes[0].message == "first given here"


def test_a_branch_named_by_a_string_that_is_no_identifier_is_refused():
    text = REVIEW.replace("    lines:", '    "line count":')
    (diag,) = check_source(text, "f.flow").diagnostics
    assert diag.code == "syntax-error" and "`line count`" in diag.message and diag.hint


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("0", "`limit` must be positive, found 0"),
        ("1001", "`limit` must be at most 1000, found 1001"),
    ],
)
def test_a_constant_limit_is_bounded_as_a_parallel_maps(limit: str, message: str):
    text = REVIEW.replace("parallel limit 2", f"parallel limit {limit}")
    assert _codes(text) == [("invalid-value", message)]


def test_a_limit_must_be_an_int():
    text = REVIEW.replace("parallel limit 2", 'parallel limit "2"')
    assert [c for c, _ in _codes(text)] == ["type-mismatch"]


def test_one_branch_is_a_warning_with_a_hint():
    text = HEAD + "stage s {\n  parallel { deps: check_deps(path: input.path) }\n}\n"
    diags = check_source(text, "f.flow").diagnostics
    (diag,) = [d for d in diags if d.code != "unused-alias"]  # the header's agent is not called
    assert (diag.code, diag.severity) == ("parallel-one-branch", "warning")
    assert "one branch" in diag.message and diag.hint
    assert text[diag.span.start : diag.span.end] == "parallel"


def _plan(text: str) -> dict:
    plan: dict = compile_source(text, "f.flow").plan
    return plan


def test_effectful_branches_are_one_parallel_step_keyed_by_name_and_pure_ones_are_values():
    plan = _plan(REVIEW)
    (step,) = plan["steps"]
    assert step["tool_name"] == "parallel"
    assert list(step["input"]["branches"]) == ["style", "deps"]
    assert step["input"]["concurrency"] == 2
    assert step["input"]["branches"]["deps"]["tool_name"] == "check_deps"
    output = plan["finish"]["output"]
    assert output.startswith("{{ {style: E0.style, deps: E0.deps, lines: ")


def test_without_limit_every_branch_starts_at_once_and_a_computed_limit_is_a_template():
    plan = _plan(REVIEW.replace("parallel limit 2", "parallel"))
    assert "concurrency" not in plan["steps"][0]["input"]
    plan = _plan(REVIEW.replace("parallel limit 2", "parallel limit input.n"))
    assert plan["steps"][0]["input"]["concurrency"] == "{{ input.n }}"


def test_a_block_of_effectful_branches_only_is_the_steps_result():
    text = REVIEW.replace('    lines: split(input.diff, "\\n").count,\n', "")
    plan = _plan(text)
    assert plan["finish"]["output"] == "{{ E0 }}"


def test_a_pure_block_is_an_object_and_no_step():
    plan = _plan(HEAD + "stage s {\n  parallel { a: 1, b: input.n + 1 }\n}\n")
    # the stage's value step (what every stage with a computed value has), no `parallel` step
    assert [s["tool_name"] for s in plan["steps"]] == ["value"]
    assert plan["steps"][0]["input"]["value"] == "{{ {a: 1, b: input.n + 1} }}"


def test_a_pure_block_with_a_computed_limit_is_a_parallel_step_that_checks_it():
    # folded into a value, nothing would read the limit: `limit input.n` with n = 0 would run
    plan = _plan(HEAD + "stage s {\n  parallel limit input.n { a: 1, b: input.n + 1 }\n}\n")
    (step,) = plan["steps"]
    assert step["tool_name"] == "parallel"
    assert step["input"]["concurrency"] == "{{ input.n }}"
    assert list(step["input"]["branches"]) == ["a", "b"]


def test_a_pure_block_with_a_constant_limit_stays_a_value():
    plan = _plan(HEAD + "stage s {\n  parallel limit 2 { a: 1, b: input.n + 1 }\n}\n")
    assert [s["tool_name"] for s in plan["steps"]] == ["value"]


def test_a_pure_block_with_a_computed_limit_in_an_if_arm_runs_only_when_chosen():
    text = HEAD + (
        "stage s -> int {\n"
        "  return if input.n > 9 then (parallel limit input.n { a: 1, b: 2 }).a else 0\n"
        "}\n"
    )
    (step,) = _plan(text)["steps"]
    assert step["tool_name"] == "decide"


def test_a_computed_limit_in_a_function_body_is_refused_as_impure():
    text = HEAD + (
        "fn first(k: int) -> int = (parallel limit k { a: 1, b: 2 }).a\n"
        "stage s -> int { return first(input.n) }\n"
    )
    [message] = [m for code, m in _codes(text) if code == "impure-function"]
    assert "a `parallel` block with a computed `limit`" in message
    ok = text.replace("parallel limit k", "parallel limit 2")
    assert [c for c, _ in _codes(ok) if c == "impure-function"] == []


def test_branch_step_ids_are_stable_across_compiles_of_an_edited_flow():
    # a durable run is recorded by step path (`E0/style`): an edit elsewhere keeps the names
    edited = REVIEW.replace("Review ${input.diff}", "Review this: ${input.diff}")
    first, second = _plan(REVIEW), _plan(edited)
    assert first["steps"][0]["id"] == second["steps"][0]["id"] == "E0"
    assert list(first["steps"][0]["input"]["branches"]) == list(
        second["steps"][0]["input"]["branches"]
    )


def test_a_branch_needing_several_steps_is_outlined_as_a_map_body_is():
    text = (
        HEAD
        + "extern tool name_of(path: text) -> text\n"
        + "stage s {\n  parallel {\n    a: check_deps(path: name_of(path: input.path)),\n"
        + "    b: name_of(path: input.path),\n  }\n}\n"
    )
    plan = _plan(text)
    branches = plan["steps"][0]["input"]["branches"]
    assert branches["a"]["tool_name"].startswith("plan__f__s_")
    assert branches["b"]["tool_name"] == "name_of"
    sub = plan["plans"][branches["a"]["tool_name"].removeprefix("plan__")]
    assert "parallel branch `a`" in sub["description"]


def test_fmt_writes_one_branch_a_line_with_a_trailing_comma_and_is_idempotent():
    text = HEAD + (
        "stage s {\n"
        '  let r = parallel limit 2 { a: check_deps(path: "a"), b: check_deps(path: "b") }\n'
        "  let t = parallel map [1] as x limit 2 { x }\n"
        "  return {r: r, t: t}\n}\n"
    )
    out = format_source(text, "f.flow")
    assert (
        "  let r = parallel limit 2 {\n"
        '    a: check_deps(path: "a"),\n'
        '    b: check_deps(path: "b"),\n'
        "  }\n"
    ) in out
    assert "  let t = parallel map [1] as x limit 2 { x }\n" in out
    assert format_source(out, "f.flow") == out


def test_fmt_keeps_a_comment_after_a_branch_on_its_line():
    text = HEAD + "stage s {\n  parallel { a: 1, // first\n    b: 2 }\n}\n"
    out = format_source(text, "f.flow")
    assert "    a: 1,  // first\n    b: 2,\n  }\n" in out
