"""What a durable run starts with, and what a process rebuilds from it, for both engines
(DBOS and Temporal): the run id, the recorded input (its spec), the run context built from
it, the run's trace identity, the root's run and the telemetry of a process.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.redaction import SECRETS
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, InputError, RunError
from agentflow.ir.models import Step, plan_nodes
from agentflow.runtime.config import load_config
from agentflow.runtime.context import RunContext
from agentflow.runtime.durable.asking import recorded_plans, run_ask
from agentflow.runtime.durable.records import (
    held_secret,
    lost_start_message,
    start_lost_secret,
)
from agentflow.runtime.durable.run_info import untaken_message
from agentflow.runtime.executor import run_plan
from agentflow.runtime.model_needs import model_problem, plan_needs_model
from agentflow.runtime.models.cassette import ReplayRouter
from agentflow.runtime.models.router import ModelRouter, test_router
from agentflow.runtime.models.test_model import parse_model_option
from agentflow.runtime.telemetry import OtelSink, RunSinks
from agentflow.runtime.telemetry_settings import INSTALL_HINT, durable_trace, otel_available
from agentflow.runtime.tools.build import build_catalog

if TYPE_CHECKING:
    from agentflow.ir.models import Plan
    from agentflow.runtime.durable.dbos_engine import Runtime


__all__ = [
    "close_context",
    "context_from_spec",
    "new_run_id",
    "per_run",
    "plan_limits",
    "process_telemetry",
    "refuse_lost_start",
    "refuse_secret",
    "run_root",
    "run_spec",
    "trace_of",
    "untaken_message",
]


def new_run_id() -> str:
    """A fresh run id: ``run-`` + UTC date and time + 6 random hex digits."""
    return time.strftime("run-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


#: The roles a durable question (``flowc ask --durable``) calls, whose keys it needs.
ASK_ROLES = ("chat", "planner", "solver")


def context_from_spec(
    spec: dict[str, Any], plan: Plan, extra_sinks: list[Any] | None
) -> RunContext:
    """The :class:`~agentflow.runtime.context.RunContext` of a run from its recorded input
    ``spec`` (configuration, catalog, model router; ``extra_sinks``: the process's), for a
    process that did not start the run (engine-neutral: DBOS and Temporal build it alike)."""

    refuse_lost_start(None, spec, "resumed")
    config = load_config(spec.get("config"))
    # a durable question offers the plans it recorded (asking.py), not the directory's now
    catalog = build_catalog(config, plan=plan, plans=recorded_plans(spec))
    router: Any
    if spec.get("model"):  # `--model test[:SEED]`: the built-in test model again
        seed, call_tools = parse_model_option(spec["model"])
        router = test_router(config, seed, call_tools=call_tools)
    elif spec.get("replay"):
        router = ReplayRouter(spec["replay"], config)
    else:
        # what `flowc run` refuses before its first step is refused here, before the run is
        # taken up (execution.py builds this first): a key unset in this environment would
        # send the run's model calls without one and end the run for good
        asking = "ask" in spec
        if asking or plan_needs_model(plan):
            needs = plan_needs_model(plan)
            roles = ASK_ROLES if asking else ("chat",)
            problem = model_problem(config, roles, plan=plan if needs and not asking else None)
            if problem is not None:
                raise ConfigError(problem)
        router = ModelRouter(config) if config.has_model() else None
    return RunContext(
        catalog=catalog,
        router=router,
        config=config,
        workspace=Path(spec.get("workspace") or Path.cwd()),
        sinks=tuple(per_run(extra_sinks or ())),
    )


def per_run(sinks: Any) -> list[Any]:
    """The process's sinks for one more run: a factory of per-run sinks (the telemetry of
    ``flowc resume`` / ``flowc worker``, :class:`~agentflow.runtime.telemetry.RunSinks`)
    makes this run's own."""
    return [s.for_run() if hasattr(s, "for_run") else s for s in sinks]


