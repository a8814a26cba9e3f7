"""Durations compare by length at any depth the static type tells (docs/reference/lexical.md
"Durations", docs/decisions.md "Durations inside lists, objects and maps (durdeep)"): lists of
objects, maps, optional objects and values of other expressions go through `canonical`, in
the plan and in `flowc test` expectations alike; `count_by`/`group_by` key durations by their
canonical text; `json` stays as text."""

from __future__ import annotations

import agentflow
from agentflow import api
from agentflow.runtime.config import load_config

DEEP = """\
type Job { t: duration, n: int }
input { jobs: Job[], m: map<duration>, j: Job?, ds: duration[], raw: json }
type R {
  lists: bool, maps: bool, optional: bool, member: bool, at: int, shared: number,
  kept: Job[], again: duration[], picked: bool, counted: map<int>, grouped: map<Job[]>,
  raw: bool, nested: bool
}
stage s -> R {
  return {
    lists: input.jobs == [{ t: 1m30s, n: 1 }, { t: 2m, n: 2 }],
    maps: input.m == { a: 1m, b: 90s },
    optional: input.j == { t: 60s, n: 3 },
    member: { t: 120s, n: 2 } in input.jobs,
    at: index_of(input.jobs, { t: 120s, n: 2 }),
    shared: overlap(input.jobs, [{ t: 2m, n: 2 }]),
    kept: unique(input.jobs),
    again: unique(take(input.ds, 3)),
    picked: (if input.jobs.count > 1 then input.jobs[0] else input.jobs[1]) == { t: 1m30s, n: 1 },
    counted: count_by(input.ds),
    grouped: group_by(input.jobs, "t"),
    raw: input.raw == { t: "90s" },
    nested: [input.m] == [{ a: 60s, b: 1m30s }],
  }
}
"""


def test_durations_inside_lists_maps_and_optional_objects_compare_by_length(tmp_path):
    flow = tmp_path / "deep.flow"
    flow.write_text(DEEP)
    given = {
        "jobs": [{"t": "90s", "n": 1}, {"t": "120s", "n": 2}],
        "m": {"a": "60s", "b": "1m30s"},
        "j": {"t": "1m", "n": 3},
        "ds": ["90s", "1m30s", "1m"],
        "raw": {"t": "1m30s"},
    }
    result = agentflow.run_sync(flow, given, config=None)
    assert result.status == "ok", result.error
    assert result.output == {
        "lists": True,
        "maps": True,
        "optional": True,
        "member": True,
        "at": 1,
        "shared": 1 / 2,
        "kept": [{"t": "90s", "n": 1}, {"t": "120s", "n": 2}],
        "again": ["90s", "1m"],  # the first of each length, as written
        "picked": True,
        "counted": {"1m30s": 2, "1m": 1},  # keys: the canonical texts
        # the key field reads canonically in the members, the rest as written
        "grouped": {"1m30s": [{"t": "1m30s", "n": 1}], "2m": [{"t": "2m", "n": 2}]},
        "raw": False,  # `json` has no types: its texts compare as texts
        "nested": True,
    }
    absent = agentflow.run_sync(flow, {**given, "j": None}, config=None)
    assert absent.output["optional"] is False


TESTS = """\
test "expectations compare as the plan does" {
  input {
    jobs: [{ t: 90s, n: 1 }, { t: 2m, n: 2 }], m: { a: 60s, b: 1m30s }, j: { t: 1m, n: 3 },
    ds: [90s, 1m30s, 1m], raw: { t: "90s" }
  }
  expect input.jobs == [{ t: 1m30s, n: 1 }, { t: 120s, n: 2 }]
  expect input.m == { a: 1m, b: 90s }
  expect { t: 120s, n: 2 } in input.jobs
  expect count_by(input.ds) == { "1m30s": 2, "1m": 1 }
  expect output.lists and output.maps and output.optional and output.nested
}
"""


def test_flowc_test_expectations_compare_nested_durations_as_the_plan_does(tmp_path):
    (tmp_path / "deep.flow").write_text(DEEP + TESTS)
    outcome = api.run_tests(tmp_path).outcomes[0]
    assert outcome.passed, outcome.failures


def test_unique_of_a_tool_result_compares_by_length_and_calls_the_tool_once(tmp_path):
    (tmp_path / "tools.py").write_text(
        "CALLS = []\n\ndef ds() -> list:\n    CALLS.append(1)\n"
        "    return ['90s', '1m30s', '1m', '60s']\n"
    )
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (tmp_path / "u.flow").write_text(
        "extern tool user__ds() -> duration[]\n"
        "stage s -> duration[] {\n  return unique(user__ds())\n}\n"
    )
    plan = api.compile_source((tmp_path / "u.flow").read_text(), str(tmp_path / "u.flow")).plan
    assert [s["tool_name"] for s in plan["steps"]] == ["user__ds"]  # one step, read twice
    config = load_config(tmp_path / "flow.toml", env={})
    result = agentflow.run_sync(str(tmp_path / "u.flow"), {}, config=config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output == ["90s", "1m"]
