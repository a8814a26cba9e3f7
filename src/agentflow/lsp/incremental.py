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

import re
from typing import Any

from agentflow.compiler.diagnostics import Diagnostic
from agentflow.compiler.fmt import FormatError, _skip_string
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_module

__all__ = ["IncrementalParser", "split_chunks"]

_TOP = frozenset({"flow", "input", "output", "deadline", "use", "extern", "type", "stage"})
_SPAN_FIELDS = ("span", "key_span", "name_span", "op_span", "target_span", "keyword_span")


_SCAN = re.compile(
    r'"|//[^\n]*|/\*|[(\[{]|[)\]}]|(?:^|(?<=\n))[ \t]*(?:flow|input|output|deadline|use|extern|type|stage)\b'
)


def split_chunks(text: str) -> list[int] | None:
    """Start offsets of the top-level chunks of ``text`` (the first is always 0), or None when
    the text cannot be split safely (lexical error, unbalanced brackets).

    A chunk starts on a line whose first token is a top-level keyword at bracket depth 0; the
    comment and blank lines just above it belong to it (so ``///`` docs stay with their item).
    Only brackets, strings, comments and line-initial keywords are scanned."""
    starts = [0]
    depth = 0
    i = 0
    try:
        while True:
            m = _SCAN.search(text, i)
            if m is None:
                break
            tok = m.group()
            c = tok[0]
            if c == '"':
                i = _skip_string(text, m.start())
                continue
            if tok.startswith("/*"):
                k = text.find("*/", m.end())
                if k < 0:
                    return None
                i = k + 2
                continue
            i = m.end()
            if c == "/":
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    return None
            elif depth == 0:
                ls = m.start()
                if ls > 0:
                    starts.append(_back_over_comments(text, ls))
    except FormatError:
        return None
    if depth != 0:
        return None
    out = [0]
    for s in starts[1:]:
        if s > out[-1]:
            out.append(s)
    return out


def _back_over_comments(text: str, ls: int) -> int:
    """Move the line start ``ls`` up over blank and ``//`` comment lines."""
    while ls > 0:
        prev = text.rfind("\n", 0, ls - 1) + 1
        line = text[prev : ls - 1].strip()
        if line and not line.startswith("//"):
            break
        ls = prev
    return ls


def _span_refs(items: list[ast.Item]) -> list[tuple[Any, str]]:
    """Every ``(node, field name)`` of ``items`` whose value is a :class:`~ast.Span`."""
    refs: list[tuple[Any, str]] = []
    seen: set[int] = set()
    stack: list[Any] = list(items)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Node):
            if id(n) in seen:
                continue
            seen.add(id(n))
            for name in type(n).__dataclass_fields__:
                v = getattr(n, name, None)
                if isinstance(v, ast.Span):
                    refs.append((n, name))
                elif isinstance(v, (ast.Node, list, tuple)):
                    stack.append(v)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
    return refs


def _shift(refs: list[tuple[Any, str]], dl: int, do: int) -> None:
    """Shift the spans at ``refs`` by ``dl`` lines and ``do`` characters, in place."""
    Span = ast.Span
    for node, name in refs:
        s = getattr(node, name)
        setattr(
            node,
            name,
            Span(
                s.file,
                s.line + dl,
                s.column,
                s.end_line + dl,
                s.end_column,
                s.start + do,
                s.end + do,
            ),
        )


class _Entry:
    __slots__ = ("items", "refs", "dl", "do")

    def __init__(self, items: list[ast.Item], dl: int, do: int) -> None:
        self.items = items
        self.refs = _span_refs(items)
        self.dl = dl
        self.do = do


