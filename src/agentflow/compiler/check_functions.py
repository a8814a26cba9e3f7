"""The checker's library functions and conditional expressions (docs/reference/functions.md,
docs/reference/expressions.md).

A call ``name(a, b)`` of a library function is typed from its signature in
:mod:`agentflow.core.functions`: the signature's types are parsed once with the `.flow` grammar
(``extern tool`` syntax), its type parameters (``<T>``, ``<T: number | text>``) bound from the
arguments' types, each argument then checked against its parameter with the bindings substituted;
a mistake is a ``type-mismatch`` whose note shows the signature.  A few functions refine the
generic result (``round`` without digits is an ``int``; ``pick``/``omit``/``merge`` keep object
fields; ``sort_by``/``group_by``/``count_by`` check their field name against the element type).
Calls that only look like library calls — a library function given named arguments, an unknown
function called positionally, a method call ``s.lower()``, ``Math.round(x)`` — get their own
diagnostics with a "did you mean" towards the library.  ``if c then a else b`` is typed as the
join of its arms.  A mixin of :class:`~agentflow.compiler.checker.Checker`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import regex

from agentflow.compiler.check_expressions import what_is
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.symbols import suggest_name
from agentflow.compiler.types import (
    BOOL,
    ERROR,
    INT,
    JSON,
    NEVER,
    NUMBER,
    PRIMS,
    TEXT,
    ErrorType,
    Field,
    ListType,
    LiteralType,
    MapType,
    NamedRef,
    NeverType,
    ObjectType,
    OptionalType,
    Type,
    UnionType,
    assignable,
    is_numeric,
    is_textual,
    join,
    make_optional,
    make_union,
    strip_optional,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, meant_hint
from agentflow.core.functions import (
    FOREIGN_FUNCTION_NAMES,
    FUNCTIONS,
    FunctionSpec,
    arity,
    function_hint,
)
from agentflow.grammar import ast

__all__ = ["FunctionChecks", "signature_types"]


@dataclass(slots=True, unsafe_hash=True)
class TypeVar(Type):
    """A type parameter of a library function's signature (never leaves this module)."""

    name: str

    def __str__(self) -> str:
        return self.name


#: names of other languages' modules and namespaces written before a function
#: (``Math.round(x)``, ``str.join(…)``, ``JSON.parse(s)``)
_FOREIGN_NAMESPACES = frozenset(
    ("Math", "math", "str", "string", "String", "JSON", "json", "Object", "Array", "list")
    + ("dict", "re", "regex", "_", "lodash", "Number", "Integer", "Float", "Strings", "text")
)


#: fields every list or text has (``.count``; ``.values``/``.errors`` of outcomes)
_FIELD_HELPERS = frozenset(("count", "values", "errors"))


def _sig_type(t: ast.TypeExpr, params: dict[str, str | None]) -> Type:
    if isinstance(t, ast.NamedType):
        if t.name in params:
            return TypeVar(t.name)
        return PRIMS[t.name]
    if isinstance(t, ast.ArrayType):
        return ListType(_sig_type(t.element, params))
    if isinstance(t, ast.OptionalType):
        return make_optional(_sig_type(t.inner, params))
    if isinstance(t, ast.UnionType):
        return make_union([_sig_type(m, params) for m in t.members])
    if isinstance(t, ast.MapType):
        return MapType(_sig_type(t.value, params))
    if isinstance(t, ast.ObjectType):
        return ObjectType(
            {
                f.name.name: Field(_sig_type(f.type, params), False, {}, None, f.span)
                for f in t.fields
            }
        )
    raise ValueError(f"unsupported type in a signature: {t}")  # pragma: no cover


