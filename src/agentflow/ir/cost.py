"""The static worst case of a plan's model calls (``flowc cost``; docs/models.md "flowc cost").

:func:`worst_case` walks a loaded :class:`~agentflow.ir.models.Plan` and returns, per model
role, the most inferences a run can make, as a polynomial in the sizes of its inputs: each
``map`` / ``filter`` / ``reduce`` multiplies its body by the length of what it goes over
(``len(input.items)``), a ``loop`` its body by its bound (``up to 4``: 4; ``up to input.rounds``:
``input.rounds``; each loop is also listed in ``loops`` as bound × body), an agent step costs ``max_iterations`` rounds of its model plus
``repair_attempts`` repair-role passes per round, a ``decide`` judge 1 plus the dearer branch,
``verify`` one judge-role call per judge, a ``try`` its ``do`` and its ``catch`` (``do`` may fail
after all its calls), a ``solver`` finish 1, ``retry`` multiplies a step by
its tries, and a ``plan__X`` step adds sub-plan X's worst case. Every term is an upper bound the
runtime enforces (no loop runs longer than its bound), which is why the figure can be given
before anything runs.

A length the plan bounds counts as its bound (``take(q, 3)``, a contract's or the input's
``maxItems`` from ``@length``, an ``if``'s longer branch, a sub-plan's inputs through its
caller); a length only a body knows (a loop round's ``len(qs)``) is renamed as it leaves the
body (``(max len(qs) per round)``), and the flow's ``budget { inferences: N }``, when lower
than the figure, is ``cap`` (docs/models.md "flowc cost").

What a static reading cannot bound is reported in ``unbounded``: an agent that may call
``plan__*`` tools (each round may call them any number of times), a sub-plan that is not in the
file, a recursive plan.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from agentflow.errors import SourceError
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression
from agentflow.ir.models import Plan, Step
from agentflow.ir.names import in_source_terms, step_names

__all__ = ["Cost", "over_budget", "worst_case"]

Monomial = tuple[str, ...]  # sorted symbol names; () is the constant term


@dataclass
class Cost:
    """Inferences per role, each a polynomial ``{monomial: coefficient}`` over input sizes;
    ``unbounded``: why some calls could not be bounded (empty: the figure is complete)."""

    roles: dict[str, dict[Monomial, int]] = field(default_factory=dict)
    unbounded: list[str] = field(default_factory=list)
    #: budgets that cap the figure at run time (``run: 40 inferences``, ``E3: $0.5``)
    budgets: list[str] = field(default_factory=list)
    #: each ``loop`` as bound × body, where the `.flow` wrote it (``revise › loop
    #: (f.flow:12:3): up to 4 rounds × 32 per round = 128``)
    loops: list[str] = field(default_factory=list)
    #: the flow's ``budget { inferences: N }`` when it is lower than the figure (for some
    #: input): no run makes more than N model calls, whatever ``total`` says
    cap: int | None = None

    def add(self, other: Cost) -> Cost:
        """``self + other`` (a new Cost)."""
        out = Cost({r: dict(p) for r, p in self.roles.items()}, [*self.unbounded])
        for role, poly in other.roles.items():
            target = out.roles.setdefault(role, {})
            for mono, coef in poly.items():
                target[mono] = target.get(mono, 0) + coef
        out.unbounded += [u for u in other.unbounded if u not in out.unbounded]
        return out

    def times(self, factor: dict[Monomial, int]) -> Cost:
        """``self × factor`` (a polynomial)."""
        out = Cost({}, list(self.unbounded))
        for role, poly in self.roles.items():
            target = out.roles.setdefault(role, {})
            for mono, coef in poly.items():
                for fmono, fcoef in factor.items():
                    key = tuple(sorted(mono + fmono))
                    target[key] = target.get(key, 0) + coef * fcoef
        return out

    def most(self, other: Cost) -> Cost:
        """An upper bound of both (coefficient-wise maximum: sizes are never negative)."""
        out = Cost({r: dict(p) for r, p in self.roles.items()}, [*self.unbounded])
        for role, poly in other.roles.items():
            target = out.roles.setdefault(role, {})
            for mono, coef in poly.items():
                target[mono] = max(target.get(mono, 0), coef)
        out.unbounded += [u for u in other.unbounded if u not in out.unbounded]
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{roles: {role: "text"}, total: "text", unbounded: [...]}`` (JSON-ready)."""
        total: dict[Monomial, int] = {}
        for poly in self.roles.values():
            for mono, coef in poly.items():
                total[mono] = total.get(mono, 0) + coef
        return {
            "roles": {
                role: format_poly(poly)
                for role, poly in sorted(self.roles.items())
                if any(poly.values())
            },
            "total": format_poly(total),
            "unbounded": list(self.unbounded),
            "budgets": list(self.budgets),
            "loops": list(self.loops),
            "cap": self.cap,
        }


