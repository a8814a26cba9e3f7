"""The ``agent`` control step (docs/spec/PLAN_IR.md §6; docs/spec/RUNTIME.md §3, §4): from the
step's compiled input to one run of the agent loop (:mod:`agentflow.runtime.agent`).

The handler renders the fields, resolves the agent profile or team member (``[agents.X]``,
``[teams.T]`` in flow.toml), resolves the tools the agent may call (the request ∩ the host
policy; write tools only under a ``write`` scope; ``plan_and_execute`` never), caps tool results
(``[tools] max_result_chars``) and runs the loop.  Every tool call of the agent goes through the
executor's gated dispatch; every inference through the executor's model-call seam.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.diagnostics import did_you_mean
from agentflow.core.vocabulary import MAX_ITERATIONS, Code
from agentflow.errors import ConfigError, FlowError, RunError
from agentflow.ir.models import Plan, Step, plan_nodes
from agentflow.ir.templates import compile_value, template_refs
from agentflow.runtime import agent as agent_mod
from agentflow.runtime.agent import DEFAULT_RESULT_CHARS, first_problem
from agentflow.runtime.config import missing_key_message, no_model_message
from agentflow.runtime.control import ControlCall, ExitError
from agentflow.runtime.effects import EffectRouter, UnitSpec
from agentflow.runtime.expressions import render_value, to_json_value, to_text
from agentflow.runtime.hooks import RunAborted
from agentflow.runtime.models.budget import budget_from
from agentflow.runtime.tools.catalog import Tool, match_pattern
from agentflow.runtime.where import OUTLINED_MARK, is_outlined

if TYPE_CHECKING:
    from agentflow.runtime.config import AgentProfile, TeamMember
    from agentflow.runtime.executor import Executor, Frame
    from agentflow.runtime.models.budget import Budget
    from agentflow.runtime.tools.catalog import Tool

__all__ = [
    "DEFAULT_DENIED",
    "OUTLINED_MARK",
    "input_models",
    "is_outlined",
    "member_choices",
    "resolve_tools",
    "run_agent_step",
    "with_member_choices",
]

#: Write tools an agent gets only under a ``write`` scope when no host policy is configured.
DEFAULT_DENIED = frozenset({"builtin__write_file", "builtin__edit_file"})


def _sub_plans(frame: Frame) -> tuple[Mapping[str, Plan], Mapping[str, Plan]]:
    """The plans a step of ``frame`` may call besides the plans directory: its own plan's
    sub-plans and the root plan's."""
    return frame.plan.plans, frame.root_plans


def resolve_tools(
    ex: Executor, requested: Any, write: list[Path] | None, path: str, frame: Frame
) -> list[str]:
    """Names the agent may call (docs/spec/RUNTIME.md §4): the request (None: the whole catalog,
    outlined sub-plans only when named; ``"none"``: nothing; names and ``*`` patterns) ∩ the host
    policy; write tools granted by a ``write`` scope; ``plan_and_execute`` never offered.  RunError
    ``validation`` for a request entry that matches no tool."""

    catalog = ex.ctx.catalog
    names = list(catalog.names()) if catalog is not None else []
    # plans from the plans directory are tools too (outlined sub-plans only when named)
    for pname in ex.plans:
        if f"plan__{pname}" not in names:
            names.append(f"plan__{pname}")
    sub_plans = [f"plan__{p}" for source in _sub_plans(frame) for p in source]
    if requested == "none":
        return []
    if requested is None:
        # docs/spec/LANGUAGE.md §10: sub-plans the compiler outlined are offered only when named,
        # though build_catalog registers them; hand-written sub-plans stay tools
        # (docs/spec/RUNTIME.md §4)
        outlined = {
            f"plan__{n}"
            for source in _sub_plans(frame)
            for n, sub in source.items()
            if is_outlined(sub)
        }
        chosen = [n for n in names if n not in outlined]
    else:
        if isinstance(requested, str):
            requested = [requested]
        chosen = []
        for r in requested:
            r = str(r)
            pool = names + [p for p in sub_plans if p not in names]
            if "*" in r:
                hits = [n for n in pool if match_pattern(r, n)]
            elif r in pool:
                hits = [r]
            elif f"builtin__{r}" in pool:
                hits = [f"builtin__{r}"]
            else:
                hits = []
            if not hits:
                raise RunError(
                    Code.VALIDATION, f"`tools` entry '{r}' matches no tool in the catalog", path
                )
            for h in hits:
                if h not in chosen:
                    chosen.append(h)
    config = ex.ctx.config
    policy = config.policy.allowed_tools if config is not None else None
    out = []
    for n in chosen:
        if n == "plan_and_execute":
            continue
        if policy is None:
            allowed = n not in DEFAULT_DENIED
        else:
            allowed = any(match_pattern(p, n) for p in policy)
        if not allowed and write and n in DEFAULT_DENIED:
            allowed = True
        if allowed:
            out.append(n)
        elif requested is not None and "*" not in n:
            ex.warn(path, frame.stack, f"tool '{n}' is outside the host policy and is not offered")
    return out


