"""Pydantic models of the plan IR (docs/spec/PLAN_IR.md §1–2, §6).

A :class:`Plan` is what :func:`agentflow.ir.loader.load_plan` returns.  Models are strict (a YAML
``"1"`` is not an int) and refuse unknown fields; the loader turns pydantic errors into
:class:`agentflow.errors.PlanProblem` entries with file:line:col.

Control-step bodies (``do``, ``then``, ``else``, each value of ``branches``) are converted by the
loader into :class:`Step` objects *in place* inside ``step.input``.  Load-time derived data lives in
private attributes exposed as properties:

- ``step.compiled``: ``step.input`` with every template string parsed (see
  :mod:`agentflow.ir.templates`), bodies kept as :class:`Step` objects;
- ``step.compiled_select``: the parsed ``select`` template or None;
- ``plan.source_file``: the file the plan was loaded from (None for in-memory data);
- ``finish.compiled_output``: the parsed ``finish.output``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agentflow.core.vocabulary import BODY_KEYS, CONTROL_STEPS, Code

#: camelCase spellings accepted on load (docs/spec/PLAN_IR.md §1), mapped to the canonical
#: snake_case.
CAMEL_ALIASES: dict[str, str] = {
    "toolName": "tool_name",
    "outputSchema": "output_schema",
    "maxIterations": "max_iterations",
    "systemPrompt": "system_prompt",
    "inputSchema": "input_schema",
    "repairAttempts": "repair_attempts",
    "requireFinal": "require_final",
}

_CONFIG = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class Backoff(BaseModel):
    """Exponential backoff of a retry: durations as text (``500ms``, ``30s``), ``factor`` ≥ 1."""

    model_config = _CONFIG

    initial: str = "500ms"
    factor: float = Field(2.0, ge=1.0)
    max: str = "30s"


class Retry(BaseModel):
    """``retry: { attempts, on, backoff }`` (docs/spec/RUNTIME.md §2).

    ``attempts`` counts *extra* tries (``attempts: 1`` runs at most twice); ``on`` lists error codes
    from :data:`agentflow.core.vocabulary.RETRYABLE_CODES`.
    """

    model_config = _CONFIG

    attempts: int = Field(0, ge=0)
    on: list[str] = Field(default_factory=lambda: [str(Code.TRANSIENT)])
    backoff: Backoff | None = None


class Step(BaseModel):
    """One plan step (docs/spec/PLAN_IR.md §2).

    ``tool_name`` is a catalog tool or a control step (``core.vocabulary.CONTROL_STEPS``).
    ``input`` is any YAML value whose strings may hold ``{{ … }}`` templates; for control steps the
    body positions hold :class:`Step` objects after loading.  ``timeout`` is a duration text.
    ``select`` is a template rendered against the raw result (``result`` in scope).
    ``result_schema`` (ordinary steps): the JSON Schema the tool's raw result must match (the
    compiler writes the declared result type of an ``extern tool``); a result that does not is
    ``output_validation``.
    """

    model_config = _CONFIG

    id: str | None = None
    tool_name: str = Field(alias="toolName")
    input: Any = Field(default_factory=dict)
    timeout: str | None = None
    retry: Retry | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    select: str | None = None
    result_schema: dict[str, Any] | None = Field(default=None, alias="resultSchema")

    _compiled: Any = PrivateAttr(default=None)
    _compiled_select: Any = PrivateAttr(default=None)
    _broken: set[Any] = PrivateAttr(default_factory=set)
    _path: tuple[str | int, ...] | None = PrivateAttr(default=None)

    # The getters read pydantic's private-attribute storage directly: ``self._compiled`` goes
    # through ``BaseModel.__getattr__`` (≈ 5 µs), and the executor reads these once per step.

    @property
    def compiled(self) -> Any:
        """The compiled input tree (templates parsed), set at load time; None before."""
        private = self.__pydantic_private__
        return private["_compiled"] if private is not None else None

    @compiled.setter
    def compiled(self, value: Any) -> None:
        self._compiled = value

    @property
    def compiled_select(self) -> Any:
        """The parsed ``select`` template (``ast.Template``) or None."""
        private = self.__pydantic_private__
        return private["_compiled_select"] if private is not None else None

    @compiled_select.setter
    def compiled_select(self, value: Any) -> None:
        self._compiled_select = value

    @property
    def is_control(self) -> bool:
        """True when ``tool_name`` is a control step, intercepted by the executor."""
        return self.tool_name in CONTROL_STEPS

    def bodies(self) -> list[tuple[str, Step]]:
        """The body steps of a control step as ``(label, step)`` pairs.

        Labels follow step paths (docs/spec/PLAN_IR.md §7): ``then``, ``else``, ``do``, and for
        ``parallel`` the branch name.  Empty for ordinary steps or before loading.
        """
        out: list[tuple[str, Step]] = []
        if not isinstance(self.input, dict):
            return out
        for key in BODY_KEYS.get(self.tool_name, ()):
            body = self.input.get(key)
            if isinstance(body, Step):
                out.append((key, body))
        if self.tool_name == "parallel" and isinstance(self.input.get("branches"), dict):
            for name, body in self.input["branches"].items():
                if isinstance(body, Step):
                    out.append((str(name), body))
        return out


class BudgetLimits(BaseModel):
    """``budget: {inferences?, tokens?, cost?}`` of a plan (per run) or of an agent step (per
    run of that step): model calls, prompt + completion tokens, US dollars. Checked before each
    model call; the call that would exceed is not made (``budget_exceeded``)."""

    model_config = _CONFIG

    inferences: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    cost: float | None = Field(None, ge=0)


class PlanFunction(BaseModel):
    """One of a plan's ``functions`` (docs/spec/PLAN_IR.md "functions"): a user function of the
    `.flow` (docs/reference/programs.md "User functions"), its parameters' names and its body,
    a pure expression over them, which a template's call ``name(a, …)`` runs with the
    parameters bound. ``meta.source`` is where the `.flow` declared it."""

    model_config = _CONFIG

    params: list[str]
    expr: str
    meta: dict[str, Any] = Field(default_factory=dict)


class Finish(BaseModel):
    """How a run ends (docs/spec/PLAN_IR.md §1): ``output`` renders a template, ``solver`` makes one
    LLM call with ``prompt``, ``silent`` returns no output."""

    model_config = _CONFIG

    mode: Literal["output", "solver", "silent"] = "output"
    output: Any = None
    prompt: str | None = None
    #: Where ``output`` was written, as a step's ``meta``: ``source`` (``file.flow:line:col``)
    #: and ``stage`` — the compiler writes it when ``output`` is an expression (a stage's last
    #: value after a step), so its run-time error is placed as a step's is.
    meta: dict[str, Any] = Field(default_factory=dict)

    _compiled_output: Any = PrivateAttr(default=None)
    _compiled_prompt: Any = PrivateAttr(default=None)

    @property
    def compiled_output(self) -> Any:
        """``output`` with its templates parsed (set at load time)."""
        return self._compiled_output

    @compiled_output.setter
    def compiled_output(self, value: Any) -> None:
        self._compiled_output = value

    @property
    def compiled_prompt(self) -> Any:
        """``prompt`` parsed as a template (set at load time), or None."""
        return self._compiled_prompt

    @compiled_prompt.setter
    def compiled_prompt(self, value: Any) -> None:
        self._compiled_prompt = value


class Plan(BaseModel):
    """A whole plan file (docs/spec/PLAN_IR.md §1).

    ``name`` matches ``[a-z_][a-z0-9_]*`` and is exposed as the tool ``plan__<name>``; ``plans``
    holds sub-plans (same schema, no nested ``plans``).  ``deadline`` is a duration text.
    """

    model_config = _CONFIG

    version: int = 1
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = Field(default=None, alias="inputSchema")
    deadline: str | None = None
    budget: BudgetLimits | None = None
    functions: dict[str, PlanFunction] = Field(default_factory=dict)
    steps: list[Step]
    finish: Finish | None = None
    plans: dict[str, Plan] = Field(default_factory=dict)

    _source_file: str | None = PrivateAttr(default=None)
    _source_map: Any = PrivateAttr(default=None)
    _path: tuple[str | int, ...] = PrivateAttr(default=())
    _broken: set[Any] = PrivateAttr(default_factory=set)
    _function_table: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def function_table(self) -> dict[str, Any]:
        """``functions`` parsed and checked at load time (``ir.functions.Function`` by name)."""
        return self._function_table

    @function_table.setter
    def function_table(self, value: dict[str, Any]) -> None:
        self._function_table = value

    @property
    def source_file(self) -> str | None:
        """The file the plan was loaded from, or None."""
        return self._source_file

    @source_file.setter
    def source_file(self, value: str | None) -> None:
        self._source_file = value

    @property
    def tool_name(self) -> str:
        """The catalog name under which this plan is callable: ``plan__<name>``."""
        return f"plan__{self.name}"

    def step(self, step_id: str) -> Step | None:
        """The step with that id (top level or body), or None."""
        for _, s in self.iter_steps():
            if s.id == step_id:
                return s
        return None

    def iter_steps(self) -> list[tuple[str, Step]]:
        """Every step of this plan (not sub-plans), bodies included, in order, as
        ``(step_path, step)``; step paths as in docs/spec/PLAN_IR.md §7 (``E3``, ``E3/do``)."""
        out: list[tuple[str, Step]] = []

        def visit(step: Step, path: str) -> None:
            out.append((path, step))
            for label, body in step.bodies():
                visit(body, f"{path}/{label}")

        for i, s in enumerate(self.steps):
            visit(s, s.id or f"steps[{i}]")
        return out

    def effective_finish(self) -> Finish:
        """``finish``, or the default ``{ mode: output, output: "{{ <last step id> }}" }``."""
        if self.finish is not None:
            return self.finish
        last = self.steps[-1].id if self.steps else None
        return Finish(mode="output", output=f"{{{{ {last} }}}}" if last else None)


class AgentTarget(BaseModel):
    """``agent:`` of an agent step: ``{kind: alias, name}``, ``{kind: team.main, team}`` or
    ``{kind: team.member, team, member}`` (``member`` may be a template)."""

    model_config = _CONFIG

    kind: Literal["alias", "team.main", "team.member"]
    name: str | None = None
    team: str | None = None
    member: str | None = None


class AgentInput(BaseModel):
    """The input of an ``agent`` step (docs/spec/PLAN_IR.md §6, seed 000).

    Templates (``prompt``, ``system_prompt``, ``model``, ``input``, ``write``, ``agent.member``) are
    kept as text here; use ``step.compiled`` for the parsed form.  ``tools`` is a list of names or
    ``*`` patterns, the string ``"none"``, or None (whole catalog).  ``max_iterations`` may be a
    template string resolving to an int.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    prompt: str
    output_schema: dict[str, Any] = Field(alias="outputSchema")
    tools: list[str] | Literal["none"] | None = None
    max_iterations: int | str = Field(8, alias="maxIterations")
    model: str | None = None
    system_prompt: str | None = Field(None, alias="systemPrompt")
    input: Any = None
    agent: AgentTarget | None = None
    write: list[str] | str | None = None
    repair_attempts: int = Field(1, ge=0, alias="repairAttempts")
    require_final: bool = Field(False, alias="requireFinal")
    budget: BudgetLimits | None = None


Plan.model_rebuild()


def plan_nodes(plan: Plan) -> Iterator[Plan | Step | dict[str, Any]]:
    """Every part of ``plan`` a question about the whole plan looks at, depth first: the plan
    itself, then each of its steps followed by every mapping in that step's input (bodies and
    nested steps included), then the same for each of its sub-plans (``plans:``). Used by the
    run-time checks that ask "does any step…" (runtime/model_needs.py, runtime/durable/spec.py)."""

    def nodes(value: Any) -> Iterator[Step | dict[str, Any]]:
        if isinstance(value, Step):
            yield value
            yield from nodes(value.input)
        elif isinstance(value, dict):
            yield value
            for v in value.values():
                yield from nodes(v)
        elif isinstance(value, list):
            for v in value:
                yield from nodes(v)

    yield plan
    for step in plan.steps:
        yield from nodes(step)
    for sub in (plan.plans or {}).values():
        yield from plan_nodes(sub)
