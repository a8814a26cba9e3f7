"""A host that runs many durable runs starts the engine once (docs/reference/python-api.md "A
host that runs many durable runs"): ``api.open_durable`` launches it on the configured
database, every durable run after it uses it and leaves it running, ``api.shutdown_durable``
stops it; without it, each run starts and stops its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agentflow
from agentflow import api
from agentflow.errors import ConfigError
from agentflow.runtime.durable import database, dbos_launch

PLAN = """\
version: 1
name: notes
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 1}}
"""

TOOLS = '''\
from agentflow import tool


@tool
def note(n: int) -> int:
    """Return 2n."""
    return 2 * n
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "notes.yaml").write_text(PLAN)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    api.shutdown_durable()


def _launches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The database URLs the engine is launched on from now on."""
    seen: list[str] = []
    real = dbos_launch.launch

    def counting(url: str, *args, **kw):
        seen.append(url)
        return real(url, *args, **kw)

    monkeypatch.setattr(database, "launch", counting)
    return seen


def _run(project: Path, run_id: str):
    run = agentflow.run(
        project / "notes.yaml", {}, config=project / "flow.toml", durable=True, run_id=run_id
    )
    return asyncio.run(asyncio.wait_for(run, 30))


def test_runs_after_open_durable_share_one_engine_and_leave_it_running(project, monkeypatch):
    launches = _launches(monkeypatch)
    url = api.open_durable(config=project / "flow.toml")
    assert url == api.durable_database(config=project / "flow.toml")
    assert api.open_durable(config=project / "flow.toml") == url  # the same database: nothing
    for n in range(3):
        result = _run(project, f"host-{n}")
        assert result.status == "ok" and result.output == 2, result.error
        assert dbos_launch.launched_on() == url  # left running for the next run
    assert launches == [url]
    api.shutdown_durable()
    assert dbos_launch.launched_on() is None


def test_without_it_each_run_starts_and_stops_its_own(project, monkeypatch):
    launches = _launches(monkeypatch)
    for n in range(2):
        result = _run(project, f"own-{n}")
        assert result.status == "ok", result.error
        assert dbos_launch.launched_on() is None
    assert len(launches) == 2


def test_a_database_that_cannot_be_used_is_one_line(project):
    (project / "bad.sqlite").write_text("this is not a database\n" * 100)
    with pytest.raises(ConfigError) as e:
        api.open_durable(database=str(project / "bad.sqlite"))
    assert "\n" not in str(e.value) and "bad.sqlite" in str(e.value)
