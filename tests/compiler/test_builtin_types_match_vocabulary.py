"""The built-in type names are defined once (``core.vocabulary.BUILTIN_TYPES``); the checker's
table of primitive types holds exactly those (plus ``null``, the literal type, which is a reserved
word rather than a name), and none of them can be declared again."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.types import PRIMS
from agentflow.core.vocabulary import BUILTIN_TYPES, PRIMITIVE_TYPES, RESERVED_WORDS


def test_the_checker_knows_exactly_the_vocabulary_primitive_types():
    assert set(PRIMS) - {"null"} == set(PRIMITIVE_TYPES)
    assert "null" in RESERVED_WORDS


@pytest.mark.parametrize("name", BUILTIN_TYPES)
def test_a_builtin_type_name_cannot_be_declared(name):
    result = check_source(f"type {name} {{ a: int }}\n", "t.flow")
    assert [d.code for d in result.diagnostics] == ["duplicate-definition"]
    assert "is a built-in type" in result.diagnostics[0].message
