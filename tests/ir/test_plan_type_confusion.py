"""``plan validate`` on a plan where a list, a mapping, a number or null stands where a string
is expected (issue 16: 81 tracebacks, e.g. a list as a condition's ``op`` or as
``agent.kind``): every variant of a plan covering every step kind is either loaded or refused
with problems — never an exception of another kind."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from agentflow.errors import FlowError, PlanLoadError
from agentflow.ir import load_plan_text
from agentflow.ir.resolve import resolve_tools
from agentflow.runtime.tools.builtin import default_catalog

PLAN = """
version: 1
name: every_kind
description: covers the step kinds
deadline: 10m
input_schema: {type: object, properties: {xs: {type: array}, n: {type: integer}}}
steps:
  - id: E0
    tool_name: builtin__read_file
    input: {path: "{{ input.path }}"}
    timeout: 30s
    retry: {attempts: 2, on: [transient], backoff: {initial: 1s, factor: 2, max: 10s}}
  - id: E1
    tool_name: agent
    input:
      prompt: "Summarise {{ E0 }}"
      output_schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
      tools: ["builtin__grep", "builtin__*"]
      agent: {kind: alias, name: reader}
      write: [out]
      max_iterations: 3
  - id: E2
    tool_name: if
    input:
      when: {value: "{{ E1.ok }}", op: "==", to: true}
      then: [{id: E3, tool_name: value, input: {value: 1}}]
      else: [{id: E4, tool_name: fail, input: {message: "no"}}]
  - id: E5
    tool_name: map
    input:
      over: "{{ input.xs }}"
      do: {tool_name: value, input: {value: "{{ item }}"}}
  - id: E6
    tool_name: ask
    input: {question: "Go?", choices: ["yes", "no"], when_unanswered: {default: "no"}}
  - id: E7
    tool_name: verify
    input:
      checks: [{ok: '{{ E6.answer == "yes" }}', message: "not approved"}]
finish: {mode: output, output: "{{ E2 }}"}
"""

REPLACEMENTS = [[], {"a": 1}, 3, None]
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _string_leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _string_leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _string_leaves(v, (*path, i))
    elif isinstance(node, str):
        yield path


def _variants():
    base = yaml.safe_load(PLAN)
    for path in _string_leaves(base):
        for value in REPLACEMENTS:
            data = copy.deepcopy(base)
            parent = data
            for p in path[:-1]:
                parent = parent[p]
            parent[path[-1]] = value
            # libyaml's dumper when there is one: the pure-Python one took half the test's time
            yield path, value, yaml.dump(data, Dumper=_DUMPER)


def test_the_seed_plan_loads():
    load_plan_text(PLAN, "every_kind.yaml")


def test_every_non_string_in_a_string_place_is_a_problem_not_a_traceback():
    catalog = default_catalog()
    names = set(catalog.names())
    crashes = []
    refused = count = 0
    for path, value, text in _variants():
        count += 1
        try:
            plan = load_plan_text(text, "every_kind.yaml")
            resolve_tools(plan, names, set(catalog.configured_prefixes))
        except PlanLoadError as e:
            refused += 1
            assert all(str(p.span).startswith("every_kind.yaml") for p in e.errors)
        except FlowError:
            refused += 1
        except Exception as e:  # noqa: BLE001 - what this test is about
            crashes.append(f"{'.'.join(map(str, path))} = {json.dumps(value)}: {e!r}")
    print(f"{count} variants, {refused} refused, {len(crashes)} tracebacks")
    assert crashes == []


@pytest.mark.parametrize(
    "path, value",
    [(("steps", 2, "input", "when", "op"), ["=="]), (("steps", 1, "input", "agent", "kind"), [])],
)
def test_the_two_reported_crashes_are_load_errors(path, value):
    data = yaml.safe_load(PLAN)
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(yaml.safe_dump(data), "p.yaml")
    assert "p.yaml:" in str(info.value)
