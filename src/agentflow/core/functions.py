"""The standard library of pure functions, defined once (docs/reference/functions.md).

Each :class:`FunctionSpec` holds a function's name, its signature in `.flow` type syntax (with
type parameters, ``<T>`` or bounded ``<T: number | text>``; ``name?: T`` marks a parameter that
may be left out), a one-line summary, an example (a `.flow` expression) with its value, and the
run-time error codes it may fail with (``core.vocabulary.ERROR_CODES``).  The checker types calls
from the signature (``compiler/check_functions.py``), the evaluator runs the implementation of the
same name (``runtime/functions.py``), the plan loader checks names and argument counts
(``ir/templates.py``), the language server completes and hovers them, and the reference page is
generated from this table.

A call of a library function is written positionally, ``join(xs, ", ")``; a tool call names its
arguments, ``read_file(path: p)`` — the form of the call tells them apart (docs/decisions.md
"Standard library").  Plain data, no imports beyond the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.diagnostics import did_you_mean, suggested

__all__ = [
    "CATEGORIES",
    "KIND_WORDS",
    "PARAM_KINDS",
    "function_hint",
    "FOREIGN_FUNCTION_NAMES",
    "FUNCTIONS",
    "FunctionSpec",
    "Param",
    "arity",
]


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter: its name, its type as written, and whether it may be left out."""

    name: str
    type: str
    omittable: bool = False


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One library function (see the module docstring)."""

    signature: str
    summary: str
    example: str
    result: Any
    category: str
    errors: tuple[str, ...] = ()
    name: str = field(init=False)
    type_params: dict[str, str | None] = field(init=False)
    params: tuple[Param, ...] = field(init=False)
    returns: str = field(init=False)

    def __post_init__(self) -> None:
        name, tps, params, returns = _parse_signature(self.signature)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_params", tps)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "returns", returns)

    @property
    def min_args(self) -> int:
        """How many arguments a call must give."""
        return sum(1 for p in self.params if not p.omittable)

    @property
    def max_args(self) -> int:
        """How many arguments a call may give."""
        return len(self.params)


_SIG = re.compile(r"^(\w+)(?:<(.*?)>)?\((.*)\) -> (.+)$")


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<[({":
            depth += 1
        elif ch in ">])}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _parse_signature(sig: str) -> tuple[str, dict[str, str | None], tuple[Param, ...], str]:
    m = _SIG.match(sig)
    if m is None:  # pragma: no cover - the table below is fixed
        raise ValueError(f"bad signature {sig!r}")
    name, tps_text, params_text, returns = m.groups()
    tps: dict[str, str | None] = {}
    for tp in _split_top(tps_text or ""):
        tname, _, bound = tp.partition(":")
        tps[tname.strip()] = bound.strip() or None
    params = []
    for p in _split_top(params_text):
        pname, _, ptype = p.partition(":")
        pname = pname.strip()
        params.append(Param(pname.rstrip("?"), ptype.strip(), pname.endswith("?")))
    return name, tps, tuple(params), returns.strip()


def _f(
    signature: str,
    summary: str,
    example: str,
    result: Any,
    category: str,
    *errors: str,
) -> FunctionSpec:
    return FunctionSpec(signature, summary, example, result, category, tuple(errors))


#: The categories, in the order the reference shows them.
CATEGORIES: tuple[str, ...] = ("text", "lists", "objects and maps", "numbers", "conversions")

_T, _L, _O, _N, _C = CATEGORIES

_SPECS: tuple[FunctionSpec, ...] = (
    # -- text ---------------------------------------------------------------------------------
    _f(
        "join<T>(xs: T[], sep: text) -> text",
        "the elements, each rendered as `${…}` renders it, with `sep` between them (a text of "
        "at most 10,000,000 characters)",
        'join(["a", "b", "c"], ", ")',
        "a, b, c",
        _T,
    ),
    _f(
        "split(s: text, sep: text) -> text[]",
        "the parts of `s` between the occurrences of `sep` (an empty `sep` gives the characters)",
        'split("a,b,,c", ",")',
        ["a", "b", "", "c"],
        _T,
    ),
    _f("lower(s: text) -> text", "`s` in lower case", 'lower("Hello")', "hello", _T),
    _f("upper(s: text) -> text", "`s` in upper case", 'upper("Hello")', "HELLO", _T),
    _f(
        "trim(s: text) -> text",
        "`s` without the white space at both ends",
        'trim("  hi \\n")',
        "hi",
        _T,
    ),
    _f(
        "replace(s: text, old: text, new: text) -> text",
        "`s` with every occurrence of `old` replaced by `new` (plain text, not a pattern; a "
        "result of at most 10,000,000 characters)",
        'replace("a-b-c", "-", "+")',
        "a+b+c",
        _T,
        "invalid_argument",
    ),
    _f(
        "starts_with(s: text, prefix: text) -> bool",
        "whether `s` begins with `prefix`",
        'starts_with("feature/x", "feature/")',
        True,
        _T,
    ),
    _f(
        "ends_with(s: text, suffix: text) -> bool",
        "whether `s` ends with `suffix`",
        'ends_with("notes.md", ".md")',
        True,
        _T,
    ),
    _f(
        "slice<T: text | json[]>(x: T, start: int, end?: int) -> T",
        "the characters (of a text) or elements (of a list) from `start` up to, not including, "
        "`end`; a negative index counts from the end; out-of-range indexes are clamped",
        'slice("abcdef", 1, 4)',
        "bcd",
        _T,
    ),
    _f(
        "pad_start(s: text, width: int, fill?: text) -> text",
        "`s` with `fill` (one character, default a space) added before it up to `width` "
        "characters (`width` at most 100,000)",
        'pad_start("7", 3, "0")',
        "007",
        _T,
        "invalid_argument",
    ),
    _f(
        "pad_end(s: text, width: int, fill?: text) -> text",
        "`s` with `fill` (one character, default a space) added after it up to `width` "
        "characters (`width` at most 100,000)",
        'pad_end("ab", 4, ".")',
        "ab..",
        _T,
        "invalid_argument",
    ),
    _f(
        "format_number(x: number, decimals: int) -> text",
        "`x` with exactly `decimals` digits after the point (0 to 20; halves round away from 0)",
        "format_number(3.14159, 2)",
        "3.14",
        _T,
        "invalid_argument",
    ),
    _f(
        "lines(s: text) -> text[]",
        "the lines of `s` (split at `\\n`, `\\r\\n` or `\\r`; a final line break adds no line)",
        'lines("one\\ntwo\\n")',
        ["one", "two"],
        _T,
    ),
    _f(
        "match(s: text, pattern: text) -> text[]?",
        "the first match of the regular expression `pattern` in `s`: the matched text, then each "
        'group (`""` for a group that took no part), or `null` when nothing matches',
        'match("release v2.13", "v(\\\\d+)\\\\.(\\\\d+)")',
        ["v2.13", "2", "13"],
        _T,
        "invalid_argument",
        "regex_timeout",
    ),
    _f(
        "matches(s: text, pattern: text) -> bool",
        "whether the regular expression `pattern` matches somewhere in `s`",
        'matches("ISSUE-42", "^[A-Z]+-\\\\d+$")',
        True,
        _T,
        "invalid_argument",
        "regex_timeout",
    ),
    _f(
        "find_all(s: text, pattern: text) -> text[]",
        "every non-overlapping match of the regular expression `pattern` in `s`, the whole "
        "matched text of each",
        'find_all("a1 b22 c333", "\\\\d+")',
        ["1", "22", "333"],
        _T,
        "invalid_argument",
        "regex_timeout",
    ),
    # -- lists --------------------------------------------------------------------------------
    _f(
        "len(x: text | json[] | map<json>) -> int",
        "the length of a list, a text or a map (as `x.count`)",
        'len(["a", "b"])',
        2,
        _L,
    ),
    _f(
        "sum<T: number>(xs: T[]) -> T",
        "the sum of the numbers (`0` for an empty list; `int` when they are `int`)",
        "sum([1, 2, 3])",
        6,
        _L,
        "arithmetic",
    ),
    _f(
        "min<T: number | text>(xs: T[]) -> T?",
        "the smallest element, `null` for an empty list",
        "min([3, 1, 2])",
        1,
        _L,
    ),
    _f(
        "max<T: number | text>(xs: T[]) -> T?",
        "the largest element, `null` for an empty list",
        'max(["pear", "apple"])',
        "pear",
        _L,
    ),
    _f(
        "sort<T: number | text>(xs: T[]) -> T[]",
        "the elements in ascending order (texts by code point)",
        "sort([3, 1, 2])",
        [1, 2, 3],
        _L,
    ),
    _f(
        "sort_by<T>(xs: T[], field: text) -> T[]",
        'the objects ordered by the number or text in `field` (`"-field"`: descending); the '
        "order of equal ones is kept, `null` sorts first",
        'sort_by([{ n: "b", s: 2 }, { n: "a", s: 1 }], "s")',
        [{"n": "a", "s": 1}, {"n": "b", "s": 2}],
        _L,
        "bad_path",
    ),
    _f(
        "unique<T>(xs: T[], keys?: json[]) -> T[]",
        "the elements without repeats, first occurrences in order; with `keys` (one per "
        "element), elements are the same when their keys are: `unique(ds, seconds(ds))` keeps "
        "the first of each length (the compiler writes a `duration[]`'s `unique` so)",
        "unique([1, 2, 1, 3, 2])",
        [1, 2, 3],
        _L,
        "invalid_argument",
    ),
    _f(
        "overlap<T>(a: T[], b: T[]) -> number",
        "how much two lists share, as sets: the elements in both over the elements in either "
        "(Jaccard; 1 when both are empty) — a scorer's set overlap",
        'overlap(["a", "b", "c"], ["b", "c", "d", "e"])',
        0.4,
        _L,
    ),
    _f(
        "flatten<T>(xs: T[][]) -> T[]",
        "the elements of the inner lists, in order (one level; at most 1,000,000 of them)",
        "flatten([[1, 2], [], [3]])",
        [1, 2, 3],
        _L,
    ),
    _f(
        "take<T>(xs: T[], n: int) -> T[]",
        "the first `n` elements (all when there are fewer)",
        "take([1, 2, 3], 2)",
        [1, 2],
        _L,
        "invalid_argument",
    ),
    _f(
        "drop<T>(xs: T[], n: int) -> T[]",
        "the elements after the first `n`",
        "drop([1, 2, 3], 2)",
        [3],
        _L,
        "invalid_argument",
    ),
    _f(
        "reverse<T>(xs: T[]) -> T[]",
        "the elements in reverse order",
        "reverse([1, 2, 3])",
        [3, 2, 1],
        _L,
    ),
    _f(
        "zip<T, U>(a: T[], b: U[]) -> { first: T, second: U }[]",
        "the pairs of elements at the same index (as long as the shorter list)",
        'zip([1, 2], ["a", "b"])',
        [{"first": 1, "second": "a"}, {"first": 2, "second": "b"}],
        _L,
    ),
    _f(
        "range(a: int, b?: int) -> int[]",
        "`range(n)`: 0 up to, not including, `n`; `range(a, b)`: `a` up to, not including, `b` "
        "(at most 100,000 numbers)",
        "range(2, 5)",
        [2, 3, 4],
        _L,
        "invalid_argument",
    ),
    _f(
        "any(xs: bool[]) -> bool",
        "whether some element is `true` (`false` for an empty list)",
        "any([false, true])",
        True,
        _L,
    ),
    _f(
        "all(xs: bool[]) -> bool",
        "whether every element is `true` (`true` for an empty list)",
        "all([true, false])",
        False,
        _L,
    ),
    _f(
        "index_of<T>(xs: T[], x: T) -> int",
        "the index of the first element equal to `x`, `-1` when there is none",
        'index_of(["a", "b"], "b")',
        1,
        _L,
    ),
    _f(
        "group_by<T>(xs: T[], field: text) -> map<T[]>",
        "the objects grouped by the value of `field` (rendered as text, as `${…}` does), groups "
        "and their members in first-seen order. Values equal by `==` share one group (`1` and "
        "`1.0`, `0` and `-0.0`), keyed as the first of them renders",
        'group_by([{ k: "x", v: 1 }, { k: "y", v: 2 }, { k: "x", v: 3 }], "k")',
        {"x": [{"k": "x", "v": 1}, {"k": "x", "v": 3}], "y": [{"k": "y", "v": 2}]},
        _L,
        "bad_path",
    ),
    _f(
        "count_by<T>(xs: T[], field?: text) -> map<int>",
        "how many elements have each value of `field` (without `field`: each value of the "
        "element), keys rendered as text, in first-seen order. Values equal by `==` are "
        'counted under one key (`count_by([1, 1.0])` gives `{"1": 2}`), spelled as the first of '
        "them renders",
        'count_by(["bug", "docs", "bug"])',
        {"bug": 2, "docs": 1},
        _L,
        "bad_path",
    ),
    # -- objects and maps ---------------------------------------------------------------------
    _f(
        "keys(m: map<json>) -> text[]",
        "the keys of a map or the fields of an object, in order",
        "keys({ a: 1, b: 2 })",
        ["a", "b"],
        _O,
    ),
    _f(
        "values<T>(m: map<T>) -> T[]",
        "the values of a map or object, in the order of its keys",
        "values({ a: 1, b: 2 })",
        [1, 2],
        _O,
    ),
    _f(
        "entries<T>(m: map<T>) -> { key: text, value: T }[]",
        "the key and value of each entry, in order",
        "entries({ a: 1 })",
        [{"key": "a", "value": 1}],
        _O,
    ),
    _f(
        "merge<T>(a: map<T>, b: map<T>) -> map<T>",
        "the entries of both; a key of `b` replaces the same key of `a`",
        "merge({ a: 1, b: 2 }, { b: 3 })",
        {"a": 1, "b": 3},
        _O,
    ),
    _f(
        "pick<T>(m: map<T>, keys: text[]) -> map<T>",
        "only the given keys (those present)",
        'pick({ a: 1, b: 2, c: 3 }, ["a", "c"])',
        {"a": 1, "c": 3},
        _O,
    ),
    _f(
        "omit<T>(m: map<T>, keys: text[]) -> map<T>",
        "every key but the given ones",
        'omit({ a: 1, b: 2, c: 3 }, ["b"])',
        {"a": 1, "c": 3},
        _O,
    ),
    # -- numbers ------------------------------------------------------------------------------
    _f(
        "round(x: number, digits?: int) -> number",
        "`x` rounded to `digits` decimals (-20 to 20; halves away from 0); without `digits` an "
        "`int`",
        "round(2.675, 2)",
        2.68,
        _N,
        "invalid_argument",
        "arithmetic",
    ),
    _f("floor(x: number) -> int", "the largest integer ≤ `x`", "floor(2.7)", 2, _N, "arithmetic"),
    _f("ceil(x: number) -> int", "the smallest integer ≥ `x`", "ceil(2.1)", 3, _N, "arithmetic"),
    _f("abs<T: number>(x: T) -> T", "`x` without its sign", "abs(-4)", 4, _N, "arithmetic"),
    _f(
        "clamp<T: number>(x: T, lo: T, hi: T) -> T",
        "`x` limited to `lo`…`hi` (`lo` must not be above `hi`)",
        "clamp(12, 0, 10)",
        10,
        _N,
        "invalid_argument",
    ),
    # -- conversions --------------------------------------------------------------------------
    _f(
        "to_text(x: json) -> text",
        "`x` as `${x}` renders it: text as is, anything else as compact JSON",
        "to_text([1, 2])",
        "[1,2]",
        _C,
    ),
    _f(
        "parse_int(s: text) -> int",
        "the integer written in `s` (an optional sign and digits, blanks around allowed)",
        'parse_int(" 42 ")',
        42,
        _C,
        "parse_error",
    ),
    _f(
        "parse_number(s: text) -> number",
        "the number written in `s` (JSON number syntax, blanks around allowed)",
        'parse_number("2.5")',
        2.5,
        _C,
        "parse_error",
    ),
    _f(
        "parse_json(s: text) -> json",
        "the JSON value written in `s` (nested at most 200 deep; an object that gives a key "
        "twice fails with `parse_error` naming the key: which value was meant is not known)",
        'parse_json("{\\"ok\\": true}")',
        {"ok": True},
        _C,
        "parse_error",
    ),
    _f(
        "seconds<T: duration | duration[]>(d: T) -> number | number[]",
        "the length of a duration in seconds (`1500ms` is `1.5`); of a list of durations, the "
        "list of their lengths. Durations compare by length (`90s == 1m30s`): this is the "
        "number behind it. A duration is at most 876000h (100 years): longer is refused",
        "seconds(1m30s)",
        90,
        _C,
        "invalid_argument",
    ),
    _f(
        "canonical<T>(value: T, shape?: json) -> T",
        "`value` with each duration where `shape` says (default: `value` is one) written in "
        'its largest units, as `from_seconds` writes it: `"duration"`, `{items: S}` (a list), '
        "`{fields: {name: S}}` (an object) or `{values: S}` (a map). Two durations are equal "
        "exactly when their canonical texts are; the compiler writes it where a comparison of "
        "lists, objects or maps holds durations",
        'canonical([{ t: 90s }], { items: { fields: { t: "duration" } } })',
        [{"t": "1m30s"}],
        _C,
        "invalid_argument",
    ),
    _f(
        "from_seconds(n: number) -> duration",
        "the duration of `n` seconds, to the millisecond, written in its largest units "
        "(`from_seconds(90)` is `1m30s`); `n` must not be negative nor longer than 876000h "
        "(100 years)",
        "from_seconds(2 * 45)",
        "1m30s",
        _C,
        "invalid_argument",
    ),
)

#: Every library function by name, in the order of the reference.
FUNCTIONS: dict[str, FunctionSpec] = {s.name: s for s in _SPECS}


def arity(spec: FunctionSpec) -> str:
    """How many arguments ``spec`` takes, as a message says it (``2``, ``1 or 2``)."""
    lo, hi = spec.min_args, spec.max_args
    if lo == hi:
        return f"{lo} argument" + ("s" if lo != 1 else "")
    return f"{lo} to {hi} arguments" if hi - lo > 1 else f"{lo} or {hi} arguments"


#: Names users bring from other languages (Python, JavaScript, Java, C#, SQL, Jinja), each mapped
#: to the library function that does it (the "did you mean" of an unknown function or method).
FOREIGN_FUNCTION_NAMES: dict[str, str] = {
    "length": "len",
    "size": "len",
    "count": "len",
    "strlen": "len",
    "toLowerCase": "lower",
    "toUpperCase": "upper",
    "lowercase": "lower",
    "uppercase": "upper",
    "casefold": "lower",
    "toLower": "lower",
    "toUpper": "upper",
    "ToLower": "lower",
    "ToUpper": "upper",
    "strip": "trim",
    "Trim": "trim",
    "lstrip": "trim",
    "rstrip": "trim",
    "trimStart": "trim",
    "trimEnd": "trim",
    "startsWith": "starts_with",
    "startswith": "starts_with",
    "StartsWith": "starts_with",
    "endsWith": "ends_with",
    "endswith": "ends_with",
    "EndsWith": "ends_with",
    "substring": "slice",
    "substr": "slice",
    "Substring": "slice",
    "padStart": "pad_start",
    "padEnd": "pad_end",
    "ljust": "pad_end",
    "rjust": "pad_start",
    "zfill": "pad_start",
    "PadLeft": "pad_start",
    "PadRight": "pad_end",
    "toFixed": "format_number",
    "format": "format_number",
    "splitlines": "lines",
    "replaceAll": "replace",
    "Replace": "replace",
    "Split": "split",
    "Join": "join",
    "implode": "join",
    "explode": "split",
    "search": "match",
    "findall": "find_all",
    "findAll": "find_all",
    "matchAll": "find_all",
    "test": "matches",
    "fullmatch": "matches",
    "sorted": "sort",
    "sortBy": "sort_by",
    "orderBy": "sort_by",
    "order_by": "sort_by",
    "reversed": "reverse",
    "distinct": "unique",
    "uniq": "unique",
    "set": "unique",
    "flat": "flatten",
    "flatMap": "flatten",
    "concat": "flatten",
    "limit": "take",
    "skip": "drop",
    "tail": "drop",
    "indexOf": "index_of",
    "index": "index_of",
    "find": "index_of",
    "groupBy": "group_by",
    "groupby": "group_by",
    "countBy": "count_by",
    "Counter": "count_by",
    "some": "any",
    "every": "all",
    "items": "entries",
    "assign": "merge",
    "update": "merge",
    "str": "to_text",
    "toString": "to_text",
    "String": "to_text",
    "string": "to_text",
    "int": "parse_int",
    "parseInt": "parse_int",
    "Number": "parse_number",
    "float": "parse_number",
    "parseFloat": "parse_number",
    "loads": "parse_json",
    "parse": "parse_json",
    "fromJson": "parse_json",
    "from_json": "parse_json",
    "dumps": "to_text",
    "stringify": "to_text",
    "tojson": "to_text",
    "to_json": "to_text",
    "toJson": "to_text",
    "fabs": "abs",
    "trunc": "floor",
    "truncate": "floor",
    "min_by": "sort_by",
    "max_by": "sort_by",
    "total_seconds": "seconds",
    "toSeconds": "seconds",
    "as_secs": "seconds",
    "fromSeconds": "from_seconds",
    "from_secs": "from_seconds",
    "timedelta": "from_seconds",
}


def function_hint(name: str) -> str | None:
    """The library function meant by ``name``: the one a name of another language stands for
    (``toUpperCase`` → ``upper``, ``strip`` → ``trim``), else the nearest by spelling
    (``lenght`` → ``len``), else None."""
    target = FOREIGN_FUNCTION_NAMES.get(name)
    if target is None:
        near = did_you_mean(name, FOREIGN_FUNCTION_NAMES)
        if near is not None:
            target = FOREIGN_FUNCTION_NAMES[suggested(near)]
    if target is None:
        near = did_you_mean(name, FUNCTIONS)
        if near is not None:
            target = suggested(near)
    if target is None:
        folded = name.lower().replace("_", "")
        target = next((f for f in FUNCTIONS if f.replace("_", "") == folded), None)
    return target


def _kind(type_text: str, type_params: dict[str, str | None]) -> str:
    """The JSON kind a parameter of type ``type_text`` needs at run time: ``text``, ``int``,
    ``number``, ``bool``, ``list``, ``map``, ``text|list``, ``text|list|map`` or ``any``."""
    t = type_text.strip()
    if t in type_params:
        bound = type_params[t]
        return _kind(bound, {}) if bound else "any"
    if t == "text | json[]":
        return "text|list"
    if t == "text | json[] | map<json>":
        return "text|list|map"
    if "|" in t:
        return "any"  # checked by the function (the elements of min, max, sort)
    if t.endswith("[]"):
        return "list"
    if t.startswith("map<"):
        return "map"
    if t in ("text", "int", "number", "bool"):
        return t
    return "any"


#: The kind each parameter of each function needs (the evaluator checks arguments against it;
#: the plan loader checks literal arguments).
PARAM_KINDS: dict[str, tuple[str, ...]] = {
    name: tuple(_kind(p.type, spec.type_params) for p in spec.params)
    for name, spec in FUNCTIONS.items()
}
#: A kind as messages say it.
KIND_WORDS: dict[str, str] = {
    "int": "an integer",
    "number": "a number",
    "text": "a text",
    "bool": "a bool",
    "list": "a list",
    "map": "an object",
    "text|list": "a text or a list",
    "text|list|map": "a text, a list or an object",
}
