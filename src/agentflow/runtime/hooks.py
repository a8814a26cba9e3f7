"""The host-hook API (docs/spec/RUNTIME.md §7): the execution gate, ``on_tool_error`` and the
interlocutor.

A host installs hooks on a :class:`Hooks` and passes it to a run (``agentflow.run(…, hooks=…)``,
:class:`~agentflow.runtime.context.RunContext`).  Each hook may be sync or async:

- ``gate(GateCall) -> Decision | None`` before every real tool dispatch: :func:`proceed` (or
  None), :func:`skip` (``value`` is used as the call's result) or :func:`abort` (a hard stop);
- ``on_tool_error(ToolFailure) -> Decision | None`` when a dispatched call failed after its
  step's retries: :func:`propagate` (or None), :func:`substitute` or :func:`abort`;
- ``interlocutor(AskRequest) -> answer | NO_ANSWER`` for ``ask`` steps (:func:`terminal_interlocutor`
  asks on the terminal).

:class:`RunAborted` is how a hook's ``abort`` travels up to the run (status ``aborted``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentflow.core.redaction import redact_data
from agentflow.core.schema_types import flow_type_of_schema
from agentflow.core.text import choices_text, clean_json, value_text, visible
from agentflow.core.vocabulary import Code
from agentflow.errors import InputError, RunAborted, RunError
from agentflow.ir.mismatch import mismatches, type_names
from agentflow.runtime.extract import (
    DuplicateKey,
    NonJsonNumber,
    json_number_problem,
    json_value_problem,
    loads_value,
)
from agentflow.runtime.tools.catalog import run_in_daemon_thread

__all__ = [
    "NO_ANSWER",
    "AskRequest",
    "Decision",
    "GateCall",
    "Hooks",
    "RunAborted",
    "SleepRequest",
    "ToolFailure",
    "abort",
    "check_answer",
    "default_interlocutor",
    "secret_in_answer",
    "maybe_await",
    "proceed",
    "propagate",
    "skip",
    "substitute",
    "terminal_interlocutor",
    "unanswered_message",
]


@dataclass
class GateCall:
    """What the execution gate sees before a real tool dispatch.

    ``input``: the fully rendered input. ``scope``: the template scope it rendered against (the
    results map at top level; the layered body scope with item/index/accumulator inside bodies).
    """

    tool_name: str
    input: Any
    scope: Mapping[str, Any]
    step_path: str
    stack: list[str]


@dataclass
class ToolFailure:
    """What ``on_tool_error`` sees when a dispatched call failed (``error`` is the RunError)."""

    tool_name: str
    input: Any
    error: RunError
    step_path: str
    stack: list[str]


DecisionAction = Literal["proceed", "skip", "abort", "propagate", "substitute"]


@dataclass
class Decision:
    """A hook's answer. ``action``: ``proceed`` | ``skip`` (gate; ``value`` = injected result) |
    ``abort`` (``message``) | ``propagate`` | ``substitute`` (on_tool_error; ``value``)."""

    action: DecisionAction
    value: Any = None
    message: str = ""


def proceed() -> Decision:
    """Gate: run the call."""
    return Decision("proceed")


def skip(result: Any = None) -> Decision:
    """Gate: do not run the call; ``result`` is used as its result."""
    return Decision("skip", result)


def abort(message: str = "aborted by hook") -> Decision:
    """Gate / on_tool_error: hard-stop the run (status ``aborted``)."""
    return Decision("abort", message=message)


def propagate() -> Decision:
    """on_tool_error: let the error propagate (the default)."""
    return Decision("propagate")


def substitute(value: Any) -> Decision:
    """on_tool_error: continue the run with ``value`` as the call's result."""
    return Decision("substitute", value)


