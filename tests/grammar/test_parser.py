"""Tests of the `.flow` parser (docs/spec/LANGUAGE.md §1–8, docs/spec/PLAN_IR.md §3)."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import SPEC_EXAMPLES as EXAMPLES

from agentflow.compiler.api import check_source
from agentflow.core.spans import Span
from agentflow.errors import SourceError
from agentflow.grammar import ast
from agentflow.grammar.parser import _Lines, parse_expression, parse_module, parse_template


def ok(text: str, file: str = "t.flow") -> ast.Module:
    module, diags = parse_module(text, file)
    assert diags == [], [(d.span, d.message) for d in diags]
    return module


def stage_stmts(text: str) -> list[ast.Stmt]:
    return ok(text).of(ast.StageDecl)[0].body.stmts


def source_of(text: str, node: ast.Node) -> str:
    return text[node.span.start : node.span.end]


# ------------------------------------------------------------------------------ expressions


def test_precedence_of_binary_operators():
    e = parse_expression("a ?? b or c and not d == e + f * -g")
    assert isinstance(e, ast.Binary) and e.op == "??"
    orr = e.right
    assert orr.op == "or"
    andd = orr.right
    assert andd.op == "and"
    nott = andd.right
    assert isinstance(nott, ast.Unary) and nott.op == "not"
    eq = nott.operand
    assert eq.op == "=="
    plus = eq.right
    assert plus.op == "+"
    times = plus.right
    assert times.op == "*"
    assert isinstance(times.right, ast.Unary) and times.right.op == "-"


def test_range_binds_between_additive_and_comparison():
    e = parse_expression("x in a + 1..b * 2")
    assert e.op == "in"
    r = e.right
    assert isinstance(r, ast.RangeExpr)
    assert r.low.op == "+" and r.high.op == "*"


def test_comparisons_and_ranges_do_not_chain():
    for text in ("a < b < c", "a == b != c", "1..2..3"):
        with pytest.raises(SourceError, match="chain"):
            parse_expression(text)


def test_left_associativity_and_not_in():
    e = parse_expression("a - b - c")
    assert e.op == "-" and e.left.op == "-"
    e = parse_expression("x not in xs")
    assert e.op == "not in"
    assert e.op_span.start == 2 and e.op_span.end == 8


def test_literals_and_numbers_vs_ranges_and_durations():
    e = parse_expression("0..10")
    assert isinstance(e, ast.RangeExpr)
    assert e.low.value == 0 and e.high.value == 10
    assert parse_expression("3.5").value == 3.5
    assert isinstance(parse_expression("42").value, int)
    d = parse_expression("1h30m")
    assert isinstance(d, ast.DurationLit) and d.ms == 90 * 60_000 and d.text == "1h30m"
    assert parse_expression("250ms").ms == 250
    assert parse_expression("90s").ms == 90_000
    with pytest.raises(SourceError, match="neither a number nor a duration"):
        parse_expression("5mx")
    assert parse_expression("true").value is True
    assert isinstance(parse_expression("null"), ast.NullLit)


def test_postfix_chain_and_named_call():
    e = parse_expression("read_file(path: f, limit: 3).count")
    assert isinstance(e, ast.Member) and e.name == "count"
    call = e.obj
    assert isinstance(call, ast.Call)
    assert [a.name for a in call.args] == ["path", "limit"]
    assert call.positional == []
    e = parse_expression("f(1, x: 2)")
    assert len(e.positional) == 1 and e.args[0].name == "x"


def test_projection_path_is_relative_to_placeholder():
    e = parse_expression("result.work[*].owner.name")
    assert isinstance(e, ast.Projection)
    assert isinstance(e.base, ast.Member) and e.base.name == "work"
    assert isinstance(e.path, ast.Member) and e.path.name == "name"
    assert isinstance(e.path.obj, ast.Member) and e.path.obj.name == "owner"
    assert isinstance(e.path.obj.obj, ast.ProjectionItem)
    bare = parse_expression("xs[*]")
    assert isinstance(bare, ast.Projection) and bare.path is None
    closed = parse_expression("(xs[*].a).count")
    assert isinstance(closed, ast.Member) and closed.name == "count"
    assert isinstance(closed.obj, ast.Projection) and closed.obj.closed


def test_keywords_are_contextual():
    e = parse_expression("input.limit")
    assert isinstance(e, ast.Member) and e.obj.name == "input" and e.name == "limit"
    e = parse_expression("{ limit: 3, map: 1, input: input, not: 2 }")
    assert [x.key for x in e.entries] == ["limit", "map", "input", "not"]
    assert parse_expression("use_it").name == "use_it"
    assert parse_expression("x.map.filter.stage").name == "stage"
    call = parse_expression("f(map: 1, where: 2)")
    assert [a.name for a in call.args] == ["map", "where"]


def test_object_list_and_quoted_keys():
    e = parse_expression('{ a: [1, 2,], "quoted-key": { b: null }, }')
    assert [x.key for x in e.entries] == ["a", "quoted-key"]
    assert len(e.entries[0].value.items) == 2
    with pytest.raises(SourceError, match="line break"):
        parse_expression("{ a: 1 b: 2 }")


def test_spans_are_real_positions():
    text = "foo.bar + baz[0]"
    e = parse_expression(text)
    assert (e.span.line, e.span.column, e.span.end_column) == (1, 1, 17)
    assert e.left.name_span.column == 5 and e.left.name_span.end_column == 8
    assert source_of(text, e.right) == "baz[0]"
    shifted = parse_expression("a.b", "f.yaml", line=10, column=5, offset=100)
    assert shifted.span == Span("f.yaml", 10, 5, 10, 8, 100, 103)
    multi = parse_expression("a +\n  b", "f", line=3, column=7, offset=50)
    assert (multi.right.span.line, multi.right.span.column, multi.right.span.start) == (4, 3, 56)


def test_string_escapes_and_plain_strings():
    e = parse_expression(r'"a\"b\\c\nd\te\u{1F600}\$x"')
    assert e.parts == ['a"b\\c\nd\te\U0001f600$x']
    assert parse_expression('""').parts == []
    assert parse_expression('"cost: $5"').text == "cost: $5"
    with pytest.raises(SourceError, match="unknown escape"):
        parse_expression(r'"\q"')
    with pytest.raises(SourceError, match="unterminated string"):
        parse_expression('"abc')


def test_interpolation_nested_strings_and_offsets():
    text = 'x + "${d.cause ?? "none"}: ${ n }"'
    e = parse_expression(text)
    s = e.right
    assert isinstance(s, ast.StringLit)
    interp = s.parts[0]
    assert isinstance(interp, ast.Interpolation)
    assert source_of(text, interp) == '${d.cause ?? "none"}'
    inner = interp.expr
    assert inner.op == "??" and inner.right.parts == ["none"]
    assert source_of(text, inner.right) == '"none"'
    assert s.parts[1] == ": "
    assert source_of(text, s.parts[2].expr) == "n"
    deep = parse_expression('"${"${"${x}"}"}"')
    assert deep.parts[0].expr.parts[0].expr.parts[0].expr.name == "x"


def test_triple_quoted_trim_indent_and_offsets():
    text = 'f = """\n    Hello ${name}\n      indented\n    done\n    """'
    module_text = "stage s {\n  let " + text + "\n}"
    (let,) = stage_stmts(module_text)
    s = let.value
    assert s.triple
    assert s.parts[0] == "Hello "
    assert s.parts[2] == "\n  indented\ndone"
    name = s.parts[1].expr
    assert source_of(module_text, name) == "name"
    assert (name.span.line, name.span.column) == (3, 13)
    one_line = parse_expression('"""a "quoted" b"""')
    assert one_line.text == 'a "quoted" b'
    crlf = parse_expression('"""\r\n  a ${x}\r\n    b\r\n  """')
    assert crlf.parts[0] == "a " and crlf.parts[2] == "\n  b"


def test_durations_and_errors_have_spans():
    with pytest.raises(SourceError) as info:
        parse_expression("(1 +\n 2")
    assert info.value.span.line == 1 and info.value.span.column == 1
    with pytest.raises(SourceError) as info:
        parse_expression("a.b + ", "e.txt")
    assert "expected an expression" in info.value.message
    assert info.value.span.file == "e.txt"


# ------------------------------------------------------------------------------ templates


def test_template_split_and_whole():
    t = parse_template("Hello {{ input.name }}!")
    assert t.parts[0] == "Hello " and t.parts[2] == "!"
    assert isinstance(t.parts[1], ast.Member)
    assert t.whole is None and not t.is_static
    whole = parse_template("{{ E0.issues[*].id }}")
    assert isinstance(whole.whole, ast.Projection)
    assert parse_template("plain text").is_static


def test_template_closing_braces_outside_strings_and_brackets():
    t = parse_template("{{ {a: {b: 1}} }}")
    assert isinstance(t.whole, ast.ObjectLit)
    t = parse_template('a {{ "{{" }} b')
    assert t.parts == ["a {{ b"]
    t = parse_template('{{ "}}" + x }}')
    assert isinstance(t.whole, ast.Binary)


def test_template_names_and_offsets():
    text = "line one\n  {{ item.x + index }} and {{ accumulator ?? result }}"
    t = parse_template(text, "plan.yaml", line=5, column=3, offset=200)
    hole = t.parts[1]
    assert (hole.span.line, hole.span.column) == (6, 6)
    assert hole.span.start == 200 + text.index("item")
    assert t.parts[3].op == "??"
    for bad in ("{{ a", "{{ 1 + }}", "{{ }}"):
        with pytest.raises(SourceError):
            parse_template(bad)


# ------------------------------------------------------------------------------ modules

FULL = """\
/// the flow
flow demo "A demo"
input { limit: int, names: text[] }
output map<int>
deadline 1h30m
use agent "repo-investigator" as inv
use team "dev-team" as dev
extern tool linear__list(limit: int?) -> { issues: json[] }
/// opaque
extern type Handle
/// severity levels
type Sev = "low" | "high"
type T {
  /// a number
  a: int? @range(0, 10)
  b: { x: text, y: path[] }, c: map<text[]>
}
stage s1 -> T {
  let f = filter input.names as n where judge "is ${n} ok?"
  let g = filter input.names as n where n != "x"
  let r = reduce input.names as n, acc: int = 0 { return acc + n.count }
  let a1 = ask "ok?" expect bool default false
  let a2 = ask "ok?" expect text else fail "needs an answer"
  let v = verify { check r > 0 else "positive"  judge "fine" }
  let m = parallel map input.names as n limit 2 { n }
  if r == 1 { return 1 } else if r == 2 { fail "two" } else { let q = 3 }
  agent(dev.member(input.names[0])) {
    task "do it"
    input { n: input
      m: m }
    tools [read_file, "linear__*"]
    write [input.names[0]]
    expect T
    timeout 5m
    max_iterations 3
    model "fast"
    system "be brief"
    retry { attempts: 1, on: [timeout, transient] }
  }
}
stage s2 -> int { agent(inv) { task "x" tools none expect int } }
"""


def test_whole_language_parses():
    m = ok(FULL)
    kinds = [type(i).__name__ for i in m.items]
    assert kinds == [
        "FlowHeader",
        "InputDecl",
        "OutputDecl",
        "DeadlineDecl",
        "UseDecl",
        "UseDecl",
        "ExternTool",
        "ExternType",
        "TypeDecl",
        "TypeDecl",
        "StageDecl",
        "StageDecl",
    ]
    header = m.items[0]
    assert header.name.name == "demo" and header.description == "A demo"
    assert isinstance(m.items[2].type, ast.MapType)
    assert m.items[3].duration.ms == 90 * 60_000
    use = m.items[5]
    assert (use.kind, use.target, use.alias.name) == ("team", "dev-team", "dev")
    tool = m.items[6]
    assert tool.name.name == "linear__list" and tool.params[0].name.name == "limit"
    assert isinstance(tool.params[0].type, ast.OptionalType)
    assert m.items[7].doc == "opaque"
    sev = m.items[8]
    assert sev.doc == "severity levels"
    assert [x.value for x in sev.alias.members] == ["low", "high"]
    t = m.items[9]
    assert [f.name.name for f in t.body.fields] == ["a", "b", "c"]
    assert t.body.fields[0].doc == "a number" and t.body.fields[1].doc is None
    assert t.body.fields[0].constraints[0].name.name == "range"
    assert isinstance(t.body.fields[2].type, ast.MapType)

    stmts = m.items[10].body.stmts
    f, g, r, a1, a2, v, mp, iff, ag = stmts
    assert f.value.judge is not None and f.value.cond is None
    assert g.value.cond.op == "!=" and g.value.var.name == "n"
    assert r.value.acc.name == "acc" and isinstance(r.value.acc_type, ast.NamedType)
    assert a1.value.default.value is False and a1.value.expect.name == "bool"
    assert a2.value.else_fail.text == "needs an answer"
    assert isinstance(v.value.items[0], ast.VerifyCheck)
    assert isinstance(v.value.items[1], ast.VerifyJudge)
    assert mp.value.parallel and mp.value.limit.value == 2
    assert isinstance(iff.else_, ast.IfStmt) and isinstance(iff.else_.else_, ast.Block)
    agent = ag.expr
    assert isinstance(agent, ast.AgentExpr)
    assert [c.kind for c in agent.clauses] == [
        "task",
        "input",
        "tools",
        "write",
        "expect",
        "timeout",
        "max_iterations",
        "model",
        "system",
        "retry",
    ]
    tools = agent.clause("tools").value
    assert [(x.name, x.pattern) for x in tools] == [("read_file", False), ("linear__*", True)]
    retry = agent.clause("retry").value
    assert retry.attempts.value == 1 and [c.name for c in retry.on] == ["timeout", "transient"]
    assert [e.key for e in agent.clause("input").value.entries] == ["n", "m"]
    assert agent.keyword_span.line == 27
    s2 = m.items[11].body.stmts[0].expr
    assert s2.clause("tools").value is None


def test_newline_rule():
    text = """stage s {
  let a = x
  (y)
  let b = x
  [1]
  let c = x
  - 1
  let d = x
  not y
  require a
    else fail "m"
  let e = x
    .field
    + 2
  let f = foo(
    p: 1
  )
  let g = [1,
    -2]
}"""
    stmts = stage_stmts(text)
    kinds = [type(s).__name__ for s in stmts]
    assert kinds == [
        "LetStmt",
        "ExprStmt",
        "LetStmt",
        "ExprStmt",
        "LetStmt",
        "ExprStmt",
        "LetStmt",
        "ExprStmt",
        "RequireStmt",
        "LetStmt",
        "LetStmt",
        "LetStmt",
    ]
    assert isinstance(stmts[3].expr, ast.ListLit)
    assert isinstance(stmts[5].expr, ast.Unary) and stmts[5].expr.op == "-"
    assert isinstance(stmts[7].expr, ast.Unary) and stmts[7].expr.op == "not"
    assert stmts[8].message.text == "m"
    e = stmts[9].value
    assert e.op == "+" and e.left.name == "field"
    assert isinstance(stmts[10].value, ast.Call)
    g = stmts[11].value
    assert len(g.items) == 2 and isinstance(g.items[1], ast.Unary)


def test_statements_need_no_separator():
    stmts = stage_stmts("stage s { let a = 1 let b = a return b }")
    assert [type(s).__name__ for s in stmts] == ["LetStmt", "LetStmt", "ReturnStmt"]


def test_stage_spans():
    text = "type A { x: int }\nstage reproduce -> A {\n  return { x: 1 }\n}\n"
    m = ok(text)
    stage = m.of(ast.StageDecl)[0]
    assert (stage.name.span.line, stage.name.span.column, stage.name.span.end_column) == (2, 7, 16)
    ret = stage.body.stmts[0]
    assert source_of(text, ret) == "return { x: 1 }"
    assert source_of(text, ret.value.entries[0]) == "x: 1"
    assert ret.value.entries[0].key_span.column == 12


@pytest.mark.parametrize(
    "path",
    sorted(glob.glob(str(EXAMPLES / "*.flow")) + glob.glob(str(EXAMPLES / "diagnostics/*.flow"))),
    ids=lambda p: Path(p).name,
)
def test_examples_parse(path):
    text = Path(path).read_text(encoding="utf-8")
    module, diags = parse_module(text, path)
    if path.endswith("syntax.flow"):
        assert [d.code for d in diags] == ["syntax-error"]
        assert diags[0].span.line == 3
        assert "expected `}`" in diags[0].message
        assert any(isinstance(i, ast.ErrorItem) and i.name == "s" for i in module.items)
        assert isinstance(module.items[0], ast.TypeDecl)
    else:
        assert diags == []
        assert not any(isinstance(i, ast.ErrorItem) for i in module.items)


def test_recovery_two_broken_items_and_one_good():
    text = """type A { x: int }
