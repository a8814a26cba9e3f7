"""The `.flow` parser: source text → :mod:`agentflow.grammar.ast` (LANGUAGE.md §1–8, PLAN_IR.md §3).

Design
------
* :file:`flow.lark` is an LALR(1) grammar; the Lark parser is built **once per process**
  (:func:`_lark`) with the AST builder (:class:`_Builder`) applied inline as its transformer.
* Tokens come from a hand-written scanner (:class:`_Scanner`) plugged in as a Lark custom lexer.
  It is *contextual* like Lark's contextual lexer: a word that is a keyword is emitted as the
  keyword only where the current LALR state accepts that keyword, and as ``NAME`` otherwise —
  so any identifier works after ``.``, as an object key, field name or named argument, and
  ``use_it`` is a name.  A word directly followed by ``:`` is always a name.
* Strings are scanned with a mode stack: each ``${…}`` is parsed by a nested parse of the same
  text starting at its real offset (the nested scanner stops at the matching ``}``), so
  interpolations keep real source positions, also inside ``\"\"\"`` strings whose indentation is
  trimmed (Kotlin ``trimIndent``).  A STRING token's value is the finished ``ast.StringLit``.
* The newline rule (§1): ``(``, ``[``, ``-`` and ``not`` that are the first token on a line,
  outside ``( )`` and ``[ ]``, become ``LPAR_NL``/``LSQB_NL``/``MINUS_NL``/``NOT_NL``; the grammar lets
  those begin an expression but never continue one.  All other line breaks are insignificant.
* Binary operators are collected flat and arranged by precedence climbing (§4), which keeps
  the number of LALR reductions per operand small.
* :func:`parse_module` never raises: syntax errors become ``syntax-error`` diagnostics and the
  item that failed becomes ``ast.ErrorItem``; parsing resumes at the next top-level keyword at
  the start of a line (``flow input output deadline use extern type stage``).
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left
from pathlib import Path
from typing import Any

from lark import Lark
from lark.lexer import Lexer

from agentflow.compiler import diagnostics as diag
from agentflow.compiler.diagnostics import SYNTAX_ERROR, Diagnostic, Note
from agentflow.errors import SourceError
from agentflow.grammar import ast

__all__ = ["parse_expression", "parse_template", "parse_module"]

#: Deepest bracket nesting accepted (deeper input is a syntax error, which keeps every later
#: recursive pass over the AST far from Python's recursion limit).
MAX_NESTING = 100
#: Deepest nesting of strings inside ``${…}``.
MAX_STRING_NESTING = 20
#: Most binary operators in one expression, and most prefix ``not``/``-`` on one operand.
MAX_OPERATORS = 200
MAX_PREFIX = 50

# ---------------------------------------------------------------------------------------------
# Tokens


KEYWORDS: dict[str, str] = {
    w: w.upper()
    for w in (
        "not and or in true false null flow input output deadline use agent team extern tool "
        "type stage let require else fail return if map parallel as limit filter where judge "
        "reduce ask expect default verify check task system model tools none write timeout "
        "retry max_iterations"
    ).split()
}

#: Keywords that are never a plain name (a variable, a loop variable, an expression), only
#: after ``.`` or before ``:`` (field names, object keys, named arguments); every other keyword
#: is a name wherever the grammar does not expect it as a keyword (``let model = …``).
_RESERVED = frozenset("let return require fail if else true false null and or not in".split())
#: Keywords that start a top-level item (recovery points).
TOP_LEVEL = frozenset({"flow", "input", "output", "deadline", "use", "extern", "type", "stage"})
#: Top-level keywords that can never start a line inside a body when followed by a word,
#: a string or a number on the same line (so they end an unclosed item).
_STRONG = frozenset(TOP_LEVEL - {"input"})

_OPS: dict[str, str] = {
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    "{": "LBRACE",
    "}": "RBRACE",
    ",": "COMMA",
    ":": "COLON",
    ".": "DOT",
    "..": "DOTDOT",
    "->": "ARROW",
    "|": "PIPE",
    "?": "QMARK",
    "??": "QQ",
    "@": "AT",
    "=": "EQUALS",
    "==": "EQ",
    "!=": "NE",
    "<": "LT",
    "<=": "LE",
    ">": "GT",
    ">=": "GE",
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "%": "PERCENT",
}
_NL_VARIANT = {"LPAR": "LPAR_NL", "LSQB": "LSQB_NL", "MINUS": "MINUS_NL"}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}

_TOKEN_RE = re.compile(
    r"""
    [ \t\r\f\v\ufeff]*
   (?:
    (?P<nl>\n)
  | (?P<doc>///[^\n]*)
  | (?P<comment>//[^\n]*)
  | (?P<block>/\*)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<dur>(?:[0-9]+(?:ms|h|m|s))+(?![A-Za-z0-9_]))
  | (?P<num>[0-9]+(?:\.[0-9]+)?(?![A-Za-z_0-9]))
  | (?P<badnum>[0-9]+(?:\.[0-9]+)?[A-Za-z_0-9]*)
  | (?P<str3>\"\"\")
  | (?P<str>\")
  | (?P<op>\.\.|\?\?|==|!=|<=|>=|->|[-+*/%<>=.,:(){}\[\]|?@])
  | (?P<eof>\Z)
   )
    """,
    re.VERBOSE,
)
#: group number → kind (leading blanks are part of every match; the group is the token)
_KIND = [None] + [None] * _TOKEN_RE.groups
for _name, _idx in _TOKEN_RE.groupindex.items():
    _KIND[_idx] = _name
_KIND = tuple(_KIND)
#: an interpolation that is a name or a chain of field reads, written without blanks
_SIMPLE_HOLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
_BLANKS = re.compile(r"[ \t\r\f\v\ufeff]*")
_DUR_PART = re.compile(r"([0-9]+)(ms|h|m|s)")
_DUR_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_PLAIN_STR = re.compile(r'"([^"\\$\n]*)"')
_STR_SPECIAL = re.compile(r'["\\\n$]')
_STR3_SPECIAL = re.compile(r'"""|[\\\n$]')
_COLON_AFTER = re.compile(r"[ \t]*:(?!:)")
_WORD_AFTER = re.compile(r"[ \t]+(?:[A-Za-z_0-9\"])")
_SKIP_TRIVIA = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)


_Span = ast.Span


class Tok:
    """A token as the Lark parser sees it (``type``) plus its source position.

    ``value`` is the matched text, except for STRING tokens, whose value is an ``ast.StringLit``.
    ``doc`` holds the ``///`` comment lines immediately before the token, if any.
    """

    __slots__ = (
        "type",
        "value",
        "start",
        "end",
        "line",
        "column",
        "end_line",
        "end_column",
        "file",
        "doc",
        "bol",
    )

    def __init__(self, type, value, start, end, line, column, end_line, end_column, file):
        self.type = type
        self.value = value
        self.start = start
        self.end = end
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column
        self.file = file
        self.doc = None
        self.bol = False

    @property
    def span(self) -> ast.Span:
        return ast.Span(
            self.file,
            self.line,
            self.column,
            self.end_line,
            self.end_column,
            self.start,
            self.end,
        )

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.type}, {self.value!r}, {self.line}:{self.column})"


_OPENER_CONTEXT = [
    (re.compile(r"^\s*stage\b[^{]*$"), "the stage body"),
    (re.compile(r"^\s*type\s+\w+\s*(=\s*)?$"), "the type body"),
    (re.compile(r"\bagent\s*\(.*\)\s*$"), "the agent block"),
    (re.compile(r"\bverify\s*$"), "the `verify` block"),
    (re.compile(r"\bretry\s*$"), "the `retry` object"),
    (re.compile(r"^\s*input\s*$"), "the `input` object"),
    (re.compile(r"\b(map|reduce)\b.*\bas\b[^{]*$"), "the `{0}` body"),
    (re.compile(r"(^|\})\s*(if|else)\b[^{]*$"), "the `if` block"),
    (re.compile(r"\b(use|extern)\b"), "the declaration"),
]


def _opener_words(text: str, i: int, bracket: str) -> str:
    """What the bracket at ``text[i]`` opens, in words: ``"the stage body"``, ``"the agent
    block"``, …, else ``"the `(`"``.  Looks only at the text before it on the same line."""
    if bracket == "{":
        before = text[text.rfind("\n", 0, i) + 1 : i]
        for pattern, words in _OPENER_CONTEXT:
            m = pattern.search(before)
            if m is not None:
                return words.format(m.group(1)) if "{0}" in words else words
        if before.rstrip().endswith(("=", "(", ",", ":", "[", "return")):
            return "the object"
    return f"the `{bracket}`"


