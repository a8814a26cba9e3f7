"""Load a plan file into validated models (docs/spec/PLAN_IR.md §1–6).

``load_plan(path)`` / ``load_plan_text(text, file)`` / ``load_plan_data(data, file)`` return a
:class:`~agentflow.ir.models.Plan` whose steps carry their compiled templates, or raise
:class:`agentflow.errors.PlanLoadError` listing *every* problem found: one
:class:`~agentflow.core.diagnostics.Diagnostic` each, with a ``plan-*`` code and the span of the
offending YAML node (for in-memory data, the value path such as ``steps[2].input.do`` in the
message).  :func:`check_plan_text` / :func:`check_plan_data` return the problems instead of raising,
with the plan as far as it could be built, so that tool resolution can run over it too
(``flowc plan validate`` reports everything in one run).

YAML is read with ``yaml.compose`` (libyaml's ``CSafeLoader`` when available) so every node keeps
its position; scalars are resolved with YAML 1.2 core rules, so ``on:``/``yes``/``no`` stay text.
"""

from __future__ import annotations

import math
import re
from pathlib import Path as FsPath
from typing import Any, NamedTuple, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentflow.core.diagnostics import (
    PLAN_CYCLE,
    PLAN_DUPLICATE_KEY,
    PLAN_INVALID_BODY,
    PLAN_INVALID_VALUE,
    PLAN_MISSING_FIELD,
    PLAN_NOT_JSON,
    PLAN_SYNTAX,
    PLAN_TOO_DEEP,
    PLAN_UNKNOWN_FIELD,
    PLAN_UNREADABLE,
    Diagnostic,
    did_you_mean,
    suggested,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import BODY_KEYS
from agentflow.errors import PlanLoadError
from agentflow.ir.models import CAMEL_ALIASES, Backoff, Finish, Plan, PlanFunction, Retry, Step
from agentflow.ir.templates import NodeSource, Path, SourceMap, path_str
from agentflow.ir.validate import call_cycles, validate_plan, walk_steps

_Loader: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_MAX_DEPTH = 200

_M = TypeVar("_M", bound=BaseModel)

_INT_RE = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF_RE = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(nan|NaN|NAN)")

_IMPLICIT_RESOLVER = yaml.resolver.Resolver()


# ---------------------------------------------------------------------------------------------
# Public API


def load_plan(path: str | FsPath) -> Plan:
    """Read and load a plan file (YAML or JSON).

    Raises :class:`PlanLoadError` when the file cannot be read or the plan is invalid.
    """
    return load_plan_text(read_plan_text(path), str(path))


def read_plan_text(path: str | FsPath) -> str:
    """The text of a plan file (UTF-8). Raises :class:`PlanLoadError` ("cannot read plan file:
    …") when it is missing, unreadable or not UTF-8."""
    file = str(path)
    try:
        return FsPath(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PlanLoadError(
            [Diagnostic(PLAN_UNREADABLE, f"cannot read plan file: {reason}", Span.at(file))]
        ) from None


def load_plan_text(text: str, file: str = "<plan>") -> Plan:
    """Parse plan text (YAML or JSON) and load it, keeping the position of every node.

    Raises :class:`PlanLoadError` with every problem (YAML syntax errors included) and
    ``sources`` = ``{file: text}``.
    """
    plan, problems = check_plan_text(text, file)
    if problems:
        raise PlanLoadError(problems, {file: text})
    assert plan is not None
    return plan


def load_plan_data(data: Any, file: str = "<plan>", *, source_map: SourceMap | None = None) -> Plan:
    """Load a plan from plain data (e.g. the compiler's output) and validate it structurally.

    Without ``source_map``, problems carry the value path (``steps[2].input.do``) in their
    message and a whole-file span. Raises :class:`PlanLoadError` listing every problem.
    """
    plan, problems = check_plan_data(data, file, source_map=source_map)
    if problems:
        raise PlanLoadError(problems)
    assert plan is not None
    return plan


def check_plan_text(text: str, file: str = "<plan>") -> tuple[Plan | None, list[Diagnostic]]:
    """Every load problem of plan text, sorted by position, and the plan as far as it could be
    built (None when the text is not YAML, is empty, or uses an alias).

    Problems of the YAML itself (duplicate keys, tags, NaN, non-text keys) do not stop the
    checking: the value in question is left out, and nothing more is reported inside it.  The
    plan returned with problems is for further checks only (tool resolution): never run it.
    """
    try:
        data, smap, problems, poisoned = _parse(text, file)
    except PlanLoadError as exc:
        return None, exc.diagnostics
    plan, more = check_plan_data(data, file, source_map=smap)
    more = [d for d in more if not any(_inside(d.span, p) for p in poisoned)]
    return plan, _sorted(problems + more)


def check_plan_data(
    data: Any, file: str = "<plan>", *, source_map: SourceMap | None = None
) -> tuple[Plan | None, list[Diagnostic]]:
    """Every structural problem of plan data (:func:`load_plan_data` without the raising),
    sorted, and the plan as far as it could be built (None when ``data`` is not a mapping)."""
    problems: list[Diagnostic] = []
    builder = _Builder(file, source_map, problems)
    plan = builder.plan(data, (), sub=False)
    if plan is not None:
        plan.source_file = file
        problems.extend(validate_plan(plan, file))
    return plan, _sorted(problems)


def parse_yaml(text: str, file: str = "<plan>") -> tuple[Any, SourceMap]:
    """Compose YAML text into plain data plus a :class:`SourceMap` of node positions.

    Mapping keys stay text as written (``on`` is not ``True``); plain scalars follow YAML 1.2 core
    resolution. Raises :class:`PlanLoadError` on YAML syntax errors, duplicate keys, non-scalar
    keys, anchors/aliases and tags other than the standard scalar ones (see
    :func:`_refused_features`), NaN/infinite numbers and empty documents.
    """
    data, smap, problems, _ = _parse(text, file)
    if problems:
        raise PlanLoadError(problems, {file: text})
    return data, smap


def _parse(text: str, file: str) -> tuple[Any, SourceMap, list[Diagnostic], list[Span]]:
    """``(data, source map, problems, spans of the values left out)``; raises
    :class:`PlanLoadError` when there is no data to go on: YAML syntax errors, an empty
    document, anchors and aliases (refused before anything is built, see
    :func:`_refused_features`)."""
    smap = SourceMap(file)
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    smap.line_starts = starts
    sources = {file: text}
    refused: list[Diagnostic] = []
    try:
        if _MAYBE_FEATURES.search(text):
            found = _refused_features(text, file)
            if found.stop:
                raise PlanLoadError(found.problems, sources)
            refused, tagged = found.problems, found.tagged
        else:
            tagged = set()
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Span.at(file, mark.line + 1, mark.column + 1) if mark else Span.at(file)
        msg = exc.problem or str(exc)
        if exc.context:
            msg = f"{exc.context}: {msg}" if exc.problem else msg
        raise PlanLoadError(
            [Diagnostic(PLAN_SYNTAX, f"YAML syntax error: {msg}", loc)], sources
        ) from None
    except yaml.YAMLError as exc:
        raise PlanLoadError(
            [Diagnostic(PLAN_SYNTAX, f"YAML error: {exc}", Span.at(file))], sources
        ) from None
    if root is None:
        raise PlanLoadError(
            [Diagnostic(PLAN_SYNTAX, "the plan file is empty", Span.at(file, 1, 1))], sources
        )
    build = _Construct(smap, text.split("\n"), tagged)
    data = build.value(root, (), set(), None)
    return data, smap, _sorted(refused + build.problems), build.left_out


def _inside(span: Span, outer: Span) -> bool:
    """Whether ``span`` starts inside ``outer`` (same file, by character offset)."""
    return span.file == outer.file and span.line > 0 and outer.start <= span.start < outer.end


# ---------------------------------------------------------------------------------------------
# YAML features plans do not use

_MAYBE_FEATURES = re.compile(r"[&*!]")
_CORE = "tag:yaml.org,2002:"
#: Explicit tags a plan may carry, by node kind (the standard scalar tags; ``!!map``/``!!seq``
#: on the matching collection).
_ALLOWED_TAGS: dict[type, frozenset[str]] = {
    yaml.ScalarEvent: frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null")),
    yaml.MappingStartEvent: frozenset({_CORE + "map"}),
    yaml.SequenceStartEvent: frozenset({_CORE + "seq"}),
}
_MAX_FEATURE_PROBLEMS = 20
ANCHOR_MESSAGE = "YAML anchors and aliases are not allowed in plans"


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class _Refused(NamedTuple):
    """What :func:`_refused_features` found: the problems; whether building the data must not
    even be tried (an alias is used, or there were too many problems to look further); where
    the refused tags are (1-based line and column of each tagged node)."""

    problems: list[Diagnostic]
    stop: bool
    tagged: set[tuple[int, int]]


def _refused_features(text: str, file: str) -> _Refused:
    """Anchors/aliases and non-standard tags, each at file:line:col.

    Aliases are refused outright rather than expanded under a bound: a plan is a tree written by
    the compiler (which never emits them) or by hand, and refusing them makes an alias bomb
    ("billion laughs") impossible. One problem per anchor name, at its first appearance.
    Tags other than the standard scalar ones would otherwise be silently reinterpreted
    (``!!binary`` text, ``!!set`` mapping, ``!!python/object`` string). At most 20 problems.
    Reads the event stream only (nothing is built); raises ``yaml.YAMLError`` on bad syntax.
    """
    problems: list[Diagnostic] = []
    anchors: dict[str, list[Any]] = {}  # name -> [location, uses]
    tagged: set[tuple[int, int]] = set()
    stop = False
    hint = "write the value out in full"
    for ev in yaml.parse(text, Loader=_Loader):
        kind = type(ev)
        if not isinstance(ev, yaml.NodeEvent) or (
            kind is not yaml.AliasEvent and kind not in _ALLOWED_TAGS
        ):
            continue
        mark = ev.start_mark
        where = Span.at(file, mark.line + 1, mark.column + 1) if mark else Span.at(file)
        if ev.anchor is not None:
            seen = anchors.get(ev.anchor)
            if seen is None:
                anchors[ev.anchor] = seen = [where, 0]
            if kind is yaml.AliasEvent:
                seen[1] += 1
                stop = True
        tag = ev.tag if isinstance(ev, yaml.ScalarEvent | yaml.CollectionStartEvent) else None
        if tag is not None and tag not in _ALLOWED_TAGS[kind]:
            tagged.add((where.line, where.column))
            problems.append(
                Diagnostic(
                    PLAN_NOT_JSON,
                    f"YAML tag `{_short_tag(tag)}` is not allowed in plans",
                    _mark_span(file, ev.start_mark, ev.end_mark),
                    hint="plans hold JSON values; the only tags allowed are "
                    "!!str, !!int, !!float, !!bool and !!null",
                )
            )
        if len(problems) + len(anchors) >= _MAX_FEATURE_PROBLEMS:
            stop = True
            break
    for name, (where, uses) in anchors.items():
        used = f", used {uses} time{'s' if uses != 1 else ''}" if uses else ""
        problems.append(
            Diagnostic(PLAN_NOT_JSON, f"{ANCHOR_MESSAGE} (`&{name}`{used})", where, hint=hint)
        )
    return _Refused(problems, stop, tagged)


def _mark_span(file: str, start: Any, end: Any) -> Span:
    """The span from one YAML mark to another (``end`` exclusive; both 0-based in PyYAML)."""
    return Span(
        file,
        start.line + 1,
        start.column + 1,
        end.line + 1,
        end.column + 1,
        getattr(start, "index", 0) or 0,
        getattr(end, "index", 0) or 0,
    )


# ---------------------------------------------------------------------------------------------
# YAML nodes → data


def _scalar_source(node: yaml.ScalarNode, lines: list[str], file: str) -> NodeSource:
    m = node.start_mark
    line, col = m.line + 1, m.column + 1
    src = NodeSource(Span(file, line, col, line, col))
    style = node.style
    if style in ("|", ">"):
        # content starts on the next non-header line; its indentation is the block's
        i = m.line + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines):
            indent = len(lines[i]) - len(lines[i].lstrip(" "))
            src.text = Span(file, line + 1, indent + 1, line + 1, indent + 1)
            src.block_indent = indent + 1
        else:
            src.text = Span(file, line, col + 1, line, col + 1)
    elif style in ("'", '"'):
        src.text = Span(file, line, col + 1, line, col + 1)
        src.block_indent = 1
        end = node.end_mark
        if end.line == m.line and m.line < len(lines):
            src.raw_offsets = _quoted_offsets(lines[m.line][m.column + 1 : end.column - 1], style)
    else:
        src.text = src.at
        src.block_indent = 1
    return src


#: raw length of a double-quoted escape by its letter (``\x41``, ``\u00e9``, ``\U0001F600``)
_ESCAPE_LEN = {"x": 4, "u": 6, "U": 10}


def _quoted_offsets(raw: str, style: str) -> list[int] | None:
    """For the raw text between a one-line scalar's quotes: the raw offset of each decoded
    character plus one past the end, or None when nothing is escaped (offsets are the identity)."""
    if ("\\" if style == '"' else "''") not in raw:
        return None
    offsets: list[int] = []
    i = 0
    while i < len(raw):
        offsets.append(i)
        if style == '"' and raw[i] == "\\" and i + 1 < len(raw):
            i += _ESCAPE_LEN.get(raw[i + 1], 2)
        elif style == "'" and raw.startswith("''", i):
            i += 2
        else:
            i += 1
    offsets.append(len(raw))
    return offsets


def resolve_plain(value: str) -> Any:
    """The value of a plain (unquoted) YAML scalar under YAML 1.2 core-schema rules."""
    if value in ("", "~", "null", "Null", "NULL"):
        return None
    if value in ("true", "True", "TRUE"):
        return True
    if value in ("false", "False", "FALSE"):
        return False
    if _INT_RE.fullmatch(value):
        if value[:2] == "0o":
            return int(value[2:], 8)
        return int(value, 16) if value[:2] == "0x" else int(value)
    if _FLOAT_RE.fullmatch(value):
        return float(value)
    if _INF_RE.fullmatch(value):
        return -math.inf if value.startswith("-") else math.inf
    if _NAN_RE.fullmatch(value):
        return math.nan
    return value


def _resolve_scalar(node: yaml.ScalarNode) -> Any:
    value = node.value
    tag = node.tag
    if node.style:  # quoted or block (libyaml gives "" for plain): text unless tagged
        implicit = False
    else:
        # types-PyYAML leaves BaseResolver.resolve unannotated
        resolved = _IMPLICIT_RESOLVER.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, value, (True, False)
        )
        implicit = tag == resolved
    if implicit:
        return resolve_plain(value)
    short = tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else None
    try:
        if short == "int":
            return int(value.replace("_", ""), 0)
        if short == "float":
            return float(value.replace("_", ""))
    except ValueError:
        raise _BadTag(short) from None
    if short == "bool":
        low = value.strip().lower()  # YAML 1.2 core schema: only true / false
        if low in ("true", "false"):
            return low == "true"
        raise _BadTag(short)
    if short == "null":
        if value.strip().lower() in ("", "~", "null"):
            return None
        raise _BadTag(short)
    return value


