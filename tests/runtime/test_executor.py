"""runtime.executor: plan pipeline semantics (docs/spec/RUNTIME.md §1, §2, §7, §8;
docs/spec/PLAN_IR.md §2–7).

Plans are loaded with the real loader (and parser). Tools are plain Python functions registered
in a real ``Catalog``; models are the scripted chat server of ``tests/support``.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from support.paths import SPEC_EXAMPLES
from support.timing import Stretch

from agentflow.errors import InputError, RunError
from agentflow.runtime.events import CallbackSink, ConsoleSink, JsonlSink
from agentflow.runtime.executor import Hooks, abort, run_plan, run_plan_sync, skip, substitute
from agentflow.runtime.tools.catalog import Catalog

EXAMPLES = SPEC_EXAMPLES

# ---------------------------------------------------------------------------------------------
# Helpers


def load(text: str):
    from agentflow.ir.loader import load_plan_text

    return load_plan_text(text, "test.plan.yaml")


def catalog(**fns) -> Catalog:
    cat = Catalog()
    for name, fn in fns.items():
        cat.register_function(name, fn)
    return cat


def _one_step(step: str) -> str:
    """A plan of one step, ``step`` a YAML flow mapping."""
    return f"version: 1\nname: a\nsteps:\n  - {step}\n"


class Events(list):
    def sink(self):
        return CallbackSink(self.append)

    def kinds(self, kind):
        return [e for e in self if e.kind == kind]


# ---------------------------------------------------------------------------------------------
# Dataflow


async def test_sequential_dataflow_typed_and_text():
    seen = {}

    def linear__list_issues(limit: int):
        return {"issues": [{"id": f"I-{i}", "n": i} for i in range(limit)]}

    def user__take(ids: list, label: str, flag: bool):
        seen.update(ids=ids, label=label, flag=flag)
        return {"got": len(ids)}

    plan = load(
        """
version: 1
name: t
input_schema: {type: object, required: [limit], properties: {limit: {type: integer}}}
steps:
  - id: E0
    tool_name: linear__list_issues
    input: { limit: "{{ input.limit }}" }
  - id: E1
    tool_name: user__take
    input:
      ids: "{{ E0.issues[*].id }}"
      label: "first={{ E0.issues[0] }} count={{ E0.issues.count }}"
      flag: "{{ E0.issues.count > 2 }}"
finish: { mode: output, output: "{{ E1.got }}" }
"""
    )
    events = Events()
    res = await run_plan(
        plan,
        {"limit": 3},
        catalog=catalog(linear__list_issues=linear__list_issues, user__take=user__take),
        sinks=[events.sink()],
    )
    assert res.status == "ok", res.error
    assert res.output == 3
    assert seen == {
        "ids": ["I-0", "I-1", "I-2"],
        "label": 'first={"id":"I-0","n":0} count=3',
        "flag": True,
    }
    assert set(res.results) == {"E0", "E1"}
    started = events.kinds("step_started")
    assert [e.path for e in started] == ["E0", "E1"]
    assert started[0].data["input"] == {"limit": 3}
    assert events.kinds("step_finished")[1].data["result"] == {"got": 3}
    assert events[0].kind == "run_started" and events[-1].kind == "run_finished"
    assert res.to_dict()["status"] == "ok" and res.duration_ms >= 0


async def test_input_validated_before_any_step():
    calls = []
    plan = load(
        """
version: 1
name: t
input_schema: {type: object, required: [limit], properties: {limit: {type: integer}}}
steps:
  - {id: E0, tool_name: user__f, input: {}}
"""
    )
    with pytest.raises(InputError, match="limit"):
        await run_plan(plan, {"limit": "x"}, catalog=catalog(user__f=lambda: calls.append(1)))
    assert calls == []


async def test_select_and_default_finish():
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: user__f
    input: {}
    select: "{{ result.inner.value }}"
  - id: E1
    tool_name: value
    input: { value: "{{ E0 + 1 }}" }
"""
    )
    res = await run_plan(plan, catalog=catalog(user__f=lambda: {"inner": {"value": 41}}))
    assert res.results == {"E0": 41, "E1": 42}
    assert res.output == 42


