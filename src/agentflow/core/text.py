"""Text from outside made fit for every output: lone surrogates.

A Python ``str`` may hold a *lone surrogate* (a code point U+D800–U+DFFF that is not half of a
pair): JSON's ``"\\udcd9"`` escape decodes to one, and so do two halves of a pair that arrive in
different pieces of a stream. No UTF-8 output can hold it — a file, a terminal, SQLite, an
OpenTelemetry attribute, an HTTP body all refuse it with ``UnicodeEncodeError``. So text is made
whole where it enters a run (a model's reply, a tool's result): a pair split across pieces is
joined, and each lone surrogate becomes U+FFFD (the replacement character), as a UTF-8 decoder
does with bytes it cannot read (docs/decisions.md "Text from outside").
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = [
    "clean_json",
    "clean_text",
    "escape_surrogates",
    "finite_dumps",
    "finite_only",
    "has_surrogates",
    "join_pairs",
    "json_error",
    "money",
    "source_lines",
    "visible",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    """True when ``text`` holds a code point U+D800–U+DFFF (which no UTF-8 output can hold)."""
    return _SURROGATE.search(text) is not None


def escape_surrogates(json_text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with each surrogate code point written
    as its ``\\uXXXX`` escape: the same JSON value (``json.loads`` gives back the same strings,
    lone surrogates included), now encodable as UTF-8. A surrogate can only stand inside a JSON
    string, where the escape means the same code point. A pair held as two code points is
    written as its character (:func:`join_pairs`)."""
    if _SURROGATE.search(json_text) is None:
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", join_pairs(json_text))


