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

from agentflow.ir.models import Plan, Step

__all__ = ["Cost", "worst_case"]

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
        parts.append(" × ".join(factors))
    return " + ".join(parts)


_TEMPLATE = re.compile(r"^\{\{\s*(.*?)\s*\}\}$", re.S)


#: a compiled sub-plan's view of the values of the plan that calls it (`input.env.input.rounds`)
_ENV = re.compile(r"\binput\.env\.")
#: a step id of the plan (`len(E0)`)
_STEP_ID = re.compile(r"\b(E\d+)\b")


def _program_names(plan: Plan) -> dict[str, str]:
    """The `.flow` name of each top-level step of a compiled plan: the stage, for the step that
    gives a stage its value (its last step), else the name of its ``let``."""
    names: dict[str, str] = {}
    last_of_stage: dict[str, str] = {}
    for step in plan.steps:
        meta = step.meta or {}
        if not step.id:
            continue
        if isinstance(meta.get("name"), str):
            names[step.id] = meta["name"]
        if isinstance(meta.get("stage"), str):
            last_of_stage[meta["stage"]] = step.id
    for stage, step_id in last_of_stage.items():
        names[step_id] = stage
    return names


def _shown(expr: str, plan: Plan | None) -> str:
    """A plan expression in the program's terms when the plan was compiled from a `.flow`:
    ``len(E0)`` → ``len(real)``, ``input.env.input.rounds`` → ``input.rounds``."""
    if plan is None:
        return expr
    expr = _ENV.sub("", expr)
    names = _program_names(plan)
    return _STEP_ID.sub(lambda m: names.get(m.group(1), m.group(1)), expr)


def _size(value: Any, where: str, plan: Plan | None = None) -> dict[Monomial, int]:
    """The length of what a map/filter/reduce goes over: a literal list's length, else the
    symbol ``len(<expression>)``."""
    if isinstance(value, list):
        return const(len(value))
    if isinstance(value, str):
        m = _TEMPLATE.match(value.strip())
        return symbol(f"len({_shown(m.group(1) if m else value, plan)})")
    return symbol(f"len({where})")


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
                    f"{path}: the agent may call plan__* tools, whose model calls are not counted"
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
