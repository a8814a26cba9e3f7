"""The fast path of :func:`agentflow.grammar.parser.parse_module`: a recursive-descent parser
of :file:`flow.lark` over flat token arrays (docs/spec/LANGUAGE.md §1–8).

The LALR path (:mod:`.scanner` → :mod:`.lalr` → :mod:`.builder`) makes a token object per token
and a callback call per reduction; this module scans the whole text once into parallel lists
(kind, value, positions) and builds the AST nodes directly while descending the grammar, which
is several times cheaper on a clean file.  It answers only for files that parse **without** any
diagnostic: at the first thing it does not take — any syntax error, any construct it does not
handle (``test`` and ``eval`` blocks), a builder check that would fail (a comma or line break
missing between fields, chained comparisons, too many operators), a lexical error, bytes that are
not UTF-8 — it gives up (:func:`parse_clean` returns None) and the caller parses the file the
LALR way, so every diagnostic is the LALR path's, byte for byte.

The AST is the one the LALR path builds (``tests/grammar/test_descent.py`` compares them node by
node over the examples, the test corpora and the benchmark's programs).  The rules it mirrors:

* **The newline rule** (§1): ``(``, ``[``, ``-`` and ``not`` that start a line outside ``( )``
  and ``[ ]`` are ``LPAR_NL``/``LSQB_NL``/``MINUS_NL``/``NOT_NL``, which may begin an expression
  but never continue one (computed by the tokenizer, as the scanner does).
* **Contextual keywords**: the scanner emits a keyword only where the LALR state really shifts
  it, else a name.  Here: a keyword followed by ``:`` or after ``.`` is a name; a reserved word
  (``core.vocabulary.RESERVED_WORDS``) is always the keyword; a top-level keyword at the start of
  a line outside brackets is always the keyword; any other keyword is the keyword where the
  descent accepts it (each decision point tries its keywords before a name) and a name elsewhere.
* String literals are scanned by :class:`~agentflow.grammar.scanner.Scanner`'s own methods, so
  their nodes (interpolations included) are the scanner's.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_NESTING, MAX_PREFIX, STATEMENT_WORDS
from agentflow.core.vocabulary import RESERVED_WORDS as _RESERVED
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder import _budget, _climb, _Not, _number, _push_projection, _retry
from agentflow.grammar.scanner import (
    _NL_VARIANT,
    _TOKEN_RE,
    CLOSERS,
    KEYWORDS,
    OPENERS,
    OPS,
    TOP_LEVEL,
    Driver,
    Scanner,
    SynErr,
    starts_declaration,
)

__all__ = ["parse_clean"]


class _Bail(Exception):
    """The descent does not take this text: the LALR path parses it (and reports)."""


def _bail() -> NoReturn:
    raise _Bail


#: terminals of the keywords that are a name where the grammar does not expect the keyword
_CTX = frozenset(t for w, t in KEYWORDS.items() if w not in _RESERVED)
#: binary operator terminals (``NOT`` only as the start of ``not in``)
_BINOPS = frozenset(
    ("QQ", "OR", "AND", "EQ", "NE", "LT", "LE", "GT", "GE", "IN", "NOT")
    + ("PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "DOTDOT")
)
#: the terminals of the words that start a statement
_STMT_START = frozenset(KEYWORDS[w] for w in STATEMENT_WORDS)
_LITERAL_TYPES = {"TRUE": True, "FALSE": False, "NULL": None}


class _OpTok:
    """A token as :func:`~agentflow.grammar.builder._climb` reads it (only its span)."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span


def parse_clean(text: str, file: str, driver: Driver) -> list[ast.Item] | None:
    """The items of ``text`` (a whole `.flow` file named ``file``) when it parses without any
    diagnostic, exactly as the LALR path builds them; None when the LALR path must parse it
    (a syntax error, or anything this parser does not take).  ``driver`` parses the ``${…}``
    holes that are not a plain name or field chain (the scanner's string methods call it)."""
    try:
        toks = _tokenize(text, file, driver)
        return _Descent(*toks).module()
    except (_Bail, SynErr, RecursionError):
        return None


# ---------------------------------------------------------------------------------------------
# The tokenizer: the scanner's parse mode (module scanner), into parallel lists


def _fast_pattern() -> re.Pattern[str]:
    """The scanner's token pattern (:data:`~agentflow.grammar.scanner._TOKEN_RE`) with more
    alternatives that save a step per token — a word followed by ``:`` (``wcolon``: a name
    wherever it parses), a whole block comment, a whole plain one-line string — and one for
    any other character (``bad``), so that ``finditer`` never skips text."""
    pattern = _TOKEN_RE.pattern
    edits = (
        (
            "(?P<word>[A-Za-z_][A-Za-z0-9_]*)",
            "(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<wcolon>(?=[ \\t]*:(?!:)))?",
        ),
        ("(?P<block>/\\*)", "(?P<block>/\\*(?s:.*?)\\*/)\n  | (?P<badblock>/\\*)"),
        ('(?P<str>\\")', '(?P<pstr>"[^"\\\\$\\n]*")\n  | (?P<str>\\")'),
        ("(?P<eof>\\Z)", "(?P<eof>\\Z)\n  | (?P<bad>(?s:.))"),
    )
    for old, new in edits:
        if old not in pattern:  # pragma: no cover - the scanner's pattern changed
            raise RuntimeError(f"grammar/descent.py: the scanner's token pattern lost {old}")
        pattern = pattern.replace(old, new)
    return re.compile(pattern, _TOKEN_RE.flags)