async def test_bad_path_names_step_path_and_missing_part():
    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: user__f, input: {}}
  - {id: E1, tool_name: user__f, input: {x: "{{ E0.issues[0].title }}"}, meta: {source: "a.flow:3:4"}}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__f=lambda **kw: {"issues": [{"id": 1}]}))
    assert res.status == "error"
    err = res.error
    assert err["code"] == "bad_path" and err["step_path"] == "E1"
    assert "E1" in err["message"] and "E0.issues[0].title" in err["message"]
    assert "`title`" in err["message"]
    assert err["source"] == "a.flow:3:4"


# ---------------------------------------------------------------------------------------------
# map


MAP_PLAN = """
version: 1
name: t
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{{{ input.items }}}}"
      concurrency: {conc}
      on_item_error: {mode}
      do:
        tool_name: user__work
        input: {{ x: "{{{{ item }}}}", i: "{{{{ index }}}}" }}
"""


async def test_map_concurrency_overlap_and_input_order():
    spans = {}

    async def user__work(x: float, i: int):
        t0 = time.monotonic()
        await asyncio.sleep(x)
        spans[i] = (t0, time.monotonic())
        return {"i": i, "x": x}

    plan = load(MAP_PLAN.format(conc=3, mode="fail"))
    events = Events()
    with Stretch() as clock:
        res = await run_plan(
            plan,
            {"items": [0.3, 0.2, 0.1]},
            catalog=catalog(user__work=user__work),
            sinks=[events.sink()],
        )
    assert res.status == "ok", res.error
    assert [r["i"] for r in res.output] == [0, 1, 2]  # input order, not finish order
    assert clock.took < clock.bound(0.5)
    # every pair of items overlapped in time
    assert max(s for s, _ in spans.values()) < min(e for _, e in spans.values())
    paths = {e.path for e in events.kinds("step_started")}
    assert {"E0", "E0/do.0", "E0/do.1", "E0/do.2"} <= paths


async def test_map_sequential_by_default_bound():
    active, peak = 0, 0

    async def user__work(x: float, i: int):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return i

    plan = load(MAP_PLAN.format(conc=2, mode="fail"))
    res = await run_plan(plan, {"items": [0] * 6}, catalog=catalog(user__work=user__work))
    assert res.output == [0, 1, 2, 3, 4, 5] and peak == 2


async def test_map_on_item_error_fail_cancels_others():
    finished = []

    async def user__work(x: float, i: int):
        if i == 1:
            await asyncio.sleep(0.05)
            raise RuntimeError("boom")
        await asyncio.sleep(x)
        finished.append(i)
        return i

    plan = load(MAP_PLAN.format(conc=3, mode="fail"))
    with Stretch() as clock:
        res = await run_plan(plan, {"items": [2.0, 0, 2.0]}, catalog=catalog(user__work=user__work))
    assert clock.took < clock.bound(1.0)
    assert res.status == "error"
    assert res.error["code"] == "tool_error" and "boom" in res.error["message"]
    assert res.error["step_path"] == "E0/do.1"
    assert finished == []


async def test_the_items_a_failure_stops_say_why_not_just_cancelled():
    # an item stopped because another failed read "aborted: cancelled", as if someone had run
    # `flowc cancel`
    async def user__work(x: float, i: int):
        if i == 1:
            await asyncio.sleep(0.05)
            raise RuntimeError("boom")
        await asyncio.sleep(x)
        return i

    plan = load(MAP_PLAN.format(conc=3, mode="fail"))
    events = Events()
    res = await run_plan(
        plan,
        {"items": [2.0, 0, 2.0]},
        catalog=catalog(user__work=user__work),
        sinks=[events.sink()],
    )
    assert res.status == "error"
    stopped = {
        e.path: e.data["error"]
        for e in events.kinds("step_finished")
        if (e.data.get("error") or {}).get("code") == "aborted"
    }
    assert sorted(stopped) == ["E0/do.0", "E0/do.2"]
    assert {err["message"] for err in stopped.values()} == {"another item or branch failed first"}