def const(n: int) -> dict[Monomial, int]:
    """The constant polynomial ``n``."""
    return {(): n} if n else {}


def symbol(name: str) -> dict[Monomial, int]:
    """The polynomial ``name``."""
    return {(name,): 1}


def one(role: str, n: dict[Monomial, int] | None = None) -> Cost:
    """``n`` (default 1) inferences of ``role``."""
    return Cost({role: dict(n if n is not None else const(1))})


def format_poly(poly: dict[Monomial, int]) -> str:
    """``3 × len(input.items) × max_iterations(E2) + 2`` (highest degree first; ``0`` when empty)."""
    terms = [(mono, coef) for mono, coef in poly.items() if coef]
    if not terms:
        return "0"
    terms.sort(key=lambda t: (-len(t[0]), t[0]))
    parts = []
    for mono, coef in terms:
        factors = ([str(coef)] if coef != 1 or not mono else []) + list(mono)
        product = len(factors) > 1
        parts.append(" × ".join(_operand(f, product) for f in factors))
    return " + ".join(parts)


#: operators that bind tighter than `+` between the terms of a formula: a symbol written with
#: one of them needs no brackets as a term (and with `*`, `/`, `%`, none as a factor either)
_PRODUCT_OPS = frozenset({"*", "/", "%"})
_SUM_OPS = _PRODUCT_OPS | {"+", "-"}


def _operand(symbol_text: str, product: bool) -> str:
    """A symbol of a formula (an expression of the program, ``input.rounds ?? 3``) as an
    operand of ``×`` (``product``) or ``+``: in brackets when its own operator binds less
    tightly than that one (``8 × (input.rounds ?? 3) + 8``)."""
    if not symbol_text or symbol_text.isdigit():
        return symbol_text
    try:
        node = parse_expression(symbol_text)
    except (SourceError, RecursionError):
        return symbol_text  # a place (`up_to(…)`), not an expression
    if isinstance(node, ast.Binary):
        loose = node.op not in (_PRODUCT_OPS if product else _SUM_OPS)
    else:
        loose = isinstance(node, ast.CondExpr | ast.RangeExpr) or (
            isinstance(node, ast.Unary) and node.op == "not"
        )
    return f"({symbol_text})" if loose else symbol_text


_TEMPLATE = re.compile(r"^\{\{\s*(.*?)\s*\}\}$", re.S)


#: a compiled sub-plan's view of the values of the plan that calls it (`input.env.input.rounds`)
_ENV = re.compile(r"\binput\.env\.")
#: a step id of the plan (`len(E0)`)
_STEP_ID = re.compile(r"\b(E\d+)\b")


_OR_NULL = re.compile(r"\(([A-Za-z_][\w.]*) \?\? null\)")


def _shown(expr: str, plan: Plan | None) -> str:
    """A plan expression in the program's terms when the plan was compiled from a `.flow`:
    ``len(E0)`` → ``len(real)``, ``input.env.input.rounds`` → ``input.rounds``
    (:mod:`agentflow.ir.names`)."""
    if plan is None:
        return expr
    return in_source_terms(_OR_NULL.sub(r"\1", expr), step_names(plan))


def _literal_length(expr: str) -> int | None:
    """The number of elements of a list literal (``["a", "b"]`` → 2), else None."""
    if not expr.startswith("["):
        return None
    try:
        node = parse_expression(expr)
    except (SourceError, RecursionError):
        return None
    return len(node.items) if isinstance(node, ast.ListLit) else None