@dataclass
class AskRequest:
    """A question of an ``ask`` step for the interlocutor (``choices``/``schema`` may be None;
    ``timeout``: the step's ``timeout`` in seconds, how long a durable run waits for the answer;
    ``default``: the value an unanswered question takes (``when_unanswered.default``), else
    :data:`NO_ANSWER`; ``label``: the step in the `.flow`'s terms, ``confirm › ask``, when
    known)."""

    question: str
    schema: dict[str, Any] | None
    choices: list[Any] | None
    step_path: str
    stack: list[str]
    timeout: float | None = None
    default: Any = field(default_factory=lambda: NO_ANSWER)
    label: str | None = None


@dataclass
class SleepRequest:
    """A ``sleep`` step's wait for the host's ``sleeper`` hook: ``seconds`` to wait, ``wakes_at``
    (epoch seconds, the wall clock), the step's path, plan stack and label (``poll › sleep``)."""

    seconds: float
    wakes_at: float
    step_path: str
    stack: list[str]
    label: str | None = None


class _NoAnswer:
    def __repr__(self) -> str:
        return "NO_ANSWER"


#: Returned by an interlocutor that could not get an answer (then ``when_unanswered`` decides).
NO_ANSWER: Any = _NoAnswer()

#: What a gate or ``on_tool_error`` hook returns: a decision (None: the default), maybe awaitable.
HookResult = Decision | None | Awaitable[Decision | None]
Gate = Callable[[GateCall], HookResult]
OnToolError = Callable[[ToolFailure], HookResult]
Interlocutor = Callable[[AskRequest], Any]
Sleeper = Callable[[SleepRequest], Any]


@dataclass
class Hooks:
    """Host hooks (docs/spec/RUNTIME.md §7); each may be sync or async.

    - ``gate(GateCall) -> Decision | None`` before every real tool dispatch (None = proceed).
    - ``on_tool_error(ToolFailure) -> Decision | None`` when a dispatched call failed
      (None = propagate).
    - ``interlocutor(AskRequest) -> answer | NO_ANSWER`` for ``ask`` steps; questions are
      serialized by a lock, even under concurrent map items.
    - ``sleeper(SleepRequest) -> None`` stands in for the wait of a ``sleep`` step of a plain
      run (``flowc test`` waits no real time: virtual time); a durable run's timer is its
      engine's and never calls it (docs/reference/statements.md "sleep").
    """

    gate: Gate | None = None
    on_tool_error: OnToolError | None = None
    interlocutor: Interlocutor | None = None
    sleeper: Sleeper | None = None

    def install_gate(self, fn: Gate) -> Gate:
        """Install the execution gate; returns ``fn`` (usable as a decorator)::

        hooks = Hooks()

        @hooks.install_gate
        def gate(call: GateCall):
            return skip({"stub": True}) if call.tool_name == "linear__delete" else None
        """
        self.gate = fn
        return fn

    def install_on_tool_error(self, fn: OnToolError) -> OnToolError:
        """Install ``on_tool_error`` (return :func:`propagate`, :func:`substitute` or
        :func:`abort`); returns ``fn``."""
        self.on_tool_error = fn
        return fn

    def install_interlocutor(self, fn: Interlocutor) -> Interlocutor:
        """Install the interlocutor of ``ask`` steps (return the answer or :data:`NO_ANSWER`);
        returns ``fn``.  :func:`terminal_interlocutor` is the stderr/stdin one."""
        self.interlocutor = fn
        return fn


async def maybe_await(value: Any) -> Any:
    """``value``, awaited first when it is awaitable (a hook may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


#: the spellings of a ``bool`` answer (case-insensitive), at the terminal and in ``flowc answer``
BOOL_SPELLINGS = {"true": True, "yes": True, "y": True, "false": False, "no": False, "n": False}


def wants_bool(schema: Any) -> bool:
    """True when an ask's ``schema`` is ``bool`` (``{"type": "boolean"}``, maybe nullable)."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "boolean" or (isinstance(kind, list) and "boolean" in kind):
        return True
    options = schema.get("anyOf")
    return isinstance(options, list) and any(wants_bool(o) for o in options)


