"""JSON extraction from model replies and schema validation (docs/spec/RUNTIME.md §3, §10).

Extraction rules (§10): strip at most one Markdown code fence, and only one that wraps the whole
reply (backticks inside JSON strings survive because the JSON decoder, not a regex, finds the end of
the value); take the single leading JSON value; trailing prose is allowed and noted; a second JSON
value after the first is an error. Nothing is invented or coerced: ``NaN``/``Infinity`` and duplicate
object keys are refused.

Validation compiles each schema once with fastjsonschema (cached by canonical JSON) and, when a value
is invalid, lists every failure with its JSON path using jsonschema.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastjsonschema

from agentflow.core.text import clean_json, json_error
from agentflow.core.vocabulary import MAX_INT, MIN_INT, Code
from agentflow.errors import RunError
from agentflow.ir.mismatch import too_long_durations
from agentflow.ir.schemas import canonical_json as canonical_json
from agentflow.ir.schemas import fast_lax_about, fast_validator, schema_problem
from agentflow.ir.schemas import validator as schema_validator

_FENCE_OPEN = re.compile(r"\A```[ \t]*([A-Za-z0-9_+\-]*)[ \t]*\r?\n")
_FENCE_CLOSE = re.compile(r"\A\s*```[ \t]*(?:\r?\n|\Z)")


class ExtractionError(ValueError):
    """The reply holds no single leading JSON value; ``str(exc)`` says why (for the model)."""


#: The deepest nesting of arrays/objects accepted in JSON from outside (model answers, tool-call
#: arguments, run input). Deeper values would exhaust Python's recursion limit in the decoder,
#: the validators, copying and serialising; they are refused with a plain message instead.
MAX_JSON_DEPTH = 100


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` nests arrays/objects more than ``limit`` levels deep (iterative: safe
    on any depth; a scalar has depth 0, ``[]`` depth 1)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return True
        stack.extend((child, depth) for child in children)
    return False


def too_deep_message(limit: int = MAX_JSON_DEPTH) -> str:
    """The plain message for JSON nested deeper than ``limit`` levels."""
    return f"nested too deeply (more than {limit} levels of arrays/objects)"


def too_deep_result(tool: str, value: Any) -> None:
    """Raise RunError(output_validation) when tool ``tool``'s result ``value`` nests arrays/objects
    more than :data:`MAX_JSON_DEPTH` levels deep (checked iteratively: safe on any depth).

    The tool ran; its result is what cannot be used (every later stage — the run's values,
    events, trace, durable records — would exhaust Python's recursion limit on it), so the step
    fails as a result-shape problem naming the limit, not as the tool's failure
    (docs/decisions.md "integral numbers and deep values (round 41)")."""
    if json_depth_exceeds(value):
        raise RunError(
            Code.OUTPUT_VALIDATION,
            f"tool {tool} returned a result {too_deep_message()}; the tool ran, but a result "
            "this deep cannot be carried through the run",
        )


def loads_bounded(text: str, limit: int = MAX_JSON_DEPTH, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` that refuses nesting deeper than ``limit``.

    Raises ``json.JSONDecodeError`` for invalid JSON (as ``json.loads``) and :class:`ValueError`
    with :func:`too_deep_message` for too deep a value (never RecursionError).
    """
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError(too_deep_message(limit)) from None
    if json_depth_exceeds(value, limit):
        raise ValueError(too_deep_message(limit))
    return value


class NonJsonNumber(ValueError):
    """``NaN``, ``Infinity``, ``-Infinity`` or a number too large for a float (``1e400``
    overflows to infinity): Python's json accepts them, JSON does not, and they could not be
    printed back as JSON."""


class DuplicateKey(ValueError):
    """A JSON object a person gave (``--input``, an answer, an eval case) names one key twice:
    JSON parsers keep the last silently, so which value was meant is not known."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = json.dumps(clean_json(key), ensure_ascii=False)
            raise DuplicateKey(
                f"the key {shown} is given twice in one object (only one value can be meant: "
                "give it once)"
            )
        out[key] = value
    return out


def _not_a_json_number(name: str) -> Any:
    raise NonJsonNumber(f"`{name}` is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonJsonNumber(f"`{text}` is too large for a number")
    return value


def _bounded_int(text: str) -> int:
    # more than 19 digits is out of range whatever they are: refused before `int()`, which
    # refuses over 4,300 digits with Python's own message (sys.set_int_max_str_digits)
    value = int(text) if len(text.lstrip("-")) <= 19 else MAX_INT + 1
    if not MIN_INT <= value <= MAX_INT:
        raise NonJsonNumber(
            f"`{text if len(text) <= 24 else text[:20] + '…'}` ({len(text.lstrip('-'))} digits) "
            f"is outside the range of an int ({MIN_INT} to {MAX_INT}){_as_float_hint(text)}"
        )
    return value


def _as_float_hint(text: str) -> str:
    """What to write instead of the whole number ``text`` past 64 bits where a `number` is
    meant: the float that holds it (``; for a `number`, write it as a float: `1e+20` ``), or
    that no number holds it (over ~1.8e308). docs/reference/cli.md "Input"."""
    digits = text.lstrip("-")
    if len(digits) > 309:  # past the largest float whatever the digits (`int()` is not needed)
        return "; it is too large for a `number` too"
    try:
        as_float = float(int(text))
    except OverflowError:
        return "; it is too large for a `number` too"
    return f"; for a `number`, write it as a float: `{as_float!r}` (about 16 significant digits)"


def json_number_problem(value: Any, where: str = "input") -> str | None:
    """Why an already-parsed ``value`` (an MCP tool call's arguments, a dict given to
    ``agentflow.run``, an answer sent as JSON) holds a number :func:`loads_value` refuses in
    text — ``NaN``/``Infinity`` (which a lenient JSON parser, or Python, makes), a whole number
    outside the ``int`` range — as ``"WHERE.path: <the message loads_value gives>"``, or None.
    The same front door for every entry (docs/decisions.md "Numbers and secrets at the front
    door", "Break-it fixes, stop 44")."""
    todo: list[tuple[Any, str]] = [(value, where)]
    while todo:
        cur, at = todo.pop()
        if isinstance(cur, bool):
            continue
        if isinstance(cur, float) and not math.isfinite(cur):
            if cur != cur:
                return f"{at}: `NaN` is not a JSON number"
            # parsed already: `Infinity` itself, or a number too large for a float (`1e999`
            # overflows to infinity when a JSON parser reads it, as MCP's does): say both
            sign = "" if cur > 0 else "-"
            return (
                f"{at}: a number too large for a float (`{sign}1e999` …) or `{sign}Infinity`"
                " is not a JSON number; the largest is about 1.8e308"
            )
        if isinstance(cur, int) and not MIN_INT <= cur <= MAX_INT:
            try:
                _bounded_int(str(cur))
            except NonJsonNumber as e:
                return f"{at}: {e}"
            except ValueError:  # more digits than Python prints (sys.set_int_max_str_digits)
                return (
                    f"{at}: a whole number of over 4,300 digits is outside the range of an int"
                    "; it is too large for a `number` too"
                )
        elif isinstance(cur, dict):
            todo.extend((v, f"{at}.{k}") for k, v in reversed(list(cur.items())))
        elif isinstance(cur, list | tuple):
            todo.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(cur))))
    return None


