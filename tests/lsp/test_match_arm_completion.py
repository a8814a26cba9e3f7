"""Where an arm of a `match` begins — after its `{`, or after an arm's `,` — completion offers
the values of the subject's type that no arm covers yet, as the patterns to write (`"medium"`,
`"high"`), then `_` (docs/editors.md): also in `match x { }` with no arm yet (which does not
parse), and from the analysis of an older version of the text, as an editor that debounces
its checks has it. A subject whose values are not a finite set (`text`) gets the usual names."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
type Sev = "low" | "medium" | "high"
input { sev: Sev, t: text, ok: bool }
stage label -> text {
  match input.sev { "low" => "minor", "medium" | "high" => "major" }
}
"""
ARMS = '"low" => "minor", "medium" | "high" => "major" '


def _labels(typed: str, subject: str = "input.sev") -> list[str]:
    a = analyze(SOURCE, "m.flow")  # the analysis of the text before the edit
    text = SOURCE.replace(f"match input.sev {{ {ARMS}}}", f"match {subject} {{ {typed}}}")
    offset = text.index(typed) + len(typed) if typed else text.index("{ }") + 2
    return [c.label for c in a.completions(offset, text)]


def test_the_values_no_arm_covers_are_offered_after_an_arm():
    assert _labels('"low" => "minor", ') == ['"medium"', '"high"', "_"]


def test_every_value_is_offered_in_a_match_with_no_arm_yet():
    assert _labels("") == ['"low"', '"medium"', '"high"', "_"]


def test_a_bool_subject_offers_the_other_truth_value():
    assert _labels('true => "y", ', "input.ok") == ["false", "_"]


def test_a_text_subject_gets_the_usual_names():
    labels = _labels('"a" => "x", ', "input.t")
    assert "input" in labels and '"low"' not in labels