class _BadTag(ValueError):
    """A scalar its explicit tag cannot convert (``!!int abc``); ``args[0]`` is the tag name."""


class _Construct:
    """Builds plain data from composed YAML nodes, recording every node's span in ``smap``.

    Values that have no JSON meaning (a refused tag, ``!!int abc``, NaN, a mapping as a key)
    are reported, left out (None, or the key skipped) and their spans kept in ``left_out``, so
    later checks say nothing more about them.
    """

    def __init__(self, smap: SourceMap, lines: list[str], tagged: set[tuple[int, int]]):
        self.smap = smap
        self.lines = lines
        self.tagged = tagged
        self.problems: list[Diagnostic] = []
        self.left_out: list[Span] = []

    def span(self, node: yaml.Node) -> Span:
        """The whole node: first character to one past the last."""
        s, e = node.start_mark, node.end_mark
        smap = self.smap
        return Span(
            smap.file,
            s.line + 1,
            s.column + 1,
            e.line + 1,
            e.column + 1,
            smap.offset(s.line + 1, s.column + 1),
            smap.offset(e.line + 1, e.column + 1),
        )

    def refuse(self, node: yaml.Node, code: str, message: str, hint: str | None = None) -> None:
        span = self.span(node)
        self.left_out.append(span)
        if message:
            self.problems.append(Diagnostic(code, message, span, hint=hint))

    def value(self, node: yaml.Node, path: Path, stack: set[int], key: Span | None) -> Any:
        if len(path) > _MAX_DEPTH:
            self.refuse(node, PLAN_TOO_DEEP, "the plan nests too deeply")
            return None
        if id(node) in stack:  # pragma: no cover - aliases are refused before composing
            self.refuse(node, PLAN_NOT_JSON, "recursive YAML alias")
            return None
        smap = self.smap
        span = self.span(node)
        if isinstance(node, yaml.ScalarNode):
            src = _scalar_source(node, self.lines, smap.file)
            src.at = span
        else:
            src = NodeSource(span)
        src.key = key
        smap.nodes[path] = src
        if (span.line, span.column) in self.tagged:
            self.refuse(node, PLAN_NOT_JSON, "")  # reported with the tag
            return None
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        stack = stack | {id(node)}
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, (*path, i), stack, None) for i, item in enumerate(node.value)]
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                self.refuse(knode, PLAN_NOT_JSON, "mapping keys must be plain text")
                self.left_out.append(self.span(vnode))
                continue
            kspan = self.span(knode)
            key_text = knode.value
            if key_text in out:
                self.problems.append(
                    Diagnostic(
                        PLAN_DUPLICATE_KEY,
                        f"{_prefix(path)}duplicate key `{key_text}`",
                        kspan,
                    )
                )
                continue
            out[key_text] = self.value(vnode, (*path, key_text), stack, kspan)
        return out

    def scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        try:
            value = _resolve_scalar(node)
        except _BadTag as bad:
            self.refuse(
                node,
                PLAN_NOT_JSON,
                f"{_prefix(path)}`{node.value}` is not a valid `!!{bad.args[0]}`",
                "fix the value or remove the tag; quote it to mean text",
            )
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.refuse(
                node,
                PLAN_NOT_JSON,
                f"{_prefix(path)}`{node.value}` is not a JSON number "
                "(NaN and infinities cannot be written in a plan)",
                "quote it to mean text",
            )
            return None
        return value


