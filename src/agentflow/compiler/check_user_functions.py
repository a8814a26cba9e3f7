"""User functions in the checker: ``fn name(p: T, …) -> R = body`` (docs/reference/programs.md
"User functions", docs/decisions.md "User functions").

Two phases and one typing rule, composed into :class:`~agentflow.compiler.checker.Checker` like
the other ``check_*`` mixins:

- :meth:`UserFunctionChecks.declare_user_functions` — each ``fn``'s signature (parameter and
  result types resolved like a tool's), its name checked against the library functions, the
  declared tools and the other functions (``duplicate-definition``);
- :meth:`UserFunctionChecks.check_user_functions` — each body: pure (only its parameters,
  literals, operators, library functions and other user functions: ``impure-function``
  otherwise), typed against the declared result (``type-mismatch``), its unused parameters
  (``unused-variable``), and no function reaching itself (``recursive-function``);
- ``visit_UserCall`` — ``rank(x)``: the arguments against the parameters, positionally; a name
  that is no user function is reported as the parser used to read it (a tool called without
  named arguments, ``unknown-function``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentflow.compiler.check_types import written_type
from agentflow.compiler.checker_shared import GRAMMAR_WORDS, CheckerShared, Var, is_reserved
from agentflow.compiler.symbols import Symbol, suggest, suggest_name
from agentflow.compiler.types import (
    ERROR,
    Type,
    assignable,
    is_numeric,
    is_textual,
    strip_optional,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note
from agentflow.core.functions import FUNCTIONS
from agentflow.grammar import ast
from agentflow.grammar.syntax_errors import OPERATOR_HINTS

__all__ = ["FnSig", "GRAMMAR_WORDS", "UserFunctionChecks", "IMPURE_NODES"]


@dataclass(slots=True)
class FnSig:
    """A user function's signature: ``params`` in order as ``(name, type)``, ``returns``, the
    declaration, and the user functions its body calls (``calls``, for ``recursive-function``
    and the plan's ``functions``)."""

    name: str
    params: list[tuple[str, Type]]
    returns: Type
    decl: ast.FnDecl
    calls: list[str] = field(default_factory=list)
    #: the checked file's names for the types of an imported signature it knows by another
    #: name (``Imports.refs``: a renamed import)
    refs: Mapping[int, str] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        """``rank(s: Severity) -> int``, as written (types by the names the checked file
        uses: a renamed import's), as hovers and notes show it."""
        shown = ", ".join(f"{p.name.name}: {self.written(p.type)}" for p in self.decl.params)
        return f"{self.name}({shown}) -> {self.written(self.decl.returns)}"

    def written(self, t: ast.TypeExpr) -> str:
        """A type of the signature as the checked file names it."""
        return written_type(t, self.refs)


#: What a function body may not hold, by node class → how messages name it: every construct
#: that is a step of the plan rather than a value computed in a template.
IMPURE_NODES: dict[type, str] = {
    ast.Call: "a tool call",
    ast.CallOptions: "a tool call",
    ast.AgentExpr: "`agent`",
    ast.AskExpr: "`ask`",
    ast.VerifyExpr: "`verify`",
    ast.MapExpr: "`map`",
    ast.FilterExpr: "`filter`",
    ast.ReduceExpr: "`reduce`",
    ast.LoopExpr: "`loop`",
    ast.CatchExpr: "`catch`",
    ast.TryExpr: "`try`",
}


class UserFunctionChecks(CheckerShared):
    """The phases and the typing rule of user functions (see the module docstring)."""

    #: name → signature of every user function in scope (this file's and imported ones)
    user_fns: dict[str, FnSig]
    #: the function whose body is being checked (its calls are recorded), or None
    current_fn: FnSig | None
    #: the tool calls a call of no function is checked as (kept alive: types are keyed by id)
    stand_ins: list[ast.Call]
    #: functions declared without parameters (refused at the declaration: their calls, which
    #: read as tool calls, are not reported again)
    no_param_fns: set[str]

    def fn_items(self) -> list[ast.FnDecl]:
        """The ``fn`` declarations in scope: this file's, then the imported ones."""
        own = [i for i in self.items if isinstance(i, ast.FnDecl)]
        return own + [i for i in self.imported_items if isinstance(i, ast.FnDecl)]

    def declare_user_functions(self) -> None:
        """Each ``fn``'s signature, its name and its parameters' names checked."""
        self.user_fns = {}
        self.current_fn = None
        self.stand_ins = []
        self.no_param_fns = set()
        for fn in self.fn_items():
            name = fn.name.name
            params: list[tuple[str, Type]] = []
            seen: dict[str, ast.Param] = {}
            for p in fn.params:
                pname = p.name.name
                if pname in seen:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"parameter `{pname}` of `{name}` is defined twice",
                        p.name.span,
                        notes=[Note("first defined here", seen[pname].name.span)],
                        hint=f"give each parameter of `{name}` its own name",
                    )
                seen[pname] = p
                self.reserved_name(pname, p.name.span, "a parameter")
                if p.omittable:
                    self.report(
                        D.UNSUPPORTED_CONSTRUCT,
                        f"parameter `{pname}` of `{name}` cannot be left out: a function is "
                        "called with every argument, in order",
                        p.name.span,
                        hint=f"write `{pname}: T?` and pass `null` where there is no value",
                    )
                params.append((pname, self.resolve_type(p.type)))
            if not fn.params:
                self.report(
                    D.UNSUPPORTED_CONSTRUCT,
                    f"function `{name}` has no parameters: a function is called with at least "
                    "one argument (a call with none is a tool call)",
                    fn.name.span,
                    hint="give it a parameter, or write the value where it is used",
                )
                self.no_param_fns.add(name)
            sig = FnSig(name, params, self.resolve_type(fn.returns), fn, refs=self.import_refs)
            if self._clashes(fn):
                continue
            self.user_fns[name] = sig

    def _clashes(self, fn: ast.FnDecl) -> bool:
        """Report a function whose name is taken: by a library function, a declared tool or
        another function (``duplicate-definition``); True when it is."""
        name = fn.name.name
        if self.reserved_name(name, fn.name.span, "a function"):
            return True
        if name in FUNCTIONS:
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{name}` is a library function: a user function cannot take its name",
                fn.name.span,
                notes=[Note(f"`{FUNCTIONS[name].signature}`")],
                hint=f"name it otherwise (`my_{name}`), or call the library's `{name}`",
            )
            if fn.span.file == self.module.file:
                self.library_names_refused.add(name)
            return True
        if "__" in name and name not in self.tool_decls:
            # `server__tool` is how a call names a catalog tool: `f(x)` would call the function
            # and `f(x: 1)` the tool (docs/decisions.md "A function's name is never a tool's")
            server, _, tool = name.partition("__")
            # its calls with named arguments are not told again as an untyped tool's
            self.error_names.add(name)
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{name}` has the shape of a tool's name (`server__tool`): a user function "
                "cannot take it",
                fn.name.span,
                notes=[
                    Note(
                        f"with named arguments `{name}(…)` calls the tool `{tool}` of the "
                        f"server `{server}`"
                    )
                ]
                if server and tool
                else [],
                hint=f"name it without `__` (`{_one_underscore(name)}`)",
            )
            return True
        if name in self.tool_decls:
            decl = self.tool_decls[name].decl
            span = getattr(getattr(decl, "name", None), "span", None)
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{name}` is a tool: a user function cannot take its name",
                fn.name.span,
                notes=[Note("the tool is declared here", span)] if span is not None else [],
                hint="name the function otherwise",
            )
            return True
        prev = self.user_fns.get(name)
        if prev is not None and fn.span.file != self.module.file:
            self._name_taken(fn, prev.decl)
            return True
        if prev is not None:
            self.report(
                D.DUPLICATE_DEFINITION,
                f"function `{name}` is defined twice",
                fn.name.span,
                notes=[Note("first defined here", prev.decl.name.span)],
                hint=f"rename one of them (and its calls), or remove one: `{name}` names "
                "one function",
            )
            return True
        return False

    def _name_taken(self, fn: ast.FnDecl, prev: ast.FnDecl) -> None:
        """``import-conflict`` for an imported function (or one an imported function brings
        along) whose name is already a function of the program (docs/decisions.md "User
        functions (fnuser)": a program holds one function per name)."""
        name = fn.name.name
        imp = self._import_of(fn)
        ident = self._import_ident(fn)
        if imp is None or ident is None:
            return
        explicit = imp.ident is not None
        local = prev.span.file == self.module.file
        if local and explicit:
            self.report(
                D.IMPORT_CONFLICT,
                f"function `{name}` is imported but is also declared in this file",
                ident.span,
                notes=[Note(f"the other `{name}`", prev.name.span)],
                hint="rename or remove the local function",
            )
        elif local:
            self.report(
                D.IMPORT_CONFLICT,
                f"function `{name}` of this file has the name of {self._role(fn)}: a "
                "program holds one function per name",
                prev.name.span,
                notes=[
                    Note(f"the other `{name}`", fn.name.span),
                    Note(f"`{imp.via}` is imported here", ident.span),
                ],
                hint=f"rename this file's `{name}` (and its calls)",
            )
        else:
            self.report(
                D.IMPORT_CONFLICT,
                f"two functions named `{name}` come into this file, {self._role(prev)} and "
                f"{self._role(fn)}: a program holds one function per name",
                ident.span,
                notes=[Note(f"a `{name}`", prev.name.span), Note(f"a `{name}`", fn.name.span)],
                hint=f"rename one of the two `{name}`s in its file (and its calls there)",
            )

    def _role(self, fn: ast.FnDecl) -> str:
        """How a message names an imported function: "`helper` of `./lib.flow` (which
        `rank` calls)" (brought along) or "`rank` of `./lib.flow`" (imported by name)."""
        base = os.path.dirname(self.module.file) or "."
        shown = os.path.relpath(fn.span.file, base)
        if not shown.startswith("."):
            shown = "./" + shown
        imp = self._import_of(fn)
        if imp is not None and imp.ident is None and imp.via is not None:
            return f"`{fn.name.name}` of `{shown}` (which `{imp.via}` calls)"
        return f"`{fn.name.name}` of `{shown}`"

    def _import_of(self, fn: ast.FnDecl) -> Any:
        """The ``Imported`` entry (``compiler.imports``) that brought ``fn``, or None."""
        if self.imports is None:
            return None
        return next((imp for imp in self.imports.declared if imp.item is fn), None)

    def _import_ident(self, fn: ast.FnDecl) -> ast.Ident | None:
        """Where this file imports ``fn`` (or the function that brought it), or None."""
        imp = self._import_of(fn)
        if imp is None:
            return None
        ident: ast.Ident | None = imp.ident
        if ident is not None:
            return ident
        via = imp.via
        pairs = list(imp.decl.pairs())
        return next((loc for _, loc in pairs if loc.name == via), None)

    def check_user_functions(self) -> None:
        """Each function's body: pure, typed against its result, its parameters used; then
        the functions that reach themselves (``recursive-function``)."""
        for sig in self.user_fns.values():
            # an imported body too: its types are the lowering's (its problems are its file's)
            self._check_body(sig)
        self._report_cycles()

    def _check_body(self, sig: FnSig) -> None:
        fn = sig.decl
        params = {p.name.name: p for p in fn.params}
        impure = False
        for n in ast.walk(fn.body):
            what = IMPURE_NODES.get(type(n))
            why = "a function computes its value from its parameters only"
            hint = "call it in a stage and pass its result to the function"
            if isinstance(n, ast.ParallelExpr) and n.limit is not None:
                if not self.constant(n.limit)[0]:
                    # a computed limit is checked by the block's `parallel` step when it runs
                    # (compiler/lower_parallel.py): a body is a template, without steps
                    what = "a `parallel` block with a computed `limit`"
                    why = "the run checks such a limit in a step, and a function has none"
                    hint = "write the limit as a constant, or compute the block in a stage"
            if what is None and isinstance(n, ast.Name) and n.name not in params:
                what = self._outside_name(n.name)
                hint = "pass the value as a parameter, or do this in a stage"
            if what is not None:
                impure = True
                self.report(
                    D.IMPURE_FUNCTION,
                    f"function `{sig.name}` uses {what}: {why}",
                    n.span,
                    notes=[Note(f"`{sig.signature}`", fn.name.span)],
                    hint=hint,
                )
        if impure:
            return
        saved_scopes, saved_stage = self.scopes, self.current_stage
        self.scopes = [
            {
                pname: Var(Symbol("param", pname, t, params[pname]), params[pname].name.span)
                for pname, t in sig.params
            }
        ]
        self.current_stage = None
        self.current_fn = sig
        try:
            self._typed(
                fn.body,
                sig.returns,
                sig.written(fn.returns),
                f"the body of `{sig.name}`",
                [Note(f"`{sig.signature}`", fn.name.span)],
                f"make the body's type `{sig.written(fn.returns)}`, or declare the result it has "
                "(`-> {found}`)",
            )
        finally:
            scope = self.scopes[0]
            self.scopes, self.current_stage = saved_scopes, saved_stage
            self.current_fn = None
        for pname, var in scope.items():
            if not var.used and not pname.startswith("_") and not is_reserved(pname):
                # (a refused name is told once, as `reserved-name`)
                self.report(
                    D.UNUSED_VARIABLE,
                    f"parameter `{pname}` of `{sig.name}` is never used",
                    var.span,
                    hint=f"remove it, or name it `_{pname}`",
                )

    def _outside_name(self, name: str) -> str | None:
        """How an impure-function message names ``name`` read in a body when it is a name of
        the program outside the function (None for anything else: typing reports it)."""
        if name == "input":
            return "the flow's `input`"
        if name in self.all_stages:
            return f"the stage `{name}`"
        if name in self.uses:
            return f"the `use` alias `{name}`"
        return None

    def _report_cycles(self) -> None:
        """``recursive-function`` at each function of a cycle of calls, naming the cycle."""
        reported: set[str] = set()
        for start in self.user_fns:
            if start in reported:
                continue
            path = self._cycle_from(start)
            if path is None:
                continue
            reported.update(path)
            sig = self.user_fns[start]
            shown = " → ".join(f"`{n}`" for n in [*path, start])
            self.report(
                D.RECURSIVE_FUNCTION,
                f"function `{start}` calls itself"
                + ("" if len(path) == 1 else f" through {shown}")
                + ": a function may not be recursive",
                sig.decl.name.span,
                notes=[
                    Note(f"`{n}` is defined here", self.user_fns[n].decl.name.span)
                    for n in path[1:]
                ],
                hint="compute the value without recursion (a bounded `loop` or `reduce` in a "
                "stage, or a library function)",
            )

    def _cycle_from(self, start: str) -> list[str] | None:
        """The functions from ``start`` round a cycle back to it (``[start, …]``), or None."""
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            name, path = stack.pop()
            for callee in self.user_fns[name].calls:
                if callee == start:
                    return path
                if callee not in seen and callee in self.user_fns:
                    seen.add(callee)
                    stack.append((callee, [*path, callee]))
        return None

    def visit_UserCall(self, e: ast.UserCall, hint: Type | None) -> Type:
        """``name(a, …)``: a user function's call (its arguments against its parameters, its
        declared result); any other name as the parser used to read it, a tool call."""
        sig = self.user_fns.get(e.name)
        if sig is None:
            return self._not_user_function(e, hint)
        if (
            e.name in self.hidden_fns
            and sig.decl.span.file != self.module.file
            and e.name not in self.error_names
        ) and (self.current_fn is None or self.current_fn.decl.span.file == self.module.file):
            self.report(
                D.UNKNOWN_FUNCTION,
                f"unknown function `{e.name}`",
                e.name_span,
                hint=f"`{e.name}` comes with an imported function but is not imported here: "
                f"add it to the `import` from `{sig.decl.span.file}`",
            )
        if self.current_fn is not None:
            self.current_fn.calls.append(e.name)
        if len(e.args) != len(sig.params):
            self.report(
                D.ARGUMENT_COUNT,
                f"`{e.name}` takes {_count(len(sig.params))}, {len(e.args)} given",
                e.span,
                notes=[Note(f"`{sig.signature}`", sig.decl.name.span)],
                hint="pass one argument per parameter, in order",
            )
        for arg, (pname, t), p in zip(e.args, sig.params, sig.decl.params, strict=False):
            self._typed(
                arg,
                t,
                sig.written(p.type),
                f"argument `{pname}` of `{e.name}`",
                [Note(f"`{sig.signature}`", sig.decl.name.span)],
                f"pass a `{sig.written(p.type)}` as `{pname}`",
            )
        for arg in e.args[len(sig.params) :]:
            self.infer(arg)
        return sig.returns

    def _typed(
        self,
        e: ast.Expr,
        want: Type,
        shown: str,
        what: str,
        notes: list[Note],
        hint: str,
    ) -> None:
        """Type ``e`` against ``want`` (written ``shown``), a mismatch told as ``what``
        (an argument of a function, a body) with the signature in ``notes`` and ``hint``
        (``{found}`` replaced by the type found), or the usual conversion when one fits; an
        object or list literal is told field by field as everywhere."""
        got = self.infer(e, want)
        if assignable(got, want, self.env):
            return
        if isinstance(e, ast.ObjectLit | ast.ListLit | ast.CondExpr | ast.MatchExpr):
            # told where it goes wrong: a field, an element, an arm's value (naming the arm)
            self.mismatch(e, got, want)
            return
        found = self.said(widen(got))
        r = self.env.resolve(strip_optional(got, self.env))
        w = self.env.resolve(want)
        literal = self._literal_hint(e, want)
        usual = self._mismatch_hint(got, want)
        if literal is not None:  # `rank("hgh")`: the literal written, and the one meant
            found, hint = self.said(got), literal
        elif usual is not None:
            hint = usual
        elif is_textual(w, self.env) and is_numeric(r, self.env):
            hint = "`to_text(x)` turns a number into text"
        elif is_numeric(w, self.env) and is_textual(r, self.env):
            hint = "`parse_int(s)` or `parse_number(s)` reads a number from text"
        self.report(
            D.TYPE_MISMATCH,
            f"{what}: expected `{shown}`, found `{found}`",
            e.span,
            notes=notes,
            hint=literal or hint.replace("{found}", found),
        )

    def _not_user_function(self, e: ast.UserCall, hint: Type | None) -> Type:
        if e.name in self.user_fns_refused():
            for a in e.args:
                self.infer(a)
            return ERROR
        callee = ast.Name(e.name_span, e.name)
        call = ast.Call(e.span, callee, [], list(e.args))
        self.stand_ins.append(call)  # alive while the check keys types by id
        t = self.infer(call, hint)
        if "__" in e.name and e.name not in self.tool_decls:
            # an untyped catalog tool called positionally: its arguments must be named too
            self.report(
                D.POSITIONAL_ARGUMENT,
                "tool arguments must be named",
                e.args[0].span,
                hint="write `name: value`",
            )
        return t

    def user_fns_refused(self) -> set[str]:
        """Names of ``fn`` declarations refused (taken names): their calls are not reported."""
        return {f.name.name for f in self.fn_items()} - set(self.user_fns)

    def user_function_misuse(self, e: ast.Call) -> bool:
        """Report a user function called with named arguments (``named-argument``) or none
        (``argument-count``): True when ``e``'s callee is a user function."""
        assert isinstance(e.callee, ast.Name)
        sig = getattr(self, "user_fns", {}).get(e.callee.name)
        if sig is None:
            return False
        if e.callee.name in self.no_param_fns and not e.args:
            return True  # `f()` of a `fn f()` refused at its declaration
        shown = ", ".join(n for n, _ in sig.params)
        note = Note(f"`{sig.signature}`", sig.decl.name.span)
        if e.args:
            self.report(
                D.NAMED_ARGUMENT,
                f"`{sig.name}` is a function: its arguments are not named (named arguments "
                "make a tool call)",
                e.args[0].name_span,
                notes=[note],
                hint=f"pass them in order: `{sig.name}({shown})`",
            )
        else:
            self.report(
                D.ARGUMENT_COUNT,
                f"`{sig.name}` takes {_count(len(sig.params))}, 0 given",
                e.span,
                notes=[note],
                hint=f"pass them in order: `{sig.name}({shown})`",
            )
        for a in e.args:
            self.infer(a.value)
        return True

    def user_function_meant(self, name: str) -> str | None:
        """The user function ``name`` is close to (``rnak`` → ``rank``), else None."""
        fns = getattr(self, "user_fns", None)
        return suggest_name(name, list(fns)) if fns else None

    def function_as_value(self, e: ast.Name) -> bool:
        """Report ``function-as-value`` for a user or library function named without its call
        (``let f = rank``, ``g(rank)``; docs/reference/programs.md "User functions"): `.flow`
        has no function values, a function is called where its value is used. The note gives
        its signature, the hint the call in its parameters' names. True when reported."""
        user: FnSig | None = (getattr(self, "user_fns", None) or {}).get(e.name)
        if user is not None:
            signature, at = user.signature, user.decl.name.span
            params = [name for name, _ in user.params]
        elif (
            e.name in FUNCTIONS
            and e.name not in OPERATOR_HINTS
            and not suggest(e.name, self.visible_names())
        ):
            # (a name close to a variable's, `lines` for `line`, is told as a misspelling, and
            # `a matches b` as the operator of other languages it is)
            spec = FUNCTIONS[e.name]
            signature, at = spec.signature, None
            params = [p.name for p in spec.params if not p.omittable]
        else:
            return False
        call = f"{e.name}({', '.join(params) or '…'})"
        self.report(
            D.FUNCTION_AS_VALUE,
            f"`{e.name}` is a function: it is called, not used as a value",
            e.span,
            notes=[Note(f"`{signature}`", at)],
            hint=f"call it with its arguments, `{call}`: a function is not a value that can be "
            "stored or passed on; pass its result, or the values it needs",
        )
        return True


def _count(n: int) -> str:
    return f"{n} argument" + ("" if n == 1 else "s")


def _one_underscore(name: str) -> str:
    """``user__size`` → ``user_size``: a function name with no ``__`` in it."""
    while "__" in name:
        name = name.replace("__", "_")
    return name
