"""`flowc graph`, `flowc report` and `flowc ui`: the graph of a program or plan
(:func:`agentflow.api.graph`), the HTML report of a run (:func:`agentflow.api.report`) and the
web console over durable runs (:mod:`agentflow.ui`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentflow import api
from agentflow.cli import common as _common
from agentflow.cli.common import _err, _fail, _render, _write_or_echo, error_text
from agentflow.errors import FlowError, NotAPlan


@click.command("graph")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--format", "fmt", type=click.Choice(["mermaid", "dot"]), default="mermaid", show_default=True
)
@click.option(
    "--run", "trace", type=click.Path(dir_okay=False), help="Colour the graph by this run's trace."
)
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write it here.")
def graph_cmd(file: str, fmt: str, trace: str | None, out: str | None) -> None:
    """Print the graph of a .flow program or a plan as Mermaid (or Graphviz DOT)."""
    if not Path(file).is_file():
        raise click.UsageError(f"{file}: no such file")
    if trace is not None and not Path(trace).is_file():
        raise click.UsageError(f"--run {trace}: no such file")
    if file.endswith(".jsonl"):  # FLOW and TRACE swapped, or the trace alone
        run = f"`flowc graph FLOW --run {file}`"
        if trace is not None and not trace.endswith(".jsonl"):
            run = f"`flowc graph {trace} --run {file}`"
        raise click.UsageError(
            f"{file} is a trace (JSON Lines), not a .flow or plan file; to colour a graph by it: "
            f"{run}"
        )
    try:
        text = api.graph(file, format=fmt, run=trace)
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except NotAPlan as e:  # a library of types: no plan to draw (programs.md "Libraries")
        _err(error_text(e))
        sys.exit(2)
    except FlowError as e:
        _fail(e)
    _write_or_echo(text, out)


@click.command("report")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False),
    default="report.html",
    show_default=True,
    help="The HTML file to write.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=_common.given_files,
    help="The .flow or plan that ran (default: the file the trace names).",
)
def report_cmd(trace: str, out: str, plan_file: str | None) -> None:
    """Write a self-contained HTML report of a run from its --trace file."""
    if not Path(trace).is_file():
        raise click.UsageError(f"{trace}: no such file")
    try:
        html = api.report(trace, plan=plan_file)
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except FlowError as e:
        _fail(e)
    _write_or_echo(html, out)


@click.command("ui")
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    callback=_common.given_files,
    help="flow.toml to use.",
)
@click.option(
    "--database", metavar="URL", help="SQLite file or PostgreSQL URL (default: [durable] database)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    callback=_common.checked_host("--port"),
    help="Address to listen on (a name or an IP address; the port goes in --port); any but "
    "loopback needs the token printed at start.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8421,
    show_default=True,
    help="Port to listen on (0: any free).",
)
def ui_cmd(config: str | None, database: str | None, host: str, port: int) -> None:
    """Serve a web console over the durable runs database: runs, their graphs, steps and
    conversations, waiting questions to answer, cancel, resume and redrive (Ctrl-C stops it)."""
    try:
        url = api.durable_database(config=config, database=database)
    except FlowError as e:
        _fail(e)

    def ready(address: str) -> None:
        click.echo(f"flowc ui: {address}", err=True)
        if "token=" in address:
            _err("the address carries the console's token: share it only with whom may steer runs")

    try:
        api.serve_ui(url, host=host, port=port, on_ready=ready)
    except OSError as e:
        _err(f"error: cannot listen on {host} port {port}: {_common.listen_failure(e)}")
        sys.exit(1)
    except KeyboardInterrupt:
        pass
