"""``flowc serve --mcp DIR``: the programs of a directory as MCP tools, tested through the
official SDK's client (stdio and streamable HTTP) and the MCP Inspector's CLI (npm, from
``scripts/npm-tools.sh``): listing with input/output schemas and doc comments, calls, ``ask`` steps
as elicitation requests whose answers the run uses, progress per step, cancellation."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import ElicitResult
from support.npm_tools import INSPECTOR, MODULES, NODE, free_port, need, wait_for_port
from support.timing import Stretch

FLOWC = Path(sys.executable).parent / "flowc"

GREET = """/// Greet someone, asking how formal to be.
flow greet "Greet someone"
input { name: text }
output { greeting: text }

stage main {
  let tone = ask "How formal, ${input.name}?" expect "formal" | "casual" default "casual"
  if tone == "formal" {
    return { greeting: "Good day, ${input.name}." }
  }
  return { greeting: "Hi ${input.name}!" }
}
"""

COUNT = """/// Count the words of a text.
flow count_words
input text
output int

stage main {
  return input.count
}
"""

NAP = """/// Nap, then say so.
flow nap
input { seconds: number }

extern tool user__nap(seconds: number) -> text

stage main {
  return user__nap(seconds: input.seconds)
}
"""

NAPS_PY = '''import asyncio


async def nap(seconds: float, ctx) -> str:
    """Sleep, then leave a mark in the workspace."""
    await asyncio.sleep(seconds)
    (ctx.workspace / "woke.txt").write_text("woke", encoding="utf-8")
    return "woke"
'''

PLAN = """version: 1
name: shout
description: Shout a word.
input_schema: { type: object, properties: { word: { type: string } }, required: [word] }
steps:
- id: E0
  tool_name: value
  input: { value: "{{ input.word }}!" }
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "greet.flow").write_text(GREET, encoding="utf-8")
    (d / "count_words.flow").write_text(COUNT.replace("input.count", "1"), encoding="utf-8")
    (d / "nap.flow").write_text(NAP, encoding="utf-8")
    (d / "naps.py").write_text(NAPS_PY, encoding="utf-8")
    (d / "shout.plan.yaml").write_text(PLAN, encoding="utf-8")
    (d / "broken.flow").write_text("stage main { return nope }\n", encoding="utf-8")
    (d / "flow.toml").write_text('[tools]\nmodules = ["naps.py"]\n', encoding="utf-8")
    return d


def stdio(directory: Path) -> StdioServerParameters:
    return StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(directory)])


async def test_lists_every_program_with_its_schemas_and_doc_comment(served):
    async with stdio_client(stdio(served)) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert sorted(tools) == ["count_words", "greet", "nap", "shout"]  # broken.flow left out
    greet = tools["greet"]
    assert greet.description == "Greet someone, asking how formal to be."
    assert greet.input_schema["properties"] == {"name": {"type": "string"}}
    assert greet.input_schema["required"] == ["name"]
    assert greet.output_schema["properties"] == {"greeting": {"type": "string"}}
    # a non-object input is the argument `input`; a non-object output comes as {result}
    count = tools["count_words"]
    assert count.input_schema["properties"]["input"]["type"] == "string"
    assert count.output_schema["properties"]["result"]["type"] == "integer"
    assert tools["shout"].description == "Shout a word." and tools["shout"].output_schema is None


async def test_the_instructions_name_the_served_directory_also_when_it_is_given_as_dot(served):
    here = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", "."], cwd=served)
    async with stdio_client(here) as (r, w), ClientSession(r, w) as session:
        init = await session.initialize()
    assert init.instructions == "Workflows of flows/, run by flowc."