def _size(
    value: Any,
    where: str,
    plan: Plan | None = None,
    seen: frozenset[str] = frozenset(),
    scope: _Scope | None = None,
) -> dict[Monomial, int]:
    """The length of what a map/filter/reduce goes over, simplified: a literal list's length
    (``len([1, 2])`` is 2); the result of a ``map`` as the length of what it goes over; a
    length the plan bounds (:func:`_max_len`: ``take(q, 3)``, ``@length(1, 3)``) as that
    bound; else the symbol ``len(<expression>)`` in the program's terms (a ``filter``'s result
    over an unbounded list keeps its name: ``len(kept)`` says more than the length it is at
    most)."""
    if isinstance(value, list):
        return const(len(value))
    if isinstance(value, str):
        m = _TEMPLATE.match(value.strip())
        expr = (m.group(1) if m else value).strip()
        n = _literal_length(expr)
        if n is not None:
            return const(n)
        step = _step_by_id(plan, expr) if plan is not None and expr not in seen else None
        if step is not None and step.tool_name == "map" and step.input:
            over = step.input.get("over") if isinstance(step.input, dict) else None
            return _size(over, where, plan, seen | {expr}, scope)
        node = _template_node(value) if m else None
        if node is not None and scope is not None:
            most = _max_len(node, [], scope)
            if isinstance(most, str):  # `take(xs, input.max_files)`: the input bounds it
                return symbol(most)
            if most is not None:
                return const(most)
        return symbol(f"len({_shown(expr, plan)})")
    return symbol(f"len({where})")


@dataclass
class _Scope:
    """Where an expression of a plan is read: ``plan``; ``env``, for a sub-plan flowc outlined,
    what its ``input.env.NAME`` holds (the caller's template and the caller's scope)."""

    plan: Plan
    env: dict[str, tuple[Any, _Scope]] | None = None
    #: the body (a step path of the walk) a sub-plan's own names are local to
    owner: str | None = None
    #: the `.flow`'s names of the caller's item and state (``{"item": "d"}``: a map's
    #: ``meta.names``), which a sub-plan reads as ``input.item`` / ``input.accumulator``
    names: dict[str, str] = field(default_factory=dict)
    #: a sub-plan's other inputs (``input.item`` …): the caller's template and scope
    args: dict[str, tuple[Any, _Scope]] = field(default_factory=dict)
    #: in a ``map``/``filter``/``reduce`` body: what ``item`` is an element of, and where
    item: tuple[Any, _Scope] | None = None


def _caller_names(sym: str, names: dict[str, str]) -> str:
    """``len(input.item.parts)`` → ``len(d.parts)`` in a body flowc outlined (``names``: the
    calling step's ``meta.names``)."""
    for key in ("item", "accumulator"):
        if isinstance(names.get(key), str):
            sym = re.sub(rf"\binput\.{key}\b", names[key], sym)
    return sym


#: how deep the length bound of an expression is followed (steps naming steps …)
_BOUND_DEPTH = 40


def _template_node(value: Any) -> ast.Expr | None:
    """The expression of a whole-template string (``{{ take(E0, 3) }}``), else None."""
    if not isinstance(value, str):
        return None
    m = _TEMPLATE.match(value.strip())
    if not m:
        return None
    try:
        return parse_expression(m.group(1))
    except (SourceError, RecursionError):
        return None


def _schema_max_items(schema: Any, path: list[str]) -> int | None:
    """The ``maxItems`` of the array at ``path`` (object properties) in ``schema`` (a contract:
    ``@length(1, 3)`` compiles to ``maxItems: 3``), following local ``$ref``s; None when the
    schema does not bound it."""
    root = schema
    for _ in range(_BOUND_DEPTH):
        if not isinstance(schema, dict):
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(root, dict):
            schema = (root.get("$defs") or {}).get(ref[len("#/$defs/") :])
            continue
        if not path:
            n = schema.get("maxItems")
            return n if isinstance(n, int) and not isinstance(n, bool) else None
        if path[0] == "[]":  # an element of the array
            schema, path = schema.get("items"), path[1:]
            continue
        props = schema.get("properties")
        if not isinstance(props, dict):
            return None
        schema, path = props.get(path[0]), path[1:]
    return None


class _Bound(str):
    """A length bound that is an input of the run, in the program's terms (``input.max_files``
    of ``take(xs, input.max_files)`` when the input does not bound it with ``@range``)."""


def _most(*bounds: int | str | None) -> int | str | None:
    if any(b is None for b in bounds):
        return None
    if any(isinstance(b, str) for b in bounds):  # a bound of the run's input: one, or none
        return bounds[0] if all(b == bounds[0] for b in bounds) else None
    return max(b for b in bounds if isinstance(b, int))


