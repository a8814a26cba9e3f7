"""The client entry point the MCP conformance suite drives (``@modelcontextprotocol/conformance``).

``python -m agentflow.mcp_conformance_client URL``: the suite starts a test server per scenario
and runs this with the server's URL as the last argument, the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` and its data (pre-registered client credentials, …) as JSON in
``MCP_CONFORMANCE_CONTEXT``.  Every scenario goes through flowc's own client
(:class:`agentflow.runtime.tools.mcp.McpConnection` configured like an ``[mcp.NAME]`` server),
so the suite measures what ``flowc run`` does:

* ``initialize`` — connect and list the tools; ``tools_call`` — call ``add_numbers``;
  ``sse-retry`` — call ``test_reconnection`` (the server drops the stream once);
* ``elicitation-sep1034-client-defaults`` — ``elicitation = "defaults"``: the form's defaults
  are the answer;
* ``auth/*`` — ``[mcp.NAME.oauth]``: the authorization code flow with PKCE, the redirect followed
  by this program instead of a browser (the suite's authorization server redirects at once),
  tokens kept in memory, a pre-registered client from the context, a client ID metadata
  document where the server supports one; ``auth/client-credentials-*`` — ``grant =
  "client_credentials"`` with the context's secret or private key;
  ``auth/cross-app-access-*`` — ``grant = "identity_assertion"`` (SEP-990) with the context's
  client, ID token and identity provider; the authorization server's issuer, which flowc's
  configuration names (it is never discovered at run time), is read here from the server's
  protected-resource metadata.

Exit status 0 when the scenario's calls succeeded, 1 otherwise (the message on stderr).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from agentflow.errors import ConfigError, FlowError
from agentflow.runtime.config import McpOAuth, McpServer
from agentflow.runtime.tools.mcp import McpConnection
from agentflow.runtime.tools.mcp_auth import MemoryTokenStorage, OAuthHandlers

#: The client ID metadata document URL the suite's authorization servers accept.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def _headless_handlers() -> Any:
    """OAuth handlers that follow the authorization redirect themselves (no browser)."""
    from mcp.client.auth import OAuthFlowError
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    got: dict[str, Any] = {}

    async def redirect(url: str) -> None:
        async with create_mcp_http_client() as http:
            response = await http.get(url)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise OAuthFlowError(f"the authorization endpoint answered {response.status_code}")
        got.clear()
        got.update(parse_qs(urlparse(location).query))

    async def callback() -> Any:
        if "code" not in got:
            raise OAuthFlowError("no authorization code in the redirect")
        return AuthorizationCodeResult(
            code=got["code"][0],
            state=(got.get("state") or [None])[0],
            iss=(got.get("iss") or [None])[0],
        )

    return OAuthHandlers(
        redirect, callback, "http://localhost:3000/callback", storage=MemoryTokenStorage()
    )


async def protected_resource_issuer(url: str) -> str:
    """The first authorization server the protected-resource metadata of MCP server ``url``
    names (RFC 9728: the path-suffixed well-known, then the root one)."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    parsed = urlparse(url)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    path = parsed.path.rstrip("/")
    async with create_mcp_http_client() as http:
        for where in (
            f"/.well-known/oauth-protected-resource{path}",
            "/.well-known/oauth-protected-resource",
        ):
            response = await http.get(origin + where)
            if response.status_code == 200:
                servers = response.json().get("authorization_servers") or []
                if servers:
                    return str(servers[0])
    raise ConfigError(f"no protected-resource metadata names an authorization server for {url}")


def server_config(
    url: str, scenario: str, context: dict[str, Any], *, issuer: str | None = None
) -> Any:
    """The ``[mcp.conformance]`` server a scenario amounts to (``issuer``: the authorization
    server of a cross-app-access scenario)."""
    fields: dict[str, Any] = {"url": url, "timeout": 20, "connect_timeout": 25}
    if scenario.startswith("elicitation"):
        fields["elicitation"] = "defaults"
    if scenario.startswith("auth/cross-app-access"):
        fields["oauth"] = McpOAuth(
            grant="identity_assertion",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            issuer=issuer,
            id_token=context.get("idp_id_token"),
            idp_token_endpoint=context.get("idp_token_endpoint"),
            idp_client_id=context.get("idp_client_id"),
        )
    elif scenario.startswith("auth/client-credentials"):
        fields["oauth"] = McpOAuth(
            grant="client_credentials",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm") or "ES256",
        )
    elif scenario.startswith("auth/"):
        fields["oauth"] = McpOAuth(
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url=None if context.get("client_id") else CLIENT_METADATA_URL,
        )
    return McpServer(**fields)


async def run_scenario(url: str, scenario: str, context: dict[str, Any]) -> None:
    """Connect to ``url`` and do what ``scenario`` checks; raises on failure."""
    issuer = None
    if scenario.startswith("auth/cross-app-access"):
        issuer = await protected_resource_issuer(url)
    conn = McpConnection(
        "conformance",
        server_config(url, scenario, context, issuer=issuer),
        base_dir=Path.cwd(),
        env=dict(os.environ),
        oauth_handlers=_headless_handlers() if scenario.startswith("auth/") else None,
    )
    try:
        tools = {t.name: t for t in await conn.list_tools()}
        calls = {
            "tools_call": ("add_numbers", {"a": 5, "b": 3}),
            "sse-retry": ("test_reconnection", {}),
            "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
        }
        if scenario in calls:
            name, args = calls[scenario]
            print(json.dumps(await conn.call(name, args)))
        elif scenario.startswith("auth/") and "test-tool" in tools:
            print(json.dumps(await conn.call("test-tool", {})))
    finally:
        await conn.aclose()


def main(argv: list[str] | None = None) -> int:
    """Run the scenario named by ``MCP_CONFORMANCE_SCENARIO`` against the URL in ``argv``."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m agentflow.mcp_conformance_client URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        context = {}

    try:
        asyncio.run(run_scenario(argv[-1], scenario, context))
    except FlowError as exc:
        print(f"{scenario}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
