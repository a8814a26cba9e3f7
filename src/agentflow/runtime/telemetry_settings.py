"""The settings of OpenTelemetry export (docs/observability.md; docs/spec/RUNTIME.md §8): what
a run exports and where (:class:`TelemetrySettings`, from ``flow.toml``'s ``[telemetry]``
table, ``flowc run --otel`` and the ``OTEL_*`` environment), the secrets every attribute is
redacted of (:func:`config_secrets`), a durable run's trace identity (:func:`durable_trace`)
and the tracer provider that exports over OTLP/HTTP (:func:`new_tracer_provider`).

Nothing here imports OpenTelemetry until a provider is built; :func:`otel_available` tells
whether the ``otel`` extra is installed without importing it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentflow.core.version import __version__
from agentflow.errors import ConfigError
from agentflow.runtime.config import TelemetryConfig, check_base_url

__all__ = [
    "DURABLE_EXPORT_DELAY_S",
    "INSTALL_HINT",
    "TelemetrySettings",
    "config_secrets",
    "durable_settings",
    "durable_trace",
    "new_tracer_provider",
    "otel_available",
    "otlp_traces_url",
    "settings_for",
    "settings_from_config",
]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

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
