"""A scripted "model" for `bug-triage.flow` that really investigates a directory tree.

``TriageScript(owners=...)`` is a callable script for :class:`support.chat_server.ChatServer`:

- the investigator (prompt "Locate the suspect code…") calls ``builtin__list_dir`` on the
  workspace root, then ``builtin__grep`` for ``def run_plan``, then ``builtin__read_file`` on the
  first file grep found, and answers a ``Reproduction`` built from what the tools returned;
- the lead (prompt "Split the fix…") answers a ``Triage`` with one work item per owner, whose
  ``writes`` are the suspect files;
- each member (prompt "Implement the work item…") waits ``member_delay`` seconds (so concurrent
  items overlap in time) and answers a ``ChangeResult``.

It never sees the workspace itself: every fact it reports came back through a tool result.
"""

from __future__ import annotations

import json
import time
from typing import Any


def _tool_results(request: dict[str, Any]) -> list[Any]:
    out = []
    for m in request.get("messages", []):
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m.get("content") or "null"))
            except ValueError:
                out.append(m.get("content"))
    return out


def _user_text(request: dict[str, Any]) -> str:
    return "\n".join(
        m.get("content") or ""
        for m in request.get("messages", [])
        if m.get("role") in ("user", "system") and isinstance(m.get("content"), str)
    )


def _call(name: str, args: dict[str, Any], n: int) -> dict[str, Any]:
    from support.chat_server import tool_calls

    return tool_calls((name, args, f"call_{name}_{n}"))


class TriageScript:
    """The callable script (see the module docstring)."""

    def __init__(
        self,
        owners: tuple[str, ...] = ("backend", "frontend"),
        member_delay: float = 0.4,
        grep_pattern: str = "def run_plan",
    ):
        self.owners = owners
        self.member_delay = member_delay
        self.grep_pattern = grep_pattern
        self.tool_names: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Any:
        from support.chat_server import answer

        text = _user_text(request)
        results = _tool_results(request)
        if "Locate the suspect code" in text:
            return self.investigate(results)
        if "Split the fix into work items" in text:
            suspects = _find_suspects(text)
            work = [
                {
                    "owner": owner,
                    "summary": f"Fix the cancellation path ({owner})",
                    "writes": suspects[:1] or ["README.md"],
                }
                for owner in self.owners
            ]
            return answer({"severity": "high", "work": work})
        if "Implement the work item" in text:
            time.sleep(self.member_delay)
            owner = next((o for o in self.owners if f"({o})" in text), self.owners[0])
            return answer({"owner": owner, "changed_files": [], "notes": "drafted a fix"})
        return answer({})

    def investigate(self, results: list[Any]) -> Any:
        from support.chat_server import answer

        n = len(results)
        if n == 0:
            return _call("builtin__list_dir", {"path": "."}, n)
        if n == 1:
            return _call("builtin__grep", {"pattern": self.grep_pattern, "path": "."}, n)
        if n == 2:
            hits = results[1] if isinstance(results[1], list) else []
            path = hits[0]["path"] if hits and isinstance(hits[0], dict) else "README.md"
            return _call("builtin__read_file", {"path": path, "limit": 40}, n)
        hits = results[1] if isinstance(results[1], list) else []
        files = sorted({h["path"] for h in hits if isinstance(h, dict)})[:3]
        quote = hits[0]["text"].strip() if hits and isinstance(hits[0], dict) else ""
        return answer(
            {
                "reproduced": bool(files),
                "suspect_files": files,
                "hypothesis": f"`{quote}` does not cancel the remaining items",
            }
        )


def _find_suspects(text: str) -> list[str]:
    marker = '"suspect_files":'
    i = text.find(marker)
    if i < 0:
        return []
    rest = text[i + len(marker) :]
    try:
        end = rest.index("]") + 1
        return json.loads(rest[:end])
    except ValueError:
        return []
