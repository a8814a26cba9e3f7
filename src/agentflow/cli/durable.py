"""`flowc resume`, `runs`, `runs show`, `answer`, `cancel`, `redrive` and `worker`: durable runs
(docs/durable.md), each a call of an :mod:`agentflow.api` function (``resume_run``,
``list_durable_runs``, ``show_durable_run``, ``answer_run``, ``cancel_durable``, ``run``,
``work``)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from typing import Any, cast

import click

from agentflow import api
from agentflow.cli.common import (
    _ask_finish,
    _ask_progress,
    _checked_run_id,
    _edited_since,
    _err,
    _fail,
    _json_out,
    _otel_endpoint,
    _out,
    _question_notice,
    _redrive_hint,
    _show_question,
    _show_run_error,
    _telemetry_option,
    _trace_option,
    _workspace_option,
    checked_model,
    given_files,
)
from agentflow.core.diagnostics import did_you_mean, suggested
from agentflow.core.redaction import redact
from agentflow.core.text import choices_text
from agentflow.core.text import money as as_money
from agentflow.core.vocabulary import Code, seconds_text
from agentflow.errors import ErrorInfo, FlowError, Interrupted

#: the steps ``flowc runs show`` lists by default (one page; ``--limit 0``: all)
SHOW_LIMIT = 200
#: the largest --limit/--offset: a page position SQLite can hold (a signed 64-bit integer)
_SQL_INT_MAX = 2**63 - 1

_config_option = click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)


_database_option = click.option(
    "--database", metavar="URL", help="SQLite file or PostgreSQL URL (default: [durable] database)."
)


def _otel_options(fn: Any) -> Any:
    """``--otel [ENDPOINT]`` / ``--no-otel`` of ``flowc resume`` and ``flowc worker``."""
    fn = click.option(
        "--no-otel", is_flag=True, help="Do not export, even when flow.toml says so."
    )(fn)
    return click.option(
        "--otel", is_flag=False, flag_value="on", default=None, metavar="[ENDPOINT]",
        callback=lambda ctx, param, value: _otel_endpoint(value),
        help="Export spans over OTLP/HTTP into the run's trace (as flowc run --otel).",
    )(fn)  # fmt: skip


def _otel_settings(config: str | None, otel: str | None, no_otel: bool) -> Any:
    """The export settings of ``--otel`` / ``--no-otel`` / ``[telemetry]`` (None: none)."""
    return api.telemetry_settings(api.load_config(config), _telemetry_option(otel, no_otel))


def _durable_url(config: str | None, database: str | None) -> str:
    return api.durable_database(config=config, database=database)


def _run_database(config: str | None, database: str | None, run_id: str) -> Any:
    """Where run ``run_id`` is (:func:`agentflow.api.durable_run_database`): ``--config`` /
    ``--database``, else the current directory's database when it holds the run, else the one
    the run was started on — said in one line on stderr; a configuration mistake exits 1."""
    try:
        place = api.durable_run_database(run_id, config=config, database=database)
    except FlowError as e:
        _fail(e)
    if place.note:
        _err(place.note)
    return place


def _durable_call(coro_fn: Any) -> Any:
    """Run a coroutine of the durable API with the engine shut down afterwards; a user error
    is printed (exit 1), never a traceback."""
    import asyncio

    try:
        return asyncio.run(coro_fn())
    except FlowError as e:
        _fail(e)
    finally:
        api.shutdown_durable()


def _finish(
    result: Any,
    as_json: bool,
    target: str = "",
    ran: tuple[str, float] | None = None,
    hint: bool = True,
) -> None:
    """Print a resumed or redriven run's result (``--json``: the whole result, else the output;
    a durable question's answer as text, as ``flowc ask`` prints it) and exit 1 with its error
    when it did not end ``ok`` / ``exited`` — then with the ``flowc redrive`` hint, unless
    ``hint`` is False (a note before said it)."""
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif isinstance(result.results.get("ask"), dict) and isinstance(result.output, str):
        _out(redact(result.output))  # a durable question: its answer, as `flowc ask`
    elif result.status in ("ok", "exited"):
        click.echo(_json_out(result.output))
    if result.status not in ("ok", "exited"):
        _show_run_error(
            result.error or ErrorInfo(Code.FAILED, f"the run ended with status {result.status}"),
            target,  # the run's flow as found from here: the error's line under it
            ran,  # unless it changed since the run started (the plan it ran, when)
        )
        if hint:
            _redrive_hint(result)
        sys.exit(1)


def _when(epoch: float | None) -> str:
    if not epoch:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (OverflowError, OSError, ValueError):  # a time no calendar shows: as it is
        return f"{epoch:g} (epoch seconds)"


@click.command()
@click.argument("run_id", metavar="RUN", callback=_checked_run_id(new=False))
@_config_option
@_database_option
@_trace_option
@_otel_options
@click.option("--json", "as_json", is_flag=True, help="Print the whole RunResult as JSON.")
def resume(
    run_id: str,
    config: str | None,
    database: str | None,
    trace: str | None,
    otel: str | None,
    no_otel: bool,
    as_json: bool,
) -> None:
    """Continue durable run RUN after its process stopped: finished steps are replayed from
    the record, the rest runs here."""
    place = _run_database(config, database, run_id)  # a mistake is said before anything runs
    if place.note:  # found where it was started: its flow.toml and database
        config, database = config or place.config, database or place.url
    try:
        _otel_settings(config, otel, no_otel)
    except FlowError as e:
        _fail(e)
    shown: set[str] = set()  # the questions announced (a waiting one, then new ones, once each)

    known: dict[str, Any] = {}  # the run's questions so far, path -> label

    def waiting(questions: list[Any]) -> None:
        known.update((q.path, q.label) for q in questions)
        for q in questions:
            if q.path not in shown:
                shown.add(q.path)
                _show_question(run_id, q.path, q.question, q.choices, q.label, known.items())

    before, ended, file, ran = _run_before(place.url, run_id, place.started_in)
    if before is None and ended is None:  # a plan's run goes on: its step lines follow
        _note_edited(file, ran)
    why = str((before.error or {}).get("message") or "") if before is not None else ""
    # a durable question a Ctrl-C ended goes on from its record (DBOS); the earlier
    # interruption is one line, not its error as if this resume's
    reopened = before is not None and before.status == "aborted" and _by_signal(before)
    if reopened:
        _err(f"note: question {run_id} was {why}; resuming it")
    elif before is not None and before.status == "aborted" and not as_json:
        # ended for good (flowc cancel, a hook's abort): nothing runs; said in one line
        _err(f"note: question {run_id} had ended aborted ({why}); nothing was resumed")
    progress: list[Any] = [api.ask_progress_sink(_ask_progress)] if before is not None else []
    # a durable question prints what `flowc ask` prints; a plan's run its live view
    console = api.console_sink(file)  # its step locations shown from here
    sinks: list[Any] = [*progress] or [console]
    sinks.append(_question_notice([run_id], shown, known))
    # on the loop `flowc run` runs on: a first Ctrl-C / SIGTERM stops the resumed run as it
    # stops a run (`run aborted`, the trace closed, the run recorded aborted), then says so
    result = _stoppable(
        lambda: api.resume_run_sync(
            run_id,
            config=config,
            database=database,
            trace=trace,
            telemetry=_telemetry_option(otel, no_otel),
            sinks=sinks,
            on_waiting=waiting,
        ),
        as_json,
    )
    if before is None:
        if ended in ("error", "aborted", "cancelled") and not as_json:
            # its recorded end, not a new failure of this resume: say what can go on from it
            _err(
                f"note: run {run_id} had already ended {ended}; `flowc resume` goes on with a "
                f"run whose process stopped — `flowc redrive {shlex.quote(run_id)}` runs it "
                "again, reusing the steps that finished"
            )
        # a run that had ended already: the note above names redrive
        _finish(result, as_json, file or "", ran, hint=ended not in ("error", "aborted"))
        return
    asked = api.durable_ask_result(result)
    if before.status == "aborted" and not reopened and not as_json:
        sys.exit(1)  # said above: the note, not the earlier error as if this resume's
    _ask_finish(asked, as_json)


def _by_signal(info: Any) -> bool:
    """True for a durable question a Ctrl-C / SIGTERM ended (``interrupted by SIG…``), which
    ``flowc resume`` continues, on DBOS; a Temporal run is never ended by a signal."""
    message = str((info.error or {}).get("message") or "")
    return message.startswith("interrupted by SIG")


#: The statuses of a run that has ended (``flowc resume`` gives its recorded result).
ENDED = ("ok", "exited", "error", "aborted", "cancelled")


def _run_before(
    url: str, run_id: str, started_in: str | None = None
) -> tuple[Any, str | None, str | None, tuple[str, float] | None]:
    """What ``flowc resume`` needs to know of durable run RUN before it takes it up: its
    RunInfo when it is a durable question (``flowc ask --durable``), else None (a plan's run);
    the status it had ended with (:data:`ENDED`), else None (an unfinished or unknown run,
    which the resume itself reports); its flow file as it opens from here (it may have
    been started in the directory ``started_in``: docs/durable.md), else None; and the plan
    text it runs with its start time (:func:`_recorded_plan`)."""
    import asyncio

    async def look() -> tuple[Any, str | None, str | None, tuple[str, float] | None]:
        info = await api.show_durable_run(url, run_id, limit=0)
        ended = info.status if info.status in ENDED else None
        spec = await api.recorded_run(url, run_id, started_in=started_in)
        file = spec.get("plan_file") if isinstance(spec, dict) else None
        shown = file if isinstance(file, str) and not file.startswith("<") else None
        asks = isinstance(spec, dict) and "ask" in spec
        return (info if asks else None), ended, shown, _recorded_plan(spec)

    try:
        return asyncio.run(look())
    except FlowError:
        return None, None, None, None
    finally:
        api.shutdown_durable()


#: What ``flowc runs --status`` takes: a run's status, or ``unfinished`` (running, waiting or
#: stopped).
RUN_STATUSES = (
    "running", "waiting", "stopped", "unfinished", "ok", "exited", "error", "aborted",
    "cancelled", "unreadable",
)  # fmt: skip
#: How many runs ``flowc runs`` lists by default.
RUNS_LIMIT = 50
#: The width of ``flowc runs``' status column: its widest status (``unreadable``).
RUN_STATUS_WIDTH = max(len(s) for s in RUN_STATUSES)
#: Every status a step of ``flowc runs show`` can have (runtime/durable/shown.py,
#: management.py), ``reused`` for a step a redrive took from its run.
STEP_STATUSES = (
    "done", "error", "retried", "reused", "sleeping", "interrupted", "unanswered",
)  # fmt: skip
#: The width of ``flowc runs show``'s step status column: its widest (``interrupted``).
STEP_STATUS_WIDTH = max(len(s) for s in STEP_STATUSES)


@click.group(invoke_without_command=True)
@_config_option
@_database_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.option(
    "--limit", type=click.IntRange(1, _SQL_INT_MAX), default=RUNS_LIMIT, show_default=True,
    help="List at most this many runs (the newest).",
)  # fmt: skip
@click.option("--all", "list_all", is_flag=True, help="List every run (no --limit).")
@click.option(
    "--status", type=click.Choice(RUN_STATUSES),
    help="Only the runs of this status (unfinished: running, waiting or stopped).",
)  # fmt: skip
@click.option("--plan", metavar="NAME", help="Only the runs whose plan's name holds NAME.")
@click.option(
    "--elsewhere", is_flag=True,
    help="Where no run is found, name the databases runs were started on from other "
    "directories too (the per-user index of runs), not only from here and below.",
)  # fmt: skip
@click.pass_context
def runs(
    ctx: click.Context,
    config: str | None,
    database: str | None,
    as_json: bool,
    limit: int,
    list_all: bool,
    status: str | None,
    plan: str | None,
    elsewhere: bool,
) -> None:
    """List durable runs (newest first) with their status and pending questions: the newest
    50 (--limit N, --all), of one status (--status) or plan (--plan); a last line says how
    many more there are and how many of them have not ended."""
    ctx.obj = {"config": config, "database": database}
    if ctx.invoked_subcommand is not None:
        return
    try:
        url = _durable_url(config, database)
    except FlowError as e:
        _fail(e)
    missing = api.missing_durable_database(url)  # listing creates nothing
    found: list[Any] = []
    more = ""
    if missing is None:
        found, more = _durable_call(
            lambda: _listed_runs(url, None if list_all else limit, status, plan)
        )
    if as_json:
        click.echo(_json_out([r.to_dict() for r in found]))
        if more:
            _err(more)
        return
    if not found:
        what = f"no durable runs{_filtered(status, plan)}"
        _err(what + (f" (no database at {missing})" if missing else ""))
        if (status or plan) and missing is None and _other_runs(url, plan):
            return  # the runs of this database: not "started elsewhere"
        if config is None and database is None:
            _elsewhere(url, everywhere=elsewhere)
        return
    width = max(len(r.run_id) for r in found)  # the statuses line up whatever the ids
    for r in found:
        asked = f"  {_one_line(r.question)}" if r.question is not None else ""
        _say(
            f"{r.run_id:<{width}}  {r.status:<{RUN_STATUS_WIDTH}} {r.plan}  started "
            f"{_when(r.created_at)}{asked}"
        )
        for q in r.questions:
            choices = f" ({choices_text(q.choices)})" if q.choices else ""
            late = " (its timeout ran out)" if q.timed_out else ""
            _say(f"    ? [{q.shown()}] {q.question}{choices}{late}")
        for q in r.answered:
            _say(f"    ✓ [{q.shown()}] {q.question} {_closed_text(q)}")
        if r.unreadable:
            _say(f"    ! {r.unreadable}")
    if more:
        _say(more)


def _other_runs(url: str, plan: str | None) -> bool:
    """Under a filtered ``flowc runs``' "no durable runs": the plans of the runs database
    ``url`` does hold (its newest 1,000), a did-you-mean for a ``--plan`` close to one of them,
    and the command that lists them; False (nothing said) when it holds none."""
    held = _durable_call(lambda: api.list_durable_runs(url, limit=1000))
    if not held:
        return False
    names = sorted({str(r.plan) for r in held})
    meant = did_you_mean(plan, names) if plan else None
    also = f"; did you mean --plan {suggested(meant)}?" if meant else ""
    _err(
        f"  the database holds runs of other statuses or plans (plans: {', '.join(names)}): "
        f"flowc runs lists them{also}"
    )
    return True


#: How many databases ``flowc runs``' "started elsewhere" hint names at most.
ELSEWHERE_SHOWN = 3


def _near(entry: Any, cwd: str) -> bool:
    """True when the run of index ``entry`` belongs here: it was started in the current
    directory ``cwd`` (real path) or below it, or its ``flow.toml`` or database is there — or
    its line records none of these (an earlier flowc's), which cannot tell."""
    import os

    places = [
        p
        for p in (
            entry.cwd,
            os.path.dirname(entry.config) if entry.config else None,
            os.path.dirname(entry.database) if entry.database else None,
        )
        if p
    ]
    try:
        real = [os.path.realpath(p) for p in places]
    except (OSError, ValueError):
        return True
    return not real or any(p == cwd or p.startswith(cwd + os.sep) for p in real)


def _elsewhere(url: str, *, everywhere: bool = False) -> None:
    """Under ``flowc runs``' "no durable runs": the databases runs were last started on from
    here or below (the per-user index of runs: a project under the current directory), as
    the ``flowc runs`` that lists each; those of other directories only with ``everywhere``
    (``--elsewhere``), else counted in one line (docs/decisions.md "flowc runs names only this
    directory's other databases")."""
    import os

    here = url.split("?", 1)[0]
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = ""
    shown = far = 0
    for entry in api.recent_durable_databases(limit=20):
        if entry.database is not None and here == f"sqlite:///{entry.database}":
            continue
        if not everywhere and not _near(entry, cwd):
            far += 1
            continue
        if shown == ELSEWHERE_SHOWN:
            continue
        shown += 1
        # a run started with a database of its own (--database) is found there, not in
        # its flow.toml's
        by_config = entry.config is not None and not (entry.own and (entry.database or entry.url))
        if not by_config and entry.database is None:  # PostgreSQL, Temporal: the URL
            _err(
                f"  runs were started elsewhere (the latest: {entry.run_id}): {_by_url(entry.url)}"
            )
            continue
        path = (entry.config if by_config else entry.database) or ""
        try:  # a path below the current directory is shown relative to it
            if os.path.realpath(path).startswith(os.path.realpath(os.getcwd()) + os.sep):
                path = os.path.relpath(path)
        except (OSError, ValueError):
            pass
        option = f"--config {shlex.quote(path)}" if by_config else f"--database {shlex.quote(path)}"
        _err(f"  runs were started elsewhere (the latest: {entry.run_id}): flowc runs {option}")
    if far:
        _err(
            f"  {far} other database{'s hold' if far > 1 else ' holds'} runs started in other "
            f"directories: flowc runs --elsewhere names {'them' if far > 1 else 'it'}"
        )


def _by_url(url: str | None) -> str:
    """The ``flowc runs --database URL`` of a run started on database ``url`` (PostgreSQL,
    Temporal; recorded with its password masked, which the user writes back), or how to name
    it when the run index does not hold it (a line of an earlier flowc)."""
    if url is None:
        return "flowc runs --database URL (the PostgreSQL or Temporal URL it was started with)"
    masked = " (with its password for ***)" if ":***@" in url or "=***" in url else ""
    return f"flowc runs --database {shlex.quote(url)}{masked}"


def _filtered(status: str | None, plan: str | None) -> str:
    parts = [f"of status {status}"] if status else []
    parts += [f"of a plan named like {plan!r}"] if plan else []
    return (" " + " and ".join(parts)) if parts else ""


async def _listed_runs(
    url: str, limit: int | None, status: str | None, plan: str | None
) -> tuple[list[Any], str]:
    """The runs ``flowc runs`` lists, and its last line: how many it leaves out (and how
    many of those have not ended), or "" when it lists them all."""
    if status or plan:  # one more than the page tells whether more match
        found = await api.list_durable_runs(
            url, limit=None if limit is None else limit + 1, status=status, plan=plan
        )
        if limit is None or len(found) <= limit:
            return found, ""
        return found[:limit], (
            f"… more runs{_filtered(status, plan)}: flowc runs --all, or --limit N"
        )
    found = await api.list_durable_runs(url, limit=limit)
    if limit is None or len(found) < limit:
        return found, ""
    total, unfinished = await api.count_durable_runs(url)
    left = total - len(found)
    if left <= 0:
        return found, ""
    hidden = max(0, unfinished - sum(r.status in ("running", "waiting", "stopped") for r in found))
    also = f", {hidden} of them not ended (flowc runs --status unfinished)" if hidden else ""
    return found, f"… {left} more run{'s' * (left != 1)}{also}: flowc runs --all, or --limit N"


@runs.command("show")
@click.argument("run_id", metavar="RUN", callback=_checked_run_id(new=False))
@_config_option
@_database_option
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option(
    "--all", "show_all", is_flag=True,
    help="List the durable engine's own operations too (DBOS.setEvent, DBOS.sleep, ...).",
)  # fmt: skip
@click.option(
    "--limit", type=click.IntRange(0, _SQL_INT_MAX), default=SHOW_LIMIT, show_default=True,
    help="Show at most this many steps (0: all of them).",
)  # fmt: skip
@click.option(
    "--offset", type=click.IntRange(0, _SQL_INT_MAX), default=0,
    help="Skip this many steps first (the next page: --offset 200).",
)  # fmt: skip
@click.pass_context
def runs_show(
    ctx: click.Context,
    run_id: str,
    config: str | None,
    database: str | None,
    as_json: bool,
    show_all: bool,
    limit: int,
    offset: int,
) -> None:
    """Show durable run RUN: its steps (status, start, duration; one page of them: --limit,
    --offset), status, cost so far, pending questions, error, and for a --fleet run which
    worker holds which unfinished unit."""
    parent = ctx.obj or {}
    config, database = config or parent.get("config"), database or parent.get("database")
    url = _run_database(config, database, run_id).url
    info = _durable_call(
        lambda: api.show_durable_run(
            url, run_id, internals=show_all, limit=limit or None, offset=offset
        )
    )
    if as_json:
        click.echo(_json_out(info.to_dict()))
        return
    _say(f"run {info.run_id}: {info.status}  plan {info.plan}")
    if info.question is not None:  # a durable question's, whole (continued lines indented)
        _say("question: " + info.question.rstrip("\n").replace("\n", "\n  "))
    _say(f"started {_when(info.created_at)}, last change {_when(info.updated_at)}")
    cost = info.cost
    money = f", {as_money(cost['cost'])}" if "cost" in cost else ""
    unknown = cost.get("usage_unknown", 0)
    # a call whose usage is unknown (not reported, or not counts) is said, never a silent 0
    calls = "calls'" if unknown > 1 else "call's"
    untold = f"; {unknown} {calls} usage unknown" if unknown else ""
    _say(
        f"model calls so far: {cost.get('inferences', 0)} ({cost.get('input_tokens', 0)} in, "
        f"{cost.get('output_tokens', 0)} out tokens{money}{untold})"
    )
    hidden = ""
    if info.internal and not show_all:
        hidden = f" ({info.internal} engine operation(s) not shown: --all lists them)"
    total = f"at least {info.steps_total}" if info.steps_partial else info.steps_total
    if info.steps:
        _say(f"steps:{hidden}")
    elif info.steps_offset and info.steps_offset >= info.steps_total:
        # a page past the end: say so, not "none yet" and a backwards range
        _say(f"steps: none at --offset {info.steps_offset} (the run has {total}){hidden}")
    else:
        _say(f"steps: none yet{hidden}")
    for step in info.steps:
        _say("  " + _step_line(step))
    shown_to = info.steps_offset + len(info.steps)
    if info.steps and (info.steps_offset or shown_to < info.steps_total):
        more = f": --offset {shown_to} shows more" if shown_to < info.steps_total else ""
        _say(f"  (steps {info.steps_offset + 1}-{shown_to} of {total}{more})")
    for holder in info.workers:
        _say(_holder_line(holder, info.run_id))
    known = [(q.path, q.label) for q in (*info.questions, *info.answered)]
    for q in info.questions:
        _say(
            f"waiting: ? [{q.shown()}] {q.question}"
            + (f" ({choices_text(q.choices)})" if q.choices else "")
        )
        if q.timed_out and q.asked_at is not None and q.timeout is not None:
            _say(
                f"  its timeout ran out at {_when(q.asked_at + q.timeout)}: the run goes on "
                "unanswered when it is taken up, unless answered before"
            )
        named = api.answer_name(q.path, q.label, known)
        _say(f"  answer with: {api.answer_command(info.run_id, named)}")
    for q in info.answered:
        _say(f"answered: ✓ [{q.shown()}] {q.question} {_closed_text(q)}")
        if info.status == "stopped":
            _say(f"  the run takes it when it goes on: flowc resume {shlex.quote(info.run_id)}")
    if info.error:
        failed = info.error
        path, label = failed.get("step_path"), failed.get("label")
        # the failed step as the .flow names it, its path after (as flowc run says it)
        where = f" in {label} (step {path})" if label and path else ""
        where = where or (f" at step {path}" if path else "")
        _say(f"error[{failed.get('code')}]{where}: {failed.get('message')}")


def _say(line: str) -> None:
    """Print one line of ``flowc runs`` / ``flowc runs show`` with every secret this process
    knows redacted: the second guard, after the records' own redaction when they were written
    (records.py), for a database written by an older agentflow or another process."""
    _out(redact(line))


#: Characters of a durable question shown in its line of ``flowc runs``.
QUESTION_CHARS = 60


def _one_line(question: str) -> str:
    """A durable question on one line of ``flowc runs``: its whitespace runs as one space,
    cut to :data:`QUESTION_CHARS` characters with "…", in double quotes."""
    text = " ".join(question.split())
    if len(text) > QUESTION_CHARS:
        text = text[: QUESTION_CHARS - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def _closed_text(q: Any) -> str:
    """How a question the run has not taken yet was closed: ``answered "ship"`` (or ``closed
    unanswered``)."""
    if q.closed == "answer":
        return "answered " + json.dumps(q.answer, ensure_ascii=False)
    return "closed unanswered"


def _step_line(step: dict[str, Any]) -> str:
    """One step of ``flowc runs show``: status (``retried`` for a failed attempt the run made
    again), start time, duration, the step in the user's terms (its `.flow` label, else its
    path and what it called), and a failed attempt's error code."""
    mark = "reused" if step.get("reused") else step["status"]
    start, end = step.get("started_at"), step.get("finished_at")
    at = time.strftime("%H:%M:%S", time.localtime(start)) if start else "-"
    took = seconds_text(end - start) if start and end else "-"
    if step.get("internal"):
        what = f"(engine) {step['operation']}"
    elif step.get("label"):
        what = str(step["label"])
        if str(step.get("kind", "")).startswith("model"):  # a call of the agent's model
            what += f" › {step['kind']}"
    else:
        what = f"{step.get('path') or '(run)'}  {step.get('kind', '')}".rstrip()
    wakes = step.get("wakes_at")
    if isinstance(wakes, int | float):  # a `sleep`: when it wakes (or woke)
        verb = {"sleeping": "wakes", "interrupted": "was to wake"}.get(step["status"], "woke")
        what += f" · {verb} at {_when(wakes)}"
    code = (step.get("error") or {}).get("code")
    if code:  # what the attempt failed with: the code its retry policy decided by
        what += f"  [{code}]"
    return f"{mark:<{STEP_STATUS_WIDTH}} {at}  {took:>7}  {what}"


def _holder_line(holder: dict[str, Any], run_id: str) -> str:
    """Who holds some of a fleet run's unfinished units (``flowc runs show``)."""
    units = holder["units"]
    listed = ", ".join(units[:5]) + (" …" if len(units) > 5 else "")
    if holder.get("queued"):
        return f"queued: {len(units)} unit(s) no worker has taken yet: {listed}"
    if "worker" in holder:
        if holder.get("alive"):
            return f"worker {holder['worker']} (alive) holds {len(units)} unit(s): {listed}"
        return (
            f"worker {holder['worker']} (gone: its process ended) holds {len(units)} unit(s): "
            f"{listed}; flowc resume {run_id} puts them back for the live workers"
        )
    return f"{holder['executor']} holds {len(units)} unit(s): {listed}"


class _AnswerCommand(click.Command):
    """``flowc answer``: a VALUE that begins with ``-`` (``-5``) is taken by click for an
    option; its "No such option" error then shows the command with ``--`` before the
    arguments (docs/reference/cli.md "flowc answer")."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            if e.option_name.startswith("--"):  # a misspelt option, not a value
                raise
            options: list[str] = []
            words: list[str] = []
            it = iter(given)
            for arg in it:
                if arg in ("--config", "--database"):
                    options += [arg, next(it, "")]
                elif arg.startswith(("--config=", "--database=")):
                    options.append(arg)
                elif arg != "--":
                    words.append(arg)
            first = next((i for i, w in enumerate(words) if w.startswith("-")), 0)
            shown = " ".join(
                shlex.quote(w) for w in [*options, *words[:first], "--", *words[first:]]
            )
            raise click.UsageError(
                f"{e.format_message()}\nhint: an argument that begins with `-` (a negative "
                f"answer) goes after `--`: flowc answer {shown}",
                ctx,
            ) from None


@click.command(cls=_AnswerCommand)
@click.argument("run_id", metavar="RUN", callback=_checked_run_id(new=False))
@click.argument("step", metavar="NAME|STEP")
@click.argument("value", metavar="VALUE")
@_config_option
@_database_option
def answer(run_id: str, step: str, value: str, config: str | None, database: str | None) -> None:
    """Answer the question durable run RUN waits on at STEP (its name in the .flow — the let
    its answer is bound to, or its stage — or its step path) with VALUE (JSON unless the
    question wants text), checked against the question's type and choices."""
    url = _run_database(config, database, run_id).url
    question = _durable_call(lambda: api.answer_durable(url, run_id, step, value))
    taken = f" with {json.dumps(question.answer, ensure_ascii=False)}" if question.closed else ""
    _err(f"answered [{question.shown()}] {question.question}{taken}")


@click.command()
@click.argument("run_id", metavar="RUN", callback=_checked_run_id(new=False))
@_config_option
@_database_option
def cancel(run_id: str, config: str | None, database: str | None) -> None:
    """Cancel durable run RUN (each of its units stops at its next step)."""
    url = _run_database(config, database, run_id).url
    _durable_call(lambda: api.cancel_durable(url, run_id))
    _err(f"cancelled {run_id}")


@click.command()
@click.argument("run_id", metavar="RUN", callback=_checked_run_id(new=False))
@_config_option
@_database_option
@_workspace_option
@_trace_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole RunResult as JSON.")
@click.option("--ask-again", is_flag=True, help="Ask every question again, answered ones included.")
@click.option(
    "--model",
    "model",
    metavar="test[:SEED]",
    callback=checked_model,
    help="Answer every agent with the built-in test model (default: as RUN was answered: its "
    "--model or --replay, else the configured models).",
)
def redrive(
    run_id: str,
    config: str | None,
    database: str | None,
    workspace: str | None,
    trace: str | None,
    as_json: bool,
    ask_again: bool,
    model: str | None,
) -> None:
    """Run failed durable run RUN again from its failed steps: a new run of the same plan and
    input that takes every step RUN finished and every question it had answered (prints the
    new run id).  A run that ended ok is refused: `flowc run FILE --reuse RUN` runs it again; so
    is one that has not ended: `flowc resume RUN` continues it (or `flowc cancel RUN` first)."""
    import secrets  # hashlib's OpenSSL (~10 ms): not for every flowc start

    place = _run_database(config, database, run_id)
    url = place.url
    if place.note:  # found where it was started: the new run goes into the same database
        config, database = config or place.config, database or place.url
    spec = _durable_call(
        lambda: api.recorded_run(
            url,
            run_id,
            redrive=True,
            started_in=place.started_in,
            found_elsewhere=place.note is not None,
        )
    )
    plan = api.plan_from_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    _note_edited(spec.get("plan_file"), _recorded_plan(spec))  # the new run runs RUN's plan
    # the new run's id: RUN's own (before any earlier redrive's suffix) + a fresh suffix
    new_id = api.redrive_id(run_id, secrets.token_hex(3))
    # answered as RUN was (its --model test or --replay cassette, recorded in its spec), as
    # `flowc resume` does, unless --model says otherwise
    replay = None if model is not None else spec.get("replay")
    model = model if model is not None else spec.get("model")
    started: list[str] = []

    def on_start(rid: str) -> None:
        started.append(rid)
        _err(f"run id: {rid} (redrive of {run_id})")

    # on the loop `flowc run` runs on: a first Ctrl-C / SIGTERM stops the new run as it stops
    # a run (`run aborted`, the trace closed, the run recorded aborted), then says so; its
    # progress and questions shown as `flowc run` shows them
    result = _stoppable(
        lambda: api.run_sync(
            plan,
            spec.get("input"),
            config=config or spec.get("config"),
            workspace=workspace or spec.get("workspace"),
            trace=trace,
            database=database,
            durable=True,
            run_id=new_id,
            reuse=run_id,
            ask_again=ask_again,
            replay=replay,
            model=model,
            on_start=on_start,
            sinks=[api.console_sink(), _question_notice(started)],
        ),
        as_json,
        plan,
    )
    _finish(result, as_json, spec.get("plan_file") or "", _recorded_plan(spec))


def _note_edited(file: str | None, ran: tuple[str, float] | None) -> None:
    """One line on stderr when the `.flow` ``file`` of a durable run taken up again changed
    since the run started (``ran``: its plan and start, common._edited_since): the positions
    on its step lines are those of the run's own source, not of the file as it is now."""
    if file and not file.startswith("<") and ran is not None and _edited_since(file, file, *ran):
        _err(
            f"note: {file} changed since the run started; the step positions shown refer to "
            "the run's original source"
        )


def _recorded_plan(spec: Any) -> tuple[str, float] | None:
    """The plan text a durable run's recorded ``spec`` runs and the time it started (epoch
    seconds): what tells whether its `.flow` changed since (common._edited_since); None
    when it records neither."""
    if not isinstance(spec, dict):
        return None
    text, started = spec.get("plan_text"), spec.get("started")
    if not isinstance(text, str) or not isinstance(started, (int, float)):
        return None
    return text, float(started)


def _stoppable(call: Any, as_json: bool, plan: Any = None) -> Any:
    """``call()`` — a durable run's ``run_sync`` / ``resume_run_sync``, on ``flowc run``'s
    signal-handling loop — its engine stopped after; a first Ctrl-C / SIGTERM stops the run
    as it stops a run (`run aborted`, the trace closed, the run recorded aborted), and this
    says so (the steps finished, in ``plan``'s terms when given) and exits 130 (143)."""
    try:
        return call()
    except Interrupted as e:
        if e.result is None:
            raise
        result = cast("api.RunResult", e.result)
        if as_json:
            click.echo(_json_out(result.to_dict()))
        _err(f"interrupted by {e.signal}; {api.stopped_summary(result, plan)}")
        sys.exit(e.exit_code)
    except FlowError as e:
        _fail(e)
    finally:
        api.shutdown_durable()


@click.command()
@_config_option
@_database_option
@click.option(
    "--name",
    default="worker",
    show_default=True,
    help="The worker's name (a restarted worker of the same name resumes its predecessor's work).",
)
@_trace_option
@_otel_options
def worker(
    config: str | None,
    database: str | None,
    name: str,
    trace: str | None,
    otel: str | None,
    no_otel: bool,
) -> None:
    """Work for a fleet of durable runs on one database (PostgreSQL): take map items, runs and
    rate-limited model calls from its queues until stopped (Ctrl-C)."""
    import asyncio

    try:
        url = _durable_url(config, database)
        telemetry = _otel_settings(config, otel, no_otel)
    except FlowError as e:
        _fail(e)
    _err(f"worker {name} on {url.split('?')[0].split('@')[-1]}")
    try:
        _durable_call(lambda: api.work(url, name, trace=trace, telemetry=telemetry))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
