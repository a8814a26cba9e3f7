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
    before = api.compile_source(MESSY, "f.flow").to_yaml()
    after = api.compile_source(format_source(MESSY, "f.flow"), "f.flow").to_yaml()
    strip = lambda y: "\n".join(x for x in y.splitlines() if "source:" not in x)  # noqa: E731
    assert strip(before) == strip(after)
