"""The exception tree of agentflow (one root, one-line docstrings, in the manner of httpx).

Every exception a caller of agentflow may see is defined here, under :class:`FlowError` (the one
exception is :class:`Interrupted`, a ``KeyboardInterrupt`` on purpose); the modules that raise
them import them from here (and some re-export them where they used to live).  Exceptions that
never leave the module raising them (the scanner's ``SynErr``, the model layer's
``StreamFailure`` …) stay private to it; ``tests/test_exception_tree.py`` checks both rules.

Errors in a user's `.flow`, plan, configuration or input are reported through these, each
naming file, line and column where one is known; the CLI prints them without a traceback.

A run-time failure is a :class:`RunError` whose ``code`` is one of the registered run-time error
codes (:data:`agentflow.core.vocabulary.ERROR_CODES`, docs/spec/PLAN_IR.md §8); a result records
it as an :class:`ErrorInfo`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import ERROR_CODES, Code

if TYPE_CHECKING:
    from agentflow.core.diagnostics import Diagnostic

__all__ = [
    "MODEL_ERROR_CODES",
    "BadPath",
    "ClientError",
    "Cancelled",
    "CompileError",
    "ConfigError",
    "ContractError",
    "ErrorInfo",
    "ExitError",
    "ExprError",
    "FlowError",
    "FormatError",
    "InputError",
    "Interrupted",
    "LoweringError",
    "ModelError",
    "PlanLoadError",
    "RunAborted",
    "RunError",
    "SourceError",
    "Stopped",
    "model_error_code",
    "run_error_of",
]


class FlowError(Exception):
    """Base class of every error agentflow raises on purpose."""


# ---------------------------------------------------------------------------------------------
# `.flow` sources


class SourceError(FlowError):
    """A `.flow` source or template that does not parse; carries a span."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint


class FormatError(SourceError):
    """The source cannot be formatted: it has a syntax error, or (never expected) formatting
    would change its meaning.  ``span`` locates the problem when known."""


class CompileError(FlowError):
    """A `.flow` program with errors; ``diagnostics`` holds every one of them."""

    def __init__(self, diagnostics: list[Diagnostic], sources: dict[str, str]):
        self.diagnostics = diagnostics
        self.sources = sources
        first = diagnostics[0] if diagnostics else None
        msg = f"{first.span}: {first.message}" if first else "compilation failed"
        super().__init__(msg)


class ContractError(FlowError):
    """A type that has no JSON Schema (extern or verification types)."""


class LoweringError(FlowError):
    """A construct this version of the compiler cannot lower; carries the span."""

    def __init__(self, message: str, span: Span):
        super().__init__(f"{span}: {message}")
        self.message = message
        self.span = span


# ---------------------------------------------------------------------------------------------
# Plans, configuration, input


class PlanLoadError(FlowError):
    """A plan file that fails to load or validate: ``diagnostics`` lists every problem found.

    Each is a :class:`~agentflow.core.diagnostics.Diagnostic` with a ``plan-*`` code, a span in
    the plan file (a whole-file span, line 0, when there is no better one), a message and maybe a
    hint; ``sources`` maps the plan file to its text when the loader read it (for the renderers'
    source excerpts).  ``errors`` is the same list (its older name).  ``str()`` is one problem per
    line, ``file:line:col: message (hint)``.
    """

    def __init__(self, diagnostics: list[Diagnostic], sources: dict[str, str] | None = None):
        self.diagnostics = diagnostics
        self.sources = dict(sources or {})
        super().__init__("\n".join(str(d) for d in diagnostics))

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics (the name this list had before plan problems were diagnostics)."""
        return self.diagnostics


class ConfigError(FlowError):
    """A `flow.toml` (or environment) configuration that is missing or wrong."""


class NotAPlan(FlowError):
    """A `.flow` file with no stage — a library of types for other flows to import — where a
    plan to run was asked for (docs/reference/programs.md "Libraries"); the message says what
    to run instead."""


class InputError(FlowError):
    """A run input that is not valid JSON or does not match the plan's input schema."""


