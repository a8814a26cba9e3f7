"""The request of a map item's agent, as sent (issue 35, docs/decisions.md "The map task's
cacheable prefix"): its serialized body is pinned by a golden file, and the bodies of two items,
in the order a provider builds its prompt (tools, response format, messages), are the same up
to the item's own document: everything fixed (the task, the output contract, the field names)
comes before it and nothing that moves (ids, times, counters) is in the body at all. A
provider's prompt cache can then reuse all of an item's request but its document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, answer, responses_reply

from agentflow import api

GOLDEN = Path(__file__).parent / "golden"

FLOW = """\
flow invoices "Extract invoices"
input { documents: text[] }

type Invoice {
  /// the invoice number as printed
  number: text
  total: number
  currency: "EUR" | "USD"
}

use agent "extractor" as extractor

stage extract -> Invoice[] {
  return map input.documents as doc {
    agent(extractor) {
      task "Extract the invoice's fields from the document."
      input { document: doc }
      tools none
      expect Invoice
    }
  }
}
"""
DOCUMENTS = [
    "Invoice 2026-114 from Northwind Traders, total 1,240.50 EUR.",
    "Invoice A-77 from Contoso Ltd, total 980.00 USD.",
]
FIELDS = [
    {"number": "2026-114", "total": 1240.5, "currency": "EUR"},
    {"number": "A-77", "total": 980.0, "currency": "USD"},
]


def provider_order(request: dict) -> str:
    """The body in the order a provider builds its prompt, each part compact as on the wire."""

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    if "input" in request:  # the Responses API
        parts = [request.get("tools") or [], (request.get("text") or {}).get("format") or {}]
        parts += [request.get("instructions") or "", *request["input"]]
    else:
        parts = [request.get("tools") or [], request.get("response_format") or {}]
        parts += request["messages"]
    return "\n".join(dumps(p) for p in parts)


def _document_of(body: str) -> int:
    return next(i for i, doc in enumerate(DOCUMENTS) if json.dumps(doc)[1:-1] in body)


@pytest.mark.parametrize(
    ("kind", "native"),
    [("openai", False), ("openai", True), ("openai-responses", False)],
    ids=["chat-prompt-text", "chat-native", "responses-prompt-text"],
)
async def test_a_map_items_request_puts_its_document_after_everything_fixed(
    chat_server, tmp_path, monkeypatch, golden, kind, native
):
    def reply(request: dict) -> object:
        fields = FIELDS[_document_of(json.dumps(request))]
        return responses_reply(json.dumps(fields)) if "input" in request else answer(fields)

    chat_server.script(reply)
    text = chat_server.config_text().replace('kind = "openai"', f'kind = "{kind}"')
    if native:
        text += "[agents.extractor]\nmodel = 'n'\n[models.named.n]\nprovider = 'scripted'\n"
        text += "model = 'test-model'\nstructured_output = true\n"
    (tmp_path / "flow.toml").write_text(text)
    (tmp_path / "invoices.flow").write_text(FLOW)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    result = await api.run(
        tmp_path / "invoices.flow",
        {"documents": DOCUMENTS},
        config=tmp_path / "flow.toml",
        workspace=tmp_path,
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    assert result.output == FIELDS
    raw = sorted(chat_server.raw_bodies, key=lambda b: _document_of(b.decode()))
    name = f"map-item-request.{kind}{'.native' if native else ''}.json"
    golden.check(GOLDEN / name, raw[0].decode() + "\n")
    bodies = [provider_order(json.loads(b)) for b in raw]
    shared = next(i for i, (a, b) in enumerate(zip(*bodies, strict=False)) if a != b)
    starts = [body.index(json.dumps(json.dumps(doc)[1:-1])[1:-1]) for body, doc in
              zip(bodies, DOCUMENTS, strict=True)]  # fmt: skip
    assert starts[0] == starts[1]  # the same fixed text before each document …
    assert bodies[0][: starts[0]] == bodies[1][: starts[1]]
    assert shared >= starts[0]  # … all of it shared, and the document is the body's last text
    for body, start, doc in zip(bodies, starts, DOCUMENTS, strict=True):
        tail = body[start + len(json.dumps(doc)) - 2 :]
        assert len(tail) <= len('\\"}"}'), tail  # only the closing quotes and braces follow
