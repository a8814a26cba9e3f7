"""Splitting a document into top-level chunks for incremental parsing: the language server
rescans only around each edit, and must always find what a whole scan finds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentflow.lsp.incremental import _Chunker, split_chunks

ROOT = Path(__file__).resolve().parent.parent.parent
CORPUS = sorted(ROOT.glob("tests/**/*.flow")) + sorted(ROOT.glob("examples/**/*.flow"))

SOURCE = """\
flow f
/// A thing.
type T { a: int }

// about s
stage s -> int {
  return 1
}
  stage t -> text { return "${ {x: "}"}.x }" }
"""


def test_chunks_start_at_line_initial_top_level_keywords_with_their_comments():
    starts = split_chunks(SOURCE)
    assert [SOURCE[i : SOURCE.index("\n", i)] for i in starts] == [
        "flow f",
        "/// A thing.",
        "",  # the blank line and `// about s` belong to `stage s`
        '  stage t -> text { return "${ {x: "}"}.x }" }',
    ]


@pytest.mark.parametrize(
    "text",
    ['stage s -> text {\n  return "abc\n}\n', "stage s {\n  return (1\n}\n", "}\nstage s {}\n"],
)
def test_text_that_does_not_tokenize_or_balance_is_not_split(text: str):
    assert split_chunks(text) is None
    chunker = _Chunker()
    assert chunker.split(SOURCE) == split_chunks(SOURCE)
    assert chunker.split(text) is None
    assert chunker.split(SOURCE) == split_chunks(SOURCE)


def test_an_edit_that_opens_a_string_changes_every_chunk_after_it():
    chunker = _Chunker()
    chunker.split(SOURCE)
    opened = SOURCE.replace("a: int", 'a: "int', 1)
    assert chunker.split(opened) is None and split_chunks(opened) is None
    chunker.split(SOURCE)
    block = SOURCE.replace("// about s", "/* about s", 1).replace("  return 1\n}\n", "  }\n*/\n")
    assert chunker.split(block) == split_chunks(block)
    assert len(split_chunks(block)) == len(split_chunks(SOURCE)) - 1


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_rescanning_around_edits_finds_what_a_whole_scan_finds(path: Path):
    pieces = ["{", "}", "(", ")", '"', '"""', "${", "stage ", "\ntype t = int\n", "type ", "\n"]
    pieces += ["x", ".", "let y = ", "// c", "\n// c\n", "/*", "*/", " ", "  ", "\\"]
    text = path.read_text(encoding="utf-8")
    rnd = random.Random(path.name)
    chunker = _Chunker()
    for _ in range(40):
        assert chunker.split(text) == split_chunks(text)
        i = rnd.randrange(len(text) + 1)
        if rnd.random() < 0.6:
            text = text[:i] + rnd.choice(pieces) + text[i:]
        else:
            text = text[:i] + text[i + rnd.randrange(1, 6) :]
