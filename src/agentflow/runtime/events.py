"""Run events and sinks (docs/spec/RUNTIME.md §8, docs/spec/PLAN_IR.md §7).

Every step and body call emits ``step_started`` (with its rendered input) and ``step_finished``
(with its full result or error), addressed by a step path (``E3``, ``E3/then``, ``E3/do.2``,
``E3/do.2/E10``, ``E1/agent.2/builtin__grep``) and the plan call stack (plan names, outermost first).

Sinks: :class:`JsonlSink` (``--trace FILE``), :class:`CallbackSink` (Python API),
:class:`ConsoleSink` (live view on stderr; plain one-line progress when stderr is not a TTY).
:class:`EventBus` fans events out to sinks; a failing sink never fails the run.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from agentflow.core.redaction import SECRETS, redact, redact_data
from agentflow.core.text import escape_surrogates, finite_dumps, json_error, money, visible
from agentflow.core.vocabulary import Code, seconds_text, started_items
from agentflow.errors import InputError
from agentflow.runtime.extract import loads_bounded
from agentflow.runtime.where import call_summary

if TYPE_CHECKING:  # rich loads only when the live view is drawn
    from rich.table import Table

EVENT_KINDS = (
    "run_started",
    "step_started",
    "step_finished",
    "step_caught",
    "tool_started",
    "tool_finished",
    "model_call",
    "partial_output",
    "retry",
    "ask",
    "warning",
    "mcp_server",
    "mcp_log",
    "mcp_progress",
    "run_finished",
)


@dataclass
class Event:
    """One run event.

    ``kind``: one of :data:`EVENT_KINDS`. ``path``: the step path ("" for run-level events).
    ``stack``: plan names, outermost first. ``time``: Unix time in seconds (float).
    ``data``: kind-specific payload, e.g. ``run_started: {plan, input, file?}`` (``file``: the
    `.flow` or plan file, as given), ``step_started: {tool_name, input, id?, source?, stage?}``,
    ``step_finished: {tool_name, result, elapsed_ms, usage?}`` or ``{tool_name, error: {code,
    message}, elapsed_ms}``, ``model_call: {role, round?, model, input_tokens, output_tokens,
    latency_ms, finish_reason, reply: {text, tool_calls: [{id, name, arguments}]}, provider?,
    api?, cache_read_tokens?, cache_write_tokens?, cost?, reused?}`` (emitted when the call
    returns: it began ``latency_ms`` earlier), ``retry: {attempt, code, delay_ms}``,
    ``step_caught: {error: {code, message, step, source?}}`` (a ``try`` step caught its body's
    failure; the fallback runs next), ``warning:
    {message}``, ``partial_output: {value, round}`` (a streaming agent's answer so far: a typed
    partial value, docs/models.md), ``mcp_server: {server, state: started|failed, transport,
    server_info?, tools?, elapsed_ms, error?}``, ``mcp_log: {server, level, logger?, data}``,
    ``mcp_progress: {server, tool, progress, total?, message?}``.

    Every event at a step path (all kinds but ``run_*``) also names its place as the `.flow`
    does, when known (runtime/where.py): ``stage``, ``item`` (map/reduce item index), ``agent``
    (alias, ``team.member``), ``label`` (``review › item 3 › agent(reviewer) › read_file``);
    ``step_started`` / ``step_finished`` add ``name`` (the ``let``), ``source`` and ``fold: true``
    for the compiler's bookkeeping, which progress output folds into its parent.
    """

    kind: str
    path: str
    stack: list[str] = field(default_factory=list)
    time: float = field(default_factory=time.time)
    data: dict[str, Any] = field(default_factory=dict)
    #: a durable run's finished event met again while its unit replays recorded work: only
    #: sinks that tell what they hold already (``takes_replayed``) receive it (not written out)
    replayed: bool = field(default=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """``{kind, path, stack, time, data}``."""
        return {
            "kind": self.kind,
            "path": self.path,
            "stack": list(self.stack),
            "time": self.time,
            "data": self.data,
        }


class Sink(Protocol):
    """Anything with ``handle(event)``; ``close()`` and ``kinds`` (the event kinds it wants;
    absent or None = all) are optional."""

    def handle(self, event: Event) -> None: ...


def _accepts(sink: Any, kind: str) -> bool:
    kinds = getattr(sink, "kinds", None)
    return kinds is None or kind in kinds


def _json_default(o: Any) -> Any:
    to_list = getattr(o, "to_list", None)
    if callable(to_list):
        return to_list()
    to_dict = getattr(o, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    return repr(o)


def event_json(event: Event) -> str:
    """One event as one line of JSON (``ensure_ascii=False``), every configured secret redacted
    (:mod:`agentflow.core.redaction`: the strings are redacted before serialising, so the line
    stays valid JSON). The line holds no raw line break of any kind JSON could hold (``\\n`` and
    ``\\r`` are escaped; U+2028, U+2029 and U+0085 are written raw but readers split on ``\\n``
    only) and is always encodable as UTF-8: a lone surrogate is written as its ``\\udXXX``
    escape, so :func:`read_trace` gives back exactly the strings that were written."""
    line = finite_dumps(event.to_dict(), ensure_ascii=False, default=_json_default)
    if SECRETS and SECRETS.spans(line):
        data = json.loads(line)  # plain JSON data now (default= applied)
        line = finite_dumps(redact_data(data), ensure_ascii=False)
    return escape_surrogates(line)


class JsonlSink:
    """Writes one JSON object per line to ``path`` (truncating it, or adding to its end with
    ``append=True``: a resumed durable run), flushed after every event.

    A durable run's finished events (``tool_finished``, ``model_call``, ``step_finished``) carry
    ``data.durable_id``, their identity across the run's processes; this sink writes each
    identity once.  Appending, it first reads the identities the file holds (a line cut by a
    killed process is dropped from the end), and it also takes the finished events a resumed
    process meets again while replaying (:attr:`Event.replayed`) for the runs the file already
    traces: the one a process died before writing is written then, and none twice
    (docs/durable.md "Events and the live view")."""

    def __init__(self, path: str | Path, *, append: bool = False):
        self.path = Path(path)
        #: durable identities written to the file, and the durable runs it traces
        self._written: set[str] = set()
        self._runs: set[str] = set()
        #: replayed finished events are for a trace that is continued, not a new file
        self.takes_replayed = append
        if append:
            self._read_written()
        self._fh: IO[str] | None = self.path.open("a" if append else "w", encoding="utf-8")
        self._lock = threading.Lock()

    def _read_written(self) -> None:
        """Collect the durable identities of the file's events; cut its unfinished last line
        (a process killed in the middle of writing it)."""
        try:
            raw = self.path.read_bytes()
        except OSError:
            return
        end = raw.rfind(b"\n") + 1
        if end < len(raw):
            with self.path.open("r+b") as fh:
                fh.truncate(end)
        for line in raw[:end].split(b"\n"):
            if b'"durable_id"' not in line:
                continue
            try:
                key = json.loads(line)["data"]["durable_id"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(key, str):
                self._written.add(key)
                self._runs.add(_run_of(key))

    def __str__(self) -> str:
        return f"the trace file {str(self.path)!r}"

    def handle(self, event: Event) -> None:
        key = event.data.get("durable_id")
        if isinstance(key, str):
            with self._lock:
                if key in self._written:
                    return  # written already (by this process or an earlier one)
                run = _run_of(key)
                if event.replayed and run not in self._runs:
                    return  # a replay seen from a trace that never held the run
                self._written.add(key)
                self._runs.add(run)
        line = event_json(event)
        with self._lock:
            if self._fh is None:
                return
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def _run_of(durable_id: str) -> str:
    """The run of a durable event identity ``UNIT|NAME`` (a unit's id is its run's id, then
    ``/`` and the unit's step path)."""
    return durable_id.split("|", 1)[0].split("/", 1)[0]


#: How deeply a trace line may nest: an event wraps a value held to ``MAX_JSON_DEPTH`` (100) in a
#: few levels of its own; far deeper is no trace of ours, and Python's parser gives up near 1,000.
MAX_TRACE_DEPTH = 400


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a ``--trace`` file (JSON Lines written by :class:`JsonlSink`), as dicts
    ``{kind, path, stack, time, data}``; blank lines are skipped.

    Raises :class:`agentflow.errors.InputError` naming ``file:line`` for a file that cannot be
    read or a line that is not an event (invalid JSON, no known ``kind``, nested deeper than
    :data:`MAX_TRACE_DEPTH`).
    """

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"{path}: cannot read trace: {why}") from None

    events: list[dict[str, Any]] = []
    # "\n" only, as JsonlSink writes them: str.splitlines would also split at U+2028, U+2029,
    # U+0085, \x1c-\x1e, \v and \f, which JSON strings may hold raw
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            event = loads_bounded(line, MAX_TRACE_DEPTH)
        except json.JSONDecodeError as e:
            raise InputError(
                f"{path}:{number}: not a trace event (invalid JSON: {json_error(e)})"
            ) from None
        except ValueError as e:  # deeper than a run writes (a tool's result is held to 100)
            raise InputError(f"{path}:{number}: not a trace event ({e})") from None
        if not isinstance(event, dict) or event.get("kind") not in EVENT_KINDS:
            raise InputError(f"{path}:{number}: not a trace event (no known `kind`)")
        if not isinstance(event.get("data"), dict):
            event["data"] = {}
        if not isinstance(event.get("stack"), list):
            event["stack"] = []
        if not isinstance(event.get("time"), int | float):
            event["time"] = 0.0
        event["path"] = str(event.get("path") or "")
        events.append(event)
    return events


class CallbackSink:
    """Calls ``fn(event)`` for every event."""

    def __init__(self, fn: Callable[[Event], Any]):
        self.fn = fn

    def handle(self, event: Event) -> None:
        self.fn(event)


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)
        )
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(redact(text).split())  # redacted before the cut
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _visible(text: str) -> str:
    """``text`` with every control character shown as a ``\\xNN``/``\\uNNNN`` escape: one line,
    no terminal escape sequences (core/text.py :func:`visible`)."""
    return visible(text)


class ConsoleSink:
    """Progress on stderr, in the user's terms (an event's ``label``, runtime/where.py).

    On a TTY a live ``rich`` view lists the running steps (label and `.flow` position, elapsed
    time) with a progress bar under each running ``map``; otherwise (or with ``force_plain``)
    one plain line per step start/finish (``▶ review › item 3 › agent(reviewer)
    review.flow:25:5``, ``✓ … review.flow:25:5  1.23s · 2 inference(s), 20→10 tokens`` /
    ``✗ …  2.00s  timeout: …``), one per tool call an agent makes (``  → review › item 3 ›
    agent(reviewer) › read_file  src/app.py:12``, and ``  ✗ …`` when it fails), one per
    inference (``  ◆ … agent(reviewer)  chat gpt-4o 1.20s 900→80 tokens``), plus warnings and
    retries; an ``ask`` step's line says what was answered or that the default was taken
    (``✓ confirm › ask  c.flow:4:3  0.00s · no answer to "Ship?": the default false``); the last line sums
    the run's usage. While a question is on the terminal (:meth:`paused`) the view is down and
    the lines of other steps wait for the answer.  Steps marked ``fold`` (the compiler's
    bookkeeping: outlined-body calls, values inside bodies, ``if``) get no line of their own —
    their inner steps show — unless the run's error starts there.  Steps without a label (a
    hand-written plan's) show their step path and tool instead (``▶ E1 agent``, ``✓ E1 1.23s``).
    ``force_plain=True`` forces the plain lines.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        force_plain: bool = False,
        force_live: bool = False,
        file: str | None = None,
    ):
        self.stream = stream if stream is not None else sys.stderr
        #: the run's flow file as it opens from the current directory: ``file`` (a resumed
        #: run's, found from here: its ``run_started`` is not sent again, or names the file
        #: as recorded where it was started), else its ``run_started``'s
        self.shown_file = file or ""
        is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.plain = force_plain or not (is_tty or force_live)
        self._live = None
        self._live_started = False
        #: path → (what, detail, started): the rows of the live view
        self._running: dict[str, tuple[str, str, float]] = {}
        #: map step path → [items finished, items total] (the progress bars)
        self._maps: dict[str, list[int]] = {}
        #: a streaming agent step's answer so far (``partial_output``), shown in the live view
        self._partials: dict[str, str] = {}
        #: the warnings already shown (a warning repeated word for word is shown once)
        self._warned: set[str] = set()
        #: the directory of the run's flow as given from here (:attr:`shown_file`), and each
        #: step file placed through it (:meth:`_here`)
        self._origin = os.path.dirname(self.shown_file)
        self._placed: dict[str, str] = {}
        #: guards the state above and orders the lines. The one lock order is this lock, then
        #: rich's (``Live``'s, the console's): rich's callbacks (``_render``, run by the refresh
        #: thread under ``Live``'s lock) never take it — they read ``_view``, a snapshot
        #: replaced whole after each event (issue 28: the two locks taken in opposite orders
        #: froze the view and the run for good)
        self._lock = threading.RLock()
        self._view: tuple[
            tuple[tuple[str, tuple[str, str, float]], ...],
            dict[str, tuple[int, int]],
            dict[str, str],
        ] = ((), {}, {})
        #: what an ask step's line adds (``answered yes``, ``no answer: the default false``)
        self._notes: dict[str, str] = {}
        #: step path → whether its ask's answer was taken from the run ``--reuse`` reuses
        self._reused_answers: dict[str, bool] = {}
        #: lines printed while the view is paused (a question on the terminal), shown after it
        self._held: list[str] | None = None
        #: the view was started again after a pause: rich still holds its frame from before
        #: (the question's step running at 0.0s), which it would draw under the next lines
        self._stale = False
        if not self.plain:
            try:
                from rich.console import Console
                from rich.live import Live

                self._console = Console(
                    file=self.stream, stderr=True, force_terminal=True if force_live else None
                )
                self._live = Live(
                    self._render(),
                    console=self._console,
                    refresh_per_second=8,
                    transient=True,
                    get_renderable=self._render,
                )
            except Exception:  # noqa: BLE001  # pragma: no cover - rich missing or broken terminal
                self.plain = True

    # -- rich view
    def _render(self) -> Table:
        """The live table: one row per running step (its label and `.flow` position, or path
        and tool; elapsed seconds), and under a running ``map`` a progress bar ``done/total``."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        table = Table.grid(padding=(0, 2))
        now = time.time()
        running, maps, partials = self._view  # never self._lock: see __init__
        for path, (what, detail, started) in running:
            # Text cells, not markup: a line printed while the view is up re-renders it with
            # markup off, and step paths may hold brackets (`steps[0]`)
            table.add_row(
                Text("…", style="cyan"),
                Text(_visible(what)),
                Text(_visible(detail), style="dim"),
                f"{now - started:5.1f}s",
            )
            if path in partials:  # a streaming agent's answer so far
                table.add_row("", Text(partials[path], style="dim"), "", "")
            if path in maps:
                done, total = maps[path]
                table.add_row(
                    "", ProgressBar(total=max(total, 1), completed=done, width=30),
                    f"{done}/{total}", "",
                )  # fmt: skip
        return table

    def paused(self) -> contextlib.AbstractContextManager[None]:
        """A context manager that hides the live view while the terminal is used for something
        else (the terminal interlocutor asks its question inside it)."""

        @contextlib.contextmanager
        def cm() -> Iterator[None]:
            with self._lock:
                live = self._live if self._live_started else None
                if live is not None:
                    live.stop()
                self._held = []  # lines of other steps wait: the question stays readable
            try:
                yield
            finally:
                with self._lock:
                    held, self._held = self._held or [], None
                    for text in held:
                        self._write(text)
                    if live is not None and self._live_started:
                        live.start()
                        self._stale = True

        return cm()

    def _print(self, text: str) -> None:
        text = _visible(redact(text))  # tool inputs, errors and model names come from outside
        if self._held is not None:
            self._held.append(text)
        else:
            self._write(text)

    def _write(self, text: str) -> None:
        if self.plain:
            self.stream.write(text + "\n")
            self.stream.flush()
        else:
            if self._stale and self._live is not None and self._live_started:
                # the first line after a question: draw the view as it is now (the answered
                # question's row gone) before rich draws its old frame under this line
                self._stale = False
                self._snapshot()
                self._live.refresh()
            self._console.print(text, markup=False, highlight=False)

    def handle(self, event: Event) -> None:
        with self._lock:
            try:
                self._handle(event)
            finally:
                self._snapshot()

    def _snapshot(self) -> None:
        """Replace :attr:`_view`, what :meth:`_render` draws, with the rows as they are now."""
        self._view = (
            tuple(self._running.items()),
            {k: (v[0], v[1]) for k, v in self._maps.items()},
            dict(self._partials),
        )

    def _here(self, source: Any) -> Any:
        """A step's ``file:line:col`` (relative to the directory of the run's flow, as the
        compiler writes it) as a place that opens from the current directory: the run's
        ``file`` was given from here (``flowc run sub/x.flow``; a redriven or resumed run's flow
        as found from here, docs/durable.md), so a file beside it is read through that
        directory (``sub/x.flow:3:5``); any other place is shown as written."""
        if not self._origin or not isinstance(source, str) or not source:
            return source
        file, sep, rest = source.partition(":")
        if not sep or os.path.isabs(file) or file.startswith("<"):
            return source
        found = self._placed.get(file)
        if found is None:
            candidate = os.path.normpath(os.path.join(self._origin, file))
            found = candidate if os.path.isfile(candidate) else file
            self._placed[file] = found
        return f"{found}:{rest}"

    def _handle(self, event: Event) -> None:
        kind, path, data = event.kind, event.path, event.data
        if kind == "run_started":
            if self._live is not None and not event.stack[1:]:
                self._live.start()
                self._live_started = True
            file = data.get("file")
            if not event.stack[1:] and isinstance(file, str) and not file.startswith("<"):
                file = self.shown_file = self.shown_file or file
                self._origin = os.path.dirname(file)  # the step locations are read from there
            self._print(f"run {data.get('plan', '')}{_at(file)}")
        elif kind == "step_started":
            label = data.get("label")
            fold = bool(data.get("fold")) and label is not None
            tool = str(data.get("tool_name", ""))
            count = started_items(data)  # None: the event cannot tell (never said as 0)
            if tool == "map":
                self._maps[path] = [0, count or 0]
            if fold:
                return
            source = self._here(data.get("source"))
            wakes = _sleeping(data.get("input")) if tool == "sleep" else ""
            if label is not None:
                what = str(label)
                if tool == "map" and count is not None:
                    what += f" ({count} item{'' if count == 1 else 's'})"
                self._running[path] = (what, str(source or ""), event.time)
                self._print(f"▶ {_short(what, 200)}{_at(source)}{wakes}")
            else:
                self._running[path] = (path, tool, event.time)
                where = f"  ({_short(source)})" if source else ""
                self._print(f"▶ {path} {_short(tool)}{where}{wakes}")
        elif kind == "tool_started" and "/agent." in path:
            # an agent's own tool call (E0/agent.2/builtin__grep): what the agent is doing
            tool = str(data.get("tool_name", ""))
            label = data.get("label")
            if label is not None:
                summary = call_summary(tool, data.get("input"))
                self._running[path] = (str(label), summary, event.time)
                self._print(f"  → {_short(label, 200)}  {summary}")
            else:
                self._running[path] = (path, tool, event.time)
                self._print(f"  → {path} {_short(data.get('input'), 100)}")
        elif kind == "tool_finished" and "/agent." in path:
            self._running.pop(path, None)
            if data.get("error"):
                err = data["error"]
                self._print(
                    f"  ✗ {self._name(path, data)} {err.get('code')}: {_short(err.get('message'))}"
                )
        elif kind == "step_finished":
            started = self._running.pop(path, (None, None, event.time))[2]
            self._maps.pop(path, None)
            self._partials.pop(path, None)
            parent, _, last = path.rpartition("/")
            if last.startswith("do.") and parent in self._maps:
                self._maps[parent][0] += 1
            elapsed = data.get("elapsed_ms")
            secs = elapsed / 1000 if isinstance(elapsed, int | float) else event.time - started
            err = data.get("error")
            if not err and data.get("aborted"):  # stopped (`flowc cancel`, a hook): not done
                err = {"code": Code.ABORTED, "message": data["aborted"]}
            label = data.get("label")
            if label is None:
                note = self._notes.pop(path, None)
                asked_reused = self._reused_answers.pop(path, False)
                if err:
                    self._print(
                        f"✗ {path} {secs:.2f}s {err.get('code')}: {_short(err.get('message'))}"
                    )
                else:
                    reused = " (reused)" if data.get("reused") or asked_reused else ""
                    self._print(f"✓ {path} {secs:.2f}s{reused}" + (f" · {note}" if note else ""))
                return
            if data.get("fold") and not (err and err.get("step_path") == path):
                return  # bookkeeping: its inner steps said it; an error it raised is shown
            source = data.get("source")
            if err and err.get("step_path") == path and err.get("source"):
                # where it failed, as the final error says it: an inlined `let`'s expression
                # (`s › m  x.flow:3:11`) rather than the statement that read it
                label, source = err.get("label") or label, err["source"]
            head = f"{_short(label, 200)}{_at(self._here(source))}  {secs:.2f}s"
            note = self._notes.pop(path, None)
            asked_reused = self._reused_answers.pop(path, False)
            if note is not None and not err:
                head += f" · {note}"
            if err:
                self._print(f"✗ {head}  {err.get('code')}: {_short(err.get('message'))}")
            else:
                usage = data.get("usage")
                # from the run --reuse reuses: said once, whether the step or its answer says so
                reused = " (reused)" if data.get("reused") or asked_reused else ""
                self._print(f"✓ {head}{reused}{_spent(usage) if isinstance(usage, dict) else ''}")
        elif kind == "model_call":
            # one inference: role, model, latency, tokens and money (what the run is spending)
            self._partials.pop(path, None)
            secs = (data.get("latency_ms") or 0) / 1000
            reused = " (reused)" if data.get("reused") else ""
            self._print(
                f"  ◆ {self._name(path, data)} {_short(data.get('role') or 'chat', 20)} "
                f"{_short(data.get('model', ''), 60)} {secs:.2f}s {_call_tokens(data)}"
                f"{_spent_extra(data)}{reused}"
            )
        elif kind == "ask":
            # said on the ask's own ✓ line: what was answered, or that nobody answered and the
            # default was taken (no terminal, an empty line)
            if data.get("answered"):
                # "(reused)" is the ✓ line's own ending (once, after the note), not the note's
                self._reused_answers[path] = bool(data.get("reused"))
                self._notes[path] = f"answered {_short_value(data.get('answer'))}"
            else:  # the question said, as nobody may have seen it (no terminal: CI, a pipe)
                asked = f" to {_short_value(data['question'])}" if data.get("question") else ""
                default = data.get("answer")
                shown = f": the default {_short_value(default)}" if default is not None else ""
                self._notes[path] = f"no answer{asked}{shown}"
        elif kind == "partial_output":
            # shown in the live view only (a line per streamed piece would flood the log)
            self._partials[path] = _short(data.get("value"), 100)
        elif kind == "warning":
            message = _short(data.get("message", ""), 200).replace("  ", " ")
            if message in self._warned:
                return  # the same warning again (each item of a map): said once is enough
            self._warned.add(message)
            self._print(f"! {self._name(path, data)} {message}")
        elif kind == "step_caught":
            err = data.get("error") or {}
            name = self._name(path, data)
            self._print(f"↪ {name} caught {err.get('code')}: {_short(err.get('message'))}")
        elif kind == "retry":
            what = f"model call ({_short(data['model'], 60)})" if data.get("model") else "step"
            why = data.get("code") or data.get("kind") or "an error"
            self._print(
                f"↻ {self._name(path, data)} {what} retry {data.get('attempt')} after {why}"
                + _waiting(data.get("delay_ms"), data.get("retry_after_ms"), data.get("capped"))
            )
        elif kind == "run_finished":
            self._running.clear()
            self._maps.clear()
            self._partials.clear()
            self._notes.clear()
            self._reused_answers.clear()
            if self._live is not None:
                self._live.stop()
                self._live_started = False
            usage = data.get("usage")
            spent = _spent(usage) if isinstance(usage, dict) else ""
            took = seconds_text(data.get("duration_ms", 0) / 1000)
            self._print(f"run {data.get('status', '')} in {took}{spent}")
        # the live view redraws itself (auto refresh, 8/s) from _render: no work per event

    def close(self) -> None:
        if self._live is not None:
            with self._lock:
                self._live.stop()

    @staticmethod
    def _name(path: str, data: dict[str, Any]) -> str:
        """How a line names the place of an event: its label and two spaces, else its path."""
        label = data.get("label")
        return f"{_short(label, 200)} " if label is not None else path


def _short_value(value: Any) -> str:
    """A value as JSON (a text in quotes), cut to 60 characters."""
    return _short(json.dumps(value, ensure_ascii=False, default=_json_default), 60)


def sleep_attributes(inp: Any) -> dict[str, str]:
    """The span attributes of a ``sleep`` step (docs/observability.md), from its
    ``step_started`` input: ``agentflow.sleep.for`` (the duration) and ``agentflow.sleep.until``
    (the wake-up time, ISO 8601 UTC); empty for another input."""
    if not isinstance(inp, dict) or not isinstance(inp.get("until"), int | float):
        return {}
    wakes = datetime.datetime.fromtimestamp(inp["until"], datetime.UTC)
    until = wakes.isoformat(timespec="milliseconds")
    return {"agentflow.sleep.for": str(inp.get("for")), "agentflow.sleep.until": until}


def _sleeping(inp: Any) -> str:
    """What a ``sleep`` step's start line adds: `` · sleeping until 10:42:00 (5m)`` (local
    time; the date too when it wakes on another day), from its ``step_started`` input."""
    if not isinstance(inp, dict) or not isinstance(inp.get("until"), int | float):
        return ""
    wakes = time.localtime(inp["until"])
    shown = "%H:%M:%S" if wakes[:3] == time.localtime()[:3] else "%Y-%m-%d %H:%M:%S"
    return f" · sleeping until {time.strftime(shown, wakes)} ({inp.get('for')})"


#: a place is shown whole up to this many characters (a cut path opens nothing)
_PLACE_LIMIT = 1000


def _at(source: Any) -> str:
    """``  file.flow:line:col`` for a step's `.flow` position, else ``""``."""
    return f"  {_short(source, _PLACE_LIMIT)}" if source else ""


