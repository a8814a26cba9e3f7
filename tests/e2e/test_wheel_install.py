"""The installable package: ``python -m build`` makes an sdist and a wheel (the wheel built from
the sdist, so both are complete), and the wheel, installed into a fresh virtual environment,
checks, compiles and runs a flow from a directory outside the repository.

The build works on a copy of the tracked files (nothing of the working tree's ``build/`` or
``*.egg-info`` leaks in) without build isolation (offline: the test extra brings ``build`` and
``setuptools``).  The new venv gets the wheel with ``--no-deps``; a ``.pth`` file lets it see the
test environment's site-packages for the dependencies, whose editable ``agentflow`` is *not*
visible that way (``.pth`` files inside a ``.pth``-added directory are not processed), and a test
asserts ``agentflow`` is imported from the new venv.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from support.paths import EXAMPLES
from support.paths import REPO as ROOT


def _tracked_files() -> list[str]:
    proc = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode:
        pytest.skip(f"not a git checkout: {proc.stderr.strip()}")
    return [f for f in proc.stdout.split("\0") if f and (ROOT / f).is_file()]


def _package_data() -> set[str]:
    """Every tracked file of the package that is not Python source (grammar, prelude, …)."""
    return {
        f.removeprefix("src/")
        for f in _tracked_files()
        if f.startswith("src/agentflow/") and not f.endswith(".py")
    }


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path | float]:
    """Build the sdist and the wheel once: ``{"sdist", "wheel", "seconds"}``."""
    tree = tmp_path_factory.mktemp("source")
    for f in _tracked_files():
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, tree / f)
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = out.glob("agentflow-*.whl")
    (sdist,) = out.glob("agentflow-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "seconds": seconds}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (``--no-deps``) that sees the test venv's
    dependencies; returns its ``bin`` directory."""
    home = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True)
    (purelib,) = home.glob("lib/python3*/site-packages")
    (purelib / "_test_dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n", encoding="utf-8"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install"]
        + ["--quiet", "--no-deps", "--no-index", "--disable-pip-version-check"]
        + [str(dist["wheel"])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return home / "bin"


def _env() -> dict[str, str]:
    """The environment of the installed tools: no model configuration, no PYTHONPATH."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_")) and k != "PYTHONPATH"
    }


def _run(bin_dir: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_wheel_and_sdist_hold_every_data_file_of_the_package(dist):
    data = _package_data()
    assert {"agentflow/grammar/flow.lark", "agentflow/stdlib/prelude.flow"} <= data
    assert "agentflow/py.typed" in data  # PEP 561: type checkers read the package
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "flowc = agentflow.cli:main" in wheel.read(entry_points).decode()
    assert data <= names, f"missing from the wheel: {sorted(data - names)}"
    with tarfile.open(dist["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"src/" + f for f in data} <= members
    assert {"README.md", "pyproject.toml"} <= members


def test_installed_agentflow_is_imported_from_the_new_venv(venv, tmp_path):
    proc = _run(venv, ["python", "-c", "import agentflow; print(agentflow.__file__)"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    where = Path(proc.stdout.strip()).resolve()
    assert where.is_relative_to(venv.parent.resolve()), where
    assert not where.is_relative_to(ROOT)


def test_installed_flowc_checks_compiles_and_replays_a_flow_outside_the_repository(venv, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("bug-triage.flow", "bug-report.json", "flow.toml", "bug-triage.cassette.jsonl"):
        shutil.copy2(EXAMPLES / name, project / name)
    shutil.copytree(EXAMPLES / "workspace", project / "workspace")

    version = _run(venv, ["flowc", "--version"], project)
    assert version.returncode == 0 and "0.1.0" in version.stdout

    check = _run(venv, ["flowc", "check", "bug-triage.flow"], project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no problems" in check.stderr

    compiled = _run(venv, ["flowc", "compile", "bug-triage.flow", "-o", "plan.yaml"], project)
    assert compiled.returncode == 0, compiled.stderr
    assert (project / "plan.yaml").read_text(encoding="utf-8").startswith("version: 1\n")

    validate = _run(venv, ["flowc", "plan", "validate", "plan.yaml"], project)
    assert validate.returncode == 0, validate.stderr

    run = _run(
        venv,
        ["flowc", "run", "bug-triage.flow", "--input", "@bug-report.json"]
        + ["--workspace", "workspace", "--replay", "bug-triage.cassette.jsonl", "--json"],
        project,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "ok"
    assert sorted(c["owner"] for c in result["output"]) == ["backend", "frontend"]
    assert result["usage"]["inferences"] > 0


def test_build_time_is_reported(dist):
    """Not a limit: the figure, for the record (``pytest -s`` prints it)."""
    print(f"sdist + wheel built in {dist['seconds']:.1f} s")
    assert dist["seconds"] > 0
