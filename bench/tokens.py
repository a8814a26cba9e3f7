"""Benchmark: prompt tokens of the same agent task in agentflow and in Pydantic AI (issue 20).

One scripted OpenAI-compatible server (src/agentflow/testing/chat_server.py, real HTTP on 127.0.0.1)
answers both frameworks the same way: round 1 calls ``read_file``, round 2 calls ``grep``, round 3
gives the answer (a ``final_result`` tool call where the framework offers one). The task is the
``reproduce`` agent of examples/bug-triage.flow: three tools (read_file, grep, list_dir) and the
``Reproduction`` contract, compiled from the .flow file for agentflow and written as the
equivalent Pydantic model for Pydantic AI.

Runs, in one process: agentflow with the contract as prompt text and with native structured
output (``structured_output = true``); Pydantic AI with its three output modes (tool output, the
default; ``PromptedOutput``; ``NativeOutput``) — all over Chat Completions — and then the same
task over OpenAI's Responses API (``POST /v1/responses``: agentflow's ``kind =
"openai-responses"`` and Pydantic AI's ``OpenAIResponsesModel``), side by side. Prints the prompt
tokens of each round and the total, and the share of each follow-up request that is a cacheable
prefix (the tokens it shares, from the start, with the request before it).

Tokens are counted by the server, the same way for every request: tiktoken's o200k encoding
when it can be loaded offline (it downloads its table on first use, so usually not), else a
deterministic word-piece count (``\\w+`` runs and single punctuation marks) of what a provider
tokenizes: the tool definitions, the response format and each message's text and tool calls.
The line "counted with" says which was used.

    .venv/bin/python bench/tokens.py            # needs the `bench` extra (pydantic-ai-slim)
    .venv/bin/python bench/tokens.py --check    # exit 1 unless the acceptance figures hold
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

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


def common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# ------------------------------------------------------------------------------ the server


def script(request: dict[str, Any]) -> Any:
    """Round by round, whoever asks: read_file, grep, then the answer."""
    if "input" in request:
        return responses_script(request)
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
    items = request.get("input") if isinstance(request.get("input"), list) else []
    done = sum(1 for i in items if i.get("type") == "function_call_output")
    if done == 0:
        return responses_reply(None, ("read_file", {"path": "src/config.py"}))
    if done == 1:
        return responses_reply(None, ("grep", {"pattern": "name", "path": "src"}))
    names = [t.get("name") for t in request.get("tools") or []]
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


async def run_agentflow(server: ChatServer, tmp: Path, native: bool, kind: str = "openai") -> None:
    (tmp / "flow.toml").write_text(
        server.config_text(extra="").replace('kind = "openai"', f'kind = "{kind}"')
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


# ------------------------------------------------------------------------------ Pydantic AI


class Reproduction(BaseModel):
    reproduced: bool = Field(description="whether the failure could be tied to specific code")
    suspect_files: list[str]
    hypothesis: str = Field(description="the decisive lines, quoted, and why they fail")


async def run_pydantic_ai(server: ChatServer, mode: str, responses: bool = False) -> None:
    provider = OpenAIProvider(base_url=server.url, api_key="k")
    model: Any = (
        OpenAIResponsesModel("test-model", provider=provider)
        if responses
        else OpenAIChatModel("test-model", provider=provider)
    )
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


def _turns(request: dict[str, Any]) -> list[Any]:
    turns = request.get("messages") if "messages" in request else request.get("input")
    return turns if isinstance(turns, list) else [turns]


# ------------------------------------------------------------------------------ main


async def main(check: bool) -> int:
    import tempfile

    runs = [
        ("agentflow (prompt text)", "af", False),
        ("agentflow (native output)", "af", True),
        ("Pydantic AI (tool output)", "pai", "tool"),
        ("Pydantic AI (prompted output)", "pai", "prompted"),
        ("Pydantic AI (native output)", "pai", "native"),
        ("Responses: agentflow (prompt text)", "af-r", False),
        ("Responses: agentflow (native output)", "af-r", True),
        ("Responses: Pydantic AI (tool output)", "pai-r", "tool"),
        ("Responses: Pydantic AI (prompted output)", "pai-r", "prompted"),
        ("Responses: Pydantic AI (native output)", "pai-r", "native"),
    ]
    figures: dict[str, dict[str, Any]] = {}
    with ChatServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        for label, kind, mode in runs:
            start = len(server.requests)
            if kind in ("af", "af-r"):
                wire = "openai-responses" if kind == "af-r" else "openai"
                await run_agentflow(server, Path(tmp), bool(mode), wire)
            else:
                await run_pydantic_ai(server, str(mode), responses=kind == "pai-r")
            requests = server.requests[start:]
            tokens = [prompt_pieces(r) for r in requests]
            prefixes = [
                common_prefix(before, after) / len(after)
                for before, after in zip(tokens, tokens[1:], strict=False)
            ]
            figures[label] = {
                "rounds": [len(t) for t in tokens],
                "total": sum(len(t) for t in tokens),
                "prefix": prefixes,
                # each follow-up starts with the WHOLE previous request (same tools, response
                # format and messages): the provider's prefix cache covers all of it
                "whole": all(
                    after.get("tools") == before.get("tools")
                    and after.get("response_format") == before.get("response_format")
                    and after.get("text") == before.get("text")
                    and after.get("instructions") == before.get("instructions")
                    and _turns(after)[: len(_turns(before))] == _turns(before)
                    for before, after in zip(requests, requests[1:], strict=False)
                ),
            }
    print(f"prompt tokens per round, counted with {COUNTED_WITH}")
    width = max(len(label) for label in figures)
    for label, f in figures.items():
        rounds = " + ".join(str(n) for n in f["rounds"])
        cache = ", ".join(f"{p:.0%}" for p in f["prefix"])
        print(
            f"  {label:<{width}}  {rounds} = {f['total']:>5}   cacheable prefix of follow-ups: {cache}"
        )
    print("Chat Completions vs Responses API, total prompt tokens of the task:")
    for label in [k for k in figures if not k.startswith("Responses: ")]:
        other = figures.get(f"Responses: {label}")
        if other is not None:
            print(
                f"  {label:<{width}}  chat completions {figures[label]['total']:>5}   "
                f"responses {other['total']:>5}"
            )
    af_text = figures["agentflow (prompt text)"]
    af_native = figures["agentflow (native output)"]
    pai = [f for label, f in figures.items() if label.startswith("Pydantic AI")]
    leanest = min(f["total"] for f in pai)
    pai_native = figures["Pydantic AI (native output)"]["total"]
    checks = {
        f"agentflow (prompt text) {af_text['total']} ≤ Pydantic AI's leanest {leanest}": af_text[
            "total"
        ]
        <= leanest,
        f"agentflow (native) {af_native['total']} ≤ Pydantic AI (native) {pai_native}": af_native[
            "total"
        ]
        <= pai_native,
        "every agentflow follow-up is ≥ 90 % cacheable prefix": all(
            p >= 0.9 for f in (af_text, af_native) for p in f["prefix"]
        ),
        "every agentflow follow-up starts with the whole previous request": af_text["whole"]
        and af_native["whole"],
        "agentflow over Responses ≤ Pydantic AI's leanest over Responses": figures[
            "Responses: agentflow (prompt text)"
        ]["total"]
        <= min(f["total"] for k, f in figures.items() if k.startswith("Responses: Pydantic")),
        "every agentflow Responses follow-up starts with the whole previous request": figures[
            "Responses: agentflow (prompt text)"
        ]["whole"]
        and figures["Responses: agentflow (native output)"]["whole"],
    }
    for text, ok in checks.items():
        print(f"  {'ok ' if ok else 'NO '} {text}")
    return 0 if (all(checks.values()) or not check) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless the figures hold")
    sys.exit(asyncio.run(main(parser.parse_args().check)))
