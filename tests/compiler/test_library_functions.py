"""The checker on library calls (docs/reference/functions.md) and `if … then … else`
(docs/reference/expressions.md): every function's wrong argument types and counts are
diagnostics whose note shows its signature; names from other languages get a "did you mean" to
the library; the conditional is typed as the join of its arms."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.types import type_str
from agentflow.core.functions import FUNCTIONS
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression


def _check(body: str, head: str = ""):
    src = head + "stage s -> json {\n" + body + "\n}\n"
    return check_source(src, "f.flow")


def _wrong_first_argument(name: str) -> str | None:
    """The function's example with its first argument replaced by one of the wrong type."""
    spec = FUNCTIONS[name]
    call = parse_expression(spec.example, "x")
    assert isinstance(call, ast.FuncCall)
    first = spec.params[0].type
    bound = spec.type_params.get(first) if first in spec.type_params else None
    if first == "json" or (first in spec.type_params and bound is None):
        return None  # any value fits (`canonical<T>(value: T, …)`)
    wrong = "true" if "text" in first or (bound and "text" in bound) else '"x"'
    rest = [spec.example[a.span.start : a.span.end] for a in call.args[1:]]
    return f"{name}({', '.join([wrong, *rest])})"


@pytest.mark.parametrize("name", [n for n in FUNCTIONS if _wrong_first_argument(n)])
def test_a_wrong_argument_type_is_a_mismatch_with_the_signature_in_the_note(name):
    diags = _check(f"  return {_wrong_first_argument(name)}").diagnostics
    assert [d.code for d in diags] == ["type-mismatch"], [str(d) for d in diags]
    assert any(FUNCTIONS[name].signature in n.message for n in diags[0].notes)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_too_many_arguments_is_argument_count_with_the_signature(name):
    spec = FUNCTIONS[name]
    args = ", ".join(["1"] * (spec.max_args + 1))
    (diag,) = _check(f"  return {name}({args})").diagnostics
    assert diag.code == "argument-count"
    assert diag.notes[0].message == f"`{spec.signature}`"


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_example_checks_clean(name):
    assert _check(f"  return {FUNCTIONS[name].example}").ok


def _types(body: str, head: str) -> dict[str, str]:
    r = _check(body, head)
    assert r.ok, [str(d) for d in r.diagnostics]
    stage = r.module.of(ast.StageDecl)[0]
    return {
        st.name.name: type_str(r.type_of(st.value))
        for st in stage.body.stmts
        if isinstance(st, ast.LetStmt)
    }


HEAD = (
    "type Item { name: text, score: int, note: text? }\n"
    "input { items: Item[], xs: int[], ns: number[], s: text, n: number }\n"
)


def test_generic_signatures_give_precise_result_types():
    body = """\
  let a = sum(input.xs)
  let b = sum(input.ns)
  let c = min(input.xs)
  let d = sort_by(input.items, "-score")
  let e = group_by(input.items, "name")
  let f = zip(input.xs, input.items)
  let g = round(input.n)
  let h = round(input.n, 2)
  let i = pick(input.items[0], ["name", "note"])
  let j = merge({ a: 1 }, { b: "x" })
  let k = flatten([input.xs, [1]])
  let l = values({ a: 1, b: 2 })
  let m = slice(input.s, 1)
  let o = count_by(input.items, "name")
  let p = parse_json(input.s)
  return [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p]"""
    assert _types(body, HEAD) == {
        "a": "int",
        "b": "number",
        "c": "int?",
        "d": "Item[]",
        "e": "map<Item[]>",
        "f": "{ first: int, second: Item }[]",
        "g": "int",
        "h": "number",
        "i": "{ name: text, note: text? }",
        "j": "{ a: int, b: text }",
        "k": "int[]",
        "l": "int[]",
        "m": "text",
        "o": "map<int>",
        "p": "json",
    }


@pytest.mark.parametrize(
    "expr, code, message",
    [
        ('sort_by(input.items, "scor")', "unknown-field", "`Item` has no field `scor`"),
        ('group_by(input.xs, "a")', "type-mismatch", "the elements must be objects"),
        ('pick(input.items[0], ["nme"])', "unknown-field", "`Item` has no field `nme`"),
        ('index_of(input.xs, "a")', "type-mismatch", "`T` is `int` here"),
        ("sum(input.s)", "type-mismatch", "expected `number[]`"),
        ("join(input.xs)", "argument-count", "`join` takes 2 arguments, 1 given"),
        ("len()", "argument-count", "`len` takes 1 argument, 0 given"),
        ('join(xs: input.xs, sep: ",")', "named-argument", "`join` is a library function"),
    ],
)
def test_argument_mistakes(expr, code, message):
    (diag,) = _check(f"  return {expr}", HEAD).diagnostics
    assert diag.code == code and message in diag.message, str(diag)


