"""A user function cannot take a tool-shaped name (``server__tool``): with named arguments
the call would reach the catalog tool (docs/reference/programs.md "User functions", docs/
decisions.md "Language edges (langfix13)")."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.errors import CompileError

TOOL_SHAPED = (
    "fn user__size(x: int) -> int = x * 100\n"
    "input { t: text }\n"
    'stage a -> int { return user__size(path: "abc") + user__size(1) }\n'
)


def test_a_function_with_a_tool_shaped_name_is_a_duplicate_definition(tmp_path):
    path = tmp_path / "f.flow"
    path.write_text(TOOL_SHAPED)
    [d] = [d for d in api.check(str(path)).diagnostics if d.severity == "error"]
    assert (d.code, d.span.line, d.span.column) == ("duplicate-definition", 1, 4)
    assert d.message == (
        "`user__size` has the shape of a tool's name (`server__tool`): a user function cannot "
        "take it"
    )
    assert [n.message for n in d.notes] == [
        "with named arguments `user__size(…)` calls the tool `size` of the server `user`"
    ]
    assert d.hint == "name it without `__` (`user_size`)"


def test_a_flow_with_a_tool_shaped_function_does_not_compile(tmp_path):
    path = tmp_path / "f.flow"
    path.write_text(TOOL_SHAPED)
    with pytest.raises(CompileError, match="shape of a tool's name"):
        api.compile_flow(str(path))


def test_a_name_with_a_double_underscore_anywhere_is_refused_with_one_underscore_hinted(
    tmp_path,
):
    path = tmp_path / "f.flow"
    path.write_text("fn a__b__c(x: int) -> int = x\nstage s -> int { return a__b__c(1) }\n")
    [d] = [d for d in api.check(str(path)).diagnostics if d.severity == "error"]
    assert d.code == "duplicate-definition"
    assert d.hint == "name it without `__` (`a_b_c`)"


def test_a_refused_tool_shaped_function_called_with_named_arguments_is_one_diagnostic(tmp_path):
    # the call is the tool's by its form, but the mistake is the function's name: told once,
    # with no "untyped tool" warning beside it
    path = tmp_path / "f.flow"
    path.write_text(TOOL_SHAPED)
    diags = api.check(str(path)).diagnostics
    assert [d.code for d in diags] == ["duplicate-definition"]


def test_an_undeclared_tool_shaped_call_still_warns_that_it_is_untyped(tmp_path):
    path = tmp_path / "f.flow"
    path.write_text('stage a -> json { return user__size(path: "abc") }\n')
    assert [d.code for d in api.check(str(path)).diagnostics] == ["untyped-tool"]
