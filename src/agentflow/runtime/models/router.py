"""Role → client resolution, failover and usage accounting (docs/spec/RUNTIME.md §5).

``ModelRouter(config).client_for("judge")`` gives a :class:`RoutedClient` that tries the role's models
in failover order (next model on a ``transient`` or ``rate_limit`` ModelError, after that client's own
retries) and adds every successful inference to ``router.usage``: tokens (cache reads and writes
apart when the provider reports them) and, when the model has a price
(:mod:`agentflow.runtime.models.prices`), its cost in dollars. Before each provider call the
budgets in force are checked (:mod:`agentflow.runtime.models.budget`): a call that would exceed
one is not made.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agentflow.errors import ConfigError, ModelError, ModelErrorKind
from agentflow.runtime.config import Config, ProviderConfig, ResolvedModel
from agentflow.runtime.interrupt import refuse_when_stopped
from agentflow.runtime.models.azure import AzureOpenAIClient, AzureOpenAIResponsesClient
from agentflow.runtime.models.base import (
    ChatRequest,
    ChatResponse,
    ModelClient,
    add_usage,
    collect_bad_counts,
    describe_bad_counts,
    token_count,
)
from agentflow.runtime.models.bedrock import BedrockClient, region_of
from agentflow.runtime.models.budget import charge_budgets, reserve_budgets
from agentflow.runtime.models.gemini import GeminiClient
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai import OpenAIClient
from agentflow.runtime.models.openai_responses import OpenAIResponsesClient
from agentflow.runtime.models.prices import Price, PriceBook
from agentflow.runtime.models.test_model import TestModel
from agentflow.runtime.provider_options import AZURE_KINDS, expand_headers

if TYPE_CHECKING:  # memo imports cassette, which imports this module
    from agentflow.runtime.models.memo import ModelMemo

ClientFactory = Callable[[ResolvedModel], ModelClient]

#: The step path of the model call in progress (set by the agent loop around each inference), so
#: retry/failover notifications can be addressed to a step in the trace.
current_step: ContextVar[str] = ContextVar("agentflow_model_step", default="")

#: The :class:`~agentflow.runtime.models.memo.ModelMemo` of the ``plan_and_execute`` attempt in
#: progress (set by the planner around each attempt's run; None elsewhere).  Context-local, so
#: concurrent calls never share one, while tasks spawned inside a run inherit it.
model_memo: ContextVar[ModelMemo | None] = ContextVar("agentflow_model_memo", default=None)
#: Inside a durable unit that reports its model calls to its run's root (a Temporal child
#: unit, which may run in another process: runtime/durable/temporal_engine.py): every call
#: a router records is also appended here, ``[role, usage, cost, unknown]``
#: (:meth:`ModelRouter.add_calls` adds such a list to a router).
recorded_calls: ContextVar[list[list[Any]] | None] = ContextVar(
    "agentflow_recorded_calls", default=None
)


class RoutedClient:
    """A ModelClient for one role or named model: failover over ``candidates``, usage recorded.

    ``role``: the key under which usage is recorded (the name passed to ``client_for``).
    ``models``: labels of the candidates in failover order.
    """

    def __init__(
        self,
        router: ModelRouter,
        role: str,
        candidates: list[tuple[ResolvedModel, ModelClient]],
    ):
        self.router = router
        self.role = role
        self.candidates = candidates
        self.models = [resolved.label for resolved, _ in candidates]
        self.last_model: str | None = None
        self.last_latency_ms: float | None = None
        #: (first message object, number of messages, input tokens) of the last call: a request
        #: that continues that conversation needs at least as many prompt tokens (budgets)
        self._last_prompt: tuple[int, int, int] | None = None

    def _least_tokens(self, request: ChatRequest) -> int:
        last = self._last_prompt
        if last is None or not request.messages:
            return 0
        first, count, tokens = last
        if id(request.messages[0]) == first and len(request.messages) >= count:
            return tokens
        return 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference, failing over on transient errors/rate limits; raises ModelError,
        and :class:`~agentflow.errors.Stopped` instead of starting a call once the run was asked
        to stop (SIGINT/SIGTERM: :func:`agentflow.runtime.interrupt.refuse_when_stopped`).

        Under an active :data:`model_memo`, a request answered in an earlier ``plan_and_execute``
        attempt gets that answer back (``response.reused`` True, usage 0, not recorded in
        ``router.usage``) without calling a provider.
        """
        memo = model_memo.get()
        ticket = None
        if memo is not None:
            ticket, reused = memo.claim(self.role, request)
            if reused is not None:
                self.last_model = reused.model
                self.last_latency_ms = 0.0
                return reused
        least = self._least_tokens(request)
        first_model = self.candidates[0][0]
        per_token = self.router.input_price(first_model)
        # holds this call's place in every budget while it is in flight (calls made at once
        # count against each other); settled with its usage, or released when it fails
        reservation = await reserve_budgets(
            least, least * per_token / 1_000_000 if per_token else 0.0, current_step.get()
        )
        try:
            response = await self._call(request, reservation)
        except BaseException:
            reservation.release()
            raise
        if memo is not None and ticket is not None:
            memo.record(ticket, response)
        return response

    async def _call(self, request: ChatRequest, reservation: Any) -> ChatResponse:
        last_error: ModelError | None = None
        for index, (resolved, client) in enumerate(self.candidates):
            # no model call starts once the run was asked to stop (SIGINT/SIGTERM): it would
            # cost money for an answer nobody waits for; raises Stopped (an aborted run)
            refuse_when_stopped(current_step.get())
            started = time.perf_counter()
            try:
                reading = collect_bad_counts()
                with reading as bad_counts:
                    response = await client.chat(request)
            except ModelError as exc:
                last_error = exc
                more = index + 1 < len(self.candidates)
                if exc.kind in (ModelErrorKind.TRANSIENT, ModelErrorKind.RATE_LIMIT) and more:
                    self.router._notify_failover(self.role, resolved, exc)
                    continue
                raise
            self.last_latency_ms = (time.perf_counter() - started) * 1000.0
            if not response.model:
                response.model = resolved.model
            response.provider = resolved.provider_name
            response.api = resolved.provider.kind
            response.base_url = resolved.provider.base_url
            self.last_model = response.model
            if bad_counts:
                # a token count that is not one (1e300, "12", -3, NaN …): counted as 0, the
                # reply's usage marked unknown, and said (docs/models.md "Usage")
                response.usage_unknown = True
                self.router._notify_unknown_usage(resolved, bad_counts)
            if reading.unreported:
                # no usage block: counted as 0, the reply's usage marked unknown, and said
                # (never a silent 0→0: docs/models.md "Usage")
                response.usage_unknown = True
                response.usage_reported = False
                self.router._notify_unreported_usage(resolved)
            response.cost = self.router.price(resolved, response.usage or {})
            usage = response.usage or {}
            if request.messages:
                self._last_prompt = (
                    id(request.messages[0]),
                    len(request.messages),
                    token_count(usage.get("input_tokens")),
                )
            reservation.settle(
                token_count(usage.get("input_tokens")) + token_count(usage.get("output_tokens")),
                response.cost,
            )
            self.router._record(self.role, response)
            return response
        assert last_error is not None  # pragma: no cover - candidates is never empty
        raise last_error

    def count_recorded(self, response: ChatResponse, request: ChatRequest | None = None) -> None:
        """Count a reply a durable run took from its record (``flowc resume`` replaying a call
        made before the process stopped): its recorded usage and cost are added to
        ``router.usage`` and charged against every budget in force, as when it was made —
        one run, one budget (docs/models.md "Budgets").  No request is made and it is never
        refused: it was made already.  ``request``: the replayed request (its prompt size then
        guides the next call's budget check, as after a call made here)."""
        usage = response.usage or {}
        if request is not None and request.messages:
            self._last_prompt = (
                id(request.messages[0]),
                len(request.messages),
                token_count(usage.get("input_tokens")),
            )
        charge_budgets(
            token_count(usage.get("input_tokens")) + token_count(usage.get("output_tokens")),
            response.cost,
        )
        self.router._record(self.role, response)


