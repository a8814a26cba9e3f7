"""`flowc gen python examples/bug-triage.flow`: the generated client passes `mypy --strict`, a
program using it runs the demo's cassette and gets a `Triage`, and a misspelt field in a program
is a mypy error (docs/reference/python-clients.md)."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import REPO

from agentflow.cli import main
from agentflow.errors import InputError

EXAMPLES = REPO / "examples"
PROGRAMS = Path(__file__).parent / "gen_client"


def _client(tmp_path: Path) -> Path:
    """The generated client of bug-triage.flow and the two test programs, in ``tmp_path``."""
    module = tmp_path / "bug_triage.py"
    out = CliRunner().invoke(
        main, ["gen", "python", str(EXAMPLES / "bug-triage.flow"), "-o", str(module)]
    )
    assert out.exit_code == 0, out.output
    for program in PROGRAMS.glob("program*.py"):
        shutil.copy(program, tmp_path / program.name)
    return module


def test_generated_client_is_mypy_strict_clean_and_a_misspelt_field_is_an_error(tmp_path):
    _client(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"),
         "bug_triage.py", "program.py", "program_misspelt.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors, done.stdout + done.stderr
    # every error is a misspelt line's (none in the module or the correct program)
    lines = {f"program_misspelt.py:{n}" for n in (11, 15, 16)}
    assert {line.split(": error:")[0] for line in errors} <= lines, done.stdout
    assert any('"Triage" has no attribute "severty"' in line for line in errors), done.stdout
    # the output of output_or_raise() is precise (`str`, not `str | Any`), usage a TypedDict
    assert any('(expression has type "str", variable has type "int")' in e for e in errors)
    assert any('"Usage" has no key "inferencs"' in line for line in errors), done.stdout


def test_program_using_the_client_runs_the_demo_cassette_and_gets_a_triage(tmp_path, monkeypatch):
    _client(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("bug_triage", "program"):
        sys.modules.pop(name, None)
    program = importlib.import_module("program")
    client = importlib.import_module("bug_triage")
    triage = program.main(EXAMPLES)
    assert isinstance(triage, client.Triage)
    assert triage.severity == "high"
    assert [item.owner for item in triage.work] == ["backend", "frontend"]
    assert all(isinstance(item, client.WorkItem) for item in triage.work)


def test_a_dict_input_is_validated_into_the_input_model_and_a_wrong_one_names_its_field(
    tmp_path, monkeypatch
):
    """A plain dict given for the input model is validated into it — no pydantic
    `PydanticSerializationUnexpectedValue` warning, the run as with the model — and a dict that
    does not fit is an InputError naming the field, before anything runs."""
    _client(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("bug_triage", "program"):
        sys.modules.pop(name, None)
    program = importlib.import_module("program")
    client = importlib.import_module("bug_triage")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a serializer warning fails the test
        owners = program.main_from_a_dict(EXAMPLES)
    assert owners == ["backend", "frontend"]
    with pytest.raises(InputError) as e:
        client.run_bug_triage_sync({"title": "t", "bdy": "b"}, model="test")
    said = str(e.value)
    assert said.startswith("the input does not fit the flow's input type: "), said
    assert "body: field required" in said and "bdy: extra inputs are not permitted" in said