async def test_map_on_item_error_skip():
    def user__work(x: float, i: int):
        if i == 1:
            raise RuntimeError("boom")
        return i

    plan = load(MAP_PLAN.format(conc=2, mode="skip"))
    events = Events()
    res = await run_plan(
        plan, {"items": [0, 0, 0]}, catalog=catalog(user__work=user__work), sinks=[events.sink()]
    )
    assert res.status == "ok" and res.output == [0, 2]
    assert any("skipped" in e.data["message"] for e in events.kinds("warning"))


# ---------------------------------------------------------------------------------------------
# exit / decide / filter / reduce / value / parallel


async def test_exit_ok_and_error():
    text = """
version: 1
name: t
steps:
  - {id: E0, tool_name: value, input: {value: "{{ input.n }}"}}
  - id: E1
    tool_name: exit
    input:
      when: {value: "{{ E0 }}", op: gt, to: 5}
      status: %s
      message: "too big: {{ E0 }}"
      output: {n: "{{ E0 }}"}
  - {id: E2, tool_name: value, input: {value: done}}
"""
    ok = load(text % "ok")
    res = await run_plan(ok, {"n": 9})
    assert res.status == "exited" and res.output == {"n": 9}
    assert "E2" not in res.results
    res = await run_plan(ok, {"n": 1})
    assert res.status == "ok" and res.output == "done" and res.results["E1"] is None
    err = load(text % "error")
    res = await run_plan(err, {"n": 9})
    assert res.status == "error"
    assert res.error.to_dict() == {"code": "failed", "message": "too big: 9", "step_path": "E1"}


async def test_decide_filter_reduce_value_parallel():
    rendered = []

    def user__echo(v):
        rendered.append(v)
        return v

    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: filter
    input:
      over: "{{ input.xs }}"
      when: {value: "{{ item }}", op: ge, to: 2}
  - id: E1
    tool_name: reduce
    input:
      over: "{{ E0.kept }}"
      initial: 0
      do: {tool_name: value, input: {value: "{{ accumulator + item }}"}}
  - id: E2
    tool_name: decide
    input:
      when: {value: "{{ E1 }}", op: gt, to: 5}
      then: {tool_name: user__echo, input: {v: "big {{ E1 }}"}}
      else: {tool_name: user__echo, input: {v: "{{ input.nothing.here }}"}}
  - id: E3
    tool_name: parallel
    input:
      branches:
        a: {tool_name: value, input: {value: "{{ E0.dropped }}"}}
        b: {tool_name: user__echo, input: {v: "{{ E2.branch }}"}}
finish: {output: "{{ E3 }}"}
"""
    )
    res = await run_plan(plan, {"xs": [1, 2, 3, 4]}, catalog=catalog(user__echo=user__echo))
    assert res.status == "ok", res.error
    assert res.results["E0"] == {"kept": [2, 3, 4], "dropped": [1]}
    assert res.results["E1"] == 9
    # the else branch (with a bad path) was never rendered
    assert res.results["E2"] == {"branch": "then", "output": "big 9"}
    assert res.output == {"a": [1], "b": "then"}


async def test_decide_else_and_expr_condition():
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: decide
    input:
      when: {expr: "input.xs.count > 3 and not input.off"}
      then: {tool_name: value, input: {value: yes}}
      else: {tool_name: value, input: {value: "{{ input.xs[0] }}"}}
"""
    )
    res = await run_plan(plan, {"xs": [7], "off": False})
    assert res.output == {"branch": "else", "output": 7}


async def test_verify_check_with_non_bool_ok_is_a_step_error():
    plan = load(
        _one_step("{id: E0, tool_name: verify, input: {checks: [{ok: '{{ 1 }}', message: m}]}}")
    )
    res = await run_plan(plan, catalog=Catalog())
    assert res.status == "error"
    assert res.error["code"] == "validation"
    assert res.error["message"] == "check 0: `ok` must be a bool, got number"
    ok = load(
        _one_step(
            "{id: E0, tool_name: verify, input: {checks: [{ok: '{{ 1 == 2 }}', message: m}, "
            "{ok: {value: 1, op: eq, to: 1}, message: n}]}}"
        )
    )
    res = await run_plan(ok, catalog=Catalog())
    assert res.output == {"passed": False, "failures": ["m"]}


