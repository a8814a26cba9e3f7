"""The prelude signatures (stdlib/prelude.flow, docs/spec/LANGUAGE.md §7) and the runtime input
schemas of the builtin tools (runtime/tools/builtin.py, docs/spec/RUNTIME.md §4) describe the same
parameters."""

from __future__ import annotations

import pytest

from agentflow.compiler import types as T
from agentflow.compiler.checker import prelude_tools
from agentflow.runtime.tools.builtin import SCHEMAS, builtin_tools

#: the JSON Schema ``type`` of each prelude parameter type
_JSON_TYPE = {
    "text": "string",
    "path": "string",
    "int": "integer",
    "number": "number",
    "bool": "boolean",
}


def _json_type(t: T.Type) -> str:
    assert isinstance(t, T.Prim), f"prelude parameter of non-primitive type {t}"
    return _JSON_TYPE[t.name]


def test_the_prelude_declares_exactly_the_builtins():
    runtime = {tool.name.removeprefix("builtin__") for tool in builtin_tools()}
    assert set(prelude_tools()) == runtime == set(SCHEMAS)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_prelude_signature_matches_runtime_schema(name: str):
    sig = prelude_tools()[name]
    schema = SCHEMAS[name]
    props = schema["properties"]
    required = set(schema.get("required", []))
    assert set(sig.params) == set(props), f"{name}: parameters differ"
    for param, (typ, optional) in sig.params.items():
        assert optional == (param not in required), f"{name}({param}): optionality differs"
        inner = typ.inner if isinstance(typ, T.OptionalType) else typ
        assert isinstance(typ, T.OptionalType) == optional, f"{name}({param}): `?` vs optional"
        assert _json_type(inner) == props[param]["type"], f"{name}({param}): type differs"


def test_grep_ignore_case_checks():
    from agentflow.compiler.api import check_source

    src = 'stage s -> json {\n  return grep(pattern: "todo", ignore_case: true)\n}\n'
    result = check_source(src, "g.flow")
    assert not result.diagnostics, [d.message for d in result.diagnostics]
