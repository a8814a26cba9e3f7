"""The `.flow` parser: source text → :mod:`agentflow.grammar.ast` (docs/spec/LANGUAGE.md §1–8,
docs/spec/PLAN_IR.md §3).

The entry points and error recovery.  The work is split along the parser's pipeline:

* :mod:`.scanner` — text → tokens: the mode stack for strings and ``${…}``, the newline rule,
  contextual keywords; also the raw mode the formatter and the language server read;
* :mod:`.lalr` — runs the LALR(1) tables Lark builds from :file:`flow.lark` over those tokens
  (the only module that touches Lark internals);
* :mod:`.builder` — the transformer callbacks that build the AST at each reduction;
* :mod:`.syntax_errors` — "expected …, found …", notes and hints.

:func:`parse_module` first asks :mod:`.descent` (a recursive-descent parser of the same grammar
over flat token lists, several times cheaper), which answers only for a file without any syntax
error and builds the same AST; in every other file the pipeline above parses from the last item
but one before the first error (the items before it are the descent's, the same as the LALR
path's), so every diagnostic is the LALR path's (:func:`parse_module_lalr` is that path alone,
from the start).

:func:`parse_module` never raises: syntax errors become ``syntax-error`` diagnostics and the
item that failed becomes ``ast.ErrorItem``; parsing resumes at the next top-level keyword at the
start of a line (``flow input output deadline use extern type stage``).
:func:`parse_expression` and :func:`parse_template` raise :class:`~agentflow.errors.SourceError`.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from agentflow.core.diagnostics import SYNTAX_ERROR, Diagnostic, Note
from agentflow.core.spans import Span
from agentflow.errors import SourceError
from agentflow.grammar import ast
from agentflow.grammar.descent import parse_fast
from agentflow.grammar.lalr import DRIVER, run
from agentflow.grammar.scanner import TOP_LEVEL, Scanner, SynErr, Tok, starts_declaration
from agentflow.grammar.unclosed import locate_unclosed

__all__ = ["parse_expression", "parse_template", "parse_module", "parse_module_lalr"]

_SKIP_TRIVIA = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)


def _skip_trivia(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not blank or a comment."""
    m = _SKIP_TRIVIA.match(text, pos)
    return pos if m is None else m.end()  # the pattern matches the empty string: never None


def _to_source_error(e: SynErr) -> SourceError:
    return SourceError(f"{e.span}: {e.message}", e.span, e.hint)


def parse_expression(
    text: str, file: str = "<expr>", *, line: int = 1, column: int = 1, offset: int = 0
) -> ast.Expr:
    """Parse a pure expression (docs/spec/LANGUAGE.md §4) such as ``E0.issues[*].id ?? []``.

    ``line``/``column``/``offset`` give the position of ``text[0]`` in the enclosing file, so the
    spans of the result are real positions there (1-based line/column, 0-based offsets).
    Line breaks are insignificant inside an expression.

    Raises :class:`agentflow.errors.SourceError` (with ``.span``) when the text does not parse.
    """
    sc = Scanner(text, 0, len(text), file, line, 1 - column, offset, driver=DRIVER)
    try:
        expr: ast.Expr = run(sc, "expr_only")
        return expr
    except SynErr as e:
        raise _to_source_error(e) from None
    except RecursionError:
        span = Span(file, line, column, line, column, offset, offset)
        raise SourceError(f"{span}: expression nested too deeply", span) from None


def parse_template(
    text: str, file: str = "<template>", *, line: int = 1, column: int = 1, offset: int = 0
) -> ast.Template:
    """Split a plan string into literal text and ``{{ expr }}`` holes (docs/spec/PLAN_IR.md §3).

    The closing ``}}`` of a hole is the first one outside strings and brackets, so
    ``{{ {a: {b: 1}} }}`` is one hole.  A hole holding a plain string literal is folded into
    the literal text (``{{ "{{" }}`` gives a literal ``{{``).  Returns an ``ast.Template`` whose
    ``parts`` are ``str`` and ``ast.Expr``.  Raises :class:`agentflow.errors.SourceError` on an
    unclosed hole or an expression that does not parse.
    """
    parts: list[Any] = []
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
            sc = Scanner(text, k + 2, n, file, cur_line, ls, offset, stop="}}", driver=DRIVER)
            try:
                expr = run(sc, "expr_only")
            except SynErr as e:
                if sc.stopped_at is None and e.message.startswith("expected `}}`"):
                    span = Span(
                        file, cur_line, k - ls + 1, cur_line, k - ls + 3, k + offset, k + 2 + offset
                    )
                    raise SynErr("unclosed `{{`: expected `}}`", span) from None
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
    except SynErr as e:
        raise _to_source_error(e) from None
    except RecursionError:
        span = Span(file, line, column, line, column, offset, offset)
        raise SourceError(f"{span}: template nested too deeply", span) from None
    if buf:
        s = "".join(buf)
        if s:
            parts.append(s)
    end_line = line + text.count("\n")
    end_col = (n - text.rfind("\n")) if "\n" in text else column + n
    span = Span(file, line, column, end_line, end_col, offset, offset + n)
    return ast.Template(span, parts)


