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
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
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


def test_identity_assertion_names_every_setting_it_lacks():
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as exc:
        McpOAuth(grant="identity_assertion", client_id="c", id_token="${T}")
    text = str(exc.value)
    assert "`client_secret`, `issuer`, `idp_token_endpoint`" in text
    assert "`client_id`" not in text and "`id_token`" not in text


class _IdP(BaseHTTPRequestHandler):
    """An identity provider's token endpoint: RFC 8693 exchange of an ID token for an ID-JAG."""

    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        from urllib.parse import parse_qs

        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        self.seen.append(form)
        if form.get("subject_token") == "good-id-token":
            status, body = (
                200,
                {
                    "access_token": "the-id-jag",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "token_type": "N_A",
                },
            )
        else:
            status, body = 400, {"error": "invalid_grant", "error_description": "ID token expired"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


async def test_the_id_token_is_exchanged_for_an_id_jag_at_the_identity_provider(tmp_path):
    from mcp.client.auth import OAuthTokenError
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    from agentflow.runtime.tools.mcp_auth import exchange_id_token

    handler = type("IdP", (_IdP,), {"seen": []})
    idp = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=idp.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    endpoint = f"http://127.0.0.1:{idp.server_port}/token"
    try:
        jag = await exchange_id_token(
            endpoint,
            "good-id-token",
            audience="https://auth.example.com",
            resource="https://mcp.example.com/mcp",
            client_id="flowc-at-idp",
        )
        assert jag == "the-id-jag"
        assert handler.seen[0] == {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": "good-id-token",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": "https://auth.example.com",
            "resource": "https://mcp.example.com/mcp",
            "client_id": "flowc-at-idp",
        }
        with pytest.raises(OAuthTokenError) as exc:
            await exchange_id_token(
                endpoint, "stale-id-token", audience="a", resource="r", server="wiki"
            )
        message = str(exc.value)
        assert "[mcp.wiki.oauth]: the identity provider refused the token exchange" in message
        assert "HTTP 400" in message and "ID token expired" in message
        assert "stale-id-token" not in message
    finally:
        idp.shutdown()
    # the grant in the configuration: the SDK's jwt-bearer provider, secrets from the environment
    server = McpServer(
        url="https://mcp.example.com/mcp",
        oauth=McpOAuth(
            grant="identity_assertion",
            client_id="flowc",
            client_secret="${SECRET}",
            issuer="https://auth.example.com",
            id_token="${ID_TOKEN}",
            idp_token_endpoint=endpoint,
            token_dir="tok",
        ),
    )
    provider = oauth_provider(
        "wiki", server, env={"SECRET": "s", "ID_TOKEN": "t"}, base_dir=tmp_path
    )
    assert isinstance(provider, IdentityAssertionOAuthProvider)
    with pytest.raises(RunError) as missing:
        oauth_provider("wiki", server, env={"SECRET": "s"}, base_dir=tmp_path)
    assert "ID_TOKEN" in missing.value.message and "oauth.id_token" in missing.value.message
