"""Tests of the diagnostic renderers (text, JSON, SARIF 2.1.0).

Snapshots of three checker cases live in ``tests/compiler/render/``; ``pytest --update-golden``
rewrites them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.render import render_json, render_sarif, render_text, summary
from agentflow.core.diagnostics import CODES, Diagnostic, Note
from agentflow.core.spans import Span

HERE = Path(__file__).parent
SNAP = HERE / "render"
SOURCES = ["returns.flow", "bidirectional.flow", "tools.flow"]
#: where diagnostics point and what they hint and note: their text snapshots pin it
TEXT_SOURCES = [
    "unclosed_braces.flow",
    "placements.flow",
    "hints.flow",
    "no_overlap.flow",
    "settings.flow",
    "stub_contracts.flow",
    "stub_union_members.flow",
    "first_hour.flow",
    "tool_prefix_hint.flow",
]


def _checked(name: str):
    text = (HERE / "check" / name).read_text(encoding="utf-8")
    return check_source(text, name).diagnostics, {name: text}


def _renders(name: str) -> dict[str, str]:
    diags, sources = _checked(name)
    return {
        "txt": render_text(diags, sources),
        "json": render_json(diags),
        "sarif": render_sarif(diags, tool_version="test"),
    }


def _pinned(fmt: str, out: str) -> str:
    """What a snapshot pins of a rendering: all of it, except SARIF's rule table and rule indexes
    (one entry per registered code; :func:`test_sarif_rules_are_the_registered_codes` checks them),
    so that registering a code leaves the snapshots alone."""
    if fmt != "sarif":
        return out
    log = json.loads(out)
    for run in log["runs"]:
        del run["tool"]["driver"]["rules"]
        for result in run["results"]:
            del result["ruleIndex"]
    return json.dumps(log, indent=2, ensure_ascii=False)


@pytest.mark.parametrize(
    "name, fmt",
    [(n, f) for n in SOURCES for f in ("txt", "json", "sarif")]
    + [(n, "txt") for n in TEXT_SOURCES],
)
def test_render_snapshots(name, fmt, golden):
    golden.check(SNAP / f"{Path(name).stem}.{fmt}", _pinned(fmt, _renders(name)[fmt]))


def test_text_layout():
    src = "type A { x: int }\ntype A { y: int }\n"
    diags = check_source(src, "a.flow").diagnostics
    out = render_text(diags, {"a.flow": src})
    assert out.splitlines() == [
        "a.flow:2:6: error[duplicate-definition]: type `A` is defined twice",
        "  |",
        "2 | type A { y: int }",
        "  |      ^",
        "  = note: a.flow:1:6: first defined here",
        "  = hint: rename one of the two, or remove the second",
    ]
    assert summary(diags) == "1 error"
    assert summary([]) == "no problems"


def test_text_tabs_multiline_and_missing_source():
    d = Diagnostic(
        "type-mismatch",
        "boom",
        Span("t.flow", 1, 3, 2, 2),
        notes=[Note("elsewhere", None)],
        hint="try again",
    )
    out = render_text([d], {"t.flow": "\tab cd\nxy"})
    lines = out.splitlines()
    assert lines[2] == "1 |     ab cd"
    assert lines[3] == "  |      ^^^^"  # from `b` (after the tab) to the end of the line
    assert lines[4] == "  = note: elsewhere"
    assert lines[5] == "  = hint: try again"
    bare = render_text([d], {})
    assert bare.splitlines()[0] == "t.flow:1:3: error[type-mismatch]: boom"
    odd = Diagnostic("syntax-error", "eof", Span("t.flow", 9, 1, 9, 1))
    assert "t.flow:9:1" in render_text([odd], {"t.flow": "x"})


def test_tab_expansion_keeps_display_columns():
    from agentflow.compiler.render import _expand

    assert _expand("\tab\tc", 1) == ("    ab  c", 0)
    assert _expand("\tab\tc", 4) == ("    ab  c", 6)
    assert _expand("a\t\tb", 4) == ("a       b", 8)
    assert _expand("ab", 5) == ("ab", 4)  # past the end: the missing columns count


def test_render_text_of_many_diagnostics_shows_each_line():
    from agentflow.compiler.render import render_text

    text = "flow x\n" + "".join(f"stage s{i} -> int {{ let x = = {i} }}\n" for i in range(50))
    diags = check_source(text, "t.flow").diagnostics
    out = render_text(diags, {"t.flow": text})
    for i in range(50):
        assert f"{i + 2} | stage s{i} -> int {{ let x = = {i} }}" in out


def test_color_output_has_ansi_codes():
    diags, sources = _checked("returns.flow")
    colored = render_text(diags, sources, color=True)
    assert "\x1b[" in colored
    assert "\x1b[" not in render_text(diags, sources)


def test_json_fields():
    diags, _ = _checked("returns.flow")
    data = json.loads(render_json(diags))
    assert data and all(
        set(d)
        == {
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "severity",
            "code",
            "message",
            "notes",
            "hint",
            "fix",
        }
        for d in data
    )
    fwd = next(d for d in data if d["code"] == "forward-stage-reference")
    assert fwd["notes"][0]["line"] > fwd["line"]
    assert [(d["line"], d["column"]) for d in data] == sorted(
        (d["line"], d["column"]) for d in data
    )


def test_sarif_structure():
    diags, _ = _checked("tools.flow")
    log = json.loads(render_sarif(diags))
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    assert len(run["results"]) == len(diags)
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] in ("error", "warning")
        region = r["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["endColumn"] > region["startColumn"] - 1


def test_sarif_rules_are_the_registered_codes():
    log = json.loads(render_sarif([], tool_version="test"))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules == [
        {
            "id": info.code,
            "name": "".join(p.capitalize() for p in info.code.split("-")),
            "shortDescription": {"text": info.summary},
            "defaultConfiguration": {"level": info.severity},
            "helpUri": f"docs/diagnostics.md#{info.code}",
        }
        for info in CODES.values()
    ]


def test_sarif_validates_against_minimal_schema():
    import jsonschema

    schema = {
        "type": "object",
        "required": ["version", "runs"],
        "properties": {
            "version": {"const": "2.1.0"},
            "runs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["tool", "results"],
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {"type": "object", "required": ["message", "ruleId"]},
                        }
                    },
                },
            },
        },
    }
    diags, _ = _checked("bidirectional.flow")
    jsonschema.validate(json.loads(render_sarif(diags)), schema)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


def _excerpts() -> str:
    """Diagnostics on lines holding control characters and tabs, and zero-width spans."""
    src = 'let a = "\x1b[2J\x07"  let b = c\n\tx\x00 = y\nend\n'
    diags = [
        # `c`, after an ESC and a BEL: the carets move right with the escapes
        Diagnostic("unknown-name", "unknown name `c`", Span("e.flow", 1, 26, 1, 27)),
        # a zero-width span (an insertion point): one caret at its column, not to the end
        Diagnostic("syntax-error", "expected `;`", Span("e.flow", 1, 17, 1, 17)),
        Diagnostic("syntax-error", "expected `:`", Span("e.flow", 2, 4, 2, 4)),
        # past the end of a line (end of input): one caret there
        Diagnostic("syntax-error", "expected `}`", Span("e.flow", 3, 4, 3, 4)),
        # a span running on to a later line still runs to the end of its first
        Diagnostic("type-mismatch", "spans lines", Span("e.flow", 2, 2, 3, 2)),
    ]
    return render_text(diags, {"e.flow": src})


def test_carets_on_control_characters_and_zero_width_spans(golden):
    out = _excerpts()
    lines = out.splitlines()
    # the `c` of `let b = c` stands over its one caret in the shown line (the second block)
    shown, carets = lines[7], lines[8]
    assert shown.startswith('1 | let a = "\\x1b[2J\\x07"')
    assert carets.index("^") == shown.index(" c") + 1 and carets.count("^") == 1
    golden.check(SNAP / "excerpts.txt", out)


def test_a_zero_width_span_draws_one_caret_at_its_column():
    d = Diagnostic("syntax-error", "expected `;`", Span("z.flow", 1, 5, 1, 5))
    lines = render_text([d], {"z.flow": "abcdefgh ijkl\n"}).splitlines()
    assert lines[3] == "  |     ^"
