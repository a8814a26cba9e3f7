"""The checker's declared interface: the state its phases share and the methods they call on
one another (docs/ARCHITECTURE.md "compiler").

:class:`~agentflow.compiler.checker.Checker` is assembled from mixins, one concern each
(check_declarations, check_types, check_statements, check_expressions, check_agents,
check_functions). Each mixin derives from :class:`CheckerShared`, which declares every attribute
of the checker's state (set in ``Checker.__init__``) and every method a mixin calls that another
mixin defines, so each mixin type-checks on its own — mypy's own checker is split the same way
(``mypy/checker_shared.py``). The declared methods raise ``NotImplementedError`` here; the
mixins, earlier in the method order of ``Checker``, define them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentflow.compiler.symbols import Symbol, ToolSig
from agentflow.compiler.type_names import aliases_said, spelt, spelt_words
from agentflow.compiler.types import ObjectType, Type, TypeEnv, type_str
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Diagnostic, Note, Replacement
from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import EXPRESSION_WORDS, RESERVED_WORDS
from agentflow.grammar import ast

#: The words a call ``word(…)`` cannot be written with, because the grammar reads ``word``
#: as its construct there (``map xs as x { … }``, ``ask …``: docs/reference/programs.md "User
#: functions"): a function of that name could never be called, nor a variable of that name
#: read (docs/reference/lexical.md "Keywords").
GRAMMAR_WORDS: frozenset[str] = frozenset(EXPRESSION_WORDS) - RESERVED_WORDS - set(FUNCTIONS)


def is_reserved(name: str) -> bool:
    """Whether ``name`` cannot be a variable's, a parameter's or a function's: a reserved
    word, or a word the grammar reads as its construct where a value is read."""
    return name in RESERVED_WORDS or name in GRAMMAR_WORDS


#: what a condition tells of names and field paths in one branch (check_narrowing): the path
#: (``("input", "pet")``) → (the symbol of its first name, its narrowed type)
Narrowing = dict[tuple[str, ...], tuple[Symbol, Type]]


class Reporter(Protocol):
    """The signature of :meth:`CheckerShared.report`, for helpers that take it as a callback."""

    def __call__(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        notes: list[Note] | None = None,
        hint: str | None = None,
    ) -> None: ...


@dataclass(slots=True)
class Var:
    """A name bound in a scope (``let``, a loop variable, a test's name): its symbol, where it
    was bound, and whether anything used it (``unused-variable``)."""

    symbol: Symbol
    span: Span
    used: bool = False


@dataclass(slots=True)
class Frame:
    """A stage or control body: its expected value type and the value types it produced."""

    expected: Type | None
    values: list[Type] = field(default_factory=list)


class CheckerShared:
    """The state and shared methods of one check (see the module docstring)."""

    alias_decls: dict[str, ast.TypeDecl]
    alias_done: dict[str, Type]
    alias_reported: set[str]
    all_stages: dict[str, ast.StageDecl]
    closed_names: dict[str, Any]
    prefixed_strings: dict[int, ast.StringLit]
    constants: dict[int, Any]
    current_stage: str | None
    deadline_ms: int | None
    declared_output: Type | None
    diags: list[Diagnostic]
    discarded: ast.Expr | None
    env: TypeEnv
    error_names: set[str]
    #: library function names a `fn` of this file took (refused): their calls are not checked
    library_names_refused: set[str]
    expr_depth: int
    externs: dict[str, ast.ExternTool]
    frames: list[Frame]
    header: ast.FlowHeader | None
    input_sym: Symbol
    input_type: Type
    items: list[ast.Item]
    max_expr_depth: int
    memo: Any
    module: ast.Module
    #: the narrowings in force, innermost last (check_narrowing)
    narrows: list[Narrowing]
    output_type: Type
    prelude_sigs: dict[str, ToolSig]
    proj: list[Type]
    range_ok: int | None
    redefined_builtins: set[str]
    refs: dict[int, Symbol]
    scopes: list[dict[str, Var]]
    settling: int
    singles: dict[type, ast.Item]
    stage_order: list[ast.StageDecl]
    stage_syms: dict[str, Symbol]
    stage_types: dict[str, Type]
    tests: list[ast.TestDecl]
    #: the flow's output type as a test's ``expect`` sees it (set by check_tests.check_tests)
    test_output_type: Type
    #: while a test block or a `match` pattern is checked: its strings are constants (data a
    #: test passes through, a value compared; they may hold ``{x}`` on purpose, and cannot
    #: hold ``${x}``), never read as a misspelt ``${x}``
    constant_strings: bool = False
    tool_calls: set[int]
    tool_decls: dict[str, ToolSig]
    tools: dict[str, ToolSig]
    type_decls: dict[str, ast.TypeDecl | ast.ExternType]
    imports: Any
    imported_items: list[ast.Item]
    import_names: dict[int, str]
    import_refs: dict[int, str]
    hidden: dict[str, str]
    hidden_fns: set[str]
    types: dict[int, Type]
    folded: dict[int, int | float]
    use_syms: dict[str, Symbol]
    uses: dict[str, ast.UseDecl]

    def said(self, t: Type) -> str:
        """``t`` in a message, in the names the program wrote: a union or inline object that is
        one alias's type is said by the alias's name (``Sev``, ``Sev[]``, ``Pair?``:
        :func:`~agentflow.compiler.type_names.spelt`; docs/diagnostics.md)."""
        return spelt(self.env, t)

    def said_words(self, t: Type) -> str:
        """:meth:`said` in backticks, the long union of run-time codes named shortly
        (:func:`~agentflow.compiler.type_names.spelt_words`)."""
        return spelt_words(self.env, t)

    def alias_notes(self, *types: Type) -> list[Note]:
        """One note for each alias :meth:`said` names in ``types`` (at most two), saying what it
        stands for: "`Sev` is `"low" | "medium" | "high"`" — the message says the name, the
        note what a value of it may be."""
        notes: list[Note] = []
        seen: set[str] = set()
        for t in types:
            for name, meant in aliases_said(self.env, t):
                if name not in seen and len(notes) < 2:
                    seen.add(name)
                    notes.append(Note(f"`{name}` is `{type_str(meant)}`"))
        return notes

    def reserved_name(self, name: str, span: Span, what: str) -> bool:
        """Report ``reserved-name`` when ``name``, bound as ``what`` (``a variable``, ``a
        parameter``, ``a function``), is a reserved word or a word the grammar reads as its
        construct where a value is read (:data:`GRAMMAR_WORDS`: ``parallel``, ``map`` …), so
        that a use of it could never reach the binding (docs/reference/lexical.md "Keywords").
        True when reported."""
        if not is_reserved(name):
            return False
        if name in RESERVED_WORDS:
            why = "a reserved word, never a name"
        elif what == "a function":
            why = (
                f"a word of the language: `{name}(…)` reads as its construct, so a function of "
                "that name could never be called"
            )
        else:
            why = (
                f"a word of the language: where a value is read, `{name}` starts its construct, "
                f"so {what} of that name could never be read"
            )
        self.report(
            D.RESERVED_NAME,
            f"`{name}` is {why}",
            span,
            hint=f"name it otherwise (`my_{name}`); a word of the language is still fine as a "
            f"field or key (`x.{name}`, `{{ {name}: 1 }}`)",
        )
        return True

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        notes: list[Note] | None = None,
        hint: str | None = None,
        fix: Replacement | None = None,
    ) -> None:
        """Add a diagnostic ``code`` (registered in core/diagnostics.py, its severity from there)
        at ``span``; ``fix`` is the one exact edit ``hint`` states (a misspelt name's
        :func:`~agentflow.core.diagnostics.respelling`)."""
        sev = D.CODES[code].severity
        self.diags.append(Diagnostic(code, message, span, notes or [], hint, sev, fix))

    def _hint_parts(self, hint: Type | None) -> Type | None:
        raise NotImplementedError

    def body(self, block: ast.Block, expected: Type | None, owner_span: Span, what: str) -> Type:
        raise NotImplementedError

    def budget(self, spec: ast.BudgetSpec) -> None:
        raise NotImplementedError

    def check_stage(self, stage: ast.StageDecl) -> None:
        raise NotImplementedError

    def count_setting(
        self,
        e: ast.Expr,
        what: str,
        maximum: int,
        *,
        least: int = 1,
        hint: str | None = None,
        low_hint: str | None = None,
    ) -> None:
        raise NotImplementedError

    def source_text(self, e: ast.Expr) -> str:
        raise NotImplementedError

    def pattern_text(self, p: ast.Expr) -> str:
        raise NotImplementedError

    def constant(self, e: ast.Expr, depth: int = 0) -> tuple[bool, Any]:
        raise NotImplementedError

    def optional_in_text(self, text: Any, what: str) -> None:
        raise NotImplementedError

    def declare(self, symbol: Symbol, span: Span) -> None:
        raise NotImplementedError

    def elem_type(self, over: ast.Expr, what: str) -> Type:
        raise NotImplementedError

    def expr(self, e: ast.Expr, expected: Type | None = None) -> Type:
        raise NotImplementedError

    def infer(self, e: ast.Expr, hint: Type | None = None) -> Type:
        raise NotImplementedError

    def list_elem(self, t: Type, what: str, span: Any) -> Type:
        raise NotImplementedError

    def sleep_stmt(self, s: ast.SleepStmt) -> None:
        raise NotImplementedError

    def lookup(self, name: str) -> Symbol | None:
        raise NotImplementedError

    def method_call(self, e: ast.Call) -> bool:
        raise NotImplementedError

    def mismatch(self, expr: ast.Expr, got: Type, want: Type) -> None:
        raise NotImplementedError

    def _mismatch_hint(self, got: Type, want: Type) -> str | None:
        raise NotImplementedError

    def _literal_hint(self, expr: ast.Expr, want: Type) -> str | None:
        raise NotImplementedError

    def name(self, e: ast.Name) -> Type:
        raise NotImplementedError

    def not_a_function_call(self, e: ast.Call) -> bool:
        raise NotImplementedError

    def user_function_meant(self, name: str) -> str | None:
        raise NotImplementedError

    def function_as_value(self, e: ast.Name) -> bool:
        raise NotImplementedError

    def visible_names(self) -> set[str]:
        raise NotImplementedError

    def user_function_misuse(self, e: ast.Call) -> bool:
        raise NotImplementedError

    def object_type(
        self,
        t: ast.ObjectType,
        name: str | None,
        doc: str | None,
        alias_stack: tuple[str, ...] = (),
    ) -> ObjectType:
        raise NotImplementedError

    def narrowed(self, narrowing: Narrowing) -> Any:
        raise NotImplementedError

    def narrowed_type(self, e: ast.Expr) -> Type | None:
        raise NotImplementedError

    def narrowing_hint(self, e: ast.Expr, union: Any, name: str) -> str | None:
        raise NotImplementedError

    def narrowings(self, cond: ast.Expr) -> tuple[Narrowing, Narrowing]:
        raise NotImplementedError

    def pop_scope(self) -> None:
        raise NotImplementedError

    def resolve_alias(self, name: str, stack: tuple[str, ...]) -> Type:
        raise NotImplementedError

    def resolve_type(self, t: ast.TypeExpr, alias_stack: tuple[str, ...] = ()) -> Type:
        raise NotImplementedError

    def stmts(self, stmts: list[ast.Stmt], frame: Frame, *, top: bool) -> bool:
        raise NotImplementedError

    def tool_sig(self, item: ast.ExternTool) -> ToolSig:
        raise NotImplementedError
