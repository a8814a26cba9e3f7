"""MCP sampling: a server's request for a model's answer, answered by the run's router
(docs/mcp.md "Sampling"): the server's messages, system prompt, ``maxTokens``, ``temperature`` and
``stopSequences`` go to one inference of the ``[mcp.NAME] sampling`` role, or of the configured
named model its ``modelPreferences.hints`` point at."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.result import model_call_fields
from agentflow.runtime.tools.catalog import RunServices


async def sample(
    server: str, role: Any, params: Any, services: RunServices | None, path: str
) -> Any:
    """Answer a sampling request of MCP server ``server`` with one inference of model ``role``
    (``[mcp.NAME] sampling``, a role or named model; ``false`` refuses and never reaches here).

    The request's system prompt and text messages go to the run's router, so the inference
    counts in the run's usage and is a ``model_call`` trace event (``source: mcp``).  Its
    ``temperature`` and ``stopSequences`` go with the inference; its ``modelPreferences.hints``
    may pick one of the configured named models (:func:`_hinted_model`).  Without a run or a
    configured model the server gets an error answer.
    """
    from mcp.types import INVALID_REQUEST, CreateMessageResult, ErrorData, TextContent

    router = services.router if services is not None else None
    if router is None:
        return ErrorData(
            code=INVALID_REQUEST, message="sampling is not available: no model is configured"
        )
    if getattr(params, "tools", None):
        return ErrorData(code=INVALID_REQUEST, message="sampling with tools is not supported")
    messages: list[Message] = []
    if params.system_prompt:
        messages.append(Message(role="system", content=params.system_prompt))
    for m in params.messages:
        blocks = m.content if isinstance(m.content, list) else [m.content]
        text = "\n".join(
            b.text if getattr(b, "type", "") == "text" else f"[{getattr(b, 'type', 'content')}]"
            for b in blocks
        )
        messages.append(
            Message(role="assistant" if m.role == "assistant" else "user", content=text)
        )
    temperature = getattr(params, "temperature", None)
    stop = getattr(params, "stop_sequences", None)
    role = _hinted_model(router, getattr(params, "model_preferences", None)) or role
    t0 = time.monotonic()
    try:
        client = router.client_for(str(role))
        response = await client.chat(
            ChatRequest(
                messages=messages,
                max_tokens=params.max_tokens,
                temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
                stop=[str(s) for s in stop] if isinstance(stop, list) and stop else None,
            )
        )
    except Exception as exc:  # noqa: BLE001 - ConfigError, ModelError: the server gets an error
        return ErrorData(code=INVALID_REQUEST, message=f"sampling failed: {exc}")
    if services is not None:
        with contextlib.suppress(Exception):
            services.emit(
                "model_call",
                path,
                {
                    "role": str(role),
                    "source": "mcp",
                    "server": server,
                    **model_call_fields(response, t0),
                },
            )
    stop = {"stop": "endTurn", "length": "maxTokens"}.get(
        response.finish_reason, response.finish_reason
    )
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=response.text or ""),
        model=response.model or str(role),
        stop_reason=stop,
    )


def _hinted_model(router: Any, preferences: Any) -> str | None:
    """The configured named model an MCP sampling request's ``modelPreferences.hints`` point
    at, in the hints' order: a hint names a ``[models.named]`` entry, or is part of the
    provider model name of one (MCP: hints are substrings of model names). None: no hint
    matches, and the server's ``sampling`` role answers. Hints never reach a model the
    configuration does not name."""
    hints = getattr(preferences, "hints", None) or []
    named = getattr(getattr(getattr(router, "config", None), "models", None), "named", None)
    if not isinstance(named, dict) or not named:
        return None
    for hint in hints:
        name = getattr(hint, "name", None)
        if not isinstance(name, str) or not name.strip():
            continue
        if name in named:
            return name
        for label, model in named.items():
            if name.lower() in str(getattr(model, "model", "")).lower():
                return str(label)
    return None
