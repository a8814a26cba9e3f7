"""Exploration: ``flowc test --explore N FILE`` (docs/reference/testing.md, "Exploring a flow"):
run a flow N times against the built-in test model with varied generated answers and report
which branches, ``require``/``verify`` checks and map paths were exercised, and which generated
answers made the run fail. Layer: api (it compiles and runs)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.api_run import run
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.contracts import contract_for
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import LoweringError, lower
from agentflow.compiler.render import render_text
from agentflow.core.vocabulary import UNANSWERED_FAIL
from agentflow.errors import ErrorInfo, FlowError
from agentflow.flowtest_case import _plan_tool_name, virtual_sleep
from agentflow.flowtest_report import _where
from agentflow.flowtest_steps import plan_steps
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.config import Config, find_config, load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.expressions import evaluate
from agentflow.runtime.hooks import NO_ANSWER, AskRequest, Hooks
from agentflow.runtime.models.router import test_router
from agentflow.runtime.models.test_model import GenerationError, generate_value
from agentflow.runtime.tools.catalog import Catalog, Tool

__all__ = ["ExploreFailure", "ExploreReport", "ExploreSite", "explore"]

#: plan step → (the site kind reports name, the outcomes it may have, in the order listed)
_SITES: dict[str, tuple[str, tuple[str, str]]] = {
    "decide": ("if", ("then", "else")),
    "exit": ("require", ("held", "failed")),
    "verify": ("verify", ("passed", "failed")),
    "map": ("map", ("empty", "items")),
    "filter": ("filter", ("empty", "items")),
}


@dataclass
class ExploreSite:
    """A place of the flow whose outcome varies with the answers: an ``if`` (``then``/``else``),
    a ``require`` (``held``/``failed``), a ``verify`` (``passed``/``failed``), a ``map``
    (``empty``/``items``: whether an item ran), a ``filter`` (``empty``/``items``: whether any
    item was kept). ``source`` is its ``file:line:col``; ``counts`` maps each outcome to
    the number of runs that took it."""

    source: str
    kind: str
    counts: dict[str, int]

    @property
    def missed(self) -> list[str]:
        """The outcomes no run took."""
        return [o for o, n in self.counts.items() if n == 0]


@dataclass
class ExploreFailure:
    """A run that failed: its ``seed``, error ``code``, ``message``, ``source`` (where, when
    known) and the generated ``answers`` (``[(agent, JSON text)]``) that led there."""

    seed: int
    code: str
    message: str
    source: str | None
    answers: list[tuple[str, str]]


@dataclass
class ExploreReport:
    """What :func:`explore` returns: ``runs`` made, the ``sites`` with their outcome counts, the
    ``failures``; ``error`` is set (and the rest empty) when the file does not check."""

    file: str
    runs: int = 0
    sites: list[ExploreSite] = field(default_factory=list)
    failures: list[ExploreFailure] = field(default_factory=list)
    error: str | None = None


def explore(path: str | os.PathLike[str], runs: int) -> ExploreReport:
    """Run the flow at ``path`` ``runs`` times with generated answers (docs/reference/testing.md
    "Exploring"): agents answer with the test model, seeds ``0 … runs-1``; every tool answers a
    value generated from its declared result type (nothing touches the disk or the network), every
    ``ask`` a value of its type or one of its choices (so the runs take both answers of a
    ``bool``, a default or not); the input is, in turn, each ``input`` of the file's tests, else one generated from the input type.
    Reports how often each ``if`` branch, ``require``, ``verify`` and ``map`` outcome happened and
    which answers made a run fail. Never raises for a mistake in the file (``error`` says it)."""
    return asyncio.run(_explore(Path(path), runs))


async def _explore(file: Path, runs: int) -> ExploreReport:
    import random

    shown = str(file)
    report = ExploreReport(shown)
    try:
        text = read_source(file)
    except (OSError, FlowError, UnicodeDecodeError) as e:
        report.error = f"{shown}: cannot read: {e}"
        return report
    result = check_source(text, shown)
    if not result.ok:
        report.error = render_text(result.errors, {shown: text}, color=False).rstrip()
        return report
    try:
        data = lower(result, file=shown, source=text)
    except LoweringError as e:
        report.error = f"{_where(shown, e.span)}: {e.message}"
        return report
    _unanswerable_asks(data)
    plan = load_plan_data(data, shown)
    sites: dict[str, ExploreSite] = {}
    for step in plan_steps(data):
        entry = _SITES.get(step.get("tool_name", ""))
        source = (step.get("meta") or {}).get("source")
        if entry is None or source is None or (step.get("meta") or {}).get("kind"):
            continue  # (a filter's gates: its own work, counted as the filter)
        kind, outcomes = entry
        if kind == "require" and "when" not in (step.get("input") or {}):
            continue
        sites.setdefault(source, ExploreSite(source, kind, dict.fromkeys(outcomes, 0)))
    report.sites = sorted(sites.values(), key=lambda s: _source_key(s.source))
    schemas = {}
    for name, sig in result.tool_decls.items():
        try:
            schemas[_plan_tool_name(name, sig)] = contract_for(sig.returns, result.env)
        except Exception:  # noqa: BLE001 - a type with no schema: any value
            schemas[_plan_tool_name(name, sig)] = {}
    inputs = []
    for t in result.tests:
        if not t.inputs:
            continue
        if t.cases is not None and t.case is not None:
            read = absent_reads_null(t.inputs[0].value, result)  # as `flowc test` reads it
            for c in evaluate(t.cases, {}):
                inputs.append(evaluate(read, {t.case.name: c}))
        else:
            inputs.append(evaluate(t.inputs[0].value, {}))
    for seed in range(runs):
        rng = random.Random(seed)
        if inputs:
            inp = inputs[seed % len(inputs)]
        else:
            try:
                inp = generate_value(data.get("input_schema") or {"type": "object"}, rng)
            except GenerationError:
                inp = {}
        taken: set[tuple[str, str]] = set()
        await _explore_once(file, plan, result, schemas, seed, inp, sites, report, taken)
        for source, outcome in taken:  # a run counts once per outcome it took at a place
            sites[source].counts[outcome] += 1
        report.runs += 1
    return report


def _unanswerable_asks(data: dict[str, Any]) -> None:
    """Give each ``ask`` step of plan ``data`` with neither ``default`` nor ``else fail`` the
    failure exploring says when it cannot generate an answer of the ask's type (a run's own
    advice, ``--answer`` and ``flowc answer``, is no option of ``flowc test --explore``)."""
    for st in plan_steps(data):
        given = st.get("input") if st.get("tool_name") == "ask" else None
        if not isinstance(given, dict) or given.get("when_unanswered") != {"fail": UNANSWERED_FAIL}:
            continue
        question = str(given.get("question") or "").strip()
        first = question.splitlines()[0] if question else ""
        shown = f' "{first}{"…" if first != question else ""}"' if "{" not in first else ""
        given["when_unanswered"] = {
            "fail": f"exploring cannot generate an answer to the question{shown} from its "
            "type: give the ask a default, or test it with `stub ask NAME returns VALUE`"
        }


def _source_key(source: str) -> tuple[str, int, int]:
    parts = source.rsplit(":", 2)
    try:
        return (parts[0], int(parts[1]), int(parts[2]))
    except (IndexError, ValueError):
        return (source, 0, 0)


async def _explore_once(
    file: Path,
    plan: Any,
    result: Any,
    schemas: dict[str, Any],
    seed: int,
    inp: Any,
    sites: dict[str, ExploreSite],
    report: ExploreReport,
    taken: set[tuple[str, str]],
) -> None:
    """One run of the exploration: adds ``(site source, outcome)`` to ``taken`` for each outcome
    the run took (a place in a loop's body, reached once a round, is counted by the caller once
    per run and outcome), and the run's failure to ``report``."""
    import random

    def generated_tool(name: str, schema: Any) -> Any:
        async def answer(args: dict[str, Any], ctx: Any) -> Any:
            key = json.dumps([seed, name, args], sort_keys=True, default=str)
            try:
                return generate_value(schema, random.Random(key))
            except GenerationError:
                return None

        return Tool(name, f"generated {name}", {"type": "object"}, answer, source="explore")

    async def generated_answer(request: AskRequest) -> Any:
        # an `ask` is answered as a tool is: a value of its type (one of its choices), drawn
        # for this run and this place, so the runs take both answers of a `bool`, each member
        # of a union of literals … (a default is no answer of its own: one value of the type)
        rng = random.Random(json.dumps([seed, "ask", request.step_path]))
        try:
            if request.choices:
                value = rng.choice(list(request.choices))
            else:
                value = generate_value(request.schema or {"type": "string"}, rng)
        except GenerationError:
            return NO_ANSWER  # its default, else the failure `_unanswerable_asks` gave it
        where = started.get(request.step_path, ("", ""))[1] or request.step_path
        answers.append((f"the ask at {where}", json.dumps(value, ensure_ascii=False)))
        return value

    catalog = Catalog(generated_tool(name, schema) for name, schema in schemas.items())
    config: Any = Config()
    toml = find_config(file)  # the flow.toml a run of the file reads
    if toml is not None:
        try:
            config = load_config(toml, env={})
        except FlowError:
            config = Config()
    started: dict[str, tuple[str, str]] = {}  # path → (tool_name, source)
    maps: list[str] = []  # paths of the map steps started
    mapped: set[str] = set()  # … of those that started an item
    counted: set[str] = set()  # … of those that finished
    checked: list[str] = []  # paths of the `require` steps that finished
    branched: set[str] = set()
    answers: list[tuple[str, str]] = []
    agent_of: dict[str, str] = {}

    def site(path: str) -> ExploreSite | None:
        # the site of a step of the site's own kind only: an outlined rest-of-block (the call
        # of a `plan__…` sub-plan) carries the source of its first statement, which may be the
        # next `if`, `require` or `map` — counting it too counted that site twice
        info = started.get(path)
        if info is None:
            return None
        s, entry = sites.get(info[1]), _SITES.get(info[0])
        return s if s is not None and entry is not None and entry[0] == s.kind else None

    def on_event(event: Any) -> None:
        d, path = event.data, event.path or ""
        if event.kind == "step_started":
            started[path] = (d.get("tool_name", ""), d.get("source") or "")
            for m in maps:
                if path != m and path.startswith(m) and path[len(m)] in "[/":
                    mapped.add(m)
            if d.get("tool_name") == "map":
                maps.append(path)
            parent, _, leg = path.rpartition("/")
            if leg in ("then", "else") and parent in started:
                branched.add(parent)
                s = site(parent)
                if s is not None and s.kind == "if":
                    taken.add((s.source, leg))
            if d.get("tool_name") == "agent":
                agent_of[path] = f"the agent at {d.get('source') or path}"
        elif event.kind == "step_finished":
            s = site(path)
            if s is None:
                return
            value = d.get("result")
            if s.kind == "if" and path not in branched:
                taken.add((s.source, "else"))
            elif s.kind == "require":
                checked.append(path)  # held, unless the run failed right there
            elif s.kind == "verify" and isinstance(value, dict):
                taken.add((s.source, "passed" if value.get("passed") else "failed"))
            elif s.kind == "filter" and isinstance(value, list):
                taken.add((s.source, "items" if value else "empty"))
            elif s.kind == "map":
                ran = path in mapped or (isinstance(value, list) and bool(value))
                taken.add((s.source, "items" if ran else "empty"))
                counted.add(path)
        elif event.kind == "model_call":
            reply = d.get("reply") or {}
            if reply.get("text"):
                who = next(
                    (a for p, a in agent_of.items() if path == p or path.startswith(p + "/")),
                    path,
                )
                answers.append((who, str(reply["text"])))

    router = test_router(config, seed)
    try:
        outcome = await run(
            plan,
            inp,
            config=config,
            workspace=file.parent,
            catalog=catalog,
            router=router,
            shape_cache=False,
            telemetry=False,
            sinks=[CallbackSink(on_event)],
            # a `sleep` takes no time here either; an `ask` is answered with a generated value
            hooks=Hooks(interlocutor=generated_answer, sleeper=virtual_sleep),
        )
    except FlowError as e:
        report.failures.append(ExploreFailure(seed, "validation", str(e), None, answers))
        return
    finally:
        await router.aclose()
    for m in mapped - counted:  # a map whose items ran but that did not finish
        s = site(m)
        if s is not None:
            taken.add((s.source, "items"))
    error: ErrorInfo | dict[str, Any] = outcome.error or {}
    where = error.get("step_path")
    for p in checked:
        s = site(p)
        if s is not None and p != where:
            taken.add((s.source, "held"))
    if outcome.ok:
        return
    s = site(where) if isinstance(where, str) else None
    if s is not None and s.kind == "require":
        taken.add((s.source, "failed"))
    report.failures.append(
        ExploreFailure(
            seed,
            str(error.get("code")),
            str(error.get("message")),
            error.get("source") or (s.source if s is not None else None),
            answers,
        )
    )
