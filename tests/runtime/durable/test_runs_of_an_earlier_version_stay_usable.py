"""Runs an earlier flowc made stay usable after the run-id rules and lock names changed (an
outside battery found two regressions): `flowc redrive` of a run whose id the new rule refuses
(`my run`, `a/b`, `_x`, 199 characters) gives the new run a valid id made from it, and a run
whose process of the earlier version holds its old lock file (`locks/RUN.lock`) is alive — listed
so, and never resumed beside it (runtime/durable/database.py)."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from agentflow import api
from agentflow.errors import InputError
from agentflow.runtime.durable import database


@pytest.mark.parametrize(
    "old, new",
    [
        ("my run", "my-run~abc123"),
        ("a/b", "a-b~abc123"),
        ("_under", "r_under~abc123"),
        ("x~0f0f0f", "x~abc123"),
        ("f" * 199, "f" * 193 + "~abc123"),
    ],
)
def test_a_redrive_of_any_old_id_gets_a_valid_new_id(old: str, new: str) -> None:
    made = api.redrive_id(old, "abc123")
    assert made == new and api.run_id_error(made, new=True) is None


def test_a_run_an_earlier_version_holds_by_its_old_lock_is_alive_and_not_taken(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    old_lock = tmp_path / "locks" / "a_b.lock"  # what flowc before stop 43 held for `a/b`
    old_lock.parent.mkdir()
    with old_lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert database.runs_alive(url, ["a/b", "other"]) == {"a/b"}
        with pytest.raises(InputError, match="is running in another process"):
            with database.run_lock(url, "a/b"):
                pass
    assert database.runs_alive(url, ["a/b"]) == set()  # released: free again
    with database.run_lock(url, "a/b"):
        pass


def test_the_answer_hint_of_an_old_id_beginning_with_a_dash_is_a_command_that_works() -> None:
    assert api.answer_command("-dash", "E0") == "flowc answer -- -dash E0 VALUE"
    assert api.answer_command("my run", "ok") == "flowc answer 'my run' ok VALUE"
    assert api.answer_command("r1", "ok") == "flowc answer r1 ok VALUE"