def _profile(
    call: ControlCall, target: Any, warnings: list[str] | None = None
) -> tuple[AgentProfile | TeamMember | None, str]:
    """(profile or None, label) for an agent step's ``agent`` field; the "no profile" warning
    goes to ``warnings`` when given (the caller emits it once the step is announced, so it
    follows the step's ▶ line), else is emitted at once."""
    if not target:
        return None, "default"
    if not isinstance(target, dict):
        target = dict(target)
    kind = target.get("kind")
    cfg = call.ex.ctx.config
    path = call.path
    if kind == "alias":
        name = target.get("name")
        prof = cfg.agents.get(name) if cfg is not None else None
        # under the test model or a replay no profile picks a model: nothing to warn about
        if prof is None and not getattr(call.ex.ctx.router, "answers_every_model", False):
            # a mistyped profile name (`[agents.triagr]` for `triager`) says which it meant
            hint = did_you_mean(str(name), cfg.agents) if cfg is not None else None
            message = (
                f"agent '{name}' has no [agents.{name}] profile"
                + (f" ({hint})" if hint else "")
                + "; running with the default profile"
            )
            if warnings is not None:
                warnings.append(message)
            else:
                call.warn(message)
        return prof, str(name)
    if kind in ("team.main", "team.member"):
        team_name = target.get("team")
        team = cfg.teams.get(team_name) if cfg is not None else None
        if team is None:
            near = did_you_mean(str(team_name), cfg.teams) if cfg is not None else None
            raise RunError(
                Code.VALIDATION,
                f"team '{team_name}' is not configured (add [teams.{team_name}] to flow.toml"
                + (f"; {near}" if near else "")
                + ")",
                path,
            )
        if kind == "team.main":
            member = team.main
        else:
            member = render_value(target.get("member"), call.scope)
            if not isinstance(member, str) or member not in team.members:
                hint = did_you_mean(member, team.members) if isinstance(member, str) else None
                raise RunError(
                    Code.INVALID_MEMBER,
                    f"team '{team_name}' has no member {to_text(member)!s}"
                    + (f" ({hint})" if hint else "")
                    + "; members: "
                    + ", ".join(sorted(team.members)),
                    path,
                )
        return team.members.get(member), f"{team_name}.{member}"
    raise RunError(Code.VALIDATION, f"unknown agent kind {kind!r}", path)


def member_choices(ex: Executor, frame: Frame) -> dict[str, Mapping[str, TeamMember]]:
    """The teams whose members a ``member`` in an agent's contract may name, ``{team: members}``
    in name order: the configured teams (``[teams.NAME]``) that an agent step of the plans
    ``frame`` can see names (its own plan and sub-plans, the root plan's sub-plans), else, when
    they name none, every configured team. Empty without a configuration or teams."""
    config = ex.ctx.config
    teams = config.teams if config is not None else {}
    if not teams:
        return {}
    named: set[str] = set()
    plans = [frame.plan, *frame.plan.plans.values(), *frame.root_plans.values()]
    for plan in plans:
        for _, step in plan.iter_steps():
            if step.tool_name != "agent" or not isinstance(step.input, Mapping):
                continue
            target = step.input.get("agent")
            if isinstance(target, Mapping) and target.get("team") in teams:
                named.add(str(target["team"]))
    chosen = sorted(named) if named else sorted(teams)
    return {name: teams[name].members for name in chosen}


