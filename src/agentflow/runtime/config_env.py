"""What `flow.toml` takes from the environment, and the messages when it lacks something
(docs/spec/RUNTIME.md §6): a provider's URL from its kind's variable or the official one
(or where the file wrote it), the default model when the file sets none, the secrets registered
for redaction (API keys, credential headers, ``${VAR}`` values), an API key's problem, the
message for a missing key (:func:`missing_key_message`) and for no model configured
(:func:`no_model_message`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentflow.core.redaction import register_secret, register_url
from agentflow.errors import ConfigError
from agentflow.runtime.config_errors import key_location
from agentflow.runtime.config_sections import (
    DEFAULT_ANTHROPIC_BASE_URL,
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_GEMINI_BASE_URL,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_MODEL,
    ProviderConfig,
    check_base_url,
)
from agentflow.runtime.provider_options import AZURE_KINDS, header_secrets, provider_problem

if TYPE_CHECKING:
    from agentflow.runtime.config import Config


#: Where a provider of each kind finds its URL when ``base_url`` is not written: (variable, default).
_URL_ENV = {
    "openai": ("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL),
    "anthropic": ("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_BASE_URL),
    "openai-responses": ("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL),
    "gemini": ("GEMINI_BASE_URL", DEFAULT_GEMINI_BASE_URL),
}


def _url_from_environment(provider: ProviderConfig, env: Mapping[str, str]) -> None:
    """Fill a provider's unset ``base_url`` from its kind's environment variable, else the
    official URL, recording which in ``base_url_from``; ConfigError for a malformed variable.
    A ``bedrock`` provider's URL is its region's runtime endpoint (``region``, else
    ``AWS_REGION`` / ``AWS_DEFAULT_REGION``; none when no region is known)."""
    if provider.kind in AZURE_KINDS and provider.base_url is None:
        if env.get("AZURE_OPENAI_ENDPOINT"):  # no default: each resource has its own endpoint
            try:
                provider.base_url = check_base_url(env["AZURE_OPENAI_ENDPOINT"])
            except ValueError as exc:
                raise ConfigError(f"environment variable AZURE_OPENAI_ENDPOINT: {exc}") from None
            provider._base_url_from = "environment variable AZURE_OPENAI_ENDPOINT"
        return
    if provider.kind == "bedrock" and provider.base_url is None:
        region = provider.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region and re.fullmatch(r"[a-z]{2}(-[a-z0-9]+)+", region):
            provider.base_url = f"https://bedrock-runtime.{region}.amazonaws.com"
            provider._base_url_from = (
                "the region in its table" if provider.region else "the AWS region variables"
            )
        return
    if provider.kind not in _URL_ENV or provider.base_url is not None:
        return
    url_env, default_url = _URL_ENV[provider.kind]
    if env.get(url_env):
        try:
            provider.base_url = check_base_url(env[url_env])
        except ValueError as exc:
            raise ConfigError(f"environment variable {url_env}: {exc}") from None
        provider._base_url_from = f"environment variable {url_env}"
    else:
        provider.base_url = default_url
        provider._base_url_from = (
            f"the default URL of kind '{provider.kind}' ({url_env} is not set)"
        )


def _url_from_file(
    name: str, provider: ProviderConfig, file: Path | None, text: str, env: Mapping[str, str]
) -> None:
    """Record where a ``base_url`` written in the file is (``file:line:col``), and that it wins
    over its kind's environment variable when that is set too."""
    if provider.base_url is None:
        return
    where = f"base_url at {key_location(file, text, ('providers', name, 'base_url'))}"
    url_env = _URL_ENV.get(provider.kind, ("", ""))[0]
    if url_env and env.get(url_env) and env[url_env].rstrip("/") != provider.base_url.rstrip("/"):
        where += f" (it takes precedence over the environment variable {url_env}, also set)"
    provider._base_url_from = where


_PUBLIC_URLS = (DEFAULT_OPENAI_BASE_URL, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_GEMINI_BASE_URL)


def missing_key_message(config: Config, roles: tuple[str, ...] = ("chat",)) -> str | None:
    """A message naming the environment variable that holds a provider's API key when the
    configuration names one (``api_key_env``) for the models of ``roles`` and it is unset, or set
    to a value that cannot travel in an HTTP header (a trailing newline, …; the message never
    shows the key) — or a provider that cannot be used (an Azure one without an endpoint, a
    header's unset ``${VAR}``: :func:`provider_problem`) — else None.  Lets a run fail before its
    first step instead of at its first model call."""
    for role in roles:
        try:
            resolved = config.resolve(role)
        except ConfigError:
            continue
        for r in resolved:
            env_name = r.provider.api_key_env or r.provider.entra_token_env
            unusable = provider_problem(r.provider_name, r.provider, config.env)
            if unusable:  # an Azure provider without an endpoint, a header's unset ${VAR}
                return f"provider '{r.provider_name}': {unusable}"
            declared = r.provider_name in config.providers
            public = r.provider.base_url in _PUBLIC_URLS
            problem = api_key_problem(config.env.get(env_name) if env_name else None, env_name)
            if problem:
                return f"provider '{r.provider_name}': {problem}"
            if env_name and (declared or public) and not config.env.get(env_name):
                where = f" in {config.path}" if config.path else ""
                return (
                    f"the environment variable {env_name} (the API key of provider "
                    f"'{r.provider_name}', [providers.{r.provider_name}]{where}) is not set; set it, "
                    "or run with --replay CASSETTE to answer model requests from a recording"
                )
    return None


