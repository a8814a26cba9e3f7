"""Item-level incremental parsing for the language server.

Typing changes one top-level item at a time, and parsing — not type checking — dominates the
time of a check.  :class:`IncrementalParser` splits the text into top-level *chunks* (each
starts on a line whose first token is a top-level keyword — ``flow input output deadline use
extern type stage`` — at bracket depth 0, together with the comment lines just above it), parses
only the chunks whose text changed since the previous version, and re-bases the cached ASTs of
the others (every span shifted in place by the line and offset delta; chunks start at column 1,
so columns never change).

It answers exactly what :func:`agentflow.grammar.parser.parse_module` answers, or defers to it:
whenever the text does not tokenize, brackets do not balance, any chunk has a syntax error, or a
``flow`` header is not first, it returns the whole-file parse (syntax errors depend on what
follows an item, so only error-free chunks are reused).
"""

from __future__ import annotations

from typing import Any

from agentflow.compiler.diagnostics import Diagnostic
from agentflow.compiler.fmt import FormatError, tokenize
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_module

__all__ = ["IncrementalParser", "split_chunks"]

_TOP = frozenset({"flow", "input", "output", "deadline", "use", "extern", "type", "stage"})
_SPAN_FIELDS = ("span", "key_span", "name_span", "op_span", "target_span", "keyword_span")


def split_chunks(text: str) -> list[int] | None:
    """Start offsets of the top-level chunks of ``text`` (the first is always 0), or None when
    the text cannot be split safely (lexical error, unbalanced brackets)."""
    try:
        toks = tokenize(text)
    except FormatError:
        return None
    starts = [0]
    depth = 0
    line_first = True
    last_code_end = None
    for t in toks:
        if t.kind == "nl":
            line_first = True
            continue
        if t.kind in ("comment", "doc", "block"):
            continue
        if line_first and depth == 0 and t.kind == "word" and t.text in _TOP:
            if last_code_end is not None:
                nl = text.find("\n", last_code_end)
                if nl < 0 or nl >= t.start:
                    return None  # two items on one line: let the parser decide
                if nl + 1 > starts[-1]:
                    starts.append(nl + 1)
        line_first = False
        if t.kind == "op":
            if t.text in "([{":
                depth += 1
            elif t.text in ")]}":
                depth -= 1
                if depth < 0:
                    return None
        last_code_end = t.end
    if depth != 0:
        return None
    return starts


def _shift(node: Any, dl: int, do: int, seen: set[int]) -> None:
    """Shift every span in ``node`` by ``dl`` lines and ``do`` characters, in place."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Node):
            if id(n) in seen:
                continue
            seen.add(id(n))
            for name in type(n).__dataclass_fields__:
                v = getattr(n, name, None)
                if isinstance(v, ast.Span):
                    setattr(n, name, _moved(v, dl, do))
                elif isinstance(v, (ast.Node, list, tuple)):
                    stack.append(v)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)


def _moved(s: ast.Span, dl: int, do: int) -> ast.Span:
    return ast.Span(
        s.file, s.line + dl, s.column, s.end_line + dl, s.end_column, s.start + do, s.end + do
    )


class _Entry:
    __slots__ = ("items", "dl", "do")

    def __init__(self, items: list[ast.Item], dl: int, do: int) -> None:
        self.items = items
        self.dl = dl
        self.do = do


class IncrementalParser:
    """``parse(text)`` ≡ ``parse_module(text, file)`` for one document, reusing the ASTs of
    unchanged top-level items between calls.  Not thread-safe; one instance per document.
    ``last_mode`` is ``"incremental"`` or ``"full"`` (for tests and benchmarks)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.cache: dict[str, _Entry] = {}
        self.last_mode = "full"
        self.reparsed = 0

    def _full(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        self.cache = {}
        self.last_mode = "full"
        return parse_module(text, self.file)

    def parse(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        """Parse ``text``; returns ``(module, diagnostics)`` like ``parse_module``."""
        starts = split_chunks(text)
        if starts is None or len(starts) < 2:
            return self._full(text)
        bounds = list(zip(starts, starts[1:] + [len(text)]))
        new_cache: dict[str, _Entry] = {}
        items: list[ast.Item] = []
        line = 1
        prev = 0
        self.reparsed = 0
        for i, (a, b) in enumerate(bounds):
            line += text.count("\n", prev, a)
            prev = a
            chunk = text[a:b]
            dl, do = line - 1, a
            entry = self.cache.pop(chunk, None)
            if entry is None:
                module, diags = parse_module(chunk, self.file)
                if diags:
                    return self._full(text)
                entry = _Entry(module.items, 0, 0)
                self.reparsed += 1
            if entry.dl != dl or entry.do != do:
                _shift(entry.items, dl - entry.dl, do - entry.do, set())
                entry.dl, entry.do = dl, do
            if i > 0 and any(isinstance(it, ast.FlowHeader) for it in entry.items):
                return self._full(text)
            if chunk in new_cache:  # the same text twice: keep the first cached
                pass
            else:
                new_cache[chunk] = entry
            items.extend(entry.items)
        if not items:
            return self._full(text)
        self.cache = new_cache
        self.last_mode = "incremental"
        return ast.Module(_module_span(text, self.file), self.file, items), []


def _module_span(text: str, file: str) -> ast.Span:
    n = len(text)
    end_line = text.count("\n") + 1
    els = text.rfind("\n") + 1
    return ast.Span(file, 1, 1, end_line, n - els + 1, 0, n)