class _SynErr(Exception):
    """Internal syntax error: message, primary span, and where recovery may start scanning
    (``resume``: text index, ``depth``: bracket depth there), when known."""

    def __init__(
        self,
        message: str,
        span: ast.Span,
        resume: int | None = None,
        depth: int | None = None,
        hint: str | None = None,
        notes: list[tuple[str, ast.Span]] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.span = span
        self.resume = resume
        self.depth = depth
        self.hint = hint
        self.notes = notes or []


# ---------------------------------------------------------------------------------------------
# The scanner


class _Scanner:
    """Scans ``text[pos:end]`` into :class:`Tok`; positions are reported as real positions.

    ``line`` is the line number at ``pos``; ``ls`` is the (virtual) index of the start of that
    line, such that column = index - ls + 1; ``ob`` is added to indices to give file offsets.
    ``stop`` is None, ``"}"`` (an interpolation: stop at the unmatched ``}``) or ``"}}"`` (a
    template hole).  ``module`` turns on the newline rule and the top-level recovery rules.
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
    )

    def __init__(self, text, pos, end, file, line, ls, ob, *, stop=None, module=False, nest=0):
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

    # -- helpers ------------------------------------------------------------------------------

    def span_at(self, i: int, j: int, line: int, ls: int) -> ast.Span:
        """Span of text[i:j] that starts on ``line`` (whose start index is ``ls``)."""
        text = self.text
        nl = text.count("\n", i, j)
        if nl:
            end_line = line + nl
            end_col = j - text.rfind("\n", i, j)
        else:
            end_line = line
            end_col = j - ls + 1
        return ast.Span(self.file, line, i - ls + 1, end_line, end_col, i + self.ob, j + self.ob)

    def opened(self, opener: Tok, *, at: bool = True) -> str:
        """Words for what the bracket token ``opener`` opens: ``"the stage body opened on line
        4"`` (``at=False``: ``"the stage body"``)."""
        what = _opener_words(self.text, opener.start - self.ob, opener.value)
        return f"{what} opened on line {opener.line}" if at else what

    def error(self, message: str, i: int, j: int, line: int, ls: int, **kw) -> _SynErr:
        end = self.end
        i = min(i, end)
        return _SynErr(message, self.span_at(i, min(max(j, i), end), line, ls), **kw)

    # -- main loop -----------------------------------------------------------------------------

    def tokens(self, states: dict | None, state_stack: list | None):
        """Yield tokens for the LALR driver.

        ``states`` is the action table and ``state_stack`` the driver's live state stack, read
        to decide keyword-or-name for each word; both None means raw scanning (keywords by
        spelling).
        """
        text = self.text
        n = self.end
        i = self.pos
        line = self.line
        ls = self.ls
        ob = self.ob
        file = self.file
        module = self.module
        stop = self.stop
        stack = self.stack
        match = _TOKEN_RE.match
        bol = True
        doc: list[str] | None = None
        while i < n:
            m = match(text, i, n)
            if m is None:
                i = _BLANKS.match(text, i, n).end()
                ch = text[i]
                shown = repr(ch)[1:-1] if not ch.isprintable() else ch
                raise self.error(
                    f"unexpected character `{shown}`",
                    i,
                    i + 1,
                    line,
                    ls,
                    resume=i + 1,
                    depth=len(stack),
                )
            g = m.lastindex
            kind = _KIND[g]
            i, j = m.span(g)
            if kind == "word":
                value = text[i:j]
                typ = KEYWORDS.get(value)
                if typ is None:
                    typ = "NAME"
                else:
                    if bol and module:
                        if value in _STRONG and stack and _WORD_AFTER.match(text, j, n):
                            opener = stack[-1]
                            self.line, self.ls = line, ls
                            raise _SynErr(
                                f"expected `{_OPENERS[opener.value]}` to close "
                                f"{self.opened(opener)} before `{value}` "
                                f"starts a new declaration",
                                opener.span,
                                resume=i,
                                depth=0,
                            )
                        if typ == "NOT" and (not stack or stack[-1].value == "{"):
                            typ = "NOT_NL"
                    if states is not None and not (
                        bol and module and not stack and value in TOP_LEVEL
                    ):
                        st = states[state_stack[-1]]
                        if typ in st:
                            if "NAME" in st and (
                                _COLON_AFTER.match(text, j, n)
                                or (value not in _RESERVED and not _shifts(state_stack, typ))
                            ):
                                # merged LALR lookaheads: `input` after `let x = 1` looks like
                                # an agent clause, but only a name is really accepted there
                                typ = "NAME"
                        elif "NAME" in st and (
                            value not in _RESERVED
                            or (self.last is not None and self.last.type == "DOT")
                            or _COLON_AFTER.match(text, j, n)
                        ):
                            typ = "NAME"
                tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
            elif kind == "op":
                value = text[i:j]
                typ = _OPS[value]
                if value in _OPENERS:
                    if bol and module and value != "{" and (not stack or stack[-1].value == "{"):
                        typ = _NL_VARIANT[typ]
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
                    if len(stack) >= MAX_NESTING:
                        raise self.error(
                            f"brackets nested too deeply (more than {MAX_NESTING} levels)",
                            i,
                            j,
                            line,
                            ls,
                        )
                    stack.append(tok)
                elif value in _CLOSERS:
                    if not stack:
                        if stop is not None and value == "}":
                            if stop == "}" or text.startswith("}}", i):
                                self.stopped_at = i
                                break
                        raise self.error(
                            f"unexpected `{value}`: there is no open `{_CLOSERS[value]}` to close",
                            i,
                            j,
                            line,
                            ls,
                            resume=j,
                            depth=0,
                        )
                    opener = stack[-1]
                    if opener.value != _CLOSERS[value]:
                        stack.pop()
                        raise self.error(
                            f"expected `{_OPENERS[opener.value]}` to close "
                            f"{self.opened(opener)}, found `{value}`",
                            i,
                            j,
                            line,
                            ls,
                            resume=j,
                            depth=len(stack),
                            notes=[(f"{self.opened(opener, at=False)} opened here", opener.span)],
                        )
                    stack.pop()
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
                else:
                    if bol and module and typ == "MINUS" and (not stack or stack[-1].value == "{"):
                        typ = "MINUS_NL"
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
            elif kind == "nl":
                line += 1
                ls = j
                i = j
                bol = True
                continue
            elif kind == "eof":
                i = n
                continue
            elif kind == "str" or kind == "str3":
                self.line, self.ls = line, ls
                if kind == "str":
                    pm = _PLAIN_STR.match(text, i, n)
                    if pm is not None:
                        j = pm.end()
                        s = pm.group(1)
                        lit = ast.StringLit(self.span_at(i, j, line, ls), [s] if s else [])
                    else:
                        lit, j = self.scan_string(i, line, ls)
                else:
                    lit, j = self.scan_triple(i, line, ls)
                sp = lit.span
                tok = Tok(
                    "STRING", lit, i + ob, j + ob, line, sp.column, sp.end_line, sp.end_column, file
                )
                line, ls = self.line, self.ls
            elif (kind == "num" or kind == "dur") and j - i > 100:
                raise self.error(
                    "number too long (more than 100 digits)",
                    i,
                    j,
                    line,
                    ls,
                    resume=j,
                    depth=len(stack),
                )
            elif kind == "num":
                tok = Tok(
                    "NUMBER", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file
                )
            elif kind == "dur":
                tok = Tok(
                    "DURATION", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file
                )
            elif kind == "doc":
                if module:
                    d = text[i:j][3:]
                    if d.startswith(" "):
                        d = d[1:]
                    if doc is None:
                        doc = [d.rstrip()]
                    else:
                        doc.append(d.rstrip())
                i = j
                continue
            elif kind == "comment":
                i = j
                continue
            elif kind == "block":
                k = text.find("*/", j, n)
                if k < 0:
                    raise self.error(
                        "unterminated comment: `/*` has no closing `*/`", i, j, line, ls
                    )
                k += 2
                nl = text.count("\n", i, k)
                if nl:
                    line += nl
                    ls = text.rfind("\n", i, k) + 1
                i = k
                continue
            else:  # badnum
                raise self.error(
                    f"`{text[i:j]}` is neither a number nor a duration "
                    "(durations are written like `250ms`, `90s`, `5m`, `1h30m`)",
                    i,
                    j,
                    line,
                    ls,
                    resume=j,
                    depth=len(stack),
                )
            if doc is not None:
                tok.doc = "\n".join(doc)
                doc = None
            tok.bol = bol
            bol = False
            self.last = tok
            self.pos = j
            self.line, self.ls = line, ls
            yield tok
            i = j
        else:
            if stop is not None:
                self.line, self.ls = line, ls
                what = "`}`" if stop == "}" else "`}}`"
                start = self.pos if self.last is None else self.last.end - ob
                raise self.error(f"expected {what} before the end of the text", start, n, line, ls)
        self.pos = i
        self.line, self.ls = line, ls
        if stack:
            opener = stack[-1]
            raise _SynErr(
                f"expected `{_OPENERS[opener.value]}` to close {self.opened(opener)}, "
                f"found the end of the {'file' if module else 'text'}",
                opener.span,
            )

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

    def _simple_hole(self, m: re.Match, k: int, line: int, ls: int) -> ast.Interpolation:
        """The ``Interpolation`` of a hole matched by :data:`_SIMPLE_HOLE` (one line)."""
        file, ob, col0 = self.file, self.ob, 1 - ls
        i = k + 2
        j = m.end(1)
        expr: ast.Expr = ast.Name(
            _Span(file, line, i + col0, line, j + col0, i + ob, j + ob), m.group(1)
        )
        start = expr.span
        for seg in m.group(2).split(".")[1:]:
            i = j + 1
            j = i + len(seg)
            nspan = _Span(file, line, i + col0, line, j + col0, i + ob, j + ob)
            expr = ast.Member(start.to(nspan), expr, seg, nspan)
        e = m.end()
        return ast.Interpolation(_Span(file, line, k + col0, line, e + col0, k + ob, e + ob), expr)

    def _interpolation(self, k: int, line: int, ls: int) -> tuple[ast.Interpolation, int, int, int]:
        """Parse ``${ … }`` starting at text[k] == '$'; return (node, next index, line, ls)."""
        if self.nest >= MAX_STRING_NESTING:
            raise self.error("strings nested too deeply inside `${…}`", k, k + 2, line, ls)
        m = _SIMPLE_HOLE.match(self.text, k, self.end)
        if m is not None and (m.group(1) not in KEYWORDS or m.group(1) == "input"):
            # fast path for the common `${name}` / `${a.b.c}`: the same nodes the parser builds
            return self._simple_hole(m, k, line, ls), m.end(), line, ls
        sub = _Scanner(
            self.text,
            k + 2,
            self.end,
            self.file,
            line,
            ls,
            self.ob,
            stop="}",
            nest=self.nest + 1,
        )
        expr = _run(sub, "expr_only")
        close = sub.stopped_at
        assert close is not None
        node = ast.Interpolation(self.span_at(k, close + 1, line, ls), expr)
        return node, close + 1, sub.line, sub.ls

    def scan_string(self, i: int, line: int, ls: int) -> tuple[ast.StringLit, int]:
        """Scan a ``"…"`` string starting at text[i]; return (node, index after it)."""
        text = self.text
        n = self.end
        parts: list = []
        buf: list[str] = []
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
        return ast.StringLit(span, parts), j

    def scan_triple(self, i: int, line: int, ls: int) -> tuple[ast.StringLit, int]:
        """Scan a ``\"\"\"…\"\"\"`` string at text[i]; trims indentation like Kotlin's trimIndent."""
        text = self.text
        n = self.end
        start_line, start_ls = line, ls
        # pieces: ("raw", text) for source text, ("esc", text) for decoded escapes, or nodes
        pieces: list = []
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
        return ast.StringLit(span, _trim_indent(pieces), triple=True), j


def _trim_indent(pieces: list) -> list:
    """Apply Kotlin's ``trimIndent`` to scanned triple-quoted pieces; return StringLit parts."""
    lines: list[list] = [[]]
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

    def blank(ln: list) -> bool:
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
    parts: list = []
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
# Lark glue


class _Lexer(Lexer):
    """Lark custom-lexer adapter: the "text" Lark hands us is a :class:`_Scanner`."""

    __future_interface__ = 2

    def __init__(self, lexer_conf: Any) -> None:
        self.lexer_conf = lexer_conf

    def lex(self, lexer_state: Any, parser_state: Any):
        return lexer_state.text.tokens(parser_state)


_PARSER: Lark | None = None


def _lark() -> Lark:
    """The process-wide Lark LALR parser (built on first use)."""
    global _PARSER
    if _PARSER is None:
        grammar = (Path(__file__).parent / "flow.lark").read_text(encoding="utf-8")
        _PARSER = Lark(
            grammar,
            parser="lalr",
            lexer=_Lexer,
            start=["module", "expr_only"],
            transformer=_Builder(),
            keep_all_tokens=True,
            maybe_placeholders=False,
            # the LALR analysis is cached in the temp directory (keyed by grammar and options)
            cache=True,
        )
    return _PARSER


#: builder callbacks that return their single child unchanged (skipped by the driver)
_IDENTITY = frozenset({"type"})


class _Tables:
    """Lark's LALR(1) table for :file:`flow.lark`, re-keyed for a fast driver loop.

    ``states[state][terminal]`` is ``(True, next_state)`` for a shift or
    ``(False, (size, callback, nonterminal))`` for a reduction, where ``callback`` is the
    transformer callback Lark built for the rule.  (Lark's own loop keys its callbacks by
    ``Rule`` objects whose hashing and equality dominate the parse time.)
    """

    def __init__(self, lark: Lark) -> None:
        from lark.parsers.lalr_analysis import Shift

        inner = lark.parser.parser.parser
        table = inner.parse_table
        callbacks = inner.callbacks
        self.states: dict[int, dict[str, tuple]] = {}
        for st, actions in table.states.items():
            row = {}
            for term, (action, arg) in actions.items():
                # plain str keys: Lark's names are Token objects with a Python-level __eq__
                if action is Shift:
                    row[str(term)] = (True, arg)
                elif (arg.options.expand1 and len(arg.expansion) == 1 and not arg.alias) or (
                    len(arg.expansion) == 1 and str(arg.alias or arg.origin.name) in _IDENTITY
                ):
                    # `?rule: x` with one child, or a callback returning its only child:
                    # the value passes through unchanged
                    row[str(term)] = (False, (1, None, str(arg.origin.name)))
                else:
                    row[str(term)] = (
                        False,
                        (len(arg.expansion), callbacks[arg], str(arg.origin.name)),
                    )
            self.states[st] = row
        #: ``goto[state][nonterminal]`` → the state after a reduction to ``nonterminal``
        self.goto: dict[int, dict[str, int]] = {
            st: {k: a[1] for k, a in row.items() if a[0] and k.islower()}
            for st, row in self.states.items()
        }
        self.start = dict(table.start_states)
        self.end = dict(table.end_states)


_TABLES: _Tables | None = None


def _tables() -> _Tables:
    global _TABLES
    if _TABLES is None:
        _TABLES = _Tables(_lark())
    return _TABLES


class _EndTok:
    """The end-of-input marker fed to the driver."""

    __slots__ = ("type", "value")

    def __init__(self) -> None:
        self.type = "$END"
        self.value = ""


def _run(sc: _Scanner, start: str, values: list | None = None) -> Any:
    """Run the LALR(1) automaton of :file:`flow.lark` over the tokens of ``sc``.

    Returns the value built by the transformer callbacks for the start symbol ``start``;
    raises :class:`_SynErr` on a syntax error.  ``values`` may be passed in to keep the value
    stack after an error (for ``module``, ``values[0]`` is the list of completed items).
    """
    t = _tables()
    states = t.states
    stack = [t.start[start]]
    if values is None:
        values = []
    end_state = t.end[start]
    goto = t.goto
    push = stack.append
    vpush = values.append
    origin0 = (sc.pos, sc.line, sc.ls)
    for tok in sc.tokens(states, stack):
        typ = tok.type
        while True:
            act = states[stack[-1]].get(typ)
            if act is None:
                raise _unexpected(
                    tok, _stack_before(sc, start, origin0, tok, stack), start, sc, values
                )
            if act[0]:
                push(act[1])
                vpush(tok)
                break
            size, cb, origin = act[1]
            if cb is None:
                stack[-1] = goto[stack[-2]][origin]
                continue
            if size == 1:
                stack[-1] = goto[stack[-2]][origin]
                values[-1] = cb([values[-1]])
                continue
            if size:
                kids = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                kids = []
            vpush(cb(kids))
            push(goto[stack[-1]][origin])
    end = _EndTok()
    while True:
        act = states[stack[-1]].get("$END")
        if act is None:
            raise _unexpected(end, _stack_before(sc, start, origin0, end, stack), start, sc, values)
        if act[0]:  # pragma: no cover - $END is never shifted
            break
        size, cb, origin = act[1]
        if cb is None:
            stack.pop()
        else:
            if size:
                kids = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                kids = []
            values.append(cb(kids))
        stack.append(states[stack[-1]][origin][1])
        if stack[-1] == end_state:
            return values[-1]
    return values[-1]  # pragma: no cover


# -- error messages ---------------------------------------------------------------------------


def _stack_before(
    sc: _Scanner, start: str, origin: tuple[int, int, int], tok: Any, stack: list[int]
) -> list[int]:
    """The LALR state stack just before ``tok`` was read, before the reductions it triggered.

    LALR(1) merges the lookaheads of states reached from different contexts, so the driver may
    reduce on a token that no context accepts before it finds the error (``where e.kind = …``
    reduces the condition, then the statement, and fails among the statement starters).  Error
    messages must describe the state before those reductions: it is rebuilt here by scanning
    again from ``origin`` (``(pos, line, ls)`` of ``sc`` when the run started) without building
    values.  Only the error path pays for this.  Falls back to ``stack`` if the replay does not
    reach ``tok``.
    """
    t = _tables()
    states = t.states
    goto = t.goto
    pos, line, ls = origin
    sub = _Scanner(
        sc.text, pos, sc.end, sc.file, line, ls, sc.ob, stop=sc.stop, module=sc.module, nest=sc.nest
    )
    st = [t.start[start]]
    target = tok.start if isinstance(tok, Tok) else None
    try:
        for tk in sub.tokens(states, st):
            if tk.start == target:
                return st
            typ = tk.type
            while True:
                act = states[st[-1]].get(typ)
                if act is None:
                    return stack
                if act[0]:
                    st.append(act[1])
                    break
                size, _cb, nonterminal = act[1]
                if size:
                    del st[-size:]
                st.append(goto[st[-1]][nonterminal])
    except Exception:  # pragma: no cover - the first run got further: keep its stack
        return stack
    return st if target is None else stack


def _shifts(stack: list[int], term: str, end_state: int | None = None) -> bool:
    """True when the parser in ``stack`` really shifts ``term`` next, through the reductions it
    triggers (the state's action for ``term`` may come from the merged LALR lookaheads of
    another context); for ``$END``, when reducing reaches ``end_state`` (the input is accepted)."""
    t = _tables()
    states = t.states
    goto = t.goto
    st = list(stack)
    for _ in range(10_000):
        act = states[st[-1]].get(term)
        if act is None:
            return False
        if act[0]:
            return True
        size, _cb, nonterminal = act[1]
        if size:
            del st[-size:]
        nxt = goto.get(st[-1], {}).get(nonterminal) if st else None
        if nxt is None:
            return False
        st.append(nxt)
        if term == "$END" and nxt == end_state:
            return True
    return False  # pragma: no cover


def _viable(stack: list[int], start: str) -> set[str]:
    """The terminals that the parser in ``stack`` can really shift next (or ``$END`` when it
    can accept): each candidate of the top state is tried on a copy of the stack through the
    reductions it triggers (:func:`_shifts`).  This removes the merged LALR lookaheads of other
    contexts."""
    t = _tables()
    end_state = t.end[start]
    return {
        term
        for term in t.states[stack[-1]]
        if (term.isupper() or term == "$END") and _shifts(stack, term, end_state)
    }


_EXPR_START = frozenset(
    "NAME NUMBER DURATION STRING LPAR LPAR_NL LSQB LSQB_NL LBRACE MINUS MINUS_NL NOT NOT_NL "
    "TRUE FALSE NULL MAP PARALLEL REDUCE AGENT VERIFY FILTER ASK".split()
)
_OPERATORS = frozenset(
    "QQ OR AND EQ NE LT LE GT GE IN NOT PLUS MINUS STAR SLASH PERCENT DOTDOT DOT".split()
)
#: tokens that can only begin an expression (not continue one as an operator or postfix)
_EXPR_START_STRICT = _EXPR_START - {"MINUS", "NOT", "LPAR", "LSQB"}
_STMT_START = frozenset("LET REQUIRE FAIL RETURN IF".split())
_CLAUSE = frozenset(
    "TASK SYSTEM MODEL INPUT TOOLS WRITE EXPECT TIMEOUT RETRY MAX_ITERATIONS".split()
)
_TOP = frozenset(k.upper() for k in TOP_LEVEL)
_PUNCT_WORDS = {v: f"`{k}`" for k, v in _OPS.items()}
_PUNCT_WORDS.update({"LPAR_NL": "`(`", "LSQB_NL": "`[`", "MINUS_NL": "`-`", "NOT_NL": "`not`"})


def _describe(tok: Any, *, article: bool = True) -> str:
    """Words for a token found where it does not belong: ``"the name `x`"`` (after "found"),
    or without the article, ``"name `x`"`` (after "unexpected")."""
    t = tok.type
    the = "the " if article else ""
    if t == "$END":
        return f"{the}end of the text"
    if t == "STRING":
        return "a string" if article else "string"
    if t == "NUMBER":
        return f"{the}number `{tok.value}`"
    if t == "DURATION":
        return f"{the}duration `{tok.value}`"
    if t == "NAME":
        return f"{the}name `{tok.value}`"
    if t in _PUNCT_WORDS:
        return _PUNCT_WORDS[t]
    return f"`{tok.value}`"


def _expected_words(expected: set[str]) -> list[str]:
    """Summarise an LALR expected-terminal set in words a person uses."""
    exp = set(expected)
    words: list[str] = []
    if _TOP & exp and len(_TOP & exp) >= 4:
        words.append("a declaration (`type`, `stage`, `use`, …)")
        exp -= _TOP
    if len(_CLAUSE & exp) >= 4:
        words.append("an agent clause (`task`, `expect`, `tools`, …)")
        exp -= _CLAUSE
    if _STMT_START <= exp:
        words.append("a statement")
        exp -= _STMT_START
        exp -= _EXPR_START
    if "MAP" in exp and "NAME" in exp and "NOT" not in exp and "MINUS" not in exp:
        words.append("a type")
        exp -= {"MAP", "NAME", "STRING", "NUMBER", "TRUE", "FALSE", "NULL", "LBRACE", "LPAR"}
        exp -= {"LPAR_NL"}
    if "NAME" in exp and len(_EXPR_START_STRICT & exp) >= 4:
        words.append("an expression")
        exp -= _EXPR_START
    ops = _OPERATORS & exp
    if "GT" in exp and "LT" not in exp:
        ops -= {"GT"}  # the `>` closing `map<T>`, not a comparison
    rest = exp - ops - {"$END", "LSQB", "LPAR", "QMARK", "PIPE", "AT"}
    for t in sorted(rest, key=_term_order):
        if t in _PUNCT_WORDS:
            words.append(_PUNCT_WORDS[t])
        elif t == "NAME":
            words.append("a name")
        elif t == "STRING":
            words.append("a string")
        elif t == "DURATION":
            words.append("a duration")
        elif t == "NUMBER":
            words.append("a number")
        else:
            words.append(f"`{t.lower()}`")
    if not words and "$END" in exp:
        words.append("the end of the text")
    if not words:
        # only a call/index bracket fits (`agent` must be followed by `(`)
        words.extend(_PUNCT_WORDS[t] for t in ("LPAR", "LSQB") if t in exp)
    if not words and ops:
        words.append("an operator")
    return words


def _term_order(t: str) -> tuple:
    order = ["RBRACE", "RSQB", "RPAR", "GT", "COMMA", "COLON", "EQUALS", "ARROW"]
    return (order.index(t) if t in order else len(order), t)


def _join_or(words: list[str]) -> str:
    words = list(dict.fromkeys(words))
    if len(words) > 5:
        words = words[:5] + ["…"]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


#: a short example of each agent clause, for the "no colon" hint
_CLAUSE_EXAMPLE = {
    "TASK": 'task "…"',
    "SYSTEM": 'system "…"',
    "MODEL": 'model "…"',
    "INPUT": "input { … }",
    "TOOLS": "tools [read_file, grep]",
    "WRITE": "write [path]",
    "EXPECT": "expect T",
    "TIMEOUT": "timeout 3m",
    "RETRY": "retry { attempts: 1 }",
    "MAX_ITERATIONS": "max_iterations 6",
}


_WORD_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(\[\s*)?$")
_TYPE_ARGS = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*([A-Za-z_][A-Za-z0-9_]*)\s*)?[>\]]")


