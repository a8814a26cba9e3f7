"""Benchmark: prompt tokens of the same agent tasks in agentflow and in Pydantic AI (issues 20, 35).

One scripted OpenAI-compatible server (src/agentflow/testing/chat_server.py, real HTTP on 127.0.0.1)
answers both frameworks the same way. Two tasks:

- ``triage``: the ``reproduce`` agent of examples/bug-triage.flow: three tools (read_file, grep,
  list_dir) and the ``Reproduction`` contract, compiled from the .flow file for agentflow and
  written as the equivalent Pydantic model for Pydantic AI. Round 1 calls ``read_file``, round 2
  calls ``grep``, round 3 gives the answer (a ``final_result`` tool call where the framework
  offers one);
- ``map``: a map of typed extractions (``DOCUMENTS`` → ``EXTRACTED``, an ``Invoice`` each), one
  agent request per item, no tools: agentflow runs a .flow program through ``api.run``,
  Pydantic AI an agent once per document.

Each task runs, in one process: agentflow with the contract as prompt text and with native
structured output (``structured_output = true``); Pydantic AI with its three output modes (tool
output, the default; ``PromptedOutput``; ``NativeOutput``) — first over Chat Completions, then
over OpenAI's Responses API (``POST /v1/responses``: agentflow's ``kind = "openai-responses"``
and Pydantic AI's ``OpenAIResponsesModel``). Prints the prompt tokens of each request and the
total, the cacheable prefix of each follow-up (the longest common prefix of consecutive
requests' serialized bodies in provider order, :func:`provider_order`, and the tokens shared from
the start), and the totals of the two wire APIs side by side.

"before new content" is the share of a follow-up's body that comes before its new content
(triage: the whole previous request; map: everything before the item's own document): what any
layout of the same request can share for sure. The cacheable prefix reaching it means nothing but
new content falls outside the prefix (it passes it by the characters the new contents happen to
begin with: the map's documents all begin "Invoice ").

Tokens are counted by the server, the same way for every request: tiktoken's o200k encoding
when it can be loaded offline (it downloads its table on first use, so usually not), else a
deterministic word-piece count (``\\w+`` runs and single punctuation marks) of what a provider
tokenizes: the tool definitions, the response format and each message's text and tool calls.
The line "counted with" says which was used.

    .venv-bench/bin/python bench/tokens.py            # needs the `bench` extra (pydantic-ai-slim)
    .venv-bench/bin/python bench/tokens.py --check    # exit 1 unless the acceptance figures hold
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.chat_server import (  # noqa: E402
    ChatServer,
    completion,
    responses_reply,
    tool_calls,
)

from agentflow import api  # noqa: E402
from agentflow.runtime.agent import AgentSpec, build_user_prompt, run_agent  # noqa: E402
from agentflow.runtime.config import load_config  # noqa: E402
from agentflow.runtime.models.base import ToolSpec  # noqa: E402
from agentflow.runtime.models.router import ModelRouter  # noqa: E402

try:
    from pydantic import BaseModel, Field
    from pydantic_ai import Agent, NativeOutput, PromptedOutput
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
except ImportError:  # pragma: no cover
    raise SystemExit("pydantic-ai is not installed: pip install -e '.[bench]'") from None

TASK = "Locate the suspect code for the reported bug.\nQuote the decisive lines in hypothesis."
#: A bug report the size of a real one: a few sentences and the traceback a user pastes.
LOGS = """\
2026-11-30 09:14:02,118 INFO  app.main: starting with profile 'default' (pid 48211)
2026-11-30 09:14:02,119 INFO  app.config: reading /etc/app/config.toml
2026-11-30 09:14:02,121 WARN  app.config: config file is empty; using defaults
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/app/__main__.py", line 4, in <module>
    main()
  File "/usr/lib/python3.12/site-packages/app/main.py", line 57, in main
    settings = load_settings(args.profile)
  File "/usr/lib/python3.12/site-packages/app/settings.py", line 23, in load_settings
    config = load_config(path)
  File "/usr/lib/python3.12/site-packages/app/config.py", line 31, in load_config
    return Config(name=data['name'], theme=data.get('theme', 'light'))
