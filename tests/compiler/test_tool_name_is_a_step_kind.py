"""An `extern tool` whose catalog name is a plan step's kind (`value`, `map` …) is the checker
error `tool-name-is-a-step-kind`; it was an internal compiler error ("the compiled plan does not
validate") because its call compiled to that step (docs/diagnostics.md)."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.core.vocabulary import CONTROL_STEPS

IDENT = {k for k in CONTROL_STEPS if k.isidentifier()}


@pytest.mark.parametrize("kind", sorted(IDENT))
def test_a_tool_named_as_a_step_kind_is_a_diagnostic_not_an_internal_error(kind):
    src = f"extern tool {kind}(a: int) -> int\nstage s -> int {{ return {kind}(a: 1) }}\n"
    result = check_source(src, "t.flow")
    codes = [d.code for d in result.diagnostics]
    assert "unsupported-construct" not in codes
    if "syntax-error" in codes:  # a keyword of the language cannot be a tool's name at all
        return
    (diag,) = [d for d in result.diagnostics if d.code == "tool-name-is-a-step-kind"]
    assert (diag.span.line, diag.span.column) == (1, 13)
    assert f'"user__{kind}" as {kind}' in (diag.hint or "")


def test_the_catalog_name_with_its_prefix_compiles_under_the_short_name(tmp_path):
    flow = tmp_path / "t.flow"
    flow.write_text(
        'extern tool "user__value" as value(a: int) -> int\nstage s -> int { return value(a: 1) }\n'
    )
    plan = api.compile_flow(flow).plan
    assert [s.get("tool_name") for s in plan["steps"]] == ["user__value"]
