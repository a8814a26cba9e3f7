"""`flowc`: a thin click layer over :mod:`agentflow.api`.

Exit codes: 0 success; 1 the input has errors (diagnostics, a failed run, a bad plan or
config); 2 usage errors (unknown option, missing file).  No traceback reaches the user for a
mistake in their `.flow`, plan, configuration or input.

This module holds the command group :func:`main` and the commands that check, compile and run
a program; the others live beside it, one module a group: :mod:`.durable` (durable runs),
:mod:`.flowtests` (`flowc test`), :mod:`.views` (`graph`, `report`), :mod:`.plans` (`schema`,
`plan validate`/`fmt`, `tools`, `fmt`: read and print, run nothing), :mod:`.ask` (`ask`,
`cache show`/`clear`); :mod:`.common` holds what they share.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib.machinery
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, cast

import click


class _NoPydanticPlugins:
    """flowc loads no Pydantic plugins: without this, the first model class built scans every
    installed package's entry points for them (~20 ms a process; docs/decisions.md
    "Start-up"). A finder on ``sys.meta_path`` that, when Pydantic's plugin loader is imported
    (never before a command needs Pydantic: ``flowc check`` and ``--version`` do not), marks
    its plugins as loaded and none (``pydantic.plugin._loader._plugins``, None until the scan:
    tests/cli/test_startup_imports.py pins it). A user who sets ``PYDANTIC_DISABLE_PLUGINS``
    keeps Pydantic's own behaviour."""

    NAME = "pydantic.plugin._loader"

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        """The loader's own spec, its ``exec_module`` followed by the preset; None otherwise."""
        if name != cls.NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            if getattr(module, "_plugins", None) is None:
                module._plugins = {}

        loader.exec_module = exec_module
        return spec


def _no_pydantic_plugin_scan() -> None:
    """Put :class:`_NoPydanticPlugins` in place (once; not when the user set
    ``PYDANTIC_DISABLE_PLUGINS``, nor when Pydantic's loader is already imported: then its
    own state is left as it is)."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    if _NoPydanticPlugins.NAME in sys.modules or _NoPydanticPlugins in sys.meta_path:
        return
    sys.meta_path.insert(0, _NoPydanticPlugins)


_no_pydantic_plugin_scan()


class _HttpxCliOnCall:
    """httpx's command-line client is loaded when it is called, not when httpx is imported:
    ``import httpx`` runs ``from ._main import main``, which loads rich, pygments and the CLI
    (~30 ms of a fresh agent task; docs/decisions.md "Start-up of a fresh agent task"). A
    finder on ``sys.meta_path`` gives ``httpx._main`` a stand-in whose ``main`` takes itself
    away and calls the real one; nothing in a flowc process calls it. Pinned by
    tests/cli/test_startup_imports.py (where httpx imports it, and that an agent run loads
    neither rich nor pygments)."""

    NAME = "httpx._main"

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        """A spec of the stand-in for ``httpx._main``; None for every other module."""
        if name != cls.NAME:
            return None
        return importlib.machinery.ModuleSpec(name, cast(Any, cls))

    @staticmethod
    def create_module(spec: Any) -> None:
        """The default module object."""
        return None

    @classmethod
    def exec_module(cls, module: Any) -> None:
        """Fill the stand-in: ``main`` loads httpx's own and runs it."""

        def main(*args: Any, **kwargs: Any) -> Any:
            if cls in sys.meta_path:
                sys.meta_path.remove(cls)
            sys.modules.pop(cls.NAME, None)
            try:
                real = importlib.import_module(cls.NAME)
            except ImportError:  # what httpx's own fallback says
                print(
                    "The httpx command line client could not run because the required "
                    "dependencies were not installed.\nMake sure you've installed "
                    "everything with: pip install 'httpx[cli]'"
                )
                sys.exit(1)
            return real.main(*args, **kwargs)

        module.main = main


