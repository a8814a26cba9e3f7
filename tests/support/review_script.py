"""A scripted "model" for ``issue-review.flow`` (and its twin ``issue-review.plan.yaml``) that
really reviews the issues through the ``linear`` MCP tools.

``ReviewScript()`` is a callable script for :class:`support.chat_server.ChatServer`.  For the
investigator request (prompt "Review these issues and identify which are blocked…"):

1. it reads the issue list from the prompt (the JSON after "and why:") and calls
   ``linear__get_issue`` on every listed issue, all in one turn;
2. it calls ``linear__get_issue`` on every issue named in a ``blocked_by`` it has not seen yet;
3. it answers a ``Review``: an issue is blocked when one of its blockers is not Done/Canceled
   (reason: the blocker, its title and state), or when it carries the label ``blocked`` (reason:
   its latest comment).

It never reads the fixture itself: every fact it reports came back through a tool result (or the
prompt).  ``ReviewScript.blocked(issues)`` is that decision rule, for tests to compare with.
"""

from __future__ import annotations

import json
from typing import Any

CLOSED = {"done", "canceled", "cancelled"}
MARKER = "identify which are blocked, and why:"


def _user_text(request: dict[str, Any]) -> str:
    return "\n".join(
        m.get("content") or ""
        for m in request.get("messages", [])
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    )


def _tool_results(request: dict[str, Any]) -> list[Any]:
    out = []
    for m in request.get("messages", []):
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m.get("content") or "null"))
            except ValueError:
                out.append(m.get("content"))
    return out


def listed_issues(prompt: str) -> list[dict[str, Any]]:
    """The issues rendered into the prompt after :data:`MARKER` ([] when there are none)."""
    i = prompt.find(MARKER)
    if i < 0:
        return []
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt[i + len(MARKER) :].lstrip())
    except ValueError:
        return []
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


class ReviewScript:
    """The callable script (see the module docstring)."""

    def __init__(self) -> None:
        self.turns = 0

    def __call__(self, request: dict[str, Any]) -> Any:
        from support.chat_server import answer, tool_calls

        prompt = _user_text(request)
        if MARKER not in prompt:
            return answer({})
        self.turns += 1
        listed = [i["id"] for i in listed_issues(prompt) if isinstance(i.get("id"), str)]
        seen = {
            r["id"]: r
            for r in _tool_results(request)
            if isinstance(r, dict) and isinstance(r.get("id"), str)
        }
        wanted = [i for i in listed if i not in seen]
        if not wanted:
            wanted = sorted(
                {b for r in seen.values() for b in r.get("blocked_by") or [] if b not in seen}
            )
        if wanted:
            n = len(_tool_results(request))
            return tool_calls(
                *[
                    ("linear__get_issue", {"id": issue}, f"call_get_issue_{n + k}")
                    for k, issue in enumerate(wanted)
                ]
            )
        return answer({"blocked": self.blocked([seen[i] for i in listed if i in seen], seen)})

    @staticmethod
    def blocked(issues: list[dict[str, Any]], known: dict[str, dict[str, Any]]) -> list[dict]:
        """The ``Blocked`` entries for ``issues`` (full issues), looking blockers up in ``known``."""
        out = []
        for issue in issues:
            open_blockers = [
                known[b]
                for b in issue.get("blocked_by") or []
                if b in known and known[b]["state"].lower() not in CLOSED
            ]
            if open_blockers:
                reason = "; ".join(
                    f"blocked by {b['id']} ({b['title']}), which is still {b['state']}"
                    for b in open_blockers
                )
            elif "blocked" in (issue.get("labels") or []):
                comments = issue.get("comments") or []
                latest = comments[-1]["body"] if comments else "no comment says why"
                reason = f"labelled blocked: {latest}"
            else:
                continue
            out.append({"id": issue["id"], "reason": reason})
        return out
