"""Deterministic YAML for plans (PLAN_IR.md §1, LANGUAGE.md §10).

:func:`dump_plan` writes keys in a canonical order (plan: version, name, description, input_schema,
deadline, steps, finish, plans; step: id, tool_name, input, timeout, retry, select, meta; other
mappings in insertion order), multi-line strings as ``|`` block scalars, unicode as is, and never
anchors or aliases — so the same plan always gives byte-identical text.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from agentflow.ir.models import CAMEL_ALIASES, Finish, Plan, Step

PLAN_ORDER = (
    "version",
    "name",
    "description",
    "input_schema",
    "deadline",
    "steps",
    "finish",
    "plans",
)
STEP_ORDER = ("id", "tool_name", "input", "timeout", "retry", "select", "meta")


class _Dumper(yaml.SafeDumper):
    """SafeDumper without aliases, with ``|`` blocks for multi-line text."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _repr_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    from agentflow.ir.loader import resolve_plain

    if resolve_plain(data) != data:  # would read back as another type under YAML 1.2: quote it
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _repr_str)


def _ordered(data: dict, order: tuple[str, ...]) -> dict:
    out = {k: data[k] for k in order if k in data}
    for k, v in data.items():
        if k not in out:
            out[k] = v
    return out


def _canon_plan(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    data = _ordered(data, PLAN_ORDER)
    if isinstance(data.get("steps"), list):
        data["steps"] = [_canon_step(s) for s in data["steps"]]
    if isinstance(data.get("plans"), dict):
        data["plans"] = {k: _canon_plan(v) for k, v in data["plans"].items()}
    return data


def _canon_step(step: Any) -> Any:
    if isinstance(step, Step):
        step = _step_data(step)
    if not isinstance(step, dict):
        return step
    step = _ordered(step, STEP_ORDER)
    inp = step.get("input")
    tool = step.get("tool_name")
    if isinstance(inp, dict):
        inp = dict(inp)
        for key in ("do", "then", "else"):
            if key in inp and (isinstance(inp[key], Step) or _looks_like_step(inp[key])):
                inp[key] = _canon_step(inp[key])
        if tool == "parallel" and isinstance(inp.get("branches"), dict):
            inp["branches"] = {k: _canon_step(v) for k, v in inp["branches"].items()}
        step["input"] = inp
    return step


def _looks_like_step(value: Any) -> bool:
    return isinstance(value, dict) and "tool_name" in value


def _plain(value: Any) -> Any:
    """Data with models converted (Step → dict), dicts and lists copied."""
    if isinstance(value, Step):
        return _step_data(value)
    if isinstance(value, BaseModel):
        return _model_data(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _model_data(model: BaseModel) -> dict:
    out = {}
    for name in type(model).model_fields:
        if name not in model.model_fields_set:
            continue
        out[name] = _plain(getattr(model, name))
    return out


def _step_data(step: Step) -> dict:
    data = _model_data(step)
    data["tool_name"] = step.tool_name
    return data


def plan_to_data(plan: Plan) -> dict:
    """A plan as plain data with canonical snake_case keys, in canonical order.

    Fields that were not given (left at their defaults) are dropped, so a loaded plan dumps back to
    what was written (modulo key spelling and order). Body steps become mappings again.
    """
    data = _model_data(plan)
    data["name"] = plan.name
    data["steps"] = [_step_data(s) for s in plan.steps]
    if plan.plans:
        data["plans"] = {k: plan_to_data(v) for k, v in plan.plans.items()}
    else:
        data.pop("plans", None)
    if isinstance(plan.finish, Finish):
        data["finish"] = _model_data(plan.finish)
    return _canon_plan(data)


def dump_plan(data: dict | Plan) -> str:
    """Deterministic YAML text of a plan (a :class:`Plan` or plan data such as the compiler's).

    Same input → byte-identical output. Multi-line strings are ``|`` blocks, unicode is kept,
    no anchors/aliases; text that YAML would read back as another type is quoted.
    """
    if isinstance(data, Plan):
        data = plan_to_data(data)
    else:
        data = _canon_plan(_plain(data))
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
        indent=2,
    )


def _rename_camel(data: Any, level: str) -> Any:
    """camelCase → snake_case at plan, step, finish and agent-input levels (not inside schemas or
    user data)."""
    if not isinstance(data, dict):
        return data
    out = {CAMEL_ALIASES.get(k, k) if isinstance(k, str) else k: v for k, v in data.items()}
    if level == "plan":
        if isinstance(out.get("steps"), list):
            out["steps"] = [_rename_camel(s, "step") for s in out["steps"]]
        if isinstance(out.get("plans"), dict):
            out["plans"] = {k: _rename_camel(v, "plan") for k, v in out["plans"].items()}
    elif level == "step":
        inp = out.get("input")
        if isinstance(inp, dict):
            if out.get("tool_name") == "agent":
                inp = {CAMEL_ALIASES.get(k, k): v for k, v in inp.items()}
            for key in ("do", "then", "else"):
                if _looks_like_step(inp.get(key)) or (
                    isinstance(inp.get(key), dict) and "toolName" in inp[key]
                ):
                    inp = {**inp, key: _rename_camel(inp[key], "step")}
            if isinstance(inp.get("branches"), dict):
                inp = {
                    **inp,
                    "branches": {k: _rename_camel(v, "step") for k, v in inp["branches"].items()},
                }
            out["input"] = inp
    return out


def fmt_plan_text(text: str, file: str = "<plan>") -> str:
    """``flowc plan fmt``: rewrite plan text canonically (snake_case keys, canonical order, ``|``
    blocks). Comments are not kept.

    The text must load as a plan first (:func:`~agentflow.ir.loader.load_plan_text`), and the
    result is loaded again before it is returned, so a file that is not a plan (or a `.flow`
    program that happens to parse as YAML) is never rewritten. Raises
    :class:`agentflow.errors.PlanLoadError` with the load problems.
    """
    from agentflow.errors import Location, PlanLoadError, PlanProblem
    from agentflow.ir.loader import load_plan_text, parse_yaml

    load_plan_text(text, file)
    data, _ = parse_yaml(text, file)
    new = dump_plan(_rename_camel(data, "plan"))
    try:
        load_plan_text(new, file)
    except PlanLoadError as exc:  # pragma: no cover - a formatter bug; never write such text
        first = exc.errors[0] if exc.errors else None
        raise PlanLoadError(
            [
                PlanProblem(
                    Location(file),
                    "plan fmt would produce a plan that does not load; the file was left as is"
                    + (f" ({first.message})" if first else ""),
                )
            ]
        ) from None
    return new
