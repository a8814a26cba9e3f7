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
:func:`otel_available` tells whether they are installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentflow.core.redaction import MIN_RUN, SECRETS, register_secrets
from agentflow.core.text import clean_text, escape_surrogates, finite_dumps, visible
from agentflow.core.version import __version__
from agentflow.core.vocabulary import CONTROL_STEPS, Code, started_items
from agentflow.errors import ConfigError
from agentflow.runtime import genai_attributes as G
from agentflow.runtime.config import TelemetryConfig, check_base_url
from agentflow.runtime.events import sleep_attributes
from agentflow.runtime.interrupt import until_cut
from agentflow.runtime.where import outlined_call
from agentflow.runtime.where import tool_label as _short_tool  # `read_file`, as the .flow has it

__all__ = [
    "DURABLE_EXPORT_DELAY_S",
    "OtelSink",
    "RunSinks",
    "TelemetrySettings",
    "durable_settings",
    "durable_trace",
    "otel_available",
    "otlp_traces_url",
    "settings_for",
    "settings_from_config",
]

#: the longest string attribute recorded (characters); longer ones end with a marker
MAX_ATTRIBUTE_CHARS = 32_000
REDACTED = "[redacted]"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SOURCE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+)$")
_ITEM = re.compile(r"^do\.(\d+)$")
_LOOP_ROUND = re.compile(r"^round\.(\d+)$")  # a `loop`'s round (1-based): its body's step
_NOT_A_STEP = re.compile(r"^(item|judge)\.\d+$")  # conditions' model calls, not step spans
_ROUND = re.compile(r"^agent\.(\d+)$")
#: the control steps (docs/spec/PLAN_IR.md §5) and ``plan__*`` calls: CHAIN spans; every
#: other step but ``agent`` calls a tool (TOOL)
_CONTROL = CONTROL_STEPS


_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
INSTALL_HINT = "OpenTelemetry export needs the otel extra: pip install 'agentflow[otel]'"
#: seconds between two batched exports of a durable run's spans (the SDK's default is 5 s): a
#: process killed mid-run loses at most about this much of its finished spans
DURABLE_EXPORT_DELAY_S = 1.0


def otel_available() -> bool:
    """True when the OpenTelemetry SDK and the OTLP/HTTP exporter are installed (without
    importing them)."""

    try:
        return (
            importlib.util.find_spec("opentelemetry.sdk.trace") is not None
            and importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
        )
    except ModuleNotFoundError:
        return False


