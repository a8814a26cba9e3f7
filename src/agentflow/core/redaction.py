"""The one redaction layer: every configured secret kept out of every output (issue 16).

Secrets are registered when they are read — API keys by the configuration, ``${VAR}`` values
given to MCP servers when they are expanded, and, at CLI and language-server start, the values of
environment variables named like credentials (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*_PASSWORD``, …). Every boundary where text leaves the process calls :func:`redact` (text) or
:func:`redact_data` (JSON-able data, before it is serialised): stderr and stdout of the CLI, the
``--json`` output, the trace, the cassette, the language server's log, error messages, an MCP
server's stderr. Redaction comes before any truncation, and removes every run of
:data:`MIN_RUN` or more consecutive characters of a secret (also in its JSON-escaped form), so a
key cut short by a length cap, or quoted in part, is removed as well: each such run becomes
``***``. A secret of :data:`MIN_SHORT` to ``MIN_RUN - 1`` characters (``abc12``) is removed
where it stands whole, as a token (no letter or digit either side); one that is a word
(ASCII letters of one case, or capitalised: ``admin``, ``None``) is not registered, nor is
one under ``MIN_SHORT`` characters: those cannot be told from ordinary text
(docs/decisions.md "Short secrets").

Only the standard library is imported (bottom layer).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

#: The shortest run of a secret's characters that is removed; values shorter than this are not
#: registered (they cannot be told from ordinary words).
MIN_RUN = 8
#: The shortest secret registered at all; one of MIN_SHORT … MIN_RUN - 1 characters is removed
#: where it occurs whole, as a token (:meth:`Secrets.add`).
MIN_SHORT = 4
MASK = "***"
#: Environment variables whose values count as secrets without being named by a configuration.
_CREDENTIAL_NAME = re.compile(
    r"(?i)(?:^|_)(?:API_?KEY|TOKEN|SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD|PASSWD|CREDENTIALS?)$"
)
#: Anchors are 4-grams at offsets 0, 4, 8, …: any run of 8 characters of a secret contains one.
_ANCHOR = MIN_RUN // 2


class _Secret:
    __slots__ = ("text", "anchors")

    def __init__(self, text: str) -> None:
        self.text = text
        last = len(text) - _ANCHOR
        offsets = list(range(0, last + 1, _ANCHOR))
        if offsets[-1] != last:
            offsets.append(last)  # the tail: a run ending at the last character
        self.anchors = tuple((k, text[k : k + _ANCHOR]) for k in offsets)


class Secrets:
    """A set of secret strings and the redaction of text against them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: frozenset[str] = frozenset()
        self._secrets: tuple[_Secret, ...] = ()
        #: the short secrets' forms as whole tokens (one alternation), None while there is none
        self._short: re.Pattern[str] | None = None
        self._short_forms: frozenset[str] = frozenset()

    def add(self, value: object) -> None:
        """Register ``value`` without surrounding whitespace (and its JSON- and
        backslash-escaped forms when they differ).  A value of :data:`MIN_RUN` characters or
        more is removed by runs; one of :data:`MIN_SHORT` to ``MIN_RUN - 1`` characters only
        whole, as a token, and not at all when it is a word (ASCII letters of one case, or
        capitalised);
        shorter values and non-strings are ignored."""
        if not isinstance(value, str):
            return
        value = value.strip()  # surrounding whitespace (a key file's newline) is not secret
        if len(value) < MIN_SHORT:
            return
        forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
        forms.add(value.encode("unicode_escape").decode("ascii"))
        if len(value) < MIN_RUN and _is_word(value):
            return  # `admin`: every output holds such words for its own reasons
        new = forms - self._known
        if not new:
            return
        with self._lock:
            new -= self._known
            self._known = self._known | new
            self._secrets = self._secrets + tuple(
                _Secret(f) for f in sorted(new) if len(f) >= MIN_RUN
            )
            short = self._short_forms | {f for f in new if len(f) < MIN_RUN}
            if short != self._short_forms:
                self._short_forms = frozenset(short)
                self._short = re.compile(
                    "|".join(_token(f) for f in sorted(short, key=len, reverse=True))
                )

    def __bool__(self) -> bool:
        return bool(self._secrets) or self._short is not None

    def __contains__(self, value: object) -> bool:
        return value in self._known

    def clear(self) -> None:
        """Forget every secret (tests)."""
        with self._lock:
            self._known = frozenset()
            self._secrets = ()
            self._short = None
            self._short_forms = frozenset()

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Sorted, merged ``(start, end)`` ranges of ``text`` that are runs of ≥ MIN_RUN
        characters of some secret, or a short secret standing whole."""
        found: list[tuple[int, int]] = []
        n = len(text)
        short = self._short
        if short is not None and n >= MIN_SHORT:
            found.extend(m.span() for m in short.finditer(text))
        if n < MIN_RUN:
            return found
        for secret in self._secrets:
            s, m = secret.text, len(secret.text)
            for k, anchor in secret.anchors:
                p = text.find(anchor)
                while p != -1:
                    a = 0  # extend to the left …
                    while a < p and a < k and text[p - a - 1] == s[k - a - 1]:
                        a += 1
                    b = _ANCHOR  # … and to the right
                    while p + b < n and k + b < m and text[p + b] == s[k + b]:
                        b += 1
                    if a + b >= MIN_RUN and not _word_like(text[p - a : p + b], m):
                        found.append((p - a, p + b))
                    p = text.find(anchor, p + 1)
        if not found:
            return found
        found.sort()
        merged = [found[0]]
        for start, end in found[1:]:
            if start <= merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        return merged

    def redact(self, text: str, mask: str = MASK) -> str:
        """``text`` with every run of ≥ MIN_RUN characters of a secret, and every short secret
        standing whole, replaced by ``mask``."""
        if not self or not isinstance(text, str):
            return text
        spans = self.spans(text)
        if not spans:
            return text
        out: list[str] = []
        at = 0
        for start, end in spans:
            out.append(text[at:start])
            out.append(mask)
            at = end
        out.append(text[at:])
        return "".join(out)

    def redact_data(self, value: Any) -> Any:
        """``value`` (JSON-able data) with :meth:`redact` applied to every string in it, keys
        included; containers are copied only where something changed."""
        if not self:
            return value
        if isinstance(value, str):
            return self.redact(value)
        try:  # one scan of the whole serialised value: the common case finds nothing
            blob = json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            blob = None
        if blob is not None and not self.spans(blob):
            return value
        return _walk(value, self.redact)


#: A part of a secret shorter than this that is one word of one case (``required`` of the
#: placeholder key ``sk-no-key-required``) is ordinary text, not the secret's: kept.
WORD_RUN = 16


def _token(form: str) -> str:
    """The pattern of ``form`` standing whole: no word character before a word character at
    its start, nor after one at its end."""
    head = r"(?<!\w)" if re.match(r"\w", form[0]) else ""
    tail = r"(?!\w)" if re.match(r"\w", form[-1]) else ""
    return head + re.escape(form) + tail


def _is_word(text: str) -> bool:
    """ASCII letters of one case, or capitalised (``None``, ``True``): a word of ordinary
    text."""
    return (
        text.isascii() and text.isalpha() and (text.islower() or text.isupper() or text.istitle())
    )


def _word_like(run: str, whole: int) -> bool:
    """True for a run that is only part of its secret (``whole`` characters long), shorter
    than :data:`WORD_RUN`, and letters of one case: a word, which text holds for its own
    reasons (docs/decisions.md "secrets: words are not parts of a key").  A run with a digit,
    a sign or mixed case, a long run and the whole secret are always removed."""
    return (
        len(run) < min(whole, WORD_RUN)
        and run.isascii()
        and run.isalpha()
        and (run.islower() or run.isupper())
    )


def _walk(value: Any, fn: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return fn(value)
    if depth > 200:  # pathological nesting: fall back to its text
        return fn(repr(value))
    if isinstance(value, Mapping):
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            nk = fn(k) if isinstance(k, str) else k
            nv = _walk(v, fn, depth + 1)
            changed = changed or nk is not k or nv is not v
            out[nk] = nv
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [_walk(v, fn, depth + 1) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            return items if isinstance(value, list) else tuple(items)
        return value
    return value


#: The process-wide registry every boundary uses.
SECRETS = Secrets()


def register_secret(value: object) -> None:
    """Register ``value`` as a secret of this process (see :meth:`Secrets.add`)."""
    SECRETS.add(value)


def register_secrets(values: Iterable[object]) -> None:
    """Register each of ``values``."""
    for value in values:
        SECRETS.add(value)


#: A URL query parameter whose value is a credential (``?api-key=…``, ``&token=…``,
#: ``&password=…``, Azure's ``sig=``): its name, then its value.
_CREDENTIAL_PARAM = re.compile(
    r"(?i)([?&](?:[a-z0-9_.-]*?(?:api[-_]?key|token|secret|password|passwd|pwd)|key|sig|code)=)"
    r"([^&#]*)"
)


def url_credentials(url: str) -> list[str]:
    """The credentials written into ``url``: the password of its user part
    (``http://user:PASSWORD@host``; the user name too when no password follows it, as a token
    alone is often written so) and the values of credential-named query parameters
    (:data:`_CREDENTIAL_PARAM`)."""
    found: list[str] = []
    if "://" not in url:
        return found
    rest = url.split("://", 1)[1]
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    netloc, tail = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
    if "@" in netloc:
        creds = netloc.rsplit("@", 1)[0]
        user, colon, password = creds.partition(":")
        found.append(password if colon else user)
    found += [m.group(2) for m in _CREDENTIAL_PARAM.finditer(tail)]
    return [f for f in found if f]


def register_url(url: str | None) -> None:
    """Register the credentials written into ``url`` (:func:`url_credentials`) as secrets: a
    ``base_url`` or endpoint with ``user:password@`` or ``?api-key=…`` never shows them in any
    output (docs/reference/configuration.md "Secrets")."""
    if url:
        for value in url_credentials(url):
            SECRETS.add(value)


def safe_url(url: str) -> str:
    """``url`` as it may be shown: the password of its user part is ``***``
    (``http://user:***@host``), and so are credential-named query parameters' values
    (``?api-key=***``); a URL with none is shown as given."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    netloc, tail = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
    if "@" in netloc:
        creds, host = netloc.rsplit("@", 1)
        if ":" in creds:
            creds = f"{creds.split(':', 1)[0]}:{MASK}"
        netloc = f"{creds}@{host}"
    tail = _CREDENTIAL_PARAM.sub(lambda m: m.group(1) + MASK, tail)
    return f"{scheme}://{netloc}{tail}"


def register_environment(env: Mapping[str, str] | None = None) -> None:
    """Register the values of environment variables named like credentials (names ending in
    ``API_KEY``, ``_TOKEN``, ``_SECRET``, ``_ACCESS_KEY``, ``_PASSWORD``, ``_CREDENTIALS``) of
    ``env`` (default ``os.environ``) — except a value that names an existing file or directory
    by its absolute path (``GOOGLE_APPLICATION_CREDENTIALS``, the path of a key file):
    the secret is in the file, and its path is the user's home and project directories, which
    every workspace path would share (docs/reference/configuration.md "Secrets")."""
    for name, value in (os.environ if env is None else env).items():
        if _CREDENTIAL_NAME.search(name) and not _names_a_file(value):
            SECRETS.add(value)


def _names_a_file(value: str) -> bool:
    """Whether ``value`` is the absolute path of something that exists (not a secret: where one
    is kept)."""
    text = value.strip()
    if not text or not os.path.isabs(text) or "\n" in text:
        return False
    try:
        return os.path.exists(text)
    except (OSError, ValueError):  # too long a name, a NUL: not a path
        return False


def redact(text: str) -> str:
    """``text`` with every run of ≥ :data:`MIN_RUN` characters of a registered secret replaced
    by ``***``."""
    return SECRETS.redact(text)


def redact_data(value: Any) -> Any:
    """JSON-able ``value`` with every string in it passed through :func:`redact`."""
    return SECRETS.redact_data(value)


class RedactingStream:
    """A text stream wrapper that redacts what is written to it, line by line (a secret split
    across two ``write`` calls of one line is still caught). Everything else is delegated to the
    wrapped stream; ``flush()`` writes a pending partial line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            return self._stream.write(text)
        with self._lock:
            data = self._pending + text
            cut = data.rfind("\n") + 1
            self._pending = data[cut:]
            if len(self._pending) > 65536:  # no newline for long: write what there is
                cut, self._pending = len(data), ""
            if cut:
                self._stream.write(redact(data[:cut]))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._stream.write(redact(self._pending))
                self._pending = ""
        self._stream.flush()

    @property
    def wrapped(self) -> Any:
        """The stream written to."""
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
