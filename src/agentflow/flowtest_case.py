"""Running one `test` block of ``flowc test`` (docs/reference/testing.md): its plan run through
:func:`agentflow.api.run` with the stubs' model router and tools
(:mod:`agentflow.flowtest_stubs`) and virtual time for ``sleep``, then each ``expect``
evaluated over ``output``, ``input``, the stages, ``inferences`` and ``calls``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentflow.api_run import run
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, ErrorInfo, FlowError, InputError, PlanLoadError, RunError
from agentflow.flowtest_network import GUARD
from agentflow.flowtest_report import _where
from agentflow.flowtest_steps import (
    answers_tool,
    plan_steps,
    step_contract,
    stub_named_steps,
    unstubbed_asks,
)
from agentflow.flowtest_stubs import (
    _GENERATED,
    Answers,
    _route_stubs,
    _StubRouter,
    _unconsumed,
    _unstubbed_tool,
    _Unused,
    _user_tools,
)
from agentflow.grammar import ast
from agentflow.ir.loader import load_plan_data
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime.config import Config, find_config, load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.expressions import evaluate, render_value, to_json_value
from agentflow.runtime.hooks import Hooks, SleepRequest
from agentflow.runtime.models.cassette import ReplayClient
from agentflow.runtime.tools.builtin import default_catalog
from agentflow.runtime.tools.catalog import Tool


def _show(value: Any) -> str:
    return json.dumps(to_json_value(value), ensure_ascii=False, sort_keys=False)


def virtual_sleep(request: SleepRequest) -> None:
    """A test's ``sleep`` waits no real time (virtual time: docs/reference/statements.md
    "sleep"; also ``flowc test --explore``'s runs): its step still runs, with its events, and
    ``sleeps`` lists it.  The ``sleeper`` hook of :class:`~agentflow.runtime.hooks.Hooks`."""


def _plan_tool_name(name: str, sig: Any) -> str:
    return str(sig.catalog_name)


async def _run_one(
    file: Path,
    shown: str,
    text: str,
    result: Any,
    plan: Any,
    test: Any,
    case: dict[str, Any],
) -> list[str]:
    """Run one test (``case``: the binding of a parametrised test's case, else empty); the
    failure messages (empty when it passed)."""
    try:
        return await _run_prepared(file, shown, text, result, plan, test, case)
    except RunError as e:  # a constant of the test that cannot be evaluated (`1 / 0`)
        return [f"{_where(shown, test.name_span)}: {e.message}"]


async def _run_prepared(
    file: Path,
    shown: str,
    text: str,
    result: Any,
    prepared: Any,
    test: Any,
    case: dict[str, Any],
) -> list[str]:
    import copy

    plan, staged = prepared  # the compiled plan, its stages' value templates (compiled)

    failures: list[str] = []
    problems: list[str] = []  # stubs run out, requests that tried to leave the process
    inp: Any = {}
    if test.inputs:
        inp = evaluate(absent_reads_null(test.inputs[0].value, result), case)
    agent_values: dict[str, Answers] = {}
    stage_values: dict[str, Answers] = {}
    tool_stubs: dict[str, Any] = {}
    named: list[Any] = []  # `stub ask` and `stub step`
    for stub in test.stubs:
        if stub.kind == "tool":
            tool_stubs[stub.target.name] = stub
        elif stub.kind in ("ask", "step"):
            named.append(stub)
        elif stub.kind == "agent":
            # by the alias the step was written with (`meta.agent`): two aliases of one agent
            # name (`use agent "writer" as writer` / `as critic`) are stubbed apart
            agent_values[stub.target.name] = Answers.of(stub, case, shown, problems, result)
        else:
            stage_values[stub.target.name] = Answers.of(stub, case, shown, problems, result)
    every = [*agent_values.values(), *stage_values.values()]  # every stub, to see it consumed
    data = copy.deepcopy(plan)
    answers: dict[str, Answers] = {}
    _route_stubs(data, agent_values, stage_values, answers, result.env)
    catalog = default_catalog()
    for stub in named:
        answer = Answers.of(stub, case, shown, problems, result)
        every.append(answer)
        tools = stub_named_steps(data, stub, answer, Tool, stages=result.stages)
        if not tools:
            return [
                f"{_where(shown, stub.span)}: `stub {stub.kind} {stub.written}` answers no "
                "step of the compiled flow (the value is computed inline, not by a step): "
                "stub what it is computed from instead"
            ]
        for tool in tools:
            catalog.register(tool, replace=True)
    unstubbed_asks(data)  # an ask no stub answers says how a test answers it
    try:
        loaded = load_plan_data(data, shown)
    except PlanLoadError as e:  # pragma: no cover - the compiled plan validated
        return [f"{shown}: internal error: the test plan does not load: {e}"]

    config: Any = Config()
    toml = find_config(file)  # the flow.toml a run of the file reads
    if toml is not None:
        try:
            config = load_config(toml, env={})
        except ConfigError as e:
            return [f"{toml}: {e}"]
    try:
        user = _user_tools(config)
    except FlowError as e:
        return [f"{toml}: {e}"]
    for name, sig in result.tool_decls.items():
        plan_name = _plan_tool_name(name, sig)
        stub = tool_stubs.get(name)
        if stub is not None:
            answer = Answers.of(stub, case, shown, problems, result)
            every.append(answer)
            declared = [st for st in plan_steps(data) if st.get("tool_name") == plan_name]
            contract = step_contract({**declared[0], "tool_name": name}) if declared else None
            catalog.register(answers_tool(Tool, plan_name, answer, None, contract), replace=True)
        elif plan_name in user:
            catalog.register(user[plan_name], replace=True)
        elif plan_name not in catalog:
            catalog.register(_unstubbed_tool(Tool, RunError, name, plan_name), replace=True)
    replay = None
    for item in test.replays[:1]:
        cassette = file.parent / item.path
        if not cassette.is_file():
            return [f"{_where(shown, item.span)}: replay: no cassette at {cassette}"]

        try:
            replay = (item, ReplayClient(cassette))
        except ConfigError as e:
            return [f"{_where(shown, item.span)}: replay: {e}"]
    calls: dict[str, int] = {}
    sleeps: list[Any] = []  # the durations `sleep` steps waited (virtual time: no real wait)

    generated: dict[str, None] = {}  # the agents the built-in test model answered, in order

    def count(event: Any) -> None:
        if event.kind == "model_call" and event.data.get("model") == _GENERATED:
            generated[str(event.data.get("agent") or event.data.get("role") or "?")] = None
        if event.kind == "tool_started":
            name = event.data.get("tool_name")
            calls[name] = calls.get(name, 0) + 1
        elif event.kind == "step_started" and event.data.get("tool_name") == "sleep":
            sleeps.append((event.data.get("input") or {}).get("for"))

    router = _StubRouter(config, answers, replay[1] if replay is not None else None)
    token = GUARD.set(problems)
    try:
        outcome = await run(
            loaded,
            inp,
            config=config,
            workspace=file.parent,
            catalog=catalog,
            router=router,
            shape_cache=False,
            telemetry=False,
            sinks=[CallbackSink(count)],
            hooks=Hooks(sleeper=virtual_sleep),
        )
    except InputError as e:
        return [f"{_where(shown, test.name_span)}: the test's input is refused: {e}"]
    except FlowError as e:
        return [f"{_where(shown, test.name_span)}: the run could not start: {e}"]
    finally:
        GUARD.reset(token)
        await router.aclose()
    if problems:  # a stub ran out, or a request tried to leave the process: whatever happened
        return list(dict.fromkeys(problems))
    if outcome.ok:  # a run that ended early may not reach a stub; one that finished must have
        unused = _unconsumed(shown, every, stage_values)
        if test.cases is not None and test.case is not None:  # decided over the whole table
            unused = [_Unused(f) for f in unused]
        failures.extend(unused)

    scope: dict[str, Any] = {**case, "input": inp}
    stage_errors: dict[str, str] = {}
    if outcome.ok:
        scope["output"] = outcome.output
        ran = {"input": whole_numbers(loaded.input_schema, inp), **outcome.results}
        scope.update(_stage_values(shown, staged, ran, result, stage_errors))
    scope["inferences"] = int(outcome.usage.get("inferences", 0))
    scope["sleeps"] = sleeps
    scope["calls"] = {
        name: calls.get(_plan_tool_name(name, sig), 0) for name, sig in result.tool_decls.items()
    }
    error: ErrorInfo | dict[str, Any] = outcome.error or {}
    expected_fail = [e for e in test.expects if e.fail_code is not None]
    if not outcome.ok and not expected_fail:
        where = str(error.get("source") or shown)
        if where.startswith(f"{file.name}:"):  # the plan's `file:line:col`, as the test names it
            where = shown + where[len(file.name) :]
        failures.append(
            f"{_where(shown, test.name_span)}: the run failed with {error.get('code')}: "
            f"{error.get('message')} (at {where})"
        )
        if error.get("code") == Code.REPLAY_MISS and replay is not None:
            failures[-1] += f"; the cassette is replayed by {_where(shown, replay[0].span)}"
        return failures
    for exp in test.expects:
        if exp.fail_code is not None:
            if outcome.ok:
                failures.append(
                    f"{_where(shown, exp.span)}: expected the run to fail with "
                    f"{exp.fail_code}, it finished with output "
                    f"{_show(scope.get('output'))}"
                )
            elif error.get("code") != exp.fail_code:
                failures.append(
                    f"{_where(shown, exp.span)}: expected the run to fail with "
                    f"{exp.fail_code}, it failed with {error.get('code')}: {error.get('message')}"
                )
            continue
        failures.extend(_check_expect(shown, exp, scope, outcome.ok, text, result, stage_errors))
    return _with_generated_note(failures, list(generated))


def _with_generated_note(failures: list[str], generated: list[str]) -> list[str]:
    """``failures`` with a note on the first naming the agents no stub covered, whose values
    came from the built-in test model (docs/reference/testing.md "Stubs"); as they are when
    nothing failed or every agent was stubbed or replayed."""
    if not failures or not generated:
        return failures
    names = ", ".join(f"`{name}`" for name in generated)
    which = f"agent {names}" if len(generated) == 1 else f"agents {names}"
    note = (
        f"\n    note: no `stub agent` covered {which}: the built-in test model answered "
        f"{'it' if len(generated) == 1 else 'them'} with values generated from the contract "
        f"(stub it: `stub agent {generated[0]} returns …`)"
    )
    return [failures[0] + note, *failures[1:]]


def _stage_values(
    shown: str, staged: dict[str, Any], ran: dict[str, Any], result: Any, errors: dict[str, str]
) -> dict[str, Any]:
    """Each stage's value (``{name: value}``), rendered from its template over ``ran`` (the
    run's input and its top-level steps' results).  A stage whose value cannot be computed (a
    pure stage no step reads, whose expression fails: the run never computed it either) has
    none; ``errors[name]`` says why, at the stage's value in the `.flow`."""
    decls = {s.name.name: s for s in result.stages}
    values = {}
    for name, template in staged.items():
        try:
            values[name] = render_value(template, ran)
        except RunError as e:
            decl = decls.get(name)
            last = decl.body.stmts[-1] if decl is not None and decl.body.stmts else None
            span = (
                last.value.span if isinstance(last, ast.ReturnStmt) else getattr(decl, "span", None)
            )
            where = f" (at {_where(shown, span)})" if span is not None else ""
            errors[name] = f"the stage `{name}` failed with {e.code}: {e.message}{where}"
    return values


