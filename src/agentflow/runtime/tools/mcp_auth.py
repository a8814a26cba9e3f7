"""OAuth 2.1 for remote MCP servers (``[mcp.NAME.oauth]``), through the SDK's OAuth client.

:func:`oauth_provider` builds the SDK's ``OAuthClientProvider`` for one server: it discovers the
protected resource metadata and the authorization server (RFC 9728, RFC 8414 with the MCP
fallbacks), registers dynamically (RFC 7591) or uses a client ID metadata document or a
pre-registered client, runs the authorization code grant with PKCE, refreshes tokens and steps
scopes up on ``403 insufficient_scope``.  What is flowc's own:

* :class:`FileTokenStorage` keeps tokens and the client registration in one JSON file per
  server, mode 0600 in a directory of mode 0700 (default ``$XDG_STATE_HOME/agentflow/mcp-oauth``);
  tokens are never written to a trace, an event or a message.
* :class:`LoopbackAuthorization` sends the user to the authorization URL (printed on stderr)
  and receives the redirect on ``http://127.0.0.1:PORT/callback``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from agentflow.core.redaction import register_secret
from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.config import McpServer

#: Seconds the loopback listener waits for the browser to come back with the code.
CALLBACK_TIMEOUT = 300.0


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_vars(value: str, env: Mapping[str, str], *, server: str, where: str) -> str:
    """``${VAR}`` references in ``value`` replaced from ``env``.

    Raises RunError(tool_error) naming the variable (never its value) when it is unset.
    """

    def sub(m: re.Match[str]) -> str:
        var = m.group(1)
        if var not in env:
            raise RunError(
                Code.TOOL_ERROR,
                f"MCP server '{server}': environment variable {var} (used in [mcp.{server}] "
                f"{where}) is not set",
            )
        register_secret(env[var])  # a value given to a server is never shown
        return env[var]

    return _VAR.sub(sub, value)


def default_token_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/agentflow/mcp-oauth`` (``~/.local/state/agentflow/mcp-oauth``)."""
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "agentflow" / "mcp-oauth"


def token_path(server: str, url: str, token_dir: Path) -> Path:
    """The token file of ``server`` at ``url``: ``NAME-<12 hex of the URL's SHA-256>.json``
    (a server moved to another URL starts afresh)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]
    return token_dir / f"{server}-{digest}.json"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over one JSON file ``{tokens, client_info}``, written
    atomically with mode 0600 (its directory is made with mode 0700).  A file that cannot be
    read or parsed counts as empty (the user authorizes again)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: Any) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))


class MemoryTokenStorage:
    """A ``TokenStorage`` kept in memory only (one process; the conformance client)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class _PreRegistered:
    """A storage whose client registration is the configured one (``client_id``)."""

    def __init__(self, inner: Any, client_info: Any) -> None:
        self.inner, self.client_info = inner, client_info

    async def get_tokens(self) -> Any:
        return await self.inner.get_tokens()

    async def set_tokens(self, tokens: Any) -> None:
        await self.inner.set_tokens(tokens)

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


