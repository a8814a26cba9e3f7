"""`stub step` and `stub ask` in a `flowc test` run (docs/reference/testing.md): the steps of
the compiled plan they answer, turned into calls of a stub tool that gives the stub's answers —
a step bound by a `let`, the `ask` steps of a `let` or a stage, a `parallel` block bound by a
`let` and its branches (`stub step r.a`). Layer: api (beside :mod:`agentflow.flowtest`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentflow.core.vocabulary import UNANSWERED_FAIL
from agentflow.grammar import ast

__all__ = ["answers_tool", "plan_steps", "step_contract", "stub_named_steps", "unstubbed_asks"]


def stub_named_steps(
    data: dict[str, Any],
    stub: ast.TestStub,
    answers: Any,
    Tool: Any,
    *,
    stages: list[ast.StageDecl],
) -> list[Any]:
    """Turn the steps ``stub ask|step NAME`` answers into calls of a stub tool each, and return
    those tools (none: no step found). ``stub step NAME``: every step bound by ``let NAME``;
    ``stub step NAME.BRANCH``: that branch of the ``parallel`` block of ``let NAME`` (its body
    replaced: the branch's value is the stub's); ``stub ask NAME``: the ``ask`` steps bound by
    ``let NAME``, else every ``ask`` step of stage ``NAME``. A step keeps its ``select`` (the
    compiler may have folded what follows into it); the tool answers the result the step would
    have had, from which the ``select`` reads the stub's value (``{answer: V}`` for an ``ask``,
    ``{output: V}`` for an agent, …). ``stages`` are the checked stages (where a ``parallel``
    block's ``let`` is found)."""
    steps = list(plan_steps(data))
    name = stub.target.name
    if stub.branch is not None:
        branch = stub.branch.name
        bodies = [
            b["input"]["branches"][branch]
            for b in _parallel_steps(steps, stages, name)
            if branch in ((b.get("input") or {}).get("branches") or {})
        ]
        tools = []
        for n, body in enumerate(bodies):
            tool_name = f"test_stub__step_{name}_{branch}_{n}"
            meta = body.get("meta")
            body.clear()
            body.update(tool_name=tool_name, input={}, **({"meta": meta} if meta else {}))
            tools.append(answers_tool(Tool, tool_name, answers))
        return tools
    if stub.kind == "step":
        chosen = [st for st in steps if (st.get("meta") or {}).get("name") == name]
    else:
        asks = [st for st in steps if st.get("tool_name") == "ask"]
        chosen = [st for st in asks if (st.get("meta") or {}).get("name") == name] or [
            st for st in asks if (st.get("meta") or {}).get("stage") == name
        ]
    tools = []
    for n, st in enumerate(chosen):
        tool_name = f"test_stub__{stub.kind}_{name}_{n}"
        wrap, contract = result_shape(st), step_contract(st)
        keep: dict[str, Any] = {k: st[k] for k in ("id", "select", "meta") if k in st}
        st.clear()
        st.update(keep, tool_name=tool_name, input={})
        tools.append(answers_tool(Tool, tool_name, answers, wrap, contract))
    return tools


def unstubbed_asks(data: dict[str, Any]) -> None:
    """Give each ``ask`` step of plan ``data`` that no ``stub ask`` answered and that has
    neither ``default`` nor ``else fail`` the failure a test says: the question (its first line,
    when it is plain text) and the ``stub ask NAME returns VALUE`` that answers it — a run's
    own advice (``--answer``, ``flowc answer``) is no test's (docs/reference/testing.md)."""
    for st in plan_steps(data):
        given = st.get("input") if st.get("tool_name") == "ask" else None
        if not isinstance(given, dict) or given.get("when_unanswered") != {"fail": UNANSWERED_FAIL}:
            continue
        meta = st.get("meta") or {}
        name = meta.get("name") or meta.get("stage") or "NAME"
        question = str(given.get("question") or "").strip()
        first = question.splitlines()[0] if question else ""
        shown = f' "{first}{"…" if first != question else ""}"' if "{" not in first else ""
        given["when_unanswered"] = {
            "fail": f"the test does not answer the question{shown}: answer it with "
            f"`stub ask {name} returns VALUE` in the test, or give the ask a default"
        }


def _parallel_steps(
    steps: list[dict[str, Any]], stages: list[ast.StageDecl], name: str
) -> list[dict[str, Any]]:
    """The ``parallel`` steps of the blocks bound by ``let NAME = parallel { … }``: found by the
    place the lowering gives the step (``meta.source``, the block's ``parallel`` keyword, and
    ``meta.stage``), since
    a block with pure branches is computed inline and its step carries no ``let`` name."""
    places = set()
    for stage in stages:
        for node in ast.walk(stage.body):
            if isinstance(node, ast.LetStmt) and node.name.name == name:
                if isinstance(node.value, ast.ParallelExpr):
                    kw = node.value.keyword_span or node.value.span
                    places.add((stage.name.name, f":{kw.line}:{kw.column}"))
    out = []
    for st in steps:
        meta = st.get("meta") or {}
        place = ":" + ":".join(str(meta.get("source") or "").rsplit(":", 2)[1:])
        if st.get("tool_name") == "parallel" and (meta.get("stage"), place) in places:
            out.append(st)
    return out


def answers_tool(
    Tool: Any, plan_name: str, answers: Any, wrap: Any = None, contract: Any = None
) -> Any:
    async def answer(args: dict[str, Any], ctx: Any) -> Any:
        value = answers.next()
        if contract is not None:
            answers.held_to(contract[2](value), contract[:2])
        return wrap(value) if wrap is not None else value

    what = f"stub of {answers.stub.target.name}"
    return Tool(plan_name, what, {"type": "object"}, answer, source="test-stub")


def step_contract(step: dict[str, Any]) -> tuple[dict[str, Any], str, Any] | None:
    """What the value a ``stub step|ask`` gives ``step`` is held to, as a real result is:
    ``(schema, what it is, the value as the schema reads it)`` (an agent's ``expect`` of a
    non-object type reads ``{value: V}``), or None (the step declares none)."""
    tool, given = str(step.get("tool_name")), step.get("input") or {}
    schema, shape = step.get("result_schema"), (lambda v: v)
    what = f"the declared result type of tool `{tool}`"
    if tool == "ask":
        schema, what = given.get("schema"), "the `ask`'s `expect`"
    elif tool == "agent":
        schema, what = given.get("output_schema"), "the agent's `expect`"
        if "result.output.value" in str(step.get("select") or ""):
            shape = lambda v: {"value": v}  # noqa: E731
    return (schema, what, shape) if isinstance(schema, dict) else None


def result_shape(step: dict[str, Any]) -> Any:
    """How the result of ``step`` holds its value, for its ``select``: a function value → result."""
    tool = str(step.get("tool_name"))
    select = str(step.get("select") or "")
    if tool == "ask":
        return lambda v: {"answer": v}
    if tool == "filter":
        return lambda v: {"kept": v}
    if tool == "agent" and "result.output.value" in select:
        return lambda v: {"output": {"value": v}}
    if tool == "decide":  # `let v = if … / match …` with an effectful arm: the arm's value
        return lambda v: {"output": v}
    if tool == "agent" or (tool.startswith("plan__") and "result.output" in select):
        return lambda v: {"output": v}
    return None


def plan_steps(data: Any) -> Iterator[dict[str, Any]]:
    """Every step dict of plan ``data``: top level, bodies and sub-plans."""
    if isinstance(data, dict):
        if "tool_name" in data:
            yield data
        for v in data.values():
            yield from plan_steps(v)
    elif isinstance(data, list):
        for v in data:
            yield from plan_steps(v)
