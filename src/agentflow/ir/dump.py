"""Deterministic YAML for plans (docs/spec/PLAN_IR.md §1, docs/spec/LANGUAGE.md §10).

:func:`dump_plan` writes keys in a canonical order (plan: version, name, description, input_schema,
deadline, steps, finish, plans; step: id, tool_name, input, timeout, retry, select, result_schema,
meta; other mappings in insertion order), multi-line strings as ``|`` block scalars, unicode as is, and never
anchors or aliases — so the same plan always gives byte-identical text.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel

from agentflow.core.diagnostics import PLAN_NOT_FORMATTABLE, Diagnostic
from agentflow.core.spans import Span
from agentflow.core.vocabulary import BODY_KEYS
from agentflow.errors import PlanLoadError
from agentflow.ir.loader import load_plan_text, parse_yaml, resolve_plain
from agentflow.ir.models import CAMEL_ALIASES, Finish, Plan, Step
from agentflow.ir.templates import Path

PLAN_ORDER = (
    "version",
    "name",
    "description",
    "input_schema",
    "deadline",
    "budget",
    "functions",
    "steps",
    "finish",
    "plans",
)
#: the keys of one of a plan's ``functions`` (docs/spec/PLAN_IR.md "functions")
FUNCTION_ORDER = ("params", "expr", "meta")
STEP_ORDER = ("id", "tool_name", "input", "timeout", "retry", "select", "result_schema", "meta")
FINISH_ORDER = ("mode", "output", "prompt", "meta")
RETRY_ORDER = ("attempts", "on", "backoff")
BACKOFF_ORDER = ("initial", "factor", "max")
#: input keys that hold a body step, whatever the control step (``do``, ``then``, ``else``)
_BODY_FIELDS = tuple(sorted({key for keys in BODY_KEYS.values() for key in keys}))


class _Dumper(yaml.SafeDumper):
    """SafeDumper without aliases, with ``|`` blocks for multi-line text."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class _FastDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """:class:`_Dumper` on libyaml's emitter when PyYAML has it (the pure-Python emitter was
    most of the cost of a dump). Its text is the same as :class:`_Dumper`'s for ASCII without
    escapes; it escapes some characters the other writes as they are (astral-plane characters
    such as emoji, U+0085), so :func:`dump_plan` uses it only where its text is plain ASCII."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _repr_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\x85" in data:  # NEL: a line break to the emitter (written raw, read back as a space)
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if resolve_plain(data) != data:  # would read back as another type under YAML 1.2: quote it
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _repr_str)
_FastDumper.add_representer(str, _repr_str)


