"""runtime.executor: deadlines and cancellation, retry backoff, hooks at any depth, events and
console sinks, the interlocutor, finish modes, plan cycles across files and deferred rendering.
Real loader, real Catalog."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import pytest
from support.timing import Stretch

from agentflow import NO_ANSWER, Hooks, abort, skip, substitute
from agentflow.errors import PlanLoadError
from agentflow.ir.loader import check_plan_cycles, load_plan_text
from agentflow.runtime.events import CallbackSink, ConsoleSink, Event, EventBus
from agentflow.runtime.executor import (
    AskRequest,
    default_interlocutor,
    run_plan,
    terminal_interlocutor,
)
from agentflow.runtime.tools.catalog import Catalog


def load(text: str, file: str = "t.plan.yaml"):
    return load_plan_text(text, file)


def catalog(**fns) -> Catalog:
    cat = Catalog()
    for name, fn in fns.items():
        cat.register_function(name, fn)
    return cat


class Events(list):
    def sink(self):
        return CallbackSink(self.append)

    def kinds(self, kind):
        return [e for e in self if e.kind == kind]


# ---------------------------------------------------------------------------------------------
# Deadlines and cancellation (docs/spec/RUNTIME.md §2)


async def test_deadline_really_stops_a_sleeping_tool():
    cancelled = []

    async def user__sleep():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {"late": True}

    plan = load(
        """
version: 1
name: t
deadline: 200ms
steps:
  - {id: E0, tool_name: user__sleep, input: {}}
  - {id: E1, tool_name: value, input: {value: never}}
"""
    )
    with Stretch() as clock:
        res = await run_plan(plan, catalog=catalog(user__sleep=user__sleep))
    assert clock.took < clock.bound(0.5)
    assert res.status == "error" and res.error["code"] == "deadline_exceeded"
    assert res.error["step_path"] == "E0"
    assert cancelled == [True]  # the tool's task was cancelled, not left running
    assert res.results == {}


async def test_late_result_of_a_thread_tool_never_takes_effect():
    done = threading.Event()
    sink: list = []

    def user__slow():  # a sync tool runs in a thread, which cannot be cancelled
        time.sleep(0.4)
        done.set()
        return {"late": True}

    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: user__slow, input: {}, timeout: 100ms}
"""
    )
    events = Events()
    with Stretch() as clock:
        res = await run_plan(plan, catalog=catalog(user__slow=user__slow), sinks=[events.sink()])
    assert clock.took < clock.bound(0.35)
    assert res.status == "error" and res.error["code"] == "timeout"
    await asyncio.to_thread(done.wait, 2)
    await asyncio.sleep(0.05)
    assert res.results == {} and res.output is None and sink == []
    finished = events.kinds("step_finished")
    assert len(finished) == 1 and finished[0].data["error"]["code"] == "timeout"


async def test_a_called_plan_without_a_deadline_names_its_callers_when_it_expires():
    # the message read "the workflow deadline (deadline) expired …": the called plan's own,
    # absent, deadline was named instead of the caller's that ended it
    async def user__sleep():
        await asyncio.sleep(10)

    plan = load(
        """
version: 1
name: outer
deadline: 200ms
steps:
  - {id: E0, tool_name: plan__inner, input: {}}
plans:
  inner:
    version: 1
    name: inner
    steps:
      - {id: E10, tool_name: user__sleep, input: {}}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__sleep=user__sleep))
    assert res.status == "error" and res.error["code"] == "deadline_exceeded"
    assert "deadline (200ms) expired" in res.error["message"], res.error


async def test_deadline_cancels_every_map_item_in_flight():
    started, cancelled = [], []

    async def user__nap(i: int):
        started.append(i)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    plan = load(
        """
version: 1
name: t
deadline: 150ms
steps:
  - id: M
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4, 5]
      concurrency: 3
      do: {tool_name: user__nap, input: {i: "{{ item }}"}}
