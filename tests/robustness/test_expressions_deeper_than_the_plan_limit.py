"""An expression whose compiled template is deeper than the plan limit (``MAX_EXPR_DEPTH``
levels) — a long member chain on `json`, a parenthesised operator chain inside another — is the
program's limit: ``flowc check`` reports it as an ``unsupported-construct`` diagnostic at the
step that holds it, the one ``compile`` gave, never an internal compiler error (found by the
program fuzzer, ``bench/fuzz.py programs``). A program that checks clean compiles: around the
limit, ``check`` is clean exactly when the plan the lowering writes passes the plan loader's own
depth bound (measured here with the check's phase switched off)."""

from __future__ import annotations

import pytest

from agentflow.api import CompileError, compile_checked, compile_source
from agentflow.compiler import check_depth
from agentflow.compiler.api import check_source
from agentflow.core.vocabulary import MAX_EXPR_DEPTH

_SUM = " + ".join(["1"] * 150)

BODIES = {
    "member chain": "  return input.a" + ".b" * (MAX_EXPR_DEPTH + 1),
    "operator chain in parentheses": f"  return ({_SUM}) * 9 + {_SUM}",
    "member chain in a map body": "  return map input.xs as x { x"
    + ".b" * (MAX_EXPR_DEPTH + 1)
    + " }",
}


def _program(body: str) -> str:
    return f"input {{ a: json, xs: json[], n: int? }}\nstage s -> json {{\n{body}\n}}\n"


@pytest.mark.parametrize("body", BODIES.values(), ids=list(BODIES))
def test_too_deep_a_compiled_expression_is_a_check_diagnostic(body):
    src = _program(body)
    (diag,) = check_source(src, "deep.flow").diagnostics
    assert diag.code == "unsupported-construct"
    assert diag.message.startswith("expression nested too deeply once compiled (more than 200")
    assert "internal" not in diag.message
    assert diag.span.file == "deep.flow" and diag.span.line >= 2
    with pytest.raises(CompileError) as exc:
        compile_source(src, "deep.flow")
    assert exc.value.diagnostics == [diag]


def test_a_chain_at_the_limit_compiles():
    src = _program("  return input.a" + ".b" * 190)
    assert check_source(src, "deep.flow").ok
    assert compile_source(src, "deep.flow").plan["steps"]


def test_a_let_with_a_long_member_chain_is_a_step_of_its_own():
    """A `let` whose own chain is longer than 16 links is not written out where it is read
    (docs/decisions.md "Lowering"), so a long chain reading it stays within the limit."""
    src = _program("  let v = input.a" + ".b" * 150 + "\n  return v" + ".c" * 150)
    plan = compile_source(src, "deep.flow").plan
    (let_step, _) = plan["steps"]
    assert let_step["meta"]["name"] == "v" and ".b" * 150 in let_step["input"]["value"]


def _families():
    """``(name, n → .flow body)`` of expressions whose compiled depth grows by one with ``n``."""
    return {
        "member chain": lambda n: "  return input.a" + ".b" * n,
        "member chain in a map body": lambda n: "  return map input.xs as x { x" + ".b" * n + " }",
        "+ chain in parentheses": lambda n: (
            f"  return ({' + '.join(['1'] * (n - 149))}) * 9 + {' + '.join(['1'] * 149)}"
        ),
        "inlined let": lambda n: "  let v = input.a.b.c.d\n  return v" + ".c" * (n - 4),
        "index chain": lambda n: "  return input.a" + "[0]" * n,
    }


def _refusal_without_the_check_phase(src: str, monkeypatch):
    """``compile``'s diagnostic for ``src`` when the check does not measure compiled depth
    (the plan loader alone decides), or None when it compiles."""
    with monkeypatch.context() as m:
        m.setattr(check_depth, "compiled_depth_diagnostics", lambda result: [])
        result = check_source(src, "deep.flow")
    assert result.ok, result.diagnostics
    try:
        compile_checked(result, src, "deep.flow")
    except CompileError as e:
        (diag,) = e.diagnostics
        return diag
    return None


@pytest.mark.parametrize("family", list(_families()))
def test_check_is_clean_exactly_when_the_program_compiles_around_the_limit(family, monkeypatch):
    make = _families()[family]
    outcomes = []
    for n in range(MAX_EXPR_DEPTH - 8, MAX_EXPR_DEPTH + 3):
        src = _program(make(n))
        checked = check_source(src, "deep.flow")
        refusal = _refusal_without_the_check_phase(src, monkeypatch)
        # the same diagnostic (code, message, hint) at the same place, or none
        assert checked.errors == ([refusal] if refusal else []), (family, n)
        if refusal is not None:
            assert refusal.message.startswith("expression nested too deeply once compiled")
            with pytest.raises(CompileError) as exc:
                compile_source(src, "deep.flow")
            assert exc.value.diagnostics == [refusal]
        outcomes.append(refusal is None)
    # the window crosses the limit: clean below it, refused above it
    assert outcomes[0] and not outcomes[-1]
    assert outcomes == sorted(outcomes, reverse=True)


def test_the_editor_reports_it_on_every_edit():
    """The language server checks each version of a document (incrementally parsed after the
    first): a chain growing past the limit gets the diagnostic, shrinking back clears it."""
    from agentflow.lsp.analysis import analyze
    from agentflow.lsp.incremental import IncrementalParser

    parser = IncrementalParser("deep.flow")
    codes = []
    for n in (150, MAX_EXPR_DEPTH + 1, 150):
        text = _program("  return input.a" + ".b" * n)
        result = analyze(text, "deep.flow", parser).result
        codes.append([d.code for d in result.diagnostics])
    assert codes == [[], ["unsupported-construct"], []]


def test_the_check_lowers_only_programs_whose_expressions_nest_deeply(monkeypatch):
    """The compiled-depth phase costs a lowering, so the check runs it only when some expression
    nests more than ``checker._SHALLOW`` levels (fewer cannot compile to 200)."""
    from agentflow.compiler import checker

    calls = []
    real = check_depth.compiled_depth_diagnostics
    monkeypatch.setattr(
        check_depth,
        "compiled_depth_diagnostics",
        lambda result: calls.append(1) or real(result),
    )
    shallow = _program("  return input.a" + ".b" * (checker._SHALLOW - 5))
    assert check_source(shallow, "deep.flow").ok and calls == []
    deeper = _program("  return input.a" + ".b" * (checker._SHALLOW + 5))
    assert check_source(deeper, "deep.flow").ok and calls == [1]
    assert 2 * checker._SHALLOW + 16 < MAX_EXPR_DEPTH
