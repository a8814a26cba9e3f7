"""A minimal synchronous LSP client over stdio (JSON-RPC 2.0 with ``Content-Length`` framing).

Used by the tests and ``bench/lsp_latency.py`` to drive ``python -m agentflow lsp`` as a real
editor would.  A reader thread parses every message from the server's stdout into a queue;
:meth:`LspClient.request` waits for the response with the same id, and server notifications
(``textDocument/publishDiagnostics``…) are kept for :meth:`LspClient.wait_notification`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LspClient", "LspError"]


class LspError(Exception):
    """A JSON-RPC error response (``code``, ``message``) or a server that stopped answering."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class LspClient:
    """Start ``argv`` (default: ``python -m agentflow lsp``) and talk LSP to it.

    Use as a context manager; :meth:`close` sends ``shutdown``/``exit`` and reaps the process.
    """

    def __init__(
        self, argv: list[str] | None = None, env: dict[str, str] | None = None, stderr: Any = None
    ) -> None:
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "agentflow", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if stderr is None else stderr,
            env=env,
        )
        self._next_id = 0
        self._responses: dict[int, dict[str, Any]] = {}
        self._notes: list[dict[str, Any]] = []
        #: the server → client requests received (``client/registerCapability`` …), answered null
        self.server_requests: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- framing -------------------------------------------------------------------------------

    def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            msg = json.loads(out.read(length))
            with self._cond:
                if "id" in msg and "method" not in msg:
                    self._responses[msg["id"]] = msg
                elif "method" in msg and "id" in msg:
                    # a server → client request (e.g. workspace/configuration): answer null
                    self.server_requests.append(msg)
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                else:
                    self._notes.append(msg)
                self._cond.notify_all()

    # -- API -----------------------------------------------------------------------------------

    def request(self, method: str, params: Any, timeout: float = 10.0) -> Any:
        """Send a request and return its ``result``; raises :class:`LspError` on an error
        response or after ``timeout`` seconds."""
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise LspError(f"no response to {method}")
                self._cond.wait(left)
            msg = self._responses.pop(rid)
        if "error" in msg:
            raise LspError(msg["error"].get("message", ""), msg["error"].get("code"))
        return msg.get("result")

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_notification(
        self,
        method: str,
        predicate: Callable[[Any], bool] | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Remove and return the first received notification ``method`` whose ``params``
        satisfy ``predicate`` (waiting up to ``timeout`` seconds); raises :class:`LspError`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i, n in enumerate(self._notes):
                    if n.get("method") == method and (predicate is None or predicate(n["params"])):
                        params: dict[str, Any] = self._notes.pop(i)["params"]
                        return params
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise LspError(f"no {method} notification")
                self._cond.wait(left)

    def clear_notifications(self) -> None:
        with self._cond:
            self._notes.clear()

    def initialize(
        self,
        encodings: list[str] | None = None,
        options: Any = None,
        timeout: float = 60.0,
        workspace: dict[str, Any] | None = None,
        root: str | None = None,
    ) -> dict[str, Any]:
        """``initialize`` + ``initialized``; returns the server capabilities. The answer waits
        for the server process to start (its imports), so ``timeout`` (seconds) is generous: a
        loaded machine takes many times an idle one's half second. ``workspace``: the client's
        ``workspace`` capabilities (``{"didChangeWatchedFiles": {"dynamicRegistration":
        True}}``), none by default. ``root``: the URI of the workspace folder (sent as
        ``rootUri`` and the one ``workspaceFolders`` entry), none by default."""
        caps: dict[str, Any] = {
            "textDocument": {
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "rename": {"prepareSupport": True},
            }
        }
        if encodings is not None:
            caps["general"] = {"positionEncodings": encodings}
        if workspace is not None:
            caps["workspace"] = workspace
        folders = [{"uri": root, "name": root.rstrip("/").rsplit("/", 1)[-1]}] if root else None
        result: dict[str, Any] = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root,
                "workspaceFolders": folders,
                "capabilities": caps,
                "initializationOptions": options,
            },
            timeout=timeout,
        )
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "flow", "version": version, "text": text}},
        )

    def change(self, uri: str, text: str, version: int) -> None:
        """Replace the whole document (a full-text change event)."""
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )

    def close(self) -> None:
        """Shut the server down politely, then make sure it is gone."""
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=5)
                self.notify("exit", None)
                self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - a server already gone is stopped below
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except Exception:  # noqa: BLE001 - closing a pipe of a dead server
                    pass

    def __enter__(self) -> LspClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
