"""How a durable run's records are stored: JSON, never pickle (docs/durable.md "The database").

DBOS stores every recorded value — a run's input and output, each operation's result or error,
events and messages — with a serializer; its default pickles, and unpickling a row runs
whatever the row says.  A database is a trust boundary (a fleet's shared PostgreSQL, a
``.flowc/durable.sqlite`` that arrives in a cloned repository), so agentflow gives DBOS
:class:`JsonRecords` instead:

- JSON values are stored as themselves; what JSON lacks is tagged with the key ``"$af"``:
  tuples, bytes, sets, dicts with keys other than strings (or holding the tag key itself),
  non-finite floats, the dataclasses of the model layer (``ChatRequest``, ``ChatResponse``,
  ``Message``, ``ToolCall``, ``ToolSpec``) and ``ErrorInfo``, and exceptions;
- reading makes only those: a dataclass or exception class is looked up by name among the
  classes of a few agentflow and DBOS modules (never imported by name, never called with
  recorded code), an exception of another class comes back as a built-in exception of the same
  name and message, or as an exception class of that name made on the spot over its nearest
  built-in base (so a tool's ``ConnectionError`` still reads as transient on replay);
- a row that is not such JSON — a pickle from an older agentflow or a tampered row — raises
  :class:`UnreadableRecord`; DBOS's own pickle reader is replaced (:func:`install`) so a row
  marked ``py_pickle`` is refused, not loaded, and DBOS's listing functions, which would hand
  back the row's raw text, hand back an :class:`Unreadable` marker instead, which the commands
  report as an unreadable run;
- no secret is ever at rest: every string of a record — a tool's result, an exception's message
  and arguments, a model's reply, a run's input — passes the redaction layer
  (:mod:`agentflow.core.redaction`) before it is written, so a key a tool or a provider echoes
  is stored as ``***`` (both engines: Temporal's payloads are these records too).  An
  operation's record that lost a secret so is marked (:data:`REDACTED`): its value is not the
  one the run saw, so a resumed run never feeds it forward — engine.py runs the operation again
  or refuses (docs/decisions.md "A record that held a secret is not replayed").

Reaches into DBOS (pinned by tests/runtime/durable/test_records_are_json.py): the serializer
hook ``config["serializer"]`` (a ``dbos._serialization.Serializer``),
``dbos._serialization.DefaultSerializer.deserialize`` (the one place DBOS unpickles) and the
name ``safe_deserialize`` in ``dbos._sys_db`` (the listing functions' lenient reader).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from agentflow.core.redaction import SECRETS, Secrets
from agentflow.errors import InputError
from agentflow.runtime.durable.shown import parse_operation

__all__ = [
    "REDACTED",
    "JsonRecords",
    "ForeignRecord",
    "Unreadable",
    "UnreadableRecord",
    "UnreadableRun",
    "check_readable",
    "decode",
    "digest",
    "root_problem",
    "record_problem",
    "check_record",
    "question_digest",
    "question_problem",
    "message_problem",
    "unit_problem",
    "encode",
    "held_secret",
    "install",
    "lost_start_message",
    "lost_secret",
    "reading",
    "reused_input",
    "start_lost_secret",
    "unreadable",
    "unreadable_error",
]

#: The tag key of a value JSON cannot hold as itself.
TAG = "$af"
#: The modules whose dataclasses and exceptions a record may name (already imported by then).
_MODULES = ("agentflow.errors", "agentflow.runtime.models.base", "dbos._error")


class UnreadableRecord(ValueError):
    """A stored row that is not agentflow's JSON (a pickle, a tampered or cut row)."""


class ForeignRecord(UnreadableRecord):
    """A stored row that is JSON, but not of the shape agentflow writes there (a row edited by
    hand or by another program): :func:`reading` says so."""


class UnreadableRun(InputError):
    """The error of a command that met a row of a durable run it cannot read
    (:func:`unreadable_error`): the run is never used, whatever else the command would do."""