def _call_tokens(data: dict[str, Any]) -> str:
    """One inference's ``IN→OUT tokens`` for its ``◆`` line; ``usage not reported`` when the
    reply gave none, ``IN→OUT tokens (usage unknown)`` when its counts were not counts — never a
    silent ``0→0`` (docs/models.md "Usage")."""
    if data.get("usage_reported") is False:
        return "usage not reported"
    tokens = f"{data.get('input_tokens', 0)}→{data.get('output_tokens', 0)} tokens"
    return f"{tokens} (usage unknown)" if data.get("usage_unknown") else tokens


def _spent(usage: dict[str, Any]) -> str:
    """`` · N inference(s), IN→OUT tokens`` (cached tokens and cost when known) for a usage
    record with inferences, else ``""``.  Calls whose usage is unknown (not reported, or not
    counts: ``usage_unknown``) are said, as the totals leave them out: ``· 1 inference(s),
    usage unknown`` when every call's is, ``· 3 inference(s), 20→10 tokens (1 call's usage
    unknown)`` otherwise."""
    inferences = usage.get("inferences")
    if not inferences:
        return ""
    unknown = usage.get("usage_unknown")
    unknown = unknown if isinstance(unknown, int) and not isinstance(unknown, bool) else 0
    tokens = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens"
    if unknown and unknown >= inferences and not usage.get("input_tokens"):
        tokens = "usage unknown"  # no call reported a count: no 0→0 to show
    elif unknown:
        calls = "calls'" if unknown > 1 else "call's"
        tokens += f" ({unknown} {calls} usage unknown)"
    return f" · {inferences} inference(s), {tokens}{_spent_extra(usage)}"


