"""OpenTelemetry export of runs: an event sink that turns the run's events into spans
(docs/observability.md; docs/spec/RUNTIME.md §8).

:class:`OtelSink` reads the same event stream as ``--trace`` (runtime/events.py) and builds the
span tree from step paths; it never looks inside the executor::

    run bug_triage                               (the run: status, usage, error code)
    ├── stage reproduce                          (top-level steps of one `.flow` stage)
    │   ├── invoke_agent repo-investigator       (a step: path, tool, `.flow` source, status)
    │   │   ├── round 1                          (one agent round)
    │   │   │   ├── chat gpt-4o-mini             (one model call: GenAI semantic conventions)
    │   │   │   └── execute_tool grep            (a tool call: name, call id, duration, error)
    │   │   └── round 2 …
    │   └── exit                                 (a step; `list_dir files` when bound to a `let`)
    └── stage implement
        └── map
            ├── invoke_agent dev-team.backend · item 0   (E3/do.0, agentflow.map.index 0)
            └── invoke_agent dev-team.frontend · item 1

Model-call spans follow the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.finish_reasons``); tool
spans are ``execute_tool`` spans (``gen_ai.tool.name``); agent steps are ``invoke_agent`` spans
(``gen_ai.agent.name``). Failed spans get status ERROR and ``error.type`` = the run-time error
code (docs/spec/PLAN_IR.md §8). Prompts, replies, tool arguments and results, step inputs and
outputs are recorded only with ``capture_content`` (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.tool.call.arguments`` / ``result``, ``agentflow.step.input`` /
``output``), and every known secret (API keys, expanded ``${VAR}`` values) is replaced by
``[redacted]`` in every attribute either way.

Nothing here imports OpenTelemetry until a sink is built: a run without telemetry pays nothing.
The packages come with the ``otel`` extra (``pip install 'agentflow[otel]'``);
:func:`~agentflow.runtime.telemetry_settings.otel_available` tells whether they are installed.

This module holds the sink's event handlers (an event → span starts, ends, attributes);
:mod:`agentflow.runtime.telemetry_spans` the span tree they keep (:class:`OtelSink`'s base
class), :mod:`agentflow.runtime.telemetry_settings` what is exported and where.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from agentflow.core.vocabulary import CONTROL_STEPS, Code, started_items
from agentflow.errors import ConfigError
from agentflow.runtime import genai_attributes as G
from agentflow.runtime.events import sleep_attributes
from agentflow.runtime.telemetry_settings import (
    INSTALL_HINT,
    TelemetrySettings,
    durable_settings,
    new_tracer_provider,
    otel_available,
)
from agentflow.runtime.telemetry_spans import _ROUND, SpanTree, _attr, _json, _ns
from agentflow.runtime.where import outlined_call
from agentflow.runtime.where import tool_label as _short_tool  # `read_file`, as the .flow has it

#: ``TelemetrySettings`` is defined in :mod:`agentflow.runtime.telemetry_settings` and exported
#: here too: a host builds a sink with both (docs/observability.md)
__all__ = ["OtelSink", "RunSinks", "TelemetrySettings"]

_SOURCE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+)$")
_ITEM = re.compile(r"^do\.(\d+)$")
_LOOP_ROUND = re.compile(r"^round\.(\d+)$")  # a `loop`'s round (1-based): its body's step
#: the control steps (docs/spec/PLAN_IR.md §5) and ``plan__*`` calls: CHAIN spans; every
#: other step but ``agent`` calls a tool (TOOL)
_CONTROL = CONTROL_STEPS


def _process_stopping() -> bool:
    """True while the running asyncio task is being cancelled: the process stops the run
    (Ctrl-C, SIGTERM), which a durable run survives, rather than the run ending."""

    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0


class OtelSink(SpanTree):
    """An event sink exporting each run as a tree of OpenTelemetry spans (module docstring).

    Build it with ``OtelSink(settings)`` (its own TracerProvider with a batching OTLP/HTTP
    exporter, shut down — i.e. flushed — by :meth:`close`, which the run calls at its end), or
    ``OtelSink(settings, tracer_provider=provider)`` to use a host's provider (not shut down:
    :meth:`close` only flushes it; tests pass one with an in-memory exporter).

    Raises ConfigError when the OpenTelemetry packages are not installed.
    """

    def __init__(self, settings: TelemetrySettings | None = None, *, tracer_provider: Any = None):
        if not otel_available():
            raise ConfigError(INSTALL_HINT)
        super().__init__(settings, tracer_provider=tracer_provider)

    # ------------------------------------------------------------------ events

    def handle(self, event: Any) -> None:
        """Sink protocol: one event → span starts, ends, attributes or span events."""
        with self._lock:
            if self._closed:
                return
            method = getattr(self, "_on_" + event.kind, None)
            if method is not None:
                data = event.data or {}
                self._event_stage = str(data["stage"]) if data.get("stage") else None
                method(event, data)

    def _on_run_started(self, event: Any, data: dict[str, Any]) -> None:
        attrs: dict[str, Any] = {
            "agentflow.plan": data.get("plan"),
            "agentflow.file": data.get("file"),
            "openinference.span.kind": G.CHAIN,
        }
        self._content(attrs, "agentflow.run.input", data.get("input"))
        self._io(attrs, "input", data.get("input"))
        if not event.stack[1:] and self._durable is not None and self._run is not None:
            if not self._run_seen:  # the durable run span, opened by durable_run()
                self._run_seen = True
                self._run.span.set_attributes({k: _attr(v) for k, v in attrs.items() if v})
            return
        if event.stack[1:] or self._run is not None:
            return  # a nested run (plan_and_execute's sub-run) stays inside the outer tree
        self._run = self._start("run", f"run {data.get('plan', '')}", None, event.time, attrs)
        trace_id = self._run.span.get_span_context().trace_id
        self._conversation = f"{trace_id:032x}"
        self._run.span.set_attributes(self._session())

    def _on_run_finished(self, event: Any, data: dict[str, Any]) -> None:
        if event.stack[1:] or self._run is None:
            return
        if self._durable is not None and _process_stopping():
            # this process stops; the run goes on in the next (flowc resume): the spans whose
            # ids are pinned (run, stage) are left to the process that ends them
            self._stage = None
            self._drop_open(event.time)
            self._run = None
            return
        self._close_stage(event.time)
        for path in list(self._rounds):
            self._end_round(path, event.time)
        for path in list(self._open):  # anything left open (cancelled) ends with the run
            for entry in reversed(self._open.pop(path)):
                self._end(entry, event.time)
        run = self._run
        span = run.span
        span.set_attribute("agentflow.run.status", str(data.get("status", "")))
        usage = _as_dict(data.get("usage"))
        for key in ("inferences", "input_tokens", "output_tokens"):
            if isinstance(usage.get(key), int):
                span.set_attribute(f"agentflow.usage.{key}", usage[key])
        if isinstance(usage.get("cost"), int | float):
            span.set_attribute("agentflow.cost", float(usage["cost"]))
        if data.get("status") in ("error", "aborted", "cancelled"):
            self._error(span, data.get("error"))
        else:
            attrs: dict[str, Any] = {}
            self._content(attrs, "agentflow.run.output", data.get("output"))
            self._io(attrs, "output", data.get("output"))
            span.set_attributes({k: _attr(v) for k, v in attrs.items() if v is not None})
        self._end(run, event.time)
        self._run = None

    def _on_step_started(self, event: Any, data: dict[str, Any]) -> None:
        path = event.path
        tool = str(data.get("tool_name") or "")
        stage = data.get("stage")
        top = "/" not in path and not event.stack[1:]
        if top:
            current = self._stage[0] if self._stage is not None else None
            if stage != current:
                self._close_stage(event.time)
                if stage:
                    entry = self._start(
                        "stage",
                        f"stage {stage}",
                        self._run,
                        event.time,
                        {"agentflow.stage": stage, "openinference.span.kind": G.CHAIN},
                        ids=self._pin("stage", str(stage)),
                    )
                    self._stage = (str(stage), entry)
        parent = self._stage[1] if top and self._stage is not None else self._parent(path)
        attrs: dict[str, Any] = {
            "agentflow.step.path": path,
            "agentflow.step.id": data.get("id"),
            "agentflow.step.tool": tool,
            "agentflow.stage": stage,
            "agentflow.plan.stack": "/".join(event.stack) or None,
            # the step in the .flow's terms: `audits › item 3 › agent(auditor)`, item index
            "agentflow.step.label": data.get("label"),
            "agentflow.item": data.get("item"),
        }
        source = data.get("source")
        if source:
            attrs["agentflow.source"] = str(source)
            m = _SOURCE.match(str(source))
            if m:
                attrs["code.file.path"] = m.group("file")
                attrs["code.line.number"] = int(m.group("line"))
                attrs["code.column.number"] = int(m.group("column"))
        last = path.rsplit("/", 1)[-1]
        item = _ITEM.match(last)
        if item:
            attrs["agentflow.map.index"] = int(item.group(1))
        loop_round = _LOOP_ROUND.match(last)
        if loop_round:
            attrs["agentflow.loop.round"] = int(loop_round.group(1))
        inp = _as_dict(data.get("input"))
        if tool == "sleep":  # what it waits and when it wakes (not content: always)
            attrs.update(sleep_attributes(inp))
        name = G.step_span_name(tool, path, data, inp.get("agent"))
        chain = tool in _CONTROL or tool.startswith("plan__")
        attrs["openinference.span.kind"] = G.CHAIN if chain else G.TOOL
        if not chain and tool != "agent":
            attrs["tool.name"] = _short_tool(tool)
        if tool == "agent":
            label = inp.get("agent")
            if label:
                self._agents[path] = str(label)
            attrs["openinference.span.kind"] = G.AGENT
            attrs["gen_ai.operation.name"] = "invoke_agent"
            attrs["gen_ai.agent.name"] = label
            attrs["agent.name"] = label
            attrs["gen_ai.agent.call.id"] = self._call_of(path)
            # the model's name arrives with the first model call; until then the role
            attrs["agentflow.agent.role"] = inp.get("model") or "chat"
            attrs.update(self._session())
            attrs["agentflow.agent.tools"] = [str(t) for t in inp.get("tools") or []] or None
            attrs["agentflow.agent.max_iterations"] = inp.get("max_iterations")
            if self.settings.capture_content:
                if inp.get("system_prompt"):
                    attrs["gen_ai.system_instructions"] = self._text(
                        [{"type": "text", "content": inp["system_prompt"]}]
                    )
                task = str(inp.get("prompt") or "")
                if inp.get("input") is not None:
                    task += "\n\nInput (JSON):\n" + _json(inp["input"])
                attrs["gen_ai.input.messages"] = self._text(
                    [{"role": "user", "parts": [{"type": "text", "content": task}]}]
                )
                asked = {"task": inp.get("prompt"), "input": inp.get("input")}
                self._io(attrs, "input", {k: v for k, v in asked.items() if v is not None})
        elif tool == "map":
            attrs["agentflow.map.items"] = started_items(data)
        if data.get("input_preview"):  # the input attributes hold a preview, not the input
            attrs["agentflow.step.input_preview"] = True
        self._content(attrs, "agentflow.step.input", data.get("input"))
        if tool != "agent":
            self._io(attrs, "input", data.get("input"))
        self._push(
            path, self._start("step", name, parent, event.time, attrs, ids=self._pin("step", path))
        )

    def _on_step_finished(self, event: Any, data: dict[str, Any]) -> None:
        path = event.path
        self._end_round(path, event.time)
        entry = self._pop(path, "step")
        if entry is None:
            return
        span = entry.span
        if entry.lazy:  # opened from a child's event: its name and tool are known now
            tool = str(data.get("tool_name") or "")
            agent = self._agents.get(path) or data.get("agent")
            span.update_name(G.step_span_name(tool, path, data, agent))
            span.set_attribute("agentflow.step.tool", tool)
            if data.get("label"):
                span.set_attribute("agentflow.step.label", str(data["label"]))
        usage = _as_dict(data.get("usage"))
        for key in ("inferences", "input_tokens", "output_tokens"):
            if isinstance(usage.get(key), int):
                span.set_attribute(f"agentflow.usage.{key}", usage[key])
                if key != "inferences" and data.get("tool_name") == "agent":
                    # the agent's total, under the name that tools summing the chat spans'
                    # gen_ai.usage.* do not count twice (Pydantic AI's)
                    span.set_attribute(f"gen_ai.aggregated_usage.{key}", usage[key])
        if isinstance(usage.get("cost"), int | float):
            span.set_attribute("agentflow.cost", float(usage["cost"]))
        if isinstance(data.get("elapsed_ms"), int | float):
            span.set_attribute("agentflow.elapsed_ms", data["elapsed_ms"])
        if data.get("error"):
            span.set_attribute("agentflow.step.status", "error")
            self._error(span, data["error"])
        elif data.get("aborted"):
            span.set_attribute("agentflow.step.status", "aborted")
            self._error(span, {"code": Code.ABORTED, "message": data["aborted"]})
        else:
            span.set_attribute("agentflow.step.status", "exited" if data.get("exit") else "ok")
            attrs: dict[str, Any] = {}
            self._content(attrs, "agentflow.step.output", data.get("result"))
            result = data.get("result")
            if isinstance(result, dict) and isinstance(result.get("iterations"), int):
                attrs["agentflow.agent.rounds"] = result["iterations"]
                self._io(attrs, "output", result.get("output"))  # the agent's answer
            else:
                self._io(attrs, "output", result)
            span.set_attributes({k: _attr(v) for k, v in attrs.items() if v is not None})
        self._end(entry, event.time)
        self._touch(path, event.time)

    def _on_tool_started(self, event: Any, data: dict[str, Any]) -> None:
        path = event.path
        name = str(data.get("tool_name") or path.rsplit("/", 1)[-1])
        if outlined_call(name, data.get("label")) is not None:
            return  # a map item's or loop round's sub-plan call: its step's span is the call
        short = _short_tool(name)
        parent = self._parent(path, same=True)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": short,
            "gen_ai.tool.type": "function",
            "agentflow.tool.name": name,
            "agentflow.step.path": path,
            "openinference.span.kind": G.TOOL,
            "tool.name": short,
            **self._session(),
        }
        parts = path.split("/")
        if len(parts) >= 2 and _ROUND.match(parts[-2]):
            attrs["agentflow.agent.round"] = int(_ROUND.match(parts[-2]).group(1))  # type: ignore[union-attr]
            step_path = "/".join(parts[:-2])
            attrs["gen_ai.agent.name"] = self._agents.get(step_path)
            attrs["gen_ai.agent.call.id"] = self._call_of(step_path)
            attrs["gen_ai.tool.call.id"] = self._chats.call_id("/".join(parts[:-1]), name)
        self._content(attrs, "gen_ai.tool.call.arguments", data.get("input"))
        self._content(attrs, "tool.parameters", data.get("input"))
        self._io(attrs, "input", data.get("input"))
        self._push(path, self._start("tool", f"execute_tool {short}", parent, event.time, attrs))

    def _on_tool_finished(self, event: Any, data: dict[str, Any]) -> None:
        entry = self._pop(event.path, "tool")
        if entry is None:
            return
        span = entry.span
        if isinstance(data.get("elapsed_ms"), int | float):
            span.set_attribute("agentflow.elapsed_ms", data["elapsed_ms"])
        if data.get("skipped"):
            span.set_attribute("agentflow.tool.skipped", True)
        if data.get("error"):
            self._error(span, data["error"])
        else:
            attrs: dict[str, Any] = {}
            self._content(attrs, "gen_ai.tool.call.result", data.get("result"))
            self._io(attrs, "output", data.get("result"))
            span.set_attributes({k: _attr(v) for k, v in attrs.items() if v is not None})
        self._end(entry, event.time)
        self._touch(event.path, event.time)

    def _on_model_call(self, event: Any, data: dict[str, Any]) -> None:
        path = event.path
        latency = data.get("latency_ms")
        end = event.time
        start = end - (latency / 1000 if isinstance(latency, int | float) else 0.0)
        number = data.get("round")
        parent = (
            self._round(path, number, start)
            if isinstance(number, int) and not path.startswith("ask/")
            else self._parent(path, same=True)
        )
        model = str(data.get("model") or "")
        reply = _as_dict(data.get("reply"))
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": data.get("api") or data.get("provider"),
            "gen_ai.request.model": model,
            "gen_ai.response.model": model,
            "gen_ai.usage.input_tokens": data.get("input_tokens"),
            "gen_ai.usage.output_tokens": data.get("output_tokens"),
            "gen_ai.response.finish_reasons": [str(data["finish_reason"])]
            if data.get("finish_reason")
            else None,
            "agentflow.model.role": data.get("role"),
            "agentflow.model.provider": data.get("provider"),
            "agentflow.agent.round": number if isinstance(number, int) else None,
            "agentflow.step.path": path,
            "agentflow.model.reused": True if data.get("reused") else None,
            "agentflow.cost": float(data["cost"])
            if isinstance(data.get("cost"), int | float)
            else None,
            "gen_ai.system": data.get("api") or data.get("provider"),  # deprecated; still read
            "gen_ai.agent.name": self._agents.get(path),
            "gen_ai.agent.call.id": self._call_of(path) if path in self._agents else None,
            "openinference.span.kind": G.LLM,
            **G.chat_metadata(data),
            **self._session(),
        }
        messages, offered = self._chats.told(path, data, self._text)
        attrs.update(offered)
        if self.settings.capture_content and (reply or messages):
            attrs.update(
                G.chat_content(
                    messages, reply, data.get("finish_reason"), text=self._text, dumps=_json
                )
            )
        if isinstance(number, int):
            self._chats.calls(f"{path}/agent.{number}", reply)
        self._agent_model(path, model)
        entry = self._start(
            "model",
            f"chat {model}".strip(),
            parent,
            start,
            attrs,
            span_kind=self._trace.SpanKind.CLIENT,
        )
        self._end(entry, end)
        if parent is not None:
            parent.end = max(parent.end, end)
        self._touch(path, end)

    def _agent_model(self, path: str, model: str) -> None:
        """The agent step at ``path`` learns its model's real name from its first model call
        (``agentflow.agent.model``, ``gen_ai.request.model``; its input names only the role)."""
        for entry in self._open.get(path, ()):
            if entry.kind == "step" and not entry.model and model:
                entry.model = model
                entry.span.set_attributes(
                    {"agentflow.agent.model": model, "gen_ai.request.model": model}
                )

    def _span_event(self, event: Any, name: str, attrs: dict[str, Any]) -> None:
        target = self._parent(event.path, same=True) if event.path else self._run
        if target is None:
            return
        clean = {k: _attr(v) for k, v in attrs.items() if v is not None}
        target.span.add_event(name, clean, timestamp=_ns(event.time))

    def _on_retry(self, event: Any, data: dict[str, Any]) -> None:
        self._span_event(
            event,
            "retry",
            {
                "agentflow.retry.attempt": data.get("attempt"),
                "error.type": data.get("code") or data.get("kind"),
                "agentflow.retry.delay_ms": data.get("delay_ms"),
                "agentflow.retry.retry_after_ms": data.get("retry_after_ms"),
                "agentflow.retry.capped": data.get("capped"),
                "agentflow.retry.model": data.get("model"),
            },
        )

    def _on_warning(self, event: Any, data: dict[str, Any]) -> None:
        self._span_event(
            event,
            "warning",
            {
                "message": self._text(str(data.get("message", ""))),
                "agentflow.agent.round": data.get("round"),
            },
        )

    def _on_ask(self, event: Any, data: dict[str, Any]) -> None:
        attrs: dict[str, Any] = {"agentflow.ask.answered": bool(data.get("answered"))}
        self._content(attrs, "agentflow.ask.question", data.get("question"))
        self._content(attrs, "agentflow.ask.answer", data.get("answer"))
        self._span_event(event, "ask", attrs)


class RunSinks:
    """The :class:`OtelSink` of each durable run a process resumes or works on (``flowc
    resume``, ``flowc worker``): :meth:`for_run` makes one per run (a worker's runs must not
    share one sink's span bookkeeping), all on one tracer provider that :meth:`close` shuts
    down (flushing what is left).  Exports every
    :data:`~agentflow.runtime.telemetry_settings.DURABLE_EXPORT_DELAY_S` seconds unless
    ``OTEL_BSP_SCHEDULE_DELAY`` or ``settings.export_delay`` says otherwise."""

    def __init__(self, settings: TelemetrySettings):
        self.settings = durable_settings(settings)
        self._provider: Any = None
        self._sinks: list[OtelSink] = []

    def for_run(self) -> OtelSink:
        """A new sink for one run, on the shared provider.  Raises ConfigError when the
        OpenTelemetry packages are not installed."""
        if not otel_available():
            raise ConfigError(INSTALL_HINT)
        if self._provider is None:
            self._provider = new_tracer_provider(self.settings)
        sink = OtelSink(self.settings, tracer_provider=self._provider)
        self._sinks.append(sink)
        return sink

    def close(self) -> None:
        """Close every sink made here, then shut the provider down (its last export)."""
        for sink in self._sinks:
            sink.close()
        self._sinks.clear()
        if self._provider is not None:
            self._provider.shutdown()
            self._provider = None


def _as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping (an event field), else an empty one."""
    return value if isinstance(value, dict) else {}
