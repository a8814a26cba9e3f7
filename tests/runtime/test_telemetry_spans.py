"""OpenTelemetry export (runtime/telemetry.py): the span tree, names and attributes a run
produces, content capture and secret redaction, error status, trace continuation, and that a
run without telemetry never imports OpenTelemetry.

Spans are collected with the SDK's in-memory exporter on a real TracerProvider; the export to
a real OTLP backend is tested in tests/e2e/test_otel_phoenix.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentflow import api
from agentflow.runtime.config import load_config
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import (
    TelemetrySettings,
    config_secrets,
    otlp_traces_url,
    settings_from_config,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FLOWC = [sys.executable, "-m", "agentflow"]


def _sink(**settings) -> tuple[OtelSink, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelSink(TelemetrySettings(**settings), tracer_provider=provider), exporter


def _run_bug_triage(sink: OtelSink):
    return api.run_sync(
        EXAMPLES / "bug-triage.flow",
        json.loads((EXAMPLES / "bug-report.json").read_text()),
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
        sinks=[sink],
        shape_cache=False,
    )


class Tree:
    """Finished spans indexed by id, with their children in start order."""

    def __init__(self, spans):
        self.spans = list(spans)
        self.by_id = {s.context.span_id: s for s in self.spans}
        self.roots = [s for s in self.spans if s.parent is None]

    def children(self, span, name_prefix: str = ""):
        kids = [
            s
            for s in self.spans
            if s.parent is not None
            and s.parent.span_id == span.context.span_id
            and s.name.startswith(name_prefix)
        ]
        return sorted(kids, key=lambda s: (s.start_time, s.name))

    def names(self, span) -> list[str]:
        return [s.name for s in self.children(span)]


def test_bug_triage_run_exports_run_stage_step_round_model_and_tool_spans():
    sink, exporter = _sink()
    result = _run_bug_triage(sink)
    assert result.status == "ok", result.error
    tree = Tree(exporter.get_finished_spans())
    assert [r.name for r in tree.roots] == ["run bug_triage"]
    run = tree.roots[0]
    assert run.attributes["agentflow.run.status"] == "ok"
    assert run.attributes["agentflow.usage.inferences"] == 7
    assert run.attributes["agentflow.file"].endswith("bug-triage.flow")
    assert tree.names(run) == ["stage reproduce", "stage plan", "stage implement"]

    reproduce, plan, implement = tree.children(run)
    # a step in the .flow's terms: `exit` is bound to no `let`; its path is an attribute
    assert tree.names(reproduce) == ["invoke_agent repo-investigator", "exit"]
    assert tree.children(reproduce)[1].attributes["agentflow.step.path"] == "E1"
    agent = tree.children(reproduce)[0]
    attrs = agent.attributes
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "repo-investigator"
    assert attrs["agentflow.step.path"] == "E0" and attrs["agentflow.stage"] == "reproduce"
    assert attrs["code.file.path"] == "bug-triage.flow"
    assert (attrs["code.line.number"], attrs["code.column.number"]) == (42, 16)
    assert attrs["agentflow.step.status"] == "ok"
    assert attrs["agentflow.usage.input_tokens"] == 40
    assert tree.names(agent) == ["agent turn 1", "agent turn 2", "agent turn 3", "agent turn 4"]

    rounds = tree.children(agent)
    expected_tools = [["list_dir"], ["grep"], ["read_file"], []]  # as the .flow names them
    for number, (round_span, tools) in enumerate(zip(rounds, expected_tools, strict=True), 1):
        assert round_span.attributes["agentflow.agent.round"] == number
        kids = tree.children(round_span)
        chat = [k for k in kids if k.name.startswith("chat ")]
        assert len(chat) == 1
        model = chat[0].attributes
        assert chat[0].kind.name == "CLIENT"
        assert model["gen_ai.operation.name"] == "chat"
        assert model["gen_ai.provider.name"] == "openai"  # the replayed exchanges' wire API
        assert model["agentflow.model.provider"] == "replay"
        assert model["gen_ai.request.model"] == "test-model"
        assert (model["gen_ai.usage.input_tokens"], model["gen_ai.usage.output_tokens"]) == (10, 5)
        finish = ("tool_calls",) if tools else ("stop",)
        assert model["gen_ai.response.finish_reasons"] == finish
        assert [k.name for k in kids if k.name.startswith("execute_tool ")] == [
            f"execute_tool {t}" for t in tools
        ]
        for tool in (k for k in kids if k.name.startswith("execute_tool ")):
            assert tool.attributes["gen_ai.tool.name"] == tool.name.split()[1]
            assert tool.attributes["agentflow.tool.name"] == "builtin__" + tool.name.split()[1]
            assert tool.attributes["agentflow.agent.round"] == number
            assert tool.start_time >= round_span.start_time
            assert tool.end_time <= round_span.end_time

    assert tree.names(plan) == ["invoke_agent dev-team.lead"]
    assert tree.names(implement) == ["map"]  # `return parallel map …`
    (map_span,) = tree.children(implement)
    assert map_span.attributes["agentflow.map.items"] == 2
    items = tree.children(map_span)
    assert sorted(s.attributes["agentflow.map.index"] for s in items) == [0, 1]
    assert sorted(s.attributes["gen_ai.agent.name"] for s in items) == [
        "dev-team.backend",
        "dev-team.frontend",
    ]
    # every span ends within its parent, and one trace holds them all
    for span in tree.spans:
        assert span.context.trace_id == run.context.trace_id
        if span.parent is not None:
            parent = tree.by_id[span.parent.span_id]
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
    # content is opt-in: none of it by default
    for span in tree.spans:
        for key in span.attributes:
            assert key not in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
                "agentflow.step.input",
                "agentflow.step.output",
            ), (span.name, key)


def test_capture_content_records_messages_tool_arguments_and_results():
    sink, exporter = _sink(capture_content=True)
    assert _run_bug_triage(sink).status == "ok"
    tree = Tree(exporter.get_finished_spans())
    agent = next(s for s in tree.spans if s.name == "invoke_agent repo-investigator")
    task = json.loads(agent.attributes["gen_ai.input.messages"])
    assert task[0]["role"] == "user"
    assert "Locate the suspect code" in task[0]["parts"][0]["content"]
    grep = next(s for s in tree.spans if s.name == "execute_tool grep")
    assert json.loads(grep.attributes["gen_ai.tool.call.arguments"])["pattern"] == "def run_plan"
    assert "jobs/runner.py" in grep.attributes["gen_ai.tool.call.result"]
    first_chat = tree.children(tree.children(agent)[0], "chat ")[0]
    (message,) = json.loads(first_chat.attributes["gen_ai.output.messages"])
    assert message["role"] == "assistant"
    assert [p["name"] for p in message["parts"] if p["type"] == "tool_call"] == [
        "builtin__list_dir"
    ]


PLAN_ECHO = """\
version: 1
name: echo
steps:
  - id: E0
    tool_name: value
    input: { value: "token is {{ input.token }}" }
  - id: E1
    tool_name: exit
    input: { status: error, code: failed, message: "refused {{ input.token }}" }
