"""The scanner's raw mode (grammar.scanner.lex / comments): the one lexer the formatter and the
language server read, so it must tokenize exactly like the parser does, keep comments as
trivia, and survive any half-typed text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.scanner import COMMENTS, TRIVIA, Scanner, SynErr, comments, lex

ROOT = Path(__file__).resolve().parent.parent.parent
#: every .flow file of the repository (tests, examples, the prelude)
CORPUS = sorted(ROOT.glob("tests/**/*.flow")) + sorted(ROOT.glob("examples/**/*.flow"))
CORPUS += sorted(ROOT.glob("src/agentflow/stdlib/*.flow"))


def _clean(text: str) -> bool:
    from agentflow.grammar.parser import parse_module

    return not parse_module(text, "c.flow")[1]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_raw_tokens_cover_the_text_with_only_blanks_between(path: Path):
    text = path.read_text(encoding="utf-8")
    try:
        toks = list(lex(text))
    except SynErr:
        pytest.skip("an unterminated string or comment (a hostile input)")
    at = 0
    for t in toks:
        assert text[at : t.start].strip(" \t\r\f\v\ufeff") == "", (t, text[at : t.start])
        assert t.value == text[t.start : t.end]
        at = t.end
    assert text[at:].strip(" \t\r\f\v\ufeff") == ""


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_raw_tokens_are_the_parsers_tokens_for_a_valid_program(path: Path):
    text = path.read_text(encoding="utf-8")
    if not _clean(text):
        pytest.skip("not a valid program")
    parsed = Scanner(text, 0, len(text), "p.flow", 1, 0, 0, driver=DRIVER).tokens()
    raw = [t for t in lex(text) if t.type not in TRIVIA]
    assert [(t.type, t.start, t.end, t.line, t.column, t.end_line, t.end_column) for t in raw] == [
        (t.type, t.start, t.end, t.line, t.column, t.end_line, t.end_column) for t in parsed
    ]


def test_comments_and_line_breaks_are_trivia():
    text = '/// doc\nstage s { // note\n  /* a\n  b */ return "// not a comment"\n}\n'
    kinds = [(t.type, t.value) for t in lex(text)]
    assert kinds[:4] == [("DOC", "/// doc"), ("NL", "\n"), ("STAGE", "stage"), ("NAME", "s")]
    assert ("COMMENT", "// note") in kinds and ("BLOCK", "/* a\n  b */") in kinds
    assert ("STRING", '"// not a comment"') in kinds
    block = next(t for t in lex(text) if t.type == "BLOCK")
    assert (block.line, block.column, block.end_line, block.end_column) == (3, 3, 4, 7)
    assert [t.type for t in lex(text, trivia=False)] == [
        "STAGE", "NAME", "LBRACE", "RETURN", "STRING", "RBRACE"
    ]  # fmt: skip
    assert [c.type for c in comments(text)] == ["DOC", "COMMENT", "BLOCK"]
    assert {t.type for t in lex(text)} - TRIVIA and COMMENTS <= TRIVIA


def test_a_string_token_spans_its_interpolations():
    text = 'let a = "x ${ {b: "}"}.b } y" + """\n  ${f("${g}")}\n  """ + "${c.d}"'
    strings = [t.value for t in lex(text) if t.type == "STRING"]
    assert strings == ['"x ${ {b: "}"}.b } y"', '"""\n  ${f("${g}")}\n  """', '"${c.d}"']
    tail = [t for t in lex(text) if t.type == "STRING"][1]
    assert (tail.line, tail.end_line, tail.end_column) == (1, 3, 6)


def test_raw_mode_is_lenient_with_half_typed_text():
    text = "stage s { let x = (1 + ] ; 12abc ☃ }} 1" + "0" * 200
    toks = list(lex(text))
    assert [t.type for t in toks if t.type in ("ERROR", "BADNUM")] == ["ERROR", "BADNUM", "ERROR"]
    assert toks[-1].type == "NUMBER" and len(toks[-1].value) == 201
    assert [t.value for t in lex("a[(}")] == ["a", "[", "(", "}"]
    assert [t.value for t in lex('"\\q \\u{zz}"')] == ['"\\q \\u{zz}"']  # escapes not decoded


@pytest.mark.parametrize(
    "text",
    ['let x = "abc', 'let x = """abc\n', 'let x = "a ${b', 'let x = "a ${ {c: 1 }"', "/* open"],
)
def test_raw_mode_raises_only_for_unterminated_strings_and_comments(text: str):
    with pytest.raises(SynErr):
        list(lex(text))
    assert comments(text) == []


def test_an_unclosed_bracket_in_an_interpolation_ends_at_the_first_free_brace():
    assert [t.value for t in lex('"a ${ b( } c" d')] == ['"a ${ b( } c"', "d"]


def test_lex_from_an_offset_reports_real_lines_and_columns():
    text = "flow f\n\nstage s {\n  return 1\n}\n"
    toks = list(lex(text, pos=text.index("stage"), trivia=False))
    assert [(t.value, t.line, t.column) for t in toks][:2] == [("stage", 3, 1), ("s", 3, 7)]
    assert all(t.bol == (t.value in ("stage", "return", "}")) for t in toks)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list('ab "$\\{}()[]/*\n1.x`:-') + ['"""', "${", "//"])))
def test_raw_mode_never_fails_otherwise(pieces: list[str]):
    text = "".join(pieces)
    try:
        toks = list(lex(text))
    except SynErr as e:
        assert e.span.start <= len(text)
        return
    assert all(t.value == text[t.start : t.end] for t in toks)
