"""What the client modules `flowc gen python` writes rely on (docs/reference/python-clients.md).

- :data:`Int`: a `.flow` ``int`` as its contract reads it: JSON Schema's ``integer``, of which
  ``1.0`` is one (it becomes ``1``); no other coercion (``"1"`` and ``true`` are refused);
- :func:`exact`: a union of literal types compared as JSON Schema's ``enum`` compares;
- :func:`format_check`, :func:`pattern_check`: an ``@format`` or ``@pattern`` constraint checked
  by the contract validator itself (:func:`agentflow.runtime.extract.validate`), so a model and
  its contract agree;
- :func:`run_flow` / :func:`run_flow_sync`: :func:`agentflow.run` / :func:`agentflow.run_sync`
  with the options a client passes on;
- :func:`require_current`: refuse, before anything runs, a module generated from a version of
  its flow with another interface (types, fields, stages, names: ``FLOW_INTERFACE``; a
  comment or whitespace changed is no reason);
- :func:`input_json`: the input given to a run function — its model, or a dict validated into
  it — as the JSON the run takes;
- :func:`typed_result`: a run's result with its output validated into the flow's output model;
- :func:`stage_values`: each stage's value read from a result (the stage templates the compiler
  gives, rendered over the run's step results).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, TypeAdapter, ValidationError

from agentflow.api import run
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.gen_python import current_interface, may_import, source_digest
from agentflow.core.vocabulary import Code
from agentflow.errors import ClientError, InputError
from agentflow.grammar.parser import parse_template
from agentflow.runtime.expressions import render
from agentflow.runtime.extract import validate
from agentflow.runtime.interrupt import run as run_loop
from agentflow.runtime.result import RunResult

if TYPE_CHECKING:
    from agentflow.runtime.config import Config
    from agentflow.runtime.events import Sink
    from agentflow.runtime.hooks import Hooks
    from agentflow.runtime.models.router import ModelRouter
    from agentflow.runtime.shape_cache import ShapeCache
    from agentflow.runtime.tools.catalog import Catalog

__all__ = [
    "Int",
    "format_check",
    "pattern_check",
    "run_flow",
    "run_flow_sync",
    "require_current",
    "input_json",
    "typed_result",
    "stage_values",
]

OutT = TypeVar("OutT")


def _whole_number(value: Any) -> Any:
    """``1.0`` → ``1`` (JSON Schema's integer); anything else unchanged for strict validation."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


#: A `.flow` ``int``: strict ``int``, where a float with no fraction (``1.0``) counts as one.
Int = Annotated[int, BeforeValidator(_whole_number)]


def exact(*values: str | int | float | bool) -> BeforeValidator:
    """A Pydantic validator of a union of literal types that compares as JSON Schema's ``enum``
    does: ``true``/``false`` equal only themselves (Pydantic's ``Literal[1]`` takes ``True``),
    numbers equal by value (``1.0`` is ``1``; the literal's own value is kept), texts by text.
    Raises ``ValueError`` (a validation error) naming the allowed values."""

    def check(value: Any) -> Any:
        for literal in values:
            if isinstance(literal, bool) or isinstance(value, bool):
                if value is literal:
                    return value
            elif isinstance(literal, int | float):
                if isinstance(value, int | float) and value == literal:
                    return literal
            elif isinstance(value, str) and value == literal:
                return value
        raise ValueError(f"must be one of {', '.join(map(repr, values))}")

    return BeforeValidator(check)


def format_check(name: str) -> AfterValidator:
    """A Pydantic validator of the JSON Schema ``format`` ``name`` (``"uri"``, ``"date"``…) that
    asks the contract validator, so the model refuses exactly what the contract refuses.
    Raises ``ValueError`` (a validation error) with the validator's message."""
    return _string_check({"type": "string", "format": name})


def pattern_check(pattern: str) -> AfterValidator:
    """A Pydantic validator of an ``@pattern`` (JSON Schema ``pattern``) checked by the contract
    validator: its dialect, not Pydantic's (``$`` is the end of the text, never before a final
    line break). Raises ``ValueError`` (a validation error) with the validator's message."""
    return _string_check({"type": "string", "pattern": pattern})


def _string_check(schema: dict[str, Any]) -> AfterValidator:
    def check(value: str) -> str:
        problems = validate(schema, value)
        if problems:
            raise ValueError(problems[0].removeprefix("$: "))
        return value

    return AfterValidator(check)


def require_current(
    flow: str | os.PathLike[str],
    digest: str,
    module: str | os.PathLike[str],
    interface: str | None = None,
) -> None:
    """Refuse a client ``module`` (its ``__file__``) generated from a version of ``flow`` with
    another interface than the one it would run: ``digest`` is the module's ``FLOW_DIGEST``
    (:func:`agentflow.compiler.gen_python.source_digest`, the text it was generated from: the
    same text is current at once), ``interface`` its ``FLOW_INTERFACE``
    (:func:`~agentflow.compiler.gen_python.interface_digest`: what the module encodes — the
    types, fields, stages and names; a comment, whitespace or line endings changed leave it
    current). A module written before interfaces were recorded (``interface`` None) is current
    only for the very text. Called by a generated run function before anything runs (no model
    call is made for a run whose output the module could not read). Raises
    :class:`~agentflow.errors.ClientError` (code ``validation``) naming the module and the
    ``flowc gen python`` command that writes it again; a flow that cannot be read or has errors
    is left to the run to report (docs/reference/python-clients.md "Keeping the module
    current")."""
    try:
        text = read_source(flow)
    except OSError:
        return
    if source_digest(text) == digest and (interface is None or not may_import(text)):
        return  # the very text (one that imports is compared by interface: docs above)
    if interface is not None:
        now = _interface_now(str(flow), text)
        if now is None or now == interface:
            return
    shown_module, shown_flow = _shown(module), _shown(flow)
    raise ClientError(
        Code.VALIDATION,
        f"{shown_module} was generated from an earlier version of {shown_flow} (its types may "
        f"have changed): nothing was run; write it again with "
        f"`flowc gen python {shown_flow} -o {shown_module}`",
    )


#: the interface digest of each flow text seen, by (file, text digest), with the digest of
#: each file it imports (transitively) when it was checked: a run function called again on an
#: unchanged (but edited since generation) flow whose imported files are unchanged checks it once
_INTERFACES: dict[tuple[str, str], tuple[str | None, dict[Path, str]]] = {}


def _interface_now(flow: str, text: str) -> str | None:
    key = (os.path.abspath(flow), source_digest(text))
    seen = _INTERFACES.get(key)
    if seen is not None and all(_digest_of(p) == d for p, d in seen[1].items()):
        return seen[0]
    if len(_INTERFACES) > 64:
        _INTERFACES.clear()
    result = check_source(text, flow)
    imported = result.imports.paths.values() if result.imports is not None else ()
    deps = {Path(p): _digest_of(Path(p)) for p in imported}
    _INTERFACES[key] = (current_interface(flow, text, result), deps)
    return _INTERFACES[key][0]


def _digest_of(path: Path) -> str:
    """:func:`source_digest` of the file ``path``, or ``""`` when it cannot be read."""
    try:
        return source_digest(read_source(path))
    except OSError:
        return ""


def input_json(adapter: TypeAdapter[Any], value: Any, *, exclude_unset: bool = True) -> Any:
    """The JSON of ``value``, a run function's input, validated by ``adapter`` (the module's
    ``INPUT``): the input model, or a dict (any mapping) of the same fields, which is validated
    into the model first, so it is checked as the model checks it (docs/reference/python-clients.md
    "The run functions").  ``exclude_unset``: leave out the fields not given (the run's input
    type gives their defaults).  Raises :class:`~agentflow.errors.InputError` naming each field
    that does not fit (``tickets.0.title: field required``), before anything runs."""
    try:
        model = adapter.validate_python(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'the input'}: {e['msg'].lower()}"
            for e in exc.errors(include_url=False)[:5]
        )
        more = len(exc.errors()) - 5
        raise InputError(
            f"the input does not fit the flow's input type: {problems}"
            + (f" (and {more} more)" if more > 0 else "")
        ) from None
    return adapter.dump_python(model, mode="json", by_alias=True, exclude_unset=exclude_unset)


