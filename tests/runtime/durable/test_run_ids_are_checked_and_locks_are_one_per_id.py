"""Run ids: a new one (``--run-id``) is a letter or digit, then letters, digits and
``._~:@+=-``, at most 200 characters — anything else is a usage error, not a traceback of the
lock file's name; a looked-up one (``runs show``, ``answer``, …) longer than any run's is "no
such run" before any query (SQLite refuses a LIKE pattern that long); and two ids never share a
lock file (``x/y`` was ``x_y``'s) (docs/durable.md "Run ids")."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.errors import InputError
from agentflow.runtime.durable.database import lock_path, run_lock
from agentflow.runtime.durable.dbos_engine import shutdown


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "--durable", "--run-id", "x/y", "f.flow"], '"x/y" is not a run id'),
        (["run", "--run-id", "a b", "f.flow"], '"a b" is not a run id'),
        (["run", "--run-id", "a" * 260, "f.flow"], "a run id is at most 200 characters, not 260"),
        (["ask", "--durable", "--run-id", "-x", "hi"], '"-x" is not a run id'),
        (["runs", "show", "a" * 50_000], "no durable run has an id of 50000 characters"),
        (["answer", "a" * 50_000, "n", "5"], "no durable run has an id of 50000 characters"),
        (["cancel", "a" * 5_000], "no durable run has an id of 5000 characters"),
    ],
)
def test_a_run_id_that_cannot_be_one_is_a_usage_error(tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.flow").write_text("flow f\nstage a -> int {\n  return 1\n}\n")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert says in result.stderr
    assert not (tmp_path / ".flowc").exists()  # nothing was opened


def test_the_api_refuses_an_overlong_lookup_before_any_query(tmp_path):
    db = tmp_path / "durable.sqlite"
    db.touch()
    with pytest.raises(InputError, match="no durable run has an id of 50000 characters"):
        try:
            asyncio.run(api.show_durable_run(f"sqlite:///{db}", "a" * 50_000))
        finally:
            shutdown()


def test_two_run_ids_never_share_a_lock(tmp_path):
    url = f"sqlite:///{tmp_path}/durable.sqlite"
    names = {lock_path(url, r) for r in ("x/y", "x_y", "x?y", "a" * 300, "a" * 301)}
    assert len(names) == 5
    assert all(p is not None and len(p.name) <= 100 for p in names)
    with run_lock(url, "x/y"), run_lock(url, "x_y"):  # both held at once
        with pytest.raises(InputError, match="run x/y is running in another process"):
            with run_lock(url, "x/y"):
                pass
