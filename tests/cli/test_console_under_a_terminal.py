"""The console on a real pseudo-terminal (issue 28 items 8 and 9).

The live view froze for good, and the run with it, when ``ConsoleSink``'s lock and rich's
``Live`` lock were taken in opposite orders: the refresh thread held ``Live``'s lock and asked the
sink for its rows (the sink's lock) while a run thread held the sink's lock and printed a line
(``Live``'s lock). Now rich's callbacks never take the sink's lock. The stress scenario
(tests/support/console_stress.py) runs here once; ``bench/console_stress.py`` runs it 200
times in a row.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from support.console_stress import project, run_once


def test_the_live_view_redraws_while_the_sink_holds_its_lock(tmp_path):
    """The class of the freeze, without its timing: with the sink's lock held by one thread (as
    while it prints a line), rich's refresh on another thread (which holds ``Live``'s lock while
    it asks for the rows) must still finish."""
    from agentflow.runtime.events import ConsoleSink, Event

    master, slave = os.openpty()

    def drain() -> None:  # a terminal that is read: rich's writes never block
        try:
            while os.read(master, 65536):
                pass
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    try:
        with open(slave, "w", closefd=False) as stream:
            sink = ConsoleSink(stream)
            assert sink._live is not None  # a terminal: the live view (rich's Live)
            sink.handle(Event("run_started", "", ["p"], data={"plan": "p"}))
            sink.handle(Event("step_started", "E0", ["p"], data={"tool_name": "t", "label": "s"}))
            done = threading.Event()
            with sink._lock:  # what handle() holds while it calls into rich

                def refresh() -> None:
                    sink._live.refresh()  # takes Live's lock, then asks for the rows
                    done.set()

                thread = threading.Thread(target=refresh, daemon=True)
                thread.start()
                refreshed = done.wait(5)
            thread.join(5)  # the lock is free now: a refresh that waited for it goes on
            assert refreshed, (
                "rich's refresh waited for the sink's lock: the two locks in either order"
            )
            sink.handle(Event("run_finished", "", ["p"], data={"status": "ok"}))
            sink.close()
    finally:
        os.close(slave)
        os.close(master)


def test_a_terminal_run_with_concurrent_events_questions_and_answers_ends(tmp_path):
    root = project(tmp_path)
    outcome = run_once(root, items=16, asks=4, timeout=60)
    assert outcome.refused == 1  # `perhaps` for a bool: refused with the reason, asked again


ASK_FLOW = """\
type Choice = "ship" | "hold"
extern tool user__note(s: text) -> text
stage decide -> Choice {
  ask "Ship or hold?" expect Choice default "hold"
}
stage notes -> text {
  user__note(s: decide)
}
"""


def test_an_answered_question_leaves_the_live_view(tmp_path):
    """After a question is answered on the terminal the view comes back: it must not draw the
    frame rich held from before the question (the question's row, its timer at 0.0s) under the
    lines of the steps that follow."""
    from support.terminal import Terminal, plain

    (tmp_path / "ask.flow").write_text(ASK_FLOW, encoding="utf-8")
    (tmp_path / "tools.py").write_text(
        'def note(s: str) -> str:\n    """s"""\n    return s\n', encoding="utf-8"
    )
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    flowc = str(Path(sys.executable).with_name("flowc"))
    with Terminal([flowc, "run", "ask.flow"], cwd=tmp_path) as term:
        term.expect(r"answer: the number")
        term.send("1")
        assert term.wait(60) == 0
        shown = plain(term.raw)
    after = shown[shown.index('answered "ship"') :]
    assert "✓ notes › user__note" in after
    assert "…  decide › ask" not in after, after
