"""``flowc serve --mcp``: an elicitation answer the ask refuses is asked again saying why in the
`.flow`'s types (``wants `int` here``, not the form field's title ``answer``), and a client reply
that is no elicitation result (a form field holding a list of numbers) is refused the same way,
never a pydantic dump (break14)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

FLOWC = Path(sys.executable).parent / "flowc"

COUNT = """flow count
output { n: int }

stage main {
  let n = ask "How many?" expect int
  return { n: n }
}
"""


async def _call(tmp_path: Path, replies: list[ElicitResult]) -> tuple[list[str], object]:
    (tmp_path / "count.flow").write_text(COUNT, encoding="utf-8")
    asked: list[str] = []
    given = iter(replies)

    async def elicit(context, params):
        asked.append(params.message)
        return next(given)

    server = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(tmp_path)])
    async with (
        stdio_client(server) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        return asked, await session.call_tool("count", {})


async def test_a_refused_answer_is_asked_again_naming_the_asks_type(tmp_path):
    asked, done = await _call(
        tmp_path,
        [
            ElicitResult(action="accept", content={"answer": "many"}),
            ElicitResult(action="accept", content={"answer": 3}),
        ],
    )
    assert done.is_error is False and done.structured_content == {"n": 3}
    assert asked[1] == (
        "How many?\n\n(The last answer was not accepted: field `answer`: `answer` is "
        '"many", but the ask\'s type wants `int` here.)'
    )


PLAN = """flow plan
type Plan { steps: text[], n: int }
output Plan

stage main {
  return ask "Plan?" expect Plan
}
"""


async def test_a_json_text_answer_that_breaks_the_asks_type_is_asked_again(tmp_path):
    # break14: an object's form field is JSON text, which the form cannot type: `n: 1.5` for
    # an `int` failed the call at once instead of being asked again as a form's wrong value is
    (tmp_path / "plan.flow").write_text(PLAN, encoding="utf-8")
    asked: list[str] = []
    given = iter(['{"steps": ["a"], "n": 1.5}', '{"steps": ["a"], "n": 1}'])

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": next(given)})

    server = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(tmp_path)])
    async with (
        stdio_client(server) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        done = await session.call_tool("plan", {})
    assert done.is_error is False and done.structured_content == {"steps": ["a"], "n": 1}
    assert asked[1] == (
        "Plan?\n\n(The last answer was not accepted: field `answer`: `answer.n` is 1.5, but "
        "the ask's type wants `int` here.)"
    )


def test_a_reply_that_is_no_elicitation_result_is_refused_in_the_forms_terms(tmp_path):
    # a raw client (the SDK's own client refuses to send such a reply): `extra` holds a list of
    # numbers, which no elicitation form field may; the server's SDK cannot read the reply
    (tmp_path / "count.flow").write_text(COUNT, encoding="utf-8")
    server = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict) -> None:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        server.stdin.flush()

    hello = {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
             "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    send({"id": 1, "method": "initialize", "params": hello})
    json.loads(server.stdout.readline())
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call", "params": {"name": "count", "arguments": {}}})
    asked: list[str] = []
    try:
        while True:
            message = json.loads(server.stdout.readline())
            if message.get("method") == "elicitation/create":
                asked.append(message["params"]["message"])
                content = {"answer": 5, "extra": [1]}
                send({"id": message["id"], "result": {"action": "accept", "content": content}})
            elif message.get("id") == 2:
                break
    finally:
        server.stdin.close()
        server.wait()
    result = message["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "answer to `How many?` not accepted: the form's field `extra` holds a value" in text
    assert "ValidationError" not in text and "pydantic" not in text
    assert asked[1].startswith("How many?\n\n(The last answer was not accepted: the form's field")