def _count_max(n: ast.Expr, scope: _Scope, depth: int = 0) -> int | str | None:
    """The most a count can be — ``take(xs, n)``'s, a ``loop``'s ``up to n``, ``range(a, b)``'s
    length — one bound-finding for every count: an int literal; an ``input.F`` of the flow at
    most its ``@range`` maximum (the input schema's ``maximum``), else ``input.F`` itself (a
    :class:`_Bound`); a sub-plan's ``input.env.X`` / ``input.X`` as the caller's value;
    ``len(xs)`` as :func:`_max_len`; ``a + b``, ``a * b`` of two known numbers. None for
    another expression."""
    if depth > _BOUND_DEPTH:
        return None
    if isinstance(n, ast.NumberLit):
        return (
            max(n.value, 0) if isinstance(n.value, int) and not isinstance(n.value, bool) else None
        )
    if isinstance(n, ast.FuncCall) and n.name == "len" and len(n.args) == 1:
        return _max_len(n.args[0], [], scope, depth + 1)
    if isinstance(n, ast.Binary) and n.op in ("+", "*"):
        left, right = _count_max(n.left, scope, depth + 1), _count_max(n.right, scope, depth + 1)
        if isinstance(left, int) and isinstance(right, int):
            return left + right if n.op == "+" else left * right
        return None
    path: list[str] = []
    while isinstance(n, ast.Member):
        path.insert(0, n.name)
        n = n.obj
    if not (isinstance(n, ast.Name) and n.name == "input" and path):
        return None
    if scope.env is not None:  # a sub-plan flowc outlined: its input is the caller's value
        if len(path) == 2 and path[0] == "env" and path[1] in scope.env:
            value, outer = scope.env[path[1]]
        elif len(path) == 1 and path[0] in scope.args:
            value, outer = scope.args[path[0]]
        else:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return max(value, 0)
        target = _template_node(value)
        return _count_max(target, outer, depth + 1) if target is not None else None
    schema: Any = scope.plan.input_schema
    for key in path:
        props = schema.get("properties") if isinstance(schema, dict) else None
        schema = props.get(key) if isinstance(props, dict) else None
    most = schema.get("maximum") if isinstance(schema, dict) else None
    if isinstance(most, int) and not isinstance(most, bool):
        return max(most, 0)
    return _Bound("input." + ".".join(path))


def _max_len(node: ast.Expr, path: list[str], scope: _Scope, depth: int = 0) -> int | str | None:
    """The most elements the list ``node.path`` can hold, when the plan bounds it: a list
    literal, ``take(xs, 3)``, a contract's ``maxItems`` (``@length(1, 3)``), the input's, a
    ``map``/``filter`` as what it goes over, an ``if`` as its longer branch (a ``match`` its
    longest arm), a sub-plan's
    ``input.env`` as the caller's value; None when nothing does."""
    if depth > _BOUND_DEPTH:
        return None
    if isinstance(node, ast.Member):
        return _max_len(node.obj, [node.name, *path], scope, depth + 1)
    if isinstance(node, ast.ListLit):
        return len(node.items) if not path else None
    if isinstance(node, ast.CondExpr):
        return _most(
            _max_len(node.then, path, scope, depth + 1),
            _max_len(node.else_, path, scope, depth + 1),
        )
    if isinstance(node, ast.MatchExpr):
        return _most(*[_max_len(arm.value, path, scope, depth + 1) for arm in node.arms])
    if isinstance(node, ast.FuncCall) and not path and node.args:
        inner = _max_len(node.args[0], [], scope, depth + 1)
        if node.name == "take" and len(node.args) == 2:
            n = node.args[1]
            if isinstance(n, ast.NumberLit) and isinstance(n.value, int):
                if isinstance(inner, int):
                    return min(n.value, inner)
                return max(n.value, 0)
            bound = _count_max(n, scope, depth + 1)
            if bound is not None:
                if isinstance(inner, int) and isinstance(bound, int):
                    return min(bound, inner)
                return inner if isinstance(inner, int) else bound
        if node.name in ("sort", "sort_by", "reverse", "unique", "distinct", "drop"):
            return inner
        if node.name == "range" and len(node.args) in (1, 2):
            # `range(n)`, `range(a, b)`: at most `b - a` (`b` for a start that may be below 0)
            high = _count_max(node.args[-1], scope, depth + 1)
            low = node.args[0] if len(node.args) == 2 else None
            if low is None:
                return high
            if not isinstance(low, ast.NumberLit) or not isinstance(low.value, int):
                return None
            if isinstance(high, int):
                return max(high - low.value, 0)
            return high if low.value >= 0 else None
        return None
    if isinstance(node, ast.Name):
        if node.name == "input":
            if scope.env is None:  # the flow's input: its schema may bound it
                return _schema_max_items(scope.plan.input_schema, path)
            if len(path) >= 2 and path[0] == "env" and path[1] in scope.env:
                value, outer = scope.env[path[1]]
                rest = path[2:]
            elif path and path[0] != "env" and path[0] in scope.args:
                value, outer = scope.args[path[0]]
                rest = path[1:]
            else:
                return None
            target = _template_node(value)
            if target is None:
                return len(value) if isinstance(value, list) and not rest else None
            return _max_len(target, rest, outer, depth + 1)
        if node.name == "item" and scope.item is not None:  # an element of what is mapped
            over, outer = scope.item
            target = _template_node(over)
            return _max_len(target, ["[]", *path], outer, depth + 1) if target else None
        step = _top_step(scope.plan, node.name)
        return _step_max_len(step, path, scope, depth + 1) if step is not None else None
    return None


