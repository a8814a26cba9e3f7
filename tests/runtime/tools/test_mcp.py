"""MCP servers as catalog tools (docs/spec/RUNTIME.md §4) against a real MCP server over stdio.

The server is ``tests/support/mcp_server.py`` (official SDK, ``MCPServer``); each test that
connects starts one process (~1 s), so the tests group their checks per connection.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, text, tool_calls
from support.paths import TESTS
from support.timing import Stretch, scaled

from agentflow import api
from agentflow.errors import ConfigError, PlanLoadError, RunError
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog
from agentflow.runtime.tools.catalog import ToolContext

SERVER = TESTS / "support" / "mcp_server.py"


def mcp_toml(name: str = "tracker", **extra: str) -> str:
    lines = [
        f"[mcp.{name}]",
        f"command = {json.dumps(sys.executable)}",
        f"args = [{json.dumps(str(SERVER))}]",
    ]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def write_config(tmp_path: Path, text_: str) -> Path:
    path = tmp_path / "flow.toml"
    path.write_text(text_, encoding="utf-8")
    return path


async def test_lazy_connection_schemas_calls_and_close(tmp_path):
    (tmp_path / "srvdir").mkdir()
    cfg = load_config(
        write_config(
            tmp_path,
            mcp_toml(env='{ TOKEN = "${MY_TOKEN}" }', cwd='"srvdir"'),
        ),
        env={"MY_TOKEN": "tok-123"},
    )
    catalog = build_catalog(cfg, entry_points=False)
    conn = catalog.mcp.connections["tracker"]
    # declared at once, not connected: the server level counts as configured
    assert "tracker" in catalog.configured_prefixes
    assert not conn.connected
    assert not catalog.match("tracker__*")
    await catalog.prepare(["builtin__*"])  # does not touch the server
    assert not conn.connected
    t0 = time.monotonic()
    await catalog.prepare(["tracker__*"])
    assert conn.connected
    names = catalog.match("tracker__*")
    assert "tracker__list_issues" in names and "tracker__add" in names
    tool = catalog.get("tracker__list_issues")
    assert tool.source == "mcp" and tool.meta["server"] == "tracker"
    assert tool.description == "List issues of the tracker, newest first."
    assert tool.input_schema["properties"]["limit"]["type"] == "integer"
    assert catalog.get("tracker__add").input_schema["required"] == ["a", "b"]
    ctx = ToolContext(workspace=tmp_path)

    async def call(name, args):
        return await catalog.get(name).func(args, ctx)

    # calls run concurrently over the one reused connection
    results = await asyncio.gather(
        call("tracker__add", {"a": 2, "b": 3}),
        call("tracker__list_issues", {"limit": 2}),
        call("tracker__echo", {"text": "héllo `x`"}),
        call("tracker__env", {"name": "TOKEN"}),
        call("tracker__cwd", {}),
    )
    assert results[0] == 5
    assert results[1] == {
        "issues": [
            {"id": "ISS-1", "title": "Issue 1", "state": "open"},
            {"id": "ISS-2", "title": "Issue 2", "state": "open"},
        ]
    }
    assert results[2] == "héllo `x`"
    assert results[3] == "tok-123"  # ${MY_TOKEN} expanded from the environment
    assert Path(results[4]).resolve() == (tmp_path / "srvdir").resolve()
    with pytest.raises(RunError) as info:
        await call("tracker__fail", {"message": "no such project"})
    assert info.value.code == "tool_error" and "no such project" in info.value.message
    process_count_before = conn
    assert process_count_before.connected
    await catalog.aclose()
    assert not conn.connected
    assert not catalog.match("tracker__*")
    assert time.monotonic() - t0 < scaled(20)
    # a later run reconnects lazily
    await catalog.prepare(None)
    assert catalog.get("tracker__add") is not None
    assert await call("tracker__add", {"a": 1, "b": 1}) == 2
    await catalog.aclose()


async def test_timeout_then_server_dies_gives_tool_errors_not_a_hang(tmp_path):
    cfg = load_config(write_config(tmp_path, mcp_toml(timeout="1")), env={})
    catalog = build_catalog(cfg, entry_points=False)
    await catalog.prepare(["tracker__slow"])
    ctx = ToolContext(workspace=tmp_path)
    with Stretch() as clock:
        with pytest.raises(RunError) as info:
            await catalog.get("tracker__slow").func({"seconds": 30}, ctx)
    assert info.value.code == "timeout"
    assert clock.took < clock.bound(5)
    # the connection survives a timed-out call
    assert await catalog.get("tracker__add").func({"a": 1, "b": 2}, ctx) == 3
    t0 = time.monotonic()
    with pytest.raises(RunError) as info:
        await catalog.get("tracker__die").func({}, ctx)
    assert info.value.code == "tool_error"
    assert "MCP server 'tracker' is not available" in info.value.message
    with pytest.raises(RunError) as info:
        await catalog.get("tracker__add").func({"a": 1, "b": 2}, ctx)
    assert info.value.code == "tool_error"
    assert time.monotonic() - t0 < scaled(5)
    await catalog.aclose()


async def test_unstartable_server_and_missing_variable(tmp_path):
    text_ = (
        '[mcp.ghost]\ncommand = "/nonexistent/mcp-server-binary"\n'
        '[mcp.secret]\ncommand = "true"\nenv = { KEY = "${NOT_SET_ANYWHERE}" }\n'
    )
    cfg = load_config(write_config(tmp_path, text_), env={})
    catalog = build_catalog(cfg, entry_points=False)
    with pytest.raises(RunError) as info:
        await catalog.prepare(["ghost__*"])
    assert info.value.code == "tool_error"
    assert "MCP server 'ghost' is not available" in info.value.message
    with pytest.raises(RunError) as info:
        await catalog.prepare(["secret__x"])
    assert "NOT_SET_ANYWHERE" in info.value.message and "is not set" in info.value.message
    await catalog.aclose()


def test_config_errors_name_the_line(tmp_path):
    bad = '[models]\ndefault = "openai:x"\n\n[mcp.linear]\ncommand = "npx"\nurl = "http://x"\n'
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, bad), env={})
    assert str(info.value).startswith(f"{tmp_path / 'flow.toml'}:4:2: [mcp.linear]: ")
    assert "exactly one of `command`" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, '\n[mcp.a__b]\ncommand = "x"\n'), env={})
    assert ":2:2: [mcp.a__b]: invalid server name" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, '[mcp.x]\nurl = "http://h"\nargs = ["a"]\n'), env={})
    assert ":1:2: [mcp.x]: `args`, `env` and `cwd` apply to stdio servers" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, '[mcp.x]\ncommand = "c"\ntimeout = 0\n'), env={})
    assert ":3:1: [mcp.x] timeout: expected a number of seconds (more than 0)" in str(info.value)
    cfg = load_config(
        write_config(tmp_path, '[mcp.web]\nurl = "https://h/mcp"\nheaders = { A = "b" }\n'), env={}
    )
    assert cfg.mcp["web"].transport == "http" and cfg.mcp["web"].headers == {"A": "b"}


@pytest.mark.parametrize(
    ("command", "runs_flowcs_python"),
    [
        ("python", True),
        (f"python{sys.version_info[0]}", True),
        (f"python{sys.version_info[0]}.{sys.version_info[1]}", True),
        ("python2", False),
        (f"python{sys.version_info[0]}.{sys.version_info[1] + 1}", False),
        ("/usr/bin/python3", False),
        ("npx", False),
    ],
)
def test_python_command_is_the_interpreter_running_flowc(tmp_path, command, runs_flowcs_python):
    """`python`, `python3` and `python3.N` (the running version) start an MCP server with the
    interpreter running flowc, so a config needs no path to a virtual environment; other
    commands are kept as written."""
    cfg = load_config(write_config(tmp_path, f'[mcp.s]\ncommand = "{command}"\n'), env={})
    assert cfg.mcp["s"].command == (sys.executable if runs_flowcs_python else command)


PLAN_UNCONFIGURED = """
version: 1
name: p
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: find issues
      output_schema: { type: object }
      tools: ["linear__*"]