stage broken1 -> A {
  let a = = 1
}
stage good -> A {
  return { x: 1 }
}
stage broken2 -> A {
  let y = foo(
stage after -> A { return { x: 2 } }
"""
    module, diags = parse_module(text, "r.flow")
    assert [d.code for d in diags] == ["syntax-error", "syntax-error"]
    assert diags[0].span.line == 3 and "expected an expression" in diags[0].message
    assert diags[1].span.line == 9
    kinds = [(type(i).__name__, getattr(i, "name", None)) for i in module.items]
    names = [n if isinstance(n, str) or n is None else n.name for _, n in kinds]
    assert [k for k, _ in kinds] == ["TypeDecl", "ErrorItem", "StageDecl", "ErrorItem", "StageDecl"]
    assert names == ["A", "broken1", "good", "broken2", "after"]
    good = module.items[2]
    assert good.body.stmts[0].value.entries[0].key == "x"


def test_recovery_keeps_following_declaration_after_dangling_use():
    text = 'use agent "x" as\nextern tool f(a: int) -> text\n'
    module, diags = parse_module(text, "r.flow")
    assert len(diags) == 1
    assert diags[0].message == "expected a name, found `extern`"
    assert (diags[0].span.line, diags[0].span.column) == (2, 1)
    assert isinstance(module.items[-1], ast.ExternTool)


def test_line_index_matches_counting_newlines():
    """Error recovery numbers lines with its line index: the same numbers as counting newlines."""
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


def test_syntax_error_messages_use_words():
    cases = {
        "stage s { let = 1 }": "expected a name, found `=`",
        "stage s {": "expected `}` to close the stage body opened on line 1, found the end",
        "stage s -> int {\n  let x = (1 + 2\n  return x\n}": (
            "expected `)` to close the `(` opened on line 2, found `return`"
        ),
        'stage s {\n  let x = read_file(path: "a" limit: 3)\n}': (
            "expected `,` or `)` to close the `(` opened on line 2, found the name `limit`"
        ),
        "stage s {\n  agent(a) {\n    task 1\n": "close the agent block opened on line 2",
        "type T {\n  x: int\n\nstage s -> int { return 1 }": (
            "expected `}` to close the type body opened on line 1 before `stage` starts"
        ),
        "type T { a: }": "expected a type",
        "stage s { agent(x) { foo 1 } }": "an agent clause",
        "stage s { let x = 1 ]": "expected `}` to close the stage body opened on line 1, found `]`",
        'stage s { let x = "abc }': "unterminated string",
        "bogus": "expected a declaration",
    }
    for text, words in cases.items():
        _, diags = parse_module(text, "m.flow")
        assert diags and words in diags[0].message, (text, diags)
        assert diags[0].code == "syntax-error"


@pytest.mark.parametrize(
    "text",
    [
        "\x00\x00\x00",
        "{" * 10_000,
        "[" * 10_000,
        '"${' * 3_000,
        "stage s { let x = " + "(" * 10_000 + "1" + ")" * 10_000 + " }",
        "stage s { let x = " + "not " * 5_000 + "x }",
        "stage s { let x = " + "- " * 5_000 + "x }",
        "stage s { let x = " + "1 + " * 5_000 + "1 }",
        "stage s { let x = a" + ".b" * 5_000 + " }",
        "stage s { let x = " + "9" * 100_000 + " }",
        '"""',
        "/*",
        "\ufffd\ufffd stage",
        "stage s -> T { return 1 } }}}}",
    ],
)
def test_never_raises_on_hostile_input(text):
    module, diags = parse_module(text, "h.flow")
    assert isinstance(module, ast.Module)
    for d in diags:
        assert d.code == "syntax-error" and d.span.line >= 1
        assert "parser failed" not in d.message  # the internal last-resort guard


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            list("{}[]()<>\"'$\\/*.,:;=?|@-+ \n\tabcxyz019")
            + ["stage ", "type ", "let ", "agent", "map ", "not ", '"""', "${", "//", "\x00"]
        ),
        max_size=120,
    ).map("".join)
)
def test_parse_module_never_raises_on_random_text(text):
    module, diags = parse_module(text, "fuzz.flow")
    assert isinstance(module, ast.Module)
    assert all(d.code == "syntax-error" for d in diags)
    assert not any("parser failed" in d.message for d in diags)
    if any(isinstance(i, ast.ErrorItem) for i in module.items):
        assert diags