def no_model_message(
    config: Config | None = None, role: str = "chat", agents: Iterable[str] = ()
) -> str:
    """The message shown when no model is configured: says exactly what to set
    (docs/spec/RUNTIME.md §6) in the user's terms — the agents the flow uses (``agents``: the
    names of its ``use agent "NAME"``) and their ``[agents.NAME] model``, else the ``[models]``
    key of ``role`` — and the offline options: the built-in test model, which needs nothing
    (``--model test`` of ``flowc run``, ``ask``, ``eval`` and ``serve``; ``kind = "test"``), and
    ``--replay``."""
    where = f" (read {config.path})" if config is not None and config.path else ""
    names = sorted(set(agents))
    if names:
        quoted = " and ".join(f'"{n}"' for n in names)
        keys = " or ".join(f"[agents.{n}] model" for n in names)
        what = (
            f" for agent{'s' * (len(names) > 1)} {quoted} (`use agent {quoted}`){where}: "
            f"set {keys} in flow.toml, or [models] default for every agent"
        )
    else:
        others = " (or [models] default)" if role != "default" else ""
        what = f": set [models] {role}{others} in flow.toml{where}"
    return (
        f"no model is configured{what}; or set the environment variables "
        "OPENAI_BASE_URL and/or OPENAI_API_KEY (optionally OPENAI_MODEL, default "
        f"'{DEFAULT_OPENAI_MODEL}') or ANTHROPIC_API_KEY. A flow.toml, e.g.:\n"
        "  [models]\n"
        '  default = "local:qwen2.5:7b"\n'
        "  [providers.local]\n"
        '  kind = "openai"\n'
        '  base_url = "http://127.0.0.1:11434/v1"\n'
        # offline, with no model at all (docs/reference/cli.md `flowc run`)
        "Or try it offline with the built-in test model (made-up answers, no network, no key): "
        '`--model test`, or a provider with kind = "test" in flow.toml; `--replay CASSETTE` '
        "answers from a recorded run (`--record CASSETTE`)."
    )


#: Header names whose values are credentials (registered as secrets, never shown).
_SECRET_HEADER = re.compile(r"(?i)authorization|api[-_]?key|token|secret|password|cookie")
_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _register_secrets(config: Config, env: Mapping[str, str]) -> None:
    """Tell the redaction layer (:mod:`agentflow.core.redaction`) every secret this configuration
    can put on the wire: each provider's API key, credential-like header values, and the values
    of ``${VAR}`` references given to MCP servers."""

    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        register_secret(env.get(name))
    for variable, _ in _URL_ENV.values():  # a URL with a password or key in it
        register_url(env.get(variable))
    register_url(config.telemetry.endpoint)
    for server in config.mcp.values():
        register_url(server.url)
    for provider in config.providers.values():
        register_url(provider.base_url)
        for secret in (provider.api_key_env, provider.entra_token_env):
            register_secret(env.get(secret) if secret else None)
        for value in header_secrets(provider, env):
            register_secret(value)
        for header, value in provider.headers.items():
            if _SECRET_HEADER.search(header):
                register_secret(value)
    for server in config.mcp.values():
        for key, value in (*server.env.items(), *server.headers.items()):
            for var in _VAR_REF.findall(value):
                register_secret(env.get(var))
            if _SECRET_HEADER.search(key) and not _VAR_REF.search(value):
                register_secret(value)


def _env_default(env: Mapping[str, str]) -> str | None:
    if env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"):
        return "openai:" + (env.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL)
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic:" + (env.get("ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL)
    return None


#: What an API key may hold: visible ASCII only (it travels in an HTTP header).
_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


def api_key_problem(key: str | None, env_name: str | None = None) -> str | None:
    """Why ``key`` cannot be sent in an HTTP header, or None when it can (or is unset).

    The message names the variable (``$VAR``), never the key: a line break (a key file's trailing
    newline), a space, a control or non-ASCII character would be refused by the HTTP layer, whose
    error would quote the header.
    """
    if not key or _KEY_CHARS.fullmatch(key):
        return None
    where = f"${env_name}" if env_name else "the configuration"
    what = "a line break" if ("\n" in key or "\r" in key) else "a character"
    return (
        f"the API key in {where} contains {what} not allowed in an HTTP header (line breaks, "
        "spaces, control and non-ASCII characters are refused); check for a trailing newline "
        "from the file it was read from"
    )
