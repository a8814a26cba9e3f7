"""A real OTLP/HTTP traces receiver on loopback for the tests: a ``ThreadingHTTPServer`` that
accepts ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in protobuf (what the
OpenTelemetry OTLP/HTTP exporter sends, gzip or not) and keeps every span it decoded.

    with OtlpReceiver() as receiver:
        ... export to receiver.url ...
        spans = receiver.spans()   # [ReceivedSpan(name, trace_id, span_id, parent_span_id, …)]
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ReceivedSpan:
    """One decoded span: ids as hex text (``parent_span_id`` "" for a root), times in ns."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start: int
    end: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    service: str = ""


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest`` (protobuf bytes)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out = []
    for resource_spans in request.resource_spans:
        service = str(_attrs(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        attributes=_attrs(span.attributes),
                        events=[(e.name, _attrs(e.attributes)) for e in span.events],
                        service=service,
                    )
                )
    return out


class OtlpReceiver:
    """The receiver (a context manager): ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(self) -> None:
        received: list[ReceivedSpan] = []
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = decode(body)
                with lock:
                    received.extend(spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._received = received
        self._lock = lock
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for the loop's next poll: 0.5 s at the default interval
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, in arrival order."""
        with self._lock:
            return list(self._received)

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> list[ReceivedSpan]:
        """The spans once ``predicate(spans)`` holds; AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans()
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans never matched: {[s.name for s in spans]}")
            time.sleep(0.05)
