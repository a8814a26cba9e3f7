"""Benchmark: the span attributes agentflow and Pydantic AI's instrumentation set on the same
agent run (issue 31 item 5), as the table of docs/otel-attributes.md.

One scripted OpenAI-compatible server (agentflow.testing.ChatServer, real HTTP on 127.0.0.1)
answers both the same way: round 1 calls ``read_file`` on ``a.txt``, round 2 answers. agentflow
runs a one-agent `.flow` with ``capture_content``; Pydantic AI (``Agent(capabilities=
[Instrumentation(...)])``, its default instrumentation version, content included) runs an agent with a ``read_file`` tool.
Both export to an in-memory OpenTelemetry exporter; the script groups the spans by role —
agent (``invoke_agent``), chat (the model call), tool (``execute_tool``) — and prints, per role,
every attribute key either sets, marked for each, then the keys Pydantic AI sets that agentflow
does not (none expected, apart from the Logfire-only and Pydantic-AI-only ones named in
``EQUIVALENT`` with the agentflow attribute that holds the same).

    .venv/bin/python bench/otel_attributes.py          # needs the `bench` extra (pydantic-ai-slim)
    .venv/bin/python bench/otel_attributes.py --check  # exit 1 unless agentflow's is a superset
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agentflow
from agentflow.runtime.config import load_config
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings
from agentflow.testing import TEST_API_KEY, ChatServer, answer, text, tool_calls

FLOW = """
flow reader "read one file"
input { name: text }
type Greeting { ok: bool, why: text }
use agent "reader" as reader
stage s -> Greeting {
  return agent(reader) {
    task "Read a.txt and say whether it greets ${input.name}."
    tools [read_file]
    expect Greeting
  }
}
"""

#: attributes only one framework's own tools read, with the agentflow attribute holding the
#: same information (Logfire's rendering hints; Pydantic AI's own names)
EQUIVALENT = {
    "logfire.msg": "the span name",
    "logfire.json_schema": "(Logfire's rendering hint: no equivalent needed)",
    "model_request_parameters": "gen_ai.tool.definitions + agentflow.agent.* settings",
    "final_result": "output.value (OpenInference) / agentflow.step.output",
    "pydantic_ai.all_messages": "gen_ai.input.messages + gen_ai.output.messages of its chat spans",
    "pydantic_ai.new_message_index": "(Pydantic AI's message history: no equivalent)",
    "agent_name": "gen_ai.agent.name",
    "model_name": "agentflow.agent.model / gen_ai.request.model",
    "tool_arguments": "gen_ai.tool.call.arguments",
    "tool_response": "gen_ai.tool.call.result",
}


def _role(span: Any) -> str | None:
    op = span.attributes.get("gen_ai.operation.name")
    if op == "invoke_agent" or span.name.startswith(("invoke_agent", "agent run")):
        return "agent"
    if op == "chat" or span.name.startswith("chat "):
        return "chat"
    if op == "execute_tool" or span.name.startswith(("execute_tool", "running tool")):
        return "tool"
    return None


def _keys(spans: list[Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"agent": set(), "chat": set(), "tool": set()}
    for span in spans:
        role = _role(span)
        if role is not None:
            out[role] |= set(span.attributes or {})
    return out


def _exporter() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def run_agentflow(work: Path) -> dict[str, set[str]]:
    (work / "a.txt").write_text("hello ada\n")
    (work / "reader.flow").write_text(FLOW)
    provider, exporter = _exporter()
    sink = OtelSink(TelemetrySettings(capture_content=True), tracer_provider=provider)
    script = [
        tool_calls(("builtin__read_file", {"path": "a.txt"})),
        answer({"ok": True, "why": "it greets ada"}),
    ]
    with ChatServer(script) as server:
        config = load_config(server.write_config(work), env={"SCRIPTED_API_KEY": TEST_API_KEY})
        result = agentflow.run_sync(
            str(work / "reader.flow"), {"name": "ada"}, config=config, workspace=work,
            sinks=[sink], shape_cache=False,
        )  # fmt: skip
    assert result.status == "ok", result.error
    return _keys(list(exporter.get_finished_spans()))


def run_pydantic_ai(work: Path) -> dict[str, set[str]]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider, exporter = _exporter()
    script = [tool_calls(("read_file", {"path": "a.txt"})), text("it greets ada")]
    with ChatServer(script) as server:
        model = OpenAIChatModel(
            "test-model", provider=OpenAIProvider(base_url=server.url, api_key=TEST_API_KEY)
        )
        agent = Agent(
            model,
            name="reader",
            capabilities=[
                Instrumentation(
                    settings=InstrumentationSettings(tracer_provider=provider, include_content=True)
                )
            ],
        )

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a file of the workspace."""
            return (work / path).read_text()

        result = asyncio.run(agent.run("Read a.txt and say whether it greets ada."))
    assert "ada" in str(result.output)
    return _keys(list(exporter.get_finished_spans()))


def table(ours: dict[str, set[str]], theirs: dict[str, set[str]]) -> tuple[str, list[str]]:
    """The Markdown table (role, attribute, Pydantic AI, agentflow) and what agentflow lacks
    beyond :data:`EQUIVALENT`."""
    lines = ["| span | attribute | Pydantic AI | agentflow |", "| --- | --- | --- | --- |"]
    missing: list[str] = []
    for role in ("agent", "chat", "tool"):
        for key in sorted(ours[role] | theirs[role]):
            them = "✓" if key in theirs[role] else ""
            us = "✓" if key in ours[role] else ""
            if them and not us:
                if key in EQUIVALENT:
                    us = f"as {EQUIVALENT[key]}"
                else:
                    missing.append(f"{role}: {key}")
            lines.append(f"| {role} | `{key}` | {them} | {us} |")
    return "\n".join(lines), missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless a superset")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = run_agentflow(Path(tmp))
        theirs = run_pydantic_ai(Path(tmp))
    text_table, missing = table(ours, theirs)
    print(text_table)
    for role in ("agent", "chat", "tool"):
        print(f"{role}: Pydantic AI {len(theirs[role])} keys, agentflow {len(ours[role])} keys")
    print("set by Pydantic AI, not by agentflow:", ", ".join(missing) or "none")
    return 1 if args.check and missing else 0


if __name__ == "__main__":
    sys.exit(main())
