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