"""
    )
    with Stretch() as clock:
        res = await run_plan(plan, catalog=catalog(user__nap=user__nap))
    assert clock.took < clock.bound(0.5)
    assert res.error["code"] == "deadline_exceeded"
    assert sorted(started) == [0, 1, 2] and sorted(cancelled) == [0, 1, 2]


# ---------------------------------------------------------------------------------------------
# Retry with exponential backoff and jitter


async def test_retry_backoff_is_exponential_with_jitter():
    calls = []

    def user__flaky():
        from agentflow.errors import RunError

        calls.append(time.monotonic())
        if len(calls) < 4:
            raise RunError("transient", "try again")
        return "ok"

    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: user__flaky
    input: {}
    retry: {attempts: 3, on: [transient], backoff: {initial: 20ms, factor: 2, max: 50ms}}
"""
    )
    events = Events()
    res = await run_plan(plan, catalog=catalog(user__flaky=user__flaky), sinks=[events.sink()])
    assert res.status == "ok" and res.output == "ok"
    delays = [e.data["delay_ms"] for e in events.kinds("retry")]
    assert [e.data["attempt"] for e in events.kinds("retry")] == [1, 2, 3]
    # nominal 20, 40, min(80, 50) = 50 ms; jitter keeps each in [½·d, d]
    for got, nominal in zip(delays, [20, 40, 50], strict=True):
        assert nominal // 2 - 1 <= got <= nominal


# ---------------------------------------------------------------------------------------------
# Hooks at any depth (docs/spec/RUNTIME.md §7)


NESTED = """
version: 1
name: outer
steps:
  - id: E0
    tool_name: map
    input:
      over: [1, 2]
      do: {tool_name: user__echo, input: {n: "{{ item }}"}}
  - id: E1
    tool_name: decide
    input:
      when: {expr: "E0.count == 2"}
      then: {tool_name: plan__inner, input: {n: 5}}
  - id: E2
    tool_name: user__boom
    input: {}
  - id: E3
    tool_name: value
    input: {value: after}
plans:
  inner:
    version: 1
    name: inner
    steps:
      - {id: E10, tool_name: user__echo, input: {n: "{{ input.n }}"}}
"""


async def test_gate_sees_every_real_dispatch_at_any_depth_with_its_scope():
    seen = []

    def gate(call):
        seen.append((call.step_path, call.tool_name, call.stack, call.scope.get("item")))
        if call.tool_name == "user__boom":
            return skip("skipped")
        return None

    hooks = Hooks()
    hooks.install_gate(gate)
    res = await run_plan(
        load(NESTED),
        catalog=catalog(user__echo=lambda n: n, user__boom=lambda: 1 / 0),
        hooks=hooks,
    )
    assert res.status == "ok", res.error
    assert seen == [
        ("E0/do.0", "user__echo", ["outer"], 1),
        ("E0/do.1", "user__echo", ["outer"], 2),
        ("E1/then", "plan__inner", ["outer"], None),
        ("E1/then/E10", "user__echo", ["outer", "inner"], None),
        ("E2", "user__boom", ["outer"], None),
    ]  # control steps (map, decide, value) are never gated
    assert res.results["E2"] == "skipped" and res.results["E3"] == "after"


async def test_on_tool_error_abort_is_a_hard_stop_with_partial_state_and_the_error():
    events = Events()
    hooks = Hooks()
    hooks.install_on_tool_error(lambda failure: abort("stop here"))
    res = await run_plan(
        load(NESTED),
        catalog=catalog(user__echo=lambda n: n, user__boom=lambda: 1 / 0),
        hooks=hooks,
        sinks=[events.sink()],
    )
    assert res.status == "aborted"
    assert res.error["code"] == "tool_error" and "ZeroDivisionError" in res.error["message"]
    assert res.error["step_path"] == "E2"
    assert res.results == {"E0": [1, 2], "E1": {"branch": "then", "output": 5}}
    assert res.output is None
    # tool_finished reports the real call; step_finished the resolution
    tf = [e for e in events.kinds("tool_finished") if e.path == "E2"]
    assert tf[0].data["error"]["code"] == "tool_error"
    sf = [e for e in events.kinds("step_finished") if e.path == "E2"]
    assert sf[0].data["aborted"] == "stop here"


