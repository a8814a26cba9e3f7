"""Datasets of an eval (docs/reference/evals.md "Datasets"): JSON Lines or YAML (or JSON) files
of cases, read and checked against the flow's types before any model call.

A case is an object with ``input`` (the run's input, checked against the flow's ``input`` type),
and optionally ``name`` (text; default ``FILE:LINE``), ``expected`` (checked against the eval's
``expect`` type, by default the flow's output type), ``tags`` (text[]) and ``metadata`` (an
object). A ``.jsonl`` file holds one case per line; a ``.yaml``/``.yml``/``.json`` file a list of
cases, or an object whose ``cases`` is that list.

Every problem is a :class:`~agentflow.core.diagnostics.Diagnostic` with the codes every `.flow`
uses (``syntax-error``: not JSON/YAML; ``type-mismatch``: a value that does not fit its type,
or a required field missing; ``unknown-field``: a key the case or the type does not have;
``duplicate-definition``: two cases of one name; ``invalid-value``: not a case at all, or an
unreadable file), placed at the line and column of the value in the dataset file.
Layer: api.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Diagnostic, Note, did_you_mean
from agentflow.core.spans import Span
from agentflow.ir.mismatch import Mismatch, mismatches, type_names
from agentflow.runtime.extract import DuplicateKey, json_number_problem, loads_value

__all__ = ["CASE_KEYS", "Case", "Dataset", "check_cases", "read_dataset"]

#: the keys a case may have
CASE_KEYS = ("name", "input", "expected", "tags", "metadata")
#: file suffixes read as one case per line
_LINES_SUFFIXES = (".jsonl", ".ndjson")

_Path = tuple[Any, ...]


@dataclass
class Case:
    """One case of a dataset: its ``name``, ``input``, ``expected`` (``has_expected``: it gives
    one), ``tags``, ``metadata``, and where it is (``file``, ``line``)."""

    name: str
    input: Any
    expected: Any = None
    has_expected: bool = False
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    file: str = ""
    line: int = 0
    #: where each value of the case is: path below the case (``("input", "title")``) → span
    spans: dict[_Path, Span] = field(default_factory=dict, repr=False)
    #: where each key of the case is (for unknown fields)
    key_spans: dict[_Path, Span] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The case as JSON data (``expected`` only when given)."""
        out: dict[str, Any] = {"name": self.name, "input": self.input}
        if self.has_expected:
            out["expected"] = self.expected
        if self.tags:
            out["tags"] = list(self.tags)
        if self.metadata:
            out["metadata"] = self.metadata
        return out