def _ordered(data: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    out = {k: data[k] for k in order if k in data}
    for k, v in data.items():
        if k not in out:
            out[k] = v
    return out


def _canon_plan(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    data = _ordered(data, PLAN_ORDER)
    if isinstance(data.get("finish"), dict):
        data["finish"] = _ordered(data["finish"], FINISH_ORDER)
    if isinstance(data.get("functions"), dict):
        data["functions"] = {
            k: _ordered(v, FUNCTION_ORDER) if isinstance(v, dict) else v
            for k, v in data["functions"].items()
        }
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
    retry = step.get("retry")
    if isinstance(retry, dict):
        retry = _ordered(retry, RETRY_ORDER)
        if isinstance(retry.get("backoff"), dict):
            retry["backoff"] = _ordered(retry["backoff"], BACKOFF_ORDER)
        step["retry"] = retry
    inp = step.get("input")
    tool = step.get("tool_name")
    if isinstance(inp, dict):
        inp = dict(inp)
        for key in _BODY_FIELDS:
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


def _model_data(model: BaseModel) -> dict[str, Any]:
    out = {}
    for name in type(model).model_fields:
        if name not in model.model_fields_set:
            continue
        out[name] = _plain(getattr(model, name))
    return out


def _step_data(step: Step) -> dict[str, Any]:
    data = _model_data(step)
    data["tool_name"] = step.tool_name
    return data


def plan_to_data(plan: Plan) -> dict[str, Any]:
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
    canon: dict[str, Any] = _canon_plan(data)
    return canon


def dump_plan(data: dict[str, Any] | Plan) -> str:
    """Deterministic YAML text of a plan (a :class:`Plan` or plan data such as the compiler's).

    Same input → byte-identical output. Multi-line strings are ``|`` blocks, unicode is kept,
    no anchors/aliases; text that YAML would read back as another type is quoted.
    """
    if isinstance(data, Plan):
        data = plan_to_data(data)
    else:
        data = _canon_plan(_plain(data))
    options: dict[str, Any] = {
        "sort_keys": False,
        "allow_unicode": True,
        "default_flow_style": False,
        "width": 1_000_000,
        "indent": 2,
    }
    text: str = yaml.dump(data, Dumper=_FastDumper, **options)
    if text.isascii() and "\\" not in text:
        # libyaml closes a document that ends in a `|+` block with `...`, the pure-Python
        # emitter does not (a one-document plan needs no end marker): otherwise the same text
        return text.removesuffix("\n...\n") + "\n" if text.endswith("\n...\n") else text
    text = yaml.dump(data, Dumper=_Dumper, **options)
    return text


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
            for key in _BODY_FIELDS:
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
    blocks), keeping every YAML comment (docs/spec/LANGUAGE.md §10, docs/spec/PLAN_IR.md §1).

    Comments are found with PyYAML's scanner (text between tokens, plus the comment a ``|``/``>``
    header may carry), so a ``#`` inside a quoted scalar, a block scalar or a template is never one.
    Each comment is attached to a key or list item of the original and re-inserted next to the
    same value in the canonical text, which is :func:`dump_plan` of the renamed data:

    * full-line comments (and blocks of them, with single blank lines between or around them)
      go right before the key/item that follows them, at its indentation; those before the first
      key stay at the top, those after the last one at the end (column 1);
    * a trailing comment (``key: value  # note``) stays at the end of its key's line; one that has
      no key on its line (inside a multi-line flow collection or quoted scalar, after ``]``) goes
      to the key or item written last before it; several landing on one line are joined;
    * comments follow their key when it is renamed (``toolName`` → ``tool_name``) or moved by
      the canonical order.

    The result is idempotent (``fmt(fmt(x)) == fmt(x)``), and for a file without comments it is
    exactly :func:`dump_plan`'s text. The text must load as a plan first
    (:func:`~agentflow.ir.loader.load_plan_text`), and the result is loaded again (and compared
    with the canonical data, and checked to still hold every comment) before it is returned, so a
    file that is not a plan (or a `.flow` program that happens to parse as YAML) is never
    rewritten and no comment is ever lost silently. Raises :class:`agentflow.errors.PlanLoadError`
    with the load problems.
    """
    load_plan_text(text, file)
    data, smap = parse_yaml(text, file)
    renamed = _rename_camel(data, "plan")
    if str(file).lower().endswith(".json"):  # a JSON plan stays JSON
        if _find_comments(text.removeprefix("\ufeff")):
            raise PlanLoadError(
                [
                    Diagnostic(
                        PLAN_NOT_FORMATTABLE,
                        "this .json plan holds YAML comments, which JSON cannot keep; the file "
                        "was left as is",
                        Span.at(file),
                        hint="rename it to .plan.yaml to format it with its comments",
                    )
                ],
                {file: text},
            )
        return json.dumps(_canon_plan(_plain(renamed)), ensure_ascii=False, indent=2) + "\n"
    new = dump_plan(renamed)

    def bug(what: str) -> PlanLoadError:  # pragma: no cover - a formatter bug; never write it
        return PlanLoadError(
            [
                Diagnostic(
                    PLAN_NOT_FORMATTABLE, f"plan fmt {what}; the file was left as is", Span.at(file)
                )
            ]
        )

    body = text.removeprefix("\ufeff")  # the scanner's columns do not count a byte-order mark
    comments = _find_comments(body)
    if comments:
        try:
            _, new_smap = parse_yaml(new, file)
            paths: dict[Path, Path] = {}
            _map_paths(data, renamed, (), (), paths)
            new = _place_comments(body, comments, smap, new, new_smap, paths)
        except Exception:  # noqa: BLE001  # pragma: no cover - a formatter bug, reported as one
            raise bug("could not place the comments") from None
    try:
        load_plan_text(new, file)
    except PlanLoadError as exc:  # pragma: no cover - a formatter bug; never write such text
        first = exc.errors[0] if exc.errors else None
        raise bug(
            "would produce a plan that does not load" + (f" ({first.message})" if first else "")
        ) from None
    if comments:
        if parse_yaml(new, file)[0] != renamed:  # pragma: no cover - a formatter bug
            raise bug("would change the plan's data")
        kept = "\n".join(c.text for c in _find_comments(new))
        if any(c.text not in kept for c in comments):  # pragma: no cover - a formatter bug
            raise bug("would lose a comment")
    return new


# ---------------------------------------------------------------------------------------------
# Comments (``flowc plan fmt``)

_ScanLoader: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:  # pragma: no cover - depends on the PyYAML build
    _ScanLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _ScanLoader = yaml.SafeLoader

#: The line breaks YAML (and so the scanner's line numbers) knows.
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_BLOCK_HEADER = re.compile(r"[|>][0-9+-]*[ \t]+(#.*)$")
#: What may come before a comment on a line without making it a trailing one: ``- # c``,
#: ``? # c``, ``--- # c``, ``... # c``, ``%YAML 1.2 # c``.
_ONLY_INDICATORS = re.compile(r"[\s?:.-]*|\s*%.*")


@dataclass
class _Comment:
    """One comment of a YAML text: 0-based line and column of its ``#``; ``text`` runs from the
    ``#`` to the end of the line, trailing blanks removed."""

    line: int
    col: int
    text: str


