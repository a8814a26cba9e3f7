"""The `.flow` scanner: source text → tokens (docs/spec/LANGUAGE.md §1, §2, §5).

One lexer serves every reader of `.flow` text:

* **Parse mode** (:class:`Scanner` with a ``driver``): the LALR driver (:mod:`.lalr`) pulls
  :class:`Tok` from :meth:`Scanner.tokens`, handing it the live state stack.  The scanner is
  *contextual* like Lark's contextual lexer: a word that is a keyword is emitted as the keyword
  only where the current LALR state accepts it, and as ``NAME`` otherwise — so any identifier
  works after ``.``, as an object key, field name or named argument, and ``use_it`` is a name.
  A word directly followed by ``:`` is always a name.
* Strings are scanned with a mode stack: each ``${…}`` is parsed by a nested parse of the same
  text starting at its real offset (a nested scanner that stops at the matching ``}``), so
  interpolations keep real source positions, also inside ``\"\"\"`` strings whose indentation is
  trimmed (Kotlin ``trimIndent``).  A STRING token's value is the finished ``ast.StringLit``.
* The newline rule (§1, ``module`` scanners): ``(``, ``[``, ``-`` and ``not`` that are the first
  token on a line, outside ``( )`` and ``[ ]``, become ``LPAR_NL``/``LSQB_NL``/``MINUS_NL``/
  ``NOT_NL``; the grammar lets those begin an expression but never continue one.  A top-level
  keyword that starts a line inside an unclosed bracket ends the item (error recovery).
* **Raw mode** (:func:`lex`, ``raw=True``): the tokens of any text, for the formatter and the
  language server — keywords by spelling, comments and line breaks kept as trivia (``COMMENT``,
  ``DOC``, ``BLOCK``, ``NL``) when asked, every token's value its source text (a STRING token
  covers the whole literal, interpolations included, which are skipped lexically, not parsed).
  Raw mode is lenient: an unknown character is an ``ERROR`` token, a malformed number a
  ``BADNUM`` token, and brackets need not balance; only an unterminated string, interpolation or
  block comment (and absurd nesting) raise :class:`SynErr`.

Errors are :class:`SynErr` (message, span, recovery position); they never leave
:mod:`agentflow.grammar` (the parser turns them into diagnostics or ``SourceError``).

This module owns the scanner's state (:class:`Scanner`), its strings (escapes, ``${…}``
holes, ``\"\"\"`` indentation) and raw mode's entry points (:func:`lex`, :func:`comments`).
The token kinds and tables are :mod:`~agentflow.grammar.tokens`, the main loop over the text
:mod:`~agentflow.grammar.scan_loop`, the errors and the words of their messages
:mod:`~agentflow.grammar.scan_errors`; the names readers take from the scanner (``Tok``,
``SynErr``, ``OPS``, …) are re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol

from agentflow.core.spans import Span
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.core.vocabulary import MAX_STRING_NESTING
from agentflow.grammar import ast
from agentflow.grammar.scan_errors import SynErr, _opener_words, _unclosed_hole
from agentflow.grammar.scan_loop import scan_tokens
from agentflow.grammar.tokens import (
    CLOSERS,
    COMMENTS,
    OPENERS,
    OPS,
    TOP_LEVEL,
    TRIVIA,
    Tok,
    brace_refs,
    starts_declaration,
)

__all__ = [
    "KEYWORDS",
    "TOP_LEVEL",
    "starts_declaration",
    "TRIVIA",
    "COMMENTS",
    "Tok",
    "Scanner",
    "SynErr",
    "lex",
    "comments",
    # the bracket and operator tables, for the readers that take them from the scanner
    "OPS",
    "OPENERS",
    "CLOSERS",
]

# ---------------------------------------------------------------------------------------------
# The scanner


#: an interpolation that is a name or a chain of field reads, written without blanks
_SIMPLE_HOLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
_STR_SPECIAL = re.compile(r'["\\\n$]')
_STR3_SPECIAL = re.compile(r'"""|[\\\n$]')


class Driver(Protocol):
    """What the scanner needs from the parser that pulls its tokens (:mod:`.lalr` provides it)."""

    def run(self, sc: Scanner, start: str) -> Any:
        """Parse the tokens of ``sc`` from the start symbol ``start``; raise :class:`SynErr`."""

    def shifts(self, stack: list[int], term: str) -> bool:
        """True when the parser with state stack ``stack`` really shifts ``term`` next."""