def _spent_extra(data: dict[str, Any]) -> str:
    """`` (N cached)`` and `` $0.0012`` (:func:`agentflow.core.text.money`) for a usage record that has them, else ``""``."""
    out = ""
    cached = data.get("cache_read_tokens")
    if isinstance(cached, int) and cached:
        out += f" ({cached} cached)"
    cost = data.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        out += f" {money(cost)}"
    return out


class EventBus:
    """Fans events out to sinks, in registration order.  A sink that raises is dropped after
    the first failure, which is said on stderr, as a ``warning`` event to the remaining sinks and
    in :attr:`failures`; the run continues.

    A sink may declare ``kinds`` (a collection of event kinds): it then receives only those, and
    the executor skips building events nobody listens to (:meth:`listens`) — the hot path of a
    run without a trace or a view emits nothing.
    """

    def __init__(self, sinks: Iterable[Sink] = ()):
        self.sinks: list[Sink] = list(sinks)
        self._listens: dict[str, bool] = {}
        #: what each sink that failed (and was dropped) said, in order
        self.failures: list[str] = []

    def add(self, sink: Sink) -> None:
        """Register one more sink."""
        self.sinks.append(sink)
        self._listens.clear()

    def listens(self, kind: str) -> bool:
        """True when some sink receives events of ``kind``."""
        hit = self._listens.get(kind)
        if hit is None:
            hit = any(_accepts(s, kind) for s in self.sinks)
            self._listens[kind] = hit
        return hit

    def emit(self, kind: str, path: str = "", stack: list[str] | None = None, **data: Any) -> Event:
        """Build an :class:`Event` stamped now and deliver it; returns the event."""
        event = Event(kind=kind, path=path, stack=list(stack or ()), time=time.time(), data=data)
        self.publish(event)
        return event

    def publish(self, event: Event) -> None:
        """Deliver ``event`` to every sink that accepts its kind. A sink that raises is removed
        and said once: in :attr:`failures`, as a ``warning`` event to the remaining sinks after
        ``event`` (none after ``run_finished``, the last event), and directly on stderr when no
        remaining console sink shows that warning and stderr can take it."""
        said: list[str] = []
        for sink in list(self.sinks):
            if not _accepts(sink, event.kind):
                continue
            if event.replayed and not getattr(sink, "takes_replayed", False):
                continue
            try:
                sink.handle(event)
            except Exception as exc:  # noqa: BLE001 - a broken sink must not break the run …
                self.sinks.remove(sink)
                self._listens.clear()
                # … nor disappear unsaid
                message = redact(
                    f"{sink} failed and gets no more events of this run "
                    f"({type(exc).__name__}: {exc})"
                )
                self.failures.append(message)
                said.append(message)
                # said on stderr when no console sink will say it (as the `warning` event
                # below) and stderr can take it (a console sink fails because stderr is a closed
                # pipe, and the report of it must not fail the run instead: issue 28)
                if event.kind == "run_finished" or not any(
                    isinstance(s, ConsoleSink) and _accepts(s, "warning") for s in self.sinks
                ):
                    with contextlib.suppress(Exception):
                        print(f"agentflow: {visible(message)}", file=sys.stderr, flush=True)
        if event.kind == "run_finished":
            return  # nothing follows a run's last event (`failures` keeps what failed)
        for message in said:  # after the event itself, so every sink sees events in order
            self.publish(
                Event(
                    kind="warning",
                    path=event.path,
                    stack=list(event.stack),
                    time=time.time(),
                    data={"message": message},
                )
            )

    def close(self) -> None:
        for sink in self.sinks:
            close = getattr(sink, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing a broken sink
                    pass


def _waiting(delay_ms: Any, asked_ms: Any = None, capped: Any = False) -> str:
    """How long a retry waits, for its ``↻`` line, when a person would notice (1 s or more):
    ``, in 2m`` — a provider's ``Retry-After`` is honoured up to ``[providers.X]
    max_retry_after``, and a retry line followed by minutes of silence read as a hang.  A wait
    cut to that cap says so, and what the provider asked when it is known: ``, in 2m (provider
    asked 10m; capped)``."""
    if capped is True:
        asked = _duration(asked_ms)
        said = f"provider asked {asked}; capped" if asked else "capped: the provider asked longer"
        return f", in {_duration(delay_ms) or 'under 1s'} ({said})"
    shown = _duration(delay_ms)
    return f", in {shown}" if shown else ""


def _duration(ms: Any) -> str:
    """``ms`` milliseconds as ``3s``, ``1m 30s``, ``2m``, ``1h 05m``; "" under a second (or not
    a finite number)."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not 1000 <= ms < math.inf:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h {minutes:02d}m" if minutes else f"{hours}h"
    return f"{minutes}m {rest:02d}s" if rest else f"{minutes}m"
