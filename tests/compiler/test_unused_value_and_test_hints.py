"""`unused-value` (docs/diagnostics.md), and the hints of `stub ask` naming the `let` an `ask`
sits in and of `expect failure.code == …` (docs/reference/testing.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def diags(src: str):
    return check_source(src, "t.flow").diagnostics


def test_an_unused_value_names_the_ways_out():
    (d,) = diags("input { n: int }\nstage s -> int {\n  input.n + 1\n  return 0\n}\n")
    assert d.code == "unused-value" and d.severity == "error"
    assert (d.span.line, d.span.column, d.span.end_column) == (3, 3, 14)
    assert "`let _name = …`" in d.hint and "`return` it" in d.hint


def test_a_line_starting_with_minus_says_it_began_a_new_statement():
    src = "input { n: int }\nstage s -> int {\n  let t = input.n\n  - 1\n  return t\n}\n"
    (d,) = diags(src)
    assert d.code == "unused-value"
    assert d.hint.startswith("a line that starts with `-` begins a new statement")


def test_a_run_of_the_flow_of_the_trial_is_refused_before_it_runs():
    src = "input { n: int }\nstage a -> int {\n  input.n + 1\n  return 0\n}\n"
    assert not check_source(src, "t.flow").ok


ASK = """input { n: int }
stage decision -> bool {
  let ok = if input.n > 3 then true else ask "go on?" expect bool
  return ok
}
"""


def test_stub_ask_of_the_let_an_ask_sits_in_says_how_asks_are_named():
    (d,) = diags(ASK + 'test "t" {\n  input { n: 1 }\n  stub ask ok returns true\n}\n')
    assert d.code == "unknown-stub-target"
    # the fix that keeps the flow's behaviour comes first; moving the ask out of the `if` is
    # not suggested (the person would be asked even when `input.n > 3`)
    assert d.hint.startswith(
        "write `stub ask decision returns …`: it answers the asks of stage `decision` "
        "(the stage's only ask); `ok` is the `let` the `ask` sits in, not the ask's own name"
    )
    assert '`let answer = ask "…"`' not in d.hint
    assert "would change the flow: the person would be asked even when the `if`" in d.hint


def test_the_stub_the_nested_ask_hint_gives_answers_the_ask(tmp_path):
    import agentflow

    (tmp_path / "t.flow").write_text(
        ASK + 'test "t" {\n  input { n: 1 }\n  stub ask decision returns true\n'
        "  expect decision\n}\n",
        encoding="utf-8",
    )
    report = agentflow.run_tests([tmp_path / "t.flow"])
    assert report.ok, report.summary()


def test_stub_ask_of_an_unknown_name_lists_the_asks_with_how_they_are_written():
    (d,) = diags(ASK + 'test "t" {\n  input { n: 1 }\n  stub ask zzz returns true\n}\n')
    assert "`stub ask` names a `let` whose value is the `ask`" in d.hint
    assert "this flow's: `decision` (`stub ask decision returns …`)" in d.hint


def test_expect_failure_code_hints_at_expect_fail_with_the_code():
    src = ASK + (
        'test "t" {\n  input { n: 1 }\n  stub ask decision returns true\n'
        '  expect failure.code == "loop_exhausted"\n}\n'
    )
    (d,) = diags(src)
    assert d.code == "unknown-name" and d.message == "unknown name `failure`"
    assert d.hint.startswith('a test expects a failed run with `expect fail "loop_exhausted"`')


PARALLEL_ASK = """extern tool user__size(path: text) -> int
input { p: text }
stage a -> int {
  let both = parallel { ok: ask "go?" expect bool default false, n: user__size(path: input.p) }
  return if both.ok then both.n else 0
}
"""


def test_stub_ask_of_a_parallel_block_an_ask_is_a_branch_of_hints_the_branch_stub():
    (d,) = diags(PARALLEL_ASK + 'test "t" {\n  input { p: "a" }\n  stub ask both returns true\n}\n')
    assert d.code == "unknown-stub-target"
    assert d.hint == (
        "the `ask` is branch `ok` of the `parallel` block `both`: write `stub step both.ok "
        "returns …` (the branch's value); `stub ask a returns …` answers the asks of stage `a` "
        "(the stage's only ask)"
    )
    assert "`if`" not in d.hint


def test_the_branch_stub_the_parallel_ask_hint_gives_answers_the_ask(tmp_path):
    import agentflow

    (tmp_path / "t.flow").write_text(
        PARALLEL_ASK + 'test "t" {\n  input { p: "a" }\n  stub step both.ok returns true\n'
        "  stub tool user__size returns 3\n  expect output == 3\n}\n",
        encoding="utf-8",
    )
    report = agentflow.run_tests(tmp_path / "t.flow")
    assert report.ok, report.outcomes[0].failures


def test_stub_ask_of_a_let_an_ask_sits_in_unconditionally_does_not_speak_of_an_if():
    flow = (
        'input { n: int }\nstage s -> text {\n  let t = upper(ask "name?" expect text)\n'
        '  return t\n}\ntest "t" {\n  input { n: 1 }\n  stub ask t returns "x"\n}\n'
    )
    (d,) = diags(flow)
    assert "`if`" not in d.hint
    assert d.hint.endswith(
        'Or bind the ask to a `let` of its own (`let answer = ask "…"`) and stub that'
    )
