"""`flow.toml` configuration (docs/spec/RUNTIME.md §5, §6).

`load_config(path=None, *, near=None, env=None) -> Config` reads the given path, or finds the
nearest `flow.toml` from the directory of ``near`` (the `.flow` or plan file the command acts on;
default: the current directory) upward — the one rule of :mod:`agentflow.core.config_file` —
and validates it into pydantic models.
With no file at all, ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (``OPENAI_MODEL`` optional, default
``gpt-4o-mini``) define a default OpenAI-compatible provider; failing that ``ANTHROPIC_API_KEY``
(``ANTHROPIC_MODEL`` optional) defines an Anthropic one.

Model references (in ``[models]`` roles, ``[agents.X] model``, team members, steps' ``model:``):

* a role: ``default``, ``chat``, ``planner``, ``solver``, ``repair``, ``judge`` (unset roles fall
  back to ``default``);
* a named model: a key of ``[models.named]``;
* ``"provider:model"``: a provider (a key of ``[providers]``, or the implicit ``openai`` /
  ``anthropic`` providers configured from the environment) and the provider's model name.

A role may be a list of references: failover order. Errors are :class:`agentflow.errors.ConfigError`
naming the file and, where it can be found, the line.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError

from agentflow.core.config_file import CONFIG_FILENAME as CONFIG_FILENAME  # the one rule
from agentflow.core.config_file import find_config as find_config
from agentflow.core.redaction import register_secret
from agentflow.errors import ConfigError
from agentflow.runtime.config_env import (
    _env_default,
    _register_secrets,
    _url_from_environment,
    _url_from_file,
    api_key_problem,
    missing_key_message,
    no_model_message,
)
from agentflow.runtime.config_errors import format_validation, key_location, strip_file
from agentflow.runtime.config_sections import (
    _SERVER_NAME,
    DEFAULT_ANTHROPIC_BASE_URL,
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_GEMINI_BASE_URL,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_MODEL,
    MAX_RETRIES_LIMIT,
    RESERVED_SERVER_NAMES,
    ROLES,
    RUNNING_PYTHON_COMMANDS,
    AgentProfile,
    BudgetConfig,
    BudgetLimits,
    ChatConfig,
    DurableConfig,
    GenConfig,
    McpOAuth,
    McpServer,
    ModelOptions,
    ModelRefs,
    ModelsConfig,
    NamedModel,
    PlannerConfig,
    PlansConfig,
    PolicyConfig,
    PriceConfig,
    ProviderConfig,
    ReasoningEffort,
    ResolvedModel,
    TeamConfig,
    TeamMember,
    TelemetryConfig,
    ToolsConfig,
    _Strict,
    check_base_url,
    check_headers,
)
from agentflow.runtime.provider_options import key_problems as provider_key_problems
from agentflow.runtime.provider_options import table_problems as provider_table_problems

#: the public names of flow.toml's configuration: this module's and, re-exported, those of
#: config_sections.py (the tables' models) and config_env.py (the environment, key messages)
__all__ = [
    "CONFIG_FILENAME",
    "Config",
    "find_config",
    "load_config",
    "missing_key_message",
    "no_model_message",
    "api_key_problem",
    "ROLES",
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "DEFAULT_GEMINI_BASE_URL",
    "ModelRefs",
    "MAX_RETRIES_LIMIT",
    "check_base_url",
    "check_headers",
    "ProviderConfig",
    "PriceConfig",
    "BudgetLimits",
    "BudgetConfig",
    "ReasoningEffort",
    "ModelOptions",
    "NamedModel",
    "ModelsConfig",
    "AgentProfile",
    "TeamMember",
    "TeamConfig",
    "PolicyConfig",
    "RESERVED_SERVER_NAMES",
    "RUNNING_PYTHON_COMMANDS",
    "McpOAuth",
    "McpServer",
    "ToolsConfig",
    "PlansConfig",
    "ChatConfig",
    "PlannerConfig",
    "TelemetryConfig",
    "DurableConfig",
    "ResolvedModel",
    "GenConfig",
]


class Config(_Strict):
    """The whole configuration. ``path`` is the file it came from (``None``: environment only)."""

    models: ModelsConfig = Field(default_factory=ModelsConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    agents: dict[str, AgentProfile] = Field(default_factory=dict)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    mcp: dict[str, McpServer] = Field(default_factory=dict)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    plans: PlansConfig = Field(default_factory=PlansConfig)
    chat: ChatConfig = Field(default_factory=ChatConfig)
    gen: GenConfig = Field(default_factory=GenConfig)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    durable: DurableConfig = Field(default_factory=DurableConfig)
    path: Path | None = None

    _env: Mapping[str, str] = PrivateAttr(default_factory=dict)

    # ------------------------------------------------------------------ queries

    @property
    def env(self) -> Mapping[str, str]:
        """The environment the configuration was loaded against (API keys are read from it)."""
        return self._env

    def has_model(self) -> bool:
        """True when the ``chat`` role (hence at least ``default``) resolves to a model."""
        return self.models.chat is not None or self.models.default is not None

    def base_dir(self) -> Path:
        """The directory relative paths of the configuration are resolved against: the directory
        of ``flow.toml``, or the current directory when there is no file."""
        return self.path.parent if self.path else Path.cwd()

    def where(self) -> str:
        """The file name for messages; with no file, ``"no flow.toml (the configuration comes
        from the environment)"`` (a bare ``environment:`` read as a mistake of its own)."""
        return (
            str(self.path)
            if self.path
            else "no flow.toml (the configuration comes from the environment)"
        )

    def provider(self, name: str) -> ProviderConfig:
        """The provider ``name``: from ``[providers]``, else the implicit ``openai``/``anthropic``.

        Raises ConfigError for an unknown provider.
        """
        if name in self.providers:
            return self.providers[name]
        implicit = {
            "openai": ("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL, "OPENAI_API_KEY"),
            "anthropic": ("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_BASE_URL, "ANTHROPIC_API_KEY"),
        }
        if name in implicit:
            _, _, key_env = implicit[name]
            provider = ProviderConfig(kind=name, api_key_env=key_env)
            _url_from_environment(provider, self._env)
            return provider
        known = sorted({*self.providers, "openai", "anthropic"})
        raise ConfigError(
            f"{self.where()}: unknown provider '{name}' (known: {', '.join(known)}); "
            f"declare it under [providers.{name}]"
        )

    def resolve(self, ref: str) -> list[ResolvedModel]:
        """Resolve a role, named model or ``provider:model`` into its failover list (≥ 1 entry).

        Roles fall back to ``default``. Raises ConfigError (with :func:`no_model_message` when no model
        is configured at all, or naming the unknown reference).
        """
        return self._resolve(ref, set())

    def _resolve(self, ref: str, seen: set[str]) -> list[ResolvedModel]:
        if ref in seen:
            raise ConfigError(f"{self.where()}: model reference '{ref}' refers to itself")
        seen = seen | {ref}
        if ref == "default" or ref in ROLES:
            value = getattr(self.models, ref)
            if value is None and ref != "default":
                value = self.models.default
            if value is None:
                raise ConfigError(no_model_message(self, role=ref))
            refs = [value] if isinstance(value, str) else list(value)
            out: list[ResolvedModel] = []
            for item in refs:
                if item == ref:
                    raise ConfigError(f"{self.where()}: model role '{ref}' refers to itself")
                out.extend(self._resolve(item, seen))
            return out
        if ref in self.models.named:
            named = self.models.named[ref]
            options = named.model_dump(exclude={"provider", "model", "rate_limit", "concurrency"})
            return [
                ResolvedModel(
                    label=ref,
                    provider_name=named.provider,
                    provider=self.provider(named.provider),
                    model=named.model,
                    **options,
                )
            ]
        if ":" in ref:
            provider_name, _, model = ref.partition(":")
            if not provider_name or not model:
                raise ConfigError(
                    f"{self.where()}: bad model reference '{ref}' (want provider:model)"
                )
            return [
                ResolvedModel(
                    label=ref,
                    provider_name=provider_name,
                    provider=self.provider(provider_name),
                    model=model,
                )
            ]
        choices = ["default", *ROLES, *sorted(self.models.named)]
        raise ConfigError(self._unknown_model(ref, choices))

    def _unknown_model(self, ref: str, choices: list[str]) -> str:
        """Why ``ref`` names no model: the models known and where they come from — the named
        models of the configuration file (``[models.named.NAME]``), or none when there is no
        file (the configuration is the environment's) — what a model reference may be, and the
        nearest spelling (docs/reference/configuration.md "[models]: roles")."""
        roles = ", ".join(["default", *ROLES])
        named = sorted(self.models.named)
        if self.path is None:
            known = (
                f"unknown model '{ref}': there is no flow.toml, so no model is named (the "
                "configuration comes from the environment: OPENAI_API_KEY, OPENAI_MODEL …)"
            )
        elif named:
            known = (
                f"{self.path}: unknown model '{ref}': its named models ([models.named.NAME]) "
                f"are {', '.join(named)}"
            )
        else:
            known = f"{self.path}: unknown model '{ref}': it names no model ([models.named.NAME])"
        return (
            f"{known}; name a role ({roles}), a named model ([models.named.{ref}] in "
            f"flow.toml) or 'provider:model'{self._model_suggestion(ref, choices)}"
        )

    def _model_suggestion(self, ref: str, choices: list[str]) -> str:
        """The end of the unknown-model error: a role or named model spelt nearly so, else the
        model with its provider — the one its name belongs to (``gpt-…`` → openai kinds,
        ``claude-…`` → anthropic, ``gemini-…`` → gemini), else every configured provider."""
        close = difflib.get_close_matches(ref, choices, n=1, cutoff=0.75)
        if close:
            return f"; did you mean '{close[0]}'?"
        providers = sorted({*self.providers, "openai", "anthropic"})
        kind = next((k for p, k in _MODEL_FAMILIES if ref.lower().startswith(p)), None)
        kinds = {p: str(self.providers[p].kind) if p in self.providers else p for p in providers}
        guesses = [p for p in providers if kind and kinds[p] == kind]
        guesses = guesses or [p for p in providers if p in self.providers] or providers
        shown = " or ".join(f"'{p}:{ref}'" for p in guesses[:3])
        return (
            f"; a model is named with its provider: did you mean {shown}? "
            f"(providers: {', '.join(providers)})"
        )

    def api_key(self, provider: ProviderConfig) -> str | None:
        """The provider's API key from the environment (``None`` when unset or not needed)."""
        name = provider.api_key_env or provider.entra_token_env
        if not name:
            return None
        key = self._env.get(name) or None
        if key is not None:
            register_secret(key)
        return key


#: the provider kind a model name belongs to, by its prefix (the unknown-model suggestion)
_MODEL_FAMILIES = [(p, "openai") for p in ("gpt", "chatgpt", "o1", "o3", "o4")] + [
    ("claude", "anthropic"),
    ("gemini", "gemini"),
]


def load_config(
    path: Path | str | None = None,
    *,
    near: Path | str | os.PathLike[str] | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Load the configuration (docs/spec/RUNTIME.md §6; docs/reference/configuration.md "Which
    flow.toml").

    ``path``: an explicit file (must exist); otherwise the nearest ``flow.toml`` from ``near``
    upward — the `.flow` or plan file (or directory) the command acts on, searched from its
    directory — or from ``cwd`` (default: the current directory) when ``near`` is None;
    otherwise the environment alone. ``env`` defaults to ``os.environ``. When the file sets no
    ``[models] default``, the environment default (if any) fills it in.

    Raises ConfigError naming ``file:line`` for unreadable files, TOML syntax errors and invalid values.
    """
    env = dict(os.environ) if env is None else dict(env)
    file: Path | None
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"{file}: configuration file not found")
    else:
        file = find_config(near if near is not None else cwd)
        if file is not None:
            file = file.resolve()  # recorded by durable runs, read by workers elsewhere
    data: dict[str, Any] = {}
    text = ""
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: cannot read configuration: {exc}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            msg = str(exc)
            m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
            if m:
                at, msg = f"{file}:{m.group(1)}:{m.group(2)}", msg[: m.start()].strip()
                raise ConfigError(f"{at}: invalid TOML: {msg}") from None
            raise ConfigError(f"{file}: invalid TOML: {msg}") from None
    if "path" in data:
        raise ConfigError(f"{key_location(file, text, ('path',))}: unknown section or key 'path'")
    if found := provider_key_problems(data, list(ProviderConfig.model_fields)):
        raise ConfigError("\n".join(f"{key_location(file, text, k)}: {m}" for k, m in found))
    try:
        # strict: TOML has types, so "5" is no integer and "yes" no boolean
        config = Config.model_validate({**data, "path": file}, strict=True)
    except ValidationError as exc:
        raise ConfigError(format_validation(exc, file, text, Config)) from None
    config._env = env
    for name, provider in config.providers.items():
        for loc, problem in provider_table_problems(provider):
            where = key_location(file, text, ("providers", name, *loc))
            raise ConfigError(f"{where}: [providers.{name}] {problem}")
        if provider.entra_token_file:  # read before each request (models/azure.py)
            provider.entra_token_file = str(config.base_dir() / provider.entra_token_file)
        _url_from_file(name, provider, file, text, env)
        _url_from_environment(provider, env)
    _register_secrets(config, env)
    if config.models.default is None:
        default = _env_default(env)
        if default is not None:
            config.models.default = default
    _check_references(config, text)
    return config


def _check_references(config: Config, text: str) -> None:
    """Fail early on references to unknown providers / models / team members."""
    file = config.where()
    for name, named in config.models.named.items():
        if named.provider not in config.providers and named.provider not in ("openai", "anthropic"):
            where = key_location(file, text, ("models", "named", name, "provider"))
            raise ConfigError(
                f"{where}: [models.named.{name}] names provider '{named.provider}', "
                f"which is not declared under [providers.{named.provider}]"
            )
    for role in ("default", *ROLES):
        value = getattr(config.models, role)
        if value is None:
            continue
        listed = not isinstance(value, str)  # a failover list: its item is named
        for index, ref in enumerate([value] if isinstance(value, str) else value, start=1):
            key = f"[models] {role}" + (f" (item {index})" if listed else "")
            where = key_location(file, text, ("models", role))
            if not ref.strip():  # the whole reference empty is the validator's
                raise ConfigError(
                    f"{where}: {key}: a model reference cannot be empty; got the string "
                    f"{json.dumps(ref)}"
                )
            try:
                config.resolve(ref)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {key}: {strip_file(exc, file)}") from None
    for server in config.mcp:
        if not _SERVER_NAME.match(server) or "__" in server or server in RESERVED_SERVER_NAMES:
            where = key_location(file, text, ("mcp", server))
            raise ConfigError(
                f"{where}: [mcp.{server}]: invalid server name '{server}' (letters, digits, "
                "'-' and single '_'; not builtin, user or plan): tools are named SERVER__tool"
            )
    # agent profiles and team members name a model too: an unknown one (a typo) is reported at
    # load, not when the agent's step runs after the earlier steps have spent their work.
    # Roles are skipped: with no model at all (e.g. `--replay`) they need not resolve.
    profiles: list[tuple[tuple[str, ...], str, str | None]] = [
        (("agents", name, "model"), f"[agents.{name}] model", prof.model)
        for name, prof in config.agents.items()
    ]
    profiles += [
        (("teams", team_name, "members"), f"[teams.{team_name}] member '{member}' model", m.model)
        for team_name, team in config.teams.items()
        for member, m in team.members.items()
    ]
    for loc, label, ref in profiles:
        if ref is None or ref == "default" or ref in ROLES:
            continue
        try:
            config.resolve(ref)
        except ConfigError as exc:
            raise ConfigError(
                f"{key_location(file, text, loc)}: {label}: {strip_file(exc, file)}"
            ) from None
    for team_name, team in config.teams.items():
        if team.members and team.main not in team.members:
            where = key_location(file, text, ("teams", team_name, "main"))
            raise ConfigError(
                f"{where}: [teams.{team_name}] main = '{team.main}' is not one of its members "
                f"({', '.join(sorted(team.members))})"
            )
