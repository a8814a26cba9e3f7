"""The span tree of an :class:`~agentflow.runtime.telemetry.OtelSink`: its open spans by step
path (the run, the stage, steps, agent rounds, tool calls), started and ended under the right
parent; a durable run's pinned ids (the same run, stage, step and round spans in every process
that works on the run) and the spans a resumed process opens for starts it replayed; attribute
values (redacted, capped, as OpenTelemetry takes them); the sink's end (flush, the one-line
report of a failed export).  :class:`SpanTree` holds the bookkeeping and the sink's
``telemetry.py`` the event handlers that call it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentflow.core.redaction import MIN_RUN, SECRETS, register_secrets
from agentflow.core.text import clean_text, escape_surrogates, finite_dumps, visible
from agentflow.core.version import __version__
from agentflow.runtime import genai_attributes as G
from agentflow.runtime.interrupt import until_cut
from agentflow.runtime.telemetry_settings import TelemetrySettings, new_tracer_provider

__all__ = ["MAX_ATTRIBUTE_CHARS", "REDACTED", "SpanTree"]

#: the longest string attribute recorded (characters); longer ones end with a marker
MAX_ATTRIBUTE_CHARS = 32_000
REDACTED = "[redacted]"
_NOT_A_STEP = re.compile(r"^(item|judge)\.\d+$")  # conditions' model calls, not step spans
_ROUND = re.compile(r"^agent\.(\d+)$")


class _PinnedIds:
    """An OpenTelemetry ``IdGenerator`` that hands out given ids once (the ids of a durable
    run's run and stage spans, the same in every process), else its inner generator's."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.trace_id: int | None = None
        self.span_id: int | None = None

    def generate_span_id(self) -> int:
        value, self.span_id = self.span_id, None
        return value if value is not None else int(self.inner.generate_span_id())

    def generate_trace_id(self) -> int:
        value, self.trace_id = self.trace_id, None
        return value if value is not None else int(self.inner.generate_trace_id())

    def is_trace_id_random(self) -> bool:
        return self.trace_id is None and bool(self.inner.is_trace_id_random())


class _Redactor:
    """The redaction layer (:mod:`agentflow.core.redaction`: every run of 8 or more characters
    of any secret of the process) with this sink's own secrets added, as ``[redacted]``; secrets
    of 4–7 characters, too short for the run rule, are replaced where they occur whole."""

    def __init__(self, secrets: Iterable[str]):

        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        register_secrets(self.secrets)
        self.short = tuple(s for s in self.secrets if len(s.strip()) < MIN_RUN)

    def text(self, value: str) -> str:

        value = clean_text(value)  # an attribute is UTF-8 on the wire: no lone surrogate
        value = SECRETS.redact(value, mask=REDACTED)  # before the length cap below
        for secret in self.short:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if len(value) > MAX_ATTRIBUTE_CHARS:
            value = value[:MAX_ATTRIBUTE_CHARS] + f"… [{len(value)} characters, truncated]"
        return value


#: the system's words for why a connection failed, in a urllib3 message
#: (``… Failed to establish a new connection: [Errno 111] Connection refused")``)
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^\"')\]]+)")


def _export_cause(messages: list[str]) -> str:
    """What a failed export says: the SDK's last message, which after retries is only "Failed
    to export spans batch due to timeout, max retries or shutdown.", with the system's reason
    an earlier attempt's message gave (``Connection refused``, ``Name or service not known``)
    put first — the cause the user can act on."""
    last = messages[-1] if messages else ""
    for message in reversed(messages):
        found = _ERRNO.search(message)
        if found is not None:
            return f"{found.group(1).strip()} ({last.rstrip('.')})"
    return last


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    return escape_surrogates(
        finite_dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    )


def _attr(value: Any) -> Any:
    """``value`` as an OpenTelemetry attribute value: a str/bool/int/float, a list of str, or
    (anything else) its JSON text."""
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return _json(value)


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


