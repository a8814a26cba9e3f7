"""`parallel [limit N] { name: expr, … }` parses (docs/reference/control.md "parallel blocks"):
branches written as an object's entries, over lines, with a trailing comma; `parallel map` is
still the map; the recursive-descent fast path builds the LALR path's AST."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agentflow.compiler.api import check_source
from agentflow.grammar import ast
from agentflow.grammar.descent import parse_clean
from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.parser import parse_module, parse_module_lalr

_SPEC = importlib.util.spec_from_file_location(
    "descent_tests", Path(__file__).with_name("test_descent.py")
)
assert _SPEC is not None and _SPEC.loader is not None
_DESCENT_TESTS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_DESCENT_TESTS)
difference = _DESCENT_TESTS.difference

SOURCE = """\
flow f
extern tool check_deps(path: text) -> bool
use agent "reviewer" as style
type S { ok: bool }
stage review {
  let a = parallel limit 2 {
    style: agent(style) { task "Review" expect S },
    deps: check_deps(path: "x"),
    n: 1 + 2,
  }
  let b = parallel { x: 1, y: [1, 2] }
  let c = parallel map [1, 2] as i limit 2 { i }
  return { a: a, b: b, c: c }
}
"""


def _blocks(module: ast.Module) -> list[ast.ParallelExpr]:
    return [n for n in ast.walk(module) if isinstance(n, ast.ParallelExpr)]


def test_a_parallel_block_parses_its_branches_in_order_with_its_limit():
    module, diags = parse_module(SOURCE, "f.flow")
    assert diags == []
    first, second = _blocks(module)
    assert [b.key for b in first.branches] == ["style", "deps", "n"]
    assert isinstance(first.branches[0].value, ast.AgentExpr)
    assert isinstance(first.limit, ast.NumberLit) and first.limit.value == 2
    assert [b.key for b in second.branches] == ["x", "y"] and second.limit is None
    assert SOURCE[first.keyword_span.start : first.keyword_span.end] == "parallel"


def test_parallel_map_is_still_the_map():
    module, _ = parse_module(SOURCE, "f.flow")
    maps = [n for n in ast.walk(module) if isinstance(n, ast.MapExpr)]
    assert len(maps) == 1 and maps[0].parallel and maps[0].limit is not None


def test_the_fast_path_builds_the_same_ast_as_the_lalr_path():
    lalr, diags = parse_module_lalr(SOURCE, "f.flow")
    assert diags == []
    fast = parse_clean(SOURCE, "f.flow", DRIVER)
    assert fast is not None, "the fast path declined a clean parallel block"
    assert difference(fast, lalr.items) is None


def test_two_branches_on_one_line_without_a_comma_are_a_syntax_error():
    bad = SOURCE.replace("x: 1, y:", "x: 1 y:")
    _, diags = parse_module(bad, "f.flow")
    assert [(d.code, d.message) for d in diags] == [
        ("syntax-error", "expected `,` or a line break between branches")
    ]
    assert parse_module_lalr(bad, "f.flow")[1] == diags
    # an object literal in a branch still speaks of its entries
    inner = SOURCE.replace("y: [1, 2]", "y: {p: 1 q: 2}")
    _, diags = parse_module(inner, "f.flow")
    assert [d.message for d in diags] == ["expected `,` or a line break between object entries"]


def test_the_reported_program_now_parses():
    # the new user's program, but for the comma between the branches on one line
    text = (
        'use agent "a" as style\nuse agent "b" as security\ntype R { ok: bool }\n'
        "stage s {\n  parallel {\n"
        '    style: agent(style) { task "t" expect R }\n'
        '    sec: agent(security) { task "t" expect R }\n  }\n}\n'
    )
    module, diags = parse_module(text, "f.flow")
    assert diags == []
    (block,) = _blocks(module)
    assert [b.key for b in block.branches] == ["style", "sec"]


def test_a_limit_without_its_number_says_so_for_the_block():
    text = "stage s {\n  parallel limit { a: 1, b: 2 }\n}\n"
    (diag,) = parse_module(text, "f.flow")[1]
    assert diag.message == (
        "`limit` needs a number: how many branches of the `parallel` block run at once"
    )
    assert text[diag.span.start : diag.span.end] == "limit"
    assert diag.hint and "parallel limit 2" in diag.hint


_CATCH_HINT = (
    "keep a branch's failure as a value in that branch, with `catch`: "
    "`parallel {{ {branch} catch {{ fallback }}, … }}` (`catch as err {{ … }}` to read the "
    "error); the other branches still run. `tolerate N` is an option of `map`: "
    "`parallel map xs as x tolerate 1 {{ … }}`"
)


def _tolerating(block: str) -> str:
    return (
        "input { n: int }\nextern tool t(x: int) -> int\n"
        f"stage s {{\n  let r = {block}\n  return r\n}}\n"
    )


def test_tolerate_on_a_parallel_block_is_told_with_the_catch_to_write_instead():
    for block, column in (
        ("parallel tolerate 1 { a: t(x: 1), b: t(x: 2) }", 20),
        ("parallel tolerate 50% { a: t(x: 1), b: t(x: 2) }", 20),
        ("parallel limit 2 tolerate 1 { a: t(x: 1), b: t(x: 2) }", 28),
        ("parallel limit input.n tolerate 1 { a: t(x: 1), b: t(x: 2) }", 34),
    ):
        text = _tolerating(block)
        _, diags = parse_module(text, "p.flow")
        assert [(d.code, d.message, d.span.line, d.span.column) for d in diags] == [
            ("syntax-error", "a `parallel` block has no `tolerate`", 4, column)
        ], block
        assert diags[0].hint == _CATCH_HINT.format(branch="a: t(x: 1)")
        assert text[diags[0].span.start : diags[0].span.end] == "tolerate"
        lalr, lalr_diags = parse_module_lalr(text, "p.flow")
        assert lalr_diags == diags


def test_tolerate_after_a_parallel_block_says_the_block_has_none():
    _, diags = parse_module(_tolerating("parallel { a: t(x: 1), b: t(x: 2) } tolerate 1"), "p.flow")
    assert [d.message for d in diags] == [
        "expected the end of the statement (a line break), found the name `tolerate`"
    ]
    assert diags[0].hint == (
        "a `parallel` block has no `tolerate`: keep a branch's failure as a value in that "
        "branch, with `catch` (`parallel { a: f(x) catch { fallback }, … }`); the other "
        "branches still run"
    )


def test_the_catch_the_hint_gives_keeps_the_other_branches_running():
    # what the hint says to write checks clean: a branch's failure as its fallback value
    text = _tolerating("parallel { a: t(x: 1) catch { 0 }, b: t(x: 2) }")
    result = check_source(text, "p.flow")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
