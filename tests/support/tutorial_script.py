"""A scripted "model" for the tutorial's flows (``docs/tutorial/*.flow``).

``TutorialScript()`` is a callable script for :class:`support.chat_server.ChatServer`; the
tutorial's cassettes are recorded against it (``scripts/record_tutorial_cassettes.py``):

- the **planner** (task "Pick the TODOs most worth doing first…") reads the TODOs from the
  agent's JSON input and answers a ``Plan``: the TODOs that lose money first (their note says
  "loses"), then the others in input order, at most two;
- the **reviewer** (task "Review the file PATH: …") calls ``builtin__read_file`` on that path,
  then answers a ``Finding`` from what the tool returned: ``high`` when the file calls
  ``eval(``, ``medium`` when it holds a ``TODO``, else ``low``, quoting the line in ``notes``;
- the **judge** ("You are a strict judge…") answers ``yes`` when every finding listed in its
  question quotes code (holds a backtick), else ``no``.

It never looks at the files itself: every fact it reports came in through the prompt or a tool
result.  Tool-call ids are fixed, so a recording is the same every time.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLANNER = "Pick the TODOs most worth doing first"
REVIEWER = re.compile(r"Review the file (\S+?):")
JUDGE = "You are a strict judge"


def _messages(request: dict[str, Any], role: str) -> list[str]:
    return [
        m["content"]
        for m in request.get("messages", [])
        if m.get("role") == role and isinstance(m.get("content"), str)
    ]


def _input_json(task: str) -> Any:
    """The agent's structured input (after ``Input (JSON):``), or None."""
    _, marker, rest = task.partition("Input (JSON):\n")
    return json.loads(rest) if marker else None


def _quote(line: str) -> str:
    return "`" + line.strip() + "`"


class TutorialScript:
    """The callable script (see the module docstring)."""

    def __call__(self, request: dict[str, Any]) -> Any:
        from support.chat_server import answer, text, tool_calls

        system = "\n".join(_messages(request, "system"))
        task = (_messages(request, "user") or [""])[0]
        if system.startswith(JUDGE):
            return text("yes" if self.quotes_code(task) else "no")
        if PLANNER in task:
            return answer(self.plan(_input_json(task)["todos"]))
        found = REVIEWER.search(task)
        if found:
            results = _messages(request, "tool")
            if not results:
                return tool_calls(("builtin__read_file", {"path": found.group(1)}, "call_read_1"))
            return answer(self.finding(found.group(1), results[-1]))
        return answer({})

    @staticmethod
    def plan(todos: list[dict[str, Any]]) -> dict[str, Any]:
        """The planner's answer for ``todos`` (TODOs that lose money first, at most two)."""
        ranked = sorted(todos, key=lambda t: "loses" not in t["note"])[:2]
        why = ranked[0]["note"].split("TODO:", 1)[-1].strip()
        return {"first": ranked, "reason": f"Fix what loses money first: {why}."}

    @staticmethod
    def finding(path: str, content: str) -> dict[str, Any]:
        """The reviewer's answer for a file whose text is ``content``."""
        lines = content.splitlines()
        risky = [line for line in lines if "eval(" in line]
        if risky:
            notes = f"{_quote(risky[0])} runs text as Python code; parse the rate with Decimal"
            return {"file": path, "risk": "high", "notes": notes}
        todo = [line for line in lines if "TODO" in line]
        if todo:
            return {"file": path, "risk": "medium", "notes": f"open work: {_quote(todo[0])}"}
        first = next((line for line in lines if line.strip()), "")
        return {"file": path, "risk": "low", "notes": f"nothing risky; starts with {_quote(first)}"}

    @staticmethod
    def quotes_code(question: str) -> bool:
        """True when every finding listed in the judge's question quotes code."""
        _, _, listed = question.partition("it is about: ")
        try:
            findings = json.loads(listed)
        except ValueError:
            return False
        return all("`" in f.get("notes", "") for f in findings)
