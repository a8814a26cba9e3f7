"""Front-end entry points: parse and check `.flow` source (ARCHITECTURE.md,
docs/spec/LANGUAGE.md §9).

``check_source`` and ``check_file`` never raise for the *content* of a program: every problem
comes back as a diagnostic in the :class:`~agentflow.compiler.checker.CheckResult`.
"""

from __future__ import annotations

import gc
import os

from agentflow.compiler.checker import CheckResult
from agentflow.compiler.imports import check_parsed, read_source

__all__ = ["check_source", "check_file", "check_parsed", "read_source"]


def check_source(text: str, file: str = "<input>") -> CheckResult:
    """Parse ``text`` (named ``file`` in spans) with
    :func:`agentflow.grammar.parser.parse_module` and type-check it.

    Returns the :class:`CheckResult`, whose ``diagnostics`` include the syntax errors.
    """
    # the parser (lark and its tables, ~70 ms) loads on first use, not when `flowc` starts
    from agentflow.compiler.division_comments import division_comments
    from agentflow.grammar.parser import parse_module

    # one pause of the cyclic collector for parse and check together (both allocate many
    # small acyclic objects; a collection between them would walk the whole fresh AST)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        module, parse_diags = parse_module(text, file)
        return check_parsed(module, parse_diags + division_comments(text, file))
    finally:
        if was_enabled:
            gc.enable()


def check_file(path: str | os.PathLike[str]) -> CheckResult:
    """Read ``path`` (:func:`read_source`) and check it; spans name the file as given.  Raises
    ``OSError`` only when the file cannot be read."""
    return check_source(read_source(path), str(path))
