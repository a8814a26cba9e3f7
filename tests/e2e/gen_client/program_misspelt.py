"""The program of program.py with a field misspelt: `mypy --strict` must report it."""

from __future__ import annotations

from bug_triage import Triage


def severity(triage: Triage) -> str:
    return triage.severty