@pytest.mark.parametrize(
    "step",
    [
        "{id: E0, tool_name: map, input: {over: '{{ input.x }}', do: {tool_name: value, "
        "input: {value: 1}}}}",
        "{id: E0, tool_name: filter, input: {over: '{{ input.x }}', when: {expr: 'true'}}}",
        "{id: E0, tool_name: reduce, input: {over: '{{ input.x }}', initial: 0, "
        "do: {tool_name: value, input: {value: 1}}}}",
    ],
)
async def test_over_null_is_an_error_not_an_empty_list(step):
    res = await run_plan(load(_one_step(step)), {"x": None}, catalog=Catalog())
    assert res.status == "error"
    assert res.error["code"] == "validation"
    assert res.error["message"].startswith("`over` must be a list, got null")


async def test_over_with_a_default_opts_in_to_no_items():
    step = (
        "{id: E0, tool_name: map, input: {over: '{{ input.x ?? [] }}', "
        "do: {tool_name: value, input: {value: 1}}}}"
    )
    res = await run_plan(load(_one_step(step)), {"x": None}, catalog=Catalog())
    assert res.status == "ok" and res.output == []


# ---------------------------------------------------------------------------------------------
# timeouts, deadlines, retry


@pytest.mark.parametrize(
    ("deadline", "timeout", "code"),
    [("200ms", "5s", "deadline_exceeded"), ("5s", "100ms", "timeout")],
    ids=["deadline", "step-timeout"],
)
async def test_the_tighter_bound_stops_a_slow_tool_fast(deadline, timeout, code):
    async def user__slow():
        await asyncio.sleep(10)

    plan = load(
        f"""
version: 1
name: t
deadline: {deadline}
steps:
  - {{id: E0, tool_name: user__slow, input: {{}}, timeout: {timeout}}}
"""
    )
    with Stretch() as clock:
        res = await run_plan(plan, catalog=catalog(user__slow=user__slow))
    assert clock.took < clock.bound(0.5)
    assert res.status == "error" and res.error["code"] == code
    assert res.error["step_path"] == "E0"


async def test_retry_on_transient_then_success():
    calls = []

    def user__flaky():
        calls.append(time.monotonic())
        if len(calls) < 3:
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
    retry: {attempts: 2, on: [transient], backoff: {initial: 20ms, factor: 2, max: 1s}}
"""
    )
    events = Events()
    res = await run_plan(plan, catalog=catalog(user__flaky=user__flaky), sinks=[events.sink()])
    assert res.status == "ok" and res.output == "ok" and len(calls) == 3
    retries = events.kinds("retry")
    assert [e.data["attempt"] for e in retries] == [1, 2]
    assert all(e.data["code"] == "transient" for e in retries)
    # backoff: second gap (≥ 20ms) longer than half the first nominal delay
    assert calls[1] - calls[0] >= 0.009 and calls[2] - calls[1] >= 0.019


async def test_retry_not_for_other_codes():
    calls = []

    def user__bad():
        calls.append(1)
        raise RunError("tool_error", "permanent")

    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: user__bad, input: {}, retry: {attempts: 3}}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__bad=user__bad))
    assert res.error["code"] == "tool_error" and len(calls) == 1


async def test_timeout_retried_when_listed():
    calls = []

    async def user__slow():
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(5)
        return "second"

    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: user__slow
    input: {}
    timeout: 50ms
    retry: {attempts: 1, on: [timeout], backoff: {initial: 1ms}}
"""
    )
    res = await run_plan(plan, catalog=catalog(user__slow=user__slow))
    assert res.output == "second" and len(calls) == 2


# ---------------------------------------------------------------------------------------------
# hooks


GATED = """
version: 1
name: t
steps:
  - {id: E0, tool_name: user__a, input: {v: 1}}
  - {id: E1, tool_name: user__b, input: {v: "{{ E0 }}"}}
"""