class ModelRouter:
    """Resolves roles / named models to clients and tracks usage (docs/spec/RUNTIME.md §1
    ``usage``).

    ``client_factory(resolved) -> ModelClient`` overrides client construction (record/replay, tests).
    ``on_event(kind, data)`` receives ``retry`` and ``failover`` notifications.
    ``retry`` overrides every provider's retry policy (tests use a fast one).
    """

    #: True for a router whose one local model answers every role, named model and agent
    #: profile (the test model, a cassette): which profile an agent has changes nobody's model
    answers_every_model = False

    def __init__(
        self,
        config: Config,
        *,
        client_factory: ClientFactory | None = None,
        on_event: Callable[[str, dict[str, Any]], Any] | None = None,
        retry: RetryPolicy | None = None,
    ):
        self.config = config
        self._factory = client_factory
        self.on_event = on_event
        self.retry = retry
        self._clients: dict[str, ModelClient] = {}
        self._routed: dict[str, RoutedClient] = {}
        self.usage: dict[str, Any] = {
            "inferences": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "by_role": {},
        }
        configured = {name: _price(p) for name, p in (config.prices or {}).items()}
        for name, named in config.models.named.items():
            if named.price is not None:
                configured[name] = _price(named.price)
        self.prices = PriceBook(configured)

    def price(self, resolved: ResolvedModel, usage: dict[str, Any]) -> float | None:
        """Dollars for one call of ``resolved`` with ``usage`` (None: no price known)."""
        if resolved.price is not None:
            return _price(resolved.price).cost(usage)
        return self.prices.cost(
            usage,
            model=resolved.model,
            label=resolved.label,
            kind=resolved.provider.kind,
            base_url=resolved.provider.base_url,
        )

    def input_price(self, resolved: ResolvedModel) -> float | None:
        """Dollars per million prompt tokens of ``resolved`` (None: unknown)."""
        return self.price(resolved, {"input_tokens": 1_000_000, "output_tokens": 0})

    def client_for(self, role_or_name: str | None = None) -> RoutedClient:
        """The client of a role (``chat`` when None), named model or ``provider:model``.

        Raises ConfigError when nothing is configured for it (the message says what to set).
        """
        name = role_or_name or "chat"
        if name not in self._routed:
            resolved = self.config.resolve(name)
            candidates = [(r, self._client(r)) for r in resolved]
            self._routed[name] = RoutedClient(self, name, candidates)
        return self._routed[name]

    def _client(self, resolved: ResolvedModel) -> ModelClient:
        key = f"{resolved.provider_name}\x00{resolved.model}\x00{resolved.label}"
        if key not in self._clients:
            if self._factory is not None:
                self._clients[key] = self._factory(resolved)
            else:
                self._clients[key] = self._build(resolved)
        return self._clients[key]

    def _build(self, resolved: ResolvedModel) -> ModelClient:
        provider = resolved.provider
        retry = self.retry or RetryPolicy(
            max_retries=provider.max_retries,
            base=provider.backoff_base,
            cap=provider.backoff_max,
            max_retry_after=provider.max_retry_after,
        )
        api_key = self.config.api_key(provider)

        def on_retry(data: dict[str, Any]) -> None:
            if self.on_event is not None:
                self.on_event("retry", {**data, "model": resolved.label})

        def on_warning(message: str) -> None:
            if self.on_event is not None:
                self.on_event("warning", {"message": message, "model": resolved.label})

        options: dict[str, Any] = {
            "provider": resolved.provider_name,
            "model": resolved.model,
            "api_key": api_key,
            "api_key_env": provider.api_key_env or provider.entra_token_env,
            "timeout": provider.timeout,
            "retry": retry,
            "headers": expand_headers(resolved.provider_name, provider, self.config.env),
            "max_tokens": resolved.max_tokens,
            "temperature": resolved.temperature,
            "tool_choice": resolved.tool_choice,
            "parallel_tool_calls": resolved.parallel_tool_calls,
            "on_retry": on_retry,
            "on_warning": on_warning,
            "stream": resolved.stream,
            "structured_output": resolved.structured_output,
            "url_from": provider.base_url_from,
        }
        if provider.kind == "test":
            return TestModel(provider.seed, call_tools=provider.call_tools, label=resolved.label)
        if provider.kind == "openai":
            if not provider.base_url:
                raise ConfigError(
                    f"{self.config.where()}: provider '{resolved.provider_name}' has no base_url"
                )
            return OpenAIClient(
                base_url=provider.base_url,
                max_completion_tokens=resolved.max_completion_tokens,
                reasoning_effort=resolved.reasoning_effort,
                system_role=resolved.system_role,
                **options,
            )
        if provider.kind == "openai-responses":
            return OpenAIResponsesClient(
                base_url=provider.base_url or "https://api.openai.com/v1",
                max_completion_tokens=resolved.max_completion_tokens,
                reasoning_effort=resolved.reasoning_effort,
                **options,
            )
        if provider.kind in AZURE_KINDS:
            if not provider.base_url:
                raise ConfigError(
                    f"{self.config.where()}: provider '{resolved.provider_name}' (kind "
                    f"{provider.kind}) has no endpoint: set base_url to your resource's "
                    "(https://RESOURCE.openai.azure.com), or AZURE_OPENAI_ENDPOINT"
                )
            azure = (
                AzureOpenAIClient if provider.kind == "azure-openai" else AzureOpenAIResponsesClient
            )
            extra = {"system_role": resolved.system_role} if azure is AzureOpenAIClient else {}
            return azure(
                base_url=provider.base_url,
                azure_api=provider.azure_api,
                api_version=provider.api_version,
                entra=bool(provider.entra_token_env and not provider.api_key_env),
                token_file=provider.entra_token_file,
                max_completion_tokens=resolved.max_completion_tokens,
                reasoning_effort=resolved.reasoning_effort,
                **extra,
                **options,
            )
        if provider.kind == "gemini":
            return GeminiClient(
                base_url=provider.base_url or "https://generativelanguage.googleapis.com",
                thinking_budget=resolved.thinking_budget,
                **options,
            )
        if provider.kind == "bedrock":
            env = dict(self.config.env)
            region = (
                provider.region
                or region_of(provider.base_url or "")
                or env.get("AWS_REGION")
                or env.get("AWS_DEFAULT_REGION")
            )
            if not provider.base_url and not region:
                raise ConfigError(
                    f"{self.config.where()}: provider '{resolved.provider_name}' (kind bedrock) "
                    "has no region: set `region` in its table, or AWS_REGION"
                )
            options.pop("structured_output", None)
            return BedrockClient(
                base_url=provider.base_url or f"https://bedrock-runtime.{region}.amazonaws.com",
                region=region,
                env=env,
                thinking_budget=resolved.thinking_budget,
                **options,
            )
        if provider.kind == "anthropic":
            try:
                from agentflow.runtime.models.anthropic import AnthropicClient
            except ImportError:  # pragma: no cover - depends on the build
                raise ConfigError(
                    f"{self.config.where()}: provider '{resolved.provider_name}': the anthropic "
                    "adapter is not available in this build"
                ) from None
            return AnthropicClient(
                base_url=provider.base_url or "https://api.anthropic.com",
                thinking_budget=resolved.thinking_budget,
                prompt_cache=resolved.prompt_cache,
                **options,
            )
        raise ConfigError(  # pragma: no cover - the config model restricts kind
            f"{self.config.where()}: provider '{resolved.provider_name}' has unknown kind"
        )

    def _record(self, role: str, response: ChatResponse) -> None:
        unknown = bool(getattr(response, "usage_unknown", False))
        self._add(role, response.usage or {}, response.cost, unknown)
        calls = recorded_calls.get()
        if calls is not None:
            calls.append([role, dict(response.usage or {}), response.cost, unknown])

    def _add(self, role: str, usage: dict[str, Any], cost: float | None, unknown: bool) -> None:
        entry = self.usage["by_role"].setdefault(
            role, {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
        )
        for target in (self.usage, entry):
            add_usage(target, usage, cost, unknown=unknown)

    def add_calls(self, calls: list[list[Any]]) -> None:
        """Count model calls made by another process of the run (``[role, usage, cost,
        unknown]`` each, as :data:`recorded_calls` holds them) in :attr:`usage`: the run's
        usage covers every call of the run, wherever it was made.  Budgets are not charged
        (the run's ledger was, when each call was made)."""
        for role, usage, cost, unknown in calls:
            self._add(str(role), dict(usage or {}), cost, bool(unknown))

    def _notify_unknown_usage(self, resolved: ResolvedModel, values: list[Any]) -> None:
        if self.on_event is not None:
            self.on_event(
                "warning",
                {
                    "message": f"model {resolved.label} reported token counts that are not "
                    f"counts ({describe_bad_counts(values)}): this call's usage is unknown and "
                    "counted as 0 tokens (in usage, cost and budgets)",
                    "model": resolved.label,
                },
            )

    def _notify_unreported_usage(self, resolved: ResolvedModel) -> None:
        if self.on_event is not None:
            self.on_event(
                "warning",
                {
                    "message": f"model {resolved.label} reported no token usage: its calls' "
                    "usage is unknown and counted as 0 tokens (in usage, cost and budgets)",
                    "model": resolved.label,
                },
            )

    def _notify_failover(self, role: str, resolved: ResolvedModel, exc: ModelError) -> None:
        if self.on_event is not None:
            self.on_event(
                "failover",
                {"role": role, "model": resolved.label, "kind": exc.kind, "message": str(exc)},
            )

    async def aclose(self) -> None:
        """Close every client's connection pool."""
        for client in self._clients.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()


def forward_model_events(bus: Any) -> Callable[[str, dict[str, Any]], None]:
    """An ``on_event`` for :class:`ModelRouter` that turns its notifications into run events.

    ``retry`` → a ``retry`` event ``{attempt, code, delay_ms, provider, model, status, message}``,
    with ``retry_after_ms`` (the wait the provider's ``Retry-After`` asked, when it sent a finite
    one) and ``capped: true`` when it asked longer than ``max_retry_after`` (``delay_ms``: the cap);
    ``failover`` → a ``warning`` event ``{message, failover: {role, model, kind}}``; both at the
    step path of :data:`current_step`. Messages are already redacted by the HTTP layer.
    """

    def on_event(kind: str, data: dict[str, Any]) -> None:
        path = current_step.get()
        if kind == "retry":
            asked = data.get("retry_after_s")
            capped: dict[str, Any] = {}
            if isinstance(asked, int | float) and math.isfinite(asked):
                capped["retry_after_ms"] = round(asked * 1000)
            if data.get("capped"):  # said: the wait is shorter than the provider asked
                capped["capped"] = True
            bus.emit(
                "retry",
                path,
                attempt=data.get("attempt"),
                code=data.get("kind"),
                delay_ms=int(float(data.get("delay_s") or 0) * 1000),
                provider=data.get("provider"),
                model=data.get("model"),
                status=data.get("status"),
                message=data.get("message"),
                **capped,
            )
        elif kind == "warning":
            bus.emit("warning", path, message=data.get("message"), model=data.get("model"))
        elif kind == "failover":
            bus.emit(
                "warning",
                path,
                message=f"model {data.get('model')} failed ({data.get('kind')}); failing over to "
                f"the next model of '{data.get('role')}': {data.get('message')}",
                failover={k: data.get(k) for k in ("role", "model", "kind")},
            )

    return on_event


def _price(config: Any) -> Price:
    return Price(
        input=config.input,
        output=config.output,
        cache_read=config.cache_read,
        cache_write=config.cache_write,
    )


def test_router(
    config: Any = None, seed: int = 0, *, call_tools: bool = False, **kwargs: Any
) -> Any:
    """A :class:`~agentflow.runtime.models.router.ModelRouter` whose every role, named model and
    agent profile is answered by one :class:`TestModel` (``flowc run --model test``). Needs no
    model, key or provider configuration."""
    resolved = ResolvedModel(
        label="test", provider_name="test", provider=ProviderConfig(kind="test"), model="test"
    )
    model = TestModel(seed, call_tools=call_tools)

    class _TestRouter(ModelRouter):
        answers_every_model = True

        def client_for(self, role_or_name: str | None = None) -> RoutedClient:
            name = role_or_name or "chat"
            if name not in self._routed:
                self._routed[name] = RoutedClient(self, name, [(resolved, model)])
            return self._routed[name]

    return _TestRouter(config or Config(), **kwargs)


test_router.__test__ = False  # type: ignore[attr-defined]  # not a pytest test function