class InputMismatch(InputError):
    """A run input that does not match the plan's input schema (``flowc schema FILE --input``
    prints that schema)."""


# ---------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The record of a run-time failure in a result (``RunResult.error``, ``AskResult.error``,
    ``PlanExecution.error``, a ``RunAborted``'s failing call): what failed and where.

    - ``code``: a run-time error code (docs/spec/PLAN_IR.md §8,
      :data:`~agentflow.core.vocabulary.ERROR_CODES`), or the code an ``exit`` step gave
      (``failed`` by default);
    - ``message``: what happened, for a person;
    - ``step_path``: the step path (docs/spec/PLAN_IR.md §7, ``E3/do.2``), None for the run as a
      whole;
    - ``source``: the `.flow` position of the failed step (``file:line:col``), when compiled from one;
    - ``details``: structured extras of some codes (``bad_path``: ``path``, ``missing``).

    :meth:`to_dict` is its JSON form (``flowc run --json``, events), ``{code, message, step_path,
    source?}``; ``details`` stay in Python.
    """

    code: str
    message: str
    step_path: str | None = None
    source: str | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    #: the failed step in the user's terms — ``stage``, ``item``, ``agent``, ``label`` (those
    #: known; agentflow/runtime/where.py) — part of :meth:`to_dict`
    where: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if type(self.code) is not str:  # a Code member: results and records keep the string
            object.__setattr__(self, "code", str(self.code))

    @property
    def retryable(self) -> bool:
        """Whether ``retry.on`` may name this code (timeout, rate_limit, transient)."""
        entry = ERROR_CODES.get(self.code)
        return entry is not None and entry.retryable

    def to_dict(self) -> dict[str, Any]:
        """``{code, message, step_path}``, plus ``source`` when known (the JSON shape of
        ``flowc run --json`` and of the events' ``error`` fields)."""
        data: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "step_path": self.step_path,
        }
        if self.source:
            data["source"] = self.source
        data.update(self.where)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> ErrorInfo | None:
        """The record :meth:`to_dict` wrote (a durable run's stored outcome), or None for None;
        the place names (``stage``, ``item``, ``agent``, ``label``) come back in ``where``."""
        if data is None or isinstance(data, ErrorInfo):
            return data
        if not isinstance(data, dict):
            return cls(Code.FAILED, str(data))
        rest = {
            k: v for k, v in data.items() if k not in ("code", "message", "step_path", "source")
        }
        return cls(
            str(data.get("code") or Code.FAILED),
            str(data.get("message") or ""),
            data.get("step_path"),
            data.get("source"),
            where=rest,
        )

    def __getitem__(self, key: str) -> Any:
        """``error["code"]``: a field of :meth:`to_dict` (``KeyError`` for any other key), for
        code written when results held the error as a dict."""
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``error.get("code")``: a field of :meth:`to_dict`, or ``default`` (as a dict's)."""
        return self.to_dict().get(key, default)

    def __contains__(self, key: object) -> bool:
        """``"label" in error``: whether :meth:`to_dict` has that field (as a dict's ``in``)."""
        return key in self.to_dict()


class RunError(FlowError):
    """A step failed with a run-time error code (docs/spec/PLAN_IR.md §8): ``code``, ``message``,
    ``step_path``, ``source``, ``details``.

    ``code`` must be registered in :data:`agentflow.core.vocabulary.ERROR_CODES` (ValueError
    otherwise, as for an unregistered diagnostic code): retrying is decided by code, so a code
    nothing knows would silently never be retried.  :class:`ExitError` carries the user's own.
    """

    #: whether any code is accepted (an ``exit`` step's ``code`` is the user's)
    user_code = False
    #: whether the message quotes expressions of the step as compiled (a control step's
    #: computed bound or limit), which runtime/where.py says in the `.flow`'s terms
    quotes_source = False

    def __init__(
        self,
        code: str,
        message: str,
        step_path: str | None = None,
        source: str | None = None,
        details: dict[str, Any] | None = None,
    ):
        if not self.user_code and code not in ERROR_CODES:
            raise ValueError(
                f"unregistered run-time error code {code!r} (register it in "
                "agentflow.core.vocabulary.ERROR_CODES)"
            )
        super().__init__(message)
        self.code = str(code)  # a Code member is kept as its plain string (pickled records)
        self.message = message
        self.step_path = step_path
        self.source = source
        self.details = details or {}
        #: the failed step in the user's terms: ``stage``, ``item``, ``agent``, ``label``
        #: (those known; set by the executor, agentflow/runtime/where.py)
        self.where: dict[str, Any] = {}

    @property
    def retryable(self) -> bool:
        """Whether ``retry.on`` may name this error's code."""
        entry = ERROR_CODES.get(self.code)
        return entry is not None and entry.retryable

    def info(self) -> ErrorInfo:
        """This error as the record a result keeps."""
        return ErrorInfo(
            self.code,
            self.message,
            self.step_path,
            self.source,
            dict(self.details),
            dict(self.where),
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled whole (class and every field): a durable engine stores a step's error and
        # raises it again on replay (runtime/durable); subclasses with other constructors
        # (BadPath, ExprError, ExitError) come back as themselves, not through __init__
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def to_dict(self) -> dict[str, Any]:
        """``{code, message, step_path, source?}`` (:meth:`ErrorInfo.to_dict`)."""
        return self.info().to_dict()


class ClientError(RunError):
    """A generated client module (`flowc gen python`) that does not fit its flow: stale (code
    ``validation``, raised before running), or a finished run's output its output model refuses
    (code ``output_validation``; ``result`` holds the run's untyped result, nothing is lost)."""

    #: the run's result as :func:`agentflow.run` gave it (None when nothing ran)
    result: Any = None


class ExitError(RunError):
    """An ``exit`` with status error: ends the whole run, never skipped or substituted.  Its
    ``code`` is the step's own (any error-code name; ``failed`` by default)."""

    user_code = True


class BadPath(RunError):
    """A path that is missing at run time (docs/spec/PLAN_IR.md §3, code ``bad_path``).

    ``path`` is the path as written (``E0.issues[3].id``), ``missing`` the part that was missing
    (``[3]``, ``id``, or the root name).
    """

    def __init__(self, path: str, missing: str, detail: str | None = None):
        message = f"path `{path}`: `{missing}` is missing"
        if detail:
            message += f" ({detail})"
        super().__init__("bad_path", message, details={"path": path, "missing": missing})
        self.path = path
        self.missing = missing


class ExprError(RunError):
    """An expression applied to values of the wrong kind at run time (e.g. ``1 + "a"``).

    The checker rejects these in `.flow` programs; hand-written plans can still reach them.
    Code ``validation``.
    """

    def __init__(self, message: str):
        super().__init__("validation", message)


class RunAborted(FlowError):
    """A hook aborted the run (a hard stop); ``error`` is the failing tool's error, if any."""

    def __init__(self, message: str, step_path: str | None, error: ErrorInfo | None = None):
        super().__init__(message)
        self.message = message
        self.step_path = step_path
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        # round-trips a durable engine's serializer (runtime/durable)
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(
    cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]
) -> BaseException:
    """An exception of class ``cls`` with ``args`` and attributes ``state``, made without
    calling its ``__init__`` (unpickling a :class:`RunError` or :class:`RunAborted`)."""
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class Stopped(RunAborted):
    """The run was asked to stop by a signal (its stop request: ``runtime/interrupt.py``)."""


class Cancelled(RunAborted):
    """The durable run was cancelled (``flowc cancel RUN``, the engine's cancellation of its
    units): it ends with status ``cancelled`` (error code ``aborted``, the code of every stop;
    docs/durable.md "Starting, resuming, inspecting")."""

    def __init__(
        self,
        message: str = "the run was cancelled (flowc cancel)",
        step_path: str | None = None,
        error: ErrorInfo | None = None,
    ):
        super().__init__(message, step_path, error)


class ModelErrorKind(StrEnum):
    """The kinds of a :class:`ModelError` as typed members (as :class:`~agentflow.core.vocabulary.Code`
    is for run-time codes): every raise and comparison names one; a member is its string."""

    RATE_LIMIT = "rate_limit"
    TRANSIENT = "transient"
    CONTENT_FILTER = "content_filter"
    PERMANENT = "permanent"


class ModelError(FlowError):
    """A model provider call failed; ``kind`` (a :class:`ModelErrorKind`, kept as its string) is
    rate_limit, transient, content_filter (a provider's content filter refused the prompt or the
    answer) or permanent; ``status`` is the HTTP status (or the status an error body stood for)
    when there was one."""

    def __init__(
        self,
        message: str,
        kind: str = ModelErrorKind.PERMANENT,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.kind = str(kind)
        self.retry_after = retry_after
        self.status = status


#: The plan error code (docs/spec/PLAN_IR.md §8) a ModelError of each kind ends a step with:
#: ``rate_limit`` and ``transient`` (retryable), ``content_filter``, and ``model_error`` for every
#: other permanent failure (a bad request, a bad key, an unknown model: not a tool's fault).
MODEL_ERROR_CODES: dict[str, str] = {
    ModelErrorKind.RATE_LIMIT: Code.RATE_LIMIT,
    ModelErrorKind.TRANSIENT: Code.TRANSIENT,
    ModelErrorKind.CONTENT_FILTER: Code.CONTENT_FILTER,
}


def model_error_code(exc: ModelError) -> str:
    """The plan error code of a model failure (see :data:`MODEL_ERROR_CODES`)."""
    return MODEL_ERROR_CODES.get(exc.kind, Code.MODEL_ERROR)


def run_error_of(exc: BaseException, tool_name: str) -> RunError:
    """The run-time error a tool or model call that raised ``exc`` fails with — the one
    classification the retry policy decides by and ``flowc runs show`` shows a recorded
    attempt with (docs/reference/tools.md "Timeout and retry"): a :class:`RunError` as it
    is, a :class:`ModelError` by its kind, ``TimeoutError`` → ``timeout``,
    ``ConnectionError`` (a subclass too) → ``transient``, any other exception → ``tool_error``
    (``"{tool_name}: {type}: {message}"``)."""
    if isinstance(exc, RunError):
        return exc
    if isinstance(exc, ModelError):
        return RunError(model_error_code(exc), f"{tool_name}: {exc}")
    if isinstance(exc, TimeoutError):
        return RunError(Code.TIMEOUT, f"{tool_name}: timed out")
    if isinstance(exc, ConnectionError):
        return RunError(Code.TRANSIENT, f"{tool_name}: {type(exc).__name__}: {exc}")
    return RunError(Code.TOOL_ERROR, f"{tool_name}: {type(exc).__name__}: {exc}")


class Interrupted(KeyboardInterrupt):
    """A run agentflow owned (``run_sync``, ``flowc run``) was stopped by SIGINT or SIGTERM.

    ``signal``: ``"SIGINT"`` or ``"SIGTERM"``; ``exit_code``: 128 + the signal number (the shell
    convention); ``result``: the partial :class:`~agentflow.runtime.result.RunResult` (status
    ``aborted``, the steps finished so far) when the run could wind down, else None.  A
    ``KeyboardInterrupt`` (not a FlowError), so a script that does not catch it stops as on any
    Ctrl-C and ``except Exception`` does not swallow it.
    """

    def __init__(self, signal: str, exit_code: int, result: object = None):
        super().__init__(f"interrupted by {signal}")
        self.signal = signal
        self.exit_code = exit_code
        self.result = result