class Scanner:
    """Scans ``text[pos:end]`` into :class:`Tok`; positions are reported as real positions.

    ``line`` is the line number at ``pos``; ``ls`` is the (virtual) index of the start of that
    line, such that column = index - ls + 1; ``ob`` is added to indices to give file offsets.
    ``stop`` is None, ``"}"`` (an interpolation: stop at the unmatched ``}``) or ``"}}"`` (a
    template hole).  ``module`` turns on the newline rule and the top-level recovery rules.
    ``driver`` parses the interpolations of strings (parse mode).  ``raw`` selects raw mode
    (see the module docstring; no driver needed) and ``trivia`` makes it yield comments and
    line breaks too.
    """

    __slots__ = (
        "text",
        "pos",
        "end",
        "file",
        "line",
        "ls",
        "ob",
        "stop",
        "module",
        "stack",
        "nest",
        "last",
        "stopped_at",
        "driver",
        "raw",
        "trivia",
    )

    def __init__(
        self,
        text: str,
        pos: int,
        end: int,
        file: str,
        line: int,
        ls: int,
        ob: int,
        *,
        stop: str | None = None,
        module: bool = False,
        nest: int = 0,
        driver: Driver | None = None,
        raw: bool = False,
        trivia: bool = False,
    ) -> None:
        self.text = text
        self.pos = pos
        self.end = end
        self.file = file
        self.line = line
        self.ls = ls
        self.ob = ob
        self.stop = stop
        self.module = module
        self.stack: list[Tok] = []
        self.nest = nest
        self.last: Tok | None = None
        self.stopped_at: int | None = None
        self.driver = driver
        self.raw = raw
        self.trivia = trivia

    # -- helpers ------------------------------------------------------------------------------

    def span_at(self, i: int, j: int, line: int, ls: int) -> Span:
        """Span of text[i:j] that starts on ``line`` (whose start index is ``ls``)."""
        text = self.text
        nl = text.count("\n", i, j)
        if nl:
            end_line = line + nl
            end_col = j - text.rfind("\n", i, j)
        else:
            end_line = line
            end_col = j - ls + 1
        return Span(self.file, line, i - ls + 1, end_line, end_col, i + self.ob, j + self.ob)

    def opened(self, opener: Tok, *, at: bool = True) -> str:
        """Words for what the bracket token ``opener`` opens: ``"the stage body opened on line
        4"`` (``at=False``: ``"the stage body"``)."""
        what = _opener_words(self.text, opener.start - self.ob, str(opener.value))
        return f"{what} opened on line {opener.line}" if at else what

    def error(self, message: str, i: int, j: int, line: int, ls: int, **kw: Any) -> SynErr:
        end = self.end
        i = min(i, end)
        return SynErr(message, self.span_at(i, min(max(j, i), end), line, ls), **kw)

    # -- main loop -----------------------------------------------------------------------------

    def tokens(
        self,
        states: dict[int, dict[str, tuple[bool, Any]]] | None = None,
        state_stack: list[int] | None = None,
    ) -> Iterator[Tok]:
        """Yield the tokens of ``text[pos:end]``.

        ``states`` is the driver's action table and ``state_stack`` its live state stack, read
        to decide keyword-or-name for each word; both None means keywords by spelling (raw
        scanning).  Raises :class:`SynErr` at the first lexical error (raw mode: see the module
        docstring).  The loop itself is :func:`~agentflow.grammar.scan_loop.scan_tokens`.
        """
        return scan_tokens(self, states, state_stack)

    # -- strings -------------------------------------------------------------------------------

    def _escape(self, i: int, line: int, ls: int) -> tuple[str, int]:
        """Decode the escape at text[i] (a backslash); return (text, next index)."""
        text = self.text
        c = text[i + 1 : i + 2]
        simple = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "$": "$", "0": "\0"}
        if c in simple and c:
            return simple[c], i + 2
        if c == "u":
            m = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}").match(text, i, self.end)
            if m is not None:
                cp = int(m.group(1), 16)
                if cp <= 0x10FFFF and not (0xD800 <= cp <= 0xDFFF):
                    return chr(cp), m.end()
                why = (
                    "is a surrogate, not a character"
                    if cp <= 0x10FFFF
                    else "is beyond the last code point U+10FFFF"
                )
                raise self.error(
                    f"invalid unicode escape: `\\u{{{m.group(1)}}}` {why}",
                    i,
                    m.end(),
                    line,
                    ls,
                )
            raise self.error(
                "invalid unicode escape: write `\\u{…}` with 1 to 6 hex digits",
                i,
                i + 2,
                line,
                ls,
            )
        if not c:
            raise self.error("a `\\` at the end of the text escapes nothing", i, i + 1, line, ls)
        shown = c if c.isprintable() else repr(c)
        raise self.error(
            f'unknown escape `\\{shown}` (use `\\"`, `\\\\`, `\\n`, `\\t`, `\\u{{…}}` or `\\$`)',
            i,
            i + 2,
            line,
            ls,
        )

    def _simple_hole(self, m: re.Match[str], k: int, line: int, ls: int) -> ast.Interpolation:
        """The ``Interpolation`` of a hole matched by :data:`_SIMPLE_HOLE` (one line)."""
        file, ob, col0 = self.file, self.ob, 1 - ls
        i = k + 2
        j = m.end(1)
        expr: ast.Expr = ast.Name(
            Span(file, line, i + col0, line, j + col0, i + ob, j + ob), m.group(1)
        )
        start = expr.span
        for seg in m.group(2).split(".")[1:]:
            i = j + 1
            j = i + len(seg)
            nspan = Span(file, line, i + col0, line, j + col0, i + ob, j + ob)
            expr = ast.Member(start.to(nspan), expr, seg, nspan)
        e = m.end()
        return ast.Interpolation(Span(file, line, k + col0, line, e + col0, k + ob, e + ob), expr)

    def _interpolation(self, k: int, line: int, ls: int) -> tuple[ast.Interpolation, int, int, int]:
        """Parse ``${ … }`` starting at text[k] == '$'; return (node, next index, line, ls)."""
        if self.nest >= MAX_STRING_NESTING:
            raise self.error("strings nested too deeply inside `${…}`", k, k + 2, line, ls)
        m = _SIMPLE_HOLE.match(self.text, k, self.end)
        if m is not None and (m.group(1) not in KEYWORDS or m.group(1) == "input"):
            # fast path for the common `${name}` / `${a.b.c}`: the same nodes the parser builds
            return self._simple_hole(m, k, line, ls), m.end(), line, ls
        sub = Scanner(
            self.text,
            k + 2,
            self.end,
            self.file,
            line,
            ls,
            self.ob,
            stop="}",
            nest=self.nest + 1,
            driver=self.driver,
        )
        assert self.driver is not None  # holes are scanned by the driver's scanner
        try:
            expr = self.driver.run(sub, "expr_only")
        except SynErr as e:
            raise _unclosed_hole(e, self.span_at(k, k + 2, line, ls), sub) from None
        close = sub.stopped_at
        assert close is not None
        node = ast.Interpolation(self.span_at(k, close + 1, line, ls), expr)
        return node, close + 1, sub.line, sub.ls

    def skip_string(self, i: int, line: int, ls: int, triple: bool) -> int:
        """Raw mode: the index just past the string literal at ``text[i]`` (on ``line``, whose
        start index is ``ls``), leaving ``self.line``/``self.ls`` there.  Escapes are not
        decoded and interpolations are skipped by a raw nested scanner; raises :class:`SynErr`
        when the string, or an interpolation in it, is unterminated."""
        text = self.text
        n = self.end
        start_line, start_ls = line, ls
        search = (_STR3_SPECIAL if triple else _STR_SPECIAL).search
        j = i + (3 if triple else 1)
        while True:
            m = search(text, j, n)
            if m is None or (not triple and m.group() == "\n"):
                if triple:
                    message = 'unterminated string: `"""` has no closing `"""`'
                    k = i + 3
                else:
                    message = (
                        'unterminated string: expected a closing `"` on this line '
                        '(use `"""` for multi-line text)'
                    )
                    k = n if m is None else m.start()
                raise self.error(message, i, k, start_line, start_ls)
            k = m.start()
            c = m.group()
            if c == '"':
                j = k + 1
                break
            if c == '"""':
                j = k + 3
                while text.startswith('"', j) and j < n:
                    j += 1
                break
            if c == "\n":
                line += 1
                ls = j = k + 1
            elif c == "\\":
                # the escaped character is skipped too, unless it is a line break
                j = k + 1 if text.startswith("\n", k + 1) else k + 2
            elif text.startswith("${", k):
                j, line, ls = self._skip_hole(k, line, ls)
            else:
                j = k + 1
        self.line, self.ls = line, ls
        return j

    def _skip_hole(self, k: int, line: int, ls: int) -> tuple[int, int, int]:
        """Raw mode: skip the ``${ … }`` at ``text[k]``; return (next index, line, ls)."""
        if self.nest >= MAX_STRING_NESTING:
            raise self.error("strings nested too deeply inside `${…}`", k, k + 2, line, ls)
        m = _SIMPLE_HOLE.match(self.text, k, self.end)
        if m is not None:
            return m.end(), line, ls
        sub = Scanner(
            self.text,
            k + 2,
            self.end,
            self.file,
            line,
            ls,
            self.ob,
            stop="}",
            nest=self.nest + 1,
            raw=True,
        )
        for _ in sub.tokens():
            pass
        close = sub.stopped_at
        assert close is not None
        return close + 1, sub.line, sub.ls

    def scan_string(self, i: int, line: int, ls: int) -> tuple[ast.StringLit, int]:
        """Scan a ``"…"`` string starting at text[i]; return (node, index after it)."""
        text = self.text
        n = self.end
        parts: list[Any] = []
        buf: list[str] = []
        braces: list[tuple[str, Span]] = []
        j = i + 1
        start_line, start_ls = line, ls
        search = _STR_SPECIAL.search
        while True:
            m = search(text, j, n)
            if m is None or m.group() == "\n":
                k = n if m is None else m.start()
                raise self.error(
                    'unterminated string: expected a closing `"` on this line '
                    '(use `"""` for multi-line text)',
                    i,
                    k,
                    start_line,
                    start_ls,
                )
            k = m.start()
            if k > j:
                buf.append(text[j:k])
                if "{" in buf[-1]:
                    braces += brace_refs(text, j, k, self.file, line, ls, self.ob)
            c = m.group()
            if c == '"':
                j = k + 1
                break
            if c == "\\":
                s, j = self._escape(k, line, ls)
                buf.append(s)
                continue
            # `$`
            if text.startswith("${", k):
                if buf:
                    parts.append("".join(buf))
                    buf = []
                node, j, line2, ls2 = self._interpolation(k, line, ls)
                if line2 != line:
                    # an interpolation may span lines; the string goes on after it
                    line, ls = line2, ls2
                parts.append(node)
            else:
                buf.append("$")
                j = k + 1
        if buf:
            parts.append("".join(buf))
        span = self.span_at(i, j, self.line, self.ls)
        self.line, self.ls = line, ls
        return ast.StringLit(span, parts, braces=braces), j

    def scan_triple(self, i: int, line: int, ls: int) -> tuple[ast.StringLit, int]:
        """Scan a ``\"\"\"…\"\"\"`` string at text[i]; trims indentation like Kotlin's trimIndent."""
        text = self.text
        n = self.end
        start_line, start_ls = line, ls
        # pieces: ("raw", text) for source text, ("esc", text) for decoded escapes, or nodes
        pieces: list[Any] = []
        braces: list[tuple[str, Span]] = []
        j = i + 3
        search = _STR3_SPECIAL.search
        while True:
            m = search(text, j, n)
            if m is None:
                raise self.error(
                    'unterminated string: `"""` has no closing `"""`',
                    i,
                    i + 3,
                    start_line,
                    start_ls,
                )
            k = m.start()
            if k > j:
                pieces.append(("raw", text[j:k]))
                if "{" in pieces[-1][1]:
                    braces += brace_refs(text, j, k, self.file, line, ls, self.ob)
            c = m.group()
            if c == '"""':
                j = k + 3
                # `""""` ends with the quote included: a quote right before the closing triple
                while text.startswith('"', j) and j < n:
                    pieces.append(("raw", '"'))
                    j += 1
                break
            if c == "\n":
                prev = pieces[-1] if pieces else None
                if type(prev) is tuple and prev[0] == "raw" and prev[1].endswith("\r"):
                    pieces[-1] = ("raw", pieces[-1][1][:-1])
                pieces.append(("raw", "\n"))
                line += 1
                ls = k + 1
                j = k + 1
                continue
            if c == "\\":
                s, j = self._escape(k, line, ls)
                pieces.append(("esc", s))
                continue
            if text.startswith("${", k):
                node, j, line, ls = self._interpolation(k, line, ls)
                pieces.append(node)
            else:
                pieces.append(("raw", "$"))
                j = k + 1
        span = self.span_at(i, j, start_line, start_ls)
        self.line, self.ls = line, ls
        lit = ast.StringLit(span, _trim_indent(pieces), triple=True, braces=braces)
        return lit, j


