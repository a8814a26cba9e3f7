"""Shared HTTP plumbing of the provider adapters: error classification and retries
(docs/spec/RUNTIME.md §2, §10).

Classification (§10): 429 is ``rate_limit`` (``Retry-After`` honoured) except quota exhaustion
(``insufficient_quota``, spend/billing limits) which is ``permanent``; 408, 409, 5xx, 529 and
"overloaded" bodies are ``transient``; connection failures and timeouts are ``transient``; a
content filter's refusal (Azure ``content_filter``, OpenAI ``content_policy_violation``) is
``content_filter``, permanent; everything else (400, 401, 403, 404, 413, 422, …) is
``permanent`` and never retried.

An HTTP 200 whose body is an error object (OpenAI ``{"error": …}`` without ``choices``,
Anthropic ``{"type": "error", …}``; some gateways and overloaded servers answer so) is classified
as the status its error type stands for (:func:`status_of_error_body`), and so is an ``error``
event inside a stream. Replies sent as Server-Sent Events (``text/event-stream``) or as an AWS
event stream (``application/vnd.amazon.eventstream``, Bedrock) go to the adapter's stream reader,
whether or not streaming was asked for (a server that only streams).
"""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import functools
import json
import math
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentflow.core.redaction import redact as redact_secrets
from agentflow.core.redaction import register_secret, register_url, safe_url
from agentflow.errors import ModelError, ModelErrorKind
from agentflow.runtime.config import api_key_problem
from agentflow.runtime.models.base import ReplyShapeError, collect_bad_counts

if TYPE_CHECKING:
    import httpx

#: 429 bodies that mean "out of money", not "slow down": permanent, never retried. A bare "quota"
#: is not enough (per-minute quotas are rate limits).
_QUOTA_MARKERS = (
    "insufficient_quota",
    "exceeded your current quota",
    "billing",
    "spend limit",
    "spending limit",
    "credit balance",
)


