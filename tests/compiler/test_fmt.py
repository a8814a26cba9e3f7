"""`flowc fmt` (docs/spec/LANGUAGE.md §10): one canonical layout, comments kept, idempotent, and the
compiled plan is identical before and after (``meta.source`` aside)."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import REPO, TESTS

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.fmt import FormatError, format_source, tokenize


def _corpus() -> list[Path]:
    files: list[Path] = []
    for base in (TESTS, REPO / "src" / "agentflow" / "stdlib"):  # the spec examples included
        files.extend(sorted(base.rglob("*.flow")))
    out = []
    for f in files:
        try:
            format_source(f.read_text(encoding="utf-8"), str(f))
        except FormatError:
            continue  # files with syntax errors are not formatted
        out.append(f)
    return out


CORPUS = _corpus()


def _compilable(files: list[Path]) -> list[Path]:
    out = []
    for f in files:
        try:
            api.compile_source(f.read_text(encoding="utf-8"), f.name)
        except Exception:  # noqa: BLE001 - a file that does not compile is not formatted
            continue
        out.append(f)
    return out


COMPILABLE = _compilable(CORPUS)


_LOCATION = re.compile(r"\b[\w.-]+\.flow:\d+:\d+\b")


def _strip_source(value):
    """The plan without ``meta.source`` (and without the same ``file:line:col`` quoted in an
    outlined sub-plan's ``description``) and the expressions kept as written (``meta.text``,
    ``meta.stages[].text``), which are the only things layout may change."""
    if isinstance(value, str):
        return _LOCATION.sub("<loc>", value)
    if isinstance(value, dict):
        return {
            k: _strip_source(v)
            for k, v in value.items()
            if not (k == "source" and isinstance(v, str) and ".flow:" in v)
            and not (k == "text" and ("text_source" in value or "source" in value))
        }
    if isinstance(value, list):
        return [_strip_source(v) for v in value]
    return value


def _comments(text: str) -> list[str]:
    return [t.text.rstrip() for t in tokenize(text) if t.kind in ("comment", "doc", "block")]


def mangle(text: str, rnd: random.Random, add_blank_lines: bool = True) -> str:
    """Same program, different layout: random indentation, extra spaces between tokens where
    there was a space (or none where the tokens glue safely), extra blank lines (only inside
    existing runs of blank lines unless ``add_blank_lines``).  Lines inside
    multi-line tokens (``\"\"\"`` strings, block comments) are kept."""
    toks = tokenize(text)
    out: list[str] = []
    line_start = True
    for i, t in enumerate(toks):
        if t.kind == "nl":
            if add_blank_lines or (i and toks[i - 1].kind == "nl"):
                out.append("\n" * rnd.choice([1, 1, 1, 2, 3]))
            else:
                out.append("\n")
            line_start = True
            continue
        if line_start:
            out.append(" " * rnd.randrange(0, 9))
            line_start = False
        else:
            prev = toks[i - 1]
            gap = text[prev.end : t.start]
            if gap:
                out.append(" " * rnd.randrange(1, 4))
            else:
                out.append(" " * rnd.choice([0, 0, 1]) if _may_space(prev, t) else "")
        out.append(t.text)
    return "".join(out)


def _may_space(a, b) -> bool:
    # a space can be added between glued tokens except where the glue is lexical
    return not (a.kind in ("num",) or b.kind in ("num",)) and a.kind != "comment"


@pytest.fixture(scope="module")
def corpus():
    assert len(CORPUS) >= 8, CORPUS
    return CORPUS


def test_corpus_includes_examples_and_check_files(corpus):
    names = {p.name for p in corpus}
    assert "bug-triage.flow" in names
    assert any(p.parent.name == "check" for p in corpus)
    assert len(COMPILABLE) >= 4


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_idempotent_and_comments_kept(path: Path):
    text = path.read_text(encoding="utf-8")
    once = format_source(text, str(path))
    assert format_source(once, str(path)) == once
    assert _comments(once) == _comments(text)


@pytest.mark.parametrize("path", COMPILABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_plan_identical_after_fmt(path: Path):
    text = path.read_text(encoding="utf-8")
    before = api.compile_source(text, path.name).plan
    formatted = format_source(mangle(text, random.Random(7)), path.name)
    after = api.compile_source(formatted, path.name).plan
    assert _strip_source(after) == _strip_source(before)
    assert api.compile_source(format_source(text, path.name), path.name).plan is not None


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_layout_is_canonical(path: Path):
    """Any re-layout of the same tokens and line breaks formats to the very same text."""
    text = path.read_text(encoding="utf-8")
    canonical = format_source(text, str(path))
    for seed in range(3):
        assert format_source(mangle(text, random.Random(seed), False), str(path)) == canonical


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CORPUS), st.randoms(use_true_random=False))
def test_idempotent_on_random_layouts(path: Path, rnd: random.Random):
    text = mangle(path.read_text(encoding="utf-8"), rnd)
    once = format_source(text, str(path))
    assert format_source(once, str(path)) == once
    assert _comments(once) == _comments(text)


