"""Fixed-seed fuzzing of the front end, the formatter, plans, templates and the language server
(issue 16; :mod:`support.fuzz`): a few seconds per kind here, ``bench/fuzz.py`` for the large runs.
A failure is a traceback, an impossible span, an internal compiler/formatter error, ``fmt``
output that is not a fixed point or changes what ``check`` says, a hang, or (LSP) a request
without an answer, an internal error or a traceback on stderr."""

from __future__ import annotations

import pytest
from support.fuzz import run

#: (kind, inputs) for CI: seconds, not minutes
BUDGETS = [("programs", 150), ("plans", 50), ("templates", 400), ("lsp", 60)]


@pytest.mark.parametrize("kind, n", BUDGETS, ids=[k for k, _ in BUDGETS])
def test_fuzzed_inputs_never_crash_or_hang(kind, n):
    outcome = run(kind, n, seed=16, time_limit=60.0)
    print(outcome.line())
    assert outcome.inputs >= n * 0.9
    assert outcome.failures == 0, outcome.samples


# The harness reuses a parse (programs) or a load (plans) of the same text within one input;
# these check that what it is there to find is still found.

_PROGRAM = "input { a: text }\nstage s -> text {\n  return   input.a\n}\n"


def test_program_fuzzer_reports_fmt_output_that_is_not_a_fixed_point(monkeypatch):
    from support.fuzz import check_program

    from agentflow.compiler import fmt

    assert check_program(_PROGRAM) is None
    layout = fmt._layout
    # each run adds one more comment line: never a fixed point
    monkeypatch.setattr(
        fmt, "_layout", lambda text, toks, *rest: layout(text, toks, *rest) + "// more\n"
    )
    assert check_program(_PROGRAM) == (
        "fmt is not idempotent (formatting the output changes it again)"
    )


def test_program_fuzzer_reports_fmt_output_that_checks_differently(monkeypatch):
    from support.fuzz import check_program

    from agentflow.compiler import api

    check_source = api.check_source

    def check_source_finding_a_problem_in_formatted_text(text, file="<input>"):
        result = check_source(text, file)
        if text != _PROGRAM:  # the formatted text
            result.diagnostics.append(
                check_source("stage", file).diagnostics[0]  # a syntax error
            )
        return result

    monkeypatch.setattr(api, "check_source", check_source_finding_a_problem_in_formatted_text)
    assert check_program(_PROGRAM).startswith("fmt changed what check reports: [] → ")


def test_plan_fuzzer_reports_a_dump_that_does_not_load_again(monkeypatch):
    from support.fuzz import check_plan

    from agentflow.ir import dump

    plan = "name: p\nsteps:\n  - id: E0\n    tool_name: value\n    input:\n      value: 1\n"
    assert check_plan(plan) is None
    monkeypatch.setattr(dump, "dump_plan", lambda data: "name: p\nsteps: 3\n")
    assert check_plan(plan).startswith("a loaded plan, dumped, does not load again")
