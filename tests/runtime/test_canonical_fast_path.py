"""``canonical(value, shape)`` reads its shape once per call into a plan, gives back unchanged
the parts with nothing to rewrite (no duration where the shape says, or only ``null`` and
canonical texts there) and parses each distinct duration text once (docs/decisions.md
"canonical reads its shape once"). These tests pin that the fast path is the old walk in every
result and every error: the walk below is the implementation it replaced, kept as the model."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.core.vocabulary import MAX_EXPR_DEPTH, duration_text
from agentflow.errors import ExprError, RunError
from agentflow.runtime.functions import IMPLEMENTATIONS, _length_ms, kind_of

canonical = IMPLEMENTATIONS["canonical"]


def _shown(x: Any) -> str:
    try:
        text = json.dumps(x, ensure_ascii=False)
    except (TypeError, ValueError):
        return kind_of(x)
    return text if len(text) <= 60 else text[:59] + "…"


def _walk(v: Any, shape: Any, depth: int = 0) -> Any:
    """The walk ``canonical`` did before its fast path: every element, every call."""
    if v is None:
        return None
    if depth > MAX_EXPR_DEPTH:
        raise ExprError(f"`shape` nests more than {MAX_EXPR_DEPTH} levels")
    if shape == "duration":
        return duration_text(_length_ms(v, "value"))
    if not (isinstance(shape, dict) and len(shape) == 1 and next(iter(shape)) in _KEYS):
        raise ExprError(
            '`shape` must be "duration", {items: …}, {fields: {…}} or {values: …}, got '
            f"{_shown(shape)}"
        )
    key, inner = next(iter(shape.items()))
    if key == "items":
        if not isinstance(v, list | tuple):
            raise ExprError(f"`shape` says a list, got {kind_of(v)}")
        return [_walk(x, inner, depth + 1) for x in v]
    if not isinstance(v, dict):
        raise ExprError(f"`shape` says an object, got {kind_of(v)}")
    if key == "values":
        return {k: _walk(x, inner, depth + 1) for k, x in v.items()}
    if not isinstance(inner, dict):
        raise ExprError(f"`fields` must be an object of shapes, got {kind_of(inner)}")
    return {k: (_walk(x, inner[k], depth + 1) if k in inner else x) for k, x in v.items()}


_KEYS = ("items", "fields", "values")


def _outcome(f, *args) -> tuple[str, Any]:
    try:
        return "value", f(*args)
    except (ExprError, RunError) as e:
        return type(e).__name__, str(e)


def _same(value: Any, shape: Any) -> None:
    want = _outcome(_walk, value, "duration" if shape is None else shape)
    got = _outcome(canonical, value, shape)
    assert got == want, (value, shape)
    if got[0] == "value":  # the same JSON, key order included
        assert json.dumps(got[1]) == json.dumps(want[1])


names = st.sampled_from(["t", "u", "id"])
durations = st.sampled_from(["90s", "1m30s", "0ms", "1h", "60m", "1500ms", " 5m ", "2h0m"])
junk = st.sampled_from(["abc", "", 5, 1.5, True, "99999999999999999999h", "1x"])
shapes = st.recursive(
    st.one_of(st.just("duration"), st.sampled_from([5, "text", {"items": 1, "values": 2}, []])),
    lambda s: st.one_of(
        st.builds(lambda x: {"items": x}, s),
        st.builds(lambda x: {"values": x}, s),
        st.builds(lambda x: {"fields": x}, st.dictionaries(names, s, max_size=3)),
        st.just({"fields": "t"}),
    ),
    max_leaves=6,
)


@st.composite
def fitting(draw, shape: Any, depth: int = 0) -> Any:
    """A value the shape mostly fits (now and then `null`, or something else)."""
    roll = draw(st.integers(0, 9))
    if roll == 0:
        return None
    if roll == 1 or depth > 6:
        return draw(st.one_of(junk, durations, st.lists(durations, max_size=2)))
    if shape == "duration":
        return draw(durations)
    if isinstance(shape, dict) and list(shape) == ["items"]:
        return draw(st.lists(fitting(shape["items"], depth + 1), max_size=3))
    if isinstance(shape, dict) and list(shape) == ["values"]:
        return draw(st.dictionaries(names, fitting(shape["values"], depth + 1), max_size=3))
    if isinstance(shape, dict) and list(shape) == ["fields"] and isinstance(shape["fields"], dict):
        out = {name: draw(fitting(s, depth + 1)) for name, s in shape["fields"].items()}
        if draw(st.booleans()):
            out["other"] = draw(st.one_of(durations, junk))  # a field the shape leaves alone
        return out
    return draw(st.one_of(junk, st.dictionaries(names, durations, max_size=2)))


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(st.data())
def test_canonical_gives_what_the_walk_gave_values_and_errors(data):
    shape = data.draw(shapes)
    _same(data.draw(fitting(shape)), shape)


def test_the_default_shape_and_plain_durations():
    for value in ["90s", "1m30s", " 5m ", None, "abc", 5, ["90s"], "99999999999999999999h"]:
        _same(value, None)
        _same(value, "duration")


def test_a_shape_with_no_duration_checks_kinds_as_the_walk_did():
    objects = [{"id": f"i{i}", "t": None, "n": i} for i in range(5_000)]
    for shape in ({"items": {"fields": {}}}, {"items": {"fields": {"t": "duration"}}}):
        _same(objects, shape)
        assert canonical(objects, shape) == objects
    _same(["not an object"], {"items": {"fields": {}}})
    _same("text", {"items": {"fields": {}}})
    _same([None, {"t": None}], {"items": {"values": "duration"}})
    _same([], {"items": "no shape"})  # a bad shape no value reaches: no error, as before
    _same([{"t": "90s"}], {"items": {"fields": {"t": "bad"}}})


def test_fields_fail_in_the_values_order_as_the_walk_did():
    shape = {"fields": {"b": "duration", "a": "duration"}}
    _same({"a": "abc", "b": "xyz"}, shape)
    _same({"b": "xyz", "a": "abc"}, shape)


def test_a_shape_nested_past_the_limit_fails_only_where_a_value_reaches_it():
    deep: Any = "duration"
    for _ in range(MAX_EXPR_DEPTH + 2):
        deep = {"items": deep}
    _same([], deep)
    value: Any = "90s"
    for _ in range(MAX_EXPR_DEPTH + 2):
        value = [value]
    _same(value, deep)


def test_durations_are_rewritten_in_place_of_their_texts_only():
    xs = [{"id": "a", "t": "90s", "n": 1}, {"id": "b", "t": "1m30s"}, {"t": None}]
    out = canonical(xs, {"items": {"fields": {"t": "duration"}}})
    assert out == [{"id": "a", "t": "1m30s", "n": 1}, {"id": "b", "t": "1m30s"}, {"t": None}]
    assert list(out[0]) == ["id", "t", "n"] and xs[0]["t"] == "90s"  # the input is unchanged
