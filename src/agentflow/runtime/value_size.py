"""How large a value is as JSON writes it, measured at the cost of its distinct arrays and
objects, and a value cut to its shape for the events that carry it (docs/reference/expressions.md
"Limits", "Evaluation ends when the run must").

A value an expression builds may hold one list many times (``{ [s, s] }`` in a ``loop``: two
pointers a round, 2^rounds values as JSON); :func:`json_size` counts such a value by its distinct
arrays and objects, so the limits are checked in a moment, and :func:`preview` keeps what an
event shows of a value too large to write out each round.
"""

from __future__ import annotations

from typing import Any

from agentflow.runtime.extract import MAX_JSON_DEPTH
from agentflow.runtime.interrupt import checkpoint

__all__ = [
    "EVENT_TEXT_CHARS",
    "EVENT_VALUE_NODES",
    "MAX_VALUE_NODES",
    "TOO_DEEP",
    "TOO_MANY",
    "json_size",
    "preview",
]

#: Most values (arrays, objects and everything in them, counted as JSON writes them out) a
#: step's value built by an expression may hold: ``[s, s]`` in a loop shares one list twice per
#: round, small in memory but 2^rounds values in JSON, events and traces.
MAX_VALUE_NODES = 10_000_000

#: What :func:`json_size` returns for a value nested too deeply / holding too many values.
TOO_DEEP = -1
TOO_MANY = -2
#: The kinds of values :func:`json_size` looks inside (a value is plain JSON: no subclasses).
_NESTED = frozenset({list, tuple, dict})


def json_size(
    value: Any, limit: int = MAX_VALUE_NODES, *, watched: bool = True, chars: int | None = None
) -> int:
    """How many values ``value`` holds as JSON writes it (the items of every array and object
    in it, a list held twice counted twice; 0 for a scalar), or ``-2`` once that passes
    ``limit``, ``-1`` when it nests more than :data:`MAX_JSON_DEPTH` levels.

    Each distinct array or object is counted once and its count reused wherever it is held
    again, so the cost is the number of distinct arrays and objects, not the JSON size: ``[s,
    s]`` after 22 rounds of a ``loop`` is 4 million values as JSON but 23 lists (the walk
    that expanded it took 2 s a round). Iterative (any depth); a long walk checks the run's
    deadline and stop (:func:`~agentflow.runtime.interrupt.checkpoint`) unless ``watched`` is
    False (an event's measure, after its step ended: it raises nothing). ``chars``: also
    ``-2`` once the texts in it (each held counted each time) pass that many characters. Every value an
    expression is given nests at most a few hundred levels (the input's 100, plus an
    expression's own), so the walk's stack stays small."""
    if type(value) not in _NESTED:
        return 0
    # post-order: a container's (size, height) once all its containers have theirs; an entry
    # of the stack is (container, None) to enter, (container, its containers) to count
    known: dict[int, tuple[int, int, int]] = {}
    stack: list[tuple[Any, list[Any] | None]] = [(value, None)]
    walked = 0
    while stack:
        item, kids = stack.pop()
        if kids is None:
            if id(item) in known:
                continue
            if len(item) > limit:
                return TOO_MANY  # its own items are too many already
            children = item.values() if type(item) is dict else item
            kids = [c for c in children if type(c) in _NESTED]
            stack.append((item, kids))
            stack.extend((c, None) for c in kids if id(c) not in known)
            continue
        walked += 1
        if not walked & 4095 and watched:
            checkpoint(4096)
        size, height, text = len(item), 0, 0
        if chars is not None:
            children = item.values() if type(item) is dict else item
            text = sum(len(c) for c in children if type(c) is str)
        for c in kids:
            n, h, t = known[id(c)]
            size += n
            text += t
            if h > height:
                height = h
        height += 1
        if height > MAX_JSON_DEPTH:
            return TOO_DEEP
        if size > limit or (chars is not None and text > chars):
            return TOO_MANY
        known[id(item)] = (size, height, text)
    return known[id(value)][0]


#: Most values (as :func:`json_size` counts them) of a control step's input or result an event
#: carries whole; a larger one — or a text longer than :data:`EVENT_TEXT_CHARS` — is carried as
#: a preview (:func:`event_value`). A ``loop`` whose state is large would otherwise write it
#: into the trace twice a round.
EVENT_VALUE_NODES = 100_000
EVENT_TEXT_CHARS = 100_000
#: A preview's arrays keep their first items, its objects their first fields, its texts their
#: first characters, down to a few levels.
_PREVIEW_ITEMS = 10
_PREVIEW_CHARS = 200
_PREVIEW_DEPTH = 4


def preview(value: Any, depth: int = 0) -> Any:
    """``value`` cut to its shape: arrays to their first :data:`_PREVIEW_ITEMS` items, objects
    to their first fields, texts to their first :data:`_PREVIEW_CHARS` characters (``…`` marks
    a cut text), :data:`_PREVIEW_DEPTH` levels deep (an array or object below them is empty)."""
    if isinstance(value, str):
        return value if len(value) <= _PREVIEW_CHARS else value[:_PREVIEW_CHARS] + "…"
    if isinstance(value, dict):
        if depth >= _PREVIEW_DEPTH:
            return {}
        return {
            k: preview(v, depth + 1)
            for k, v in (value.items() if len(value) <= _PREVIEW_ITEMS else _first(value))
        }
    if isinstance(value, list | tuple | range):
        if depth >= _PREVIEW_DEPTH:
            return []
        return [preview(v, depth + 1) for v in value[:_PREVIEW_ITEMS]]
    return value


def _first(d: dict[str, Any]) -> list[tuple[str, Any]]:
    it = iter(d.items())
    return [next(it) for _ in range(_PREVIEW_ITEMS)]