@dataclass
class Dataset:
    """The cases read from ``files`` and the problems found reading and checking them."""

    cases: list[Case] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem is an error."""
        return not any(d.severity == "error" for d in self.diagnostics)


def _span(file: str, mark: Any, end: Any = None) -> Span:
    """A span from PyYAML marks (0-based line and column) in ``file``."""
    end = end or mark
    return Span(
        file, mark.line + 1, mark.column + 1, end.line + 1, end.column + 1, mark.index, end.index
    )


def _at(file: str, line: int, column: int = 1, width: int = 1) -> Span:
    return Span(file, line, column, line, column + width, 0, 0)


def _diag(
    code: str, message: str, span: Span, hint: str | None = None, notes: list[Note] | None = None
) -> Diagnostic:
    return Diagnostic(code, message, span, notes or [], hint, D.CODES[code].severity)


def read_dataset(path: str | os.PathLike[str], shown: str | None = None) -> Dataset:
    """Read the cases of one dataset file (JSON Lines, YAML or JSON; see the module docstring).

    ``shown``: the file name diagnostics carry (default: ``path`` as given). Never raises: an
    unreadable file or a malformed case is a diagnostic, and the other cases are kept."""
    file = shown or str(path)
    out = Dataset()
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        out.diagnostics.append(
            _diag(D.INVALID_VALUE, f"cannot read the dataset: {e.strerror or e}", Span.at(file))
        )
        return out
    except UnicodeDecodeError as e:
        out.diagnostics.append(
            _diag(D.SYNTAX_ERROR, "the dataset is not UTF-8 text", _at(file, 1, e.start + 1))
        )
        return out
    text = text.removeprefix("\ufeff")
    if str(path).endswith(_LINES_SUFFIXES):
        _read_lines(text, file, out)
    else:
        _read_document(text, file, out)
    names: dict[str, Case] = {}
    for case in out.cases:
        if case.name in names:
            out.diagnostics.append(
                _diag(
                    D.DUPLICATE_DEFINITION,
                    f'two cases are named "{case.name}"',
                    case.spans.get(("name",), _at(file, case.line)),
                    notes=[Note("first here", _at(file, names[case.name].line))],
                    hint="give every case its own name: reports and baselines find cases by name",
                )
            )
        else:
            names[case.name] = case
    return out


def _read_lines(text: str, file: str, out: Dataset) -> None:
    offset = 0
    for number, line in enumerate(text.split("\n"), 1):
        start, offset = offset, offset + len(line) + 1
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            value = loads_value(line)
        except DuplicateKey:
            with contextlib.suppress(Exception):  # where: JSON is YAML, whose nodes know it
                out.diagnostics += _duplicate_keys(_compose(line), file, number - 1, start)
            if not out.diagnostics or out.diagnostics[-1].span.line != number:
                out.diagnostics.append(
                    _diag(
                        D.DUPLICATE_FIELD,
                        "a key is given twice in one object",
                        _at(file, number, 1),
                        hint="give it once: only one of its values can be meant",
                    )
                )
            continue
        except ValueError as e:
            col = getattr(e, "colno", 1)
            out.diagnostics.append(
                _diag(D.SYNTAX_ERROR, f"not a JSON value: {_why(e)}", _at(file, number, col))
            )
            continue
        spans: dict[_Path, Span] = {}
        keys: dict[_Path, Span] = {}
        try:  # positions: JSON is YAML, and YAML's nodes know their columns
            node = _compose(line)
            _positions(node, (), file, spans, keys, number - 1, start)
        except Exception:  # noqa: BLE001 - positions are a convenience: the line is enough
            spans = {}
        spans.setdefault((), _at(file, number, 1, max(1, len(line.rstrip()))))
        _add_case(value, file, number, spans, keys, out)


def _why(e: ValueError) -> str:
    msg = getattr(e, "msg", None) or str(e)
    return str(msg).split(": line ")[0]


def _compose(text: str) -> Any:
    import yaml

    return yaml.compose(text, Loader=yaml.SafeLoader)


def _duplicate_keys(
    node: Any, file: str, line_offset: int = 0, char_offset: int = 0
) -> list[Diagnostic]:
    """A ``duplicate-field`` error at each key an object below ``node`` gives a second time
    (a note at the first), naming it: only one of its values can be meant."""
    import yaml

    found: list[Diagnostic] = []

    def at(mark: Any, width: int) -> Span:
        return _at(file, mark.line + 1 + line_offset, mark.column + 1, width)

    def walk(item: Any) -> None:
        if isinstance(item, yaml.MappingNode):
            first: dict[Any, Any] = {}
            for key, value in item.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                if name is not None and name in first:
                    width = max(1, key.end_mark.index - key.start_mark.index)
                    shown = json.dumps(name, ensure_ascii=False)
                    found.append(
                        _diag(
                            D.DUPLICATE_FIELD,
                            f"the key {shown} is given twice in one object",
                            at(key.start_mark, width),
                            notes=[Note("first here", at(first[name].start_mark, width))],
                            hint="give it once: only one of its values can be meant",
                        )
                    )
                elif name is not None:
                    first[name] = key
                walk(value)
        elif isinstance(item, yaml.SequenceNode):
            for sub in item.value:
                walk(sub)

    walk(node)
    return found


def _positions(
    node: Any,
    path: _Path,
    file: str,
    spans: dict[_Path, Span],
    keys: dict[_Path, Span],
    line_offset: int = 0,
    char_offset: int = 0,
) -> None:
    """Fill ``spans`` (where each value is, start to end) and ``keys`` (where each key is) below
    ``node``; ``line_offset``/``char_offset``: where the composed text starts in the file."""
    import yaml

    def span(start: Any, end: Any) -> Span:
        end_line = end.line if end.line == start.line else start.line
        end_column = end.column if end.line == start.line else start.column + 1
        return Span(
            file,
            start.line + 1 + line_offset,
            start.column + 1,
            end_line + 1 + line_offset,
            end_column + 1,
            start.index + char_offset,
            (end.index if end.line == start.line else start.index + 1) + char_offset,
        )

    spans[path] = span(node.start_mark, node.end_mark)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = (*path, key.value)
            keys[sub] = span(key.start_mark, key.end_mark)
            _positions(value, sub, file, spans, keys, line_offset, char_offset)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _positions(item, (*path, index), file, spans, keys, line_offset, char_offset)


def _read_document(text: str, file: str, out: Dataset) -> None:
    import yaml

    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            value = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        span = _span(file, mark) if mark is not None else _at(file, 1)
        out.diagnostics.append(_diag(D.SYNTAX_ERROR, f"not YAML: {e.problem or e}", span))
        return
    except yaml.YAMLError as e:
        out.diagnostics.append(_diag(D.SYNTAX_ERROR, f"not YAML: {e}", _at(file, 1)))
        return
    if node is None:
        return
    duplicates = _duplicate_keys(node, file)
    if duplicates:  # YAML (and Python's json) keep the last value silently: refused
        out.diagnostics += duplicates
        return
    spans: dict[_Path, Span] = {}
    keys: dict[_Path, Span] = {}
    _positions(node, (), file, spans, keys)
    prefix: _Path = ()
    if isinstance(value, dict) and "cases" in value:
        value, prefix = value["cases"], ("cases",)
    if not isinstance(value, list):
        out.diagnostics.append(
            _diag(
                D.INVALID_VALUE,
                "a dataset is a list of cases (or an object whose `cases` is one)",
                spans.get(prefix, _at(file, 1)),
                hint="write `- { name: …, input: { … } }` once per case",
            )
        )
        return
    for index, item in enumerate(value):
        base = (*prefix, index)
        sub = {p[len(base) :]: s for p, s in spans.items() if p[: len(base)] == base}
        subkeys = {p[len(base) :]: s for p, s in keys.items() if p[: len(base)] == base}
        where = sub.get((), _at(file, 1))
        _add_case(item, file, where.line, sub, subkeys, out)


def _add_case(
    value: Any,
    file: str,
    line: int,
    spans: dict[_Path, Span],
    keys: dict[_Path, Span],
    out: Dataset,
) -> None:
    here = spans.get((), _at(file, line))
    if not isinstance(value, dict):
        out.diagnostics.append(
            _diag(
                D.INVALID_VALUE,
                "a case is an object with `input` (and `name`, `expected`, `tags`, `metadata`)",
                here,
            )
        )
        return
    bad = False
    for key in value:
        if key not in CASE_KEYS:
            out.diagnostics.append(
                _diag(
                    D.UNKNOWN_FIELD,
                    f"a case has no field `{key}` (its fields: {', '.join(CASE_KEYS)})",
                    keys.get((key,), here),
                    hint=did_you_mean(str(key), list(CASE_KEYS)),
                )
            )
            bad = True
    if "input" not in value:
        out.diagnostics.append(
            _diag(D.INVALID_VALUE, "this case has no `input`", here, hint="add `input: { … }`")
        )
        bad = True
    name = value.get("name", f"{Path(file).name}:{line}")
    if not isinstance(name, str) or not name:
        out.diagnostics.append(
            _diag(D.TYPE_MISMATCH, "a case's `name` is text", spans.get(("name",), here))
        )
        bad = True
    tags = value.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        out.diagnostics.append(
            _diag(D.TYPE_MISMATCH, "a case's `tags` are text[]", spans.get(("tags",), here))
        )
        bad = True
    metadata = value.get("metadata", {})
    if not isinstance(metadata, dict):
        out.diagnostics.append(
            _diag(
                D.TYPE_MISMATCH, "a case's `metadata` is an object", spans.get(("metadata",), here)
            )
        )
        bad = True
    if bad:
        return
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        out.diagnostics.append(
            _diag(
                D.INVALID_VALUE,
                "this case holds a value JSON cannot (a date, NaN or infinity): quote it",
                here,
            )
        )
        return
    number = json_number_problem(value, "the case")  # an int past 64 bits (YAML reads any)
    if number is not None:
        out.diagnostics.append(_diag(D.INVALID_VALUE, number, here))
        return
    out.cases.append(
        Case(
            name=str(name),
            input=value["input"],
            expected=value.get("expected"),
            has_expected="expected" in value,
            tags=list(tags),
            metadata=dict(metadata),
            file=file,
            line=line,
            spans=spans,
            key_spans=keys,
        )
    )


def check_cases(
    cases: list[Case],
    input_schema: dict[str, Any],
    expected_schema: dict[str, Any] | None,
    *,
    expected_what: str = "the flow's output type",
    input_name: str | None = None,
    expected_name: str | None = None,
) -> list[Diagnostic]:
    """Check each case's ``input`` against ``input_schema`` (the flow's input type) and its
    ``expected`` against ``expected_schema``; one diagnostic per problem, at its value.
    ``input_name`` / ``expected_name``: the user's name of each type (``Ticket``), which the
    messages give rather than its fields; the named types under ``$defs`` are named so too."""
    out: list[Diagnostic] = []
    for case in cases:
        for key, schema, what, type_name in (
            ("input", input_schema, "the flow's input type", input_name),
            ("expected", expected_schema, expected_what, expected_name),
        ):
            if schema is None or (key == "expected" and not case.has_expected):
                continue
            value = case.input if key == "input" else case.expected
            try:  # the one front door of run-time input errors too (agentflow.ir.mismatch)
                names = type_names(schema, type_name)
                found = mismatches(schema, value, root=key, what=what, names=names)
            except ValueError as e:  # pragma: no cover - contracts are always usable
                out.append(_diag(D.INVALID_VALUE, str(e), case.spans.get((), _at(case.file, 1))))
                continue
            for problem in found[:8]:
                out.append(_problem(case, key, problem))
    return out


def _problem(case: Case, key: str, problem: Mismatch) -> Diagnostic:
    here = _nearest(case.spans, problem.path) or _at(case.file, case.line)
    hint = problem.hint
    if problem.code == D.UNKNOWN_FIELD:
        here = case.key_spans.get((*problem.path, problem.field or ""), here)
    elif problem.field is not None:  # a missing required field
        fields = ", ".join(f"`{n}`" for n in problem.missing or (problem.field,))
        hint = f"add {fields} to this case's `{key}`"
    return _diag(problem.code, problem.message, here, hint=hint)


def _nearest(spans: dict[_Path, Span], path: _Path) -> Span | None:
    while True:
        if path in spans:
            return spans[path]
        if not path:
            return None
        path = path[:-1]