def spelled_bool(value: Any, schema: Any) -> Any:
    """``value`` as a bool when ``schema`` wants one and it is one of :data:`BOOL_SPELLINGS`
    (``yes``, ``Y``, ``false`` …); else ``value`` unchanged (docs/reference/control.md "ask")."""
    if isinstance(value, str) and wants_bool(schema):
        spelled = BOOL_SPELLINGS.get(value.strip().lower())
        if spelled is not None:
            return spelled
    return value


def _parse_answer(text: str, request: AskRequest) -> Any:
    """A typed line → the answer: a choice by text or else number (as :func:`checked_answer`
    takes one), a bool by any of
    :data:`BOOL_SPELLINGS`, JSON when the schema wants a non-string, else the text."""
    text = text.strip()
    choices = request.choices or []
    if choices and text in [str(c) for c in choices]:  # a choice's text before its number
        return next(c for c in choices if str(c) == text)
    if choices and text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1]
    spelled = spelled_bool(text, request.schema)
    if spelled is not text:
        return spelled
    wants_text = not request.schema or request.schema.get("type") == "string"
    if not wants_text or (choices and not all(isinstance(c, str) for c in choices)):
        try:  # too deep, NaN or too large a number is ValueError too: kept as text
            return loads_value(text)
        except DuplicateKey:
            raise  # a key given twice: the person is told (which value was meant is unknown)
        except ValueError:
            return text
    return text


#: JSON Schema types in the `.flow`'s words (docs/reference/types.md)
_TYPE_WORDS = {
    "string": "text",
    "integer": "int",
    "number": "number",
    "boolean": "bool",
    "null": "null",
    "array": "a list (JSON)",
    "object": "an object (JSON)",
}


def _shown(value: Any) -> str:
    """An answer as the person would type it: ``yes``/``no`` for bools, text bare, else JSON."""

    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def expected(request: AskRequest) -> str:
    """What the terminal says the question wants: ``bool: yes or no``, ``int``, ``a number or
    one of the choices``, and ``(default: no)`` when unanswered gives a default."""
    schema = request.schema if isinstance(request.schema, dict) else {}
    if request.choices:
        what = "the number or the text of a choice"
    elif wants_bool(schema):
        what = "bool: yes or no"
    else:
        kind = schema.get("type")
        fmt = schema.get("x-flow-type")
        what = str(fmt) if isinstance(fmt, str) else _TYPE_WORDS.get(str(kind), "JSON")
        if not schema:
            what = "text"
    default = request.default
    if default is not NO_ANSWER:
        what += f" (default: {_shown(default)})"
    return what


def terminal_interlocutor(
    stdin: Any = None, stderr: Any = None, *, pause: Callable[[], Any] | None = None
) -> Callable[[AskRequest], Awaitable[Any]]:
    """The terminal interlocutor (docs/spec/RUNTIME.md §7, docs/reference/control.md "ask"):
    writes the question, its numbered choices and what it expects (type, default) to ``stderr``
    and reads one line from ``stdin`` (defaults: the process's).  ``yes``/``no``/``y``/``n``/
    ``true``/``false`` (any case) answer a ``bool``.  A line that does not fit the question's
    type or choices is refused with the reason and asked again.  An empty line or end of input
    gives :data:`NO_ANSWER`, so the ask's ``when_unanswered`` decides (its default, if any).
    ``pause``: a context-manager factory that hides a live view while asking
    (``ConsoleSink.paused``).

    The executor serializes questions, so concurrent map items never interleave prompts.
    """

    async def ask(request: AskRequest) -> Any:
        inp = stdin if stdin is not None else sys.stdin
        out = stderr if stderr is not None else sys.stderr
        ctx = pause() if pause is not None else contextlib.nullcontext()
        with ctx:
            where = request.label or request.step_path
            lines = [f"? [{where}] {request.question}"]
            for i, choice in enumerate(request.choices or [], 1):
                lines.append(f"  {i}) {_shown(choice)}")
            lines.append(f"  answer: {expected(request)}; an empty line leaves it unanswered")
            # the question may hold a tool's or a model's text: no terminal escape goes raw
            out.write(visible("\n".join(lines), lines=True) + "\n> ")
            out.flush()
            while True:
                line = await run_in_daemon_thread(inp.readline)
                if not line or not line.strip():
                    return NO_ANSWER
                line = clean_json(line)  # bytes that were not UTF-8: U+FFFD, as `--answer`'s
                try:
                    answer = _parse_answer(line, request)
                except DuplicateKey as e:
                    out.write(f"  not accepted: {visible(str(e))}; try again\n> ")
                    out.flush()
                    continue
                problem = secret_in_answer(answer) or check_answer(
                    answer, request.schema, request.choices
                )
                if not problem:
                    return answer
                out.write(f"  not accepted: {visible(problem)}; try again\n> ")
                out.flush()

    return ask


