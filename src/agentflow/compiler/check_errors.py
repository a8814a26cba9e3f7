"""Errors as values in the checker (docs/reference/errors-as-values.md): the ``Outcome<T>`` of a
map that tolerates failed items (``map … tolerate 3 { … }``), its ``Error``, the list helpers
``.values`` / ``.errors``, and ``… catch [on [codes]] [as err] { fallback }``.

``Outcome<T>`` is a closed object type ``{ ok: bool, value?: T, error?: Error }`` named for hovers
and messages; ``Error`` is ``{ code, message: text, step: text, source?: text, where: ErrorPlace }``
whose ``code`` is the literal union of the run-time error codes (``core.vocabulary.ERROR_CODES``),
so comparing it with a code that does not exist is a type error; its ``where`` is an
``ErrorPlace`` (file, line, col, stage, item, agent, label).  The checker calls in here from
``visit_MapExpr``, ``visit_CatchExpr`` and ``member_type``; nothing here keeps state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentflow.compiler.types import (
    BOOL,
    INT,
    NULL,
    TEXT,
    ErrorType,
    Field,
    ListType,
    LiteralType,
    ObjectType,
    OptionalType,
    Type,
    join,
    make_optional,
    make_union,
    type_str,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, did_you_mean
from agentflow.core.vocabulary import (
    ERROR_CODES,
    ERROR_PLACE_TYPE,
    ERROR_TYPE,
    GENERIC_TYPES,
    HARD_STOP_CODES,
    OUTCOME_TYPE,
)

if TYPE_CHECKING:
    from agentflow.grammar import ast

__all__ = [
    "ERROR_OBJECT",
    "ERROR_PLACE",
    "OUTCOME_LIST_MEMBERS",
    "check_catch",
    "check_tolerance",
    "is_outcome",
    "outcome_list_member",
    "outcome_type",
    "outcome_value_type",
    "resolve_builtin_name",
    "resolve_generic",
]

#: The name prefix of outcome types (``Outcome<T>``).
_OUTCOME = OUTCOME_TYPE


def _maybe(t: Type) -> Field:
    return Field(make_optional(t), optional=True)


#: ``ErrorPlace``: where a failure happened, in the `.flow`'s terms (a run error's place:
#: ``file``/``line``/``col`` of its source, the ``stage``, map ``item``, ``agent`` and ``label``).
ERROR_PLACE = ObjectType(
    {
        "file": _maybe(TEXT),
        "line": _maybe(INT),
        "col": _maybe(INT),
        "stage": _maybe(TEXT),
        "item": _maybe(INT),
        "agent": _maybe(TEXT),
        "label": _maybe(TEXT),
    },
    name=ERROR_PLACE_TYPE,
)

#: ``Error``: what a failed step reports (docs/spec/PLAN_IR.md §8).
ERROR_OBJECT = ObjectType(
    {
        "code": Field(make_union([LiteralType(c) for c in ERROR_CODES])),
        "message": Field(TEXT),
        "step": Field(TEXT),
        "source": _maybe(TEXT),
        "where": Field(ERROR_PLACE),
    },
    name=ERROR_TYPE,
)

#: The helpers of a list of outcomes: ``.values`` (the successes' values, input order) and
#: ``.errors`` (the failures' errors, input order).
OUTCOME_LIST_MEMBERS: tuple[str, ...] = ("values", "errors")


def outcome_type(value: Type) -> ObjectType:
    """``Outcome<value>``: ``{ ok: bool, value?: value, error?: Error }``."""
    return ObjectType(
        {
            "ok": Field(BOOL),
            "value": Field(make_optional(value), optional=True),
            "error": Field(make_optional(ERROR_OBJECT), optional=True),
        },
        name=f"{_OUTCOME}<{type_str(value)}>",
    )


def is_outcome(t: Type) -> bool:
    """True for an ``Outcome<T>`` type."""
    return (
        isinstance(t, ObjectType)
        and t.name is not None
        and t.name.startswith(_OUTCOME + "<")
        and set(t.fields) == {"ok", "value", "error"}
    )


def outcome_value_type(t: Type) -> Type | None:
    """``T`` of ``Outcome<T>`` (None for another type)."""
    if not is_outcome(t):
        return None
    assert isinstance(t, ObjectType)
    v = t.fields["value"].type
    return v.inner if isinstance(v, OptionalType) else v


def outcome_list_member(t: Type, name: str) -> Type | None:
    """The type of ``xs.values`` (``T[]``) or ``xs.errors`` (``Error[]``) when ``t`` is
    ``Outcome<T>[]``; None otherwise (the caller reports the unknown field)."""
    if not isinstance(t, ListType) or name not in OUTCOME_LIST_MEMBERS:
        return None
    value = outcome_value_type(t.elem)
    if value is None:
        return None
    return ListType(value) if name == "values" else ListType(ERROR_OBJECT)


def resolve_builtin_name(name: str, span: Any, report) -> Type | None:
    """The type a bare built-in name of errors as values stands for in a type annotation:
    ``Error``, ``ErrorPlace``; ``Outcome`` without its value type is ``unknown-type`` (ERROR).
    None for any other name.  ``report(code, message, span, hint=…)`` is the checker's."""
    if name == ERROR_TYPE:
        return ERROR_OBJECT
    if name == ERROR_PLACE_TYPE:
        return ERROR_PLACE
    if name == OUTCOME_TYPE:
        report(
            D.UNKNOWN_TYPE,
            f"`{OUTCOME_TYPE}` needs the type of its value: `{OUTCOME_TYPE}<T>`",
            span,
            hint=f"write the type of the value it holds when it succeeds, e.g. `{OUTCOME_TYPE}<text>`",
        )
        return ErrorType()
    return None


