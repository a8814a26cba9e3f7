"""flowc's MCP client against real third-party servers: ``@modelcontextprotocol/server-everything``
(stdio and streamable HTTP) and ``server-filesystem`` (npm, from ``scripts/npm-tools.sh``),
``mcp-server-time`` and ``mcp-server-git`` (PyPI, the test extra).  Declarations come from
``flowc tools --extern`` and are compiled and run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, text
from support.npm_tools import (
    EVERYTHING,
    FILESYSTEM,
    NODE,
    free_port,
    need,
    python_server,
    start_everything_http,
)

from agentflow import api
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.tools.build import build_catalog
from agentflow.runtime.tools.catalog import effective_tools

FLOWC = Path(sys.executable).parent / "flowc"


def everything_stdio() -> str:
    return (
        "[mcp.everything]\n"
        f"command = {json.dumps(str(need(NODE)))}\n"
        f"args = [{json.dumps(str(need(EVERYTHING)))}]\n"
    )


def time_server() -> str:
    return (
        f'[mcp.time]\ncommand = {json.dumps(python_server("mcp_server_time"))}\nargs = ["-m", "mcp_server_time", '
        '"--local-timezone", "Europe/Oslo"]\n'
    )


def extern(tmp_path: Path) -> str:
    """``flowc tools --extern`` in ``tmp_path`` (its flow.toml): the declarations, no comments."""
    done = subprocess.run(
        [str(FLOWC), "tools", "--extern"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return "\n".join(ln for ln in done.stdout.splitlines() if not ln.startswith("//")) + "\n"


#: A call of every tool of server-everything (2026.8.31), through the `.flow` names `--extern`
#: gives them (`simulate-research-query` runs as an MCP task).
EVERYTHING_CALLS = {
    "echo": 'everything__echo(message: "hi")',
    "annotated": 'everything__get_annotated_message(messageType: "success", includeImage: true)',
    "env": "everything__get_env()",
    "links": "everything__get_resource_links(count: 2)",
    "reference": 'everything__get_resource_reference(resourceType: "Text", resourceId: 1)',
    "weather": 'everything__get_structured_content(location: "Chicago")',
    "sum": "everything__get_sum(a: 2, b: 3)",
    "image": "everything__get_tiny_image()",
    "gzip": 'everything__gzip_file_as_resource(name: "a.txt", data: "data:text/plain;base64,aGk=", '
    'outputType: "resource")',
    "logging": "everything__toggle_simulated_logging()",
    "subscriptions": "everything__toggle_subscriber_updates()",
    "elicitation": "everything__trigger_elicitation_request()",
    "long": "everything__trigger_long_running_operation(duration: 1, steps: 2)",
    "sampling": 'everything__trigger_sampling_request(prompt: "Say hi", maxTokens: 20)',
    "url": 'everything__trigger_url_elicitation(url: "https://example.com/consent")',
    "research": 'everything__simulate_research_query(topic: "rust")',  # an MCP task
    "prompt": 'everything__get_prompt(name: "simple-prompt")',
    "resource": 'everything__read_resource(uri: "demo://resource/static/document/architecture.md")',
}


def every_tool_flow(declarations: str) -> str:
    lets = "\n".join(f"  let {k} = {call}" for k, call in EVERYTHING_CALLS.items())
    fields = ", ".join(f"{k}: {k}" for k in EVERYTHING_CALLS)
    return f"{declarations}\nstage main {{\n{lets}\n  return {{ {fields} }}\n}}\n"


async def run_every_tool(tmp_path: Path, toml: str, chat_server) -> None:
    (tmp_path / "flow.toml").write_text(toml + chat_server.config_text(), encoding="utf-8")
    declarations = extern(tmp_path)
    # every tool is declared, also the twelve whose names are not .flow identifiers
    assert declarations.count("extern tool everything__") == 3  # echo, get_prompt, read_resource
    assert declarations.count('extern tool "everything__') == 15
    assert len(EVERYTHING_CALLS) == 3 + 15
    assert (
        'extern tool "everything__get-structured-content" as everything__get_structured_content('
        'location: "New York" | "Chicago" | "Los Angeles") -> { temperature: number, '
        "conditions: text, humidity: number }" in declarations
    )
    program = tmp_path / "every.flow"
    program.write_text(every_tool_flow(declarations), encoding="utf-8")
    chat_server.script([text("hi there")])
    events: list = []
    config = load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})
    result = await api.run(
        program,
        config=config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    out = result.output
    assert "hi" in json.dumps(out["echo"]) and "5" in json.dumps(out["sum"])
    assert out["weather"]["conditions"] and isinstance(out["weather"]["temperature"], int | float)
    # content blocks keep MCP's own field names
    image = next(b for b in out["image"] if b.get("type") == "image")
    assert image["mimeType"] == "image/png" and "mime_type" not in image
    # sampling went to the scripted model and counts in the run's usage
    assert "hi there" in json.dumps(out["sampling"])
    assert result.usage["inferences"] == 1
    # nobody can answer in a test run: the elicitation is declined, the URL one too
    assert "decline" in json.dumps(out["elicitation"]).lower()
    assert "decline" in json.dumps(out["url"]).lower()
    assert "Research Report: rust" in json.dumps(out["research"])
    kinds = {e.kind for e in events}
    assert {"mcp_server", "mcp_progress", "ask", "model_call"} <= kinds


async def test_every_tool_of_server_everything_is_callable_from_flow_over_stdio(
    tmp_path, chat_server
):
    await run_every_tool(tmp_path, everything_stdio(), chat_server)


@pytest.mark.battery  # README.md "The battery tier"
async def test_every_tool_of_server_everything_is_callable_from_flow_over_http(
    tmp_path, chat_server
):
    port = free_port()
    proc = start_everything_http(port)
    try:
        toml = f'[mcp.everything]\nurl = "http://127.0.0.1:{port}/mcp"\n'
        await run_every_tool(tmp_path, toml, chat_server)
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_task_only_tool_runs_as_an_mcp_task_and_its_question_reaches_the_user(tmp_path):
    from agentflow.runtime.executor import Hooks
    from agentflow.runtime.tools.catalog import RunServices, ToolContext, current_run

    (tmp_path / "flow.toml").write_text(everything_stdio(), encoding="utf-8")
    catalog = build_catalog(load_config(tmp_path / "flow.toml", env={}), entry_points=False)
    asked = []

    def interlocutor(request):
        asked.append(request)
        return "historical"

    hooks = Hooks(interlocutor=interlocutor)
    token = current_run.set(RunServices(emit=lambda *a: None, interlocutor=hooks.interlocutor))
    try:
        await catalog.prepare(["everything__*"])
        name = "everything__simulate-research-query"
        tool = catalog.get(name)
        assert tool.meta["needs_tasks"] is True
        assert name in effective_tools(catalog, ["everything__*"], None)  # it works: offered
        report = await tool.func({"topic": "rust", "ambiguous": True}, ToolContext(tmp_path))
        assert "Research Report: rust" in json.dumps(report)
        assert "historical" in json.dumps(report).lower()
        # the task's clarification came through the run's interlocutor, with its choices
        assert asked and asked[0].choices == ["technical", "historical", "current"]
    finally:
        current_run.reset(token)
        await catalog.aclose()


async def test_time_server_extern_types_check_against_real_calls(tmp_path):
    (tmp_path / "flow.toml").write_text(time_server(), encoding="utf-8")
    declarations = extern(tmp_path)
    assert (
        "extern tool time__get_current_time(timezone: text) -> { timezone: text, datetime: text, "
        "day_of_week: text, is_dst: bool }" in declarations
    )
    assert "extern tool time__convert_time(" in declarations
    assert "-> { source: { timezone: text" in declarations
    program = tmp_path / "now.flow"
    program.write_text(
        declarations
        + "stage main {\n"
        + '  let now = time__get_current_time(timezone: "Asia/Tokyo")\n'
        + '  let there = time__convert_time(source_timezone: "UTC", time: "12:00", '
        + 'target_timezone: "Asia/Tokyo")\n'
        + "  return { zone: now.timezone, dst: now.is_dst, hour: there.target.datetime }\n"
        + "}\n",
        encoding="utf-8",
    )
    check = subprocess.run(
        [str(FLOWC), "check", str(program)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0 and "no problems" in check.stdout + check.stderr, check.stderr
    result = await api.run(program, config=tmp_path / "flow.toml", shape_cache=False)
    assert result.status == "ok", result.error
    assert result.output["zone"] == "Asia/Tokyo" and result.output["dst"] is False
    assert "T21:00" in result.output["hour"]  # 12:00 UTC is 21:00 in Tokyo


async def test_a_wrong_declared_result_type_fails_the_step_naming_the_tool(tmp_path):
    (tmp_path / "flow.toml").write_text(time_server(), encoding="utf-8")
    program = tmp_path / "wrong.flow"
    program.write_text(
        "extern tool time__get_current_time(timezone: text) -> { timezone: text, hour: int }\n"
        'stage main {\n  return time__get_current_time(timezone: "UTC")\n}\n',
        encoding="utf-8",
    )
    result = await api.run(program, config=tmp_path / "flow.toml", shape_cache=False)
    assert result.status == "error"
    assert result.error["code"] == "output_validation"
    assert "time__get_current_time" in result.error["message"]
    assert (
        "`result` lacks the required field `hour` of its declared type" in result.error["message"]
    )


async def test_plan_arguments_are_checked_against_the_input_schema_before_the_run(tmp_path):
    from agentflow.errors import PlanLoadError

    (tmp_path / "flow.toml").write_text(time_server(), encoding="utf-8")
    plan = tmp_path / "p.plan.yaml"
    plan.write_text(
        "version: 1\nname: p\nsteps:\n"
        "- id: E0\n  tool_name: time__get_current_time\n  input:\n    timezon: UTC\n",
        encoding="utf-8",
    )
    with pytest.raises(PlanLoadError) as info:
        await api.run(plan, config=tmp_path / "flow.toml", shape_cache=False)
    text_ = str(info.value)
    assert "p.plan.yaml:7:5" in text_ or "p.plan.yaml:7" in text_
    assert "has no parameter `timezon`" in text_ and "did you mean `timezone`" in text_
    assert "needs argument `timezone`" in text_


async def test_git_server_status_of_a_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "new.txt").write_text("x", encoding="utf-8")
    (tmp_path / "flow.toml").write_text(
        f'[mcp.git]\ncommand = {json.dumps(python_server("mcp_server_git"))}\nargs = ["-m", "mcp_server_git"]\n',
        encoding="utf-8",
    )
    declarations = extern(tmp_path)
    assert "extern tool git__git_status(repo_path: text) -> " in declarations
    program = tmp_path / "status.flow"
    program.write_text(
        declarations
        + f"stage main {{\n  return git__git_status(repo_path: {json.dumps(str(repo))})\n}}\n",
        encoding="utf-8",
    )
    result = await api.run(program, config=tmp_path / "flow.toml", shape_cache=False)
    assert result.status == "ok", result.error
    assert "new.txt" in json.dumps(result.output)


async def test_filesystem_server_reads_a_file_in_its_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\nhello\n", encoding="utf-8")
    (tmp_path / "flow.toml").write_text(
        "[mcp.fs]\n"
        f"command = {json.dumps(str(need(NODE)))}\n"
        f"args = [{json.dumps(str(need(FILESYSTEM)))}, {json.dumps(str(root))}]\n",
        encoding="utf-8",
    )
    declarations = extern(tmp_path)
    assert "extern tool fs__read_text_file(path: text, tail?: number, head?: number) -> " in (
        declarations
    )
    program = tmp_path / "read.flow"
    program.write_text(
        declarations
        + "stage main {\n"
        + f"  return fs__read_text_file(path: {json.dumps(str(root / 'notes.md'))})\n"
        + "}\n",
        encoding="utf-8",
    )
    result = await api.run(program, config=tmp_path / "flow.toml", shape_cache=False)
    assert result.status == "ok", result.error
    assert "hello" in json.dumps(result.output)


def test_a_server_that_is_not_installed_fails_the_test_naming_its_installer(tmp_path):
    """A missing npm server or Python server module fails the test that needs it (never a skip),
    saying which script installs it."""
    with pytest.raises(pytest.fail.Exception, match="scripts/npm-tools.sh"):
        need(EVERYTHING.parent / "no-such-server.js")
    with pytest.raises(pytest.fail.Exception, match="scripts/setup.sh"):
        python_server("mcp_server_that_is_not_installed")
