"""What a command imports (issue 35, docs/decisions.md "Start-up"): a plain `flowc check` or
`flowc run` never loads the durable engine (DBOS, SQLAlchemy, psycopg) nor jsonschema, and
`flowc runs` of a project with no database loads none of them either; a fresh agent task (an
agent that calls a tool, then answers, against a scripted provider on loopback) loads neither
httpx's command-line client (rich, pygments) nor OpenTelemetry; `flowc runs` and `flowc runs
show` of a durable run load neither the executor nor the model clients, the tools or telemetry
(issue 29: `runs show` of a 100,000-item map answers in under 2 s). Each case runs flowc in a
fresh process and reads its ``sys.modules`` at exit (no timing: bench/startup.py times)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from support.chat_server import completion, tool_calls

HEAVY = (
    *("sqlalchemy", "dbos", "psycopg", "jsonschema", "referencing", "pydantic"),
    *("rich", "pygments", "opentelemetry", "httpx", "mcp"),
)

FLOW = """\
flow plain "Add one"
input { x: int }

type Sum {
  /// the sum
  value: int @range(0, 100)
  note: text?
}

stage main -> Sum {
  return { value: input.x + 1, note: null }
}
"""


def _imported(
    tmp_path: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[list[str], str, str | None]:
    code = (
        "import sys, runpy, json\n"
        f"sys.argv = ['flowc', *{list(argv)!r}]\n"
        "code = 0\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "ours = [m for m in sys.modules if m.startswith(('agentflow.runtime.durable.', "
        "'agentflow.api_durable'))]\n"
        "heavy += sorted(ours)\n"
        "loader = sys.modules.get('pydantic.plugin._loader')\n"
        "plugins = None if loader is None else repr(loader._plugins)\n"
        "print('MODULES', json.dumps([code, heavy, plugins]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("MODULES ")]
    assert line, proc.stdout + proc.stderr
    exit_code, heavy, plugins = json.loads(line[-1][len("MODULES ") :])
    assert exit_code in (0, None), proc.stdout + proc.stderr
    return heavy, proc.stdout, plugins


def test_check_and_run_of_a_plain_flow_load_no_durable_engine_and_no_jsonschema(tmp_path):
    (tmp_path / "plain.flow").write_text(FLOW)
    heavy, _, _ = _imported(tmp_path, "check", "plain.flow")
    assert heavy == []  # the front end alone: not even pydantic
    heavy, out, plugins = _imported(tmp_path, "run", "plain.flow", "--input", '{"x": 1}')
    assert '"value": 2' in out
    assert heavy == ["pydantic"]  # and no module of the durable runtime (agentflow's own)
    assert plugins == "{}"  # flowc's preset: no scan of the installed packages for plugins


def test_runs_without_a_database_loads_no_durable_engine(tmp_path):
    heavy, _, _ = _imported(tmp_path, "runs")
    assert [m for m in heavy if not m.startswith("agentflow.")] == ["pydantic"]


def test_a_wrong_input_still_gets_its_messages_in_the_flows_terms(tmp_path):
    (tmp_path / "plain.flow").write_text(FLOW)
    proc = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "plain.flow", "--input", '{"x": "one"}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert '`input.x` is "one", but the flow\'s input type wants `int` here' in proc.stderr


def test_the_pydantic_plugin_cache_flowc_presets_is_where_pydantic_reads_it():
    import inspect

    from pydantic.plugin import _loader

    assert hasattr(_loader, "_plugins")  # flowc sets it to {} so no entry-point scan happens
    assert "_plugins is None" in inspect.getsource(_loader.get_plugins)


AGENT_FLOW = """\
flow triage "Triage a bug"
input { title: text }

type Finding {
  file: path
  reason: text
}

use agent "finder" as finder