_EXAMPLE = (EXAMPLES / "bug-triage.flow").read_text(encoding="utf-8")


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(_EXAMPLE)), st.integers(0, 12), st.text(max_size=6))
def test_parse_module_never_raises_on_mutated_example(at, cut, insert):
    text = _EXAMPLE[:at] + insert + _EXAMPLE[at + cut :]
    module, diags = parse_module(text, "mut.flow")
    assert isinstance(module, ast.Module)
    assert all(d.code == "syntax-error" for d in diags)
    assert not any("parser failed" in d.message for d in diags)
    # every item the checker sees is either whole or an ErrorItem
    errors = [i for i in module.items if isinstance(i, ast.ErrorItem)]
    assert bool(errors) == bool(diags)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=100))
def test_parse_expression_raises_only_source_error(text):
    try:
        parse_expression(text)
    except SourceError as e:
        assert e.span is not None


def test_simple_interpolation_fast_path_builds_the_same_nodes(monkeypatch):
    """`${a.b}` holes skip the nested parse; the nodes (and spans) must be the parser's own."""
    import re

    from agentflow.grammar import parser as P
    from agentflow.grammar import scanner

    text = (
        'stage s -> text {\n  let t = "x ${input.a} ${index}${b.c.d} ${true} ${a . b}"\n'
        '  return """\n    ${item.title}: ${z}\n    """\n}\n'
    )
    fast = repr(P.parse_module(text, "f.flow"))
    monkeypatch.setattr(scanner, "_SIMPLE_HOLE", re.compile(r"(?!)"))
    slow = repr(P.parse_module(text, "f.flow"))
    assert fast == slow