def _generic_hint(tok: Any, expected: set[str], sc: _Scanner) -> str | None:
    """Hints for generic types written as in other languages, in a type position:
    ``list<text>`` / ``List[str]`` / ``Optional[int]`` / ``Dict[str, int]`` / ``map<text, int>``."""
    typ = tok.type
    i = tok.start - sc.ob
    if typ == "COMMA" and "GT" in expected and "LT" not in expected:
        m = _TYPE_ARGS.match(sc.text, i + 1)
        value = diag.agentflow_type_name(m.group(1)) if m else "T"
        return f"`map<T>` takes only the value type (its keys are text): `map<{value}>`"
    if typ == "LT" and "LT" not in expected:
        j = i + 1
    elif typ == "NAME" and "RSQB" in expected and "LT" not in expected:
        j = i
    else:
        return None
    before = _WORD_BEFORE.search(sc.text, max(0, i - 100), i)
    if before is None or (typ == "NAME") != bool(before.group(2)):
        return None
    m = _TYPE_ARGS.match(sc.text, j)
    args = [a for a in m.groups() if a] if m else []
    return diag.generic_type_hint(before.group(1), args)


def _syntax_hint(
    tok: Any, expected: set[str], stack: list[int], values: list | None, sc: _Scanner
) -> str | None:
    """A hint for the common slips of users of other languages, from the offending token, the
    terminals that fit (``expected``), the state stack and the tokens shifted before it."""
    typ = tok.type
    hint = _generic_hint(tok, expected, sc)
    if hint is not None:
        return hint
    prev = values[-1] if values and isinstance(values[-1], Tok) else None
    prev2 = values[-2] if values and len(values) > 1 and isinstance(values[-2], Tok) else None
    if typ == "EQUALS" and "EQ" in expected:
        return "did you mean `==`?"
    if typ == "STRING" and "COLON" in expected:
        return "object entries are written `key: value`"
    if prev is None:
        return None
    if prev.type == "AGENT" and "LPAR" in expected:
        target = tok.value if typ == "NAME" else "target"
        return f"the agent's target goes in parentheses: `agent({target}) {{ … }}`"
    if (
        typ == "COLON"
        and prev.type in _CLAUSE_EXAMPLE
        and len(stack) > 1
        and "TASK" in _tables().states[stack[-2]]
    ):
        return f"agent clauses take no colon: `{_CLAUSE_EXAMPLE[prev.type]}`"
    if (
        typ == "NAME"
        and prev.type in ("AGENT", "TEAM")
        and prev2 is not None
        and prev2.type == "USE"
        and "STRING" in expected
    ):
        kind = prev.value
        return f'the {kind} name is a string: `use {kind} "{tok.value}" as {tok.value}`'
    return None