def default_interlocutor(**kwargs: Any) -> Callable[[AskRequest], Awaitable[Any]] | None:
    """:func:`terminal_interlocutor` when stdin is a TTY, else None (CI: ``when_unanswered``
    decides)."""

    stdin = kwargs.get("stdin") or sys.stdin
    isatty = getattr(stdin, "isatty", None)
    return terminal_interlocutor(**kwargs) if callable(isatty) and isatty() else None


#: why an answer that holds a configured secret is refused (docs/reference/control.md "ask")
SECRET_ANSWER = (
    "it holds the value of a configured secret (an API key, a `${VAR}` value of flow.toml, a "
    "credential of the environment), which is never stored or shown, so it cannot be an "
    "answer: give the flow a secret through the environment or flow.toml"
)


def secret_in_answer(answer: Any) -> str | None:
    """:data:`SECRET_ANSWER` when ``answer`` (JSON data) holds what the redaction layer removes
    from every output and record — a run of ≥ 8 characters of a configured secret, a short one
    standing whole (:mod:`agentflow.core.redaction`) — else None.  A person's answer is not
    an operation a resumed run can make again, and a secret is never at rest, so such an
    answer is refused where it is given (docs/decisions.md "A secret in an answer")."""
    try:
        return SECRET_ANSWER if redact_data(answer) != answer else None
    except (TypeError, ValueError, RecursionError):  # not JSON data: nothing to redact
        return None


def check_answer(answer: Any, schema: Any, choices: Any) -> str | None:
    """Why ``answer`` breaks an ask's ``choices``/``schema`` (docs/spec/PLAN_IR.md §3), or None.
    An answer holding a number JSON cannot (NaN, Infinity) or an int past 64 bits is refused
    as ``--input`` refuses it (:func:`~agentflow.runtime.extract.json_number_problem`)."""
    number = json_number_problem(answer, "answer")
    if number is not None:
        return number
    if choices is not None and not isinstance(choices, list | tuple):
        from agentflow.runtime.expressions import _kind  # lazy: the parser comes with it

        return f"`choices` must be a list, got {_kind(choices)}"
    if choices and answer not in choices:
        return f"{value_text(answer)} is not one of {choices_text(choices)}"
    if schema is not None and not isinstance(schema, dict):
        from agentflow.runtime.expressions import _kind

        return f"`schema` must be a JSON Schema object, got {_kind(schema)}"
    if schema:
        import jsonschema  # lazy: a plain run never loads jsonschema

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
            # in the `.flow`'s types (`bool`, `int`, `Ticket`), as a wrong `--input` is said;
            # never fetches a reference
            problems = mismatches(
                schema, answer, root="answer", what="the ask's type",
                names=type_names(schema, _titled(schema)),
            )  # fmt: skip
        except jsonschema.SchemaError as e:
            return f"`schema` is not valid JSON Schema: {e.message}"
        except ValueError as e:
            return f"`schema`: {e}"
        return problems[0].line() if problems else None
    return None


