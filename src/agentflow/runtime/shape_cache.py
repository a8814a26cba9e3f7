"""The shape cache (docs/spec/RUNTIME.md §9; seed 002 "Learning across turns").

Every successful tool call feeds the cache with the *shape* of its result — a compact JSON-Schema
summary (types, object keys, array item shapes), never the data itself — merged per tool across
calls.  The planner reads it fresh at each planning attempt, so plans improve as tools are used,
even within one run.

Storage: one small SQLite file, ``shapes.sqlite``, in the user's cache directory
(:func:`cache_dir`: ``$AGENTFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentflow``, else
``~/.cache/agentflow``).  Each write is its own short transaction, so concurrent processes and a
planner reading mid-run always see a consistent table.  A cache that cannot be written never fails
a run (the problem is reported once on stderr).

Public API::

    shape_of(value) -> dict                       # JSON-Schema summary of one value
    merge_shapes(a, b) -> dict                    # union of two summaries
    cache_dir(env=None) -> Path
    ShapeCache(path=None)                         # .record(tool, value) / .get(tool) / .all() /
                                                  # .clear(tool=None) / .describe(names) -> str
    ShapeRecorder(cache)                          # event sink feeding the cache from tool_finished
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentflow.core.redaction import redact_data
from agentflow.core.text import visible

__all__ = [
    "CACHE_ENV",
    "ShapeCache",
    "ShapeEntry",
    "ShapeRecorder",
    "cache_dir",
    "merge_shapes",
    "shape_of",
]

#: Environment variable overriding the cache directory (tests point it at a temp dir).
CACHE_ENV = "AGENTFLOW_CACHE_DIR"
DB_NAME = "shapes.sqlite"

#: Limits that keep a summary compact (a shape never grows with the data).
MAX_DEPTH = 6
MAX_PROPERTIES = 40
MAX_ITEMS_SAMPLED = 25
MAX_VARIANTS = 4

_TYPE_ORDER = ("null", "boolean", "integer", "number", "string", "array", "object")


# ---------------------------------------------------------------------------------------------
# Shapes


def shape_of(value: Any, depth: int = 0) -> dict[str, Any]:
    """A compact JSON-Schema summary of ``value`` (no data: types, keys, item shapes).

    - scalars → ``{"type": "string"|"integer"|"number"|"boolean"|"null"}``;
    - lists → ``{"type": "array", "items": <merged shape of up to 25 items>}`` (no ``items`` when
      empty);
    - dicts → ``{"type": "object", "properties": {...}, "required": [keys present]}``, at most 40
      keys (``"x-more-properties": n`` counts the rest);
    - below depth 6 a container is summarized by its type alone.
    """
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list | tuple):
        out: dict[str, Any] = {"type": "array"}
        if depth >= MAX_DEPTH or not value:
            return out
        items: dict[str, Any] | None = None
        for item in list(value)[:MAX_ITEMS_SAMPLED]:
            s = shape_of(item, depth + 1)
            items = s if items is None else merge_shapes(items, s)
        out["items"] = items
        return out
    if isinstance(value, Mapping):
        out = {"type": "object"}
        if depth >= MAX_DEPTH:
            return out
        keys = [str(k) for k in value]
        props = {k: shape_of(value[k], depth + 1) for k in keys[:MAX_PROPERTIES]}
        out["properties"] = props
        if props:
            out["required"] = sorted(props)
        if len(keys) > MAX_PROPERTIES:
            out["x-more-properties"] = len(keys) - MAX_PROPERTIES
        return out
    to_list = getattr(value, "to_list", None)
    if callable(to_list):
        return shape_of(to_list(), depth)
    return {"type": "string"}  # anything else is shown to models as text


def _types(shape: Mapping[str, Any]) -> list[str]:
    t = shape.get("type")
    if isinstance(t, list):
        return list(t)
    return [t] if isinstance(t, str) else []


def _simple(shape: Mapping[str, Any]) -> bool:
    return set(shape) <= {"type"} and bool(_types(shape))


def merge_shapes(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The union of two shapes: same type → merged recursively (object keys united, ``required``
    intersected; array items merged); simple scalar types → a type list (``["string", "null"]``);
    otherwise ``anyOf`` (at most 4 variants, the rest dropped)."""
    if not a:
        return dict(b)
    if not b:
        return dict(a)
    if a == b:
        return dict(a)
    ta, tb = _types(a), _types(b)
    if ta == tb and len(ta) == 1 and "anyOf" not in a and "anyOf" not in b:
        t = ta[0]
        if t == "object":
            pa, pb = a.get("properties") or {}, b.get("properties") or {}
            props: dict[str, Any] = {}
            for k in list(pa) + [k for k in pb if k not in pa]:
                if k in pa and k in pb:
                    props[k] = merge_shapes(pa[k], pb[k])
                else:
                    props[k] = dict(pa[k] if k in pa else pb[k])
                if len(props) >= MAX_PROPERTIES:
                    break
            out: dict[str, Any] = {"type": "object"}
            if props or "properties" in a or "properties" in b:
                out["properties"] = props
            req = sorted(set(a.get("required") or []) & set(b.get("required") or []))
            if req:
                out["required"] = req
            more = max(int(a.get("x-more-properties", 0)), int(b.get("x-more-properties", 0)))
            if more:
                out["x-more-properties"] = more
            return out
        if t == "array":
            out = {"type": "array"}
            ia, ib = a.get("items"), b.get("items")
            if ia and ib:
                out["items"] = merge_shapes(ia, ib)
            elif one := ia or ib:
                out["items"] = dict(one)
            return out
        return {"type": t}
    # integer ⊂ number
    if {tuple(ta), tuple(tb)} == {("integer",), ("number",)} and _simple(a) and _simple(b):
        return {"type": "number"}
    if _simple(a) and _simple(b):
        types = sorted(set(ta) | set(tb), key=_order)
        return {"type": types[0] if len(types) == 1 else types}
    # a nullable structure: keep the structure, note the null
    for x, y in ((a, b), (b, a)):
        if _types(y) == ["null"] and _simple(y) and "anyOf" not in x:
            out = dict(x)
            out["type"] = sorted(set(_types(x)) | {"null"}, key=_order)
            return out
    variants = list(a.get("anyOf") or [a]) + list(b.get("anyOf") or [b])
    merged: list[dict[str, Any]] = []
    for v in variants:
        for i, m in enumerate(merged):
            if _types(m) == _types(v):
                merged[i] = merge_shapes(m, v)
                break
        else:
            merged.append(dict(v))
    if len(merged) == 1:
        return merged[0]
    return {"anyOf": merged[:MAX_VARIANTS]}


