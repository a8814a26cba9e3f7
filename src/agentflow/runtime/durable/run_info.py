"""What a durable run is, seen from outside (docs/durable.md "Runs"): :class:`RunInfo` (its
status, steps in the `.flow`'s terms, cost, questions, error) and :class:`Question` (a question
it waits on), as ``flowc runs``, ``runs show``, ``flowc ui`` and ``api.show_durable_run`` give
them; the same records on every engine (runs.py, temporal_runs.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from agentflow.core.diagnostics import did_you_mean
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, InputError, RunError, run_error_of
from agentflow.runtime.durable.answers import question_key
from agentflow.runtime.durable.records import lost_start_message, start_lost_secret
from agentflow.runtime.hooks import branch_name, indexed_name

if TYPE_CHECKING:
    from agentflow.ir.models import Plan

__all__ = [
    "UNTAKEN_THEN",
    "Question",
    "RunInfo",
    "answer_name",
    "error_text",
    "json_of",
    "no_redrive",
    "no_run_message",
    "plan_of",
    "published_questions",
    "question_path",
    "shown_plan_file",
    "split_closed",
    "found_in",
    "started_in",
    "untaken_message",
    "worker_stopped_message",
]

#: the directory the run a command acts on was started in, when the command found the run
#: through the per-user index of runs (runtime/run_index.py) from another directory: a
#: recorded relative flow path is shown from here (:func:`shown_plan_file`)
started_in: ContextVar[str | None] = ContextVar("started_in", default=None)
#: the SQLite database a run was found in when it was found from another directory (through the
#: index): a hint to run its flow again names it (``--database``), since the current
#: directory's is another
found_in: ContextVar[str | None] = ContextVar("found_in", default=None)


def shown_plan_file(file: str) -> str:
    """A run's recorded flow ``file`` as a path that works from the current directory: as
    recorded unless the run was started elsewhere (:data:`started_in`), then relative to the
    current directory when below it, else absolute."""
    base = started_in.get()
    if base is None or file.startswith("<"):
        return file
    path = os.path.normpath(os.path.join(base, file))
    try:
        here = os.getcwd()
        if path.startswith(here + os.sep):
            return os.path.relpath(path, here)
    except (OSError, ValueError):
        pass
    return path


@dataclass
class Question:
    """A question a durable run waits on: its step path, text, choices and schema."""

    run_id: str
    workflow_id: str
    path: str
    question: str
    choices: list[Any] | None = None
    schema: dict[str, Any] | None = None
    asked_at: float | None = None
    timeout: float | None = None
    #: the question's key among its unit's questions (its operation name, ``PATH/ask#N``)
    key: str = ""
    #: the step in the `.flow`'s terms (``approve › go = ask``), when compiled from one
    label: str | None = None
    #: how a question the run has not taken yet was closed (``RunInfo.answered``): ``answer``
    #: (the accepted ``answer`` below) or ``unanswered``; None while it waits
    closed: str | None = None
    #: the accepted answer of a question closed with ``answer``
    answer: Any = None
    #: its timeout (``asked_at + timeout``) is past and no process took the question up since
    #: (the run is stopped; on Temporal, no worker runs it): an answer given before the run
    #: goes on is still taken, else it goes on unanswered at once (on either engine)
    timed_out: bool = False

    def shown(self) -> str:
        """``approve › go = ask · E2``: the step as the `.flow` names it, then the step path
        (the machine key; a hand-written plan's question: the path alone)."""
        return f"{self.label} · {self.path}" if self.label else self.path

    def names(self) -> frozenset[str]:
        """The `.flow` names that refer to this question (``flowc answer RUN NAME``): the
        ``let`` its answer is bound to (``go`` of ``approve › go = ask``), that ``let`` with the
        numbers of the map items / loop rounds it is asked in (``go[1]`` of ``approve › item 1
        › go = ask``: :func:`indexed_name`), the stage it is asked in (``approve``) and its
        label as printed, whole or without `` = ask`` (``approve › item 1 › go``); none for a
        hand-written plan's question (no label)."""
        if not self.label:
            return frozenset()
        parts = self.label.split(" › ")
        found = {parts[0], self.label, self.label.removesuffix(" = ask")}
        name, eq, _ = parts[-1].partition(" = ")
        if eq:
            found.add(name)
        found |= _branch_of(self.label)  # `a` of `s › parallel › a › ask`, as a let's name
        indexed = indexed_name(self.label)
        if indexed:
            found.add(indexed)
        return frozenset(found)


def answer_name(path: str, label: str | None, others: Iterable[tuple[str, str | None]] = ()) -> str:
    """What the hint ``answer with: flowc answer RUN NAME VALUE`` names the question at step
    ``path`` (labelled ``label``, ``approve › go = ask``) by: the ``let`` its answer is bound to
    (``go``) when that name is the question's alone in the run — no other question of
    ``others`` (the run's other questions as ``(path, label)``, those known: waiting,
    answered, asked before) is bound to that name or has it as its path; an ask a map's items
    or a loop's rounds ask again (an ``item N`` / ``round N`` segment of its label) by its
    :func:`indexed_name` (``go[1]``) on the same terms — else ``path``, which always works
    (docs/reference/cli.md "flowc answer")."""
    if not label:
        return path
    parts = label.split(" › ")
    name, eq, _ = parts[-1].partition(" = ")
    branch = _branch_of(label)
    if branch:  # a `parallel` branch that is an ask: by the branch's name, as a let's
        name, eq = next(iter(branch)), "="
    if not eq or not name:
        return path
    indexed = indexed_name(label)
    if indexed is not None:  # asked again: by its let and item/round numbers (`ok[1]`)
        for other_path, other_label in others:
            if other_path != path and (
                other_path == indexed or (other_label and indexed_name(other_label) == indexed)
            ):
                return path
        return indexed
    for other_path, other_label in others:
        if other_path == path:
            continue
        if other_path == name or (other_label and name in _let_of(other_label)):
            return path
    return name


def _let_of(label: str) -> set[str]:
    """The ``let`` name of an ask's label (``{"go"}`` of ``approve › go = ask``), or the
    `parallel` branch it is (:func:`_branch_of`), or none."""
    name, eq, _ = label.split(" › ")[-1].partition(" = ")
    return {name} if eq else _branch_of(label)


def _branch_of(label: str) -> set[str]:
    """``{"a"}`` for an ask that is branch ``a`` of a `parallel` block
    (:func:`~agentflow.runtime.hooks.branch_name`); else none."""
    branch = branch_name(label)
    return {branch} if branch else set()


def _path_key(path: str) -> list[tuple[int, str]]:
    """A step path's sort key: its numbers as numbers (``E0/do.2`` before ``E0/do.10``)."""
    return [(0, f"{int(p):012d}") if p.isdigit() else (1, p) for p in re.split(r"(\d+)", path)]


def question_path(pending: list[Question], step: str, run_id: str) -> str:
    """The step path ``step`` names among the questions run ``run_id`` waits on
    (``pending``): ``step`` itself when it is one's path; else the one question whose
    :meth:`Question.names` hold it (``decision``, the ``let`` of ``let decision = ask …``, or
    its stage's name); else ``step`` unchanged (no question of that name waits: the caller says
    so, or that it was already answered).  Raises :class:`InputError` when the name fits
    several waiting questions (the same ask in several map items, two asks of one stage),
    listing each with its path (docs/reference/cli.md "flowc answer")."""
    if any(q.path == step for q in pending):
        return step
    named = sorted((q for q in pending if step in q.names()), key=lambda q: _path_key(q.path))
    if len(named) > 1:
        listed = "; ".join(q.shown() for q in named)
        first = named[0]
        others = [(q.path, q.label) for q in pending]
        shown = answer_name(first.path, first.label, others)
        path = f" (or its step path, {first.path})" if shown != first.path else ""
        raise InputError(
            f"`{step}` names {len(named)} questions run {run_id} waits on: {listed}\n"
            f"hint: name the one to answer, e.g. {answer_command(run_id, shown)}{path}"
        )
    return named[0].path if named else step


def ended_message(run_id: str, status: str, step: str) -> str:
    """What ``flowc answer`` says when run ``run_id`` has ended (``status``: ``ok``, ``error``,
    ``cancelled``…): it waits on no question, said so rather than ``waiting: none``; the same
    words on every engine."""
    return (
        f"run {run_id} has ended ({status}): no question of it waits for an answer, "
        f"at {step!r} or elsewhere"
    )


def no_run_message(run_id: str, where: str, ids: Iterable[str]) -> str:
    """What a command taking a run id says when ``where`` (a database, a Temporal namespace)
    holds no run ``run_id``: ``no durable run 'RUN' in WHERE``, and a ``hint:`` line naming the
    nearest of ``ids`` (the runs it holds) when ``run_id`` looks like a slip of one (``myrun``
    for ``myrun1``: core.diagnostics.did_you_mean) or is the start of exactly one."""
    message = f"no durable run {run_id!r} in {where}"
    names = sorted(set(ids) - {run_id})
    near = did_you_mean(run_id, names) if run_id else None
    if near is None and run_id:
        started = [n for n in names if n.startswith(run_id)]
        near = f"did you mean `{started[0]}`?" if len(started) == 1 else None
    return f"{message}\nhint: {near}" if near else message


def no_question_message(run_id: str, step: str, pending: list[Question]) -> str:
    """What ``flowc answer`` says when run ``run_id`` waits on no question at ``step``: the
    questions it waits on, and the nearest of their names when ``step`` looks like a slip of
    one (``okay`` for ``ok``)."""
    waiting = ", ".join(q.shown() for q in pending) or "none"
    message = f"run {run_id} has no question waiting at {step!r} (waiting: {waiting})"
    names = sorted({n for q in pending for n in q.names()} | {q.path for q in pending})
    near = did_you_mean(step, names)
    if near is None:  # `okay` for `ok`: more edits than a typo, the same word
        related = [n for n in names if n and (step.startswith(n) or n.startswith(step))]
        near = f"did you mean `{related[0]}`?" if len(related) == 1 else None
    return f"{message}\nhint: {near}" if near else message


@dataclass
class RunInfo:
    """One durable run: id, status (``running``, ``waiting``, ``ok``, ``error``, ``exited``,
    ``aborted``, ``cancelled``, ``stopped``, ``unreadable``), plan name, times (epoch seconds), the
    question it answers (a durable question's), pending questions, the error; from :func:`show_run` also its steps, cost, the count of engine
    operations left out of ``steps`` and a fleet run's holders of unfinished units."""

    run_id: str
    status: str
    plan: str
    created_at: float
    updated_at: float
    #: the question of a durable question (``flowc ask --durable``), None for a plan's run
    question: str | None = None
    questions: list[Question] = field(default_factory=list)
    error: dict[str, Any] | None = None
    output: Any = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    #: the engine's own operations (``DBOS.setEvent`` …) not among ``steps``
    internal: int = 0
    #: a fleet run's unfinished units by holder (:func:`show_run`)
    workers: list[dict[str, Any]] = field(default_factory=list)
    #: why the run cannot be read (status ``unreadable``: a row that is not agentflow's JSON)
    unreadable: str | None = None
    #: how many steps the run has (``steps`` may be one page of them: ``runs show --limit``)
    steps_total: int = 0
    #: where the page of ``steps`` starts among them
    steps_offset: int = 0
    #: True when ``steps_total`` and ``cost`` count only the steps read for this page: a run
    #: with more units than one page needs (Temporal: a map's batch workflows) is read in
    #: start order only as far as the page's steps are known (``steps_total`` is then a floor)
    steps_partial: bool = False
    #: questions closed (``flowc answer``) that the run has not taken yet: its process stopped
    #: (``stopped``) or has not woken up; ``flowc resume`` takes the answer without asking
    answered: list[Question] = field(default_factory=list)
    #: how long the run took as its process measured it (its outcome's ``duration_ms``, what
    #: ``flowc run`` says: ``run ok in 1.51s``) once it has ended; None before, or unrecorded
    duration_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def published_questions(
    run_id: str, workflow_id: str, published: Mapping[str, Any]
) -> list[Question]:
    """The questions unit ``workflow_id`` of run ``run_id`` waits on, from what it published
    (DBOS events, Temporal memo: ``question:KEY`` → the question, ``answered`` once taken), in
    key order; ``timed_out`` from its recorded deadline (``asked_at + timeout``) and the
    clock now."""
    out = []
    now = time.time()
    for key, value in sorted(published.items()):
        if not key.startswith("question:") or not isinstance(value, dict) or "answered" in value:
            continue
        asked_at, timeout = value.get("asked_at"), value.get("timeout")
        timed_out = (
            isinstance(asked_at, int | float)
            and isinstance(timeout, int | float)
            and asked_at + timeout <= now
        )
        out.append(
            Question(
                run_id=run_id,
                workflow_id=workflow_id,
                path=value.get("path") or key[len("question:") :],
                question=value.get("question", ""),
                choices=value.get("choices"),
                schema=value.get("schema"),
                asked_at=value.get("asked_at"),
                timeout=value.get("timeout"),
                key=question_key(value),
                label=value.get("label"),
                timed_out=timed_out,
            )
        )
    return out


def split_closed(
    questions: list[Question], closed: Mapping[tuple[str, str], Any]
) -> tuple[list[Question], list[Question]]:
    """``questions`` (published, not taken yet) split into those still waiting and those
    already closed, by the claims ``closed`` (answers.claims: ``(unit, key)`` → Claim); a
    closed one carries how (``closed``) and its accepted ``answer``."""
    waiting, answered = [], []
    for q in questions:
        claim = closed.get((q.workflow_id, q.key))
        if claim is None:
            waiting.append(q)
        else:
            answered.append(dataclasses.replace(q, closed=claim.kind, answer=claim.value))
    return waiting, answered


def error_text(error: Any, op: Any = None) -> dict[str, Any]:
    """A recorded error as ``{code, message, step_path}``: a :class:`RunError` as it is; the
    exception an operation ``op`` (shown.py's ``Operation`` of a tool or model call) recorded
    classified as the run classified it when the attempt failed — the code its retry policy
    decided by (:func:`agentflow.errors.run_error_of`: a plain exception is ``tool_error``, a
    ``ConnectionError`` ``transient`` …), at the operation's step path; else (no operation: a
    workflow that raised outside any step, the engine's own) ``failed`` — ``validation`` for a
    configuration the process could not use (:class:`ConfigError`)."""
    if isinstance(error, RunError):
        return error.to_dict()
    if isinstance(error, BaseException) and op is not None and op.kind in ("tool", "model"):
        shown = run_error_of(error, str(op.what or op.kind)).to_dict()
        shown["step_path"] = shown.get("step_path") or op.path or None
        return shown
    if isinstance(error, ConfigError):
        # a configuration the process that took the run up could not use (a [tools] module
        # missing, an API key unset, a flow.toml that no longer loads): a run-time check that
        # failed, never `failed`, which is the flow's own decision to stop (errors.md)
        return {"code": Code.VALIDATION, "message": str(error), "step_path": None}
    # not a step's failure: the engine's own (a workflow that raised outside any step)
    return {"code": Code.FAILED, "message": str(error), "step_path": None}


def plan_of(spec: dict[str, Any]) -> Plan | None:
    """The plan recorded in ``spec``, or None when it no longer loads."""
    text = spec.get("plan_text")
    if not isinstance(text, str):
        return None
    # loaded here: `flowc cancel` / `answer` read no plan, and the loader brings the
    # expression parser (lark) along (docs/decisions.md "Start-up of answer and cancel")
    from agentflow.ir.loader import load_plan_text

    try:
        return load_plan_text(text, spec.get("plan_file") or "<durable>")
    except Exception:  # noqa: BLE001 - names are a nicety: the paths still show
        return None


def json_of(value: Any) -> Any:
    """A recorded value as JSON data (a model's reply, a dataclass, is its fields)."""

    def plain(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        if hasattr(o, "to_list"):  # a range
            return o.to_list()
        if isinstance(o, bytes):
            return o.decode("utf-8", "replace")
        if isinstance(o, set | frozenset):
            return sorted(o, key=repr)
        return str(o)

    return json.loads(json.dumps(value, default=plain))


def count_inference(cost: dict[str, Any], value: Any) -> float:
    """Add one recorded model reply ``value`` (a ``ChatResponse``-like object with ``usage``
    and ``cost``) to ``cost`` (``{"inferences", "input_tokens", "output_tokens"}``, counted in
    place, for ``runs show`` on either engine; ``usage_unknown`` +1, created on first use, for a
    reply whose usage was not reported or not counts); returns its price in dollars (0.0 when
    unpriced)."""
    usage = getattr(value, "usage", None) or {}
    cost["inferences"] += 1
    if getattr(value, "usage_unknown", False) is True:
        cost["usage_unknown"] = cost.get("usage_unknown", 0) + 1
    cost["input_tokens"] += int(usage.get("input_tokens", 0) or 0)
    cost["output_tokens"] += int(usage.get("output_tokens", 0) or 0)
    price = getattr(value, "cost", None)
    return float(price) if price is not None else 0.0


def refuse_redrive(run_id: str, spec: dict[str, Any], status: str | None) -> None:
    """Raise InputError when ``flowc redrive`` has nothing to do for run ``run_id`` (recorded
    ``spec``, engine-neutral ``status``), on either engine: a question (:func:`no_redrive`), a
    run that has not ended (``running``, ``waiting``, ``stopped``: resume or cancel it) and one
    that succeeded (``ok``, ``exited``: ``flowc run --reuse`` runs it again)."""
    no_redrive(run_id, spec)
    if start_lost_secret(spec):  # its plan or input would be run with *** (spec.py)
        raise InputError(lost_start_message(run_id, "redriven"))
    if status in ("running", "waiting", "stopped"):
        state = (
            "has not ended (its process stopped before it finished)"
            if status == "stopped"
            else "is still running"
        )
        raise InputError(
            f"run {run_id} {state}: nothing to redrive (redrive runs a run that ended "
            f"without success again); to continue it: flowc resume {run_id}; to give it up "
            f"and run it again from its finished steps: flowc cancel {run_id}, then flowc "
            f"redrive {run_id}"
        )
    if status in ("ok", "exited"):
        file = shown_plan_file(spec["plan_file"]) if spec.get("plan_file") else "FILE"
        there = found_in.get()
        database = f" --database {shlex.quote(there)}" if there else ""
        raise InputError(
            f"run {run_id} ended {status}: nothing to redrive (redrive runs a failed run "
            f"again); to run it again taking its finished steps: flowc run {shlex.quote(file)} "
            f"--reuse {run_id}{database}"
        )


def no_redrive(run_id: str, spec: dict[str, Any]) -> None:
    """Raise InputError when ``spec`` is a durable question's: ``flowc redrive`` runs a plan
    again, and would run the plan ``ask``'s placeholder step instead of the question."""
    if "ask" in spec:
        raise InputError(
            f"run {run_id} is a question (flowc ask --durable): redrive runs a plan again, "
            "not a question; ask it again with flowc ask --durable (flowc resume continues a "
            "question whose process stopped)"
        )


def answer_command(run_id: str, name: str, value: str = "VALUE") -> str:
    """The `flowc answer` command that answers question ``name`` (its ``let`` name or path) of
    run ``run_id`` with ``value``, ready for a shell: each word quoted when it needs it, and
    ``--`` before them when one begins with ``-`` (a run an earlier flowc named ``-x``, a
    negative answer ``-5``), which the command would take for an option (docs/reference/cli.md "flowc answer")."""
    words = [shlex.quote(run_id), shlex.quote(name)]
    dash = "-- " if any(w.startswith("-") for w in (run_id, name, value)) else ""
    return f"flowc answer {dash}{words[0]} {words[1]} {value}"


#: what a worker or server says to do about a run it could not take up, per engine
UNTAKEN_THEN = {
    "dbos": "restart this process (a `flowc worker` under the same --name takes its work up "
    "again), or stop it and `flowc resume {run}`",
    "temporal": "any worker that can build it takes it up (Temporal hands its task on), or "
    "`flowc resume {run}`",
}


def untaken_message(run_id: str, error: BaseException, engine: str = "dbos") -> str:
    """What a process says of run ``run_id`` it cannot build (``error``: its ConfigError, a
    plan that no longer loads …) and so leaves as it was, not ended (``engine``: ``dbos`` or
    ``temporal``, which say what takes it up then: :data:`UNTAKEN_THEN`)."""
    then = UNTAKEN_THEN[engine].format(run=run_id)
    return (
        f"run {run_id} cannot be taken up by this process: {error}. It is left as it was, not "
        f"ended: once that is put right, {then}"
    )


#: where the work of a worker that stopped goes, per engine (:func:`worker_stopped_message`)
_STOPPED_THEN = {
    "dbos": "The units it held go back to their queues for the fleet's other workers (the "
    "run's own process, or flowc resume {run}, puts them back)",
    "temporal": "Temporal hands the run's task to the queue's other workers (or flowc resume "
    "{run} takes it up)",
}


def worker_stopped_message(
    name: str, run_id: str, error: BaseException, engine: str = "dbos"
) -> str:
    """What ``flowc worker --name NAME`` says as it stops for run ``run_id``, which it cannot
    build (``error``: its ConfigError, a plan that no longer loads …): why, where the run's
    work goes then (``engine``: ``dbos`` or ``temporal``), and how to go on."""
    then = _STOPPED_THEN[engine].format(run=run_id)
    return (
        f"worker {name} stopped: run {run_id} cannot be taken up by this process: {error}. "
        f"{then}; once this worker's environment is put right, start it again: flowc worker "
        f"--name {name}"
    )
