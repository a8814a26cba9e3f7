"""An expression whose compiled template is deeper than the plan limit (``MAX_EXPR_DEPTH``
levels) — a long member chain on `json`, a parenthesised operator chain inside another, a `let`
written out in full where it is read — is the program's limit: `compile` reports an
``unsupported-construct`` diagnostic at the step, never an internal compiler error (found by the
program fuzzer, ``bench/fuzz.py programs``)."""

from __future__ import annotations

import pytest

from agentflow.api import CompileError, compile_source
from agentflow.core.vocabulary import MAX_EXPR_DEPTH

_SUM = " + ".join(["1"] * 150)

BODIES = {
    "member chain": "  return input.a" + ".b" * (MAX_EXPR_DEPTH + 1),
    "operator chain in parentheses": f"  return ({_SUM}) * 9 + {_SUM}",
    "let read in a member chain": "  let v = input.a" + ".b" * 150 + "\n  return v" + ".c" * 150,
}


@pytest.mark.parametrize("body", BODIES.values(), ids=list(BODIES))
def test_too_deep_a_compiled_expression_is_a_user_diagnostic(body):
    src = f"input {{ a: json, n: int? }}\nstage s -> json {{\n{body}\n}}\n"
    with pytest.raises(CompileError) as exc:
        compile_source(src, "deep.flow")
    (diag,) = exc.value.diagnostics
    assert diag.code == "unsupported-construct"
    assert diag.message.startswith("expression nested too deeply once compiled (more than 200")
    assert "internal" not in diag.message
    assert diag.span.file == "deep.flow" and diag.span.line >= 2


def test_a_chain_at_the_limit_compiles():
    src = "input { a: json }\nstage s -> json {\n  return input.a" + ".b" * 190 + "\n}\n"
    assert compile_source(src, "deep.flow").plan["steps"]