def with_member_choices(
    schema: dict[str, Any], teams: Mapping[str, Mapping[str, TeamMember]]
) -> dict[str, Any] | None:
    """``schema`` as the model is shown it: every node annotated ``"x-flow-type": "member"``
    (the compiled ``member`` type, docs/spec/LANGUAGE.md §3) gets an ``enum`` of the members of
    ``teams`` (their names, sorted, each once) and a ``description`` naming them with their
    ``description`` from flow.toml (appended to the node's own). None when ``schema`` has no
    such node or ``teams`` no member: the model is shown ``schema`` itself. ``schema`` is not
    changed; answers are still checked against it, and ``invalid_member`` remains the guard
    when the step runs (docs/reference/agents.md)."""
    names = sorted({m for members in teams.values() for m in members})
    if not names:
        return None
    parts = []
    for team, members in teams.items():
        listed = [
            f"{m} ({members[m].description})" if members[m].description else m
            for m in sorted(members)
        ]
        parts.append(f"a member of team {team}: " + ", ".join(listed))
    text = "; or ".join(parts)
    found = False

    def rewrite(node: Any) -> Any:
        nonlocal found
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: rewrite(value) for key, value in node.items()}
        if node.get("x-flow-type") == "member" and "enum" not in node and "const" not in node:
            found = True
            out["enum"] = list(names)
            own = node.get("description")
            out["description"] = f"{own} ({text})" if isinstance(own, str) and own else text
        return out

    shown = rewrite(schema)
    return shown if found else None


def _has_member_field(node: Any) -> bool:
    """Whether a node of the JSON Schema ``node`` is annotated ``"x-flow-type": "member"``."""
    if isinstance(node, dict):
        if node.get("x-flow-type") == "member":
            return True
        return any(_has_member_field(value) for value in node.values())
    if isinstance(node, list):
        return any(_has_member_field(item) for item in node)
    return False


def _max_iterations(call: ControlCall) -> int:
    max_iter = call.render("max_iterations", 8)
    if isinstance(max_iter, float) and max_iter.is_integer():
        max_iter = int(max_iter)
    if (
        isinstance(max_iter, bool)
        or not isinstance(max_iter, int)
        or not 1 <= max_iter <= MAX_ITERATIONS
    ):
        # a templated budget is checked like a literal one (docs/spec/PLAN_IR.md §6: an integer ≥ 1,
        # at most MAX_ITERATIONS), never coerced (2.5 → 2, true → 1) nor a Python error
        shown = json.dumps(to_json_value(max_iter), ensure_ascii=False)
        raise RunError(
            Code.VALIDATION,
            f"`max_iterations` must be an integer from 1 to {MAX_ITERATIONS}, got {shown}",
            call.path,
            call.source,
        )
    return max_iter


def _in_agent_terms(ex: Any, target: Any, model: Any, error: FlowError) -> str:
    """The message of ``error``, a failure to get the agent step's model client: when no model
    is configured at all and the step's agent names none of its own (``[agents.NAME] model``),
    said of the agent the user wrote (``use agent "NAME"``), not of the ``chat`` role."""
    cfg = ex.ctx.config
    own = model is not None and model not in ("chat", "default")  # a model of its own
    if not isinstance(error, ConfigError) or own or cfg is None or cfg.has_model():
        return str(error)
    name = target.get("name") if isinstance(target, dict) else None
    if isinstance(target, dict) and target.get("kind") == "alias" and isinstance(name, str):
        return no_model_message(cfg, agents=[name])
    return str(error)


def input_models(plan: Plan, input: Any) -> list[str]:
    """The models the agent steps of ``plan`` itself compute from the run's ``input`` alone
    (``model "${input.m}"``), rendered now, in the order met: what the key check before the
    run looks at too (api_run). Its sub-plans are left out (their ``input`` is their own), and
    so is a model that reads anything else (an earlier stage's value): it is known only at its
    step, which checks it then (:func:`_check_computed_key`)."""
    out: list[str] = []
    for node in plan_nodes(plan):
        if isinstance(node, Plan) and node is not plan:
            break  # the sub-plans come last
        if not (isinstance(node, Step) and node.tool_name == "agent"):
            continue
        model = node.input.get("model") if isinstance(node.input, dict) else None
        if not isinstance(model, str) or "{{" not in model:
            continue  # none, or written: checked with the others
        try:
            compiled = compile_value(model, conditions=False)
            if template_refs(compiled) != {"input"}:
                continue  # it reads more than the input
            value = render_value(compiled, {"input": input})
        except (FlowError, LookupError, TypeError, ValueError):
            continue  # a value the input does not give: the step says so
        if isinstance(value, str) and value.strip() and value not in out:
            out.append(value)
    return out


