"""Per-stage memo of the checker, for re-checking successive versions of one document (the
language server's incremental analysis; docs/decisions.md "Incremental checking in the language
server").

The checker's stage phase (``check_stages``) is most of a check.  A :class:`StageMemo` given to
:func:`agentflow.compiler.checker.check_module` records what checking each stage did to the
checker's state, and on the next check *replays* it instead of checking the stage again when
nothing the stage's check read can have changed:

- the stage is the same AST object (the language server's
  :class:`~agentflow.lsp.incremental.IncrementalParser` reuses the AST of an unchanged
  top-level item, shifting its spans in place, so same object = same text);
- every item that is not a stage (types, tools, ``use``, ``input``, header, settings, tests …:
  the environment a stage is checked in) and did parse is the same object as then;
- for every word of the stage's text (a superset of the names its check can look up), the
  checker says the same as then: a stage seen so far, with an equal type, or not; a stage at
  all or not; the name of an item that failed to parse or not;
- it is the only stage of its name;
- checking it reported nothing (a stage with a diagnostic is always checked again: its messages
  may name positions and scopes of other items).

What is replayed: the expression types, references and constants of the stage's nodes, the
tools it calls, the names whose scope ended in it (for later "unknown name" messages), the
deepest expression nesting, and the stage's own type and symbol.  The result equals a full
check's (``tests/lsp/test_incremental_check.py`` checks it on random edits).
"""

from __future__ import annotations

import re
from itertools import islice
from typing import TYPE_CHECKING, Any

from agentflow.compiler.symbols import Symbol
from agentflow.grammar import ast

if TYPE_CHECKING:  # pragma: no cover
    from agentflow.compiler.checker import Checker

