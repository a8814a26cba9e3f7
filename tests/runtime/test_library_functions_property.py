"""Property test: each library function, run by the evaluator on generated arguments, equals a
Python model of it written here from docs/reference/functions.md (not from runtime/functions.py).
A model that raises ``Fails(code)`` says the call must fail with that registered code."""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.core.functions import FUNCTIONS
from agentflow.errors import RunError
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression
from agentflow.runtime.expressions import evaluate


class Fails(Exception):
    def __init__(self, code: str):
        self.code = code


texts = st.text(alphabet="ab ,-\nXY1", max_size=12)
ints = st.integers(-30, 30)
nums = st.one_of(ints, st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False))
int_lists = st.lists(ints, max_size=8)
text_lists = st.lists(texts, max_size=6)
keys = st.sampled_from(["a", "b", "c"])
records = st.lists(st.fixed_dictionaries({"k": keys, "s": ints}), max_size=6)
maps = st.dictionaries(keys, ints, max_size=3)
scalars = st.one_of(ints, texts, st.booleans(), st.none())


def render(v):
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def jeq_index(xs, x):
    for i, y in enumerate(xs):
        if type(y) is type(x) and y == x:
            return i
    return -1


def dec(x):
    return Decimal(x) if isinstance(x, int) else Decimal(repr(x))


def m_round(x, d=None):
    if d is None:
        return x if isinstance(x, int) else int(dec(x).quantize(Decimal(1), ROUND_HALF_UP))
    if isinstance(x, int):
        return x if d >= 0 else int(dec(x).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP))
    return float(dec(x).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP))


def m_format(x, d):
    q = dec(x).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP)
    t = format(q, "f")
    return t[1:] if q == 0 and t.startswith("-") else t  # no "-0"


def m_take(xs, n):
    if n < 0:
        raise Fails("invalid_argument")
    return xs[:n]


def m_drop(xs, n):
    if n < 0:
        raise Fails("invalid_argument")
    return xs[n:]


def m_pad(s, w, fill, start):
    if len(fill) != 1:
        raise Fails("invalid_argument")
    pad = fill * max(0, w - len(s))
    return pad + s if start else s + pad


def m_parse_int(s):
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", s):
        raise Fails("parse_error")
    return int(s)


def m_parse_json(s):
    try:
        return json.loads(s)
    except ValueError:
        raise Fails("parse_error") from None


def m_sort_by(xs, f):
    desc = f.startswith("-")
    return sorted(xs, key=lambda r: r[f.lstrip("-")], reverse=desc)


def m_group_by(xs, f):
    out: dict = {}
    for x in xs:
        out.setdefault(render(x[f]), []).append(x)
    return out


def m_count_by(xs, f=None):
    out: dict = {}
    for x in xs:
        k = render(x if f is None else x[f])
        out[k] = out.get(k, 0) + 1
    return out


def m_clamp(x, lo, hi):
    if lo > hi:
        raise Fails("invalid_argument")
    return max(lo, min(hi, x))


def m_range(a, b=None):
    lo, hi = (0, a) if b is None else (a, b)
    return list(range(lo, hi))


def m_lines(s):
    if s.endswith("\n"):
        s = s[:-1]
    return re.split(r"\r\n|\r|\n", s)


def m_unique(xs):
    out = []
    for x in xs:
        if jeq_index(out, x) < 0:
            out.append(x)
    return out


def m_overlap(a, b):
    both, union = m_unique(a), m_unique(a + b)
    if not union:
        return 1.0
    return sum(1 for x in both if jeq_index(b, x) >= 0) / len(union)


#: name → (strategy of the argument tuple, model)
def m_parse_number(s):
    if not re.fullmatch(r"\s*-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*", s):
        raise Fails("parse_error")
    t = s.strip()
    return int(t) if re.fullmatch(r"-?[0-9]+", t) else float(t)


