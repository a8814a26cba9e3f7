"""`"${x}"` is text wherever it is written (docs/spec/LANGUAGE.md §2): as a tool argument it used
to lower to the whole-value template `{{ x }}`, and the tool received `x`'s raw value (a number,
an array)."""

from __future__ import annotations

from agentflow import api
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.tools.catalog import Catalog

SOURCE = """\
input { xs: int[], n: int, t: text, o: { a: int }? }
extern tool user__echo(t: text) -> text
stage s -> text[] {
  return [
    user__echo(t: "${input.xs}"),
    user__echo(t: "${input.n}"),
    user__echo(t: "${input.t}"),
    user__echo(t: "${input.o}"),
    user__echo(t: "${input.n}${input.t}"),
  ]
}
"""


def test_an_interpolation_alone_is_still_text():
    plan = api.compile_source(SOURCE, "s.flow").plan
    args = [s["input"]["t"] for s in plan["steps"][:5]]
    assert args == [
        '{{ "${input.xs}" }}',
        '{{ "${input.n}" }}',
        "{{ input.t }}",  # text already: the plain template
        '{{ "${(input.o ?? null)}" }}',  # an optional field reads as null when absent
        "{{ input.n }}{{ input.t }}",
    ]
    seen: list = []
    catalog = Catalog()
    catalog.register_function("user__echo", lambda t: seen.append(t) or t)
    run = api.run_sync(
        load_plan_data(plan, "s.plan.yaml"),
        {"xs": [1, 2], "n": 3, "t": "x"},
        catalog=catalog,
        shape_cache=False,
    )
    assert run.status == "ok", run.error
    assert seen == ["[1,2]", "3", "x", "null", "3x"]
    assert run.output == seen