if "httpx" not in sys.modules and _HttpxCliOnCall not in sys.meta_path:
    sys.meta_path.insert(0, _HttpxCliOnCall)

#: set while the start-up of a ``flowc run`` holds Python's cyclic garbage collector off
_GC_HELD: list[bool] = []


def _hold_gc() -> None:
    """Start-up of a flowc process (docs/decisions.md "Start-up of a fresh agent task"): the
    collector is off while the command's modules load and its `.flow` compiles, which make
    hundreds of thousands of long-lived objects and almost no cyclic garbage (the collections
    cost ~10 % of a fresh agent task's CPU). :func:`_release_gc` ends it."""
    if gc.isenabled():
        gc.disable()
        _GC_HELD.append(True)


def _release_gc() -> None:
    """End the start-up window of :func:`_hold_gc`: what start-up made is frozen (kept out of
    every later collection: it lives as long as the process) and the collector runs again, as
    it must through a long run. Called before a run starts, and before any other command."""
    if _GC_HELD:
        _GC_HELD.clear()
        gc.freeze()
        gc.enable()


from agentflow import api  # noqa: E402
from agentflow.cli import ask, durable, evals, flowtests, gen, plans, views  # noqa: E402
from agentflow.cli.common import (  # noqa: E402
    Styled,
    _check_run_options,
    _checked_run_id,
    _err,
    _fail,
    _flow_files,
    _json_out,
    _new_run_options,
    _otel_endpoint,
    _out,
    _question_notice,
    _record_option,
    _redrive_hint,
    _render,
    _replay_option,
    _show_run_error,
    _telemetry_option,
    _trace_option,
    _workspace_option,
    checked_host,
    checked_model,
    error_text,
    given_files,
    given_input,
    no_such,
)
from agentflow.core.diagnostics import Diagnostic, did_you_mean, suggested  # noqa: E402
from agentflow.core.redaction import RedactingStream, register_environment  # noqa: E402
from agentflow.errors import (  # noqa: E402
    ErrorInfo,
    FlowError,
    InputMismatch,
    Interrupted,
    RunError,
)