async def test_on_tool_error_substitute_inside_sub_plan_and_abort_propagates_once():
    asked = []

    def on_error(failure):
        asked.append(failure.step_path)
        return substitute("fallback") if failure.step_path == "E2" else abort("no")

    res = await run_plan(
        load(NESTED),
        catalog=catalog(user__echo=lambda n: n, user__boom=lambda: 1 / 0),
        hooks=Hooks(on_tool_error=on_error),
    )
    assert res.status == "ok" and res.results["E2"] == "fallback"

    def inner_fails(n):
        raise ValueError("inner broke")

    asked.clear()
    res = await run_plan(
        load(NESTED),
        catalog=catalog(user__echo=lambda n: n if n < 5 else inner_fails(n), user__boom=lambda: 1),
        hooks=Hooks(on_tool_error=on_error),
    )
    assert res.status == "aborted" and "inner broke" in res.error["message"]
    assert asked == ["E1/then/E10"]  # the enclosing plan__inner call is not asked again


# ---------------------------------------------------------------------------------------------
# Events, warnings, finish modes


async def test_lenient_question_rendering_warns_and_silent_finish():
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: value
    input: {value: {a: 1}}
  - id: E1
    tool_name: ask
    input:
      question: "Keep {{ E0.missing.deep }}?"
      when_unanswered: {default: "no"}
finish: {mode: silent}
"""
    )
    events = Events()
    res = await run_plan(plan, sinks=[events.sink()])
    assert res.status == "ok" and res.output is None
    assert res.results["E1"] == {"answer": "no", "answered": False}
    warnings = events.kinds("warning")
    assert warnings and warnings[0].path == "E1" and "missing" in warnings[0].data["message"]
    asks = events.kinds("ask")
    assert asks[0].data["question"] == "Keep ?"


async def test_event_order_and_paths_for_bodies():
    events = Events()
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: parallel
    input:
      branches:
        a: {tool_name: value, input: {value: 1}}
        b: {tool_name: user__f, input: {}}
  - id: E1
    tool_name: verify
    input:
      checks:
        - {ok: "{{ E0.a == 1 }}", message: "a is one"}
        - {ok: "{{ E0.b == 3 }}", message: "b is three"}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__f=lambda: 2), sinks=[events.sink()])
    assert res.output == {"passed": False, "failures": ["b is three"]}
    assert res.results["E0"] == {"a": 1, "b": 2}
    paths = [(e.kind, e.path) for e in events if e.kind.startswith(("step", "tool"))]
    assert paths[0] == ("step_started", "E0")
    assert ("tool_started", "E0/b") in paths and ("step_finished", "E0/a") in paths
    assert paths[-1] == ("step_finished", "E1")
    assert paths.index(("tool_started", "E0/b")) < paths.index(("tool_finished", "E0/b"))


def _paired(events) -> tuple[list[str], list[str]]:
    started = [e.path for e in events if e.kind == "tool_started"]
    finished = [e.path for e in events if e.kind == "tool_finished"]
    return sorted(started), sorted(finished)


async def test_every_tool_started_gets_a_tool_finished_on_deadline_and_sub_plan_exit():
    """docs/spec/RUNTIME.md §8: a dispatch cancelled by the deadline, or a plan__ call ended by an
    `exit` error inside the sub-plan, still closes its `tool_started` with a `tool_finished`."""
    import asyncio

    from agentflow.ir.loader import load_plan_text
    from agentflow.runtime.events import CallbackSink
    from agentflow.runtime.executor import run_plan
    from agentflow.runtime.tools.catalog import Catalog

    async def nap(seconds: float = 10.0) -> dict:
        await asyncio.sleep(seconds)
        return {}

    cat = Catalog()
    cat.register_function("user__nap", nap)
    plan = load_plan_text(
        """
version: 1
name: t
deadline: 100ms
steps:
  - {id: E1, tool_name: user__nap, input: {seconds: 10}}
""",
        "t.yaml",
    )
    events: list = []
    res = await run_plan(plan, catalog=cat, sinks=[CallbackSink(events.append)])
    assert res.status == "error" and res.error["code"] == "deadline_exceeded"
    started, finished = _paired(events)
    assert started == finished == ["E1"]
    fin = next(e for e in events if e.kind == "tool_finished")
    assert fin.data["error"]["code"] == "aborted"

    plan = load_plan_text(
        """
