"""`flowc serve --mcp`: an `ask` (no `default`) a client leaves unanswered fails with advice for
that MCP client — it does not support elicitation (call from a client that does), or it
declined the question — never the command line's `--answer NAME=VALUE` or `flowc answer RUN …`,
which a tool caller cannot use.

Root cause: the unanswered ask's message (runtime/hooks.py ``unanswered_message``) knew only a
plain run started by `flowc run` and a durable run; the served run's interlocutor
(serve_asks._Elicitor) now says how its client left the question (``unanswered_by``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

FLOWC = Path(sys.executable).parent / "flowc"

PLANNED = """/// Ask for a plan.
flow planned
input { n: int }

stage main -> text {
  let p = ask "Plan?" expect text
  return p
}
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "planned.flow").write_text(PLANNED, encoding="utf-8")
    return d


async def _call(served: Path, **client) -> str:
    params = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(served)])
    async with stdio_client(params) as (r, w), ClientSession(r, w, **client) as session:
        await session.initialize()
        result = await session.call_tool("planned", {"n": 1})
    assert result.is_error
    return " ".join(c.text for c in result.content if hasattr(c, "text"))


async def test_a_client_without_elicitation_is_told_it_needs_it(served):
    text = await _call(served)
    assert 'question not answered: "Plan?"' in text, text
    assert "does not support elicitation" in text, text
    assert "--answer" not in text and "flowc answer" not in text, text
    assert 'default ""' in text, text  # the ask's own way: a default


async def test_a_client_that_declines_is_told_it_declined(served):
    async def decline(context, params):
        return ElicitResult(action="decline")

    text = await _call(served, elicitation_callback=decline)
    assert "declined the question" in text, text
    assert "--answer" not in text and "flowc answer" not in text, text