def _titled(schema: dict[str, Any]) -> str | None:
    """The name a compiled ask's schema gives its type (``title``: ``Plan``), or None."""
    title = schema.get("title")
    return title if isinstance(title, str) and title.isidentifier() else None


def checked_answer(question: Any, value: Any) -> Any:
    """``value`` as an answer to ``question``: a JSON text parsed unless the question wants
    text, a choice also as a JSON string (``"hold"`` with its quotes), ``yes``/``no``
    spellings for a ``bool``, checked against its choices and schema.
    Raises InputError for a value it does not accept (engine-neutral)."""

    if isinstance(value, str) and not _wants_text(question):
        try:
            value = loads_value(value)
        except (NonJsonNumber, DuplicateKey) as e:  # refused as `--input` refuses it
            raise InputError(f"answer to `{question.question}`: {e}") from None
        except json.JSONDecodeError:  # not JSON: checked as text
            pass
        except ValueError as e:  # JSON nested too deeply: refused as `--input` refuses it
            raise InputError(f"answer to `{question.question}`: {e}") from None
    if question.choices and value not in question.choices:
        # `'"hold"'` (a shell's JSON string): the choice it spells, as VALUE is JSON; `2`: the
        # second choice, as the terminal numbers them; a value that is itself a choice is that
        # choice (docs/decisions.md "A choice as JSON or by its number")
        value = _quoted_choice(value, question.choices) or _numbered_choice(value, question.choices)
    value = spelled_bool(value, question.schema)  # yes/no/y/n/true/false, as at the terminal
    # not a JSON value (bytes, a set, NaN, …): said in JSON's terms, and before the secret
    # check, whose comparison a NaN (never equal to itself) would otherwise fool
    kind = json_value_problem(value, "answer")
    if kind is not None:
        raise InputError(f"answer to `{question.question}`: {kind}")
    secret = secret_in_answer(value)
    if secret:  # said without the value: it would show the secret (docs/reference/cli.md)
        raise InputError(f"answer to `{question.question}` refused: {secret}")
    problem = check_answer(value, question.schema, question.choices)
    if problem:
        if isinstance(value, str) and wants_bool(question.schema):
            problem += "; a yes/no question takes yes, no, true or false (or y, n)"
        elif _choice_number(value) is not None and isinstance(question.choices, list | tuple):
            # `--answer ok=3` of two choices: a number picks a choice, counted from 1
            problem += f"; the choices are numbered 1–{len(question.choices)}"
        raise InputError(f"answer to `{question.question}`: {problem}")
    return value


def _numbered_choice(value: Any, choices: Any) -> Any:
    """The choice ``value`` numbers (``2`` or ``"2"``: the second, as the terminal lists them
    from 1), else ``value`` as it is."""
    number = _choice_number(value)
    if not isinstance(choices, list | tuple) or number is None:
        return value
    return choices[number - 1] if 1 <= number <= len(choices) else value


