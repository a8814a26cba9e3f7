"""The implementations of the standard library's pure functions (docs/reference/functions.md).

Signatures, summaries and error codes are in :mod:`agentflow.core.functions` (one registry); this
module holds one Python function per entry, in :data:`IMPLEMENTATIONS`, which
:mod:`agentflow.runtime.expressions` calls for an :class:`~agentflow.grammar.ast.FuncCall`.
Every function is deterministic (the same arguments give the same value: safe under durable
replay) and costs no model call or tool call.

An implementation takes the evaluated arguments (JSON-like values; an omitted optional argument
is ``None``) and returns a JSON-like value.  A value of the wrong kind — possible with ``json``
values and in hand-written plans — is :class:`~agentflow.errors.ExprError` (``validation``); the
failure modes of each function raise :class:`~agentflow.errors.RunError` with a registered code
(``invalid_argument``, ``parse_error``, ``regex_timeout``, ``bad_path``), which the evaluator
raises again with the call as written in front of the message.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any, TypeVar

import regex

from agentflow.core.functions import FUNCTIONS, KIND_WORDS, PARAM_KINDS
from agentflow.core.text import json_error
from agentflow.core.vocabulary import (
    MAX_DURATION_MS,
    MAX_DURATION_TEXT,
    MAX_EXPR_DEPTH,
    MAX_INT,
    MIN_INT,
    Code,
    duration_ms,
    duration_text,
)
from agentflow.errors import ExprError, RunError
from agentflow.runtime.extract import DuplicateKey, loads_value
from agentflow.runtime.interrupt import checkpoint

__all__ = [
    "IMPLEMENTATIONS",
    "MAX_COMPUTED_ITEMS",
    "MAX_LIST_ITEMS",
    "MAX_TEXT_CHARS",
    "REGEX_TIMEOUT_S",
    "check_kinds",
    "eq_key",
    "int_too_large",
    "too_long",
]

#: Time budget of one regular-expression search of ``match``, ``matches`` and ``find_all``, in
#: seconds (the ``timeout=`` of the ``regex`` library): a pattern that backtracks longer fails
#: with ``regex_timeout`` instead of freezing the run.
REGEX_TIMEOUT_S = 1.0
#: Most elements ``range`` builds (as a range used as a value, ``MAX_RANGE_ITEMS``).
MAX_LIST_ITEMS = 100_000
#: Largest width ``pad_start``/``pad_end`` pad to.
MAX_PAD = 100_000
#: Longest text an operator or a library function may build (``+``, interpolation, ``join``,
#: ``replace``), in characters, and most items of an array they may build (``+``, ``flatten``):
#: beyond them a step fails with ``validation`` before the value is built, never by exhausting
#: memory (docs/reference/expressions.md "Limits").
MAX_TEXT_CHARS = 10_000_000
MAX_COMPUTED_ITEMS = 1_000_000


def int_too_large(x: object) -> bool:
    """True for an ``int`` (not a bool) outside the language's int range
    (:data:`~agentflow.core.vocabulary.MIN_INT` … ``MAX_INT``, a signed 64-bit number)."""
    return type(x) is int and not MIN_INT <= x <= MAX_INT


def too_long(size: int, what: str) -> str | None:
    """The message for a text (``what="text"``, ``size`` characters) or an array (``"array"``,
    ``size`` items) about to be built over its limit (:data:`MAX_TEXT_CHARS`,
    :data:`MAX_COMPUTED_ITEMS`); None when it fits."""
    if what == "text":
        if size <= MAX_TEXT_CHARS:
            return None
        return (
            f"the result would be a text of {size:,} characters; a text built by an expression "
            f"holds at most {MAX_TEXT_CHARS:,}"
        )
    if size <= MAX_COMPUTED_ITEMS:
        return None
    return (
        f"the result would be an array of {size:,} items; an array built by an expression holds "
        f"at most {MAX_COMPUTED_ITEMS:,}"
    )


def _fit(size: int, what: str) -> None:
    message = too_long(size, what)
    if message is not None:
        raise ExprError(message)


def is_number(x: object) -> bool:
    """True for a JSON number (an int or a float, never a bool)."""
    return isinstance(x, int | float) and not isinstance(x, bool)


def kind_of(x: object) -> str:
    """The JSON kind of a value, as messages say it."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "bool"
    if is_number(x):
        return "number"
    if isinstance(x, str):
        return "text"
    if isinstance(x, list | tuple):
        return "array"
    if isinstance(x, dict):
        return "object"
    return type(x).__name__