def parse_module(text: str, file: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse a whole `.flow` file (docs/spec/LANGUAGE.md §1–8).

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
        if isinstance(text, str) and (text.isascii() or _NOT_UTF8.search(text) is None):
            items, restart = parse_fast(text, file, DRIVER)
            if restart < 0:
                return ast.Module(_module_span(text, file, items), file, items), []
            return _parse_module(text, file, items, restart)
        return _parse_module(text, file)
    except Exception as e:  # noqa: BLE001  # pragma: no cover - last-resort guard: never raise
        span = Span(file, 1, 1, 1, 1, 0, 0)
        diag = Diagnostic(
            SYNTAX_ERROR, f"the parser failed on this file ({type(e).__name__})", span
        )
        return ast.Module(span, file, [ast.ErrorItem(span)]), [diag]
    finally:
        if was_enabled:
            gc.enable()


def parse_module_lalr(text: str, file: str) -> tuple[ast.Module, list[Diagnostic]]:
    """:func:`parse_module` without its fast path (:mod:`.descent`): the LALR path alone, which
    the fast path must match (``tests/grammar/test_descent.py``)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_module(text, file)
    finally:
        if was_enabled:
            gc.enable()


def _module_span(text: str, file: str, items: list[ast.Item]) -> Span:
    """The span of a module: the whole text, or ``1:1`` when it has no item."""
    if items:
        return _offset_span(text, file, 0, len(text))
    return Span(file, 1, 1, 1, 1, 0, 0)


def _parse_module(
    text: str, file: str, kept: list[ast.Item] | None = None, start: int = 0
) -> tuple[ast.Module, list[Diagnostic]]:
    """The LALR path from offset ``start``, after the items ``kept`` of the text before it
    (:func:`agentflow.grammar.descent.parse_fast` says where it may start)."""
    if not isinstance(text, str):  # pragma: no cover - defensive
        text = str(text)
    items: list[ast.Item] = list(kept or ())
    diags: list[Diagnostic] = []
    n = len(text)
    lines = _Lines(text)  # the error path asks for many line numbers
    pos, line, ls = start, 1 if start == 0 else lines.line(start), text.rfind("\n", 0, start) + 1
    while True:
        values: list[Any] = []
        sc = Scanner(text, pos, n, file, line, ls, 0, module=True, driver=DRIVER)
        err: SynErr | None = None
        try:
            got = run(sc, "module", values)
        except SynErr as e:
            err = e
        except RecursionError:
            err = SynErr("nested too deeply", sc.span_at(sc.pos, sc.pos, sc.line, sc.ls))
        if err is not None:
            # the items completed before the error are the list at the bottom of the stack
            got = values[0] if values and isinstance(values[0], list) else []
        items.extend(got)
        if err is None:
            break
        # the failed item starts at the first token after the last completed one
        start = got[-1].span.end if got else pos
        start = _skip_trivia(text, start)
        done = _complete_before(text, file, start, err.span.start, lines)
        if done:
            # an item that ends just before a bad line (`stge b {` after a whole stage) is
            # complete, only not reduced yet (LALR wanted the next token): keep it
            items.extend(done)
            start = _skip_trivia(text, done[-1].span.end)
        # a `{` left open is reported where its `}` is missing (recovery goes on from `err`)
        shown = locate_unclosed(err, sc, start, lines.line(start))
        notes = [Note(m, s) for m, s in shown.notes]
        diags.append(
            Diagnostic(shown.code, shown.message, shown.span, notes, hint=shown.hint, fix=shown.fix)
        )
        resume = _find_resume(text, file, err, sc, start, lines)
        end = resume if resume is not None else n
        stop = len(text[start:end].rstrip())
        item_end = max(start + stop, min(err.span.end, n), start)
        items.append(
            ast.ErrorItem(
                _offset_span(text, file, start, item_end, lines),
                _item_name(text, start, lines),
                _import_names(text, start, item_end),
            )
        )
        if resume is None:
            break
        pos = resume
        line = lines.line(pos)
        ls = text.rfind("\n", 0, pos) + 1
    span = _module_span(text, file, items)
    if not text.isascii() and _NOT_UTF8.search(text):
        diags = _encoding_errors(text, file, diags, lines)
    return ast.Module(span, file, items), diags


#: bytes that were not UTF-8, as ``compiler.api.read_source`` decodes them (``surrogateescape``:
#: byte 0xNN becomes U+DCNN); an ASCII text (``str.isascii``, a C scan of the string's kind
#: flag) holds none, so it is not searched
_NOT_UTF8 = re.compile("[\udc80-\udcff]+")


def _encoding_errors(
    text: str, file: str, diags: list[Diagnostic], lines: _Lines
) -> list[Diagnostic]:
    """One `syntax-error` per run of bytes that are not UTF-8 (a file read by
    ``read_source``), at their position — never a U+FFFD silently in the program. It replaces
    the scanner's "unexpected character" for a run outside a string or comment."""
    found = []
    for m in _NOT_UTF8.finditer(text):
        raw = bytes(ord(c) - 0xDC00 for c in m.group(0))
        shown = " ".join(f"0x{b:02X}" for b in raw)
        what = f"the byte {shown} is" if len(raw) == 1 else f"the bytes {shown} are"
        latin = raw.decode("cp1252", errors="replace")
        found.append(
            Diagnostic(
                SYNTAX_ERROR,
                f"invalid UTF-8: {what} not part of a UTF-8 character",
                _offset_span(text, file, m.start(), m.end(), lines),
                hint=f"save the file as UTF-8 (in Windows-1252 these bytes read `{latin}`)",
            )
        )
    starts = {d.span.start for d in found}
    kept = [
        d
        for d in diags
        if not (d.span.start in starts and d.message.startswith("unexpected character"))
    ]
    return kept + found


def _complete_before(text: str, file: str, start: int, stop: int, lines: _Lines) -> list[Any]:
    """The items of ``text[start:stop]`` when that text, ending at the start of a line, parses
    as whole items on its own; else ``[]``."""
    if stop <= start or text.rfind("\n", start, stop) == -1:
        return []
    if text[text.rfind("\n", 0, stop) + 1 : stop].strip():
        return []  # the error is not at the start of its line
    line = lines.line(start)
    ls = text.rfind("\n", 0, start) + 1
    sc = Scanner(text, start, stop, file, line, ls, 0, module=True, driver=DRIVER)
    try:
        got = run(sc, "module", [])
    except (SynErr, RecursionError):
        return []
    return list(got)


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


def _offset_span(text: str, file: str, i: int, j: int, lines: _Lines | None = None) -> Span:
    if lines is not None:
        line, end_line = lines.line(i), lines.line(j)
    else:
        line = text.count("\n", 0, i) + 1
        end_line = line + text.count("\n", i, j)
    ls = text.rfind("\n", 0, i) + 1
    els = text.rfind("\n", 0, j) + 1 if end_line != line else ls
    return Span(file, line, i - ls + 1, end_line, j - els + 1, i, j)


def _raw_tokens(text: str, file: str, i: int, lines: _Lines | None = None) -> Iterator[Tok]:
    """Tokens from ``i`` without a parser (keywords by spelling); lexical errors skip a line."""
    n = len(text)
    if lines is None:
        lines = _Lines(text)
    line = lines.line(i)
    ls = text.rfind("\n", 0, i) + 1
    while i < n:
        sc = Scanner(text, i, n, file, line, ls, 0, driver=DRIVER)
        try:
            yield from sc.tokens()
            return
        except SynErr:
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
    text: str, file: str, err: SynErr, sc: Scanner, item_start: int, lines: _Lines | None = None
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
            if starts_declaration(v, text, tok.end, n):
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
    if kw in ("stage", "type", "flow", "fn") and len(toks) > 1 and _IDENT.fullmatch(words[1] or ""):
        return words[1]
    if kw == "extern" and len(toks) > 2 and _IDENT.fullmatch(words[2] or ""):
        return words[2]
    if kw == "use" and "as" in words:
        k = words.index("as")
        if k + 1 < len(words) and _IDENT.fullmatch(words[k + 1] or ""):
            return words[k + 1]
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT_BRACES = re.compile(r"import\s*\{([^}]*)")


def _import_names(text: str, start: int, end: int) -> tuple[str, ...]:
    """The names in the braces of a broken ``import { … }`` item at ``start`` (none for any
    other item)."""
    m = _IMPORT_BRACES.match(text, start, end)
    if m is None:
        return ()
    return tuple(n for n in _IDENT.findall(m.group(1)) if n not in ("from", "as"))