def typed_result(
    result: RunResult[Any],
    adapter: TypeAdapter[OutT],
    flow: str | os.PathLike[str] | None = None,
    module: str | os.PathLike[str] | None = None,
) -> RunResult[OutT]:
    """``result`` with its output validated by ``adapter`` (the flow's output type) when the run
    finished (status ``ok``); otherwise the same result (output None: errors come back as
    values). Raises :class:`~agentflow.errors.ClientError` (code ``output_validation``, the
    untyped ``result`` on its ``result``) when a finished run's output does not fit: the client
    module does not match its flow; ``flow`` and ``module`` (the generated module's
    ``FLOW_FILE`` and ``__file__``) name the command that writes it again."""
    if result.status != "ok":
        return dataclasses.replace(result, output=None)
    try:
        output = adapter.validate_python(result.output)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'the output'}: {e['msg'].lower()}"
            for e in exc.errors(include_url=False)[:5]
        )
        command = (
            f"flowc gen python {_shown(flow)} -o {_shown(module)}"
            if flow is not None and module is not None
            else "flowc gen python"
        )
        error = ClientError(
            Code.OUTPUT_VALIDATION,
            f"the run finished but its output does not fit the client module's output type "
            f"({problems}): the module does not match its flow; write it again with "
            f"`{command}` (the untyped result is the error's `result`)",
        )
        error.result = result
        raise error from None
    return dataclasses.replace(result, output=output)


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the current directory when it is beneath it, else as it is."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def stage_values(
    result: RunResult[Any], templates: Mapping[str, str], input: Any = None
) -> dict[str, Any]:
    """``{stage: value}`` for each stage of ``templates`` (``{"plan": "{{ E2 }}"}``, as the
    compiler lowers them) whose steps all finished in ``result``; the others are left out.
    ``input`` is the run's input (JSON), for a stage whose value reads it."""
    scope = {**result.results, "input": input}
    out: dict[str, Any] = {}
    for stage, text in templates.items():
        try:
            out[stage] = render(parse_template(text), scope)
        except Exception:  # noqa: BLE001 - a step of the stage did not finish: no value
            continue
    return out


