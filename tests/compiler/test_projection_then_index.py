"""An index or field after a parenthesised projection applies to the projected list, as written:
`(xs[*].id)[0]` is the first id (null for an empty list), not `xs[*].id[0]` (the first element of
each id). The template printer dropped those parentheses, and the run gave `[]` for
`((input.items)[*].id)[0] ?? 0` with no items."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.ir.loader import load_plan_data

SOURCE = """\
type Item { id: int, tags: text[] }
input { items: Item[] }
stage s -> { first: int, tag: text[], all: int[], n: int } {
  return {
    first: (input.items[*].id)[0] ?? 0,
    tag: (input.items[*].tags)[0] ?? [],
    all: input.items[*].id,
    n: (input.items[*].id).count,
  }
}
"""


@pytest.mark.parametrize(
    "items, expected",
    [
        ([], {"first": 0, "tag": [], "all": [], "n": 0}),
        (
            [{"id": 7, "tags": ["a"]}, {"id": 8, "tags": ["b", "c"]}],
            {"first": 7, "tag": ["a"], "all": [7, 8], "n": 2},
        ),
    ],
)
def test_an_index_after_a_projection_reads_the_projected_list(items, expected):
    plan = api.compile_source(SOURCE, "s.flow").plan
    run = api.run_sync(load_plan_data(plan, "s.plan.yaml"), {"items": items}, shape_cache=False)
    assert run.status == "ok", run.error
    assert run.output == expected
