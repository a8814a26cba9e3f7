"""The agent loop (docs/spec/RUNTIME.md §3, §10; docs/spec/PLAN_IR.md §6; seed 000).

``run_agent(spec, router=…, call_tool=…, emit=…, step_path=…)`` runs a bounded tool-calling loop and
returns ``{output, iterations, tools_called: [{tool, round}], final}``: schema-conforming output with
``final: true``, or ``output: {}`` and ``final: false`` when the round budget ran out. It never
fabricates a result.

A round is one model call (the one producing the answer included). Tool calls of one round run in
parallel and every call id gets exactly one result (matched by id). Malformed arguments, denied tools
and ``plan_and_execute`` become error results without running anything; a tool that raises becomes
an error result and the loop goes on. A text answer is extracted (:mod:`agentflow.runtime.extract`)
and validated; an invalid one gets ``repair_attempts`` repair-role passes, then the errors go back
to the agent and cost a round. A reply cut off by the token limit is reported as truncation.

The same loop answers ``flowc ask`` (:mod:`agentflow.runtime.chat`): there the answer is plain text
(``AgentSpec.text_answer``) and ``plan_and_execute`` is offered (``AgentSpec.forbidden`` empty).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.text import clean_json, json_error
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, ModelError, RunAborted, RunError, model_error_code
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime.extract import (
    ExtractionError,
    canonical_json,
    extract_json,
    json_depth_exceeds,
    loads_bounded,
    too_deep_message,
    validate,
)
from agentflow.runtime.models.base import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec
from agentflow.runtime.models.budget import pop_budget, push_budget
from agentflow.runtime.models.router import current_step
from agentflow.runtime.result import model_call_fields

CallTool = Callable[[str, dict[str, Any], str], Awaitable[Any]]
Emit = Callable[..., Any]

#: Tool-result size cap (characters) when the spec does not set one.
DEFAULT_RESULT_CHARS = 20_000
#: Error codes raised by ``call_tool`` that stop the agent instead of going back to the model.
HARD_STOP_CODES = frozenset({Code.ABORTED, Code.DEADLINE_EXCEEDED, Code.BUDGET_EXCEEDED})
FORBIDDEN_TOOLS = frozenset({"plan_and_execute"})
#: The first words of the ``errors`` entry of an agent that stopped because the model refused.
REFUSED = "the model refused: "


@dataclass(frozen=True)
class ErrorResult:
    """What ``call_tool`` may return instead of raising for a call that failed and goes back to
    the model as an error result (``{"error": {code, message}}``, ``is_error``) — never a hard
    stop, whatever ``code`` is (``flowc ask``: a ``plan__*`` run that ran out of time is the
    tool's failure, not the question's)."""

    code: str
    message: str


#: While a round's tool calls run: ``(index, count)`` of the call among the round's calls (the
#: calls run concurrently; ``call_tool`` may read it, e.g. to run each call of a round that makes
#: several as a unit of work of its own: runtime/effects.py ``Effects.unit``).
round_call: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar(
    "agentflow_round_call", default=(0, 1)
)
#: The tool result of a call whose reply was cut off by the output token limit
#: (docs/spec/RUNTIME.md §10).
#: The most tool calls of one model reply that run: the rest get a ``tool_denied`` result
#: saying so (every call id still gets one), so a runaway reply of thousands of calls
#: (``write_file`` among them) does not run them (docs/reference/agents.md "Tool calls").
MAX_CALLS_PER_ROUND = 64

TOO_MANY_CALLS = (
    "not run: your reply made {count} tool calls and at most {limit} of one reply run; "
    "send the ones you still need in your next reply"
)

TRUNCATED_CALL = (
    "your reply was cut off by the output token limit (truncated) while you were writing this "
    "call, so its arguments may be incomplete; the call was not run. Send it again with shorter "
    "arguments, or fewer calls at once."
)

#: The built-in system prompt: none. A step's own ``system_prompt`` is the only system text; the
#: output contract travels as the request's ``response_schema`` and is sent once by the adapter
#: (native structured output, else one compact line of prompt text that says to answer with it:
#: :func:`agentflow.runtime.models.base.contract_text`). Everything before the conversation is
#: so the same in every round, step and map item, and no longer than the task needs.
BASE_SYSTEM_PROMPT = ""


@dataclass
class AgentSpec:
    """One agent invocation (docs/spec/PLAN_IR.md §6, already rendered).

    ``prompt``: the task. ``output_schema``: JSON Schema of the answer (an object). ``tools``: the
    effective tool set (request ∩ policy; ``plan_and_execute`` is never offered). ``max_iterations``:
    round budget (≥ 1). ``model``: role or named model (default ``chat``). ``system_prompt``: appended
    to the built-in one. ``input``: structured input shown as JSON. ``repair_attempts``: repair-role
    passes per invalid answer. ``max_result_chars``: tool-result size cap. ``max_tokens``: output cap
    per inference (None: the model's default). ``budget``: this step's own model budget
    (:class:`~agentflow.runtime.models.budget.Budget`), checked before each of its calls.
    ``on_partial``: called with each new typed partial answer while a streaming model writes it.
    ``text_answer``: the answer is plain text (``flowc ask``): any non-empty text ends the loop
    as ``output`` (a str); no contract is sent, extracted, validated or repaired, no partials.
    ``forbidden``: tools never offered nor run (default ``plan_and_execute``, which a
    ``.flow`` agent never gets; ``flowc ask`` offers it).
    ``response_schema``: the contract as the model is shown it, when it says more than
    ``output_schema`` (a ``member`` field listing the team's members); answers are always
    checked against ``output_schema``.
    """

    prompt: str
    output_schema: dict[str, Any]
    tools: list[ToolSpec] = field(default_factory=list)
    max_iterations: int = 8
    model: str | None = None
    system_prompt: str | None = None
    input: Any = None
    repair_attempts: int = 1
    max_result_chars: int = DEFAULT_RESULT_CHARS
    max_tokens: int | None = None
    budget: Any = None
    on_partial: Callable[[Any], Any] | None = None
    response_schema: dict[str, Any] | None = None
    text_answer: bool = False
    forbidden: frozenset[str] = FORBIDDEN_TOOLS


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def build_system_prompt(spec: AgentSpec) -> str:
    """The system text of an agent step: its ``system_prompt`` (stripped), or ``""`` (see
    :data:`BASE_SYSTEM_PROMPT`: the contract is not in it)."""
    parts = [BASE_SYSTEM_PROMPT, (spec.system_prompt or "").strip()]
    return "\n\n".join(p for p in parts if p)


def build_user_prompt(spec: AgentSpec) -> str:
    """The task message: the prompt, then the structured input as compact JSON when there is
    one."""
    text = spec.prompt
    if spec.input is not None:
        text += "\n\nInput (JSON):\n" + _dumps(spec.input)
    return text


def message_fields(message: Message) -> dict[str, Any]:
    """One request message as a ``model_call`` event tells it: ``role``, ``content`` and, when
    set, ``tool_calls`` ([{id, name, arguments}]), ``tool_call_id``, ``name``, ``is_error``."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.name:
        out["name"] = message.name
    if message.is_error:
        out["is_error"] = True
    return out


async def _emit(emit: Emit | None, kind: str, path: str, **data: Any) -> None:
    if emit is None:
        return
    result = emit(kind, path, **data)
    if inspect.isawaitable(result):
        await result


def check_answer(text: str | None, schema: dict[str, Any]) -> tuple[Any, list[str], str | None]:
    """Extract and validate an answer: ``(value, errors, trailing_prose)``; ``errors == []`` = valid
    (a valid value has its `int` fields as ints: ``3.0`` → ``3``)."""
    try:
        extracted = extract_json(text)
    except ExtractionError as exc:
        problem = f"the answer is not a JSON object: {exc}"
        if is_wrapped_contract(schema):
            problem += (
                ' (the answer is an object with the value in its field `value`: {"value": ...})'
            )
        return None, [problem], None
    value = extracted.value
    wrapped = is_wrapped_contract(schema)
    if not isinstance(value, dict):
        if wrapped:  # `expect` of a non-object type: the contract is `{ value: T }`
            shown = json.dumps(value, ensure_ascii=False)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            return (
                value,
                [
                    f"$: the answer must be a JSON object, got {type(value).__name__}: put the "
                    f'value in the field `value`, as {{"value": {shown}}}'
                ],
                None,
            )
        return value, [f"$: the answer must be a JSON object, got {type(value).__name__}"], None
    errors = validate(schema, value)
    if errors and wrapped and "value" not in value:
        errors.insert(0, '$: the answer goes in the field `value`: {"value": ...}')
    if not errors:  # `int` fields hold ints: 3.0 → 3 (docs/decisions.md, round 41)
        value = whole_numbers(schema, value)
    return value, errors, extracted.trailing


def is_wrapped_contract(schema: Any) -> bool:
    """Whether ``schema`` is the wrapped contract ``{ value: T }`` an ``expect`` of a type that
    is not an object compiles to (docs/spec/LANGUAGE.md §10): one required field ``value``,
    nothing else."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties")
    return (
        isinstance(props, dict)
        and list(props) == ["value"]
        and schema.get("required") == ["value"]
        and schema.get("additionalProperties") is False
    )


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    """Tool-call arguments as a dict. Raises ValueError quoting the parse error (nothing is run).

    Arguments nested more than :data:`~agentflow.runtime.extract.MAX_JSON_DEPTH` levels deep are
    refused the same way (never a RecursionError).
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        if json_depth_exceeds(raw):
            raise ValueError(f"arguments are {too_deep_message()}")
        return raw
    if not isinstance(raw, str):
        raise ValueError(f"arguments must be a JSON object, got {type(raw).__name__}")
    if not raw.strip():
        return {}
    excerpt = raw if len(raw) <= 200 else raw[:200] + "…"
    try:
        value = loads_bounded(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments are not valid JSON: {json_error(exc)} (line {exc.lineno} column {exc.colno}); "
            f"received: {excerpt}"
        ) from None
    except ValueError as exc:
        raise ValueError(f"arguments are {exc}; received: {excerpt}") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


async def gather_tool_results(
    calls: list[ToolCall], jobs: Sequence[asyncio.Future[tuple[str, str, bool]]]
) -> list[Message]:
    """Await one round's tool calls, started in parallel by the caller, as ``tool`` messages.

    ``jobs``: one future per call yielding ``(call_id, content, is_error)``. Returns one
    ``Message(role="tool")`` per call of ``calls``, in call order, matched by call id
    (docs/spec/RUNTIME.md §3: every call id gets exactly one result). On any exception (a hard stop,
    cancellation) every job is cancelled and awaited before the exception propagates, so no call
    outlives its round.
    """
    try:
        outcomes = await asyncio.gather(*jobs)
    except BaseException:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise
    by_id = {call_id: (content, is_error) for call_id, content, is_error in outcomes}
    return [
        Message(
            role="tool",
            content=by_id[call.id][0],
            tool_call_id=call.id,
            name=call.name,
            is_error=by_id[call.id][1],
        )
        for call in calls
    ]


def assign_ids(calls: list[ToolCall], round_: int) -> list[ToolCall]:
    """Calls with unique ids: missing ids become ``call_{round}_{index}``, duplicates get a suffix."""
    out: list[ToolCall] = []
    used: set[str] = set()
    for index, call in enumerate(calls, start=1):
        call_id = call.id or f"call_{round_}_{index}"
        if call_id in used:
            call_id = f"{call_id}_{index}"
        used.add(call_id)
        out.append(ToolCall(id=call_id, name=call.name, arguments=call.arguments))
    return out


def _truncate(text: str, cap: int) -> str:
    if cap and len(text) > cap:
        return (
            text[:cap]
            + f"\n[truncated: result has {len(text)} characters; showing the first {cap}]"
        )
    return text


def _done(outcome: tuple[str, str, bool]) -> asyncio.Future[tuple[str, str, bool]]:
    """A job of :func:`gather_tool_results` already finished with ``outcome``."""
    future: asyncio.Future[tuple[str, str, bool]] = asyncio.get_running_loop().create_future()
    future.set_result(outcome)
    return future


def _error_content(code: str, message: str) -> str:
    return _dumps({"error": {"code": code, "message": message}})


async def run_agent(
    spec: AgentSpec,
    *,
    router: Any,
    call_tool: CallTool,
    emit: Emit | None,
    step_path: str,
) -> dict[str, Any]:
    """Run the agent loop (docs/spec/RUNTIME.md §3) and return ``{output, iterations, tools_called,
    final}``.

    ``router.client_for(role)`` supplies the model clients (``spec.model`` or ``chat`` for rounds,
    ``repair`` for fix-up passes). ``call_tool(name, args, path)`` dispatches one tool call at path
    ``{step_path}/agent.{round}/{name}``; anything it raises becomes an error result for the model,
    except a RunError whose code is in HARD_STOP_CODES, a RunAborted (a hard stop: a hook's, or
    the run's stop request — ``Stopped``) and cancellation, re-raised.
    ``emit(kind, path, **data)`` records ``model_call`` and ``warning`` events.

    Raises RunError(code=rate_limit|transient|tool_error) when the model provider keeps failing
    (after the client's retries and failover), and ConfigError when no model is configured.
    """
    if spec.max_iterations < 1:
        raise RunError(
            code=Code.VALIDATION, message="max_iterations must be at least 1", step_path=step_path
        )
    role = spec.model or "chat"
    client = router.client_for(role)
    forbidden = spec.forbidden
    offered = [t for t in spec.tools if t.name not in forbidden]
    allowed = {t.name for t in offered}
    system = build_system_prompt(spec)
    messages: list[Message] = [
        *([Message(role="system", content=system)] if system else []),
        Message(role="user", content=build_user_prompt(spec)),
    ]
    tools_called: list[dict[str, Any]] = []
    seen_calls: dict[str, tuple[int, int]] = {}  # key -> (first round, count)

    partials = PartialAnswers(spec.output_schema)
    #: what the model_call events told of each conversation (the loop's, a repair pass's):
    #: ``id(list) -> (number, messages told)``; each event carries only the new messages
    told: dict[int, tuple[int, int]] = {}

    def conversation(msgs: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        """The ``model_call`` fields of the request: ``conversation`` (0: the loop's),
        ``history`` (messages told before), ``messages`` (the rest, neutral dicts) and, on a
        conversation's first call, ``tool_definitions`` ({name, description, parameters})."""
        number, sent = told.get(id(msgs), (len(told), 0))
        told[id(msgs)] = (number, len(msgs))
        out: dict[str, Any] = {
            "conversation": number,
            "history": sent,
            "messages": [message_fields(m) for m in msgs[sent:]],
        }
        if sent == 0 and tools:
            out["tool_definitions"] = [
                {"name": t.name, "description": t.description, "parameters": t.input_schema}
                for t in tools
            ]
        return out

    async def infer(
        which: Any, which_role: str, msgs: list[Message], round_: int, tools: list[ToolSpec]
    ) -> ChatResponse:
        started = time.monotonic()
        partials.reset(None)

        def on_delta(piece: str | None) -> None:
            value = partials.add(piece)
            if value is not None:
                value = clean_json(value)  # a pair split across pieces is whole only at the end
                if spec.on_partial is not None:
                    spec.on_partial(value)
                if emit is not None:
                    pending = emit("partial_output", step_path, value=value, round=round_)
                    if inspect.isawaitable(pending):
                        asyncio.ensure_future(pending)

        request = ChatRequest(
            messages=list(msgs),
            tools=tools,
            response_schema=None
            if spec.text_answer
            else spec.response_schema or spec.output_schema,
            max_tokens=spec.max_tokens,
            on_delta=None if spec.text_answer else on_delta,
        )
        token = current_step.set(step_path)
        budget_token = push_budget(spec.budget)
        try:
            response: ChatResponse = await which.chat(request)
        except ModelError as exc:
            code = model_error_code(exc)
            raise RunError(
                code=code,
                message=f"agent model call failed ({which_role}): {exc}",
                step_path=step_path,
                details={"model_error": exc.kind},
            ) from None
        finally:
            pop_budget(budget_token)
            current_step.reset(token)
        await _emit(
            emit,
            "model_call",
            step_path,
            role=which_role,
            round=round_,
            **model_call_fields(response, started),
            **conversation(msgs, tools),
        )
        return response

    async def run_call(call: ToolCall, round_: int, note: str | None) -> tuple[str, str, bool]:
        name = call.name
        if name in forbidden:
            return (
                call.id,
                _error_content(
                    Code.TOOL_ERROR,
                    "plan_and_execute is never available inside an agent; compose with plan__* tools instead",
                ),
                True,
            )
        if name not in allowed:
            available = ", ".join(sorted(allowed)) or "none"
            return (
                call.id,
                _error_content(
                    Code.TOOL_DENIED,
                    f"tool '{name}' is not available to this agent (available: {available})",
                ),
                True,
            )
        try:
            args = parse_arguments(call.arguments)
        except ValueError as exc:
            await _emit(
                emit,
                "warning",
                step_path,
                message=f"tool call '{name}' not run: {exc}",
                round=round_,
            )
            return (
                call.id,
                _error_content(
                    Code.TOOL_ERROR, f"{exc}. The call was not run; send valid JSON arguments."
                ),
                True,
            )
        path = f"{step_path}/agent.{round_}/{name}"
        try:
            result = await call_tool(name, args, path)
        except RunError as exc:
            if exc.code in HARD_STOP_CODES:
                raise
            content, is_error = _error_content(exc.code, exc.message), True
        except RunAborted:  # a hard stop (a signal's stop request, a hook) ends the agent
            raise
        except Exception as exc:  # noqa: BLE001 - any tool failure returns into the loop
            content, is_error = (
                _error_content(Code.TOOL_ERROR, f"{type(exc).__name__}: {exc}"),
                True,
            )
        else:
            if isinstance(result, ErrorResult):
                content, is_error = _error_content(result.code, result.message), True
            else:
                content = result if isinstance(result, str) else _dumps(result)
                is_error = False
        content = _truncate(content, spec.max_result_chars)
        if note:
            content += "\n" + note
        return call.id, content, is_error

    last_problem: list[str] = []
    for round_ in range(1, spec.max_iterations + 1):
        response = await infer(client, role, messages, round_, offered)
        if response.tool_calls:
            calls = assign_ids(response.tool_calls, round_)
            messages.append(
                Message(role="assistant", content=response.text, tool_calls=calls, raw=response.raw)
            )
            if response.finish_reason == "length":
                # Cut off by the token limit while writing the calls: their arguments may be
                # incomplete (even when they parse), so none is run; every id still gets a result.
                await _emit(
                    emit,
                    "warning",
                    step_path,
                    message="the model's reply was truncated by the output token limit while "
                    "writing tool calls; the calls were not run",
                    truncated=True,
                    tools=[c.name for c in calls],
                    round=round_,
                )
                for call in calls:
                    messages.append(
                        Message(
                            role="tool",
                            content=_error_content(Code.TRUNCATED, TRUNCATED_CALL),
                            tool_call_id=call.id,
                            name=call.name,
                            is_error=True,
                        )
                    )
                continue
            jobs = []
            if len(calls) > MAX_CALLS_PER_ROUND:
                await _emit(
                    emit,
                    "warning",
                    step_path,
                    message=f"the model's reply made {len(calls)} tool calls; the first "
                    f"{MAX_CALLS_PER_ROUND} ran, the rest were refused",
                    calls=len(calls),
                    round=round_,
                )
            for position, call in enumerate(calls):
                if position >= MAX_CALLS_PER_ROUND:
                    denied = TOO_MANY_CALLS.format(count=len(calls), limit=MAX_CALLS_PER_ROUND)
                    jobs.append(_done((call.id, _error_content(Code.TOOL_DENIED, denied), True)))
                    continue
                note = None
                runnable = call.name in allowed and call.name not in forbidden
                if runnable:
                    try:
                        key = call.name + "\x00" + canonical_json(parse_arguments(call.arguments))
                    except ValueError:
                        key = None
                        runnable = False
                    if key is not None:
                        first, count = seen_calls.get(key, (round_, 0))
                        count += 1
                        seen_calls[key] = (first, count)
                        if count > 1:
                            note = (
                                f"[note: this call repeats one you made in round {first} with "
                                f"identical arguments ({count} identical calls so far); repeating "
                                "it is unlikely to give new information]"
                            )
                            await _emit(
                                emit,
                                "warning",
                                step_path,
                                message=f"agent repeated an identical call to '{call.name}' "
                                f"({count} times, first in round {first})",
                                repeated=count,
                                tool=call.name,
                                round=round_,
                            )
                if runnable:
                    tools_called.append({"tool": call.name, "round": round_})
                # each job's task copies the context as it is here: its place in the round
                token = round_call.set((position, len(calls)))
                jobs.append(asyncio.ensure_future(run_call(call, round_, note)))
                round_call.reset(token)
            messages.extend(await gather_tool_results(calls, jobs))
            continue

        text = response.text or ""
        if response.refusal is not None and not response.tool_calls:
            # the model declined: asking again in the next round would burn rounds for nothing
            why = response.refusal.strip() or "no explanation given"
            await _emit(emit, "warning", step_path, message=REFUSED + why, round=round_)
            return {
                "output": {},
                "iterations": round_,
                "tools_called": tools_called,
                "final": False,
                "errors": [REFUSED + why],
            }
        if response.finish_reason == "length":
            await _emit(
                emit,
                "warning",
                step_path,
                message="the model's reply was truncated by the output token limit",
                truncated=True,
                round=round_,
            )
            last_problem = ["the last reply was cut off by the output token limit"]
            if text:
                messages.append(Message(role="assistant", content=text))
            again = "your answer" if spec.text_answer else "only the JSON object"
            messages.append(
                Message(
                    role="user",
                    content="Your previous reply was cut off by the output token limit (truncated) "
                    f"before it was complete. Reply again with {again}, more concisely.",
                )
            )
            continue
        if not text.strip():
            last_problem = ["the last reply held neither a tool call nor an answer"]
            answer = (
                "answer the question in plain text"
                if spec.text_answer
                else "reply with only the JSON object conforming to the schema"
            )
            messages.append(
                Message(
                    role="user",
                    content=f"You replied with neither a tool call nor an answer. Call a tool, or "
                    f"{answer}.",
                )
            )
            continue
        if spec.text_answer:
            return _result(text.strip(), round_, tools_called, True)

        value, errors, trailing = check_answer(text, spec.output_schema)
        if not errors:
            if trailing:
                await _note_trailing(emit, step_path, trailing, round_)
            return _result(value, round_, tools_called, True)

        # each repair pass works on the previous pass's answer and errors (a second pass sent
        # the same request as the first would only get the same reply)
        answer_text, answer_errors = text, errors
        for _ in range(max(0, spec.repair_attempts)):
            repaired, repair_text, repair_errors = await _repair(
                router,
                client,
                role,
                spec,
                answer_text,
                answer_errors,
                infer,
                round_,
                emit,
                step_path,
            )
            if repaired is not None:
                return _result(repaired, round_, tools_called, True)
            if repair_text and repair_text.strip():
                answer_text, answer_errors = repair_text, repair_errors

        last_problem = errors
        await _emit(
            emit,
            "warning",
            step_path,
            message=f"agent answer does not conform to output_schema: {first_problem(errors)}",
            errors=errors,
            round=round_,
        )
        messages.append(Message(role="assistant", content=text))
        messages.append(
            Message(
                role="user",
                content="Your answer does not conform to the required JSON Schema:\n"
                + "\n".join(f"- {e}" for e in errors)
                + "\nReply with only a corrected JSON object.",
            )
        )

    return {
        "output": {},
        "iterations": spec.max_iterations,
        "tools_called": tools_called,
        "final": False,
        # why no round ended in a valid answer (the last round's problem)
        "errors": last_problem or ["the agent was still calling tools when its rounds ran out"],
    }


def first_problem(problems: list[str]) -> str:
    """The first of a non-empty list of contract violations, with ``(and N more violations)``
    when there are others (a bare "and 2 more" after an enum's allowed values read as two more
    values)."""
    n = len(problems) - 1
    more = f" (and {n} more violation{'s' if n != 1 else ''})" if n > 0 else ""
    return f"{problems[0]}{more}"


def _result(
    output: Any, round_: int, tools_called: list[dict[str, Any]], final: bool
) -> dict[str, Any]:
    return {"output": output, "iterations": round_, "tools_called": tools_called, "final": final}


async def _note_trailing(emit: Emit | None, step_path: str, trailing: str, round_: int) -> None:
    excerpt = trailing if len(trailing) <= 200 else trailing[:200] + "…"
    await _emit(
        emit,
        "warning",
        step_path,
        message="text after the JSON answer was ignored",
        trailing=excerpt,
        round=round_,
    )


REPAIR_SYSTEM_PROMPT = """\
You fix JSON answers so that they conform to the output contract. Keep every value the answer supports; \
change only what the validation errors require; never invent information that is not in the answer. \
Reply with ONLY the corrected JSON object."""


async def _repair(
    router: Any,
    client: Any,
    role: str,
    spec: AgentSpec,
    answer: str,
    errors: list[str],
    infer: Callable[..., Awaitable[ChatResponse]],
    round_: int,
    emit: Emit | None,
    step_path: str,
) -> tuple[dict[str, Any] | None, str | None, list[str]]:
    """One repair-role pass: ``(conforming object or None, the reply's text, its errors)``."""
    try:
        repair_client = router.client_for("repair")
        repair_role = "repair"
    except ConfigError:
        repair_client, repair_role = client, role
    messages = [  # the contract travels as the request's response_schema (sent once)
        Message(role="system", content=REPAIR_SYSTEM_PROMPT),
        Message(
            role="user",
            content="Answer:\n"
            + answer
            + "\n\nValidation errors:\n"
            + "\n".join(f"- {e}" for e in errors),
        ),
    ]
    try:
        response = await infer(repair_client, repair_role, messages, round_, [])
    except RunError as exc:
        await _emit(
            emit, "warning", step_path, message=f"repair pass failed: {exc.message}", round=round_
        )
        return None, None, []
    if response.finish_reason == "length":
        await _emit(
            emit,
            "warning",
            step_path,
            message="the repair pass's reply was truncated by the output token limit",
            truncated=True,
            round=round_,
        )
        return None, None, []
    value, repair_errors, _ = check_answer(response.text, spec.output_schema)
    if repair_errors:
        return None, response.text, repair_errors
    return value, response.text, []


class PartialAnswers:
    """The typed partial values of an answer being streamed (BAML's partial types, Pydantic AI's
    ``run_stream``): text pieces are added as they arrive; :meth:`add` returns the answer parsed
    so far (``pydantic_core.from_json(allow_partial=True)``: an unfinished string, array or object
    is cut at what has arrived) when it is a JSON object that conforms to the contract with every
    field optional (:func:`partial_schema`) and differs from the last one returned, else None.
    A leading code fence is skipped; text that does not start a JSON object gives nothing."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = partial_schema(schema)
        self.text = ""
        self.last: Any = None

    def reset(self, _: Any) -> None:
        """Forget the text so far (a new round, or a retried request that starts over)."""
        self.text = ""
        self.last = None

    def add(self, piece: str | None) -> Any:
        """Add ``piece`` (None: start over) and return a new partial value or None."""
        if piece is None:
            self.reset(None)
            return None
        self.text += piece
        body = self.text.lstrip()
        if body.startswith("```"):
            newline = body.find("\n")
            if newline < 0:
                return None
            body = body[newline + 1 :].lstrip()
        if not body.startswith("{"):
            return None
        from pydantic_core import from_json

        try:
            value = from_json(body, allow_partial=True)
        except ValueError:
            return None
        if not isinstance(value, dict) or value == self.last or validate(self.schema, value):
            return None
        self.last = value
        return value


def partial_schema(schema: Any) -> Any:
    """``schema`` with nothing required: ``required``, ``minItems``, ``minLength`` and
    ``minProperties`` dropped at every level, so any prefix of a conforming answer conforms
    (``enum``/``const``/``type`` stay: a partial value is still typed)."""
    if isinstance(schema, list):
        return [partial_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: partial_schema(value)
        for key, value in schema.items()
        if key not in ("required", "minItems", "minLength", "minProperties")
    }
