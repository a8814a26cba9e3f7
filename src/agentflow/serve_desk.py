"""The desk of a durable run served over MCP (:mod:`agentflow.serve`): the calls waiting for
the run (:class:`_RunDesk`), each one's progress notifications (:class:`_Progress`), and the
waiting call that is asked the run's questions (:class:`_Waiter`), one at a time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agentflow.core.redaction import redact
from agentflow.runtime.events import CallbackSink


class _Progress:
    """The progress notifications of one call (when its client sent ``_meta.progressToken``)."""

    def __init__(self, ctx: Any) -> None:
        meta = getattr(ctx, "meta", None) or {}
        self.token = meta.get("progress_token", meta.get("progressToken"))
        self.ctx = ctx
        self.tasks: list[asyncio.Task[None]] = []

    def notify(self, done: int, total: int, message: str) -> None:
        if self.token is None:
            return
        self.tasks.append(
            asyncio.ensure_future(
                self.ctx.session.send_progress_notification(
                    self.token,
                    float(done),
                    float(max(total, done)),
                    redact(message),
                    related_request_id=self.ctx.request_id,
                )
            )
        )

    async def flush(self) -> None:
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
            self.tasks.clear()


@dataclass(eq=False)
class _Waiter:
    """One call waiting on a run: its request context and progress; ``can_elicit``: its
    client declared elicitation (and no elicitation request to it has failed)."""

    ctx: Any
    progress: _Progress
    can_elicit: bool
    #: its client went away (the call still waits: the SDK does not interrupt it)
    gone: bool = False


class _RunDesk:
    """What the calls waiting on one run share: the run's progress (top-level steps finished,
    counted on the server's event loop ``loop`` whatever thread the run emits from) sent to
    every waiting call that asked for progress — from the moment it joined, earlier
    notifications are not replayed — and, for durable runs, the calls in the order they came
    (``waiters``) that its questions go to (one at a time: :meth:`asker`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, total: int = 0) -> None:
        self.loop = loop
        self.total = total
        self.done = 0
        self.waiters: list[_Waiter] = []
        self.relay: asyncio.Task[None] | None = None
        #: question path -> (the call asked, the elicitation task) of the questions out now
        self.asking: dict[str, tuple[_Waiter, asyncio.Task[None]]] = {}
        #: the questions a client answered, declined or cancelled (not asked again)
        self.settled: set[str] = set()

    def sink(self) -> Any:
        """An event sink of the run (only ``step_finished`` events)."""
        sink = CallbackSink(self.on_event)
        sink.kinds = ("step_finished",)  # type: ignore[attr-defined]
        return sink

    def on_event(self, event: Any) -> None:
        if event.kind != "step_finished" or "/" in event.path or len(event.stack) != 1:
            return
        status = "failed" if event.data.get("error") else "done"
        # the step as the .flow names it (a hand-written plan's: its step id)
        message = f"step {event.data.get('label') or event.path} {status}"
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._step(message)
        else:  # a run the engine resumed on a loop of its own
            self.loop.call_soon_threadsafe(self._step, message)

    def _step(self, message: str) -> None:
        self.done += 1
        for waiter in self.waiters:
            if not waiter.gone:
                waiter.progress.notify(self.done, self.total, message)

    def join(self, ctx: Any) -> _Progress:
        """Add the call of request context ``ctx`` to the waiters; returns its progress."""
        from mcp.types import ClientCapabilities, ElicitationCapability

        can_elicit = bool(
            ctx.session.check_client_capability(
                ClientCapabilities(elicitation=ElicitationCapability())
            )
        )
        progress = _Progress(ctx)
        self.waiters.append(_Waiter(ctx, progress, can_elicit))
        return progress

    def leave(self, progress: _Progress) -> None:
        """Remove the call whose progress is ``progress`` (its call ended, however)."""
        self.waiters = [w for w in self.waiters if w.progress is not progress]

    def asker(self) -> _Waiter | None:
        """The call the run's questions go to: the earliest waiting call that can elicit."""
        return next((w for w in self.waiters if w.can_elicit and not w.gone), None)

    def settle(self, waiter: _Waiter, path: str) -> Any:
        """The done-callback of the elicitation of question ``path`` to ``waiter``: a reply
        settles the question; a failed request (the client went away) passes it on."""

        def done(task: asyncio.Task[None]) -> None:
            if task.cancelled():
                return
            if task.exception() is not None:
                waiter.can_elicit = False
                return
            self.settled.add(path)

        return done
