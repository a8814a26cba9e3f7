"""Tests of the `.flow` type checker (docs/spec/LANGUAGE.md §2–9) and its semantic types.

Line-level expectations live in tests/compiler/check/*.flow (see test_checker_golden.py); these
tests cover the CheckResult interface the lowering relies on, the type relation, robustness and
the diagnostics documentation.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import REPO
from support.paths import SPEC_EXAMPLES as EXAMPLES

from agentflow.compiler.api import check_file, check_source
from agentflow.compiler.checker import prelude_tools
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    MEMBER,
    NEVER,
    NULL,
    NUMBER,
    PATH,
    TEXT,
    VERDICT,
    ExternType,
    Field,
    ListType,
    LiteralType,
    MapType,
    NamedRef,
    ObjectType,
    OptionalType,
    TypeEnv,
    UnionType,
    assignable,
    join,
    make_union,
    schema_problem,
    type_str,
    widen,
)
from agentflow.core.diagnostics import CODES, FALLBACK_HINTS, PLAN_CODES
from agentflow.grammar import ast


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(src, "t.flow").diagnostics]


# ------------------------------------------------------------------------------- types


def test_assignability_rules():
    env = TypeEnv()
    assert assignable(INT, NUMBER, env)
    assert not assignable(NUMBER, INT, env)
    assert assignable(PATH, TEXT, env) and assignable(MEMBER, TEXT, env)
    assert not assignable(TEXT, PATH, env) and not assignable(TEXT, MEMBER, env)
    assert assignable(LiteralType("a.md"), PATH, env)
    assert assignable(LiteralType("bob"), MEMBER, env)
    assert assignable(TEXT, OptionalType(TEXT), env)
    assert assignable(NULL, OptionalType(INT), env)
    assert not assignable(NULL, INT, env)
    assert not assignable(OptionalType(INT), INT, env)
    assert assignable(LiteralType(3), NUMBER, env)
    assert not assignable(LiteralType(True), INT, env)  # bool literal is not 1
    assert assignable(ListType(INT), ListType(NUMBER), env)
    assert assignable(ListType(NEVER), ListType(TEXT), env)
    assert assignable(ERROR, INT, env) and assignable(INT, ERROR, env)
    assert assignable(JSON, INT, env) and assignable(ListType(INT), JSON, env)
    sev = make_union([LiteralType("low"), LiteralType("high")])
    assert assignable(LiteralType("low"), sev, env)
    assert not assignable(LiteralType("mid"), sev, env)
    assert not assignable(TEXT, sev, env)
    assert assignable(sev, TEXT, env)
    assert assignable(MapType(INT), MapType(NUMBER), env)
    assert assignable(ExternType("H"), ExternType("H"), env)
    assert not assignable(ExternType("H"), ExternType("G"), env)
    assert not assignable(VERDICT, BOOL, env)
    assert not assignable(DURATION, TEXT, env)


def test_object_assignability_is_structural_and_closed():
    env = TypeEnv()
    node = ObjectType(
        {"name": Field(TEXT), "children": Field(ListType(NamedRef("Node")))}, name="Node"
    )
    env.objects["Node"] = node
    leaf = ObjectType({"name": Field(LiteralType("leaf")), "children": Field(ListType(NEVER))})
    assert assignable(ListType(leaf), ListType(NamedRef("Node")), env)
    extra = ObjectType({**leaf.fields, "x": Field(INT)})
    assert not assignable(extra, NamedRef("Node"), env)
    missing = ObjectType({"name": Field(TEXT)})
    assert not assignable(missing, NamedRef("Node"), env)
    opt = ObjectType({"a": Field(OptionalType(INT), optional=True)})
    assert assignable(ObjectType({}), opt, env)
    assert assignable(NamedRef("Node"), NamedRef("Node"), env)


def test_join_widen_and_type_str():
    def lit(v):
        return LiteralType(v, fresh=True)  # the type of a literal expression

    assert join([lit(1), lit(2)]) == INT
    assert join([lit(1), lit(2.5)]) == NUMBER
    assert join([PATH, lit("x")]) == PATH
    assert join([PATH, lit(3)]) == UnionType((PATH, INT))
    assert join([TEXT, NULL]) == OptionalType(TEXT)
    assert join([]) == NEVER
    assert widen(ListType(lit("a"))) == ListType(TEXT)
    # a declared literal type is not widened (only fresh literals are)
    declared = make_union([LiteralType("a"), LiteralType("b")])
    assert widen(ListType(declared)) == ListType(declared)
    assert type_str(ListType(UnionType((PATH, INT)))) == "(path | int)[]"
    assert type_str(OptionalType(ListType(TEXT))) == "text[]?"
    assert type_str(make_union([LiteralType("a"), LiteralType("b")])) == '"a" | "b"'
    assert type_str(ObjectType({"a": Field(INT)})) == "{ a: int }"
    assert type_str(MapType(INT)) == "map<int>"


def test_schema_problem():
    env = TypeEnv()
    env.externs["H"] = ExternType("H")
    env.objects["W"] = ObjectType({"h": Field(ExternType("H"))}, name="W")
    assert schema_problem(TEXT, env) is None
    assert schema_problem(VERDICT, env)
    assert schema_problem(ListType(ExternType("H")), env)
    assert schema_problem(NamedRef("W"), env)
    env.objects["R"] = ObjectType({"r": Field(ListType(NamedRef("R")))}, name="R")
    assert schema_problem(NamedRef("R"), env) is None  # recursion terminates


# ------------------------------------------------------------------------------- result


def test_result_interface_on_bug_triage():
    res = check_file(EXAMPLES / "bug-triage.flow")
    assert res.diagnostics == []
    assert res.flow_name == "bug_triage"
    assert res.description == "Triage a reported bug and draft fixes"
    assert res.deadline_ms == 20 * 60 * 1000
    assert res.input_type == NamedRef("BugReport")
    assert [s.name.name for s in res.stages] == ["reproduce", "plan", "implement"]
    assert res.stage_types["implement"] == ListType(NamedRef("ChangeResult"))
    assert res.output_type == ListType(NamedRef("ChangeResult"))
    assert set(res.uses) == {"dev", "investigator"}
    assert res.env.objects["Reproduction"].fields["reproduced"].doc == (
        "whether the failure could be tied to specific code"
    )
    assert res.env.objects["WorkItem"].fields["writes"].constraints == {"length": (1, 5)}
    kinds = {(s.kind, s.name) for s in res.references.values()}
    assert ("input", "input") in kinds
    assert ("stage", "plan") in kinds and ("stage", "reproduce") in kinds
    assert ("loopvar", "item") in kinds and ("use", "dev") in kinds
    assert ("let", "result") in kinds and ("use", "investigator") in kinds


def _all_exprs(module: ast.Module):
    stack: list = [module]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Node):
            if isinstance(n, ast.Expr):
                yield n
            for name in type(n).__dataclass_fields__:
                if name != "span":
                    stack.append(getattr(n, name))
        elif isinstance(n, (list, tuple)):
            stack.extend(n)


@pytest.mark.parametrize("name", ["bug-triage", "incident-digest", "issue-review"])
def test_every_expression_is_typed(name):
    res = check_file(EXAMPLES / f"{name}.flow")
    untyped = []
    for e in _all_exprs(res.module):
        if isinstance(e, ast.ProjectionItem):
            continue
        if isinstance(e, ast.Expr) and id(e) not in res.expr_types:
            # constraint arguments are constants, not program expressions
            untyped.append(e)
    constraint_args = {
        id(a)
        for t in res.module.of(ast.TypeDecl)
        if t.body
        for f in t.body.fields
        for c in f.constraints
        for a in c.args
    }
    assert [e for e in untyped if id(e) not in constraint_args] == []
    for e in _all_exprs(res.module):
        if id(e) in res.expr_types:
            assert res.expr_types[id(e)] != ERROR, e


def test_reduce_accumulator_takes_stage_type_and_tools_are_recorded():
    res = check_file(EXAMPLES / "incident-digest.flow")
    reduce = next(e for e in _all_exprs(res.module) if isinstance(e, ast.ReduceExpr))
    assert res.type_of(reduce) == NamedRef("Digest")
    res2 = check_file(EXAMPLES / "issue-review.flow")
    sig = res2.tools["linear__list_issues"]
    assert sig.declared and sig.params == {"limit": (OptionalType(INT), True)}
    assert res2.output_type == NamedRef("Review")
    assert res2.input_type == ObjectType({"limit": Field(INT)})


def test_flow_name_defaults_to_stem_and_json_input():
    res = check_source('stage s -> text { return "x" }', "dir/my-flow.flow")
    assert res.flow_name == "my_flow"
    assert res.input_type == JSON
    assert res.output_type == TEXT
    assert res.ok


def test_untyped_tool_signature_and_prelude():
    res = check_source('stage s -> json { return a__b(x: 1, y: "z") }', "t.flow")
    assert [d.code for d in res.diagnostics] == ["untyped-tool"]
    sig = res.tools["a__b"]
    assert not sig.declared and set(sig.params) == {"x", "y"} and sig.returns == JSON
    prelude = prelude_tools()
    assert set(prelude) == {"read_file", "list_dir", "glob", "grep", "write_file", "edit_file"}
    assert prelude["read_file"].params["path"] == (PATH, False)
    assert prelude["read_file"].returns == TEXT and prelude["read_file"].prelude


def test_inferred_stage_type_and_literal_widening():
    res = check_source(
        'stage a { return { n: 1, s: "x" } }\nstage b -> int { return a.n }', "t.flow"
    )
    assert res.ok, res.diagnostics
    assert res.stage_types["a"] == ObjectType({"n": Field(INT), "s": Field(TEXT)})


# ------------------------------------------------------------------------------- behaviour


def test_no_cascades_from_one_mistake():
    src = """
    stage s -> int {
      let x = undefined_thing
      let y = x.a.b.c + 1
      let z = [y, x] + x
      return y + z.count + x.q
    }
    """
    assert codes(src) == [(3, "unknown-name")]


def test_unknown_type_silences_uses():
    src = """
    type T { a: Missing }
    stage s -> int { let t: T = { a: 1 } return t.a.b }
    """
    assert codes(src) == [(2, "unknown-type")]


def test_error_items_get_no_diagnostics_and_silence_their_names():
    src = """
    type A { x: int
    stage broken -> A { let = }
    stage ok -> int { return broken.x }
    """
    found = codes(src)
    assert found and all(code == "syntax-error" for _, code in found)


def test_unknown_argument_suppresses_missing_argument():
    assert codes('stage s -> int { return grep(patern: "x").count }') == [(1, "unknown-argument")]


def test_missing_argument_hint_and_notes():
    res = check_source('stage s -> text { return read_file(pth: "x") }', "t.flow")
    (d,) = res.diagnostics
    assert d.hint == "did you mean `path`?"


def test_duplicate_definition_note_points_at_first():
    res = check_source("type A { x: int }\ntype A { y: int }", "t.flow")
    (d,) = res.diagnostics
    assert d.code == "duplicate-definition" and d.span.line == 2
    assert d.notes and d.notes[0].span.line == 1


def test_interpolated_string_is_a_path_argument():
    src = 'input { dir: text }\nstage s -> text { return read_file(path: "${input.dir}/a.md") }'
    assert codes(src) == []


def test_team_member_accepts_computed_text():
    src = """
    input { who: text }
    use team "t" as t
    stage s -> bool { agent(t.member(input.who)) { task "x" expect bool } }
    """
    assert codes(src) == []


def test_diagnostics_sorted_and_parse_errors_merged():
    src = "stage a -> int { return nope }\ntype B = \nstage c -> int { return nope2 }"
    res = check_source(src, "t.flow")
    keys = [d.sort_key() for d in res.diagnostics]
    assert keys == sorted(keys)
    assert "syntax-error" in {d.code for d in res.diagnostics}


# ------------------------------------------------------------------------------- robustness


def test_check_file_survives_binary_and_bad_utf8(tmp_path):
    p = tmp_path / "bin.flow"
    p.write_bytes(b"\x00\xff\xfe stage \x80 s -> { }" + bytes(range(256)))
    res = check_file(p)
    assert all(d.span.file == str(p) for d in res.diagnostics)


def test_deep_nesting_does_not_crash():
    depth = 3000
    src = "stage s -> int { return " + "(" * depth + "1" + ")" * depth + " }"
    check_source(src, "deep.flow")
    src2 = "stage s -> json { return " + "[" * depth + "]" * depth + " }"
    check_source(src2, "deep2.flow")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_random_text_never_raises(text):
    check_source(text, "fuzz.flow")


_SOURCES = [p.read_text() for p in sorted(EXAMPLES.glob("*.flow"))]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_SOURCES),
    st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 40)), max_size=4),
    st.sampled_from(["", "}", "{", "(", ")", "x", '"', "agent", "let", "[*]", ".", "?"]),
)
def test_mutated_programs_never_raise(src, cuts, insert):
    for at, length in cuts:
        at = at % (len(src) + 1)
        src = src[:at] + insert + src[at + length :]
    res = check_source(src, "mut.flow")
    for d in res.diagnostics:
        assert d.code in CODES


def test_flow_retry_attempts_bound_is_a_check_diagnostic():
    text = (EXAMPLES / "bug-triage.flow").read_text()
    assert "retry { attempts: 1," in text
    result = check_source(text.replace("retry { attempts: 1,", "retry { attempts: 21,"), "b.flow")
    msgs = [(d.code, d.message) for d in result.diagnostics]
    assert ("invalid-value", "`attempts` must be at most 20, found 21") in msgs


# ------------------------------------------------------------------------------- docs


DOC = REPO / "docs" / "diagnostics.md"


def _doc_sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## `([a-z0-9-]+)`\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_code_is_documented():
    sections = _doc_sections()
    missing = [c for c in CODES if c not in sections]
    assert missing == [], f"docs/diagnostics.md lacks sections for {missing}"
    for code, body in sections.items():
        assert code in CODES, f"documented code {code} is not registered"
        if code in PLAN_CODES:  # a plan file's codes: tests/ir/test_plan_codes_documented.py
            continue
        assert "```flow" in body and "Fix:" in body, f"section {code} needs an example and a fix"


#: codes reported after checking (by `flowc compile`), whose examples cannot be checked here
#: (`unsupported-construct`'s example is reported by the checker since issue 15)
NOT_FROM_CHECKER: set[str] = {
    "stale-generated-module",  # `flowc check` compares generated modules: tests/cli/test_gen_command.py
    "cost-over-budget",  # `flowc cost`'s: tests/cli/test_cost_command.py
    "unknown-agent-profile",  # `flowc check` reads flow.toml: tests/cli/test_agent_profile_typo.py
    # `flowc check` reads tools.py and plans/: tests/cli/test_extern_tools_checked_against_project.py
    "unknown-extern-tool",
    "extern-tool-signature",
    "invalid-config",  # `flowc check` loads flow.toml: tests/cli/test_check_reads_flow_toml.py
    # an import of a file shown beside the example: tests/docs/test_doc_examples.py checks them
    "unknown-import",
    "import-conflict",
    "import-cycle",
    "import-error",
}


@pytest.mark.parametrize("code", sorted(set(CODES) - NOT_FROM_CHECKER - PLAN_CODES))
def test_documented_example_triggers_its_code(code):
    body = _doc_sections().get(code)
    assert body is not None
    example = re.search(r"```flow\n(.*?)```", body, flags=re.S).group(1)
    found = {d.code for d in check_source(example, f"{code}.flow").diagnostics}
    assert code in found, f"the example of {code} gives {found}"


# ------------------------------------------------------------------------------- primary spans


def _covered(src: str, code: str) -> list[tuple[str, list[str]]]:
    """For each diagnostic with ``code``: the text under its primary span and under its notes."""
    lines = src.split("\n")

    def text(s):
        if s.line != s.end_line:
            return src[s.start : s.end]
        return lines[s.line - 1][s.column - 1 : s.end_column - 1]

    return [
        (text(d.span), [text(n.span) for n in d.notes if n.span is not None])
        for d in check_source(src, "spans.flow").diagnostics
        if d.code == code
    ]


SPAN_CASES = [
    # (code, program, text under the primary span, texts under the notes)
    ("unknown-name", "stage s -> int { return cuont }", "cuont", []),
    ("unknown-type", "type A { x: Strng }", "Strng", []),
    (
        "unknown-field",
        "type A { x: int }\nstage s -> A { return { x: 1 } }\nstage t -> int { return s.y }",
        "y",
        [],
    ),
    ("unknown-tool", "stage s -> json { return frobnicate(x: 1) }", "frobnicate", []),
    ("unknown-argument", 'stage s -> text { return read_file(pth: "a") }', "pth", []),
    ("missing-argument", "stage s -> text { return read_file(limit: 1) }", "read_file", []),
    ("duplicate-definition", "type A { x: int }\ntype A { y: int }", "A", ["A"]),
    ("duplicate-field", "type A { x: int, x: text }", "x", ["x"]),
    (
        "duplicate-clause",
        'use agent "a" as a\nstage s -> text {\n  agent(a) { task "t"\n expect text\n task "u" }\n}',
        "task",
        ["task"],
    ),
    (
        "missing-clause",
        'use agent "a" as a\nstage s -> text { agent(a) { task "t" } }',
        "agent",
        [],
    ),
    ("type-mismatch", 'stage s -> int { return "one" }', '"one"', []),
    ("missing-return", "stage s -> int {\n  if true { return 1 }\n}", "s", []),
    ("cyclic-alias", "type B = C\ntype C = B", "B", ["C"]),
    (
        "forward-stage-reference",
        "stage a -> int { return b }\nstage b -> int { return 1 }",
        "b",
        ["b"],
    ),
    ("untyped-tool", "stage s -> json { return mcp__thing(a: 1) }", "mcp__thing", []),
    ("unused-variable", "stage s -> int {\n  let spare = 1\n  return 2\n}", "spare", []),
    ("unreachable-code", 'stage s -> int {\n  return 1\n  fail "x"\n}', 'fail "x"', []),
    ("invalid-constraint", "type A { n: text @range(0, 1) }", "@range(0, 1)", []),
    ("not-callable", "stage s -> json { return input() }", "input", []),
]


@pytest.mark.parametrize("code,src,primary,notes", SPAN_CASES, ids=[c[0] for c in SPAN_CASES])
def test_primary_span_rules(code, src, primary, notes):
    found = _covered(src, code)
    assert found, f"{code} not reported for {src!r}"
    assert found[0][0] == primary
    assert found[0][1][: len(notes)] == notes


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        ("let value = input.q\n  return valu", "did you mean `value`?"),
        # one letter for another: a guess, not a typo (the code's usual fix instead)
        ("let a = input.q\n  return b", FALLBACK_HINTS["unknown-name"]),
        ("let x = input.q\n  return xs", "did you mean `x`?"),
    ],
)
def test_unknown_name_hint_only_for_plausible_typos(body, hint):
    src = f'flow h "hints"\ninput {{ q: text }}\nstage s -> text {{\n  {body}\n}}\n'
    diags = [d for d in check_source(src, "h.flow").diagnostics if d.code == "unknown-name"]
    assert len(diags) == 1
    assert diags[0].hint == hint


def test_index_in_a_loop_body_names_the_round_instead():
    # a loop counts rounds (`as r`), not positions: `index` is `map`'s, `filter`'s and `reduce`'s
    src = (
        "type S { n: int, done: bool }\nstage a -> S {\n"
        "  loop up to 3 as r, s = { n: 0, done: false } {\n"
        "    { n: s.n + index, done: false }\n  } until s.done else s\n}\n"
    )
    (d,) = check_source(src, "t.flow").diagnostics
    assert (d.code, d.message, d.span.line) == ("unknown-name", "unknown name `index`", 4)
    assert (
        d.hint == "a `loop` has no `index`: its round number is `r` (`as r`, 1 for the first round)"
    )
    # outside any loop `index` keeps the plain message (and no loop hint)
    (d,) = check_source("stage a -> int { return index }", "t.flow").diagnostics
    assert d.code == "unknown-name" and "loop" not in (d.hint or "")


_JUDGED = """type Ticket { id: text, body: text }
input { tickets: Ticket[] }
stage real -> Ticket[] {
  filter input.tickets as t where judge "genuine? ${t.body}"
}
stage bound -> Ticket[] {
  let kept = filter input.tickets as t where judge "genuine? ${t.body}"
  return kept
}
test "x" {
  input { tickets: [] }
  STUB
}
"""


@pytest.mark.parametrize(
    "stub, how",
    [
        (
            "stub stage real returns true",
            "bind it to a `let` and stub that step: `let kept = filter … where judge …`, "
            "then `stub step kept returns …`",
        ),
        ("stub step real returns []", "bind it to a `let` and stub that step"),
        ("stub stage bound returns true", "stub its step: `stub step kept returns …`"),
    ],
)
def test_stubbing_a_stage_whose_model_calls_are_judges_names_the_let_to_stub(stub: str, how: str):
    # a judge (`filter … where judge`) is no agent: neither `stub stage` nor `stub step STAGE`
    # answers it, and the old hint sent the user to `stub tool`
    (d,) = check_source(_JUDGED.replace("STUB", stub), "t.flow").diagnostics
    assert d.code == "unknown-stub-target", d
    assert d.hint is not None and "are judges, which no `stub stage` or `stub agent`" in d.hint
    assert how in d.hint, d.hint


def test_a_negative_loop_bound_has_a_hint():
    (d,) = check_source(
        "stage s -> int {\n  loop up to -1 as r, n = 0 { n + r }\n}\n", "t.flow"
    ).diagnostics
    assert (d.code, d.message) == ("invalid-value", "`up to` must be 0 or more, found -1")
    assert d.hint == (
        "`up to N` is the most rounds the loop runs: 0 runs none (the value is the initial state)"
        " (`up to` takes a whole number from 0 to 1000)"
    )


def test_a_loop_state_starting_empty_takes_its_type_from_the_body():
    # as a `reduce` from `[]`: the state is not `never[]`, which no round's value could be
    text = (
        "stage s -> int {\n"
        '  let xs = loop up to 3 as r, acc = [] { acc + ["x"] }\n'
        '  let seen = loop up to 2 as r, st = { seen: [] } { { seen: st.seen + ["y"] } }\n'
        "  return xs.count + seen.seen.count\n"
        "}\n"
    )
    assert check_source(text, "t.flow").diagnostics == []