#: What a JSON value is, in the words a message gives it
_JSON_KINDS = "text, a number, true or false, null, a list or an object"


def json_value_problem(value: Any, where: str = "input") -> str | None:
    """Why a value given from Python (a dict given to ``agentflow.run``, its ``answers``) is not
    a JSON value a `.flow` can take — a value of another Python type (``bytes``, a ``set``, an
    object), a field name that is not text, or a number :func:`json_number_problem` refuses —
    as ``"WHERE.path: …"`` in JSON's terms (never a Python repr), or None."""
    todo: list[tuple[Any, str]] = [(value, where)]
    while todo:
        cur, at = todo.pop()
        if cur is None or isinstance(cur, str | bool | int | float):
            continue
        if isinstance(cur, dict):
            for k in cur:
                if not isinstance(k, str):
                    return f"{at}: a field name is text, got {json_kind(k)}"
            todo.extend((v, f"{at}.{k}") for k, v in reversed(list(cur.items())))
        elif isinstance(cur, list | tuple):
            todo.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(cur))))
        else:
            return f"{at}: {json_kind(cur)} is not a JSON value ({_JSON_KINDS})"
    return json_number_problem(value, where)


def json_kind(value: Any) -> str:
    """``value`` named for a message: a JSON scalar as JSON writes it (``the number 5``), any
    other Python value by its kind (``a bytes value``), never by its repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if (
        isinstance(value, int)
        and MIN_INT <= value <= MAX_INT
        or (isinstance(value, float) and math.isfinite(value))
    ):
        return f"the number {value}"
    if isinstance(value, int | float):
        return "a number JSON cannot hold"
    if isinstance(value, str):
        return "a text"
    return f"a {type(value).__name__} value"


def loads_value(text: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """A value a person gave as JSON (``flowc run --input``, ``flowc answer``, an answer typed
    at the terminal or sent by an MCP client): :func:`loads_bounded` with JSON's own numbers
    only.  Raises :class:`NonJsonNumber` (a ValueError) for ``NaN``/``Infinity`` or a number
    too large (one message wherever the value came from), ``json.JSONDecodeError`` for
    invalid JSON, ValueError for too deep a value. A whole number must be an ``int``
    (:data:`agentflow.core.vocabulary.MIN_INT` … ``MAX_INT``); every string is made whole
    (:func:`agentflow.core.text.clean_json`: a lone surrogate becomes U+FFFD).  An object that
    names a key twice raises :class:`DuplicateKey` (a ValueError) naming it (``parse_json`` in
    a flow turns it into ``parse_error``)."""
    return clean_json(
        loads_bounded(
            text,
            limit,
            parse_constant=_not_a_json_number,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    )


@dataclass
class Extracted:
    """A JSON value found in a reply: ``value``, whether a fence was stripped, the trailing prose."""

    value: Any
    fenced: bool = False
    trailing: str | None = None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, object_pairs_hook=_no_duplicates, parse_int=_bounded_int
)


def _decode_at(text: str, index: int) -> tuple[Any, int]:
    try:
        value, end = _DECODER.raw_decode(text, index)
    except json.JSONDecodeError as exc:
        raise ExtractionError(
            f"invalid JSON: {json_error(exc)} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise ExtractionError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ExtractionError(f"the JSON is {too_deep_message()}") from None
    if json_depth_exceeds(value):
        raise ExtractionError(f"the JSON is {too_deep_message()}")
    # a model's answer enters the run here: a lone surrogate (JSON "\udcd9") becomes U+FFFD
    return clean_json(value), end


def extract_json(text: str | None) -> Extracted:
    """The single leading JSON value of ``text`` (see module doc). Raises ExtractionError."""
    if text is None or not text.strip():
        raise ExtractionError("the reply is empty; expected a JSON object")
    body = text.strip()
    match = _FENCE_OPEN.match(body)
    if match:
        start = match.end()
        while start < len(body) and body[start] in " \t\r\n":
            start += 1
        value, end = _decode_at(body, start)
        close = _FENCE_CLOSE.match(body[end:])
        if not close:
            rest = body[end:].strip()
            _check_second_value(rest)
            raise ExtractionError(
                "the code fence around the JSON is not closed right after the JSON value"
            )
        trailing = body[end + close.end() :].strip()
        _check_second_value(trailing)
        return Extracted(value=value, fenced=True, trailing=trailing or None)
    if body.startswith("```"):
        raise ExtractionError("a code fence must start on its own line, followed by the JSON")
    if body[0] not in '{["-0123456789tfn':
        raise ExtractionError(
            "the reply does not start with a JSON value (no prose before the JSON, please)"
        )
    value, end = _decode_at(body, 0)
    trailing = body[end:].strip()
    _check_second_value(trailing)
    return Extracted(value=value, fenced=False, trailing=trailing or None)


def _check_second_value(rest: str) -> None:
    """A second JSON value (object or array) after the first is an error, never silently dropped."""
    if rest.startswith("```"):
        inner = _FENCE_OPEN.match(rest)
        rest = rest[inner.end() :].lstrip() if inner else rest[3:].lstrip()
    if rest[:1] in ("{", "["):
        try:
            _DECODER.raw_decode(rest, 0)
        except (ValueError, RecursionError):
            return
        raise ExtractionError(
            "the reply holds more than one JSON value; answer with exactly one JSON object"
        )


# --------------------------------------------------------------------------- validation


@lru_cache(maxsize=512)
def _compiled(schema_key: str) -> Any:
    return fast_validator(schema_key)


@lru_cache(maxsize=512)
def _full_validator(schema_key: str) -> Any:
    # check `format` like fastjsonschema does, so both report the same violations; never fetch
    return schema_validator(json.loads(schema_key), formats=True)


def compile_count() -> int:
    """How many distinct schemas have been compiled (tests check compile-once)."""
    return _compiled.cache_info().currsize


def json_path(parts: Any) -> str:
    """``$.a.b[0]`` for a sequence of keys/indices."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def validate(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way ``value`` fails ``schema``, each as ``"$.path: message"``; ``[]`` when valid.

    Never modifies ``value`` (fastjsonschema's ``default`` filling runs on a copy and is discarded).
    A value nested more than :data:`MAX_JSON_DEPTH` levels deep is refused with one error
    (``$: nested too deeply …``) instead of exhausting the recursion limit.
    """
    if json_depth_exceeds(value):
        return [f"$: the value is {too_deep_message()}"]
    try:
        problem = schema_problem(schema)
    except RecursionError:
        problem = "it is nested too deeply"
    if problem is not None:  # a remote, unresolvable or endlessly looping reference
        return [f"$: the schema cannot be used: {problem}"]
    try:
        errors = _validate(schema, value)
        if not errors and _holds_durations(canonical_json(schema)):
            # a duration's pattern cannot bound its length: at most 100 years, as an input
            errors = [
                f"{json_path(at)}: {problem}" for at, problem in too_long_durations(schema, value)
            ]
        return errors
    except RecursionError:
        return [f"$: the value is {too_deep_message()}"]


@lru_cache(maxsize=256)
def _holds_durations(schema_key: str) -> bool:
    """Whether the schema (its canonical JSON) types a duration anywhere."""
    return '"x-flow-type":"duration"' in schema_key


def _validate(schema: dict[str, Any], value: Any) -> list[str]:
    key = canonical_json(schema)
    fast = _compiled(key)
    fast_error: fastjsonschema.JsonSchemaValueException | None = None
    if fast is not None:
        try:
            fast(copy.deepcopy(value))
            if not fast_lax_about(key, value):  # a float above 2**53 for an int: jsonschema's
                return []
        except fastjsonschema.JsonSchemaValueException as exc:
            fast_error = exc
    import referencing.exceptions  # only for a value fastjsonschema did not pass

    try:
        validator = _full_validator(key)
        errors = sorted(
            validator.iter_errors(value),
            key=lambda e: (list(map(str, e.absolute_path)), e.message),
        )
    except referencing.exceptions.Unresolvable as exc:
        return [f"$: the schema cannot be used: unresolvable reference {exc}"]
    out = []
    for err in errors:
        message = err.message
        if err.validator == "enum" and isinstance(err.validator_value, list):
            allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in err.validator_value)
            message = f"{json.dumps(err.instance, ensure_ascii=False)} is not one of the allowed values: {allowed}"
        out.append(f"{json_path(err.absolute_path)}: {message}")
    if not out and fast_error is not None:  # pragma: no cover - the two validators disagree
        where = json_path(fast_error.path[1:] if fast_error.path else [])
        message = re.sub(r"^data(?:\.[^\s.\[]+|\[\d+\])*\s+", "", fast_error.message)
        out.append(f"{where}: {message}")
    return out