version: 1
name: t
steps:
  - {id: E1, tool_name: plan__inner, input: {}}
plans:
  inner:
    version: 1
    name: inner
    steps:
      - {id: I1, tool_name: exit, input: {status: error, message: no}}
""",
        "t.yaml",
    )
    events = []
    res = await run_plan(plan, catalog=cat, sinks=[CallbackSink(events.append)])
    assert res.status == "error" and res.error["step_path"] == "E1/I1"
    started, finished = _paired(events)
    assert started == finished == ["E1"]
    fin = next(e for e in events if e.kind == "tool_finished")
    assert fin.data["error"]["code"] == "failed"


def test_event_bus_kind_filter():
    got_all, got_model = [], []

    class OnlyModel:
        kinds = frozenset({"model_call"})

        def handle(self, e):
            got_model.append(e.kind)

    bus = EventBus([OnlyModel()])
    assert bus.listens("model_call") and not bus.listens("step_started")
    bus.emit("step_started", "E0")
    bus.emit("model_call", "E0")
    bus.add(CallbackSink(lambda e: got_all.append(e.kind)))
    assert bus.listens("step_started")
    bus.emit("step_started", "E1")
    assert got_model == ["model_call"] and got_all == ["step_started"]


async def test_live_console_view_shows_running_steps_and_map_progress():
    stream = io.StringIO()
    console = ConsoleSink(stream, force_live=True)
    assert not console.plain
    snapshots = []
    gate_open = asyncio.Event()

    async def user__item(i: int):
        if i == 3:
            from rich.console import Console

            out = Console(file=io.StringIO(), width=100, force_terminal=False)
            out.print(console._render())
            snapshots.append(out.file.getvalue())
            gate_open.set()
        return i

    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4]
      do: {tool_name: user__item, input: {i: "{{ item }}"}}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__item=user__item), sinks=[console])
    assert res.status == "ok"
    view = snapshots[0]
    assert "E0 " in view and "map" in view and "3/5" in view  # 3 of 5 items done
    assert "E0/do.3" in view and "user__item" in view and "s" in view


def test_plain_console_lines_when_not_a_tty(capsys):
    stream = io.StringIO()
    console = ConsoleSink(stream)
    assert console.plain
    res = asyncio.run(
        run_plan(
            load(
                "version: 1\nname: t\nsteps:\n  - {id: E0, tool_name: value, input: {value: 1}}\n"
            ),
            sinks=[console],
        )
    )
    assert res.status == "ok"
    text = stream.getvalue()
    assert "▶ E0 value" in text and "✓ E0" in text and "run ok" in text


def test_plain_console_shows_sources_and_an_agents_tool_calls():
    stream = io.StringIO()
    bus = EventBus([ConsoleSink(stream)])
    bus.emit("step_started", "E0", ["t"], tool_name="agent", source="t.flow:3:5")
    bus.emit("tool_started", "E0/agent.1/builtin__grep", ["t"], tool_name="builtin__grep",
             input={"pattern": "todo"})  # fmt: skip
    bus.emit("tool_finished", "E0/agent.1/builtin__grep", ["t"], tool_name="builtin__grep",
             error={"code": "tool_error", "message": "bad pattern"})  # fmt: skip
    bus.emit("tool_started", "E1", ["t"], tool_name="builtin__grep", input={})  # a step's own call
    bus.emit("model_call", "E0", ["t"], role="chat", model="m1", input_tokens=900,
             output_tokens=80, latency_ms=1200)  # fmt: skip
    bus.emit("run_finished", "", ["t"], status="ok", duration_ms=2500,
             usage={"inferences": 2, "input_tokens": 1000, "output_tokens": 90})  # fmt: skip
    lines = stream.getvalue().splitlines()
    assert lines == [
        "▶ E0 agent  (t.flow:3:5)",
        '  → E0/agent.1/builtin__grep {"pattern":"todo"}',
        "  ✗ E0/agent.1/builtin__grep tool_error: bad pattern",
        "  ◆ E0 chat m1 1.20s 900→80 tokens",
        "run ok in 2.50s · 2 inference(s), 1000→90 tokens",
    ]


def test_live_view_never_prints_raw_markup_while_lines_are_printed():
    """A plain line printed while the live view is up re-renders the view with the line's
    options (markup off); the view's cells must not rely on markup (`[cyan]…[/]` leaked)."""
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_live=True)
    now = time.time()
    sink.handle(Event("run_started", "", ["p"], now, {"plan": "p"}))
    sink.handle(
        Event("step_started", "E1", ["p"], now, {"tool_name": "map", "input": {"over": [1]}})
    )
    sink.handle(Event("step_started", "E1/do.0", ["p"], now, {"tool_name": "user__x"}))
    sink._live.refresh()
    sink.handle(Event("warning", "E1/do.0", ["p"], now, {"message": "careful"}))
    sink.handle(Event("step_finished", "E1/do.0", ["p"], now, {"elapsed_ms": 3}))
    sink.handle(Event("run_finished", "", ["p"], now, {"status": "ok", "duration_ms": 5}))
    sink.close()
    out = stream.getvalue()
    assert "careful" in out and "E1/do.0" in out
    assert "[cyan]" not in out and "[/]" not in out


