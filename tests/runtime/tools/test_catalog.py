"""The full catalog (docs/spec/RUNTIME.md §4): stdlib schemas vs the prelude, ``user__*`` Python
tools (modules, files, entry points), ``plan__*`` tools (plans directory, sub-plans), host policy
and ``tool_denied`` in the agent loop, ``plan_and_execute`` never offered, and ``flowc tools``."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, text, tool_calls
from support.paths import TESTS

from agentflow import api
from agentflow.cli import main
from agentflow.errors import ConfigError, PlanLoadError, RunError
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog, schema_summary
from agentflow.runtime.tools.builtin import SCHEMAS
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.tools.user import function_tool, tool

# --------------------------------------------------------------------------- stdlib


def test_prelude_signatures_match_the_builtin_schemas():
    from agentflow.compiler.checker import prelude_tools

    sigs = prelude_tools()
    assert set(sigs) == set(SCHEMAS)
    for name, sig in sigs.items():
        schema = SCHEMAS[name]
        props = schema["properties"]
        required = set(schema.get("required", []))
        for param, (_type, optional) in sig.params.items():
            assert param in props, (name, param)
            assert (param not in required) == optional, (name, param)
        # the schema may offer models extra optional arguments, never extra required ones
        assert required <= set(sig.params), name
        assert schema["additionalProperties"] is False
        for prop in props.values():
            assert prop.get("type") in {"string", "integer", "boolean"}


async def test_read_file_window_and_cap(tmp_path, monkeypatch):
    from agentflow.runtime.tools import builtin

    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    catalog = build_catalog(None, entry_points=False)
    ctx = ToolContext(workspace=tmp_path)
    read = catalog.get("builtin__read_file").func
    assert await read({"path": "f.txt", "offset": 3, "limit": 2}, ctx) == "line 3\nline 4\n"
    monkeypatch.setattr(builtin, "MAX_READ_CHARS", 20)
    out = await read({"path": "f.txt"}, ctx)
    assert out.startswith("line 1\nline 2\nline 3")
    assert "[truncated: showing 20 of" in out and "offset=" in out


async def test_grep_regex_glob_max_results_line_numbers(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n# TODO one\n# todo two\n")
    (tmp_path / "b.md").write_text("TODO md\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.py").write_text("TODO git\n")
    catalog = build_catalog(None, entry_points=False)
    ctx = ToolContext(workspace=tmp_path)
    grep = catalog.get("builtin__grep").func
    assert await grep({"pattern": r"TODO\s+\w+", "glob": "*.py"}, ctx) == [
        {"path": "a.py", "line": 2, "text": "# TODO one"}
    ]
    hits = await grep({"pattern": "todo", "ignore_case": True}, ctx)
    assert [(h["path"], h["line"]) for h in hits] == [("a.py", 2), ("a.py", 3), ("b.md", 1)]
    assert len(await grep({"pattern": "o", "max_results": 2}, ctx)) == 2
    with pytest.raises(RunError, match="invalid regular expression"):
        await grep({"pattern": "("}, ctx)


# --------------------------------------------------------------------------- user tools

TOOLS_MODULE = '''
"""Project tools."""
from typing import Annotated, Literal

from pydantic import BaseModel, Field


class Query(BaseModel):
    text: str
    limit: int = 5


def search(q: Query, mode: Literal["fast", "deep"] = "fast") -> list[dict]:
    """Search the knowledge base.

    Args:
        q: The query.
        mode: How hard to look.
    """
    return [{"text": q.text, "mode": mode, "n": q.limit}]


async def shout(text: Annotated[str, Field(description="What to shout.")], times: int = 1) -> str:
    """Shout the text."""
    return (text.upper() + "!") * times


def where(ctx) -> str:
    """The workspace root."""
    return str(ctx.workspace)


def _helper():
    return 1
'''


def _project(tmp_path: Path, toml: str, modules: dict[str, str] | None = None) -> Path:
    for name, body in (modules or {}).items():
        file = tmp_path / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(body))
    path = tmp_path / "flow.toml"
    path.write_text(toml)
    return path


async def test_user_tools_from_a_module_and_a_file(tmp_path):
    cfg = load_config(
        _project(
            tmp_path,
            '[tools]\nmodules = ["proj_tools_a", "extra/more.py"]\nentry_points = false\n',
            {
                "proj_tools_a.py": TOOLS_MODULE,
                "extra/more.py": (
                    "from agentflow.runtime.tools.user import tool\n\n"
                    "@tool(name='double')\ndef twice(n: int) -> int:\n"
                    "    '''Double a number.'''\n    return 2 * n\n\n"
                    "def not_a_tool(x: int) -> int:\n    return x\n"
                ),
            },
        ),
        env={},
    )
    catalog = build_catalog(cfg)
    assert catalog.match("user__*") == [
        "user__double",
        "user__search",
        "user__shout",
        "user__where",
    ]
    search = catalog.get("user__search")
    assert search.source == "user"
    assert search.description == "Search the knowledge base."
    schema = search.input_schema
    assert "$defs" not in schema and "title" not in schema
    assert schema["properties"]["q"]["properties"]["text"] == {"type": "string"}
    assert schema["properties"]["q"]["description"] == "The query."
    assert schema["properties"]["mode"]["enum"] == ["fast", "deep"]
    assert schema["required"] == ["q"]
    shout = catalog.get("user__shout")
    assert shout.input_schema["properties"]["text"]["description"] == "What to shout."
    ctx = ToolContext(workspace=tmp_path)
    assert await search.func({"q": {"text": "hi"}}, ctx) == [{"text": "hi", "mode": "fast", "n": 5}]
    assert await shout.func({"text": "hé", "times": 2}, ctx) == "HÉ!HÉ!"
    assert await catalog.get("user__where").func({}, ctx) == str(tmp_path)
    assert "ctx" not in catalog.get("user__where").input_schema["properties"]
    assert await catalog.get("user__double").func({"n": 21}, ctx) == 42
    with pytest.raises(RunError) as info:
        await search.func({"q": {"limit": "x"}, "extra": 1}, ctx)
    assert info.value.code == "tool_error"
    assert "q.text: Field required" in info.value.message
    assert "extra: Extra inputs are not permitted" in info.value.message


EXITING_TOOLS = """\
import sys