@dataclass
class OAuthHandlers:
    """How the authorization code reaches the client: ``redirect(url)`` sends the user (or a
    program) to the authorization URL; ``callback()`` returns the SDK's
    ``AuthorizationCodeResult``; ``redirect_uri`` is where the server sends the code;
    ``storage`` overrides the token file."""

    redirect: Callable[[str], Awaitable[None]]
    callback: Callable[[], Awaitable[Any]]
    redirect_uri: str
    storage: Any = None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackAuthorization:
    """The interactive authorization of server ``server``: the authorization URL is printed on
    stderr (and opened in a browser when one is at hand), and a one-shot HTTP listener on
    ``127.0.0.1:port`` takes the redirect back (``/callback?code=…&state=…``)."""

    def __init__(self, server: str, port: int = 0, *, stderr: Any = None) -> None:
        self.server = server
        self.port = port or _free_port()
        self.stderr = stderr
        self._result: asyncio.Future[Any] | None = None
        self._listener: asyncio.base_events.Server | None = None

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:PORT/callback``."""
        return f"http://127.0.0.1:{self.port}/callback"

    async def redirect(self, url: str) -> None:
        """Start the listener, then show the authorization URL."""
        loop = asyncio.get_running_loop()
        self._result = loop.create_future()
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        out = self.stderr or sys.stderr
        out.write(
            f"MCP server '{self.server}' needs authorization: open this address in a browser\n"
            f"  {url}\n"
        )
        out.flush()
        if os.environ.get("DISPLAY") or sys.platform == "darwin":
            import webbrowser

            with contextlib.suppress(Exception):
                webbrowser.open(url)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass
            target = line.decode("latin-1").split(" ")[1] if line.count(b" ") >= 2 else "/"
            query = parse_qs(urlparse(target).query)
            ok = "code" in query or "error" in query
            body = (
                "Authorization received; you can close this window."
                if "code" in query
                else "Authorization failed; see the terminal."
            )
            writer.write(
                f"HTTP/1.1 {200 if ok else 404} OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode()
            )
            await writer.drain()
            if ok and self._result is not None and not self._result.done():
                self._result.set_result(query)
        except (TimeoutError, OSError, IndexError):
            pass
        finally:
            writer.close()

    async def callback(self) -> Any:
        """Wait (up to :data:`CALLBACK_TIMEOUT`) for the redirect; the code, state and issuer."""
        from mcp.client.auth import OAuthFlowError
        from mcp.shared.auth import AuthorizationCodeResult

        if self._result is None:
            raise OAuthFlowError("the authorization was not started")
        try:
            query = await asyncio.wait_for(self._result, CALLBACK_TIMEOUT)
        except TimeoutError:
            raise OAuthFlowError(
                f"no authorization came back within {CALLBACK_TIMEOUT:g}s"
            ) from None
        finally:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        if "error" in query:
            raise OAuthFlowError(
                f"the authorization server answered {query['error'][0]}"
                + (f": {query['error_description'][0]}" if "error_description" in query else "")
            )
        return AuthorizationCodeResult(
            code=query["code"][0],
            state=(query.get("state") or [None])[0],
            iss=(query.get("iss") or [None])[0],
        )

    def handlers(self) -> OAuthHandlers:
        """These as :class:`OAuthHandlers`."""
        return OAuthHandlers(self.redirect, self.callback, self.redirect_uri)


def oauth_provider(
    name: str,
    server: McpServer,
    *,
    env: Mapping[str, str],
    base_dir: Path,
    handlers: OAuthHandlers | None = None,
) -> Any:
    """The SDK's ``OAuthClientProvider`` (an ``httpx2.Auth``) for MCP server ``name``.

    ``handlers``: how the authorization code comes back (default :class:`LoopbackAuthorization`
    on ``redirect_port``).  Raises RunError(tool_error) for a ``${VAR}`` that is not set or a
    ``client_metadata_url`` that is not an HTTPS URL with a path.
    """
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    oauth = server.oauth
    assert oauth is not None and server.url is not None
    if handlers is None:
        handlers = LoopbackAuthorization(name, oauth.redirect_port).handlers()
    storage = handlers.storage
    if storage is None:
        directory = Path(oauth.token_dir) if oauth.token_dir else default_token_dir(env)
        directory = directory if directory.is_absolute() else base_dir / directory
        storage = FileTokenStorage(token_path(name, server.url, directory))
    secret = (
        expand_vars(oauth.client_secret, env, server=name, where="oauth.client_secret")
        if oauth.client_secret
        else None
    )
    client_id = (
        expand_vars(oauth.client_id, env, server=name, where="oauth.client_id")
        if oauth.client_id
        else None
    )
    if oauth.grant == "client_credentials":
        return _client_credentials(name, server.url, oauth, storage, client_id, secret, env)
    if oauth.grant == "identity_assertion":
        return _identity_assertion(name, server.url, oauth, storage, client_id, secret, env)
    if client_id is not None:  # a pre-registered client: never registered dynamically
        storage = _PreRegistered(
            storage,
            OAuthClientInformationFull(
                client_id=client_id,
                client_secret=secret,
                redirect_uris=[handlers.redirect_uri],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            ),
        )
    metadata = OAuthClientMetadata(
        client_name="flowc",
        redirect_uris=[handlers.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=oauth.scope,
    )
    try:
        provider = OAuthClientProvider(
            server_url=server.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=handlers.redirect,
            callback_handler=handlers.callback,
            client_metadata_url=oauth.client_metadata_url,
        )
    except ValueError as exc:
        raise RunError(Code.TOOL_ERROR, f"[mcp.{name}.oauth]: {exc}") from None
    return provider


def _client_credentials(
    name: str,
    url: str,
    oauth: Any,
    storage: Any,
    client_id: str | None,
    secret: str | None,
    env: Mapping[str, str],
) -> Any:
    """The SDK's client-credentials providers: a secret (``client_secret_basic``) or a
    ``private_key_jwt`` assertion signed with ``private_key``."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert client_id is not None
    if oauth.private_key:
        key = expand_vars(oauth.private_key, env, server=name, where="oauth.private_key")
        params = SignedJWTParameters(
            issuer=client_id,
            subject=client_id,
            signing_key=key,
            signing_algorithm=oauth.signing_algorithm,
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=client_id,
            assertion_provider=params.create_assertion_provider(),
            scope=oauth.scope,
        )
    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=secret or "",
        scope=oauth.scope,
    )


