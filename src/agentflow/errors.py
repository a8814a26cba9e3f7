"""The exception tree of agentflow (one root, one-line docstrings, in the manner of httpx).

Errors in a user's `.flow`, plan, configuration or input are reported through these, each
naming file, line and column where one is known; the CLI prints them without a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentflow.core.spans import Span


class FlowError(Exception):
    """Base class of every error agentflow raises on purpose."""


class SourceError(FlowError):
    """A `.flow` source or template that does not parse; carries a span."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint


class PlanLoadError(FlowError):
    """A plan file that fails to load or validate; ``errors`` lists every problem found."""

    def __init__(self, errors: list[PlanProblem]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


@dataclass
class PlanProblem:
    """One load-time problem of a plan: where (a point, or line 0 for the whole file), what, and an
    optional hint."""

    location: Span
    message: str
    hint: str | None = None
    code: str = "validation"

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ConfigError(FlowError):
    """A `flow.toml` (or environment) configuration that is missing or wrong."""


class InputError(FlowError):
    """A run input that is not valid JSON or does not match the plan's input schema."""


class RunError(FlowError):
    """A step failed with a plan error code (docs/spec/PLAN_IR.md §8): ``code``, ``message``,
    ``step_path``."""

    def __init__(
        self,
        code: str,
        message: str,
        step_path: str | None = None,
        source: str | None = None,
        details: dict | None = None,
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.step_path = step_path
        self.source = source
        self.details = details or {}

    def __reduce__(self) -> tuple:
        # pickled whole (class, code, message, path, source, details): a durable engine stores
        # a step's error and raises it again on replay (runtime/durable)
        return (
            type(self),
            (self.code, self.message, self.step_path, self.source, self.details or None),
        )

    def to_dict(self) -> dict:
        data = {"code": self.code, "message": self.message, "step_path": self.step_path}
        if self.source:
            data["source"] = self.source
        return data


class ModelError(FlowError):
    """A model provider call failed; ``kind`` is rate_limit, transient, content_filter (a
    provider's content filter refused the prompt or the answer) or permanent; ``status`` is the
    HTTP status (or the status an error body stood for) when there was one."""

    def __init__(
        self,
        message: str,
        kind: str = "permanent",
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status


#: The plan error code (docs/spec/PLAN_IR.md §8) a ModelError of each kind ends a step with:
#: ``rate_limit`` and ``transient`` (retryable), ``content_filter``, and ``model_error`` for every
#: other permanent failure (a bad request, a bad key, an unknown model: not a tool's fault).
MODEL_ERROR_CODES = {
    "rate_limit": "rate_limit",
    "transient": "transient",
    "content_filter": "content_filter",
}


def model_error_code(exc: ModelError) -> str:
    """The plan error code of a model failure (see :data:`MODEL_ERROR_CODES`)."""
    return MODEL_ERROR_CODES.get(exc.kind, "model_error")


class Interrupted(KeyboardInterrupt):
    """A run agentflow owned (``run_sync``, ``flowc run``) was stopped by SIGINT or SIGTERM.

    ``signal``: ``"SIGINT"`` or ``"SIGTERM"``; ``exit_code``: 128 + the signal number (the shell
    convention); ``result``: the partial :class:`~agentflow.runtime.result.RunResult` (status
    ``aborted``, the steps finished so far) when the run could wind down, else None.  A
    ``KeyboardInterrupt``, so a script that does not catch it stops as on any Ctrl-C.
    """

    def __init__(self, signal: str, exit_code: int, result: object = None):
        super().__init__(f"interrupted by {signal}")
        self.signal = signal
        self.exit_code = exit_code
        self.result = result
