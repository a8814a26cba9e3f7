"""The real user's per-user files the suite must never write (tests/conftest.py,
tests/test_the_suite_never_writes_the_users_state.py)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path


def users_index() -> Path:
    """The run index of the account running the suite as it would be with no ``$XDG_STATE_HOME``
    (``~/.local/state/agentflow/runs.jsonl``, the home directory from the password database)."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    return Path(home) / ".local" / "state" / "agentflow" / "runs.jsonl"


def lines_naming(text: str) -> list[str]:
    """The lines of the user's run index that hold ``text`` (a temporary directory's path)."""
    try:
        data = users_index().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in data.splitlines() if text in line]
