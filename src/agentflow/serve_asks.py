"""The questions of a served run (:mod:`agentflow.serve`): each ``ask`` put to the MCP client
as an elicitation request (:class:`_Elicitor`, the run's interlocutor), its form typed from the
ask's ``expect`` type (:func:`ask_form`), an accepted answer checked against the form and
asked once more when it does not fit (:func:`elicit_answer`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agentflow.core.redaction import redact, redact_data
from agentflow.core.text import clean_json, visible
from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.executor import NO_ANSWER
from agentflow.runtime.extract import DuplicateKey, loads_value
from agentflow.runtime.hooks import check_answer

__all__ = ["FORM_ATTEMPTS", "ask_form", "elicit_answer", "form_problem"]


def ask_form(request: Any) -> dict[str, Any]:
    """The elicitation form of an ``ask`` (``AskRequest``): one field ``answer`` typed from its
    schema (string by default), its choices as an enum."""
    schema = dict(request.schema) if isinstance(request.schema, dict) else {"type": "string"}
    for key in ("$schema", "$defs", "title"):
        schema.pop(key, None)
    if request.choices:
        schema = {**schema, "enum": list(request.choices)}
    enum = schema.get("enum")
    if "type" not in schema and isinstance(enum, list) and enum:
        kinds = {type(v) for v in enum}
        if kinds <= {str}:
            schema["type"] = "string"
        elif kinds <= {int}:
            schema["type"] = "integer"
        elif kinds <= {int, float}:
            schema["type"] = "number"
    if schema.get("type") not in ("string", "integer", "number", "boolean", "array"):
        schema = {"type": "string", "description": "JSON text"}
    schema.setdefault("title", "answer")
    return {"type": "object", "properties": {"answer": schema}, "required": ["answer"]}


class _Elicitor:
    """The interlocutor of a served run: each ``ask`` is an elicitation request to the client
    (related to the tool call, so streamable HTTP sends it on the call's stream)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx, self.loop = ctx, asyncio.get_running_loop()  # the server's, the session's
        #: how the client left the last question unanswered: ``no-elicitation``, ``declined``
        self.unanswered: str | None = None

    def unanswered_by(self) -> str | None:
        """Why the client left the last question unanswered (``no-elicitation``: it does not
        support elicitation; ``declined``), for the unanswered ``ask``'s failure
        (:func:`agentflow.runtime.hooks.unanswered_message`): advice for the MCP client, not
        the command line's ``--answer``."""
        return self.unanswered

    async def __call__(self, request: Any) -> Any:
        if asyncio.get_running_loop() is not self.loop:  # asked from the run's own loop
            ask = asyncio.run_coroutine_threadsafe(self._ask(request), self.loop)
            return await asyncio.wrap_future(ask)
        return await self._ask(request)

    async def _ask(self, request: Any) -> Any:
        from mcp.types import ClientCapabilities, ElicitationCapability

        session = self.ctx.session
        if not session.check_client_capability(
            ClientCapabilities(elicitation=ElicitationCapability())
        ):
            self.unanswered = "no-elicitation"
            return NO_ANSWER
        answer, problem = await elicit_answer(
            session, request.question, ask_form(request), self.ctx.request_id,
            lambda value: check_answer(value, request.schema, request.choices),
        )  # fmt: skip
        self.unanswered = "declined" if answer is NO_ANSWER and problem is None else None
        if problem is not None:
            raise RunError(
                Code.OUTPUT_VALIDATION,
                f"answer to `{request.question}` not accepted: {problem}",
                request.step_path,
            )
        return answer


def _connection(ctx: Any) -> str | None:
    """The MCP connection a request came on: its streamable HTTP session id (the server
    session object is per request there), none on stdio (one connection)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


#: How many times an ``ask`` is put to a client whose accepted form does not match the requested
#: schema: once, and once more saying what was wrong (docs/decisions.md "Elicitation forms").
FORM_ATTEMPTS = 2


def form_problem(form: dict[str, Any], content: Any) -> str | None:
    """Why the ``content`` of an accepted elicitation does not match :func:`ask_form`'s ``form``
    (the MCP specification's elicitation: the server validates what it gets against the schema
    it requested), naming the missing or unknown field, or None when it matches:
    ``the form has no field `answer` (it gave `value`)``. A "JSON text" answer that gives a key
    twice is refused naming the key, as ``flowc answer`` and ``--answer`` refuse it."""
    if not isinstance(content, dict) or not content:
        return "the form came back empty (the requested schema requires the field `answer`)"
    extra = ", ".join(f"`{visible(str(k))}`" for k in content if k != "answer")
    if "answer" not in content:
        return (
            f"the form has no field `answer` (it gave {extra}; the requested schema requires "
            "`answer`)"
        )
    if extra:
        return f"the form has unknown fields {extra} (the requested schema has only `answer`)"
    # the field's own title (`answer`) is no type: the problem names the type (`int`)
    wants = {k: v for k, v in form["properties"]["answer"].items() if k != "title"}
    answer = content["answer"]
    if wants.get("description") == "JSON text" and isinstance(answer, str):
        try:
            loads_value(answer)
        except DuplicateKey as e:  # which value was meant is not known
            return f"field `answer`: {e}"
        except ValueError:  # not JSON, too deep, NaN: kept as text (_form_answer)
            pass
    problem = check_answer(answer, wants, None)
    return f"field `answer`: {problem}" if problem else None


def _reply_problem(error: ValidationError) -> str:
    """Why a client's reply to an elicitation request is not an elicitation result (the SDK's
    validation ``error``), in the form's terms: the fields holding a value no form field may
    (MCP: a text, a number, a boolean or a list of texts)."""
    fields = sorted(
        {str(e["loc"][1]) for e in error.errors() if len(e["loc"]) > 1 and e["loc"][0] == "content"}
    )
    if not fields:
        return "the client's reply is not an elicitation result"
    named = ", ".join(f"`{visible(f)}`" for f in fields)
    return (
        f"the form's field {named} holds a value no form field may (a text, a number, a "
        "boolean or a list of texts)"
    )


async def elicit_answer(
    session: Any,
    question: str,
    form: dict[str, Any],
    related: Any,
    check: Callable[[Any], str | None] | None = None,
) -> tuple[Any, str | None]:
    """Put ``question`` to the client of ``session`` as the elicitation form ``form`` (related
    to the request ``related``): ``(answer, None)`` for an accepted form that matches it,
    ``(NO_ANSWER, None)`` for a declined or cancelled one, ``(NO_ANSWER, problem)`` when every
    accepted form of :data:`FORM_ATTEMPTS` missed the requested schema (:func:`form_problem`;
    the next attempt's message says what was wrong) — never a default in its place.
    ``check``: why an answer breaks the ask's own type and choices (a "JSON text" field's
    value, which the form cannot type), or None; a problem is asked again like the form's."""
    message, problem = question, None
    for _ in range(FORM_ATTEMPTS):
        try:
            result = await session.elicit_form(
                redact(message), redact_data(form), related_request_id=related
            )
        except ValidationError as e:  # a reply the SDK cannot read as an elicitation result
            problem = _reply_problem(e)
            message = f"{question}\n\n(The last answer was not accepted: {problem}.)"
            continue
        if result.action != "accept":
            return NO_ANSWER, None
        problem = form_problem(form, result.content)
        if problem is None:
            answer = clean_json(_form_answer(form, result.content["answer"]))
            problem = check(answer) if check is not None else None
            if problem is None:
                return answer, None
            problem = f"field `answer`: {problem}"
        message = f"{question}\n\n(The last answer was not accepted: {problem}.)"
    return NO_ANSWER, problem


def _form_answer(form: dict[str, Any], answer: Any) -> Any:
    """The value of an accepted :func:`ask_form` answer (a "JSON text" field parsed)."""
    wants = form["properties"]["answer"]
    if wants.get("description") == "JSON text" and isinstance(answer, str):
        with contextlib.suppress(ValueError):  # too deep, NaN, 1e400: kept as text
            return loads_value(answer)
    return answer
