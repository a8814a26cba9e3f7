"""What ``flowc runs show`` reads of a durable run on Temporal: the recorded operations of its
workflows, from their histories, in start order (docs/durable.md "Temporal: wide maps";
temporal_runs.show_run turns them into the `.flow`'s terms).

An operation is a local activity's marker in its workflow's history; its start is the start of
the workflow task it ran in. The steps of ``runs show`` are the operations of every workflow of
the run (and the questions its units left unanswered, from their memo) sorted by start, ties
in the order of the workflows (the run's first, then by their start) and of each history: the
**listing order**. A run of a few workflows is read whole (:func:`read_all`). One page of a run
of many — a wide map's batch workflows — is read **lazily** (:func:`read_first`): a k-way merge
over the histories in listing order that reads a history only once a step of it could be on
the page (every operation of a workflow starts after the workflow), a page of events at a time,
and stops at the page's last step; so the first page of a 100,000-item map reads the first
events of the batches that ran first, not 100 histories. Each operation's result is decoded
only when it is shown (or is a model call, whose usage the cost sums). A deep page counts the
workflows that ended before it by the operation counts their memo records, unread
(:func:`skip_until`), and the workflows may be listed as the merge reaches them
(:class:`Listing`; temporal_manage lists them in windows of start time).
"""

from __future__ import annotations

import asyncio
import heapq
import json
import math
from dataclasses import dataclass, field
from typing import Any

from agentflow.runtime.durable.shown import Operation, parse_operation

__all__ = [
    "READERS",
    "Ended",
    "History",
    "Listing",
    "Op",
    "Read",
    "open_history",
    "read_all",
    "read_first",
    "skip_until",
]

#: how many histories a whole read reads at once
READERS = 16
#: events asked for in a history's first page, and the most in one page (a page asks for
#: twice as many as the page before it: most histories a lazy read opens need one marker; a
#: whole read asks for the most from the first page on). The service may send more: a page
#: holds whole batches of events (a workflow task's markers are one batch)
FIRST_PAGE = 64
LAST_PAGE = 1000


@dataclass
class Op:
    """One recorded operation read from a history (its result not decoded yet: :meth:`value`)."""

    name: str
    parsed: Operation | None
    started_at: float | None
    finished_at: float
    failed: bool
    result: list[Any]
    #: its workflow's place in the listing order
    unit: int = 0
    _decoded: list[Any] = field(default_factory=list)

    async def value(self, converter: Any) -> Any:
        """The operation's record (``{"v": …}`` or ``{"e": …}``), decoded once."""
        if not self._decoded:
            decoded = await converter.decode(self.result) if self.result else []
            self._decoded.append(decoded[0] if decoded else None)
        return self._decoded[0]


class History:
    """The history of workflow ``workflow_id`` read a page at a time, as operations."""

    def __init__(
        self, client: Any, workflow_id: str, started_at: float, unit: int = 0, page: int = 0
    ):
        from temporalio.api.enums.v1 import EventType

        self._events = client.get_workflow_handle(workflow_id).fetch_history_events()
        self._task_started = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
        self._marker = EventType.EVENT_TYPE_MARKER_RECORDED
        self._page: list[Any] = []
        self._at = 0
        self._size = page or FIRST_PAGE
        self._fetched = False
        self.unit = unit
        #: how many operations were taken so far (the next one's position in the history)
        self.taken = 0
        #: no operation still to come in this history starts before this (epoch seconds): the
        #: start of the latest workflow task read, else of the workflow (to the millisecond
        #: below: event times are read in milliseconds)
        self.floor = math.floor(started_at * 1000) / 1000

    @property
    def ended(self) -> bool:
        """True once every event was read."""
        return self._fetched and self._at >= len(self._page) and not self._events.next_page_token

    async def more(self) -> bool:
        """Read the next page of events; False at the history's end."""
        if self._fetched and not self._events.next_page_token:
            return False
        await self._events.fetch_next_page(page_size=self._size)
        self._fetched = True
        self._size = min(LAST_PAGE, self._size * 2)
        self._page = list(self._events.current_page or [])
        self._at = 0
        return True

    def take(self) -> Op | None:
        """The next operation among the events read; None once they are used up."""
        while self._at < len(self._page):
            event = self._page[self._at]
            self._at += 1
            kind = event.event_type
            if kind == self._task_started:
                self.floor = event.event_time.ToMilliseconds() / 1000.0
                continue
            if kind != self._marker:
                continue
            attrs = event.marker_recorded_event_attributes
            if attrs.marker_name != "core_local_activity":
                continue
            data = attrs.details.get("data")
            meta = json.loads(data.payloads[0].data) if data and data.payloads else {}
            result = attrs.details.get("result")
            name = str(meta.get("activity_id") or "")
            self.taken += 1
            return Op(
                name=name,
                parsed=parse_operation(name),
                started_at=self.floor,
                finished_at=event.event_time.ToMilliseconds() / 1000.0,
                failed=attrs.HasField("failure"),
                result=list(result.payloads) if result is not None else [],
                unit=self.unit,
            )
        return None

    async def all(self) -> list[Op]:
        """Every operation of the history (the rest of it)."""
        out: list[Op] = []
        while True:
            op = self.take()
            if op is not None:
                out.append(op)
            elif not await self.more():
                return out


