"""`flowc ask` (a question answered by an agent run over the configured tools) and the
commands of ``flowc cache`` (:mod:`agentflow.cli`'s group): ``show`` and ``clear`` of the shape
cache, the observed result shapes of tools the planner reads.
"""

from __future__ import annotations

import json
import sys

import click

from agentflow import api
from agentflow.cli.common import (
    _ask_finish,
    _ask_progress,
    _check_run_options,
    _err,
    _fail,
    _json_out,
    _new_run_options,
    _out,
    _record_option,
    _replay_option,
    _trace_option,
    _workspace_option,
    checked_model,
    given_files,
)
from agentflow.errors import FlowError


@click.command()
@click.argument("question")
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)
@_workspace_option
@_trace_option
@click.option(
    "--max-iterations",
    type=click.IntRange(min=1),
    help="Chat rounds (default: [chat] max_agent_iterations).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@_record_option
@_replay_option
@click.option(
    "--model",
    "model",
    metavar="test[:SEED]",
    callback=checked_model,
    help="Answer with the built-in test model (a short made-up text; no network, no key); "
    "test+tools also calls each offered tool once first.",
)
@click.option(
    "--durable",
    is_flag=True,
    help="Record every model and tool call so the question survives a crash (flowc resume "
    "RUN); prints the run id.",
)
@_new_run_options
def ask(
    question: str,
    config: str | None,
    workspace: str | None,
    trace: str | None,
    max_iterations: int | None,
    as_json: bool,
    record: str | None,
    replay: str | None,
    durable: bool,
    run_id: str | None,
    database: str | None,
    model: str | None,
) -> None:
    """Answer QUESTION with the chat model and the tool catalog (tools, plan__* plans,
    plan_and_execute). The answer goes to stdout; progress and solver reports, dimmed, to stderr."""
    api.enable_watchdog()
    click.get_current_context().call_on_close(lambda: api.enable_watchdog(False))
    durable = durable or run_id is not None or database is not None
    if durable and (record or replay):
        raise click.UsageError(
            "--durable cannot be used with --record or --replay: a durable question's model "
            "calls are recorded on the durable engine (flowc resume RUN replays them)"
        )
    if model is not None and (record or replay):
        raise click.UsageError("--model cannot be used with --record or --replay")
    _check_run_options(workspace, record, replay, trace)

    try:
        result = api.ask_sync(
            question,
            config=config,
            workspace=workspace,
            trace=trace,
            record=record,
            replay=replay,
            max_iterations=max_iterations,
            on_progress=_ask_progress,
            durable=durable,
            run_id=run_id,
            database=database,
            on_start=(lambda rid: _err(f"run id: {rid}")) if durable else None,
            model=model,
        )
    except FlowError as e:
        _fail(e)
    _ask_finish(result, as_json)


def _cache_env_note() -> None:
    """An empty ``AGENTFLOW_CACHE_DIR=`` counts as unset; say so (docs/decisions.md)."""
    note = api.shape_cache_note()
    if note is not None:
        _err(f"note: {note}")


@click.command("show")
@click.argument("tool", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
def cache_show(tool: str | None, as_json: bool) -> None:
    """Print the cached shape of every tool (or of TOOL)."""
    import sqlite3

    store = api.shape_cache()
    _cache_env_note()
    try:
        entries = store.all([tool] if tool else None)
    except (sqlite3.Error, OSError) as e:
        _err(f"error: {store.path}: {e}")
        sys.exit(1)
    if as_json:
        click.echo(_json_out([e.to_dict() for e in entries]))
        return
    if not entries:
        _err(f"{store.path}: no shapes recorded" + (f" for {tool}" if tool else ""))
        if tool:
            sys.exit(1)
        return
    for entry in entries:
        calls = f"{entry.calls} call{'s' if entry.calls != 1 else ''}"
        _out(f"{entry.tool}  ({calls})")
        _out("  " + json.dumps(entry.shape, sort_keys=True, ensure_ascii=False))


@click.command("clear")
@click.argument("tool", required=False)
def cache_clear(tool: str | None) -> None:
    """Forget every cached shape (or only TOOL's)."""
    import sqlite3

    store = api.shape_cache()
    _cache_env_note()
    try:
        n = store.clear(tool)
    except (sqlite3.Error, OSError) as e:
        _err(f"error: {store.path}: {e}")
        sys.exit(1)
    _err(f"cleared {n} shape(s) from {store.path}")