def _order(t: str) -> int:
    return _TYPE_ORDER.index(t) if t in _TYPE_ORDER else len(_TYPE_ORDER)


# ---------------------------------------------------------------------------------------------
# Storage


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's cache directory for agentflow: ``$AGENTFLOW_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/agentflow``, else ``~/.cache/agentflow`` (not created here).  An empty
    variable counts as unset (as XDG does; ``flowc cache`` says so)."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "agentflow"
    return Path.home() / ".cache" / "agentflow"


@dataclass
class ShapeEntry:
    """One tool's cached shape: ``calls`` successful calls observed, ``updated`` Unix time (s)."""

    tool: str
    shape: dict[str, Any]
    calls: int
    updated: float

    def to_dict(self) -> dict[str, Any]:
        """``{tool, shape, calls, updated}``."""
        return {
            "tool": self.tool,
            "shape": self.shape,
            "calls": self.calls,
            "updated": self.updated,
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS shapes (
    tool TEXT PRIMARY KEY,
    shape TEXT NOT NULL,
    calls INTEGER NOT NULL,
    updated REAL NOT NULL
)
"""


_COLUMNS = ("tool", "shape", "calls", "updated")


class ShapeCache:
    """Tool name → merged result shape, persisted in SQLite (``path``: the database file; default
    ``cache_dir()/shapes.sqlite``, created with its directory on first write).

    Reads of a missing database return nothing; every method is safe to call from threads.
    Raises nothing on storage problems in :meth:`record` (a warning is printed once); the other
    methods raise ``sqlite3.Error`` / ``OSError`` for the CLI to report.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else cache_dir() / DB_NAME
        self._lock = threading.Lock()
        self._warned = False

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """A connection to the database (None: absent and ``create`` false).

        Raises ``NotADirectoryError`` when a parent of the path is a regular file (e.g.
        ``$AGENTFLOW_CACHE_DIR`` names a file) and ``sqlite3.DatabaseError`` when the file holds
        a ``shapes`` table that is not ours (it is never modified then)."""
        ancestor = self.path.parent
        while not ancestor.exists() and ancestor.parent != ancestor:
            ancestor = ancestor.parent
        if ancestor.exists() and not ancestor.is_dir():
            raise NotADirectoryError(f"{ancestor} is not a directory (cache directory expected)")
        if not create and not self.path.exists():
            return None
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=5.0, isolation_level=None)
        try:
            conn.execute(_SCHEMA)
            columns = [row[1] for row in conn.execute("PRAGMA table_info(shapes)")]
        except BaseException:
            conn.close()
            raise
        if sorted(columns) != sorted(_COLUMNS):
            conn.close()
            raise sqlite3.DatabaseError(
                f"not an agentflow shape cache: its `shapes` table has columns "
                f"({', '.join(columns)}), expected ({', '.join(_COLUMNS)}); left untouched"
            )
        return conn

    def record(self, tool: str, value: Any) -> None:
        """Merge the shape of ``value`` (a successful result of ``tool``) into the cache."""
        try:
            self.record_shape(tool, shape_of(value))
        except (sqlite3.Error, OSError) as exc:
            if not self._warned:
                self._warned = True
                print(
                    f"agentflow: shape cache {self.path} not updated: {visible(str(exc))}",
                    file=sys.stderr,
                )

    def record_shape(self, tool: str, shape: dict[str, Any], calls: int = 1) -> None:
        """Merge an already computed ``shape`` (of ``calls`` calls) into the cache."""
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            try:
                conn.execute("BEGIN IMMEDIATE")
                row = conn.execute(
                    "SELECT shape, calls FROM shapes WHERE tool = ?", (tool,)
                ).fetchone()
                if row is not None:
                    try:
                        old = json.loads(row[0])
                    except ValueError:
                        old = {}
                    shape = merge_shapes(old, shape)
                    calls += int(row[1])
                conn.execute(
                    "INSERT OR REPLACE INTO shapes (tool, shape, calls, updated) VALUES (?,?,?,?)",
                    (tool, json.dumps(redact_data(shape), sort_keys=True), calls, time.time()),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                conn.close()

    def get(self, tool: str) -> ShapeEntry | None:
        """The entry of ``tool``, or None."""
        for entry in self.all([tool]):
            return entry
        return None

    def all(self, tools: Iterable[str] | None = None) -> list[ShapeEntry]:
        """Entries sorted by tool name (only ``tools`` when given), read fresh from the file."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return []
            try:
                rows = conn.execute(
                    "SELECT tool, shape, calls, updated FROM shapes ORDER BY tool"
                ).fetchall()
            finally:
                conn.close()
        wanted = set(tools) if tools is not None else None
        out = []
        for tool, shape, calls, updated in rows:
            if wanted is not None and tool not in wanted:
                continue
            try:
                data = json.loads(shape)
            except ValueError:
                continue
            out.append(ShapeEntry(tool, data, int(calls), float(updated)))
        return out

    def clear(self, tool: str | None = None) -> int:
        """Forget ``tool`` (or everything); returns the number of entries removed."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return 0
            try:
                if tool is None:
                    cur = conn.execute("DELETE FROM shapes")
                else:
                    cur = conn.execute("DELETE FROM shapes WHERE tool = ?", (tool,))
                return int(cur.rowcount or 0)
            finally:
                conn.close()

    def describe(self, tools: Iterable[str] | None = None) -> str:
        """The cache as prompt text: one ``tool → shape`` line per entry (empty when none)."""
        try:
            entries = self.all(tools)
        except (sqlite3.Error, OSError):
            return ""
        return "\n".join(
            f"- {e.tool} ({e.calls} call{'s' if e.calls != 1 else ''}): "
            + json.dumps(e.shape, sort_keys=True, separators=(",", ":"))
            for e in entries
        )


class ShapeRecorder:
    """An event sink (docs/spec/RUNTIME.md §8) that records the result shape of every successful
    tool call (``tool_finished`` with a result, not skipped by a gate) into ``cache``.

    Shapes are merged in memory and written in one transaction when the run finishes
    (``run_finished``) or the sink is closed, so a run with thousands of tool calls costs one
    SQLite commit, not one per call; a planner attempt (one ``run_plan``) still sees the shapes of
    the previous attempt.
    """

    kinds = frozenset({"tool_finished", "run_finished"})

    def __init__(self, cache: ShapeCache):
        self.cache = cache
        self._pending: dict[str, tuple[dict[str, Any], int]] = {}
        self._lock = threading.Lock()

    def handle(self, event: Any) -> None:
        kind = getattr(event, "kind", None)
        if kind == "run_finished":
            self.flush()
            return
        if kind != "tool_finished":
            return
        data = event.data
        if data.get("error") or data.get("skipped") or "result" not in data:
            return
        name = data.get("tool_name")
        if isinstance(name, str) and name:
            shape = shape_of(data.get("result"))
            with self._lock:
                old = self._pending.get(name)
                if old is None:
                    self._pending[name] = (shape, 1)
                else:
                    self._pending[name] = (merge_shapes(old[0], shape), old[1] + 1)

    def flush(self) -> None:
        """Write the pending shapes to the cache (one transaction per tool)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for tool, (shape, calls) in pending.items():
            try:
                self.cache.record_shape(tool, shape, calls)
            except (sqlite3.Error, OSError) as exc:
                if not self.cache._warned:
                    self.cache._warned = True
                    print(
                        f"agentflow: shape cache {self.cache.path} not updated: "
                        f"{visible(str(exc))}",
                        file=sys.stderr,
                    )

    def close(self) -> None:
        self.flush()
