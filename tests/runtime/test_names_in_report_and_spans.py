"""The run report and the OpenTelemetry spans show each step by its label in the `.flow`'s
terms (``implement › item 1 › agent(dev.frontend)``) besides its step path."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.paths import EXAMPLES

from agentflow import api
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings


def _run_bug_triage(**kw):
    result = api.run_sync(
        EXAMPLES / "bug-triage.flow",
        json.loads((EXAMPLES / "bug-report.json").read_text()),
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
        shape_cache=False,
        **kw,
    )
    assert result.ok, result.error
    return result


def test_report_names_steps_by_label_over_their_path(tmp_path):
    trace = tmp_path / "trace.jsonl"
    _run_bug_triage(trace=trace)
    html = api.report(trace)
    table = html[html.index('id="steps-table"') :]
    row = table[table.index('data-path="E3/do.1"') :]
    row = row[: row.index("</tr>")]
    assert "implement › item 1 › agent(dev.frontend)" in row and "<code>E3/do.1</code>" in row
    timeline = html[html.index('id="timeline"') :]
    assert "reproduce › result = agent(investigator)" in timeline


def test_step_spans_carry_the_label_and_the_item():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _run_bug_triage(sinks=[OtelSink(TelemetrySettings(), tracer_provider=provider)])
    steps = {
        s.attributes["agentflow.step.path"]: s.attributes
        for s in exporter.get_finished_spans()
        if "agentflow.step.path" in (s.attributes or {})
    }
    assert steps["E0"]["agentflow.step.label"] == "reproduce › result = agent(investigator)"
    assert steps["E3/do.1"]["agentflow.step.label"] == "implement › item 1 › agent(dev.frontend)"
    assert steps["E3/do.1"]["agentflow.item"] == 1
    assert "agentflow.item" not in steps["E0"]


NAMED = """\
flow named
use agent "helper" as helper
input { dir: path }
stage look -> json {
  let files = list_dir(path: input.dir)
  let n = map [1, 2] as x { return agent(helper) { task "hi ${x}" tools none expect text } }
  let a = agent(helper) { task "hi" tools none expect text }
  return { files: files, n: n, a: a }
}
"""


def test_span_names_are_the_flows_names_in_the_genai_form(tmp_path):
    """A step span is named as the GenAI conventions name operations — the operation, then
    what it works on — in the `.flow`'s words: `invoke_agent AGENT`, a step bound to `let x`
    by its tool and `x`, a map's item with its index; the path stays an attribute
    (docs/observability.md "Span names")."""
    (tmp_path / "named.flow").write_text(NAMED, encoding="utf-8")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(TelemetrySettings(), tracer_provider=provider)
    result = api.run_sync(
        tmp_path / "named.flow", {"dir": "."}, model="test", workspace=tmp_path,
        sinks=[sink], shape_cache=False,
    )  # fmt: skip
    assert result.ok, result.error
    paths = {s.name: s.attributes.get("agentflow.step.path") for s in exporter.get_finished_spans()}
    steps = {
        "list_dir files": "E0",
        "execute_tool list_dir": "E0",
        "map n": "E1",
        "invoke_agent helper · item 0": "E1/do.0",
        "invoke_agent helper · item 1": "E1/do.1",
        "invoke_agent helper": "E2",
    }
    assert steps.items() <= paths.items()
    assert set(paths) == {*steps, "run named", "stage look", "agent turn 1", "chat test"}


def test_the_reports_error_names_the_failing_step_as_the_console_does(tmp_path):
    (tmp_path / "req.flow").write_text(
        "input { n: int }\n"
        "stage a -> int {\n"
        '  require input.n < 5 else fail "too big: ${input.n * 2}"\n'
        "  return input.n\n"
        "}\n",
        encoding="utf-8",
    )
    trace = tmp_path / "trace.jsonl"
    result = api.run_sync(tmp_path / "req.flow", {"n": 7}, trace=trace)
    assert result.error is not None and result.error["code"] == "failed"
    html = api.report(trace)
    errors = html[html.index('id="errors"') :]
    assert "<b>the run, in a › require (step E0)</b>" in errors
    assert "too big: 14" in errors


OUTLINED = """\
flow outlined
use agent "critic" as critic
input { xs: int[] }
stage answer -> int[] {
  return parallel map input.xs as x limit 2 {
    let first = x + 1
    let final = loop up to 2 as turn, best = first {
      let a = agent(critic) { task "ok ${best}?" tools none expect int }
      let b = agent(critic) { task "ok ${a}?" tools none expect int }
      return best + turn + a + b
    } until false else best
    return final
  }
}
"""


def test_outlined_items_and_rounds_are_named_as_the_flow_names_them(tmp_path):
    """A map's item or a loop's round whose body the compiler outlined into a `plan__…`
    sub-plan is a span named `item N` / `round N`, with no `execute_tool plan__…` span for
    the call; an agent's own rounds are `agent turn N`, never a loop's `round N`; the report's
    tool column says `item` / `round` (docs/observability.md "Span names")."""
    (tmp_path / "outlined.flow").write_text(OUTLINED, encoding="utf-8")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(TelemetrySettings(), tracer_provider=provider)
    trace = tmp_path / "trace.jsonl"
    result = api.run_sync(
        tmp_path / "outlined.flow", {"xs": [1]}, model="test", sinks=[sink], trace=trace,
        shape_cache=False,
    )  # fmt: skip
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    assert not [s.name for s in spans if "plan__" in s.name]
    by_path = {
        s.attributes["agentflow.step.path"]: s.name
        for s in spans
        if s.name != "chat test" and not s.name.startswith("agent turn")
        if "agentflow.step.path" in (s.attributes or {})
    }
    assert by_path["E0/do.0"] == "item 0"
    assert by_path["E0/do.0/E0/round.1"] == "round 1"
    assert by_path["E0/do.0/E0/round.2"] == "round 2"
    turns = [s for s in spans if s.name.startswith("agent turn")]
    assert [s.name for s in turns] == ["agent turn 1"] * 4
    html = api.report(trace)
    table = html[html.index('id="steps-table"') :]
    assert "plan__" not in html
    row = table[table.index('data-path="E0/do.0/E0/round.2"') :]
    assert '<td data-label="tool">round</td>' in row[: row.index("</tr>")]
    assert "<h3>agent turn 1</h3>" in html and "<h3>round 1</h3>" not in html


FILTERED = """\
flow filtered
input { xs: text[] }
stage answer -> text[] {
  return filter input.xs as t where not any(map [t] as g { lower(g) == "spam" })
}
"""


def test_the_map_a_filter_runs_is_a_span_named_filter(tmp_path):
    # a `filter … where` whose condition needs steps runs a map the user did not write: its
    # span says `filter`, as the progress, the graph and --explore do (final battery)
    (tmp_path / "filtered.flow").write_text(FILTERED, encoding="utf-8")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(TelemetrySettings(), tracer_provider=provider)
    result = api.run_sync(tmp_path / "filtered.flow", {"xs": ["a", "SPAM"]}, sinks=[sink])
    assert result.ok and result.output == ["a"], result.error
    labelled = {
        s.name
        for s in exporter.get_finished_spans()
        if str((s.attributes or {}).get("agentflow.step.label", "")).endswith(" › filter")
    }
    assert labelled == {"filter"}, labelled
