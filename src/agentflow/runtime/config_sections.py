"""The tables of `flow.toml` as pydantic models (docs/spec/RUNTIME.md §5, §6;
docs/reference/configuration.md): ``[providers.NAME]``, ``[models]``, ``[prices.MODEL]``,
``[budget]``, ``[agents.NAME]``, ``[teams.NAME]``, ``[policy]``, ``[mcp.NAME]``, ``[tools]``,
``[plans]``, ``[chat]``, ``[planner]``, ``[telemetry]``, ``[durable]``, ``[gen]``, each
validated as it is read; :class:`ResolvedModel`, a model reference resolved.  The whole file is
:class:`agentflow.runtime.config.Config`."""

from __future__ import annotations

import re
import sys
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from agentflow.core.vocabulary import duration_ms
from agentflow.runtime.provider_options import ProviderKind

ROLES = ("chat", "planner", "solver", "repair", "judge")
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"

ModelRefs = str | list[str]


class _Strict(BaseModel):
    # every number of the config is finite: a `nan`/`inf` TOML float (which `float` fields
    # take) is refused at load with its file:line, never met at run time (a JSON request body)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


#: Upper bound of ``max_retries`` (docs/spec/RUNTIME.md §10: retries are bounded).
MAX_RETRIES_LIMIT = 20


def check_base_url(url: str) -> str:
    """``url`` when it is a usable provider base URL, else ValueError saying why.

    Wants ``http://`` or ``https://``, a host, a port (when given) in 1–65535, and no whitespace
    or control characters.
    """
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError(f"base_url {url!r} contains a space or control character")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        if "port" in str(exc).lower():
            raise ValueError(f"base_url {url!r}: port must be 1-65535") from None
        raise ValueError(f"base_url {url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"base_url must start with http:// or https://, got {url!r}")
    if not parts.hostname:
        raise ValueError(f"base_url {url!r} has no host (want e.g. http://127.0.0.1:11434/v1)")
    if port == 0:
        raise ValueError(f"base_url {url!r}: port must be 1-65535")
    return url


def check_headers(value: dict[str, str]) -> dict[str, str]:
    """``value`` when every name is a valid HTTP header name and no value holds a line break or
    control character, else ValueError saying which."""
    for name, text in value.items():
        if not re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", name):
            raise ValueError(f"header name {name!r} is not a valid HTTP header name")
        if any(ord(c) < 0x20 and c != "\t" or ord(c) == 0x7F for c in text):
            raise ValueError(
                f"the value of header '{name}' contains a line break or control character"
            )
    return value


class ProviderConfig(_Strict):
    """``[providers.NAME]``: where and how to reach a model provider.

    ``api_key_env`` names the environment variable holding the key (the key itself never lives in the
    config). ``base_url``: ``http(s)://host[:port][/path]`` (checked at load time). ``timeout`` is
    seconds one HTTP request may take from sending to the last byte of the reply, a streamed one
    included (> 0, finite); ``max_retries`` (0–20) bounds the in-client retries of
    transient errors and rate limits; ``backoff_base``/``backoff_max`` are seconds (> 0, finite);
    ``max_retry_after`` caps the seconds a ``Retry-After`` header can make a retry wait.
    ``kind = "test"`` is the built-in test model (no network, no key: answers every agent from
    its contract, :mod:`agentflow.runtime.models.test_model`); ``seed`` and ``call_tools`` apply
    to it only. A provider of kind ``openai``/``anthropic`` without ``base_url`` takes
    ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``, else the official URL (docs/decisions.md
    "Where a provider's URL comes from"); :attr:`base_url_from` says which, for messages.
    ``kind = "openai-responses"`` is OpenAI's Responses API (``OPENAI_BASE_URL``), ``kind =
    "gemini"`` Google's Gemini API (``GEMINI_BASE_URL``), ``kind = "bedrock"`` AWS Bedrock's
    Converse API (``region``, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, gives the URL;
    docs/models.md "Provider kinds"), ``kind = "azure-openai"`` / ``"azure-openai-responses"``
    Azure OpenAI (``AZURE_OPENAI_ENDPOINT``; ``azure_api``, ``api_version``, ``entra_token_env``,
    ``entra_token_file``: docs/models.md "Azure OpenAI"). ``headers`` values may hold ``${VAR}``.
    """

    kind: ProviderKind = "openai"
    seed: int = 0
    call_tools: bool = False
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    max_retries: int = Field(default=4, ge=0, le=MAX_RETRIES_LIMIT)
    backoff_base: float = Field(default=0.5, gt=0, allow_inf_nan=False)
    backoff_max: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    max_retry_after: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z0-9]+)+$")
    api_version: str | None = Field(default=None, pattern=r"^[0-9A-Za-z.-]+$")
    azure_api: Literal["v1", "deployments"] = "v1"
    entra_token_env: str | None = None
    entra_token_file: str | None = None  # relative to flow.toml (load_config makes it absolute)

    _base_url_from: str = PrivateAttr(default="")

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        return None if value is None else check_base_url(value)

    @property
    def base_url_from(self) -> str:
        """Which setting ``base_url`` came from, for messages: ``"base_url at flow.toml:9:1"``,
        ``"environment variable OPENAI_BASE_URL"``, ``"the default URL of kind 'openai' …"``
        (empty when unknown, e.g. a provider built in code)."""
        return self._base_url_from

    @field_validator("headers")
    @classmethod
    def _header_values(cls, value: dict[str, str]) -> dict[str, str]:
        return check_headers(value)