def test_exact_layout():
    messy = (
        "// header\n\n\n"
        "type  T{a:int,b : text?   @length( 1,80 )\n"
        "/// doc of c\n"
        "c:map<int>[]}\n"
        "stage s->T{\n"
        "let x=[1,2]   // trailing\n"
        "   let  y = -x.count+ (3*-1)\n"
        "require y>0\n"
        'else fail "neg ${ x [0] }"\n'
        "return {a:y,b:null,c:[]}\n\n\n"
        "}\n\n"
    )
    want = (
        "// header\n\n"
        "type T {\n"
        "  a: int, b: text? @length(1, 80)\n"
        "  /// doc of c\n"
        "  c: map<int>[]\n"
        "}\n"
        "stage s -> T {\n"
        "  let x = [1, 2]  // trailing\n"
        "  let y = -x.count + (3 * -1)\n"
        "  require y > 0\n"
        '    else fail "neg ${ x [0] }"\n'
        "  return { a: y, b: null, c: [] }\n"
        "}\n"
    )
    assert format_source(messy) == want
    assert format_source(want) == want


@pytest.mark.parametrize(
    "src",
    [
        "stage s -> int { return xs.count}\n",
        "stage s -> int { return xs.count }\n",
        "stage s -> int {\n  return xs.count}\n",
        "stage s -> int {return xs.count\n}\n",
    ],
)
def test_stage_body_braces_on_their_own_lines(src: str):
    """A stage body is laid out like the well-laid-out source, whatever the input layout."""
    want = "stage s -> int {\n  return xs.count\n}\n"
    assert format_source(src) == want
    assert format_source(want) == want


def test_multiline_blocks_close_on_their_own_line_and_one_liners_stay():
    src = (
        "stage s -> { a: int } {\n"
        "  if a { return { a: 1 } } else { return { a: 2 } }\n"
        "  if b {\n    return { a: 1 } } else { return { a: 2 } }\n"
        '  let r = agent(x) { task "t"\n    expect int }\n'
        "  return { a: r,\n    }\n"
        "}\n"
    )
    want = (
        "stage s -> { a: int } {\n"
        "  if a { return { a: 1 } } else { return { a: 2 } }\n"
        "  if b {\n    return { a: 1 }\n  } else { return { a: 2 } }\n"
        '  let r = agent(x) {\n    task "t"\n    expect int\n  }\n'
        "  return {\n    a: r,\n  }\n"
        "}\n"
    )
    assert format_source(src) == want
    assert format_source(want) == want