KeyError: 'name'
2026-11-30 09:14:02,130 ERROR app.main: exiting with status 1"""

BUG = {
    "bug": {
        "title": "Crash on start with an empty config file",
        "body": "Since 2.4 the app crashes at start when ~/.config/app/config.toml exists but is "
        "empty (for example right after `touch`). 2.3 started with the defaults. Deleting the "
        "file works around it. Seen on Linux and macOS; the log below is from Fedora 41.",
    },
    "logs": LOGS,
}
ANSWER = {
    "reproduced": True,
    "suspect_files": ["src/config.py"],
    "hypothesis": "config['name'] is read without a default",
}

#: The map task: typed extraction of each document, one agent request per item.
DOCUMENTS = [
    "Invoice 2026-114 from Northwind Traders, due 2026-12-20, total 1,240.50 EUR for 12 chairs.",
    "Invoice A-77 from Contoso Ltd, due 2027-01-05, total 980.00 USD for consulting in November.",
    "Invoice 5531 from Fabrikam, due 2026-12-31, total 15.99 GBP for one replacement cable.",
    "Invoice NW-9 from Northwind Traders, due 2027-02-01, total 3,600.00 EUR for 40 desks.",
    "Invoice 2026/88 from Tailspin Toys, due 2026-12-15, total 420.00 USD for 30 toy kits.",
]
EXTRACTED = [
    {"number": "2026-114", "vendor": "Northwind Traders", "due": "2026-12-20", "total": 1240.5, "currency": "EUR"},
    {"number": "A-77", "vendor": "Contoso Ltd", "due": "2027-01-05", "total": 980.0, "currency": "USD"},
    {"number": "5531", "vendor": "Fabrikam", "due": "2026-12-31", "total": 15.99, "currency": "GBP"},
    {"number": "NW-9", "vendor": "Northwind Traders", "due": "2027-02-01", "total": 3600.0, "currency": "EUR"},
    {"number": "2026/88", "vendor": "Tailspin Toys", "due": "2026-12-15", "total": 420.0, "currency": "USD"},
]  # fmt: skip
MAP_FLOW = """\
flow invoices "Extract invoices"
input { documents: text[] }

