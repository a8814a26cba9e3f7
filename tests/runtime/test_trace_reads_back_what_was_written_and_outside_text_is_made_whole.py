"""The trace writer and reader are inverses on every string (issue 28, item 11): whatever a value
holds — U+2028, U+2029, U+0085, NUL, lone surrogates — `read_trace` gives back exactly what
`JsonlSink` was handed; text from outside is made whole where it enters a run (a sink that fails:
tests/runtime/test_failed_sink_is_said_in_order.py)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.core.text import clean_json, clean_text, escape_surrogates, join_pairs
from agentflow.runtime.events import Event, JsonlSink, read_trace
from agentflow.runtime.models.base import ChatResponse, ToolCall

#: every code point, surrogates included, with the troublesome ones drawn often
ODD = st.sampled_from(["\u2028", "\u2029", "\u0085", "\x00", "\udcd9", "\ud83d", "\n", "\r"])
TEXT = st.lists(st.one_of(ODD, st.integers(0, 0x10FFFF).map(chr)), max_size=40).map("".join)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(VALUES, min_size=1, max_size=4))
def test_read_trace_gives_back_exactly_what_the_jsonl_sink_wrote(values, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "t.jsonl"
    sink = JsonlSink(path)
    for n, value in enumerate(values):
        sink.handle(Event(kind="step_finished", path=f"E{n}", stack=[], time=1.0,
                          data={"result": value}))  # fmt: skip
    sink.close()
    path.read_bytes().decode("utf-8")  # strict UTF-8 on disk
    events = read_trace(path)
    # exactly, but for a pair held as two code points, which JSON reads as its one character
    assert [e["data"]["result"] for e in events] == [_joined(v) for v in values]


def _joined(value):
    if isinstance(value, str):
        return join_pairs(value)
    if isinstance(value, list):
        return [_joined(v) for v in value]
    if isinstance(value, dict):
        return {join_pairs(k): _joined(v) for k, v in value.items()}
    return value


@given(TEXT)
def test_escaped_surrogates_are_the_same_json(text):
    raw = json.dumps({"k": text}, ensure_ascii=False)
    escaped = escape_surrogates(raw)
    escaped.encode("utf-8")
    assert json.loads(escaped) == {"k": join_pairs(text)}


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_cleaned_text_is_utf8_and_only_surrogates_change(value):
    cleaned = clean_json(value)
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")
    assert clean_json(cleaned) == cleaned
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)):
        assert cleaned is value


def test_a_pair_split_across_stream_pieces_is_joined_and_a_lone_half_replaced():
    assert clean_text("\ud83d" + "\ude00") == "\U0001f600"
    assert clean_text("a\udcd9b") == "a\ufffdb"


def test_a_model_reply_is_made_whole_where_it_is_decoded():
    response = ChatResponse(
        text='{"a": "x\udcd9"}',
        tool_calls=[ToolCall("c1", "t", '{"q": "\\udcd9 \\ud83d\\ude00"}')],
        chunks=["x", "\udcd9"],
    )
    assert response.text == '{"a": "x\ufffd"}' and response.chunks == ["x", "\ufffd"]
    assert json.loads(response.tool_calls[0].arguments) == {"q": "\ufffd \U0001f600"}


def test_opentelemetry_attributes_hold_no_lone_surrogate():
    from agentflow.runtime.telemetry_spans import _json, _Redactor

    assert _Redactor(()).text("a\udcd9b") == "a\ufffdb"
    assert json.loads(_json({"k": "a\udcd9"})) == {"k": "a\udcd9"}
    _json({"k": "a\udcd9"}).encode("utf-8")


ECHO = """flow echo
input { said: text }

type Said {
  words: text
}

use agent "reader" as reader

stage say -> Said {
  return agent(reader) {
    task "Say ${input.said}"
    tools none
    expect Said
  }
}
"""


async def test_a_host_input_holding_a_lone_surrogate_runs_and_its_trace_reads_back(tmp_path):
    import agentflow

    (tmp_path / "echo.flow").write_text(ECHO)
    trace = tmp_path / "t.jsonl"
    result = await agentflow.run(
        str(tmp_path / "echo.flow"), {"said": "x\udcd9"}, model="test", trace=str(trace)
    )
    assert result.status == "ok", result.error
    events = read_trace(trace)
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_finished"
    assert any("x\udcd9" in json.dumps(e["data"], ensure_ascii=False) for e in events)
