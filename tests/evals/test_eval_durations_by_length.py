"""Eval scorers compare durations by length, as the run and `flowc test` do
(docs/reference/lexical.md "Durations"): a scorer is evaluated from the checked AST with the
compiler's rewrite (compiler/durations.py)."""

from __future__ import annotations

from agentflow import api


def test_a_scorer_compares_durations_by_length(tmp_path, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "w.flow").write_text(
        "input { wait: duration }\n"
        "stage left -> duration { return input.wait - 30s }\n"
        'eval "w" {\n  dataset "cases.jsonl"\n  expect { left: duration }\n'
        "  score exact = output == expected.left\n"
        "  score shorter = output < 2m\n}\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"name": "a", "input": {"wait": "2m"}, "expected": {"left": "90s"}}\n'
        '{"name": "b", "input": {"wait": "10s"}, "expected": {"left": "0s"}}\n',
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "w.flow", cache=None)
    assert report.errors == []
    scores = {r.case: {k: s.score for k, s in r.scores.items()} for r in report.runs}
    assert scores == {"a": {"exact": 1.0, "shorter": 1.0}, "b": {"exact": 1.0, "shorter": 1.0}}
