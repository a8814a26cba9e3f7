"""What the `flowc` commands share: printing errors and diagnostics, the run options, JSON
output that is always valid, a failed run's error with its source line."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import math
import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from agentflow import api
from agentflow.core.diagnostics import Diagnostic, did_you_mean, suggested
from agentflow.core.redaction import redact, redact_data
from agentflow.core.spans import Span
from agentflow.core.text import choices_text, escape_surrogates, source_lines, visible
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, ErrorInfo, FlowError, PlanLoadError


class Styled(str):
    """Console text that is already safe and styled on purpose (its colour codes are ours):
    :func:`_err` and :func:`_out` print it as it is. Made only from text that went through
    :func:`agentflow.core.text.visible` (or a renderer that applies it, such as the
    diagnostics renderer). Any ``str`` operation on it gives a plain ``str`` again, which is
    escaped: the safe default."""

    __slots__ = ()


def _console(message: str) -> str:
    """``message`` as the console may show it: a :class:`Styled` text as it is; any other with
    its control characters escaped (newlines and tabs kept): text from a tool, a model, an
    answer, an exception or a file cannot retitle, clear or rewrite the terminal
    (docs/decisions.md "console text is escaped everywhere")."""
    return message if isinstance(message, Styled) else visible(message, lines=True)


def _out(message: str = "", nl: bool = True) -> None:
    """Print human-readable ``message`` on stdout, escaped as :func:`_console` says (machine
    output, JSON, goes through ``click.echo`` as it is)."""
    click.echo(_console(message), nl=nl)


def _err(message: str) -> None:
    """Print ``message`` on stderr when it can be written: stderr may be a closed pipe, and
    what follows a message (an exit code, the run itself) must happen all the same. Control
    characters are escaped (:func:`_console`).

    Written to ``sys.stderr`` itself, not through ``click.echo``: while the live view is up,
    ``sys.stderr`` is rich's proxy, which prints above the view; click does not take the proxy
    for a text stream and writes to the terminal's raw buffer beneath it, where the view's next
    redraw erased the line (a durable run's question and its `flowc answer` command were never
    seen in a terminal, issue 28) and the redaction layer was passed by."""
    try:
        stream = sys.stderr
        stream.write(_console(message) + "\n")
        stream.flush()
    except (OSError, ValueError):  # a closed pipe or a closed file
        pass


def _fail(e: FlowError) -> NoReturn:
    """Print a user error and exit 1: the diagnostics of a PlanLoadError or CompileError as
    ``flowc check`` renders them, anything else as ``error: …``."""
    if isinstance(e, PlanLoadError | api.CompileError):
        _err(_render(e.diagnostics, _with_sources(e.diagnostics, e.sources), "text"))
    else:
        _err(error_text(e))
    sys.exit(1)


def error_text(e: FlowError) -> str:
    """``error: MESSAGE`` for a user error; for a configuration error, ``error: …`` for each of
    its problems: a ``flow.toml`` that does not load names one problem per line at its
    ``FILE:LINE:COL`` (as ``flowc check`` reports one ``invalid-config`` per problem,
    docs/reference/configuration.md "Errors"), and each such line is an error line of its own;
    other lines continue the one before."""
    if not isinstance(e, ConfigError):
        return f"error: {e}"
    lines = str(e).splitlines() or [""]
    place = re.match(r"(.+?):\d+(:\d+)?: ", lines[0])
    file = place.group(1) if place else None
    return "\n".join(
        f"error: {line}"
        if i == 0 or (file is not None and re.match(re.escape(file) + r":\d+(:\d+)?: ", line))
        else line
        for i, line in enumerate(lines)
    )


def _with_sources(diags: list[Diagnostic], sources: dict[str, str]) -> dict[str, str]:
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


def checked_model(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback refusing a ``--model`` that names no test model (``test:abc``, ``gpt``)
    as a usage error (exit 2), with why and how a real model is configured instead
    (:func:`agentflow.api.model_option_error`), before anything is read or run."""
    if isinstance(value, str):
        problem = api.model_option_error(value)
        if problem is not None:
            raise click.UsageError(problem, ctx=ctx)
    return value