_UNIT_MS = {"h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
durations = st.lists(
    st.tuples(st.integers(0, 100), st.sampled_from(list(_UNIT_MS))), min_size=1, max_size=3
).map(lambda parts: "".join(f"{n}{u}" for n, u in parts))


def m_seconds(d):
    """a duration's length in seconds (`1500ms` is 1.5), of a list the list of lengths"""
    if isinstance(d, list):
        return [m_seconds(x) for x in d]
    ms = sum(int(n) * _UNIT_MS[u] for n, u in re.findall(r"([0-9]+)(ms|h|m|s)", d))
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def m_from_seconds(n):
    """`n` seconds to the millisecond, in its largest units; negative fails"""
    if n < 0:
        raise Fails("invalid_argument")
    ms = int((dec(n) * 1000).quantize(Decimal(1), ROUND_HALF_UP))
    out = ""
    for unit in ("h", "m", "s", "ms"):
        q, ms = divmod(ms, _UNIT_MS[unit])
        out += f"{q}{unit}" if q else ""
    return out or "0ms"


def m_canonical(value, shape=None):
    """each duration where `shape` says in its largest units (as `from_seconds` writes it)"""
    shape = shape or "duration"
    if value is None:
        return None
    if shape == "duration":
        return m_from_seconds(m_seconds(value))
    ((key, inner),) = shape.items()
    if key == "items":
        return [m_canonical(x, inner) for x in value]
    if key == "values":
        return {k: m_canonical(x, inner) for k, x in value.items()}
    return {k: m_canonical(x, inner[k]) if k in inner else x for k, x in value.items()}


#: a value and the shape of its durations
_canonical_args = st.one_of(
    st.tuples(durations, st.none()),
    st.tuples(
        st.lists(st.one_of(durations, st.none()), max_size=4), st.just({"items": "duration"})
    ),
    st.tuples(
        st.lists(st.fixed_dictionaries({"t": durations, "n": scalars}), max_size=3),
        st.just({"items": {"fields": {"t": "duration"}}}),
    ),
    st.tuples(
        st.dictionaries(st.sampled_from("abc"), durations, max_size=3),
        st.just({"values": "duration"}),
    ),
)


MODELS = {
    "join": (
        st.tuples(st.lists(scalars, max_size=5), texts),
        lambda xs, s: s.join(map(render, xs)),
    ),
    "split": (
        st.tuples(texts, st.sampled_from([",", " ", "ab", ""])),
        lambda s, p: s.split(p) if p else list(s),
    ),
    "lower": (st.tuples(texts), str.lower),
    "upper": (st.tuples(texts), str.upper),
    "trim": (st.tuples(texts), str.strip),
    "replace": (
        st.tuples(texts, st.sampled_from(["a", " ", "", "ab"]), texts),
        lambda s, o, n: s.replace(o, n) if o else (_ for _ in ()).throw(Fails("invalid_argument")),
    ),
    "starts_with": (st.tuples(texts, texts), str.startswith),
    "ends_with": (st.tuples(texts, texts), str.endswith),
    "slice": (
        st.tuples(st.one_of(texts, int_lists), ints, st.one_of(st.none(), ints)),
        lambda x, a, b=None: x[a:b],
    ),
    "pad_start": (
        st.tuples(texts, ints, st.sampled_from([" ", "0", "ab"])),
        lambda s, w, f: m_pad(s, w, f, True),
    ),
    "pad_end": (
        st.tuples(texts, ints, st.sampled_from([" ", "0", ""])),
        lambda s, w, f: m_pad(s, w, f, False),
    ),
    "format_number": (st.tuples(nums, st.integers(0, 6)), lambda x, d: m_format(x, d)),
    "lines": (st.tuples(texts), m_lines),
    "match": (
        st.tuples(texts, st.sampled_from(["a+", "(a)(X)?", "b,?"])),
        lambda s, p: (
            lambda m: None if m is None else [m.group(0), *(g or "" for g in m.groups())]
        )(re.search(p, s)),
    ),
    "matches": (
        st.tuples(texts, st.sampled_from(["^a", "b$", "[0-9]"])),
        lambda s, p: re.search(p, s) is not None,
    ),
    "find_all": (
        st.tuples(texts, st.sampled_from(["a+", "[ab]", "1"])),
        lambda s, p: [m.group(0) for m in re.finditer(p, s)],
    ),
    "len": (st.tuples(st.one_of(texts, int_lists, maps)), len),
    "sum": (
        st.tuples(st.lists(nums, max_size=6)),
        lambda xs: math.fsum(xs) if any(isinstance(x, float) for x in xs) else sum(xs),
    ),
    "min": (st.tuples(st.one_of(int_lists, text_lists)), lambda xs: min(xs) if xs else None),
    "max": (st.tuples(st.one_of(int_lists, text_lists)), lambda xs: max(xs) if xs else None),
    "sort": (st.tuples(st.one_of(int_lists, text_lists)), sorted),
    "sort_by": (st.tuples(records, st.sampled_from(["s", "-s", "k", "-k"])), m_sort_by),
    "unique": (st.tuples(st.lists(scalars, max_size=6)), m_unique),
    "overlap": (
        st.tuples(st.lists(scalars, max_size=5), st.lists(scalars, max_size=5)),
        m_overlap,
    ),
    "flatten": (
        st.tuples(st.lists(int_lists, max_size=4)),
        lambda xss: [x for xs in xss for x in xs],
    ),
    "take": (st.tuples(int_lists, st.integers(-2, 10)), m_take),
    "drop": (st.tuples(int_lists, st.integers(-2, 10)), m_drop),
    "reverse": (st.tuples(int_lists), lambda xs: xs[::-1]),
    "zip": (
        st.tuples(int_lists, text_lists),
        lambda a, b: [{"first": x, "second": y} for x, y in zip(a, b, strict=False)],
    ),
    "range": (st.tuples(ints, st.one_of(st.none(), ints)), m_range),
    "any": (st.tuples(st.lists(st.booleans(), max_size=5)), any),
    "all": (st.tuples(st.lists(st.booleans(), max_size=5)), all),
    "index_of": (st.tuples(st.lists(scalars, max_size=6), scalars), jeq_index),
    "group_by": (st.tuples(records, st.sampled_from(["k", "s"])), m_group_by),
    "count_by": (
        st.tuples(st.one_of(text_lists, records.map(lambda rs: [r["k"] for r in rs]))),
        m_count_by,
    ),
    "keys": (st.tuples(maps), list),
    "values": (st.tuples(maps), lambda m: list(m.values())),
    "entries": (st.tuples(maps), lambda m: [{"key": k, "value": v} for k, v in m.items()]),
    "merge": (st.tuples(maps, maps), lambda a, b: {**a, **b}),
    "pick": (
        st.tuples(maps, st.lists(keys, max_size=3)),
        lambda m, ks: {k: m[k] for k in dict.fromkeys(ks) if k in m},
    ),
    "omit": (
        st.tuples(maps, st.lists(keys, max_size=3)),
        lambda m, ks: {k: v for k, v in m.items() if k not in ks},
    ),
    "round": (st.tuples(nums, st.one_of(st.none(), st.integers(-3, 4))), m_round),
    "floor": (st.tuples(nums), math.floor),
    "ceil": (st.tuples(nums), math.ceil),
    "abs": (st.tuples(nums), abs),
    "clamp": (st.tuples(ints, ints, ints), m_clamp),
    "to_text": (st.tuples(st.one_of(scalars, int_lists, maps)), render),
    "parse_int": (
        st.tuples(st.one_of(ints.map(str), texts, ints.map(lambda i: f" {i:+d} "))),
        m_parse_int,
    ),
    "parse_number": (
        st.tuples(st.one_of(ints.map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr), texts)),
        m_parse_number,
    ),
    "parse_json": (
        st.tuples(
            st.one_of(
                texts,
                st.recursive(scalars, lambda c: st.lists(c, max_size=3), max_leaves=6).map(
                    json.dumps
                ),
            )
        ),
        m_parse_json,
    ),
    "seconds": (st.tuples(st.one_of(durations, st.lists(durations, max_size=4))), m_seconds),
    "from_seconds": (st.tuples(nums), m_from_seconds),
    "canonical": (_canonical_args, m_canonical),
}


def test_every_function_has_a_model():
    assert MODELS.keys() == FUNCTIONS.keys()


def _call(name: str, args: tuple):
    args = tuple(args)
    while args and args[-1] is None and FUNCTIONS[name].params[len(args) - 1].omittable:
        args = args[:-1]
    node = ast.FuncCall(
        parse_expression("x", "t").span,
        name,
        parse_expression("x", "t").span,
        [parse_expression(f"a{i}", "t") for i in range(len(args))],
    )
    scope = {f"a{i}": a for i, a in enumerate(args)}
    return node, scope, args


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_the_function_equals_its_model(name):
    strategy, model = MODELS[name]

    @settings(max_examples=25, deadline=None, database=None, derandomize=True)
    @given(strategy)
    def check(args):
        node, scope, given_args = _call(name, args)
        try:
            want = model(*given_args)
        except Fails as f:
            with pytest.raises(RunError) as info:
                evaluate(node, scope)
            assert info.value.code == f.code
            return
        got = evaluate(node, scope)
        assert _same(got, want), (name, given_args, got, want)

    check()
