"""Durations compare and subtract by length at run time (docs/reference/lexical.md "Durations",
docs/decisions.md "Durations by value (durvalues)"): `90s == 1m30s` in a plain run, a durable
run (SQLite) and `flowc test`'s expectations (lists of sleeps too); `-` never goes below `0ms`;
`seconds` and `from_seconds` fail with registered codes; a plan compiled before, which carries
durations as texts, runs as it did."""

from __future__ import annotations

import agentflow
from agentflow import api

FLOW = """\
input { w: duration, ws: duration[], o: duration? }
type R {
  same: bool, other: bool, shorter: bool, at_least: bool, left: duration, none_left: duration,
  list: bool, member: bool, optional: bool, absent: bool, length: number
}
stage s -> R {
  return {
    same: input.w == 1m30s, other: input.w != 90s, shorter: input.w < 5m,
    at_least: input.w >= 2m, left: input.w - 30s, none_left: input.w - 1h,
    list: input.ws == [1h, 90m], member: 90m in input.ws, optional: input.o == 90s,
    absent: input.o == null, length: seconds(input.w) + seconds(500ms)
  }
}
"""

EXPECTED = {
    "same": True,
    "other": False,
    "shorter": True,
    "at_least": False,
    "left": "1m",
    "none_left": "0ms",
    "list": True,
    "member": True,
    "optional": True,
    "absent": False,
    "length": 90.5,
}

INPUT = {"w": "90s", "ws": ["60m", "5400s"], "o": "1m30s"}


def test_a_plain_run_compares_and_subtracts_durations_by_length(tmp_path):
    flow = tmp_path / "d.flow"
    flow.write_text(FLOW)
    result = agentflow.run_sync(flow, INPUT, config=None)
    assert result.status == "ok", result.error
    assert result.output == EXPECTED


async def test_a_durable_run_compares_durations_by_length(tmp_path):
    flow = tmp_path / "d.flow"
    flow.write_text(FLOW)
    result = await agentflow.run(
        str(flow),
        INPUT,
        workspace=str(tmp_path),
        durable=True,
        database=str(tmp_path / "db.sqlite"),
    )
    assert result.status == "ok", result.error
    assert result.output == EXPECTED


def test_a_subtraction_below_zero_is_zero_and_sleeping_it_fails_in_the_flows_terms(tmp_path):
    flow = tmp_path / "left.flow"
    flow.write_text(
        "input { elapsed: duration }\nstage s -> int {\n  sleep 1s - input.elapsed\n  return 1\n}\n"
    )
    result = agentflow.run_sync(flow, {"elapsed": "2s"}, config=None)
    assert result.status == "error"
    assert result.error["code"] == "validation"
    assert result.error["message"] == (
        '`sleep` needs a duration from 1ms to 8760h (365 days), got "0ms"'
    )
    assert agentflow.run_sync(flow, {"elapsed": "999ms"}, config=None).output == 1


def test_from_seconds_and_seconds_fail_with_registered_codes(tmp_path):
    flow = tmp_path / "f.flow"
    flow.write_text(
        "input { n: number, raw: json }\n"
        "stage s -> { back: duration, length: json } {\n"
        "  return { back: from_seconds(input.n), length: seconds(input.raw) }\n}\n"
    )
    result = agentflow.run_sync(flow, {"n": 1.5, "raw": "2m"}, config=None)
    assert result.status == "ok", result.error
    assert result.output == {"back": "1s500ms", "length": 120}
    bad = agentflow.run_sync(flow, {"n": -2, "raw": "2m"}, config=None)
    assert bad.error["code"] == "invalid_argument"
    assert bad.error["message"] == (
        "`from_seconds(input.n)`: a duration cannot be negative, got -2 seconds"
    )
    odd = agentflow.run_sync(flow, {"n": 1, "raw": "soon"}, config=None)
    assert odd.error["code"] == "validation"
    assert odd.error["message"] == (
        '`seconds(input.raw)`: `d` must be a duration (250ms, 90s, 1h30m), got "soon"'
    )