def _unexpected(
    tok: Any, states: list[int], start: str, sc: _Scanner, values: list | None = None
) -> _SynErr:
    """The syntax error for ``tok`` found where the parser in state stack ``states`` (for the
    start symbol ``start``) cannot take it: "expected …, found …" plus notes and a hint."""
    found = _describe(tok)
    expected = _viable(states, start)
    words = _expected_words(expected)
    if tok.type == "EQUALS" and "EQ" in expected and "an operator" not in words:
        # `where e.kind = "file"`: the expression could go on with an operator (`==`)
        words.insert(0, "an operator")
    if words:
        msg = f"expected {_join_or(words)}, found {found}"
    else:
        msg = f"unexpected {_describe(tok, article=False)}"
    notes: list[tuple[str, ast.Span]] = []
    stack = sc.stack
    if stack and stack[-1] is not tok and len(words) <= 4:
        opener = stack[-1]
        closer = f"`{_OPENERS[opener.value]}`"
        if closer in words:
            # "expected `,` or `)` to close the `(` opened on line 3, found `return`"
            words = [w for w in words if w != closer] + [closer]
            msg = f"expected {_join_or(words)} to close {sc.opened(opener)}, found {found}"
            notes.append((f"{sc.opened(opener, at=False)} opened here", opener.span))
    if sc.module:
        msg = msg.replace("end of the text", "end of the file")
    elif sc.stop is not None and tok.type != "$END":
        # inside `${…}` / `{{ … }}` the text ends at the closing brace
        msg = msg.replace("the end of the text", "`}`" if sc.stop == "}" else "`}}`")
    if tok.type == "$END" or not isinstance(tok, Tok):
        last = sc.last
        if sc.stopped_at is not None:
            k = sc.stopped_at
            closer = "}" if sc.stop == "}" else "}}"
            span = sc.span_at(k, k + len(closer), sc.line, sc.ls)
            msg = msg.replace("the end of the text", f"`{closer}`")
            return _SynErr(msg, span)
        if last is not None:
            span = ast.Span(
                last.file,
                last.end_line,
                last.end_column,
                last.end_line,
                last.end_column,
                last.end,
                last.end,
            )
        else:
            span = sc.span_at(sc.pos, sc.pos, sc.line, sc.ls)
        return _SynErr(msg, span)
    hint = _syntax_hint(tok, expected, states, values, sc)
    resume = tok.end - sc.ob
    if tok.bol and tok.value in TOP_LEVEL and not isinstance(tok.value, ast.Node):
        resume = tok.start - sc.ob
    return _SynErr(msg, tok.span, resume=resume, depth=len(sc.stack), hint=hint, notes=notes)