type Invoice {
  /// the invoice number as printed
  number: text
  vendor: text
  /// the due date, YYYY-MM-DD
  due: text
  total: number
  currency: "EUR" | "USD" | "GBP"
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
MAP_TASK = "Extract the invoice's fields from the document."


# ------------------------------------------------------------------------------ token counting


def _encoder():
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return "tiktoken o200k_base", lambda text: encoding.encode(text)
    except Exception:  # noqa: BLE001 - no table offline: fall back to a deterministic count
        pieces = re.compile(r"\w+|[^\w\s]")
        return "word pieces (tiktoken's o200k table is not available offline)", pieces.findall


COUNTED_WITH, ENCODE = _encoder()


def prompt_pieces(request: dict[str, Any]) -> list[Any]:
    """The tokens of what a provider puts in the prompt, in prompt order: tool definitions and
    the response format (rendered into the system area), then each message (a Responses API
    request: its instructions, then each input item)."""
    if "input" in request:
        return _responses_pieces(request)
    parts = [json.dumps(request.get("tools") or [], sort_keys=True)]
    parts.append(json.dumps(request.get("response_format") or {}, sort_keys=True))
    for message in request.get("messages", []):
        parts.append(message.get("role", ""))
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
        if message.get("tool_calls"):
            parts.append(json.dumps(message["tool_calls"], sort_keys=True))
    tokens: list[Any] = []
    for part in parts:
        tokens.extend(ENCODE(part))
    return tokens


def _responses_pieces(request: dict[str, Any]) -> list[Any]:
    parts = [json.dumps(request.get("tools") or [], sort_keys=True)]
    parts.append(json.dumps((request.get("text") or {}).get("format") or {}, sort_keys=True))
    parts.append(request.get("instructions") or "")
    items = request.get("input")
    for item in items if isinstance(items, list) else [{"role": "user", "content": items}]:
        kind = item.get("type") or "message"
        if kind == "function_call":
            parts += ["assistant", item.get("name", ""), item.get("arguments", "")]
        elif kind == "function_call_output":
            parts += ["tool", str(item.get("output", ""))]
        else:
            content = item.get("content")
            parts.append(item.get("role", ""))
            parts.append(content if isinstance(content, str) else json.dumps(content))
    tokens: list[Any] = []
    for part in parts:
        tokens.extend(ENCODE(part))
    return tokens


def provider_order(request: dict[str, Any]) -> str:
    """The request's serialized body in the order a provider builds its prompt (and its prompt
    cache): tool definitions, the response format, then the messages (system first), each
    field as sent (a Responses API request: tools, text format, instructions, input items). The cacheable prefix of a follow-up is the longest common prefix of this
    text with the previous request's (issue 35)."""
    if "input" in request:  # the Responses API: tools, text format, instructions, input items
        items = request.get("input")
        parts = [json.dumps(request.get("tools") or [])]
        parts.append(json.dumps((request.get("text") or {}).get("format") or {}))
        parts.append(json.dumps(request.get("instructions") or ""))
        parts.extend(json.dumps(i) for i in (items if isinstance(items, list) else [items]))
        return "\n".join(parts)
    parts = [json.dumps(request.get("tools") or [])]
    parts.append(json.dumps(request.get("response_format") or {}))
    parts.extend(json.dumps(m) for m in request.get("messages", []))
    return "\n".join(parts)


def common_prefix(a: Any, b: Any) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# ------------------------------------------------------------------------------ the server


def script(request: dict[str, Any]) -> Any:
    """Round by round, whoever asks: read_file, grep, then the answer (the map task: the
    document's fields at once)."""
    if "input" in request:
        return responses_script(request)
    text = json.dumps(request.get("messages", []))
    for doc, fields in zip(DOCUMENTS, EXTRACTED, strict=True):
        if json.dumps(doc)[1:-1] in text:
            names = [t["function"]["name"] for t in request.get("tools") or []]
            if "final_result" in names:
                return tool_calls(("final_result", fields))
            return completion(json.dumps(fields))
    done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
    if done == 0:
        return tool_calls(("read_file", {"path": "src/config.py"}))
    if done == 1:
        return tool_calls(("grep", {"pattern": "name", "path": "src"}))
    names = [t["function"]["name"] for t in request.get("tools") or []]
    if "final_result" in names:
        return tool_calls(("final_result", ANSWER))
    return completion(json.dumps(ANSWER))


def responses_script(request: dict[str, Any]) -> Any:
    """The same rounds as :func:`script`, answered in the Responses API's shape."""
    names = [t.get("name") for t in request.get("tools") or []]
    text = json.dumps(request.get("input"))
    for doc, fields in zip(DOCUMENTS, EXTRACTED, strict=True):
        if json.dumps(doc)[1:-1] in text:
            if "final_result" in names:
                return responses_reply(None, ("final_result", fields))
            return responses_reply(json.dumps(fields))
    items = request.get("input") if isinstance(request.get("input"), list) else []
    done = sum(1 for i in items if i.get("type") == "function_call_output")
    if done == 0:
        return responses_reply(None, ("read_file", {"path": "src/config.py"}))
    if done == 1:
        return responses_reply(None, ("grep", {"pattern": "name", "path": "src"}))
    if "final_result" in names:
        return responses_reply(None, ("final_result", ANSWER))
    return responses_reply(json.dumps(ANSWER))


# ------------------------------------------------------------------------------ agentflow


def contract() -> dict[str, Any]:
    plan = api.compile_flow(ROOT / "examples" / "bug-triage.flow").plan
    for step in plan["steps"]:
        if step["tool_name"] == "agent":
            return step["input"]["output_schema"]
    raise SystemExit("no agent step in examples/bug-triage.flow")


TOOLS = [
    ToolSpec(
        "read_file",
        "Read a text file of the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        "grep",
        "Search files for a regular expression; returns the matching lines.",
        {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["pattern", "path"],
        },
    ),
    ToolSpec(
        "list_dir",
        "List a directory of the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
]


async def tool_result(name: str, args: dict[str, Any], _path: str = "") -> Any:
    if name == "read_file":
        return "def load_config(data):\n    return data['name']\n"
    if name == "grep":
        return ["src/config.py:2:    return data['name']"]
    return ["config.py", "main.py"]


def _config_text(server: ChatServer, kind: str) -> str:
    """The scripted provider's configuration, over the wire API ``kind`` (openai,
    openai-responses)."""
    return server.config_text(extra="").replace('kind = "openai"', f'kind = "{kind}"')


async def run_agentflow(server: ChatServer, tmp: Path, native: bool, kind: str = "openai") -> None:
    (tmp / "flow.toml").write_text(
        _config_text(server, kind)
        + (
            "[models.named.n]\nprovider = 'scripted'\nmodel = 'test-model'\nstructured_output = true\n"
            if native
            else ""
        )  # fmt: skip
    )
    config = load_config(tmp / "flow.toml", env={"SCRIPTED_API_KEY": "k"})
    router = ModelRouter(config)
    try:
        result = await run_agent(
            AgentSpec(
                prompt=TASK,
                input=BUG,
                output_schema=contract(),
                tools=TOOLS,
                model="n" if native else None,
            ),
            router=router,
            call_tool=tool_result,
            emit=None,
            step_path="E0",
        )
    finally:
        await router.aclose()
    assert result["output"] == ANSWER, result


async def run_agentflow_map(
    server: ChatServer, tmp: Path, native: bool, kind: str = "openai"
) -> None:
    """The map task through the whole runtime: `api.run` of MAP_FLOW (an agent step per item)."""
    (tmp / "flow.toml").write_text(
        _config_text(server, kind)
        + "[agents.extractor]\n"
        + ("model = 'n'\n[models.named.n]\nprovider = 'scripted'\nmodel = 'test-model'\nstructured_output = true\n" if native else "")
    )  # fmt: skip
    (tmp / "invoices.flow").write_text(MAP_FLOW)
    import os

    os.environ.setdefault("SCRIPTED_API_KEY", "k")
    result = await api.run(
        tmp / "invoices.flow",
        {"documents": DOCUMENTS},
        config=tmp / "flow.toml",
        workspace=tmp,
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    assert result.output == EXTRACTED, result.output


# ------------------------------------------------------------------------------ Pydantic AI


class Reproduction(BaseModel):
    reproduced: bool = Field(description="whether the failure could be tied to specific code")
    suspect_files: list[str]
    hypothesis: str = Field(description="the decisive lines, quoted, and why they fail")


def _pydantic_ai_model(server: ChatServer, responses: bool) -> Any:
    provider = OpenAIProvider(base_url=server.url, api_key="k")
    if responses:
        return OpenAIResponsesModel("test-model", provider=provider)
    return OpenAIChatModel("test-model", provider=provider)


async def run_pydantic_ai(server: ChatServer, mode: str, responses: bool = False) -> None:
    model = _pydantic_ai_model(server, responses)
    output: Any = {
        "tool": Reproduction,
        "prompted": PromptedOutput(Reproduction),
        "native": NativeOutput(Reproduction),
    }[mode]
    agent = Agent(model, output_type=output)

    @agent.tool_plain
    async def read_file(path: str) -> str:
        """Read a text file of the workspace."""
        return await tool_result("read_file", {"path": path})

    @agent.tool_plain
    async def grep(pattern: str, path: str) -> list[str]:
        """Search files for a regular expression; returns the matching lines."""
        return await tool_result("grep", {"pattern": pattern, "path": path})

    @agent.tool_plain
    async def list_dir(path: str) -> list[str]:
        """List a directory of the workspace."""
        return await tool_result("list_dir", {"path": path})

    user = build_user_prompt(AgentSpec(prompt=TASK, input=BUG, output_schema={}))
    result = await agent.run(user)
    assert result.output.model_dump() == ANSWER, result.output


class Invoice(BaseModel):
    number: str = Field(description="the invoice number as printed")
    vendor: str
    due: str = Field(description="the due date, YYYY-MM-DD")
    total: float
    currency: Literal["EUR", "USD", "GBP"]


async def run_pydantic_ai_map(server: ChatServer, mode: str, responses: bool = False) -> None:
    model = _pydantic_ai_model(server, responses)
    output: Any = {
        "tool": Invoice,
        "prompted": PromptedOutput(Invoice),
        "native": NativeOutput(Invoice),
    }[mode]
    agent = Agent(model, output_type=output)
    for doc, fields in zip(DOCUMENTS, EXTRACTED, strict=True):
        user = build_user_prompt(
            AgentSpec(prompt=MAP_TASK, input={"document": doc}, output_schema={})
        )
        result = await agent.run(user)
        assert result.output.model_dump() == fields, result.output


# ------------------------------------------------------------------------------ main


def _new_content_at(task: str, before: str, after: str) -> int:
    """Where the content a follow-up adds begins: the end of the previous body (triage:
    without its closing), or the start of the item's document (map)."""
    if task == "triage":
        return len(before)
    return min(
        after.index(json.dumps(json.dumps(doc)[1:-1])[1:-1])
        for doc in DOCUMENTS
        if json.dumps(json.dumps(doc)[1:-1])[1:-1] in after
    )


RESPONSES = "Responses: "


async def measure(task: str, wire: str, server: ChatServer, tmp: Path) -> dict[str, dict[str, Any]]:
    """Prompt tokens and cacheable prefixes of each framework on ``task`` (triage, map) over
    ``wire`` (chat: Chat Completions; responses: the Responses API)."""
    responses = wire == "responses"
    kind = "openai-responses" if responses else "openai"
    runs = [
        ("agentflow (prompt text)", "af", False),
        ("agentflow (native output)", "af", True),
        ("Pydantic AI (tool output)", "pai", "tool"),
        ("Pydantic AI (prompted output)", "pai", "prompted"),
        ("Pydantic AI (native output)", "pai", "native"),
    ]
    figures: dict[str, dict[str, Any]] = {}
    for label, framework, mode in runs:
        start = len(server.requests)
        if framework == "af":
            runner = run_agentflow if task == "triage" else run_agentflow_map
            await runner(server, tmp, bool(mode), kind)
        elif task == "triage":
            await run_pydantic_ai(server, str(mode), responses)
        else:
            await run_pydantic_ai_map(server, str(mode), responses)
        requests = server.requests[start:]
        tokens = [prompt_pieces(r) for r in requests]
        bodies = [provider_order(r) for r in requests]
        figures[(RESPONSES if responses else "") + label] = {
            "rounds": [len(t) for t in tokens],
            "total": sum(len(t) for t in tokens),
            "prefix": [
                common_prefix(before, after) / len(after)
                for before, after in zip(tokens, tokens[1:], strict=False)
            ],
            # what could be shared is: the whole previous request (triage), everything before
            # the item's own document (map)
            "whole": all(
                common_prefix(before, after) >= _new_content_at(task, before, after)
                for before, after in zip(bodies, bodies[1:], strict=False)
            ),
            # what comes before the new content (the previous request, the item's document), as a
            # share of the body: what any layout of the same request shares for sure
            "before_new": [
                min(_new_content_at(task, before, after), len(after)) / len(after)
                for before, after in zip(bodies, bodies[1:], strict=False)
            ],
            # the measure: characters of the serialized bodies in provider order
            "body": [
                common_prefix(before, after) / len(after)
                for before, after in zip(bodies, bodies[1:], strict=False)
            ],
        }
    return figures


def _checks(task: str, figures: dict[str, dict[str, Any]], wire: str) -> dict[str, bool]:
    """The acceptance conditions of one task over one wire API."""
    prefix = RESPONSES if wire == "responses" else ""
    name = f"{task}, {'Responses' if prefix else 'Chat Completions'}"
    af = [f for label, f in figures.items() if label.startswith(prefix + "agentflow")]
    pai = [f for label, f in figures.items() if label.startswith(prefix + "Pydantic AI")]
    leanest = min(f["total"] for f in pai)
    ours = figures[prefix + "agentflow (prompt text)"]["total"]
    native = figures[prefix + "agentflow (native output)"]["total"]
    pai_native = figures[prefix + "Pydantic AI (native output)"]["total"]
    low = min(min(f["body"]) for f in af)
    low_tokens = min(min(f["prefix"]) for f in af)
    checks = {
        f"{name}: agentflow (prompt text) {ours} ≤ Pydantic AI's leanest {leanest}": (
            ours <= leanest
        ),
        f"{name}: agentflow (native) {native} ≤ Pydantic AI (native) {pai_native}": (
            native <= pai_native
        ),
        f"{name}: every agentflow follow-up ≥ 90 % cacheable body ({low:.1%})": low >= 0.9,
        f"{name}: every agentflow follow-up shares all that precedes its new content": all(
            f["whole"] for f in af
        ),
    }
    if task == "triage":  # issue 20's measure: a follow-up re-sends a whole conversation
        checks[f"{name}: every agentflow follow-up ≥ 90 % cacheable tokens ({low_tokens:.1%})"] = (
            low_tokens >= 0.9
        )
    return checks


async def main(check: bool) -> int:
    import tempfile

    checks: dict[str, bool] = {}
    with ChatServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        for task in ("triage", "map"):
            figures: dict[str, dict[str, Any]] = {}
            for wire in ("chat", "responses"):
                figures.update(await measure(task, wire, server, Path(tmp)))
                checks.update(_checks(task, figures, wire))
            what = "3 rounds of one agent" if task == "triage" else f"{len(DOCUMENTS)} items"
            print(f"\n{task} ({what}): prompt tokens per request, counted with {COUNTED_WITH}")
            width = max(len(label) for label in figures)
            for label, f in figures.items():
                rounds = " + ".join(str(n) for n in f["rounds"])
                mean = sum(f["body"]) / len(f["body"])
                print(
                    f"  {label:<{width}}  {rounds} = {f['total']:>5}   cacheable prefix: "
                    f"{mean:.1%} of the body (min {min(f['body']):.1%}), "
                    f"{sum(f['prefix']) / len(f['prefix']):.1%} of the tokens; "
                    f"before new content {min(f['before_new']):.1%}"
                )
            print(f"  Chat Completions vs Responses API, total prompt tokens of the {task} task:")
            for label in [k for k in figures if not k.startswith(RESPONSES)]:
                other = figures[RESPONSES + label]
                print(
                    f"    {label:<{width - len(RESPONSES)}}  chat completions "
                    f"{figures[label]['total']:>5}   responses {other['total']:>5}"
                )
    print()
    for text, ok in checks.items():
        print(f"  {'ok ' if ok else 'NO '} {text}")
    return 0 if (all(checks.values()) or not check) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless the figures hold")
    sys.exit(asyncio.run(main(parser.parse_args().check)))
