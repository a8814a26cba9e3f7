"""Hostile inputs for the never-crash tests and ``bench/fuzz_check.py`` (docs/spec/LANGUAGE.md §9:
"never crashes on any input (bytes, binary, huge, deeply nested)").

``HOSTILE`` maps a short name to raw bytes; ``mutate(src, rng)`` returns one random mutation of
a source text.  Both are deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import random

_PIECES = [
    "}", "{", "(", ")", "[", "]", '"', '"""', "${", "}}", "x", "agent", "let", "stage", "type",
    "[*]", ".", "?", "??", "..", "->", "|", "@range(", "\x00", "\n", "/*", "//", "\\", "$",
    "map", "filter", "where", "reduce", "as", ",", ":", "=", "not", "-", "1h", "0ms", "99999",
    "\ufeff", "\u202e", "é", "\t",
]  # fmt: skip

HOSTILE: dict[str, bytes] = {
    "nul-bytes": b"stage s -> int {\x00 return 1 \x00}\x00",
    "invalid-utf8": b"type A { x: \xff\xfe int }\nstage s -> A { return { x: \xc3\x28 } }",
    "binary": bytes(range(256)) * 4,
    "unbalanced-open": b"stage s -> int { return ((((((([[[[{{{{ 1",
    "unbalanced-close": b"stage s -> int { return 1 }}}}))))]]]] }",
    "deep-parens-10k": b"stage s -> int { return " + b"(" * 10_000 + b"1" + b")" * 10_000 + b" }",
    "deep-lists-10k": b"stage s -> json { return " + b"[" * 10_000 + b"]" * 10_000 + b" }",
    "deep-unclosed-10k": b"stage s -> json { return " + b"{" * 10_000,
    "deep-strings": b'stage s -> text { return "' + b'${"' * 2_000 + b"}" * 2_000 + b" }",
    "deep-not": b"stage s -> bool { return " + b"not " * 10_000 + b"true }",
    "deep-minus": b"stage s -> int { return " + b"-" * 10_000 + b"1 }",
    "long-operators": b"stage s -> int { return 1" + b" + 1" * 20_000 + b" }",
    "huge-number": b"stage s -> int { return " + b"9" * 100_000 + b" }",
    "huge-duration": b"deadline " + b"9" * 50_000 + b"h\n",
    "huge-string": b'stage s -> text { return "' + b"a" * 1_000_000 + b'" }',
    "huge-name": b"stage " + b"n" * 200_000 + b" -> int { return 1 }",
    "unterminated-string": b'stage s -> text { return "abc',
    "unterminated-triple": b'stage s -> text { return """\nabc',
    "unterminated-comment": b"stage s -> int { /* return 1 }",
    "many-items": b"type T { x: int }\n" * 5_000,
    "only-garbage": b"@@@ ### $$$ %%% ^^^ &&& ***",
    "trailing-backslash": b'stage s -> text { return "abc\\',
    "crlf-and-tabs": b"stage s -> int {\r\n\tlet x = (1 +\r\n\treturn x\r\n}\r\n",
}


def mutate(src: str, rng: random.Random) -> str:
    """One random mutation of ``src``: cut, duplicate, insert a token-ish piece, or flip a
    character, applied 1 to 4 times."""
    for _ in range(rng.randint(1, 4)):
        n = len(src)
        at = rng.randint(0, n)
        op = rng.randrange(4)
        if op == 0:
            src = src[:at] + src[at + rng.randint(1, 40) :]
        elif op == 1:
            j = min(n, at + rng.randint(1, 80))
            src = src[:j] + src[at:j] + src[j:]
        elif op == 2:
            src = src[:at] + rng.choice(_PIECES) + src[at:]
        elif n:
            src = src[:at] + chr(rng.randint(0, 0x2FF)) + src[at + 1 :]
    return src