def quits(code: int) -> int:
    sys.exit(code)


async def quits_async() -> int:
    sys.exit()


def interrupts() -> int:
    raise KeyboardInterrupt
"""


async def test_a_user_tool_that_exits_or_raises_keyboardinterrupt_is_a_tool_error(tmp_path):
    """A tool's own ``sys.exit()`` or ``KeyboardInterrupt`` fails its call (``tool_error``,
    saying what it did) instead of escaping the run as the process's exit or Ctrl-C."""
    cfg = load_config(
        _project(
            tmp_path,
            '[tools]\nmodules = ["exiting.py"]\nentry_points = false\n',
            {"exiting.py": EXITING_TOOLS},
        ),
        env={},
    )
    catalog = build_catalog(cfg)
    ctx = ToolContext(workspace=tmp_path)
    cases = [
        ("user__quits", {"code": 3}, "user__quits: it called sys.exit(3)"),
        ("user__quits_async", {}, "user__quits_async: it called sys.exit()"),
        ("user__interrupts", {}, "user__interrupts: it raised KeyboardInterrupt"),
    ]
    for name, args, message in cases:
        with pytest.raises(RunError) as info:
            await catalog.get(name).func(args, ctx)
        assert (info.value.code, info.value.message) == ("tool_error", message)


def test_user_tool_import_errors_are_config_errors(tmp_path):
    cfg = load_config(
        _project(tmp_path, '[tools]\nmodules = ["no_such_module_xyz"]\nentry_points = false\n'),
        env={},
    )
    with pytest.raises(ConfigError, match="importing 'no_such_module_xyz' failed"):
        build_catalog(cfg)
    cfg = load_config(
        _project(tmp_path, '[tools]\nmodules = ["missing.py"]\nentry_points = false\n'), env={}
    )
    with pytest.raises(ConfigError, match="'missing.py' not found"):
        build_catalog(cfg)


