"""A provider's `Retry-After` longer than its `max_retry_after` is waited only up to that cap;
the `↻` line used to say the capped wait alone (`, in 2m`), as if the provider had asked for it.
It now says the cap was applied and what the provider asked (`, in 2m (provider asked 10m;
capped)`), from the `retry` event's `retry_after_ms` and `capped` fields, which the trace keeps
too (docs/reference/events.md, docs/reference/cli.md "flowc run")."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.chat_server import TEST_API_KEY, answer, status
from support.terminal import Terminal, plain

from agentflow.runtime.events import ConsoleSink, Event

FLOWC = str(Path(sys.executable).with_name("flowc"))

FLOW = textwrap.dedent(
    """
    flow a "a"
    type N { note: text }
    use agent "w" as w
    stage s -> N { return agent(w) { task "go" tools none expect N } }
    """
)


def test_a_capped_retry_after_is_said_capped_with_what_the_provider_asked(
    chat_server, tmp_path: Path
) -> None:
    # the provider asks 600 s; max_retry_after 0.05 waits 50 ms of it
    chat_server.script([status(429, headers={"Retry-After": "600"}), answer({"note": "ok"})])
    config = chat_server.config_text() + "max_retry_after = 0.05\n"
    (tmp_path / "flow.toml").write_text(config, encoding="utf-8")
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    run = subprocess.run(
        [FLOWC, "run", "a.flow", "--trace", "t.jsonl"],
        cwd=tmp_path, capture_output=True, timeout=120, env=env, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    (retry,) = [e["data"] for e in events if e["kind"] == "retry"]
    assert (retry["delay_ms"], retry["retry_after_ms"], retry["capped"]) == (50, 600_000, True)
    # the console line is the one the event makes (a wait under 1 s: not said in seconds)
    (line,) = [row for row in run.stderr.splitlines() if "↻" in row]
    assert line.endswith("retry 1 after rate_limit, in under 1s (provider asked 10m; capped)")


def test_on_a_terminal_the_retry_line_says_the_cap(chat_server, tmp_path: Path) -> None:
    chat_server.script([status(429, headers={"Retry-After": "3600"}), answer({"note": "ok"})])
    config = chat_server.config_text() + "max_retry_after = 0.05\n"
    (tmp_path / "flow.toml").write_text(config, encoding="utf-8")
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    env = {"SCRIPTED_API_KEY": TEST_API_KEY}
    with Terminal([FLOWC, "run", "a.flow"], cwd=tmp_path, env=env, cols=200) as term:
        assert term.wait(60) == 0, term.raw
        shown = plain(term.raw)
    assert "retry 1 after rate_limit, in under 1s (provider asked 1h; capped)" in shown, shown


def _line(**data: object) -> str:
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_plain=True)
    base = {"attempt": 1, "code": "rate_limit", "model": "m"}
    sink.handle(Event(kind="retry", path="E0", stack=[], data={**base, **data}))
    return stream.getvalue().strip()


def test_the_retry_line_says_the_cap_and_the_providers_ask() -> None:
    capped = _line(delay_ms=120_000, retry_after_ms=3_600_000, capped=True)
    assert capped.endswith("retry 1 after rate_limit, in 2m (provider asked 1h; capped)")
    # an ask too large to be a number of milliseconds (`Retry-After: inf`) is said as longer
    unknown = _line(delay_ms=120_000, capped=True)
    assert unknown.endswith(", in 2m (capped: the provider asked longer)")
    # an ask within the cap is the wait: nothing more to say
    honoured = _line(delay_ms=3_000, retry_after_ms=3_000)
    assert honoured.endswith("retry 1 after rate_limit, in 3s")