def test_statement_keywords_are_not_names_in_expressions():
    # `let x =` with the value missing: the next line's `return` is not read as a name
    _, diags = parse_module("stage s -> int {\n  let x =\n  return 1\n}", "k.flow")
    assert [d.message for d in diags] == ["expected an expression, found `return`"]
    _, diags = parse_module("stage s -> int {\n  let if = 1\n  return 1\n}", "k.flow")
    assert [(d.code, d.message) for d in diags] == [
        ("syntax-error", "`if` is a reserved word, never a name")
    ]
    # ... but every keyword is a name after `.` and before `:`, and the others are names
    ok = (
        "stage s -> json {\n  let model = 1\n  let task = model\n"
        "  return { return: input.return, if: task, in: input.in.not }\n}"
    )
    _, diags = parse_module(ok, "k.flow")
    assert diags == []


@pytest.mark.parametrize("word", ["input", "task", "model", "tools", "expect", "timeout", "as"])
def test_contextual_keyword_begins_a_statement_after_a_statement(word):
    """Keywords are contextual (docs/spec/LANGUAGE.md §1): `input.a`, or a name like `task`, may
    begin a statement after another statement (LALR's merged lookaheads made it an agent clause)."""
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


def test_unterminated_string_after_a_multiline_interpolation_points_at_its_start():
    # found by bench/fuzz_check.py: the column was computed from the wrong line (negative)
    module, diags = parse_module('stage s -> text {\n  return "abc ${d\n}\n', "u.flow")
    assert [d.code for d in diags] == ["syntax-error"]
    span = diags[0].span
    assert (span.line, span.column) == (2, 10)
    assert span.end_line >= span.line and span.column >= 1


