"""A run's places in the user's own terms (docs/observability.md "What the trace carries for this").

A step path (docs/spec/PLAN_IR.md §7: ``E1/do.3/E1/else``) is the plan's address of a step; the
person who wrote the `.flow` thinks of the same place as *the agent `auditor` of item 3 of stage
`audits`, line 28*.  Every running step is a :class:`Place`: its step, its path, and the place it runs in
(its ``parent``: the ``map`` of an item, the ``decide`` of a branch, the ``plan__*`` call of a
called plan's steps).  :meth:`Place.names` derives, once, what events and results say besides the
path:

- ``stage`` — the step's ``meta.stage``, else its parent's (a plan called from a stage runs in it);
- ``item`` — the index of the innermost ``map``/``reduce`` item the step runs in (0-based, like
  ``index`` in the `.flow`), from the path's ``do.N`` segments;
- ``agent`` — the agent the step is or runs under: the `.flow` alias (``meta.agent``) or the
  profile name, with the member a team step resolved (``dev.backend``);
- ``name`` — the ``let`` the step's value is bound to (``meta.name``);
- ``label`` — all of it as one line, ``audits › item 3 › agent(auditor)`` (a ``loop``'s round,
  from a ``round.N`` segment: ``revise › round 2 › agent(critic)``); only for steps with a
  stage (a compiled flow's): a hand-written plan's own names are its step ids, in the path;
- ``fold`` — True for the compiler's bookkeeping, which progress output folds into the parent:
  calls of sub-plans the compiler outlined, ``value``/``reduce``/``filter`` steps inside bodies,
  and ``decide`` (the branch it takes shows).

Events below a step that are not steps themselves (an agent's tool call at
``E1/do.3/E1/else/agent.2/builtin__read_file``, a judge at ``E4/judge.0``) take the names of the
nearest place with the rest of the path appended (:meth:`Place.names_below`).  This module reads
plans and paths only; the executor keeps the running places (``Executor.places``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import Code
from agentflow.errors import ExprError
from agentflow.ir.names import in_source_terms as rename
from agentflow.ir.names import scope_names, step_label, step_names, step_names_in_stage

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentflow.ir.models import Plan, Step

__all__ = [
    "OUTLINED_MARK",
    "SEP",
    "SOURCE_TERMS_CODES",
    "quotes_expressions",
    "Names",
    "Place",
    "call_summary",
    "in_source_terms",
    "is_outlined",
    "let_of",
    "outlined_call",
    "lets_by_name",
    "quote_written",
    "written_place",
    "tool_label",
]

#: Between the parts of a label.
SEP = " › "

#: The run-time error codes whose messages quote a template expression (the evaluator's and the
#: library functions'): their quoted parts are put in the `.flow`'s terms (:func:`in_source_terms`)
SOURCE_TERMS_CODES = frozenset(
    {Code.BAD_PATH, Code.VALIDATION, Code.INVALID_ARGUMENT, Code.PARSE_ERROR, Code.REGEX_TIMEOUT}
    | {Code.ARITHMETIC}
)
_QUOTED = re.compile(r"`([^`]*)`")
#: how the evaluator names the call of a user function an error arose in (its outermost one)
_CALLED_AS = re.compile(r"called as `([^`]*)`")

#: How lowering describes the sub-plans it outlines (compiler/lowering.py): "…, outlined by flowc".
OUTLINED_MARK = ", outlined by flowc"


def let_of(error: Any, meta: Any) -> dict[str, str] | None:
    """The inlined ``let`` an expression error of a step arose in, from the step's
    ``meta.lets`` (compiler/lowering.py: ``{name, source, text}`` of each ``let`` whose printed
    text the step's templates hold), or None.

    The evaluator's messages quote the failing sub-expression first (`` `parse_int(x)`: … ``,
    ``path `a.b`: …``); the smallest recorded ``let`` holding a sub-expression printed the same
    way is the one (its text re-parsed and printed by the evaluator's own printer, so spacing
    and parentheses agree).  Called with the message still in the plan's terms (step ids).
    Errors only: this parses, it is not on a hot path."""
    lets = meta.get("lets") if isinstance(meta, dict) else None
    if not lets or not isinstance(lets, list) or not quotes_expressions(error):
        return None
    message = str(getattr(error, "message", ""))
    # an error inside a user function: the call as written in the step is what failed
    m = _CALLED_AS.search(message) if message.startswith("in function `") else None
    m = m or _QUOTED.search(message)
    if m is None:
        return None
    failed = m.group(1)
    # loaded here, not with the module: `flowc cancel` / `answer` load this module and never
    # parse (docs/decisions.md "Start-up of answer and cancel")
    from agentflow.grammar import ast
    from agentflow.grammar.parser import parse_expression
    from agentflow.runtime.expressions import expr_text

    entries = [e for e in lets if isinstance(e, dict) and isinstance(_printed(e), str)]
    written = {str(e.get("name")): _printed(e) for e in entries}
    found: list[tuple[int, dict[str, Any]]] = []
    for entry in entries:
        text = _written_out(_printed(entry), written, 0)
        if text is None:
            continue
        try:
            root = parse_expression(text)
        except Exception:  # noqa: BLE001 - a hand-edited plan's meta: not ours to judge
            continue
        if any(isinstance(n, ast.Expr) and expr_text(n) == failed for n in ast.walk(root)):
            found.append((len(text), entry))
    if not found:
        return None
    entry = min(found, key=lambda f: f[0])[1]  # the innermost let
    out = {k: str(entry.get(k, "")) for k in ("name", "source")}
    text = entry.get("text")
    if "expr" in entry and isinstance(text, str):  # it reads a step: its call as written
        piece = _as_written(str(entry["expr"]), text, failed)
        if piece is not None:
            out["written"] = piece
    return out


def _as_written(printed: str, text: str, failed: str) -> str | None:
    """The part of ``text`` (a ``let``'s expression as the `.flow` wrote it) that is the
    sub-expression printed ``failed`` of ``printed`` (the same expression in the plan's terms,
    where a step's id stands for the call the `.flow` wrote: ``parse_int(E0)`` for
    ``parse_int(read_file(path: "x"))``), found by walking both trees alike; None when it is
    not there, or is not one line without backquotes (it is quoted between them)."""
    import dataclasses

    from agentflow.grammar import ast
    from agentflow.grammar.parser import parse_expression
    from agentflow.runtime.expressions import expr_text

    try:
        pairs: list[tuple[Any, Any]] = [(parse_expression(printed), parse_expression(text))]
    except Exception:  # noqa: BLE001 - a hand-edited plan's meta: not ours to judge
        return None
    while pairs:
        plan_node, written = pairs.pop()
        if isinstance(plan_node, list | tuple) and isinstance(written, list | tuple):
            if len(plan_node) == len(written):
                pairs.extend(zip(reversed(plan_node), reversed(written), strict=True))
            continue
        if not isinstance(plan_node, ast.Node) or not isinstance(written, ast.Node):
            continue
        if isinstance(plan_node, ast.Expr) and expr_text(plan_node) == failed:
            piece = text[written.span.start : written.span.end]
            return piece if piece and "`" not in piece and "\n" not in piece else None
        if type(plan_node) is not type(written):  # a step's id where its call is written
            continue
        names = [f.name for f in dataclasses.fields(plan_node) if f.name != "span"]
        pairs.extend((getattr(plan_node, n), getattr(written, n)) for n in reversed(names))
    return None


def quote_written(error: Any, let: dict[str, str] | None) -> None:
    """Quote, in ``error``'s message (in the `.flow`'s terms already), the failing
    sub-expression as :func:`let_of` found it written in its ``let`` (``written``): the call
    the user wrote, ``parse_int(read_file(path: "x"))``, not the step it became."""
    written = let.get("written") if let else None
    message = str(getattr(error, "message", ""))
    m = _CALLED_AS.search(message) if message.startswith("in function `") else None
    m = m or _QUOTED.search(message)
    if written is None or m is None:
        return
    error.message = message[: m.start(1)] + written + message[m.end(1) :]
    error.args = (error.message,)


_IDENT = re.compile(r"(?<![\w.$])[A-Za-z_][A-Za-z0-9_]*(?!\w)")


def _printed(entry: dict[str, Any]) -> Any:
    """A ``meta.lets`` entry's value in the plan's terms: its ``expr`` when the let reads a step
    (``text`` is then the `.flow`'s: ``match (agent(w) {…}) {…}``), else its ``text``."""
    return entry.get("expr", entry.get("text"))


def _written_out(text: str, written: dict[str, str], depth: int) -> str | None:
    """``text`` (a ``meta.lets`` entry's, which names the lets it reads) with each of those
    names replaced by its own text, parenthesized, as the step's template holds it; None when
    that grows past 20,000 characters or 50 levels (a let doubling another's)."""
    if depth > 50:
        return None
    out: list[str] = []
    last = 0
    size = len(text)
    for m in _IDENT.finditer(text):
        inner = written.get(m.group(0))
        if inner is None or inner == text:
            continue
        sub = _written_out(inner, written, depth + 1)
        if sub is None:
            return None
        out.append(text[last : m.start()])
        out.append(f"({sub})")
        last = m.end()
        size += len(sub)
        if size > 20_000:
            return None
    out.append(text[last:])
    return "".join(out)


def lets_by_name(error: Any, meta: Any) -> None:
    """Put back, in the failing sub-expression ``error``'s message quotes first, the names of
    the inlined ``let``s the step's ``meta.lets`` records (``sum(input.scores) / n`` →
    ``total / n``), as the `.flow` wrote it; the whole sub-expression being one ``let`` is
    :func:`let_of`'s (the error is placed at that ``let``).  Called with the message still in
    the plan's terms; errors only."""
    lets = meta.get("lets") if isinstance(meta, dict) else None
    message = str(getattr(error, "message", ""))
    m = _QUOTED.search(message)
    if not lets or not isinstance(lets, list) or m is None or not quotes_expressions(error):
        return
    entries = [e for e in lets if isinstance(e, dict) and isinstance(_printed(e), str)]
    written = {str(e.get("name")): _printed(e) for e in entries}
    printed: list[tuple[str, str]] = []
    from agentflow.grammar.parser import parse_expression
    from agentflow.runtime.expressions import expr_text

    for entry in entries:
        text = _written_out(_printed(entry), written, 0)
        try:
            printed.append((expr_text(parse_expression(text or "")), str(entry.get("name"))))
        except Exception:  # noqa: BLE001 - a hand-edited plan's meta: not ours to judge
            continue
    failed = named = m.group(1)
    for text, name in sorted(printed, key=lambda p: -len(p[0])):
        if text and text != failed:
            named = re.sub(rf"(?<![\w.$]){re.escape(text)}(?![\w(])", lambda _, n=name: n, named)
    if named != failed:
        error.message = message[: m.start(1)] + named + message[m.end(1) :]
        error.args = (error.message,)


def written_place(error: Any, meta: Any) -> str | None:
    """``file:line:col`` of the failing sub-expression ``error``'s message quotes first (in the
    `.flow`'s terms already) inside the step's expression as written (``meta.text``, which starts
    at ``meta.text_source``: compiler/lower_written.py), or None when it is not found there."""
    text = meta.get("text") if isinstance(meta, dict) else None
    at = Span.parse(meta.get("text_source")) if isinstance(meta, dict) else None
    m = _QUOTED.search(str(getattr(error, "message", "")))
    if not isinstance(text, str) or at is None or m is None or not quotes_expressions(error):
        return None
    k = text.find(m.group(1))
    if k < 0 or not m.group(1):
        return None
    before = text[:k]
    line = at.line + before.count("\n")
    column = k - before.rfind("\n") if "\n" in before else at.column + k
    return f"{at.file}:{line}:{column}"


def is_outlined(plan: Plan) -> bool:
    """True for a sub-plan the compiler outlined (its ``description`` ends with
    :data:`OUTLINED_MARK`), as opposed to one written by hand: the executor runs it as its
    calling step's body, and ``flowc runs show`` names its steps in the caller's terms."""
    return str(plan.description or "").endswith(OUTLINED_MARK)


def quotes_expressions(error: Any) -> bool:
    """True for a run-time error whose message quotes template expressions (the evaluator's and
    the library functions': :data:`SOURCE_TERMS_CODES`, a ``validation`` only when the evaluator
    raised it — other ``validation`` messages quote names of plans, schemas, fields)."""

    code = getattr(error, "code", None)
    if code not in SOURCE_TERMS_CODES:
        return False
    if getattr(error, "quotes_source", False):  # a control step's bound or limit, as compiled
        return True
    return code != Code.VALIDATION or isinstance(error, ExprError)


_INDEXED = re.compile(r"(do|item|judge|agent|round)\.(\d+)")

#: Control steps folded into their parent when they run inside a body (zero cost, pure).
_FOLDED_INSIDE = frozenset({"value", "reduce", "filter"})


#: the last segment of the label of a whole map item or loop round
_WHOLE = re.compile(r"(item|round) \d+\Z")


def outlined_call(tool: str, label: Any) -> str | None:
    """What the `.flow` calls a step (or its tool call) that runs a sub-plan the compiler
    outlined — a ``map``'s item, a ``loop``'s round, each a call of
    ``plan__<flow>__<stage>_<n>`` (docs/spec/LANGUAGE.md §8) whose ``label`` ends at that item
    or round: that last segment, ``item 0`` / ``round 2``.  None for every other step: the
    sub-plan's id is the compiler's, never a name to show (span names, ``flowc report``'s
    tool column; docs/observability.md "Span names")."""
    if not tool.startswith("plan__") or not isinstance(label, str):
        return None
    last = label.rsplit(SEP, 1)[-1]
    if _WHOLE.match(last):
        return last
    return parallel_branch(label)


def parallel_branch(label: Any) -> str | None:
    """``parallel › style`` when a step's ``label`` ends at a branch of a ``parallel`` block
    (the branch is one step, or a sub-plan the compiler outlined), else None."""
    if not isinstance(label, str):
        return None
    parts = label.split(SEP)
    if len(parts) >= 2 and parts[-2] == "parallel" and parts[-1].isidentifier():
        return SEP.join(parts[-2:])
    return None


def tool_label(tool: str) -> str:
    """A tool's name as the `.flow` writes it: ``read_file`` for ``builtin__read_file``; other
    names (``linear__list_issues``, ``plan__x``) as they are."""
    return tool.removeprefix("builtin__")


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_summary(tool: str, args: Any, limit: int = 100) -> str:
    """What a tool call works on, in a few words: ``src/app.py:12`` for ``read_file`` (path and
    1-based line ``offset``), ``"TODO" in src`` for ``grep``, the path for ``list_dir``,
    ``write_file`` and ``edit_file``, ``**/*.py in src`` for ``glob``; the arguments as compact
    JSON for every other tool.  At most ``limit`` characters."""
    name = tool_label(tool)
    if isinstance(args, dict) and tool.startswith("builtin__"):
        path = args.get("path")
        where = str(path) if isinstance(path, str) and path else "."
        if name == "read_file":
            offset = args.get("offset")
            shown = f"{where}:{offset}" if isinstance(offset, int) and offset > 1 else where
            return _short(shown, limit)
        if name in ("list_dir", "write_file", "edit_file"):
            return _short(where, limit)
        if name == "grep" and isinstance(args.get("pattern"), str):
            return _short(f"{json.dumps(args['pattern'], ensure_ascii=False)} in {where}", limit)
        if name == "glob" and isinstance(args.get("pattern"), str):
            return _short(f"{args['pattern']} in {where}", limit)
    try:
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        text = repr(args)
    return _short(text, limit)


@dataclass(slots=True)
class Names:
    """The user's names of one place (see the module docstring).  ``base``: the label without
    the ``let`` name (``audits › agent(auditor)`` for ``audits › a = agent(auditor)``), what
    the events under the step start from; ``context``: the label prefix of the steps under it."""

    stage: str | None
    item: int | None
    agent: str | None
    name: str | None
    label: str | None
    context: tuple[str, ...]
    base: str | None = None

    def fields(self) -> dict[str, Any]:
        """The event / error fields: ``stage``, ``item``, ``agent``, ``label`` (those known)."""
        out: dict[str, Any] = {}
        if self.stage is not None:
            out["stage"] = self.stage
        if self.item is not None:
            out["item"] = self.item
        if self.agent is not None:
            out["agent"] = self.agent
        if self.label is not None:
            out["label"] = self.label
        return out


class Place:
    """One running step: ``path``, ``step``, its tool, the ``parent`` place it runs in (None for
    a top-level step), and whether it is a call of a sub-plan the compiler outlined."""

    __slots__ = (
        "_event_fields",
        "_names",
        "_step_fields",
        "outlined",
        "parent",
        "path",
        "resolved_agent",
        "step",
        "tool",
    )

    def __init__(self, path: str, step: Step, tool: str, parent: Place | None, outlined: bool):
        self.path = path
        self.step = step
        self.tool = tool
        self.parent = parent
        self.outlined = outlined
        #: the agent an ``agent`` step runs as, once resolved (its ``step_started`` input)
        self.resolved_agent: str | None = None
        self._names: Names | None = None
        self._step_fields: dict[str, Any] | None = None
        self._event_fields: dict[str, Any] | None = None

    @property
    def source(self) -> str | None:
        """The step's `.flow` position (``meta.source``: ``file.flow:line:col``), or None."""
        source = self.step.meta.get("source")
        return str(source) if source else None

    def resolve_agent(self, rendered: Any) -> None:
        """Take the agent an ``agent`` step resolved (``rendered["agent"]``: the profile name or
        ``team.member``) into its names."""
        if self.tool == "agent" and isinstance(rendered, dict):
            label = rendered.get("agent")
            if isinstance(label, str) and label != self.resolved_agent:
                self.resolved_agent = label
                self._names = self._step_fields = self._event_fields = None

    @property
    def fold(self) -> bool:
        """True for compiler bookkeeping a progress view folds into its parent (only in
        compiled flows: a hand-written plan's steps are all the user's)."""
        if self.names().label is None:
            return False
        if self.tool == "decide" or self.outlined:
            return True
        return self.tool in _FOLDED_INSIDE and "/" in self.path

    def names(self) -> Names:
        """This place's :class:`Names` (computed once)."""
        if self._names is None:
            self._names = self._compute()
        return self._names

    def step_fields(self) -> dict[str, Any]:
        """The fields of this step's ``step_started`` / ``step_finished`` events: ``stage``,
        ``item``, ``agent``, ``name``, ``label`` (those known) and ``fold: true`` for
        bookkeeping.  The same dict each time: do not change it."""
        out = self._step_fields
        if out is None:
            names = self.names()
            out = names.fields()
            if names.name is not None:
                out["name"] = names.name
            if self.fold:
                out["fold"] = True
            self._step_fields = out
        return out

    def event_fields(self, path: str) -> dict[str, Any]:
        """The fields of an event at ``path`` (this step's path or below it) that is not a
        step event: :meth:`names_below` as ``stage``, ``item``, ``agent``, ``label``.  For this
        step's own path, the same dict each time: do not change it."""
        if path != self.path:
            return self.names_below(path).fields()
        out = self._event_fields
        if out is None:
            out = self._event_fields = self.names_below(path).fields()
        return out

    def names_below(self, path: str) -> Names:
        """The names of an event at ``path``, this step's path or a place under it that is not
        a step (an agent's tool call, a judge, a filter item): this step's, without its ``let``
        name, with the rest of the path appended."""
        names = self.names()
        parts: list[str] = []
        item = None
        if path.startswith(self.path + "/"):
            parts, item = _parts(path[len(self.path) + 1 :].split("/"), after_round=False)
        base = names.base
        return Names(
            names.stage,
            item if item is not None else names.item,
            names.agent,
            None,
            SEP.join((base, *parts)) if base is not None else None,
            names.context + tuple(parts),
            base,
        )

    # -- derivation

    def _compute(self) -> Names:
        step, parent = self.step, self.parent
        meta = step.meta
        up = parent.names() if parent is not None else None
        own_stage = meta.get("stage")
        own_stage = str(own_stage) if own_stage else None
        stage = own_stage or (up.stage if up is not None else None)
        if parent is not None:
            rest = self.path[len(parent.path) + 1 :].split("/")
            branch = parent.tool == "parallel"
        else:
            rest = self.path.split("/")
            branch = False
        parts, item = _parts(rest[:-1], after_round=False)
        last = rest[-1]
        m = _INDEXED.fullmatch(last) if "." in last else None
        if m is not None and m.group(1) == "do":
            item = int(m.group(2))
            parts.append(f"item {item}")
        elif m is not None and m.group(1) == "round":  # a `loop`'s round (1-based)
            parts.append(f"round {m.group(2)}")
        elif branch:  # a `parallel` branch: `parallel › style`, by the name the plan gives it
            parts.extend(("parallel", last))
        if item is None and up is not None:
            item = up.item
        agent = self._agent(up)
        context: list[str] = list(up.context) if up is not None else []
        if up is None and own_stage:
            context.append(own_stage)
        context.extend(parts)
        if up is not None and own_stage and own_stage != up.stage:
            context.append(own_stage)  # a plan of another flow, called from this one
        name = meta.get("name")
        name = str(name) if name else None
        if stage is None:
            return Names(None, item, agent, name, None, tuple(context))
        what = self._what(agent)
        base = SEP.join([*context, what] if what else context)
        label = SEP.join([*context, f"{name} = {what}"]) if name and what else base
        if what and (
            self.tool == "agent" or (self.tool.startswith("plan__") and not self.outlined)
        ):
            context.append(what)  # the places under an agent or a called plan name it
        return Names(stage, item, agent, name, label, tuple(context), base)

    def _agent(self, up: Names | None) -> str | None:
        if self.tool != "agent":
            return up.agent if up is not None else None
        meta = self.step.meta
        alias = meta.get("agent")
        resolved = self.resolved_agent
        target = self.step.input.get("agent") if isinstance(self.step.input, dict) else None
        kind = target.get("kind") if isinstance(target, dict) else None
        if resolved is None and isinstance(target, dict):
            resolved = str(target.get("name") or target.get("team") or "") or None
        if alias and kind in ("team.main", "team.member"):
            member = resolved.partition(".")[2] if resolved and "." in resolved else None
            return f"{alias}.{member}" if member else str(alias)
        return str(alias) if alias else resolved

    def _what(self, agent: str | None) -> str:
        tool = self.tool
        if tool == "agent":
            return f"agent({agent})" if agent else "agent"
        if tool == "exit":  # `require c else fail m`, `if c { fail m }` (meta.kind), `fail m`
            inp = self.step.input
            if self.step.meta.get("kind") == "if":
                return "if"
            return "require" if isinstance(inp, dict) and inp.get("when") is not None else "fail"
        if tool == "decide":  # an `if`, or a `match` with an effectful arm (meta.match)
            return "match" if isinstance(self.step.meta.get("match"), dict) else "if"
        if self.outlined:
            return ""
        if isinstance(self.step.meta.get("kind"), str):  # the construct it is the work of
            return str(self.step.meta["kind"])
        if tool == "value" and not self.step.meta.get("name"):
            # a stage's or a body's value, as the `.flow` writes it: its `return`, or nothing
            # of its own for a last expression (`map xs as it { f(it) }`: `s › item 1`)
            return "" if self.step.meta.get("implicit") else "return"
        return tool_label(tool)


def _parts(segments: list[str], *, after_round: bool) -> tuple[list[str], int | None]:
    """The label parts of path ``segments`` between two places, and the innermost item index
    among them: ``do.N`` / ``item.N`` → ``item N``, ``judge.N`` → ``judge N``, ``round.N`` (a
    ``loop``'s) → ``round N``, a tool called in
    an agent round (the segment after ``agent.N``) → its name; step ids, branches of ``decide``
    and round numbers name nothing."""
    parts: list[str] = []
    item: int | None = None
    for seg in segments:
        m = _INDEXED.fullmatch(seg)
        if m is not None:
            kind, n = m.group(1), int(m.group(2))
            if kind in ("do", "item"):
                item = n
                parts.append(f"item {n}")
            elif kind == "judge":
                parts.append(f"judge {n}")
            elif kind == "round":
                parts.append(f"round {n}")
            after_round = kind == "agent"
            continue
        if after_round:
            parts.append(tool_label(seg))
        after_round = False
    return parts, item


def in_source_terms(
    message: str,
    place: Place | None,
    plan: Any,
    cache: dict[int, Any] | None = None,
    *,
    parent: Place | None = None,
    stage: str | None = None,
) -> str:
    """``message`` (an error of the step at ``place`` of ``plan``, or with ``place`` None of the
    plan's ``finish``, run under ``parent``) with the expressions it quotes between backquotes
    in the `.flow`'s terms: ``E0[0]`` → ``ticket[0]``, ``item.title`` → ``t.title``
    (:mod:`agentflow.ir.names`).  Text outside backquotes (values, a tool's words) is left
    alone, and so is the message of a plan not compiled from a `.flow`.  ``cache``:
    ``{id(plan): step names}`` kept by the caller; ``stage``: the stage a ``finish`` is the
    value of (its own steps are read as themselves there: ``ir.names.step_names_in_stage``)."""

    if "`" not in message:
        return message
    if cache is not None and id(plan) in cache:
        plan_names = cache[id(plan)]
    else:
        plan_names = step_names(plan)
        if cache is not None:
            cache[id(plan)] = plan_names
    chain: list[tuple[Any, bool]] = []
    up = parent
    if place is not None:
        if place.tool in ("loop", "filter"):  # its gate, `until` and `else` read what it names
            chain.append((place.step, False))
        up = place.parent
    while up is not None:
        chain.append((up.step, up.outlined))
        up = up.parent
    # a step's `select` reads the raw result (`parse_int(result.answer)`): the value the
    # `.flow` binds to a `let` is that name (`parse_int(decision)`)
    own = place.step.meta.get("name") if place is not None and place.step.select else None
    if own is None and place is not None and place.step.select and place.step.meta.get("source"):
        own = step_label(place.step)  # bound to no `let` the step keeps: its call, `read_file(…)`
    if not plan_names and not chain and not own:
        return message
    if place is not None:  # else the finish's ``stage``, as the caller gives it
        stage = place.step.meta.get("stage")
    if plan_names and isinstance(stage, str):  # another stage's `let`s are out of its scope
        plan_names = step_names_in_stage(plan, plan_names, stage)
    names, outer = scope_names(chain, plan_names)

    # an agent's or an ask's select reads its value in the result (`result.output`); any
    # other step's (a tool's, a map's) reads the result itself (`parse_int(result)`)
    read = _RESULT if place is not None and place.tool in ("agent", "ask") else _BARE_RESULT

    def shown(expr: str) -> str:
        if own:
            expr = read.sub(str(own), expr)
        return rename(expr, names, outer=outer)

    called = _IN_FUNCTION.match(message)
    if called is not None:  # only the call is the step's: the rest is the function's own text
        return f"{message[: called.start(1)]}{shown(called.group(1))}{message[called.end(1) :]}"
    return _QUOTED.sub(lambda m: "`" + shown(m.group(1)) + "`", message)


#: a failure inside a user function's body (runtime/expressions.py ``_in_function``): the call
#: (group 1) is written in the step's names, what follows in the function's own
_IN_FUNCTION = re.compile(r"in function `[^`]*`, called as `([^`]*)`: ")


#: a `select`'s read of the value its step gives (an ask's answer, an agent's output)
_RESULT = re.compile(r"(?<![\w.])result\.(?:answer|output)(?![\w(])")
#: … and of the result of any other step (a tool's, a `map`'s)
_BARE_RESULT = re.compile(r"(?<![\w.])result(?![\w(])")


def written_steps(plan: Plan, results: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``RunResult.steps``: for each top-level step of ``plan`` that ``results`` holds (by
    id), the step as the `.flow` writes it — ``{label, stage, source}``, those known:
    ``{"E0": {"label": "approve › ok = ask", "stage": "approve", "source": "a.flow:3:12"}}``;
    a step with none of them (a hand-written plan's) is left out (docs/reference/cli.md
    "flowc run --json")."""
    out: dict[str, dict[str, str]] = {}
    for step in plan.steps:
        if not step.id or step.id not in results:
            continue
        fields = Place(step.id, step, step.tool_name, None, False).step_fields()
        entry = {k: str(fields[k]) for k in ("label", "stage") if fields.get(k) is not None}
        source = step.meta.get("source")
        if source:
            entry["source"] = str(source)
        if entry:
            out[step.id] = entry
    return out