def _check_computed_key(ex: Any, label: str, model: Any, path: str) -> None:
    """Refuse a computed ``model "${…}"`` whose provider's key is unset (or unusable) before
    its first call, with the message the up-front check gives a written model
    (:func:`~agentflow.runtime.config.missing_key_message`), naming the agent as written:
    ``model_error``. Nothing to check under the test model or a replay, while a resumed
    durable run replays its recorded calls, or for a value that does not resolve (the router
    reports it at the call)."""
    cfg = ex.ctx.config
    router = ex.ctx.router
    if cfg is None or router is None or getattr(router, "answers_every_model", False):
        return
    if ex.effects.replaying():  # a resumed durable run: its recorded calls need no key
        return
    missing = missing_key_message(cfg, (str(model),))
    if missing:
        who = f"agent({label})" if label != "default" else "the agent"
        raise RunError(
            Code.MODEL_ERROR,
            f"{missing} (model '{model}', computed by {who}'s model \"${{…}}\")",
            path,
        )


async def run_agent_step(call: ControlCall) -> Any:
    """The ``agent`` control step: render, resolve profile and tools, run the agent loop, and
    enforce ``require_final`` (``output_validation`` when no conforming answer came)."""

    ex, c, path, stack, frame = call.ex, call.input, call.path, call.stack, call.frame
    prompt = to_text(call.render_text(c.get("prompt")))
    system = c.get("system_prompt")
    system = to_text(call.render_text(system)) if system else None
    agent_input = call.render("input") if "input" in c else None
    model = call.render("model") if c.get("model") is not None else None
    write_raw = call.render("write") if c.get("write") is not None else None
    max_iter = _max_iterations(call)
    pending: list[str] = []
    profile, label = _profile(call, c.get("agent"), pending)
    write: list[Path] | None = None
    if write_raw is not None:
        items = write_raw if isinstance(write_raw, list) else [write_raw]
        if any(not str(p).strip() for p in items):  # "" would be the workspace itself
            raise RunError(
                Code.VALIDATION,
                f'the write scope of {label or "this agent"} holds an empty path ""; it '
                'must name files or directories (the whole workspace is ".")',
                path,
            )
        ws = ex.ctx.workspace
        write = [(ws / str(p)) if not Path(str(p)).is_absolute() else Path(str(p)) for p in items]
    catalog = ex.ctx.catalog
    if catalog is not None:  # connect the MCP servers the request may touch
        try:
            await catalog.prepare(c.get("tools"))
        except RunError as e:
            e.step_path = e.step_path or path
            raise
    tool_names = resolve_tools(ex, c.get("tools"), write, path, frame)
    if profile is not None:
        if profile.system_prompt:
            system = f"{profile.system_prompt}\n\n{system}" if system else profile.system_prompt
        if model is None and profile.model:
            model = profile.model
    model = model or "chat"
    computed = c.get("model") is not None and not isinstance(c["model"], str)  # a template
    call.announce(
        {
            "prompt": prompt,
            "system_prompt": system,
            "input": agent_input,
            "model": model,
            "tools": tool_names,
            "write": [str(p) for p in write] if write is not None else None,
            "agent": label,
            "max_iterations": max_iter,
        }
    )
    for message in pending:  # after the step's `step_started`: its ▶ line comes first
        call.warn(message)
    if computed:  # known only now: the key check `flowc run` makes of a written model
        _check_computed_key(ex, label, model, path)
    allowed = set(tool_names)
    hard_stop: list[BaseException] = []

    async def call_tool(name: str, args: Any, tool_path: str) -> Any:
        try:
            position, count = agent_mod.round_call.get()
            if count > 1:  # one of several concurrent calls: a unit of work of its own
                spec = UnitSpec(
                    "tool",
                    frame,
                    concurrent=True,
                    name=name,
                    args=args,
                    write_scope=write,
                    allowed=allowed,
                )
                work = partial(
                    ex.dispatch_tool,
                    name,
                    args,
                    scope=call.scope,
                    path=tool_path,
                    frame=frame,
                    write_scope=write,
                    allowed=allowed,
                )
                return await ex.effects.unit(f"{tool_path}#{position + 1}", work, spec)
            return await ex.dispatch_tool(
                name,
                args,
                scope=call.scope,
                path=tool_path,
                frame=frame,
                write_scope=write,
                allowed=allowed,
            )
        except (RunAborted, ExitError) as e:
            # Hard stops must not return into the loop: the agent re-raises `aborted`.
            hard_stop.append(e)
            raise RunError(Code.ABORTED, str(e), tool_path) from None

    def emit(kind: str, ev_path: str | None = None, **data: Any) -> None:
        ex.emit(kind, ev_path or path, stack, **data)

    try:
        spec = agent_mod.AgentSpec(
            prompt=prompt,
            output_schema=c.get("output_schema") or {"type": "object"},
            tools=[_tool_for(ex, n, frame).spec() for n in tool_names],
            max_iterations=max_iter,
            model=model,
            system_prompt=system,
            input=agent_input,
            repair_attempts=int(c.get("repair_attempts", 1)),
            max_result_chars=_result_cap(ex),
            budget=_agent_budget(ex, c.get("budget"), path),
        )
        try:
            if _has_member_field(spec.output_schema):
                teams = member_choices(ex, frame)
                spec.response_schema = with_member_choices(spec.output_schema, teams)
        except RecursionError:  # a contract nested too deeply to rewrite: shown as compiled
            spec.response_schema = None
        if ex.ctx.router is None:
            raise RunError(
                Code.VALIDATION,
                "an agent step needs a model but none is configured "
                "(set [models] in flow.toml, or OPENAI_BASE_URL/OPENAI_API_KEY)",
                path,
            )
        result = dict(
            await agent_mod.run_agent(
                spec,
                router=EffectRouter(ex.effects, ex.ctx.router, path),
                call_tool=call_tool,
                emit=emit,
                step_path=path,
            )
        )
    except RunError:
        if hard_stop:
            raise hard_stop[0] from None
        raise
    except FlowError as e:  # ConfigError: no model for the role
        if hard_stop:
            raise hard_stop[0] from None
        if isinstance(e, RunAborted):
            raise
        raise RunError(
            Code.VALIDATION, _in_agent_terms(ex, c.get("agent"), model, e), path
        ) from None
    if c.get("require_final") and not result.get("final"):
        raise _not_final(call, result, max_iter)
    return result