def _split_lines(text: str) -> tuple[list[str], list[str], list[int]]:
    """Lines (as the YAML scanner counts them), the break after each (``""`` for the last) and
    each line's start offset."""
    lines: list[str] = []
    breaks: list[str] = []
    starts = [0]
    pos = 0
    for m in _LINE_BREAK.finditer(text):
        lines.append(text[pos : m.start()])
        breaks.append(m.group())
        pos = m.end()
        starts.append(pos)
    lines.append(text[pos:])
    breaks.append("")
    return lines, breaks, starts


def _find_comments(text: str) -> list[_Comment]:
    """Every comment of ``text`` in order, found with the YAML scanner: a ``#`` is a comment when
    no token covers it (the scanner skipped it), or when it follows the header of a ``|``/``>``
    block scalar. Raises ``yaml.YAMLError`` on bad syntax."""
    lines, _, starts = _split_lines(text)

    def offset(mark: yaml.Mark) -> int:
        line = min(mark.line, len(lines) - 1)
        return starts[line] + min(mark.column, len(lines[line]))

    covered: list[tuple[int, int]] = []
    out: list[_Comment] = []
    for tok in yaml.scan(text, Loader=_ScanLoader):
        start, end = offset(tok.start_mark), offset(tok.end_mark)
        if end > start:
            covered.append((start, end))
        if isinstance(tok, yaml.ScalarToken) and tok.style in ("|", ">"):
            line, col = tok.start_mark.line, tok.start_mark.column
            m = _BLOCK_HEADER.match(lines[line], col)
            if m:
                out.append(_Comment(line, m.start(1), m.group(1).rstrip()))
    covered.sort()
    gaps: list[tuple[int, int]] = []
    pos = 0
    for start, end in covered:
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    gaps.append((pos, len(text)))
    for start, end in gaps:
        i = text.find("#", start, end)
        while i != -1:
            line = bisect.bisect_right(starts, i) - 1
            col = i - starts[line]
            out.append(_Comment(line, col, lines[line][col:].rstrip()))
            i = text.find("#", starts[line] + len(lines[line]), end)
    out.sort(key=lambda c: (c.line, c.col))
    return out


def _anchors(smap: Any) -> list[tuple[int, int, int, Path]]:
    """``(line, column, depth, path)`` (0-based) of every key (its key's position) and list item
    (its value's first character), in text order, outer before inner at the same place."""
    out = []
    for path, src in smap.nodes.items():
        if not path:
            continue
        at = src.key if isinstance(path[-1], str) and src.key is not None else src.at
        out.append((at.line - 1, at.column - 1, len(path), path))
    out.sort(key=lambda a: a[:3])
    return out


def _map_paths(old: Any, new: Any, po: Path, pn: Path, out: dict[Path, Path]) -> None:
    """Original value path → path of the same value after :func:`_rename_camel` (which keeps
    the order and number of keys)."""
    out[po] = pn
    if isinstance(old, dict) and isinstance(new, dict):
        pairs: Iterable[tuple[tuple[Any, Any], tuple[Any, Any]]]
        if len(old) == len(new):
            pairs = zip(old.items(), new.items(), strict=True)
        else:  # pragma: no cover - the loader refuses keys given twice
            pairs = (((k, v), (k, new[k])) for k, v in old.items() if k in new)
        for (ko, vo), (kn, vn) in pairs:
            _map_paths(vo, vn, (*po, ko), (*pn, kn), out)
    elif isinstance(old, list) and isinstance(new, list):
        for i, (vo, vn) in enumerate(zip(old, new, strict=False)):
            _map_paths(vo, vn, (*po, i), (*pn, i), out)


def _keep_ends(text: str, lines: list[str]) -> set[int]:
    """Lines right after a keep-chomping (``|+``/``>+``) block scalar: a blank line put before
    them would become part of the scalar's text."""
    out = set()
    for tok in yaml.scan(text, Loader=_ScanLoader):
        if isinstance(tok, yaml.ScalarToken) and tok.style in ("|", ">"):
            header = re.match(r"[|>][0-9+-]*", lines[tok.start_mark.line][tok.start_mark.column :])
            if header and "+" in header.group():
                out.add(tok.end_mark.line)
    return out