def open_history(
    client: Any, workflow_id: str, started_at: float, unit: int = 0, page: int = 0
) -> History:
    """The :class:`History` of ``workflow_id`` (nothing read yet; ``page``: the events its
    first page asks for, default :data:`FIRST_PAGE`); every read of a history by ``runs
    show`` opens it here (the tests count them)."""
    return History(client, workflow_id, started_at, unit, page)


#: a step shown but not an operation of a history: a question left unanswered (from a memo)
Extra = dict[str, Any]


@dataclass
class Read:
    """What a read found: the steps in listing order (:class:`Op` each, or an unanswered
    question's step), the engine's own operations left out, and whether it stopped early."""

    steps: list[Op | Extra]
    internal: int = 0
    partial: bool = False
    #: steps of the listing before ``steps`` that were counted, not read (a deep page:
    #: ``steps[k]`` is the listing's step ``skipped + k``)
    skipped: int = 0


#: a closed workflow's end and its operations as its memo counts them: ``(closed at, epoch
#: seconds; shown, internal)`` (temporal_workflows ``ops``)
Ended = tuple[float, int, int]


@dataclass
class Listing:
    """A run's workflows in listing order as far as they are listed: ``family`` (``(id,
    start)``), ``ended`` (:data:`Ended` or None) and ``extras`` (unanswered questions) in step;
    every workflow that started before ``until`` (epoch milliseconds) is listed (``inf``: all
    are). This one is whole; a lazy listing (temporal_manage's windows of start time) lists
    more with :meth:`more`."""

    family: list[tuple[str, float]]
    ended: list[Ended | None]
    extras: list[list[Extra]]
    until: float = math.inf

    async def more(self) -> None:
        """List the workflows of the next window of start time (and move ``until`` on)."""


def _bound_exceeds(listing: Listing, internals: bool, offset: int) -> bool:
    """True when the listed workflows' counts (and questions) add up past ``offset``, or one
    has no count: listing further cannot move :func:`skip_until`'s time on."""
    total = sum(len(xs) for xs in listing.extras)
    for e in listing.ended:
        if e is None:
            return True
        total += e[1] + (e[2] if internals else 0)
    return total > offset


def skip_until(
    family: list[tuple[str, float]],
    ended: list[Ended | None],
    extras: list[list[Extra]],
    internals: bool,
    offset: int,
) -> int | None:
    """The latest whole millisecond ``T`` (epoch milliseconds) before which the run has at
    most ``offset`` steps for sure, counted without reading: each workflow that started before
    ``T`` by its memo's count (one with no count: ``T`` is no later than its start), each
    unanswered question asked before ``T`` as one — or None when no workflow ended before
    that ``T`` (nothing to skip).  No operation of a workflow starts before the workflow (to
    the millisecond below), and every operation of one that ended before ``T`` starts before
    ``T``: so the steps before ``T`` are the page's predecessors, and the workflows that ended
    before it need not be read."""
    # each thing counts for every T at or after its threshold: T > its time in milliseconds
    weights: list[tuple[int, float]] = []
    for (_, started), e in zip(family, ended, strict=True):
        count = math.inf if e is None else e[1] + (e[2] if internals else 0)
        weights.append((math.floor(started * 1000) + 1, count))
    for xs in extras:
        for x in xs:
            at = _key(x["started_at"])
            if at != math.inf:
                weights.append((math.floor(at * 1000) + 1, 1))
    weights.sort()
    total = 0.0
    t_ms = None
    for k, (threshold, count) in enumerate(weights):
        if k == 0 or threshold != weights[k - 1][0]:
            # every group before this threshold fits: T may be just under it
            t_ms = threshold - 1
        total += count
        if total > offset:
            break
    else:
        t_ms = math.floor(max((e[0] for e in ended if e is not None), default=0.0) * 1000) + 1
    if t_ms is None or not any(e is not None and e[0] < t_ms / 1000.0 for e in ended):
        return None
    return t_ms


def _key(at: Any) -> float:
    """A step's place in time as the listing sorts it (none: last)."""
    return at or math.inf


async def read_all(
    client: Any,
    family: list[tuple[str, float]],
    extras: list[list[Extra]],
    internals: bool,
) -> Read:
    """Every step of the run whose workflows are ``family`` (``(id, start)`` in listing order;
    ``extras``: each one's unanswered questions), :data:`READERS` histories at a time."""
    out = Read([])
    for at in range(0, len(family), READERS):
        chunk = family[at : at + READERS]
        ops = await asyncio.gather(
            *(open_history(client, w, t, at + k, LAST_PAGE).all() for k, (w, t) in enumerate(chunk))
        )
        for k, found in enumerate(ops):
            for op in found:
                if op.parsed is None:
                    out.internal += 1
                    if not internals:
                        continue
                out.steps.append(op)
            out.steps.extend(extras[at + k])
    # in the order they started, across units (map items, branches); stable: listing order
    out.steps.sort(key=lambda s: _key(s.started_at if isinstance(s, Op) else s["started_at"]))
    return out


