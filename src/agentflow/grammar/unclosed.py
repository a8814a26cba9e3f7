"""Where an unclosed bracket should have been closed (docs/spec/LANGUAGE.md §1–8): the
frames of the brackets open at the end of the file, the one whose indentation says it was left
open (``_blame``), and the syntax error :func:`locate_unclosed` words from it — a note at the
bracket and a hint naming the line its closer belongs before. Split from
:mod:`.syntax_errors`, which words every other syntax error."""

from __future__ import annotations

import re

from agentflow.core.diagnostics import FixedHint, respelling
from agentflow.core.spans import Span
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.grammar.scanner import CLOSERS, OPENERS, Scanner, SynErr, Tok

__all__ = ["locate_unclosed", "word_at"]

# -- an unclosed `{`: where it should have been closed ------------------------------------------

_OPEN_TYPES = frozenset({"LBRACE", "LPAR", "LSQB", "LPAR_NL", "LSQB_NL"})
_CLOSE_TYPES = frozenset({"RBRACE", "RPAR", "RSQB"})


class _Frame:
    """An open bracket during :func:`locate_unclosed`'s replay: the token, the indentation of
    its line, and whether the block's first line inside is indented deeper (``None`` until that
    line is seen): only such a block is judged by indentation."""

    __slots__ = ("indent", "tok", "tracked")

    def __init__(self, tok: Tok, indent: int) -> None:
        self.tok = tok
        self.indent = indent
        self.tracked: bool | None = None


def _indent_of(text: str, k: int) -> int:
    """The indentation (characters of blank before the first token) of the line holding
    ``text[k]``."""
    ls = text.rfind("\n", 0, k) + 1
    return len(text[ls:k]) - len(text[ls:k].lstrip(" \t"))


def _blame(
    sc: Scanner, start: int, line: int, stop: int
) -> tuple[_Frame, Tok, _Frame | None] | None:
    """The first `{` that indentation says is not closed in ``sc.text[start:stop]`` (``start``
    on line ``line``): ``(its frame, the first token after where its `}` belongs, the frame
    of the outer block that token closes when it is a `}`)``, or None.

    Only a block whose first line inside is indented deeper than the line of its `{` is judged;
    in it, the first line indented no deeper than that line (a `}` less indented, or anything
    else) is where it should have been closed."""
    text, ob = sc.text, sc.ob
    ls = text.rfind("\n", 0, start) + 1
    raw = Scanner(text, start, stop, sc.file, line, ls, ob, raw=True)
    frames: list[_Frame] = []
    for tok in raw.tokens():
        typ = tok.type
        if tok.bol and frames:
            top = frames[-1]
            ind = tok.column - 1
            closes = typ in _CLOSE_TYPES and tok.value == OPENERS[str(top.tok.value)]
            if top.tracked is None and not closes:
                top.tracked = ind > top.indent
            if (
                top.tracked
                and top.tok.value == "{"
                and ind <= top.indent
                and (ind < top.indent or not closes)
            ):
                outer = None
                if closes:
                    outer = next((f for f in reversed(frames[:-1]) if f.indent == ind), None)
                return top, tok, outer
        if typ in _OPEN_TYPES:
            frames.append(_Frame(tok, _indent_of(text, tok.start - ob)))
        elif typ in _CLOSE_TYPES:
            # close the innermost matching bracket
            want = CLOSERS[str(tok.value)]
            for j in range(len(frames) - 1, -1, -1):
                if frames[j].tok.value == want:
                    del frames[j:]
                    break
    return None