def trace_of(run_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The trace identity recorded with run ``run_id`` (``spec["trace"]``), else (a run
    recorded before it was) the one derived from its id and start."""

    recorded = spec.get("trace")
    if isinstance(recorded, dict) and recorded.get("trace_id") and recorded.get("span_id"):
        return recorded
    return durable_trace(run_id, spec.get("started") or 0.0)


async def run_root(rt: Runtime) -> dict[str, Any]:
    """Run the root of a durable run (inside its ``agentflow.run`` workflow): its plan, or for a
    durable question (``spec["ask"]``) the question's agent loop (asking.py)."""

    try:
        if "ask" in rt.spec:  # a question (`flowc ask --durable`): the agent loop, not the plan
            result = await run_ask(rt)
        else:
            result = await run_plan(
                rt.plan, rt.spec.get("input"), rt.ctx, effects=rt.effects, ending=rt.effects.ending
            )
    finally:
        if rt.owned:
            await close_context(rt.ctx)
    out = result.to_dict()
    out["reused"] = len(rt.effects.reused)
    return out


async def close_context(ctx: RunContext) -> None:
    if ctx.catalog is not None:
        with contextlib.suppress(Exception):
            await ctx.catalog.aclose()
    close = getattr(ctx.router, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def plan_limits(plan: Plan) -> set[int]:
    """Every literal map ``concurrency`` of ``plan`` and its sub-plans (1 for a templated one)."""
    found: set[int] = set()
    for node in plan_nodes(plan):
        if isinstance(node, Step) and node.tool_name in ("map", "parallel"):
            c = (node.input or {}).get("concurrency")
            found.add(c if isinstance(c, int) and not isinstance(c, bool) else 0)
    return found


def run_spec(
    run_id: str,
    plan_text: str,
    plan_file: str | None,
    input: Any,
    config_path: str | None,
    context: RunContext,
    *,
    reuse: str | None,
    ask_again: bool,
    replay: str | None,
    model: str | None,
    fleet: bool,
    ask: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a durable run records when it starts, on every engine: the plan's text and file,
    the input, where ``flow.toml`` is, the workspace, the start time, the reuse/replay/model
    options, and the run's trace context (every process of the run exports into this trace:
    docs/durable.md "Telemetry"; a ``TRACEPARENT`` of the caller is its parent); ``ask``: the
    ``ask`` entry of a durable question (asking.py :func:`ask_spec`)."""

    started = time.time()
    traceparent = next(
        (s.settings.traceparent for s in context.sinks if isinstance(s, OtelSink)),
        os.environ.get("TRACEPARENT"),
    )
    spec: dict[str, Any] = {
        "plan_text": plan_text,
        "plan_file": plan_file,
        "input": input,
        "config": config_path,
        "workspace": str(context.workspace),
        "started": started,
        "reuse": reuse,
        "ask_again": ask_again,
        "replay": replay,
        "model": model,
        "fleet": fleet,
        "trace": durable_trace(run_id, started, traceparent),
    }
    if ask is not None:
        spec["ask"] = ask
    refuse_secret(spec)
    return spec


def refuse_secret(spec: dict[str, Any]) -> None:
    """Raise InputError when what a durable run would record at its start (``spec``: the plan's
    text, the input, a question, the paths) holds a secret — a configured API key, a
    credential's environment value (:mod:`agentflow.core.redaction`).  A secret is never at
    rest, so the record would hold ``***`` where the run had the secret, and a resumed, reused
    or redriven run would run that other program; the run is refused before anything is
    written, naming the input field or the ``.flow`` line and the variable, never the value
    (docs/durable.md "No secret is stored"; docs/decisions.md "A durable run does not start
    with a secret in its plan or input")."""

    if not SECRETS:  # none registered: nothing to look for (a big input is not dumped again)
        return
    held = held_secret(json.dumps(spec, ensure_ascii=False, default=str))
    if held is None:
        return
    places = [where for key, value in spec.items() for where in _secret_places(key, value, spec)]
    raise InputError(
        f"a durable run cannot start with a secret in {_joined(places) or 'its record'}: "
        f"{'they hold' if len(places) > 1 else 'it holds'} {held}. A durable run stores its plan "
        "and input to go on after a crash (flowc resume, --reuse, redrive), and a secret is never "
        "stored: it would go on with *** in its place. Let the tool that needs the secret read it "
        "from its environment, or run without --durable/--run-id (a plain run stores nothing)"
    )


def refuse_missing_workspace(run_id: str, spec: dict[str, Any]) -> None:
    """Raise ConfigError when run ``run_id``'s recorded workspace is no directory here (deleted,
    moved, not mounted): ``flowc resume`` refuses it before it takes the run up, as ``flowc
    run --workspace`` refuses one, and the run stays `stopped` — taken up, its first file tool
    would end it `error` for good (docs/durable.md "Starting, resuming, inspecting")."""
    workspace = spec.get("workspace")
    if workspace and not Path(workspace).is_dir():
        raise ConfigError(
            f"run {run_id} cannot be resumed here: its workspace {workspace} is not a directory "
            f"(deleted or moved?); put it back, then `flowc resume {run_id}`"
        )


def refuse_lost_start(run_id: str | None, spec: dict[str, Any], doing: str) -> None:
    """Raise RunError ``durable_replay_mismatch`` when run ``run_id``'s recorded start ``spec``
    lost a secret as it was written (records.py :func:`start_lost_secret`): ``doing`` it
    (resumed) would run ``***`` where the run had the secret."""
    if start_lost_secret(spec):
        raise RunError(Code.DURABLE_REPLAY_MISMATCH, lost_start_message(run_id, doing))


def _joined(places: list[str]) -> str:
    places = list(dict.fromkeys(places))[:4]
    return ", ".join(places[:-1]) + " and " + places[-1] if len(places) > 1 else "".join(places)


def _secret_places(key: str, value: Any, spec: dict[str, Any]) -> list[str]:
    """Where ``spec[key]`` holds a secret, in the user's terms."""
    if held_secret(json.dumps(value, ensure_ascii=False, default=str)) is None:
        return []
    if key == "input":
        return [_field(path) for path in _secret_paths(value, ())] or ["the input"]
    if key == "plan_text":
        return _plan_lines(str(value), spec.get("plan_file"))
    if key == "ask":
        return ["the question"]
    return [_SPEC_PLACES.get(key, f"the recorded `{key}`")]


#: What the recorded start's other keys are, in the user's terms.
_SPEC_PLACES = {
    "workspace": "the workspace path",
    "config": "the flow.toml path",
    "plan_file": "the .flow file's path",
    "model": "the model option",
    "replay": "the cassette's path",
    "reuse": "the reused run",
    "run_id": "the run id",
}


def _field(path: tuple[str, ...]) -> str:
    return f"input field `{'.'.join(path)}`" if path else "the input"


def _secret_paths(value: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(value, dict):
        out: list[tuple[str, ...]] = []
        for k, v in value.items():
            if held_secret(str(k)) is not None:  # a key: named by its place, not its text
                out.append(path or ("(a key)",))
            else:
                out.extend(_secret_paths(v, (*path, str(k))))
        return out
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, (*path, f"[{i}]"))]
    return [path] if held_secret(json.dumps(value, ensure_ascii=False, default=str)) else []


def _plan_lines(plan_text: str, plan_file: Any) -> list[str]:
    """``FILE line N`` for each line of the plan's source file that holds a secret, else
    ``the plan``."""
    if isinstance(plan_file, str) and plan_file:
        try:
            lines = Path(plan_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        found = [str(n) for n, line in enumerate(lines, 1) if held_secret(line)]
        if found:
            lines_ = "line " + found[0] if len(found) == 1 else "lines " + ", ".join(found[:8])
            return [f"{plan_file} {lines_}"]
    return [f"the plan {plan_file}" if isinstance(plan_file, str) and plan_file else "the plan"]


@contextlib.contextmanager
def process_telemetry(sinks: list[Any] | None, telemetry: Any) -> Any:
    """``sinks`` plus, with ``telemetry`` settings, a factory of per-run OpenTelemetry sinks
    (closed, i.e. flushed, at the end)."""
    factory = None
    if telemetry is not None:
        if not otel_available():
            raise ConfigError(INSTALL_HINT)
        factory = RunSinks(telemetry)
    try:
        yield [*(sinks or []), *([factory] if factory is not None else [])]
    finally:
        if factory is not None:
            factory.close()
