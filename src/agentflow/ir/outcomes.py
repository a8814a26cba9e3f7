"""A ``map``'s failure tolerance (docs/spec/PLAN_IR.md §5, ``on_item_error``): how many failed items
``fail``, ``skip``, ``{ tolerate: N }`` and ``{ tolerate: "P%" }`` allow, shared by the loader's
checks and the runtime."""

from __future__ import annotations

from typing import Any

__all__ = ["parse_percent", "tolerance"]


def tolerance(mode: Any, n: int) -> int | None:
    """How many of ``n`` items may fail under ``on_item_error`` ``mode`` (docs/spec/PLAN_IR.md §5):
    0 for ``fail``, ``n`` for ``skip``, the count of ``{tolerate: N}``, or ``floor(n * P / 100)``
    for ``{tolerate: "P%"}``; None when ``mode`` is none of these."""
    if mode == "fail":
        return 0
    if mode == "skip":
        return n
    if not isinstance(mode, dict) or set(mode) != {"tolerate"}:
        return None
    t = mode["tolerate"]
    if isinstance(t, int) and not isinstance(t, bool):
        return t if t >= 0 else None
    pct = parse_percent(t)
    if pct is None:
        return None
    return int(n * pct // 100)


def parse_percent(value: Any) -> float | None:
    """The number of a percentage written ``"20%"`` (0 to 100), or None."""
    if not isinstance(value, str) or not value.endswith("%"):
        return None
    try:
        pct = float(value[:-1].strip())
    except ValueError:
        return None
    return pct if 0 <= pct <= 100 else None