# ---------------------------------------------------------------------------------------------
# Interlocutor


async def test_terminal_interlocutor_reads_a_line_and_choices_by_number():
    out = io.StringIO()
    ask = terminal_interlocutor(io.StringIO("2\n"), out)
    req = AskRequest("Which one?", None, ["red", "green"], "E4", ["t"])
    assert await ask(req) == "green"
    assert "? [E4] Which one?" in out.getvalue() and "2) green" in out.getvalue()
    ask = terminal_interlocutor(io.StringIO('{"n": 3}\n'), io.StringIO())
    req = AskRequest("How many?", {"type": "object"}, None, "E4", ["t"])
    assert await ask(req) == {"n": 3}
    ask = terminal_interlocutor(io.StringIO(""), io.StringIO())  # end of input
    assert await ask(req) is NO_ANSWER
    assert default_interlocutor(stdin=io.StringIO("x")) is None  # not a TTY: nobody to ask


async def test_terminal_interlocutor_in_a_run_with_serialized_questions():
    out = io.StringIO()
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: map
    input:
      over: [a, b, c]
      concurrency: 3
      do:
        tool_name: ask
        input: {question: "Name for {{ item }}?", when_unanswered: {default: none}}
"""
    )
    hooks = Hooks()
    hooks.install_interlocutor(terminal_interlocutor(io.StringIO("x\ny\n"), out))
    res = await run_plan(plan, hooks=hooks)
    assert res.status == "ok"
    assert res.output == [
        {"answer": "x", "answered": True},
        {"answer": "y", "answered": True},
        {"answer": "none", "answered": False},
    ]
    text = out.getvalue()
    assert text.count("? [") == 3
    assert text.index("Name for a?") < text.index("Name for b?") < text.index("Name for c?")


# ---------------------------------------------------------------------------------------------
# Cross-file plan cycles


def test_check_plan_cycles_across_files_names_the_closing_call():
    a = load(
        "version: 1\nname: a\nsteps:\n  - {id: E0, tool_name: plan__b, input: {}}\n", "a.plan.yaml"
    )
    b = load(
        "version: 1\nname: b\nsteps:\n  - id: E0\n    tool_name: map\n    input:\n"
        "      over: [1]\n      do: {tool_name: plan__a, input: {}}\n",
        "b.plan.yaml",
    )
    problems = check_plan_cycles(a, {"b": b})
    assert len(problems) == 1
    p = problems[0]
    assert p.code == "plan-cycle" and "a → b → a" in p.message
    assert str(p.span) == "b.plan.yaml:8:23"
    assert check_plan_cycles(a, {}) == []
    with pytest.raises(PlanLoadError):
        raise PlanLoadError(problems)


# ---------------------------------------------------------------------------------------------
# Deferred rendering (docs/spec/PLAN_IR.md §5)


async def test_branch_not_taken_never_renders_and_nested_filter_shadows_item():
    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: value, input: {value: {ok: true}}}
  - id: E1
    tool_name: decide
    input:
      when: {value: "{{ E0.ok }}", op: eq, to: true}
      then: {tool_name: value, input: {value: taken}}
      else: {tool_name: value, input: {value: "{{ E0.nothing.here }}"}}
  - id: E2
    tool_name: map
    input:
      over: [[1, 5, 9], [2, 8]]
      do:
        tool_name: filter
        input:
          over: "{{ item }}"
          when: {expr: "item > 4"}
"""
    )
    events = Events()
    res = await run_plan(plan, sinks=[events.sink()])
    assert res.status == "ok", res.error
    assert res.results["E1"] == {"branch": "then", "output": "taken"}
    assert not [e for e in events if e.path == "E1/else"]
    assert res.results["E2"] == [
        {"kept": [5, 9], "dropped": [1]},
        {"kept": [8], "dropped": [2]},
    ]