"""


async def test_unconfigured_server_fails_before_the_run(tmp_path):
    cfg = load_config(write_config(tmp_path, ""), env={})
    plan = load_plan_text(PLAN_UNCONFIGURED, "p.yaml")
    with pytest.raises(PlanLoadError) as info:
        await api.run(plan, {}, config=cfg, workspace=tmp_path)
    assert (
        "step E1: `tools` pattern 'linear__*' needs MCP server 'linear', which is not "
        "configured under [mcp.linear]"
    ) in str(info.value)


PLAN_MCP = """
version: 1
name: triage
steps:
  - id: E0
    tool_name: tracker__add
    input: { a: 20, b: 22 }
  - id: E1
    tool_name: agent
    input:
      prompt: "List open issues; the answer is {{ E0 }}"
      output_schema:
        type: object
        properties: { count: { type: integer } }
        required: [count]
      tools: ["tracker__list_*", "builtin__read_file"]
finish:
  mode: output
  output: "{{ E1.output }}"
"""


async def test_run_through_api_with_mcp_step_and_agent(tmp_path, chat_server):
    cfg_path = write_config(tmp_path, chat_server.config_text() + mcp_toml())
    cfg = load_config(cfg_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    chat_server.script(
        [
            tool_calls(("tracker__list_issues", {"limit": 3})),
            text('{"count": 3}'),
        ]
    )
    catalog = build_catalog(cfg, entry_points=False)
    plan = load_plan_text(PLAN_MCP, "triage.yaml")
    events = []
    from agentflow.runtime.events import CallbackSink

    result = await api.run(
        plan,
        {},
        config=cfg,
        workspace=tmp_path,
        catalog=catalog,
        sinks=[CallbackSink(events.append)],
    )
    assert result.status == "ok", result.error
    assert result.results["E0"] == 42
    assert result.output == {"count": 3}
    offered = {t["function"]["name"]: t["function"] for t in chat_server.requests[0]["tools"]}
    assert set(offered) == {"tracker__list_issues", "builtin__read_file"}
    assert offered["tracker__list_issues"]["parameters"]["properties"]["limit"]["type"] == "integer"
    tool_msg = [m for m in chat_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "ISS-3" in tool_msg["content"]
    # the connection was closed when the run ended
    assert not catalog.mcp.connections["tracker"].connected
    finished = [e for e in events if e.kind == "tool_finished"]
    assert any(e.data.get("tool_name") == "tracker__list_issues" for e in finished)


async def test_pattern_matching_nothing_at_run_time_names_it(tmp_path, chat_server):
    cfg_path = write_config(tmp_path, chat_server.config_text() + mcp_toml())
    cfg = load_config(cfg_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    plan = load_plan_text(
        PLAN_UNCONFIGURED.replace("linear__*", "tracker__nothing_like_this_*"), "p.yaml"
    )
    result = await api.run(plan, {}, config=cfg, workspace=tmp_path)
    assert result.status == "error"
    assert result.error["code"] == "validation"
    assert "'tracker__nothing_like_this_*'" in result.error["message"]
    assert result.error["step_path"] == "E1"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamable_http_server(tmp_path):
    import socket
    import subprocess

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        text_ = f'[mcp.web]\nurl = "http://127.0.0.1:{port}/mcp"\nheaders = {{ X-Token = "${{TOK}}" }}\n'
        cfg = load_config(write_config(tmp_path, text_), env={"TOK": "t"})
        catalog = build_catalog(cfg, entry_points=False)
        await catalog.prepare(["web__add"])
        ctx = ToolContext(workspace=tmp_path)
        assert await catalog.get("web__add").func({"a": 1, "b": 4}, ctx) == 5
        with pytest.raises(RunError, match="boom"):
            await catalog.get("web__fail").func({"message": "boom"}, ctx)
        await catalog.aclose()
        assert not catalog.mcp.connections["web"].connected
    finally:
        proc.terminate()
        proc.wait(timeout=10)