# -- hints for the slips of users of other languages --------------------------------------------


def _first(text: str):
    _, diags = parse_module(text, "m.flow")
    assert diags and diags[0].code == "syntax-error", (text, diags)
    return diags[0]


@pytest.mark.parametrize(
    "text, line",
    [
        ('stage s -> json {\n  let xs = filter input.items as e where e.kind = "file"\n}', 2),
        ("stage s -> int {\n  if input.n = 2 { return 1 }\n  return 0\n}", 2),
        ("stage s -> bool {\n  return input.a = 1\n}", 2),
    ],
)
def test_single_equals_in_an_expression_hints_double_equals(text: str, line: int):
    d = _first(text)
    assert d.span.line == line
    assert d.message.startswith("expected ") and d.message.endswith("found `=`"), d.message
    assert d.hint == "did you mean `==`?"


def test_expected_set_names_agent_clauses_only_inside_an_agent_block():
    # LALR merges lookaheads: the set used to list agent clauses (and `]`, `)`) in a stage body
    d = _first('stage s -> json {\n  let xs = filter input.items as e where e.kind = "file"\n}')
    assert "agent clause" not in d.message and "`]`" not in d.message, d.message
    assert "a statement" in d.message and "an operator" in d.message
    d = _first("stage s -> json {\n  let x = 1 +\n}")
    assert "agent clause" not in d.message
    inside = _first('stage s -> json {\n  return agent(a) {\n    task "t" = 1\n  }\n}')
    assert "an agent clause" in inside.message


