"""Acceptance (issue 18): a `.flow` map that tolerates failed items, compiled and run end to end —
10 items, 2 failing: tolerating 3 finishes ok with 8 values and 2 typed errors in input order;
tolerating 1 fails naming both failures with their `.flow` source."""

from __future__ import annotations

from agentflow.api import compile_source
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog

SOURCE = """\
input { items: int[] }
extern tool user__work(x: int) -> int
stage scored {
  let outcomes = parallel map input.items as x limit 4 tolerate {tolerance} {
    user__work(x: x)
  }
  let codes = map outcomes as o { o.error.code ?? "none" }
  return { outcomes: outcomes, kept: outcomes.values, errors: outcomes.errors, codes: codes }
}
"""

BROKEN = {3, 7}


def user__work(x: int) -> int:
    if x in BROKEN:
        raise RuntimeError(f"cannot work on {x}")
    return x * 10


async def _run(tolerance: str):
    compiled = compile_source(SOURCE.replace("{tolerance}", tolerance), "scores.flow")
    plan = load_plan_data(compiled.plan, "scores.flow")
    catalog = Catalog()
    catalog.register_function("user__work", user__work)
    return await run_plan(plan, {"items": list(range(10))}, catalog=catalog)


async def test_two_failed_items_of_ten_within_a_tolerance_of_three_finish_ok():
    res = await _run("3")
    assert res.status == "ok", res.error
    out = res.output
    assert out["kept"] == [0, 10, 20, 40, 50, 60, 80, 90]
    assert [o["ok"] for o in out["outcomes"]] == [i not in BROKEN for i in range(10)]
    assert [e["step"] for e in out["errors"]] == ["E0/do.3", "E0/do.7"]
    assert [e["code"] for e in out["errors"]] == ["tool_error", "tool_error"]
    assert [e["source"] for e in out["errors"]] == ["scores.flow:5:5", "scores.flow:5:5"]
    assert "cannot work on 3" in out["errors"][0]["message"]
    assert out["codes"] == ["tool_error" if i in BROKEN else "none" for i in range(10)]


async def test_a_tolerance_of_one_fails_naming_both_failures():
    res = await _run("1")
    assert res.status == "error"
    msg = res.error["message"]
    assert msg.startswith("2 of 10 items failed, more than the 1 tolerated")
    assert "item 3: tool_error at scores.flow:5:5" in msg and "cannot work on 3" in msg
    assert "item 7: tool_error at scores.flow:5:5" in msg and "cannot work on 7" in msg
    assert res.error["source"] == "scores.flow:4:27"


async def test_a_percentage_tolerance_compiles_to_the_plan_and_runs():
    assert (await _run("20%")).status == "ok"
    assert (await _run("10%")).status == "error"


async def test_an_outcome_error_names_its_place_as_a_run_error_does():
    res = await _run("3")
    assert res.status == "ok", res.error
    errors = res.output["errors"]
    assert errors[0]["step"] == "E0/do.3"
    where = errors[0]["where"]
    assert {k: where[k] for k in ("file", "line", "col", "stage", "item")} == {
        "file": "scores.flow",
        "line": 5,
        "col": 5,
        "stage": "scored",
        "item": 3,
    }
    assert where["label"].startswith("scored › item 3")
    assert errors[1]["where"]["item"] == 7
    # the place of a failure that ends the run has the same fields
    failed = await _run("1")
    assert failed.error["stage"] == "scored"


async def test_a_failure_place_is_readable_in_the_flow():
    source = SOURCE.replace(
        'let codes = map outcomes as o { o.error.code ?? "none" }',
        'let codes = map outcomes.errors as e { "${e.where.stage}:${e.where.line ?? 0}:${e.where.item ?? -1}" }',
    )
    compiled = compile_source(source.replace("{tolerance}", "3"), "scores.flow")
    catalog = Catalog()
    catalog.register_function("user__work", user__work)
    plan = load_plan_data(compiled.plan, "scores.flow")
    res = await run_plan(plan, {"items": list(range(10))}, catalog=catalog)
    assert res.status == "ok", res.error
    assert res.output["codes"] == ["scored:5:3", "scored:5:7"]
