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
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

from agentflow.compiler.check_memo import StageMemo
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import NO_SPAN, Span
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_module
from agentflow.grammar.scanner import TOP_LEVEL, SynErr, lex

__all__ = ["IncrementalParser", "split_chunks"]

_SPAN_FIELDS = ("span", "key_span", "name_span", "op_span", "target_span", "keyword_span")


_OPEN = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSE = frozenset({"RPAR", "RSQB", "RBRACE"})


class _Unsplittable(Exception):
    """The text has a lexical error or unbalanced brackets."""


def _keyword_lines(text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
    """Yield ``(offset of the keyword, chunk start)`` for each line of ``text[pos:]`` whose first
    token is a top-level keyword at bracket depth 0, scanning with the parser's own tokens (the
    scanner's raw mode).  ``pos`` is 0 or the offset of such a keyword.  Raises
    :class:`_Unsplittable` (lazily) on a lexical error or unbalanced brackets."""
    depth = 0
    try:
        for tok in lex(text, trivia=False, pos=pos):
            t = tok.type
            if t in _OPEN:
                depth += 1
            elif t in _CLOSE:
                depth -= 1
                if depth < 0:
                    raise _Unsplittable
            elif depth == 0 and tok.bol and tok.value in TOP_LEVEL:
                ls = text.rfind("\n", 0, tok.start) + 1
                start = _back_over_comments(text, ls) if ls else 0
                # a `///` comment after code on the line above (`} /// doc`) documents this
                # item too: no chunk starts here (the item stays with the one before)
                if start and "///" in text[text.rfind("\n", 0, start - 1) + 1 : start]:
                    continue
                yield tok.start, start
    except SynErr:
        raise _Unsplittable from None
    if depth != 0:
        raise _Unsplittable


def _starts(lines: list[tuple[int, int]]) -> list[int]:
    out = [0]
    for _, s in lines:
        if s > out[-1]:
            out.append(s)
    return out


def split_chunks(text: str) -> list[int] | None:
    """Start offsets of the top-level chunks of ``text`` (the first is always 0), or None when
    the text cannot be split safely (lexical error, unbalanced brackets).

    A chunk starts on a line whose first token is a top-level keyword at bracket depth 0; the
    comment and blank lines just above it belong to it (so ``///`` docs stay with their item)."""
    try:
        return _starts(list(_keyword_lines(text)))
    except _Unsplittable:
        return None


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (string compares in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, limit
    na, nb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid : na - lo] == b[nb - mid : nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Chunker:
    """:func:`split_chunks` for successive versions of one document, rescanning only from the
    last keyword line before the first changed character until the scan reaches a keyword line
    in the unchanged tail that was a keyword line before: from there on the scan (a function
    of the text that follows, since the state there is always the same — depth 0, start of a
    line, outside any string or comment) would repeat the previous one, shifted."""

    __slots__ = ("text", "lines")

    def __init__(self) -> None:
        self.text: str | None = None
        self.lines: list[tuple[int, int]] = []

    def split(self, text: str) -> list[int] | None:
        """``split_chunks(text)``."""
        try:
            lines = self._lines(text)
        except _Unsplittable:
            self.text = None
            return None
        self.text, self.lines = text, lines
        return _starts(lines)

    def _lines(self, text: str) -> list[tuple[int, int]]:
        old_text, old = self.text, self.lines
        if old_text is None:
            return list(_keyword_lines(text))
        if old_text == text:
            return old
        p = _common_prefix(old_text, text)
        changed_end = len(text) - _common_suffix(old_text, text, min(len(old_text), len(text)) - p)
        delta = len(text) - len(old_text)
        # the keyword lines up to the first change stay; the scan restarts at the last of them
        kept = bisect_right(old, p, key=lambda line: line[0])
        restart = old[kept - 1][0] if kept else 0
        lines = old[: kept - 1] if kept else []
        index = {k: i for i, (k, _) in enumerate(old)}
        for k, s in _keyword_lines(text, restart):
            lines.append((k, s))
            i = index.get(k - delta) if k >= changed_end else None
            if i is not None:
                lines.extend((ok + delta, os + delta) for ok, os in old[i + 1 :])
                break
        return lines


def _back_over_comments(text: str, ls: int) -> int:
    """Move the line start ``ls`` up over blank and ``//`` comment lines."""
    while ls > 0:
        prev = text.rfind("\n", 0, ls - 1) + 1
        line = text[prev : ls - 1].strip()
        if line and not line.startswith("//"):
            break
        ls = prev
    return ls


def _span_refs(items: list[ast.Item]) -> list[Span]:
    """Every distinct :class:`~Span` object in the AST of ``items`` (a span object two nodes
    share is listed once)."""
    refs: list[Span] = []
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
                if isinstance(v, (ast.Node, list, tuple, Span)):
                    stack.append(v)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
        elif isinstance(n, Span) and n is not NO_SPAN and n.line > 0 and id(n) not in seen:
            seen.add(id(n))
            refs.append(n)
    return refs


def _shift(refs: list[Span], dl: int, do: int) -> None:
    """Shift the spans ``refs`` by ``dl`` lines and ``do`` characters, in place: whatever holds
    one of these span objects — an AST node, a field of a type the checker built from it, a
    checker record of the language server's stage memo — sees the new position (columns do not
    change: a chunk starts at column 1)."""
    if dl:
        for s in refs:
            s.line += dl
            s.end_line += dl
            s.start += do
            s.end += do
    else:
        for s in refs:
            s.start += do
            s.end += do


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
        self.chunker = _Chunker()
        self.last_mode = "full"
        self.reparsed = 0
        #: the checker's stage records of this document's previous check (reused when an
        #: unchanged stage, reused here, cannot check differently)
        self.memo = StageMemo()

    def _full(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        self.last_mode = "full"
        return parse_module(text, self.file)

    def parse(self, text: str) -> tuple[ast.Module, list[Diagnostic]]:
        """Parse ``text``; returns ``(module, diagnostics)`` like ``parse_module``."""
        starts = self.chunker.split(text)
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
        skip = -1
        for i, (a, b) in enumerate(bounds):
            line += text.count("\n", prev, a)
            prev = a
            chunk = text[a:b]
            if i == skip:
                # parsed with the chunk before (its error changed how this one parses): keep
                # its usual entry for the next version
                kept = old.get(chunk)
                if kept is not None and id(kept) not in used:
                    used.add(id(kept))
                    new_cache.setdefault(chunk, kept)
                continue
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
                    if got[2] is not None:
                        items.extend(got[2])
                        skip = i + 1
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
    ) -> tuple[list[ast.Item], list[Diagnostic], list[ast.Item] | None] | None:
        """Items and diagnostics of chunk ``i``, which has a syntax error, exactly as the
        whole-file parse gives them, or None when that cannot be told locally; the third value
        is None, or the items of chunk ``i + 1`` when they parse differently after the error
        (the error item took the doc comment of the next item).

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
            return got.items, gdiags, None  # the last chunk: what follows is the end of file
        na, nb = bounds[i + 1]
        alone, _ = parse_module(text[na:nb], self.file)
        both, bdiags = parse_module(prefix + text[a:nb], self.file)
        if not alone.items:
            return None
        mine = [it for it in both.items if it.span.start < b]
        rest = [it for it in both.items if it.span.start >= b]
        if not rest or rest[0].span.start != b + alone.items[0].span.start:
            return None
        # the error item may run over the comment lines above the next item (recovery resumes
        # at its keyword), as long as that item is the one parsed alone, doc comment included
        if any(it.span.end > rest[0].span.start for it in mine):
            return None
        own = [d for d in bdiags if d.span.start < b]
        if getattr(rest[0], "doc", None) == getattr(alone.items[0], "doc", None):
            return mine, own, None
        # the next chunk as parsed after this one (its first item without its doc comment):
        # only when it parsed whole, without an error of its own
        if len(own) != len(bdiags) or any(isinstance(it, ast.FlowHeader) for it in rest):
            return None
        return mine, own, rest


def _blank(s: str) -> str:
    """``s`` with every character but ``\\n`` replaced by a space (same lines and offsets)."""
    return re.sub(r"[^\n]+", lambda m: " " * len(m.group()), s)


def _module_span(text: str, file: str) -> Span:
    n = len(text)
    end_line = text.count("\n") + 1
    els = text.rfind("\n") + 1
    return Span(file, 1, 1, end_line, n - els + 1, 0, n)
