"""A durable run's rows are JSON (runtime/durable/records.py): every value the engine records
round-trips exactly (tuples, bytes, sets, non-string keys, non-finite floats, the model layer's
dataclasses, a step's error whole), reading never makes a class a row names unless it is one of
agentflow's or DBOS's records, and nothing is ever unpickled.  Also pins what records.py and
answers.py reach into DBOS for."""

from __future__ import annotations

import base64
import dataclasses
import inspect
import json
import os
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentflow.core.vocabulary import ERROR_CODES
from agentflow.errors import BadPath, ErrorInfo, ExitError, ModelError, RunAborted, RunError
from agentflow.runtime.durable.records import (
    JsonRecords,
    Unreadable,
    UnreadableRecord,
    install,
)
from agentflow.runtime.models.base import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec

RECORDS = JsonRecords()


def _back(value):
    text = RECORDS.serialize(value)
    json.loads(text)  # plain JSON text
    assert text.isascii()
    return RECORDS.deserialize(text)


def test_values_json_lacks_round_trip_exactly():
    value = {
        "t": (1, "a", (2.5, None)),
        "b": b"\x00\xffbytes",
        "s": {1, 2},
        "f": frozenset({"x"}),
        "keys": {1: "one", (1, 2): "pair"},
        "$af": "the tag key itself",
        "inf": [float("inf"), float("-inf")],
        "surrogate": "\udcd9 and \u2028",
        "big": 2**80,
    }
    back = _back(value)
    assert back == value
    assert type(back["t"]) is tuple and type(back["t"][2]) is tuple
    assert type(back["f"]) is frozenset
    nan = _back(float("nan"))
    assert nan != nan


def test_the_model_layers_records_round_trip_as_themselves():
    request = ChatRequest(
        messages=[
            Message("user", "hi"),
            Message("assistant", None, [ToolCall("c1", "grep", {"q": 1})], raw={"k": (1,)}),
        ],
        tools=[ToolSpec("grep", "search", {"type": "object"})],
        response_schema={"type": "string"},
        on_delta=print,
    )
    back = _back(request)
    assert back == dataclasses.replace(request, on_delta=None)
    assert back.on_delta is None
    response = ChatResponse("yes", usage={"input_tokens": 3, "output_tokens": 1}, cost=0.5)
    assert _back({"d": "x", "v": response}) == {"d": "x", "v": response}


def test_a_steps_error_comes_back_whole():
    error = RunError("tool_error", "grep failed", "E3/do.4/E1", details={"exit": 2})
    error.where = {"stage": "triage"}
    back = _back(error)
    assert type(back) is RunError
    assert back.to_dict() == error.to_dict() and back.details == {"exit": 2}
    assert back.where == {"stage": "triage"}
    for other in (
        BadPath("E0.x", "x"),
        ExitError("my_code", "bye"),
        ModelError("slow", kind="rate_limit", retry_after=2.0, status=429),
    ):
        again = _back(other)
        assert type(again) is type(other) and str(again) == str(other)
        assert vars(again) == vars(other)
    aborted = _back(RunAborted("stop", "E1", ErrorInfo("tool_error", "x", "E1")))
    assert type(aborted) is RunAborted and aborted.error == ErrorInfo("tool_error", "x", "E1")


class FlakyNetwork(ConnectionResetError):
    """A tool's own exception class."""


def test_other_exceptions_keep_their_name_message_and_builtin_base():
    back = _back(TimeoutError("slow"))
    assert type(back) is TimeoutError and str(back) == "slow"
    mine = _back(FlakyNetwork("peer gone"))
    assert type(mine).__name__ == "FlakyNetwork" and str(mine) == "peer gone"
    assert isinstance(mine, ConnectionResetError)  # still transient on replay
    assert type(mine) is not FlakyNetwork  # made from its name, never imported


def test_the_durable_codes_are_registered():
    for code in ("durable_replay_mismatch", "outcome_unknown"):
        assert code in ERROR_CODES and not ERROR_CODES[code].retryable


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