# ---------------------------------------------------------------------------------------------
# AST building (Lark transformer callbacks, called at each LALR reduction)


class _Acc(list):
    """A list being accumulated by a left-recursive rule; ``comma`` tells whether the last
    thing added was a separating comma."""

    __slots__ = ("comma",)

    def __init__(self, *a):
        super().__init__(*a)
        self.comma = False


class _Not:
    """A prefix ``not`` waiting for precedence climbing."""

    __slots__ = ("tok", "operand")

    def __init__(self, tok, operand):
        self.tok = tok
        self.operand = operand


_PREC = {
    "??": 1,
    "or": 2,
    "and": 3,
    # 4: prefix `not`
    "==": 5,
    "!=": 5,
    "<": 5,
    "<=": 5,
    ">": 5,
    ">=": 5,
    "in": 5,
    "not in": 5,
    "..": 6,
    "+": 7,
    "-": 7,
    "*": 8,
    "/": 8,
    "%": 8,
}
_NOT_PREC = 4


def _cover(a: Any, b: Any) -> ast.Span:
    """The span from the start of ``a`` to the end of ``b`` (each a Tok or a node)."""
    if type(a) is not Tok:
        a = a.span
    if type(b) is not Tok:
        b = b.span
    return _Span(a.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)


def _operand_span(x: Any) -> ast.Span:
    if isinstance(x, _Not):
        return x.tok.span.to(_operand_span(x.operand))
    return x.span


def _climb(seq: list) -> ast.Expr:
    """Arrange ``[operand, (op, tok, tok2), operand, …]`` by precedence (LANGUAGE.md §4)."""
    if len(seq) > 2 * MAX_OPERATORS:
        raise _SynErr(
            f"expression too long (more than {MAX_OPERATORS} operators); split it with `let`",
            _operand_span(seq[0]),
        )
    pos = 0
    n = len(seq)

    def level(p: int) -> ast.Expr:
        nonlocal pos
        x = seq[pos]
        if isinstance(x, _Not):
            if p > _NOT_PREC:
                raise _SynErr(
                    "`not` needs parentheses here: write `(not …)`",
                    x.tok.span,
                )
            seq[pos] = x.operand
            inner = level(_NOT_PREC)
            left: ast.Expr = ast.Unary(x.tok.span.to(inner.span), "not", inner)
        else:
            pos += 1
            left = x
        while pos < n:
            op, t1, t2 = seq[pos]
            q = _PREC[op]
            if q < p:
                break
            pos += 1
            right = level(q + 1)
            if q in (5, 6) and pos < n and _PREC[seq[pos][0]] == q:
                what = "comparisons" if q == 5 else "ranges"
                nxt = seq[pos]
                raise _SynErr(
                    f"{what} do not chain: combine them with `and` or add parentheses",
                    nxt[1].span.to(nxt[2].span),
                )
            op_span = t1.span.to(t2.span) if t2 is not t1 else t1.span
            if op == "..":
                left = ast.RangeExpr(left.span.to(right.span), left, right)
            else:
                left = ast.Binary(left.span.to(right.span), op, left, right, op_span)
        return left

    return level(0)


def _string_value(tok: Tok, what: str) -> str:
    lit = tok.value
    if not lit.is_plain:
        raise _SynErr(f"{what} cannot contain `${{…}}` interpolation", lit.span)
    return lit.text


def _push_projection(p: ast.Projection, build, end_span: ast.Span) -> ast.Projection:
    """Extend an open projection's per-element path with ``build(inner)``."""
    inner = p.path
    if isinstance(inner, ast.Projection) and not inner.closed:
        p.path = _push_projection(inner, build, end_span)
    else:
        if inner is None:
            inner = ast.ProjectionItem(p.span)
        p.path = build(inner)
    p.span = p.span.to(end_span)
    return p


