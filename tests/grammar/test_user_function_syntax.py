"""`fn name(p: T, …) -> R = expr` (docs/reference/programs.md "User functions"): parsed the
same by the fast path and the LALR parser; `name(a, …)` of a name that is no library function
is a `UserCall`; `fn` stays a name where no declaration can start."""

from __future__ import annotations

from agentflow.grammar import ast
from agentflow.grammar.descent import parse_clean
from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.parser import parse_expression, parse_module, parse_module_lalr

SOURCE = """\
type Severity = "low" | "high"
/// how urgent
fn rank(s: Severity) -> int = if s == "high" then 2 else 1
fn label(t: { title: text }, prefix: text,) -> text = "${prefix}: ${upper(t.title)}"
stage s -> int { return rank("low") }
"""


def test_a_function_declaration_has_its_name_parameters_result_body_and_doc():
    module, diags = parse_module(SOURCE, "f.flow")
    assert diags == []
    rank, label = module.of(ast.FnDecl)
    assert rank.name.name == "rank" and rank.doc == "how urgent"
    assert [p.name.name for p in rank.params] == ["s"]
    assert isinstance(rank.returns, ast.NamedType) and rank.returns.name == "int"
    assert isinstance(rank.body, ast.CondExpr)
    assert [p.name.name for p in label.params] == ["t", "prefix"]  # trailing comma allowed


def test_the_fast_path_and_the_lalr_parser_build_the_same_declaration():
    fast = parse_clean(SOURCE, "f.flow", DRIVER)
    assert fast is not None  # the fast path parses `fn` itself
    slow, diags = parse_module_lalr(SOURCE, "f.flow")
    assert diags == []
    assert repr(fast) == repr(slow.items)


def test_a_positional_call_of_a_name_that_is_no_library_function_is_a_user_call():
    call = parse_expression("rank(input.severity, 2)", "e")
    assert isinstance(call, ast.UserCall)
    assert call.name == "rank" and len(call.args) == 2 and call.function is None
    assert isinstance(parse_expression("upper(x)", "e"), ast.FuncCall)
    assert isinstance(parse_expression("rank(s: x)", "e"), ast.Call)  # named: a tool call
    assert isinstance(parse_expression("now()", "e"), ast.Call)


def test_fn_is_still_a_name_where_no_declaration_starts():
    src = "stage s -> int {\n  let fn = { fn: 1 }\n  return fn.fn\n}\n"
    module, diags = parse_module(src, "n.flow")
    assert diags == []
    assert len(module.of(ast.StageDecl)) == 1
