"""A durable project of the in-process tests (tests/runtime/durable): its files written in a
temporary directory, the working directory there, its `flow.toml` loaded and its SQLite
database opened (DBOS), and the plans several of them run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.runtime.config import Config, load_config
from agentflow.runtime.durable.database import database_for, open_database

#: a plan of two calls of ``user__note`` (E1 given E0's result), no ``finish``
NOTE_STEPS = """\
version: 1
name: notes
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 1}}
  - {id: E1, tool_name: user__note, input: {n: "{{ E0 }}"}}
"""

#: :data:`NOTE_STEPS` giving both results: ``[2, 4]`` with :data:`NOTE_TOOLS`
NOTES_PLAN = NOTE_STEPS + 'finish: {mode: output, output: "{{ [E0, E1] }}"}\n'

#: `tools.py` with ``note(n)`` → ``2n``
NOTE_TOOLS = '''\
def note(n: int) -> int:
    """Return 2n."""
    return 2 * n
'''


def open_durable_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], durable: str = ""
) -> Config:
    """Write ``files`` (name → text; a `tools.py` among them) and a `flow.toml` naming
    `tools.py` (no entry points; ``durable``: its ``[durable]`` table, if any) in ``tmp_path``,
    change to it, and open the project's durable database (executor ``test``, no queues);
    return its configuration.  The caller shuts the engine down (``dbos_engine.shutdown``)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\nentry_points = false\n' + durable
    )
    monkeypatch.chdir(tmp_path)
    config = load_config(str(tmp_path / "flow.toml"))
    open_database(database_for(config), executor_id="test", queues=[])
    return config