def join_pairs(text: str) -> str:
    """``text`` with each surrogate pair held as two code points (a high one, then a low one)
    joined into the one character it stands for; lone surrogates kept. JSON cannot tell the two
    apart (``"\\ud83d\\udcd9"`` is one character), so this is what any JSON writer's reader
    gives back."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def clean_text(text: str) -> str:
    """``text`` with each surrogate pair held as two code points joined into its character and
    each lone surrogate replaced by U+FFFD; ``text`` itself (the same object) when it has none."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings, scalars) with :func:`clean_text` applied
    to every string, keys included; containers without any surrogate are returned unchanged (the
    same objects). Other values are returned as they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        pairs = [
            (clean_text(key) if isinstance(key, str) else key, clean_json(item))
            for key, item in value.items()
        ]
        if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [clean_json(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def source_lines(text: str) -> list[str]:
    """The lines of a `.flow` source or of JSON Lines as their readers count them: split at
    ``\\n`` only (a trailing ``\\r`` dropped), never at the other Unicode line boundaries
    ``str.splitlines`` knows (U+2028, U+2029, U+0085, ``\\v``, ``\\f``, ``\\x1c``–``\\x1e``),
    which a string or a comment may hold. Line N of a span is ``source_lines(text)[N - 1]``."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def money(dollars: float) -> str:
    """US dollars as money, never in exponent notation: cents from a dollar up (``$1,234.50``,
    ``$0.50``), and below a cent enough decimals for two significant digits (``$0.012``,
    ``$0.000036`` — not ``$3.6e-05``; at most 8 decimals, ``<$0.00000001`` below); ``$0.00``
    for nothing."""
    import math

    if not math.isfinite(dollars) or dollars == 0:
        return "$0.00"
    sign = "-" if dollars < 0 else ""
    d = abs(dollars)
    if d >= 0.1:
        return f"{sign}${d:,.2f}"
    if d < 0.000000005:
        return f"{sign}<$0.00000001"
    decimals = min(8, max(2, -math.floor(math.log10(d)) + 1))
    return f"{sign}${d:.{decimals}f}"


def choices_text(choices: Any) -> str:
    """An ask's choices as a `.flow` literal union: ``"ship" | "hold"`` (each value as JSON),
    never a Python list repr; what the console, ``flowc runs`` and answer errors show."""
    import json

    return " | ".join(json.dumps(c, ensure_ascii=False) for c in choices)


def value_text(value: Any) -> str:
    """One answer as JSON (``"shipp"``, ``3``), as a `.flow` would write it."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def finite_only(value: Any) -> Any:
    """A JSON-like value with every NaN or infinity (which JSON cannot hold) replaced by
    ``None`` — what every JSON writer of agentflow writes for them (``null``: stdout's
    ``--json``, the trace, the cassette, OpenTelemetry attributes; docs/decisions.md "secrets at
    rest and valid traces").  Containers are copied; other values are returned as they are."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_only(v) for v in value]
    return value


def finite_dumps(value: Any, **kw: Any) -> str:
    """``json.dumps(value, **kw)`` that is always valid JSON: a NaN or infinity anywhere (also
    in what ``default=`` makes) is written as ``null`` (:func:`finite_only`), never as the bare
    ``NaN`` / ``Infinity`` token Python writes by default and JSON readers refuse.  The common
    case (no such number) costs one ``json.dumps``.  Raises TypeError / ValueError as
    ``json.dumps`` does for what it cannot write."""
    import json

    kw.pop("allow_nan", None)
    try:
        return json.dumps(value, allow_nan=False, **kw)
    except ValueError:
        default = kw.pop("default", None)
        plain = json.loads(json.dumps(value, default=default))  # NaN tokens read back as floats
        return json.dumps(finite_only(plain), allow_nan=False, **kw)


#: what console text must not send to a terminal raw: C0/C1 controls (ESC starts an escape
#: sequence that can recolour, clear or retitle the terminal; BEL, CR and BS ring or rewrite),
#: DEL, the Unicode line separators, lone surrogates (which no terminal encoding can hold) and
#: the text-direction controls (U+061C, U+200E/F, U+202A-E, U+2066-9: "Trojan Source" reordering)
_CONTROL = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_CONTROL_BUT_LINES = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` fit for a terminal: every control character shown as its ``\\xNN``/``\\uNNNN``
    escape (``"\\x1b[2J"``), so text from a tool, a model, an answer, an exception or a file
    can neither recolour, clear, retitle nor rewrite the console, nor reorder what it shows
    (a text-direction control, U+202E …, is escaped too). With ``lines`` a newline
    (``\\n``), a tab and the Unicode line separators U+2028/U+2029 are kept (a message of
    several lines); else the result is one line.
    Idempotent: the result holds no control character (docs/decisions.md "console text is
    escaped everywhere")."""
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: ascii(m.group())[1:-1], text)


#: what XML 1.0 cannot hold at all, not even as a character reference: C0 controls but tab,
#: newline and carriage return, lone surrogates, U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` escaped for XML character data (``&``, ``<``, ``>``), every character XML 1.0
    forbids shown as its ``\\xNN`` escape (a test's name with an ESC in it: a JUnit file that
    still parses; docs/decisions.md "console text is escaped everywhere")."""
    from xml.sax.saxutils import escape

    return escape(_NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text))


def xml_attribute(text: str) -> str:
    """``text`` as a quoted XML attribute value (quotes included), as :func:`xml_text`."""
    from xml.sax.saxutils import quoteattr

    return quoteattr(_NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text))


#: characters of one text shown in an HTML page (a report, an eval page, `flowc ui`) before it is
#: cut; a longer one ends with `… [N characters]`
HTML_CHARS = 20_000
#: what an HTML page shows as its ``\xNN`` escape: C0 controls but tab, newline and carriage
#: return (which a page shows as space and line breaks), DEL and the C1 controls — a NUL a
#: browser drops, the rest invisible or a parse error, so text holding them is shown as it is
_NOT_HTML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def html_text(value: Any, *, limit: int | None = HTML_CHARS) -> str:
    """``str(value)`` fit for an HTML page, in element content or in a double-quoted attribute
    value alike: ``&``, ``<``, ``>``, ``"``, ``'`` and the backtick written as character
    references (so no value can open or close a tag, an attribute, a comment or a script), each
    control character :data:`_NOT_HTML` names shown as its ``\\xNN`` escape (as the console
    shows it, :func:`visible`), and a text longer than ``limit`` characters cut with
    ``… [N characters]`` (None: never cut). Never for the inside of a ``<script>`` or
    ``<style>`` element: no page puts data there (docs/decisions.md "HTML pages escape every
    value")."""
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}… [{len(text)} characters]"
    if _NOT_HTML.search(text) is not None:
        text = _NOT_HTML.sub(lambda m: ascii(m.group())[1:-1], text)
    return html.escape(text, quote=True).replace("`", "&#96;")


def html_number(value: Any) -> str:
    """A count or an amount a page shows in a narrow, unwrapped cell (tokens, inferences): the
    number as Python writes it, or — a trace written by hand may hold anything there — the
    value as :func:`html_text` writes it, cut to its first 12 characters and ``…``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    return html_text(text if len(text) <= 12 else text[:12] + "…", limit=None)


#: The end of a :class:`json.JSONDecodeError`'s ``msg`` that Python's own ``str()`` completes
#: with the place (``Invalid control character at``, ``Unterminated string starting at``).
_DANGLING_AT = re.compile(r"\s+(?:starting\s+)?at$")


def json_error(error: Any) -> str:
    """The message of :class:`json.JSONDecodeError` ``error`` (its ``msg``) as a phrase of its
    own, which a caller puts its place after (``… at line 1 column 12``, ``(line 1 column
    12)``) or none: without the ``at`` / ``starting at`` Python ends some with before it adds
    the place itself (``Invalid control character at``), never ``… at at line 1``."""
    return _DANGLING_AT.sub("", str(error.msg))
