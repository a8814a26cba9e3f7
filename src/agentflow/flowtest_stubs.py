"""``flowc test``'s stubs (docs/reference/testing.md): the model router whose clients answer a
stubbed agent with its stub's answers (:func:`_stub_router`, :class:`Answers`), a stub routed to
the steps it covers, the tools a test runs (user tools, a failing stand-in for an unstubbed
tool), and the failures of a stub no call used (decided over a table test's cases)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agentflow.compiler.contracts import expect_is_wrapped
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.flowtest_network import CALLER
from agentflow.flowtest_report import TestOutcome, _where
from agentflow.grammar import ast
from agentflow.ir.mismatch import mismatch_lines
from agentflow.runtime.agent import check_answer
from agentflow.runtime.config import ProviderConfig, ResolvedModel
from agentflow.runtime.expressions import evaluate
from agentflow.runtime.extract import validate
from agentflow.runtime.models.base import ChatResponse
from agentflow.runtime.models.router import ModelRouter, RoutedClient
from agentflow.runtime.models.test_model import TestModel
from agentflow.runtime.tools.user import load_user_tools

#: the ``model`` an agent step answered by a stub names (never a configured model)
_STUB_PREFIX = "flowc-test-stub:"


class _Unused(str):
    """A table test's case failure that only says a stub was not used in that case: it stands
    only when no case of the table used the stub (:func:`_unused_across_cases`); it reads as
    its message wherever it goes."""

    __slots__ = ()


def _unused_across_cases(
    pending: list[tuple[Any, list[Any]]], outcomes: list[TestOutcome]
) -> list[TestOutcome]:
    """``outcomes`` (in the order of ``pending``'s runs) with each table test's "never used"
    failures decided over the whole table: a case that routes elsewhere need not reach every
    stub (one stub per branch is how a routing table is tested), so a stub is reported unused
    only when no case of the table used it, and then in every case."""
    out: list[TestOutcome] = []
    i = 0
    for _test, group in pending:
        mine = outcomes[i : i + len(group)]
        i += len(group)
        marked = [{f for f in o.failures if isinstance(f, _Unused)} for o in mine]
        common = set.intersection(*marked) if marked else set()
        for o, unused in zip(mine, marked, strict=True):
            if not unused:
                out.append(o)
                continue
            kept = [f for f in o.failures if f not in unused or f in common]
            kept = [str(f) for f in kept]
            out.append(replace(o, failures=kept, passed=not kept))
    return out


#: why a stub of each kind was not used (a stub's kind is `stub KIND NAME`)
_UNUSED = dict(
    agent="no call of the agent `{name}` reached it",
    stage="no agent of stage `{name}` was called",
    tool="the tool `{name}` was not called",
    ask="no `ask` it answers was reached",
    step="the step `{name}` did not run",
)


def _unconsumed(shown: str, every: list[Answers], stage_values: dict[str, Answers]) -> list[str]:
    """A failure for each stub no call consumed in a run that finished (issue 36: a stub the
    run ignored must not pass silently), saying what answered instead when it can tell."""
    out = []
    for answers in every:
        if answers.calls:
            continue
        stub = answers.stub
        name = stub.written
        why = _UNUSED[stub.kind].format(name=name)
        if stub.kind == "agent" and stage_values:
            stubbed = ", ".join(f"`stub stage {s}`" for s in stage_values)
            why += f" (a {stubbed} answers the agents of its stage first)"
        out.append(
            f"{_where(shown, stub.span)}: `stub {stub.kind} {name}` was never used: {why}; "
            "remove the stub, or change the test's input so the run reaches it"
        )
    return out


def _route_stubs(
    data: dict[str, Any],
    agent_values: dict[str, Any],
    stage_values: dict[str, Any],
    answers: dict[str, Answers],
    env: Any,
) -> None:
    """Point every stubbed agent step of plan ``data`` (sub-plans included) at a stub client:
    its ``model`` becomes ``flowc-test-stub:<n>`` and ``answers[that]`` the value. An agent
    stub is found by the ``use`` alias the step was written with (``meta.agent``); ``env``
    (the flow's named types) tells a wrapped contract from a named object type."""

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("tool_name") == "agent" and isinstance(node.get("input"), dict):
                inp = node["input"]
                meta = node.get("meta") or {}
                alias = meta.get("agent")
                stage = meta.get("stage")
                # an `expect` that is not a named object type is wrapped as `{ value: T }`
                # (LANGUAGE.md §10): the stub answers the wrapped value (a `:value` key). The
                # `select` cannot tell: the compiler may fold what follows into it
                # (`{{ (result.output.value).ok }}`)
                wrapped = ":value" if expect_is_wrapped(str(meta.get("expect")), env) else ""
                if stage in stage_values:
                    key = f"{_STUB_PREFIX}stage:{stage}{wrapped}"
                    answers[key] = stage_values[stage]
                    inp["model"] = key
                elif alias in agent_values:
                    key = f"{_STUB_PREFIX}agent:{alias}{wrapped}"
                    answers[key] = agent_values[alias]
                    inp["model"] = key
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(data)


class Answers:
    """The answers of one stub, in call order: one answer answers every call; several answer
    the calls in turn, and a call after the last adds a message to ``problems`` (the test
    fails) and raises ``RunError(aborted)``, which stops the run."""

    def __init__(self, stub: Any, values: list[Any], shown: str, problems: list[str]) -> None:
        self.stub, self.values, self.shown, self.problems = stub, values, shown, problems
        self.calls = 0

    @classmethod
    def of(
        cls, stub: Any, case: dict[str, Any], shown: str, problems: list[str], result: Any
    ) -> Answers:
        """The evaluated answers of ``stub`` (``case``: a parametrised test's binding; fields
        read as a stage reads them, ``result`` the check that typed them)."""
        exprs = list(stub.values) or ([stub.value] if stub.value is not None else [])
        values = [
            e if isinstance(e, ast.StubFails) else evaluate(absent_reads_null(e, result), case)
            for e in exprs
        ]
        return cls(stub, values, shown, problems)

    def next(self) -> Any:
        """The answer to the next call (a fresh copy); an answer ``fails "code"`` raises
        ``RunError(code)`` saying the failure is stubbed (an agent's, as a real one, is then
        placed at the agent step: ``err.where.agent``, ``err.where.stage``, …)."""
        self.calls += 1
        if len(self.values) == 1:
            value = self.values[0]
        elif self.calls <= len(self.values):
            value = self.values[self.calls - 1]
        elif getattr(self.stub, "always", False):  # `… then always V`: V answers every later call
            value = self.values[-1]
        else:
            stub = self.stub
            message = (
                f"{_where(self.shown, stub.span)}: `stub {stub.kind} {stub.written}` gives "
                f"{len(self.values)} answers; call {self.calls} has none left"
            )
            self.problems.append(message)
            raise RunError(Code.ABORTED, message)
        if isinstance(value, ast.StubFails):
            stub = self.stub
            name = stub.target.name
            what = {"agent": f"the agent `{name}`", "stage": f"an agent of stage `{name}`"}
            raise RunError(
                value.code,
                f"stubbed failure of {what.get(stub.kind, f'`{name}`')} "
                f"({_where(self.shown, stub.span)})",
            )
        return json.loads(json.dumps(value))

    def held_to(self, value: Any, contract: tuple[dict[str, Any], str]) -> None:
        """Fail the test when ``value`` (the answer just given) breaks ``contract``: ``(schema,
        what it is)``, the step's own (``result_schema``, an ``ask``'s or agent's ``expect``)."""
        schema, what = contract
        errors = validate(schema, value)
        if errors:
            try:
                found = mismatch_lines(schema, value, root="answer", what=what, limit=3)
            except (ValueError, RecursionError):  # no usable schema: `validate` said how
                found = []
            self.off_contract(found or errors, what)

    def off_contract(self, errors: list[str], what: str = "the agent's `expect`") -> None:
        """Fail the test: the answer just given breaks the step's contract, ``what`` (``errors``:
        the validation's). A real answer off contract would be repaired; a stub is not, as
        repairing it would replace the stub by the test model's answer."""
        stub = self.stub
        which = f"answer {self.calls}" if len(self.values) > 1 else "its answer"
        message = (
            f"{_where(self.shown, stub.span)}: `stub {stub.kind} {stub.written}` does not fit "
            f"{what} ({which}): {'; '.join(errors[:3])}; a stub is never repaired: "
            'write an answer the contract accepts, or stub `fails "output_validation"` to test '
            "an answer that cannot be made to conform"
        )
        self.problems.append(message)
        raise RunError(Code.ABORTED, message)


def _named_caller(tool: Any, what: str) -> Any:
    """``tool`` running with ``what`` as the guard's name for it."""
    import dataclasses

    inner = tool.func

    async def func(args: dict[str, Any], ctx: Any) -> Any:
        token = CALLER.set(what)
        try:
            return await inner(args, ctx)
        finally:
            CALLER.reset(token)

    return dataclasses.replace(tool, func=func)


def _user_tools(config: Any) -> dict[str, Any]:
    """The ``user__*`` tools of the ``flow.toml``'s ``[tools] modules`` (they run in tests,
    under the network guard; entry points are not loaded)."""
    modules = list(getattr(getattr(config, "tools", None), "modules", []) or [])
    if not modules:
        return {}
    tools = load_user_tools(modules, base_dir=config.base_dir(), entry_points=False)
    return {t.name: _named_caller(t, f"tool `{t.name}`") for t in tools}


def _unstubbed_tool(Tool: Any, RunError: Any, name: str, plan_name: str) -> Any:
    async def refuse(args: dict[str, Any], ctx: Any) -> Any:
        raise RunError(
            Code.TOOL_ERROR,
            f"tool `{name}` is not stubbed and tests run without network, MCP servers or user "
            f'tools: add `stub tool {name} returns …` (or `fails "code"`) to the test',
        )

    return Tool(plan_name, f"unstubbed {name}", {"type": "object"}, refuse, source="test-stub")


def _stub_router(config: Any, answers: dict[str, Answers], replay: Any = None) -> Any:
    """A model router: stubbed agents answer their stubs, the others the cassette ``replay``
    (a ``ReplayClient``) when given, else the test model (seed 0)."""

    class StubModel:
        """A model client answering a stub's answers in turn, whatever the request."""

        def __init__(self, answers: Answers, wrapped: bool) -> None:
            self.answers, self.wrapped = answers, wrapped

        async def chat(self, request: Any) -> Any:
            usage = {"input_tokens": 0, "output_tokens": 0}
            value = self.answers.next()
            text = json.dumps({"value": value} if self.wrapped else value, ensure_ascii=False)
            if request.response_schema:  # a stub is held to the contract, never repaired
                _, errors, _ = check_answer(text, _as_checked(request.response_schema))
                if errors:
                    self.answers.off_contract(errors)
            return ChatResponse(text=text, usage=usage, model="stub")

        async def aclose(self) -> None:
            """Nothing to close."""

    def resolved(label: str) -> Any:
        return ResolvedModel(
            label=label, provider_name="test", provider=ProviderConfig(kind="test"), model=label
        )

    generated = TestModel(0)

    class Router(ModelRouter):
        def client_for(self, role_or_name: str | None = None) -> RoutedClient:
            name = role_or_name or "chat"
            if name not in self._routed:
                if name in answers:
                    client: Any = (
                        resolved("stub"),
                        StubModel(answers[name], name.endswith(":value")),
                    )
                elif replay is not None:
                    client = (resolved("replay"), replay)
                else:
                    client = (resolved(_GENERATED), generated)
                self._routed[name] = RoutedClient(self, name, [client])
            return self._routed[name]

    return Router(config)


_StubRouter = _stub_router
#: the model label of a call the built-in test model answered in a test (not a stub or replay)
_GENERATED = "test"


def _as_checked(schema: Any) -> Any:
    """The contract an answer is checked against, from the one the model is shown: a
    ``member`` node's ``enum`` of the team's members is shown, not checked (a member outside
    the team fails ``invalid_member`` where it is routed; ``agent_step.with_member_choices``)."""
    if isinstance(schema, list):
        return [_as_checked(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _as_checked(value) for key, value in schema.items()}
    if schema.get("x-flow-type") == "member":
        out.pop("enum", None)
    return out