def locate_unclosed(err: SynErr, sc: Scanner, start: int, line: int) -> SynErr:
    """Where a missing `}` belongs, for a syntax error in the module item that starts at
    ``sc.text[start]`` (on line ``line``).  Brace matching alone reports a deleted `}` at the
    outermost open `{`, or as a confusing error further on (a deleted `}` of an agent block
    inside a stage: the stage's `}` closes the agent block, and the stage is left open).

    The item is scanned again up to the error, judging by indentation, like rustc's and
    TypeScript's unclosed-delimiter reports (:func:`_blame`).  When a block was left open
    before the error's line, the error points where its `}` belongs (the `}` that closes an
    outer block, or the first token of the line after the block), notes "this `{` is not
    closed" at its `{` and, for a parse error further on, "the parser stopped here: …".  For
    the scanner's own "expected `}` to close …" at a new declaration or at the end of the file
    (``err.unclosed``) without such a line, it points at the keyword or the end of the file
    and notes the innermost open `{`; an unclosed `(` or `[`, and an error of another code than
    ``syntax-error``, is left as reported.  Returns a
    new :class:`SynErr` for the diagnostic, or ``err`` itself."""
    text, ob = sc.text, sc.ob
    if err.code != "syntax-error":
        return err  # a mistake known for sure (`reserved-name` at a read): no brace to blame
    if err.unclosed is not None:
        openers, stop = err.unclosed
        if not openers or openers[-1].value != "{":
            return err  # an unclosed `(` or `[`: pointed at as it is
    elif (
        sc.stack
        and err.span.file == sc.file
        and start <= err.span.start - ob <= len(text)
        and text.rfind("\n", start, err.span.start - ob) >= 0
    ):
        # a parse error on a later line than the item's start: a block may have been left open
        openers, stop = [], min(err.span.end - ob, len(text))
    else:
        return err
    try:
        found = _blame(sc, start, line, stop)
    except (SynErr, RecursionError):  # the raw scan also stops at an unclosed string
        found = None
    if found is not None and err.unclosed is None and not _blames_surely(sc, found, err):
        return _noted_on_its_line(sc, found, err)
    if found is None:
        if not openers:
            return err
        # no line says where: the innermost open `{` is closed nowhere
        opener = openers[-1]
        words = sc.opened(opener, at=False)
        notes = [("this `{` is not closed", opener.span)]
        if stop < sc.end:
            kw = word_at(text, stop)
            span = Span(
                sc.file,
                sc.line,
                stop - sc.ls + 1,
                sc.line,
                stop - sc.ls + 1 + len(kw),
                stop + ob,
                stop + len(kw) + ob,
            )
        else:
            span = err.span if sc.last is None else _after(sc.last)
        last = sc.last.end_line if sc.last is not None else opener.line
        hint = f"add `}}` after line {last} to close {words}"
        if stop < sc.end and word_at(text, stop) == "output" and words == "the agent block":
            # `output T` inside `agent(…) { … }`: the clause of other frameworks
            said = "did you mean `expect`? an agent's answer type is its `expect T` clause"
            fix = respelling(span, "output", "expect")  # None unless `span` is the word
            hint = FixedHint(said, fix) if fix is not None else said
        return SynErr(err.message, span, resume=err.resume, depth=err.depth, hint=hint, notes=notes)
    blamed, where, outer = found
    words = sc.opened(blamed.tok, at=False)
    at = where.line
    message = f"expected `}}` to close {sc.opened(blamed.tok)} before line {at}"
    if where.type == "RBRACE":
        closes_what = sc.opened(outer.tok) if outer is not None else "an enclosing block"
        hint = (
            f"by its indentation, the `}}` on line {at} closes {closes_what}: "
            f"add the `}}` of {words} before it"
        )
    else:
        hint = (
            f"by its indentation, line {at} comes after {words} (its `{{` is on line "
            f"{blamed.tok.line}): add its `}}` before line {at}"
        )
    notes = [("this `{` is not closed", blamed.tok.span)]
    if err.unclosed is None:
        notes.append((f"the parser stopped here: {err.message}", err.span))
    return SynErr(message, where.span, resume=err.resume, depth=err.depth, hint=hint, notes=notes)


def _blames_surely(sc: Scanner, found: tuple[_Frame, Tok, _Frame | None], err: SynErr) -> bool:
    """Whether indentation's blame may replace a parse error found further on (not at a new
    declaration or the end of the file, where a `{` is surely left open): only for a block
    (not an object literal, whose `}` is often put anywhere), on a line before the error's (on
    the line itself, the parser's own message says more), at a `}` less indented than the
    block's line or at a keyword starting a line (`let`, `return`, a clause)."""
    blamed, where, _outer = found
    if where.line >= err.span.line:
        return False
    if sc.opened(blamed.tok, at=False) in ("the object", "the `{`"):
        return False
    return where.type == "RBRACE" or str(where.value) in KEYWORDS


def _noted_on_its_line(
    sc: Scanner, found: tuple[_Frame, Tok, _Frame | None], err: SynErr
) -> SynErr:
    """A parse error on the very line that indentation says comes after an unclosed `{`
    (``tools [...]`` after an ``input {`` object whose `}` is gone: "expected `:`, found `[`")
    keeps its message and place, and gains the note "this `{` is not closed" (unless a note
    already points at that `{`) and, when it has none, the hint where the `}` goes.  Nothing
    is added for a blame on an earlier line (not sure enough to move the error), or when the
    rest of the line closes more than it opens (a sloppy object closed there)."""
    blamed, where, _outer = found
    text, ob = sc.text, sc.ob
    k = err.span.start - ob
    end = text.find("\n", k)
    rest = text[k : len(text) if end < 0 else end]
    if where.line != err.span.line or rest.count("}") > rest.count("{"):
        return err
    notes = list(err.notes)
    if all(span.start != blamed.tok.start for _m, span in notes):
        notes.append(("this `{` is not closed", blamed.tok.span))
    hint = err.hint or (
        f"by its indentation, line {where.line} comes after {sc.opened(blamed.tok, at=False)} "
        f"(its `{{` is on line {blamed.tok.line}): add its `}}` before line {where.line}"
    )
    return SynErr(
        err.message,
        err.span,
        resume=err.resume,
        depth=err.depth,
        hint=hint,
        notes=notes,
        fix=err.fix if hint is err.hint else None,
    )


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_at(text: str, k: int) -> str:
    """The word starting at ``text[k]``."""
    m = _WORD.match(text, k)
    return m.group(0) if m else text[k : k + 1]


def _after(tok: Tok) -> Span:
    """The empty span just after ``tok``."""
    return Span(
        tok.file, tok.end_line, tok.end_column, tok.end_line, tok.end_column, tok.end, tok.end
    )