def _choice_number(value: Any) -> int | None:
    """The whole number ``value`` is (``2`` or ``"2"``), which may number a choice, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) else None


def _quoted_choice(value: Any, choices: Any) -> str | None:
    """The choice ``value`` spells as a JSON string (``"ship"`` with its quotes, as a shell
    passes ``'"ship"'``), or None."""
    if not isinstance(value, str) or not isinstance(choices, list | tuple):
        return None
    try:
        inner = json.loads(value)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return None
    return inner if isinstance(inner, str) and inner in choices else None


def _wants_text(q: Any) -> bool:
    if q.choices and all(isinstance(c, str) for c in q.choices):
        return True
    return not q.schema or q.schema.get("type") == "string"


#: the label segments of an ask the run asks again: a ``map``/``reduce`` item, a ``loop`` round
_REPEATED = re.compile(r"^(item|round) \d+$")


def indexed_name(label: str) -> str | None:
    """The name of an ask a map's items or a loop's rounds ask again, in the `.flow`'s terms:
    its ``let`` (or the `parallel` branch it is: :func:`branch_name`) with the number of each
    ``item N`` / ``round N`` segment of its ``label``, in order (``ok[1]`` of ``s › item 1 ›
    ok = ask``, ``ok[0][2]`` of ``s › item 0 › round 2 › ok = ask``, ``a[1]`` of ``s › item 1
    › parallel › a › ask``); None for an ask asked once or bound to no ``let`` nor branch
    (docs/reference/cli.md "flowc answer")."""
    parts = label.split(" › ")
    name, eq, _ = parts[-1].partition(" = ")
    if not eq:
        name = branch_name(label) or ""
    numbers = [p.split(" ")[1] for p in parts[:-1] if _REPEATED.match(p)]
    if not name or not numbers:
        return None
    return name + "".join(f"[{n}]" for n in numbers)


def branch_name(label: str) -> str | None:
    """``a`` for an ask that is branch ``a`` of a `parallel` block (``s › parallel › a ›
    ask``): the branch's name names its question as a ``let``'s does (``--answer a=5``,
    ``flowc answer RUN a 5``; in a map's items or a loop's rounds ``a[1]`` too:
    :func:`indexed_name`); else None."""
    parts = label.split(" › ")
    if len(parts) < 4 or parts[-1] != "ask" or parts[-3] != "parallel":
        return None
    return parts[-2]


def given_answer(answers: Mapping[str, Any], request: AskRequest) -> tuple[str, Any] | None:
    """The answer ``answers`` (``flowc run --answer NAME=VALUE``; ``run(answers=…)``) gives the
    question ``request``, as ``(NAME, VALUE)``, or None: NAME is its step path, else the ``let``
    its answer is bound to (``ok`` of ``approve › ok = ask``) or the `parallel` branch it is
    (:func:`branch_name`), else its stage's name — the names ``flowc answer`` takes
    (docs/reference/cli.md "flowc run --answer")."""
    names = [request.step_path]
    if request.label:
        parts = request.label.split(" › ")
        let, eq, _ = parts[-1].partition(" = ")
        indexed = indexed_name(request.label)
        # asked again by a map's items or a loop's rounds: `ok[1]`, or its label (`s › item 1 ›
        # ok`), before the `let` that answers every item
        names += [indexed] if indexed else []
        names += [request.label, request.label.removesuffix(" = ask")]
        names += [let] if eq else []
        branch = branch_name(request.label)
        names += [branch] if branch else []
        names.append(parts[0])
    for name in names:
        if name in answers:
            return name, answers[name]
    return None


def answering(
    answers: Mapping[str, Any], fallback: Interlocutor | None, used: set[str] | None = None
) -> Callable[[AskRequest], Awaitable[Any]]:
    """An interlocutor answering each ``ask`` that ``answers`` names (:func:`given_answer`)
    with its value (lone surrogates made U+FFFD) — a text parsed as ``flowc answer`` parses
    it, checked against the question's type and choices with its messages
    (:func:`checked_answer`; a value it refuses fails the step with ``output_validation``) —
    and putting any other to ``fallback`` (None:
    unanswered, ``when_unanswered`` decides). ``used``: each NAME that answered a question is
    added to it (the run reports the others: ``RunResult.unused_answers``)."""

    async def ask(request: AskRequest) -> Any:
        found = given_answer(answers, request)
        if found is None:
            return NO_ANSWER if fallback is None else await maybe_await(fallback(request))
        name, value = found
        if used is not None:
            used.add(name)
        # bytes of a command line that were not UTF-8 (Python's surrogate escapes) are U+FFFD,
        # as in `--input` and `flowc answer`: never a lone surrogate no file or wire can take
        value = clean_json(value)
        try:
            return checked_answer(request, value)
        except InputError as e:
            message = f"{e} (the answer given for {name})"
            raise RunError(Code.OUTPUT_VALIDATION, message, request.step_path) from None

    return ask


#: How much of a question an unanswered ``ask``'s failure shows (its first line, at most this).
QUESTION_SHOWN = 60

#: An example ``default`` of an ``ask`` expecting each JSON Schema type.
_DEFAULTS = {"boolean": "false", "integer": "0", "number": "0", "string": '""'}


def unanswered_message(
    request: AskRequest, *, durable: bool, expect: str | None = None, client: str | None = None
) -> str:
    """The failure of ``ask`` ``request`` that nobody answered and that has neither ``default``
    nor ``else fail`` (lowered with ``when_unanswered: {fail: "question not answered"}``): the
    question (its first line, shortened) and the ways to answer it — ``--answer NAME=VALUE``
    (``answers=`` from Python), a ``--durable`` run answered with ``flowc answer``, or a
    ``default`` on the ask; a durable run's (its wait ended: its timeout) ``flowc answer``
    sooner or a ``default`` (docs/reference/control.md "Unanswered").  ``expect``: the ask's
    ``expect`` type as the `.flow` writes it (its step's ``meta.expect``: ``Choice``), else
    the type its schema spells out.  ``client``: the run is an MCP tool call (``flowc serve
    --mcp``) whose client was asked by elicitation (``"declined"``: it declined or cancelled)
    or cannot be (``"no-elicitation"``: it does not support elicitation) — the ways are then
    the client's, not the command line's."""
    first = " ".join(request.question.strip().splitlines()[:1]).strip() if request.question else ""
    shown = first if len(first) <= QUESTION_SHOWN else first[: QUESTION_SHOWN - 1].rstrip()
    if shown != request.question.strip():
        shown += "…"
    name = _answer_key(request)
    schema = request.schema if isinstance(request.schema, dict) else {}
    if request.label:  # a `.flow`'s ask: its `default` clause
        written = expect or (flow_type_of_schema(schema) if schema else "")
        expect = f" expect {written}" if written else ""
        example = _DEFAULTS.get(str(schema.get("type")), "VALUE")
        default = f'give the ask a default (`ask "…"{expect} default {example}`)'
    else:  # a plan's ask step
        default = "give the step `when_unanswered: {default: VALUE}`"
    if client == "no-elicitation":
        ways = (
            "the MCP client cannot be asked: a served flow's questions are elicitation "
            "requests, and this client does not support elicitation (call the tool from a "
            f"client that does), or {default}"
        )
    elif client is not None:
        ways = (
            "the MCP client declined the question (its elicitation request): accept it and "
            f"answer in the client's form, or {default}"
        )
    elif durable:
        ways = f"answer it sooner with `flowc answer RUN {name} VALUE`, or {default}"
    else:
        exact = indexed_name(request.label) if request.label else None
        this_one = (  # a map's item or a loop's round: NAME answers every one of them
            f" (`--answer {exact}=VALUE` answers this one alone, `{name}=VALUE` every one)"
            if exact and exact != name
            else ""
        )
        ways = (
            f"answer it with `--answer {name}=VALUE`{this_one} (from Python: `answers={{"
            f"{json.dumps(name, ensure_ascii=False)}: VALUE}}`), run with `--durable` and "
            f"answer it with `flowc answer RUN {name} VALUE`, or {default}"
        )
    return f"question not answered: {json.dumps(shown, ensure_ascii=False)}; {ways}"


def _answer_key(request: AskRequest) -> str:
    """The NAME ``--answer`` and ``flowc answer`` take for ``request``: the ``let`` its answer
    is bound to (every item of a map, every round of a loop) or the `parallel` branch it is
    (:func:`branch_name`), else its step path."""
    if request.label:
        let, eq, _ = request.label.split(" › ")[-1].partition(" = ")
        if eq and let:
            return let
        branch = branch_name(request.label)
        if branch:
            return branch
    return request.step_path
