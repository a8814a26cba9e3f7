"""`extern tool "catalog-name" as name(…)` (catalog tools whose names are not `.flow`
identifiers, e.g. MCP tools with `-`) and `param?: T` (a parameter that may be left out, but is
never `null`): parsing, checking, lowering to the catalog name and a `result_schema`, the
formatter and the language server's hover."""

from __future__ import annotations

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source
from agentflow.lsp.analysis import Analysis

DECL = (
    'extern tool "everything__get-tiny-image" as everything__get_tiny_image'
    "(size?: int, label: text?) -> { data: text, mimeType: text }\n"
)


def codes(text: str) -> list[str]:
    return [d.code for d in check_source(text, "t.flow").diagnostics]


def test_an_alias_is_called_by_its_flow_name_and_lowered_to_the_catalog_name():
    text = DECL + (
        "stage main {\n"
        "  let a = everything__get_tiny_image(size: 3)\n"
        "  let b = agent(helper) {\n"
        '    task "look"\n'
        "    tools [everything__get_tiny_image]\n"
        "    expect { ok: bool }\n"
        "  }\n"
        "  return { a: a.mimeType, b: b.ok }\n"
        "}\n"
    )
    text = 'use agent "helper" as helper\n' + text
    assert codes(text) == []
    plan = api.compile_source(text, "t.flow").plan
    steps = plan["steps"]
    call = next(s for s in steps if s["tool_name"] == "everything__get-tiny-image")
    assert call["input"] == {"size": 3}
    schema = call["result_schema"]
    assert schema["required"] == ["data", "mimeType"]
    assert "additionalProperties" not in schema  # a server may add fields
    agent = next(s for s in steps if s["tool_name"] == "agent")
    assert agent["input"]["tools"] == ["everything__get-tiny-image"]


def test_an_omittable_parameter_may_be_left_out_but_not_given_null():
    text = DECL + (
        "stage main {\n"
        "  let a = everything__get_tiny_image()\n"
        "  let b = everything__get_tiny_image(label: null)\n"  # `label: text?` takes null
        "  return [a, b]\n"
        "}\n"
    )
    assert codes(text) == []
    bad = DECL + "stage main {\n  return everything__get_tiny_image(size: null)\n}\n"
    diags = check_source(bad, "t.flow").diagnostics
    assert [d.code for d in diags] == ["type-mismatch"]
    assert "may be left out, but not given as `null`" in diags[0].message
    assert diags[0].hint == "leave `size` out"
    maybe = DECL + (
        "stage main {\n  let n: int? = null\n  return everything__get_tiny_image(size: n)\n}\n"
    )
    assert codes(maybe) == ["type-mismatch"]  # an `int?` is not an `int`


def test_a_catalog_name_must_name_a_server_tool():
    text = 'extern tool "tiny-image" as tiny(size?: int) -> json\n'
    diags = check_source(text, "t.flow").diagnostics
    assert [d.code for d in diags] == ["invalid-value"]
    assert diags[0].span.column == 13  # the string
    assert "flowc tools --extern" in diags[0].hint


def test_json_results_and_the_prelude_get_no_result_schema():
    text = (
        'extern tool "srv__x-y" as srv__x_y() -> json\n'
        "stage main {\n"
        '  let t = read_file(path: "a.txt")\n'
        "  return [srv__x_y(), t]\n"
        "}\n"
    )
    plan = api.compile_source(text, "t.flow").plan
    assert all("result_schema" not in s for s in plan["steps"])


def test_the_formatter_keeps_both_forms():
    text = (
        'extern tool   "everything__get-tiny-image"  as  everything__get_tiny_image( size ?: int,'
        " label:text? ) -> json\n"
    )
    assert format_source(text) == (
        'extern tool "everything__get-tiny-image" as everything__get_tiny_image(size?: int, '
        "label: text?) -> json\n"
    )


def test_hover_shows_the_catalog_name_and_omittable_parameters():
    text = DECL + "stage main {\n  return everything__get_tiny_image(size: 3)\n}\n"
    analysis = Analysis(text, check_source(text, "t.flow"))
    tool, _ = analysis.hover(text.index("everything__get_tiny_image(size: 3)") + 2)
    assert (
        '"everything__get-tiny-image" as everything__get_tiny_image(size?: int, label: text?)'
        in (tool)
    )
    param, _ = analysis.hover(text.index("size: 3") + 1)
    assert "size?: int" in param