def _step_max_len(step: Step, path: list[str], scope: _Scope, depth: int) -> int | str | None:
    """:func:`_max_len` of a step's value (its ``select`` of its result, else its result)."""
    select = _template_node(step.select) if step.select is not None else None
    if select is None:
        return _result_max_len(step, path, scope, depth)
    # `result` in the select is the step's own result
    while isinstance(select, ast.Member):
        path = [select.name, *path]
        select = select.obj
    if isinstance(select, ast.Name) and select.name == "result":
        return _result_max_len(step, path, scope, depth)
    return None


def _result_max_len(step: Step, path: list[str], scope: _Scope, depth: int) -> int | str | None:
    inp = step.input if isinstance(step.input, dict) else {}
    name = step.tool_name
    if name == "agent" and path[:1] == ["output"]:
        return _schema_max_items(inp.get("output_schema"), path[1:])
    if name == "decide" and path[:1] == ["output"]:
        branches = [b for label, b in step.bodies() if label in ("then", "else")]
        if not branches:
            return None
        return _most(*(_step_max_len(b, path[1:], scope, depth + 1) for b in branches))
    if name == "value":
        value = inp.get("value")
        node = _template_node(value)
        if node is None:
            return len(value) if isinstance(value, list) and not path else None
        return _max_len(node, path, scope, depth + 1)
    # a map's result is its list; a filter's is `{kept, dropped}`, each at most as long
    if (name == "map" and not path) or (name == "filter" and path in (["kept"], ["dropped"])):
        over = inp.get("over")
        node = _template_node(over)
        if node is None:
            return len(over) if isinstance(over, list) else None
        return _max_len(node, [], scope, depth + 1)
    return None


def _top_step(plan: Plan, step_id: str) -> Step | None:
    """The top-level step ``step_id`` of ``plan``, or None."""
    return next((step for step in plan.steps if step.id == step_id), None)


def _step_by_id(plan: Plan, step_id: str) -> Step | None:
    """The top-level step ``step_id`` of ``plan`` (None: not one; also without a ``select``,
    which would change the length)."""
    for step in plan.steps:
        if step.id == step_id:
            return step if step.select is None else None
    return None