class IncrementalParser:
    """``parse(text)`` ≡ ``parse_module(text, file)`` for one document, reusing the ASTs of
    unchanged top-level items between calls.  Not thread-safe; one instance per document.
    ``last_mode`` is ``"incremental"`` or ``"full"``; ``reparsed`` counts the chunks parsed
    by the last call (for tests and benchmarks)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.cache: dict[str, _Entry] = {}
        self.last_mode = "full"
        self.reparsed = 0

    def _full(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        self.last_mode = "full"
        return parse_module(text, self.file)

    def parse(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        """Parse ``text``; returns ``(module, diagnostics)`` like ``parse_module``."""
        starts = split_chunks(text)
        if starts is None or len(starts) < 2:
            return self._full(text)
        bounds = list(zip(starts, starts[1:] + [len(text)], strict=True))
        old = self.cache
        used: set[int] = set()
        new_cache: dict[str, _Entry] = {}
        items: list[ast.Item] = []
        diags: list[Diagnostic] = []
        line = 1
        prev = 0
        self.reparsed = 0
        for i, (a, b) in enumerate(bounds):
            line += text.count("\n", prev, a)
            prev = a
            chunk = text[a:b]
            dl, do = line - 1, a
            entry = old.get(chunk)
            if entry is not None and id(entry) in used:
                entry = None
            if entry is None:
                module, cdiags = parse_module(chunk, self.file)
                self.reparsed += 1
                if cdiags:
                    got = self._error_chunk(text, bounds, i, module)
                    if got is None:
                        return self._full(text)
                    items.extend(got[0])
                    diags.extend(got[1])
                    continue
                entry = _Entry(module.items, 0, 0)
            used.add(id(entry))
            if entry.dl != dl or entry.do != do:
                _shift(entry.refs, dl - entry.dl, do - entry.do)
                entry.dl, entry.do = dl, do
            if i > 0 and any(isinstance(it, ast.FlowHeader) for it in entry.items):
                return self._full(text)
            new_cache.setdefault(chunk, entry)
            items.extend(entry.items)
        if not items:
            return self._full(text)
        self.cache = new_cache
        self.last_mode = "incremental"
        return ast.Module(_module_span(text, self.file), self.file, items), diags

    def _error_chunk(
        self, text: str, bounds: list[tuple[int, int]], i: int, module: ast.Module
    ) -> tuple[list[ast.Item], list[Diagnostic]] | None:
        """Items and diagnostics of chunk ``i``, which has a syntax error, exactly as the
        whole-file parse gives them, or None when that cannot be told locally.

        The chunk is parsed at its real position (everything before it blanked out, so lines,
        columns and offsets — also those quoted in messages — are the real ones) together with
        the next chunk, since what the parser says can depend on the next token (``found
        `stage```); the result is used only when error recovery ended at the next chunk's first
        item."""
        if i > 0 and any(isinstance(it, ast.FlowHeader) for it in module.items):
            return None
        a, b = bounds[i]
        prefix = _blank(text[:a])
        if i + 1 == len(bounds):
            got, gdiags = parse_module(prefix + text[a:b], self.file)
            return got.items, gdiags  # the last chunk: what follows is the end of file
        na, nb = bounds[i + 1]
        alone, _ = parse_module(text[na:nb], self.file)
        both, bdiags = parse_module(prefix + text[a:nb], self.file)
        if not alone.items:
            return None
        mine = [it for it in both.items if it.span.start < b]
        rest = [it for it in both.items if it.span.start >= b]
        if any(it.span.end > b for it in mine) or not rest:
            return None
        if rest[0].span.start != b + alone.items[0].span.start:
            return None
        return mine, [d for d in bdiags if d.span.start < b]


def _blank(s: str) -> str:
    """``s`` with every character but ``\\n`` replaced by a space (same lines and offsets)."""
    return re.sub(r"[^\n]+", lambda m: " " * len(m.group()), s)


def _module_span(text: str, file: str) -> ast.Span:
    n = len(text)
    end_line = text.count("\n") + 1
    els = text.rfind("\n") + 1
    return ast.Span(file, 1, 1, end_line, n - els + 1, 0, n)
