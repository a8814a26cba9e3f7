"""The rules of ``[providers.NAME]`` that depend on its ``kind`` and its ``headers``
(docs/models.md "Provider kinds", "Extra request headers"; docs/reference/configuration.md).

:func:`key_problems` lists the keys a provider table's ``kind`` does not take (a key of another
kind — ``api_version`` outside the Azure kinds, ``region`` outside ``bedrock`` — or a typo);
:func:`table_problems` what else it may not say — a header that would override the request's framing
or the provider's own authentication, both Azure credentials at once — as ``(key path,
message)`` pairs that :func:`agentflow.runtime.config.load_config` reports at the key's
``file:line:col``. :func:`expand_headers` fills ``${VAR}`` references in header values from the
environment (each value a secret: redacted everywhere); :func:`header_problem` names an unset or
unusable one before a run starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from agentflow.core.diagnostics import did_you_mean, suggested
from agentflow.core.redaction import register_secret
from agentflow.errors import ConfigError

#: the values of ``kind`` in ``[providers.NAME]``
ProviderKind = Literal[
    "openai",
    "anthropic",
    "test",
    "openai-responses",
    "gemini",
    "bedrock",
    "azure-openai",
    "azure-openai-responses",
]
AZURE_KINDS = ("azure-openai", "azure-openai-responses")

#: keys of ``[providers.NAME]`` that belong to some kinds only → those kinds
KIND_KEYS: dict[str, tuple[str, ...]] = {
    "api_version": AZURE_KINDS,
    "azure_api": AZURE_KINDS,
    "entra_token_env": AZURE_KINDS,
    "entra_token_file": AZURE_KINDS,
    "region": ("bedrock",),
    "seed": ("test",),
    "call_tools": ("test",),
}

#: headers flowc writes for the request's framing: never taken from ``headers``
FRAMING_HEADERS = ("content-type", "content-length", "host", "transfer-encoding")
#: headers that carry a provider's key (refused in ``headers`` when the provider has one)
AUTH_HEADERS = ("authorization", "api-key", "x-api-key", "x-goog-api-key")

#: what an Entra ID token file may hold: one access token (a JWT: base64url and dots), at most
#: this many characters
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")
_TOKEN_LIMIT = 64 * 1024

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_VISIBLE = re.compile(r"[\x20-\x7e\t]*")


def table_problems(provider: Any) -> list[tuple[tuple[str, ...], str]]:
    """``(key path inside the table, message)`` for each rule ``provider`` (a
    :class:`~agentflow.runtime.config.ProviderConfig`) breaks; empty when it breaks none."""
    out: list[tuple[tuple[str, ...], str]] = []
    kind = str(provider.kind)
    if kind == "azure-openai-responses" and provider.azure_api == "deployments":
        out.append(
            (
                ("azure_api",),
                'kind azure-openai-responses is served by the v1 API only (azure_api = "v1")',
            )
        )
    credentials = [
        k for k in ("api_key_env", "entra_token_env", "entra_token_file") if getattr(provider, k)
    ]
    if len(credentials) > 1:
        out.append(
            (
                (credentials[-1],),
                "give one credential: api_key_env (sent as the api-key header), "
                "entra_token_env or entra_token_file (a Microsoft Entra ID token, from an "
                "environment variable or a file, sent as Authorization: Bearer)",
            )
        )
    own_auth = bool(credentials) or kind == "bedrock"
    for name in provider.headers:
        low = name.lower()
        if low in FRAMING_HEADERS:
            out.append(
                (
                    ("headers", name),
                    f"header '{name}' is written by flowc (the request is JSON) and cannot "
                    "be overridden",
                )
            )
        elif low in AUTH_HEADERS and own_auth:
            how = "AWS SigV4 or api_key_env" if kind == "bedrock" else "its key's env variable"
            out.append(
                (
                    ("headers", name),
                    f"header '{name}' would override the provider's own authentication "
                    f"({how}); remove the header, or the provider's key setting",
                )
            )
    return out


def key_problems(data: Mapping[str, Any], keys: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """``(key path, message)`` for each key of a ``[providers.NAME]`` table of the parsed
    ``flow.toml`` ``data`` that its ``kind`` does not take, every kind alike (docs/reference/
    configuration.md "[providers.NAME]"): a key of other kinds (``region`` on an ``openai``
    provider: "applies to kind bedrock"), or one no kind has — with a did-you-mean among the
    keys of *its* kind, else the list of them. ``keys``: every key a provider table has.
    Tables that are not tables, and an unknown ``kind``, are left to the schema's messages."""
    out: list[tuple[tuple[str, ...], str]] = []
    providers = data.get("providers")
    for name, table in providers.items() if isinstance(providers, dict) else ():
        if not isinstance(table, dict):
            continue
        kind = table.get("kind", "openai")
        if kind not in get_args(ProviderKind):
            continue
        own = [k for k in keys if kind in KIND_KEYS.get(k, (kind,))]
        for key in table:
            if key in own:
                continue
            loc = ("providers", name, key)
            if key in KIND_KEYS:
                kinds = " / ".join(KIND_KEYS[key])
                out.append(
                    (loc, f"[providers.{name}] `{key}` applies to kind {kinds}, not '{kind}'")
                )
                continue
            hint = did_you_mean(key, own)
            message = f"unknown key 'providers.{name}.{key}'"
            if hint is not None:
                message += f"; did you mean '{suggested(hint)}'?"
            else:
                message += f"; [providers.{name}] (kind {kind}) takes: {', '.join(sorted(own))}"
            out.append((loc, message))
    return out