__all__ = ["StageMemo"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _view(ck: Checker, words: frozenset[str]) -> tuple[Any, ...]:
    """What the checker's state says about the names a stage's text holds (a superset of the
    names its check can look up): for each, whether it is a stage seen so far and its type,
    whether it is a stage at all, and whether it names an item that failed to parse."""
    syms, stages, errors = ck.stage_syms, ck.all_stages, ck.error_names
    # every stage seen so far is in `stages`; `words` is iterated in the same order each time
    # (the record keeps the one frozenset)
    return tuple(
        (w, syms[w].type if w in syms else None, w in stages, w in errors)
        for w in words
        if w in stages or w in errors
    )


class _Record:
    """What checking one stage did (see the module docstring)."""

    __slots__ = (
        "stage",
        "ctx",
        "keep",
        "words",
        "view",
        "types",
        "refs",
        "constants",
        "tool_calls",
        "tools",
        "closed",
        "depth",
        "own",
    )

    def __init__(
        self,
        stage: ast.StageDecl,
        ctx: tuple[Any, ...],
        keep: list[ast.Item],
        words: frozenset[str],
        view: tuple[Any, ...],
    ) -> None:
        self.stage = stage
        self.ctx = ctx
        self.keep = keep
        self.words = words
        self.view = view
        self.types: list[tuple[int, Any]] = []
        self.refs: list[tuple[int, Symbol]] = []
        self.constants: list[tuple[int, Any]] = []
        self.tool_calls: list[int] = []
        self.tools: list[str] = []
        self.closed: list[tuple[str, Any]] = []
        self.depth = 0
        self.own: Any = None


class RecordingSet(set[Any]):
    """A set of ints that also logs what is added (the checker's ``tool_calls`` while a memo
    records)."""

    log: list[int]

    def __init__(self) -> None:
        super().__init__()
        self.log = []

    def add(self, x: int) -> None:
        self.log.append(x)
        set.add(self, x)


class RecordingDict(dict[Any, Any]):
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
        #: the text of the module being checked (set by the caller before each check)
        self.text: str | None = None
        self.older: dict[int, _Record] = {}
        #: what building the object types did, when it reported nothing (see
        #: :meth:`replay_object_types`)
        self.objects: list[tuple[Any, ...]] = []
        #: stages replayed / checked by the last check (for tests and benchmarks)
        self.replayed = 0
        self.checked = 0

    def replay_object_types(self, ck: Checker) -> tuple[Any, ...] | None:
        """Before ``build_object_types``: fill ``ck``'s object types from the previous check and
        return None when every item that is not a stage is the same object as then (and the
        names of the items that failed to parse are the same) and building them reported
        nothing; else the marks :meth:`record_object_types` needs after building them."""
        items = ck.module.items
        key = (
            tuple(id(i) for i in items if not isinstance(i, (ast.StageDecl, ast.ErrorItem)))
            + tuple(id(i) for i in ck.imported_items),
            frozenset(ck.error_names),
        )
        for rec in self.objects:
            if rec[0] == key:
                _key, objects, types, refs, constants, _keep = rec
                ck.env.objects.update(objects)
                ck.types.update(types)
                ck.refs.update(refs)
                ck.constants.update(constants)
                self.objects = [rec] + [r for r in self.objects if r is not rec]
                return None
        keep = [i for i in items if not isinstance(i, ast.StageDecl)] + ck.imported_items
        return (key, keep, len(ck.diags), len(ck.types), len(ck.refs), len(ck.constants))

    def record_object_types(self, ck: Checker, marks: tuple[Any, ...]) -> None:
        """After ``build_object_types`` (``marks`` from :meth:`replay_object_types`)."""
        key, keep, n_diags, n_types, n_refs, n_consts = marks
        if len(ck.diags) != n_diags:
            return
        rec = (
            key,
            dict(ck.env.objects),
            list(islice(ck.types.items(), n_types, None)),
            list(islice(ck.refs.items(), n_refs, None)),
            list(islice(ck.constants.items(), n_consts, None)),
            keep,
        )
        self.objects = [rec, *self.objects[:1]]  # two generations, as for the stages

    def check_stages(self, ck: Checker) -> None:
        """``ck.check_stages()``, replaying the stages recorded by the previous check that
        nothing can have changed."""
        items = ck.module.items
        ctx = tuple(
            id(i) for i in items if not isinstance(i, (ast.StageDecl, ast.ErrorItem))
        ) + tuple(id(i) for i in ck.imported_items)
        text = self.text
        # the records keep their stages and context items alive, so ids are not reused
        keep = [i for i in items if not isinstance(i, ast.StageDecl)] + ck.imported_items
        old, older = self.records, self.older
        new: dict[int, _Record] = {}
        self.replayed = self.checked = 0
        for item in ck.items:
            if not isinstance(item, ast.StageDecl):
                continue
            for rec in (old.get(id(item)), older.get(id(item))):
                if (
                    rec is not None
                    and rec.stage is item
                    and rec.ctx == ctx
                    and rec.view == _view(ck, rec.words)
                    and self._replay(ck, rec)
                ):
                    new[id(item)] = rec
                    self.replayed += 1
                    break
            else:
                rec = None
            if rec is not None:
                continue
            self.checked += 1
            if text is None or ck.all_stages.get(item.name.name) is not item:
                ck.check_stage(item)  # no text to key by, or a second stage of that name
                continue
            words = frozenset(_WORD.findall(text, item.span.start, item.span.end))
            rec = self._record(ck, item, _Record(item, ctx, keep, words, _view(ck, words)))
            if rec is not None:
                new[id(item)] = rec
        # two generations: after a version parsed whole (all new objects), the next version
        # may reuse the ASTs of the one before it
        self.records, self.older = new, old
        self.text = None

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
        rec.own = ck.stage_types[stage.name.name]
        return rec

    @staticmethod
    def _replay(ck: Checker, rec: _Record) -> bool:
        syms = ck.stage_syms
        stage = rec.stage
        if ck.all_stages.get(stage.name.name) is not stage:
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
        name = stage.name.name
        ck.stage_types[name] = rec.own
        syms[name] = Symbol("stage", name, rec.own, stage)
        ck.stage_order.append(stage)
        return True
