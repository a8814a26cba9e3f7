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

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentflow.compiler.checker_shared import CheckerShared, Frame, Reporter
from agentflow.compiler.symbols import Symbol
from agentflow.compiler.type_names import is_outcome, outcome_value_type
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
    Type,
    join,
    make_optional,
    make_union,
    mentions_never,
    type_str,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, closest
from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    CAUGHT_CODES,
    ERROR_CODES,
    ERROR_PLACE_TYPE,
    ERROR_TYPE,
    GENERIC_TYPES,
    HARD_STOP_CODES,
    MAX_FUNCTION_CALLS,
    OUTCOME_TYPE,
)
from agentflow.grammar import ast

__all__ = [
    "ERROR_OBJECT",
    "FailureCause",
    "ERROR_PLACE",
    "OUTCOME_LIST_MEMBERS",
    "check_catch",
    "check_tolerance",
    "is_outcome",
    "outcome_list_member",
    "outcome_type",
    "outcome_value_type",
    "agent_error_codes",
    "possible_error_codes",
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
        "code": Field(make_union([LiteralType(c) for c in CAUGHT_CODES])),
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


def outcome_list_member(t: Type, name: str) -> Type | None:
    """The type of ``xs.values`` (``T[]``) or ``xs.errors`` (``Error[]``) when ``t`` is
    ``Outcome<T>[]``; None otherwise (the caller reports the unknown field)."""
    if not isinstance(t, ListType) or name not in OUTCOME_LIST_MEMBERS:
        return None
    value = outcome_value_type(t.elem)
    if value is None:
        return None
    return ListType(value) if name == "values" else ListType(ERROR_OBJECT)


def resolve_builtin_name(name: str, span: Span, report: Reporter) -> Type | None:
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


def resolve_generic(t: ast.GenericType, arg: Type, report: Reporter) -> Type:
    """``Name<arg>`` written in a type annotation: ``Outcome<T>`` is :func:`outcome_type`; any
    other name is ``unknown-type`` (ERROR), hinting at the agentflow spelling of another
    language's generic (``list<text>`` → ``text[]``, ``Dict<int>`` → ``map<int>``)."""
    if t.name == OUTCOME_TYPE:
        return ErrorType() if isinstance(arg, ErrorType) else outcome_type(arg)
    written = t.arg.name if isinstance(t.arg, ast.NamedType) else type_str(arg)
    hint = D.generic_type_hint(t.name, [written])
    if hint is None and t.name.lower() in ("result", "either", "try", "outcome"):
        hint = f"a value or the error of a failed item is `{OUTCOME_TYPE}<{written}>`"
    if hint is None:
        hint = "only " + ", ".join(f"`{g}<T>`" for g in GENERIC_TYPES) + " and `map<T>` take a type"
    report(D.UNKNOWN_TYPE, f"unknown type `{t.name}<…>`", t.name_span, hint=hint)
    return ErrorType()


def check_tolerance(e: ast.MapExpr, report: Reporter) -> None:
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
        # `tolerate 2.5%` would mean something else than 2.5 items: name both readings
        low, high = math.floor(n), math.ceil(n)
        if 0 < n < 1:
            share = f"`tolerate {n * 100:g}%` ({n:g} of the items)"
        else:
            share = "a percentage, e.g. `tolerate 25%`"
        report(
            D.INVALID_VALUE,
            f"`tolerate` counts failed items and must be a whole number, found {n}",
            span,
            hint=f"a count of items is whole: `tolerate {low}` or `tolerate {high}`; for a share "
            f"of the items write {share}",
        )


# ---------------------------------------------------------------------------------------------
# `… catch [on [codes]] [as err] { fallback }`


@dataclass(frozen=True, slots=True)
class FailureCause:
    """Why a guarded expression can fail with ``code``: ``reason`` is one line in the `.flow`'s
    terms (what runs and how it fails) and ``span`` the part of the guarded expression that does."""

    code: str
    reason: str
    span: Span


#: What may fail with which code (docs/spec/PLAN_IR.md §8), most likely first for each kind of
#: construct; ``{what}`` is filled in with the construct (e.g. ``user__fetch(…)``).
_TOOL_CAUSES: tuple[tuple[str, str], ...] = (
    ("tool_error", "{what} is a tool call, and the tool may fail"),
    ("timeout", "{what} may run past its timeout"),
    ("transient", "{what} may meet a failure that passes (connection, overload)"),
    ("rate_limit", "{what} may be refused for rate"),
    ("output_validation", "{what}'s result is checked against the tool's output type"),
    ("tool_denied", "the host policy or a gate may refuse {what}"),
    ("validation", "{what}'s arguments are checked against the tool's input schema"),
    ("outcome_unknown", "{what} may have been running when a durable run stopped"),
    ("replay_miss", "a replayed run's cassette may not hold {what}"),
    ("durable_replay_mismatch", "a resumed durable run's record may not hold {what} here"),
)
_AGENT_CAUSES: tuple[tuple[str, str], ...] = (
    ("output_validation", "{what}'s reply is checked against its `expect` type"),
    ("timeout", "{what} may run past its timeout"),
    ("model_error", "{what}'s model provider may fail for good (request, key, model)"),
    ("transient", "{what}'s model call may meet a failure that passes (connection, overload)"),
    ("rate_limit", "{what}'s model provider may refuse for rate"),
    ("content_filter", "{what}'s model provider's content filter may refuse"),
    ("tool_error", "a tool {what} calls may fail"),
    ("tool_denied", "the host policy or a gate may refuse a tool {what} calls"),
    ("write_scope", "{what} may write outside its `write` scope"),
    ("invalid_member", "{what}'s target may name no member of the team"),
    ("replay_miss", "a replayed run's cassette may not hold {what}'s model calls"),
    ("durable_replay_mismatch", "a resumed durable run's record may not hold {what} here"),
)
#: A model judge (``verify … judge``, ``filter … where judge``).
_JUDGE_CAUSES: tuple[tuple[str, str], ...] = (
    ("model_error", "{what} calls a model, whose provider may fail for good"),
    ("timeout", "{what}'s model call may run past its timeout"),
    ("transient", "{what}'s model call may meet a failure that passes (connection, overload)"),
    ("rate_limit", "{what}'s model provider may refuse for rate"),
    ("content_filter", "{what}'s model provider's content filter may refuse"),
    ("replay_miss", "a replayed run's cassette may not hold {what}'s model call"),
)
#: Where a code comes from, for ``impossible-error-code``'s message ("only … fails with it").
_ONLY_FROM = {
    "model_error": "a model call",
    "content_filter": "a model call",
    "invalid_member": "an agent",
    "write_scope": "an agent",
    "tool_error": "a tool call or an agent",
    "tool_denied": "a tool call or an agent",
    "outcome_unknown": "a tool call in a durable run",
    "replay_miss": "a tool or model call in a replayed run",
    "durable_replay_mismatch": "a tool call or an agent in a resumed durable run",
    "bad_path": "a read of a field, an item or a projection",
    "failed": "`fail`, `require` or `ask … else fail`",
    "plan_cycle": "a sub-plan (`plan__…`)",
    "rate_limit": "a tool or model call",
    "transient": "a tool or model call",
    "timeout": "a tool call, an agent or a model judge",
    "output_validation": "a tool call, an agent or `ask`",
    "validation": "a tool call, or a `map`, `filter`, `reduce` or `loop`",
    "loop_exhausted": "a `loop … until … else fail`",
    "invalid_argument": "a library function (docs/reference/functions.md)",
    "parse_error": "`parse_int`, `parse_number` or `parse_json`",
    "regex_timeout": "`match`, `matches` or `find_all`",
    "arithmetic": "`/`, `%`, `+`, `-`, `*` on numbers, `sum`, `round`, `floor`, `ceil` or `abs`",
    "call_limit": "a call of a user function whose calls multiply past the limit",
}


#: why a library function fails with each of its codes (docs/reference/functions.md)
_FUNCTION_FAILURES = {
    "invalid_argument": "an argument it cannot use",
    "parse_error": "text that does not parse",
    "regex_timeout": "a pattern that runs past its time budget",
    "bad_path": "an element without the field",
    "arithmetic": "a result no number of the language holds",
}


def _causes(table: tuple[tuple[str, str], ...], what: str, span: Span) -> list[FailureCause]:
    return [FailureCause(c, r.format(what=what), span) for c, r in table]


def _member_text(n: ast.Node) -> str:
    if isinstance(n, ast.Name):
        return n.name
    if isinstance(n, ast.Member):
        return f"{_member_text(n.obj)}.{n.name}"
    if isinstance(n, ast.Index):
        return f"{_member_text(n.obj)}[…]"
    return "…"


def _example(t: Type) -> str:
    """A value of type ``t`` to show in a hint (``0`` for ``int``, ``[]`` for a list, …)."""
    shown = type_str(t)
    simple = {"int": "0", "number": "0.0", "text": '""', "bool": "false", "path": '"."'}
    if shown in simple:
        return simple[shown]
    if shown.endswith("[]"):
        return "[]"
    if shown.endswith("?") or shown == "null":
        return "null"
    return "{ … }"


def agent_error_codes() -> list[str]:
    """The run-time error codes an agent call can fail with, most likely first (the causes
    :func:`possible_error_codes` gives an agent; what ``stub agent A fails "code"`` may name,
    docs/reference/testing.md)."""
    return [code for code, _ in _AGENT_CAUSES]


def possible_error_codes(
    guarded: ast.Node, functions: Mapping[str, Any] | None = None
) -> list[FailureCause] | None:
    """The run-time error codes (``core.vocabulary.ERROR_CODES``, never a hard stop) the guarded
    expression or block ``guarded`` can fail with, each once with the first reason found, most
    likely first (a code's rank is its best place in the lists of what can raise it; ties keep
    source order).  An empty list: nothing in it can fail (``unreachable-catch``).  None: the
    analysis cannot tell — a sub-plan (``plan__…``) may fail with any code.  The checker's
    ``impossible-error-code`` and the language server's completion and hover inside
    ``catch on [ … ]`` both read this (docs/reference/errors-as-values.md). ``functions``: the
    user functions by name (``CheckResult.functions``), whose bodies a call can fail in; a call
    of one not given makes it None too."""
    found: list[tuple[int, int, FailureCause]] = []
    nodes: list[Any] = [guarded]
    entered: set[str] = set()

    def add(causes: list[FailureCause]) -> None:
        for rank, cause in enumerate(causes):
            found.append((rank, len(found), cause))

    for n in _walk_all(nodes):
        if isinstance(n, ast.UserCall):
            sig = functions.get(n.name) if functions is not None else None
            if sig is None:
                return None  # what it runs is not known here
            if n.name not in entered:  # its body fails as it would written here
                entered.add(n.name)
                nodes.append(sig.decl.body)
            if _call_bound(n.name, functions or {}, {}) > MAX_FUNCTION_CALLS:
                why = f"`{n.name}(…)` may make more than {MAX_FUNCTION_CALLS:,} calls in all"
                add([FailureCause("call_limit", why, n.span)])
        elif isinstance(n, ast.Call):
            if isinstance(n.callee, ast.Name):
                if n.callee.name.startswith("plan__"):
                    return None  # a sub-plan runs what it runs
                add(_causes(_TOOL_CAUSES, f"`{n.callee.name}(…)`", n.span))
        elif isinstance(n, ast.AgentExpr):
            add(_causes(_AGENT_CAUSES, "the agent", n.span))
        elif isinstance(n, ast.AskExpr):
            ask = [FailureCause("output_validation", "the answer to `ask` is checked", n.span)]
            if n.else_fail is not None:
                ask.insert(0, FailureCause("failed", "`ask … else fail` fails unanswered", n.span))
            add(ask)
        elif isinstance(n, ast.VerifyExpr):
            if any(isinstance(i, ast.VerifyJudge) for i in n.items):
                add(_causes(_JUDGE_CAUSES, "the `verify` judge", n.span))
        elif isinstance(n, ast.LoopExpr):
            loop = [
                FailureCause("validation", "`loop` fails when its bound is out of range", n.span)
            ]
            if n.else_fail is not None:
                why = "`loop … until … else fail` fails when no round meets `until`"
                loop.insert(0, FailureCause("loop_exhausted", why, n.span))
            add(loop)
        elif isinstance(n, ast.FilterExpr | ast.MapExpr | ast.ReduceExpr):
            if isinstance(n, ast.FilterExpr) and n.judge is not None:
                add(_causes(_JUDGE_CAUSES, "the `filter` judge", n.span))
            word = type(n).__name__.removesuffix("Expr").lower()
            add([FailureCause("validation", f"`{word}` fails when its list is null", n.span)])
        elif isinstance(n, ast.Member | ast.Index):
            text = _member_text(n)
            add([FailureCause("bad_path", f"`{text}` may be missing at run time", n.span)])
        elif isinstance(n, ast.Projection):
            add(
                [FailureCause("bad_path", "the projection reads paths that may be missing", n.span)]
            )
        elif isinstance(n, ast.FailStmt):
            add([FailureCause("failed", "`fail` fails with `failed`", n.span)])
        elif isinstance(n, ast.RequireStmt):
            add([FailureCause("failed", "`require … else fail` fails with `failed`", n.span)])
        elif isinstance(n, ast.SleepStmt) and not isinstance(n.duration, ast.DurationLit):
            why = "`sleep` fails when its computed duration is not from 1ms to 8760h"
            add([FailureCause("validation", why, n.span)])
        elif isinstance(n, ast.FuncCall) and n.name in FUNCTIONS:
            add(
                [
                    FailureCause(
                        code,
                        f"`{n.name}(…)` fails with `{code}`: {_FUNCTION_FAILURES[code]}",
                        n.span,
                    )
                    for code in FUNCTIONS[n.name].errors
                ]
            )
        elif isinstance(n, ast.Binary) and n.op in ("/", "%"):
            what = "division" if n.op == "/" else "remainder"
            add(
                [
                    FailureCause(
                        "arithmetic", f"the {what} `{n.op}` fails when the divisor is 0", n.span
                    )
                ]
            )
        elif _may_overflow(n):
            why = "an `int` result past 64 bits, or a number too large for JSON"
            add([FailureCause("arithmetic", f"`{getattr(n, 'op', '-')}` fails on {why}", n.span)])
    seen: set[str] = set()
    out: list[FailureCause] = []
    for _, _, cause in sorted(found, key=lambda f: (f[0], f[1])):
        if cause.code not in seen and cause.code not in HARD_STOP_CODES:
            seen.add(cause.code)
            out.append(cause)
    return out


def _call_bound(name: str, functions: Mapping[str, Any], memo: dict[str, int]) -> int:
    """The most calls one call of user function ``name`` can make, itself included (both arms
    of an `if` counted; functions never recurse): what ``call_limit`` bounds at run time."""
    if name in memo:
        return memo[name]
    memo[name] = MAX_FUNCTION_CALLS + 1  # a cycle (reported elsewhere) counts as past it
    sig = functions.get(name)
    total = 1
    if sig is not None:
        for n in ast.walk(sig.decl.body):
            if isinstance(n, ast.UserCall):
                total += _call_bound(n.name, functions, memo)
                if total > MAX_FUNCTION_CALLS:
                    break
    memo[name] = total
    return total


def _walk_all(nodes: list[Any]) -> Iterator[ast.Node]:
    """Every node under each of ``nodes``, which may grow while it is walked."""
    i = 0
    while i < len(nodes):
        yield from ast.walk(nodes[i])
        i += 1


def _may_overflow(n: ast.Node) -> bool:
    """True for `+`, `-`, `*` or a prefix `-` that may leave the numbers the language holds
    (``arithmetic``): not one of number literals only (`1 + 2`), nor one joining texts or
    lists it can see (`"a" + s`, `xs + [1]`)."""
    if isinstance(n, ast.Unary):
        return n.op == "-" and not isinstance(n.operand, ast.NumberLit)
    if not isinstance(n, ast.Binary) or n.op not in ("+", "-", "*"):
        return False
    sides = (n.left, n.right)
    if all(isinstance(x, ast.NumberLit) for x in sides):
        return False
    return not any(isinstance(x, ast.StringLit | ast.ListLit) for x in sides)


def _guarded(e: ast.CatchExpr | ast.TryExpr) -> ast.Node:
    """What a catch guards: the expression before ``catch``, or the ``try`` block."""
    return e.block if isinstance(e, ast.TryExpr) else e.guarded


def _block(
    ck: CheckerShared, block: ast.Block, expected: Type | None, span: Span, what: str, value: bool
) -> Type:
    """Check a ``try`` block or fallback as a body; when its ``value`` is not used (a ``try``
    statement) it need not produce one (its type is then ``null`` or what it produced)."""
    if value:
        return ck.body(block, expected, span, what)
    frame = Frame(None)
    ck.frames.append(frame)
    ck.scopes.append({})
    try:
        ck.stmts(block.stmts, frame, top=True)
    finally:
        ck.pop_scope()
        ck.frames.pop()
    return join(frame.values, ck.env) if frame.values else NULL


def check_catch(ck: CheckerShared, e: ast.CatchExpr | ast.TryExpr, hint: Type | None) -> Type:
    """Type ``guarded catch … { fallback }`` or ``try { … } catch … { fallback }``: the guarded
    expression's (block's) type ``T`` (checked against ``hint`` when given); the fallback must
    produce ``T`` (``type-mismatch``) with the binding typed ``Error`` — unless, with no
    ``hint``, ``T`` mentions ``never`` (a block that always fails, a ``[]``): then the fallback
    is checked on its own and the value is the join of both.  A ``try`` whose value is
    not used (a statement) needs no value from either block.  Codes must be run-time error codes
    (``unknown-error-code``), not ones that stop the run (``uncatchable-error-code``), and
    possible for what is guarded (``impossible-error-code``, warning); a catch whose guarded
    expression cannot fail is ``unreachable-catch`` (warning).  ``ck`` is the checker (``expr``,
    ``infer``, ``body``, ``stmts``, ``report``, scopes)."""
    kw = e.keyword_span or e.span
    guarded_node = _guarded(e)
    used = not (isinstance(e, ast.TryExpr) and ck.discarded is e)
    if isinstance(e, ast.TryExpr):
        guarded = _block(ck, e.block, hint, e.try_span or e.span, "the `try` block", used)
    else:
        # the fallback must produce what the context expects, else the guarded expression's type
        guarded = ck.expr(e.guarded, hint) if hint is not None else ck.infer(e.guarded)
    t = hint if hint is not None and not isinstance(guarded, ErrorType) else widen(guarded)
    # a guarded block that always fails (`never`), or whose value held nothing (`never[]`), says
    # nothing of what the fallback gives: the fallback is not held to it, the value is the join
    settle = used and hint is None and mentions_never(t)
    possible = possible_error_codes(guarded_node, getattr(ck, "user_fns", None))
    for code in e.codes or []:
        name = code.name
        if name not in ERROR_CODES:
            meant = closest(name, list(ERROR_CODES))
            ck.report(
                D.UNKNOWN_ERROR_CODE,
                f"`{name}` is not an error code",
                code.span,
                hint=D.meant_hint(meant)
                if meant
                else "codes: " + ", ".join(c for c in ERROR_CODES if c not in HARD_STOP_CODES),
                fix=D.respelling(code.span, name, meant),
            )
        elif name in HARD_STOP_CODES:
            ck.report(
                D.UNCATCHABLE_ERROR_CODE,
                f"`{name}` stops the run and cannot be caught",
                code.span,
                hint="a budget, the deadline or a stop (a hook, a signal) ends the run whatever "
                "handles failures; remove the code",
            )
        elif possible and name not in {c.code for c in possible}:  # [] is unreachable-catch
            only = _ONLY_FROM.get(name)
            why = f": only {only} fails with it" if only else ": it is never raised by a step"
            can = ", ".join(f"`{c.code}`" for c in possible[:6]) + (", …" if possible[6:] else "")
            ck.report(
                D.IMPOSSIBLE_ERROR_CODE,
                f"`{name}` cannot occur here{why}",
                code.span,
                notes=[Note(f"what is guarded can fail with {can}", guarded_node.span)],
                hint="remove the code, or guard the expression that can fail with it",
            )
    if possible == []:
        what = "block" if isinstance(e, ast.TryExpr) else "expression"
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
            ck.declare(Symbol("error", e.var.name, ERROR_OBJECT, e), e.var.span)
        expected = t if used and not settle and not isinstance(t, ErrorType) else None
        mark = len(ck.diags)
        fallback = _block(ck, e.body, expected, kw, "the `catch` fallback", used)
        if expected is not None:
            _fallback_hints(ck, mark, expected, guarded_node)
    finally:
        ck.pop_scope()
    if settle:
        return join([t, widen(fallback)], ck.env)
    return t


def _fallback_hints(ck: CheckerShared, mark: int, expected: Type, guarded: ast.Node) -> None:
    """Give a fallback's ``type-mismatch`` without a hint the fix: the fallback stands in for
    the guarded expression's value, so it must be of that type."""
    if isinstance(guarded, ast.Block):
        what = "the `try` block"
    elif isinstance(guarded, ast.Call) and isinstance(guarded.callee, ast.Name):
        what = f"`{guarded.callee.name}(…)`"
    elif isinstance(guarded, ast.AgentExpr):
        what = "the agent"
    else:
        what = "the guarded expression"
    for i in range(mark, len(ck.diags)):
        d = ck.diags[i]
        if d.code == D.TYPE_MISMATCH and D.replaceable(d.hint):
            ck.diags[i] = dataclasses.replace(
                d,
                hint=f"the fallback stands in for the value of {what}, of type "
                f"`{ck.said(expected)}`: give a value of that type (e.g. `{_example(expected)}`), "
                "or turn the value into what you need after the `catch`",
            )
