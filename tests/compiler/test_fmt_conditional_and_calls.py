"""`flowc fmt` on library calls and `if … then … else` (docs/reference/functions.md,
docs/reference/expressions.md): canonical spacing, the arms of a conditional written over
several lines indented as continuation lines, idempotent, and the compiled plan unchanged."""

from __future__ import annotations

from agentflow import api
from agentflow.compiler.fmt import format_source

MESSY = """\
input { xs: int[], s: text, n: number }
stage s -> json {
  let a = if   input.n>2 then   "big"   else "small"
  let b = join( input.xs ,", " )
  let c = round(input.n,2)
  let d = if input.n > 1 then
  sum(input.xs)
  else
  0
  return {a: a, b: b, c: c, d: d}
}
"""

CANONICAL = """\
input { xs: int[], s: text, n: number }
stage s -> json {
  let a = if input.n > 2 then "big" else "small"
  let b = join(input.xs, ", ")
  let c = round(input.n, 2)
  let d = if input.n > 1 then
    sum(input.xs)
    else
    0
  return { a: a, b: b, c: c, d: d }
}
"""


def test_calls_and_conditionals_get_the_canonical_layout():
    assert format_source(MESSY, "f.flow") == CANONICAL
    assert format_source(CANONICAL, "f.flow") == CANONICAL


def test_formatting_does_not_change_the_plan():
    before = api.compile_source(MESSY, "f.flow").plan
    after = api.compile_source(format_source(MESSY, "f.flow"), "f.flow").plan
    assert _layout_free(before) == _layout_free(after)


def _layout_free(value):
    """A plan without what layout may change: positions (``source``, ``text_source``) and the
    expressions kept as written (``meta.text``, ``meta.stages[].text``)."""
    if isinstance(value, dict):
        return {
            k: _layout_free(v)
            for k, v in value.items()
            if k not in ("source", "text_source")
            and not (k == "text" and ("text_source" in value or "source" in value))
        }
    if isinstance(value, list):
        return [_layout_free(v) for v in value]
    return value