async def test_gate_skip_injects_result():
    seen = []

    def gate(call):
        seen.append((call.tool_name, call.input, call.step_path, dict(call.scope)))
        if call.tool_name == "user__a":
            return skip(100)
        return None

    cat = catalog(user__a=lambda v: 1 / 0, user__b=lambda v: v + 1)
    res = await run_plan(load(GATED), catalog=cat, hooks=Hooks(gate=gate))
    assert res.status == "ok" and res.results == {"E0": 100, "E1": 101}
    assert seen[0][:3] == ("user__a", {"v": 1}, "E0")
    assert seen[1][0] == "user__b" and seen[1][3]["E0"] == 100


async def test_gate_abort_is_hard_stop():
    ran = []

    async def gate(call):
        return abort("stop here") if call.tool_name == "user__b" else None

    cat = catalog(user__a=lambda v: ran.append("a") or 1, user__b=lambda v: ran.append("b"))
    res = await run_plan(load(GATED), catalog=cat, hooks=Hooks(gate=gate))
    assert res.status == "aborted" and ran == ["a"]
    assert res.error["code"] == "aborted" and res.error["step_path"] == "E1"
    assert res.results == {"E0": 1}


async def test_on_tool_error_substitute_and_abort():
    cat = catalog(user__a=lambda v: 1 / 0, user__b=lambda v: v)
    res = await run_plan(
        load(GATED), catalog=cat, hooks=Hooks(on_tool_error=lambda f: substitute(7))
    )
    assert res.status == "ok" and res.results == {"E0": 7, "E1": 7}
    res = await run_plan(load(GATED), catalog=cat, hooks=Hooks(on_tool_error=lambda f: abort()))
    assert res.status == "aborted"
    assert res.error["code"] == "tool_error" and "ZeroDivisionError" in res.error["message"]


async def test_ask_unanswered_and_interlocutor():
    text = """
version: 1
name: t
steps:
  - id: E0
    tool_name: ask
    input:
      question: "Approve {{ input.what }}{{ input.missing }}?"
      when_unanswered: %s
"""
    res = await run_plan(load(text % "{default: false}"), {"what": "x"})
    assert res.output == {"answer": False, "answered": False}
    res = await run_plan(load(text % "skip"), {"what": "x"})
    assert res.output == {"answer": None, "answered": False}
    res = await run_plan(load(text % "{fail: needs approval}"), {"what": "x"})
    assert res.error["code"] == "failed" and res.error["message"] == "needs approval"
    asked = []
    res = await run_plan(
        load(text % "skip"),
        {"what": "x"},
        hooks=Hooks(interlocutor=lambda req: asked.append(req.question) or True),
    )
    assert res.output == {"answer": True, "answered": True} and asked == ["Approve x?"]


async def test_templated_ask_default_is_checked_at_run_time():
    plan = load(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [a, b], "
            "when_unanswered: {default: '{{ input.d }}'}}}"
        )
    )
    bad = await run_plan(plan, {"d": "c"}, catalog=Catalog())
    assert bad.status == "error"
    assert bad.error["code"] == "validation" and bad.error["step_path"] == "E0"
    assert bad.error["message"] == (
        '`when_unanswered.default` of `pick`: "c" is not one of "a" | "b"'
    )
    good = await run_plan(plan, {"d": "b"}, catalog=Catalog())
    assert good.status == "ok" and good.output == {"answer": "b", "answered": False}


# ---------------------------------------------------------------------------------------------
# sub-plans


async def test_sub_plan_nested_paths_and_cycle():
    plan = load(
        """
version: 1
name: outer
steps:
  - id: E0
    tool_name: map
    input:
      over: [1, 2]
      do: {tool_name: plan__inner, input: {n: "{{ item }}"}}
plans:
  inner:
    version: 1
    name: inner
    input_schema: {type: object, properties: {n: {type: integer}}}
    steps:
      - {id: E10, tool_name: user__double, input: {n: "{{ input.n }}"}}
    finish: {output: "{{ E10 }}"}
"""
    )
    events = Events()
    res = await run_plan(plan, catalog=catalog(user__double=lambda n: n * 2), sinks=[events.sink()])
    assert res.status == "ok", res.error
    assert res.output == [2, 4]
    inner = [e for e in events.kinds("step_started") if e.path.endswith("E10")]
    assert {e.path for e in inner} == {"E0/do.0/E10", "E0/do.1/E10"}
    assert inner[0].stack == ["outer", "inner"]

    # the loader refuses cycles inside one file; across plan files the executor catches them
    a = load("version: 1\nname: a\nsteps:\n  - {id: E0, tool_name: plan__b, input: {}}\n")
    b = load("version: 1\nname: b\nsteps:\n  - {id: E0, tool_name: plan__a, input: {}}\n")
    res = await run_plan(a, plans={"a": a, "b": b})
    assert res.status == "error" and res.error["code"] == "plan_cycle"
    assert res.error["step_path"] == "E0/E0"


