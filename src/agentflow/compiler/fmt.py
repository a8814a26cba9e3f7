"""`flowc fmt`: the canonical layout of `.flow` source (docs/spec/LANGUAGE.md §1, §10 "fmt never
changes meaning").

The formatter works on tokens — the raw mode of the parser's scanner, comments kept — in the
manner of ``gofmt``: it keeps the author's line breaks (they are significant in `.flow`, see the
newline rule of §1) and rewrites everything else.

- Indentation is two spaces per open bracket *line* (a line opening ``({`` indents the next
  line once); a line starting with closers is aligned with the line that opened them.  A
  continuation line (one starting with ``else`` after a line not ending in ``}``, or with a
  binary operator or ``then``, or following a line that ends with one or with ``=`` or a
  ``match`` arm's ``=>``) gets one more level.
- Spacing between tokens is canonical: one space around binary operators, ``=``, ``->`` and
  ``|``, after ``,`` and ``:``, inside ``{ … }`` on one line; none inside ``( )``/``[ ]``, around
  ``.``/``..``, before ``?`` (optional types), ``[`` (index, ``T[]``) and ``(`` after a name.
- A ``{ … }`` that spans lines has its braces on lines of their own (a break after ``{`` and
  before ``}``); a stage body always does.  One-line blocks elsewhere stay (``if a { … } else
  { … }``, ``{ a: 1 }``, ``type T { a: int }``).
- Runs of blank lines become one blank line; blank lines after an opening bracket, before a
  closing one, and at the start and end of the file are removed; the file ends with one ``\\n``.
- Comments, doc comments (``///``), block comments and every string literal (including the
  lines of ``\"\"\"`` strings and their interpolations) are kept byte for byte (trailing blanks
  of comment lines removed).

Safety: a file with syntax errors is not formatted (:class:`FormatError`), and the result is
re-parsed and compared with the original AST (spans aside) — if they differ, the formatter
raises :class:`FormatError` instead of changing meaning (the "AST equivalence" check of
Black).  ``format_source(format_source(x)) == format_source(x)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentflow.compiler.api import read_source
from agentflow.core.vocabulary import GENERIC_TYPES, KEYWORDS, NOT_A_MATCH_SUBJECT
from agentflow.errors import FormatError
from agentflow.grammar import ast
from agentflow.grammar.scanner import SynErr, lex

__all__ = ["FormatError", "format_source", "format_file", "ast_key", "tokenize", "Token"]

INDENT = "  "

#: keywords that end a value (so a following ``(``/``[``/``-`` continues it)
_VALUE_WORDS = frozenset({"true", "false", "null", "input"})

_BINARY = frozenset(
    {"??", "==", "!=", "<", "<=", ">", ">=", "+", "*", "/", "%", "=", "->", "|", "and", "or"}
)
#: tokens that cannot start a statement, so a line starting with one continues the previous
_CONT_START = frozenset(
    {"??", "==", "!=", "<=", ">=", "+", "*", "/", "%", "->", "|", "and", "or", ".", "..", "where"}
    | {"then"}  # `stub … returns A` / `then B` on the next lines
)
#: tokens that cannot end an expression, so the next line continues this one
_CONT_END = frozenset(
    {
        "??",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "+",
        "-",
        "*",
        "/",
        "%",
        "=",
        "=>",  # a `match` arm whose value is on the next line
        "->",
        "then",
        "|",
        "and",
        "or",
        "..",
        ".",
    }
)


@dataclass(slots=True)
class Token:
    """A formatter token: ``kind`` is ``word``, ``num``, ``str``, ``op``, ``comment``, ``doc``,
    ``block``, ``nl`` or ``other``; ``text`` is verbatim (a comment's without trailing blanks);
    ``start``/``end`` are character offsets."""

    kind: str
    text: str
    start: int
    end: int


#: scanner token type → formatter kind (keywords are words, every other type an operator)
_KINDS = {
    "NAME": "word",
    "NUMBER": "num",
    "DURATION": "num",
    "BADNUM": "num",
    "STRING": "str",
    "COMMENT": "comment",
    "DOC": "doc",
    "BLOCK": "block",
    "NL": "nl",
    "ERROR": "other",
}


def tokenize(text: str) -> list[Token]:
    """Split `.flow` source into formatter tokens (whitespace dropped, newlines kept as ``nl``).

    The tokens are the raw mode of the parser's own scanner
    (:func:`agentflow.grammar.scanner.lex`): strings (with their interpolations) and block
    comments are single tokens.  Raises :class:`FormatError` on an unterminated string,
    interpolation or comment."""
    out: list[Token] = []
    try:
        for t in lex(text):
            value = t.value
            assert isinstance(value, str)  # raw mode: a STRING token's value is its text too
            kind = _KINDS.get(t.type) or ("word" if value in KEYWORDS else "op")
            if kind == "comment" or kind == "doc":
                value = value.rstrip()
            out.append(Token(kind, value, t.start, t.end))
    except SynErr as e:
        raise FormatError(e.message, e.span) from None
    return out


# ---------------------------------------------------------------------------------------------
# layout


def _is_code(t: Token) -> bool:
    return t.kind not in ("comment", "doc", "block", "nl")


class _Layout:
    """Per-token context computed once: which ``<``/``>`` are type brackets, which words are
    keywords, which ``-`` are unary.  ``names`` holds the start offsets of keyword-spelled words
    the parser read as a value (``output[*]`` in an eval, ``let step = …`` then ``step[0]``):
    those end a value like any name, so no space goes before their ``[``/``(``."""

    def __init__(self, toks: list[Token], names: frozenset[int] = frozenset()) -> None:
        self.toks = toks
        self.angle: set[int] = set()
        self.keyword: set[int] = set()
        self.unary: set[int] = set()
        #: the ``%`` of a percentage (``tolerate 20%``, ``threshold 80%``), against its number
        self.percent: set[int] = set()
        code = [k for k, t in enumerate(toks) if _is_code(t)]
        opened: list[int] = []
        for pos, k in enumerate(code):
            t = toks[k]
            prev = toks[code[pos - 1]] if pos else None
            nxt = toks[code[pos + 1]] if pos + 1 < len(code) else None
            if t.kind == "word":
                after_dot = prev is not None and prev.text == "."
                before_colon = nxt is not None and nxt.text == ":"
                if (
                    t.text in KEYWORDS
                    and not after_dot
                    and not before_colon
                    and t.start not in names
                ):
                    if t.text == "sleep" and not self._sleep_statement(k, nxt):
                        continue
                    self.keyword.add(k)
            elif (
                t.text == "<"
                and prev is not None
                and prev.text in _ANGLE_OPENERS  # `map<T>`, `Outcome<T>`
                and (pos < 2 or toks[code[pos - 2]].text != ".")
            ):
                self.angle.add(k)
                opened.append(k)
            elif t.text == ">" and opened:
                self.angle.add(k)
                opened.pop()
            elif t.text == "%" and prev is not None and prev.kind == "num" and pos >= 2:
                if toks[code[pos - 2]].text in ("tolerate", "threshold"):
                    self.percent.add(k)
            elif t.text == "-":
                if prev is None or not self.value_end(code[pos - 1]):
                    self.unary.add(k)

    def _sleep_statement(self, k: int, nxt: Token | None) -> bool:
        """Whether the word ``sleep`` at token ``k`` is the ``sleep`` statement: it starts a
        statement and no ``(`` follows it directly.  Elsewhere ``sleep`` is a name (a tool called
        ``sleep``), printed without a space before its ``(`` — a space at a statement's start
        would make it the statement (docs/reference/statements.md#sleep)."""
        if nxt is not None and nxt.text == "(" and nxt.start == self.toks[k].end:
            return False
        j = k - 1
        while j >= 0 and self.toks[j].kind in ("comment", "doc", "block"):
            j -= 1
        return j < 0 or self.toks[j].kind == "nl" or self.toks[j].text in ("{", "}", ";")

    def value_end(self, k: int) -> bool:
        """True when token ``k`` can end a value (so an operator after it is binary)."""
        t = self.toks[k]
        if t.kind == "word":
            return k not in self.keyword or t.text in _VALUE_WORDS
        if t.kind in ("num", "str"):
            return True
        if t.text in (")", "]", "}", "?"):
            return True
        return t.text == ">" and k in self.angle

    def space(self, a: int, b: int) -> str:
        """The canonical separator between code or comment tokens ``a`` and ``b`` on one line."""
        p, c = self.toks[a], self.toks[b]
        pt, ct = p.text, c.text
        if c.kind in ("comment", "doc"):
            return " "
        if p.kind == "block" and ct in (",", ")", "]", ";"):
            return ""  # `a: int /* inline */, b`: the comment stays against what it precedes
        if c.kind == "block" and pt in ("(", "["):
            return ""
        if p.kind == "block" or c.kind == "block":
            return " "
        if pt in ("(", "[") or ct in (")", "]", ",", ":", "."):
            return ""
        if pt == "." or pt == ".." or ct == "..":
            return ""
        if pt in (",", ":"):
            return " "
        if ct == "?":
            return " " if pt == "?" else ""  # `T? ?` must not become the `??` operator
        if pt == "@" or b in self.percent:
            return ""
        if b in self.angle or a in self.angle and pt == "<":
            return ""
        if pt == "{":
            return "" if ct == "}" else " "
        if ct == "}":
            return " "
        if pt == "-" and a in self.unary:
            # a unary minus stays against its operand (`-x`, `-(x)`, `-[x][0]`: `- (x)` after
            # `match` would read as subtraction from a name `match`), but `- -x` keeps its
            # blank so it cannot read as a `--` operator
            return " " if ct == "-" else ""
        if ct == "[" or ct == "(":
            if ct == "(" and p.kind == "word" and pt == "agent":
                return ""
            return "" if self.value_end(a) else " "
        return " "


#: code tokens after which a ``{`` starts an inline object type, not a stage body
#: the names whose `<` opens a type argument, not a comparison
_ANGLE_OPENERS = frozenset({"map", *GENERIC_TYPES})
_TYPE_BRACE_AFTER = frozenset({"->", "|", "(", "<", ":", ","})


def _starts_subject(toks: list[Token], k: int) -> bool:
    """Whether ``toks[k]``, after ``match`` and a blank, starts its subject (the scanner's
    ``MATCH_AFTER``): a word other than an operator word, a string, a number, ``(``, ``[``;
    ``not`` but not ``not in``; a ``-`` written against its operand."""
    t = toks[k]
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    if t.kind == "word" and t.text == "not":
        return nxt is not None and nxt.text != "in"
    if t.kind == "op" and t.text == "-":
        return (
            nxt is not None
            and nxt.start == t.end
            and (nxt.kind in ("word", "str", "num") or nxt.text in ("(", "["))
        )
    return (t.kind in ("word", "str", "num") or t.text in ("(", "[")) and (
        t.text not in NOT_A_MATCH_SUBJECT
    )


def _match_braces(toks: list[Token]) -> dict[int, list[int]]:
    """The ``{`` of each ``match`` (the first ``{`` after the keyword at its bracket depth) →
    the indices of the commas directly inside it, which end its arms."""
    out: dict[int, list[int]] = {}
    depth = 0
    waiting: list[int] = []  # bracket depths of `match` keywords whose `{` is still to come
    inside: list[tuple[int, int]] = []  # (index of a match's `{`, its depth)
    prev: Token | None = None
    for k, t in enumerate(toks):
        if t.kind == "word" and t.text == "match" and (prev is None or prev.text != "."):
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            if (
                nxt is not None
                and nxt.start > t.end  # a blank between: `match(s, re)` is the function
                and _starts_subject(toks, k + 1)
            ):
                waiting.append(depth)
        elif t.kind == "op" and t.text in ("(", "[", "{"):
            if t.text == "{" and waiting and waiting[-1] == depth:
                waiting.pop()
                out[k] = []
                inside.append((k, depth + 1))
            depth += 1
        elif t.kind == "op" and t.text in (")", "]", "}"):
            depth -= 1
            if inside and inside[-1][1] == depth + 1 and t.text == "}":
                inside.pop()
        elif t.kind == "op" and t.text == "," and inside and inside[-1][1] == depth:
            out[inside[-1][0]].append(k)
        if _is_code(t):
            prev = t
    return out


def _break_blocks(toks: list[Token]) -> list[Token]:
    """Put the braces of every multi-line ``{ … }`` on lines of their own: a line break after a
    ``{`` whose block spans lines (unless only a comment follows it) and before its ``}``.  A
    stage body is always laid out on lines of its own (``stage s -> int { return 1 }`` gives
    the same layout as the three-line form).  One-line blocks elsewhere stay on one line.
    Line breaks there are insignificant (§1: the newline rule concerns ``( [ -`` and ``not``
    continuing an expression, and neither a ``{`` nor a ``}`` is continued)."""
    n = len(toks)
    after: set[int] = set()  # break after token k
    before: set[int] = set()  # break before token k
    opened: list[tuple[int, bool]] = []  # (index of `{`, forced)
    arms = _match_braces(toks)  # a `match`'s `{` → the commas between its arms
    # line breaks dropped: before a `match`'s `{` (it goes on the subject's line) and before a
    # comma between its arms (a leading comma goes to the end of the arm before it)
    drop = {j for o in arms for j in _breaks_before(toks, o)}
    drop.update(j for cs in arms.values() for c in cs for j in _breaks_before(toks, c))
    stage_pending = False
    prev_code: Token | None = None
    for k, t in enumerate(toks):
        if (
            t.kind == "word"
            and t.text == "stage"
            and not opened
            and (
                prev_code is None or k == 0 or toks[k - 1].kind in ("nl", "comment", "doc", "block")
            )
        ):
            stage_pending = True
        elif t.kind == "op" and t.text == "{":
            body = (
                stage_pending
                and not opened
                and prev_code is not None
                and prev_code.text not in _TYPE_BRACE_AFTER
            )
            if body:
                stage_pending = False
            opened.append((k, body))
        elif t.kind == "op" and t.text == "}" and opened:
            o, forced = opened.pop()
            inner = toks[o + 1 : k]
            multi = any(x.kind == "nl" or "\n" in x.text for x in inner)
            if (multi or forced) and any(_is_code(x) for x in inner):
                nxt = toks[o + 1]
                if nxt.kind != "nl" and not (
                    nxt.kind in ("comment", "doc") and o + 2 < n and toks[o + 2].kind == "nl"
                ):
                    after.add(o)
                if toks[k - 1].kind != "nl":
                    before.add(k)
                for c in arms.get(o, ()):  # a multi-line `match`: one arm a line
                    if c + 1 < k and toks[c + 1].kind not in ("nl", "comment", "doc"):
                        after.add(c)
        if _is_code(t):
            prev_code = t
    if not after and not before and not drop:
        return toks
    out: list[Token] = []
    for k, t in enumerate(toks):
        if k in drop:
            continue
        if k in before:
            out.append(Token("nl", "\n", t.start, t.start))
        out.append(t)
        if k in after:
            out.append(Token("nl", "\n", t.end, t.end))
    return out


def _breaks_before(toks: list[Token], k: int) -> list[int]:
    """The line breaks right before ``toks[k]`` when only they separate it from the code token
    before it (none when a comment is between: the token cannot join that line)."""
    j = k - 1
    while j >= 0 and toks[j].kind == "nl":
        j -= 1
    if j == k - 1 or j < 0 or not _is_code(toks[j]):
        return []
    return list(range(j + 1, k))


_OPEN = frozenset({"(", "[", "{"})


def _parallel_blocks(toks: list[Token]) -> list[Token]:
    """A ``parallel [limit N] { … }`` block one branch a line (docs/reference/control.md
    "parallel blocks"): a line break after its ``{``, after each comma between branches and
    before its ``}``, and a comma after the last branch.  A comma goes after the branch's last
    code token, never after a comment that ends its line."""
    code = [k for k, t in enumerate(toks) if _is_code(t)]
    opens: list[int] = []
    for i, k in enumerate(code):
        t = toks[k]
        if t.kind != "word" or t.text != "parallel" or i + 1 >= len(code):
            continue
        if toks[code[i + 1]].text not in ("{", "limit"):
            continue  # `parallel map`, or a name spelled `parallel`
        j = i + 1
        while j < len(code) and not (toks[code[j]].kind == "op" and toks[code[j]].text == "{"):
            j += 1
        if j < len(code):
            opens.append(code[j])
    if not opens:
        return toks
    n = len(toks)
    breaks: set[int] = set()  # a line break after token k
    commas: set[int] = set()  # a comma (then a line break) after token k
    closes: set[int] = set()  # a line break before token k
    for o in opens:
        depth = 0
        last: int | None = None
        k = o + 1
        while k < n:
            t = toks[k]
            if t.kind == "op" and t.text in _OPEN:
                depth += 1
            elif t.kind == "op" and t.text in _CLOSERS:
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and t.kind == "op" and t.text == ",":
                breaks.add(k)
            if _is_code(t):
                last = k
            k += 1
        if last is None or k >= n:
            continue  # `parallel {}`: nothing to lay out
        breaks.add(o)
        if toks[last].text != ",":
            commas.add(last)
        closes.add(k)

    def breaks_after(k: int) -> bool:
        nxt = toks[k + 1] if k + 1 < n else None
        if nxt is None or nxt.kind == "nl":
            return False
        # a comment ending the line stays on it
        return not (nxt.kind in ("comment", "doc") and (k + 2 >= n or toks[k + 2].kind == "nl"))

    out: list[Token] = []
    for k, t in enumerate(toks):
        if k in closes and out and out[-1].kind != "nl":
            out.append(Token("nl", "\n", t.start, t.start))
        out.append(t)
        if k in commas:
            out.append(Token("op", ",", t.end, t.end))
        if (k in breaks or k in commas) and breaks_after(k):
            out.append(Token("nl", "\n", t.end, t.end))
    return out


def _layout(text: str, toks: list[Token], names: frozenset[int] = frozenset()) -> str:
    toks = _break_blocks(_parallel_blocks(toks))
    lay = _Layout(toks, names)
    # split into logical lines (token index lists) with the number of newlines before each
    lines: list[tuple[int, list[int]]] = []
    cur: list[int] = []
    nls = 0
    for k, t in enumerate(toks):
        if t.kind == "nl":
            if cur:
                lines.append((nls, cur))
                cur = []
                nls = 0
            nls += 1
            continue
        cur.append(k)
    if cur:
        lines.append((nls, cur))

    out: list[_Line | None] = []
    stack: list[int] = []  # indent level of the line that opened each bracket
    prev_last: Token | None = None
    prev_last_k: int | None = None
    for li, (nl_before, idxs) in enumerate(lines):
        first = toks[idxs[0]]
        # indentation
        lead_closers = 0
        for k in idxs:
            if toks[k].text in (")", "]", "}") and stack:
                lead_closers += 1
            else:
                break
        if lead_closers:
            level = stack[-lead_closers]
        else:
            level = stack[-1] + 1 if stack else 0
            if prev_last is not None and _is_code(first) and _is_code(prev_last):
                if first.text == "else" and prev_last.text != "}":
                    level += 1
                elif first.text in _CONT_START:
                    level += 1
                elif prev_last.text in _CONT_END and not (
                    (prev_last.text == ">" and prev_last_k in lay.angle)
                    or prev_last_k in lay.percent  # `threshold 80%` ends the item
                ):
                    level += 1
                elif prev_last.text == "else" and first.text not in ("{", "if"):
                    level += 1  # the `else` arm of `if … then … else` on its own line
        # blank lines
        if li == 0:
            pass
        else:
            blank = nl_before > 1
            if prev_last is not None and prev_last.text in ("{", "(", "["):
                blank = False
            if lead_closers:
                blank = False
            if blank:
                out.append(None)
        # tokens (a trailing line comment is set aside for alignment)
        body = idxs
        trailing: str | None = None
        if len(idxs) > 1 and toks[idxs[-1]].kind in ("comment", "doc"):
            body = idxs[:-1]
            trailing = toks[idxs[-1]].text
        parts = [INDENT * level]
        for pos, k in enumerate(body):
            if pos:
                parts.append(lay.space(body[pos - 1], k))
            parts.append(toks[k].text)
        out.append(_Line("".join(parts).rstrip(" "), trailing))
        # brackets
        for k in idxs:
            tx = toks[k].text
            if toks[k].kind != "op":
                continue
            if tx in ("(", "[", "{"):
                stack.append(level)
            elif tx in (")", "]", "}") and stack:
                stack.pop()
        last_code = [k for k in idxs if toks[k].kind != "nl"]
        prev_last_k = last_code[-1]
        prev_last = toks[prev_last_k]
        # a trailing comment hides the last code token for continuation purposes
        code_only = [k for k in idxs if _is_code(toks[k])]
        if code_only and not _is_code(prev_last):
            prev_last_k = code_only[-1]
            prev_last = toks[prev_last_k]
        elif not code_only:
            prev_last = None
            prev_last_k = None
    return _render(out)


@dataclass(slots=True)
class _Line:
    code: str
    comment: str | None


def _render(lines: list[_Line | None]) -> str:
    """Join laid-out lines (``None`` is a blank line), aligning the trailing comments of each
    run of consecutive one-line lines that have one (two spaces after the longest code)."""
    text: list[str] = []
    run: list[_Line] = []

    def flush() -> None:
        if run:
            width = max(len(ln.code) for ln in run)
            for ln in run:
                text.append(ln.code + " " * (width - len(ln.code) + 2) + (ln.comment or ""))
            run.clear()

    for ln in lines:
        if ln is not None and ln.comment is not None and "\n" not in ln.code:
            run.append(ln)
            continue
        flush()
        if ln is None:
            text.append("")
        elif ln.comment is not None:
            text.append(ln.code + "  " + ln.comment)
        else:
            text.append(ln.code)
    flush()
    result = "\n".join(text).strip("\n")
    return result + "\n" if result else ""


# ---------------------------------------------------------------------------------------------
# AST equivalence


_SPAN_FIELDS = frozenset(
    {
        "span",
        "key_span",
        "name_span",
        "op_span",
        "target_span",
        "keyword_span",
        "catalog_span",
        "tolerate_span",
        "try_span",
        "wildcard_span",
    }
    | {"fails_span", "code_span", "path_span"}
    | {"threshold_span"}
    # a string's `{x}` with their spans: what they are is its text, which is compared
    | {"braces"}
)


def ast_key(node: Any) -> tuple[Any, ...]:
    """A hashable structural key of an AST (every field but spans), for equivalence checks:
    the nodes in pre-order as one flat tuple of markers, names and values. Built with an
    explicit stack, so a 3,000-deep member chain neither recurses nor builds a nested tuple that
    comparing would recurse into."""
    out: list[Any] = []
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, _Mark):
            out.append(item.text)
        elif isinstance(item, ast.Node):
            fields = getattr(type(item), "__dataclass_fields__", {})
            names = [name for name in fields if name not in _SPAN_FIELDS]
            out.append(("node", type(item).__name__, len(names)))
            for name in reversed(names):
                stack.append(getattr(item, name))
                stack.append(_Mark(("field", name)))
        elif isinstance(item, list | tuple):
            out.append(("seq", len(item)))
            stack.extend(reversed(item))
        elif isinstance(item, float):
            out.append(("float", item))
        elif isinstance(item, bool):
            out.append(("bool", item))
        else:
            out.append(item)
    return tuple(out)


class _Mark:
    """A field-name marker on :func:`ast_key`'s stack."""

    __slots__ = ("text",)

    def __init__(self, text: Any) -> None:
        self.text = text


_CLOSERS = frozenset({")", "]", "}"})


def _drop_trailing_commas(toks: list[Token]) -> list[Token]:
    """``toks`` without a trailing comma closed on its own line (``import { A, B, }``,
    ``[1, 2, ]`` → ``{ A, B }``, ``[1, 2]``); one before a line break stays (a list written one
    item a line)."""
    return [
        t
        for k, t in enumerate(toks)
        if not (
            t.text == "," and t.kind == "op" and k + 1 < len(toks) and toks[k + 1].text in _CLOSERS
        )
    ]


def format_source(text: str, file: str = "<input>") -> str:
    """Return ``text`` in canonical layout (see the module docstring).

    Raises :class:`FormatError` (a :class:`~agentflow.errors.SourceError` with the span of the
    first problem) when the source has a syntax error, or when the formatted text would not
    parse to the same AST (a formatter bug; the file is then left alone)."""
    # the parser (lark and its tables, ~70 ms) loads on first use, not when `flowc` starts
    from agentflow.grammar.parser import parse_module

    before, diags = parse_module(text, file)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        d = errors[0]
        raise FormatError(f"{d.span}: cannot format a file with syntax errors: {d.message}", d.span)
    try:
        toks = tokenize(text)
    except FormatError as e:  # pragma: no cover - the parser already rejected these
        raise FormatError(f"{file}: {e.message}") from None
    # a keyword-spelled name the parser read as a value (`output[*]`, a `let step`) is a value
    # (and `match(s, re)`, the library function that shares the keyword's spelling)
    # and a user function or tool named like a contextual word (`fn score(n: int)`,
    # `score(x)`): a name followed by its `(` is a name, glued to it
    names = frozenset(
        n.span.start if isinstance(n, ast.Name) else n.name_span.start
        for n in ast.walk(before)
        if isinstance(n, ast.Name | ast.FuncCall | ast.UserCall) and n.name in KEYWORDS
    ) | frozenset(
        n.name.span.start
        for n in before.items
        if isinstance(n, ast.FnDecl | ast.ExternTool) and n.name.name in KEYWORDS
    )
    new = _layout(text, _drop_trailing_commas(toks), names)
    if new == text:
        return new
    after, diags2 = parse_module(new, file)
    if any(d.severity == "error" for d in diags2) or ast_key(after) != ast_key(before):
        raise FormatError(
            f"{file}: internal formatter error: the formatted text would change the program's "
            "meaning; the file was left unchanged (please report this)"
        )
    return new


def format_file(path: str | Path, *, check: bool = False) -> bool:
    """Format the file at ``path`` in place (or, with ``check=True``, only compare).

    Returns True when the file is (check) or was (write) not already canonical.  Raises
    :class:`FormatError` as :func:`format_source`, ``OSError`` when unreadable."""
    text = read_source(path)
    new = format_source(text, str(path))
    if new == text:
        return False
    if not check:
        Path(path).write_text(new, encoding="utf-8")
    return True