def _same(a, b) -> bool:
    """Equal, and of the same types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_reading_is_the_inverse_of_writing(value):
    assert _same(_back(value), value)


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_row_never_makes_a_class_it_names_and_never_unpickles(tmp_path):
    marker = tmp_path / "pwned"
    pickled = base64.b64encode(pickle.dumps(Payload(str(marker)))).decode()
    with pytest.raises(UnreadableRecord):
        RECORDS.deserialize(pickled)
    hostile = {"$af": "obj", "cls": "subprocess:Popen", "v": {"args": ["true"]}}
    with pytest.raises(UnreadableRecord):
        RECORDS.deserialize(json.dumps(hostile))
    exc = RECORDS.deserialize(
        json.dumps({"$af": "exc", "cls": "os:system", "name": "system", "message": "x"})
    )
    assert type(exc).__name__ == "system" and type(exc).__module__ == "agentflow.recorded"
    assert not marker.exists()


def test_dbos_pickle_reader_is_replaced_and_its_listing_returns_a_marker(tmp_path):
    """Pins dbos._serialization (DefaultSerializer.deserialize, deserialize_value/args/exception)
    and dbos._sys_db.safe_deserialize, which records.install replaces."""
    from dbos import _serialization, _sys_db

    serializer = install()
    marker = tmp_path / "pwned"
    pickled = base64.b64encode(pickle.dumps(Payload(str(marker)))).decode()
    with pytest.raises(UnreadableRecord):
        _serialization.deserialize_value(pickled, "py_pickle", serializer)
    with pytest.raises(UnreadableRecord):
        _serialization.deserialize_args(pickled, "py_pickle", serializer)
    with pytest.raises(UnreadableRecord):
        _serialization.deserialize_exception(pickled, None, serializer)
    inputs, output, error = _sys_db.safe_deserialize(
        serializer, "py_pickle", "wf", serialized_input=pickled,
        serialized_output=pickled, serialized_exception=None,
    )  # fmt: skip
    assert isinstance(inputs, Unreadable) and isinstance(output, Unreadable) and error is None
    assert not marker.exists()
    assert _serialization.DBOSDefaultSerializer.name() == "py_pickle"


def test_what_agentflow_reaches_into_dbos_for_is_there():
    from dbos import _serialization
    from dbos._dbos_config import DBOSConfig
    from dbos._sys_db import SendMessage, SystemDatabase

    assert "serializer" in DBOSConfig.__annotations__
    for method in ("name", "serialize", "deserialize"):
        assert hasattr(_serialization.Serializer, method)
    params = inspect.signature(SystemDatabase.send_bulk_with_connection).parameters
    assert list(params)[:3] == ["self", "messages", "conn"]
    assert {"serialization_type", "function_name", "send_to_forks"} <= set(params)
    assert [f.name for f in dataclasses.fields(SendMessage)][:3] == [
        "destination_id", "message", "topic",
    ]  # fmt: skip
    assert hasattr(SystemDatabase, "get_cancelled_workflow_ids")
    safe = inspect.signature(_serialization.safe_deserialize).parameters
    assert list(safe)[:3] == ["serializer", "serialization", "workflow_id"]


def test_a_record_with_no_tag_reads_as_its_json_and_an_escaped_tag_is_still_a_tag():
    # the fast path of deserialize (no "$af", no \u escape: the JSON is the value) gives what
    # the full decode gives; a tag key spelled with escapes still takes the full decode
    plain = {"input": {"items": list(range(1000))}, "plan_text": "name: x\n", "n": [1.5, None]}
    text = RECORDS.serialize(plain)
    assert "$af" not in text and "\\u" not in text
    assert RECORDS.deserialize(text) == plain
    tagged = RECORDS.serialize({"t": (1, 2), "word": "caf\u00e9"})
    escaped = tagged.replace('"$af"', '"\\u0024af"')
    assert "$af" not in escaped
    assert RECORDS.deserialize(escaped) == {"t": (1, 2), "word": "caf\u00e9"}


def test_every_dbos_reader_of_a_row_raises_unreadable_for_a_row_it_cannot_read():
    """Pins the names records._strict_readers replaces: dbos._sys_db and dbos._core import
    deserialize_value/args/exception by name; after install, a row of an unknown serialization
    (DBOS: TypeError) or a portable error of another shape (KeyError) is an UnreadableRecord."""
    from dbos import _core, _sys_db

    serializer = install()
    for module in (_sys_db, _core):
        for name in ("deserialize_value", "deserialize_exception"):
            assert hasattr(module, name), (module.__name__, name)
        with pytest.raises(UnreadableRecord):
            module.deserialize_value('{"d": 1}', "nonesuch", serializer)
        with pytest.raises(UnreadableRecord):
            module.deserialize_exception("{}", "portable_json", serializer)
    assert _core.deserialize_args('{"args": [], "kwargs": {}}', None, serializer) is not None
