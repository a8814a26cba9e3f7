"""`loop up to N as round, state = init { … }` in the editor (docs/reference/control.md "loop"):
hover on `loop` says what the loop does in the program's own names, hover on the round and the
state gives their types, completion after `loop` offers `up to`, and inside the body offers the
round and the state (not `index`, which a loop does not bind)."""

from __future__ import annotations

from support.paths import EXAMPLES

from agentflow.lsp.analysis import analyze

SOURCE = (EXAMPLES / "patterns" / "evaluator-optimizer.flow").read_text(encoding="utf-8")


def _at(needle: str, delta: int = 0) -> int:
    return SOURCE.index(needle) + delta


def test_hover_on_loop_tells_the_bound_the_round_the_state_and_the_exit():
    text, span = analyze(SOURCE, "e.flow").hover(_at("loop up", 1))
    assert text.startswith("```flow\nloop up to 4 as turn, best: Result\n```")
    assert "`turn` is the round number (1, 2, …)" in text
    assert "when none does, the value is the `else` value" in text
    assert SOURCE[span.start : span.end] == "loop"


def test_hover_on_the_round_and_the_state_gives_their_types():
    a = analyze(SOURCE, "e.flow")
    assert a.hover(_at("as turn", 4))[0] == "```flow\n(loopvar) turn: int\n```"
    assert a.hover(_at("until best", 7))[0] == "```flow\n(acc) best: Result\n```"


def test_completion_offers_up_to_after_loop_and_the_round_and_state_in_the_body():
    a = analyze(SOURCE, "e.flow")
    typed = SOURCE.replace("  loop up to 4 as turn", "  loop ", 1)
    (after_loop,) = a.completions(typed.index("  loop ") + 7, typed)
    assert after_loop.label == "up to"
    inside = {c.label: c.detail for c in a.completions(_at("    if review.approved"))}
    assert inside["turn"] == "int (the round, 1-based)" and inside["best"] == "loop state"
    assert "index" not in inside and "loop" in inside
