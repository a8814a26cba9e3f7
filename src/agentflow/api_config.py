"""The api of ``flowc check``'s look at ``flow.toml`` (docs/reference/cli.md "flowc check";
docs/diagnostics.md ``invalid-config``). :mod:`agentflow.api` re-exports every public name here.

This module loads the configuration's model (Pydantic) and nothing else of the runtime: a
``flowc check`` of a flow with a ``flow.toml`` loads it, one without none (docs/decisions.md
"The api split by what it loads").
"""

from __future__ import annotations

import os
from pathlib import Path

from agentflow.core.diagnostics import Diagnostic
from agentflow.runtime.config_check import config_diagnostics as _config_diagnostics

__all__ = ["config_diagnostics"]


def config_diagnostics(
    flow: str | os.PathLike[str], seen: set[Path] | None = None
) -> tuple[list[Diagnostic], dict[str, str]]:
    """``flowc check``'s ``invalid-config`` errors (docs/diagnostics.md; docs/reference/cli.md
    "flowc check") of the ``flow.toml`` a run of the `.flow` file ``flow`` reads — the nearest
    from its directory upward — loaded as a run loads it but without the environment: one
    diagnostic per problem at its ``flow.toml:line:col``, a did-you-mean as its hint, and the
    file's text by name (for the excerpts). No file, a file that loads, or one already in
    ``seen`` (resolved paths, added to): ``([], {})``. Never raises."""
    return _config_diagnostics(flow, seen)
