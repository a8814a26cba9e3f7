"""The language server's JSON-RPC protocol: pygls' ``LanguageServerProtocol`` hardened
(:class:`_FlowProtocol`): malformed params answered with ``InvalidParams``, a request before
``initialize`` or after ``shutdown`` refused, an expected request error answered without a
traceback."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol

_log = logging.getLogger(__name__)

#: returned by :meth:`_FlowProtocol.structure_message` for a message already answered/dropped
_HANDLED = object()
#: what a client may send before `initialize` (everything else: -32002 or dropped)
_BEFORE_INIT = frozenset({lsp.INITIALIZE, lsp.EXIT, None})


class _NoDeserializeTraceback(logging.Filter):
    """Drop pygls' "Unable to deserialize message" tracebacks: :class:`_FlowProtocol` answers
    (or logs one line for) such messages itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


class _FlowProtocol(LanguageServerProtocol):
    """pygls' protocol, hardened (JSON-RPC 2.0 §5):

    - a request whose params do not deserialize (negative or oversized positions, wrong
      types, ``params: null``) gets a ``-32602 InvalidParams`` error instead of no reply;
      a malformed notification is dropped with a one-line warning;
    - an expected request error (a :class:`JsonRpcException` raised by a handler, e.g. a
      refused rename) is answered without a traceback on stderr."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rpc_logger = logging.getLogger("pygls.protocol.json_rpc")
        if not any(isinstance(f, _NoDeserializeTraceback) for f in rpc_logger.filters):
            rpc_logger.addFilter(_NoDeserializeTraceback())

    def structure_message(self, data: dict[str, Any]) -> Any:
        if not isinstance(data, dict) or "jsonrpc" not in data:
            return data
        try:
            return super().structure_message(data)
        except Exception:  # noqa: BLE001 - any malformed message is answered as one
            method = data.get("method")
            if "id" in data and "method" in data:
                msg_id = data["id"]
                if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
                    msg_id = None
                err = JsonRpcInvalidParams(f"invalid params for {method!r}")
                self._send_response(msg_id, error=err.to_response_error())
            else:
                _log.warning("dropping a malformed message (method %r)", method)
            return _HANDLED

    def handle_message(self, message: Any) -> None:
        if message is _HANDLED:
            return
        method = getattr(message, "method", None)
        if getattr(self, "_shutdown", False) and method is not None and method != lsp.EXIT:
            # after `shutdown` (pygls' private flag, pinned by tests/lsp/test_lsp_robustness.py)
            # pygls drops every message; LSP 3.17 wants requests answered with InvalidRequest
            msg_id = getattr(message, "id", None)
            if msg_id is not None:
                self._send_response(
                    msg_id,
                    error=JsonRpcInvalidRequest(
                        f"{method!r} after `shutdown`: only `exit` is accepted now"
                    ).to_response_error(),
                )
            return  # a notification after `shutdown` is dropped
        if method == lsp.INITIALIZE:
            self._flow_initialized = True
        elif not getattr(self, "_flow_initialized", False) and method not in _BEFORE_INIT:
            msg_id = getattr(message, "id", None)
            if msg_id is not None:  # a request: JSON-RPC error -32002 (LSP "ServerNotInitialized")
                self._send_response(
                    msg_id,
                    error=JsonRpcServerNotInitialized(
                        f"{method!r} before `initialize`"
                    ).to_response_error(),
                )
            return  # a notification before `initialize` is dropped (LSP 3.17 §initialize)
        super().handle_message(message)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException):
                self._request_futures.pop(msg_id, None)
                self._send_response(msg_id, error=exc.to_response_error())
                return
            if exc is not None:  # a server bug: -32603 and one log line, never a traceback
                self._request_futures.pop(msg_id, None)
                _log.error("request %r failed: %s: %s", msg_id, type(exc).__name__, exc)
                err = JsonRpcInternalError(f"internal error: {type(exc).__name__}: {exc}")
                self._send_response(msg_id, error=err.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)