@cache
def signature_types(name: str) -> tuple[dict[str, Type | None], list[Type], Type]:
    """The types of library function ``name``'s signature: its type parameters' bounds, its
    parameters' types and its result type (type parameters as :class:`TypeVar`)."""
    # the parser (lark and its tables, ~70 ms) loads on first use, not when `flowc` starts
    from agentflow.grammar.parser import parse_module

    spec = FUNCTIONS[name]
    params = ", ".join(f"{p.name}{'?' if p.omittable else ''}: {p.type}" for p in spec.params)
    module, diags = parse_module(f"extern tool {name}({params}) -> {spec.returns}", "<sig>")
    assert not diags, diags
    tool = module.items[0]
    assert isinstance(tool, ast.ExternTool)
    bounds: dict[str, Type | None] = {}
    for tp, bound in spec.type_params.items():
        if bound is None:
            bounds[tp] = None
        else:
            bm, _ = parse_module(f"type B = {bound}", "<sig>")
            alias = bm.items[0]
            assert isinstance(alias, ast.TypeDecl) and alias.alias is not None
            bounds[tp] = _sig_type(alias.alias, spec.type_params)
    ptypes = [_sig_type(p.type, spec.type_params) for p in tool.params]
    return bounds, ptypes, _sig_type(tool.returns, spec.type_params)


def _subst(t: Type, binds: dict[str, Type]) -> Type:
    if isinstance(t, TypeVar):
        return binds.get(t.name, NEVER)
    if isinstance(t, ListType):
        return ListType(_subst(t.elem, binds))
    if isinstance(t, OptionalType):
        inner = _subst(t.inner, binds)
        return inner if isinstance(inner, NeverType) else make_optional(inner)
    if isinstance(t, UnionType):
        return make_union([_subst(m, binds) for m in t.members])
    if isinstance(t, MapType):
        return MapType(_subst(t.value, binds))
    if isinstance(t, ObjectType) and t.name is None:
        return ObjectType(
            {
                k: Field(_subst(f.type, binds), f.optional, f.constraints, f.doc, f.span)
                for k, f in t.fields.items()
            }
        )
    return t


def _wants_map(t: Type) -> bool:
    if isinstance(t, MapType):
        return True
    return isinstance(t, UnionType) and any(isinstance(m, MapType) for m in t.members)


def arms_type(checker: CheckerShared, types: list[Type], hint: Type | None) -> Type:
    """The type of a conditional's arms (``if … then … else``, ``match``): the expected type
    when every arm fits it, else their join; the error type when an arm has one."""
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    env = checker.env
    if hint is not None and all(assignable(t, hint, env) for t in types):
        return hint
    return join(types, env)


