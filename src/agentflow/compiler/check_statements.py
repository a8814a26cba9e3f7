"""The checker's statements and control: stages, bodies, scopes and names.

Checks each stage body and its statements (``let``, ``if``, ``require``, ``fail``, ``return``,
a final expression), reachability (``missing-return``, ``unreachable-code``), the scopes of
``let`` and loop variables (``unused-variable``), name lookup, and the loop expressions
``map``/``filter``/``reduce`` (docs/spec/LANGUAGE.md §4, §6).  A mixin of
:class:`~agentflow.compiler.checker.Checker`, whose state it reads and writes.
"""

from __future__ import annotations

import re
from typing import Any

from agentflow.compiler import check_errors
from agentflow.compiler.checker_shared import CheckerShared, Frame, Narrowing, Var
from agentflow.compiler.symbols import Symbol, suggest_name
from agentflow.compiler.types import (
    BOOL,
    ERROR,
    INT,
    JSON,
    NULL,
    NUMBER,
    TEXT,
    ErrorType,
    ListType,
    NamedRef,
    ObjectType,
    Type,
    UseType,
    join,
    mentions_never,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, closest, meant_hint
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    CALL_CLAUSES,
    EXPRESSION_WORDS,
    MAX_CONCURRENCY,
    MAX_LOOP_ROUNDS,
    STATEMENT_WORDS,
)
from agentflow.grammar import ast
from agentflow.grammar.syntax_errors import (
    OPERATOR_HINTS,
    joined_statement,
    misspelt_keyword_before,
)
from agentflow.grammar.written import expr_text

#: keywords that start a statement or an expression (the hint of a misspelt one read as a name)
#: the literals of other languages (any case) → `.flow`'s: `None`, `nil`, `TRUE`, `False`
_FOREIGN_LITERALS = {
    "none": "null",
    "nil": "null",
    "null": "null",
    "undefined": "null",
    "true": "true",
    "false": "false",
}

_EXPRESSION_KEYWORDS = [
    *STATEMENT_WORDS,
    *(w for w in EXPRESSION_WORDS if w not in ("and", "or", "in")),
]


#: how deeply trial passes of ``reduce`` bodies nest (StatementChecks.settle_acc): each level
#: checks its body twice, so nesting is bounded
_MAX_TRIALS = 3


#: operators of other languages written between two values (``s matches "x"``): a name to
#: the checker, which then says what `.flow` has instead


