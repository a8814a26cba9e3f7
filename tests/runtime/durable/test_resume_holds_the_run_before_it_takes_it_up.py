"""`flowc resume` takes the run's lock before it launches the engine (issue 28 item 8): the
launch recovers the run and starts running it at once, and `flowc runs` tells a run in
progress (`running`/`waiting`) from one whose process died (`stopped`) by that lock. Before, the
lock came after the launch: for that while `flowc runs` listed the run as `stopped`."""

from __future__ import annotations

import asyncio

import pytest

from agentflow.runtime.durable import execution, runs


class Launched(Exception):
    """Stands in for the engine's launch: the test stops there."""


def test_the_run_lock_is_held_when_the_engine_is_launched(tmp_path, monkeypatch):
    db = tmp_path / ".flowc" / "durable.sqlite"
    db.parent.mkdir()
    db.touch()  # a database there: resume goes on to launch the engine
    url = f"sqlite:///{db}"
    seen: list[bool] = []

    def launch(url_: str, **kwargs: object) -> None:
        seen.append(runs.run_alive(url_, "r1"))  # what `flowc runs` would say now
        raise Launched

    monkeypatch.setattr(execution, "open_database", launch)  # where resume calls it
    with pytest.raises(Launched):
        asyncio.run(runs.resume(url, "r1"))
    assert seen == [True], "the engine was launched before the run's lock was taken"
    assert not runs.run_alive(url, "r1")  # released with the process's hold on it