def test_triple_strings_and_block_comments_verbatim():
    text = (
        "stage s -> text {\n"
        "      /* keep\n"
        "         me */\n"
        '  return """\n'
        "      line one\n"
        "        ${input}\n"
        '      """\n'
        "}\n"
    )
    out = format_source(text)
    assert "/* keep\n         me */" in out
    assert '"""\n      line one\n        ${input}\n      """' in out
    assert format_source(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "type T { a: int /* inline */, b: text }\n",
        "type U {\n  a: int /* c1 */,\n  b: text\n}\n",
        "stage t -> int {\n  return max([1 /* one */, 2])\n}\n",
        "stage u -> int {\n  return max(/* xs */ [1, 2] /* end */)\n}\n",
    ],
)
def test_an_inline_block_comment_stays_against_the_comma_or_bracket_it_was_written_by(text):
    assert format_source(text) == text
    assert format_source("type T { a: int /* inline */ , b: text }\n") == (
        "type T { a: int /* inline */, b: text }\n"
    )


def test_trailing_comments_align_in_runs():
    text = "type A {\n  a: int // one\n  long_name: text // two\n\n  c: int // three\n}\n"
    assert format_source(text) == (
        "type A {\n  a: int           // one\n  long_name: text  // two\n\n  c: int  // three\n}\n"
    )


def test_syntax_error_is_not_formatted():
    with pytest.raises(FormatError) as e:
        format_source("stage s {\n  let = 1\n}\n", "bad.flow")
    assert "bad.flow:2:" in str(e.value)


def test_cli_fmt_check_and_write(tmp_path: Path):
    f = tmp_path / "a.flow"
    f.write_text("stage s->int{\nreturn 1+2\n}\n", encoding="utf-8")
    good = tmp_path / "b.flow"
    good.write_text("stage s -> int {\n  return 1\n}\n", encoding="utf-8")
    runner = CliRunner()
    r = runner.invoke(main, ["fmt", "--check", str(tmp_path)])
    assert r.exit_code == 1
    assert "a.flow: would reformat" in r.output
    assert f.read_text() == "stage s->int{\nreturn 1+2\n}\n"
    r = runner.invoke(main, ["fmt", str(f), str(good)])
    assert r.exit_code == 0, r.output
    assert f.read_text() == "stage s -> int {\n  return 1 + 2\n}\n"
    r = runner.invoke(main, ["fmt", "--check", str(tmp_path)])
    assert r.exit_code == 0
    bad = tmp_path / "c.flow"
    bad.write_text("stage {", encoding="utf-8")
    r = runner.invoke(main, ["fmt", str(bad)])
    assert r.exit_code == 1
    assert "c.flow:1:" in r.output
    assert "Traceback" not in r.output


