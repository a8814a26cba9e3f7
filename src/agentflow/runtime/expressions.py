"""Evaluation of the pure expression language and of plan templates.

Implements docs/spec/LANGUAGE.md §4 (expression semantics) for the nodes of
:mod:`agentflow.grammar.ast`, docs/spec/PLAN_IR.md §3 (templates: whole-value vs text rendering,
lenient rendering) and docs/spec/PLAN_IR.md §4 (conditions: ``value/op/to``, ``expr``,
``all``/``any``/``not``).

Expressions are parsed once at load time (the loader stores :class:`ast.Template` / :class:`ast.Expr`
objects in ``step.compiled``); this module never parses per render.  Evaluation dispatches on the
node class through a dict built once (``_VISIT``: node class → ``_visit_<Class>``, the visitor
naming of docs/ARCHITECTURE.md), so one evaluation is a handful of dict look-ups and calls per
node.

Scopes are plain mappings: ``{"input": …, "E0": <result of E0>, "item": …, "index": …}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from agentflow.core.functions import FUNCTIONS, arity
from agentflow.core.vocabulary import (
    MAX_EXPR_DEPTH,
    MAX_FUNCTION_CALLS,
    MAX_INT,
    MIN_INT,
    UNARY_CONDITION_OPS,
    Code,
    duration_ms,
)
from agentflow.errors import BadPath, ExprError, RunError, SourceError
from agentflow.grammar import ast
from agentflow.grammar.written import expr_text, wrappers
from agentflow.ir.templates import too_deep
from agentflow.runtime.extract import MAX_JSON_DEPTH, too_deep_message
from agentflow.runtime.functions import (
    IMPLEMENTATIONS,
    check_kinds,
    is_number,
    kind_of,
    strict_eq,
    too_long,
)
from agentflow.runtime.interrupt import EvalEnded, checkpoint
from agentflow.runtime.value_size import (
    EVENT_TEXT_CHARS,
    EVENT_VALUE_NODES,
    MAX_VALUE_NODES,
    TOO_DEEP,
    TOO_MANY,
    json_size,
    preview,
)

__all__ = [
    "BadPath",
    "ExprError",
    "FlowRange",
    "evaluate",
    "evaluate_condition",
    "event_value",
    "expr_text",
    "json_size",
    "render",
    "render_value",
    "refuse_too_deep",
    "to_json_value",
    "to_text",
]


#: Most elements a range may have when it leaves the expression world as a list (a whole-value
#: template, text, JSON). ``x in lo..hi`` never builds the list, so it has no limit.
MAX_RANGE_ITEMS = 100_000


@dataclass(frozen=True, slots=True)
class FlowRange:
    """The value of ``lo..hi`` (inclusive at both ends)."""

    low: float
    high: float

    def __contains__(self, x: object) -> bool:
        return is_number(x) and self.low <= x <= self.high  # type: ignore[operator]

    def __len__(self) -> int:
        """How many integers the range holds (computed, never materialised)."""
        lo, hi = _range_bound(self.low, math.ceil), _range_bound(self.high, math.floor)
        return max(0, hi - lo + 1)

    def to_list(self) -> list[int]:
        """The integers of the range (used when a range is rendered as JSON).

        Raises :class:`ExprError` when it would hold more than :data:`MAX_RANGE_ITEMS`.
        """
        n = len(self)
        if n > MAX_RANGE_ITEMS:
            raise ExprError(
                f"range {_num_text(self.low)}..{_num_text(self.high)} has {n} elements; a range "
                f"used as a value may hold at most {MAX_RANGE_ITEMS:,} (`x in a..b` has no limit)"
            )
        if n == 0:
            return []
        lo = _range_bound(self.low, math.ceil)
        return list(range(lo, lo + n))


def _range_bound(x: float, rnd: Callable[[float], int]) -> int:
    # infinities cannot reach here from a loaded plan, but be safe: clamp far outside any cap
    if isinstance(x, float) and not math.isfinite(x):
        return -(10**30) if x < 0 or math.isnan(x) else 10**30
    return rnd(x)


def _num_text(x: float) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


#: Scope key of the current element inside a projection path (a sentinel, never a name: typed
#: Any so it can key the str-keyed scope mappings).
_ITEM: Any = object()


def _kind(x: object) -> str:
    """The JSON kind of a value as messages say it (a ``range`` too)."""
    return "range" if isinstance(x, FlowRange) else kind_of(x)


# ---------------------------------------------------------------------------------------------
# Values → text / JSON


def to_json_value(value: Any) -> Any:
    """``value`` with ranges turned into lists and tuples into lists (JSON-ready).

    An array or object with nothing to turn is returned itself, not copied, and one held many
    times is looked at once: ``[s, s]`` built round after round in a ``loop`` (2^rounds values
    as JSON writes them) costs its few distinct arrays, not its JSON size."""
    t = type(value)
    if t in _SCALARS:
        return value
    if t is dict:
        for v in value.values():
            if type(v) not in _SCALARS:
                return _json_ready(value, {})
        return value  # flat (most step inputs and results): nothing to look into
    if t is list:
        for v in value:
            if type(v) not in _SCALARS:
                return _json_ready(value, {})
        return value
    if isinstance(value, FlowRange):
        return value.to_list()
    if isinstance(value, list | tuple | dict):
        return _json_ready(value, {})
    return value


#: Kinds of values ``to_json_value`` leaves as they are without a look inside.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _json_ready(value: Any, seen: dict[int, Any]) -> Any:
    """``to_json_value`` of an array or object; ``seen`` maps the ``id`` of each one already
    made ready (alive in ``value`` while this runs) to its ready form."""
    done = seen.get(id(value))
    if done is not None:
        return done
    ready: Any = value
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for k, v in value.items():
            if type(v) in _SCALARS:
                continue
            w = v.to_list() if type(v) is FlowRange else _json_ready(v, seen)
            if w is not v:
                if changed is None:
                    changed = dict(value)
                changed[k] = w
        if changed is not None:
            ready = changed
    else:
        items: list[Any] | None = list(value) if type(value) is not list else None
        for i, v in enumerate(value):
            if type(v) in _SCALARS:
                continue
            w = v.to_list() if type(v) is FlowRange else _json_ready(v, seen)
            if w is not v:
                if items is None:
                    items = list(value)
                items[i] = w
        if items is not None:
            ready = items
    seen[id(value)] = ready
    return ready


def refuse_too_deep(value: Any, expr: Any = None) -> None:
    """Raise :class:`ExprError` (``validation``) when ``value``, a step's value built by an
    expression (``expr``, an :class:`ast.Template` or :class:`ast.Expr` naming it), nests
    arrays/objects more than :data:`~agentflow.runtime.extract.MAX_JSON_DEPTH` levels deep —
    the limit of the values a run takes in — or holds more than :data:`MAX_VALUE_NODES` values
    as JSON writes it (docs/reference/expressions.md "Limits").

    Checked where a value becomes a step's result (a ``value`` step, a plan's ``finish``):
    nesting and sharing grow only across steps (a ``loop``'s state ``[s]``, ``[s, s]``), so
    every value a step hands on is within the limits, and nothing later (events, traces, JSON)
    recurses past Python's stack or writes without end. Iterative: safe on any depth; one pass
    over the value's arrays and objects, stopping at the first limit passed."""
    if not isinstance(value, list | tuple | dict):
        return
    problem = _measure(value)
    if problem is None:
        return
    if isinstance(expr, ast.Template):
        expr = expr.whole
    quoted = f"`{expr_text(expr)}`: " if isinstance(expr, ast.Expr) else ""
    raise ExprError(quoted + problem)


def _measure(value: Any, limit: int | None = None) -> str | None:
    """The message of the first limit ``value`` passes, or None: nesting over
    :data:`MAX_JSON_DEPTH`, more than ``limit`` (default :data:`MAX_VALUE_NODES`) values as JSON
    writes them."""
    size = json_size(value, MAX_VALUE_NODES if limit is None else limit)
    if size == TOO_DEEP:
        return (
            f"the value is {too_deep_message()}: a value built by an expression may nest "
            f"as deeply as the run's input, at most {MAX_JSON_DEPTH} levels"
        )
    if size == TOO_MANY:
        return (
            f"the value holds more than {MAX_VALUE_NODES:,} values (counted as JSON writes "
            "them: a list shared twice counts twice)"
        )
    return None


def event_value(value: Any) -> tuple[Any, bool]:
    """``(to_json_value(value), False)`` for a value an event carries whole, ``(preview, True)``
    for one over :data:`~agentflow.runtime.value_size.EVENT_VALUE_NODES` values or whose texts
    hold over ``EVENT_TEXT_CHARS`` characters (:func:`~agentflow.runtime.value_size.preview`: the shape of
    the value at a bounded cost; docs/spec/RUNTIME.md §8)."""
    if isinstance(value, FlowRange):
        value = (
            value.to_list()
            if len(value) <= EVENT_VALUE_NODES
            else range(int(value.low), int(value.low) + 10)
        )
    if isinstance(value, str):
        return (value, False) if len(value) <= EVENT_TEXT_CHARS else (preview(value), True)
    if not isinstance(value, list | tuple | dict | range):
        return value, False
    if (
        not isinstance(value, range)
        and json_size(value, EVENT_VALUE_NODES, watched=False, chars=EVENT_TEXT_CHARS) >= 0
    ):
        return to_json_value(value), False
    return preview(value), True


def _json_default(o: Any) -> Any:
    if isinstance(o, FlowRange):
        return o.to_list()
    if isinstance(o, set | frozenset):
        return sorted(o, key=repr)
    return str(o)


def to_text(value: Any) -> str:
    """Text of a value inside a template or interpolated string: text as-is, anything else as
    compact JSON (``ensure_ascii=False``, separators ``(",", ":")``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


# ---------------------------------------------------------------------------------------------
# The evaluator


def evaluate(expr: ast.Expr, scope: Mapping[str, Any]) -> Any:
    """Evaluate ``expr`` against ``scope`` (docs/spec/LANGUAGE.md §4).

    Returns plain JSON-like Python values (``dict``, ``list``, ``str``, ``int``/``float``,
    ``bool``, ``None``) or a :class:`FlowRange` for ``a..b``.

    Raises :class:`BadPath` for a missing name, field, key or index (caught by ``??``),
    :class:`ExprError` for operands of the wrong kind or a tree too deep to evaluate (the loader
    bounds depth at ``vocabulary.MAX_EXPR_DEPTH``; this is a last guard), and a ``RunError`` of
    code ``arithmetic`` for arithmetic with no result: a division or modulo by zero, an `int`
    result past 64 bits, a number too large for JSON (docs/reference/errors.md).
    """
    try:
        return _VISIT[type(expr)](expr, scope)
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> ExprError:
    return ExprError("expression nested too deeply to evaluate")


def _visit(node: ast.Expr, scope: Mapping[str, Any]) -> Any:
    return _VISIT[type(node)](node, scope)


def _visit_Name(node: ast.Name, scope: Mapping[str, Any]) -> Any:
    try:
        return scope[node.name]
    except KeyError:
        raise BadPath(node.name, node.name, "no such name in scope") from None


def _get_member(obj: Any, name: str, node: ast.Member) -> Any:
    if isinstance(obj, dict):
        if name in obj:
            return obj[name]
        if name == "count":
            return len(obj)
        raise BadPath(expr_text(node), name)
    if name == "count" and isinstance(obj, list | tuple | str):
        return len(obj)
    if name in ("values", "errors") and isinstance(obj, list | tuple):
        helper = outcome_helper(obj, name)
        if helper is not None:
            return helper
    if obj is None:
        raise BadPath(expr_text(node), name, f"`{expr_text(node.obj)}` is null")
    raise BadPath(expr_text(node), name, f"`{expr_text(node.obj)}` is {_kind(obj)}, not an object")


def outcome_helper(items: list[Any] | tuple[Any, ...], name: str) -> list[Any] | None:
    """``xs.values`` (the ``value`` of each ``{ok: true}`` outcome) or ``xs.errors`` (the ``error``
    of each ``{ok: false}`` one), input order, when every item of ``xs`` is an outcome of a map that
    tolerates failures (docs/spec/PLAN_IR.md §5); None otherwise."""
    if not all(isinstance(o, dict) and isinstance(o.get("ok"), bool) for o in items):
        return None
    if name == "values":
        return [o.get("value") for o in items if o["ok"]]
    return [o.get("error") for o in items if not o["ok"]]


def _visit_Member(node: ast.Member, scope: Mapping[str, Any]) -> Any:
    return _get_member(_visit(node.obj, scope), node.name, node)


def _visit_Index(node: ast.Index, scope: Mapping[str, Any]) -> Any:
    obj = _visit(node.obj, scope)
    idx = _visit(node.index, scope)
    if isinstance(obj, list | tuple | str):
        if isinstance(idx, bool) or not isinstance(idx, int):
            if isinstance(idx, float) and idx.is_integer():
                idx = int(idx)
            else:
                raise ExprError(f"`{expr_text(node)}`: index must be an integer, not {_kind(idx)}")
        if 0 <= idx < len(obj):
            return obj[idx]
        raise BadPath(expr_text(node), f"[{idx}]", f"index out of range for length {len(obj)}")
    if isinstance(obj, dict):
        key = idx if isinstance(idx, str) else to_text(idx)
        if key in obj:
            return obj[key]
        raise BadPath(expr_text(node), f"[{to_text(key)}]")
    if obj is None:
        raise BadPath(expr_text(node), f"[{to_text(idx)}]", f"`{expr_text(node.obj)}` is null")
    raise BadPath(expr_text(node), f"[{to_text(idx)}]", f"`{expr_text(node.obj)}` is {_kind(obj)}")


def _visit_Projection(node: ast.Projection, scope: Mapping[str, Any]) -> Any:
    base = _visit(node.base, scope)
    if isinstance(base, dict):
        base = list(base.values())
    elif base is None:
        raise BadPath(expr_text(node), "[*]", f"`{expr_text(node.base)}` is null")
    elif not isinstance(base, list | tuple):
        raise ExprError(f"`{expr_text(node)}`: [*] needs an array, got {_kind(base)}")
    path = node.path
    if path is None:
        return list(base)
    out: list[Any] = []
    for start in range(0, len(base), _CHUNK):
        checkpoint(_CHUNK)  # the run's deadline, a stop, a cancel end a long projection
        i = start
        try:
            for el in base[start : start + _CHUNK]:
                out.append(_visit(path, _Layer(scope, el)))
                i += 1
        except BadPath as e:
            raise _at_element(e, expr_text(node), f"{expr_text(node.base)}[{i}]") from None
    return out


#: Elements of a projection between two checkpoints.
_CHUNK = 1024


def _at_element(e: BadPath, whole: str, element: str) -> BadPath:
    """``e``, raised by a projection's path on one element, as the path of the projection as
    written (``input.j[*].a``, where the caret finds it) and the element by its index
    (``input.j[2]``): inside the path the element's own text is empty (``.a``, ``` `` ```)."""
    if not e.path.startswith((".", "[")):
        return e
    head = f"path `{e.path}`: `{e.missing}` is missing"
    detail = e.message[len(head) + 2 : -1] if e.message.startswith(head + " (") else None
    if detail is not None and detail[:1] == "`" and detail[1:2] in (".", "[", "`"):
        detail = f"`{element}{detail[1:]}"
    else:
        detail = f"in `{element}`" + (f": {detail}" if detail else "")
    return BadPath(whole, e.missing, detail)


class _Layer(Mapping[str, Any]):
    """A scope with the current projection element bound to the placeholder key."""

    __slots__ = ("_base", "_item")

    def __init__(self, base: Mapping[str, Any], item: Any):
        self._base = base
        self._item = item

    def __getitem__(self, key: Any) -> Any:
        if key is _ITEM:
            return self._item
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


def _visit_ProjectionItem(node: ast.ProjectionItem, scope: Mapping[str, Any]) -> Any:
    return scope[_ITEM]


def _visit_StringLit(node: ast.StringLit, scope: Mapping[str, Any]) -> Any:
    parts = node.parts
    if not parts:
        return ""
    out = []
    size = 0
    for p in parts:
        text = p if isinstance(p, str) else to_text(_visit(p.expr, scope))
        size += len(text)
        out.append(text)
    _sized(size, "text", node)
    return "".join(out)


#: A first argument of more items or characters than this makes a library call a checkpoint.
_BIG_ARGUMENT = 2048
_SIZED = frozenset({list, str, dict, tuple})


def _visit_ListLit(node: ast.ListLit, scope: Mapping[str, Any]) -> Any:
    # a range inside an array is its list: no array or object holds a range, so a value is
    # handed to a library function as it is (never copied to turn a range deep inside)
    return [v.to_list() if type(v := _visit(i, scope)) is FlowRange else v for i in node.items]


def _visit_ObjectLit(node: ast.ObjectLit, scope: Mapping[str, Any]) -> Any:
    return {
        e.key: v.to_list() if type(v := _visit(e.value, scope)) is FlowRange else v
        for e in node.entries
    }


def _visit_RangeExpr(node: ast.RangeExpr, scope: Mapping[str, Any]) -> Any:
    lo = _visit(node.low, scope)
    hi = _visit(node.high, scope)
    if not (is_number(lo) and is_number(hi)):
        raise ExprError(f"`{expr_text(node)}`: a range needs numbers, got {_kind(lo)}..{_kind(hi)}")
    return FlowRange(lo, hi)


def _visit_Unary(node: ast.Unary, scope: Mapping[str, Any]) -> Any:
    v = _visit(node.operand, scope)
    if node.op == "not":
        if not isinstance(v, bool):
            raise ExprError(f"`{expr_text(node)}`: `not` needs a bool, got {_kind(v)}")
        return not v
    if node.op == "-":
        if not is_number(v):
            raise ExprError(f"`{expr_text(node)}`: unary `-` needs a number, got {_kind(v)}")
        return _finite(-v, node, v)
    raise ExprError(f"unknown unary operator `{node.op}`")


def _truth(v: Any, node: ast.Expr, side: str) -> bool:
    if isinstance(v, bool):
        return v
    raise ExprError(f"`{expr_text(node)}`: `{side}` operand must be a bool, got {_kind(v)}")


def _contains(container: Any, x: Any, node: ast.Expr | None, op: str = "in") -> bool:
    """``x in container``; ``node`` names the expression in errors (None: a plan condition whose
    operator is ``op``)."""
    where = f"`{expr_text(node)}`: `in`" if node is not None else f"condition `{op}`"
    if isinstance(container, list | tuple):
        return any(strict_eq(x, e) for e in container)
    if isinstance(container, str):
        if not isinstance(x, str):
            raise ExprError(f"{where} on a text needs a text operand, got {_kind(x)}")
        return x in container
    if isinstance(container, dict):
        return x in container if isinstance(x, str) else False
    if isinstance(container, FlowRange):
        return x in container
    if container is None:
        return False
    raise ExprError(f"{where} needs an array, text, map or range, got {_kind(container)}")


def _order(a: Any, b: Any, node: ast.Binary) -> None:
    if (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
        return
    raise ExprError(f"`{expr_text(node)}`: cannot compare {_kind(a)} with {_kind(b)}")


def _arith(a: Any, b: Any, node: ast.Binary) -> None:
    if not (is_number(a) and is_number(b)):
        raise ExprError(
            f"`{expr_text(node)}`: `{node.op}` needs numbers, got {_kind(a)} and {_kind(b)}"
        )


def _too_large(node: ast.Expr) -> RunError:
    return RunError(
        Code.ARITHMETIC, f"`{expr_text(node)}`: the result is too large for a JSON number"
    )


def _finite(x: Any, node: ast.Expr, *operands: Any) -> Any:
    """``x`` when it is a number the language holds: not a float overflow (JSON has no NaN or
    infinities; ``arithmetic``), and — when ``x`` and every operand are whole numbers, the
    operands within `int` — within `int` (−2⁶³ … 2⁶³−1; ``arithmetic``): `int` arithmetic is
    64-bit (docs/reference/types.md). An operand already outside `int` is a `number`, whose
    whole-number results are left as they are."""
    if isinstance(x, float):
        if not math.isfinite(x):
            raise _too_large(node)
        return x
    if (
        isinstance(x, int)
        and not MIN_INT <= x <= MAX_INT
        and all(isinstance(o, int) and MIN_INT <= o <= MAX_INT for o in operands)
    ):
        raise RunError(
            Code.ARITHMETIC,
            f"`{expr_text(node)}`: the result is outside the range of `int` "
            f"({MIN_INT} to {MAX_INT})",
        )
    if isinstance(x, int) and x.bit_length() > _JSON_INT_BITS:
        # past any JSON number a reader takes (and an operand already past `int` may grow
        # without end: `s * s` in a loop squares a bigint for ever): docs/reference/expressions.md "Limits"
        raise _too_large(node)
    return x


#: The widest int a computed value may be (bits): a JSON number past ±1.8·10³⁰⁸ is no number a
#: reader takes (the same bound as a float's, ``arithmetic``).
_JSON_INT_BITS = 1024


def _sized(size: int, what: str, node: ast.Expr) -> None:
    """Refuse to build a text of ``size`` characters or an array of ``size`` items over its
    limit (:func:`agentflow.runtime.functions.too_long`), before building it."""
    message = too_long(size, what)
    if message is not None:
        raise ExprError(f"`{expr_text(node)}`: {message}")


def _add(a: Any, b: Any, node: ast.Binary) -> Any:
    if is_number(a) and is_number(b):
        return _finite(a + b, node, a, b)
    if isinstance(a, str) and isinstance(b, str):
        _sized(len(a) + len(b), "text", node)
        return a + b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        _sized(len(a) + len(b), "array", node)
        return list(a) + list(b)
    raise ExprError(f"`{expr_text(node)}`: cannot add {_kind(a)} and {_kind(b)}")


def _div(a: Any, b: Any, node: ast.Binary) -> Any:
    _arith(a, b, node)
    if b == 0:
        raise _by_zero(node, "division")
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return _finite(a // b, node, a, b)  # MIN_INT / -1
    try:
        q = a / b
    except OverflowError:
        raise _too_large(node) from None
    return _finite(q, node)


def _by_zero(node: ast.Binary, what: str) -> RunError:
    """``arithmetic``: ``a / b`` or ``a % b`` with ``b`` 0, the divisor named as written."""
    divisor = expr_text(node.right)
    said = "" if isinstance(node.right, ast.NumberLit) else f" (`{divisor}` is 0)"
    return RunError(Code.ARITHMETIC, f"`{expr_text(node)}`: {what} by zero{said}")


def _mod(a: Any, b: Any, node: ast.Binary) -> Any:
    _arith(a, b, node)
    if b == 0:
        raise _by_zero(node, "modulo")
    return a % b


def _sub(a: Any, b: Any, node: ast.Binary) -> Any:
    _arith(a, b, node)
    return _finite(a - b, node, a, b)


def _mul(a: Any, b: Any, node: ast.Binary) -> Any:
    _arith(a, b, node)
    return _finite(a * b, node, a, b)


def _lt(a: Any, b: Any, node: ast.Binary) -> Any:
    _order(a, b, node)
    return a < b


def _le(a: Any, b: Any, node: ast.Binary) -> Any:
    _order(a, b, node)
    return a <= b


def _gt(a: Any, b: Any, node: ast.Binary) -> Any:
    _order(a, b, node)
    return a > b


def _ge(a: Any, b: Any, node: ast.Binary) -> Any:
    _order(a, b, node)
    return a >= b


_STRICT_BINARY: dict[str, Callable[[Any, Any, ast.Binary], Any]] = {
    "==": lambda a, b, n: strict_eq(a, b),
    "!=": lambda a, b, n: not strict_eq(a, b),
    "<": _lt,
    "<=": _le,
    ">": _gt,
    ">=": _ge,
    "in": lambda a, b, n: _contains(b, a, n),
    "not in": lambda a, b, n: not _contains(b, a, n),
    "+": _add,
    "-": _sub,
    "*": _mul,
    "/": _div,
    "%": _mod,
}


def _visit_Binary(node: ast.Binary, scope: Mapping[str, Any]) -> Any:
    op = node.op
    if op == "??":
        try:
            v = _visit(node.left, scope)
        except BadPath:
            return _visit(node.right, scope)
        return _visit(node.right, scope) if v is None else v
    if op == "and":
        if not _truth(_visit(node.left, scope), node, "and"):
            return False
        return _truth(_visit(node.right, scope), node, "and")
    if op == "or":
        if _truth(_visit(node.left, scope), node, "or"):
            return True
        return _truth(_visit(node.right, scope), node, "or")
    fn = _STRICT_BINARY.get(op)
    if fn is None:
        raise ExprError(f"unknown operator `{op}`")
    try:
        left, right = _visit(node.left, scope), _visit(node.right, scope)
    except (BadPath, EvalEnded):
        raise
    except RunError as e:  # durations: named as written, not as the compiler wrote them
        raise _named_as_written(e, node) from None
    try:
        return fn(left, right, node)
    except OverflowError:  # e.g. a huge int mixed with a float
        raise _too_large(node) from None
    except MemoryError:  # a last guard: the limits above refuse what could get here
        raise ExprError(f"`{expr_text(node)}`: the result is too large to build") from None


def _named_as_written(e: RunError, node: ast.Binary | ast.FuncCall) -> RunError:
    """``e``, raised by a call the compiler added to ``node`` (``seconds``, ``canonical``:
    runtime/written.py), as a failure of ``node`` as the user wrote it (`` `a + b < 5m`: … ``
    rather than `` `seconds(a + b)`: … ``); ``e`` itself otherwise."""
    for w in wrappers(node):
        quoted = f"`{expr_text(w)}`: "
        if e.message.startswith(quoted):
            message = f"`{expr_text(node)}`: {e.message[len(quoted) :]}"
            return ExprError(message) if isinstance(e, ExprError) else RunError(e.code, message)
    return e


def _visit_CondExpr(node: ast.CondExpr, scope: Mapping[str, Any]) -> Any:
    c = _visit(node.cond, scope)
    if not isinstance(c, bool):
        raise ExprError(f"`{expr_text(node)}`: the condition must be a bool, got {_kind(c)}")
    return _visit(node.then if c else node.else_, scope)


def _visit_MatchExpr(node: ast.MatchExpr, scope: Mapping[str, Any]) -> Any:
    """``match``: the first arm with a pattern equal to the subject (as ``==`` compares; a
    duration pattern by length), and only that arm evaluated; no such arm is ``no_match``
    (docs/reference/expressions.md "match")."""
    value = _visit(node.subject, scope)
    for arm in node.arms:
        if arm.wildcard_span is not None or any(_matches(value, p) for p in arm.patterns):
            return _visit(arm.value, scope)
    shown = json.dumps(preview(value), ensure_ascii=False, default=str)
    raise RunError(
        Code.NO_MATCH,
        f"`{expr_text(node)}`: no arm matches the value {shown} of "
        f"`{expr_text(node.subject)}`; add an arm for it or a last `_ => …`",
    )


def _matches(value: Any, pattern: ast.Expr) -> bool:
    """Whether ``value`` equals the literal ``pattern`` as ``==`` compares them."""
    if isinstance(pattern, ast.DurationLit):
        if not isinstance(value, str):
            return False
        try:
            return duration_ms(value) == pattern.ms
        except ValueError:
            return False
    return strict_eq(value, _visit(pattern, {}))


def _visit_FuncCall(node: ast.FuncCall, scope: Mapping[str, Any]) -> Any:
    """A library function (docs/reference/functions.md): the arguments evaluated, their kinds
    checked, the implementation of runtime/functions.py called; its failures become run-time
    errors with their registered code, naming the call as written."""
    spec = FUNCTIONS.get(node.name)
    if spec is None:
        raise ExprError(f"`{node.name}(…)`: there is no library function `{node.name}`")
    if not spec.min_args <= len(node.args) <= spec.max_args:
        raise ExprError(
            f"`{node.name}(…)` takes {arity(spec)}, got {len(node.args)}: `{spec.signature}`"
        )
    # a range becomes its list; nothing inside an array or object is a range (list and object
    # literals convert theirs), so the arguments are passed as they are, never copied
    try:
        args = [v.to_list() if type(v := _visit(a, scope)) is FlowRange else v for a in node.args]
    except (BadPath, EvalEnded):
        raise
    except RunError as e:  # durations: named as written, not as the compiler wrote them
        raise _named_as_written(e, node) from None
    if args and type(first := args[0]) in _SIZED and len(first) > _BIG_ARGUMENT:
        checkpoint(len(first))  # between calls over large values (`sort` of 1M items: C)
    try:
        result = _call_function(node.name, args)
    except (BadPath, EvalEnded):
        raise
    except RunError as e:  # the function's own failure: name the call as written
        message = f"`{expr_text(node)}`: {e.message}"
        if e.code == Code.BAD_PATH:
            raise BadPath(expr_text(node), e.message.rsplit("`", 2)[-2], e.message) from None
        if e.code == Code.VALIDATION:
            raise ExprError(message) from None
        raise RunError(e.code, message) from None
    except MemoryError:  # a last guard: the functions that build values check their size first
        raise ExprError(f"`{expr_text(node)}`: the result is too large to build") from None
    if isinstance(result, int) and result.bit_length() > _JSON_INT_BITS:
        raise _too_large(node)  # the functions keep `int`'s range themselves (int_result)
    return result


def _call_function(name: str, args: list[Any]) -> Any:
    checked = check_kinds(name, args)
    try:
        return IMPLEMENTATIONS[name](*checked)
    except RunError:
        raise
    except (TypeError, ValueError, OverflowError) as e:  # operands a JSON value cannot order …
        raise ExprError(str(e)) from None
    except RecursionError:
        raise _too_deep() from None


def _visit_UserCall(node: ast.UserCall, scope: Mapping[str, Any]) -> Any:
    """A plan function's call (docs/spec/PLAN_IR.md "functions"; the loader bound ``node`` to
    it): the arguments evaluated in the caller's scope, the body in a scope of the parameters
    alone. A failure inside the body names the function and the call as written.

    The calls one outermost call makes in all are counted (shared through the bodies' scopes,
    :class:`_Frame`): every :data:`_CALLS_CHUNK` calls a :func:`checkpoint` (the
    run's deadline, a stop signal, a cancel), and past ``MAX_FUNCTION_CALLS`` the outermost call
    fails with ``call_limit`` (docs/decisions.md "User functions that never end")."""
    fn = node.function
    if fn is None:
        raise ExprError(f"`{expr_text(node)}`: the plan has no function `{node.name}`")
    args = [v.to_list() if type(v := _visit(a, scope)) is FlowRange else v for a in node.args]
    if len(args) != len(fn.params):
        raise ExprError(
            f"`{expr_text(node)}`: function `{fn.name}` takes {len(fn.params)} arguments, "
            f"{len(args)} given"
        )
    frame = _Frame(zip(fn.params, args, strict=False))  # counted above; `strict` costs 2x
    if type(scope) is _Frame:  # a call inside a body: one more of its outermost call's
        calls = frame.calls = scope.calls
        calls[0] -= 1
        if not calls[0] & _CALLS_MASK:
            _calls_checkpoint(calls)
    else:
        frame.calls = [MAX_FUNCTION_CALLS, node]
    try:
        return _visit(fn.body, frame)
    except EvalEnded:
        raise
    except RunError as e:
        raise _in_function(e, node, fn.name) from None


class _Frame(dict[str, Any]):
    """A function body's scope: its parameters, and (``calls``) the count of its outermost
    call, shared by every call it makes in turn: ``[calls it may still make, that call's
    node]`` (a list: an object of its own cost 10 % of a small call)."""

    __slots__ = ("calls",)
    calls: list[Any]


#: Calls between two checkpoints of a call tree (a power of two: ``left & _CALLS_MASK``), and
#: the work each call counts for a :class:`~agentflow.runtime.interrupt.WorkMeter` (a call costs
#: about what 6 elements of a projection cost)
_CALLS_CHUNK = 1024
_CALLS_MASK = _CALLS_CHUNK - 1
_CALL_WORK = 6


def _calls_checkpoint(calls: list[Any]) -> None:
    """Every :data:`_CALLS_CHUNK` calls of one call tree (``calls``: :class:`_Frame`'s): the
    run's end looked at, and ``call_limit`` raised once ``MAX_FUNCTION_CALLS`` calls were made
    (an :class:`EvalEnded`, so no enclosing call words it again: the message names the
    outermost call, as the `.flow` wrote it)."""
    checkpoint(_CALLS_CHUNK * _CALL_WORK)
    if calls[0] <= 0:
        node: ast.UserCall = calls[1]
        name = node.function.name if node.function is not None else node.name
        limit = f"{MAX_FUNCTION_CALLS:,}"
        raise EvalEnded(
            Code.CALL_LIMIT,
            f"in function `{name}`, called as `{expr_text(node)}`: the call made more than "
            f"{limit} function calls, the most one call may make with the calls it makes in "
            "turn — a function that calls another twice or more at each level multiplies the "
            "calls; compute a value once and pass it on (a parameter, a `let`)",
            details={"function": name, "limit": MAX_FUNCTION_CALLS},
        )


def _in_function(e: RunError, node: ast.UserCall, name: str) -> RunError:
    """``e``, raised inside function ``name``'s body, with the function and the call as
    written before its message (a path missing there is still a missing path: ``??``). The
    executor puts only the call in the `.flow`'s terms (``runtime/where.py``
    ``_IN_FUNCTION``): the rest quotes the body, in its parameters' names."""
    message = f"in function `{name}`, called as `{expr_text(node)}`: {e.message}"
    out: RunError
    if isinstance(e, BadPath):
        out = BadPath(e.path, e.missing)
    elif isinstance(e, ExprError):
        out = ExprError(message)
    else:
        out = RunError(e.code, message, details=dict(e.details))
    out.message = message
    out.args = (message,)
    return out


def _visit_Call(node: ast.Call, scope: Mapping[str, Any]) -> Any:
    raise ExprError(f"`{expr_text(node.callee)}(…)`: tool calls are not allowed inside templates")


_VISIT: dict[type, Callable[[Any, Mapping[str, Any]], Any]] = {
    ast.Name: _visit_Name,
    ast.Member: _visit_Member,
    ast.Index: _visit_Index,
    ast.Projection: _visit_Projection,
    ast.ProjectionItem: _visit_ProjectionItem,
    ast.StringLit: _visit_StringLit,
    ast.NumberLit: lambda n, s: n.value,
    ast.BoolLit: lambda n, s: n.value,
    ast.NullLit: lambda n, s: None,
    ast.DurationLit: lambda n, s: n.text,
    ast.ListLit: _visit_ListLit,
    ast.ObjectLit: _visit_ObjectLit,
    ast.RangeExpr: _visit_RangeExpr,
    ast.Unary: _visit_Unary,
    ast.Binary: _visit_Binary,
    ast.Call: _visit_Call,
    ast.FuncCall: _visit_FuncCall,
    ast.UserCall: _visit_UserCall,
    ast.CondExpr: _visit_CondExpr,
    ast.MatchExpr: _visit_MatchExpr,
}


class _Dispatch(dict[type, Callable[[Any, Mapping[str, Any]], Any]]):
    def __missing__(self, key: type) -> Callable[[Any, Mapping[str, Any]], Any]:
        def fail(node: Any, scope: Mapping[str, Any]) -> Any:
            raise ExprError(f"`{key.__name__}` cannot be evaluated in a template expression")

        return fail


_VISIT = _Dispatch(_VISIT)

# ---------------------------------------------------------------------------------------------
# Templates


Warn = Callable[[str], None]


def render(
    template: ast.Template,
    scope: Mapping[str, Any],
    *,
    lenient: bool = False,
    on_warning: Warn | None = None,
) -> Any:
    """Render a template (docs/spec/PLAN_IR.md §3).

    A template that is exactly one ``{{ expr }}`` renders to the typed value of ``expr``;
    otherwise to text (text holes as-is, other values as compact JSON).

    ``lenient=True`` (agent ``prompt``/``system_prompt``, ask ``question``): a missing path renders
    as empty text and ``on_warning(message)`` is called; otherwise :class:`BadPath` propagates.
    A range value becomes a list (:meth:`FlowRange.to_list`, at most :data:`MAX_RANGE_ITEMS`).
    Raises :class:`ExprError` as :func:`evaluate` does.
    """
    try:
        return _render(template, scope, lenient, on_warning)
    except RecursionError:
        raise _too_deep() from None


def _render(
    template: ast.Template, scope: Mapping[str, Any], lenient: bool, on_warning: Warn | None
) -> Any:
    parts = template.parts
    if len(parts) == 1 and not isinstance(parts[0], str):
        try:
            value = _visit(parts[0], scope)
            # a range leaves the expression world as a list (tools, results, traces see JSON)
            return value.to_list() if type(value) is FlowRange else value
        except BadPath as e:
            if not lenient:
                raise
            if on_warning is not None:
                on_warning(f"{e.message}; rendered as empty text")
            return ""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        try:
            out.append(to_text(_visit(p, scope)))
        except BadPath as e:
            if not lenient:
                raise
            if on_warning is not None:
                on_warning(f"{e.message}; rendered as empty text")
    return "".join(out)


def render_value(
    compiled: Any,
    scope: Mapping[str, Any],
    *,
    lenient: bool = False,
    on_warning: Warn | None = None,
) -> Any:
    """Render every :class:`ast.Template` inside a compiled input tree (dicts and lists,
    recursively).  Anything else — plain values, nested ``Step`` objects, condition
    :class:`ast.Expr` objects — is returned untouched (deferred rendering is the executor's job).
    """
    t = type(compiled)
    if t is ast.Template:
        return render(compiled, scope, lenient=lenient, on_warning=on_warning)
    if t is dict:
        return {
            k: render_value(v, scope, lenient=lenient, on_warning=on_warning)
            for k, v in compiled.items()
        }
    if t is list:
        return [render_value(v, scope, lenient=lenient, on_warning=on_warning) for v in compiled]
    return compiled


# ---------------------------------------------------------------------------------------------
# Conditions (docs/spec/PLAN_IR.md §4)

_MISSING = object()


def _cond_value(v: Any, scope: Mapping[str, Any], allow_missing: bool) -> Any:
    if allow_missing:
        try:
            return render_value(v, scope)
        except BadPath:
            return _MISSING
    return render_value(v, scope)


def _is_empty(v: Any) -> bool:
    return v is _MISSING or v is None or (isinstance(v, str | list | tuple | dict) and len(v) == 0)


_PARSED_EXPRS: dict[str, ast.Expr] = {}


def _as_expr(e: Any) -> ast.Expr:
    if isinstance(e, ast.Expr):
        return e
    if isinstance(e, ast.Template) and e.whole is not None:
        return e.whole
    if isinstance(e, str):
        # Hand-built condition dicts (tests, API users) may hold raw text: parse once, cache.
        cached = _PARSED_EXPRS.get(e)
        if cached is None:
            # lazy: the grammar (lark, ~0.2 s to load) only when raw condition text is met;
            # importing the runtime (`flowc runs`, `flowc resume`) does not load it
            from agentflow.grammar.parser import parse_expression

            try:
                cached = parse_expression(e, "<condition>")
            except SourceError as exc:
                raise ExprError(f"condition `expr`: {exc.message}") from None
            if too_deep(cached) is not None:
                raise ExprError(
                    f"condition `expr` nested too deeply (more than {MAX_EXPR_DEPTH} levels)"
                )
            _PARSED_EXPRS[e] = cached
        return cached
    raise ExprError(f"condition `expr` must be an expression, got {_kind(e)}")


def _op_eq(v: Any, to: Any) -> bool:
    return strict_eq(v, to)


def _cmp(fn: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def op(v: Any, to: Any) -> bool:
        if v is _MISSING:
            return False
        if not ((is_number(v) and is_number(to)) or (isinstance(v, str) and isinstance(to, str))):
            raise ExprError(f"condition: cannot compare {_kind(v)} with {_kind(to)}")
        return fn(v, to)

    return op


def _op_in(v: Any, to: Any) -> bool:
    return False if v is _MISSING else _contains(to, v, None, "in")


def _op_contains(v: Any, to: Any) -> bool:
    return False if v is _MISSING else _contains(v, to, None, "contains")


#: Time budget of one ``matches`` evaluation, in seconds.  Patterns run on the third-party
#: ``regex`` engine (the syntax of Python's ``re``); a search that backtracks longer than this
#: fails the step with ``validation`` instead of freezing the event loop (``re`` holds the GIL and
#: cannot be interrupted, so step timeouts and the deadline could never fire).
MATCHES_TIMEOUT_S = 1.0


def _op_matches(v: Any, to: Any) -> bool:
    if not isinstance(v, str) or not isinstance(to, str):
        return False
    try:
        return regex.search(to, v, timeout=MATCHES_TIMEOUT_S) is not None
    except regex.error as exc:
        raise ExprError(f"condition `matches`: invalid regular expression {to!r}: {exc}") from None
    except TimeoutError:
        raise ExprError(
            f"condition `matches`: regular expression {to!r} took longer than "
            f"{MATCHES_TIMEOUT_S:g} s (catastrophic backtracking?)"
        ) from None


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _op_eq,
    "ne": lambda v, to: not _op_eq(v, to),
    "lt": _cmp(lambda a, b: a < b),
    "le": _cmp(lambda a, b: a <= b),
    "gt": _cmp(lambda a, b: a > b),
    "ge": _cmp(lambda a, b: a >= b),
    "in": _op_in,
    "not_in": lambda v, to: not _op_in(v, to),
    "contains": _op_contains,
    "exists": lambda v, to: v is not _MISSING and v is not None,
    "empty": lambda v, to: _is_empty(v),
    "not_empty": lambda v, to: not _is_empty(v),
    "matches": _op_matches,
}


def evaluate_condition(cond: Any, scope: Mapping[str, Any]) -> bool:
    """Evaluate a condition of docs/spec/PLAN_IR.md §4 to a bool.

    ``cond`` is one of ``{value, op, to}`` (ops eq ne lt le gt ge in not_in contains exists empty
    not_empty matches; ``value``/``to`` may hold templates), ``{expr}`` (an :class:`ast.Expr`, or
    text parsed once and cached), ``{all: [...]}``, ``{any: [...]}``, ``{not: {...}}``; also a bare
    bool or a whole-value template yielding a bool.

    ``exists``/``empty``/``not_empty`` treat a missing path as absent rather than raising; every
    other op raises :class:`BadPath` for a missing path.  Raises :class:`ExprError` for a malformed
    condition or a non-bool result.
    """
    if isinstance(cond, bool):
        return cond
    if isinstance(cond, ast.Template):
        v = render(cond, scope)
        if isinstance(v, bool):
            return v
        raise ExprError(f"condition must render to a bool, got {_kind(v)}")
    if isinstance(cond, ast.Expr):
        v = evaluate(cond, scope)
        if isinstance(v, bool):
            return v
        raise ExprError(f"condition `{expr_text(cond)}` must be a bool, got {_kind(v)}")
    if not isinstance(cond, Mapping):
        raise ExprError(f"a condition must be an object, got {_kind(cond)}")
    if "all" in cond:
        return all(evaluate_condition(c, scope) for c in cond["all"])
    if "any" in cond:
        return any(evaluate_condition(c, scope) for c in cond["any"])
    if "not" in cond:
        return not evaluate_condition(cond["not"], scope)
    if "expr" in cond:
        e = _as_expr(cond["expr"])
        v = evaluate(e, scope)
        if isinstance(v, bool):
            return v
        raise ExprError(f"condition `{expr_text(e)}` must be a bool, got {_kind(v)}")
    if "op" in cond or "value" in cond:
        op = cond.get("op", "eq")
        fn = _OPS.get(op)
        if fn is None:
            raise ExprError(f"unknown condition op `{op}` (one of {', '.join(_OPS)})")
        v = _cond_value(cond.get("value"), scope, allow_missing=op in UNARY_CONDITION_OPS)
        to = render_value(cond.get("to"), scope) if op not in UNARY_CONDITION_OPS else None
        return bool(fn(v, to))
    raise ExprError(f"a condition needs one of value/op, expr, all, any, not; got {sorted(cond)}")
