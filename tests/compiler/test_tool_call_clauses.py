"""A tool call's `timeout D` and `retry { … }` clauses (docs/reference/tools.md "Timeout and
retry"): checked as an agent's are (constant positive duration; constant `attempts` 0–20;
retryable codes; each once), refused after anything but a tool call
(`clause-without-tool-call`), lowered to the call's step's `timeout` and `retry`, and kept by
`flowc fmt`."""

from __future__ import annotations

import pytest

from agentflow.api import compile_source
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import ast_key, format_source
from agentflow.grammar.parser import parse_module

HEAD = """\
extern tool user__fetch(url: text) -> text
input { url: text, urls: text[], t: duration, n: int }
"""


def _stage(body: str, returns: str = "text") -> str:
    return HEAD + f"stage s -> {returns} {{\n{body}\n}}\n"


def _diags(source: str) -> list[tuple[str, str, str]]:
    """``(code, the source the span covers, message)`` of each diagnostic."""
    out = []
    for d in check_source(source, "t.flow").diagnostics:
        out.append((d.code, source[d.span.start : d.span.end], d.message))
    return out


def test_a_tool_call_with_both_clauses_compiles_to_its_steps_timeout_and_retry():
    source = _stage(
        "  let limit = 5s\n"
        "  let a = user__fetch(url: input.url) timeout 10s retry { attempts: 2, on: [timeout, transient] }\n"
        "  let b = user__fetch(url: a) retry { attempts: 1 } timeout limit + 1s\n"
        "  return b"
    )
    assert _diags(source) == []
    steps = compile_source(source, "t.flow").plan["steps"]
    first, second = steps[0], steps[1]
    assert first["tool_name"] == "user__fetch"
    assert first["timeout"] == "10s"
    assert first["retry"] == {"attempts": 2, "on": ["timeout", "transient"]}
    assert second["timeout"] == "6s"  # a constant computed from a `let` of one
    assert second["retry"] == {"attempts": 1, "on": ["transient"]}  # `on` defaults to transient
    # canonical order: the settings after the input, before the result's schema
    assert list(first)[:5] == ["id", "tool_name", "input", "timeout", "retry"]


def test_clauses_on_a_call_in_a_map_body_and_before_a_catch_bound_that_call():
    source = _stage(
        "  let pages = map input.urls as u { user__fetch(url: u) timeout 2s }\n"
        '  return user__fetch(url: pages[0]) retry { attempts: 3 } catch { "none" }',
    )
    assert _diags(source) == []
    plan = compile_source(source, "t.flow").plan
    mapped, guarded = plan["steps"][0], plan["steps"][1]
    assert mapped["tool_name"] == "map" and mapped["input"]["do"]["timeout"] == "2s"
    assert guarded["tool_name"] == "try"
    assert guarded["input"]["do"]["retry"] == {"attempts": 3, "on": ["transient"]}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "  return user__fetch(url: input.url) timeout input.t",
            ("invalid-value", "input.t", "`timeout` must be a constant"),
        ),
        (
            "  return user__fetch(url: input.url) timeout 0s",
            ("invalid-duration", "0s", "`timeout` must be a positive duration"),
        ),
        (
            "  return user__fetch(url: input.url) timeout 3",
            ("type-mismatch", "3", "expected `duration`"),
        ),
        (
            "  return user__fetch(url: input.url) retry { attempts: 21 }",
            ("invalid-value", "21", "`attempts` must be at most 20, found 21"),
        ),
        (
            "  return user__fetch(url: input.url) retry { attempts: input.n }",
            ("invalid-value", "input.n", "`attempts` must be a constant"),
        ),
        (
            "  return user__fetch(url: input.url) retry { on: [tool_error] }",
            ("unknown-error-code", "tool_error", "`tool_error` is not a retryable error code"),
        ),
        (
            "  return user__fetch(url: input.url) timeout 1s timeout 2s",
            ("duplicate-clause", "timeout", "`timeout` is given twice on this tool call"),
        ),
    ],
    ids=["run-time", "zero", "not-duration", "attempts-high", "attempts-run-time", "code", "twice"],
)
def test_bad_clause_values_are_reported_as_for_an_agent(body, expected):
    code, covered, message = expected
    (found,) = _diags(_stage(body))
    assert found[0] == code and found[1] == covered and message in found[2], found


@pytest.mark.parametrize(
    ("body", "returns", "what", "hint"),
    [
        ('  return join(input.urls, ",") timeout 1s', "text", "library function", "remove"),
        ("  return input.n + 1 retry { attempts: 1 }", "int", "calls no tool", "remove"),
        (
            "  return map input.urls as u { user__fetch(url: u) } retry { attempts: 2 }",
            "text[]",
            "`map`",
            "inside the `map` body",
        ),
        (
            '  return user__fetch(url: input.url) + "!" timeout 1s',
            "text",
            "more than the call",
            "in parentheses",
        ),
    ],
    ids=["library-function", "pure", "map", "larger-expression"],
)
def test_a_clause_after_anything_but_a_tool_call_is_refused(body, returns, what, hint):
    source = _stage(body, returns)
    diags = check_source(source, "t.flow").diagnostics
    (d,) = diags
    assert d.code == "clause-without-tool-call"
    assert source[d.span.start : d.span.end] in ("timeout", "retry")  # on the clause keyword
    assert what in d.message and d.hint is not None and hint in d.hint
    assert d.notes and d.notes[0].message == "this is not a tool call"


def test_a_parenthesised_call_with_clauses_may_be_an_operand():
    source = _stage('  return (user__fetch(url: input.url) timeout 1s) + "!"')
    assert _diags(source) == []
    assert compile_source(source, "t.flow").plan["steps"][0]["timeout"] == "1s"


def test_timeout_and_retry_starting_a_line_after_a_statement_are_names():
    # where a statement may start, a clause word that begins a line is a variable, as before
    source = _stage("  let timeout = 5s\n  let x = timeout\n  timeout\n  return input.url")
    codes = {d.code for d in check_source(source, "t.flow").diagnostics}
    assert "syntax-error" not in codes and "clause-without-tool-call" not in codes


def test_fmt_keeps_the_clauses_and_is_idempotent():
    messy = _stage(
        "  let a = user__fetch(url: input.url)   timeout   10s retry {attempts:2,on:[timeout,transient]}\n"
        "  return a"
    )
    formatted = format_source(messy, "t.flow")
    assert (
        "  let a = user__fetch(url: input.url) timeout 10s retry "
        "{ attempts: 2, on: [timeout, transient] }\n"
    ) in formatted
    assert format_source(formatted, "t.flow") == formatted
    assert ast_key(parse_module(formatted, "t.flow")[0]) == ast_key(
        parse_module(messy, "t.flow")[0]
    )


def test_a_clause_on_a_line_of_its_own_is_a_syntax_error_with_a_hint_to_move_it():
    # `timeout` starting a line is a name (a statement), and its `10s` a second statement on
    # that line (an expression statement starts a line): the hint says where the clause goes
    source = _stage("  let a = user__fetch(url: input.url)\n    timeout 10s\n  return a")
    (d,) = check_source(source, "t.flow").diagnostics
    assert d.code == "syntax-error" and source[d.span.start : d.span.end] == "10s"
    assert d.hint is not None and "on the line where it ends" in d.hint
