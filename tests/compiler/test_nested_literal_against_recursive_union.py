"""A literal nested N levels deep against a recursive union (``type Expr = Lit | Add | Mul``
with ``Add { l: Expr, r: Expr }``) was checked in 2^N steps: every union member tried at a level
re-checked the whole subtree (the member's tag failed too, but every field was still compared),
so a 18-deep literal took over a minute to check. ``assignable`` now compares the cheap fields
(the tag) first and remembers what it decided for each (type, type) pair within one call. The
tests count the assignability steps instead of timing them."""

from __future__ import annotations

import pytest

from agentflow.compiler import types
from agentflow.compiler.api import check_source

_TAGGED = """\
type Lit { kind: "lit", v: int }
type Add { kind: "add", l: Expr, r: Expr }
type Mul { kind: "mul", l: Expr, r: Expr }
type Expr = Lit | Add | Mul
"""

# no tag: the members differ only in a nested field compared after the recursive one
_UNTAGGED = """\
type Leaf { v: int }
type TA { a: int }
type TB { b: int }
type A { l: Node, t: TA }
type B { l: Node, t: TB }
type Node = Leaf | A | B
"""


def _mul(depth: int, leaf: str = "1") -> str:
    if depth == 0:
        return f'{{ kind: "lit", v: {leaf} }}'
    return f'{{ kind: "mul", l: {_mul(depth - 1, leaf)}, r: {{ kind: "lit", v: 2 }} }}'


def _b(depth: int) -> str:
    if depth == 0:
        return "{ v: 1 }"
    return f"{{ l: {_b(depth - 1)}, t: {{ b: 2 }} }}"


def _let(types_: str, literal: str, name: str) -> str:
    return f"{types_}stage s -> {name} {{\n  let x: {name} = {literal}\n  return x\n}}\n"


def _return(types_: str, literal: str, name: str) -> str:
    return f"{types_}stage s -> {name} {{\n  return {literal}\n}}\n"


def _steps(monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    """Check ``text`` (it must check clean) and count the assignability steps it took."""
    calls = [0]
    original = types._assignable

    def counting(*args: object) -> bool:
        calls[0] += 1
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(types, "_assignable", counting)
    result = check_source(text, "deep.flow")
    monkeypatch.setattr(types, "_assignable", original)
    assert result.ok, [d.message for d in result.diagnostics]
    return calls[0]


@pytest.mark.parametrize("form", [_let, _return])
def test_a_deep_tagged_literal_checks_in_steps_linear_in_its_depth(monkeypatch, form):
    at_20 = _steps(monkeypatch, form(_TAGGED, _mul(20), "Expr"))
    at_40 = _steps(monkeypatch, form(_TAGGED, _mul(40), "Expr"))
    # 2^20 and 2^40 before; linear-ish: twice the depth, about twice the steps (the per-level
    # checks of the object literals add a quadratic term small at these depths)
    assert at_40 < 3 * at_20, (at_20, at_40)
    assert at_40 < 200 * 40


def test_a_deep_untagged_literal_checks_in_steps_linear_in_its_depth(monkeypatch):
    at_20 = _steps(monkeypatch, _let(_UNTAGGED, _b(20), "Node"))
    at_40 = _steps(monkeypatch, _let(_UNTAGGED, _b(40), "Node"))
    assert at_40 < 3 * at_20, (at_20, at_40)
    assert at_40 < 200 * 40


def test_a_mistake_at_the_bottom_of_a_deep_literal_is_reported_once_as_before():
    text = _let(_TAGGED, _mul(30, leaf='"x"'), "Expr")
    diags = check_source(text, "deep.flow").diagnostics
    assert [(d.code, d.message) for d in diags] == [
        (
            "type-mismatch",
            "as `Lit` (the member of `Expr` its `kind` picks), expected `int`, found `text`",
        )
    ]
    assert diags[0].span.line == 6


def test_recursive_named_types_stay_assignable_structurally():
    env = types.TypeEnv()
    env.objects["X"] = types.ObjectType(
        {"n": types.Field(types.OptionalType(types.NamedRef("X")), True)}, name="X"
    )
    env.objects["Y"] = types.ObjectType(
        {"n": types.Field(types.OptionalType(types.NamedRef("Y")), True)}, name="Y"
    )
    env.objects["Z"] = types.ObjectType(
        {
            "n": types.Field(types.OptionalType(types.NamedRef("Z")), True),
            "z": types.Field(types.INT),
        },
        name="Z",
    )
    x, y, z = types.NamedRef("X"), types.NamedRef("Y"), types.NamedRef("Z")
    assert types.assignable(x, y, env) and types.assignable(y, x, env)
    assert not types.assignable(x, z, env)
    assert not types.assignable(z, x, env)  # `z` is no field of `X`
    union = types.UnionType((z, y))
    assert types.assignable(x, union, env)
    assert types.assignable(types.ListType(x), types.ListType(union), env)
