"""Issue 31 item 5: the spans carry what LLM observability tools read — the OpenTelemetry GenAI
semantic conventions in full and OpenInference's span kinds and input/output — for a flow run
against a real scripted provider on loopback (agentflow.testing.ChatServer), with a price from
``[prices]`` for a model on a URL no price table knows.

docs/observability.md "What LLM tools see" lists the attributes; the table against Pydantic
AI's instrumentation is in docs/otel-attributes.md.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agentflow
from agentflow.runtime.config import load_config
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings
from agentflow.testing import TEST_API_KEY, ChatServer, answer, tool_calls

FLOW = """
flow triage "read each ticket"
input { tickets: text[] }
type Finding { ok: bool, why: text }
use agent "reader" as reader
stage check -> Finding[] {
  map input.tickets as t {
    agent(reader) {
      task "Read ${t} and say whether it is fine."
      tools [read_file]
      expect Finding
    }
  }
}
"""

PRICES = '[prices."test-model"]\ninput = 2.0\noutput = 8.0\n'


def _run(tmp_path, capture: bool):
    (tmp_path / "a.txt").write_text("all fine\n")
    (tmp_path / "triage.flow").write_text(FLOW)
    script = [
        tool_calls(("builtin__read_file", {"path": "a.txt"})),
        answer({"ok": True, "why": "it says all fine"}),
    ]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(TelemetrySettings(capture_content=capture), tracer_provider=provider)
    with ChatServer(script) as server:
        config = load_config(
            server.write_config(tmp_path, extra=PRICES), env={"SCRIPTED_API_KEY": TEST_API_KEY}
        )
        result = agentflow.run_sync(
            str(tmp_path / "triage.flow"),
            {"tickets": ["a.txt"]},
            config=config,
            workspace=tmp_path,
            sinks=[sink],
            shape_cache=False,
        )
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    assert result.status == "ok", result.error
    finished = exporter.get_finished_spans()
    chats = [s for s in finished if s.name.startswith("chat ")]
    return {s.name: s for s in finished}, sorted(chats, key=lambda s: s.start_time), port


def test_spans_carry_the_genai_conventions_and_openinference_kinds(tmp_path):
    spans, chats, port = _run(tmp_path, capture=True)
    run = spans["run triage"]
    agent = spans["invoke_agent reader · item 0"]  # a map item's index in its name
    tool = spans["execute_tool read_file"]  # the tool as the .flow names it
    kinds = {n: s.attributes.get("openinference.span.kind") for n, s in spans.items()}
    assert kinds["run triage"] == "CHAIN" and kinds["stage check"] == "CHAIN"
    assert kinds["invoke_agent reader · item 0"] == "AGENT"
    assert kinds["execute_tool read_file"] == "TOOL"
    assert {kinds[s.name] for s in chats} == {"LLM"}
    assert all(kind for kind in kinds.values()), kinds  # no span left "unknown"

    # the run's input and output where Phoenix's trace list reads them
    assert json.loads(run.attributes["input.value"]) == {"tickets": ["a.txt"]}
    assert json.loads(run.attributes["output.value"]) == [{"ok": True, "why": "it says all fine"}]
    assert run.attributes["input.mime_type"] == "application/json"
    session = run.attributes["gen_ai.conversation.id"]
    assert session and run.attributes["session.id"] == session

    # the agent: its real model (not the role), its input and answer, its usage
    assert agent.attributes["agentflow.agent.model"] == "test-model"
    assert agent.attributes["gen_ai.request.model"] == "test-model"
    assert agent.attributes["agentflow.agent.role"] == "chat"
    assert "Read a.txt" in json.loads(agent.attributes["input.value"])["task"]
    assert json.loads(agent.attributes["output.value"]) == {"ok": True, "why": "it says all fine"}
    assert agent.attributes["gen_ai.conversation.id"] == session
    assert agent.attributes["gen_ai.aggregated_usage.input_tokens"] > 0  # not counted twice
    agent_call = agent.attributes["gen_ai.agent.call.id"]

    # chat spans: the whole request (the second one holds the tool's result), the reply, ids
    first, second = chats
    asked = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in asked] == ["user", "assistant", "tool"]
    call = asked[1]["parts"][0]
    assert call["type"] == "tool_call" and call["name"] == "builtin__read_file"
    assert asked[2]["parts"][0]["type"] == "tool_call_response"
    assert "all fine" in asked[2]["parts"][0]["response"]
    assert asked[2]["parts"][0]["id"] == call["id"]
    assert second.attributes["llm.input_messages.0.message.role"] == "user"
    assert second.attributes["llm.input_messages.2.message.role"] == "tool"
    assert second.attributes["llm.input_messages.2.message.tool_call_id"] == call["id"]
    tool_call = "llm.input_messages.1.message.tool_calls.0.tool_call"
    assert second.attributes[f"{tool_call}.function.name"] == "builtin__read_file"
    assert second.attributes["llm.output_messages.0.message.role"] == "assistant"
    for chat in (first, second):
        a = chat.attributes
        assert a["gen_ai.response.id"].startswith("chatcmpl-")
        assert (a["server.address"], a["server.port"]) == ("127.0.0.1", port)
        assert a["gen_ai.conversation.id"] == session
        assert a["gen_ai.agent.name"] == "reader" and a["gen_ai.agent.call.id"] == agent_call
        assert a["llm.model_name"] == "test-model"
        tools = json.loads(a["gen_ai.tool.definitions"])
        assert [t["name"] for t in tools] == ["builtin__read_file"]
        assert tools[0]["type"] == "function" and tools[0]["parameters"]["type"] == "object"
        assert "llm.tools.0.tool.json_schema" in a
        # the price of [prices] for a model on a loopback URL no price table knows
        tokens_in, tokens_out = a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]
        price = (tokens_in * 2.0 + tokens_out * 8.0) / 1_000_000
        assert abs(a["llm.cost.total"] - price) < 1e-9
        assert a["llm.token_count.total"] == tokens_in + tokens_out

    # the tool span: the call id the model gave it, its arguments and result
    assert tool.attributes["gen_ai.tool.call.id"] == call["id"]
    assert json.loads(tool.attributes["input.value"]) == {"path": "a.txt"}
    assert "all fine" in tool.attributes["output.value"]
    assert tool.attributes["tool.name"] == "read_file"
    assert tool.attributes["gen_ai.agent.call.id"] == agent_call


def test_without_content_capture_no_message_or_value_leaves_the_process(tmp_path):
    spans, chats, _ = _run(tmp_path, capture=False)
    for span in spans.values():
        for key in span.attributes:
            assert not key.startswith(("input.value", "output.value", "llm.input_messages"))
            assert not key.startswith("llm.output_messages")
            assert key not in ("gen_ai.input.messages", "gen_ai.output.messages")
    chat = chats[0]
    assert chat.attributes["openinference.span.kind"] == "LLM"
    assert chat.attributes["llm.cost.total"] > 0  # counts and cost are not content
