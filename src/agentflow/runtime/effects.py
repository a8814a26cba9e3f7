"""The effects of a run, each behind one method: :class:`Effects`.

Everything a run does that is not a pure function of the plan, its input and earlier results goes
through one of these methods, called by the executor with the step path it belongs to
(docs/spec/PLAN_IR.md §7):

==================  ===========================================================================
``call_tool``       one real tool call (after the gate; builtin, MCP, user Python)
``chat``            one model inference (agent rounds and repairs, ``infer`` judges, the solver)
``ask``             one question to the host's interlocutor (``ask`` steps)
``sleep``           a retry's backoff
``now``             the clock deadlines are measured on (seconds, monotonic)
``random``          the jitter of a retry's backoff
``unit``            a unit of concurrent work with its own step path: a ``map``/``reduce`` item,
                    a ``parallel`` branch, a ``plan__*`` call
==================  ===========================================================================

This class performs them directly.  A durable engine (issue 17) replaces it with one that records
each effect under its step path and replays it on resume, so a change of engine touches this seam
and nothing in the control-step logic.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agentflow.runtime.hooks import AskRequest, Interlocutor, maybe_await

if TYPE_CHECKING:
    from agentflow.runtime.models.base import ChatRequest, ChatResponse
    from agentflow.runtime.models.router import RoutedClient
    from agentflow.runtime.tools.catalog import Tool, ToolContext

__all__ = ["Effects"]

T = TypeVar("T")


class Effects:
    """Performs a run's effects directly (the default, non-durable engine).

    Each method takes the step path of the effect (``path``) so an engine can key it; this one
    ignores it.  The asynchronous ones return an awaitable (a subclass may define them with
    ``async def``); here they hand back the underlying call's own coroutine, so the seam adds no
    coroutine frame to a map item's path.
    """

    __slots__ = ()

    def call_tool(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Awaitable[Any]:
        """Call ``tool`` with ``args`` (``ctx.step_path`` is the call's path); its result, or
        what the tool raises."""
        return tool.func(args, ctx)

    def chat(
        self, client: RoutedClient, request: ChatRequest, path: str
    ) -> Awaitable[ChatResponse]:
        """One inference of ``client`` (a role's routed client: failover, usage); raises
        ModelError."""
        return client.chat(request)

    async def ask(self, interlocutor: Interlocutor, request: AskRequest) -> Any:
        """Put ``request`` to the host's interlocutor; returns the answer or ``NO_ANSWER``."""
        return await maybe_await(interlocutor(request))

    def sleep(self, seconds: float, path: str) -> Awaitable[None]:
        """Wait ``seconds`` (a retry's backoff at ``path``)."""
        return asyncio.sleep(seconds)

    def now(self) -> float:
        """The running loop's clock in seconds (monotonic): what deadlines are measured on."""
        return asyncio.get_running_loop().time()

    def random(self, path: str) -> float:
        """A uniform number in [0, 1) (a retry's jitter at ``path``)."""
        return _random.random()

    def unit(self, path: str, work: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """Run ``work()``, a unit of concurrent work with its own step ``path`` (a map or reduce
        item, a parallel branch, a ``plan__*`` call); its result."""
        return work()
