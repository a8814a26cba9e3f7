"""What names and tools resolve to in a checked program, and the "did you mean" for names.

:class:`Symbol` (a value name: ``input``, a stage, a ``let``, a loop variable, a ``use`` alias) and
:class:`ToolSig` (a tool's parameters and result) are part of the
:class:`~agentflow.compiler.checker.CheckResult`; the checker's modules share :func:`suggest`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentflow.compiler.types import (
    ERROR,
    Type,
)
from agentflow.core.diagnostics import closest, meant_hint


@dataclass(slots=True)
class Symbol:
    """What a name refers to.

    ``kind`` is one of ``input``, ``stage``, ``let``, ``loopvar``, ``acc``, ``index``, ``use``,
    ``param`` or ``error`` (the failure ``catch … as e`` binds); ``name`` the name; ``type`` its
    type; ``decl`` the declaring node (``StageDecl``, ``LetStmt``, the ``MapExpr``/
    ``FilterExpr``/``ReduceExpr``/``LoopExpr`` binding a loop variable, the ``CatchExpr``/
    ``TryExpr`` binding an error, the ``UseDecl``, or ``None`` for ``input``).
    """

    kind: str
    name: str
    type: Type = ERROR
    decl: Any = None


@dataclass(slots=True)
class ToolSig:
    """A tool signature: ``params`` maps name → ``(type, optional)``; ``declared`` is False for
    an untyped catalog tool (``server__tool`` without ``extern tool``), whose params are the
    arguments of the call and whose result is ``json``.  ``prelude`` is True for the standard
    library tools (named ``builtin__<name>`` in plans)."""

    name: str
    params: dict[str, tuple[Type, bool]]
    returns: Type
    declared: bool = True
    prelude: bool = False
    decl: Any = None
    #: the catalog tool's own name when it differs from ``name``
    #: (``extern tool "everything__get-tiny-image" as everything__get_tiny_image(…)``)
    catalog: str | None = None

    @property
    def catalog_name(self) -> str:
        """The tool's name in plans and the catalog: ``builtin__NAME`` for the prelude, the
        quoted name of an ``extern tool "…" as NAME``, else ``name``."""
        if self.prelude:
            return f"builtin__{self.name}"
        return self.catalog or self.name


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The "did you mean" hint of :func:`suggest_name`, or None."""
    meant = suggest_name(name, candidates)
    return meant_hint(meant) if meant is not None else None


def suggest_name(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` is a slip of: :func:`~agentflow.core.diagnostics.closest`, plus
    one swap of adjacent letters (``titel`` → ``title``) and case-only differences; or None."""
    names = sorted(candidates)
    meant = closest(name, names)
    if meant:
        return meant
    for cand in names:
        if cand.lower() == name.lower():
            return cand
        if len(cand) == len(name):
            diff = [i for i, (a, b) in enumerate(zip(name, cand, strict=True)) if a != b]
            if (
                len(diff) == 2
                and diff[1] == diff[0] + 1
                and name[diff[0]] == cand[diff[1]]
                and name[diff[1]] == cand[diff[0]]
            ):
                return cand
    return None


def suggest_alias_name(name: str, candidates: Iterable[str]) -> str | None:
    """:func:`suggest_name`, or the one candidate ``name`` begins or ends (``wri`` →
    ``writer``, ``crit`` → ``critic``: an alias cut short)."""
    names = sorted(candidates)
    meant = suggest_name(name, names)
    if meant or len(name) < 2:
        return meant
    cut = [c for c in names if c != name and (c.startswith(name) or name.startswith(c))]
    return cut[0] if len(cut) == 1 else None