@dataclass
class RetryPolicy:
    """Bounded exponential backoff with full jitter.

    ``max_retries``: extra attempts after the first; ``base``/``cap``: seconds; ``max_retry_after``:
    the longest ``Retry-After`` honoured (longer values are capped, not ignored).
    """

    max_retries: int = 4
    base: float = 0.5
    cap: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        A ``retry_after`` (seconds) is honoured up to ``max_retry_after``; an infinite or huge one
        is capped there, a NaN or negative one counts as 0.
        """
        if retry_after is not None:
            if math.isnan(retry_after):
                return 0.0
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.cap, self.base * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds (delta-seconds, possibly fractional, or an HTTP date).

    None when absent or unparseable (``nan`` included: the backoff then applies); ``inf`` and
    huge values come back as they are and are capped by :meth:`RetryPolicy.delay`.
    """
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if math.isnan(seconds) else max(0.0, seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_after_of(headers: Any) -> float | None:
    """Seconds a reply's headers ask to wait: ``retry-after-ms`` (milliseconds; Azure OpenAI and
    OpenAI send it) when it is a number, else ``Retry-After`` (:func:`parse_retry_after`)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if not math.isnan(value):
            return max(0.0, value)
    return parse_retry_after(headers.get("retry-after"))


def error_detail(body: str) -> tuple[str, str]:
    """(short message, lower-cased code/type text) from a provider's error body."""
    code_text = ""
    message = body.strip()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            message = str(err.get("message") or message)
            code_text = " ".join(str(err.get(k) or "") for k in ("code", "type", "status")).lower()
            inner = err.get("innererror")
            verdicts = inner.get("content_filter_result") if isinstance(inner, dict) else None
            if isinstance(verdicts, dict):  # Azure: which categories its content filter hit
                hit = [
                    f"{name} ({v.get('severity')})" if v.get("severity") else str(name)
                    for name, v in verdicts.items()
                    if isinstance(v, dict) and v.get("filtered") is True
                ]
                if hit:
                    message = f"filtered: {', '.join(hit)}; {message}"
        elif isinstance(err, str):
            message = err
    message = redact_secrets(message)  # before the cut: a key straddling it would survive in part
    if len(message) > 300:
        message = message[:300] + "…"
    return message, code_text


#: Error codes/types that mean a content filter refused the prompt or the answer.
_FILTER_MARKERS = (
    "content_filter",
    "content_policy_violation",
    "responsibleaipolicyviolation",
    "content management policy",
    "invalid_prompt",  # OpenAI Responses: a prompt flagged as violating the usage policy
)


def classify(status: int, body: str) -> ModelErrorKind:
    """``rate_limit`` | ``transient`` | ``content_filter`` | ``permanent`` for an HTTP error
    status and body."""
    message, code_text = error_detail(body)
    low = (message + " " + code_text).lower()
    if any(marker in low for marker in _FILTER_MARKERS) and status < 500:
        return ModelErrorKind.CONTENT_FILTER
    if status == 429:
        if any(marker in low for marker in _QUOTA_MARKERS):
            return ModelErrorKind.PERMANENT
        return ModelErrorKind.RATE_LIMIT
    if status in (408, 409, 529) or 500 <= status < 600:
        return ModelErrorKind.TRANSIENT
    if "overloaded" in low:
        return ModelErrorKind.TRANSIENT
    return ModelErrorKind.PERMANENT


#: Error types (OpenAI ``type``/``code``, Anthropic ``error.type``) → the HTTP status they stand
#: for, used for error bodies that arrive with status 200 or inside a stream.
_ERROR_TYPE_STATUS = (
    ("overloaded", 529),
    ("rate_limit", 429),
    ("insufficient_quota", 429),
    ("timeout", 408),
    ("server_error", 500),
    ("api_error", 500),
    ("internal", 500),
    ("service_unavailable", 503),
    ("unavailable", 503),
    ("authentication", 401),
    ("permission", 403),
    ("not_found", 404),
    ("request_too_large", 413),
    ("invalid_request", 400),
    ("content_filter", 400),
    ("content_policy", 400),
    ("invalid_prompt", 400),
    ("throttling", 429),  # Bedrock throttlingException
    ("validation", 400),  # Bedrock validationException
)


def error_body(data: Any) -> dict[str, Any] | str | None:
    """The error object of a reply body that is an error rather than an answer, else None:
    OpenAI-style ``{"error": {...}}`` (no ``choices``) or Anthropic-style ``{"type": "error",
    "error": {...}}``."""
    if not isinstance(data, dict):
        return None
    if data.get("type") == "error" or ("error" in data and "choices" not in data):
        err = data.get("error")
        if isinstance(err, (dict, str)) and err:
            return err
        if data.get("type") == "error":
            return {"message": "error"}
    return None


def status_of_error_body(error: dict[str, Any] | str) -> int:
    """The HTTP status an error object stands for: a numeric ``code``/``status`` in 400–599 as it
    is, else by its type text (:data:`_ERROR_TYPE_STATUS`; "Overloaded" → 529), else 500 (an
    unexplained error is treated as a server fault: retried within the bounds)."""
    if isinstance(error, dict):
        for key in ("code", "status"):
            value = error.get(key)
            if isinstance(value, str) and value.isdigit():
                value = int(value)
            if isinstance(value, int) and not isinstance(value, bool) and 400 <= value < 600:
                return value
        text = " ".join(str(error.get(k) or "") for k in ("type", "code", "status", "message"))
    else:
        text = error
    low = text.lower()
    for marker, status in _ERROR_TYPE_STATUS:
        if marker in low:
            return status
    return 500


class StreamFailure(Exception):
    """A stream that broke off with an error event or was cut short; ``body`` is the error's
    JSON text (classified like an HTTP error of ``status``)."""

    def __init__(self, status: int, body: str):
        super().__init__(body)
        self.status = status
        self.body = body


def malformed_event(what: str) -> StreamFailure:
    """A stream event of the wrong shape (``what`` says which field): the call fails as a
    malformed reply does — transient, retried — never with Python's own error and never taken
    for an empty answer (docs/models.md "Streaming"). Every provider's stream reader checks
    each field's type where it reads it, with the helpers below."""
    message = f"a stream event is malformed: {what}"
    return StreamFailure(500, json.dumps({"error": {"message": message}}))


def event_object(item: dict[str, Any], key: str, what: str) -> dict[str, Any]:
    """The object field ``key`` of a stream event (``{}`` when absent or null); raises
    :func:`malformed_event` (``what``'s ``key`` should be an object) for any other value."""
    value = item.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise malformed_event(f"{what}'s {key} should be an object")
    return value


def event_list(item: dict[str, Any], key: str, what: str) -> list[Any]:
    """The array field ``key`` of a stream event (``[]`` when absent or null); raises
    :func:`malformed_event` for any other value (a string is not a list of characters)."""
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise malformed_event(f"{what}'s {key} should be an array")
    return value


def event_text(item: dict[str, Any], key: str, what: str) -> str:
    """The text field ``key`` of a stream event (``""`` when absent or null); raises
    :func:`malformed_event` for any other value."""
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise malformed_event(f"{what}'s {key} should be text")
    return value


def event_index(item: dict[str, Any], key: str, what: str, default: int | None) -> int | None:
    """The whole-number field ``key`` ≥ 0 of a stream event (a block or call index;
    ``default`` when absent or null); raises :func:`malformed_event` for any other value."""
    value = item.get(key)
    if value is None:
        return default
    if type(value) is not int or value < 0:
        raise malformed_event(f"{what}'s {key} should be a whole number ≥ 0")
    return value


def event_item(value: Any, what: str) -> dict[str, Any]:
    """A stream event's decoded JSON, or an element of one of its arrays, that must be an
    object; raises :func:`malformed_event` (``what`` should be an object) otherwise."""
    if not isinstance(value, dict):
        raise malformed_event(f"{what} should be an object")
    return value


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """The Server-Sent Events of a stream of lines as ``(event name, data)`` pairs (event name
    ``""`` when the event has none; multi-line data joined with ``\n``; comments skipped)."""
    event = ""
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


#: The line ends of Server-Sent Events (CRLF, LF, CR) — not every Unicode line boundary that
#: ``str.splitlines`` knows: a U+2028 inside an event's JSON is part of its data.
_SSE_LINE_END = re.compile(r"\r\n|\r|\n")


async def _text_lines(text: str) -> AsyncIterator[str]:
    for line in _SSE_LINE_END.split(text):
        yield line


#: The most bytes one model reply (a body, or a whole stream) may have: far above any real
#: chat reply (a 128k-token answer is under 1 MiB of JSON), far below what would exhaust memory
#: (docs/models.md "Errors"). A longer reply fails the call (permanent: resending gets the same).
MAX_REPLY_BYTES = 64 * 1024 * 1024


class _ReplyTooLarge(Exception):
    """A reply (or a stream) that went past :data:`MAX_REPLY_BYTES`."""


def _binary_size(n: int) -> str:
    return f"{n / 1024**2:g} MiB" if n >= 1024**2 else f"{n / 1024:g} KiB"


async def _capped_bytes(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's chunks; raises :class:`_ReplyTooLarge` as soon as they pass
    :data:`MAX_REPLY_BYTES` (or at once when ``Content-Length`` says they will)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        raise _ReplyTooLarge
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > MAX_REPLY_BYTES:
            raise _ReplyTooLarge
        yield chunk


async def _decoded_lines(response: httpx.Response) -> AsyncIterator[str]:
    """The lines of a streamed body, decoded as UTF-8 incrementally (a character split across
    two network chunks survives). A line ends at CRLF, LF or a lone CR, as the Server-Sent
    Events format allows (the same split as a whole body's, :func:`_text_lines`); a CR at the
    end of a chunk waits for the next one, which may begin with its LF."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    # Only each new chunk is searched for line ends; the pieces of a line not yet ended are
    # kept apart and joined once, when it ends: linear in the body, however long one line is
    # (re-searching the growing line at each chunk was quadratic: a 16 MiB event took 21 s)
    tail: list[str] = []
    held = False  # a CR ended the last chunk: the next one may begin with its LF
    async for chunk in _capped_bytes(response):
        text = decoder.decode(chunk)
        if held:
            text, held = "\r" + text, False
        if text.endswith("\r"):
            text, held = text[:-1], True
        pieces = _SSE_LINE_END.split(text)
        if len(pieces) == 1:
            if pieces[0]:
                tail.append(pieces[0])
            continue
        tail.append(pieces[0])
        yield "".join(tail)
        for line in pieces[1:-1]:
            yield line
        tail = [pieces[-1]] if pieces[-1] else []
    rest = decoder.decode(b"", final=True)
    if held and rest:  # the held CR ended a line; what the decoder still held is another
        yield "".join(tail)
        tail = []
    last = "".join(tail) + rest
    if last:
        yield last


async def _read_events(read_stream: StreamReader, events: AsyncIterator[tuple[str, str]]) -> Any:
    """``read_stream(events)``, an event of a shape its reader did not foresee (a field of the
    wrong type: Python's ``TypeError``, ``AttributeError`` …) failing as a malformed stream does
    (:class:`StreamFailure`, transient) rather than with Python's own error."""
    try:
        return await read_stream(events)
    except (TypeError, AttributeError, KeyError, IndexError):
        message = "a stream event is malformed (a field of the wrong type)"
        raise StreamFailure(500, json.dumps({"error": {"message": message}})) from None


async def _eventstream_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """The messages of an AWS event stream (``application/vnd.amazon.eventstream``, decoded by
    botocore's parser) as ``(event type, JSON payload text)`` pairs, like Server-Sent Events;
    an exception message is ``("error", {"type": …, "message": …})``."""
    try:
        from botocore.eventstream import EventStreamBuffer  # the optional `bedrock` extra
    except ImportError:
        message = "reading an AWS event stream needs botocore: pip install 'agentflow[bedrock]'"
        raise StreamFailure(400, json.dumps({"error": {"message": message}})) from None
    from botocore.eventstream import InvalidPayloadLength, ParserError

    buffer = EventStreamBuffer()
    # whole messages only go to botocore's buffer (its `_data += chunk` copies what it holds at
    # each chunk: quadratic in one big message); a message begins with its length (uint32)
    pending = bytearray()
    async for chunk in _capped_bytes(response):
        pending += chunk
        whole = 0
        while len(pending) - whole >= 4:
            size = int.from_bytes(pending[whole : whole + 4], "big")
            if len(pending) - whole < size:
                break
            whole += max(size, 4)  # a size below the prelude's: botocore refuses it
        if not whole:
            continue
        buffer.add_data(bytes(pending[:whole]))
        del pending[:whole]
        try:
            messages = list(buffer)
        except InvalidPayloadLength:  # over the format's 24 MiB: resending gets the same
            text = "an AWS event stream message is larger than its format allows"
            raise StreamFailure(400, json.dumps({"error": {"message": text}})) from None
        except ParserError as exc:  # a CRC that does not match, a header of no known type
            text = f"an AWS event stream message is malformed ({type(exc).__name__})"
            raise StreamFailure(500, json.dumps({"error": {"message": text}})) from None
        for message in messages:
            headers = message.headers
            payload = message.payload.decode("utf-8", errors="replace")
            if headers.get(":message-type") in ("exception", "error"):
                kind = headers.get(":exception-type") or headers.get(":error-code") or "error"
                try:
                    detail = json.loads(payload).get("message", payload)
                except (ValueError, AttributeError):
                    detail = payload
                yield "error", json.dumps({"type": str(kind), "message": str(detail)})
            else:
                yield str(headers.get(":event-type") or ""), payload


#: Reads a stream's events into the adapter's answer (raises StreamFailure on an error event).
StreamReader = Callable[[AsyncIterator[tuple[str, str]]], Awaitable[Any]]


def _looks_like_sse(text: str) -> bool:
    head = text.lstrip()[:16]
    return head.startswith(("data:", "event:", ":"))


#: ``Bearer <token>`` and ``x-api-key: <token>`` / ``'x-api-key': '<token>'`` (Azure's
#: ``api-key`` too) in any text
#: (an exception's repr of a request header included); a value ends at a `;` or `]` too (the
#: punctuation of the message around it, `?api-key=…; the URL is from …`).
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\"]+")
_API_KEY_HEADER = re.compile(r"(?i)((?:x-)?api-key['\"]?\s*[:=,]\s*b?['\"]?)[^\s'\";\]]+")


def redact(text: str, secret: str | None) -> str:
    """``text`` with the API key removed: ``secret`` joins the process's secrets
    (:mod:`agentflow.core.redaction`), every run of 8 or more of its characters (or another
    secret's, also in escaped forms) and every ``Bearer …`` or ``x-api-key`` value become
    ``***``. Used on every message a provider error produces."""
    register_secret(secret)
    if secret and 4 <= len(secret.strip()) < 8:  # too short for the run rule: the whole key
        text = text.replace(secret.strip(), "***")
    text = redact_secrets(text)
    text = _BEARER.sub(r"\1***", text)
    return _API_KEY_HEADER.sub(r"\1***", text)


async def post_with_retries(
    client: httpx.AsyncClient,
    url: str,
    *,
    payload: dict[str, Any],
    headers: dict[str, str],
    provider: str,
    policy: RetryPolicy,
    secret: str | None,
    timeout: float,
    on_retry: Callable[[dict[str, Any]], Any] | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    read_stream: StreamReader | None = None,
    on_restart: Callable[[], Any] | None = None,
    url_from: str = "",
    sign: Callable[[httpx.Request], Any] | None = None,
    check: Callable[[Any], Any] | None = None,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON reply, retrying per ``policy``.

    ``check(reply)``: raises :class:`ReplyShapeError` for a reply without the provider's shape
    (an empty ``choices``, a body that is a JSON array): such a reply is a transient error,
    retried like a body that is not JSON (docs/models.md "Errors").

    ``sign(request)``: called with each attempt's built request (its body final) to add
    authentication headers over it (AWS SigV4: a fresh signature per attempt).

    A reply sent as Server-Sent Events goes to ``read_stream`` (whose result is returned); a
    stream that fails (an ``error`` event, a connection cut) is retried like the HTTP error it
    stands for, and ``on_restart()`` is called before the new attempt (partial answers shown so
    far are void). An HTTP 200 with an error body is classified as its status equivalent.

    Raises ModelError(kind=rate_limit|transient|content_filter|permanent) naming ``provider``
    (never the key) once retries are exhausted or on a permanent error; one that never got a
    reply (connection failed, timed out, invalid URL) also names ``url`` and ``url_from``, the
    setting it came from (:attr:`ProviderConfig.base_url_from`). ``on_retry`` receives
    ``{provider, attempt, kind, status, delay_s, retry_after_s, capped, message}`` before each
    wait (``retry_after_s``: what the provider's ``Retry-After`` asked, or None; ``capped``: it
    asked longer than ``max_retry_after``, and ``delay_s`` is that cap).
    """
    attempt = 0
    import httpx  # here, not at module level: a run that calls no model never needs it

    register_url(url)  # a password or key written into the URL is never shown
    target = f"POST {safe_url(url)}" + (f"; the URL is from {url_from}" if url_from else "")
    while True:
        status: int | None = None
        retry_after: float | None = None
        unreached = True  # no reply came: the error names the URL and where it came from
        try:
            # `timeout` bounds the whole exchange, not only each wait for bytes: a server that
            # trickles its reply a byte at a time would otherwise never time out
            async with asyncio.timeout(timeout):
                result, kind, message, status, retry_after = await _attempt(
                    client, url, payload, headers, timeout, read_stream, sign
                )
        except TimeoutError:
            kind, message = (
                ModelErrorKind.TRANSIENT,
                f"request timed out: no complete reply within {timeout:g} s",
            )
        except httpx.TimeoutException as exc:
            kind, message = ModelErrorKind.TRANSIENT, f"request timed out ({type(exc).__name__})"
        except httpx.LocalProtocolError as exc:
            # our own request is malformed (e.g. a header value): retrying cannot help
            kind, message = (
                ModelErrorKind.PERMANENT,
                f"the request could not be sent ({type(exc).__name__}: {exc})",
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            kind, message = (
                ModelErrorKind.PERMANENT,
                f"invalid URL {url!r} ({type(exc).__name__}: {exc})",
            )
        except httpx.TransportError as exc:
            kind, message = (
                ModelErrorKind.TRANSIENT,
                f"connection failed ({type(exc).__name__}: {exc})",
            )
        else:
            unreached = False
            if kind is None:
                if check is None:
                    return result
                try:
                    with collect_bad_counts():  # a check: its reading's findings are not kept
                        check(result)
                    return result
                except ReplyShapeError as exc:
                    kind, message = ModelErrorKind.TRANSIENT, f"sent a malformed reply: {exc}"
        message = redact(message, secret)
        if (
            kind in (ModelErrorKind.PERMANENT, ModelErrorKind.CONTENT_FILTER)
            or attempt >= policy.max_retries
        ):
            suffix = f" after {attempt + 1} attempts" if attempt else ""
            if unreached:
                message = f"{message} [{redact(target, secret)}]"
            raise ModelError(
                f"model provider '{provider}' failed{suffix}: {message}",
                kind=kind,
                retry_after=retry_after,
                status=status,
            )
        attempt += 1
        delay = policy.delay(attempt, retry_after)
        if on_retry is not None:
            on_retry(
                {
                    "provider": provider,
                    "attempt": attempt,
                    "kind": kind,
                    "status": status,
                    "delay_s": round(delay, 3),
                    "retry_after_s": retry_after,
                    "capped": retry_after is not None and retry_after > policy.max_retry_after,
                    "message": message,
                }
            )
        if on_restart is not None:
            on_restart()
        await sleep(delay)


async def _attempt(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    timeout: float,
    read_stream: StreamReader | None,
    sign: Callable[[httpx.Request], Any] | None = None,
) -> tuple[Any, str | None, str, int | None, float | None]:
    """One POST: ``(result, None, "", status, None)`` on success, else ``(None, kind, message,
    status, retry_after)``. Transport errors propagate."""
    request = client.build_request("POST", url, json=payload, headers=headers, timeout=timeout)
    if sign is not None:
        sign(request)
    response = await client.send(request, stream=True)
    try:
        status = response.status_code
        ctype = response.headers.get("content-type", "").lower()
        binary = "vnd.amazon.eventstream" in ctype  # AWS event streams (Bedrock ConverseStream)
        if status < 400 and ("text/event-stream" in ctype or binary) and read_stream is not None:
            events = (
                _eventstream_events(response) if binary else sse_events(_decoded_lines(response))
            )
            try:
                return (
                    await _read_events(read_stream, events),
                    None,
                    "",
                    status,
                    None,
                )
            except StreamFailure as failure:
                return _failed(failure.status, failure.body, None, streamed=True)
        body = b"".join([chunk async for chunk in _capped_bytes(response)]).decode(
            "utf-8", errors="replace"
        )
    except _ReplyTooLarge:
        message = (
            f"the reply is larger than {_binary_size(MAX_REPLY_BYTES)}, far more than any "
            "model answer (is the base URL a model API?)"
        )
        return None, ModelErrorKind.PERMANENT, message, response.status_code, None
    finally:
        await response.aclose()
    if status >= 400:
        return _failed(status, body, retry_after_of(response.headers))
    try:
        data = json.loads(body)
    except RecursionError:
        return None, ModelErrorKind.TRANSIENT, "reply JSON is nested too deeply", status, None
    except ValueError:
        if read_stream is not None and _looks_like_sse(body):
            try:
                events = sse_events(_text_lines(body))
                return await _read_events(read_stream, events), None, "", status, None
            except StreamFailure as failure:
                return _failed(failure.status, failure.body, None, streamed=True)
        return None, ModelErrorKind.TRANSIENT, "reply is not valid JSON", status, None
    error = error_body(data)
    if error is not None:
        equivalent = status_of_error_body(error)
        _, kind, message, _, _ = _failed(equivalent, body, None)
        return None, kind, f"HTTP 200 with an error body ({message})", status, None
    return data, None, "", status, None


def _failed(
    status: int, body: str, retry_after: float | None, *, streamed: bool = False
) -> tuple[None, str, str, int, float | None]:
    kind = classify(status, body)
    detail, _ = error_detail(body)
    message = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    if streamed:
        message = f"the stream failed ({detail or 'cut short'})"
    return None, kind, message, status, retry_after if kind == ModelErrorKind.RATE_LIMIT else None


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The TLS context every provider client of this process uses: the system defaults with
    certifi's CA bundle, as httpx builds it by default (made once)."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


@functools.cache
def plain_http_context() -> ssl.SSLContext:
    """The TLS context of a client whose base URL is ``http://``: it never makes a TLS
    connection (no redirects are followed; a proxy's own TLS uses httpcore's context), so no CA
    bundle is loaded (~20-50 ms a process). It still verifies: any TLS handshake through it
    fails, it never connects unverified (docs/decisions.md "Start-up of a fresh agent task")."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def client_ssl_context(base_url: str) -> ssl.SSLContext:
    """The TLS context of a provider client for ``base_url``: :func:`plain_http_context` for an
    ``http://`` URL (case-insensitive), :func:`shared_ssl_context` for any other."""
    if base_url[:7].lower() == "http://":
        return plain_http_context()
    return shared_ssl_context()


_SCHEMA_REJECTION = ("schema", "response_format", "json_schema", "structured output")


def schema_rejected(exc: ModelError) -> bool:
    """True when a permanent ModelError is a 400 refusing the structured-output schema."""
    text = str(exc).lower()
    return (
        exc.kind == ModelErrorKind.PERMANENT
        and exc.status in (400, 422)
        and any(word in text for word in _SCHEMA_REJECTION)
    )


class HTTPModelClient:
    """What the provider adapters share: settings, the owned connection pool, one retried POST.

    Keyword arguments (all adapters): ``provider`` (name used in messages), ``base_url`` (kept
    without a trailing ``/``), ``model``, ``api_key`` (never logged or put in an error; redacted from
    every message), ``timeout`` (seconds per HTTP request), ``retry`` (default
    :class:`RetryPolicy`), ``headers`` (extra request headers), ``max_tokens``, ``temperature``,
    ``tool_choice``, ``parallel_tool_calls``, ``http_client`` (an ``httpx.AsyncClient`` to use; one is
    created on first use otherwise), ``on_retry`` (see :func:`post_with_retries`), ``sleep``
    (the wait between retries; ``asyncio.sleep`` by default), ``api_key_env`` (the variable the
    key came from, named in messages), ``stream`` (ask for Server-Sent Events), ``on_warning``
    (receives a message when the client changes course, e.g. drops native structured output
    after the endpoint refused the schema) and ``url_from`` (the setting ``base_url`` came from,
    named with the URL in an error that got no reply). A key that cannot travel in an HTTP header (see
    :func:`api_key_problem`) fails every request with a permanent ModelError that never shows it.
    Subclasses implement ``chat``.
    """

    #: the endpoint refused a native output schema once: the contract goes as prompt text
    native_refused: bool = False

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        on_retry: Callable[[dict[str, Any]], Any] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        api_key_env: str | None = None,
        stream: bool = False,
        on_warning: Callable[[str], Any] | None = None,
        url_from: str = "",
    ):
        self.provider = provider
        self.url_from = url_from
        self.stream = stream
        self.on_warning = on_warning
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        register_secret(api_key)
        self._api_key_env = api_key_env
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._headers = dict(headers or {})
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self._http = http_client
        self.on_retry = on_retry
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Close the owned HTTP connection pool (if any)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            # one process-wide TLS context: loading the CA bundle costs 0.2-0.4 s per client
            # (and none for an http:// endpoint: client_ssl_context)
            self._http = httpx.AsyncClient(verify=client_ssl_context(self.base_url))
        return self._http

    def _warn(self, message: str) -> None:
        if self.on_warning is not None:
            self.on_warning(redact(message, self._api_key))

    async def _native_or_prompt(
        self, native: bool, send: Callable[[bool], Awaitable[Any]], sent_as: str
    ) -> Any:
        """``send(native)``'s reply: the request with the output contract in the provider's
        native structured-output field (``sent_as``, e.g. ``response_format``) when ``native``.
        A provider that refuses that schema (a 400 naming it, :func:`schema_rejected`) gets the
        request once more with the contract as prompt text, and is not asked natively again by
        this client (``native_refused``); the answer is validated against the whole contract
        either way (docs/models.md "Structured output")."""
        try:
            return await send(True)
        except ModelError as exc:
            if not (native and schema_rejected(exc)):
                raise
            self.native_refused = True
            self._warn(
                f"model provider '{self.provider}' refused the output contract as {sent_as} "
                f"({exc}); sent again with the contract as prompt text (it is still validated)"
            )
            return await send(False)

    def _malformed(self, exc: Exception) -> ModelError:
        """The (transient) error for a reply whose shape is not the provider's (key redacted)."""
        return ModelError(
            redact(
                f"model provider '{self.provider}' sent a malformed reply: {exc}", self._api_key
            ),
            kind=ModelErrorKind.TRANSIENT,
        )

    async def _post_streamed(
        self,
        url: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        request: Any,
        accumulate: Callable[[Any, Any, list[str]], Awaitable[dict[str, Any]]],
        sign: Callable[[httpx.Request], Any] | None = None,
    ) -> Any:
        """:meth:`_post` of one chat request whose reply may stream: a stream is folded by
        ``accumulate(events, request.on_delta, chunks)`` into the body a non-streamed reply
        would have had (the answer's text pieces kept as ``_chunks``); a retry starts the pieces
        over and tells ``request.on_delta`` (None) that the partial answer restarts."""
        chunks: list[str] = []

        async def read(events: Any) -> Any:
            chunks.clear()
            data = await accumulate(events, request.on_delta, chunks)
            data["_chunks"] = list(chunks)
            return data

        def restart() -> None:
            chunks.clear()
            if request.on_delta is not None:
                request.on_delta(None)

        return await self._post(
            url,
            payload,
            headers,
            read_stream=read,
            on_restart=restart,
            sign=sign,
            check=lambda data: self._reply_shape(data, request),
        )

    def _reply_shape(self, data: Any, request: Any) -> None:
        """Raises :class:`ReplyShapeError` when ``data``, a decoded reply to ``request``, is
        not of this provider's shape (checked inside the retries: such a reply is transient).
        Each adapter runs its reply parser here; this base checks nothing."""

    async def _post(
        self,
        url: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        read_stream: StreamReader | None = None,
        on_restart: Callable[[], Any] | None = None,
        sign: Callable[[httpx.Request], Any] | None = None,
        check: Callable[[Any], Any] | None = None,
    ) -> Any:
        """:func:`post_with_retries` with this client's pool, policy, key, timeout and hooks.

        Raises ModelError(permanent) before sending anything when the API key is unusable.
        """
        problem = api_key_problem(self._api_key, self._api_key_env)
        if problem:
            raise ModelError(
                f"model provider '{self.provider}': {problem}", kind=ModelErrorKind.PERMANENT
            )
        kwargs: dict[str, Any] = {"sleep": self._sleep} if self._sleep is not None else {}
        if read_stream is not None:
            kwargs["read_stream"] = read_stream
        if on_restart is not None:
            kwargs["on_restart"] = on_restart
        if sign is not None:
            kwargs["sign"] = sign
        if check is not None:
            kwargs["check"] = check
        return await post_with_retries(
            self._client(),
            url,
            payload=payload,
            headers=headers,
            provider=self.provider,
            policy=self.retry,
            secret=self._api_key,
            timeout=self.timeout,
            on_retry=self.on_retry,
            url_from=self.url_from,
            **kwargs,
        )
