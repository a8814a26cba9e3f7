"""A compiled plan's expressions in the `.flow`'s own terms (docs/observability.md "Names in
the `.flow`'s terms").

Lowering a `.flow` (docs/spec/LANGUAGE.md §10) renames what the user wrote: a stage's or a
``let``'s value computed by a step is read as the step id (``E0``), a ``map … as t`` item as
``item``, a ``reduce``/``loop`` state as ``accumulator``, a ``catch … as err`` binding as
``error``, and an outlined body reads its caller's names as ``input.env.NAME`` and its own
item as ``input.item``.  Graphs (``flowc graph``), cost figures (``flowc cost``) and run-time
error messages turn them back:

- :func:`step_names` — ``{step id: .flow name}`` of one plan: the ``let`` a step's value is
  bound to (``meta.name``), else the stage whose value it is;
- :func:`body_names` — the renames a control step's ``meta.names`` records for its bodies
  (``{"item": "t", "accumulator": "acc"}``, written by the compiler);
- :func:`in_source_terms` — an expression's text with those names put back, string literals
  left alone (their ``${…}`` parts renamed), member names (``x.item``), object keys and named
  arguments (``{item: x}``, ``f(round: 1)``) never touched.

A hand-written plan has no ``meta.names`` and its step ids are its own names: it is shown as
written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentflow.ir.models import Plan, Step

__all__ = [
    "body_names",
    "expression_position",
    "in_source_terms",
    "scope_names",
    "step_label",
    "step_names",
    "step_names_in_stage",
]

#: the scope names a control step binds for its bodies (docs/spec/PLAN_IR.md §3)
SCOPE_NAMES = ("item", "index", "accumulator", "round", "error")


def body_names(step: Step | None) -> dict[str, str]:
    """``step.meta.names`` (scope name → `.flow` name) when the compiler recorded it, else
    ``{}``."""
    meta = getattr(step, "meta", None)
    names = meta.get("names") if isinstance(meta, dict) else None
    if not isinstance(names, dict):
        return {}
    return {str(k): str(v) for k, v in names.items() if isinstance(v, str)}


def step_label(step: Step) -> str:
    """A step with no `.flow` name, as the `.flow` writes its construct: ``agent(sre)``,
    ``read_file(…)``, ``ask``, ``map`` …"""
    meta = step.meta if isinstance(step.meta, dict) else {}
    tool = step.tool_name
    if tool == "agent":
        target = step.input.get("agent") if isinstance(step.input, dict) else None
        name = meta.get("agent") or (target.get("name") if isinstance(target, dict) else None)
        return f"agent({name})" if name else "agent"
    if tool == "decide":  # an `if`, or a `match` with an effectful arm (compiler/lower_match.py)
        return "match" if isinstance(meta.get("match"), dict) else "if"
    if tool == "try" and meta.get("kind") == "catch":  # `x catch { … }`: no `try` written
        return "catch"
    if tool.startswith("plan__") or tool in _CONTROL_WORDS:
        return tool.removeprefix("plan__")
    return tool.removeprefix("builtin__") + "(…)"


_CONTROL_WORDS = frozenset(
    {"map", "filter", "reduce", "loop", "ask", "verify", "decide", "try", "value", "parallel"}
)


def step_names(plan: Plan) -> dict[str, str]:
    """The `.flow` name of each top-level step of ``plan`` that a template may read: the
    ``let`` it is bound to (``meta.name``); else, for the last step of a stage that is not an
    ``exit`` (the stage's value; not in a body flowc outlined), the stage; else its construct
    (:func:`step_label`).  Empty
    for a plan that was not compiled from a `.flow` (no ``meta.source`` anywhere)."""
    steps = [s for s in plan.steps if s.id]
    if not any(isinstance(s.meta, dict) and s.meta.get("source") for s in steps):
        return {}
    names: dict[str, str] = {}
    last_of_stage: dict[str, str] = {}
    # an outlined body's last step is the body's value, not its stage's
    outlined = (plan.description or "").endswith("outlined by flowc")
    for step in [] if outlined else steps:
        meta = step.meta if isinstance(step.meta, dict) else {}
        if isinstance(meta.get("stage"), str) and step.tool_name != "exit":
            last_of_stage[meta["stage"]] = str(step.id)
    for stage, step_id in last_of_stage.items():
        names[step_id] = stage
    for step in steps:
        meta = step.meta if isinstance(step.meta, dict) else {}
        if isinstance(meta.get("name"), str):
            names[str(step.id)] = meta["name"]
        elif str(step.id) not in names:
            names[str(step.id)] = step_label(step)
    return names


def step_names_in_stage(plan: Plan, names: Mapping[str, str], stage: Any) -> dict[str, str]:
    """``names`` (:func:`step_names`) as a step of ``stage`` reads them: a ``let`` of another
    stage is out of its scope, so a step holding that stage's value (``meta.value_of``, set by
    the compiler) is named by that stage (``draft.text``, not ``d.text``); and ``stage``'s own
    last step, a call bound to no ``let``, is the call it is (``read_file(…)``), not the
    stage's value: the stage's output reads it inside the stage (``parse_int(read_file(…))``)."""
    out = dict(names)
    if not isinstance(stage, str):
        return out
    for step in plan.steps:
        meta = step.meta if isinstance(step.meta, dict) else {}
        owner = meta.get("value_of")
        if step.id and isinstance(owner, str) and meta.get("stage") != stage:
            out[str(step.id)] = owner
        elif step.id and meta.get("stage") == stage and names.get(str(step.id)) == stage:
            label = step_label(step)
            if label.endswith("(…)") or label.startswith("agent"):
                out[str(step.id)] = label
    return out


def _ident_start(c: str) -> bool:
    return c.isalpha() or c == "_"


def _ident_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def in_source_terms(
    text: str, names: Mapping[str, str], *, outer: Mapping[str, str] | None = None
) -> str:
    """``text`` (a template expression, or a message quoting one) with the compiler's names put
    back: each identifier that is a key of ``names`` becomes its value (``E0`` → ``tickets``,
    ``item`` → ``t``); ``input.env.X`` becomes ``X`` and, given ``outer`` (an outlined body's
    expression: the names of the control step that calls it), ``input.item`` becomes
    ``outer["item"]`` (``item`` when unnamed).  A member
    name (``x.item``), an object key or a named argument (``{item: x}``: an identifier after
    ``{``, ``(`` or ``,`` and before ``:``) is never renamed; inside string literals only the
    ``${…}`` parts are.
    Never raises: text that is not an expression is renamed where it reads like one."""
    if not names and "input.env." not in text and outer is None:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    modes: list[int] = []  # brace depth of each open `${…}`; -1 marks a string literal
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\" and i + 1 < n:
                out.append(text[i : i + 2])
                i += 2
                continue
            if c == '"':
                in_string = False
                modes.pop()
            elif text.startswith("${", i):
                modes.append(0)
                in_string = False
                out.append("${")
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        if c == '"':
            in_string = True
            modes.append(-1)
            out.append(c)
            i += 1
            continue
        if c == "{" and modes and modes[-1] >= 0:
            modes[-1] += 1
        elif c == "}" and modes and modes[-1] >= 0:
            if modes[-1] == 0:
                modes.pop()
                in_string = bool(modes) and modes[-1] == -1
                out.append(c)
                i += 1
                continue
            modes[-1] -= 1
        if _ident_start(c) and (i == 0 or not _ident_char(text[i - 1])):
            j = i
            while j < n and _ident_char(text[j]):
                j += 1
            word = text[i:j]
            before = _previous_char(text, i)
            member = before == "."
            if before in ("{", "(", ",") and _next_char(text, j) == ":":
                # an object key or a named argument (`{item: x}`, `f(round: 1)`): written as is
                out.append(word)
                i = j
                continue
            if not member and word == "input" and text.startswith(".env.", j):
                i = j + len(".env.")
                continue
            if not member and word == "input" and outer is not None and text.startswith(".", j):
                k = j + 1
                while k < n and _ident_char(text[k]):
                    k += 1
                inner = text[j + 1 : k]
                if inner in SCOPE_NAMES:
                    out.append(outer.get(inner, inner))
                    i = k
                    continue
            out.append(names.get(word, word) if not member else word)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _next_char(text: str, j: int) -> str:
    """The character at or after ``text[j]``, spaces skipped (``item :``)."""
    while j < len(text) and text[j].isspace():
        j += 1
    return text[j] if j < len(text) else ""


def _previous_char(text: str, i: int) -> str:
    """The character before ``text[i]``, spaces skipped (``x . item``)."""
    j = i - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return text[j] if j >= 0 else ""


def scope_names(
    chain: list[tuple[Any, bool]], plan_names: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str] | None]:
    """The renames in force at a step: ``chain`` is its enclosing steps, innermost first, as
    ``(step, outlined)`` pairs (``outlined``: the step is the call of an outlined body, whose
    enclosing control step's names reach the body as ``input.X``); ``plan_names`` the step
    names of the plan the step is in (:func:`step_names`).  Returns ``(names, outer)`` for
    :func:`in_source_terms` (``outer`` None outside outlined bodies)."""
    names: dict[str, str] = dict(plan_names)
    outer: dict[str, str] | None = None
    crossed = False
    for step, is_outlined_call in chain:
        target = outer if crossed else names
        assert target is not None
        for scope, source in body_names(step).items():
            target.setdefault(scope, source)
        if is_outlined_call:
            if crossed:
                break  # nested outlined bodies: their outer names come through ``env``
            crossed, outer = True, {}
    return names, outer


#: how many lines after a step's start its expressions are looked for
_STATEMENT_LINES = 40


def expression_position(
    lines: list[str], line: int, message: str, column: int | None = None
) -> tuple[int, int, int] | None:
    """Where the expression an error message quotes first (between backquotes, in the `.flow`'s
    terms: :func:`in_source_terms`) is written: ``(line, column, length)``, 1-based, searched
    in ``lines`` (the `.flow`'s) from the failing step's ``line`` on, so that the caret points at
    ``ticket[0]`` and not at the ``agent(`` that holds it.  Only a whole token matches (`one`
    is not the end of ``none``, `e` not a letter of ``return``), and the step's own place
    (``line``:``column``, its recorded span) is taken when the quoted text is written there.
    None when the message quotes nothing but its stage's name (``stage `s` (f.flow:3:5): …``),
    or the text is not written as such (an expression the compiler put together from
    several, a ``let`` inlined into it). An error inside a user function quotes the call as
    written (``in function `inv`, called as `inv(x)`: …``): the call is the expression."""
    quoted = _quoted(message)
    if quoted is None:
        return None
    pattern = re.compile(
        ("(?<!\\w)" if _WORDY.match(quoted) else "")
        + re.escape(quoted)
        + ("(?![\\w])" if _WORDY.match(quoted[-1]) else "")
    )
    if column is not None and 1 <= line <= len(lines):
        if pattern.match(lines[line - 1], max(0, column - 1)):  # at the step's recorded place
            return line, column, len(quoted)
    for number in range(max(1, line), min(len(lines), line + _STATEMENT_LINES) + 1):
        found = pattern.search(lines[number - 1])
        if found is not None:
            return number, found.start() + 1, len(quoted)
    return None


#: a character of a name: the quoted text is matched as whole names only at such ends
_WORDY = re.compile(r"\w")

#: the stage a message is about, before what it says: ``stage `one` (a.flow:7:10): ``
_STAGE_PREFIX = re.compile(r"stage `[^`]*` \([^()]*:\d+:\d+\): ")


def _quoted(message: str) -> str | None:
    """The expression ``message`` quotes first (after its stage prefix, which names no
    expression), or the call of a user function an error inside one quotes."""
    rest = message
    prefix = _STAGE_PREFIX.match(rest)
    if prefix is not None:
        rest = rest[prefix.end() :]
    start = rest.find("`")
    if rest.startswith("in function `"):  # an error inside a user function: its call
        called = rest.find("called as `")
        start = called + len("called as ") if called >= 0 else start
    end = rest.find("`", start + 1) if start >= 0 else -1
    if start < 0 or end <= start + 1:
        return None
    return rest[start + 1 : end]