#: the comparisons an expectation's failure explains operand by operand
_EXPLAINED = ("==", "!=", "<", "<=", ">", ">=", "in")


def _check_expect(
    shown: str,
    exp: Any,
    scope: dict[str, Any],
    ran: bool,
    text: str,
    result: Any,
    stage_errors: dict[str, str] | None = None,
) -> list[str]:
    source = text[exp.cond.span.start : exp.cond.span.end]
    head = f"{_where(shown, exp.span)}: expect {source}"
    # read as a stage reads: an absent optional field is null (docs/reference/types.md)
    cond = absent_reads_null(exp.cond, result)
    try:
        value = evaluate(cond, scope)
    except RunError as e:
        why = e.message
        if not ran:
            why += " (the run failed: `output` and the stages have no value)"
        errors = stage_errors or {}
        failed = [
            errors[n.name]
            for n in ast.walk(exp.cond)
            if isinstance(n, ast.Name) and n.name in errors
        ]
        if failed:
            why = failed[0]
        return [f"{head}\n    could not be evaluated: {why}"]
    if value is True:
        return []
    # explained from the condition as written: its operands read one by one, so a comparison
    # the compiler wrote by length (`seconds(output) == seconds("3m")`) shows `output` and the
    # durations' texts, never the rewrite's seconds (docs/reference/testing.md)
    original = exp.cond
    if isinstance(original, ast.Binary) and original.op in _EXPLAINED:
        try:
            left = evaluate(absent_reads_null(original.left, result), scope)
            right = evaluate(absent_reads_null(original.right, result), scope)
        except RunError:  # pragma: no cover - the whole evaluated
            return [f"{head}\n    is false"]
        lsrc = text[original.left.span.start : original.left.span.end]
        rsrc = text[original.right.span.start : original.right.span.end]
        if not any(isinstance(n, ast.Name) for n in ast.walk(original.right)):
            lines = [f"actual ({lsrc}): {_show(left)}", f"expected: {_show(right)}"]
        else:
            lines = [f"{lsrc}: {_show(left)}", f"{rsrc}: {_show(right)}"]
        return [head + "".join("\n    " + line for line in lines)]
    return [f"{head}\n    is {_show(value)}"]
