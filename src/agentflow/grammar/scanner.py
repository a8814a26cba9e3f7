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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol

from agentflow.core.diagnostics import Replacement
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    AGENT_CLAUSES,
    CALL_CLAUSE_WORDS,
    MAX_NESTING,
    MAX_STRING_NESTING,
    NOT_A_MATCH_SUBJECT,
    TOP_LEVEL_WORDS,
)
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.core.vocabulary import RESERVED_WORDS as _RESERVED
from agentflow.grammar import ast
from agentflow.grammar.division import floor_hint
from agentflow.grammar.habit_fixes import foreign_fix

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
]

# ---------------------------------------------------------------------------------------------
# Tokens


#: Keywords that start a top-level item (recovery points).
TOP_LEVEL = frozenset(TOP_LEVEL_WORDS)
#: Top-level keywords that can never start a line inside a body when followed by a word,
#: a string or a number on the same line (so they end an unclosed item): not those that are
#: agent clauses too (``input``, ``budget``).
STRONG = TOP_LEVEL - set(AGENT_CLAUSES) - {"test"}

OPS: dict[str, str] = {
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
    "=>": "FATARROW",
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
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}

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
  | (?P<op>\.\.|\?\?|==|=>|!=|<=|>=|->|[-+*/%<>=.,:(){}\[\]|?@])
  | (?P<eof>\Z)
   )
    """,
    re.VERBOSE,
)
#: group number → kind (leading blanks are part of every match; the group is the token)
_GROUP_NAMES = {_idx: _name for _name, _idx in _TOKEN_RE.groupindex.items()}
_KIND: tuple[str, ...] = tuple(_GROUP_NAMES.get(g, "") for g in range(_TOKEN_RE.groups + 1))
#: an interpolation that is a name or a chain of field reads, written without blanks
_SIMPLE_HOLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
_BLANKS = re.compile(r"[ \t\r\f\v\ufeff]*")
_PLAIN_STR = re.compile(r'"([^"\\$\n]*)"')
_STR_SPECIAL = re.compile(r'["\\\n$]')
_STR3_SPECIAL = re.compile(r'"""|[\\\n$]')
_COLON_AFTER = re.compile(r"[ \t]*:(?!:)")
#: ``match`` is the keyword of a ``match`` expression only when its subject follows on the same
#: line (a word, a string, a number, ``(`` or ``[`` after a blank, not an operator word): the
#: library function ``match(s, re)`` and a variable named ``match`` stay names
#: (docs/decisions.md "match").  A prefix ``not`` (not of ``not in``) starts a subject too, and a
#: prefix ``-`` written against its operand when a ``{`` follows on the line (``match -x {``;
#: ``match - 1`` and ``match -1`` without a ``{`` are arithmetic on a variable ``match``).
_OPERAND = r"[A-Za-z_0-9\"(\[]"
MATCH_AFTER = re.compile(
    rf"[ \t]+(?:(?!(?:{'|'.join(NOT_A_MATCH_SUBJECT)})\b){_OPERAND}"
    rf"|not[ \t]+(?!in\b)(?:{_OPERAND}|-)"
    rf"|-{_OPERAND}[^\n{{]*\{{)"
)
WORD_AFTER = re.compile(r"[ \t]+(?:[A-Za-z_0-9\"])")
#: ``test`` is a common variable name (``test in cases``): it ends an unclosed item only when a
#: string follows it (``test "name" {``).
_STRING_AFTER = re.compile(r"[ \t]+\"")


def starts_declaration(value: str, text: str, end: int, n: int) -> bool:
    """True when the keyword ``value`` at the start of a line, ending at ``end`` of ``text``
    (``n`` long), can only start a new top-level declaration (so it ends an unclosed item)."""
    if value == "test":
        return _STRING_AFTER.match(text, end, n) is not None
    return value in STRONG and WORD_AFTER.match(text, end, n) is not None