_FAST_RE = _fast_pattern()
#: the group numbers the tokenizer dispatches on
_GROUPS = tuple(
    _FAST_RE.groupindex[k]
    for k in ("word", "wcolon", "op", "nl", "pstr", "num", "dur", "str", "str3", "doc")
    + ("comment", "block")
)
_G_EOF = _FAST_RE.groupindex["eof"]


def _tokenize(
    text: str, file: str, driver: Driver
) -> tuple[list[str], list[Any], list[tuple[Any, ...]], dict[int, str], set[int]]:
    """``(kinds, values, spans, docs, hard)``: per token its terminal, its value (the text; an
    ``ast.StringLit`` for a string) and its span's fields ``(file, line, column, end_line,
    end_column, start, end)``; the ``///`` text before a token, by index; the indices of the
    top-level keywords that start a line outside brackets (never a name).  A sentinel ``$END``
    token ends the lists.  Raises :class:`_Bail` at what the scanner reports."""
    kinds: list[str] = []
    values: list[Any] = []
    spans: list[tuple[Any, ...]] = []
    docs: dict[int, str] = {}
    hard: set[int] = set()
    kpush = kinds.append
    vpush = values.append
    spush = spans.append
    n = len(text)
    line = 1
    ls = 0
    stack: list[str] = []
    bol = True
    doc: list[str] | None = None
    finditer = _FAST_RE.finditer
    keywords = KEYWORDS
    ops = OPS
    top_level = TOP_LEVEL
    openers = OPENERS
    closers = CLOSERS
    g_word, g_wcolon, g_op, g_nl, g_pstr, g_num, g_dur, g_str, g_str3, g_doc, g_comment, g_block = (
        _GROUPS
    )
    g_eof = _G_EOF
    sc: Scanner | None = None
    last = ""
    pos = 0
    while pos >= 0:
        restart = -1
        for m in finditer(text, pos):
            g = m.lastindex
            if g == g_word or g == g_wcolon:
                i, j = m.span(g_word)
                value: Any = text[i:j]
                typ = keywords.get(value)
                if typ is None:
                    typ = "NAME"
                else:
                    if bol:
                        if stack and starts_declaration(value, text, j, n):
                            _bail()
                        if typ == "NOT" and (not stack or stack[-1] == "{"):
                            typ = "NOT_NL"
                    if bol and not stack and value in top_level:
                        hard.add(len(kinds))
                    elif g == g_wcolon or last == "DOT":
                        typ = "NAME"
            elif g == g_op:
                i, j = m.span(g)
                value = text[i:j]
                typ = ops[value]
                if value in openers:
                    if bol and value != "{" and (not stack or stack[-1] == "{"):
                        typ = _NL_VARIANT[typ]
                    if len(stack) >= MAX_NESTING:
                        _bail()
                    stack.append(value)
                elif value in closers:
                    if stack and stack[-1] == closers[value]:
                        stack.pop()
                    else:
                        _bail()
                elif bol and typ == "MINUS" and (not stack or stack[-1] == "{"):
                    typ = "MINUS_NL"
            elif g == g_nl:
                line += 1
                ls = m.end()
                bol = True
                continue
            elif g == g_pstr:
                i, j = m.span(g)
                s = text[i + 1 : j - 1]
                sp = (file, line, i - ls + 1, line, j - ls + 1, i, j)
                kpush("STRING")
                vpush(ast.StringLit(Span(*sp), [s] if s else []))
                spush(sp)
                if doc is not None:
                    docs[len(kinds) - 1] = "\n".join(doc)
                    doc = None
                bol = False
                last = "STRING"
                continue
            elif g == g_num or g == g_dur:
                i, j = m.span(g)
                if j - i > 100:
                    _bail()
                value = text[i:j]
                typ = "NUMBER" if g == g_num else "DURATION"
            elif g == g_str or g == g_str3:
                i = m.start(g)
                if sc is None:
                    sc = Scanner(text, 0, n, file, line, ls, 0, module=True, driver=driver)
                sc.line, sc.ls = line, ls
                if g == g_str:
                    lit, j = sc.scan_string(i, line, ls)
                else:
                    lit, j = sc.scan_triple(i, line, ls)
                sp = (file, line, i - ls + 1, lit.span.end_line, lit.span.end_column, i, j)
                kpush("STRING")
                vpush(lit)
                spush(sp)
                line, ls = sc.line, sc.ls
                if doc is not None:
                    docs[len(kinds) - 1] = "\n".join(doc)
                    doc = None
                bol = False
                last = "STRING"
                restart = j  # go on after the string: a new pass of the pattern
                break
            elif g == g_doc:
                i, j = m.span(g)
                d = text[i + 3 : j]
                if d.startswith(" "):
                    d = d[1:]
                if doc is None:
                    doc = [d.rstrip()]
                else:
                    doc.append(d.rstrip())
                continue
            elif g == g_comment:
                continue
            elif g == g_block:
                i, j = m.span(g)
                nl = text.count("\n", i, j)
                if nl:
                    line += nl
                    ls = text.rfind("\n", i, j) + 1
                continue
            elif g == g_eof:
                break
            else:  # badnum, an unterminated block comment, an unexpected character
                _bail()
            c = i - ls + 1
            kpush(typ)
            vpush(value)
            spush((file, line, c, line, c + j - i, i, j))
            if doc is not None:
                docs[len(kinds) - 1] = "\n".join(doc)
                doc = None
            bol = False
            last = typ
        pos = restart
    if stack:
        _bail()
    # the end marker: no rule takes it
    kinds.append("$END")
    values.append("")
    spans.append((file, line, n - ls + 1, line, n - ls + 1, n, n))
    return kinds, values, spans, docs, hard


# ---------------------------------------------------------------------------------------------
# The descent