async def test_exit_error_in_sub_plan_ends_run():
    plan = load(
        """
version: 1
name: outer
steps:
  - {id: E0, tool_name: plan__inner, input: {}}
  - {id: E1, tool_name: value, input: {value: never}}
plans:
  inner:
    version: 1
    name: inner
    steps:
      - {id: E5, tool_name: exit, input: {status: error, code: failed, message: nope}}
"""
    )
    res = await run_plan(plan, hooks=Hooks(on_tool_error=lambda f: substitute(1)))
    assert res.status == "error" and res.error["message"] == "nope"
    assert res.error["step_path"] == "E0/E5"


# ---------------------------------------------------------------------------------------------
# sinks


async def test_jsonl_trace(tmp_path):
    trace = tmp_path / "trace.jsonl"
    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: user__f, input: {s: "{{ input.s }}"}}
"""
    )
    res = await run_plan(
        plan, {"s": "Zoë"}, catalog=catalog(user__f=lambda s: s + "!"), sinks=[JsonlSink(trace)]
    )
    assert res.status == "ok"
    raw = trace.read_text(encoding="utf-8")
    assert "Zoë" in raw  # ensure_ascii=False
    lines = [json.loads(line) for line in raw.splitlines()]
    kinds = [e["kind"] for e in lines]
    assert kinds == [
        "run_started",
        "step_started",
        "tool_started",
        "tool_finished",
        "step_finished",
        "run_finished",
    ]
    assert all(set(e) == {"kind", "path", "stack", "time", "data"} for e in lines)
    assert lines[1]["data"]["input"] == {"s": "Zoë"} and lines[1]["path"] == "E0"
    assert lines[4]["data"]["result"] == "Zoë!" and lines[4]["stack"] == ["t"]


def test_console_sink_plain_and_sync_entry(capsys):
    import io

    buf = io.StringIO()
    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: value, input: {value: 1}}
  - {id: E1, tool_name: user__bad, input: {}}
"""
    )
    res = run_plan_sync(plan, catalog=catalog(user__bad=lambda: 1 / 0), sinks=[ConsoleSink(buf)])
    assert res.status == "error"
    out = buf.getvalue()
    assert "▶ E0 value" in out and "✓ E0" in out and "✗ E1" in out and "tool_error" in out


# ---------------------------------------------------------------------------------------------
# agent steps against the scripted chat server


def _offered(request) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools") or [])


def _issues_catalog(calls=None):
    def linear__list_issues(limit: int = 50):
        if calls is not None:
            calls.append(limit)
        return {
            "issues": [
                {"id": "I-1", "title": "DB migration", "state": "open"},
                {"id": "I-2", "title": "Deploy — waits on I-1", "state": "blocked"},
            ][:limit]
        }

    async def write_file(args, ctx):
        return "written"

    cat = catalog(linear__list_issues=linear__list_issues)
    cat.register_function("builtin__write_file", write_file)
    return cat