async def test_runtime_plan_cycle_through_an_agent_free_chain_of_plans():
    a = load("version: 1\nname: a\nsteps:\n  - {id: E0, tool_name: plan__b, input: {}}\n")
    b = load(
        "version: 1\nname: b\nsteps:\n  - id: E5\n    tool_name: map\n    input:\n"
        "      over: [1]\n      do: {tool_name: plan__a, input: {}}\n"
    )
    calls = []
    res = await run_plan(
        a, plans={"a": a, "b": b}, hooks=Hooks(on_tool_error=lambda f: calls.append(f))
    )
    assert res.status == "error" and res.error["code"] == "plan_cycle"
    assert res.error["step_path"] == "E0/E5/do.0"
    assert "a → b → a" in res.error["message"]
    assert calls == []  # plan_cycle is never offered to on_tool_error


def test_plain_console_lines_stay_single_short_and_escape_free():
    """Tool inputs, errors, sources and model names come from outside (a model's tool call, a
    tool's error text, the config): a console line shows their control characters escaped (no
    ESC reaches the terminal), never breaks in two and stays short."""
    stream = io.StringIO()
    bus = EventBus([ConsoleSink(stream, force_plain=True)])
    esc = "\x1b]0;pwned\x07\x1b[2J\x9b31m"
    bus.emit(
        "step_started", "E0", ["t"], tool_name="agent", source="t.flow:3:5\n" + esc + "x" * 5000
    )
    bus.emit("tool_started", "E0/agent.1/builtin__grep", ["t"], tool_name="builtin__grep",
             input="a\n" + esc + "y" * 5000)  # fmt: skip
    bus.emit("tool_finished", "E0/agent.1/builtin__grep", ["t"], tool_name="builtin__grep",
             error={"code": "c" + esc, "message": "m\n" + esc})  # fmt: skip
    bus.emit("model_call", "E0", ["t"], role="chat", model="gpt\n" + esc + "z" * 5000,
             input_tokens=1, output_tokens=2, latency_ms=3)  # fmt: skip
    bus.emit("warning", "E0", ["t"], message="w\n" + esc + "w" * 5000)
    bus.emit("retry", "E0", ["t"], model="m\n" + esc, attempt=1, code="x")
    bus.emit("run_finished", "", ["t"], status="ok", duration_ms=5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 7
    for line in lines:
        assert len(line) < 300, line
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in line), ascii(line)
    assert "\\x1b]0;pwned" in lines[1]


def test_a_step_stopped_with_no_error_of_its_own_shows_failed_on_the_console():
    # a step a `flowc cancel` (or a hook's abort of another step) stopped finishes with
    # `aborted` and no `error`: its line is a ✗ (it once was a ✓), as with a Ctrl-C
    stream = io.StringIO()
    bus = EventBus([ConsoleSink(stream, force_plain=True)])
    bus.emit("step_started", "E1/do.2", ["m"], tool_name="user__slow", label="measure › item 2")
    bus.emit("step_finished", "E1/do.2", ["m"], tool_name="user__slow", elapsed_ms=30,
             aborted="the run was cancelled (flowc cancel)", label="measure › item 2")  # fmt: skip
    (line,) = stream.getvalue().splitlines()[1:]
    assert line == "✗ measure › item 2  0.03s  aborted: the run was cancelled (flowc cancel)"
