"""What a command imports (issue 35, docs/decisions.md "Start-up"): a plain `flowc check` or
`flowc run` never loads the durable engine (DBOS, SQLAlchemy, psycopg) nor jsonschema, and
`flowc runs` of a project with no database loads none of them either. Each case runs flowc in
a fresh process and reads its ``sys.modules`` at exit (no timing: bench/startup.py times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("sqlalchemy", "dbos", "psycopg", "jsonschema", "referencing", "pydantic")

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


def _imported(tmp_path: Path, *argv: str) -> tuple[list[str], str, str | None]:
    code = (
        "import sys, runpy, json\n"
        f"sys.argv = ['flowc', *{list(argv)!r}]\n"
        "code = 0\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "loader = sys.modules.get('pydantic.plugin._loader')\n"
        "plugins = None if loader is None else repr(loader._plugins)\n"
        "print('MODULES', json.dumps([code, heavy, plugins]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
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
    assert heavy == ["pydantic"]
    assert plugins == "{}"  # flowc's preset: no scan of the installed packages for plugins


def test_runs_without_a_database_loads_no_durable_engine(tmp_path):
    heavy, _, _ = _imported(tmp_path, "runs")
    assert heavy == ["pydantic"]


def test_a_wrong_input_still_gets_jsonschema_messages(tmp_path):
    (tmp_path / "plain.flow").write_text(FLOW)
    proc = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "plain.flow", "--input", '{"x": "one"}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "'one' is not of type 'integer'" in proc.stderr


def test_the_pydantic_plugin_cache_flowc_presets_is_where_pydantic_reads_it():
    import inspect

    from pydantic.plugin import _loader

    assert hasattr(_loader, "_plugins")  # flowc sets it to {} so no entry-point scan happens
    assert "_plugins is None" in inspect.getsource(_loader.get_plugins)
