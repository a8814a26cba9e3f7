"""The api of the front end: reading and checking `.flow` source, printing diagnostics,
formatting, JSON Schema contracts and generated Python clients (docs/spec/LANGUAGE.md §9,
docs/diagnostics.md).  :mod:`agentflow.api` re-exports every public name here.

This module loads the parser and the checker only: no plan models, no Pydantic, no runtime —
what ``flowc check`` and ``flowc fmt`` need (tests/cli/test_startup_imports.py; docs/decisions.md
"The api split by what it loads").  Nothing here prints.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentflow.compiler import project as _project
from agentflow.compiler import render as _render
from agentflow.compiler import types as T
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.check_errors import ERROR_OBJECT, ERROR_PLACE
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.contracts import contract_for, extern_declaration
from agentflow.compiler.fmt import FormatError, format_file, format_source
from agentflow.compiler.gen_python import generate_python
from agentflow.core.config_file import find_config
from agentflow.core.diagnostics import Diagnostic
from agentflow.errors import CompileError, ContractError, NotAPlan
from agentflow.ir.names import expression_position

__all__ = [
    "FormatError",
    "agent_profile_warnings",
    "extern_tool_warnings",
    "check_source",
    "config_file",
    "diagnostics_summary",
    "expression_position",
    "extern_declaration",
    "format_flow_file",
    "format_flow_diff",
    "gen_python",
    "read_source",
    "render_diagnostics",
    "source_excerpt",
    "stale_modules",
    "type_schema",
]


def gen_python(flow: str | os.PathLike[str], module: str | os.PathLike[str]) -> str:
    """The text of the typed client module of the `.flow` file ``flow``, to be written at
    ``module`` (the module finds the flow relative to its own directory):
    docs/reference/python-clients.md.  Raises :class:`CompileError` when the program has
    errors, :class:`ContractError` when a type of its input, output or stages has no JSON form
    (an ``extern type``), :class:`NotAPlan` for a library (a file with no stage: its types
    are in the clients of the flows that import them), ``OSError`` when ``flow`` cannot be
    read."""
    text = read_source(flow)
    result = check_source(text, str(flow))
    if not result.ok:
        raise CompileError(result.errors, {str(flow): text})
    if not result.stages:
        raise NotAPlan(
            f"{flow}: a library (types only, no stage): no client — its types are in the "
            "clients of the flows that import them"
        )
    try:
        return generate_python(result, text, str(flow), str(module))
    except ContractError as e:
        raise ContractError(f"{flow}: {e}") from None


def render_diagnostics(
    diagnostics: Iterable[Diagnostic],
    sources: dict[str, str],
    fmt: str = "text",
    *,
    color: bool | None = None,
) -> str:
    """``diagnostics`` as ``flowc check --format FMT`` prints them (docs/diagnostics.md):
    ``"text"`` (excerpts from ``sources``, file → text; ``color``: ANSI colours, default when
    stderr is a terminal), ``"json"`` (an array of diagnostic objects) or ``"sarif"``
    (SARIF 2.1.0).  Raises ValueError for another format."""
    if fmt == "json":
        return _render.render_json(diagnostics)
    if fmt == "sarif":
        return _render.render_sarif(diagnostics)
    if fmt != "text":
        raise ValueError(f"unknown diagnostics format {fmt!r}")
    shown = sys.stderr.isatty() if color is None else color
    return _render.render_text(diagnostics, sources, color=shown)


def source_excerpt(line: str, column: int, end_column: int | None) -> tuple[str, int, int]:
    """``(text, start, width)``: the `.flow` line ``line`` as an excerpt shows it (tabs
    expanded, control characters escaped) and its carets: ``width`` (≥ 1) carets from the
    0-based display column ``start``, under the characters ``column`` … ``end_column - 1``
    (1-based; to the end of the line for None; one caret for an empty range).  The one excerpt
    of diagnostics and run errors (docs/diagnostics.md, the text format)."""
    return _render.excerpt(line, column, end_column)


def diagnostics_summary(diagnostics: Iterable[Diagnostic]) -> str:
    """The closing line of a report, e.g. ``"2 errors, 1 warning"`` (``"no problems"``)."""
    return _render.summary(diagnostics)


def stale_modules(
    flow: str | os.PathLike[str], text: str, result: CheckResult | None = None
) -> list[Diagnostic]:
    """The ``stale-generated-module`` warnings of the `.flow` file ``flow`` whose text is
    ``text``: the modules the nearest flow.toml lists under ``[gen] python`` generated from a
    version of it with another interface — types, fields, stages, names; not a comment or
    whitespace (docs/reference/python-clients.md "Keeping the module current"). ``result``:
    the check of ``text``, when the caller has it (else it is checked when needed).
    (:func:`agentflow.compiler.project.stale_modules`, which the language server runs too.)"""
    return _project.stale_modules(flow, text, result)


def agent_profile_warnings(flow: str | os.PathLike[str], result: CheckResult) -> list[Diagnostic]:
    """The ``unknown-agent-profile`` warnings of the checked `.flow` file ``flow``
    (docs/diagnostics.md): each ``use agent "NAME"`` (``use team``) whose NAME the nearest
    ``flow.toml`` (from the flow's directory upward) has no ``[agents.NAME]`` (``[teams.NAME]``)
    for, but has one of a similar name.  No ``flow.toml``, an unreadable one or one with no
    such table: none.  The span is the quoted name.
    (:func:`agentflow.compiler.project.agent_profile_warnings`, which the language server runs
    too.)"""
    return _project.agent_profile_warnings(flow, result)


def extern_tool_warnings(flow: str | os.PathLike[str], result: CheckResult) -> list[Diagnostic]:
    """The ``unknown-extern-tool`` / ``extern-tool-signature`` warnings of the checked `.flow`
    file ``flow``: each ``extern tool user__*`` / ``plan__*`` compared with the functions of the
    nearest ``flow.toml``'s ``[tools] modules`` (read with :mod:`ast`, never imported) and the
    plans of its plans directory (docs/reference/tools.md "What flowc check compares").
    (:func:`agentflow.compiler.project.extern_tool_warnings`, which the language server runs
    too.)"""
    return _project.extern_tool_warnings(flow, result)


def config_file(near: str | os.PathLike[str] | None = None) -> Path | None:
    """The ``flow.toml`` a command acting on ``near`` (a `.flow` or plan file, or a
    directory; None: a command that acts on no file) reads when no ``--config`` is given: the
    nearest from its directory upward, else None (docs/reference/configuration.md "Which
    flow.toml")."""
    return find_config(near)


#: the built-in type names ``flowc schema`` gives the schema of (their values' JSON form)
BUILTIN_SCHEMA_TYPES: dict[str, T.Type] = {
    "Verdict": T.VERDICT,
    "Error": ERROR_OBJECT,
    "ErrorPlace": ERROR_PLACE,
}


def type_schema(result: CheckResult, type_name: str | None) -> dict[str, Any]:
    """The JSON Schema (2020-12) contract of type ``type_name`` declared in the checked program
    ``result`` (``flowc schema``; docs/reference/types.md), or with None the schema its input is
    validated against: a value's JSON form, as ``flowc gen python`` models it (``Verdict``
    too).  Raises :class:`agentflow.errors.ContractError` for a type with no JSON form (an
    ``extern type``, or a program with errors), saying why; the caller checks that the name is
    declared (``result.env.names()``) or built in (:data:`BUILTIN_SCHEMA_TYPES`)."""
    target: T.Type = result.input_type if type_name is None else T.NamedRef(type_name)
    if type_name is not None and type_name not in result.env.names():
        target = BUILTIN_SCHEMA_TYPES.get(type_name, target)
    return contract_for(target, result.env, values=True)


def format_flow_file(path: str | os.PathLike[str], *, check: bool = False) -> bool:
    """Rewrite the `.flow` file at ``path`` in canonical layout (``flowc fmt``;
    docs/reference/cli.md), or with ``check`` only compare.  True when it is (was) not canonical.  Raises
    :class:`FormatError` for a file that does not parse, ``OSError`` when unreadable."""
    return format_file(Path(path), check=check)


def _lines(text: str) -> list[str]:
    """``text``'s lines, each with its ``\\n``, split at ``\\n`` alone — as diff(1) and patch(1)
    read a file (``str.splitlines`` also splits at U+2028, a form feed …, which a comment may
    hold: the diff's lines then were not the file's)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def format_flow_diff(path: str | os.PathLike[str]) -> str:
    """The unified diff (``difflib``, 3 lines of context, headers ``--- PATH`` / ``+++ PATH``) of
    what ``flowc fmt`` would change in the `.flow` file at ``path`` (``flowc fmt --diff``;
    docs/reference/cli.md), ``""`` when it is canonical; writes nothing.  Raises
    :class:`FormatError` for a file that does not parse, ``OSError`` when unreadable."""
    text = read_source(path)
    new = format_source(text, str(path))
    if new == text:
        return ""
    name = os.fspath(path)
    lines = difflib.unified_diff(_lines(text), _lines(new), name, name)
    # a last line without its line break gets difflib's marker, as diff(1) writes it
    return "".join(
        ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
    )
