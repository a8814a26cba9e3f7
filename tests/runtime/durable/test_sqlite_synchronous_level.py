"""``[durable] synchronous`` picks SQLite's ``synchronous`` level of the durable runs database
(docs/durable.md "Big maps: item records and synchronous"): ``full`` by default, ``normal`` or
``extra`` when set; it travels as the SQLite URL's ``?synchronous=`` parameter, which every
connection of the engine applies, and a level durable runs do not use is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config
from agentflow.runtime.durable.dbos_engine import launch, shutdown
from agentflow.runtime.durable.dbos_system import synchronous_of, system_database
from agentflow.runtime.durable.runs import database_for

#: PRAGMA synchronous's answer for each level
LEVELS = {"normal": 1, "full": 2, "extra": 3}


def _config(tmp_path: Path, durable: str) -> Path:
    (tmp_path / "flow.toml").write_text(f"[durable]\n{durable}")
    return tmp_path / "flow.toml"


@pytest.mark.parametrize("level", ["normal", "extra", None])
def test_the_configured_level_is_the_one_every_connection_runs_at(
    tmp_path: Path, level: str | None
) -> None:
    config = load_config(_config(tmp_path, f'synchronous = "{level}"\n' if level else ""))
    url = database_for(config)
    assert url.endswith(f"?synchronous={level}") if level not in (None, "full") else "?" not in url
    launch(url, executor_id="test", queues=[])
    try:
        with system_database().engine.connect() as conn:
            found = conn.exec_driver_sql("PRAGMA synchronous").scalar()
            journal = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    finally:
        shutdown()
    assert found == LEVELS[level or "full"] and journal == "wal"
    assert (tmp_path / ".flowc" / "durable.sqlite").exists()  # the file, not a "?…" name


def test_a_level_durable_runs_do_not_use_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="synchronous"):
        load_config(_config(tmp_path, 'synchronous = "off"\n'))
    with pytest.raises(ValueError, match="synchronous=off is not a level"):
        synchronous_of("sqlite:///x.sqlite?synchronous=off")
