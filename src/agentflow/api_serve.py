"""The api functions behind flowc's servers: ``flowc serve --mcp`` (every program of a
directory as an MCP tool) and ``flowc ui`` (the web console of a durable database).
:mod:`agentflow.api` re-exports every public name here.

This module loads the servers' own modules; the protocol packages themselves (``mcp``,
Starlette, uvicorn) load when a server starts (docs/decisions.md "The api split by what it
loads").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentflow.serve import serve as serve_directory
from agentflow.ui.app import serve as serve_console

__all__ = ["serve_mcp", "serve_ui"]


def serve_mcp(directory: str | os.PathLike[str], **options: Any) -> None:
    """Serve every program in ``directory`` as an MCP tool (``flowc serve --mcp``;
    docs/mcp.md); ``options`` as :func:`agentflow.serve.serve`'s.  Raises
    ConfigError."""
    serve_directory(Path(directory), **options)


def serve_ui(url: str, **options: Any) -> None:
    """Serve the web console of durable database ``url`` until interrupted (``flowc ui``;
    docs/reference/ui.md); ``options`` as :func:`agentflow.ui.app.serve`'s."""
    serve_console(url, **options)
