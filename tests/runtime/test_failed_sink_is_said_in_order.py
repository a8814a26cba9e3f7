"""A sink that raises is removed and said (issue 28 item 11): the remaining sinks get a `warning`
event right after the event it failed on — never before it, so a trace still opens with
`run_started` — and nothing after `run_finished`, the run's last event; `EventBus.failures`
keeps every failure."""

from __future__ import annotations

from agentflow.runtime.events import CallbackSink, Event, EventBus


class _Broken:
    def handle(self, event: object) -> None:
        raise OSError("stderr is a closed pipe")


def test_a_sink_that_fails_is_said_on_stderr_and_to_the_other_sinks(capsys):
    class Broken:
        def __str__(self) -> str:
            return "the broken sink"

        def handle(self, event):
            raise OSError(28, "No space left on device")

    seen: list[Event] = []

    class Keeper:
        def handle(self, event):
            seen.append(event)

    bus = EventBus([Broken(), Keeper()])
    bus.emit("run_started", plan="p")
    bus.emit("run_finished", status="ok")
    err = capsys.readouterr().err
    assert "the broken sink failed" in err and "No space left on device" in err
    # the warning follows the event the sink failed on: a trace still opens with run_started
    assert [e.kind for e in seen] == ["run_started", "warning", "run_finished"]
    assert "the broken sink failed" in seen[1].data["message"]
    assert bus.failures == [seen[1].data["message"]]


def test_no_event_follows_run_finished():
    seen: list = []
    bus = EventBus([_Broken(), CallbackSink(seen.append)])
    bus.emit("run_finished")
    assert [e.kind for e in seen] == ["run_finished"]
    assert len(bus.failures) == 1


def test_a_failed_sink_is_said_once_when_a_console_shows_warnings(tmp_path):
    """With a console on stderr the failure is its `!` warning line alone: the bus does not
    print it a second time (`flowc run --trace /dev/full` said it twice)."""
    import subprocess
    import sys

    flow = tmp_path / "e.flow"
    flow.write_text("flow ee\ninput { n: int }\nstage s -> int {\n  return input.n + 1\n}\n")
    full = "/dev/full"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentflow",
            "run",
            str(flow),
            "--input",
            '{"n": 1}',
            "--trace",
            full,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("failed and gets no more events") == 1, done.stderr
    assert f"!  the trace file '{full}' failed" in done.stderr