def test_cli_fmt_diff_prints_a_unified_diff_writes_nothing_and_exits_1(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.flow").write_text("stage s->int{\nreturn 1+2\n}", encoding="utf-8")
    (tmp_path / "b.flow").write_text("stage s -> int {\n  return 1\n}\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["fmt", "--diff", "a.flow", "b.flow"])
    assert r.exit_code == 1
    assert r.stdout == (
        "--- a.flow\n"
        "+++ a.flow\n"
        "@@ -1,3 +1,3 @@\n"
        "-stage s->int{\n"
        "-return 1+2\n"
        "-}\n"
        "\\ No newline at end of file\n"
        "+stage s -> int {\n"
        "+  return 1 + 2\n"
        "+}\n"
    )
    assert "a.flow: would reformat" in r.stderr and "b.flow" not in r.stderr
    assert (tmp_path / "a.flow").read_text() == "stage s->int{\nreturn 1+2\n}"  # unchanged
    # patch(1) applies it as it is, giving what `flowc fmt` writes
    subprocess.run(["patch", "-s", "-p0"], input=r.stdout, text=True, check=True)
    assert (tmp_path / "a.flow").read_text() == "stage s -> int {\n  return 1 + 2\n}\n"
    # a canonical file has no diff and exits 0
    assert api.format_flow_diff("b.flow") == ""
    r = CliRunner().invoke(main, ["fmt", "--diff", "b.flow"])
    assert r.exit_code == 0 and r.stdout == ""


def test_a_tolerated_percentage_is_written_against_its_number():
    src = "stage s {\n  map [1] as x limit 2 tolerate 20  % { x }\n}\n"
    out = format_source(src)
    assert "limit 2 tolerate 20% { x }" in out
    assert "a % b" in format_source("stage s {\n  let a = 1\n  let b = 2\n  a%b\n}\n")


def test_a_try_block_and_an_outcome_type_are_formatted_like_the_rest():
    src = (
        "stage s -> Outcome<int>[] {\n  let r:Outcome< int >[] = map [1] as x tolerate 1 { x }\n"
        "  try{\n  let a = r.errors\n  a.count\n  }catch on [ timeout ,tool_error ] as e{ 0 }\n"
        "  return r\n}\n"
    )
    out = format_source(src)
    assert "let r: Outcome<int>[] = map" in out
    assert (
        "  try {\n    let a = r.errors\n    a.count\n  } catch on [timeout, tool_error] as e { 0 }\n"
        in out
    )
    assert format_source(out) == out


def test_a_loop_is_formatted_like_the_rest():
    src = (
        "type S { n: int, done: bool }\nstage s -> S {\n"
        "  loop   up  to 3 as r,st:S={n:0,done:false}{\n  return {n:st.n+r,done:st.n>2}\n"
        '  }   until st.done   else   fail "never"\n}\n'
    )
    out = format_source(src)
    assert (
        "  loop up to 3 as r, st: S = { n: 0, done: false } {\n"
        "    return { n: st.n + r, done: st.n > 2 }\n"
        '  } until st.done else fail "never"\n' in out
    )
    assert format_source(out) == out


def test_a_call_of_a_tool_named_sleep_keeps_no_space_and_the_statement_keeps_one():
    # a space after `sleep` at a statement's start would make a call the `sleep` statement
    src = (
        'extern tool "ops__sleep" as sleep (n: int) -> int\ninput { wait: duration }\n'
        "stage a -> int {\n  let x = sleep (n: 1)\n  sleep(n: 2)\n  sleep    (input.wait)\n"
        "  if true {sleep 1s}\n  return x + sleep (n: 3)\n}\n"
    )
    out = format_source(src)
    assert out == (
        'extern tool "ops__sleep" as sleep(n: int) -> int\ninput { wait: duration }\n'
        "stage a -> int {\n  let x = sleep(n: 1)\n  sleep(n: 2)\n  sleep (input.wait)\n"
        "  if true { sleep 1s }\n  return x + sleep(n: 3)\n}\n"
    )
    assert format_source(out) == out


def test_a_trailing_comma_closed_on_its_line_is_dropped_one_before_a_line_break_stays():
    src = 'import { Review, Order, } from "./t.flow"\nstage s -> int[] {\n  return [1, 2, ]\n}\n'
    out = format_source(src)
    assert (
        out == 'import { Review, Order } from "./t.flow"\nstage s -> int[] {\n  return [1, 2]\n}\n'
    )
    tall = "stage s -> int[] {\n  return [\n    1,\n    2,\n  ]\n}\n"
    assert format_source(tall) == tall


def test_a_match_arms_value_on_the_next_line_stays_one_level_deeper_than_the_arm():
    text = (
        "input { sev: text }\nstage s -> int {\n  return match input.sev {\n"
        '    "high" =>\n2,\n    "low" =>  // the least\n        1,\n    _ => 0,\n  }\n}\n'
    )
    want = (
        "input { sev: text }\nstage s -> int {\n  return match input.sev {\n"
        '    "high" =>\n      2,\n    "low" =>  // the least\n      1,\n    _ => 0,\n  }\n}\n'
    )
    assert format_source(text) == want
    assert format_source(want) == want