async def run_flow(
    flow: str | os.PathLike[str],
    input: Any,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
    answers: Mapping[str, Any] | None = None,
) -> RunResult[Any]:
    """:func:`agentflow.run` of ``flow`` with every one of its keyword options (documented
    there; `tests/compiler/test_gen_python_run_options.py` compares the two signatures)."""
    return await run(
            flow, input, config=config, workspace=workspace, trace=trace, sinks=sinks,
            hooks=hooks, catalog=catalog, router=router, record=record, replay=replay,
            shape_cache=shape_cache, on_partial=on_partial, telemetry=telemetry, model=model,
            durable=durable, run_id=run_id, reuse=reuse, ask_again=ask_again,
            database=database, fleet=fleet, on_start=on_start, answers=answers,
    )  # fmt: skip


def run_flow_sync(
    flow: str | os.PathLike[str],
    input: Any,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
    answers: Mapping[str, Any] | None = None,
) -> RunResult[Any]:
    """:func:`run_flow` for synchronous callers, on :func:`agentflow.run_sync`'s event loop
    (SIGINT/SIGTERM stop the run gracefully)."""
    return run_loop(
        run_flow(
            flow, input, config=config, workspace=workspace, trace=trace, sinks=sinks,
            hooks=hooks, catalog=catalog, router=router, record=record, replay=replay,
            shape_cache=shape_cache, on_partial=on_partial, telemetry=telemetry, model=model,
            durable=durable, run_id=run_id, reuse=reuse, ask_again=ask_again,
            database=database, fleet=fleet, on_start=on_start, answers=answers,
        )
    )  # fmt: skip