def _prefix(path: Path) -> str:
    text = path_str(path)
    return f"{text}: " if text else ""


def _sorted(problems: list[Diagnostic]) -> list[Diagnostic]:
    """``problems`` without repeats (same place, same message), by position (whole-file
    problems last)."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in problems:
        key = (str(p.span), p.message)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return sorted(unique, key=lambda p: (p.span.line == 0, p.span.line, p.span.column))


# ---------------------------------------------------------------------------------------------
# Data → models


def _fields(model: type[BaseModel]) -> dict[str, str]:
    """Accepted key → canonical field name (aliases included)."""
    out = {}
    for name, info in model.model_fields.items():
        out[name] = name
        if info.alias:
            out[info.alias] = name
    return out


class _Builder:
    """Builds models from data, turning every pydantic error into a positioned problem."""

    def __init__(self, file: str, smap: SourceMap | None, problems: list[Diagnostic]):
        self.file = file
        self.smap = smap
        self.problems = problems
        #: value paths of required fields written with a typo (reported as unknown fields)
        self.misspelt: set[Path] = set()

    def problem(
        self,
        path: Path,
        message: str,
        *,
        code: str = PLAN_INVALID_VALUE,
        hint: str | None = None,
        key: bool = False,
    ) -> None:
        loc = self.smap.location(path, key=key) if self.smap else Span.at(self.file)
        self.problems.append(Diagnostic(code, f"{_prefix(path)}{message}", loc, hint=hint))

    def check_keys(
        self,
        data: dict[str, Any],
        model: type[BaseModel],
        path: Path,
        fallback: str | None = None,
    ) -> None:
        """Unknown fields (with a hint: a did-you-mean, else ``fallback``) and fields given
        under two spellings."""
        accepted = _fields(model)
        canon_seen: dict[str, str] = {}
        for key in data:
            if not isinstance(key, str) or key not in accepted:
                names = sorted(n for n in model.model_fields)
                hint = did_you_mean(str(key), names)
                self.problem(
                    (*path, key),
                    f"unknown field `{key}`",
                    code=PLAN_UNKNOWN_FIELD,
                    hint=hint or fallback,
                    key=True,
                )
                if hint is not None:  # its "missing required field" is this same mistake
                    self.misspelt.add((*path, suggested(hint)))
                continue
            canon = accepted[key]
            if canon in canon_seen:
                self.problem(
                    (*path, key),
                    f"`{key}` and `{canon_seen[canon]}` are the same field; give it once",
                    code=PLAN_DUPLICATE_KEY,
                    key=True,
                )
            canon_seen[canon] = key

    def validate(self, model: type[_M], data: dict[str, Any], path: Path) -> _M | None:
        """``model.model_validate(data)``; errors become problems (unknown fields excepted:
        :meth:`check_keys` reports those)."""
        self.last_bad: set[str] = set()
        self.last_locs: list[Path] = []
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                loc = err["loc"]
                self.last_locs.append(tuple(loc))
                if loc:
                    self.last_bad.add(CAMEL_ALIASES.get(str(loc[0]), str(loc[0])))
                etype = err["type"]
                if etype == "extra_forbidden":
                    continue
                field = str(loc[-1]) if loc else ""
                canon = CAMEL_ALIASES.get(field, field)
                if etype == "missing":
                    parent = (*path, *loc[:-1])
                    if (*parent, canon) not in self.misspelt:
                        self.problem(
                            parent, f"missing required field `{canon}`", code=PLAN_MISSING_FIELD
                        )
                    continue
                msg = err["msg"]
                msg = msg[:1].lower() + msg[1:]
                sub = (*path, *loc)
                # pydantic appends union member names to the loc: cut them off
                sub = tuple(p for p in sub if not (isinstance(p, str) and "[" in p and "]" in p))
                self.problem(sub, msg)
            return None

    # -- plans -----------------------------------------------------------------------------

    def plan(self, data: Any, path: Path, *, sub: bool) -> Plan | None:
        if not isinstance(data, dict):
            self.problem(path, "a plan must be a mapping with `name` and `steps`")
            return None
        self.check_keys(data, Plan, path)
        broken: set[str] = set() if "steps" in data else {"steps"}
        steps: list[Step] = []
        raw_steps = data.get("steps")
        if "steps" in data:
            if not isinstance(raw_steps, list):
                self.problem((*path, "steps"), "`steps` must be a list of steps")
                broken.add("steps")
            else:
                for i, raw in enumerate(raw_steps):
                    step = self.step(raw, (*path, "steps", i))
                    if step is not None:
                        steps.append(step)
                    else:  # already reported; `steps` is not empty, just wrong
                        broken.add("steps")
        plans: dict[str, Plan] = {}
        if "plans" in data:
            raw_plans = data["plans"]
            if sub:
                self.problem(
                    (*path, "plans"),
                    "a sub-plan cannot have its own `plans`",
                    code=PLAN_UNKNOWN_FIELD,
                    key=True,
                )
            elif not isinstance(raw_plans, dict):
                self.problem((*path, "plans"), "`plans` must map names to sub-plans")
            else:
                for name, raw in raw_plans.items():
                    child = self.plan(raw, (*path, "plans", name), sub=True)
                    if child is not None:
                        plans[name] = child
        finish = None
        if data.get("finish") is not None:
            raw = data["finish"]
            if not isinstance(raw, dict):
                self.problem((*path, "finish"), "`finish` must be a mapping")
            else:
                self.check_keys(raw, Finish, (*path, "finish"))
                known = {k: v for k, v in raw.items() if k in Finish.model_fields}
                finish = self.validate(Finish, known, (*path, "finish"))
                if finish is None:
                    broken.add("finish")
        functions = self.functions(data, path, broken)
        known = {k: v for k, v in data.items() if k in _fields(Plan)}
        known["steps"] = steps
        known["plans"] = plans
        if functions is not None:
            known["functions"] = functions
        if finish is not None:
            known["finish"] = finish
        else:
            known.pop("finish", None)
        if "steps" not in data:
            known.pop("steps")
        plan = self.validate(Plan, known, path)
        if plan is None:
            # keep going with what is valid so every problem gets reported
            values: dict[str, Any] = {
                "steps": steps,
                "plans": plans,
                "finish": finish,
                "functions": functions or {},
            }
            for key in ("version", "name", "description", "deadline"):
                if key in data:
                    values[key] = data[key]
            schema = data.get("input_schema", data.get("inputSchema"))
            values["input_schema"] = schema if isinstance(schema, dict) else None
            for key in ("version", "name", "description", "deadline"):
                if key in values and not isinstance(values[key], int if key == "version" else str):
                    broken.add(key)
                    values[key] = 1 if key == "version" else None
            if not isinstance(values.get("name"), str):
                broken.add("name")
                values["name"] = ""
            plan = Plan.model_construct(**values)
            broken.add("*")
        plan._source_map = self.smap
        plan._path = tuple(path)
        plan._broken = broken
        return plan

    def functions(
        self, data: dict[str, Any], path: Path, broken: set[str]
    ) -> dict[str, PlanFunction] | None:
        """The plan's ``functions`` entry by entry (docs/spec/PLAN_IR.md "functions"): each
        entry's unknown fields (`plan-unknown-field`, with a did-you-mean) and invalid values
        reported at that entry, the valid ones kept (an entry with only an unknown field too),
        so that one bad entry never drops the others; a name whose entry is invalid is marked
        ``function:NAME`` in ``broken`` (its calls are not reported again). None when the plan
        has no ``functions`` mapping."""
        if "functions" not in data:
            return None
        raw_fns = data["functions"]
        if not isinstance(raw_fns, dict):
            self.problem(
                (*path, "functions"),
                "`functions` must map names to functions (`{params: [names], expr: body}`)",
            )
            broken.add("functions")
            return {}
        out: dict[str, PlanFunction] = {}
        for name, raw in raw_fns.items():
            fpath = (*path, "functions", name)
            if not isinstance(raw, dict):
                self.problem(
                    fpath, "a function must be a mapping with `params` and `expr`", key=True
                )
                broken.add(f"function:{name}")
                continue
            self.check_keys(raw, PlanFunction, fpath, "a function has `params`, `expr` and `meta`")
            fields = {k: v for k, v in raw.items() if k in PlanFunction.model_fields}
            fn = self.validate(PlanFunction, fields, fpath)
            if fn is None:
                broken.add(f"function:{name}")
                continue
            out[str(name)] = fn
        return out

    # -- steps -----------------------------------------------------------------------------

    def step(self, data: Any, path: Path) -> Step | None:
        if not isinstance(data, dict):
            self.problem(path, "a step must be a mapping with `tool_name` and `input`")
            return None
        self.check_keys(data, Step, path)
        raw_retry = data.get("retry")
        if isinstance(raw_retry, dict):  # nested models: their unknown fields are ours to report
            self.check_keys(raw_retry, Retry, (*path, "retry"))
            if isinstance(raw_retry.get("backoff"), dict):
                self.check_keys(raw_retry["backoff"], Backoff, (*path, "retry", "backoff"))
        known = {k: v for k, v in data.items() if k in _fields(Step)}
        raw_input = known.get("input")
        tool = known.get("tool_name", known.get("toolName"))
        if isinstance(raw_input, dict) and tool == "agent":
            raw_input = self._normalize_agent(raw_input, (*path, "input"))
            known["input"] = raw_input
        step = self.validate(Step, known, path)
        if step is None:
            # keep the fields that are valid, so the rest of the step still gets checked
            bad = set(self.last_bad)
            salvage = {k: v for k, v in known.items() if CAMEL_ALIASES.get(k, k) not in bad}
            salvage.pop("toolName", None)
            salvage["tool_name"] = tool if isinstance(tool, str) else ""
            raw_retry = known.get("retry")
            if "retry" in bad and isinstance(raw_retry, dict):
                drop = {str(loc[1]) for loc in self.last_locs if len(loc) > 1 and loc[0] == "retry"}
                try:
                    salvage["retry"] = Retry.model_validate(
                        {k: v for k, v in raw_retry.items() if k not in drop}
                    )
                except ValidationError:
                    pass
            try:
                step = Step.model_validate(salvage)
            except ValidationError:
                sid = known.get("id")
                step = Step.model_construct(
                    id=sid if isinstance(sid, str) else None,
                    tool_name=salvage["tool_name"],
                    input=raw_input if "input" in known else {},
                )
            step._broken = bad | {"*"}
        step._path = tuple(path)
        # bodies become Step objects in place
        if isinstance(step.input, dict):
            new_input = dict(step.input)
            for key in BODY_KEYS.get(step.tool_name, ()):
                if key in new_input and not isinstance(new_input[key], Step):
                    body = self._body(new_input[key], (*path, "input", key), key)
                    if body is not None:
                        new_input[key] = body
                    else:
                        step._broken.add(f"body:{key}")
            if step.tool_name == "parallel" and isinstance(new_input.get("branches"), dict):
                branches = {}
                for name, raw in new_input["branches"].items():
                    body = self._body(raw, (*path, "input", "branches", name), name)
                    branches[name] = body if body is not None else raw
                    if body is None:
                        step._broken.add(f"body:{name}")
                new_input["branches"] = branches
            step.input = new_input
        return step

    def _body(self, raw: Any, path: Path, label: str) -> Step | None:
        if isinstance(raw, Step):
            return raw
        if not isinstance(raw, dict) or not ("tool_name" in raw or "toolName" in raw):
            self.problem(
                path,
                f"`{label}` must be a single step (a mapping with `tool_name` and `input`)",
                code=PLAN_INVALID_BODY,
            )
            return None
        return self.step(raw, path)

    def _normalize_agent(self, raw: dict[str, Any], path: Path) -> dict[str, Any]:
        """Rename camelCase agent fields to snake_case (positions follow)."""
        out: dict[str, Any] = {}
        for key, value in raw.items():
            canon = CAMEL_ALIASES.get(key, key) if isinstance(key, str) else key
            if canon != key:
                if canon in raw:
                    self.problem(
                        (*path, key),
                        f"`{key}` and `{canon}` are the same field; give it once",
                        code=PLAN_DUPLICATE_KEY,
                        key=True,
                    )
                    continue
                if self.smap is not None:
                    old = (*path, key)
                    for p, src in list(self.smap.nodes.items()):
                        if p[: len(old)] == old:
                            self.smap.nodes[(*path, canon, *p[len(old) :])] = src
            out[canon] = value
        return out


def broken_fields(model: BaseModel) -> set[str]:
    """Fields of a model built by the loader that already failed validation (``"*"``: some)."""
    return getattr(model, "_broken", None) or set()


# ---------------------------------------------------------------------------------------------
# Cross-file checks (the plans directory itself is loaded by runtime.tools.plans)


def plan_location(plan: Plan, path: Path) -> Span:
    """file:line:col of the value at ``path`` (a value path inside ``plan``'s file)."""
    smap = getattr(plan, "_source_map", None)
    full = (*(getattr(plan, "_path", ()) or ()), *path)
    if smap is not None:
        loc: Span = smap.location(full)
        return loc
    return Span.at(plan.source_file or "<plan>")


def check_plan_cycles(root: Plan, others: dict[str, Plan]) -> list[Diagnostic]:
    """``plan_cycle`` problems of ``root`` together with the plans directory ``others``
    (docs/spec/PLAN_IR.md §2): a plan reaching itself through ``plan__*`` calls, across files.

    Each cycle is reported once, at the call that closes it (file:line:col of its ``tool_name``).
    """
    units: dict[str, list[tuple[Plan, Path]]] = {}

    def add(plan: Plan) -> None:
        units.setdefault(plan.name, []).append((plan, getattr(plan, "_path", ()) or ()))
        for sub_name, sub in (plan.plans or {}).items():
            units.setdefault(sub_name, []).append((sub, getattr(sub, "_path", ()) or ()))

    add(root)
    for p in others.values():
        if p.name not in units:
            add(p)
    edges: dict[str, list[tuple[str, Any]]] = {n: [] for n in units}
    for name, entries in units.items():
        for plan, ppath in entries:
            for spath, _, step in walk_steps(plan, ppath):
                tool = step.tool_name
                if isinstance(tool, str) and tool.startswith("plan__") and tool[6:] in units:
                    edges[name].append((tool[6:], (plan, spath)))
    problems: list[Diagnostic] = []
    for cycle, (plan, spath) in call_cycles(edges):
        smap = getattr(plan, "_source_map", None)
        loc = (
            smap.location((*spath, "tool_name"))
            if smap is not None
            else Span.at(plan.source_file or "<plan>")
        )
        problems.append(
            Diagnostic(PLAN_CYCLE, "plan calls itself through plan__*: " + " → ".join(cycle), loc)
        )
    return problems