def _duration_ms(text: str) -> int:
    return sum(int(a) * _DUR_MS[u] for a, u in _DUR_PART.findall(text))


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def _sep_check(acc: _Acc, new: Any, what: str) -> None:
    """Entries without a comma must be on a new line (LANGUAGE.md §1)."""
    if acc and not acc.comma and acc[-1].span.end_line == new.span.line:
        raise _SynErr(f"expected `,` or a line break between {what}", new.span, hint=None)


def _sep_next(c: list, what: str) -> _Acc:
    """Append the entry ``c[1]`` to the list ``c[0]``, checking its separation from the last one
    (:func:`_sep_check`; ``what`` names the entries in the message)."""
    acc, new = c
    _sep_check(acc, new, what)
    acc.append(new)
    acc.comma = False
    return acc


def _comma(c: list) -> _Acc:
    """A separating comma after an entry (a second comma, or one before any entry, is an error)."""
    acc = c[0]
    if acc.comma or not acc:
        raise _SynErr("expected an entry before `,`", c[1].span)
    acc.comma = True
    return acc


class _Builder:
    """Lark transformer callbacks; each receives the children of one reduction."""

    # -- entry points / items -------------------------------------------------------------------

    def expr_only(self, c):
        return c[0]

    def module(self, c):
        return c[0]

    def items(self, c):
        if not c:
            return []
        lst = c[0]
        lst.append(c[1])
        return lst

    def flow_header(self, c):
        desc = _string_value(c[2], "a flow description") if len(c) > 2 else None
        return ast.FlowHeader(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), desc)

    def input_decl(self, c):
        return ast.InputDecl(_cover(c[0], c[1]), c[1])

    def output_decl(self, c):
        return ast.OutputDecl(_cover(c[0], c[1]), c[1])

    def deadline_decl(self, c):
        d = c[1]
        return ast.DeadlineDecl(
            _cover(c[0], d), ast.DurationLit(d.span, _duration_ms(d.value), d.value)
        )

    def use_decl(self, c):
        target = c[2]
        return ast.UseDecl(
            _cover(c[0], c[4]),
            c[1].value,
            _string_value(target, "a `use` name"),
            target.span,
            ast.Ident(c[4].span, c[4].value),
        )

    def extern_tool(self, c):
        params = c[4] if len(c) == 8 else []
        return ast.ExternTool(
            _cover(c[0], c[-1]),
            ast.Ident(c[2].span, c[2].value),
            list(params),
            c[-1],
            doc=c[0].doc,
        )

    def params(self, c):
        if len(c) == 1:
            return [c[0]]
        if c[1].type == "COMMA" and len(c) == 2:
            return c[0]
        c[0].append(c[2])
        return c[0]

    def param(self, c):
        return ast.Param(_cover(c[0], c[2]), ast.Ident(c[0].span, c[0].value), c[2])

    def extern_type(self, c):
        return ast.ExternType(_cover(c[0], c[2]), ast.Ident(c[2].span, c[2].value), doc=c[0].doc)

    def type_decl(self, c):
        return ast.TypeDecl(
            _cover(c[0], c[2]), ast.Ident(c[1].span, c[1].value), c[2], None, doc=c[0].doc
        )

    def type_alias(self, c):
        return ast.TypeDecl(
            _cover(c[0], c[3]), ast.Ident(c[1].span, c[1].value), None, c[3], doc=c[0].doc
        )

    def stage_decl(self, c):
        returns = c[3] if len(c) == 5 else None
        return ast.StageDecl(
            _cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), returns, c[-1], doc=c[0].doc
        )

    # -- types ----------------------------------------------------------------------------------

    def type(self, c):
        return c[0]

    def union_type(self, c):
        left, right = c[0], c[2]
        if isinstance(left, ast.UnionType):
            members = left.members + [right]
        else:
            members = [left, right]
        return ast.UnionType(_cover(left, right), members)

    def array_type(self, c):
        return ast.ArrayType(_cover(c[0], c[2]), c[0])

    def optional_type(self, c):
        return ast.OptionalType(_cover(c[0], c[1]), c[0])

    def named_type(self, c):
        return ast.NamedType(c[0].span, c[0].value)

    def map_type(self, c):
        return ast.MapType(_cover(c[0], c[3]), c[2])

    def literal_type(self, c):
        t = c[0]
        typ = t.type
        if typ == "STRING":
            value: Any = _string_value(t, "a literal type")
        elif typ == "NUMBER":
            value = _number(t.value)
        else:
            value = {"TRUE": True, "FALSE": False, "NULL": None}[typ]
        return ast.LiteralType(t.span, value)

    def paren_type(self, c):
        return c[1]

    def object_type(self, c):
        return ast.ObjectType(_cover(c[0], c[2]), list(c[1]))

    def fields_empty(self, c):
        return _Acc()

    def fields_first(self, c):
        return _Acc(c)

    def fields_next(self, c):
        return _sep_next(c, "fields")

    def fields_comma(self, c):
        return _comma(c)

    def field(self, c):
        name = c[0]
        constraints = c[3] if len(c) == 4 else []
        end = constraints[-1] if constraints else c[2]
        return ast.FieldDecl(
            _cover(name, end),
            ast.Ident(name.span, name.value),
            c[2],
            constraints,
            doc=name.doc,
        )

    def constraints(self, c):
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[1])
        return c[0]

    def constraint(self, c):
        args = []
        if len(c) == 5:
            for a in c[3]:
                if isinstance(a, ast.Argument):
                    raise _SynErr("constraint arguments are written without names", a.span)
                args.append(a)
        return ast.Constraint(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), args)

    # -- statements -----------------------------------------------------------------------------

    def block(self, c):
        return ast.Block(_cover(c[0], c[2]), c[1])

    def stmts(self, c):
        if not c:
            return []
        c[0].append(c[1])
        return c[0]

    def let_stmt(self, c):
        ann = c[3] if len(c) == 6 else None
        return ast.LetStmt(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), ann, c[-1])

    def require_stmt(self, c):
        return ast.RequireStmt(_cover(c[0], c[4]), c[1], c[4])

    def fail_stmt(self, c):
        return ast.FailStmt(_cover(c[0], c[1]), c[1])

    def return_stmt(self, c):
        return ast.ReturnStmt(_cover(c[0], c[1]), c[1])

    def expr_stmt(self, c):
        return ast.ExprStmt(c[0].span, c[0])

    def if_stmt(self, c):
        else_ = c[4] if len(c) == 5 else None
        return ast.IfStmt(_cover(c[0], c[-1]), c[1], c[2], else_)

    # -- control expressions --------------------------------------------------------------------

    def filter_expr(self, c):
        return ast.FilterExpr(
            _cover(c[0], c[5]), c[1], ast.Ident(c[3].span, c[3].value), c[5], None
        )

    def filter_judge(self, c):
        return ast.FilterExpr(
            _cover(c[0], c[6]), c[1], ast.Ident(c[3].span, c[3].value), None, c[6]
        )

    def ask_tail(self, c):
        expect = default = else_fail = None
        i = 0
        while i < len(c):
            t = c[i]
            if t.type == "EXPECT":
                expect = c[i + 1]
                i += 2
            elif t.type == "DEFAULT":
                default = c[i + 1]
                i += 2
            else:  # ELSE FAIL msg
                else_fail = c[i + 2]
                i += 3
        return (expect, default, else_fail, c[-1] if c else None)

    def ask_expr(self, c):
        expect, default, else_fail, last = c[2]
        end = last if last is not None else c[1]
        return ast.AskExpr(_cover(c[0], end), c[1], expect, default, else_fail)

    def map_expr(self, c):
        parallel = c[0].type == "PARALLEL"
        k = 1 if parallel else 0
        over = c[k + 1]
        var = c[k + 3]
        limit = c[k + 5] if len(c) > k + 5 else None
        return ast.MapExpr(
            _cover(c[0], c[-1]),
            parallel,
            over,
            ast.Ident(var.span, var.value),
            limit,
            c[-1],
            keyword_span=c[k].span,
        )

    def reduce_expr(self, c):
        acc_type = c[7] if len(c) == 11 else None
        return ast.ReduceExpr(
            _cover(c[0], c[-1]),
            c[1],
            ast.Ident(c[3].span, c[3].value),
            ast.Ident(c[5].span, c[5].value),
            acc_type,
            c[-2],
            c[-1],
        )

    def verify_expr(self, c):
        return ast.VerifyExpr(_cover(c[0], c[3]), c[2])

    def verify_items(self, c):
        return []

    def verify_check(self, c):
        c[0].append(ast.VerifyCheck(_cover(c[1], c[4]), c[2], c[4]))
        return c[0]

    def verify_judge(self, c):
        c[0].append(ast.VerifyJudge(_cover(c[1], c[2]), c[2]))
        return c[0]

    def agent_expr(self, c):
        return ast.AgentExpr(_cover(c[0], c[6]), c[2], c[5], c[0].span)

    def clauses(self, c):
        if not c:
            return []
        c[0].append(c[1])
        return c[0]

    def clause(self, c):
        kw = c[0]
        kind = kw.value
        if kind == "tools":
            if c[1].type == "NONE":
                value: Any = None
            else:
                value = list(c[2])
        elif kind == "retry":
            value = _retry(c[1])
        else:
            value = c[1]
        return ast.Clause(_cover(kw, c[-1]), kind, value, kw.span)

    def tool_refs_empty(self, c):
        return _Acc()

    def tool_refs_first(self, c):
        return _Acc(c)

    def tool_refs_next(self, c):
        c[0].append(c[2])
        return c[0]

    def tool_refs_comma(self, c):
        return c[0]

    def tool_ref(self, c):
        t = c[0]
        if t.type == "STRING":
            return ast.ToolRef(t.span, _string_value(t, "a tool pattern"), True)
        return ast.ToolRef(t.span, t.value, False)

    # -- operators ------------------------------------------------------------------------------

    def opexpr_single(self, c):
        x = c[0]
        if type(x) is _Not:
            return _climb([x])
        return x

    def climb(self, c):
        return _climb(c[0])

    def opseq_first(self, c):
        return c

    def opseq_next(self, c):
        seq = c[0]
        seq.append(c[1])
        seq.append(c[2])
        return seq

    def operand_not(self, c):
        inner = c[1]
        depth = 1
        x = inner
        while isinstance(x, _Not):
            depth += 1
            x = x.operand
        if depth > MAX_PREFIX:
            raise _SynErr("too many `not` in a row", c[0].span)
        return _Not(c[0], inner)

    def binop(self, c):
        t = c[0]
        if len(c) == 2:
            return ("not in", t, c[1])
        return (t.value, t, t)

    def neg(self, c):
        operand = c[1]
        if isinstance(operand, ast.Unary) and operand.op == "-":
            depth = 1
            x = operand
            while isinstance(x, ast.Unary) and x.op == "-":
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                raise _SynErr("too many `-` in a row", c[0].span)
        return ast.Unary(_cover(c[0], operand), "-", operand)

    # -- postfix --------------------------------------------------------------------------------

    def member(self, c):
        obj, name = c[0], c[2]
        nspan = name.span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Member(inner.span.to(nspan), inner, name.value, nspan), nspan
            )
        return ast.Member(obj.span.to(nspan), obj, name.value, nspan)

    def index(self, c):
        obj, idx, close = c[0], c[2], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Index(inner.span.to(close), inner, idx), close
            )
        return ast.Index(obj.span.to(close), obj, idx)

    def project(self, c):
        obj, close = c[0], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:

            def build(inner):
                return ast.Projection(inner.span.to(close), inner, None)

            return _push_projection(obj, build, close)
        return ast.Projection(obj.span.to(close), obj, None)

    def call(self, c):
        callee = c[0]
        close = c[-1].span
        named: list[ast.Argument] = []
        positional: list[ast.Expr] = []
        if len(c) == 4:
            for a in c[2]:
                (named if isinstance(a, ast.Argument) else positional).append(a)
        return ast.Call(callee.span.to(close), callee, named, positional)

    def args(self, c):
        if len(c) == 1:
            return [c[0]]
        if len(c) == 2:
            return c[0]
        c[0].append(c[2])
        return c[0]

    def named_arg(self, c):
        return ast.Argument(_cover(c[0], c[2]), c[0].value, c[0].span, c[2])

    # -- atoms ----------------------------------------------------------------------------------

    def name(self, c):
        t = c[0]
        return ast.Name(t.span, t.value)

    def number(self, c):
        t = c[0]
        return ast.NumberLit(t.span, _number(t.value))

    def duration(self, c):
        t = c[0]
        return ast.DurationLit(t.span, _duration_ms(t.value), t.value)

    def string(self, c):
        return c[0].value

    def true(self, c):
        return ast.BoolLit(c[0].span, True)

    def false(self, c):
        return ast.BoolLit(c[0].span, False)

    def null(self, c):
        return ast.NullLit(c[0].span)

    def list(self, c):
        return ast.ListLit(_cover(c[0], c[2]), list(c[1]))

    # list items are collected like tool references (comma-separated)
    items_empty = tool_refs_empty
    items_first = tool_refs_first
    items_next = tool_refs_next
    items_comma = tool_refs_comma

    def object(self, c):
        return ast.ObjectLit(_cover(c[0], c[2]), list(c[1]))

    # object entries are collected like the fields of a type
    entries_empty = fields_empty
    entries_first = fields_first
    entries_comma = fields_comma

    def entries_next(self, c):
        return _sep_next(c, "object entries")

    def entry(self, c):
        k = c[0]
        key = _string_value(k, "an object key") if k.type == "STRING" else k.value
        return ast.ObjectEntry(_cover(k, c[2]), key, k.span, c[2])

    def paren(self, c):
        e = c[1]
        if isinstance(e, ast.Projection):
            e.closed = True
        return e