async def test_ask_is_an_elicitation_whose_answer_the_run_uses_with_progress(served):
    asked = []

    async def elicit(context, params):
        asked.append(params)
        return ElicitResult(action="accept", content={"answer": "formal"})

    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async with (
        stdio_client(stdio(served)) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        result = await session.call_tool("greet", {"name": "Ada"}, progress_callback=on_progress)
        assert result.is_error is False
        assert result.structured_content == {"greeting": "Good day, Ada."}
        assert json.loads(result.content[0].text) == {"greeting": "Good day, Ada."}
        # a wrapped input and output; a plan file
        counted = await session.call_tool("count_words", {"input": "a b c"})
        assert counted.structured_content == {"result": 1}
        shout = await session.call_tool("shout", {"word": "hey"})
        assert shout.content[0].text == "hey!" and shout.structured_content is None
        # a bad input is a tool error saying why
        bad = await session.call_tool("greet", {"nom": "x"})
        assert bad.is_error and "name" in bad.content[0].text
    assert len(asked) == 1 and asked[0].message == "How formal, Ada?"
    form = asked[0].requested_schema
    assert form["properties"]["answer"]["enum"] == ["formal", "casual"]
    assert form["required"] == ["answer"]
    assert [p[:2] for p in progress] == [(1.0, 2.0), (2.0, 2.0)]
    assert progress[0][2] == "step main › tone = ask done"  # named as the .flow names it


async def test_a_declined_elicitation_leaves_the_ask_to_its_default(served):
    async def decline(context, params):
        return ElicitResult(action="decline")

    async with (
        stdio_client(stdio(served)) as (r, w),
        ClientSession(r, w, elicitation_callback=decline) as session,
    ):
        await session.initialize()
        result = await session.call_tool("greet", {"name": "Bo"})
    assert result.structured_content == {"greeting": "Hi Bo!"}


async def test_client_cancellation_cancels_the_run(served):
    async with stdio_client(stdio(served)) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        call = asyncio.ensure_future(session.call_tool("nap", {"seconds": 3}))
        await asyncio.sleep(1.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.sleep(3)
        # the nap was cancelled with the run: it never woke up
        assert not (served / "woke.txt").exists()
        # and the server goes on serving
        again = await session.call_tool("count_words", {"input": "x"})
        assert again.structured_content == {"result": 1}


async def test_streamable_http_with_elicitation(served):
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(served), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc)

        async def elicit(context, params):
            return ElicitResult(action="accept", content={"answer": "formal"})

        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w),
            ClientSession(r, w, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "greet" in names
            result = await session.call_tool("greet", {"name": "Cy"})
        assert result.structured_content == {"greeting": "Good day, Cy."}
    finally:
        proc.terminate()
        proc.wait(10)


#: JSON output only, and a start-up allowance for a loaded machine (flowc compiles every program)
INSPECTOR_OPTIONS = ("--format", "json", "-q", "--connect-timeout", "90000")


def inspector(*args: str, cwd: Path) -> dict:
    """The MCP Inspector's CLI (``mcp-inspector --cli``), JSON output."""
    need(INSPECTOR)
    env = {
        **os.environ,
        "MCP_CATALOG_PATH": str(cwd / "inspector-catalog.json"),
        "MCP_CLIENT_CONFIG_PATH": str(cwd / "inspector-client.json"),
        "PATH": f"{need(NODE).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = subprocess.run(
        [str(MODULES / ".bin" / "mcp-inspector"), "--cli", *INSPECTOR_OPTIONS, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_the_inspector_cli_lists_and_calls_a_served_flow(served, tmp_path):
    target = [str(FLOWC), "serve", "--mcp", str(served)]
    listed = inspector(*target, "--method", "tools/list", cwd=tmp_path)
    names = [t["name"] for t in listed["result"]["tools"]]
    assert names == ["count_words", "greet", "nap", "shout"]
    greet = next(t for t in listed["result"]["tools"] if t["name"] == "greet")
    assert greet["outputSchema"]["required"] == ["greeting"]
    called = inspector(
        *target, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada",
        cwd=tmp_path,
    )  # fmt: skip
    # the Inspector's CLI offers no elicitation: the ask takes its `default`
    assert called["result"]["structuredContent"] == {"greeting": "Hi Ada!"}
    assert called["result"]["isError"] is False


def test_the_inspector_cli_over_streamable_http(served, tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(served), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc)
        with Stretch() as clock:
            called = inspector(
                f"http://127.0.0.1:{port}/mcp", "--method", "tools/call", "--tool-name", "shout",
                "--tool-arg", "word=hi", cwd=tmp_path,
            )  # fmt: skip
        assert called["result"]["content"][0]["text"] == "hi!"
        assert clock.took < clock.bound(60)
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_needs_the_mcp_flag_and_a_directory(tmp_path):
    done = subprocess.run([str(FLOWC), "serve", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "flowc serve --mcp" in done.stderr
    done = subprocess.run(
        [str(FLOWC), "serve", "--mcp", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no such directory" in done.stderr


SUMMARY = """/// Summarize a text.
flow summary
input { text: text }

use agent "writer" as writer

stage main -> { gist: text } {
  return agent(writer) {
    task "Summarize ${input.text}."
    tools none
    expect { gist: text }
  }
}
"""


async def test_model_test_answers_every_agent_of_a_served_flow_with_the_test_model(tmp_path):
    d = tmp_path / "flows"
    d.mkdir()
    (d / "summary.flow").write_text(SUMMARY, encoding="utf-8")
    with_test = StdioServerParameters(
        command=str(FLOWC), args=["serve", "--mcp", "--model", "test", str(d)]
    )
    async with stdio_client(with_test) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        done = await session.call_tool("summary", {"text": "a long story"})
    assert not done.is_error, done.content
    assert isinstance((done.structured_content or {}).get("gist"), str)
    # a --model that names no test model is refused at start-up, not at each call
    from agentflow.errors import ConfigError
    from agentflow.serve import McpFlowServer

    with pytest.raises(ConfigError, match="the only model that can be named here"):
        McpFlowServer(d, model="gpt-4o")


ESCALATE = """/// Escalate, if a person says so.
flow escalate
input { ticket: text }
output { escalated: bool }

stage main {
  let ok = ask "Escalate ${input.ticket}?" expect bool default false
  return { escalated: ok }
}
"""


async def test_an_accepted_form_missing_the_requested_field_is_asked_again_never_defaulted(
    tmp_path,
):
    # MCP elicitation: the server checks an accepted form against the schema it requested;
    # `{"value": true}` for a form requiring `answer` is not "no answer" (the default `false`)
    (tmp_path / "escalate.flow").write_text(ESCALATE, encoding="utf-8")
    asked = []
    replies = iter([{"value": True}, {"answer": True}, {"value": True}, {"value": True}])

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content=next(replies))

    async with (
        stdio_client(stdio(tmp_path)) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        fixed = await session.call_tool("escalate", {"ticket": "T-1"})
        refused = await session.call_tool("escalate", {"ticket": "T-2"})
    # asked again, saying what was wrong; the second, well-formed answer is the one used
    assert fixed.is_error is False and fixed.structured_content == {"escalated": True}
    assert asked[0] == "Escalate T-1?"
    assert asked[1] == (
        "Escalate T-1?\n\n(The last answer was not accepted: the form has no field `answer` "
        "(it gave `value`; the requested schema requires `answer`).)"
    )
    # wrong twice: the call fails naming the fields, no default stands in for the answer
    assert refused.is_error is True
    text = refused.content[0].text
    assert "answer to `Escalate T-2?` not accepted: the form has no field `answer`" in text
    assert "it gave `value`" in text and "escalated" not in text
    assert len(asked) == 4
