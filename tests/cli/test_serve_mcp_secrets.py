"""``flowc serve --mcp``: no secret reaches the client — a tool's result (text and structured
content), a failed tool's error, and an ``ask``'s elicitation all pass the redaction layer, as
``flowc run``'s output does (docs/mcp.md "Server")."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

FLOWC = Path(sys.executable).parent / "flowc"
SECRET = "SECRETVAL12345678"

TOOLS_PY = '''import os


def leak(x: int) -> str:
    """Return the key."""
    return "token=" + os.environ["MY_API_KEY"]


def boom(x: int) -> str:
    """Fail, quoting the key."""
    raise RuntimeError("failed with key " + os.environ["MY_API_KEY"])
'''

LEAK = """flow leak
input { x: int }
output text

extern tool user__leak(x: int) -> text

stage a -> text {
  return user__leak(x: input.x)
}
"""

BOOM = LEAK.replace("flow leak", "flow boom").replace("user__leak", "user__boom")

ASKS = """flow asks
input { x: int }
output text

extern tool user__leak(x: int) -> text

stage a -> text {
  let k = user__leak(x: input.x)
  let ok = ask "Send ${k}?" expect "yes" | "no" default "no"
  return ok
}
"""


async def test_results_errors_and_questions_of_a_served_flow_are_redacted(tmp_path: Path) -> None:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "tools.py").write_text(TOOLS_PY, encoding="utf-8")
    (d / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    for name, text in (("leak", LEAK), ("boom", BOOM), ("asks", ASKS)):
        (d / f"{name}.flow").write_text(text, encoding="utf-8")
    asked = []

    async def elicit(context, params):
        asked.append(params.model_dump_json())
        return ElicitResult(action="accept", content={"answer": "yes"})

    params = StdioServerParameters(
        command=str(FLOWC),
        args=["serve", "--mcp", str(d)],
        env={**os.environ, "MY_API_KEY": SECRET},
    )
    async with (
        stdio_client(params) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        leak = await session.call_tool("leak", {"x": 1})
        boom = await session.call_tool("boom", {"x": 1})
        asks = await session.call_tool("asks", {"x": 1})
    assert leak.is_error is False
    assert leak.content[0].text == '"token=***"' or leak.content[0].text == "token=***"
    assert leak.structured_content == {"result": "token=***"}
    assert boom.is_error is True and "failed with key ***" in boom.content[0].text
    assert asks.is_error is False and asks.structured_content == {"result": "yes"}
    assert asked and "token=***" in asked[0]
    for text in (leak.model_dump_json(), boom.model_dump_json(), asks.model_dump_json(), *asked):
        assert SECRET[:8] not in text and SECRET[-8:] not in text
