"""Per-stage memo of the checker, for re-checking successive versions of one document (the
language server's incremental analysis, docs/reference/editors.md "Diagnostics").

The checker's stage phase (``check_stages``) is most of a check.  A :class:`StageMemo` given to
:func:`agentflow.compiler.checker.check_module` records what checking each stage did to the
checker's state, and on the next check *replays* it instead of checking the stage again when
nothing the stage's check read can have changed:

- the stage is the same AST object (the language server's
  :class:`~agentflow.lsp.incremental.IncrementalParser` reuses the AST of an unchanged
  top-level item, shifting its spans in place, so same object = same text);
- every item that is not a stage is the same object as then (types, tools, ``use``, ``input``,
  header, settings, tests …: the environment a stage is checked in), and the names of the
  items that failed to parse are the same;
- the stages declared before it have the same names, in the same order, and every stage it
  refers to has a type equal to the one it had then;
- checking it reported nothing (a stage with a diagnostic is always checked again: its messages
  may name positions and scopes of other items).

What is replayed: the expression types, references and constants of the stage's nodes, the
tools it calls, the names whose scope ended in it (for later "unknown name" messages), the
deepest expression nesting, and the stage's own type and symbol.  The result equals a full
check's (``tests/lsp/test_incremental_check.py`` checks it on random edits).
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from agentflow.compiler.symbols import Symbol
from agentflow.grammar import ast

if TYPE_CHECKING:  # pragma: no cover
    from agentflow.compiler.checker import Checker

__all__ = ["StageMemo"]


class _Record:
    """What checking one stage did (see the module docstring)."""

    __slots__ = (
        "stage",
        "ctx",
        "before",
        "uses",
        "types",
        "refs",
        "constants",
        "tool_calls",
        "tools",
        "closed",
        "depth",
        "own",
    )

    def __init__(self, stage: ast.StageDecl, ctx: tuple, before: tuple[str, ...]) -> None:
        self.stage = stage
        self.ctx = ctx
        self.before = before
        self.uses: list[tuple[str, Any]] = []
        self.types: list[tuple[int, Any]] = []
        self.refs: list[tuple[int, Symbol]] = []
        self.constants: list[tuple[int, Any]] = []
        self.tool_calls: list[int] = []
        self.tools: list[str] = []
        self.closed: list[tuple[str, Any]] = []
        self.depth = 0
        self.own: Any = None


class RecordingSet(set):
    """A set of ints that also logs what is added (the checker's ``tool_calls`` while a memo
    records)."""

    log: list[int]

    def __init__(self) -> None:
        super().__init__()
        self.log = []

    def add(self, x: int) -> None:
        self.log.append(x)
        set.add(self, x)


class RecordingDict(dict):
    """A dict that also logs the keys assigned (the checker's ``tools`` while a memo records)."""

    log: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.log = []

    def __setitem__(self, k: str, v: Any) -> None:
        self.log.append(k)
        dict.__setitem__(self, k, v)


class StageMemo:
    """The stage records of the previous check of one document (one instance per document;
    not thread-safe)."""

    def __init__(self) -> None:
        self.records: dict[int, _Record] = {}
        #: stages replayed / checked by the last check (for tests and benchmarks)
        self.replayed = 0
        self.checked = 0

    def check_stages(self, ck: Checker) -> None:
        """``ck.check_stages()``, replaying the stages recorded by the previous check that
        nothing can have changed."""
        items = ck.module.items
        ctx = (
            tuple(id(i) for i in items if not isinstance(i, (ast.StageDecl, ast.ErrorItem))),
            tuple(sorted(ck.error_names)),
        )
        # the records keep their stages and context items alive, so ids are not reused
        keep = [i for i in items if not isinstance(i, ast.StageDecl)]
        old = self.records
        new: dict[int, _Record] = {}
        self.replayed = self.checked = 0
        for item in ck.items:
            if not isinstance(item, ast.StageDecl):
                continue
            before = tuple(ck.stage_syms)
            rec = old.get(id(item))
            if rec is not None and rec.stage is item and rec.ctx == ctx and rec.before == before:
                if self._replay(ck, rec):
                    new[id(item)] = rec
                    self.replayed += 1
                    continue
            self.checked += 1
            rec = self._record(ck, item, _Record(item, ctx, before))
            if rec is not None:
                new[id(item)] = rec
        self.records = new
        self._keep = keep

    @staticmethod
    def _record(ck: Checker, stage: ast.StageDecl, rec: _Record) -> _Record | None:
        n_diags = len(ck.diags)
        n_types, n_refs, n_consts = len(ck.types), len(ck.refs), len(ck.constants)
        calls = ck.tool_calls
        assert isinstance(calls, RecordingSet)
        n_calls = len(calls.log)
        tools = ck.tools
        assert isinstance(tools, RecordingDict)
        n_tools = len(tools.log)
        closed = dict(ck.closed_names)
        depth, ck.max_expr_depth = ck.max_expr_depth, 0
        ck.check_stage(stage)
        rec.depth = ck.max_expr_depth
        ck.max_expr_depth = max(depth, rec.depth)
        if len(ck.diags) != n_diags:
            return None
        rec.types = list(islice(ck.types.items(), n_types, None))
        rec.refs = list(islice(ck.refs.items(), n_refs, None))
        rec.constants = list(islice(ck.constants.items(), n_consts, None))
        rec.tool_calls = calls.log[n_calls:]
        rec.tools = tools.log[n_tools:]
        if any(not tools[k].declared for k in rec.tools):
            return None  # an untyped tool's parameters merge across calls
        rec.closed = [(k, v) for k, v in ck.closed_names.items() if closed.get(k) is not v]
        name = stage.name.name
        rec.uses = [
            (sym.name, sym.type)
            for _, sym in rec.refs
            if sym.kind == "stage" and sym.decl is not stage
        ]
        sym = ck.stage_syms.get(name)
        rec.own = ck.stage_types[name] if sym is not None and sym.decl is stage else None
        return rec

    @staticmethod
    def _replay(ck: Checker, rec: _Record) -> bool:
        syms = ck.stage_syms
        for name, t in rec.uses:
            sym = syms.get(name)
            if sym is None or sym.type != t:
                return False
        stage = rec.stage
        if (rec.own is not None) != (ck.all_stages.get(stage.name.name) is stage):
            return False
        ck.types.update(rec.types)
        refs = ck.refs
        for k, sym in rec.refs:
            kind = sym.kind
            if kind == "stage":
                sym = syms[sym.name]
            elif kind == "input":
                sym = ck.input_sym
            elif kind == "use":
                sym = ck.use_syms.get(sym.name, sym)
            refs[k] = sym
        ck.constants.update(rec.constants)
        calls = ck.tool_calls
        for c in rec.tool_calls:
            calls.add(c)
        for t in rec.tools:
            sig = ck.lookup_tool(t)
            if sig is not None:
                ck.tools[t] = sig
        ck.closed_names.update(rec.closed)
        if rec.depth > ck.max_expr_depth:
            ck.max_expr_depth = rec.depth
        if rec.own is not None:
            name = stage.name.name
            ck.stage_types[name] = rec.own
            syms[name] = Symbol("stage", name, rec.own, stage)
            ck.stage_order.append(stage)
        return True
