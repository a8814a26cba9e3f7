"""The language server's ``agentflow.graph`` command (``workspace/executeCommand``): the graph
of the open document, as `flowc graph` prints it, driven over stdio by a real LSP client."""

from __future__ import annotations

import sys
from pathlib import Path

from agentflow import api
from agentflow.lsp.client import LspClient

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bug-triage.flow"


def test_graph_command_returns_the_open_documents_graph(tmp_path):
    text = EXAMPLE.read_text(encoding="utf-8")
    uri = (tmp_path / "bug-triage.flow").as_uri()
    with LspClient([sys.executable, "-m", "agentflow", "lsp"]) as client:
        caps = client.initialize()["capabilities"]
        assert "agentflow.graph" in caps["executeCommandProvider"]["commands"]
        client.open(uri, text)
        params = {"command": "agentflow.graph", "arguments": [uri]}
        reply = client.request("workspace/executeCommand", params)
        assert reply["format"] == "mermaid"
        assert reply["text"] == api.graph(EXAMPLE)
        params["arguments"] = [uri, {"format": "dot"}]
        reply = client.request("workspace/executeCommand", params)
        assert reply["text"].startswith('digraph "bug_triage" {')
        # a program with errors, an unknown document: an error reply, never a crash
        client.change(uri, text.replace("expect Triage", "expect Triag"), 2)
        reply = client.request(
            "workspace/executeCommand", {"command": "agentflow.graph", "arguments": [uri]}
        )
        assert reply["error"].startswith("the program has errors: ")
        assert "Triag" in reply["error"]
        missing = {"command": "agentflow.graph", "arguments": ["file:///nowhere.flow"]}
        assert (
            "not an open document" in client.request("workspace/executeCommand", missing)["error"]
        )
