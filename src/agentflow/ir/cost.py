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

What a static reading cannot bound is reported in ``unbounded``: an agent that may call
``plan__*`` tools (each round may call them any number of times), a sub-plan that is not in the
file, a recursive plan.
"""

from __future__ import annotations

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
    value: Any, where: str, plan: Plan | None = None, seen: frozenset[str] = frozenset()
) -> dict[Monomial, int]:
    """The length of what a map/filter/reduce goes over, simplified: a literal list's length
    (``len([1, 2])`` is 2); the result of a ``map`` as the length of what it goes over; else
    the symbol ``len(<expression>)`` in the program's terms (a ``filter``'s result keeps its
    name: ``len(kept)`` says more than the length it is at most)."""
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
            return _size(over, where, plan, seen | {expr})
        return symbol(f"len({_shown(expr, plan)})")
    return symbol(f"len({where})")


def _step_by_id(plan: Plan, step_id: str) -> Step | None:
    """The top-level step ``step_id`` of ``plan`` (None: not one; also without a ``select``,
    which would change the length)."""
    for step in plan.steps:
        if step.id == step_id:
            return step if step.select is None else None
    return None


def _bound(value: Any, where: str, plan: Plan | None = None) -> dict[Monomial, int]:
    """A ``loop``'s ``up_to``: a number, else the expression of its template (``input.rounds``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return const(value)
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


class _Walker:
    def __init__(self, root: Plan):
        self.root = root
        self.active: list[str] = []
        self.loops: list[str] = []

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
                return one("judge", _size(inp.get("over"), f"{path}.over", plan))
            return Cost()
        if name in ("map", "reduce"):
            body = bodies.get("do")
            if body is None:
                return Cost()
            over = _size(inp.get("over"), f"{path}.over", plan)
            return self.step(body, f"{path}/do", plan).times(over)
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
            per_round = self.step(body, f"{path}/round", plan)
            bound = _bound(inp.get("up_to"), path, plan)
            cost = per_round.times(bound)
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
            return self.plan(target)
        return Cost()


def worst_case(plan: Plan) -> Cost:
    """The most inferences per role a run of ``plan`` can make (see the module doc); the budgets
    the plan sets (which stop a run earlier) are listed in ``budgets``."""
    walker = _Walker(plan)
    cost = walker.plan(plan)
    cost.loops = walker.loops
    if plan.budget is not None:
        cost.budgets.append(f"run: {_limits(plan.budget.model_dump())}")
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