#: the most entries of a directory looked at for the file a missing path may have meant
_NEARBY_MAX = 5000


def no_such(path: str, what: str = "file", label: str = "") -> click.UsageError:
    """The usage error (exit 2) of ``path``, given on the command line, that does not exist:
    ``LABELPATH: no such WHAT``, and ``; did you mean `stats.flow`?`` naming the entry of its
    directory it looks like a slip of (core.diagnostics.did_you_mean; a directory only when
    ``what`` allows one), as written with its last part replaced."""
    message = f"{label}{path}: no such {what}"
    near = _nearby(path, dirs="directory" in what)
    return click.UsageError(f"{message}; did you mean `{near}`?" if near else message)


def _nearby(path: str, *, dirs: bool) -> str | None:
    """The path of the entry beside ``path`` it looks like a slip of, or None."""
    given = Path(path)
    if not given.name or not path.endswith(given.name):
        return None
    names: list[str] = []
    try:
        with os.scandir(given.parent) as entries:
            for entry in entries:
                if len(names) >= _NEARBY_MAX:
                    break
                with contextlib.suppress(OSError):
                    if entry.is_file() or (dirs and entry.is_dir()):
                        names.append(entry.name)
    except OSError:
        return None
    hint = did_you_mean(given.name, names)
    return path[: len(path) - len(given.name)] + suggested(hint) if hint else None


def given_file(label: str, path: str) -> None:
    """Raise click.UsageError (exit 2) when ``path``, a file given on the command line, does not
    exist or cannot be read, in one shape for every command (docs/reference/cli.md "Exit
    codes"): ``LABELPATH: no such file`` / ``LABELPATH: is a directory`` / ``LABELPATH: cannot
    read it (permission denied)``.  ``label``: ``"--config "`` for an option, ``""`` for an
    argument, ``"--input @"`` for ``--input @FILE``."""
    file = Path(path)
    if not file.exists():
        raise no_such(path, label=label)
    if file.is_dir():
        raise click.UsageError(f"{label}{path}: is a directory")
    if not os.access(file, os.R_OK):
        raise click.UsageError(f"{label}{path}: cannot read it (permission denied)")


def given_files(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: every file an option (``--config``, ``--replay``, ``--baseline``…) or an
    argument (``flowc eval``'s datasets) names is there and readable, else a usage error (exit 2,
    :func:`given_file`); ``None`` (not given) passes."""
    label = f"{param.opts[0]} " if isinstance(param, click.Option) else ""
    for path in value if isinstance(value, tuple | list) else [value]:
        if path is not None:
            given_file(label, path)
    return value


def given_input(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback for ``--input``: the file of ``--input @FILE`` is there and readable,
    else a usage error (exit 2, :func:`given_file`); ``@-`` is standard input."""
    if isinstance(value, str) and value.startswith("@") and value != "@-":
        given_file("--input @", value[1:])
    return value


#: A label of a host name (RFC 1123; ``_`` too, as some networks name machines so).
_HOST_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
#: What ``--host`` takes, said by every refusal.
_HOST_FORM = (
    "give a name or an IP address alone (127.0.0.1, localhost, ::1; 0.0.0.0 for every interface)"
)


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def listen_host(value: str) -> str | None:
    """``value`` as a host to listen on: an IP address (an IPv6 one also in brackets, which
    are taken off) or a host name; None when it is neither."""
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    if _ip(bare):
        return bare
    name = value.removesuffix(".")
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_HOST_LABEL.fullmatch(x) for x in labels):
        return None
    if all(x.isdigit() for x in labels):
        return None  # 999.1.1.1: meant as an IPv4 address, and not one
    return value