class Tok:
    """A token as the Lark parser sees it (``type``) plus its source position.

    ``value`` is the matched text, except for STRING tokens in parse mode, whose value is an
    ``ast.StringLit``.  ``doc`` holds the ``///`` comment lines immediately before the token, if
    any (``module`` scanners); ``bol`` is True on the first token of a line.
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

    def __init__(
        self,
        type: str,
        value: str | ast.StringLit,
        start: int,
        end: int,
        line: int,
        column: int,
        end_line: int,
        end_column: int,
        file: str,
    ) -> None:
        self.type = type
        self.value = value
        self.start = start
        self.end = end
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column
        self.file = file
        self.doc: str | None = None
        self.bol = False

    @property
    def span(self) -> Span:
        return Span(
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
    (re.compile(r"\b(map|reduce|loop)\b.*\bas\b(?:[^{]*|.*\}\s*)$"), "the `{0}` body"),
    (re.compile(r"\belse\s*$"), "the `else` block"),
    (re.compile(r"\bcatch\b[^{]*$"), "the `catch` block"),
    (re.compile(r"\btry\s*$"), "the `try` block"),
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


#: the operators of other languages that are no token of `.flow`, and what `.flow` writes
#: (docs/reference/expressions.md "Coming from another language")
_FOREIGN_CHARACTERS = {
    "&": "`.flow` writes `a and b` for `a && b`",
    "!": "`.flow` writes `not a` for `!a` (`!=` is the one operator with `!`)",
    "~": "`.flow` writes `not a` for a negation; a regular expression is `matches(s, re)`",
    ";": "`.flow` ends a statement at the end of its line: drop the `;`",
}


def _single_quoted(text: str, i: int, n: int) -> str | None:
    """The hint for a ``'`` at ``i``: a string (an import path too) is written in double
    quotes — with the text it quotes when a ``'`` closes it on the same line."""
    if text[i] == "`":
        return 'a string is written in double quotes, and any string interpolates: `"hi ${name}"`'
    if text[i] != "'":
        return None
    end = text.find("'", i + 1, n)
    line_end = text.find("\n", i, n)
    if end != -1 and (line_end == -1 or end < line_end) and '"' not in text[i + 1 : end]:
        return f'a string is written in double quotes: `"{text[i + 1 : end]}"`'
    return 'a string is written in double quotes: `"…"`'


def _badnum_hint(written: str) -> str:
    """The fix of a word that starts like a number: ``1e3`` (no exponents), ``5min``, ``12px``."""
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?[eE][0-9]+", written):
        return "a number has no exponent in `.flow`: write its digits (`1e3` is `1000`)"
    return (
        "a number is digits with an optional fraction (`12`, `0.5`); a duration is a number "
        "with its unit `ms`, `s`, `m` or `h` right after it"
    )


class SynErr(Exception):
    """Internal syntax error: message, primary span, and where recovery may start scanning
    (``resume``: text index, ``depth``: bracket depth there), when known.  ``unclosed`` is
    set on an unclosed bracket found at a new declaration or at the end of a module:
    ``(open brackets, text index of the keyword or of the end)``, for
    :func:`agentflow.grammar.unclosed.locate_unclosed` to find where it should close."""

    def __init__(
        self,
        message: str,
        span: Span,
        resume: int | None = None,
        depth: int | None = None,
        hint: str | None = None,
        notes: list[tuple[str, Span]] | None = None,
        unclosed: tuple[list[Tok], int] | None = None,
        fix: Replacement | None = None,
        code: str = "syntax-error",
    ):
        super().__init__(message)
        self.code = code  # ``reserved-name`` when the mistake is a name (``let filter``)
        self.fix = fix  # the one exact edit ``hint`` states, when it is one
        self.message = message
        self.span = span
        self.resume = resume
        self.depth = depth
        self.hint = hint
        self.notes = notes or []
        self.unclosed = unclosed