stage find -> Finding {
  return agent(finder) {
    task "Find the file that causes: ${input.title}"
    tools [read_file]
    expect Finding
  }
}
"""


def test_a_fresh_agent_task_loads_no_console_library_no_telemetry_and_no_durable_engine(
    tmp_path, chat_server
):
    answer = {"file": "src/config.py", "reason": "no default"}
    chat_server.script(
        [tool_calls(("read_file", {"path": "src/config.py"})), completion(json.dumps(answer))]
    )
    chat_server.write_config(tmp_path)
    (tmp_path / "agent.flow").write_text(AGENT_FLOW)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.py").write_text("def load(data):\n    return data['name']\n")
    env = dict(os.environ, SCRIPTED_API_KEY="k" * 20, NO_COLOR="1")
    heavy, out, _ = _imported(tmp_path, "run", "agent.flow", "--input", '{"title": "x"}', env=env)
    assert '"reason": "no default"' in out
    assert heavy == ["httpx", "pydantic"]  # httpx without its CLI: no rich, no pygments
    assert len(chat_server.requests) == 2


def test_the_httpx_command_line_flowc_defers_is_where_httpx_imports_it():
    import inspect

    import httpx

    source = inspect.getsource(httpx)
    # flowc's stand-in for httpx._main (cli._HttpxCliOnCall) relies on this import, guarded
    assert "try:\n    from ._main import main\nexcept ImportError:" in source


def test_httpx_main_in_a_flowc_process_still_runs_httpx_s_own_command_line(tmp_path):
    code = (
        "import agentflow.cli, httpx, sys\n"
        "assert 'rich' not in sys.modules\n"
        "try:\n    httpx.main(['--help'])\n"
        "except SystemExit as e:\n    print('EXIT', e.code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "EXIT 0" in proc.stdout, proc.stdout + proc.stderr
    assert "Usage" in proc.stdout  # httpx's own help, printed by its CLI


GC_FLOW = """\
extern tool user__collector() -> int[]

stage main -> int[] {
  return user__collector()
}
"""
GC_TOOLS = """\
import gc


def collector() -> list[int]:
    \"\"\"The collector's state: [enabled, objects frozen at start-up > 0].\"\"\"
    return [int(gc.isenabled()), int(gc.get_freeze_count() > 0)]
"""


def test_a_run_runs_with_the_collector_on_and_the_start_up_objects_frozen(tmp_path):
    (tmp_path / "gcstate.flow").write_text(GC_FLOW)
    (tmp_path / "probe.py").write_text(GC_TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["probe.py"]\n')
    code = (
        "import gc, sys, runpy\n"
        "sys.argv = ['flowc', 'run', 'gcstate.flow']\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "finally:\n    print('AFTER', int(gc.isenabled()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert json.loads(proc.stdout.split("AFTER")[0]) == [1, 1], proc.stdout + proc.stderr
    assert "AFTER 1" in proc.stdout


def test_every_other_command_runs_with_the_collector_on(tmp_path):
    code = (
        "import gc, sys, runpy\n"
        "import agentflow.cli as cli\n"
        "cli.main.add_command(cli.click.Command('probe', callback=lambda: print("
        "'ENABLED', int(gc.isenabled()))))\n"
        "sys.argv = ['flowc', 'probe']\n"
        "cli.main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "ENABLED 1" in proc.stdout, proc.stdout + proc.stderr


def test_a_caller_passing_its_arguments_keeps_its_collector_as_it_is(tmp_path):
    from click.testing import CliRunner

    from agentflow.cli import main

    (tmp_path / "plain.flow").write_text(FLOW)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "plain.flow"), "--input", '{"x": 1}'])
    assert result.exit_code == 0, result.output
    assert gc.isenabled()


MAP_TOOLS = """\
async def noop(i: int) -> int:
    \"\"\"Return i.\"\"\"
    return i
"""

MAP_PLAN = """\
version: 1
name: small_map
input_schema: {type: object, properties: {items: {type: array}}, required: [items]}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.items }}"
      do: {tool_name: user__noop, input: {i: "{{ item }}"}}