def _place_comments(
    text: str,
    comments: list[_Comment],
    smap: Any,
    new: str,
    new_smap: Any,
    paths: dict[Path, Path],
) -> str:
    """``new`` (the canonical text of ``text``'s data) with ``text``'s comments put back."""
    lines, _, _ = _split_lines(text)
    anchors = _anchors(smap)
    keys = [a[:3] for a in anchors]

    def blank(i: int) -> bool:
        return 0 <= i < len(lines) and not lines[i].strip()

    # -- attach each comment to an original path: full-line groups and trailing ones
    groups: dict[Any, list[_Comment]] = {}  # path | "top" | "end" -> comments
    group_anchor: dict[Any, int] = {}  # -> the original line of the key/item that follows
    trailing: list[tuple[Path, _Comment]] = []
    for c in comments:
        idx = bisect.bisect_left(keys, (c.line, c.col, -1))
        prefix = lines[c.line][: c.col]
        before = anchors[idx - 1] if idx else None
        if prefix.strip() and before is not None:
            same_line = before[0] == c.line
            if same_line or not _ONLY_INDICATORS.fullmatch(prefix):
                trailing.append((before[3], c))
                continue
        if before is None:
            target: Any = "top"
        elif idx == len(anchors):
            target = "end"
        else:
            target = anchors[idx][3]
        groups.setdefault(target, []).append(c)
        if idx < len(anchors):
            group_anchor[target] = anchors[idx][0]

    # -- where each canonical path sits in the new text
    out_lines, out_breaks, _ = _split_lines(new)
    if out_lines and out_lines[-1] == "" and len(out_lines) > 1:
        out_lines.pop()
        out_breaks.pop()
        out_breaks[-1] = out_breaks[-1] or "\n"
    out_at: dict[Path, tuple[int, int]] = {}  # path -> (line, indentation of the key / dash)
    line_indent: dict[int, int] = {}
    for line, col, _, path in _anchors(new_smap):
        if not isinstance(path[-1], str) and col >= 2 and out_lines[line][col - 2 : col] == "- ":
            col -= 2
        out_at[path] = (line, col)
        line_indent[line] = min(line_indent.get(line, col), col)

    def out_line(path: Path) -> int | None:
        """The new text's line for an original path (its nearest kept ancestor's)."""
        p = path
        while p:
            q = paths.get(p)
            if q is not None and q in out_at:
                return out_at[q][0]
            p = p[:-1]
        return None

    before_line: dict[int, list[tuple[tuple[int, int], list[str | None]]]] = {}
    after_line: dict[int, list[tuple[tuple[int, int], str]]] = {}
    end: list[str | None] = []

    def entries(cs: list[_Comment], anchor_line: int | None) -> list[str | None]:
        """Comment texts with ``None`` for a blank line kept around or between them."""
        out: list[str | None] = []
        for c in cs:
            if blank(c.line - 1):
                out.append(None)
            out.append(c.text)
        if anchor_line is not None and anchor_line - 1 > cs[-1].line and blank(anchor_line - 1):
            out.append(None)
        return out

    for target, cs in groups.items():
        if target == "end":
            end.extend(entries(cs, None))
            continue
        line = 0 if target == "top" else (out_line(target) or 0)
        key = (-1, -1) if target == "top" else (cs[0].line, cs[0].col)
        before_line.setdefault(line, []).append((key, entries(cs, group_anchor.get(target))))
    for path, c in trailing:
        found = out_line(path)
        if found is None:  # pragma: no cover - every path has a place
            before_line.setdefault(0, []).append(((c.line, c.col), [c.text]))
            continue
        line = found
        after_line.setdefault(line, []).append(((c.line, c.col), c.text))

    keep_ends = _keep_ends(new, out_lines)
    result: list[str] = []

    def emit(items: list[str | None], indent: int, at: int) -> None:
        prev_blank = not result or at in keep_ends  # no blank line at the top / into a |+ text
        for item in items:
            if item is None:
                if not prev_blank:
                    result.append("")
                prev_blank = True
            else:
                result.append(" " * indent + item)
                prev_blank = False

    seps: list[str] = []
    for i, text_line in enumerate(out_lines):
        if i in before_line:
            n = len(result)
            items = [x for _, group in sorted(before_line[i], key=lambda g: g[0]) for x in group]
            emit(items, line_indent.get(i, 0), i)
            seps.extend("\n" for _ in range(len(result) - n))
        if i in after_line:
            text_line += "".join("  " + t for _, t in sorted(after_line[i], key=lambda g: g[0]))
        result.append(text_line)
        seps.append(out_breaks[i])
    if end:
        n = len(result)
        emit(end, 0, len(out_lines))
        while result and result[-1] == "" and len(result) > n:
            result.pop()
        seps.extend("\n" for _ in range(len(result) - n))
    return "".join(line + sep for line, sep in zip(result, seps, strict=True))
