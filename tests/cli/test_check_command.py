"""`flowc check FILE|DIR… --format text|json|sarif` (issue #3, docs/spec/LANGUAGE.md §9): exit
codes, formats, `--warnings-as-errors`, and hostile files that must give diagnostics, never a
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.hostile import HOSTILE

from agentflow.cli import main

CLEAN = """\
type A { x: int }
stage s -> A { return { x: 1 } }
"""
WARN = """\
stage s -> int {
  let unused = 1
  return 2
}
"""
ERR = """\
type Item { owner: text }
stage s -> text {
  let it: Item = { owner: "a" }
  return it.ownr
}
"""


def run(*args: str):
    return CliRunner().invoke(main, ["check", *args])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"clean": CLEAN, "warn": WARN, "err": ERR}.items():
        p = tmp_path / f"{name}.flow"
        p.write_text(text)
        out[name] = p
    return out


def test_exit_codes(files, tmp_path):
    assert run(str(files["clean"])).exit_code == 0
    assert run(str(files["warn"])).exit_code == 0
    assert run(str(files["warn"]), "--warnings-as-errors").exit_code == 1
    assert run(str(files["clean"]), "--warnings-as-errors").exit_code == 0
    assert run(str(files["err"])).exit_code == 1
    # usage errors: missing file, unknown option, unknown format, no argument
    assert run(str(tmp_path / "nope.flow")).exit_code == 2
    assert run(str(files["clean"]), "--bogus").exit_code == 2
    assert run(str(files["clean"]), "--format", "xml").exit_code == 2
    assert run().exit_code == 2


def test_text_output_like_rustc(files):
    res = run(str(files["err"]))
    out = res.stdout
    path = str(files["err"])
    assert f"{path}:4:13: error[unknown-field]: `Item` has no field `ownr`" in out
    assert "4 |   return it.ownr" in out
    # carets under the whole span (4 characters of `ownr`)
    caret_line = [ln for ln in out.splitlines() if "^" in ln][0]
    assert caret_line.endswith("^^^^") and caret_line.count("^") == 4
    assert "= hint: did you mean `owner`?" in out
    assert "1 error(s), 0 warning(s) in 1 file(s)" in res.stderr


def test_json_fields(files):
    res = run(str(files["err"]), str(files["warn"]), "--format", "json")
    data = json.loads(res.stdout)
    assert {d["code"] for d in data} == {"unknown-field", "unused-variable"}
    for d in data:
        assert set(d) >= {
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "severity",
            "code",
            "message",
            "notes",
            "hint",
        }
    field = next(d for d in data if d["code"] == "unknown-field")
    assert (field["line"], field["column"], field["end_line"], field["end_column"]) == (
        4,
        13,
        4,
        17,
    )
    assert field["severity"] == "error" and field["hint"] == "did you mean `owner`?"
    assert res.exit_code == 1


def test_sarif(files):
    res = run(str(files["err"]), "--format", "sarif")
    log = json.loads(res.stdout)
    assert log["version"] == "2.1.0"
    run0 = log["runs"][0]
    assert run0["tool"]["driver"]["name"] == "flowc"
    result = run0["results"][0]
    assert result["ruleId"] == "unknown-field" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (4, 13, 17)


def test_directory_is_searched(files, tmp_path):
    res = run(str(tmp_path), "--format", "json")
    assert {Path(d["file"]).name for d in json.loads(res.stdout)} == {"err.flow", "warn.flow"}
    assert res.exit_code == 1


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_give_diagnostics_not_tracebacks(name, tmp_path):
    p = tmp_path / f"{name}.flow"
    p.write_bytes(HOSTILE[name])
    res = run(str(p), "--format", "json")
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    data = json.loads(res.stdout)
    if name == "huge-string" or name == "huge-name":  # valid programs, just big
        assert res.exit_code == 0
        return
    assert data, name
    assert res.exit_code == 1
    for d in data:
        assert d["line"] >= 1 and d["column"] >= 1


def test_hostile_files_through_the_real_command(tmp_path):
    """One subprocess run over all hostile files together: diagnostics, exit 1, no traceback."""
    for name, data in HOSTILE.items():
        (tmp_path / f"{name}.flow").write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "agentflow", "check", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "error[syntax-error]" in proc.stdout
    assert f"in {len(HOSTILE)} file(s)" in proc.stderr


def test_check_loads_no_runtime_or_plan_libraries(tmp_path):
    """`flowc check` runs in editors and CI: it must not import the runtime's libraries (pydantic,
    jsonschema, httpx, the MCP SDK) — they cost ~0.2 s of start-up (lazy exports, agentflow/_lazy.py)."""
    f = tmp_path / "a.flow"
    f.write_text(CLEAN, encoding="utf-8")
    probe = (
        "import sys\n"
        "from agentflow.cli import main\n"
        "try:\n"
        f"    main(['check', {str(f)!r}])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "heavy = ('pydantic', 'jsonschema', 'httpx', 'mcp', 'agentflow.runtime', 'agentflow.ir.models')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_lazy_package_exports_resolve():
    import agentflow
    import agentflow.ir

    for pkg in (agentflow, agentflow.ir):
        for name in pkg.__all__:
            assert getattr(pkg, name) is not None, name
        assert set(pkg.__all__) <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        agentflow.nope  # noqa: B018


def test_a_run_that_calls_no_model_does_not_import_httpx(tmp_path):
    """httpx (with its CLI's rich and pygments, ~0.1 s of every start) is imported where a model
    request is made, so `flowc run` of a plan without an agent step never loads it."""
    plan = tmp_path / "p.plan.yaml"
    plan.write_text(
        'version: 1\nname: p\nsteps:\n  - {id: E0, tool_name: value, input: {value: "hi"}}\n',
        encoding="utf-8",
    )
    probe = (
        "import sys\n"
        "from agentflow.cli import main\n"
        "try:\n"
        f"    main(['run', {str(plan)!r}])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "print(sorted(m for m in ('httpx', 'mcp', 'dbos') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_a_directory_without_flow_files_is_an_error_not_a_silent_pass(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a flow")
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "check", "empty"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: no .flow files in empty"
    assert done.stdout == ""


def test_the_report_on_stdout_ends_its_last_line_before_the_summary(tmp_path):
    """On a terminal stdout and stderr share the screen: the last diagnostic's line is ended on
    stdout, so the summary on stderr starts a line of its own (a file without a final newline,
    a last diagnostic with a hint or with none)."""
    texts = {
        "hint.flow": 'input { s: text }\nstage s -> int {\n  return match input.s { "a" => 1 }\n}',
        "nohint.flow": "input { s: text }\nstage s -> int {\n  return { a: 1,, b: 2 }\n}\n",
        "warn.flow": WARN,
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        res = run(str(tmp_path / name))
        assert res.stdout and res.stdout.endswith("\n") and not res.stdout.endswith("\n\n")
        assert res.stderr.strip().endswith("in 1 file(s)")