def test_flowc_test_expectations_compare_durations_and_sleeps_by_length(tmp_path):
    (tmp_path / "wait.flow").write_text(
        "input { wait: duration }\n"
        "stage s -> { left: duration, long: bool } {\n"
        "  sleep 1m + 30s\n  sleep input.wait\n  sleep input.wait - 1m\n"
        "  return { left: input.wait - 30s, long: input.wait > 1m }\n}\n"
        'test "by length" {\n  input { wait: 120s }\n'
        "  expect sleeps == [90s, 2m, 1m]\n  expect s.left == 90s\n  expect s.left < 2m\n"
        "  expect s == { left: 90s, long: true }\n"
        "  expect 1m30s in sleeps\n}\n"
        'test "a wrong length still fails" {\n  input { wait: 120s }\n'
        "  expect sleeps == [90s, 2m, 61s]\n}\n"
    )
    report = api.run_tests(tmp_path)
    outcomes = {o.name: o for o in report.outcomes}
    assert outcomes["by length"].passed, outcomes["by length"].failures
    assert not outcomes["a wrong length still fails"].passed


RECORDS = """\
type Job { name: text, wait: duration, waits: duration[], note: text?, inner: { d: duration } }
input { a: Job, b: Job }
stage s -> { literal: bool, paths: bool, differ: bool, fields: bool } {
  return {
    literal: input.a == { name: "x", wait: 1m30s, waits: [1h], inner: { d: 60s } },
    paths: input.a == input.b,
    differ: input.a != input.b,
    fields: { w: input.a.wait } == { w: 90s }
  }
}
test "records compare their durations by length" {
  input {
    a: { name: "x", wait: 90s, waits: [60m], inner: { d: 1m } },
    b: { name: "x", wait: 1m30s, waits: [3600s], note: null, inner: { d: 60000ms } }
  }
  expect output == { literal: true, paths: true, differ: false, fields: true }
  expect input.a == input.b
  expect input.a != { name: "x", wait: 91s, waits: [60m], inner: { d: 1m } }
}
"""


def test_objects_holding_durations_compare_them_by_length(tmp_path):
    """An object literal or a path (`input.a`, a stage's name) is taken apart field by field,
    in a run and in `flowc test`; an absent optional field equals `null`."""
    flow = tmp_path / "r.flow"
    flow.write_text(RECORDS)
    a = {"name": "x", "wait": "90s", "waits": ["60m"], "inner": {"d": "1m"}}
    b = {"name": "x", "wait": "1m30s", "waits": ["3600s"], "note": None, "inner": {"d": "60000ms"}}
    result = agentflow.run_sync(flow, {"a": a, "b": b}, config=None)
    assert result.output == {"literal": True, "paths": True, "differ": False, "fields": True}
    b["name"] = "y"
    assert agentflow.run_sync(flow, {"a": a, "b": b}, config=None).output["paths"] is False
    report = api.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes]


#: a plan an earlier flowc compiled from `input.wait == 1m30s`, `== 90s` and `+ 30s`: durations
#: as texts, compared as texts
OLD_PLAN = """\
version: 1
name: old
input_schema:
  $schema: https://json-schema.org/draft/2020-12/schema
  type: object
  properties:
    wait:
      type: string
      pattern: ^([0-9]+(ms|h|m|s))+$
      x-flow-type: duration
  required:
  - wait
  additionalProperties: false
steps:
- id: E0
  tool_name: value
  input:
    value: '{{ {same: input.wait == "1m30s", text: input.wait == "90s", total: input.wait + "30s"} }}'
  meta:
    source: old.flow:3:3
    stage: s
finish:
  mode: output
  output: '{{ E0 }}'
  meta:
    source: old.flow:4:10
    stage: s
"""


def test_a_plan_compiled_before_runs_as_it_did(tmp_path):
    plan = tmp_path / "old.plan.yaml"
    plan.write_text(OLD_PLAN)
    result = agentflow.run_sync(plan, {"wait": "90s"}, config=None)
    assert result.status == "ok", result.error
    assert result.output == {"same": False, "text": True, "total": "90s30s"}
