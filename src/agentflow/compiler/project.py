"""The checks of a `.flow` file that read its project's ``flow.toml`` (docs/reference/
configuration.md "Which flow.toml"): ``unknown-agent-profile`` (a ``use agent``/``use team`` name
with no profile but a similar one), ``stale-generated-module`` (a ``[gen] python`` module made
from another version of the flow), and the ``extern tool user__*``/``plan__*`` checks of
:mod:`agentflow.compiler.project_tools` (``unknown-extern-tool``, ``extern-tool-signature``).

``flowc check`` (through :mod:`agentflow.api_check`) and the language server run the same ones
with the same discovery rule (:func:`agentflow.core.config_file.find_config`: the nearest
``flow.toml`` from the flow's directory upward), so an editor shows what ``flowc check`` prints.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from agentflow.compiler.checker import CheckResult
from agentflow.compiler.gen_python import gen_modules, stale_diagnostics
from agentflow.compiler.project_tools import extern_tool_warnings as _extern_tool_warnings
from agentflow.core.config_file import find_config
from agentflow.core.diagnostics import (
    UNKNOWN_AGENT_PROFILE,
    Diagnostic,
    closest,
    meant_hint,
    respelling,
)

__all__ = [
    "agent_profile_warnings",
    "extern_tool_warnings",
    "generated_modules",
    "nearest_config",
    "project_diagnostics",
    "stale_modules",
]


def project_diagnostics(
    flow: str | os.PathLike[str], text: str, result: CheckResult
) -> list[Diagnostic]:
    """Every diagnostic of the checked `.flow` file ``flow`` (text ``text``) that its
    ``flow.toml`` decides: :func:`stale_modules` then :func:`agent_profile_warnings`, the file
    read once (and parsed again only when it changed: the language server calls this on every
    edit). Never raises for a missing, unreadable or malformed ``flow.toml`` (none then)."""
    data = nearest_config(Path(flow))
    if data is None:
        return []
    out: list[Diagnostic] = []
    modules = _listed_modules(data)
    if modules:
        out.extend(stale_diagnostics(str(flow), text, modules, result))
    out.extend(_profile_warnings(data, result))
    out.extend(_extern_tool_warnings(data, result))
    return out


def generated_modules(flow: str | os.PathLike[str]) -> list[Path]:
    """The modules the ``flow.toml`` of the `.flow` file ``flow`` (the nearest from its
    directory upward) lists under ``[gen] python``, absolute: the files the
    ``stale-generated-module`` check reads besides the flow's text (the language server
    watches them: :mod:`agentflow.lsp.watch`). None listed, no file, an unreadable one: ``[]``."""
    data = nearest_config(Path(flow))
    return [] if data is None else _listed_modules(data)


def _listed_modules(data: dict[str, Any]) -> list[Path]:
    """``[gen] python`` of the parsed ``flow.toml`` ``data``, each relative to its directory."""
    gen = data.get("gen")
    listed = gen.get("python") if isinstance(gen, dict) else None
    if not isinstance(listed, list):
        return []
    base = Path(data["__file__"]).resolve().parent
    return [base / p for p in listed if isinstance(p, str)]


def stale_modules(
    flow: str | os.PathLike[str], text: str, result: CheckResult | None = None
) -> list[Diagnostic]:
    """The ``stale-generated-module`` warnings of the `.flow` file ``flow`` whose text is
    ``text``: the modules the nearest flow.toml lists under ``[gen] python`` generated from a
    version of it with another interface — types, fields, stages, names; not a comment or
    whitespace (docs/reference/python-clients.md "Keeping the module current"). ``result``:
    the check of ``text``, when the caller has it (else it is checked when needed)."""
    modules = gen_modules(flow)
    return stale_diagnostics(str(flow), text, modules, result) if modules else []


def agent_profile_warnings(flow: str | os.PathLike[str], result: CheckResult) -> list[Diagnostic]:
    """The ``unknown-agent-profile`` warnings of the checked `.flow` file ``flow``
    (docs/diagnostics.md): each ``use agent "NAME"`` (``use team``) whose NAME the nearest
    ``flow.toml`` (from the flow's directory upward) has no ``[agents.NAME]`` (``[teams.NAME]``)
    for, but has one of a similar name — a typo the run would meet only when it runs (with the
    default profile, or failing for a team).  No ``flow.toml``, an unreadable one or one with
    no such table: none.  The span is the quoted name."""
    if not result.uses:
        return []
    data = nearest_config(Path(flow))
    return [] if data is None else _profile_warnings(data, result)


def extern_tool_warnings(flow: str | os.PathLike[str], result: CheckResult) -> list[Diagnostic]:
    """The ``unknown-extern-tool`` and ``extern-tool-signature`` warnings of the checked `.flow`
    file ``flow``: its ``extern tool user__*`` / ``plan__*`` declarations against the Python
    tools modules and the plans directory of the nearest ``flow.toml``, read without running
    anything (:mod:`agentflow.compiler.project_tools`; docs/reference/tools.md "What flowc
    check compares").  No ``flow.toml``, or a project file that cannot be read: none."""
    data = nearest_config(Path(flow))
    return [] if data is None else _extern_tool_warnings(data, result)


def _profile_warnings(data: dict[str, Any], result: CheckResult) -> list[Diagnostic]:
    """:func:`agent_profile_warnings` with the parsed ``flow.toml`` ``data``."""
    out: list[Diagnostic] = []
    for item in result.uses.values():
        table = "agents" if item.kind == "agent" else "teams"
        names = data.get(table)
        if not isinstance(names, dict) or not names or item.target in names:
            continue
        meant = closest(item.target, [str(n) for n in names])
        if meant is None:
            continue  # not a typo: an agent with no profile runs with the default one
        out.append(
            Diagnostic(
                code=UNKNOWN_AGENT_PROFILE,
                severity="warning",
                message=f"{item.kind} '{item.target}' has no [{table}.{item.target}] in "
                f"{data['__file__']}",
                span=item.target_span,
                hint=meant_hint(meant),
                fix=respelling(item.target_span, item.target, meant, before='"', after='"'),
            )
        )
    return out


def nearest_config(flow: Path) -> dict[str, Any] | None:
    """The ``flow.toml`` a run of ``flow`` reads (the nearest from its directory upward:
    :func:`agentflow.core.config_file.find_config`, the one rule), parsed, with its path (as
    given) under ``__file__``; None when there is none or it cannot be read (``flowc run``
    reports that)."""
    candidate = find_config(flow)
    if candidate is None:
        return None
    try:
        text = candidate.read_text(encoding="utf-8")
        key = (str(candidate), text)
        cached = _PARSED.get(key)
        if cached is None:
            cached = tomllib.loads(text)
            if len(_PARSED) >= 32:
                _PARSED.clear()
            _PARSED[key] = cached
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    data = dict(cached)  # a shallow copy: ``__file__`` is the caller's
    data["__file__"] = str(candidate)
    return data


#: parsed ``flow.toml`` files by (path, text): read on every call (a small file), parsed again
#: only when its text changed (the language server asks on every edit). Keyed on the text, not
#: on (mtime, size): two writes of one size within the file system's time granularity (a
#: second on some) would keep the first one's parse
_PARSED: dict[tuple[str, str], dict[str, Any]] = {}
