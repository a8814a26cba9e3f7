"""MCP elicitation: a server's request for the user's input, answered through the run's
interlocutor (docs/mcp.md "Elicitation", ``[mcp.NAME] elicitation``).

:func:`elicit` puts each field of the requested form to the interlocutor (the hook of ``ask``
steps), or answers with the schema's defaults, validates each answer against its field's schema
and records an ``ask`` trace event (``source: mcp``) per field; URL-mode requests are declined.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

from agentflow.runtime.hooks import NO_ANSWER, AskRequest
from agentflow.runtime.tools.catalog import RunServices
from agentflow.runtime.tools.mcp_tools import _jsonable

__all__ = ["elicit"]


async def elicit(
    server: str, policy: str, params: Any, services: RunServices | None, path: str
) -> Any:
    """Answer an elicitation request of MCP server ``server`` (``mcp.types.ElicitResult``).

    ``policy`` (``[mcp.NAME] elicitation``): ``ask`` puts each field of the requested form to
    the run's interlocutor (the hook of ``ask`` steps, serialized with them); ``defaults``
    answers with the schema's defaults without asking; ``decline`` never reaches here (the
    client then does not offer elicitation at all).  An unanswered question (no interlocutor,
    as in CI, or an empty answer) takes the field's default, as an ``ask``'s ``when_unanswered:
    default`` does; a required field left without a value declines the request.  URL-mode
    requests are declined (flowc opens no browser for a server).  Each answer is an ``ask``
    trace event (``source: mcp``).
    """
    from mcp.types import ElicitRequestURLParams, ElicitResult

    def event(**data: Any) -> None:
        if services is not None:
            with contextlib.suppress(Exception):
                services.emit("ask", path, {"source": "mcp", "server": server, **data})

    if isinstance(params, ElicitRequestURLParams):
        event(question=params.message, url=params.url, answered=False)
        return ElicitResult(action="decline")
    schema: dict[str, Any] = (
        params.requested_schema if isinstance(params.requested_schema, dict) else {}
    )
    raw_props = schema.get("properties")
    props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
    required = set(schema.get("required") or [])
    interlocutor = services.interlocutor if services is not None and policy == "ask" else None
    content: dict[str, Any] = {}
    for field_name, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        answer: Any = NO_ANSWER
        if interlocutor is not None:
            label = sub.get("title") or sub.get("description") or field_name
            question = params.message if len(props) == 1 else f"{params.message} — {label}"
            choices = _elicit_choices(sub)
            value_schema = {k: v for k, v in sub.items() if k not in ("title", "default")}
            async with services.ask_lock:  # type: ignore[union-attr]
                answer = await _maybe_await(
                    interlocutor(
                        AskRequest(question, value_schema or None, choices, path, [server])
                    )
                )
            if answer is not NO_ANSWER and choices is None and sub.get("type") == "array":
                if isinstance(answer, str):
                    answer = [a.strip() for a in answer.split(",") if a.strip()]
        if answer is NO_ANSWER:
            if "default" in sub:
                content[field_name] = sub["default"]
                event(
                    question=params.message, field=field_name, answer=sub["default"], answered=False
                )
            elif field_name in required:
                event(question=params.message, field=field_name, answered=False)
                return ElicitResult(action="decline")
            continue
        problem = _check_value(answer, sub)
        if problem:
            event(question=params.message, field=field_name, answered=True, error=problem)
            return ElicitResult(action="decline")
        content[field_name] = answer
        event(question=params.message, field=field_name, answer=_jsonable(answer), answered=True)
    return ElicitResult(action="accept", content=content)


def _elicit_choices(sub: dict[str, Any]) -> list[Any] | None:
    if isinstance(sub.get("enum"), list):
        return list(sub["enum"])
    for key in ("oneOf", "anyOf"):
        options = sub.get(key)
        if isinstance(options, list) and all(isinstance(o, dict) and "const" in o for o in options):
            return [o["const"] for o in options]
    items = sub.get("items") if isinstance(sub.get("items"), dict) else None
    if items is not None:
        return None
    return None


def _check_value(value: Any, schema: dict[str, Any]) -> str | None:
    import jsonschema

    try:
        jsonschema.validate(value, {k: v for k, v in schema.items() if k != "default"})
    except jsonschema.ValidationError as e:
        return e.message
    except jsonschema.SchemaError:
        return None
    return None


async def _maybe_await(value: Any) -> Any:

    return await value if inspect.isawaitable(value) else value