def _tools_dir(tmp_path, module: str, body: str):
    (tmp_path / module).write_text(body)
    (tmp_path / "flow.toml").write_text(
        f'# tools\n[tools]\nentry_points = false\nmodules = ["{module}"]\n'
    )
    return tmp_path


@pytest.mark.parametrize(
    "body, why",
    [
        ("import sys\nsys.exit(3)\n", "it called sys.exit(3)"),
        ("raise SystemExit\n", "it called sys.exit()"),
        ("raise GeneratorExit('x')\n", "GeneratorExit: x"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ],
)
def test_user_module_failing_at_import_is_a_config_error(tmp_path, monkeypatch, body, why):
    _tools_dir(tmp_path, "m.py", body)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["tools"])
    assert res.exit_code == 1, res.output
    assert (
        f"error: {tmp_path / 'flow.toml'}:4:1: [tools] modules: importing 'm.py' failed: {why}"
        in res.stderr
    )


def test_user_module_with_unsupported_annotation_names_the_function(tmp_path):
    from agentflow.runtime.config import load_config
    from agentflow.runtime.tools.build import build_catalog

    _tools_dir(
        tmp_path,
        "ann.py",
        "import socket\n\ndef f(s: socket.socket, n: int = 1) -> int:\n    return 1\n",
    )
    config = load_config(tmp_path / "flow.toml", env={})
    with pytest.raises(ConfigError) as exc:
        build_catalog(config)
    assert str(exc.value) == (
        f"{tmp_path / 'flow.toml'}:4:1: [tools] modules: 'ann.py': tool function `f`: "
        "`s: socket.socket` cannot become a JSON Schema input; annotate parameters with JSON "
        "types (str, int, float, bool, list[...], dict[str, ...]), Optional, Literal or a "
        "pydantic model"
    )


def test_entry_point_group(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "ep_tools_pkg").mkdir(parents=True)
    (site / "ep_tools_pkg" / "__init__.py").write_text(
        "def lookup(key: str) -> str:\n    '''Look a key up.'''\n    return key[::-1]\n"
    )
    dist = site / "ep_tools_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-tools-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[agentflow.tools]\nreverse = ep_tools_pkg:lookup\nwhole = ep_tools_pkg\n"
    )
    monkeypatch.syspath_prepend(str(site))
    catalog = build_catalog(None)
    assert catalog.get("user__reverse").description == "Look a key up."
    assert catalog.get("user__lookup") is not None  # the module entry point's functions
    assert build_catalog(None, entry_points=False).get("user__reverse") is None


def test_function_tool_decorator_keeps_function():
    @tool(description="Custom.")
    def f(a: int, b: list[str] | None = None) -> int:
        return a

    assert f(3) == 3
    t = function_tool(f)
    assert t.name == "user__f" and t.description == "Custom."
    assert schema_summary(t.input_schema) == "a: integer, b?: array|null"


# --------------------------------------------------------------------------- plan tools

SUB_PLAN = """
version: 1
name: summarize
description: Summarize a text in one line.
input_schema:
  type: object
  properties: { text: { type: string } }
  required: [text]
steps:
  - id: S1
    tool_name: user__upper
    input: { text: "{{ input.text }}" }
finish: { mode: output, output: "{{ S1 }}" }
"""

MAIN_PLAN = """
version: 1
name: main
steps:
  - id: E1
    tool_name: plan__summarize
    input: { text: "hello" }
  - id: E2
    tool_name: agent
    input:
      prompt: Summarize
      output_schema: { type: object }
      tools: ["plan__*"]
plans:
  local_helper:
    name: local_helper
    steps:
      - id: H1
        tool_name: user__upper
        input: { text: "x" }
"""