def _retry(obj: ast.ObjectLit) -> ast.RetrySpec:
    """``retry { attempts: N, on: [code, …] }`` from its object-literal form (LANGUAGE.md §8)."""
    attempts = None
    on = None
    for e in obj.entries:
        if e.key == "attempts":
            attempts = e.value
        elif e.key == "on":
            if not isinstance(e.value, ast.ListLit):
                raise _SynErr("`on` takes a list of error codes: `on: [transient]`", e.value.span)
            on = []
            for item in e.value.items:
                if not isinstance(item, ast.Name):
                    raise _SynErr(
                        "an error code is a bare name such as `timeout`, `rate_limit` or "
                        "`transient`",
                        item.span,
                    )
                on.append(ast.Ident(item.span, item.name))
        else:
            raise _SynErr(
                f"unknown retry setting `{e.key}`: expected `attempts` or `on`", e.key_span
            )
    return ast.RetrySpec(obj.span, attempts, on)


# ---------------------------------------------------------------------------------------------
# Public API


def _to_source_error(e: _SynErr) -> SourceError:
    return SourceError(f"{e.span}: {e.message}", e.span, e.hint)


def parse_expression(
    text: str, file: str = "<expr>", *, line: int = 1, column: int = 1, offset: int = 0
) -> ast.Expr:
    """Parse a pure expression (LANGUAGE.md §4) such as ``E0.issues[*].id ?? []``.

    ``line``/``column``/``offset`` give the position of ``text[0]`` in the enclosing file, so the
    spans of the result are real positions there (1-based line/column, 0-based offsets).
    Line breaks are insignificant inside an expression.

    Raises :class:`agentflow.errors.SourceError` (with ``.span``) when the text does not parse.
    """
    sc = _Scanner(text, 0, len(text), file, line, 1 - column, offset)
    try:
        return _run(sc, "expr_only")
    except _SynErr as e:
        raise _to_source_error(e) from None
    except RecursionError:
        span = ast.Span(file, line, column, line, column, offset, offset)
        raise SourceError(f"{span}: expression nested too deeply", span) from None


