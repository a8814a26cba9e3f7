"""The plan validator's checks of values and its rules of control steps (docs/spec/PLAN_IR.md
§5): :class:`_StepRules` reports a problem at its place (the loader's source map), checks
durations, JSON Schemas, conditions, budgets and positive integers, and holds one
``visit_<step>`` rule per control step (table :data:`_STEP_RULES`, which every control step
must be in); the validator of :mod:`agentflow.ir.validate`, which walks plans and steps, is
built on it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import regex

from agentflow.core.diagnostics import (
    PLAN_INVALID_BODY,
    PLAN_INVALID_SCHEMA,
    PLAN_INVALID_VALUE,
    PLAN_MISSING_FIELD,
    PLAN_UNKNOWN_FIELD,
    Diagnostic,
    Note,
    did_you_mean,
    suggested,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    CONDITION_OPS,
    CONTROL_FIELDS,
    CONTROL_STEPS,
    ERROR_CODES,
    HARD_STOP_CODES,
    MAX_CONCURRENCY,
    MAX_ITERATIONS,
    MAX_LOOP_ROUNDS,
    MAX_SLEEP_MS,
    UNARY_CONDITION_OPS,
    duration_ms,
)
from agentflow.ir.functions import Function
from agentflow.ir.models import Step
from agentflow.ir.outcomes import tolerance
from agentflow.ir.schemas import ref_problems, validation_errors
from agentflow.ir.templates import Path, SourceMap, path_str
from agentflow.ir.validate_schema import _schema_error

STEP_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: The hint for ``infer`` in an ``exit`` step (an unknown field there).
_EXIT_INFER = "`exit` takes `when`, not `infer`: a judge cannot end a run"


def _broken(model: object) -> set[str]:
    broken: set[str] = getattr(model, "_broken", None) or set()
    return broken


class _StepRules:
    """Reporting, value checks and the control steps' rules of the plan validator (the base of
    :class:`agentflow.ir.validate._Validator`)."""

    def __init__(self, file: str, smap: SourceMap | None):
        self.file = file
        self.smap = smap
        self.problems: list[Diagnostic] = []
        #: the plan's functions by name (docs/spec/PLAN_IR.md "functions"), its sub-plans' too
        self.fn_table: dict[str, Function] = {}
        #: names of the plan's functions whose entry or body is invalid (reported there once:
        #: their calls are not reported again as unknown)
        self.fn_refused: set[str] = set()

    # -- reporting -------------------------------------------------------------------------

    def problem(
        self,
        path: Path,
        message: str,
        *,
        hint: str | None = None,
        key: bool = False,
        span: Span | None = None,
        code: str = PLAN_INVALID_VALUE,
        notes: list[Note] | None = None,
    ) -> None:
        """A problem at the value at ``path`` (its key when ``key``; ``span``: a template's
        position in the file), its message prefixed with the value path."""
        if span is not None and self.smap is not None:
            loc = dataclasses.replace(span, file=self.file)
        elif self.smap is not None:
            loc = self.smap.location(path, key=key)
        else:
            loc = Span.at(self.file)
        prefix = path_str(path)
        self.problems.append(
            Diagnostic(
                code,
                f"{prefix}: {message}" if prefix else message,
                loc,
                notes=notes or [],
                hint=hint,
            )
        )

    def duration(self, value: Any, path: Path, what: str) -> int | None:
        """Check a positive duration; its milliseconds, or None (absent or reported)."""
        if value is None:
            return None
        try:
            ms = duration_ms(value)
        except ValueError as exc:
            self.problem(path, str(exc))
            return None
        if ms <= 0:
            self.problem(path, f"{what} must be a positive duration, not {value!r}")
            return None
        return ms

    def json_schema(self, schema: Any, path: Path, what: str) -> bool:
        if not isinstance(schema, dict):
            self.problem(
                path, f"`{what}` must be a JSON Schema object (a mapping)", code=PLAN_INVALID_SCHEMA
            )
            return False
        error = _schema_error(schema)
        if error is not None:
            message, at = error
            where = "/".join(str(p) for p in at)
            self.problem(
                (*path, *at),
                f"`{what}` is not valid JSON Schema: {message}"
                + (f" (at {where})" if where else ""),
                code=PLAN_INVALID_SCHEMA,
            )
            return False
        # only references to itself: nothing is fetched, every one resolves, no endless loop
        problems = ref_problems(schema)
        for sub, message in problems:
            self.problem((*path, *sub), f"`{what}`: {message}", code=PLAN_INVALID_SCHEMA)
        return not problems

    # -- control steps ---------------------------------------------------------------------

    def control(self, step: Step, path: Path) -> None:
        tool = step.tool_name
        ipath = (*path, "input")
        inp = step.input
        if not isinstance(inp, dict):
            self.problem(ipath, f"the input of `{tool}` must be a mapping")
            return
        allowed, required = CONTROL_FIELDS[tool]
        misspelt = self.unknown_fields(inp, ipath, allowed, f"`{tool}` input", tool)
        for key in sorted(required):
            if key not in inp and key not in misspelt:
                self.problem(ipath, f"`{tool}` needs `{key}`", code=PLAN_MISSING_FIELD)
        _STEP_RULES[tool](self, inp, ipath, _broken(step))

    def gate(self, inp: dict[str, Any], ipath: Path, tool: str, *, required: bool) -> None:
        has_when, has_infer = "when" in inp, "infer" in inp
        if has_when and has_infer:
            self.problem(ipath, f"`{tool}` takes `when` or `infer`, not both")
        elif required and not has_when and not has_infer:
            self.problem(ipath, f"`{tool}` needs `when` or `infer`", code=PLAN_MISSING_FIELD)
        if has_when:
            self.condition(inp["when"], (*ipath, "when"))
        if has_infer and not isinstance(inp["infer"], str):
            self.problem((*ipath, "infer"), "`infer` must be a text (the judge's question)")

    def condition(self, cond: Any, path: Path) -> None:
        forms = "{value, op, to}, {expr}, {all: [...]}, {any: [...]} or {not: {...}}"
        if not isinstance(cond, dict):
            self.problem(path, f"a condition must be a mapping: {forms}")
            return
        keys = set(cond)
        if "expr" in keys:
            allowed = {"expr"}
            if not isinstance(cond["expr"], str) or not cond["expr"].strip():
                self.problem((*path, "expr"), "`expr` must be a non-empty expression text")
        elif keys & {"all", "any"}:
            allowed = {"all"} if "all" in keys else {"any"}
            k = next(iter(allowed))
            items = cond[k]
            if not isinstance(items, list) or not items:
                self.problem((*path, k), f"`{k}` must be a non-empty list of conditions")
            else:
                for i, item in enumerate(items):
                    self.condition(item, (*path, k, i))
        elif "not" in keys:
            allowed = {"not"}
            self.condition(cond["not"], (*path, "not"))
        elif keys & {"value", "op", "to"}:
            allowed = {"value", "op", "to"}
            op = cond.get("op")
            if "value" not in keys:
                self.problem(path, "a comparison needs `value`", code=PLAN_MISSING_FIELD)
            if op is None:
                self.problem(path, "a comparison needs `op`", code=PLAN_MISSING_FIELD)
            elif not isinstance(op, str) or op not in CONDITION_OPS:
                self.problem(
                    (*path, "op"),
                    f"unknown operator {op!r}",
                    hint=did_you_mean(str(op), sorted(CONDITION_OPS))
                    or f"operators: {', '.join(sorted(CONDITION_OPS))}",
                )
            elif op not in UNARY_CONDITION_OPS and "to" not in keys:
                self.problem(path, f"operator `{op}` needs `to`", code=PLAN_MISSING_FIELD)
            elif op == "matches":
                self.pattern(cond["to"], (*path, "to"))
        else:
            self.problem(path, f"a condition must be one of {forms}")
            return
        for key in keys - allowed:
            self.problem(
                (*path, key),
                f"unknown field `{key}` in condition",
                hint=did_you_mean(str(key), allowed),
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )

    def pattern(self, to: Any, path: Path) -> None:
        """A literal ``matches`` pattern must compile (the runtime's ``regex`` engine, ``re``
        syntax); a templated one is checked when it is rendered (a ``validation`` step error)."""
        if not isinstance(to, str) or "{{" in to:
            return
        try:
            regex.compile(to)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            self.problem(path, f"invalid regular expression {to!r}: {exc}")

    def body_field(self, inp: dict[str, Any], ipath: Path, key: str, broken: set[str]) -> None:
        if key in inp and not isinstance(inp[key], Step) and f"body:{key}" not in broken:
            self.problem((*ipath, key), f"`{key}` must be a single step", code=PLAN_INVALID_BODY)

    def budget(self, value: Any, path: Path) -> None:
        """``budget: {inferences?, tokens?, cost?}`` of an agent step (docs/models.md)."""
        if not isinstance(value, dict):
            self.problem(path, "`budget` must be a mapping of inferences, tokens and cost")
            return
        for key, limit in value.items():
            if key not in ("inferences", "tokens", "cost"):
                self.problem(
                    (*path, key),
                    f"unknown budget `{key}` (a budget has inferences, tokens and cost)",
                    key=True,
                    code=PLAN_UNKNOWN_FIELD,
                )
            elif key == "cost":
                if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
                    self.problem((*path, key), "`cost` must be a number of dollars ≥ 0")
            else:
                self.positive_int(value, path, key, 0)

    def positive_int(
        self, inp: dict[str, Any], ipath: Path, key: str, minimum: int, maximum: int | None = None
    ) -> None:
        """``inp[key]``, when given, is an integer from ``minimum`` to ``maximum`` — or a
        template, which the run evaluates and checks the same way."""
        if key not in inp:
            return
        v = inp[key]
        if isinstance(v, str) and "{{" in v:
            return
        if isinstance(v, bool) or not isinstance(v, int):
            self.problem((*ipath, key), f"`{key}` must be an integer ≥ {minimum}")
        elif v < minimum:
            self.problem((*ipath, key), f"`{key}` must be ≥ {minimum}, not {v}")
        elif maximum is not None and v > maximum:
            self.problem((*ipath, key), f"`{key}` must be at most {maximum}, not {v}")

    def visit_exit(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        if "when" in inp:
            self.condition(inp["when"], (*ipath, "when"))
        status = inp.get("status")
        if "status" in inp and status not in ("ok", "error"):
            self.problem(
                (*ipath, "status"),
                f"`status` must be `ok` or `error`, not {status!r}",
                hint=did_you_mean(str(status), {"ok", "error"}),
            )
        if status == "error" and "message" not in inp:
            self.problem(
                ipath, "`exit` with status `error` needs a `message`", code=PLAN_MISSING_FIELD
            )
        if "message" in inp and not isinstance(inp["message"], str):
            self.problem((*ipath, "message"), "`message` must be a text")
        code = inp.get("code")
        if "code" in inp and (not isinstance(code, str) or not STEP_ID_RE.fullmatch(code)):
            self.problem((*ipath, "code"), f"`code` must be an error-code name, not {code!r}")

    def visit_decide(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.gate(inp, ipath, "decide", required=True)
        self.body_field(inp, ipath, "then", broken)
        self.body_field(inp, ipath, "else", broken)

    def visit_try(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.body_field(inp, ipath, "do", broken)
        self.body_field(inp, ipath, "catch", broken)
        if "on" not in inp:
            return
        codes = inp["on"]
        if not isinstance(codes, list) or not codes:
            self.problem((*ipath, "on"), "`on` must be a non-empty list of error codes")
            return
        for i, code in enumerate(codes):
            if not isinstance(code, str):
                self.problem((*ipath, "on", i), f"`on` lists {code!r}, which is not an error code")
            elif code in HARD_STOP_CODES:
                self.problem((*ipath, "on", i), f"`{code}` stops the run and cannot be caught")
            elif code not in ERROR_CODES:
                self.problem(
                    (*ipath, "on", i),
                    f"`on` lists {code!r}, which is not an error code",
                    hint=did_you_mean(str(code), ERROR_CODES),
                )

    def visit_filter(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.gate(inp, ipath, "filter", required=True)
        self.over(inp, ipath)

    def over(self, inp: dict[str, Any], ipath: Path) -> None:
        if "over" in inp and not isinstance(inp["over"], list | str):
            self.problem((*ipath, "over"), "`over` must be a list or a `{{ … }}` template")

    def visit_map(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.over(inp, ipath)
        self.body_field(inp, ipath, "do", broken)
        self.positive_int(inp, ipath, "concurrency", 1, MAX_CONCURRENCY)
        if "on_item_error" in inp:
            self.on_item_error(inp["on_item_error"], (*ipath, "on_item_error"))

    def on_item_error(self, v: Any, path: Path) -> None:
        """``fail``, ``skip``, ``{ tolerate: N }`` (N ≥ 0) or ``{ tolerate: "P%" }`` (0–100), or a
        template (checked when it renders)."""
        if v in ("fail", "skip") or (isinstance(v, str) and "{{" in v):
            return
        if isinstance(v, dict):
            extra = sorted(str(k) for k in v if k != "tolerate")
            if extra:
                self.problem(
                    (*path, extra[0]),
                    f"`on_item_error` takes only `tolerate`, not `{extra[0]}`",
                    hint=did_you_mean(extra[0], {"tolerate"}),
                )
                return
            t = v.get("tolerate")
            if isinstance(t, str) and "{{" in t:
                return
            if tolerance(v, 100) is None:
                self.problem(
                    (*path, "tolerate"),
                    "`tolerate` must be a count of items (0 or more) or a percentage "
                    f'from "0%" to "100%", not {t!r}',
                )
            return
        self.problem(
            path,
            f"`on_item_error` must be `fail`, `skip` or `{{ tolerate: N }}`, not {v!r}",
            hint=did_you_mean(str(v), {"fail", "skip"}),
        )

    def visit_reduce(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.over(inp, ipath)
        self.body_field(inp, ipath, "do", broken)

    def visit_loop(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """``loop``: ``up_to`` an integer 0 … MAX_LOOP_ROUNDS (or a template, checked when the
        loop starts), ``do`` one step, ``until`` a condition, ``on_exhausted`` — ``{ fail:
        message }`` or ``{ value: v }`` — required with ``until`` and meaningless without it."""
        self.positive_int(inp, ipath, "up_to", 0, MAX_LOOP_ROUNDS)
        self.body_field(inp, ipath, "do", broken)
        if "until" in inp:
            self.condition(inp["until"], (*ipath, "until"))
            if "on_exhausted" not in inp:
                self.problem(
                    ipath,
                    "a `loop` with `until` needs `on_exhausted`: `{ fail: message }` or "
                    "`{ value: v }` (what the loop gives when no round meets `until`)",
                    code=PLAN_MISSING_FIELD,
                )
        if "on_exhausted" not in inp:
            return
        oe, opath = inp["on_exhausted"], (*ipath, "on_exhausted")
        if "until" not in inp:
            self.problem(
                opath,
                "`on_exhausted` needs `until`: without it the loop runs every round and gives "
                "the last state",
            )
        elif not isinstance(oe, dict) or len(oe) != 1 or not set(oe) <= {"fail", "value"}:
            self.problem(opath, "`on_exhausted` must be `{ fail: message }` or `{ value: v }`")
        elif "fail" in oe and not isinstance(oe["fail"], str):
            self.problem((*opath, "fail"), "`fail` must be a message text")

    def visit_parallel(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        branches = inp.get("branches")
        if "branches" in inp:
            if not isinstance(branches, dict) or not branches:
                self.problem((*ipath, "branches"), "`branches` must map names to steps")
            else:
                for name in branches:
                    if not isinstance(name, str) or not STEP_ID_RE.fullmatch(name):
                        self.problem(
                            (*ipath, "branches", name),
                            f"branch name {name!r} must match [A-Za-z_][A-Za-z0-9_]*",
                            key=True,
                        )
                    self.body_field(branches, (*ipath, "branches"), name, broken)
        self.positive_int(inp, ipath, "concurrency", 1)

    def visit_sleep(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """``sleep``: ``for`` a positive duration up to 8760h (:data:`MAX_SLEEP_MS`), or a
        template (checked when the step runs)."""
        wait = inp.get("for")
        if "for" not in inp or (isinstance(wait, str) and "{{" in wait):
            return
        ms = self.duration(wait, (*ipath, "for"), "`for`")
        if ms is not None and ms > MAX_SLEEP_MS:
            self.problem((*ipath, "for"), f"`for` must be at most 8760h (365 days), not {wait!r}")

    def visit_value(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        pass

    def visit_verify(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        checks = inp.get("checks", [])
        if not isinstance(checks, list):
            self.problem((*ipath, "checks"), "`checks` must be a list of {ok, message}")
        else:
            for i, check in enumerate(checks):
                self.fields(
                    check, (*ipath, "checks", i), {"ok", "message"}, {"ok", "message"}, "check"
                )
        judges = inp.get("judges", [])
        if not isinstance(judges, list):
            self.problem((*ipath, "judges"), "`judges` must be a list of {prompt}")
        else:
            for i, judge in enumerate(judges):
                self.fields(judge, (*ipath, "judges", i), {"prompt"}, {"prompt"}, "judge")
        if not checks and not judges:
            self.problem(ipath, "`verify` needs `checks` or `judges`", code=PLAN_MISSING_FIELD)

    def fields(
        self, value: Any, path: Path, allowed: set[str], required: set[str], what: str
    ) -> bool:
        if not isinstance(value, dict):
            self.problem(path, f"a {what} must be a mapping with {', '.join(sorted(allowed))}")
            return False
        misspelt = self.unknown_fields(value, path, allowed, what)
        for key in sorted(required - set(value) - misspelt):
            self.problem(path, f"a {what} needs `{key}`", code=PLAN_MISSING_FIELD)
        return True

    def unknown_fields(
        self, value: dict[str, Any], path: Path, allowed: Any, what: str, tool: str | None = None
    ) -> set[str]:
        """Report each key of ``value`` not in ``allowed`` (with the nearest allowed one as the
        hint; for a control step's input, else the fields it takes); return the allowed fields
        so suggested, whose "needs" problem would be the same mistake again."""
        misspelt: set[str] = set()
        for key in value:
            if key in allowed:
                continue
            hint = did_you_mean(str(key), allowed)
            if hint is not None:
                misspelt.add(suggested(hint))
            elif tool == "exit" and key == "infer":
                hint = _EXIT_INFER
            elif tool is not None:
                hint = f"`{tool}` takes: {', '.join(sorted(allowed))}"
            self.problem(
                (*path, key),
                f"unknown field `{key}` in {what}",
                hint=hint,
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )
        return misspelt

    def visit_ask(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        if "question" in inp and not isinstance(inp["question"], str):
            self.problem((*ipath, "question"), "`question` must be a text")
        schema_ok = "schema" in inp and self.json_schema(
            inp["schema"], (*ipath, "schema"), "schema"
        )
        if "choices" in inp and not isinstance(inp["choices"], list | str):
            self.problem((*ipath, "choices"), "`choices` must be a list or a `{{ … }}` template")
        if "when_unanswered" in inp:
            wu = inp["when_unanswered"]
            wpath = (*ipath, "when_unanswered")
            if wu == "skip":
                return
            if not isinstance(wu, dict) or len(wu) != 1 or not set(wu) <= {"default", "fail"}:
                self.problem(
                    wpath,
                    "`when_unanswered` must be `{ default: v }`, `{ fail: message }` or `skip`",
                )
            elif "fail" in wu and not isinstance(wu["fail"], str):
                self.problem((*wpath, "fail"), "`fail` must be a message text")
            elif "default" in wu:
                self.ask_default(inp, wu["default"], (*wpath, "default"), schema_ok)

    def ask_default(self, inp: dict[str, Any], default: Any, dpath: Path, schema_ok: bool) -> None:
        """A literal `when_unanswered.default` must itself be a valid answer: one of literal
        `choices` and conforming to a literal `schema` (templated parts are checked at run time)."""
        if _templated(default):
            return
        choices = inp.get("choices")
        if isinstance(choices, list) and choices and not _templated(choices):
            if default not in choices:
                self.problem(
                    dpath, f"the default {default!r} is not one of the choices {choices!r}"
                )
                return
        schema = inp.get("schema")
        if schema_ok and isinstance(schema, dict) and schema and not _templated(schema):
            try:
                errors = validation_errors(schema, default)
            except ValueError as exc:
                self.problem(dpath, f"the default cannot be checked: {exc}")
                return
            if errors:
                self.problem(dpath, f"the default does not match `schema`: {errors[0].message}")

    def visit_agent(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """Agent input rules (docs/spec/PLAN_IR.md §6, seed 000 'Input')."""
        if "prompt" in inp and not isinstance(inp["prompt"], str):
            self.problem((*ipath, "prompt"), "`prompt` must be a text")
        if "output_schema" in inp:
            schema = inp["output_schema"]
            spath = (*ipath, "output_schema")
            if self.json_schema(schema, spath, "output_schema"):
                root = schema.get("type")
                if root != "object":
                    self.problem(
                        (*spath, "type") if "type" in schema else spath,
                        "`output_schema` must have `type: object` at its root"
                        + (f", not {root!r}" if root is not None else ""),
                        code=PLAN_INVALID_SCHEMA,
                    )
        if "tools" in inp:
            self.agent_tools(inp["tools"], (*ipath, "tools"))
        self.positive_int(inp, ipath, "max_iterations", 1, MAX_ITERATIONS)
        self.positive_int(inp, ipath, "repair_attempts", 0)
        for key in ("model", "system_prompt"):
            if key in inp and not isinstance(inp[key], str):
                self.problem((*ipath, key), f"`{key}` must be a text")
        if "require_final" in inp and not isinstance(inp["require_final"], bool):
            self.problem((*ipath, "require_final"), "`require_final` must be true or false")
        if "budget" in inp:
            self.budget(inp["budget"], (*ipath, "budget"))
        if "write" in inp:
            w = inp["write"]
            ok = isinstance(w, str) or (isinstance(w, list) and all(isinstance(x, str) for x in w))
            if not ok:
                self.problem((*ipath, "write"), "`write` must be a list of paths (texts)")
            elif any(not x.strip() for x in ([w] if isinstance(w, str) else w)):
                # "" would resolve to the workspace itself: a scope that grants everything
                self.problem(
                    (*ipath, "write"),
                    '`write` holds an empty path ""; name the files or directories the agent '
                    'may write (the whole workspace is ".")',
                )
        if "agent" in inp:
            self.agent_target(inp["agent"], (*ipath, "agent"))

    def agent_tools(self, tools: Any, path: Path) -> None:
        if tools == "none" or tools is None:
            return
        if isinstance(tools, str):
            self.problem(
                path,
                "`tools` must be a list of tool names or patterns, or `none`",
                hint=f"write `tools: [{tools!r}]`" if tools else None,
            )
            return
        if not isinstance(tools, list):
            self.problem(path, "`tools` must be a list of tool names or patterns, or `none`")
            return
        if not tools:
            self.problem(path, '`tools: []` is refused (it is not "no tools"): write `tools: none`')
            return
        for i, name in enumerate(tools):
            if not isinstance(name, str) or not name.strip():
                self.problem((*path, i), "each `tools` entry must be a tool name or `*` pattern")
            elif name == "plan_and_execute":
                self.problem((*path, i), "`plan_and_execute` is never available inside an agent")

    def agent_target(self, target: Any, path: Path) -> None:
        kinds = {"alias": {"name"}, "team.main": {"team"}, "team.member": {"team", "member"}}
        if not isinstance(target, dict):
            self.problem(path, "`agent` must be a mapping with `kind`")
            return
        kind = target.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            self.problem(
                (*path, "kind") if "kind" in target else path,
                f"`agent.kind` must be one of alias, team.main, team.member, not {kind!r}",
                hint=did_you_mean(str(kind), kinds) if kind else None,
            )
            return
        need = kinds[kind]
        self.fields(target, path, need | {"kind"}, need, f"`{kind}` agent target")
        for key in need:
            if key in target and not isinstance(target[key], str):
                self.problem((*path, key), f"`agent.{key}` must be a text")


#: control step → the ``_StepRules.visit_<step>`` method with its rules (built once; a control
#: step without one fails here, at import)
_STEP_RULES: dict[str, Any] = {name: getattr(_StepRules, "visit_" + name) for name in CONTROL_STEPS}


def _templated(value: Any) -> bool:
    """Whether a raw plan value holds a ``{{ … }}`` template anywhere (so it is known only at
    run time)."""
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_templated(k) or _templated(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False