def _not_final(call: ControlCall, result: dict[str, Any], max_iter: int) -> RunError:
    """The ``output_validation`` error of a ``require_final`` agent without a valid answer."""

    meta = call.step.meta
    where = [
        f"stage `{meta['stage']}`" if meta.get("stage") else f"step `{call.step.id or call.path}`"
    ]
    if meta.get("source"):
        where.append(f"({meta['source']})")
    problems = [str(p) for p in result.get("errors") or []]
    why = f"; last problem: {first_problem(problems)}" if problems else ""
    return RunError(
        Code.OUTPUT_VALIDATION,
        " ".join(where) + ": agent could not produce output conforming to its contract "
        f"within {max_iter} rounds{why}",
        call.path,
        call.source,
        details={"errors": problems} if problems else None,
    )


def _tool_for(ex: Executor, name: str, frame: Frame) -> Tool:
    """The catalog Tool for ``name`` (a synthesized entry for plans not in the catalog)."""
    catalog = ex.ctx.catalog
    tool = catalog.get(name) if catalog is not None else None
    if tool is not None:
        return tool

    plan = ex.find_plan(name, frame)
    schema = (plan.input_schema if plan is not None else None) or {"type": "object"}
    description = plan.description if plan is not None else None

    async def unreachable(args: dict[str, Any], ctx: Any) -> Any:
        raise RunError(Code.TOOL_ERROR, f"{name} must be dispatched by the executor")

    return Tool(
        name=name,
        description=description or f"Run plan {name}",
        input_schema=schema,
        func=unreachable,
        source="plan",
    )


def _agent_budget(ex: Executor, planned: Any, path: str) -> Budget | None:
    """The model budget of one agent step run: the plan's ``budget`` of the step, else
    ``[budget.per_agent]`` of flow.toml, else None (docs/models.md "Budgets")."""

    place = ex.places.get(path)
    label = place.names().label if place is not None else None
    # a compiled flow's agent by its place in the .flow (`digest › item 0 › agent(sre)`)
    name = f"`{label}`" if label else f"agent step {path}"
    if isinstance(planned, dict):
        where = f"its `budget`, {place.source}" if label and place and place.source else None
        return budget_from(planned, name=name, source=where or "its `budget` in the plan")
    config = ex.ctx.config
    per_agent = config.budget.per_agent if config is not None else None
    return budget_from(per_agent, name=name, source="flow.toml [budget.per_agent]")


def _result_cap(ex: Executor) -> int:
    """The cap of one tool result shown to the agent: ``[tools] max_result_chars``, else the
    agent loop's default."""

    config = ex.ctx.config
    return config.tools.max_result_chars if config is not None else DEFAULT_RESULT_CHARS
