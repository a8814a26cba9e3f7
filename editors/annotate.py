"""Annotate a `.flow` sample for `vscode-tmgrammar-test`: below each line, one assertion line per
token whose scope the sample pins — every keyword in keyword position (the scope
`editors/generate.py` gives its role), every keyword used as a name (after `.`, before `:`: no
keyword scope), and the constructs listed in ``CONSTRUCTS``.

    python editors/annotate.py SAMPLE.flow > editors/vscode/tests/SAMPLE.flow

Written once per sample by hand-checking its output; the committed annotated files are what
`vscode-tmgrammar-test` checks the generated grammar against.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import keyword_groups  # noqa: E402

from agentflow.core import vocabulary as V  # noqa: E402
from agentflow.core.functions import FUNCTIONS  # noqa: E402

SCOPE_OF = {w: scope for scope, words in keyword_groups().items() for w in words}
#: (regular expression, group, scope) of the constructs the samples pin besides keywords
CONSTRUCTS = [
    (r"^\s*(///.*)$", 1, "comment.line.documentation.flow"),
    (r"(?<!/)(//(?!/).*)$", 1, "comment.line.double-slash.flow"),
    (r"\b(flow)\s+([A-Za-z_]\w*)", 2, "entity.name.namespace.flow"),
    (r"\b(stage)\s+([A-Za-z_]\w*)", 2, "entity.name.function.flow"),
    (r"\b(type)\s+([A-Za-z_]\w*)", 2, "entity.name.type.flow"),
    (r"\b(let)\s+([A-Za-z_]\w*)", 2, "variable.other.declaration.flow"),
    (r"(@(?:range|length|pattern|format))\b", 1, "storage.modifier.annotation.flow"),
    (r"\b(map)<", 1, "support.type.builtin.flow"),
    (r"\b((?:[0-9]+(?:ms|h|m|s))+)\b", 1, "constant.numeric.duration.flow"),
    (r"(?<![\w.])([0-9]+)(?![0-9a-z.])", 1, "constant.numeric.flow"),
    (r"(\$\{)", 1, "punctuation.section.interpolation.begin.flow"),
    (r'(""")', 1, "string.quoted.triple.flow"),
    (r"(\\(?:u\{[0-9A-Fa-f]+\}|[\"\\nt$]))", 1, "constant.character.escape.flow"),
    (r"(/\*.*?\*/)", 1, "comment.block.flow"),
    (r"(?<=\.)([a-z_]\w*)", 1, "variable.other.property.flow"),
    (r"(\?\?)", 1, "keyword.operator.flow"),
    (r"(->)", 1, "keyword.operator.arrow.flow"),
    (r"(\.\.)", 1, "keyword.operator.range.flow"),
    (r"(==|!=|>=|<=)", 1, "keyword.operator.flow"),
]


def code_spans(line: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` columns of ``line`` outside strings and comments (one line: a
    triple-quoted string is assumed to close on its line in the samples)."""
    spans, i, start = [], 0, 0
    while i < len(line):
        if line.startswith("//", i):
            break
        if line.startswith('"""', i):
            spans.append((start, i))
            end = line.find('"""', i + 3)
            i = len(line) if end < 0 else end + 3
            start = i
            continue
        if line[i] == '"':
            spans.append((start, i))
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            start = i
            continue
        i += 1
    spans.append((start, min(i, len(line))))
    return [(a, b) for a, b in spans if a < b]


def assertion(col: int, length: int, scope: str) -> str:
    if col < 2:  # carets cannot reach under the comment token: the `<-` form (from column 0)
        assert col == 0, (col, scope)
        return "// <" + "-" * length + " " + scope
    return "//" + " " * (col - 2) + "^" * length + " " + scope


def annotate(text: str, title: str) -> str:
    out = [f'// SYNTAX TEST "source.flow" "{title}"']
    for line in text.splitlines():
        out.append(line)
        found: list[tuple[int, int, str]] = []
        for a, b in code_spans(line):
            for m in re.finditer(r"[A-Za-z_]\w*", line[a:b]):
                col, word = a + m.start(), m.group()
                if line[:col].endswith("@"):  # a constraint: CONSTRUCTS
                    continue
                if re.search(r"\b(let|as)\s+$", line[:col]):  # a name being declared
                    found.append((col, len(word), "variable.other.declaration.flow"))
                    continue
                if word not in V.KEYWORDS:
                    if word in FUNCTIONS and line[a + m.end() :].lstrip().startswith("("):
                        found.append((col, len(word), "support.function.builtin.flow"))
                    elif word in V.BUILTIN_TYPES:
                        found.append((col, len(word), "support.type.builtin.flow"))
                    continue
                before = line[:col].rstrip()
                after = line[col + len(word) :].lstrip()
                if before.endswith(".") or (after.startswith(":")):
                    found.append((col, len(word), "source.flow - keyword"))
                elif word == "map" and after.startswith("<"):
                    continue  # a type: CONSTRUCTS
                else:
                    found.append((col, len(word), SCOPE_OF[word]))
        for pattern, group, scope in CONSTRUCTS:
            for m in re.finditer(pattern, line):
                col = m.start(group)
                inside_code = any(a <= col < b for a, b in code_spans(line))
                if scope.startswith(
                    ("comment", "string", "punctuation.section.interpolation", "constant.char")
                ):
                    inside_code = True
                if inside_code and not any(c == col for c, _, _ in found):
                    found.append((col, m.end(group) - col, scope))
        for col, length, scope in sorted(found):
            out.append(assertion(col, length, scope))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    path = Path(sys.argv[1])
    sys.stdout.write(annotate(path.read_text(encoding="utf-8"), path.stem))
