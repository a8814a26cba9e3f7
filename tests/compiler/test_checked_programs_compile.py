"""Every program that checks clean compiles (issue 15): programs that used to pass `flowc check`
and then fail `flowc compile` with an internal compiler error are now a diagnostic at check time
or a plan that validates; and every `.flow` file and docs example of the repository that checks
clean compiles (an internal compiler error in the corpus fails the suite; the fuzzers of
tests/robustness/test_never_crash.py and bench/fuzz_check.py compile their clean mutants the same
way)."""

from __future__ import annotations

import re

import pytest
from support.paths import REPO

from agentflow.api import CompileError, compile_checked
from agentflow.compiler.api import check_source, read_source


def test_an_empty_verify_is_an_invalid_value():
    src = "stage s {\n  verify { }\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert (diag.code, diag.message) == ("invalid-value", "an empty `verify` checks nothing")
    assert (diag.span.line, diag.span.column) == (2, 3)
    assert diag.hint == 'give it `check COND else "message"` and/or `judge "…"` items'


ALIAS_AS_VALUE = {
    "let": 'let who = inv\n  return agent(inv) { task "x" expect Out }',
    "field": 'let o = { team: dev }\n  return agent(inv) { task "x" expect Out }',
    "interpolation": 'return agent(inv) { task "ask ${inv}" expect Out }',
    "argument": 'let _r = read_file(path: "${dev}")\n  return agent(inv) { task "x" expect Out }',
}


@pytest.mark.parametrize("body", ALIAS_AS_VALUE.values(), ids=ALIAS_AS_VALUE.keys())
def test_a_use_alias_as_a_value_is_a_type_mismatch_not_an_internal_compiler_error(body):
    src = (
        'use agent "investigator" as inv\nuse team "dev-team" as dev\ntype Out { ok: bool }\n'
        f"stage s -> Out {{\n  {body}\n}}\n"
    )
    errors = [d for d in check_source(src, "s.flow").diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["type-mismatch"]
    assert "alias, not a value" in errors[0].message
    assert errors[0].hint.startswith(("a `use` alias can only be", "a team is an agent target"))


# -- the corpus: every program of the repository that checks clean compiles -----------------

CORPUS = sorted(
    p
    for p in REPO.rglob("*.flow")
    if not any(part.startswith(".") or part in ("build", "node_modules") for part in p.parts)
)
FENCED = re.compile(r"```flow\n(.*?)```", re.S)


def _docs_programs() -> list[tuple[str, str]]:
    """The fenced `flow` examples of docs/ (those with a `stage` are whole programs)."""
    out = []
    for md in sorted((REPO / "docs").rglob("*.md")):
        for i, m in enumerate(FENCED.finditer(md.read_text(encoding="utf-8"))):
            if "stage " in m.group(1):
                out.append((f"{md.relative_to(REPO)}#{i}", m.group(1)))
    return out


def _compiles_if_clean(text: str, name: str) -> bool:
    """True when ``text`` checks clean (and then it must compile: an internal compiler error
    fails the test); False when the check reports an error."""
    result = check_source(text, name)
    if not result.ok:
        return False
    try:
        compile_checked(result, text, name)
    except CompileError as e:
        raise AssertionError(f"{name} checks clean but does not compile: {e.diagnostics}") from None
    return True


def test_the_corpus_is_found():
    assert len(CORPUS) >= 20 and len(_docs_programs()) >= 10


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_clean_program_in_the_repository_compiles(path):
    _compiles_if_clean(read_source(path), str(path.relative_to(REPO)))


def test_every_clean_program_in_the_docs_compiles():
    clean = [name for name, text in _docs_programs() if _compiles_if_clean(text, name)]
    assert clean
