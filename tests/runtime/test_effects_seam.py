"""Every effect of a run goes through one method of runtime/effects.py ``Effects``, with its step
path: tool calls (plain, map items, sub-plan steps, an agent's calls), model calls (a judge, each
agent round), questions, a retry's jitter and backoff sleep, the deadline clock, and units of
concurrent work (map items, a ``plan__*`` call).  Real tools, real hooks, the scripted chat
server; the run's Effects is swapped for a subclass that records what passes through it."""

from __future__ import annotations

from typing import Any

from support.chat_server import answer, text, tool_calls

from agentflow.ir.loader import load_plan_text
from agentflow.runtime import executor
from agentflow.runtime.effects import Effects
from agentflow.runtime.hooks import Hooks
from agentflow.runtime.tools.catalog import Catalog

PLAN = """
version: 1
name: seam
deadline: 60s
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__flaky
    input: {}
    retry: {attempts: 1, on: [transient], backoff: {initial: 1ms, max: 1ms}}
  - id: E1
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 2
      do: {tool_name: user__double, input: {n: "{{ item }}"}}
  - id: E2
    tool_name: decide
    input:
      infer: "Is {{ E1[0] }} even?"
      then: {tool_name: value, input: {value: even}}
      else: {tool_name: value, input: {value: odd}}
  - id: E3
    tool_name: ask
    input: {question: "Go on?"}
  - id: E4
    tool_name: plan__sub
    input: {n: 3}
  - id: E5
    tool_name: agent
    input:
      prompt: Double five.
      output_schema: {type: object}
      tools: [user__double]
      max_iterations: 3
plans:
  sub:
    name: sub
    steps:
      - id: S0
        tool_name: user__double
        input: {n: "{{ input.n }}"}
finish: {mode: output, output: "{{ [E2.output, E3.answer, E4, E5.output] }}"}
"""


class RecordingEffects(Effects):
    """Effects that log ``(effect, step path)`` for each effect, then perform it."""

    log: list[tuple[str, str]] = []
    clock_reads = 0

    async def call_tool(self, tool: Any, args: dict[str, Any], ctx: Any) -> Any:
        self.log.append(("call_tool", ctx.step_path))
        return await super().call_tool(tool, args, ctx)

    async def chat(self, client: Any, request: Any, path: str) -> Any:
        self.log.append((f"chat:{client.role}", path))
        return await super().chat(client, request, path)

    async def ask(self, interlocutor: Any, request: Any) -> Any:
        self.log.append(("ask", request.step_path))
        return await super().ask(interlocutor, request)

    async def sleep(self, seconds: float, path: str) -> None:
        self.log.append(("sleep", path))
        await super().sleep(seconds, path)

    def now(self) -> float:
        type(self).clock_reads += 1
        return super().now()

    def random(self, path: str) -> float:
        self.log.append(("random", path))
        return super().random(path)

    async def unit(self, path: str, work: Any, spec: Any = None) -> Any:
        self.log.append(("unit", path))
        return await super().unit(path, work, spec)


async def test_every_effect_of_a_run_goes_through_effects_with_its_step_path(
    monkeypatch, chat_server, scripted_config, scripted_router
):
    monkeypatch.setattr(RecordingEffects, "log", [])
    monkeypatch.setattr(RecordingEffects, "clock_reads", 0)
    monkeypatch.setattr(executor, "Effects", RecordingEffects)
    failures = [ConnectionError("reset by peer")]

    def user__flaky() -> str:
        if failures:
            raise failures.pop()
        return "ok"

    def user__double(n: int) -> int:
        return 2 * n

    catalog = Catalog()
    catalog.register_function("user__flaky", user__flaky)
    catalog.register_function("user__double", user__double)
    chat_server.script(
        [text("yes"), tool_calls(("user__double", {"n": 5})), answer({"doubled": 10})]
    )
    result = await executor.run_plan(
        load_plan_text(PLAN, "seam.plan.yaml"),
        {"xs": [1, 2]},
        catalog=catalog,
        router=scripted_router,
        config=scripted_config,
        hooks=Hooks(interlocutor=lambda request: "yes"),
    )
    assert result.status == "ok", result.error
    assert result.output == ["even", "yes", 6, {"doubled": 10}]
    log = RecordingEffects.log
    assert log[:4] == [
        ("call_tool", "E0"),  # fails: transient
        ("random", "E0"),  # the backoff's jitter …
        ("sleep", "E0"),  # … and its sleep
        ("call_tool", "E0"),
    ]
    assert sorted(log[4:8]) == [
        ("call_tool", "E1/do.0"),
        ("call_tool", "E1/do.1"),
        ("unit", "E1/do.0"),
        ("unit", "E1/do.1"),
    ]
    assert log[8:] == [
        ("chat:judge", "E2"),
        ("ask", "E3"),
        ("unit", "E4"),
        ("call_tool", "E4/S0"),
        ("chat:chat", "E5"),
        ("call_tool", "E5/agent.1/user__double"),
        ("chat:chat", "E5"),
    ]
    assert RecordingEffects.clock_reads > 0  # the 60 s deadline is measured on Effects.now