def _trim_indent(pieces: list[Any]) -> list[Any]:
    """Apply Kotlin's ``trimIndent`` to scanned triple-quoted pieces; return StringLit parts."""
    lines: list[list[Any]] = [[]]
    for p in pieces:
        if isinstance(p, tuple) and p[0] == "raw" and "\n" in p[1]:
            segs = p[1].split("\n")
            for idx, seg in enumerate(segs):
                if idx:
                    lines.append([])
                if seg:
                    lines[-1].append(("raw", seg))
        else:
            lines[-1].append(p)

    def blank(ln: list[Any]) -> bool:
        return all(isinstance(p, tuple) and p[0] == "raw" and not p[1].strip(" \t\r") for p in ln)

    if len(lines) > 1 and blank(lines[0]):
        lines.pop(0)
    if len(lines) > 1 and blank(lines[-1]):
        lines.pop()
    elif (
        len(lines) == 1
        and blank(lines[0])
        and len(pieces)
        and any(isinstance(p, tuple) and p[1] == "\n" for p in pieces)
    ):
        lines = [[]]
    indent = None
    for ln in lines:
        if blank(ln):
            continue
        first = ln[0]
        if isinstance(first, tuple) and first[0] == "raw":
            s = first[1]
            w = len(s) - len(s.lstrip(" \t"))
        else:
            w = 0
        indent = w if indent is None else min(indent, w)
    indent = indent or 0
    parts: list[Any] = []
    buf: list[str] = []
    for idx, ln in enumerate(lines):
        if idx:
            buf.append("\n")
        if blank(ln):
            text = "".join(p[1] for p in ln)
            buf.append(text[indent:])
            continue
        for pi, p in enumerate(ln):
            if isinstance(p, tuple):
                s = p[1]
                if pi == 0 and p[0] == "raw" and indent:
                    s = s[indent:]
                buf.append(s)
            else:
                if buf:
                    joined = "".join(buf)
                    if joined:
                        parts.append(joined)
                    buf = []
                parts.append(p)
    if buf:
        joined = "".join(buf)
        if joined:
            parts.append(joined)
    return parts


