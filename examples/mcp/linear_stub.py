"""An offline stand-in for a Linear MCP server, for ``examples/issue-review.flow``.

A real MCP server over stdio, written with the official ``mcp`` SDK (``MCPServer``, the 2.x name
of FastMCP), serving a small issue tracker read from a JSON fixture (default:
``linear_issues.json`` next to this file; another one with ``--fixture PATH``).  Configure it as
``[mcp.linear]`` (see ``examples/issue-review.toml``); agentflow then exposes its tools as
``linear__list_issues``, ``linear__get_issue`` and ``linear__add_comment``.

Tools:

* ``list_issues(limit: int = 50, state: str | None = None)`` → ``{"issues": [{id, title, state,
  description}, ...]}``: open issues (state neither "Done" nor "Canceled") in fixture order, or
  only those whose state equals ``state`` (case-insensitive);
* ``get_issue(id: str)`` → the whole issue: assignee, priority, labels, ``blocked_by`` (ids of the
  issues blocking it; look them up for their state) and comments; an unknown id is a tool error;
* ``add_comment(issue_id: str, body: str)`` → ``{"issue_id", "posted": false, "note"}``: the
  comment is only logged on stderr (stdout is the MCP channel); nothing is written anywhere.

The fixture is read once at start; it is never modified.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CLOSED = {"done", "canceled", "cancelled"}
FIXTURE = (
    Path(sys.argv[sys.argv.index("--fixture") + 1])
    if "--fixture" in sys.argv
    else Path(__file__).with_name("linear_issues.json")
)
ISSUES: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["issues"]
BY_ID = {issue["id"]: issue for issue in ISSUES}

server = MCPServer("linear")


@server.tool()
def list_issues(limit: int = 50, state: str | None = None) -> dict:
    """List issues of the team's tracker: open ones by default, or those in `state`.

    Each issue has id, title, state and description; use get_issue for labels, blockers and
    comments.
    """
    if state is None:
        chosen = [i for i in ISSUES if i["state"].lower() not in CLOSED]
    else:
        chosen = [i for i in ISSUES if i["state"].lower() == state.lower()]
    keys = ("id", "title", "state", "description")
    return {"issues": [{k: i[k] for k in keys} for i in chosen[: max(limit, 0)]]}


@server.tool()
def get_issue(id: str) -> dict:  # noqa: A002 - the tool's argument name
    """One issue in full: assignee, priority, labels, blocked_by (ids of blocking issues) and
    comments (oldest first)."""
    issue = BY_ID.get(id.strip().upper())
    if issue is None:
        raise ToolError(f"no issue {id!r}")
    return issue


@server.tool()
def add_comment(issue_id: str, body: str) -> dict:
    """Comment on an issue (this offline stub only logs the comment; nothing is posted)."""
    if issue_id.strip().upper() not in BY_ID:
        raise ToolError(f"no issue {issue_id!r}")
    print(f"linear stub: comment on {issue_id}: {body}", file=sys.stderr, flush=True)
    return {"issue_id": issue_id, "posted": False, "note": "offline stub: comment logged only"}


if __name__ == "__main__":
    server.run()