def test_agent_target_without_parentheses():
    d = _first('use agent "r" as reviewer\nstage s -> json {\n  return agent reviewer {\n  }\n}')
    assert d.message == "expected `(`, found the name `reviewer`"
    assert d.hint == "the agent's target goes in parentheses: `agent(reviewer) { … }`"


def test_unexpected_token_phrasing_has_no_article():
    # when nothing the parser expects can be named, the message reads "unexpected name `x`"
    from agentflow.grammar.syntax_errors import describe as _describe

    class T:
        type, value = "NAME", "reviewer"

    assert _describe(T(), article=False) == "name `reviewer`"
    assert _describe(T()) == "the name `reviewer`"
    for text in ["stage s { return agent reviewer { } }", "bogus", "stage s { let = 1 }"]:
        _, diags = parse_module(text, "m.flow")
        assert all("unexpected the" not in d.message for d in diags), diags


@pytest.mark.parametrize(
    "clause, example",
    [
        ('task: "Rank"', 'task "…"'),
        ("expect: int", "expect T"),
        ("input: { a: 1 }", "input { … }"),
        ("max_iterations: 3", "max_iterations 6"),
    ],
)
def test_colon_after_agent_clause_keyword(clause: str, example: str):
    text = f'use agent "r" as r\nstage s -> json {{\n  return agent(r) {{\n    {clause}\n  }}\n}}'
    d = _first(text)
    assert d.span.line == 4 and "found `:`" in d.message, d.message
    assert d.hint == f"agent clauses take no colon: `{example}`"


def test_colon_hint_only_for_agent_clauses():
    assert _first("input: Foo\n").hint is None
    d = _first('stage s -> bool {\n  return ask "ok?" expect: bool\n}')
    assert d.hint is None


@pytest.mark.parametrize("kind", ["agent", "team"])
def test_use_name_must_be_a_string(kind: str):
    d = _first(f"use {kind} reviewer\nstage s -> int {{ return 1 }}")
    assert d.message == "expected a string, found the name `reviewer`"
    assert d.hint == f'the {kind} name is a string: `use {kind} "reviewer" as reviewer`'


@pytest.mark.parametrize(
    "written, hint",
    [
        ("list<text>", "agentflow writes a list as `text[]`"),
        ("Array<string>", "agentflow writes a list as `text[]`"),
        ("Dict<Integer>", "agentflow writes an object with text keys as `map<int>`"),
        ("Result<text>", "a value or the error of a failed item is `Outcome<text>`"),
    ],
)
def test_a_generic_type_of_another_language_is_an_unknown_type_with_its_spelling(
    written: str, hint: str
):
    # `Name<T>` parses (`Outcome<T>` is a type); the checker names the agentflow spelling
    result = check_source(f"type A {{ x: {written} }}", "m.flow")
    d = result.diagnostics[0]
    assert (d.code, d.hint) == ("unknown-type", hint), (d.message, d.hint)
    assert d.message == f"unknown type `{written.split('<')[0]}<…>`"


@pytest.mark.parametrize(
    "written, hint",
    [
        ("List[str]", "agentflow writes a list as `text[]`"),
        ("Optional[int]", "agentflow writes an optional type as `int?`"),
        ("Dict[str, Integer]", "agentflow writes an object with text keys as `map<int>`"),
        ("map<text, int>", "`map<T>` takes only the value type (its keys are text): `map<int>`"),
    ],
)
def test_generic_types_of_other_languages(written: str, hint: str):
    d = _first(f"type A {{ x: {written} }}")
    assert d.hint == hint, (d.message, d.hint)


def test_map_with_two_arguments_names_the_closing_angle():
    d = _first("type A { x: map<text, int> }")
    assert d.message == "expected `>`, found `,`"


def test_interpolation_error_names_the_closing_brace():
    d = _first('stage s -> text {\n  return "a ${x return} b"\n}')
    assert d.message == "expected `}`, found `return`", d.message


def test_an_outcome_with_two_type_arguments_names_its_one_argument():
    d = _first("type A { x: Outcome<string, Error> }")
    assert d.message == "expected `>`, found `,`"
    assert d.hint == "`Outcome<T>` takes only the type of its value: `Outcome<text>`"


STUB_FLOW = """use team "support" as support
type R { x: int }
stage s -> R {
  agent(support.main) { task "x" tools none expect R }
}
test "t" {
  STUB
}
"""


def test_stubbing_a_team_member_by_path_hints_at_the_alias_and_stub_stage():
    d = _first(STUB_FLOW.replace("STUB", "stub agent support.main returns { x: 1 }"))
    assert (d.span.line, d.span.column) == (7, 21) and "found `.`" in d.message, d.message
    assert d.hint is not None
    assert "`stub agent support returns …`" in d.hint
    assert "`stub stage NAME returns …`" in d.hint


