"""Two values side by side on a line (`let x = a b`) are a `syntax-error` at the second, whatever
the first name is (docs/reference/statements.md "Expression statements"). The parser lets an
expression statement follow a name that is a misspelt keyword (`paralel map …`, `retrun 1`) so
the checker's `unknown-name` ("did you mean `parallel`?") is the one mistake; when that name is
defined (`a` is close to `as`, `n` to `in`) the checker reports the parser's error instead, so
no value is ever dropped silently."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.grammar.descent import parse_clean
from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.parser import parse_module, parse_module_lalr

HEAD = "input { k: int }\n"


def _diags(body: str) -> list[tuple[str, str, int, int]]:
    text = f"{HEAD}stage s -> int {{\n{body}\n}}\n"
    # both parse paths agree: they accept it (the fast path declines, the LALR one parses)
    assert parse_module(text, "t.flow")[1] == parse_module_lalr(text, "t.flow")[1]
    assert parse_clean(text, "t.flow", DRIVER) is None
    return [
        (d.code, d.message, d.span.line, d.span.column)
        for d in check_source(text, "t.flow").diagnostics
    ]


@pytest.mark.parametrize(
    ("body", "found", "column"),
    [
        ("  let a = 2\n  let b = 3\n  let x = a b\n  return x", "the name `b`", 13),
        ("  let n = 2\n  let y = n input.k\n  return y", "the name `input`", 13),
        ("  let a = 2\n  return a a", "the name `a`", 12),
        ("  let a = 2\n  a a\n  return a", "the name `a`", 5),
        ("  let retrn = 2\n  let x = retrn 1\n  return x", "the number `1`", 17),
        ("  let a = 2\n  let x = 1 + a 3\n  return x", "the number `3`", 17),
        # a defined `f` before a string is no f-string prefix: the string is not dropped
        ('  let f = 2\n  let x = f"hi"\n  return x', "a string", 12),
    ],
)
def test_a_value_after_a_defined_name_close_to_a_keyword_is_a_syntax_error(body, found, column):
    ((code, message, _, col),) = _diags(body)
    assert code == "syntax-error"
    assert message == f"expected the end of the statement (a line break), found {found}"
    assert col == column


def test_a_misspelt_keyword_that_is_not_defined_stays_unknown_name():
    assert [(c, line, col) for c, _, line, col in _diags("  retrun 1")] == [("unknown-name", 3, 3)]
    assert [c for c, *_ in _diags('  return f"hi"')] == ["unknown-name"]  # "take no prefix"
    body = "  let xs = [1]\n  let x = paralel map xs as i { i }\n  return 1"
    codes = [c for c, *_ in _diags(body)]
    assert codes == ["unused-variable", "unknown-name"]  # `x` is unused; `xs` is used
