"""The `.flow` type checker (docs/spec/LANGUAGE.md §2–9).

``check_module(module, parse_diagnostics=...)`` resolves every name and type of a parsed module,
types every expression (bidirectionally: an expected type flows into literals), and reports all
the problems it finds as :class:`~agentflow.core.diagnostics.Diagnostic` objects.  It never
raises for any module the parser can produce, and it avoids cascades: anything whose type could
not be determined gets the error type (:data:`~agentflow.compiler.types.ERROR`), which is silently
assignable to and from everything.  Items that are :class:`ast.ErrorItem` get no diagnostics.

The :class:`CheckResult` carries what the lowering needs: the type of every expression
(``expr_types``, keyed by ``id(node)``), what every name refers to (``references``), the stage
types, the tools called with their signatures, and the flow's header data.

This module is the driver: :class:`Checker` holds the state of one check and
:meth:`Checker.check` runs the phases by name, in order.  The phases and rules live in the
modules :class:`Checker` is assembled from, one concern each:

- :mod:`~agentflow.compiler.check_declarations` — the phases over top-level items;
- :mod:`~agentflow.compiler.check_types` — type expressions, aliases, constraints, mismatches;
- :mod:`~agentflow.compiler.check_statements` — stages, bodies, scopes, statements, names, loops;
- :mod:`~agentflow.compiler.check_expressions` — the ``visit_<Node>`` typing rules;
- :mod:`~agentflow.compiler.check_agents` — tool calls, agents, ``ask``, ``verify``, settings;
- :mod:`~agentflow.compiler.check_functions` — library function calls, ``if … then … else``;
- :mod:`~agentflow.compiler.check_tests` and :mod:`~agentflow.compiler.check_errors` — ``test``
  blocks and errors as values, called from the phases and rules above.
"""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.compiler import check_depth
from agentflow.compiler.check_agents import AgentChecks
from agentflow.compiler.check_declarations import DeclarationChecks
from agentflow.compiler.check_expressions import _DISPATCH, ExpressionChecks
from agentflow.compiler.check_functions import FunctionChecks
from agentflow.compiler.check_match import MatchChecks
from agentflow.compiler.check_memo import RecordingDict, RecordingSet, StageMemo
from agentflow.compiler.check_narrowing import NarrowingChecks
from agentflow.compiler.check_parallel import ParallelChecks
from agentflow.compiler.check_statements import StatementChecks
from agentflow.compiler.check_types import TypeChecks
from agentflow.compiler.check_user_functions import FnSig, UserFunctionChecks
from agentflow.compiler.checker_shared import Frame, Narrowing, Var
from agentflow.compiler.symbols import Symbol, ToolSig
from agentflow.compiler.types import (
    ERROR,
    JSON,
    Type,
    TypeEnv,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Diagnostic
from agentflow.grammar import ast
from agentflow.stdlib import PRELUDE

__all__ = [
    "Symbol",
    "ToolSig",
    "CheckResult",
    "check_module",
    "prelude_tools",
    "flow_name_from_file",
]


@dataclass(slots=True)
class CheckResult:
    """The outcome of :func:`check_module`.

    - ``diagnostics``: parse and check diagnostics, sorted by position;
    - ``module``: the checked :class:`ast.Module`; ``env``: the named types;
    - ``expr_types``: ``id(expr node)`` → :class:`Type`, for every expression checked;
    - ``stage_types``: stage name → declared (or inferred) type; ``stages``: the stage
      declarations in order (duplicates and error items left out);
    - ``uses``: alias → :class:`ast.UseDecl`;
    - ``tools``: name → :class:`ToolSig` for every tool called;
      ``tool_decls``: every declared tool (file ``extern tool`` and prelude);
    - ``input_type`` (``json`` without ``input``), ``output_type`` (``output`` or the last
      stage's type), ``flow_name`` (header name, else the file stem with ``-`` → ``_``),
      ``description``, ``deadline_ms``;
    - ``references``: ``id(ast.Name node)`` → :class:`Symbol`;
    - ``constants``: ``id(expr)`` → the value the compiler computed for a setting written as a
      constant (``limit``, ``max_iterations``, ``timeout``, ``retry { attempts }``, budget
      limits): an int or float, a duration as its text (``"1m30s"``). A ``limit`` or
      ``max_iterations`` that is not a constant is absent: the plan evaluates it at run time
      (docs/decisions.md "Settings: compile time or run time").
    """

    diagnostics: list[Diagnostic]
    module: ast.Module
    env: TypeEnv
    expr_types: dict[int, Type]
    stage_types: dict[str, Type]
    stages: list[ast.StageDecl]
    uses: dict[str, ast.UseDecl]
    tools: dict[str, ToolSig]
    tool_decls: dict[str, ToolSig]
    input_type: Type
    output_type: Type
    flow_name: str
    description: str | None
    deadline_ms: int | None
    references: dict[int, Symbol]
    constants: dict[int, Any] = field(default_factory=dict)
    #: the ``test`` blocks (docs/reference/testing.md), checked; not part of the plan
    tests: list[ast.TestDecl] = field(default_factory=list)
    #: the ``eval`` blocks (docs/reference/evals.md), checked (``check_evals.CheckedEval``)
    evals: list[Any] = field(default_factory=list)
    #: every type declaration in scope, by name: the file's own and the imported ones (whose
    #: spans name their files; docs/reference/programs.md "import")
    type_decls: dict[str, ast.TypeDecl | ast.ExternType] = field(default_factory=dict)
    #: the file's imports (``compiler.imports.Imports``), None without ``import`` items
    imports: Any = None
    #: the user functions in scope by name (``fn``: docs/reference/functions.md "User
    #: functions"), this file's and imported ones
    functions: dict[str, FnSig] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        """The error-severity diagnostics."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def type_of(self, node: ast.Node) -> Type:
        """The type recorded for an expression node (the error type when none)."""
        return self.expr_types.get(id(node), ERROR)


@functools.cache
def _prelude_module() -> ast.Module | None:
    # the parser (lark and its tables, ~70 ms) loads on first use, not when `flowc` starts
    from agentflow.grammar.parser import parse_module

    try:
        text = PRELUDE.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover
        return None
    module, _diags = parse_module(text, "<prelude>")
    return module


@functools.cache
def prelude_tools() -> dict[str, ToolSig]:
    """The standard library tool signatures (docs/spec/LANGUAGE.md §7), parsed once from
    ``stdlib/prelude.flow`` and cached for the process."""
    module = _prelude_module()
    if module is None:
        return {}
    env = TypeEnv()
    resolver = Checker(ast.Module(module.span, module.file, []), (), prelude=False)
    resolver.env = env
    sigs: dict[str, ToolSig] = {}
    for item in module.items:
        if isinstance(item, ast.ExternTool):
            sig = resolver.tool_sig(item)
            sig.prelude = True
            sigs[item.name.name] = sig
    return sigs


class Checker(
    DeclarationChecks,
    TypeChecks,
    StatementChecks,
    ExpressionChecks,
    AgentChecks,
    FunctionChecks,
    MatchChecks,
    NarrowingChecks,
    UserFunctionChecks,
    ParallelChecks,
):
    """The checker of one module: its state, and :meth:`check`, the phases in order."""

    def __init__(
        self,
        module: ast.Module,
        parse_diagnostics: Iterable[Diagnostic],
        *,
        prelude: bool = True,
        memo: StageMemo | None = None,
        imports: Any = None,
    ) -> None:
        self.module = module
        #: the resolved ``import`` items (``compiler.imports.Imports``), None without them
        self.imports = imports
        #: the imported declarations (checked with the file's own, diagnosed in their files)
        self.imported_items: list[ast.Item] = []
        #: ``id(declaration)`` → this file's name for an imported type (renamed or not)
        self.import_names: dict[int, str] = {}
        #: ``id(NamedType)`` in an imported declaration → this file's name for its type, where
        #: it differs from the name written (a renamed import: ``Imports.refs``)
        self.import_refs: dict[int, str] = imports.refs if imports is not None else {}
        #: a type brought in only because an imported type refers to it → that type's name
        self.hidden: dict[str, str] = {}
        #: user functions brought only because an imported one calls them (not callable here)
        self.hidden_fns: set[str] = set()
        #: the per-stage memo of the previous check of this document (language server), if any
        self.memo = memo
        self.use_prelude = prelude
        self.diags: list[Diagnostic] = list(parse_diagnostics)
        self.env = TypeEnv()
        self.types: dict[int, Type] = {}
        #: the value of each arithmetic node that is pure literal arithmetic (constant-overflow)
        self.folded: dict[int, int | float] = {}
        #: how deeply expressions nest while being typed (now / the most seen), for _SHALLOW
        self.expr_depth = self.max_expr_depth = 0
        self.refs: dict[int, Symbol] = {}
        self.scopes: list[dict[str, Var]] = []
        self.frames: list[Frame] = []
        self.proj: list[Type] = []
        self.narrows: list[Narrowing] = []
        self.stage_types: dict[str, Type] = {}
        self.stage_syms: dict[str, Symbol] = {}
        self.stage_order: list[ast.StageDecl] = []
        self.all_stages: dict[str, ast.StageDecl] = {}
        self.current_stage: str | None = None
        self.uses: dict[str, ast.UseDecl] = {}
        self.use_syms: dict[str, Symbol] = {}
        self.externs: dict[str, ast.ExternTool] = {}
        self.tool_decls: dict[str, ToolSig] = {}
        self.tools: dict[str, ToolSig] = {} if memo is None else RecordingDict()
        self.tool_calls: set[int] = set() if memo is None else RecordingSet()
        #: the expression statement whose value is not used (a `try` statement; check_errors)
        self.discarded: ast.Expr | None = None
        #: trial passes of `reduce` bodies in progress (check_statements.settle_acc)
        self.settling = 0
        self.error_names: set[str] = set()
        self.library_names_refused: set[str] = set()
        #: built-in type names a `type` tried to redefine: their uses are not checked again
        #: (the redefinition is the one error, no cascade where the user's type was meant)
        self.redefined_builtins: set[str] = set()
        #: the last binding of each name whose scope has ended (to say where it was visible)
        self.closed_names: dict[str, Any] = {}
        #: ``f"…{x}…"`` read as the name ``f`` and a string statement: id(name) → the string
        #: (the unknown name's hint), and the ids of those strings (never `unreachable-code`)
        self.prefixed_strings: dict[int, ast.StringLit] = {}
        self.type_decls: dict[str, ast.TypeDecl | ast.ExternType] = {}
        self.alias_decls: dict[str, ast.TypeDecl] = {}
        self.alias_done: dict[str, Type] = {}
        self.alias_reported: set[str] = set()
        self.input_type: Type = JSON
        self.input_sym = Symbol("input", "input", JSON, None)
        self.range_ok: int | None = None
        self.target_ok: int | None = None
        self.constants: dict[int, Any] = {}
        # what the declaration phases find (check_declarations.py)
        self.prelude_sigs: dict[str, ToolSig] = prelude_tools() if prelude else {}
        self.items: list[ast.Item] = []
        self.singles: dict[type, ast.Item] = {}
        self.header: ast.FlowHeader | None = None
        self.deadline_ms: int | None = None
        self.declared_output: Type | None = None
        self.output_type: Type = JSON
        self.tests: list[ast.TestDecl] = []
        self.evals: list[Any] = []

    def check(self) -> CheckResult:
        """Check the module: the phases below, in order, then the result."""
        self.collect_items()
        self.declare_type_names()
        self.resolve_aliases()
        self.build_object_types()
        self.declare_uses_and_stages()
        self.declare_tools()
        self.declare_user_functions()
        self.check_user_functions()
        self.check_input()
        self.check_settings()
        self.check_stages()
        self.check_output()
        self.check_test_blocks()
        self.check_eval_blocks()
        self.check_unused_uses()
        return self.result()

    def result(self) -> CheckResult:
        """The :class:`CheckResult` of the phases run: diagnostics deduplicated and sorted."""
        if self.header is not None:
            flow_name = self.header.name.name
            description = self.header.description
        else:
            flow_name = flow_name_from_file(self.module.file)
            description = None

        diags = _dedupe(self.diags)
        if self.imports is not None:
            # the imported declarations' own problems are their files' (`import-error` here)
            other = self.imports.files
            diags = [d for d in diags if d.span.file not in other]
            diags.extend(self.imports.diagnostics)
        diags.sort(key=lambda d: d.sort_key())
        return CheckResult(
            diagnostics=diags,
            module=self.module,
            env=self.env,
            expr_types=self.types,
            stage_types=dict(self.stage_types),
            stages=list(self.stage_order),
            uses=dict(self.uses),
            tools=dict(self.tools),
            tool_decls=dict(self.tool_decls),
            input_type=self.input_type,
            output_type=self.output_type,
            flow_name=flow_name,
            description=description,
            deadline_ms=self.deadline_ms,
            references=self.refs,
            constants=self.constants,
            tests=self.tests,
            evals=self.evals,
            type_decls=self.type_decls,
            imports=self.imports,
            functions=dict(self.user_fns),
        )


#: the typing rules by node class (``visit_<Class>`` of every mixin), built once at import
_DISPATCH.update(
    {
        getattr(ast, name[len("visit_") :]): getattr(Checker, name)
        for name in dir(Checker)
        if name.startswith("visit_")
    }
)


_NOT_PLAN_NAME_CHAR = re.compile(r"[^a-z0-9_]")


def flow_name_from_file(file: str) -> str:
    """The plan name of a flow without a ``flow`` header, from its file name
    (docs/spec/LANGUAGE.md §2, extended in docs/decisions.md "Lowering"): the stem lower-cased,
    ``-`` and every other character outside ``[a-z0-9_]`` replaced by ``_``, prefixed with ``flow_``
    when it starts with a digit, and ``flow`` when empty — so it always matches ``[a-z_][a-z0-9_]*``
    (docs/spec/PLAN_IR.md).

    ``"bug-triage.flow"`` → ``bug_triage``; ``"v1.2.flow"`` → ``v1_2``; ``"1st.flow"`` →
    ``flow_1st``; ``"café.flow"`` → ``caf_``; ``"<input>"`` → ``_input_``.
    """
    name = _NOT_PLAN_NAME_CHAR.sub("_", Path(file).stem.lower())
    if not name:
        return "flow"
    if name[0].isdigit():
        name = "flow_" + name
    return name


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.span.file, d.span.line, d.span.column, d.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(d)
    return out


def check_module(
    module: ast.Module,
    *,
    parse_diagnostics: Iterable[Diagnostic] = (),
    prelude: bool = True,
    memo: StageMemo | None = None,
    imports: Any = None,
) -> CheckResult:
    """Type-check a parsed module (docs/spec/LANGUAGE.md §2–9) and return a :class:`CheckResult`.

    ``parse_diagnostics`` (the parser's ``syntax-error`` list) are merged into the sorted
    result.  ``prelude=False`` leaves the standard library tools out.  Never raises for any
    module the parser produces: a program nested too deeply to check gets one
    ``syntax-error`` diagnostic instead.  A program without errors is also lowered, to report
    what ``compile`` would refuse (:mod:`~agentflow.compiler.check_depth`: an expression too
    deep once compiled), so a program that checks clean compiles.

    ``memo`` (a :class:`~agentflow.compiler.check_memo.StageMemo` kept for one document) reuses
    the stage checks of the previous check of that document that nothing can have changed
    (the language server's incremental analysis); the result is the same.

    ``imports`` (a :class:`~agentflow.compiler.imports.Imports`, from
    :func:`~agentflow.compiler.imports.check_parsed`) gives the declarations of the module's
    ``import`` items; without it an ``import`` item brings nothing.
    """
    # The check allocates many small acyclic objects; pausing the cyclic collector for its
    # duration halves the time on big files (the same trick as the parser's).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = _check_module(module, parse_diagnostics, prelude, memo, imports)
        for d in result.diagnostics:
            if not d.hint:  # every diagnostic says a fix: the code's usual one, when no other
                d.hint = D.fallback_hint(d.code, d.message)
        return result
    finally:
        if was_enabled:
            gc.enable()


#: A program whose expressions nest no deeper than this (as the checker types them: each
#: expression typed inside another is a level) cannot compile to a template deeper than
#: ``MAX_EXPR_DEPTH`` (200): a level of a `.flow` expression is at most two levels of its
#: template (a field read through ``T?`` gains a default), and a `let` written out where it is
#: read adds at most 16 (the lowering inlines no deeper `let`) — 2 × 75 + 16 < 200. For such a
#: program the check skips the lowering that :mod:`~agentflow.compiler.check_depth` runs (it
#: would cost a check of a 10,000-line program a third more time).
_SHALLOW = 75


def _check_module(
    module: ast.Module,
    parse_diagnostics: Iterable[Diagnostic],
    prelude: bool,
    memo: StageMemo | None = None,
    imports: Any = None,
) -> CheckResult:
    checker = Checker(module, parse_diagnostics, prelude=prelude, memo=memo, imports=imports)
    try:
        result = checker.check()
    except RecursionError:
        if memo is not None:
            memo.records.clear()
            memo.older.clear()
            memo.objects.clear()
        checker = Checker(module, parse_diagnostics, prelude=prelude, imports=imports)
        checker.report(D.SYNTAX_ERROR, "the program is nested too deeply to check", module.span)
        return _empty_result(checker)
    if result.ok and checker.max_expr_depth > _SHALLOW:
        # what `compile` would refuse beyond the check: an expression too deep once compiled
        # (a module no deeper than _SHALLOW cannot compile to one: the lowering is skipped).
        extra = check_depth.compiled_depth_diagnostics(result)
        if extra:
            result.diagnostics = sorted([*result.diagnostics, *extra], key=lambda d: d.sort_key())
    return result


def _empty_result(checker: Checker) -> CheckResult:
    module = checker.module
    return CheckResult(
        diagnostics=sorted(_dedupe(checker.diags), key=lambda d: d.sort_key()),
        module=module,
        env=checker.env,
        expr_types={},
        stage_types={},
        stages=[],
        uses={},
        tools={},
        tool_decls=dict(prelude_tools()) if checker.use_prelude else {},
        input_type=JSON,
        output_type=JSON,
        flow_name=flow_name_from_file(module.file),
        description=None,
        deadline_ms=None,
        references={},
    )
