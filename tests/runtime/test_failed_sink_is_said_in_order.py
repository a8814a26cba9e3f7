"""A sink that raises is removed and said (issue 28 item 11): the remaining sinks get a `warning`
event right after the event it failed on — never before it, so a trace still opens with
`run_started` — and nothing after `run_finished`, the run's last event; `EventBus.failures`
keeps every failure."""

from __future__ import annotations

from agentflow.runtime.events import CallbackSink, EventBus


class _Broken:
    def handle(self, event: object) -> None:
        raise OSError("stderr is a closed pipe")


def test_the_warning_follows_the_event_the_sink_failed_on():
    seen: list = []
    bus = EventBus([_Broken(), CallbackSink(seen.append)])
    bus.emit("run_started")
    bus.emit("step_started", path="E0")
    assert [e.kind for e in seen] == ["run_started", "warning", "step_started"]
    assert "failed and gets no more events" in seen[1].data["message"]
    assert len(bus.failures) == 1


def test_no_event_follows_run_finished():
    seen: list = []
    bus = EventBus([_Broken(), CallbackSink(seen.append)])
    bus.emit("run_finished")
    assert [e.kind for e in seen] == ["run_finished"]
    assert len(bus.failures) == 1
