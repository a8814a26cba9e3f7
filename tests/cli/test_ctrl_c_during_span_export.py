"""A Ctrl-C once the run has ended only cuts the span export short (docs/observability.md; docs/decisions.md
"Ctrl-C during the span export").

`flowc run --otel URL` exports the run's spans when the run ends; a collector that accepts the
connection and never replies held the export ~10 s (the exporter's timeout). A Ctrl-C meanwhile
turned the finished run into an interrupted one: "interrupted by SIGINT", exit 130 — and with
`--durable` the output was lost. Now the run's result stands: the export is given up, the output
printed, exit 0.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest
from support.durable_questions import start_flowc
from support.timing import scaled

from agentflow.runtime import interrupt

pytest.importorskip("opentelemetry.sdk")

FLOW = 'stage s -> text { return "done" }\n'


class _Silent:
    """A TCP server that accepts every connection, reads what comes and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            self.accepted.set()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("durable", [[], ["--durable"]], ids=["plain", "durable"])
def test_ctrl_c_during_the_span_export_keeps_the_finished_run(tmp_path, durable):
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    server = _Silent()
    try:
        url = f"http://127.0.0.1:{server.port}/v1/traces"
        env = {**os.environ, "NO_COLOR": "1"}
        args = ("run", "a.flow", "--otel", url, "--json", "--trace", "t.jsonl", *durable)
        proc = start_flowc(tmp_path, *args, env=env)
        # the export starts when the run has ended: the collector's first connection
        assert server.accepted.wait(scaled(60)), "no export came"
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        server.close()
    text = err.decode()
    assert proc.returncode == 0, text[-2000:]
    assert "interrupted by" not in text, text[-2000:]
    assert json.loads(out)["status"] == "ok" and json.loads(out)["output"] == "done"
    assert "export" in text and "cut short by SIGINT" in text, text[-2000:]
    assert took < scaled(5), took  # not the exporter's 10 s timeout
    last = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "run_finished" and last["data"]["status"] == "ok"


def test_only_the_outermost_run_ending_makes_a_signal_a_cut():
    # one tool call of an agent is a run of its own (runtime/chat.py): its end is not the run's
    stop = interrupt.StopRequest()
    token = interrupt.use_stop_request(stop)
    try:
        outer = interrupt.outermost_run()
        inner = interrupt.outermost_run()
        assert outer is not None and inner is None
        interrupt.run_ended(inner)
        assert stop.ended_at is None  # a signal now still stops the run
        stop.note(signal.SIGINT, None)
        assert interrupt.cut_short() is None
        interrupt.run_ended(outer)
        assert stop.ended_at == 1 and interrupt.cut_short() is None
        stop.note(signal.SIGINT, None)
        assert interrupt.cut_short() == "SIGINT"
    finally:
        interrupt._STOP.reset(token)


def test_a_signal_stops_the_next_run_of_the_same_stop_request_and_one_still_running():
    # an eval's cases are runs of one stop request: once one has ended, a signal still stops
    # the next one (one after another) or one still under way (several at once)
    import contextvars

    stop = interrupt.StopRequest()
    token = interrupt.use_stop_request(stop)
    try:
        beside = contextvars.copy_context()  # a case's task: the eval's context, no run in it
        first = interrupt.outermost_run()
        interrupt.run_ended(first)
        assert stop.ended_at is not None
        second = interrupt.outermost_run()  # the next case starts
        assert stop.ended_at is None and not stop.cut
        other = beside.run(interrupt.outermost_run)  # a case beside it
        assert other is not None
        interrupt.run_ended(second)
        assert stop.ended_at is None  # the case beside it still runs: a signal stops it
        stop.request(signal.SIGTERM)
        assert not stop.cut and stop.signal == "SIGTERM"
        beside.run(interrupt.run_ended, other)
        assert stop.ended_at is not None
    finally:
        interrupt._STOP.reset(token)
