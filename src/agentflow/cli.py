"""`flowc`: a thin click layer over :mod:`agentflow.api`.

Exit codes: 0 success; 1 the input has errors (diagnostics, a failed run, a bad plan or
config); 2 usage errors (unknown option, missing file).  No traceback reaches the user for a
mistake in their `.flow`, plan, configuration or input.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from agentflow import api
from agentflow.core.spans import Span
from agentflow.errors import ErrorInfo, FlowError, Interrupted, PlanLoadError


def _err(message: str) -> None:
    click.echo(message, err=True)


def _fail(e: FlowError) -> NoReturn:
    """Print a user error and exit 1: the diagnostics of a PlanLoadError or CompileError as
    ``flowc check`` renders them, anything else as ``error: …``."""
    if isinstance(e, PlanLoadError | api.CompileError):
        _err(_render(e.diagnostics, _with_sources(e.diagnostics, e.sources), "text"))
    else:
        _err(f"error: {e}")
    sys.exit(1)


def _with_sources(diags: list, sources: dict[str, str]) -> dict[str, str]:
    """``sources`` plus the text of every other file the diagnostics name that can be read (for
    the source excerpts; a file that cannot be read is shown without)."""
    out = dict(sources)
    for d in diags:
        file = d.span.file
        if file not in out and d.span.line > 0:
            try:
                out[file] = Path(file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError):
                out[file] = ""
    return out


# Options shared by `run` and `ask`.
_workspace_option = click.option(
    "--workspace", type=click.Path(file_okay=False), help="Root for file tools (default: cwd)."
)
_trace_option = click.option(
    "--trace", type=click.Path(dir_okay=False), help="Write every event as JSON Lines here."
)
_record_option = click.option(
    "--record", type=click.Path(dir_okay=False), help="Record model exchanges here."
)
_replay_option = click.option(
    "--replay", type=click.Path(dir_okay=False), help="Answer model requests from this cassette."
)


def _check_run_options(
    workspace: str | None, record: str | None, replay: str | None, trace: str | None = None
) -> None:
    """Raise click.UsageError (exit 2) for ``--record`` with ``--replay``, a missing ``--replay``
    cassette, a missing ``--workspace`` directory, or a ``--trace`` file whose directory does not
    exist (checked before the run starts)."""
    if record and replay:
        raise click.UsageError("--record and --replay cannot be used together")
    if replay is not None and not Path(replay).is_file():
        raise click.UsageError(f"--replay {replay}: no such file")
    if workspace is not None and not Path(workspace).is_dir():
        raise click.UsageError(f"--workspace {workspace}: no such directory")
    if trace is not None:
        if not Path(trace).parent.is_dir():
            raise click.UsageError(f"--trace {trace}: no such directory {Path(trace).parent}")
        if Path(trace).is_dir():
            raise click.UsageError(f"--trace {trace}: is a directory")


def _flow_files(paths: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(path.rglob("*.flow")))
        elif path.exists():
            out.append(path)
        else:
            raise click.UsageError(f"{p}: no such file or directory")
    return out


def _render(diags: list, sources: dict[str, str], fmt: str) -> str:
    from agentflow.compiler import render

    if fmt == "json":
        return render.render_json(diags)
    if fmt == "sarif":
        return render.render_sarif(diags)
    return render.render_text(diags, sources, color=sys.stderr.isatty())


class _FlowGroup(click.Group):
    """Click group whose commands end with the shell's exit code for a signal (130 for Ctrl-C,
    143 for SIGTERM) when a run is interrupted, instead of click's generic "Aborted!" (1).
    A Ctrl-C before the run's own handlers are in place (loading, reading ``--input``) is a
    plain ``KeyboardInterrupt``: it ends with 130 too."""

    def invoke(self, ctx: click.Context) -> Any:
        with _redacted_stderr():
            try:
                return super().invoke(ctx)
            except Interrupted as e:
                _err(f"interrupted by {e.signal}")
                ctx.exit(e.exit_code)
            except KeyboardInterrupt:
                _err("interrupted by SIGINT")
                ctx.exit(130)


@contextlib.contextmanager
def _redacted_stderr() -> Any:
    """Everything written to stderr while a command runs passes the redaction layer
    (:mod:`agentflow.core.redaction`), which knows the credential-like environment variables from
    the start and each configured secret once the configuration is loaded. stdout carries
    programs (compile, fmt) and is left alone; the results of ``run`` and ``ask`` are redacted
    where they are printed."""
    from agentflow.core.redaction import RedactingStream, register_environment

    register_environment()
    saved = sys.stderr
    sys.stderr = RedactingStream(saved)
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        sys.stderr = saved


@click.group(cls=_FlowGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentflow", prog_name="flowc")
def main() -> None:
    """flowc — check, compile and run typed agent workflows (.flow) and plans."""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    help="Output format of the diagnostics.",
)
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 on warnings too.")
def check(paths: tuple[str, ...], fmt: str, warnings_as_errors: bool) -> None:
    """Type-check .flow files (directories are searched for *.flow)."""
    from agentflow.compiler.api import check_source, read_source

    files = _flow_files(paths)
    diags: list = []
    sources: dict[str, str] = {}
    for f in files:
        try:
            text = read_source(f)
        except OSError as e:
            _err(f"{f}: cannot read: {e.strerror or e}")
            sys.exit(2)
        sources[str(f)] = text
        try:
            diags.extend(check_source(text, str(f)).diagnostics)
        except Exception as e:  # pragma: no cover - a checker bug: report it, no traceback
            _err(f"{f}: internal error in the checker ({type(e).__name__}: {e}); please report it")
            sys.exit(1)
    if fmt == "text":  # printed on stdout: colour when stdout is a terminal
        from agentflow.compiler.render import render_text

        out = render_text(diags, sources, color=sys.stdout.isatty())
    else:
        out = _render(diags, sources, fmt)
    if fmt == "text":
        if out:
            click.echo(out, err=False, nl=not out.endswith("\n"))
            sys.stdout.flush()  # the report before the summary line, also when both are piped
        errors = sum(1 for d in diags if d.severity == "error")
        warnings = len(diags) - errors
        if diags:
            _err(f"{errors} error(s), {warnings} warning(s) in {len(files)} file(s)")
        else:
            _err(f"{len(files)} file(s) checked: no problems")
    else:
        click.echo(out)
    failing = any(d.severity == "error" for d in diags) or (warnings_as_errors and diags)
    sys.exit(1 if failing else 0)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write the plan here.")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml")
def compile(file: str, out: str | None, fmt: str) -> None:
    """Compile a .flow file to a plan (YAML by default) on stdout or into -o FILE."""
    compiled = _compile(file)
    text = compiled.to_yaml() if fmt == "yaml" else compiled.to_json()
    if out:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as e:
            _err(f"error: cannot write {out}: {e.strerror or e}")
            sys.exit(1)
        _err(f"wrote {out}")
    else:
        click.echo(text, nl=False)


def _compile(file: str) -> api.CompiledFlow:
    if not Path(file).is_file():
        raise click.UsageError(f"{file}: no such file")
    try:
        return api.compile_flow(file)
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except FlowError as e:
        _fail(e)
    except OSError as e:
        _err(f"error: {file}: cannot read: {e.strerror or e}")
        sys.exit(1)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("type_name", required=False)
@click.option(
    "--input",
    "show_input",
    is_flag=True,
    help="Print the schema the run's input is validated against (its `input` type).",
)
def schema(file: str, type_name: str | None, show_input: bool) -> None:
    """Print the JSON Schema contract of TYPE_NAME declared in FILE, or with --input the schema
    of FILE's input (a schema without constraints when FILE declares no `input`: any JSON
    value is accepted)."""
    from agentflow.compiler import types as T
    from agentflow.compiler.contracts import ContractError, contract_for

    if (type_name is None) == (not show_input):
        raise click.UsageError("give either a TYPE_NAME or --input (not both)")
    if not Path(file).is_file():
        raise click.UsageError(f"{file}: no such file")
    try:
        result = api.check(file)
    except OSError as e:
        _err(f"error: {file}: cannot read: {e.strerror or e}")
        sys.exit(1)
    if not result.ok:
        from agentflow.compiler.api import read_source

        _err(_render(result.errors, {file: read_source(file)}, "text"))
        sys.exit(1)
    if show_input:
        target: T.Type = result.input_type
    elif type_name not in result.env.names():
        from agentflow.core.diagnostics import did_you_mean

        declared = sorted(result.env.names())
        hint = did_you_mean(type_name, declared)
        if hint is None:
            lower = {n.lower(): n for n in declared}
            if type_name.lower() in lower:
                hint = f"did you mean `{lower[type_name.lower()]}`?"
        if hint is None:
            # extern types have no schema: not worth listing
            usable = [n for n in declared if n not in result.env.externs]
            listed = ", ".join(f"`{n}`" for n in usable)
            hint = f"declared types: {listed}" if usable else "it declares no types"
        _err(f"{file}: no type `{type_name}`; {hint}")
        sys.exit(1)
    else:
        target = T.NamedRef(type_name)
    try:
        data = contract_for(target, result.env)
    except ContractError as e:
        _err(f"{file}: {e}")
        sys.exit(1)
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


@main.command()
@click.argument("target", type=click.Path(dir_okay=False))
@click.option("--input", "input_", help="Input as JSON, or @file.json.")
@_workspace_option
@_trace_option
@click.option("--config", type=click.Path(dir_okay=False), help="flow.toml to use.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole RunResult as JSON.")
@_record_option
@_replay_option
@click.option(
    "--otel",
    is_flag=False,
    flag_value="on",
    default=None,
    metavar="[ENDPOINT]",
    callback=lambda ctx, param, value: _otel_endpoint(value),
    help="Export the run as OpenTelemetry spans over OTLP/HTTP (default endpoint: [telemetry] "
    "in flow.toml, else OTEL_EXPORTER_OTLP_ENDPOINT, else http://127.0.0.1:4318).",
)
@click.option("--no-otel", is_flag=True, help="Do not export, even when flow.toml says so.")
@click.option(
    "--model",
    "model",
    metavar="test[:SEED]",
    help="Answer every agent with the built-in test model (values generated from each contract, "
    "no network, no key); test+tools also calls each offered tool once first.",
)
@click.option(
    "--durable",
    is_flag=True,
    help="Record every step so the run survives a crash (flowc resume RUN); prints the run id.",
)
@click.option(
    "--reuse",
    metavar="RUN",
    help="A durable run whose steps are taken where their path and rendered input are "
    "unchanged (implies --durable).",
)
@click.option("--run-id", metavar="ID", help="The durable run's id (default: a new one).")
@click.option(
    "--fleet",
    is_flag=True,
    help="Spread map items and rate-limited model calls over `flowc worker` processes.",
)
def run(
    target: str,
    input_: str | None,
    workspace: str | None,
    trace: str | None,
    config: str | None,
    as_json: bool,
    record: str | None,
    replay: str | None,
    otel: str | None,
    no_otel: bool,
    model: str | None,
    durable: bool,
    reuse: str | None,
    run_id: str | None,
    fleet: bool,
) -> None:
    """Run a .flow file or a plan file; the output goes to stdout as JSON."""
    from agentflow.runtime.events import ConsoleSink
    from agentflow.runtime.interrupt import enable_watchdog

    enable_watchdog()  # a run frozen by a tool holding the GIL is still ended (runtime/watchdog.py)
    click.get_current_context().call_on_close(lambda: enable_watchdog(False))

    durable = durable or reuse is not None or run_id is not None or fleet
    telemetry = _telemetry_option(otel, no_otel)
    if not Path(target).is_file():
        raise click.UsageError(f"{target}: no such file")
    _check_run_options(workspace, record, replay, trace)
    if model is not None and (record or replay):
        raise click.UsageError("--model cannot be used with --record or --replay")
    try:
        data = api.parse_input(input_)
        if target.endswith(".flow"):
            plan = _load_flow(target)
        else:
            plan = api.load(target)
        from agentflow.runtime.hooks import Hooks, default_interlocutor

        console = ConsoleSink()
        # a person at the terminal answers `ask` steps; otherwise each ask's when_unanswered
        hooks = Hooks(interlocutor=default_interlocutor(pause=console.paused))
        interrupted = None
        sinks: list[Any] = [console]
        durable_options: dict[str, Any] = {}
        if durable:
            started: list[str] = []
            durable_options = dict(
                durable=True,
                run_id=run_id,
                reuse=reuse,
                fleet=fleet,
                on_start=lambda rid: (started.append(rid), _err(f"run id: {rid}")),
            )
            sinks.append(_question_notice(started))
        try:
            result = api.run_sync(
                target if durable else plan,
                data,
                config=config,
                workspace=workspace,
                trace=trace,
                sinks=sinks,
                hooks=hooks,
                record=record,
                replay=replay,
                telemetry=telemetry,
                model=model,
                **durable_options,
            )
        except Interrupted as e:  # Ctrl-C / SIGTERM: the run wound down; show what it got
            if e.result is None:
                raise
            result, interrupted = e.result, e
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except FlowError as e:
        _err(f"error: {e}")
        sys.exit(1)
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.status in ("ok", "exited"):
        click.echo(_json_out(result.output))
    if interrupted is not None:
        done = ", ".join(result.results) or "none"
        _err(f"interrupted by {interrupted.signal}; steps finished: {done}")
        sys.exit(interrupted.exit_code)
    if result.status not in ("ok", "exited"):
        if result.error is not None:
            _show_run_error(result.error, target)
        else:  # pragma: no cover - a failed run always says why
            _err(f"error: the run ended with status {result.status}")
        sys.exit(1)


def _question_notice(run_ids: list[str]) -> Any:
    """A sink that says, for each question a durable run asks, how to answer it."""
    from agentflow.runtime.events import CallbackSink

    def notice(event: Any) -> None:
        if event.data.get("tool_name") == "ask" and run_ids:
            question = (event.data.get("input") or {}).get("question", "")
            _err(f"? [{event.path}] {question}")
            _err(f"  answer with: flowc answer {run_ids[0]} {event.path} VALUE")

    sink = CallbackSink(notice)
    sink.kinds = frozenset({"step_started"})  # type: ignore[attr-defined]
    return sink


def _telemetry_option(otel: str | None, no_otel: bool) -> bool | str | None:
    """``--otel [ENDPOINT]`` / ``--no-otel`` as :func:`agentflow.api.run`'s ``telemetry``:
    None (as flow.toml says), False, True or an endpoint URL. Raises click.UsageError for a
    value that is not an http(s) URL (e.g. the file, when ``--otel`` came before it)."""
    if no_otel:
        if otel is not None:
            raise click.UsageError("--otel and --no-otel cannot be used together")
        return False
    if otel is None:
        return None
    return True if otel == "on" else otel


def _otel_endpoint(value: str | None) -> str | None:
    """The ``--otel`` value when it is ``on`` or an http(s) URL, else click.UsageError (checked
    while parsing, so ``flowc run --otel FILE`` says why rather than "missing argument")."""
    if value is None or value == "on" or value.startswith(("http://", "https://")):
        return value
    raise click.UsageError(
        f"--otel {value}: the endpoint must be an http:// or https:// URL (for the default "
        "endpoint put --otel after the file, or write --otel=on)"
    )


def _json_out(value: Any) -> str:
    """``value`` as indented JSON that is always valid: a NaN or infinity (which JSON cannot
    hold; e.g. from a tool's reply) is printed as ``null`` with a warning on stderr. Configured
    secrets are redacted from every string first."""
    from agentflow.core.redaction import redact_data

    value = redact_data(value)
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:
        _err("warning: the output held NaN or an infinity, which JSON cannot hold; printed as null")
        return json.dumps(_finite_only(value), indent=2, ensure_ascii=False, allow_nan=False)


def _finite_only(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_only(v) for v in value]
    return value


def _load_flow(target: str) -> Any:
    from agentflow.ir.loader import load_plan_data

    compiled = api.compile_flow(target)
    for d in compiled.check.diagnostics:
        if d.severity == "warning":
            pass  # warnings do not block a run; `flowc check` shows them
    return load_plan_data(compiled.plan, target)


def _show_run_error(error: ErrorInfo | dict, target: str) -> None:
    error = ErrorInfo.from_dict(error) or ErrorInfo("failed", "the run failed")
    label = error.get("label")  # the failed step in the .flow's terms (runtime/where.py)
    if label and error.step_path:
        where = f" in {label} (step {error.step_path})"
    else:
        where = f" at step {error.step_path}" if error.step_path else ""
    _err(f"error[{error.code}]{where}: {error.message}")
    loc = Span.parse(error.source)
    if loc is not None and target.endswith(".flow"):
        try:
            text = Path(target).read_text(encoding="utf-8").splitlines()[loc.line - 1]
            _err(f"  --> {target}:{loc.line}:{loc.column}")
            _err(f"   | {text}")
            _err("   | " + " " * (loc.column - 1) + "^")
        except (ValueError, IndexError, OSError):
            pass


@main.command("graph")
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
    try:
        text = api.graph(file, format=fmt, run=trace)
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except FlowError as e:
        _fail(e)
    _write_or_echo(text, out)


@main.command("test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "pattern", help="Run only the tests whose name contains (or matches) this.")
@click.option("-x", "--exitfirst", "fail_fast", is_flag=True, help="Stop at the first failure.")
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report here."
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 256),
    default=None,
    help="Tests run at once (default: the number of CPU cores).",
)
@click.option("--no-cache", is_flag=True, help="Run every test, even those cached as passed.")
@click.option(
    "--explore",
    "explore_runs",
    type=click.IntRange(1, 10_000),
    help="Instead: run FILE N times with generated answers and report the branches exercised.",
)
def test_cmd(
    paths: tuple[str, ...],
    pattern: str | None,
    fail_fast: bool,
    junit: str | None,
    jobs: int | None,
    no_cache: bool,
    explore_runs: int | None,
) -> None:
    """Run the `test` blocks of .flow files (default: the current directory) with no network:
    stubbed agents and tools answer their stubs, other agents the test model
    (docs/reference/testing.md). Exit code 0 when every test passed, 1 otherwise. Tests run
    -j at once; a test that passed is not run again while its file, its directory and agentflow
    are unchanged (reported "PASSED (cached)"; the cache is .flowc-cache/, --no-cache runs all).

    With --explore N FILE: run FILE N times, every agent and tool answering generated values
    (test model seeds 0..N-1), and report which `if` branches, `require`/`verify` outcomes and
    `map` paths each run took, and which answers made a run fail (exit code 0; 1 when FILE does
    not check)."""
    if explore_runs is not None:
        _explore(paths, explore_runs)
        return
    files = _flow_files(paths or (".",))

    def show(outcome: Any) -> None:
        mark = (
            click.style("PASSED", fg="green") if outcome.passed else click.style("FAILED", fg="red")
        )
        if outcome.cached:
            mark += " (cached)"
        where = f"{outcome.file}:{outcome.line}" if outcome.line else outcome.file
        click.echo(f"{where} {outcome.name} {mark}")
        for failure in outcome.failures:
            click.echo("  " + failure.replace("\n", "\n  "))

    from os import cpu_count

    jobs = jobs or cpu_count() or 1
    cache = None if no_cache else ".flowc-cache"
    report = api.run_tests(list(files), pattern, fail_fast, on_outcome=show, jobs=jobs, cache=cache)
    if junit is not None:
        try:
            Path(junit).write_text(report.to_junit(), encoding="utf-8")
        except OSError as e:
            _err(f"{junit}: cannot write the JUnit report: {e.strerror or e}")
            sys.exit(1)
    if not report.outcomes:
        click.echo("no tests found")
        sys.exit(1 if pattern else 0)
    summary = report.summary()
    click.echo(click.style(summary, fg="green" if report.ok else "red"))
    sys.exit(0 if report.ok else 1)


def _explore(paths: tuple[str, ...], runs: int) -> None:
    from agentflow.flowtest import explore

    if len(paths) != 1 or not Path(paths[0]).is_file():
        raise click.UsageError("--explore N takes exactly one .flow FILE")
    report = explore(paths[0], runs)
    if report.error is not None:
        _err(report.error)
        sys.exit(1)
    click.echo(f"explored {report.file}: {report.runs} runs (test model seeds 0..{runs - 1})")
    width = max((len(s.source) for s in report.sites), default=0)
    for site in report.sites:
        counts = "  ".join(f"{o}: {n}" for o, n in site.counts.items())
        click.echo(f"  {site.source.ljust(width)}  {site.kind:<8} {counts}")
    missed = [f"{s.source} {s.kind} {o}" for s in report.sites for o in s.missed]
    if missed:
        click.echo("not exercised:")
        for m in missed:
            click.echo(f"  {m}")
    else:
        click.echo("every branch and check outcome was exercised")
    click.echo(f"failing runs: {len(report.failures)}")
    groups: dict[tuple[str, str | None], list[Any]] = {}
    for f in report.failures:
        groups.setdefault((f.code, f.source), []).append(f)
    for (code, source), fails in groups.items():
        where = f" at {source}" if source else ""
        seeds = ", ".join(str(f.seed) for f in fails[:10]) + (", …" if len(fails) > 10 else "")
        click.echo(
            f"  {len(fails)} failed with {code}{where} (seeds {seeds}); seed {fails[0].seed}:"
        )
        click.echo(f"    {fails[0].message}")
        for who, answer in fails[0].answers:
            shown = answer if len(answer) <= 200 else answer[:199] + "…"
            click.echo(f"    {who} answered {shown}")


@main.command("report")
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


def _write_or_echo(text: str, out: str | None) -> None:
    """Write ``text`` to ``out`` (saying so on stderr), or print it when ``out`` is None/``-``."""
    if out is None or out == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as e:
        _err(f"error: cannot write {out}: {e.strerror or e}")
        sys.exit(1)
    _err(f"wrote {out}")


@main.group()
def plan() -> None:
    """Work with plan files (validate, fmt)."""


@plan.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--config", type=click.Path(dir_okay=False), help="flow.toml for tool resolution.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    help="Output format of the diagnostics.",
)
def plan_validate(file: str, config: str | None, fmt: str) -> None:
    """Validate a plan file: YAML, structure, templates, and tool names against the catalog,
    every problem in one run (exit 1 when there is one)."""
    if not Path(file).is_file():
        raise click.UsageError(f"{file}: no such file")
    try:
        found = api.check_plan(file, config=config)
    except FlowError as e:
        _fail(e)
    diags = found.diagnostics
    if fmt != "text":
        click.echo(_render(diags, found.sources, fmt))
    elif diags:  # like `flowc check`: the report on stdout, the count on stderr
        from agentflow.compiler.render import render_text, summary

        out = render_text(diags, found.sources, color=sys.stdout.isatty())
        click.echo(out, nl=not out.endswith("\n"))
        sys.stdout.flush()
        _err(f"{file}: {summary(diags)}")
    else:
        click.echo(f"{file}: ok")
    sys.exit(0 if found.ok else 1)


@main.command("cost")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def cost_cmd(file: str, as_json: bool) -> None:
    """The most model calls a run of FILE (.flow or plan) can make, per role.

    Figures are in the sizes of the run's input (map lengths, ``max_iterations`` …), read from
    the compiled plan before anything runs; docs/models.md "flowc cost".
    """
    from agentflow.ir.cost import worst_case

    if not Path(file).is_file():
        raise click.UsageError(f"{file}: no such file")
    if file.endswith(".flow"):
        compiled = _compile(file)
        from agentflow.ir.loader import load_plan_data

        try:
            plan = load_plan_data(compiled.plan, file)
        except FlowError as e:
            _fail(e)
    else:
        try:
            plan = api.load(file)
        except FlowError as e:
            _fail(e)
    figures = worst_case(plan).to_dict()
    if as_json:
        click.echo(json.dumps({"plan": plan.name, **figures}, ensure_ascii=False, indent=2))
        return
    click.echo(f"most model calls of one run of '{plan.name}' (inferences per role):")
    width = max([len(r) for r in figures["roles"]] + [5])
    for role, text in figures["roles"].items():
        click.echo(f"  {role:<{width}}  {text}")
    click.echo(f"  {'total':<{width}}  {figures['total']}")
    for why in figures["unbounded"]:
        click.echo(f"  not counted: {why}")
    for budget in figures["budgets"]:
        click.echo(f"  budget {budget}")


@main.command("tools")
@click.option("--config", type=click.Path(dir_okay=False), help="flow.toml to use.")
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON (full schemas).")
@click.option(
    "--no-connect", is_flag=True, help="Do not start MCP servers (list each as SERVER__*)."
)
@click.option(
    "--extern",
    "as_extern",
    is_flag=True,
    help="Print an `extern tool` declaration for each non-builtin tool, to paste into a .flow.",
)
def tools_cmd(config: str | None, as_json: bool, no_connect: bool, as_extern: bool) -> None:
    """List the tool catalog: name, source, description and input schema summary of every tool
    (builtin, user__ Python, plan__ and MCP server__ tools) the configuration provides."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.interrupt import run as run_loop
    from agentflow.runtime.tools.build import list_catalog

    try:
        cfg = load_config(config)
        catalog = api.build_catalog(cfg)
        rows, errors = run_loop(list_catalog(catalog, connect=not no_connect))
    except FlowError as e:
        _err(f"error: {e}")
        sys.exit(1)
    if as_extern:
        from agentflow.compiler.contracts import extern_declaration

        for r in rows:
            if r["source"] == "builtin" or r.get("kind", "tool") != "tool":
                continue  # builtins are declared by the prelude; servers, resources, prompts
            try:
                click.echo(
                    extern_declaration(
                        r["name"], r["input_schema"], r["description"], r.get("output_schema")
                    )
                )
            except ValueError as e:
                click.echo(f"// {r['name']}: not declarable ({e})")
    elif as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        width = max((len(r["name"]) for r in rows), default=10)
        swidth = max((len(r["source"]) for r in rows), default=6)
        for r in rows:
            desc = (r["description"] or "").strip().splitlines()
            first = desc[0] if desc else ""
            first = first if len(first) <= 72 else first[:71] + "…"
            click.echo(f"{r['name']:<{width}}  {r['source']:<{swidth}}  {first}")
            if r["summary"]:
                click.echo(f"{'':<{width}}  {'':<{swidth}}  ({r['summary']})")
    for message in errors:
        _err(f"error: {message}")
    sys.exit(1 if errors else 0)


@plan.command("fmt")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the file is not canonical.")
def plan_fmt(file: str, check_only: bool) -> None:
    """Rewrite a plan file in canonical form (snake_case field names, fixed order)."""
    from agentflow.ir.dump import fmt_plan_text
    from agentflow.ir.loader import read_plan_text

    path = Path(file)
    if not path.is_file():
        raise click.UsageError(f"{file}: no such file")
    if path.suffix == ".flow":
        raise click.UsageError(f"{file} is a .flow program, not a plan: use `flowc fmt {file}`")
    try:
        text = read_plan_text(path)
        new = fmt_plan_text(text, file)
    except PlanLoadError as e:
        _fail(e)
    if check_only:
        if new != text:
            _err(f"{file}: would reformat")
            sys.exit(1)
        return
    if new != text:
        path.write_text(new, encoding="utf-8")
        _err(f"formatted {file}")


@main.command("fmt")
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if a file is not canonical.")
def fmt_cmd(paths: tuple[str, ...], check_only: bool) -> None:
    """Rewrite .flow files in canonical layout (directories are searched for *.flow)."""
    from agentflow.compiler.fmt import FormatError, format_file

    failed = changed = 0
    files = _flow_files(paths)
    for f in files:
        try:
            if format_file(f, check=check_only):
                changed += 1
                _err(f"{f}: would reformat" if check_only else f"formatted {f}")
        except FormatError as e:
            failed += 1
            _err(f"error: {e.message}")
        except OSError as e:
            failed += 1
            _err(f"{f}: cannot read: {e.strerror or e}")
    if failed or (check_only and changed):
        sys.exit(1)
    if not check_only and not changed:
        _err(f"{len(files)} file(s) already formatted")


@main.command("serve")
@click.argument("directory", required=False, type=click.Path(file_okay=False), default=".")
@click.option("--mcp", "as_mcp", is_flag=True, help="Serve as an MCP server (the only mode).")
@click.option("--http", "port", type=int, default=None, help="Streamable HTTP on this port.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option("--config", type=click.Path(dir_okay=False), help="flow.toml to use.")
@click.option("--workspace", type=click.Path(file_okay=False), help="Root for file tools.")
@click.option("--durable", is_flag=True, help="Each call a durable run (survives a restart).")
@click.option("--database", help="Durable runs database (default: [durable] database).")
def serve_cmd(
    directory: str,
    as_mcp: bool,
    port: int | None,
    host: str,
    config: str | None,
    workspace: str | None,
    durable: bool,
    database: str | None,
) -> None:
    """Serve every .flow program and plan file in DIRECTORY as an MCP tool (stdio by default)."""
    if not as_mcp:
        raise click.UsageError("say how to serve: `flowc serve --mcp [DIR]`")
    path = Path(directory)
    if not path.is_dir():
        raise click.UsageError(f"{directory}: no such directory")
    from agentflow.serve import serve

    try:
        cfg = None
        if config is not None:
            from agentflow.runtime.config import load_config

            cfg = load_config(config)
        serve(
            path,
            http=port,
            host=host,
            config=cfg,
            workspace=Path(workspace) if workspace else None,
            durable=durable or database is not None,
            database=database,
        )
    except FlowError as e:
        _err(f"error: {e}")
        sys.exit(1)


@main.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk LSP on stdin/stdout (the default).")
def lsp_cmd(stdio: bool) -> None:
    """Run the .flow language server (LSP over stdio) for editors."""
    from agentflow.lsp.server import serve_stdio

    serve_stdio()


# ---------------------------------------------------------------------------------- ask, cache


def _dim(text: str) -> None:
    click.echo(click.style(text, dim=True), err=True)


@main.command()
@click.argument("question")
@click.option("--config", type=click.Path(dir_okay=False), help="flow.toml to use.")
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
def ask(
    question: str,
    config: str | None,
    workspace: str | None,
    trace: str | None,
    max_iterations: int | None,
    as_json: bool,
    record: str | None,
    replay: str | None,
) -> None:
    """Answer QUESTION with the chat model and the tool catalog (tools, plan__* plans,
    plan_and_execute). The answer goes to stdout; progress and solver reports, dimmed, to stderr."""
    from agentflow.runtime.chat import ask_with_config
    from agentflow.runtime.interrupt import enable_watchdog
    from agentflow.runtime.interrupt import run as run_loop

    enable_watchdog()
    click.get_current_context().call_on_close(lambda: enable_watchdog(False))
    _check_run_options(workspace, record, replay, trace)

    def progress(kind: str, text: str) -> None:
        mark = {"tool": "→", "tool_done": "✓", "tool_error": "✗", "replan": "↻"}.get(kind, "·")
        if kind == "report":
            _dim(text)
        else:
            _dim(f"{mark} {text}")

    try:
        result = run_loop(
            ask_with_config(
                question,
                config=config,
                workspace=workspace,
                trace=trace,
                record=record,
                replay=replay,
                max_iterations=max_iterations,
                on_progress=progress,
                load_plan=api.load,
            )
        )
    except FlowError as e:
        _fail(e)
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.answer is not None:
        from agentflow.core.redaction import redact

        click.echo(redact(result.answer))
    if not result.ok:
        err = result.error
        _err(f"error[{err.code}]: {err.message}" if err else f"error: {result.status}")
        sys.exit(1)


def _cache_env_note() -> None:
    """An empty ``AGENTFLOW_CACHE_DIR=`` counts as unset; say so (docs/decisions.md)."""
    import os

    from agentflow.runtime.shape_cache import CACHE_ENV

    if os.environ.get(CACHE_ENV) == "":
        _err(f"note: {CACHE_ENV} is empty, so it is ignored (the default cache directory is used)")


@main.group()
def cache() -> None:
    """Show or clear the shape cache (observed result shapes of tools, read by the planner)."""


@cache.command("show")
@click.argument("tool", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
def cache_show(tool: str | None, as_json: bool) -> None:
    """Print the cached shape of every tool (or of TOOL)."""
    import sqlite3

    from agentflow.runtime.shape_cache import ShapeCache

    store = ShapeCache()
    _cache_env_note()
    try:
        entries = store.all([tool] if tool else None)
    except (sqlite3.Error, OSError) as e:
        _err(f"error: {store.path}: {e}")
        sys.exit(1)
    if as_json:
        click.echo(json.dumps([e.to_dict() for e in entries], indent=2, ensure_ascii=False))
        return
    if not entries:
        _err(f"{store.path}: no shapes recorded" + (f" for {tool}" if tool else ""))
        if tool:
            sys.exit(1)
        return
    for e in entries:
        calls = f"{e.calls} call{'s' if e.calls != 1 else ''}"
        click.echo(f"{e.tool}  ({calls})")
        click.echo("  " + json.dumps(e.shape, sort_keys=True, ensure_ascii=False))


@cache.command("clear")
@click.argument("tool", required=False)
def cache_clear(tool: str | None) -> None:
    """Forget every cached shape (or only TOOL's)."""
    import sqlite3

    from agentflow.runtime.shape_cache import ShapeCache

    store = ShapeCache()
    _cache_env_note()
    try:
        n = store.clear(tool)
    except (sqlite3.Error, OSError) as e:
        _err(f"error: {store.path}: {e}")
        sys.exit(1)
    _err(f"cleared {n} shape(s) from {store.path}")


# ---------------------------------------------------------------------------------------------
# Durable runs (docs/durable.md)

_config_option = click.option("--config", type=click.Path(dir_okay=False), help="flow.toml to use.")
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
    from agentflow.runtime.config import load_config
    from agentflow.runtime.telemetry import settings_for

    return settings_for(load_config(config), _telemetry_option(otel, no_otel))


def _durable_url(config: str | None, database: str | None) -> str:
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.runs import database_for

    return database_for(load_config(config), database)


def _durable_call(coro_fn: Any) -> Any:
    """Run a coroutine of the durable API with the engine shut down afterwards; a user error
    is printed (exit 1), never a traceback."""
    import asyncio

    from agentflow.runtime.durable.dbos_engine import shutdown

    try:
        return asyncio.run(coro_fn())
    except FlowError as e:
        _fail(e)
    finally:
        shutdown()


def _when(epoch: float | None) -> str:
    import time

    if not epoch:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


@main.command()
@click.argument("run_id", metavar="RUN")
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
    try:
        url = _durable_url(config, database)
        telemetry = _otel_settings(config, otel, no_otel)
    except FlowError as e:
        _fail(e)
    from agentflow.runtime.durable.runs import resume as resume_run
    from agentflow.runtime.events import ConsoleSink, JsonlSink

    sinks: list[Any] = [ConsoleSink()]
    if trace is not None:
        sinks.append(JsonlSink(trace, append=True))
    result = _durable_call(lambda: resume_run(url, run_id, sinks=sinks, telemetry=telemetry))
    result.run_id = run_id
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.status in ("ok", "exited"):
        click.echo(_json_out(result.output))
    if result.status not in ("ok", "exited"):
        _show_run_error(
            result.error or ErrorInfo("failed", f"the run ended with status {result.status}"), ""
        )
        sys.exit(1)


@main.group(invoke_without_command=True)
@_config_option
@_database_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.pass_context
def runs(ctx: click.Context, config: str | None, database: str | None, as_json: bool) -> None:
    """List durable runs (newest first) with their status and pending questions."""
    ctx.obj = {"config": config, "database": database}
    if ctx.invoked_subcommand is not None:
        return
    try:
        url = _durable_url(config, database)
    except FlowError as e:
        _fail(e)
    from agentflow.runtime.durable.runs import list_runs

    found = _durable_call(lambda: list_runs(url))
    if as_json:
        click.echo(_json_out([r.to_dict() for r in found]))
        return
    if not found:
        _err("no durable runs")
        return
    for r in found:
        click.echo(f"{r.run_id}  {r.status:<9} {r.plan}  started {_when(r.created_at)}")
        for q in r.questions:
            choices = f" {q.choices}" if q.choices else ""
            click.echo(f"    ? [{q.path}] {q.question}{choices}")


@runs.command("show")
@click.argument("run_id", metavar="RUN")
@_config_option
@_database_option
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.pass_context
def runs_show(
    ctx: click.Context, run_id: str, config: str | None, database: str | None, as_json: bool
) -> None:
    """Show durable run RUN: its steps, status, cost so far, pending questions, error."""
    parent = ctx.obj or {}
    try:
        url = _durable_url(config or parent.get("config"), database or parent.get("database"))
    except FlowError as e:
        _fail(e)
    from agentflow.runtime.durable.runs import show_run

    info = _durable_call(lambda: show_run(url, run_id))
    if as_json:
        click.echo(_json_out(info.to_dict()))
        return
    click.echo(f"run {info.run_id}: {info.status}  plan {info.plan}")
    click.echo(f"started {_when(info.created_at)}, last change {_when(info.updated_at)}")
    cost = info.cost
    money = f", ${cost['cost']}" if "cost" in cost else ""
    click.echo(
        f"model calls so far: {cost.get('inferences', 0)} ({cost.get('input_tokens', 0)} in, "
        f"{cost.get('output_tokens', 0)} out tokens{money})"
    )
    click.echo("steps:")
    for step in info.steps:
        mark = "reused" if step.get("reused") else step["status"]
        click.echo(f"  {mark:<6} {step['operation']}")
    for q in info.questions:
        click.echo(f"waiting: ? [{q.path}] {q.question}" + (f" {q.choices}" if q.choices else ""))
        click.echo(f"  answer with: flowc answer {info.run_id} {q.path} VALUE")
    if info.error:
        e = info.error
        where = f" at step {e.get('step_path')}" if e.get("step_path") else ""
        click.echo(f"error[{e.get('code')}]{where}: {e.get('message')}")


@main.command()
@click.argument("run_id", metavar="RUN")
@click.argument("step", metavar="STEP")
@click.argument("value", metavar="VALUE")
@_config_option
@_database_option
def answer(run_id: str, step: str, value: str, config: str | None, database: str | None) -> None:
    """Answer the question durable run RUN waits on at STEP (its step path) with VALUE (JSON
    unless the question wants text), checked against the question's type and choices."""
    try:
        url = _durable_url(config, database)
    except FlowError as e:
        _fail(e)
    from agentflow.runtime.durable.runs import answer as answer_run

    question = _durable_call(lambda: answer_run(url, run_id, step, value))
    _err(f"answered [{question.path}] {question.question}")


@main.command()
@click.argument("run_id", metavar="RUN")
@_config_option
@_database_option
def cancel(run_id: str, config: str | None, database: str | None) -> None:
    """Cancel durable run RUN (each of its units stops at its next step)."""
    try:
        url = _durable_url(config, database)
    except FlowError as e:
        _fail(e)
    from agentflow.runtime.durable.runs import cancel as cancel_run

    _durable_call(lambda: cancel_run(url, run_id))
    _err(f"cancelled {run_id}")


@main.command()
@click.argument("run_id", metavar="RUN")
@_config_option
@_database_option
@_workspace_option
@_trace_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole RunResult as JSON.")
def redrive(
    run_id: str,
    config: str | None,
    database: str | None,
    workspace: str | None,
    trace: str | None,
    as_json: bool,
) -> None:
    """Run failed durable run RUN again from its failed steps: a new run of the same plan and
    input that takes every step RUN finished (prints the new run id)."""
    import asyncio
    import secrets

    from agentflow.runtime.durable.dbos_engine import shutdown
    from agentflow.runtime.durable.runs import recorded_spec

    try:
        url = _durable_url(config, database)
    except FlowError as e:
        _fail(e)
    spec = _durable_call(lambda: recorded_spec(url, run_id))
    from agentflow.ir.loader import load_plan_text

    plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    # the new run's id: RUN's own (before any earlier redrive's suffix) + a fresh suffix
    new_id = f"{run_id.split('~', 1)[0]}~{secrets.token_hex(3)}"
    try:
        result = asyncio.run(
            api.run(
                plan,
                spec.get("input"),
                config=config or spec.get("config"),
                workspace=workspace or spec.get("workspace"),
                trace=trace,
                database=database,
                durable=True,
                run_id=new_id,
                reuse=run_id,
                replay=spec.get("replay"),
                on_start=lambda rid: _err(f"run id: {rid} (redrive of {run_id})"),
            )
        )
    except FlowError as e:
        _fail(e)
    finally:
        shutdown()
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.status in ("ok", "exited"):
        click.echo(_json_out(result.output))
    if result.status not in ("ok", "exited"):
        _show_run_error(
            result.error or ErrorInfo("failed", f"the run ended with status {result.status}"), ""
        )
        sys.exit(1)


@main.command()
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
    from agentflow.runtime.durable.runs import work
    from agentflow.runtime.events import JsonlSink

    sinks = [JsonlSink(trace, append=True)] if trace else []
    _err(f"worker {name} on {url.split('@')[-1]}")
    try:
        _durable_call(lambda: work(url, name, sinks=sinks, telemetry=telemetry))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass


if __name__ == "__main__":  # pragma: no cover
    main()
