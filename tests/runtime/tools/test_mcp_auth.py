"""OAuth 2.1 pieces of the MCP client: the token file (mode 0600 in a 0700 directory, one per
server and URL, unreadable content counts as none), the loopback redirect listener, and what an
HTTP 401 / 403 from a server says."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from agentflow.errors import RunError
from agentflow.runtime.config import McpOAuth, McpServer
from agentflow.runtime.tools.mcp import McpConnection
from agentflow.runtime.tools.mcp_auth import (
    FileTokenStorage,
    LoopbackAuthorization,
    default_token_dir,
    oauth_provider,
    token_path,
)


async def test_tokens_are_kept_in_a_private_file(tmp_path):
    path = token_path("github", "https://mcp.example.com/mcp", tmp_path / "tokens")
    assert path.parent == tmp_path / "tokens" and path.name.startswith("github-")
    assert path != token_path("github", "https://other.example.com/mcp", tmp_path / "tokens")
    storage = FileTokenStorage(path)
    assert await storage.get_tokens() is None and await storage.get_client_info() is None
    await storage.set_tokens(
        OAuthToken(access_token="at-secret", refresh_token="rt", expires_in=60)
    )
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="cid", redirect_uris=["http://127.0.0.1:1/callback"])
    )
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    again = FileTokenStorage(path)
    assert (await again.get_tokens()).access_token == "at-secret"
    assert (await again.get_client_info()).client_id == "cid"
    path.write_text("{not json", encoding="utf-8")
    assert await again.get_tokens() is None  # unreadable: authorize again


def test_the_default_token_dir_is_the_users_state_dir(tmp_path):
    assert default_token_dir({"XDG_STATE_HOME": str(tmp_path)}) == (
        tmp_path / "agentflow" / "mcp-oauth"
    )


async def test_the_loopback_listener_takes_the_redirect(tmp_path):
    import io

    shown = io.StringIO()
    auth = LoopbackAuthorization("github", stderr=shown)
    await auth.redirect("https://auth.example.com/authorize?x=1")
    assert "https://auth.example.com/authorize?x=1" in shown.getvalue()
    assert "MCP server 'github' needs authorization" in shown.getvalue()
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{auth.redirect_uri}?code=c0de&state=s1&iss=https://a")
    assert reply.status_code == 200
    result = await auth.callback()
    assert (result.code, result.state, result.iss) == ("c0de", "s1", "https://a")


def test_the_provider_is_built_from_the_config_with_secrets_from_the_environment(tmp_path):
    server = McpServer(
        url="https://mcp.example.com/mcp",
        oauth=McpOAuth(client_id="${CID}", client_secret="${CSECRET}", token_dir="tok"),
    )
    provider = oauth_provider(
        "gh", server, env={"CID": "id-1", "CSECRET": "s-2"}, base_dir=tmp_path
    )
    info = asyncio.run(provider.context.storage.get_client_info())
    assert (info.client_id, info.client_secret) == ("id-1", "s-2")
    with pytest.raises(RunError) as exc:
        oauth_provider("gh", server, env={}, base_dir=tmp_path)
    assert "CSECRET" in exc.value.message and "oauth.client_secret" in exc.value.message


class _Refuse(BaseHTTPRequestHandler):
    status = 401

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.dumps({"error": "nope"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "requires authorization (HTTP 401 Unauthorized): add an [mcp.remote.oauth] table"),
        (403, "refused access (HTTP 403 Forbidden): the credentials are valid but lack"),
    ],
)
async def test_http_401_and_403_say_what_to_configure(tmp_path, status, says):
    handler = type("Refuse", (_Refuse,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conn = McpConnection(
            "remote",
            McpServer(url=f"http://127.0.0.1:{server.server_port}/mcp", connect_timeout=10),
            base_dir=tmp_path,
            env={},
        )
        with pytest.raises(RunError) as exc:
            await conn.list_tools()
        assert exc.value.code == "tool_error"
        assert "MCP server 'remote' is not available" in exc.value.message
        assert says in exc.value.message
        await conn.aclose()
    finally:
        server.shutdown()