async def test_plans_directory_and_sub_plans_are_tools(tmp_path, chat_server):
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "summarize.yaml").write_text(SUB_PLAN)
    (tmp_path / "plans" / "README.txt").write_text("not a plan")
    (tmp_path / "tools_up.py").write_text(
        "def upper(text: str) -> str:\n    '''Upper-case.'''\n    return text.upper()\n"
    )
    cfg_path = tmp_path / "flow.toml"
    cfg_path.write_text(
        chat_server.config_text() + '[tools]\nmodules = ["tools_up.py"]\nentry_points = false\n'
    )
    cfg = load_config(cfg_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    plan = load_plan_text(MAIN_PLAN, "main.yaml")
    catalog = build_catalog(cfg, plan=plan)
    summarize = catalog.get("plan__summarize")
    assert summarize.source == "plan"
    assert summarize.description == "Summarize a text in one line."
    assert summarize.input_schema["required"] == ["text"]
    assert catalog.get("plan__local_helper") is not None
    chat_server.script([tool_calls(("plan__summarize", {"text": "abc"})), text("{}")])
    result = await api.run(plan, {}, config=cfg, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.results["E1"] == "HELLO"
    offered = {t["function"]["name"]: t["function"] for t in chat_server.requests[0]["tools"]}
    assert set(offered) >= {"plan__summarize", "plan__local_helper"}
    assert offered["plan__summarize"]["parameters"]["required"] == ["text"]
    tool_msg = [m for m in chat_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "ABC" in tool_msg["content"]
    # [plans] dir pointing nowhere is a config error
    cfg_path.write_text('[plans]\ndir = "nowhere"\n')
    with pytest.raises(ConfigError, match="is not a directory"):
        build_catalog(load_config(cfg_path, env={}))


def test_unknown_plan_tool_fails_validation(tmp_path):
    cfg = load_config(_project(tmp_path, ""), env={})
    plan = load_plan_text(MAIN_PLAN.replace("plan__summarize", "plan__summarise"), "main.yaml")
    from agentflow.runtime.tools.build import check_plan_tools

    with pytest.raises(PlanLoadError, match="unknown tool 'plan__summarise'"):
        check_plan_tools(plan, build_catalog(cfg, plan=plan, entry_points=False))


# --------------------------------------------------------------------------- policy

POLICY_PLAN = """
version: 1
name: pol
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: Do things
      output_schema: { type: object }
      %s
"""


async def _run_policy(tmp_path, chat_server, policy: str, agent_extra: str, script):
    cfg_path = tmp_path / "flow.toml"
    cfg_path.write_text(chat_server.config_text() + policy)
    cfg = load_config(cfg_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    chat_server.script(script)
    start = len(chat_server.requests)
    plan = load_plan_text(POLICY_PLAN % agent_extra, "pol.yaml")
    result = await api.run(plan, {}, config=cfg, workspace=tmp_path)
    offered = sorted(t["function"]["name"] for t in chat_server.requests[start].get("tools") or [])
    return result, offered


async def test_request_intersect_policy_and_tool_denied_in_the_loop(tmp_path, chat_server):
    (tmp_path / "a.txt").write_text("A")
    result, offered = await _run_policy(
        tmp_path,
        chat_server,
        '[policy]\nallowed_tools = ["builtin__read_file", "builtin__list_dir"]\n',
        'tools: ["builtin__*"]',
        [
            tool_calls(
                ("builtin__grep", {"pattern": "A"}),
                ("plan_and_execute", {"goal": "x"}),
                ("builtin__read_file", {"path": "a.txt"}),
            ),
            text('{"done": true}'),
        ],
    )
    assert offered == ["builtin__list_dir", "builtin__read_file"]
    assert result.status == "ok", result.error
    results = {
        m["tool_call_id"]: m["content"]
        for m in chat_server.requests[1]["messages"]
        if m["role"] == "tool"
    }
    contents = list(results.values())
    assert any("tool_denied" in c and "builtin__grep" in c for c in contents)
    assert any("plan_and_execute is never available" in c for c in contents)
    assert "A" in contents


async def test_default_policy_leaves_write_tools_out_unless_write_scope(tmp_path, chat_server):
    _, offered = await _run_policy(tmp_path, chat_server, "", "tools: null", [text("{}")])
    assert "builtin__write_file" not in offered and "builtin__read_file" in offered
    assert "plan_and_execute" not in offered
    (tmp_path / "out").mkdir()
    result, offered = await _run_policy(
        tmp_path,
        chat_server,
        "",
        'tools: ["builtin__*"]\n      write: ["out"]',
        [
            tool_calls(
                ("builtin__write_file", {"path": "out/ok.md", "content": "ok"}),
                ("builtin__write_file", {"path": "elsewhere.md", "content": "no"}),
            ),
            text("{}"),
        ],
    )
    assert "builtin__write_file" in offered and "builtin__edit_file" in offered
    assert (tmp_path / "out" / "ok.md").read_text() == "ok"
    assert not (tmp_path / "elsewhere.md").exists()
    contents = [m["content"] for m in chat_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("write_scope" in c for c in contents)


OUTLINED = """\
type Out { ok: bool }
input { xs: int[] }
use agent "coder" as coder
stage s -> json {
  let sizes = map input.xs as x {
    let a = read_file(path: "a.txt")
    read_file(path: "a.txt").count + a.count + x
  }
  let free = agent(coder) { task "no tools clause" expect Out }
  let named = agent(coder) { task "asks for the sub-plans" tools ["plan__*"] expect Out }
  return { sizes: sizes, free: free, named: named }
}
"""


async def test_outlined_sub_plans_not_offered_when_tools_omitted(
    tmp_path, chat_server, scripted_config
):
    """docs/spec/LANGUAGE.md §10: the sub-plans flowc outlined are not offered to an agent whose
    `tools` is omitted; asking for them by name or pattern still offers them."""
    (tmp_path / "a.txt").write_text("abc", encoding="utf-8")
    src = tmp_path / "outlined.flow"
    src.write_text(OUTLINED, encoding="utf-8")
    plan = api.load(src)
    assert plan.plans, "the map body must be outlined for this test to mean anything"
    chat_server.script([text('{"ok": true}'), text('{"ok": true}')])
    result = await api.run(plan, {"xs": [1]}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output["sizes"] == [7]
    free = [t["function"]["name"] for t in chat_server.requests[0].get("tools", [])]
    named = [t["function"]["name"] for t in chat_server.requests[1].get("tools", [])]
    assert "builtin__read_file" in free
    assert not [n for n in free if n.startswith("plan__")], free
    # asking for them by name or pattern still works (request ∩ policy)
    assert named == [f"plan__{n}" for n in plan.plans]


HAND_WRITTEN = """\
version: 1
name: main
steps:
  - id: E0
    tool_name: agent
    input:
      prompt: use what you have
      output_schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}
plans:
  helper:
    version: 1
    name: helper
    description: a sub-plan written by hand
    steps:
      - {id: H0, tool_name: value, input: {value: 1}}
"""


async def test_hand_written_sub_plans_are_offered_when_tools_omitted(
    tmp_path, chat_server, scripted_config
):
    """docs/spec/RUNTIME.md §4: `plan__*` covers every sub-plan; only outlined ones are held
    back."""
    f = tmp_path / "main.plan.yaml"
    f.write_text(HAND_WRITTEN, encoding="utf-8")
    chat_server.script([text('{"ok": true}')])
    result = await api.run(str(f), {}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    offered = [t["function"]["name"] for t in chat_server.requests[0].get("tools", [])]
    assert "plan__helper" in offered, offered


# --------------------------------------------------------------------------- flowc tools


def test_flowc_tools_lists_every_source(tmp_path, monkeypatch):
    from agentflow.cli import main

    server = TESTS / "support" / "mcp_server.py"
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "summarize.yaml").write_text(SUB_PLAN)
    cfg = _project(
        tmp_path,
        '[tools]\nmodules = ["proj_tools_b"]\nentry_points = false\n'
        f"[mcp.tracker]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(server))}]\n",
        {"proj_tools_b.py": TOOLS_MODULE},
    )
    runner = CliRunner()
    res = runner.invoke(main, ["tools", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(ln.startswith("builtin__read_file") and "builtin" in ln for ln in lines)
    assert any(ln.startswith("tracker__add ") and "mcp:tracker" in ln for ln in lines)
    assert any(
        ln.startswith("user__search ") and "Search the knowledge base." in ln for ln in lines
    )
    assert any(ln.startswith("plan__summarize ") and "plan" in ln for ln in lines)
    assert "(a: integer, b: integer)" in res.output
    res = runner.invoke(main, ["tools", "--config", str(cfg), "--json", "--no-connect"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["tracker__*"]["description"] == "(not connected)"
    assert rows["builtin__grep"]["input_schema"]["required"] == ["pattern"]


def test_plan_cycle_across_the_plans_directory(tmp_path):
    from agentflow.runtime.tools.build import check_plan_tools

    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "ping.yaml").write_text(
        "version: 1\nname: ping\nsteps:\n  - id: P1\n    tool_name: plan__pong\n    input: {}\n"
    )
    (tmp_path / "plans" / "pong.yaml").write_text(
        "version: 1\nname: pong\nsteps:\n  - id: Q1\n    tool_name: plan__ping\n    input: {}\n"
    )
    cfg = load_config(_project(tmp_path, ""), env={})
    plan = load_plan_text(
        "version: 1\nname: top\nsteps:\n  - id: T1\n    tool_name: plan__ping\n    input: {}\n",
        "top.yaml",
    )
    with pytest.raises(PlanLoadError, match="cycle"):
        check_plan_tools(plan, build_catalog(cfg, plan=plan, entry_points=False))


def test_unconfigured_mcp_tool_of_a_compiled_flow_is_reported_at_its_source(tmp_path):
    """A `.flow` compiled in memory has no plan file: the problem points into the `.flow`."""
    import agentflow
    from agentflow.errors import PlanLoadError

    flow = tmp_path / "needs_mcp.flow"
    flow.write_text(
        "extern tool linear__list_issues(team: text) -> json\n"
        "stage s -> json {\n"
        '  return linear__list_issues(team: "core")\n'
        "}\n",
        encoding="utf-8",
    )
    with pytest.raises(PlanLoadError) as info:
        agentflow.run_sync(str(flow), {}, workspace=str(tmp_path))
    text = str(info.value.errors[0])
    assert text.startswith(f"{flow}:3:10: step "), text
    assert "needs MCP server 'linear'" in text


def test_an_unknown_user_tool_says_where_user_tools_come_from(tmp_path):
    import agentflow
    from agentflow.errors import PlanLoadError
    from agentflow.runtime.config import load_config

    flow = tmp_path / "hello.flow"
    flow.write_text(
        'extern tool user__shout(text: text) -> text\nstage s -> text { return user__shout(text: "hi") }\n',
        encoding="utf-8",
    )
    toml = tmp_path / "flow.toml"
    toml.write_text('[tools]\nmodules = ["other.py"]\n', encoding="utf-8")
    (tmp_path / "other.py").write_text("def whisper(text: str) -> str:\n    return text\n")
    with pytest.raises(PlanLoadError) as info:
        agentflow.run_sync(str(flow), {}, config=str(toml), workspace=str(tmp_path))
    assert f"`[tools] modules` in {toml} (listed: other.py)" in str(info.value.errors[0])
    toml.unlink()
    bare = load_config(cwd=tmp_path, env={})
    if bare.path is None:  # no flow.toml above the temp dir on this machine
        with pytest.raises(PlanLoadError) as info:
            agentflow.run_sync(str(flow), {}, config=bare, workspace=str(tmp_path))
        assert "no flow.toml was found" in str(info.value.errors[0])


@pytest.mark.parametrize(
    ("schema", "flow"),
    [
        ({"type": "string"}, "text"),
        ({"type": "string", "x-flow-type": "path"}, "path"),
        ({"type": ["integer", "null"]}, "int?"),
        ({"enum": ["fast", "deep"]}, '"fast" | "deep"'),
        ({"type": "array", "items": {"type": "number"}}, "number[]"),
        (
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            "(text | int)[]",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "boolean"}, "b": {}},
                "required": ["a"],
            },
            "{ a: bool, b: json }",
        ),
        ({"type": "object"}, "json"),
        ({"not": {}}, "json"),
    ],
)
def test_flow_type_of_schema(schema, flow):
    from agentflow.compiler.contracts import flow_type_of_schema

    assert flow_type_of_schema(schema) == flow


def test_tools_extern_prints_declarations_that_check_clean(tmp_path):
    """`flowc tools --extern`: paste-ready `extern tool` lines for user tools (typed from their
    annotations), which the checker accepts and then types calls with."""
    from click.testing import CliRunner

    from agentflow.cli import main
    from agentflow.compiler.api import check_source

    (tmp_path / "tools.py").write_text(
        "from typing import Literal\n\n"
        "def search(q: str, mode: Literal['fast', 'deep'] = 'fast', limit: int | None = None)"
        " -> list:\n"
        '    """Search the knowledge base."""\n'
        "    return []\n",
        encoding="utf-8",
    )
    toml = tmp_path / "flow.toml"
    toml.write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["tools", "--extern", "--config", str(toml)])
    assert res.exit_code == 0, res.output
    assert "// Search the knowledge base." in res.output
    decl = [line for line in res.output.splitlines() if line.startswith("extern tool user__search")]
    assert decl == [
        'extern tool user__search(q: text, mode?: "fast" | "deep", limit?: int?) -> json[]'
    ]  # the result typed from `-> list` (issue 36)
    src = res.output + 'stage s -> json {\n  return user__search(q: "x", mode: "deep")\n}\n'
    assert check_source(src, "t.flow").diagnostics == []
    bad = res.output + 'stage s -> json {\n  return user__search(q: 1, mode: "slow")\n}\n'
    codes = {d.code for d in check_source(bad, "t.flow").diagnostics}
    assert "type-mismatch" in codes  # the declaration now types the calls


def test_tools_extern_with_nothing_to_declare_says_where_tools_come_from(tmp_path):
    toml = tmp_path / "flow.toml"
    toml.write_text("", encoding="utf-8")
    res = CliRunner().invoke(main, ["tools", "--extern", "--config", str(toml)])
    assert res.exit_code == 0, res.output
    assert res.stdout == ""
    assert "no tools to declare" in res.stderr
    assert "`[tools] modules`" in res.stderr and "`[mcp.NAME]`" in res.stderr
    (tmp_path / "tools.py").write_text("def f(x: int) -> int:\n    return x\n", encoding="utf-8")
    toml.write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["tools", "--extern", "--config", str(toml)])
    assert "extern tool user__f(x: int) -> int" in res.stdout
    assert "no tools to declare" not in res.stderr


def test_extern_declaration_of_odd_schemas_checks_clean_and_stays_on_its_line():
    """Schemas as an MCP server may send them: string enums with `${…}`, NUL, CR and U+2028
    (escaped as `.flow` strings, one line), an unknown `x-flow-type` (not a declared type here),
    malformed `type`/`required` (no TypeError), a parameter name with a newline (one comment
    line), a description with ANSI escapes (shown escaped, never sent to the terminal)."""
    from agentflow.compiler.api import check_source
    from agentflow.compiler.contracts import extern_declaration

    enum = {"enum": ["${HOME}", "a\x00b", "c\rd", "\u2028", 'q"\\', "x", "x"]}
    schema = {
        "type": "object",
        "properties": {
            "m": enum,
            "w": {"type": "string", "x-flow-type": "Widget"},
            "d": {"x-flow-type": {"odd": 1}, "type": {"bad": 1}},
            "o": {"type": "object", "properties": {"k": {"type": "string"}}, "required": [{}]},
        },
        "required": ["m", 5],
    }
    decl = extern_declaration("mcp__odd", schema, "\x1b[31mred\x1b[0m")
    assert decl.splitlines() == [
        "// \\u{1b}[31mred\\u{1b}[0m",
        'extern tool mcp__odd(m: "\\${HOME}" | "a\\u{0}b" | "c\\u{d}d" | "\\u{2028}" | "q\\"\\\\"'
        ' | "x", w?: text, d?: json, o?: { k: text? }) -> json',
    ]
    assert check_source(decl + "\nstage s -> json {\n  return 1\n}\n", "t.flow").diagnostics == []
    with pytest.raises(ValueError) as info:  # a required parameter .flow cannot name
        extern_declaration("mcp__p", {"properties": {"p\nq": {}}, "required": ["p\nq"]})
    assert "\n" not in str(info.value)
    # an optional one is left out, said in a comment line
    decl = extern_declaration("mcp__p", {"properties": {"p\nq": {}, "r": {"type": "integer"}}})
    assert decl.splitlines() == [
        "// (left out: optional parameters p\\u{a}q)",
        "extern tool mcp__p(r?: int) -> json",
    ]
