"""The program of program.py with a field misspelt: `mypy --strict` must report it."""

from __future__ import annotations

from bug_triage import ChangeResult, Triage

from agentflow.runtime.result import RunResult


def severity(triage: Triage) -> str:
    return triage.severty


def notes(result: RunResult[list[ChangeResult]]) -> tuple[int, int]:
    count: int = result.output_or_raise()[0].notes  # a str: precise, not `str | Any`
    return count, result.usage["inferencs"]  # a usage key misspelt