"""


def test_known_secrets_are_redacted_from_every_attribute_and_failed_spans_carry_the_code(
    tmp_path,
):
    plan = tmp_path / "echo.plan.yaml"
    plan.write_text(PLAN_ECHO)
    secret = "sk-live-0123456789abcdef"
    sink, exporter = _sink(capture_content=True, secrets=(secret,))
    result = api.run_sync(plan, {"token": secret}, sinks=[sink], shape_cache=False)
    assert result.status == "error" and result.error["code"] == "failed"
    spans = exporter.get_finished_spans()
    dumped = json.dumps([dict(s.attributes) for s in spans] + [s.status.description for s in spans])
    assert secret not in dumped
    assert "[redacted]" in dumped
    run = next(s for s in spans if s.name == "run echo")
    failed = next(s for s in spans if s.name == "exit E1")
    for span in (run, failed):
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "failed"
        assert secret not in span.status.description
    ok = next(s for s in spans if s.name == "value E0")
    assert ok.status.status_code is StatusCode.UNSET
    assert ok.attributes["agentflow.step.status"] == "ok"


def test_config_secrets_are_provider_keys_and_expanded_header_and_env_values(tmp_path):
    toml = tmp_path / "flow.toml"
    toml.write_text(
        """
[models]
default = "acme:m"
[providers.acme]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "ACME_KEY"
[mcp.tracker]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${TRACKER_TOKEN}" }
[telemetry]
endpoint = "http://127.0.0.1:9"
headers = { "x-api-key" = "${OTEL_TOKEN}" }
"""
    )
    env = {
        "ACME_KEY": "acme-secret-1",
        "TRACKER_TOKEN": "tracker-secret",
        "OTEL_TOKEN": "otel-xyz1",
    }
    config = load_config(toml, env=env)
    assert set(config_secrets(config)) == {"acme-secret-1", "tracker-secret", "otel-xyz1"}
    settings = settings_from_config(config, env=env)
    assert settings.endpoint == "http://127.0.0.1:9/v1/traces"
    assert settings.headers == {"x-api-key": "otel-xyz1"}
    assert settings.capture_content is False and settings.service_name == "agentflow"
    assert config.telemetry.active


def test_otlp_endpoint_gets_the_traces_path_only_when_it_has_none():
    assert otlp_traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert otlp_traces_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/v1/traces"
    assert otlp_traces_url("http://h:6006/v1/traces") == "http://h:6006/v1/traces"


def test_a_traceparent_makes_the_run_span_continue_that_trace(tmp_path):
    plan = tmp_path / "echo.plan.yaml"
    plan.write_text(PLAN_ECHO.split("  - id: E1")[0])
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    sink, exporter = _sink(traceparent=parent)
    assert api.run_sync(plan, {"token": "t"}, sinks=[sink], shape_cache=False).ok
    run = next(s for s in exporter.get_finished_spans() if s.name == "run echo")
    assert f"{run.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert f"{run.parent.span_id:016x}" == "b7ad6b7169203331"


def _imports_otel(*args: str, cwd: Path) -> tuple[bool, subprocess.CompletedProcess]:
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('OTEL-IMPORTED' if any(m == 'opentelemetry' or "
        "m.startswith('opentelemetry.') for m in sys.modules) else 'OTEL-ABSENT', file=sys.stderr))\n"
        "from agentflow.cli import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    return "OTEL-IMPORTED" in proc.stderr, proc


def test_check_and_run_do_not_import_opentelemetry_unless_asked(tmp_path):
    plan = tmp_path / "echo.plan.yaml"
    plan.write_text(PLAN_ECHO.split("  - id: E1")[0])
    imported, proc = _imports_otel("check", str(EXAMPLES / "bug-triage.flow"), cwd=tmp_path)
    assert proc.returncode == 0 and not imported, proc.stderr
    imported, proc = _imports_otel("run", str(plan), "--input", '{"token": "t"}', cwd=tmp_path)
    assert proc.returncode == 0 and not imported, proc.stderr
    # asked for: the run imports it (and says in one line that nothing listens there)
    port = _closed_port()
    (tmp_path / "flow.toml").write_text("[telemetry]\ntimeout = 1\n")
    imported, proc = _imports_otel(
        "run", str(plan), "--input", '{"token": "t"}', "--otel", f"http://127.0.0.1:{port}",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0 and imported, proc.stderr
    assert f"telemetry export to http://127.0.0.1:{port}/v1/traces failed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_export_to_a_port_nothing_listens_on_says_connection_refused(tmp_path):
    # the SDK's last word after its retries is only "Failed to export spans batch due to
    # timeout, max retries or shutdown."; the reason an attempt gave is said first (a timeout
    # of 3 s leaves room for a retry, whose warning carries it)
    plan = tmp_path / "echo.plan.yaml"
    plan.write_text(PLAN_ECHO.split("  - id: E1")[0])
    port = _closed_port()
    (tmp_path / "flow.toml").write_text("[telemetry]\ntimeout = 3\n")
    _, proc = _imports_otel(
        "run", str(plan), "--input", '{"token": "t"}', "--otel", f"http://127.0.0.1:{port}",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "telemetry export" in ln]
    assert line.startswith(
        f"agentflow: telemetry export to http://127.0.0.1:{port}/v1/traces failed: "
        "Connection refused ("
    ), line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_otel_before_the_file_is_a_usage_error_that_says_why(tmp_path):
    proc = subprocess.run(
        [*FLOWC, "run", "--otel", "x.flow"], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "--otel x.flow: the endpoint must be an http:// or https:// URL" in proc.stderr


def test_a_bad_telemetry_endpoint_in_flow_toml_names_the_key(tmp_path):
    toml = tmp_path / "flow.toml"
    toml.write_text('[telemetry]\nendpoint = "localhost:4318"\n')
    with pytest.raises(Exception) as info:
        load_config(toml, env={})
    assert ":2:1: [telemetry] endpoint: must start with http://" in str(info.value)


def test_without_the_otel_extra_asking_for_export_is_a_config_error(tmp_path, monkeypatch):
    import agentflow.runtime.telemetry as telemetry
    from agentflow.errors import ConfigError

    plan = tmp_path / "echo.plan.yaml"
    plan.write_text(PLAN_ECHO.split("  - id: E1")[0])
    monkeypatch.setattr(telemetry, "otel_available", lambda: False)
    with pytest.raises(ConfigError, match=r"pip install 'agentflow\[otel\]'"):
        api.run_sync(plan, {"token": "t"}, telemetry=True, shape_cache=False)


def test_each_round_of_a_loop_is_a_span_with_its_round_under_the_loop(tmp_path):
    """A `loop`'s rounds (docs/reference/control.md "loop") are step spans `…/round.N` under the
    loop's span, with `agentflow.loop.round` and the label in the `.flow`'s terms."""
    flow = tmp_path / "count.flow"
    flow.write_text(
        "type S { n: int, done: bool }\n"
        "stage count -> S {\n"
        "  loop up to 5 as r, s: S = { n: 0, done: false } {\n"
        "    return { n: s.n + r, done: s.n + r >= 3 }\n"
        '  } until s.done else fail "never"\n'
        "}\n"
    )
    sink, exporter = _sink()
    result = api.run_sync(flow, None, sinks=[sink])
    sink.close()
    assert result.status == "ok", result.error
    tree = Tree(exporter.get_finished_spans())
    (loop,) = [s for s in tree.spans if s.attributes.get("agentflow.step.tool") == "loop"]
    rounds = tree.children(loop)
    assert [s.attributes["agentflow.loop.round"] for s in rounds] == [1, 2]
    assert [s.attributes["agentflow.step.path"] for s in rounds] == ["E0/round.1", "E0/round.2"]
    assert rounds[1].attributes["agentflow.step.label"] == "count › round 2 › return"


def test_a_sleep_step_span_says_what_it_waits_and_when_it_wakes(tmp_path):
    """A `sleep` (docs/reference/statements.md "sleep") is a step span with its duration and
    its wake-up time (docs/observability.md), content capture or not."""
    flow = tmp_path / "nap.flow"
    flow.write_text("stage nap -> int {\n  sleep 20ms\n  return 1\n}\n")
    sink, exporter = _sink()
    result = api.run_sync(flow, None, sinks=[sink])
    sink.close()
    assert result.status == "ok", result.error
    (nap,) = [
        s
        for s in exporter.get_finished_spans()
        if s.attributes.get("agentflow.step.tool") == "sleep"
    ]
    assert nap.attributes["agentflow.sleep.for"] == "20ms"
    assert nap.attributes["agentflow.sleep.until"].endswith("+00:00")
    assert nap.attributes["agentflow.step.label"] == "nap › sleep"
    assert nap.end_time - nap.start_time >= 20_000_000  # ns: it spans the wait