finish: {mode: output, output: "{{ E0 }}"}
"""

#: What running a step needs and reading a run does not (docs/decisions.md "What flowc runs
#: show loads"): the interpreter, the agent loop, the model clients, the tools' catalog
#: builder, telemetry, the durable engines' runtimes
RUNTIME_ONLY = (
    *("agentflow.runtime.executor", "agentflow.runtime.agent", "agentflow.runtime.agent_step"),
    *("agentflow.runtime.chat", "agentflow.runtime.control", "agentflow.runtime.effects"),
    *("agentflow.runtime.models.router", "agentflow.runtime.tools.build"),
    *("agentflow.runtime.telemetry", "agentflow.runtime.telemetry_spans"),
    *("agentflow.runtime.telemetry_settings", "agentflow.runtime.durable.engine"),
    *("agentflow.runtime.durable.dbos_engine", "agentflow.runtime.durable.spec"),
    *("agentflow.runtime.durable.temporal_engine", "agentflow.runtime.durable.execution"),
)


def _runtime_modules(tmp_path: Path, *argv: str) -> tuple[list[str], str]:
    code = (
        "import sys, runpy, json\n"
        f"sys.argv = ['flowc', *{list(argv)!r}]\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"print('MODULES', json.dumps(sorted(set(sys.modules) & set({RUNTIME_ONLY!r}))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("MODULES ")]
    assert line, proc.stdout + proc.stderr
    return json.loads(line[-1][len("MODULES ") :]), proc.stdout


def test_runs_and_runs_show_of_a_durable_run_load_no_executor_models_tools_or_telemetry(tmp_path):
    (tmp_path / "tools.py").write_text(MAP_TOOLS)
    (tmp_path / "map.yaml").write_text(MAP_PLAN)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    run = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "--durable", "--run-id", "m1", "map.yaml"]
        + ["--input", '{"items": [1, 2, 3]}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    loaded, out = _runtime_modules(tmp_path, "runs", "show", "m1")
    assert "E0/do.2" in out  # the map's items, in the .flow's terms
    assert loaded == []
    loaded, out = _runtime_modules(tmp_path, "runs")
    assert "m1" in out
    assert loaded == []


def test_check_of_a_flow_with_a_flow_toml_loads_the_configuration_model_only(tmp_path):
    """`flowc check` loads the flow.toml beside the flow (`invalid-config`): Pydantic and the
    configuration's model, not the executor, the model clients (httpx) or the durable engine."""
    (tmp_path / "plain.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text('[models]\ndefault = "openai:gpt-4o-mini"\n')
    code = (
        "import sys, runpy\n"
        "sys.argv = ['flowc', 'check', 'plain.flow']\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('MODULES', sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'httpx', 'dbos') and '.' not in m), "
        "'agentflow.runtime.executor' in sys.modules, 'agentflow.api_run' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "MODULES ['pydantic'] False False" in proc.stdout, proc.stdout + proc.stderr


def test_answer_and_cancel_on_a_database_load_no_parser(tmp_path):
    # they launch the durable engine on the database and read no plan: neither the `.flow`
    # front end nor the expression parser (lark) comes along (docs/decisions.md "Start-up of
    # answer and cancel")
    import sqlite3

    (tmp_path / ".flowc").mkdir()
    sqlite3.connect(tmp_path / ".flowc" / "durable.sqlite").close()
    code = (
        "import sys, runpy\n"
        "for argv in (['cancel', 'nope'], ['answer', 'nope', 'n', '3']):\n"
        "    sys.argv = ['flowc', *argv]\n"
        "    try:\n        runpy.run_module('agentflow', run_name='__main__')\n"
        "    except SystemExit:\n        pass\n"
        "tops = {m.split('.')[0] for m in sys.modules}\n"
        "ours = [m for m in sys.modules if m.startswith(('agentflow.grammar', 'agentflow.ir.lo'))]\n"
        "print('MODULES', 'dbos' in tops, 'lark' in tops, ours)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "no durable run 'nope'" in proc.stderr
    assert "MODULES True False []" in proc.stdout, proc.stdout + proc.stderr