def _bound(
    value: Any, where: str, plan: Plan | None = None, scope: _Scope | None = None
) -> dict[Monomial, int]:
    """A ``loop``'s ``up_to``: a number; else its most (:func:`_count_max`, as ``take``'s
    count: an input's ``@range`` maximum, ``len`` of a bounded list); else the expression of
    its template (``input.rounds``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return const(value)
    node = _template_node(value) if scope is not None else None
    most = _count_max(node, scope) if node is not None and scope is not None else None
    if isinstance(most, int):
        return const(most)
    if isinstance(most, str):
        return symbol(most)
    if isinstance(value, str):
        m = _TEMPLATE.match(value.strip())
        return symbol(_shown(m.group(1) if m else value, plan))
    return symbol(f"up_to({where})")


def _total(cost: Cost) -> dict[Monomial, int]:
    total: dict[Monomial, int] = {}
    for poly in cost.roles.values():
        for mono, coef in poly.items():
            total[mono] = total.get(mono, 0) + coef
    return total


def _paren(poly: dict[Monomial, int]) -> str:
    text = format_poly(poly)
    return f"({text})" if " + " in text else text


def _count(value: Any, name: str, default: int) -> dict[Monomial, int]:
    if value is None:
        return const(default)
    if isinstance(value, int) and not isinstance(value, bool):
        return const(value)
    return symbol(name)


#: the names a body's template reads its item, state and round by (`item`, `input.round` …)
_BODY_NAMES = frozenset({"item", "accumulator", "round", "index", "result"})


def _names_read(expr: str) -> list[list[str]]:
    """The member chains an expression reads (``input.env.plan`` → ``["input", "env",
    "plan"]``), each from a name; empty when it does not parse."""
    try:
        node = parse_expression(expr)
    except (SourceError, RecursionError):
        return []
    out: list[list[str]] = []

    def walk(n: Any, depth: int = 0) -> None:
        if depth > 200:
            return
        if isinstance(n, ast.Member):
            chain: list[str] = []
            obj: Any = n
            while isinstance(obj, ast.Member):
                chain.insert(0, obj.name)
                obj = obj.obj
            if isinstance(obj, ast.Name):
                out.append([obj.name, *chain])
                return
            walk(obj, depth + 1)
            return
        if isinstance(n, ast.Name):
            out.append([n.name])
            return
        if isinstance(n, ast.Node):
            for name in getattr(n, "__slots__", ()):
                value = getattr(n, name, None)
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, ast.Node):
                        walk(v, depth + 1)

    walk(node)
    return out


def _meta_names(step: Step) -> dict[str, str]:
    names = (step.meta or {}).get("names")
    return {k: v for k, v in names.items() if isinstance(v, str)} if isinstance(names, dict) else {}


class _Walker:
    def __init__(self, root: Plan):
        self.root = root
        self.active: list[str] = []
        self.loops: list[str] = []
        self.scope = _Scope(root)
        #: the bodies being walked (map, reduce, filter, loop: step paths), innermost last
        self.owners: list[str] = []
        #: symbols that name what only a body sees (`len(qs)`, `len(item.parts)`) → its owner
        self.local: dict[str, str] = {}
        #: each owner's `.flow` names of its item and state (its step's ``meta.names``)
        self.owner_names: dict[str, dict[str, str]] = {}

    def size(self, value: Any, where: str, plan: Plan) -> dict[Monomial, int]:
        """:func:`_size` in the current scope, its symbol recorded as local to the body whose
        names it reads (renamed when the figure leaves that body: :meth:`leave`)."""
        poly = _size(value, where, plan, scope=self.scope)
        if self.scope.names:  # `input.item.parts` of a map body flowc outlined: `d.parts`
            poly = {
                tuple(sorted(_caller_names(sym, self.scope.names) for sym in mono)): coef
                for mono, coef in poly.items()
            }
        m = _TEMPLATE.match(value.strip()) if isinstance(value, str) else None
        if m is None:
            return poly
        for chain in _names_read(m.group(1)):
            head = chain[0]
            sub = self.scope.env is not None
            if head in _BODY_NAMES and self.owners:
                owner: str | None = self.owners[-1]
            elif sub and (
                _top_step(plan, head) is not None or (head == "input" and chain[1:2] != ["env"])
            ):
                owner = self.scope.owner
            else:
                continue
            for mono in poly:
                for sym in mono:
                    if owner is not None:
                        self.local.setdefault(sym, owner)
        return poly

    def leave(self, cost: Cost, owner: str, how: str) -> Cost:
        """``cost`` out of the body ``owner``: a symbol only the body sees becomes the most it is
        in any of its runs (``max len(qs) per round``, ``max len(item.parts) per item of
        input.docs``), never a name out of its scope."""
        renames = {sym: f"(max {sym} {how})" for sym, o in self.local.items() if o == owner}
        if not renames:
            return cost
        out = Cost({}, list(cost.unbounded))
        for role, poly in cost.roles.items():
            target = out.roles.setdefault(role, {})
            for mono, coef in poly.items():
                key = tuple(sorted(renames.get(sym, sym) for sym in mono))
                target[key] = target.get(key, 0) + coef
        return out

    def plan(self, plan: Plan) -> Cost:
        if plan.name in self.active:
            return Cost(unbounded=[f"plan '{plan.name}' calls itself"])
        self.active.append(plan.name)
        try:
            cost = Cost()
            for index, step in enumerate(plan.steps):
                cost = cost.add(self.step(step, step.id or f"steps[{index}]", plan))
            finish = plan.effective_finish()
            if finish.mode == "solver":
                cost = cost.add(one("solver"))
            return cost
        finally:
            self.active.pop()

    def step(self, step: Step, path: str, plan: Plan) -> Cost:
        cost = self._step(step, path, plan)
        if step.retry is not None and step.retry.attempts:
            cost = cost.times(const(1 + step.retry.attempts))
        return cost

    def _step(self, step: Step, path: str, plan: Plan) -> Cost:
        inp = step.input if isinstance(step.input, dict) else {}
        name = step.tool_name
        bodies = dict(step.bodies())
        if name == "agent":
            model = inp.get("model")
            # the role or named model the agent's rounds use (an alias's flow.toml model is not
            # known to the plan: counted under `chat`)
            role = model if isinstance(model, str) and "{{" not in model else "chat"
            rounds = _count(inp.get("max_iterations"), f"max_iterations({path})", 8)
            repairs = _count(inp.get("repair_attempts"), f"repair_attempts({path})", 1)
            cost = one(role, rounds).add(one("repair", repairs).times(rounds))
            tools = inp.get("tools")
            if tools is None or any(
                isinstance(t, str) and (t.startswith("plan__") or t in ("*", "plan__*"))
                for t in (tools if isinstance(tools, list) else [])
            ):
                cost.unbounded.append(
                    f"{_place(step, path)}: the agent may call plan__* tools, whose model "
                    "calls are not counted"
                )
            return cost
        if name == "decide":
            judge = one("judge") if "infer" in inp else Cost()
            branch = Cost()
            for label in ("then", "else"):
                if label in bodies:
                    branch = branch.most(self.step(bodies[label], f"{path}/{label}", plan))
            return judge.add(branch)
        if name == "filter":
            if "infer" in inp:
                return one("judge", self.size(inp.get("over"), f"{path}.over", plan))
            return Cost()
        if name in ("map", "reduce"):
            body = bodies.get("do")
            if body is None:
                return Cost()
            over = self.size(inp.get("over"), f"{path}.over", plan)
            self.owners.append(path)
            self.owner_names[path] = _meta_names(step)
            outer = self.scope
            self.scope = dataclasses.replace(outer, item=(inp.get("over"), outer))
            try:
                each = self.step(body, f"{path}/do", plan)
            finally:
                self.owners.pop()
                self.scope = outer
            of = inp.get("over")
            m = _TEMPLATE.match(of.strip()) if isinstance(of, str) else None
            shown = _shown(m.group(1).strip(), plan) if m else "the list"
            return self.leave(each, path, f"per item of {shown}").times(over)
        if name == "try":
            # the worst case: `do` makes all its calls and then fails, and `catch` runs
            cost = Cost()
            for label in ("do", "catch"):
                if label in bodies:
                    cost = cost.add(self.step(bodies[label], f"{path}/{label}", plan))
            return cost
        if name == "loop":
            body = bodies.get("do")
            if body is None:
                return Cost()
            self.owners.append(path)
            self.owner_names[path] = _meta_names(step)
            try:
                per_round = self.step(body, f"{path}/round", plan)
            finally:
                self.owners.pop()
            bound = _bound(inp.get("up_to"), path, plan, self.scope)
            # a round's figure in the round's names; the loop's, out of it, in the caller's
            cost = self.leave(per_round, path, "per round").times(bound)
            self.loops.append(
                f"{_place(step, path)}: up to {_paren(bound)} rounds × "
                f"{_paren(_total(per_round))} per round = {format_poly(_total(cost))}"
            )
            return cost
        if name == "parallel":
            cost = Cost()
            for label, body in bodies.items():
                cost = cost.add(self.step(body, f"{path}/{label}", plan))
            return cost
        if name == "verify":
            judges = inp.get("judges")
            return (
                one("judge", const(len(judges))) if isinstance(judges, list) and judges else Cost()
            )
        if name.startswith("plan__"):
            sub = name[len("plan__") :]
            target = plan.plans.get(sub) or self.root.plans.get(sub)
            if target is None and sub == self.root.name:
                target = self.root
            if target is None:
                return Cost(unbounded=[f"{path}: sub-plan '{sub}' is not in this file"])
            env = inp.get("env")
            outer = self.scope
            values = env if isinstance(env, dict) else {}
            owner = self.owners[-1] if self.owners else path
            names = self.owner_names.get(owner, {}) if self.owners else {}
            args = {k: (v, outer) for k, v in inp.items() if k != "env"}
            self.scope = _Scope(
                target, {k: (v, outer) for k, v in values.items()}, owner, names, args
            )
            try:
                return self.plan(target)
            finally:
                self.scope = outer
        return Cost()


def worst_case(plan: Plan) -> Cost:
    """The most inferences per role a run of ``plan`` can make (see the module doc); the budgets
    the plan sets (which stop a run earlier) are listed in ``budgets``."""
    walker = _Walker(plan)
    cost = walker.plan(plan)
    cost.loops = walker.loops
    if plan.budget is not None:
        cost.budgets.append(f"run: {_limits(plan.budget.model_dump())}")
        limit = plan.budget.inferences
        total = {m: c for m, c in _total(cost).items() if c}
        if limit is not None and (any(total) or total.get((), 0) > limit or cost.unbounded):
            cost.cap = limit  # the budget stops a run before the figure (for some input)
    for path, step in plan.iter_steps():
        budget = step.input.get("budget") if isinstance(step.input, dict) else None
        if step.tool_name == "agent" and isinstance(budget, dict):
            cost.budgets.append(f"agent step {path} (each run): {_limits(budget)}")
    return cost


def over_budget(cost: Cost, plan: Plan) -> list[tuple[str, str]]:
    """``(message, hint)`` for each way the worst case of ``cost`` (:func:`worst_case` of
    ``plan``) exceeds the plan's own run budget of ``inferences`` (the ``cost-over-budget``
    warning of ``flowc cost``): a constant worst case above it; one linear in a single input
    size above it beyond a size (``exceeds … when len(input.items) > 4``); any other figure
    whose constant part alone is above it.  Empty when it fits, or without such a budget."""
    limit = plan.budget.inferences if plan.budget is not None else None
    if limit is None:
        return []
    total = {m: c for m, c in _total(cost).items() if c}
    fixed = total.get((), 0)
    terms = {m: c for m, c in total.items() if m}
    figure = format_poly(total)
    hint = (
        "the run stops with `budget_exceeded` at the call that would pass it: raise the "
        "budget, or lower `max_iterations` / a loop's bound"
    )
    if not terms:
        if fixed > limit:
            return [
                (
                    f"the worst case, {fixed} model calls, exceeds the flow's budget of "
                    f"{limit} inferences",
                    hint,
                )
            ]
        return []
    if fixed > limit:
        return [
            (
                f"the worst case, {figure} model calls, exceeds the flow's budget of {limit} "
                "inferences whatever the input",
                hint,
            )
        ]
    if len(terms) == 1:
        ((mono, coef),) = terms.items()
        if len(mono) == 1:
            most = (limit - fixed) // coef
            return [
                (
                    f"the worst case, {figure} model calls, exceeds the flow's budget of "
                    f"{limit} inferences when {mono[0]} > {most}",
                    hint,
                )
            ]
    return []


def _place(step: Step, path: str) -> str:
    """Where a step is, in the `.flow`'s terms when compiled (``revise › loop (f.flow:12:3)``),
    else its step path (``E1 (loop)``)."""
    meta = step.meta or {}
    if meta.get("source"):
        stage = f"{meta['stage']} › " if meta.get("stage") else ""
        return f"{stage}{step.tool_name} ({meta['source']})"
    return f"{path} ({step.tool_name})"


def _limits(data: dict[str, Any]) -> str:
    parts = []
    if data.get("inferences") is not None:
        parts.append(f"{data['inferences']} inferences")
    if data.get("tokens") is not None:
        parts.append(f"{data['tokens']} tokens")
    if data.get("cost") is not None:
        parts.append(f"${data['cost']:g}")
    return ", ".join(parts) or "no limit"