def parse_template(
    text: str, file: str = "<template>", *, line: int = 1, column: int = 1, offset: int = 0
) -> ast.Template:
    """Split a plan string into literal text and ``{{ expr }}`` holes (PLAN_IR.md §3).

    The closing ``}}`` of a hole is the first one outside strings and brackets, so
    ``{{ {a: {b: 1}} }}`` is one hole.  A hole holding a plain string literal is folded into
    the literal text (``{{ "{{" }}`` gives a literal ``{{``).  Returns an ``ast.Template`` whose
    ``parts`` are ``str`` and ``ast.Expr``.  Raises :class:`agentflow.errors.SourceError` on an
    unclosed hole or an expression that does not parse.
    """
    parts: list = []
    n = len(text)
    i = 0
    cur_line = line
    ls = 1 - column  # virtual start index of the current line
    buf: list[str] = []
    try:
        while i < n:
            k = text.find("{{", i)
            if k < 0:
                buf.append(text[i:])
                break
            if k > i:
                buf.append(text[i:k])
            nl = text.count("\n", i, k + 2)
            if nl:
                cur_line += nl
                ls = text.rfind("\n", i, k + 2) + 1
            sc = _Scanner(text, k + 2, n, file, cur_line, ls, offset, stop="}}")
            try:
                expr = _run(sc, "expr_only")
            except _SynErr as e:
                if sc.stopped_at is None and e.message.startswith("expected `}}`"):
                    span = ast.Span(
                        file, cur_line, k - ls + 1, cur_line, k - ls + 3, k + offset, k + 2 + offset
                    )
                    raise _SynErr("unclosed `{{`: expected `}}`", span) from None
                raise
            close = sc.stopped_at
            assert close is not None
            cur_line, ls = sc.line, sc.ls
            if isinstance(expr, ast.StringLit) and expr.is_plain:
                buf.append(expr.text)
            else:
                if buf:
                    s = "".join(buf)
                    if s:
                        parts.append(s)
                    buf = []
                parts.append(expr)
            i = close + 2
    except _SynErr as e:
        raise _to_source_error(e) from None
    except RecursionError:
        span = ast.Span(file, line, column, line, column, offset, offset)
        raise SourceError(f"{span}: template nested too deeply", span) from None
    if buf:
        s = "".join(buf)
        if s:
            parts.append(s)
    end_line = line + text.count("\n")
    end_col = (n - text.rfind("\n")) if "\n" in text else column + n
    span = ast.Span(file, line, column, end_line, end_col, offset, offset + n)
    return ast.Template(span, parts)


def parse_module(text: str, file: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse a whole `.flow` file (LANGUAGE.md §1–8).

    Returns ``(module, diagnostics)``; never raises.  Each syntax error becomes a
    ``syntax-error`` diagnostic, the top-level item it occurred in becomes ``ast.ErrorItem``
    (named when the name is known), and parsing resumes at the next top-level keyword that
    starts a line.
    """
    # The parse allocates many small objects and no cycles; pausing the cyclic collector
    # for its duration is a large speed-up on big files.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_module(text, file)
    except Exception as e:  # pragma: no cover - last-resort guard: never raise
        span = ast.Span(file, 1, 1, 1, 1, 0, 0)
        diag = Diagnostic(
            SYNTAX_ERROR, f"the parser failed on this file ({type(e).__name__})", span
        )
        return ast.Module(span, file, [ast.ErrorItem(span)]), [diag]
    finally:
        if was_enabled:
            gc.enable()


def _parse_module(text: str, file: str) -> tuple[ast.Module, list[Diagnostic]]:
    if not isinstance(text, str):  # pragma: no cover - defensive
        text = str(text)
    items: list[ast.Item] = []
    diags: list[Diagnostic] = []
    n = len(text)
    pos, line, ls = 0, 1, 0
    lines = _Lines(text)  # the error path asks for many line numbers
    while True:
        values: list = []
        sc = _Scanner(text, pos, n, file, line, ls, 0, module=True)
        err: _SynErr | None = None
        try:
            got = _run(sc, "module", values)
        except _SynErr as e:
            err = e
        except RecursionError:
            err = _SynErr("nested too deeply", sc.span_at(sc.pos, sc.pos, sc.line, sc.ls))
        if err is not None:
            # the items completed before the error are the list at the bottom of the stack
            got = values[0] if values and isinstance(values[0], list) else []
        items.extend(got)
        if err is None:
            break
        notes = [Note(m, s) for m, s in err.notes]
        diags.append(Diagnostic(SYNTAX_ERROR, err.message, err.span, notes, hint=err.hint))
        # the failed item starts at the first token after the last completed one
        start = got[-1].span.end if got else pos
        start = _SKIP_TRIVIA.match(text, start).end()
        resume = _find_resume(text, file, err, sc, start, lines)
        end = resume if resume is not None else n
        stop = len(text[start:end].rstrip())
        item_end = max(start + stop, min(err.span.end, n), start)
        items.append(
            ast.ErrorItem(
                _offset_span(text, file, start, item_end, lines), _item_name(text, start, lines)
            )
        )
        if resume is None:
            break
        pos = resume
        line = lines.line(pos)
        ls = text.rfind("\n", 0, pos) + 1
    if items:
        span = _offset_span(text, file, 0, n)
    else:
        span = ast.Span(file, 1, 1, 1, 1, 0, 0)
    return ast.Module(span, file, items), diags


class _Lines:
    """1-based line numbers of offsets in ``text``, by bisection over its newline offsets (listed
    on first use).  Error recovery asks for one per error: counting newlines from the start
    each time made a file with an error on every line quadratic."""

    __slots__ = ("_nl", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._nl: list[int] | None = None

    def line(self, i: int) -> int:
        """The line of offset ``i`` (``text.count("\\n", 0, i) + 1``)."""
        nl = self._nl
        if nl is None:
            nl = self._nl = [m.start() for m in re.finditer("\n", self.text)]
        return bisect_left(nl, i) + 1


def _offset_span(text: str, file: str, i: int, j: int, lines: _Lines | None = None) -> ast.Span:
    if lines is not None:
        line, end_line = lines.line(i), lines.line(j)
    else:
        line = text.count("\n", 0, i) + 1
        end_line = line + text.count("\n", i, j)
    ls = text.rfind("\n", 0, i) + 1
    els = text.rfind("\n", 0, j) + 1 if end_line != line else ls
    return ast.Span(file, line, i - ls + 1, end_line, j - els + 1, i, j)


def _raw_tokens(text: str, file: str, i: int, lines: _Lines | None = None):
    """Tokens from ``i`` without a parser (keywords by spelling); lexical errors skip a line."""
    n = len(text)
    if lines is None:
        lines = _Lines(text)
    line = lines.line(i)
    ls = text.rfind("\n", 0, i) + 1
    while i < n:
        sc = _Scanner(text, i, n, file, line, ls, 0, module=False)
        try:
            yield from sc.tokens(None, None)
            return
        except _SynErr:
            # keep going on the next line
            k = text.find("\n", max(sc.pos, i) + 1)
            if k < 0:
                return
            i = k + 1
            line = lines.line(i)
            ls = i
        except RecursionError:  # pragma: no cover
            return


def _find_resume(
    text: str, file: str, err: _SynErr, sc: _Scanner, item_start: int, lines: _Lines | None = None
) -> int | None:
    """Where parsing resumes after ``err``: the next line-start top-level keyword at bracket
    depth 0 (or a strong keyword like ``stage x`` at any depth) after the failed item's start."""
    n = len(text)
    if err.resume is not None:
        i = err.resume
        depth = err.depth if err.depth is not None else len(sc.stack)
    else:
        k = text.find("\n", min(err.span.end, n) if err.span.file == file else sc.pos)
        if k < 0:
            return None
        i = k + 1
        depth = err.depth if err.depth is not None else len(sc.stack)
    i = max(i, item_start + 1)
    if i >= n:
        return None
    # is `i` itself at the start of a line?
    prev_nl = text.rfind("\n", 0, i)
    bol = not text[prev_nl + 1 : i].strip()
    first = True
    for tok in _raw_tokens(text, file, i, lines):
        at_bol = tok.bol
        if first and text.find("\n", i, tok.start - sc.ob) < 0:
            # the first token shares its line with the resume point
            at_bol = bol and tok.bol
        first = False
        v = tok.value
        if at_bol and isinstance(v, str) and v in TOP_LEVEL and tok.start > item_start:
            if depth <= 0:
                return tok.start
            if v in _STRONG and _WORD_AFTER.match(text, tok.end, n):
                return tok.start
        t = tok.type
        if t in ("LPAR", "LSQB", "LBRACE", "LPAR_NL", "LSQB_NL"):
            depth += 1
        elif t in ("RPAR", "RSQB", "RBRACE"):
            depth = max(0, depth - 1)
    return None


def _item_name(text: str, start: int, lines: _Lines | None = None) -> str | None:
    """The declared name of the (broken) item at ``start``, when it can be seen."""
    toks = []
    for tok in _raw_tokens(text, "<name>", start, lines):
        toks.append(tok)
        if len(toks) >= 6:
            break
    if not toks or not isinstance(toks[0].value, str):
        return None
    kw = toks[0].value
    words = [t.value if isinstance(t.value, str) else None for t in toks]
    if kw in ("stage", "type", "flow") and len(toks) > 1 and _IDENT.fullmatch(words[1] or ""):
        return words[1]
    if kw == "extern" and len(toks) > 2 and _IDENT.fullmatch(words[2] or ""):
        return words[2]
    if kw == "use" and "as" in words:
        k = words.index("as")
        if k + 1 < len(words) and _IDENT.fullmatch(words[k + 1] or ""):
            return words[k + 1]
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
