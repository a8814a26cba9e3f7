"""A map that tolerates failed items (``on_item_error: { tolerate: N | "P%" }``): per-item outcomes in
input order, and over the threshold an error naming how many items failed and which."""

from __future__ import annotations

import pytest

from agentflow.errors import PlanLoadError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog

PLAN = """
version: 1
name: t
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{{{ input.items }}}}"
      concurrency: {conc}
      on_item_error: {mode}
      do:
        tool_name: user__work
        input: {{ x: "{{{{ item }}}}" }}
        meta: {{ source: "t.flow:4:9" }}
"""

FAILING = {3, 7}


def work(x: int) -> int:
    if x in FAILING:
        raise RuntimeError(f"item {x} is broken")
    return x * 10


def _catalog() -> Catalog:
    cat = Catalog()
    cat.register_function("user__work", work)
    return cat


async def _run(mode: str, conc: int = 1, n: int = 10):
    plan = load_plan_text(PLAN.format(mode=mode, conc=conc), "t.plan.yaml")
    events: list = []
    res = await run_plan(
        plan, {"items": list(range(n))}, catalog=_catalog(), sinks=[CallbackSink(events.append)]
    )
    return res, events


@pytest.mark.parametrize("conc", [1, 4])
async def test_two_failures_within_a_tolerance_of_three_yield_eight_values_and_two_errors(conc):
    res, events = await _run("{ tolerate: 3 }", conc)
    assert res.status == "ok", res.error
    out = res.output
    assert len(out) == 10
    assert [o["ok"] for o in out] == [i not in FAILING for i in range(10)]
    assert [o["value"] for o in out if o["ok"]] == [0, 10, 20, 40, 50, 60, 80, 90]
    errors = [o["error"] for o in out if not o["ok"]]
    assert [e["step"] for e in errors] == ["E0/do.3", "E0/do.7"]
    assert all(e["code"] == "tool_error" for e in errors)
    assert "item 3 is broken" in errors[0]["message"]
    assert errors[0]["source"] == "t.flow:4:9"
    assert set(out[3]) == {"ok", "error"}  # no `value` on a failed item
    warned = [e for e in events if e.kind == "warning"]
    assert len(warned) == 2 and "tolerated" in warned[0].data["message"]


async def test_over_the_tolerance_the_map_fails_naming_every_failure():
    res, _ = await _run("{ tolerate: 1 }")
    assert res.status == "error"
    err = res.error
    assert err["code"] == "tool_error" and err["step_path"] == "E0"
    msg = err["message"]
    assert msg.startswith("2 of 10 items failed, more than the 1 tolerated")
    assert "item 3: tool_error at t.flow:4:9: " in msg and "item 3 is broken" in msg
    assert "item 7: tool_error at t.flow:4:9: " in msg and "item 7 is broken" in msg


async def test_a_percentage_tolerates_that_share_of_the_items_rounded_down():
    res, _ = await _run('{ tolerate: "20%" }')  # 2 of 10
    assert res.status == "ok", res.error
    res, _ = await _run('{ tolerate: "19%" }')  # 1 of 10
    assert res.status == "error"
    assert "more than the 19% (1 of 10) tolerated" in res.error["message"]


async def test_a_tolerance_of_zero_still_yields_outcomes_when_nothing_fails():
    res, _ = await _run("{ tolerate: 0 }", n=3)
    assert res.status == "ok"
    assert res.output == [{"ok": True, "value": v} for v in (0, 10, 20)]


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("{ tolerate: -1 }", "`tolerate` must be a count of items (0 or more)"),
        ('{ tolerate: "120%" }', 'a percentage from "0%" to "100%", not \'120%\''),
        ("{ tolerate: lots }", "not 'lots'"),
        ("{ tolerate: 2, limit: 3 }", "`on_item_error` takes only `tolerate`, not `limit`"),
        ("sometimes", "`on_item_error` must be `fail`, `skip` or `{ tolerate: N }`"),
    ],
)
def test_a_malformed_tolerance_is_a_load_error_at_its_line(mode, problem):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(PLAN.format(mode=mode, conc=1), "t.plan.yaml")
    text = str(info.value)
    assert problem in text
    assert "t.plan.yaml:10:" in text