class FunctionChecks(CheckerShared):
    """Typing rules of library calls and ``if … then … else``, and the library's hints."""

    # -- if c then a else b ---------------------------------------------------------------
    def visit_CondExpr(self, e: ast.CondExpr, hint: Type | None) -> Type:
        self.expr(e.cond, BOOL)
        yes, no = self.narrowings(e.cond)
        with self.narrowed(yes):
            a = self.infer(e.then, hint)
        with self.narrowed(no):
            b = self.infer(e.else_, hint)
        return arms_type(self, [a, b], hint)

    # -- library calls --------------------------------------------------------------------
    def visit_FuncCall(self, e: ast.FuncCall, hint: Type | None) -> Type:
        if e.name in self.library_names_refused:
            # `fn len(…)` was refused for taking a library name (`duplicate-definition`): its
            # calls meant that function, not the library's — one mistake, one diagnostic
            for a in e.args:
                self.infer(a)
            return ERROR
        spec = FUNCTIONS[e.name]
        bounds, ptypes, returns = signature_types(e.name)
        if not spec.min_args <= len(e.args) <= spec.max_args:
            for a in e.args:
                self.infer(a)
            self.report(
                D.ARGUMENT_COUNT,
                f"`{e.name}` takes {arity(spec)}, {len(e.args)} given",
                e.span,
                notes=[Note(f"`{spec.signature}`", e.name_span)],
                hint=f"{spec.summary}; e.g. `{spec.example}`",
            )
            return ERROR
        # arguments whose parameter has no type parameter get it as their expected type
        args = [
            self.infer(a, None if _vars(pt) else pt) for a, pt in zip(e.args, ptypes, strict=False)
        ]
        if any(isinstance(t, ErrorType) for t in args):
            return ERROR
        # each argument's bindings, then their join (two arguments binding `T` to types with
        # nothing in common, `index_of(["a"], 1)`, is a conflict)
        per_arg: list[dict[str, Type]] = []
        for pt, at in zip(ptypes, args, strict=False):
            b: dict[str, Type] = {}
            self._bind(pt, at, b)
            per_arg.append(b)
        binds: dict[str, Type] = {}
        conflict: dict[str, tuple[Type, ast.Expr]] = {}
        for arg, b in zip(e.args, per_arg, strict=False):
            for tp, t in b.items():
                prev = binds.get(tp)
                if prev is None or isinstance(prev, NeverType):
                    binds[tp] = t
                    continue
                if isinstance(t, NeverType):
                    continue
                j = join([prev, t], self.env)
                if isinstance(j, UnionType) and not _optional_union(j) and tp not in conflict:
                    conflict[tp] = (prev, arg)
                binds[tp] = j
        ok = True
        for tp, bound in bounds.items():
            bad = None
            if bound is not None:
                bad = next(
                    (
                        (arg, b[tp])
                        for arg, b in zip(e.args, per_arg, strict=False)
                        if tp in b and b[tp] != JSON and not assignable(b[tp], bound, self.env)
                    ),
                    None,
                )
            if bad is not None and bound is not None:  # (bad is found only under a bound)
                r = self.env.resolve(bad[1])
                nulls = None
                if isinstance(r, OptionalType) and assignable(r.inner, bound, self.env):
                    # `max(map items as i { i.score })` with `score: int?`
                    nulls = (
                        f"the elements may be `null` (`{self.said(bad[1])}`): give each a "
                        "default (`map xs as x { x ?? 0 }`) or leave the nulls out "
                        "(`filter xs as x where x != null`)"
                    )
                self._arg_mismatch(
                    e, spec, bad[0], f"`{tp}` must be `{self.said(bound)}`", bad[1], nulls
                )
                ok = False
            elif tp in conflict and e.name != "merge":
                first, arg = conflict[tp]
                own = next(
                    (b.get(tp) for a, b in zip(e.args, per_arg, strict=False) if a is arg), None
                )  # what this argument makes `tp`: said as found
                self._arg_mismatch(e, spec, arg, f"`{tp}` is `{self.said(first)}` here", own)
                ok = False
        if not ok:
            return ERROR
        # a type parameter no argument binds (`sum("x")`) is checked as its bound, else `json`
        check_binds = {tp: binds.get(tp) or bound or JSON for tp, bound in bounds.items()}
        for a, pt, at in zip(e.args, ptypes, args, strict=False):
            want = _subst(pt, check_binds)
            got = self._as_map(at) if _wants_map(want) else at
            if not assignable(got, want, self.env):
                self._arg_mismatch(
                    e, spec, a, f"expected `{self.said(want)}`", at, self._optional_arg(a, at, want)
                )
                ok = False
        if not ok:
            return ERROR
        if not self._literal_args_valid(e):
            return ERROR
        result = _subst(returns, {k: v for k, v in binds.items() if not k.startswith("__")})
        refine: Callable[[ast.FuncCall, list[Type], Type], Type] | None = getattr(
            self, "_fn_" + e.name, None
        )
        if refine is not None:
            return refine(e, args, result)
        return result

    def _bind(self, pt: Type, at: Type, binds: dict[str, Type]) -> None:
        """Bind the type parameters in ``pt`` from the argument type ``at``."""
        r = self.env.resolve(at)
        if isinstance(pt, TypeVar):
            w = widen(at)
            prev = binds.get(pt.name)
            binds[pt.name] = w if prev is None else join([prev, w], self.env)
            return
        if r == JSON:
            for v in _vars(pt):
                binds.setdefault(v, JSON)
            return
        if isinstance(pt, OptionalType):
            self._bind(pt.inner, strip_optional(at, self.env), binds)
        elif isinstance(pt, ListType):
            r = self.env.resolve(strip_optional(at, self.env))
            if isinstance(r, ListType) and not isinstance(r.elem, NeverType):
                self._bind(pt.elem, r.elem, binds)
        elif isinstance(pt, MapType):
            m = self._as_map(at)
            if isinstance(m, MapType):
                self._bind(pt.value, m.value, binds)
            elif m == JSON:
                self._bind(pt.value, JSON, binds)

    def _as_map(self, t: Type) -> Type:
        """An object type as the map of its fields' types (``map<A | B>``); others as they are."""
        r = self.env.resolve(t)
        if isinstance(r, ObjectType):
            types = [make_optional(f.type) if f.optional else f.type for f in r.fields.values()]
            return MapType(join(types, self.env) if types else NEVER)
        return r

    def _arg_mismatch(
        self,
        e: ast.FuncCall,
        spec: FunctionSpec,
        arg: ast.Expr,
        what: str,
        got: Type | None,
        hint: str | None = None,
    ) -> None:
        found = f", found {self.said_words(widen(got))}" if got is not None else ""
        self.report(
            D.TYPE_MISMATCH,
            f"argument of `{e.name}`: {what}{found}",
            arg.span,
            notes=[Note(f"`{spec.signature}`", e.name_span)],
            hint=hint or self._arg_hint(e, what, got),
        )

    def _optional_arg(self, arg: ast.Expr, got: Type, want: Type) -> str | None:
        """``len(input.tags)`` with ``tags: text[]?``: an optional argument whose value would
        fit — a default with ``??`` (``input.tags ?? []``) or a check for ``null`` first."""
        r = self.env.resolve(got)
        if not isinstance(r, OptionalType) or not assignable(r.inner, want, self.env):
            return None
        inner = self.env.resolve(r.inner)
        default = (
            "[]"
            if isinstance(inner, ListType)
            else '""'
            if is_textual(inner, self.env)
            else "0"
            if is_numeric(inner, self.env)
            else "false"
            if inner == BOOL
            else "{}"
            if isinstance(inner, MapType | ObjectType)
            else "…"
        )
        shown = self.source_text(arg)
        return (
            f"`{shown}` may be `null` (`{self.said(got)}`): give a default with `??`, "
            f"`{shown} ?? {default}`, or check `if {shown} != null {{ … }}` first"
        )

    def _arg_hint(self, e: ast.FuncCall, what: str, got: Type | None) -> str | None:
        """The usual fix for an argument of the wrong type: a list where one value is taken
        (apply the function to each element with `map`), a number for a text (`to_text`), a
        text for a number (`parse_int`/`parse_number`)."""
        if got is None:
            return None
        r = self.env.resolve(strip_optional(got, self.env))
        if isinstance(r, ListType) and what.startswith("expected `") and "[]" not in what:
            return (
                f"`{e.name}` takes one value, not a list: to apply it to each element, "
                f"`map xs as x {{ {e.name}({'x' if len(e.args) == 1 else 'x, …'}) }}`"
            )
        if "expected `text`" in what and is_numeric(r, self.env):
            return "`to_text(x)` turns a number into text"
        if ("expected `number`" in what or "expected `int`" in what) and is_textual(r, self.env):
            return "`parse_int(s)` or `parse_number(s)` reads a number from text"
        return None

    # -- refinements of the generic result --------------------------------------------------
    def _literal_args_valid(self, e: ast.FuncCall) -> bool:
        """A plain string literal the run would always refuse, told when the flow is checked
        (``invalid-argument``, the run's ``invalid_argument``): the regular expression of
        ``match``/``matches``/``find_all`` (compiled as the run compiles it), ``fill`` of
        ``pad_start``/``pad_end`` (one character), ``old`` of ``replace`` (not empty)
        (docs/reference/functions.md).  False when one was reported."""
        at = _LITERAL_CHECKED.get(e.name)
        if at is None or at >= len(e.args):
            return True
        arg = e.args[at]
        if not (isinstance(arg, ast.StringLit) and arg.is_plain):
            return True
        text = arg.text
        spec = FUNCTIONS[e.name]
        problem: str | None = None
        hint: str | None = None
        if at == 1 and e.name != "replace":
            problem = regex_problem(text)
            hint = (
                "write a valid regular expression; to match a character the syntax uses "
                "(`( ) [ ] { } . * + ? | ^ $ \\`), escape it (`\\\\(`)"
            )
            if problem is not None:
                problem = f"invalid regular expression {quoted(text)}: {problem}"
        elif e.name == "replace":
            if text == "":
                problem = "`old` must not be empty: there is nothing to replace"
                hint = 'name the text to replace (`replace(s, " ", "_")`)'
        elif len(text) != 1:
            problem = f"`fill` must be one character, got {quoted(text)}"
            hint = f'pad with one character: `{e.name}(s, width, "{text[:1] or " "}")`'
        if problem is None:
            return True
        self.report(
            D.INVALID_ARGUMENT,
            problem,
            arg.span,
            notes=[Note(f"`{spec.signature}`", e.name_span)],
            hint=hint,
        )
        return False

    def _fn_round(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        if len(args) == 1 or widen(args[0]) == INT:
            return INT
        return NUMBER

    def _fn_sum(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        return INT if widen(result) == INT else (result if result == JSON else NUMBER)

    def _fn_seconds(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        if args[0] == JSON:
            return JSON
        r = self.env.resolve(args[0])
        return ListType(NUMBER) if isinstance(r, ListType) else NUMBER

    def _fn_slice(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        return TEXT if is_textual(result, self.env) else result

    def _fn_sort_by(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        self._field_arg(e, args, ordered=True)
        return result

    def _fn_group_by(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        self._field_arg(e, args, ordered=False)
        return result

    def _fn_count_by(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        if len(e.args) > 1:
            self._field_arg(e, args, ordered=False)
        return result

    def _field_arg(self, e: ast.FuncCall, args: list[Type], *, ordered: bool) -> None:
        """The field name of ``sort_by``/``group_by``/``count_by``, when a literal, checked
        against the element type (an object type); ``sort_by``'s must hold numbers or texts."""
        spec = FUNCTIONS[e.name]
        lst = self.env.resolve(strip_optional(args[0], self.env))
        if not isinstance(lst, ListType):
            return
        elem = self.env.resolve(strip_optional(lst.elem, self.env))
        if isinstance(elem, NeverType | ErrorType) or elem == JSON:
            return
        if not isinstance(elem, ObjectType):
            self._arg_mismatch(
                e,
                spec,
                e.args[0],
                "the elements must be objects with the field",
                widen(args[0]),
                hint=(
                    "`sort(xs)` sorts texts or numbers themselves (`sort_by` orders objects by a "
                    "field)"
                    if e.name == "sort_by"
                    else f"`{e.name}` reads a field of each element: its elements must be objects"
                ),
            )
            return
        name_arg = e.args[1]
        if not (isinstance(name_arg, ast.StringLit) and name_arg.is_plain):
            return
        name = name_arg.text
        if e.name == "sort_by" and name.startswith("-"):
            name = name[1:]
        f = elem.fields.get(name)
        if f is None:
            meant = suggest_name(name, list(elem.fields))
            self.report(
                D.UNKNOWN_FIELD,
                f"`{self.said(lst.elem)}` has no field `{name}`",
                name_arg.span,
                notes=[Note(f"`{spec.signature}`", e.name_span)],
                hint=meant_hint(meant)
                if meant
                else "fields: " + ", ".join(f"`{k}`" for k in elem.fields),
                fix=D.respelling(
                    name_arg.span,
                    name,
                    meant,
                    before='"-' if name_arg.text.startswith("-") else '"',
                    after='"',
                ),
            )
            return
        ft = strip_optional(f.type, self.env)
        if ordered and not (is_numeric(ft, self.env) or is_textual(ft, self.env) or ft == JSON):
            self.report(
                D.TYPE_MISMATCH,
                f"`sort_by` orders by a number or a text; field `{name}` is `{self.said(f.type)}`",
                name_arg.span,
                notes=[Note(f"`{spec.signature}`", e.name_span)],
                hint=(
                    f"to put the elements whose `{name}` is true first, join two filters: "
                    f"`(filter xs as x where x.{name}) + (filter xs as x where not x.{name})`"
                    if ft == BOOL
                    else "sort by a number or text field, or compute one first with "
                    "`map xs as x { … }`"
                ),
            )

    def _fn_keys(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        return ListType(TEXT)

    def _fn_merge(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        a, b = (self.env.resolve(t) for t in args)
        if isinstance(a, ObjectType) and isinstance(b, ObjectType):
            return ObjectType({**widen(a).fields, **widen(b).fields})  # type: ignore[attr-defined]
        return result

    def _fn_pick(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        return self._subset(e, args, result, keep=True)

    def _fn_omit(self, e: ast.FuncCall, args: list[Type], result: Type) -> Type:
        return self._subset(e, args, result, keep=False)

    def _subset(self, e: ast.FuncCall, args: list[Type], result: Type, *, keep: bool) -> Type:
        """``pick``/``omit`` of an object with a literal list of keys: the object type with
        those fields (kept or removed); an unknown key is ``unknown-field``."""
        obj = self.env.resolve(args[0])
        keys = e.args[1]
        if not isinstance(obj, ObjectType) or not isinstance(keys, ast.ListLit):
            return result
        names: list[str] = []
        for k in keys.items:
            if not (isinstance(k, ast.StringLit) and k.is_plain):
                return result
            if k.text not in obj.fields:
                meant = suggest_name(k.text, list(obj.fields))
                self.report(
                    D.UNKNOWN_FIELD,
                    f"`{self.said(args[0])}` has no field `{k.text}`",
                    k.span,
                    notes=[Note(f"`{FUNCTIONS[e.name].signature}`", e.name_span)],
                    hint=meant_hint(meant)
                    if meant
                    else "fields: " + ", ".join(f"`{f}`" for f in obj.fields),
                    fix=D.respelling(k.span, k.text, meant, before='"', after='"'),
                )
                return ERROR
            names.append(k.text)
        fields = {n: f for n, f in obj.fields.items() if (n in names) == keep}
        return ObjectType(fields)

    # -- calls that are not library calls -------------------------------------------------------
    def not_a_function_call(self, e: ast.Call) -> bool:
        """Report a call of a plain name that is no tool as what it most likely is: a library
        function given named arguments or none (``named-argument``, ``argument-count``), or an
        unknown function called positionally (``unknown-function`` with a "did you mean").
        False when it looks like a tool call (the caller reports ``unknown-tool``)."""
        assert isinstance(e.callee, ast.Name)
        name = e.callee.name
        if self.user_function_misuse(e):
            return True
        spec = FUNCTIONS.get(name)
        if spec is not None:
            if e.args:
                shown = ", ".join(p.name for p in spec.params)
                self.report(
                    D.NAMED_ARGUMENT,
                    f"`{name}` is a library function: its arguments are not named",
                    e.args[0].name_span,
                    notes=[Note(f"`{spec.signature}`", e.callee.span)],
                    hint=f"pass them in order: `{name}({shown})`",
                )
            else:
                self.report(
                    D.ARGUMENT_COUNT,
                    f"`{name}` takes {arity(spec)}, 0 given",
                    e.span,
                    notes=[Note(f"`{spec.signature}`", e.callee.span)],
                    hint=f"{spec.summary}; e.g. `{spec.example}`",
                )
            return True
        if e.positional and not e.args:
            mine = self.user_function_meant(name)
            if mine is not None:
                self.report(
                    D.UNKNOWN_FUNCTION,
                    f"unknown function `{name}`",
                    e.callee.span,
                    hint=meant_hint(mine),
                    fix=D.respelling(e.callee.span, name, mine),
                )
                return True
            meant = function_hint(name)
            self.report(
                D.UNKNOWN_FUNCTION,
                f"unknown function `{name}`",
                e.callee.span,
                notes=[Note(f"`{FUNCTIONS[meant].signature}`")] if meant else [],
                hint=meant_hint(meant)
                if meant
                else "the library functions are listed in docs/reference/functions.md; a tool "
                "takes named arguments: `tool(name: value)`",
                fix=D.respelling(e.callee.span, name, meant),
            )
            return True
        return False

    def method_call(self, e: ast.Call) -> bool:
        """``s.lower()``, ``xs.join(", ")``, ``Math.round(x)``, ``str.join(", ", xs)``: `.flow`
        values have no methods and there are no modules; when the method names a library function
        (or one of other languages, ``toUpperCase``), report it with the call to write instead.
        False when the method is nothing the library knows (the caller goes on)."""
        callee = e.callee
        assert isinstance(callee, ast.Member)
        target = (
            callee.name if callee.name in FUNCTIONS else FOREIGN_FUNCTION_NAMES.get(callee.name)
        )
        if target is None or (callee.name in _FIELD_HELPERS and not e.args and not e.positional):
            return False  # `xs.count()`: a field written as a method call (the caller says so)
        spec = FUNCTIONS[target]
        obj = callee.obj
        if (
            isinstance(obj, ast.Name)
            and obj.name in _FOREIGN_NAMESPACES
            and self.lookup(obj.name) is None
        ):
            for a in e.args:
                self.infer(a.value)
            for p in e.positional:
                self.infer(p)
            self.report(
                D.UNKNOWN_FUNCTION,
                f"there are no modules: `{obj.name}.{callee.name}` is not a function",
                callee.span,
                notes=[Note(f"`{spec.signature}`", callee.name_span)],
                hint=meant_hint(target),
                fix=D.respelling(callee.span, f"{obj.name}.{callee.name}", target),
            )
            return True
        ot = self.infer(obj)
        if isinstance(ot, ErrorType):
            for p in e.positional:
                self.infer(p)
            return True
        r = self.env.resolve(strip_optional(ot, self.env))
        if isinstance(r, ObjectType) and callee.name in r.fields:
            return False  # a field called as a method: the caller says so
        for a in e.args:
            self.infer(a.value)
        for p in e.positional:
            self.infer(p)
        path = what_is(obj)
        first = path.strip("`") if path != "this value" else "…"
        rest = ", …" if e.positional or e.args else ""
        self.report(
            D.NOT_CALLABLE,
            f"`.{callee.name}(…)` is not a method: `.flow` values have no methods",
            callee.name_span,
            notes=[Note(f"`{spec.signature}`", callee.name_span)],
            hint=f"call the library function: `{target}({first}{rest})`",
        )
        return True


#: the library functions whose argument at that position, written as a literal, is checked when
#: the flow is checked (:meth:`FunctionChecks._literal_args_valid`)
_LITERAL_CHECKED = {
    "match": 1,
    "matches": 1,
    "find_all": 1,
    "pad_start": 2,
    "pad_end": 2,
    "replace": 1,
}


def regex_problem(pattern: str) -> str | None:
    """What is wrong with ``pattern`` as a regular expression, compiled with the ``regex``
    module as the run compiles it (:mod:`agentflow.runtime.functions`), or None when valid."""
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return str(exc)
    except (RecursionError, OverflowError, MemoryError):
        return "too complex"
    return None


def quoted(text: str) -> str:
    """``text`` as a `.flow` string literal, shortened past 40 characters."""
    shown = text if len(text) <= 40 else text[:39] + "…"
    return json.dumps(shown, ensure_ascii=False)


def _vars(t: Type) -> set[str]:
    if isinstance(t, TypeVar):
        return {t.name}
    if isinstance(t, ListType):
        return _vars(t.elem)
    if isinstance(t, OptionalType):
        return _vars(t.inner)
    if isinstance(t, MapType):
        return _vars(t.value)
    if isinstance(t, UnionType):
        return set().union(*(_vars(m) for m in t.members))
    if isinstance(t, ObjectType):
        return set().union(*(_vars(f.type) for f in t.fields.values()))
    return set()


def _optional_union(t: UnionType) -> bool:
    """A union that is only ``T | null`` (a binding from a list with nulls), or of literals of
    one base type, is a fine binding."""
    members = [m for m in t.members if m != PRIMS["null"]]
    if len(members) <= 1:
        return True
    bases = {widen(m) if isinstance(m, LiteralType) else m for m in members}
    return (
        len(bases) == 1
        or all(isinstance(m, NamedRef) for m in members)
        or all(isinstance(m, ObjectType | NamedRef) for m in members)
    )