class Unreadable:
    """What DBOS's listing functions return for a part of a row that cannot be read (the
    run's commands report it: runs.unreadable_run)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unreadable({self.reason!r})"


# ---------------------------------------------------------------------------------------------
# Encoding


def encode(value: Any) -> Any:
    """``value`` as plain JSON data (see the module doc).  Raises TypeError for a value of a
    type a record cannot hold."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {TAG: "float", "v": repr(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and TAG not in value:
            return {k: encode(v) for k, v in value.items()}
        return {TAG: "dict", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {TAG: "tuple", "v": [encode(v) for v in value]}
    if isinstance(value, (bytes, bytearray)):
        return {TAG: "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        kind = "set" if isinstance(value, set) else "frozenset"
        return {TAG: kind, "v": [encode(v) for v in value]}
    if isinstance(value, BaseException):
        return _encode_exception(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if _known(cls.__module__, cls.__qualname__) is not cls:
            raise TypeError(f"a durable record cannot hold a {cls.__module__}.{cls.__qualname__}")
        fields = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            fields[f.name] = None if callable(v) else encode(v)  # ChatRequest.on_delta
        return {TAG: "obj", "cls": f"{cls.__module__}:{cls.__qualname__}", "v": fields}
    raise TypeError(f"a durable record cannot hold a {type(value).__name__}")


def _encode_exception(exc: BaseException) -> dict[str, Any]:
    cls = type(exc)
    out: dict[str, Any] = {
        TAG: "exc",
        "cls": f"{cls.__module__}:{cls.__qualname__}",
        "name": cls.__name__,
        "base": _builtin_base(cls).__name__,
        "message": _text(exc),
        "args": [_plain(a) for a in exc.args],
    }
    if _known(cls.__module__, cls.__qualname__) is cls:
        state = {k: _plain(v) for k, v in vars(exc).items()} if hasattr(exc, "__dict__") else {}
        out["state"] = state
    return out


def _plain(value: Any) -> Any:
    """``value`` encoded, or its text when a record cannot hold it (an exception's argument)."""
    try:
        return encode(value)
    except (TypeError, ValueError, RecursionError):
        return _text(value)


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a broken __str__
        return repr(type(value))


def _builtin_base(cls: type) -> type:
    """The nearest built-in exception class among ``cls``'s ancestors."""
    for base in cls.__mro__:
        if base.__module__ == "builtins" and issubclass(base, BaseException):
            return base
    return Exception


def _known(module: str, qualname: str) -> Any:
    """The class ``module:qualname`` when it is one a record may name (a dataclass or exception
    of the allowed modules), else None; nothing is imported."""
    if module not in _MODULES or "." in qualname:
        return None
    found = getattr(sys.modules.get(module), qualname, None)
    if not isinstance(found, type):
        return None
    if issubclass(found, BaseException) or dataclasses.is_dataclass(found):
        return found
    return None


# ---------------------------------------------------------------------------------------------
# Decoding


def decode(data: Any) -> Any:
    """The value :func:`encode` made ``data`` of.  Raises :class:`UnreadableRecord` for data it
    did not make."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if TAG not in data:
        return {k: decode(v) for k, v in data.items()}
    kind = data[TAG]
    try:
        if kind == "tuple":
            return tuple(decode(v) for v in data["v"])
        if kind == "dict":
            return {_hashable(decode(k)): decode(v) for k, v in data["v"]}
        if kind == "bytes":
            return base64.b64decode(data["v"], validate=True)
        if kind == "set":
            return {_hashable(decode(v)) for v in data["v"]}
        if kind == "frozenset":
            return frozenset(_hashable(decode(v)) for v in data["v"])
        if kind == "float":
            number = float(data["v"])
            if math.isfinite(number):
                raise UnreadableRecord("a tagged float that is finite")
            return number
        if kind == "obj":
            return _decode_object(data)
        if kind == "exc":
            return _decode_exception(data)
    except UnreadableRecord:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise UnreadableRecord(f"a malformed {kind!r} value ({e})") from None
    raise UnreadableRecord(f"an unknown kind of value {kind!r}")


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise UnreadableRecord("an unhashable key") from None
    return value


def _decode_object(data: dict[str, Any]) -> Any:
    module, _, qualname = str(data["cls"]).partition(":")
    found = _known(module, qualname)
    if not isinstance(found, type) or not dataclasses.is_dataclass(found):
        raise UnreadableRecord(f"a value of class {data['cls']!r}, which a record cannot hold")
    cls: Any = found
    fields = data["v"]
    if not isinstance(fields, dict):
        raise UnreadableRecord(f"a malformed {qualname}")
    obj = cls.__new__(cls)  # as unpickling does: no __init__, every field set
    for f in dataclasses.fields(cls):
        if f.name in fields:
            value = decode(fields[f.name])
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise UnreadableRecord(f"a {qualname} without its field {f.name!r}")
        object.__setattr__(obj, f.name, value)
    return obj


def _decode_exception(data: dict[str, Any]) -> BaseException:
    module, _, qualname = str(data["cls"]).partition(":")
    args = tuple(decode(a) for a in data.get("args") or ())
    cls = _known(module, qualname)
    if cls is not None and issubclass(cls, BaseException):
        # as errors._rebuild: the recorded fields, no __init__
        exc: BaseException = cls.__new__(cls)
        exc.args = args
        state = data.get("state") or {}
        if not isinstance(state, dict):
            raise UnreadableRecord(f"a malformed {qualname}")
        for k, v in state.items():
            object.__setattr__(exc, str(k), decode(v))
        return exc
    base = getattr(builtins, str(data.get("base") or "Exception"), None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    name = str(data.get("name") or "Exception")
    if module == "builtins" and getattr(builtins, name, None) is base:
        cls = base
    else:  # a class of a tool's own: one of that name, over its built-in base
        cls = type(name, (base,), {"__module__": "agentflow.recorded"})
    message = str(data.get("message", ""))
    exc = cls.__new__(cls)
    exc.args = args if _text_of_args(args) == message else (message,)
    return exc


def _text_of_args(args: tuple[Any, ...]) -> str:
    return str(args[0]) if len(args) == 1 else (str(args) if args else "")


# ---------------------------------------------------------------------------------------------
# The serializer DBOS is given


#: The key an operation's record (``{"d": digest, "v": value}``, or Temporal's payload of it,
#: ``{"v": {"d": …, "v": …}}``) carries, true, when a secret was redacted from it before it was
#: written: its value is not the one the run saw (engine.py ``_step``; the reuse tables skip it).
REDACTED = "redacted"


def _marked(plain: Any) -> Any:
    """``plain`` (an encoded record) with an operation's record in it marked :data:`REDACTED`,
    and so a run's recorded start (its spec: DBOS's ``{"args": (spec,), …}``, Temporal's
    payload of it), which :func:`start_lost_secret` tells."""
    if not isinstance(plain, dict):
        return plain
    args = plain.get("args")
    if isinstance(args, dict) and args.get(TAG) == "tuple" and set(plain) == {"args", "kwargs"}:
        first = (args.get("v") or [None])[0]
        if isinstance(first, dict) and "plan_text" in first:
            return {**plain, "args": {**args, "v": [_marked(first), *args["v"][1:]]}}
    if "plan_text" in plain and "input" in plain:
        return {**plain, REDACTED: True}
    if "d" in plain and "v" in plain:
        return {**plain, REDACTED: True}
    inner = plain.get("v")
    if len(plain) == 1 and isinstance(inner, dict) and "d" in inner and "v" in inner:
        return {"v": {**inner, REDACTED: True}}
    return plain


def digest(*parts: Any) -> str:
    """A short stable digest of JSON-able ``parts`` (a step's rendered input): the ``d`` of an
    operation's record, which ``--reuse`` and ``redrive`` compare."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def question_digest(question: Any, choices: Any, schema: Any) -> str:
    """The digest of a question (its text, choices and schema): what its answer's record
    holds, so ``--reuse`` takes an answer to the same question only — the one a run recorded,
    or one given while it was stopped (the published question's, engine.py ``ask``)."""
    return digest("ask", [question, choices, schema])


def lost_secret(record: Any) -> bool:
    """True for an operation's record (``{"d", "v"}``) read back marked :data:`REDACTED`."""
    return isinstance(record, dict) and record.get(REDACTED) is True and "d" in record


def start_lost_secret(spec: Any) -> bool:
    """True for a run's recorded start (spec) read back marked :data:`REDACTED`: a secret was
    blanked out of its plan, input or paths when it was written, so it is not the program the
    run started with (spec.py :func:`refuse_secret` keeps a run from starting so; this is what
    a secret registered only later, or in another process, leaves)."""
    return isinstance(spec, dict) and spec.get(REDACTED) is True and "plan_text" in spec


def lost_start_message(run_id: str | None, doing: str) -> str:
    """Why run ``run_id`` (None: "the run"), whose recorded start :func:`start_lost_secret`,
    cannot be ``doing`` (resumed, reused, redriven)."""
    return (
        f"{f'run {run_id}' if run_id else 'the run'} cannot be {doing}: its recorded plan or "
        "input held a secret, which is never stored, so it would go on with *** in its place; "
        "run the flow again with `flowc run` (a durable run whose plan or input holds a secret "
        "is refused at its start)"
    )


def reused_input(run_id: str, spec: dict[str, Any]) -> Any:
    """The input recorded in run ``run_id``'s start ``spec``, for ``flowc run --reuse RUN``
    without ``--input``.  Raises InputError when the record lost a secret
    (:func:`start_lost_secret`): the input would be ``***`` where the run had the secret."""
    if start_lost_secret(spec):
        raise InputError(lost_start_message(run_id, "reused without --input"))
    return spec.get("input")


class JsonRecords:
    """DBOS's ``Serializer`` for agentflow (the interface of ``dbos._serialization.Serializer``,
    which DBOS calls by duck typing: ``name``, ``serialize``, ``deserialize``): :func:`encode` /
    :func:`decode` as JSON text (ASCII: any string, lone surrogates too, survives the
    database's encoding)."""

    def name(self) -> str:
        """The name DBOS stores in each row's ``serialization`` column."""
        return "agentflow_json"

    def serialize(self, data: Any) -> str:
        """``data`` as JSON text, every known secret redacted from its strings (``***``), an
        operation's record that lost one so marked :data:`REDACTED`.  Raises TypeError for
        what a record cannot hold."""
        plain = encode(data)
        text = json.dumps(plain, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        if SECRETS and SECRETS.spans(text):  # one scan of the text: the common case finds none
            # the strings are redacted, not the text (a cut through an escape breaks the JSON)
            plain = _marked(SECRETS.redact_data(plain))
            text = json.dumps(plain, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return text

    def deserialize(self, serialized_data: str) -> Any:
        """The value of JSON text made by :meth:`serialize`.  Raises
        :class:`UnreadableRecord` for anything else."""
        if not isinstance(serialized_data, str):
            raise UnreadableRecord("not text")
        try:
            data = json.loads(serialized_data)
        except (ValueError, RecursionError):
            raise UnreadableRecord("not JSON") from None
        if TAG not in serialized_data and "\\u" not in serialized_data:
            # no tagged value can be in it (a key spelled with escapes would show "\\u"):
            # the JSON is the value, which decode would only copy (a 100,000-item map's input)
            return data
        try:
            return decode(data)
        except RecursionError:
            raise UnreadableRecord("nested too deeply") from None


def _refuse_pickle(self: Any, serialized_data: str) -> Any:
    raise UnreadableRecord("a pickle, which is never loaded: loading one runs code")


_installed: dict[str, Any] = {}


def install() -> JsonRecords:
    """Make this process's DBOS safe to read any database with: its pickle reader refuses
    (``DefaultSerializer.deserialize``), its listing functions return :class:`Unreadable` for
    a part they cannot read.  Returns the serializer to give DBOS.  Idempotent."""
    from dbos import _serialization, _sys_db

    if not _installed:
        _serialization.DefaultSerializer.deserialize = _refuse_pickle  # type: ignore[method-assign,assignment]

        def safe_deserialize(
            serializer: Any, serialization: Any, workflow_id: str, **kw: Any
        ) -> tuple[Any, ...]:
            out: list[Any] = []
            for name, reader in (
                ("serialized_input", _serialization.deserialize_args),
                ("serialized_output", _serialization.deserialize_value),
                ("serialized_exception", _serialization.deserialize_exception),
            ):
                text = kw.get(name)
                if text is None:
                    out.append(None)
                    continue
                try:
                    out.append(reader(text, serialization, serializer))
                except Exception as e:  # noqa: BLE001 - reported by the run's commands
                    out.append(Unreadable(str(e)))
            return tuple(out)

        # dbos._sys_db imports the function from dbos._serialization without re-exporting
        # it; its callers read that module global, which is what is replaced here
        _sys_db.safe_deserialize = safe_deserialize  # type: ignore[attr-defined]
        _strict_readers()
        _installed["serializer"] = JsonRecords()
    serializer: JsonRecords = _installed["serializer"]
    return serializer


#: DBOS's readers of a row, by the name its modules import them under, and the modules that do.
_READERS = ("deserialize_value", "deserialize_args", "deserialize_exception")
_READER_MODULES = ("dbos._sys_db", "dbos._core", "dbos._dbos", "dbos._datasource", "dbos._client")


def _strict_readers() -> None:
    """Make every DBOS reader of a row raise :class:`UnreadableRecord` for a row it cannot
    read, whatever the reason: a ``serialization`` column naming a format this process lacks
    (DBOS raises TypeError), a ``portable_json`` row of another shape (KeyError), JSON too
    deep (RecursionError).  So a command or a replay that meets one says the run cannot be
    read (:func:`reading`, dbos_engine's replay) instead of a traceback."""
    from dbos import _serialization

    def strict(name: str) -> Any:
        original = getattr(_serialization, name)

        def read(*args: Any, **kw: Any) -> Any:
            try:
                return original(*args, **kw)
            except UnreadableRecord:
                raise
            except Exception as e:  # noqa: BLE001 - any row at all
                raise UnreadableRecord(f"a row DBOS cannot read: {e}") from None

        return read

    readers = {name: strict(name) for name in _READERS}
    for module in _READER_MODULES:
        found = sys.modules.get(module)
        for name, reader in readers.items():
            if found is not None and hasattr(found, name):
                setattr(found, name, reader)


def held_secret(text: str) -> str | None:
    """What ``text`` holds that the redaction layer would blank as ``***`` — ``"the value of
    PKEY_API_KEY"`` (the environment variables whose values it holds a run of), else ``"a
    configured secret"`` — or None when it holds none.  Never the value itself (docs/durable.md
    "No secret is stored")."""
    if not SECRETS or not SECRETS.spans(text):
        return None
    names = []
    whole = False
    for name, value in sorted(os.environ.items()):
        if value.strip() in SECRETS:
            one = Secrets()
            one.add(value)
            if one.spans(text):
                names.append(name)
                whole = whole or value.strip() in text
    if not names:
        return "a configured secret"
    # a run of 8 or more characters of it is blanked too: say so rather than claim the value
    return f"{'the value' if whole else 'part of the value'} of {' or '.join(names)}"


# ---------------------------------------------------------------------------------------------
# What the run's commands say about an unreadable row


def unreadable_error(
    run_id: str,
    reason: str,
    *,
    root: bool = False,
    unit: str | None = None,
    shape: bool = False,
) -> UnreadableRun:
    """The error of a command that met an unreadable row of run ``run_id``; ``root``: its
    own row has a value agentflow never writes there (:func:`root_problem`); ``unit``: the
    row of that unit has (:func:`unit_problem`, the unit as the message names it); ``shape``:
    a row of its record is JSON of another shape than agentflow writes there
    (:func:`record_problem`, the answers' and questions' rows)."""
    if shape:
        return UnreadableRun(
            f"run {run_id} cannot be read: a row of its record in the durable runs database "
            f"is not one agentflow wrote ({reason}); nothing in it was run. The row was "
            "changed by hand or by another program"
        )
    if unit is not None:
        return UnreadableRun(
            f"run {run_id} cannot be read: the row of its unit {unit} in the durable runs "
            f"database is not one agentflow wrote ({reason}); nothing in it was run. The row "
            "was changed by hand or by another program"
        )
    if root:
        return UnreadableRun(
            f"run {run_id} cannot be read: its row in the durable runs database is not one "
            f"agentflow wrote ({reason}); nothing in it was run. The row was changed by hand "
            "or by another program"
        )
    return UnreadableRun(
        f"run {run_id} cannot be read: a row of its record in the durable runs database is "
        f"not agentflow's JSON ({reason}); nothing in it was run. An earlier agentflow stored "
        "pickles, or the row was changed by hand"
    )


def unreadable(*parts: Any) -> str | None:
    """The reason the first :class:`Unreadable` among ``parts`` gives (a workflow's input,
    output or error, a step's output or error), or None when every part was read."""
    for part in parts:
        if isinstance(part, Unreadable):
            return part.reason
    return None


def check_readable(
    run_id: str, workflows: Any, label: Callable[[str], str | None] | None = None
) -> None:
    """Raise :func:`unreadable_error` when a workflow status of ``workflows`` (DBOS
    ``WorkflowStatus``) has a part that could not be read, when the run's own row (the one
    whose id is ``run_id``) is not one agentflow wrote (:func:`root_problem`), or when a row
    of one of its units is not (:func:`unit_problem`; named by ``label``, step path → the
    step as the `.flow` writes it, when given)."""
    for w in workflows:
        reason = unreadable(
            getattr(w, "input", None), getattr(w, "output", None), getattr(w, "error", None)
        )
        if reason is not None:
            raise unreadable_error(run_id, reason)
        wfid = getattr(w, "workflow_id", None)
        if wfid == run_id and (reason := root_problem(w)):
            raise unreadable_error(run_id, reason, root=True)
        if isinstance(wfid, str) and wfid.startswith(run_id + "/"):
            if (reason := unit_problem(w, run_id)) is not None:
                unit = wfid[len(run_id) + 1 :]
                named = label(unit) if label is not None else None
                raise unreadable_error(
                    run_id, reason, unit=f"`{named}` ({unit})" if named else unit
                )


#: The engine's statuses of a workflow row (dbos ``WorkflowStatusString``).
_STATUSES = frozenset(
    ("PENDING", "SUCCESS", "ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED", "CANCELLED", "ENQUEUED",
     "DELAYED")
)  # fmt: skip
#: The recorded input's entries that are text or null when there (spec.run_spec).
_TEXTS = ("plan_file", "config", "workspace", "reuse", "replay", "model")


def root_problem(w: Any) -> str | None:
    """Why the root row ``w`` of a durable run (a DBOS ``WorkflowStatus`` read with its input)
    is not one agentflow wrote, or None: its workflow name, its status (one of the engine's),
    its times (numbers or null) and its recorded input (``args[0]`` a dict whose
    ``plan_text`` is text that loads as a plan, and whose other entries have the types
    spec.run_spec records).  The one check every command makes of the row before it uses
    it (docs/durable.md "The database": a run that cannot be read)."""
    if getattr(w, "name", None) != "agentflow.run":
        return f"its workflow name is {getattr(w, 'name', None)!r:.40}, not 'agentflow.run'"
    if (problem := _row_problem(w)) is not None:
        return problem
    spec = _started_with(w)
    if spec is None:  # what DBOS calls the run with
        return "its recorded input is not a run's input"
    text = spec.get("plan_text")
    if not isinstance(text, str):
        return "its recorded plan is not text"
    for key in _TEXTS:
        if spec.get(key) is not None and not isinstance(spec[key], str):
            return f"its recorded {key} is not text"
    if (problem := _outcome_problem(getattr(w, "output", None))) is not None:
        return problem
    return _plan_problem(text)


#: A run's statuses (result.RunStatus) as its recorded outcome holds them.
_RUN_STATUSES = frozenset(("ok", "exited", "error", "aborted", "cancelled"))


def _outcome_problem(output: Any) -> str | None:
    """Why ``output``, a run's recorded outcome (its root's output: ``{status, output, error,
    results, usage, duration_ms, …}``, spec.run_root), is not one, or None (also for none
    recorded or read)."""
    if output is None or isinstance(output, Unreadable):
        return None
    if not isinstance(output, dict) or output.get("status") not in _RUN_STATUSES:
        return "its recorded outcome is not a run's outcome"
    error = output.get("error")
    if error is not None and not (
        isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    ):
        return "its recorded outcome has an error that is not one"
    for key in ("results", "usage"):
        if output.get(key) is not None and not isinstance(output[key], dict):
            return f"its recorded outcome has {key} that are not an object"
    return None


def _row_problem(w: Any) -> str | None:
    """Why workflow row ``w``'s status or times are not ones the engine writes, or None."""
    status = getattr(w, "status", None)
    if status not in _STATUSES:
        return f"its status {status!r:.40} is not one the engine records"
    for field in ("created_at", "updated_at"):
        if not _is_time(t := getattr(w, field, None)):
            return f"its {field} {t!r:.40} is not a time"
    return None


def _is_time(t: Any) -> bool:
    """True for a row's time as the engine writes it: null, or a finite number of epoch
    milliseconds within the calendar (not a bool, not text)."""
    if t is None:
        return True
    return (type(t) is int or type(t) is float) and math.isfinite(t) and abs(t) <= _LATEST


def _started_with(w: Any) -> dict[str, Any] | None:
    """The one argument workflow row ``w`` records it was called with (DBOS's ``{"args":
    (spec,), "kwargs": {}}``), or None when its input is not so."""
    raw = getattr(w, "input", None)
    raw = raw if isinstance(raw, dict) else {}
    args = raw.get("args")
    spec = args[0] if isinstance(args, list | tuple) and len(args) == 1 else None
    return spec if isinstance(spec, dict) and raw.get("kwargs") == {} else None


#: A child unit's recorded input, by kind (engine.DurableEffects.describe, chat_on_queue): the
#: entries it must have and their types.
_UNIT_ENTRIES: dict[str, dict[str, Any]] = {
    "body": {"body": str, "scope": dict},
    "batch": {"body": str, "scope": dict, "items": list, "lo": int, "map_path": str},
    "plan": {"name": str, "args": dict},
    "tool": {"name": str, "args": dict},
    "model": {"role": str},
}
#: The entries every unit but a model call's has (its plan frame).
_FRAME = {"stack": list, "prefix": str}


def unit_problem(w: Any, run_id: str) -> str | None:
    """Why row ``w`` of a child unit of run ``run_id`` (a map item, a branch, a ``plan__*``
    call, a model call on a fleet queue: a DBOS ``WorkflowStatus`` read with its input) is not
    one agentflow wrote, or None: its workflow name, status, times and recorded input (the
    unit's spec: its run, kind, path and the entries its kind has; engine.py ``describe``).
    A unit the engine could not take up (an unknown status, no spec to call it with) would
    leave its run waiting for it for ever."""
    name = getattr(w, "name", None)
    if name != "agentflow.unit":
        return f"its workflow name is {name!r:.40}, not 'agentflow.unit'"
    if (problem := _row_problem(w)) is not None:
        return problem
    error = getattr(w, "error", None)
    if error is not None and not isinstance(error, BaseException | Unreadable):
        return "its recorded error is not one"
    spec = _started_with(w)
    if spec is None or spec.get("run") != run_id:
        return "its recorded input is not a unit's input"
    kind = spec.get("kind")
    if kind not in _UNIT_ENTRIES:
        return f"its recorded kind {kind!r:.40} is not one the engine records"
    wanted = {"path": str, **_UNIT_ENTRIES[kind], **({} if kind == "model" else _FRAME)}
    for key, typ in wanted.items():
        value = spec.get(key)
        if not isinstance(value, typ) or isinstance(value, bool):
            return f"its recorded {key} is not {_NAMES[typ]}"
    if kind != "model" and not all(isinstance(p, str) for p in spec["stack"]):
        return "its recorded stack is not a list of plan names"
    if kind != "model" and not _is_number(spec.get("deadline_at"), null=True):
        return "its recorded deadline is not a time"
    return None


def check_record(run_id: str, step: Any, label: Callable[[str], str | None] | None = None) -> None:
    """Raise :func:`unreadable_error` when recorded operation ``step`` of run ``run_id`` is
    not one agentflow wrote (:func:`record_problem`): a part that is not agentflow's JSON, or
    JSON of another shape."""
    reason = record_problem(step, run_id, label)
    if reason is not None:
        json_ok = isinstance(step, dict) and unreadable(step.get("output"), step.get("error"))
        raise unreadable_error(run_id, reason, shape=not json_ok)


def message_problem(message: Any) -> str | None:
    """Why ``message``, one sent to a unit that waits on a question (``{"answer": V}``, or
    ``"unanswered"``: answers.py), or what its wait received (None when it timed out), is
    not one, or None."""
    if message is None or message == "unanswered":
        return None
    if isinstance(message, dict) and set(message) == {"answer"}:
        return None
    return "a message that is not an answer"


def question_problem(key: Any, value: Any) -> str | None:
    """Why a question unit published (event ``question:PATH`` → ``{question, path,
    operation, choices, schema, timeout, asked_at, label, answered?}``, engine.py) is not one
    agentflow wrote, or None.  Other events are not read."""
    if not isinstance(key, str) or not key.startswith("question:"):
        return None
    if isinstance(value, Unreadable):
        return value.reason
    where = f"the question published as {key!r:.80}"
    if not isinstance(value, dict):
        return f"{where} is not one"
    for entry, kinds in _QUESTION.items():
        if entry in value and not isinstance(value[entry], kinds):
            return f"{where} has a {entry} that is not one"
        if entry in value and isinstance(value[entry], bool) and bool not in kinds:
            return f"{where} has a {entry} that is not one"
    if not isinstance(value.get("question"), str):
        return f"{where} has no question"
    choices = value.get("choices")
    if isinstance(choices, list) and any(isinstance(c, dict | list) for c in choices):
        return f"{where} has a choice that is not one"
    for entry in ("timeout", "asked_at"):
        if entry in value and not _is_number(value[entry], null=True):
            return f"{where} has a {entry} that is not a number"
    return None


#: The entries of a published question and their types (engine.py ``ask``).
_QUESTION: dict[str, tuple[type, ...]] = {
    "question": (str,),
    "path": (str, type(None)),
    "operation": (str, type(None)),
    "choices": (list, type(None)),
    "schema": (dict, type(None)),
    "timeout": (int, float, type(None)),
    "asked_at": (int, float, type(None)),
    "label": (str, type(None)),
    "answered": (bool,),
}


_NAMES: dict[Any, str] = {str: "text", dict: "an object", list: "a list", int: "an integer"}


def _is_number(value: Any, *, null: bool = False) -> bool:
    if value is None:
        return null
    return (type(value) is int or type(value) is float) and math.isfinite(value)


#: The keys an operation's record may carry besides its digest and value (engine.py ``_step``).
_RECORD_KEYS = frozenset(("d", "v", "reused", REDACTED))


def record_problem(
    step: Any, run_id: str, label: Callable[[str], str | None] | None = None
) -> str | None:
    """Why a recorded operation ``step`` of run ``run_id`` (a DBOS step or an item record:
    ``{function_name, output, error, started_at_epoch_ms, completed_at_epoch_ms,
    child_workflow_id?}`` as the engine lists steps) is not one agentflow wrote, or None:
    the reason an :class:`Unreadable` part gives; else an operation of agentflow's
    (``PATH/tool:NAME#N``, ``PATH/ask#N``, …) whose result is not ``{"d": digest, "v": value}``
    or whose error is not an exception, an answer's message (``DBOS.recv``) that is not one, a
    sleep's wake-up time that is not a time, a link to a child unit that is not one of the
    run's, a time that is not one.  The one check of an operation's row, made by every
    command that reads it (``runs show``, ``--reuse``, ``redrive``, ``resume``) and by the
    engine as it replays it.  ``label``: step path → the step as the `.flow` writes it, which
    the reason names."""
    if not isinstance(step, dict):
        return "an operation's row is not one"
    name = step.get("function_name")
    output, error = step.get("output"), step.get("error")
    if (reason := unreadable(output, error)) is not None:
        return reason
    if not isinstance(name, str) or not name:
        return f"an operation's name {name!r:.40} is not one the engine records"
    op = parse_operation(name)
    named = label(op.path) if op is not None and label is not None else None
    where = f"the step `{named}` ({name:.80})" if named else f"the operation {name!r:.80}"
    for field in ("started_at_epoch_ms", "completed_at_epoch_ms"):
        if not _is_time(step.get(field)):
            return f"{where} has a {field.split('_')[0]} time that is not a time"
    child = step.get("child_workflow_id")
    if child is not None and (not isinstance(child, str) or not child.startswith(run_id + "/")):
        return f"{where} names {child!r:.60} as its unit, which is not one of the run's"
    engine = name.startswith("DBOS.") or name in ("agentflow.unit", "agentflow.run")
    if child is not None and not engine:
        return f"{where} starts a unit under a name that is not a workflow's"
    if op is None and not engine and not name.endswith("/begin"):
        return f"an operation's name {name!r:.60} is not one the engine records"
    if error is not None and not isinstance(error, BaseException):
        return f"{where} has an error that is not one"
    if name == "DBOS.recv":
        return None if message_problem(output) is None else f"{where} has {message_problem(output)}"
    if name == "DBOS.sleep":
        return (
            None if _is_number(output, null=True) else f"{where} has a wake-up time that is not one"
        )
    if name.endswith("/begin"):  # a call that is not idempotent began (engine.py _step)
        return None if output in (None, True) else f"{where} has a result that is not one"
    if op is None or output is None:  # the engine's own operations: its reading of them
        return None
    if (
        not isinstance(output, dict)
        or not isinstance(output.get("d"), str)
        or "v" not in output
        or not set(output) <= _RECORD_KEYS
    ):
        return f"{where} has a result that is not a step's record"
    return None


#: The latest time a row may hold, in epoch milliseconds: the end of year 9999 (what a
#: calendar, and the platform's time_t, can show)
_LATEST = 253_402_300_799_999


@functools.lru_cache(maxsize=64)
def _plan_problem(text: str) -> str | None:
    """Why recorded plan ``text`` does not load as a plan, or None (read once per text)."""
    from agentflow.ir.loader import check_plan_text  # the plan loader, only for a row read

    _, problems = check_plan_text(text, "<durable>")
    return (
        f"its recorded plan does not load: {problems[0].message.splitlines()[0]}"
        if problems
        else None
    )


@contextlib.contextmanager
def reading(run_id: str) -> Iterator[None]:
    """Turn an :class:`UnreadableRecord` raised while reading run ``run_id``'s rows into
    :func:`unreadable_error`."""
    try:
        yield
    except UnreadableRecord as e:
        raise unreadable_error(run_id, str(e), shape=isinstance(e, ForeignRecord)) from None
