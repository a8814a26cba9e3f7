"""What a plan needs of the configured models, and why it cannot run without them
(docs/reference/configuration.md "Environment variables"): whether a plan calls a model at all,
which agents call one (each may name its own ``[agents.NAME] model``), and the one refusal
``flowc run``, ``flowc eval`` and ``flowc resume`` share before a run starts or is taken up."""

from __future__ import annotations

import re
from typing import Any

from agentflow.ir.models import Plan, Step, plan_nodes
from agentflow.runtime.config import Config, missing_key_message, no_model_message

__all__ = [
    "model_problem",
    "plan_model_refs",
    "plan_model_refusal",
    "plan_model_users",
    "plan_needs_model",
]

_MODEL_STEPS = {"agent"}


def _solver(node: Any) -> bool:
    return isinstance(node, Plan) and node.finish is not None and node.finish.mode == "solver"


def _judged(node: Any) -> bool:
    return isinstance(node, dict) and ("infer" in node or "judges" in node)


def plan_needs_model(plan: Plan) -> bool:
    """True when running ``plan`` may call a model: an agent step, an ``infer`` gate, a verify
    judge or a solver finish, at any depth (sub-plans included)."""
    return any(
        _solver(node)
        or _judged(node)
        or (isinstance(node, Step) and node.tool_name in _MODEL_STEPS)
        for node in plan_nodes(plan)
    )


def plan_model_users(plan: Plan) -> tuple[list[str], bool]:
    """Who in ``plan`` (sub-plans included) calls a model: the names of the agents its agent
    steps use (``use agent "NAME"``, whose ``[agents.NAME] model`` may name their own), sorted,
    and whether anything else does (an agent step of a team, an ``infer`` gate, a verify judge,
    a solver finish: the configured ``chat`` model or ``default``)."""
    found: set[str] = set()
    other = False
    for node in plan_nodes(plan):
        if isinstance(node, Step) and node.tool_name in _MODEL_STEPS:
            target = node.input.get("agent") if isinstance(node.input, dict) else None
            name = target.get("name") if isinstance(target, dict) else None
            if isinstance(target, dict) and target.get("kind") == "alias" and isinstance(name, str):
                found.add(name)
            else:
                other = True
        else:
            other = other or _solver(node) or _judged(node)
    return sorted(found), other


#: a member named by a string literal in a plan: ``{{ "backend" }}`` (or written plain, ``backend``)
_LITERAL_MEMBER = re.compile(r'\{\{\s*"([^"\\{}]*)"\s*\}\}|([^{}]+)')


def plan_model_refs(config: Config, plan: Plan) -> tuple[str, ...]:
    """The model references ``plan`` (sub-plans included) may call on ``config``, whose
    providers' keys a run needs before its first step: the ``chat`` role (an agent without
    a model of its own), then in the order first met each model an agent names itself — its
    ``[agents.NAME] model`` (unless the step writes its own ``model "…"``, which wins; a
    computed one is known only when the step runs), the ``model`` of the team member a step
    calls (``team.main``'s main member, a member named as written; every member for a computed
    one) — and the ``judge`` role (a judged
    ``filter``, a ``verify`` judge) and ``solver`` role (a solver finish) when used, and the
    ``repair`` role when an agent step may repair an answer that does not conform (its
    ``repair_attempts``, default 1): called only then, but a key it lacks would otherwise show
    only mid-run. A computed ``model "${…}"`` is checked by the step once its value is known
    (runtime/agent_step.py). A reference that does not resolve is left to the router to
    report."""
    refs: list[str] = ["chat"]
    repairs = False

    def add(ref: Any) -> None:
        if isinstance(ref, str) and ref.strip() and "{{" not in ref and ref not in refs:
            refs.append(ref)

    for node in plan_nodes(plan):
        if _solver(node):
            add("solver")
        elif _judged(node):
            add("judge")  # `filter … where judge`, `verify … judge`
        if not (isinstance(node, Step) and node.tool_name in _MODEL_STEPS):
            continue
        inp = node.input if isinstance(node.input, dict) else {}
        repairs = repairs or inp.get("repair_attempts", 1) != 0
        target = inp.get("agent")
        kind = target.get("kind") if isinstance(target, dict) else None
        if inp.get("model") is not None:
            add(inp.get("model"))  # the step's own `model "…"` wins over any profile's
        elif isinstance(target, dict) and kind == "alias":
            profile = config.agents.get(str(target.get("name")))
            add(profile.model if profile is not None else None)
        elif isinstance(target, dict) and kind in ("team.main", "team.member"):
            team = config.teams.get(str(target.get("team")))
            named = team.main if team is not None and kind == "team.main" else None
            if kind == "team.member" and isinstance(target.get("member"), str):
                # `dev.member("backend")` compiles to `{{ "backend" }}`; a computed member may
                # be any of them
                written = _LITERAL_MEMBER.fullmatch(str(target["member"]))
                named = (written.group(1) or written.group(2)) if written else None
            for name, member in team.members.items() if team is not None else ():
                if named is None or name == named:
                    add(member.model)
    if repairs:
        add("repair")  # unset, it is the `default` model (docs/models.md "Roles")
    return tuple(refs)


def plan_model_refusal(config: Config, plan: Plan, *, judged: bool = False) -> str | None:
    """Why ``plan`` cannot run on ``config`` for want of a model, or None: ``flowc run`` and
    ``flowc eval`` both refuse only when neither ``[models] default`` nor ``chat`` is set and
    an agent the flow uses has no ``[agents.NAME] model`` of its own, or something else calls a
    model (a team, an ``infer`` gate, a verify judge, a solver finish; ``judged``: an eval's
    ``judge`` scorer) — every agent naming its own model is enough
    (docs/reference/configuration.md "Environment variables"). The message is :func:`no_model_message`'s."""
    if config.has_model():
        return None
    agents, other = plan_model_users(plan)
    bare = [n for n in agents if n not in config.agents or not config.agents[n].model]
    if not (bare or other or judged):  # every agent named its own: enough
        return None
    return no_model_message(config, agents=[] if judged else bare)


def model_problem(
    config: Config, roles: tuple[str, ...] = ("chat",), plan: Plan | None = None
) -> str | None:
    """Why the configured models of ``roles`` cannot be called from this environment — none
    configured (:func:`no_model_message`) or an API key unset or unusable
    (:func:`missing_key_message`) — else None; with ``plan``, none configured is
    :func:`plan_model_refusal`'s rule (every agent naming its own model is enough), and the
    keys checked are those of every model the plan's agents use (:func:`plan_model_refs`).  What ``flowc run`` refuses a plan that needs a
    model with, before its first step; ``flowc resume`` refuses the same before it takes the run
    up (runtime/durable/spec.py, docs/durable.md "Resume")."""
    if plan is not None:
        refused = plan_model_refusal(config, plan)
        if refused is not None:
            return refused
        roles = (*roles, *(r for r in plan_model_refs(config, plan) if r not in roles))
    elif not config.has_model():
        return no_model_message(config)
    return missing_key_message(config, roles)
