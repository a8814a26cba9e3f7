"""The checker's effects: tool calls, agents, ``ask``, ``verify``, clauses and settings.

Checks calls against tool signatures, ``agent`` blocks and their clauses (targets, tools,
``expect``, ``retry``, ``timeout``, ``budget`` …), ``ask`` and ``verify``, and the settings that
must be constants (docs/spec/LANGUAGE.md §5, §7, §8).  A mixin of
:class:`~agentflow.compiler.checker.Checker`, whose state it reads and writes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from agentflow.compiler.check_expressions import LENGTH_HINTS, literal_const, what_is
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.symbols import Symbol, ToolSig, suggest_alias_name, suggest_name
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    MEMBER,
    NULL,
    NUMBER,
    PATH,
    TEXT,
    VERDICT,
    ErrorType,
    ListType,
    MapType,
    ObjectType,
    OptionalType,
    Type,
    assignable,
    make_union,
    schema_problem,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, meant_hint
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    MAX_ITERATIONS,
    MAX_RETRY_ATTEMPTS,
    MAX_SLEEP_MS,
    RETRYABLE_CODES,
    duration_text,
)
from agentflow.grammar import ast


def _not_a_tool_call(e: ast.Expr) -> tuple[str, str]:
    """What stands before a tool call's clause when it is not a tool call, and the fix
    (`clause-without-tool-call`)."""
    if isinstance(e, ast.MapExpr):
        return (
            "it follows a `map`, which is not one",
            "put the clause on the tool call inside the `map` body, "
            "e.g. `{ fetch(url: u) retry { attempts: 2 } }`",
        )
    if isinstance(e, ast.AgentExpr):
        return (
            "it follows an `agent { … }` block",
            "an agent's `timeout` and `retry` go inside its block, among its clauses",
        )
    if isinstance(e, ast.FuncCall):
        return (
            f"`{e.name}(…)` is a library function (pure: nothing to time out or retry)",
            "only a tool call, written with named arguments, takes `timeout` and `retry`: "
            "remove the clause",
        )
    if any(isinstance(n, ast.Call) for n in ast.walk(e)):
        return (
            "it follows an expression with more than the call in it",
            "put the clause right after the tool call, in parentheses inside a larger "
            "expression: `(fetch(url: u) timeout 10s) + …`",
        )
    return (
        "it follows an expression that calls no tool",
        "only a tool call (`tool(arg: value)`) takes `timeout` and `retry`: remove the clause, "
        "or put it right after the call",
    )


@dataclass(frozen=True, slots=True)
class _Duration:
    """A duration the compiler computed: milliseconds, and the text of a literal (kept as the
    user wrote it: ``90s`` stays ``90s``)."""

    ms: int
    text: str | None = None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


#: the hint of an `attempts` out of its range
_ATTEMPTS_RANGE = (
    f"`attempts` takes a whole number from 0 to {MAX_RETRY_ATTEMPTS}: the tries after the "
    "first (`retry { attempts: 2 }` tries up to 3 times)"
)

#: the binary operators the compiler folds: numbers with ``+ - *``, durations with ``+ -``
_FOLD = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}


def _takes_null(t: Type) -> bool:
    """Whether ``null`` is a value of ``t`` (``T?``, ``null``, ``json``)."""
    return isinstance(t, OptionalType) or t == NULL or t == JSON


class AgentChecks(CheckerShared):
    """Tool calls, agents, ask, verify, clauses, budgets and constant settings."""

    def lookup_tool(self, name: str) -> ToolSig | None:
        return self.tool_decls.get(name)

    def visit_Call(self, e: ast.Call, hint: Type | None) -> Type:
        callee = e.callee
        if isinstance(callee, ast.Name):
            sig = self.lookup_tool(callee.name)
            if sig is None and "__" in callee.name:
                # not while the parse dropped an item: the `extern tool` may be that item
                # nor for a function refused for its tool-shaped name: one mistake, one report
                if callee.name not in self.error_names and not any(
                    d.code == D.SYNTAX_ERROR for d in self.diags
                ):
                    self.report(
                        D.UNTYPED_TOOL,
                        f"`{callee.name}` has no declared signature: its arguments are unchecked "
                        "and its result is `json`",
                        callee.span,
                        hint=f"declare it: `extern tool {callee.name}(…) -> T` (`flowc tools "
                        "--extern` prints it)",
                    )
                for a in e.args:
                    self.infer(a.value)
                for p in e.positional:
                    self.infer(p)
                params: dict[str, tuple[Type, bool]] = {a.name: (JSON, False) for a in e.args}
                prev = self.tools.get(callee.name)
                if prev is not None and not prev.declared:
                    params = {**prev.params, **params}
                self.tools[callee.name] = ToolSig(callee.name, params, JSON, False)
                self.tool_calls.add(id(e))
                self.types[id(callee)] = JSON
                return JSON
            if sig is None:
                sym = self.lookup(callee.name)
                if sym is not None:
                    self.refs[id(callee)] = sym
                    self.types[id(callee)] = sym.type
                    if not isinstance(sym.type, ErrorType):
                        # (a name whose value was refused, `let f = upper`, was told there)
                        self.report(
                            D.NOT_CALLABLE,
                            f"`{callee.name}` is not a tool and cannot be called",
                            callee.span,
                        )
                elif callee.name not in self.error_names and not self.not_a_function_call(e):
                    said, meant = self.tool_hint(callee.name)
                    if callee.name in LENGTH_HINTS:
                        said, meant = LENGTH_HINTS[callee.name], None
                    self.report(
                        D.UNKNOWN_TOOL,
                        f"unknown tool `{callee.name}`",
                        callee.span,
                        hint=said,
                        fix=D.respelling(callee.span, callee.name, meant),
                    )
                for a in e.args:
                    self.infer(a.value)
                for p in e.positional:
                    self.infer(p)
                return ERROR
            return self.tool_call(e, callee, sig)
        if isinstance(callee, ast.Member) and self.method_call(e):
            return ERROR
        ct = self.infer(callee)
        for a in e.args:
            self.infer(a.value)
        for p in e.positional:
            self.infer(p)
        if not isinstance(ct, ErrorType):
            if isinstance(callee, ast.Member) and not e.args and not e.positional:
                # `xs.count()`, `m.title()`: a field read written as a method call
                path = what_is(callee)
                shown = path.strip("`") if path != "this value" else f"….{callee.name}"
                self.report(
                    D.NOT_CALLABLE,
                    f"`.{callee.name}` is a field, not a method: it cannot be called",
                    e.span,
                    hint=f"drop the parentheses: `{shown}`",
                )
                return ct
            self.report(D.NOT_CALLABLE, "only tools can be called", callee.span)
        return ERROR

    def visit_CallOptions(self, e: ast.CallOptions, hint: Type | None) -> Type:
        """``call timeout D retry { … }`` (docs/reference/tools.md "Timeout and retry"): the
        call's type; each clause checked as an agent's (a constant positive duration; constant
        ``attempts`` 0–20; retryable codes), once each (`duplicate-clause`); anything but a tool
        call before them is `clause-without-tool-call`."""
        call = e.call
        t = self.infer(call, hint)
        if not (isinstance(call, ast.Call) and (id(call) in self.tool_calls or t == ERROR)):
            first = e.clauses[0]
            what, fix = _not_a_tool_call(call)
            self.report(
                D.CLAUSE_WITHOUT_TOOL_CALL,
                f"`{first.kind}` bounds a tool call, but {what}",
                first.keyword_span,
                notes=[Note("this is not a tool call", call.span)],
                hint=fix,
            )
        seen: dict[str, ast.Clause] = {}
        for c in e.clauses:
            if c.kind in seen:
                self.report(
                    D.DUPLICATE_CLAUSE,
                    f"`{c.kind}` is given twice on this tool call",
                    c.keyword_span,
                    notes=[Note("first given here", seen[c.kind].keyword_span)],
                )
            else:
                seen[c.kind] = c
            self.clause(c)
        return t

    def _use_line(self, line: str) -> D.Replacement:
        """The insertion of the top-level ``line`` on a line of its own after the file's last
        ``use`` item (else after its ``flow`` header, else at its start): the fix of an
        undeclared agent."""
        anchor: ast.Item | None = None
        for item in self.module.items:
            if isinstance(item, ast.UseDecl) or (
                isinstance(item, ast.FlowHeader) and anchor is None
            ):
                anchor = item
        if anchor is None:
            at = Span(self.module.file, 1, 1, 1, 1, 0, 0)
            return D.Replacement(at, line + "\n\n", f"Declare `{line}`", preferred=False)
        s = anchor.span
        at = Span(s.file, s.end_line, s.end_column, s.end_line, s.end_column, s.end, s.end)
        return D.Replacement(at, "\n" + line, f"Declare `{line}`", preferred=False)

    def tool_hint(self, name: str) -> tuple[str | None, str | None]:
        """The hint of `unknown-tool` and the tool it says was meant (its quick fix), or None:
        "did you mean" for a close name or the one declared tool that is the name with a server
        prefix (`user__lookup_customer`; several are all named, none meant), else the three
        declared tools nearest by name and where catalog tools come from."""
        meant = suggest_name(name, list(self.tool_decls))
        if meant:
            return meant_hint(meant), meant
        # the name without its server prefix (`lookup_customer` for `user__lookup_customer`)
        prefixed = sorted(t for t in self.tool_decls if t.partition("__")[2] == name)
        if prefixed:
            one = prefixed[0] if len(prefixed) == 1 else None
            return "did you mean " + " or ".join(f"`{t}`" for t in prefixed) + "?", one
        near = difflib.get_close_matches(name, sorted(self.tool_decls), n=3, cutoff=0.3)
        catalog = "a catalog tool is named `server__tool` (`flowc tools` lists them)"
        if not near:
            return catalog, None
        shown = ", ".join(f"`{t}`" for t in near)
        nearest = "the nearest tool is" if len(near) == 1 else "the nearest tools are"
        return f"{nearest} {shown}; {catalog}", None

    def tool_call(self, e: ast.Call, callee: ast.Name, sig: ToolSig) -> Type:
        self.tools[sig.name] = sig
        self.tool_calls.add(id(e))
        self.types[id(callee)] = sig.returns
        given: dict[str, ast.Argument] = {}
        unknown = False
        for p in e.positional:
            self.infer(p)
            self.report(
                D.POSITIONAL_ARGUMENT,
                "tool arguments must be named",
                p.span,
                hint="write `name: value`"
                + (f" (parameters: {', '.join(sig.params)})" if sig.params else ""),
            )
            unknown = True
        for a in e.args:
            if a.name in given:
                self.infer(a.value)
                self.report(
                    D.DUPLICATE_FIELD,
                    f"argument `{a.name}` is given twice",
                    a.name_span,
                    notes=[Note("first given here", given[a.name].name_span)],
                )
                continue
            given[a.name] = a
            if a.name not in sig.params:
                self.infer(a.value)
                unknown = True
                missing = [p for p in sig.params if p not in given]
                meant = suggest_name(a.name, missing or list(sig.params))
                self.report(
                    D.UNKNOWN_ARGUMENT,
                    f"`{sig.name}` has no parameter `{a.name}`",
                    a.name_span,
                    hint=meant_hint(meant) if meant else None,
                    fix=D.respelling(a.name_span, a.name, meant),
                )
                continue
            pt, opt = sig.params[a.name]
            if opt and isinstance(a.value, ast.NullLit) and not _takes_null(pt):
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{a.name}` of `{sig.name}` may be left out, but not given as `null`",
                    a.value.span,
                    hint=f"leave `{a.name}` out",
                )
                continue
            self.expr(a.value, pt)
        if not unknown:
            missing = [p for p, (_t, opt) in sig.params.items() if not opt and p not in given]
            if missing:
                names = ", ".join(f"`{m}`" for m in missing)
                self.report(
                    D.MISSING_ARGUMENT,
                    f"`{sig.name}` needs argument{'s' if len(missing) > 1 else ''} {names}",
                    callee.span,
                    notes=(
                        [Note("declared here", sig.decl.span)]
                        if sig.decl is not None and not sig.prelude
                        else []
                    ),
                    hint="give "
                    + ("it" if len(missing) == 1 else "them")
                    + " by name: `"
                    + f"{sig.name}("
                    + ", ".join(f"{m}: …" for m in missing)
                    + (", …" if given else "")
                    + ")`",
                )
        return sig.returns

    def budget(self, spec: ast.BudgetSpec) -> None:
        """A ``budget { … }``: each limit a number literal ≥ 0 (``inferences`` and ``tokens``
        whole numbers, ``cost`` dollars); an empty budget is reported (it limits nothing)."""
        if not spec.entries:
            self.report(
                D.INVALID_VALUE,
                "an empty `budget` limits nothing",
                spec.span,
                hint="give `inferences`, `tokens` and/or `cost`, e.g. `budget { inferences: 20 }`",
            )
        seen: dict[str, ast.ObjectEntry] = {}
        for entry in spec.entries:
            key, value = entry.key, entry.value
            if key in seen:
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"budget `{key}` is given twice",
                    entry.key_span,
                    notes=[Note("first given here", seen[key].key_span)],
                )
                continue
            seen[key] = entry
            whole = key != "cost"
            want = INT if whole else NUMBER
            t = self.expr(value, want)
            if isinstance(t, ErrorType) or not assignable(t, want, self.env):
                continue  # the type mismatch is reported
            unit = "a whole number" if whole else "a number of dollars"
            v = self.compile_time(
                value,
                f"budget `{key}`",
                "budgets are fixed when the flow is compiled (`flowc cost` reads them)",
                hint=f"write {unit}, e.g. `{key}: {20 if whole else 0.5}`",
            )
            if v is None:
                continue
            if v < 0 or (whole and not isinstance(v, int)):
                self.report(
                    D.INVALID_VALUE, f"budget `{key}` must be {unit} ≥ 0, found {v}", value.span
                )

    def constant(self, e: ast.Expr, depth: int = 0) -> tuple[bool, Any]:
        """The value of ``e`` when the compiler can compute it: ``(True, value)`` or
        ``(False, None)``. Constants are literals (a duration as :class:`_Duration`), ``-`` of
        a number, ``+ - *`` of two numbers, ``+ -`` of two durations (``-`` never below 0ms, as
        at run time), and a name bound by ``let`` to a constant (``let t = 90s`` … ``timeout t``). Call after ``e`` is typed (names
        resolved)."""
        if depth > 64:
            return False, None
        if isinstance(e, ast.DurationLit):
            return True, _Duration(e.ms, e.text)
        if isinstance(e, ast.Name):
            sym = self.refs.get(id(e))
            if sym is not None and sym.kind == "let" and isinstance(sym.decl, ast.LetStmt):
                return self.constant(sym.decl.value, depth + 1)
            return False, None
        if isinstance(e, ast.Unary) and e.op == "-":
            ok, v = self.constant(e.operand, depth + 1)
            if ok and _is_number(v):
                return True, -v
            return False, None
        if isinstance(e, ast.Binary) and e.op in _FOLD:
            ok, a = self.constant(e.left, depth + 1)
            ok2, b = self.constant(e.right, depth + 1)
            if not (ok and ok2):
                return False, None
            if _is_number(a) and _is_number(b):
                return True, _FOLD[e.op](a, b)
            if isinstance(a, _Duration) and isinstance(b, _Duration) and e.op != "*":
                # as at run time: a duration is never below 0ms (`30s - 1m` is `0ms`)
                return True, _Duration(max(0, _FOLD[e.op](a.ms, b.ms)))
            return False, None
        return literal_const(e)

    def sleep_stmt(self, s: ast.SleepStmt) -> None:
        """``sleep D`` (docs/reference/statements.md "sleep"): ``D`` a ``duration``; a
        constant one from 1ms to :data:`MAX_SLEEP_MS` (``invalid-duration`` for zero or less,
        ``sleep-too-long`` past 365 days); a computed one is checked when the sleep runs."""
        e = s.duration
        if isinstance(e, ast.NumberLit):  # `sleep 5`: which unit was meant is not known
            self.report(
                D.TYPE_MISMATCH,
                f"`sleep` takes a duration, found the number {e.value}",
                e.span,
                hint=f"write the unit: `sleep {e.value}s` (or `ms`, `m`, `h`)",
            )
            return
        if isinstance(self.expr(e, DURATION), ErrorType):
            return
        ok, v = self.constant(e)
        if not ok or not isinstance(v, _Duration):
            return
        shown = v.text or duration_text(v.ms)
        if v.ms <= 0:
            self.report(
                D.INVALID_DURATION,
                f"`sleep` needs a positive duration, found {shown}",
                e.span,
                hint="a sleep of no time waits for nothing: remove it",
            )
        elif v.ms > MAX_SLEEP_MS:
            self.report(
                D.SLEEP_TOO_LONG,
                f"`sleep {shown}` is longer than the longest sleep, 365 days (8760h)",
                e.span,
                hint="a run that waits longer should be started again later (a schedule), "
                "not kept asleep",
            )
        else:
            self.constants[id(e)] = shown  # the plan's `for`, as written

    def run_time_part(self, e: ast.Expr) -> ast.Expr:
        """The first part of a non-constant ``e`` that is only known at run time (``input.t``
        in ``input.t + 1s``), for the note of a compile-time setting."""
        if isinstance(e, ast.Binary):
            for side in (e.left, e.right):
                if not self.constant(side)[0]:
                    return self.run_time_part(side)
        if isinstance(e, ast.Unary):
            return self.run_time_part(e.operand)
        return e

    def compile_time(self, e: ast.Expr, what: str, why: str, *, hint: str) -> Any:
        """The constant value of a setting the plan fixes when the flow is compiled (``timeout``,
        ``retry { attempts }``, budget limits), recorded in ``constants``; None, reported as
        `invalid-value`, when ``e`` is not a constant. Durations come back as
        :class:`_Duration`."""
        ok, v = self.constant(e)
        if ok and not isinstance(v, bool) and (_is_number(v) or isinstance(v, _Duration)):
            if isinstance(v, _Duration):
                self.constants[id(e)] = v.text or duration_text(v.ms)
            else:
                self.constants[id(e)] = v
            return v
        part = self.run_time_part(e)
        self.report(
            D.INVALID_VALUE,
            f"{what} must be a constant: {why}",
            e.span,
            notes=[Note(f"{what_is(part)} is only known when the flow runs", part.span)],
            hint=hint,
        )
        return None

    def count_setting(
        self,
        e: ast.Expr,
        what: str,
        maximum: int,
        *,
        least: int = 1,
        hint: str | None = None,
        low_hint: str | None = None,
    ) -> None:
        """``limit`` / ``max_iterations`` / a ``loop``'s ``up to``: any `int` expression
        (docs/spec/LANGUAGE.md §6, docs/reference/control.md "loop"). A constant is checked here
        (``least`` … ``maximum``, else `invalid-value`, whose hint gives that range, then
        ``hint`` for a constant over ``maximum`` and ``low_hint`` for one under ``least``) and
        written into the plan as a number; anything else is a template the run evaluates and
        checks the same way (a `validation` error naming the `.flow` source)."""
        t = self.expr(e, INT)
        if isinstance(t, ErrorType):
            return
        ok, v = self.constant(e)
        if not ok or not isinstance(v, int) or isinstance(v, bool):
            return
        allowed = f"{what} takes a whole number from {least} to {maximum}"
        if v < least:
            bound = "positive" if least == 1 else f"{least} or more"
            self.report(
                D.INVALID_VALUE,
                f"{what} must be {bound}, found {v}",
                e.span,
                hint=f"{low_hint} ({allowed})" if low_hint else allowed,
            )
        elif v > maximum:
            self.report(
                D.INVALID_VALUE,
                f"{what} must be at most {maximum}, found {v}",
                e.span,
                hint=f"{hint} ({allowed})" if hint else allowed,
            )
        else:
            self.constants[id(e)] = v

    def optional_in_text(self, text: Any, what: str) -> None:
        """`optional-in-text`: each ``${x}`` of the string literal ``text`` (a model reads it)
        whose value may be ``null`` (``T?``), which renders as the word ``null``."""
        if not isinstance(text, ast.StringLit):
            return
        for p in text.parts:
            if not isinstance(p, ast.Interpolation):
                continue
            t = self.types.get(id(p.expr))
            if t is None or not isinstance(self.env.resolve(t), OptionalType):
                continue
            shown = self.source_text(p.expr)
            shown = shown if shown != "…" else "x"
            self.report(
                D.OPTIONAL_IN_TEXT,
                f"`{shown}` may be `null` (`{self.said(t)}`): {what} would read `null` then",
                p.span,
                hint=f'say what to write instead: `${{{shown} ?? "none"}}`',
            )

    def names_redefined_builtin(self, written: ast.TypeExpr) -> bool:
        """Whether the written type names a built-in type the file tried to redefine
        (``type Verdict { … }``): that `type` is the one error, not each use of the name."""
        return any(
            isinstance(n, ast.NamedType) and n.name in self.redefined_builtins
            for n in ast.walk(written)
        )

    def visit_AskExpr(self, e: ast.AskExpr, hint: Type | None) -> Type:
        self.expr(e.question, TEXT)
        self.optional_in_text(e.question, "the question")
        t = self.resolve_type(e.expect) if e.expect is not None else TEXT
        if e.expect is not None and not isinstance(t, ErrorType):
            problem = schema_problem(t, self.env)
            if problem and not self.names_redefined_builtin(e.expect):
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"`ask … expect {self.said(t)}` has no JSON Schema: {problem}",
                    e.expect.span,
                    hint="an answer must be plain data (no `Verdict` or extern types)",
                )
        if e.default is not None:
            self.expr(e.default, t)
        if e.else_fail is not None:
            self.expr(e.else_fail, TEXT)
        return t

    def visit_VerifyExpr(self, e: ast.VerifyExpr, hint: Type | None) -> Type:
        if not e.items:
            self.report(
                D.INVALID_VALUE,
                "an empty `verify` checks nothing",
                e.span,
                hint='give it `check COND else "message"` and/or `judge "…"` items',
            )
        for item in e.items:
            if isinstance(item, ast.VerifyCheck):
                self.expr(item.cond, BOOL)
                self.expr(item.message, TEXT)
            else:
                self.expr(item.prompt, TEXT)
                self.optional_in_text(item.prompt, "the judge's prompt")
        return VERDICT

    def agent_target(self, target: ast.Expr) -> None:
        def invalid(msg: str) -> None:
            self.report(
                D.INVALID_AGENT_TARGET,
                msg,
                target.span,
                hint="use an alias from `use agent`, `TEAM.main` or `TEAM.member(name)`",
            )

        def use_of(n: ast.Expr) -> Symbol | None:
            if isinstance(n, ast.Name):
                sym = self.lookup(n.name)
                if sym is not None:
                    self.refs[id(n)] = sym
                    self.types[id(n)] = sym.type
                    return sym
            return None

        if isinstance(target, ast.Name):
            sym = use_of(target)
            if (
                sym is None
                and target.name not in self.error_names
                and not self.in_names(target.name)
            ):
                meant = suggest_alias_name(target.name, list(self.use_syms))
                self.report(
                    D.UNKNOWN_NAME,
                    f"unknown agent `{target.name}`",
                    target.span,
                    hint=meant_hint(meant)
                    if meant
                    else f'declare it: `use agent "{target.name}" as {target.name}`',
                    fix=D.respelling(target.span, target.name, meant)
                    if meant
                    else self._use_line(f'use agent "{target.name}" as {target.name}'),
                )
                return
            if sym is None:
                return
            if sym.kind == "use" and self.uses[sym.name].kind == "agent":
                self.types[id(target)] = sym.type
                return
            if sym.kind == "use":
                invalid(
                    f"`{target.name}` is a team: use `{target.name}.main` or `{target.name}.member(…)`"
                )
                return
            if isinstance(sym.type, ErrorType):
                return  # already reported where it was bound (e.g. `let who = alias`)
            invalid(f"`{target.name}` is not an agent")
            return
        if isinstance(target, ast.Member) and isinstance(target.obj, ast.Name):
            sym = use_of(target.obj)
            if sym is not None and sym.kind == "use" and self.uses[sym.name].kind == "team":
                if target.name == "main":
                    self.types[id(target)] = sym.type
                    return
                invalid(
                    f"a team target is `{sym.name}.main` or `{sym.name}.member(…)`, "
                    f"not `{sym.name}.{target.name}`"
                )
                return
        if (
            isinstance(target, ast.Call)
            and isinstance(target.callee, ast.Member)
            and isinstance(target.callee.obj, ast.Name)
        ):
            sym = use_of(target.callee.obj)
            if sym is not None and sym.kind == "use" and self.uses[sym.name].kind == "team":
                if target.callee.name == "member":
                    values = list(target.positional) + [a.value for a in target.args]
                    if len(values) == 1:
                        self.expr(values[0], make_union([TEXT, MEMBER]))
                        self.types[id(target)] = sym.type
                        self.types[id(target.callee)] = sym.type
                        return
                    for v in values:
                        self.infer(v)
                    invalid(f"`{sym.name}.member(…)` takes exactly one member name")
                    return
                invalid(
                    f"a team target is `{sym.name}.main` or `{sym.name}.member(…)`, "
                    f"not `{sym.name}.{target.callee.name}(…)`"
                )
                return
        # anything else: type it silently for the record, then report the target
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                sym = self.lookup(n.name)
                if sym is not None:
                    self.refs[id(n)] = sym
        if isinstance(target, ast.StringLit) and target.is_plain:
            # `agent("classifier")`: the agent's name where its `use agent` alias goes
            aliases = [
                a for a, u in self.uses.items() if u.kind == "agent" and u.target == target.text
            ]
            ident = re.sub(r"\W", "_", target.text) if target.text else "name"
            self.report(
                D.INVALID_AGENT_TARGET,
                "an agent target is a `use agent` alias, not a string",
                target.span,
                hint=(
                    f"use its alias: `agent({aliases[0]})`"
                    if aliases
                    else f'declare it: `use agent "{target.text}" as {ident}`, then '
                    f"`agent({ident})`"
                ),
            )
            return
        invalid("this is not an agent target")

    def in_names(self, name: str) -> bool:
        return name in self.all_stages or any(name in s for s in self.scopes)

    def visit_AgentExpr(self, e: ast.AgentExpr, hint: Type | None) -> Type:
        self.agent_target(e.target)
        seen: dict[str, ast.Clause] = {}
        result: Type = ERROR
        for c in e.clauses:
            if c.kind in seen:
                self.report(
                    D.DUPLICATE_CLAUSE,
                    f"`{c.kind}` is given twice in this agent block",
                    c.keyword_span,
                    notes=[Note("first given here", seen[c.kind].keyword_span)],
                )
                # still check it, but its result does not count
                self.clause(c)
                continue
            seen[c.kind] = c
            t = self.clause(c)
            if c.kind == "expect":
                result = t
        for required in ("task", "expect"):
            if required not in seen:
                self.report(
                    D.MISSING_CLAUSE,
                    f"this agent block has no `{required}` clause",
                    e.keyword_span,
                    hint=(
                        'add `task "…"` saying what the agent must do'
                        if required == "task"
                        else "add `expect T` naming the type of the agent's answer"
                    ),
                )
        return result

    def clause(self, c: ast.Clause) -> Type:
        kind, v = c.kind, c.value
        if kind in ("task", "system", "model"):
            self.expr(v, TEXT)
            if kind != "model":
                self.optional_in_text(v, f"the `{kind}`")
        elif kind == "input":
            if isinstance(v, ast.Expr):
                t = self.infer(v)
                if not isinstance(v, ast.ObjectLit) and not isinstance(t, ErrorType):
                    r = self.env.resolve(t)
                    if not isinstance(r, (ObjectType, MapType)) and t != JSON:
                        self.report(
                            D.TYPE_MISMATCH,
                            f"`input` must be an object, found {self.said_words(t)}",
                            v.span,
                        )
        elif kind == "tools":
            if v is not None and len(v) == 0:
                self.report(
                    D.EMPTY_TOOLS,
                    "`tools []` grants no tools",
                    c.span,
                    hint="write `tools none` for an agent without tools",
                    fix=D.Replacement(c.span, "tools none", "Replace `tools []` with `tools none`")
                    if c.span.line == c.span.end_line
                    else None,
                )
            for ref in v or []:
                if ref.pattern:
                    continue
                if ref.name in self.tool_decls or "__" in ref.name:
                    continue
                if ref.name in self.error_names:
                    continue
                hint, meant = self.tool_hint(ref.name)
                self.report(
                    D.UNKNOWN_TOOL,
                    f"unknown tool `{ref.name}`",
                    ref.span,
                    hint=hint,
                    fix=D.respelling(ref.span, ref.name, meant),
                )
        elif kind == "write":
            t = self.infer(v, ListType(PATH))
            if not isinstance(t, ErrorType) and not assignable(t, ListType(PATH), self.env):
                self.report(
                    D.WRITE_NOT_PATH_ARRAY,
                    f"`write` must be `path[]`, found {self.said_words(t)}",
                    v.span,
                    hint='give a `path[]` field, or a list of paths such as `[input.dir, "notes.md"]`',
                )
        elif kind == "expect":
            t = self.resolve_type(v)
            if isinstance(t, ErrorType):
                return ERROR
            problem = schema_problem(t, self.env)
            if problem and self.names_redefined_builtin(v):
                return ERROR  # `type Verdict { … }` was the error: the user meant their type
            if problem:
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"`expect {self.said(t)}` has no JSON Schema: {problem}",
                    v.span,
                    hint="an agent's answer must be plain data (no `Verdict` or extern types)",
                )
                return ERROR
            return t
        elif kind == "timeout":
            t = self.expr(v, DURATION)
            if not isinstance(t, ErrorType):
                d = self.compile_time(
                    v,
                    "`timeout`",
                    "the plan gives the step a fixed timeout when the flow is compiled",
                    hint="write a duration such as `timeout 90s` (or a `let` of one)",
                )
                if isinstance(d, _Duration) and d.ms <= 0:
                    del self.constants[id(v)]
                    self.report(D.INVALID_DURATION, "`timeout` must be a positive duration", v.span)
        elif kind == "max_iterations":
            self.count_setting(v, "`max_iterations`", MAX_ITERATIONS)
        elif kind == "budget":
            if isinstance(v, ast.BudgetSpec):
                self.budget(v)
        elif kind == "retry":
            if isinstance(v, ast.RetrySpec):
                if v.attempts is not None and not isinstance(self.expr(v.attempts, INT), ErrorType):
                    n = self.compile_time(
                        v.attempts,
                        "`attempts`",
                        "the plan fixes a step's retries when the flow is compiled",
                        hint="write a number of extra tries, e.g. `attempts: 2`",
                    )
                    if n is None:
                        pass
                    elif n < 0:
                        self.report(
                            D.INVALID_VALUE,
                            f"`attempts` must be zero or more, found {n}",
                            v.attempts.span,
                            hint=_ATTEMPTS_RANGE,
                        )
                    elif n > MAX_RETRY_ATTEMPTS:
                        self.report(
                            D.INVALID_VALUE,
                            f"`attempts` must be at most {MAX_RETRY_ATTEMPTS}, found {n}",
                            v.attempts.span,
                            hint=_ATTEMPTS_RANGE,
                        )
                for code in v.on or []:
                    if code.name not in RETRYABLE_CODES:
                        meant = suggest_name(code.name, list(RETRYABLE_CODES))
                        self.report(
                            D.UNKNOWN_ERROR_CODE,
                            f"`{code.name}` is not a retryable error code",
                            code.span,
                            hint=meant_hint(meant)
                            if meant
                            else f"retry on {', '.join(RETRYABLE_CODES)}",
                            fix=D.respelling(code.span, code.name, meant),
                        )
        return ERROR
