"""The lazy read of ``runs show`` on Temporal (runtime/durable/temporal_show.py): the first N
steps a merge of the histories gives are the first N of the whole read, and it opens no
history of a workflow that started after the last of them — on generated runs whose histories
are made of real history events (the SDK's protobuf messages), served a page at a time in
pages of any size (the server sends whole event batches, whatever the page size asked), with
ties to the millisecond across workflows, the engine's own operations and unanswered questions.
The same on a real server: test_durable_engines.py (a page of a batched map's run)."""

from __future__ import annotations

import asyncio
import json
import math
import random
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from agentflow.runtime.durable import temporal_show as ts


def _event(kind: int, ms: int) -> HistoryEvent:
    event = HistoryEvent(event_type=kind)  # type: ignore[arg-type]
    event.event_time.FromMilliseconds(ms)
    return event


def _marker(name: str, ms: int) -> HistoryEvent:
    event = _event(EventType.EVENT_TYPE_MARKER_RECORDED, ms)
    attrs = event.marker_recorded_event_attributes
    attrs.marker_name = "core_local_activity"
    attrs.details["data"].payloads.append(Payload(data=json.dumps({"activity_id": name}).encode()))
    return event


class _Pages:
    """The SDK's history iterator as ``History`` uses it: pages fetched one by one."""

    def __init__(self, pages: list[list[HistoryEvent]]):
        self._pages = list(pages)
        self.current_page: list[HistoryEvent] | None = None
        self.next_page_token: bytes | None = None

    async def fetch_next_page(self, *, page_size: int | None = None) -> None:
        self.current_page = self._pages.pop(0) if self._pages else []
        self.next_page_token = b"more" if self._pages else None


class _Client:
    def __init__(self, histories: dict[str, list[list[HistoryEvent]]]):
        self.histories = histories
        self.opened: list[str] = []

    def get_workflow_handle(self, workflow_id: str) -> Any:
        client = self

        class Handle:
            def fetch_history_events(self) -> _Pages:
                client.opened.append(workflow_id)
                return _Pages(client.histories[workflow_id])

        return Handle()


def _run(rng: random.Random) -> tuple[list[tuple[str, float]], dict, list[list[dict]]]:
    """A generated run: its workflows in listing order, their histories in pages, and their
    unanswered questions."""
    base = 1_700_000_000_000
    n = rng.randint(1, 24)
    starts = sorted(base + rng.choice([0, 0, 1, 2, 5, 40, 300]) * k for k in range(n))
    family = [(f"w{j}", (ms + rng.random() * 0.9) / 1000.0) for j, ms in enumerate(starts)]
    histories: dict[str, list[list[HistoryEvent]]] = {}
    extras: list[list[dict]] = []
    for j, (wid, _) in enumerate(family):
        at = starts[j]
        events = [_event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, at)]
        for task in range(rng.randint(0, 6)):
            at += rng.choice([0, 0, 1, 3, 50])
            events.append(_event(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, at))
            for k in range(rng.randint(0, 5)):
                at += rng.choice([0, 1, 2])
                user = rng.random() < 0.8
                name = f"E{j}/do.{task}.{k}/tool:note#1" if user else f"unit:E{j}.{task}.{k}"
                events.append(_marker(name, at))
            events.append(_event(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, at))
        pages, rest = [], events
        while rest:
            cut = rng.randint(1, 8)
            pages.append(rest[:cut])
            rest = rest[cut:]
        histories[wid] = pages
        asked = [
            {"operation": f"E{j}/ask{q}", "started_at": (starts[j] + rng.randint(0, 60)) / 1000.0}
            for q in range(rng.choice([0, 0, 0, 1, 2]))
        ]
        extras.append(asked)
    return family, histories, extras


def _ident(step: Any) -> tuple:
    if isinstance(step, ts.Op):
        return (step.unit, step.name, step.started_at, step.finished_at)
    return (step["operation"], step["started_at"])