def resolve_generic(t: ast.GenericType, arg: Type, report) -> Type:
    """``Name<arg>`` written in a type annotation: ``Outcome<T>`` is :func:`outcome_type`; any
    other name is ``unknown-type`` (ERROR), hinting at the agentflow spelling of another
    language's generic (``list<text>`` → ``text[]``, ``Dict<int>`` → ``map<int>``)."""
    from agentflow.grammar import ast as A

    if t.name == OUTCOME_TYPE:
        return ErrorType() if isinstance(arg, ErrorType) else outcome_type(arg)
    written = t.arg.name if isinstance(t.arg, A.NamedType) else type_str(arg)
    hint = D.generic_type_hint(t.name, [written])
    if hint is None and t.name.lower() in ("result", "either", "try", "outcome"):
        hint = f"a value or the error of a failed item is `{OUTCOME_TYPE}<{written}>`"
    if hint is None:
        hint = "only " + ", ".join(f"`{g}<T>`" for g in GENERIC_TYPES) + " and `map<T>` take a type"
    report(D.UNKNOWN_TYPE, f"unknown type `{t.name}<…>`", t.name_span, hint=hint)
    return ErrorType()


def check_tolerance(e: ast.MapExpr, report) -> None:
    """``tolerate N`` must count whole items (0 or more); ``tolerate P%`` must be 0–100%.
    ``report(code, message, span, hint=…)`` is the checker's."""
    n, span = e.tolerate, e.tolerate_span or e.span
    if n is None:
        return
    if e.tolerate_percent:
        if not 0 <= n <= 100:
            report(
                D.INVALID_VALUE,
                f"`tolerate` must be a percentage from 0% to 100%, found {n}%",
                span,
                hint="`tolerate 100%` keeps going whatever fails",
            )
    elif not isinstance(n, int):
        report(
            D.INVALID_VALUE,
            f"`tolerate` counts failed items and must be a whole number, found {n}",
            span,
            hint=f"write a percentage instead: `tolerate {n}%`",
        )


# ---------------------------------------------------------------------------------------------
# `… catch [on [codes]] [as err] { fallback }`

#: Codes only a model call can fail with (an agent, a `filter … where judge`, a `verify` judge).
_MODEL_CODES = frozenset({"model_error", "content_filter"})
#: Codes only an agent can fail with.
_AGENT_CODES = frozenset({"invalid_member", "write_scope"})


def _can_fail(guarded: ast.Node, tool_calls: set[int]) -> bool:
    """Whether the guarded expression runs anything that may fail at run time: a tool call, an
    agent, a question, a control expression, a `fail`, or a read of a path that may be missing
    (member, index, projection) or a division."""
    from agentflow.grammar import ast as A

    for n in A.walk(guarded):
        if isinstance(
            n,
            (A.Call, A.AgentExpr, A.AskExpr, A.VerifyExpr, A.MapExpr, A.FilterExpr)
            + (A.ReduceExpr, A.CatchExpr, A.TryExpr, A.Member, A.Index, A.Projection)
            + (A.FailStmt, A.RequireStmt),
        ):
            return True
        if isinstance(n, A.Binary) and n.op in ("/", "%"):
            return True
    return False


def _calls_models(guarded: ast.Node, agents_only: bool) -> bool:
    from agentflow.grammar import ast as A

    for n in A.walk(guarded):
        if isinstance(n, A.AgentExpr):
            return True
        if isinstance(n, A.Call) and isinstance(n.callee, A.Name) and "__" in n.callee.name:
            if n.callee.name.startswith("plan__"):
                return True  # a sub-plan may run agents
        if not agents_only and isinstance(n, A.VerifyExpr | A.FilterExpr):
            if not isinstance(n, A.FilterExpr) or n.judge is not None:
                return True
    return False


