"""An MCP client's form answer (``flowc serve --mcp``, an ``ask`` put as an elicitation) whose
JSON text gives one key twice is refused naming the key, as ``flowc answer``, ``--answer`` and
the terminal refuse it: the client is asked again saying so, and a second such answer fails the
call with that message — not kept as text and failed later against the ask's type, by a
message that did not name the key.

Root cause: the form's "JSON text" field was parsed with every ``ValueError`` suppressed (too
deep, NaN: kept as text), ``DuplicateKey`` among them; the form check (``form_problem``) now
refuses a key given twice before the answer is used."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

from agentflow.serve_asks import form_problem

FLOWC = Path(sys.executable).parent / "flowc"

PLAN = """/// Plan a thing.
flow plan
input { ticket: text }

type P { a: int }

stage main -> P {
  return ask "Plan ${input.ticket}?" expect P
}
"""

TWICE = '{"a": 1, "a": 2}'
REFUSED = 'the key "a" is given twice in one object (only one value can be meant: give it once)'


def test_the_form_check_refuses_json_text_giving_a_key_twice_naming_it() -> None:
    form = {"properties": {"answer": {"type": "string", "description": "JSON text"}}}
    assert form_problem(form, {"answer": TWICE}) == f"field `answer`: {REFUSED}"
    assert form_problem(form, {"answer": '{"a": 2}'}) is None
    # a text answer is text: its braces are not read as JSON
    text_form = {"properties": {"answer": {"type": "string"}}}
    assert form_problem(text_form, {"answer": TWICE}) is None


async def test_a_served_ask_answered_with_a_key_given_twice_is_asked_again_naming_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "plan.flow").write_text(PLAN, encoding="utf-8")
    asked: list[str] = []
    replies = iter([TWICE, '{"a": 2}', TWICE, TWICE])

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": next(replies)})

    params = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(tmp_path)])
    async with (
        stdio_client(params) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        fixed = await session.call_tool("plan", {"ticket": "T-1"})
        refused = await session.call_tool("plan", {"ticket": "T-2"})
    assert (
        asked[1] == f"Plan T-1?\n\n(The last answer was not accepted: field `answer`: {REFUSED}.)"
    )
    assert fixed.is_error is False and fixed.structured_content == {"a": 2}
    assert refused.is_error is True
    text = refused.content[0].text
    assert f"answer to `Plan T-2?` not accepted: field `answer`: {REFUSED}" in text, text
    assert len(asked) == 4