# ---------------------------------------------------------------------------------------------
# Raw mode: the tokens of any text, for the formatter and the language server


def lex(text: str, *, trivia: bool = True, pos: int = 0, file: str = "<text>") -> Iterator[Tok]:
    """The raw-mode tokens of ``text[pos:]`` (see the module docstring), in order.

    Each token's ``value`` is its source text ``text[start:end]`` (a STRING token covers the
    whole literal, ``${…}`` included; a ``//`` comment runs to the end of its line, the line
    break excluded); ``type`` is the keyword's or operator's terminal name (keywords by
    spelling, never ``…_NL``), ``NAME``, ``NUMBER``, ``DURATION``, ``STRING``, ``BADNUM`` or
    ``ERROR``, and with ``trivia`` also ``COMMENT``, ``DOC``, ``BLOCK`` and ``NL``.  ``bol`` is
    set on the first token of a line.  Offsets are 0-based in ``text``; lines and columns
    1-based.  Raises :class:`SynErr` (lazily, while iterating) at an unterminated string,
    interpolation or block comment.
    """
    line = text.count("\n", 0, pos) + 1
    ls = text.rfind("\n", 0, pos) + 1
    sc = Scanner(text, pos, len(text), file, line, ls, 0, raw=True, trivia=trivia)
    return sc.tokens()


def comments(text: str) -> list[Tok]:
    """Every comment of ``text`` (``COMMENT``, ``DOC`` and ``BLOCK`` tokens of :func:`lex`,
    so never a ``//`` inside a string), in order; ``[]`` when ``text`` has an unterminated
    string, interpolation or block comment."""
    try:
        return [t for t in lex(text) if t.type in COMMENTS]
    except SynErr:
        return []