def test_stubbing_an_ask_to_fail_hints_at_what_can_fail():
    d = _first(STUB_FLOW.replace("STUB", 'stub ask go fails "output_validation"'))
    assert "found `fails`" in d.message, d.message
    assert d.hint == (
        "only an agent, a stage's agents or a tool can be stubbed to fail "
        '(`stub agent|stage|tool NAME fails "code"`); '
        "`stub ask` gives answers: `stub ask go returns …`"
    )


def test_an_ask_answer_then_a_failure_hints_that_only_agents_and_tools_fail_in_turn():
    # `fails` after `then` of an ask stub is read as a name: the string after it is unexpected
    d = _first(STUB_FLOW.replace("STUB", 'stub ask go returns true then fails "failed"'))
    assert d.message.endswith("found a string"), d.message
    assert d.hint is not None and "`stub ask` and `stub step` give values" in d.hint


@pytest.mark.parametrize("kind, name", [("agent", "support"), ("stage", "s")])
def test_an_agent_or_stage_stub_may_fail(kind: str, name: str):
    _, diags = parse_module(
        STUB_FLOW.replace("STUB", f'stub {kind} {name} fails "output_validation"'), "m.flow"
    )
    assert diags == []


@pytest.mark.parametrize(
    "body, word",
    [
        ("  for x in input.items { n = n + 1 }\n  return 1", "for"),
        ("  for x in input.items {\n    let y = x\n  }\n  return 1", "for"),
        ("  while true {\n    return 1\n  }", "while"),
    ],
)
def test_a_loop_of_another_language_hints_at_map_filter_and_reduce(body: str, word: str):
    d = _first(f"input {{ items: text[] }}\nstage a -> int {{\n{body}\n}}\n")
    assert d.message == f"there is no `{word}` loop in `.flow`"
    # the loop's word is the primary span (the parse stopped inside its braces: a note)
    assert (d.span.line, d.span.column, d.span.end_column) == (3, 3, 3 + len(word))
    assert d.notes[-1].message.startswith("the parser stopped here: "), d.notes
    assert d.hint == (
        "iterate with a value: `map xs as x { … }` gives a value per item, "
        "`filter xs as x where …` keeps some, `reduce xs as x, acc = start { … }` folds them, "
        "`loop up to n as i, s = start { … } until cond else …` repeats"
    )


def test_assigning_a_let_again_hints_that_lets_are_bound_once():
    d = _first("stage a -> int {\n  let n = 0\n  n = n + 1\n  return n\n}\n")
    assert (d.span.line, d.span.column) == (3, 5) and "found `=`" in d.message, d.message
    assert d.hint == (
        "a `let` is bound once and cannot be assigned again; name the new value "
        "(`let n2 = …`), or fold a list with `reduce`"
    )
    # `=` for `==` inside an expression keeps its own hint
    d = _first('input { k: text }\nstage a -> bool {\n  return input.k = "x"\n}\n')
    assert d.hint == "did you mean `==`?"


@pytest.mark.parametrize(
    "line",
    [
        "  map input.xs as x { total = 5 }",
        "  if true { total = total + 1 }",
        "  let ys = map input.xs as x {   total = x }",
    ],
)
def test_assigning_a_let_first_in_a_one_line_block_hints_that_lets_are_bound_once(line: str):
    d = _first(
        f"input {{ xs: int[] }}\nstage a -> int {{\n  let total = 0\n{line}\n  return 1\n}}\n"
    )
    assert "found `=`" in d.message and d.span.line == 4, d.message
    assert d.hint == (
        "a `let` is bound once and cannot be assigned again; name the new value "
        "(`let total2 = …`), or fold a list with `reduce`"
    )


def test_an_equals_sign_in_an_object_is_not_read_as_an_assignment():
    d = _first("stage a -> int {\n  let o = { a = 1 }\n  return 1\n}\n")
    assert "bound once" not in (d.hint or "")


def test_a_loop_without_up_to_hints_that_loops_are_bounded():
    d = _first("stage s -> int {\n  loop 3 as r, n = 0 { n + r }\n}\n")
    assert "expected `up`" in d.message
    assert d.hint == "a loop is bounded: `loop up to N as round, state = start { … }`"


def test_a_loop_without_as_hints_at_naming_the_round_and_the_state():
    d = _first("stage s -> int {\n  let x = loop up to 5 {\n    1\n  }\n  return x\n}\n")
    assert d.message == "expected `as`, found `{`"
    assert d.hint == (
        "name the round and the state: `loop up to 5 as round, s = start { … } until …` "
        "(the body's value is the next state)"
    )


def test_a_loop_until_without_else_hints_at_what_running_out_of_rounds_gives():
    d = _first("stage s -> int {\n  loop up to 3 as r, n = 0 { n + r } until n > 3\n}\n")
    assert "expected `else`" in d.message, d.message
    assert d.hint == (
        "say what the loop gives when no round meets `until`: "
        '`else fail "…"` (fails with `loop_exhausted`) or `else <value>` (e.g. the last state)'
    )


