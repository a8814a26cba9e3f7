"""The language server under misuse (issue 16): a request before ``initialize`` gets the LSP
error -32002 instead of an internal error and a traceback, nothing reaches stderr as a
traceback, and one huge document no longer holds up requests about other documents (its check
runs on a worker thread)."""

from __future__ import annotations

import sys
import time

import pytest

from agentflow.lsp.client import LspClient, LspError

SMALL = "stage s -> int {\n  return 1\n}\n"
HUGE = (
    "stage s -> int {\n"
    + "".join(f"  let v{i} = {i} + {i}\n" for i in range(20_000))
    + "  return 1\n}\n"
)


def _client(tmp_path):
    err = (tmp_path / "stderr.log").open("wb")
    return LspClient([sys.executable, "-m", "agentflow", "lsp"], stderr=err), err


def test_a_request_before_initialize_is_server_not_initialized(tmp_path):
    client, err = _client(tmp_path)
    try:
        hover = {"textDocument": {"uri": "file:///x.flow"}, "position": {"line": 0, "character": 0}}
        with pytest.raises(LspError) as info:
            client.request("textDocument/hover", hover, timeout=60)
        assert info.value.code == -32002
        client.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///x.flow"}})
        client.initialize()
        client.open("file:///x.flow", SMALL)
        assert client.request(
            "textDocument/documentSymbol", {"textDocument": {"uri": "file:///x.flow"}}
        )
    finally:
        client.close()
        err.close()
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert "Traceback" not in log, log


def test_a_request_after_shutdown_is_invalid_request_and_exit_still_ends_it(tmp_path):
    client, err = _client(tmp_path)
    try:
        client.initialize()
        client.open("file:///x.flow", SMALL)
        client.request("shutdown", None, timeout=60)
        with pytest.raises(LspError) as info:
            client.request(
                "textDocument/documentSymbol",
                {"textDocument": {"uri": "file:///x.flow"}},
                timeout=60,
            )
        assert info.value.code == -32600 and "after `shutdown`" in str(info.value)
        client.notify("exit", None)
        assert client.proc.wait(timeout=60) == 0  # `exit` after `shutdown`: a clean end
    finally:
        client.close()
        err.close()


def test_pygls_keeps_its_shutdown_flag_where_the_server_reads_it():
    from pygls.protocol import LanguageServerProtocol

    from agentflow.lsp.server import FlowLanguageServer

    protocol = FlowLanguageServer().protocol
    assert isinstance(protocol, LanguageServerProtocol) and protocol._shutdown is False


def test_a_huge_document_does_not_hold_up_requests_about_another(tmp_path):
    client, err = _client(tmp_path)
    try:
        client.initialize(options={"debounce_ms": 0})
        client.open("file:///huge.flow", HUGE)
        client.open("file:///small.flow", SMALL)
        started = time.monotonic()
        symbols = client.request(
            "textDocument/documentSymbol",
            {"textDocument": {"uri": "file:///small.flow"}},
            timeout=120,
        )
        took = time.monotonic() - started
        assert [s["name"] for s in symbols] == ["s"]
        # answered before the huge document's check was done (that check takes seconds)
        with client._cond:
            huge_done = any(
                n.get("params", {}).get("uri") == "file:///huge.flow" for n in client._notes
            )
        assert not huge_done, f"the request waited for the huge document ({took:.1f} s)"
        client.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == "file:///huge.flow",
            timeout=300,
        )
    finally:
        client.close()
        err.close()
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(errors="replace")


def test_a_malformed_content_length_is_logged_and_the_next_message_is_served():
    import json
    import subprocess

    def frame(msg: dict, length: bytes | None = None) -> bytes:
        body = json.dumps(msg).encode()
        return b"Content-Length: " + (length or b"%d" % len(body)) + b"\r\n\r\n" + body

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    data = frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}, b"abc")
    data += frame(initialize)
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "lsp"], input=data, capture_output=True, timeout=120
    )
    stderr = done.stderr.decode(errors="replace")
    assert "malformed LSP header 'Content-Length: abc'" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    # the message after the malformed one was read and answered
    assert b'"id": 1' in done.stdout and b'"capabilities"' in done.stdout, done.stdout[:300]


@pytest.mark.parametrize("after_body", [b"", b"\r\n"], ids=["body-then-header", "body-line"])
def test_a_malformed_content_length_skips_to_the_next_well_formed_header(after_body, caplog):
    import io

    from agentflow.lsp.server import CheckedStdin

    raw = io.BytesIO(b"Content-Length: 1e3\r\n\r\n{}" + after_body + b"Content-Length: 2\r\n\r\n{}")
    stdin = CheckedStdin(raw)
    with caplog.at_level("ERROR"):
        assert stdin.readline() == b"Content-Length: 2\r\n"
    assert stdin.readline() == b"\r\n" and stdin.read(2) == b"{}"
    assert stdin.readline() == b""
    assert "malformed LSP header 'Content-Length: 1e3'" in caplog.text