async def test_issue_review_example(chat_server, scripted_config, scripted_router):
    from support.chat_server import answer, tool_calls

    from agentflow.ir.loader import load_plan

    calls = []
    chat_server.script(
        [
            tool_calls(("linear__list_issues", {"limit": 2})),
            answer({"blocked": [{"id": "I-2", "reason": "waits on I-1"}]}),
        ]
    )
    plan = load_plan(EXAMPLES / "issue-review.plan.yaml")
    events = Events()
    res = await run_plan(
        plan,
        {},
        catalog=_issues_catalog(calls),
        router=scripted_router,
        config=scripted_config,
        sinks=[events.sink()],
    )
    assert res.status == "ok", res.error
    assert res.output == {"blocked": [{"id": "I-2", "reason": "waits on I-1"}]}
    assert res.results["E1"]["final"] is True and res.results["E2"] is None
    assert calls == [50, 2]  # E0, then the agent's own call
    # the rendered prompt holds E0's issues as compact JSON, Unicode kept
    first = chat_server.requests[0]
    user = [m for m in first["messages"] if m["role"] == "user"][0]["content"]
    assert '"title":"Deploy — waits on I-1"' in user
    assert _offered(first) == ["linear__list_issues"]
    tool_paths = [e.path for e in events.kinds("tool_started")]
    assert "E1/agent.1/linear__list_issues" in tool_paths
    assert res.usage["inferences"] == 2 and res.usage["input_tokens"] == 20
    assert events.kinds("model_call")


AGENT_PLAN = """
version: 1
name: t
steps:
  - id: E0
    tool_name: agent
    meta: {stage: reproduce, source: "bug-triage.flow:41:16"}
    input:
      prompt: "Find {{ input.what }}{{ input.missing_field }}"
      output_schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}
      max_iterations: 2
      require_final: true
%s
"""


async def test_agent_require_final_error_names_stage_and_source(
    chat_server, scripted_config, scripted_router
):
    chat_server.script(lambda body: "I cannot do that")
    events = Events()
    res = await run_plan(
        load(AGENT_PLAN % "      tools: none"),
        {"what": "bug"},
        catalog=_issues_catalog(),
        router=scripted_router,
        config=scripted_config,
        sinks=[events.sink()],
    )
    assert res.status == "error"
    assert res.error["code"] == "output_validation"
    assert res.error["message"] == (
        "stage `reproduce` (bug-triage.flow:41:16): agent could not produce output conforming "
        "to its contract within 2 rounds; last problem: the answer is not a JSON object: the "
        "reply does not start with a JSON value (no prose before the JSON, please)"
    )
    assert res.error["source"] == "bug-triage.flow:41:16"
    assert _offered(chat_server.requests[0]) == []
    # the missing field rendered leniently, with a warning
    assert any("missing_field" in e.data["message"] for e in events.kinds("warning"))


async def test_agent_tools_default_policy_and_write_grant(
    chat_server, scripted_config, scripted_router
):
    chat_server.script(lambda body: '{"ok": true}')
    res = await run_plan(
        load(AGENT_PLAN % ""),
        {"what": "x"},
        catalog=_issues_catalog(),
        router=scripted_router,
        config=scripted_config,
    )
    assert res.status == "ok", res.error
    assert _offered(chat_server.requests[-1]) == ["linear__list_issues"]
    res = await run_plan(
        load(AGENT_PLAN % "      write: [src/]"),
        {"what": "x"},
        catalog=_issues_catalog(),
        router=scripted_router,
        config=scripted_config,
    )
    assert _offered(chat_server.requests[-1]) == ["builtin__write_file", "linear__list_issues"]


async def test_agent_inner_calls_are_gated(chat_server, scripted_config, scripted_router):
    from support.chat_server import answer, tool_calls

    chat_server.script([tool_calls(("linear__list_issues", {"limit": 1})), answer({"ok": True})])
    gated = []

    def gate(call):
        gated.append(call.step_path)
        return abort("no Linear today")

    res = await run_plan(
        load(AGENT_PLAN % '      tools: ["linear__*"]'),
        {"what": "x"},
        catalog=_issues_catalog(),
        router=scripted_router,
        config=scripted_config,
        hooks=Hooks(gate=gate),
    )
    assert gated == ["E0/agent.1/linear__list_issues"]
    assert res.status == "aborted" and res.error["step_path"] == "E0/agent.1/linear__list_issues"