@dataclass
class _Open:
    """One open span: what it is (run, stage, step, tool, round), the span, its latest known
    end (Unix seconds: the end of its last finished child)."""

    kind: str
    span: Any
    end: float = 0.0
    round: int = 0
    ended: bool = False
    #: its id is pinned (a durable run's run, stage, step or round span: the same in every
    #: process), so only the process that ends it exports it; ``lazy``: opened here after its
    #: start was replayed (its first event in this process came from a child)
    pinned: bool = False
    lazy: bool = False
    #: an agent step's model, once its first model call named it
    model: str = ""


class _ExportProblems(logging.Handler):
    """Collects the OpenTelemetry SDK's export log records (they would otherwise reach stderr
    with a traceback); the sink reports them in one line when it closes (:func:`_export_cause`)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        message = text.splitlines()[0] if text else record.levelname
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            first = str(exc).splitlines()[0] if str(exc) else ""
            message = f"{message}: {type(exc).__name__}: {first}"
        self.messages = [*self.messages[-4:], message]


class SpanTree:
    """The span bookkeeping of an :class:`~agentflow.runtime.telemetry.OtelSink` (its base
    class): the tracer and its provider, the open spans by step path, the stage, the agent
    rounds, a durable run's pinned ids; :meth:`durable_run`, :meth:`export_now`,
    :meth:`close`.  Needs the OpenTelemetry packages (the sink checks they are installed)."""

    def __init__(self, settings: TelemetrySettings | None = None, *, tracer_provider: Any = None):
        from opentelemetry import trace

        self.settings = settings or TelemetrySettings()
        self._trace = trace
        self._redact = _Redactor(self.settings.secrets)
        self._lock = threading.RLock()
        self._problems = _ExportProblems()
        self._loggers = [logging.getLogger(n) for n in ("opentelemetry", "urllib3")]
        self._saved = [(lg.propagate, lg.level) for lg in self._loggers]
        for lg in self._loggers:
            lg.addHandler(self._problems)
            lg.propagate = False
        self._owned = tracer_provider is None
        if tracer_provider is None:
            tracer_provider = new_tracer_provider(self.settings)
        self.provider = tracer_provider
        self.tracer = tracer_provider.get_tracer("agentflow", __version__)
        #: step path → open spans at that path, outermost first (a tool step: step, then tool)
        self._open: dict[str, list[_Open]] = {}
        self._run: _Open | None = None
        #: agent step path → its open round span (also open at ``{path}/agent.{N}``)
        self._rounds: dict[str, _Open] = {}
        self._stage: tuple[str, _Open] | None = None
        self._closed = False
        #: a durable run's trace identity (:meth:`durable_run`): its run and stage spans have
        #: the same ids in every process, and only the process that ends them exports them
        self._durable: dict[str, Any] | None = None
        self._attempt = 0
        self._pinned: set[tuple[str, str]] = set()
        self._run_seen = False
        self._event_stage: str | None = None  # the `stage` of the event being handled
        #: the run's conversation (``gen_ai.conversation.id``, ``session.id``): a durable
        #: run's id, else the run's trace id
        self._conversation: str | None = None
        #: what the model calls told: messages, tools offered, tool call ids
        self._chats = G.Conversations()
        #: agent step path → the agent's name (``gen_ai.agent.name`` of its chat/tool spans)
        self._agents: dict[str, str] = {}

    # ------------------------------------------------------------------ attribute helpers

    def _text(self, value: Any) -> str:
        return self._redact.text(value if isinstance(value, str) else _json(value))

    def _content(self, attrs: dict[str, Any], key: str, value: Any) -> None:
        if self.settings.capture_content and value is not None:
            attrs[key] = self._text(value)

    def _error(self, span: Any, error: Any) -> None:
        if not isinstance(error, dict):
            return
        code = str(error.get("code") or "error")
        message = self._text(str(error.get("message") or code))
        span.set_attribute("error.type", code)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, f"{code}: {message}"))

    def _call_of(self, path: str) -> str | None:
        """The id of one run of the agent step at ``path`` (``gen_ai.agent.call.id``)."""
        return f"{self._conversation}/{path}" if self._conversation else None

    def _session(self) -> dict[str, str]:
        """The run's conversation id as the GenAI conventions and OpenInference name it."""
        if not self._conversation:
            return {}
        return {"gen_ai.conversation.id": self._conversation, "session.id": self._conversation}

    def _io(self, attrs: dict[str, Any], key: str, value: Any) -> None:
        """OpenInference's ``input.value`` / ``output.value`` of a span (with content capture)."""
        if self.settings.capture_content and value is not None:
            attrs.update(G.io_value(key, value, self._text))

    # ------------------------------------------------------------------ span bookkeeping

    def _parent(self, path: str, *, same: bool = False, step: bool = False) -> _Open | None:
        """The innermost open span at ``path`` (when ``same``) or at its nearest ancestor path;
        the current stage or the run for a top-level path.  ``step``: ``path`` is a step's
        (an agent's model call), which a resumed durable run may have to open."""
        with self._lock:
            if same and self._open.get(path):
                return self._open[path][-1]
            parts = path.split("/") if path else []
            missing: list[str] = []
            if same and step and parts:
                missing.append(path)  # the agent step itself
            while parts:
                parts.pop()
                key = "/".join(parts)
                if key and self._open.get(key):
                    return self._reopen(self._open[key][-1], missing)
                if key:
                    missing.append(key)
            return self._reopen(None, missing)

    def _reopen(self, found: _Open | None, missing: list[str]) -> _Open | None:
        """``found`` (else the stage or run), after a durable run's process opened the spans
        of ``missing`` (paths, innermost first) beneath it: steps and rounds whose start was
        replayed from the record, so that spans exported by an earlier process under their
        pinned ids find their parent (see :meth:`durable_run`)."""

        if self._durable is None or self._run is None or self._run_seen:
            # the process that started the run saw every start: nothing to open
            return found if found is not None else self._run
        parent = found
        for key in reversed(missing):
            last = key.rsplit("/", 1)[-1]
            if _NOT_A_STEP.match(last):
                continue
            m = _ROUND.match(last)
            now = time.time()
            if m and "/" in key:
                parent = self._round(key.rsplit("/", 1)[0], int(m.group(1)), now)
                parent.lazy = True
                continue
            if parent is None and "/" not in key:
                stage = self._event_stage
                if stage and (self._stage is None or self._stage[0] != stage):
                    self._close_stage(now)
                    opened = self._start(
                        "stage", f"stage {stage}", self._run, now,
                        {"agentflow.stage": stage, "openinference.span.kind": G.CHAIN},
                        ids=self._pin("stage", stage),
                    )  # fmt: skip
                    self._stage = (stage, opened)
                parent = self._stage[1] if self._stage is not None else self._run
            elif parent is None:
                parent = self._run
            attrs = {"agentflow.step.path": key, "openinference.span.kind": G.CHAIN}
            entry = self._start(
                "step", f"step {key}", parent, now, attrs, ids=self._pin("step", key)
            )
            entry.lazy = True
            self._push(key, entry)
            parent = entry
        return parent if parent is not None else self._run

    def _start(
        self,
        kind: str,
        name: str,
        parent: _Open | None,
        start: float,
        attrs: dict[str, Any],
        *,
        span_kind: Any = None,
        ids: tuple[int | None, int] | None = None,
    ) -> _Open:
        """Start a span under ``parent`` (None: the root context); ``ids``: the (trace id,
        span id) it must have (a durable run's pinned spans; a None trace id: its parent's)."""
        trace = self._trace
        if parent is not None:
            ctx = trace.set_span_in_context(parent.span)
        else:
            ctx = self._root_context(run=kind == "run")
        if self._attempt:
            attrs = {**attrs, "agentflow.resume.attempt": self._attempt}
        pinned = getattr(self.tracer, "id_generator", None) if ids is not None else None
        if ids is not None and pinned is not None:
            pinned = self.tracer.id_generator = _PinnedIds(pinned)
            pinned.trace_id, pinned.span_id = ids
        try:
            span = self.tracer.start_span(
                name,
                context=ctx,
                kind=span_kind if span_kind is not None else trace.SpanKind.INTERNAL,
                attributes={k: _attr(v) for k, v in attrs.items() if v is not None},
                start_time=_ns(start),
            )
        finally:
            if pinned is not None:
                self.tracer.id_generator = pinned.inner
        return _Open(kind, span, start, pinned=ids is not None)

    def _root_context(self, *, run: bool = False) -> Any:
        """The context of a span without an open parent: for a durable run, the run span
        (pinned ids, possibly exported by another process) or, for the run span itself, the
        recorded parent (else none: never the host's current span); else the settings'
        ``traceparent``, else the caller's current context."""
        durable = self._durable
        if durable is not None:
            from opentelemetry import context as otel_context

            parent_id = durable.get("parent_span_id") if run else durable["span_id"]
            if not parent_id:
                return otel_context.Context()
            parent = self._trace.SpanContext(
                int(durable["trace_id"], 16),
                int(parent_id, 16),
                is_remote=True,
                trace_flags=self._trace.TraceFlags(self._trace.TraceFlags.SAMPLED),
            )
            return self._trace.set_span_in_context(
                self._trace.NonRecordingSpan(parent), otel_context.Context()
            )
        if not self.settings.traceparent:
            return None  # the caller's current context (a host's span), else a new trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        return TraceContextTextMapPropagator().extract({"traceparent": self.settings.traceparent})

    def durable_run(
        self,
        trace_ids: Mapping[str, Any],
        *,
        run_id: str,
        plan: str,
        started: float,
        attempt: int = 0,
    ) -> None:
        """Export durable run ``run_id`` (of plan ``plan``, started at ``started``, epoch
        seconds) into its recorded trace (``trace_ids``: :func:`durable_trace`'s).  The run
        span starts at once, with the ids of ``trace_ids`` and the run's own start, so the
        spans of every process that works on the run share one trace and one run span; it is
        exported only by the process that sees the run end (one that stops first drops it, as
        it drops the open stage spans, whose ids are pinned too).  ``attempt``: how many times
        the run was resumed (0: the process that started it); a resumed process marks its
        spans ``agentflow.resume.attempt`` and the run span with a ``resumed`` event."""

        with self._lock:
            if self._run is not None or self._closed:
                return
            self._durable = dict(trace_ids)
            self._attempt = max(0, int(attempt))
            self._conversation = run_id
            attrs = {
                "agentflow.plan": plan,
                "agentflow.durable.run_id": run_id,
                "openinference.span.kind": G.CHAIN,
                **self._session(),
            }
            self._run = self._start(
                "run",
                f"run {plan}",
                None,
                started,
                attrs,
                ids=(int(trace_ids["trace_id"], 16), int(trace_ids["span_id"], 16)),
            )
            if self._attempt:
                self._run.span.add_event(
                    "resumed",
                    {"agentflow.resume.attempt": self._attempt},
                    timestamp=_ns(time.time()),
                )

    def _pin(self, kind: str, key: str) -> tuple[int | None, int] | None:
        """The pinned span id of a durable run's stage, step or round ``key`` (derived from the
        run's trace identity: the same in every process), the first time it opens here; None
        (a random id) otherwise, and outside durable runs."""
        if self._durable is None or (kind, key) in self._pinned:
            return None

        self._pinned.add((kind, key))
        d = self._durable
        text = f"{d['trace_id']}|{d['span_id']}|{kind}|{key}"
        return None, int(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16], 16)

    def _end(self, entry: _Open, end: float) -> None:
        if entry.ended:
            return
        entry.ended = True
        entry.span.end(end_time=_ns(max(end, entry.end)))

    def _push(self, path: str, entry: _Open) -> None:
        self._open.setdefault(path, []).append(entry)

    def _pop(self, path: str, kind: str) -> _Open | None:
        stack = self._open.get(path) or []
        for i in range(len(stack) - 1, -1, -1):
            if stack[i].kind == kind:
                entry = stack.pop(i)
                if not stack:
                    self._open.pop(path, None)
                return entry
        return None

    def _touch(self, path: str, end: float) -> None:
        """A child under ``path`` ended at ``end``: the open spans above it end no earlier."""
        parts = path.split("/")
        while parts:
            for entry in self._open.get("/".join(parts), ()):
                entry.end = max(entry.end, end)
            parts.pop()
        if self._stage is not None:
            self._stage[1].end = max(self._stage[1].end, end)

    def _drop_open(self, now: float) -> None:
        """End the open spans of steps, rounds and tools, marked ``agentflow.stopped`` (their
        ids are random: the next process makes its own); the caller drops the pinned ones."""
        entries = [*self._rounds.values(), *(e for es in self._open.values() for e in es)]
        self._rounds.clear()
        self._open.clear()
        for entry in entries:
            if entry.pinned:  # the process that finishes it exports it
                entry.ended = True
            elif not entry.ended:
                entry.span.set_attribute("agentflow.stopped", True)
                self._end(entry, now)

    def _close_stage(self, now: float) -> None:
        if self._stage is not None:
            entry = self._stage[1]
            self._end(entry, entry.end or now)
            self._stage = None

    def _end_round(self, path: str, fallback: float) -> None:
        entry = self._rounds.pop(path, None)
        if entry is not None:
            self._open.pop(f"{path}/agent.{entry.round}", None)
            self._end(entry, entry.end or fallback)

    def _round(self, path: str, number: int, start: float) -> _Open:
        """The open span of agent round ``number`` at step ``path`` (ending an earlier one)."""
        current = self._rounds.get(path)
        if current is not None and current.round == number:
            return current
        self._end_round(path, start)
        parent = self._parent(path, same=True, step=True)
        entry = self._start(
            "round",
            f"agent turn {number}",  # not `round N`: a `loop`'s rounds are named so
            parent,
            start,
            {
                "agentflow.agent.round": number,
                "agentflow.step.path": path,
                "openinference.span.kind": G.CHAIN,
            },
            ids=self._pin("round", f"{path}/agent.{number}"),
        )
        entry.round = number
        self._rounds[path] = entry
        self._open[f"{path}/agent.{number}"] = [entry]  # the round's tool calls nest under it
        return entry

    # ------------------------------------------------------------------ end

    def export_now(self) -> None:
        """Export the spans ended so far now, not at the next batch (a worker calls it as each
        unit of a durable run ends, before the unit's result is recorded: a worker killed
        afterwards has lost none of that unit's spans).  Blocks up to the settings' timeout; a
        failed export is reported at :meth:`close`, never raised."""
        if self._closed:
            return
        with contextlib.suppress(Exception):
            self.provider.force_flush(int(self.settings.timeout * 1000))

    def close(self) -> None:
        """End any span still open, then flush (and shut down an owned provider: the batched
        spans are exported now, bounded by the settings' timeout). An export that failed is
        reported in one line on stderr, never with a traceback."""
        with self._lock:
            if self._closed:
                return
            self._closed = True

            now = time.time()
            if self._durable is not None:  # the run did not end here: see durable_run()
                self._stage = None
                self._drop_open(now)
                self._run = None
            for path in list(self._rounds):
                self._end_round(path, now)
            for path in list(self._open):
                for entry in reversed(self._open.pop(path)):
                    self._end(entry, now)
            self._close_stage(now)
            if self._run is not None:
                self._end(self._run, now)
                self._run = None
        try:
            provider, timeout_ms = self.provider, int(self.settings.timeout * 1000)
            cut = until_cut(
                provider.shutdown if self._owned else lambda: provider.force_flush(timeout_ms)
            )
        finally:
            for lg, (propagate, level) in zip(self._loggers, self._saved, strict=True):
                lg.removeHandler(self._problems)
                lg.propagate = propagate
                lg.setLevel(level)
        if cut is not None or self._problems.messages:
            why = f"cut short by {cut}; the spans not sent" if cut is not None else "failed: "
            last = _export_cause(self._problems.messages) if cut is None else ""
            print(
                f"agentflow: telemetry export to {self.settings.endpoint} {why}"
                f"{visible(_shorten(self._redact.text(last)))}",
                file=sys.stderr,
            )