def provider_problem(name: str, provider: Any, env: Mapping[str, str]) -> str | None:
    """Why provider ``name`` cannot be used with ``env`` before any request is made — an Azure
    kind without an endpoint, a header's ``${VAR}`` (:func:`header_problem`) — else None (the
    run then fails before its first step: :func:`~agentflow.runtime.config.missing_key_message`)."""
    if str(provider.kind) in AZURE_KINDS and not provider.base_url:
        return (
            f"no endpoint for kind {provider.kind}: set base_url in [providers.{name}] to your "
            "resource's (https://RESOURCE.openai.azure.com), or AZURE_OPENAI_ENDPOINT"
        )
    if getattr(provider, "entra_token_file", None):
        try:
            read_token_file(provider.entra_token_file)
        except ConfigError as e:
            return str(e)
    return header_problem(name, provider, env)


def read_token_file(path: str) -> str:
    """The Microsoft Entra ID token held by the file ``path`` (``entra_token_file``, absolute
    once loaded; docs/models.md "Azure OpenAI"): its text without surrounding whitespace,
    registered as a secret. Raises ConfigError — naming the file, never the token — when it
    cannot be read, is empty, or holds a character an HTTP header cannot carry."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read(_TOKEN_LIMIT + 1).strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise ConfigError(
            f"cannot read the Entra ID token file {path} (entra_token_file): {reason}"
        ) from None
    if not token:
        raise ConfigError(f"the Entra ID token file {path} (entra_token_file) is empty")
    if len(token) > _TOKEN_LIMIT or not _TOKEN_CHARS.fullmatch(token):
        raise ConfigError(
            f"the Entra ID token file {path} (entra_token_file) holds more than one token or a "
            "character an HTTP header cannot carry (a space, a line break inside it, a control "
            "or non-ASCII character); write the access token alone"
        )
    register_secret(token)
    return token


def header_problem(name: str, provider: Any, env: Mapping[str, str]) -> str | None:
    """Why the ``headers`` of provider ``name`` cannot be sent with ``env`` — a ``${VAR}``
    that is unset, or whose value holds a line break or control character (never shown), or
    a value that ends up empty or with leading / trailing whitespace once filled — else
    None."""
    for header, value in provider.headers.items():
        for var in _VAR.findall(value):
            if var not in env:
                return (
                    f"the environment variable {var} (in header '{header}' of "
                    f"[providers.{name}]) is not set"
                )
            if not env[var]:  # "Gw ${GW_SECRET}" would send "Gw ", which httpx refuses
                return (
                    f"the environment variable {var} (in header '{header}' of "
                    f"[providers.{name}]) is set but empty; set it to the value to send"
                )
            if not _VISIBLE.fullmatch(env[var]):
                return (
                    f"the environment variable {var} (in header '{header}' of "
                    f"[providers.{name}]) contains a line break or a character not allowed "
                    "in an HTTP header; check for a trailing newline"
                )
        filled = _VAR.sub(lambda m: env[m.group(1)], value)
        if filled != filled.strip() or not filled:
            # httpx refuses an empty or padded value only at the first request
            how = "empty" if not filled.strip() else "padded with whitespace"
            names = sorted(set(_VAR.findall(value)))
            source = (
                f" once the environment variable {', '.join(names)} is filled in; set it "
                "to the value to send, without leading or trailing whitespace"
                if names
                else "; give the value to send, without leading or trailing whitespace"
            )
            return f"header '{header}' of [providers.{name}] is {how}{source}"
    return None


def expand_headers(name: str, provider: Any, env: Mapping[str, str]) -> dict[str, str]:
    """The headers of provider ``name`` with every ``${VAR}`` filled from ``env``; each value
    read from the environment joins the redacted secrets. Raises ConfigError
    (:func:`header_problem`) for an unset or unusable variable."""
    problem = header_problem(name, provider, env)
    if problem:
        raise ConfigError(problem)

    def fill(m: re.Match[str]) -> str:
        register_secret(env[m.group(1)])
        return env[m.group(1)]

    return {header: _VAR.sub(fill, value) for header, value in provider.headers.items()}


def header_secrets(provider: Any, env: Mapping[str, str]) -> list[str]:
    """The values the ``${VAR}`` references of ``provider``'s headers stand for (set ones)."""
    return [
        env[v] for value in provider.headers.values() for v in _VAR.findall(value) if env.get(v)
    ]