async def read_first(
    client: Any,
    family: list[tuple[str, float]] | Listing,
    extras: list[list[Extra]],
    internals: bool,
    wanted: int,
    ended: list[Ended | None] | None = None,
    offset: int = 0,
) -> Read:
    """The first ``wanted`` steps of the run in listing order (as :func:`read_all` would give
    them), reading each history only as far as they need: a merge of the histories by
    ``(start, workflow, position)``, in which a workflow not opened yet stands for its
    operations by its own start, and one read partly by the start of its latest workflow task
    (no later operation of it starts before). After them come, in no particular order, the
    other steps the pages read hold (so ``steps`` counts what was read: a floor of the run's
    steps when ``partial``).

    A page from ``offset`` (given ``ended``: each workflow's :data:`Ended`, None while it runs
    or when its memo has no count) skips what comes before a time :func:`skip_until` finds:
    the workflows that ended before it are counted and never opened, the steps of the others
    before it are read and counted; ``skipped`` says how many steps ``steps`` leaves out.

    ``family`` may be a :class:`Listing` (``extras`` and ``ended`` are then its own): one
    listed lazily is listed further only when the merge reaches its ``until`` (and, for a
    deep page, as far as the skip's bound needs)."""
    out = Read([])
    listing = (
        family
        if isinstance(family, Listing)
        else Listing(list(family), list(ended or [None] * len(family)), extras)
    )
    t_ms = None
    if offset:
        while listing.until != math.inf and not _bound_exceeds(listing, internals, offset):
            await listing.more()  # what comes before the page's time is listed first
        t_ms = skip_until(listing.family, listing.ended, listing.extras, internals, offset)
        if t_ms is not None and t_ms > listing.until:
            t_ms = int(listing.until)  # (the workflows not listed yet start after it)
    cut = -math.inf if t_ms is None else t_ms / 1000.0
    # heap entries: (time, workflow, position, kind, what): kind 0 opens a workflow, 1 reads
    # the next page of one, 2 is an operation, 3 an unanswered question, 4 lists more (at the
    # start time the listing reached: a workflow listed then starts after it)
    heap: list[tuple[float, int, int, int, Any]] = []

    def listed(since: int) -> None:
        for j in range(since, len(listing.family)):
            for k, extra in enumerate(listing.extras[j]):
                heapq.heappush(heap, (_key(extra["started_at"]), j, (1 << 60) + k, 3, extra))
            e = listing.ended[j] if t_ms is not None else None
            if e is not None and e[0] < cut:  # ended before the cut: counted, never opened
                out.skipped += e[1] + (e[2] if internals else 0)
                out.internal += e[2]
                out.partial = True
                continue
            started = listing.family[j][1]
            heapq.heappush(heap, (math.floor(started * 1000) / 1000, j, -1, 0, None))
        if listing.until != math.inf:
            heapq.heappush(heap, (listing.until / 1000.0, -1, 0, 4, None))

    listed(0)
    histories: dict[int, History] = {}

    def advance(h: History) -> None:
        op = h.take()
        if op is not None:
            heapq.heappush(heap, (_key(op.started_at), h.unit, h.taken, 2, op))
        elif not h.ended:
            heapq.heappush(heap, (h.floor, h.unit, h.taken + 1, 1, h))

    def add(step: Op | Extra) -> None:
        if isinstance(step, Op) and step.parsed is None:
            out.internal += 1
            if not internals:
                return
        if _key(step.started_at if isinstance(step, Op) else step["started_at"]) < cut:
            out.skipped += 1  # before the skipped time: counted, never on the page
            return
        out.steps.append(step)

    while heap and out.skipped + len(out.steps) < wanted:
        _, j, _, kind, what = heapq.heappop(heap)
        if kind == 4:
            since = len(listing.family)
            await listing.more()
            listed(since)
        elif kind == 0:
            wid, started = listing.family[j]
            h = histories[j] = open_history(client, wid, started, j)
            await h.more()
            advance(h)
        elif kind == 1:
            await what.more()
            advance(what)
        else:
            if kind == 2:
                advance(histories[j])
            add(what)
    # the rest of what was read: counted, never shown on this page
    out.partial = out.partial or any(kind in (0, 1, 4) for _, _, _, kind, _ in heap)
    for _, _, _, kind, what in heap:
        if kind in (2, 3):
            add(what)
    for h in histories.values():
        while (op := h.take()) is not None:
            add(op)
        out.partial = out.partial or not h.ended
    return out
