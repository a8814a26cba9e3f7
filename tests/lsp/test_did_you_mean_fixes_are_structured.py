"""Every "did you mean" diagnostic carries its quick fix as data (``Diagnostic.fix``, made
where the diagnostic is made: core/diagnostics.respelling), and the language server's quick
fix is that edit — never one read back out of the hint's text.  A misspelt field
(``input.titel``, a bare ``titel`` for ``input.title``, a record's, an agent result's, an
object literal's key) is fixed like any other misspelt name; ``flowc check --format json``
prints the same edit."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler.api import check_file, check_source
from agentflow.core.diagnostics import Diagnostic
from agentflow.lsp.analysis import analyze

PROGRAM = """\
flow fixes
type Report {
  title: text @lenght(1, 80)
  url: text @format("ur")
}
extern tool lookup(id: text) -> { level: text }
use agent "repo" as investigator
input Report
fn rank(n: int) -> int = n + 1
stage find -> Report {
  let found = agent(investigatr) {
    task "look at ${input.titel}"
    tools [read_fil]
    expect Reprt
    retry { attempts: 2, on: [transiet] }
  }
  return fond
}
stage two -> text {
  let r: Report = { "titel": "x", url: "y" }
  let z = lookup(ib: "x")
  let q = titel
  let n = rnak(1) + lenght([1])
  let s = find.tilte
  let sorted = sort_by([r], "titel")
  return r.tilte + z.level + q + "${n}${s}${sorted}"
}
type Other {
  a: string
}
"""

SEV = 'input { sev: "low" | "high" }\nstage a -> bool {\n'

#: (code, the name as written, what the fix writes) for each did-you-mean of PROGRAM
EXPECTED = {
    ("invalid-constraint", "lenght", "length"),
    ("invalid-value", "ur", "uri"),
    ("unknown-name", "investigatr", "investigator"),
    ("unknown-field", "titel", "title"),  # input.titel in a string
    ("unknown-tool", "read_fil", "read_file"),
    ("unknown-type", "Reprt", "Report"),
    ("unknown-error-code", "transiet", "transient"),
    ("unknown-name", "fond", "found"),
    ("type-mismatch", "titel", "title"),  # an object literal's quoted key
    ("unknown-argument", "ib", "id"),
    ("unknown-name", "titel", "input.title"),  # a field of the input named bare
    ("unknown-function", "rnak", "rank"),
    ("unknown-function", "lenght", "len"),
    ("unknown-field", "tilte", "title"),  # a stage's (agent result's) field, a record's
    ("unknown-field", "titel", "title"),  # sort_by's field name, quoted
    ("unknown-type", "string", "text"),  # another language's type name
}


def _applied(text: str, d: Diagnostic) -> str:
    assert d.fix is not None
    return text[: d.fix.span.start] + d.fix.text + text[d.fix.span.end :]


def test_every_did_you_mean_carries_the_edit_it_states():
    before = check_source(PROGRAM, "x.flow").diagnostics
    meant = [d for d in before if "did you mean" in (d.hint or "")]
    assert meant and all(d.fix is not None for d in meant), [
        (d.code, d.message) for d in meant if d.fix is None
    ]
    said = [(x.code, x.message) for x in before]
    seen = set()
    for d in before:
        if d.fix is None:
            continue
        written = PROGRAM[d.fix.span.start : d.fix.span.end]
        seen.add((d.code, written, d.fix.text))
        assert d.fix.title == f"Change `{written}` to `{d.fix.text}`"
        # exactly the misspelt name is replaced (the quotes of "titel", the `@` kept)
        assert written in d.message and d.fix.text in (d.hint or "")
        after = check_source(_applied(PROGRAM, d), "x.flow").diagnostics
        key = (d.code, d.message)
        assert [(x.code, x.message) for x in after].count(key) == said.count(key) - 1
    assert EXPECTED <= seen, EXPECTED - seen


@pytest.mark.parametrize(
    ("text", "wrong", "meant"),
    [
        ("flow b\nstge a -> int {\n  return 1\n}\n", "stge", "stage"),
        ("stage a -> int {\n  retrun 1\n}\n", "retrun", "return"),
        (
            'use agent "w" as w\nstage a -> text {\n  return agent(w) { prompt "hi" expect text }\n}\n',
            "prompt",
            "task",
        ),
        ('stage s -> int {\n  require 1 = 1 else fail "x"\n  return 1\n}\n', "=", "=="),
        (
            "extern tool count(path: text) -> int\nstage a -> int {\n"
            '  return count(path: "a") catch on [tool-error] { 0 }\n}\n',
            "tool-error",
            "tool_error",
        ),
        # a string literal compared or matched with a union of literals: its quotes kept
        (SEV + '  return input.sev == "hgih"\n}\n', "hgih", "high"),
        (SEV + '  return match input.sev { "hgih" => true, _ => false }\n}\n', "hgih", "high"),
    ],
)
def test_misspelt_keywords_and_clauses_carry_their_edit(text, wrong, meant):
    [d] = [x for x in check_source(text, "x.flow").diagnostics if x.fix is not None]
    assert d.fix is not None
    assert text[d.fix.span.start : d.fix.span.end] == wrong and d.fix.text == meant


def test_the_editor_offers_the_diagnostics_own_edit_and_reads_no_hint():
    a = analyze(PROGRAM, "x.flow")
    for d in a.result.diagnostics:
        if d.fix is None:
            continue
        [fix] = a.fixes(d)
        assert fix.preferred and fix.edits == [(d.fix.span.start, d.fix.span.end, d.fix.text)]
    # a hint that reads as a did-you-mean but carries no edit gets no quick fix
    d = next(d for d in a.result.diagnostics if d.code == "unknown-tool")
    bare = Diagnostic(d.code, d.message, d.span, hint=d.hint)
    assert "did you mean" in (bare.hint or "") and a.fixes(bare) == []


def test_check_json_prints_the_fix_of_a_misspelt_input_field(tmp_path):
    flow = tmp_path / "f.flow"
    flow.write_text(
        "input { title: text }\nstage s -> text {\n  return input.titel\n}\n", encoding="utf-8"
    )
    got = CliRunner().invoke(main, ["check", "--format", "json", str(flow)])
    [d] = json.loads(got.output)
    assert d["code"] == "unknown-field" and d["hint"] == "did you mean `title`?"
    assert d["fix"]["title"] == "Change `titel` to `title`" and d["fix"]["text"] == "title"
    assert (d["fix"]["line"], d["fix"]["column"], d["fix"]["end_column"]) == (3, 16, 21)


def test_a_misspelt_import_and_import_path_carry_their_edit(tmp_path):
    (tmp_path / "lib.flow").write_text("type Ticket {\n  a: int\n}\n", encoding="utf-8")
    main = tmp_path / "main.flow"
    for text, wrong, meant in (
        ('import { Tiket } from "./lib.flow"\ninput { a: int }\n', "Tiket", "Ticket"),
        ('import { Ticket } from "./lbi.flow"\ninput { a: int }\n', "./lbi.flow", "./lib.flow"),
    ):
        main.write_text(text, encoding="utf-8")
        [d] = [x for x in check_file(main).diagnostics if x.fix is not None]
        assert d.fix is not None and d.fix.span.file.endswith("main.flow")
        assert text[d.fix.span.start : d.fix.span.end] == wrong and d.fix.text == meant


def test_tools_none_a_whole_optional_union_and_a_use_line_are_carried_too():
    text = (
        'flow f\nuse agent "w" as w\ntype R {\n  level: "a" | "b"?\n}\n'
        'stage s -> text {\n  let r = agent(w) { task "t" expect text tools [ ] }\n'
        '  return r + agent(helper) { task "t" expect text }\n}\n'
    )
    fixed = {d.code: d.fix for d in check_source(text, "x.flow").diagnostics if d.fix}
    out = {code: text[: f.span.start] + f.text + text[f.span.end :] for code, f in fixed.items()}
    assert "tools none }" in out["empty-tools"]
    assert '  level: ("a" | "b")?\n' in out["optional-union-member"]
    assert 'use agent "w" as w\nuse agent "helper" as helper\ntype R' in out["unknown-name"]
    assert fixed["empty-tools"].preferred and not fixed["unknown-name"].preferred
    a = analyze(text, "x.flow")
    [declare] = [f for d in a.result.diagnostics if d.code == "unknown-name" for f in a.fixes(d)]
    assert declare.title == 'Declare `use agent "helper" as helper`' and not declare.preferred
