"""The scanner's main loop: ``text[pos:end]`` → :class:`~agentflow.grammar.tokens.Tok`
(docs/spec/LANGUAGE.md §1, §2, §5), the body of :meth:`Scanner.tokens
<agentflow.grammar.scanner.Scanner.tokens>`.

One pass of :data:`~agentflow.grammar.tokens._TOKEN_RE` per token: a word is a keyword or a
``NAME`` as the LALR state accepts (parse mode) or by spelling (raw mode); operators keep the
bracket stack (an unclosed bracket before a new top-level declaration, a stray closer, nesting
past ``MAX_NESTING``); the newline rule turns ``(``, ``[``, ``-`` and ``not`` that start a line
into their ``…_NL`` terminals; strings are handed to the scanner's string methods; comments,
``///`` docs, block comments and line breaks are trivia (yielded in raw mode with
``trivia``). Lexical errors are raised as :class:`~agentflow.grammar.scan_errors.SynErr`, worded
by :mod:`~agentflow.grammar.scan_errors`.

The scanner's state (:class:`~agentflow.grammar.scanner.Scanner`: text, position, line, bracket
stack, mode) is read and updated through ``sc``; this module never builds a scanner.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentflow.core.diagnostics import Replacement
from agentflow.core.vocabulary import (
    CALL_CLAUSE_WORDS,
    MAX_NESTING,
)
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.core.vocabulary import RESERVED_WORDS as _RESERVED
from agentflow.grammar import ast
from agentflow.grammar.division import floor_hint
from agentflow.grammar.habit_fixes import foreign_fix
from agentflow.grammar.scan_errors import (
    _FOREIGN_CHARACTERS,
    FIELD_SEPARATOR_HINT,
    SynErr,
    _badnum_hint,
    _single_quoted,
    semicolon_between_fields,
)
from agentflow.grammar.tokens import (
    _BLANKS,
    _COLON_AFTER,
    _KIND,
    _NL_VARIANT,
    _PLAIN_STR,
    _TOKEN_RE,
    CLOSERS,
    MATCH_AFTER,
    OPENERS,
    OPS,
    TOP_LEVEL,
    Tok,
    brace_refs,
    starts_declaration,
)

if TYPE_CHECKING:
    from agentflow.grammar.scanner import Scanner

__all__ = ["scan_tokens"]


def scan_tokens(
    sc: Scanner,
    states: dict[int, dict[str, tuple[bool, Any]]] | None = None,
    state_stack: list[int] | None = None,
) -> Iterator[Tok]:
    """The tokens of ``sc.text[sc.pos:sc.end]``, scanned by ``sc``: :meth:`Scanner.tokens
    <agentflow.grammar.scanner.Scanner.tokens>` (``states`` and ``state_stack`` as there).
    Raises :class:`SynErr` at the first lexical error, lazily, while iterating."""
    text = sc.text
    n = sc.end
    i = sc.pos
    line = sc.line
    ls = sc.ls
    ob = sc.ob
    file = sc.file
    module = sc.module
    stop = sc.stop
    stack = sc.stack
    raw = sc.raw
    trivia = sc.trivia
    shifts = sc.driver.shifts if states is not None and sc.driver is not None else None
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
                sc.last = tok
                sc.pos = i
                sc.line, sc.ls = line, ls
                yield tok
                continue
            ch = text[i]
            shown = repr(ch)[1:-1] if not ch.isprintable() else ch
            width = 2 if text.startswith(ch * 2, i) and ch in "&" else 1
            between = (
                ch == ";"
                and bool(stack)
                and semicolon_between_fields(text, stack[-1].start - ob, i)
            )
            err = sc.error(
                f"unexpected character `{shown}`",
                i,
                i + width,
                line,
                ls,
                resume=i + width,
                depth=len(stack),
                hint=FIELD_SEPARATOR_HINT
                if between
                else _FOREIGN_CHARACTERS.get(ch) or _single_quoted(text, i, n),
            )
            err.fix = foreign_fix(text, i, i + width, err.span) if err.hint else None
            if between and err.fix is None:  # more on the line: the `;` becomes a `,`
                err.fix = Replacement(err.span, ",", "Replace `;` with `,`")
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
                        sc.line, sc.ls = line, ls
                        raise SynErr(
                            f"expected `{OPENERS[str(opener.value)]}` to close "
                            f"{sc.opened(opener)} before `{value}` "
                            f"starts a new declaration",
                            opener.span,
                            resume=i,
                            depth=0,
                            unclosed=(list(stack), i),
                        )
                    if typ == "NOT" and (not stack or stack[-1].value == "{"):
                        typ = "NOT_NL"
                if states is not None and not (bol and module and not stack and value in TOP_LEVEL):
                    assert state_stack is not None and shifts is not None  # given with states
                    st = states[state_stack[-1]]
                    if typ in st:
                        if "NAME" in st and (
                            _COLON_AFTER.match(text, j, n)
                            or (value not in _RESERVED and not shifts(state_stack, typ))
                            or (
                                # a tool call's clause never starts a line where a
                                # statement could start: there it is a name
                                bol and value in CALL_CLAUSE_WORDS and shifts(state_stack, "NAME")
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
                        or (sc.last is not None and sc.last.type == "DOT")
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
                    raise sc.error(
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
                        sc.stopped_at = i
                        break
                elif not stack:
                    if stop is not None and value == "}":
                        if stop == "}" or text.startswith("}}", i):
                            sc.stopped_at = i
                            break
                    raise sc.error(
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
                    raise sc.error(
                        f"expected `{OPENERS[str(opener.value)]}` to close "
                        f"{sc.opened(opener)}, found `{value}`",
                        i,
                        j,
                        line,
                        ls,
                        resume=j,
                        depth=len(stack),
                        notes=[(f"{sc.opened(opener, at=False)} opened here", opener.span)],
                    )
                tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
            else:
                if bol and module and typ == "MINUS" and (not stack or stack[-1].value == "{"):
                    typ = "MINUS_NL"
                tok = Tok(typ, value, i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
        elif kind == "nl":
            if trivia:
                sc.pos = j
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
            sc.line, sc.ls = line, ls
            if raw:
                j = sc.skip_string(i, line, ls, kind == "str3")
                tok = Tok(
                    "STRING",
                    text[i:j],
                    i + ob,
                    j + ob,
                    line,
                    i - ls + 1,
                    sc.line,
                    j - sc.ls + 1,
                    file,
                )
            else:
                if kind == "str":
                    pm = _PLAIN_STR.match(text, i, n)
                    if pm is not None:
                        j = pm.end()
                        s = pm.group(1)
                        lit = ast.StringLit(sc.span_at(i, j, line, ls), [s] if s else [])
                        if "{" in s:
                            lit.braces = brace_refs(text, i + 1, j - 1, file, line, ls, ob)
                    else:
                        lit, j = sc.scan_string(i, line, ls)
                else:
                    lit, j = sc.scan_triple(i, line, ls)
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
            line, ls = sc.line, sc.ls
        elif (kind == "num" or kind == "dur") and j - i > 100 and not raw:
            raise sc.error(
                "number too long (more than 100 digits)",
                i,
                j,
                line,
                ls,
                resume=j,
                depth=len(stack),
            )
        elif kind == "num":
            tok = Tok("NUMBER", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
        elif kind == "dur":
            tok = Tok(
                "DURATION", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file
            )
        elif kind in ("doc", "comment") and stop == "}" and not raw and "}" in text[i:j]:
            # `"${7 // 2}"`: Python's integer division, read as a comment that hides the `}`
            message = "`//` starts a comment and cannot be inside `${…}`"
            hint = floor_hint(text[text.rfind("${", 0, i) + 2 : i], text[i + 2 : j])
            raise sc.error(message, i, i + 2, line, ls, hint=hint)
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
                sc.pos = j
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
                raise sc.error("unterminated comment: `/*` has no closing `*/`", i, j, line, ls)
            k += 2
            line0, ls0 = line, ls
            nl = text.count("\n", i, k)
            if nl:
                line += nl
                ls = text.rfind("\n", i, k) + 1
            if trivia:
                sc.pos = k
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
            tok = Tok("BADNUM", text[i:j], i + ob, j + ob, line, i - ls + 1, line, j - ls + 1, file)
        else:  # badnum
            raise sc.error(
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
        sc.last = tok
        sc.pos = j
        sc.line, sc.ls = line, ls
        yield tok
        i = j
    else:
        if stop is not None:
            sc.line, sc.ls = line, ls
            what = "`}`" if stop == "}" else "`}}`"
            start = sc.pos if sc.last is None else sc.last.end - ob
            raise sc.error(f"expected {what} before the end of the text", start, n, line, ls)
    sc.pos = i
    sc.line, sc.ls = line, ls
    if stack and not raw:
        opener = stack[-1]
        raise SynErr(
            f"expected `{OPENERS[str(opener.value)]}` to close {sc.opened(opener)}, "
            f"found the end of the {'file' if module else 'text'}",
            opener.span,
            unclosed=(list(stack), i) if module else None,
        )