def _guarded(e: ast.CatchExpr | ast.TryExpr) -> ast.Node:
    """What a catch guards: the expression before ``catch``, or the ``try`` block."""
    from agentflow.grammar import ast as A

    return e.block if isinstance(e, A.TryExpr) else e.guarded


def _block(ck: Any, block: ast.Block, expected: Type | None, span: Any, what: str, value: bool):
    """Check a ``try`` block or fallback as a body; when its ``value`` is not used (a ``try``
    statement) it need not produce one (its type is then ``null`` or what it produced)."""
    if value:
        return ck.body(block, expected, span, what)
    from agentflow.compiler.check_statements import _Frame  # it imports this module

    frame = _Frame(None)
    ck.frames.append(frame)
    ck.scopes.append({})
    try:
        ck.stmts(block.stmts, frame, top=True)
    finally:
        ck.pop_scope()
        ck.frames.pop()
    return join(frame.values, ck.env) if frame.values else NULL


def check_catch(ck: Any, e: ast.CatchExpr | ast.TryExpr, hint: Type | None) -> Type:
    """Type ``guarded catch … { fallback }`` or ``try { … } catch … { fallback }``: the guarded
    expression's (block's) type ``T`` (checked against ``hint`` when given); the fallback must
    produce ``T`` (``type-mismatch``) with the binding typed ``Error``.  A ``try`` whose value is
    not used (a statement) needs no value from either block.  Codes must be run-time error codes
    (``unknown-error-code``), not ones that stop the run (``uncatchable-error-code``), and
    possible for what is guarded (``impossible-error-code``, warning); a catch whose guarded
    expression cannot fail is ``unreachable-catch`` (warning).  ``ck`` is the checker (``expr``,
    ``infer``, ``body``, ``stmts``, ``report``, scopes)."""
    from agentflow.compiler.symbols import Symbol
    from agentflow.grammar import ast as A

    kw = e.keyword_span or e.span
    guarded_node = _guarded(e)
    used = not (isinstance(e, A.TryExpr) and ck.discarded is e)
    if isinstance(e, A.TryExpr):
        guarded = _block(ck, e.block, hint, e.try_span or e.span, "the `try` block", used)
    else:
        # the fallback must produce what the context expects, else the guarded expression's type
        guarded = ck.expr(e.guarded, hint) if hint is not None else ck.infer(e.guarded)
    t = hint if hint is not None and not isinstance(guarded, ErrorType) else widen(guarded)
    for code in e.codes or []:
        name = code.name
        if name not in ERROR_CODES:
            ck.report(
                D.UNKNOWN_ERROR_CODE,
                f"`{name}` is not an error code",
                code.span,
                hint=did_you_mean(name, list(ERROR_CODES))
                or "codes: " + ", ".join(c for c in ERROR_CODES if c not in HARD_STOP_CODES),
            )
        elif name in HARD_STOP_CODES:
            ck.report(
                D.UNCATCHABLE_ERROR_CODE,
                f"`{name}` stops the run and cannot be caught",
                code.span,
                hint="a budget, the deadline or a stop (a hook, a signal) ends the run whatever "
                "handles failures; remove the code",
            )
        elif (name in _MODEL_CODES and not _calls_models(guarded_node, agents_only=False)) or (
            name in _AGENT_CODES and not _calls_models(guarded_node, agents_only=True)
        ):
            needs = "a model call" if name in _MODEL_CODES else "an agent"
            ck.report(
                D.IMPOSSIBLE_ERROR_CODE,
                f"`{name}` cannot occur here: only {needs} fails with it",
                code.span,
                hint="remove the code, or guard the expression that can fail with it",
            )
    if not _can_fail(guarded_node, ck.tool_calls):
        what = "block" if isinstance(e, A.TryExpr) else "expression"
        ck.report(
            D.UNREACHABLE_CATCH,
            f"this `catch` is unreachable: the guarded {what} cannot fail",
            kw,
            notes=[Note("it runs no tool, agent or question and reads no path", guarded_node.span)],
            hint="remove the `catch`" if what == "expression" else "remove `try` and `catch`",
        )
    ck.scopes.append({})
    try:
        if e.var is not None:
            ck.declare(Symbol("loopvar", e.var.name, ERROR_OBJECT, e), e.var.span)
        expected = t if used and not isinstance(t, ErrorType) else None
        _block(ck, e.body, expected, kw, "the `catch` fallback", used)
    finally:
        ck.pop_scope()
    return t
