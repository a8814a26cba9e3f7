"""``flowc check`` of a flow's ``flow.toml`` (docs/reference/cli.md "flowc check";
docs/diagnostics.md ``invalid-config``): the file a run of the flow would read (the nearest from
its directory upward, :func:`agentflow.core.config_file.find_config`), loaded as every command
that runs loads it (:func:`agentflow.runtime.config.load_config`) — TOML syntax, unknown keys
and their did-you-mean, values, the keys of a provider's kind, references between models and
providers — so that a typo in it fails CI, not the first run.

Nothing of the environment is read: what depends on it (an unset key variable, a ``${VAR}`` of a
header or of ``[durable] database``, ``OPENAI_BASE_URL``) is the run's to say, when it starts.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentflow.core.config_file import find_config
from agentflow.core.diagnostics import INVALID_CONFIG, Diagnostic
from agentflow.core.spans import Span
from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config

__all__ = ["config_diagnostics"]

#: ``LINE:COL: message`` / ``LINE: message`` after the file's name in a ConfigError's line
_AT = re.compile(r":(\d+)(?::(\d+))?: ")
#: the did-you-mean of a message (``…; did you mean 'api_key_env'?``)
_MEANT = re.compile(r"; did you mean '([^']+)'\?$")
#: the advice of a message whose `kind` names a server speaking OpenAI's API (config_errors)
_COMPATIBLE = re.compile(r"; ([^;]+ serves OpenAI's chat-completions API: [^;]+)$")
#: the token a span covers from its column: a key, a dotted key, a table's name
_TOKEN = re.compile(r'[A-Za-z0-9_\-."]+')

_HINT = (
    "a run of this flow stops on it (flowc run, test, eval, serve); "
    "docs/reference/configuration.md lists what flow.toml takes"
)


def config_diagnostics(
    flow: str | os.PathLike[str], seen: set[Path] | None = None
) -> tuple[list[Diagnostic], dict[str, str]]:
    """The ``invalid-config`` errors of the ``flow.toml`` the run of ``flow`` (a `.flow` file)
    would read, one per problem, each at its ``file:line:col`` (the file named as
    :func:`~agentflow.core.config_file.find_config` gives it: relative below the current
    directory), with the file's text by name for the excerpts. No ``flow.toml``, one that
    loads, or one in ``seen`` (resolved paths; the file is added to it — a directory of flows
    sharing one is checked once): none. Never raises."""
    file = find_config(flow)
    if file is None:
        return [], {}
    if seen is not None:
        try:
            key = file.resolve()
        except (OSError, RuntimeError):
            key = file
        if key in seen:
            return [], {}
        seen.add(key)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""  # load_config says why, for the whole file
    try:
        load_config(file, env={})
    except ConfigError as e:
        return _diagnostics(str(file), text, str(e)), {str(file): text}
    return [], {}


def _diagnostics(name: str, text: str, error: str) -> list[Diagnostic]:
    """One diagnostic per line of ``error`` that names ``name`` (a continuation line joins the
    message before it)."""
    out: list[Diagnostic] = []
    lines = text.splitlines()
    for line in error.splitlines():
        at = _AT.match(line, len(name)) if line.startswith(name) else None
        if at is None:
            if line.startswith(f"{name}: "):  # the whole file: unreadable, no position
                out.append(_one(Span.at(name), line[len(name) + 2 :]))
            elif out:
                out[-1].message += "\n" + line
            else:
                out.append(_one(Span.at(name), line))
            continue
        row, col = int(at.group(1)), int(at.group(2) or 1)
        source = lines[row - 1] if 0 < row <= len(lines) else ""
        token = _TOKEN.match(source, col - 1)
        end = token.end() + 1 if token is not None and token.end() >= col else col
        offset = sum(len(s) + 1 for s in lines[: row - 1]) + col - 1
        span = Span(name, row, col, row, end, offset, offset + end - col)
        out.append(_one(span, line[at.end() :]))
    return out


def _one(span: Span, message: str) -> Diagnostic:
    """The diagnostic of ``message`` at ``span``: its did-you-mean as the hint."""
    meant = _MEANT.search(message)
    if meant is not None:
        return Diagnostic(
            INVALID_CONFIG,
            message[: meant.start()],
            span,
            hint=f"did you mean `{meant.group(1)}`?",
        )
    compatible = _COMPATIBLE.search(message)
    if compatible is not None:
        return Diagnostic(
            INVALID_CONFIG, message[: compatible.start()], span, hint=compatible.group(1)
        )
    return Diagnostic(INVALID_CONFIG, message, span, hint=_HINT)