class PriceConfig(_Strict):
    """A model's price in US dollars per million tokens (``cache_read`` / ``cache_write``
    default to ``input``)."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class BudgetLimits(_Strict):
    """Limits on model use: ``inferences`` (calls), ``tokens`` (prompt + completion), ``cost``
    (US dollars). Unset: no limit."""

    inferences: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class BudgetConfig(BudgetLimits):
    """``[budget]``: the limits of each run (``inferences``, ``tokens``, ``cost``) and, under
    ``[budget.per_agent]``, of each agent step. Checked before every model call
    (docs/models.md "Budgets")."""

    per_agent: BudgetLimits | None = None


#: ``reasoning_effort`` values OpenAI-compatible servers take.
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class ModelOptions(_Strict):
    """Request options of a model (``[models.named.NAME]``; docs/models.md has the table).

    ``max_tokens``: output cap; ``max_completion_tokens``: output cap sent as
    ``max_completion_tokens`` (o-series / gpt-5; those model names get it automatically);
    ``temperature``; ``structured_output``: the contract as native structured output instead of
    prompt text; ``tool_choice``; ``parallel_tool_calls``; ``stream``: Server-Sent Events;
    ``reasoning_effort`` (OpenAI-compatible); ``thinking_budget``: Anthropic extended thinking
    budget tokens; ``system_role``: ``developer`` sends system text as a developer message
    (OpenAI reasoning models); ``prompt_cache``: Anthropic ``cache_control`` breakpoints
    (default true); ``price``: dollars per million tokens (else the genai-prices table).
    """

    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    structured_output: bool = False
    tool_choice: Literal["auto", "required", "none"] | None = None
    parallel_tool_calls: bool | None = None
    stream: bool = False
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = Field(default=None, ge=1024)
    system_role: Literal["system", "developer"] = "system"
    prompt_cache: bool = True
    price: PriceConfig | None = None


class NamedModel(ModelOptions):
    """``[models.named.NAME]``: a provider plus the provider's model name and request options.

    ``rate_limit`` (requests per second) and ``concurrency`` (requests at once) bound this
    model's calls across every process of a durable run's fleet (docs/durable.md): each call
    then goes through a queue of the durable engine.
    """

    provider: str
    model: str
    rate_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    concurrency: int | None = Field(default=None, ge=1)


class ModelsConfig(_Strict):
    """``[models]``: ``default`` and the roles (each a reference or a failover list), and ``named``."""

    default: ModelRefs | None = None
    chat: ModelRefs | None = None
    planner: ModelRefs | None = None
    solver: ModelRefs | None = None
    repair: ModelRefs | None = None
    judge: ModelRefs | None = None
    named: dict[str, NamedModel] = Field(default_factory=dict)

    @field_validator("default", "chat", "planner", "solver", "repair", "judge")
    @classmethod
    def _non_empty(cls, value: ModelRefs | None) -> ModelRefs | None:
        if isinstance(value, list) and not value:
            raise ValueError("a failover list needs at least one model")
        if isinstance(value, str) and not value.strip():
            raise ValueError("a model reference cannot be empty")
        return value


class AgentProfile(_Strict):
    """``[agents.NAME]``: the model reference and extra system prompt of an agent alias."""

    model: str | None = None
    system_prompt: str | None = None


class TeamMember(_Strict):
    """One member of ``[teams.NAME] members``: its ``model`` and ``system_prompt`` (its profile),
    and a ``description`` shown to a model choosing a member (docs/reference/agents.md)."""

    model: str | None = None
    system_prompt: str | None = None
    description: str | None = None


class TeamConfig(_Strict):
    """``[teams.NAME]``: ``main`` names the member that answers ``team.main``."""

    main: str
    members: dict[str, TeamMember] = Field(default_factory=dict)


class PolicyConfig(_Strict):
    """``[policy]``: ``allowed_tools`` patterns; ``None`` means the default policy
    (docs/spec/RUNTIME.md §4)."""

    allowed_tools: list[str] | None = None


#: Server names reserved for the other tool sources (docs/spec/RUNTIME.md §4).
RESERVED_SERVER_NAMES = frozenset({"builtin", "user", "plan"})
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

#: `command` values of an MCP server that mean "the Python interpreter running flowc"
#: (``sys.executable``), as in Jupyter kernel specs: ``python``, ``python3`` and ``python3.N`` of
#: the running version. A Python MCP server then starts with flowc's own interpreter, which has the
#: ``mcp`` SDK, wherever the project and its virtual environment are.
RUNNING_PYTHON_COMMANDS = frozenset(
    {"python", f"python{sys.version_info[0]}", f"python{sys.version_info[0]}.{sys.version_info[1]}"}
)


class McpOAuth(_Strict):
    """``[mcp.NAME.oauth]``: OAuth 2.1 for a remote (``url``) MCP server, through the SDK's
    OAuth client (discovery of the protected resource and authorization server metadata, PKCE,
    dynamic client registration or a client metadata document, token refresh, scope step-up).

    ``client_id`` / ``client_secret``: a pre-registered client (default: registered
    dynamically; values may hold ``${VAR}``); ``client_metadata_url``: an HTTPS client ID
    metadata document used instead of registration when the server supports it; ``scope``:
    the scopes to ask for (default: what the server advertises); ``redirect_port``: the
    loopback port the browser is sent back to (default: a free one); ``token_dir``: where
    tokens are kept, one file per server, mode 0600 (default ``$XDG_STATE_HOME/agentflow/
    mcp-oauth``, i.e. ``~/.local/state/agentflow/mcp-oauth``; relative to ``flow.toml``).

    ``grant = "client_credentials"``: machine-to-machine, no user: ``client_id`` with
    ``client_secret`` (``client_secret_basic``) or ``private_key`` (PEM, usually ``${VAR}``;
    a ``private_key_jwt`` assertion signed with ``signing_algorithm``, default RS256).

    ``grant = "identity_assertion"``: enterprise-managed authorization (SEP-990, "cross-app
    access"): the user's ID token from the enterprise identity provider (``id_token``, usually
    ``${VAR}``) is exchanged at the provider's ``idp_token_endpoint`` (RFC 8693, as
    ``idp_client_id`` / ``idp_client_secret`` when given) for an identity assertion grant
    (ID-JAG), which the MCP authorization server ``issuer`` (configured, never discovered)
    exchanges for an access token (RFC 7523 jwt-bearer, ``client_id`` / ``client_secret``,
    ``client_secret_basic``).
    """

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    scope: str | None = None
    redirect_port: int = Field(default=0, ge=0, le=65535)
    token_dir: str | None = None
    grant: Literal["authorization_code", "client_credentials", "identity_assertion"] = (
        "authorization_code"
    )
    private_key: str | None = None
    signing_algorithm: str = "RS256"
    issuer: str | None = None
    id_token: str | None = None
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = None

    @model_validator(mode="after")
    def _grant_needs(self) -> McpOAuth:
        if self.grant == "identity_assertion":
            needed = ("client_id", "client_secret", "issuer", "id_token", "idp_token_endpoint")
            missing = [f"`{k}`" for k in needed if not getattr(self, k)]
            if missing:
                raise ValueError(f'`grant = "identity_assertion"` needs {", ".join(missing)}')
        if self.grant == "client_credentials":
            if not self.client_id:
                raise ValueError('`grant = "client_credentials"` needs `client_id`')
            if not self.client_secret and not self.private_key:
                raise ValueError(
                    '`grant = "client_credentials"` needs `client_secret` or `private_key`'
                )
        return self


class McpServer(_Strict):
    """``[mcp.NAME]``: one MCP server (docs/spec/RUNTIME.md §4, §6), reached through the official
    ``mcp`` SDK.

    Either stdio — ``command`` (the executable), ``args``, ``env`` (extra environment variables on
    top of the SDK's minimal default environment), ``cwd`` (relative to the directory of
    ``flow.toml``) — or streamable HTTP — ``url`` and ``headers``. Values of ``env`` and ``headers``
    may hold ``${VAR}`` references, expanded from the environment when the server is connected (so
    secrets stay out of the file; they never reach traces or messages).

    ``timeout``: seconds one tool call may take (then ``timeout``); ``connect_timeout``: seconds to
    start and initialize the connection (then ``tool_error``).

    A ``command`` of ``python``, ``python3`` or ``python3.N`` (the running version) is replaced at
    load by the interpreter running flowc (:data:`RUNNING_PYTHON_COMMANDS`).

    What the server may ask of a run: ``elicitation`` — ``ask`` (default: the run's interlocutor
    asks the user; unanswered fields take their defaults), ``defaults`` (answer with the
    defaults, never ask) or ``decline``; ``sampling`` — the role or named model that answers the
    server's model requests (default ``chat``; usage counts in the run's), or ``false`` to
    refuse them.  ``oauth``: OAuth 2.1 for a ``url`` server (:class:`McpOAuth`).
    """

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=120.0, gt=0)
    connect_timeout: float = Field(default=30.0, gt=0)
    elicitation: Literal["ask", "defaults", "decline"] = "ask"
    sampling: str | Literal[False] = "chat"
    oauth: McpOAuth | None = None

    @field_validator("command")
    @classmethod
    def _running_python(cls, value: str | None) -> str | None:
        if value is not None and value.strip() in RUNNING_PYTHON_COMMANDS and sys.executable:
            return sys.executable
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "an MCP server needs exactly one of `command` (stdio) or `url` (streamable HTTP)"
            )
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError(
                "`args`, `env` and `cwd` apply to stdio servers (`command`), not `url`"
            )
        if self.command is not None and self.headers:
            raise ValueError("`headers` apply to HTTP servers (`url`), not `command`")
        if self.command is not None and self.oauth is not None:
            raise ValueError("`oauth` applies to HTTP servers (`url`), not `command`")
        if isinstance(self.sampling, str) and not self.sampling.strip():
            raise ValueError("`sampling` is a role or named model, or false to refuse")
        if self.command is not None and not self.command.strip():
            raise ValueError("`command` cannot be empty")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError(f"`url` must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command is not None else "http"


class ToolsConfig(_Strict):
    """``[tools]``: ``modules`` — Python modules (dotted names, or ``.py`` paths relative to
    ``flow.toml``) whose functions become ``user__*`` tools; ``entry_points`` — also load the
    ``agentflow.tools`` entry-point group of installed packages (default true);
    ``max_result_chars`` — the size cap of a tool result shown to a model in an agent step
    (docs/spec/RUNTIME.md §10; longer results are truncated with a marker; default 20,000);
    ``isolation`` — ``"thread"`` (default: user tools run on threads of the run's process) or
    ``"process"`` (each call in a worker process that is killed when the call is cancelled, so a
    tool that holds the GIL or ignores cancellation cannot outlive its timeout or the deadline)."""

    modules: list[str] = Field(default_factory=list)
    entry_points: bool = True
    max_result_chars: int = Field(default=20_000, ge=100)
    isolation: Literal["thread", "process"] = "thread"


class PlansConfig(_Strict):
    """``[plans]``: ``dir`` — the plans directory (relative to ``flow.toml``) whose plans become
    ``plan__*`` tools; default ``plans/`` beside ``flow.toml`` when it exists."""

    dir: str | None = None


class ChatConfig(_Strict):
    """``[chat]``: the ``flowc ask`` loop (seed 002 "The agent loop"): ``max_agent_iterations`` —
    chat-model rounds per question (default 10); ``max_result_chars`` — tool-result size cap."""

    max_agent_iterations: int = Field(default=10, ge=1)
    max_result_chars: int = Field(default=20_000, ge=100)


class PlannerConfig(_Strict):
    """``[planner]``: ``plan_and_execute`` (docs/spec/RUNTIME.md §9): ``max_replans`` (default 2)
    and ``repair_attempts`` — repair-role fix-ups of a plan that does not load (default 1)."""

    max_replans: int = Field(default=2, ge=0)
    repair_attempts: int = Field(default=1, ge=0)


class TelemetryConfig(_Strict):
    """``[telemetry]``: OpenTelemetry export of runs over OTLP/HTTP (docs/observability.md).

    Export is on for every run with this configuration when ``endpoint`` is set (``flowc run
    --otel [ENDPOINT]`` turns it on for one run; ``enabled = false`` keeps the settings but turns
    it off). ``endpoint``: an ``http(s)://`` OTLP/HTTP endpoint — a base such as
    ``http://127.0.0.1:4318`` gets ``/v1/traces`` appended, a URL with a path is used as is.
    ``headers``: sent with every export (values may hold ``${VAR}`` references, expanded from the
    environment; never put into spans). ``capture_content``: also record prompts, replies, tool
    arguments and results, step inputs and outputs on spans (default false; known secrets are
    redacted either way). ``service_name``: the ``service.name`` resource attribute. ``timeout``:
    seconds one export may take.
    """

    enabled: bool = True
    endpoint: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    capture_content: bool = False
    service_name: str = "agentflow"
    timeout: float = Field(default=10.0, gt=0, le=300, allow_inf_nan=False)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_base_url(value)
        except ValueError as exc:
            raise ValueError(str(exc).replace("base_url", "endpoint")) from None

    @field_validator("headers")
    @classmethod
    def _header_values(cls, value: dict[str, str]) -> dict[str, str]:
        return check_headers(value)

    @property
    def active(self) -> bool:
        """True when this table turns export on by itself (an endpoint, and not disabled)."""
        return self.enabled and self.endpoint is not None


class DurableConfig(_Strict):
    """``[durable]``: where durable runs keep their state (docs/durable.md).

    ``database``: a SQLite file (relative to the directory of ``flow.toml``; default
    ``.flowc/durable.sqlite``) or a PostgreSQL URL (``postgresql://…``, shared by a fleet of
    ``flowc worker`` processes; ``${VAR}`` references are expanded from the environment).
    ``ask_timeout``: how long a question of a durable run waits for its answer before its
    ``when_unanswered`` decides (a duration such as ``24h``; default: until answered).
    ``worker_concurrency``: the most map items of a fleet run one ``flowc worker`` runs at once
    (per map ``limit``: items of maps with different limits wait in different queues); the
    rest wait for another worker (default: no cap beyond the map's own ``limit``). Set by the
    run's ``flow.toml``, it holds for every worker of the fleet.  On Temporal: the most
    operations (tool, model, MCP calls) one process runs at once, from its own ``flow.toml``.
    ``synchronous``: SQLite's ``synchronous`` level for a SQLite database (WAL): ``full``
    (default: a step recorded as finished survives a power loss), ``normal`` (it survives the
    process's crash or kill, not a power loss or an OS crash: the last transactions may be
    lost, never the database) or ``extra``; docs/durable.md "Big maps".
    """

    database: str = ".flowc/durable.sqlite"
    ask_timeout: str | None = None
    worker_concurrency: int | None = Field(default=None, ge=1, le=10_000)
    synchronous: Literal["normal", "full", "extra"] = "full"
    #: the durable engine: ``dbos`` (``database``) or ``temporal`` (the settings below;
    #: docs/durable.md "Temporal")
    engine: Literal["dbos", "temporal"] = "dbos"
    #: Temporal: the frontend's ``host:port`` (``${VAR}`` expanded)
    address: str = "127.0.0.1:7233"
    #: Temporal: the namespace of agentflow's workflows
    namespace: str = "default"
    #: Temporal: the task queue every process of a run polls (its workers share it)
    task_queue: str = "agentflow"
    #: Temporal: connect over TLS (Temporal Cloud); the API key is read from the environment
    #: variable ``TEMPORAL_API_KEY``, a client certificate from ``TEMPORAL_TLS_CLIENT_CERT_PATH``
    #: and ``TEMPORAL_TLS_CLIENT_KEY_PATH`` (never from this file)
    tls: bool = False
    #: Temporal: a recorded value larger than this many bytes goes to the claim-check store
    claim_check_bytes: int = Field(default=1_000_000, ge=1_024, le=2_000_000)
    #: Temporal: the claim-check store, a directory every process of the run can read
    #: (relative to flow.toml's directory)
    claim_check_dir: str = ".flowc/claims"
    #: Temporal: the most events one workflow history of a run may reach before the unit
    #: fails with a message that says so (Temporal terminates a workflow at 51,200 events,
    #: which would leave the run ``cancelled`` with no word of why)
    history_events: int = Field(default=10_000, ge=50, le=50_000)
    #: Temporal: how many items of a map each batch workflow runs (a map wider than this runs
    #: as child workflows ``RUN/<map path>/batch.K``); 0: ``history_events // 10`` (for tests
    #: and tuning; recorded in the run's input with ``history_events``: every worker of a run
    #: uses the starting process's)
    map_batch: int = Field(default=0, ge=0, le=50_000)

    @field_validator("ask_timeout")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is None:
            return None

        duration_ms(value)  # raises ValueError naming the accepted forms
        return value

    @property
    def ask_timeout_s(self) -> float | None:
        """``ask_timeout`` in seconds (None: wait until answered)."""
        if self.ask_timeout is None:
            return None

        return duration_ms(self.ask_timeout) / 1000.0


class ResolvedModel(ModelOptions):
    """One concrete model: provider name + provider config + the provider's model name + options."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    label: str
    provider_name: str
    provider: ProviderConfig
    model: str
    tool_choice: str | None = None  # type: ignore[assignment]


class GenConfig(_Strict):
    """``[gen]``: the client modules ``flowc gen python`` wrote (paths relative to
    ``flow.toml``), which ``flowc check`` compares with their flows (``stale-generated-module``,
    docs/reference/python-clients.md)."""

    python: list[str] = Field(default_factory=list)