# ---------------------------------------------------------------------------------------------
# The scanner


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
        docstring).
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
        raw = self.raw
        trivia = self.trivia
        shifts = self.driver.shifts if states is not None and self.driver is not None else None
        match = _TOKEN_RE.match
        bol = True
        doc: list[str] | None = None
        while i < n:
            m = match(text, i, n)
            if m is None:
                blanks = _BLANKS.match(text, i, n)
                assert blanks is not None  # it matches the empty string
                i = blanks.end()
                if raw:
                    col = i - ls + 1
                    tok = Tok("ERROR", text[i], i + ob, i + 1 + ob, line, col, line, col + 1, file)
                    tok.bol = bol
                    bol = False
                    i += 1
                    self.last = tok
                    self.pos = i
                    self.line, self.ls = line, ls
                    yield tok
                    continue
                ch = text[i]
                shown = repr(ch)[1:-1] if not ch.isprintable() else ch
                width = 2 if text.startswith(ch * 2, i) and ch in "&" else 1
                err = self.error(
                    f"unexpected character `{shown}`",
                    i,
                    i + width,
                    line,
                    ls,
                    resume=i + width,
                    depth=len(stack),
                    hint=_FOREIGN_CHARACTERS.get(ch) or _single_quoted(text, i, n),
                )
                err.fix = foreign_fix(text, i, i + width, err.span) if err.hint else None
                raise err
            g = m.lastindex or 0  # never None: some group, `eof` at least, matched
            kind = _KIND[g]
            i, j = m.span(g)
            if kind == "word":
                value = text[i:j]
                typ = KEYWORDS.get(value)
                if typ is None:
                    typ = "NAME"
                else:
                    if bol and module:
                        if stack and starts_declaration(value, text, j, n):
                            opener = stack[-1]
                            self.line, self.ls = line, ls
                            raise SynErr(
                                f"expected `{OPENERS[str(opener.value)]}` to close "
                                f"{self.opened(opener)} before `{value}` "
                                f"starts a new declaration",
                                opener.span,
                                resume=i,
                                depth=0,
                                unclosed=(list(stack), i),
                            )
                        if typ == "NOT" and (not stack or stack[-1].value == "{"):
                            typ = "NOT_NL"
                    if states is not None and not (
                        bol and module and not stack and value in TOP_LEVEL
                    ):
                        assert state_stack is not None and shifts is not None  # given with states
                        st = states[state_stack[-1]]
                        if typ in st:
                            if "NAME" in st and (
                                _COLON_AFTER.match(text, j, n)
                                or (value not in _RESERVED and not shifts(state_stack, typ))
                                or (
                                    # a tool call's clause never starts a line where a
                                    # statement could start: there it is a name
                                    bol
                                    and value in CALL_CLAUSE_WORDS
                                    and shifts(state_stack, "NAME")
                                )
                                # `sleep(` calls a tool named sleep (`sleep 5m` sleeps)
                                or (value == "sleep" and text.startswith("(", j))
                                # `match(s, re)` is the library function, `match + 1` a name
                                or (value == "match" and not MATCH_AFTER.match(text, j, n))
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
                typ = OPS[value]
                if value in OPENERS:
                    if bol and module and value != "{" and (not stack or stack[-1].value == "{"):
                        typ = _NL_VARIANT[typ]
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
                    if len(stack) >= MAX_NESTING and not raw:
                        raise self.error(
                            f"brackets nested too deeply (more than {MAX_NESTING} levels)",
                            i,
                            j,
                            line,
                            ls,
                        )
                    stack.append(tok)
                elif value in CLOSERS:
                    if stack and stack[-1].value == CLOSERS[value]:
                        stack.pop()
                    elif raw:
                        # unbalanced: close the innermost matching bracket, if any is open
                        k = len(stack) - 1
                        while k >= 0 and stack[k].value != CLOSERS[value]:
                            k -= 1
                        if k >= 0:
                            del stack[k:]
                        elif stop is not None and value == "}":
                            self.stopped_at = i
                            break
                    elif not stack:
                        if stop is not None and value == "}":
                            if stop == "}" or text.startswith("}}", i):
                                self.stopped_at = i
                                break
                        raise self.error(
                            f"unexpected `{value}`: there is no open `{CLOSERS[value]}` to close",
                            i,
                            j,
                            line,
                            ls,
                            resume=j,
                            depth=0,
                        )
                    else:
                        opener = stack.pop()
                        raise self.error(
                            f"expected `{OPENERS[str(opener.value)]}` to close "
                            f"{self.opened(opener)}, found `{value}`",
                            i,
                            j,
                            line,
                            ls,
                            resume=j,
                            depth=len(stack),
                            notes=[(f"{self.opened(opener, at=False)} opened here", opener.span)],
                        )
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
                else:
                    if bol and module and typ == "MINUS" and (not stack or stack[-1].value == "{"):
                        typ = "MINUS_NL"
                    tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
            elif kind == "nl":
                if trivia:
                    self.pos = j
                    yield Tok("NL", "\n", i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
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
                if raw:
                    j = self.skip_string(i, line, ls, kind == "str3")
                    tok = Tok(
                        "STRING",
                        text[i:j],
                        i + ob,
                        j + ob,
                        line,
                        i - ls + 1,
                        self.line,
                        j - self.ls + 1,
                        file,
                    )
                else:
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
                        "STRING",
                        lit,
                        i + ob,
                        j + ob,
                        line,
                        sp.column,
                        sp.end_line,
                        sp.end_column,
                        file,
                    )
                line, ls = self.line, self.ls
            elif (kind == "num" or kind == "dur") and j - i > 100 and not raw:
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
            elif kind in ("doc", "comment") and stop == "}" and not raw and "}" in text[i:j]:
                # `"${7 // 2}"`: Python's integer division, read as a comment that hides the `}`
                message = "`//` starts a comment and cannot be inside `${…}`"
                hint = floor_hint(text[text.rfind("${", 0, i) + 2 : i], text[i + 2 : j])
                raise self.error(message, i, i + 2, line, ls, hint=hint)
            elif kind == "doc" or kind == "comment":
                if module and kind == "doc":
                    d = text[i:j][3:]
                    if d.startswith(" "):
                        d = d[1:]
                    if doc is None:
                        doc = [d.rstrip()]
                    else:
                        doc.append(d.rstrip())
                if trivia:
                    self.pos = j
                    tok = Tok(
                        kind.upper(),
                        text[i:j],
                        i + ob,
                        j + ob,
                        line,
                        i - ls + 1,
                        line,
                        j - ls + 1,
                        file,
                    )
                    tok.bol = bol
                    yield tok
                i = j
                continue
            elif kind == "block":
                k = text.find("*/", j, n)
                if k < 0:
                    raise self.error(
                        "unterminated comment: `/*` has no closing `*/`", i, j, line, ls
                    )
                k += 2
                line0, ls0 = line, ls
                nl = text.count("\n", i, k)
                if nl:
                    line += nl
                    ls = text.rfind("\n", i, k) + 1
                if trivia:
                    self.pos = k
                    tok = Tok(
                        "BLOCK",
                        text[i:k],
                        i + ob,
                        k + ob,
                        line0,
                        i - ls0 + 1,
                        line,
                        k - ls + 1,
                        file,
                    )
                    tok.bol = bol
                    yield tok
                i = k
                continue
            elif raw:  # badnum
                tok = Tok(
                    "BADNUM", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file
                )
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
                    hint=_badnum_hint(text[i:j]),
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
        if stack and not raw:
            opener = stack[-1]
            raise SynErr(
                f"expected `{OPENERS[str(opener.value)]}` to close {self.opened(opener)}, "
                f"found the end of the {'file' if module else 'text'}",
                opener.span,
                unclosed=(list(stack), i) if module else None,
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
        pieces: list[Any] = []
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


def _unclosed_hole(e: SynErr, opener: Span, sub: Scanner) -> SynErr:
    """The error of an interpolation whose parse failed with ``e``. When the parser wanted its
    closing `}` and gave up on a later line (a triple-quoted string runs on: ``${name``, text),
    the interpolation is unclosed: reported at the `${` (what a reader must fix), with the place
    the parser stopped as a note. Otherwise ``e`` gains a note at the `${`."""
    wants_close = "`}`" in e.message and not sub.stack
    if e.message.startswith("unterminated string") and not sub.stack:
        # `"a ${x"`: the quote meant to end the string starts one inside the interpolation
        return SynErr(
            "unclosed `${`: the interpolation opened here has no `}`",
            opener,
            resume=e.resume,
            depth=e.depth,
            hint="close it with `}` (`${name}`), or write `\\${` for a literal `${`",
            notes=[("this quote starts a string inside the interpolation", e.span)],
        )
    if wants_close and e.span.line > opener.line:
        return SynErr(
            f"unclosed `${{`: the interpolation opened here is not closed on line {opener.line}",
            opener,
            resume=e.resume,
            depth=e.depth,
            hint="close it with `}` (`${name}`), or write `\\${` for a literal `${`",
            notes=[(f"the parser stopped here: {e.message}", e.span), *e.notes],
        )
    if wants_close:
        e.notes.append(("the interpolation opened here", opener))
    return e


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


#: token types of the trivia that raw mode yields with ``trivia=True``
TRIVIA = frozenset({"COMMENT", "DOC", "BLOCK", "NL"})
#: the comment token types among them
COMMENTS = frozenset({"COMMENT", "DOC", "BLOCK"})


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