def test_a_loop_parses_with_its_bound_round_state_until_and_else():
    module, diags = parse_module(
        "stage s -> int {\n  loop up to 2 + 1 as r, n: int = 0 { n + r } until n > 3 else n\n}\n",
        "l.flow",
    )
    assert diags == []
    (stmt,) = module.items[0].body.stmts
    loop = stmt.expr
    assert isinstance(loop, ast.LoopExpr)
    assert (loop.var.name, loop.acc.name, loop.else_fail) == ("r", "n", None)
    assert isinstance(loop.over, ast.Binary) and isinstance(loop.else_value, ast.Name)
    assert (loop.keyword_span.column, loop.keyword_span.end_column) == (3, 7)


def test_an_if_then_without_else_hints_at_the_else_arm_and_the_if_statement():
    d = _first(
        'input { n: int }\nstage b -> text {\n  let x = if input.n > 0 then "pos"\n  return x\n}\n'
    )
    assert "expected `else`" in d.message, d.message
    assert d.hint == (
        "an `if … then` expression needs its `else`: `if c then a else b`; to run "
        "statements only when `c` holds, write an `if c { … }` statement"
    )


def test_a_c_style_conditional_hints_at_if_then_else():
    d = _first('input { n: int }\nstage b -> text {\n  return input.n > 0 ? "a" : "b"\n}\n')
    assert "found `?`" in d.message, d.message
    assert d.hint == "there is no `c ? a : b` in `.flow`: write `if c then a else b`"


@pytest.mark.parametrize(
    "expr, word",
    [
        ("loop up to 3 as r, s = 0 { s + r } catch { 0 }", "loop"),
        ("loop up to 3 as r, s = 0 { s + r } until s > 1 else s catch { 0 }", "loop"),
        ('ask "n?" expect int default 1 catch on [failed] as e { 0 }', "ask"),
        ('filter input.xs as x where x == "a" catch { [] }', "filter"),
    ],
)
def test_catch_after_a_lowest_precedence_expression_hints_at_parentheses(expr: str, word: str):
    # the lowest-precedence expression swallows `catch`, and the fallback's `{` reads as an object
    d = _first(f"input {{ xs: text[] }}\nstage d -> json {{\n  let y = {expr}\n  return y\n}}\n")
    assert d.hint == (
        f"`{word}` takes the lowest precedence, so `catch` cannot follow it directly: "
        f"put it in parentheses, `({word} …) catch {{ … }}`, or in a block, "
        f"`try {{ {word} … }} catch {{ … }}`"
    )


def test_stub_judge_hints_at_stubbing_the_let_that_holds_it():
    # a `verify`'s judge too: its `let` holds a Verdict (a new user wrote `stub judge returns
    # false` for one, and the hint named only `filter … where judge`)
    d = _first('stage s -> int { return 1 }\ntest "t" {\n  stub judge real returns true\n}\n')
    assert "found `judge`" in d.message, d.message
    assert d.hint == (
        "a judge is stubbed through the `let` that holds its result: "
        "`let kept = filter … where judge …`, then `stub step kept returns …`; "
        "`let v = verify { … }`, then `stub step v returns { passed: false, failures: […] }`"
    )


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        (
            "input { rounds: int = 3 }\nstage s -> int { return 1 }\n",
            "a field has no default value: make it optional, `rounds: int?`, and give the "
            "default where it is read, `input.rounds ?? 3`",
        ),
        (
            "type T {\n  n: int? = 3\n}\nstage s -> int { return 1 }\n",
            "a field has no default value: make it optional, `n: int?`, and give the "
            "default where it is read, `x.n ?? 3`",
        ),
    ],
)
def test_a_default_value_on_a_field_hints_at_an_optional_field_read_with_qq(source: str, hint: str):
    # `input { rounds: int = 3 }` (a default, as in Python or TypeScript): the hint was only
    # "write `,`, a name or `}` to close the `input` object"
    d = _first(source)
    assert "found `=`" in d.message, d.message
    assert d.hint == hint


def test_an_equals_in_an_object_literal_is_not_taken_for_a_fields_default():
    d = _first("stage s -> json {\n  let o = { a: 1 = 2 }\n  return o\n}\n")
    assert d.hint is None or "default value" not in d.hint


@pytest.mark.parametrize(
    "clause, after",
    [
        ('agent(r) {\n    task "Rank"\n    retry 1\n  }', "1"),
        ('agent(r) {\n    task "Rank"\n    retry 3 times\n  }', "3"),
        ('read_file(path: "a.md") retry 2', "2"),
    ],
)
def test_retry_with_a_bare_count_hints_the_object_it_takes(clause: str, after: str):
    # `retry 1` of a user who guessed the syntax: agents.md "retry { attempts: N, on: [codes] }"
    text = f'use agent "r" as r\nstage s -> json {{\n  return {clause}\n}}'
    d = _first(text)
    assert d.message == f"expected `{{`, found the number `{after}`"
    assert d.hint == (
        f"`retry` takes an object: `retry {{ attempts: {after} }}`, "
        f"or `retry {{ attempts: {after}, on: [timeout, transient] }}` to name the errors"
    )