def otlp_traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of ``endpoint``: a base URL (no path, or ``/``) gets
    ``/v1/traces`` appended (``http://127.0.0.1:4318`` → ``http://127.0.0.1:4318/v1/traces``);
    a URL with a path is used as is."""
    parts = urlsplit(endpoint)
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


@dataclass
class TelemetrySettings:
    """What an :class:`OtelSink` exports and where.

    ``endpoint``: the OTLP/HTTP traces URL (see :func:`otlp_traces_url`); ``headers``: sent with
    each export (already expanded); ``capture_content``: record prompts, replies, tool arguments
    and results, step inputs and outputs; ``service_name``: the ``service.name`` resource
    attribute; ``timeout``: seconds per export; ``secrets``: strings replaced by ``[redacted]``
    in every attribute (API keys, expanded ``${VAR}`` values); ``traceparent``: a W3C
    ``traceparent`` the run span continues (default: the ``TRACEPARENT`` environment variable);
    ``export_delay``: seconds between two batched exports (None: ``OTEL_BSP_SCHEDULE_DELAY``,
    else the SDK's 5 s; durable runs use :data:`DURABLE_EXPORT_DELAY_S` unless that variable
    is set).
    """

    endpoint: str = "http://127.0.0.1:4318/v1/traces"
    headers: dict[str, str] = field(default_factory=dict)
    capture_content: bool = False
    service_name: str = "agentflow"
    timeout: float = 10.0
    secrets: tuple[str, ...] = ()
    traceparent: str | None = None
    export_delay: float | None = None


def _expand(value: str, env: Mapping[str, str], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in env:
            raise ConfigError(f"{where}: environment variable {m.group(1)} is not set")
        return env[m.group(1)]

    return _VAR.sub(sub, value)


def config_secrets(config: Any) -> list[str]:
    """Every secret a configuration can reach: the API keys of its providers (declared and
    implicit) and the values of the ``${VAR}`` references in its MCP servers' ``env`` and
    ``headers``, in providers' ``headers`` and in ``[telemetry] headers``. Values shorter than
    4 characters are left out (redacting them would garble ordinary text)."""
    env = getattr(config, "env", None) or {}
    found: list[str] = []
    texts: list[str] = []
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        if env.get(name):
            found.append(env[name])
    for provider in (getattr(config, "providers", None) or {}).values():
        for var in (provider.api_key_env, getattr(provider, "entra_token_env", None)):
            if var and env.get(var):
                found.append(env[var])
        texts += list(getattr(provider, "headers", {}).values())
    for server in (getattr(config, "mcp", None) or {}).values():
        texts += list(server.env.values()) + list(server.headers.values())
    telemetry = getattr(config, "telemetry", None)
    if telemetry is not None:
        texts += list(telemetry.headers.values())
    for text in texts:
        for m in _VAR.finditer(text):
            if env.get(m.group(1)):
                found.append(env[m.group(1)])
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def settings_from_config(
    config: Any, endpoint: str | None = None, *, env: Mapping[str, str] | None = None
) -> TelemetrySettings:
    """Settings for a run with ``config`` (its ``[telemetry]`` table) and an optional endpoint
    override (``flowc run --otel ENDPOINT``). With neither an override nor ``[telemetry]
    endpoint``: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, then ``OTEL_EXPORTER_OTLP_ENDPOINT``,
    then ``http://127.0.0.1:4318`` (an OpenTelemetry Collector's, Jaeger's default).

    Raises ConfigError for a header's unset ``${VAR}`` or a bad endpoint.
    """

    env = dict(os.environ) if env is None else dict(env)
    table = getattr(config, "telemetry", None) or TelemetryConfig()
    where = f"{config.where()}: [telemetry]" if hasattr(config, "where") else "[telemetry]"
    chosen = (
        endpoint
        or table.endpoint
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or "http://127.0.0.1:4318"
    )
    try:
        check_base_url(chosen)
    except ValueError as exc:
        raise ConfigError(f"telemetry: {str(exc).replace('base_url', 'endpoint')}") from None
    headers = {k: _expand(v, env, f"{where} headers.{k}") for k, v in table.headers.items()}
    return TelemetrySettings(
        endpoint=otlp_traces_url(chosen),
        headers=headers,
        capture_content=table.capture_content,
        service_name=table.service_name,
        timeout=table.timeout,
        secrets=tuple(config_secrets(config)) if config is not None else (),
        traceparent=env.get("TRACEPARENT") or None,
    )


def settings_for(config: Any, telemetry: bool | str | None) -> TelemetrySettings | None:
    """The export settings of a run (or a resume, a worker) under ``config`` for the
    ``telemetry`` choice of ``flowc run --otel`` / :func:`agentflow.api.run`: an endpoint URL or
    ``True`` (export), ``False`` (do not), None (export when ``[telemetry]`` is active); None
    when nothing is exported.  Raises ConfigError as :func:`settings_from_config`."""
    table = getattr(config, "telemetry", None)
    if not telemetry and not (telemetry is None and table is not None and table.active):
        return None
    return settings_from_config(config, telemetry if isinstance(telemetry, str) else None)


def durable_settings(settings: TelemetrySettings) -> TelemetrySettings:
    """``settings`` for a durable run: exported every :data:`DURABLE_EXPORT_DELAY_S` seconds
    unless ``export_delay`` or ``OTEL_BSP_SCHEDULE_DELAY`` says otherwise (a process killed
    mid-run loses the spans not exported yet)."""
    if settings.export_delay is None and "OTEL_BSP_SCHEDULE_DELAY" not in os.environ:
        settings.export_delay = DURABLE_EXPORT_DELAY_S
    return settings


def durable_trace(
    run_id: str, started: float, traceparent: str | None = None
) -> dict[str, str | None]:
    """The trace identity of durable run ``run_id`` (started at ``started``, epoch seconds),
    recorded with the run so every process that works on it exports into one trace:
    ``{"trace_id": 32 hex digits, "span_id": the run span's 16, "parent_span_id": 16 or
    None}``.  The trace (and parent) of a valid W3C ``traceparent`` when one is given, else a
    trace id derived from the run id and its start; the run span's id is derived the same way.
    Needs no OpenTelemetry package."""

    seed = hashlib.sha256(f"agentflow-run|{run_id}|{started!r}".encode()).hexdigest()
    trace_id, span_id, parent = seed[:32], seed[32:48], None
    m = _TRACEPARENT.match((traceparent or "").strip().lower())
    if m and int(m.group(1), 16) and int(m.group(2), 16):
        trace_id, parent = m.group(1), m.group(2)
    return {"trace_id": trace_id, "span_id": span_id, "parent_span_id": parent}


def _process_stopping() -> bool:
    """True while the running asyncio task is being cancelled: the process stops the run
    (Ctrl-C, SIGTERM), which a durable run survives, rather than the run ending."""

    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0


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


def new_tracer_provider(settings: TelemetrySettings) -> Any:
    """A TracerProvider exporting batches over OTLP/HTTP to ``settings.endpoint``."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create(
        {"service.name": settings.service_name, "service.version": __version__}
    )
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(
        endpoint=settings.endpoint, headers=dict(settings.headers), timeout=settings.timeout
    )
    delay = settings.export_delay
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            export_timeout_millis=settings.timeout * 1000,
            schedule_delay_millis=delay * 1000 if delay is not None else None,
        )
    )
    return provider


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
    with a traceback); the sink reports the first one in one line when it closes."""

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


class OtelSink:
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

    def _end_round(self, path: str, fallback: float) -> None:
        entry = self._rounds.pop(path, None)
        if entry is not None:
            self._open.pop(f"{path}/agent.{entry.round}", None)
            self._end(entry, entry.end or fallback)

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
            last = self._problems.messages[-1] if cut is None else ""
            print(
                f"agentflow: telemetry export to {self.settings.endpoint} {why}"
                f"{visible(_shorten(self._redact.text(last)))}",
                file=sys.stderr,
            )


class RunSinks:
    """The :class:`OtelSink` of each durable run a process resumes or works on (``flowc
    resume``, ``flowc worker``): :meth:`for_run` makes one per run (a worker's runs must not
    share one sink's span bookkeeping), all on one tracer provider that :meth:`close` shuts
    down (flushing what is left).  Exports every :data:`DURABLE_EXPORT_DELAY_S` seconds unless
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