class StatementChecks(CheckerShared):
    """Stages, bodies, scopes, statements, names, loops."""

    def check_stage(self, stage: ast.StageDecl) -> None:
        name = stage.name.name
        declared = self.resolve_type(stage.returns) if stage.returns is not None else None
        is_main = self.all_stages.get(name) is stage
        self.current_stage = name
        t = self.body(stage.body, declared, stage.name.span, f"stage `{name}`")
        self.current_stage = None
        if is_main:
            st = declared if declared is not None else widen(t)
            self.stage_types[name] = st
            self.stage_syms[name] = Symbol("stage", name, st, stage)
            self.stage_order.append(stage)

    def body(self, block: ast.Block, expected: Type | None, owner_span: Span, what: str) -> Type:
        """Check a stage or control body; returns the body's value type."""
        frame = Frame(expected)
        self.frames.append(frame)
        self.scopes.append({})
        try:
            reachable = self.stmts(block.stmts, frame, top=True)
        finally:
            self.pop_scope()
            self.frames.pop()
        if reachable:
            self.report(
                D.MISSING_RETURN,
                f"{what} does not produce a value on every path",
                owner_span,
                hint='end it with `return <value>` (or an expression), or `fail "…"`',
            )
        if expected is not None:
            return expected
        if reachable and not frame.values:
            return ERROR
        return join(frame.values, self.env)

    def pop_scope(self) -> None:
        scope = self.scopes.pop()
        for name, var in scope.items():  # for "unknown name": say where a name was visible
            self.closed_names[name] = var
        for var in scope.values():
            if var.symbol.kind == "let" and not var.used and not var.symbol.name.startswith("_"):
                self.report(
                    D.UNUSED_VARIABLE,
                    f"`{var.symbol.name}` is never used",
                    var.span,
                    hint=f"remove it, or name it `_{var.symbol.name}`",
                )

    def declare(self, symbol: Symbol, span: Span) -> None:
        scope = self.scopes[-1]
        refused = symbol.kind != "index" and self.reserved_name(symbol.name, span, "a variable")
        prev = scope.get(symbol.name)
        if prev is not None and symbol.kind == "let" and prev.symbol.kind == "let":
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{symbol.name}` is defined twice in this block",
                span,
                notes=[Note("first defined here", prev.span)],
            )
            prev.used = True
        # a refused name is told once: never also "unused" (no read of it could reach it)
        scope[symbol.name] = Var(symbol, span, used=refused)

    def stmts(self, stmts: list[ast.Stmt], frame: Frame, *, top: bool) -> bool:
        depth = len(self.narrows)
        try:
            return self._stmts(stmts, frame, top=top)
        finally:
            del self.narrows[depth:]  # an early return's narrowing ends with its block

    def _stmts(self, stmts: list[ast.Stmt], frame: Frame, *, top: bool) -> bool:
        reachable = True
        warned = False
        _prefixed_strings(stmts, self.prefixed_strings)
        for i, s in enumerate(stmts):
            if (
                isinstance(s, ast.ExprStmt)
                and isinstance(s.expr, ast.StringLit)
                and any(v is s.expr for v in self.prefixed_strings.values())
                and self.unknown_name_ending(s.span.file, _value_of(stmts[i - 1]).span.end)
            ):
                # the string of `f"…"`, reported with the name `f` (not a defined `f`); last in
                # a body, it is the body's value (no `missing-return` for the one mistake)
                if top and i == len(stmts) - 1 and reachable:
                    frame.values.append(ERROR)
                    reachable = False
                continue
            joined = i > 0 and stmts[i - 1].span.end_line == s.span.line
            if joined and isinstance(s, ast.ExprStmt) and self.side_by_side(stmts[i - 1], s):
                continue
            if not reachable and not warned:
                self.report(
                    D.UNREACHABLE_CODE,
                    "unreachable code: it follows a `return` or `fail`",
                    s.span,
                )
                warned = True
            last = top and i == len(stmts) - 1
            if isinstance(s, ast.LetStmt):
                ann = self.resolve_type(s.annotation) if s.annotation is not None else None
                vt = self.expr(s.value, ann)
                t = ann if ann is not None else widen(vt)
                self.declare(Symbol("let", s.name.name, t, s), s.name.span)
            elif isinstance(s, ast.RequireStmt):
                self.expr(s.cond, BOOL)
                yes, no = self.narrowings(s.cond)
                with self.narrowed(no):
                    self.expr(s.message, TEXT)
                if yes:  # `require x != null else fail …`: `x` is not null after it
                    self.narrows.append(yes)
            elif isinstance(s, ast.FailStmt):
                self.expr(s.message, TEXT)
                reachable = False
            elif isinstance(s, ast.SleepStmt):
                self.sleep_stmt(s)
            elif isinstance(s, ast.ReturnStmt):
                vt = self.expr(s.value, frame.expected)
                frame.values.append(vt)
                reachable = False
            elif isinstance(s, ast.IfStmt):
                after, rest = self.if_narrowing(s, frame)
                reachable = reachable and after
                if rest:  # `if p.kind == "cat" { return … }`: `p` is not a `Cat` after it
                    self.narrows.append(rest)
            elif isinstance(s, ast.ExprStmt):
                if last and reachable:
                    vt = self.expr(s.expr, frame.expected)
                    frame.values.append(vt)
                    reachable = False
                else:
                    self.discarded = s.expr  # a `try` statement: its value is not used
                    dt = self.expr(s.expr, None)
                    # on the line of the statement before, or with the next on its line:
                    # that is the one mistake (`paralel map …`, `a b`), reported there
                    followed = i + 1 < len(stmts) and stmts[i + 1].span.line == s.span.end_line
                    one_line = joined or followed
                    if reachable and not one_line and not isinstance(dt, ErrorType):
                        self.check_used(s.expr, ends_if_block=not top and i == len(stmts) - 1)
        return reachable

    def side_by_side(self, prev: ast.Stmt, s: ast.ExprStmt) -> bool:
        """For ``s`` that starts on the line where ``prev`` ends, which parses only after a name
        that is a misspelt keyword (``paralel map …``, ``let x = a b``): False when that name
        is undefined, whose `unknown-name` ("did you mean `parallel`?") is the one mistake;
        else True, having reported the `syntax-error` the parser gives two values side by
        side (docs/reference/statements.md "Expression statements"), so no value is dropped
        silently.  ``s`` is checked for its names' use, its own diagnostics left out."""
        name = misspelt_keyword_before(prev)
        if name is not None and self.unknown_name_ending(name.span.file, name.span.end):
            return False
        before = len(self.diags)
        self.discarded = s.expr
        self.expr(s.expr, None)
        del self.diags[before:]
        err = joined_statement(prev, s)
        self.report(D.SYNTAX_ERROR, err.message, err.span, hint=err.hint)
        return True

    def unknown_name_ending(self, file: str, end: int) -> bool:
        """Whether an `unknown-name` was reported at a name of ``file`` that ends at the text
        offset ``end`` (the name before a statement on its line: ``retrun 1``, ``f"…"``)."""
        return any(
            d.code == D.UNKNOWN_NAME and d.span.end == end and d.span.file == file
            for d in self.diags
        )

    def check_used(self, e: ast.Expr, *, ends_if_block: bool = False) -> None:
        """``unused-value`` for an expression statement whose value is thrown away (not the
        body's last) when nothing in it has an effect: no tool call, agent, ``ask``,
        ``verify``, judge, ``fail`` or ``require`` (docs/reference/statements.md).
        ``ends_if_block``: the statement is the last of an ``if`` statement's block, which
        gives no value (the hint says how to give one)."""
        for n in ast.walk(e):
            if (
                isinstance(
                    n,
                    ast.AgentExpr | ast.AskExpr | ast.VerifyExpr | ast.FailStmt | ast.RequireStmt,
                )
                or (isinstance(n, ast.Call) and id(n) in self.tool_calls)
                or (isinstance(n, ast.FilterExpr) and n.judge is not None)
            ):
                return
        hint = (
            "bind it with `let` (`let _name = …` if it is never read), `return` it, or remove "
            "it; only a body's last expression is its value"
        )
        if isinstance(e, ast.Unary):
            hint = (
                f"a line that starts with `{e.op}` begins a new statement: to continue the "
                f"expression above, end its line with the operator; else {hint}"
            )
        elif ends_if_block:
            hint = (
                "an `if` block gives no value: `return` it inside the block, or write the "
                "value as `if c then a else b`"
            )
        self.report(
            D.UNUSED_VALUE,
            "the value of this expression is not used, and it has no effect",
            e.span,
            hint=hint,
        )

    def if_stmt(self, s: ast.IfStmt, frame: Frame) -> bool:
        """Check an ``if``; True when control may continue after it."""
        return self.if_narrowing(s, frame)[0]

    def if_narrowing(self, s: ast.IfStmt, frame: Frame) -> tuple[bool, Narrowing]:
        """Check an ``if``: whether control may continue after it, and the narrowing that
        holds after it when one branch cannot end normally (it returns or fails) and the other
        is a block or absent (docs/reference/types.md "Narrowing")."""
        self.expr(s.cond, BOOL)
        yes, no = self.narrowings(s.cond)
        self.scopes.append({})
        try:
            with self.narrowed(yes):
                r1 = self.stmts(s.then.stmts, frame, top=False)
        finally:
            self.pop_scope()
        if s.else_ is None:
            return True, ({} if r1 else no)
        if isinstance(s.else_, ast.IfStmt):
            with self.narrowed(no):
                r2 = self.if_stmt(s.else_, frame)
            return r1 or r2, {}
        else:
            self.scopes.append({})
            try:
                with self.narrowed(no):
                    r2 = self.stmts(s.else_.stmts, frame, top=False)
            finally:
                self.pop_scope()
        return r1 or r2, (no if r2 and not r1 else yes if r1 and not r2 else {})

    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            var = scope.get(name)
            if var is not None:
                var.used = True
                return var.symbol
        if name in self.stage_syms:
            return self.stage_syms[name]
        if name == "input":
            return self.input_sym
        if name in self.use_syms:
            return self.use_syms[name]
        return None

    def visible_names(self) -> set[str]:
        names = {"input"} | set(self.stage_syms) | set(self.use_syms)
        for scope in self.scopes:
            names |= set(scope)
        return names

    def name(self, e: ast.Name) -> Type:
        sym = self.lookup(e.name)
        if sym is not None:
            self.refs[id(e)] = sym
            if isinstance(sym.type, UseType):
                # agent targets resolve their aliases themselves (agent_target): here the
                # alias is used as a value, which it is not (even where `json` is expected)
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{e.name}` is a `use {sym.type.kind}` alias, not a value",
                    e.span,
                    hint="a `use` alias can only be the target of `agent(…)`",
                )
                return ERROR
            narrowed = self.narrowed_type(e) if self.narrows else None
            return narrowed if narrowed is not None else sym.type
        if e.name in self.all_stages:
            later = self.all_stages[e.name]
            if e.name == self.current_stage:
                msg = f"stage `{e.name}` cannot use its own result"
            else:
                msg = f"stage `{e.name}` is used before the stage that defines it"
            self.report(
                D.FORWARD_STAGE_REFERENCE,
                msg,
                e.span,
                notes=[Note(f"`{e.name}` is defined here", later.name.span)],
                hint="a stage sees only the stages declared before it; move it earlier",
            )
            return ERROR
        if e.name in self.error_names or self.function_as_value(e):
            return ERROR
        literal = _FOREIGN_LITERALS.get(e.name.lower())
        #: what the hint says was meant ("did you mean `meant`?"): the quick fix writes it
        meant: str | None = None
        hint: str | None = None
        if literal is not None:
            hint = f"`.flow` writes this value `{literal}` (not `{e.name}`)"
        else:
            meant = suggest_name(e.name, self.visible_names())
        if meant is None and hint is None:
            # `xs` for `input.xs`: a field of the input (or of a bound record) named bare
            hint, meant = self._field_hint(e.name)
        if meant is None and hint is None and e.name not in OPERATOR_HINTS:
            # `paralel map …`, `retrun x`: a misspelt keyword reads as a name (`matches` is
            # not `match`)
            meant = closest(e.name, _EXPRESSION_KEYWORDS)
        if meant is not None:
            hint = hint or meant_hint(meant)
            # the misspelt name was most likely meant to read that variable: not "unused"
            for scope in reversed(self.scopes):
                if meant in scope:
                    scope[meant].used = True
                    break
        prefixed = self.prefixed_strings.get(id(e))
        if prefixed is not None:  # `f"hello {name}"`: Python's f-string, C#'s `$"…"`
            self.report(
                D.UNKNOWN_NAME,
                f'unknown name `{e.name}`: a string takes no prefix (`{e.name}"…"` is not `.flow`)',
                e.span,
                hint=f'`.flow` strings interpolate with `"…${{x}}…"`: `{_interpolated(prefixed)}`',
            )
            return ERROR
        hint = (
            hint
            or OPERATOR_HINTS.get(e.name)
            or self._loop_index_hint(e.name)
            or self._function_scope_hint(e.name)
        )
        if not hint and e.name in CALL_CLAUSES:  # a tool call's clause put on a line of its own
            hint = (
                f"a tool call's `{e.name}` goes right after the call, on the line where it ends: "
                f"`let x = tool(arg: v) {CALL_CLAUSES[e.name]}`; an agent's, inside its block"
            )
        if not hint and e.name in ("break", "continue"):
            hint = (
                f"there is no `{e.name}`: a loop ends when its condition holds, "
                "`loop up to N as round, s = start { … } until <condition on s> else …`"
                + ("" if e.name == "break" else "; give the state unchanged to go on")
            )
        closed = self.closed_names.get(e.name)
        if closed is not None and closed.span.start < e.span.start and not hint:
            where = _scope_text(self, closed)
            if where is not None:
                visible_in, fix = where
                self.report(
                    D.UNKNOWN_NAME,
                    f"unknown name `{e.name}`: it is visible only in {visible_in}",
                    e.span,
                    notes=[Note(f"`{e.name}` is bound here, in {visible_in}", closed.span)],
                    hint=fix,
                )
                return ERROR
        if not hint:  # `titl` for `input.title`: a misspelt field named bare, when nothing else
            hint, meant = self._field_hint(e.name, close=True)
        self.report(
            D.UNKNOWN_NAME,
            f"unknown name `{e.name}`",
            e.span,
            hint=hint,
            fix=D.respelling(e.span, e.name, meant),
        )
        return ERROR

    def _field_hint(self, name: str, close: bool = False) -> tuple[str | None, str | None]:
        """ "did you mean `input.xs`?" for an unknown ``name`` that is a field of the flow's
        input, or `r.xs` for a field of a record a visible name holds (the innermost first), or
        an earlier stage's (outside a function's body), with what it says was meant
        (``input.xs``); else ``(None, None)``.  With ``close``, a field whose name is close to
        ``name`` (``titl`` → `input.title`, :func:`suggest_name`) instead."""
        if getattr(self, "current_fn", None) is not None:
            return None, None  # a function sees its parameters only (`_function_scope_hint`)
        holders: list[tuple[str, Type, Var | None]] = [("input", self.input_sym.type, None)]
        for scope in reversed(self.scopes):
            holders.extend((n, var.symbol.type, var) for n, var in scope.items())
        holders.extend((n, sym.type, None) for n, sym in self.stage_syms.items())
        for holder, t, var in holders:
            resolved = self.env.resolve(t)
            if not isinstance(resolved, ObjectType):
                continue
            field: str | None = name if name in resolved.fields else None
            if close:
                field = suggest_name(name, resolved.fields)
            if field is not None:
                if var is not None:  # most likely meant to read that record: not "unused"
                    var.used = True
                meant = f"{holder}.{field}"
                return f"did you mean `{meant}`? (`{field}` is a field of `{holder}`)", meant
        return None, None

    def _function_scope_hint(self, name: str) -> str | None:
        """In a function's body (docs/reference/programs.md "User functions"): an unknown
        ``name`` is most likely a value of the flow the function cannot see."""
        fn = getattr(self, "current_fn", None)
        if fn is None or name in CALL_CLAUSES or name in ("break", "continue"):
            return None
        return (
            f"a function computes its value from its parameters only (`{fn.signature}`): "
            f"pass `{name}` as a parameter, or compute this in a stage"
        )

    def _loop_index_hint(self, name: str) -> str | None:
        """``index`` in a ``loop``'s body (only ``map``, ``filter`` and ``reduce`` bind it): a
        hint naming the loop's round number."""
        if name != "index":
            return None
        for scope in reversed(self.scopes):
            for var in scope.values():
                sym = var.symbol
                if sym.kind == "loopvar" and isinstance(sym.decl, ast.LoopExpr):
                    return (
                        f"a `loop` has no `index`: its round number is `{sym.name}` "
                        f"(`as {sym.name}`, 1 for the first round)"
                    )
        return None

    def loop_scope(self, var: ast.Ident, elem: Type, decl: ast.Node) -> None:
        self.scopes.append({})
        self.declare(Symbol("loopvar", var.name, elem, decl), var.span)
        if var.name != "index":
            self.declare(Symbol("index", "index", INT, decl), var.span)

    def visit_MapExpr(self, e: ast.MapExpr, hint: Type | None) -> Type:
        elem = self.elem_type(e.over, "map")
        if e.limit is not None:
            self.count_setting(
                e.limit,
                "`limit`",
                MAX_CONCURRENCY,
                hint="it is how many items run at once; drop `limit` for the default, 4",
                low_hint="it is how many items run at once; drop `limit` for the default, 4",
            )
            if not e.parallel:
                self.report(
                    D.SYNTAX_ERROR,
                    "`limit` needs `parallel map`: a `map` runs its items one at a time",
                    e.limit.span,
                    hint="write `parallel map … limit N { … }` to run up to N items at once",
                )
        h = self._hint_parts(hint)
        body_hint = h.elem if isinstance(h, ListType) else None
        if e.tolerate is not None:  # `tolerate …`: the map yields Outcome<T>[]
            check_errors.check_tolerance(e, self.report)
            body_hint = check_errors.outcome_value_type(body_hint) if body_hint else None
        self.loop_scope(e.var, elem, e)
        try:
            span = e.keyword_span or e.span
            bt = self.body(e.body, body_hint, span, "the `map` body")
        finally:
            self.pop_scope()
        if isinstance(bt, ErrorType):
            return ERROR
        if e.tolerate is not None:
            return ListType(check_errors.outcome_type(bt))
        return ListType(bt)

    def visit_CatchExpr(self, e: ast.CatchExpr | ast.TryExpr, hint: Type | None) -> Type:
        return check_errors.check_catch(self, e, hint)

    visit_TryExpr = visit_CatchExpr

    def visit_FilterExpr(self, e: ast.FilterExpr, hint: Type | None) -> Type:
        ot = self.infer(e.over)
        elem = self.list_elem(ot, "filter", e.over.span)
        self.loop_scope(e.var, elem, e)
        kept: Type | None = None
        try:
            if e.cond is not None:
                self.expr(e.cond, BOOL)
                self.check_pure(e.cond)
                kept = self.kept_elem(e, e.cond)
            if e.judge is not None:
                self.expr(e.judge, TEXT)
                self.optional_in_text(e.judge, "the judge's prompt")
        finally:
            self.pop_scope()
        if isinstance(elem, ErrorType):
            return ERROR
        if ot == JSON:
            return ListType(JSON)
        if kept is not None:
            return ListType(kept)
        return widen(ot) if not isinstance(ot, NamedRef) else ot

    def kept_elem(self, e: ast.FilterExpr, cond: ast.Expr) -> Type | None:
        """The type of the elements a ``filter`` keeps when its condition narrows its variable
        (docs/reference/types.md "Narrowing"): ``filter xs as x where x != null`` keeps
        ``int``s of an ``int?[]``, ``where p.kind == "cat"`` the ``Cat``s of a ``Pet[]``; None
        when it does not."""
        yes, _no = self.narrowings(cond)
        hit = yes.get((e.var.name,))
        if hit is None or hit[0].decl is not e or isinstance(hit[1], ErrorType):
            return None
        return hit[1]

    def check_pure(
        self,
        cond: ast.Expr,
        what_is: str = "a `filter` condition",
        hint: str = 'compute it before the filter, or use `where judge "…"` for an LLM gate',
    ) -> None:
        for n in ast.walk(cond):
            what = None
            if isinstance(n, ast.Call) and id(n) in self.tool_calls:
                what = "a tool call"
            elif isinstance(n, ast.AgentExpr):
                what = "an agent"
            elif isinstance(n, ast.AskExpr):
                what = "an `ask`"
            elif isinstance(n, ast.VerifyExpr):
                what = "a `verify`"
            if what:
                self.report(
                    D.EFFECTFUL_GATE,
                    f"{what_is} must be pure, but this is {what}",
                    n.span,
                    hint=hint,
                )
                return

    def settle_acc(self, e: ast.ReduceExpr, elem: Type, init: Type) -> Type:
        """The accumulator's type of a ``reduce`` whose initial value held nothing somewhere
        (``acc = []``, ``acc = { seen: [] }``: ``never`` in it), which cannot be what each body
        must give: the join of the initial value and what the body gives with the accumulator
        typed ``init``.  That trial pass reports nothing (its diagnostics are dropped); the
        body is then checked against the joined type.  Trials nest (a ``reduce`` from ``[]``
        in one) at most :data:`_MAX_TRIALS` deep, so the passes stay few; deeper, ``init`` is
        the type."""
        bt = self.trial_body(e, elem, init)
        if bt is None:
            return init
        return join([init, widen(bt)], self.env)

    def trial_body(self, e: ast.ReduceExpr | ast.LoopExpr, elem: Type, acc_t: Type) -> Type | None:
        """What the body of ``e`` gives with its accumulator typed ``acc_t``, its diagnostics
        dropped (a trial pass); None when it gives an error or trials are already
        :data:`_MAX_TRIALS` deep."""
        if self.settling >= _MAX_TRIALS:
            return None
        mark = len(self.diags)
        self.settling += 1
        self.open_acc_scope(e, elem, acc_t)
        try:
            bt = self.body(e.body, None, e.span, "the body")
        finally:
            self.pop_scope()
            self.settling -= 1
            del self.diags[mark:]
        return None if isinstance(bt, ErrorType) else bt

    def open_acc_scope(self, e: ast.ReduceExpr, elem: Type, acc_t: Type) -> None:
        """A new scope with a ``reduce``'s element and accumulator (``index`` too) or a
        ``loop``'s round (an `int`) and state."""
        if isinstance(e, ast.LoopExpr):
            self.scopes.append({})
            self.declare(Symbol("loopvar", e.var.name, INT, e), e.var.span)
        else:
            self.loop_scope(e.var, elem, e)
        if e.acc.name == e.var.name:  # `as n, n = 0`: one name for two values
            loop = isinstance(e, ast.LoopExpr)
            first, second = ("round", "state") if loop else ("element", "accumulator")
            example = "as round, n = 0" if loop else "as x, acc = 0"
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{e.acc.name}` is defined twice in this `{'loop' if loop else 'reduce'}`: "
                f"as its {first} and as its {second}",
                e.acc.span,
                notes=[Note(f"its {first}", e.var.span)],
                hint=f"give the {first} and the {second} their own names (`{example}`)",
            )
        self.declare(Symbol("acc", e.acc.name, acc_t, e), e.acc.span)

    def acc_type(self, e: ast.ReduceExpr | ast.LoopExpr, hint: Type | None, elem: Type) -> Type:
        """The type of a ``reduce`` accumulator or a ``loop`` state, its initial value checked
        against it: the written type, else the expected one (``hint``), else the initial
        value's, widened (docs/reference/control.md "reduce", "loop")."""
        if e.acc_type is not None:
            acc_t = self.resolve_type(e.acc_type)
            self.expr(e.init, acc_t)
        elif hint is not None:
            acc_t = hint
            self.expr(e.init, acc_t)
        else:
            acc_t = widen(self.infer(e.init))
            if mentions_never(acc_t):  # `acc = []`: what the body gives settles it
                acc_t = self.settle_acc(e, elem, acc_t)
            elif acc_t == NULL:  # `acc = null`: one error, at the state, not one per branch
                acc_t = self.null_acc(e, elem)
        return acc_t

    def null_acc(self, e: ast.ReduceExpr | ast.LoopExpr, elem: Type) -> Type:
        """The accumulator's type of a ``reduce`` (a ``loop``'s state) whose unannotated
        initial value is ``null``: ``null`` — its initial value's type — unless the body gives
        something else (tried as :meth:`settle_acc` tries, its diagnostics dropped); then one
        ``type-mismatch`` at the initial value, with the annotation that fixes it
        (``acc: int? = null``), and the annotated type, so the body adds no error of its own."""
        bt = self.trial_body(e, elem, NULL)
        if bt is None:
            return NULL
        annotated = join([NULL, widen(bt)], self.env)
        if annotated == NULL:
            return NULL
        what = "state" if isinstance(e, ast.LoopExpr) else "accumulator"
        name = e.acc.name
        self.report(
            D.TYPE_MISMATCH,
            f"the {what} `{name}` starts as `null`, so its type is `null`, but the body gives "
            f"`{widen(bt)}`",
            e.init.span,
            notes=[Note(f"the {what} is declared here", e.acc.span)],
            hint=f"the {what}'s type comes from its initial value unless it is annotated: "
            f"write `{name}: {annotated} = null`",
        )
        return annotated

    def number_acc(
        self, e: ast.ReduceExpr | ast.LoopExpr, hint: Type | None, elem: Type, mark: int
    ) -> Type | None:
        """``number`` when the unannotated accumulator (state) of ``e`` is an `int` from its
        initial value (``acc = 0``) and its body, checked with errors from ``mark`` on, checks
        clean with a `number` one (``acc + 0.5``): the body's errors are then replaced by one at
        the initial value, whose hint is the annotation (``acc: number = 0``) — not the body's
        "make it an `int` with `floor(…)`"; else None (the body's errors stand)."""
        init_t = self.types.get(id(e.init))
        if e.acc_type is not None or hint is not None or init_t is None or widen(init_t) != INT:
            return None
        if e.acc.name == e.var.name or not any(d.severity == "error" for d in self.diags[mark:]):
            return None  # (one name for both: its error stands, said once)
        if self.settling >= _MAX_TRIALS:
            return None
        trial = len(self.diags)
        self.settling += 1
        self.open_acc_scope(e, elem, NUMBER)
        try:
            bt = self.body(e.body, None, e.span, "the body")
            clean = not any(d.severity == "error" for d in self.diags[trial:])
        finally:
            self.pop_scope()
            self.settling -= 1
            del self.diags[trial:]
        if not clean or isinstance(bt, ErrorType) or widen(bt) != NUMBER:
            return None  # the body is wrong with a `number` too: its own errors stand
        del self.diags[mark:]
        what = "state" if isinstance(e, ast.LoopExpr) else "accumulator"
        name, init = e.acc.name, expr_text(e.init)
        self.report(
            D.TYPE_MISMATCH,
            f"the {what} `{name}` starts as `{init}`, an `int`, so its type is `int`, but the "
            "body gives a `number`",
            e.init.span,
            notes=[Note(f"the {what} is declared here", e.acc.span)],
            hint=f"the {what}'s type comes from its initial value unless it is annotated: "
            f"write `{name}: number = {init}`",
        )
        return NUMBER

    def visit_ReduceExpr(self, e: ast.ReduceExpr, hint: Type | None) -> Type:
        elem = self.elem_type(e.over, "reduce")
        acc_t = self.acc_type(e, hint, elem)
        mark = len(self.diags)
        self.open_acc_scope(e, elem, acc_t)
        try:
            self.body(e.body, acc_t, e.span, "the `reduce` body")
        finally:
            self.pop_scope()
        return self.number_acc(e, hint, elem, mark) or acc_t

    def visit_LoopExpr(self, e: ast.LoopExpr, hint: Type | None) -> Type:
        """``loop up to N as round, state = init { … } [until c else …]`` (docs/reference/control.md
        "loop"): ``N`` an `int` (a constant 0 … MAX_LOOP_ROUNDS), the state typed like a
        ``reduce`` accumulator, ``round`` an `int` (1-based); ``until`` a pure `bool` over the
        new state, ``else fail`` a pure text, ``else v`` a pure value of the state's type."""
        self.count_setting(
            e.over,
            "`up to`",
            MAX_LOOP_ROUNDS,
            least=0,
            hint="a `loop` is bounded: split the work, or loop over fewer rounds",
            low_hint="`up to N` is the most rounds the loop runs: 0 runs none (the value is "
            "the initial state)",
        )
        acc_t = self.acc_type(e, hint, INT)
        mark = len(self.diags)
        self.open_acc_scope(e, INT, acc_t)
        try:
            self.body(e.body, acc_t, e.keyword_span or e.span, "the `loop` body")
            numbered = self.number_acc(e, hint, INT, mark)
            if numbered is not None:  # the state is a `number`: so is the rest read with it
                acc_t = numbered
                self.pop_scope()
                self.open_acc_scope(e, INT, acc_t)
            hint_pure = "compute it in the body and keep it in the state"
            if e.until is not None:
                self.expr(e.until, BOOL)
                self.check_pure(e.until, "an `until` condition", hint_pure)
            if e.else_fail is not None:
                self.expr(e.else_fail, TEXT)
                self.check_pure(e.else_fail, "an `else fail` message", hint_pure)
            if e.else_value is not None:
                self.expr(e.else_value, acc_t)
                self.check_pure(e.else_value, "the value of a `loop`'s `else`", hint_pure)
        finally:
            self.pop_scope()
        return acc_t


def _scope_text(ck: CheckerShared, var: Var) -> tuple[str, str] | None:
    """Where a name bound in a scope that has ended was visible, and how to use its value
    after it: ``("the `catch` block of line 18", hint)``; None when the binding is not found in
    the current stage."""
    stage = ck.all_stages.get(ck.current_stage) if ck.current_stage else None
    if stage is None:
        return None
    name, at = var.symbol.name, var.span.start
    best: tuple[int, str, str] | None = None
    for node in ast.walk(stage.body):
        found: tuple[str, str] | None = None
        if isinstance(node, (ast.CatchExpr, ast.TryExpr)):
            line = (node.keyword_span or node.span).line
            if node.var is not None and node.var.span.start == at or _inside(node.body, at):
                found = (
                    f"the `catch` block of line {line}",
                    f"use `{name}` inside that block; to keep something of it, make it part of "
                    "the fallback's value (`catch as err { … err.message … }`)",
                )
            elif isinstance(node, ast.TryExpr) and _inside(node.block, at):
                found = (
                    f"the `try` block of line {node.span.line}",
                    f"to use its value after the block, make `{name}` the block's value and bind "
                    f"the `try`: `let x = try {{ … {name} }} catch {{ … }}`",
                )
        elif isinstance(node, (ast.MapExpr, ast.ReduceExpr)) and (
            node.var.span.start == at or _inside(node.body, at)
        ):
            what = (
                "map"
                if isinstance(node, ast.MapExpr)
                else "loop"
                if isinstance(node, ast.LoopExpr)
                else "reduce"
            )
            found = (
                f"the `{what}` body of line {node.span.line}",
                f"use `{name}` inside the body; after it, use the `{what}`'s value",
            )
        elif isinstance(node, ast.IfStmt) and (
            _inside(node.then, at) or isinstance(node.else_, ast.Block) and _inside(node.else_, at)
        ):
            found = (
                f"a branch of the `if` of line {node.span.line}",
                f"use `{name}` inside the branch (a `return` there returns it from the "
                "stage), or bind the value before the `if`",
            )
        if found is not None and (best is None or node.span.start > best[0]):
            best = (node.span.start, *found)  # the innermost scope
    return (best[1], best[2]) if best is not None else None


def _inside(block: ast.Block, offset: int) -> bool:
    return block.span.start <= offset < block.span.end


#: string prefixes of other languages (Python's f-, r-, b-strings)
_STRING_PREFIXES = frozenset({"f", "F", "rf", "fr", "r", "b", "u"})


def _value_of(s: ast.Stmt) -> Any:
    """The value of the statement ``s`` (an expression statement's, a `let`'s or `return`'s)."""
    return s.expr if type(s) is ast.ExprStmt else getattr(s, "value", None)


def _prefixed_strings(stmts: list[ast.Stmt], out: dict[int, ast.StringLit]) -> None:
    """Record in ``out`` each statement whose value is a bare name of :data:`_STRING_PREFIXES`
    followed on its line by a string statement (``return f"hi {x}"``, ``f "hi"``): id(name) →
    string."""
    prev = None
    for s in stmts:
        if prev is not None and type(s) is ast.ExprStmt and type(s.expr) is ast.StringLit:
            value = _value_of(prev)
            if (
                type(value) is ast.Name
                and value.name in _STRING_PREFIXES
                and s.expr.span.line == value.span.end_line
                and s.expr.span.start >= value.span.end
            ):
                out[id(value)] = s.expr
        prev = s


def _interpolated(lit: ast.StringLit) -> str:
    """``lit`` as a `.flow` string with each ``{…}`` of its text written ``${…}`` (at most
    about 60 characters: longer ones end in ``…``)."""
    text = "".join(p if isinstance(p, str) else "${…}" for p in lit.parts)
    text = re.sub(r"(?<!\$)\{", "${", text.replace("\\", "\\\\").replace('"', '\\"'))
    return f'"{text}"' if len(text) <= 60 else f'"{text[:57]}…"'