def listen_host_problem(value: str, port_option: str = "--port") -> str | None:
    """Why ``value`` given to ``--host`` of ``flowc ui`` / ``flowc serve`` is not a host to
    listen on (:func:`listen_host`), naming it and the form allowed — a port glued to it goes
    in ``port_option`` —, or None (docs/reference/ui.md)."""
    if listen_host(value) is not None:
        return None
    host, colon, port = value.rpartition(":")
    glued = colon and host and port and "/" not in port
    if glued and listen_host(host) is not None and not _ip(value.strip("[]")):
        bare = listen_host(host)
        if port.isascii() and port.isdigit() and int(port) <= 65535:
            return (
                f"{value!r} is not a host: give the port with {port_option}: --host {bare} "
                f"{port_option} {int(port)} (--host takes a name or an IP address alone)"
            )
        return (
            f"{value!r} is not a host: give the port with {port_option} N (0 to 65535), and "
            "--host a name or an IP address alone"
        )
    if all(x.isdigit() for x in value.removesuffix(".").split(".")) and "." in value:
        return f"{value!r} is not an IP address: {_HOST_FORM}"
    return f"{value!r} is not a host: {_HOST_FORM}"


def checked_host(port_option: str) -> Any:
    """A click callback for ``--host``: a usage error (exit 2) for a value that is not a host
    (:func:`listen_host_problem`, a glued port said to go in ``port_option``); the host as
    it is bound (an IPv6 address without its brackets) otherwise."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        problem = listen_host_problem(value, port_option)
        if problem is not None:
            raise click.BadParameter(problem, ctx=ctx, param=param)
        return listen_host(value)

    return check


def listen_failure(e: OSError) -> str:
    """Why ``flowc ui`` could not listen, in one clause: a port another process holds says
    what to do; any other failure is the system's words (a name that does not resolve, an
    address this machine does not have)."""
    if e.errno == errno.EADDRINUSE:
        return (
            f"another process listens there ({e.strerror or e}): stop it, or give another "
            "--port (0: any free port)"
        )
    return str(e.strerror or e)


# Options shared by `run`, `ask` and the durable-run commands.
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
    "--replay",
    type=click.Path(dir_okay=False),
    callback=given_files,
    help="Answer model requests from this cassette.",
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
        raise no_such(replay, label="--replay ")
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
            raise no_such(p, "file or directory")
    # a file named and found again in a directory (`flowc test a.flow .`) is taken once
    once: dict[Path, Path] = {}
    for f in out:
        once.setdefault(f.resolve(), f)
    return list(once.values())


def _render(diags: list[Diagnostic], sources: dict[str, str], fmt: str) -> str:
    """The diagnostics as ``flowc check --format FMT`` prints them on stderr; the text format
    is :class:`Styled` (its renderer escapes what came from the files, its colours are ours)."""
    text = api.render_diagnostics(diags, sources, fmt, color=sys.stderr.isatty())
    return Styled(text) if fmt == "text" else text


def _json_out(value: Any) -> str:
    """``value`` as indented JSON that is always valid: a NaN or infinity (which JSON cannot
    hold; e.g. from a tool's reply) is printed as ``null`` with a warning on stderr. Configured
    secrets are redacted from every string first."""
    value = redact_data(value)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:
        _err("warning: the output held NaN or an infinity, which JSON cannot hold; printed as null")
        text = json.dumps(_finite_only(value), indent=2, ensure_ascii=False, allow_nan=False)
    text = escape_surrogates(text)  # a lone surrogate as its \\udXXX escape: printable, same JSON
    # json.dumps escapes C0 controls; C1 ones (U+009B is a CSI), DEL and the line separators
    # it writes raw. They stand only inside strings, where \\uXXXX is the same character.
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029]")


def _finite_only(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_only(v) for v in value]
    return value


def _show_run_error(
    error: ErrorInfo | dict[str, Any],
    target: str,
    ran: tuple[str, float] | None = None,
    texts: Mapping[str, str] | None = None,
) -> None:
    """Say a run's ``error`` on stderr: its code, the step in the `.flow`'s terms, and the
    excerpt of its place in ``target``. ``ran``: a durable run's compiled plan and start time,
    to tell a file changed since (its place is then only named); ``texts``: the sources the
    run was compiled from, by path (a plain run's snapshot at its start), whose lines are
    shown whatever the file holds now."""
    texts = texts or {}
    error = ErrorInfo.from_dict(error) or ErrorInfo(Code.FAILED, "the run failed")
    label = error.get("label")  # the failed step in the .flow's terms (runtime/where.py)
    loc = Span.parse(error.source)
    if (
        error.step_path == "finish"
        and not label
        and target.endswith(".flow")
        and not (ran is not None and _edited_since(target, target, *ran))
    ):
        # a compiled plan's `finish` is its last stage's value: named so, at its `return`
        with contextlib.suppress(OSError, ValueError, FlowError):
            place = api.output_place(_text_of(target, texts), target)
            if place is not None:
                label, loc = place
    if label and error.step_path:
        where = f" in {label} (step {error.step_path})"
    else:
        where = f" at step {error.step_path}" if error.step_path else ""
    _err(f"error[{error.code}]{where}: {error.message}")
    if loc is not None and target.endswith(".flow"):
        shown = _source_file(target, loc.file)
        if shown is None:  # a called flow's file that cannot be found from here: its place
            _err(f"  --> {loc}")
            return
        if shown not in texts and ran is not None and _edited_since(target, shown, *ran):
            # the file on disk is not the run's: its line there would be another's code
            _err(
                f"  note: {shown} changed since the run started; the place is line "
                f"{loc.line}:{loc.column} of the run's version"
            )
            return
        try:
            lines = source_lines(_text_of(shown, texts))
            line, column, width = loc.line, loc.column, 1
            # the caret on the expression the message names (`ticket[0]`), when it is written
            # so in the step; else on the step
            found = api.expression_position(lines, loc.line, error.message, loc.column)
            if found is not None:
                line, column, width = found
            # measured on the line as shown (tabs expanded, control characters escaped)
            text, start, width = api.source_excerpt(lines[line - 1], column, column + width)
            _err(f"  --> {shown}:{line}:{column}")
            _err(f"   | {text}")
            _err("   | " + " " * start + "^" * width)
        except (ValueError, IndexError, OSError):
            pass


def _text_of(file: str, texts: Mapping[str, str]) -> str:
    """The source of ``file`` as the run read it (``texts``), else as it is now."""
    known = texts.get(file)
    return known if known is not None else Path(file).read_text(encoding="utf-8")


def _redrive_hint(result: Any) -> None:
    """After a durable run that ended ``error`` or ``aborted`` (a hook's abort), the hint naming
    the command that runs it again from its failed steps (docs/durable.md "Redrive and reuse"):
    the run id is only on the first line of the run's output."""
    run_id = getattr(result, "run_id", None)
    if run_id and result.status in ("error", "aborted"):
        _err(
            f"hint: once what failed is put right, `flowc redrive {shlex.quote(run_id)}` runs "
            "it again from its failed steps, taking every step that finished"
        )


def _edited_since(target: str, shown: str, plan_text: str, started: float) -> bool:
    """True when the `.flow` ``target`` (or the file ``shown`` of it an error is in, a called
    flow's) changed since a durable run of it started at ``started`` (epoch seconds) with the
    compiled plan ``plan_text``: a file written since, that no longer compiles to that plan
    (one only touched, or edited back, still does: its lines are the run's)."""
    try:
        if max(Path(f).stat().st_mtime for f in {target, shown}) <= started:
            return False
        return api.plan_text(target)[0] != plan_text
    except (OSError, ValueError, FlowError):  # gone, unreadable, no longer compiles
        return True


def _source_file(target: str, named: str | None) -> str | None:
    """The file a run error's ``source`` names, as a path from here: ``target`` (the `.flow`
    that was run) when it names that file, else the called flow it names (beside ``target``,
    or in the ``plans/`` directory there); None when it is neither — an error inside a called
    flow was drawn on a line of the caller's file."""
    if not named or Path(named).name == Path(target).name and not Path(named).parent.name:
        return target
    here = Path(target).parent
    for candidate in (here / named, here / "plans" / Path(named).name):
        if candidate.is_file():
            return str(candidate)
    return None


def _write_or_echo(text: str, out: str | None) -> None:
    """Write ``text`` to ``out`` (saying so on stderr), or print it when ``out`` is None/``-``:
    a document (a graph, a report) is data, printed as it is into a pipe; on a terminal its
    control characters are escaped (newlines and tabs kept) like every console text."""
    text = redact(text)  # a report or graph of a trace written elsewhere: the reader's secrets
    if out is None or out == "-":
        click.echo(visible(text, lines=True) if sys.stdout.isatty() else text, nl=False)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as e:
        _err(f"error: cannot write {out}: {e.strerror or e}")
        sys.exit(1)
    _err(f"wrote {out}")


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


def _show_question(
    run_id: str,
    path: str,
    question: str,
    choices: Any = None,
    label: str | None = None,
    others: Any = (),
) -> None:
    """Print, on stderr, a question durable run ``run_id`` waits on at step ``path`` (named by
    its ``label`` in the `.flow`'s terms when known) and the `flowc answer` command that
    answers it: by its ``let`` name when that is the question's alone among ``others`` (the
    run's other questions as ``(path, label)``; :func:`agentflow.api.answer_name`), else by
    its path."""
    shown_choices = f" ({choices_text(choices)})" if choices else ""
    _err(f"? [{label or path}] {question}{shown_choices}")
    _err(f"  answer with: {api.answer_command(run_id, api.answer_name(path, label, others))}")


def _question_notice(
    run_ids: list[str], shown: set[str] | None = None, known: dict[str, Any] | None = None
) -> Any:
    """A sink that says, for each question a durable run asks, how to answer it (the run id is
    ``run_ids[0]`` once known).  ``shown``: the step paths already announced (each is printed
    once; the sink adds to it); ``known``: the run's questions known so far, path → label (the
    sink adds to it), which decide whether a question's hint may name it by its ``let``."""
    seen = shown if shown is not None else set()
    # the run's questions so far, path -> label (the caller's, when it announced some)
    asked: dict[str, str | None] = known if known is not None else {}

    def notice(event: Any) -> None:
        if event.data.get("tool_name") == "ask" and run_ids and event.path not in seen:
            seen.add(event.path)
            asked[event.path] = event.data.get("label")
            ask = event.data.get("input") or {}
            if ask.get("known"):  # reused from --reuse, or answered while the run was stopped
                return
            _show_question(
                run_ids[0],
                event.path,
                ask.get("question", ""),
                ask.get("choices"),
                event.data.get("label"),
                asked.items(),
            )

    return api.callback_sink(notice, kinds={"step_started"})


def _ask_progress(kind: str, text: str) -> None:
    """``flowc ask``'s progress (and ``flowc resume``'s of a durable question), dimmed on
    stderr: ``→`` a tool call starts, ``✓``/``✗`` it ended, ``↻`` a replan, a solver report."""
    mark = {"tool": "→", "tool_done": "✓", "tool_error": "✗", "replan": "↻"}.get(kind, "·")
    line = text if kind == "report" else f"{mark} {text}"
    click.echo(click.style(visible(line, lines=True), dim=True), err=True)


def _ask_finish(result: Any, as_json: bool) -> None:
    """Print a question's ``AskResult`` as ``flowc ask`` does (and ``flowc resume`` of a
    durable question): ``--json`` the whole result, else the answer on stdout; a question
    without an answer exits 1 after ``error[CODE]: message`` on stderr."""
    if as_json:
        click.echo(_json_out(result.to_dict()))
    elif result.answer is not None:
        _out(redact(result.answer))
    if not result.ok:
        err = result.error
        _err(f"error[{err.code}]: {err.message}" if err else f"error: {result.status}")
        sys.exit(1)


def _checked_run_id(new: bool) -> Any:
    """A click callback refusing a run id (``--run-id``: ``new``; ``RUN``: a lookup) that
    cannot be one (docs/durable.md "Run ids"): a usage error, exit 2."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if isinstance(value, str):
            problem = api.run_id_error(value, new=new)
            if problem is not None:
                raise click.BadParameter(problem, ctx=ctx, param=param)
        return value

    return check


def _new_run_options(fn: Any) -> Any:
    """``--run-id ID`` and ``--database URL`` of a command that starts a durable run (``run``,
    ``ask``): each implies ``--durable``."""
    fn = click.option(
        "--database",
        metavar="URL",
        help="The durable runs database (default: [durable] database); implies --durable.",
    )(fn)
    return click.option(
        "--run-id",
        metavar="ID",
        callback=_checked_run_id(new=True),
        help="The durable run's id (default: a new one); implies --durable.",
    )(fn)
