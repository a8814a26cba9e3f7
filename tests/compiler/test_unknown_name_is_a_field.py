"""An unknown name that is a field of the flow's input (`xs` for `input.xs`), of a record a
`let` holds or of an earlier stage's result gets "did you mean `input.xs`?" (docs/diagnostics.md
`unknown-name`)."""

from __future__ import annotations

from agentflow.compiler.api import check_source
from agentflow.core.diagnostics import FALLBACK_HINTS


def _unknown(src: str):
    (d,) = [d for d in check_source(src, "t.flow").diagnostics if d.code == "unknown-name"]
    return d


def test_a_field_of_the_input_named_bare_hints_at_input_dot_field():
    src = 'input { s: text, xs: text[] }\nstage a -> text {\n  return join(xs, ", ")\n}\n'
    d = _unknown(src)
    assert d.message == "unknown name `xs`"
    assert d.hint == "did you mean `input.xs`? (`xs` is a field of `input`)"


def test_a_field_of_a_bound_record_hints_at_the_record_and_it_is_not_unused():
    src = (
        "input { s: text }\ntype R { title: text }\n"
        'stage a -> R {\n  return { title: "t" }\n}\n'
        "stage b -> text {\n  let r = a\n  return title\n}\n"
    )
    diags = check_source(src, "t.flow").diagnostics
    assert [d.code for d in diags] == ["unknown-name"]
    assert diags[0].hint == "did you mean `r.title`? (`title` is a field of `r`)"


def test_a_field_of_an_earlier_stage_hints_at_the_stage():
    src = (
        "input { s: text }\ntype R { title: text }\n"
        'stage a -> R {\n  return { title: "t" }\n}\n'
        "stage b -> text {\n  return title\n}\n"
    )
    assert _unknown(src).hint == "did you mean `a.title`? (`title` is a field of `a`)"


def test_a_visible_name_close_to_the_unknown_one_still_comes_first():
    src = "input { items: text[] }\nstage a -> text[] {\n  let item = input.items\n  return items\n}\n"
    assert _unknown(src).hint == "did you mean `item`?"


def test_an_unknown_name_in_a_function_body_says_a_function_sees_its_parameters_only():
    src = (
        "input { xs: text[] }\nfn g(n: int) -> int = n + len(xs)\n"
        "stage a -> int {\n  return g(1)\n}\n"
    )
    assert _unknown(src).hint == (
        "a function computes its value from its parameters only (`g(n: int) -> int`): "
        "pass `xs` as a parameter, or compute this in a stage"
    )


def test_a_misspelt_field_of_the_input_named_bare_hints_at_input_dot_the_field():
    src = "input { title: text, body: text }\nstage a -> text {\n  return titl\n}\n"
    d = _unknown(src)
    assert d.message == "unknown name `titl`"
    assert d.hint == "did you mean `input.title`? (`title` is a field of `input`)"


def test_a_misspelt_field_of_a_bound_record_hints_at_the_record_and_it_is_not_unused():
    src = (
        "input { s: text }\ntype R { title: text }\n"
        'stage a -> R {\n  return { title: "t" }\n}\n'
        "stage b -> text {\n  let r = a\n  return tilte\n}\n"
    )
    diags = check_source(src, "t.flow").diagnostics
    assert [d.code for d in diags] == ["unknown-name"]
    assert diags[0].hint == "did you mean `r.title`? (`title` is a field of `r`)"


def test_a_misspelt_keyword_still_comes_before_a_close_field():
    src = "input { retry: text }\nstage a -> text {\n  retrun input.retry\n}\n"
    hints = [d.hint for d in check_source(src, "t.flow").diagnostics]
    assert "did you mean `return`?" in hints


def test_a_misspelt_field_after_input_dot_hints_at_the_field():
    src = "input { title: text, body: text }\nstage a -> text {\n  return input.titl\n}\n"
    (d,) = check_source(src, "t.flow").diagnostics
    assert d.code == "unknown-field"
    assert d.hint == "did you mean `title`?"


def test_a_name_close_to_no_field_gets_no_field_hint():
    src = "input { title: text }\nstage a -> text {\n  return zzz\n}\n"
    # (the code's usual fix, not a field)
    assert _unknown(src).hint == FALLBACK_HINTS["unknown-name"]


def test_a_name_visible_only_in_a_loop_is_said_so_before_a_close_field():
    src = (
        "input { xs: int[] }\nstage a -> int {\n"
        "  let ys = map input.xs as x { x + 1 }\n  return x\n}\n"
    )
    d = _unknown(src)
    assert "visible only in" in d.message
    assert "input.xs" not in (d.hint or "")


def test_a_tool_call_clause_on_its_own_line_is_said_so_before_a_close_field():
    src = "input { timeouts: int }\nstage a -> int {\n  return timeout\n}\n"
    assert _unknown(src).hint.startswith("a tool call's `timeout` goes right after the call")