def _as_int(x: Any) -> Any:
    """An integral float as an int (JSON has one number type); anything else unchanged."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


# -- kinds of parameters, from the signature's type text ---------------------------------------


_KIND_OK: dict[str, Callable[[Any], bool]] = {
    "any": lambda v: True,
    "text": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(_as_int(v), int) and not isinstance(v, bool),
    "number": is_number,
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list | tuple),
    "map": lambda v: isinstance(v, dict),
    "text|list": lambda v: isinstance(v, str | list | tuple),
    "text|list|map": lambda v: isinstance(v, str | list | tuple | dict),
}


def check_kinds(name: str, args: list[Any]) -> list[Any]:
    """``args`` checked against the kinds of ``name``'s parameters (integral floats given where
    an ``int`` is wanted become ints; omitted ones are ``None``).  Raises
    :class:`~agentflow.errors.ExprError`."""
    spec = FUNCTIONS[name]
    kinds = PARAM_KINDS[name]
    out = list(args) + [None] * (len(kinds) - len(args))
    for i, (p, kind) in enumerate(zip(spec.params, kinds, strict=True)):
        v = out[i]
        if v is None and (p.omittable or kind == "any"):
            continue
        if not _KIND_OK[kind](v):
            raise ExprError(f"`{p.name}` must be {KIND_WORDS[kind]}, got {kind_of(v)}")
        if kind == "int":
            out[i] = _as_int(v)
    return out


# -- helpers ----------------------------------------------------------------------------------


def _render(v: Any) -> str:
    """A value as ``${…}`` renders it (runtime.expressions.to_text); texts and ints (most items
    of `join` and keys of `count_by`) without the JSON encoder, which costs ~20× more."""
    t = type(v)
    if t is str:
        text: str = v
        return text
    if t is int:
        return str(v)
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


#: How many arrays and objects a deep comparison (:func:`strict_eq`) or key
#: (:func:`eq_key`) walks between two :func:`~agentflow.runtime.interrupt.checkpoint` calls.
_EVERY = 4096
_walked = [0]


def _tick() -> None:
    """Count one array or object walked; every :data:`_EVERY`, a checkpoint (the run's deadline,
    a stop, a cancel end a long walk)."""
    _walked[0] += 1
    if not _walked[0] % _EVERY:
        checkpoint()


def strict_eq(a: object, b: object) -> bool:
    """JSON equality, as ``==`` and ``in`` compare (docs/reference/expressions.md "Operators"):
    ``true`` is not ``1``, ``1 == 1.0``; lists and objects element by element. The same array or
    object on both sides is equal without a walk (``s == s`` on a value sharing one list many
    times costs nothing); a long walk checks the run's deadline and stop as it goes."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if a is b:
            return True
        _tick()
        return len(a) == len(b) and all(strict_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if a is b:
            return True
        _tick()
        return a.keys() == b.keys() and all(strict_eq(a[k], b[k]) for k in a)
    return a == b


def eq_key(x: Any) -> Any:
    """A hashable key of ``x`` such that ``eq_key(a) == eq_key(b)`` exactly when
    ``strict_eq(a, b)``: ``unique`` and ``overlap`` find equal values by hashing, in time linear
    in the values' size (a pairwise scan took minutes on 20,000 items)."""
    if isinstance(x, bool):
        return (x,)  # never equal to the number 1 or 0, whose key is the number itself
    if isinstance(x, list | tuple):
        _tick()
        return ("[", *map(eq_key, x))
    if isinstance(x, dict):
        _tick()
        return ("{", frozenset((k, eq_key(v)) for k, v in x.items()))
    return x


def _orderable(xs: list[object], what: str) -> None:
    """Elements all numbers or all texts (else :class:`~agentflow.errors.ExprError`)."""
    if all(is_number(x) for x in xs) or all(isinstance(x, str) for x in xs):
        return
    kinds = sorted({kind_of(x) for x in xs})
    raise ExprError(f"{what} needs numbers or texts, got {' and '.join(kinds)}")


def _nonneg(n: int, what: str) -> int:
    if n < 0:
        raise RunError(Code.INVALID_ARGUMENT, f"{what} must not be negative, got {n}")
    return n


def _regex(pattern: str) -> regex.Pattern[str]:
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise RunError(
            Code.INVALID_ARGUMENT, f"invalid regular expression {_quote(pattern)}: {exc}"
        ) from None
    except (RecursionError, OverflowError, MemoryError):
        raise RunError(
            Code.INVALID_ARGUMENT, f"regular expression {_quote(pattern)} is too complex"
        ) from None


_T = TypeVar("_T")


def _timed(fn: Callable[[], _T], pattern: str) -> _T:
    try:
        return fn()
    except TimeoutError:
        raise RunError(
            Code.REGEX_TIMEOUT,
            f"the regular expression {_quote(pattern)} took longer than {REGEX_TIMEOUT_S:g} s "
            "(catastrophic backtracking?): simplify it",
        ) from None


def _field(x: Any, name: str) -> Any:
    if not isinstance(x, dict):
        raise ExprError(f"a field name needs objects, got {kind_of(x)}")
    if name not in x:
        raise RunError(Code.BAD_PATH, f"an element has no field `{name}`")
    return x[name]


# -- text ---------------------------------------------------------------------------------------


def _join(xs: list[object], sep: str) -> str:
    parts = []
    size = len(sep) * max(0, len(xs) - 1)
    _fit(size, "text")
    for i, x in enumerate(xs):
        part = _render(x)
        size += len(part)
        if size > MAX_TEXT_CHARS or not i % _EVERY:
            _fit(size, "text")  # stops at the limit, not after rendering every item
            checkpoint(_EVERY)
        parts.append(part)
    return sep.join(parts)


def _split(s: str, sep: str) -> list[str]:
    return list(s) if sep == "" else s.split(sep)


def _replace(s: str, old: str, new: str) -> str:
    if old == "":
        raise RunError(Code.INVALID_ARGUMENT, "`old` must not be empty")
    if len(new) > len(old):
        _fit(len(s) + s.count(old) * (len(new) - len(old)), "text")
    return s.replace(old, new)


def _slice(x: Any, start: int, end: int | None) -> Any:
    return x[start:end] if not isinstance(x, tuple) else list(x[start:end])


def _fill(fill: str | None) -> str:
    fill = " " if fill is None else fill
    if len(fill) != 1:
        raise RunError(Code.INVALID_ARGUMENT, f"`fill` must be one character, got {_quote(fill)}")
    return fill


def _width(width: int) -> int:
    if width > MAX_PAD:
        raise RunError(Code.INVALID_ARGUMENT, f"`width` must be at most {MAX_PAD:,}")
    return width


def _pad_start(s: str, width: int, fill: str | None) -> str:
    return s.rjust(_width(width), _fill(fill))


def _pad_end(s: str, width: int, fill: str | None) -> str:
    return s.ljust(_width(width), _fill(fill))


#: enough digits for any JSON float (up to ~1e308) with 20 decimals: quantize never overflows
_CONTEXT = Context(prec=400)


def _quantize(x: int | float, places: int) -> Decimal:
    """``x`` rounded to ``places`` decimals, halves away from zero, exactly (from its shortest
    decimal text, so ``2.675`` is 2.675, not the binary float below it)."""
    try:
        return _decimal(x).quantize(
            Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_CONTEXT
        )
    except InvalidOperation:  # an integer of hundreds of digits
        raise RunError(Code.INVALID_ARGUMENT, "the number has too many digits") from None


def _decimal(x: int | float) -> Decimal:
    return Decimal(x) if isinstance(x, int) else Decimal(repr(x))


def _format_number(x: int | float, decimals: int) -> str:
    if not 0 <= decimals <= 20:
        raise RunError(Code.INVALID_ARGUMENT, f"`decimals` must be 0 to 20, got {decimals}")
    d = _quantize(x, decimals)
    text = format(d, "f")
    return "0" + text[2:] if text.startswith("-0") and d == 0 else text


def _lines(s: str) -> list[str]:
    return regex.split(r"\r\n|\r|\n", s.removesuffix("\n").removesuffix("\r"))


def _match(s: str, pattern: str) -> list[str] | None:
    rx = _regex(pattern)
    m = _timed(lambda: rx.search(s, timeout=REGEX_TIMEOUT_S), pattern)
    if m is None:
        return None
    return [m.group(0), *(g if g is not None else "" for g in m.groups())]


def _matches(s: str, pattern: str) -> bool:
    rx = _regex(pattern)
    return _timed(lambda: rx.search(s, timeout=REGEX_TIMEOUT_S), pattern) is not None


def _find_all(s: str, pattern: str) -> list[str]:
    rx = _regex(pattern)
    return _timed(lambda: [m.group(0) for m in rx.finditer(s, timeout=REGEX_TIMEOUT_S)], pattern)


# -- lists --------------------------------------------------------------------------------------


def _len(x: Any) -> int:
    return len(x)


def _sum(xs: list[Any]) -> Any:
    if not all(is_number(x) for x in xs):
        raise ExprError(
            f"`xs` must hold numbers, got {', '.join(sorted({kind_of(x) for x in xs}))}"
        )
    try:
        total = math.fsum(xs) if any(isinstance(x, float) for x in xs) else sum(xs)
    except OverflowError:  # fsum's "intermediate overflow" (partial sums beyond a float)
        total = math.inf
    if isinstance(total, float) and not math.isfinite(total):
        raise RunError(Code.ARITHMETIC, "the sum is too large for a JSON number")
    if all(MIN_INT <= x <= MAX_INT for x in xs):  # a sum of `int`s is an `int`
        return int_result(total)
    return total


def _min(xs: list[Any]) -> Any:
    if not xs:
        return None
    _orderable(xs, "`min`")
    return min(xs)


def _max(xs: list[Any]) -> Any:
    if not xs:
        return None
    _orderable(xs, "`max`")
    return max(xs)


def _sort(xs: list[Any]) -> list[Any]:
    _orderable(xs, "`sort`")
    return sorted(xs)


def _sort_by(xs: list[Any], field: str) -> list[Any]:
    desc = field.startswith("-")
    name = field[1:] if desc else field
    keys = []
    for i, x in enumerate(xs):
        if not i % _EVERY:
            checkpoint(_EVERY)
        keys.append(_field(x, name))
    present = [k for k in keys if k is not None]
    _orderable(present, f"`sort_by` on `{name}`")
    # nulls first (ascending); Python's sort is stable in both directions
    order = sorted(
        range(len(xs)),
        key=lambda i: (keys[i] is not None, keys[i] if keys[i] is not None else 0),
        reverse=desc,
    )
    return [xs[i] for i in order]


def _unique(xs: list[Any], keys: list[object] | None = None) -> list[Any]:
    """``unique(xs, keys?)``: first occurrences in order; with ``keys``, ``xs[i]`` repeats an
    earlier element when ``keys[i]`` equals its key (``invalid_argument`` when the lengths
    differ). The compiler gives a ``duration[]`` its lengths as keys (``seconds(xs)``)."""
    if keys is not None and len(keys) != len(xs):
        raise RunError(
            Code.INVALID_ARGUMENT,
            f"`keys` must have one key per element: {len(xs)} elements, {len(keys)} keys",
        )
    seen: set[object] = set()
    out: list[Any] = []
    for i, x in enumerate(xs):
        key = eq_key(x if keys is None else keys[i])
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def _overlap(a: list[object], b: list[object]) -> float:
    mine = {eq_key(x) for x in a}
    theirs = {eq_key(x) for x in b}
    union = len(mine | theirs)
    if not union:
        return 1.0
    return len(mine & theirs) / union


def _flatten(xs: list[Any]) -> list[Any]:
    for x in xs:
        if not isinstance(x, list | tuple):
            raise ExprError(f"`xs` must hold lists, got {kind_of(x)}")
    _fit(sum(map(len, xs)), "array")
    out: list[Any] = []
    for x in xs:
        out.extend(x)
    return out


def _take(xs: list[Any], n: int) -> list[Any]:
    return list(xs[: _nonneg(n, "`n`")])


def _drop(xs: list[Any], n: int) -> list[Any]:
    return list(xs[_nonneg(n, "`n`") :])


def _zip(a: list[Any], b: list[Any]) -> list[dict[str, Any]]:
    return [{"first": x, "second": y} for x, y in zip(a, b, strict=False)]


def _range(a: int, b: int | None) -> list[int]:
    lo, hi = (0, a) if b is None else (a, b)
    if hi - lo > MAX_LIST_ITEMS:
        raise RunError(
            Code.INVALID_ARGUMENT,
            f"range({lo}, {hi}) would hold more than {MAX_LIST_ITEMS:,} numbers",
        )
    return list(range(lo, hi))


def _bools(xs: list[Any]) -> list[Any]:
    for x in xs:
        if not isinstance(x, bool):
            raise ExprError(f"`xs` must hold bools, got {kind_of(x)}")
    return xs


def _index_of(xs: list[object], x: Any) -> int:
    return next((i for i, y in enumerate(xs) if strict_eq(x, y)), -1)


def _key_of(spellings: dict[object, str], v: Any) -> str:
    """The key `count_by` / `group_by` file ``v`` under: values equal by ``==`` (``1`` and
    ``1.0``, ``0`` and ``-0.0``) share one key, spelled as the first of them renders."""
    k = eq_key(v)
    text = spellings.get(k)
    if text is None:
        text = spellings[k] = _render(v)
    return text


def _group_by(xs: list[Any], field: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    spellings: dict[object, str] = {}
    for i, x in enumerate(xs):
        if not i % _EVERY:
            checkpoint(_EVERY)
        out.setdefault(_key_of(spellings, _field(x, field)), []).append(x)
    return out


def _count_by(xs: list[Any], field: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    spellings: dict[object, str] = {}
    for i, x in enumerate(xs):
        if not i % _EVERY:
            checkpoint(_EVERY)
        key = _key_of(spellings, x if field is None else _field(x, field))
        out[key] = out.get(key, 0) + 1
    return out


# -- objects and maps ---------------------------------------------------------------------------


def _texts(keys: list[Any]) -> list[Any]:
    for k in keys:
        if not isinstance(k, str):
            raise ExprError(f"`keys` must hold texts, got {kind_of(k)}")
    return keys


# -- numbers ------------------------------------------------------------------------------------


def int_result(v: Any) -> Any:
    """``v`` unless it is a whole number outside `int` (−2⁶³ … 2⁶³−1): then an ``arithmetic``
    error — an operation on `int`s whose result `int` cannot hold (docs/reference/errors.md)."""
    if isinstance(v, int) and not MIN_INT <= v <= MAX_INT:
        raise RunError(
            Code.ARITHMETIC, f"the result is outside the range of `int` ({MIN_INT} to {MAX_INT})"
        )
    return v


def _finite_int(x: Any, what: str) -> int:
    if isinstance(x, float) and not math.isfinite(x):  # pragma: no cover - JSON has none
        raise RunError(Code.INVALID_ARGUMENT, f"{what} is not a finite number")
    return int(x)


def _round(x: int | float, digits: int | None) -> Any:
    if digits is None:
        if isinstance(x, int):
            return x
        return int_result(_finite_int(_quantize(x, 0), "`x`"))
    if not -20 <= digits <= 20:
        raise RunError(Code.INVALID_ARGUMENT, f"`digits` must be -20 to 20, got {digits}")
    if isinstance(x, int):
        return x if digits >= 0 else _int_of(x, int(_quantize(x, digits)))
    return float(_quantize(x, digits))


def _int_of(x: int, v: int) -> int:
    """``v``, computed from the whole number ``x``: an ``arithmetic`` error when ``x`` is an
    `int` and ``v`` is not (``abs(-2⁶³)``, a rounding past 2⁶³−1)."""
    return int_result(v) if MIN_INT <= x <= MAX_INT else v


def _abs(x: int | float) -> Any:
    return _int_of(x, abs(x)) if isinstance(x, int) else abs(x)


def _floor(x: int | float) -> int:
    return x if isinstance(x, int) else int_result(math.floor(x))


def _ceil(x: int | float) -> int:
    return x if isinstance(x, int) else int_result(math.ceil(x))


def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    if lo > hi:
        raise RunError(Code.INVALID_ARGUMENT, f"`lo` ({lo}) is above `hi` ({hi})")
    return lo if x < lo else hi if x > hi else x


# -- conversions --------------------------------------------------------------------------------

_INT = regex.compile(r"\s*[+-]?[0-9]+\s*")
_NUMBER = regex.compile(r"\s*-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*")


def _short(s: str) -> str:
    """A text as a `.flow` string literal, cut after 40 characters."""
    return _quote(s if len(s) <= 40 else s[:40] + "…")


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _parse_int(s: str) -> int:
    if not _INT.fullmatch(s) or len(s) > 4300:
        raise RunError(Code.PARSE_ERROR, f"{_short(s)} is not an integer")
    return _in_range(int(s), s)


def _in_range(v: int, s: str) -> int:
    """``v`` when it is an `int` of the language (MIN_INT … MAX_INT), else ``parse_error``."""
    if not MIN_INT <= v <= MAX_INT:
        raise RunError(Code.PARSE_ERROR, f"{_short(s)} is too large for an int")
    return v


def _parse_number(s: str) -> Any:
    if not _NUMBER.fullmatch(s) or len(s) > 4300:
        raise RunError(Code.PARSE_ERROR, f"{_short(s)} is not a number")
    text = s.strip()
    if regex.fullmatch(r"-?[0-9]+", text):
        return _in_range(int(text), s)
    v = float(text)
    if not math.isfinite(v):
        raise RunError(Code.PARSE_ERROR, f"{_short(s)} is too large for a JSON number")
    return v


def _parse_json(s: str) -> Any:
    """JSON text as a value, read as every value from outside is
    (:func:`agentflow.runtime.extract.loads_value`: JSON's own numbers, ints in range, bounded
    depth, lone surrogates made whole); ``parse_error`` otherwise — also for an object that
    gives one key twice, naming the key (which value was meant is not known: the same refusal
    as ``--input``'s, docs/reference/functions.md ``parse_json``)."""

    try:
        return loads_value(s, MAX_EXPR_DEPTH)
    except DuplicateKey as exc:
        raise RunError(Code.PARSE_ERROR, f"ambiguous JSON, {exc}: {_short(s)}") from None
    except (ValueError, RecursionError) as exc:
        detail = (
            json_error(exc) if isinstance(exc, json.JSONDecodeError) else str(exc) or "not JSON"
        )
        raise RunError(Code.PARSE_ERROR, f"{_short(s)} is not JSON ({detail})") from None


def _duration_seconds(d: Any) -> int | float:
    """One duration's length in seconds: an ``int`` when whole, else to the millisecond."""
    ms = _length_ms(d)
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def _length_ms(d: Any, name: str = "d") -> int:
    """One duration's length in milliseconds, at most the longest duration (``name``: the
    parameter a message names)."""
    try:
        ms = duration_ms(d)
    except ValueError:
        shown = _short(d) if isinstance(d, str) else kind_of(d)
        raise ExprError(f"`{name}` must be a duration (250ms, 90s, 1h30m), got {shown}") from None
    if ms > MAX_DURATION_MS:  # below it, ms / 1000 tells every two lengths apart
        raise RunError(
            Code.INVALID_ARGUMENT,
            f"{_short(d)} is longer than the longest duration, {MAX_DURATION_TEXT}",
        )
    return ms


def _seconds(d: Any) -> Any:
    """``seconds(d)`` (docs/reference/functions.md): a duration's length in seconds, or the
    lengths of a list of durations. ``null`` gives ``null``: the compiler compares two
    ``duration?`` values through it (docs/reference/lexical.md "Durations")."""
    if d is None:
        return None
    if isinstance(d, list | tuple):
        return [None if x is None else _duration_seconds(x) for x in d]
    return _duration_seconds(d)


def _from_seconds(n: int | float) -> str:
    """``from_seconds(n)``: ``n`` seconds (≥ 0, rounded to the millisecond, halves up) as a
    duration in its largest units (``90`` → ``"1m30s"``); ``invalid_argument`` when negative or
    longer than the longest `int` of milliseconds."""
    if n < 0:
        raise RunError(
            Code.INVALID_ARGUMENT, f"a duration cannot be negative, got {_render(n)} seconds"
        )
    ms = int((Decimal(repr(n)) * 1000).to_integral_value(ROUND_HALF_UP))
    if ms > MAX_DURATION_MS:
        raise RunError(
            Code.INVALID_ARGUMENT,
            f"{_render(n)} seconds is longer than the longest duration, {MAX_DURATION_TEXT}",
        )
    return duration_text(ms)


def _canonical(value: Any, shape: Any = None) -> Any:
    """``canonical(value, shape?)`` (docs/reference/functions.md): ``value`` with every duration
    where ``shape`` says written in its canonical form, its largest units (``90s`` →
    ``"1m30s"``, as ``from_seconds`` writes it): two durations are equal exactly when their
    canonical texts are. ``shape`` (default ``"duration"``): ``"duration"``, ``{items: S}`` (a
    list), ``{fields: {name: S, …}}`` (an object, its other fields as they are) or ``{values:
    S}`` (a map); ``null`` stays ``null`` anywhere. The compiler writes it where a comparison's
    static type holds durations (docs/reference/lexical.md "Durations").

    The shape is read once per call into a plan (:func:`_plan`), not once per element; a part
    that rewrites nothing (no duration, or only ``null`` or texts already canonical where it
    says) is the value itself, checked but not copied; each distinct duration text is parsed
    once (:func:`_duration_canonical`). The errors are those of a walk of the value by the
    shape, in its order: a bad shape fails only where a value reaches it."""
    if value is None:
        return None
    if shape is None or shape == "duration":
        return _duration(value)
    return _plan(shape, 0)[0](value)


_SHAPE_KEYS = ("items", "fields", "values")

#: One part of a shape read (:func:`_plan`): a value that is not ``null`` → its canonical form
#: (the value itself when nothing in it changes), raising as the walk would there.
_Canon = Callable[[Any], Any]


@functools.lru_cache(maxsize=4096)
def _duration_canonical(text: str) -> str:
    """A duration text in its largest units (parsed once per distinct text)."""
    return duration_text(_length_ms(text, "value"))


def _duration(v: Any) -> Any:
    if isinstance(v, str):
        out = _duration_canonical(v)
        return v if out == v else out
    return duration_text(_length_ms(v, "value"))  # raises: not a duration


def _failing(message: str) -> _Canon:
    """A part of a shape that is no shape: its error, raised where a value reaches it."""

    def fail(v: Any) -> Any:
        raise ExprError(message)

    return fail


def _plan(shape: Any, depth: int) -> tuple[_Canon, bool]:
    """The part of ``shape`` at ``depth`` as a function, and whether it ever rewrites a value
    (False: no ``"duration"`` reachable, it only checks the kinds the shape says and gives the
    value itself)."""
    if depth > MAX_EXPR_DEPTH:
        return _failing(f"`shape` nests more than {MAX_EXPR_DEPTH} levels"), False
    if shape == "duration":
        return _duration, True
    if not (isinstance(shape, dict) and len(shape) == 1 and next(iter(shape)) in _SHAPE_KEYS):
        return _failing(
            '`shape` must be "duration", {items: …}, {fields: {…}} or {values: …}, got '
            f"{_shown_shape(shape)}"
        ), False
    key, inner = next(iter(shape.items()))
    if key == "items":
        return _items(*_plan(inner, depth + 1))
    if key == "values":
        return _values(*_plan(inner, depth + 1))
    if not isinstance(inner, dict):
        return _fields_not_shapes(inner), False
    return _fields({name: _plan(s, depth + 1) for name, s in inner.items()})


def _object(v: Any) -> None:
    if not isinstance(v, dict):
        raise ExprError(f"`shape` says an object, got {kind_of(v)}")


def _items(each: _Canon, rewrites: bool) -> tuple[_Canon, bool]:
    def items(v: Any) -> Any:
        if not isinstance(v, list | tuple):
            raise ExprError(f"`shape` says a list, got {kind_of(v)}")
        out: list[Any] | None = [] if rewrites or isinstance(v, tuple) else None
        for i, x in enumerate(v):
            if not i % _EVERY:
                checkpoint()
            y = None if x is None else each(x)
            if out is not None:
                out.append(y)
        return v if out is None else out

    return items, rewrites


def _values(each: _Canon, rewrites: bool) -> tuple[_Canon, bool]:
    def values(v: Any) -> Any:
        _object(v)
        if rewrites:
            return {k: None if x is None else each(x) for k, x in v.items()}
        for x in v.values():
            if x is not None:
                each(x)
        return v

    return values, rewrites


def _fields_not_shapes(inner: Any) -> _Canon:
    def fields(v: Any) -> Any:
        _object(v)
        raise ExprError(f"`fields` must be an object of shapes, got {kind_of(inner)}")

    return fields


def _fields(plans: dict[str, tuple[_Canon, bool]]) -> tuple[_Canon, bool]:
    rewrites = any(r for _, r in plans.values())
    single = len(plans) <= 1  # one field read: the order it is read in cannot matter

    def fields(v: Any) -> Any:
        _object(v)
        out: dict[str, Any] | None = None
        named = plans.items() if single else ((k, plans.get(k)) for k in v)
        for name, plan in named:
            if plan is None or name not in v:
                continue
            x = v[name]
            if x is None:
                continue
            y = plan[0](x)
            if y is not x:
                if out is None:
                    out = dict(v)
                out[name] = y
        return v if out is None else out

    return fields, rewrites


def _shown_shape(x: Any) -> str:
    try:
        text = json.dumps(x, ensure_ascii=False)
    except (TypeError, ValueError):
        return kind_of(x)
    return text if len(text) <= 60 else text[:59] + "…"


#: name → implementation (arguments evaluated, kinds checked, omitted ones ``None``)
IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "join": _join,
    "split": _split,
    "lower": str.lower,
    "upper": str.upper,
    "trim": str.strip,
    "replace": _replace,
    "starts_with": lambda s, p: s.startswith(p),
    "ends_with": lambda s, p: s.endswith(p),
    "slice": _slice,
    "pad_start": _pad_start,
    "pad_end": _pad_end,
    "format_number": _format_number,
    "lines": _lines,
    "match": _match,
    "matches": _matches,
    "find_all": _find_all,
    "len": _len,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "sort": _sort,
    "sort_by": _sort_by,
    "unique": _unique,
    "overlap": _overlap,
    "flatten": _flatten,
    "take": _take,
    "drop": _drop,
    "reverse": lambda xs: list(reversed(xs)),
    "zip": _zip,
    "range": _range,
    "any": lambda xs: any(_bools(xs)),
    "all": lambda xs: all(_bools(xs)),
    "index_of": _index_of,
    "group_by": _group_by,
    "count_by": _count_by,
    "keys": lambda m: list(m),
    "values": lambda m: list(m.values()),
    "entries": lambda m: [{"key": k, "value": v} for k, v in m.items()],
    "merge": lambda a, b: {**a, **b},
    "pick": lambda m, keys: {k: m[k] for k in dict.fromkeys(_texts(keys)) if k in m},
    "omit": lambda m, keys: {k: v for k, v in m.items() if k not in set(_texts(keys))},
    "round": _round,
    "floor": _floor,
    "ceil": _ceil,
    "abs": _abs,
    "clamp": _clamp,
    "to_text": _render,
    "parse_int": _parse_int,
    "parse_number": _parse_number,
    "parse_json": _parse_json,
    "seconds": _seconds,
    "from_seconds": _from_seconds,
    "canonical": _canonical,
}

assert IMPLEMENTATIONS.keys() == FUNCTIONS.keys(), "every library function has one implementation"