class _FlowGroup(click.Group):
    """Click group whose commands end with the shell's exit code for a signal (130 for Ctrl-C,
    143 for SIGTERM) when a run is interrupted, instead of click's generic "Aborted!" (1).
    A Ctrl-C before the run's own handlers are in place (loading, reading ``--input``) is a
    plain ``KeyboardInterrupt``: it ends with 130 too."""

    group_class = type  # subgroups (`flowc plan`, `flowc runs` …) are flow groups too

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands, each with the whole first sentence of its help (wrapped), where click
        cuts it to the terminal's width with ``...``."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """click's ``main``; a command line read from ``sys.argv`` (a flowc process, not a
        caller passing its arguments) starts with the collector held (:func:`_hold_gc`)."""
        if args is None:
            _hold_gc()
        return super().main(args, *rest, **kwargs)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """click's; every command but ``run`` (which releases it before the run starts) lets
        the collector run again first (:func:`_release_gc`)."""
        try:
            name, cmd, rest = super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as e:
            name = str(args[0])
            nested = self._nested(ctx, name, list(e.possibilities or ()))
            if nested is None:
                raise
            raise click.UsageError(
                f"No such command {name!r}. Did you mean {nested}?", ctx=ctx
            ) from None
        if name != "run":
            _release_gc()
        return name, cmd, rest

    def _nested(self, ctx: click.Context, name: str, near: list[str]) -> str | None:
        """The command of a subgroup an unknown command ``name`` means, as ``'flowc runs
        show'`` (``flowc show RUN``): the subcommands named ``name`` exactly, else — when
        click found no command of this group close to it (``near``) — the one
        core.diagnostics.did_you_mean finds among them; None when none is."""
        groups: dict[str, list[str]] = {}  # a subcommand's name: the groups that have one
        for group_name in self.list_commands(ctx):
            group = self.get_command(ctx, group_name)
            if not isinstance(group, click.Group) or group.hidden:
                continue
            for sub in group.list_commands(ctx):
                command = group.get_command(ctx, sub)
                if command is not None and not command.hidden:
                    groups.setdefault(sub, []).append(group_name)
        if name not in groups:
            hint = None if near else did_you_mean(name, groups)
            if hint is None:
                return None
            name = suggested(hint)
        return " or ".join(f"'{ctx.command_path} {g} {name}'" for g in groups[name])

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
            except OSError as e:
                if e.errno in _PATH_ERRNOS:
                    # a path given on the command line (or in a file it names) that the file
                    # system refuses to look at: a usage error, said in one line
                    _err(f"error: {e.filename}: {e.strerror or e}")
                    ctx.exit(2)
                # the output itself cannot be written (`> /dev/full`, a full disk, a quota):
                # the environment's problem, said in one line (a closed pipe is click's EPIPE)
                if e.errno not in _OUTPUT_ERRNOS:
                    raise
                _err(f"error: cannot write the output: {e.strerror or e}")
                ctx.exit(1)
            except RuntimeError as e:
                # pathlib's `Path.resolve()` (Python < 3.13) says a symlink loop so
                if not str(e).startswith("Symlink loop from "):
                    raise
                where = str(e).removeprefix("Symlink loop from ").strip("'")
                _err(f"error: {where}: {os.strerror(errno.ELOOP)}")
                ctx.exit(2)


#: errors of writing the command's output that are the machine's state, not a bug
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
#: errors of looking at a path the user gave (too long a name, a symlink loop): exit 2
_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP})


@contextlib.contextmanager
def _redacted_stderr() -> Any:
    """Everything written to stderr while a command runs passes the redaction layer
    (:mod:`agentflow.core.redaction`), which knows the credential-like environment variables from
    the start and each configured secret once the configuration is loaded. stdout carries
    programs (compile, fmt) and is left alone; the results of ``run`` and ``ask`` are redacted
    where they are printed."""
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
    """Type-check .flow files (directories are searched for *.flow). Exit code 0: no errors;
    1: errors (or warnings, with --warnings-as-errors); 2: a file could not be read, or the
    directories hold no .flow file."""
    files = _flow_files(paths)
    if not files:  # a CI job pointed at the wrong directory checks nothing: not a pass
        _err(f"error: no .flow files in {', '.join(paths)}")
        sys.exit(2)
    diags: list[Diagnostic] = []
    sources: dict[str, str] = {}
    configs: set[Path] = set()  # each flow.toml once
    for f in files:
        try:
            text = api.read_source(f)
        except OSError as e:
            _err(f"{f}: cannot read: {e.strerror or e}")
            sys.exit(2)
        sources[str(f)] = text
        try:
            result = api.check_source(text, str(f))
            diags.extend(result.diagnostics)
            if result.ok and result.evals:  # the eval blocks' datasets (docs/reference/evals.md)
                more, texts = api.eval_datasets_check(result, str(f))
                diags.extend(more)
                sources.update(texts)
            diags.extend(api.stale_modules(f, text, result))
            diags.extend(api.agent_profile_warnings(f, result))
            diags.extend(api.extern_tool_warnings(f, result))
            if api.config_file(f) is not None:  # loads the runtime's configuration: only then
                more, texts = api.config_diagnostics(f, configs)
                diags.extend(more)
                sources.update(texts)
        except Exception as e:  # noqa: BLE001  # pragma: no cover - a checker bug: reported, no traceback
            _err(f"{f}: internal error in the checker ({type(e).__name__}: {e}); please report it")
            sys.exit(1)
    # text is printed on stdout: colour when stdout is a terminal
    color = sys.stdout.isatty() if fmt == "text" else None
    out = api.render_diagnostics(diags, sources, fmt, color=color)
    if fmt == "text":
        if out:
            _out(Styled(out), nl=not out.endswith("\n"))  # the renderer escapes the files' text
            sys.stdout.flush()  # the report before the summary line, also when both are piped
        errors = sum(1 for d in diags if d.severity == "error")
        warnings = len(diags) - errors
        if diags:
            _err(f"{errors} error(s), {warnings} warning(s) in {len(files)} file(s)")
        else:
            _err(f"{len(files)} file(s) checked: no problems")
    else:
        click.echo(out)  # JSON / SARIF: data, as it is
    failing = any(d.severity == "error" for d in diags) or (warnings_as_errors and diags)
    sys.exit(1 if failing else 0)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="Write the plan here.")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml")
def compile(file: str, out: str | None, fmt: str) -> None:
    """Compile a .flow file to a plan (YAML by default) on stdout or into -o FILE."""
    compiled = _compile(file)
    if compiled.library:  # types for other flows to import: no plan (programs.md "Libraries")
        _err(
            f"{file}: a library (types only, no stage): no plan to write — its types are "
            "compiled into each flow that imports them"
        )
        return
    text = compiled.to_yaml() if fmt == "yaml" else compiled.to_json()
    if out:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as e:
            parent = Path(out).parent
            if not parent.is_dir():  # name the missing folder, not just "No such file"
                _err(
                    f"error: cannot write {out}: the folder {parent} does not exist\n"
                    f"  hint: create it first (mkdir -p {parent}) or choose another -o path"
                )
            else:
                _err(f"error: cannot write {out}: {e.strerror or e}")
            sys.exit(1)
        _err(f"wrote {out}")
    else:
        click.echo(text, nl=False)  # the plan: data, as it is


def _compile(file: str) -> api.CompiledFlow:
    if not Path(file).is_file():
        raise no_such(file)
    try:
        compiled = api.compile_flow(file)
        _note_test_errors(compiled)
        return compiled
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except FlowError as e:
        _fail(e)
    except OSError as e:
        _err(f"error: {file}: cannot read: {e.strerror or e}")
        sys.exit(1)


def _given_answers(ctx: Any, param: Any, given: tuple[str, ...]) -> dict[str, str]:
    """``--answer NAME=VALUE`` options as ``{NAME: VALUE}`` (VALUE parsed by the run)."""
    out: dict[str, str] = {}
    for one in given:
        name, eq, value = one.partition("=")
        if not eq or not name:
            raise click.BadParameter(f"{one!r}: give NAME=VALUE (answer=yes, decision=ship)")
        if name in out:  # which one was meant is not for the run to guess
            raise click.BadParameter(
                f"{name} is answered twice, {name}={out[name]} and {one}: give one --answer {name}"
            )
        out[name] = value
    return out


@main.command()
@click.argument("target", type=click.Path(dir_okay=False))
@click.option(
    "--input", "input_", callback=given_input, help="Input as JSON, or @file.json (@- reads stdin)."
)
@_workspace_option
@_trace_option
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)
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
    callback=checked_model,
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
    callback=_checked_run_id(new=False),
    help="A durable run whose steps are taken where their path and rendered input are "
    "unchanged (implies --durable).",
)
@click.option(
    "--ask-again",
    is_flag=True,
    help="With --reuse: ask every question again, those the earlier run had answered included.",
)
@_new_run_options
@click.option(
    "--fleet",
    is_flag=True,
    help="Spread map items and rate-limited model calls over `flowc worker` processes.",
)
@click.option(
    "--answer", "answers", metavar="NAME=VALUE", multiple=True, callback=_given_answers,
    help="Answer the ask NAME (its let, stage or step path, as flowc answer takes) with VALUE.",
)  # fmt: skip
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
    ask_again: bool,
    run_id: str | None,
    database: str | None,
    fleet: bool,
    answers: dict[str, str],
) -> None:
    """Run a .flow file or a plan file; the output goes to stdout as JSON."""
    api.enable_watchdog()  # a run frozen by a tool holding the GIL is still ended (runtime/watchdog.py)
    click.get_current_context().call_on_close(lambda: api.enable_watchdog(False))

    if ask_again and reuse is None:
        raise click.UsageError("--ask-again goes with --reuse RUN")
    durable = durable or reuse is not None or run_id is not None or fleet or bool(database)
    telemetry = _telemetry_option(otel, no_otel)
    if not Path(target).is_file():
        raise no_such(target)
    _check_run_options(workspace, record, replay, trace)
    if model is not None and (record or replay):
        raise click.UsageError("--model cannot be used with --record or --replay")
    snapshot: dict[str, str] = {}
    try:
        data = api.parse_input(input_)
        if input_ is None and reuse is not None:
            data = None  # the reused run's input (api.run), as the console's "run again"
        if target.endswith(".flow"):
            # its text as the run compiled it: an error's excerpt is drawn from it, not from
            # the file edited while the run went on
            snapshot[target] = api.read_source(target)
            plan = _load_flow(target, snapshot[target])
        else:
            plan = api.load(target)
        console = api.console_sink()
        # a person at the terminal answers `ask` steps; otherwise each ask's when_unanswered
        hooks = api.terminal_hooks(console)
        interrupted = None
        sinks: list[Any] = [console]
        durable_options: dict[str, Any] = {}
        if durable:
            started: list[str] = []
            where = _database_note(target, config, database)

            def on_start(rid: str) -> None:
                # said once the run started: RUN was found and its input taken, the run id
                # free — never before an error that RUN or the id is not there to take
                if data is None and reuse is not None:
                    _err(f"note: no --input: the input of run {reuse} is taken")
                started.append(rid)
                _err(f"run id: {rid}")
                if where:
                    _err(where)

            durable_options = dict(
                durable=True,
                run_id=run_id,
                reuse=reuse,
                ask_again=ask_again,
                fleet=fleet,
                database=database,
                on_start=on_start,
            )
            sinks.append(_question_notice(started))
        run_sync = api.run_sync  # the runtime loaded …
        _release_gc()  # … the collector runs again through the run
        try:
            result = run_sync(
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
                answers=answers,
                **durable_options,
            )
        except Interrupted as e:  # Ctrl-C / SIGTERM: the run wound down; show what it got
            if e.result is None:
                raise
            result, interrupted = cast("api.RunResult", e.result), e  # what Interrupted carries
    except api.CompileError as e:
        _err(_render(e.diagnostics, e.sources, "text"))
        sys.exit(1)
    except RunError as e:  # a step that cannot run, found before the run starts
        error = ErrorInfo(e.code, e.message, e.step_path, e.source, where=e.where)
        _show_run_error(error, target, texts=snapshot)
        sys.exit(1)
    except FlowError as e:
        _err(error_text(e))
        if isinstance(e, InputMismatch):
            _err(_input_hint(target, input_, reuse))
        sys.exit(1)
    for name in result.unused_answers:  # an index past the items, an ask never reached
        _err(
            f"warning: --answer {name} answered no question of the run (an index past the "
            "items or rounds the run had, or an ask it did not reach)"
        )
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.status in ("ok", "exited"):
        click.echo(_json_out(result.output))
    if interrupted is not None:
        _err(f"interrupted by {interrupted.signal}; {api.stopped_summary(result, plan)}")
        sys.exit(interrupted.exit_code)
    if result.status not in ("ok", "exited"):
        if result.error is not None:
            _show_run_error(result.error, target, texts=snapshot)
        else:  # pragma: no cover - a failed run always says why
            _err(f"error: the run ended with status {result.status}")
        if durable:
            _redrive_hint(result)
        sys.exit(1)


def _input_hint(target: str, given: str | None, reuse: str | None = None) -> str:
    """The hint after an input that does not match the run's input type: where to see that type
    (and that no ``--input`` means ``{}``, or with ``--reuse RUN`` RUN's input, which the edited
    flow may no longer take)."""
    how = f"`flowc schema {target} --input` prints the input it takes"
    if not target.endswith(".flow"):
        how = f"the plan's `input_schema` says what input {target} takes"
    if given is None and reuse is not None:
        return f"hint: the input of run {reuse} does not fit {target} as it is now: give --input; {how}"
    if given is None:
        return f"hint: with no --input the input is {{}}; {how}"
    return f"hint: {how}"


def _database_note(target: str, config: str | None, database: str | None) -> str | None:
    """For a durable run of ``target``, the note that ``flowc runs`` started here lists another
    database (the commands taking the run's id find it anyway: api.durable_run_database): the
    flow.toml beside the flow (which sets the run's database) is not the one found from the
    current directory (docs/reference/configuration.md "Which flow.toml"); None when they
    agree or ``--config`` / ``--database`` is given."""
    if config is not None or database is not None:
        return None
    used, here = api.config_file(target), api.config_file()
    if used is None or (here is not None and here.resolve() == used.resolve()):
        return None
    return (
        f"note: the run's database is {used}'s: `flowc runs --config {used}` lists it (runs "
        "show, answer, cancel, resume and redrive of this run find it from any directory)"
    )


def _load_flow(target: str, text: str) -> Any:
    """The plan of the `.flow` ``target`` whose source is ``text`` (exits on a library)."""
    compiled = api.compile_source(
        text, target
    )  # warnings do not block a run; `flowc check` shows them
    _note_test_errors(compiled)
    if compiled.library:  # types for other flows to import (programs.md "Libraries")
        _err(f"error: {api.library_message(target, compiled)}")
        sys.exit(2)
    return api.plan_from_data(compiled.plan, target)


def _note_test_errors(compiled: api.CompiledFlow) -> None:
    """One line on stderr when the flow's `test` blocks have errors, which do not stop a run
    or a compile (docs/decisions.md "Errors in test blocks do not stop a run")."""
    n = len(compiled.test_errors)
    if n:
        first = compiled.test_errors[0]
        _err(
            f"warning: {n} error{'s' if n > 1 else ''} in `test` blocks (the first at "
            f"{first.span}: {first.code}); tests are not part of the plan, so this goes on — "
            f"`flowc check {compiled.file}` shows them, `flowc test` fails on them"
        )


@main.group()
def plan() -> None:
    """Work with plan files (validate, fmt)."""


@main.command("cost")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def cost_cmd(file: str, as_json: bool) -> None:
    """The most model calls a run of FILE (.flow or plan) can make, per role.

    Figures are in the sizes of the run's input (map lengths, ``max_iterations`` …), read from
    the compiled plan before anything runs; docs/models.md "flowc cost".
    """
    compiled = None
    if not Path(file).is_file():
        raise no_such(file)
    if file.endswith(".flow"):
        compiled = _compile(file)
        if compiled.library:  # no plan, no cost (programs.md "Libraries")
            _err(f"error: {api.library_message(file, compiled)}")
            sys.exit(2)
        try:
            plan = api.plan_from_data(compiled.plan, file)
        except FlowError as e:
            _fail(e)
    else:
        try:
            plan = api.load(file)
        except FlowError as e:
            _fail(e)
    figures = api.worst_case_cost(plan)
    module = compiled.check.module if compiled is not None else None
    warnings = api.cost_warnings(plan, file, module)
    if as_json:
        shown = [{"code": d.code, "message": d.message, "hint": d.hint} for d in warnings]
        click.echo(
            json.dumps(
                {"plan": plan.name, **figures, "warnings": shown}, ensure_ascii=False, indent=2
            )
        )
        return
    _out(f"most model calls of one run of '{plan.name}' (inferences per role):")
    width = max(
        [len(r) for r in figures["roles"]] + [5, 7 if figures.get("cap") is not None else 0]
    )
    for role, text in figures["roles"].items():
        _out(f"  {role:<{width}}  {text}")
    _out(f"  {'total':<{width}}  {figures['total']}")
    if figures.get("cap") is not None:  # the flow's budget stops a run before that
        _out(
            f"  {'at most':<{width}}  {figures['cap']} "
            f"(the flow's budget {{ inferences: {figures['cap']} }} stops a run there)"
        )
    for loop in figures["loops"]:
        _out(f"  loop {loop}")
    for why in figures["unbounded"]:
        _out(f"  not counted: {why}")
    for budget in figures["budgets"]:
        _out(f"  budget {budget}")
    if warnings:
        sys.stdout.flush()
        _err(_render(warnings, {file: Path(file).read_text(encoding="utf-8")}, "text"))


@main.command("serve")
@click.argument("directory", required=False, type=click.Path(), default=".")
@click.option("--mcp", "as_mcp", is_flag=True, help="Serve as an MCP server (the only mode).")
@click.option("--http", "port", type=click.IntRange(0, 65535), default=None,
              help="Streamable HTTP on this port.")  # fmt: skip
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    callback=checked_host("--http"),
    help="Address for --http (a name or an IP address).",
)
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)
@click.option("--workspace", type=click.Path(file_okay=False), help="Root for file tools.")
@click.option("--durable", is_flag=True, help="Each call a durable run (survives a restart).")
@click.option("--database", help="Durable runs database (default: [durable] database).")
@click.option(
    "--model",
    "model",
    metavar="test[:SEED]",
    callback=checked_model,
    help="Answer every agent of every call with the built-in test model (values generated from "
    "each contract, no network, no key); test+tools also calls each offered tool once first.",
)
def serve_cmd(
    directory: str,
    as_mcp: bool,
    port: int | None,
    host: str,
    config: str | None,
    workspace: str | None,
    durable: bool,
    database: str | None,
    model: str | None,
) -> None:
    """Serve every .flow program and plan file in DIRECTORY as an MCP tool (stdio by default)."""
    path = Path(directory)
    if path.is_file():  # `flowc serve --mcp extract.flow`: it serves a directory's programs
        parent = str(path.parent)
        raise click.UsageError(
            f"{directory} is a file: `flowc serve --mcp DIR` serves every .flow and plan file "
            f"of a directory, each as a tool; `flowc serve --mcp {shlex.quote(parent)}` serves "
            f"this one with the others beside it, or put it in a directory of its own to serve "
            "it alone"
        )
    if not as_mcp:
        raise click.UsageError("say how to serve: `flowc serve --mcp [DIR]`")
    if not path.is_dir():
        raise click.UsageError(f"{directory}: no such directory")
    try:
        api.serve_mcp(
            path,
            http=port,
            host=host,
            config=None if config is None else api.load_config(config),
            workspace=Path(workspace) if workspace else None,
            durable=durable or database is not None,
            database=database,
            model=model,
        )
    except FlowError as e:
        _err(error_text(e))
        sys.exit(1)


@main.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk LSP on stdin/stdout (the default).")
def lsp_cmd(stdio: bool) -> None:
    """Run the .flow language server (LSP over stdio) for editors."""
    from agentflow.lsp.server import serve_stdio

    serve_stdio()


# ---------------------------------------------------------------------------------- ask, cache


@main.group()
def cache() -> None:
    """Show or clear the shape cache (observed result shapes of tools, read by the planner)."""


# the commands of their own modules
plan.add_command(plans.plan_validate)
plan.add_command(plans.plan_fmt)
cache.add_command(ask.cache_show)
cache.add_command(ask.cache_clear)
for _command in (
    plans.schema,
    plans.tools_cmd,
    plans.fmt_cmd,
    ask.ask,
    durable.resume,
    durable.runs,
    durable.answer,
    durable.cancel,
    durable.redrive,
    durable.worker,
    flowtests.test_cmd,
    views.graph_cmd,
    views.report_cmd,
    views.ui_cmd,
    gen.gen_cmd,
    evals.eval_cmd,
):
    main.add_command(_command)
