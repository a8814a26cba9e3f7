"""Canonical YAML: determinism, round trip, `|` blocks, fmt (docs/spec/PLAN_IR.md §1,
docs/spec/LANGUAGE.md §10)."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from support.paths import SPEC_EXAMPLES

from agentflow.ir import dump_plan, fmt_plan_text, load_plan, load_plan_text, plan_to_data

EXAMPLE = str(SPEC_EXAMPLES / "issue-review.plan.yaml")


def test_dump_is_deterministic_and_round_trips():
    plan = load_plan(EXAMPLE)
    text = dump_plan(plan)
    assert text == dump_plan(load_plan(EXAMPLE))
    again = load_plan_text(text, "again.yaml")
    assert dump_plan(again) == text
    assert plan_to_data(again) == plan_to_data(plan)
    # multi-line prompt as a literal block
    assert "prompt: |\n      Review these issues" in text
    assert "&" not in text and "*id" not in text


def test_canonical_key_order_and_defaults_dropped():
    data = {
        "plans": {},
        "steps": [
            {
                "meta": {"source": "a.flow:1:1"},
                "select": "{{ result.output }}",
                "input": {"z": 1, "a": 2},
                "tool_name": "x__y",
                "id": "E0",
            }
        ],
        "name": "t",
        "version": 1,
    }
    text = dump_plan(data)
    assert text == (
        "version: 1\n"
        "name: t\n"
        "steps:\n"
        "- id: E0\n"
        "  tool_name: x__y\n"
        "  input:\n"
        "    z: 1\n"
        "    a: 2\n"
        "  select: '{{ result.output }}'\n"
        "  meta:\n"
        "    source: a.flow:1:1\n"
        "plans: {}\n"
    )
    plan = load_plan_text(text, "t.yaml")
    data2 = plan_to_data(plan)
    assert "finish" not in data2 and "plans" not in data2 and "timeout" not in data2["steps"][0]


def test_unicode_and_tricky_strings_survive():
    shared = {"id": "E0", "tool_name": "value"}
    value = {
        "t": "héllo — ✓",
        "yes": "yes",
        "on": "on",
        "n": "12",
        "nl": "a\nb\n",
        "e": "",
        "o": "0o17",
        "f": "1e5",
        "x": "0x1F",
        "t2": "TRUE",
    }
    data = {"version": 1, "name": "t", "steps": [{**shared, "input": {"value": value}}]}
    text = dump_plan(data)
    assert "héllo — ✓" in text
    assert yaml.safe_load(text)["steps"][0]["input"]["value"] == value
    plan = load_plan_text(text, "t.yaml")
    assert plan.steps[0].input["value"] == value


def test_characters_beyond_the_basic_plane_are_written_as_they_are():
    # libyaml's emitter (used for plain ASCII plans) would escape it as \U0001F600
    value = {"emoji": "done 😀", "ascii": "plain"}
    data = {"version": 1, "name": "t", "steps": [{"id": "E0", "tool_name": "value"}]}
    data["steps"][0]["input"] = {"value": value}
    text = dump_plan(data)
    assert "emoji: done 😀\n" in text
    assert "\\U" not in text
    assert load_plan_text(text, "t.yaml").steps[0].input["value"] == value


def test_a_plan_ending_in_a_kept_trailing_newline_has_no_document_end_marker():
    data = {"version": 1, "name": "t", "steps": [{"id": "E0", "tool_name": "value"}]}
    data["steps"][0]["input"] = {"value": "kept\n\n"}
    text = dump_plan(data)
    assert text.endswith("    value: |+\n      kept\n\n")
    assert load_plan_text(text, "t.yaml").steps[0].input["value"] == "kept\n\n"


@pytest.mark.parametrize("text", ["a\x85b", "\x85", "x\n\x85y\n", "a\u2028b", "a\r\nb\n"])
def test_line_separators_other_than_newline_survive_a_dump(text):
    data = {"version": 1, "name": "t", "steps": [{"id": "E0", "tool_name": "value"}]}
    data["steps"][0]["input"] = {"value": text}
    plan = load_plan_text(dump_plan(data), "t.yaml")
    assert plan.steps[0].input["value"] == text


def test_shared_objects_are_not_aliased():
    shared = {"type": "object"}
    steps = [{"id": f"E{i}", "tool_name": "value", "input": {"value": shared}} for i in range(2)]
    text = dump_plan({"version": 1, "name": "t", "steps": steps})
    assert "&" not in text and "*" not in text


def test_fmt_rewrites_camel_case():
    text = textwrap.dedent(
        """\
        name: t
        version: 1
        steps:
          - toolName: agent
            id: E0
            input:
              outputSchema: { type: object, properties: { maxIterations: { type: integer } } }
              maxIterations: 3
              systemPrompt: "be\\nbrief"
              prompt: go
        """
    )
    out = fmt_plan_text(text, "t.yaml")
    assert "toolName" not in out and "systemPrompt" not in out and "outputSchema" not in out
    assert "max_iterations: 3" in out
    # schema property names are the user's: never rewritten
    assert "maxIterations:\n" in out
    assert "system_prompt: |-\n" in out
    assert fmt_plan_text(out, "t.yaml") == out
    plan = load_plan_text(out, "t.yaml")
    assert plan.steps[0].input["max_iterations"] == 3