#: RFC 8693 token exchange and the token types of SEP-990's first leg.
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


def _identity_assertion(
    name: str,
    url: str,
    oauth: Any,
    storage: Any,
    client_id: str | None,
    secret: str | None,
    env: Mapping[str, str],
) -> Any:
    """SEP-990 (enterprise-managed authorization): the ID token exchanged at the identity
    provider for an ID-JAG (RFC 8693, :func:`exchange_id_token`), the ID-JAG exchanged at the
    configured authorization server for an access token (the SDK's
    ``IdentityAssertionOAuthProvider``, RFC 7523 jwt-bearer with ``client_secret_basic``)."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    def value(key: str) -> str | None:
        raw = getattr(oauth, key)
        return expand_vars(raw, env, server=name, where=f"oauth.{key}") if raw else None

    id_token, endpoint = value("id_token"), value("idp_token_endpoint")
    idp_id, idp_secret = value("idp_client_id"), value("idp_client_secret")

    async def assertion(audience: str, resource: str) -> str:
        return await exchange_id_token(
            str(endpoint),
            str(id_token),
            audience=audience,
            resource=resource,
            client_id=idp_id,
            client_secret=idp_secret,
            server=name,
        )

    try:
        return IdentityAssertionOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=str(client_id),
            client_secret=secret or "",
            issuer=str(value("issuer")),
            assertion_provider=assertion,
            scope=oauth.scope,
            token_endpoint_auth_method="client_secret_basic",
        )
    except ValueError as exc:
        raise RunError(Code.TOOL_ERROR, f"[mcp.{name}.oauth]: {exc}") from None


async def exchange_id_token(
    endpoint: str,
    id_token: str,
    *,
    audience: str,
    resource: str,
    client_id: str | None = None,
    client_secret: str | None = None,
    server: str = "",
) -> str:
    """SEP-990's first leg: exchange the identity provider's ``id_token`` at its token
    ``endpoint`` (RFC 8693) for an ID-JAG whose audience is the MCP authorization server
    (``audience``, its issuer) and whose resource is the MCP server (``resource``).  Returns
    the ID-JAG.  Raises ``OAuthTokenError`` (the SDK's; a connection's tool error) when the
    provider refuses, naming its ``error`` and ``error_description`` — never the token."""
    from mcp.client.auth import OAuthTokenError
    from mcp.shared._httpx_utils import create_mcp_http_client

    data = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
    }
    if client_id:
        data["client_id"] = client_id
    if client_secret:
        data["client_secret"] = client_secret
    async with create_mcp_http_client() as http:
        response = await http.post(endpoint, data=data)
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
        why = body.get("error_description") or body.get("error") if isinstance(body, dict) else ""
        raise OAuthTokenError(
            f"[mcp.{server}.oauth]: the identity provider refused the token exchange "
            f"(HTTP {response.status_code}){': ' + str(why) if why else ''}"
        )
    if body.get("issued_token_type") not in (None, ID_JAG_TOKEN_TYPE):
        raise OAuthTokenError(
            f"[mcp.{server}.oauth]: the identity provider issued a "
            f"{body.get('issued_token_type')}, not an ID-JAG"
        )
    return str(body["access_token"])


__all__ = [
    "FileTokenStorage",
    "LoopbackAuthorization",
    "MemoryTokenStorage",
    "OAuthHandlers",
    "default_token_dir",
    "exchange_id_token",
    "oauth_provider",
    "token_path",
]