async def test_agent_teams_and_profiles(chat_server, tmp_path, scripted_router):
    from support.chat_server import TEST_API_KEY

    from agentflow.runtime.config import load_config

    extra = (
        "[agents.triager]\n"
        'system_prompt = "You triage issues."\n'
        "[teams.dev-team]\n"
        'main = "lead"\n'
        'members = { lead = {}, backend = { system_prompt = "You own the API." } }\n'
    )
    path = tmp_path / "flow.toml"
    path.write_text(chat_server.config_text(extra=extra), encoding="utf-8")
    config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    chat_server.script(lambda body: '{"ok": true}')

    async def go(agent_field, who="backend"):
        events = Events()
        res = await run_plan(
            load(AGENT_PLAN % f"      tools: none\n      agent: {agent_field}"),
            {"what": "x", "who": who},
            catalog=_issues_catalog(),
            router=scripted_router,
            config=config,
            sinks=[events.sink()],
        )
        return res, events

    res, _ = await go('{kind: team.member, team: dev-team, member: "{{ input.who }}"}')
    assert res.status == "ok", res.error
    system = chat_server.requests[-1]["messages"][0]["content"]
    assert "You own the API." in system
    res, _ = await go('{kind: team.member, team: dev-team, member: "{{ input.who }}"}', "nobody")
    assert res.error["code"] == "invalid_member" and "nobody" in res.error["message"]
    res, _ = await go("{kind: team.main, team: ops-team}")
    assert res.error["code"] == "validation" and "ops-team" in res.error["message"]
    res, _ = await go("{kind: alias, name: triager}")
    assert "You triage issues." in chat_server.requests[-1]["messages"][0]["content"]
    res, events = await go("{kind: alias, name: stranger}")
    assert res.status == "ok"
    assert any("stranger" in e.data["message"] for e in events.kinds("warning"))


async def test_decide_infer_uses_judge(chat_server, scripted_config, scripted_router):
    chat_server.script(["Yes.", "no"])
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: filter
    input:
      over: "{{ input.xs }}"
      infer: "Is {{ item }} even?"
"""
    )
    res = await run_plan(plan, {"xs": [2, 3]}, router=scripted_router, config=scripted_config)
    assert res.status == "ok", res.error
    assert res.output == {"kept": [2], "dropped": [3]}
    assert res.usage["inferences"] == 2 and "judge" in res.usage["by_role"]
    assert chat_server.requests[0]["messages"][-1]["content"] == "Is 2 even?"


async def test_finish_solver_and_verify(chat_server, scripted_config, scripted_router):
    chat_server.script(["yes", "All good: 3 items."])
    plan = load(
        """
version: 1
name: t
steps:
  - id: E0
    tool_name: verify
    input:
      checks:
        - {ok: "{{ input.xs.count == 3 }}", message: "need three"}
        - {ok: "{{ input.xs.count > 5 }}", message: "need more than five"}
      judges:
        - {prompt: "Are {{ input.xs }} sorted?"}
finish: {mode: solver, prompt: "Summarize."}
"""
    )
    res = await run_plan(plan, {"xs": [1, 2, 3]}, router=scripted_router, config=scripted_config)
    assert res.status == "ok", res.error
    assert res.results["E0"] == {"passed": False, "failures": ["need more than five"]}
    assert res.output == "All good: 3 items."
    assert set(res.usage["by_role"]) == {"judge", "solver"}
    solver_user = chat_server.requests[1]["messages"][-1]["content"]
    assert solver_user.startswith("Summarize.") and "need more than five" in solver_user


async def test_ask_questions_serialized_under_concurrent_map():
    active, peak, asked = 0, 0, []

    async def interlocutor(req):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        asked.append(req.step_path)
        return f"answer {req.question}"

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
      do: {tool_name: ask, input: {question: "{{ item }}?", when_unanswered: skip}}
"""
    )
    res = await run_plan(plan, hooks=Hooks(interlocutor=interlocutor))
    assert peak == 1 and sorted(asked) == ["E0/do.0", "E0/do.1", "E0/do.2"]
    assert [r["answer"] for r in res.output] == ["answer a?", "answer b?", "answer c?"]


async def test_malformed_control_step_is_an_error_not_a_traceback():
    plan = load(
        """
version: 1
name: t
steps:
  - {id: E0, tool_name: map, input: {over: [1], concurrency: "{{ input.c }}", do: {tool_name: value, input: {value: 1}}}}
"""
    )
    res = await run_plan(plan, {"c": 0})
    assert res.status == "error" and res.error["code"] == "validation"
    assert "concurrency" in res.error["message"]