def test_sort_by_needs_an_orderable_field():
    head = "type T { ok: bool }\ninput { ts: T[] }\n"
    (diag,) = _check('  return sort_by(input.ts, "ok")', head).diagnostics
    assert diag.code == "type-mismatch" and "number or a text" in diag.message


@pytest.mark.parametrize(
    "expr, code, suggestion",
    [
        ('str.join(", ", input.names)', "unknown-function", "join"),
        ("input.s.lower()", "not-callable", "lower(input.s)"),
        ("input.s.upper()", "not-callable", "upper(input.s)"),
        ("input.s.toUpperCase()", "not-callable", "upper(input.s)"),
        ('input.names.join(", ")', "not-callable", "join(input.names, …)"),
        ("strip(input.s)", "unknown-function", "trim"),
        ("length(input.names)", "unknown-function", "len"),
        ("lenght(input.names)", "unknown-function", "len"),
        ("Math.round(input.n)", "unknown-function", "round"),
        ("toUpperCase(input.s)", "unknown-function", "upper"),
        ('startsWith(input.s, "a")', "unknown-function", "starts_with"),
    ],
)
def test_names_from_other_languages_point_at_the_library(expr, code, suggestion):
    head = "input { names: text[], s: text, n: number }\n"
    (diag,) = _check(f"  return {expr}", head).diagnostics
    assert diag.code == code, str(diag)
    assert diag.hint is not None and suggestion in diag.hint, diag.hint


def test_the_issue_join_is_a_library_call():
    head = "type V { issues: text[] }\ninput { v: V }\n"
    assert _check('  return "- " + join(input.v.issues, "\\n- ")', head).ok


def test_a_tool_named_like_a_function_is_called_with_named_arguments():
    head = "extern tool user__x(a: int) -> int\nextern tool join(parts: text[]) -> text\n"
    r = _check('  let a = join(parts: ["a"])\n  let b = join(["a"], "")\n  return [a, b]', head)
    assert r.ok, [str(d) for d in r.diagnostics]


# -- if c then a else b ---------------------------------------------------------------------------


def test_a_conditional_is_the_join_of_its_arms():
    body = """\
  let a = if input.n > 1 then 1 else 2.5
  let b = if input.n > 1 then input.s else null
  let c = if input.n > 1 then "x" else if input.n > 0 then "y" else "z"
  let d = (if input.n > 1 then input.xs else []).count + 1
  return [a, b, c, d]"""
    assert _types(body, HEAD) == {"a": "number", "b": "text?", "c": "text", "d": "int"}


def test_a_conditional_takes_its_expected_type():
    head = 'type Level = "low" | "high"\ninput { n: int }\n'
    src = head + 'stage s -> Level {\n  return if input.n > 3 then "high" else "low"\n}\n'
    assert check_source(src, "f.flow").ok


def test_a_conditional_needs_a_bool_condition():
    (diag,) = _check("  return if input.n then 1 else 2", HEAD).diagnostics
    assert diag.code == "type-mismatch" and "expected `bool`" in diag.message


def test_an_if_statement_is_still_a_statement():
    body = '  if input.n > 1 { return "a" }\n  if input.n > 2 then "b" else "c"'
    assert _check(body, HEAD).ok


@pytest.mark.parametrize(
    "expr",
    ["1 + if input.n > 1 then 1 else 2", "if input.n > 1 then if true then 1 else 2 else 3"],
)
def test_a_conditional_operand_needs_parentheses(expr):
    (diag,) = _check(f"  return {expr}", HEAD).diagnostics
    assert diag.code == "syntax-error"
    assert (
        diag.hint == "a conditional inside an expression needs parentheses: `(if c then a else b)`"
    )


@pytest.mark.parametrize(
    "call, hint",
    [
        (
            "upper(input.xs)",
            "`upper` takes one value, not a list: to apply it to each element, "
            "`map xs as x { upper(x) }`",
        ),
        ("lower(input.n)", "`to_text(x)` turns a number into text"),
        ("round(input.s)", "`parse_int(s)` or `parse_number(s)` reads a number from text"),
        (
            'sort_by(input.rs, "-urgent")',
            "to put the elements whose `urgent` is true first, join two filters: "
            "`(filter xs as x where x.urgent) + (filter xs as x where not x.urgent)`",
        ),
    ],
)
def test_a_wrong_argument_hints_at_the_usual_fix(call: str, hint: str):
    # every diagnostic has a hint: a list for one value, a number for a text and back, a bool
    # field to sort by
    src = (
        "type R { id: text, urgent: bool }\n"
        "input { xs: text[], rs: R[], n: int, s: text }\n"
        f"stage a -> json {{\n  return {call}\n}}\n"
    )
    (d,) = check_source(src, "t.flow").diagnostics
    assert d.code == "type-mismatch", d
    assert d.hint == hint
