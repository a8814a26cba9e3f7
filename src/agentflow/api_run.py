"""The api of running: a plan's catalog and model needs, :func:`run` / :func:`run_sync` (plain
or durable; docs/spec/RUNTIME.md §1), :func:`resume_run` and :func:`work` (docs/durable.md;
the durable runtime is loaded only when one of them needs it), a plan file's problems with its tools (:func:`check_plan`), its graph and
run report, the tool list, ``flowc ask``, and what a host needs around a run (configuration,
event sinks, hooks, the shape cache, the watchdog).  :mod:`agentflow.api` re-exports every
public name here.

This module loads the runtime (and Pydantic with it), not the durable engine (DBOS, SQLAlchemy:
loaded when a durable run opens its database) nor jsonschema (loaded by the first contract
check); the front end alone is :mod:`agentflow.api_check` (docs/decisions.md "The api split by
what it loads").  Errors in the user's files come back as
:class:`agentflow.errors.FlowError` subclasses that name file, line and column.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio

# what a run's first steps import (the agent loop, the plan's expressions, the model budget),
# loaded with this module rather than on the event loop at the first step
import agentflow.ir.resolve  # noqa: F401
import agentflow.runtime.agent  # noqa: F401
import agentflow.runtime.models.budget  # noqa: F401
from agentflow.api_compile import _fspath, load, load_plan_or_library, plan_text
from agentflow.core.text import json_error
from agentflow.errors import ConfigError, InputError
from agentflow.ir.dump import dump_plan
from agentflow.ir.loader import load_plan_text
from agentflow.ir.models import Plan
from agentflow.runtime import durable as durable_runs  # loaded on first use: a plain run loads none
from agentflow.runtime import interrupt
from agentflow.runtime.agent_step import input_models
from agentflow.runtime.config import (
    Config,
    missing_key_message,
)
from agentflow.runtime.config import load_config as read_config
from agentflow.runtime.context import RunContext
from agentflow.runtime.events import CallbackSink, ConsoleSink, Event, JsonlSink, Sink
from agentflow.runtime.executor import run_plan, validate_input
from agentflow.runtime.extract import (
    DuplicateKey,
    NonJsonNumber,
    json_kind,
    json_value_problem,
    loads_value,
)
from agentflow.runtime.hooks import (
    AskRequest,
    Hooks,
    answering,
    checked_answer,
    default_interlocutor,
)
from agentflow.runtime.model_needs import (
    plan_model_refs,
    plan_model_refusal,
    plan_model_users,
    plan_needs_model,
)
from agentflow.runtime.models.cassette import ReplayRouter, recording_router
from agentflow.runtime.models.router import ModelRouter, test_router
from agentflow.runtime.models.test_model import parse_model_option
from agentflow.runtime.result import RunResult
from agentflow.runtime.run_index import remember as remember_run
from agentflow.runtime.shape_cache import CACHE_ENV, ShapeCache, ShapeRecorder
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import (
    TelemetrySettings,
    durable_settings,
    settings_for,
    settings_from_config,
)
from agentflow.runtime.tools.build import build_catalog as build_tool_catalog
from agentflow.runtime.tools.build import check_plan_arguments, check_plan_tools
from agentflow.runtime.tools.catalog import Catalog

__all__ = [
    "CLOSE_LIMIT_S",
    "build_catalog",
    "callback_sink",
    "console_sink",
    "enable_watchdog",
    "jsonl_sink",
    "load_config",
    "model_option_error",
    "parse_input",
    "plan_model_users",
    "plan_needs_model",
    "resume_run",
    "run",
    "run_sync",
    "shape_cache",
    "shape_cache_note",
    "stopped_summary",
    "telemetry_settings",
    "terminal_hooks",
    "work",
]


def build_catalog(config: Any = None, **kwargs: Any) -> Catalog:
    """The full tool catalog of ``config`` (builtins, user tools, the plans directory, MCP
    servers): :func:`agentflow.runtime.tools.build.build_catalog` with :func:`load` as the loader
    of the plans directory, so its `.flow` files are compiled (a broken one raises
    :class:`CompileError`; a library, with no stage, is left out).  ``kwargs`` as there (``plan``, ``entry_points``, ``plans``)."""
    kwargs.setdefault("load_plan", load_plan_or_library)
    return build_tool_catalog(config, **kwargs)


def model_option_error(value: str, option: str = "--model") -> str | None:
    """Why ``value`` of ``option`` (``--model``: the CLI's; ``model``: a Python keyword) names
    no test model (``test``, ``test:SEED``, ``test+tools[:SEED]``), or None when it names one:
    what :func:`run` raises as :class:`ConfigError` (docs/reference/cli.md "flowc run"), said
    by the CLI as a usage error before anything runs."""
    try:
        parse_model_option(value, option)
    except ValueError as e:
        return str(e)
    return None


def parse_input(value: str | None) -> Any:
    """Parse a ``--input`` value: inline JSON, ``@file.json``, or ``@-`` (standard input, read
    to its end).  Raises :class:`InputError` (text that is not JSON but names a file hints
    ``--input @FILE``; docs/reference/cli.md "flowc run")."""
    if value is None:
        return {}
    if value == "@-":
        try:
            text = sys.stdin.read()
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise InputError(f"stdin: cannot read the input: {e}") from None
        where = "stdin"
    elif value.startswith("@"):
        file = value[1:]
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"{file}: cannot read input file: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise InputError(
                f"{file}: cannot read input file: not UTF-8 text (invalid byte at offset {e.start})"
            ) from None
        where = file
    else:
        text, where = value, "--input"
    try:
        return loads_value(text)
    except json.JSONDecodeError as e:
        message = f"{where}:{e.lineno}:{e.colno}: input is not valid JSON: {json_error(e)}"
        if where == "--input" and _names_a_file(text):
            # `--input big.json`: the file's name taken as JSON text
            message += f"\nhint: {text} is a file: to read the input from it, write --input @{text}"
        raise InputError(message) from None
    except (NonJsonNumber, DuplicateKey) as e:
        raise InputError(f"{where}: input is not valid JSON: {e.args[0]}") from None
    except ValueError as e:  # nested too deeply (loads_bounded)
        raise InputError(f"{where}: input is {e}") from None


def _names_a_file(text: str) -> bool:
    """True when ``--input``'s ``text`` (not JSON) is the name of an existing file."""
    if not text or len(text) > 4096 or "\n" in text or "\x00" in text:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


async def run(
    target: str | os.PathLike[str] | Plan,
    input: Any = None,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
    answers: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run a `.flow` file, a plan file or a loaded :class:`Plan` and return its ``RunResult``.

    - ``config``: a :class:`agentflow.runtime.config.Config`, a path to ``flow.toml``, or None to
      find ``flow.toml`` from the directory of ``target`` upwards (a loaded plan's
      ``source_file``; the current directory for a plan from memory), else the environment
      (docs/reference/configuration.md "Which flow.toml");
    - ``workspace``: the root the file tools are confined to (default: the current directory);
    - ``trace``: a JSON Lines file receiving every event;
    - ``sinks``: more event sinks (closed when the run ends); ``hooks``: the host's gate,
      on_tool_error and interlocutor (docs/spec/RUNTIME.md §7);
    - ``catalog`` / ``router``: override the tool catalog and the model router (embedding, tests);
    - ``record``: write every model exchange to this cassette (JSON Lines, no keys);
    - ``replay``: answer every model request from this cassette; needs no model configuration
      (a request not in it fails the step with ``replay_miss``).
    - ``model``: ``"test"`` (or ``"test:SEED"``, ``"test+tools"``, ``"test+tools:SEED"``) answers
      every agent with the built-in test model instead of the configured ones: values generated
      from each agent's contract, deterministic per seed, no network, no key (docs/models.md
      "The test model"). Raises :class:`ConfigError` for any other value.
    - ``shape_cache``: the :class:`~agentflow.runtime.shape_cache.ShapeCache` fed with the result
      shape of every successful tool call (default: the user's cache directory; ``False``: off).
    - ``on_partial``: ``fn(step_path, value)``, called with each typed partial answer of an agent
      step whose model streams (``stream = true``; docs/models.md "Streaming").
    - ``telemetry``: export the run as OpenTelemetry spans over OTLP/HTTP
      (docs/observability.md): an endpoint URL, ``True`` (the ``[telemetry]`` endpoint, else
      ``OTEL_EXPORTER_OTLP_ENDPOINT``, else ``http://127.0.0.1:4318``), ``False`` (off), or None
      (on when the configuration's ``[telemetry]`` table sets an endpoint). Needs the ``otel``
      extra; a host with its own TracerProvider passes
      ``sinks=[agentflow.runtime.telemetry.OtelSink(tracer_provider=…)]`` instead.

    - ``durable``: run it as a durable run (docs/durable.md): every tool call, model call,
      question and sleep is recorded in ``database`` (default ``[durable] database``), so a run
      whose process dies continues with :func:`resume_run` (``flowc resume``); ``run_id``:
      its id (default: a new one; ``on_start(run_id)`` is called once it is recorded, and
      ``result.run_id`` holds it); ``reuse``: an earlier run whose steps are taken where their
      step path and rendered input are unchanged, and its answered questions where their step
      path, text and choices are (``ask_again``: every question is asked again), and with
      ``input`` None the input is the reused run's (docs/durable.md "Reuse"); ``fleet``:
      spread concurrent units and rate-limited model calls over the ``flowc worker``
      processes on the same database.
    - ``answers``: ``{NAME: VALUE}``, the answers of the ``ask`` steps NAME names — the
      ``let`` an answer is bound to, its stage or its step path, as ``flowc answer`` takes
      them — given before the run (``flowc run --answer NAME=VALUE``): a text VALUE is parsed
      as ``flowc answer`` parses it (JSON unless the question wants text; ``yes``/``no`` for a
      ``bool``; a choice bare, as a JSON string or by its number), then checked against the
      question's type and choices before the run (:class:`InputError`, the ask's message);
      choices a plan renders from a template are checked when asked (a refused answer fails
      the step with ``output_validation``); the other asks go to ``hooks``' interlocutor.  A NAME no ``ask`` of the plan has raises :class:`InputError` before the
      run, and so do an indexed NAME whose number of indices is not its ask's nesting in maps
      and loops, a NAME that is not a ``str``, a VALUE no JSON holds, and ``answers`` with
      ``durable`` (a durable run's questions wait for :func:`answer_run`); a NAME that
      answered no question (an index past the items) is listed in
      ``RunResult.unused_answers`` (docs/reference/cli.md "flowc run --answer").

    The run itself is :func:`agentflow.runtime.executor.run_plan` with a
    :class:`~agentflow.runtime.context.RunContext` built from these.

    Raises :class:`InputError` when ``input`` does not match the plan's input schema (checked
    first, before the models, keys and tools); :class:`ConfigError` before the first step when
    the plan needs a model and none is configured;
    :class:`PlanLoadError` when a tool name or ``tools`` pattern does not resolve against the
    catalog (built by :func:`build_catalog` unless given; its MCP connections are closed when the
    run ends), or when a literal argument breaks its tool's input schema; :class:`RunError`
    (code ``validation``, at the step) when a step compiled from a `.flow` calls a tool with
    argument names its schema cannot take — an ``extern tool`` declared with another signature
    (docs/reference/errors.md "A tool declared with another signature").
    """
    # the slow part of a first call (compiling a `.flow`, reading flow.toml, building the
    # catalog, importing user tool modules) runs on a worker thread: the caller's event loop is
    # never blocked by it (bench/loop_blocking.py measures the longest blocking slice); under
    # `run_sync` (runtime.interrupt.run) a signal meanwhile stops the run before its first step,
    # as one during a preparation on the loop did. The runtime itself is loaded with this
    # module (`from agentflow import run` at an application's import; docs/decisions.md "The
    # api split by what it loads").
    prepared = asyncio.to_thread(_prepare, target, config, catalog)
    got: tuple[Plan, Config, Catalog | None] = await interrupt.while_loading(prepared)
    plan, config, built = got

    # what this call opens is closed on every way out, a failure before the run starts included
    # (MCP connections, HTTP pools; sinks only until the run owns them): one exit stack
    async with contextlib.AsyncExitStack() as stack:
        if catalog is None:
            catalog = built
        assert catalog is not None
        stack.push_async_callback(_closed, catalog.aclose)  # MCP connections, before or during
        # the input first: a mistake in it is said before any about models, keys or tools
        # (with --reuse and no input, the reused run's input is checked when it is read)
        if input is not None or reuse is None:
            validate_input(plan, {} if input is None else input)
        if answers and (durable or run_id is not None or reuse is not None):
            raise InputError(
                "answers given before the run are for a plain run: a durable run's questions "
                "wait for `flowc answer RUN NAME VALUE` (agentflow.answer_run), from any process"
            )
        used: set[str] = set()  # the NAMEs of answers that answered a question
        if answers:  # before the run: a NAME no ask has is a mistake, not a silent default
            _check_answers(plan, answers)
            hooks = hooks or Hooks()
            hooks = dataclasses.replace(
                hooks, interlocutor=answering(answers, hooks.interlocutor, used)
            )
        # tool names and patterns, then literal arguments, before the run (RUNTIME.md §4)
        check_plan_tools(plan, catalog, config)
        await check_plan_arguments(plan, catalog, config)
        if router is None:
            router = _own_router(
                config, plan, model=model, replay=replay, record=record, input=input
            )
            stack.push_async_callback(_closed, router.aclose)  # the HTTP connection pools
        with contextlib.ExitStack() as early:  # sinks made here, closed if the run never starts
            all_sinks = list(sinks)
            if on_partial is not None:
                partial_sink = CallbackSink(
                    lambda event: on_partial(event.path, event.data.get("value"))
                )
                partial_sink.kinds = frozenset({"partial_output"})  # type: ignore[attr-defined]
                all_sinks.append(partial_sink)
            if telemetry or (telemetry is None and config.telemetry.active):
                endpoint = telemetry if isinstance(telemetry, str) else None
                settings = settings_from_config(config, endpoint)
                if durable:
                    settings = durable_settings(settings)
                otel = OtelSink(settings)
                early.callback(otel.close)
                all_sinks.append(otel)
            # every successful tool call feeds the shape cache (docs/spec/RUNTIME.md §9)
            if shape_cache is not False:
                all_sinks.append(ShapeRecorder(shape_cache or ShapeCache()))
            if trace is not None:
                try:
                    jsonl = JsonlSink(os.fspath(trace))
                except OSError as e:
                    raise ConfigError(
                        f"{trace}: cannot write trace file: {e.strerror or e}"
                    ) from None
                early.callback(jsonl.close)
                all_sinks.append(jsonl)
            context = RunContext(
                catalog=catalog,
                router=router,
                config=config,
                workspace=Path(workspace) if workspace is not None else Path.cwd(),
                sinks=tuple(all_sinks),
                hooks=hooks or Hooks(),
            )
            early.pop_all()  # the run closes its sinks from here on
        if durable:
            return await _run_durable(
                target, plan, input, context, config,
                run_id=run_id, reuse=reuse, ask_again=ask_again, database=database, fleet=fleet,
                replay=replay, on_start=on_start, model=model,
            )  # fmt: skip
        result = await run_plan(plan, input, context)
        # an answer no question took (an index past the items, an ask never reached): said
        result.unused_answers = [name for name in (answers or {}) if name not in used]
        return result
    raise AssertionError("unreachable")  # pragma: no cover - the stack does not swallow


def _check_answers(plan: Plan, answers: Mapping[str, Any]) -> None:
    """Raise :class:`InputError` for ``answers`` that cannot answer an ``ask`` of ``plan`` (or
    of a plan it calls), before the run (docs/reference/cli.md "flowc run --answer"): a NAME
    that is not text, a VALUE no JSON holds (bytes, a set, NaN), a NAME no ask has — not its
    step path, not the ``let`` of its answer or the `parallel` branch it is, not its stage —,
    and an indexed NAME (``ok[1]``) whose number of indices is not the number of maps and loops
    its ask is asked in (one in a map, two in a loop in a map). An index past the items is known only as the run goes:
    ``RunResult.unused_answers`` says it."""
    for name, value in answers.items():
        if not isinstance(name, str):
            raise InputError(
                "answers: each NAME is a text (the `let` an answer is bound to, its stage or "
                f"its step path), got {json_kind(name)}"
            )
        problem = json_value_problem(value, "the value")
        if problem is not None:
            raise InputError(f"answer for {name!r}: {problem}")
    names: set[str] = set()
    paths: set[str] = set()
    for one in [plan, *(plan.plans or {}).values()]:
        steps = one.iter_steps()
        parallels = {path for path, step in steps if step.tool_name == "parallel"}
        for path, step in steps:
            if step.tool_name == "ask":
                paths.add(path)
                names.update(str(step.meta[k]) for k in ("name", "stage") if step.meta.get(k))
                parent, _, branch = path.rpartition("/")
                if parent in parallels and step.meta.get("stage"):
                    names.add(branch)  # `a: ask …`, a `parallel` branch: named as a `let`
    depths = _ask_depths(plan)
    # a step path inside a map's item or a loop's round (`E0/do.1`) starts at a step of its own
    firsts = {path.split("/", 1)[0] for path, _ in plan.iter_steps()}
    for name in answers:
        base = _INDEXED.match(name)  # `ok[1]`: the ask of `let ok` in item 1 of a map
        parts = name.split(" › ")  # a label: `s › item 1 › ok`, `s › parallel › a › ask`
        last = parts[-2] if len(parts) > 1 and parts[-1] == "ask" else parts[-1]
        last = last.removesuffix(" = ask")
        if base is not None and base.group(1) in names:
            nests = depths.get(base.group(1), set())
            _check_depth(name, base.group(1), {len(kinds) for kinds in nests})
            _check_round_zero(name, nests)
            continue
        if " › " in name and last in names:
            continue
        if "/" in name and name.split("/", 1)[0] in firsts:
            continue
        if name not in names | paths:
            asks = ", ".join(sorted(names) or sorted(paths)) or "none"
            raise InputError(
                f"answer for {name!r}: no `ask` of the flow is named so (the `let` its answer "
                f"is bound to, its stage, or its step path); its asks: {asks}"
            )
    _check_answer_values(plan, answers)


def _check_answer_values(plan: Plan, answers: Mapping[str, Any]) -> None:
    """Raise :class:`InputError` for an answer that the ``ask`` it answers would refuse, before
    any step runs: its value checked as the run checks it (:func:`checked_answer`: the same
    message), against each ask of ``plan`` (and the plans it calls) whose type and choices the
    plan writes as they are — a schema or choices rendered from a ``{{ … }}`` template is
    checked when it is asked; a question's templates are shown as ``…``. The message names the
    ask as the `.flow` writes it (``approve › ok = ask``) and where (docs/reference/cli.md
    "flowc run --answer")."""
    for one in [plan, *(plan.plans or {}).values()]:
        for path, step in one.iter_steps():
            if step.tool_name != "ask":
                continue
            fields = step.input if isinstance(step.input, dict) else {}
            question, schema, choices = (fields.get(k) for k in ("question", "schema", "choices"))
            if "{{" in json.dumps([schema, choices], default=str):
                continue  # known only as the run goes
            # a question with `${…}` in it: its text, the values left out (`Ship …?`)
            question = _TEMPLATE.sub("…", str(question))
            let, stage = step.meta.get("name"), step.meta.get("stage")
            given = [
                n for n in answers
                if n == path or (let and _answer_base(n) == let)
            ]  # fmt: skip
            if not given and isinstance(stage, str) and stage in answers:
                given.append(stage)
            request = AskRequest(question, schema, choices, path, [])
            for name in given:
                try:
                    checked_answer(request, answers[name])
                except InputError as e:
                    label = f"{stage} › {f'{let} = ' if let else ''}ask" if stage else path
                    source = step.meta.get("source")
                    where = f"`{label}` at {source}" if source else f"`{label}`"
                    raise InputError(
                        f"{e} (the answer given for {name}, to {where}); nothing was run"
                    ) from None


#: A ``{{ … }}`` template in a plan's text
_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)


def _answer_base(name: str) -> str:
    """The ``let`` an answer NAME names: ``ok`` of ``ok``, ``ok[1]`` and ``s › item 1 › ok``."""
    return name.split(" › ")[-1].removesuffix(" = ask").split("[", 1)[0]


def _check_depth(name: str, let: str, depths: set[int]) -> None:
    """Raise :class:`InputError` when ``name`` (``ok[1][2]``) gives ``let``'s ask another
    number of indices than the maps and loops it is asked in (``depths``)."""
    given = name.count("[")
    if given in depths:
        return
    if not depths or depths == {0}:
        where = "is asked once, not in a map or a loop: answer it as " + repr(let)
    else:
        forms = " or ".join(repr(let + "[N]" * d) for d in sorted(depths) if d)
        inner = max(depths)
        nested = "a map or loop" if inner == 1 else f"{inner} nested maps or loops"
        where = f"is asked in {nested}, an index each: answer it as {forms}"
    raise InputError(f"answer for {name!r}: the ask of `let {let}` {where}")


def _check_round_zero(name: str, nests: set[tuple[str, ...]]) -> None:
    """Raise :class:`InputError` when an index of ``name`` (``ok[0][0]``) that stands for a
    ``loop``'s round in every nesting its ask has (``nests``: the kinds of the steps it is asked
    in, outermost first) is 0: a loop's rounds count from 1, so no question takes it."""
    given = [int(n) for n in re.findall(r"\[(\d+)\]", name)]
    for i, n in enumerate(given):
        kinds = [nest for nest in nests if len(nest) == len(given)]
        if n == 0 and kinds and all(nest[i] == "loop" for nest in kinds):
            raise InputError(
                f"answer for {name!r}: index {i + 1} is a `loop`'s round, and rounds count "
                "from 1 (round 1 is the first)"
            )


#: An indexed answer name: a `let` and the item/round numbers of a map or loop it is asked in
_INDEXED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[\d+\])+$")


#: The steps whose body is run again, once an item or a round: each adds an index to the name of
#: an ask inside it (`ok[1]`, `ok[0][2]`: hooks.indexed_name)
_REPEATING = frozenset({"map", "reduce", "loop", "filter"})


def _ask_depths(plan: Plan) -> dict[str, set[tuple[str, ...]]]:
    """``{let: {kinds, …}}``: for each ``let`` an ``ask``'s answer is bound to (or `parallel`
    branch it is), the ``map``/``reduce``/``loop``/``filter`` steps it is asked in, outermost
    first — those of its own plan and those of the steps calling that plan (``plan__NAME``),
    from ``plan`` down; their number is the number of indices its name takes."""
    plans = {plan.name: plan, **dict(plan.plans or {})}
    out: dict[str, set[tuple[str, ...]]] = {}
    todo: list[tuple[str, tuple[str, ...]]] = [(plan.name, ())]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        key = todo.pop()
        one = plans.get(key[0])
        if key in seen or one is None or len(key[1]) > 64:
            continue
        seen.add(key)
        tools = dict(one.iter_steps())
        for path, step in tools.items():
            parts = path.split("/")
            inside = tuple(
                up.tool_name
                for i in range(1, len(parts))
                if (up := tools.get("/".join(parts[:i]))) is not None and up.tool_name in _REPEATING
            )
            kinds = key[1] + inside
            up = tools.get("/".join(parts[:-1]))
            if step.tool_name == "ask" and step.meta.get("name"):
                out.setdefault(str(step.meta["name"]), set()).add(kinds)
            elif step.tool_name == "ask" and up is not None and up.tool_name == "parallel":
                out.setdefault(parts[-1], set()).add(kinds)  # `a: ask …`, named as a `let`
            elif step.tool_name.startswith("plan__"):
                todo.append((step.tool_name.removeprefix("plan__"), kinds))
    return out


def _prepare(
    target: str | os.PathLike[str] | Plan,
    config: Config | str | os.PathLike[str] | None,
    catalog: Any,
) -> tuple[Plan, Config, Catalog | None]:
    """What :func:`run` does before its first await, on a worker thread: ``target`` loaded (a `.flow` compiled), the configuration read and, unless
    ``catalog`` is given, the catalog built (for a catalog built here whose run never starts,
    the MCP servers are not started yet: they connect on first use). Raises as :func:`load`,
    :func:`agentflow.runtime.config.load_config` and :func:`build_catalog` do."""
    plan = target if isinstance(target, Plan) else load(target)
    if not isinstance(config, Config):
        config = read_config(_fspath(config), near=config_near(target))
    return plan, config, build_catalog(config, plan=plan) if catalog is None else None


#: The longest a run waits for what it opened to close (an MCP server that will not stop is
#: terminated by the SDK's own client well within it), in seconds.
CLOSE_LIMIT_S = 15.0


async def _closed(close: Callable[[], Any]) -> None:
    """``await close()`` shielded from cancellation, within :data:`CLOSE_LIMIT_S`: a run that
    is cancelled — a task cancelled under an anyio cancel scope, as an MCP server's request
    handler is, is cancelled again at each await — still closes its MCP connections (their
    server processes end) and connection pools."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_LIMIT_S):
        await close()


def _own_router(
    config: Config,
    plan: Plan,
    *,
    model: str | None,
    replay: Any,
    record: Any,
    input: Any = None,
) -> Any:
    """The model router :func:`run` makes when it is given none: the test model for ``model``,
    a replay of ``replay``, else the configured models (recording to ``record``). Raises
    :class:`ConfigError` for a bad ``model`` option, or a plan that needs a model when none is
    configured or its key is missing — of a model computed from ``input`` alone
    (``model "${input.m}"``: :func:`~agentflow.runtime.agent_step.input_models`) too."""
    if model is not None:
        try:
            seed, call_tools = parse_model_option(model, "model")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return test_router(config, seed, call_tools=call_tools)
    if replay is not None:
        return ReplayRouter(replay, config)
    if plan_needs_model(plan):
        refused = plan_model_refusal(config, plan)
        if refused is not None:
            raise ConfigError(refused)
        refs = (*plan_model_refs(config, plan), *input_models(plan, input or {}))
        missing = missing_key_message(config, refs)
        if missing:  # every provider the agents use, not only the chat role's
            raise ConfigError(missing)
    if record is not None:
        return recording_router(config, record)
    return ModelRouter(config)


async def _run_durable(
    target: Any, plan: Plan, input: Any, context: Any, config: Config, **kw: Any
) -> RunResult:
    if isinstance(target, str | os.PathLike) and Path(target).suffix != ".flow":
        # a plan file: its text as read again here, and the plan loaded from that very text
        text, file = plan_text(Path(target))
        recorded = load_plan_text(text, file)  # what a resumed process will load
    else:
        # a `.flow` (compiled once, by `_prepare`) or a loaded plan: its canonical YAML is
        # recorded for a resumed process, and the plan already loaded runs here — loading
        # that text again gives an equal plan (tests/runtime/durable: the round trip)
        text, recorded = dump_plan(plan), plan
        named = isinstance(target, str | os.PathLike)
        file = str(Path(target)) if named else plan.source_file or "<plan>"
    own_database = kw.pop("database")
    url = durable_runs.database_for(config, own_database)
    # where the run is, for the commands that take its id from any directory (run_index.py)
    started = kw.get("on_start")

    def on_start(run_id: str) -> None:
        remember_run(run_id, url, config.path, own=own_database is not None)
        if started is not None:
            started(run_id)

    kw["on_start"] = on_start
    replay = kw.pop("replay")
    model = kw.pop("model")
    own_engine = (
        not durable_runs.launched()
    )  # the engine is stopped again when this call started it
    try:
        if input is None and kw.get("reuse"):
            # no input given: the reused run's, as the console's "run the edited file again"
            reused = await durable_runs.recorded_spec(url, kw["reuse"])
            input = durable_runs.reused_input(kw["reuse"], reused)  # never one that lost a secret
        run_id, result = await durable_runs.run_durable(
            recorded,
            text,
            input,
            context,
            url=url,
            plan_file=file,
            config_path=str(config.path) if config.path else None,
            replay=str(Path(replay).resolve()) if replay else None,
            model=model,
            **kw,
        )
    finally:
        if own_engine:
            durable_runs.shutdown()
    result.run_id = run_id
    return result


async def resume_run(
    run_id: str,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    database: str | None = None,
    trace: str | os.PathLike[str] | None = None,
    telemetry: bool | str | None = None,
    sinks: Sequence[Sink] = (),
    on_waiting: Callable[[list[Any]], None] | None = None,
) -> RunResult:
    """Continue durable run ``run_id`` after its process stopped (docs/durable.md): recorded
    steps are replayed, the rest runs here; ``trace``: events are added to this file;
    ``telemetry``: as :func:`run`'s, the spans go into the run's recorded trace; ``sinks``:
    more event sinks (the console of ``flowc resume``); ``on_waiting(questions)``: called once
    with the questions the run already waits on.  What ``flowc resume`` does.  Raises
    :class:`InputError` for an unknown run or one still running."""
    if not isinstance(config, Config):
        config = read_config(_fspath(config))
    settings = settings_for(config, telemetry)
    all_sinks: list[Any] = list(sinks)
    if trace is not None:
        all_sinks.append(JsonlSink(os.fspath(trace), append=True))
    result = await durable_runs.resume(
        durable_runs.database_for(config, database),
        run_id,
        sinks=all_sinks,
        telemetry=settings,
        on_waiting=on_waiting,
    )
    result.run_id = run_id
    return result


def resume_run_sync(
    run_id: str,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    database: str | None = None,
    trace: str | os.PathLike[str] | None = None,
    telemetry: bool | str | None = None,
    sinks: Sequence[Sink] = (),
    on_waiting: Callable[[list[Any]], None] | None = None,
) -> RunResult:
    """:func:`resume_run` for synchronous callers, on :func:`agentflow.runtime.interrupt.run`'s
    loop as :func:`run_sync`: a first SIGINT / SIGTERM stops the resumed run as it stops a
    run (its steps in flight cancelled, ``run_finished`` in its trace, the run recorded
    ``aborted``) and :class:`agentflow.errors.Interrupted` carries its result; what ``flowc
    resume`` does (docs/durable.md)."""
    return interrupt.run(
        resume_run(
            run_id, config=config, database=database, trace=trace, telemetry=telemetry,
            sinks=sinks, on_waiting=on_waiting,
        )
    )  # fmt: skip


def run_sync(
    target: str | os.PathLike[str] | Plan,
    input: Any = None,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
    answers: Mapping[str, Any] | None = None,
) -> RunResult:
    """:func:`run` for synchronous callers, with the same keyword options (each spelled out, so
    a misspelt one is a type error and a ``TypeError`` before anything runs): runs its own
    (stock asyncio) event loop with :func:`agentflow.runtime.interrupt.run`, where
    SIGINT/SIGTERM stop the run gracefully (:class:`agentflow.errors.Interrupted` carries the
    partial result)."""
    return interrupt.run(
        run(
            target, input, config=config, workspace=workspace, trace=trace, sinks=sinks,
            hooks=hooks, catalog=catalog, router=router, record=record, replay=replay,
            shape_cache=shape_cache, on_partial=on_partial, telemetry=telemetry, model=model,
            durable=durable, run_id=run_id, reuse=reuse, ask_again=ask_again,
            database=database, fleet=fleet, on_start=on_start, answers=answers,
        )
    )  # fmt: skip


def stopped_summary(result: RunResult, plan: Plan | None = None) -> str:
    """What a stopped run (``Interrupted.result``, status ``aborted``) got, in one line in the
    `.flow`'s terms (docs/reference/cli.md "Ctrl-C / SIGTERM"): ``steps finished: prep ›
    user__load; measure › map  m.flow:5:3: 1 of 3 items finished (item 0)`` — the finished
    top-level steps by their labels (a hand-written plan's by step id; ``none``), then each map
    stopped with finished items (``result.partial``), their indices as ranges (``items 0-4,
    7``), each loop's rounds, reduce's folded items and parallel's finished branches. ``plan``: the plan that ran (its steps' labels), else the step ids show."""
    labels = durable_runs.Labels(plan)
    done = ", ".join(labels.label(step) or step for step in result.results) or "none"
    parts = [f"steps finished: {done}"]
    for path, entry in result.partial.items():
        where = str(entry.get("label") or labels.label(path) or path)
        if entry.get("source"):
            where += f"  {entry['source']}"
        parts.append(f"{where}: {_finished(entry)}")
    return "; ".join(parts)


def _finished(entry: dict[str, Any]) -> str:
    """What one ``RunResult.partial`` entry finished, in words: ``1 of 3 items finished (item
    0)``, ``2 of 5 rounds finished``, ``3 of 4 items folded (items 0-2)``, ``2 of 3 branches
    finished (a, b)``."""
    of, kind = entry.get("of"), entry.get("kind")
    if kind == "loop":
        rounds = int(entry.get("rounds") or 0)
        return f"{rounds} of {of} round{'' if of == 1 else 's'} finished"
    if kind == "reduce":
        folded = int(entry.get("folded") or 0)
        noun = "item" if folded == 1 else "items"
        return f"{folded} of {of} items folded ({noun} {_ranges(list(range(folded)))})"
    if kind == "parallel":
        names = list(entry.get("branches") or {})
        return f"{len(names)} of {of} branches finished ({', '.join(names)})"
    items = sorted(entry.get("items") or {})
    noun = "item" if len(items) == 1 else "items"
    return f"{len(items)} of {of} items finished ({noun} {_ranges(items)})"


def _ranges(indices: list[int]) -> str:
    """Sorted indices as text, three or more in a row as a range: ``[0, 1, 2, 4, 5]`` →
    ``0-2, 4, 5``."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    out: list[str] = []
    for run_ in runs:
        out.extend([f"{run_[0]}-{run_[-1]}"] if len(run_) >= 3 else map(str, run_))
    return ", ".join(out)


def load_config(
    path: str | os.PathLike[str] | None = None, *, near: str | os.PathLike[str] | None = None
) -> Config:
    """The configuration of ``path`` (a flow.toml), or of the nearest flow.toml from ``near``'s
    directory upward (the `.flow` or plan file a command acts on; None: the current
    directory), or the defaults (docs/reference/configuration.md "Which flow.toml").  Raises
    :class:`agentflow.errors.ConfigError`."""
    return read_config(None if path is None else os.fspath(path), near=near)


def config_near(target: str | os.PathLike[str] | Plan | None) -> str | None:
    """Where the search for ``target``'s flow.toml starts (docs/reference/configuration.md
    "Which flow.toml"): the `.flow` or plan file's path, a loaded plan's ``source_file``, or
    None (the current directory) for a plan from memory."""
    if target is None:
        return None
    if isinstance(target, Plan):
        return target.source_file
    return os.fspath(target)


def telemetry_settings(config: Config, telemetry: bool | str | None) -> TelemetrySettings | None:
    """The OpenTelemetry export settings of a run under ``config`` for ``flowc run --otel``'s
    choice ``telemetry`` (an endpoint URL, True, False, or None: as ``[telemetry]`` says);
    None: no export (docs/observability.md).  Raises ConfigError."""
    return settings_for(config, telemetry)


def shape_cache() -> ShapeCache:
    """The shape cache of this user (``flowc cache``; ``AGENTFLOW_CACHE_DIR`` or the default
    directory): its ``all(tools)``, ``clear(tool)`` and ``path``."""
    return ShapeCache()


def shape_cache_note() -> str | None:
    """A note when ``AGENTFLOW_CACHE_DIR`` is set but empty (it counts as unset), else None."""
    if os.environ.get(CACHE_ENV) == "":
        return f"{CACHE_ENV} is empty, so it is ignored (the default cache directory is used)"
    return None


def console_sink(file: str | None = None) -> ConsoleSink:
    """The terminal's progress view of a run on stderr (live on a TTY; one line an event
    otherwise), in the `.flow`'s terms (docs/reference/events.md); each step's `.flow`
    location is shown from the current directory, through the directory of the run's file
    (``sub/x.flow:3:5``).  ``file``: the run's flow as it opens from here, when the run does
    not say it (a resumed run: :func:`~agentflow.api_durable.recorded_run`'s ``plan_file``)."""
    return ConsoleSink(file=file)


def jsonl_sink(path: str | os.PathLike[str], *, append: bool = False) -> JsonlSink:
    """A sink writing every event as one JSON line to ``path`` (``--trace``; ``append``: add to
    its end, as a resumed run or a worker does)."""
    return JsonlSink(os.fspath(path), append=append)


def callback_sink(fn: Callable[[Event], Any], kinds: Iterable[str] | None = None) -> CallbackSink:
    """A sink calling ``fn(event)`` for every event (of the ``kinds`` given, when given)."""
    sink = CallbackSink(fn)
    if kinds is not None:
        sink.kinds = frozenset(kinds)  # type: ignore[attr-defined]
    return sink


def terminal_hooks(console: ConsoleSink | None = None) -> Hooks:
    """Hooks whose `ask` steps a person at the terminal answers when stdin is one (the
    ``console``'s live view paused while asking), else each ask's ``when_unanswered``."""
    pause = console.paused if console is not None else None
    return Hooks(interlocutor=default_interlocutor(pause=pause))


def enable_watchdog(on: bool = True) -> None:
    """Let the runs this process drives on its main thread be ended even when a tool holds the
    GIL (runtime/watchdog.py); the CLI turns it on for a command and off after it."""
    interrupt.enable_watchdog(on)


async def work(
    url: str,
    name: str,
    *,
    trace: str | os.PathLike[str] | None = None,
    telemetry: TelemetrySettings | None = None,
) -> None:
    """Be worker ``name`` of the fleet on durable database ``url`` until cancelled (``flowc
    worker``; docs/durable.md "Fleet"): take map items, runs and rate-limited model calls from
    its queues; ``trace``: events added to this JSON Lines file.  Raises ConfigError."""
    sinks: list[Any] = [JsonlSink(os.fspath(trace), append=True)] if trace else []
    await durable_runs.work(url, name, sinks=sinks, telemetry=telemetry)
