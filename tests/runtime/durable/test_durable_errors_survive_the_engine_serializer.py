"""A step's error is stored by the durable engine and raised again on replay: a RunError comes
back whole through DBOS's serializer (code, message, step path, details), and the durable
run-time codes are registered in core."""

from __future__ import annotations

from dbos._serialization import DefaultSerializer

from agentflow.core.vocabulary import ERROR_CODES
from agentflow.errors import RunError


def test_a_run_error_round_trips_the_engine_serializer():
    error = RunError("tool_error", "grep failed", "E3/do.4/E1", details={"exit": 2})
    serializer = DefaultSerializer()
    back = serializer.deserialize(serializer.serialize(error))
    assert type(back) is RunError
    assert back.to_dict() == error.to_dict()
    assert back.details == {"exit": 2}


def test_the_durable_codes_are_registered():
    for code in ("durable_replay_mismatch", "outcome_unknown"):
        assert code in ERROR_CODES and not ERROR_CODES[code].retryable