def test_the_first_steps_of_a_lazy_read_are_the_whole_reads_and_need_no_later_history():
    rng = random.Random(29)
    for _ in range(150):
        family, histories, extras = _run(rng)
        internals = rng.random() < 0.3
        whole = asyncio.run(ts.read_all(_Client(histories), family, extras, internals))
        wanted = rng.randint(1, len(whole.steps) + 2)
        client = _Client(histories)
        lazy = rng.random() < 0.5  # the workflows listed in windows of start time as it goes
        listing = _Windows(family, [None] * len(family), extras, rng) if lazy else family
        first = asyncio.run(ts.read_first(client, listing, extras, internals, wanted))
        assert [_ident(s) for s in first.steps[:wanted]] == [
            _ident(s) for s in whole.steps[:wanted]
        ]
        # the rest of what it read is counted: every step once, never more than the run has
        assert len({_ident(s) for s in first.steps}) == len(first.steps) <= len(whole.steps)
        assert first.partial or len(first.steps) == len(whole.steps)
        assert first.internal <= whole.internal
        # no history of a workflow that started after the last step it gives was opened
        if wanted <= len(whole.steps):
            last = whole.steps[wanted - 1]
            at = last.started_at if isinstance(last, ts.Op) else last["started_at"]
            assert at is not None
            needed = {w for w, started in family if int(started * 1000) / 1000 <= at}
            assert set(client.opened) <= needed and len(client.opened) == len(set(client.opened))


async def _every_op(histories: dict, family: list[tuple[str, float]]) -> list[list[ts.Op]]:
    return [await ts.open_history(_Client(histories), w, 0.0, 0, 1000).all() for w, _ in family]


def test_a_deep_page_skips_the_workflows_that_ended_before_it_and_equals_the_whole_reads_slice():
    # each workflow's end and operation counts, as its memo gives them once it ended (some
    # run still, some were recorded with no count); ends are at or after their last event
    rng = random.Random(41)
    skipped_any = lazy_skips = 0
    for _ in range(120):
        family, histories, extras = _run(rng)
        internals = rng.random() < 0.3
        ended: list[tuple[float, int, int] | None] = []
        every = asyncio.run(_every_op(histories, family))
        for (wid, _started), ops in zip(family, every, strict=True):
            last = max(e.event_time.ToMilliseconds() for page in histories[wid] for e in page)
            shown = sum(1 for op in ops if op.parsed is not None)
            closed = (last + rng.choice([0, 0, 1, 7])) / 1000.0 + rng.random() * 0.0009
            ended.append(None if rng.random() < 0.15 else (closed, shown, len(ops) - shown))
        whole = asyncio.run(ts.read_all(_Client(histories), family, extras, internals))
        offset = rng.randint(0, len(whole.steps) + 1)
        limit = rng.randint(1, 6)
        client = _Client(histories)
        lazy = rng.random() < 0.5
        listing = _Windows(family, ended, extras, rng) if lazy else family
        deep = asyncio.run(
            ts.read_first(client, listing, extras, internals, offset + limit, ended, offset)
        )
        assert deep.skipped <= offset
        want = [_ident(s) for s in whole.steps[offset : offset + limit]]
        got = [_ident(s) for s in deep.steps[offset - deep.skipped : offset - deep.skipped + limit]]
        assert got == want, (offset, deep.skipped)
        assert deep.skipped + len(deep.steps) <= len(whole.steps)
        assert deep.internal <= whole.internal
        # a workflow counted by its memo was never opened
        if lazy:  # the skip's time is no later than what was listed
            lazy_skips += deep.skipped > 0 and len(client.opened) < len(family)
            continue
        t_ms = ts.skip_until(family, ended, extras, internals, offset) if offset else None
        if t_ms is not None:
            gone = {
                w
                for (w, _), e in zip(family, ended, strict=True)
                if e is not None and e[0] < t_ms / 1000
            }
            assert gone and not gone & set(client.opened)
            skipped_any += 1
    assert skipped_any > 10 and lazy_skips > 10, (
        skipped_any,
        lazy_skips,
    )  # the generated runs exercise the skip


class _Windows(ts.Listing):
    """A lazy listing of a generated run: its first workflow (the run), then the others in
    windows of start time of random widths (as temporal_manage lists by ``StartTime``)."""

    def __init__(self, family, ended, extras, rng: random.Random):
        first = int(family[0][1] * 1000)
        super().__init__(family[:1], ended[:1], extras[:1], float(first))
        self._rest = list(zip(family[1:], ended[1:], extras[1:], strict=True))
        self._rng = rng
        self.windows = 0

    async def more(self) -> None:
        self.windows += 1
        end = int(self.until) + self._rng.choice([1, 2, 5, 50, 400])
        while self._rest and int(self._rest[0][0][1] * 1000) < end:
            wf, e, xs = self._rest.pop(0)
            self.family.append(wf)
            self.ended.append(e)
            self.extras.append(xs)
        self.until = float(end) if self._rest else math.inf
