"""Evaluations of flows (``flowc eval``, :func:`agentflow.api.evaluate`;
docs/reference/evals.md): datasets checked against the flow's types, scorers declared in the
flow's ``eval`` block, runs over models and repetitions with an answer cache, reports (terminal,
JSON, JUnit XML, HTML) and the comparison with a baseline. Layer: api."""

from agentflow.evals.dataset import Case, Dataset, check_cases, read_dataset
from agentflow.evals.report import (
    CaseRun,
    CaseStats,
    Change,
    Comparison,
    EvalReport,
    ScoreResult,
    ScorerSummary,
    compare,
)

__all__ = [
    "Case",
    "CaseRun",
    "CaseStats",
    "Change",
    "Comparison",
    "Dataset",
    "EvalReport",
    "ScoreResult",
    "ScorerSummary",
    "check_cases",
    "compare",
    "read_dataset",
]
