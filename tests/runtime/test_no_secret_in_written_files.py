"""Files agentflow writes hold no known secret (round 41, beyond the durable records of
tests/runtime/durable/test_no_secret_is_at_rest.py): the shape cache (object keys of a tool's
result), an eval report's JSON, and — as a second guard — ``flowc report`` / ``flowc graph``
output made from a trace written by a process that did not know the secret (an older agentflow,
another machine): what the reading process knows is redacted from what it writes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.core.redaction import MIN_RUN, SECRETS

KEY = "tok-WRITTEN-FILES-6gT3nB8vC1xZ5-end"


def leaks(text: str) -> list[str]:
    """The runs of MIN_RUN characters of KEY found in ``text``."""
    runs = {KEY[i : i + MIN_RUN] for i in range(len(KEY) - MIN_RUN + 1)}
    return sorted(r for r in runs if r in text)


def test_the_shape_cache_stores_no_secret_key(tmp_path: Path) -> None:
    from agentflow.runtime.shape_cache import ShapeCache

    SECRETS.add(KEY)
    cache = ShapeCache(tmp_path / "shapes.sqlite")
    cache.record("user__leaky", {KEY: 1, "ok": "x"})
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert leaks(stored.decode("latin-1")) == []
    assert "ok" in str(cache.get("user__leaky"))


def test_an_eval_report_json_holds_no_secret() -> None:
    from agentflow.evals.report import EvalReport

    SECRETS.add(KEY)
    report = EvalReport.__new__(EvalReport)
    report.to_dict = lambda: {"cases": [{"output": "said " + KEY}]}  # type: ignore[method-assign]
    text = EvalReport.to_json(report)
    assert leaks(text) == [] and "said ***" in text


FLOW = """\
flow leak "Leak"
extern tool user__echo(kind: text) -> text
stage s -> text { return user__echo(kind: "x") }
"""

TOOLS = '''\
import os


def echo(kind: str) -> str:
    """The reader's token."""
    return "token " + os.environ["READER_TOKEN"]
'''


def test_report_and_graph_of_a_trace_written_unknowing_hold_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "leak.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("READER_TOKEN", KEY)  # the writer (this API call) does not know it
    result = asyncio.run(
        agentflow.run(tmp_path / "leak.flow", None, config="flow.toml", trace="t.jsonl")
    )
    assert result.status == "ok"
    assert leaks((tmp_path / "t.jsonl").read_text()) != []  # written unknowing
    SECRETS.clear()
    for args in (["report", "t.jsonl", "-o", "r.html"], ["graph", "leak.flow", "--run", "t.jsonl"]):
        done = CliRunner().invoke(main, args)  # the CLI registers READER_TOKEN at its start
        assert done.exit_code == 0, done.output
        assert leaks(done.stdout) == []
    assert leaks((tmp_path / "r.html").read_text()) == []