def _sv(lit: ast.StringLit) -> str:
    """The text of a string that must be plain (the LALR path raises otherwise)."""
    for part in lit.parts:
        if type(part) is not str:
            _bail()
    return lit.text


class _Descent:
    """One recursive-descent parse over the token lists of :func:`_tokenize`; ``p`` is the
    index of the next token."""

    __slots__ = ("K", "V", "SP", "docs", "hard", "p")

    def __init__(
        self,
        kinds: list[str],
        values: list[Any],
        spans: list[tuple[Any, ...]],
        docs: dict[int, str],
        hard: set[int],
    ) -> None:
        self.K = kinds
        self.V = values
        self.SP = spans
        self.docs = docs
        self.hard = hard
        self.p = 0

    # -- helpers --------------------------------------------------------------------------------

    def span(self, p: int) -> Span:
        """The span of token ``p``."""
        return Span(*self.SP[p])

    def tt(self, a: int, b: int) -> Span:
        """The span from token ``a`` through token ``b``."""
        sa = self.SP[a]
        sb = self.SP[b]
        return Span(sa[0], sa[1], sa[2], sb[3], sb[4], sa[5], sb[6])

    def tn(self, a: int, node: Any) -> Span:
        """The span from token ``a`` through ``node``."""
        sa = self.SP[a]
        s = node.span
        return Span(sa[0], sa[1], sa[2], s.end_line, s.end_column, sa[5], s.end)

    def nt(self, node: Any, b: int) -> Span:
        """The span from ``node`` through token ``b``."""
        s = node.span
        sb = self.SP[b]
        return Span(s.file, s.line, s.column, sb[3], sb[4], s.start, sb[6])

    def isname(self, p: int) -> bool:
        """Token ``p`` can be a name here (the caller has tried its keywords)."""
        k = self.K[p]
        return k == "NAME" or (k in _CTX and p not in self.hard)

    def name(self) -> int:
        """Take a name; return its token index."""
        p = self.p
        k = self.K[p]
        if k != "NAME" and (k not in _CTX or p in self.hard):
            _bail()
        self.p = p + 1
        return p

    def ident(self) -> ast.Ident:
        p = self.name()
        return ast.Ident(self.span(p), self.V[p])

    def take(self, kind: str) -> int:
        """Take a token of ``kind``; return its index."""
        p = self.p
        if self.K[p] != kind:
            _bail()
        self.p = p + 1
        return p

    # -- items ----------------------------------------------------------------------------------

    def module(self) -> list[ast.Item]:
        items: list[ast.Item] = []
        K = self.K
        while K[self.p] != "$END":
            items.append(self.item())
        return items

    def item(self) -> ast.Item:
        p = self.p
        k = self.K[p]
        self.p = p + 1
        if k == "STAGE":
            name = self.ident()
            returns = None
            if self.K[self.p] == "ARROW":
                self.p += 1
                returns = self.type()
            body = self.block()
            return ast.StageDecl(self.tn(p, body), name, returns, body, doc=self.docs.get(p))
        if k == "TYPE":
            name = self.ident()
            if self.K[self.p] == "EQUALS":
                self.p += 1
                alias = self.type()
                return ast.TypeDecl(self.tn(p, alias), name, None, alias, doc=self.docs.get(p))
            fields = self.object_type()
            return ast.TypeDecl(self.tn(p, fields), name, fields, None, doc=self.docs.get(p))
        if k == "EXTERN":
            return self.extern(p)
        if k == "USE":
            kw = self.p
            if self.K[kw] not in ("AGENT", "TEAM"):
                _bail()
            self.p = kw + 1
            target = self.take("STRING")
            self.take("AS")
            as_name = self.name()
            return ast.UseDecl(
                self.tt(p, as_name),
                self.V[kw],
                _sv(self.V[target]),
                self.span(target),
                ast.Ident(self.span(as_name), self.V[as_name]),
            )
        if k == "INPUT":
            t = self.type()
            return ast.InputDecl(self.tn(p, t), t)
        if k == "OUTPUT":
            t = self.type()
            return ast.OutputDecl(self.tn(p, t), t)
        if k == "FLOW":
            name = self.ident()
            q = self.p
            if self.K[q] == "STRING":
                self.p = q + 1
                return ast.FlowHeader(self.tt(p, q), name, _sv(self.V[q]))
            return ast.FlowHeader(self.tt(p, q - 1), name, None)
        if k == "DEADLINE":
            d = self.take("DURATION")
            v = self.V[d]
            return ast.DeadlineDecl(
                self.tt(p, d), ast.DurationLit(self.span(d), _duration_ms(v), v)
            )
        if k == "BUDGET":
            obj = self.object()
            return ast.BudgetDecl(self.tn(p, obj), _budget(obj))
        if k == "TEST":
            return self.test_decl(p)
        if k == "EVAL":
            return self.eval_decl(p)
        _bail()

    # -- `test` and `eval` blocks ---------------------------------------------------------------

    def test_decl(self, p: int) -> ast.TestDecl:
        n = self.take("STRING")
        name = _sv(self.V[n])
        cases: ast.Expr | None = None
        case: ast.Ident | None = None
        if self.K[self.p] == "MAP":
            self.p += 1
            cases = self.opexpr()
            self.take("AS")
            case = self.ident()
        self.take("LBRACE")
        K = self.K
        body: list[ast.TestInput | ast.TestStub | ast.TestExpect | ast.TestReplay] = []
        while K[self.p] != "RBRACE":
            body.append(self.test_item())
        c = self.p
        self.p = c + 1
        if cases is None:
            return ast.TestDecl(self.tt(p, c), name, self.span(n), body)
        return ast.TestDecl(self.tt(p, c), name, self.span(n), body, cases, case)

    def test_item(self) -> ast.TestInput | ast.TestStub | ast.TestExpect | ast.TestReplay:
        p = self.p
        K = self.K
        k = K[p]
        self.p = p + 1
        if k == "INPUT":
            v = self.opexpr()
            return ast.TestInput(self.tn(p, v), v)
        if k == "EXPECT":
            if K[p + 1] == "FAIL":
                code = self.p + 1
                self.p = code + 1
                if K[code] != "STRING":
                    _bail()
                return ast.TestExpect(self.tt(p, code), None, _sv(self.V[code]), self.span(code))
            v = self.opexpr()
            return ast.TestExpect(self.tn(p, v), v)
        if k == "REPLAY":
            path = self.take("STRING")
            return ast.TestReplay(self.tt(p, path), _sv(self.V[path]), self.span(path))
        if k != "STUB":
            _bail()
        kind = K[self.p]
        self.p += 1
        target = self.ident()
        values: list[ast.Expr | ast.StubFails] = []
        always = False
        if kind == "STEP" or kind == "ASK":
            self.take("RETURNS")
            values.append(self.opexpr())
            while kind == "ASK" and K[self.p] == "THEN":
                self.p += 1
                if K[self.p] == "ALWAYS":
                    self.p += 1
                    always = True
                    values.append(self.opexpr())
                    break
                values.append(self.opexpr())
            first = values[0]
            assert not isinstance(first, ast.StubFails)  # an answer of `ask` and `step`
            return ast.TestStub(
                self.tn(p, values[-1]),
                self.V[p + 1],
                target,
                first,
                values=values,
                always=always,
            )
        if kind not in ("AGENT", "STAGE", "TOOL"):
            _bail()
        k = K[self.p]
        self.p += 1
        if k == "RETURNS":
            values.append(self.opexpr())
        elif k == "FAILS":
            values.append(self.stub_fails(self.p - 1))
        else:
            _bail()
        while K[self.p] == "THEN":
            self.p += 1
            k = K[self.p]
            if k == "ALWAYS":
                self.p += 1
                always = True
                values.append(self.opexpr())
                break
            if k == "FAILS":
                self.p += 1
                values.append(self.stub_fails(self.p - 1))
            else:
                values.append(self.opexpr())
        first = values[0]
        only_fails = len(values) == 1 and isinstance(first, ast.StubFails)
        return ast.TestStub(
            self.tn(p, values[-1]),
            self.V[p + 1],
            target,
            None if isinstance(first, ast.StubFails) else first,
            first.code if only_fails and isinstance(first, ast.StubFails) else None,
            first.code_span if only_fails and isinstance(first, ast.StubFails) else None,
            values=values,
            always=always,
        )

    def stub_fails(self, fails: int) -> ast.StubFails:
        """``fails "code"`` (``fails``: the index of the ``fails`` token, already taken)."""
        code = self.take("STRING")
        return ast.StubFails(self.tt(fails, code), _sv(self.V[code]), self.span(code))

    def eval_decl(self, p: int) -> ast.EvalDecl:
        n = self.take("STRING")
        name = _sv(self.V[n])
        self.take("LBRACE")
        K = self.K
        body: list[ast.EvalDataset | ast.EvalExpect | ast.EvalScorer] = []
        while True:
            q = self.p
            k = K[q]
            if k == "RBRACE":
                break
            self.p = q + 1
            if k == "DATASET":
                path = self.take("STRING")
                body.append(ast.EvalDataset(self.tt(q, path), _sv(self.V[path]), self.span(path)))
            elif k == "EXPECT":
                t = self.type()
                body.append(ast.EvalExpect(self.tn(q, t), t))
            elif k == "SCORE" or k == "JUDGE":
                scorer = self.ident()
                if k == "SCORE":
                    self.take("EQUALS")
                expr = self.opexpr()
                threshold: float | None = None
                threshold_span: Span | None = None
                end = self.tn(q, expr)
                if K[self.p] == "THRESHOLD":
                    self.p += 1
                    num = self.take("NUMBER")
                    value = _number(self.V[num])
                    last = num
                    if K[self.p] == "PERCENT":
                        last = self.p
                        self.p += 1
                        value = value / 100
                    threshold = value
                    threshold_span = self.tt(num, last)
                    end = self.tt(q, last)
                body.append(
                    ast.EvalScorer(
                        end,
                        "score" if k == "SCORE" else "judge",
                        scorer,
                        expr,
                        threshold,
                        threshold_span,
                    )
                )
            else:
                _bail()
        c = self.p
        self.p = c + 1
        return ast.EvalDecl(self.tt(p, c), name, self.span(n), body)

    def extern(self, p: int) -> ast.Item:
        k = self.K[self.p]
        self.p += 1
        if k == "TYPE":
            name = self.name()
            return ast.ExternType(
                self.tt(p, name), ast.Ident(self.span(name), self.V[name]), doc=self.docs.get(p)
            )
        if k != "TOOL":
            _bail()
        catalog = None
        q = self.p
        if self.K[q] == "STRING":
            self.p = q + 1
            catalog = q
            self.take("AS")
        tool = self.ident()
        self.take("LPAR")
        params: list[ast.Param] = []
        if self.K[self.p] != "RPAR":
            params.append(self.param())
            K = self.K
            while K[self.p] == "COMMA":
                self.p += 1
                if K[self.p] not in ("COMMA", "RPAR"):
                    params.append(self.param())
        self.take("RPAR")
        self.take("ARROW")
        returns = self.type()
        if catalog is None:
            return ast.ExternTool(self.tn(p, returns), tool, params, returns, doc=self.docs.get(p))
        return ast.ExternTool(
            self.tn(p, returns),
            tool,
            params,
            returns,
            doc=self.docs.get(p),
            catalog=_sv(self.V[catalog]),
            catalog_span=self.span(catalog),
        )

    def param(self) -> ast.Param:
        n = self.name()
        omittable = self.K[self.p] == "QMARK"
        if omittable:
            self.p += 1
        self.take("COLON")
        t = self.type()
        name = ast.Ident(self.span(n), self.V[n])
        if omittable:
            return ast.Param(self.tn(n, t), name, t, omittable=True)
        return ast.Param(self.tn(n, t), name, t)

    # -- types ----------------------------------------------------------------------------------

    def type(self) -> ast.TypeExpr:
        t = self.type_post()
        K = self.K
        if K[self.p] != "PIPE":
            return t
        members = [t]
        while K[self.p] == "PIPE":
            self.p += 1
            members.append(self.type_post())
        return ast.UnionType(t.span.to(members[-1].span), members)

    def type_post(self) -> ast.TypeExpr:
        t = self.type_atom()
        K = self.K
        while True:
            k = K[self.p]
            if k == "LSQB":
                q = self.p + 1
                if K[q] != "RSQB":
                    _bail()
                self.p = q + 1
                t = ast.ArrayType(self.nt(t, q), t)
            elif k == "QMARK":
                t = ast.OptionalType(self.nt(t, self.p), t)
                self.p += 1
            else:
                return t

    def type_atom(self) -> ast.TypeExpr:
        p = self.p
        K = self.K
        k = K[p]
        if k == "MAP":
            self.p = p + 1
            self.take("LT")
            inner = self.type()
            gt = self.take("GT")
            return ast.MapType(self.tt(p, gt), inner)
        if k == "LBRACE":
            return self.object_type()
        if k == "STRING":
            self.p = p + 1
            return ast.LiteralType(self.span(p), _sv(self.V[p]))
        if k == "NUMBER":
            self.p = p + 1
            return ast.LiteralType(self.span(p), _number(self.V[p]))
        if k in _LITERAL_TYPES:
            self.p = p + 1
            return ast.LiteralType(self.span(p), _LITERAL_TYPES[k])
        if k == "LPAR" or k == "LPAR_NL":
            self.p = p + 1
            inner = self.type()
            self.take("RPAR")
            return inner
        self.name()
        if K[p + 1] == "LT":
            self.p = p + 2
            inner = self.type()
            gt = self.take("GT")
            return ast.GenericType(self.tt(p, gt), self.V[p], inner, self.span(p))
        return ast.NamedType(self.span(p), self.V[p])

    def object_type(self) -> ast.ObjectType:
        o = self.take("LBRACE")
        K = self.K
        fields: list[ast.FieldDecl] = []
        comma = False
        while True:
            k = K[self.p]
            if k == "RBRACE":
                break
            if k == "COMMA":
                if comma or not fields:
                    _bail()
                comma = True
                self.p += 1
                continue
            f = self.field()
            if fields and not comma and fields[-1].span.end_line == f.span.line:
                _bail()
            fields.append(f)
            comma = False
        c = self.p
        self.p = c + 1
        return ast.ObjectType(self.tt(o, c), fields)

    def field(self) -> ast.FieldDecl:
        n = self.name()
        self.take("COLON")
        t = self.type()
        constraints: list[ast.Constraint] = []
        K = self.K
        while K[self.p] == "AT":
            constraints.append(self.constraint())
        end = constraints[-1] if constraints else t
        return ast.FieldDecl(
            self.tn(n, end),
            ast.Ident(self.span(n), self.V[n]),
            t,
            constraints,
            doc=self.docs.get(n),
        )

    def constraint(self) -> ast.Constraint:
        at = self.p
        self.p = at + 1
        n = self.name()
        args: list[ast.Expr] = []
        if self.K[self.p] == "LPAR":
            self.p += 1
            if self.K[self.p] != "RPAR":
                for a in self.args():
                    if isinstance(a, ast.Argument):
                        _bail()
                    args.append(a)
            end = self.take("RPAR")
        else:
            end = n
        return ast.Constraint(self.tt(at, end), ast.Ident(self.span(n), self.V[n]), args)

    # -- statements -----------------------------------------------------------------------------

    def block(self) -> ast.Block:
        o = self.take("LBRACE")
        K = self.K
        stmts: list[ast.Stmt] = []
        push = stmts.append
        while K[self.p] != "RBRACE":
            push(self.stmt())
        c = self.p
        self.p = c + 1
        return ast.Block(self.tt(o, c), stmts)

    def stmt(self) -> ast.Stmt:
        p = self.p
        k = self.K[p]
        if k not in _STMT_START:
            e = self.expr()
            return ast.ExprStmt(e.span, e)
        self.p = p + 1
        if k == "LET":
            n = self.name()
            ann = None
            if self.K[self.p] == "COLON":
                self.p += 1
                ann = self.type()
            self.take("EQUALS")
            v = self.expr()
            return ast.LetStmt(self.tn(p, v), ast.Ident(self.span(n), self.V[n]), ann, v)
        if k == "RETURN":
            v = self.expr()
            return ast.ReturnStmt(self.tn(p, v), v)
        if k == "IF":
            out: ast.Stmt = self.if_rest(p, True)
            return out
        if k == "REQUIRE":
            cond = self.opexpr()
            self.take("ELSE")
            self.take("FAIL")
            msg = self.expr()
            return ast.RequireStmt(self.tn(p, msg), cond, msg)
        # FAIL
        v = self.expr()
        return ast.FailStmt(self.tn(p, v), v)

    def if_rest(self, p: int, stmt: bool) -> Any:
        """After ``if`` (token ``p``): an ``if`` statement (``stmt``: a conditional expression
        when ``then`` follows the condition)."""
        cond = self.opexpr()
        k = self.K[self.p]
        if k == "THEN":
            self.p += 1
            then = self.opexpr()
            self.take("ELSE")
            other = self.expr()
            e = ast.CondExpr(self.tn(p, other), cond, then, other)
            return ast.ExprStmt(e.span, e) if stmt else e
        if not stmt:
            _bail()
        then_block = self.block()
        else_: ast.Block | ast.IfStmt | None = None
        if self.K[self.p] == "ELSE":
            self.p += 1
            q = self.p
            if self.K[q] == "IF":
                self.p = q + 1
                else_ = self.if_rest(q, True)
                if not isinstance(else_, ast.IfStmt):
                    _bail()  # `else if c then …`: not an if statement
            else:
                else_ = self.block()
            return ast.IfStmt(self.tn(p, else_), cond, then_block, else_)
        return ast.IfStmt(self.tn(p, then_block), cond, then_block, None)

    # -- expressions ----------------------------------------------------------------------------

    def expr(self) -> ast.Expr:
        p = self.p
        k = self.K[p]
        if k in _CTX or k == "IF":
            # the words that start an `expr` that is not an `opexpr`
            if k == "FILTER":
                self.p = p + 1
                return self.filter_rest(p)
            if k == "ASK":
                self.p = p + 1
                return self.ask_rest(p)
            if k == "IF":
                self.p = p + 1
                out: ast.Expr = self.if_rest(p, False)
                return out
            if k == "TRY":
                self.p = p + 1
                return self.try_rest(p)
            if k == "LOOP":
                self.p = p + 1
                return self.loop_rest(p)
        e = self.opexpr()
        if self.K[self.p] == "CATCH":
            kw = self.p
            self.p = kw + 1
            codes, var = self.catch_head()
            body = self.block()
            return ast.CatchExpr(
                e.span.to(body.span), e, codes, var, body, keyword_span=self.span(kw)
            )
        return e

    def catch_head(self) -> tuple[list[ast.Ident] | None, ast.Ident | None]:
        K = self.K
        codes: list[ast.Ident] | None = None
        if K[self.p] == "ON":
            self.p += 1
            self.take("LSQB")
            codes = [self.ident()]
            while K[self.p] == "COMMA":
                self.p += 1
                if K[self.p] != "COMMA" and K[self.p] != "RSQB":
                    codes.append(self.ident())
            self.take("RSQB")
        var = None
        if K[self.p] == "AS":
            self.p += 1
            var = self.ident()
        return codes, var

    def try_rest(self, p: int) -> ast.TryExpr:
        block = self.block()
        catch = self.take("CATCH")
        codes, var = self.catch_head()
        body = self.block()
        return ast.TryExpr(
            self.tn(p, body),
            block,
            codes,
            var,
            body,
            keyword_span=self.span(catch),
            try_span=self.span(p),
        )

    def filter_rest(self, p: int) -> ast.FilterExpr:
        over = self.opexpr()
        self.take("AS")
        var = self.ident()
        self.take("WHERE")
        if self.K[self.p] == "JUDGE":
            self.p += 1
            judge = self.opexpr()
            return ast.FilterExpr(self.tn(p, judge), over, var, None, judge)
        cond = self.opexpr()
        return ast.FilterExpr(self.tn(p, cond), over, var, cond, None)

    def ask_rest(self, p: int) -> ast.AskExpr:
        q = self.opexpr()
        K = self.K
        expect: ast.TypeExpr | None = None
        default = else_fail = None
        last: Any = q
        if K[self.p] == "EXPECT":
            self.p += 1
            expect = last = self.type()
        k = K[self.p]
        if k == "DEFAULT":
            self.p += 1
            default = last = self.opexpr()
        elif k == "ELSE":
            self.p += 1
            self.take("FAIL")
            else_fail = last = self.opexpr()
        return ast.AskExpr(self.tn(p, last), q, expect, default, else_fail)

    def loop_rest(self, p: int) -> ast.LoopExpr:
        self.take("UP")
        self.take("TO")
        bound = self.opexpr()
        self.take("AS")
        var = self.ident()
        self.take("COMMA")
        acc = self.ident()
        acc_type = None
        if self.K[self.p] == "COLON":
            self.p += 1
            acc_type = self.type()
        self.take("EQUALS")
        init = self.opexpr()
        body = self.block()
        until = else_fail = else_value = None
        end: ast.Node = body
        if self.K[self.p] == "UNTIL":
            self.p += 1
            until = self.opexpr()
            self.take("ELSE")
            if self.K[self.p] == "FAIL":
                self.p += 1
                else_fail = end = self.opexpr()
            else:
                else_value = end = self.opexpr()
        return ast.LoopExpr(
            self.tn(p, end),
            bound,
            var,
            acc,
            acc_type,
            init,
            body,
            until,
            else_fail,
            else_value,
            self.span(p),
        )

    def opexpr(self) -> ast.Expr:
        x = self.operand()
        K = self.K
        k = K[self.p]
        if k not in _BINOPS:
            if type(x) is _Not:
                return _climb([x])
            out: ast.Expr = x
            return out
        seq: list[Any] = [x]
        push = seq.append
        while k in _BINOPS:
            q = self.p
            if k == "NOT":
                if K[q + 1] != "IN":
                    _bail()
                self.p = q + 2
                t = _OpTok(self.tt(q, q + 1))
                push(("not in", t, t))
            else:
                self.p = q + 1
                t = _OpTok(self.span(q))
                push((self.V[q], t, t))
            push(self.operand())
            k = K[self.p]
        return _climb(seq)

    def operand(self) -> Any:
        p = self.p
        k = self.K[p]
        if k == "NOT" or k == "NOT_NL":
            self.p = p + 1
            inner = self.operand()
            depth = 1
            x = inner
            while isinstance(x, _Not):
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                _bail()
            return _Not(_OpTok(self.span(p)), inner)  # type: ignore[arg-type]
        if k == "MINUS" or k == "MINUS_NL":
            self.p = p + 1
            return self.negated_rest(p)
        return self.postfix()

    def negated_rest(self, p: int) -> ast.Unary:
        """After a ``-`` (token ``p``): ``negated`` and the ``neg`` node."""
        q = self.p
        if self.K[q] == "MINUS":
            self.p = q + 1
            operand: ast.Expr = self.negated_rest(q)
        else:
            operand = self.postfix()
        if isinstance(operand, ast.Unary) and operand.op == "-":
            depth = 1
            x: ast.Expr = operand
            while isinstance(x, ast.Unary) and x.op == "-":
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                _bail()
        return ast.Unary(self.tn(p, operand), "-", operand)

    def postfix(self) -> ast.Expr:
        e = self.atom()
        K = self.K
        V = self.V
        while True:
            p = self.p
            k = K[p]
            if k == "DOT":
                q = p + 1
                if K[q] != "NAME":
                    _bail()
                self.p = q + 1
                nspan = self.span(q)
                name = V[q]
                if isinstance(e, ast.Projection) and not e.closed:

                    def member(inner: ast.Expr, name: str = name, nspan: Span = nspan) -> ast.Expr:
                        return ast.Member(inner.span.to(nspan), inner, name, nspan)

                    e = _push_projection(e, member, nspan)
                else:
                    e = ast.Member(e.span.to(nspan), e, name, nspan)
            elif k == "LPAR":
                self.p = p + 1
                args: list[Any] = [] if K[p + 1] == "RPAR" else self.args()
                close = self.span(self.take("RPAR"))
                named: list[ast.Argument] = []
                positional: list[ast.Expr] = []
                for a in args:
                    (named if isinstance(a, ast.Argument) else positional).append(a)
                if isinstance(e, ast.Name) and positional and not named and e.name in FUNCTIONS:
                    e = ast.FuncCall(e.span.to(close), e.name, e.span, positional)
                else:
                    e = ast.Call(e.span.to(close), e, named, positional)
            elif k == "LSQB":
                if K[p + 1] == "STAR":
                    if K[p + 2] != "RSQB":
                        _bail()
                    self.p = p + 3
                    close = self.span(p + 2)
                    if isinstance(e, ast.Projection) and not e.closed:

                        def build(inner: ast.Expr, close: Span = close) -> ast.Expr:
                            return ast.Projection(inner.span.to(close), inner, None)

                        e = _push_projection(e, build, close)
                    else:
                        e = ast.Projection(e.span.to(close), e, None)
                else:
                    self.p = p + 1
                    idx = self.expr()
                    close = self.span(self.take("RSQB"))
                    if isinstance(e, ast.Projection) and not e.closed:

                        def index(
                            inner: ast.Expr, idx: ast.Expr = idx, close: Span = close
                        ) -> ast.Expr:
                            return ast.Index(inner.span.to(close), inner, idx)

                        e = _push_projection(e, index, close)
                    else:
                        e = ast.Index(e.span.to(close), e, idx)
            else:
                return e

    def args(self) -> list[Any]:
        out = [self.arg()]
        K = self.K
        while K[self.p] == "COMMA":
            self.p += 1
            k = K[self.p]
            if k != "COMMA" and k != "RPAR":
                out.append(self.arg())
        return out

    def arg(self) -> Any:
        p = self.p
        if self.K[p] == "NAME" and self.K[p + 1] == "COLON":
            self.p = p + 2
            v = self.expr()
            return ast.Argument(self.tn(p, v), self.V[p], self.span(p), v)
        return self.expr()

    def atom(self) -> ast.Expr:
        p = self.p
        k = self.K[p]
        if k == "NAME":
            self.p = p + 1
            return ast.Name(self.span(p), self.V[p])
        if k == "STRING":
            self.p = p + 1
            lit: ast.StringLit = self.V[p]
            return lit
        if k == "NUMBER":
            self.p = p + 1
            return ast.NumberLit(self.span(p), _number(self.V[p]))
        if k == "LBRACE":
            return self.object()
        if k == "LPAR" or k == "LPAR_NL":
            self.p = p + 1
            e = self.expr()
            self.take("RPAR")
            if isinstance(e, ast.Projection):
                e.closed = True
            return e
        if k == "LSQB" or k == "LSQB_NL":
            self.p = p + 1
            items: list[ast.Expr] = []
            K = self.K
            sep = False
            while True:
                k = K[self.p]
                if k == "RSQB":
                    break
                if k == "COMMA":
                    self.p += 1
                    sep = False
                    continue
                if sep:
                    _bail()
                items.append(self.expr())
                sep = True
            c = self.p
            self.p = c + 1
            return ast.ListLit(self.tt(p, c), items)
        if k == "DURATION":
            self.p = p + 1
            v = self.V[p]
            return ast.DurationLit(self.span(p), _duration_ms(v), v)
        if k == "TRUE" or k == "FALSE":
            self.p = p + 1
            return ast.BoolLit(self.span(p), k == "TRUE")
        if k == "NULL":
            self.p = p + 1
            return ast.NullLit(self.span(p))
        if k == "MAP" or k == "PARALLEL":
            return self.map_expr()
        if k == "AGENT":
            return self.agent_expr()
        if k == "REDUCE":
            return self.reduce_expr()
        if k == "VERIFY":
            return self.verify_expr()
        self.name()
        return ast.Name(self.span(p), self.V[p])

    def object(self) -> ast.ObjectLit:
        o = self.take("LBRACE")
        K = self.K
        V = self.V
        entries: list[ast.ObjectEntry] = []
        comma = False
        while True:
            p = self.p
            k = K[p]
            if k == "RBRACE":
                break
            if k == "COMMA":
                if comma or not entries:
                    _bail()
                comma = True
                self.p = p + 1
                continue
            if k == "STRING":
                key = _sv(V[p])
            elif k == "NAME":
                key = V[p]
            else:
                _bail()
            if K[p + 1] != "COLON":
                _bail()
            self.p = p + 2
            v = self.expr()
            e = ast.ObjectEntry(self.tn(p, v), key, self.span(p), v)
            if entries and not comma and entries[-1].span.end_line == e.span.line:
                _bail()
            entries.append(e)
            comma = False
        c = self.p
        self.p = c + 1
        return ast.ObjectLit(self.tt(o, c), entries)

    def map_expr(self) -> ast.MapExpr:
        p = self.p
        parallel = self.K[p] == "PARALLEL"
        kw = p + 1 if parallel else p
        if self.K[kw] != "MAP":
            _bail()
        self.p = kw + 1
        over = self.opexpr()
        self.take("AS")
        var = self.ident()
        limit = None
        tolerance: tuple[Any, bool, Span | None] = (None, False, None)
        if self.K[self.p] == "LIMIT":
            self.p += 1
            limit = self.opexpr()
        if self.K[self.p] == "TOLERATE":
            self.p += 1
            num = self.take("NUMBER")
            end = num
            if self.K[self.p] == "PERCENT":
                end = self.p
                self.p += 1
            tolerance = (_number(self.V[num]), end != num, self.tt(num, end))
        body = self.block()
        return ast.MapExpr(
            self.tn(p, body),
            parallel,
            over,
            var,
            limit,
            body,
            keyword_span=self.span(kw),
            tolerate=tolerance[0],
            tolerate_percent=tolerance[1],
            tolerate_span=tolerance[2],
        )

    def reduce_expr(self) -> ast.ReduceExpr:
        p = self.p
        self.p = p + 1
        over = self.opexpr()
        self.take("AS")
        var = self.ident()
        self.take("COMMA")
        acc = self.ident()
        acc_type = None
        if self.K[self.p] == "COLON":
            self.p += 1
            acc_type = self.type()
        self.take("EQUALS")
        init = self.opexpr()
        body = self.block()
        return ast.ReduceExpr(self.tn(p, body), over, var, acc, acc_type, init, body)

    def verify_expr(self) -> ast.VerifyExpr:
        p = self.p
        self.p = p + 1
        self.take("LBRACE")
        K = self.K
        items: list[ast.VerifyCheck | ast.VerifyJudge] = []
        while True:
            q = self.p
            k = K[q]
            if k == "CHECK":
                self.p = q + 1
                cond = self.opexpr()
                self.take("ELSE")
                msg = self.opexpr()
                items.append(ast.VerifyCheck(self.tn(q, msg), cond, msg))
            elif k == "JUDGE":
                self.p = q + 1
                prompt = self.opexpr()
                items.append(ast.VerifyJudge(self.tn(q, prompt), prompt))
            else:
                break
        c = self.take("RBRACE")
        return ast.VerifyExpr(self.tt(p, c), items)

    def agent_expr(self) -> ast.AgentExpr:
        p = self.p
        self.p = p + 1
        self.take("LPAR")
        target = self.expr()
        self.take("RPAR")
        self.take("LBRACE")
        K = self.K
        clauses: list[ast.Clause] = []
        while K[self.p] != "RBRACE":
            clauses.append(self.clause())
        c = self.p
        self.p = c + 1
        return ast.AgentExpr(self.tt(p, c), target, clauses, self.span(p))

    def clause(self) -> ast.Clause:
        kw = self.p
        k = self.K[kw]
        self.p = kw + 1
        value: Any
        if k == "TASK" or k == "SYSTEM" or k == "MODEL" or k == "WRITE" or k == "TIMEOUT":
            value = self.opexpr()
            span = self.tn(kw, value)
        elif k == "MAX_ITERATIONS":
            value = self.opexpr()
            span = self.tn(kw, value)
        elif k == "INPUT":
            value = self.object()
            span = self.tn(kw, value)
        elif k == "EXPECT":
            value = self.type()
            span = self.tn(kw, value)
        elif k == "RETRY":
            obj = self.object()
            value = _retry(obj)
            span = self.tn(kw, obj)
        elif k == "BUDGET":
            obj = self.object()
            value = _budget(obj)
            span = self.tn(kw, obj)
        elif k == "TOOLS":
            q = self.p
            k2 = self.K[q]
            if k2 == "NONE":
                self.p = q + 1
                value = None
                span = self.tt(kw, q)
            elif k2 == "LSQB" or k2 == "LSQB_NL":
                self.p = q + 1
                value = self.tool_refs()
                span = self.tt(kw, self.take("RSQB"))
            else:
                _bail()
        else:
            _bail()
        return ast.Clause(span, self.V[kw], value, self.span(kw))

    def tool_refs(self) -> list[ast.ToolRef]:
        K = self.K
        refs: list[ast.ToolRef] = []
        sep = False
        while True:
            p = self.p
            k = K[p]
            if k == "RSQB":
                return refs
            if k == "COMMA":
                self.p = p + 1
                sep = False
                continue
            if sep:
                _bail()
            if k == "STRING":
                refs.append(ast.ToolRef(self.span(p), _sv(self.V[p]), True))
                self.p = p + 1
            else:
                self.name()
                refs.append(ast.ToolRef(self.span(p), self.V[p], False))
            sep = True
