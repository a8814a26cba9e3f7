"""A plan's ``functions`` (docs/spec/PLAN_IR.md "functions"): the user functions of a `.flow`
(docs/reference/programs.md "User functions") parsed once at load time, checked (each body
reads only its parameters, calls only library functions and the plan's functions, none of them
reaches itself), and bound to the calls of the plan's templates.

A template's ``rank(E0.severity)`` is parsed as an :class:`ast.UserCall`; parsed templates are
shared between plans (``templates._parse_shared``), so binding never mutates one: a tree holding
a call is copied with each call's ``function`` set to the :class:`Function` it runs
(:func:`bind_calls`), and the evaluator runs it from there (``runtime.expressions``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentflow.core.diagnostics import did_you_mean
from agentflow.core.functions import FUNCTIONS, function_hint
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression

__all__ = [
    "Function",
    "bind_calls",
    "body_problems",
    "call_problem",
    "calls_in",
    "function_cycles",
    "has_calls",
    "table_from_data",
]


#: a plan function ready to run: its name, its parameters' names, its body (its own calls
#: bound) and where the `.flow` declared it (``meta.source``, None in a hand-written plan)
Function = ast.UserFunction


def table_from_data(functions: Any, file: str = "<plan>") -> dict[str, Function]:
    """The functions of a compiled plan's data (``plan["functions"]``, which the compiler wrote
    valid) parsed and bound to one another, for templates compiled outside a plan load (the
    stages a ``test`` block reads). Raises ``SourceError`` for a body that does not parse."""
    table: dict[str, Function] = {}
    if not isinstance(functions, dict):
        return table
    for name, fn in functions.items():
        body = parse_expression(str(fn["expr"]), file)
        table[name] = Function(name, tuple(fn["params"]), body)
    for ready in table.values():
        ready.body = bind_calls(ready.body, table)
    return table


def body_problems(
    name: str, params: list[str], body: ast.Expr, known: dict[str, int]
) -> list[tuple[str, ast.Node, str | None]]:
    """What is wrong with function ``name``'s parsed body: a name that is no parameter, a call
    of no function of the plan (``known``: name → parameter count) or with the wrong number of
    arguments. Effects are refused by the template parse before (``plan-effectful-template``)."""
    out: list[tuple[str, ast.Node, str | None]] = []
    for n in ast.walk(body):
        if isinstance(n, ast.Name) and n.name not in params:
            out.append(
                (
                    f"function `{name}` reads `{n.name}`, which is not one of its parameters",
                    n,
                    "a function reads only its parameters: "
                    + (", ".join(f"`{p}`" for p in params) or "it has none"),
                )
            )
        elif isinstance(n, ast.UserCall):
            problem = call_problem(n, known)
            if problem is not None:
                out.append((*problem[:1], n, problem[1]))
    return out


def call_problem(call: ast.UserCall, known: dict[str, int]) -> tuple[str, str | None] | None:
    """``(message, hint)`` when ``call`` names no function of the plan or gives the wrong number
    of arguments; None when it is a call the plan can run."""
    count = known.get(call.name)
    if count is None:
        return (
            f"unknown function `{call.name}`",
            _close(call.name, known)
            or "the library functions are in docs/reference/functions.md; a plan's own are "
            "its `functions`",
        )
    if count != len(call.args):
        return (
            f"function `{call.name}` takes {count} argument{'s' if count != 1 else ''}, "
            f"{len(call.args)} given",
            None,
        )
    return None


def _close(name: str, known: dict[str, int]) -> str | None:
    """ "did you mean" a function of the plan, else a library function (also for the names
    other languages use: ``toUpperCase``)."""
    mine = did_you_mean(name, list(known))
    if mine:
        return mine
    meant = function_hint(name)
    return f"did you mean `{meant}`? `{FUNCTIONS[meant].signature}`" if meant else None


def function_cycles(calls: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle of the functions' calls once, as ``[a, b, …, a]``."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    state: dict[str, int] = {}
    for root in calls:
        if root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            callees = calls.get(node, [])
            if i < len(callees):
                stack.append((node, i + 1))
                callee = callees[i]
                if state.get(callee) == 1:
                    cycle = path[path.index(callee) :] + [callee]
                    if frozenset(cycle) not in seen:
                        seen.add(frozenset(cycle))
                        found.append(cycle)
                elif callee not in state and callee in calls:
                    stack.append((callee, 0))
            else:
                state[node] = 2
                path.pop()
    return found


def bind_calls(value: Any, table: dict[str, Function]) -> Any:
    """``value`` (a compiled plan value: dicts, lists, parsed templates and expressions) with
    each :class:`ast.UserCall` bound to its function of ``table`` — on copies of the trees that
    hold one; a value without calls is returned itself. A call of no function stays unbound
    (the validator reported it)."""
    if isinstance(value, ast.Node):
        return _bound(value, table)
    if isinstance(value, dict):
        out = {k: bind_calls(v, table) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        items = [bind_calls(v, table) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _bound(node: Any, table: dict[str, Function]) -> Any:
    if isinstance(node, ast.UserCall):
        args = [_bound(a, table) for a in node.args]
        return ast.UserCall(node.span, node.name, node.name_span, args, table.get(node.name))
    if isinstance(node, ast.Node):
        changed: dict[str, Any] = {}
        for name in type(node).__dataclass_fields__:
            v = getattr(node, name)
            if isinstance(v, ast.Node | list | tuple):
                nv = _bound(v, table)
                if nv is not v:
                    changed[name] = nv
        return dataclasses.replace(node, **changed) if changed else node
    if isinstance(node, list | tuple):
        items = [_bound(v, table) for v in node]
        if all(a is b for a, b in zip(items, node, strict=True)):
            return node
        return items if isinstance(node, list) else tuple(items)
    return node


def has_calls(value: Any) -> bool:
    """True when a compiled value holds a :class:`ast.UserCall`."""
    if isinstance(value, ast.Node):
        return any(isinstance(n, ast.UserCall) for n in ast.walk(value))
    if isinstance(value, dict):
        return any(has_calls(v) for v in value.values())
    if isinstance(value, list):
        return any(has_calls(v) for v in value)
    return False


def calls_in(value: Any) -> list[ast.UserCall]:
    """Every :class:`ast.UserCall` of a compiled value."""
    if isinstance(value, ast.Node):
        return [n for n in ast.walk(value) if isinstance(n, ast.UserCall)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in calls_in(v)]
    if isinstance(value, list):
        return [c for v in value for c in calls_in(v)]
    return []
