"""A `filter` whose condition narrows its variable (docs/reference/types.md "Narrowing") is a
list of the narrowed type: `filter xs as x where x != null` of an `int?[]` is an `int[]` (so
`sum`, `sort`, `max` take it), `filter pets as p where p.kind == "cat"` of a `Pet[]` a `Cat[]`.
These were refused (`expected Cat[], found Pet[]`). A condition that narrows nothing, or the
other way, keeps the list's type."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source

HEAD = """type Cat = { kind: "cat", lives: int }
type Dog = { kind: "dog", name: text }
type Pet = Cat | Dog
input { pets: Pet[], os: int?[] }
"""

KEPT = {
    "not null": "stage s -> int[] { filter input.os as x where x != null }\n",
    "not null and more": "stage s -> int[] { filter input.os as x where x != null and x > 1 }\n",
    "a sum of the non-null": "stage s -> int { sum(filter input.os as x where x != null) }\n",
    "a member": 'stage s -> Cat[] { filter input.pets as p where p.kind == "cat" }\n',
    "a member's field": (
        'stage s -> int[] { map (filter input.pets as p where p.kind == "cat") as c { c.lives } }\n'
    ),
}


@pytest.mark.parametrize("stage", KEPT.values(), ids=KEPT.keys())
def test_the_narrowed_filter_checks(stage):
    assert check_source(HEAD + stage, "f.flow").diagnostics == []


NOT_KEPT = {
    "the other member": 'stage s -> Dog[] { filter input.pets as p where p.kind == "cat" }\n',
    "the nulls": "stage s -> int[] { filter input.os as x where x == null }\n",
    "a condition on something else": "stage s -> int[] { filter input.os as x where true }\n",
}


@pytest.mark.parametrize("stage", NOT_KEPT.values(), ids=NOT_KEPT.keys())
def test_a_filter_that_does_not_narrow_keeps_its_type(stage):
    (d,) = check_source(HEAD + stage, "f.flow").diagnostics
    assert d.code == "type-mismatch"


def test_the_narrowed_filter_runs(tmp_path):
    src = (
        HEAD
        + 'stage s -> { cats: Cat[], total: int } {\n  let cats = filter input.pets as p where p.kind == "cat"\n  return { cats: cats, total: sum(filter input.os as x where x != null) }\n}\n'
    )
    plan = api.plan_from_data(api.compile_source(src, "f.flow").plan, "f.flow")
    data = {"pets": [{"kind": "cat", "lives": 9}, {"kind": "dog", "name": "r"}], "os": [1, None, 3]}
    result = api.run_sync(plan, data, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {"cats": [{"kind": "cat", "lives": 9}], "total": 4}
