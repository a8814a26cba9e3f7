"""An eval's OpenTelemetry spans (docs/reference/evals.md "Running"): one `eval` span, a span per
case run under it with the case's scores, and each run's own spans under its case span — one
trace. Exported to an in-memory exporter through a host TracerProvider."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentflow import api

FLOW = """\
input { n: int }
use agent "doubler" as doubler
stage double -> { n: int } {
  return agent(doubler) { task "Double ${input.n}" tools none expect { n: int } }
}
eval "doubling" {
  score exact = output.n == expected.n
}
"""


def test_every_case_run_is_a_span_under_one_eval_span(tmp_path):
    (tmp_path / "double.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        '{"name": "one", "input": {"n": 1}, "expected": {"n": 2}}\n'
        '{"name": "two", "input": {"n": 2}, "expected": {"n": 4}}\n',
        encoding="utf-8",
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    report = api.evaluate(
        tmp_path / "double.flow",
        [tmp_path / "cases.jsonl"],
        model="test",
        repeat=2,
        cache=None,
        tracer_provider=provider,
    )
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.name == "eval doubling"]
    assert root.parent is None and root.attributes["agentflow.eval.runs"] == 4
    cases = [s for s in spans if s.name.startswith("eval case ")]
    assert sorted(s.name for s in cases) == ["eval case one"] * 2 + ["eval case two"] * 2
    assert all(s.parent.span_id == root.context.span_id for s in cases)
    assert {s.attributes["agentflow.eval.repeat"] for s in cases} == {0, 1}
    by_run = {(r.case, r.repeat): r for r in report.runs}
    for s in cases:
        run = by_run[(s.attributes["agentflow.eval.case"], s.attributes["agentflow.eval.repeat"])]
        assert s.attributes["agentflow.eval.passed"] is run.passed
        assert s.attributes["agentflow.eval.score.exact"] == run.scores["exact"].score
    # each run's own span tree hangs under its case span, all in the eval's trace
    case_ids = {s.context.span_id for s in cases}
    runs = [s for s in spans if s.parent is not None and s.parent.span_id in case_ids]
    assert len(runs) == 4
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
